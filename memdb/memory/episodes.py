"""Episodic memory on the globals: owner-private capture, PII sanitized fail-closed, indexes.

Layout (every global's first subscript is the owner, so scoping is structural)::

    ^MEM(owner, day, id)                the record (what happened: fields and bounded digests)
    ^EPST(owner, id)                    its header: relevance, access_count, last_access, feedback,
                                        status, plus ts, tags, kind, outcome and session, so that
                                        filtering, ranking and rescoring never read the full record
    ^EPT(owner, ts_us, id) = code       time index
    ^EPG(owner, tag, ts_us, id) = code  tag index
    ^EPGO(owner, tag, outcome, ts_us, id) = code  tag+outcome index (episodes with an outcome),
                                        for "past failures on X" without scanning all of X
    ^EPK(owner, kind, outcome, ts_us, id) = code  kind+outcome index ("-" for no outcome)
    ^EPS(owner, session, ts_us, id) = code  session index
    ^EPB(owner, band, ts_us, id) = code relevance band (0-10) index
    ^EPX(owner, term, id) = [tf, dl]    text postings, with what BM25 needs per document
    ^EPDF(owner, term) = df             documents holding the term (BM25's idf without a scan)
    ^EPN(owner, "docs"|"terms"|"episodes"|"archived"|"dropped")   per-owner statistics
    ^EPAR(owner, ts_us, id)             archived episodes (their one-line summary is in the header)
    ^COLD(owner, id) = {...}            archived full records, compressed by the lifecycle layer
    ^AUDIT(owner, audit_id) = {...}     imports, deletions, later archives

Every index entry is written in the same transaction as its record (``Globals.apply``).

The time-ordered indexes share one layout, so the query layer works on encoded keys: every
entry ends in the same encoded ``(ts_us, id)`` tail (ids have a fixed length, so the id is a
slice of it), and ``key(prefix) + tail`` tests membership in another index with one lookup.
Their value, ``code``, is the episode's relevance to 1/25 of a point and its outcome
(``index_code``): filtering by outcome and bounding relevance need no header read; a change of
level rewrites the entries.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError as PydanticError

from memdb.engine import codec
from memdb.engine.globals import Global, Globals
from memdb.errors import NotFoundError, SanitizerError, ValidationError
from memdb.memory.models import (
    SUMMARY_CHARS,
    Episode,
    EpisodeInput,
    bound_text,
    check_ident,
    check_owner,
    truncation_marker,
    utc,
    validation_error,
)
from memdb.memory.relevance import AccessTracker, Explanation, PendingAccess, RelevanceModel, band_of
from memdb.memory.sanitize import PLACEHOLDER, RegexSanitizer, Sanitizer, sanitize_fields
from memdb.memory.settings import BUILTIN_KINDS, OUTCOMES, Settings
from memdb.memory.text import normalize_tag, term_counts

__all__ = [
    "CODE_OF_PACKED",
    "ID_TAIL_BYTES",
    "LEVELS_PER_POINT",
    "MAX_CODE",
    "OUTCOME_OF_CODE",
    "CheckReport",
    "EpisodeStore",
    "ImportReport",
    "OwnerMemory",
    "RescoreReport",
    "episode_day",
    "from_micros",
    "id_tail",
    "index_code",
    "relevance_level",
    "tail_id",
    "tail_ts",
    "ts_micros",
]

Clock = Callable[[], dt.datetime]
_ID = re.compile(r"\d{8}T\d{12}Z-[0-9a-f]{6}\Z")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL = _EPOCH.date().toordinal()
_TEXT_FIELDS = ("summary", "content", "what_we_tried", "what_happened", "why", "lesson", "artifact", "result")
_NO_OUTCOME = "-"
_RECORD_FIELDS = (
    "ts", "kind", "summary", "content", "decisions", "tags", "outcome", "what_we_tried", "what_happened",
    "why", "lesson", "participants", "artifact", "session", "tool", "result", "cites",
)  # fmt: skip


def utcnow() -> dt.datetime:
    """The default clock: aware UTC now."""
    return dt.datetime.now(dt.UTC)


def ts_micros(ts: dt.datetime) -> int:
    """Microseconds since the epoch: the time subscript of every index (exact, ordered)."""
    d = ts - _EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def from_micros(us: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=us)


LAYOUT = 7  # the index layout this code writes (see upgrade_layout)
# Index codes hold relevance to 1/25 of a point: fine enough that ranking reads few headers
# (one level is 0.0024 of a recency-ranked score), coarse enough that a level fits a byte.
LEVELS_PER_POINT = 25
# An id is 29 ASCII characters; encoded as a subscript it is a type byte, the id and a terminator.
ID_TAIL_BYTES = 31
_PARENT_KEYS_KEPT = 1 << 16  # encoded index parents remembered (about 10 MB at most)
OUTCOME_OF_CODE: tuple[str | None, ...] = (None, "success", "partial", "failure")
_CODE_OF_OUTCOME = {o: i for i, o in enumerate(OUTCOME_OF_CODE)}
MAX_CODE = 10 * LEVELS_PER_POINT << 2 | 3
PACKED_OF_CODE: tuple[bytes, ...] = tuple(codec.pack_value(c) for c in range(MAX_CODE + 1))
CODE_OF_PACKED: dict[bytes, int] = {packed: c for c, packed in enumerate(PACKED_OF_CODE)}
"""Index codes by their packed value: decoding one is a dict lookup."""


def relevance_level(relevance: float) -> int:
    """Relevance 0-10 in 25ths of a point, 0-250 (floor): what index codes keep of it."""
    return max(0, min(10 * LEVELS_PER_POINT, int(relevance * LEVELS_PER_POINT)))


def index_code(relevance: float, outcome: str | None) -> int:
    """The value of an episode's time-ordered index entries: relevance level * 4 + outcome
    (0 none, 1 success, 2 partial, 3 failure), at most ``MAX_CODE`` (``CODE_OF_PACKED`` reads it)."""
    return relevance_level(relevance) << 2 | _CODE_OF_OUTCOME[outcome]


def tail_id(tail: bytes) -> str:
    """The episode id at the end of an encoded index key (or key tail)."""
    return tail[-ID_TAIL_BYTES + 1 : -1].decode("ascii")


def tail_ts(tail: bytes) -> int:
    """The timestamp (µs) at the start of an encoded ``(ts_us, id)`` tail."""
    us = codec.int_at(tail)
    return us if us is not None else int(codec.decode_one(tail, 0)[0])


_ID_OPEN, _ID_CLOSE = codec.encode_subscript("id")[:1], codec.encode_subscript("id")[-1:]
_DAY_MICROS: dict[bytes, int] = {}  # b"YYYYMMDD" -> µs since the epoch at its midnight


def id_tail(idb: bytes) -> bytes:
    """The encoded ``(ts_us, id)`` tail of an episode's index entries, from its id alone (an
    id starts with its timestamp), given as ASCII bytes as sliced out of a posting's key: a
    text-driven query turns every matching posting into a tail, so this is its hot loop.
    An id is ASCII without NUL, so its encoded subscript is the id between two fixed bytes."""
    day = _DAY_MICROS.get(idb[:8])
    if day is None:
        if len(_DAY_MICROS) >= 1 << 16:
            _DAY_MICROS.clear()
        days = dt.date(int(idb[0:4]), int(idb[4:6]), int(idb[6:8])).toordinal() - _EPOCH_ORDINAL
        day = _DAY_MICROS[idb[:8]] = days * 86_400_000_000
    us = day + int(idb[9:11]) * 3_600_000_000 + int(idb[11:13]) * 60_000_000 + int(idb[13:15]) * 1_000_000 + int(idb[15:21])
    return codec.encode_int(us) + _ID_OPEN + idb + _ID_CLOSE


def episode_day(episode_id: str) -> str:
    """The ``YYYY-MM-DD`` day an id was created for (ids start with their UTC timestamp)."""
    return f"{episode_id[0:4]}-{episode_id[4:6]}-{episode_id[6:8]}"


_id_seqs: dict[str, Iterator[int]] = {}
os.register_at_fork(after_in_child=_id_seqs.clear)  # a forked child counts from fresh random starts


def new_id(ts: dt.datetime, scope: str = "") -> str:
    """A unique id that sorts by time: ``YYYYMMDDTHHMMSSffffffZ-xxxxxx``.

    The suffix is a per-process counter from a random start, one per ``scope`` (the owner the
    id is handed to): ids with the same timestamp keep their creation order, ids from other
    processes are checked on write, and the ids one owner sees tell nothing of how many
    others recorded in between.
    """
    seq = _id_seqs.get(scope)
    if seq is None:
        if len(_id_seqs) >= 1 << 16:  # bounded; a fresh random start keeps ids unique
            _id_seqs.clear()
        seq = _id_seqs[scope] = itertools.count(secrets.randbelow(1 << 24))
    return ts.strftime("%Y%m%dT%H%M%S%fZ-") + f"{next(seq) & 0xFFFFFF:06x}"


def check_id(episode_id: str) -> str:
    if not isinstance(episode_id, str) or not _ID.match(episode_id):
        raise NotFoundError(f"episode {episode_id!r}: not an episode id (expected YYYYMMDDTHHMMSSffffffZ-xxxxxx)")
    return episode_id


def content_hash(record: Mapping[str, Any]) -> str:
    """A stable SHA-256 of a record, for audit trails that must not keep the text itself."""
    blob = json.dumps(record, sort_keys=True, default=str, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class ImportReport:
    """What ``import_episodes`` wrote."""

    count: int
    ids: list[str]
    audit_id: str


@dataclass
class RescoreReport:
    """What ``rescore`` did: episodes scored, scores changed, wall time."""

    scored: int = 0
    changed: int = 0
    seconds: float = 0.0


@dataclass
class CheckReport:
    """Result of ``db.check()``: every index compared with the records it should reflect."""

    episodes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class EpisodeStore:
    """The episodic layer of one database: settings, sanitizer, clock and the owner handles."""

    def __init__(self, space: Globals, *, sanitizer: Sanitizer | None = None, clock: Clock | None = None) -> None:
        self.space = space
        self.sanitizer: Sanitizer = sanitizer if sanitizer is not None else RegexSanitizer()
        self.clock: Clock = clock or utcnow
        self.meta = space["META"]
        self.mem = space["MEM"]
        self.states = space["EPST"]
        self.by_time = space["EPT"]
        self.by_tag = space["EPG"]
        self.by_tag_outcome = space["EPGO"]
        self.by_kind = space["EPK"]
        self.by_session = space["EPS"]
        self.by_band = space["EPB"]
        self.postings = space["EPX"]
        self.doc_freq = space["EPDF"]
        self.stats = space["EPN"]
        self.audit = space["AUDIT"]
        self.db_audit = space["AUDITDB"]
        self.archived = space["EPAR"]
        self.cold = space["COLD"]
        self._settings: Settings | None = None
        self._parent_keys: dict[tuple[str, tuple[Any, ...]], bytes] = {}
        self._term_keys: dict[str, dict[str, bytes]] = {}
        self._term_keys_kept = 0
        self.scorer = RelevanceModel(lambda: self.settings)
        self.tracker = AccessTracker(self._flush_accesses, lambda: self.settings.access_flush_every, lambda: not space.in_block)

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

    def term_keys(self, owner: str) -> dict[str, bytes]:
        """An owner's cached ``^EPX(owner, term)`` keys, for capture to read without a call per
        term; a miss goes through ``term_key``."""
        found = self._term_keys.get(owner)
        if found is None:
            found = self._term_keys[owner] = {}
        return found

    def term_key(self, owner: str, term: str) -> bytes:
        """``postings.key((owner, term))``, remembered in ``term_keys``; all owners together keep
        at most ``_PARENT_KEYS_KEPT`` keys (emptied when full, like ``parent_key``)."""
        if self._term_keys_kept >= _PARENT_KEYS_KEPT:
            self._term_keys.clear()
            self._term_keys_kept = 0
        self._term_keys_kept += 1
        found = self.term_keys(owner)[term] = self.postings.key((owner, term))
        return found

    # --- settings ------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The database's settings, loaded from ``^META("settings")`` (defaults if never saved)."""
        if self._settings is None:
            saved = self.meta.get(("settings",))
            self._settings = Settings.parse(saved) if saved else Settings()
        return self._settings

    def configure(self, **changes: Any) -> Settings:
        """Validate and persist setting changes; the database keeps them across reopenings.

        The changes apply to the settings as saved now, read inside the write: another process
        may have changed others since this one loaded them, and those stay."""
        now = self.now()
        with self.space.transaction():
            self._settings = None
            old = self.settings
            new = old.updated(**changes)
            dumped, before = new.model_dump(mode="json"), old.model_dump(mode="json")
            changed = {k: {"from": before[k], "to": v} for k, v in dumped.items() if before[k] != v}
            self.meta.set(("settings",), dumped)
            self.db_audit.set((new_id(now),), {"action": "configure", "at": now, "changes": changed})
        self._settings = new
        return new

    def reload_settings(self) -> Settings:
        """Read the settings again (another process may have changed them): every rule run
        (maintain, reflect) starts with this; captures use the settings loaded at open or since."""
        self._settings = None
        return self.settings

    def now(self) -> dt.datetime:
        return utc(self.clock(), "clock()")

    def owner(self, name: str) -> OwnerMemory:
        """The handle through which everything of one owner is recorded and read."""
        return OwnerMemory(self, check_owner(name))

    def owners(self) -> list[str]:
        """Owners that have recorded anything (an administrative view; handles stay private)."""
        return [str(o) for o in self.stats.children()]

    # --- relevance -----------------------------------------------------------------------------

    def relevance(self, record: Mapping[str, Any], state: Mapping[str, Any], now: dt.datetime) -> float:
        """Relevance 0-10 of one episode now."""
        return self.scorer.score(record, state, now)

    def flush(self) -> int:
        """Write buffered access counts now (also done every ``access_flush_every`` and on close)."""
        return self.tracker.flush()

    def _flush_accesses(self, batch: dict[tuple[str, str], PendingAccess]) -> None:
        now = self.now()
        with self.space.transaction():
            loaded = []
            for (owner, eid), pending in batch.items():
                state = self.states.get((owner, eid))
                if state is not None:  # deleted since it was read: nothing to count
                    new = {
                        **state,
                        "access_count": state["access_count"] + pending.count,
                        "last_access": _latest(state["last_access"], pending.last),
                    }
                    loaded.append((owner, eid, state, new))
            scores = self.scorer.score_many([(new, new) for _, _, _, new in loaded], now)
            kills: list[tuple[Global, Any]] = []
            sets: list[tuple[Global, Any, Any]] = []
            for (owner, eid, old, new), score in zip(loaded, scores, strict=True):
                new["relevance"] = score
                self._state_changes(owner, eid, old, new, kills, sets)
            self.space.apply(kills, sets)

    def _state_changes(
        self,
        owner: str,
        eid: str,
        old: Mapping[str, Any],
        new: dict[str, Any],
        kills: list[tuple[Global, Any]],
        sets: list[tuple[Global, Any, Any]],
    ) -> None:
        """Index changes for a new state: the state itself, a move between relevance bands, and
        the new code of every index entry when the relevance level changed."""
        sets.append((self.states, (owner, eid), new))
        if old.get("status") != "archived" and relevance_level(old["relevance"]) != relevance_level(new["relevance"]):
            if band_of(old["relevance"]) != band_of(new["relevance"]):
                kills.append((self.by_band, (owner, band_of(old["relevance"]), ts_micros(new["ts"]), eid)))
            code = index_code(new["relevance"], new.get("outcome"))
            for gname, entries in _index_entries(owner, eid, new, new).items():
                g = self.space[gname]
                sets.extend((g, e, code) for e in entries)

    def rescore(self, now: dt.datetime | None = None, batch: int = 10_000) -> RescoreReport:
        """Recompute every episode's relevance at ``now`` (age changes with time), in native batches."""
        started = time.perf_counter()
        self.flush()
        at = utc(now, "now") if now is not None else self.now()
        report = RescoreReport()
        for owner in self.owners():
            start: Any = None
            while True:
                with self.space.transaction():
                    chunk = []
                    for subs, state in self.states.range((owner,), start):
                        chunk.append((str(subs[1]), state))
                        if len(chunk) >= batch:
                            break
                    scores = self.scorer.score_many([(st, st) for _, st in chunk], at)
                    kills: list[tuple[Global, Any]] = []
                    sets: list[tuple[Global, Any, Any]] = []
                    for (eid, state), score in zip(chunk, scores, strict=True):
                        report.scored += 1
                        if score != state["relevance"]:
                            report.changed += 1
                            self._state_changes(owner, eid, state, {**state, "relevance": score}, kills, sets)
                    self.space.apply(kills, sets)
                if len(chunk) < batch:
                    break
                start = chunk[-1][0] + "\x00"
        report.seconds = time.perf_counter() - started
        return report

    # --- layout --------------------------------------------------------------------------------

    def upgrade_layout(self, batch: int = 5_000) -> int:
        """Bring a database written by an older memdb to the current index layout, in place and
        idempotently (layouts 1 and 2: index entries held an empty value or the relevance band;
        layout 3 holds ``index_code``; layout 4 adds the tag+outcome index; layout 5 stems to a
        fixpoint, so the text postings are rebuilt from the records; layout 6 keeps relevance
        to 1/25 of a point instead of a quarter; layout 7 keeps combining marks in words, so
        the postings are rebuilt again).
        Returns how many episodes were rewritten; a current database costs one read. The
        layout is recorded last, so an interrupted upgrade runs again on the next open."""
        old = self.meta.get(("layout",))
        if old == LAYOUT:
            return 0
        rewritten = 0
        for owner in self.owners():
            mem = OwnerMemory(self, owner)
            if old is None or old < 7:
                with self.space.transaction():  # postings and their statistics, rebuilt below
                    self.postings.kill((owner,))
                    self.doc_freq.kill((owner,))
                    self.stats.set((owner, "docs"), 0)
                    self.stats.set((owner, "terms"), 0)
            start: Any = None
            while True:
                with self.space.transaction():
                    chunk = list(itertools.islice(self.states.range((owner,), start), batch))
                    sets: list[tuple[Global, Any, Any]] = []
                    for subs, state in chunk:
                        if state.get("status") == "archived":
                            continue
                        eid = str(subs[1])
                        code = index_code(state["relevance"], state.get("outcome"))
                        for gname, entries in _index_entries(owner, eid, state, state).items():
                            sets.extend((self.space[gname], e, code) for e in entries)
                        if old is None or old < 7:
                            record = self.mem.get((owner, episode_day(eid), eid))
                            if record is not None:
                                sets += mem._text_index_changes(eid, {}, record)[1]
                        rewritten += 1
                    self.space.apply((), sets)
                if len(chunk) < batch:
                    break
                start = str(chunk[-1][0][1]) + "\x00"
        self.meta.set(("layout",), LAYOUT)
        return rewritten

    # --- integrity -----------------------------------------------------------------------------

    def check(self) -> CheckReport:
        """Verify that every index agrees exactly with the records (for tests and users)."""
        report = CheckReport()
        with self.space.snapshot():
            owners = set(self.owners())
            indexes = (self.by_time, self.by_tag, self.by_tag_outcome, self.by_kind, self.by_session, self.by_band, self.postings)
            for g in (self.mem, self.states, self.doc_freq, self.archived, self.cold, *indexes):
                owners.update(str(o) for o in g.children())
            for owner in sorted(owners):
                self._check_owner(owner, report)
        return report

    def _check_owner(self, owner: str, report: CheckReport) -> None:
        expected: dict[str, dict[tuple[Any, ...], Any]] = {name: {} for name in ("EPT", "EPG", "EPGO", "EPK", "EPS", "EPB", "EPAR")}
        expected_postings: dict[tuple[Any, ...], Any] = {}
        docs = terms = count = archived = 0
        records: dict[str, tuple[tuple[Any, ...], Any]] = {}
        for subs, rec in self.mem.items((owner,)):
            if len(subs) == 3 and isinstance(rec, dict):
                records[str(subs[2])] = (subs, rec)
            else:  # written into memdb's global by hand (README: write only globals of your own)
                report.problems.append(f"^MEM{subs!r}: not an episode record (^MEM holds (owner, day, id) = record)")
        cold = {str(subs[1]) for subs, _ in self.cold.items((owner,)) if len(subs) == 2}
        for subs, state in self.states.items((owner,)):
            if len(subs) != 2 or not isinstance(state, dict):
                report.problems.append(f"^EPST{subs!r}: not an episode state (^EPST holds (owner, id) = state)")
                continue
            eid = str(subs[1])
            count += 1
            found = records.pop(eid, None)
            if state.get("status") == "archived":
                archived += 1
                if found is not None:
                    report.problems.append(f"^MEM({owner!r},...,{eid!r}): archived episode still has a hot record")
                if eid not in cold:
                    report.problems.append(f"^COLD({owner!r},{eid!r}): archived episode without a cold record")
                cold.discard(eid)
                for gname, subs_list in _index_entries(owner, eid, state, state).items():
                    expected[gname].update(dict.fromkeys(subs_list, ""))
                continue
            if eid in cold:
                report.problems.append(f"^COLD({owner!r},{eid!r}): cold record of an episode that is not archived")
                cold.discard(eid)
            if found is None:
                report.problems.append(f"^EPST({owner!r},{eid!r}): state without a record")
                continue
            (_, day, _), value = found
            header = header_of(value)
            if {k: state.get(k) for k in header} != header:
                report.problems.append(f"^EPST({owner!r},{eid!r}): header differs from the record")
            if episode_day(eid) != day:
                report.problems.append(f"^MEM({owner!r},{day!r},{eid!r}): id is filed under the wrong day")
            code = index_code(state["relevance"], value.get("outcome"))
            for gname, subs_list in _index_entries(owner, eid, value, state).items():
                expected[gname].update(dict.fromkeys(subs_list, code))
            tf, dl = _terms_of(value)
            if dl:
                docs += 1
                terms += dl
                for term, n in tf.items():
                    expected_postings[(owner, term, eid)] = [n, dl]
        report.episodes += count
        for eid, (subs, _) in records.items():
            report.problems.append(f"^MEM{subs!r}: record without state ({eid})")
        for eid in cold:
            report.problems.append(f"^COLD({owner!r},{eid!r}): cold record without state")
        for gname, entries in expected.items():
            actual = dict(self.space[gname].items((owner,)))
            for missing in sorted(entries.keys() - actual.keys(), key=repr):
                report.problems.append(f"^{gname}{missing!r}: missing index entry")
            for extra in sorted(actual.keys() - entries.keys(), key=repr):
                report.problems.append(f"^{gname}{extra!r}: index entry without a record")
            for subs in sorted(entries.keys() & actual.keys(), key=repr):
                if entries[subs] != actual[subs]:
                    report.problems.append(f"^{gname}{subs!r}: value {actual[subs]!r}, expected {entries[subs]!r}")
        actual_postings = dict(self.postings.items((owner,)))
        want_df = Counter(term for _, term, _ in expected_postings)
        have_df = {str(s[1]): v for s, v in self.doc_freq.items((owner,)) if len(s) == 2}
        for term in want_df.keys() | have_df.keys():
            if want_df.get(term) != have_df.get(term):
                report.problems.append(f"^EPDF({owner!r},{term!r}): {have_df.get(term)} but {want_df.get(term, 0)} postings")
        for key in expected_postings.keys() | actual_postings.keys():
            if expected_postings.get(key) != actual_postings.get(key):
                report.problems.append(f"^EPX{key!r}: expected {expected_postings.get(key)!r}, found {actual_postings.get(key)!r}")
        for name, want in (("docs", docs), ("terms", terms), ("episodes", count), ("archived", archived)):
            have = self.stats.get((owner, name), 0)
            if have != want:
                report.problems.append(f"^EPN({owner!r},{name!r}): {have} but the records say {want}")


