"""Batch relevance scoring (DESIGN.md section 5): the C scorer when built, else its pure-Python twin.

The implementation is chosen once, at import, like py-lmdb: ``MEMDB_PURE_PYTHON=1`` (or
``true``/``yes``) forces the twin, and so does a missing or broken ``memdb._scorer``.
``AVAILABLE`` says whether C is in use. Both paths turn their inputs into the same doubles
and evaluate the same expressions in the same order with the same libm calls, so they agree
to the last bit on one machine (``tests/memory/test_native.py`` checks 1e-9); ``py_score_batch`` and
``py_top_k`` stay importable so tests and benchmarks can compare them.

Relevance is ``w_freq*frequency + w_tags*tags + w_age*age + w_feedback*feedback`` on 0-10,
each component on 0-10. A NaN input counts as missing (0 accesses, tag weight 0, infinitely
old, no feedback), so it never makes a NaN score.
"""

from __future__ import annotations

import heapq
import math
import operator
import os
from array import array
from collections.abc import Sequence, Sized
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, overload

from memdb.errors import ConfigError, NativeBuildError, ValidationError

Components: TypeAlias = tuple[float, float, float, float]
"""(frequency, tags, age, feedback), each on 0-10."""

_TRUTHY: Final = frozenset({"1", "true", "yes"})
FORCED_PURE: Final = os.environ.get("MEMDB_PURE_PYTHON", "").strip().lower() in _TRUTHY

_ffi: Any = None
_lib: Any = None
_UNAVAILABLE_REASON: str | None = "MEMDB_PURE_PYTHON is set" if FORCED_PURE else None
if not FORCED_PURE:
    try:
        import memdb._scorer as _scorer

        _ffi, _lib = _scorer.ffi, _scorer.lib
    except ImportError as exc:  # not built (pure install, no compiler) or built for another Python
        _UNAVAILABLE_REASON = f"memdb._scorer cannot be imported: {exc}"

AVAILABLE: Final[bool] = _lib is not None
IMPLEMENTATION: Final[Literal["c", "python"]] = "c" if AVAILABLE else "python"


def search_lib() -> tuple[Any, Any]:
    """``(lib, ffi)`` of the C text search kernel (native/search.c), or ``(None, None)`` when
    the twin is in use (``memdb.memory.postings`` chooses with it)."""
    return _SEARCH


_SEARCH: Final[tuple[Any, Any]] = (_lib, _ffi) if _lib is not None and hasattr(_lib, "memdb_text_search") else (None, None)


def codec_lib() -> tuple[Any, Any]:
    """``(lib, ffi)`` of the C key-layout check (native/codec.c), or ``(None, None)`` when
    the twin is in use (``memdb.engine.codec.decode_many`` chooses with it)."""
    return _CODEC


_CODEC: Final[tuple[Any, Any]] = (_lib, _ffi) if _lib is not None and hasattr(_lib, "memdb_str_layout") else (None, None)


def blocks_lib() -> tuple[Any, Any]:
    """``(lib, ffi)`` of the C posting block writer (native/blocks.c), or ``(None, None)`` when the
    twin is in use (``memdb.memory.postings.stage_blocks`` chooses with it)."""
    return _BLOCKS


_BLOCKS: Final[tuple[Any, Any]] = (_lib, _ffi) if _lib is not None and hasattr(_lib, "memdb_stage_blocks") else (None, None)


def require_native() -> None:
    """Raise NativeBuildError unless the C scorer is in use; for callers that must not run slow."""
    if not AVAILABLE:
        raise NativeBuildError(
            f"memdb native scorer: not in use: {_UNAVAILABLE_REASON} "
            "(unset MEMDB_PURE_PYTHON, or reinstall memdb where gcc and python3-dev are installed)"
        )


_PARAM_FIELDS: Final = ("w_freq", "w_tags", "w_age", "w_feedback", "freq_saturation", "age_half_life_days")


