"""A complete export writes every time one way: ISO 8601 in UTC ending ``Z`` (README: "--json
writes every time as ... ending Z"). Its audit lines wrote ``+00:00`` beside episode lines
ending ``Z``, so the same instant read as two strings and a consumer joining an audit record to
its episode by ``ts`` found no match. Import reads both forms, and the round trip holds."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.cli import main

UTC = dt.UTC
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")


def _times(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every (where, text) in a line that reads as an ISO datetime."""
    if isinstance(value, str):
        return [(path, value)] if ISO.match(value) else []
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _times(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [t for i, v in enumerate(value) for t in _times(v, f"{path}[{i}]")]
    return []


def _database(path: Path) -> str:
    """A backfilled record (a ``backfill`` audit line dated as the episode), a correction, a lesson."""
    with memdb.open(path, clock=lambda: dt.datetime(2026, 7, 1, 9, 30, 15, 250000, tzinfo=UTC)) as db:
        ana = db.owner("ana")
        ep = ana.record("debug", "Deploy failed", outcome="failure", ts=dt.datetime(2026, 1, 5, 10, tzinfo=UTC))
        ana.supersede(ep.id, reason="typo", summary="Deploy failed twice")
        ana.save_lesson("take the lock with a timeout")
        return ep.id


def test_a_complete_export_writes_every_time_in_utc_ending_z(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _database(tmp_path / "db")
    assert main(["export", "--complete", "--json", "--db", str(tmp_path / "db")]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["type"] for line in lines} == {"episode", "version", "knowledge", "audit"}
    times = [(line["type"], where, text) for line in lines for where, text in _times(line)]
    assert [t for t in times if t[0] == "audit"] and [t for t in times if not t[2].endswith("Z")] == []
    episode = next(line for line in lines if line["type"] == "episode")
    backfill = next(line for line in lines if line["type"] == "audit" and line["action"] == "backfill")
    assert backfill["ts"] == episode["ts"] == "2026-01-05T10:00:00Z"  # one instant, one string
    assert backfill["at"] == "2026-07-01T09:30:15.250000Z"


def test_the_python_export_writes_the_audit_lines_so_too(tmp_path: Path) -> None:
    _database(tmp_path / "db")
    with memdb.open(tmp_path / "db") as db:
        audit = [row for row in db.owner("ana").export(complete=True) if row["type"] == "audit"]
    assert audit and all(text.endswith("Z") for row in audit for _, text in _times(row))


def test_import_reads_both_forms_and_the_round_trip_keeps_the_times(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An export written before (``+00:00`` on its audit lines, and an episode line written by hand
    with ``+00:00`` or another zone) imports as one written now."""
    _database(tmp_path / "db")
    full = tmp_path / "full.jsonl"
    assert main(["export", "--complete", "--db", str(tmp_path / "db"), "--file", str(full)]) == 0
    lines = [json.loads(line) for line in full.read_text().splitlines()]

    def as_before(line: dict[str, Any]) -> dict[str, Any]:
        if line["type"] != "audit":
            return line
        return {k: v[:-1] + "+00:00" if isinstance(v, str) and ISO.match(v) else v for k, v in line.items()}

    old = [as_before(line) for line in lines]
    episode = next(line for line in lines if line["type"] == "episode")
    by_hand = {**episode, "id": None, "ts": "2026-01-05T12:00:00+02:00", "summary": "Deploy failed, by hand"}
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(line) + "\n" for line in [*old, by_hand]))
    for name, source in (("copy", full), ("copy-old", tmp_path / "old.jsonl")):
        assert main(["import", "--json", "--db", str(tmp_path / name), str(source)]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["not_imported"]["audit"] == sum(line["type"] == "audit" for line in lines)
        with memdb.open(tmp_path / name) as db:
            back = {e.summary: e for e in db.owner("ana").episodes()}
            again = [row for row in db.owner("ana").export(complete=True) if row["type"] == "episode"]
        assert back["Deploy failed twice"].ts == dt.datetime(2026, 1, 5, 10, tzinfo=UTC)
        assert {row["ts"] for row in again} == {"2026-01-05T10:00:00Z"}
    assert back["Deploy failed, by hand"].ts == dt.datetime(2026, 1, 5, 10, tzinfo=UTC)
