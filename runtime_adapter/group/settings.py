"""What the runtime's group needs to know: where Kafka is, the topics, slots and timings."""

from __future__ import annotations

from dataclasses import dataclass

from runtime_adapter.config import RuntimeSettings


@dataclass(frozen=True)
class GroupConfig:
    """The runtime group's settings (``SLUICE_RUNTIME_*`` and ``SLUICE_KAFKA_BOOTSTRAP``).

    Made from :class:`~runtime_adapter.config.RuntimeSettings` by :meth:`from_settings`;
    tests build or ``replace`` it directly.
    """

    bootstrap: str
    group_id: str = "sluice-runtime"
    config_topic: str = "sluice.runtime.config"
    status_topic: str = "sluice.runtime.status"
    slots: int = 64
    replication_factor: int | None = None
    min_insync_replicas: int | None = None
    session_timeout: float = 10.0
    heartbeat_interval: float = 1.0
    fence_margin: float = 3.0
    coordinator_ride_out: float = 10.0
    """How much later than the coordinator's last answer a member may fence while the cluster
    shows the group with no live coordinator (:mod:`runtime_adapter.group.fence`)."""
    max_poll_interval: float = 300.0
    """How long a member's poll loop may be busy (a revoke callback stopping channels)
    before librdkafka leaves the group on its behalf (``max.poll.interval.ms``)."""
    stats_interval: float = 0.5
    """How often librdkafka reports the coordinator connection (the self-fence's input)."""
    placement: str = "console"
    """``group``: a channel runs where its slot is owned (the group places); ``console``: the
    console assigns workers and the group only keeps members alive and fenced."""
    status_feed: bool = True
    """With ``group`` placement: the console follows the status topic
    (``SLUICE_RUNTIME_STATUS_FEED``)."""

    def __post_init__(self) -> None:
        if self.fence_margin >= self.session_timeout - self.heartbeat_interval:
            raise ValueError(
                f"the fence margin ({self.fence_margin} s) must be less than the session "
                f"timeout ({self.session_timeout} s) minus the heartbeat interval "
                f"({self.heartbeat_interval} s)"
            )

    @property
    def fence_after(self) -> float:
        """Seconds without an answer from the coordinator after which a member fences itself."""
        return self.session_timeout - self.fence_margin

    @classmethod
    def from_settings(cls, settings: RuntimeSettings) -> GroupConfig:
        return cls(
            bootstrap=settings.kafka_bootstrap,
            group_id=settings.runtime_group_id,
            config_topic=settings.runtime_config_topic,
            status_topic=settings.runtime_status_topic,
            slots=settings.runtime_slots,
            replication_factor=settings.topic_replication_factor,
            min_insync_replicas=settings.topic_min_insync_replicas,
            session_timeout=settings.runtime_session_timeout,
            heartbeat_interval=settings.runtime_heartbeat_interval,
            fence_margin=settings.runtime_fence_margin,
            coordinator_ride_out=settings.runtime_coordinator_ride_out,
            placement=settings.runtime_placement,
            status_feed=settings.runtime_status_feed,
        )

    @property
    def places(self) -> bool:
        """True when the group, not the console, decides where channels run."""
        return self.placement == "group"
