"""The backend parameter itself (tests/conftest.py): each param opens where it says, and the
behaviour suites of the layers above the store really take it.

The suites of ``test_globals``, ``test_episodes``, ``test_lifecycle`` and ``test_query`` run on
both backends through ``pytestmark = pytest.mark.usefixtures("backend")``; the store contract
of ``test_store`` through its ``store`` fixture. The tests that can run on one backend only
carry ``@pytest.mark.lmdb_only`` or ``@pytest.mark.postgres_only`` with their reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import memdb
from memdb.engine.postgres import PostgresStore
from memdb.engine.store import LMDBStore

LAYER_SUITES = {"test_globals", "test_episodes", "test_lifecycle", "test_faithful", "test_query", "test_supersede"}
STORES = {"lmdb": LMDBStore, "postgres": PostgresStore}


def test_every_database_is_on_its_backend(backend: str, db: memdb.Database, tmp_path: Path) -> None:
    assert isinstance(db.store, STORES[backend])
    db.globals["T"]["x"] = 1
    db.close()
    with memdb.open(tmp_path / "db", map_size=1 << 20) as again:  # the same path: the same data, on either backend
        assert isinstance(again.store, STORES[backend]) and again.globals["T"]["x"] == 1
    with memdb.open(tmp_path / "other") as other:
        assert "T" not in other.globals


@pytest.mark.usefixtures("on_postgres")
def test_on_postgres_routes_one_test(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", map_size=1 << 20, sync=False) as db:  # LMDB's options are dropped
        assert isinstance(db.store, PostgresStore)


def test_a_test_without_the_backend_opens_on_lmdb(db: memdb.Database) -> None:
    """Even after this module's backend[postgres] was set up (it stays until the module ends)."""
    assert isinstance(db.store, LMDBStore)


def test_the_layer_suites_take_the_backend(request: pytest.FixtureRequest) -> None:
    """Every collected test of the layer suites uses ``backend`` (so runs on both, unless marked):
    one that lost the opt-in would silently stop running on PostgreSQL."""
    for item in request.session.items:
        if isinstance(item, pytest.Function) and item.module is not None and item.module.__name__ in LAYER_SUITES:
            assert "backend" in item.fixturenames, f"{item.nodeid} does not use the backend fixture"
