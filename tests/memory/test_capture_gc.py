"""The cyclic GC's passes over the whole heap come once enough tracked objects outlive their first
collections, and they were the largest single cost of a batched capture in the benchmark (about
25 us a record, 45 us an imported one, with a heap of 60,000 objects: a process's modules and
the benchmark's episodes). What capture keeps alive is kept in objects the GC stops tracking
(tuples of numbers, strings and bytes): a batched capture kept several a record until its
commit, and the codec one a datetime packed, for good."""

from __future__ import annotations

import datetime as dt
import gc
from pathlib import Path

from clocks import Clock

import memdb
from memdb.engine import codec

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
        # the text index's staged documents are two a record (memdb.memory.postings); the counts
        # and pattern counts staged with them, none (they were three more)
        assert len(kept) < 2.5 * 200


def test_packing_datetimes_keeps_no_tracked_object() -> None:
    stamps = [T0 + dt.timedelta(seconds=i) for i in range(1000)]
    before = tracked()
    packed = [codec.pack_value({"ts": ts}) for ts in stamps]
    assert len(tracked() - before) < 10  # the cache of packed datetimes held an ExtType each
    assert [codec.unpack_value(p)["ts"] for p in packed] == stamps
