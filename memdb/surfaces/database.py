"""The database facade: ``memdb.open(path)`` gives globals, owners, and the lifecycle.

This is the top of the layer stack; it wires the layers together and adds nothing of its own
but the ``Memory`` handle, which joins an owner's capture, queries, lifecycle operations and
governance (knowledge, patterns, timelines), and the ``Database`` methods for review,
reflection, ceremonies and decay.
"""

from __future__ import annotations

import datetime as dt
import heapq
import inspect
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any, Literal

from memdb.engine.globals import Globals
from memdb.engine.postgres import PostgresStore, is_postgres_url
from memdb.engine.store import LMDBStore, Store
from memdb.errors import ConfigError, ValidationError
from memdb.governance.knowledge import Agenda, DecayReport, Entry, KnowledgeStore
from memdb.governance.patterns import Pattern, PatternExtractor, PatternStore, Preparation, prepare
from memdb.governance.reflection import Reflection, ReflectionReport, Reflector
from memdb.governance.timeline import Timeline
from memdb.governance.timeline import build as build_timeline
from memdb.governance.timeline import export as export_timeline
from memdb.lifecycle.maintain import ErasureReport, Lifecycle, MaintenanceReport
from memdb.lifecycle.summarize import Summarizer
from memdb.memory.episodes import CheckReport, Clock, EpisodeStore, RescoreReport, check_id, ts_micros
from memdb.memory.models import Episode, check_owner
from memdb.memory.sanitize import Sanitizer
from memdb.memory.settings import Settings
from memdb.query.engine import Owner

__all__ = ["Database", "Memory", "open"]