@dataclass(frozen=True)
class ScoreParams:
    """Weights and shape of the relevance formula; validated here so the C code can trust them."""

    w_freq: float = 0.4
    w_tags: float = 0.3
    w_age: float = 0.2
    w_feedback: float = 0.1
    freq_saturation: float = 20.0
    """Access count at which the frequency component reaches 10 (log scale)."""
    age_half_life_days: float = 14.0
    """Days since last access after which the age component halves."""

    @property
    def values(self) -> tuple[float, float, float, float, float, float]:
        """The six parameters in the C function's order (``dataclasses.astuple`` deep-copies,
        which cost more than the scoring itself on a one-episode call)."""
        return (self.w_freq, self.w_tags, self.w_age, self.w_feedback, self.freq_saturation, self.age_half_life_days)

    def __post_init__(self) -> None:
        for name, value in zip(_PARAM_FIELDS, self.values, strict=True):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ConfigError(f"ScoreParams.{name}: must be a finite number, got {value!r}")
        for name in _PARAM_FIELDS[:4]:
            if getattr(self, name) < 0:
                raise ConfigError(f"ScoreParams.{name}: must be >= 0, got {getattr(self, name)!r} (weights are shares of the score)")
        total = math.fsum(self.values[:4])
        if abs(total - 1.0) > 1e-9:
            raise ConfigError(f"ScoreParams weights: must sum to 1, got {total!r} (so the score stays on 0-10)")
        if self.freq_saturation < 1:
            raise ConfigError(f"ScoreParams.freq_saturation: must be >= 1, got {self.freq_saturation!r}")
        if self.age_half_life_days <= 0:
            raise ConfigError(f"ScoreParams.age_half_life_days: must be > 0, got {self.age_half_life_days!r}")


DEFAULT_PARAMS: Final = ScoreParams()

_NAN: Final = math.nan


def _check_lengths(access_counts: Sized, tag_weights: Sized, ages_days: Sized, feedback: Sized) -> int:
    """The four columns describe the same episodes, so their lengths must agree."""
    n = len(access_counts)
    if len(tag_weights) == n and len(ages_days) == n and len(feedback) == n:
        return n
    lengths = {"access_counts": len(access_counts), "tag_weights": len(tag_weights), "ages_days": len(ages_days), "feedback": len(feedback)}
    if len(set(lengths.values())) != 1:
        shown = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise ValidationError(f"score_batch: inputs must have equal lengths, got {shown}")
    return lengths["access_counts"]


def _not_numbers(name: str, exc: Exception) -> ValidationError:
    return ValidationError(f"score input {name}: must hold real numbers ({exc})")


def _feedback_doubles(feedback: Sequence[float | None]) -> Sequence[float]:
    """None becomes NaN, which both implementations read as "no feedback" (component 5).

    One comprehension is cheaper than a separate has_feedback byte array, and cheaper than
    first scanning for None (measured on 1M entries: 17 ms vs 23 ms and 24 ms).
    """
    if isinstance(feedback, array) and feedback.typecode == "d":
        return feedback
    return [_NAN if f is None else f for f in feedback]


def _py_doubles(name: str, values: Sequence[float]) -> array[float]:
    """Convert as C does (PyFloat_AsDouble), so the twin sees the doubles the C path sees."""
    if isinstance(values, array) and values.typecode == "d":
        return values
    try:
        return array("d", values)
    except (TypeError, OverflowError) as exc:
        raise _not_numbers(name, exc) from None


def _c_doubles(name: str, values: Sequence[float]) -> Any:
    """A ``double[]`` for C: ``array('d')`` is shared without a copy; a list or tuple goes
    through ``ffi.new``, which converts 1M floats faster than ``array('d', list)`` (11 vs 15 ms)."""
    try:
        if type(values) is list:  # first: capture's one-episode batches come as lists
            return _ffi.new("double[]", values)
        if isinstance(values, array) and values.typecode == "d":
            return _ffi.from_buffer("double[]", values)
        if isinstance(values, list | tuple):
            return _ffi.new("double[]", values)
        return _ffi.from_buffer("double[]", array("d", values))
    except (TypeError, OverflowError) as exc:
        raise _not_numbers(name, exc) from None


