"""``Globals.after_commit``: a call that runs once the outermost transaction has committed, never
when the transaction or the savepoint it was registered in rolls back (what the settings cache
of a configure() inside a caller's transaction needs: tests/surfaces/test_refresh_settings.py)."""

from __future__ import annotations

import pytest

import memdb

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL alike (tests/conftest.py)


class Boom(Exception):
    """Rolls a transaction back."""


def test_after_commit_runs_once_the_outermost_commits(db: memdb.Database, g: memdb.Global) -> None:
    calls: list[str] = []
    space = db.globals
    space.after_commit(lambda: calls.append("outside"))  # no transaction: at once
    assert calls == ["outside"]
    with db.transaction():
        g["a"] = 1
        space.after_commit(lambda: calls.append("outer"))
        with db.transaction():
            space.after_commit(lambda: calls.append("kept savepoint"))
        with pytest.raises(Boom), db.transaction():
            space.after_commit(lambda: calls.append("rolled-back savepoint"))
            raise Boom
        assert calls == ["outside"]  # nothing before the commit
    assert calls == ["outside", "outer", "kept savepoint"]
    assert g["a"] == 1


def test_after_commit_never_runs_on_a_rollback(db: memdb.Database, g: memdb.Global) -> None:
    calls: list[str] = []
    with pytest.raises(Boom), db.transaction():
        g["a"] = 1
        db.globals.after_commit(lambda: calls.append("rolled back"))
        raise Boom
    with db.transaction():
        g["b"] = 1
    assert calls == [] and g.get(("a",)) is None
