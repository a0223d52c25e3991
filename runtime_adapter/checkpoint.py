"""Reading and moving a Structured Streaming checkpoint's source offsets.

A checkpoint keeps one file per micro-batch in ``offsets/<n>`` (what the batch reads up to)
and ``commits/<n>`` (written once the sink has the batch). An offsets file is::

    v1
    {"batchWatermarkMs":0,"batchTimestampMs":...,"conf":{...}}
    {"orders":{"0":42,"1":17}}

one line per source after the metadata (``-`` for a source without offsets); a Kafka
source's line maps topic → partition → the next offset to read.

Offsets are moved without deleting anything: :func:`append_batch` writes a synthetic,
already committed batch ``n+1`` (the latest batch's metadata, the new source offsets, a copy
of the latest commit). Spark resumes from the latest committed batch, so the next real batch
``n+2`` reads from the new offsets, and batch ids keep growing: a files sink, whose
``_spark_metadata`` log skips batch ids it already has, writes it like any other batch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

VERSION_LINE = "v1"
DEFAULT_COMMIT = 'v1\n{"nextBatchWatermarkMs":0}'

KafkaOffsets = dict[tuple[str, int], int]
"""``{(topic, partition): next offset to read}``."""


class CheckpointError(RuntimeError):
    """The checkpoint cannot be read or moved as asked."""


_KEY = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}(\.[0-9a-f]{1,32})?(\.run-[0-9a-f]{32})?")
"""A checkpoint key: a channel name, optionally followed by ``.`` and a hex suffix, then for a
bounded run's own checkpoint (a replay, a redrive) by ``.run-`` and the run's id in hex."""


def checkpoint_dir(root: Path, key: str) -> Path:
    """The folder of the checkpoint ``key`` names (a channel's checkpoint key, which is its
    name for channels created before keys were unique) under ``root``.

    Raises :class:`CheckpointError` for a key that is not a single folder name of that
    form, so no key can reach outside ``root``.
    """
    if not _KEY.fullmatch(key):
        raise CheckpointError(f"{key!r} is not a checkpoint key")
    return root / key


def remove_checkpoint(root: Path, key: str) -> bool:
    """Remove the checkpoint folder of ``key`` under ``root``; ``True`` when there was one.

    A symbolic link in its place is removed, never followed. Raises ``OSError`` when the
    folder cannot be removed (permissions, a file system that is not mounted read-write).
    """
    path = checkpoint_dir(root, key)
    if path.is_symlink() or path.is_file():
        path.unlink()
        return True
    if not path.exists():
        return False
    shutil.rmtree(path)
    return True


@dataclass(frozen=True)
class CommittedOffsets:
    """The source offsets of a checkpoint's latest committed batch."""

    batch_id: int
    kafka: KafkaOffsets | None
    """The Kafka source's offsets; ``None`` when the source is not Kafka."""
    raw: str
    """The source's offsets line as Spark wrote it."""


def _batch_ids(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(path.name) for path in directory.iterdir() if path.name.isdigit())


def _read_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != VERSION_LINE:
        raise CheckpointError(f"{path}: not a Spark {VERSION_LINE} log file")
    return lines


