"""Files memdb writes outside the database are private too: ``memdb export`` and timeline
exports are 0600, even over a file that existed (the token file's check is in test_mcp.py)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import memdb
from memdb.cli import main

pytestmark = pytest.mark.lmdb_only


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def _db(path: Path) -> Path:
    with memdb.open(path) as db:
        mem = db.owner("ana")
        mem.record("debug", "exported", outcome="failure")
        call = mem.record_tool_call("conv_1", "search", {"q": "x"})
        mem.record_tool_result(call.id, {"hits": 1})
    return path


@pytest.mark.parametrize("existed", [False, True])
def test_memdb_export_writes_a_private_file(tmp_path: Path, existed: bool) -> None:
    db, out = _db(tmp_path / "db"), tmp_path / "episodes.jsonl"
    if existed:
        out.write_text("old")
        out.chmod(0o644)
    assert main(["export", "--db", str(db), "--file", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o600
    assert '"exported"' in out.read_text()


@pytest.mark.parametrize("existed", [False, True])
def test_a_timeline_export_is_private(tmp_path: Path, existed: bool) -> None:
    db, out = _db(tmp_path / "db"), tmp_path / "conv_1.timeline.json"
    if existed:
        out.write_text("old")
        out.chmod(0o755)
    with memdb.open(db) as database:
        database.owner("ana").export_timeline("conv_1", out, overwrite=existed, now=dt.datetime(2026, 7, 1, tzinfo=dt.UTC))
    assert out.stat().st_mode & 0o777 == 0o600
