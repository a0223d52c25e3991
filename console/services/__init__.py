"""The only code that changes the control plane's state.

API views, admin actions, management commands and Celery tasks all call these
functions (Kafka Connect's ``Herder`` boundary); none of them writes models directly.
What only reads is in :mod:`console.selectors`; the errors both raise are in
:mod:`console.errors`. HTTP ingestion is :mod:`.ingest`.
"""

from console.services.channels import (
    create_channel,
    delete_channel,
    deploy_channel,
    pause_channel,
    restart_channel,
    resume_channel,
    start_channel,
    stop_channel,
    update_channel,
)
from console.services.ingest import (
    IngestBadRequest,
    IngestTooLarge,
    IngestUnavailable,
    NotAnHttpChannel,
    ingest_events,
)
from console.services.lifecycle import actor_for
from console.services.offsets import (
    ChannelOffsets,
    InvalidOffsets,
    OffsetsNotSupported,
    alter_channel_offsets,
    channel_offsets,
    copy_channel_offsets,
    reset_channel_offsets,
)
from console.services.reconcile import ReconcileReport, note_runtime_unreadable, reconcile
from console.services.restarts import RestartPlan

__all__ = [
    "ChannelOffsets",
    "IngestBadRequest",
    "IngestTooLarge",
    "IngestUnavailable",
    "InvalidOffsets",
    "NotAnHttpChannel",
    "OffsetsNotSupported",
    "ReconcileReport",
    "RestartPlan",
    "actor_for",
    "alter_channel_offsets",
    "channel_offsets",
    "copy_channel_offsets",
    "create_channel",
    "delete_channel",
    "deploy_channel",
    "ingest_events",
    "note_runtime_unreadable",
    "pause_channel",
    "reconcile",
    "reset_channel_offsets",
    "restart_channel",
    "resume_channel",
    "start_channel",
    "stop_channel",
    "update_channel",
]
