"""The whole-owner comparison of a text index with its documents, as ``TextIndex.problems`` did
before ``db.check()`` read the index in one streaming pass (``TextIndex.stored_*``): the oracle of
tests/memory/test_check.py and of tests/memory/test_postings.py's model. It holds an owner's
index in dicts, and reads the stored bytes by itself, so a fault of the streaming readers does
not hide in both."""

from __future__ import annotations

from collections.abc import Mapping

from memdb.engine import codec
from memdb.engine.globals import Global
from memdb.errors import CorruptValueError
from memdb.memory.postings import (
    BLOCK_DOCS,
    CHUNK_DOCS,
    RECORD_BYTES,
    Column,
    Doc,
    StoredList,
    TextIndex,
    block_header,
    id_of,
    py_decode_block,
    stored_tf,
    unpack_record,
)

_ZERO_RECORD = bytes(RECORD_BYTES)


def _value(raw: bytes) -> bytes | memoryview:
    """A stored bytes value (a block or a chunk), unpacked as ``StoredList`` splits them."""
    (value,) = StoredList(raw).blocks()
    return value


def _chunks(g: Global, owner: str) -> list[bytes | memoryview | None]:
    """Every chunk of ``g`` of the owner, indexed by chunk number."""
    keys, values = g.raw_columns((owner,))
    base = len(g.key((owner,)))
    out: list[bytes | memoryview | None] = []
    for key, value in zip(keys, values, strict=True):
        chunk = int(codec.decode_one(key, base)[0])
        out.extend([None] * (chunk - len(out)))
        out.append(_value(value))
    return out


def _list_problems(
    g: Global, owner: str, want: Mapping[tuple[str, int], int], dls: Mapping[int, int], by_doc: Mapping[int, str]
) -> list[str]:
    out: list[str] = []
    have: dict[tuple[str, int], int] = {}
    prev_term, prev_last = None, -1
    for key, raw in zip(*g.raw_columns((owner,)), strict=True):
        subs = codec.decode(key, len(g.key()))
        if len(subs) != 3 or not isinstance(subs[1], str) or not isinstance(subs[2], int):
            out.append(f"^{g.name}{subs!r}: not a block key (owner, term or tag, first document)")
            continue
        term, first = str(subs[1]), int(subs[2])
        if term != prev_term:
            prev_term, prev_last = term, -1
        try:
            block = _value(raw)
            docs, tfs = py_decode_block(block)
            _, max_tf, min_dl, _, _ = block_header(block)
        except CorruptValueError:
            out.append(f"^{g.name}{subs!r}: damaged block")
            continue
        if len(docs) > BLOCK_DOCS or docs[0] < first or docs[0] <= prev_last:
            out.append(f"^{g.name}{subs!r}: block out of order or over {BLOCK_DOCS} documents")
        prev_last = docs[-1]
        for doc, tf in zip(docs, tfs, strict=True):
            have[(term, doc)] = tf
            dl = dls.get(doc)
            if dl is not None and (tf > max_tf or dl < min_dl):
                out.append(f"^{g.name}{subs!r}: the block's bounds do not bound document {doc}")
    for term, doc in sorted(want.keys() | have.keys()):
        if want.get((term, doc)) != have.get((term, doc)):
            got, wanted = have.get((term, doc)), want.get((term, doc))
            out.append(f"^{g.name}({owner!r},{term!r},...): document {doc} ({by_doc.get(doc)}): tf {got}, expected {wanted}")
    return out


