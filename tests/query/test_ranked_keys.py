"""A ranked match's keys (its id, the id's subscript, its header's and its record's keys) are
remembered by its index tail (``OwnerQueries._keys_of``, ``_record_keys``): a match ranked again
costs a lookup, and the answer is the one made without them, however few are kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from query_times import NOW, at

import memdb
from memdb.query import engine

pytestmark = pytest.mark.usefixtures("backend")  # on LMDB and on PostgreSQL (tests/conftest.py)


def answer(result: memdb.RecallResult) -> list[tuple[str, float, str]]:
    return [(m.id, m.score, m.episode.summary) for m in result]


def filled(db: memdb.Database) -> memdb.Memory:
    mem = db.owner("ana")
    for i in range(40):  # over several days: record keys have a parent per day
        mem.record("exchange", f"deploy {i} of the billing service" + " rollback" * (i % 3), ts=at(1 + i % 9))
    return mem


def test_a_match_ranked_again_takes_its_kept_id(tmp_path: Path) -> None:
    db = memdb.open(tmp_path / "db", clock=lambda: NOW)
    try:
        mem = filled(db)
        first = mem.recall(text="deploy rollback", limit=25, access=False)
        second = mem.recall(text="deploy rollback", limit=25, access=False)
        assert answer(first) == answer(second) and len(first.memories) == 25
        # the same id object, not one decoded again from the match's tail
        assert all(a.id is b.id for a, b in zip(first, second, strict=True))
    finally:
        db.close()


def test_keys_kept_past_their_bound_change_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = memdb.open(tmp_path / "db", clock=lambda: NOW)
    try:
        mem = filled(db)
        want = [answer(mem.recall(text=text, limit=25, access=False)) for text in ("deploy", "billing rollback")]
        monkeypatch.setattr(engine, "_KEYS_KEPT", 3)
        mem = db.owner("ana")
        for _ in range(2):  # emptied as they fill, and filled again
            assert [answer(mem.recall(text=text, limit=25, access=False)) for text in ("deploy", "billing rollback")] == want
        ask = mem.ask("what about the billing deploy rollback?", limit=25)
        monkeypatch.setattr(engine, "_KEYS_KEPT", 1 << 12)
        assert answer(ask) == answer(db.owner("ana").ask("what about the billing deploy rollback?", limit=25))
    finally:
        db.close()
