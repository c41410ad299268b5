"""``Database.erase_owner`` against a reference: the database after an owner's erasure is the
database that owner never wrote to, node by node, but for the erasure's own record; and the
erasure reads nothing of what it deletes (it hashed every record for an audit record it then
deleted with the owner)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.memory import ids
from memdb.memory.layout import GLOBALS, OWNER_ERASURES

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)

T0 = dt.datetime(2026, 5, 1, 9, 0, tzinfo=dt.UTC)
NAME = "Zanzibella Quornstrom"

# The text index's chunk stamps, drawn at random per write: compared by key only.
_RANDOM = {("EPCV", ("other",)), ("EPLV", ("other",))}


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock(T0)


def _story(db: memdb.Database, clock: Clock, with_name: bool) -> None:
    """Two owners living side by side (typed records counted for patterns, a session closed into
    an episode, a tool call, a fact, approved lessons, reflection, archives in cold storage with
    the owner's own dictionary, an import); without ``with_name``, the other alone, the clock
    moving the same."""
    mem, other = db.owner(NAME), db.owner("other")
    for i in range(210):
        clock.advance(minutes=3)
        if with_name:
            mem.record("debug", f"job {i} failed on zorblax", outcome="failure", tags=["ops"], lesson="read the zorblax logs")
        if i % 30 == 0:
            other.record("debug", f"other job {i}", outcome="success", tags=["ops"], session="sess-o-1")
    for i in range(7):
        clock.advance(minutes=2)
        if with_name:
            mem.record_exchange("sess-zq-4417", f"question {i} about quibblefrost", "an answer")
        other.record_exchange("sess-o-2", f"other question {i}", "an answer")
    if with_name:
        call = mem.record_tool_call("sess-zq-4417", "search", {"q": "snorkelwidget"})
        mem.record_tool_result(call.id, {"rows": 3})
        mem.record("fact", "likes tea", key="drink")
        db.approve([mem.save_lesson("Always check the glimmerquartz logs first").id], by="reviewer")
    clock.advance(minutes=1)  # entry ids are database-wide: the same time would number them apart
    other.record("fact", "likes coffee", key="drink")
    db.approve([other.save_lesson("Always read the other logs first").id], by="reviewer")
    clock.advance(hours=2)
    if with_name:
        mem.close_session("sess-zq-4417", kind="debug", outcome="success")
    other.close_session("sess-o-2", kind="debug", outcome="success")
    clock.advance(days=2)
    db.maintain()
    db.reflect()
    clock.advance(days=60)
    db.maintain()  # archives most of them, the owner's under its own trained dictionary
    if with_name:
        mem.import_episodes([{"kind": "debug", "summary": "imported wumpus", "outcome": "success", "ts": clock.now}], source="old")
        assert db.globals["COLDDICT"].data((NAME,)) and db.globals["COLD"].data((NAME,))


def _nodes(db: memdb.Database) -> dict[tuple[str, tuple[Any, ...]], Any]:
    return {(name, subs): value for name in GLOBALS for subs, value in db.globals[name].items(())}


def test_an_erased_owner_leaves_the_database_it_never_wrote_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Key by key and value by value; ids made alike in both (a counter from a fixed start)."""
    monkeypatch.setattr(ids.secrets, "randbelow", lambda _n: 0)
    built = []
    for with_name in (True, False):
        ids._seqs.clear()  # each owner's ids count from the same start in both databases
        clock = Clock(T0)
        db = memdb.open(tmp_path / str(with_name), clock=clock)
        db.globals["KNM"].set(("salt",), bytes(16))  # the key of lessons' shingle hashes, else random per database
        _story(db, clock, with_name)
        built.append(db)
    erased, never = built
    try:
        held = sorted(str(subs[1]) for subs, _ in erased.globals["EPST"].items((NAME,)))  # every episode's header
        report = erased.erase_owner(NAME, reason="account deleted")
        got, want = _nodes(erased), _nodes(never)
        # the erasure's own: its record, the count of owner erasures, the key of its name's hash,
        # and the newest cold dictionary id (never given again: test_dictionary_ids_grow_across_an_owner_erasure)
        assert got.pop(("AUDITDB", (report.audit_id,)))["action"] == "erase_owner"
        assert got.pop(("META", OWNER_ERASURES)) == 1
        assert isinstance(got.pop(("LIFE", (0, "owner erasure key"))), bytes)
        assert got.pop(("COLDDICT", (0, "last"))) >= 1
        assert sorted(got, key=repr) == sorted(want, key=repr)
        assert {k: v for k, v in got.items() if k not in _RANDOM} == {k: v for k, v in want.items() if k not in _RANDOM}
        assert sorted(report.ids) == held and report.count == len(held) > 210 and len(report.entries) == 2
        assert erased.check().ok
    finally:
        for db in built:
            db.close()


def test_an_owner_whose_records_cannot_be_read_is_erased_all_the_same(tmp_path: Path, clock: Clock) -> None:
    """An erasure deletes what it does not need to read: an owner whose records, headers, cold
    records and audit log are damaged goes as any other, leaving one audit record, and the other
    owner stays. It read and hashed every record for the audit record of a request for
    everything, which it deleted with the owner, and read the owner's audit log for mentions of
    the owner as a reviewer of others; it failed on the first damaged value."""
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner(NAME)
        eps = [mem.record("debug", f"deploy {i} failed", outcome="failure", tags=["deploy"]) for i in range(4)]
        mem.archive(eps[0].id)
        kept = db.owner("other").record("debug", "deploy went fine", outcome="success", tags=["deploy"])
        with db.store.write() as w:  # every value of them unreadable
            for name in ("MEM", "EPST", "COLD", "AUDIT"):
                g = db.globals[name]
                for key in [g.key(subs) for subs, _ in g.items((NAME,))]:
                    w.put(key, b"\xc1")  # a byte msgpack never writes
        report = db.erase_owner(NAME, reason="account deleted")
        assert report.count == 4 and sorted(report.ids) == sorted(e.id for e in eps)
        assert db.owners() == ["other"] and [e.id for e in db.owner("other").episodes()] == [kept.id]
        assert [a["action"] for a in db.audit()] == ["erase_owner"] and db.check().ok
        assert [f"^{name}" for name in GLOBALS if db.globals[name].data((NAME,))] == []
