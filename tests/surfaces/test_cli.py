"""The ``memdb`` command, run in process through ``memdb.cli.main`` on real LMDB directories.

Pins what the surface promises: the demo never deletes what it did not write, every
``--json`` prints JSON, export keeps archived episodes, and errors (bad dates, bad import
lines) are one ``memdb: ...`` line with a non-zero exit and nothing written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from pathlib import Path

import pytest

import memdb
from memdb.cli import main
from memdb.errors import ValidationError

UTC = dt.UTC
EARLY = "0001-01-01T00:00:00+14:00"  # before year 1 once in UTC
LATE = "9999-12-31T23:00:00-05:00"  # after year 9999 once in UTC


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The single ``memdb: ...`` line a failed command printed (no traceback, nothing else)."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memdb: "), lines
    return lines[0]


def real_database(path: Path) -> None:
    with memdb.open(path) as db:
        db.owner("ana").record("debug", "Real production memory", outcome="failure")


# --- demo: replaces only its own database ------------------------------------------------------


def test_demo_refuses_a_directory_holding_other_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("my notes")
    real_database(project)
    assert main(["demo", str(project)]) == 1
    line = one_error_line(capsys)
    assert str(project) in line and "notes.txt" in line and "nothing was changed" in line
    assert sorted(os.listdir(project)) == ["data.mdb", "lock.mdb", "notes.txt"]
    with memdb.open(project) as db:
        assert db.owners() == ["ana"]


def test_demo_dot_in_a_project_deletes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        assert main(["demo", "."]) == 1
        assert "'.': the directory holds other files (src)" in one_error_line(capsys)
    assert sorted(os.listdir(tmp_path)) == ["src"] and (tmp_path / "src" / "main.py").read_text() == "print(1)\n"


def test_demo_refuses_a_database_it_did_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db"
    real_database(path)  # nothing but LMDB's files, yet not a demo
    assert main(["demo", str(path)]) == 1
    assert "holds a database that memdb demo did not write" in one_error_line(capsys)
    with memdb.open(path) as db:
        assert db.owners() == ["ana"] and db.owner("ana").count() == 1


def test_demo_replaces_its_own_earlier_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "demo-db"
    path.mkdir()  # an empty directory is fine
    assert main(["demo", str(path)]) == 0
    first = capsys.readouterr().out
    with memdb.open(path) as db:
        db.owner("coder").record("debug", "played with the demo", outcome="success")
    assert main(["demo", str(path)]) == 0
    second = capsys.readouterr().out

    def lines(out: str) -> list[str]:  # the same demo, the extra episode gone (timings aside)
        return [re.sub(r" in [0-9.]+s$", "", line) for line in out.splitlines()[1:]]

    assert lines(second) == lines(first)
    assert sorted(os.listdir(path)) == ["data.mdb", "lock.mdb"]
    with memdb.open(path) as db:
        assert db.globals["META"].get(("demo",)) is not None  # the mark that lets the next demo replace it
        assert not list(db.owner("coder").recall(text="played", limit=5))


def test_demo_leaves_the_database_its_questions_saw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # docs/mcp.md's session runs against this state: the look six weeks ahead is rolled back
    path = tmp_path / "demo-db"
    assert main(["demo", str(path)]) == 0
    out = capsys.readouterr().out
    assert "archived" in out and "rolled back" in out
    with memdb.open(path) as db:
        assert db.check().ok
        for owner in db.owners():
            episodes = list(db.owner(owner).episodes(include_archived=True))
            assert episodes and all(e.status == "active" for e in episodes)
        assert db.owner("coder").history(kind="debug", tags=["deploy"]).total == 22
    # the command names the lessons on a line of their own
    assert main(["history", "--db", str(path), "--owner", "coder", "--kind", "debug", "--tags", "deploy", "--limit", "2"]) == 0
    lessons = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Lessons: ")]
    assert lessons == ["Lessons: Run schema migrations before the deploy window | Rebuild the index as a deploy step, not by hand"]


# --- --json prints JSON --------------------------------------------------------------------------


def test_every_json_output_parses(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDB_USER", "tester")
    db = str(tmp_path / "demo-db")
    assert main(["demo", db]) == 0
    capsys.readouterr()
    commands = [
        ["record", "debug", "x", "--outcome", "success", "--owner", "coder"],
        ["ask", "deploy", "--owner", "coder"],
        ["recall", "--owner", "coder", "--tags", "deploy"],
        ["history", "--owner", "coder"],
        ["stats"],
        ["config"],
        ["config", "lessons_per_day=4"],
        ["maintain", "--now", "2026-07-02T00:00Z"],
        ["reflect", "--now", "2026-07-01T10:00Z"],
        ["review", "list"],
        ["ceremony", "agenda", "--now", "2026-07-01T11:00Z"],
        ["decay", "run", "--now", "2026-09-01T00:00Z"],
        ["decay", "list"],
        ["timeline", "coder-0630", "--owner", "coder"],
    ]
    for argv in commands:
        assert main([*argv, "--db", db, "--json"]) == 0, argv
        json.loads(capsys.readouterr().out)
    assert main(["maintain", "--db", db, "--json", "--now", "2026-08-15T09:00Z"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["now"] == "2026-08-15T09:00:00Z" and report["archived"] > 0


def test_dump_shows_bytes_inside_a_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A probe's find: dump stopped with a bare TypeError at the first value holding bytes in a
    map or list, as an archived episode's cold record does."""
    with memdb.open(tmp_path / "db") as db:
        db.globals["X"]["a"] = {"packed": b"\x00\xff", "n": [b"z"]}
    assert main(["dump", "--db", str(tmp_path / "db"), "X"]) == 0
    assert capsys.readouterr().out == '^X("a")=$ZJSON({"n": [{"$C": [122]}], "packed": {"$C": [0, 255]}})\n'


