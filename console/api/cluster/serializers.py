"""Runtime workers and the cluster view as the API shows them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rest_framework import serializers

from console import permissions
from console.choices import ShownState, WorkerService, WorkerState
from console.models import Worker

SERVICE_HELP = (
    "IN_SERVICE: takes new channels. DRAINING: gets no new channels and hands its channels to "
    "other live workers (each resumes from its checkpoint). DRAINED: none left on it; it can "
    "be stopped, then forgotten once DEAD."
)


class WorkerCapacitySerializer(serializers.Serializer):
    """A runtime worker's capacity and load, as its own record in the status topic said."""

    cores = serializers.IntegerField(
        required=False, help_text="Cores it may give real-time queries (SLUICE_WORKER_CORES)."
    )
    cores_held = serializers.IntegerField(
        required=False, help_text="Cores its real-time queries hold now."
    )
    connectors = serializers.IntegerField(required=False, help_text="Connectors it runs.")
    memory_available_mb = serializers.IntegerField(
        required=False, help_text="Memory available on its host (MemAvailable), in MiB."
    )
    draining = serializers.BooleanField(required=False, help_text="Whether it is drained.")
    slots = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="The runtime slots the group gave it: their channels run there.",
    )


class WorkerSerializer(serializers.ModelSerializer):
    state = serializers.ChoiceField(
        choices=WorkerState.choices,
        help_text="Liveness: DEAD once its last heartbeat is older than the session timeout.",
    )
    service = serializers.ChoiceField(choices=WorkerService.choices, help_text=SERVICE_HELP)
    service_changed_at = serializers.DateTimeField(
        allow_null=True, help_text="When it was last drained or put back in service."
    )
    service_changed_by = serializers.CharField(
        help_text="Who drained it or put it back in service (user:<name>; system:reconcile "
        "when it turned DRAINED)."
    )
    connectors = serializers.SerializerMethodField(
        help_text="Ids (channel names) of the connectors assigned to this worker."
    )
    capacity = WorkerCapacitySerializer(
        help_text="Its capacity and load as it last said (the runtime group places channels; "
        "empty until it says): the control loop moves a real-time channel whose slot's owner "
        "lacks the cores to a worker that has them."
    )

    class Meta:
        model = Worker
        fields = [
            "worker_id",
            "host",
            "pid",
            "state",
            "service",
            "service_changed_at",
            "service_changed_by",
            "started_at",
            "last_heartbeat",
            "connectors",
            "capacity",
        ]
        read_only_fields = fields

    def get_connectors(self, worker: Worker) -> list[str]:
        """The worker's connectors of the teams the caller sees (a site admin: all)."""
        request = self.context.get("request")
        teams = permissions.visible_team_ids(request.user) if request is not None else set()
        return sorted(
            connector.runtime_id
            for connector in worker.connectors.all()
            if teams is None or connector.channel.team_id in teams
        )


class DrainSerializer(serializers.Serializer):
    """The answer to a drain: the worker (DRAINING), the channels that move and where."""

    worker = WorkerSerializer()
    changed = serializers.BooleanField(
        help_text="False when it was already draining or drained (nothing changed)."
    )
    channels = serializers.ListField(
        child=serializers.CharField(),
        help_text="The channels (target RUNNING or PAUSED) assigned to it, which move.",
    )
    takers = serializers.ListField(
        child=serializers.CharField(),
        help_text=(
            "The other live workers in service that can take them; empty: they keep running "
            "on it until one is alive."
        ),
    )


class EpochDateTimeField(serializers.DateTimeField):
    """A Unix time in seconds (what runtimes report), shown as an ISO 8601 date-time."""

    def to_representation(self, value: Any) -> Any:
        if value is None:
            return None
        return super().to_representation(datetime.fromtimestamp(value, tz=UTC))


class ClusterDriverSerializer(serializers.Serializer):
    """A long-lived Spark driver of a runtime worker, as its last heartbeat describes it."""

    driver_id = serializers.CharField()
    isolation = serializers.ChoiceField(
        choices=["shared", "dedicated"],
        help_text=(
            "shared: many channels' queries side by side (up to capacity); dedicated: one "
            "channel's (runtime.isolation: dedicated in its spec)."
        ),
    )
    pid = serializers.IntegerField(help_text="The driver's process id on the worker's host.")
    started_at = EpochDateTimeField()
    last_heartbeat = EpochDateTimeField()
    heartbeat_age = serializers.FloatField(help_text="Seconds since the driver's last heartbeat.")
    capacity = serializers.IntegerField(help_text="The most channels the driver takes.")
    memory = serializers.CharField(
        allow_blank=True, help_text="The driver's JVM memory (spark.driver.memory, e.g. 1g)."
    )
    cores = serializers.IntegerField(help_text="Cores its real-time queries hold.")
    application_id = serializers.CharField(
        allow_null=True, help_text="The driver's Spark application id."
    )
    connectors = serializers.ListField(
        child=serializers.CharField(),
        help_text="Ids of the connectors whose queries it hosts now (running or paused).",
    )
    channels = serializers.ListField(
        child=serializers.CharField(),
        help_text="The names of the channels those connectors run.",
    )
    team = serializers.CharField(
        allow_blank=True,
        help_text=(
            "The team whose channels alone it runs (empty: channels deployed before teams). "
            "A team's member sees its own teams' drivers only."
        ),
    )


