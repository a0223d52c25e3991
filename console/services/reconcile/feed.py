"""Following the runtime's status feed: which connectors a pass looks at (news, what is due,
a slice of the rolling resync), the workers' vouches, and where the feed is read next."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Mod

from console.choices import (
    HOSTED_TARGETS,
    ConnectorState,
    TargetState,
)
from console.models import (
    Connector,
    LoopCursor,
)
from console.selectors import reporting
from console.services.reconcile.state import (
    PassState,
    _FeedPass,
    _timestamp,
)
from console.services.resend import Resent, resend_lost
from runtime_adapter.base import (
    ConnectorStatus,
    StatusFeed,
    StatusNews,
    Vouch,
)

_FEED_CURSOR = "status-feed"

_FEED_BUDGET = 0.5
"""Seconds a pass may spend reading the status feed (what is left is read by the next)."""


def resync_slices() -> int:
    """Into how many slices (by connector id) the rolling resync cuts the connectors: one is
    looked at every pass, so every connector within ``SLUICE_RECONCILE_RESYNC_SECONDS``."""
    return max(
        1, round(settings.SLUICE_RECONCILE_RESYNC_SECONDS / settings.SLUICE_RECONCILE_INTERVAL)
    )


def _vouched(vouch: Vouch, age: float, at: datetime) -> dict[str, Any]:
    """The liveness fields of a connector its worker vouched for, last refreshed ``age``
    seconds before the vouch, read at ``at``: its report is dated ``age`` seconds and one
    reconcile interval (the longest a record waits for a pass) before ``at``."""
    seen_at = at - timedelta(seconds=age + settings.SLUICE_RECONCILE_INTERVAL)
    return {
        "status_seen_at": seen_at,
        "report_interval": vouch.report_interval,
        "status_deadline_at": reporting.deadline(
            ConnectorState.RUNNING, seen_at, vouch.report_interval
        ),
        "last_status_at": _timestamp(vouch.at - age) if vouch.at else None,
    }


class FeedFollowing(PassState):
    """Step 0: the runtime's status feed."""

    def follow_feed(
        self, feed: StatusFeed
    ) -> tuple[list[Connector], dict[str, ConnectorStatus], Resent]:
        """Read the status feed from the stored cursor and choose the connectors this pass
        looks at: those with news, those :meth:`due` (time, a worker's death, a wish not yet
        met) and one slice of all (a rolling resync: each connector once in
        :func:`resync_slices` passes); or every one (the first pass, and while a worker
        drains)."""
        stored = LoopCursor.objects.filter(name=_FEED_CURSOR).first()
        cursor = (
            {int(p): int(o) for p, o in stored.position.items()}
            if stored is not None and stored.position
            else None
        )
        batch = feed.read(cursor, budget=_FEED_BUDGET)
        news = self.news_where_placed(batch.news)
        vouches: dict[str, Vouch] = {}
        if batch.caught_up:  # (else an old vouch read on the way may not be the latest)
            for vouch in batch.vouches:
                vouches[vouch.worker_id] = vouch  # the latest of each worker
        for vouch in vouches.values():
            worker = self.worker_rows.get(vouch.worker_id)
            if worker is not None and vouch.capacity is not None:
                self.update_worker(worker, {"capacity": dict(vouch.capacity)})
        slices = resync_slices()
        next_slice = stored.resync_slice % slices if stored is not None else 0
        full = cursor is None or bool(self.still_draining)
        self.feed = _FeedPass(batch.cursor, news, vouches, full, next_slice, batch.caught_up)
        resent = resend_lost(self.runtime, self.every_connector, self.live, self.at)
        self.events.extend(resent.events)
        if full:
            connectors = self.every_connector()
        else:
            connectors = list(
                Connector.objects.select_related("channel", "revision")
                .annotate(resync_slice=Mod("id", slices))
                .filter(Q(runtime_id__in=list(news)) | Q(resync_slice=next_slice) | self.due())
                .order_by("runtime_id")
            )
        statuses = {cid: n.status for cid, n in news.items() if n.status is not None}
        return connectors, statuses, resent

    def news_where_placed(self, items: list[StatusNews]) -> dict[str, StatusNews]:
        """The latest news of each connector (in log order) from the slot it is in now: its
        home slot, or the one a move placed it in. A moved connector's last records and
        tombstone in the slot it left say nothing of it any more (and the feed's slots are
        read side by side: they may come after its news from where it runs)."""
        news: dict[str, StatusNews] = {}
        placed: dict[str, int] | None = None
        for item in items:
            if item.slot is not None:
                if placed is None:
                    placed = {
                        cid: slot
                        for cid, slot in Connector.objects.filter(slot__isnull=False).values_list(
                            "runtime_id", "slot"
                        )
                        if slot is not None
                    }
                cid = item.connector_id
                expected = placed.get(cid)
                if expected is None:
                    expected = self.runtime.home_slot(cid)
                if expected is not None and item.slot != expected:
                    continue
            news[item.connector_id] = item
        return news

    def due(self) -> Q:
        """The connectors a pass looks at without news of them: what time acts on (a report
        that ran out, or is believed again; a restart's backoff; a reset of its attempts),
        what waits on the control loop (a stop not settled, a placement), and those on a
        worker that is not alive (they are not hosted)."""
        hosted = sorted(HOSTED_TARGETS)
        refreshed = sorted(reporting.REFRESHED_STATES)
        return (
            Q(state=ConnectorState.FAILED, channel__target_state__in=hosted)
            | Q(state=ConnectorState.RUNNING, restart_attempts__gt=0)
            | Q(silence_recorded=False, status_deadline_at__lt=self.at, state__in=refreshed)
            | Q(silence_recorded=True)
            | Q(channel__target_state=TargetState.STOPPED, state__in=refreshed)
            | Q(channel__target_state__in=hosted, state=ConnectorState.UNASSIGNED)
            | (Q(channel__target_state__in=hosted) & ~Q(worker_id__in=sorted(self.live)))
            | Q(move__isnull=False)
        )

    def take_vouch(self, connector: Connector) -> None:
        """A worker vouched in this pass's part of the feed that the connector, which it runs,
        still reports (and no news of it came): its report is dated by this pass."""
        feed = self.feed
        if feed is None or connector.runtime_id in feed.news:
            return
        vouch = feed.vouches.get(connector.worker_id or "")
        if (
            vouch is None
            or connector.runtime_id not in vouch.connector_ids
            or connector.state not in reporting.REFRESHED_STATES
        ):
            return
        feed.taken.add(connector.runtime_id)
        age = vouch.ages[connector.runtime_id]
        self.update_connector(connector, _vouched(vouch, age, self.at))
        self.dated.add(connector.pk)

    def save_feed(self) -> None:
        """Date the reports of the connectors a worker vouched for that the pass did not look
        at (an UPDATE for each age in the vouch), and store where the feed is to be read
        next."""
        feed = self.feed
        if feed is None:
            return
        skip = feed.taken | set(feed.news)
        for worker_id, vouch in feed.vouches.items():
            by_age: dict[float, list[str]] = {}
            for cid, age in vouch.ages.items():
                if cid not in skip:
                    by_age.setdefault(age, []).append(cid)
            for age, ids in sorted(by_age.items()):  # (whole seconds: a few UPDATEs a worker)
                Connector.objects.filter(
                    worker_id=worker_id,
                    runtime_id__in=sorted(ids),
                    state__in=sorted(reporting.REFRESHED_STATES),
                    silence_recorded=False,
                ).update(**_vouched(vouch, age, self.at))
        LoopCursor.objects.update_or_create(
            name=_FEED_CURSOR,
            defaults={
                "position": {str(p): o for p, o in feed.cursor.items()},
                "written_at": self.at,
                "resync_slice": (feed.slice + 1) % resync_slices(),
            },
        )
