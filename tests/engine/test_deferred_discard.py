"""``Globals.discard_deferred``: the deltas deferred before a KILL do not bring its counters back
at the commit, and the discard rolls back with the nested transaction that made it."""

from __future__ import annotations

import pytest

import memdb

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL savepoints alike (tests/conftest.py)


class Boom(Exception):
    """Raised inside a nested transaction to roll it back."""


def test_a_discard_rolls_back_with_its_savepoint(db: memdb.Database, g: memdb.Global) -> None:
    """It once dropped the enclosing levels' deltas at once, so a nested transaction that
    discarded, killed and then failed lost them: the outer one committed without its counts."""
    space = db.globals
    g["o", "n"] = 10
    with db.transaction():
        space.defer_increment(g, ("o", "n"), 2)
        space.defer_increment(g, ("p", "n"), 1)  # outside the discarded subtree: never touched
        with pytest.raises(Boom), db.transaction():
            space.defer_increment(g, ("o", "n"), 100)
            space.discard_deferred(g, ("o",))
            g.kill(("o",))
            raise Boom
    assert dict(g.items(())) == {("o", "n"): 12, ("p", "n"): 1}


def test_a_committed_discard_takes_every_enclosing_levels_deltas(db: memdb.Database, g: memdb.Global) -> None:
    """Three levels deep: what every level deferred before the discard goes with the KILL;
    what is deferred after it, in the level or around it, counts from nothing."""
    space = db.globals
    g["o", "n"] = 10
    with db.transaction():
        space.defer_increment(g, ("o", "n"), 1.5)
        space.defer_increment(g, ("o", "df"), 3, drop_zero=True)
        with db.transaction():
            space.defer_increment(g, ("o", "n"), 2)
            with db.transaction():
                space.defer_increment(g, ("o", "n"), 4)
                space.discard_deferred(g, ("o",))
                g.kill(("o",))
                space.defer_increment(g, ("o", "n"), 8)  # the name is written again in the same transaction
            space.defer_increment(g, ("o", "n"), 16)
        space.defer_increment(g, ("o", "df"), 32, drop_zero=True)
    assert dict(g.items(())) == {("o", "n"): 24, ("o", "df"): 32}


def test_a_discard_in_a_rolled_back_sibling_leaves_the_next_one_alone(db: memdb.Database, g: memdb.Global) -> None:
    space = db.globals
    with db.transaction():
        space.defer_increment(g, ("o", "n"), 1)
        with pytest.raises(Boom), db.transaction():
            space.discard_deferred(g, ("o",))
            raise Boom
        with db.transaction():
            space.defer_increment(g, ("o", "n"), 2)
    assert dict(g.items(())) == {("o", "n"): 3}


def test_a_discard_at_the_outermost_level_drops_its_deltas(db: memdb.Database, g: memdb.Global) -> None:
    space = db.globals
    g["o", "n"] = 5
    with db.transaction():
        space.defer_increment(g, ("o", "n"), 1)
        space.discard_deferred(g, ("o",))
        g.kill(("o",))
    assert dict(g.items(())) == {}
