"""``Memory``: the one handle to an owner's memory (what ``db.owner(name)`` returns).

It holds its parts and delegates explicitly, as plyvel's ``PrefixedDB`` holds a ``DB`` and a
prefix: the owner's episodes (capture and reads), the query engine, the lifecycle, knowledge
and patterns. Each method exists once with one meaning, and nothing here reaches an internal
operation: taking an episode out of hot storage goes through the lifecycle, which writes the
audit record in the same transaction (test_every_way_out_of_hot_storage_is_audited).
"""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from memdb.errors import ValidationError
from memdb.governance.distill import Distillation, Sessions
from memdb.governance.knowledge import Entry, Knowledge
from memdb.governance.patterns import Pattern, Patterns
from memdb.governance.prepare import Preparation, prepare
from memdb.governance.timeline import SessionCalls, Timeline
from memdb.governance.timeline import build as build_timeline
from memdb.governance.timeline import export as export_timeline
from memdb.governance.timeline import sessions as list_sessions
from memdb.lifecycle.erase import ErasureReport
from memdb.lifecycle.maintain import Lifecycle
from memdb.memory.episodes import Episodes, ImportReport
from memdb.memory.ids import check_id, ts_micros
from memdb.memory.models import Episode, EpisodeInput
from memdb.memory.relevance import Explanation
from memdb.memory.sanitize import shown
from memdb.memory.settings import Settings
from memdb.query.engine import OwnerQueries
from memdb.query.results import History, RecallResult
from memdb.surfaces.export import EPISODE, IMPORT_ITEM, NOT_IMPORTED, audit_row, episode_row, import_row, is_export_row, typed
from memdb.surfaces.tracing import span

__all__ = ["Memory"]