def text_index_problems(text: TextIndex, owner: str, expected: Mapping[str, Doc]) -> list[str]:
    """What differs between an owner's text index and ``expected`` (its hot episodes by id):
    numbers, column records, blocks, their order and their bounds."""
    text.space.flush_staged()  # what this transaction staged, so it is read too
    out: list[str] = []
    numbers = {str(s[1]): int(v) for s, v in text.numbers.items((owner,)) if len(s) == 2}
    next_doc = int(text.stats.get((owner, "next_doc"), 0))
    for eid in sorted(expected.keys() - numbers.keys()):
        out.append(f"^EPDN({owner!r},{eid!r}): hot episode without a text document number")
    for eid in sorted(numbers.keys() - expected.keys()):
        out.append(f"^EPDN({owner!r},{eid!r}): document number of an episode that is not hot")
    if len(set(numbers.values())) != len(numbers):
        out.append(f"^EPDN({owner!r}): two episodes share a document number")
    if numbers and max(numbers.values()) >= next_doc:
        out.append(f"^EPN({owner!r},'next_doc'): {next_doc}, but document {max(numbers.values())} exists")
    live: dict[int, Column] = {}
    stamps = text.stamps.get((owner,)) or b""
    level_stamps = text.level_stamps.get((owner,)) or b""
    all_levels = _chunks(text.levels, owner)
    records = _chunks(text.columns, owner)
    for c in range(len(records), len(all_levels)):
        if all_levels[c] is not None:
            out.append(f"^EPL({owner!r},{c}): levels of a chunk that has no records")
    for c, chunk in enumerate(records):
        if chunk is None:
            continue
        if stamps[c * 8 : c * 8 + 8] in (b"", bytes(8)):
            out.append(f"^EPCV({owner!r}): no stamp for chunk {c}")
        if level_stamps[c * 8 : c * 8 + 8] in (b"", bytes(8)):
            out.append(f"^EPLV({owner!r}): no stamp for chunk {c}")
        if len(chunk) % RECORD_BYTES or len(chunk) > CHUNK_DOCS * RECORD_BYTES:
            out.append(f"^EPC({owner!r},{c}): {len(chunk)} bytes, not whole records of one chunk")
            continue
        levels = all_levels[c] if c < len(all_levels) else None
        if levels is None or len(levels) != len(chunk) // RECORD_BYTES:
            got = "none" if levels is None else f"{len(levels)}"
            out.append(f"^EPL({owner!r},{c}): {got} levels for {len(chunk) // RECORD_BYTES} records")
            continue
        for i in range(len(chunk) // RECORD_BYTES):
            col = unpack_record(chunk, levels, c * CHUNK_DOCS + i)
            outcome = int.from_bytes(chunk[i * RECORD_BYTES + 16 : i * RECORD_BYTES + 18], "little")
            if col is not None and col.live and outcome <= 3:
                live[c * CHUNK_DOCS + i] = col
            elif col is not None and col.live:
                out.append(f"^EPC({owner!r},{c}): record {i} holds an outcome above 3")
            elif chunk[i * RECORD_BYTES : (i + 1) * RECORD_BYTES] != _ZERO_RECORD or levels[i]:
                out.append(f"^EPC({owner!r},{c}): record {i} is neither live nor zeroed with level 0")
    by_doc = {doc: eid for eid, doc in numbers.items()}
    for doc in sorted(live.keys() - by_doc.keys()):
        out.append(f"^EPC({owner!r},{doc // CHUNK_DOCS}): live record of document {doc}, which no episode has")
    want: dict[tuple[str, int], int] = {}
    for eid, d in expected.items():
        doc = numbers.get(eid)
        if doc is None:
            continue
        col = live.get(doc)
        if col is None:
            out.append(f"^EPC({owner!r},{doc // CHUNK_DOCS}): no live record of document {doc} ({eid})")
        elif (col.ts_us, id_of(col), col.dl, col.code) != (d.ts_us, eid, d.dl, d.code):
            out.append(f"^EPC({owner!r},{doc // CHUNK_DOCS}): record of document {doc} differs from episode {eid}")
        want.update({(term, doc): stored_tf(tf) for term, tf in d.tf.items()})
    want_tags = {(tag, numbers[eid]): 1 for eid, d in expected.items() if eid in numbers for tag in d.tags}
    dls = {doc: expected[eid].dl for eid, doc in numbers.items() if eid in expected}
    for g, wanted_lists in ((text.blocks, want), (text.tag_blocks, want_tags)):
        out.extend(_list_problems(g, owner, wanted_lists, dls, by_doc))
    return out
