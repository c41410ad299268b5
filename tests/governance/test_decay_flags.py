"""Decay flags as a person meets them: a use withdraws an idle flag, a correction while a lesson
is out of use flags it on restore, `memdb decay` answers all ids or none and lists why each is flagged."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.cli import main as cli_main
from memdb.errors import ValidationError

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)  # a Monday, in the past of the real clock the CLI uses


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def db(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    d = memdb.open(tmp_path / "k", clock=clock)
    d.configure(teams={"platform": ["ana", "bo"]}, decay_idle_days=30)
    yield d
    d.close()


def shared(db: memdb.Database, text: str, cites: list[str] | None = None) -> str:
    entry = db.owner("ana").save_lesson(text, cites=cites or [])
    db.approve(entry.id, by="lead")
    db.decide({entry.id: "share"}, by="ana")
    return entry.id


def test_a_use_after_the_flag_withdraws_it_and_quarantine_says_why(db: memdb.Database, clock: Clock) -> None:
    lid = shared(db, "Rotate the signing keys before the quarterly audit")
    clock.advance(days=35)
    assert [e.id for e in db.decay().flagged] == [lid]
    clock.advance(days=1)
    bo = db.owner("bo")
    assert lid in bo.prepare("rotate signing keys for the quarterly audit").in_block  # a teammate relies on it
    assert db.flagged() == [] and db.entry(lid).flagged_at is None
    with pytest.raises(ValidationError, match=r"not flagged by decay any more: it was put into a prompt on 2026-04-07 .*in use, not idle"):
        db.confirm_decay(lid, "quarantine", by="lead")
    assert db.entry(lid).status == "active" and [e.id for e in bo.knowledge()] == [lid]
    assert [a["use"] for a in db.audit("ana") if a.get("action") == "decay_unflag"] == ["injected"]


def test_a_retrieval_alone_withdraws_an_idle_flag_and_the_idle_clock_restarts(db: memdb.Database, clock: Clock) -> None:
    lid = shared(db, "Pin the compiler version in the CI images")
    clock.advance(days=31)
    db.decay()
    clock.advance(days=1)
    assert [e.id for e in db.owner("bo").knowledge("compiler version")] == [lid]
    assert db.flagged() == []
    clock.advance(days=29)
    assert db.decay().flagged == []  # retrieved 29 days ago: not idle yet
    clock.advance(days=2)
    assert [e.id for e in db.decay().flagged] == [lid]  # idle again: flagged again, and quarantine works
    assert db.confirm_decay(lid, "quarantine", by="lead").status == "quarantined"


def test_a_listing_is_no_use_of_what_it_lists(db: memdb.Database, clock: Clock) -> None:
    """A review's find: opening one's knowledge list (no words, no tags; the MCP tool the same)
    counted as a use of the twenty newest lessons and withdrew every idle flag among them."""
    lid = shared(db, "Pin the compiler version in the CI images")
    clock.advance(days=31)
    db.decay()
    clock.advance(days=1)
    assert [e.id for e in db.owner("bo").knowledge()] == [lid]
    assert [e.id for e in db.flagged()] == [lid] and not [a for a in db.audit("ana") if a.get("action") == "decay_unflag"]


def test_a_use_leaves_a_correction_flag_standing(db: memdb.Database, clock: Clock) -> None:
    ana = db.owner("ana")
    ep = ana.record("debug", "cache flush fixed the outage", outcome="success", lesson="flush the cache first")
    lid = shared(db, "Flush the cache first when the outage starts", cites=[ep.id])
    ana.supersede(ep.id, reason="the flush made it worse", outcome="failure")
    clock.advance(days=1)
    db.owner("bo").prepare("outage cache flush")
    assert [e.id for e in db.flagged()] == [lid]  # the correction still asks a person
    assert db.confirm_decay(lid, "quarantine", by="lead").status == "quarantined"


@pytest.mark.parametrize("out_of_use", ["quarantined", "archived"])
def test_a_correction_while_out_of_use_flags_the_lesson_on_restore(db: memdb.Database, clock: Clock, out_of_use: str) -> None:
    ana = db.owner("ana")
    ep = ana.record("debug", "cache flush fixed the outage", outcome="success", lesson="flush the cache first")
    lid = shared(db, "Flush the cache first when the outage starts", cites=[ep.id])
    if out_of_use == "quarantined":
        db.quarantine(lid, by="lead", reason="checking with ana")
    else:
        db.decide({lid: "archive"}, by="ana")
    assert db.entry(lid).status == out_of_use
    clock.advance(hours=1)
    ana.supersede(ep.id, reason="the flush made it worse; rolled back", outcome="failure")
    assert db.flagged() == []  # nothing to decide while no one reads it
    clock.advance(hours=1)
    back = db.restore_entry(lid, by="lead")
    why = "a record it cites was corrected (outcome success -> failure)"
    assert back.status == "active" and back.flag_reason == why and back.flagged_at == T0 + dt.timedelta(hours=1)
    assert [e.id for e in db.flagged()] == [lid]
    if out_of_use == "quarantined":  # shared again: a teammate sees it under review
        assert "(under review: its owner is reviewing it)" in db.owner("bo").prepare("outage cache flush").text
    assert db.confirm_decay(lid, "keep", by="lead").flag_reason is None and db.flagged() == []


def _two_lessons(path: Path) -> tuple[str, str]:
    clock = Clock(T0)
    with memdb.open(path, clock=clock) as d:
        a = d.owner("ana").save_lesson("Rotate signing keys before the audit")
        b = d.owner("ana").save_lesson("Pin the compiler version in CI images")
        d.approve([a.id, b.id], by="lead")
        d.configure(decay_idle_days=20, decay_flags_per_week=1)
        clock.advance(days=31)
        assert [e.id for e in d.decay().flagged] == [a.id]
    return a.id, b.id


@pytest.mark.parametrize("action", ["keep", "quarantine", "restore"])
def test_decay_answers_all_ids_or_none(tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str) -> None:
    path = tmp_path / "db"
    a, b = _two_lessons(path)
    if action == "restore":
        with memdb.open(path) as d:
            d.quarantine(a, by="lead", reason="checking")
    assert cli_main(["decay", action, a, b, "--db", str(path), "--by", "lead"]) == 1
    err = capsys.readouterr().err
    assert repr(b) in err and "nothing done for any of the 2 ids" in err
    with memdb.open(path) as d:
        want = "quarantined" if action == "restore" else "active"
        assert d.entry(a).status == want and d.entry(b).status == "active"
        assert [e.id for e in d.flagged()] == ([] if action == "restore" else [a])
        assert not [x for x in d.audit("ana") if x.get("action") in ("decay_keep", "restore_entry")]
    assert cli_main(["decay", "keep" if action != "restore" else "restore", a, a, "--db", str(path), "--by", "lead"]) == 0


def test_decay_list_says_why_and_since_when(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db"
    clock = Clock(T0)
    with memdb.open(path, clock=clock) as d:
        ana = d.owner("ana")
        ep = ana.record("debug", "cache flush fixed the outage", outcome="success", lesson="flush first")
        a = ana.save_lesson("Flush the cache first when the outage starts", cites=[ep.id])
        b = ana.save_lesson("Pin the compiler version in CI images")
        d.approve([a.id, b.id], by="lead")
        d.configure(decay_idle_days=20)
        clock.advance(days=22)
        ana.supersede(ep.id, reason="it made it worse", outcome="failure")
        d.decay()
    assert cli_main(["decay", "list", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "keep clears a flag" in out and "quarantine takes it out of use" in out
    assert "flagged 2026-03-24: a record it cites was corrected (outcome success -> failure)" in out
    assert "flagged 2026-03-24: idle, not used since 2026-03-02" in out
    assert cli_main(["decay", "list", "--db", str(path), "--json"]) == 0
    rows = {r["id"]: r["why"] for r in json.loads(capsys.readouterr().out)}
    assert rows == {
        a.id: "flagged 2026-03-24: a record it cites was corrected (outcome success -> failure)",
        b.id: "flagged 2026-03-24: idle, not used since 2026-03-02",
    }
