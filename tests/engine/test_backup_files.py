"""``backup`` writes its copy private from the first byte, under a name that says it is partial
until it is whole, and a backup that fails (a full disk, the file-size limit) leaves nothing
and says so (memdb/engine/store.py, ``LMDBStore.backup``). Real LMDB directories."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.engine.store import LMDBStore
from memdb.errors import StoreError

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/engine/)
pytestmark = pytest.mark.lmdb_only


@pytest.fixture(autouse=True)
def umask_000() -> Iterator[None]:
    """The umask under which the copy of a failed backup was 0666."""
    old = os.umask(0)
    yield
    os.umask(old)


def _source(path: Path, episodes: int = 400) -> Path:
    with memdb.open(path) as db, db.transaction():
        mem = db.owner("ana")
        for i in range(episodes):
            mem.record("debug", f"deploy {i} failed on lock {i * 7}", outcome="failure", tags=["deploy"])
    return path


def _backup_under_limit(src: Path, dest: Path, limit: int) -> str:
    """Back ``src`` up to ``dest`` in a process whose files may not grow past ``limit`` bytes: the error's message."""
    code = """
        import resource, sys
        import memdb
        from memdb.errors import StoreError
        with memdb.open(sys.argv[1]) as db:
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))
            try:
                db.backup(sys.argv[2])
            except StoreError as exc:
                print(exc)
        """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(src), str(dest), str(limit)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_failed_backup_into_a_new_directory_leaves_nothing_and_says_so(tmp_path: Path) -> None:
    """A cut-off data.mdb (0666 under umask 000) was left, and a retry was refused as "not empty"."""
    src = _source(tmp_path / "src")
    said = _backup_under_limit(src, tmp_path / "bk", 64 * 1024)
    assert "file-size limit of 64.0 KiB" in said and "nothing was left" in said, said
    assert not (tmp_path / "bk").exists()
    with memdb.open(src) as db:  # the retry, with room
        db.backup(tmp_path / "bk")
    with memdb.open(tmp_path / "bk") as copy:
        assert copy.owner("ana").count() == 400


def test_a_failed_backup_into_an_empty_directory_leaves_it_empty(tmp_path: Path) -> None:
    src = _source(tmp_path / "src")
    (tmp_path / "bk").mkdir()
    said = _backup_under_limit(src, tmp_path / "bk", 64 * 1024)
    assert f"nothing was left in {str(tmp_path / 'bk')!r}" in said, said
    assert list((tmp_path / "bk").iterdir()) == []


class _SpyEnv:
    """An LMDB environment that notes the mode and size of the file a copy starts writing."""

    def __init__(self, env: Any, seen: list[os.stat_result]) -> None:
        self._env = env
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def copyfd(self, fd: int, compact: bool = False) -> None:
        self._seen.append(os.fstat(fd))
        self._env.copyfd(fd, compact=compact)


def test_the_copy_is_private_before_its_first_byte_and_partial_until_whole(tmp_path: Path) -> None:
    seen: list[os.stat_result] = []
    with LMDBStore(tmp_path / "src") as store:
        with store.write() as w:
            w.put(b"k", b"v")
        real = store._shared.env
        store._shared.env = _SpyEnv(real, seen)  # type: ignore[assignment]
        try:
            store.backup(str(tmp_path / "bk"))
        finally:
            store._shared.env = real
    assert [(st.st_mode & 0o777, st.st_size) for st in seen] == [(0o600, 0)]
    assert sorted(p.name for p in (tmp_path / "bk").iterdir()) == ["data.mdb"]
    assert (tmp_path / "bk").stat().st_mode & 0o777 == 0o700 and (tmp_path / "bk" / "data.mdb").stat().st_mode & 0o777 == 0o600


def test_a_partial_copy_a_killed_backup_left_is_replaced(tmp_path: Path) -> None:
    src = _source(tmp_path / "src", 5)
    (tmp_path / "bk").mkdir(mode=0o700)
    (tmp_path / "bk" / "data.mdb.partial").write_bytes(b"cut off")
    with memdb.open(src) as db:
        db.backup(tmp_path / "bk")
    assert sorted(p.name for p in (tmp_path / "bk").iterdir()) == ["data.mdb"]
    with memdb.open(tmp_path / "bk") as copy:
        assert copy.owner("ana").count() == 5


@pytest.mark.parametrize("there", [["data.mdb"], ["data.mdb.partial", "notes.txt"]])
def test_a_directory_holding_anything_else_is_refused(tmp_path: Path, there: list[str]) -> None:
    src = _source(tmp_path / "src", 1)
    (tmp_path / "bk").mkdir()
    for name in there:
        (tmp_path / "bk" / name).write_text("keep")
    with memdb.open(src) as db, pytest.raises(StoreError, match="the directory is not empty"):
        db.backup(tmp_path / "bk")
    assert all((tmp_path / "bk" / name).read_text() == "keep" for name in there)


def test_a_partial_copy_another_backup_is_writing_is_left_alone(tmp_path: Path) -> None:
    """A review's find: a second backup into the same directory took the first's copy, still
    being written, for a killed backup's leftover and unlinked it; the first then renamed the
    second's half copy to data.mdb and reported success. A copy is locked while written: the
    second backup is refused, and once the first is gone its leftover is used again."""
    src = _source(tmp_path / "src", episodes=20)
    dest = tmp_path / "dest"
    dest.mkdir(mode=0o700)
    partial = dest / "data.mdb.partial"
    partial.write_bytes(b"\0" * 8192)
    writing = os.open(partial, os.O_RDONLY)
    fcntl.flock(writing, fcntl.LOCK_EX)  # as a backup in progress holds it
    try:
        with memdb.open(src) as db, pytest.raises(StoreError, match="another backup is writing there"):
            db.backup(dest)
        assert os.listdir(dest) == ["data.mdb.partial"]
    finally:
        os.close(writing)  # that backup was killed
    with memdb.open(src) as db:
        db.backup(dest)
    assert os.listdir(dest) == ["data.mdb"]
    with memdb.open(dest, create=False) as copy:
        assert copy.owners() == ["ana"]
