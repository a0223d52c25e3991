"""A pass's reading of each connector's reported status: which report to trust, the state
derived from it, its date and deadline (step 4 of :mod:`console.services.reconcile`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from console.choices import (
    HOSTED_TARGETS,
    ConnectorState,
    ShownState,
    SubjectType,
    TargetState,
)
from console.models import (
    Connector,
)
from console.selectors import reporting
from console.selectors.specs import scrub
from console.services import count_totals
from console.services.lifecycle import RECONCILE_ACTOR, lifecycle_event
from console.services.reconcile.state import (
    _ACTIVE_STATES,
    _MAX_REASON,
    _TICK,
    _TaskRows,
    _timestamp,
    summarize_trace,
)
from console.services.reconcile.tasks import TaskMirror
from runtime_adapter.base import (
    ConnectorStatus,
)


class Observing(TaskMirror):
    """Step 4: observed status."""

    def observe(
        self, connector: Connector, status: ConnectorStatus | None, tasks: _TaskRows
    ) -> None:
        if status is not None and status.generation < connector.generation:
            status = None  # from a driver the connector has since replaced
        if (
            status is not None
            and (status.trace or status.reason)
            and connector.revision is not None
        ):
            # A driver's error may quote its config; the trace and reason are shown to users.
            secrets = self.secrets_of(connector)
            status = replace(
                status,
                trace=scrub(status.trace, secrets),
                reason=scrub(status.reason, secrets)[:_MAX_REASON],
            )
        state, reason, trusted = self.derive_state(connector, status)
        if trusted:
            # derive_state trusts only a reported status: it is not None here.
            status = cast(ConnectorStatus, status)
            if status.generation > connector.generation:
                connector.generation = status.generation
                self.new_generations[connector.pk] = connector
            stamp = _timestamp(status.updated_at)
            last_status_at = stamp or connector.last_status_at
            self.update_connector(
                connector,
                {
                    **self.report_seen(connector, state, status, stamp),
                    "trace": status.trace,
                    "driver_id": status.driver_id or "",
                    "status_reason": self.kept_reason(connector, state, status.reason),
                    "finished": status.finished or self.finished_stays(connector, state),
                    "last_status_at": last_status_at,
                    "dead_letters": status.dead_letters,
                    "sink_retries": status.sink_retries,
                    **self.counts_since_first_start(connector, status),
                    "batch_seconds": _batch_seconds(status.progress, connector.batch_seconds),
                },
            )
            if state in (ConnectorState.STOPPED, ConnectorState.UNASSIGNED) and not status.tasks:
                # A worker's word that no driver runs it lists no tasks: they are parked, not
                # gone (their offsets stay; parked_lag reads their lag from the brokers).
                self.park_tasks(connector, state, tasks.of(connector))
            else:
                self.mirror_tasks(connector, state, status.tasks, tasks.of(connector))
        elif state in (ConnectorState.STOPPED, ConnectorState.UNASSIGNED):
            # No driver runs it (or none is believed to): neither its driver nor the
            # runtime's reason is shown (but a finished run's); the connector's event says why.
            self.update_connector(
                connector,
                {
                    "driver_id": "",
                    "status_reason": self.kept_reason(connector, state, ""),
                    "status_deadline_at": None,
                },
            )
            self.park_tasks(connector, state, tasks.of(connector))
        # Else no trusted report and the state kept: its deadline stands, so a status that
        # vanished (or an old generation's, still there) turns NOT_REPORTING when it passes.
        self.set_connector_state(connector, state, reason)
        self.note_silence(connector)
        if trusted and state == ConnectorState.STOPPED and cast(ConnectorStatus, status).finished:
            self.stop_finished(connector, reason)

    @staticmethod
    def counts_since_first_start(connector: Connector, status: ConnectorStatus) -> dict[str, Any]:
        """The report's stage and rule counts with what earlier drivers counted added
        (:mod:`console.services.count_totals`)."""
        if not status.stages and not status.rules:
            return {
                "stage_metrics": count_totals.resting(connector.stage_metrics),
                "rule_metrics": count_totals.resting(connector.rule_metrics),
            }
        driver = f"{status.driver_id or ''}/{status.application_id or ''}"
        base, stages, rules = count_totals.carry(
            connector.count_base, driver, status.stages, status.rules
        )
        return {"stage_metrics": stages, "rule_metrics": rules, "count_base": base}

    @staticmethod
    def finished_stays(connector: Connector, state: str) -> bool:
        """A finished run's connector that stays STOPPED: later reports of the same stop (its
        worker's as the driver ends, none at all once it is gone) say nothing new."""
        return (
            connector.finished
            and connector.state == ConnectorState.STOPPED
            and state == ConnectorState.STOPPED
        )

    @staticmethod
    def kept_reason(connector: Connector, state: str, reason: str) -> str:
        """``reason``, or, when it says nothing and the connector is a finished run that stays
        STOPPED, why the run finished ("available-now run finished: …"): shown until the
        channel runs again."""
        if not reason and Observing.finished_stays(connector, state):
            return connector.status_reason
        return reason

    def note_silence(self, connector: Connector) -> None:
        """Record, once each, that the connector is NOT_REPORTING (as the readers judge it, at
        this pass) and that it reports again (``silence_recorded`` remembers which was
        recorded last). The readers never wait for this record: it is the timeline's."""
        judged = reporting.of_connector(connector, at=self.at)
        silent = not judged.reporting
        if silent == connector.silence_recorded:
            return
        if silent:
            self.connector_event(connector, ShownState.NOT_REPORTING, judged.reason)
        else:
            why = (
                "reports again"
                if connector.status_seen_at == self.at or connector.pk in self.dated
                else f"no report awaited any more ({connector.state} is the control loop's own)"
            )
            self.connector_event(
                connector, connector.state, why, from_state=ShownState.NOT_REPORTING
            )
        connector.silence_recorded = silent
        self.connector_changed(connector)
        self.reporting_changed.add(connector.channel_id)

    def report_seen(
        self,
        connector: Connector,
        state: str,
        status: ConnectorStatus,
        stamp: datetime | None,
    ) -> dict[str, Any]:
        """The liveness fields of a trusted report: a report is new when its ``updated_at``
        (the reporter's clock, compared only with itself) differs from the stored one, and it
        is then dated by the pass (the console's clock); a report read again keeps its date,
        so one nobody refreshes runs out (:mod:`console.selectors.reporting`)."""
        interval = max(0.0, float(status.report_interval or 0.0))
        news = self.feed.news.get(connector.runtime_id) if self.feed is not None else None
        if news is not None and not news.reporting:
            # Its owner says its driver stopped refreshing it: not believed from now on.
            last = connector.status_seen_at or self.at
            deadline = reporting.deadline(state, last, interval)
            return {
                "status_seen_at": last,
                "report_interval": interval,
                "status_deadline_at": None if deadline is None else min(deadline, self.at - _TICK),
            }
        if news is not None:
            # News read on the way through a backlog may be old: it dates nothing.
            new = connector.status_seen_at is None or bool(self.feed and self.feed.caught_up)
        else:
            new = connector.status_seen_at is None or (
                stamp is not None and stamp != connector.last_status_at
            )
        seen_at = self.at if new else connector.status_seen_at
        return {
            "status_seen_at": seen_at,
            "report_interval": interval,
            "status_deadline_at": reporting.deadline(state, seen_at, interval),
        }

    def stop_finished(self, connector: Connector, reason: str) -> None:
        """An available-now run reached the end of its source: the channel's target follows.

        Done as a user's stop is (target STOPPED, then told to the runtime, restart count
        reset), recorded as a channel event by the control loop. Starting the channel again runs
        it again from its checkpoint, as a new generation (:func:`console.services.start_channel`),
        so this run's report is not taken for the next one's.
        """
        channel = connector.channel
        if channel.target_state != TargetState.RUNNING:
            return
        event = lifecycle_event(
            channel=channel,
            subject_type=SubjectType.CHANNEL,
            subject_id=channel.name,
            from_state=channel.target_state,
            to_state=TargetState.STOPPED,
            actor=RECONCILE_ACTOR,
            reason=reason or "available-now run finished",
            at=self.at,
            secrets=self.secrets_of(connector),
        )
        self.finished_runs.append((connector, connector.generation, event))
        if connector.restart_attempts:
            connector.restart_attempts = 0
            self.new_attempts[connector.pk] = connector

    def derive_state(
        self, connector: Connector, status: ConnectorStatus | None
    ) -> tuple[str, str, bool]:
        """``(state, reason, whether the status is to be trusted as-is)``."""
        target = connector.channel.target_state
        if target in HOSTED_TARGETS and connector.worker_id not in self.live:
            return ConnectorState.UNASSIGNED, "no live runtime worker to host it", False
        if status is None:
            if (
                self.feed is not None
                and connector.state in _ACTIVE_STATES
                and connector.worker_id in self.live
            ):
                # No news of it in this pass, not no status: its live worker's last word (a
                # query still stopping, say) stands until the next.
                return connector.state, "", False
            if target == TargetState.STOPPED:
                return ConnectorState.STOPPED, "stopped and not reported by the runtime", False
            return connector.state, "", False
        state = ConnectorState(str(status.state))
        reporter = status.worker_id
        if state in _ACTIVE_STATES and reporter is not None and reporter not in self.live:
            derived = (
                ConnectorState.UNASSIGNED if target in HOSTED_TARGETS else ConnectorState.STOPPED
            )
            return derived, f"worker {reporter} that reported it {state} is dead", False
        if status.reason:
            return state, status.reason, True
        if state == ConnectorState.FAILED:
            return state, summarize_trace(status.trace), True
        return state, f"reported by worker {reporter}" if reporter else "reported", True

    def keep_totals(self, connector: Connector, dead_letters: int, sink_retries: int) -> None:
        """The totals only the runtime counts never go backwards here. The re-send gives a
        store that lost them the console's totals to go on from
        (:mod:`console.services.resend`); one that lost only its counters, its connectors'
        desired state intact, goes unnoticed by it: the last totals are then kept until the
        runtime's count passes them."""
        connector.dead_letters = max(connector.dead_letters, dead_letters)
        connector.sink_retries = max(connector.sink_retries, sink_retries)


def _batch_seconds(progress: Any, before: float | None) -> float | None:
    """The latest micro-batch's duration from a progress report (Spark's
    ``durationMs.triggerExecution``); what was known before when the report has none."""
    durations = progress.get("durationMs") if isinstance(progress, dict) else None
    total = durations.get("triggerExecution") if isinstance(durations, dict) else None
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        return float(total) / 1000.0
    return before
