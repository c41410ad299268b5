"""The scheduler: periods in the database's timezone (DST included), one run per period across
restarts and processes, catch-up after downtime, the lease. The clock moves only when a test moves it."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from clocks import Clock

import memdb
from memdb.errors import ConfigError
from memdb.governance.schedule import LEASE, Job, Scheduler, due_period, parse_time

pytestmark = pytest.mark.usefixtures("backend")

UTC = dt.UTC
BERLIN = ZoneInfo("Europe/Berlin")
T0 = dt.datetime(2026, 3, 26, 0, 0, tzinfo=UTC)  # a Thursday; Berlin moves to summer time on Sunday 2026-03-29


class Calls:
    """A job body that remembers when it ran."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.at: list[dt.datetime] = []

    def __call__(self, now: dt.datetime) -> str:
        self.at.append(now)
        return f"{self.name} ran at {now:%Y-%m-%d %H:%M}"


@pytest.fixture
def sdb(tmp_path: Path) -> Iterator[tuple[memdb.Database, Clock]]:
    clock = Clock(T0)
    db = memdb.open(tmp_path / "s", clock=clock)
    db.configure(timezone="Europe/Berlin")
    yield db, clock
    db.close()


def tick_every(s: Scheduler, clock: Clock, *, hours: float, until: dt.datetime) -> None:
    while clock.now < until:
        s.tick()
        clock.advance(hours=hours)


def test_a_daily_job_runs_once_each_local_day_across_a_dst_change(sdb: tuple[memdb.Database, Clock]) -> None:
    db, clock = sdb
    calls = Calls("maintain")
    s = Scheduler(db.episodes, [Job("maintain", "day", calls, at=dt.time(3, 0))])
    tick_every(s, clock, hours=0.25, until=T0 + dt.timedelta(days=5))
    # 03:00 in Berlin is 02:00 UTC in winter, 01:00 UTC from Sunday on; the first tick after it runs the day
    assert calls.at == [
        T0,  # the first tick (01:00 in Berlin): yesterday's 03:00 was due and had no run
        dt.datetime(2026, 3, 26, 2, 0, tzinfo=UTC),
        dt.datetime(2026, 3, 27, 2, 0, tzinfo=UTC),
        dt.datetime(2026, 3, 28, 2, 0, tzinfo=UTC),
        dt.datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
        dt.datetime(2026, 3, 30, 1, 0, tzinfo=UTC),
    ]
    periods = ["2026-03-30", "2026-03-29", "2026-03-28", "2026-03-27", "2026-03-26", "2026-03-25"]
    assert [r.period for r in s.runs("maintain")] == periods


def test_the_first_tick_runs_the_period_already_due(sdb: tuple[memdb.Database, Clock]) -> None:
    db, clock = sdb
    clock.now = dt.datetime(2026, 3, 26, 12, 0, tzinfo=UTC)
    calls = Calls("reflect")
    s = Scheduler(db.episodes, [Job("reflect", "day", calls, at=dt.time(3, 30))])
    [run] = s.tick()
    assert (run.period, run.status, run.missed, run.due) == ("2026-03-26", "ok", 0, dt.datetime(2026, 3, 26, 2, 30, tzinfo=UTC))
    assert run.report == "reflect ran at 2026-03-26 12:00"
    assert s.tick() == [] and len(calls.at) == 1


def test_a_skipped_or_repeated_local_time_is_due_once() -> None:
    job = Job("j", "day", Calls("j"), at=dt.time(2, 30))
    # spring forward: 02:30 does not exist on 2026-03-29 in Berlin (02:00 CET becomes 03:00 CEST); it is
    # due when the clocks jump, 01:00 UTC (read with the winter offset it would be 01:30 UTC, 03:30 CEST)
    assert due_period(job, dt.datetime(2026, 3, 29, 0, 59, 59, tzinfo=UTC), BERLIN)[0] == "2026-03-28"
    assert due_period(job, dt.datetime(2026, 3, 29, 1, 0, tzinfo=UTC), BERLIN)[:2] == (
        "2026-03-29", dt.datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
    )  # fmt: skip
    # a zone that jumps half an hour (Lord Howe: 02:00 +10:30 becomes 02:30 +11) at 15:30 UTC the day before
    lord_howe = ZoneInfo("Australia/Lord_Howe")
    at_215 = Job("j", "day", Calls("j"), at=dt.time(2, 15))
    assert due_period(at_215, dt.datetime(2026, 10, 3, 15, 29, 59, tzinfo=UTC), lord_howe)[0] == "2026-10-03"
    assert due_period(at_215, dt.datetime(2026, 10, 3, 15, 30, tzinfo=UTC), lord_howe)[:2] == (
        "2026-10-04", dt.datetime(2026, 10, 3, 15, 30, tzinfo=UTC),
    )  # fmt: skip
    # fall back: 02:30 happens twice on 2026-10-25; the first (summer time, 00:30 UTC) counts, the second is the same day
    assert due_period(job, dt.datetime(2026, 10, 25, 0, 29, 59, tzinfo=UTC), BERLIN)[0] == "2026-10-24"
    assert due_period(job, dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC), BERLIN)[:2] == (
        "2026-10-25", dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
    )  # fmt: skip
    assert due_period(job, dt.datetime(2026, 10, 25, 1, 30, tzinfo=UTC), BERLIN)[0] == "2026-10-25"
    # the local day, not the UTC one: 23:30 UTC on the 24th is already the 25th in Berlin
    late = Job("late", "day", Calls("late"), at=dt.time(0, 15))
    assert due_period(late, dt.datetime(2026, 10, 24, 22, 30, tzinfo=UTC), BERLIN)[0] == "2026-10-25"


