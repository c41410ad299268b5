"""The text index's formats and its search kernel (memdb.memory.postings, native/search.c):
blocks round-trip and damaged ones are refused alike by C and the twin; the C kernel and the
twin agree bit for bit; both agree with a brute-force reference; and the writer keeps blocks
and columns equal to a model through random adds, removals and code changes, on real LMDB."""

from __future__ import annotations

import math
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule
from text_index_oracle import text_index_problems

from memdb import native
from memdb.engine import codec
from memdb.engine.globals import Globals
from memdb.engine.store import LMDBStore
from memdb.errors import CorruptValueError, ValidationError
from memdb.memory import postings as P
from memdb.memory.ids import from_micros, time_prefix
from memdb.memory.postings import BLOCK_DOCS, CHUNK_DOCS, Doc, SearchParams, TextIndex

C = native.search_lib()[0] is not None
needs_c = pytest.mark.skipif(not C, reason="the C kernel is not in use (MEMDB_PURE_PYTHON, or not built)")

PARAMS = SearchParams(avgdl=7.5, k1=1.2, b=0.75, week_us=7 * 86_400e6, text_level=0.05 / 10 / 25, text_weight=0.9,
                      recency_weight=0.05, slack=1e-9, max_level=250.0)  # fmt: skip
NOW = 1_800_000_000_000_000

ascending = st.lists(st.integers(0, 3_000), min_size=1, max_size=BLOCK_DOCS, unique=True).map(sorted)


@given(ascending, st.data())
def test_a_block_round_trips_in_c_and_in_the_twin(docs: list[int], data: st.DataObject) -> None:
    tfs = data.draw(st.lists(st.integers(1, 70_000), min_size=len(docs), max_size=len(docs)))
    block = P.encode_block(docs, tfs, 3)
    stored = [min(tf, 0xFFFF) for tf in tfs]  # no episode's text holds a word that often: tfs are capped
    assert P.py_decode_block(block) == (docs, stored)
    assert P.decode_block(block) == (docs, stored)
    n, max_tf, min_dl, first, last = P.block_header(block)
    assert (n, max_tf, min_dl, first, last) == (len(docs), min(max(tfs), 0xFFFF), 3, docs[0], docs[-1])


@given(ascending, st.one_of(st.integers(1, 10), st.integers(1, 70_000)), st.data())
def test_appending_equals_encoding_at_once(docs: list[int], tf: int, data: st.DataObject) -> None:
    dls = data.draw(st.lists(st.integers(1, 50), min_size=len(docs), max_size=len(docs)))
    block = P.encode_block(docs[:1], [tf], dls[0])
    one_by_one = block
    for d, dl in zip(docs[1:], dls[1:], strict=True):
        one_by_one = P._append(one_by_one, [(d, tf, dl)])
    at_once = P._append(block, [(d, tf, dl) for d, dl in zip(docs[1:], dls[1:], strict=True)])
    assert one_by_one == at_once == P.encode_block(docs, [tf] * len(docs), min(dls))


@given(ascending, st.data())
def test_a_damaged_block_is_refused_alike(docs: list[int], data: st.DataObject) -> None:
    """Any change to a block's bytes (or its length) is either still a valid block, decoded
    the same way by both, or refused by both: neither reads past the end or makes up postings."""
    block = bytearray(P.encode_block(docs, [1] * len(docs), 2))
    how = data.draw(st.sampled_from(["flip", "cut", "grow"]))
    if how == "flip":
        i = data.draw(st.integers(0, len(block) - 1))
        block[i] ^= data.draw(st.integers(1, 255))
    elif how == "cut":
        del block[data.draw(st.integers(0, len(block) - 1)) :]
    else:
        block += bytes(data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=4)))
    try:
        twin: Any = P.py_decode_block(bytes(block))
    except CorruptValueError:
        twin = "refused"
    try:
        c: Any = P.decode_block(bytes(block))
    except CorruptValueError:
        c = "refused"
    assert c == twin


# --- the kernel: random corpora ---------------------------------------------------------------------

corpora = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from("abcdef"), st.integers(1, 4), min_size=1, max_size=4),  # terms
        st.integers(1, 30),  # dl (at least the terms' total below)
        st.integers(0, 1000),  # relevance level * 4 + outcome
        st.integers(0, 60 * 86_400),  # seconds before NOW
    ),
    min_size=1,
    max_size=300,
)


