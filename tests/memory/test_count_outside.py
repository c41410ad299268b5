"""count_outside with chunk summaries (memdb.memory.postings, native/search.c): what the lists
match before and after a window, exact against a brute-force reference whether the documents'
times follow their numbers or not, with or without the summaries, in C and in the twin; and a
block whose chunks lie wholly on one side is counted from its header."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdb import native
from memdb.engine import codec
from memdb.errors import CorruptValueError
from memdb.memory import postings as P
from memdb.memory.postings import ANY_OUTCOME, BLOCK_DOCS, BOOST, CHUNK_DOCS, MATCH, RANK, REQUIRE

C = native.search_lib()[0] is not None
ROLES = [MATCH, RANK, BOOST, REQUIRE]


@dataclass
class Case:
    live: dict[int, tuple[int, int]]  # doc -> (ts, index code)
    lists: list[list[int]]
    roles: list[int]
    block_docs: list[int]  # documents a block of each list holds
    lo: int | None
    hi: int | None
    outcome: int | None
    unwritten: bool  # a chunk without a live record is not written (else it is written zeroed)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    # gaps past a chunk leave chunks without a live record; small ones fill chunks with dead records
    gaps = draw(st.lists(st.sampled_from([1, 3, 30, 30, 200, 1100]), min_size=1, max_size=400))
    docs = [sum(gaps[: i + 1]) - 1 for i in range(len(gaps))]
    times = draw(st.lists(st.integers(0, 5_000), min_size=len(docs), max_size=len(docs)))
    if draw(st.booleans()):
        times.sort()  # captured in time order (else imported, times shuffled against numbers)
    codes = draw(st.lists(st.integers(0, 1003), min_size=len(docs), max_size=len(docs)))
    rnd = draw(st.randoms(use_true_random=False))
    n_lists = draw(st.sampled_from([1, 1, 1, 2, 3, 4]))  # one list (a tag) counts by blocks
    lists = []
    for _ in range(n_lists):
        share = draw(st.sampled_from([0.02, 0.3, 1.0]))
        lists.append([d for d in docs if rnd.random() < share])
    window = st.one_of(st.none(), st.integers(-10, 5_010), st.integers(-10, 5_010))
    return Case(
        dict(zip(docs, zip(times, codes, strict=True), strict=True)),
        lists,
        draw(st.lists(st.sampled_from([MATCH, *ROLES]), min_size=n_lists, max_size=n_lists)),
        draw(st.lists(st.sampled_from([1, 3, 50, BLOCK_DOCS]), min_size=n_lists, max_size=n_lists)),
        draw(window),
        draw(window),
        draw(st.sampled_from([None, None, None, 0, 1, 2, 3, ANY_OUTCOME])),
        draw(st.booleans()),
    )


def chunks_of(case: Case) -> P.ColumnChunks:
    n = max(case.live) // CHUNK_DOCS + 1
    records, levels = [bytearray(CHUNK_DOCS * P.RECORD_BYTES) for _ in range(n)], [bytearray(CHUNK_DOCS) for _ in range(n)]
    for doc, (ts, code) in case.live.items():
        c, i = divmod(doc, CHUNK_DOCS)
        records[c][i * P.RECORD_BYTES : (i + 1) * P.RECORD_BYTES] = P.pack_record(ts, doc, 1, code & 3)
        levels[c][i] = code >> 2
    written = {doc // CHUNK_DOCS for doc in case.live}
    keep = [c in written or not case.unwritten for c in range(n)]
    return P.ColumnChunks(
        [bytes(r) if k else None for r, k in zip(records, keep, strict=True)],
        [bytes(lv) if k else None for lv, k in zip(levels, keep, strict=True)],
    )


def blocks_of(docs: list[int], size: int) -> list[bytes]:
    return [P.encode_block(docs[i : i + size], [1] * len(docs[i : i + size]), 1) for i in range(0, len(docs), size)]


def reference(case: Case) -> P.Outside:
    """Every match, its time read from the case itself."""
    matching = set().union(*(set(d) for d, r in zip(case.lists, case.roles, strict=True) if r in (MATCH, BOOST)))
    for d, r in zip(case.lists, case.roles, strict=True):
        if r == REQUIRE:
            matching &= set(d)
    o = case.outcome
    times = [ts for doc in matching for ts, code in [case.live[doc]] if o is None or (code & 3 != 0 if o == ANY_OUTCOME else code & 3 == o)]
    before = [ts for ts in times if case.lo is not None and ts < case.lo]
    return len(before), max(before, default=None), sum(case.hi is not None and ts >= case.hi for ts in times)


@settings(max_examples=500, deadline=None)
@given(cases())
def test_counting_outside_with_summaries_equals_a_brute_force_reference(case: Case) -> None:
    """Whatever the lists, roles, outcome and window, and whether times follow document numbers:
    the same (before, newest before, after) with summaries or without, in C and in the twin, with
    blocks given one by one or as stored."""
    chunks = chunks_of(case)
    summaries = [P.py_chunk_summary(r, lv) for r, lv in zip(chunks.records, chunks.levels, strict=True)]
    assert summaries == [P.chunk_summary(r, lv) for r, lv in zip(chunks.records, chunks.levels, strict=True)]
    lists = [blocks_of(docs, size) for docs, size in zip(case.lists, case.block_docs, strict=True)]
    stored = [P.StoredList(b"".join(codec.pack_value(b) for b in bs)) for bs in lists]
    want = reference(case)
    for fn in (P.py_count_outside, P._c_count_outside) if C else (P.py_count_outside,):
        for given_lists in (lists, stored):
            for given_summaries in (summaries, None):
                assert fn(given_lists, chunks, case.lo, case.hi, case.outcome, case.roles, given_summaries) == want


def one_list(times: list[int]) -> tuple[list[bytes], P.ColumnChunks, list[P.Summary]]:
    """A list of every document, one a chunk, two blocks of two: document i at ``times[i]``."""
    case = Case({i * CHUNK_DOCS: (ts, 1) for i, ts in enumerate(times)}, [], [], [], None, None, None, False)
    chunks = chunks_of(case)
    summaries = [P.chunk_summary(r, lv) for r, lv in zip(chunks.records, chunks.levels, strict=True)]
    return blocks_of([i * CHUNK_DOCS for i in range(len(times))], 2), chunks, summaries


COUNTERS = [P.py_count_outside, P._c_count_outside] if C else [P.py_count_outside]


@pytest.mark.parametrize("fn", COUNTERS)
def test_a_block_on_one_side_is_counted_by_its_header(fn: Callable[..., P.Outside]) -> None:
    """Its body is not read: a damaged body in a block wholly before the window is counted from
    its header (memdb check verifies posting bodies); one in a block searched for the newest time
    before, or straddling the window, is refused; so is a damaged header, or blocks out of order."""
    blocks, chunks, summaries = one_list([10, 20, 30, 40])
    torn = [blocks[0][:-1], blocks[1]]
    assert fn([blocks], chunks, 35, None, None, None, summaries) == fn([torn], chunks, 35, None, None, None, summaries) == (3, 30, 0)
    with pytest.raises(CorruptValueError, match="damaged"):
        fn([torn], chunks, 35, None, None, None, None)  # without summaries every block is decoded
    with pytest.raises(CorruptValueError, match="damaged"):
        fn([torn], chunks, 15, None, None, None, summaries)  # it straddles 15
    with pytest.raises(CorruptValueError, match="damaged"):
        fn([[blocks[0], blocks[1][:-1]]], chunks, 50, None, None, None, summaries)  # searched for the newest
    for damaged in ([blocks[1], blocks[0]], [blocks[0][:10], blocks[1]]):
        with pytest.raises(CorruptValueError, match="damaged"):
            fn([damaged], chunks, 50, None, None, None, summaries)


@pytest.mark.parametrize("fn", COUNTERS)
def test_the_newest_time_before_is_searched_from_the_newest_bound(fn: Callable[..., P.Outside]) -> None:
    """Times shuffled against numbers: the block whose chunks' newest time is highest is decoded
    first, and none after it can beat what it holds, so every other block's body may be torn."""
    rnd = random.Random(7)
    times = [rnd.randrange(0, 1_000) for _ in range(40)]
    blocks, chunks, summaries = one_list(times)
    newest = max(range(len(blocks)), key=lambda b: max(times[2 * b : 2 * b + 2]))
    torn = [blk if b == newest else blk[:-1] for b, blk in enumerate(blocks)]
    assert fn([torn], chunks, 2_000, None, None, None, summaries) == (40, max(times), 0)