def _k_of(k: int) -> int:
    """Validate k for top_k."""
    try:
        k = operator.index(k)
    except TypeError:
        raise ValidationError(f"top_k: k must be an int, got {k!r}") from None
    if k < 0:
        raise ValidationError(f"top_k: k must be >= 0, got {k}")
    return k


# --- pure-Python twin ------------------------------------------------------------------------


@overload
def py_score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = ...,
    *,
    components: Literal[False] = ...,
) -> list[float]: ...
@overload
def py_score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = ...,
    *,
    components: Literal[True],
) -> tuple[list[float], list[Components]]: ...
@overload
def py_score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = ...,
    *,
    components: bool,
) -> list[float] | tuple[list[float], list[Components]]: ...
def py_score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = DEFAULT_PARAMS,
    *,
    components: bool = False,
) -> list[float] | tuple[list[float], list[Components]]:
    """Pure-Python twin of ``memdb_score_batch``: same expressions, same order, same NaN rules."""
    n = _check_lengths(access_counts, tag_weights, ages_days, feedback)
    counts = _py_doubles("access_counts", access_counts)
    tags = _py_doubles("tag_weights", tag_weights)
    ages = _py_doubles("ages_days", ages_days)
    fbs = _py_doubles("feedback", _feedback_doubles(feedback))
    w_freq, w_tags, w_age, w_feedback, saturation, half_life = params.values
    log_saturation = math.log1p(saturation)
    isnan, log1p, exp2 = math.isnan, math.log1p, math.exp2
    scores: list[float] = [0.0] * n
    comps: list[Components] = []
    for i in range(n):
        count = counts[i]
        if isnan(count) or count < 0.0:
            count = 0.0
        ratio = log1p(count) / log_saturation
        freq = 10.0 * (ratio if ratio < 1.0 else 1.0)

        tag = tags[i]
        tag_c = 10.0 * (0.0 if isnan(tag) or tag < 0.0 else (1.0 if tag > 1.0 else tag))

        age = ages[i]
        if isnan(age):
            age = math.inf
        elif age < 0.0:
            age = 0.0
        recency = 10.0 * exp2(-(age / half_life))

        fb = fbs[i]
        if not isnan(fb):
            fb_c = 5.0 * ((-1.0 if fb < -1.0 else (1.0 if fb > 1.0 else fb)) + 1.0)
        else:
            fb_c = 5.0

        score = w_freq * freq + w_tags * tag_c + w_age * recency + w_feedback * fb_c
        scores[i] = 0.0 if score < 0.0 else (10.0 if score > 10.0 else score)
        if components:
            comps.append((freq, tag_c, recency, fb_c))
    return (scores, comps) if components else scores


def py_top_k(scores: Sequence[float], k: int) -> list[int]:
    """Pure-Python twin of ``memdb_top_k``: highest first, ties by lower index, NaN last."""
    k = _k_of(k)
    values = _py_doubles("scores", scores)
    if not any(map(math.isnan, values)):
        # nlargest is documented equal to sorted(..., reverse=True)[:k], which is stable:
        # equal scores keep index order, as in C.
        return heapq.nlargest(k, range(len(values)), key=values.__getitem__)
    return heapq.nsmallest(k, range(len(values)), key=lambda i: (1, 0.0, i) if math.isnan(values[i]) else (0, -values[i], i))


# --- C path ---------------------------------------------------------------------------------


