"""The on-disk layout of episodes: every global's name, its keys and its values, each reader
beside its writer. Other modules call these functions; none parses these bytes itself.

Layout (every global's first subscript is the owner, so scoping is structural)::

    ^MEM(owner, day, id)                the record (what happened: fields and bounded digests)
    ^EPST(owner, id)                    its header: relevance, access_count, last_access, feedback,
                                        status, plus ts, tags, kind, outcome and session, so that
                                        filtering, ranking and rescoring never read the full record
    ^EPT(owner, ts_us, id) = entry      time index
    ^EPG(owner, tag, ts_us, id) = entry tag index
    ^EPGO(owner, tag, outcome, ts_us, id) = entry  tag+outcome index (episodes with an outcome),
                                        for "past failures on X" without scanning all of X
    ^EPK(owner, kind, outcome, ts_us, id) = entry  kind+outcome index ("-" for no outcome)
    ^EPS(owner, session, ts_us, id) = entry  session index
    ^EPB(owner, band, ts_us, id) = entry relevance band (0-10) index
    ^EPTD(owner, start_us, end_us, ts_us, id) = entry  the windows an episode's text tells of
                                        ("yesterday", "last week": ``told_of``), by start
    ^EPDN(owner, id) = doc              the text index (``memdb.memory.postings``): a hot episode's
    ^EPX(owner, term, first) = block    document number, the terms' posting blocks, the tags'
    ^EPXT(owner, tag, first) = block    lists of documents, and the per-document columns
    ^EPC(owner, chunk) = records        (time, id, length, outcome), and ^EPL their relevance levels
    ^EPDF(owner, term) = df             documents holding the term (BM25's idf without a scan)
    ^EPN(owner, "docs"|"terms"|"episodes"|"archived"|"archive_changes"|"dropped"|"next_doc")   per-owner statistics
                                        ("archive_changes" counts every change to what archived headers say)
    ^EPAR(owner, ts_us, id)             archived episodes (their one-line summary, lesson, decisions'
                                        words and a short account are in the header: ``ARCHIVED_FIELDS``)
    ^EPSA(owner, session, ts_us, id)    archived episodes of a session (layout 22): a session whose
                                        captures were archived is still closed from them
    ^EPSU(owner, ts_us, id)             superseded versions: the record stays in ^MEM, the header says
                                        ``status: "superseded"`` and names its successor; out of every
                                        hot index and the text postings (``superseded_header``)
    ^EPFK(owner, key) = id              the current version of each fact (kind ``fact``)
    ^COLD(owner, id) = {...}            archived full records, compressed by the lifecycle layer
    ^AUDIT(owner, audit_id) = {...}     the audit log (``memdb.memory.audit``)
    ^AUDITDB(audit_id) = {...}          database-wide audit records (settings changes)
    ^META("settings"|"layout"|...)      the database's settings, layout version and counters;
                                        ``OWNER_ERASURES`` counts owners erased (caches of what a
                                        process derived from an owner's data keep it in their key)

The time-ordered indexes share one layout, so the query layer works on encoded keys: every
entry ends in the same encoded ``(ts_us, id)`` tail (ids have a fixed length, so the id is a
slice of it), and ``key(prefix) + tail`` tests membership in another index with one lookup.
Their value, ``entry``, is the episode's document number and outcome (``entry_value``); with
the relevance level of that document's level chunk it makes the episode's index code (relevance
to 1/25 of a point and outcome, ``index_code``; ``entry_codes``), so filtering by outcome and
bounding relevance need no header read. Reading moves only the level: an access flush (and a
rescore) rewrites level chunks and headers, never an entry; an entry is rewritten only when its
episode gets a new document number (its text changed, or it came back from cold storage).

Versions: a record that replaces another holds ``supersedes`` (the old id) and
``supersede_reason``, and its header copies ``supersedes``, so a chain is walked on headers
alone, archived versions included: back through ``supersedes``, forward through the
``superseded_by`` that a superseded header holds. A fact's record holds its ``key``. Records
written before versions existed hold none of these fields and read as unversioned.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Final

from memdb import native
from memdb.engine import codec
from memdb.engine.globals import Global, Globals
from memdb.errors import CorruptValueError, StoreFullError
from memdb.memory.ids import EPOCH_ORDINAL, episode_day, id_at, ts_micros
from memdb.memory.postings import TF_UNIT, TextIndex
from memdb.memory.relevance import LEVELS_PER_POINT, band_of, relevance_level
from memdb.memory.settings import FACT_KIND
from memdb.memory.text import term_counts, tokenize, unchecked_tag_form
from memdb.memory.timephrase import TOLD_HINTS, TOLD_ORDINALS, told_hint_in, told_windows

__all__ = [
    "ACCOUNT_CHARS",
    "ACCOUNT_FIELDS",
    "ARCHIVED_FIELDS",
    "CONTEXT_FIELDS",
    "CONTEXT_TF",
    "GLOBALS",
    "ID_SLICE",
    "ID_TAIL_BYTES",
    "INDEXES",
    "LAYOUT",
    "LEVELS_PER_POINT",
    "MAX_CODE",
    "MAX_DOCS",
    "NO_OUTCOME",
    "OUTCOME_OF_CODE",
    "OWNER_ERASURES",
    "RECORD_FIELDS",
    "SUPERSEDED",
    "TEXT_FIELDS",
    "TOLD_FIELDS",
    "VERSION_FIELDS",
    "DecodedHeader",
    "Layout",
    "archived_account",
    "archived_words",
    "column_tail",
    "decided_words",
    "decoded_header",
    "entry_code",
    "entry_codes",
    "entry_of",
    "entry_value",
    "fact_key_bounds",
    "header_of",
    "id_tail",
    "index_code",
    "index_entries",
    "index_parents",
    "indexed_text",
    "kept_when_archived",
    "packed_header",
    "predecessor_of",
    "relevance_level",
    "successor_of",
    "superseded_header",
    "tail_at",
    "tail_id",
    "tail_of",
    "tail_ts",
    "terms_of",
    "told_of",
    "unlinked",
]

LAYOUT: Final = 28  # the index layout this code writes (see memdb.memory.migrate)

GLOBALS: Final[Mapping[str, str]] = {
    # episodes (this module)
    "MEM": "records", "EPST": "headers", "EPT": "time index", "EPG": "tag index", "EPGO": "tag+outcome index",
    "EPK": "kind+outcome index", "EPS": "session index", "EPB": "relevance band index", "EPTD": "told-of index",
    "EPX": "text posting blocks",
    "EPXT": "text index tag lists", "EPDN": "text document numbers", "EPC": "text document columns", "EPCV": "text column chunk stamps",
    "EPL": "text document relevance levels", "EPLV": "text level chunk stamps",
    "EPDF": "document frequencies", "EPN": "per-owner statistics", "EPAR": "archive index", "COLD": "cold records",
    "EPSA": "archived by session", "EPSU": "superseded versions", "EPFK": "current fact by key",
    "META": "settings, layout version, counters", "AUDIT": "audit log", "AUDITDB": "database-wide audit log",
    "EPIM": "imported source ids -> new ids (imports idempotent by id)",
    # the lifecycle's own
    "LIFE": "lifecycle marks (memdb.lifecycle.maintain)", "COLDDICT": "cold-storage dictionaries (memdb.lifecycle.cold)",
    # governance's own
    "KN": "knowledge entries", "KNQ": "review queue", "KNA": "entries in use", "KNS": "shared entries", "KNF": "decay flags",
    "KNID": "entry owners by id", "KNT": "tombstones", "KNW": "decay weeks", "KNC": "ceremonies", "KNM": "knowledge meta",
    "KNN": "knowledge statistics", "KNR": "reflection budget (memdb.governance.reflection)",
    "PATN": "pattern counters", "PATQ": "pattern batches waiting", "PATB": "pattern batches", "PATP": "pattern batches undone",
    "PATI": "pattern batches by record",
    "PAT": "patterns", "PATK": "patterns by kind",
    "DIST": "sessions closed into typed episodes, sessions open, counters (memdb.governance.distill)",
    "SCHED": "scheduler lock and runs (memdb.governance.schedule)",
}  # fmt: skip
"""Every global memdb writes, with what it holds; a user's own globals must use other names."""

