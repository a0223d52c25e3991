"""The one RFC 3339 parser (pipelines.timestamps): what it reads, what it refuses and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from pipelines.timestamps import InvalidTimestamp, epoch_millis, parse_rfc3339, rfc3339_utc


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2024-06-01T08:00:00Z", "2024-06-01T08:00:00Z"),
        ("2024-06-01t08:00:00z", "2024-06-01T08:00:00Z"),
        ("2024-06-01 08:00:00Z", "2024-06-01T08:00:00Z"),
        ("2024-06-01T10:30:00+02:30", "2024-06-01T08:00:00Z"),
        ("2024-06-01T08:00:00-00:00", "2024-06-01T08:00:00Z"),
        ("2024-06-01T03:00:00-05:00", "2024-06-01T08:00:00Z"),
        ("2024-06-01T08:00:00.5Z", "2024-06-01T08:00:00.5Z"),
        ("2024-06-01T08:00:00.123456789Z", "2024-06-01T08:00:00.123456Z"),
        ("2024-06-01T08:00:00.000000Z", "2024-06-01T08:00:00Z"),
        ("2024-01-01T00:30:00+01:00", "2023-12-31T23:30:00Z"),
        ("2024-02-29T12:00:00Z", "2024-02-29T12:00:00Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
    ],
)
def test_reads_rfc3339_and_writes_utc(text: str, utc: str) -> None:
    assert rfc3339_utc(text) == utc
    assert parse_rfc3339(text).tzinfo is UTC


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("2024-06-01T08:00:00", "has no time zone"),
        ("2024-06-01 08:00:00.25", "has no time zone"),
        ("20240601T080000Z", "is not an RFC 3339 timestamp"),
        ("2024-06-01", "is not an RFC 3339 timestamp"),
        ("2024-06-01T08:00:00+02", "is not an RFC 3339 timestamp"),
        ("2024-06-01T08:00:00+0200", "is not an RFC 3339 timestamp"),
        ("2024-06-01T08:00:00,5Z", "is not an RFC 3339 timestamp"),
        ("2024-W22-6T08:00:00Z", "is not an RFC 3339 timestamp"),
        ("２０２４-06-01T08:00:00Z", "is not an RFC 3339 timestamp"),  # noqa: RUF001 (full-width digits, on purpose)
        (" 2024-06-01T08:00:00Z", "is not an RFC 3339 timestamp"),
        ("2024-02-30T08:00:00Z", "is not a valid date and time"),
        ("2024-06-01T24:00:00Z", "is not a valid date and time"),
        ("2024-06-30T23:59:60Z", "is not a valid date and time"),
        ("2024-06-01T08:00:00+24:00", "its offset must be"),
        ("2024-06-01T08:00:00+01:60", "its offset must be"),
        ("0001-01-01T00:00:00+01:00", "outside the years 1 to 9999"),
        ("9999-12-31T23:59:59-01:00", "outside the years 1 to 9999"),
        (1717228800000, "is not an RFC 3339 timestamp"),
        (None, "is not an RFC 3339 timestamp"),
    ],
)
def test_refuses_with_the_value_and_the_reason(value: object, reason: str) -> None:
    with pytest.raises(InvalidTimestamp) as refused:
        parse_rfc3339(value)
    assert reason in str(refused.value)
    assert repr(value) in str(refused.value)
    assert isinstance(refused.value, ValueError)


def test_epoch_millis_rounds_down_and_goes_below_zero_before_1970() -> None:
    assert epoch_millis("1970-01-01T00:00:00Z") == 0
    assert epoch_millis("2024-06-01T08:00:00.9999Z") == 1717228800999
    assert epoch_millis("1969-12-31T23:59:59.9995Z") == -1
    assert epoch_millis(datetime(2024, 6, 1, 10, tzinfo=timezone(timedelta(hours=2)))) == (
        1717228800000
    )


def test_datetimes_must_be_aware() -> None:
    with pytest.raises(InvalidTimestamp, match="has no time zone"):
        rfc3339_utc(datetime(2024, 6, 1, 8))
    with pytest.raises(InvalidTimestamp, match="has no time zone"):
        epoch_millis(datetime(2024, 6, 1, 8))
    assert rfc3339_utc(datetime(2024, 6, 1, 8, 0, 0, 250000, tzinfo=UTC)) == (
        "2024-06-01T08:00:00.25Z"
    )


def test_one_rule_for_every_reader() -> None:
    """The Kafka source's starting time and the CloudEvents transform's time read alike."""
    from pipelines.spec.configs.kafka import epoch_millis as kafka_millis

    assert kafka_millis("2024-06-01T10:00:00+02:00") == 1717228800000
    with pytest.raises(ValueError, match="before 1970"):
        kafka_millis("1969-12-31T23:59:59Z")
    with pytest.raises(ValueError, match="has no time zone"):
        kafka_millis("2024-06-01T08:00:00")
