"""A runtime worker's membership of the runtime's Kafka group, as its liveness and its fence.

The worker joins the group (:class:`~runtime_adapter.group.GroupMember`) and runs channels
only while it is a member: being a member is what keeps it alive to the console, and a
worker that cannot reach the group's coordinator stops every query it runs before its
session could expire on the broker (the self-fence, ``SLUICE_RUNTIME_SESSION_TIMEOUT``
minus ``SLUICE_RUNTIME_FENCE_MARGIN``). The console moves a worker's channels only once it
has left the group, so a channel never has two running owners, whatever happens to Redis.

Slots are not owned yet: channels are still placed by the console through the store, so
this listener acts on a lost membership alone (fenced, or lost by the client) and leaves
the slots' own comings and goings to the next step, when the worker runs the channels of
the slots it owns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from runtime_adapter.base import Deployment, RuntimeUnavailable
from runtime_adapter.group import GroupConfig, GroupMember, StopReason, ensure_runtime_topics

log = logging.getLogger("sluice.worker")


class SelfFence:
    """The worker's :class:`~runtime_adapter.group.SlotListener`: ``on_fence(why)`` stops
    every query of the worker, by force, when its membership is lost."""

    def __init__(self, on_fence: Callable[[str], None]) -> None:
        self.on_fence = on_fence

    def slots_assigned(self, slots: frozenset[int]) -> None:
        pass  # channels are placed by the console for now

    def slot_ready(self, slot: int, deployments: Mapping[str, Deployment]) -> None:
        pass

    def desired_changed(self, slot: int, connector_id: str, deployment: Deployment | None) -> None:
        pass

    def stop_slots(self, slots: frozenset[int], reason: StopReason) -> None:
        if reason in (StopReason.FENCED, StopReason.LOST):
            self.on_fence(f"its membership of the runtime group was {reason.value}")


JOIN_RETRY = 5.0
"""Seconds between two tries to join while Kafka does not answer."""


class Membership:
    """Joins the group in a thread of its own (again and again while Kafka does not answer:
    the worker's loop, and its heartbeats, never wait for it) and says whether the worker is
    a member now (:meth:`live`)."""

    def __init__(self, config: GroupConfig, worker_id: str, on_fence: Callable[[str], None]):
        self.config = config
        self.worker_id = worker_id
        self.listener = SelfFence(on_fence)
        self.member: GroupMember | None = None
        self.stopping = threading.Event()
        self.joiner: threading.Thread | None = None

    def join(self) -> None:
        """Start joining, once (the runtime's topics created if need be, then the member)."""
        if self.joiner is None:
            self.joiner = threading.Thread(target=self._join, name="group-join", daemon=True)
            self.joiner.start()

    def _join(self) -> None:
        while not self.stopping.is_set():
            try:
                ensure_runtime_topics(self.config)
            except RuntimeUnavailable as exc:
                log.warning("cannot join the runtime group yet (trying again): %s", exc)
                self.stopping.wait(JOIN_RETRY)
                continue
            member = GroupMember(self.config, self.worker_id, listener=self.listener)
            member.start()
            self.member = member
            log.info("joining runtime group %s", self.config.group_id)
            return

    def live(self) -> bool:
        """A member now: joined, assigned its share of the slots, not fenced."""
        member = self.member
        return member is not None and not member.fenced and bool(member.owned())

    def close(self) -> None:
        self.stopping.set()
        if self.joiner is not None:
            self.joiner.join(timeout=15)
        if self.member is not None:
            self.member.close()
            self.member = None
