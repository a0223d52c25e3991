"""A channel's restart policy: whether, when and how often the control loop restarts a
FAILED connector by itself.

* ``never`` - a FAILED connector stays FAILED until a user restarts (or starts) it, as in
  Kafka Connect.
* ``on-failure`` (the default) - the control loop restarts it, at most ``max_attempts``
  times in a row (default 5). Attempt *n* waits ``backoff_initial_seconds * 2**(n-1)``
  seconds, capped at ``backoff_max_seconds`` (defaults 1 s and 60 s: 1, 2, 4, 8, 16 s),
  counted from the moment the connector was seen FAILED. Past ``max_attempts`` the policy
  is exhausted: that is recorded once and the connector stays FAILED.

The count goes back to zero once the connector has been RUNNING for
``settings.SLUICE_RESTART_RESET_SECONDS`` (default 600 s, Kubernetes' crash-loop reset), and
whenever a user starts a FAILED channel, restarts or stops it. The policy applies only while
the channel's target is RUNNING or PAUSED (a restarted paused channel comes back PAUSED).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from console.choices import RestartPolicyType
from console.models import Channel

#: API key → Channel field.
MODEL_FIELDS = {
    "type": "restart_policy",
    "max_attempts": "restart_max_attempts",
    "backoff_initial_seconds": "restart_backoff_initial_seconds",
    "backoff_max_seconds": "restart_backoff_max_seconds",
}
_MAX_EXPONENT = 40  # 2**40 s is far past any cap; keeps the float arithmetic finite


@dataclass(frozen=True)
class RestartPolicy:
    type: str = RestartPolicyType.ON_FAILURE
    max_attempts: int = 5
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 60.0

    @classmethod
    def of(cls, channel: Channel) -> RestartPolicy:
        return cls(**{key: getattr(channel, name) for key, name in MODEL_FIELDS.items()})

    def updated(self, changes: Mapping[str, Any]) -> RestartPolicy:
        """This policy with ``changes`` (a subset of its keys) applied."""
        known = {f.name for f in fields(self)}
        return replace(self, **{k: v for k, v in changes.items() if k in known})

    def apply_to(self, channel: Channel) -> None:
        for key, name in MODEL_FIELDS.items():
            setattr(channel, name, getattr(self, key))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "type": str(self.type)}

    @property
    def restarts(self) -> bool:
        return self.type == RestartPolicyType.ON_FAILURE

    def delay(self, attempt: int) -> float:
        """Seconds between a failure and automatic restart number ``attempt`` (from 1)."""
        exponent = min(max(attempt - 1, 0), _MAX_EXPONENT)
        return min(self.backoff_initial_seconds * 2**exponent, self.backoff_max_seconds)

    def describe(self) -> str:
        if not self.restarts:
            return "never"
        return (
            f"on-failure, {self.max_attempts} attempt(s), backoff "
            f"{self.backoff_initial_seconds:g}-{self.backoff_max_seconds:g} s"
        )
