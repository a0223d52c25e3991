"""Issue 12, findings 1 and 2 through the API: an editor's SQL expressions that would reach the
JVM, a file or the session are refused at save time with a field error naming the expression."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console.models import Channel, Revision
from console.permissions import EDITOR, grant_role
from tests.unit.pipelines.sql_corpus import ATTACKS, ISSUE_ATTACKS, LEGITIMATE

pytestmark = pytest.mark.django_db

VALIDATE = "/api/v1/plugins/transform/sql/validate"
CHANNELS = "/api/v1/channels/"


@pytest.fixture
def editor(django_user_model) -> APIClient:
    """mallory, who holds the editor role only, with her own token."""
    mallory = django_user_model.objects.create_user("mallory", password="s3cret-pass")
    grant_role(mallory, EDITOR)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=mallory).key}")
    return client


def sql_spec(spec: dict, *expressions: str) -> dict:
    spec["transforms"] = [{"type": "sql", "config": {"expressions": list(expressions)}}]
    return spec


@pytest.mark.parametrize(("expression", "message"), ATTACKS)
def test_validate_refuses_each_attack_on_its_field(editor, expression, message):
    response = editor.post(
        VALIDATE, {"config": {"expressions": ["subject", expression]}}, format="json"
    )

    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["valid"] is False
    assert list(body["errors"]) == ["config.expressions[1]"]
    assert any(message in text for text in body["errors"]["config.expressions[1]"]), body


@pytest.mark.parametrize(("expression", "message"), ISSUE_ATTACKS)
def test_a_channel_with_an_attack_is_not_created(editor, spec, expression, message):
    body = {"name": "attack", "description": "", "spec": sql_spec(spec, expression)}

    response = editor.post(CHANNELS, body, format="json")

    assert response.status_code == 400, response.json()
    errors = response.json()
    assert any(message in text for text in errors["spec.transforms[0].config.expressions[0]"])
    assert not Channel.objects.exists()


def test_an_attack_cannot_be_patched_into_a_saved_channel(editor, spec):
    legit = {"name": "orders", "spec": sql_spec(spec, "upper(source) AS source")}
    assert editor.post(CHANNELS, legit, format="json").status_code == 201
    attack = "transform(array(1), x -> java_method('java.lang.System','getenv','HOME')) AS e"

    response = editor.patch(
        f"{CHANNELS}orders/", {"spec": sql_spec(spec, "id", attack)}, format="json"
    )

    assert response.status_code == 400, response.json()
    assert response.json()["spec.transforms[0].config.expressions[1]"] == [
        "java_method is not an allowed function (see the SQL function allow-list)"
    ]
    assert Revision.objects.filter(channel__name="orders").count() == 1


def test_what_editors_write_still_validates(editor):
    # Each expression renamed c<n>: the corpus repeats a few names on purpose.
    expressions = [f"{text.rsplit(' AS ', 1)[0]} AS c{n}" for n, text in enumerate(LEGITIMATE)]

    response = editor.post(VALIDATE, {"config": {"expressions": expressions}}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["config"]["expressions"] == expressions
