"""Order-preserving encoding of subscript tuples in M collation, and msgpack values.

Pure functions, no I/O. The byte order of ``encode(t)`` equals M collation of ``t``
element by element, so an ordered key-value store can answer $ORDER/$QUERY with range scans.

Type-code table (one byte before each element; lower codes sort first)::

    0x20  negative number   bytes of the positive form, all inverted
    0x21  zero or positive  L, magnitude(L bytes, big-endian), fraction digits, 0x00
    0x60  str               UTF-8, 0x00 escaped as 00 FF, terminated by 0x00
    0x70  bytes             raw,   0x00 escaped as 00 FF, terminated by 0x00

Numbers are exact for every int and finite float: the integer part is a length-prefixed
big-endian magnitude (longer magnitude = larger number), the fractional part (always a
dyadic rational for a float) follows as base-128 digits each stored as ``0x80 | digit``,
trailing zero digits dropped, then a 0x00 terminator. Digits sort above the terminator,
so a shorter fraction sorts first, which is numeric order. A negative number is the
positive form inverted byte by byte, which reverses its order. Integral floats are stored
as ints, so ``1`` and ``1.0`` are one subscript and decode as ``1``.

After a complete element comes either the next element's type code (0x20-0x70) or the end,
while an escaped NUL inside a string continues with 0xFF; so all descendants of ``t`` lie in
``[encode(t), encode(t) + b"\\xff")`` and nothing else does
(``tests/engine/test_codec.py::test_descendants_in_range``). Ancestry is range membership, not a
byte prefix: ``encode(("a",))`` is a prefix of its sibling ``encode(("a\\x00",))``.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import operator
import re
import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, TypeAlias

import msgpack

from memdb import native
from memdb.errors import (
    CorruptionError,
    CorruptKeyError,
    CorruptValueError,
    InvalidGlobalNameError,
    InvalidSubscriptError,
    InvalidValueError,
    KeyTooLongError,
)

Subscript: TypeAlias = "str | int | float | bytes"
Subscripts: TypeAlias = "tuple[Subscript, ...]"

NEG: Final = 0x20
POS: Final = 0x21
STR: Final = 0x60
BYTES: Final = 0x70

MAX_KEY_BYTES: Final = 511
"""LMDB's default maximum key size; the globals layer enforces it for every backend."""

_MAX_INT_BYTES: Final = 255
_INVERT: Final = bytes(255 - i for i in range(256))
_GLOBAL_NAME = re.compile(r"[A-Za-z%][A-Za-z0-9]*\Z")
# Encoded strings, in two generations: a full young generation becomes the old one, so the
# cache approximates LRU without a cliff where everything is evicted at once.
_STR_CACHE: dict[str, bytes] = {}
_STR_CACHE_OLD: dict[str, bytes] = {}
_STR_CACHE_MAX: Final = 1 << 17


def _encode_str(s: str) -> bytes:
    global _STR_CACHE, _STR_CACHE_OLD
    out = _STR_CACHE_OLD.get(s)
    if out is None:
        out = encode_unique(s)
    if len(_STR_CACHE) >= _STR_CACHE_MAX:
        _STR_CACHE_OLD, _STR_CACHE = _STR_CACHE, {}
    _STR_CACHE[s] = out
    return out


def encode_unique(s: str) -> bytes:
    """``encode_subscript`` of a str met once (a new episode's id), not kept in the cache of
    encoded strings: there it would only push out strings that are met again (terms, tags)."""
    if not s:
        raise InvalidSubscriptError("subscript '': the empty string is not a valid subscript (use it only as an order() seed)")
    raw = s.encode("utf-8", "surrogatepass")
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"\x00\xff")
    return b"\x60" + raw + b"\x00"


def _encode_bytes(b: bytes) -> bytes:
    if not b:
        raise InvalidSubscriptError("subscript b'': empty bytes are not a valid subscript")
    return b"\x70" + b.replace(b"\x00", b"\x00\xff") + b"\x00"


