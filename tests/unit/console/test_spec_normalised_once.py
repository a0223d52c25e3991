"""A channel's spec is validated and normalised once per write, wherever the write comes from.

The API's serializer and the admin's form validate the spec to report its errors by field;
the service they call used to validate it a second time. Now they hand the service the
normalised spec (:class:`console.selectors.specs.NormalizedSpec`), which takes it as it is
unless a revision was saved in between: then the spec as sent is merged again with the
latest secrets. The count is of :func:`pipelines.spec.validate_spec`, the one expensive step.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from console import services
from console.crypto import decrypt_spec
from console.models import Channel, Revision
from console.selectors import specs
from console.selectors.specs import SECRET_MARKER, NormalizedSpec, normalize_spec

pytestmark = pytest.mark.django_db

JDBC_SPEC = {
    "source": {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topics": ["orders"]}},
    "sink": {
        "type": "jdbc",
        "config": {
            "url": "postgresql://db.example.com:5432/events",
            "user": "app",
            "password": "FIRST-PASSWORD",
        },
    },
}


@pytest.fixture
def validations(monkeypatch) -> list[Any]:
    """Every spec :func:`validate_spec` is asked to validate, in order."""
    seen: list[Any] = []
    real: Callable[[Any], Any] = specs.validate_spec

    def counting(data: Any) -> Any:
        seen.append(data)
        return real(data)

    monkeypatch.setattr(specs, "validate_spec", counting)
    return seen


def stored_spec(name: str) -> dict[str, Any]:
    revision = Channel.objects.get(name=name).latest_revision_obj()
    assert revision is not None
    return decrypt_spec(revision.spec)


def test_a_channel_created_through_the_api_is_validated_once(api, spec, validations):
    response = api.post("/api/v1/channels/", {"name": "orders", "spec": spec}, format="json")

    assert response.status_code == 201, response.json()
    assert len(validations) == 1
    assert Revision.objects.get(channel__name="orders").number == 1


def test_a_spec_changed_through_the_api_is_validated_once(api, spec, validations):
    services.create_channel(name="orders", spec=spec)
    validations.clear()
    spec["sink"]["config"]["topic"] = "bigger-orders"

    response = api.patch("/api/v1/channels/orders/", {"spec": spec}, format="json")

    assert response.status_code == 200, response.json()
    assert len(validations) == 1
    assert stored_spec("orders")["sink"]["config"]["topic"] == "bigger-orders"


def test_an_invalid_spec_is_refused_after_one_validation(api, spec, validations):
    spec["sink"]["config"].pop("topic")

    response = api.post("/api/v1/channels/", {"name": "orders", "spec": spec}, format="json")

    assert response.status_code == 400
    assert response.json() == {"spec.sink.config.topic": ["field required"]}
    assert len(validations) == 1
    assert not Channel.objects.exists()


def test_a_spec_changed_in_the_admin_is_validated_once(
    client, django_user_model, spec, validations
):
    channel = services.create_channel(name="orders", spec=spec)
    validations.clear()
    client.force_login(django_user_model.objects.create_superuser("root", password="root-pw-1"))
    spec["sink"]["config"]["topic"] = "bigger-orders"

    response = client.post(
        f"/admin/console/channel/{channel.pk}/change/",
        {
            "description": "",
            "spec": json.dumps(spec),
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
            "revisions-MIN_NUM_FORMS": "0",
            "revisions-MAX_NUM_FORMS": "1000",
        },
    )

    assert response.status_code == 302  # saved, back to the list
    assert len(validations) == 1
    assert stored_spec("orders")["sink"]["config"]["topic"] == "bigger-orders"


def test_a_service_called_directly_validates_the_spec_itself(spec, validations):
    services.create_channel(name="orders", spec=spec)

    assert len(validations) == 1


def test_a_spec_normalised_before_another_revision_is_merged_again_with_the_latest_secret(
    validations,
):
    """The serializer validated against revision 1; revision 2 (a new password) was saved
    before the service took its lock: the secret kept by its marker is revision 2's."""
    channel = services.create_channel(name="orders", spec=JDBC_SPEC)
    sent = copy.deepcopy(JDBC_SPEC)
    sent["sink"]["config"]["password"] = SECRET_MARKER
    sent["sink"]["config"]["table"] = "orders"
    stale = normalize_spec(sent, stored=channel.latest_revision_obj().spec)
    assert stale["sink"]["config"]["password"] == "FIRST-PASSWORD"
    retyped = copy.deepcopy(JDBC_SPEC)
    retyped["sink"]["config"]["password"] = "SECOND-PASSWORD"
    services.update_channel(channel, spec=retyped)
    validations.clear()

    services.update_channel(channel, spec=stale)

    assert len(validations) == 1  # normalised again, from the spec as it was sent
    saved = stored_spec("orders")["sink"]["config"]
    assert (saved["table"], saved["password"]) == ("orders", "SECOND-PASSWORD")
    assert Revision.objects.filter(channel=channel).count() == 3


def test_a_normalised_spec_is_the_normal_form_with_what_it_was_made_from(spec):
    normalized = normalize_spec(spec)

    assert isinstance(normalized, NormalizedSpec)
    assert normalized == normalize_spec(copy.deepcopy(spec))  # an ordinary dict's equality
    assert normalized.sent is spec
    assert normalized.stored is None
    assert normalize_spec(normalized) is normalized
