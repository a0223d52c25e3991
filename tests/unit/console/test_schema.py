from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(anon) -> dict:
    return anon.get("/api/schema/", {"format": "json"}).json()


def test_every_endpoint_is_described(schema):
    assert set(schema["paths"]) == {
        "/api/v1/channels/",
        "/api/v1/channels/{name}/",
        "/api/v1/channels/{name}/start",
        "/api/v1/channels/{name}/stop",
        "/api/v1/channels/{name}/pause",
        "/api/v1/channels/{name}/resume",
        "/api/v1/channels/{name}/restart",
        "/api/v1/channels/{name}/deploy",
        "/api/v1/channels/bulk",
        "/api/v1/channels/{name}/status",
        "/api/v1/channels/{name}/preview",
        "/api/v1/channels/{name}/tail",
        "/api/v1/channels/{name}/events",
        "/api/v1/channels/{name}/ingest-token",
        "/api/v1/channels/{name}/lifecycle/",
        "/api/v1/channels/{name}/revisions/",
        "/api/v1/channels/{name}/revisions/{number}/",
        "/api/v1/channels/{name}/revisions/{number}/diff",
        "/api/v1/channels/{name}/offsets",
        "/api/v1/channels/{name}/offsets/copy",
        "/api/v1/channels/{name}/offsets/mirrormaker2",
        "/api/v1/channels/{name}/replays/",
        "/api/v1/channels/{name}/replays/{id}/",
        "/api/v1/channels/{name}/replays/targets",
        "/api/v1/channels/{name}/dead-letters/",
        "/api/v1/channels/{name}/dead-letters/{letter_id}/",
        "/api/v1/channels/{name}/dead-letters/redrive",
        "/api/v1/audit/",
        "/api/v1/cluster/",
        "/api/v1/health/",
        "/api/v1/channels/{name}/history/",
        "/api/v1/channels/{name}/discovery",
        "/api/v1/workers/",
        "/api/v1/workers/{worker_id}/",
        "/api/v1/workers/{worker_id}/drain",
        "/api/v1/workers/{worker_id}/undrain",
        "/api/v1/plugins/",
        "/api/v1/plugins/{kind}/{type}/",
        "/api/v1/plugins/{kind}/{type}/validate",
        "/api/v1/plugins/{type}/validate",
        "/api/v1/event-patterns/test",
        "/api/v1/event-patterns/test-rules",
        "/api/v1/me/",
        "/api/v1/schemas/",
        "/api/v1/schemas/check",
        "/api/v1/schemas/{name}/",
        "/api/v1/schemas/{name}/versions",
        "/api/v1/schemas/{name}/diff",
        "/api/v1/schemas/{name}/shape",
        "/api/v1/teams/",
        "/api/v1/teams/{team}/",
        "/api/v1/teams/{team}/reach/",
        "/api/v1/teams/{team}/service-accounts/",
        "/api/v1/teams/{team}/service-accounts/{name}/",
    }


def test_responses_are_described(schema):
    paths = schema["paths"]
    start = paths["/api/v1/channels/{name}/start"]["post"]
    status = paths["/api/v1/channels/{name}/status"]["get"]
    create = paths["/api/v1/channels/"]["post"]
    lifecycle = paths["/api/v1/channels/{name}/lifecycle/"]["get"]

    assert set(start["responses"]) >= {"202", "404", "503"}
    assert "requestBody" not in start
    assert status["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ChannelStatus"
    }
    assert set(create["responses"]) >= {"201", "400"}
    assert "PaginatedLifecycleEventList" in str(lifecycle["responses"]["200"])
    subjects = paths["/api/v1/schemas/"]["get"]
    assert "PaginatedSubjectList" in str(subjects["responses"]["200"])
    assert set(paths["/api/v1/schemas/{name}/diff"]["get"]["responses"]) >= {"200", "404"}
    task = schema["components"]["schemas"]["Task"]["properties"]
    assert {"id", "state", "worker_id", "topic", "partition", "offset"} <= task.keys()


