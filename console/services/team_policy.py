"""A team's policy as the runtime enforces it: what the team's channels may reach and the
size of the drivers they may hold, set by a site admin on the team (:class:`Team`).

The policy travels with every deployment (:attr:`runtime_adapter.base.Deployment.policy`),
so a driver checks it again before it runs a channel, not only the console at save.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from console.models import Team
from console.services.audit_trail import record_audit
from pipelines.spec.reach import parse_reach


def policy_of(team: Team) -> dict[str, Any] | None:
    """``{"reach": {...}, "drivers": {...}}`` of ``team``, with only what it sets; ``None``
    when it sets nothing (the site's defaults hold)."""
    policy: dict[str, Any] = {}
    if team.reach:
        policy["reach"] = dict(team.reach)
    drivers = {
        key: value
        for key, value in (
            ("cores", team.max_driver_cores),
            ("memory_mib", team.max_driver_memory_mib),
        )
        if value is not None
    }
    if drivers:
        policy["drivers"] = drivers
    return policy or None


def set_reach(team: Team, reach: Any, *, by: User | None = None) -> Team:
    """Replace ``team``'s reach (a site admin's call: the caller checked) with ``reach``, a JSON
    object of :class:`pipelines.spec.reach.Reach`'s keys (a key left out or ``null``: the
    site's default); audited (``team.reach.change``, from and to) when it changes.

    Raises :class:`pipelines.spec.reach.InvalidReach` (its ``errors`` keyed by the reach's
    field paths, ``http_sink``, ``topic_prefixes``) for a bad entry; nothing is saved.
    Running channels keep the reach they were deployed with until they start again; every
    save and start from now on is checked against the new one.
    """
    given = parse_reach(reach).given()
    with transaction.atomic():
        team = Team.objects.select_for_update().get(pk=team.pk)
        previous = dict(team.reach or {})
        if previous == given:
            return team
        team.reach = given
        team.save(update_fields=["reach"])
        record_audit(
            action="team.reach.change",
            user=by,
            object_type="team",
            object_id=team.name,
            changes={"reach": {"from": previous, "to": given}},
            team_id=team.pk,
        )
    return team