INDEXES: Final = ("EPT", "EPG", "EPGO", "EPK", "EPS", "EPB", "EPTD")
"""The time-ordered indexes: every entry ends in the (ts_us, id) tail and holds ``entry_value``."""

NO_OUTCOME: Final = "-"  # the kind+outcome index's outcome subscript for episodes without one
# a fact's key is indexed with its text: "what does Ana prefer?" finds ``ana/ui.theme``
TEXT_FIELDS: Final = ("summary", "content", "what_we_tried", "what_happened", "why", "lesson", "artifact", "result", "key")
RECORD_FIELDS: Final = (
    "ts", "kind", "summary", "content", "decisions", "tags", "outcome", "what_we_tried", "what_happened",
    "why", "lesson", "participants", "artifact", "session", "tool", "result", "cites", "recorded",
)  # fmt: skip
VERSION_FIELDS: Final = ("key", "supersedes", "supersede_reason")
"""Record fields written only when set (a fact's key; a successor's old id and reason), so
records without versions keep the shape older code wrote."""
SUPERSEDED: Final = "superseded"  # the status of a version replaced by a newer one
OWNER_ERASURES: Final = ("owner erasures",)
"""^META's count of owners erased, which only grows: an erasure resets the owner's counters, so a
name erased and written again repeats them, and a cache checked against them alone (another
process's ``Layout.digests``) would be taken for the erased owner's."""