@pytest.mark.parametrize("fn", COUNTERS)
def test_runs_past_the_first_few_are_searched_in_bound_order(fn: Callable[..., P.Outside]) -> None:
    """Every chunk's newest record is no match, so no block's documents beat the next block's
    bound and all twenty are looked up: the C kernel picks the first few runs by a pass each and
    sorts the rest (newest_of_runs), and the answer is the brute-force one."""
    live = {c * CHUNK_DOCS: (c, 1) for c in range(20)} | {c * CHUNK_DOCS + 1: (1_000 + c, 1) for c in range(20)}
    case = Case(live, [sorted(d for d in live if d % CHUNK_DOCS == 0)], [MATCH], [1], 5_000, None, None, False)
    chunks = chunks_of(case)
    summaries = [P.chunk_summary(r, lv) for r, lv in zip(chunks.records, chunks.levels, strict=True)]
    blocks = blocks_of(case.lists[0], 1)
    assert fn([blocks], chunks, case.lo, None, None, None, summaries) == reference(case) == (20, 19, 0)
    assert fn([blocks], chunks, 10, 1_010, None, None, summaries) == (10, 9, 0)
    with pytest.raises(CorruptValueError, match="damaged"):  # every block is decoded: a torn one is seen
        fn([[*blocks[:15], blocks[15][:-1], *blocks[16:]]], chunks, case.lo, None, None, None, summaries)
