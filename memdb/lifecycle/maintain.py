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
from typing import Any

from memdb.errors import LLMError, NotFoundError, ValidationError
from memdb.lifecycle.cold import ColdStore
from memdb.lifecycle.summarize import ExtractiveSummarizer, Summarizer
from memdb.memory.episodes import EpisodeStore, OwnerMemory, content_hash, episode_day, new_id, to_episode, ts_micros
from memdb.memory.models import Episode, utc

__all__ = ["Lifecycle", "MaintenanceReport"]

_ARCHIVE_BATCH = 500


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

    def __str__(self) -> str:
        return (
            f"maintain at {self.now:%Y-%m-%d %H:%M} UTC: {self.summaries} burst summaries ({self.summarized_sources} episodes summarized"
            f"{f', {self.summarizer_failures} windows left for the next run' if self.summarizer_failures else ''}), "
            f"{self.rescored} rescored ({self.rescore_changed} changed), {self.archived} archived, {self.purged} purged by retention "
            f"in {self.seconds:.2f}s"
        )


class Lifecycle:
    """The lifecycle rules of one database."""

    def __init__(self, store: EpisodeStore, summarizer: Summarizer | None = None) -> None:
        self.store = store
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self.cold = ColdStore(store.space)
        self.marks = store.space["LIFE"]
        # What layers above derive from episodes (knowledge entries, patterns) goes with them:
        # called as hook(owner, erased ids, now) inside every erasure's transaction, retention's too.
        self.erase_hooks: list[Callable[[str, set[str], dt.datetime], object]] = []

    # --- the whole run --------------------------------------------------------------------------

    def maintain(self, now: dt.datetime | None = None) -> MaintenanceReport:
        """Run every rule at ``now``: summaries, rescoring, archiving, retention."""
        started = time.perf_counter()
        at = utc(now, "now") if now is not None else self.store.now()
        report = MaintenanceReport(now=at)
        self.store.reload_settings()  # another process may have changed the rules since this one loaded them
        self.store.flush()
        for owner in self.store.owners():
            self.summarize_bursts(self._owner(owner), at, report)
        rescored = self.store.rescore(at)
        report.rescored, report.rescore_changed = rescored.scored, rescored.changed
        for owner in self.store.owners():
            report.archived += self.archive_due(self._owner(owner), at)
        if self.store.settings.retention_days is not None:
            for owner in self.store.owners():
                report.purged += self.apply_retention(self._owner(owner), at)
        report.seconds = time.perf_counter() - started
        return report

    def _owner(self, name: str) -> OwnerMemory:
        return OwnerMemory(self.store, name)

    # --- burst summaries --------------------------------------------------------------------------

    def summarize_bursts(self, mem: OwnerMemory, now: dt.datetime, report: MaintenanceReport) -> None:
        """Summarize every closed 24 h window with more than ``burst_events`` events.

        Events of one session are grouped (without a session: one UTC day). A window opens
        at an unsummarized event and closes 24 h later; it is summarized once closed
        (``now >= start + 24h``). Sources become ``summarized`` in the same transaction as
        the summary, so a second run finds nothing to do.
        """
        settings = self.store.settings
        window = dt.timedelta(hours=settings.burst_window_hours)
        groups: dict[str, list[tuple[dt.datetime, str, dict[str, Any]]]] = defaultdict(list)
        mark = self.marks.get((mem.name, "burst_scanned_until"))
        # a window still open at the last run started at most one window (or, for an owner's
        # day, 24 h) before its mark: look back over the longer of the two
        since = ts_micros(mark - max(window, dt.timedelta(days=1))) if mark else None
        for subs, _ in self.store.by_time.range((mem.name,), since, ts_micros(now)):
            eid = str(subs[2])
            header = self.store.states.get((mem.name, eid))
            if header is None or header["status"] != "active" or header["kind"] == "summary":
                continue
            key = f"session:{header['session']}" if header.get("session") else f"day:{header['ts']:%Y-%m-%d}"
            groups[key].append((header["ts"], eid, header))
        scanned_until = now
        for key, events in groups.items():
            for start, chosen in _closed_bursts(key, events, window, settings.burst_events, now):
                if self._summarize(mem, key, start, chosen, report):
                    report.summaries += 1
                    report.summarized_sources += len(chosen)
                else:  # keep the failed window in reach of the next run
                    scanned_until = min(scanned_until, start + window)
        # windows opening before (mark - 24h) are closed and done: later runs start there
        self.marks.set((mem.name, "burst_scanned_until"), scanned_until)

    def _summarize(self, mem: OwnerMemory, key: str, start: dt.datetime, chosen: list[str], report: MaintenanceReport) -> bool:
        try:
            episodes = [mem.peek(eid) for eid in chosen]
        except NotFoundError:  # one was erased by another process since: the next run sees the window as it is
            return False
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
        tags = list(dict.fromkeys(t for e in episodes for t in e.tags))[:8]
        session = episodes[0].session
        with self.store.space.transaction():
            if self.marks.get((mem.name, "burst", key, ts_micros(start))) is not None:
                return False
            summary = mem.record(
                "summary", "\n".join(lines), ts=episodes[-1].ts, tags=tags, session=session, cites=[e.id for e in episodes],
                content=f"Summary of {len(episodes)} events from {start:%Y-%m-%d %H:%M} to {episodes[-1].ts:%Y-%m-%d %H:%M} UTC",
            )  # fmt: skip
            for e in episodes:
                header = self.store.states[(mem.name, e.id)]
                self.store.states.set((mem.name, e.id), {**header, "status": "summarized"})
            self.marks.set((mem.name, "burst", key, ts_micros(start)), summary.id)
        return True

    # --- archiving ------------------------------------------------------------------------------

    def archive_due(self, mem: OwnerMemory, now: dt.datetime) -> int:
        """Archive every episode under the relevance threshold and unaccessed for the idle period."""
        settings = self.store.settings
        threshold = settings.archive_below_relevance
        idle = dt.timedelta(days=settings.archive_after_days)
        archived = 0
        top_band = min(int(threshold), 10)
        while True:
            due: list[str] = []
            for band in range(0, top_band + 1):
                for subs, _ in self.store.by_band.range((mem.name, band)):
                    eid = str(subs[3])
                    header = self.store.states.get((mem.name, eid))
                    if header is None or header["status"] == "archived" or header["relevance"] >= threshold:
                        continue
                    last = header.get("last_access") or header["ts"]
                    if now - last >= idle:
                        due.append(eid)
                    if len(due) >= _ARCHIVE_BATCH:
                        break
                if len(due) >= _ARCHIVE_BATCH:
                    break
            if not due:
                return archived
            for eid in due:
                try:
                    self.archive(mem, eid, now, rule=f"relevance < {threshold} and no access for {settings.archive_after_days:g} days")
                except NotFoundError:  # erased, or archived by another process, since it was found due
                    continue
                archived += 1

    def archive(self, mem: OwnerMemory, episode_id: str, now: dt.datetime, rule: str = "requested") -> None:
        """Archive one episode: compressed to cold storage, one line left hot, one audit record."""
        record, header = mem._load(episode_id)
        explanation = self.store.scorer.explain(record, header, now)
        episode = to_episode(mem.name, episode_id, record, header)
        one_line = self.summarizer.one_line(episode)
        digest = content_hash(record)
        blob = self.cold.pack(mem.name, record, digest)
        audit = {
            "action": "archive", "at": now, "episode": episode_id, "rule": rule, "relevance": explanation.relevance,
            "components": {
                "frequency": explanation.frequency, "tags": explanation.tags, "age": explanation.age, "feedback": explanation.feedback,
            },
            "content_hash": digest, "one_line": one_line, "codec": blob["codec"],
        }  # fmt: skip
        mem.move_to_cold(episode_id, blob, one_line, audit)

    def restore(self, mem: OwnerMemory, episode_id: str) -> Episode:
        """Bring an archived episode's full record back with all its indexes."""
        cold = self.store.cold.get((mem.name, episode_id))
        if cold is None:
            raise NotFoundError(f"episode {episode_id!r}: no archived episode with this id for owner {mem.name!r}")
        record = self.cold.unpack(mem.name, cold)
        now = self.store.now()
        return mem.move_from_cold(episode_id, record, {"action": "restore", "at": now, "episode": episode_id, "content_hash": cold["hash"]})

    def archived_episodes(
        self, mem: OwnerMemory, since: dt.datetime | None = None, until: dt.datetime | None = None, reverse: bool = False
    ) -> Iterator[Episode]:
        """An owner's archived episodes in time order, each full record read back from cold
        storage without restoring it (for export; not an access)."""
        lo = ts_micros(utc(since, "since")) if since else None
        hi = ts_micros(utc(until, "until")) if until else None
        for subs, _ in self.store.archived.range((mem.name,), lo, hi, reverse=reverse):
            eid = str(subs[2])
            cold, state = self.store.cold.get((mem.name, eid)), self.store.states.get((mem.name, eid))
            if cold is not None and state is not None:
                yield to_episode(mem.name, eid, self.cold.unpack(mem.name, cold), state)

    # --- retention and erasure ----------------------------------------------------------------

    def apply_retention(self, mem: OwnerMemory, now: dt.datetime) -> int:
        """Opt-in retention: erase episodes older than ``retention_days`` (audited)."""
        days = self.store.settings.retention_days
        if days is None:
            return 0
        cutoff = now - dt.timedelta(days=days)
        return self.erase(mem, until=cutoff, reason=f"retention: older than {days:g} days", action="retention").count

    def erase(
        self,
        mem: OwnerMemory,
        ids: Iterable[str] | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        everything: bool = False,
        reason: str = "",
        action: str = "erase",
    ) -> ErasureReport:
        """Delete an owner's episodes (by id, by time range, or all) from hot and cold storage and
        every index, with summaries derived from them (archived ones too) and, through
        ``erase_hooks``, what the layers above derived; one audit record with ids and hashes only.

        The owner's cold-storage dictionaries were trained on its records, erased ones included,
        so when anything is erased they are dropped and the remaining archived records re-packed
        under one retrained from those alone (``ColdStore.retrain``), in the same transaction:
        O(owner's archived records) on top of the erasure itself.
        """
        if not reason.strip():
            raise ValidationError(f"erase reason {reason!r}: say why (it is kept in the audit trail)")
        if ids is None and since is None and until is None and not everything:
            raise ValidationError("erase: give ids, a time range, or everything=True")
        now = self.store.now()
        hashes: dict[str, str] = {}
        audit_id = None
        # targets are found inside the write, so one erased meanwhile by another process is not missed or missing
        with self.store.space.transaction():
            targets = self._targets(mem, ids, since, until, everything)
            # summaries are derived content: erasing a source erases the summaries citing it
            for summary_id in self._citing_summaries(mem, targets):
                targets.setdefault(summary_id, None)
            for eid in targets:
                hashes[eid] = mem.remove(eid)
            if hashes:
                self.cold.retrain(mem.name, self.store.cold)
                for hook in self.erase_hooks:
                    hook(mem.name, set(hashes), now)
            self._redact_audit(mem, set(hashes), now)
            if hashes or action == "erase":
                audit_id = new_id(now, mem.name)
                self.store.audit.set(
                    (mem.name, audit_id),
                    {
                        "action": action,
                        "at": now,
                        "reason": reason,
                        "count": len(hashes),
                        "episodes": list(hashes),
                        "hashes": list(hashes.values()),
                    },
                )
        return ErasureReport(len(hashes), list(hashes), audit_id)

    def _redact_audit(self, mem: OwnerMemory, erased: set[str], now: dt.datetime) -> None:
        """Erasure beats append-only: an archive record's one-line summary is the erased
        episode's content, so it is replaced by a marker; the record, its hash and its
        reasons stay. No other field of any audit record is ever changed."""
        if not erased:
            return
        for subs, entry in self.store.audit.items((mem.name,)):
            if entry.get("episode") in erased and entry.get("one_line"):
                self.store.audit.set(subs, {**entry, "one_line": f"[erased {now:%Y-%m-%d}]"})

    def _targets(
        self, mem: OwnerMemory, ids: Iterable[str] | None, since: dt.datetime | None, until: dt.datetime | None, everything: bool
    ) -> dict[str, None]:
        targets: dict[str, None] = {}
        if ids is not None:
            if isinstance(ids, str):
                ids = [ids]
            for eid in ids:
                if self.store.states.get((mem.name, eid)) is None:
                    raise NotFoundError(f"episode {eid!r}: no such episode for owner {mem.name!r}")
                targets[eid] = None
        if since is not None or until is not None or everything:
            lo = ts_micros(utc(since, "since")) if since is not None else None
            hi = ts_micros(utc(until, "until")) if until is not None else None
            for index in (self.store.by_time, self.store.archived):
                for subs, _ in index.range((mem.name,), lo, hi):
                    targets[str(subs[2])] = None
        return targets

    def _citing_summaries(self, mem: OwnerMemory, targets: dict[str, None]) -> list[str]:
        """Summaries citing any target: hot ones through the kind index, archived ones through
        the archive index and their headers' kind (their cites are only in the cold record)."""
        if not targets:
            return []
        found = []
        for subs, _ in self.store.by_kind.range((mem.name, "summary", "-")):
            sid = str(subs[-1])
            record = self.store.mem.get((mem.name, episode_day(sid), sid))
            if record and sid not in targets and any(c in targets for c in record.get("cites") or ()):
                found.append(sid)
        for subs, _ in self.store.archived.range((mem.name,)):
            sid = str(subs[-1])
            header = self.store.states.get((mem.name, sid))
            if sid in targets or header is None or header.get("kind") != "summary":
                continue
            cold = self.store.cold.get((mem.name, sid))
            if cold is not None and any(c in targets for c in self.cold.unpack(mem.name, cold).get("cites") or ()):
                found.append(sid)
        return found

    # --- audit ----------------------------------------------------------------------------------

    def audit(self, owner: str | None = None, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """Audit records, oldest first, for one owner or all (with database-wide ones)."""
        lo = new_id(utc(since, "since"))[:22] if since else None
        hi = new_id(utc(until, "until"))[:22] if until else None
        out: list[dict[str, Any]] = []
        owners = [owner] if owner is not None else self.store.owners()
        for name in owners:
            out.extend({"owner": name, "id": subs[1], **v} for subs, v in self.store.audit.range((name,), lo, hi))
        if owner is None:
            out.extend({"owner": None, "id": subs[0], **v} for subs, v in self.store.db_audit.range((), lo, hi))
        return sorted(out, key=lambda a: str(a["id"]))


@dataclass(frozen=True)
class ErasureReport:
    """What an erasure removed: how many episodes, and their ids (content is gone)."""

    count: int
    ids: list[str]
    audit_id: str | None = None  # the audit record written, if any


def _closed_bursts(
    key: str, events: Sequence[tuple[dt.datetime, str, dict[str, Any]]], window: dt.timedelta, limit: int, now: dt.datetime
) -> list[tuple[dt.datetime, list[str]]]:
    """Greedy burst windows: from each unsummarized event, the events within ``window``; a
    closed window with more than ``limit`` events is a burst and its events are consumed."""
    events = sorted(events, key=lambda e: (e[0], e[1]))
    out = []
    i = 0
    while i < len(events):
        if key.startswith("day:"):  # without a session: the owner's UTC day is the window
            start = dt.datetime.combine(events[i][0].date(), dt.time(0), tzinfo=dt.UTC)
            end = start + dt.timedelta(days=1)
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
