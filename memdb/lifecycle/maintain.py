"""The memory lifecycle: record -> burst summary -> prioritisation -> archive, with a trace.

``maintain(now)`` runs the rules in order (summaries, rescoring, archiving, retention) in
bounded batches, is idempotent at a given ``now``, and reports what it did. Nothing leaves
hot storage without an audit record that says when, why and what (a hash, never the text
of something erased).
"""

from __future__ import annotations

import datetime as dt
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

from memdb.engine.log import logger
from memdb.errors import LLMError, NotFoundError, ValidationError
from memdb.lifecycle.cold import ColdCodec
from memdb.lifecycle.erase import Erasure, ErasureReport
from memdb.lifecycle.summarize import ExtractiveSummarizer, Summarizer
from memdb.memory.audit import content_hash
from memdb.memory.episodes import ColdMove, Episodes, to_episode
from memdb.memory.ids import ts_micros
from memdb.memory.layout import SUPERSEDED, kept_when_archived, successor_of
from memdb.memory.models import Episode, utc
from memdb.memory.settings import FACT_KIND

__all__ = ["ErasureReport", "Lifecycle", "MaintenanceReport"]

_log = logger(__name__)
_ARCHIVE_BATCH = 128  # due episodes archived per write transaction (bounded: a capture waits for one at most)
_REPACK_TRIES = 3  # packings again of a batch's records whose dictionary an erasure dropped meanwhile


@dataclass
class MaintenanceReport:
    """What one ``maintain`` run did."""

    now: dt.datetime
    summaries: int = 0
    summarized_sources: int = 0
    summarizer_failures: int = 0
    rescored: int = 0
    rescore_changed: int = 0
    archived: int = 0
    purged: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    patterns: int = 0  # written from pattern batches waiting (memdb.surfaces.database.Database.maintain runs them)
    pattern_batches_failed: int = 0  # failed and retried by the next run
    pattern_batches_given_up: int = 0  # failed too often: only extract_patterns() retries them
    changed_meanwhile: int = 0  # burst windows and due episodes another process changed while this run read them: left for the next run
    expired: int = 0  # erased by an integration's expiry (Database.maintain_hooks: the LangGraph store's TTL items)

    def _failed_batches(self) -> str:
        counts = ((self.pattern_batches_failed, "retried next run"), (self.pattern_batches_given_up, "given up"))
        said = [f"{n} {what}" for n, what in counts if n]
        return f"pattern batches failed ({', '.join(said)}; batch_status says why) " if said else ""

    def _meanwhile(self) -> str:
        n = self.changed_meanwhile
        return f"({n} changed by another process meanwhile: left for the next run) " if n else ""

    def __str__(self) -> str:
        return (
            f"maintain at {self.now:%Y-%m-%d %H:%M} UTC: {self.summaries} burst summaries ({self.summarized_sources} episodes summarized"
            f"{f', {self.summarizer_failures} windows left for the next run' if self.summarizer_failures else ''}), "
            f"{self.rescored} rescored ({self.rescore_changed} changed), {self.archived} archived, {self.purged} purged by retention "
            f"{f'and {self.expired} expired ' if self.expired else ''}"
            f"{self._meanwhile()}"
            f"{f'and {self.patterns} patterns from waiting batches ' if self.patterns else ''}{self._failed_batches()}"
            f"in {self.seconds:.2f}s"
        )


# What an archived header keeps hot beside its one-liner that older archives lacked, and the mark
# saying the backfill from their cold records ran (``Lifecycle.keep_archived_fields``)
_KEPT_HOT: tuple[tuple[str, str], ...] = (
    ("lesson", "archived lessons kept"),
    ("participants", "archived participants kept"),
    ("decided", "archived decisions kept"),
    ("account", "archived accounts kept"),
)


