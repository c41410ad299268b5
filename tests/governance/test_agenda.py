"""``latest_agenda``: the last ceremony agenda as it stands now, read without starting a new one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import memdb
from memdb.errors import ValidationError

pytestmark = pytest.mark.usefixtures("backend")

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)


def test_the_latest_agenda_shows_decisions_and_what_was_carried_over(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "k", clock=lambda: NOW) as db:
        db.configure(teams={"platform": ["ana", "bo"]})
        a = db.owner("ana").save_lesson("Write the rollback step first")
        b = db.owner("bo").save_lesson("Payroll runs need a dry run the day before")
        db.approve([a.id, b.id], by="lead")
        assert db.latest_agenda("platform") is None
        first = db.ceremony("platform")
        latest = db.latest_agenda("platform")
        assert latest is not None and latest.id == first.id and [i.carried_over for i in latest.items] == [False, False]
        db.decide({a.id: "share"}, by="ana", team="platform")
        latest = db.latest_agenda("platform")
        assert latest is not None and [(i.entry.id, i.entry.ceremony) for i in latest.items] == [(a.id, "shared"), (b.id, None)]
        second = db.ceremony("platform")  # bo's lesson was not ruled on: it comes back, marked
        latest = db.latest_agenda("platform")
        assert latest is not None and latest.id == second.id
        assert [(i.entry.id, i.carried_over) for i in latest.items] == [(b.id, True)]
        assert db.latest_agenda("platform").id == second.id  # type: ignore[union-attr]  # reading starts nothing
        with pytest.raises(ValidationError, match="team 'nope': not configured"):
            db.latest_agenda("nope")