def build(corpus: list[tuple[dict[str, int], int, int, int]], gaps: int) -> tuple[dict[str, list[bytes]], P.ColumnChunks, list[Doc]]:
    """Blocks and chunks (records and levels) of a corpus, documents numbered with ``gaps``
    skipped numbers between."""
    per_term: dict[str, list[tuple[int, int, int]]] = {}
    chunks: dict[int, bytearray] = {}
    levels: dict[int, bytearray] = {}
    docs = []
    for i, (tf, extra, code, age) in enumerate(corpus):
        doc = i * (gaps + 1)
        dl = sum(tf.values()) + extra
        eid = f"20260101T000000000000Z-{i:06x}"
        docs.append(Doc(eid, NOW - age * 1_000_000, code, tf, dl))
        rec = P.pack_record(NOW - age * 1_000_000, i, dl, code & 3)
        chunk = chunks.setdefault(doc // CHUNK_DOCS, bytearray())
        off = doc % CHUNK_DOCS * P.RECORD_BYTES
        chunk.extend(bytes(max(off + P.RECORD_BYTES - len(chunk), 0)))
        chunk[off : off + P.RECORD_BYTES] = rec
        level = levels.setdefault(doc // CHUNK_DOCS, bytearray())
        level.extend(bytes(max(doc % CHUNK_DOCS + 1 - len(level), 0)))
        level[doc % CHUNK_DOCS] = code >> 2
        for term, n in tf.items():
            per_term.setdefault(term, []).append((doc, n, dl))
    blocks = {}
    for term, entries in per_term.items():
        size = 1 + len(entries) % 7  # small blocks: many block bounds per term
        blocks[term] = [
            P.encode_block(
                [e[0] for e in entries[j : j + size]], [e[1] for e in entries[j : j + size]], min(e[2] for e in entries[j : j + size])
            )
            for j in range(0, len(entries), size)
        ]
    table: list[bytes | None] = [None] * (max(chunks) + 1)
    level_table: list[bytes | None] = [None] * (max(chunks) + 1)
    for c, data in chunks.items():
        table[c] = bytes(data)
        level_table[c] = bytes(levels[c])
    return blocks, P.ColumnChunks(table, level_table), docs


def bm25_of(idf: float, stored_tf: int, dl: int) -> float:
    """One term's BM25 the plain way, from a tf as stored: in ``tf_unit``s of an occurrence."""
    tf = stored_tf / PARAMS.tf_unit
    return idf * tf * (PARAMS.k1 + 1) / (tf + PARAMS.k1 * (1 - PARAMS.b + PARAMS.b * dl / PARAMS.avgdl))


def reference(
    docs: list[Doc], terms: list[str], idf: list[float], lo: int | None, hi: int | None, outcome: int | None
) -> list[tuple[int, float, float]]:
    """(position, bm25, lower bound) of every passing document, computed the plain way."""
    out = []
    for i, d in enumerate(docs):
        if not any(t in d.tf for t in terms):
            continue
        if (lo is not None and d.ts_us < lo) or (hi is not None and d.ts_us >= hi) or (outcome is not None and d.code & 3 != outcome):
            continue
        bm = 0.0
        for t, w in zip(terms, idf, strict=True):
            if t in d.tf:
                bm += bm25_of(w, d.tf[t], d.dl)
        out.append((i, bm, 0.0))
    best = max((bm for _, bm, _ in out), default=0.0) or 1.0
    return [
        (
            i,
            bm,
            0.9 * bm / best + PARAMS.text_level * (docs[i].code >> 2) + 0.05 * math.pow(0.5, max(NOW - docs[i].ts_us, 0) / PARAMS.week_us),
        )
        for i, bm, _ in out
    ]


queries = st.tuples(
    st.lists(st.sampled_from("abcdefz"), min_size=1, max_size=4, unique=True),
    st.one_of(st.none(), st.integers(0, 60 * 86_400)),
    st.one_of(st.none(), st.integers(0, 60 * 86_400)),
    st.one_of(st.none(), st.integers(0, 3)),
    st.sampled_from([0, 1, 3, 10]),
    st.sampled_from([0, 1, 2, 3, 700]),  # gaps: 700 spreads a corpus over a few hundred chunks
    st.booleans(),  # whether the chunks' summaries are given
)


def summaries_of(chunks: P.ColumnChunks, given: bool) -> list[tuple[int, int]] | None:
    return [P.chunk_summary(r, lv) for r, lv in zip(chunks.records, chunks.levels, strict=True)] if given else None


@settings(max_examples=150, deadline=None)
@given(corpora, queries)
def test_the_kernel_equals_a_brute_force_reference(corpus: list[Any], query: Any) -> None:
    """Totals and the best BM25 are exact; top mode returns every document whose lower bound is
    within one level of the k-th best (so ranking by exact scores finds the true top k), in
    document order, with exact BM25 and term frequencies; all mode returns every match."""
    terms, lo_age, hi_age, outcome, keep, gaps, summarised = query
    blocks, chunks, docs = build(corpus, gaps)
    idf = [0.3 + 0.2 * "abcdefz".index(t) for t in terms]
    lo = NOW - lo_age * 1_000_000 if lo_age is not None else None
    hi = NOW - hi_age * 1_000_000 + 1 if hi_age is not None else None
    summaries = summaries_of(chunks, summarised)
    found = P.search([blocks.get(t, []) for t in terms], idf, chunks, PARAMS, NOW, lo, hi, outcome, keep, None, summaries)
    want = reference(docs, terms, idf, lo, hi, outcome)
    assert found.total == len(want)
    assert found.best == max((bm for _, bm, _ in want), default=0.0)
    positions = [doc // (gaps + 1) for doc in found.docs]
    assert positions == sorted(positions)
    by_pos = {i: (bm, low) for i, bm, low in want}
    for pos, bm, tfs, dl, column in zip(positions, found.bm25, found.tfs, found.dls, found.columns, strict=True):
        assert bm == by_pos[pos][0] and dl == docs[pos].dl
        assert tfs == [docs[pos].tf.get(t, 0) for t in terms]
        assert column == (docs[pos].ts_us, pos, docs[pos].code)  # time, id suffix, index code
    if keep == 0 or len(want) <= keep:
        assert positions == [i for i, _, _ in want]
    else:
        cut = sorted((low for _, _, low in want), reverse=True)[keep - 1] - PARAMS.text_level - 1e-9
        needed = {i for i, _, low in want if low >= cut + 1e-12}
        assert needed <= set(positions)  # every document that can rank is there


@needs_c
@settings(max_examples=150, deadline=None)
@given(corpora, queries)
def test_c_and_the_twin_agree_bit_for_bit(corpus: list[Any], query: Any) -> None:
    terms, lo_age, hi_age, outcome, keep, gaps, summarised = query
    blocks, chunks, _ = build(corpus, gaps)
    idf = [0.3 + 0.2 * "abcdefz".index(t) for t in terms]
    lo = NOW - lo_age * 1_000_000 if lo_age is not None else None
    hi = NOW - hi_age * 1_000_000 + 1 if hi_age is not None else None
    args = ([blocks.get(t, []) for t in terms], idf, chunks, PARAMS, NOW, lo, hi, outcome, keep, None, summaries_of(chunks, summarised))
    c, twin = P._c_search(*args), P.py_search(*args)
    assert (c.total, c.docs, c.tfs, c.dls, c.columns) == (twin.total, twin.docs, twin.tfs, twin.dls, twin.columns)
    assert [struct.pack("<d", x) for x in [c.best, *c.bm25]] == [struct.pack("<d", x) for x in [twin.best, *twin.bm25]]


@needs_c
@pytest.mark.parametrize("terms", ["abc", "abcd"])
def test_c_keeps_frequencies_from_the_merge_or_looks_them_up_past_its_bound(terms: str) -> None:
    """The kernel keeps each merged document's frequencies from pass 1 while the union holds at
    most 2**18 (document, list) pairs, and looks them up in the lists past that: 17,000
    documents of every term are 51,000 pairs over three lists (kept) and 68,000 over four,
    past 65,536 a list (looked up). Both give the twin's answer, bit for bit."""
    corpus = [({t: 1 + (i + j) % 3 for j, t in enumerate(terms)}, i % 7, (i % 250) << 2 | i % 4, i * 60) for i in range(17_000)]
    blocks, chunks, _ = build(corpus, 0)
    idf = [0.3 + 0.2 * i for i in range(len(terms))]
    for keep in (0, 10):
        args = ([blocks[t] for t in terms], idf, chunks, PARAMS, NOW, None, None, None, keep, None, summaries_of(chunks, True))
        c, twin = P._c_search(*args), P.py_search(*args)
        assert (c.total, c.docs, c.tfs, c.dls, c.columns) == (twin.total, twin.docs, twin.tfs, twin.dls, twin.columns)
        assert [struct.pack("<d", x) for x in [c.best, *c.bm25]] == [struct.pack("<d", x) for x in [twin.best, *twin.bm25]]


def test_a_posting_without_a_live_column_record_is_damage_in_both() -> None:
    blocks, chunks, _ = build([({"a": 1}, 1, 4, 0), ({"a": 2}, 1, 4, 0)], 0)
    records, levels = chunks.records[0], chunks.levels[0]
    assert records is not None and levels is not None
    dead = records[: P.RECORD_BYTES] + bytes(P.RECORD_BYTES)  # the second document's record zeroed
    for fn in (P.py_search, P._c_search) if C else (P.py_search,):
        # a zeroed record, a level chunk that stops short, none at all
        for damaged, doc in (
            (P.ColumnChunks([dead], [levels]), 1),
            (P.ColumnChunks([records], [levels[:1]]), 1),
            (P.ColumnChunks([records], [None]), 0),
        ):
            with pytest.raises(CorruptValueError, match=f"document {doc} has no column record"):
                fn([blocks["a"]], [1.0], damaged, PARAMS, NOW, None, None, None, 1)
        with pytest.raises(CorruptValueError, match="damaged"):
            fn([[b"\x01\x00" + blocks["a"][0][2:-1]]], [1.0], chunks, PARAMS, NOW, None, None, None, 1)


def test_a_rank_list_is_decoded_only_where_a_scored_document_may_be() -> None:
    """A RANK list is found by its block headers: damage to the body of a block no match falls in
    is not read (the answer stands), damage where one does is refused, and headers out of order
    are refused whatever is asked; alike in C and the twin."""
    blocks, chunks, _ = build([({"a": 1, "b": 2}, 1, 4, 0), ({"a": 1}, 1, 8, 0)], 0)
    held, beyond = P.encode_block([0], [2], 3), P.encode_block([10, 11], [1, 1], 1)
    for fn in (P.py_search, P._c_search) if C else (P.py_search,):
        for keep in (0, 1):

            def run(rank: list[bytes], keep: int = keep, fn: Any = fn) -> Any:
                return fn([blocks["a"], rank], [1.0, 0.5], chunks, ROLE_PARAMS, NOW, None, None, None, keep, [P.MATCH, P.RANK])

            want = run([held, beyond])
            assert want.total == 2 and [tfs for doc, tfs in zip(want.docs, want.tfs, strict=True) if doc == 0] == [[1, 2]]
            assert run([held, beyond[:-1]]) == want
            with pytest.raises(CorruptValueError, match="damaged"):
                run([held[:-1], beyond])
            with pytest.raises(CorruptValueError, match="damaged"):
                run([beyond, held])


@settings(max_examples=100, deadline=None)
@given(corpora, st.lists(st.sampled_from("abcdefz"), min_size=1, max_size=4, unique=True), st.sampled_from([0, 3]), st.data())
def test_a_stored_list_searches_like_its_blocks(corpus: list[Any], terms: list[str], keep: int, data: st.DataObject) -> None:
    """Blocks handed over as stored (msgpack bin values back to back, as one read returns them)
    give the same answer as the blocks themselves, in C and the twin; a damaged value is refused."""
    blocks, chunks, _ = build(corpus, 1)
    stored = [P.StoredList(b"".join(codec.pack_value(b) for b in blocks.get(t, []))) for t in terms]
    assert [[bytes(b) for b in s.blocks()] for s in stored] == [blocks.get(t, []) for t in terms]
    idf = [0.3 + 0.2 * "abcdefz".index(t) for t in terms]
    for fn in (P.py_search, P._c_search) if C else (P.py_search,):
        want = fn([blocks.get(t, []) for t in terms], idf, chunks, PARAMS, NOW, None, None, None, keep)
        assert fn(stored, idf, chunks, PARAMS, NOW, None, None, None, keep) == want
    whole = stored[0].data
    if whole:
        cut = P.StoredList(whole[: data.draw(st.integers(1, len(whole) - 1))] if len(whole) > 1 else b"\xc4")
        bad = P.StoredList(b"\x01" + whole[1:])
        for fn in (P.py_search, P._c_search) if C else (P.py_search,):
            for damaged in (cut, bad):
                try:
                    fn([damaged], [1.0], chunks, PARAMS, NOW, None, None, None, keep)
                except CorruptValueError:
                    continue
                # a cut that falls between two values is a shorter list, not damage
                assert damaged is cut and sum(len(codec.pack_value(b)) for b in damaged.blocks()) == len(damaged.data)


def test_top_mode_asks_for_more_room_when_its_candidates_overflow() -> None:
    """Equal documents all tie with the k-th lower bound: the C call's first guess at the room
    it needs (4k + 64) overflows and it asks again, returning every tied document."""
    corpus = [({"a": 1}, 0, 400, 0)] * 500
    blocks, chunks, _ = build(corpus, 0)
    found = P.search([blocks["a"]], [1.0], chunks, PARAMS, NOW, None, None, None, 2)
    assert found.total == 500 and len(found.docs) == 500


@settings(max_examples=100, deadline=None)
@given(corpora, queries, st.lists(st.sampled_from([P.MATCH, P.RANK, P.BOOST, P.REQUIRE]), min_size=4, max_size=4))
def test_chunk_summaries_change_what_is_scored_never_the_answer(corpus: list[Any], query: Any, roles: list[int]) -> None:
    """A top-k search bounding documents by their chunk's newest time and highest level returns
    exactly what it returns without them (C and the twin)."""
    terms, lo_age, hi_age, outcome, keep, gaps, _ = query
    blocks, chunks, _ = build(corpus, gaps)
    idf = [0.3 + 0.2 * "abcdefz".index(t) for t in terms]
    lo = NOW - lo_age * 1_000_000 if lo_age is not None else None
    hi = NOW - hi_age * 1_000_000 + 1 if hi_age is not None else None
    for search in (P.py_search, P._c_search) if C else (P.py_search,):
        args = ([blocks.get(t, []) for t in terms], idf, chunks, ROLE_PARAMS, NOW, lo, hi, outcome, keep, roles[: len(terms)])
        assert search(*args, summaries_of(chunks, True)) == search(*args, None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**62), 2**62), st.integers(0, 1003), st.booleans()), max_size=CHUNK_DOCS), st.integers(0, 19))
