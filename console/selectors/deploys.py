"""What deploying a channel's saved revision would do, said before it is done.

A channel runs one revision (its connector's) and may have a newer one saved: the channel page
and the builder show both, and one action, *deploy*, puts the saved revision to work from any
state (:func:`console.services.channels.deploy_channel`). Its plan says which revision runs,
which is saved, and what the deploy does:

* ``none``: the saved revision already runs (or is deployed, paused); nothing to do.
* ``start``: the channel is stopped or was never started: it starts with the saved revision,
  from its checkpoint when it has one.
* ``live``: a running bus whose new revision changes its rules alone, routed batch by batch:
  the running query takes the new rules from its next batch, with no restart
  (:func:`pipelines.spec.live.live_change`).
* ``restart``: anything else, FAILED included: the query stops and starts again with the
  saved revision, from its checkpoint (what was read and not yet written is read again;
  nothing is lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from console.choices import ConnectorState, TargetState
from console.crypto import decrypt_spec
from console.models import Channel, Connector, Revision
from pipelines.spec.diff import spec_changes
from pipelines.spec.live import live_revision
from pipelines.spec.secrets import redact, redact_against

MAX_CHANGED_PATHS = 20
"""Changed fields a plan names at most (the revisions' diff has them all)."""


@dataclass(frozen=True)
class DeployPlan:
    name: str
    running_revision: int | None
    """The revision the channel's connector runs (or last ran); None before a first start."""
    saved_revision: int
    target_state: str
    state: str
    effect: str
    """``none``, ``start``, ``live`` or ``restart`` (see the module docstring)."""
    summary: str
    """What the deploy does, in a sentence for the confirmation."""
    changed: list[str] = field(default_factory=list)
    """The fields that differ from the running revision to the saved one."""


def deploy_plan(channel: Channel) -> DeployPlan:
    """What :func:`~console.services.channels.deploy_channel` would do now."""
    saved = channel.latest_revision_obj()
    assert saved is not None  # every channel is created with its revision 1
    connector = Connector.objects.select_related("revision").filter(channel=channel).first()
    running = connector.revision if connector is not None else None
    state = connector.state if connector is not None else "STOPPED"  # never started
    changed = _changed(running, saved)
    effect, summary = _effect(channel, connector, running, saved)
    return DeployPlan(
        name=channel.name,
        running_revision=running.number if running is not None else None,
        saved_revision=saved.number,
        target_state=channel.target_state,
        state=state,
        effect=effect,
        summary=summary,
        changed=changed,
    )


def _effect(
    channel: Channel, connector: Connector | None, running: Revision | None, saved: Revision
) -> tuple[str, str]:
    number = saved.number
    if connector is None or channel.target_state == TargetState.STOPPED:
        checkpoint = "from its checkpoint" if connector is not None else "for the first time"
        return "start", f"Starts the channel with revision {number}, {checkpoint}."
    failed = connector.state == ConnectorState.FAILED
    if running is not None and running.number == number and not failed:
        return "none", f"Revision {number} is already deployed: nothing to do."
    paused = channel.target_state == TargetState.PAUSED
    if failed:
        return "restart", (
            f"The failed connector starts again with revision {number}, from its checkpoint "
            "(the events it had read and not yet written are read again; none is lost)."
        )
    if running is not None and not paused and _live(running, saved):
        return "live", (
            f"The running bus takes the rules of revision {number} from its next batch, "
            "without a restart."
        )
    then = "stays paused with it" if paused else "starts again with it"
    return "restart", (
        f"The query stops and {then}: revision {number}, from its checkpoint (the events "
        "it had read and not yet written are read again; none is lost)."
    )


def _live(running: Revision, saved: Revision) -> bool:
    return live_revision(decrypt_spec(running.spec), decrypt_spec(saved.spec))


def _changed(running: Revision | None, saved: Revision) -> list[str]:
    if running is None or running.number == saved.number:
        return []
    before = decrypt_spec(running.spec)
    changes = spec_changes(redact(before), redact_against(decrypt_spec(saved.spec), before))
    return [change["path"] for change in changes][:MAX_CHANGED_PATHS]
