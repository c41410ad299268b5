"""``Globals.transaction(savepoint=False)`` inside a transaction joins it as it is (capture's
blocks, once a record): no savepoint, so a raise in it rolls back the enclosing transaction; and
outside one it is a transaction of its own. ``defer_increments`` checks its deltas in one pass
and still names a bad one."""

from __future__ import annotations

import pytest

import memdb
from memdb.errors import NotANumberError, ReadOnlyTransactionError

pytestmark = pytest.mark.usefixtures("backend")


class Boom(Exception):
    pass


def test_a_joined_block_shares_the_enclosing_transaction(db: memdb.Database) -> None:
    g, space = db.globals["J"], db.globals
    with pytest.raises(Boom), space.transaction():
        with space.transaction(savepoint=False):
            g["a"] = 1
        assert g["a"] == 1
        raise Boom
    assert g.get("a") is None  # rolled back with the enclosing one
    with space.transaction(savepoint=False):  # outside a transaction: one of its own
        g["b"] = 2
    assert g["b"] == 2
    with space.transaction(), pytest.raises(Boom):
        with space.transaction(savepoint=False):
            g["c"] = 3
            raise Boom
    assert g["c"] == 3  # no savepoint of its own: what it wrote stays in the enclosing one


def test_a_joined_block_is_refused_in_a_snapshot(db: memdb.Database) -> None:
    with db.snapshot(), pytest.raises(ReadOnlyTransactionError):
        with db.globals.transaction(savepoint=False):
            pass


def test_deferred_deltas_are_checked_and_a_bad_one_named(db: memdb.Database) -> None:
    g, space = db.globals["JN"], db.globals
    with space.transaction():
        space.defer_increments(g, ("o",), {"a": 1, "b": 2.5})
        with pytest.raises(NotANumberError, match=r"\^JN\('o','c'\): delta True is not an int or float"):
            space.defer_increments(g, ("o",), {"a": 1, "c": True})
    assert g["o", "a"] == 1 and g["o", "b"] == 2.5 and g.get(("o", "c")) is None
