"""Retries of a sink's micro-batch write, as its ``retry`` policy says (EventBridge's targets).

:class:`RetriedWrite` wraps one sink's batch write (``events -> rejected dead letters |
None``, raising when the write fails). Each micro-batch is written once; when that raises, it
is written again after a random wait in ``[0, min(max_backoff, backoff * 2^(n-1))]``
(tenacity's ``wait_random_exponential``: exponential backoff with full jitter, which spreads
the retries of many channels best), up to ``attempts`` tries in all. Before each retry, the
events older than ``max_event_age_seconds`` (from their origin timestamp, else their
``time``; no limit for an event with neither) are taken out: they are not retried any more.
A refused address (:class:`~pipelines.net.ForbiddenAddress`) or a bad setting
(``ValueError``) does not heal with time and is not retried.

What becomes of the events given up on is the channel's error policy:

* ``tolerant`` (``errors.tolerance: all``) - they are returned as dead letters
  (:data:`pipelines.errors.DEAD_LETTER_SCHEMA` plus an ``attempts`` column, which the dead
  letter's context carries): error class and message of the last failure, or
  ``EventTooOld`` for those past their maximum age;
* strict (``none``) - :class:`RetriesExhausted` is raised (the task fails with the last
  error, which it chains) as soon as the attempts are spent or any event got too old.

The sinks keep their delivery guarantee across retries because each retry writes the same
micro-batch again under the same batch id: the files sink's ``_spark_metadata`` log takes a
batch id once (a retry after a failed attempt writes it; one after an attempt that did
commit writes nothing), the JDBC sink upserts on the event id in one transaction (a retried
batch rewrites the same rows), the Kafka sink is at least once (a retry may write again
records an earlier attempt had written). The caller persists the batch so that an attempt
does not compute it again.

Every retried write logs one line (``sluice.retries``) and calls ``on_retry(1)`` so the
runtime can count the channel's retries.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import tenacity
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from pipelines import native
from pipelines.cloudevents import event_json
from pipelines.net import ForbiddenAddress
from pipelines.spec.configs.retry import SinkRetry

logger = logging.getLogger("sluice.retries")

TOO_OLD = "EventTooOld"
MESSAGE_CHARS = 500
NOT_RETRIED: tuple[type[BaseException], ...] = (ForbiddenAddress, ValueError)
"""Failures that waiting does not heal: a refused address, a setting that does not pass."""

DeadLetters = Callable[[DataFrame, Column, Column, int], DataFrame]
"""``(events, error class, message, attempts) -> dead letters`` of events given up on."""


class RetriesExhausted(RuntimeError):
    """A write that still failed after its retry policy (strict channels: fails the task)."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


def backoff_bound(policy: SinkRetry, retry: int) -> float:
    """The longest wait (seconds) before the ``retry``-th retry (1: the second attempt)."""
    return min(policy.max_backoff_seconds, policy.backoff_seconds * 2.0 ** min(retry - 1, 60))


def backoff_wait(policy: SinkRetry) -> tenacity.wait.wait_base:
    """Tenacity's wait of the policy: a random time in ``[0, backoff_bound(policy, n)]``."""
    return tenacity.wait_random_exponential(
        multiplier=policy.backoff_seconds, max=policy.max_backoff_seconds
    )


def retryable(error: BaseException) -> bool:
    """Whether a failed write is worth another attempt (see :data:`NOT_RETRIED`)."""
    return isinstance(error, Exception) and not isinstance(error, (*NOT_RETRIED, RetriesExhausted))


def root_cause(error: BaseException) -> tuple[str, str]:
    """``(class name, message)`` of what made a write fail. A JVM error (py4j's
    ``Py4JJavaError``: "An error occurred while calling o123.save") is named by its deepest
    Java cause (``TimeoutException``: "Topic orders not present in metadata after 2000
    ms."); a Python error by itself."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            cause = java
            while cause.getCause() is not None:
                cause = cause.getCause()
            return str(cause.getClass().getSimpleName()), str(cause.getMessage() or "")
        except Exception:  # the gateway is gone: fall back to the Python side's text
            pass
    lines = str(error).strip().splitlines()
    return type(error).__name__, lines[0] if lines else ""


def short(error: BaseException) -> str:
    """``Class: first line of the message`` of what made a write fail (:func:`root_cause`)."""
    name, message = root_cause(error)
    first = message.strip().splitlines()[0] if message.strip() else ""
    return f"{name}: {first}"[:MESSAGE_CHARS] if first else name


def age_from() -> Column:
    """When an event's age is measured from: its origin timestamp, else its ``time``."""
    return F.coalesce(F.col("origin_timestamp"), F.col("time"))