def test_fall_back_day_runs_once(sdb: tuple[memdb.Database, Clock]) -> None:
    db, clock = sdb
    clock.now = dt.datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    calls = Calls("maintain")
    s = Scheduler(db.episodes, [Job("maintain", "day", calls, at=dt.time(2, 30))])
    tick_every(s, clock, hours=0.25, until=dt.datetime(2026, 10, 26, 12, 0, tzinfo=UTC))
    assert calls.at == [
        dt.datetime(2026, 10, 24, 12, 0, tzinfo=UTC),  # catch-up of the 24th
        dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # the first 02:30, summer time
        dt.datetime(2026, 10, 26, 1, 30, tzinfo=UTC),  # winter time
    ]


def test_a_weekly_job_runs_once_a_week_on_the_configured_first_day(sdb: tuple[memdb.Database, Clock]) -> None:
    db, clock = sdb
    db.configure(week_starts_on=0)  # Monday
    calls = Calls("decay")
    s = Scheduler(db.episodes, [Job("decay", "week", calls, at=dt.time(4, 0))])
    tick_every(s, clock, hours=1, until=T0 + dt.timedelta(days=21))
    # Monday 04:00 Berlin: 2026-03-23 (catch-up, before the first tick), then 03-30, 04-06, 04-13 (summer time: 02:00 UTC)
    assert calls.at == [
        T0,
        dt.datetime(2026, 3, 30, 2, 0, tzinfo=UTC),
        dt.datetime(2026, 4, 6, 2, 0, tzinfo=UTC),
        dt.datetime(2026, 4, 13, 2, 0, tzinfo=UTC),
    ]
    assert [r.period for r in s.runs("decay")] == ["2026-04-13", "2026-04-06", "2026-03-30", "2026-03-23"]


def test_an_interval_job_runs_once_per_interval(sdb: tuple[memdb.Database, Clock]) -> None:
    db, clock = sdb
    calls = Calls("idle")
    s = Scheduler(db.episodes, [Job("idle", "minutes", calls, minutes=15)])
    tick_every(s, clock, hours=0.1, until=T0 + dt.timedelta(hours=1))  # ticks at :00, :06, :12, :18, ...
    assert [f"{t:%H:%M}" for t in calls.at] == ["00:00", "00:18", "00:30", "00:48"]


def test_after_downtime_only_the_latest_period_runs_and_the_missed_are_counted(tmp_path: Path) -> None:
    clock = Clock(T0)
    path = tmp_path / "down"
    calls = Calls("maintain")
    jobs = [Job("maintain", "day", calls, at=dt.time(3, 0))]
    with memdb.open(path, clock=clock) as db:
        db.configure(timezone="Europe/Berlin")
        first = Scheduler(db.episodes, jobs)
        assert [r.period for r in first.tick()] == ["2026-03-25"]
        first.release()
    clock.advance(days=4, hours=5)  # the server was down for four days
    with memdb.open(path, clock=clock) as db:  # a new process: the record in the database is what counts
        again = Scheduler(db.episodes, jobs)
        [run] = again.tick()
        assert (run.period, run.missed) == ("2026-03-30", 4)  # 03-26 to 03-29 never ran
        assert again.tick() == []
        again2 = Scheduler(db.episodes, jobs)  # a restart in the same period runs nothing again
        assert again2.tick() == []
    assert len(calls.at) == 2


def test_one_scheduler_holds_the_lease_until_it_lapses_or_is_released(sdb: tuple[memdb.Database, Clock]) -> None:
    db, clock = sdb
    a_calls, b_calls = Calls("a"), Calls("b")
    a = Scheduler(db.episodes, [Job("maintain", "minutes", a_calls, minutes=5)], holder="a")
    b = Scheduler(db.episodes, [Job("maintain", "minutes", b_calls, minutes=5)], holder="b")
    assert len(a.tick()) == 1
    clock.advance(minutes=5)  # a new period, within a's lease (10 minutes)
    assert b.tick() == [] and not b.acquire()  # a's lease runs
    assert len(a.tick()) == 1  # a renews it as it ticks
    clock.advance(seconds=LEASE.total_seconds() + 1)  # a stopped ticking
    assert len(b.tick()) == 1 and (db.episodes.space["SCHED"].get(("lock",)) or {})["holder"] == "b"
    assert a.tick() == []
    b.release()
    assert a.acquire()
    assert len(a_calls.at) == 2 and len(b_calls.at) == 1


