"""The runtime's group: membership, slot ownership and fencing on Kafka's own coordination.

Runtime workers are members of one Kafka consumer group on the runtime's compacted config
topic, whose partitions are the *slots*; a channel's connector belongs to the slot
:func:`slot_of` its id. A worker runs exactly the connectors of the slots the group
coordinator assigns it (:class:`GroupMember`, :class:`SlotListener`), stops them before it
lets go of a slot and when it cannot reach the coordinator (the self-fence), and writes their
statuses in transactions the coordinator fences by generation (:class:`StatusWriter`). The
console writes desired state (:class:`DesiredStateWriter`) and follows status
(:class:`StatusFeedReader`). See ``docs/runtime-group.md``.

How a runtime worker drives it (the worker is the :class:`SlotListener`)::

    config = GroupConfig.from_settings(RuntimeSettings.load())
    ensure_runtime_topics(config)
    writer = StatusWriter(config, worker_id)
    writer.open()                        # fences an older process of the same worker
    member = GroupMember(config, worker_id, listener=worker)
    member.start()                       # slots_assigned / slot_ready / desired_changed /
                                         # stop_slots arrive on the member's threads
    while running:                       # the worker's status loop
        try:
            writer.write(member.ownership(), statuses, skip_unowned=True)
        except (NotOwner, StatusRejected):
            pass                         # not an owner (any more): stop_slots follows
    member.close()                       # stop_slots(CLOSED), then leave the group
    writer.close()
"""

from runtime_adapter.group.desired import (
    DesiredChange,
    DesiredSlots,
    DesiredStateNotWritten,
    DesiredStateWriter,
    deployment_from_json,
    deployment_to_json,
)
from runtime_adapter.group.fence import CoordinatorContact, GroupMetadata, parse_group_metadata
from runtime_adapter.group.member import (
    GroupMember,
    MemberEvent,
    NotOwner,
    Ownership,
    SlotListener,
    StopReason,
    client_id_of,
)
from runtime_adapter.group.settings import GroupConfig
from runtime_adapter.group.slots import murmur2, slot_of, slots_of
from runtime_adapter.group.status import (
    StatusFeedReader,
    StatusRecord,
    StatusRejected,
    StatusView,
    StatusWriter,
)
from runtime_adapter.group.topics import (
    RuntimeTopicMismatch,
    ensure_runtime_topics,
    verify_runtime_topic,
    warn_of_slow_broker_failover,
)

__all__ = [
    "CoordinatorContact",
    "DesiredChange",
    "DesiredSlots",
    "DesiredStateNotWritten",
    "DesiredStateWriter",
    "GroupConfig",
    "GroupMember",
    "GroupMetadata",
    "MemberEvent",
    "NotOwner",
    "Ownership",
    "RuntimeTopicMismatch",
    "SlotListener",
    "StatusFeedReader",
    "StatusRecord",
    "StatusRejected",
    "StatusView",
    "StatusWriter",
    "StopReason",
    "client_id_of",
    "deployment_from_json",
    "deployment_to_json",
    "ensure_runtime_topics",
    "murmur2",
    "parse_group_metadata",
    "slot_of",
    "slots_of",
    "verify_runtime_topic",
    "warn_of_slow_broker_failover",
]
