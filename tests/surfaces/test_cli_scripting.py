"""The ``memdb`` command as a script drives it: Ctrl-C, failed writes at a new path, import's
messages, ``maintain --now``, stdin, one time format under ``--json``, and messages that speak
the command's flags rather than the Python API.

SIGINT tests run the command in a subprocess whose slow step is patched to print a marker and
wait, so the signal lands inside the transaction every time, whatever the machine's load.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import memdb
from memdb.cli import main
from memdb.errors import ValidationError
from tests.clocks import Clock

ROOT = Path(__file__).resolve().parents[2]
UTC = dt.UTC
GOOD = {"owner": "ana", "ts": "2026-06-01T00:00:00Z", "kind": "debug", "summary": "fine", "outcome": "success"}


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memdb: "), lines
    return lines[0]


def jsonl(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- Ctrl-C: one line, exit 130, nothing half-written ------------------------------------------

_HARNESS = """
import sys, time
import memdb.cli
{patch}
sys.exit(memdb.cli.main({argv!r}))
"""


def interrupted(argv: list[str], patch: str) -> subprocess.CompletedProcess[str]:
    """Run ``memdb argv`` with ``patch`` applied; once it prints MARK on stderr, send SIGINT."""
    code = _HARNESS.format(patch=textwrap.dedent(patch), argv=argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert p.stderr is not None
    assert p.stderr.readline().strip() == "MARK"  # inside the step under test, past every import
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


_WAIT = """
def waiting(*args, **kwargs):
    result = real(*args, **kwargs)
    print("MARK", file=sys.stderr, flush=True)
    for _ in range(600):  # short sleeps: a signal taken by another thread does not cut a long one short
        time.sleep(0.1)
    return result
