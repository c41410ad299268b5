"""The scheduler's job logic: which period is due, one scheduler per database, one run per period.

``memdb serve`` runs maintain and reflection once a day and decay once a week at configured local
times (the database's ``timezone`` setting, weeks starting on ``week_starts_on``), and closes idle
sessions every few minutes. This module knows nothing of what a job does: a ``Job`` is a name, a
cadence and a callable; the surfaces wire in ``db.maintain`` and the others.

Rules (tests/governance/test_schedule.py pins each):

- A period is a local day (key ``2026-07-01``), a week (its first day), or an interval of
  minutes (its start in UTC). It is due from its local time on: a time that a DST change skips
  is the instant the clocks jump over it, a time it repeats is its first occurrence.
- A job runs at most once per period, across processes and restarts: the run is claimed (a
  record written) in the transaction that checks the lock, before the job starts. A run that
  died midway stays claimed and is shown as interrupted; it is never run a second time.
- After downtime only the latest due period runs; the periods missed are counted in its record.
- A failed run keeps memdb's error message (sanitized by design) or, for any other exception,
  only its type: the details go to stderr. The latest ``KEEP_RUNS`` runs of each job are kept.
- One scheduler per database: a lease in the database (``^SCHED("lock")``), taken and renewed in
  a write transaction, which serializes processes. Another process takes over only once the
  holder's lease has run out.

Layout::

    ^SCHED("lock") = {"holder", "until", "since"}
    ^SCHED("run", job, period) = {"status", "due", "started", "finished", "holder", "missed", "report"}
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import socket
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from zoneinfo import ZoneInfo

from memdb.errors import ConfigError, MemdbError
from memdb.memory.episodes import Episodes

__all__ = ["LEASE", "Job", "Run", "Scheduler", "due_period", "parse_time"]

LEASE = dt.timedelta(minutes=10)  # a holder that stops ticking for this long loses the lock
REPORT_CHARS = 4000  # a run's report is kept up to this many characters
KEEP_RUNS = 500  # run records kept per job: about five days of a 15-minute job, ten years of a daily one
Cadence = Literal["day", "week", "minutes"]


def parse_time(text: str, what: str) -> dt.time:
    """``HH:MM`` (24 h) as a time; ConfigError naming ``what`` otherwise."""
    try:
        hours, minutes = text.split(":")
        if len(hours) != 2 or len(minutes) != 2:
            raise ValueError
        return dt.time(int(hours), int(minutes))
    except (ValueError, AttributeError):
        raise ConfigError(f'{what} {text!r}: expected a local time HH:MM, e.g. "03:00"') from None


@dataclass(frozen=True)
class Job:
    """A scheduled job: ``run(now)`` does the work and returns its report as text.

    ``at`` is the local time of a daily or weekly job; ``minutes`` the length of an interval job's period.
    """

    name: str
    cadence: Cadence
    run: Callable[[dt.datetime], str]
    at: dt.time = dt.time(3, 0)
    minutes: int = 15

    def __post_init__(self) -> None:
        if self.cadence not in ("day", "week", "minutes"):
            raise ConfigError(f"job {self.name!r}: cadence {self.cadence!r} (day, week or minutes)")
        if self.cadence == "minutes" and not 1 <= self.minutes <= 24 * 60:
            raise ConfigError(f"job {self.name!r}: every {self.minutes!r} minutes (1 to 1440)")


@dataclass(frozen=True)
class Run:
    """One run of a job for one period, as recorded in the database."""

    job: str
    period: str
    status: Literal["running", "ok", "failed", "interrupted"]
    due: dt.datetime
    started: dt.datetime
    finished: dt.datetime | None
    holder: str
    missed: int
    report: str


def _local_due(day: dt.date, at: dt.time, zone: ZoneInfo) -> dt.datetime:
    """The UTC instant of local ``day`` at ``at``: a repeated time is its first occurrence (fold 0),
    a skipped one the instant the clocks jump over it (fold 0 alone would read it with the offset
    from before the change: 02:30 skipped in Berlin would be 01:30 UTC, half an hour after the
    jump at 01:00; test_a_skipped_or_repeated_local_time_is_due_once)."""
    wall = dt.datetime.combine(day, at)
    first = wall.replace(tzinfo=zone).astimezone(dt.UTC)
    if first.astimezone(zone).replace(tzinfo=None) == wall:
        return first  # the time exists (once, or twice: fold 0 is its first occurrence)
    # skipped: the clocks jump somewhere between reading the time with the later offset (fold 1)
    # and with the earlier one (fold 0); tz transitions fall on whole seconds, so search by seconds
    lo = wall.replace(tzinfo=zone, fold=1).astimezone(dt.UTC)
    hi = first
    before = lo.astimezone(zone).utcoffset()
    while hi - lo > dt.timedelta(seconds=1):
        mid = lo + dt.timedelta(seconds=(hi - lo).total_seconds() // 2)
        if mid.astimezone(zone).utcoffset() == before:
            lo = mid
        else:
            hi = mid
    return hi  # the first instant with the offset after the change


def due_period(job: Job, now: dt.datetime, zone: ZoneInfo, week_starts_on: int = 0) -> tuple[str, dt.datetime, int]:
    """The latest period of ``job`` due at ``now``: its key, when it became due (UTC), and its
    ordinal (days, weeks or intervals since an epoch, so missed periods are a difference)."""
    if job.cadence == "minutes":
        step = job.minutes * 60
        n = int(now.timestamp()) // step
        start = dt.datetime.fromtimestamp(n * step, dt.UTC)
        return start.strftime("%Y-%m-%dT%H:%MZ"), start, n
    day = now.astimezone(zone).date()
    if job.cadence == "week":
        day -= dt.timedelta(days=(day.weekday() - week_starts_on) % 7)
    step_days = 7 if job.cadence == "week" else 1
    due = _local_due(day, job.at, zone)
    if due > now:
        day -= dt.timedelta(days=step_days)
        due = _local_due(day, job.at, zone)
    return day.isoformat(), due, day.toordinal() // step_days


def _ordinal(job: Job, period: str) -> int:
    if job.cadence == "minutes":
        start = dt.datetime.strptime(period, "%Y-%m-%dT%H:%MZ").replace(tzinfo=dt.UTC)
        return int(start.timestamp()) // (job.minutes * 60)
    return dt.date.fromisoformat(period).toordinal() // (7 if job.cadence == "week" else 1)


class Scheduler:
    """Runs due jobs for one database; any number may exist across processes, one holds the lock."""

    def __init__(self, episodes: Episodes, jobs: Sequence[Job], *, holder: str | None = None, lease: dt.timedelta = LEASE) -> None:
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise ConfigError(f"scheduler: job names repeat ({', '.join(names)})")
        self.episodes = episodes
        self.jobs = list(jobs)
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease = lease
        self.g = episodes.space["SCHED"]

    def now(self) -> dt.datetime:
        return self.episodes.now()

    # --- the lock ------------------------------------------------------------------------------

    def acquire(self, now: dt.datetime | None = None) -> bool:
        """Take or renew the lease; False while another holder's lease runs."""
        at = now or self.now()
        with self.episodes.space.transaction():
            return self._hold(at)

    def _hold(self, at: dt.datetime) -> bool:
        """In a write transaction: whether this scheduler holds the lease (renewed) at ``at``."""
        lock = self.g.get(("lock",))
        if lock is not None and lock["holder"] != self.holder and lock["until"] > at:
            return False
        since = lock["since"] if lock is not None and lock["holder"] == self.holder else at
        self.g.set(("lock",), {"holder": self.holder, "until": at + self.lease, "since": since})
        return True

    def release(self) -> None:
        """Give the lease up (on shutdown), so another process need not wait for it to run out."""
        with self.episodes.space.transaction():
            lock = self.g.get(("lock",))
            if lock is not None and lock["holder"] == self.holder:
                self.g.kill(("lock",))

    def lock(self) -> dict[str, Any] | None:
        """The current lease: holder, until, since (None when nobody holds one)."""
        value = self.g.get(("lock",))
        return dict(value) if value is not None else None

    # --- running -------------------------------------------------------------------------------

    def tick(self, now: dt.datetime | None = None) -> list[Run]:
        """Run every job whose latest due period has no run yet; returns the runs made (none when
        another scheduler holds the lock). Each job's failure is recorded, never raised."""
        out: list[Run] = []
        for job in self.jobs:
            at = now or self.now()
            claimed = self._claim(job, at)
            if claimed is False:  # another scheduler holds the lease: it runs the jobs
                return out
            if claimed is None:
                continue
            period, record = claimed
            try:
                report, status = job.run(at), "ok"
            except MemdbError as exc:  # memdb's messages show values only sanitized: kept
                report, status = f"{type(exc).__name__}: {exc}", "failed"
            except Exception as exc:  # a bug must not stop the other jobs, nor the server
                # its message may hold data: the type is kept, and stderr gets where it was raised
                # (the frames, never the message: a log line carries no episode text or PII)
                print(f"memdb scheduler: job {job.name}: unexpected {type(exc).__name__}", file=sys.stderr)
                sys.stderr.write("".join(traceback.format_tb(exc.__traceback__)))
                report, status = f"{type(exc).__name__} (unexpected; the server's log has the details)", "failed"
            finished = now or self.now()
            record = {**record, "status": status, "finished": finished, "report": report[:REPORT_CHARS]}
            with self.episodes.space.transaction():
                self.g.set(("run", job.name, period), record)
                self._prune(job.name)
            out.append(self._run(job.name, period, record))
        return out

    def _prune(self, job: str) -> None:
        """Keep the latest ``KEEP_RUNS`` records of a job (an interval job writes one every few minutes)."""
        extra = self.g.count(("run", job)) - KEEP_RUNS
        for _ in range(max(extra, 0)):
            oldest = self.g.order(("run", job, ""))
            if oldest is None:
                break
            self.g.kill(("run", job, oldest))

    def _claim(self, job: Job, at: dt.datetime) -> tuple[str, dict[str, Any]] | Literal[False] | None:
        """In one transaction: hold the lease and, if the due period has no run, write it as running
        (False: another holder has the lease; None: this period ran or is running)."""
        zone = ZoneInfo(self.episodes.settings.timezone)
        period, due, ordinal = due_period(job, at, zone, self.episodes.settings.week_starts_on)
        with self.episodes.space.transaction():
            if not self._hold(at):
                return False
            if self.g.data(("run", job.name, period)):
                return None
            last = self.g.order(("run", job.name, ""), reverse=True)
            missed = max(ordinal - _ordinal(job, str(last)) - 1, 0) if last is not None else 0
            record = {
                "status": "running", "due": due, "started": at, "finished": None, "holder": self.holder, "missed": missed, "report": "",
            }  # fmt: skip
            self.g.set(("run", job.name, period), record)
        return period, record

    def _run(self, job: str, period: str, record: dict[str, Any]) -> Run:
        status = record["status"]
        if status == "running":
            lock = self.lock()
            if lock is None or lock["holder"] != record["holder"]:  # its holder is gone: it will never finish
                status = "interrupted"
        return Run(
            job, period, status, record["due"], record["started"], record.get("finished"), record["holder"],
            int(record.get("missed", 0)), str(record.get("report", "")),
        )  # fmt: skip

    def runs(self, job: str | None = None, limit: int = 20) -> list[Run]:
        """Recorded runs, newest period first (of one job, or of each job), at most ``limit`` per job."""
        names: Iterable[str] = [job] if job is not None else [str(n) for n in self.g.children(("run",))]
        out: list[Run] = []
        for name in names:
            for i, (subs, record) in enumerate(self.g.items(("run", name), reverse=True)):
                if i >= limit:
                    break
                out.append(self._run(name, str(subs[2]), record))
        return sorted(out, key=lambda r: r.started, reverse=True)
