"""Shared fixtures: a real memdb database in a temporary directory, and the backend it lives on.

Every test that uses the ``backend`` fixture (directly, through a fixture such as
``tests/engine/test_store.py``'s ``store``, or through ``pytestmark =
pytest.mark.usefixtures("backend")`` in the layer suites) runs twice, ``[lmdb]`` and
``[postgres]``: on the second, ``memdb.open(path)`` opens a fresh memdb database on the
throwaway server of ``tests/postgres_server.py`` instead of a directory, so the tests
themselves stay unchanged, which is the point: every layer above the store works the same on
both backends. ``@pytest.mark.lmdb_only`` keeps a test on LMDB, ``@pytest.mark.postgres_only``
on PostgreSQL (markers registered in pyproject.toml).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from postgres_server import drop, shared, throwaway

import memdb
from memdb.engine.postgres import is_postgres_url

# No example has a time limit: speed is measured in benchmarks, never asserted in a test, and on a
# shared machine Hypothesis's default 200 ms deadline failed examples that were only slow (a
# timephrase example took 665 ms while the browser tests ran). Tests that set one keep theirs.
settings.register_profile("memdb", deadline=None)
settings.load_profile("memdb")

BACKENDS = ("lmdb", "postgres")
_REAL_OPEN = memdb.open


@pytest.fixture(scope="session")
def pg_url() -> str:
    """The URL of the throwaway server (started on first use, stopped at exit)."""
    return shared()


class OpenOnPostgres:
    """``memdb.open`` with a path opening a memdb database on the server instead of a directory.

    The name is derived from the path, so reopening a path reopens its data; LMDB's own options
    are dropped; a URL goes through unchanged. ``drop_all`` removes the names it handed out,
    on a server of one's own only (the throwaway one goes whole at exit).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.names: set[str] = set()

    def __call__(self, path: Any, **options: Any) -> memdb.Database:
        if is_postgres_url(path):
            return _REAL_OPEN(path, **options)
        options.pop("map_size", None)  # LMDB's options
        options.pop("sync", None)
        name = "b_" + hashlib.blake2b(os.fspath(path).encode(), digest_size=8).hexdigest()
        self.names.add(name)
        return _REAL_OPEN(self.url, name=name, **options)

    def drop_all(self) -> None:
        if not throwaway():
            for name in self.names:
                drop(self.url, name)


@pytest.hookimpl(trylast=True)  # after the test's own parametrize marks: ids read test_x[a-b-postgres]
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses ``backend`` once per backend, unless a marker keeps it on one."""
    if "backend" not in metafunc.fixturenames:
        return
    marks = {name: metafunc.definition.get_closest_marker(name) for name in ("lmdb_only", "postgres_only")}
    for name, mark in marks.items():
        if mark is not None and not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: @pytest.mark.{name} needs reason=... (why not both backends)")
    lmdb_only, postgres_only = (marks[name] is not None for name in ("lmdb_only", "postgres_only"))
    if lmdb_only and postgres_only:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: both lmdb_only and postgres_only")
    params = ["lmdb"] if lmdb_only else ["postgres"] if postgres_only else list(BACKENDS)
    # module scope: module fixtures that open a database (ro_db) depend on it and open on it too
    metafunc.parametrize("backend", params, indirect=True, scope="module")


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """``"lmdb"`` or ``"postgres"``: the backend ``memdb.open(path)`` opens on while it is active.

    A unittest class (a Hypothesis state machine's TestCase) takes no parameters and gets
    ``"lmdb"``; its PostgreSQL twin uses ``on_postgres``.
    """
    name: str = getattr(request, "param", "lmdb")
    if name == "lmdb":
        yield name
        return
    assert name == "postgres", name
    router = OpenOnPostgres(request.getfixturevalue("pg_url"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(memdb, "open", router)
        yield name
    router.drop_all()


@pytest.fixture
def on_postgres(pg_url: str) -> Iterator[None]:
    """Route ``memdb.open(path)`` to the server for one test (for unittest classes, which
    cannot take the ``backend`` parameter)."""
    router = OpenOnPostgres(pg_url)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(memdb, "open", router)
        yield
    router.drop_all()


@pytest.fixture(autouse=True)
def _lmdb_unless_backend(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that does not use ``backend`` opens on LMDB, even while a module-scoped
    ``backend[postgres]`` of its module is still set up (pytest keeps it until the module ends)."""
    if "backend" in request.fixturenames or memdb.open is _REAL_OPEN:
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(memdb, "open", _REAL_OPEN)
        yield


@pytest.fixture
def db(tmp_path: Path) -> Iterator[memdb.Database]:
    """A fresh database in ``tmp_path / "db"``, closed after the test."""
    database = memdb.open(tmp_path / "db", map_size=1 << 20)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def g(db: memdb.Database) -> memdb.Global:
    """The global ``^T`` of the ``db`` fixture, empty at the start."""
    return db.globals["T"]
