"""Sharing a lesson the team already reads from another owner is refused, naming the other: both
shared, every member read the same lesson twice, each costing prompt room."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.errors import DuplicateError

pytestmark = pytest.mark.usefixtures("backend")  # the shared-copy checks, `all` included, on both backends

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def tdb(tmp_path: Path) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "t", clock=Clock(T0))
    db.configure(teams={"platform": ["ana", "bo", "cy"], "data": ["bo", "dee"]})
    yield db
    db.close()


def test_sharing_what_the_team_already_reads_is_refused(tdb: memdb.Database) -> None:
    a = tdb.owner("ana").save_lesson("Run database migrations before the deploy window opens")
    b = tdb.owner("bo").save_lesson("Run the database migrations before the deploy window opens")
    tdb.approve([a.id, b.id], by="lead")  # private lessons are their owners': both may be approved
    tdb.decide({a.id: "share"}, by="ana")
    with pytest.raises(DuplicateError, match=rf"nearly repeats entry '{a.id}' of 'ana', already shared with team 'platform'"):
        tdb.decide({b.id: "share"}, by="bo")
    assert tdb.knowledge.get(b.id).visibility == "private"  # nothing decided
    assert [e.owner for e in tdb.owner("cy").knowledge()] == ["ana"]
    # a team that does not read ana's may have bo's
    (shared,) = tdb.decide({b.id: "share"}, by="bo", team="data")
    assert shared.shared_with == ("data",) and [e.owner for e in tdb.owner("dee").knowledge()] == ["bo"]


def test_a_quarantined_copy_does_not_stop_sharing(tdb: memdb.Database) -> None:
    a = tdb.owner("ana").save_lesson("Run database migrations before the deploy window opens")
    b = tdb.owner("bo").save_lesson("Run the database migrations before the deploy window opens")
    tdb.approve([a.id, b.id], by="lead")
    tdb.decide({a.id: "share"}, by="ana", team="platform")
    tdb.quarantine(a.id, by="lead", reason="wrong for the new pipeline")
    tdb.decide({b.id: "share"}, by="bo", team="platform")
    assert [e.owner for e in tdb.owner("cy").knowledge()] == ["bo"]


def test_a_copy_shared_with_all_is_read_by_the_team_too(tmp_path: Path) -> None:
    """A review's find: ana shared hers with ``all`` before teams were configured, and every
    member of a team still reads it (reading_teams); bo's copy shared with the team was not
    compared with it, so the team read the lesson twice."""
    with memdb.open(tmp_path / "a", clock=Clock(T0)) as db:
        a = db.owner("ana").save_lesson("Run database migrations before the deploy window opens")
        b = db.owner("bo").save_lesson("Run the database migrations before the deploy window opens")
        db.approve([a.id, b.id], by="lead")
        db.decide({a.id: "share"}, by="ana")  # no teams yet: shared with "all"
        db.configure(teams={"platform": ["ana", "bo", "cy"], "data": ["dee"]})
        with pytest.raises(
            DuplicateError, match=rf"repeats entry '{a.id}' of 'ana', already shared with 'all', which team 'platform' reads"
        ):
            db.decide({b.id: "share"}, by="bo", team="platform")
        assert db.knowledge.get(b.id).visibility == "private"
        assert [e.owner for e in db.owner("cy").knowledge()] == ["ana"]
        db.quarantine(a.id, by="lead", reason="wrong for the new pipeline")  # read by no one: it blocks nothing
        db.decide({b.id: "share"}, by="bo", team="platform")
        assert [e.owner for e in db.owner("cy").knowledge()] == ["bo"]


def test_a_team_named_all_is_only_its_members(tmp_path: Path) -> None:
    """Where ``all`` is a configured team, it is read by its own members only: a copy shared
    with it does not stop another team from having the lesson."""
    with memdb.open(tmp_path / "b", clock=Clock(T0)) as db:
        db.configure(teams={"all": ["ana"], "platform": ["bo", "cy"]})
        a = db.owner("ana").save_lesson("Run database migrations before the deploy window opens")
        b = db.owner("bo").save_lesson("Run the database migrations before the deploy window opens")
        db.approve([a.id, b.id], by="lead")
        db.decide({a.id: "share"}, by="ana", team="all")
        (shared,) = db.decide({b.id: "share"}, by="bo", team="platform")
        assert shared.shared_with == ("platform",) and [e.owner for e in db.owner("cy").knowledge()] == ["bo"]
