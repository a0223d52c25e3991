"""The only code that changes the control plane's state.

API views, admin actions, management commands and Celery tasks all call these
functions (Kafka Connect's ``Herder`` boundary); none of them writes models directly.
"""

from console.services.channels import (
    RestartPlan,
    channel_preview,
    create_channel,
    delete_channel,
    pause_channel,
    restart_channel,
    resume_channel,
    start_channel,
    stop_channel,
    update_channel,
)
from console.services.errors import (
    InvalidSpec,
    InvalidTransition,
    RuntimeUnavailable,
    ServiceError,
)
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
    "InvalidTransition",
    "NotAnHttpChannel",
    "ReconcileReport",
    "RestartPlan",
    "RuntimeUnavailable",
    "ServiceError",
    "actor_for",
    "channel_preview",
    "create_channel",
    "delete_channel",
    "ingest_events",
    "pause_channel",
    "reconcile",
    "restart_channel",
    "resume_channel",
    "start_channel",
    "stop_channel",
    "update_channel",
]
