"""The ``memdb`` command against other processes: a command killed while it builds a new
database, a Ctrl-C before the command has begun, and two imports of one file at once.

Each test drives real processes on a real LMDB database in ``tmp_path``. A process is held at
the step under test by a patch that prints MARK on stderr and waits for a line on stdin, so
what another process does lands in that window every time, whatever the machine's load.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
import types
from pathlib import Path

import pytest

import _memdb_cli
import memdb
import memdb.cli
from _memdb_cli import NOT_BEGUN
from memdb.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
A_DAY = 24 * 3600.0

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
    assert ".memdb-scratch" not in os.listdir(db)  # the mark of a build under way does not come along
    with memdb.open(db) as d:
        assert sorted(h.episode.summary for h in d.owner("default").recall(limit=10).memories) == ["later", "live"]


_KILLED_AT_RENAME = """
import os, signal
real_rename = os.rename
def rename(src, dst, *args, **kwargs):
    if os.path.basename(src).startswith(".memdb-new-"):
        os.kill(os.getpid(), signal.SIGKILL)  # the database is whole, committed, not yet in place
    return real_rename(src, dst, *args, **kwargs)
os.rename = rename
"""


def test_a_build_killed_just_before_its_rename_is_swept_too(tmp_path: Path) -> None:
    """A review's find: the mark was taken out before the rename, so a command killed between the
    two left a whole database in an unmarked scratch that no sweep removes."""
    db = tmp_path / "db"
    code = _HARNESS.format(patch=textwrap.dedent(_KILLED_AT_RENAME), argv=record_argv(db, "killed"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=60)
    assert done.returncode == -9, done.stderr
    (dead,) = scratch_dirs(tmp_path)
    assert ".memdb-scratch" in os.listdir(tmp_path / dead)
    assert main(record_argv(db, "later")) == 0
    assert sorted(os.listdir(tmp_path)) == ["db"] and ".memdb-scratch" not in os.listdir(db)


_OPEN_HELD = """
import sys, memdb
with memdb.open(sys.argv[1]) as d:
    print("MARK", file=sys.stderr, flush=True)
    sys.stdin.readline()
"""


def held_open(path: Path) -> subprocess.Popen[str]:
    """A process with the database at ``path`` open (until a line on stdin)."""
    p = subprocess.Popen(
        [sys.executable, "-c", _OPEN_HELD, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    assert p.stderr is not None and p.stderr.readline().strip() == "MARK", p.communicate(timeout=60)
    return p


def killed_build(parent: Path) -> Path:
    """The scratch directory a ``memdb record`` killed while it built a new database left in ``parent``."""
    killed = held(record_argv(parent / "db", "killed"), "record")
    killed.kill()
    killed.communicate(timeout=60)
    (dead,) = scratch_dirs(parent)
    return parent / dead


def test_a_directory_only_named_like_a_scratch_is_never_swept(tmp_path: Path) -> None:
    """The sweep removed any unlocked ``.memdb-new-*`` directory holding anything, or empty and
    old: a database a user named so, or that ``memdb record --db .memdb-new-team`` made, went with
    the next record beside it. Only a directory memdb's build marked as its own is swept."""
    young, old = tmp_path / ".memdb-new-young", tmp_path / ".memdb-new-old"
    young.mkdir()
    old.mkdir()
    then = time.time() - A_DAY
    os.utime(old, (then, then))  # a builder killed before it marked its scratch leaves no more than this
    (tmp_path / ".memdb-new-file").write_text("not a directory: not ours")
    (tmp_path / ".memdb-new-notes").mkdir()
    (tmp_path / ".memdb-new-notes" / "todo.txt").write_text("a user's")
    with memdb.open(tmp_path / ".memdb-new-team") as d:
        d.owner("ana").record("debug", "the only copy of this lesson", outcome="failure", lesson="keep me")
    assert main(record_argv(tmp_path / ".memdb-new-cli", "made by the command")) == 0
    assert ".memdb-scratch" not in os.listdir(tmp_path / ".memdb-new-cli")  # unmarked before it was moved into place
    assert main(record_argv(tmp_path / "db", "x")) == 0
    kept = [".memdb-new-cli", ".memdb-new-file", ".memdb-new-notes", ".memdb-new-old", ".memdb-new-team", ".memdb-new-young"]
    assert sorted(os.listdir(tmp_path)) == [*kept, "db"]
    with memdb.open(tmp_path / ".memdb-new-team") as d:
        assert [h.episode.lesson for h in d.owner("ana").recall().memories] == ["keep me"]