def test_a_failing_job_is_recorded_and_the_others_still_run(sdb: tuple[memdb.Database, Clock], capsys: pytest.CaptureFixture[str]) -> None:
    db, _ = sdb

    def broken(now: dt.datetime) -> str:
        told = " ".join(["disk", "on", "fire"])  # built at run time: the frames show source lines, not values
        raise RuntimeError(told)

    good = Calls("reflect")
    s = Scheduler(db.episodes, [Job("maintain", "day", broken), Job("reflect", "day", good)])
    runs = {r.job: r for r in s.tick()}
    # an unexpected exception's message may hold data: only its type is kept
    assert runs["maintain"].status == "failed" and runs["maintain"].report == "RuntimeError (unexpected; the server's log has the details)"
    assert runs["reflect"].status == "ok" and len(good.at) == 1
    assert s.tick() == []  # a failed period is not retried in a loop: it ran, and its record says how
    err = capsys.readouterr().err
    assert "RuntimeError" in err and "broken" in err and "disk on fire" not in err  # where it was raised, never what it said


def test_a_memdb_error_keeps_its_message_and_old_runs_are_pruned(
    sdb: tuple[memdb.Database, Clock], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, clock = sdb

    def refuses(now: dt.datetime) -> str:
        raise ConfigError("timezone 'Mars/Olympus': not an IANA time zone")

    s = Scheduler(db.episodes, [Job("maintain", "day", refuses), Job("idle", "minutes", Calls("idle"), minutes=1)])
    monkeypatch.setattr("memdb.governance.schedule.KEEP_RUNS", 3)
    for _ in range(5):
        s.tick()
        clock.advance(minutes=1)
    [failed] = s.runs("maintain")
    assert failed.report == "ConfigError: timezone 'Mars/Olympus': not an IANA time zone"
    assert [r.period for r in s.runs("idle")] == ["2026-03-26T00:04Z", "2026-03-26T00:03Z", "2026-03-26T00:02Z"]


def test_a_run_that_died_is_never_run_twice_and_shows_as_interrupted(sdb: tuple[memdb.Database, Clock]) -> None:
    db, clock = sdb

    def dies(now: dt.datetime) -> str:
        raise KeyboardInterrupt  # the process is killed mid-run: nothing after this line of tick runs

    dead = Scheduler(db.episodes, [Job("maintain", "day", dies)], holder="dead")
    with pytest.raises(KeyboardInterrupt):
        dead.tick()
    [run] = dead.runs()
    assert run.status == "running"  # its holder still has the lease: it might be running
    clock.advance(seconds=LEASE.total_seconds() + 1)
    calls = Calls("maintain")
    heir = Scheduler(db.episodes, [Job("maintain", "day", calls)], holder="heir")
    assert heir.tick() == [] and calls.at == []
    assert [(r.period, r.status) for r in heir.runs()] == [("2026-03-25", "interrupted")]


def test_bad_jobs_and_times_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="cadence 'month'"):
        Job("x", "month", Calls("x"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="every 0 minutes"):
        Job("x", "minutes", Calls("x"), minutes=0)
    for bad in ("3:00", "25:00", "03-00", "noon"):
        with pytest.raises(ConfigError, match=f"maintain {bad!r}: expected a local time HH:MM"):
            parse_time(bad, "maintain")
    assert parse_time("03:30", "x") == dt.time(3, 30)


_CONTENDER = textwrap.dedent(
    """
    import datetime as dt, json, sys
    import memdb
    from memdb.governance.schedule import Job, Scheduler
    now = dt.datetime.fromisoformat(sys.argv[2])
    db = memdb.open(sys.argv[1], clock=lambda: now)
    counter = db.globals["T"]
    def job(name):
        def run(at):
            counter.increment((name,), 1)
            return name
        return run
    s = Scheduler(db.episodes, [Job(n, "day", job(n)) for n in ("maintain", "reflect", "decay")])
    sys.stdin.readline()  # both processes start ticking together
    ran = [r.job for _ in range(30) for r in s.tick()]
    print(json.dumps(ran))
    db.close()
    """
)


@pytest.mark.lmdb_only(reason="two processes share one LMDB directory; the PostgreSQL router lives in this process only")
def test_two_processes_contending_run_each_job_once(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    memdb.open(path).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CONTENDER, str(path), T0.isoformat()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parents[2],
        )
        for _ in range(2)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert sorted(outs, key=len) == [[], ["maintain", "reflect", "decay"]]
    with memdb.open(path) as db:
        assert dict(db.globals["T"].items()) == {("maintain",): 1, ("reflect",): 1, ("decay",): 1}
