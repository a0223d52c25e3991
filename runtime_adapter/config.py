"""Runtime settings, read from the environment (12-factor) with embedded defaults.

:class:`SluiceSettings` is the one way Sluice reads its environment: the ``SLUICE_`` prefix,
typed fields with defaults and descriptions (the manual's configuration reference is rendered
from them), an empty variable taken as unset, and :meth:`SluiceSettings.load`, whose error
names each variable and what was wrong with it. :class:`RuntimeSettings` holds the runtime's
variables (the console's own are ``console.config.ConsoleSettings``); :class:`RuntimeConfig`
is what a runtime worker and its drivers are handed, made from them by
:meth:`RuntimeConfig.from_env`.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, cast

from pydantic import (
    AliasChoices,
    BeforeValidator,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticUseDefault
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent
SPARK_KAFKA_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "spark-kafka"
"""Spark's Kafka connector jars (``scripts/fetch-jars.sh spark-kafka``)."""
FUNCTIONS_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "sluice-spark"
"""Sluice's own Spark functions (``scripts/fetch-jars.sh sluice-spark``)."""

ENV_PREFIX = "SLUICE_"
LogLevel = Literal["CRITICAL", "FATAL", "ERROR", "WARNING", "WARN", "INFO", "DEBUG", "NOTSET"]
"""Python's logging levels by name."""

# -- the one way to read the environment -------------------------------------------------


class SettingsError(ValueError):
    """One or more environment variables hold a value Sluice cannot use; the message names
    each variable, what it must be and what it was."""


def _comma_list(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_list)]
"""A comma-separated list in the environment (``a, b,c``), not JSON; blanks dropped."""


class SluiceSettings(BaseSettings):
    """Settings read from the environment: ``SLUICE_<FIELD>`` unless the field names its
    variable (an alias such as ``REDIS_URL``); an empty variable is as if unset."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        extra="ignore",
        frozen=True,
        populate_by_name=True,
    )

    as_given: ClassVar[frozenset[str]] = frozenset()
    """Fields taken exactly as given, blanks included (key material)."""

    @field_validator("*", mode="before")
    @classmethod
    def _drop_blanks(cls, value: Any, info: ValidationInfo) -> Any:
        """Blanks around a value are dropped; a variable of blanks only is as if unset."""
        if not isinstance(value, str) or info.field_name in cls.as_given:
            return value
        if not value.strip():
            raise PydanticUseDefault()
        return value.strip()

    @classmethod
    def load(cls) -> Self:
        """The settings from this process's environment.

        Raises :class:`SettingsError` naming every variable that is invalid and why."""
        try:
            return cls()
        except ValidationError as exc:
            problems = [_problem(cls, error) for error in exc.errors()]
            raise SettingsError("\n".join(problems)) from None


def environment_names(settings_class: type[BaseSettings], field_name: str) -> list[str]:
    """The environment variables a field is read from, the first the one to use."""
    field = settings_class.model_fields[field_name]
    alias = field.validation_alias or field.alias
    if isinstance(alias, str):
        return [alias.upper()]
    if isinstance(alias, AliasChoices):
        return [str(choice).upper() for choice in alias.choices]
    return [f"{settings_class.model_config.get('env_prefix', '')}{field_name}".upper()]


_MESSAGES = {
    "bool_parsing": "must be true or false",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "literal_error": "must be {expected}",
}
"""What a value must be, by pydantic's error type (its context fills the braces)."""


def _problem(settings_class: type[BaseSettings], error: Any) -> str:
    """One line per invalid value: ``VARIABLE must be …, got '…'``."""
    location = str(error["loc"][0]) if error["loc"] else ""
    variable = location.upper()
    for name in settings_class.model_fields:
        names = environment_names(settings_class, name)
        if location == name or location.upper() in names:
            variable = names[0]
            break
    context = error.get("ctx") or {}
    kind = error["type"]
    if kind in _MESSAGES:
        what = _MESSAGES[kind].format(**context)
    elif kind == "value_error":  # a validator's own ValueError says what is wrong
        what = str(context.get("error", error["msg"]))
    else:
        message = str(error["msg"])
        what = "is invalid: " + message[:1].lower() + message[1:]
    return f"{variable} {what}, got {error.get('input')!r}"


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


# -- the runtime's settings ----------------------------------------------------------------


