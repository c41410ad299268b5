"""The ``memdb`` command against other processes: a command killed while it builds a new
database, a Ctrl-C before the command has loaded, and two imports of one file at once.

Each test drives real processes on a real LMDB database in ``tmp_path``. A process is held at
the step under test by a patch that prints MARK on stderr and waits for a line on stdin, so
what another process does lands in that window every time, whatever the machine's load.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import memdb
from memdb.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
A_DAY = 24 * 3600.0  # older than the grace an empty scratch gets (memdb.cli._SCRATCH_GRACE)

_HARNESS = """
import sys, time
import memdb.cli
{patch}
sys.exit(memdb.cli.main({argv!r}))
"""

# held after the real call (its writes are made, uncommitted) until a line comes on stdin
_HOLD = """
from memdb.surfaces.handle import Memory
real = Memory.{method}
def held(*args, **kwargs):
    result = real(*args, **kwargs)
    print("MARK", file=sys.stderr, flush=True)
    sys.stdin.readline()
    return result
Memory.{method} = held
"""


def held(argv: list[str], method: str) -> subprocess.Popen[str]:
    """``memdb argv`` in a process held inside ``Memory.method`` (released by a line on stdin)."""
    code = _HARNESS.format(patch=textwrap.dedent(_HOLD.format(method=method)), argv=argv)
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    assert p.stderr is not None
    assert p.stderr.readline().strip() == "MARK", p.communicate(timeout=60)
    return p


def release(p: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = p.communicate("\n", timeout=60)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def scratch_dirs(parent: Path) -> list[str]:
    return sorted(n for n in os.listdir(parent) if n.startswith(".memdb-new-"))


def record_argv(db: Path, summary: str) -> list[str]:
    return ["record", "debug", summary, "--outcome", "success", "--db", str(db)]


# --- a command killed while it builds a new database ----------------------------------------------


def test_a_later_command_removes_the_scratch_a_killed_command_left_and_not_a_live_ones(tmp_path: Path) -> None:
    db = tmp_path / "db"
    killed = held(record_argv(db, "killed"), "record")
    killed.kill()  # SIGKILL: no handler, no cleanup
    killed.communicate(timeout=60)
    (dead,) = scratch_dirs(tmp_path)  # the database it was building, beside the target
    assert os.listdir(tmp_path / dead)
    live = held(record_argv(db, "live"), "record")  # building its own, beside the dead one's
    try:
        (mine,) = set(scratch_dirs(tmp_path)) - {dead}
        old = time.time() - A_DAY
        os.utime(tmp_path / mine, (old, old))  # age alone never condemns a build under way
        assert main(record_argv(db, "later")) == 0
        assert scratch_dirs(tmp_path) == [mine]  # the dead one's removed, the live one's kept
    finally:
        done = release(live)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["db"]  # the live one wrote into the database made meanwhile
    with memdb.open(db) as d:
        assert sorted(h.episode.summary for h in d.owner("default").recall(limit=10).memories) == ["later", "live"]


def test_an_empty_scratch_is_left_until_its_builder_had_time_to_lock_it(tmp_path: Path) -> None:
    young, old = tmp_path / ".memdb-new-young", tmp_path / ".memdb-new-old"
    young.mkdir()
    old.mkdir()
    then = time.time() - A_DAY
    os.utime(old, (then, then))
    (tmp_path / ".memdb-new-file").write_text("not a directory: not ours")
    assert main(record_argv(tmp_path / "db", "x")) == 0
    assert sorted(os.listdir(tmp_path)) == [".memdb-new-file", ".memdb-new-young", "db"]
