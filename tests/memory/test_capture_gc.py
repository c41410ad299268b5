"""The cyclic GC's passes over the whole heap come once enough tracked objects outlive their first
collections, and they were the largest single cost of a batched capture in the benchmark (about
25 us a record, 45 us an imported one, with a heap of 60,000 objects: a process's modules and
the benchmark's episodes). What capture keeps alive is kept in objects the GC stops tracking
(tuples of numbers, strings and bytes): a batched capture kept several a record until its
commit, and the codec one a datetime packed, for good. An import, which keeps its whole batch
alive until it is written, pauses the GC (``_gc_paused``), and leaves it as it was."""

from __future__ import annotations

import datetime as dt
import gc
import os
import random
import string
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.engine import codec
from memdb.errors import ValidationError
from memdb.memory.episodes import _gc_paused

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)


def tracked() -> set[int]:
    for _ in range(3):  # each pass untracks the tuples all of whose items are untracked by then
        gc.collect()
    return {id(o) for o in gc.get_objects()}


def test_a_transaction_of_captures_keeps_few_tracked_objects_until_its_commit(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=Clock(T0), sync=False) as db:
        mem = db.owner("ana")
        kinds = ["debug", "exchange"]
        mem.record("debug", "warm up", outcome="success", tags=["deploy"])  # caches, settings, first-use objects
        with db.transaction():
            before = tracked()
            for i in range(200):
                mem.record(
                    kinds[i % 2],
                    f"deploy attempt {i} failed on the staging cluster",
                    outcome="failure" if i % 2 == 0 else None,
                    tags=["deploy"],
                )
            kept = tracked() - before
        # the text index's staged documents, the counts and the pattern counts staged with them
        # are none (they were five a record, then two: a Doc and its (number, Doc) tuple)
        assert len(kept) < 20, len(kept)


def test_packing_datetimes_keeps_no_tracked_object() -> None:
    stamps = [T0 + dt.timedelta(seconds=i) for i in range(1000)]
    before = tracked()
    packed = [codec.pack_value({"ts": ts}) for ts in stamps]
    assert len(tracked() - before) < 10  # the cache of packed datetimes held an ExtType each
    assert [codec.unpack_value(p)["ts"] for p in packed] == stamps


def episodes(n: int) -> list[dict[str, Any]]:
    return [
        {
            "kind": "debug",
            "summary": f"deploy attempt {i} failed",
            "outcome": "failure",
            "tags": ["deploy"],
            "ts": T0 - dt.timedelta(minutes=i),
        }
        for i in range(n)
    ]


def collections_during(run: Callable[[], object]) -> list[int]:
    """The generation of each GC collection ``run`` set off."""
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        run()
    finally:
        gc.callbacks.remove(count)
    return seen


def test_an_import_sets_off_no_gc_pass_and_leaves_the_gc_as_it_was(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=Clock(T0), sync=False) as db:
        mem, given = db.owner("ana"), episodes(3000)
        # none but the young generation's once it resumes (it had 3,000 captures' worth before)
        assert collections_during(lambda: mem.import_episodes(given, source="test")) in ([], [0])
        assert gc.isenabled() and mem.count() == 3000
        gc.disable()  # an application's choice stands
        try:
            mem.import_episodes(episodes(10), source="again")
            assert not gc.isenabled()
        finally:
            gc.enable()
        with pytest.raises(ValidationError):  # one that fails resumes it too
            mem.import_episodes([{"kind": "debug", "summary": "no outcome"}], source="bad")
        assert gc.isenabled()


def test_the_gc_resumes_when_the_last_of_concurrent_imports_ends() -> None:
    first, go = threading.Event(), threading.Event()

    def hold(entered: threading.Event) -> None:
        with _gc_paused():
            entered.set()
            go.wait()

    a = threading.Thread(target=hold, args=(first,), daemon=True)
    a.start()
    first.wait()
    try:
        with _gc_paused():
            assert not gc.isenabled()
            go.set()
            a.join()
            assert not gc.isenabled()  # this one still runs
        assert gc.isenabled()
    finally:
        go.set()