def test_a_chunk_summary_is_its_newest_live_time_highest_level_and_oldest_live_time(records: list[tuple[int, int, bool]], cut: int) -> None:
    """Dead (zeroed, level 0) records and a torn last record are left out (a chunk with no live
    record is oldest NO_LIVE, newest 0); C and the twin agree."""
    chunk = b"".join(P.pack_record(ts, 1, 1, code & 3) if live else bytes(P.RECORD_BYTES) for ts, code, live in records)
    levels = bytes(code >> 2 if live else 0 for _, code, live in records)
    chunk = chunk[: len(chunk) - cut] if cut and records else chunk
    whole = records[: len(chunk) // P.RECORD_BYTES]
    live = [ts for ts, _, alive in whole if alive]
    level = max((code >> 2 for _, code, alive in records if alive), default=0)
    want = (max(live) if live else 0, level, min(live) if live else P.NO_LIVE)
    assert P.py_chunk_summary(chunk, levels) == want
    assert P.chunk_summary(chunk, levels) == want
    assert P.py_chunk_summary(None, None) == P.chunk_summary(None, None) == (0, 0, P.NO_LIVE)
    assert P.chunk_summary(chunk, None) == P.py_chunk_summary(chunk, None) == (want[0], 0, want[2])


def test_summaries_must_match_the_chunks() -> None:
    blocks, chunks, _ = build([({"a": 1}, 1, 4, 0)], 0)
    with pytest.raises(ValidationError, match="summaries: 2 for 1 chunks"):
        P.search([blocks["a"]], [1.0], chunks, PARAMS, NOW, keep=1, summaries=[(0, 0), (0, 0)])


# --- the writer: a model-based test on a real LMDB file ---------------------------------------------


def as_bytes(chunks: P.ColumnChunks) -> tuple[list[bytes | None], list[bytes | None]]:
    return [None if c is None else bytes(c) for c in chunks.records], [None if c is None else bytes(c) for c in chunks.levels]


class TextIndexMachine(RuleBasedStateMachine):
    """Random adds (in batches), removals and code changes; blocks and columns always equal
    the model (``problems`` is empty) and the kernel finds exactly the model's documents."""

    episodes = Bundle("episodes")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memdb-textindex-"))
        self.store = LMDBStore(self.dir / "db", sync=False)
        self.space = Globals(self.store)
        self.text = TextIndex(self.space)
        self.model: dict[str, dict[str, Doc]] = {"ana": {}, "bo": {}}
        self.seq = 0

    @rule(
        target=episodes,
        owner=st.sampled_from(["ana", "bo"]),
        batch=st.lists(st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 3), max_size=4), min_size=1, max_size=150),
    )
    def add(self, owner: str, batch: list[dict[str, int]]) -> Any:
        docs = []
        for tf in batch:
            self.seq += 1
            ts_us = NOW + 1_000_003 * self.seq
            eid = f"{time_prefix(from_micros(ts_us))}-{self.seq:06x}"
            docs.append(Doc(eid, ts_us, self.seq % 1000, tf, sum(tf.values()) + 1))
        with self.space.transaction():
            self.text.add(owner, docs)
        self.model[owner].update({d.eid: d for d in docs})
        return st.sampled_from([(owner, d.eid) for d in docs])

    @precondition(lambda self: any(self.model.values()))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        owner = data.draw(st.sampled_from([o for o, m in self.model.items() if m]))
        gone = data.draw(st.lists(st.sampled_from(sorted(self.model[owner])), min_size=1, max_size=40, unique=True))
        with self.space.transaction():
            self.text.remove(owner, [(eid, self.model[owner][eid].tf, self.model[owner][eid].tags) for eid in gone])
        for eid in gone:
            del self.model[owner][eid]

    @precondition(lambda self: any(self.model.values()))
    @rule(data=st.data(), level=st.integers(0, 250))
    def relevel(self, data: st.DataObject, level: int) -> None:
        owner = data.draw(st.sampled_from([o for o, m in self.model.items() if m]))
        eids = data.draw(st.lists(st.sampled_from(sorted(self.model[owner])), min_size=1, max_size=20, unique=True))
        with self.space.transaction():
            self.text.set_levels(owner, [(e, level) for e in eids])
        for e in eids:
            d = self.model[owner][e]
            self.model[owner][e] = Doc(d.eid, d.ts_us, level << 2 | d.code & 3, d.tf, d.dl)

    @invariant()
    def index_equals_model(self) -> None:
        with self.space.snapshot():
            for owner, docs in self.model.items():
                assert text_index_problems(self.text, owner, docs) == []
                fresh = TextIndex(self.space).chunks(owner)  # read now, nothing kept
                assert as_bytes(self.text.chunks(owner)) == as_bytes(fresh)  # kept, or written through by set_levels
                exact = [P.py_chunk_summary(r, lv) for r, lv in zip(fresh.records, fresh.levels, strict=True)]
                assert self.text.chunk_summaries(owner) == exact
                for term in "ah":
                    blocks = self.text.term_blocks(owner, term)
                    assert all(P.block_header(b)[0] <= BLOCK_DOCS for b in blocks)
                    found = P.search([blocks], [1.0], self.text.chunks(owner), PARAMS, NOW)
                    holding = sorted(d.ts_us for d in docs.values() if term in d.tf)
                    assert found.total == len(holding)
                    got = sorted(c.ts_us for c in (self.text.column(owner, doc) for doc in found.docs) if c is not None)
                    assert got == holding

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def test_chunks_kept_from_a_rolled_back_recode_are_read_again(tmp_path: Path) -> None:
    """set_levels keeps the chunks it writes with their new stamps; when its transaction rolls
    back, the stored stamps are the old ones, so the next read returns the stored chunks."""
    store = LMDBStore(tmp_path / "db", sync=False)
    try:
        space = Globals(store)
        text = TextIndex(space)
        docs = [Doc(f"{time_prefix(from_micros(NOW + i))}-{i:06x}", NOW + i, 4, {"a": 1}, 2) for i in range(3)]
        with space.transaction():
            text.add("ana", docs)
        with space.snapshot():
            before = as_bytes(text.chunks("ana"))
        with space.transaction():
            text.set_levels("ana", [(docs[0].eid, 2)])
        with space.snapshot():
            recoded = as_bytes(text.chunks("ana"))
            assert recoded != before and recoded == as_bytes(TextIndex(space).chunks("ana"))
        with pytest.raises(RuntimeError), space.transaction():
            text.set_levels("ana", [(docs[0].eid, 3)])
            raise RuntimeError("roll back")
        with space.snapshot():
            assert as_bytes(text.chunks("ana")) == recoded
            fresh = TextIndex(space).chunks("ana")
            assert text.chunk_summaries("ana") == [P.py_chunk_summary(r, lv) for r, lv in zip(fresh.records, fresh.levels, strict=True)]
    finally:
        store.close()


