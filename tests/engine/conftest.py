"""Fixtures of the engine suites: the trees of the globals semantics document, read-only
(``ro_db``, ``tree``) and writable (``t``, ``merge_tree``, ``many``), on the test's backend."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from globals_tables import COLLATION, QUERY_ORDER, T_NODES, build, canon, ref_key

import memdb
from memdb.engine.codec import Subscript, Subscripts


@pytest.fixture(scope="module")
def ro_db(tmp_path_factory: pytest.TempPathFactory, backend: str) -> Iterator[memdb.Database]:
    """A read-only database for table lookups: ^T (section 2), ^C (collation), ^Q (query order); on ``backend``."""
    with memdb.open(tmp_path_factory.mktemp("ro") / "db", map_size=1 << 20) as database:
        build(database.globals["T"], T_NODES)
        c = database.globals["C"]
        shuffled = list(COLLATION)
        random.Random(1).shuffle(shuffled)
        for sub in shuffled:
            c[sub] = repr(sub)
        build(database.globals["Q"], QUERY_ORDER, seed=2)
        yield database


@pytest.fixture
def tree(ro_db: memdb.Database) -> memdb.Global:
    """The tree T of section 2 (read only)."""
    return ro_db.globals["T"]


@pytest.fixture
def t(g: memdb.Global) -> memdb.Global:
    """A fresh, writable copy of tree T in the ``db`` fixture."""
    build(g, T_NODES)
    return g


@pytest.fixture
def merge_tree(g: memdb.Global) -> memdb.Global:
    """^T("d") with a value and two children, ^T("s") without a value and two descendants."""
    g["d"] = "dv"
    g["d", 1] = "d1"
    g["d", 2] = "d2-old"
    g["s", 2] = "s2"
    g["s", 3, "x"] = "s3x"
    g["s", 3, 0.5] = "s3half"
    return g


def _many_nodes(n: int) -> list[Subscripts]:
    """``n`` distinct nodes under ("big",) mixing numbers and strings, in insertion order."""
    subs: list[Subscript] = [-3, -0.5, 0, 0.25, 1, 7, "a", "a\x00", "b", b"z"]
    return [("big", subs[i % len(subs)], i // len(subs), f"k{i}") for i in range(n)]


@pytest.fixture
def many(db: memdb.Database, g: memdb.Global) -> list[tuple[Subscripts, Any]]:
    """1300 nodes under ^T("big"), plus neighbours outside the subtree; returns the sorted subtree."""
    nodes = _many_nodes(1300)
    with db.transaction():
        for i, subs in enumerate(nodes):
            g[subs] = i
        g["bif"] = "before"
        g["big"] = "top"
        g["bih"] = "after"
    expected = [(canon(s), i) for i, s in enumerate(nodes)] + [(("big",), "top")]
    return sorted(expected, key=lambda item: ref_key(item[0]))
