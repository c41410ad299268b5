"""``memdb.aio``: the same database and owner handle for asyncio code, one worker thread per call.

Every method of ``memdb.Memory`` (and the administrative ones of ``memdb.Database``) has an
awaitable twin here with the same parameters, results and errors: the call runs whole in a
thread of the event loop's default executor (``asyncio.to_thread``), so a slow query never
blocks the loop and concurrent tasks run concurrently. That is safe because the layers below
are built for threads: a read transaction lives and ends in the thread that opened it (LMDB's
rule), and writers serialize in the store (one LMDB writer at a time per path;
tests/surfaces/test_aio.py::test_many_concurrent_readers_and_writers_stay_exact).

What cannot cross an ``await`` is not offered: ``transaction()`` and ``snapshot()`` are bound to
the thread that opens them, so run such a block as one function with ``await db.run(fn)``.

Cancelling a call (``task.cancel()``, a ``wait_for`` timeout) stops the wait, not the work: a
thread cannot be interrupted, so the call runs on and a write it makes commits whole (or not at
all, never half). Read back before recording again, or use a write that may run twice: a
fact (``record("fact", value, key=...)``, where the same value again writes nothing). An
``import_episodes`` run again skips only rows carrying an ``id`` it imported (an export's
rows); rows without one are imported a second time, so count or read back first.
``await db.close()`` while calls run makes the later calls fail with StoreClosedError; it waits
for a write under way and for each open read, up to 10 s
(tests/surfaces/test_aio.py::test_closing_while_calls_run_fails_them_and_the_process_lives).

    async with await memdb.aio.open("./mem") as db:
        mem = db.owner("ana")
        await mem.record("debug", "Deploy failed", outcome="failure")
        result = await mem.ask("what failed last week?")
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

from memdb.governance.distill import Distillation, Distiller, IdleReport
from memdb.governance.knowledge import Agenda, DecayReport, Entry
from memdb.governance.patterns import Pattern, PatternExtractor
from memdb.governance.prepare import Preparation
from memdb.governance.reflection import ReflectionReport, Reflector
from memdb.governance.timeline import SessionCalls, Timeline
from memdb.lifecycle.erase import ErasureReport
from memdb.lifecycle.maintain import MaintenanceReport
from memdb.lifecycle.summarize import Summarizer
from memdb.memory.check import CheckReport
from memdb.memory.episodes import ImportReport, RescoreReport
from memdb.memory.ids import Clock
from memdb.memory.models import Episode, EpisodeInput
from memdb.memory.relevance import Explanation
from memdb.memory.sanitize import Sanitizer
from memdb.memory.settings import Settings
from memdb.query.results import History, RecallResult
from memdb.surfaces import database
from memdb.surfaces.handle import Memory

__all__ = ["AsyncDatabase", "AsyncMemory", "open"]

T = TypeVar("T")


async def _run(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    # to_thread copies the caller's contextvars, so logging and tracing context follows the call
    return await asyncio.to_thread(fn, *args, **kwargs)


class AsyncMemory:
    """One owner's memory for asyncio: ``memdb.Memory``'s methods as coroutines (``sync`` is the
    ``Memory`` itself). ``episode_id in mem`` becomes ``await mem.contains(episode_id)``."""

    def __init__(self, memory: Memory) -> None:
        self.sync = memory
        self.name = memory.name

    def __repr__(self) -> str:
        return f"<memdb.aio.AsyncMemory {self.name!r}>"

    # settings and now read no store: no thread needed
    @property
    def settings(self) -> Settings:
        """The database's rules in force; read-only here."""
        return self.sync.settings

    def now(self) -> dt.datetime:
        """The database clock's now (aware UTC)."""
        return self.sync.now()

    # --- capture ---------------------------------------------------------------------------------

    async def record(self, kind: str, summary: str, *, ts: dt.datetime | None = None, **fields: Any) -> Episode:
        """``Memory.record`` in a worker thread."""
        return await _run(self.sync.record, kind, summary, ts=ts, **fields)

    async def record_exchange(
        self, session: str, user_message: str, response: str, *, ts: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Episode:
        """``Memory.record_exchange`` in a worker thread."""
        return await _run(self.sync.record_exchange, session, user_message, response, ts=ts, tags=tags)

    async def record_tool_call(
        self, session: str, tool: str, input: Any, *, ts: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Episode:
        """``Memory.record_tool_call`` in a worker thread."""
        return await _run(self.sync.record_tool_call, session, tool, input, ts=ts, tags=tags)

    async def record_tool_result(self, call_id: str, result: Any) -> Episode:
        """``Memory.record_tool_result`` in a worker thread."""
        return await _run(self.sync.record_tool_result, call_id, result)

    async def close_session(
        self, session: str, *, kind: str, outcome: str | None = None, now: dt.datetime | None = None, tags: list[str] | tuple[str, ...] = ()
    ) -> Distillation:
        """``Memory.close_session`` in a worker thread."""
        return await _run(self.sync.close_session, session, kind=kind, outcome=outcome, now=now, tags=tags)

    async def import_episodes(self, episodes: Iterable[Mapping[str, Any] | EpisodeInput | Episode], *, source: str) -> ImportReport:
        """``Memory.import_episodes`` in a worker thread (a lazy iterable is consumed there)."""
        return await _run(self.sync.import_episodes, episodes, source=source)

    # --- versions and facts ------------------------------------------------------------------------

    async def supersede(self, episode_id: str, *, reason: str, **changes: Any) -> Episode:
        """``Memory.supersede`` in a worker thread."""
        return await _run(self.sync.supersede, episode_id, reason=reason, **changes)

    async def versions(self, episode_id: str) -> list[Episode]:
        """``Memory.versions`` in a worker thread."""
        return await _run(self.sync.versions, episode_id)

    async def fact(self, key: str, *, access: bool = True) -> Episode:
        """``Memory.fact`` in a worker thread."""
        return await _run(self.sync.fact, key, access=access)

    async def facts(self, prefix: str | None = None) -> list[Episode]:
        """``Memory.facts`` in a worker thread."""
        return await _run(self.sync.facts, prefix)

    # --- reads -----------------------------------------------------------------------------------

    async def get(self, episode_id: str) -> Episode:
        """``Memory.get`` in a worker thread."""
        return await _run(self.sync.get, episode_id)

    async def peek(self, episode_id: str) -> Episode:
        """``Memory.peek`` in a worker thread."""
        return await _run(self.sync.peek, episode_id)

    async def explain(self, episode_id: str, now: dt.datetime | None = None) -> Explanation:
        """``Memory.explain`` in a worker thread."""
        return await _run(self.sync.explain, episode_id, now)

    async def contains(self, episode_id: object) -> bool:
        """``episode_id in memory``, in a worker thread."""
        return await _run(self.sync.__contains__, episode_id)

    async def count(self) -> int:
        """``Memory.count`` in a worker thread."""
        return await _run(self.sync.count)

    async def relevances(self, limit: int = 5000) -> list[float]:
        """``Memory.relevances`` in a worker thread."""
        return await _run(self.sync.relevances, limit)

    async def episodes(
        self,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        reverse: bool = False,
        *,
        include_archived: bool = False,
        session: str | None = None,
    ) -> AsyncIterator[Episode]:
        """``Memory.episodes`` as an async iterator. The episodes are read in one worker thread
        before the first is yielded: a snapshot cannot follow the iteration from thread to thread."""
        found = await _run(lambda: list(self.sync.episodes(since, until, reverse, include_archived=include_archived, session=session)))
        for episode in found:
            yield episode

    async def export(self, *, complete: bool = False) -> AsyncIterator[dict[str, Any]]:
        """``Memory.export`` as an async iterator, read in one worker thread before the first
        line is yielded (as ``episodes``)."""
        found = await _run(lambda: list(self.sync.export(complete=complete)))
        for row in found:
            yield row

    async def feedback(self, episode_id: str, value: float) -> Episode:
        """``Memory.feedback`` in a worker thread."""
        return await _run(self.sync.feedback, episode_id, value)

    # --- queries ---------------------------------------------------------------------------------

    async def recall(
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
        """``Memory.recall`` in a worker thread."""
        return await _run(
            self.sync.recall,
            since, until, tags, any_tags, text, kind, outcome, session, limit, now, include_archived,
            include_superseded=include_superseded, include_told=include_told, offset=offset, access=access,
        )  # fmt: skip

    async def ask(
        self,
        question: str,
        now: dt.datetime | None = None,
        limit: int = 5,
        *,
        include_archived: bool = False,
        include_superseded: bool = False,
        offset: int = 0,
    ) -> RecallResult:
        """``Memory.ask`` in a worker thread."""
        return await _run(
            self.sync.ask, question, now, limit, include_archived=include_archived, include_superseded=include_superseded, offset=offset
        )

    async def history(
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
        """``Memory.history`` in a worker thread."""
        return await _run(self.sync.history, kind, tags, text, since, until, limit, include_superseded=include_superseded)

    async def known_tags(self) -> list[str]:
        """``Memory.known_tags`` in a worker thread."""
        return await _run(self.sync.known_tags)

    # --- lifecycle -------------------------------------------------------------------------------

    async def restore(self, episode_id: str) -> Episode:
        """``Memory.restore`` in a worker thread."""
        return await _run(self.sync.restore, episode_id)

    async def archive(self, episode_id: str) -> None:
        """``Memory.archive`` in a worker thread."""
        await _run(self.sync.archive, episode_id)

    async def erase(
        self,
        ids: Iterable[str] | None = None,
        *,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        everything: bool = False,
        tags: Iterable[str] = (),
        reason: str,
    ) -> ErasureReport:
        """``Memory.erase`` in a worker thread."""
        return await _run(self.sync.erase, ids, since=since, until=until, everything=everything, tags=tags, reason=reason)

    async def delete(self, episode_id: str, *, reason: str) -> str:
        """``Memory.delete`` in a worker thread."""
        return await _run(self.sync.delete, episode_id, reason=reason)

    async def erase_versions(self, episode_id: str, *, reason: str) -> ErasureReport:
        """``Memory.erase_versions`` in a worker thread."""
        return await _run(self.sync.erase_versions, episode_id, reason=reason)

    async def audit(self, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """``Memory.audit`` in a worker thread."""
        return await _run(self.sync.audit, since, until)

    # --- knowledge, patterns, preparation and timelines ----------------------------------------

    async def save_lesson(self, text: str, *, cites: Iterable[str] = (), tags: Iterable[str] = (), now: dt.datetime | None = None) -> Entry:
        """``Memory.save_lesson`` in a worker thread."""
        return await _run(self.sync.save_lesson, text, cites=cites, tags=tags, now=now)

    async def knowledge(
        self, text: str | None = None, *, tags: Iterable[str] = (), limit: int = 20, now: dt.datetime | None = None
    ) -> list[Entry]:
        """``Memory.knowledge`` in a worker thread."""
        return await _run(self.sync.knowledge, text, tags=tags, limit=limit, now=now)

    async def entries(self, state: str | None = None) -> list[Entry]:
        """``Memory.entries`` in a worker thread."""
        return await _run(self.sync.entries, state)

    async def patterns(self, kind: str | None = None) -> list[Pattern]:
        """``Memory.patterns`` in a worker thread."""
        return await _run(self.sync.patterns, kind)

    async def prepare(
        self,
        task: str,
        *,
        kind: str | None = None,
        tags: Iterable[str] = (),
        max_chars: int = 2000,
        limit: int = 5,
        now: dt.datetime | None = None,
    ) -> Preparation:
        """``Memory.prepare`` in a worker thread."""
        return await _run(self.sync.prepare, task, kind=kind, tags=tags, max_chars=max_chars, limit=limit, now=now)

    async def timeline(self, session: str) -> Timeline:
        """``Memory.timeline`` in a worker thread."""
        return await _run(self.sync.timeline, session)

    async def tool_sessions(self, limit: int | None = None) -> list[SessionCalls]:
        """``Memory.tool_sessions`` in a worker thread."""
        return await _run(self.sync.tool_sessions, limit)

    async def export_timeline(
        self, session: str, path: str | os.PathLike[str] | None = None, *, now: dt.datetime | None = None, overwrite: bool = False
    ) -> dict[str, Any]:
        """``Memory.export_timeline`` in a worker thread."""
        return await _run(self.sync.export_timeline, session, path, now=now, overwrite=overwrite)


class AsyncDatabase:
    """A ``memdb.Database`` for asyncio (``sync`` is the Database itself): ``owner(name)`` gives an
    ``AsyncMemory``; the administrative methods are coroutines run in worker threads."""

    def __init__(self, db: database.Database) -> None:
        self.sync = db

    def owner(self, name: str) -> AsyncMemory:
        """The async handle for one owner's memory (validating ``name`` needs no thread)."""
        return AsyncMemory(self.sync.owner(name))

    @property
    def settings(self) -> Settings:
        """The rules saved in this database."""
        return self.sync.settings

    async def run(self, fn: Callable[[database.Database], T]) -> T:
        """``fn(db)`` in one worker thread: the way to a ``transaction()`` or ``snapshot()`` block,
        which must open and end in one thread."""
        return await _run(fn, self.sync)

    async def owners(self) -> list[str]:
        """``Database.owners`` in a worker thread."""
        return await _run(self.sync.owners)

    async def erase_owner(self, name: str, *, reason: str) -> ErasureReport:
        """``Database.erase_owner`` in a worker thread."""
        return await _run(self.sync.erase_owner, name, reason=reason)

    async def owner_erasures(self, name: str) -> list[dict[str, Any]]:
        """``Database.owner_erasures`` in a worker thread."""
        return await _run(self.sync.owner_erasures, name)

    async def refresh_settings(self) -> Settings:
        """``Database.refresh_settings`` in a worker thread."""
        return await _run(self.sync.refresh_settings)

    async def configure(self, **changes: Any) -> Settings:
        """``Database.configure`` in a worker thread."""
        return await _run(self.sync.configure, **changes)

    async def check(self) -> CheckReport:
        """``Database.check`` in a worker thread."""
        return await _run(self.sync.check)

    async def rescore(self, now: dt.datetime | None = None) -> RescoreReport:
        """``Database.rescore`` in a worker thread."""
        return await _run(self.sync.rescore, now)

    async def maintain(self, now: dt.datetime | None = None, *, on_rule: Callable[[str], None] | None = None) -> MaintenanceReport:
        """``Database.maintain`` in a worker thread (``on_rule`` is called from that thread)."""
        return await _run(self.sync.maintain, now, on_rule=on_rule)

    async def audit(
        self, owner: str | None = None, since: dt.datetime | None = None, until: dt.datetime | None = None
    ) -> list[dict[str, Any]]:
        """``Database.audit`` in a worker thread."""
        return await _run(self.sync.audit, owner, since, until)

    async def reflect(
        self, now: dt.datetime | None = None, *, owners: Iterable[str] | None = None, reflector: Reflector | None = None
    ) -> ReflectionReport:
        """``Database.reflect`` in a worker thread."""
        return await _run(self.sync.reflect, now, owners=owners, reflector=reflector)

    async def review_queue(self, owner: str | None = None, limit: int | None = None) -> list[Entry]:
        """``Database.review_queue`` in a worker thread."""
        return await _run(self.sync.review_queue, owner, limit)

    async def approve(self, ids: str | Iterable[str], *, by: str, now: dt.datetime | None = None) -> list[Entry]:
        """``Database.approve`` in a worker thread."""
        return await _run(self.sync.approve, ids, by=by, now=now)

    async def reject(self, ids: str | Iterable[str], *, by: str, reason: str = "", now: dt.datetime | None = None) -> list[Entry]:
        """``Database.reject`` in a worker thread."""
        return await _run(self.sync.reject, ids, by=by, reason=reason, now=now)

    async def entry(self, entry_id: str) -> Entry:
        """``Database.entry`` in a worker thread."""
        return await _run(self.sync.entry, entry_id)

    async def ceremony(self, team: str | None = None, *, now: dt.datetime | None = None) -> Agenda:
        """``Database.ceremony`` in a worker thread."""
        return await _run(self.sync.ceremony, team, now=now)

    async def latest_agenda(self, team: str | None = None) -> Agenda | None:
        """``Database.latest_agenda`` in a worker thread."""
        return await _run(self.sync.latest_agenda, team)

    async def decide(
        self, decisions: Mapping[str, str], *, by: str, team: str | None = None, now: dt.datetime | None = None
    ) -> list[Entry]:
        """``Database.decide`` in a worker thread."""
        return await _run(self.sync.decide, decisions, by=by, team=team, now=now)

    async def decay(self, now: dt.datetime | None = None) -> DecayReport:
        """``Database.decay`` in a worker thread."""
        return await _run(self.sync.decay, now)

    async def flagged(self) -> list[Entry]:
        """``Database.flagged`` in a worker thread."""
        return await _run(self.sync.flagged)

    async def confirm_decay(
        self, entry_id: str, action: Literal["keep", "quarantine"], *, by: str, reason: str = "", now: dt.datetime | None = None
    ) -> Entry:
        """``Database.confirm_decay`` in a worker thread."""
        return await _run(self.sync.confirm_decay, entry_id, action, by=by, reason=reason, now=now)

    async def quarantine(self, entry_id: str, *, by: str, reason: str, now: dt.datetime | None = None) -> Entry:
        """``Database.quarantine`` in a worker thread."""
        return await _run(self.sync.quarantine, entry_id, by=by, reason=reason, now=now)

    async def restore_entry(self, entry_id: str, *, by: str, now: dt.datetime | None = None) -> Entry:
        """``Database.restore_entry`` in a worker thread."""
        return await _run(self.sync.restore_entry, entry_id, by=by, now=now)

    async def close_idle_sessions(
        self, now: dt.datetime | None = None, idle: dt.timedelta | None = None, *, limit: int = 100
    ) -> IdleReport:
        """``Database.close_idle_sessions`` in a worker thread."""
        return await _run(self.sync.close_idle_sessions, now, idle, limit=limit)

    async def extract_patterns(self, now: dt.datetime | None = None, *, retry_failed: bool = True) -> int:
        """``Database.extract_patterns`` in a worker thread."""
        return await _run(self.sync.extract_patterns, now, retry_failed=retry_failed)

    async def backup(self, dest: str | os.PathLike[str]) -> None:
        """``Database.backup`` in a worker thread."""
        await _run(self.sync.backup, dest)

    async def compact(self) -> None:
        """``Database.compact`` in a worker thread (it waits for every other call to end)."""
        await _run(self.sync.compact)

    async def flush(self) -> int:
        """``Database.flush`` in a worker thread."""
        return await _run(self.sync.flush)

    async def close(self) -> None:
        """``Database.close`` in a worker thread: buffered accesses are flushed first."""
        await _run(self.sync.close)

    async def __aenter__(self) -> AsyncDatabase:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def open(
    path: str | os.PathLike[str],
    *,
    sanitizer: Sanitizer | None = None,
    clock: Clock | None = None,
    summarizer: Summarizer | None = None,
    reflector: Reflector | None = None,
    pattern_extractor: PatternExtractor | None = None,
    distiller: Distiller | None = None,
    **options: Any,
) -> AsyncDatabase:
    """``memdb.open`` in a worker thread (opening may upgrade the layout), as an ``AsyncDatabase``;
    the same arguments and errors."""
    db = await _run(
        database.open, path, sanitizer=sanitizer, clock=clock, summarizer=summarizer, reflector=reflector,
        pattern_extractor=pattern_extractor, distiller=distiller, **options,
    )  # fmt: skip
    return AsyncDatabase(db)
