"""Compaction is exclusive from its check to its swap, never follows a link, and touches only
what it writes. Real LMDB directories, real processes (memdb/engine/lmdbdir.py holds the lock).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdb.engine import lmdbdir
from memdb.engine.store import LMDBStore
from memdb.errors import StoreBusyError, StoreError

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/engine/)
pytestmark = pytest.mark.lmdb_only


def _run(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def _fill(store: LMDBStore, n: int = 3000) -> None:
    with store.write() as w:
        for i in range(n):
            w.put(b"base%06d" % i, b"v" * 300)


_WRITER = """
    import os, sys, time
    from memdb.engine.store import LMDBStore
    path, name, stop, log = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    n = waited = 0
    with open(log, "w") as out:
        while not os.path.exists(stop):
            t = time.monotonic()
            store = LMDBStore(path)  # waits while a compaction holds the directory
            waited += time.monotonic() - t > 0.005
            try:
                with store.write() as w:
                    w.put(b"%s-%06d" % (name.encode(), n), b"committed")
                print(n, file=out, flush=True)  # only once the commit returned: it must survive
            finally:
                store.close()
            n += 1
            time.sleep(0.001 * (n % 4))  # closed a moment: room for a compaction to start
        print("waited", waited, file=out, flush=True)
"""


def test_no_commit_is_lost_while_other_processes_keep_opening_and_writing(tmp_path: Path) -> None:
    """Two processes open, write and close in a loop while this one compacts again and again.

    Before the lock, a process that opened during the copy committed into the file compaction
    then replaced (issue 25: 21 commits, 1 left). Every commit a writer saw return must be there.
    """
    path, stop = tmp_path / "db", tmp_path / "stop"
    store = LMDBStore(path)
    _fill(store)
    logs = {name: tmp_path / f"{name}.log" for name in ("w1", "w2")}
    writers = {name: _run(_WRITER, str(path), name, str(stop), str(log)) for name, log in logs.items()}
    compacted = refused = 0
    try:
        started = time.monotonic()
        while not all(log.exists() and log.stat().st_size for log in logs.values()):  # both have committed once
            assert time.monotonic() - started < 60 and all(p.poll() is None for p in writers.values())
            time.sleep(0.01)
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            try:
                store.compact()
                compacted += 1
            except StoreBusyError as exc:  # a writer had it open at the check: refused, never half-done
                assert "has the database open; compaction needs exclusive use" in str(exc)
                refused += 1
            time.sleep(0.002)  # let the writers in between
    finally:
        stop.touch()
        errors = {name: p.communicate(timeout=60)[1] for name, p in writers.items()}
    for name, log in logs.items():
        assert writers[name].returncode == 0, errors[name]
        lines = log.read_text().split()
        assert lines[-2] == "waited", errors[name]
        committed = [int(x) for x in lines[:-2]]
        with store.read() as r:
            lost = [n for n in committed if r.get(b"%s-%06d" % (name.encode(), n)) != b"committed"]
        assert lost == [], f"{name}: {len(lost)} of {len(committed)} commits lost across {compacted} compactions"
        print(f"{name}: {len(committed)} commits, {lines[-1]} opens waited for a compaction")
    assert compacted >= 10, f"only {compacted} compactions ran ({refused} refused): the race was not exercised"
    print(f"{compacted} compactions, {refused} refused")
    with store.read() as r:
        assert len(list(r.scan(b"base", b"basf"))) == 3000
    store.close()


def test_compaction_refuses_while_a_process_has_it_open_with_plain_lmdb(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = LMDBStore(path)
    _fill(store, 10)
    child = _run(
        """
        import sys, lmdb
        env = lmdb.open(sys.argv[1], max_dbs=0)
        print("open", flush=True)
        sys.stdin.read()
        """,
        str(path),
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "open"
        with pytest.raises(StoreBusyError, match=f"process {child.pid} has the LMDB environment open"):
            store.compact()
        with store.write() as w:  # the refusal left this process's environment working
            w.put(b"after", b"refusal")
    finally:
        child.communicate("", timeout=30)
    store.compact()
    with store.read() as r:
        assert r.get(b"after") == b"refusal" and r.get(b"base000009") is not None
    store.close()


def test_looking_for_other_processes_keeps_this_processs_own_locks(tmp_path: Path) -> None:
    """POSIX drops all of a process's locks on a file when it closes any descriptor of it: the
    old check (open lock.mdb, ask, close) dropped LMDB's own lock, so a later opener could
    reset the reader table under a live environment. Another process must still see ours."""
    path = tmp_path / "db"
    store = LMDBStore(path)
    _fill(store, 10)
    for _ in range(2):
        helper = _run(
            """
            import sys, lmdb
            env = lmdb.open(sys.argv[1], max_dbs=0)
            print("open", flush=True)
            sys.stdin.read()
            """,
            str(path),
        )
        assert helper.stdout is not None and helper.stdout.readline().strip() == "open"
        with pytest.raises(StoreBusyError):
            store.compact()
        helper.communicate("", timeout=30)
    probe = _run(
        """
        import os, sys
        from memdb.engine import lmdbdir
        fd = os.open(os.path.join(sys.argv[1], "lock.mdb"), os.O_RDWR)
        print(lmdbdir.holder(fd, lmdbdir.LMDB), lmdbdir.holder(fd, lmdbdir.OURS))
        """,
        str(path),
    )
    out, err = probe.communicate(timeout=30)
    assert out.split() == [str(os.getpid())] * 2, err
    store.close()


def test_an_open_waits_for_exclusive_use_then_names_the_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db"
    LMDBStore(path).close()
    holder = _run(
        """
        import fcntl, os, sys
        from memdb.engine import lmdbdir
        fd = os.open(os.path.join(sys.argv[1], "lock.mdb"), os.O_RDWR)
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, lmdbdir.OURS)  # what a compaction holds
        print("held", flush=True)
        sys.stdin.read()
        """,
        str(path),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(lmdbdir, "WAIT_SECONDS", 0.3)
        started = time.monotonic()
        with pytest.raises(StoreBusyError, match=f"process {holder.pid} has kept exclusive use for 0 s"):
            LMDBStore(path)
        assert time.monotonic() - started >= 0.3
    finally:
        holder.communicate("", timeout=30)
    LMDBStore(path).close()  # released: opens at once


@pytest.mark.slow
def test_a_compaction_killed_at_any_moment_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = LMDBStore(path)
    _fill(store)
    store.close()
    for trial in range(8):
        child = _run(
            """
            import sys
            from memdb.engine.store import LMDBStore
            store = LMDBStore(sys.argv[1])
            print("open", flush=True)
            while True:
                store.compact()
            """,
            str(path),
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "open"
        time.sleep(0.02 + 0.03 * trial)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=30)
        store = LMDBStore(path)  # a leftover .compact of the killed one is removed by the next compaction
        with store.read() as r:
            assert len(list(r.scan(b"base", b"basf"))) == 3000, f"trial {trial}"
        store.compact()
        assert not (path / ".compact").exists()
        store.close()


# --- links and files compaction did not write ------------------------------------------------


def _victim(tmp_path: Path) -> Path:
    """A directory of someone's files that a link points into."""
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("data.mdb", "lock.mdb", "notes.txt"):
        (victim / name).write_text(f"keep {name}")
    return victim


