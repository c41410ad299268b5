"""The codec's fast paths against its specification: ``decode`` against its element loop,
``decode_many`` against ``decode`` per key, and the C layout check (native/codec.c) against
its pure-Python twin, on arbitrary and on damaged keys. CI runs this module with and
without MEMDB_PURE_PYTHON=1 (.ci/run)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_codec import subscripts, tuples

from memdb import native
from memdb.engine import codec
from memdb.errors import CorruptKeyError

C_LAYOUT = codec._CODEC_LIB is not None
needs_c = pytest.mark.skipif(not C_LAYOUT, reason="the C codec is not in use (MEMDB_PURE_PYTHON=1 or not built)")

PREFIX = codec.encode_global("MEM")
# Strings with and without NULs (escaped as 00 FF), non-BMP text and lone surrogates
# (surrogatepass), and the other subscript types, so keys fall on both sides of every check.
texts = st.one_of(
    st.text(min_size=1, max_size=12),
    st.text(alphabet=st.sampled_from(["a", "\x00", "é", "\U0001f600", "\ud800", "`", "\x01", "\uffff"]), min_size=1, max_size=6),
)
str_tuples = st.lists(texts, max_size=4).map(tuple)
any_tuples = st.one_of(str_tuples, tuples, st.lists(st.one_of(texts, subscripts), max_size=4).map(tuple))


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    """A result or the error it raised, comparable across implementations."""
    try:
        return "ok", fn(*args)
    except CorruptKeyError as exc:
        return "corrupt", str(exc)


def _damaged(key: bytes, data: st.DataObject) -> bytes:
    """``key`` with a byte flipped, dropped or inserted, cut short, or a byte past its end
    (which keeps its NULs, so its count of strings still matches its neighbours')."""
    how = data.draw(st.sampled_from(["flip", "drop", "insert", "cut", "append"]))
    if not key:
        return bytes([data.draw(st.integers(0, 255))])
    i = data.draw(st.integers(0, len(key) - 1))
    byte = data.draw(st.sampled_from([0x00, 0x01, 0x20, 0x21, 0x60, 0x70, 0x80, 0xC3, 0xED, 0xFF, data.draw(st.integers(0, 255))]))
    if how == "flip":
        return key[:i] + bytes([byte]) + key[i + 1 :]
    if how == "drop":
        return key[:i] + key[i + 1 :]
    if how == "append":
        return key + bytes([byte or 0x61])
    if how == "insert":
        return key[:i] + bytes([byte]) + key[i:]
    return key[:i]


def _with_c(monkeypatch: pytest.MonkeyPatch, c: bool) -> None:
    monkeypatch.setattr(codec, "_layout", codec._c_str_layout if c else codec._str_layout)


def _many(keys: list[bytes], pos: int) -> list[tuple[Any, ...]] | None:
    out = codec.decode_many(keys, pos)
    return None if out is None else list(out)


# --- decode: the one-split fast path equals the element loop -----------------------------------


@given(any_tuples, st.integers(0, 2))
@example(("a", "b\x00c", "d"), 0)
@example(("\U0001f600", "\ud800"), 1)
def test_decode_equals_the_element_loop(t: tuple[Any, ...], skip: int) -> None:
    buf = PREFIX + codec.encode(t)
    pos = len(codec.encode(t[:skip], PREFIX)) if skip <= len(t) else len(buf)
    assert codec.decode(buf, pos) == codec._decode_loop(buf, pos) == tuple(codec.canonical(s) for s in t[skip:])


@given(any_tuples, st.data())
def test_a_damaged_key_decodes_or_fails_alike(t: tuple[Any, ...], data: st.DataObject) -> None:
    buf = _damaged(codec.encode(t), data)
    assert _outcome(codec.decode, buf) == _outcome(codec._decode_loop, buf, 0)


@given(st.binary(max_size=40), st.integers(0, 5))
@example(b"`a\x00`\xff\x00", 0)  # a NUL escape's 0xFF after a terminator
@example(b"`\xed\xa0\x80\x00", 0)  # a lone surrogate, as surrogatepass writes it
@example(b"`a\x00!", 0)  # a number's type code cut short
def test_arbitrary_bytes_decode_or_fail_alike(buf: bytes, pos: int) -> None:
    assert _outcome(codec.decode, buf, pos) == _outcome(codec._decode_loop, buf, pos)


def test_a_corrupt_string_key_raises_corrupt_key_error() -> None:
    with pytest.raises(CorruptKeyError, match=r"invalid UTF-8 at byte 4"):
        codec.decode(b"`ab\x00`\xc3\x00")
    with pytest.raises(CorruptKeyError, match="unterminated string"):
        codec.decode(b"`ab\x00`cd")


# --- decode_many: a chunk at once equals decode per key ----------------------------------------


def _keys(data: st.DataObject, shared: tuple[Any, ...]) -> list[bytes]:
    """Keys under PREFIX + shared, mostly of one layout (so the batch path is taken), some of
    any layout, some damaged."""
    layout = data.draw(st.integers(0, 3))
    keys = []
    for _ in range(data.draw(st.integers(0, 12))):
        kind = data.draw(st.sampled_from(["same", "same", "same", "any", "damaged"]))
        if kind == "same":
            tail: tuple[Any, ...] = tuple(data.draw(texts) for _ in range(layout))
        else:
            tail = data.draw(any_tuples)
        key = codec.encode(shared + tail, PREFIX)
        keys.append(_damaged(key, data) if kind == "damaged" else key)
    return keys


@pytest.mark.parametrize("c", [pytest.param(True, marks=needs_c), False], ids=["c", "python"])
@settings(max_examples=400)
@given(data=st.data(), shared=str_tuples)
def test_decode_many_is_decode_per_key(c: bool, data: st.DataObject, shared: tuple[str, ...]) -> None:
    keys = _keys(data, shared)
    pos = len(codec.encode(shared[: data.draw(st.integers(0, len(shared)))], PREFIX)) if data.draw(st.booleans()) else 0
    with pytest.MonkeyPatch.context() as mp:  # per example: a fixture would span them all
        _with_c(mp, c)
        got = _many(keys, pos)
    if got is not None:
        assert got == [codec.decode(k, pos) for k in keys]


@pytest.mark.parametrize("c", [pytest.param(True, marks=needs_c), False], ids=["c", "python"])
def test_decode_many_takes_a_chunk_of_one_layout(monkeypatch: pytest.MonkeyPatch, c: bool) -> None:
    _with_c(monkeypatch, c)
    fields = ("summary", "tags", "décisions", "ts\U0001f600")
    keys = [codec.encode(("2026-02-19", f"conv_{i // 4:06d}", fields[i % 4]), PREFIX) for i in range(512)]
    assert _many(keys, len(PREFIX)) == [codec.decode(k, len(PREFIX)) for k in keys]
    assert _many(keys, len(PREFIX) + 12) == [codec.decode(k, len(PREFIX) + 12) for k in keys]
    assert _many(keys, 0) == [codec.decode(k) for k in keys]
    assert _many([PREFIX, PREFIX], len(PREFIX)) == [(), ()]
    assert _many([], 3) == []


@pytest.mark.parametrize("c", [pytest.param(True, marks=needs_c), False], ids=["c", "python"])
@pytest.mark.parametrize(
    ("keys", "pos"),
    [
        ([codec.encode(("a", "b"), PREFIX), codec.encode(("a",), PREFIX)], 5),  # two layouts
        ([codec.encode(("a", 1), PREFIX)], 5),  # a number
        ([codec.encode(("a", b"x"), PREFIX)], 5),  # bytes
        ([codec.encode(("a\x00b",), PREFIX)], 5),  # an escaped NUL
        ([codec.encode(("ab",), PREFIX), codec.encode(("ab",), PREFIX)[:-1]], 5),  # unterminated
        ([codec.encode(("ab",), PREFIX), b"`MEM\x00`a\xff\x00"], 5),  # not UTF-8
        ([codec.encode(("ab",), PREFIX), codec.encode(("ab",), codec.encode_global("LIFE"))], 5),  # another head
        ([codec.encode(("ab",), PREFIX)], 3),  # pos inside a string
        ([codec.encode(("ab",), PREFIX), b""], 0),  # an empty key
        ([PREFIX + b"`a\x00`", PREFIX + b"`b\x00"], 5),  # a key running on past its last NUL
        ([PREFIX + b"`a\x00", PREFIX + b"`b\x00`c"], 5),  # the same, in the last key
    ],
)
def test_decode_many_declines_what_it_cannot_take_whole(monkeypatch: pytest.MonkeyPatch, c: bool, keys: list[bytes], pos: int) -> None:
    """None, so the caller decodes one key at a time and a damaged key raises where it stands."""
    _with_c(monkeypatch, c)
    assert codec.decode_many(keys, pos) is None
    for key in keys:
        assert _outcome(codec.decode, key, pos) == _outcome(codec._decode_loop, key, pos)


# --- the C layout check equals its twin --------------------------------------------------------


@needs_c
@given(st.data())
def test_c_layout_is_the_python_layout(data: st.DataObject) -> None:
    keys = _keys(data, data.draw(str_tuples))
    if keys:
        blob = b"".join(keys)
        assert codec._c_str_layout(keys, blob) == codec._str_layout(keys, blob)


@needs_c
@pytest.mark.parametrize(
    "keys",
    [[b""], [b"`"], [b"`\x00"], [b"`\x00", b"`a\x00"], [b"`a\x00`b\x00", b"`c\x00"], [b"`a\x00\x01"], [b"`\x00`\x00"], [b"`a\x00", b"`b"]],
)
def test_c_layout_is_the_python_layout_at_the_edges(keys: list[bytes]) -> None:
    blob = b"".join(keys)
    assert codec._c_str_layout(keys, blob) == codec._str_layout(keys, blob)


@needs_c
def test_the_c_codec_is_chosen_when_built() -> None:
    lib, _ = native.codec_lib()
    assert lib is not None and codec._layout is codec._c_str_layout


def test_pure_python_is_chosen_when_forced() -> None:
    if native.FORCED_PURE:
        assert native.codec_lib() == (None, None) and codec._layout is codec._str_layout
    else:
        assert codec._layout is (codec._c_str_layout if native.AVAILABLE else codec._str_layout)
