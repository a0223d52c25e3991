from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import json
from console import settings as s
print(json.dumps({
    "debug": s.DEBUG,
    "hosts": s.ALLOWED_HOSTS,
    "secret": s.SECRET_KEY,
    "db": {k: s.DATABASES["default"].get(k) for k in ("ENGINE", "NAME", "HOST", "OPTIONS")},
    "redis": s.REDIS_URL,
    "broker": s.CELERY_BROKER_URL,
    "runtime": s.SLUICE_RUNTIME,
    "interval": s.SLUICE_RECONCILE_INTERVAL,
    "timeout": s.SLUICE_WORKER_SESSION_TIMEOUT,
    "static_root": str(s.STATIC_ROOT),
    "expires": s.CELERY_BEAT_SCHEDULE["reconcile"]["options"]["expires"],
}))
"""


def load_settings(tmp_path: Path, **env: str) -> dict:
    """Import the settings in a fresh interpreter with exactly ``env`` set."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "DATABASE_"))}
    keep = {k: v for k, v in keep.items() if k not in {"REDIS_URL", "CELERY_BROKER_URL"}}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**keep, "SLUICE_VAR_DIR": str(tmp_path), **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def test_embedded_defaults(tmp_path):
    s = load_settings(tmp_path)

    assert s["debug"] is False
    assert s["hosts"] == ["127.0.0.1", "localhost"]
    assert s["secret"].startswith("django-insecure-")
    assert s["db"]["ENGINE"] == "django.db.backends.sqlite3"
    assert s["db"]["NAME"] == str(tmp_path / "sluice.sqlite3")
    assert s["redis"] == s["broker"] == "redis://127.0.0.1:6379/0"
    assert s["runtime"] == "runtime_adapter.spark.SparkRuntime"
    assert (s["interval"], s["timeout"], s["expires"]) == (1.0, 10.0, 1.0)
    assert s["static_root"] == str(tmp_path / "static")


def test_everything_comes_from_the_environment(tmp_path):
    s = load_settings(
        tmp_path,
        SLUICE_DEBUG="true",
        SLUICE_SECRET_KEY="k" * 50,
        SLUICE_ALLOWED_HOSTS="console.example.com, 10.0.0.1",
        DATABASE_URL="postgres://sluice:pw@db.example.com:5432/sluice",
        REDIS_URL="redis://cache:6379/1",
        SLUICE_RUNTIME="tests.unit.console.fakes.FakeRuntime",
        SLUICE_RECONCILE_INTERVAL="5",
        SLUICE_WORKER_SESSION_TIMEOUT="30",
    )

    assert s["debug"] is True
    assert s["secret"] == "k" * 50
    assert s["hosts"] == ["console.example.com", "10.0.0.1"]
    assert s["db"]["ENGINE"] == "django.db.backends.postgresql"
    assert (s["db"]["HOST"], s["db"]["NAME"]) == ("db.example.com", "sluice")
    assert s["redis"] == s["broker"] == "redis://cache:6379/1"
    assert s["runtime"] == "tests.unit.console.fakes.FakeRuntime"
    assert (s["interval"], s["timeout"], s["expires"]) == (5.0, 30.0, 5.0)


def test_a_separate_broker_can_be_set(tmp_path):
    s = load_settings(tmp_path, CELERY_BROKER_URL="redis://broker:6379/2")

    assert s["broker"] == "redis://broker:6379/2"
    assert s["redis"] == "redis://127.0.0.1:6379/0"


def test_a_malformed_number_is_refused(tmp_path):
    with pytest.raises(subprocess.CalledProcessError) as failure:
        load_settings(tmp_path, SLUICE_RECONCILE_INTERVAL="soon")

    assert "SLUICE_RECONCILE_INTERVAL must be a number" in failure.value.stderr


def test_the_development_key_is_flagged_by_the_deploy_checks(settings):
    from django.core.checks import run_checks

    from console.settings import DEV_SECRET_KEY

    settings.SECRET_KEY = DEV_SECRET_KEY
    assert "console.W001" in {m.id for m in run_checks(include_deployment_checks=True)}
    assert "console.W001" not in {m.id for m in run_checks()}

    settings.SECRET_KEY = "a-real-secret-" * 5
    assert "console.W001" not in {m.id for m in run_checks(include_deployment_checks=True)}
