"""The behaviour suites of the layers above the store, run again on PostgreSQL.

Every test of ``test_globals``, ``test_episodes``, ``test_lifecycle`` and ``test_query`` is
collected here a second time, except the LMDB-specific ones in ``LMDB_ONLY``. While this
module runs, ``memdb.open(path)`` opens a fresh memdb database on the throwaway server instead
of a directory (the name is derived from the path, so reopening a path reopens its data);
the tests themselves are unchanged, which is the point: every layer above the store works
the same on both backends.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import test_episodes
import test_globals
import test_lifecycle
import test_query
from clocks import Clock
from postgres_server import drop, shared, throwaway, unique_name
from test_episodes import PLANTED, edb
from test_globals import many, merge_tree, ro_db, t, tree
from test_lifecycle import ldb
from test_query import qdb, team

import memdb
from memdb.engine.postgres import PostgresStore, is_postgres_url

__all__ = ["edb", "ldb", "many", "merge_tree", "qdb", "ro_db", "t", "team", "tree"]  # fixtures, re-exported on purpose

LMDB_ONLY = {
    "test_increment_atomic_across_processes",  # its child processes open the LMDB path directly
    "test_snapshot_does_not_block_a_commit_that_grows_the_map",  # a strict xfail for an LMDB map-growth bug
    "test_planted_pii_never_reaches_disk",  # reads LMDB's files (see test_planted_pii_never_reaches_the_server)
    "test_sanitizer_failure_drops_capture_fail_closed",  # the same
    "test_erased_text_is_gone_from_disk_after_compact",  # the same
    "test_a_value_at_the_cut_is_sanitized_before_the_cut",  # the same (the capture path is the backend's too)
    "test_decision_keys_and_large_ints_are_sanitized",  # the same
    "test_a_tag_that_normalises_into_pii_is_sanitized",  # the same
    "test_unicode_forms_of_pii_never_reach_disk",  # the same
}

_collected: dict[str, str] = {}
for _module in (test_globals, test_episodes, test_lifecycle, test_query):
    for _name, _obj in vars(_module).copy().items():
        own = getattr(_obj, "__module__", None) == _module.__name__ or isinstance(_obj, type)  # hypothesis makes TestCase classes
        if _name.startswith(("test_", "Test")) and _name not in LMDB_ONLY and own:
            assert _name not in _collected, f"{_name} is in both {_collected[_name]} and {_module.__name__}"
            _collected[_name] = _module.__name__
            globals()[_name] = _obj

_REAL_OPEN = memdb.open


@pytest.fixture(scope="module")
def pg_url() -> str:
    return shared()


@pytest.fixture(scope="module", autouse=True)
def memdb_on_postgres(pg_url: str) -> Iterator[None]:
    """Route ``memdb.open(path)`` to the server for this module (module scope: ``ro_db`` opens early)."""
    names: set[str] = set()

    def open_on_postgres(path: Any, **options: Any) -> memdb.Database:
        if is_postgres_url(path):
            return _REAL_OPEN(path, **options)
        options.pop("map_size", None)  # LMDB's options
        options.pop("sync", None)
        name = "b_" + hashlib.blake2b(os.fspath(path).encode(), digest_size=8).hexdigest()
        names.add(name)
        return _REAL_OPEN(pg_url, name=name, **options)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(memdb, "open", open_on_postgres)
        yield
    if not throwaway():  # a server of one's own keeps no test tables; the throwaway one goes whole
        for name in names:
            drop(pg_url, name)


@pytest.fixture
def clock(request: pytest.FixtureRequest) -> Any:
    """The clock of the module the test comes from (episodes and lifecycle start at different times)."""
    module = sys.modules[request.function.__module__]
    return Clock(module.T0)


def test_every_database_here_is_on_postgres(db: memdb.Database) -> None:
    assert isinstance(db.store, PostgresStore)


def test_planted_pii_never_reaches_the_server(pg_url: str) -> None:
    """The server-side twin of test_planted_pii_never_reaches_disk: no planted value in any row."""
    import psycopg

    name = unique_name()
    with memdb.open(pg_url, name=name) as db:
        mem = db.owner("ana")
        text = " ".join(f"{k}: {v}" for k, v in PLANTED.items())
        ep = mem.record("debug", f"mail {PLANTED['email']} failed", outcome="failure", content=text, tags=["billing"])
        mem.record_exchange("conv_9", f"my card is {PLANTED['card']}", f"noted, IBAN {PLANTED['iban']}")
        assert "<EMAIL_1>" in mem.get(ep.id).summary
    with psycopg.connect(pg_url, autocommit=True) as conn:
        raw = b"".join(k + v for k, v in conn.execute(f'SELECT k, v FROM "{name}_kv"').fetchall())
    assert raw
    for key, value in PLANTED.items():
        assert value.encode() not in raw, f"{key} reached the server"
    drop(pg_url, name)
