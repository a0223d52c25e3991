"""The quarantine's memory (runtime_adapter/host/crashes.py): counts per connector and
revision, kept in a file so that a restarted worker remembers them."""

from __future__ import annotations

from pathlib import Path

from runtime_adapter.host.crashes import QUARANTINE_AFTER, CrashBook


def test_counts_survive_a_restart_and_a_new_revision_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "host" / "w1" / "crashes.json"
    book = CrashBook(path)
    assert book.crashed("c1", 3) == 1 and not book.quarantined("c1", 3)
    assert book.crashed("c1", 3) == QUARANTINE_AFTER and book.quarantined("c1", 3)
    again = CrashBook(path)  # the worker restarted
    assert again.quarantined("c1", 3)
    assert not again.quarantined("c1", 4)  # the editor changed the channel
    assert not CrashBook(path).quarantined("c1", 3), "forgotten for good"
    assert again.crashed("c1", 4) == 1


def test_an_unreadable_file_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "crashes.json"
    path.write_text("{not json")
    book = CrashBook(path)
    assert book.entries == {} and book.crashed("c1", 1) == 1
    path.write_text('{"c1": "not a list", "c2": [1, 2, 0]}')
    assert CrashBook(path).entries == {"c2": [1.0, 2.0, 0.0]}
