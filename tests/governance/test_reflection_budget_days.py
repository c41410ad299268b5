"""Reflection's lessons_per_day counts the database's local days, as the scheduler runs it, and a
run whose day's budget is spent says so."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Sequence
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.governance.reflection import Proposal
from memdb.memory.ids import ts_micros
from memdb.memory.models import Episode

pytestmark = pytest.mark.usefixtures("backend")  # ^KNR's bookings and their range counts on both backends

UTC = dt.UTC


class Fresh:
    """Proposes ``n`` lessons never seen before at every call, citing the first episode."""

    def __init__(self, n: int = 3) -> None:
        self.n, self.count = n, itertools.count()

    def reflect(self, owner: str, episodes: Sequence[Episode], max_lessons: int) -> list[Proposal]:
        words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]
        return [
            Proposal(f"Lesson {words[(k := next(self.count)) % 12]} {words[k // 12 % 12]} number {k}", (episodes[0].id,))
            for _ in range(self.n)
        ]


def opened(tmp_path: Path, now: dt.datetime, zone: str) -> tuple[memdb.Database, Clock]:
    clock = Clock(now)
    db = memdb.open(tmp_path / "b", clock=clock)
    db.configure(timezone=zone, lessons_per_day=1)
    db.owner("ana").record("debug", "deploy broke", outcome="failure", ts=now - dt.timedelta(hours=2))
    return db, clock


def test_the_budget_counts_local_days(tmp_path: Path) -> None:
    """London's 00:30 run in summer time (23:30 UTC the day before) was booked to the UTC day the
    night before had spent: it stored nothing."""
    db, clock = opened(tmp_path, dt.datetime(2026, 3, 29, 0, 31, tzinfo=UTC), "Europe/London")
    with db:
        assert db.reflect(reflector=Fresh()).stored == 1  # local 2026-03-29 00:31 GMT
        clock.now = dt.datetime(2026, 3, 29, 23, 31, tzinfo=UTC)  # local 2026-03-30 00:31 BST
        report = db.reflect(reflector=Fresh())
        assert report.day == "2026-03-30" and report.stored == 1
        # spent() takes a time, not the private day it is read into; now's local day by default
        assert db.reflection.spent("ana") == 1 and db.reflection.spent("ana", dt.datetime(2026, 3, 29, 12, 0, tzinfo=UTC)) == 1
        assert db.reflection.spent("ana", dt.datetime(2026, 3, 31, 12, 0, tzinfo=UTC)) == 0


def test_two_runs_in_one_local_day_share_its_budget(tmp_path: Path) -> None:
    """In Tokyo, 08:30 and 09:30 local are two UTC days: they got two days' budget."""
    db, clock = opened(tmp_path, dt.datetime(2026, 6, 2, 23, 30, tzinfo=UTC), "Asia/Tokyo")
    with db:
        assert db.reflect(reflector=Fresh()).stored == 1
        clock.now = dt.datetime(2026, 6, 3, 0, 30, tzinfo=UTC)
        report = db.reflect(reflector=Fresh())
        assert report.stored == 0 and report.budget_spent == ["ana"]
        assert "the day's budget (2026-06-03) was already spent for ana" in str(report)


def test_a_utc_day_count_an_older_memdb_kept_still_counts(tmp_path: Path) -> None:
    """A run before the upgrade booked ^KNR(owner, day): the same day's run after it must not
    store a second day's allowance."""
    db, _ = opened(tmp_path, dt.datetime(2026, 6, 3, 12, 0, tzinfo=UTC), "UTC")
    with db:
        db.reflection.budget.set(("ana", "2026-06-03"), 1)
        report = db.reflect(reflector=Fresh())
        assert report.stored == 0 and report.owners["ana"].spent and report.owners["ana"].budget_left == 0


def reopened(tmp_path: Path, clock: Clock, zone: str) -> memdb.Database:
    """The database again after another process set ``timezone`` to ``zone``."""
    with memdb.open(tmp_path / "b", clock=clock) as other:
        other.configure(timezone=zone)
    return memdb.open(tmp_path / "b", clock=clock)


def test_a_zone_change_neither_doubles_nor_loses_the_budget(tmp_path: Path) -> None:
    """A review's find: the budget was a count per day label, so a run after the zone changed
    read another label. UTC to Honolulu an hour later was a fresh day (2026-06-02 there) and
    stored a second day's lessons; Tokyo to Honolulu found "2026-06-04" spent by a run 19 hours
    before that local day began, and stored nothing. A run counts what was stored within its
    local day, in the zone it reads now."""
    db, clock = opened(tmp_path, dt.datetime(2026, 6, 3, 5, 0, tzinfo=UTC), "UTC")
    with db:
        assert db.reflect(reflector=Fresh()).stored == 1
    clock.now = dt.datetime(2026, 6, 3, 6, 0, tzinfo=UTC)  # 2026-06-02 20:00 in Honolulu: that day holds 05:00 UTC
    with reopened(tmp_path, clock, "Pacific/Honolulu") as db:
        report = db.reflect(reflector=Fresh())
        assert (report.day, report.stored, report.budget_spent) == ("2026-06-02", 0, ["ana"])
    tokyo, clock = opened(tmp_path / "t", dt.datetime(2026, 6, 3, 16, 0, tzinfo=UTC), "Asia/Tokyo")  # 2026-06-04 01:00 JST
    with tokyo:
        assert tokyo.reflect(reflector=Fresh()).stored == 1
    clock.now = dt.datetime(2026, 6, 4, 11, 0, tzinfo=UTC)  # 2026-06-04 01:00 in Honolulu, a day that began at 10:00 UTC
    with reopened(tmp_path / "t", clock, "Pacific/Honolulu") as db:
        db.owner("ana").record("debug", "deploy broke again", outcome="failure", ts=clock.now - dt.timedelta(hours=1))
        report = db.reflect(reflector=Fresh())
        assert (report.day, report.stored) == ("2026-06-04", 1)


def test_a_local_day_count_an_older_memdb_kept_still_counts(tmp_path: Path) -> None:
    """^KNR(owner, "lessons", day), as the version before kept the budget, counts for its day."""
    db, _ = opened(tmp_path, dt.datetime(2026, 6, 3, 12, 0, tzinfo=UTC), "Asia/Tokyo")
    with db:
        db.reflection.budget.set(("ana", "lessons", "2026-06-03"), 1)
        report = db.reflect(reflector=Fresh())
        assert report.stored == 0 and report.owners["ana"].spent


def test_bookings_older_than_a_week_go(tmp_path: Path) -> None:
    """Each store is booked at its time; what no local day still holds is let go as the next is booked."""
    db, clock = opened(tmp_path, dt.datetime(2026, 6, 3, 12, 0, tzinfo=UTC), "UTC")
    with db:
        for _ in range(3):
            db.owner("ana").record("debug", "deploy broke", outcome="failure", ts=clock.now - dt.timedelta(hours=1))
            assert db.reflect(reflector=Fresh()).stored == 1
            clock.advance(days=4)
        assert [subs[2] for subs, _ in db.reflection.budget.items(("ana", "stored"))] == [
            ts_micros(dt.datetime(2026, 6, d, 12, 0, tzinfo=UTC)) for d in (7, 11)
        ]