class Memory:
    """One owner's memory: capture, queries, lifecycle operations and governance, all scoped
    to ``name``. No method can read, count or reveal another owner's episodes."""

    def __init__(
        self,
        episodes: Episodes,
        name: str,
        lifecycle: Lifecycle,
        knowledge: Knowledge,
        patterns: Patterns,
        sessions: Sessions | None = None,
    ) -> None:
        self.name = name
        self._layer = episodes
        self._episodes = episodes.owner(name)
        self._queries = OwnerQueries(episodes, name)
        self._lifecycle = lifecycle
        self._knowledge = knowledge
        self._patterns = patterns
        self._sessions = sessions or Sessions(episodes, patterns, read_archived=lifecycle.read_archived)

    def __repr__(self) -> str:
        return f"<memdb.Memory {self.name!r}>"

    @property
    def settings(self) -> Settings:
        """The database's rules in force (kinds, caps, timezone of days); read-only here."""
        return self._layer.settings

    def now(self) -> dt.datetime:
        """The database clock's now (aware UTC): the default ``now`` of every method here."""
        return self._layer.now()

    # --- capture ---------------------------------------------------------------------------------

    def record(self, kind: str, summary: str, *, ts: dt.datetime | None = None, **fields: Any) -> Episode:
        """Record one episode. Typed kinds need an honest ``outcome`` (success | partial | failure);
        a ``fact`` needs a ``key``, and recording its key again supersedes the value (``fact``);
        every ``pattern_every``-th record of a typed kind completes a batch for pattern
        extraction, which the offline extractor runs here, once outside any transaction; a
        model's never runs here (capture never waits on a network): ``maintain`` runs it (imports
        complete no batch: they are history, not events as they complete)."""
        with span("memdb.record", {"memdb.owner": self.name}) as s:
            episode = self._episodes.record(kind, summary, ts=ts, **fields)
            s.set("memdb.kind", episode.kind)  # a kind as validated, never the argument as given
            s.set("memdb.episode.id", episode.id)
            self._patterns.run_due(self.name, episode.id)
        return episode

    def record_exchange(
        self, session: str, user_message: str, response: str, *, ts: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Episode:
        """Capture one gateway exchange as bounded digests of both sides, never the raw payload."""
        with span("memdb.record", {"memdb.owner": self.name, "memdb.kind": "exchange"}) as s:
            episode = self._episodes.record_exchange(session, user_message, response, ts=ts, tags=tags)
            s.set("memdb.episode.id", episode.id)
        return episode

    def record_tool_call(
        self, session: str, tool: str, input: Any, *, ts: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Episode:
        """Capture a tool call as an execution event with a bounded input digest."""
        with span("memdb.record", {"memdb.owner": self.name, "memdb.kind": "tool_call"}) as s:
            episode = self._episodes.record_tool_call(session, tool, input, ts=ts, tags=tags)
            s.set("memdb.episode.id", episode.id)
        return episode

    def record_tool_result(self, call_id: str, result: Any) -> Episode:
        """Attach a bounded, sanitized result to an earlier tool call of this owner."""
        with span("memdb.record_tool_result", {"memdb.owner": self.name}) as s:
            episode = self._episodes.record_tool_result(call_id, result)
            s.set("memdb.episode.id", episode.id)  # once known good: an argument is never an attribute unchecked
        return episode

    def close_session(
        self, session: str, *, kind: str, outcome: str | None = None, now: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Distillation:
        """Close a gateway session: its captured exchanges and tool calls become one episode of
        typed ``kind`` citing them (summary, what_we_tried, what_happened, why, lesson, outcome),
        recorded like any typed record (sanitized, validated, counted for patterns) with ``tags``
        added to the events' own, stored as ``record`` stores them ("bob@example.com" is "withheld-email").

        ``outcome`` is required with the offline distiller, which never guesses one; a model
        distiller judges it when not given, and an answer that hedges or contradicts the tool
        results is refused (asked again once; then nothing is written and the session stays
        open). A session closes once: again, or with nothing captured, the result says so and
        nothing is written. ValidationError names a bad argument."""
        return self._sessions.close(self.name, session, kind, outcome, now, tags)

    def import_episodes(self, episodes: Iterable[Mapping[str, Any] | EpisodeInput | Episode], *, source: str) -> ImportReport:
        """Import past episodes keeping their timestamps: validated and sanitized first, then
        written whole with one audit record, or not at all. Cites of the ids an export gave
        follow them to the new ids; a summary's sources stay summarized and a session an
        imported typed episode closed stays closed, so maintain and the idle rule do not
        write them again. ``export``'s lines, as it gives them or read back from JSON, are read
        as ``memdb import`` reads them (``memdb.surfaces.export.import_row``: what memdb
        computes, such as relevance and status, is computed again); a complete export's records
        other than episodes are skipped: import brings back episodes only."""

        def adopt(report: ImportReport) -> None:
            self._sessions.adopt_imported(self.name, report.citing, self._layer.now())

        items, places = _episodes_only(episodes)
        try:
            return self._episodes.import_episodes(items, source=source, then=adopt)
        except ValidationError as exc:
            renamed = _as_given(exc, places)
            if renamed is None:
                raise
            raise renamed from None

    # --- versions and facts ------------------------------------------------------------------------

    def supersede(self, episode_id: str, *, reason: str, **changes: Any) -> Episode:
        """Correct an episode without overwriting it: a new version with ``changes`` applied
        (validated and sanitized like a capture; a typed kind keeps an honest outcome, which may
        be corrected) cites the old one, which becomes ``superseded``: kept, out of default
        answers, reachable through ``versions``. One audit record names both and the reason.
        Returns the new version. ``kind`` and a fact's ``key`` cannot change."""
        return self._episodes.supersede(episode_id, reason, changes)

    def versions(self, episode_id: str) -> list[Episode]:
        """Every version of an episode (any of its ids), oldest first, the current one last; not an access."""
        return self._episodes.versions(episode_id)

    def fact(self, key: str, *, access: bool = True) -> Episode:
        """The current version of the fact under ``key`` (its ``summary`` is the value; counts as
        an access, unless ``access=False``, as ``peek`` for ``get``). Facts are recorded with
        ``record("fact", value, key=key)``; recording a key again supersedes its value.
        NotFoundError names a key without a fact."""
        return self._episodes.fact(key, access=access)

    def facts(self, prefix: str | None = None) -> list[Episode]:
        """The current value of every fact, in key order (keys starting with ``prefix`` when given)."""
        return self._episodes.facts(prefix)

    # --- reads -----------------------------------------------------------------------------------

    def get(self, episode_id: str) -> Episode:
        """One of this owner's hot episodes (counts as an access); NotFoundError for unknown ids
        and other owners' alike."""
        return self._episodes.get(episode_id)

    def peek(self, episode_id: str) -> Episode:
        """Like ``get`` without counting an access (for tools and audits)."""
        return self._episodes.peek(episode_id)

    def explain(self, episode_id: str, now: dt.datetime | None = None) -> Explanation:
        """Why an episode ranks where it does: its relevance and the four components (no access)."""
        return self._episodes.explain(episode_id, now)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._episodes

    def count(self) -> int:
        """How many episodes this owner has, archived ones included."""
        return self._episodes.count()

    def relevances(self, limit: int = 5000) -> list[float]:
        """The relevance (0-10) of this owner's ``limit`` latest hot episodes, newest first, as
        last scored: read from their headers, so no access is counted and no record is built
        (building them cost the dashboard's overview 0.2 s a view at 3.5k hot episodes)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError(f"limit {shown(limit)}: must be a non-negative int")
        out: list[float] = []
        # islice refuses a count past sys.maxsize, which no owner holds (test_bad_input.py found 2**63)
        for eid in itertools.islice(self._layer.ids_in_time(self.name, reverse=True), min(limit, sys.maxsize)):
            if (header := self._layer.header(self.name, eid)) is not None:
                out.append(float(header["relevance"]))
        return out

    def episodes(
        self,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        reverse: bool = False,
        *,
        include_archived: bool = False,
        session: str | None = None,
    ) -> Iterator[Episode]:
        """This owner's episodes in time order (``since`` inclusive, ``until`` exclusive), of one
        ``session`` only when given (read from its index); with ``include_archived`` the archived
        ones too, their full record read from cold storage (status "archived"), so an export
        holds every episode. Current versions only: the ones they superseded are reached through
        ``versions`` (an import could not link them again, and would bring them back as
        current). Not an access."""
        hot = self._episodes.episodes(since, until, reverse, session)
        if not include_archived:
            yield from hot
            return
        cold = self._lifecycle.archived_episodes(self.name, since, until, reverse, session)
        keyed = (((ts_micros(e.ts), e.id), e) for e in hot), (((ts_micros(e.ts), e.id), e) for e in cold)
        for _, episode in heapq.merge(*keyed, key=lambda pair: pair[0], reverse=reverse):
            yield episode

    def export(self, *, complete: bool = False) -> Iterator[dict[str, Any]]:
        """This owner's memory as export lines, JSON-ready (``memdb export`` writes one a line;
        the format is ``memdb.surfaces.export``'s): every episode, archived ones included, current
        versions only, which ``import_episodes`` brings back. ``complete``: the owner's copy of
        everything memdb holds of them (a right of access), every line typed: the episodes, then
        every earlier version, the knowledge entries they wrote, their patterns and their audit
        records, which import skips. A bulk read, not an access."""
        for episode in self.episodes(include_archived=True):
            yield typed(EPISODE, episode_row(episode)) if complete else episode_row(episode)
        if not complete:
            return
        versions, entries, patterns, audit = NOT_IMPORTED
        for eid in self._layer.superseded_ids(self.name):
            yield typed(versions, episode_row(self._episodes.peek(eid)))
        for entry in self.entries():
            yield typed(entries, entry.model_dump(mode="json"))
        for pattern in self.patterns():
            yield typed(patterns, pattern.model_dump(mode="json"))
        for record in self.audit():
            yield typed(audit, audit_row(record))

    def feedback(self, episode_id: str, value: float) -> Episode:
        """Record agent feedback in [-1, 1] (the latest counts) and rescore the episode."""
        return self._episodes.feedback(episode_id, value)

    # --- queries ---------------------------------------------------------------------------------

    def recall(
        self,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        tags: Iterable[str] = (),
        any_tags: Iterable[str] = (),
        text: str | None = None,
        kind: str | None = None,
        outcome: str | None = None,
        session: str | None = None,
        limit: int = 5,
        now: dt.datetime | None = None,
        include_archived: bool = False,
        *,
        include_superseded: bool = False,
        include_told: bool = False,
        offset: int = 0,
        access: bool = True,
    ) -> RecallResult:
        """Episodes matching every filter given, best first (``memdb.query.engine`` says how they
        rank); earlier versions of corrected episodes too with ``include_superseded``; episodes
        recorded outside the window whose text tells of a time in it ("yesterday") too with
        ``include_told`` (``ask`` always counts them); after the ``offset`` best with ``offset``
        (a page: the ones skipped are not counted as accessed again); ``access=False`` counts no
        access, for a caller that merges answers and shows only some (MCP's several kinds)."""
        with span("memdb.recall", {"memdb.owner": self.name, "memdb.limit": limit}) as s:
            result = self._queries.recall(
                since, until, tags, any_tags, text, kind, outcome, session, limit, now, include_archived,
                include_superseded=include_superseded, include_told=include_told, offset=offset, access=access,
            )  # fmt: skip
            s.set("memdb.total", result.total)
        return result

    def ask(
        self,
        question: str,
        now: dt.datetime | None = None,
        limit: int = 5,
        *,
        include_archived: bool = False,
        include_superseded: bool = False,
        offset: int = 0,
    ) -> RecallResult:
        """Answer a plain-language question: time phrases become a window (also one given by an
        event, "after the outage", placed at the newest memory of it; "the last three deploys"
        asks for the newest, in time order), known tags become
        tag filters, outcome words an outcome filter (in a yes-or-no question, "Did the deploy
        fail?", the note tells of the attempts that went otherwise), preference words the owner's facts, and
        the rest ranks by text (archived episodes too, through what stays hot of them, with
        ``include_archived``; earlier versions of corrected ones with ``include_superseded``);
        ``offset`` skips that many ranked matches, for a page of an answer."""
        with span("memdb.ask", {"memdb.owner": self.name, "memdb.limit": limit}) as s:
            result = self._queries.ask(
                question, now, limit, include_archived=include_archived, include_superseded=include_superseded, offset=offset
            )
            s.set("memdb.total", result.total)
        return result

    def history(
        self,
        kind: str | None = None,
        tags: Iterable[str] = (),
        text: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        limit: int = 10,
        *,
        include_superseded: bool = False,
    ) -> History:
        """Past attempts at this kind of task: counts by outcome, latest attempts and lessons
        (each attempt as its current version; the earlier ones listed too with ``include_superseded``)."""
        with span("memdb.history", {"memdb.owner": self.name, "memdb.limit": limit}):
            return self._queries.history(kind, tags, text, since, until, limit, include_superseded=include_superseded)

    def known_tags(self) -> list[str]:
        """Every tag this owner has used."""
        return self._queries.known_tags()

    # --- lifecycle -------------------------------------------------------------------------------

    def restore(self, episode_id: str) -> Episode:
        """Bring an archived episode's full record back from cold storage, with its indexes."""
        return self._lifecycle.restore(self.name, check_id(episode_id))

    def archive(self, episode_id: str) -> None:
        """Archive one episode now (the lifecycle does this by rule in ``maintain``)."""
        self._lifecycle.archive(self.name, check_id(episode_id), self._layer.now())

    def erase(
        self,
        ids: Iterable[str] | None = None,
        *,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        everything: bool = False,
        tags: Iterable[str] = (),
        reason: str,
    ) -> ErasureReport:
        """Delete episodes (by id, time range, tag, or all) from hot and cold storage and every
        index, with every version of each (``supersede``) and the summaries derived from them.
        ``tags``: the episodes carrying any of them, archived and earlier versions included, within
        ``since``/``until`` if given ("forget customer Acme": ``erase(tags=["acme"], reason=...)``;
        memories that name Acme in their text alone are not tagged, ``ask`` finds them). The audit
        record keeps ids and hashes, no content.
        Knowledge entries and patterns citing an erased episode go too (the entry keeps only its
        hash); so do, being what the owner wrote, every entry of theirs (``everything=True``: saved
        lessons citing nothing, pending, approved or shared ones) or every entry carrying one of
        ``tags`` (created within ``since``/``until`` if given). Freed pages may still hold old
        bytes until ``db.compact()``."""
        return self._lifecycle.erasure.erase(self.name, ids, since, until, everything, reason, "erase", tags)

    def delete(self, episode_id: str, *, reason: str) -> str:
        """Erase one episode as ``erase([episode_id])`` does, its other versions, derived summaries,
        knowledge entries and patterns included; the audit record says "delete". Returns that record's id."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"delete reason {shown(reason)}: say why (it is kept in the audit trail)")
        report = self._lifecycle.erasure.erase(self.name, [check_id(episode_id)], None, None, False, reason, "delete")
        assert report.audit_id is not None  # one episode was erased, so one record was written
        return report.audit_id

    def erase_versions(self, episode_id: str, *, reason: str) -> ErasureReport:
        """Erase an earlier version of a memory (``supersede``; a fact's old value) and every
        version before it, keeping the later ones ("forget my old address, keep the new one"):
        the oldest left stands alone, no longer saying what it corrected. What was derived from
        the erased versions goes as with ``erase``; the audit record keeps their ids and hashes
        and names the version ``kept``. ValidationError for a current version (``erase`` takes
        the whole memory)."""
        return self._lifecycle.erasure.erase_versions(self.name, check_id(episode_id), reason)

    def audit(self, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """This owner's audit records, oldest first (``since`` inclusive, ``until`` exclusive)."""
        return self._layer.audit.entries(self.name, since, until)

    # --- knowledge: the semantic store, through the review queue ----------------------------------

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

    # --- patterns, preparation and timelines ------------------------------------------------------

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
        parts = (self._layer, self._queries, self._knowledge, self._patterns)
        return prepare(*parts, task, kind=kind, tags=tags, max_chars=max_chars, limit=limit, now=now)

    def timeline(self, session: str) -> Timeline:
        """A session's tool calls step by step (order, tool, input, result, times); reads only."""
        return build_timeline(self._layer, self.name, session, self._lifecycle.read_archived)

    def tool_sessions(self, limit: int | None = None) -> list[SessionCalls]:
        """This owner's sessions with tool calls, the latest first (the ``limit`` latest): how many
        calls each, how many of them archived, when the last ran (what the dashboard's Timelines
        list shows); reads headers only, and with a limit not the whole history."""
        return list_sessions(self._layer, self.name, limit)

    def export_timeline(
        self, session: str, path: str | os.PathLike[str] | None = None, *, now: dt.datetime | None = None, overwrite: bool = False
    ) -> dict[str, Any]:
        """The timeline as a versioned, explicitly non-executable JSON record for audit (written to
        ``path`` when given). Nothing re-runs a tool or replays a request."""
        return export_timeline(
            self._layer, self.name, session, path, now=now, overwrite=overwrite, read_archived=self._lifecycle.read_archived
        )


def _as_given(exc: ValidationError, places: list[int]) -> ValidationError | None:
    """``exc`` naming the item by its place in what was given, where records left out before it
    moved it (None: it names it so already)."""
    found = IMPORT_ITEM.match(str(exc))
    n = int(found.group(1)) if found is not None else -1
    if found is None or n >= len(places) or places[n] == n:
        return None
    return ValidationError(f"import item {places[n]}{str(exc)[found.end() :]}")


def _episodes_only(items: Any) -> tuple[Any, list[int]]:
    """What ``import_episodes`` takes of ``items``, with each one's place in what was given:
    export's lines as ``memdb import`` takes them (``import_row``), a complete export's other
    records left out rather than read as episodes (an earlier version would come back current:
    test_a_complete_export_is_typed_and_import_skips_what_it_cannot_bring_back); anything else as given."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        return items, []  # refused by import_episodes, naming what was given
    taken: list[Mapping[str, Any] | EpisodeInput | Episode] = []
    places: list[int] = []
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and is_export_row(item):
            item = import_row(item, f"import item {i}")
            if item is None:
                continue
        taken.append(item)
        places.append(i)
    return taken, places
