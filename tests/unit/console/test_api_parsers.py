"""JSON bodies the database could not store are a 400 with a reason, never a 500.

Found by the API fuzz test (test_api_fuzz.py) on PostgreSQL, which refuses NUL in ``jsonb``
and text; a lone surrogate cannot even be encoded to UTF-8.
"""

from __future__ import annotations

import pytest

from console.models import Channel

CHANNELS = "/api/v1/channels/"


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ('"orders\\u0000"', "spec.source.config.topics[0]"),
        ('"\\ud800"', "spec.source.config.topics[0]"),
    ],
)
def test_unstorable_strings_in_a_spec_are_refused_with_their_path(api, raw, where):
    body = (
        '{"name": "orders", "spec": {"source": {"type": "kafka", "config": '
        '{"bootstrap_servers": "localhost:9092", "topics": [' + raw + "]}}, "
        '"transforms": [], "sink": {"type": "preview", "config": {}}}}'
    )

    response = api.post(CHANNELS, body, content_type="application/json")

    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "NUL" in detail and f"(at {where})" in detail
    assert not Channel.objects.exists()


def test_an_unstorable_key_is_refused(api):
    response = api.post(
        CHANNELS, '{"name": "orders", "spec": {"a\\u0000": 1}}', content_type="application/json"
    )

    assert response.status_code == 400
    assert "(at spec)" in response.json()["detail"]


def test_ordinary_unicode_is_accepted(api, spec):
    description = "Größe 😀 — ok"

    response = api.post(
        CHANNELS, {"name": "orders", "description": description, "spec": spec}, format="json"
    )

    assert response.status_code == 201, response.content
    assert Channel.objects.get().description == description


@pytest.mark.parametrize(
    "path", ["/api/v1/plugins/source/kafka/validate", "/api/v1/plugins/filter/validate"]
)
@pytest.mark.parametrize("raw", ['{"config": {"topics": ["a\\u0000"]}}', '{"config": '])
def test_config_checks_answer_a_bad_body_in_their_own_shape(api, path, raw):
    response = api.post(path, raw, content_type="application/json")

    assert response.status_code == 400
    answer = response.json()
    assert answer["valid"] is False
    assert list(answer["errors"]) == ["body"]
    assert answer["errors"]["body"][0].startswith("JSON parse error")
