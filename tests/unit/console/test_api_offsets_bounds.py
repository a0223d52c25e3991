"""Offsets past a partition's end (or in a partition the topic lacks) are refused with 400 and
the field path of each, before anything moves (the runtime answers the ends; with real Kafka:
tests/integration/test_offsets_bounds.py)."""

from __future__ import annotations

import pytest

from console.services.offsets import _FAR_FUTURE_MS
from runtime_adapter.base import SourceOffset
from tests.unit.console.test_api_offsets import ALTERED, CHANNELS, item, stopped

pytestmark = pytest.mark.django_db

ENDS = [SourceOffset("orders", 0, 100), SourceOffset("orders", 1, 7)]


@pytest.fixture
def ends(runtime):
    runtime.windows[(_FAR_FUTURE_MS, _FAR_FUTURE_MS)] = ([], ENDS)


def patch(api, *offsets):
    return api.patch(f"{CHANNELS}orders/offsets", {"offsets": list(offsets)}, format="json")


def test_an_offset_past_the_end_is_refused_with_its_field_path(api, spec, runtime, ends):
    stopped(api, spec, runtime)

    response = patch(api, item("orders", 0, 100), item("orders", 1, 8), item("orders", 5, 0))

    assert response.status_code == 400, response.content
    assert response.json() == {
        "offsets[1].offset.offset": [
            "Past the end of orders/1: its end offset is 7 (the next record written gets it); "
            "give 7 or less."
        ],
        "offsets[2].partition.partition": ["Topic 'orders' has no partition 5."],
    }
    assert runtime.calls_named("alter_offsets") == []


def test_offsets_up_to_the_end_are_accepted(api, spec, runtime, ends):
    stopped(api, spec, runtime)

    response = patch(api, item("orders", 0, 100), item("orders", 1, 0))

    assert response.status_code == 200, response.content
    assert response.json() == ALTERED
    assert len(runtime.calls_named("alter_offsets")) == 1
