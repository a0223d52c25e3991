"""The dead-letter list's filters and order, on dead letters as the reader returns them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from console.selectors.dead_letters import DeadLetterFilters, _newest_first
from runtime_adapter.dead_letters import DeadLetter

T0 = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)


def letter(n: int, **fields) -> DeadLetter:
    values = {
        "id": f"kafka:dl:{n % 2}:{n}",
        "time": T0 + timedelta(minutes=n),
        "stage": "sink",
        "error_class": "HttpError",
        "message": f"POST https://x.example/{n}: 503 Service Unavailable",
        "location": {"kind": "kafka", "topic": "dl", "partition": n % 2, "offset": n},
    }
    return DeadLetter(**{**values, **fields})


def test_each_filter_keeps_exactly_its_match():
    big = letter(1, rule="big", target="rules[0].sinks[1]")
    small = letter(2, rule="small", target="rules[1].sinks[0]")
    cast = letter(3, stage="transforms[0] (cast)", error_class="CastError", message="n/a")

    def kept(**filters):
        return [d.id for d in (big, small, cast) if DeadLetterFilters(**filters).matches(d)]

    assert kept() == [big.id, small.id, cast.id]
    assert kept(rule="big") == [big.id]
    assert kept(target="rules[1].sinks[0]") == [small.id]
    assert kept(error_class="CastError") == [cast.id]
    assert kept(stage="sink") == [big.id, small.id]
    assert kept(q="service UNAVAILABLE") == [big.id, small.id]
    assert kept(since=T0 + timedelta(minutes=2)) == [small.id, cast.id]  # inclusive
    assert kept(until=T0 + timedelta(minutes=2)) == [big.id]  # exclusive
    assert kept(rule="big", error_class="CastError") == []


def test_a_dead_letter_without_a_time_is_left_out_of_a_time_window_only():
    timeless = letter(4, time=None)

    assert DeadLetterFilters().matches(timeless)
    assert not DeadLetterFilters(since=T0).matches(timeless)
    assert not DeadLetterFilters(until=T0 + timedelta(days=1)).matches(timeless)


def test_newest_first_then_by_offset():
    same_time = [letter(n, time=T0) for n in (5, 8, 6)]
    older = letter(1, time=T0 - timedelta(minutes=1))
    letters = sorted([older, *same_time, letter(9)], key=_newest_first, reverse=True)

    assert [d.location["offset"] for d in letters] == [9, 8, 6, 5, 1]


def test_the_filters_name_themselves_for_the_audit_trail():
    filters = DeadLetterFilters(error_class="CastError", since=T0)

    assert filters.as_dict() == {"error_class": "CastError", "since": "2026-11-26T10:00:00+00:00"}
