"""Codec invariants: byte order equals M collation, round trip, descendants in range, clear errors."""

from __future__ import annotations

import datetime as dt
import math
from functools import cmp_to_key
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memdb.engine import codec
from memdb.errors import InvalidGlobalNameError, InvalidSubscriptError, InvalidValueError, KeyTooLongError

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, -1, 0.5, -0.5, 2**53, 2**53 + 1, float(2**53), 2**64, 2**64 + 1, 5e-324, -5e-324, 1e308]),
)
subscripts = st.one_of(numbers, st.text(min_size=1), st.binary(min_size=1), st.sampled_from(["a", "a\x00", "a\x00b", "a\x01", "1", "é"]))
tuples = st.lists(subscripts, max_size=5).map(tuple)


def m_compare(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    """Reference M collation of subscript tuples: element by element, a prefix first."""
    for x, y in zip(a, b, strict=False):
        kx, ky = codec.collation_key(x), codec.collation_key(y)
        if kx != ky:
            return -1 if kx < ky else 1
    return (len(a) > len(b)) - (len(a) < len(b))


@given(st.lists(tuples, max_size=30))
def test_byte_order_equals_m_collation(items: list[tuple[Any, ...]]) -> None:
    by_bytes = sorted(items, key=codec.encode)
    by_m = sorted(items, key=cmp_to_key(m_compare))
    assert [codec.encode(t) for t in by_bytes] == [codec.encode(t) for t in by_m]


@given(tuples, tuples)
def test_compare_pairs(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    ea, eb = codec.encode(a), codec.encode(b)
    assert ((ea > eb) - (ea < eb)) == m_compare(a, b)


@given(tuples)
def test_round_trip(t: tuple[Any, ...]) -> None:
    decoded = codec.decode(codec.encode(t))
    assert decoded == tuple(codec.canonical(s) for s in t)
    for original, back in zip(t, decoded, strict=True):
        assert type(back) is type(codec.canonical(original))


@given(tuples, tuples, tuples)
def test_descendants_in_range(parent: tuple[Any, ...], tail: tuple[Any, ...], other: tuple[Any, ...]) -> None:
    lo, hi = codec.range_of(codec.encode(parent))
    child = codec.encode(parent + tail)
    assert lo <= child < hi
    eo = codec.encode(other)
    is_descendant = len(other) >= len(parent) and m_compare(other[: len(parent)], parent) == 0
    assert (lo <= eo < hi) == is_descendant


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, 1.0), (0, -0.0), (2**53, float(2**53)), (-3, -3.0)],
)
def test_equal_numbers_are_one_subscript(a: Any, b: Any) -> None:
    assert codec.encode((a,)) == codec.encode((b,))


def test_exact_numeric_order() -> None:
    seq = [
        -1e10,
        -1000,
        -1.5,
        -1,
        -0.25,
        -5e-324,
        0,
        5e-324,
        0.00001,
        0.5,
        1,
        1.5,
        2,
        9,
        10,
        100,
        1e10,
        float(2**53),
        2**53 + 1,
        2**64,
        2**64 + 1,
        1e25,
    ]
    assert sorted(seq, key=lambda x: codec.encode((x,))) == seq


def test_string_is_never_a_number() -> None:
    assert codec.encode(("1",)) != codec.encode((1,))
    assert codec.encode((10**30,)) < codec.encode(("0",))
    assert codec.decode(codec.encode(("1",))) == ("1",)


def test_types_order_numbers_strings_bytes() -> None:
    assert codec.encode((1e300,)) < codec.encode(("\x00",)) < codec.encode(("😀",)) < codec.encode((b"\x00",))


@pytest.mark.parametrize("bad", ["", None, math.nan, math.inf, -math.inf, True, False, [1], {"a": 1}, (1,), b"", object()])
def test_invalid_subscripts_are_named(bad: Any) -> None:
    with pytest.raises(InvalidSubscriptError) as info:
        codec.encode(("ok", bad))
    assert repr(bad)[:20] in str(info.value)


def test_non_tuple_subscripts_rejected() -> None:
    with pytest.raises(InvalidSubscriptError):
        codec.encode("abc")


def test_key_too_long_names_global_and_subscript() -> None:
    prefix = codec.encode_global("MEM")
    long = "x" * 600
    with pytest.raises(KeyTooLongError) as info:
        codec.encode_key(prefix, ("2026-07-01", long), global_name="MEM")
    assert "^MEM" in str(info.value)
    assert "xxxx" in str(info.value)
    assert "'2026-07-01'" not in str(info.value).split("subscript")[-1]


def test_key_at_limit_is_accepted() -> None:
    prefix = codec.encode_global("M")
    room = codec.MAX_KEY_BYTES - len(prefix) - 2
    key = codec.encode_key(prefix, ("y" * room,), global_name="M")
    assert len(key) == codec.MAX_KEY_BYTES


@pytest.mark.parametrize("name", ["", "1A", "A-B", "A B", "^A", "é"])
def test_bad_global_names(name: str) -> None:
    with pytest.raises(InvalidGlobalNameError):
        codec.encode_global(name)


values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=10,
)


@given(values)
def test_value_round_trip(v: Any) -> None:
    assert codec.unpack_value(codec.pack_value(v)) == v


@given(st.datetimes(timezones=st.just(dt.UTC)))
def test_datetime_values_round_trip_utc(d: dt.datetime) -> None:
    back = codec.unpack_value(codec.pack_value(d))
    assert back == d
    assert back.tzinfo is not None and back.utcoffset() == dt.timedelta(0)