"""


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_during_import_prints_one_line_exits_130_and_leaves_no_database(tmp_path: Path, as_json: bool) -> None:
    file = jsonl(tmp_path / "x.jsonl", GOOD, {**GOOD, "summary": "second"})
    db = tmp_path / "new-db"
    patch = "from memdb.surfaces.handle import Memory\nreal = Memory.import_episodes\n" + _WAIT + "Memory.import_episodes = waiting\n"
    done = interrupted(["import", str(file), "--db", str(db), *(["--json"] if as_json else [])], patch)
    assert done.returncode == 130
    if as_json:
        assert done.stderr == "" and json.loads(done.stdout)["error"]["type"] == "Interrupted"
    else:
        assert done.stderr.strip() == "memdb: interrupted: nothing was imported (the import is one transaction)"
    assert sorted(os.listdir(tmp_path)) == ["x.jsonl"]  # neither the database nor the scratch beside it


def test_ctrl_c_during_import_into_a_database_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with memdb.open(db) as d:
        d.owner("ana").record("debug", "before", outcome="success")
    file = jsonl(tmp_path / "x.jsonl", GOOD)
    patch = "from memdb.surfaces.handle import Memory\nreal = Memory.import_episodes\n" + _WAIT + "Memory.import_episodes = waiting\n"
    done = interrupted(["import", str(file), "--db", str(db)], patch)
    assert done.returncode == 130 and "Traceback" not in done.stderr
    with memdb.open(db) as d:
        assert d.owner("ana").count() == 1 and d.check().ok


def test_ctrl_c_during_maintain_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with memdb.open(db) as d:
        d.owner("ana").record("debug", "x", outcome="success")
    patch = "from memdb.lifecycle.maintain import Lifecycle\nreal = Lifecycle.archive_due\n" + _WAIT + "Lifecycle.archive_due = waiting\n"
    done = interrupted(["maintain", "--db", str(db)], patch)
    assert done.returncode == 130 and done.stderr.startswith("memdb: interrupted: the rule under way wrote nothing")
    assert len(done.stderr.strip().splitlines()) == 1
    with memdb.open(db) as d:
        assert d.check().ok


def test_ctrl_c_during_export_keeps_the_earlier_file(tmp_path: Path) -> None:
    db, file = tmp_path / "db", tmp_path / "backup.jsonl"
    with memdb.open(db) as d:
        d.owner("ana").record("debug", "x", outcome="success")
    file.write_text("EARLIER\n")
    patch = "real = memdb.cli._write_export\n" + _WAIT + "memdb.cli._write_export = waiting\n"
    done = interrupted(["export", "--db", str(db), "--file", str(file), "--json"], patch)
    assert done.returncode == 130 and done.stderr == ""
    assert json.loads(done.stdout)["error"]["message"].startswith(f"interrupted: --file {file} was left as it was")
    assert file.read_text() == "EARLIER\n" and sorted(os.listdir(tmp_path)) == ["backup.jsonl", "db"]


# --- a refused write creates nothing at a new path -----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["record", "debug", "deploy failed"],  # no --outcome
        ["record", "nosuchkind", "x", "--outcome", "success"],
        ["fact", "bad key", "v"],
    ],
)
def test_a_refused_record_or_fact_creates_no_database(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    typo = tmp_path / "mem-dta" / "sub"
    assert main([*argv, "--db", str(typo)]) == 1
    one_error_line(capsys)
    assert os.listdir(tmp_path) == []  # not the database, its parent, or the scratch
    assert main(["ask", "deploy", "--db", str(typo)]) == 1
    assert "no such directory" in one_error_line(capsys)


def test_a_successful_record_at_a_new_path_lands_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "a" / "b" / "db"
    assert main(["record", "debug", "deploy failed", "--outcome", "failure", "--db", str(db)]) == 0
    assert main(["fact", "ana/theme", "dark", "--db", str(tmp_path / "facts")]) == 0
    assert sorted(os.listdir(tmp_path)) == ["a", "facts"] and sorted(os.listdir(db)) == ["data.mdb", "lock.mdb"]
    assert os.stat(db).st_mode & 0o777 == 0o700
    with memdb.open(db) as d:
        assert [e.summary for e in d.owner("default").episodes()] == ["deploy failed"]


def test_a_refused_import_creates_no_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = jsonl(tmp_path / "x.jsonl", GOOD, {**GOOD, "outcome": "maybe"})  # refused in import_episodes, after the open
    assert main(["import", str(file), "--db", str(tmp_path / "new")]) == 1
    assert "x.jsonl:2: outcome='maybe': not one of" in one_error_line(capsys)
    assert os.listdir(tmp_path) == ["x.jsonl"]


# --- import's messages: FILE:LINE: field: reason ---------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"id": "garbage-id"}, "x.jsonl:3: id 'garbage-id': not an episode id (expected YYYYMMDDTHHMMSSffffffZ-xxxxxx"),
        ({"cites": ["nonexistent"]}, "x.jsonl:3: cites[0] 'nonexistent': not an episode id"),
        ({"summary": None}, "x.jsonl:3: summary: required"),
    ],
)
def test_import_names_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict, said: str) -> None:
    row = {k: v for k, v in {**GOOD, **bad}.items() if v is not None}
    file = jsonl(tmp_path / "x.jsonl", GOOD, GOOD, row)
    db = tmp_path / "db"
    with memdb.open(db) as d:
        d.owner("ana").record("debug", "before", outcome="success")
    assert main(["import", str(file), "--db", str(db)]) == 1
    line = one_error_line(capsys)
    assert line.startswith(f"memdb: {file}:3: ") and said in line and "datetime.datetime" not in line, line
    with memdb.open(db) as d:
        assert d.owner("ana").count() == 1


def test_decisions_nested_past_the_limit_are_one_error_on_every_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep: dict = {}
    cur = deep
    for _ in range(500):
        cur["a"] = {}
        cur = cur["a"]
    file = jsonl(tmp_path / "deep.jsonl", {**GOOD, "decisions": deep})
    assert main(["import", str(file), "--db", str(tmp_path / "db"), "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error == {"type": "ValidationError", "message": f"{file}:1: decisions is nested more than 32 levels deep"}
    flag = '{"a":' * 5000 + "1" + "}" * 5000  # past what json.loads can read
    assert main(["record", "debug", "x", "--outcome", "success", "--decisions", flag, "--db", str(tmp_path / "r")]) == 1
    assert one_error_line(capsys) == "memdb: --decisions: nested too deeply (at most 32 levels)"
    with memdb.open(tmp_path / "db2") as d, pytest.raises(ValidationError, match="nested more than 32 levels deep"):
        d.owner("ana").import_episodes([{**GOOD, "ts": dt.datetime(2026, 6, 1, tzinfo=UTC), "decisions": deep}], source="t")


# --- clocks: import and maintain --now --------------------------------------------------------------


def test_import_refuses_an_episode_ahead_of_the_clock_as_record_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = jsonl(tmp_path / "fut.jsonl", {**GOOD, "ts": "2099-06-01T00:00:00Z"})
    assert main(["import", str(file), "--db", str(tmp_path / "db")]) == 1
    assert f"{file}:1: ts 2099-06-01T00:00:00+00:00 is " in one_error_line(capsys)
    assert os.listdir(tmp_path) == ["fut.jsonl"]


def test_maintain_refuses_a_now_before_year_1000_and_later_runs_still_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    assert main(["record", "debug", "x", "--outcome", "success", "--db", db]) == 0
    capsys.readouterr()
    assert main(["maintain", "--db", db, "--now", "0001-01-01"]) == 1
    assert "before year 1000" in one_error_line(capsys)
    assert main(["maintain", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rescored"] == 1
    with memdb.open(db) as d, pytest.raises(ValidationError, match="before year 1000"):
        d.maintain(now=dt.datetime(999, 12, 31, tzinfo=UTC))


def test_maintain_refuses_a_now_ahead_of_the_clock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    assert main(["record", "debug", "x", "--outcome", "success", "--db", db]) == 0
    capsys.readouterr()
    later = (dt.datetime.now(UTC) + dt.timedelta(days=365 * 36)).date().isoformat()
    assert main(["maintain", "--db", db, "--now", later]) == 1
    assert "after the clock: maintain runs the rules at a time that has come" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["reflect"], "reflection runs"),
        (["decay", "run"], "decay runs"),
        (["ceremony", "agenda", "--team", "platform"], "the ceremony is held"),
        (["review", "approve", "kn-1", "--by", "bo"], "a review is decided"),
    ],
)
def test_commands_that_decide_at_now_refuse_one_to_come(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], said: str
) -> None:
    """Only maintain was bounded: a typo for a past date made decay age knowledge, reflection
    spend a day's budget and the ceremony hold its agenda in a time to come; year 1 as well."""
    db = str(tmp_path / "db")
    assert main(["record", "debug", "x", "--outcome", "success", "--db", db]) == 0
    capsys.readouterr()
    later = (dt.datetime.now(UTC) + dt.timedelta(days=365 * 36)).date().isoformat()
    assert main([*command, "--db", db, "--now", later]) == 1
    assert f"after the clock: {said} at a time that has come" in one_error_line(capsys)
    assert main([*command, "--db", db, "--now", "0001-01-01"]) == 1
    assert "before year 1000" in one_error_line(capsys)


