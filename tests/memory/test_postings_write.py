"""Capture's block writer in C (native/blocks.c, ``postings.stage_blocks``) writes exactly the
blocks its twin and the writer before it wrote, byte for byte, refuses what they refuse, and
writes within the room it is given; two writers of one store keep appending to the same last
blocks as one writer would.

Tests of the C path skip when MEMDB_PURE_PYTHON is set (CI's second pass); the rest run on both."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdb import native
from memdb.engine.globals import Globals
from memdb.engine.store import LMDBStore
from memdb.errors import CorruptValueError, ValidationError
from memdb.memory import postings as P
from memdb.memory.ids import from_micros, time_prefix
from memdb.memory.postings import BLOCK_DOCS, Doc, TextIndex

LIB, FFI = native.blocks_lib()
needs_c = pytest.mark.skipif(LIB is None, reason="the C block writer is not in use (MEMDB_PURE_PYTHON, or not built)")
MORE_ROOM, BAD_BLOCK, BAD_INPUT = -1, -2, -5  # native/search.h, blocks.h


def old_blocks(numbers: list[int], dls: list[int], per_doc: list[list[tuple[int, int]]], tails: list[bytes | None]) -> list[P.Staged]:
    """What ``TextIndex._appended`` wrote before ``stage_blocks``: each term's (doc, tf, dl) in
    document order, its last block filled by ``_append`` and new blocks by ``encode_block``
    (the reference both implementations are held to)."""
    per_term: dict[int, list[tuple[int, int, int, int]]] = defaultdict(list)
    for i, (doc, dl, pairs) in enumerate(zip(numbers, dls, per_doc, strict=True)):
        for t, tf in pairs:
            per_term[t].append((doc, tf, dl, i))
    out: list[P.Staged] = []
    for t in sorted(per_term):
        entries = per_term[t]
        i = 0
        tail = tails[t]
        if tail is not None:
            n = P.block_header(tail)[0]
            i = min(BLOCK_DOCS - n, len(entries))
            out.append((t, None, P._pack_bin(P._append(tail, [e[:3] for e in entries[:i]])), n + i))
        while i < len(entries):
            part = entries[i : i + BLOCK_DOCS]
            block = P.encode_block([e[0] for e in part], [e[1] for e in part], min(e[2] for e in part))
            out.append((t, part[0][3], P._pack_bin(block), len(part)))
            i += len(part)
    return out


@st.composite
def batches(draw: Any, tails: bool = True) -> tuple[list[int], list[int], list[list[tuple[int, int]]], list[bytes | None]]:
    """Documents (ascending, gaps from 0 to past a varint byte), each with postings of some of
    a few terms (tfs from 1 to past 65,535), and each term's last block: none, or one that ends
    before the batch with room left (from 1 to 127 documents)."""
    n_terms = draw(st.integers(1, 6))
    start = draw(st.one_of(st.integers(200, 5_000), st.integers(1 << 31, (1 << 32) - 300_000)))
    gaps = draw(st.lists(st.one_of(st.integers(0, 3), st.integers(1, 40_000)), min_size=1, max_size=300))
    numbers = [start + sum(gaps[: i + 1]) for i in range(len(gaps))]
    dls = draw(st.lists(st.one_of(st.integers(1, 300), st.integers(0, (1 << 32) - 1)), min_size=len(numbers), max_size=len(numbers)))
    tf = st.one_of(st.integers(1, 127), st.integers(1, 70_000))
    per_doc = [draw(st.lists(st.tuples(st.integers(0, n_terms - 1), tf), max_size=6)) for _ in numbers]
    last_blocks: list[bytes | None] = []
    for _ in range(n_terms):
        if not tails or draw(st.booleans()):
            last_blocks.append(None)
            continue
        n = draw(st.integers(1, BLOCK_DOCS - 1))
        docs = sorted(draw(st.lists(st.integers(0, start), min_size=n, max_size=n, unique=True)))
        last_blocks.append(P.encode_block(docs, draw(st.lists(tf, min_size=n, max_size=n)), draw(st.integers(1, 500))))
    return numbers, dls, per_doc, last_blocks


def staged_by(
    fn: Any, numbers: list[int], dls: list[int], per_doc: list[list[tuple[int, int]]], tails: list[bytes | None]
) -> list[P.Staged]:
    ends = [sum(len(p) for p in per_doc[: i + 1]) for i in range(len(per_doc))]
    terms = [t for pairs in per_doc for t, _ in pairs]
    tfs = [tf for pairs in per_doc for _, tf in pairs]
    return list(fn(numbers, dls, ends, terms, tfs, tails))


@given(batches())
def test_the_blocks_are_those_the_old_writer_wrote(batch: Any) -> None:
    assert staged_by(P.stage_blocks, *batch) == staged_by(P.py_stage_blocks, *batch) == old_blocks(*batch)


@needs_c
@given(batches())
def test_c_writes_the_twins_bytes(batch: Any) -> None:
    assert staged_by(P._c_stage_blocks, *batch) == staged_by(P.py_stage_blocks, *batch)


@pytest.mark.parametrize("fn", [P.py_stage_blocks, pytest.param(P._c_stage_blocks, marks=needs_c)])
def test_a_damaged_or_full_last_block_or_documents_out_of_order_are_refused_alike(fn: Any) -> None:
    one = [[(0, 1)]]
    with pytest.raises(CorruptValueError, match="damaged"):
        staged_by(fn, [10], [5], one, [b"\x01\x00"])  # shorter than its header
    with pytest.raises(CorruptValueError, match="full"):
        staged_by(fn, [1000], [5], one, [P.encode_block(list(range(BLOCK_DOCS)), [1] * BLOCK_DOCS, 1)])
    with pytest.raises(CorruptValueError, match="after its next document"):
        staged_by(fn, [10], [5], one, [P.encode_block([3, 11], [1, 1], 1)])
    with pytest.raises(ValidationError, match="ascending"):
        staged_by(fn, [10, 9], [5, 5], [[(0, 1)], [(0, 1)]], [None])
    assert staged_by(fn, [], [], [], [None]) == []


@needs_c
def test_a_tf_or_length_past_32_bits_is_left_to_the_twin() -> None:
    """``array("I")`` refuses it: the twin writes what it always wrote (a tf capped; a length
    past the header's u32 refused by struct)."""
    assert staged_by(P._c_stage_blocks, [7], [5], [[(0, 1 << 40)]], [None]) == staged_by(
        P.py_stage_blocks, [7], [5], [[(0, 1 << 40)]], [None]
    )
    with pytest.raises(Exception, match="format requires"):
        staged_by(P._c_stage_blocks, [7], [1 << 40], [[(0, 1)]], [None])


@needs_c
def test_the_kernel_writes_within_the_room_it_is_given() -> None:
    """Too little room for the blocks or their bytes: MORE_ROOM, and nothing past the room."""
    numbers, dls = FFI.new("uint32_t[]", [5, 6, 7]), FFI.new("uint32_t[]", [1, 1, 1])
    ends = FFI.new("size_t[]", [2, 4, 6])
    terms, tfs = FFI.new("uint32_t[]", [0, 1, 0, 1, 0, 2]), FFI.new("uint32_t[]", [1, 2, 3, 4, 5, 70_000])
    tail = P.encode_block([1, 2], [1, 1], 1)
    tail_end = FFI.new("size_t[]", [len(tail), len(tail), len(tail)])
    bad = FFI.new("size_t *")

    def run(out_cap: int, block_cap: int) -> tuple[int, Any, list[Any]]:
        out = FFI.new("unsigned char[]", [0xA5] * (out_cap + 8))
        arrays = [FFI.new(kind, [0xA5A5A5A5] * (block_cap + 2)) for kind in ("size_t[]", "uint32_t[]", "uint32_t[]", "uint32_t[]")]
        n = LIB.memdb_stage_blocks(3, numbers, dls, ends, terms, tfs, 3, tail, tail_end, out, out_cap, *arrays, block_cap, bad)
        assert all(out[i] == 0xA5 for i in range(out_cap, out_cap + 8))
        assert all(a[i] == 0xA5A5A5A5 for a in arrays for i in range(block_cap, block_cap + 2))
        return n, out, arrays

    want = P.py_stage_blocks([5, 6, 7], [1, 1, 1], [2, 4, 6], [0, 1, 0, 1, 0, 2], [1, 2, 3, 4, 5, 70_000], [tail, None, None])
    size = sum(len(v) for _, _, v, _ in want)
    assert run(size - 1, 3)[0] == MORE_ROOM
    assert run(size, 2)[0] == MORE_ROOM
    n, out, (_, out_term, out_first, out_n) = run(size, 3)
    assert n == 3 and bytes(FFI.buffer(out, size)) == b"".join(v for _, _, v, _ in want)
    assert [(out_term[i], out_first[i], out_n[i]) for i in range(n)] == [(0, 0xFFFFFFFF, 5), (1, 0, 2), (2, 2, 1)]
    terms[5] = 3  # a term number out of range
    assert run(size, 3)[0] == BAD_INPUT


# --- the writer on a real store --------------------------------------------------------------------

NOW = 1_800_000_000_000_000


def _docs(seq: range, terms: str) -> list[Doc]:
    out = []
    for i in seq:
        ts_us = NOW + 1_000_003 * i
        out.append(Doc(f"{time_prefix(from_micros(ts_us))}-{i:06x}", ts_us, i % 1000, {t: 3 for t in terms}, 3 * len(terms), ("tag-a",)))
    return out


def _stored(path: Path, batches: list[tuple[int, range]]) -> list[tuple[bytes, bytes]]:
    """The text index's items after adding ``batches`` (writer, documents), each writer its own
    TextIndex (as another process: what it remembers of the last blocks is its own)."""
    store = LMDBStore(path, sync=False)
    try:
        space = Globals(store)
        writers = [TextIndex(space), TextIndex(space)]
        for w, seq in batches:
            with space.transaction():
                writers[w].add("ana", _docs(seq, "ab" if seq.start % 2 else "bc"))
        with store.read() as txn:
            return [kv for kv in txn.scan(b"", b"\xff") if kv[0].startswith((space["EPX"].key(), space["EPXT"].key()))]
    finally:
        store.close()


def test_two_writers_append_to_the_last_blocks_as_one_writer_does(tmp_path: Path) -> None:
    """A writer's remembered last block is used only while it is still the stored one: after
    the other writer appended, it is looked up again, and the blocks are those of one writer."""
    seqs = [range(0, 100), range(100, 150), range(150, 300), range(300, 301), range(301, 430), range(430, 431)]
    alone = _stored(tmp_path / "alone", [(0, s) for s in seqs])
    together = _stored(tmp_path / "two", [(i % 2, s) for i, s in enumerate(seqs)])
    assert together == alone
    blocks = [P._payload(v) for k, v in alone if k.startswith(P.codec.encode_global("EPXT"))]
    assert sum(P.block_header(b)[0] for b in blocks) == 431 and all(P.block_header(b)[0] <= BLOCK_DOCS for b in blocks)


def test_owners_taking_turns_keep_their_terms_last_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hundred owners capturing in turn find each term's last block where they left it: the
    cache of last blocks is bounded by the terms it holds, not by owners (a bound of 64 owners
    emptied it at every capture past them, and each of its terms was looked up again: revM)."""
    now = 1_800_000_000_000_000
    lookups = 0
    children_range = P.codec.children_range

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal lookups
        lookups += 1
        return children_range(*args, **kwargs)

    monkeypatch.setattr(P.codec, "children_range", counted)
    store = LMDBStore(tmp_path / "db", sync=False)
    try:
        space = Globals(store)
        index = TextIndex(space)
        terms = {f"t{j}": 1 for j in range(40)}
        i = 0
        for round_ in range(3):
            if round_ == 1:
                lookups = 0  # the first round looks every term up once
            for owner in range(100):
                ts = now + 1_000_003 * i
                with space.transaction():
                    index.add(f"owner{owner}", [Doc(f"{time_prefix(from_micros(ts))}-{i:06x}", ts, 1, terms, len(terms), ("tag",))])
                i += 1
        assert lookups == 0
    finally:
        store.close()


# --- writers whose removals bring a block's bytes back -----------------------------------------

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/memory/)
Op = tuple[int, str, range]  # (writer, "add" or "remove", documents)


def _doc(i: int) -> Doc:
    """Document ``i``: always term "a", some "b" too, every one tag-a (the same Doc each time)."""
    ts_us = NOW + 1_000_003 * i
    tf = {"a": 3, "b": 6} if i % 3 else {"a": 3}
    return Doc(f"{time_prefix(from_micros(ts_us))}-{i:06x}", ts_us, i % 1000, tf, 3 * len(tf), ("tag-a",))


def _apply(space: Globals, writers: list[TextIndex], owner: str, ops: list[Op]) -> None:
    for w, what, seq in ops:
        with space.transaction():
            if what == "add":
                writers[w].add(owner, [_doc(i) for i in seq])
            else:
                writers[w].remove(owner, [(d.eid, d.tf, d.tags) for d in map(_doc, seq)])


def _index_of(space: Globals, owner: str) -> dict[str, list[tuple[Any, bytes]]]:
    """The owner's term blocks and tag lists as stored (subscripts after the owner, value)."""
    return {g: [(subs[1:], v) for subs, v in space[g].items((owner,))] for g in ("EPX", "EPXT")}


def _check_lists(index: dict[str, list[tuple[Any, bytes]]], live: set[int]) -> None:
    """Each list's blocks hold its live documents, in order, a block after the one before."""
    lists: dict[tuple[str, str], list[int]] = defaultdict(list)
    for g, items in index.items():
        for (name, first), block in items:
            docs, _ = P.decode_block(block)
            assert first <= docs[0] and len(docs) <= BLOCK_DOCS  # a removal leaves a block its key
            lists[(g, name)] += docs
    for (g, name), docs in lists.items():
        held = {i for i in live if g == "EPXT" or name in _doc(i).tf}
        assert docs == sorted(held), (g, name)


def _two_ways(path: Path, ops: list[Op]) -> tuple[dict[str, list[tuple[Any, bytes]]], dict[str, list[tuple[Any, bytes]]]]:
    """The index after ``ops`` by one writer (owner "one") and by the writers they name (owner
    "two"), over one store: each writer its own TextIndex, as another process would be."""
    store = LMDBStore(path, sync=False)
    try:
        space = Globals(store)
        _apply(space, [TextIndex(space)] * 2, "one", ops)
        _apply(space, [TextIndex(space), TextIndex(space)], "two", ops)
        return _index_of(space, "one"), _index_of(space, "two")
    finally:
        store.close()


# writer 1 fills writer 0's last block of "a" (docs 0-99) and starts the next one, then removes
# what it added to the first, whose bytes are those writer 0 wrote again; writer 0 appends, then
# removes what it appended
ABA: Final = [(0, "add", range(0, 100)), (1, "add", range(100, 160)), (1, "remove", range(100, 128)), (0, "add", range(160, 170))]


def test_a_block_whose_bytes_came_back_is_not_taken_for_the_last(tmp_path: Path) -> None:
    """A writer's remembered last block is not trusted for its bytes alone: writer 0 appended
    docs 160-169 to the first block, behind the second (128-159), and their removal, which
    looks for them in the second, left them there (revM)."""
    ops = [*ABA, (0, "remove", range(160, 170))]
    one, two = _two_ways(tmp_path / "db", ops)
    assert two == one
    _check_lists(two, set(range(100)) | set(range(128, 160)))


def test_owners_with_nothing_indexed_leave_no_stamps_behind(tmp_path: Path) -> None:
    """The stamps a writer keeps beside its remembered blocks are bounded as those are: an owner
    whose documents hold no term and no tag added an entry that nothing ever cleared (revO)."""
    store = LMDBStore(tmp_path / "db", sync=False)
    try:
        space = Globals(store)
        index = TextIndex(space)
        for i in range(50):
            with space.transaction():
                index.add(f"o{i}", [Doc(f"{time_prefix(from_micros(NOW))}-{i:06x}", NOW, 0, {}, 0, ())])
        assert index._tails_stamps == {} and index._tails_held == 0
        with space.transaction():
            index.add("ana", _docs(range(3), "ab"))
        assert list(index._tails_stamps) == ["ana"]
    finally:
        store.close()


def test_a_writer_in_another_process_is_seen(tmp_path: Path) -> None:
    """The same with writer 1 in another process, on the same LMDB environment."""
    path = tmp_path / "db"
    child = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[2])
        from tests.memory.test_postings_write import ABA, _apply
        from memdb.engine.globals import Globals
        from memdb.engine.store import LMDBStore
        from memdb.memory.postings import TextIndex
        store = LMDBStore(sys.argv[1], sync=False)
        space = Globals(store)
        _apply(space, [None, TextIndex(space)], "ana", [op for op in ABA if op[0] == 1])
        store.close()
        """
    )
    store = LMDBStore(path, sync=False)
    try:
        space = Globals(store)
        mine = [TextIndex(space)]
        _apply(space, mine, "ana", ABA[:1])
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-c", child, str(path), str(ROOT)], check=True, env=env, timeout=120)
        _apply(space, mine, "ana", [*ABA[3:], (0, "remove", range(160, 170))])
        _check_lists(_index_of(space, "ana"), set(range(100)) | set(range(128, 160)))
    finally:
        store.close()


@st.composite
def interleavings(draw: Any) -> list[Op]:
    """Adds and removes by two writers, in runs of 8 documents (a block is 16 runs); a removal
    often starts where an add started, so that it takes exactly what a writer added to a block."""
    ops: list[Op] = []
    starts: list[int] = []
    end = 0
    for _ in range(draw(st.integers(1, 10))):
        w = draw(st.integers(0, 1))
        if end and draw(st.booleans()):
            a = draw(st.one_of(st.sampled_from(starts), st.integers(0, end - 1)))
            b = draw(st.integers(a + 1, end))
            ops.append((w, "remove", range(8 * a, 8 * b)))
        else:
            n = draw(st.integers(1, 24))
            ops.append((w, "add", range(8 * end, 8 * (end + n))))
            starts.append(end)
            end += n
    return ops


@settings(max_examples=150, deadline=None)
@given(interleavings())
def test_two_writers_adding_and_removing_leave_one_writers_index(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as d:
        one, two = _two_ways(Path(d) / "db", ops)
    assert two == one
    live: set[int] = set()
    for _, what, seq in ops:
        live = live | set(seq) if what == "add" else live - set(seq)
    _check_lists(two, live)