def test_the_kernel_arrays_kept_with_the_chunks_follow_a_level_change(tmp_path: Path) -> None:
    """The kernel's pointers to an owner's chunks are built once per chunks object and kept with
    it; a level change makes a new chunks object, so the next search reads the new levels (in C
    and in the twin alike)."""
    store = LMDBStore(tmp_path / "db", sync=False)
    try:
        space = Globals(store)
        text = TextIndex(space)
        docs = [Doc(f"{time_prefix(from_micros(NOW + i))}-{i:06x}", NOW + i, 4 << 2, {"a": 1}, 2) for i in range(3)]
        with space.transaction():
            text.add("ana", docs)
        with space.snapshot():
            chunks = text.chunks("ana")
            blocks = text.term_blocks("ana", "a")
            first = P.search([blocks], [1.0], chunks, PARAMS, NOW, summaries=text.chunk_summaries("ana", chunks))
            kept = chunks.derived.get("kernel")
            again = P.search([blocks], [1.0], text.chunks("ana"), PARAMS, NOW, summaries=text.chunk_summaries("ana"))
            assert (kept is not None) == (native.search_lib()[0] is not None)  # the twin keeps none
            assert text.chunks("ana") is chunks and chunks.derived.get("kernel") is kept
            assert again == first and [c[2] >> 2 for c in first.columns] == [4, 4, 4]
        with space.transaction():
            text.set_levels("ana", [(docs[1].eid, 9)])
        with space.snapshot():
            moved = text.chunks("ana")
            assert moved is not chunks
            found = P.search([blocks], [1.0], moved, PARAMS, NOW, summaries=text.chunk_summaries("ana", moved))
            assert [c[2] >> 2 for c in found.columns] == [4, 9, 4]
            assert text.chunk_summaries("ana", moved)[0][1] == 9
    finally:
        store.close()