class Memory(Owner):
    """One owner's memory: capture, queries, and the lifecycle operations on its episodes."""

    def __init__(
        self,
        store: EpisodeStore,
        owner: str,
        lifecycle: Lifecycle,
        *,
        knowledge: KnowledgeStore | None = None,
        patterns: PatternStore | None = None,
    ) -> None:
        super().__init__(store, owner)
        self._lifecycle = lifecycle
        self._knowledge = knowledge or KnowledgeStore(store)
        self._patterns = patterns or PatternStore(store)

    # --- capture, counted for pattern extraction ---------------------------------------------

    def record(self, kind: str, summary: str, *, ts: dt.datetime | None = None, **fields: Any) -> Episode:
        """Record one episode. Typed kinds need an honest ``outcome``; every ``pattern_every``-th
        record of a typed kind triggers pattern extraction over that batch (imports do not:
        they are history, not events as they complete)."""
        if kind not in self.store.settings.typed_kinds:
            return super().record(kind, summary, ts=ts, **fields)
        # validated and sanitized first, outside the transaction, so that a dropped capture's
        # counters are not rolled back with it (test_sanitizer_failure_drops_capture_fail_closed)
        prepared = self._prepare({"kind": kind, "summary": summary, "ts": ts, **fields})
        outer = self._space.in_transaction
        # the count moves with the record, or neither does (a caller's transaction already ensures it)
        with nullcontext() if outer else self._space.transaction():
            episode = self._episode(self._write_new([prepared])[0])
            made = self._patterns.count(self.name, [(episode.kind, episode.id)])
        if made and not outer:  # never an extractor call while holding the write lock
            self._patterns.run_pending(self.name)
        return episode

    # --- knowledge: the semantic store, through the review queue -----------------------------

    def save_lesson(self, text: str, *, cites: Iterable[str] = (), tags: Iterable[str] = (), now: dt.datetime | None = None) -> Entry:
        """Save a lesson deliberately. Like every write to knowledge it lands pending and private
        in the review queue; DuplicateError if it repeats approved, pending or rejected content."""
        return self._knowledge.submit(self.name, text, source="save", cites=cites, tags=tags, now=now)

    def knowledge(
        self, text: str | None = None, *, tags: Iterable[str] = (), limit: int = 20, now: dt.datetime | None = None
    ) -> list[Entry]:
        """Approved entries in active use this owner may read: their own and those shared with
        their teams (with the owner's attribution). Best match first when ``text``/``tags`` are given."""
        return self._knowledge.search(self.name, text, tags, limit, now)

    def entries(self, state: str | None = None) -> list[Entry]:
        """This owner's own entries in any state (pending, approved, rejected), oldest first."""
        return self._knowledge.own(self.name, state)

    # --- patterns and the retrieval rule for new tasks -----------------------------------------

    def patterns(self, kind: str | None = None) -> list[Pattern]:
        """Patterns extracted from this owner's records, newest first."""
        return self._patterns.of(self.name, kind)

    def prepare(
        self,
        task: str,
        *,
        kind: str | None = None,
        tags: Iterable[str] = (),
        max_chars: int = 2000,
        limit: int = 5,
        now: dt.datetime | None = None,
    ) -> Preparation:
        """Context for a new task: relevant patterns first, then readable knowledge, then the most
        similar past records with their outcomes, within ``max_chars``."""
        return prepare(self, self._knowledge, self._patterns, task, kind=kind, tags=tags, max_chars=max_chars, limit=limit, now=now)

    # --- execution timelines ------------------------------------------------------------------

    def timeline(self, session: str) -> Timeline:
        """A session's tool calls step by step (order, tool, input, result, times); reads only."""
        return build_timeline(self, session)

    def export_timeline(
        self, session: str, path: str | os.PathLike[str] | None = None, *, now: dt.datetime | None = None, overwrite: bool = False
    ) -> dict[str, Any]:
        """The timeline as a versioned, explicitly non-executable JSON record for audit (written to
        ``path`` when given). Nothing re-runs a tool or replays a request."""
        return export_timeline(self, session, path, now=now, overwrite=overwrite)

    def episodes(
        self, since: dt.datetime | None = None, until: dt.datetime | None = None, reverse: bool = False, *, include_archived: bool = False
    ) -> Iterator[Episode]:
        """This owner's episodes in time order (``since`` inclusive, ``until`` exclusive); with
        ``include_archived`` the archived ones too, their full record read from cold storage
        (status "archived"), so an export holds every episode. Not an access."""
        hot = super().episodes(since, until, reverse)
        if not include_archived:
            yield from hot
            return
        cold = self._lifecycle.archived_episodes(self, since, until, reverse)
        keyed = (((ts_micros(e.ts), e.id), e) for e in hot), (((ts_micros(e.ts), e.id), e) for e in cold)
        for _, episode in heapq.merge(*keyed, key=lambda pair: pair[0], reverse=reverse):
            yield episode

    # --- lifecycle ------------------------------------------------------------------------------

    def restore(self, episode_id: str) -> Episode:
        """Bring an archived episode's full record back from cold storage, with its indexes."""
        return self._lifecycle.restore(self, episode_id)

    def archive(self, episode_id: str) -> None:
        """Archive one episode now (the lifecycle does this by rule in ``maintain``)."""
        self._lifecycle.archive(self, episode_id, self.store.now())

    def erase(
        self,
        ids: Iterable[str] | None = None,
        *,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        everything: bool = False,
        reason: str,
    ) -> ErasureReport:
        """Delete episodes (by id, time range, or all) from hot and cold storage and every index,
        with the summaries derived from them. The audit record keeps ids and hashes, no content.
        Knowledge entries and patterns citing an erased episode go too (the entry keeps only its
        hash). Freed pages may still hold old bytes until ``db.compact()``."""
        return self._erase(ids, since, until, everything, reason, "erase")

    def delete(self, episode_id: str, *, reason: str) -> str:
        """Erase one episode as ``erase([episode_id])`` does, derived summaries, knowledge entries
        and patterns included; the audit record says "delete". Returns that record's id."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"delete reason {reason!r}: say why (it is kept in the audit trail)")
        report = self._erase([check_id(episode_id)], None, None, False, reason, "delete")
        assert report.audit_id is not None  # one episode was erased, so one record was written
        return report.audit_id

    def _erase(
        self, ids: Iterable[str] | None, since: dt.datetime | None, until: dt.datetime | None, everything: bool, reason: str, action: str
    ) -> ErasureReport:
        # knowledge entries and patterns citing the erased episodes go through the lifecycle's erase_hooks
        return self._lifecycle.erase(self, ids, since, until, everything, reason, action)

    def audit(self, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """This owner's audit records, oldest first."""
        return self._lifecycle.audit(self.name, since, until)


