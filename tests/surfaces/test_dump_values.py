"""``memdb dump`` prints every value the codec stores, and distinct values distinctly."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import memdb
from memdb.cli import m_literal, main
from memdb.engine.codec import pack_value, unpack_value

UTC = dt.UTC

# what a map key may be in msgpack (any scalar), and what a value may hold besides
keys = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(max_size=8),
)
scalars = st.one_of(
    keys,
    st.datetimes(timezones=st.just(UTC)),
    st.builds(msgpack.ExtType, st.integers(2, 127), st.binary(max_size=4)),  # 1 is memdb's datetime
    st.sampled_from([{"$C": [1]}, {"$$C": [1]}, {"$M": []}, {"$ZDT": "2026-07-01T09:00:00+00:00"}]),  # marker look-alikes
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


def stored(value: Any) -> Any:
    return unpack_value(pack_value(value))


@settings(max_examples=300, deadline=None)
@given(values, values)
@example({"$C": [1]}, [b"\x01"])
@example([{"$C": [1]}], [b"\x01"])
@example({1: "a"}, {"1": "a"})
@example([dt.datetime(2026, 7, 1, tzinfo=UTC)], ["2026-07-01T00:00:00+00:00"])
@example("", b"")
@example([msgpack.ExtType(5, b"a")], [[5, b"a"]])
def test_dump_prints_any_stored_value_and_distinct_values_distinctly(a: Any, b: Any) -> None:
    """A probe's find: maps with bytes keys, or int and str keys together, stopped dump with a bare
    TypeError, and a stored map {"$C": [...]} printed as bytes do."""
    a, b = stored(a), stored(b)
    shown_a, shown_b = m_literal(a), m_literal(b)
    if a != b:  # Python's == is coarser than msgpack's (1 == 1.0 == True): equal ones may still differ
        assert shown_a != shown_b, (a, b)


def test_dump_prints_maps_json_cannot_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with memdb.open(tmp_path / "db") as db:
        g = db.globals["APP"]
        g["a"] = {b"raw-key": 1}
        g["b"] = {1: "one", "two": 2}
        g["c"] = {"$C": [120]}
        g["d"] = [b"x", b""]
        g["e"] = b""
    assert main(["dump", "--db", str(tmp_path / "db"), "^APP"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        '^APP("a")=$ZJSON({"$M": [[{"$C": [114, 97, 119, 45, 107, 101, 121]}, 1]]})',
        '^APP("b")=$ZJSON({"$M": [["two", 2], [1, "one"]]})',
        '^APP("c")=$ZJSON({"$$C": [120]})',
        '^APP("d")=$ZJSON([{"$C": [120]}, {"$C": []}])',
        '^APP("e")=$C()',
    ]
