"""The text index (DESIGN 6b): posting blocks and per-document columns, each reader beside its
writer, and the search kernel that reads them (C in ``native/search.c``, its pure-Python twin here).

Layout (every key starts with the owner, so scoping stays structural)::

    ^EPDN(owner, id) = doc              the episode's document number while it is hot
    ^EPX(owner, term, first) = block    the term's postings, ``BLOCK_DOCS`` documents a block
    ^EPC(owner, chunk) = records        columns of documents chunk * 1024 ... in order
    ^EPCV(owner) = stamps               a random u64 per chunk, new at each write of the chunk
    ^EPL(owner, chunk) = levels         the same documents' relevance levels, a byte each
    ^EPLV(owner) = stamps               a random u64 per level chunk, new at each write of it
    ^EPDF(owner, term) = df             documents holding the term
    ^EPN(owner, "next_doc")             the next document number (numbers are never reused)

Document numbers are dense per owner and handed out at capture in order, so postings only
ever append: an episode whose text changes, or that comes back from cold storage, gets a
new number, and the old one's postings are removed and its record zeroed (after
``compact()`` no byte of an erased episode's terms, time or id remains).

A block: ``u16 n, u16 max_tf, u32 min_dl, u32 first, u32 last`` then ``n`` varint pairs
``(gap, tf)``; the first gap is 0. A tf (and a length) counts in ``TF_UNIT``s: an occurrence in
an episode's own text is ``TF_UNIT``, one in its context less (``memdb.memory.layout.terms_of``),
and BM25 reads ``tf / TF_UNIT``. ``max_tf`` and ``min_dl`` bound every posting of the
block, so its best BM25 is known from the header (block-max pruning). A record (20 bytes):
``i64 ts_us, u32 id suffix, u32 dl, u16 outcome, u8 live, u8 0``; the id is its time and
suffix (``memdb.memory.ids``), so a document needs no reverse map. A level chunk holds one
byte per record of its column chunk, in the same order: the document's relevance level (its
index code is ``level << 2 | outcome``; 0 for a zeroed record). The level is the one part
that changes as episodes are read, so an access flush rewrites level chunks (1 KB each) and
their stamps, and reads no record (20 KB a chunk): ``tests/memory/test_postings.py::
test_an_access_flush_rewrites_only_level_chunks``.

Reading: a query needs every column chunk its matches fall in (at 100,000 documents, all of
about a hundred), records and levels. A process keeps the chunks it read with their stamps,
and a query reads the two stamps values and fetches only the chunks whose stamp changed: the
stamps are written in the chunks' own transaction, so a kept chunk is exactly the stored one,
whichever process wrote it.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import os
import struct
import threading
from array import array
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache, partial
from typing import Any, Final, TypeVar

from memdb import native
from memdb.engine import codec
from memdb.engine.globals import Global, Globals
from memdb.engine.store import ReadTxn
from memdb.errors import CorruptValueError, ValidationError
from memdb.memory.ids import id_at

__all__ = [
    "ANY_OUTCOME",
    "BLOCK_DOCS",
    "BOOST",
    "CHUNK_DOCS",
    "MATCH",
    "NO_LIVE",
    "RANK",
    "RECORD_BYTES",
    "REQUIRE",
    "TF_UNIT",
    "Column",
    "ColumnChunks",
    "Doc",
    "Found",
    "Outside",
    "SearchParams",
    "StoredList",
    "Summary",
    "TextIndex",
    "chunk_summary",
    "count_outside",
    "decode_block",
    "encode_block",
    "id_of",
    "live_columns",
    "live_record",
    "pack_record",
    "py_chunk_summary",
    "py_count_outside",
    "py_decode_block",
    "py_search",
    "search",
    "stored_tf",
    "unpack_record",
]

BLOCK_DOCS: Final = 128  # documents a block holds (as PISA and Lucene do; a block is a few hundred bytes)
CHUNK_DOCS: Final = 1024  # documents a column chunk holds (20 KB of records, 1 KB of levels)
RECORD_BYTES: Final = 20
_HEADER = struct.Struct("<HHIII")
_RECORD = struct.Struct("<qIIHBB")
_Part = TypeVar("_Part")  # a part of a chunk's summary (TextIndex._summary_part)
TF_UNIT: Final = 3  # what one occurrence of a term in an episode's own text adds to its stored tf (layout 13)
_MAX_TF: Final = 0xFFFF  # a tf is stored up to this (an episode's text is capped far below it)
_ZERO_RECORD: Final = bytes(RECORD_BYTES)
_WRITES_BATCH: Final = 4096  # block rewrites ``TextIndex.remove`` collects before writing them
_MORE_ROOM, _BAD_BLOCK, _BAD_COLUMN, _NO_MEMORY = -1, -2, -3, -4  # memdb_text_search's return codes (search.h)
_BAD_INPUT, _STAGE_NEW = -5, 0xFFFFFFFF  # memdb_stage_blocks' (blocks.h)
ANY_OUTCOME = 4
"""The outcome filter of ``search`` that passes every document with an outcome (an attempt, not
talk): ``MEMDB_ANY_OUTCOME`` in native/search.h."""
MATCH, RANK, BOOST, REQUIRE = 0, 1, 2, 3
"""What a list of a search is: a query word's postings (its documents match, its tf is scored), a
word that only ranks, a boost tag's documents (they match and score ``boost`` more), a required
tag's documents (a match must be in every such list). Tag lists are not scored."""


@dataclass(frozen=True)
class Doc:
    """One hot episode as the text index sees it."""

    eid: str
    ts_us: int
    code: int  # its index code (relevance level and outcome: ``memdb.memory.layout.index_code``)
    tf: Mapping[str, int]
    dl: int
    tags: Sequence[str] = ()  # its tags, each a list of documents beside the terms' (^EPXT)


_StagedDoc = tuple[int, str, int, int, int, tuple[str, ...], tuple[int, ...], tuple[str, ...]]
"""A Doc as ``TextIndex.add`` stages it for ``_write_docs``: its number, eid, ts_us, code, dl,
terms, their tfs (in the terms' order) and tags."""


@dataclass(frozen=True)
class Column:
    """A document's column record."""

    ts_us: int
    suffix: int
    dl: int
    code: int  # its index code: the level from its level chunk, the outcome from its record
    live: bool


@dataclass(frozen=True)
class ColumnChunks:
    """An owner's column chunks as a query reads them (``TextIndex.chunks``), by chunk number
    (None where none was written): the records, and the level chunk beside each.

    ``derived`` keeps what readers make of these chunks (their summaries, the kernel's arrays of
    them) for as long as the object lives: ``TextIndex.chunks`` returns the same object while no
    chunk changed, so a query of an owner with a million documents does not rebuild its two
    thousand chunk pointers each time."""

    records: Sequence[bytes | memoryview | None]
    levels: Sequence[bytes | memoryview | None]
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


# --- formats ------------------------------------------------------------------------------------


def _varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def encode_block(docs: Sequence[int], tfs: Sequence[int], min_dl: int) -> bytes:
    """A block of ascending documents with their term frequencies (stored up to 65,535);
    ``min_dl`` bounds their lengths."""
    if len(docs) == 1 and tfs[0] < 0x80:  # a new term's first block (most a capture batch writes)
        return _HEADER.pack(1, tfs[0], min_dl, docs[0], docs[0]) + b"\0" + _ONE_BYTE[tfs[0]]
    body = bytearray(_HEADER.size)
    prev = docs[0]
    for doc, tf in zip(docs, tfs, strict=True):
        gap = doc - prev
        if tf > _MAX_TF:
            tf = _MAX_TF
        if gap < 0x80 and tf < 0x80:  # nearly always: one byte each (as _append)
            body += _ONE_BYTE[gap] + _ONE_BYTE[tf]
        else:
            _varint(gap, body)
            _varint(tf, body)
        prev = doc
    _HEADER.pack_into(body, 0, len(docs), min(max(tfs), _MAX_TF), min_dl, docs[0], docs[-1])
    return bytes(body)


_ONE_BYTE: Final = tuple(bytes((i,)) for i in range(0x80))


def _append(block: bytes | memoryview, entries: Sequence[tuple[int, int, int]]) -> bytes:
    """``block`` with more documents (doc, tf, dl; ascending) after its last, in one pass:
    capture's hot path, where a batch appends dozens of documents to a common term's block."""
    n, max_tf, min_dl, first, last = _HEADER.unpack_from(block)
    body = bytearray(block)
    for doc, tf, dl in entries:
        if tf > _MAX_TF:
            tf = _MAX_TF
        gap = doc - last
        if gap < 0x80 and tf < 0x80:  # nearly always: one byte each
            body += _ONE_BYTE[gap] + _ONE_BYTE[tf]
        else:
            _varint(gap, body)
            _varint(tf, body)
        if tf > max_tf:
            max_tf = tf
        if dl < min_dl:
            min_dl = dl
        last = doc
    _HEADER.pack_into(body, 0, n + len(entries), max_tf, min_dl, first, last)
    return bytes(body)


def block_header(block: bytes | memoryview) -> tuple[int, int, int, int, int]:
    """``(n, max_tf, min_dl, first, last)`` of a block."""
    if len(block) < _HEADER.size:
        raise CorruptValueError(f"a posting block is damaged: {len(block)} bytes, shorter than its header ({CorruptValueError.HINT})")
    n, max_tf, min_dl, first, last = _HEADER.unpack_from(block)
    return n, max_tf, min_dl, first, last


Staged = tuple[int, int | None, bytes, int]
"""A block ``stage_blocks`` writes: its term's index, the index of its first document (None: the
term's last block, rewritten under its key), its value as stored, and how many documents it holds."""


def _damaged_tail(t: int) -> CorruptValueError:
    return CorruptValueError(
        f"a posting block is damaged: term {t}'s last block is full or ends after its next document ({CorruptValueError.HINT})"
    )


def py_stage_blocks(
    numbers: Sequence[int],
    dls: Sequence[int],
    ends: Sequence[int],
    terms: Sequence[int],
    tfs: Sequence[int],
    tails: Sequence[bytes | memoryview | None],
) -> list[Staged]:
    """The blocks that append a transaction's postings to their terms (the twin of
    ``memdb_stage_blocks``, native/blocks.h): documents ``numbers`` (ascending, lengths ``dls``),
    the i-th holding postings ``ends[i-1]:ends[i]`` of ``terms`` (indices into ``tails``) with
    ``tfs``; each term's last block (None: none, or full) filled first, then new blocks, term
    after term. ValidationError for documents out of order; CorruptValueError for a last block
    that is damaged, full or ends after the term's first document here."""
    if any(b < a for a, b in itertools.pairwise(numbers)) or any(b < a for a, b in itertools.pairwise(ends)):
        raise ValidationError("text index documents: not in ascending order (give them as next_numbers does)")
    per_term: list[list[int]] = [[] for _ in tails]  # each term's postings, as indices into terms
    for p, t in enumerate(terms[: ends[-1] if ends else 0]):
        per_term[t].append(p)
    doc_of = list(itertools.chain.from_iterable(itertools.repeat(i, b - a) for i, (a, b) in enumerate(itertools.pairwise([0, *ends]))))
    out: list[Staged] = []
    for t, postings in enumerate(per_term):
        if not postings:
            continue
        entries = [(numbers[doc_of[p]], tfs[p], dls[doc_of[p]]) for p in postings]
        k = 0
        tail = tails[t]
        if tail is not None:
            n, _, _, _, last = block_header(tail)
            if n >= BLOCK_DOCS or entries[0][0] < last:
                raise _damaged_tail(t)
            k = min(BLOCK_DOCS - n, len(entries))
            out.append((t, None, _pack_bin(_append(tail, entries[:k])), n + k))
        for at in range(k, len(entries), BLOCK_DOCS):
            part = entries[at : at + BLOCK_DOCS]
            docs, part_tfs, part_dls = zip(*part, strict=True)
            out.append((t, doc_of[postings[at]], _pack_bin(encode_block(docs, part_tfs, min(part_dls))), len(part)))
    return out


