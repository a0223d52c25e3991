"""RFC 3339 timestamps: the one parser every part of Sluice uses for text times.

The HTTP ingestion (an event's ``time``), a Kafka source's ``starting_offsets`` and the offsets
API (``{"timestamp": ...}``), and the ``cloudevents`` transform's ``time`` attribute all read
times with :func:`parse_rfc3339`, so a time one of them accepts, every one accepts.

The rule is RFC 3339's ``date-time`` (section 5.6)::

    YYYY-MM-DD ( "T" / "t" / " " ) hh:mm:ss [ "." 1*DIGIT ] ( "Z" / "z" / ( "+" / "-" ) hh:mm )

* The offset is required: a time without one names no instant (``2024-06-01T08:00:00``).
  ``-00:00`` (RFC 3339's "offset unknown") is read as UTC.
* The fraction may have any number of digits (nanoseconds included); digits past the
  microsecond are cut, as Spark's TIMESTAMP and Python's ``datetime`` keep microseconds.
* A space may separate date and time, as section 5.6's note allows (it is read as ``T``).
* Digits are ASCII digits; months, days, hours, minutes and seconds must exist (no
  ``2024-02-30``, no hour 24); the offset's hours are 00-23 and its minutes 00-59.

Refused: a leap second (``:60``, which neither Spark nor Python can hold), ISO 8601's other
forms (``20240601T080000Z``, week dates, ``+02`` or ``+0200`` offsets, a comma before the
fraction, a date alone), and moments outside years 1 to 9999 once in UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

__all__ = ["EPOCH", "InvalidTimestamp", "epoch_millis", "parse_rfc3339", "rfc3339_utc"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_DATE_TIME = r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
_RFC3339 = re.compile(_DATE_TIME + r"(?:([Zz])|([+-])(\d{2}):(\d{2}))", re.ASCII)
_WITHOUT_OFFSET = re.compile(_DATE_TIME, re.ASCII)


class InvalidTimestamp(ValueError):
    """Text that is not an RFC 3339 timestamp; the message names the value and why."""


def parse_rfc3339(value: object) -> datetime:
    """The instant an RFC 3339 timestamp names, as an aware ``datetime`` in UTC.

    Follows the rule in this module's docstring. Raises :class:`InvalidTimestamp` (a
    ``ValueError``) with a message naming ``value`` for anything else, non-text included.
    """
    found = _RFC3339.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        if isinstance(value, str) and _WITHOUT_OFFSET.fullmatch(value):
            raise InvalidTimestamp(f"{value!r} has no time zone (add Z or +hh:mm)")
        raise InvalidTimestamp(f"{value!r} is not an RFC 3339 timestamp")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = found.groups()
    if zulu:
        offset = timedelta(0)
    else:
        if int(off_h) > 23 or int(off_m) > 59:
            raise InvalidTimestamp(
                f"{value!r} is not a valid date and time: its offset must be -23:59 to +23:59"
            )
        offset = timedelta(hours=int(off_h), minutes=int(off_m)) * (-1 if sign == "-" else 1)
    micros = int((fraction or "")[:6].ljust(6, "0"))
    try:
        local = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micros
        )
    except ValueError as exc:
        raise InvalidTimestamp(f"{value!r} is not a valid date and time: {exc}") from None
    try:
        return (local - offset).replace(tzinfo=UTC)
    except OverflowError:
        raise InvalidTimestamp(f"{value!r} is outside the years 1 to 9999 in UTC") from None


def rfc3339_utc(value: str | datetime) -> str:
    """An RFC 3339 timestamp (text, or an aware ``datetime``) written in UTC, the form
    Sluice stores and hands to Spark: ``2024-06-01T08:00:00Z``, with the fraction's trailing
    zeros dropped (``…:00.5Z``) and digits past the microsecond cut.

    Raises :class:`InvalidTimestamp` for text :func:`parse_rfc3339` refuses, and for a naive
    or out-of-range ``datetime``.
    """
    moment = _in_utc(value) if isinstance(value, datetime) else parse_rfc3339(value)
    stamp = f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}"
    if moment.microsecond:
        stamp += f".{moment.microsecond:06d}".rstrip("0")
    return stamp + "Z"


def epoch_millis(value: str | datetime) -> int:
    """Milliseconds since 1970-01-01T00:00:00Z of an RFC 3339 timestamp or an aware
    ``datetime``, rounded down (negative before 1970). Raises :class:`InvalidTimestamp`."""
    moment = _in_utc(value) if isinstance(value, datetime) else parse_rfc3339(value)
    return (moment - EPOCH) // timedelta(milliseconds=1)


def _in_utc(value: datetime) -> datetime:
    if value.utcoffset() is None:
        raise InvalidTimestamp(f"{value.isoformat()!r} has no time zone (add Z or +hh:mm)")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidTimestamp(
            f"{value.isoformat()!r} is outside the years 1 to 9999 in UTC"
        ) from None