# An id is 29 ASCII characters; encoded as a subscript it is a type byte, the id and a terminator.
ID_TAIL_BYTES: Final = 31
_PARENT_KEYS_KEPT = 1 << 16  # encoded index parents remembered (about 10 MB at most)
OUTCOME_OF_CODE: Final[tuple[str | None, ...]] = (None, "success", "partial", "failure")
_CODE_OF_OUTCOME = {o: i for i, o in enumerate(OUTCOME_OF_CODE)}
MAX_CODE: Final = 10 * LEVELS_PER_POINT << 2 | 3


def index_code(relevance: float, outcome: str | None) -> int:
    """An episode's index code: relevance level * 4 + outcome (0 none, 1 success, 2 partial,
    3 failure), at most ``MAX_CODE``; the text columns and the query layer rank by it."""
    return relevance_level(relevance) << 2 | _outcome_code(outcome)


def _outcome_code(outcome: str | None) -> int:
    code = _CODE_OF_OUTCOME.get(outcome)
    if code is None:  # capture validates outcomes: any other value was damaged on disk
        known = ", ".join(o for o in OUTCOME_OF_CODE if o)
        raise CorruptValueError(f"a stored outcome is damaged: not one of {known} or none ({CorruptValueError.HINT})")
    return code


# --- the value of a time-ordered index entry ---------------------------------------------------


def entry_of(doc: int, outcome: str | None) -> int:
    """The value of a hot episode's index entries: its document number and outcome,
    ``doc << 2 | outcome``. The level is not in it: ``entry_codes``."""
    if not 0 <= doc < MAX_DOCS:
        raise StoreFullError(f"document number {doc}: an owner holds at most {MAX_DOCS:,} documents (numbers are never reused)")
    return doc << 2 | _outcome_code(outcome)


MAX_DOCS: Final = 1 << 30
"""Document numbers an owner can be given: an entry value keeps one in 30 bits."""
_ENTRY: Final = struct.Struct(">BI")  # msgpack's uint32 (0xCE), always: entries have one width


def entry_value(doc: int, outcome: str | None) -> bytes:
    """``entry_of`` packed as written: msgpack's uint32 always (5 bytes, which any msgpack
    reader decodes), so a range's values read back to back need no parsing (``entry_codes``)."""
    return _ENTRY.pack(0xCE, entry_of(doc, outcome))


def entry_code(raw: bytes, levels: bytes) -> int:
    """The index code of one entry (``index_code``): its outcome, with the level its document
    has in ``levels``, the owner's levels one byte a document (``TextIndex.levels_of``)."""
    if len(raw) != _ENTRY.size or raw[0] != 0xCE:
        raise CorruptValueError(f"index entry value {bytes(raw[:12]).hex()}: damaged: not a document number ({CorruptValueError.HINT})")
    v = int.from_bytes(raw[1:], "big")
    if v >> 2 >= len(levels):
        raise CorruptValueError(f"index entry of document {v >> 2}: it has no relevance level ({CorruptValueError.HINT})")
    return levels[v >> 2] << 2 | v & 3


def entry_codes(values: Sequence[bytes], levels: bytes) -> list[int]:
    """``entry_code`` of each of ``values`` (a range read as columns), in one C loop
    (``memdb_entry_codes``) or its twin."""
    joined = b"".join(values)
    n = len(values)
    if len(joined) != n * _ENTRY.size:
        for raw in values:  # some value has another width: name it
            entry_code(raw, levels)
    if native.AVAILABLE and n > 8:
        lib, ffi = native.search_lib()
        codes = ffi.new("uint32_t[]", n)
        bad = lib.memdb_entry_codes(ffi.from_buffer(joined), n, ffi.from_buffer(levels), len(levels), codes)
        if bad >= 0:
            entry_code(values[bad], levels)  # raises, naming it
        return ffi.unpack(codes, n)  # type: ignore[no-any-return]
    return [entry_code(raw, levels) for raw in values]


# --- the (ts_us, id) tail of index keys --------------------------------------------------------


def tail_id(tail: bytes) -> str:
    """The episode id at the end of an encoded index key (or key tail)."""
    return tail[-ID_TAIL_BYTES + 1 : -1].decode("ascii")


