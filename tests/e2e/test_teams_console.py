"""Teams in the console (issue 33) in real headless Chromium (frontend/e2e/teams.e2e.mjs)
against the stack: a user in two teams (editor in both) sees their channels with each one's
team, never a third team's, filters by team, meets another team's channel as not found, and is
asked a new channel's team in the builder. Screenshots: test-artifacts/teams/."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO_ROOT
from tests.support.stack import Stack, manage

pytestmark = pytest.mark.integration

SCRIPT = REPO_ROOT / "frontend" / "e2e" / "teams.e2e.mjs"
SPEC = {
    "source": {"type": "generator", "config": {"rate": 1}},
    "transforms": [],
    "sink": {"type": "preview", "config": {}},
}
MINE = {"teams-pay-orders": "teams-pay", "teams-ads-clicks": "teams-ads"}
HIDDEN, HIDDEN_TEAM = "teams-hidden-audit", "teams-hidden"
USER, PASSWORD = "teams-e2e-user", "teams-e2e-Pass-123"


@pytest.mark.timeout(300)
def test_a_member_of_two_teams_sees_and_builds_in_those_teams(
    stack: Stack, browser_tools: dict[str, str], artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "teams"
    shots.mkdir(parents=True, exist_ok=True)
    env = {**stack.env, "SLUICE_USER_PASSWORD": PASSWORD}
    for team in (*MINE.values(), HIDDEN_TEAM):  # made by giving the admin a role there
        manage(env, "sluice_role", "admin", "viewer", "--team", team, "--create-team")
    for team in MINE.values():
        manage(env, "sluice_role", USER, "viewer", "editor", "--team", team, "--create")
    http = stack.session()  # the admin: a site admin creates in any team
    for name, team in (*MINE.items(), (HIDDEN, HIDDEN_TEAM)):
        body = {"name": name, "team": team, "spec": SPEC}
        created = http.post(f"{stack.api}/channels/", json=body, timeout=10)
        assert created.status_code == 201, created.text
    # A site admin's quotas on one team: the list's header shows its use against them.
    quotas = {"max_channels": 5, "max_running_channels": 2}
    set_quotas = http.patch(f"{stack.api}/teams/teams-pay/", json=quotas, timeout=10)
    assert set_quotas.status_code == 200, set_quotas.text

    result = subprocess.run(
        [browser_tools["node"], str(SCRIPT)],
        cwd=REPO_ROOT / "frontend",
        env={
            **os.environ,
            "SLUICE_URL": stack.base_url,
            "SLUICE_USER": USER,
            "SLUICE_PASSWORD": PASSWORD,
            "SHOTS": str(shots),
            "CHROMIUM": browser_tools["chromium"],
            "MINE": ",".join(f"{name}={team}" for name, team in MINE.items()),
            "HIDDEN": HIDDEN,
            "QUOTAS": "teams-pay: 1 of 5 channels · 0 of 2 running",
        },
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    (shots / "e2e-teams.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{stack.logs()}"
    assert "all checks passed" in result.stdout
    for shot in (
        "channels-two-teams",
        "channels-one-team",
        "channel-viewer-in-team",
        "builder-team",
    ):
        assert (shots / f"{shot}.png").stat().st_size > 5_000

    for name in (*MINE, HIDDEN):
        http.delete(f"{stack.api}/channels/{name}/", timeout=10)