def test_aware_non_utc_datetime_becomes_utc() -> None:
    d = dt.datetime(2026, 7, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    back = codec.unpack_value(codec.pack_value(d))
    assert back == d and back.hour == 10


def test_equal_datetimes_that_are_two_instants_pack_apart() -> None:
    """Packed UTC datetimes are remembered by value; in a zone with a repeated hour, two equal
    wall times (fold 0 and 1) are an hour apart and must stay so, packed again and again."""
    ambiguous = dt.datetime(2026, 10, 25, 2, 30, tzinfo=_FoldZone())
    later = ambiguous.replace(fold=1)
    assert ambiguous == later  # same tzinfo: Python compares the wall times
    for _ in range(2):
        assert codec.unpack_value(codec.pack_value(ambiguous)) == ambiguous.astimezone(dt.UTC)
        assert codec.unpack_value(codec.pack_value(later)) == later.astimezone(dt.UTC)
        assert codec.pack_value(ambiguous) != codec.pack_value(later)
    utc = ambiguous.astimezone(dt.UTC)
    assert codec.pack_value(utc) == codec.pack_value(ambiguous)


class _FoldZone(dt.tzinfo):
    """UTC+2 before the repeated hour's second pass (fold 0), UTC+1 in it (fold 1)."""

    def utcoffset(self, d: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(hours=1 if d is not None and d.fold else 2)

    def dst(self, d: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(0)


def test_naive_datetime_and_unknown_types_rejected() -> None:
    with pytest.raises(InvalidValueError, match="naive"):
        codec.pack_value(dt.datetime(2026, 7, 1))
    with pytest.raises(InvalidValueError, match="object"):
        codec.pack_value(object())


@given(st.integers(min_value=-(1 << 300), max_value=1 << 300))
def test_encode_int_is_encode_subscript(x: int) -> None:
    """The hot-loop fast paths agree with the general codec: encode_int encodes as
    encode_subscript does, and int_at reads back exactly the non-negative ints."""
    assert codec.encode_int(x) == codec.encode_subscript(x)
    assert codec.int_at(codec.encode_int(x) + b"`tail\x00") == (x if x >= 0 else None)


@pytest.mark.parametrize("sub", ["a", b"b", 1.5, -3, 0.25])
def test_int_at_declines_other_subscripts(sub: Any) -> None:
    assert codec.int_at(codec.encode_subscript(sub)) is None


class _Loud(str):
    """A str subclass whose str() is not its value, like a str-mixin Enum's ``Kind.DEBUG``."""

    def __str__(self) -> str:
        return "Loud." + str.__str__(self)


@given(st.text(min_size=1), st.booleans())
def test_str_subclass_encodes_as_its_string_value(s: str, plain_first: bool) -> None:
    """A str is always the string it holds: its encoding never depends on ``__str__`` or on
    whether the plain string was encoded (and cached) before."""
    sub = _Loud(s)
    if plain_first:
        codec.encode((s,))
    want = b"\x60" + s.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00"
    assert codec.encode_subscript(sub) == want
    assert codec.encode((sub, 1)) == codec.encode((s, 1))
    assert codec.decode(codec.encode((sub,))) == (s,)


plain_strings = st.text(min_size=1).filter(lambda s: "\x00" not in s)


@given(
    st.lists(st.one_of(plain_strings, subscripts, st.just(""), st.builds(_Loud, st.text()), st.none()), max_size=6).map(tuple),
    st.sampled_from(["MEM", "A", "%X", "z9"]),
    st.booleans(),
)
def test_encode_strs_agrees_with_encode(subs: tuple[Any, ...], name: str, check_types: bool) -> None:
    """``encode_strs`` is ``encode`` for keys of non-empty NUL-free strings (str subclasses
    by their value) and declines everything else, including the keys ``encode`` refuses;
    with ``check_types`` it declines str subclasses too, never a key of plain strings."""
    prefix = codec.encode_global(name)
    got = codec.encode_strs(subs, codec.text_prefix(prefix), check_types)
    plain = bool(subs) and all(isinstance(s, str) and s and "\x00" not in s for s in subs)
    if not plain or (check_types and any(type(s) is not str for s in subs)):
        assert got is None
        return
    assert got == codec.encode(subs, prefix)


@given(st.lists(plain_strings, min_size=1, max_size=6).map(tuple))
def test_encode_strs_takes_every_key_of_plain_strings(subs: tuple[str, ...]) -> None:
    assert codec.encode_strs(subs, codec.text_prefix(codec.encode_global("MEM"))) == codec.encode(subs, codec.encode_global("MEM"))


@pytest.mark.parametrize("subs", [("",), ("a", ""), ("", "a"), ("a", "", "b"), ("a\x00",), ("a", "\x00b"), ("a", "\x00`"), ("\x00`\x00",)])
def test_encode_strs_declines_empty_strings_and_nuls(subs: tuple[str, ...]) -> None:
    assert codec.encode_strs(subs, codec.text_prefix(codec.encode_global("MEM"))) is None
    assert codec.encode_strs((), codec.text_prefix(codec.encode_global("MEM"))) is None


@pytest.mark.parametrize("x", [2**2040, -(2**2040), 2**2048 + 1])
def test_too_large_int_subscript_states_the_real_limit(x: Any) -> None:
    """Integer subscripts hold at most 255 bytes of magnitude (a one-byte length prefix that
    existing keys use, so it stays): the error says that, not the 511-byte key limit."""
    codec.encode((2**2040 - 1,))  # the largest that fits, a 261-byte key
    with pytest.raises(KeyTooLongError, match=r"at most 255 bytes: \|x\| < 2\*\*2040") as info:
        codec.encode((x,))
    assert "limit 511" not in str(info.value) and "cannot fit in a key" not in str(info.value)