def tail_ts(tail: bytes) -> int:
    """The timestamp (µs) at the start of an encoded ``(ts_us, id)`` tail."""
    us = codec.int_at(tail)
    return us if us is not None else int(codec.decode_one(tail, 0)[0])


_ID_OPEN, _ID_CLOSE = codec.encode_subscript("id")[:1], codec.encode_subscript("id")[-1:]
_DAY_MICROS: dict[bytes, int] = {}  # b"YYYYMMDD" -> µs since the epoch at its midnight
ID_SLICE: Final = slice(-ID_TAIL_BYTES + 1, -1)
"""The id's bytes in an encoded key ending in an id."""


def id_tail(idb: bytes) -> bytes:
    """The encoded ``(ts_us, id)`` tail of an episode's index entries, from its id alone (an
    id starts with its timestamp), given as ASCII bytes as sliced out of a posting's key."""
    day = _DAY_MICROS.get(idb[:8])
    if day is None:
        if len(_DAY_MICROS) >= 1 << 16:
            _DAY_MICROS.clear()
        days = dt.date(int(idb[0:4]), int(idb[4:6]), int(idb[6:8])).toordinal() - EPOCH_ORDINAL
        day = _DAY_MICROS[idb[:8]] = days * 86_400_000_000
    us = day + int(idb[9:11]) * 3_600_000_000 + int(idb[11:13]) * 60_000_000 + int(idb[13:15]) * 1_000_000 + int(idb[15:21])
    return tail_at(us, idb)


def tail_at(ts_us: int, idb: bytes) -> bytes:
    """The encoded ``(ts_us, id)`` tail of an episode's index entries, from its time and its id
    as ASCII bytes. An id is ASCII without NUL, so its encoded subscript is the id between two
    fixed bytes."""
    return codec.encode_int(ts_us) + _ID_OPEN + idb + _ID_CLOSE


_COLUMN_TAILS: dict[tuple[int, int], bytes] = {}  # (ts_us, suffix) -> tail; a pure function, never stale
_COLUMN_TAILS_KEPT: Final = 1 << 17  # about 20 MB at most


def column_tail(ts_us: int, suffix: int) -> bytes:
    """The index tail of the episode a text index column describes (its time and id suffix,
    ``memdb.memory.postings.Found.columns``): every match of a text query needs it, so tails are
    remembered rather than formatted again each query (``tail[ID_SLICE]`` is the id)."""
    tail = _COLUMN_TAILS.get((ts_us, suffix))
    if tail is None:
        if len(_COLUMN_TAILS) >= _COLUMN_TAILS_KEPT:
            _COLUMN_TAILS.clear()
        tail = _COLUMN_TAILS[(ts_us, suffix)] = tail_at(ts_us, id_at(ts_us, suffix).encode("ascii"))
    return tail


def tail_of(ts: dt.datetime, eid: str) -> bytes:
    """The encoded ``(ts_us, id)`` tail of an episode's index entries (``codec.encode`` of it, the
    id kept out of the codec's cache of strings met again)."""
    return codec.encode_int(ts_micros(ts)) + codec.encode_unique(eid)


# --- text ------------------------------------------------------------------------------------------


CONTEXT_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {"exchange": ("content",)}
"""Per kind, the fields that hold the context of what an episode is about rather than the thing
itself: an exchange's ``content`` holds the conversation around it (both sides of a gateway
exchange; the turns before and after a conversation's turn), whose words also stand in the
neighbouring episodes. A term there counts ``CONTEXT_TF`` / ``TF_UNIT`` of an occurrence."""

CONTEXT_TF: Final = 2
"""What one occurrence in a context field adds to a posting's tf, against ``TF_UNIT`` (3) for one
in the episode's own text: context counts two thirds (BM25F field weighting). Chosen on one half
of the LoCoMo conversations (26, 30, 41: recall@10 0.796 at equal weight, 0.785 / 0.802 / 0.807 /
0.803 at 1/3, 1/2, 2/3, 3/4) and checked on the other (42, 43: 0.764 -> 0.767)."""


# A member of a tool's JSON input or result whose value is empty says nothing happened: the words
# of {"failed": 0, "error": null} made every clean test run a match for "what failed?"
_EMPTY_MEMBER = re.compile(r'"(?:[^"\\]|\\.)*"\s*:\s*(?:null|false|-?0(?:\.0+)?|""|\[\s*\]|\{\s*\})\s*(?=[,}\]]|$)')
_JSON_FIELDS: Final = frozenset({"content", "result"})  # a tool call's input (as canonical JSON) and result