class RuntimeSettings(SluiceSettings):
    """The runtime's settings: where its state lives (Redis, checkpoints), how runtime workers
    start Spark drivers and size them, and how every Sluice process logs. Runtime workers and
    drivers read them at start (:meth:`RuntimeConfig.from_env`); the console reads the
    shared ones (Redis, data folder, logging)."""

    model_config = SettingsConfigDict(title="Runtime settings")

    # where state lives
    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        validation_alias="REDIS_URL",
        description="Redis for Celery, runtime status, heartbeats and assignments; set it to "
        "use an existing Redis (`make run` then starts none).",
    )
    redis_prefix: str = Field(
        "sluice",
        description="Prefix of the runtime's Redis keys (several installations can share one "
        "Redis).",
    )
    var_dir: Path = Field(
        REPO_ROOT / "var",
        description="Runtime data: the default SQLite database, checkpoints, Celery beat's "
        "schedule, collected static files, the embedded services' data and logs.",
    )
    checkpoint_root: Path | None = Field(
        None,
        description="Spark checkpoints, one folder per channel (`<name>.<random hex>`, removed "
        "with the channel); unset: `checkpoints` under `SLUICE_VAR_DIR`.",
    )

    # Kafka topics the runtime creates
    topic_replication_factor: int = Field(
        1,
        ge=1,
        description="Replication factor of every Kafka topic the runtime and the console create "
        "(ingest topics, redrive topics, MirrorMaker 2 offsets topics); 1 for the embedded "
        "single broker, 3 on a cluster of three brokers or more. The brokers' own topics "
        "(consumer offsets, transactions) and the topics they auto-create (a Kafka sink's or a "
        "dead-letter target's) follow the brokers' `default.replication.factor`.",
    )
    topic_min_insync_replicas: int = Field(
        1,
        ge=1,
        description="`min.insync.replicas` of every Kafka topic the runtime and the console "
        "create: how many copies must confirm a write (`acks=all`) before it counts; at most "
        "`SLUICE_TOPIC_REPLICATION_FACTOR` (2 of 3 keeps writing with one broker down).",
    )

    # Spark
    spark_master: str = Field(
        "local[*]",
        validation_alias="SPARK_MASTER",
        description="Where drivers run their executors: `local[*]` (in the driver's JVM) or a "
        "Spark standalone master, `spark://host:7077` (comma-separated `host:port` pairs for "
        "standby masters).",
    )
    spark_master_ui_url: str | None = Field(
        None,
        description="The standalone master's web UI, read by the cluster view "
        "(comma-separated for standby masters); unset: port 8080 of each master host.",
    )
    spark_jars_dir: Path = Field(
        SPARK_KAFKA_JARS_DIR,
        description="Spark's Kafka connector jars, given to every driver.",
    )
    spark_functions_dir: Path = Field(
        FUNCTIONS_JARS_DIR,
        description="Sluice's own Spark functions (the jar built from `spark/`), given to every "
        "driver too.",
    )
    spark_log_level: Literal["ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"] = (
        Field(
            "WARN",
            description="Spark's own log level inside drivers (log4j).",
        )
    )
    executor_cores: int = Field(
        1,
        ge=1,
        description="Standalone master: cores of each executor (`spark.executor.cores`).",
    )
    executor_memory: str = Field(
        "1g",
        description="Standalone master: memory of each executor (`--executor-memory`).",
    )
    max_cores: int | None = Field(
        None,
        ge=1,
        description="Standalone master: the most cores one driver takes from the cluster "
        "(`spark.cores.max`); unset: `SLUICE_EXECUTOR_CORES`.",
    )
    driver_host: str | None = Field(
        None,
        description="The address executors use to reach a driver on this host "
        "(`spark.driver.host`); unset: 127.0.0.1 under `local[*]`, else the local address of "
        "the route to the master.",
    )
    driver_bind_address: str | None = Field(
        None,
        description="The address a driver listens on (`spark.driver.bindAddress`); unset: "
        "`SLUICE_DRIVER_HOST`.",
    )

    # runtime workers
    worker_id: str | None = Field(
        None,
        description="The identity of this runtime worker; unset: the host name.",
    )
    worker_heartbeat_interval: float = Field(
        1.0,
        description="Seconds between a runtime worker's heartbeats.",
    )
    worker_cores: int | None = Field(
        None,
        ge=1,
        description="Cores this runtime worker's real-time channels may hold together, one per "
        "source partition each; unset: the host's cores.",
    )
    runtime_user: str | None = Field(
        None,
        description="The unprivileged user a runtime worker started as root drops to, and its "
        "drivers run as (`make run` as root uses `sluice`); unset: the worker keeps its user.",
    )
    python: str | None = Field(
        None,
        validation_alias="PYSPARK_PYTHON",
        description="The Python that drivers run; unset: the runtime worker's own.",
    )

    # the runtime's group (runtime_adapter.group): membership, slots, fences
    kafka_bootstrap: str = Field(
        "127.0.0.1:9092",
        description="The installation's Kafka: events ingested over HTTP (`POST /api/v1/"
        "channels/{name}/events`) go to it, in topics `sluice.ingest.<channel>`, and it holds the "
        "runtime's group and its config (desired state) and status topics; set it to use an "
        "existing Kafka (`make run` then starts no embedded broker).",
    )
    runtime_group_id: str = Field(
        "sluice-runtime",
        description="The Kafka consumer group runtime workers join; it hands out the slots.",
    )
    runtime_config_topic: str = Field(
        "sluice.runtime.config",
        description="The compacted topic of desired state (one record per connector, keyed by "
        "its id, in the partition of its slot).",
    )
    runtime_status_topic: str = Field(
        "sluice.runtime.status",
        description="The compacted topic of observed status, written by slot owners in "
        "transactions fenced by their group generation.",
    )
    runtime_membership: bool = Field(
        True,
        description="Runtime workers join the runtime's Kafka group: being its member is what "
        "keeps a worker alive to the console (a worker cut off from Redis alone keeps its "
        "channels), and one that cannot reach the group's coordinator stops its channels "
        "before its session could expire (the self-fence). `false`: liveness from heartbeats "
        "in Redis only, and no fence.",
    )
    runtime_slots: int = Field(
        64,
        ge=1,
        description="Slots: partitions of the config and status topics, the unit of ownership "
        "the group assigns. Fixed once the topics exist (a channel's slot is a hash of its "
        "connector id modulo this number); the most workers that can share the work.",
    )
    runtime_session_timeout: float = Field(
        10.0,
        ge=6.0,
        description="Seconds without a heartbeat after which the group coordinator takes a "
        "runtime worker's slots away (Kafka's `session.timeout.ms`; the brokers allow 6 s to "
        "30 min by default).",
    )
    runtime_heartbeat_interval: float = Field(
        1.0,
        gt=0,
        description="Seconds between a runtime worker's heartbeats to the group coordinator.",
    )
    runtime_fence_margin: float = Field(
        3.0,
        gt=0,
        description="A runtime worker that has heard nothing from the group coordinator for "
        "`SLUICE_RUNTIME_SESSION_TIMEOUT` minus this many seconds stops its channels (the "
        "self-fence): the margin must cover stopping them and one round trip.",
    )
    runtime_coordinator_ride_out: float = Field(
        10.0,
        ge=0,
        description="How many seconds beyond the self-fence a runtime worker keeps its "
        "channels running while the cluster shows its group with no live coordinator (the "
        "broker that coordinated it died and another has not taken over yet): a new "
        "coordinator starts every member's session afresh, so none can expire meanwhile. 0 "
        "fences on silence alone, as before.",
    )
    runtime_placement: Literal["console", "group"] = Field(
        "group",
        description="Who decides where a channel runs (set it alike for the console and every "
        "runtime worker). `group`: the runtime group (needs `SLUICE_RUNTIME_MEMBERSHIP`): a "
        "channel runs on the worker that owns its slot, and the others take it over by "
        "themselves when that worker leaves or dies, whether the console runs or not; the "
        "console follows. `console`: the console's control loop assigns each channel to the "
        "least loaded live worker (the only choice without membership).",
    )
    runtime_status_feed: bool = Field(
        True,
        description="With `group` placement: the console's control loop follows the runtime's "
        "status topic (each worker writes its channels' status changes there, fenced by its "
        "group generation, and vouches for the rest every half report interval), and a pass "
        "looks only at the channels whose status changed, plus those time or a worker's death "
        "acts on, and at all of them every `SLUICE_RECONCILE_RESYNC_SECONDS`. `false`: every "
        "pass reads every channel's status from Redis.",
    )

    # drivers
    driver_memory: str = Field(
        "1g",
        description="Memory of a dedicated driver (a channel with `runtime.isolation: dedicated`).",
    )
    shared_driver_memory: str = Field(
        "2g",
        description="Memory of a shared driver (many channels' queries in one JVM).",
    )
    driver_heap_limit_percent: int = Field(
        85,
        ge=10,
        le=99,
        description="A driver's heap in use after garbage collection, in percent of its heap, "
        "past which its memory watch stops the channel whose task allocated the most.",
    )
    driver_rss_limit_mb: int = Field(
        0,
        ge=0,
        description="A driver's resident memory (RSS) past which its memory watch stops the "
        "channel whose task allocated the most (0: twice the driver's heap plus 1024 MiB).",
    )
    channels_per_driver: int = Field(
        50,
        ge=1,
        description="The most channels one shared driver runs; the next one starts another driver.",
    )
    warm_drivers: int = Field(
        1,
        ge=0,
        description="Shared drivers each runtime worker keeps running even with no channel, so "
        "that a start takes about a second (0: none).",
    )
    spare_drivers: int | None = Field(
        None,
        ge=0,
        le=4,
        description="Empty shared drivers each runtime worker keeps ready beside those running "
        "channels, so that when a channel's task ends a shared driver its neighbours run again "
        "in seconds, not after a new driver's start (each costs an idle JVM; 0: none). Unset: "
        "1 on a local master, 0 on a standalone one (where an idle driver holds cluster cores).",
    )
    driver_idle_seconds: float = Field(
        60.0,
        description="How long a shared driver beyond the warm ones lives with no channel.",
    )
    driver_session_timeout: float = Field(
        30.0,
        description="A driver silent this long (seconds without a heartbeat) is killed and its "
        "channels FAILED with that cause.",
    )
    status_interval: float = Field(
        10.0,
        gt=0,
        description="The longest a hosted channel's status goes unwritten while nothing changes "
        "(seconds). Every status carries it: the console shows a channel whose status is older "
        "than twice this as not reporting, never as running.",
    )
    driver_start_timeout: float = Field(
        180.0,
        description="Seconds a new driver may take to start its SparkSession and send its first "
        "heartbeat.",
    )
    driver_stop_grace: float = Field(
        20.0,
        description="Seconds a retired driver has to stop its queries before SIGTERM (and "
        "SIGKILL 10 s later).",
    )
    idle_poll_ms: int = Field(
        500,
        ge=0,
        description="Milliseconds a query with nothing to read waits before asking its source "
        "again (Spark's `spark.sql.streaming.pollingDelay`); a busy query never waits.",
    )
    stage_counts: bool = Field(
        True,
        description="Count events per stage (a status's `stages`); `false` saves what the "
        "counts cost (1-7 % of the throughput in `python -m bench.stage_counts`) and leaves "
        "`stages` empty.",
    )

    # logging
    log_level: LogLevel = Field(
        "INFO",
        description="Log level of every Sluice process (console, Celery, runtime workers, "
        "drivers).",
    )
    log_format: Literal["text", "json"] = Field(
        "text",
        description="`text`, or `json`: one JSON object per log line with the process role "
        "and, when known, the channel, connector and worker ids.",
    )
    process_role: str | None = Field(
        None,
        description="The `role` field of log lines (`web`, `celery-worker`, `runtime-worker`, "
        "…); unset: guessed from the command.",
    )

    _upper_case = field_validator("spark_log_level", "log_level", mode="before")(_upper)

    @field_validator("topic_min_insync_replicas")
    @classmethod
    def _insync_within_replication(cls, value: int, info: ValidationInfo) -> int:
        factor = info.data.get("topic_replication_factor")
        if factor is not None and value > factor:
            raise ValueError(
                f"must not exceed SLUICE_TOPIC_REPLICATION_FACTOR ({factor}): no write could "
                "ever be confirmed"
            )
        return value

    _lower_case = field_validator("log_format", mode="before")(_lower)

    @field_validator("runtime_fence_margin")
    @classmethod
    def _fence_before_session_expires(cls, margin: float, info: ValidationInfo) -> float:
        session = info.data.get("runtime_session_timeout")
        heartbeat = info.data.get("runtime_heartbeat_interval")
        if session is not None and heartbeat is not None and margin >= session - heartbeat:
            raise ValueError(
                "must be less than SLUICE_RUNTIME_SESSION_TIMEOUT minus "
                "SLUICE_RUNTIME_HEARTBEAT_INTERVAL (a worker would fence itself between two "
                "heartbeats)"
            )
        return margin

    @field_validator("runtime_placement")
    @classmethod
    def _group_places_its_members(cls, placement: str, info: ValidationInfo) -> str:
        if placement == "group" and info.data.get("runtime_membership") is False:
            raise ValueError(
                "`group` needs SLUICE_RUNTIME_MEMBERSHIP=true (only members own slots); set "
                "SLUICE_RUNTIME_PLACEMENT=console to run without membership"
            )
        return placement

    def resolved_checkpoint_root(self) -> Path:
        """``SLUICE_CHECKPOINT_ROOT``, else ``checkpoints`` under the data folder."""
        return self.checkpoint_root or self.var_dir / "checkpoints"


