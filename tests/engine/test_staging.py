"""Staged writes (``Globals.stage``): written once per transaction, before its commit, before a
savepoint opens and when flushed; dropped with a savepoint or transaction that rolls back."""

from __future__ import annotations

from typing import Any

import pytest

import memdb

pytestmark = pytest.mark.usefixtures("backend")


class Boom(Exception):
    pass


def writer(g: memdb.Global, calls: list[list[Any]]) -> Any:
    def flush(items: list[Any]) -> None:
        calls.append(list(items))
        for i in items:
            g[i] = "x"

    return flush


def test_staged_items_are_written_once_at_commit(db: memdb.Database) -> None:
    g, calls = db.globals["T"], []
    flush = writer(g, calls)
    with db.transaction():
        db.globals.stage("k", flush, [1, 2])
        db.globals.stage("k", flush, [3])
        assert g.get((1,)) is None and calls == []  # not yet written
    assert calls == [[1, 2, 3]] and [s for s, _ in g.items()] == [(1,), (2,), (3,)]


def test_outside_a_transaction_a_stage_is_written_at_once(db: memdb.Database) -> None:
    g, calls = db.globals["T"], []
    db.globals.stage("k", writer(g, calls), [7])
    assert calls == [[7]] and g[(7,)] == "x"


def test_a_rolled_back_transaction_writes_nothing_staged(db: memdb.Database) -> None:
    g, calls = db.globals["T"], []
    with pytest.raises(Boom), db.transaction():
        db.globals.stage("k", writer(g, calls), [1])
        raise Boom
    assert calls == [] and g.data(()) == 0
    with db.transaction():  # and the next transaction starts with nothing staged
        pass
    assert calls == []


def test_a_savepoint_flushes_first_and_drops_only_its_own(db: memdb.Database) -> None:
    g, calls = db.globals["T"], []
    flush = writer(g, calls)
    with db.transaction():
        db.globals.stage("k", flush, [1])
        with pytest.raises(Boom), db.transaction():
            assert calls == [[1]]  # the enclosing level's items were written before the savepoint
            db.globals.stage("k", flush, [2])
            raise Boom
        db.globals.stage("k", flush, [3])
        with db.transaction():
            db.globals.stage("k", flush, [4])  # kept: the savepoint commits into the transaction
    assert calls == [[1], [3], [4]]
    assert [s for s, _ in g.items()] == [(1,), (3,), (4,)]


def test_flush_staged_writes_now_in_staging_order(db: memdb.Database) -> None:
    g, calls = db.globals["T"], []
    with db.transaction():
        db.globals.stage("a", writer(g, calls), [1])
        db.globals.stage("b", writer(g, calls), [2])
        db.globals.flush_staged()
        assert calls == [[1], [2]] and g[(2,)] == "x"
    assert calls == [[1], [2]]


def test_records_in_one_transaction_are_searchable_in_it_and_after(db: memdb.Database) -> None:
    """Capture stages its posting blocks per transaction; a search inside the transaction
    reads them, an erasure in it takes them out, and a failed savepoint leaves no trace."""
    mem = db.owner("ana")
    with db.transaction():
        first = [mem.record("exchange", f"deploy quota {i}").id for i in range(5)]
        assert mem.recall(text="deploy").total == 5
        more = [mem.record("exchange", f"deploy parser {i}").id for i in range(3)]
        mem.erase([first[0]], reason="test")
        with pytest.raises(Boom), db.transaction():
            mem.record("exchange", "deploy rollback in a savepoint")
            assert mem.recall(text="rollback").total == 1
            raise Boom
        assert mem.recall(text="rollback").total == 0
    assert {m.id for m in mem.recall(text="deploy", limit=20)} == set(first[1:] + more)
    assert db.check().ok


def test_a_discard_drops_the_deltas_a_staged_write_would_defer(db: memdb.Database) -> None:
    """Capture stages its document frequencies (counted once per transaction): a discard of the
    counters' subtree (an erasure in the same transaction) must drop those too, or the commit
    would bring back counters of an owner just erased."""
    df = db.globals["DF"]

    def count(terms: list[str]) -> None:
        db.globals.defer_increments(df, ("ana",), {t: 1 for t in terms})

    with db.transaction():
        db.globals.stage("df", count, ["deploy", "cache"])
        db.globals.discard_deferred(df, ("ana",))
        df.kill(("ana",))
    assert list(df.items()) == []