def _encode_positive(intpart: int, num: int, den_bits: int) -> bytes:
    """Encode ``intpart + num / 2**den_bits`` (0 <= num < 2**den_bits) without the type code."""
    nbytes = (intpart.bit_length() + 7) >> 3
    if nbytes > _MAX_INT_BYTES:
        raise KeyTooLongError(
            f"subscript {short_repr(intpart)}: a number whose integer part takes {nbytes} bytes is too large for a subscript "
            f"(the key format holds at most {_MAX_INT_BYTES} bytes: |x| < 2**{8 * _MAX_INT_BYTES}; use a str subscript)"
        )
    out = bytearray((nbytes,))
    out += intpart.to_bytes(nbytes, "big")
    if num:
        # Pad the fraction to a whole number of 7-bit digits, then emit digits high to low.
        pad = (-den_bits) % 7
        num <<= pad
        ndigits = (den_bits + pad) // 7
        while not num & 0x7F:  # drop trailing zero digits
            num >>= 7
            ndigits -= 1
        for shift in range(7 * (ndigits - 1), -1, -7):
            out.append(0x80 | ((num >> shift) & 0x7F))
    out.append(0)
    return bytes(out)


def _encode_number(x: int | float) -> bytes:
    if isinstance(x, float):
        if not math.isfinite(x):
            raise InvalidSubscriptError(f"subscript {x!r}: NaN and infinities are not valid subscripts")
        if x.is_integer():
            x = int(x)
        else:
            num, den = x.as_integer_ratio()
            neg = num < 0
            if neg:
                num = -num
            intpart, rem = divmod(num, den)
            body = _encode_positive(intpart, rem, den.bit_length() - 1)
            return b"\x20" + body.translate(_INVERT) if neg else b"\x21" + body
    return encode_int(x)


def encode_int(x: int) -> bytes:
    """Encode an integer subscript (``encode_subscript`` for ints, without its type dispatch:
    for hot loops that build keys of a fixed layout)."""
    if x >= 0:
        n = (x.bit_length() + 7) >> 3
        if n <= _MAX_INT_BYTES:  # type, length, big-endian magnitude, end of (no) fraction
            return b"\x21" + bytes((n,)) + x.to_bytes(n, "big") + b"\x00"
        return b"\x21" + _encode_positive(x, 0, 0)  # raises KeyTooLongError naming it
    return b"\x20" + _encode_positive(-x, 0, 0).translate(_INVERT)


def int_at(buf: bytes, pos: int = 0) -> int | None:
    """The non-negative integer subscript encoded at ``pos``, or None if something else is
    there (the fast path of ``decode_one`` for hot loops over keys of a fixed layout)."""
    if buf[pos] != POS:
        return None
    n = buf[pos + 1]
    return int.from_bytes(buf[pos + 2 : pos + 2 + n], "big") if buf[pos + 2 + n] == 0 else None


def encode_subscript(sub: Subscript) -> bytes:
    """Encode one subscript; raises InvalidSubscriptError naming it if it is not valid."""
    t = type(sub)
    if t is str:
        return _encode_str(sub)  # type: ignore[arg-type]
    if t is int or t is float:
        return _encode_number(sub)  # type: ignore[arg-type]
    if t is bytes:
        return _encode_bytes(sub)  # type: ignore[arg-type]
    if isinstance(sub, bool) or sub is None:
        raise InvalidSubscriptError(f"subscript {sub!r}: {type(sub).__name__} is not a valid subscript (use str, int, float or bytes)")
    if isinstance(sub, str):
        # The string itself, never str(sub): a str-mixin Enum's __str__ gives "Kind.DEBUG", and
        # the cache in encode() (keyed by equality) would give "debug" for the same object
        # (tests/engine/test_codec.py::test_str_subclass_encodes_as_its_string_value).
        return _encode_str(str.__str__(sub))
    if isinstance(sub, int):
        return _encode_number(int(sub))
    if isinstance(sub, float):
        return _encode_number(float(sub))
    if isinstance(sub, (bytes, bytearray, memoryview)):
        return _encode_bytes(bytes(sub))
    raise InvalidSubscriptError(f"subscript {sub!r}: {type(sub).__name__} is not a valid subscript (use str, int, float or bytes)")


