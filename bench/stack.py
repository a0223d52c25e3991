"""What the control-plane benchmarks stand on, started the same way for each of them
(``bench.control``, ``bench.fleet``, ``bench.drain``): all on 127.0.0.1 under a throwaway
folder, all stopped on the way out.

* :func:`django_on_postgres`: Django in this process on a throwaway PostgreSQL (the
  production database), migrated;
* :func:`redis_server`: a Redis of its own (for the real runtime adapter);
* :func:`live_stack`: Redis, a Kafka broker and the whole stack
  (:func:`tests.support.stack.running_stack`: web, Celery worker and beat, runtime workers).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import start_kafka, start_postgres, start_redis
from tests.support.stack import Stack, running_stack


@contextlib.contextmanager
def django_on_postgres(work: Path) -> Iterator[str]:
    """Start PostgreSQL under ``work``, set Django up on it (``console.settings``, its var/
    under ``work``) and migrate; yields the database URL."""
    service, url = start_postgres(work / "pg", work / "logs")
    try:
        os.environ.update(
            DJANGO_SETTINGS_MODULE="console.settings",
            DATABASE_URL=url,
            SLUICE_VAR_DIR=str(work / "var"),
        )
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        yield url
    finally:
        service.stop()


@contextlib.contextmanager
def redis_server(work: Path) -> Iterator[str]:
    """A Redis under ``work``; yields its URL."""
    redis, url = start_redis(work / "redis", work / "logs")
    try:
        yield url
    finally:
        redis.stop()


@contextlib.contextmanager
def live_stack(
    work: Path, runtime_workers: int = 1, extra_env: dict[str, str] | None = None
) -> Iterator[Stack]:
    """Redis, a Kafka broker and the whole stack under ``work`` (``extra_env`` on top of
    :func:`running_stack`'s environment); the stack's ``kafka`` is the broker's address."""
    with redis_server(work) as redis_url:
        kafka, bootstrap = start_kafka(work / "kafka", work / "logs")
        try:
            with running_stack(
                redis_url=redis_url,
                kafka=bootstrap,
                var=work / "var",
                log_dir=work / "logs" / "stack",
                runtime_workers=runtime_workers,
                extra_env=extra_env,
            ) as stack:
                yield stack
        finally:
            kafka.stop()
