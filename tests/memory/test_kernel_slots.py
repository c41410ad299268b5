"""A thread's result arrays for the search kernel (``memdb.memory.postings._SearchSlots``) are
made once and reused: the next search makes none, and one after a larger search reads no row
the larger wrote (C answers as the twin, bit for bit)."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from memdb import native
from memdb.memory import postings as P
from memdb.memory.postings import CHUNK_DOCS, SearchParams

pytestmark = pytest.mark.skipif(native.search_lib()[0] is None, reason="the C kernel is not in use (MEMDB_PURE_PYTHON, or not built)")

PARAMS = SearchParams(avgdl=7.5, k1=1.2, b=0.75, week_us=7 * 86_400e6, text_level=0.05 / 10 / 25, text_weight=0.9,
                      recency_weight=0.05, slack=1e-9, max_level=250.0)  # fmt: skip
NOW = 1_800_000_000_000_000


def corpus(n: int) -> tuple[dict[str, list[bytes]], P.ColumnChunks]:
    """Blocks of terms a (every document), b (every other), c (every third), and the columns of ``n`` documents."""
    postings: dict[str, list[tuple[int, int]]] = {"a": [], "b": [], "c": []}
    records, levels = bytearray(), bytearray()
    for doc in range(n):
        records += P.pack_record(NOW - doc * 3_600_000_000, doc, 5 + doc % 7, doc % 3)
        levels.append(doc % 200)
        for term, every in (("a", 1), ("b", 2), ("c", 3)):
            if doc % every == 0:
                postings[term].append((doc, 1 + doc % 4))
    assert n <= CHUNK_DOCS
    blocks = {
        t: [P.encode_block([d for d, _ in ps[i : i + 64]], [tf for _, tf in ps[i : i + 64]], 5) for i in range(0, len(ps), 64)]
        for t, ps in postings.items()
    }
    return blocks, P.ColumnChunks([bytes(records)], [bytes(levels)])


def same(c: P.Found, twin: P.Found) -> bool:
    bits = [struct.pack("<d", x) for x in [c.best, *c.bm25]] == [struct.pack("<d", x) for x in [twin.best, *twin.bm25]]
    return bits and (c.total, c.docs, c.tfs, c.dls, c.columns) == (twin.total, twin.docs, twin.tfs, twin.dls, twin.columns)


def test_a_search_after_a_larger_one_answers_as_the_twin() -> None:
    blocks, chunks = corpus(400)
    every = ([blocks["a"], blocks["b"], blocks["c"]], [1.0, 0.5, 0.25], chunks, PARAMS, NOW, None, None, None, 0)  # all 400 rows
    few = ([blocks["c"]], [0.7], chunks, PARAMS, NOW, NOW - 50 * 3_600_000_000, None, None, 3)  # a window's top 3
    for args in (every, few, every, few):
        assert same(P._c_search(*args), P.py_search(*args))


class _CountingFFI:
    """The kernel's ``ffi``, counting the arrays it makes."""

    def __init__(self, ffi: Any) -> None:
        self._ffi, self.made = ffi, 0

    def new(self, *args: Any) -> Any:
        self.made += 1
        return self._ffi.new(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ffi, name)


def test_a_thread_s_next_search_makes_no_result_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks, chunks = corpus(200)
    lib, ffi = native.search_lib()
    counting = _CountingFFI(ffi)
    monkeypatch.setattr(native, "search_lib", lambda: (lib, counting))
    args = ([blocks["a"], blocks["b"]], [1.0, 0.5], chunks, PARAMS, NOW, None, None, None, 25)
    first = P._c_search(*args)
    counting.made = 0
    assert same(P._c_search(*args), first)
    # only the input's: its blocks' pointers and lengths, the struct, the lists' block counts, their weights
    assert counting.made <= 5
