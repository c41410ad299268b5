"""``MemdbStore`` and memdb's lifecycle: which store calls count as reads of an item (memdb's
relevance), and ``db.maintain()`` erasing expired items as the store's sweeper does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.integrations.langgraph import MemdbStore

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def db(backend: str, tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    with memdb.open(tmp_path / "db", clock=clock) as database:
        yield database


def _reads(db: memdb.Database) -> int:
    db.flush()
    mem = db.owner("ana")
    return mem.peek(mem.fact("lg/prefs/theme", access=False).id).access_count


def test_reads_count_as_accesses_and_writes_do_not(db: memdb.Database) -> None:
    """memdb counts reading as an access (its relevance's frequency); a put looked up the value it
    replaced through ``Memory.fact`` and counted a read of it, carried into the new version, so an
    item written often ranked as one read often. ``refresh_ttl`` is about the expiry only."""
    store = MemdbStore(db)
    store.put(("ana", "prefs"), "theme", {"content": "Prefers dark mode"})
    store.put(("ana", "prefs"), "theme", {"content": "Prefers dark mode, high contrast"})
    assert _reads(db) == 0  # writes
    store.get(("ana", "prefs"), "theme")
    store.get(("ana", "prefs"), "theme", refresh_ttl=False)
    assert _reads(db) == 2  # reads, whatever refresh_ttl says
    assert [r.key for r in store.search(("ana",), query="dark")] == ["theme"]
    assert _reads(db) == 3  # a query reads what it returns (memdb's recall)
    store.search(("ana",))
    store.list_namespaces()
    assert _reads(db) == 3  # listings, as memdb's facts(), read none
    store.put(("ana", "prefs"), "theme", {"content": "Prefers light mode"})
    assert _reads(db) == 3  # the count stays with the item's new version; the put adds none
    store.delete(("ana", "prefs"), "theme")
