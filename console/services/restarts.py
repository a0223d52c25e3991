"""Restarting channels' connectors (Kafka Connect's KIP-745), decided once over a list.

A restart of one channel (:func:`console.services.channels.restart_channel`) and a bulk
restart both run :func:`restart` (see :mod:`console.services.transitions` for the shape all
actions share).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from console.choices import ConnectorState, TargetState
from console.models import Channel, Connector, Task
from console.services import channel_health
from console.services.bulk import update_rows
from console.services.transitions import (
    Answer,
    Batch,
    in_one_transaction,
    refused,
    restart_many,
    secrets_of,
)


@dataclass(frozen=True)
class TaskRestart:
    id: int
    state: str
    worker_id: str | None


@dataclass(frozen=True)
class RestartPlan:
    """What a restart request does, in the shape of Kafka Connect's KIP-745 answer: the
    connector and its tasks, those that restart in state RESTARTING, the others as they are.
    """

    name: str
    restarting: bool
    connector_state: str
    worker_id: str | None
    generation: int
    tasks: list[TaskRestart]
    reason: str


def restart(
    channels: Sequence[Channel],
    actor: str,
    *,
    include_tasks: bool = False,
    only_failed: bool = False,
) -> dict[str, Answer]:
    """Restart each channel's connector with Kafka Connect's KIP-745 parameters; answers
    its :class:`RestartPlan`.

    Which instances are asked for: the connector (always, or only when FAILED with
    ``only_failed``), and with ``include_tasks`` its tasks (all, or the FAILED ones). A
    channel's connector and tasks live in one driver, so restarting any of them replaces the
    driver (a new generation) and every task restarts with it; when ``only_failed`` finds
    nothing FAILED, nothing restarts. The decision is recorded either way, as a lifecycle
    event with the reason; a restart resets the restart policy's count. A channel never
    started or STOPPED is refused (409)."""
    answers: dict[str, Answer] = {}
    asked = f"include_tasks={str(include_tasks).lower()}, only_failed={str(only_failed).lower()}"

    def act(locked: list[Channel]) -> None:
        batch = Batch(actor, secrets=secrets_of(channel.pk for channel in locked))
        connectors = {c.channel_id: c for c in Connector.objects.filter(channel__in=locked)}
        tasks = _tasks_of(list(connectors.values()))
        acting: list[tuple[Channel, Connector, str]] = []
        for channel in locked:
            connector = connectors.get(channel.pk)
            if connector is None or channel.target_state == TargetState.STOPPED:
                answers[channel.name] = refused(channel, _restart_refusal(connector))
                continue
            mine = tasks.get(connector.pk, [])
            why = _restart_cause(
                connector, mine, include_tasks=include_tasks, only_failed=only_failed
            )
            if why is not None:
                acting.append((channel, connector, f"restart requested ({asked}): {why}"))
                answers[channel.name] = Answer(202)  # its plan once the runtime answers
                continue
            reason = f"restart requested ({asked}): nothing FAILED, nothing restarted"
            batch.connector_event(channel, connector, connector.state, reason)
            plan = _plan(channel, connector, mine, restarting=False, reason=reason)
            answers[channel.name] = Answer(202, result=plan)
        _restart_connectors(batch, acting, tasks, answers)

    return in_one_transaction(channels, act, answers)


def _restart_connectors(
    batch: Batch,
    acting: list[tuple[Channel, Connector, str]],
    tasks: dict[int, list[Task]],
    answers: dict[str, Answer],
) -> None:
    """Replace the drivers of ``acting`` (a new generation each, their tasks RESTARTING)."""
    generations = restart_many([connector.runtime_id for _, connector, _ in acting])
    for channel, connector, asked in acting:
        generation = generations[connector.runtime_id]
        mine = tasks.get(connector.pk, [])
        reason = (
            f"{asked}; restarting the driver and its {len(mine)} task(s) (generation {generation})"
        )
        batch.connector_event(channel, connector, ConnectorState.RESTARTING, reason)
        connector.generation = generation
        connector.state = ConnectorState.RESTARTING
        connector.state_changed_at = batch.now
        connector.status_deadline_at = None  # the console's state, not a report: no deadline
        connector.restart_attempts = 0
        plan = _plan(channel, connector, mine, restarting=True, reason=reason)
        answers[channel.name] = Answer(202, result=plan)
    batch.save()
    restarted = [connector for _, connector, _ in acting]
    update_rows(
        Connector,
        restarted,
        ["generation", "state", "state_changed_at", "status_deadline_at", "restart_attempts"],
    )
    Task.objects.filter(connector__in=restarted).update(state=ConnectorState.RESTARTING)
    channel_health.refresh([channel.pk for channel, _, _ in acting])


def _restart_refusal(connector: Connector | None) -> str:
    if connector is None:
        return "was never started: there is nothing to restart"
    return "is STOPPED: there is no driver to restart; start it instead"


def _restart_cause(
    connector: Connector, tasks: list[Task], *, include_tasks: bool, only_failed: bool
) -> str | None:
    """Why a restart request restarts the driver, or ``None`` when it restarts nothing."""
    if not only_failed:
        return (
            "the connector and its tasks asked for" if include_tasks else "the connector asked for"
        )
    if connector.state == ConnectorState.FAILED:
        return "the connector is FAILED"
    failed = [str(task.task_id) for task in tasks if task.state == ConnectorState.FAILED]
    if include_tasks and failed:
        return f"task(s) {', '.join(failed)} FAILED"
    return None


def _plan(
    channel: Channel, connector: Connector, tasks: list[Task], *, restarting: bool, reason: str
) -> RestartPlan:
    return RestartPlan(
        name=channel.name,
        restarting=restarting,
        connector_state=ConnectorState.RESTARTING if restarting else connector.state,
        worker_id=connector.worker_id,
        generation=connector.generation,
        tasks=[
            TaskRestart(
                id=task.task_id,
                state=ConnectorState.RESTARTING if restarting else task.state,
                worker_id=task.worker_id,
            )
            for task in tasks
        ],
        reason=reason,
    )


def _tasks_of(connectors: list[Connector]) -> dict[int, list[Task]]:
    """Each connector's tasks by task id, in one query."""
    found: dict[int, list[Task]] = {}
    for task in Task.objects.filter(connector__in=connectors).order_by("connector_id", "task_id"):
        found.setdefault(task.connector_id, []).append(task)
    return found
