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