def _words_of(record: Mapping[str, Any], field: str, kind: str) -> str:
    """The text of a record's field as indexed: a tool call's JSON without its empty members
    (``_EMPTY_MEMBER``; test_an_empty_json_member_is_no_word); the field as stored otherwise."""
    text = str(record[field])
    return _EMPTY_MEMBER.sub("", text) if kind == "tool_call" and field in _JSON_FIELDS and '":' in text else text


def _decision_words(value: Any) -> Iterator[str]:
    """The words of a record's ``decisions``: every key and every string value, at any depth
    ({"database": "postgres", "rejected": ["mysql"]}); numbers, booleans and nulls say nothing
    a question asks by word."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _decision_words(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _decision_words(item)
    elif isinstance(value, str):
        yield value


_DECIDED: Final = "decided decision"
"""What a record with decisions says besides their words (layout 19): "What did we decide?" and
"which decisions did we make?" ask of the memories holding a decision, whether their text says
so or only their ``decisions`` do (with a window, such a question asks of everything in it)."""


ARCHIVED_FIELDS: Final = ("one_line", "archived_from", "lesson", "participants", "decided", "account")
"""What archiving adds to a header (``archived_words`` reads them); restoring takes them out."""

ACCOUNT_FIELDS: Final = ("what_we_tried", "what_happened", "why")
"""What an archived header keeps of an attempt's story (``archived_account``), kept since 2026-12-07."""
ACCOUNT_CHARS: Final = 300
"""The most an archived header's ``account`` holds: the story of an attempt, not its record."""


