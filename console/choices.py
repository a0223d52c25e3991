"""The console's state vocabularies as Django ``TextChoices``.

``ConnectorState``, ``TargetState`` and ``WorkerState`` mirror
:mod:`runtime_adapter.states` value for value (a unit test keeps the sets equal),
so a runtime value can be stored and compared without translation; ``PluginKind``
mirrors :data:`pipelines.spec.PLUGIN_KINDS` the same way.
"""

from __future__ import annotations

from django.db import models


class ConnectorState(models.TextChoices):
    """Observed state of a connector or one of its tasks (Kafka Connect's set)."""

    UNASSIGNED = "UNASSIGNED", "Unassigned"
    RUNNING = "RUNNING", "Running"
    PAUSED = "PAUSED", "Paused"
    STOPPED = "STOPPED", "Stopped"
    FAILED = "FAILED", "Failed"
    RESTARTING = "RESTARTING", "Restarting"


class ShownState(models.TextChoices):
    """A connector's state as the console shows it: the last observed one
    (:class:`ConnectorState`), or NOT_REPORTING when that state is one its reporter promised
    to keep refreshing and no new report was seen for twice its report interval, by the
    console's clock (:mod:`console.selectors.reporting`). Never stored: judged when read."""

    UNASSIGNED = "UNASSIGNED", "Unassigned"
    RUNNING = "RUNNING", "Running"
    PAUSED = "PAUSED", "Paused"
    STOPPED = "STOPPED", "Stopped"
    FAILED = "FAILED", "Failed"
    RESTARTING = "RESTARTING", "Restarting"
    NOT_REPORTING = "NOT_REPORTING", "Not reporting"


class TargetState(models.TextChoices):
    """What a user asked a channel to be."""

    RUNNING = "RUNNING", "Running"
    PAUSED = "PAUSED", "Paused"
    STOPPED = "STOPPED", "Stopped"


#: Target states that want the connector hosted by a runtime worker.
HOSTED_TARGETS = frozenset({TargetState.RUNNING, TargetState.PAUSED})


class WorkerState(models.TextChoices):
    """Liveness of a runtime worker, judged from its heartbeats."""

    ALIVE = "ALIVE", "Alive"
    DEAD = "DEAD", "Dead"


class WorkerService(models.TextChoices):
    """Whether a runtime worker takes channels: an operator's decision, apart from its
    liveness (:class:`WorkerState`).

    DRAINING: taken out of service; it gets no new placements and the control loop moves its
    channels to other live workers, each resuming from its checkpoint. DRAINED: none left on
    it. A drained worker can be stopped, and forgotten once DEAD, or put back in service.
    """

    IN_SERVICE = "IN_SERVICE", "In service"
    DRAINING = "DRAINING", "Draining"
    DRAINED = "DRAINED", "Drained"


class RestartPolicyType(models.TextChoices):
    """Whether the control loop restarts a FAILED connector by itself."""

    NEVER = "never", "Never"
    ON_FAILURE = "on-failure", "On failure"


class SubjectType(models.TextChoices):
    """What a lifecycle event is about."""

    CHANNEL = "channel", "Channel"
    CONNECTOR = "connector", "Connector"
    TASK = "task", "Task"
    WORKER = "worker", "Worker"


class PluginKind(models.TextChoices):
    """The kind of a stage plugin: where it may stand in a channel."""

    SOURCE = "source", "Source"
    TRANSFORM = "transform", "Transform"
    SINK = "sink", "Sink"


class RunKind(models.TextChoices):
    """What a bounded run beside the live connector does (:class:`console.models.ChannelRun`)."""

    REPLAY = "replay", "Replay"
    REDRIVE = "redrive", "Redrive"


class RunState(models.TextChoices):
    """Where a bounded run is. SUCCEEDED, FAILED and CANCELLED are final."""

    PENDING = "PENDING", "Pending"
    RUNNING = "RUNNING", "Running"
    SUCCEEDED = "SUCCEEDED", "Succeeded"
    FAILED = "FAILED", "Failed"
    CANCELLED = "CANCELLED", "Cancelled"


#: Run states a run never leaves.
FINAL_RUN_STATES = (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED)


class TeamRole(models.TextChoices):
    """A user's role in a team (:mod:`console.permissions` says what each grants)."""

    VIEWER = "viewer", "Viewer"
    OPERATOR = "operator", "Operator"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Team admin"


class MembershipSource(models.TextChoices):
    """Who keeps a team membership: an admin, or the single sign-on's group rules."""

    LOCAL = "local", "Given by an admin"
    SIGN_IN = "sign-in", "From the sign-in groups"
    SERVICE_ACCOUNT = "service-account", "A service account's role"
