"""The retry policy of a sink's writes (``retry`` on every sink's config), EventBridge's for a
target: attempts, exponential backoff with full jitter, a maximum event age.

A write that fails is tried again after a random wait in ``[0, min(max_backoff_ms,
backoff_ms * 2^(n-1))]`` ms (``n``: the attempts made so far), up to ``attempts`` tries in
all. Before each retry, events older than ``max_event_age_seconds`` (by their origin
timestamp, else their ``time``) are not retried any more. What becomes of the events given
up on is the channel's error policy: dead letters under ``errors.tolerance: all`` (error
class and message of the last failure, ``attempts`` in their context), a failed task under
``none``. See :mod:`pipelines.retry` and ``docs/errors.md``.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from pipelines.spec.configs.base import StageConfig

MAX_ATTEMPTS = 185
"""EventBridge's own upper bound of a target's retry attempts."""
MAX_EVENT_AGE_SECONDS = 86_400
"""EventBridge's upper bound (and default) of a target's maximum event age: 24 hours."""


class SinkRetry(StageConfig):
    """How a sink's failed write is retried (exponential backoff with full jitter)."""

    model_config = ConfigDict(title="Retry policy")

    attempts: int = Field(
        1,
        ge=1,
        le=MAX_ATTEMPTS,
        title="Attempts",
        description=(
            "Tries per micro-batch write, the first included. 1 (the default): no retry, a "
            "failed write fails the task and the restart policy resumes it. More: after the "
            "last, the events become dead letters (errors.tolerance: all) or fail the task."
        ),
    )
    backoff_ms: int = Field(
        1_000,
        ge=1,
        le=3_600_000,
        title="Initial backoff (ms)",
        description=(
            "The wait before the 2nd attempt is a random time up to this; the bound doubles "
            "with each further attempt (full jitter)."
        ),
    )
    max_backoff_ms: int = Field(
        60_000,
        ge=1,
        le=3_600_000,
        title="Max backoff (ms)",
        description="Upper bound of one wait; at least the initial backoff.",
    )
    max_event_age_seconds: int | None = Field(
        MAX_EVENT_AGE_SECONDS,
        ge=1,
        le=MAX_EVENT_AGE_SECONDS,
        title="Max event age (s)",
        description=(
            "Events older than this (from their origin timestamp, else their time) are not "
            "retried any more (null in the spec: no limit but the attempts)."
        ),
    )

    @field_validator("max_backoff_ms")
    @classmethod
    def _at_least_the_initial_backoff(cls, value: int, info: ValidationInfo) -> int:
        initial = info.data.get("backoff_ms")
        if initial is not None and value < initial:
            raise ValueError(f"must be >= backoff_ms ({initial})")
        return value

    @property
    def backoff_seconds(self) -> float:
        return self.backoff_ms / 1000

    @property
    def max_backoff_seconds(self) -> float:
        return self.max_backoff_ms / 1000


RETRY_FIELD_DESCRIPTION = (
    "Retry a failed write (attempts, exponential backoff with jitter, maximum event age) "
    "before its events become dead letters or fail the task. Unset or 1 attempt: a failed "
    "write fails the task and the restart policy brings it back (nothing is lost)."
)


RETRY_FIELD = Field(None, title="Retry policy", description=RETRY_FIELD_DESCRIPTION)
"""The ``retry`` field of a sink's config: unset by default (one attempt, as before). The
builder's form fills in the policy's defaults, whose ``attempts: 1`` is the same: no retry."""
