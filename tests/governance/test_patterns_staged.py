"""Pattern counts are staged per transaction (``Patterns.on_record``) and written at its commit, or
before anything reads them: what they write equals what counting each record as it was
recorded wrote (the model below, memdb's code before the counts were staged), whatever the
records' transactions do: roll back, nest, fail half-way, erase or correct what they counted."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdb
from memdb.errors import ValidationError
from memdb.governance.patterns import Patterns
from memdb.memory import ids
from memdb.memory.models import Episode

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
OWNERS = ("ana", "bo")
KINDS = ("debug", "sprint", "exchange")  # two typed kinds, and one that is never counted
PATTERN_GLOBALS = ("PATN", "PATQ", "PATB", "PATP", "PATI", "PAT", "PATK")


def count_now(patterns: Patterns, owner: str, episode: Episode) -> None:
    """The model: ``on_record`` as it counted a record in the record's own write, before counts were staged."""
    settings = patterns.episodes.settings
    kind, eid = episode.kind, episode.id
    if kind not in settings.typed_kinds:
        return
    n = patterns.counters.increment((owner, kind, "records"))
    patterns.waiting.set((owner, kind, n), eid)
    oldest = patterns.waiting.order((owner, kind, ""))
    if oldest is None or n - int(oldest) + 1 < settings.pattern_every:
        return
    gathered = list(patterns.waiting.items((owner, kind)))
    if len(gathered) >= settings.pattern_every:
        patterns._index()
        batch = int(patterns.counters.increment((owner, kind, "batches")))
        waited = [str(v) for _, v in gathered]
        patterns.batches.set((owner, kind, batch), {"ids": waited, "status": "pending", "at": patterns.episodes.now()})
        for waiting in waited:
            patterns.counting.set((owner, waiting, kind, batch), "")
        patterns.undone.set((owner, kind, batch), "")
        patterns.waiting.kill((owner, kind))
        patterns._due_here().append((owner, kind, batch, eid))


class Failed(Exception):
    """What a transaction of the program raises, half-way or at its end, to roll back."""


def ops(depth: int) -> st.SearchStrategy[list[Any]]:
    record = st.tuples(st.just("record"), st.sampled_from(OWNERS), st.sampled_from(KINDS))
    step: st.SearchStrategy[Any] = st.one_of(
        record,
        record,
        record,
        st.just(("record", "ana", "debug")),
        st.just(("record", "ana", "debug")),
        st.just(("refused",)),  # a typed record without an outcome: validation refuses it
        st.tuples(st.just("erase"), st.integers(0, 50)),
        st.tuples(st.just("correct"), st.integers(0, 50)),
        st.tuples(st.just("every"), st.integers(2, 5)),
    )
    if depth:
        step = st.one_of(step, st.tuples(st.just("transaction"), st.deferred(lambda: ops(depth - 1)), st.booleans()))
    return st.lists(step, max_size=20)


def run(db: memdb.Database, program: list[Any], recorded: list[tuple[str, str]]) -> None:
    for op in program:
        if op[0] == "record":
            owner, kind = op[1], op[2]
            outcome = {"outcome": "failure" if len(recorded) % 3 else "success"} if kind != "exchange" else {}
            tags = ["deploy"] if len(recorded) % 4 else ["misc"]
            recorded.append((owner, db.owner(owner).record(kind, f"deploy attempt {len(recorded)}", tags=tags, **outcome).id))
        elif op[0] == "refused":
            with pytest.raises(ValidationError):
                db.owner("ana").record("debug", "no outcome given")
        elif op[0] == "erase" and recorded:
            owner, eid = recorded[op[1] % len(recorded)]
            if eid in db.owner(owner):
                db.owner(owner).erase([eid], reason="test")
        elif op[0] == "correct" and recorded:
            owner, eid = recorded[op[1] % len(recorded)]
            mem = db.owner(owner)
            if eid in mem and mem.get(eid).status == "active" and mem.get(eid).kind != "exchange":
                mem.supersede(eid, reason="wrong outcome", outcome="partial")  # recorded as success or failure
        elif op[0] == "every":
            db.configure(pattern_every=op[1])
        elif op[0] == "transaction":
            try:
                with db.transaction():
                    run(db, op[1], recorded)
                    if op[2]:
                        raise Failed
            except Failed:
                pass


def outcome_of(path: Path, program: list[Any], monkeypatch: pytest.MonkeyPatch, staged: bool) -> list[Any]:
    """Every node of the pattern globals after ``program``, and the batches' states as read
    inside the last transaction, with ids as a fixed sequence makes them."""
    monkeypatch.setattr(ids.secrets, "randbelow", lambda _n: 0)
    monkeypatch.setattr(ids, "_seqs", {})
    with memdb.open(path, clock=Clock(T0), sync=False) as db:
        if not staged:
            db.episodes.record_hooks[:] = [partial(count_now, db.patterns)]
        run(db, program, [])
        with db.transaction():  # read in a transaction that staged counts: they are read too
            run(db, [("record", "ana", "debug")], [])
            read = [db.patterns.batch_status(owner, kind) for owner in OWNERS for kind in KINDS]
        return [read, *(list(db.globals[name].items()) for name in PATTERN_GLOBALS)]


@pytest.fixture
def tmp() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=ops(2))
def test_staged_counts_equal_counting_each_record(program: list[Any], tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = len(list(tmp.iterdir()))
    staged = outcome_of(tmp / f"staged{n}", program, monkeypatch, staged=True)
    each = outcome_of(tmp / f"each{n}", program, monkeypatch, staged=False)
    assert staged == each


def test_a_batch_completed_in_a_caller_transaction_waits_and_one_of_its_own_runs(tmp_path: Path) -> None:
    """The counts of a caller's transaction are written at its commit, after every record's
    ``run_due`` inside it: the batches they complete wait for maintain, and the next record
    outside runs only the batch it completes itself."""
    with memdb.open(tmp_path / "db", clock=Clock(T0), sync=False) as db:
        mem = db.owner("ana")
        with db.transaction():
            for i in range(7):
                mem.record("debug", f"deploy attempt {i}", outcome="failure", tags=["deploy"])
        assert mem.patterns() == [] and [b["status"] for b in db.patterns.batch_status("ana", "debug")] == ["pending"]
        for i in range(3):  # the 10th record completes the second batch, and runs it alone
            mem.record("debug", f"deploy attempt {7 + i}", outcome="failure", tags=["deploy"])
        assert [b["status"] for b in db.patterns.batch_status("ana", "debug")] == ["pending", "done"]
        assert len(mem.patterns()) == 1
