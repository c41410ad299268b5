"""The layout upgrade's progress report reaches its total: it counts every episode it has gone
through, and says apart how many it rewrote (memdb/memory/migrate.py)."""

from __future__ import annotations

import logging
import re
import shutil
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import layout7_queries as queries  # noqa: E402

pytestmark = pytest.mark.lmdb_only


def test_the_progress_of_an_upgrade_ends_at_its_total(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The layout-7 fixture holds archived and superseded episodes, which have no hot index to
    rewrite: the report ended at "29 of 39 episodes rewritten", an upgrade that looked cut short."""
    shutil.copytree(FIXTURES / "layout7" / "db", tmp_path / "db")
    with caplog.at_level(logging.INFO, logger="memdb.memory.migrate"), queries.open_db(tmp_path / "db") as db:
        assert db.check().ok
    lines = [r.getMessage() for r in caplog.records if r.name == "memdb.memory.migrate"]
    progress = [m for m in (re.match(r"layout upgrade: (\d+) of (\d+) episodes done, (\d+) rewritten", line) for line in lines) if m]
    finished = next(m for m in (re.match(r"layout upgraded to \d+: (\d+) episodes rewritten", line) for line in lines) if m)
    done, total, rewritten = map(int, progress[-1].groups())
    assert done == total and rewritten == int(finished.group(1)) < total