class ClusterRuntimeWorkerSerializer(serializers.Serializer):
    worker_id = serializers.CharField()
    host = serializers.CharField()
    pid = serializers.IntegerField()
    state = serializers.ChoiceField(
        choices=WorkerState.choices,
        help_text="DEAD once its last heartbeat is older than the session timeout.",
    )
    service = serializers.ChoiceField(choices=WorkerService.choices, help_text=SERVICE_HELP)
    started_at = EpochDateTimeField()
    last_heartbeat = EpochDateTimeField()
    heartbeat_age = serializers.FloatField(help_text="Seconds since its last heartbeat.")
    connectors = serializers.ListField(
        child=serializers.CharField(),
        help_text="Ids of the connectors whose drivers it hosts, as its heartbeat says.",
    )
    drivers = ClusterDriverSerializer(
        many=True, help_text="Its Spark drivers, each with the channels it hosts."
    )


class SparkWorkerSerializer(serializers.Serializer):
    worker_id = serializers.CharField(help_text="The id the Spark master gave the worker.")
    host = serializers.CharField()
    port = serializers.IntegerField(allow_null=True)
    state = serializers.CharField(help_text="As the master says: ALIVE, DEAD, DECOMMISSIONED…")
    cores = serializers.IntegerField(help_text="Cores the worker offers.")
    cores_used = serializers.IntegerField()
    memory_mb = serializers.IntegerField(help_text="Memory the worker offers, in MiB.")
    memory_used_mb = serializers.IntegerField()
    last_heartbeat = EpochDateTimeField(allow_null=True)
    heartbeat_age = serializers.SerializerMethodField(
        help_text="Seconds since the master last heard from the worker."
    )
    web_ui = serializers.CharField(allow_blank=True)

    def get_heartbeat_age(self, worker: Any) -> float | None:
        now = self.context.get("now")
        if worker.last_heartbeat is None or now is None:
            return None
        return round(max(now - worker.last_heartbeat, 0.0), 3)


class SparkApplicationSerializer(serializers.Serializer):
    app_id = serializers.CharField()
    name = serializers.CharField(help_text="sluice-<channel> for a connector's driver.")
    state = serializers.CharField()
    cores = serializers.IntegerField(help_text="Cores granted to the application.")
    memory_per_executor_mb = serializers.IntegerField()
    started_at = EpochDateTimeField(allow_null=True)


class SparkClusterSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=["local", "standalone", "other"],
        help_text=(
            "local: executors run inside each driver (local[*]); standalone: a spark:// "
            "master, whose workers and applications follow; other: a master Sluice does not "
            "inspect."
        ),
    )
    master = serializers.CharField(help_text="SPARK_MASTER as the console sees it.")
    status = serializers.CharField(allow_null=True, help_text="The master's own status.")
    web_ui = serializers.CharField(allow_null=True)
    error = serializers.CharField(
        allow_null=True, help_text="Why the master's status could not be read (else null)."
    )
    workers = SparkWorkerSerializer(many=True)
    applications = SparkApplicationSerializer(many=True)


class ExecutorSerializer(serializers.Serializer):
    id = serializers.CharField(
        source="executor_id", help_text="Spark's executor id; 'driver' for the driver itself."
    )
    host = serializers.CharField()
    port = serializers.IntegerField(allow_null=True)
    cores = serializers.IntegerField()
    active_tasks = serializers.IntegerField()
    completed_tasks = serializers.IntegerField()
    failed_tasks = serializers.IntegerField()
    memory_used = serializers.IntegerField(help_text="Storage memory in use, in bytes.")
    memory_total = serializers.IntegerField(help_text="Storage memory available, in bytes.")


class ClusterChannelSerializer(serializers.Serializer):
    name = serializers.CharField()
    connector_id = serializers.CharField()
    state = serializers.ChoiceField(
        choices=ShownState.choices,
        help_text="As the runtime's store says; NOT_REPORTING when the console has had no new "
        "report of it for twice its report interval (the channel's own state says the same).",
    )
    worker_id = serializers.CharField(allow_null=True)
    driver_id = serializers.CharField(
        allow_null=True, help_text="The Spark driver running the channel's query."
    )
    application_id = serializers.CharField(
        allow_null=True, help_text="The Spark application of the connector's driver."
    )
    executors = ExecutorSerializer(many=True)


class ClusterSerializer(serializers.Serializer):
    runtime_workers = ClusterRuntimeWorkerSerializer(many=True)
    spark = SparkClusterSerializer()
    channels = ClusterChannelSerializer(
        many=True, help_text="Each channel whose connector reported, with its executors."
    )
