"""A restore that does not give a lesson back its share with a team (another owner's near copy is
read there now) says so in the CLI's text, as its JSON's ``unshared`` does: the text said only
that the lesson was restored, and a lead believed both teams read it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memdb
from memdb.cli import main
from memdb.governance.knowledge import restore_note

TEAMS = {"platform": ["ana", "bo"], "data": ["ana", "dee"]}


def quarantined_while_copied(db: memdb.Database) -> str:
    """ana's lesson shared with her two teams and quarantined; bo shares a near copy with platform meanwhile."""
    db.configure(teams=TEAMS)
    a = db.owner("ana").save_lesson("Run database migrations before the deploy window opens")
    b = db.owner("bo").save_lesson("Run the database migrations before the deploy window opens")
    db.approve([a.id, b.id], by="lead")
    db.decide({a.id: "share"}, by="ana")
    db.quarantine(a.id, by="lead", reason="wrong for the new pipeline")
    db.decide({b.id: "share"}, by="bo", team="platform")
    return a.id


def test_restore_note_names_the_teams_not_shared_with_again(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        eid = quarantined_while_copied(db)
        restored = db.restore_entry(eid, by="lead")
        assert restore_note(restored) == (
            "not shared again with 'platform': another owner's near copy is read there (on that team's agenda for ana to rule on again)"
        )
        assert restore_note(db.entry(eid).model_copy(update={"unshared": ()})) == ""


def test_decay_restore_says_which_teams_it_did_not_share_with_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        eid = quarantined_while_copied(db)
    assert main(["decay", "restore", eid, "--by", "lead", "--db", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{eid} ana approved/shared/active")
    assert out[1:] == [f"  {eid}: not shared again with 'platform': another owner's near copy is read there "
                       "(on that team's agenda for ana to rule on again)"]  # fmt: skip
    with memdb.open(path) as db:
        db.quarantine(eid, by="lead", reason="again")
    assert main(["decay", "restore", eid, "--by", "lead", "--db", str(path), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)  # the JSON as it was: the field says it
    assert entry["unshared"] == ["platform"]
