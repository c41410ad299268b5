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


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "db"
    with memdb.open(path) as opened:
        opened.owner("default").record("debug", "Deploy failed", outcome="failure", tags=["deploy"])
    return str(path)


def _usage_error(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The command's usage line and its one error line, as argparse prints a usage error."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    return lines[0], lines[-1]


def test_an_option_before_the_command_is_told_to_go_after_it(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``memdb --json ask ...`` (git's and kubectl's habit) answered, in JSON, that --json was
    unrecognized, and ``memdb --db DIR ask ...`` that DIR was no command."""
    assert main(["--json", "ask", "what failed?", "--db", db]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error == {"type": "UsageError", "message": "memdb ask: --json before ask: options go after the command (memdb ask ... --json)"}
    assert main(["--db", db, "ask", "what failed?"]) == 2
    usage, line = _usage_error(capsys)
    assert (
        usage.startswith("usage: memdb ask ")
        and line == f"memdb ask: error: --db {db} before ask: options go after the command (memdb ask ... --db {db})"
    )
    assert main(["--owner", "ana@example.com", "stats", "--db", db]) == 2  # one the command does not take either
    usage, line = _usage_error(capsys)
    assert usage.startswith("usage: memdb stats ") and "ana@example.com" not in line
    assert line == (
        "memdb stats: error: --owner <EMAIL_1>: stats takes no --owner (options go after the command; `memdb stats --help` lists stats's)"
    )
    assert main(["ask", "what failed?", "--db", db, "--json"]) == 0 and json.loads(capsys.readouterr().out)["found"]  # where it goes


def test_an_option_of_another_command_names_the_command_and_what_to_do(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``memdb ask "..." --since X`` printed the top-level usage and "unrecognized arguments",
    naming neither ask nor that --since is recall's (ask reads its time from the question)."""
    assert main(["ask", "what failed?", "--since", "2026-01-01", "--db", db]) == 2
    usage, line = _usage_error(capsys)
    assert usage.startswith("usage: memdb ask ")
    assert line.startswith("memdb ask: error: --since 2026-01-01: not an option of ask, but of recall (ask reads a time")
    assert 'memdb ask "what failed since May 3?"' in line and line.endswith("`memdb ask --help` lists ask's options)")
    assert main(["ask", "what failed?", "--outcome=failure", "--db", db, "--json"]) == 2
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert message.startswith(
        "memdb ask: --outcome=failure: not an option of ask, but of other commands (ask reads a time, tags and an outcome"
    )
    assert main(["recall", "--db", db, "--include-told-x"]) == 2  # a near miss is named
    assert _usage_error(capsys)[1] == (
        "memdb recall: error: --include-told-x: not an option of recall "
        "(did you mean --include-told? `memdb recall --help` lists recall's options)"
    )
    assert main(["ask", "what", "failed?", "--db", db]) == 2  # a question unquoted
    assert (
        _usage_error(capsys)[1]
        == "memdb ask: error: failed?: more than ask takes (quote a text of several words; `memdb ask --help` lists its arguments)"
    )
    assert main(["--bogus"]) == 2  # no command: argparse's own words
    assert _usage_error(capsys) == ("usage: memdb [-h] [--version] COMMAND ...", "memdb: error: unrecognized arguments: --bogus")
