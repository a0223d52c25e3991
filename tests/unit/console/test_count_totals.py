"""Counts since the channel was first started, across its drivers (count_totals.carry)."""

from __future__ import annotations

from console.services.count_totals import carry, resting


def stages(read: int, out: int, failed: int = 0, rate: float = 1.5) -> list[dict]:
    return [
        {"stage": "source", "index": None, "type": "kafka", "in": read, "out": read},
        {
            "stage": "sink",
            "index": None,
            "type": "kafka",
            "in": out,
            "out": out,
            "failed": failed,
            "in_per_second": rate,
        },
    ]


def rules(matched: int, delivered: int) -> list[dict]:
    return [
        {
            "rule": "every",
            "matched": matched,
            "delivered": delivered,
            "failed": 0,
            "matched_per_second": 2.0,
            "targets": [
                {"sink": "rules[0].sinks[0]", "type": "kafka", "delivered": delivered, "failed": 0}
            ],
        }
    ]


def test_one_drivers_reports_are_shown_as_they_are():
    base, shown, _ = carry({}, "d1/app1", stages(10, 8), [])
    base, shown, _ = carry(base, "d1/app1", stages(25, 20), [])
    assert [(s["in"], s["out"]) for s in shown] == [(25, 25), (20, 20)]
    assert shown[1]["in_per_second"] == 1.5  # rates are the driver's own


def test_a_new_driver_adds_to_what_the_earlier_ones_counted():
    base, _, _ = carry({}, "d1/app1", stages(238, 238), rules(238, 238))
    # The connector restarted elsewhere: its new driver counts from 0.
    base, shown, shown_rules = carry(base, "d2/app2", stages(62, 62), rules(62, 62))
    assert [s["in"] for s in shown] == [300, 300]
    assert (shown_rules[0]["matched"], shown_rules[0]["delivered"]) == (300, 300)
    assert shown_rules[0]["targets"][0]["delivered"] == 300
    assert shown_rules[0]["matched_per_second"] == 2.0
    # Its later reports go on from there, not carried twice.
    base, shown, shown_rules = carry(base, "d2/app2", stages(70, 70), rules(70, 70))
    assert shown[0]["in"] == 308 and shown_rules[0]["matched"] == 308


def test_the_same_driver_counting_again_from_0_is_carried_too():
    # Same driver id (a worker restarted and named its driver as before), counts went down.
    base, _, _ = carry({}, "d1/", stages(50, 40, failed=3), [])
    base, shown, _ = carry(base, "d1/", stages(5, 4), [])
    assert [(s["in"], s["out"], s.get("failed")) for s in shown] == [(55, 55, 0), (44, 44, 3)]


def test_a_stage_the_channel_no_longer_has_is_dropped():
    base, _, _ = carry({}, "d1/a", stages(50, 40), [])
    other = [{"stage": "source", "index": None, "type": "http", "in": 3, "out": 3}]
    base, shown, _ = carry(base, "d2/b", other, [])
    assert [(s["type"], s["in"]) for s in shown] == [("http", 3)]
    assert list(base["stages"]) == ["source:None:http"]


def test_reports_without_counts_are_fine():
    base, shown, shown_rules = carry(None, "d1/a", None, None)
    assert (shown, shown_rules) == ([], [])
    assert carry(base, "d1/a", [{"stage": "source", "in": "x"}], [])[1] == [
        {"stage": "source", "in": 0, "out": 0, "failed": 0}
    ]


def test_at_rest_the_totals_stay_and_the_rates_are_0():
    _, shown, shown_rules = carry({}, "d1/a", stages(10, 8), rules(4, 4))
    assert [s.get("in_per_second") for s in resting(shown)] == [None, 0.0]
    assert resting(shown)[1]["in"] == 8
    assert resting(shown_rules)[0]["matched_per_second"] == 0.0
    assert resting(None) == []


def test_counts_in_another_shape_pass_through_for_the_readers_to_judge():
    odd_rules = [{"matched": 1}, "not an object", {"rule": "a", "matched": 2, "targets": ["x"]}]
    _, shown, shown_rules = carry({}, "d/a", ["odd"], odd_rules)
    assert shown == ["odd"]
    assert shown_rules[:2] == [{"matched": 1}, "not an object"]
    assert shown_rules[2]["matched"] == 2 and shown_rules[2]["targets"] == []