def encode(subs: Sequence[Subscript], prefix: bytes = b"") -> bytes:
    """Encode a subscript tuple; byte order of results equals M collation of the tuples.
    ``prefix`` (a global's encoded name) is put in front in the same join."""
    if type(subs) is not tuple:
        if isinstance(subs, (str, bytes)) or not isinstance(subs, Sequence):
            raise InvalidSubscriptError(f"subscripts {subs!r}: expected a tuple of subscripts")
    parts = [prefix]
    cache = _STR_CACHE
    for sub in subs:
        # Only str keys are cached, and no str equals a number, so any hashable may be looked up.
        try:
            part = cache.get(sub)  # type: ignore[arg-type]
        except TypeError:  # unhashable: encode_subscript names it
            part = None
        parts.append(part if part is not None else encode_subscript(sub))
    return b"".join(parts)


_SEP: Final = "\x00`"  # a string's terminator, then the next string's type code (STR)


def text_prefix(prefix: bytes) -> str:
    """A global's encoded name (``encode_global``) as the str that ``encode_strs`` takes: the
    name's bytes (ASCII) and the type code of a first string subscript."""
    if not prefix.endswith(b"\x00") or not prefix.isascii():
        raise ValueError(f"text_prefix: {prefix!r} is not an encoded global name")
    return prefix.decode("ascii") + "`"


def encode_strs(subs: Subscripts, text: str, check_types: bool = False) -> bytes | None:
    """``encode(subs, prefix)`` when ``subs`` holds only non-empty strings without a NUL (the
    usual key), else None and the caller takes ``encode``; ``text`` is ``text_prefix(prefix)``.

    One join and one UTF-8 encode of the whole key instead of a cache lookup per subscript:
    about 0.4 µs for three strings on the benchmark machine, and no slower when a cache would
    hold hundreds of thousands of ids and miss the CPU's caches (benchmarks/results/globals.md).
    ``str.join`` takes str subclasses by their string value, as ``encode_subscript`` does, and
    refuses anything else with TypeError. The joined key has one NUL per string plus the name's
    terminator when no string holds a NUL, and holds ``00 60 00`` exactly when one string is
    empty (every other terminator is followed by a type code and a string's first byte), so
    both checks are one C call each (tests/engine/test_codec.py::test_encode_strs_agrees_with_encode).

    A join that fails costs ~0.45 µs (the TypeError), a type check per subscript ~0.06 µs
    for three: ``check_types`` (for the keys of a global that has held a number) checks the
    types first and declines str subclasses too.
    """
    if check_types:
        for sub in subs:
            if type(sub) is not str:
                return None
    try:
        key = text + _SEP.join(subs) + "\x00"  # type: ignore[arg-type]  # a TypeError is the test
    except TypeError:  # a number, bytes, or not a subscript at all: encode() sorts it out
        return None
    if "\x00`\x00" in key or key.count("\x00") != len(subs) + 1:
        return None
    return key.encode("utf-8", "surrogatepass")


def encode_each(subs: Iterable[Subscript]) -> list[bytes]:
    """Encode each subscript on its own (``encode`` without the join): the tails of many
    children of one parent, e.g. the counters one write defers."""
    parts = []
    cache = _STR_CACHE
    for sub in subs:
        try:
            part = cache.get(sub)  # type: ignore[arg-type]
        except TypeError:
            part = None
        parts.append(part if part is not None else encode_subscript(sub))
    return parts