def _c_stage_blocks(
    numbers: Sequence[int],
    dls: Sequence[int],
    ends: Sequence[int],
    terms: Sequence[int],
    tfs: Sequence[int],
    tails: Sequence[bytes | memoryview | None],
) -> list[Staged]:
    """``py_stage_blocks`` by ``memdb_stage_blocks``."""
    lib, ffi = native.blocks_lib()
    try:
        c_numbers, c_dls, c_terms = array("I", numbers), array("I", dls), array("I", terms)
        c_tfs = array("I", tfs)
    except OverflowError:  # a number past 32 bits, or a tf, clamped in the twin: left to it
        return py_stage_blocks(numbers, dls, ends, terms, tfs, tails)
    n_pairs = ends[-1] if ends else 0
    if len(c_terms) < n_pairs or len(c_tfs) < n_pairs or len(c_dls) < len(c_numbers) or len(ends) != len(c_numbers):
        raise ValueError("stage_blocks: fewer terms, tfs or lengths than the documents say")
    blob = b"".join(t for t in tails if t is not None)
    tail_end = list(itertools.accumulate(len(t) if t is not None else 0 for t in tails))
    block_cap = 2 * len(tails) + n_pairs // BLOCK_DOCS + 1
    out_cap = len(blob) + 8 * n_pairs + 21 * block_cap
    out = ffi.new("unsigned char[]", out_cap)
    out_end, bad = ffi.new("size_t[]", block_cap), ffi.new("size_t *")
    out_term, out_first, out_n = (ffi.new("uint32_t[]", block_cap) for _ in range(3))
    n = lib.memdb_stage_blocks(
        len(c_numbers),
        ffi.from_buffer("uint32_t[]", c_numbers),
        ffi.from_buffer("uint32_t[]", c_dls),
        ffi.new("size_t[]", ends or [0]),
        ffi.from_buffer("uint32_t[]", c_terms),
        ffi.from_buffer("uint32_t[]", c_tfs),
        len(tails),
        blob,
        ffi.new("size_t[]", tail_end or [0]),
        out,
        out_cap,
        out_end,
        out_term,
        out_first,
        out_n,
        block_cap,
        bad,
    )
    if n < 0:
        if n == _BAD_INPUT:
            raise ValidationError("text index documents: not in ascending order (give them as next_numbers does)")
        if n == _BAD_BLOCK:
            if len(tails[bad[0]] or b"") < _HEADER.size:
                block_header(tails[bad[0]] or b"")  # raises, saying how short it is
            raise _damaged_tail(bad[0])
        _raise_for(n, 0, "capture")
        raise AssertionError(f"memdb_stage_blocks returned {n}")  # MORE_ROOM: the caps above always suffice
    data = ffi.buffer(out, out_end[n - 1])[:] if n else b""
    ends_out = ffi.unpack(out_end, n)
    starts = [0, *ends_out]
    none = _STAGE_NEW
    return [
        (t, None if first == none else first, data[a:b], k)
        for t, first, a, b, k in zip(
            ffi.unpack(out_term, n), ffi.unpack(out_first, n), starts, ends_out, ffi.unpack(out_n, n), strict=False
        )
    ]


def stage_blocks(
    numbers: Sequence[int],
    dls: Sequence[int],
    ends: Sequence[int],
    terms: Sequence[int],
    tfs: Sequence[int],
    tails: Sequence[bytes | memoryview | None],
) -> list[Staged]:
    """``py_stage_blocks`` by the C kernel when it is in use."""
    if native.blocks_lib()[0] is None:
        return py_stage_blocks(numbers, dls, ends, terms, tfs, tails)
    return _c_stage_blocks(numbers, dls, ends, terms, tfs, tails)


def py_decode_block(block: bytes | memoryview) -> tuple[list[int], list[int]]:
    """``(docs, tfs)`` of a block (the twin of ``memdb_decode_block``); CorruptValueError if damaged."""
    damaged = CorruptValueError(f"a posting block is damaged ({CorruptValueError.HINT})")
    if len(block) < _HEADER.size:
        raise damaged
    n, max_tf, _, first, last = _HEADER.unpack_from(block)
    if n == 0:
        raise damaged
    docs: list[int] = []
    tfs: list[int] = []
    pos, end, doc = _HEADER.size, len(block), 0
    for i in range(n):
        values = []
        for _ in range(2):
            v = shift = 0
            while True:
                if pos >= end or shift > 28:
                    raise damaged
                c = block[pos]
                pos += 1
                v |= (c & 0x7F) << shift
                if not c & 0x80:
                    break
                shift += 7
            if v > 0xFFFFFFFF:
                raise damaged
            values.append(v)
        gap, tf = values
        if tf == 0 or tf > max_tf:
            raise damaged
        if i == 0:
            if gap != 0:
                raise damaged
            doc = first
        else:
            if gap == 0 or doc + gap > 0xFFFFFFFF:
                raise damaged
            doc += gap
        docs.append(doc)
        tfs.append(tf)
    if pos != end or doc != last:
        raise damaged
    return docs, tfs


def decode_block(block: bytes | memoryview) -> tuple[list[int], list[int]]:
    """``(docs, tfs)`` of a block, by the C kernel when it is in use."""
    lib, ffi = native.search_lib()
    if lib is None or len(block) < _HEADER.size:
        return py_decode_block(block)
    room = max(struct.unpack_from("<H", block)[0], 1)
    docs = ffi.new("uint32_t[]", room)
    tfs = ffi.new("uint32_t[]", room)
    n = lib.memdb_decode_block(ffi.from_buffer(block), len(block), docs, tfs)
    if n < 0:
        raise CorruptValueError(f"a posting block is damaged ({CorruptValueError.HINT})")
    return list(docs[0:n]), list(tfs[0:n])


def pack_record(ts_us: int, suffix: int, dl: int, outcome: int) -> bytes:
    """A live document's column record (its level goes in the level chunk beside it)."""
    return _RECORD.pack(ts_us, suffix, dl, outcome, 1, 0)


def unpack_record(chunk: bytes | memoryview, levels: bytes | memoryview | None, doc: int) -> Column | None:
    """The column record of ``doc`` in its chunk with its level (0 when ``levels`` stops before
    it), or None if the chunk stops before it."""
    off = doc % CHUNK_DOCS * RECORD_BYTES
    if len(chunk) < off + RECORD_BYTES:
        return None
    ts, suffix, dl, outcome, live, _ = _RECORD.unpack_from(chunk, off)
    i = doc % CHUNK_DOCS
    level = levels[i] if levels is not None and i < len(levels) else 0
    return Column(ts, suffix, dl, level << 2 | outcome & 3, live == 1)


def live_record(chunks: ColumnChunks, doc: int) -> Column:
    """The live column record of ``doc`` in an owner's chunks (``TextIndex.chunks``) with its
    level; CorruptValueError when it has none, or no level: every document in a block has both."""
    c, i = divmod(doc, CHUNK_DOCS)
    chunk = chunks.records[c] if c < len(chunks.records) else None
    levels = chunks.levels[c] if c < len(chunks.levels) else None
    if chunk is None or levels is None or i >= len(levels):
        raise _no_column(doc)
    col = unpack_record(chunk, levels, doc)
    if col is None or not col.live:
        raise _no_column(doc)
    return col


def _no_column(doc: int) -> CorruptValueError:
    return CorruptValueError(f"text index document {doc} has no column record ({CorruptValueError.HINT})")


def live_columns(chunks: ColumnChunks, docs: Iterable[int]) -> list[tuple[int, int, int]]:
    """``(time, id suffix, index code)`` of each document's live column record, as
    ``live_record`` gives them, without a ``Column`` each: what the twin returns of every match
    (``Found.columns``; the C kernel reads them as it writes its output). CorruptValueError when a
    document has none."""
    out: list[tuple[int, int, int]] = []
    unpack, records, levels = _RECORD.unpack_from, chunks.records, chunks.levels
    n = min(len(records), len(levels))
    for doc in docs:
        c, i = divmod(doc, CHUNK_DOCS)
        chunk = records[c] if c < n else None
        level = levels[c] if c < n else None
        off = i * RECORD_BYTES
        if chunk is None or level is None or len(chunk) < off + RECORD_BYTES or i >= len(level):
            raise _no_column(doc)
        ts, suffix, _, outcome, live, _ = unpack(chunk, off)
        if live != 1:
            raise _no_column(doc)
        out.append((ts, suffix, level[i] << 2 | outcome & 3))
    return out


Summary = tuple[int, int, int]
"""A column chunk's ``chunk_summary``: the newest time among its live records (0 when none), the
highest of its levels, and the oldest time among its live records (``NO_LIVE`` when none, so
oldest > newest says "no live record")."""
NO_LIVE: Final = 2**63 - 1  # INT64_MAX: memdb_chunk_summary's oldest time of a chunk without a live record