def parse_kafka_offsets(raw: str) -> KafkaOffsets | None:
    """``{(topic, partition): offset}`` of a Kafka source's offsets line; ``None`` for
    another source's (the files source's ``{"logOffset": n}``, the rate source's number)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        return None
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in data.items()
        for partition, offset in partitions.items()
    }


def kafka_offsets_json(offsets: KafkaOffsets) -> str:
    """A Kafka source's offsets line (Spark's own format), topics and partitions sorted."""
    data: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        data.setdefault(topic, {})[str(partition)] = offset
    return json.dumps(data, separators=(",", ":"))


def latest_committed(checkpoint: Path) -> CommittedOffsets | None:
    """The source offsets of the latest batch that is both planned and committed, or
    ``None`` when no batch was ever committed. Only the first source is read: a channel's
    query has exactly one."""
    committed = set(_batch_ids(checkpoint / "commits"))
    for batch_id in reversed(_batch_ids(checkpoint / "offsets")):
        if batch_id not in committed:
            continue
        lines = _read_lines(checkpoint / "offsets" / str(batch_id))
        raw = lines[2] if len(lines) > 2 else "-"
        kafka = parse_kafka_offsets(raw) if raw != "-" else None
        return CommittedOffsets(batch_id=batch_id, kafka=kafka, raw=raw)
    return None


def has_batches(checkpoint: Path) -> bool:
    """True when Spark planned at least one batch (the query would ignore its start options)."""
    return bool(_batch_ids(checkpoint / "offsets"))


UNFINISHED_START_FOLDERS = ("offsets", "commits", "state")
"""What Spark refuses to find non-empty when it starts a query with no batch planned."""


def discard_unfinished_start(checkpoint: Path) -> list[str]:
    """Remove what an interrupted first batch left in ``checkpoint``; return what was removed.

    Spark writes a log file under a temporary name and renames it when complete. A driver
    killed while writing ``offsets/0`` leaves that temporary file (and its ``.crc``) behind,
    and Spark 4 then refuses every later start: no batch is planned, yet the folder is not
    empty (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``). With no batch planned nothing
    was read or written, so those leftovers hold nothing: they go, and the query starts
    from its kept start position. A checkpoint with a planned batch is never touched.
    """
    if has_batches(checkpoint):
        return []
    removed = []
    for name in UNFINISHED_START_FOLDERS:
        folder = checkpoint / name
        if folder.is_symlink() or folder.is_file():
            folder.unlink()
        elif folder.is_dir():
            if not any(folder.iterdir()):
                continue
            shutil.rmtree(folder)
        else:
            continue
        removed.append(name)
    return removed


def write_atomically(path: Path, text: str) -> None:
    # The temporary name is not a number, so Spark never takes it for a batch file.
    temporary = path.with_name(f".{path.name}.sluice.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def next_batch_id(checkpoint: Path) -> int:
    """The id :func:`append_batch` gives its batch: the one after the latest planned batch."""
    planned = _batch_ids(checkpoint / "offsets")
    if not planned:
        raise CheckpointError(f"{checkpoint}: no batch to follow")
    return planned[-1] + 1


def uncommitted_batch_ids(checkpoint: Path) -> range:
    """The batch ids after the latest committed one, up to the one :func:`append_batch`
    writes: what a sink that logs every batch id may still be missing."""
    committed = _batch_ids(checkpoint / "commits")
    return range(committed[-1] + 1 if committed else 0, next_batch_id(checkpoint) + 1)


def append_batch(checkpoint: Path, offsets: KafkaOffsets) -> int:
    """Append a committed batch whose Kafka source resumes at ``offsets``; return its id.

    ``offsets`` is the whole new position (every partition the next batch should read
    from). The batch follows the latest planned one (:func:`next_batch_id`), so a planned but
    uncommitted batch is superseded, never re-run. Needs a checkpoint with at least one
    planned batch.
    """
    latest = next_batch_id(checkpoint) - 1
    lines = _read_lines(checkpoint / "offsets" / str(latest))
    if len(lines) < 2:
        raise CheckpointError(f"{checkpoint}/offsets/{latest}: no batch metadata")
    commits = _batch_ids(checkpoint / "commits")
    commit = (
        (checkpoint / "commits" / str(commits[-1])).read_text(encoding="utf-8")
        if commits
        else DEFAULT_COMMIT
    )
    batch_id = latest + 1
    (checkpoint / "commits").mkdir(exist_ok=True)
    write_atomically(
        checkpoint / "offsets" / str(batch_id),
        "\n".join([VERSION_LINE, lines[1], kafka_offsets_json(offsets)]),
    )
    # The commit goes last: a batch without a commit would be run, not skipped.
    write_atomically(checkpoint / "commits" / str(batch_id), commit)
    return batch_id
