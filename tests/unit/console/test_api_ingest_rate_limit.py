"""A channel's own HTTP ingestion rate limit, set through the API and the admin."""

from __future__ import annotations

import pytest

from console.models import Channel, LifecycleEvent

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


def test_create_with_a_limit_and_read_it_back(api, spec):
    response = api.post(
        CHANNELS, {"name": "orders", "spec": spec, "ingest_rate_limit": 50}, format="json"
    )

    assert response.status_code == 201, response.json()
    assert response.json()["ingest_rate_limit"] == 50
    assert Channel.objects.get(name="orders").ingest_rate_limit == 50


def test_left_out_it_is_the_site_default(api, spec):
    response = api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")

    assert response.json()["ingest_rate_limit"] is None


def test_patch_changes_it_records_why_and_null_goes_back_to_the_default(api, spec):
    api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")

    changed = api.patch(f"{CHANNELS}orders/", {"ingest_rate_limit": 200}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["ingest_rate_limit"] == 200
    reasons = list(LifecycleEvent.objects.values_list("reason", flat=True))
    assert "ingestion rate limit changed from the site default to 200 events/s" in reasons

    # Another PATCH without the key leaves it alone.
    api.patch(f"{CHANNELS}orders/", {"description": "x"}, format="json")
    assert Channel.objects.get(name="orders").ingest_rate_limit == 200

    back = api.patch(f"{CHANNELS}orders/", {"ingest_rate_limit": None}, format="json")
    assert back.json()["ingest_rate_limit"] is None
    assert Channel.objects.get(name="orders").ingest_rate_limit is None


@pytest.mark.parametrize("value", [0, -5, "fast"])
def test_a_bad_limit_is_a_400_at_its_field(api, spec, value):
    response = api.post(
        CHANNELS, {"name": "orders", "spec": spec, "ingest_rate_limit": value}, format="json"
    )

    assert response.status_code == 400
    assert "ingest_rate_limit" in response.json()
    assert not Channel.objects.filter(name="orders").exists()