def archived_account(record: Mapping[str, Any]) -> str:
    """What was tried, what happened and why, on one line of at most ``ACCOUNT_CHARS`` (" | "
    between them), each cut at a word with an ellipsis where it is longer than its share (an even
    share of what the shorter ones leave): an archived header keeps it hot, so "pgbouncer" of
    ``what_happened`` or a gateway session's tools still find the attempt ("" where none is set)."""
    kind = str(record.get("kind"))
    parts = [" ".join(_words_of(record, f, kind).split()) for f in ACCOUNT_FIELDS if record.get(f)]
    parts = [p for p in parts if p]
    left = ACCOUNT_CHARS - 3 * max(len(parts) - 1, 0)
    shares: dict[int, int] = {}
    for n, i in enumerate(sorted(range(len(parts)), key=lambda i: len(parts[i]))):
        shares[i] = share = min(len(parts[i]), left // (len(parts) - n))
        left -= share
    return " | ".join(_cut(p, shares[i]) for i, p in enumerate(parts))


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut after a whole word with an ellipsis (a word cut
    in two would be found by its half)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if not text[limit - 1].isspace() and " " in head:  # the last word runs on: left out whole
        head = head[: head.rindex(" ")]
    return head.rstrip() + "…"


def decided_words(record: Mapping[str, Any]) -> str:
    """What a record's ``decisions`` say as words (their keys and string values, and ``_DECIDED``),
    or "" where it has none; a fact's decisions are data, not words (``terms_of``)."""
    if not record.get("decisions") or record.get("kind") == FACT_KIND:
        return ""
    return " ".join(_decision_words(record["decisions"])) + f" {_DECIDED}"


def kept_when_archived(record: Mapping[str, Any]) -> dict[str, Any]:
    """What an archived header keeps of its record besides ``header_of``'s fields (DESIGN 5): the
    lesson, and where the record has them who took part, what it decided and what was tried,
    what happened and why. Archiving writes them and ``db.check()`` compares them with the
    cold record."""
    kept: dict[str, Any] = {"lesson": record.get("lesson")}
    if record.get("participants"):  # "What did Bob review?" finds it archived as it did hot
        kept["participants"] = list(record["participants"])
    if decided := decided_words(record):  # "which candidates did we reject?" of {"next": "reject"}
        kept["decided"] = decided
    if account := archived_account(record):  # what was tried, what happened and why: "pgbouncer" finds it
        kept["account"] = account
    return kept


def archived_words(header: Mapping[str, Any]) -> str:
    """The text an archived memory still answers by, from its header: its one-liner (which holds
    the lesson), what it decided (``decided_words``, kept at archiving since 2026-12-06), what
    was tried, what happened and why (``archived_account``, since 2026-12-07), its tags and who
    took part, as ``terms_of`` reads them of a hot record."""
    tags = header["tags"]
    people = " ".join(p for p in header.get("participants") or () if unchecked_tag_form(p) not in tags)  # once, as terms_of
    return "\n".join((header.get("one_line", ""), header.get("decided", ""), header.get("account", ""), " ".join(tags), people))


def indexed_text(record: Mapping[str, Any], decisions: bool = True) -> str:
    """The text ``terms_of`` reads of a hot record, as one string (to check a word as written),
    without its decisions' words if not ``decisions``."""
    kind = str(record.get("kind"))
    fields = [_words_of(record, f, kind) for f in TEXT_FIELDS if record.get(f)]
    decided = decided_words(record) if decisions else ""
    return "\n".join((*fields, decided, " ".join(record.get("tags") or ()), " ".join(record.get("participants") or ())))


def terms_of(record: Mapping[str, Any]) -> tuple[dict[str, int], int]:
    """A record's indexed terms with their frequencies, and its length, in ``TF_UNIT``s: an
    occurrence in the episode's own text (its tags, the participants that are not among them,
    layout 16, its decisions' keys and string values, layout 18, and ``_DECIDED`` where it has
    decisions, layout 19) counts ``TF_UNIT``, one in a context field of its kind
    (``CONTEXT_FIELDS``) ``CONTEXT_TF``, so that a turn ranks above its neighbours for words it
    says itself. A fact's ``decisions`` are data, not words: the LangGraph store keeps its items'
    values there, searchable only by the paths it indexes."""
    kind = str(record.get("kind"))
    context = CONTEXT_FIELDS.get(kind, ())
    own = "\n".join(_words_of(record, f, kind) for f in TEXT_FIELDS if record.get(f) and f not in context)
    if decided := decided_words(record):  # "what did we decide about the database?"
        # and a record with decisions says it decided (layout 19): "What did we decide?" finds it
        own += "\n" + decided
    tags = record.get("tags") or ()
    own += "\n" + " ".join(tags)
    # "What did Bob review?": who took part is what a memory is about (one that is also a tag counts once)
    # by the unchecked form: a participant need not make a tag ("--", or longer than a tag may be)
    own += "\n" + " ".join(p for p in record.get("participants") or () if unchecked_tag_form(p) not in tags)
    tf = {t: n * TF_UNIT for t, n in term_counts(own).items()}
    for f in context:
        if record.get(f):
            for t, n in term_counts(str(record[f])).items():
                tf[t] = tf.get(t, 0) + n * CONTEXT_TF
    return tf, sum(tf.values())


TOLD_FIELDS: Final = ("summary", "content", "what_we_tried", "what_happened", "why", "lesson")
"""The fields whose words tell what happened, and when: ``told_of`` reads time phrases there (a
tool's result, an artifact or a fact's key may hold dates that tell of nothing that happened)."""


def _told_starts() -> dict[str, str]:
    """Each hint's term (a stem: "juli" of "july") -> the start it shares with the word it came
    from, which told_windows finds in the text ("jul"); several words of one term keep the shortest."""
    out: dict[str, str] = {}
    for word in sorted(TOLD_HINTS, key=len):
        for term in tokenize(word):
            same = next((i for i, (a, b) in enumerate(zip(word, term, strict=False)) if a != b), min(len(word), len(term)))
            out.setdefault(term, word[:same])
    return out


_TOLD_TERMS: Final = _told_starts()
# the terms that hint at a time when every term is ASCII: a hint's, a day's ordinal ("15th"), or a year 1900-2099
_ASCII_HINTS: Final = frozenset(_TOLD_TERMS).union(TOLD_ORDINALS, (str(year) for year in range(1900, 2100)))


def _is_year(term: str) -> bool:
    return len(term) == 4 and term[:2] in ("19", "20") and term.isdigit()


def told_of(record: Mapping[str, Any], tf: Mapping[str, int], week_start: int = 0, timezone: str = "UTC") -> list[list[int]]:
    """The windows (start and end in microseconds) a record's text tells of, as of its ``ts``:
    "Deploy failed yesterday", recorded on July 2, tells of July 1. Kept in the header as
    ``told`` and indexed in ``^EPTD`` (``index_entries``). ``tf`` (the record's terms) rules
    out most records before any phrase is read, and points at the words to read around."""
    if all(map(str.isascii, tf)):
        # one set intersection, in C, instead of a test of each of a capture's ~50 terms (an
        # ASCII term is a year exactly when it is one of those 200; the order of hints is no matter)
        hints = [_TOLD_TERMS.get(t, t) for t in _ASCII_HINTS.intersection(tf)]
    else:  # "昨天", "月", "7월": Chinese, Japanese and Korean hints; "20٢٥" (other digits) is a year too
        hints = [_TOLD_TERMS.get(t, t) for t in tf if t in _TOLD_TERMS or t in TOLD_ORDINALS or _is_year(t)]
        hints += filter(None, map(told_hint_in, tf))
    if not hints:
        return []
    text = "\n".join(str(record[f]) for f in TOLD_FIELDS if record.get(f))
    return [[ts_micros(a), ts_micros(b)] for a, b in told_windows(text, record["ts"], week_start, timezone, hints)]


# --- headers and index entries -------------------------------------------------------------------


def header_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record fields copied into the header (^EPST) for index-only filtering and ranking,
    and the version it supersedes, if any (so chains are walked on headers alone)."""
    header = {
        "ts": record["ts"],
        "tags": list(record.get("tags") or ()),
        "kind": record["kind"],
        "outcome": record.get("outcome"),
        "session": record.get("session"),
    }
    if record.get("supersedes"):
        header["supersedes"] = record["supersedes"]
    return header


# Decoded headers by their packed bytes: ranking reads a header for each memory it may return,
# and the same memories come back query after query. A header changes only by being written
# again, as other bytes, so a kept one is never stale; readers never mutate one (an archived
# hit's record is a copy), so one dict serves every read of the same bytes. An access flush
# packs the headers it writes here and keeps them (``packed_header``): the next questions show
# most of them again, and would otherwise decode each anew.
# A decoded header, its time in microseconds and its relevance over 10 (what ranking weighs).
DecodedHeader = tuple[dict[str, Any], int, float]
_HEADS: dict[bytes, DecodedHeader] = {}
_HEADS_KEPT: Final = 1 << 13


def decoded_header(raw: bytes) -> DecodedHeader:
    """A header (^EPST) decoded from ``raw``, with its time and relevance as ranking weighs them,
    remembered by its bytes (never mutate the header)."""
    found = _HEADS.get(raw)
    if found is None:
        if len(_HEADS) >= _HEADS_KEPT:
            _HEADS.clear()
        h = codec.unpack_value(raw)
        found = _HEADS[raw] = (h, ts_micros(h["ts"]), float(h["relevance"]) / 10.0)
    return found


def packed_header(header: dict[str, Any]) -> bytes:
    """``header`` packed, and kept decoded by its bytes. ``header`` must read back as it is:
    built from a decoded header with numbers and UTC datetimes changed, nothing a round trip
    would turn into another type (tests/memory/test_relevance.py::test_a_flush_keeps_the_headers_it_writes_as_decoded),
    and never mutated afterwards."""
    raw = codec.pack_value(header)
    if len(_HEADS) >= _HEADS_KEPT:
        _HEADS.clear()
    _HEADS[raw] = (header, ts_micros(header["ts"]), float(header["relevance"]) / 10.0)
    return raw


def superseded_header(state: Mapping[str, Any], successor: str) -> dict[str, Any]:
    """The header of a version once ``successor`` replaces it: status ``superseded``, the status
    it had (``superseded_from``) and its successor; relevance and accesses stay as they were."""
    return {**state, "status": SUPERSEDED, "superseded_from": state.get("status", "active"), "superseded_by": successor}


def successor_of(state: Mapping[str, Any]) -> str | None:
    """The id of the version that replaced this one (None for a current version)."""
    found = state.get("superseded_by")
    return str(found) if found else None


def predecessor_of(state: Mapping[str, Any]) -> str | None:
    """The id of the version this one replaced (None for an original, or an older record)."""
    found = state.get("supersedes")
    return str(found) if found else None


def unlinked(record: Mapping[str, Any], gone: Collection[str]) -> dict[str, Any]:
    """A record or header (hot, or an archived one's cold record) of the oldest version left of a
    chain whose earlier versions in ``gone`` were erased: without the link to them and the reason
    that told what it corrected, and without its cites of them, so it stands alone as an original
    (``Erasure.erase_versions``; the version fields are written only when set)."""
    out = dict(record)
    if out.get("supersedes") in gone:
        out.pop("supersedes", None)
        out.pop("supersede_reason", None)
    if out.get("cites"):
        out["cites"] = [c for c in out["cites"] if c not in gone]
    return out


def fact_key_bounds(prefix: str | None) -> tuple[str | None, str | None]:
    """``(start, stop)`` of the ``^EPFK(owner, key)`` children whose key starts with ``prefix``
    (keys are ASCII identifiers, so the next string after every such key is the prefix with
    its last character incremented)."""
    if not prefix:
        return None, None
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def index_entries(owner: str, eid: str, record: Mapping[str, Any], state: Mapping[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """The index subscripts one episode should have, by global name (an archived one has only
    its archive entries, by time and by session: it is out of the hot indexes, and its one-liner
    stays findable; a superseded one has only its ``^EPSU`` entry): ``index_parents`` and, at
    the end of each, the episode's time in microseconds and its id."""
    t = ts_micros(record["ts"])
    return {name: [(*parent, t, eid) for parent in parents] for name, parents in index_parents(owner, record, state).items()}


def index_parents(owner: str, record: Mapping[str, Any], state: Mapping[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """``index_entries`` without the ``(ts_us, id)`` tail each ends in: capture adds that tail,
    encoded once (``tail_of``), to each parent's key."""
    if state.get("status") == "archived":
        return {"EPAR": [(owner,)], "EPSA": [(owner, record["session"])] if record.get("session") else []}
    if state.get("status") == SUPERSEDED:
        return {"EPSU": [(owner,)]}
    outcome = record.get("outcome")
    tags = record.get("tags", ())
    return {
        "EPT": [(owner,)],
        "EPG": [(owner, tag) for tag in tags],
        "EPGO": [(owner, tag, outcome) for tag in tags] if outcome else [],
        "EPK": [(owner, record["kind"], outcome or NO_OUTCOME)],
        "EPS": [(owner, record["session"])] if record.get("session") else [],
        "EPB": [(owner, band_of(state["relevance"]))],
        # the windows its text tells of (``told_of``), by start: a window query finds the
        # episodes recorded later about a day in it ("yesterday the deploy failed")
        "EPTD": [(owner, start, end) for start, end in state.get("told", ())],
    }


class Layout:
    """The globals of the episode layer, and the encoded key parents capture writes under."""

    def __init__(self, space: Globals) -> None:
        self.space = space
        # what readers derive of an owner's archived memories, kept by this process while the
        # owner's archive stays as it is (``memdb.query.archived``): owner -> (version, digest)
        self.digests: dict[str, tuple[tuple[int, int, int], Any]] = {}
        self.digests_lock = threading.Lock()  # threads share a database: the dict is read and trimmed under it
        self.meta = space["META"]
        self.mem = space["MEM"]
        self.states = space["EPST"]
        self.by_time = space["EPT"]
        self.by_tag = space["EPG"]
        self.by_tag_outcome = space["EPGO"]
        self.by_kind = space["EPK"]
        self.by_session = space["EPS"]
        self.by_band = space["EPB"]
        self.by_told = space["EPTD"]
        self.text = TextIndex(space)
        self.doc_freq = space["EPDF"]
        self.stats = space["EPN"]
        self.archived = space["EPAR"]
        self.archived_sessions = space["EPSA"]
        self.cold = space["COLD"]
        self.imported = space["EPIM"]
        self.superseded = space["EPSU"]
        self.fact_keys = space["EPFK"]
        self._parent_keys: dict[tuple[str, tuple[Any, ...]], bytes] = {}

    def index(self, name: str) -> Global:
        """The global of one of ``INDEXES`` (or ``EPAR``) by name."""
        return self.space[name]

    def parent_key(self, g: Global, parent: tuple[Any, ...]) -> bytes:
        """``g.key(parent)``, remembered: capture writes about 40 keys per episode under an
        owner's terms, tags and sessions, and encoding those parents again every time was a
        fifth of its cost. Keys are pure functions of their subscripts, so the cache is never
        stale; it is emptied when it reaches ``_PARENT_KEYS_KEPT`` entries."""
        found = self._parent_keys.get((g.name, parent))
        if found is None:
            if len(self._parent_keys) >= _PARENT_KEYS_KEPT:
                self._parent_keys.clear()
            found = self._parent_keys[(g.name, parent)] = g.key(parent)
        return found

    def entry_keys(self, owner: str, record: Mapping[str, Any], state: Mapping[str, Any], tail: bytes) -> list[bytes]:
        """The encoded keys of an episode's index entries (``index_entries``): each parent's key
        (``index_parents``, remembered as ``parent_key`` remembers it) and the episode's encoded
        ``(ts_us, id)`` tail (``tail_of``). A remembered parent is one lookup by the global's name,
        with no Global fetched for it (capture writes about a dozen a record)."""
        kept = self._parent_keys
        return [
            (kept.get((name, parent)) or self.parent_key(self.space[name], parent)) + tail
            for name, parents in index_parents(owner, record, state).items()
            for parent in parents
        ]

    def record_of(self, owner: str, eid: str) -> Any:
        """The hot record of an episode, or None (the day subscript comes from the id)."""
        return self.mem.get((owner, episode_day(eid), eid))

    def record_subs(self, owner: str, eid: str) -> tuple[str, str, str]:
        """The subscripts of an episode's record in ``^MEM``."""
        return (owner, episode_day(eid), eid)
