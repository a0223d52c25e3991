"""The offsets panel's MirrorMaker 2 wizard in real headless Chromium
(frontend/e2e/mirrormaker2.e2e.mjs) against the stack: MM2's offsets for an alias are in its
Connect offsets topic on the session's Kafka (written in MM2's exact form; the real MM2 run is
tests/integration/test_mirrormaker2.py); a STOPPED channel takes over through the wizard, then
hands back, and the offsets topic holds what the wizard showed."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from runtime_adapter.mirrormaker2 import read_mirror_offsets, write_mirror_offsets
from tests.e2e.conftest import NodeScript
from tests.integration.test_walking_skeleton import make_topic, produce
from tests.support.specs import kafka_passthrough
from tests.support.stack import Stack

pytestmark = pytest.mark.integration


def test_mirrormaker2_wizard_takes_over_and_hands_back(
    stack: Stack, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    alias = f"east{uuid.uuid4().hex[:4]}"
    topic, channel = f"mm2-wiz-{alias}", f"mm2-wizard-{alias}"
    offsets_topic = f"mm2-offsets.{alias}.internal"
    make_topic(stack.kafka, topic, 2)
    produce(stack.kafka, topic, [b'{"n": 1}'] * 20)
    last = {(topic, 0): 4, (topic, 1): 2}  # as MM2 leaves them: the last records it copied
    write_mirror_offsets(stack.kafka, offsets_topic, alias, last)
    spec = kafka_passthrough(stack.kafka, topic, f"{alias}.{topic}")
    created = stack.session().post(
        f"{stack.api}/channels/", json={"name": channel, "spec": spec}, timeout=10
    )
    assert created.status_code == 201, created.text

    node_script(
        "mirrormaker2.e2e.mjs",
        shots,
        CHANNEL=channel,
        ALIAS=alias,
        MM2_LAST=",".join(f"{p}:{o}" for (_, p), o in sorted(last.items())),
    )

    # The take-over set the channel's next offsets right after MM2's last copied records...
    offsets = stack.session().get(f"{stack.api}/channels/{channel}/offsets", timeout=10).json()
    assert [o["offset"]["offset"] for o in offsets["offsets"]] == [5, 3]
    # ...and the hand-back wrote them back in MM2's form (what a new MM2 resumes after).
    assert read_mirror_offsets(stack.kafka, offsets_topic, alias) == last
    for shot in ("review", "taken-over", "handed-back"):
        assert (shots / f"mm2-wizard-{shot}.png").stat().st_size > 5_000
    stack.session().delete(f"{stack.api}/channels/{channel}/", timeout=10)