def _stored(store: LMDBStore) -> dict[bytes, bytes]:
    with store.read() as txn:
        return dict(txn.scan(b"", b"\xff" * 8))


def test_an_access_flush_rewrites_only_level_chunks(tmp_path: Path) -> None:
    """A relevance change (what an access flush writes) rewrites the level chunks it falls in and
    their stamps, about 1 KB a chunk: no column record, no record stamp; a level already held
    writes nothing."""
    store = LMDBStore(tmp_path / "db", sync=False)
    try:
        space = Globals(store)
        text = TextIndex(space)
        docs = [
            Doc(f"{time_prefix(from_micros(NOW + i))}-{i:06x}", NOW + i, 4 * (i % 7) | i % 4, {"a": 1}, 2) for i in range(8 * CHUNK_DOCS)
        ]
        with space.transaction():
            text.add("ana", docs)
        before = _stored(store)
        releveled = docs[:: CHUNK_DOCS // 2]  # two documents in each of the 8 chunks
        with space.transaction():
            text.set_levels("ana", [(d.eid, (d.code >> 2) + 10) for d in releveled])
        after = _stored(store)
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        assert before.keys() == after.keys()
        level_chunks = {text.levels.key(("ana", c)) for c in range(8)}
        assert changed.keys() == level_chunks | {text.level_stamps.key(("ana",))}
        assert sum(len(v) for v in changed.values()) < 8 * (CHUNK_DOCS + 16) + 8 * 8 + 16  # a record chunk alone is 20 KB
        with space.snapshot():
            want = {d.eid: d for d in docs} | {d.eid: Doc(d.eid, d.ts_us, d.code + 40, d.tf, d.dl) for d in releveled}
            assert text_index_problems(text, "ana", want) == []
            assert text.column("ana", CHUNK_DOCS // 2) == P.Column(
                NOW + CHUNK_DOCS // 2, CHUNK_DOCS // 2, 2, want[releveled[1].eid].code, True
            )
        with space.transaction():
            text.set_levels("ana", [(d.eid, (d.code >> 2) + 10) for d in releveled[:3]])  # as they are
        assert _stored(store) == after
    finally:
        store.close()


TestTextIndexMachine = TextIndexMachine.TestCase
TestTextIndexMachine.settings = settings(max_examples=25, stateful_step_count=15, deadline=None)


@settings(max_examples=100, deadline=None)
@given(corpora, st.lists(st.sampled_from("abcdefz"), min_size=1, max_size=4, unique=True), st.data())
def test_looking_up_documents_equals_their_postings(corpus: list[Any], terms: list[str], data: st.DataObject) -> None:
    """``lookup_tfs`` (C and twin) gives each asked document's frequency of each term, absent
    ones and documents in no block included, decoding only blocks that can hold one."""
    blocks, _, docs = build(corpus, 1)
    asked = sorted(data.draw(st.sets(st.integers(0, 2 * len(docs) + 3), max_size=40)))
    per_term = [blocks.get(t, []) for t in terms]
    want = [[docs[d // 2].tf.get(t, 0) if d % 2 == 0 and d // 2 < len(docs) else 0 for t in terms] for d in asked]
    assert P.py_lookup_tfs(per_term, asked) == want
    assert P.lookup_tfs(per_term, asked) == want


@given(st.binary(max_size=70_000))
def test_packing_a_block_equals_msgpack(data: bytes) -> None:
    assert P._pack_bin(data) == codec.pack_value(data)


ROLE_PARAMS = SearchParams(avgdl=7.5, k1=1.2, b=0.75, week_us=7 * 86_400e6, text_level=0.05 / 10 / 25, text_weight=0.9,
                           recency_weight=0.05, slack=1e-9, max_level=250.0, boost=0.1)  # fmt: skip


def role_reference(docs: list[Doc], terms: list[str], roles: list[int], idf: list[float]) -> list[tuple[int, float, float]]:
    """(position, bm25, lower bound) of every match when each list has a role: a MATCH or BOOST
    list's documents match, every REQUIRE list must hold a match, MATCH and RANK lists are
    scored, a BOOST list's documents score 0.1 more. The same expressions as the kernel's."""
    out = []
    for i, d in enumerate(docs):
        held = [t in d.tf for t in terms]
        if not any(h for h, r in zip(held, roles, strict=True) if r in (P.MATCH, P.BOOST)):
            continue
        if not all(h for h, r in zip(held, roles, strict=True) if r == P.REQUIRE):
            continue
        bm = 0.0
        for t, w, r in zip(terms, idf, roles, strict=True):
            if t in d.tf and r in (P.MATCH, P.RANK):
                bm += bm25_of(w, d.tf[t], d.dl)
        out.append((i, bm, any(h for h, r in zip(held, roles, strict=True) if r == P.BOOST)))
    best = max((bm for _, bm, _ in out), default=0.0) or 1.0
    lows = []
    for i, bm, boosted in out:
        low = 0.9 * bm / best + ROLE_PARAMS.text_level * float(docs[i].code >> 2)
        low += 0.05 * math.pow(0.5, float(max(NOW - docs[i].ts_us, 0)) / ROLE_PARAMS.week_us)
        lows.append((i, bm, low + 0.1 if boosted else low))
    return lows


@settings(max_examples=150, deadline=None)
@given(
    corpora,
    st.lists(
        st.tuples(st.sampled_from("abcdefz"), st.sampled_from([P.MATCH, P.RANK, P.BOOST, P.REQUIRE])),
        min_size=1,
        max_size=5,
        unique_by=lambda x: x[0],
    ),
    st.sampled_from([0, 1, 3, 10]),
    st.sampled_from([1, 700]),
    st.booleans(),
)
def test_the_kernel_with_list_roles_equals_the_reference_and_c_the_twin(
    corpus: list[Any], lists: list[tuple[str, int]], keep: int, gaps: int, summarised: bool
) -> None:
    """Roles: totals, best BM25 and exactly the documents within one level of the k-th lower
    bound, as the plain reference computes them, with or without the chunks' summaries; C and
    the twin bit for bit (when C is in use)."""
    blocks, chunks, docs = build(corpus, gaps)
    terms, roles = [t for t, _ in lists], [r for _, r in lists]
    idf = [0.3 + 0.2 * "abcdefz".index(t) for t in terms]
    summaries = summaries_of(chunks, summarised)
    args = ([blocks.get(t, []) for t in terms], idf, chunks, ROLE_PARAMS, NOW, None, None, None, keep, roles, summaries)
    found = P.py_search(*args)
    want = role_reference(docs, terms, roles, idf)
    assert found.total == len(want) and found.best == max((bm for _, bm, _ in want), default=0.0)
    positions = [doc // (gaps + 1) for doc in found.docs]
    bm_of = {i: bm for i, bm, _ in want}
    assert all(bm == bm_of[p] for p, bm in zip(positions, found.bm25, strict=True))
    if keep == 0 or len(want) <= keep:
        assert positions == [i for i, _, _ in want]
    else:
        cut = sorted((low for _, _, low in want), reverse=True)[keep - 1] - ROLE_PARAMS.text_level - 1e-9
        assert positions == [i for i, _, low in want if low >= cut]  # no document that can rank is missing, and no other
    if C:
        c = P._c_search(*args)
        assert (c.total, c.docs, c.tfs, c.dls) == (found.total, found.docs, found.tfs, found.dls)
        assert [struct.pack("<d", x) for x in [c.best, *c.bm25]] == [struct.pack("<d", x) for x in [found.best, *found.bm25]]


@settings(max_examples=150, deadline=None)
@given(
    corpora,
    st.lists(
        st.tuples(st.sampled_from("abcdefz"), st.sampled_from([P.MATCH, P.RANK, P.BOOST, P.REQUIRE])),
        min_size=1,
        max_size=4,
        unique_by=lambda x: x[0],
    ),
    st.one_of(st.none(), st.integers(0, 60 * 86_400)),
    st.one_of(st.none(), st.integers(0, 60 * 86_400)),
    st.one_of(st.none(), st.integers(0, 4)),  # 4: ANY_OUTCOME
    st.sampled_from([0, 1, 700]),
)
def test_counting_outside_a_window_is_what_search_finds_there(
    corpus: list[Any], lists: list[tuple[str, int]], lo_age: int | None, hi_age: int | None, outcome: int | None, gaps: int
) -> None:
    """count_outside: the matches ``search`` finds before the window (and the newest of them) and
    from its end on, with the same roles and outcome; C and the twin alike."""
    blocks, chunks, _ = build(corpus, gaps)
    terms, roles = [t for t, _ in lists], [r for _, r in lists]
    given_lists, idf = [blocks.get(t, []) for t in terms], [0.0] * len(terms)
    lo = NOW - lo_age * 1_000_000 if lo_age is not None else None
    hi = NOW - hi_age * 1_000_000 + 1 if hi_age is not None else None
    before = P.py_search(given_lists, idf, chunks, ROLE_PARAMS, NOW, None, lo, outcome, 0, roles) if lo is not None else None
    after = P.py_search(given_lists, idf, chunks, ROLE_PARAMS, NOW, hi, None, outcome, 0, roles) if hi is not None else None
    want = (
        before.total if before else 0,
        max((ts for ts, _, _ in before.columns), default=None) if before else None,
        after.total if after else 0,
    )
    assert P.py_count_outside(given_lists, chunks, lo, hi, outcome, roles) == want
    if C:
        assert P._c_count_outside(given_lists, chunks, lo, hi, outcome, roles) == want
        stored = [P.StoredList(b"".join(codec.pack_value(b) for b in bs)) for bs in given_lists]
        assert P._c_count_outside(stored, chunks, lo, hi, outcome, roles) == want


def test_counting_outside_refuses_damage_as_search_does() -> None:
    """A damaged block, blocks out of order, or a document without a live column are refused
    alike by C and the twin; a RANK list is not read, so its damage is not seen, stored as one
    value or not (C split a stored one into its blocks, and refused it where the twin counted)."""
    blocks, chunks, _ = build([({"a": 1, "b": 2}, 1, 4, 0), ({"a": 1}, 1, 8, 10)], 0)
    for fn in (P.py_count_outside, P._c_count_outside) if C else (P.py_count_outside,):
        assert fn([blocks["a"]], chunks, NOW - 5_000_000, NOW, None, None) == (1, NOW - 10_000_000, 1)
        for rank in ([b"\x01"], P.StoredList(b"\xc4\x09\x01"), P.StoredList(codec.pack_value(blocks["b"][0])[:-1])):
            assert fn([blocks["a"], rank], chunks, NOW + 1, None, None, [P.MATCH, P.RANK]) == (2, NOW, 0)
            assert fn([rank, blocks["a"]], chunks, NOW + 1, None, None, [P.RANK, P.MATCH]) == (2, NOW, 0)
        for damaged in ([blocks["a"][0][:-1]], [P.encode_block([1], [1], 1), P.encode_block([0], [1], 1)]):
            with pytest.raises(CorruptValueError, match="damaged"):
                fn([damaged], chunks, NOW, None, None, None)
        with pytest.raises(CorruptValueError, match="document 5 has no column record"):
            fn([[P.encode_block([5], [1], 1)]], chunks, NOW, None, None, None)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from("ab"), st.integers(1, 4), max_size=2).flatmap(
                lambda tf: st.integers(1, 4).map(lambda r: {**tf, "r": r})  # "r" in every document
            ),
            st.integers(1, 30),
            st.integers(0, 1000),
            st.integers(0, 60 * 86_400),
        ),
        min_size=1,
        max_size=300,
    ),
    st.booleans(),
    st.sampled_from([1, 3, 10]),
    st.sampled_from([1, 700]),
)
def test_a_long_rank_list_is_looked_up_with_the_same_answer(corpus: list[Any], boost: bool, keep: int, gaps: int) -> None:
    """A RANK list longer than the matching lists is read by its headers and decoded only where a
    scored document may be; the candidates are still exactly those within one level of the k-th
    lower bound, and C equals the twin."""
    blocks, chunks, docs = build(corpus, gaps)
    lists = [("a", P.MATCH), ("r", P.RANK)] + ([("b", P.BOOST)] if boost else [])
    terms, roles = [t for t, _ in lists], [r for _, r in lists]
    idf = [1.1, 0.4, 0.7][: len(terms)]
    args = ([blocks.get(t, []) for t in terms], idf, chunks, ROLE_PARAMS, NOW, None, None, None, keep, roles, summaries_of(chunks, True))
    found = P.py_search(*args)
    want = role_reference(docs, terms, roles, idf)
    positions = [doc // (gaps + 1) for doc in found.docs]
    assert found.total == len(want) and found.best == max((bm for _, bm, _ in want), default=0.0)
    if len(want) <= keep:
        assert positions == [i for i, _, _ in want]
    else:
        cut = sorted((low for _, _, low in want), reverse=True)[keep - 1] - ROLE_PARAMS.text_level - 1e-9
        assert positions == [i for i, _, low in want if low >= cut]
    assert [tfs for tfs in found.tfs] == [[docs[i].tf.get(t, 0) for t in terms] for i in positions]
    if C:
        assert P._c_search(*args) == found


def test_a_boost_list_lifts_its_document_over_an_equal_match() -> None:
    """Two documents match the word alike; the one in the BOOST list is the only candidate for
    the top 1 (its bound is 0.1 higher), and without the boost the other, shorter one is."""
    one = P.TF_UNIT  # one occurrence each, as capture counts it
    blocks, chunks, _ = build([({"a": one}, one, 400, 0), ({"a": one, "b": one}, one, 400, 0)], 1)
    lists, roles = [blocks["a"], blocks["b"]], [P.MATCH, P.BOOST]
    params = SearchParams(**{**ROLE_PARAMS.__dict__, "avgdl": ROLE_PARAMS.avgdl * one})  # lengths in the same units
    for fn in (P.py_search, P._c_search) if C else (P.py_search,):
        boosted = fn(lists, [0.3, 0.5], chunks, params, NOW, None, None, None, 1, roles)
        assert boosted.docs == [2] and boosted.total == 2
        plain = fn(lists, [0.3, 0.5], chunks, SearchParams(**{**params.__dict__, "boost": 0.0}), NOW, None, None, None, 1, roles)
        assert plain.docs == [0]
        required = fn(lists, [0.3, 0.5], chunks, params, NOW, None, None, None, 0, [P.MATCH, P.REQUIRE])
        assert required.docs == [2] and required.total == 1  # REQUIRE: only the document in both
        ranked = fn(lists, [0.3, 0.5], chunks, params, NOW, None, None, None, 0, [P.RANK, P.MATCH])
        assert ranked.docs == [2] and ranked.tfs == [[one, one]]  # RANK alone matches nothing; it scores


@needs_c
def test_a_dropped_database_with_kernel_buffers_is_collected_cleanly(tmp_path: Path) -> None:
    """The kernel keeps pointers to the owner's column chunks between calls. They were buffers
    held over memoryviews, which refuse the garbage collector's clear ("BufferError: memoryview
    has 1 exported buffer"): a process that upgraded a database and then asked it a question
    died of a segmentation fault as it exited (``memdb ask`` returned -11). Run in a process of
    its own, as such a crash would take the test run with it."""
    import subprocess
    import sys

    import memdb

    path = tmp_path / "db"
    with memdb.open(path) as db:
        mem = db.owner("ana")
        for i in range(3):
            mem.record("debug", f"Deploy {i} failed on the billing service", outcome="failure", tags=["deploy", "billing"])
        db.globals["META"].set(("layout",), 14)  # an older layout: the next open upgrades it
    done = subprocess.run(
        [sys.executable, "-m", "memdb.cli", "ask", "--db", str(path), "--owner", "ana", "What happened with billing deploys?"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "BufferError" not in done.stderr, done.stderr[-500:]
    assert "Deploy 2 failed" in done.stdout
