"""The key helpers capture uses: ``Global.holds`` (one seek for ``data() != 0``) and
``codec.encode_unique`` (a str's encoding, kept out of the cache of strings met again)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import memdb
from memdb.engine import codec


def test_holds_is_data_not_zero(ro_db: memdb.Database) -> None:
    """Over the section-2 tree: a node with a value, with children only, with both, and none;
    in a snapshot and outside one (the backend's own short read)."""
    t = ro_db.globals["T"]
    nodes = [(), *(subs for subs, _ in t.items())]
    probes = {p for subs in nodes for p in [subs[:i] for i in range(len(subs) + 1)]} | {("nothing",), ("nothing", 1), (0,)}
    for subs in sorted(probes, key=repr):
        assert t.holds(subs) == (t.data(subs) != 0), subs
    with ro_db.snapshot():
        assert all(t.holds(subs) == (t.data(subs) != 0) for subs in probes)


def test_holds_sees_its_transaction_and_not_a_sibling(db: memdb.Database) -> None:
    g = db.globals["H"]
    g["a\x00"] = 1  # the encoding of ("a",) is a prefix of it: a sibling, not a child
    with db.transaction():
        assert not g.holds(("a",)) and g.holds(("a\x00",))
        g["a", 2] = 1
        assert g.holds(("a",)) and not g.holds(("a", 3))


@given(st.text(min_size=1))
def test_encode_unique_is_a_strs_encoding_and_keeps_no_copy(s: str) -> None:
    codec._STR_CACHE.pop(s, None), codec._STR_CACHE_OLD.pop(s, None)
    unique = codec.encode_unique(s)
    assert s not in codec._STR_CACHE and s not in codec._STR_CACHE_OLD
    assert unique == codec.encode_subscript(s) == codec.encode((s,))
