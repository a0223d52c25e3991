"""The runtime's state vocabulary: Kafka Connect's connector and task states.

These plain enums are the contract between the runtime and the console: the
console mirrors them as Django ``TextChoices`` (``console.choices``) and a unit
test keeps both sets equal.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """Observed state of a connector or task (Kafka Connect's ``AbstractStatus.State``).

    * ``UNASSIGNED`` - wanted but not (yet) hosted by a live runtime worker.
    * ``RUNNING``    - the driver's streaming query is active.
    * ``PAUSED``     - the driver is warm (JVM, SparkSession) but its query is stopped.
    * ``STOPPED``    - no driver; the checkpoint is kept.
    * ``FAILED``     - the driver or its query died; ``trace`` says why.
    * ``RESTARTING`` - a restart was requested and the new driver is not up yet.
    """

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"


class TargetState(StrEnum):
    """What the user asked for."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


class WorkerState(StrEnum):
    """Liveness of a runtime worker as judged from its heartbeats."""

    ALIVE = "ALIVE"
    DEAD = "DEAD"
