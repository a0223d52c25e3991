"""Log records that say which channel, connector and worker they are about.

Every Sluice process logs to stdout in one of two formats, chosen by ``SLUICE_LOG_FORMAT``:

* ``text`` (the default): ``2026-11-21 18:14:08,123 INFO sluice.worker [channel=orders
  connector=orders worker=w1]: started driver …`` (the bracket only when an id is known);
* ``json``: one JSON object per line with ``timestamp`` (ISO 8601, UTC), ``level``,
  ``logger``, ``message``, ``role`` (web, celery-worker, runtime-worker, driver, …),
  ``channel`` / ``connector`` / ``worker`` when known, and ``exc_info`` with the trace.

The ids travel in :mod:`contextvars`: code that handles one connector wraps the work in
:func:`log_context`; a process that is about one connector for its whole life (a driver)
calls :func:`set_process_context` once, which also covers threads Spark starts later.
:class:`ContextFilter`, installed on the handler, copies them onto every record it sees
(ids passed with ``extra=`` win).

This module lives in the runtime layer so that the console (Django, Celery) and the
runtime processes, which cannot import the console, share one implementation.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

#: The ids a record may carry, in the order they are shown.
CONTEXT_FIELDS = ("channel", "connector", "worker")
LOG_FORMATS = ("text", "json")
_JSON_FIRST = ("timestamp", "level", "logger", "message", "role", *CONTEXT_FIELDS)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s%(ids)s: %(message)s"

_context: ContextVar[Mapping[str, str] | None] = ContextVar("sluice_log_context", default=None)
_process_context: dict[str, str] = {}


def _known(ids: Mapping[str, object]) -> dict[str, str]:
    return {key: str(value) for key, value in ids.items() if value not in (None, "")}


@contextmanager
def log_context(**ids: object) -> Iterator[None]:
    """Within the block, records carry these ids (``channel=``, ``connector=``, ``worker=``).

    Nests: inner ids add to (or replace) outer ones and are gone after the block. ``None``
    or empty values are ignored, so callers may pass what they have.
    """
    token = _context.set({**(_context.get() or {}), **_known(ids)})
    try:
        yield
    finally:
        _context.reset(token)


def set_process_context(**ids: object) -> None:
    """Ids (and ``role``) that hold for the rest of this process, in every thread."""
    _process_context.update(_known(ids))


def current_context() -> dict[str, str]:
    """The ids a record logged here and now would carry (process-wide, then block)."""
    return {**_process_context, **(_context.get() or {})}


class ContextFilter(logging.Filter):
    """Adds ``role`` and the known ids to every record; install it on a handler.

    A filter on a logger does not see records propagated from its children, a filter on
    a handler sees everything that handler writes. It never drops a record.
    """

    def __init__(self, name: str = "", role: str | None = None) -> None:
        super().__init__(name)
        self.role = role

    def filter(self, record: logging.LogRecord) -> bool:
        context = current_context()
        if self.role:
            context["role"] = self.role
        for key, value in context.items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class TextFormatter(logging.Formatter):
    """The classic one-line format, with ``[channel=… connector=… worker=…]`` when known."""

    def __init__(self, fmt: str | None = TEXT_FORMAT, *args: Any, **kwargs: Any) -> None:
        super().__init__(fmt, *args, **kwargs)

    def format(self, record: logging.LogRecord) -> str:
        ids = [
            f"{key}={getattr(record, key)}"
            for key in CONTEXT_FIELDS
            if getattr(record, key, None) not in (None, "")
        ]
        record.ids = f" [{' '.join(ids)}]" if ids else ""
        return super().format(record)


class JsonFormatter(_LibraryJsonFormatter):
    """One JSON object per line: timestamp, level, logger, message, then everything else.

    Built on python-json-logger; a record's ``extra=`` fields are included as they are.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", True)
        # ``ids`` is TextFormatter's rendering of the ids, not a field of its own.
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, "ids"])
        super().__init__("%(levelname)s %(name)s %(message)s", *args, **kwargs)

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        first = {key: log_data.pop(key) for key in _JSON_FIRST if key in log_data}
        return {**first, **log_data}


def log_format(environ: Mapping[str, str] | None = None) -> str:
    """``SLUICE_LOG_FORMAT`` (``text`` or ``json``, default ``text``); anything else is an error."""
    raw = (environ if environ is not None else os.environ).get("SLUICE_LOG_FORMAT", "")
    value = raw.strip().lower() or "text"
    if value not in LOG_FORMATS:
        raise ValueError(f"SLUICE_LOG_FORMAT must be 'text' or 'json', got {raw!r}")
    return value


def formatter_config(fmt: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` formatter entry for ``fmt``."""
    name = "JsonFormatter" if fmt == "json" else "TextFormatter"
    return {"()": f"{__name__}.{name}"}


def filter_config(role: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` filter entry that adds ``role`` and the ids."""
    return {"()": f"{__name__}.ContextFilter", "role": role}


def process_role(argv: Sequence[str] | None = None) -> str:
    """What this process is, for the ``role`` field: ``SLUICE_PROCESS_ROLE``, else a guess.

    ``gunicorn``/``runserver`` → ``web``, ``celery … worker`` → ``celery-worker``,
    ``celery … beat`` → ``celery-beat``, ``manage.py <command>`` → the command.
    """
    explicit = os.environ.get("SLUICE_PROCESS_ROLE", "").strip()
    if explicit:
        return explicit
    args = list(sys.argv if argv is None else argv)
    program = Path(args[0]).name if args else ""
    if program.startswith("gunicorn") or "runserver" in args:
        return "web"
    if program.startswith("celery"):
        for command in ("worker", "beat"):
            if command in args:
                return f"celery-{command}"
        return "celery"
    if program == "manage.py" and len(args) > 1:
        return args[1]
    return Path(program).stem or "python"


def configure_logging(role: str, level: str | int | None = None) -> None:
    """Send this process's logs to stdout in the ``SLUICE_LOG_FORMAT`` format.

    For processes without Django (the runtime worker and the drivers); the console's
    processes get the same formatter and filter from ``console.settings.LOGGING``.
    ``level`` defaults to ``SLUICE_LOG_LEVEL`` (INFO).
    """
    fmt = log_format()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(ContextFilter(role=role))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level or os.environ.get("SLUICE_LOG_LEVEL", "INFO").strip().upper() or "INFO")
