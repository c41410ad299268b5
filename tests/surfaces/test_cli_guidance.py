"""What ``memdb`` tells a person who reads its help or slips on its options, checked against
what it does (a newcomer following the README and the help literally was misled)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memdb
from memdb.cli import main


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_close_session_exits_as_its_help_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The help said "exit 1 when nothing was written", but closing a closed session writes
    nothing and exits 0 (tests/governance/test_distill.py::test_memdb_close_session): a script
    trusting the help took a duplicate close for a failure, or the reverse."""
    said = _help(capsys, "close-session")
    assert "exit 1 when nothing was written" not in said
    assert "exit 0 when it is closed, by this call or an earlier one: closing it again writes nothing" in said
    assert "exit 1 when it is not: nothing captured" in said
    path = tmp_path / "db"
    with memdb.open(path) as db:
        db.owner("default").record_exchange("s1", "deploy is failing", "checking")
    argv = ["close-session", "--kind", "debug", "--outcome", "failure", "--db", str(path), "--json"]
    assert main([*argv, "s1"]) == 0 and json.loads(capsys.readouterr().out)["status"] == "closed"
    assert main([*argv, "s1"]) == 0 and json.loads(capsys.readouterr().out)["status"] == "already_closed"
    assert main([*argv, "nosuch"]) == 1 and json.loads(capsys.readouterr().out)["status"] == "nothing_captured"