def _terms_of(record: Mapping[str, Any]) -> tuple[dict[str, int], int]:
    text = "\n".join(str(record[f]) for f in _TEXT_FIELDS if record.get(f))
    text += "\n" + " ".join(record.get("tags", ()))
    tf = term_counts(text)
    return tf, sum(tf.values())


def _index_entries(owner: str, eid: str, record: Mapping[str, Any], state: Mapping[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """The index subscripts one episode should have (status rules come from the lifecycle layer)."""
    t = ts_micros(record["ts"])
    if state.get("status") == "archived":  # out of the hot indexes; its one-liner stays findable
        return {"EPAR": [(owner, t, eid)]}
    out: dict[str, list[tuple[Any, ...]]] = {
        "EPT": [(owner, t, eid)],
        "EPG": [(owner, tag, t, eid) for tag in record.get("tags", ())],
        "EPGO": [(owner, tag, outcome, t, eid) for tag in record.get("tags", ())] if (outcome := record.get("outcome")) else [],
        "EPK": [(owner, record["kind"], record.get("outcome") or _NO_OUTCOME, t, eid)],
        "EPS": [(owner, record["session"], t, eid)] if record.get("session") else [],
        "EPB": [(owner, band_of(state["relevance"]), t, eid)],
    }
    return out


def header_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record fields copied into the header (^EPST) for index-only filtering and ranking."""
    return {
        "ts": record["ts"],
        "tags": list(record.get("tags") or ()),
        "kind": record["kind"],
        "outcome": record.get("outcome"),
        "session": record.get("session"),
    }


def _latest(a: dt.datetime | None, b: dt.datetime) -> dt.datetime:
    return b if a is None or b > a else a


class OwnerMemory:
    """Everything of one owner. No method can read, count or reveal another owner's episodes."""

    def __init__(self, store: EpisodeStore, owner: str) -> None:
        self.store = store
        self.name = owner
        self._space = store.space

    def __repr__(self) -> str:
        return f"<OwnerMemory {self.name!r}>"

    # --- capture -------------------------------------------------------------------------------

    def record(self, kind: str, summary: str, *, ts: dt.datetime | None = None, **fields: Any) -> Episode:
        """Record one episode. Typed kinds need an honest ``outcome`` (success | partial | failure)."""
        return self._episode(self._write_new([self._prepare({"kind": kind, "summary": summary, "ts": ts, **fields})])[0])

    def record_exchange(
        self, session: str, user_message: str, response: str, *, ts: dt.datetime | None = None, tags: Iterable[str] = ()
    ) -> Episode:
        """Capture one gateway exchange as bounded digests of both sides, never the raw payload."""
        if not isinstance(user_message, str) or not isinstance(response, str):
            raise ValidationError("record_exchange: user_message and response must be str")
        cap = self.store.settings.digest_chars
        # sanitized whole, then cut: a value cut in half is one the sanitizer cannot recognise
        clean = self._sanitize({"user_message": user_message, "response": response}, what="exchange")
        user_message, response = clean["user_message"], clean["response"]
        first_line = user_message.strip().splitlines()[0] if user_message.strip() else "(empty message)"
        fields = {
            "kind": "exchange",
            "session": session,
            "ts": ts,
            "summary": first_line,
            "content": f"user: {bound_text(user_message, cap)}\nassistant: {bound_text(response, cap)}",
            "tags": list(tags),
        }
        return self._episode(self._write_new([self._prepare(fields, content_cap=2 * cap + 32)])[0])

    def record_tool_call(self, session: str, tool: str, input: Any, *, ts: dt.datetime | None = None, tags: Iterable[str] = ()) -> Episode:
        """Capture a tool call as an execution event with a bounded input digest."""
        check_ident("tool", tool)
        cap = self.store.settings.digest_chars
        fields = {
            "kind": "tool_call",
            "session": session,
            "tool": tool,
            "ts": ts,
            "summary": f"{tool} call",
            "content": _as_text(input),  # bounded to the cap once sanitized
            "tags": list(tags),
        }
        return self._episode(self._write_new([self._prepare(fields, content_cap=cap)])[0])

    def record_tool_result(self, call_id: str, result: Any) -> Episode:
        """Attach a bounded, sanitized result to an earlier tool call of this owner."""
        day = episode_day(check_id(call_id))
        what = f"tool result for {call_id}"
        # Numbered after the call's own placeholders, so a new value never reuses one of them;
        # sanitized outside the write, so a dropped capture's counters are not rolled back.
        context = placeholders_in(_strings_in(self._load(call_id)[0]))
        sanitized = self._sanitize({"result": _as_text(result), "~placeholders": context}, what=what)
        bounded = {"result": sanitized["result"]}
        self._bound(bounded, {"result": self.store.settings.digest_chars}, sanitized, what)
        clean = bounded["result"]
        with self._space.transaction():
            record, state = self._load(call_id)
            if record["kind"] != "tool_call":
                raise ValidationError(f"episode {call_id!r}: is a {record['kind']!r}, not a tool_call")
            old = dict(record)
            record = {**record, "result": clean}
            kills, sets = self._text_index_changes(call_id, old, record)
            sets.append((self.store.mem, (self.name, day, call_id), record))
            self._space.apply(kills, sets)
        return to_episode(self.name, call_id, record, state)

    def import_episodes(self, episodes: Iterable[Mapping[str, Any] | EpisodeInput], *, source: str) -> ImportReport:
        """Import past episodes (migrations, benchmarks) keeping their timestamps; one audit record.

        Every item is validated and sanitized before anything is written; then all are
        written in one transaction with the audit record, so an import lands whole or not at all.
        """
        items = [e.model_dump(exclude_none=True) if isinstance(e, EpisodeInput) else dict(e) for e in episodes]
        prepared = [self._prepare(item, where=f"import item {i}") for i, item in enumerate(items)]
        now = self.store.now()
        audit_id = new_id(now, self.name)
        with self._space.transaction():
            written = self._write_new(prepared)
            stamps = [record["ts"] for _, record, _ in written]
            self.store.audit.set(
                (self.name, audit_id),
                {
                    "action": "import",
                    "at": now,
                    "source": str(source),
                    "count": len(written),
                    "first_ts": min(stamps) if stamps else None,
                    "last_ts": max(stamps) if stamps else None,
                },
            )
        return ImportReport(len(written), [eid for eid, _, _ in written], audit_id)

    # --- reads ---------------------------------------------------------------------------------

    def get(self, episode_id: str) -> Episode:
        """One of this owner's episodes (counts as an access); NotFoundError for unknown ids and
        other owners' alike."""
        record, state = self._load(episode_id)
        now = self.store.now()
        self.store.tracker.touch(self.name, [episode_id], now)
        state = self._live_state(episode_id, record, state, now)
        return to_episode(self.name, episode_id, record, state)

    def peek(self, episode_id: str) -> Episode:
        """Like ``get`` without counting an access (for tools and audits)."""
        record, state = self._load(episode_id)
        return to_episode(self.name, episode_id, record, state)

    def explain(self, episode_id: str, now: dt.datetime | None = None) -> Explanation:
        """Why an episode ranks where it does: its relevance and the four components (no access)."""
        record, state = self._load(episode_id)
        at = utc(now, "now") if now is not None else self.store.now()
        return self.store.scorer.explain(record, self._live_state(episode_id, record, state, at, rescore=False), at)

    def _live_state(
        self, episode_id: str, record: Mapping[str, Any], state: dict[str, Any], now: dt.datetime, rescore: bool = True
    ) -> dict[str, Any]:
        """The stored state with accesses not yet flushed applied (and relevance recomputed)."""
        count, last = self.store.tracker.pending(self.name, episode_id)
        if not count:
            return state
        live = {**state, "access_count": state["access_count"] + count, "last_access": _latest(state["last_access"], last)}  # type: ignore[arg-type]
        if rescore:
            live["relevance"] = self.store.relevance(record, live, now)
        return live

    def __contains__(self, episode_id: object) -> bool:
        try:
            self._load(str(episode_id))
        except NotFoundError:
            return False
        return True

    def count(self) -> int:
        """How many episodes this owner has."""
        return int(self.store.stats.get((self.name, "episodes"), 0))

    def episodes(self, since: dt.datetime | None = None, until: dt.datetime | None = None, reverse: bool = False) -> Iterator[Episode]:
        """This owner's episodes in time order (``since`` inclusive, ``until`` exclusive).

        A bulk scan (export, audits): it does not count as an access.
        """
        lo = ts_micros(utc(since, "since")) if since else None
        hi = ts_micros(utc(until, "until")) if until else None
        for subs, _ in self.store.by_time.range((self.name,), lo, hi, reverse=reverse):
            yield self.peek(str(subs[2]))

    def audit_log(self) -> list[dict[str, Any]]:
        """This owner's audit records, oldest first."""
        return [{"id": subs[1], **value} for subs, value in self.store.audit.items((self.name,))]

    # --- updates -------------------------------------------------------------------------------

    def feedback(self, episode_id: str, value: float) -> Episode:
        """Record agent feedback in [-1, 1] (the latest counts) and rescore the episode."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= float(value) <= 1.0:
            raise ValidationError(f"feedback {value!r}: must be a number in [-1, 1]")
        with self._space.transaction():
            record, state = self._load(episode_id)
            new = {**state, "feedback": float(value)}
            new["relevance"] = self.store.relevance(record, new, self.store.now())
            kills: list[tuple[Global, Any]] = []
            sets: list[tuple[Global, Any, Any]] = []
            self.store._state_changes(self.name, episode_id, state, new, kills, sets)
            self._space.apply(kills, sets)
        return to_episode(self.name, episode_id, record, new)

    def delete(self, episode_id: str, *, reason: str) -> str:
        """Erase one episode (hot or archived) and every index entry, leaving an audit record
        that keeps its content hash, never its text. This layer cannot see what the layers above
        derived from it; ``db.owner(name).delete`` (memdb.Database) erases that too."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"delete reason {reason!r}: say why (it is kept in the audit trail)")
        now = self.store.now()
        audit_id = new_id(now, self.name)
        with self._space.transaction():
            digest = self.remove(episode_id)
            self.store.audit.set(
                (self.name, audit_id), {"action": "delete", "at": now, "episodes": [episode_id], "hashes": [digest], "reason": reason}
            )
        return audit_id

    def remove(self, episode_id: str) -> str:
        """Remove an episode from hot storage, cold storage and every index, in the current
        transaction; returns its content hash. Audit records are the caller's job."""
        state = self.store.states.get((self.name, check_id(episode_id)))
        if state is None:
            raise NotFoundError(f"episode {episode_id!r}: no such episode for owner {self.name!r}")
        archived = state.get("status") == "archived"
        kills: list[tuple[Global, Any]] = [(self.store.states, (self.name, episode_id))]
        if archived:
            cold = self.store.cold.get((self.name, episode_id)) or {}
            digest = str(cold.get("hash", ""))
            kills.append((self.store.cold, (self.name, episode_id)))
            kills.extend((self._space[g], e) for g, es in _index_entries(self.name, episode_id, state, state).items() for e in es)
            self._space.apply(kills)
            self._bump(episodes=-1, archived=-1)
        else:
            record, _ = self._load(episode_id)
            digest = content_hash(record)
            kills.append((self.store.mem, (self.name, episode_day(episode_id), episode_id)))
            k, deltas, df = self._hot_changes(episode_id, record, state, adding=False)
            self._space.apply(kills + k)
            self._bump(episodes=-1, **deltas)
            self._bump_df(df)
        self.store.tracker.discard(self.name, episode_id)
        return digest

    def _hot_changes(
        self, eid: str, record: Mapping[str, Any], state: Mapping[str, Any], adding: bool
    ) -> tuple[list[tuple[Global, Any]], dict[str, int], dict[str, int]]:
        """Hot index entries and postings of an active episode (to kill, or the subscripts to set),
        with the statistic and document-frequency deltas that go with them."""
        entries: list[tuple[Global, Any]] = [
            (self._space[g], e) for g, es in _index_entries(self.name, eid, record, {**state, "status": "active"}).items() for e in es
        ]
        tf, dl = _terms_of(record)
        sign = 1 if adding else -1
        entries.extend((self.store.postings, (self.name, term, eid)) for term in tf)
        deltas = {"docs": sign if dl else 0, "terms": sign * dl}
        return entries, deltas, {term: sign for term in tf}

    def move_to_cold(self, episode_id: str, cold: dict[str, Any], one_line: str, audit: dict[str, Any]) -> None:
        """Move an episode to cold storage (for the lifecycle layer): the record and its hot
        index entries leave, the header keeps a one-line summary, and one audit record is written."""
        now = self.store.now()
        with self._space.transaction():
            record, state = self._load(episode_id)
            kills, deltas, df = self._hot_changes(episode_id, record, state, adding=False)
            kills.append((self.store.mem, (self.name, episode_day(episode_id), episode_id)))
            header = {**state, "status": "archived", "one_line": one_line, "archived_from": state["status"]}
            sets: list[tuple[Global, Any, Any]] = [
                (self.store.states, (self.name, episode_id), header),
                (self.store.cold, (self.name, episode_id), cold),
                (self.store.archived, (self.name, ts_micros(record["ts"]), episode_id), ""),
                (self.store.audit, (self.name, new_id(now, self.name)), audit),
            ]
            self._space.apply(kills, sets)
            self._bump(archived=1, **deltas)
            self._bump_df(df)
        self.store.tracker.discard(self.name, episode_id)

    def move_from_cold(self, episode_id: str, record: dict[str, Any], audit: dict[str, Any]) -> Episode:
        """Bring an archived episode back with all its indexes (for the lifecycle layer's restore);
        restoring counts as an access, so it is not archived again at once."""
        now = self.store.now()
        with self._space.transaction():
            state = self.store.states.get((self.name, check_id(episode_id)))
            if state is None or state.get("status") != "archived":
                raise NotFoundError(f"episode {episode_id!r}: no archived episode with this id for owner {self.name!r}")
            header = {k: v for k, v in state.items() if k not in ("one_line", "archived_from")}
            header.update(status=state.get("archived_from", "active"), access_count=state["access_count"] + 1, last_access=now)
            header["relevance"] = self.store.relevance(record, header, now)
            entries, deltas, df = self._hot_changes(episode_id, record, header, adding=True)
            tf, dl = _terms_of(record)
            code = index_code(header["relevance"], record.get("outcome"))
            sets: list[tuple[Global, Any, Any]] = [(g, e, [tf[e[1]], dl] if g is self.store.postings else code) for g, e in entries]
            sets += [
                (self.store.mem, (self.name, episode_day(episode_id), episode_id), record),
                (self.store.states, (self.name, episode_id), header),
                (self.store.audit, (self.name, new_id(now, self.name)), audit),
            ]
            kills: list[tuple[Global, Any]] = [
                (self.store.cold, (self.name, episode_id)),
                (self.store.archived, (self.name, ts_micros(record["ts"]), episode_id)),
            ]
            self._space.apply(kills, sets)
            self._bump(archived=-1, **deltas)
            self._bump_df(df)
        return to_episode(self.name, episode_id, record, header)

    # --- internals -----------------------------------------------------------------------------

    def _load(self, episode_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        day = episode_day(check_id(episode_id))
        with self._space.snapshot():
            record = self.store.mem.get((self.name, day, episode_id))
            state = self.store.states.get((self.name, episode_id))
        if record is None or state is None:
            raise NotFoundError(f"episode {episode_id!r}: no such episode for owner {self.name!r}")
        return record, state

    def clean(self, fields: Mapping[str, Any], caps: Mapping[str, int], what: str) -> dict[str, Any]:
        """``fields`` sanitized as a capture is (every string, tags in both forms; fail closed,
        a failure counted) and cut to ``caps``: for text the layers above derive from episodes
        (an extractor's pattern). Raises SanitizerError, or ValidationError naming ``what``."""
        flat, rebuild = _flatten_texts(fields, what)
        sanitized = self._sanitize(flat, what)
        out = rebuild(sanitized)
        self._bound(out, caps, sanitized, what)
        return out

    def _sanitize(self, flat: dict[str, str], what: str) -> dict[str, str]:
        try:
            return sanitize_fields(self.store.sanitizer, flat)
        except SanitizerError as exc:
            failure = SanitizerError(f"{what}: capture dropped, nothing written ({exc})")
        # Only counters are written: no byte of the text reaches disk.
        with self._space.transaction():
            self.store.stats.increment((self.name, "dropped"))
            self.store.meta.increment(("dropped_captures",))
        raise failure

    def _prepare(self, raw: dict[str, Any], where: str = "episode", content_cap: int | None = None) -> dict[str, Any]:
        """Sanitize, validate and bound one episode; returns the record to store (no I/O but counters)."""
        settings = self.store.settings
        flat, rebuild = _flatten_texts(raw, where)
        ident_before = {k: raw[k] for k in ("session", "tool") if isinstance(raw.get(k), str)}
        flat.update({f"@{k}": v for k, v in ident_before.items()})
        clean = self._sanitize(flat, what=where)
        for k, v in ident_before.items():
            if clean[f"@{k}"] != v:
                raise ValidationError(f"{where}: {k} looks like personal data; use an opaque id")
        raw = rebuild(clean)
        try:
            item = EpisodeInput.model_validate(raw)
        except PydanticError as exc:
            raise validation_error(exc, where) from None
        kind = item.kind
        if kind in BUILTIN_KINDS:
            if item.outcome is not None and kind != "summary":
                raise ValidationError(f"{where}: kind {kind!r} carries no outcome (got outcome={item.outcome!r})")
        elif kind in settings.typed_kinds:
            if item.outcome is None:
                raise ValidationError(
                    f"{where}: kind {kind!r} needs an outcome: one of {', '.join(OUTCOMES)} "
                    "(an episode without an honest outcome is a transcript)"
                )
            if item.outcome not in OUTCOMES:
                raise ValidationError(
                    f"{where}: outcome {item.outcome!r} is not one of {', '.join(OUTCOMES)} (no hedging: pick the closest)"
                )
        else:
            raise ValidationError(
                f"{where}: kind {kind!r} is not configured; typed kinds are {', '.join(settings.typed_kinds)} "
                f"and built-in kinds {', '.join(BUILTIN_KINDS)}"
            )
        for cited in item.cites:
            check_id(cited)
        record = item.model_dump()
        record["ts"] = item.ts  # None: stamped at write time
        cap = settings.digest_chars
        self._bound(record, {"summary": SUMMARY_CHARS, "content": content_cap or cap, **dict.fromkeys(_DIGEST_FIELDS, cap)}, clean, where)
        feedback = record.pop("feedback")
        record["_feedback"] = feedback
        return record

    def _bound(self, record: dict[str, Any], caps: Mapping[str, int], sanitized: Mapping[str, str], where: str) -> None:
        bound_sanitized(lambda texts: self._sanitize(texts, where), record, caps, sanitized)

    def _episode(self, written: tuple[str, dict[str, Any], dict[str, Any]]) -> Episode:
        return to_episode(self.name, *written)

    def _write_new(self, prepared: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """Write prepared records with all their index entries in one transaction; returns each
        one's (id, record, state), from which ``_episode`` makes the Episode a caller gets back
        (an import returns ids only, and skips building them).

        Every check comes before the first write, so the block joins a caller's transaction
        without a savepoint of its own (a nested LMDB transaction per record cost about 20 µs).
        Index keys are an encoded parent (cached by the store) plus the episode's encoded
        (ts, id) tail, and their values are packed once per episode, not once per key.
        """
        out: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        st = self.store
        mem, parent_key, owner = st.mem, st.parent_key, self.name
        with self._space.transaction(savepoint=False):
            now = st.now()
            sets: list[tuple[Global, Any, Any]] = []
            packed: list[tuple[bytes, bytes]] = []
            docs = terms = 0
            term_keys = st.term_keys(owner)
            counted: list[Iterable[str]] = []  # each document's terms, for their frequencies
            fresh: list[tuple[dict[str, Any], dict[str, Any]]] = []
            for rec in prepared:
                record = {k: rec.get(k) for k in _RECORD_FIELDS}
                record["ts"] = rec["ts"] or now
                state: dict[str, Any] = {
                    "access_count": 0, "last_access": None, "feedback": rec.get("_feedback"), "status": "active",
                    **header_of(record),
                }  # fmt: skip
                fresh.append((record, state))
            for (record, state), score in zip(fresh, st.scorer.score_many(fresh, now), strict=True):
                state["relevance"] = score
                ts: dt.datetime = record["ts"]
                eid = new_id(ts, owner)
                day = episode_day(eid)
                while mem.data((owner, day, eid)):  # another process took it
                    eid = new_id(ts, owner)
                sets.append((mem, (owner, day, eid), record))
                sets.append((st.states, (owner, eid), state))
                code = PACKED_OF_CODE[index_code(score, record.get("outcome"))]
                tail = codec.encode((ts_micros(ts), eid))
                for gname, entries in _index_entries(owner, eid, record, state).items():
                    g = self._space[gname]
                    packed.extend((parent_key(g, e[:-2]) + tail, code) for e in entries)
                tf, dl = _terms_of(record)
                if dl:
                    docs += 1
                    terms += dl
                    id_part = tail[-ID_TAIL_BYTES:]
                    # a posting's value [tf, dl]: few distinct tf per episode, each packed once
                    values = {n: codec.pack_value([n, dl]) for n in set(tf.values())}
                    keys = [(term_keys.get(term) or st.term_key(owner, term)) + id_part for term in tf]
                    packed.extend(zip(keys, map(values.__getitem__, tf.values()), strict=True))
                    counted.append(tf.keys())
                out.append((eid, record, state))
            self._space.apply((), sets, packed=packed)
            # deferred only once the write succeeded: a refused write inside a caller's transaction leaves no trace
            self._space.defer_counts(st.doc_freq, (owner,), itertools.chain.from_iterable(counted), drop_zero=True)
            self._bump(episodes=len(prepared), docs=docs, terms=terms)
        return out

    def _text_index_changes(
        self, eid: str, old: Mapping[str, Any], new: Mapping[str, Any]
    ) -> tuple[list[tuple[Global, Any]], list[tuple[Global, Any, Any]]]:
        old_tf, old_dl = _terms_of(old)
        new_tf, new_dl = _terms_of(new)
        kills: list[tuple[Global, Any]] = [(self.store.postings, (self.name, t, eid)) for t in old_tf if t not in new_tf]
        sets: list[tuple[Global, Any, Any]] = [(self.store.postings, (self.name, t, eid), [n, new_dl]) for t, n in new_tf.items()]
        self._bump(docs=(1 if new_dl else 0) - (1 if old_dl else 0), terms=new_dl - old_dl)
        df: Counter[str] = Counter({t: 1 for t in new_tf if t not in old_tf})
        df.subtract({t: 1 for t in old_tf if t not in new_tf})
        self._bump_df(df)
        return kills, sets

    def _bump_df(self, deltas: Mapping[str, int]) -> None:
        self._space.defer_increments(self.store.doc_freq, (self.name,), deltas, drop_zero=True)

    def _bump(self, **deltas: int) -> None:
        self._space.defer_increments(self.store.stats, (self.name,), deltas)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


_DIGEST_FIELDS = ("what_we_tried", "what_happened", "why", "lesson", "result", "artifact")  # bounded to the digest cap


def _strings_in(value: Any) -> Iterator[str]:
    """Every str in a stored record, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings_in(k)
            yield from _strings_in(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings_in(v)


_INT_AS_TEXT = 10**6  # an int this large may be a card, phone or account number: it is sanitized as its digits
_NOT_WALKED = frozenset({"kind", "session", "tool", "cites"})  # checked as identifiers, never rewritten
_HAS_DIGIT = re.compile(r"\d")


class _Slot:
    """Where a sanitized string goes back. ``alt`` names a tag's normalised form, sanitized
    too: normalising makes ``4111_1111_1111_1111`` a card (``4111-1111-1111-1111``)."""

    __slots__ = ("alt", "as_int", "name")

    def __init__(self, name: str, as_int: bool = False) -> None:
        self.name = name
        self.as_int = as_int
        self.alt: str | None = None


class _Dict:
    """A mapping of the input, as (key slot, value) pairs: keys are sanitized like values."""

    __slots__ = ("items", "path")

    def __init__(self, items: list[tuple[_Slot, Any]], path: str) -> None:
        self.items = items
        self.path = path


def _flatten_texts(raw: Mapping[str, Any], where: str = "episode") -> tuple[dict[str, str], Callable[[dict[str, str]], dict[str, Any]]]:
    """Every string of an input, keyed by a unique name, and the inverse that puts the
    sanitized strings back. Nested strings in decisions and lists count, and so do dict keys
    and ints of seven digits or more; a value the store cannot keep as given (bytes, NaN, a
    naive datetime, an int beyond 64 bits, another type) is refused naming its path."""
    flat: dict[str, str] = {}

    def slot(text: str, name: str, as_int: bool = False) -> _Slot:
        name = name if name not in flat else f"{name}#{len(flat)}"
        flat[name] = text
        return _Slot(name, as_int)

    def walk(value: Any, path: str, name: str) -> Any:
        """``path`` names the value for errors (``decisions.when``); ``name`` is its key in the
        flat texts, by position below the top level so no key's text reaches a sanitizer's
        field names (they may be shown in its errors)."""
        if isinstance(value, str):
            return slot(value, name)
        if isinstance(value, Mapping):
            items = []
            for i, (k, v) in enumerate(value.items()):
                if not isinstance(k, str):
                    raise ValidationError(f"{where}: {path} key {k!r}: keys must be str")
                items.append((slot(k, f"{name}.{i}:key"), walk(v, f"{path}.{k}", f"{name}.{i}")))
            return _Dict(items, path)
        if isinstance(value, (list, tuple)):
            return [walk(v, f"{path}[{i}]", f"{name}[{i}]") for i, v in enumerate(value)]
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if not -(1 << 63) <= value < 1 << 64:
                raise ValidationError(f"{where}: {path}={value!r}: an integer beyond 64 bits is not stored (give it as str)")
            return slot(str(value), name, as_int=True) if abs(value) >= _INT_AS_TEXT else value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValidationError(f"{where}: {path}={value!r}: not a finite number")
            return value
        if isinstance(value, dt.datetime):
            if value.tzinfo is None or value.utcoffset() is None:
                raise ValidationError(f"{where}: {path}={value.isoformat()!r}: naive datetime (give a timezone, e.g. UTC)")
            return value
        raise ValidationError(
            f"{where}: {path}: {type(value).__name__} is not stored (use str, numbers, bool, None, lists, dicts or aware datetimes)"
        )

    skeleton: dict[str, Any] = {}
    for k, v in raw.items():
        if k in _NOT_WALKED or not isinstance(v, (str, Mapping, list, tuple)):
            skeleton[k] = v  # identifiers, timestamps, numbers: the model checks them
        else:
            skeleton[k] = walk(v, k, k)
    tags = skeleton.get("tags")
    if isinstance(tags, list):
        for tag in tags:
            if type(tag) is _Slot and _HAS_DIGIT.search(text := flat[tag.name]):
                try:
                    normal = normalize_tag(text)
                except ValidationError:
                    continue  # the model names the bad tag
                if normal != text:
                    tag.alt = slot(normal, f"{tag.name}~normalised").name

    def fill(value: Any, clean: dict[str, str]) -> Any:
        if type(value) is _Slot:
            text = clean[value.name]
            unchanged = text == flat[value.name]
            if value.alt is not None and unchanged and clean[value.alt] != flat[value.alt]:
                return clean[value.alt]  # only the tag's normalised form held a value
            if value.as_int and unchanged:
                return int(text)
            return text
        if type(value) is _Dict:
            out: dict[str, Any] = {}
            for key, v in value.items:
                name = fill(key, clean)
                if name in out:
                    raise ValidationError(f"{where}: {value.path}: two keys read {name!r} once sanitized (merge them)")
                out[name] = fill(v, clean)
            return out
        if type(value) is list:
            return [fill(v, clean) for v in value]
        return value

    def rebuild(clean: dict[str, str]) -> dict[str, Any]:
        return {k: fill(v, clean) for k, v in skeleton.items()}

    return flat, rebuild


def bound_sanitized(
    sanitize: Callable[[dict[str, str]], dict[str, str]], record: dict[str, Any], caps: Mapping[str, int], sanitized: Mapping[str, str]
) -> None:
    """Cut each field of ``record`` longer than its cap (keeping a truncation marker), after
    sanitizing: a value cut first is one the sanitizer can no longer recognise. A cut can also
    make a new value (the first 16 of 20 digits may pass Luhn), so what is kept goes through
    ``sanitize`` again, numbered after the placeholders in ``sanitized`` (the texts as sanitized)."""
    cut = {f: text for f, c in caps.items() if isinstance(text := record.get(f), str) and len(text) > c}
    if not cut:
        return
    rooms = {f: max(caps[f] - len(truncation_marker(len(text))), 0) for f, text in cut.items()}
    context = placeholders_in(sanitized.values())
    for _ in range(3):
        kept = sanitize({**{f: text[: rooms[f]] for f, text in cut.items()}, "~placeholders": context})
        grown = {f: len(kept[f]) - rooms[f] for f in cut if len(kept[f]) > rooms[f]}
        if not grown:
            break
        for f, extra in grown.items():  # a placeholder longer than the value it stands for
            rooms[f] = max(rooms[f] - extra, 0)
    else:
        kept = dict.fromkeys(cut, "")  # every cut makes a new value: keep only the marker (fail closed)
    for f, text in cut.items():
        record[f] = kept[f] + truncation_marker(len(text))


def placeholders_in(texts: Iterable[str]) -> str:
    """The placeholders of ``texts``, for a later sanitizer call to number after them."""
    return " ".join(m.group() for t in texts if "<" in t for m in PLACEHOLDER.finditer(t))


def to_episode(owner: str, eid: str, record: Mapping[str, Any], state: Mapping[str, Any]) -> Episode:
    return Episode.model_construct(
        id=eid,
        owner=owner,
        ts=record["ts"],
        kind=record["kind"],
        summary=record["summary"],
        content=record.get("content") or "",
        decisions=record.get("decisions") or {},
        tags=tuple(record.get("tags") or ()),
        outcome=record.get("outcome"),
        what_we_tried=record.get("what_we_tried"),
        what_happened=record.get("what_happened"),
        why=record.get("why"),
        lesson=record.get("lesson"),
        participants=tuple(record.get("participants") or ()),
        artifact=record.get("artifact"),
        session=record.get("session"),
        tool=record.get("tool"),
        result=record.get("result"),
        relevance=float(state["relevance"]),
        access_count=int(state.get("access_count", 0)),
        last_access=state.get("last_access"),
        feedback=state.get("feedback"),
        status=state.get("status", "active"),
        cites=tuple(record.get("cites") or ()),
    )
