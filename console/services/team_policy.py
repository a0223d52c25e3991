"""A team's policy as the runtime enforces it: what the team's channels may reach and the
size of the drivers they may hold, set by a site admin on the team (:class:`Team`).

The policy travels with every deployment (:attr:`runtime_adapter.base.Deployment.policy`),
so a driver checks it again before it runs a channel, not only the console at save.
"""

from __future__ import annotations

from typing import Any

from console.models import Team


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