def test_dump_refuses_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "--db", str(tmp_path / "db"), "--json"]) == 2
    assert "--json: dump prints ^NAME(subs)=value lines, not JSON" in capsys.readouterr().err
    assert not (tmp_path / "db").exists()


# --- export / import ---------------------------------------------------------------------------


def test_export_keeps_archived_episodes_and_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, copy, file = tmp_path / "db", tmp_path / "copy", tmp_path / "x.jsonl"
    with memdb.open(src) as db:
        ana = db.owner("ana")
        ids = [ana.record("debug", f"episode {i} about deploys", outcome="success").id for i in range(3)]
        db.owner("bob").record("debug", "bob's episode", outcome="failure")
        ana.archive(ids[0])
    assert main(["export", "--db", str(src), "--file", str(file)]) == 0
    rows = [json.loads(line) for line in file.read_text().splitlines()]
    assert len(rows) == 4 and [r["status"] for r in rows if r["id"] == ids[0]] == ["archived"]
    assert main(["import", "--db", str(copy), str(file)]) == 0
    with memdb.open(copy) as db:
        assert {o: db.owner(o).count() for o in db.owners()} == {"ana": 3, "bob": 1}
        assert "episode 0 about deploys" in {e.summary for e in db.owner("ana").episodes()}  # back, and active


def test_a_failed_export_leaves_the_earlier_file_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An export of an owner the database lacks (a typo) emptied the backup it was pointed at, and
    one that failed on a damaged value cut it short: the file is replaced only once whole."""
    src, file = tmp_path / "db", tmp_path / "backup.jsonl"
    with memdb.open(src) as db:
        for i in range(3):
            db.owner("ana").record("debug", f"episode {i}", outcome="success")
    assert main(["export", "--db", str(src), "--file", str(file)]) == 0
    backup = file.read_bytes()
    assert main(["export", "--db", str(src), "--owner", "Ana", "--file", str(file)]) == 1
    assert "--owner 'Ana': no such owner in this database" in one_error_line(capsys)
    with memdb.open(src) as db:  # a value that cannot be decoded, half way through the export
        eid = [e.id for e in db.owner("ana").episodes()][1]
        key = db.globals["MEM"].key(("ana", f"{eid[:4]}-{eid[4:6]}-{eid[6:8]}", eid))
        with db.store.write() as w:
            w.put(key, b"\xc1")  # no msgpack value
    assert main(["export", "--db", str(src), "--file", str(file)]) == 1
    capsys.readouterr()
    assert file.read_bytes() == backup and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert stat.S_IMODE(file.stat().st_mode) == 0o600


def test_export_to_a_link_rewrites_what_it_points_to(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, real, link = tmp_path / "db", tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    with memdb.open(src) as db:
        db.owner("ana").record("debug", "one", outcome="success")
    real.write_text("old\n")
    link.symlink_to(real)
    assert main(["export", "--db", str(src), "--file", str(link)]) == 0
    assert link.is_symlink() and json.loads(real.read_text())["summary"] == "one"
    assert main(["export", "--db", str(src), "--file", str(tmp_path / "no" / "x.jsonl")]) == 1
    assert f"--file {tmp_path / 'no' / 'x.jsonl'}: No such file or directory" in one_error_line(capsys)


def test_export_json_to_a_file_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, file = tmp_path / "db", tmp_path / "x.jsonl"
    with memdb.open(src) as db:
        db.owner("ana").record("debug", "one", outcome="success")
    assert main(["export", "--db", str(src), "--file", str(file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"exported": 1, "owners": ["ana"], "file": str(file)}


def test_a_complete_export_is_typed_and_import_skips_what_it_cannot_bring_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``memdb export --owner ana`` was no copy of what memdb holds of ana (a right of access): it
    left out earlier versions, knowledge entries, patterns and the audit log. ``--complete`` types
    every line and adds them; import brings the episodes back and skips the rest, saying so (an
    earlier version read as an episode would come back current). The default is unchanged."""
    src, plain, full = tmp_path / "db", tmp_path / "plain.jsonl", tmp_path / "full.jsonl"
    with memdb.open(src) as db:
        ana = db.owner("ana")
        first = ana.record("debug", "original wombatword text", outcome="failure", tags=["t"])
        ana.supersede(first.id, reason="typo", summary="corrected text")
        ana.save_lesson("quokkaword lesson text")
        ana.record("fact", "factv1word", key="k/x")
        ana.record("fact", "factv2word", key="k/x")
        for i in range(5):
            ana.record("debug", f"deploy {i} failed", outcome="failure", tags=["pt"])
        db.owner("bob").record("debug", "bob's episode", outcome="success")
        patterns, audit = ana.patterns(), ana.audit()
        python = [json.loads(json.dumps(row)) for row in ana.export(complete=True)]
        assert patterns and python
    assert main(["export", "--db", str(src), "--owner", "ana", "--file", str(plain)]) == 0
    rows = [json.loads(line) for line in plain.read_text().splitlines()]
    assert len(rows) == 7 and all("type" not in r and r["status"] == "active" for r in rows)  # current versions, untyped
    assert main(["export", "--db", str(src), "--owner", "ana", "--file", str(full), "--complete", "--json"]) == 0
    records = {"version": 2, "knowledge": 1, "pattern": len(patterns), "audit": len(audit)}
    assert json.loads(capsys.readouterr().out) == {"exported": 7, "owners": ["ana"], "file": str(full), "records": records}
    lines = [json.loads(line) for line in full.read_text().splitlines()]
    assert lines == python and [r for r in lines if r["type"] == "episode"] == [{"type": "episode", **r} for r in rows]
    of = {kind: [r for r in lines if r["type"] == kind] for kind in records}
    assert {r["summary"] for r in of["version"]} == {"original wombatword text", "factv1word"}
    assert {r["status"] for r in of["version"]} == {"superseded"}
    assert [r["text"] for r in of["knowledge"]] == ["quokkaword lesson text"]
    assert [r["text"] for r in of["pattern"]] == [p.text for p in patterns]
    at = [a["at"].isoformat().removesuffix("+00:00") + "Z" for a in audit]  # as an episode's ts (test_export_times.py)
    assert [(r["action"], r["at"]) for r in of["audit"]] == [(a["action"], t) for a, t in zip(audit, at, strict=True)]
    assert "bob's episode" not in full.read_text()
    assert main(["import", "--db", str(tmp_path / "copy"), str(full)]) == 0
    out = capsys.readouterr().out
    assert "ana: 7 imported" in out and "not imported (a complete export's records" in out and "2 version, 1 knowledge" in out
    # the file holds the earlier versions the cites name: they were not imported, which is what it says
    assert "ana: 2 cites dropped: they name episodes not imported (an earlier version" in out and "not in the file dropped" not in out
    with memdb.open(tmp_path / "copy") as db:
        copy = db.owner("ana")
        assert copy.count() == 7 and copy.entries() == [] and "wombatword" not in json.dumps([e.summary for e in copy.episodes()])
        report = copy.import_episodes([of["version"][0], lines[0]], source="x")  # in Python too: the version left out
        assert (report.count, report.skipped) == (0, 1) and "wombatword" not in json.dumps([e.summary for e in copy.episodes()])
        with pytest.raises(ValidationError, match="import item 1: type 'settings' is not a record memdb export writes"):
            copy.import_episodes([lines[0], {"type": "settings"}], source="x")
        with pytest.raises(ValidationError, match=r"import item 2: ts 1: expected an ISO date"):  # the item given, past those left out
            copy.import_episodes([of["version"][0], of["audit"][0], {**lines[1], "id": None, "ts": 1}], source="x")
        with pytest.raises(ValidationError, match=r"import item 2: kind 'gossip' is not configured"):
            copy.import_episodes([of["version"][0], of["audit"][0], {**lines[1], "id": None, "kind": "gossip"}], source="x")
    assert main(["import", "--db", str(tmp_path / "copy2"), str(full), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["not_imported"] == records
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"type": "settings", "owner": "ana"}) + "\n")
    assert main(["import", "--db", str(tmp_path / "copy3"), str(bad)]) == 1
    assert "bad.jsonl:2: type 'settings' is not a record memdb export writes" in one_error_line(capsys)
    assert not (tmp_path / "copy3").exists()