def test_a_maintain_at_a_later_now_does_not_hide_events_recorded_after_it(tmp_path: Path) -> None:
    """The burst rule's mark stayed at the run's ``now``: events recorded later, dated before it,
    were never scanned again (a ``--now`` typo of 2062 for 2026 stopped burst summaries)."""
    t0 = dt.datetime(2026, 11, 20, 10, tzinfo=UTC)
    clock = Clock(t0)
    with memdb.open(tmp_path / "db", clock=clock) as d:
        ana = d.owner("ana")
        ana.record("debug", "seed", outcome="success")
        d.maintain(now=dt.datetime(2062, 11, 20, tzinfo=UTC))
        for i in range(8):
            clock.now = t0 + dt.timedelta(minutes=i)
            ana.record_exchange("s1", f"turn {i} about the webhook", "ok")
        clock.now = t0 + dt.timedelta(days=11)
        assert d.maintain().summaries == 1


# --- what --json and get print -------------------------------------------------------------------


def test_json_times_are_one_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    with memdb.open(db) as d:
        m = d.owner("ana")
        call = m.record_tool_call("s1", "search", {"q": "x"})
        m.record_tool_result(call.id, {"hits": 3})
    times = []
    for argv in (["record", "debug", "x", "--outcome", "success"], ["timeline", "s1"], ["maintain"], ["ceremony"], ["decay"]):
        assert (
            main([*argv, "--db", db, "--owner", "ana", "--json"] if argv[0] in ("record", "timeline") else [*argv, "--db", db, "--json"])
            == 0
        )
        out = json.loads(capsys.readouterr().out)
        times.append(out.get("ts") or out.get("now") or out.get("at") or out["steps"][0]["at"])
    assert all(t.endswith("Z") and "+00:00" not in t for t in times), times


def test_get_shows_the_time_in_the_database_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    assert main(["config", "timezone=Asia/Tokyo", "--db", db]) == 0
    assert main(["record", "debug", "late deploy", "--outcome", "failure", "--ts", "2026-12-01T20:30:00Z", "--db", db, "--json"]) == 0
    capsys.readouterr()
    with memdb.open(db) as d:
        (ep,) = d.owner("default").episodes()
    assert main(["get", ep.id, "--db", db]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{ep.id} 2026-12-02 05:30 JST debug/failure"


# --- stdin ------------------------------------------------------------------------------------------


def test_import_dash_and_content_dash_read_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "db")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((json.dumps(GOOD) + "\n").encode())))
    assert main(["import", "-", "--db", db]) == 0
    assert capsys.readouterr().out.strip() == "ana: 1 imported"
    long = "details " * 40000  # past what one argv string may hold
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(long.encode())))
    assert main(["record", "debug", "piped", "--outcome", "success", "--content", "-", "--db", db, "--json"]) == 0
    content = json.loads(capsys.readouterr().out)["content"]
    assert content.startswith("details details") and content != "-"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"owner": "ana", "kind": "debug"}\n')))
    assert main(["import", "-", "--db", db]) == 1
    assert one_error_line(capsys).startswith("memdb: <stdin>:1: ")