def encode_global(name: str) -> bytes:
    """Encode a global's name as the key prefix of all its nodes."""
    if not isinstance(name, str) or not _GLOBAL_NAME.match(name):
        raise InvalidGlobalNameError(f"global name {name!r}: use letters and digits, starting with a letter")
    return _encode_str(name)


def encode_key(prefix: bytes, subs: Sequence[Subscript], *, global_name: str = "") -> bytes:
    """Encode ``prefix + subs`` and enforce MAX_KEY_BYTES, naming the global and subscript."""
    key = prefix + encode(subs)
    if len(key) > MAX_KEY_BYTES:
        check_key_length(key, prefix, subs, global_name)
    return key


def check_key_length(key: bytes, prefix: bytes, subs: Sequence[Subscript], global_name: str) -> None:
    """Raise KeyTooLongError naming the subscript that crosses the limit."""
    if len(key) <= MAX_KEY_BYTES:
        return
    size = len(prefix)
    culprit: Subscript | None = None
    for s in subs:
        size += len(encode_subscript(s))
        if size > MAX_KEY_BYTES:
            culprit = s
            break
    shown = short_repr(culprit)
    raise KeyTooLongError(
        f"key of ^{global_name or '?'}: {len(key)} bytes exceeds the {MAX_KEY_BYTES}-byte key limit at subscript {shown} "
        "(keep subscripts short; store long text as a value)"
    )