def py_chunk_summary(records: bytes | memoryview | None, levels: bytes | memoryview | None) -> Summary:
    """A chunk's ``Summary`` (``(0, 0, NO_LIVE)`` when it has nothing): its newest time and highest
    level bound what any of its documents can add to a lower bound, its oldest and newest time on
    which side of a window its documents lie (the twin of ``memdb_chunk_summary``). A zeroed
    record's level is 0, so the highest level is a live one's."""
    newest, oldest = 0, NO_LIVE
    found = False
    if records is not None:
        for ts, _, _, _, live, _ in _RECORD.iter_unpack(records[: len(records) // RECORD_BYTES * RECORD_BYTES]):
            if live != 1:
                continue
            if not found or ts > newest:
                newest = ts
            oldest = min(oldest, ts)
            found = True
    return newest, max(levels) if levels else 0, oldest


def chunk_summary(records: bytes | memoryview | None, levels: bytes | memoryview | None) -> Summary:
    """``py_chunk_summary``, by the C kernel when it is in use."""
    lib, ffi = native.search_lib()
    if lib is None:
        return py_chunk_summary(records, levels)
    newest, level, oldest = ffi.new("int64_t *"), ffi.new("uint32_t *"), ffi.new("int64_t *")
    lib.memdb_chunk_summary(
        ffi.from_buffer(records) if records else ffi.NULL, len(records) if records else 0,
        ffi.from_buffer(levels) if levels else ffi.NULL, len(levels) if levels else 0, newest, level, oldest,
    )  # fmt: skip
    return int(newest[0]), int(level[0]), int(oldest[0])


def id_of(column: Column) -> str:
    """The episode id of a document, from its time and suffix."""
    return id_at(column.ts_us, column.suffix)


def _suffix(eid: str) -> int:
    return int(eid[-6:], 16)


_BIN_HEAD: Final = {0xC4: 2, 0xC5: 3, 0xC6: 5}
_TAILS_KEPT: Final = 1 << 16  # terms whose last block a process remembers (a few hundred bytes each)
_OWNERS_KEPT: Final = 64  # owners whose column chunks a process keeps (about 20 bytes a document)
_THREAD = threading.local()  # a thread's reusable C result slots (``_c_count_outside``)


def _make_room(cache: dict[Any, Any], key: object, limit: int) -> None:
    """Drop ``cache``'s oldest entry when it holds ``limit`` and not ``key``. Readers of one
    database share these caches across threads without a lock: a race here drops another entry
    or none, never raises (two threads popping the same oldest key raised KeyError out of recall)."""
    if len(cache) >= limit and key not in cache:
        try:
            cache.pop(next(iter(cache)), None)
        except (RuntimeError, StopIteration):  # changed or emptied by another thread meanwhile
            pass


def _pack_bin(data: bytes) -> bytes:
    """``data`` packed as msgpack bin (what ``codec.pack_value`` makes of bytes), without msgpack."""
    n = len(data)
    if n < 0x100:
        return b"\xc4" + n.to_bytes(1, "big") + data
    if n < 0x10000:
        return b"\xc5" + n.to_bytes(2, "big") + data
    return b"\xc6" + n.to_bytes(4, "big") + data


def _payload(raw: bytes) -> memoryview:
    """The bytes of a packed ``bytes`` value (msgpack bin 8/16/32), without unpacking or copying it."""
    head = _BIN_HEAD.get(raw[0]) if raw else None
    if head is None:
        raise _not_bytes()
    return memoryview(raw)[head:]


def _payload_copy(raw: bytes) -> bytes:
    """``_payload`` as bytes of their own, for the many a capture's commit holds at once (each
    term's last block): a memoryview is two objects the cyclic GC tracks (it and its buffer), and
    thousands alive at once were taken into the oldest generation, which set off its passes over
    the whole heap (test_capture_gc.py); a copy of a block is a few hundred bytes, never tracked."""
    head = _BIN_HEAD.get(raw[0]) if raw else None
    if head is None:
        raise _not_bytes()
    return raw[head:]


def _not_bytes() -> CorruptValueError:
    return CorruptValueError(f"a text index value is damaged: not bytes ({CorruptValueError.HINT})")


@dataclass(frozen=True)
class StoredList:
    """A list's blocks as one read returns them: their stored values (each block packed as msgpack
    bin) back to back. ``search`` splits it in C (``memdb_split_stored``), so a list of thousands of
    blocks costs no Python object per block.

    ``derived`` keeps that split (the blocks' pointers and lengths) for as long as the object lives:
    a list a query keeps between calls (``TextIndex.memo``) is split once, not on every search or
    count of it (an empty window's note counts a tag's list whole: at a million episodes the biggest
    tag's 2,146 blocks took 35 us to split into room for 33,000, of a 46 us count)."""

    data: bytes
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def blocks(self) -> list[memoryview]:
        """The blocks (the twin of ``memdb_split_stored``); CorruptValueError if a value is damaged."""
        out: list[memoryview] = []
        view, pos = memoryview(self.data), 0
        while pos < len(view):
            head = _BIN_HEAD.get(view[pos])
            if head is None or pos + head > len(view):
                raise CorruptValueError(f"a stored posting list is damaged at byte {pos} ({CorruptValueError.HINT})")
            size = int.from_bytes(view[pos + 1 : pos + head], "big")
            if size > len(view) - pos - head:
                raise CorruptValueError(f"a stored posting list is damaged at byte {pos} ({CorruptValueError.HINT})")
            out.append(view[pos + head : pos + head + size])
            pos += head + size
        return out


Lists = Sequence[Sequence[bytes | memoryview] | StoredList]
"""Each list's blocks: a sequence of blocks, or a ``StoredList``."""


# --- search -------------------------------------------------------------------------------------


@dataclass
class Found:
    """What ``search`` found: the number of passing documents, the best BM25 among them, and
    the documents asked for (in document order) with their BM25, term frequencies, length, and
    column (``live_columns``: time, id suffix, index code)."""

    total: int
    best: float
    docs: list[int]
    bm25: list[float]
    tfs: list[list[int]]
    dls: list[int]
    columns: list[tuple[int, int, int]]


@dataclass(frozen=True)
class SearchParams:
    """The constants of the score the kernel bounds (``memdb.query`` owns their meaning)."""

    avgdl: float
    k1: float
    b: float
    week_us: float
    text_level: float
    text_weight: float
    recency_weight: float
    slack: float
    max_level: float
    boost: float = 0.0  # what a document in a BOOST list adds
    tf_unit: float = TF_UNIT  # BM25 reads a stored tf as tf / tf_unit occurrences
    # > 0: the best BM25 lower bounds divide by, in place of the search's own: a best over matches
    # it does not see (a caller's filter of them, archived ones), as the caller's ranking divides
    norm: float = 0.0

    def values(self) -> list[float]:
        return [
            self.avgdl,
            self.k1,
            self.b,
            self.week_us,
            self.text_level,
            self.text_weight,
            self.recency_weight,
            self.slack,
            self.max_level,
            self.boost,
            self.tf_unit,
            self.norm,
        ]


def _outcome_passes(outcome: int, got: int) -> bool:
    """Whether a record of outcome ``got`` (its code & 3) passes the filter ``outcome``: that
    outcome, or any but none for ``ANY_OUTCOME``. As ``outcome_passes`` in search.c."""
    return got != 0 if outcome == ANY_OUTCOME else got == outcome


def _bm25(idf: float, tf: float, dl: float, avgdl: float, k1: float, b: float, unit: float) -> float:
    """One term's Okapi BM25 from a stored tf (in ``unit``s of an occurrence); ``dl / avgdl`` is
    the same in any unit. As ``bm25_part`` in search.c, operation for operation."""
    tf = tf / unit
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


@dataclass
class _RankList:
    """A looked-up RANK list in ``py_search``: its blocks' headers, and the blocks decoded so far."""

    blocks: Sequence[bytes | memoryview]
    firsts: list[int]
    lasts: list[int]
    bounds: list[float]
    decoded: dict[int, dict[int, int]]

    def block_of(self, doc: int) -> int | None:
        """The block whose range holds ``doc``, if any (the first whose last document is not below it)."""
        j = bisect.bisect_left(self.lasts, doc)
        return j if j < len(self.lasts) and self.firsts[j] <= doc else None

    def tf(self, doc: int) -> int:
        j = self.block_of(doc)
        if j is None:
            return 0
        if j not in self.decoded:
            self.decoded[j] = dict(zip(*py_decode_block(self.blocks[j]), strict=True))
        return self.decoded[j].get(doc, 0)


def py_search(
    lists: Lists,
    idf: Sequence[float],
    chunks: ColumnChunks,
    p: SearchParams,
    now_us: int,
    lo: int | None,
    hi: int | None,
    outcome: int | None,
    keep: int,
    roles: Sequence[int] | None = None,
    summaries: Sequence[Summary] | None = None,
) -> Found:
    """The twin of ``memdb_text_search``: the same passes, the same expressions in the same order."""
    blocks = [bs.blocks() if isinstance(bs, StoredList) else bs for bs in lists]
    nt = len(blocks)
    role = list(roles) if roles is not None else [MATCH] * nt
    n_require = role.count(REQUIRE)
    damaged = CorruptValueError(f"posting blocks are damaged or out of order ({CorruptValueError.HINT})")
    sizes = [sum(block_header(blk)[0] for blk in blocks[t]) for t in range(nt)]  # every list's postings
    merged = sum(n for n, r in zip(sizes, role, strict=True) if r != RANK)
    # A RANK list longer than all the lists that match together is looked up, not merged: only the
    # documents scored need its frequencies (found by its headers, its blocks decoded when needed).
    postings: list[dict[int, tuple[int, float]]] = []
    ranked: dict[int, _RankList] = {}
    for t in range(nt):
        per: dict[int, tuple[int, float]] = {}
        postings.append(per)
        last = -1
        if role[t] == RANK and sizes[t] > merged:
            rl = ranked[t] = _RankList(blocks[t], [], [], [], {})
            for blk in blocks[t]:
                n, max_tf, min_dl, first, last_doc = block_header(blk)
                if n == 0 or first > last_doc or first <= last:
                    raise damaged
                last = last_doc
                rl.firsts.append(first)
                rl.lasts.append(last_doc)
                rl.bounds.append(_bm25(idf[t], float(max_tf), float(min_dl), p.avgdl, p.k1, p.b, p.tf_unit))
            continue
        for blk in blocks[t]:
            docs, tfs = py_decode_block(blk)
            if docs[0] <= last:
                raise damaged
            last = docs[-1]
            _, max_tf, min_dl, _, _ = _HEADER.unpack_from(blk)
            block_bound = 0.0 if role[t] > RANK else _bm25(idf[t], float(max_tf), float(min_dl), p.avgdl, p.k1, p.b, p.tf_unit)
            for d, tf in zip(docs, tfs, strict=True):
                per[d] = (tf, block_bound)

    record = partial(live_record, chunks)
    filtered = lo is not None or hi is not None or outcome is not None
    u_doc: list[int] = []
    u_tf: list[list[int]] = []
    u_ub: list[float] = []
    u_rec: list[Column | None] = []
    u_boost: list[bool] = []
    for doc in sorted(set().union(*postings)) if postings else []:
        row = [0] * nt
        ub = 0.0
        matched = boosted = False
        required = 0
        for t in range(nt):
            looked_up = ranked.get(t)
            if looked_up is not None:
                j = looked_up.block_of(doc)
                if j is not None:
                    ub += looked_up.bounds[j]
                continue
            hit = postings[t].get(doc)
            if hit is not None:
                row[t] = hit[0]
                ub += hit[1]
                matched = matched or role[t] in (MATCH, BOOST)
                boosted = boosted or role[t] == BOOST
                required += role[t] == REQUIRE
        if not matched or required < n_require:
            continue
        col = None
        if filtered:
            col = record(doc)
            if (
                (lo is not None and col.ts_us < lo)
                or (hi is not None and col.ts_us >= hi)
                or (outcome is not None and not _outcome_passes(outcome, col.code & 3))
            ):
                continue
        u_doc.append(doc)
        u_tf.append(row)
        u_ub.append(ub * (1 + 1e-12))
        u_rec.append(col)
        u_boost.append(boosted)
    n = len(u_doc)
    bm: list[float] = [0.0] * n
    state = [0] * n

    def exact(i: int) -> float:
        col = u_rec[i]
        assert col is not None
        for t, rl in ranked.items():  # the document's RANK frequencies, looked up once it is scored
            u_tf[i][t] = rl.tf(u_doc[i])
        s = 0.0
        dl = float(col.dl)
        for t in range(nt):
            tf = u_tf[i][t]
            if tf and role[t] <= RANK:
                s += _bm25(idf[t], float(tf), dl, p.avgdl, p.k1, p.b, p.tf_unit)
        return s

    def bound(i: int) -> float:
        """A bound on its BM25 without decoding a looked-up list: the merged lists' exact parts and
        the looked-up lists' block bounds, in list order, raised by 1e-12 against rounding."""
        col = u_rec[i]
        assert col is not None
        s = 0.0
        dl = float(col.dl)
        for t in range(nt):
            rl = ranked.get(t)
            if rl is not None:
                j = rl.block_of(u_doc[i])
                if j is not None:
                    s += rl.bounds[j]
            elif u_tf[i][t] and role[t] <= RANK:
                s += _bm25(idf[t], float(u_tf[i][t]), dl, p.avgdl, p.k1, p.b, p.tf_unit)
        return s * (1 + 1e-12)

    top = 0.0
    for i in range(n):
        if i > 0 and u_ub[i] <= top:
            continue
        if u_rec[i] is None:
            u_rec[i] = record(u_doc[i])
        if i > 0 and ranked and bound(i) <= top:  # a tighter bound first: a looked-up block is decoded only if needed
            continue
        bm[i] = exact(i)
        state[i] = 1
        if i == 0 or bm[i] > top:
            top = bm[i]
    norm = p.norm if p.norm > 0.0 else top if top > 0.0 else 1.0
    any_extra = p.text_level * p.max_level + p.recency_weight  # a chunk without a summary: any level, now
    extras: dict[int, float] = {}  # per chunk: what its level and recency can add at most

    def extra_of(doc: int) -> float:
        c = doc // CHUNK_DOCS
        if summaries is None or c >= len(summaries):
            return any_extra
        got = extras.get(c)
        if got is None:
            newest, level, _ = summaries[c]
            age = now_us - newest
            got = extras[c] = p.text_level * float(level) + p.recency_weight * math.pow(0.5, float(age if age > 0 else 0) / p.week_us)
        return got

    heap: list[float] = []
    cut = -math.inf
    lows = [0.0] * n
    for i in reversed(range(n)):  # newest first: the heap fills with good documents early
        if (
            keep > 0
            and len(heap) == keep
            and p.text_weight * u_ub[i] / norm + extra_of(u_doc[i]) + (p.boost if u_boost[i] else 0.0) + p.slack < cut
        ):
            continue
        col = u_rec[i]
        if col is None:
            col = u_rec[i] = record(u_doc[i])
        if state[i] == 0:
            if keep > 0 and len(heap) == keep and ranked:
                # its own level and recency, and its merged lists' exact parts, before a looked-up block is decoded
                age = now_us - col.ts_us
                if (
                    p.text_weight * bound(i) / norm
                    + p.text_level * float(col.code >> 2)
                    + p.recency_weight * math.pow(0.5, float(age if age > 0 else 0) / p.week_us)
                    + (p.boost if u_boost[i] else 0.0)
                    + p.slack
                    < cut
                ):
                    continue
            bm[i] = exact(i)
        state[i] = 2
        if keep == 0:
            continue
        age = now_us - col.ts_us
        low = (
            p.text_weight * bm[i] / norm
            + p.text_level * float(col.code >> 2)
            + p.recency_weight * math.pow(0.5, float(age if age > 0 else 0) / p.week_us)
        )
        if u_boost[i]:
            low += p.boost
        lows[i] = low
        if len(heap) < keep:
            heapq.heappush(heap, low)
        elif low > heap[0]:
            heapq.heapreplace(heap, low)
        if len(heap) == keep:
            cut = heap[0] - p.text_level - p.slack
    out = [i for i in range(n) if state[i] == 2 and (keep == 0 or len(heap) < keep or lows[i] >= cut)]
    dls = []
    for i in out:
        col = u_rec[i]
        assert col is not None
        dls.append(col.dl)
    docs = [u_doc[i] for i in out]
    return Found(n, top, docs, [bm[i] for i in out], [u_tf[i] for i in out], dls, live_columns(chunks, docs))


def _held_pointer(ffi: Any, view: bytes | memoryview) -> tuple[Any, Any]:
    """(what to keep alive, a pointer to ``view``'s first byte) for a buffer kept between calls:
    the buffer is taken of the ``bytes`` a memoryview shows, never of the memoryview itself. A
    memoryview with a buffer held on it refuses the garbage collector's clear ("BufferError:
    memoryview has 1 exported buffer"), and collecting a cache of such pairs, once its database
    was dropped in a reference cycle, crashed the process
    (test_a_dropped_database_with_kernel_buffers_is_collected_cleanly)."""
    under = view.obj if isinstance(view, memoryview) else view
    if not isinstance(under, bytes):  # a view of something else: a copy of its bytes
        under, view = bytes(view), b""
    base = ffi.from_buffer(under)
    start = ffi.cast("const unsigned char *", base)
    if isinstance(view, memoryview):  # its place in the bytes: a pointer taken and given back at once
        probe = ffi.from_buffer(view)
        start += int(ffi.cast("uintptr_t", probe)) - int(ffi.cast("uintptr_t", base))
        ffi.release(probe)
    return base, start


def _split(lib: Any, ffi: Any, stored: StoredList) -> tuple[Any, Any, Any, int]:
    """``stored``'s blocks as the kernel reads them (what keeps its bytes alive, the blocks'
    pointers and lengths, how many), split once and kept in ``stored.derived``; CorruptValueError
    if the list is damaged."""
    kept: tuple[Any, Any, Any, int] | None = stored.derived.get("kernel")
    if kept is not None:
        return kept
    data = stored.data
    # as many as its reader read (``TextIndex.stored_list``: one value each), else at most one
    # block per 2 + 16 bytes (bin header and block header)
    cap = stored.derived.get("values") or len(data) // (2 + _HEADER.size) + 1
    buf = ffi.from_buffer(data)
    starts, lens = ffi.new("const unsigned char *[]", cap), ffi.new("size_t[]", cap)
    n = lib.memdb_split_stored(buf, len(data), starts, lens, cap)
    if n < 0:
        raise CorruptValueError(f"a stored posting list is damaged ({CorruptValueError.HINT})")
    if n < cap // 2:  # kept as long as the list: room for its blocks only
        fit_starts, fit_lens = ffi.new("const unsigned char *[]", max(n, 1)), ffi.new("size_t[]", max(n, 1))
        ffi.memmove(fit_starts, starts, n * ffi.sizeof("unsigned char *"))
        ffi.memmove(fit_lens, lens, n * ffi.sizeof("size_t"))
        starts, lens = fit_starts, fit_lens
    if isinstance(data, bytes):  # (a buffer on a memoryview would refuse the collector: _held_pointer)
        stored.derived["kernel"] = (buf, starts, lens, n)
    return buf, starts, lens, n


@lru_cache(maxsize=2)
def _c_sizes(ffi: Any) -> tuple[int, int]:
    """The bytes of a block pointer and of a ``size_t``, as ``_c_input`` copies them."""
    return ffi.sizeof("unsigned char *"), ffi.sizeof("size_t")


def _c_input(
    lib: Any, ffi: Any, blocks: Lists, idf: Sequence[float], chunks: ColumnChunks, roles: Sequence[int] | None
) -> tuple[Any, list[Any], int]:
    """The kernel's ``memdb_text_input`` over ``blocks`` and ``chunks``, what must stay alive while
    it is read (a struct's pointers keep nothing alive), and the blocks' bytes (bounding the
    union's size); CorruptValueError if a stored list is damaged."""
    nt = len(blocks)
    splits = {i: _split(lib, ffi, bs) for i, bs in enumerate(blocks) if isinstance(bs, StoredList)}
    room = sum(splits[i][3] if isinstance(bs, StoredList) else len(bs) for i, bs in enumerate(blocks))
    c_blocks = ffi.new("const unsigned char *[]", max(room, 1))
    c_lens = ffi.new("size_t[]", max(room, 1))
    counts: list[int] = []
    held: list[Any] = [c_blocks, c_lens]
    room_bytes = 0  # the blocks' bytes, bounding the union's size
    off = 0
    pointer_bytes, size_bytes = _c_sizes(ffi)
    for i, bs in enumerate(blocks):
        if isinstance(bs, StoredList):
            buf, starts, lens, n = splits[i]
            held.append(buf)  # the pointers point into it
            ffi.memmove(c_blocks + off, starts, n * pointer_bytes)
            ffi.memmove(c_lens + off, lens, n * size_bytes)
            room_bytes += len(bs.data)
        else:
            n = len(bs)
            these = [ffi.from_buffer(b) for b in bs]
            held.extend(these)
            c_blocks[off : off + n] = these
            c_lens[off : off + n] = [len(b) for b in bs]
            room_bytes += sum(max(len(b) - _HEADER.size, 0) for b in bs)
        counts.append(n)
        off += n
    records = chunks.records
    arrays = chunks.derived.get("kernel")
    if arrays is None:  # once per chunks object: they hold the buffers, which hold the chunks
        levels = [chunks.levels[c] if c < len(chunks.levels) else None for c in range(len(records))]
        chunk_held = [_held_pointer(ffi, c) if c else (None, ffi.NULL) for c in records]
        level_held = [_held_pointer(ffi, c) if c else (None, ffi.NULL) for c in levels]
        arrays = chunks.derived["kernel"] = (
            ffi.new("const unsigned char *[]", [p for _, p in chunk_held] or [ffi.NULL]),
            ffi.new("size_t[]", [len(c) if c else 0 for c in records] or [0]),
            ffi.new("const unsigned char *[]", [p for _, p in level_held] or [ffi.NULL]),
            ffi.new("size_t[]", [len(c) if c else 0 for c in levels] or [0]),
            chunk_held,
            level_held,
        )
    c_chunks, c_chunk_lens, c_levels, c_level_lens, _, _ = arrays
    inp = ffi.new("memdb_text_input *")
    c_counts = ffi.new("size_t[]", counts or [0])
    c_idf = ffi.new("double[]", list(idf) or [0.0])
    inp.n_terms, inp.blocks, inp.block_lens, inp.term_blocks, inp.idf = nt, c_blocks, c_lens, c_counts, c_idf
    inp.n_chunks, inp.chunks, inp.chunk_lens = len(records), c_chunks, c_chunk_lens
    inp.levels, inp.level_lens = c_levels, c_level_lens
    c_roles = ffi.new("unsigned char[]", list(roles) or [0]) if roles is not None else ffi.NULL
    inp.roles = c_roles
    held += [c_counts, c_idf, c_roles]
    return inp, held, room_bytes


def _kernel_summaries(ffi: Any, chunks: ColumnChunks, summaries: Sequence[Summary]) -> tuple[Any, Any, Any]:
    """The summaries as the kernel reads them (newest times, levels, oldest times), kept with the
    chunks while the same list is given (``chunk_summaries`` keeps it with them)."""
    kept = chunks.derived.get("kernel summaries")
    if kept is None or kept[0] is not summaries:
        kept = chunks.derived["kernel summaries"] = (
            summaries,
            ffi.new("int64_t[]", [t for t, _, _ in summaries] or [0]),
            ffi.new("uint32_t[]", [lv for _, lv, _ in summaries] or [0]),
            ffi.new("int64_t[]", [t for _, _, t in summaries] or [0]),
        )
    return kept[1], kept[2], kept[3]


def _raise_for(rc: int, bad: int, what: str) -> None:
    """Raise for a kernel's failing return code (``bad``: the document a column is missing for)."""
    if rc == _BAD_BLOCK:
        raise CorruptValueError(f"a posting block is damaged ({CorruptValueError.HINT})")
    if rc == _BAD_COLUMN:
        raise CorruptValueError(f"text index document {bad} has no column record ({CorruptValueError.HINT})")
    if rc == _NO_MEMORY:
        raise MemoryError(f"memdb text {what}: out of memory")


_N_PARAMS: Final = len(fields(SearchParams))  # the length of ``SearchParams.values()``
_KEPT_ROWS: Final = 4096
"""Result rows (and term frequencies per row, with up to 16 lists) a thread keeps arrays for
between searches: a top-k search asks for 4 * k + 64."""


class _SearchSlots:
    """A thread's ``memdb_text_search`` parameters and result arrays, kept between searches: a
    search wrote into eleven new arrays (each allocated and zeroed): 1% of a LoCoMo question's
    instructions. The kernel writes every row it reports, and the rows are
    copied out (``ffi.unpack``) before the next search, so no stale value is ever read."""

    __slots__ = ("_arrays", "_cap", "_tf_cap", "best", "n_out", "params", "total")

    def __init__(self, ffi: Any) -> None:
        self.params = ffi.new("double[]", _N_PARAMS)
        self.total, self.best, self.n_out = ffi.new("size_t *"), ffi.new("double *"), ffi.new("size_t *")
        self._cap = self._tf_cap = 0
        self._arrays: tuple[Any, ...] = ()

    def rows(self, ffi: Any, cap: int, nt: int) -> tuple[Any, ...]:
        """Arrays of ``cap`` rows (documents, BM25, ``nt`` term frequencies each, length, time,
        id suffix, code): the kept ones when large enough; new ones, kept when not too large."""
        tf_cap = cap * max(nt, 1)
        if cap <= self._cap and tf_cap <= self._tf_cap:
            return self._arrays
        rows = max(cap, self._cap)
        tf_rows = max(tf_cap, self._tf_cap)
        arrays = (
            ffi.new("uint32_t[]", rows), ffi.new("double[]", rows), ffi.new("uint32_t[]", tf_rows), ffi.new("uint32_t[]", rows),
            ffi.new("int64_t[]", rows), ffi.new("uint32_t[]", rows), ffi.new("uint32_t[]", rows),
        )  # fmt: skip
        if rows <= _KEPT_ROWS and tf_rows <= 16 * _KEPT_ROWS:
            self._cap, self._tf_cap, self._arrays = rows, tf_rows, arrays
        return arrays


def _c_search(
    blocks: Lists,
    idf: Sequence[float],
    chunks: ColumnChunks,
    p: SearchParams,
    now_us: int,
    lo: int | None,
    hi: int | None,
    outcome: int | None,
    keep: int,
    roles: Sequence[int] | None = None,
    summaries: Sequence[Summary] | None = None,
) -> Found:
    lib, ffi = native.search_lib()
    nt = len(blocks)
    inp, held, room_bytes = _c_input(lib, ffi, blocks, idf, chunks, roles)
    records = chunks.records
    if summaries is not None and len(summaries) == len(records):
        inp.chunk_newest, inp.chunk_level, _ = _kernel_summaries(ffi, chunks, summaries)
    slots: _SearchSlots | None = getattr(_THREAD, "search", None)
    if slots is None:
        slots = _THREAD.search = _SearchSlots(ffi)
    params, total, best, n_out = slots.params, slots.total, slots.best, slots.n_out
    params[0:_N_PARAMS] = p.values()
    # room: every posting takes at least 2 bytes, so this bounds the union; a top-k call
    # starts small and asks again in the rare case its candidates overflow
    bound = room_bytes // 2 + 1
    keep = min(keep, bound)  # no more can be kept; a size_t holds it (recall(limit=2**70))
    cap = bound if keep == 0 else min(bound, 4 * keep + 64)
    while True:
        docs, bm, tfs, dls, ts, suffixes, codes = slots.rows(ffi, cap, nt)
        rc = lib.memdb_text_search(
            inp, params, now_us, lo is not None, lo if lo is not None else 0, hi is not None, hi if hi is not None else 0,
            -1 if outcome is None else outcome, keep, total, best, cap, n_out, docs, bm, tfs, dls, ts, suffixes, codes,
        )  # fmt: skip
        if rc != _MORE_ROOM:
            break
        cap = int(n_out[0])
    del held
    _raise_for(rc, int(n_out[0]), "search")
    n = int(n_out[0])
    flat_tf = ffi.unpack(tfs, n * nt) if nt else []
    return Found(
        int(total[0]), float(best[0]), ffi.unpack(docs, n), ffi.unpack(bm, n),
        [flat_tf[i * nt : (i + 1) * nt] for i in range(n)], ffi.unpack(dls, n),
        list(zip(ffi.unpack(ts, n), ffi.unpack(suffixes, n), ffi.unpack(codes, n), strict=True)),
    )  # fmt: skip


def py_lookup_tfs(blocks: Sequence[Sequence[bytes | memoryview]], docs: Sequence[int]) -> list[list[int]]:
    """The twin of ``memdb_lookup_tfs``: each of ``docs``' (ascending) frequency of each term."""
    out = [[0] * len(blocks) for _ in docs]
    for t, term_blocks in enumerate(blocks):
        d = 0
        for blk in term_blocks:
            _, _, _, first, last = block_header(blk)
            while d < len(docs) and docs[d] < first:
                d += 1
            if d == len(docs) or docs[d] > last:
                continue
            ds, tfs = py_decode_block(blk)
            m = 0
            while d < len(docs) and docs[d] <= last:
                while m < len(ds) and ds[m] < docs[d]:
                    m += 1
                if m < len(ds) and ds[m] == docs[d]:
                    out[d][t] = tfs[m]
                d += 1
    return out


def lookup_tfs(blocks: Sequence[Sequence[bytes | memoryview]], docs: Sequence[int]) -> list[list[int]]:
    """Each of ``docs``' (ascending) frequency of each term (0 when absent), decoding only the
    blocks that can hold one of them: the C kernel when it is in use, else the twin."""
    lib, ffi = native.search_lib()
    if lib is None or not docs or not blocks:
        return py_lookup_tfs(blocks, docs)
    flat = [b for bs in blocks for b in bs]
    held = [ffi.from_buffer(b) for b in flat]
    inp = ffi.new("memdb_text_input *")
    c_blocks = ffi.new("const unsigned char *[]", held or [ffi.NULL])
    c_lens = ffi.new("size_t[]", [len(b) for b in flat] or [0])
    c_counts = ffi.new("size_t[]", [len(bs) for bs in blocks])
    inp.n_terms, inp.blocks, inp.block_lens, inp.term_blocks = len(blocks), c_blocks, c_lens, c_counts
    out = ffi.new("uint32_t[]", len(docs) * len(blocks))
    rc = lib.memdb_lookup_tfs(inp, len(docs), ffi.new("uint32_t[]", list(docs)), out)
    del held
    if rc == _BAD_BLOCK:
        raise CorruptValueError(f"a posting block is damaged ({CorruptValueError.HINT})")
    if rc == _NO_MEMORY:
        raise MemoryError("memdb text lookup: out of memory")
    flat_tf = ffi.unpack(out, len(docs) * len(blocks))
    nt = len(blocks)
    return [flat_tf[i * nt : (i + 1) * nt] for i in range(len(docs))]


def search(
    blocks: Lists,
    idf: Sequence[float],
    chunks: ColumnChunks,
    p: SearchParams,
    now_us: int,
    lo: int | None = None,
    hi: int | None = None,
    outcome: int | None = None,
    keep: int = 0,
    roles: Sequence[int] | None = None,
    summaries: Sequence[Summary] | None = None,
) -> Found:
    """Search the union of the lists' blocks (``memdb_text_search`` in native/search.h): the
    C kernel when it is in use, else ``py_search``; both give the same ``Found``. ``roles``
    says what each list is (``MATCH`` by default; ``RANK``, ``BOOST``, ``REQUIRE``); a list's
    blocks may come as a ``StoredList`` (``TextIndex.stored_list``).
    ``summaries`` (``chunk_summary`` of each of ``chunks``, ``TextIndex.chunk_summaries``) let a
    top-k search bound a document by its chunk's newest time and highest level: the answer is
    the same, fewer documents are scored."""
    _check_summaries(summaries, chunks)
    if native.search_lib()[0] is None:
        return py_search(blocks, idf, chunks, p, now_us, lo, hi, outcome, keep, roles, summaries)
    return _c_search(blocks, idf, chunks, p, now_us, lo, hi, outcome, keep, roles, summaries)


def _check_summaries(summaries: Sequence[Summary] | None, chunks: ColumnChunks) -> None:
    if summaries is not None and len(summaries) != len(chunks.records):
        raise ValidationError(f"summaries: {len(summaries)} for {len(chunks.records)} chunks (one per chunk, from chunk_summary)")


Outside = tuple[int, int | None, int]
"""What ``count_outside`` found: the matches before the window, the newest time among them (None
when none), and the matches at or after its end."""


@dataclass
class _Tally:
    """What ``py_count_outside`` has counted so far (search.c's ``outside_count``)."""

    lo: int | None
    hi: int | None
    outcome: int | None
    before: int = 0
    newest: int | None = None  # the newest time before lo known so far (a match counted whole has none until looked up)
    after: int = 0

    def look_up(self, chunks: ColumnChunks, doc: int) -> None:
        """Count ``doc``, a match, by its record (``count_match``); CorruptValueError when it has none."""
        col = live_record(chunks, doc)
        if self.outcome is not None and not _outcome_passes(self.outcome, col.code & 3):
            return
        if self.lo is not None and col.ts_us < self.lo:
            self.before += 1
            self.newest = col.ts_us if self.newest is None else max(self.newest, col.ts_us)
        if self.hi is not None and col.ts_us >= self.hi:
            self.after += 1

    def chunks_side(self, summaries: Sequence[Summary] | None, c0: int, c1: int) -> tuple[bool, bool, int] | None:
        """(all before lo, all at or after hi, the newest time) of the live records of chunks
        ``c0..c1`` when each bound has them all on one side; None when some may lie either side, a
        chunk has no summary, or none has a live record (``chunks_side``: a chunk without one
        holds no match, so among others it decides nothing)."""
        if summaries is None or c1 >= len(summaries):
            return None
        live = [(n_k, o_k) for n_k, _, o_k in summaries[c0 : c1 + 1] if o_k <= n_k]
        if not live:
            return None
        newest, oldest = max(n for n, _ in live), min(o for _, o in live)
        lo, hi = self.lo, self.hi
        if (lo is not None and oldest < lo <= newest) or (hi is not None and oldest < hi <= newest):
            return None
        return lo is not None and newest < lo, hi is not None and oldest >= hi, newest

    def newest_of(self, chunks: ColumnChunks, runs: list[tuple[int, Callable[[], Iterable[int]]]]) -> None:
        """The newest time before lo among runs counted whole (their newest possible time, their
        documents): looked up in decreasing order of that bound until none can beat the newest
        found (``newest_of_runs``)."""
        for bound, docs in sorted(runs, key=lambda run: -run[0]):  # stable: ties in input order, as C
            if self.newest is not None and bound <= self.newest:
                break
            for doc in docs():
                ts = live_record(chunks, doc).ts_us
                self.newest = ts if self.newest is None else max(self.newest, ts)


def _py_count_blocks(blocks: Iterable[bytes | memoryview], chunks: ColumnChunks, tally: _Tally, summaries: Sequence[Summary]) -> None:
    """One list, no REQUIRE list, no outcome (``count_blocks``): a block whose documents' chunks
    all lie on one side of each bound is counted from its header. Only its header is checked (n,
    range, order): unless searched for the newest time before, its postings are not decoded nor
    its documents' records looked up, so damage there is not seen here (``memdb check`` sees it)."""
    runs: list[tuple[int, Callable[[], Iterable[int]]]] = []
    prev_last = -1
    for blk in blocks:
        n, _, _, first, last = block_header(blk)
        if n == 0 or last < first or last - first < n - 1 or first <= prev_last:
            raise CorruptValueError(f"posting blocks are damaged or out of order ({CorruptValueError.HINT})")
        prev_last = last
        side = tally.chunks_side(summaries, first // CHUNK_DOCS, last // CHUNK_DOCS)
        if side is not None:
            if side[0]:
                tally.before += n
                runs.append((side[2], partial(lambda b: py_decode_block(b)[0], blk)))
            tally.after += n if side[1] else 0
            continue
        for doc in py_decode_block(blk)[0]:
            tally.look_up(chunks, doc)
    tally.newest_of(chunks, runs)


def py_count_outside(
    lists: Lists,
    chunks: ColumnChunks,
    lo: int | None,
    hi: int | None,
    outcome: int | None,
    roles: Sequence[int] | None = None,
    summaries: Sequence[Summary] | None = None,
) -> Outside:
    """The twin of ``memdb_count_outside``: the same documents, checked in the same order."""
    role = list(roles) if roles is not None else [MATCH] * len(lists)
    tally = _Tally(lo, hi, outcome)
    read = [bs for bs, r in zip(lists, role, strict=True) if r != RANK]  # a word that only ranks makes no match: not read
    if summaries is not None and len(read) == 1 and REQUIRE not in role and outcome is None:
        _py_count_blocks(read[0].blocks() if isinstance(read[0], StoredList) else read[0], chunks, tally, summaries)
        return tally.before, tally.newest, tally.after
    matching: set[int] = set()
    required: list[set[int]] = []
    for bs, r in zip(lists, role, strict=True):
        if r == RANK:
            continue
        docs: list[int] = []
        for blk in bs.blocks() if isinstance(bs, StoredList) else bs:
            got = py_decode_block(blk)[0]
            if docs and got[0] <= docs[-1]:
                raise CorruptValueError(f"posting blocks are damaged or out of order ({CorruptValueError.HINT})")
            docs += got
        if r == REQUIRE:
            required.append(set(docs))
        else:
            matching.update(docs)
    held: list[int] = []  # the run of one chunk's matches counted before lo by their chunk, times unread
    runs: list[tuple[int, Callable[[], Iterable[int]]]] = []
    for doc in sorted(matching.intersection(*required)):
        # a chunk wholly on one side decides without the record, unless an outcome needs it (not
        # looked up, such a match's record is not checked to be live)
        side = tally.chunks_side(summaries, doc // CHUNK_DOCS, doc // CHUNK_DOCS) if outcome is None else None
        if side is None:
            tally.look_up(chunks, doc)
            continue
        if side[0]:
            tally.before += 1
            if not held or held[0] // CHUNK_DOCS != doc // CHUNK_DOCS:
                held = []
                runs.append((side[2], partial(iter, held)))
            held.append(doc)
        tally.after += side[1]
    tally.newest_of(chunks, runs)
    return tally.before, tally.newest, tally.after


def _c_count_outside(
    lists: Lists,
    chunks: ColumnChunks,
    lo: int | None,
    hi: int | None,
    outcome: int | None,
    roles: Sequence[int] | None,
    summaries: Sequence[Summary] | None = None,
) -> Outside:
    lib, ffi = native.search_lib()
    if roles is not None:  # a RANK list is never read, as the twin never reads it: not even split
        lists = [() if r == RANK else bs for bs, r in zip(lists, roles, strict=True)]
    inp, oldest, held = _outside_input(lib, ffi, lists, chunks, roles, summaries)
    outs = getattr(_THREAD, "outside", None)
    if outs is None:  # this thread's result slots, made once: four ffi.new a count were a tenth of its Python
        outs = _THREAD.outside = (ffi.new("size_t *"), ffi.new("int64_t *"), ffi.new("size_t *"), ffi.new("size_t *"))
    before, newest, after, bad = outs
    rc = lib.memdb_count_outside(
        inp, oldest, lo is not None, lo if lo is not None else 0, hi is not None, hi if hi is not None else 0,
        -1 if outcome is None else outcome, before, newest, after, bad,
    )  # fmt: skip
    del held
    _raise_for(rc, int(bad[0]), "count")
    n_before = int(before[0])
    return n_before, int(newest[0]) if n_before else None, int(after[0])


def _outside_input(
    lib: Any, ffi: Any, lists: Lists, chunks: ColumnChunks, roles: Sequence[int] | None, summaries: Sequence[Summary] | None
) -> tuple[Any, Any, list[Any]]:
    """``memdb_count_outside``'s input over ``lists`` and ``chunks`` (with the chunks' oldest times,
    and what must stay alive while it is read). For one stored list it is kept with the list while
    the chunks and summaries are the same objects: an empty window's note counts a kept tag list
    again and again, and making the input (eight ffi.new, the pointers copied) was most of the
    Python of that count. The kernel only reads it, so threads share it."""
    stored = lists[0] if len(lists) == 1 and isinstance(lists[0], StoredList) else None
    shape = tuple(roles) if roles is not None else None
    if stored is not None:
        kept = stored.derived.get("outside input")
        if kept is not None and kept[0] is chunks and kept[1] is summaries and kept[2] == shape:
            return kept[3], kept[4], kept[5]
    inp, held, _ = _c_input(lib, ffi, lists, [0.0] * len(lists), chunks, roles)
    oldest = ffi.NULL
    if summaries is not None:
        inp.chunk_newest, _, oldest = _kernel_summaries(ffi, chunks, summaries)
    if stored is not None:  # one entry: a list outlives the chunks of one level change at most
        stored.derived["outside input"] = (chunks, summaries, shape, inp, oldest, held)
    return inp, oldest, held


def count_outside(
    lists: Lists,
    chunks: ColumnChunks,
    lo: int | None,
    hi: int | None,
    outcome: int | None = None,
    roles: Sequence[int] | None = None,
    summaries: Sequence[Summary] | None = None,
) -> Outside:
    """What the lists match outside the window ``[lo, hi)`` (``memdb_count_outside`` in
    native/search.h), exactly, in one pass over their postings and their documents' times: the
    C kernel when it is in use, else ``py_count_outside``; both give the same answer. The
    matches are ``search``'s with the same lists, roles and outcome (``RANK`` lists are not read).
    ``summaries`` (``TextIndex.chunk_summaries``) let a chunk whose documents all lie on one side
    of the window decide its matches' side without their records, and one list's blocks there be
    counted from their headers; the answer is the same."""
    _check_summaries(summaries, chunks)
    if native.search_lib()[0] is None:
        return py_count_outside(lists, chunks, lo, hi, outcome, roles, summaries)
    return _c_count_outside(lists, chunks, lo, hi, outcome, roles, summaries)


# --- the index of one database --------------------------------------------------------------------


class TextIndex:
    """Writes and reads an owner's documents, blocks and columns, inside the caller's transaction
    (every method is called within ``Globals.transaction()`` or a snapshot)."""

    def __init__(self, space: Globals) -> None:
        self.space = space
        self.numbers = space["EPDN"]
        self.blocks = space["EPX"]
        self.tag_blocks = space["EPXT"]
        self.columns = space["EPC"]
        self.stamps = space["EPCV"]
        self.levels = space["EPL"]
        self.level_stamps = space["EPLV"]
        self.stats = space["EPN"]
        # (global, owner) -> (stamps, chunks) last read, for the records and the levels apart
        # (global, owner) -> (stamps, the chunks they are current for, the stamps value as packed when
        # _fresh found them so: a query then compares the packed bytes, not unpacked ones; None
        # after _keep_written)
        self._kept: dict[tuple[str, str], tuple[bytes, list[memoryview | None], bytes | None]] = {}
        self._both: dict[str, ColumnChunks] = {}  # owner -> the ColumnChunks last returned
        self._flat: dict[str, tuple[list[memoryview | None], bytes]] = {}  # owner -> (level chunks, levels_of)
        # (global, owner) -> (the chunks summarised, their part of the summary: the newest and oldest
        # times of a records chunk, the highest level of a level chunk): a chunk kept is the same
        # object, so its part is reused; a chunk read again (its stamp changed) is summarised again
        self._summaries: dict[tuple[str, str], tuple[Sequence[bytes | memoryview | None], list[Any]]] = {}
        # (global, owner) -> term -> its last block (key, packed value, documents in it): _appended
        self._tails: dict[tuple[str, str], dict[str, tuple[bytes, bytes, int]]] = {}
        self._tails_held = 0  # the terms _tails holds, all owners together (bounded by _TAILS_KEPT)
        # owner -> its stamps (^EPCV) as this process wrote them with the tails it remembers: _write_docs
        self._tails_stamps: dict[str, bytes] = {}
        self._memos: dict[str, tuple[bytes, dict[Any, Any]]] = {}  # owner -> (stamps, what readers derived): memo
        self._memo_seen: dict[str, tuple[int, dict[Any, Any]]] = {}  # owner -> (the snapshot it was found in, its memo): memo
        # (global, owner) -> (the snapshot it was read in, the stamps value as packed, its key): _stamps_of
        self._stamps_read: dict[tuple[str, str], tuple[int, bytes, bytes]] = {}

    # --- writing -----------------------------------------------------------------------------

    def next_numbers(self, owner: str, n: int) -> list[int]:
        """The numbers ``add`` will give the owner's next ``n`` documents in this transaction, so
        a writer can check every key it derives from them before writing any."""
        first = int(self.stats.get((owner, "next_doc"), 0))
        return list(range(first, first + n))

    def add(
        self,
        owner: str,
        docs: Sequence[Doc],
        sets: Iterable[tuple[Global, Any, Any]] = (),
        packed: Iterable[tuple[bytes, bytes]] = (),
        numbers: list[int] | None = None,
    ) -> list[int]:
        """Give each episode the next document number and append it to its terms' blocks and
        the columns; returns the numbers (those ``next_numbers`` said). ``sets`` and ``packed``
        are the caller's writes of the same episodes (``Globals.apply``'s), written in one batch
        with the numbers: a capture of one episode writes once, not twice. ``numbers``: what
        ``next_numbers`` said for ``docs`` just before, in this transaction (not read again)."""
        if not docs:
            self.space.apply((), sets, packed=packed)
            return []
        if numbers is None:
            numbers = self.next_numbers(owner, len(docs))
        first = numbers[0]
        writes: list[tuple[Global, Any, Any]] = [*sets, (self.stats, (owner, "next_doc"), first + len(docs))]
        writes.extend((self.numbers, (owner, d.eid), doc) for doc, d in zip(numbers, docs, strict=True))
        self.space.apply((), writes, packed=packed)
        # blocks and columns are written once per transaction: a batch of records shares them.
        # Staged as tuples of strings and numbers, which the cyclic GC stops tracking: a Doc, or
        # a tuple holding one or a dict, stays tracked until the commit, and a thousand of them
        # per transaction made the GC run a full collection every 2,500 records (~15 us each)
        self.space.stage(
            ("text", owner),
            partial(self._write_docs, owner),
            [
                (n, d.eid, d.ts_us, d.code, d.dl, tuple(d.tf), tuple(d.tf.values()), tuple(d.tags))
                for n, d in zip(numbers, docs, strict=True)
            ],
        )
        return numbers

    def _write_docs(self, owner: str, staged: list[_StagedDoc]) -> None:
        """Append numbered documents (ascending, after every one stored) to their terms' blocks
        and the columns."""
        numbers = [s[0] for s in staged]
        dls = [s[4] for s in staged]
        records: dict[int, dict[int, tuple[bytes, int]]] = defaultdict(dict)
        for doc, eid, ts_us, code, dl, _, _, _ in staged:
            records[doc // CHUNK_DOCS][doc] = (pack_record(ts_us, _suffix(eid), dl, code & 3), code >> 2)
        tfs = [s[5] for s in staged]
        tags = [s[7] for s in staged]
        firsts = list(map(codec.encode_int, numbers))  # a new block's key ends with its first document: encoded once
        stamps = self.stamps.get((owner,)) or b""
        # Every write of the owner's blocks, by any writer, writes fresh stamps in its transaction
        # (_patched): stamps as this process wrote them mean its remembered last blocks are the
        # stored ones. A block's bytes alone did not say so: another writer filling a block and
        # starting the next, then removing what it added to the first, restored the first's bytes
        # (test_a_block_whose_bytes_came_back_is_not_taken_for_the_last). Popped until written
        # again: a write that fails or rolls back leaves nothing to trust.
        if self._tails_stamps.pop(owner, None) != stamps:
            self._forget_tails(owner)
        with self.space.reader() as txn:
            packed = self._appended(
                self.blocks, owner, numbers, firsts, dls, tfs, list(itertools.chain.from_iterable(s[6] for s in staged)), txn
            )
            packed += self._appended(self.tag_blocks, owner, numbers, firsts, dls, tags, [1] * sum(map(len, tags)), txn)
        writes, stamps = self._patched(owner, records, stamps)
        self.space.apply((), writes, packed=packed)
        if packed:  # stamps kept only beside remembered blocks, so they are bounded as the terms are
            self._tails_stamps[owner] = stamps  # (an owner with no term and no tag added one each, revO)

    def _forget_tails(self, owner: str) -> None:
        """Forget the owner's remembered last blocks (terms and tags): they are looked up again."""
        for g in (self.blocks, self.tag_blocks):
            self._tails_held -= len(self._tails.pop((g.name, owner), ()))

    def remove(self, owner: str, items: Iterable[tuple[str, Mapping[str, int], Iterable[str]]]) -> None:
        """Take episodes (id, terms, tags) out: their postings, their tag lists' entries, their
        number and their column record (zeroed); an episode with no number is skipped. Each block,
        tag list block and column chunk they are in is rewritten once, whatever their number;
        ``items`` is read once, in turn, and only each one's document number kept (an erasure
        streams an owner's whole history through it)."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        per_term: dict[str, array[int]] = {}
        per_tag: dict[str, array[int]] = {}
        records: dict[int, dict[int, tuple[bytes, int]]] = defaultdict(dict)
        kills: list[tuple[Global, Any]] = []
        for eid, tf, tags in items:
            doc = self.numbers.get((owner, eid))
            if doc is None:
                continue
            doc = int(doc)
            kills.append((self.numbers, (owner, eid)))
            records[doc // CHUNK_DOCS][doc] = (_ZERO_RECORD, 0)
            for lists, names in ((per_term, tf), (per_tag, tags)):
                for name in names:
                    docs = lists.get(name)
                    if docs is None:
                        docs = lists[name] = array("I")
                    docs.append(doc)
        sets: list[tuple[Global, Any, Any]] = []
        for g, lists in ((self.blocks, per_term), (self.tag_blocks, per_tag)):
            for term, gone in lists.items():
                k, s = self._without(g, owner, term, sorted(gone))
                kills += k
                sets += s
                if len(kills) + len(sets) >= _WRITES_BATCH:  # written as they come: not an owner's whole index held at once
                    self.space.apply(kills, sets)
                    kills, sets = [], []
        sets.extend(self._patched(owner, records)[0])
        self.space.apply(kills, sets)

    def set_levels(self, owner: str, levels: Iterable[tuple[str, int]]) -> None:
        """Set the relevance level (0-250) of these hot episodes' documents: their level chunks
        are rewritten with their stamps, and nothing else (a document's outcome never changes:
        a record that changes gets a new document). Only the level chunks are read."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        eids, wanted = [], []
        for eid, level in levels:
            eids.append(eid)
            wanted.append(level)
        patches: dict[int, dict[int, int]] = defaultdict(dict)
        for doc, level in zip(self.numbers_of(owner, [codec.encode_subscript(e) for e in eids]), wanted, strict=True):
            if doc is not None:
                patches[doc // CHUNK_DOCS][doc % CHUNK_DOCS] = level
        if not patches:
            return
        keys = {c: self.levels.key((owner, c)) for c in patches}
        with self.space.reader() as txn:
            found = txn.get_many(list(keys.values()))  # one round trip on PostgreSQL
        written: dict[int, bytes] = {}
        for chunk, by_slot in patches.items():
            raw = found.get(keys[chunk])
            if raw is None:
                continue
            stored = _payload(raw)
            chunk_levels = bytearray(stored)
            for i, level in by_slot.items():
                if i < len(chunk_levels):
                    chunk_levels[i] = level
            if chunk_levels != stored:
                written[chunk] = bytes(chunk_levels)
        if not written:
            return
        stamped = self._stamped(self.level_stamps, owner, written)
        self.space.apply((), [*((self.levels, (owner, c), v) for c, v in written.items()), stamped])
        self._keep_written(self.levels, owner, written, stamped[2])

    def _keep_written(self, g: Global, owner: str, written: Mapping[int, bytes], stamps: bytes) -> None:
        """Keep the chunks of ``g`` (records or levels) this process just wrote with their new
        stamps, so the next query reads none of them again (an access flush rewrites a few hundred
        level chunks). Safe if the transaction is rolled back: the stored stamps are then the old
        ones, unlike the kept, so they are read."""
        kept_stamps, kept, _ = self._kept.get((g.name, owner), (b"", [], None))
        if not kept:
            return  # nothing kept yet: the next read reads them all anyway
        n = len(stamps) // 8
        ks = bytearray(kept_stamps[: n * 8].ljust(n * 8, b"\0"))  # a chunk with no kept stamp is read
        chunks: list[memoryview | None] = list(kept[:n]) + [None] * max(n - len(kept), 0)
        for c, data in written.items():
            ks[c * 8 : c * 8 + 8] = stamps[c * 8 : c * 8 + 8]
            chunks[c] = memoryview(data)
        self._kept[(g.name, owner)] = (bytes(ks), chunks, None)

    def drop_owner(self, owner: str) -> None:
        """Kill an owner's whole text index (a rebuild follows)."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        kills: list[tuple[Global, Any]] = [
            (g, (owner,)) for g in (self.numbers, self.blocks, self.tag_blocks, self.columns, self.stamps, self.levels, self.level_stamps)
        ]
        self.space.apply([*kills, (self.stats, (owner, "next_doc"))])

    def drop_documents(self, owner: str) -> None:
        """Take every document of an owner out (what ``remove`` of each would leave, but by range
        deletes): its numbers, blocks, tag lists, columns, levels and their stamps go; the next
        document number stays (numbers are never reused). A reader that kept chunks sees the
        stamps changed, and reads them again (none)."""
        self.space.flush_staged()  # what this transaction staged goes too
        for g in (self.numbers, self.blocks, self.tag_blocks, self.columns, self.stamps, self.levels, self.level_stamps):
            g.kill((owner,))

    def _appended(
        self,
        g: Global,
        owner: str,
        numbers: Sequence[int],
        firsts: Sequence[bytes],
        dls: Sequence[int],
        names: Sequence[Collection[str]],
        tfs: Sequence[int],
        txn: ReadTxn,
    ) -> list[tuple[bytes, bytes]]:
        """The block writes (encoded key, packed value) that append documents ``numbers``
        (ascending, after every document already there; ``firsts`` encoded as subscripts, lengths
        ``dls``) to the terms (or tags) each one names in ``names``, with ``tfs`` for these names
        laid end to end: each term's last block filled first, then new blocks (``stage_blocks``,
        in C: the names are numbered here, each distinct one looked up once).

        A term's last block is remembered as this process last wrote or read it, and used while
        the owner's stamps are those this process wrote with it (``_write_docs`` forgets the
        owner's otherwise): no one wrote the owner's blocks since. A term not remembered is
        looked up (one cursor step: most terms a batch looks up are new, with no block at all)."""
        flat = list(itertools.chain.from_iterable(names))
        if not flat:
            return []
        distinct = list(dict.fromkeys(flat))
        number_of = dict(zip(distinct, itertools.count(), strict=False))
        if self._tails_held + len(distinct) > _TAILS_KEPT:
            self._tails.clear()  # one bound on the terms of all owners, none on the owners: owners
            self._tails_held = 0  # taking turns past a bound of theirs emptied it at every capture (revM)
            self._tails_stamps.clear()  # and the owners' stamps kept with them (an empty cache needs none)
        kept = self._tails.setdefault((g.name, owner), {})
        kept_before = len(kept)
        tails: list[tuple[bytes, bytes, int] | None] = []  # per term: (key, packed value, documents in it)
        prefixes: list[bytes | None] = []
        for term in distinct:
            tail = kept.get(term)
            prefix = None
            if tail is None:
                prefix = g.key((owner, term))
                found = txn.first(*codec.children_range(prefix), True)
                if found is not None:
                    tail = (found[0], found[1], block_header(_payload(found[1]))[0])
            tails.append(tail)
            prefixes.append(prefix)
        staged = stage_blocks(
            numbers,
            dls,
            list(itertools.accumulate(map(len, names))),
            list(map(number_of.__getitem__, flat)),
            tfs,
            [_payload_copy(t[1]) if t is not None and t[2] < BLOCK_DOCS else None for t in tails],
        )
        tail_keys = [t[0] if t is not None else b"" for t in tails]
        out: list[tuple[bytes, bytes]] = []
        for t, first, value, n in staged:
            if first is None:  # the term's last block, rewritten
                key = tail_keys[t]
            else:
                prefix = prefixes[t]
                if prefix is None:
                    prefix = prefixes[t] = g.key((owner, distinct[t]))
                key = prefix + firsts[first]
            out.append((key, value))
            kept[distinct[t]] = (key, value, n)  # a term's blocks come in order: its last stays
        self._tails_held += len(kept) - kept_before
        return out

    def _without(
        self, g: Global, owner: str, term: str, gone: Sequence[int]
    ) -> tuple[list[tuple[Global, Any]], list[tuple[Global, Any, Any]]]:
        """The block rewrites that drop documents ``gone`` (ascending) from a term, each block
        read and written once (an emptied block is killed; the block keeps its key and its length
        bound, which stays a bound): one lookup finds the block of the first document left, and
        its header's last document says which of the next ones it holds too."""
        kills: list[tuple[Global, Any]] = []
        sets: list[tuple[Global, Any, Any]] = []
        i = 0
        while i < len(gone):
            keys, values = g.raw_columns((owner, term), stop=gone[i] + 1, reverse=True, limit=1)
            if not keys:  # before the term's first block: in none of them
                i += 1
                continue
            first = codec.decode(keys[0], len(g.key()))[-1]
            block = _payload(values[0])
            _, _, min_dl, _, last = block_header(block)
            j = max(bisect.bisect_right(gone, last, i), i + 1)
            drop = set(gone[i:j])
            i = j
            docs, tfs = decode_block(block)
            kept = [(d, tf) for d, tf in zip(docs, tfs, strict=True) if d not in drop]
            if len(kept) == len(docs):
                continue
            if not kept:
                kills.append((g, (owner, term, first)))
            else:
                sets.append((g, (owner, term, first), encode_block([d for d, _ in kept], [tf for _, tf in kept], min_dl)))
        return kills, sets

    def _patched(
        self, owner: str, records: Mapping[int, Mapping[int, tuple[bytes, int]]], stamps: bytes | None = None
    ) -> tuple[list[tuple[Global, Any, Any]], bytes]:
        """The column and level chunk writes that put ``records`` (by chunk, by document: the
        record and its level) in place, with their stamps, and the records' stamps (^EPCV) as
        written (``stamps``: as stored, when the caller read them)."""
        out: list[tuple[Global, Any, Any]] = []
        for chunk, by_doc in records.items():
            data = bytearray(self.columns.get((owner, chunk)) or b"")
            levels = bytearray(self.levels.get((owner, chunk)) or b"")
            end = max(by_doc) % CHUNK_DOCS + 1
            if len(data) < end * RECORD_BYTES:
                data.extend(bytes(end * RECORD_BYTES - len(data)))
            if len(levels) < len(data) // RECORD_BYTES:
                levels.extend(bytes(len(data) // RECORD_BYTES - len(levels)))
            for doc, (rec, level) in by_doc.items():
                i = doc % CHUNK_DOCS
                data[i * RECORD_BYTES : (i + 1) * RECORD_BYTES] = rec
                levels[i] = level
            out.append((self.columns, (owner, chunk), bytes(data)))
            out.append((self.levels, (owner, chunk), bytes(levels)))
        if not out:
            return out, b""
        written = self._stamped(self.stamps, owner, records, stamps)
        out += (written, self._stamped(self.level_stamps, owner, records))
        return out, written[2]

    def _stamped(self, g: Global, owner: str, chunks: Iterable[int], stored: bytes | None = None) -> tuple[Global, Any, Any]:
        """The stamps value ``g`` (``^EPCV`` or ``^EPLV``) with a fresh random stamp for each of
        ``chunks`` (written with them); ``stored`` is ``g``'s value, when the caller read it."""
        stamps = bytearray((g.get((owner,)) or b"") if stored is None else stored)
        stamp = os.urandom(8)
        for chunk in chunks:
            end = (chunk + 1) * 8
            if len(stamps) < end:
                stamps.extend(bytes(end - len(stamps)))
            stamps[end - 8 : end] = stamp
        return (g, (owner,), bytes(stamps))

    # --- reading -----------------------------------------------------------------------------

    def number(self, owner: str, eid: str) -> int | None:
        """The document number of a hot episode."""
        found = self.numbers.get((owner, eid))
        return None if found is None else int(found)

    def term_blocks(self, owner: str, term: str) -> list[memoryview]:
        """Every block of a term, in document order."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        return [_payload(v) for v in self.blocks.raw_columns((owner, term))[1]]

    def tag_list(self, owner: str, tag: str) -> list[memoryview]:
        """Every block of a tag's list of documents, in document order."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        return [_payload(v) for v in self.tag_blocks.raw_columns((owner, tag))[1]]

    def stored_list(self, owner: str, name: str, tag: bool = False) -> StoredList:
        """A term's blocks (or a tag's list, with ``tag``) as stored, in one read (for ``search``)."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        g = self.tag_blocks if tag else self.blocks
        values = g.raw_columns((owner, name))[1]
        return StoredList(b"".join(values), {"values": len(values)})

    def chunks(self, owner: str) -> ColumnChunks:
        """The owner's column chunks, records and levels, indexed by chunk number (None where
        none was written): those kept from an earlier read whose stamp is unchanged, the others
        read now. The same object while neither changed."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        records = self._fresh(self.columns, self.stamps, owner)
        levels = self._fresh(self.levels, self.level_stamps, owner)
        both = self._both.get(owner)
        if both is None or both.records is not records or both.levels is not levels:
            _make_room(self._both, owner, _OWNERS_KEPT)
            both = self._both[owner] = ColumnChunks(records, levels)
        return both

    def levels_of(self, owner: str) -> bytes:
        """The owner's relevance levels, one byte a document laid end to end (0 past a chunk's
        end and for a chunk never written): what an index entry's document number makes its code
        of (``memdb.memory.layout.entry_codes``). Joined again only when a level chunk changed."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        chunks = self._fresh(self.levels, self.level_stamps, owner)
        kept = self._flat.get(owner)
        if kept is not None and kept[0] is chunks:
            return kept[1]
        pad = bytes(CHUNK_DOCS)
        flat = b"".join(bytes(c).ljust(CHUNK_DOCS, b"\0") if c is not None else pad for c in chunks)
        _make_room(self._flat, owner, _OWNERS_KEPT)
        self._flat[owner] = (chunks, flat)
        return flat

    def _fresh(self, g: Global, stamps_g: Global, owner: str) -> list[memoryview | None]:
        """The owner's chunks of ``g`` (records or levels) as stored, by ``stamps_g``'s stamps:
        those kept whose stamp is unchanged (the same list while none changed), the others read."""
        packed = self._stamps_of(stamps_g, owner)
        slot = (g.name, owner)
        kept_stamps, kept, kept_packed = self._kept.get(slot, (b"", [], None))
        if packed == kept_packed:
            return kept  # the packed stamps that gave kept: not unpacked and compared again (8 KB at 1M)
        stamps = bytes(codec.unpack_value(packed)) if packed else b""
        if stamps == kept_stamps:
            self._kept[slot] = (kept_stamps, kept, packed)
            return kept
        n = len(stamps) // 8
        out: list[memoryview | None] = list(kept[:n]) + [None] * max(n - len(kept), 0)
        changed = [c for c in range(n) if stamps[c * 8 : c * 8 + 8] != kept_stamps[c * 8 : c * 8 + 8]]
        # most of them (a first read): one range read of them all; else one get each (about 5 µs
        # a chunk against 7-20 for the range read of all: an access flush rewrites a few hundred)
        if len(changed) > 16 and len(changed) > n // 2:
            out = self._read_chunks(g, owner)
            out = out[:n] + [None] * (n - len(out))
        else:
            for c in changed:
                value = g.raw_get(g.key((owner, c)))
                out[c] = _payload(value) if value is not None else None
        _make_room(self._kept, slot, 2 * _OWNERS_KEPT)
        self._kept[slot] = (stamps, out, packed)
        return out

    def memo(self, owner: str) -> dict[Any, Any]:
        """A dict where readers keep what they derive from the owner's documents (posting lists,
        document frequencies, statistics, the tags and kinds indexed), kept while the owner's
        stamps (^EPCV) are unchanged, else a new one.

        Every change to an owner's documents writes a column record (an append writes the new
        ones, a removal zeroes the old), so it writes a fresh random stamp in the same
        transaction as the postings and the counters capture keeps with them: equal stamps
        in a snapshot mean the same documents, whichever process wrote them. Inside a write
        transaction the answer is a new dict that is not kept: its deferred counters are
        not yet applied, and it may roll back."""
        number = self.space.snapshot_number()  # (0 outside a read-only snapshot)
        if number:  # nothing changes in a snapshot: the memo found in it stands (an empty answer asks four times)
            seen = self._memo_seen.get(owner)
            if seen is not None and seen[0] == number:
                return seen[1]
        elif self.space.in_transaction:
            return {}
        stamps = self._stamps_of(self.stamps, owner)  # as packed: equal bytes, equal stamps
        kept = self._memos.get(owner)
        if kept is None or kept[0] != stamps:
            _make_room(self._memos, owner, _OWNERS_KEPT)
            kept = self._memos[owner] = (stamps, {})
        if number:
            _make_room(self._memo_seen, owner, _OWNERS_KEPT)
            self._memo_seen[owner] = (number, kept[1])
        return kept[1]

    def _stamps_of(self, g: Global, owner: str) -> bytes:
        """The stamps value ``g`` (^EPCV or ^EPLV) holds for ``owner``, as packed (b"" for none):
        read once in a read-only snapshot (``Globals.snapshot_number``), where one answer asks for
        it for its memo, its columns and its levels (the records' stamps were read twice by an
        empty window's note: 8 KB each at a million episodes, and a round trip on PostgreSQL)."""
        number = self.space.snapshot_number()
        slot = (g.name, owner)
        read = self._stamps_read.get(slot)
        if read is not None and number and read[0] == number:
            return read[1]
        key = read[2] if read is not None else g.key((owner,))
        packed = g.raw_get(key) or b""
        if read is None:
            _make_room(self._stamps_read, slot, 2 * _OWNERS_KEPT)
        self._stamps_read[slot] = (number, packed, key)
        return packed

    def chunk_summaries(self, owner: str, chunks: ColumnChunks | None = None) -> list[Summary]:
        """``chunk_summary`` of each chunk of ``chunks(owner)`` (the same list a call of it returns
        now; ``chunks``, when the caller holds it from this snapshot): each part computed once per
        chunk read, the newest and oldest times from the records, the highest level from the
        levels (an access flush rewrites levels only)."""
        if chunks is None:
            chunks = self.chunks(owner)
        kept: list[Summary] | None = chunks.derived.get("summaries")
        if kept is not None:
            return kept  # (never changed by its readers)
        times = self._summary_part(self.columns, owner, chunks.records, lambda c: chunk_summary(c, None)[::2])
        levels = self._summary_part(self.levels, owner, chunks.levels, lambda c: chunk_summary(None, c)[1])
        levels = levels[: len(times)] + [0] * (len(times) - len(levels))
        out = chunks.derived["summaries"] = [(newest, level, oldest) for (newest, oldest), level in zip(times, levels, strict=True)]
        return out

    def _summary_part(
        self, g: Global, owner: str, chunks: Sequence[bytes | memoryview | None], part: Callable[[Any], _Part]
    ) -> list[_Part]:
        """``part`` of each of ``chunks`` (of ``g``), reusing what was computed for a chunk kept."""
        seen, parts = self._summaries.get((g.name, owner), ([], []))
        if seen is chunks:
            return parts
        out = [parts[c] if c < len(seen) and seen[c] is chunk else part(chunk) for c, chunk in enumerate(chunks)]
        _make_room(self._summaries, (g.name, owner), 2 * _OWNERS_KEPT)
        self._summaries[(g.name, owner)] = (chunks, out)
        return out

    def _read_chunks(self, g: Global, owner: str) -> list[memoryview | None]:
        """Every chunk of ``g`` (records or levels) of the owner as stored, indexed by chunk number."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        keys, values = g.raw_columns((owner,))
        base = len(g.key((owner,)))
        out: list[memoryview | None] = []
        for key, value in zip(keys, values, strict=True):
            chunk = codec.int_at(key, base)
            if chunk is None:
                chunk = int(codec.decode_one(key, base)[0])
            out.extend([None] * (chunk - len(out)))
            out.append(_payload(value))
        return out

    def column(self, owner: str, doc: int) -> Column | None:
        """The column record of one document, with its level."""
        self.space.flush_staged()  # what this transaction staged, so it is read too
        raw = self.columns.get((owner, doc // CHUNK_DOCS))
        return unpack_record(raw, self.levels.get((owner, doc // CHUNK_DOCS)), doc) if raw is not None else None

    def hits_of(self, owner: str, terms: Sequence[str], eids: Sequence[str]) -> list[dict[str, tuple[int, int]]]:
        """Each episode's ``{term: (tf, dl)}`` for the terms it holds (in ``terms`` order); empty
        for an episode with none, or with no text document."""
        return self.hits_of_keys(owner, terms, [codec.encode_subscript(eid) for eid in eids])

    def hits_of_keys(self, owner: str, terms: Sequence[str], keys: Sequence[bytes]) -> list[dict[str, tuple[int, int]]]:
        """``hits_of`` for episodes given as encoded id subscripts (the last bytes of every
        index key, so the query layer slices them out instead of encoding ids again)."""
        out: list[dict[str, tuple[int, int]]] = [{} for _ in keys]
        present = [(i, doc) for i, doc in enumerate(self.numbers_of(owner, keys)) if doc is not None]
        chunks = self.chunks(owner) if present else ColumnChunks([], [])
        for (i, doc), tfs in zip(present, self.tfs_of(owner, terms, [doc for _, doc in present]), strict=True):
            if not tfs:
                continue
            dl = live_record(chunks, doc).dl
            out[i] = {t: (tf, dl) for t, tf in tfs.items()}
        return out

    def numbers_of(self, owner: str, keys: Sequence[bytes]) -> list[int | None]:
        """The document number of each episode (given as its encoded id subscript; None for one
        with none), in one snapshot."""
        prefix = self.numbers.key((owner,))
        unpack = codec.unpack_value
        with self.space.reader() as txn:
            found = txn.get_many([prefix + key for key in keys])  # one round trip on PostgreSQL
        raws = [found.get(prefix + key) for key in keys]
        return [None if raw is None else int(unpack(raw)) for raw in raws]

    def tfs_of(self, owner: str, terms: Sequence[str], docs: Sequence[int]) -> list[dict[str, int]]:
        """Each document's frequency of each term (absent terms left out): for a few documents
        only the blocks that hold them are read, for many the term's whole list."""
        out: list[dict[str, int]] = [{} for _ in docs]
        order = sorted(range(len(docs)), key=docs.__getitem__)
        if len(docs) > 8:
            rows = lookup_tfs([self.term_blocks(owner, t) for t in terms], [docs[i] for i in order])
            for i, row in zip(order, rows, strict=True):
                out[i] = {t: tf for t, tf in zip(terms, row, strict=True) if tf}
            return out
        self.space.flush_staged()  # what this transaction staged, so it is read too
        encode = codec.encode_subscript
        with self.space.reader() as txn:  # the block that would hold each document: the last starting at or before it
            for term in terms:
                base = self.blocks.key((owner, term))
                lo = codec.children_range(base)[0]
                first, last, by_doc = 1, 0, {}  # the block read last: its documents' range and tfs
                for i in order:
                    doc = docs[i]
                    if not first <= doc <= last:
                        values = txn.scan_columns(lo, base + encode(doc + 1), True, 1)[1]
                        if not values:
                            continue
                        ds, tfs = decode_block(_payload(values[0]))
                        first, last, by_doc = ds[0], ds[-1], dict(zip(ds, tfs, strict=True))
                    tf = by_doc.get(doc)
                    if tf:
                        out[i][term] = tf
        return out

    # --- checking: what is stored, read in one streaming pass ------------------------------------
    # ``memdb.memory.check`` compares these with what the records imply; they read the formats
    # above and report what is wrong with them, and hold one block or chunk at a time.

    def stored_numbers(self, owner: str) -> Iterator[tuple[str, int]]:
        """Each episode's document number (^EPDN) in id order; a key of another shape is skipped
        (check counts numbers against the hot records)."""
        for subs, value in self.numbers.items((owner,)):
            if len(subs) == 2:
                yield str(subs[1]), int(value)

    def stored_columns(self, owner: str, problems: list[str] | None = None) -> Iterator[tuple[int, Column]]:
        """The live column records of the owner's whole chunks, by document (as a query reads
        them), one chunk held at a time; with ``problems``, what is wrong with the chunks, their
        levels and stamps goes into it (levels of a chunk without records ahead of the rest)."""
        stamps = self.stamps.get((owner,)) or b""
        level_stamps = self.level_stamps.get((owner,)) or b""
        base = len(self.columns.key((owner,)))
        start = len(problems) if problems is not None else 0
        chunks = 0
        for key, raw in self.columns.raw_range((owner,)):
            c = codec.int_at(key, base)
            if c is None:
                c = int(codec.decode_one(key, base)[0])
            chunks = c + 1
            chunk = _payload(raw)
            raw_levels = self.levels.raw_get(self.levels.key((owner, c)))
            levels = _payload(raw_levels) if raw_levels is not None else None
            if problems is not None:
                if stamps[c * 8 : c * 8 + 8] in (b"", bytes(8)):
                    problems.append(f"^EPCV({owner!r}): no stamp for chunk {c}")
                if level_stamps[c * 8 : c * 8 + 8] in (b"", bytes(8)):
                    problems.append(f"^EPLV({owner!r}): no stamp for chunk {c}")
            if len(chunk) % RECORD_BYTES or len(chunk) > CHUNK_DOCS * RECORD_BYTES:
                if problems is not None:
                    problems.append(f"^EPC({owner!r},{c}): {len(chunk)} bytes, not whole records of one chunk")
                continue
            if levels is None or len(levels) != len(chunk) // RECORD_BYTES:
                if problems is not None:
                    got = "none" if levels is None else f"{len(levels)}"
                    problems.append(f"^EPL({owner!r},{c}): {got} levels for {len(chunk) // RECORD_BYTES} records")
                continue
            for i in range(len(chunk) // RECORD_BYTES):
                col = unpack_record(chunk, levels, c * CHUNK_DOCS + i)
                # an outcome above 3 is damage that unpack_record's two bits would hide
                if col is not None and col.live and _RECORD.unpack_from(chunk, i * RECORD_BYTES)[3] <= 3:
                    yield c * CHUNK_DOCS + i, col
                elif problems is None:
                    continue
                elif col is not None and col.live:
                    problems.append(f"^EPC({owner!r},{c}): record {i} holds an outcome above 3")
                elif chunk[i * RECORD_BYTES : (i + 1) * RECORD_BYTES] != _ZERO_RECORD or levels[i]:
                    problems.append(f"^EPC({owner!r},{c}): record {i} is neither live nor zeroed with level 0")
        if problems is not None:
            base = len(self.levels.key((owner,)))
            beyond = []
            for key, _ in self.levels.raw_range((owner,), start=chunks):
                c = codec.int_at(key, base)
                c = int(codec.decode_one(key, base)[0]) if c is None else c
                beyond.append(f"^EPL({owner!r},{c}): levels of a chunk that has no records")
            problems[start:start] = beyond

    def stored_postings(
        self,
        owner: str,
        *,
        tags: bool = False,
        problems: list[str] | None = None,
        wanted: Callable[[str], bool] | None = None,
        length: Callable[[int], int | None] | None = None,
    ) -> Iterator[tuple[str, list[int], list[int]]]:
        """The owner's term lists (tag lists with ``tags``) a block at a time, as ``(term,
        docs, tfs)`` in key order; a damaged block or key is left out. With ``problems``, what
        is wrong goes into it: a damaged block or key, a block out of order or over
        ``BLOCK_DOCS``, and one whose header does not bound a document of ``length(doc)`` (None
        where unknown). ``wanted(term)`` False skips a term's blocks without decoding them."""
        g = self.tag_blocks if tags else self.blocks
        prev_term, prev_last = None, -1
        n = len(g.key())
        for key, raw in g.raw_range((owner,)):
            subs = codec.decode(key, n)
            if len(subs) != 3 or not isinstance(subs[1], str) or not isinstance(subs[2], int):
                if problems is not None:
                    problems.append(f"^{g.name}{subs!r}: not a block key (owner, term or tag, first document)")
                continue
            term, first = str(subs[1]), int(subs[2])
            if wanted is not None and not wanted(term):
                continue
            if term != prev_term:
                prev_term, prev_last = term, -1
            try:
                block = _payload(raw)
                docs, tfs = py_decode_block(block)
                _, max_tf, min_dl, _, _ = block_header(block)
            except CorruptValueError:
                if problems is not None:
                    problems.append(f"^{g.name}{subs!r}: damaged block")
                continue
            if problems is not None:
                if len(docs) > BLOCK_DOCS or docs[0] < first or docs[0] <= prev_last:
                    problems.append(f"^{g.name}{subs!r}: block out of order or over {BLOCK_DOCS} documents")
                if length is not None:
                    for doc, tf in zip(docs, tfs, strict=True):
                        dl = length(doc)
                        if dl is not None and (tf > max_tf or dl < min_dl):
                            problems.append(f"^{g.name}{subs!r}: the block's bounds do not bound document {doc}")
            prev_last = docs[-1]
            yield term, docs, tfs


def stored_tf(tf: int) -> int:
    """A term frequency as a block stores it (capped at 65,535): what check expects to read."""
    return min(tf, _MAX_TF)