# --- the command's words, exit codes, and paths ----------------------------------------------------


def test_errors_name_the_command_s_flags_not_the_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    assert main(["record", "debug", "x", "--outcome", "success", "--db", db, "--json"]) == 0
    eid = json.loads(capsys.readouterr().out)["id"]
    assert main(["supersede", eid, "--reason", "typo", "--db", db]) == 1
    line = one_error_line(capsys)
    assert "--outcome failure" in line and "outcome='failure'" not in line
    assert main(["fact", "ana/theme", "--db", db]) == 1
    line = one_error_line(capsys)
    assert "`memdb facts` lists the keys" in line and "facts()" not in line
    assert main(["close-session", "s1", "--kind", "debug", "--db", db]) == 2  # --outcome is required: a usage error
    assert "the following arguments are required: --outcome" in capsys.readouterr().err


def test_empty_environment_variables_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDB_PATH", "")
    assert main(["stats"]) == 1
    assert one_error_line(capsys) == "memdb: $MEMDB_PATH is set but empty (unset it for the default, or give --db)"
    monkeypatch.delenv("MEMDB_PATH")
    monkeypatch.setenv("MEMDB_OWNER", "")
    assert main(["ask", "x", "--db", str(tmp_path), "--json"]) == 1
    assert "$MEMDB_OWNER is set but empty" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_a_db_path_that_is_not_utf8_is_refused_before_anything_is_made(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/db\xff")
    for _ in range(2):
        assert main(["record", "debug", "x", "--outcome", "success", "--db", bad]) == 1
        assert one_error_line(capsys).endswith("db\\xff: the path is not valid UTF-8 (memdb opens databases by UTF-8 paths; rename it)")
    assert os.listdir(tmp_path) == []


def test_a_new_database_is_made_where_later_commands_look_through_symlinks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A review's find: ``record --db link/../mem`` built ./mem (the path read as text), while
    the next command, through the symlink, looked in the link's parent and found nothing."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a" / "b")
    db = str(tmp_path / "link" / ".." / "mem")
    assert main(["record", "debug", "made through a link", "--outcome", "success", "--db", db, "--owner", "ana"]) == 0
    assert (tmp_path / "a" / "mem" / "data.mdb").is_file() and not (tmp_path / "mem").exists()
    capsys.readouterr()
    assert main(["recall", "--db", db, "--owner", "ana", "--json"]) == 0
    assert [m["episode"]["summary"] for m in json.loads(capsys.readouterr().out)["memories"]] == ["made through a link"]


def test_a_new_database_lands_where_the_path_leads_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review's finds: a refused record through a link to nothing yet left an empty database
    at the link's target ("Nothing found" after); ``nothere/../mem`` was built where no later
    command looked; a name as long as a name may be was refused (the scratch directory's name
    held it)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert main(["record", "debug", "x", "--db", "link", "--owner", "ana"]) == 1  # no outcome: refused
    assert not (tmp_path / "target").exists()
    assert main(["record", "debug", "through the link", "--outcome", "success", "--db", "link", "--owner", "ana"]) == 0
    assert (tmp_path / "target" / "data.mdb").is_file()
    assert main(["record", "debug", "past a new folder", "--outcome", "success", "--db", "nothere/../mem", "--owner", "ana"]) == 0
    assert main(["record", "debug", "x", "--db", "gone/../mem2", "--owner", "ana"]) == 1
    assert not (tmp_path / "gone").exists() and not (tmp_path / "mem2").exists()
    long = "m" * 250
    assert main(["record", "debug", "a long name", "--outcome", "success", "--db", long, "--owner", "ana"]) == 0
    capsys.readouterr()
    for db, said in (("link", "through the link"), ("nothere/../mem", "past a new folder"), (long, "a long name")):
        assert main(["recall", "--db", db, "--owner", "ana", "--json"]) == 0
        assert [m["episode"]["summary"] for m in json.loads(capsys.readouterr().out)["memories"]] == [said]