GOOD = {"owner": "ana", "kind": "debug", "summary": "fine", "outcome": "success", "ts": "2026-06-01T10:00:00Z"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"[1, 2]", ":3: expected a JSON object"),
        (json.dumps({**GOOD, "ts": 1751360400}).encode(), ":3: ts 1751360400: expected an ISO date or datetime string"),
        (json.dumps({**GOOD, "owner": ["ana"]}).encode(), ":3: owner ['ana']: expected a string"),
        (b"\xff\xfe", ":3: not UTF-8 text"),
        (b"{not json", ":3: not JSON"),
        (json.dumps({**GOOD, "ts": EARLY}).encode(), ":3: ts '0001-01-01T00:00:00+14:00': out of range"),
        (json.dumps({**GOOD, "kind": "gossip"}).encode(), ":3: kind 'gossip' is not configured"),
        (json.dumps({**GOOD, "tags": [1]}).encode(), ":3: tags.0=1"),
    ],
)
def test_import_names_the_bad_line_and_writes_nothing(
    line: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, file = tmp_path / "db", tmp_path / "in.jsonl"
    # bob's line comes first: a bad line of ana's must not leave bob's import behind
    file.write_bytes(json.dumps({**GOOD, "owner": "bob"}).encode() + b"\n" + json.dumps(GOOD).encode() + b"\n" + line + b"\n")
    assert main(["import", "--db", str(db), str(file)]) == 1
    assert f"{file}{message}" in one_error_line(capsys)
    with memdb.open(db) as opened:
        assert opened.owners() == []


# --- dates at the edges of datetime ------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["record", "debug", "x", "--outcome", "success", "--ts", EARLY], "--ts"),
        (["recall", "--since", EARLY], "--since"),
        (["recall", "--until", LATE], "--until"),
        (["ask", "anything", "--now", LATE], "--now"),
    ],
)
def test_dates_out_of_range_are_one_line_errors(argv: list[str], flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--db", str(tmp_path / "db")]) == 1
    line = one_error_line(capsys)
    assert line.startswith(f"memdb: {flag} ") and "out of range once converted to UTC" in line


# --- versions, facts and erasure (issue 23) -----------------------------------------------------------


class _Terminal:
    """A stdin that is a terminal, answering ``answer`` to the one question asked."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.answer


def test_get_supersede_and_erase(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db")
    with memdb.open(db) as opened:
        ep = opened.owner("ana").record("debug", "Deploy went out", outcome="success", content="long detail " * 100)
    common = ["--db", db, "--owner", "ana"]
    assert main(["get", ep.id, *common]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"{ep.id} ") and f"content: {ep.content}" in shown  # whole
    assert main(["supersede", ep.id, "--reason", "rolled back", "--outcome", "failure", "--lesson", "smoke test first", *common]) == 0
    line = capsys.readouterr().out.strip()
    new_id = line.split()[3]
    assert line.startswith(f"superseded {ep.id} by {new_id} (debug/failure)")
    assert main(["get", ep.id, *common, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["episode"]["status"] == "superseded" and data["versions"] == [ep.id, new_id]
    assert main(["supersede", ep.id, "--reason", "again", "--outcome", "partial", *common]) == 1
    assert f"already superseded by {new_id}" in one_error_line(capsys)
    assert main(["supersede", new_id, "--outcome", "partial", *common]) == 2  # --reason is required
    assert "the following arguments are required: --reason" in capsys.readouterr().err

    # not on a terminal, erase needs --yes; on one it asks, and only "y" erases
    assert main(["erase", new_id, "--reason", "wrong", *common]) == 1
    assert "--yes is required when not on a terminal (nothing erased)" in one_error_line(capsys)
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    assert main(["erase", new_id, "--reason", "wrong", *common]) == 1
    assert "not confirmed (nothing erased)" in capsys.readouterr().err
    with memdb.open(db) as opened:
        assert opened.owner("ana").count() == 2
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    assert main(["erase", new_id, "--reason", "wrong", *common, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["ids"]) == sorted([ep.id, new_id]) and report["count"] == 2
    assert main(["get", ep.id, *common]) == 1 and "no such episode" in one_error_line(capsys)


def test_erase_by_tags_asks_what_it_erases(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`memdb erase --tags acme` takes every episode tagged so; on a terminal it asks first, naming
    the tags; with neither ids nor tags it erases nothing and says why."""
    db = str(tmp_path / "db")
    with memdb.open(db) as opened:
        mem = opened.owner("ana")
        acme = [mem.record("debug", f"Acme ticket {i}", outcome="success", tags=["Acme"]).id for i in range(3)]
        keep = mem.record("debug", "Globex ticket", outcome="success", tags=["globex"]).id
        lesson = mem.save_lesson("Acme's API rate-limits at 10 requests a second", tags=["acme"]).id
    common = ["--db", db, "--owner", "ana"]
    assert main(["erase", "--reason", "x", "--yes", *common]) == 1
    assert "give episode ids or --tags (nothing erased)" in one_error_line(capsys)
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    assert main(["erase", "--tags", "acme", "--reason", "customer request", *common, "--json"]) == 0
    out = capsys.readouterr()
    assert "erase every episode tagged 'acme' of owner 'ana' for good" in out.err
    assert sorted(json.loads(out.out)["ids"]) == sorted(acme) and json.loads(out.out)["entries"] == [lesson]
    with memdb.open(db) as opened:
        assert [e.id for e in opened.owner("ana").episodes()] == [keep]
        opened.owner("ana").save_lesson("Globex answers within a day", tags=["globex"])
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    assert main(["erase", "--tags", "globex", "--reason", "customer request", *common]) == 0
    assert "erased 1 episode and 1 knowledge entry: " in capsys.readouterr().out  # the lesson that went is said


def test_record_takes_every_field_of_an_episode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`memdb record` took a summary, an outcome, tags, a lesson and content, but not what was
    tried, what happened, why, what was decided, who took part or what it touched: the episode's
    honest account could not be written from a shell. Bad --decisions is a one-line error naming
    it (sanitized) before the database is opened."""
    db = str(tmp_path / "db")
    argv = ["record", "--db", db, "--owner", "ana", "--json", "debug", "Deploy 42 failed: migration lock", "--outcome", "failure",
            "--what-we-tried", "ran the migration in the deploy", "--what-happened", "users locked for 4 minutes",
            "--why", "the migration took an exclusive lock", "--decisions", '{"action": "rollback", "token": "hunter2hunter2"}',
            "--participants", "Ana, Bo", "--artifact", "PRJ-123"]  # fmt: skip
    assert main(argv) == 0
    ep = json.loads(capsys.readouterr().out)
    assert (ep["what_we_tried"], ep["what_happened"], ep["why"], ep["artifact"]) == (
        "ran the migration in the deploy", "users locked for 4 minutes", "the migration took an exclusive lock", "PRJ-123",
    )  # fmt: skip
    assert ep["decisions"] == {"action": "rollback", "token": "<SECRET_1>"} and ep["participants"] == ["Ana", "Bo"]
    assert main(["ask", "--db", db, "--owner", "ana", "What did Bo work on?"]) == 0
    assert "Deploy 42 failed" in capsys.readouterr().out
    for bad, said in (('{"token": "hunter2hunter2"', "not JSON"), ("[1, 2]", "expected a JSON object")):
        assert main(["record", "--db", str(tmp_path / "new"), "debug", "x", "--outcome", "failure", "--decisions", bad]) == 1
        line = one_error_line(capsys)
        assert line.startswith("memdb: --decisions '") and said in line and "hunter2" not in line
    assert not (tmp_path / "new").exists()


def test_fact_and_facts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    common = ["--db", db, "--owner", "ana"]
    assert main(["fact", "ana/ui.theme", "light", *common]) == 0
    first = capsys.readouterr().out
    assert main(["fact", "ana/ui.theme", "dark", *common]) == 0
    second = capsys.readouterr().out
    assert first.startswith("ana/ui.theme = light (") and second.startswith("ana/ui.theme = dark (") and "replacing" in second
    assert main(["fact", "ana/ui.theme", "dark", *common]) == 0
    assert "(unchanged," in capsys.readouterr().out
    assert main(["fact", "ana/lang", "English", *common]) == 0
    capsys.readouterr()
    assert main(["fact", "ana/ui.theme", *common]) == 0
    assert capsys.readouterr().out == "ana/ui.theme = dark\n"
    assert main(["facts", *common]) == 0
    assert capsys.readouterr().out == "ana/lang = English\nana/ui.theme = dark\n"
    assert main(["facts", "--prefix", "ana/ui", *common, "--json"]) == 0
    assert [e["summary"] for e in json.loads(capsys.readouterr().out)] == ["dark"]
    assert main(["fact", "ana/nothing", *common]) == 1
    assert "fact 'ana/nothing': no such fact" in one_error_line(capsys)
    assert main(["fact", "not a key", "x", *common]) == 1
    assert "key" in one_error_line(capsys)
    # export and import keep a fact's key, so the copy answers the same
    assert main(["export", "--db", db, "--file", str(tmp_path / "x.jsonl")]) == 0
    assert main(["import", "--db", str(tmp_path / "copy"), str(tmp_path / "x.jsonl")]) == 0
    capsys.readouterr()
    with memdb.open(tmp_path / "copy") as copy:
        assert {e.key: e.summary for e in copy.owner("ana").facts()} == {"ana/lang": "English", "ana/ui.theme": "dark"}
        assert copy.owner("ana").count() == 2  # current versions only: "light" was superseded


def test_ask_prints_the_note_and_reaches_earlier_versions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``memdb ask`` printed what was searched and the memories, never the note: a partial answer
    read as a whole one, and the earlier versions it pointed to could not be asked for."""
    common = ["--db", str(tmp_path / "db"), "--owner", "ana"]
    for value in ("light", "dark"):
        assert main(["fact", "ana/ui.theme", f"{value} theme", *common]) == 0
    capsys.readouterr()
    assert main(["ask", "theme colours", *common]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("1 match for text theme colours; showing 1.") and "Partial: no memory mentions 'colours'" in out[0]
    assert "1 shown memory corrects an earlier version" in out[0]
    assert out[1] == "Recent memories (text theme colours; partial: these do not mention 'colours'):"
    assert main(["ask", "light", *common]) == 0
    assert capsys.readouterr().out.startswith("Nothing found for text light. 1 earlier version")
    assert main(["ask", "light", "--include-superseded", *common]) == 0
    assert "fact ana/ui.theme (superseded by" in capsys.readouterr().out
    assert main(["recall", "--text", "light", "--include-superseded", *common, "--json"]) == 0
    assert [m["episode"]["summary"] for m in json.loads(capsys.readouterr().out)["memories"]] == ["light theme"]


# --- help, refusals of a missing database, JSON errors (issue 23) ----------------------------------


def test_every_argument_says_what_it_takes() -> None:
    import argparse

    from memdb.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [f"{name} {a.dest}" for name, p in sub.choices.items() for a in p._actions if not a.help]
    assert missing == []
    record = " ".join(sub.choices["record"].format_help().split())
    assert "sprint, routine, roundtable, research, debug, review" in record and "`memdb stats` lists" in record
    recall = " ".join(sub.choices["recall"].format_help().split())
    assert "--since SINCE from this time, inclusive: ISO 8601 date or datetime, e.g. 2026-07-01" in recall


READS = [
    ["ask", "anything"], ["recall"], ["history"], ["get", "20260701T090000000000Z-000001"],
    ["explain", "20260701T090000000000Z-000001"], ["facts"], ["fact", "ana/ui.theme"], ["stats"], ["config"], ["dump"],
    ["export"], ["timeline", "s1"], ["maintain"], ["review"], ["restore", "20260701T090000000000Z-000001"],
]  # fmt: skip


@pytest.mark.parametrize("argv", READS, ids=lambda argv: argv[0])
@pytest.mark.parametrize("there", ["missing", "empty directory"])
def test_commands_that_do_not_record_refuse_a_path_without_a_database(
    argv: list[str], there: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo-db"
    if there == "empty directory":
        path.mkdir()
    assert main([*argv, "--db", str(path)]) == 1
    line = one_error_line(capsys)
    assert line.startswith(f"memdb: --db {path}: ") and ("no such directory" if there == "missing" else "no memdb database there") in line
    assert os.listdir(path) == [] if there == "empty directory" else not path.exists()  # nothing created


@pytest.mark.parametrize(
    "argv", [["record", "debug", "x", "--outcome", "success"], ["stats"], ["config", "timezone=UTC"]], ids=lambda a: a[0]
)
@pytest.mark.parametrize(
    "db", ["postgres:/memdb:S3cretPw!@127.0.0.1:1/postgres", "postgressql://memdb:S3cretPw!@h/db", "memdb:S3cretPw!@h/db"]
)
def test_a_mistyped_url_is_refused_with_its_password_masked(
    argv: list[str], db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A URL with a typo in the scheme or its ``//`` was recorded into a local directory named after
    it (exit 0), and a reading command printed it, password and all."""
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--db", db]) == 1
    line = one_error_line(capsys)
    assert "shaped like a URL, but not a postgresql://" in line and ":***@" in line and "S3cretPw!" not in line
    assert os.listdir(tmp_path) == []
    assert main([*argv, "--db", db, "--json"]) == 1
    out = capsys.readouterr().out
    assert json.loads(out)["error"]["type"] == "ConfigError" and "S3cretPw!" not in out


@pytest.mark.parametrize("argv", [["record", "debug", "x", "--outcome", "success"], ["stats"]], ids=lambda a: a[0])
@pytest.mark.parametrize(
    "db",
    [
        "postgresql//memdb:S3cretPw!@127.0.0.1/db",  # the scheme's colon dropped
        "postgres ://memdb:S3cretPw!@127.0.0.1/db",  # a blank before ://
        "postgressql://memdb:/S3cretPw!@127.0.0.1/db",  # a password starting with /
        "postgresql://memdb:/S3cretPw!@127.0.0.1:1/db",  # the same on PostgreSQL's scheme: libpq reads no password
    ],
)
def test_no_form_of_a_mistyped_url_shows_its_password(
    argv: list[str], db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """These became a local directory named after the URL (record: exit 0) whose path ``stats --json``
    printed, password and all; or were refused with the password shown."""
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--db", db]) == 1
    assert "S3cretPw!" not in one_error_line(capsys)
    assert main([*argv, "--db", db, "--json"]) == 1
    out = capsys.readouterr().out
    assert "S3cretPw!" not in out and ":***@" in json.loads(out)["error"]["message"]
    assert os.listdir(tmp_path) == []


def test_a_directory_named_like_user_at_host_opens_with_dot_slash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``team:ana@2026`` has the shape of ``user:pw@host``: refused, saying how to open it (``./`` before it)."""
    monkeypatch.chdir(tmp_path)
    assert main(["record", "debug", "x", "--outcome", "success", "--db", "team:ana@2026"]) == 1
    assert "put ./ before it" in one_error_line(capsys) and os.listdir(tmp_path) == []
    assert main(["record", "debug", "x", "--outcome", "success", "--db", "./team:ana@2026"]) == 0
    capsys.readouterr()
    assert main(["stats", "--db", "./team:ana@2026", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["path"] == str(tmp_path / "team:ana@2026") and stats["episodes"] == 1


def test_commands_that_record_create_the_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "debug", "first", "--outcome", "success", "--db", str(tmp_path / "a")]) == 0
    assert main(["fact", "ana/ui.theme", "dark", "--db", str(tmp_path / "b")]) == 0
    (tmp_path / "in.jsonl").write_text(json.dumps(GOOD) + "\n")
    assert main(["import", str(tmp_path / "in.jsonl"), "--db", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    for name in "abc":
        assert main(["stats", "--db", str(tmp_path / name), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["episodes"] == 1


def test_config_sets_a_new_database_s_kinds_before_its_first_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A sales agent's kinds (call, demo, deal) could be set from Python only: `memdb record call`
    said the kind was not configured and no command could configure it. `memdb config` lists
    every setting and changes some (validated as a whole, audited), creating the database."""
    db = str(tmp_path / "sales")
    assert main(["record", "call", "Call with Acme", "--outcome", "success", "--db", db]) == 1
    refused = one_error_line(capsys)
    assert "kind 'call' is not configured" in refused and "(configure typed_kinds to add one: at most 6)" in refused
    assert main(["config", "typed_kinds=call,demo,deal", "timezone=Europe/Berlin", "archive_after_days=60", "--db", db]) == 0
    assert capsys.readouterr().out.splitlines() == [
        'typed_kinds: ["sprint", "routine", "roundtable", "research", "debug", "review"] -> ["call", "demo", "deal"]',
        "archive_after_days: 30.0 -> 60.0",
        'timezone: "UTC" -> "Europe/Berlin"',
    ]
    assert main(["record", "call", "Call with Acme", "--outcome", "success", "--db", db]) == 0
    assert main(["config", "--db", db]) == 0
    listing = capsys.readouterr().out
    assert 'typed_kinds = ["call", "demo", "deal"]  # at most six kinds' in listing and 'timezone = "Europe/Berlin"' in listing
    assert main(["config", 'tag_weights={"vip": 1.0}', "typed_kinds=call,demo,deal", "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] == {"tag_weights": {"from": {"urgent": 1.0}, "to": {"vip": 1.0}}}
    for argv, message in (
        (["bogus=1"], "setting 'bogus': no such setting (settings: typed_kinds, "),
        (["archive_after_days=-3"], "archive_after_days=-3: Input should be greater than 0"),
        (["typed_kinds=a,b,c,d,e,f,g"], "7 typed kinds: at most 6 are allowed"),
        (["typed_kinds"], "'typed_kinds' is not SETTING=VALUE"),
        (["typed_kinds="], "setting typed_kinds: empty value (give [] for an empty list"),  # an unset $KINDS
        (["typed_kinds=null"], "typed_kinds=None: Input should be a valid tuple"),
        (["week_starts_on=true"], "week_starts_on='true': a number, not true or false"),
        (["lessons_per_day=3", "lessons_per_day=4"], "setting 'lessons_per_day' given twice"),
    ):
        assert main(["config", *argv, "--db", db]) == 1
        assert message in one_error_line(capsys), argv
    assert main(["config", "archive_after_days=-3", "--db", str(tmp_path / "typo")]) == 1  # refused before it is made
    assert "Input should be greater than 0" in one_error_line(capsys) and not (tmp_path / "typo").exists()
    assert main(["config", "typed_kinds=call,demo,deal", "--db", db]) == 0  # no change: said, and not audited
    assert capsys.readouterr().out == "no change: the settings already had those values\n"
    with memdb.open(db) as opened:  # nothing half-changed by the refusals; the changes audited
        assert opened.settings.typed_kinds == ("call", "demo", "deal") and opened.settings.archive_after_days == 60
        assert [a["action"] for a in opened.audit()].count("configure") == 2


def test_json_errors_are_json_on_stdout_with_the_same_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    assert main(["record", "debug", "x", "--outcome", "success", "--db", db]) == 0
    capsys.readouterr()
    cases = [
        (["get", "20260701T090000000000Z-000001"], 1, "NotFoundError", "no such episode"),
        (["record", "gossip", "x"], 1, "ValidationError", "'gossip'"),
        (["recall", "--since", "yesterday-ish"], 1, "ValidationError", "--since 'yesterday-ish': not an ISO date"),
        (["ask", "x", "--limit", "many"], 2, "UsageError", "memdb ask: "),
        (["ask", "x", "--limit", "many"], 2, "UsageError", "argument --limit: invalid int value: 'many'"),
        (["supersede", "20260701T090000000000Z-000001"], 2, "UsageError", "required: --reason"),
        (["stats", "--db", str(tmp_path / "typo")], 1, "NotFoundError", "no such directory"),
    ]
    for argv, code, kind, message in cases:
        for as_json in (True, False):
            assert main([argv[0], "--db", db, *argv[1:], *(["--json"] if as_json else [])]) == code, argv  # a later --db wins
            out, err = capsys.readouterr()
            if as_json:
                assert err == ""
                error = json.loads(out)["error"]
                assert error["type"] == kind and message in error["message"], (argv, error)
            else:
                assert out == "" and message in err


# --- explain, dump ------------------------------------------------------------------------------------


def test_explain_says_why_an_episode_ranks_and_counts_no_access(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    with memdb.open(db) as opened:
        ep = opened.owner("ana").record("debug", "Deploy went out", outcome="success", tags=["deploy"])
    for _ in range(2):
        assert main(["explain", ep.id, "--db", db, "--owner", "ana"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == f"{ep.id} debug/success: Deploy went out"
    assert text[-1].startswith("relevance ") and "(0 accesses)" in text[-1]  # explaining twice is no access
    assert main(["explain", ep.id, "--db", db, "--owner", "ana", "--json", "--now", "2026-12-31"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == ep.id and set(data["explanation"]) >= {"relevance", "frequency", "tags", "age", "feedback", "weights"}
    assert main(["explain", ep.id, "--db", db, "--owner", "bob"]) == 1  # another owner's id is unknown
    assert "no such episode" in one_error_line(capsys)


def test_dump_prints_m_notation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "db")
    with memdb.open(db) as opened:
        g = opened.globals["NOTES"]
        g["2026-07-01", 1, 'say "hi"'] = 0.5
        g["2026-07-01", 2] = "line\nbreak"
        g["2026-07-01", -1.25] = {"b": [1, 2], "a": None}
        g["raw", b"\x00A"] = b"xy"
        g["when"] = dt.datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
        g["flag"] = True
    assert main(["dump", "^NOTES", "--db", db]) == 0
    assert capsys.readouterr().out.splitlines() == [
        '^NOTES("2026-07-01",-1.25)=$ZJSON({"a": null, "b": [1, 2]})',
        '^NOTES("2026-07-01",1,"say ""hi""")=.5',
        '^NOTES("2026-07-01",2)="line"_$C(10)_"break"',
        '^NOTES("flag")=1',
        '^NOTES("raw",$C(0,65))=$C(120,121)',
        '^NOTES("when")=$ZDT("2026-07-01T09:00:00+00:00")',
    ]
    with memdb.open(db) as opened:
        opened.owner("ana").record("debug", "Deploy", outcome="success", ts=dt.datetime(2026, 7, 1, 9, tzinfo=UTC))
    assert main(["dump", "MEM", "--db", db]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert re.match(r'\^MEM\("ana","2026-07-01","20260701T090000000000Z-[0-9a-f]+"\)=\$ZJSON\(\{', line), line
    assert "datetime.datetime" not in line and '"summary": "Deploy"' in line


# --- progress on a terminal, quiet otherwise ------------------------------------------------------------


class _TTY:
    """A stderr that is a terminal, keeping what was written."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_import_progress_counts_episodes_and_maintain_reports_each_rule_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    file, db = tmp_path / "in.jsonl", str(tmp_path / "db")
    lines = [json.dumps({**GOOD, "owner": owner, "summary": f"{owner} {i}"}) for owner in ("ana", "bob") for i in range(7)]
    file.write_text("\n".join(lines) + "\n")
    assert main(["import", str(file), "--db", db]) == 0
    assert main(["maintain", "--db", db]) == 0
    assert capsys.readouterr().err == ""  # quiet when not a terminal
    tty = _TTY()
    monkeypatch.setattr("sys.stderr", tty)
    assert main(["import", str(file), "--db", str(tmp_path / "copy")]) == 0
    assert "import [" in tty.text and "] 14/14" in tty.text and "import done: 14" in tty.text  # 14 episodes, not 2 owners
    tty.text = ""
    assert main(["maintain", "--db", db]) == 0
    rules = [line.split()[1] for line in tty.text.splitlines() if line.endswith("...")]
    assert rules == ["summaries...", "rescoring...", "archiving..."]
    assert all(f"maintain: {rule[:-3]} done in " in tty.text for rule in rules)


def test_recall_include_told_adds_episodes_telling_of_the_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        db.owner("ops").record("debug", "Deploy failed yesterday", outcome="failure", ts=dt.datetime(2026, 7, 2, 9, tzinfo=dt.UTC))
    window = ["recall", "--owner", "ops", "--since", "2026-07-01", "--until", "2026-07-02", "--db", str(path), "--json"]
    assert main(window) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 0
    assert main([*window, "--include-told"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total"] == 1 and any("tells of 2026-07-01" in w for w in out["memories"][0]["why"])


def test_usage_errors_and_interpretations_show_personal_data_sanitized(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own errors quoted the bad value raw ("invalid choice: 'ana@example.com'"), and a
    session or a phone number asked about was echoed in the interpretation."""
    db = str(tmp_path / "db")
    assert main(["record", "debug", "deploy failed", "--db", db, "--owner", "ana", "--outcome", "failure"]) == 0
    capsys.readouterr()
    assert main(["ask", "hi", "--db", db, "--limit", "+1 (415) 555-0132", "--json"]) == 2
    assert main(["record", "debug", "x", "--db", db, "--outcome", "ana.sre@example.com"]) == 2
    assert main(["recall", "--db", db, "--owner", "ana", "--session", "ana.sre@example.com"]) == 0
    assert main(["ask", "call +1 (415) 555-0132", "--db", db, "--owner", "ana"]) == 0
    out = capsys.readouterr()
    for raw in ("555-0132", "555 0132", "ana.sre@example.com", "example.com"):
        assert raw not in out.out and raw not in out.err


def test_config_refuses_to_drop_a_kind_that_has_episodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'memdb config typed_kinds=debug,routine' on a database holding review episodes succeeded;
    answers asking a kind then left them out, and history refused them: refused, naming the kind."""
    db = str(tmp_path / "db")
    assert main(["record", "review", "Reviewed the failover drill", "--db", db, "--owner", "ana", "--outcome", "failure"]) == 0
    assert main(["config", "typed_kinds=debug,routine", "--db", db]) == 1
    assert "typed_kinds: 'review' still has episodes (owner 'ana' has some)" in capsys.readouterr().err
    assert main(["config", "typed_kinds=debug,routine,review,research", "--db", db]) == 0  # adding one is fine
    with memdb.open(db) as opened:
        mem = opened.owner("ana")
        mem.archive(mem.recall(kind="review").memories[0].id)
        with pytest.raises(memdb.errors.ConfigError, match="'review' still has episodes"):
            opened.configure(typed_kinds=["debug", "routine"])  # archived ones count
        opened.configure(typed_kinds=["debug", "routine", "review"])  # research had none


def test_the_command_s_notes_name_its_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'include_archived=True to see it' is the API's argument; the command says its flag."""
    db = str(tmp_path / "db")
    assert main(["record", "debug", "deploy failed", "--db", db, "--owner", "ana", "--outcome", "failure"]) == 0
    with memdb.open(db) as opened:
        mem = opened.owner("ana")
        mem.archive(mem.recall(text="deploy").memories[0].id)
    capsys.readouterr()
    assert main(["ask", "deploy", "--db", db, "--owner", "ana"]) == 0
    out = capsys.readouterr().out
    assert "--include-archived to see it" in out and "include_archived=True" not in out


def test_check_and_compact_finish_an_erasure_from_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command could erase but neither compact nor check: the erased text stayed in data.mdb
    with no way to finish the job from a shell (a DBA probe's find)."""
    db = tmp_path / "db"
    with memdb.open(db) as opened:
        opened.owner("ana").record("debug", "Acme contract renewal stalled", outcome="failure", tags=["acme"])
        opened.owner("ana").record("debug", "Unrelated deploy", outcome="success")
    assert main(["erase", "--db", str(db), "--owner", "ana", "--tags", "acme", "--reason", "request", "--yes"]) == 0
    assert "at the next `memdb compact`" in capsys.readouterr().out
    assert main(["compact", "--db", str(db), "--json"]) == 0
    sizes = json.loads(capsys.readouterr().out)
    assert sizes["bytes_after"] <= sizes["bytes_before"]
    assert b"contract renewal" not in (db / "data.mdb").read_bytes()
    assert main(["check", "--db", str(db)]) == 0
    assert capsys.readouterr().out.startswith("ok: 1 episodes")
    with memdb.open(db) as opened:  # an index entry lost
        ((subs, _),) = list(opened.globals["EPK"].items(("ana",)))[:1]
        opened.globals["EPK"].kill(subs)
    assert main(["check", "--db", str(db), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and report["episodes"] == 1 and report["problems"]


def test_backup_copies_the_whole_database_while_it_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``memdb export`` carries episodes only (no settings, knowledge or audit), so a restore
    from it lost the configured kinds and the approved knowledge: ``backup`` copies everything,
    as of one snapshot, while a writer goes on."""
    import threading

    db_path, dest = tmp_path / "db", tmp_path / "copy"
    with memdb.open(db_path) as db:
        db.configure(typed_kinds=["call", "deal"], retention_days=90)
        mem = db.owner("ana")
        first = mem.record("call", "Acme call went badly", outcome="failure", lesson="send the agenda first")
        stop = threading.Event()

        def write() -> None:
            i = 0
            while not stop.is_set():
                mem.record("deal", f"deal {i} closed", outcome="success")
                i += 1

        writer = threading.Thread(target=write)
        writer.start()
        try:
            db.backup(dest)
        finally:
            stop.set()
            writer.join()
        written = mem.count()
    assert stat.S_IMODE(dest.stat().st_mode) == 0o700 and stat.S_IMODE((dest / "data.mdb").stat().st_mode) == 0o600
    with memdb.open(dest) as copy:
        assert copy.check().ok and copy.settings.typed_kinds == ("call", "deal") and copy.settings.retention_days == 90
        assert 1 <= copy.owner("ana").count() <= written and copy.owner("ana").get(first.id).lesson == "send the agenda first"
    assert main(["backup", "--db", str(db_path), str(dest)]) == 1  # not empty: refused, the copy stays
    assert "is not empty" in one_error_line(capsys)
    assert main(["backup", "--db", str(db_path), str(tmp_path / "second"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bytes"] > 0