def _c_score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams,
    components: bool,
) -> list[float] | tuple[list[float], list[Components]]:
    """One C call per batch; per-call cost is the input conversion, not the arithmetic."""
    n = _check_lengths(access_counts, tag_weights, ages_days, feedback)
    if n == 0:
        return ([], []) if components else []
    out = array("d", bytes(8 * n))  # out.tolist() beats ffi.unpack on a double[] (29 vs 35 ms per 1M)
    comp = array("d", bytes(32 * n)) if components else None
    _lib.memdb_score_batch(
        n,
        _c_doubles("access_counts", access_counts),
        _c_doubles("tag_weights", tag_weights),
        _c_doubles("ages_days", ages_days),
        _c_doubles("feedback", _feedback_doubles(feedback)),
        _ffi.from_buffer("unsigned char[]", b"\x01" * n),  # "no feedback" travels as NaN, see _feedback_doubles
        _c_params(params),
        _ffi.from_buffer("double[]", out, require_writable=True),
        _ffi.NULL if comp is None else _ffi.from_buffer("double[]", comp, require_writable=True),
    )
    if comp is None:
        return out.tolist()
    flat = iter(comp.tolist())
    return out.tolist(), list(zip(flat, flat, flat, flat, strict=True))


_last_params: tuple[ScoreParams, Any] | None = None


def _c_params(params: ScoreParams) -> Any:
    """The parameters as C reads them, made again only for another ``ScoreParams`` object
    (frozen; a model keeps one per settings): capture scores one episode a call, where
    ``ffi.new`` of them was a tenth of the call."""
    global _last_params
    last = _last_params
    if last is not None and last[0] is params:
        return last[1]
    c = _ffi.new("double[]", params.values)
    _last_params = (params, c)
    return c


def _c_top_k(scores: Sequence[float], k: int) -> list[int]:
    k = _k_of(k)
    m = min(k, len(scores))
    if m == 0:
        return []
    out = _ffi.new("size_t[]", m)
    written = _lib.memdb_top_k(len(scores), _c_doubles("scores", scores), m, out)
    result: list[int] = _ffi.unpack(out, written)
    return result


# --- public entry points --------------------------------------------------------------------


@overload
def score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = ...,
    *,
    components: Literal[False] = ...,
) -> list[float]: ...
@overload
def score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = ...,
    *,
    components: Literal[True],
) -> tuple[list[float], list[Components]]: ...
@overload
def score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = ...,
    *,
    components: bool,
) -> list[float] | tuple[list[float], list[Components]]: ...
def score_batch(
    access_counts: Sequence[float],
    tag_weights: Sequence[float],
    ages_days: Sequence[float],
    feedback: Sequence[float | None],
    params: ScoreParams = DEFAULT_PARAMS,
    *,
    components: bool = False,
) -> list[float] | tuple[list[float], list[Components]]:
    """Relevance (0-10) of each episode; with ``components=True`` also its four components.

    Inputs are equal-length sequences (an ``array('d')`` is used without copying); a
    ``feedback`` entry of None means no feedback (component 5). Raises ValidationError on
    unequal lengths or non-numeric values.
    """
    if _lib is not None:
        return _c_score_batch(access_counts, tag_weights, ages_days, feedback, params, components)
    return py_score_batch(access_counts, tag_weights, ages_days, feedback, params, components=components)


def score_one(
    access_count: float, tag_weight: float, age_days: float, feedback: float | None, params: ScoreParams = DEFAULT_PARAMS
) -> float:
    """``score_batch`` of one episode, the same double: capture scores one a call, where the
    batch's four arrays cost more than the scoring (7.6 us against 0.5 us by value)."""
    if _lib is None:
        return py_score_batch([access_count], [tag_weight], [age_days], [feedback], params)[0]
    try:  # cffi converts as PyFloat_AsDouble does, like _c_doubles
        return float(_lib.memdb_score_one(access_count, tag_weight, age_days, _NAN if feedback is None else feedback, _c_params(params)))
    except (TypeError, OverflowError) as exc:
        py_score_batch([access_count], [tag_weight], [age_days], [feedback], params)  # names the bad input, as without C
        raise _not_numbers("score_one", exc) from None


def top_k(scores: Sequence[float], k: int) -> list[int]:
    """Indices of the k highest scores, highest first, ties by lower index (NaN ranks last)."""
    return _c_top_k(scores, k) if _lib is not None else py_top_k(scores, k)