def _untouched(victim: Path) -> bool:
    return sorted(p.name for p in victim.iterdir()) == ["data.mdb", "lock.mdb", "notes.txt"] and all(
        (victim / name).read_text() == f"keep {name}" for name in ("data.mdb", "lock.mdb", "notes.txt")
    )


def test_a_compact_link_is_refused_and_what_it_points_to_is_untouched(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = LMDBStore(path)
    _fill(store, 10)
    victim = _victim(tmp_path)
    (path / ".compact").symlink_to(victim)
    with pytest.raises(StoreError, match=r"\.compact is not a directory of memdb's \(a link or a file\)"):
        store.compact()
    assert _untouched(victim)
    with store.write() as w:
        w.put(b"still", b"works")
    (path / ".compact").unlink()
    store.compact()
    with store.read() as r:
        assert r.get(b"still") == b"works"
    store.close()


@pytest.mark.parametrize("leftover", ["file", "dir with other files", "dir with a linked data.mdb"])
def test_a_compact_entry_compaction_did_not_write_is_refused_and_kept(tmp_path: Path, leftover: str) -> None:
    path = tmp_path / "db"
    store = LMDBStore(path)
    _fill(store, 10)
    victim = _victim(tmp_path)
    scratch = path / ".compact"
    if leftover == "file":
        scratch.write_text("mine")
    else:
        scratch.mkdir()
        if leftover == "dir with other files":
            (scratch / "notes.txt").write_text("mine")
        else:
            (scratch / "data.mdb").symlink_to(victim / "data.mdb")
    with pytest.raises(StoreError, match=r"\.compact"):
        store.compact()
    assert _untouched(victim)
    if leftover == "file":
        assert scratch.read_text() == "mine"
    elif leftover == "dir with other files":
        assert (scratch / "notes.txt").read_text() == "mine"
    else:
        assert (scratch / "data.mdb").is_symlink()
    with store.read() as r:
        assert r.get(b"base000009") is not None
    store.close()


def test_the_leftover_of_a_killed_compaction_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = LMDBStore(path)
    _fill(store, 10)
    scratch = path / ".compact"
    scratch.mkdir()
    (scratch / "data.mdb").write_bytes(b"half a copy")
    (scratch / "lock.mdb").write_bytes(b"")
    store.compact()
    assert not scratch.exists()
    with store.read() as r:
        assert r.get(b"base000009") is not None
    store.close()


@pytest.mark.parametrize("name", ["data.mdb", "lock.mdb"])
def test_a_linked_database_file_is_refused_at_open(tmp_path: Path, name: str) -> None:
    """issue 25: a data.mdb linked to an empty file got the database written into it."""
    path = tmp_path / "db"
    path.mkdir()
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    (path / name).symlink_to(target)
    with pytest.raises(StoreError, match=f"{name} is a symbolic link; memdb never follows links inside a database directory"):
        LMDBStore(path)
    assert target.read_bytes() == b""
    assert sorted(p.name for p in path.iterdir()) == sorted({name, "lock.mdb"})


def test_a_database_file_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    path.mkdir()
    (path / "data.mdb").mkdir()
    with pytest.raises(StoreError, match=r"data\.mdb is not a regular file"):
        LMDBStore(path)


def test_compaction_keeps_the_data_the_mode_and_scrubs_the_file(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = LMDBStore(path, mode=0o640)
    with store.write() as w:
        w.put(b"keep", b"kept")
        w.put(b"secret", b"erase-me-" * 100)
    with store.write() as w:
        w.delete(b"secret")
    assert b"erase-me-" in (path / "data.mdb").read_bytes()  # LMDB leaves freed bytes
    store.compact()
    assert b"erase-me-" not in (path / "data.mdb").read_bytes()
    assert (path / "data.mdb").stat().st_mode & 0o777 == 0o640
    with store.read() as r:
        assert r.get(b"keep") == b"kept"
    store.close()
    assert sorted(p.name for p in path.iterdir()) == ["data.mdb", "lock.mdb"]


def test_memdbs_byte_of_lock_mdb_is_beyond_every_pid() -> None:
    """LMDB locks byte 0 and, per reader process, the byte at its pid: memdb's must be neither."""
    pid_max = Path("/proc/sys/kernel/pid_max")
    assert lmdbdir.OURS > max(1 << 22, int(pid_max.read_text()) if pid_max.exists() else 0)  # Linux caps pids at 2**22


# --- who owns the rewritten file ---------------------------------------------------------------

NOBODY = 65534
_AS_NOBODY = """
    import os, sys
    import memdb
    from memdb.errors import StoreError
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)  # after the imports: the interpreter's own files may be out of nobody's reach
"""


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A directory every user may reach (pytest's tmp_path is under a 0700 directory of root's)."""
    path = Path(tempfile.mkdtemp(prefix="memdb-owner-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def _as_nobody(code: str, *args: str) -> str:
    """Run ``code`` as the user nobody (this process is root); its output, or its error."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_AS_NOBODY) + textwrap.dedent(code), *args],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs two users: run as root")
def test_compaction_by_root_keeps_the_files_owner(open_tmp: Path) -> None:
    """`sudo memdb compact` (or root's cron) gave data.mdb to root: its owner was locked out."""
    path = open_tmp / "db"
    store = LMDBStore(path)
    with store.write() as w:
        w.put(b"keep", b"kept")
    store.close()
    for p in (path, *path.iterdir()):
        os.chown(p, NOBODY, NOBODY)
    with LMDBStore(path) as store:
        store.compact()
    st = (path / "data.mdb").stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (NOBODY, NOBODY, 0o600)
    said = _as_nobody(
        """
        from memdb.engine.store import LMDBStore
        with LMDBStore(sys.argv[1]) as store:
            print(store.get(b"keep"))  # the owner opens it, reads and writes
            with store.write() as w:
                w.put(b"after", b"1")
        """,
        str(path),
    )
    assert said.strip() == "b'kept'"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs two users: run as root")
def test_compaction_by_someone_who_cannot_give_the_file_back_is_refused(open_tmp: Path) -> None:
    """A member of the database's group (files 0660) may write to it, not give a new file to its owner."""
    path = open_tmp / "db"
    store = LMDBStore(path, mode=0o660)
    with store.write() as w:
        w.put(b"keep", b"kept")
    store.close()
    for p in (path, *path.iterdir()):
        os.chown(p, 0, NOBODY)
    before = (path / "data.mdb").read_bytes()
    said = _as_nobody(
        """
        from memdb.engine.store import LMDBStore
        with LMDBStore(sys.argv[1], mode=0o660) as store:
            try:
                store.compact()
            except StoreError as exc:
                print(exc)
        """,
        str(path),
    )
    assert "data.mdb belongs to uid 0 (group 65534), and this process (uid 65534) cannot give the rewritten file to them" in said, said
    assert (path / "data.mdb").read_bytes() == before and (path / "data.mdb").stat().st_uid == 0
    assert sorted(p.name for p in path.iterdir()) == ["data.mdb", "lock.mdb"]