def test_lifecycle_actions_are_described(schema):
    paths = schema["paths"]
    for action in ("pause", "resume"):
        operation = paths[f"/api/v1/channels/{{name}}/{action}"]["post"]
        assert operation["operationId"] == f"channels_{action}"
        assert set(operation["responses"]) >= {"202", "404", "409", "503"}
        assert "requestBody" not in operation
    restart = paths["/api/v1/channels/{name}/restart"]["post"]
    assert {p["name"]: p["in"] for p in restart["parameters"] if p["in"] == "query"} == {
        "include_tasks": "query",
        "only_failed": "query",
    }
    assert set(restart["responses"]) >= {"202", "404", "409", "503"}
    assert "RestartAnswer" in str(restart["responses"]["202"])
    channel = schema["components"]["schemas"]["Channel"]["properties"]
    assert {"drift", "restart_policy", "target_state"} <= channel.keys()
    assert channel["drift"].get("readOnly") is True
    status = schema["components"]["schemas"]["ChannelStatus"]["properties"]
    assert {"latest_revision", "drift", "restart_attempts"} <= status.keys()


def test_plugin_and_pattern_endpoints_are_described(schema):
    paths = schema["paths"]
    listing = paths["/api/v1/plugins/"]["get"]
    validate = paths["/api/v1/plugins/{kind}/{type}/validate"]["post"]
    by_type = paths["/api/v1/plugins/{type}/validate"]["post"]
    test = paths["/api/v1/event-patterns/test"]["post"]

    assert "PaginatedPluginList" in str(listing["responses"]["200"])
    assert {p["name"] for p in listing["parameters"]} >= {"kind", "limit", "offset"}
    assert set(validate["responses"]) == {"200", "400", "404"}
    assert {p["name"]: p["in"] for p in by_type["parameters"]} == {
        "type": "path",
        "kind": "query",
        "invalid_status": "query",
        "team": "query",
    }
    assert "invalid_status" in {p["name"] for p in validate["parameters"]}
    assert validate["operationId"] == "plugins_validate"
    assert by_type["operationId"] == "plugins_validate_by_type"
    assert set(test["responses"]) == {"200", "400"}
    assert "EventPatternTest" in str(test["requestBody"])
    plugin = schema["components"]["schemas"]["Plugin"]["properties"]
    assert set(plugin) == {"type", "kind", "title", "description", "config_schema"}
    for operation in (listing, validate, by_type, test):
        assert {"tokenAuth": []} in operation["security"]
        assert {} not in operation["security"]  # no anonymous access


def test_bus_endpoints_and_examples_are_described(schema):
    paths = schema["paths"]
    rules = paths["/api/v1/event-patterns/test-rules"]["post"]
    diff = paths["/api/v1/channels/{name}/revisions/{number}/diff"]["get"]
    create = paths["/api/v1/channels/"]["post"]

    assert rules["operationId"] == "event_patterns_test_rules"
    assert set(rules["responses"]) == {"200", "400"}
    assert "RulesTest" in str(rules["requestBody"])
    assert diff["operationId"] == "channels_revisions_diff"
    assert set(diff["responses"]) == {"200", "400", "404", "503"}
    assert [p["name"] for p in diff["parameters"] if p["in"] == "query"] == ["against"]
    examples = create["requestBody"]["content"]["application/json"]["examples"]
    assert any("rules" in example["value"]["spec"] for example in examples.values())
    status = schema["components"]["schemas"]["ChannelStatus"]["properties"]
    assert "RuleCounts" in str(status["rules"])
    for operation in (rules, diff):
        assert {} not in operation["security"]


def test_the_events_endpoint_describes_its_content_types_and_answers(schema):
    events = schema["paths"]["/api/v1/channels/{name}/events"]["post"]

    assert {
        "application/cloudevents+json",
        "application/cloudevents-batch+json",
        "application/json",
    } <= set(events["requestBody"]["content"])
    assert set(events["responses"]) >= {"202", "207", "400", "404", "409", "413", "415", "503"}
