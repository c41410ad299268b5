"""The database facade: ``memdb.open(path)`` gives globals, owners, and the lifecycle.

This is the top of the layer stack; it wires the layers together (the store, the globals, the
episode layer, the lifecycle, knowledge, patterns and reflection) and adds nothing of its own
but the administrative ``Database`` methods: review, reflection, ceremonies, decay, checks.
Owners' data is reached only through ``db.owner(name)``, a ``memdb.Memory``.
"""

from __future__ import annotations

import datetime as dt
import inspect
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

from memdb.engine.globals import Globals
from memdb.engine.postgres import PostgresStore, is_postgres_url, looks_like_url, shown_url
from memdb.engine.store import LMDBStore, Store
from memdb.errors import ConfigError, ValidationError
from memdb.governance.distill import Distiller, IdleReport, Sessions
from memdb.governance.knowledge import Agenda, DecayReport, Entry, Knowledge
from memdb.governance.patterns import PATTERN_TRIES, PatternExtractor, Patterns
from memdb.governance.reflection import Reflection, ReflectionReport, Reflector
from memdb.lifecycle.maintain import ErasureReport, Lifecycle, MaintenanceReport
from memdb.lifecycle.summarize import Summarizer
from memdb.llm.client import model_run
from memdb.memory.check import CheckReport
from memdb.memory.episodes import Episodes, RescoreReport
from memdb.memory.ids import Clock
from memdb.memory.models import FIRST_YEAR, utc
from memdb.memory.sanitize import Sanitizer
from memdb.memory.settings import Settings
from memdb.surfaces.handle import Memory
from memdb.surfaces.tracing import span

