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


def test_maintain_erases_expired_store_items(db: memdb.Database, clock: Clock) -> None:
    """Expired items were erased only when met or by the sweeper thread: a database maintained
    by ``db.maintain()`` on a schedule, with no sweeper started, kept them (and their text) for
    good. maintain sweeps as the sweeper does: expired items, and earlier values past their expiry."""
    store = MemdbStore(db)  # no sweeper
    store.put(("ana", "scratch"), "otp", {"content": "code tangerine"}, ttl=10)
    store.put(("bob", "scratch"), "otp", {"content": "code plum"}, ttl=10)
    store.put(("ana", "prefs"), "theme", {"content": "Prefers wombat mode"}, ttl=1)
    store.put(("ana", "prefs"), "theme", {"content": "Prefers dark mode"})  # its first value expires as a version
    store.put(("ana", "prefs"), "font", {"content": "Prefers serif"})
    report = db.maintain()
    assert report.expired == 0 and len(db.owner("ana").facts()) == 3
    clock.advance(minutes=11)
    report = db.maintain()
    assert report.expired == 3 and "3 expired" in str(report)  # two items, one earlier value
    ana = db.owner("ana")
    assert sorted(f.key or "" for f in ana.facts()) == ["lg/prefs/font", "lg/prefs/theme"] and db.owner("bob").facts() == []
    assert not ana.recall(text="tangerine wombat", include_superseded=True).found
    assert [a["reason"] for a in ana.audit() if a["action"] == "delete"] == ["langgraph store: ttl expired"]
    assert db.maintain().expired == 0 and db.check().ok


def test_maintain_sweeps_at_its_own_time_once_per_database(db: memdb.Database, clock: Clock) -> None:
    """``maintain(now=...)`` runs every rule at ``now``, expiry too; a store built per request (one
    per user, the docs' advice) adds no sweep of its own: one sweep covers every owner's items."""
    for owner in ("ana", "bob", "cleo"):
        MemdbStore(db, owner=owner).put(("scratch",), "otp", {"content": "code tangerine"}, ttl=10)
    assert db.maintain(now=NOW + dt.timedelta(minutes=5)).expired == 0
    assert db.maintain(now=NOW + dt.timedelta(minutes=11)).expired == 3
    assert all(db.owner(o).facts() == [] for o in ("ana", "bob", "cleo"))
    assert len(db.maintain_hooks) == 1
