"""Least privilege for the runtime: who the worker and its drivers run as, and what they see.

A channel's stages run code on the worker's host (a Spark driver evaluating an editor's SQL,
reading and writing files, connecting out). Sluice checks all of that before it runs, and the
process that runs it should still hold as little as possible:

* **An unprivileged user.** When the runtime worker starts as root and ``SLUICE_RUNTIME_USER``
  names a user, it prepares the folders the runtime writes (checkpoints, connector logs, the
  drivers' working folder) for that user, then drops to it for good (groups, group, user,
  in that order) before it reads any assignment. Every driver it launches inherits that user.
  Started as root without ``SLUICE_RUNTIME_USER`` it keeps running, and warns at start.
  ``make run`` sets ``SLUICE_RUNTIME_USER=sluice`` (a system user ``scripts/ensure-system.sh``
  creates); the docker image runs as an unprivileged user already.
* **An allow-listed environment.** A driver gets only the variables of
  :data:`DRIVER_ENV_NAMES` and :data:`DRIVER_ENV_PREFIXES`, never the console's own secrets
  (``SLUICE_SECRET_KEY`` signs sessions, ``SLUICE_ADMIN_PASSWORD``, ``DATABASE_URL``). It
  decrypts its stages' secrets with ``SLUICE_SECRETS_KEY``; when that is unset the worker
  hands it the key derived from ``SLUICE_SECRET_KEY`` instead of the secret key itself.
"""

from __future__ import annotations

import logging
import os
import pwd
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pipelines.spec.secrets import DEVELOPMENT_SECRET_KEY, SECRETS_KEY_ENV, derive_key

log = logging.getLogger("sluice.worker")

RUNTIME_USER_ENV = "SLUICE_RUNTIME_USER"

DRIVER_ENV_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "JAVA_HOME",
        "REDIS_URL",
        "HADOOP_CONF_DIR",
        "SPARK_MASTER",
        "SPARK_HOME",
        "SPARK_CONF_DIR",
        "SPARK_LOCAL_IP",
        "SPARK_LOCAL_DIRS",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
    }
)
"""Environment variables a driver is given, by exact name."""

DRIVER_ENV_PREFIXES = ("LC_", "SLUICE_")
"""...and by prefix, except the names in :data:`DRIVER_ENV_WITHHELD`."""

DRIVER_ENV_WITHHELD = frozenset(
    {
        "SLUICE_SECRET_KEY",
        "SLUICE_ADMIN_PASSWORD",
        "SLUICE_USER_PASSWORD",
        "SLUICE_METRICS_TOKEN",
        "SLUICE_TOKEN",
    }
)
"""Console credentials that match a prefix above but that no driver needs."""


def driver_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` a driver may see (see the module docstring)."""
    env = {
        name: value
        for name, value in environ.items()
        if (name in DRIVER_ENV_NAMES or name.startswith(DRIVER_ENV_PREFIXES))
        and name not in DRIVER_ENV_WITHHELD
    }
    if not environ.get(SECRETS_KEY_ENV, "").strip():
        # The development fallback: the key derived from the secret key, never the secret key.
        fallback = environ.get("SLUICE_SECRET_KEY") or DEVELOPMENT_SECRET_KEY
        env[SECRETS_KEY_ENV] = derive_key(fallback).decode()
    return env


@dataclass(frozen=True)
class RuntimeUser:
    """The account the runtime drops to."""

    name: str
    uid: int
    gid: int
    home: str

    @classmethod
    def named(cls, name: str) -> RuntimeUser:
        """The user ``name``; raises ``ValueError`` saying how to create it when missing."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise ValueError(
                f"{RUNTIME_USER_ENV}={name}: no such user on this host; create it (make "
                f"install does: useradd --system {name}) or unset {RUNTIME_USER_ENV}"
            ) from None
        if entry.pw_uid == 0:
            raise ValueError(f"{RUNTIME_USER_ENV}={name} is root: name an unprivileged user")
        return cls(name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def prepare_folders(user: RuntimeUser, folders: Iterable[Path]) -> None:
    """Create ``folders`` and give them (and everything in them) to ``user``: the runtime's
    own folders, which it must go on writing after it drops privileges."""
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        for path in (folder, *folder.rglob("*")):
            if not path.is_symlink():
                os.chown(path, user.uid, user.gid)


def check_reachable(user: RuntimeUser, paths: Iterable[Path]) -> None:
    """Raise ``ValueError`` when ``user`` could not get to one of ``paths`` (a folder on the
    way that is not searchable by others, such as a checkout under /root)."""
    for path in (Path(os.path.realpath(given)) for given in paths):
        for folder in (path, *path.parents):
            try:
                mode = folder.stat()
            except OSError:
                continue
            owned = mode.st_uid == user.uid
            searchable = mode.st_mode & (0o100 if owned else 0o001)
            if folder.is_dir() and not searchable and not _in_group(user, mode.st_gid, mode):
                raise ValueError(
                    f"{RUNTIME_USER_ENV}={user.name} cannot reach {path}: {folder} is not "
                    f"searchable by it (chmod o+x {folder}, or install Sluice elsewhere)"
                )


def _in_group(user: RuntimeUser, gid: int, mode: os.stat_result) -> bool:
    return gid == user.gid and bool(mode.st_mode & 0o010)


def drop_privileges(user: RuntimeUser) -> None:
    """Become ``user`` for good: supplementary groups cleared, then group, then user."""
    os.setgroups([])
    os.setgid(user.gid)
    os.setuid(user.uid)
    os.environ.update({"HOME": user.home, "USER": user.name, "LOGNAME": user.name})
    if os.getuid() == 0 or os.geteuid() == 0:  # pragma: no cover - setuid would have raised
        raise RuntimeError("the runtime worker could not drop root")
    log.info("runtime worker runs as %s (uid %s)", user.name, user.uid)


def become_runtime_user(
    runtime_user: str | None, folders: Iterable[Path], needed: Iterable[Path]
) -> None:
    """At the worker's start: drop root for ``runtime_user`` after preparing ``folders``
    and checking it can reach ``needed``; warn when running as root without one."""
    if os.geteuid() != 0:
        return
    if not runtime_user:
        log.warning(
            "the runtime worker runs as root, and so will its Spark drivers: set %s to an "
            "unprivileged user",
            RUNTIME_USER_ENV,
        )
        return
    user = RuntimeUser.named(runtime_user)
    check_reachable(user, needed)
    prepare_folders(user, folders)
    drop_privileges(user)
