"""What the runtime is told a channel's connector is: one builder for every path that sends it.

A start (one channel or a bulk start), turning schema discovery on or off, and the control
loop's re-send of what the runtime lost (:mod:`console.services.resend`) all describe a
connector with :func:`channel_deployment`, so a re-sent connector is exactly what its last
deploy sent.
"""

from __future__ import annotations

from console.models import Channel, Connector, Revision
from console.services.ingest import with_ingest_fields
from runtime_adapter import states as runtime_states
from runtime_adapter.base import Deployment


def channel_deployment(
    channel: Channel,
    connector: Connector,
    revision: Revision,
    *,
    target: str,
    worker_id: str | None,
    discovery: bool,
) -> Deployment:
    """The channel's connector running ``revision`` (its spec still encrypted: the driver
    decrypts it; an HTTP source's ingest fields filled in) with target ``target``, hosted
    by ``worker_id``, at the connector's generation, in the slot it was placed in and with the
    channel's checkpoint."""
    return Deployment(
        connector_id=connector.runtime_id,
        channel=channel.name,
        revision=revision.number,
        spec=with_ingest_fields(revision.spec, channel.name),
        target_state=runtime_states.TargetState(str(target)),
        worker_id=worker_id,
        generation=connector.generation,
        checkpoint=channel.checkpoint_key,
        discovery=discovery,
        slot=connector.slot,
    )
