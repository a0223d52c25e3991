"""JDBC targets are guarded (issue 12, finding 6): addresses, parameters, SQLite files.

Every URL of the finding is refused on ``sink.config.url``; the sink checks again right
before it connects: the host is resolved once, a forbidden address refuses the connection
before anything is sent, and libpq is pinned to the checked address (``hostaddr``).
"""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pipelines.net import ALLOW_ENV, JDBC_ALLOW_ENV, ForbiddenAddress
from pipelines.sinks.jdbc import connect_postgresql, upsert_rows
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.configs import JdbcSinkConfig
from pipelines.spec.paths import FILES_ROOTS_ENV, INSTALLATION_DIR, VAR_DIR_ENV

ROW = ("e-1", "/s", "t", None, None, "{}")


@pytest.fixture(autouse=True)
def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No allow-lists; files root ``tmp_path/data``; Sluice's state in the installation's
    var/ (as ``make run`` has it)."""
    monkeypatch.delenv(JDBC_ALLOW_ENV, raising=False)
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    monkeypatch.setenv(FILES_ROOTS_ENV, str(tmp_path / "data"))
    monkeypatch.delenv(VAR_DIR_ENV, raising=False)
    return tmp_path / "data"


def url_errors(url: str) -> list[str]:
    spec = {
        "source": {"type": "generator", "config": {}},
        "sink": {"type": "jdbc", "config": {"url": url, "password": "pg-secret"}},
    }
    with pytest.raises(SpecError) as raised:
        validate_spec(spec)
    assert list(raised.value.errors) == ["sink.config.url"], raised.value.errors
    return raised.value.errors["sink.config.url"]


# -- the URLs of the finding, exactly as written there ----------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "postgresql://169.254.169.254:80/db",
            "169.254.169.254 is a link-local address (cloud metadata lives there); the JDBC "
            f"sink refuses it unless {JDBC_ALLOW_ENV} names it",
        ),
        ("postgresql://[::1]/db", "::1 is a loopback address"),
        ("postgresql://[::1]:5432/db", "::1 is a loopback address"),
        ("postgresql://127.0.0.1/db", "127.0.0.1 is a loopback address"),
        ("postgresql://127.0.0.1:5432/sluice", "127.0.0.1 is a loopback address"),
        (
            "postgresql://db.example.com/db?options=-c%20log_statement%3Dall",
            "connection parameter 'options' is not allowed; only application_name, "
            "connect_timeout, sslmode",
        ),
        ("postgresql://db.example.com/db?options=-csearch_path%3Devil", "'options' is not allowed"),
        ("postgresql://db.example.com/db\n", "must not contain spaces, line breaks"),
        ("postgresql://db.example.com/db\r\nx", "must not contain spaces, line breaks"),
        ("postgresql://db.example.com\n.evil.example/db", "must not contain spaces, line breaks"),
        (
            f"sqlite:///{INSTALLATION_DIR}/var/sluice.sqlite3",
            f"the SQLite file resolves to {INSTALLATION_DIR}/var/sluice.sqlite3, outside the "
            "files roots",
        ),
        ("sqlite:////etc/passwd", "the SQLite file resolves to /etc/passwd, outside the files"),
    ],
)
def test_the_findings_urls_are_refused(url: str, message: str) -> None:
    [error] = url_errors(url)
    assert message in error, error
    assert "pg-secret" not in error


def test_the_consoles_database_is_refused_even_under_a_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(FILES_ROOTS_ENV, str(INSTALLATION_DIR))
    [error] = url_errors(f"sqlite:///{INSTALLATION_DIR}/var/sluice.sqlite3")
    assert "inside Sluice's own state" in error, error
    [error] = url_errors("sqlite:///var/sluice.sqlite3")  # relative to the first root
    assert "inside Sluice's own state" in error, error


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://[2002:7f00:1::]/db", "6to4 loopback address"),
        ("postgresql://[::ffff:10.0.0.1]/db", "IPv4-mapped private address"),
        ("postgresql://2130706433/db", "loopback address"),
        ("postgresql://localhost/db", "loopback host"),
        ("postgresql://10.1.2.3:5432/db", "private address"),
        ("postgres://192.168.0.7/db", "private address"),
        ("postgresql://db.example.com:0/db", "the port must be a number from 1 to 65535"),
        ("postgresql://db.example.com:65536/db", "the port must be a number from 1 to 65535"),
        ("postgresql://db.example.com:x/db", "the port must be a number from 1 to 65535"),
        ("postgresql://a.example,b.example/db", "is not one host name or address"),
        ("postgresql://%2Ftmp/db", "is not one host name or address"),
        ("postgresql://db.example.com/db?host=/tmp", "'host' is not allowed"),
        ("postgresql://db.example.com/db?hostaddr=127.0.0.1", "'hostaddr' is not allowed"),
        ("postgresql://db.example.com/db?sslrootcert=/etc/shadow", "'sslrootcert' is not"),
        ("postgresql://db.example.com/db?service=x", "'service' is not allowed"),
        ("postgresql://db.example.com/db?passfile=/root/.pgpass", "'passfile' is not allowed"),
        ("postgresql://db.example.com/db?sslmode=off", "sslmode must be one of"),
        ("postgresql://db.example.com/db?connect_timeout=0", "connect_timeout must be"),
        ("postgresql://db.example.com/db?application_name=a%0Ab", "application_name must be"),
        ("postgresql://db.example.com/db?sslmode=require&sslmode=disable", "given twice"),
        ("postgresql://db.example.com/d%0Ab", "the database name must not contain"),
        ("postgresql://db.example.com/db\x00", "must not contain spaces, line breaks"),
        ("postgresql://u:pw@db.example.com/db", "must not contain a password"),
        ("postgresql://db.example.com/db#x", "must not have a #fragment"),
        ("sqlite:///../../etc/x.db", "must not contain '..' segments"),
        ("sqlite:///db\n.sqlite", "must not contain control characters"),
        ("sqlite:////proc/self/environ", "inside the system directory /proc"),
    ],
)
def test_other_unguarded_forms_are_refused(url: str, message: str) -> None:
    [error] = url_errors(url)
    assert message in error, error


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://db.example.com:5432/events",
        "postgres://db.example.com/events",
        "postgresql://u@db.example.com/events",
        "postgresql://8.8.8.8/events",
        "postgresql://db.example.com/events?sslmode=verify-full&connect_timeout=5"
        "&application_name=sluice",
        "sqlite:///events.db",
    ],
)
def test_public_hosts_and_files_under_a_root_are_accepted(url: str) -> None:
    assert JdbcSinkConfig(url=url).url == url


def test_the_allow_lists_are_per_sink(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_ENV, "127.0.0.1")  # the HTTP sink's does not open JDBC
    assert "loopback" in url_errors("postgresql://127.0.0.1/db")[0]
    monkeypatch.setenv(JDBC_ALLOW_ENV, "127.0.0.1,localhost")
    assert JdbcSinkConfig(url="postgresql://127.0.0.1:5432/db").dialect == "postgresql"
    assert JdbcSinkConfig(url="postgresql://localhost/db").dialect == "postgresql"


# -- connect time ---------------------------------------------------------------------------


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """``getaddrinfo`` answering from a table (name -> address), for the names in it."""
    table: dict[str, str] = {}
    real = socket.getaddrinfo

    def resolve(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in table:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (table[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return table


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """psycopg's ``connect``, recording its parameters instead of connecting."""
    calls: list[dict[str, Any]] = []

    def connect(conninfo: str = "", **kwargs: Any) -> str:
        calls.append({"conninfo": conninfo, **kwargs})
        return "connection"

    monkeypatch.setattr(psycopg, "connect", connect)
    return calls


