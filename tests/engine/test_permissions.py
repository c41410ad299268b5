"""A database is private by default: its directory 0700 and its files 0600 whatever the
umask, set again at every open; ``mode`` chooses other modes, ``mode=None`` leaves them to
the umask (memdb/engine/lmdbdir.py). Real directories; the umask set per test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import memdb
from memdb.engine.store import LMDBStore
from memdb.errors import ConfigError, StoreError

pytestmark = pytest.mark.lmdb_only


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    """The usual umask, under which LMDB's own defaults made the database world-readable."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _modes(path: Path) -> dict[str, int]:
    return {".": path.stat().st_mode & 0o777, **{p.name: p.stat().st_mode & 0o777 for p in path.iterdir()}}


def test_a_new_database_is_its_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        db.owner("ana").record("debug", "private", outcome="failure")
        assert _modes(path) == {".": 0o700, "data.mdb": 0o600, "lock.mdb": 0o600}
        db.compact()
        assert _modes(path) == {".": 0o700, "data.mdb": 0o600, "lock.mdb": 0o600}


def test_a_mode_shares_with_a_group(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with memdb.open(path, mode=0o640) as db:
        db.globals["T"]["x"] = 1
        db.compact()
    assert _modes(path) == {".": 0o750, "data.mdb": 0o640, "lock.mdb": 0o640}


def test_mode_none_leaves_modes_to_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with memdb.open(path, mode=None) as db:
        db.globals["T"]["x"] = 1
        db.compact()  # keeps the file's own mode
    assert _modes(path) == {".": 0o755, "data.mdb": 0o644, "lock.mdb": 0o644}


def test_an_existing_world_readable_database_is_made_private_at_open(tmp_path: Path) -> None:
    """A database written before this version (issue 25: 0755 and 0644 under umask 022)."""
    path = tmp_path / "db"
    LMDBStore(path, mode=None).close()
    assert _modes(path)["data.mdb"] == 0o644
    with LMDBStore(path) as store, store.read() as r:
        r.get(b"x")
    assert _modes(path) == {".": 0o700, "data.mdb": 0o600, "lock.mdb": 0o600}


def test_a_directory_holding_other_files_keeps_its_own_mode(tmp_path: Path) -> None:
    """A database opened in a project directory: its files are made private, the directory is
    the caller's and keeps its mode."""
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    (project / "notes.txt").write_text("mine")
    LMDBStore(project).close()
    assert _modes(project) == {".": 0o755, "notes.txt": 0o644, "data.mdb": 0o600, "lock.mdb": 0o600}


def test_a_missing_parent_is_created_and_only_the_database_directory_is_private(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "db"
    LMDBStore(path).close()
    assert _modes(path)["."] == 0o700 and (tmp_path / "a").stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize(
    ("mode", "shown"), [(0o755, "0o755"), (0o400, "0o400"), (0o1600, "0o1600"), ("600", "'600'"), (True, "True"), (-1, "-0o1")]
)
def test_a_mode_memdb_cannot_use_is_named(tmp_path: Path, mode: object, shown: str) -> None:
    with pytest.raises(ConfigError, match=f"mode {shown}: a file mode without execute bits that lets the owner read and write"):
        LMDBStore(tmp_path / "db", mode=mode)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_a_directory_that_cannot_be_made_private_is_a_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a read-only file system (a mounted backup) the chmod that makes the directory private
    raised a raw OSError out of memdb.open; the probe's repro mounted one (unshare -m), here the
    file system's answer is given to the one call that meets it."""
    import errno

    from memdb.errors import StoreError

    with memdb.open(tmp_path / "db") as db:
        db.owner("ana").record("debug", "x", outcome="success")
    os.chmod(tmp_path / "db", 0o755)

    def read_only(path: object, mode: int) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "chmod", read_only)
    with pytest.raises(StoreError, match="cannot make the directory private: Read-only file system"):
        memdb.open(tmp_path / "db")


# --- a database this user may not read -----------------------------------------------------------

_AS_NOBODY = """
    import os, sys
    import memdb, memdb.cli
    from memdb.errors import NotFoundError, StoreError
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)  # after the imports: the interpreter's own files may be out of nobody's reach
    try:
        memdb.open(sys.argv[1], create=False)
    except (NotFoundError, StoreError) as exc:
        print(type(exc).__name__, exc)
    sys.exit(memdb.cli.main(["ask", "--db", sys.argv[1], "--owner", "ana", "what failed"]))
"""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs two users: run as root")
def test_a_database_this_user_may_not_read_is_a_permission_error_not_missing() -> None:
    """Run as the wrong user (a service's, not the login's), memdb said "no memdb database
    there ... record ... create one": the user was told their memory was gone and to make a
    second database. memdb.open(create=False) raised NotFoundError."""
    root = Path(tempfile.mkdtemp(prefix="memdb-perm-"))
    try:
        root.chmod(0o755)  # reachable by nobody; the database itself is root's, 0700
        with memdb.open(root / "db") as db:
            db.owner("ana").record("debug", "deploy failed", outcome="failure")
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_AS_NOBODY), str(root / "db")],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            timeout=120, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(root)
    said = f"open {str(root / 'db')!r}: permission denied: the directory belongs to root (uid 0), mode 0700, and this process runs as "
    assert done.stdout.startswith(f"StoreError {said}"), done.stdout
    assert done.returncode == 1 and done.stderr.startswith(f"memdb: {said}"), done.stderr
    assert "no memdb database" not in done.stderr


def test_a_database_in_a_directory_this_user_may_not_search_is_a_permission_error(tmp_path: Path) -> None:
    """The same, for a user without root (root searches every directory): here the parent is closed."""
    if os.geteuid() == 0:
        pytest.skip("root searches every directory; the test above covers it")
    with memdb.open(tmp_path / "closed" / "db") as db:
        db.owner("ana").record("debug", "x", outcome="success")
    (tmp_path / "closed").chmod(0)
    try:
        with pytest.raises(StoreError, match=r"permission denied: directory '.*closed' belongs to"):
            memdb.open(tmp_path / "closed" / "db", create=False)
    finally:
        (tmp_path / "closed").chmod(0o700)
