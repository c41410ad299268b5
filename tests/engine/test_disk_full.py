"""A full disk or a file-size limit is a StoreError that names it, never a signal, and leaves
nothing a later open refuses (memdb/engine/lmdbdir.py: ``allocate``, ``discard``,
``write_failure``). Deterministic seams first (``posix_fallocate`` and ``statvfs`` reporting
no room, ``RLIMIT_FSIZE`` in a process of its own); then the same cases on a real, full tmpfs,
where this machine may mount one (root: skipped otherwise)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest

import memdb
from memdb.engine import lmdbdir
from memdb.engine.store import LMDBStore
from memdb.errors import CorruptionError, StoreError

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/engine/)
pytestmark = pytest.mark.lmdb_only


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def _no_room(fd: int, offset: int, length: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _full_statvfs(path: Any) -> os.statvfs_result:
    """What statvfs says of a full file system: no block free."""
    return os.statvfs_result((4096, 4096, 256, 0, 0, 100, 90, 90, 0, 255))


def _fill(path: Path, episodes: int = 300) -> None:
    with memdb.open(path) as db, db.transaction():
        mem = db.owner("ana")
        for i in range(episodes):
            mem.record("debug", f"deploy {i} failed on lock {i * 7}", outcome="failure", tags=["deploy"])


# --- the lock file's size -----------------------------------------------------------------------


@pytest.mark.parametrize("readers", [1, 2, 126, 200])
def test_lock_bytes_is_the_size_lmdb_gives_the_lock_file(tmp_path: Path, readers: int) -> None:
    """``allocate`` gives lock.mdb the blocks of every page LMDB maps: its own size for the readers."""
    env = lmdb.open(str(tmp_path), max_readers=readers)
    try:
        assert (tmp_path / "lock.mdb").stat().st_size == lmdbdir.lock_bytes(readers)
    finally:
        env.close()


def test_a_new_databases_lock_file_has_its_blocks(tmp_path: Path) -> None:
    """LMDB makes lock.mdb sparse: a page without a block, touched on a full disk, was SIGBUS."""
    LMDBStore(tmp_path / "db").close()
    st = (tmp_path / "db" / "lock.mdb").stat()
    assert st.st_blocks * 512 >= st.st_size == lmdbdir.lock_bytes(126)


# --- a new database ---------------------------------------------------------------------------


def test_a_new_database_on_a_full_disk_is_refused_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db"
    monkeypatch.setattr(os, "posix_fallocate", _no_room)
    with pytest.raises(StoreError, match=r"lock.mdb: cannot allocate 8.0 KiB: No space left on device \(.*nothing was left\)"):
        memdb.open(path)
    assert not path.exists()
    monkeypatch.undo()  # space freed: the same path opens as a new database
    with memdb.open(path) as db:
        db.owner("ana").record("debug", "first", outcome="success")


def test_a_new_database_lmdb_cannot_write_is_removed(tmp_path: Path) -> None:
    """LMDB writes the two meta pages of a new data.mdb at its open; cut short (here by the
    file-size limit, on a full disk alike), the lock.mdb it set up beside no data.mdb was
    refused as damaged ever after."""
    path = tmp_path / "db"
    done = _run(
        """
        import resource, sys
        from memdb.engine.store import LMDBStore
        from memdb.errors import StoreError
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
        try:
            LMDBStore(sys.argv[1], max_readers=1)  # a lock.mdb of 192 bytes fits, the meta pages do not
        except StoreError as exc:
            print(exc)
        """,
        str(path),
    )
    assert done.returncode == 0, done.stderr
    assert "file-size limit of 4.0 KiB" in done.stdout and "nothing was left" in done.stdout, done.stdout
    assert not path.exists()
    with LMDBStore(path) as store, store.write() as w:
        w.put(b"k", b"v")


@pytest.mark.parametrize("left", [b"", bytes(8192)], ids=["empty", "zeros"])
def test_a_lock_file_a_failed_creation_left_opens_as_new(tmp_path: Path, left: bytes) -> None:
    """What an earlier memdb left when a first open died (SIGBUS on a full disk, or a kill
    before LMDB set the file up): a lock.mdb LMDB never wrote its magic number to, and no
    data.mdb. It opened as "damaged" until the user removed lock.mdb by hand."""
    path = tmp_path / "db"
    path.mkdir(mode=0o700)
    (path / "lock.mdb").write_bytes(left)
    with memdb.open(path) as db:
        db.owner("ana").record("debug", "first", outcome="success")
    with memdb.open(path) as db:
        assert db.owner("ana").count() == 1


@pytest.mark.parametrize("data", ["missing", "empty"])
def test_a_lock_file_lmdb_set_up_without_data_is_still_refused(tmp_path: Path, data: str) -> None:
    """The rule above never opens a real database's directory as new: its lock.mdb has LMDB's magic number."""
    path = tmp_path / "db"
    _fill(path, 3)
    if data == "missing":
        (path / "data.mdb").unlink()
    else:
        (path / "data.mdb").write_bytes(b"")
    with pytest.raises(CorruptionError, match=f"data.mdb: damaged: is {data}"):
        memdb.open(path)


# --- compaction -------------------------------------------------------------------------------


def test_compaction_without_room_for_the_copy_is_refused_and_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db"
    _fill(path)
    before = (path / "data.mdb").read_bytes()
    with memdb.open(path) as db:
        monkeypatch.setattr(os, "statvfs", _full_statvfs)
        with pytest.raises(StoreError, match=r"compact '.*': needs about .* free in '.*', and its file system has 0 bytes \(free"):
            db.compact()
        monkeypatch.undo()
        assert db.owner("ana").count() == 300
    assert sorted(p.name for p in path.iterdir()) == ["data.mdb", "lock.mdb"]
    assert (path / "data.mdb").read_bytes() == before


def test_compaction_needs_room_for_the_data_not_for_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compaction is what gives a nearly full disk its free pages back: asking room for the
    whole file refused it where it was needed most."""
    store = LMDBStore(tmp_path / "db")
    with store.write() as w:
        for i in range(400):
            w.put(b"k%04d" % i, b"x" * 8000)
    with store.write() as w:
        w.delete_range(b"k0010", b"k9999")
    size = (tmp_path / "db" / "data.mdb").stat().st_size
    free = size // 4  # room for the 10 values left, not for the file

    def statvfs(path: Any) -> os.statvfs_result:
        return os.statvfs_result((4096, 4096, 1 << 20, free // 4096, free // 4096, 100, 90, 90, 0, 255))

    monkeypatch.setattr(os, "statvfs", statvfs)
    store.compact()
    monkeypatch.undo()
    assert (tmp_path / "db" / "data.mdb").stat().st_size < free
    with store.read() as r:
        assert r.get(b"k0009") == b"x" * 8000 and r.get(b"k0010") is None
    store.close()


def test_compaction_that_cannot_allocate_its_lock_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SIGBUS of `memdb compact` on a full disk: LMDB mapped .compact/lock.mdb, sparse."""
    path = tmp_path / "db"
    _fill(path)
    with memdb.open(path) as db:
        monkeypatch.setattr(os, "posix_fallocate", _no_room)
        with pytest.raises(StoreError, match=r"\.compact/lock.mdb: cannot allocate .*No space left on device"):
            db.compact()
        monkeypatch.undo()
        assert db.owner("ana").count() == 300
        db.compact()  # and with room, it compacts
    assert sorted(p.name for p in path.iterdir()) == ["data.mdb", "lock.mdb"]


# --- a write cut short --------------------------------------------------------------------------


def test_a_commit_past_the_file_size_limit_names_the_limit(tmp_path: Path) -> None:
    """LMDB turns a multi-page write cut short into EIO: "Input/output error" sent the operator
    to the hardware. The last commit stays, and the database is whole."""
    path = tmp_path / "db"
    _fill(path, 20)
    done = _run(
        """
        import os, resource, sys
        import memdb
        from memdb.errors import StoreError
        db = memdb.open(sys.argv[1])
        size = os.stat(os.path.join(sys.argv[1], "data.mdb")).st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 64 * 1024, resource.RLIM_INFINITY))
        try:
            with db.transaction():
                mem = db.owner("ana")
                for i in range(3000):
                    mem.record("debug", f"step {i} of a long batch of words {i * 13}", outcome="success")
        except StoreError as exc:
            print(exc)
        """,
        str(path),
    )
    assert done.returncode == 0, done.stderr
    assert "likely cause: the file reached this process's file-size limit of" in done.stdout, done.stdout
    with memdb.open(path) as db:
        assert db.check().ok and db.owner("ana").count() == 20


def test_write_failure_names_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "statvfs", _full_statvfs)
    hint = lmdbdir.write_failure("mdb_txn_commit: Input/output error", str(tmp_path))
    assert hint == f"likely cause: the file system holding {str(tmp_path)!r} is full (0 bytes free): free some space and retry"
    monkeypatch.undo()
    assert "check the device" in lmdbdir.write_failure("mdb_txn_commit: Input/output error", str(tmp_path))
    assert lmdbdir.write_failure("mdb_get: MDB_NOTFOUND", str(tmp_path)) == ""


# --- on a real, full file system --------------------------------------------------------------


@pytest.fixture
def full_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (mounted here only where the process may mount: root, outside most
    containers' limits); ``fill`` below fills it. Unmounted at the end."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root on Linux")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill_up(mnt: Path, keep: int = 0) -> None:
    """Fill the file system at ``mnt`` until ``keep`` bytes are left."""
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while os.write(fd, bytes(4096)) == 4096:
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    if keep:
        os.truncate(mnt / "filler", (mnt / "filler").stat().st_size - keep)


def test_on_a_full_tmpfs_nothing_dies_by_a_signal(full_fs: Path) -> None:
    """New database, compaction, a batch commit, each on a full disk: a StoreError naming
    it, and afterwards (space freed) everything opens; before, the first two were SIGBUS."""
    _fill(full_fs / "db", 200)
    _fill_up(full_fs)
    code = """
        import sys, memdb
        from memdb.errors import StoreError
        what, path = sys.argv[1], sys.argv[2]
        try:
            if what == "new":
                memdb.open(path)
            else:
                with memdb.open(path) as db:
                    if what == "compact":
                        db.compact()
                    else:
                        with db.transaction():
                            for i in range(2000):
                                db.owner("ana").record("debug", f"batch {i} words {i * 7}", outcome="success")
        except StoreError as exc:
            print(exc)
        """
    for what, path, said in (
        ("new", full_fs / "new", "No space left on device"),
        ("compact", full_fs / "db", "its file system has 0 bytes"),
    ):
        done = _run(code, what, str(path))
        died = signal.Signals(-done.returncode).name if done.returncode < 0 else ""
        assert done.returncode == 0, f"{what}: rc {done.returncode} {died}"
        assert said in done.stdout, (what, done.stdout)
    assert not (full_fs / "new").exists() and not (full_fs / "db" / ".compact").exists()
    os.unlink(full_fs / "filler")
    _fill_up(full_fs, keep=64 * 1024)  # room to open, not for the batch
    done = _run(code, "batch", str(full_fs / "db"))
    assert done.returncode == 0 and "is full" in done.stdout, done.stdout + done.stderr
    os.unlink(full_fs / "filler")
    with memdb.open(full_fs / "db") as db:
        assert db.check().ok and db.owner("ana").count() == 200
    with memdb.open(full_fs / "new") as db:
        db.owner("ana").record("debug", "first", outcome="success")


def test_a_failed_create_never_removes_a_database_another_process_made_meanwhile(tmp_path: Path) -> None:
    """A review's find: LMDB's failed open drops this process's locks, so another process could
    open the directory, commit and close before the cleanup took them; the cleanup then removed
    that committed database. A data file holding a commit is left as it is."""
    path = tmp_path / "db"
    go = tmp_path / "go"
    code = f"""
        import os, time
        import memdb
        from memdb.engine.store import LMDBStore
        from memdb.errors import StoreError
        made = LMDBStore._lmdb_open
        def failing(self, directory):
            made(self, directory).close()  # LMDB made the files, then its open failed
            print("made", flush=True)
            while not os.path.exists({str(go)!r}):
                time.sleep(0.02)
            raise StoreError("open: LMDB error: mdb_env_open: Input/output error")
        LMDBStore._lmdb_open = failing
        try:
            memdb.open({str(path)!r})
        except StoreError as exc:
            print(exc, flush=True)
    """
    failing = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True)
    try:
        assert failing.stdout is not None and failing.stdout.readline().strip() == "made"
        with memdb.open(path) as db:  # another process, in the window
            db.owner("ana").record("debug", "committed meanwhile", outcome="success")
        go.touch()
        said = failing.stdout.read()
    finally:
        failing.wait(timeout=60)
    assert "another process made the database" in said
    with memdb.open(path, create=False) as db:
        assert [m.episode.summary for m in db.owner("ana").recall().memories] == ["committed meanwhile"]