class Lifecycle:
    """The lifecycle rules of one database."""

    def __init__(self, episodes: Episodes, summarizer: Summarizer | None = None) -> None:
        self.episodes = episodes
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self.cold = ColdCodec(episodes)
        self.erasure = Erasure(episodes, self.cold)
        self.marks = episodes.space["LIFE"]

    def keep_archived_fields(self) -> int:
        """Archives made before the header kept a field get it back from their cold record, once
        per field and database (``^LIFE("archived lessons kept")``, ``^LIFE("archived
        participants kept")``): the lesson, then who took part (layout 16), so "What did Bob
        review?" finds an archived review of any age, then the words of its decisions
        (``"archived decisions kept"``), so "which candidates did we reject?" finds an archived
        {"next": "reject"}, then the account of what was tried, what happened and why
        (``"archived accounts kept"``, ``archived_account``), so "pgbouncer" of a what_happened
        finds the attempt archived (0.44 s at open for 8,000 archived, once). Returns the
        headers completed."""
        wanted = [field for field, mark in _KEPT_HOT if not self.marks.get((mark,))]
        if not wanted:
            return 0
        done = 0
        with self.episodes.space.transaction():
            for owner in self.episodes.owners():
                for eid in self.episodes.archived_ids(owner):
                    header = self.episodes.header(owner, eid)
                    missing = [f for f in wanted if header is not None and f not in header]
                    blob = self.episodes.cold_blob(owner, eid) if missing else None
                    if blob is None:
                        continue
                    # what archiving keeps now, of the fields missing (each but the lesson only where the record has it)
                    kept = {f: v for f, v in kept_when_archived(self.cold.unpack(owner, blob)).items() if f in missing}
                    if kept:
                        self.episodes.keep_in_header(owner, eid, **kept)
                        done += 1
            for field, mark in _KEPT_HOT:
                if field in wanted:
                    self.marks.set((mark,), True)
        return done

    # --- the whole run --------------------------------------------------------------------------

    def maintain(self, now: dt.datetime | None = None, on_rule: Callable[[str], None] | None = None) -> MaintenanceReport:
        """Run every rule at ``now``: summaries, rescoring, archiving, retention; ``on_rule`` is
        told each rule's name as it starts, then "done" (the command's progress on a terminal)."""
        started = time.perf_counter()
        tell = on_rule or (lambda rule: None)
        at = utc(now, "now") if now is not None else self.episodes.now()
        report = MaintenanceReport(now=at)
        self.episodes.reload_settings()  # another process may have changed the rules since this one loaded them
        self.episodes.flush()
        tell("summaries")
        for owner in self.episodes.owners():
            self.summarize_bursts(owner, at, report)
        tell("rescoring")
        rescored = self.episodes.rescore(at)
        report.rescored, report.rescore_changed = rescored.scored, rescored.changed
        tell("archiving")
        for owner in self.episodes.owners():
            report.archived += self.archive_due(owner, at, report)
        if self.episodes.settings.retention_days is not None:
            tell("retention")
            for owner in self.episodes.owners():
                report.purged += self.erasure.apply_retention(owner, at)
        tell("done")
        report.seconds = time.perf_counter() - started
        # the report's own line: counts and times only; its errors may quote a summarizer's answer, so only their number
        _log.info("%s%s", report, f"; {len(report.errors)} errors (in the report)" if report.errors else "")
        return report

    # --- burst summaries --------------------------------------------------------------------------

    def summarize_bursts(self, owner: str, now: dt.datetime, report: MaintenanceReport) -> None:
        """Summarize every closed 24 h window with more than ``burst_events`` events.

        Events of one session are grouped (without a session: one day in the database's
        ``timezone``, so an afternoon in Los Angeles is not split at UTC midnight). A window opens
        at an unsummarized event and closes 24 h later; it is summarized once closed
        (``now >= start + 24h``). Sources become ``summarized`` in the same transaction as
        the summary, so a second run finds nothing to do.

        A typed episode of a session that cites events of it tells of them (a session's close,
        distilled from every event it read, or an agent's own account): it is no event, and the
        events it cites are told already, so they are left out; its other events still count. A
        closed session of five events was summarized again, its close counted as a sixth event and
        marked summarized: the same work told three times
        (test_a_closed_session_is_not_summarized_again); an account citing a session's first and
        last steps must not hide the steps between (test_an_account_citing_some_steps_leaves_the_rest_a_burst).
        """
        settings = self.episodes.settings
        window = dt.timedelta(hours=settings.burst_window_hours)
        groups: dict[str, list[tuple[dt.datetime, str, dict[str, Any]]]] = defaultdict(list)
        told: dict[str, set[str]] = defaultdict(set)  # per session: the events its typed episodes cite
        typed = set(settings.typed_kinds)
        zone = dt.UTC if settings.timezone == "UTC" else ZoneInfo(settings.timezone)
        mark = self.marks.get((owner, "burst_scanned_until"))
        # events an erasure freed from their summary (``Erasure._unsummarize``) lie before the
        # mark: the scan starts at the earliest of them, once
        freed = [int(subs[2]) for subs, _ in self.marks.items((owner, "burst_freed"))]
        # a window still open at the last run started at most one window (or, for an owner's
        # day, 25 h when the clocks go back) before its mark: look back over the longer of the two
        lookback = max(window, dt.timedelta(hours=25))
        since = min([ts_micros(mark), *freed]) - lookback // dt.timedelta(microseconds=1) if mark else None
        for eid in self.episodes.ids_in_time(owner, since, ts_micros(now)):
            header = self.episodes.header(owner, eid)
            if header is None or header["status"] != "active" or header["kind"] in ("summary", FACT_KIND):  # facts are no events
                continue
            key = f"session:{header['session']}" if header.get("session") else f"day:{header['ts'].astimezone(zone):%Y-%m-%d}"
            if header.get("session") and header["kind"] in typed and (cites := self._cites(owner, eid)):
                told[key].update(cites)
                continue
            groups[key].append((header["ts"], eid, header))
        scanned_until = now
        for key, events in groups.items():
            if key in told:
                events = [e for e in events if e[1] not in told[key]]
            for start, chosen in _closed_bursts(key, events, window, settings.burst_events, now, zone):
                if self._summarize(owner, key, start, chosen, report):
                    report.summaries += 1
                    report.summarized_sources += len(chosen)
                else:  # keep the failed window in reach of the next run
                    scanned_until = min(scanned_until, start + window)
        # windows opening before (mark - 24h) are closed and done: later runs start there; never
        # past the clock, or a run at a later ``now`` hid every event recorded after it (test_cli_scripting.py)
        with self.episodes.space.transaction():
            self.marks.set((owner, "burst_scanned_until"), min(scanned_until, self.episodes.now()))
            # scanned from there now (a window that failed keeps the mark above back); those that
            # another process's erasure freed meanwhile stay for the next run
            for us in freed:
                self.marks.kill((owner, "burst_freed", us))

    def _changed(self, owner: str, episode_id: str, record: dict[str, Any]) -> bool:
        """Whether an event read as ``record`` and active is no longer so (erased, superseded,
        archived, summarized, or its record changed, as a tool call's result comes)."""
        header = self.episodes.header(owner, episode_id)
        return header is None or header["status"] != "active" or self.episodes.record_of(owner, episode_id) != record

    def _cites(self, owner: str, episode_id: str) -> list[str]:
        """What a hot episode cites (its header does not say): none for one erased since it was listed."""
        record = self.episodes.record_of(owner, episode_id)
        return [str(c) for c in (record or {}).get("cites") or ()]

    def _summarize(self, owner: str, key: str, start: dt.datetime, chosen: list[str], report: MaintenanceReport) -> bool:
        mem = self.episodes.owner(owner)
        try:
            read = [self.episodes.load(owner, eid) for eid in chosen]
        except NotFoundError:  # one was erased by another process since: the next run sees the window as it is
            return False
        episodes = [to_episode(owner, eid, record, state) for eid, (record, state) in zip(chosen, read, strict=True)]
        try:
            text = self.summarizer.summarize(episodes, max_lines=3)
        except LLMError as exc:  # left unsummarized: the next run tries again
            report.summarizer_failures += 1
            report.errors.append(f"summary of {key} at {start:%Y-%m-%d %H:%M}: {exc}")
            return False
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:3]
        if not lines:
            report.summarizer_failures += 1
            report.errors.append(f"summary of {key} at {start:%Y-%m-%d %H:%M}: the summarizer returned nothing")
            return False
        # as stored: they join the summary as they are (kept_tags); sanitized again, ["password", "deploy"] read as a pair
        tags = list(dict.fromkeys(t for e in episodes for t in e.tags))[:8]
        session = episodes[0].session
        with self.episodes.space.transaction():
            if self.marks.get((owner, "burst", key, ts_micros(start))) is not None:
                return False
            # the sources read again in the write: another process may have erased, corrected,
            # archived or summarized one while the summarizer ran (seconds, with a model); the next
            # run sees the window as it is (test_races.py: test_a_source_changed_while_summarizing_*)
            if any(self._changed(owner, eid, record) for eid, (record, _) in zip(chosen, read, strict=True)):
                report.changed_meanwhile += 1
                return False
            summary = mem.record_derived(
                "summary", "\n".join(lines), ts=episodes[-1].ts, accessed_at=report.now, kept_tags=tags, session=session,
                cites=[e.id for e in episodes],
                content=f"Summary of {len(episodes)} events from {start:%Y-%m-%d %H:%M} to {episodes[-1].ts:%Y-%m-%d %H:%M} UTC",
            )  # fmt: skip
            self.episodes.set_status(owner, [e.id for e in episodes], "summarized")
            self.marks.set((owner, "burst", key, ts_micros(start)), summary.id)
        return True

    # --- archiving ------------------------------------------------------------------------------

    def archive_due(self, owner: str, now: dt.datetime, report: MaintenanceReport | None = None) -> int:
        """Archive every episode under the relevance threshold and unaccessed for the idle period,
        ``_ARCHIVE_BATCH`` episodes per write transaction; one another process changed so that it
        is no longer due is left (counted in ``report`` once its batch committed).

        The low relevance bands are read once, in chunks, as the batches go: a band also holds
        episodes not idle long enough, which a scan starting again at band 0 for every batch read
        again each time. One that becomes due behind the scan meanwhile is the next run's."""
        settings = self.episodes.settings
        threshold = settings.archive_below_relevance
        rule = f"relevance < {threshold} and no access for {settings.archive_after_days:g} days"
        candidates = (eid for band in range(0, min(int(threshold), 10) + 1) for eid in self.episodes.ids_in_band(owner, band))
        archived = 0
        while True:
            due: dict[str, None] = {}  # each once: one rated meanwhile moves up to a band not read yet (test_races.py)
            for eid in candidates:
                header = self.episodes.header(owner, eid)
                if eid not in due and header is not None and self._due(header, now):
                    due[eid] = None
                    if len(due) >= _ARCHIVE_BATCH:
                        break
            if not due:
                return archived
            done, changed = self._archive_repacking(owner, list(due), now, rule, due=True)
            archived += len(done)
            if report is not None:
                report.changed_meanwhile += len(changed)

    def _due(self, header: dict[str, Any], now: dt.datetime) -> bool:
        """Whether a hot episode is due for archiving at ``now`` (facts never are: a fact leaves
        by a new value or erasure, ``archive``)."""
        settings = self.episodes.settings
        if header["status"] in ("archived", SUPERSEDED) or header["kind"] == FACT_KIND:
            return False
        last = header.get("last_access") or header["ts"]
        return bool(header["relevance"] < settings.archive_below_relevance and now - last >= dt.timedelta(days=settings.archive_after_days))

    def archive(self, owner: str, episode_id: str, now: dt.datetime, rule: str = "requested") -> None:
        """Archive one episode: compressed to cold storage, one line left hot, one audit record.

        A superseded version stays whole until its chain is erased, and a fact stays hot (its
        key answers in one lookup): both are refused with ValidationError, writing nothing; so is
        an episode another process changed while it was being archived (try again)."""
        if not self._archive_repacking(owner, [episode_id], now, rule)[0]:
            raise ValidationError(f"archive {episode_id!r}: the episode changed while it was being archived; try again")

    def _archive_repacking(
        self, owner: str, episode_ids: Sequence[str], now: dt.datetime, rule: str, due: bool = False
    ) -> tuple[list[str], list[str]]:
        """``_archive``, packing again those whose dictionary an erasure dropped meanwhile
        (``ColdCodec.retrain``): they did not change, and a batch packed before the retrain would
        otherwise be left whole and said changed by another process. A few tries; what is still
        unpackable after them is said changed (the next run archives it)."""
        done, changed, repack = self._archive(owner, episode_ids, now, rule, due)
        for _ in range(_REPACK_TRIES):
            if not repack:
                break
            more, also, repack = self._archive(owner, repack, now, rule, due)
            done, changed = done + more, changed + also
        return done, changed + repack

    def _archive(
        self, owner: str, episode_ids: Sequence[str], now: dt.datetime, rule: str, due: bool = False
    ) -> tuple[list[str], list[str], list[str]]:
        """Archive episodes in one write transaction (all or none of those it keeps); returns the
        ids archived, those another process changed between the read and the write (with
        ``due``, also those no longer due), which are left as they are, and those unchanged whose
        packed record's dictionary is gone (to pack again). With ``due`` an episode erased or
        archived meanwhile is left too, silently; without, it raises NotFoundError, and a
        superseded version or a fact ValidationError, writing nothing."""
        changed: list[str] = []
        repack: list[str] = []
        packed: list[_Packed] = []
        read = self.episodes.load_many(owner, episode_ids)
        for eid in episode_ids:
            found = read.get(eid) or (None if due else self.episodes.load(owner, eid))  # load says why it is not hot
            if found is None:
                continue
            record, header = found
            if due and not self._due(header, now):  # changed since it was found due (superseded, read)
                changed.append(eid)
                continue
            _archivable(eid, header)
            one_line = self.summarizer.one_line(to_episode(owner, eid, record, header))
            digest = content_hash(record)
            blob = self.cold.pack(owner, record, digest)  # may train a dictionary: outside the write
            packed.append(_Packed(eid, record, digest, one_line, blob))
        moves: list[ColdMove] = []
        with self.episodes.space.transaction():
            # read again in the write: another process may have corrected (superseded), changed
            # or, since it was found due, read or rated one, or erased another of the owner's
            # episodes, which drops the dictionary a blob was packed with (ColdCodec.retrain: those are
            # packed again, _archive_repacking); only the one changed is left (test_races.py:
            # test_an_episode_superseded_while_archiving_*,
            # test_one_episode_changed_while_archiving_a_batch_is_left_alone)
            again = self.episodes.load_many(owner, [p.episode_id for p in packed])
            decodable = self.cold.decodable(owner, [p.blob for p in packed])
            for p, usable in zip(packed, decodable, strict=True):
                found = again.get(p.episode_id) or (None if due else self.episodes.load(owner, p.episode_id))
                if found is None:
                    continue
                record, state = found
                if state.get("status") == SUPERSEDED and not due:
                    _archivable(p.episode_id, state)  # says by which version
                if record != p.record or (due and not self._due(state, now)):
                    changed.append(p.episode_id)
                    continue
                if not usable:
                    repack.append(p.episode_id)
                    continue
                explanation = self.episodes.scorer.explain(record, state, now)
                components = {name: getattr(explanation, name) for name in ("frequency", "tags", "age", "feedback")}
                audit = {
                    "episode": p.episode_id, "rule": rule, "relevance": explanation.relevance, "components": components,
                    "content_hash": p.digest, "one_line": p.one_line, "codec": p.blob["codec"],
                }  # fmt: skip
                moves.append(ColdMove(p.episode_id, p.blob, p.one_line, audit))
            if moves:
                self.episodes.move_to_cold(owner, moves, at=now)
        return [m.episode_id for m in moves], changed, repack

    def restore(self, owner: str, episode_id: str) -> Episode:
        """Bring an archived episode's full record back with all its indexes (one audit record)."""
        # the cold record read in the write: an erasure of earlier versions re-packs it unlinked,
        # and one of other episodes under a new dictionary, meanwhile (test_a_cold_record_repacked_while_restoring_*)
        with self.episodes.space.transaction():
            cold = self.episodes.cold_blob(owner, episode_id)
            if cold is None:
                raise NotFoundError(f"episode {episode_id!r}: no archived episode with this id for owner {owner!r}")
            record = self.cold.unpack(owner, cold)
            return self.episodes.move_from_cold(owner, episode_id, record, {"episode": episode_id, "content_hash": cold["hash"]})

    def read_archived(self, owner: str, episode_ids: Iterable[str]) -> list[Episode]:
        """Archived episodes' full records read back from cold storage without restoring them
        (a session closed from its archived captures, a timeline; not an access), in the order
        given; an id no longer archived is left out."""
        out = []
        for eid in episode_ids:
            if (episode := self._read_archived(owner, eid)) is not None:
                out.append(episode)
        return out

    def _read_archived(self, owner: str, episode_id: str) -> Episode | None:
        """An archived episode read back whole, or None: its cold record, header and dictionary
        in one snapshot, so an erasure retraining the owner's dictionaries between the reads does
        not leave a record packed with a dictionary gone."""
        with self.episodes.space.snapshot():
            cold, state = self.episodes.cold_blob(owner, episode_id), self.episodes.header(owner, episode_id)
            if cold is None or state is None:
                return None
            return to_episode(owner, episode_id, self.cold.unpack(owner, cold), state)

    def archived_episodes(
        self,
        owner: str,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        reverse: bool = False,
        session: str | None = None,
    ) -> Iterator[Episode]:
        """An owner's archived episodes in time order (of one ``session`` when given), each full
        record read back from cold storage without restoring it (for export, a timeline; not an access)."""
        lo = ts_micros(utc(since, "since")) if since else None
        hi = ts_micros(utc(until, "until")) if until else None
        ids = (
            self.episodes.archived_ids(owner, lo, hi, reverse)
            if session is None
            else self.episodes.archived_ids_in_session(owner, session, lo, hi, reverse)
        )
        for eid in ids:
            if (episode := self._read_archived(owner, eid)) is not None:
                yield episode


