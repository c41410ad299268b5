"""Opening a database another process is writing: the checks before LMDB maps the file never
mistake a live file for a damaged one, and a map the writer grew meanwhile is adopted.
Real processes on a real LMDB directory (memdb/engine/lmdbdir.py, memdb/engine/lmdbfile.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memdb.engine.store import LMDBStore

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.lmdb_only


def _writer(path: Path, body: str) -> subprocess.Popen[str]:
    code = (
        textwrap.dedent(
            f"""
        import os, random, sys, time
        from memdb.engine.store import LMDBStore
        store = LMDBStore({str(path)!r}, map_size=1 << 20, sync=False)
        rnd, n, until = random.Random(8), 0, time.monotonic() + 2.5
        while time.monotonic() < until:
            with store.write() as w:
        """
        )
        + textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
        + "    n += 1\nprint(n)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _open_while_it_writes(path: Path, writer: subprocess.Popen[str]) -> int:
    opens = 0
    while writer.poll() is None:
        LMDBStore(path, map_size=1 << 20).close()  # any error fails the test
        opens += 1
    out, err = writer.communicate(timeout=30)
    assert writer.returncode == 0 and int(out) > 0, err
    return opens


def test_a_file_another_process_is_writing_is_never_called_damaged(tmp_path: Path) -> None:
    """Random puts and deletes leave the file ending before the last page the meta counts,
    now and then, with those pages free: the strict length rule refused 607 of 21,876 such
    opens. Each open here checks the meta pages and the length while the writer commits."""
    path = tmp_path / "db"
    LMDBStore(path).close()
    writer = _writer(
        path,
        """
        keys = [b"k%07d" % rnd.randrange(10**6) for _ in range(rnd.randrange(1, 200))]
        for k in keys:
            w.put(k, bytes(rnd.choice([20, 300, 3000, 9000])))
        for k in keys[: len(keys) * rnd.randrange(10) // 10]:
            w.delete(k)
        """,
    )
    assert _open_while_it_writes(path, writer) > 50


def test_an_open_adopts_a_map_a_writer_grew_under_it(tmp_path: Path) -> None:
    """A writer that adds pages past this process's map between LMDB reading the meta page and
    the first transaction failed the open with MDB_MAP_RESIZED (1,480 of 23,241 opens)."""
    path = tmp_path / "db"
    LMDBStore(path).close()
    writer = _writer(path, 'w.put(b"k%08d" % n, b"x" * 20000)')
    assert _open_while_it_writes(path, writer) > 50