# -- what a runtime worker is handed ---------------------------------------------------------


@dataclass(frozen=True)
class RuntimeConfig:
    """Everything a runtime worker and its drivers need to know about their host.

    Made from :class:`RuntimeSettings` by :meth:`from_env`; tests build or ``replace`` it
    directly."""

    redis_url: str
    key_prefix: str
    spark_master: str
    var_dir: Path
    checkpoint_root: Path
    jars_dir: Path
    worker_id: str
    heartbeat_interval: float
    driver_stop_grace: float
    driver_memory: str
    python: str
    executor_cores: int = 1
    executor_memory: str = "1g"
    max_cores: int = 1
    driver_host: str | None = None
    driver_bind_address: str | None = None
    spark_master_ui_url: str | None = None
    functions_dir: Path = FUNCTIONS_JARS_DIR
    runtime_user: str | None = None
    """Started as root, the worker drops to this user (``SLUICE_RUNTIME_USER``)."""
    shared_driver_memory: str = "2g"
    """Memory of a shared driver (``SLUICE_SHARED_DRIVER_MEMORY``); ``driver_memory`` is a
    dedicated driver's."""
    channels_per_driver: int = 50
    """The most connectors one shared driver hosts (``SLUICE_CHANNELS_PER_DRIVER``)."""
    warm_drivers: int = 1
    """Shared drivers kept running even with no connector, ready for the next one
    (``SLUICE_WARM_DRIVERS``; 0 keeps none)."""
    spare_drivers: int = 1
    """Empty shared drivers kept ready beside the busy ones (``SLUICE_SPARE_DRIVERS``): a
    crashed driver's neighbours are placed in one at once."""
    driver_heap_limit_percent: int = 85
    """Heap in use after garbage collection (percent of the heap) past which a driver's
    memory watch stops the connector whose task allocated the most
    (``SLUICE_DRIVER_HEAP_LIMIT_PERCENT``)."""
    driver_rss_limit_mb: int = 0
    """A driver's resident memory past which its memory watch does the same
    (``SLUICE_DRIVER_RSS_LIMIT_MB``; 0: twice the driver's heap plus 1024 MiB)."""
    driver_idle_seconds: float = 60.0
    """How long a shared driver beyond the warm ones lives without a connector
    (``SLUICE_DRIVER_IDLE_SECONDS``)."""
    driver_session_timeout: float = 30.0
    """A driver silent this long (no heartbeat) is killed and its connectors FAILED
    (``SLUICE_DRIVER_SESSION_TIMEOUT``)."""
    driver_start_timeout: float = 180.0
    """How long a new driver may take to send its first heartbeat."""
    stage_counts: bool = True
    """Whether queries count events per stage (``SLUICE_STAGE_COUNTS``)."""
    idle_poll_ms: int = 500
    """How long a query with nothing to read waits before asking its source again
    (``SLUICE_IDLE_POLL_MS``, Spark's ``spark.sql.streaming.pollingDelay``)."""
    spark_log_level: str = "WARN"
    """Spark's own log level inside drivers (``SLUICE_SPARK_LOG_LEVEL``)."""
    status_interval: float = 10.0
    """The longest a hosted connector's status goes unwritten (``SLUICE_STATUS_INTERVAL``);
    carried by every status as its ``report_interval``."""
    worker_cores: int = os.cpu_count() or 1
    """Cores this runtime worker's real-time queries may hold, one per source partition each
    (``SLUICE_WORKER_CORES``; default: the host's)."""
    topic_replication_factor: int = 1
    """Replication factor of the Kafka topics the runtime creates
    (``SLUICE_TOPIC_REPLICATION_FACTOR``)."""
    topic_min_insync_replicas: int = 1
    """``min.insync.replicas`` of the Kafka topics the runtime creates
    (``SLUICE_TOPIC_MIN_INSYNC_REPLICAS``)."""

    @classmethod
    def from_env(cls) -> RuntimeConfig:
        """The config of this host, from :class:`RuntimeSettings` (``SettingsError`` names
        any variable that is invalid)."""
        settings = RuntimeSettings.load()
        return cls(
            redis_url=settings.redis_url,
            key_prefix=settings.redis_prefix,
            spark_master=settings.spark_master,
            var_dir=settings.var_dir,
            checkpoint_root=settings.resolved_checkpoint_root(),
            jars_dir=settings.spark_jars_dir,
            worker_id=settings.worker_id or socket.gethostname(),
            heartbeat_interval=settings.worker_heartbeat_interval,
            driver_stop_grace=settings.driver_stop_grace,
            driver_memory=settings.driver_memory,
            python=settings.python or sys.executable,
            executor_cores=settings.executor_cores,
            executor_memory=settings.executor_memory,
            max_cores=settings.max_cores or settings.executor_cores,
            driver_host=settings.driver_host,
            driver_bind_address=settings.driver_bind_address,
            spark_master_ui_url=settings.spark_master_ui_url,
            functions_dir=settings.spark_functions_dir,
            runtime_user=settings.runtime_user,
            shared_driver_memory=settings.shared_driver_memory,
            channels_per_driver=settings.channels_per_driver,
            warm_drivers=settings.warm_drivers,
            spare_drivers=(
                settings.spare_drivers
                if settings.spare_drivers is not None
                else int(not settings.spark_master.startswith("spark://"))
            ),
            driver_heap_limit_percent=settings.driver_heap_limit_percent,
            driver_rss_limit_mb=settings.driver_rss_limit_mb,
            driver_idle_seconds=settings.driver_idle_seconds,
            driver_session_timeout=settings.driver_session_timeout,
            driver_start_timeout=settings.driver_start_timeout,
            status_interval=settings.status_interval,
            stage_counts=settings.stage_counts,
            idle_poll_ms=settings.idle_poll_ms,
            spark_log_level=settings.spark_log_level,
            worker_cores=settings.worker_cores or os.cpu_count() or 1,
            topic_replication_factor=settings.topic_replication_factor,
            topic_min_insync_replicas=settings.topic_min_insync_replicas,
        )

    @property
    def standalone(self) -> bool:
        """True when drivers run their executors on a Spark standalone master."""
        return self.spark_master.startswith("spark://")

    def master_addresses(self) -> list[tuple[str, int]]:
        """The ``(host, port)`` of each master in ``spark://h1:p1,h2:p2`` (standby masters
        included); empty unless :attr:`standalone`."""
        if not self.standalone:
            return []
        addresses = []
        for part in self.spark_master.removeprefix("spark://").split(","):
            host, _, port = part.strip().rpartition(":")
            if host and port.isdigit():
                addresses.append((host.strip("[]"), int(port)))
        return addresses

    def master_ui_urls(self) -> list[str]:
        """Where the master's status page (``/json/``) is asked: ``SLUICE_SPARK_MASTER_UI_URL``
        (comma-separated for standby masters), else port 8080 of each master host."""
        if self.spark_master_ui_url:
            return [url.strip().rstrip("/") for url in self.spark_master_ui_url.split(",")]
        return [f"http://{host}:8080" for host, _ in self.master_addresses()]

    def resolved_driver_host(self) -> str:
        """The address executors use to reach a driver on this host.

        ``SLUICE_DRIVER_HOST`` when set; under ``local[*]`` 127.0.0.1; on a standalone master
        the local address of the route to the master (what the master's side of the network
        sees), found without sending anything.
        """
        if self.driver_host:
            return self.driver_host
        for host, port in self.master_addresses():
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                    probe.connect((host, port))  # UDP connect: picks a route, sends nothing
                    # An AF_INET socket's name is (host, port); typeshed gives it as Any.
                    return cast(str, probe.getsockname()[0])
            except OSError:
                continue
        return "127.0.0.1"

    def spark_jars(self) -> list[Path]:
        """The jars every driver is started with (never resolved at start): Spark's Kafka
        connector and Sluice's own Spark functions (:mod:`pipelines.native`)."""
        return sorted(self.jars_dir.glob("*.jar")) + sorted(self.functions_dir.glob("*.jar"))
