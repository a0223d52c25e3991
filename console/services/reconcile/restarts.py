"""A pass's restarts: each channel's restart policy applied to its FAILED connector (step 5
of :mod:`console.services.reconcile`)."""

from __future__ import annotations

from console.choices import (
    HOSTED_TARGETS,
    ConnectorState,
)
from console.models import (
    Connector,
)
from console.selectors.restart_policy import RestartPolicy
from console.services.reconcile.state import (
    _MAX_REASON,
    PassState,
    summarize_trace,
)


class Restarting(PassState):
    """Step 5: the restart policy."""

    def apply_restart_policy(self, connector: Connector, was: str) -> None:
        """Restart a FAILED connector when its channel's policy and backoff allow it."""
        if connector.state == ConnectorState.RUNNING:
            self.maybe_reset_attempts(connector)
            return
        channel = connector.channel
        if (
            connector.state != ConnectorState.FAILED
            or channel.target_state not in HOSTED_TARGETS
            or connector.worker_id not in self.live
        ):
            return
        policy = RestartPolicy.of(channel)
        if not policy.restarts:
            return
        failure = summarize_trace(connector.trace)
        attempt = connector.restart_attempts + 1
        if attempt > policy.max_attempts:
            if was != ConnectorState.FAILED:  # once, as it turns FAILED
                self.connector_event(
                    connector,
                    ConnectorState.FAILED,
                    f"restart policy exhausted after {connector.restart_attempts} attempts; "
                    f"last failure: {failure}",
                )
            return
        failed_at = connector.state_changed_at or self.at
        if (self.at - failed_at).total_seconds() < policy.delay(attempt):
            return
        connector.generation = self.runtime.restart(connector.runtime_id)
        self.new_generations[connector.pk] = connector
        connector.restart_attempts = attempt
        self.new_attempts[connector.pk] = connector
        self.restarts += 1
        reason = f"automatic restart {attempt}/{policy.max_attempts} after failure: {failure}"
        self.set_connector_state(connector, ConnectorState.RESTARTING, reason[:_MAX_REASON])

    def maybe_reset_attempts(self, connector: Connector) -> None:
        since = connector.state_changed_at
        if not connector.restart_attempts or since is None:
            return
        running_for = (self.at - since).total_seconds()
        if running_for < self.restart_reset:
            return
        self.connector_event(
            connector,
            ConnectorState.RUNNING,
            f"restart attempts reset after {running_for:.0f} s RUNNING "
            f"(was {connector.restart_attempts})",
        )
        connector.restart_attempts = 0
        self.new_attempts[connector.pk] = connector
