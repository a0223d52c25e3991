"""The only code that changes the control plane's state.

API views, admin actions, management commands and Celery tasks all call these
functions (Kafka Connect's ``Herder`` boundary); none of them writes models directly.
"""

from console.services.channels import (
    channel_preview,
    create_channel,
    delete_channel,
    start_channel,
    stop_channel,
    update_channel,
)
from console.services.errors import InvalidSpec, RuntimeUnavailable, ServiceError
from console.services.ingest import (
    IngestBadRequest,
    IngestTooLarge,
    IngestUnavailable,
    NotAnHttpChannel,
    ingest_events,
)
from console.services.lifecycle import actor_for
from console.services.reconcile import ReconcileReport, reconcile

__all__ = [
    "IngestBadRequest",
    "IngestTooLarge",
    "IngestUnavailable",
    "InvalidSpec",
    "NotAnHttpChannel",
    "ReconcileReport",
    "RuntimeUnavailable",
    "ServiceError",
    "actor_for",
    "channel_preview",
    "create_channel",
    "delete_channel",
    "ingest_events",
    "reconcile",
    "start_channel",
    "stop_channel",
    "update_channel",
]
