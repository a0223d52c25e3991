"""What the runtime is told a channel's connector is: one builder for every path that sends it.

A start (of one channel or of many), turning schema discovery on or off, and the control
loop's re-send of what the runtime lost (:mod:`console.services.resend`) all describe a
connector with :func:`deployment_for`, so a re-sent connector is exactly what its last
deploy sent, and no path can name a different worker than another would.
"""

from __future__ import annotations

from collections.abc import Container

from console.choices import WorkerState
from console.models import Channel, Connector, Revision
from console.services.ingest import with_ingest_fields
from console.services.team_policy import policy_of
from runtime_adapter import states as runtime_states
from runtime_adapter.base import Deployment


def deployment_for(
    channel: Channel,
    connector: Connector,
    revision: Revision,
    *,
    target: str,
    discovery: bool,
    live: Container[str] | None = None,
) -> Deployment:
    """The channel's connector running ``revision`` (its spec still encrypted: the driver
    decrypts it; an HTTP source's ingest fields filled in) with target ``target``, at the
    connector's generation, in the slot it was placed in and with the channel's checkpoint,
    hosted by the connector's worker when that worker is alive (:func:`hosting_worker`)."""
    return Deployment(
        connector_id=connector.runtime_id,
        channel=channel.name,
        revision=revision.number,
        spec=with_ingest_fields(revision.spec, channel.name),
        target_state=runtime_states.TargetState(str(target)),
        worker_id=hosting_worker(connector, live),
        generation=connector.generation,
        checkpoint=channel.checkpoint_key,
        discovery=discovery,
        slot=connector.slot,
        team=channel.team.name,
        policy=policy_of(channel.team),
    )


def hosting_worker(connector: Connector, live: Container[str] | None = None) -> str | None:
    """The worker a deployment names: the connector's, when it is alive, else none.

    A dead worker runs nothing: naming it would leave the connector assigned where it cannot
    run until the control loop notices, while none lets the control loop place it on a live
    worker at its next pass (its failover does the same for a connector whose worker dies
    later). ``live``: the ids of the live workers, when the caller knows them already (the
    control loop's pass); else the connector's worker row says (``Worker.state``).
    """
    if connector.worker_id is None:
        return None
    if live is not None:
        return connector.worker_id if connector.worker_id in live else None
    worker = connector.worker
    return worker.worker_id if worker is not None and worker.state == WorkerState.ALIVE else None
