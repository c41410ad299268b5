"""``latest_agenda``: the last ceremony agenda as it stands now, read without starting a new one."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.errors import ValidationError
from memdb.governance.knowledge import Agenda, Entry

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


def _on_agendas(db: memdb.Database, entry_id: str) -> list[str]:
    """The kept agendas (``^KNC``) whose stored value names ``entry_id``, items or carried over."""
    return [f"^KNC{subs}" for subs, agenda in db.globals["KNC"].items(()) if entry_id in repr(agenda)]


@pytest.mark.parametrize("how", ["sources", "everything"])
def test_an_erasure_takes_the_lesson_off_every_agenda(tmp_path: Path, how: str) -> None:
    """An agenda kept the ids of the lessons on it, an erased one's too: an id is the time its
    owner saved the lesson, and an erasure takes what was derived (a lesson reflected from the
    erased episodes) or what the owner wrote. The others' items stay as they were, carried over."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "k", clock=clock) as db:
        db.configure(teams={"platform": ["ana", "bo"], "solo": ["ana"]})
        ana = db.owner("ana")
        for i in range(2):
            call = ana.record_tool_call(f"s-{i}", "search", {"q": i})
            ana.record_tool_result(call.id, "timeout")
            clock.advance(minutes=1)
        assert db.reflect().stored == 1
        (lesson,) = db.review_queue()
        assert lesson.cites  # derived from the failed calls
        kept = db.owner("bo").save_lesson("Payroll runs need a dry run the day before")
        db.approve([lesson.id, kept.id], by="lead")
        db.ceremony("platform")
        db.ceremony("solo")
        clock.advance(days=7)
        second = db.ceremony("platform")  # both carried over
        assert [(i.entry.id, i.carried_over) for i in second.items] == [(lesson.id, True), (kept.id, True)]
        assert len(_on_agendas(db, lesson.id)) == 3
        solo = db.latest_agenda("solo")
        if how == "sources":
            ana.erase(list(lesson.cites), reason="deletion request")
        else:
            ana.erase(everything=True, reason="deletion request")
        assert db.entry(lesson.id).status == "erased" and _on_agendas(db, lesson.id) == []
        latest = db.latest_agenda("platform")
        assert latest is not None and latest.id == second.id
        assert [(i.entry.id, i.carried_over) for i in latest.items] == [(kept.id, True)]
        # an agenda left empty says what it said once its item was erased: no items
        assert solo is not None and db.latest_agenda("solo") == Agenda(solo.id, "solo", solo.at, [])
        assert [(i.entry.id, i.carried_over) for i in db.ceremony("platform").items] == [(kept.id, True)]
        assert db.check().ok


def _two_lessons_one_erased(db: memdb.Database) -> tuple[Entry, Entry, Agenda]:
    """Ana's and Bo's lessons approved and on the platform team's agenda, then Ana's erased (by tag)."""
    db.configure(teams={"platform": ["ana", "bo"]})
    a = db.owner("ana").save_lesson("Write the rollback step first", tags=["deploys"])
    b = db.owner("bo").save_lesson("Payroll runs need a dry run the day before")
    db.approve([a.id, b.id], by="lead")
    agenda = db.ceremony("platform")
    db.owner("ana").erase(tags=["deploys"], reason="forget deploys")
    return a, b, agenda


@pytest.mark.parametrize("request_", ["everything", "owner"])
def test_a_request_for_everything_takes_what_an_older_erasure_left_on_the_agendas(tmp_path: Path, request_: str) -> None:
    """Erasures before this one left erased lessons' ids on the agendas: a request for
    everything (or for the owner itself) takes those too, its entries erased already or not."""
    with memdb.open(tmp_path / "k", clock=lambda: NOW) as db:
        a, b, agenda = _two_lessons_one_erased(db)
        assert _on_agendas(db, a.id) == []
        db.globals["KNC"]["platform", agenda.id] = {"at": NOW, "items": [a.id, b.id], "carried": []}  # as they were kept
        if request_ == "owner":
            db.erase_owner("ana", reason="account deleted")
        else:
            db.owner("ana").erase(everything=True, reason="deletion request")
        assert _on_agendas(db, a.id) == [] and _on_agendas(db, b.id) == [f"^KNC('platform', {agenda.id!r})"]


def test_an_older_database_has_the_ids_its_erasures_left_taken_off_its_agendas_once_at_open(tmp_path: Path) -> None:
    """An erased lesson's id an older memdb left on an agenda goes at the next open, with no
    request of its owner (revF); a live lesson's stays, and the tidy runs once."""
    with memdb.open(tmp_path / "k", clock=lambda: NOW) as db:
        a, b, agenda = _two_lessons_one_erased(db)
        # as an older memdb left them: the erased id on the agenda, and no mark of a tidy
        db.globals["KNC"]["platform", agenda.id] = {"at": NOW, "items": [a.id, b.id], "carried": [a.id]}
        db.globals["KNM"].kill(("agendas tidied",))
    with memdb.open(tmp_path / "k", clock=lambda: NOW) as db:
        assert _on_agendas(db, a.id) == [] and _on_agendas(db, b.id) == [f"^KNC('platform', {agenda.id!r})"]
        assert db.globals["KNC"]["platform", agenda.id]["carried"] == []
        assert db.knowledge.tidy_agendas() == 0 and db.check().ok
