"""A ceremony decision replayed (a double click, a script run twice, a second surface at once) is
refused by the knowledge layer itself, in its write transaction, whichever surface sends it: the
API and the CLI accepted a repeated share and audited it again (the dashboard alone checked)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import memdb
from memdb.cli import main
from memdb.errors import DuplicateError

pytestmark = pytest.mark.usefixtures("backend")

TEAMS = {"platform": ["ana", "bo"], "data": ["ana", "dee"]}


def approved(db: memdb.Database, text: str = "Run database migrations before the deploy window opens") -> str:
    eid = db.owner("ana").save_lesson(text).id
    db.approve([eid], by="lead")
    return eid


def decisions(db: memdb.Database, eid: str) -> list[str]:
    return [r["action"] for r in db.audit("ana") if r.get("entry") == eid and r["action"] in ("share", "keep_private", "archive")]


def test_a_replayed_share_or_keep_is_refused_and_audited_once(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        db.configure(teams=TEAMS)
        eid = approved(db)
        db.decide({eid: "share"}, by="ana", team="platform")
        with pytest.raises(DuplicateError, match=rf"entry '{eid}': shared with platform already \(nothing was changed\)"):
            db.decide({eid: "share"}, by="ana", team="platform")
        (entry,) = db.decide({eid: "share"}, by="ana", team="data")  # another team: a ruling of its own
        assert entry.shared_with == ("data", "platform")
        with pytest.raises(DuplicateError, match="shared with platform, data already"):
            db.decide({eid: "share"}, by="ana")  # with each of her teams: both read it
        db.decide({eid: "private"}, by="ana")
        with pytest.raises(DuplicateError, match=rf"entry '{eid}': kept private already \(nothing was changed\)"):
            db.decide({eid: "private"}, by="ana")
        db.decide({eid: "share"}, by="ana")  # shared again after a keep: a new ruling
        assert decisions(db, eid) == ["share", "share", "keep_private", "share"]


def test_a_replay_in_a_batch_refuses_the_whole_batch(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        db.configure(teams=TEAMS)
        first, second = approved(db), approved(db, "Pin the base image digest in every build file")
        db.decide({first: "share"}, by="ana", team="platform")
        with pytest.raises(DuplicateError, match=first):
            db.decide({second: "share", first: "share"}, by="ana", team="platform")
        assert db.entry(second).visibility == "private" and decisions(db, second) == []  # all or none


def test_two_shares_at_once_are_audited_once(tmp_path: Path) -> None:
    """The check runs in the write transaction: of two threads sharing at once, one finds the other's ruling."""
    with memdb.open(tmp_path / "db") as db:
        db.configure(teams=TEAMS)
        eid = approved(db)
        barrier, outcomes = threading.Barrier(2), []

        def share() -> None:
            barrier.wait()
            try:
                db.decide({eid: "share"}, by="ana", team="platform")
                outcomes.append("shared")
            except DuplicateError:
                outcomes.append("refused")

        threads = [threading.Thread(target=share) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["refused", "shared"] and decisions(db, eid) == ["share"]


@pytest.mark.lmdb_only(reason="the command opens --db, a directory")
def test_the_cli_refuses_a_replayed_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        db.configure(teams=TEAMS)
        eid = approved(db)
    argv = ["ceremony", "decide", f"{eid}=share", "--team", "platform", "--by", "ana", "--db", str(path)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 1
    assert f"memdb: entry '{eid}': shared with platform already (nothing was changed)" in capsys.readouterr().err
    assert main([*argv, "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["type"] == "DuplicateError" and "already" in error["message"]
    with memdb.open(path) as db:
        assert decisions(db, eid) == ["share"]