def test_a_name_resolving_to_loopback_is_refused_at_connect_time(
    resolver: dict[str, str], connects: list[dict[str, Any]]
) -> None:
    resolver["db.example.com"] = "127.0.0.1"
    config = JdbcSinkConfig(url="postgresql://db.example.com:5432/events", password="pg-secret")
    with pytest.raises(ForbiddenAddress) as raised:
        upsert_rows(config, [ROW])
    assert str(raised.value) == (
        "db.example.com (127.0.0.1) is a loopback address; the JDBC sink refuses it unless "
        f"{JDBC_ALLOW_ENV} names it"
    )
    assert connects == []  # nothing was sent, not even the password


def test_the_connection_is_pinned_to_the_checked_address(
    resolver: dict[str, str], connects: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver["db.example.com"] = "127.0.0.1"
    monkeypatch.setenv(JDBC_ALLOW_ENV, "127.0.0.1")
    config = JdbcSinkConfig(
        url="postgresql://reader@db.example.com:6432/events?sslmode=require&connect_timeout=3",
        password="pg-secret",
    )
    assert connect_postgresql(config) == "connection"
    assert connects == [
        {
            "conninfo": "",
            "host": "db.example.com",  # kept for TLS
            "hostaddr": "127.0.0.1",  # what was checked
            "port": 6432,
            "dbname": "events",
            "user": "reader",
            "password": "pg-secret",
            "sslmode": "require",
            "connect_timeout": "3",
        }
    ]


def test_the_sink_rechecks_a_url_that_skipped_validation(connects: list[dict[str, Any]]) -> None:
    for url, message in (
        ("postgresql://169.254.169.254:80/db", "link-local"),
        ("postgresql://db.example.com/db?options=-c%20x%3Dy", "'options' is not allowed"),
    ):
        config = JdbcSinkConfig.model_construct(url=url, table="events", batch_size=1)
        with pytest.raises(ValueError, match=message):
            upsert_rows(config, [ROW])
    assert connects == []


def test_sqlite_files_are_checked_again_before_they_are_opened(
    guarded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guarded.mkdir()
    config = JdbcSinkConfig(url="sqlite:///db/events.db")
    assert upsert_rows(config, [ROW]) == 1
    with sqlite3.connect(guarded / "db" / "events.db") as connection:
        assert connection.execute("SELECT id FROM events").fetchall() == [("e-1",)]

    outside = guarded.parent / "outside"
    outside.mkdir()
    (guarded / "db" / "events.db").unlink()
    (guarded / "db").rmdir()
    (guarded / "db").symlink_to(outside)  # swapped after the spec was saved
    with pytest.raises(ValueError, match=r"jdbc sink: the SQLite file resolves to .*outside"):
        upsert_rows(config, [ROW])
    assert list(outside.iterdir()) == []

    unchecked = JdbcSinkConfig.model_construct(url="sqlite:////etc/passwd", table="x")
    with pytest.raises(ValueError, match="/etc/passwd, outside the files roots"):
        upsert_rows(unchecked, [ROW])
