"""Teams and the share ceremony: shares survive a teams change honestly, "carried over" is per
team, and the kept agenda is read as things stand now."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.cli import main
from memdb.errors import ValidationError
from memdb.governance.knowledge import Entry

on_every_backend = pytest.mark.usefixtures("backend")  # not the CLI test: the command opens its path on LMDB
T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)  # a Monday
WEEK = dt.timedelta(days=7)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def db(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    database = memdb.open(tmp_path / "k", clock=clock)
    yield database
    database.close()


def approved(db: memdb.Database, owner: str, text: str) -> Entry:
    (done,) = db.approve(db.owner(owner).save_lesson(text).id, by="lead")
    return done


def agenda(db: memdb.Database, team: str | None = None) -> list[tuple[str, bool]]:
    return [(i.entry.id, i.carried_over) for i in db.ceremony(team).items]


# --- finding: a teams change cut shares off without a word -----------------------------------------


@on_every_backend
def test_configuring_teams_keeps_lessons_shared_with_all(db: memdb.Database) -> None:
    """Shared with ``all`` (no teams yet) meant everyone: configuring teams keeps it with everyone
    the teams cover, not only its owner; an owner in no team does not read it."""
    lesson = approved(db, "ana", "Run database migrations before the deploy window")
    db.decide({lesson.id: "share"}, by="ana")
    assert [e.id for e in db.owner("bo").knowledge()] == [lesson.id]
    db.configure(teams={"platform": ["ana", "bo"], "ops": ["cy"]})
    assert [e.id for e in db.owner("bo").knowledge()] == [lesson.id]
    assert [e.id for e in db.owner("cy").knowledge()] == [lesson.id]
    assert db.owner("dan").knowledge() == []
    assert db.ceremony("platform").items == []  # it reaches the team: nothing to rule on
    db.decide({lesson.id: "private"}, by="ana")  # the owner can still take it back
    assert db.owner("bo").knowledge() == [] and db.owner("cy").knowledge() == []


@on_every_backend
def test_a_share_with_a_team_gone_returns_the_lesson_to_its_owner_s_agenda(db: memdb.Database, clock: Clock) -> None:
    db.configure(teams={"platform": ["ana", "bo"]})
    lesson = approved(db, "ana", "Run database migrations before the deploy window")
    db.decide({lesson.id: "share"}, by="ana", team="platform")
    db.configure(teams={"core": ["ana", "bo"]})  # renamed: nobody is in "platform" any more
    assert db.owner("bo").knowledge() == []
    clock.advance(days=7)
    (item,) = db.ceremony("core").items
    assert (item.entry.id, item.carried_over, item.lost_shares) == (lesson.id, False, ("platform",))
    assert "shared with 'platform', no longer a team" in str(db.ceremony("core"))
    (ruled,) = db.decide({lesson.id: "share"}, by="ana")
    assert ruled.shared_with == ("core",)  # the stale share goes with the new ruling
    assert [e.id for e in db.owner("bo").knowledge()] == [lesson.id]
    db.configure(teams={"core": ["ana"], "platform": ["cy"]})  # the old name again: cy gets nothing unasked
    assert db.owner("cy").knowledge() == [] and db.ceremony("core").items == []


# --- finding: "carried over" was one counter per lesson ---------------------------------------------


@on_every_backend
def test_carried_over_means_on_this_team_s_previous_agenda_and_not_ruled_on(db: memdb.Database, clock: Clock) -> None:
    db.configure(teams={"core": ["ana", "bo"], "ops": ["bo", "cy"]})
    lesson = approved(db, "bo", "Payroll runs need a dry run the day before")
    assert agenda(db, "core") == [(lesson.id, False)]
    assert agenda(db, "ops") == [(lesson.id, False)]  # ops' first agenda: another team's does not count
    db.decide({lesson.id: "share"}, by="bo", team="core")
    clock.advance(days=7)
    assert agenda(db, "core") == []
    assert agenda(db, "ops") == [(lesson.id, True)]  # ruled on for core only: ops still has to hear it
    assert db.owner("cy").knowledge() == []
    db.decide({lesson.id: "share"}, by="bo", team="ops")
    assert agenda(db, "ops") == [] and [e.id for e in db.owner("cy").knowledge()] == [lesson.id]


@on_every_backend
def test_a_lesson_archived_and_restored_comes_back_new(db: memdb.Database, clock: Clock) -> None:
    lesson = approved(db, "ana", "Write the rollback step first")
    assert agenda(db) == [(lesson.id, False)]
    db.decide({lesson.id: "archive"}, by="ana")
    clock.advance(days=60)
    db.restore_entry(lesson.id, by="ana")
    assert agenda(db) == [(lesson.id, False)]
    clock.advance(days=7)
    assert agenda(db) == [(lesson.id, True)]  # now it was left undecided


@on_every_backend
def test_a_lesson_archived_before_rulings_were_kept_comes_back_new(db: memdb.Database, clock: Clock) -> None:
    """A review's find: a lesson archived before the entry kept when it was ruled on (``ruled_at``),
    then restored, showed "carried over" on the next agenda although its owner had ruled on it
    since the previous one. The audit trail says when; a restore alone (from quarantine) is no ruling."""
    lesson = approved(db, "ana", "Write the rollback step first")
    other = approved(db, "ana", "Page the on-call before a schema change")
    assert agenda(db) == [(lesson.id, False), (other.id, False)]
    db.decide({lesson.id: "archive"}, by="ana")
    db.quarantine(other.id, by="lead", reason="checking it")
    for eid in (lesson.id, other.id):  # as a memdb before the per-team change wrote them
        rec = dict(db.knowledge.entries[("ana", eid)])
        rec.pop("ruled_at", None)
        db.knowledge.entries.set(("ana", eid), rec)
    clock.advance(days=60)
    db.restore_entry(lesson.id, by="ana")
    db.restore_entry(other.id, by="lead")
    assert agenda(db) == [(lesson.id, False), (other.id, True)]  # nobody ruled on the quarantined one
    clock.advance(days=7)
    assert agenda(db) == [(lesson.id, True), (other.id, True)]


@on_every_backend
def test_a_share_with_another_team_is_no_ruling_for_this_one(db: memdb.Database, clock: Clock) -> None:
    """A review's find: the audit-trail fallback for entries without ``ruled_at`` read any share
    as a ruling for the team holding its ceremony. On team a's agenda, shared with team b (a
    ruling for b alone), quarantined and restored (``kept_at``): a's next agenda showed it new,
    though nobody ruled for a. A share counts for the teams it names; a keep or an archive for all."""
    db.configure(teams={"a": ["ana", "bo"], "b": ["ana", "cy"]})
    lesson = approved(db, "ana", "Write the rollback step first")
    assert agenda(db, "a") == [(lesson.id, False)]
    clock.advance(days=1)
    db.decide({lesson.id: "share"}, by="ana", team="b")
    clock.advance(days=1)
    db.quarantine(lesson.id, by="lead", reason="checking it")
    clock.advance(days=1)
    db.restore_entry(lesson.id, by="lead")
    clock.advance(days=4)
    assert agenda(db, "a") == [(lesson.id, True)]  # nobody ruled for a
    clock.advance(days=1)
    db.decide({lesson.id: "share"}, by="ana", team="a")  # now a's ruling, by the audit trail alone:
    rec = dict(db.knowledge.entries[("ana", lesson.id)])  # as a memdb before per-team rulings wrote it
    rec.pop("ruled_for", None)
    db.knowledge.entries.set(("ana", lesson.id), {**rec, "shared_with": ["b"], "visibility": "shared"})
    db.knowledge.shared.kill(("a", lesson.id))
    db.quarantine(lesson.id, by="lead", reason="checking it again")
    db.restore_entry(lesson.id, by="lead")
    clock.advance(days=1)
    assert agenda(db, "a") == [(lesson.id, False)]  # ruled for a since a's previous agenda


def test_cli_show_looks_without_holding_a_ceremony(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cli"
    with memdb.open(path, clock=Clock(T0)) as database:
        lesson = approved(database, "ana", "Write the rollback step first")
    base = ["--db", str(path), "--now", "2026-06-02T09:00"]
    assert main(["ceremony", "show", *base]) == 0
    assert "no ceremony held yet" in capsys.readouterr().out
    assert main(["ceremony", "agenda", *base, "--json"]) == 0
    held = json.loads(capsys.readouterr().out)
    for _ in range(2):
        assert main(["ceremony", "show", *base, "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["id"] == held["id"]
        assert [(i["entry"]["id"], i["carried_over"]) for i in shown["items"]] == [(lesson.id, False)]


# --- finding: the kept agenda showed what is no longer true ------------------------------------------


@on_every_backend
def test_the_kept_agenda_leaves_out_quarantined_lessons_and_leavers(db: memdb.Database) -> None:
    db.configure(teams={"core": ["ana", "bo", "cy"]})
    secret = approved(db, "cy", "Vendor Zeta contract renewal: we will not renew, keep quiet until March")
    wrong = approved(db, "ana", "Skip the canary for hotfixes")
    kept = approved(db, "bo", "Payroll runs need a dry run the day before")
    db.ceremony("core")
    db.decide({kept.id: "archive"}, by="bo")
    db.quarantine(wrong.id, by="lead", reason="dangerous advice")
    db.configure(teams={"core": ["ana", "bo"]})
    latest = db.latest_agenda("core")
    assert latest is not None
    assert [(i.entry.id, i.entry.ceremony) for i in latest.items] == [(kept.id, "archived")]  # a ruling still shows
    everyone = db.latest_agenda()
    assert everyone is None
    db.restore_entry(wrong.id, by="lead")
    latest = db.latest_agenda("core")
    assert latest is not None and {i.entry.id for i in latest.items} == {kept.id, wrong.id}
    assert secret.id not in {i.entry.id for i in latest.items}
    with pytest.raises(ValidationError, match="team 'gone': not configured"):
        db.latest_agenda("gone")


def test_reaches_is_the_one_rule_for_whether_a_team_reads_a_share(tmp_path: Path) -> None:
    """``Knowledge.reaches``, which the agenda, ``decide``'s replay check and the dashboard's
    ruling ask (the dashboard had a copy): a share with the team, or with ``all`` while ``all``
    is not a configured team."""
    with memdb.open(tmp_path / "r") as rdb:
        kn = rdb.knowledge
        assert kn.reaches(["all"], "all") and not kn.reaches([], "all")
        rdb.configure(teams={"platform": ["ana"], "data": ["bo"]})
        assert kn.reaches(["platform"], "platform") and not kn.reaches(["data"], "platform")
        assert kn.reaches(["all"], "platform")  # shared with everyone before teams were set
        rdb.configure(teams={"platform": ["ana"], "all": ["bo"]})
        assert not kn.reaches(["all"], "platform") and kn.reaches(["all"], "all")  # "all" is a team now
