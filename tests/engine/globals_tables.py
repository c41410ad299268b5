"""The tables of the globals semantics document (``shared/globals-semantics.md``) and the
reference helpers that build and order them: shared by ``test_globals.py`` and the fixtures of
``tests/engine/conftest.py`` (a plain module: tests may import it, unlike a conftest).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import memdb
from memdb.engine.codec import Subscript, Subscripts, canonical, collation_key

# --- reference helpers -------------------------------------------------------------------------


def ref_key(subs: Iterable[Subscript]) -> tuple[Any, ...]:
    """Reference M collation of a subscript tuple: element by element, a prefix first."""
    return tuple(collation_key(s) for s in subs)


def canon(subs: Iterable[Subscript]) -> Subscripts:
    """The stored form of a subscript tuple (integral floats become ints)."""
    return tuple(canonical(s) for s in subs)


def value_of(subs: Subscripts) -> str:
    """The value the tables store at a node: its subscripts spelt out."""
    return ",".join(map(str, subs)) or "root"


def build(g: memdb.Global, nodes: Iterable[Subscripts], seed: int = 0) -> None:
    """Set every node (value: ``value_of``) in a shuffled order."""
    order = list(nodes)
    random.Random(seed).shuffle(order)
    for subs in order:
        g[subs] = value_of(subs)


# --- the trees of the semantics document ---------------------------------------------------------

T_NODES: list[Subscripts] = [
    (),
    (1,),
    (1, 1),
    (1, 2, "x"),
    (1, 2, "y"),
    (1, "a"),
    (2, "a", 1),
    (10,),
    ("2026-06-30", "conv_1", "summary"),
    ("2026-07-01", "conv_123", "summary"),
    ("2026-07-01", "conv_123", "turns"),
    ("2026-07-01", "conv_9", "summary"),
    ("b",),
    ("b", -1),
    ("b", "c"),
]

NUMBERS: list[int | float] = [-1e10, -1000, -1.5, -1, -0.25, 0, 0.00001, 0.5, 1, 1.5, 2, 9, 10, 100, 1e10, 1e25]

STRINGS: list[str] = [
    "\x00", "\x01", " ", " 1", "!", "+1", "-", "-0", "-0.25", ".", ".50", "0.5", "00", "01", "1 ", "1.", "1.0", "1.50",
    "1E10", "1e3", "2026-06-30", "2026-07-01", "A", "AB", "Ab", "B", "NaN", "Z", "a", "a\x00", "a\x00b", "a\x01", "a b",
    "ab", "abc", "b", "conv_123", "conv_9", "inf", "z", "~", "\x7f", "é", "中", "😀",
]  # fmt: skip

COLLATION: list[Subscript] = [*NUMBERS, *STRINGS]

QUERY_ORDER: list[Subscripts] = [
    (-1,), (-1, "x"), (1,), (1, 2), (1, "x"), (1.5,), (2,), (10,), ("1x",), ("a",), ("a", "b"), ("a", "z", 1),
    ("a\x00",), ("a\x00", "x"), ("a\x01",), ("a ",), ("ab",),
]  # fmt: skip