def sink_dead_letters(stage: str) -> DeadLetters:
    """Dead letters of a linear channel's sink events (``stage``: ``sink``)."""

    def build(events: DataFrame, error_class: Column, message: Column, attempts: int) -> DataFrame:
        return events.select(
            F.col("id").alias("event_id"),
            event_json(native.json_zone(events)).alias("event"),
            F.lit(stage).alias("stage"),
            error_class.alias("error_class"),
            message.alias("message"),
            "origin_topic",
            "origin_partition",
            "origin_offset",
            "origin_timestamp",
            "origin_payload",
            F.lit(attempts).cast(IntegerType()).alias("attempts"),
        )

    return build


@dataclass
class RetriedWrite:
    """One sink's batch write under its retry policy (see the module docstring).

    ``write`` writes the events it is given and raises when it fails (it may also return
    events it rejected as dead letters: they are passed on). ``what`` names the sink in log
    lines and messages (``sink``, ``rules[0].sinks[1] (jdbc)``).
    """

    write: Callable[[DataFrame], DataFrame | None]
    policy: SinkRetry
    what: str
    tolerant: bool
    dead_letters: DeadLetters
    on_retry: Callable[[int], None] | None = None
    where: str = ""
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    attempts: int = field(default=0, init=False)

    def __call__(self, events: DataFrame) -> DataFrame | None:
        """Write ``events`` (persisted by the caller); the dead letters of the events given
        up on and of those the write rejected, or None when every event was written."""
        self.attempts = 0
        pending: DataFrame | None = events
        expired: list[DataFrame] = []
        last: list[BaseException] = []

        def attempt() -> DataFrame | None:
            nonlocal pending
            if self.attempts and pending is not None:
                pending, too_old = self._split_by_age(pending, last[-1])
                if too_old is not None:
                    expired.append(too_old)
                if pending is None:
                    return None  # every event is past its age: nothing left to retry
            self.attempts += 1
            try:
                return self.write(pending) if pending is not None else None
            except Exception as error:
                last.append(error)
                raise

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.policy.attempts),
            wait=backoff_wait(self.policy),
            retry=tenacity.retry_if_exception(retryable),
            before_sleep=self._before_sleep,
            sleep=self.sleep,
            reraise=True,
        )
        try:
            rejected = retrying(attempt)
        except RetriesExhausted:
            raise
        except Exception as error:
            if not self.tolerant:
                raise RetriesExhausted(self._gave_up(error), self.attempts) from error
            assert pending is not None  # a write that raised had events to write
            error_class, message = F.lit(root_cause(error)[0]), F.lit(self._gave_up(error))
            expired.append(self.dead_letters(pending, error_class, message, self.attempts))
            rejected = None
        parts = list(expired)
        if rejected is not None:
            parts.append(rejected)
        if not parts:
            return None
        result = parts[0]
        for part in parts[1:]:
            result = result.unionByName(part, allowMissingColumns=True)
        return result

    def _split_by_age(
        self, pending: DataFrame, error: BaseException
    ) -> tuple[DataFrame | None, DataFrame | None]:
        """``(still retried, too old)``: None for an empty part. Strict: raises when any is
        too old (the task fails with the last error)."""
        max_age = self.policy.max_event_age_seconds
        if max_age is None:
            return pending, None
        cutoff = int((self.clock() - max_age) * 1_000_000)
        old = F.coalesce(F.unix_micros(age_from()) < F.lit(cutoff), F.lit(False))
        counts = pending.select(
            F.count(F.lit(1)).alias("all"), F.sum(F.when(old, 1).otherwise(0)).alias("old")
        ).first()
        total, too_old = (int(counts["all"]), int(counts["old"] or 0)) if counts else (0, 0)
        if not too_old:
            return pending, None
        message = (
            f"{self.what}: {too_old} event(s) older than max_event_age_seconds={max_age} "
            f"after {self.attempts} attempt(s); last error: {short(error)}"
        )
        logger.warning("%s%s", message, self.where)
        if not self.tolerant:
            raise RetriesExhausted(message, self.attempts) from error
        dead = self.dead_letters(pending.filter(old), F.lit(TOO_OLD), F.lit(message), self.attempts)
        return (pending.filter(~old) if too_old < total else None), dead

    def _before_sleep(self, state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        logger.warning(
            "%s write failed (attempt %d of %d%s), retrying in %.2f s: %s",
            self.what,
            state.attempt_number,
            self.policy.attempts,
            self.where,
            wait,
            short(error) if error is not None else "",
        )
        if self.on_retry is not None:
            self.on_retry(1)

    def _gave_up(self, error: BaseException) -> str:
        return f"{self.what}: write failed after {self.attempts} attempt(s): {short(error)}"
