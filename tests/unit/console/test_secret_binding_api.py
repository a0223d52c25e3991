"""Issue 12, finding 4: a stored secret is bound to the address it authenticates to.

The attack: one user saves a channel whose sink holds a password; an editor reads the spec
back (the password shows as the marker), changes only the address to a host they control and
PUTs it back with the marker unchanged. Before the fix the stored password was kept and sent
to the editor's host on the next start. Now the update is refused (400, the field's path, a
clear message), until the secret is typed again; a change that keeps the address keeps it.
"""

from __future__ import annotations

import copy
import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console import errors, services
from console.crypto import decrypt_spec
from console.models import Channel, Revision
from console.permissions import EDITOR, OPERATOR, grant_role
from pipelines.spec.secrets import SECRET_MARKER

pytestmark = pytest.mark.django_db

CHANNEL = "/api/v1/channels/orders/"
SOURCE = {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topics": ["orders"]}}

#: name → (the sink a user saved, the secret's path in the spec, the secret, the attacker's
#: address as (field, value) in the sink's config, a cosmetic rewrite of the address)
CASES = {
    "jdbc": (
        {
            "type": "jdbc",
            "config": {
                "url": "postgresql://db.example.com:5432/events",
                "user": "app",
                "password": "JDBC-STORED-1",
            },
        },
        "sink.config.password",
        "JDBC-STORED-1",
        ("url", "postgresql://evil.example.net:5432/events"),
        ("url", "postgres://DB.Example.com/events"),
    ),
    "http": (
        {
            "type": "http",
            "config": {
                "url": "https://api.example.com/events",
                "auth": {"type": "basic", "username": "svc", "password": "HTTP-STORED-1"},
            },
        },
        "sink.config.auth.password",
        "HTTP-STORED-1",
        ("url", "https://evil.example.net/events"),
        ("url", "https://API.example.com:443/v2/events"),
    ),
    "kafka": (
        {
            "type": "kafka",
            "config": {
                "bootstrap_servers": "k1.example.com:9093,k2.example.com:9093",
                "topic": "out",
                "security": {
                    "protocol": "SASL_SSL",
                    "sasl_mechanism": "SCRAM-SHA-512",
                    "username": "svc",
                    "password": "KAFKA-STORED-1",
                },
            },
        },
        "sink.config.security.password",
        "KAFKA-STORED-1",
        ("bootstrap_servers", "evil.example.net:9093"),
        ("bootstrap_servers", "K2.example.com:9093, k1.example.com:9093"),
    ),
}


def client(django_user_model, name: str, *roles: str) -> APIClient:
    user = django_user_model.objects.create_user(name, password="s3cret-pass")
    for role in roles:
        grant_role(user, role)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


@pytest.fixture
def owner(django_user_model) -> APIClient:
    return client(django_user_model, "owner", EDITOR)


@pytest.fixture
def mallory(django_user_model) -> APIClient:
    """An editor who did not enter the secret and wants it."""
    return client(django_user_model, "mallory", EDITOR)


@pytest.fixture
def operator(django_user_model) -> APIClient:
    return client(django_user_model, "oscar", OPERATOR)


def save(owner: APIClient, sink: dict) -> None:
    body = {"name": "orders", "description": "", "spec": {"source": SOURCE, "sink": sink}}
    response = owner.post("/api/v1/channels/", body, format="json")
    assert response.status_code == 201, response.json()


def read_back(api: APIClient) -> dict:
    """The spec as the API shows it (secrets as the marker)."""
    return api.get(CHANNEL).json()["spec"]


def put(api: APIClient, spec: dict):
    return api.put(CHANNEL, {"name": "orders", "description": "", "spec": spec}, format="json")


def set_field(spec: dict, field: str, value) -> dict:
    spec = copy.deepcopy(spec)
    spec["sink"]["config"][field] = value
    return spec


def set_secret(spec: dict, path: str, value: str) -> dict:
    spec = copy.deepcopy(spec)
    *parents, name = path.split(".")
    node = spec
    for part in parents:
        node = node[part]
    assert node[name] == SECRET_MARKER  # the editor never saw the secret
    node[name] = value
    return spec


def stored_sink() -> dict:
    revision = Channel.objects.get(name="orders").latest_revision_obj()
    return decrypt_spec(revision.spec)["sink"]["config"]


@pytest.mark.parametrize("case", CASES)
def test_an_editor_cannot_send_a_stored_secret_to_another_host(
    case, owner, mallory, operator, runtime
):
    sink, path, secret, (field, evil), _ = CASES[case]
    save(owner, sink)

    response = put(mallory, set_field(read_back(mallory), field, evil))

    assert response.status_code == 400, response.json()
    (message,) = response.json()[f"spec.{path}"]
    assert message.startswith("re-enter the ")
    assert "the address it authenticates to changed" in message
    assert secret not in response.content.decode()
    assert Revision.objects.count() == 1  # nothing saved
    operator.post(f"{CHANNEL}start")
    (deployment,) = runtime.calls_named("deploy")
    assert evil not in json.dumps(deployment[0].spec)  # started with the owner's address


@pytest.mark.parametrize("case", CASES)
def test_the_same_put_with_the_secret_typed_again_is_saved(case, owner, mallory):
    sink, path, secret, (field, evil), _ = CASES[case]
    save(owner, sink)
    spec = set_secret(set_field(read_back(mallory), field, evil), path, "MALLORYS-OWN-1")

    response = put(mallory, spec)

    assert response.status_code == 200, response.json()
    assert "MALLORYS-OWN-1" not in response.content.decode()
    assert Revision.objects.count() == 2
    assert secret not in json.dumps(stored_sink())
    assert "MALLORYS-OWN-1" in json.dumps(stored_sink())


@pytest.mark.parametrize("case", CASES)
def test_a_cosmetic_change_of_the_address_keeps_the_secret(case, owner, mallory):
    sink, _, secret, _, (field, same_address) = CASES[case]
    save(owner, sink)

    response = put(mallory, set_field(read_back(mallory), field, same_address))

    assert response.status_code == 200, response.json()
    assert Revision.objects.count() == 2
    assert stored_sink()[field] != sink["config"][field]
    assert secret in json.dumps(stored_sink())


def test_the_exact_message_for_the_jdbc_attack(owner, mallory):
    sink, _, _, (field, evil), _ = CASES["jdbc"]
    save(owner, sink)

    response = put(mallory, set_field(read_back(mallory), field, evil))

    assert response.json() == {
        "spec.sink.config.password": [
            "re-enter the password: the address it authenticates to changed (url host)"
        ]
    }


def test_a_patch_that_leaves_the_secret_out_is_refused_too(owner, mallory):
    sink, _, _, (field, evil), _ = CASES["jdbc"]
    save(owner, sink)
    spec = set_field(read_back(mallory), field, evil)
    del spec["sink"]["config"]["password"]

    response = mallory.patch(CHANNEL, {"spec": spec}, format="json")

    assert response.status_code == 400
    (message,) = response.json()["spec.sink.config.password"]
    assert message.endswith("or send null to remove it")


def test_the_service_refuses_it_whoever_calls(owner):
    """The admin's change form and the builder's save both end in ``update_channel``."""
    sink, _, _, (field, evil), _ = CASES["jdbc"]
    save(owner, sink)
    channel = Channel.objects.get(name="orders")
    spec = {"source": SOURCE, "sink": set_field({"sink": sink}, field, evil)["sink"]}
    spec["sink"]["config"]["password"] = SECRET_MARKER

    with pytest.raises(errors.InvalidSpec) as raised:
        services.update_channel(channel, spec=spec)

    assert list(raised.value.errors) == ["sink.config.password"]


def test_the_admin_change_form_refuses_it(owner, client, django_user_model):
    sink, _, secret, (field, evil), _ = CASES["jdbc"]
    save(owner, sink)
    channel = Channel.objects.get(name="orders")
    client.force_login(django_user_model.objects.create_superuser("root", password="root-pw-1"))
    page = client.get(f"/admin/console/channel/{channel.pk}/change/")
    redacted = page.context["adminform"].form["spec"].initial
    redacted["sink"]["config"][field] = evil

    response = client.post(
        f"/admin/console/channel/{channel.pk}/change/",
        {
            "description": "",
            "spec": json.dumps(redacted),
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
            "revisions-MIN_NUM_FORMS": "0",
            "revisions-MAX_NUM_FORMS": "1000",
        },
    )

    assert response.status_code == 200  # the form again, with its error
    text = response.content.decode()
    assert "sink.config.password: re-enter the password" in text
    assert secret not in text
    assert Revision.objects.count() == 1
