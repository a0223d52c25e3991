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
        "/api/v1/channels/{name}/status",
        "/api/v1/channels/{name}/lifecycle/",
        "/api/v1/workers/",
        "/api/v1/workers/{worker_id}/",
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
    task = schema["components"]["schemas"]["Task"]["properties"]
    assert {"id", "state", "worker_id", "topic", "partition", "offset"} <= task.keys()