def test_a_database_named_like_a_scratch_is_kept_while_another_process_has_it_open(tmp_path: Path) -> None:
    """The review's case: a live process's database named ``.memdb-new-team`` (LMDB does not
    flock the directory) was deleted under it by a record of another database beside it."""
    team = tmp_path / ".memdb-new-team"
    with memdb.open(team) as d:
        d.owner("ana").record("debug", "the only copy of this lesson", outcome="failure", lesson="keep me")
    serving = held_open(team)
    try:
        assert main(record_argv(tmp_path / "other", "unrelated")) == 0
    finally:
        done = release(serving)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == [".memdb-new-team", "other"]
    with memdb.open(team) as d:
        assert d.owner("ana").count() == 1


def test_a_dead_builds_scratch_is_kept_while_any_process_has_it_open(tmp_path: Path) -> None:
    """Marked and unlocked, but open as a database (someone looking into what a killed command
    left): kept until nobody has it open, in another process or in this one."""
    dead = killed_build(tmp_path)
    looking = held_open(dead)
    try:
        assert main(record_argv(tmp_path / "db", "one")) == 0
        assert scratch_dirs(tmp_path) == [dead.name]
    finally:
        assert release(looking).returncode == 0
    with memdb.open(dead) as d:  # here: its lock.mdb is not even opened (closing it would drop LMDB's locks)
        assert main(record_argv(tmp_path / "db", "two")) == 0
        assert scratch_dirs(tmp_path) == [dead.name]
        assert d.owner("default").count() == 1  # still usable
    assert main(record_argv(tmp_path / "db", "three")) == 0
    assert scratch_dirs(tmp_path) == []


# --- a Ctrl-C before the command has begun ---------------------------------------------------------

_LOADING = """
import importlib.abc, sys, time
class Hold(importlib.abc.MetaPathFinder):  # memdb/__init__.py's imports, held halfway
    def find_spec(self, name, path=None, target=None):
        if name == "memdb.surfaces.database":
            sys.meta_path.remove(self)
            print("MARK", file=sys.stderr, flush=True)
            for _ in range(600):  # short sleeps: a signal taken by another thread does not cut a long one short
                time.sleep(0.1)
        return None
sys.meta_path.insert(0, Hold())
from {module} import {function}  # what pip's console-script wrapper runs
sys.exit({function}())
"""