class Database:
    """One memdb database: a store, its global key space, and the layers built on it."""

    def __init__(
        self,
        store: Store,
        *,
        sanitizer: Sanitizer | None = None,
        clock: Clock | None = None,
        summarizer: Summarizer | None = None,
        reflector: Reflector | None = None,
        pattern_extractor: PatternExtractor | None = None,
    ) -> None:
        self.store = store
        self.globals = Globals(store)
        self.episodes = EpisodeStore(self.globals, sanitizer=sanitizer, clock=clock)
        self.episodes.upgrade_layout()
        self.lifecycle = Lifecycle(self.episodes, summarizer)
        self.knowledge = KnowledgeStore(self.episodes)
        self.patterns = PatternStore(self.episodes, pattern_extractor)
        # every erasure (erase, delete, retention) takes the entries and patterns citing what it erased
        self.lifecycle.erase_hooks += [self.knowledge.erase_citing, lambda owner, ids, _: self.patterns.erase_citing(owner, ids)]
        self.reflection = Reflection(self.episodes, self.knowledge, reflector)

    def owner(self, name: str) -> Memory:
        """The handle for one owner's memory; every episode operation and query goes through it."""
        return Memory(self.episodes, check_owner(name), self.lifecycle, knowledge=self.knowledge, patterns=self.patterns)

    def owners(self) -> list[str]:
        """Owners with recorded episodes (administrative)."""
        return self.episodes.owners()

    @property
    def settings(self) -> Settings:
        """The rules saved in this database."""
        return self.episodes.settings

    def configure(self, **changes: Any) -> Settings:
        """Change and persist settings (validated as a whole; ConfigError names a bad value); audited."""
        return self.episodes.configure(**changes)

    def check(self) -> CheckReport:
        """Verify that every index agrees with the records."""
        return self.episodes.check()

    def rescore(self, now: dt.datetime | None = None) -> RescoreReport:
        """Recompute every episode's relevance at ``now`` in native batches."""
        return self.episodes.rescore(now)

    def maintain(self, now: dt.datetime | None = None) -> MaintenanceReport:
        """Run the lifecycle: burst summaries, rescoring, archiving, retention (idempotent)."""
        return self.lifecycle.maintain(now)

    def audit(self, owner: str | None = None, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """The append-only audit log, oldest first: one owner's, or everyone's with database-wide records."""
        return self.lifecycle.audit(check_owner(owner) if owner is not None else None, since, until)

    # --- governance: reflection, review, ceremony, decay -------------------------------------------

    def reflect(
        self, now: dt.datetime | None = None, *, owners: Iterable[str] | None = None, reflector: Reflector | None = None
    ) -> ReflectionReport:
        """The daily reflection: each owner's recent episodes in, at most ``lessons_per_day`` cited
        lessons a day out, all pending review. Ungrounded proposals are discarded, near duplicates
        skipped, both counted; running it again the same day adds nothing."""
        if isinstance(owners, str):  # one owner's name, not its letters
            owners = [owners]
        return self.reflection.run(now, owners=[check_owner(o) for o in owners] if owners is not None else None, reflector=reflector)

    def review_queue(self, owner: str | None = None, limit: int | None = None) -> list[Entry]:
        """Pending entries awaiting a person, oldest first (one owner's, or everyone's)."""
        return self.knowledge.pending(owner, limit)

    def approve(self, ids: str | Iterable[str], *, by: str, now: dt.datetime | None = None) -> list[Entry]:
        """Approve pending entries, one or a batch (all or none); audited with who and when.
        Approved entries stay private to their owner until shared at a ceremony."""
        return self.knowledge.approve(ids, by=by, now=now)

    def reject(self, ids: str | Iterable[str], *, by: str, reason: str = "", now: dt.datetime | None = None) -> list[Entry]:
        """Reject pending entries (all or none): the text is dropped and a tombstone of hashes keeps
        the same content from coming back through the queue, from any owner."""
        return self.knowledge.reject(ids, by=by, reason=reason, now=now)

    def entry(self, entry_id: str) -> Entry:
        """One knowledge entry by id (administrative: reviewers and ceremonies work across owners)."""
        return self.knowledge.get(entry_id)

    def ceremony(self, team: str | None = None, *, now: dt.datetime | None = None) -> Agenda:
        """The share ceremony's agenda: each member's approved private lessons not yet ruled on.
        Items nobody rules on carry over to the next ceremony; nothing expires."""
        return self.knowledge.ceremony(team, now=now)

    def decide(self, decisions: Mapping[str, str], *, by: str, team: str | None = None, now: dt.datetime | None = None) -> list[Entry]:
        """An owner's ceremony decisions, entry id -> ``share`` | ``private`` | ``archive`` (all or none).
        Only an entry's owner may decide (PermissionDeniedError); shared entries keep their attribution."""
        return self.knowledge.decide(decisions, by=by, team=team, now=now)

    def decay(self, now: dt.datetime | None = None) -> DecayReport:
        """The weekly decay pass: flag at most ``decay_flags_per_week`` idle approved entries for a
        person to confirm. Nothing is deleted or quarantined by the pass itself."""
        return self.knowledge.decay(now)

    def flagged(self) -> list[Entry]:
        """Entries flagged by decay that await a person's decision."""
        return self.knowledge.flagged()

    def confirm_decay(
        self, entry_id: str, action: Literal["keep", "quarantine"], *, by: str, reason: str = "", now: dt.datetime | None = None
    ) -> Entry:
        """A person's answer to a decay flag: ``keep`` clears it, ``quarantine`` takes the entry out of use (reversibly)."""
        return self.knowledge.confirm_decay(entry_id, action, by=by, reason=reason, now=now)

    def quarantine(self, entry_id: str, *, by: str, reason: str, now: dt.datetime | None = None) -> Entry:
        """Take an approved entry out of active use (no reads, no prompts) until restored."""
        return self.knowledge.quarantine(entry_id, by=by, reason=reason, now=now)

    def restore_entry(self, entry_id: str, *, by: str, now: dt.datetime | None = None) -> Entry:
        """Bring a quarantined entry back as it was, or an archived one back as private."""
        return self.knowledge.restore(entry_id, by=by, now=now)

    def extract_patterns(self, now: dt.datetime | None = None, *, retry_failed: bool = True) -> int:
        """Run pattern extraction for batches left waiting (completed inside a transaction, or
        failed); returns patterns written."""
        return self.patterns.run_pending(retry_failed=retry_failed, now=now)

    def compact(self) -> None:
        """Rewrite the store without free pages, so erased bytes are gone from disk too.

        Needs exclusive use: no other process may have the database open.
        """
        self.flush()
        self.store.compact()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing across globals; nests; rolls back on exception."""
        with self.globals.transaction():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A consistent read-only view for the block."""
        with self.globals.snapshot():
            yield

    def flush(self) -> int:
        """Write buffered access counts now."""
        return self.episodes.flush()

    def close(self) -> None:
        """Flush buffered accesses and close the store; the database cannot be used afterwards."""
        try:
            self.flush()
        finally:
            self.store.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(
    path: str | os.PathLike[str],
    *,
    sanitizer: Sanitizer | None = None,
    clock: Clock | None = None,
    summarizer: Summarizer | None = None,
    reflector: Reflector | None = None,
    pattern_extractor: PatternExtractor | None = None,
    **options: Any,
) -> Database:
    """Open (creating if missing) the memdb database in directory ``path`` on LMDB, or on a
    PostgreSQL-wire server when ``path`` is a ``postgresql://`` (or ``postgres://``) URL.

    ``sanitizer`` replaces the default PII sanitizer; ``clock`` (returning aware UTC
    datetimes) makes every time rule testable; ``summarizer`` replaces the extractive one
    (e.g. ``AnthropicSummarizer()``); ``reflector`` and ``pattern_extractor`` replace the
    offline ones (e.g. ``AnthropicReflector()``, ``AnthropicExtractor()``). Other options go to
    the store: for LMDBStore ``map_size`` (initial bytes; grows by itself) and ``sync``; for
    PostgresStore ``name`` (several memdb databases per server), ``isolation``, ``retries``
    (see ``docs/backends.md``).
    """
    kind: type[LMDBStore] | type[PostgresStore] = PostgresStore if is_postgres_url(path) else LMDBStore
    allowed = [p.name for p in inspect.signature(kind.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(f"open: unknown option(s) {', '.join(map(repr, unknown))} for {kind.__name__}; it takes {', '.join(allowed)}")
    if clock is not None and not callable(clock):
        raise ConfigError(f"clock {clock!r}: a callable returning an aware UTC datetime")
    if sanitizer is not None and not isinstance(sanitizer, Sanitizer):
        raise ConfigError(f"sanitizer {sanitizer!r}: needs a sanitize(texts) method (see memdb.memory.sanitize.Sanitizer)")
    store: Store = PostgresStore(str(path), **options) if kind is PostgresStore else LMDBStore(path, **options)
    return Database(
        store,
        sanitizer=sanitizer,
        clock=clock,
        summarizer=summarizer,
        reflector=reflector,
        pattern_extractor=pattern_extractor,
    )
