"""A team's quotas, checked where channels are created and started.

A site admin sets them on the team (:class:`~console.models.Team`; empty: no limit):

* ``max_channels``: the channels the team holds. :func:`admit_new_channel` runs inside the
  create's transaction, before anything is saved.
* ``max_running_channels``: the channels whose target is RUNNING or PAUSED (a paused channel
  keeps its warm driver, so it holds its place). Only a channel that takes a place counts:
  starting a STOPPED one; a restart, a resume of a paused one, a redeploy or a start of a
  running one hold the place they had.
* ``max_realtime_cores``: the cores the team's real-time channels hold while RUNNING or
  PAUSED, one per source partition as the runtime's worker counts them
  (:meth:`runtime_adapter.host.worker.Worker.cores_for`). A channel's cores are counted from
  Kafka when its revision is deployed and kept on the channel (``Channel.realtime_cores``),
  so a check asks Kafka only about the channel it starts.

Every check locks the team's row (``SELECT … FOR UPDATE``) inside the caller's transaction,
so two requests at once (two creates, two starts) are decided one after the other and never
both take the last place. A refusal raises or answers :class:`~console.errors.QuotaExceeded`
(HTTP 429 naming the quota) and the request changes nothing. Driver cores and memory are
enforced by the runtime on each worker (:func:`console.services.team_policy.policy_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, Sum

from console.choices import HOSTED_TARGETS
from console.crypto import decrypt_spec
from console.errors import InvalidTransition, QuotaExceeded, runtime_errors
from console.models import Channel, Connector, Revision, Team
from console.services.bulk import update_rows
from console.services.ingest import with_ingest_fields

#: Every quota of a team, in the order the API shows them (the last two the runtime enforces).
QUOTAS = (
    "max_channels",
    "max_running_channels",
    "max_realtime_cores",
    "max_driver_cores",
    "max_driver_memory_mib",
)


def admit_new_channel(team_id: int, *, hosted: bool = False) -> Team:
    """Lock the team (inside the caller's transaction) and raise :class:`QuotaExceeded` when
    one more channel would take it past ``max_channels`` (and, ``hosted``: a channel created
    RUNNING or PAUSED, past ``max_running_channels``); returns the locked team. A new
    channel's real-time cores are checked when it is deployed (:class:`Allowance`)."""
    team = Team.objects.select_for_update().get(pk=team_id)
    channels = Channel.objects.filter(team_id=team_id)
    reached = channels_quota_reached(team)
    if reached is not None:
        raise reached
    if hosted and team.max_running_channels is not None:
        used = channels.filter(target_state__in=HOSTED_TARGETS).count()
        if used >= team.max_running_channels:
            raise QuotaExceeded(team.name, "max_running_channels", team.max_running_channels, used)
    return team


def channels_quota_reached(team: Team) -> QuotaExceeded | None:
    """The refusal of one more channel in ``team`` when it holds ``max_channels`` already
    (a form's early answer; :func:`admit_new_channel` decides under the team's lock)."""
    if team.max_channels is None:
        return None
    used = Channel.objects.filter(team_id=team.pk).count()
    if used >= team.max_channels:
        return QuotaExceeded(team.name, "max_channels", team.max_channels, used)
    return None


def is_real_time(spec: Mapping[str, Any]) -> bool:
    """Whether ``spec`` (a revision's, encrypted or not) runs in real-time mode."""
    return (spec.get("runtime") or {}).get("mode") == "real-time"


def count_realtime_cores(channel_name: str, spec: Mapping[str, Any]) -> int:
    """The cores a real-time channel running ``spec`` holds: one per partition its source
    reads now (Kafka asked, as the runtime's worker does before it places it).

    Raises :class:`~console.errors.RuntimeUnavailable` when Kafka cannot be reached and
    :class:`InvalidTransition` when the cores cannot be counted (a source that does not read
    Kafka, topics without partitions yet): the quota is never guessed."""
    from runtime_adapter.offsets import kafka_source, source_partitions

    source = kafka_source(decrypt_spec(with_ingest_fields(spec, channel_name)))
    if source is None:
        raise InvalidTransition(
            f"channel {channel_name!r} runs in real-time mode but its source does not read "
            "Kafka: its cores cannot be counted against the team's real-time cores quota"
        )
    with runtime_errors("count real-time cores"):
        partitions = source_partitions(source)
    if not partitions:
        raise InvalidTransition(
            f"channel {channel_name!r}: its source topics have no partition yet, so its "
            "real-time cores cannot be counted against the team's quota; start it once they exist"
        )
    return len(partitions)


@dataclass
class _TeamHold:
    team: Team
    running: int
    cores: dict[int, int] | None = None
    """Channel id → the real-time cores it holds (counted once, when the team has the quota)."""


@dataclass
class Allowance:
    """What the teams of the channels a deploy takes hold and may still take, their rows
    locked for the caller's transaction (:meth:`lock`); :meth:`admit` decides channel by
    channel, each admission counted for the next."""

    holds: dict[int, _TeamHold] = field(default_factory=dict)
    counted: list[Channel] = field(default_factory=list)
    """Channels whose ``realtime_cores`` changed, written by :meth:`save`."""

    @classmethod
    def lock(cls, team_ids: Iterable[int]) -> Allowance:
        """Lock the teams (in id order, so two deploys never wait on each other's) and count
        the channels each has running or paused."""
        ids = sorted(set(team_ids))
        teams = list(Team.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
        running = dict(
            Team.objects.filter(pk__in=ids)
            .annotate(n=Count("channels", filter=Q(channels__target_state__in=HOSTED_TARGETS)))
            .values_list("pk", "n")
        )
        return cls({team.pk: _TeamHold(team, running.get(team.pk, 0)) for team in teams})

    def admit(
        self, channel: Channel, revision: Revision, *, was_hosted: bool, new_revision: bool
    ) -> None:
        """Take ``channel``'s place (and cores) running ``revision``, or raise
        :class:`QuotaExceeded` (the allowance unchanged). ``was_hosted``: it already holds a
        place; ``new_revision``: it did not run ``revision`` before (its cores are counted
        again). May raise :class:`~console.errors.RuntimeUnavailable` or
        :class:`InvalidTransition` when real-time cores must be counted and cannot be."""
        hold = self.holds[channel.team_id]
        team = hold.team
        limit = team.max_running_channels
        if not was_hosted and limit is not None and hold.running >= limit:
            raise QuotaExceeded(team.name, "max_running_channels", limit, hold.running)
        cores = self._cores_of(hold, channel, revision, was_hosted, new_revision)
        if not was_hosted:
            hold.running += 1
        if cores is not None and hold.cores is not None:
            hold.cores[channel.pk] = cores
        if cores != channel.realtime_cores:
            channel.realtime_cores = cores
            self.counted.append(channel)

    def _cores_of(
        self,
        hold: _TeamHold,
        channel: Channel,
        revision: Revision,
        was_hosted: bool,
        new_revision: bool,
    ) -> int | None:
        """The cores ``channel`` is to hold (``None``: not real-time, or not counted because
        the team has no real-time quota), checked against the quota."""
        team = hold.team
        if not is_real_time(revision.spec):
            if hold.cores is not None:
                hold.cores.pop(channel.pk, None)
            return None
        if team.max_realtime_cores is None:
            return None  # counted when the team gets the quota (see _held_cores)
        if hold.cores is None:
            hold.cores = self._held_cores(team)
        if was_hosted and not new_revision and channel.pk in hold.cores:
            return hold.cores[channel.pk]  # it holds them already: a restart counts once
        needed = count_realtime_cores(channel.name, revision.spec)
        held = sum(cores for pk, cores in hold.cores.items() if pk != channel.pk)
        limit = team.max_realtime_cores
        if held + needed > limit:
            raise QuotaExceeded(team.name, "max_realtime_cores", limit, held, needed)
        return needed

    def _held_cores(self, team: Team) -> dict[int, int]:
        """The cores each of ``team``'s running or paused real-time channels holds; those
        deployed while the team had no quota are counted now (and kept)."""
        hosted = Channel.objects.filter(team=team, target_state__in=HOSTED_TARGETS)
        held = {
            pk: cores
            for pk, cores in hosted.values_list("pk", "realtime_cores")
            if cores is not None
        }
        uncounted = (
            Connector.objects.filter(channel__in=hosted, channel__realtime_cores__isnull=True)
            .select_related("channel", "revision")
            .only("channel__id", "channel__name", "channel__realtime_cores", "revision__spec")
        )
        for connector in uncounted:
            if connector.revision is None or not is_real_time(connector.revision.spec):
                continue
            channel = connector.channel
            cores = count_realtime_cores(channel.name, connector.revision.spec)
            channel.realtime_cores = held[channel.pk] = cores
            self.counted.append(channel)
        return held

    def save(self) -> None:
        """Write the real-time cores counted (one statement)."""
        update_rows(Channel, self.counted, ["realtime_cores"])


def set_quotas(team: Team, quotas: Mapping[str, int | None]) -> list[str]:
    """Set the quotas ``quotas`` names (``None``: no limit) and save them; returns the names
    of those that changed. A quota lowered below the team's use refuses nothing already held:
    it only refuses what would take more."""
    unknown = set(quotas) - set(QUOTAS)
    if unknown:
        raise ValueError(f"not quotas: {sorted(unknown)}")
    changed = [name for name, value in quotas.items() if getattr(team, name) != value]
    for name in changed:
        setattr(team, name, quotas[name])
    if changed:
        team.full_clean(validate_unique=False)
        team.save(update_fields=changed)
    return changed


def use_of(team: Team) -> dict[str, dict[str, int | None]]:
    """Each quota of ``team`` with what the team holds against it:
    ``{"max_channels": {"limit": 20, "used": 12}, …}`` (``limit`` ``None``: no limit;
    ``used`` ``None`` for the driver quotas, which each runtime worker enforces on its own).
    Real-time cores are those counted at their channels' deploys (a channel deployed while
    the team had no real-time quota is counted at the team's next start)."""
    channels = Channel.objects.filter(team=team)
    hosted = channels.filter(target_state__in=HOSTED_TARGETS)
    cores = hosted.aggregate(cores=Sum("realtime_cores"))["cores"] or 0
    return {
        "max_channels": {"limit": team.max_channels, "used": channels.count()},
        "max_running_channels": {"limit": team.max_running_channels, "used": hosted.count()},
        "max_realtime_cores": {"limit": team.max_realtime_cores, "used": cores},
        # Enforced and used per runtime worker (the runtime's, not the console's to count).
        "max_driver_cores": {"limit": team.max_driver_cores, "used": None},
        "max_driver_memory_mib": {"limit": team.max_driver_memory_mib, "used": None},
    }
