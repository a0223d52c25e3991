"""What a driver may see of its worker's environment, and who can reach what.

The privilege drop itself is run for real by tests/integration/test_least_privilege.py.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.spec.secrets import DEVELOPMENT_SECRET_KEY, SecretBox, derive_key
from runtime_adapter.host.privileges import RuntimeUser, check_reachable, driver_environment

WORKER_ENV = {
    "PATH": "/usr/bin",
    "HOME": "/root",
    "LC_ALL": "C.UTF-8",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "SLUICE_VAR_DIR": "/srv/sluice/var",
    "SLUICE_HTTP_SINK_ALLOW": "10.0.0.0/8",
    "SLUICE_SECRET_KEY": "session-signing-key",
    "SLUICE_ADMIN_PASSWORD": "admin",
    "SLUICE_METRICS_TOKEN": "scrape",
    "DATABASE_URL": "postgres://console:pw@db/console",
    "AWS_SECRET_ACCESS_KEY": "cloud",
    "CELERY_BROKER_URL": "redis://x",
    "SPARK_LOCAL_IP": "127.0.0.1",
}


def test_a_driver_gets_the_runtime_settings_only() -> None:
    env = driver_environment(WORKER_ENV)
    assert {"PATH", "LC_ALL", "REDIS_URL", "SLUICE_VAR_DIR", "SLUICE_HTTP_SINK_ALLOW"} <= set(env)
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    for withheld in (
        "SLUICE_SECRET_KEY",
        "SLUICE_ADMIN_PASSWORD",
        "SLUICE_METRICS_TOKEN",
        "DATABASE_URL",
        "AWS_SECRET_ACCESS_KEY",
        "CELERY_BROKER_URL",
    ):
        assert withheld not in env, withheld
    assert "session-signing-key" not in env.values()


def test_without_a_secrets_key_the_driver_gets_the_derived_key_that_opens_the_same_box() -> None:
    env = driver_environment(WORKER_ENV)
    console_box = SecretBox.from_config(None, "session-signing-key")
    sealed = console_box.encrypt("jdbc-password")
    assert env["SLUICE_SECRETS_KEY"] == derive_key("session-signing-key").decode()
    assert SecretBox.from_config(env["SLUICE_SECRETS_KEY"], "unused").decrypt(sealed) == (
        "jdbc-password"
    )


def test_the_development_fallback_is_derived_too() -> None:
    env = driver_environment({"PATH": "/usr/bin"})
    assert env["SLUICE_SECRETS_KEY"] == derive_key(DEVELOPMENT_SECRET_KEY).decode()


def test_a_configured_secrets_key_is_passed_as_is() -> None:
    env = driver_environment({**WORKER_ENV, "SLUICE_SECRETS_KEY": "k1,k2"})
    assert env["SLUICE_SECRETS_KEY"] == "k1,k2"


def test_a_missing_or_root_runtime_user_is_refused_with_what_to_do() -> None:
    with pytest.raises(ValueError, match=r"no such user.*useradd --system"):
        RuntimeUser.named("no-such-user-sluice-test")
    with pytest.raises(ValueError, match="is root"):
        RuntimeUser.named("root")


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A folder every user can reach (pytest's own tmp_path is private to its user)."""
    path = Path(tempfile.mkdtemp(dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_folder_others_cannot_search_is_named(open_tmp: Path) -> None:
    tmp_path = open_tmp
    nobody = RuntimeUser("nobody-test", 65_534, 65_534, "/nonexistent")
    private = tmp_path / "private"
    (private / "checkout").mkdir(parents=True)
    private.chmod(0o700)
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    try:
        with pytest.raises(ValueError, match=f"{private} is not searchable"):
            check_reachable(nobody, [private / "checkout"])
        link = tmp_path / "link"
        link.symlink_to(private / "checkout")
        with pytest.raises(ValueError, match="is not searchable"):
            check_reachable(nobody, [link])  # judged where it leads
        check_reachable(nobody, [open_folder])
    finally:
        private.chmod(0o755)
