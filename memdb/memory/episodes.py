"""Episodic memory on the globals: owner-private capture, PII sanitized fail-closed, indexes.

``Episodes`` is the layer of one database (settings, sanitizer, clock, the scorer and access
tracker, and the operations the lifecycle needs on any owner's episodes); ``OwnerEpisodes`` is
what one owner may do with their own: record, read, give feedback. The bytes on disk are
``memdb.memory.layout``'s; every index entry is written in the same transaction as its record
(``Globals.apply``).
"""

from __future__ import annotations

import datetime as dt
import gc
import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from pydantic import ValidationError as PydanticError

from memdb.engine.codec import decode_one, encode_subscript, unpack_value
from memdb.engine.globals import Global, Globals
from memdb.engine.log import logger
from memdb.engine.process import after_fork
from memdb.errors import ConfigError, MemdbError, NotFoundError, SanitizerError, ValidationError
from memdb.memory.audit import AuditLog, content_hash
from memdb.memory.check import CheckReport, check
from memdb.memory.ids import Clock, check_id, episode_day, new_id, ts_micros, utcnow
from memdb.memory.layout import (
    ARCHIVED_FIELDS,
    INDEXES,
    NO_OUTCOME,
    RECORD_FIELDS,
    SUPERSEDED,
    VERSION_FIELDS,
    Layout,
    decoded_header,
    entry_value,
    fact_key_bounds,
    header_of,
    index_code,
    index_entries,
    kept_when_archived,
    packed_header,
    predecessor_of,
    relevance_level,
    successor_of,
    superseded_header,
    tail_at,
    tail_of,
    terms_of,
    told_of,
    unlinked,
)
from memdb.memory.migrate import upgrade
from memdb.memory.models import (
    MAX_PARTICIPANTS,
    MAX_TAGS,
    SUMMARY_CHARS,
    Episode,
    EpisodeInput,
    bound_text,
    check_ident,
    check_owner,
    check_participants,
    check_payload,
    check_tag_count,
    utc,
    validation_error,
)
from memdb.memory.postings import Doc
from memdb.memory.relevance import AccessTracker, Explanation, PendingAccess, RelevanceModel, band_of
from memdb.memory.sanitize import RegexSanitizer, Sanitizer, sanitize_fields, shown
from memdb.memory.sanitize.fields import (
    as_plain,
    as_text,
    bound_sanitized,
    flatten_texts,
    identifier_texts,
    placeholders_in,
    strings_in,
    tags_as_stored,
)
from memdb.memory.settings import BUILTIN_KINDS, FACT_KIND, MAX_TYPED_KINDS, OUTCOMES, Settings
from memdb.memory.text import normalize_tag

__all__ = ["IMPORTED_FIELDS", "ColdMove", "Episodes", "ImportReport", "OwnerEpisodes", "RescoreReport", "to_episode"]

# what an import takes of an episode (an export's line, or an Episode of another database): its
# input and the id it had; memdb computes the rest (relevance, status, accesses) here again
IMPORTED_FIELDS = ("id", *EpisodeInput.model_fields)

# How many tags and participants an episode holds (its model's caps): a longer list is refused before
# the sanitizer reads it item after item (10,000 tags took seconds: test_label_reach_linear.py)
_LIST_CAPS: Final = {"tags": MAX_TAGS, "participants": MAX_PARTICIPANTS}

_log = logger(__name__)


@dataclass(frozen=True)
class ImportReport:
    """What ``import_episodes`` wrote."""

    count: int
    ids: list[str]
    audit_id: str
    skipped: int = 0  # items whose source id was imported before (or is already this owner's): an import is idempotent by id
    dropped_cites: int = 0  # cites naming no episode here (e.g. an earlier version, which export leaves out)
    citing: list[str] = field(default_factory=list)  # the ids written that cite others (summaries, closed sessions)


@dataclass
class RescoreReport:
    """What ``rescore`` did: episodes scored, scores changed, wall time."""

    scored: int = 0
    changed: int = 0  # headers rewritten: those whose relevance moved by a level (``kept_relevance``)
    seconds: float = 0.0


_gc_lock = threading.Lock()
_gc_pauses = 0  # bulk writes running with the cyclic GC paused (``_gc_paused``), in every thread
_gc_resume = False  # whether the first of them found it enabled
_gc_forks = 0  # forks seen: a block begun before one is not counted in the child (``_gc_after_fork``)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic GC paused for the block, then as it was. An import keeps its batch alive until
    it is written (thousands of dicts, lists and tuples, which hold no cycle), and the GC's passes
    over the whole heap they set off were a sixth of an import's CPU; they find nothing of the
    import's to free. Paused once for all threads' blocks at a time (test_capture_gc.py)."""
    global _gc_pauses, _gc_resume
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
        forks = _gc_forks
    try:
        yield
    finally:
        with _gc_lock:
            if forks == _gc_forks:  # else a child forked inside the block: its count began at 0 without it
                _gc_pauses -= 1
                if _gc_pauses == 0 and _gc_resume:
                    gc.enable()


@after_fork
def _gc_after_fork() -> None:
    """A forked child runs none of its parent's imports: the GC as it was before them."""
    global _gc_lock, _gc_pauses, _gc_forks
    _gc_lock = threading.Lock()  # another thread may have held it at the fork
    _gc_forks += 1
    if _gc_pauses:
        _gc_pauses = 0
        if _gc_resume:
            gc.enable()


class ColdMove(NamedTuple):
    """One episode for ``Episodes.move_to_cold``: its packed cold record, the one-liner its
    header keeps, and the fields of its ``archive`` audit record."""

    episode_id: str
    blob: dict[str, Any]
    one_line: str
    audit: Mapping[str, Any]


def _first_on_a_circle(start: int, needs: list[set[int]], pending: set[int]) -> int:
    """The first item given of a circle of cites among ``pending``, found from ``start`` (whose
    cites lead into one): breaking it there drops only cites that go round the circle."""
    path: list[int] = []
    seen: dict[int, int] = {}
    at = start
    while at not in seen:
        seen[at] = len(path)
        path.append(at)
        at = min(j for j in needs[at] if j in pending)  # every item left waits for one still pending
    return min(path[seen[at] :])


class _Tentative(threading.local):
    """A thread's own settings: those its configure() saved in its transaction, and what was saved
    then. Class defaults, so reading the settings (a few times a query) is one attribute lookup, not
    a failed one (0.7 us each)."""

    settings: Settings | None = None
    saved: Any = None