def interrupted(code: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``python -c code argv``, sent SIGINT once it prints MARK on stderr."""
    p = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert p.stderr is not None and p.stderr.readline().strip() == "MARK"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def said(done: subprocess.CompletedProcess[str], as_json: bool, message: str) -> bool:
    """Exactly what a script reads: the same text in every window (test_one_text_in_both_windows)."""
    if as_json:
        error = json.dumps({"error": {"type": "Interrupted", "message": message}}, ensure_ascii=False, indent=2)
        return done.stderr == "" and done.stdout == error + "\n"
    return done.stdout == "" and done.stderr == f"memdb: {message}\n"


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130(tmp_path: Path, as_json: bool) -> None:
    """The installed ``memdb`` script, interrupted while ``memdb/__init__.py`` imports its modules."""
    script = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["memdb"]
    module, function = script.split(":")
    argv = ["stats", "--db", str(tmp_path / "db"), *(["--json"] if as_json else [])]
    done = interrupted(_LOADING.format(module=module, function=function), argv)
    assert done.returncode == 130 and said(done, as_json, NOT_BEGUN), done.stderr


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_while_the_arguments_are_parsed_is_one_line_and_exit_130(tmp_path: Path, as_json: bool) -> None:
    patch = """
    real = memdb.cli.build_parser
    def held():
        print("MARK", file=sys.stderr, flush=True)
        for _ in range(600):
            time.sleep(0.1)
        return real()
    memdb.cli.build_parser = held
    """
    argv = ["stats", "--db", str(tmp_path / "db"), *(["--json"] if as_json else [])]
    done = interrupted(_HARNESS.format(patch=textwrap.dedent(patch), argv=argv), [])
    assert done.returncode == 130 and said(done, as_json, NOT_BEGUN), done.stderr


class _Loading(types.ModuleType):
    """``memdb.cli`` as ``from memdb.cli import main`` meets it when a Ctrl-C comes while it loads."""

    def __getattr__(self, name: str) -> object:
        raise KeyboardInterrupt


@pytest.mark.parametrize("argv", [["stats"], ["stats", "--json"], ["dump", "--json"], ["--json", "ask", "x"]])
def test_one_text_in_both_windows(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """The early entry point and memdb.cli.main each held a copy of the message, of when it is
    JSON and of the JSON (one escaped non-ASCII, the other not): one definition, in _memdb_cli."""
    monkeypatch.setattr(_memdb_cli, "NOT_BEGUN", "interrompu avant le début (rien n'a été fait)")
    monkeypatch.setattr(memdb.cli, "build_parser", lambda: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(argv) == 130
    parsing = capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["memdb", *argv])
    monkeypatch.setitem(sys.modules, "memdb.cli", _Loading("memdb.cli"))
    assert _memdb_cli.main() == 130
    loading = capsys.readouterr()
    assert (loading.out, loading.err) == (parsing.out, parsing.err)
    as_json = argv[:1] != ["dump"] and "--json" in argv
    assert said(subprocess.CompletedProcess(argv, 130, parsing.out, parsing.err), as_json, _memdb_cli.NOT_BEGUN)


# --- two imports of one file at once ----------------------------------------------------------------

N = 20


def exported(tmp_path: Path) -> Path:
    """An export of N episodes (each line with the id import skips a second time)."""
    src, file = tmp_path / "src", tmp_path / "x.jsonl"
    with memdb.open(src) as d:
        ana = d.owner("ana")
        for i in range(N):
            ana.record("debug", f"attempt {i}", outcome="success")
        file.write_text("".join(json.dumps(row) + "\n" for row in ana.export()))
    return file


def counts(done: subprocess.CompletedProcess[str]) -> tuple[int, int]:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    return out["imported"]["ana"], out["skipped"]["ana"]


@pytest.mark.parametrize("new", [False, True], ids=["into-a-database", "at-a-new-path"])
def test_two_imports_of_one_file_at_once_record_each_episode_once(tmp_path: Path, new: bool) -> None:
    file, db = exported(tmp_path), tmp_path / "db"
    if not new:
        memdb.open(db).close()
    argv = ["import", str(file), "--db", str(db), "--json"]
    first = held(argv, "import_episodes")  # its episodes written, not yet committed (or not yet moved into place)
    command = [sys.executable, "-m", "memdb.cli", *argv]
    second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    if new:  # it builds its own database beside the path and moves it there first
        out, err = second.communicate(timeout=60)
    one = release(first)
    if not new:  # it waited for the first's write to commit
        out, err = second.communicate(timeout=60)
    two = subprocess.CompletedProcess(argv, second.returncode, out, err)
    assert sorted([counts(one), counts(two)]) == [(0, N), (N, 0)]
    with memdb.open(db) as d:
        assert d.owner("ana").count() == N and d.check().ok


_API_HELD = """
import json, sys
import memdb
from memdb.memory.episodes import OwnerEpisodes
real, calls = OwnerEpisodes._check_live, []
def held(*args, **kwargs):  # the first call follows the check of every id, before the write
    if not calls:
        print("MARK", file=sys.stderr, flush=True)
        sys.stdin.readline()
    calls.append(1)
    return real(*args, **kwargs)
OwnerEpisodes._check_live = held
rows = [json.loads(line) for line in open(sys.argv[2])]
with memdb.open(sys.argv[1]) as d:
    report = d.owner("ana").import_episodes(rows, source="jsonl:x.jsonl")
print(json.dumps({"imported": {"ana": report.count}, "skipped": {"ana": report.skipped}}))
"""


def test_an_import_that_checked_its_ids_before_another_committed_them_skips_them(tmp_path: Path) -> None:
    """Memory.import_episodes checks the ids before its write transaction (outside one, as the
    API is called): another process's import of the same file may commit in between, and the
    check is made again inside the write."""
    file, db = exported(tmp_path), tmp_path / "db"
    memdb.open(db).close()
    p = subprocess.Popen(
        [sys.executable, "-c", _API_HELD, str(db), str(file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    assert p.stderr is not None and p.stderr.readline().strip() == "MARK"
    command = [sys.executable, "-m", "memdb.cli", "import", str(file), "--db", str(db), "--json"]
    other = subprocess.run(command, capture_output=True, text=True, env=ENV)
    assert counts(other) == (N, 0)
    assert counts(release(p)) == (0, N)
    with memdb.open(db) as d:
        assert d.owner("ana").count() == N and d.check().ok