__all__ = ["Database", "open"]


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
        distiller: Distiller | None = None,
    ) -> None:
        self.store = store
        self.globals = Globals(store)
        self.episodes = Episodes(self.globals, sanitizer=sanitizer, clock=clock)
        self.episodes.upgrade_layout()
        self.lifecycle = Lifecycle(self.episodes, summarizer)
        self.lifecycle.keep_archived_fields()  # once: archives made before headers kept the lesson, or who took part
        self.knowledge = Knowledge(self.episodes)
        self.patterns = Patterns(self.episodes, self.knowledge, pattern_extractor)
        self.patterns.forget_index_time()  # once: an older memdb kept a record's capture time there
        self.knowledge.tidy_agendas()  # once: an older memdb's erasures left erased lessons' ids on agendas
        # every erasure (erase, delete, retention) takes the entries and patterns citing what it erased
        self.lifecycle.erasure.hooks += [self.knowledge.erase_citing, self._erase_patterns]
        self.lifecycle.erasure.repoint.append(self.patterns.repoint)  # a cut version is counted as the one kept
        # a request for everything, or for tags, takes the owner's entries that cite nothing too
        self.lifecycle.erasure.requests.append(self.knowledge.erase_requested)
        # an erased owner's name leaves the entries it decided about as a reviewer, and their audit records
        self.lifecycle.erasure.persons.append(self.knowledge.forget_person)
        # a corrected episode is cited as its new version, and an approved entry resting on it is flagged for review
        self.episodes.supersede_hooks.append(self.knowledge.source_corrected)
        # every typed record is counted for pattern extraction in its own transaction
        self.episodes.record_hooks.append(self.patterns.on_record)
        self.episodes.supersede_hooks.append(self.patterns.source_corrected)  # and a correction of one restates its patterns
        self.reflection = Reflection(self.episodes, self.knowledge, reflector)
        # called first thing in close(): an integration's thread (the LangGraph store's ttl
        # sweeper) stops at the close instead of at its next wake-up; a hook must not block
        self.close_hooks: list[Callable[[], None]] = []
        # run by maintain before the lifecycle rules, with the database and the rules' time: an
        # integration's own expiry (the LangGraph store's TTL items), which this layer cannot
        # import; each returns how many it erased (report.expired)
        self.maintain_hooks: list[Callable[[Database, dt.datetime], int]] = []
        # sessions closed into typed episodes; erasing a session's events takes what was distilled from them
        self.sessions = Sessions(self.episodes, self.patterns, distiller, read_archived=self.lifecycle.read_archived)
        self.lifecycle.erasure.derived.append(self.sessions.derived_from)
        self.lifecycle.erasure.forget.append(self.sessions.forget)  # and a session's marks go with its last episode
        self.lifecycle.erasure.repoint.append(self.sessions.repoint)  # and follow the version kept when earlier ones are cut
        self.lifecycle.erasure.touched.append(self.sessions.erase_news)  # an erased capture is no news of its session
        # a capture for a session closed already (an event, a late tool result) makes it go on, in its transaction
        self.episodes.capture_hooks.append(self.sessions.on_capture)
        self.episodes.supersede_hooks.append(self.sessions.on_corrected)  # a corrected capture goes on too
        # (saved value, Settings parsed from it) refresh_settings last read; (None, None) reloads at first
        self._settings_seen: tuple[Any, Settings | None] = (None, None)

    def _erase_patterns(self, owner: str, ids: set[str], _at: dt.datetime, action: str) -> None:
        """Patterns derived from erased episodes go with them, and their ids leave the counting;
        retention's routine pruning keeps them, and an owner's erasure kills them whole (``^PAT*``
        are ``OWNER_KEYED``): reading the counting of every episode was discarded work."""
        if action not in ("retention", "erase_owner"):
            self.patterns.erase_citing(owner, ids)

    def owner(self, name: str) -> Memory:
        """The handle for one owner's memory; every episode operation and query goes through it."""
        return Memory(self.episodes, self.episodes.owner_name(name), self.lifecycle, self.knowledge, self.patterns, self.sessions)

    def owners(self) -> list[str]:
        """Owners with recorded episodes (administrative)."""
        return self.episodes.owners()

    def erase_owner(self, name: str, *, reason: str) -> ErasureReport:
        """Erase an owner itself (a data subject whose name or user id is the owner): everything
        ``erase(everything=True)`` takes, then every counter, mark, audit record and team
        membership under its name, and its name where it reviewed others' lessons, in one
        transaction; one database-wide audit record keeps a keyed hash of the name, never the
        name (``owner_erasures``). Freed pages may still hold old bytes until ``compact()``."""
        return self.lifecycle.erasure.erase_owner(self.episodes.owner_name(name), reason)

    def owner_erasures(self, name: str) -> list[dict[str, Any]]:
        """The audit records of ``erase_owner`` for this name (found by its keyed hash), oldest first."""
        return self.lifecycle.erasure.owner_erasures(name)

    @property
    def settings(self) -> Settings:
        """The rules saved in this database."""
        return self.episodes.settings

    def refresh_settings(self) -> Settings:
        """The settings as saved now. Another process (``memdb config``, an admin script, another
        server) may have changed them since these were loaded, and a long-running server that
        never reloaded kept serving a team's shared lessons to an owner moved out of it until
        restarted; ``memdb mcp`` and ``memdb serve`` call this per request
        (tests/surfaces/test_mcp_settings.py). One read of one key, on either backend; the
        settings are parsed again only when what is saved, or the settings in memory, differ from
        the pair last seen: a configure() whose outer transaction rolled back left its unsaved
        settings in memory, which a check of the saved value alone kept serving for good
        (test_refresh_settings_drops_a_configure_rolled_back)."""
        saved = self.episodes.layout.meta.get(("settings",))
        seen = self._settings_seen
        if saved != seen[0] or self.episodes.settings is not seen[1]:
            self._settings_seen = (saved, self.episodes.reload_settings())  # a configure() here reloads once, as the same
        return self.episodes.settings

    def configure(self, **changes: Any) -> Settings:
        """Change and persist settings (validated as a whole; ConfigError names a bad value); audited."""
        return self.episodes.configure(**changes)

    def check(self) -> CheckReport:
        """Verify that every index agrees with the records, and every cold record with its dictionary and its archived header."""
        report = self.episodes.check()
        report.problems += self.lifecycle.cold.check()
        return report

    def rescore(self, now: dt.datetime | None = None) -> RescoreReport:
        """Recompute every episode's relevance at ``now`` in native batches."""
        return self.episodes.rescore(now)

    def maintain(self, now: dt.datetime | None = None, *, on_rule: Callable[[str], None] | None = None) -> MaintenanceReport:
        """Run the lifecycle: pattern batches waiting (a model extractor's, which capture never
        runs, and failed ones), integrations' expiry (``maintain_hooks``), then burst summaries,
        rescoring, archiving, retention (idempotent);
        ``on_rule`` is told each rule's name as it starts, then "done". A model's calls are one
        run: a deadline, and no more calls after failures in a row (``memdb.llm.client``).

        ValidationError for a ``now`` before year 1000, when no episode can be: its burst
        mark then broke every later run (tests/surfaces/test_cli_scripting.py)."""
        if now is not None:
            now = utc(now, "maintain: now")
            if now.year < FIRST_YEAR:
                raise ValidationError(
                    f"maintain: now {now.isoformat()}: before year {FIRST_YEAR}, when no episode can be (give the time the rules run at)"
                )
        with span("memdb.maintain", {}) as s, model_run(self.lifecycle.summarizer, self.patterns.extractor):
            # never inside a caller's transaction: a model's calls would hold the write lock
            patterns = (
                0 if self.episodes.space.in_transaction else self.patterns.run_pending(retry_failed=True, max_tries=PATTERN_TRIES, now=now)
            )
            expired = 0
            if self.maintain_hooks:
                if on_rule is not None:
                    on_rule("expiry")
                at = now if now is not None else self.episodes.now()
                expired = sum(hook(self, at) for hook in list(self.maintain_hooks))
            report = self.lifecycle.maintain(now, on_rule)
            report.expired = expired
            report.patterns = patterns
            report.pattern_batches_failed, report.pattern_batches_given_up = self.patterns.failed()
            for name in ("summaries", "rescored", "archived", "purged"):
                s.set(f"memdb.maintain.{name}", getattr(report, name))
        return report

    def audit(self, owner: str | None = None, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """The append-only audit log, oldest first: one owner's, or everyone's with database-wide records."""
        return self.episodes.audit.entries(self.episodes.owner_name(owner) if owner is not None else None, since, until)

    # --- governance: reflection, review, ceremony, decay -------------------------------------------

    def reflect(
        self, now: dt.datetime | None = None, *, owners: Iterable[str] | None = None, reflector: Reflector | None = None
    ) -> ReflectionReport:
        """The daily reflection: each owner's recent episodes in, at most ``lessons_per_day`` cited
        lessons a day out, all pending review. Ungrounded proposals are discarded, near duplicates
        skipped, both counted; running it again the same day adds nothing."""
        if isinstance(owners, str):  # one owner's name, not its letters
            owners = [owners]
        names = [self.episodes.owner_name(o) for o in owners] if owners is not None else None
        with span("memdb.reflect", {}) as s, model_run(reflector or self.reflection.reflector):
            report = self.reflection.run(now, owners=names, reflector=reflector)
            s.set("memdb.reflect.owners", len(report.owners))
            s.set("memdb.reflect.stored", report.stored)
            s.set("memdb.reflect.discarded", report.discarded)
        return report

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

    def latest_agenda(self, team: str | None = None) -> Agenda | None:
        """The last ceremony agenda kept for ``team`` as it stands now (None before the first); reads only."""
        return self.knowledge.latest_agenda(team)

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

    def close_idle_sessions(self, now: dt.datetime | None = None, idle: dt.timedelta | None = None, *, limit: int = 100) -> IdleReport:
        """Close every owner's gateway sessions whose last capture is older than ``idle`` (default
        the ``session_idle_minutes`` setting, 60) into typed episodes, each of the kind the
        ``session_kinds`` rules give it (else ``session_default_kind``), at most ``limit`` per call.

        The ``memdb serve`` scheduler calls this every ``idle_sessions`` minutes. Only a distiller
        that judges outcomes (``memdb.open(path, distiller=AnthropicDistiller())``) closes anything
        here: the offline default never invents an outcome, so its idle sessions are reported as
        waiting, nothing is written, and ``close_session(..., outcome=...)`` closes them.
        """
        with model_run(self.sessions.distiller):
            return self.sessions.close_idle(now, idle, limit=limit)

    def extract_patterns(self, now: dt.datetime | None = None, *, retry_failed: bool = True) -> int:
        """Run pattern extraction for batches left waiting (a model extractor's, completed inside a
        transaction, or failed, those ``maintain`` gave up on too); returns patterns written."""
        with model_run(self.patterns.extractor):
            return self.patterns.run_pending(retry_failed=retry_failed, now=now)

    def backup(self, dest: str | os.PathLike[str]) -> None:
        """Write a consistent copy of the whole database (every owner, the settings, knowledge,
        patterns and audit log) to ``dest``, a new or empty directory, while it stays in use;
        ``memdb.open(dest)`` opens the copy. LMDB only: on PostgreSQL StoreError says to use pg_dump."""
        self.flush()
        self.store.backup(os.fspath(dest))

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
            for hook in list(self.close_hooks):
                hook()
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
    distiller: Distiller | None = None,
    **options: Any,
) -> Database:
    """Open (creating if missing) the memdb database in directory ``path`` on LMDB, or on a
    PostgreSQL-wire server when ``path`` is a ``postgresql://`` (or ``postgres://``) URL (a path
    shaped like any other URL or a ``user:pw@host`` string: ConfigError; ``./`` before it opens
    a directory of that name, see ``looks_like_url``);
    ``create=False`` opens an existing one only (NotFoundError where there is none, and nothing
    is made: a reader with a mistyped path must not find "nothing" in a database it just made).

    ``sanitizer`` replaces the default PII sanitizer; ``clock`` (returning aware UTC
    datetimes) makes every time rule testable; ``summarizer`` replaces the extractive one
    (e.g. ``AnthropicSummarizer()``); ``reflector`` and ``pattern_extractor`` replace the
    offline ones (e.g. ``AnthropicReflector()``, ``AnthropicExtractor()``), and ``distiller`` the
    one that closes sessions (e.g. ``AnthropicDistiller()``, which judges outcomes). Other options go to
    the store: for LMDBStore ``map_size`` (initial bytes; grows by itself) and ``sync``; for
    PostgresStore ``name`` (several memdb databases per server), ``isolation``, ``retries``
    (see ``docs/backends.md``).
    """
    kind: type[LMDBStore] | type[PostgresStore] = PostgresStore if is_postgres_url(path) else LMDBStore
    if kind is LMDBStore and isinstance(path, (str, os.PathLike)) and looks_like_url(where := os.fspath(path)):
        # a mistyped URL made a local directory named after it, password and all, and the
        # agent's memories went there instead of the server (test_a_mistyped_url_is_refused_not_made_a_directory)
        raise ConfigError(
            f"open {shown_url(where)!r}: shaped like a URL, but not a postgresql:// or postgres:// one "
            "(check the scheme and its //; a key=value connection string is written postgresql://user@host/db; "
            "to open a directory named so, put ./ before it and write each // as /)"
        )
    allowed = [p.name for p in inspect.signature(kind.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigError(f"open: unknown option(s) {', '.join(map(repr, unknown))} for {kind.__name__}; it takes {', '.join(allowed)}")
    if clock is not None and not callable(clock):
        raise ConfigError(f"clock {clock!r}: a callable returning an aware UTC datetime")
    if sanitizer is not None and not isinstance(sanitizer, Sanitizer):
        raise ConfigError(f"sanitizer {sanitizer!r}: needs a sanitize(texts) method (see memdb.memory.sanitize.Sanitizer)")
    if distiller is not None and not isinstance(distiller, Distiller):
        raise ConfigError(
            f"distiller {distiller!r}: needs judges_outcome and a distill(capture, rejected) method (see memdb.governance.distill)"
        )
    store: Store = PostgresStore(str(path), **options) if kind is PostgresStore else LMDBStore(path, **options)
    try:
        return Database(
            store,
            sanitizer=sanitizer,
            clock=clock,
            summarizer=summarizer,
            reflector=reflector,
            pattern_extractor=pattern_extractor,
            distiller=distiller,
        )
    except BaseException:  # a refused or failed upgrade: the store is closed, so the path can be opened again
        store.close()
        raise
