"""Access batches written in the background: the read that fills a batch does not wait for its
write, counts stay exact across the writer's commit, and the writer never deadlocks a caller."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdb
from memdb.memory.relevance import AccessTracker, PendingAccess

UTC = dt.UTC
T0 = dt.datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def db(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    d = memdb.open(tmp_path / "a", clock=clock)
    d.configure(access_flush_every=4)
    yield d
    d.close()


class _Writer(threading.Thread):
    """A thread holding a write transaction until released: the access writer waits behind it."""

    def __init__(self, db: memdb.Database) -> None:
        super().__init__(daemon=True)
        self.db, self.holding, self.release = db, threading.Event(), threading.Event()

    def run(self) -> None:
        with self.db.transaction():
            self.db.globals["T"]["held"] = 1
            self.holding.set()
            self.release.wait(30)

    def __enter__(self) -> _Writer:
        self.start()
        assert self.holding.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.join(10)


def test_the_read_that_fills_a_batch_returns_before_the_write(db: memdb.Database) -> None:
    mem = db.owner("ana")
    ids = [mem.record("debug", f"e{i}", outcome="success").id for i in range(4)]
    states = db.globals["EPST"]
    with _Writer(db):
        done = threading.Event()

        def read_all() -> None:
            for eid in ids:
                mem.get(eid)
            done.set()

        threading.Thread(target=read_all, daemon=True).start()
        assert done.wait(10)  # the fourth read handed the batch off; it did not wait for the lock
        assert [states[("ana", eid)]["access_count"] for eid in ids] == [0] * 4  # not written yet
        assert mem.get(ids[0]).access_count == 2  # the batch in writing counts
    db.episodes.tracker.wait()
    assert [states[("ana", eid)]["access_count"] for eid in ids] == [1] * 4
    assert mem.get(ids[0]).access_count == 3  # written once, counted once
    db.flush()
    assert states[("ana", ids[0])]["access_count"] == 3
    assert db.check().ok


def test_a_batch_is_scored_when_it_was_taken_not_when_it_is_written(db: memdb.Database, clock: Clock) -> None:
    mem = db.owner("ana")
    ids = [mem.record("debug", f"e{i}", outcome="success").id for i in range(4)]
    with _Writer(db):
        for eid in ids:
            mem.get(eid)
        clock.advance(days=28)  # the writer runs after this
    db.episodes.tracker.wait()
    fresh = mem.peek(ids[0])
    assert fresh.last_access == T0
    assert fresh.relevance == pytest.approx(mem.explain(ids[0], now=T0).relevance)  # age 10 at T0, not 2.5


def test_flush_inside_a_transaction_does_not_wait_for_a_writer_behind_it(db: memdb.Database) -> None:
    """The writer thread may be waiting for this thread's transaction: flush() there writes what
    is buffered in the transaction and leaves the batch in writing to its writer."""
    mem = db.owner("ana")
    ids = [mem.record("debug", f"e{i}", outcome="success").id for i in range(6)]
    finished = threading.Event()

    def run() -> None:
        with db.transaction():
            for eid in ids[:4]:
                mem.get(eid)  # inside a transaction: buffered only
        for eid in ids:
            mem.get(eid)  # outside: a batch handed off, then 2 buffered... and 4 more
        with db.transaction():
            db.flush()
        finished.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert finished.wait(20), "flush inside a transaction deadlocked with the writer thread"
    db.flush()
    assert [mem.peek(eid).access_count for eid in ids] == [2, 2, 2, 2, 1, 1]
    assert db.check().ok


def test_a_failed_background_write_keeps_its_counts_and_logs_no_message(caplog: pytest.LogCaptureFixture) -> None:
    failures = [RuntimeError("secret sk-live-123 in a key")]
    written: list[dict[tuple[str, str], PendingAccess]] = []

    def write(batch: dict[tuple[str, str], PendingAccess], at: dt.datetime, announce: object) -> None:
        if failures:
            raise failures.pop()
        written.append(dict(batch))

    tracker = AccessTracker(write, lambda: 2, clock=lambda: T0)
    with caplog.at_level(logging.WARNING, logger="memdb"):
        tracker.touch("ana", ["a", "b"], T0)
        tracker.wait()
    assert tracker.pending("ana", "a") == (1, T0)  # kept for the next try
    assert [r.getMessage() for r in caplog.records] == ["access flush failed (RuntimeError): 2 accesses kept for the next flush"]
    tracker.touch("ana", ["a"], T0)  # a full batch again: written this time
    tracker.wait()
    assert written == [{("ana", "a"): PendingAccess(2, T0), ("ana", "b"): PendingAccess(1, T0)}]
    assert tracker.pending("ana", "a") == (0, None)


def test_pending_tells_a_header_that_holds_a_batch_from_one_that_does_not() -> None:
    """Between the writer's announce and commit, and after the commit, a header's own count says
    whether a batch is in it."""
    announced, commit = threading.Event(), threading.Event()

    def write(batch: dict[tuple[str, str], PendingAccess], at: dt.datetime, announce: object) -> None:
        assert callable(announce)
        announce({key: 10 + p.count for key, p in batch.items()})  # the headers held 10
        announced.set()
        assert commit.wait(10)

    tracker = AccessTracker(write, lambda: 3, clock=lambda: T0)
    tracker.touch("ana", ["a", "a", "a"], T0)
    assert announced.wait(10)
    tracker.touch("ana", ["a"], T0)  # buffered beside the batch in writing
    assert tracker.pending("ana", "a", applied=10) == (4, T0)  # a header from before the batch
    assert tracker.pending("ana", "a", applied=13) == (1, T0)  # one that holds it already
    assert tracker.pending("ana", "a") == (4, T0)  # not committed yet
    commit.set()
    tracker.wait()
    assert tracker.pending("ana", "a", applied=10) == (4, T0)  # a snapshot from before the commit
    assert tracker.pending("ana", "a", applied=13) == (1, T0)
    assert tracker.pending("ana", "a") == (1, T0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["get", "recall", "flush", "peek"]), st.integers(0, 5)), min_size=1, max_size=40))
def test_counts_are_exact_whenever_the_writer_commits(tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int]]) -> None:
    """A model of every access against what ``get`` shows, while batches of 3 commit in the
    background at whatever moment they do; after close, the file holds every access."""
    path = tmp_path_factory.mktemp("model") / "db"
    clock = Clock(T0)
    accesses = [0] * 6
    with memdb.open(path, clock=clock) as d:
        d.configure(access_flush_every=3)
        mem = d.owner("ana")
        ids = [mem.record("debug", f"episode {i} deploy", outcome="success").id for i in range(6)]
        for op, i in steps:
            clock.advance(minutes=1)
            if op == "get":
                accesses[i] += 1
                assert mem.get(ids[i]).access_count == accesses[i]
            elif op == "recall":
                got = mem.recall(text="deploy", limit=i + 1, now=clock.now)
                for m in got.memories:
                    accesses[ids.index(m.id)] += 1
            elif op == "flush":
                d.flush()
                assert [mem.peek(eid).access_count for eid in ids] == accesses
        assert [mem.get(eid).access_count for eid in ids] == [a + 1 for a in accesses]
    with memdb.open(path, clock=clock) as d:
        assert [d.owner("ana").peek(eid).access_count for eid in ids] == [a + 1 for a in accesses]
        assert d.check().ok
