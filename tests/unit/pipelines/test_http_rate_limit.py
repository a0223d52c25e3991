"""The HTTP callers' rate limiter, on a clock moved by hand: the spacing it promises is
checked exactly, where a busy machine cannot blur it (the sink's test through Spark checks
only what load cannot cross: tests/unit/pipelines/test_http_sink.py)."""

from __future__ import annotations

import threading
from itertools import pairwise

from pipelines.http_client import RateLimiter
from tests.support.clock import ManualClock


class SleepingClock(ManualClock):
    """A sleep on the clock moves it forward by the time slept, at once."""

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds


def release_times(limiter: RateLimiter, clock: ManualClock, calls: int) -> list[float]:
    """The limiter's clock at each call's release, the calls made one after another."""
    times = []
    for _ in range(calls):
        limiter.wait()
        times.append(clock.now)
    return times


def test_consecutive_calls_are_spaced_one_interval_apart() -> None:
    clock = SleepingClock()
    limiter = RateLimiter(5, clock=clock, sleep=clock.sleep)

    times = release_times(limiter, clock, 10)

    assert times[0] == 1000.0  # the first call at once
    gaps = [later - earlier for earlier, later in pairwise(times)]
    assert all(abs(gap - 0.2) < 1e-9 for gap in gaps), gaps


def test_an_idle_limiter_saves_no_burst() -> None:
    """Calls after a long pause are spaced as before: the pause is not credit."""
    clock = SleepingClock()
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    limiter.wait()
    clock.now += 60.0

    times = release_times(limiter, clock, 3)

    assert times[0] == 1060.0
    assert all(abs(later - earlier - 0.1) < 1e-9 for earlier, later in pairwise(times))


def test_a_call_later_than_its_turn_waits_for_nothing() -> None:
    clock = SleepingClock()
    slept: list[float] = []
    limiter = RateLimiter(
        4, clock=clock, sleep=lambda seconds: (slept.append(seconds), clock.sleep(seconds))
    )
    limiter.wait()
    clock.now += 0.3  # later than the 0.25 s the next call had to wait

    limiter.wait()

    assert slept == []


def test_without_a_limit_no_call_waits() -> None:
    clock = SleepingClock()
    limiter = RateLimiter(None, clock=clock, sleep=clock.sleep)

    assert release_times(limiter, clock, 100) == [1000.0] * 100


def test_threads_sharing_a_limiter_get_distinct_turns() -> None:
    """Calls from many threads at one instant are given turns one interval apart, each its
    own: the lock hands out the schedule, whatever the threads' order."""
    clock = ManualClock()
    waits: list[float] = []
    lock = threading.Lock()

    def record(seconds: float) -> None:
        with lock:
            waits.append(seconds)

    limiter = RateLimiter(10, clock=clock, sleep=record)
    threads = [threading.Thread(target=limiter.wait) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # the clock stands still: one call goes at once, the others wait 0.1, 0.2, … 0.7 s
    assert sorted(round(wait, 9) for wait in waits) == [round(0.1 * n, 9) for n in range(1, 8)]
