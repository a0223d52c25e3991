"""A connector's task rows as a pass leaves them: the reported tasks mirrored, or parked
with their offsets when no driver runs the connector."""

from __future__ import annotations

from typing import Any

from console.choices import (
    ConnectorState,
    SubjectType,
)
from console.models import (
    Connector,
    Task,
)
from console.services.lifecycle import RECONCILE_ACTOR, lifecycle_event
from console.services.reconcile.state import (
    PassState,
)
from runtime_adapter.base import (
    TaskStatus,
)


class TaskMirror(PassState):
    """The task rows."""

    def mirror_tasks(
        self,
        connector: Connector,
        connector_state: str,
        reported: list[TaskStatus],
        tasks: dict[int, Task],
    ) -> None:
        """Make the connector's task rows equal to the reported tasks.

        A new task is recorded as an event only when its state is not its connector's.
        """
        wanted = {task.task_id: task for task in reported}
        self.gone_tasks.extend(task.pk for task_id, task in tasks.items() if task_id not in wanted)
        for task_id, status in wanted.items():
            values: dict[str, Any] = {
                "state": ConnectorState(str(status.state)),
                "worker_id": status.worker_id,
                "topic": status.topic,
                "partition": status.partition,
                "offset": status.offset,
                "end_offset": status.end_offset,
                "lag": status.lag,
                "rows_per_second": status.rows_per_second,
            }
            reason = f"reported by worker {status.worker_id}" if status.worker_id else "reported"
            task = tasks.get(task_id)
            if task is None:
                task = Task(connector=connector, task_id=task_id, updated=self.at, **values)
                if values["state"] != connector_state:  # else the connector's event says it
                    self.task_event(connector, task, "", values["state"], reason)
                self.new_tasks.append(task)
            else:
                self.update_task(connector, task, values, reason)

    def park_tasks(self, connector: Connector, state: str, tasks: dict[int, Task]) -> None:
        """No driver runs the connector: its tasks take its state and keep their offsets;
        nothing flows (rows/s 0). Their lag is then refreshed from the brokers' end offsets
        (:mod:`console.services.parked_lag`).

        Not recorded as task events: the connector's own event says why.
        """
        for task in tasks.values():
            values = {"state": state, "worker_id": None, "rows_per_second": 0.0}
            self.update_task(connector, task, values, reason=None)

    def update_task(
        self, connector: Connector, task: Task, values: dict, reason: str | None
    ) -> None:
        """Apply ``values``; a state change is recorded unless ``reason`` is None."""
        if all(getattr(task, name) == value for name, value in values.items()):
            return
        if reason is not None and values["state"] != task.state:
            self.task_event(connector, task, task.state, values["state"], reason)
        for name, value in values.items():
            setattr(task, name, value)
        task.updated = self.at
        self.changed_tasks.append(task)

    def task_event(
        self, connector: Connector, task: Task, from_state: str, to_state: str, reason: str
    ) -> None:
        self.events.append(
            lifecycle_event(
                channel=connector.channel,
                subject_type=SubjectType.TASK,
                subject_id=f"{connector.runtime_id}/{task.task_id}",
                from_state=from_state,
                to_state=to_state,
                actor=RECONCILE_ACTOR,
                reason=reason,
                at=self.at,
            )
        )