class Episodes:
    """The episodic layer of one database: settings, sanitizer, clock, scoring and access
    tracking, the owner handles, and the operations the lifecycle runs on an owner's episodes
    (each takes the owner explicitly; none is reachable from a user's handle)."""

    def __init__(self, space: Globals, *, sanitizer: Sanitizer | None = None, clock: Clock | None = None) -> None:
        self.space = space
        self.sanitizer: Sanitizer = sanitizer if sanitizer is not None else RegexSanitizer()
        self.clock: Clock = clock or utcnow
        self.layout = Layout(space)
        self.audit = AuditLog(space, lambda texts: sanitize_fields(self.sanitizer, texts))  # reasons, sources: no raw PII
        self._settings: Settings | None = None  # as committed: what every thread reads
        self._tentative = _Tentative()  # a thread's configure() in its transaction, which may still roll back
        self.scorer = RelevanceModel(lambda: self.settings)
        self.tracker = AccessTracker(
            self._flush_accesses,
            lambda: self.settings.access_flush_every,
            lambda: not space.in_block,
            lambda: self.settings.access_flush_seconds,
        )
        # What layers above count per typed record (patterns): hook(owner, episode), called in
        # the record's transaction; imports are history, not events as they complete, and skip them.
        self.record_hooks: list[Callable[[str, Episode], object]] = []
        # What layers above note per gateway capture (a closed session going on): hook(owner,
        # episode), called in the capture's transaction with the exchange or tool call written, or
        # the tool call with the result just attached; imports are history and skip them.
        self.capture_hooks: list[Callable[[str, Episode], object]] = []
        # What layers above derived from an episode that is corrected (knowledge citing it):
        # hook(owner, old id, old record, new version, fields changed, now), in the supersede's transaction.
        self.supersede_hooks: list[Callable[[str, str, Mapping[str, Any], Episode, list[str], dt.datetime], object]] = []

    # --- settings ------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The database's settings, loaded from ``^META("settings")`` (defaults if never saved);
        inside a transaction that called ``configure``, that transaction's own."""
        mine = self._tentative.settings
        if mine is not None:
            if self.space.in_transaction:
                # what this transaction holds saved now: its configure(), or what was before it
                # when a savepoint rolled that back (a kind it added then took records the saved
                # kinds refuse), or a later transaction's (test_settings_after_a_configure_rolled_back)
                saved = self.layout.meta.get(("settings",))
                if saved == self._tentative.saved:
                    return mine
                return Settings.parse(saved, changed=()) if saved else Settings()
            # its transaction ended: committed, it reset the shared settings (after_commit);
            # rolled back, they stand
            self._tentative.settings = None
        if self._settings is None:
            self._settings = self._saved_settings()
        return self._settings

    def _saved_settings(self) -> Settings:
        saved = self.layout.meta.get(("settings",))
        return Settings.parse(saved, changed=()) if saved else Settings()  # as saved, whatever checks came since

    def configure(self, **changes: Any) -> Settings:
        """Validate and persist setting changes; the database keeps them across reopenings.

        The changes apply to the settings as saved now, read inside the write: another process
        may have changed others since this one loaded them, and those stay. Inside a caller's
        transaction they are that thread's until it commits, and every thread's from then on:
        a rollback leaves the settings as they were, and another thread never reads a change
        that may still roll back (test_settings_a_thread_configures_in_a_transaction)."""
        now = self.now()
        changes = self._settings_tags(changes)
        nested = self.space.in_transaction
        with self.space.transaction():
            old = self._saved_settings()  # read in the write, never kept: it may hold this transaction's own change
            new = old.updated(**changes)
            self._check_kinds_kept(old.typed_kinds, new.typed_kinds)
            dumped, before = new.model_dump(mode="json"), old.model_dump(mode="json")
            changed = {k: {"from": before[k], "to": v} for k, v in dumped.items() if before[k] != v}
            if changed:  # a change to what the settings already are is no change to audit
                self.layout.meta.set(("settings",), dumped)
                self.audit.write(None, "configure", now, changes=changed)
            if nested:
                self._tentative.settings, self._tentative.saved = new, self.layout.meta.get(("settings",))
                self.space.after_commit(self._forget_settings)
        if not nested:
            self._settings = new
        return new

    def _forget_settings(self) -> None:
        self._settings = None

    def _settings_tags(self, changes: dict[str, Any]) -> dict[str, Any]:
        """``changes`` with the tags they name (``tag_weights`` keys, ``session_kinds`` "tag:" rules)
        read as capture reads an episode's one tag (``tags_as_stored``: its normal form too), before
        ``Settings`` normalises them. A tag holding personal data or a secret is refused: capture
        stores it as the marker of its kind ("withheld-card"), which every such value shares, so
        one customer's card weighed (or classed) every memory that withheld a card; stored raw, it
        put the number on disk and never applied. The marker itself may be named. A tag over the
        length limit as given is refused, however short its stored form (test_a_settings_tag_of_personal_data_is_refused,
        test_a_settings_tag_is_sanitized_in_its_normal_form, test_a_long_settings_tag_holding_personal_data_is_refused)."""

        def tag(text: str, name: str) -> str:
            try:
                normal = normalize_tag(text)
            except ValidationError:
                # Settings refuses it, named sanitized, whatever capture would store: "a"*47 + a card
                # fits as "aaa…-withheld-card", and one customer's card weighed another's memories
                return text
            try:
                read = tags_as_stored(lambda texts: sanitize_fields(self.sanitizer, texts), [text])
            except SanitizerError as exc:
                raise SanitizerError(f"configure: tag {shown(text)}: nothing written ({exc})") from None
            stored = str(read.stored[0])
            try:
                marker = normalize_tag(stored)
            except ValidationError:
                return stored  # Settings names the bad tag
            if marker != normal:
                raise ConfigError(
                    f"settings: {name}: tag {read.said[0]!r}: holds personal data or a secret, which memories keep only as "
                    f"{marker!r}, shared by every such value; nothing written (name {marker!r} to mean them all)"
                )
            return stored

        def rule(text: str, name: str) -> str:
            what, _, given = text.partition(":")
            return f"tag:{tag(given, name)}" if what == "tag" and given else text  # a tool's name is refused, not replaced

        out = dict(changes)
        for name, rename in (("tag_weights", tag), ("session_kinds", rule)):
            given = changes.get(name)
            if not isinstance(given, Mapping):
                continue  # not a mapping: Settings says what is wrong with it
            renamed: dict[Any, Any] = {}
            for key, value in given.items():
                new = rename(key, name) if isinstance(key, str) else key
                if new in renamed:
                    raise ConfigError(f"settings: {name}: {shown(key)} and another key are both {shown(new)} once sanitized")
                renamed[new] = value
            out[name] = renamed
        return out

    def _check_kinds_kept(self, old: Iterable[str], new: Iterable[str]) -> None:
        """A typed kind with episodes stays typed: dropped, its episodes dropped out of answers
        asking for a kind, and history and supersede refused them ('not a configured kind').
        Raises ConfigError naming the kind and an owner holding episodes of it."""
        for kind in sorted(set(old) - set(new)):
            for owner in self.owners():
                held = bool(self.layout.by_kind.raw_keys((owner, kind), limit=1)) or any(
                    (h := self.layout.states.get((owner, str(subs[2])))) is not None and h.get("kind") == kind
                    for subs, _ in self.layout.archived.range((owner,), None, None)
                )
                if held:
                    raise ConfigError(
                        f"typed_kinds: {kind!r} still has episodes (owner {owner!r} has some): a kind with "
                        "episodes stays typed (keep it in typed_kinds, or erase its episodes first)"
                    )

    def reload_settings(self) -> Settings:
        """Read the settings again (another process may have changed them): every rule run
        (maintain, reflect) starts with this; captures use the settings loaded at open or since."""
        self._forget_settings()
        return self.settings

    def now(self) -> dt.datetime:
        return utc(self.clock(), "clock()")

    def owner(self, name: str) -> OwnerEpisodes:
        """What one owner may do with their own episodes."""
        return OwnerEpisodes(self, self.owner_name(name))

    def owner_name(self, name: str) -> str:
        """``name`` as ``check_owner`` gives it, or as given where this database already holds an
        owner of exactly that name, one written before names were put in NFC and refused
        invisible characters: what is stored stays reachable."""
        try:
            checked = check_owner(name)
        except ValidationError:
            if isinstance(name, str) and name and self._held(name):
                return name
            raise
        return name if checked != name and self._held(name) else checked

    def _held(self, name: str) -> bool:
        try:
            return bool(self.layout.stats.data((name,)))
        except MemdbError:  # no subscript at all (a lone surrogate, a key too long)
            return False

    def owners(self) -> list[str]:
        """Owners that have recorded anything (an administrative view; handles stay private)."""
        return [str(o) for o in self.layout.stats.children()]

    # --- relevance -----------------------------------------------------------------------------

    def relevance(self, record: Mapping[str, Any], state: Mapping[str, Any], now: dt.datetime) -> float:
        """Relevance 0-10 of one episode now."""
        return self.scorer.score(record, state, now)

    def flush(self) -> int:
        """Write buffered access counts now (also done once ``access_flush_every`` wait, at most
        every ``access_flush_seconds``, and on close)."""
        return self.tracker.flush()

    def _flush_accesses(self, batch: dict[tuple[str, str], PendingAccess]) -> None:
        now = self.now()
        lay = self.layout
        with self.space.transaction():
            # the headers in one batch of reads (one round trip on PostgreSQL), in the write's snapshot
            keys = [lay.parent_key(lay.states, (owner,)) + encode_subscript(eid) for owner, eid in batch]
            with self.space.reader() as txn:
                raws = txn.get_many(keys)
            loaded = []
            for ((owner, eid), pending), key in zip(batch.items(), keys, strict=True):
                raw = raws.get(key)
                if raw is not None:  # deleted since it was read: nothing to count
                    state = decoded_header(raw)[0]  # the reads counted decoded most (copied below, never changed)
                    new = {
                        **state,
                        "access_count": state["access_count"] + pending.count,
                        "last_access": _latest(state["last_access"], pending.last),
                    }
                    loaded.append((owner, eid, key, state, new))
            scores = self.scorer.score_many([(new, new) for *_, new in loaded], now)
            writes = _StateWrites()
            for (owner, eid, key, old, new), score in zip(loaded, scores, strict=True):
                new["relevance"] = score
                self._state_changes(owner, eid, old, new, writes, key)
            self._write_states(writes, keep_headers=True)

    def _state_changes(
        self, owner: str, eid: str, old: Mapping[str, Any], new: dict[str, Any], writes: _StateWrites, key: bytes | None = None
    ) -> None:
        """The writes of a new state: the state itself (under ``key``, its encoded key, when
        known) and, when the relevance level changed, the level of its text document and a move
        between relevance bands. Index entries hold the document number, not the level, so none
        is rewritten (``memdb.memory.layout.entry_value``): an access flush writes headers and
        level chunks (``test_an_access_flush_rewrites_no_index_entry``)."""
        lay = self.layout
        if key is None:
            key = lay.parent_key(lay.states, (owner,)) + encode_subscript(eid)
        writes.states.append((key, new))
        old_rel, rel = old["relevance"], new["relevance"]
        level = relevance_level(rel)
        if level != relevance_level(old_rel) and old.get("status") not in ("archived", SUPERSEDED):
            if band_of(old_rel) != band_of(rel):
                writes.bands.append((owner, eid, ts_micros(new["ts"]), band_of(old_rel), band_of(rel)))
            writes.levels.append((owner, eid, level))

    def left_hot(self, owner: str, eid: str) -> None:
        """Forget what this process holds of an episode that left the hot indexes (deleted, erased,
        archived, superseded): its buffered accesses."""
        self.tracker.discard(owner, eid)

    def _write_states(self, writes: _StateWrites, keep_headers: bool = False) -> None:
        """Write what ``_state_changes`` collected: band moves, headers and the text documents'
        levels, one chunk write per chunk. With ``keep_headers`` (an access flush, whose
        episodes the next questions rank again) the headers are kept decoded as written
        (``packed_header``); a rescore's would only crowd out the ones questions reuse."""
        lay = self.layout
        kills: list[tuple[Global, Any]] = []
        entries: list[tuple[bytes, bytes]] = []
        if writes.bands:  # a band entry moves with its value (the document number and outcome)
            parent = lay.parent_key
            moves = []
            for owner, eid, ts_us, old, new in writes.bands:
                tail = tail_at(ts_us, eid.encode("ascii"))
                moves.append((parent(lay.by_band, (owner, old)) + tail, parent(lay.by_band, (owner, new)) + tail))
            with self.space.reader() as txn:
                found = txn.get_many([old_key for old_key, _ in moves])  # one round trip on PostgreSQL
            for (owner, eid, ts_us, old, _), (old_key, new_key) in zip(writes.bands, moves, strict=True):
                raw = found.get(old_key)
                if raw is not None:
                    kills.append((lay.by_band, (owner, old, ts_us, eid)))
                    entries.append((new_key, raw))
        if keep_headers:
            entries.extend((key, packed_header(state)) for key, state in writes.states)
            self.space.apply(kills, packed=entries)
        else:
            self.space.apply(kills, encoded=writes.states, packed=entries)
        by_owner: dict[str, list[tuple[str, int]]] = {}
        for owner, eid, level in writes.levels:
            by_owner.setdefault(owner, []).append((eid, level))
        for owner, changed in by_owner.items():
            self.layout.text.set_levels(owner, changed)

    def rescore(self, now: dt.datetime | None = None, batch: int = 10_000) -> RescoreReport:
        """Recompute every episode's relevance at ``now`` (age changes with time), in native batches.
        Relevance is kept at its level (1/25 of a point), so only the headers whose level moved are
        written: on an idle day, mostly the last weeks' (test_an_idle_day_rewrites_only_the_headers_whose_kept_relevance_moved)."""
        started = time.perf_counter()
        self.flush()
        at = utc(now, "now") if now is not None else self.now()
        report = RescoreReport()
        for owner in self.owners():
            start: Any = None
            while True:
                with self.space.transaction():
                    chunk = []
                    for subs, state in self.layout.states.range((owner,), start):
                        chunk.append((str(subs[1]), state))
                        if len(chunk) >= batch:
                            break
                    scores = self.scorer.score_many([(st, st) for _, st in chunk], at)
                    writes = _StateWrites()
                    for (eid, state), score in zip(chunk, scores, strict=True):
                        report.scored += 1
                        if score != state["relevance"]:
                            report.changed += 1
                            self._state_changes(owner, eid, state, {**state, "relevance": score}, writes)
                    self._write_states(writes)
                if len(chunk) < batch:
                    break
                start = chunk[-1][0] + "\x00"
        report.seconds = time.perf_counter() - started
        return report

    def upgrade_layout(self) -> int:
        """Bring a database written by an older memdb to the current layout (``memdb.memory.migrate``)."""
        return upgrade(self)

    def check(self) -> CheckReport:
        """Verify that every index agrees exactly with the records (``memdb.memory.check``)."""
        return check(self)

    # --- what the lifecycle and governance read and change (the owner given explicitly) ---------

    def load(self, owner: str, episode_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """An episode's hot record and header; NotFoundError for unknown ids, other owners'
        and archived ones alike."""
        day = episode_day(check_id(episode_id))
        with self.space.snapshot():
            record = self.layout.mem.get((owner, day, episode_id))
            state = self.layout.states.get((owner, episode_id))
        if record is None and state is not None and state.get("status") == "archived":
            # the owner's own archived episode: say where it is ("no such episode" of an id an
            # answer with include_archived=True had just shown misled)
            raise NotFoundError(
                f"episode {episode_id!r}: archived, so its full record is in cold storage "
                f"(restore({episode_id!r}) brings it back; ask or recall with include_archived=True show what stays hot)"
            )
        if record is None or state is None:
            raise NotFoundError(f"episode {episode_id!r}: no such episode for owner {owner!r}")
        return record, state

    def load_many(self, owner: str, episode_ids: Iterable[str]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        """``load`` of many episodes in one batch of reads (one round trip on PostgreSQL) and one
        snapshot, by id; those without a hot record (archived, erased, unknown) are left out."""
        lay = self.layout
        wanted = [(eid, lay.parent_key(lay.mem, (owner, episode_day(check_id(eid)))) + encode_subscript(eid)) for eid in episode_ids]
        states = lay.parent_key(lay.states, (owner,))
        with self.space.reader() as txn:
            raws = txn.get_many([k for eid, record_key in wanted for k in (record_key, states + encode_subscript(eid))])
        out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        for eid, record_key in wanted:
            record, state = raws.get(record_key), raws.get(states + encode_subscript(eid))
            if record is not None and state is not None:
                out[eid] = (unpack_value(record), unpack_value(state))
        return out

    def header(self, owner: str, episode_id: str) -> dict[str, Any] | None:
        """An episode's header (hot or archived), or None."""
        found: dict[str, Any] | None = self.layout.states.get((owner, episode_id))
        return found

    def record_of(self, owner: str, episode_id: str) -> dict[str, Any] | None:
        """An episode's hot record, or None (archived, erased or unknown)."""
        found: dict[str, Any] | None = self.layout.record_of(owner, episode_id)
        return found

    def set_status(self, owner: str, episode_ids: Iterable[str], status: str) -> None:
        """Mark hot episodes ``summarized`` (or ``active``): the header changes, nothing else.

        Only between those two: a superseded or archived episode is out of the hot indexes, and
        either status written over its own would put it back in them piecemeal. The caller
        checks in its transaction that the episodes are still what it read; one erased or
        changed meanwhile raises NotFoundError or ValidationError (test_races.py)."""
        if status not in _HOT_STATUSES:
            raise ValidationError(f"status {shown(status)}: set_status sets {' or '.join(_HOT_STATUSES)}")
        for eid in episode_ids:
            header = self.layout.states.get((owner, eid))
            if header is None:
                raise NotFoundError(f"episode {eid!r}: no such episode for owner {owner!r}")
            if header["status"] not in _HOT_STATUSES:
                raise ValidationError(f"episode {eid!r}: {header['status']}, so it is neither marked summarized nor active")
            self.layout.states.set((owner, eid), {**header, "status": status})

    def keep_in_header(self, owner: str, episode_id: str, **fields: Any) -> None:
        """Add what an archived episode keeps hot to its header (the lifecycle's backfill of lessons)."""
        header = self.layout.states[(owner, episode_id)]
        self.layout.states.set((owner, episode_id), {**header, **fields})
        self.space.defer_increments(self.layout.stats, (owner,), {"archive_changes": 1})  # what archived headers say changed

    def ids_held(self, owner: str) -> list[str]:
        """Ids of every episode an owner holds (hot, archived, superseded: each has a header), in id
        order, from one scan of the headers' keys: what a request for everything takes, whatever
        index entry a damage lost, and what ``remove_all`` checks it was given."""
        states = self.layout.states
        base = len(states.key((owner,)))
        return [str(decode_one(key, base)[0]) for key in states.raw_keys((owner,))]

    def ids_in_time(self, owner: str, lo: int | None = None, hi: int | None = None, reverse: bool = False) -> Iterator[str]:
        """Ids of an owner's hot episodes with ``lo <= ts_us < hi``, in time order."""
        for subs, _ in self.layout.by_time.range((owner,), lo, hi, reverse=reverse):
            yield str(subs[2])

    def ids_tagged(self, owner: str, tag: str, lo: int | None = None, hi: int | None = None) -> Iterator[str]:
        """Ids of an owner's hot episodes with a (normalised) tag and ``lo <= ts_us < hi``, in time order."""
        for subs, _ in self.layout.by_tag.range((owner, tag), lo, hi):
            yield str(subs[3])

    def ids_in_band(self, owner: str, band: int) -> Iterator[str]:
        """Ids of an owner's hot episodes in one relevance band (0-10), oldest first."""
        for subs, _ in self.layout.by_band.range((owner, band)):
            yield str(subs[3])

    def ids_of_kind(self, owner: str, kind: str, outcome: str | None = None, reverse: bool = False) -> Iterator[str]:
        """Ids of an owner's hot episodes of one kind (and outcome; None: those without one), in time order."""
        for subs, _ in self.layout.by_kind.range((owner, kind, outcome or NO_OUTCOME), reverse=reverse):
            yield str(subs[-1])

    def ids_in_session(self, owner: str, session: str, reverse: bool = False) -> Iterator[str]:
        """Ids of an owner's hot episodes of one session, in time order (newest first with ``reverse``)."""
        for subs, _ in self.layout.by_session.range((owner, session), reverse=reverse):
            yield str(subs[-1])

    def superseded_ids(self, owner: str, lo: int | None = None, hi: int | None = None, reverse: bool = False) -> Iterator[str]:
        """Ids of an owner's superseded versions with ``lo <= ts_us < hi``, in time order."""
        for subs, _ in self.layout.superseded.range((owner,), lo, hi, reverse=reverse):
            yield str(subs[2])

    def chain(self, owner: str, episode_id: str) -> list[str]:
        """Every version of an episode, oldest first (itself alone if it has none), walked on
        headers, so an archived current version counts; NotFoundError for an unknown id."""
        states = self.layout.states
        state = states.get((owner, check_id(episode_id)))
        if state is None:
            raise NotFoundError(f"episode {episode_id!r}: no such episode for owner {owner!r}")
        seen = {episode_id}
        older: list[str] = []
        newer: list[str] = []
        for step, out in ((predecessor_of, older), (successor_of, newer)):
            h: dict[str, Any] | None = state
            while h is not None and (nxt := step(h)) is not None and nxt not in seen:
                h = states.get((owner, nxt))
                if h is not None:
                    seen.add(nxt)
                    out.append(nxt)
        return [*reversed(older), episode_id, *newer]

    def successor(self, owner: str, episode_id: str) -> str | None:
        """The version that replaced this one (None for a current version or an unknown id)."""
        state = self.layout.states.get((owner, episode_id))
        return successor_of(state) if state is not None else None

    def archived_ids_in_session(
        self, owner: str, session: str, lo: int | None = None, hi: int | None = None, reverse: bool = False
    ) -> Iterator[str]:
        """Ids of an owner's archived episodes of one session with ``lo <= ts_us < hi``, in time order."""
        for subs, _ in self.layout.archived_sessions.range((owner, session), lo, hi, reverse=reverse):
            yield str(subs[-1])

    def archived_ids(self, owner: str, lo: int | None = None, hi: int | None = None, reverse: bool = False) -> Iterator[str]:
        """Ids of an owner's archived episodes with ``lo <= ts_us < hi``, in time order."""
        for subs, _ in self.layout.archived.range((owner,), lo, hi, reverse=reverse):
            yield str(subs[2])

    def cold_blob(self, owner: str, episode_id: str) -> dict[str, Any] | None:
        """The packed cold record of an archived episode (``memdb.lifecycle.cold`` reads it)."""
        found: dict[str, Any] | None = self.layout.cold.get((owner, episode_id))
        return found

    def cold_blobs(self, owner: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every packed cold record of an owner, with its episode id."""
        for subs, blob in self.layout.cold.items((owner,)):
            yield str(subs[1]), blob

    def set_cold_blob(self, owner: str, episode_id: str, blob: dict[str, Any]) -> None:
        """Replace the packed cold record of an archived episode (cold storage re-packs after an erasure)."""
        self.layout.cold.set((owner, episode_id), blob)

    def hot_records(self, owner: str) -> Iterator[dict[str, Any]]:
        """Every hot record of an owner, in day order (cold storage trains its dictionaries on them)."""
        for _, record in self.layout.mem.items((owner,)):
            yield record

    def unlink(self, owner: str, episode_id: str, gone: Collection[str]) -> bool:
        """In the current transaction: the oldest version left of a chain whose earlier versions
        ``gone`` were erased stands alone (``unlinked``): its header, and its record when hot.
        Returns True when it is archived: then its cold record holds the link too, for the
        caller, which owns the cold codec, to re-pack (``memdb.lifecycle.erase`` does)."""
        header = self.layout.states[(owner, episode_id)]
        self.layout.states.set((owner, episode_id), unlinked(header, gone))
        if header.get("status") == "archived":
            self.space.defer_increments(self.layout.stats, (owner,), {"archive_changes": 1})  # what archived headers say changed
            return True
        subs = self.layout.record_subs(owner, episode_id)
        self.layout.mem.set(subs, unlinked(self.layout.mem[subs], gone))
        return False

    def remove(self, owner: str, episode_id: str) -> str:
        """Remove an episode from hot storage, cold storage and every index, in the current
        transaction; returns its content hash. The caller writes the audit record in the same
        transaction (``memdb.lifecycle.erase`` does, for every erasure)."""
        return self.owner(owner)._remove_many((episode_id,))[episode_id]

    def remove_many(self, owner: str, episode_ids: Iterable[str]) -> dict[str, str]:
        """``remove`` of many episodes in one pass, all or none (NotFoundError for an unknown id):
        each posting block, tag list and column chunk they are in is rewritten once, not once per
        episode, and the episodes stream through (an owner's whole history is not held at once).
        Returns each one's content hash, by id."""
        return self.owner(owner)._remove_many(episode_ids)

    def remove_all(self, owner: str, episode_ids: Collection[str]) -> dict[str, str]:
        """``remove_many`` of every episode of an owner (``episode_ids`` names each of them, as a
        request for everything finds them): each is hashed, then its records, headers, cold
        records, index entries, document frequencies and whole text index go by range deletes,
        not episode by episode, and its counters of them with them (the next document number
        stays: numbers are never reused). When some episode of the owner is not among
        ``episode_ids`` (or one of them is not the owner's), it is ``remove_many``."""
        lay = self.layout
        with self.space.transaction():  # all or none
            if set(self.ids_held(owner)) != set(episode_ids):
                return self.owner(owner)._remove_many(episode_ids)
            hashes: dict[str, str] = {}
            archived = 0
            for eid in episode_ids:
                if eid in hashes:
                    continue
                record = lay.record_of(owner, eid)
                if record is None:  # archived: the cold record keeps its hash
                    archived += 1
                    hashes[eid] = str((lay.cold.get((owner, eid)) or {}).get("hash", ""))
                else:
                    hashes[eid] = content_hash(record)
            kept_apart = (lay.mem, lay.states, lay.cold, lay.archived, lay.archived_sessions, lay.superseded, lay.fact_keys)
            for g in (*kept_apart, lay.doc_freq, *(lay.index(name) for name in INDEXES)):
                self.space.discard_deferred(g, (owner,))
                g.kill((owner,))
            lay.text.drop_documents(owner)
            for name in _COUNTED:  # what the records say, none left (check())
                self.space.discard_deferred(lay.stats, (owner, name))
                lay.stats.kill((owner, name))
            if archived:
                self.space.defer_increments(lay.stats, (owner,), {"archive_changes": archived})  # what archived headers say changed
        for eid in hashes:
            self.left_hot(owner, eid)
        return hashes

    def move_to_cold(self, owner: str, moves: Sequence[ColdMove], *, at: dt.datetime) -> None:
        """Archive episodes: each record and its hot index entries leave, its header keeps its
        ``one_line``, its ``blob`` goes to ``^COLD`` and one ``archive`` audit record at ``at``
        with its ``audit`` fields is written; all in one transaction (all or none: NotFoundError
        for one not hot, ValidationError for a superseded one). The posting blocks, tag lists and
        column chunks they share are rewritten once for all of them, not once per episode."""
        self.owner(owner)._move_to_cold(moves, at)

    def move_from_cold(self, owner: str, episode_id: str, record: dict[str, Any], audit: Mapping[str, Any]) -> Episode:
        """Restore: the record and its indexes come back with one ``restore`` audit record;
        restoring counts as an access, so it is not archived again at once."""
        return self.owner(owner)._move_from_cold(episode_id, record, audit)

    def clean(self, owner: str, fields: Mapping[str, Any], caps: Mapping[str, int], what: str) -> dict[str, Any]:
        """``fields`` sanitized as a capture is (every string, tags in both forms; fail closed,
        a failure counted for ``owner``) and cut to ``caps``: for text the layers above derive
        from episodes (an extractor's pattern). Raises SanitizerError, or ValidationError naming ``what``."""
        return self.owner(owner)._clean(fields, caps, what)

    def stored_tags(self, owner: str, tags: Sequence[Any], what: str) -> list[str]:
        """Each of ``tags`` as ``record`` stores it (``tags_as_stored``, normalised: "bob@example.com"
        is "withheld-email"), read through ``owner``'s capture sanitizer (fail closed, a failure
        counted): for a caller that refuses a bad tag, or matches stored ones, before it writes the
        tags as given. Raises SanitizerError, or ValidationError naming ``what`` and the bad tag
        sanitized, or by its type when it is no str, or more than ``MAX_TAGS`` of them."""
        check_tag_count(what, tags)  # by their count, before the sanitizer reads each
        for i, tag in enumerate(tags):
            if not isinstance(tag, str):  # tags_as_stored names its own "tags" for where, not the caller's
                raise ValidationError(f"{what}: tags[{i}]: expected str, got {type(tag).__name__}")
        mine = self.owner(owner)
        try:
            return [normalize_tag(t) for t in tags_as_stored(lambda texts: mine._sanitize(texts, what), tags).stored]
        except ValidationError as exc:  # names the tag as capture reads it
            raise ValidationError(f"{what}: {exc}") from None


@dataclass
class _StateWrites:
    """The writes of new episode states (``Episodes._state_changes``), applied together by
    ``Episodes._write_states``: headers (encoded key, state), relevance band moves (owner, id,
    ts_us, old band, new band) and text document levels (owner, id, level)."""

    states: list[tuple[bytes, dict[str, Any]]] = field(default_factory=list)
    bands: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    levels: list[tuple[str, str, int]] = field(default_factory=list)


def _latest(a: dt.datetime | None, b: dt.datetime) -> dt.datetime:
    return b if a is None or b > a else a


class OwnerEpisodes:
    """One owner's episodes: capture, reads and feedback. No method can read, count or reveal
    another owner's episodes, and none takes an episode out of hot storage (the lifecycle does,
    with an audit record, through ``Episodes``)."""

    def __init__(self, layer: Episodes, owner: str) -> None:
        self._layer = layer
        self._layout = layer.layout
        self._space = layer.space
        self.name = owner

    def __repr__(self) -> str:
        return f"<OwnerEpisodes {self.name!r}>"

    # --- capture -------------------------------------------------------------------------------

    def record(self, kind: str, summary: str, *, ts: dt.datetime | None = None, **fields: Any) -> Episode:
        """Record one episode. Typed kinds need an honest ``outcome`` (success | partial | failure);
        a typed record runs ``Episodes.record_hooks`` in its own transaction. Participants are
        checked as a caller's new values (``check_participants``); an import takes stored ones."""
        check_participants("episode", fields.get("participants"))
        return self._record(kind, summary, ts, fields)

    def record_distilled(
        self, kind: str, summary: str, *, ts: dt.datetime, accessed_at: dt.datetime, kept_tags: Sequence[str] = (), **fields: Any
    ) -> Episode:
        """Record what a session's close distilled, as ``record`` does, counted as accessed when
        written: dated when the work ended, a session closed a month late would otherwise be
        archived by the next maintain (test_a_session_closed_late_is_not_archived_by_the_next_maintain).
        ``kept_tags``: its events' tags, as stored (``_prepare``)."""
        return self._record(kind, summary, ts, fields, accessed_at, kept_tags)

    def _record(
        self,
        kind: str,
        summary: str,
        ts: dt.datetime | None,
        fields: Mapping[str, Any],
        accessed_at: dt.datetime | None = None,
        kept_tags: Sequence[str] = (),
    ) -> Episode:
        # validated and sanitized first, outside the transaction, so that a dropped capture's
        # counters are not rolled back with it (test_sanitizer_failure_drops_capture_fail_closed)
        backfill = self._check_live(ts, lambda: f"record({shown(kind)})", live_only=False)  # named only if refused
        prepared = self._prepare({"kind": kind, "summary": summary, "ts": ts, **fields}, kept_tags=kept_tags)
        what = f"record({kind!r})"
        if kind == FACT_KIND:
            with self._space.transaction():
                self._check_cites(prepared.get("cites") or (), what)
                return self._record_fact(prepared, backfill, accessed_at)
        hooks = self._layer.record_hooks if kind in self._layer.settings.typed_kinds else ()
        if not hooks and not backfill and not prepared.get("cites"):
            return self._episode(self._write_new([prepared], accessed_at)[0])
        # the hooks' writes and the backfill's audit record move with the record, or none does
        # (a caller's transaction already ensures it)
        with nullcontext() if self._space.in_transaction else self._space.transaction():
            self._check_cites(prepared.get("cites") or (), what)
            episode = self._episode(self._write_new([prepared], accessed_at)[0])
            if backfill:
                assert episode.recorded is not None
                self._layer.audit.write(self.name, "backfill", episode.recorded, episode=episode.id, kind=kind, ts=episode.ts)
            for hook in hooks:
                hook(self.name, episode)
        return episode

    def _check_cites(self, cites: Iterable[str], what: str) -> None:
        """ValidationError for a cite of no episode of this owner; in the write's transaction, so
        one erased meanwhile (while a distiller ran) is not cited by what is derived from it
        (test_races.py: test_a_cite_erased_while_recording_is_refused)."""
        unknown = [c for c in cites if self._layer.header(self.name, c) is None]
        if unknown:  # the same answer for another owner's id as for a missing one
            raise ValidationError(f"{what}: cites {unknown[0]!r}, which is not one of this owner's episodes")

    def record_derived(
        self, kind: str, summary: str, *, ts: dt.datetime, accessed_at: dt.datetime, kept_tags: Sequence[str] = (), **fields: Any
    ) -> Episode:
        """Record what the lifecycle derives from earlier episodes (a burst summary): dated like
        its sources, never a backfill, and counted as accessed when written, so it is not
        archived by the run that wrote it. ``kept_tags``: its sources' tags, as stored (``_prepare``)."""
        prepared = self._prepare({"kind": kind, "summary": summary, "ts": ts, **fields}, kept_tags=kept_tags)
        return self._episode(self._write_new([prepared], accessed_at=accessed_at)[0])

    def _check_live(self, ts: dt.datetime | None, named: str | Callable[[], str], *, live_only: bool) -> bool:
        """No silent backfill (issue: faithful over time). A ``ts`` beyond the tolerance ahead of
        the clock is refused; one beyond it in the past is refused for gateway capture (live
        only) and returns True for a typed record (it writes an audit record, as an import does)."""
        if not isinstance(ts, dt.datetime):
            return False  # None: now; anything else: validation names it with the other fields
        try:
            at = utc(ts, "ts")
        except ValidationError:  # naive or out of range: validation names it the same way
            return False
        now = self._layer.now()
        minutes = self._layer.settings.capture_tolerance_minutes
        tolerance = dt.timedelta(minutes=minutes)
        if at > now + tolerance:
            what = named if isinstance(named, str) else named()
            raise ValidationError(
                f"{what}: ts {at.isoformat()} is {_span(at - now)} after the clock: memdb records what has happened "
                f"(capture_tolerance_minutes={minutes:g})"
            )
        if at < now - tolerance:
            if live_only:
                what = named if isinstance(named, str) else named()
                raise ValidationError(
                    f"{what}: ts {at.isoformat()} is {_span(now - at)} before the clock: gateway capture is live only; "
                    "bring past history in with import_episodes (audited)"
                )
            return True
        return False

    def record_exchange(
        self, session: str, user_message: str, response: str, *, ts: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Episode:
        """Capture one gateway exchange as bounded digests of both sides, never the raw payload."""
        if not isinstance(user_message, str) or not isinstance(response, str):
            raise ValidationError("record_exchange: user_message and response must be str")
        self._check_live(ts, "record_exchange", live_only=True)
        cap = self._layer.settings.digest_chars
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
            "tags": tags,  # a list or tuple, as record takes: list("deploy") stored one tag a letter
        }
        return self._capture(self._prepare(fields, content_cap=2 * cap + 32))

    def _capture(self, prepared: dict[str, Any]) -> Episode:
        """Write one prepared gateway capture, with ``Episodes.capture_hooks`` in its transaction."""
        hooks = self._layer.capture_hooks
        if not hooks:
            return self._episode(self._write_new([prepared])[0])
        with nullcontext() if self._space.in_transaction else self._space.transaction():
            episode = self._episode(self._write_new([prepared])[0])
            for hook in hooks:
                hook(self.name, episode)
        return episode

    def record_tool_call(
        self, session: str, tool: str, input: Any, *, ts: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Episode:
        """Capture a tool call as an execution event with a bounded input digest."""
        check_ident("tool", tool)
        self._check_live(ts, "record_tool_call", live_only=True)
        check_payload("record_tool_call", "input", input)
        cap = self._layer.settings.digest_chars
        fields = {
            "kind": "tool_call",
            "session": session,
            "tool": tool,
            "ts": ts,
            "summary": f"{tool} call",
            "content": as_plain(input),  # each string sanitized as written, then JSON, bounded to the cap
            "tags": tags,  # a list or tuple, as record takes: list("deploy") stored one tag a letter
        }
        return self._capture(self._prepare(fields, content_cap=cap, json_fields=("content",)))

    def record_tool_result(self, call_id: str, result: Any) -> Episode:
        """Attach a bounded, sanitized result to an earlier tool call of this owner, once.

        A call has one result: the same one again (a gateway delivering twice) writes nothing and
        returns the call; another is refused with ValidationError naming the call, as capture
        never overwrites what was recorded (a retry is a new call; a result recorded wrongly is
        corrected with ``supersede``, which keeps the earlier version and an audit record;
        test_a_second_result_for_a_call_is_refused). ``Episodes.capture_hooks`` run in the
        result's transaction (a session closed before its result came goes on)."""
        day = episode_day(check_id(call_id))
        what = f"tool result for {call_id}"
        check_payload(what, "result", result)
        # Numbered after the call's own placeholders, so a new value never reuses one of them;
        # sanitized outside the write, so a dropped capture's counters are not rolled back.
        # The call's own, not a result's recorded before: delivered again, it sanitizes the same.
        context = placeholders_in(strings_in({k: v for k, v in self._layer.load(self.name, call_id)[0].items() if k != "result"}))
        flat, rebuild = flatten_texts({"result": as_plain(result)}, what, payloads=("result",))  # each string as written
        sanitized = self._sanitize({**flat, "~placeholders": context}, what=what)
        bounded = {"result": as_text(rebuild(sanitized)["result"])}
        self._bound(bounded, {"result": self._layer.settings.digest_chars}, sanitized, what)
        clean = bounded["result"]
        with self._space.transaction():
            record, state = self._layer.load(self.name, call_id)
            if record["kind"] != "tool_call":
                raise ValidationError(f"episode {call_id!r}: is a {record['kind']!r}, not a tool_call")
            if state.get("status") == SUPERSEDED:  # an earlier version stays as it was
                raise ValidationError(f"episode {call_id!r}: superseded by {successor_of(state)}; attach the result to that version")
            earlier = record.get("result")
            if earlier == clean:  # delivered again: what was recorded stands, and nothing happened
                return to_episode(self.name, call_id, record, state)
            if earlier is not None:
                raise ValidationError(
                    f"{what}: the call has a result already, recorded as it was and never overwritten "
                    "(a retry is a new tool call; a result recorded wrongly is corrected by superseding the call with its result)"
                )
            old = dict(record)
            record = {**record, "result": clean}
            self._text_index_changes(call_id, old, record, state)
            self._layout.mem.set((self.name, day, call_id), record)
            episode = to_episode(self.name, call_id, record, state)
            for hook in self._layer.capture_hooks:
                hook(self.name, episode)
        return episode

    def import_episodes(
        self,
        episodes: Iterable[Mapping[str, Any] | EpisodeInput | Episode],
        *,
        source: str,
        then: Callable[[ImportReport], object] | None = None,
    ) -> ImportReport:
        """Import past episodes (migrations, benchmarks) keeping their timestamps; one audit record.
        An ``Episode`` (another database's) gives what an export writes of it (``IMPORTED_FIELDS``).

        Every item is validated and sanitized before anything is written; then all are
        written in one transaction with the audit record, so an import lands whole or not at all.
        An item's ``cites`` may name the ids an export gave (this batch's or an earlier
        import's): they become the new ids, and a cite of nothing here is dropped and counted.
        The sources a ``summary`` cites are ``summarized`` again, so maintain does not write
        the same burst's summary twice (tests/surfaces/test_import_fidelity.py). ``then`` runs
        in the same transaction with the report: what layers above keep of the imported
        episodes lands with them or not at all. The process's cyclic GC is paused while an
        import runs, and left as it was (``_gc_paused``).
        """
        if isinstance(episodes, (str, bytes, Mapping)) or not isinstance(episodes, Iterable):
            raise ValidationError(f"import_episodes: give an iterable of episodes (mappings), got {type(episodes).__name__}")
        with _gc_paused():
            return self._import(episodes, source, then)

    def _import(
        self, episodes: Iterable[Mapping[str, Any] | EpisodeInput | Episode], source: str, then: Callable[[ImportReport], object] | None
    ) -> ImportReport:
        items, sources, skipped = [], [], 0
        given: set[str] = set()
        seen = self._layout.imported
        for i, e in enumerate(episodes):
            if isinstance(e, Episode):  # another database's (a migration in Python): what an export writes of it
                item = {k: v for k in IMPORTED_FIELDS if (v := getattr(e, k)) is not None}
            elif isinstance(e, EpisodeInput):
                item = e.model_dump(exclude_none=True)
            elif isinstance(e, Mapping):
                item = dict(e)
            else:
                raise ValidationError(f"import item {i}: expected a mapping of episode fields or an Episode, got {type(e).__name__}")
            source_id = item.pop("id", None)  # the id an export gave it: importing the same file twice adds nothing
            if source_id is not None:
                check_id(source_id, f"import item {i}: episode")
                if source_id in given or self._imported_here(source_id):
                    skipped += 1
                    continue
                given.add(source_id)
            items.append((i, item))  # its place in what was given, which an error names
            sources.append(source_id)
        prepared = [self._prepare(item, where=f"import item {i}") for i, item in items]
        for (i, _), p in zip(items, prepared, strict=True):  # past history, as record takes it: none ahead of the clock
            self._check_live(p["ts"], f"import item {i}", live_only=False)
        now = self._layer.now()
        with self._space.transaction():
            # read again in the write's: another process's import of the same file committed meanwhile
            # (tests/surfaces/test_cli_processes.py)
            late = {k for k, source_id in enumerate(sources) if source_id is not None and self._imported_here(source_id)}
            if late:
                prepared, sources = (
                    [p for k, p in enumerate(prepared) if k not in late],
                    [s for k, s in enumerate(sources) if k not in late],
                )
                skipped += len(late)
            new_ids, dropped = self._write_imported(prepared, sources, now)
            ids = [new_ids[i] for i in range(len(prepared))]
            stamps = [p["ts"] for p in prepared]
            for source_id, eid in zip(sources, ids, strict=True):
                if source_id is not None:
                    seen.set((self.name, source_id), eid)
            audit_id = self._layer.audit.write(
                self.name,
                "import",
                now,
                source=str(source),
                count=len(ids),
                skipped=skipped,
                dropped_cites=dropped,
                first_ts=min(stamps) if stamps else None,
                last_ts=max(stamps) if stamps else None,
            )
            citing = [eid for p, eid in zip(prepared, ids, strict=True) if p["cites"]]
            report = ImportReport(len(ids), ids, audit_id, skipped, dropped, citing)
            if then is not None:
                then(report)
        return report

    def _imported_here(self, source_id: str) -> bool:
        """Whether an export's id was imported (or is an episode) here: what it became is still
        here; an erased one comes back, and is counted imported."""
        imported = self._layout.imported.get((self.name, source_id))
        return (imported is not None and self._layer.header(self.name, imported) is not None) or (
            self._layer.header(self.name, source_id) is not None
        )

    def _write_imported(self, prepared: list[dict[str, Any]], sources: list[str | None], now: dt.datetime) -> tuple[dict[int, str], int]:
        """In the caller's transaction: write the prepared imports, each after the ones it cites
        (so a cite can name the new id: a topological order, one batch per level), facts in the
        order given for each key (one recorded again supersedes the value before it). Where cites
        go round in a circle, the circle's first item given is written first and its cites of the
        unwritten are dropped. Returns each item's new id by position and the number of cites
        dropped because they name no episode here."""
        n = len(prepared)
        batch = {s: i for i, s in enumerate(sources) if s is not None}
        needs: list[set[int]] = [{batch[c] for c in p["cites"] if c in batch} - {i} for i, p in enumerate(prepared)]
        facts: dict[str, list[int]] = {}  # each key's values, in the order given
        for i, p in enumerate(prepared):
            if p["kind"] == FACT_KIND:
                facts.setdefault(p["key"], []).append(i)
        for values in facts.values():
            for before, after in itertools.pairwise(values):
                needs[after].add(before)
        dependents: list[list[int]] = [[] for _ in range(n)]
        for i, wanted in enumerate(needs):
            for j in wanted:
                dependents[j].append(i)
        waiting = [len(wanted) for wanted in needs]
        ready = [i for i in range(n) if not waiting[i]]
        pending = set(range(n))
        new_ids: dict[int, str] = {}
        dropped = 0
        while pending:
            level = sorted(ready) if ready else [_first_on_a_circle(min(pending), needs, pending)]
            ready = []
            for i in level:
                kept: list[str] = []
                for cited in prepared[i]["cites"]:
                    found = self._cited_import(cited, batch, new_ids)
                    if found is None:
                        dropped += 1
                    elif found not in kept:
                        kept.append(found)
                prepared[i]["cites"] = kept
            plain = [i for i in level if prepared[i]["kind"] != FACT_KIND]
            written = self._write_new([prepared[i] for i in plain], accessed_at=now)  # imported history is not idle from its dates
            for i, (eid, record, _) in zip(plain, written, strict=True):
                new_ids[i] = eid
                prepared[i]["ts"] = record["ts"]
            for i in level:
                if prepared[i]["kind"] == FACT_KIND:
                    fact = self._record_fact(prepared[i], False, accessed_at=now)
                    new_ids[i] = fact.id
                    prepared[i]["ts"] = fact.ts
            for i in level:
                pending.discard(i)
                for j in dependents[i]:
                    waiting[j] -= 1
                    if not waiting[j] and j in pending:
                        ready.append(j)
        summarized = [c for p in prepared if p["kind"] == "summary" for c in p["cites"]]
        active = [c for c in dict.fromkeys(summarized) if (self._layer.header(self.name, c) or {}).get("status") == "active"]
        self._layer.set_status(self.name, active, "summarized")
        return new_ids, dropped

    def _cited_import(self, cited: str, batch: Mapping[str, int], new_ids: Mapping[int, str]) -> str | None:
        """The id a cite of an import names here: the new id of an item of this batch (written
        already), of an earlier import's item (still here), or one of this owner's episodes."""
        j = batch.get(cited)
        if j is not None:
            return new_ids.get(j)
        earlier = self._layout.imported.get((self.name, cited))
        if earlier is not None:
            return str(earlier) if self._layer.header(self.name, str(earlier)) is not None else None
        return cited if self._layer.header(self.name, cited) is not None else None

    # --- versions: supersede, facts --------------------------------------------------------------

    def supersede(self, episode_id: str, reason: str, changes: Mapping[str, Any], *, kept_tags: Sequence[str] = ()) -> Episode:
        """Write a new version of an active episode: its fields with ``changes`` applied, checked
        and sanitized as a capture is (a typed kind keeps an honest outcome, which the new
        version may correct), citing the old one, which becomes ``superseded``: kept, out of
        every hot index, linked to its successor. Both writes and one ``supersede`` audit record
        (old and new ids, the reason, the fields changed) go in one transaction. A fact's changed
        text is a new value: the old content and decisions it does not name are not copied
        (``_new_fact_value``).

        Raises NotFoundError for an unknown id, and ValidationError (writing nothing) for an
        empty reason, no or unchanged fields, ``kind``/``key``/``feedback`` among the changes, and
        an episode that is superseded already, archived (restore it first) or a summary.
        ``kept_tags``: tags as stored already (a closed session's events'), added to the changed
        ones; tags not changed are the version's own, kept as stored (``_prepare``)."""
        what = f"supersede({shown(episode_id)})"  # not an id yet: shown sanitized
        fixed = sorted(set(changes) & set(_FIXED_IN_VERSIONS))
        if fixed:
            raise ValidationError(f"{what}: {fixed[0]} does not change in a new version ({_FIXED_IN_VERSIONS[fixed[0]]})")
        if not changes:
            raise ValidationError(f"{what}: no changes given (name the fields to correct, e.g. outcome='failure')")
        record, _ = self._current(episode_id, what)
        if "participants" in changes:  # the caller's new ones: those the version holds are taken as stored
            check_participants(what, changes["participants"], frozenset(record.get("participants") or ()))
        reason = self._reason(reason, what)
        if record["kind"] == "tool_call" and changes.get("result") is not None and not isinstance(changes["result"], str):
            # a result as record_tool_result takes it (a dict, a list): stored as its JSON text
            check_payload(what, "result", changes["result"])
            changes = {**changes, "result": as_text(as_plain(changes["result"]))}
        if "ts" in changes:
            self._check_live(changes["ts"], what, live_only=False)  # never after the clock; the past is the point
        raw = {k: record[k] for k in _INPUT_FIELDS if record.get(k) is not None}
        if record["kind"] == FACT_KIND:
            raw = _new_fact_value(raw, changes)
        raw = {k: v for k, v in {**raw, **changes}.items() if v is not None}  # None clears a field
        if "tags" not in changes:  # sanitized again, a stored ["withheld-secret", "vendor"] lost "vendor"
            kept_tags = [*raw.pop("tags", ()), *kept_tags]
        prepared = self._prepare(raw, where=what, content_cap=self._content_cap(record["kind"]), kept_tags=kept_tags)
        changed = _changed_fields(record, prepared, _INPUT_FIELDS)
        if not changed:
            raise ValidationError(f"{what}: the changes leave every field as it was (nothing to supersede)")
        with self._space.transaction():
            again, state = self._current(episode_id, what)
            if again != record:  # another writer got there between the read and this transaction
                raise ValidationError(f"{what}: the episode changed while it was being superseded; try again")
            self._check_cites([c for c in prepared.get("cites") or () if c not in (record.get("cites") or ())], what)
            return self._write_successor(episode_id, record, state, prepared, reason, changed, self._layer.now())

    def versions(self, episode_id: str) -> list[Episode]:
        """Every version of an episode, oldest first, the current one last (not an access); an
        archived current version as what stays hot of it (its one line as summary)."""
        out = []
        with self._space.snapshot():
            for eid in self._layer.chain(self.name, episode_id):
                state = self._layout.states[(self.name, eid)]
                if state.get("status") == "archived":
                    out.append(to_episode(self.name, eid, {**state, "summary": state.get("one_line", ""), "content": ""}, state))
                else:
                    out.append(to_episode(self.name, eid, self._layout.record_of(self.name, eid), state))
        return out

    def fact(self, key: str, *, access: bool = True) -> Episode:
        """The current version of the fact under ``key`` (counts as an access unless ``access`` is
        False: a writer's look at what it replaces is no read; the value is its ``summary``);
        NotFoundError naming the key when there is none."""
        check_ident("key", key)
        eid = self._layout.fact_keys.get((self.name, key))
        if eid is None:
            raise NotFoundError(f"fact {shown(key)}: no such fact for owner {self.name!r} (facts() lists the keys)")
        return self.get(str(eid)) if access else self.peek(str(eid))

    def facts(self, prefix: str | None = None) -> list[Episode]:
        """The current version of every fact, by key (only keys starting with ``prefix``, when
        given); a bulk read, not an access."""
        if prefix is not None:
            check_ident("prefix", prefix)
        start, stop = fact_key_bounds(prefix)
        with self._space.snapshot():
            return [self.peek(str(eid)) for _, eid in self._layout.fact_keys.range((self.name,), start, stop)]

    def _record_fact(self, prepared: dict[str, Any], backfill: bool, accessed_at: dt.datetime | None = None) -> Episode:
        """Record a fact: the first under its key, or a new version of the current one (the same
        mechanism as ``supersede``); the same value again writes nothing and returns the current one."""
        key = prepared["key"]
        with self._space.transaction():
            current = self._layout.fact_keys.get((self.name, key))
            if current is not None:
                record, state = self._layer.load(self.name, str(current))
                changed = _changed_fields(record, prepared, _FACT_COMPARED)
                if not changed:
                    return to_episode(self.name, str(current), record, state)
                now = self._layer.now()
                episode = self._write_successor(str(current), record, state, prepared, "new value for fact", changed, now)
            else:
                episode = self._episode(self._write_new([prepared], accessed_at=accessed_at)[0])
                self._layout.fact_keys.set((self.name, key), episode.id)
            if backfill:
                assert episode.recorded is not None
                self._layer.audit.write(self.name, "backfill", episode.recorded, episode=episode.id, kind=FACT_KIND, ts=episode.ts)
        return episode

    def _write_successor(
        self,
        old_id: str,
        old: Mapping[str, Any],
        old_state: Mapping[str, Any],
        prepared: dict[str, Any],
        reason: str,
        changed: list[str],
        now: dt.datetime,
    ) -> Episode:
        """In the caller's transaction: write ``prepared`` as the version after ``old_id`` and
        take that one out of the hot indexes and postings as superseded, with the audit record.
        The new version keeps the old one's accesses, feedback and summarized status (it is the
        same memory, corrected), and counts as accessed now, so a correction of an old episode
        is not archived by the next maintain."""
        pending, _ = self._layer.tracker.pending(self.name, old_id)  # reads not flushed yet count too
        prepared = {
            **prepared, "supersedes": old_id, "supersede_reason": reason, "_access_count": old_state.get("access_count", 0) + pending,
            "cites": list(dict.fromkeys([*prepared.get("cites", ()), old_id])),
        }  # fmt: skip
        if prepared.get("_feedback") is None:
            prepared["_feedback"] = old_state.get("feedback")
        ((eid, record, state),) = self._write_new([prepared], accessed_at=now)
        if old_state.get("status") == "summarized":  # its burst was summarized already: not an event to summarize again
            state = {**state, "status": "summarized"}
            self._layout.states.set((self.name, eid), state)
        kills, _, deltas, df = self._hot_changes(old_id, old, old_state)
        audit: dict[str, Any] = {"episode": old_id, "successor": eid, "reason": reason, "fields": changed}
        if "outcome" in changed:
            audit["outcome"] = {"from": old.get("outcome"), "to": record.get("outcome")}
        if record["kind"] == FACT_KIND:  # a field of its own, not in the reason: erasure redacts it (AuditLog.redact_erased)
            audit["key"] = record["key"]
        sets: list[tuple[Global, Any, Any]] = [
            (self._layout.states, (self.name, old_id), superseded_header(old_state, eid)),
            (self._layout.superseded, (self.name, ts_micros(old["ts"]), old_id), ""),
            self._layer.audit.change(self.name, "supersede", now, **audit),
        ]
        if record["kind"] == FACT_KIND:
            sets.append((self._layout.fact_keys, (self.name, record["key"]), eid))
        self._space.apply(kills, sets)
        self._bump(**deltas)
        self._bump_df(df)
        self._layer.left_hot(self.name, old_id)
        episode = to_episode(self.name, eid, record, state)
        for hook in self._layer.supersede_hooks:
            hook(self.name, old_id, old, episode, changed, now)
        return episode

    def _current(self, episode_id: str, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The record and header of a current, hot, non-summary episode, or the error saying why not."""
        state = self._layout.states.get((self.name, check_id(episode_id)))
        record = self._layout.record_of(self.name, episode_id) if state is not None else None
        if state is None:
            raise NotFoundError(f"episode {episode_id!r}: no such episode for owner {self.name!r}")
        if state.get("status") == SUPERSEDED:
            raise ValidationError(f"{what}: already superseded by {successor_of(state)} (supersede the current version)")
        if state.get("status") == "archived" or record is None:
            raise ValidationError(f"{what}: archived; restore() it first, then supersede it")
        if state["kind"] == "summary":
            raise ValidationError(f"{what}: a summary is derived from its sources by maintain; correct a source instead")
        return record, state

    def _reason(self, reason: str, what: str) -> str:
        """A supersede reason, sanitized and bounded like a summary (it is stored on the new
        version and in the audit record)."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"{what}: reason {reason!r}: say why (it is kept on the new version and in the audit trail)")
        return str(self._clean({"reason": reason.strip()}, {"reason": SUMMARY_CHARS}, what)["reason"])

    def _content_cap(self, kind: str) -> int | None:
        """The content cap of a kind's episodes: an exchange holds both sides (``record_exchange``)."""
        return 2 * self._layer.settings.digest_chars + 32 if kind == "exchange" else None

    # --- reads ---------------------------------------------------------------------------------

    def get(self, episode_id: str) -> Episode:
        """One of this owner's episodes (counts as an access); NotFoundError for unknown ids and
        other owners' alike."""
        record, state = self._layer.load(self.name, episode_id)
        now = self._layer.now()
        self._layer.tracker.touch(self.name, [episode_id], now)
        state = self._live_state(episode_id, record, state, now)
        return to_episode(self.name, episode_id, record, state)

    def peek(self, episode_id: str) -> Episode:
        """Like ``get`` without counting an access (for tools and audits)."""
        record, state = self._layer.load(self.name, episode_id)
        return to_episode(self.name, episode_id, record, state)

    def explain(self, episode_id: str, now: dt.datetime | None = None) -> Explanation:
        """Why an episode ranks where it does: its relevance and the four components (no access)."""
        record, state = self._layer.load(self.name, episode_id)
        at = utc(now, "now") if now is not None else self._layer.now()
        return self._layer.scorer.explain(record, self._live_state(episode_id, record, state, at, rescore=False), at)

    def _live_state(
        self, episode_id: str, record: Mapping[str, Any], state: dict[str, Any], now: dt.datetime, rescore: bool = True
    ) -> dict[str, Any]:
        """The stored state with accesses not yet flushed applied (and relevance recomputed)."""
        count, last = self._layer.tracker.pending(self.name, episode_id)
        if not count:
            return state
        live = {**state, "access_count": state["access_count"] + count, "last_access": _latest(state["last_access"], last)}  # type: ignore[arg-type]
        if rescore:
            live["relevance"] = self._layer.relevance(record, live, now)
        return live

    def __contains__(self, episode_id: object) -> bool:
        try:
            self._layer.load(self.name, str(episode_id))
        except NotFoundError:
            return False
        return True

    def count(self) -> int:
        """How many episodes this owner has."""
        return int(self._layout.stats.get((self.name, "episodes"), 0))

    def episodes(
        self, since: dt.datetime | None = None, until: dt.datetime | None = None, reverse: bool = False, session: str | None = None
    ) -> Iterator[Episode]:
        """This owner's episodes in time order (``since`` inclusive, ``until`` exclusive), those
        of one ``session`` only when given, read from its index (a timeline of a long session
        starts at its first event, not at the best ranked).

        A bulk scan (export, audits): it does not count as an access.
        """
        lo = ts_micros(utc(since, "since")) if since else None
        hi = ts_micros(utc(until, "until")) if until else None
        parent: tuple[str, ...] = (self.name,)
        index = self._layout.by_time
        if session is not None:
            index, parent = self._layout.by_session, (self.name, check_ident("session", session))
        for subs, _ in index.range(parent, lo, hi, reverse=reverse):
            yield self.peek(str(subs[-1]))

    # --- updates -------------------------------------------------------------------------------

    def feedback(self, episode_id: str, value: float) -> Episode:
        """Record agent feedback in [-1, 1] (the latest counts) and rescore the episode."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= float(value) <= 1.0:
            raise ValidationError(f"feedback {shown(value)}: must be a number in [-1, 1]")
        with self._space.transaction():
            record, state = self._layer.load(self.name, episode_id)
            if state.get("status") == SUPERSEDED:  # an earlier version is kept as it was: the memory is its current version
                raise ValidationError(f"feedback {episode_id!r}: superseded by {successor_of(state)}; give feedback on that version")
            new = {**state, "feedback": float(value)}
            new["relevance"] = self._layer.relevance(record, new, self._layer.now())
            writes = _StateWrites()
            self._layer._state_changes(self.name, episode_id, state, new, writes)
            self._layer._write_states(writes)
        # with accesses not yet flushed, as explain() shows it
        return to_episode(self.name, episode_id, record, self._live_state(episode_id, record, new, self._layer.now()))

    # --- taking episodes out of hot storage and back (``Episodes`` calls these) --------------------

    def _remove_many(self, episode_ids: Iterable[str]) -> dict[str, str]:
        """Take episodes out of hot and cold storage and every index (``Episodes.remove_many``).
        Their text documents leave the text index in one ``TextIndex.remove``, which reads them
        from ``hot()`` as it goes and keeps only their document numbers: the records are read,
        hashed and their index entries killed one episode after another, in batches."""
        hashes: dict[str, str] = {}
        stats: Counter[str] = Counter()
        df: Counter[str] = Counter()
        lay, owner = self._layout, self.name

        def hot() -> Iterator[tuple[str, Mapping[str, int], Iterable[str]]]:
            kills: list[tuple[Global, Any]] = []
            for episode_id in episode_ids:
                if episode_id in hashes:
                    continue
                state = lay.states.get((owner, check_id(episode_id)))
                if state is None:
                    raise NotFoundError(f"episode {episode_id!r}: no such episode for owner {owner!r}")
                kills.append((lay.states, (owner, episode_id)))
                stats["episodes"] -= 1
                if state.get("status") == "archived":
                    cold = lay.cold.get((owner, episode_id)) or {}
                    hashes[episode_id] = str(cold.get("hash", ""))
                    kills.append((lay.cold, (owner, episode_id)))
                    kills.extend((self._space[g], e) for g, es in index_entries(owner, episode_id, state, state).items() for e in es)
                    stats["archived"] -= 1
                    stats["archive_changes"] += 1
                else:
                    record = lay.record_of(owner, episode_id)
                    if record is None:
                        raise NotFoundError(f"episode {episode_id!r}: no such episode for owner {owner!r}")
                    hashes[episode_id] = content_hash(record)
                    kills.append((lay.mem, (owner, episode_day(episode_id), episode_id)))
                    # the current version of its key goes too (erasure takes the whole chain)
                    if state.get("kind") == FACT_KIND and record.get("key") and lay.fact_keys.get((owner, record["key"])) == episode_id:
                        kills.append((lay.fact_keys, (owner, record["key"])))
                    if state.get("status") == SUPERSEDED:  # out of the hot indexes and postings already
                        kills.extend((self._space[g], e) for g, es in index_entries(owner, episode_id, record, state).items() for e in es)
                    else:
                        yield self._leaving_hot(episode_id, record, state, kills, stats, df)
                if len(kills) >= _KILLS_BATCH:
                    self._space.apply(kills)
                    kills.clear()
            self._space.apply(kills)

        with self._space.transaction():  # all or none: an unknown id leaves nothing removed
            lay.text.remove(owner, hot())
            self._bump(**{k: v for k, v in stats.items() if v})
            self._bump_df(df)
        for episode_id in hashes:
            self._layer.left_hot(owner, episode_id)
        return hashes

    def _hot_entries(
        self, eid: str, record: Mapping[str, Any], state: Mapping[str, Any]
    ) -> tuple[list[tuple[Global, Any]], dict[str, int], int]:
        """An active episode's hot index entries, and its terms with their frequencies and its
        length (``terms_of``): what leaving or joining the hot indexes changes."""
        found = index_entries(self.name, eid, record, {**state, "status": "active"})
        tf, dl = terms_of(record)
        return [(self._space[g], e) for g, es in found.items() for e in es], tf, dl

    def _leaving_hot(
        self,
        eid: str,
        record: Mapping[str, Any],
        state: Mapping[str, Any],
        kills: list[tuple[Global, Any]],
        stats: Counter[str],
        df: Counter[str],
    ) -> tuple[str, Mapping[str, int], Iterable[str]]:
        """An active episode leaving the hot indexes with others (an erasure, an archive batch):
        its index entries join ``kills`` and its length and terms the batch's statistic and
        document-frequency deltas; returns what ``TextIndex.remove`` takes of it, so the text
        blocks the batch shares are rewritten once."""
        entries, tf, dl = self._hot_entries(eid, record, state)
        kills.extend(entries)
        if dl:
            stats["docs"] -= 1
            stats["terms"] -= dl
        df.subtract(tf.keys())
        return eid, tf, record.get("tags") or ()

    def _hot_changes(
        self, eid: str, record: Mapping[str, Any], state: Mapping[str, Any], code: int | None = None
    ) -> tuple[list[tuple[Global, Any]], list[tuple[bytes, bytes]], dict[str, int], dict[str, int]]:
        """Hot index entries of an active episode: to kill, or with ``code`` (its index code) to
        set, packed with its new document number; with the statistic and document-frequency
        deltas that go with them. Its text document is taken out of the text index now, or with
        ``code`` put in."""
        entries, tf, dl = self._hot_entries(eid, record, state)
        sign = 1 if code is not None else -1
        packed: list[tuple[bytes, bytes]] = []
        if code is None:
            self._layout.text.remove(self.name, [(eid, tf, record.get("tags") or ())])
        else:
            (doc,) = self._layout.text.add(self.name, [Doc(eid, ts_micros(record["ts"]), code, tf, dl, tuple(record.get("tags") or ()))])
            value = entry_value(doc, record.get("outcome"))
            packed = [(g.key(e), value) for g, e in entries]
            entries = []
        deltas = {"docs": sign if dl else 0, "terms": sign * dl}
        return entries, packed, deltas, {term: sign for term in tf}

    def _move_to_cold(self, moves: Sequence[ColdMove], at: dt.datetime) -> None:
        lay, owner = self._layout, self.name
        stats: Counter[str] = Counter()
        df: Counter[str] = Counter()
        kills: list[tuple[Global, Any]] = []
        sets: list[tuple[Global, Any, Any]] = []
        leaving: list[tuple[str, Mapping[str, int], Iterable[str]]] = []
        with self._space.transaction():
            if len({m.episode_id for m in moves}) < len(moves):  # counted once each in the statistics
                raise ValidationError(f"archive: {len(moves)} episodes given, some of them twice (give each once)")
            loaded = self._layer.load_many(owner, [m.episode_id for m in moves])
            for episode_id, cold, one_line, audit in moves:
                if episode_id not in loaded:  # archived or erased: load says which
                    loaded[episode_id] = self._layer.load(owner, episode_id)
                record, state = loaded[episode_id]
                if state.get("status") == SUPERSEDED:  # out of the hot indexes already: archived, its header would lose the link
                    raise ValidationError(f"archive {episode_id!r}: superseded by {successor_of(state)}; archive the current version")
                leaving.append(self._leaving_hot(episode_id, record, state, kills, stats, df))
                kills.append((lay.mem, lay.record_subs(owner, episode_id)))
                # what experience needs stays hot (DESIGN 5): kind, outcome, tags and time are in the
                # header already; the one-liner and the lesson join them, and who took part ("What did
                # Bob review?" finds it archived as it did hot)
                header = {
                    **state, "status": "archived", "one_line": one_line, "archived_from": state["status"], **kept_when_archived(record),
                }  # fmt: skip
                sets += [
                    (lay.states, (owner, episode_id), header),
                    (lay.cold, (owner, episode_id), cold),
                    *((self._space[g], e, "") for g, es in index_entries(owner, episode_id, header, header).items() for e in es),
                    self._layer.audit.change(owner, "archive", at, written=self._layer.now(), **audit),
                ]
            lay.text.remove(owner, leaving)
            self._space.apply(kills, sets)
            self._bump(archived=len(moves), archive_changes=len(moves), **{k: v for k, v in stats.items() if v})
            self._bump_df(df)
        for move in moves:
            self._layer.left_hot(owner, move.episode_id)

    def _move_from_cold(self, episode_id: str, record: dict[str, Any], audit: Mapping[str, Any]) -> Episode:
        now = self._layer.now()
        with self._space.transaction():
            state = self._layout.states.get((self.name, check_id(episode_id)))
            if state is None or state.get("status") != "archived":
                raise NotFoundError(f"episode {episode_id!r}: no archived episode with this id for owner {self.name!r}")
            # the told windows read again, as this code reads them: one archived under an older
            # layout was left out of the upgrade's reading (only hot records are read)
            settings = self._layer.settings
            told = told_of(record, terms_of(record)[0], settings.week_starts_on, settings.timezone)
            header = {k: v for k, v in state.items() if k not in ARCHIVED_FIELDS and k != "told"} | ({"told": told} if told else {})
            header.update(status=state.get("archived_from", "active"), access_count=state["access_count"] + 1, last_access=now)
            header["relevance"] = self._layer.relevance(record, header, now)
            code = index_code(header["relevance"], record.get("outcome"))
            _, packed, deltas, df = self._hot_changes(episode_id, record, header, code)
            sets: list[tuple[Global, Any, Any]] = [
                (self._layout.mem, (self.name, episode_day(episode_id), episode_id), record),
                (self._layout.states, (self.name, episode_id), header),
                self._layer.audit.change(self.name, "restore", now, **audit),
            ]
            kills: list[tuple[Global, Any]] = [
                (self._layout.cold, (self.name, episode_id)),
                *((self._space[g], e) for g, es in index_entries(self.name, episode_id, state, state).items() for e in es),
            ]
            self._space.apply(kills, sets, packed=packed)
            self._bump(archived=-1, archive_changes=1, **deltas)
            self._bump_df(df)
        return to_episode(self.name, episode_id, record, header)

    # --- internals -----------------------------------------------------------------------------

    # --- capture internals ----------------------------------------------------------------------

    def _clean(self, fields: Mapping[str, Any], caps: Mapping[str, int], what: str) -> dict[str, Any]:
        flat, rebuild = flatten_texts(fields, what)
        sanitized = self._sanitize(flat, what)
        out = rebuild(sanitized)
        self._bound(out, caps, sanitized, what)
        return out

    def _sanitize(self, flat: dict[str, str], what: str) -> dict[str, str]:
        try:
            return sanitize_fields(self._layer.sanitizer, flat)
        except SanitizerError as exc:
            failure = SanitizerError(f"{what}: capture dropped, nothing written ({exc})")
        # Only counters are written: no byte of the text reaches disk, nor the log
        with self._space.transaction():
            self._layout.stats.increment((self.name, "dropped"))
            self._layout.meta.increment(("dropped_captures",))
        _log.warning("capture dropped for owner %r: the sanitizer failed on %s; nothing written", self.name, what)
        raise failure

    def _prepare(
        self,
        raw: dict[str, Any],
        where: str = "episode",
        content_cap: int | None = None,
        json_fields: tuple[str, ...] = (),
        kept_tags: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Sanitize, validate and bound one episode; returns the record to store (no I/O but counters).
        ``json_fields`` hold plain JSON values (``as_plain``), stored as their JSON text once sanitized.
        ``kept_tags``: tags as stored already (an earlier version's, a closed session's events'), added
        after ``raw``'s own and never sanitized again: read again, a stored pair ["withheld-secret",
        "vendor"] was a header and its secret, and "vendor" was lost (test_distill_tags.py)."""
        settings = self._layer.settings
        for name, cap in _LIST_CAPS.items():
            if isinstance(given := raw.get(name), list | tuple) and len(given) > cap:  # by its count: an item may be a secret
                raise ValidationError(
                    f"{where}: {name}: {len(given)} given, more than the {cap} an episode holds (keep those it is found by)"
                )
        flat, rebuild = flatten_texts(raw, where, payloads=json_fields)
        ident_before = {k: raw[k] for k in ("session", "tool", "key") if isinstance(raw.get(k), str)}
        flat.update(idents := identifier_texts(ident_before))  # as given and with separators as spaces
        clean = self._sanitize(flat, what=where)
        for k in ident_before:
            if any(clean[n] != idents[n] for n in (f"@{k}", f"@{k}~spaced") if n in idents):
                raise ValidationError(f"{where}: {k} looks like personal data; use an opaque id")
        raw = rebuild(clean)
        for f in json_fields:
            raw[f] = as_text(raw[f])
        if kept_tags:
            raw["tags"] = [*(raw.get("tags") or ()), *kept_tags]
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
                f"{where}: kind {shown(kind)} is not configured; typed kinds are {', '.join(settings.typed_kinds)} "
                f"and built-in kinds {', '.join(BUILTIN_KINDS)} (configure typed_kinds to add one: at most {MAX_TYPED_KINDS})"
            )
        if kind == FACT_KIND and item.key is None:
            raise ValidationError(f"{where}: kind {FACT_KIND!r} needs a key naming what it is about, e.g. key='ana/ui.theme'")
        if item.key is not None and kind != FACT_KIND:
            raise ValidationError(f"{where}: key {item.key!r}: only facts (kind {FACT_KIND!r}) have a key")
        for cited in item.cites:
            check_id(cited)
        # the validated values as they are: model_dump copied every list and mapping again (~5 us),
        # of values rebuild made for this record alone (test_models.py: test_a_recorded_episode_owns_its_nested_values)
        record = dict(item.__dict__)
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

    def _write_new(
        self, prepared: list[dict[str, Any]], accessed_at: dt.datetime | None = None
    ) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """Write prepared records with all their index entries in one transaction; returns each
        one's (id, record, state), from which ``_episode`` makes the Episode a caller gets back
        (an import returns ids only, and skips building them). ``accessed_at`` starts the idle
        clock of the archiving rule there (imports and summaries: DESIGN 5) instead of at ``ts``.

        Every check comes before the first write, so the block joins a caller's transaction
        without a savepoint of its own (a nested LMDB transaction per record cost about 20 µs).
        Index keys are an encoded parent (cached by the store) plus the episode's encoded
        (ts, id) tail, and their values (its document number and outcome) are packed once per
        episode, not once per key.
        """
        out: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        st, lay = self._layer, self._layout
        mem, entry_keys, owner = lay.mem, lay.entry_keys, self.name
        with self._space.transaction(savepoint=False):
            now = st.now()
            sets: list[tuple[Global, Any, Any]] = []
            packed: list[tuple[bytes, bytes]] = []
            docs = terms = 0
            text: list[Doc] = []
            keyed: list[list[bytes]] = []  # each one's index entry keys
            counted: list[str] = []  # each document's terms, for their frequencies
            fresh: list[tuple[dict[str, Any], dict[str, Any]]] = []
            for rec in prepared:
                record = dict(zip(RECORD_FIELDS, map(rec.get, RECORD_FIELDS), strict=True))
                record.update({k: rec[k] for k in VERSION_FIELDS if rec.get(k) is not None})
                record["ts"] = rec["ts"] or now
                record["recorded"] = now
                state: dict[str, Any] = {
                    "access_count": rec.get("_access_count", 0), "last_access": accessed_at, "feedback": rec.get("_feedback"),
                    "status": "active", **header_of(record),
                }  # fmt: skip
                fresh.append((record, state))
            settings = st.settings
            week_start, zone = settings.week_starts_on, settings.timezone
            for (record, state), score in zip(fresh, st.scorer.score_many(fresh, now), strict=True):
                state["relevance"] = score
                ts: dt.datetime = record["ts"]
                tf, dl = terms_of(record)
                told = told_of(record, tf, week_start, zone)
                if told:  # only where the text tells of an earlier time: most headers stay as they were
                    state["told"] = told
                eid = new_id(ts, owner)
                subs = (owner, episode_day(eid), eid)
                while mem.holds(subs):  # another process took it
                    eid = new_id(ts, owner)
                    subs = (owner, episode_day(eid), eid)
                sets.append((mem, subs, record))
                sets.append((lay.states, (owner, eid), state))
                keyed.append(entry_keys(owner, record, state, tail_of(ts, eid)))
                text.append(Doc(eid, ts_micros(ts), index_code(score, record.get("outcome")), tf, dl, tuple(record.get("tags") or ())))
                if dl:
                    docs += 1
                    terms += dl
                    counted.extend(tf)
                out.append((eid, record, state))
            # the entries hold each one's document number (``entry_value``), handed out below,
            # after every key was checked: a refused key leaves nothing written
            numbers = lay.text.next_numbers(owner, len(text))
            for keys, doc, (record, _) in zip(keyed, numbers, fresh, strict=True):
                value = entry_value(doc, record.get("outcome"))
                packed.extend((key, value) for key in keys)
            lay.text.add(owner, text, sets, packed, numbers)
            # staged only once the write succeeded: a refused write inside a caller's transaction leaves no trace;
            # as tuples of numbers and strings, which the cyclic GC stops tracking at its next pass: a list
            # of dict_keys stayed tracked until the commit, 3 objects a record, and survivors of that
            # kind make the GC's passes over the whole heap more frequent (test_capture_gc.py). Flat (the
            # terms after the counts): a tuple of the terms' tuples in it took two passes to stop being
            # tracked, and the staged tuple a third, by which time it was in the oldest generation
            self._space.stage(("counts", owner), self._count_captured, [(len(prepared), docs, terms, *counted)])
        return out

    def _text_index_changes(self, eid: str, old: Mapping[str, Any], new: Mapping[str, Any], state: Mapping[str, Any]) -> None:
        """Re-index a hot episode whose text changed: it leaves the blocks under its old
        document number and joins them under a new one (postings only ever append), which its
        index entries then hold."""
        old_tf, old_dl = terms_of(old)
        new_tf, new_dl = terms_of(new)
        text = self._layout.text
        text.remove(self.name, [(eid, old_tf, old.get("tags") or ())])
        code = index_code(state["relevance"], new.get("outcome"))
        (doc,) = text.add(self.name, [Doc(eid, ts_micros(new["ts"]), code, new_tf, new_dl, tuple(new.get("tags") or ()))])
        value = entry_value(doc, new.get("outcome"))  # the entries follow it to its new number
        entries = index_entries(self.name, eid, new, state)
        self._space.apply((), packed=[(self._space[g].key(e), value) for g, es in entries.items() for e in es])
        self._bump(docs=(1 if new_dl else 0) - (1 if old_dl else 0), terms=new_dl - old_dl)
        df: Counter[str] = Counter({t: 1 for t in new_tf if t not in old_tf})
        df.subtract({t: 1 for t in old_tf if t not in new_tf})
        self._bump_df(df)

    def _count_captured(self, writes: list[tuple[Any, ...]]) -> None:
        """Defer what ``_write_new`` calls staged add to the owner's statistics: (episodes,
        documents, their length, *each document's terms) each. Summed first, so a transaction of
        1,000 captures defers each statistic, and each distinct term's document frequency (about
        40 terms a capture), once: deferred capture by capture, they were about 6% of a batched
        capture's time (py-spy, 20,000 episodes)."""
        self._bump(
            episodes=sum(w[0] for w in writes),
            docs=sum(w[1] for w in writes),
            terms=sum(w[2] for w in writes),
        )
        df = Counter(itertools.chain.from_iterable(itertools.islice(w, 3, None) for w in writes))
        self._bump_df(df)

    def _bump_df(self, deltas: Mapping[str, int]) -> None:
        self._space.defer_increments(self._layout.doc_freq, (self.name,), deltas, drop_zero=True)

    def _bump(self, **deltas: int) -> None:
        self._space.defer_increments(self._layout.stats, (self.name,), deltas)


_COUNTED = ("docs", "terms", "episodes", "archived")  # the statistics of ^EPN that count an owner's episodes
_KILLS_BATCH = 4096  # index entries an erasure kills at a time (``_remove_many``)
_HOT_STATUSES = ("active", "summarized")  # what ``set_status`` moves between
_DIGEST_FIELDS = ("what_we_tried", "what_happened", "why", "lesson", "result", "artifact")  # bounded to the digest cap
# what a new version starts from (a capture's input fields, which decide whether it differs); a
# fact recorded again is new input, so its time and cites (its predecessors) never make it differ
_INPUT_FIELDS = tuple(f for f in EpisodeInput.model_fields if f != "feedback")
_FACT_COMPARED = tuple(f for f in _INPUT_FIELDS if f not in ("ts", "cites"))
_FIXED_IN_VERSIONS = {
    "kind": "record a new episode of the other kind, and erase this one",
    "key": "record the fact under its new key, and erase this one",
    "feedback": "feedback() rates an episode",
}


_CUT = re.compile(r" …\[truncated [0-9]+ chars\]\Z")  # models.truncation_marker's shape


def _new_fact_value(old: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A fact's fields to correct when its text changes: the text and decisions are its value (as
    recording the key again writes them), so what the correction does not name of the old value
    is not carried into the new one. A summary alone drops the old content and decisions (a
    LangGraph item kept its old value whole in them, and a long one its old text, still found by
    its words); a content alone drops the decisions, and takes the summary with it where the
    summary was the content's head (test_a_corrected_fact_keeps_no_copy_of_its_old_text)."""
    text = [f for f in ("summary", "content") if f in changes and changes[f] != old.get(f)]
    if not text:
        return old
    kept = {k: v for k, v in old.items() if k != "decisions" and (k != "content" or "content" in changes)}
    summary, content = str(old.get("summary") or ""), str(old.get("content") or "")
    head = _CUT.sub("", summary)
    derived = bool(content) and (summary == content or (head != summary and content.startswith(head)))
    if "summary" not in changes and changes.get("content") and derived:
        kept["summary"] = changes["content"]
    return kept


def _changed_fields(old: Mapping[str, Any], new: Mapping[str, Any], fields: Iterable[str]) -> list[str]:
    """The fields whose values differ between a stored record and a prepared one (an empty
    string, list or mapping is the same as none). Tags are a set, as every filter reads them: the
    same tags in another order are no new value of a fact (test_a_fact_with_its_tags_reordered_writes_nothing)."""
    return [
        f for f in fields
        if not (set(old.get(f) or ()) == set(new.get(f) or ()) if f == "tags" else _same_value(old.get(f) or None, new.get(f) or None))
    ]  # fmt: skip


def _same_value(a: Any, b: Any) -> bool:
    """``a == b`` that also tells types apart, at any depth: ``False`` is not ``0``, nor ``1``
    ``1.0``, so a fact whose decisions hold one of them and are recorded with the other is a
    new value, not the same one again (test_a_value_of_another_type_is_a_new_value). A list
    and a tuple are one sequence (stored records come back with lists)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _span(delta: dt.timedelta) -> str:
    """A duration for people: ``3 days``, ``2 h``, ``7 min``."""
    seconds = delta.total_seconds()
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{max(seconds / 60, 1):.0f} min"


def to_episode(owner: str, eid: str, record: Mapping[str, Any], state: Mapping[str, Any]) -> Episode:
    """The Episode an owner gets back of a stored record and its header (trusted: not validated again)."""
    return _constructed({
        "id": eid,
        "owner": owner,
        "ts": record["ts"],
        "kind": record["kind"],
        "summary": record["summary"],
        "content": record.get("content") or "",
        "decisions": record.get("decisions") or {},
        "tags": tuple(record.get("tags") or ()),
        "outcome": record.get("outcome"),
        "what_we_tried": record.get("what_we_tried"),
        "what_happened": record.get("what_happened"),
        "why": record.get("why"),
        "lesson": record.get("lesson"),
        "participants": tuple(record.get("participants") or ()),
        "artifact": record.get("artifact"),
        "session": record.get("session"),
        "tool": record.get("tool"),
        "result": record.get("result"),
        "relevance": float(state["relevance"]),
        "access_count": int(state.get("access_count", 0)),
        "last_access": state.get("last_access"),
        "feedback": state.get("feedback"),
        "status": state.get("status", "active"),
        "cites": tuple(record.get("cites") or ()),
        "recorded": record.get("recorded"),
        "key": record.get("key"),
        "supersedes": record.get("supersedes") or state.get("supersedes"),
        "supersede_reason": record.get("supersede_reason"),
        "superseded_by": state.get("superseded_by"),
    })  # fmt: skip


_EPISODE_FIELDS: Final = tuple(Episode.model_fields)
_set_attribute = object.__setattr__
# What ``_constructed`` leaves out of ``model_construct`` must not be needed: no field has an
# alias, the model has no post-init, no extra fields and no private attributes (test_to_episode_is_model_construct).
assert not any(f.alias or f.validation_alias for f in Episode.model_fields.values())
assert not Episode.__pydantic_post_init__ and not Episode.__private_attributes__ and Episode.model_config.get("extra") != "allow"


def _constructed(values: dict[str, Any]) -> Episode:
    """``Episode.model_construct(**values)`` for a value of every field in the model's order, as
    that sets them, without its pass over the fields for aliases and defaults, which none needs:
    a third of the Episode each capture returns cost (and of each a query returns)."""
    episode = Episode.__new__(Episode)
    _set_attribute(episode, "__dict__", values)
    _set_attribute(episode, "__pydantic_fields_set__", set(_EPISODE_FIELDS))
    _set_attribute(episode, "__pydantic_extra__", None)
    _set_attribute(episode, "__pydantic_private__", None)
    return episode
