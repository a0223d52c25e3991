"""Each team's reach (issue 33), checked again in the driver, on the real stack (gunicorn,
Celery, a runtime worker and its Spark driver, Kafka and Redis).

A team-B editor's channel reads and writes team B's topics; a site admin then narrows team B's
reach so those topics are outside it. The console would refuse that spec now, but it was saved
before: started, it reaches the driver with the team's new policy in its deployment, and the
driver refuses it (FAILED, the reason in the trace) without reading a record. Widened again,
the same channel starts and runs.
"""

from __future__ import annotations

import uuid

import pytest
import requests

from tests.integration.conftest import Stack, manage
from tests.integration.test_walking_skeleton import make_topic, wait_for_state

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_a_spec_outside_its_teams_tightened_reach_is_refused_in_the_driver(stack: Stack) -> None:
    suffix = uuid.uuid4().hex[:6]
    team, prefix = f"reach-{suffix}", f"team-b-{suffix}."
    source, sink = f"{prefix}in", f"{prefix}out"
    make_topic(stack.kafka, source, 1)
    editor_name = f"bea-{suffix}"
    manage(
        stack.env, "sluice_role", editor_name, "editor", "--team", team, "--create-team", "--create"
    )
    editor = requests.Session()
    editor.headers["Authorization"] = (
        f"Token {manage(stack.env, 'drf_create_token', editor_name).split()[2]}"
    )
    admin = stack.session()  # a site admin
    reach_url = f"{stack.api}/teams/{team}/reach/"
    set_reach = admin.put(reach_url, json={"topic_prefixes": [prefix]}, timeout=10)
    assert set_reach.status_code == 200, set_reach.text

    kafka = {"bootstrap_servers": stack.kafka}
    spec = {
        "source": {
            "type": "kafka",
            "config": {**kafka, "topics": [source], "starting_offsets": "earliest"},
        },
        "sink": {"type": "kafka", "config": {**kafka, "topic": sink}},
    }
    name = f"reach-{suffix}"
    created = editor.post(
        f"{stack.api}/channels/", json={"name": name, "team": team, "spec": spec}, timeout=10
    )
    assert created.status_code == 201, created.text
    stolen = {**spec, "sink": {"type": "kafka", "config": {**kafka, "topic": f"other-{suffix}"}}}
    refused = editor.patch(f"{stack.api}/channels/{name}/", json={"spec": stolen}, timeout=10)
    assert refused.status_code == 400 and "spec.sink.config.topic" in refused.json(), refused.text

    narrowed = admin.put(reach_url, json={"topic_prefixes": [f"elsewhere-{suffix}."]}, timeout=10)
    assert narrowed.status_code == 200, narrowed.text
    try:
        assert admin.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
        failed = wait_for_state(stack, name, "FAILED", 180)
        trace = failed["trace"] or ""
        assert "source.config.topics" in trace, trace[:1500]
        assert f"topic '{source}' is outside the team's reach: team {team} may reach only" in trace

        widened = admin.put(reach_url, json={"topic_prefixes": [prefix]}, timeout=10)
        assert widened.status_code == 200, widened.text
        assert admin.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
        wait_for_state(stack, name, "RUNNING", 180)
    finally:
        admin.post(f"{stack.api}/channels/{name}/stop", timeout=10)
        admin.delete(f"{stack.api}/channels/{name}/", timeout=10)