def test_a_child_forked_during_an_import_has_its_gc() -> None:
    with _gc_paused():
        pid = os.fork()
        if pid == 0:  # the child: the parent's import is not its own
            os._exit(0 if gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and gc.isenabled()


def test_a_child_forked_inside_an_import_pauses_its_own_imports() -> None:
    """A child forked by the importing thread itself (from the iterable an import reads) finishes
    that import without counting it: its count began at 0 there, and went to -1, so no later import
    of the child paused the GC again (revN)."""
    with _gc_paused():
        pid = os.fork()
    if pid == 0:  # the child: the block it leaves above was its parent's
        with _gc_paused():
            paused = not gc.isenabled()
        os._exit(0 if paused and gc.isenabled() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and gc.isenabled()


def test_a_capture_leaves_no_cyclic_garbage(tmp_path: Path) -> None:
    # garbage only the cyclic GC frees counts toward its next pass: flattening a record's texts
    # made 16 objects of it a capture (closures that called themselves: walk, fill)
    with memdb.open(tmp_path / "db", clock=Clock(T0), sync=False) as db:
        mem = db.owner("ana")
        mem.record("debug", "warm up", outcome="success", tags=["deploy"])
        was = gc.isenabled()
        gc.disable()
        try:
            gc.collect()
            mem.record("debug", "deploy failed", outcome="failure", tags=["deploy", "4111-1111"], decisions={"retry": [1, {"a": "b"}]})
            assert gc.collect() == 0
        finally:
            if was:
                gc.enable()


def test_a_commit_of_captures_takes_no_memoryview_into_the_oldest_generation(tmp_path: Path) -> None:
    # a batched capture's commit held each term's last block as a memoryview (two tracked objects
    # with its buffer), thousands at once: the GC's passes in the commit took them into the oldest
    # generation, and that many promotions set off its passes over the whole heap (a third of the
    # GC's time in the capture benchmark)
    rng = random.Random(7)
    pool = ["".join(rng.choice(string.ascii_lowercase) for _ in range(9)) for _ in range(1500)]

    def captures(db: memdb.Database) -> None:
        mem = db.owner("ana")
        with db.transaction():
            for i in range(150):
                mem.record("debug", f"attempt {i}", outcome="failure", content=" ".join(rng.sample(pool, 40)))

    def old_views() -> int:
        return sum(type(o) is memoryview for o in gc.get_objects(2))

    with memdb.open(tmp_path / "db", clock=Clock(T0), sync=False) as db:
        captures(db)  # every term has a last block now, which the next commit appends to
        gc.collect()
        before, seen = old_views(), [0]

        def watch(phase: str, info: dict[str, int]) -> None:
            if phase == "stop" and info["generation"] == 1:
                seen.append(old_views() - before)

        threshold = gc.get_threshold()
        gc.set_threshold(200, 1, threshold[2])  # a pass of the middle generation every other young one
        gc.callbacks.append(watch)
        try:
            captures(db)
        finally:
            gc.callbacks.remove(watch)
            gc.set_threshold(*threshold)
        assert len(seen) > 10 and max(seen) < 20, max(seen)


def test_what_a_transaction_of_captures_keeps_stops_being_tracked_before_the_oldest_generation(tmp_path: Path) -> None:
    # a pass of the young generation, then one of the middle generation (which moves what it
    # keeps into the oldest): what capture keeps until the commit (the store's write log, the
    # staged counts) is tuples of bytes, numbers and strings, which the GC stops tracking at a
    # pass when what they hold is untracked by then; nested three deep, they were still tracked
    # when moved into the oldest generation, two a record, and set off its full passes
    with memdb.open(tmp_path / "db", clock=Clock(T0), sync=False) as db:
        mem = db.owner("ana")
        mem.record("debug", "warm up", outcome="success", tags=["deploy"])
        with db.transaction():
            before = tracked()
            for i in range(200):
                mem.record("debug", f"deploy attempt {i} failed on the staging cluster", outcome="failure", tags=["deploy"])
            gc.collect(0)
            gc.collect(1)
            kept = {id(o) for o in gc.get_objects()} - before
        assert len(kept) < 40, len(kept)


def test_a_transaction_of_captures_keeps_few_objects_alive_until_its_commit(tmp_path: Path) -> None:
    # the GC's young generation is collected each time 700 more tracked objects are alive than at
    # its last pass: the store's write log kept each batch's (key, value) pairs, about 18 a record,
    # alive until the commit, and a batched capture set off a pass every ~20 records (now ~9 a record)
    with memdb.open(tmp_path / "db", clock=Clock(T0), sync=False) as db:
        mem = db.owner("ana")
        mem.record("debug", "warm up", outcome="success", tags=["deploy"])
        with db.transaction():
            was = gc.isenabled()
            gc.disable()
            try:
                gc.collect()
                for i in range(200):
                    mem.record("debug", f"deploy attempt {i} failed on the staging cluster", outcome="failure", tags=["deploy"])
                alive = gc.get_count()[0]  # tracked objects made less those freed since the collect
            finally:
                if was:
                    gc.enable()
        assert alive < 12 * 200, alive