def short_repr(value: object, limit: int = 80) -> str:
    """repr() cut to ``limit`` characters, for error messages that must stay readable."""
    if isinstance(value, int) and value.bit_length() > 4000:
        # str() refuses ints over 4300 digits: show the leading digits and the size instead.
        digits = int(abs(value).bit_length() * math.log10(2))
        lead = str(abs(value) // 10 ** max(digits - 20, 0))[:20]
        return f"{'-' if value < 0 else ''}{lead}...(an int of about {digits + 1} digits)"
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def range_of(key: bytes) -> tuple[bytes, bytes]:
    """The half-open key range holding ``key`` and all its descendants."""
    return key, key + b"\xff"


def children_range(key: bytes) -> tuple[bytes, bytes]:
    """The half-open key range holding the strict descendants of ``key``."""
    return key + b"\x00", key + b"\xff"


# --- decoding --------------------------------------------------------------------------------


def _corrupt_key(buf: bytes, reason: str) -> CorruptKeyError:
    return CorruptKeyError(f"key {buf!r}: damaged: {reason} ({CorruptionError.HINT})")


def _decode_positive(buf: bytes, pos: int) -> tuple[int | float, int]:
    n = buf[pos]
    pos += 1
    intpart = int.from_bytes(buf[pos : pos + n], "big")
    pos += n
    if buf[pos] == 0:
        return intpart, pos + 1
    num = 0
    ndigits = 0
    while True:
        b = buf[pos]
        pos += 1
        if b == 0:
            break
        if b < 0x80:
            raise _corrupt_key(buf, f"bad fraction digit at byte {pos - 1}")
        num = (num << 7) | (b & 0x7F)
        ndigits += 1
    # A non-integral float: one correctly rounded (hence exact) division by a power of two.
    shift = 7 * ndigits
    return ((intpart << shift) + num) / (1 << shift), pos


def _decode_escaped(buf: bytes, pos: int) -> tuple[bytes, int]:
    end = buf.find(b"\x00", pos)
    if end < 0:
        raise _corrupt_key(buf, f"unterminated string at byte {pos}")
    if end + 1 < len(buf) and buf[end + 1] == 0xFF:
        parts = []
        while end + 1 < len(buf) and buf[end + 1] == 0xFF:
            parts.append(buf[pos:end])
            parts.append(b"\x00")
            pos = end + 2
            end = buf.find(b"\x00", pos)
            if end < 0:
                raise _corrupt_key(buf, f"unterminated string at byte {pos}")
        parts.append(buf[pos:end])
        return b"".join(parts), end + 1
    return buf[pos:end], end + 1


def decode_one(buf: bytes, pos: int = 0) -> tuple[Subscript, int]:
    """Decode the subscript starting at ``pos``; returns it and the position after it."""
    try:
        code = buf[pos]
        if code == STR:
            raw, pos = _decode_escaped(buf, pos + 1)
            return raw.decode("utf-8", "surrogatepass"), pos
        if code == POS:
            return _decode_positive(buf, pos + 1)
        if code == NEG:
            # Find the inverted terminator (0xFF) after the inverted length-prefixed magnitude.
            n = 255 - buf[pos + 1]
            end = buf.index(b"\xff", pos + 2 + n)
            body = buf[pos + 1 : end + 1].translate(_INVERT)
            value, _ = _decode_positive(body, 0)
            return -value, end + 1
        if code == BYTES:
            return _decode_escaped(buf, pos + 1)
    except (IndexError, ValueError, UnicodeDecodeError):
        raise _corrupt_key(buf, f"cannot decode at byte {pos}") from None
    raise _corrupt_key(buf, f"unknown type code {code:#04x} at byte {pos}")


def decode(buf: bytes, pos: int = 0) -> tuple[Subscript, ...]:
    """Decode an encoded subscript tuple (from ``pos`` to the end)."""
    n = len(buf)
    if 0 <= pos < n and buf[pos] == STR and buf[-1] == 0:
        # The common case in C loops: strings only, none holding a NUL. Then the bytes are
        # 60 s1 00 60 s2 00 ... 60 sk 00 with no NUL inside any s, so every NUL but the last is
        # followed by 0x60; a NUL followed by anything else (a number, bytes, an escaped NUL:
        # 00 FF is not UTF-8 anyway) sends the key to the general loop, as does a decoding
        # error, which the loop reports at its own byte. UTF-8 resynchronises at ASCII, so
        # decoding the run at once equals decoding each string.
        try:
            text = buf[pos + 1 : -1].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            pass
        else:
            subs = text.split("\x00`")
            if text.count("\x00") == len(subs) - 1:
                return tuple(subs)
    return _decode_loop(buf, pos)


def _decode_loop(buf: bytes, pos: int) -> tuple[Subscript, ...]:
    """``decode`` element by element: the specification its fast path must agree with."""
    out: list[Subscript] = []
    n = len(buf)
    find = buf.find
    while pos < n:
        if buf[pos] == STR:  # a string without escaped NULs, inline
            end = find(b"\x00", pos)
            # The byte after a terminator is a type code or the end, never 0xFF (an escape).
            if end > 0 and (end + 1 == n or buf[end + 1] != 0xFF):
                try:
                    out.append(buf[pos + 1 : end].decode("utf-8", "surrogatepass"))
                except UnicodeDecodeError:
                    raise _corrupt_key(buf, f"invalid UTF-8 at byte {pos}") from None
                pos = end + 1
                continue
        sub, pos = decode_one(buf, pos)
        out.append(sub)
    return tuple(out)


_last_byte = operator.itemgetter(-1)


def _str_layout(keys: list[bytes], blob: bytes) -> int:
    """How many string subscripts each key holds if every key is a non-empty run of the same
    number of them, none holding a NUL (so none escaped); else -1. ``blob`` is the keys
    joined. The twin of ``memdb_str_layout`` (native/codec.c), which decode_many uses when
    it is built; UTF-8 is left to the caller's decode."""
    try:
        ends = bytes(map(_last_byte, keys))
    except IndexError:  # an empty key
        return -1
    counts = set(map(bytes.count, keys, itertools.repeat(0)))
    # Each key ends with a NUL and holds as many as every other; every NUL but the blob's
    # last is followed by 0x60, so every key starts with one and every NUL ends a string.
    if len(counts) != 1 or ends.strip(b"\x00") or blob[0] != STR or blob.count(b"\x00") != blob.count(b"\x00\x60") + 1:
        return -1
    return counts.pop()


def _c_str_layout(keys: list[bytes], blob: bytes) -> int:
    """``_str_layout`` in C: one call per chunk, about 0.045 µs a key against 0.14 (the
    lengths go in an array the call reads in place, cheaper than cffi's own conversion)."""
    lens = _CODEC_FFI.from_buffer("size_t[]", array(_SIZE_T, map(len, keys)))
    n: int = _CODEC_LIB.memdb_str_layout(blob, lens, len(keys))
    return n


_CODEC_LIB, _CODEC_FFI = native.codec_lib()
# the array typecode of C's size_t, whose buffer memdb_str_layout reads as its lens
_SIZE_T: Final = "Q" if _CODEC_FFI is None else next(c for c in "QLI" if array(c).itemsize == _CODEC_FFI.sizeof("size_t"))
_layout = _str_layout if _CODEC_LIB is None else _c_str_layout


def decode_many(keys: list[bytes], pos: int) -> Iterator[tuple[Subscript, ...]] | None:
    """``decode(k, pos) for k in keys`` in a few C loops when every key is strings only (none
    holding a NUL), all with as many subscripts and the same first ``pos`` bytes; else None,
    and the caller decodes one key at a time (so a damaged key raises where it stands in a
    scan). The chunks of a scan over one layout take this path: about 0.2 µs a key against
    0.4 for ``decode``'s own fast path, called per key. The keys are all checked before it
    returns; the tuples are made as the iterator is read, so a chunk's 512 of them are never
    alive at once for the garbage collector to walk.
    """
    if not keys:
        return iter(())
    head = keys[0][:pos]
    if len(head) != pos or (pos and head[-1] != 0):
        return None
    blob = b"".join(keys)
    per_key = _layout(keys, blob)
    if per_key < 0:
        return None
    try:
        text = blob[1:-1].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    # Every NUL ends a string, so flat holds each key's per_key strings, key after key. The
    # first seps strings of keys[0] are its first pos bytes; a key whose first seps strings
    # are the same ones (strings encode one way) has the same first pos bytes.
    flat = text.split("\x00`")
    seps = head.count(0)
    for i, shared in enumerate(flat[:seps]):
        if flat[i::per_key].count(shared) != len(keys):
            return None
    for _ in range(seps):
        del flat[::per_key]
        per_key -= 1
    if not per_key:
        return itertools.repeat((), len(keys))
    return zip(*[iter(flat)] * per_key, strict=True)


def collation_key(sub: Subscript) -> tuple[int, Any]:
    """A Python sort key giving M collation for one subscript (the reference the tests check against)."""
    if isinstance(sub, (int, float)) and not isinstance(sub, bool):
        from fractions import Fraction

        return (0, Fraction(sub))
    if isinstance(sub, str):
        return (1, sub.encode("utf-8", "surrogatepass"))
    if isinstance(sub, (bytes, bytearray)):
        return (2, bytes(sub))
    raise InvalidSubscriptError(f"subscript {sub!r}: {type(sub).__name__} is not a valid subscript")


def canonical(sub: Subscript) -> Subscript:
    """The form ``decode(encode(...))`` returns: integral floats become ints."""
    if isinstance(sub, float) and sub.is_integer():
        return int(sub)
    return sub


# --- values ----------------------------------------------------------------------------------

_DT_EXT: Final = 1


def _default(obj: Any) -> Any:
    if type(obj) is _dt.datetime and obj.tzinfo is _dt.UTC:
        # memdb keeps UTC datetimes, and a UTC datetime's fields are its instant, so equal
        # ones pack alike (in another zone, equal wall times can be two instants: not cached).
        # A plain (code, data) tuple is kept, not the ExtType: an ExtType (a tuple subclass) is
        # tracked by the cyclic GC for as long as it is kept, and one per capture made its passes
        # over the whole heap more frequent and longer (test_capture_gc.py). ``_make`` builds the
        # ExtType from it without ExtType's checks in Python, which it passes (half the cost).
        pair = _EXTS.get(obj)
        if pair is None:
            if len(_EXTS) >= _DATETIMES_KEPT:
                _EXTS.clear()
            pair = _EXTS[obj] = (_DT_EXT, _to_micros(obj).to_bytes(9, "big", signed=True))
        return _ext(pair)
    if isinstance(obj, _dt.datetime):
        if obj.tzinfo is None:
            raise InvalidValueError(f"value {obj!r}: naive datetime; give a timezone-aware one (UTC is stored)")
        return msgpack.ExtType(_DT_EXT, _to_micros(obj).to_bytes(9, "big", signed=True))
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, int) and not isinstance(obj, bool):  # msgpack calls default for an int out of its range
        raise InvalidValueError(
            f"value {short_repr(obj)}: int out of range (values hold ints from -2**63 to 2**64-1; store a larger one as a str)"
        )
    raise InvalidValueError(f"value {obj!r}: {type(obj).__name__} cannot be stored (use msgpack types or datetime)")


EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
"""Where datetime values (and memdb's microsecond timestamps) count from."""


def _to_micros(d: _dt.datetime) -> int:
    delta = d - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


_EXTS: dict[_dt.datetime, tuple[int, bytes]] = {}  # packed UTC datetimes, for _default
_ext: Final = msgpack.ExtType._make
# Decoded datetimes by their packed bytes: a header holds two and a query unpacks a header for
# each memory it ranks, and datetimes are immutable, so one object serves every read of a moment.
_DATETIMES: dict[bytes, _dt.datetime] = {}
_DATETIMES_KEPT: Final = 1 << 16


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _DT_EXT:
        found = _DATETIMES.get(data)
        if found is None:
            if len(data) != 9:
                raise ValueError(f"a datetime of {len(data)} bytes, not 9")
            if len(_DATETIMES) >= _DATETIMES_KEPT:
                _DATETIMES.clear()
            found = _DATETIMES[data] = EPOCH + _dt.timedelta(microseconds=int.from_bytes(data, "big", signed=True))
        return found
    return msgpack.ExtType(code, data)


_packers = threading.local()


def pack_value(value: Any) -> bytes:
    """Serialise a value with msgpack; datetimes round-trip as timezone-aware UTC."""
    packer = getattr(_packers, "p", None)
    if packer is None:  # a Packer is reusable but not thread-safe: one per thread
        packer = _packers.p = msgpack.Packer(default=_default, use_bin_type=True, autoreset=True)
    try:
        return packer.pack(value)  # type: ignore[no-any-return]
    except InvalidValueError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidValueError(f"value {value!r:.80}: cannot be stored ({exc})") from None


_unpackb: Final = msgpack.unpackb


def unpack_value(data: bytes) -> Any:
    """Inverse of pack_value. Bytes it did not write (a damaged file) raise CorruptValueError,
    whatever msgpack or the datetime extension make of them (tests/engine/test_damaged_files.py)."""
    try:
        return _unpackb(data, ext_hook=_ext_hook, strict_map_key=False)  # raw=False: msgpack's default since 1.0
    except (ValueError, TypeError, OverflowError) as exc:  # ExtraData, FormatError, StackError, UnicodeDecodeError, ...
        raise CorruptValueError(
            f"stored value {bytes(data[:16]).hex()}{'...' if len(data) > 16 else ''} ({len(data)} bytes): "
            f"damaged: cannot be decoded: {type(exc).__name__}: {exc} ({CorruptionError.HINT})"
        ) from None


def check_global_name(name: str) -> str:
    """Validate a global name (letters and digits, starting with a letter) and return it."""
    encode_global(name)
    return name
