"""Channels as the API lists them, and what hangs under a channel: its revisions, its
lifecycle events and whether it has an ingestion token."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, QuerySet, Value, When

from console.choices import ConnectorState
from console.crypto import decrypt_spec
from console.models import Channel, LifecycleEvent, Revision
from pipelines.spec.diff import Change, spec_changes
from pipelines.spec.secrets import redact, redact_against


def channels() -> QuerySet[Channel]:
    """Every channel with its latest revision's number and spec (``with_summary``), by name."""
    return Channel.objects.with_summary()


def channels_with_status() -> QuerySet[Channel]:
    """:func:`channels` with their connectors and tasks, FAILED channels first, then by name:
    an operations view in a fixed number of queries whatever the number of channels."""
    failed_first = Case(
        When(connector__state=ConnectorState.FAILED, then=Value(0)), default=Value(1)
    )
    return channels().prefetch_related("connector__tasks").order_by(failed_first, "name")


def channel_revisions(channel: Channel) -> QuerySet[Revision]:
    """The revisions of ``channel``, unordered."""
    return Revision.objects.filter(channel=channel).select_related("created_by")


def revision_changes(revision: Revision, against: Revision | None) -> list[Change]:
    """What changed from ``against`` (``None``: an empty spec) to ``revision``, field by field
    (:func:`pipelines.spec.diff.spec_changes`: a bus's rules by name). No change carries a
    secret: each reads as the marker, or as the changed marker when ``revision`` holds a
    value ``against`` does not (secrets are compared decrypted, as their encrypted forms
    differ at every save)."""
    before = decrypt_spec(against.spec) if against is not None else {}
    after = decrypt_spec(revision.spec)
    return spec_changes(redact(before), redact_against(after, before))


def lifecycle_events(channel: Channel) -> QuerySet[LifecycleEvent]:
    """The lifecycle events of ``channel``, newest first."""
    return LifecycleEvent.objects.filter(channel=channel).order_by("-created_at", "-id")


def ingest_token_state(channel: Channel) -> dict[str, Any]:
    """``{exists, prefix}`` of the channel's ingestion token; never the token itself."""
    exists = bool(channel.ingest_token_hash)
    return {"exists": exists, "prefix": channel.ingest_token_prefix if exists else None}
