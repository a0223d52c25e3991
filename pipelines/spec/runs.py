"""A bounded run's bounds and tags (replays, redrives): plain data, no Spark.

The console records and follows runs with it; :mod:`pipelines.runs` reads and tags a run's
events with it in the driver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RUN_ID_EXTENSION = "sluicereplay"
RUN_KIND_EXTENSION = "sluicerun"
RUN_MARKERS = (RUN_ID_EXTENSION, RUN_KIND_EXTENSION)
"""The two marks of every event a run writes: the run's id and its kind (``replay`` or
``redrive``). A CloudEvents format carries them as extension attributes; a sink writing the
data alone (Kafka ``json`` and the schema formats, HTTP ``data``) as headers of these names
(:mod:`pipelines.sinks.kafka`, :mod:`pipelines.sinks.http`)."""
RUN_KINDS = ("replay", "redrive")
HEADER_ORIGIN_TOPIC = "sluice-origin-topic"
HEADER_ORIGIN_PARTITION = "sluice-origin-partition"
HEADER_ORIGIN_OFFSET = "sluice-origin-offset"
HEADER_ORIGIN_TIMESTAMP = "sluice-origin-timestamp"


@dataclass(frozen=True)
class RunBounds:
    """What a bounded run reads and how its events are tagged.

    ``start_offsets`` and ``end_offsets`` map ``topic → partition (text) → offset``: the
    first offset read and the first one not read. Partitions whose start is not before their
    end are not read at all.
    """

    run_id: str
    kind: str
    start_offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    end_offsets: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in RUN_KINDS:
            raise ValueError(f"run kind must be one of {', '.join(RUN_KINDS)}: {self.kind!r}")

    @property
    def redrive(self) -> bool:
        return self.kind == "redrive"

    def partitions(self) -> list[tuple[str, int, int, int]]:
        """``(topic, partition, start, end)`` of every partition with something to read."""
        found = []
        for topic, starts in sorted(self.start_offsets.items()):
            for partition, start in sorted(starts.items(), key=lambda item: int(item[0])):
                end = self.end_offsets.get(topic, {}).get(partition)
                if end is not None and int(end) > int(start):
                    found.append((topic, int(partition), int(start), int(end)))
        return found

    def topics(self) -> list[str]:
        return sorted({topic for topic, *_ in self.partitions()})

    def expected(self) -> int:
        """The offsets the run covers (its events, on a topic without gaps)."""
        return sum(end - start for _, _, start, end in self.partitions())

    def reached(self, positions: Mapping[tuple[str | None, int], int]) -> bool:
        """Whether ``positions`` (the next offset to read per ``(topic, partition)``, as a
        query's progress reports them) are at or past every partition's end: the run has
        read its whole window."""
        return all(
            positions.get((topic, partition), start) >= end
            for topic, partition, start, end in self.partitions()
        )

    def starting_offsets_json(self) -> str:
        """Spark's ``startingOffsets``: every partition of the read topics named (those with
        nothing to read start at their end, so the filter keeps none of them)."""
        offsets: dict[str, dict[str, int]] = {}
        for topic in self.topics():
            ends = self.end_offsets.get(topic, {})
            starts = self.start_offsets.get(topic, {})
            for partition in sorted(set(starts) | set(ends), key=int):
                first = starts.get(partition, ends.get(partition, 0))
                offsets.setdefault(topic, {})[str(int(partition))] = int(first)
        return json.dumps(offsets, separators=(",", ":"), sort_keys=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "start_offsets": self.start_offsets,
            "end_offsets": self.end_offsets,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunBounds:
        def offsets(value: Any) -> dict[str, dict[str, int]]:
            return {
                str(topic): {str(p): int(o) for p, o in dict(parts).items()}
                for topic, parts in dict(value or {}).items()
            }

        return cls(
            run_id=str(data["run_id"]),
            kind=str(data["kind"]),
            start_offsets=offsets(data.get("start_offsets")),
            end_offsets=offsets(data.get("end_offsets")),
        )


def run_progress(bounds: RunBounds, positions: dict[tuple[str, int], int]) -> tuple[int, int]:
    """``(offsets done, offsets in total)`` given each partition's next offset to read
    (``positions``; a partition not in it has read nothing)."""
    done = total = 0
    for topic, partition, start, end in bounds.partitions():
        total += end - start
        position = positions.get((topic, partition), start)
        done += max(0, min(position, end) - start)
    return done, total