class _Packed(NamedTuple):
    """An episode read for archiving and packed outside the write: the record it was packed
    from (compared again in the write), its content hash, one-liner and cold value."""

    episode_id: str
    record: dict[str, Any]
    digest: str
    one_line: str
    blob: dict[str, Any]


def _archivable(episode_id: str, header: dict[str, Any]) -> None:
    """ValidationError for what is never archived: a superseded version, a fact."""
    if header.get("status") == SUPERSEDED:
        raise ValidationError(f"archive {episode_id!r}: superseded by {successor_of(header)}; archive the current version")
    if header["kind"] == FACT_KIND:
        raise ValidationError(f"archive {episode_id!r}: facts are not archived (record a new value, or erase it)")


def _closed_bursts(
    key: str,
    events: Sequence[tuple[dt.datetime, str, dict[str, Any]]],
    window: dt.timedelta,
    limit: int,
    now: dt.datetime,
    zone: dt.tzinfo = dt.UTC,
) -> list[tuple[dt.datetime, list[str]]]:
    """Greedy burst windows: from each unsummarized event, the events within ``window``; a
    closed window with more than ``limit`` events is a burst and its events are consumed."""
    events = sorted(events, key=lambda e: (e[0], e[1]))
    out = []
    i = 0
    while i < len(events):
        if key.startswith("day:"):  # without a session: the owner's day, in the database's zone, is the window
            day = events[i][0].astimezone(zone).date()
            start = dt.datetime.combine(day, dt.time(0), tzinfo=zone).astimezone(dt.UTC)
            end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(0), tzinfo=zone).astimezone(dt.UTC)  # 23 or 25 h at DST
        else:
            start = events[i][0]
            end = start + window
        j = i
        while j < len(events) and events[j][0] < end:
            j += 1
        if now < end:  # still open: may grow; decided by a later run
            break
        if j - i > limit:
            out.append((start, [e[1] for e in events[i:j]]))
            i = j
        else:
            i = j if key.startswith("day:") else i + 1
    return out
