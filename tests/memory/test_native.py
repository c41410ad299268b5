"""Native scorer: the C build is importable, matches its pure-Python twin, and implements DESIGN §5.

Tests of the C path skip only when MEMDB_PURE_PYTHON is set (CI's second pass); otherwise a
missing extension fails them, because ``pip install`` is supposed to have built it.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdb import native
from memdb.errors import ConfigError, NativeBuildError, ValidationError
from memdb.native import ScoreParams, py_score_batch, py_top_k, score_batch, top_k

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/memory/)
NAN = math.nan
INF = math.inf
FORCED_REASON = "MEMDB_PURE_PYTHON is set: the C scorer is deliberately not in use"


def require_c() -> None:
    """Skip when the twin is forced; fail (not skip) when the build is simply missing."""
    if native.FORCED_PURE:
        pytest.skip(FORCED_REASON)
    if not native.AVAILABLE:
        pytest.fail(f"native scorer not built: {native._UNAVAILABLE_REASON} (run: pip install -e '.[test]' with gcc and python3-dev)")


ScoreFn = Callable[..., Any]


@pytest.fixture(params=["c", "python"])
def impl(request: pytest.FixtureRequest) -> tuple[ScoreFn, Callable[[Any, int], list[int]]]:
    """Each behavioural test runs against both implementations."""
    if request.param == "c":
        require_c()
        return score_batch, top_k
    return py_score_batch, py_top_k


def one(score: ScoreFn, count: float = 0, tag: float = 0.5, age: float = 0.0, fb: float | None = None, **kw: Any) -> tuple[float, Any]:
    """Score a single episode; returns (score, components)."""
    scores, comps = score([count], [tag], [age], [fb], components=True, **kw)
    return scores[0], comps[0]


# --- build -------------------------------------------------------------------------------------


def test_extension_smoke() -> None:
    """The cffi module imports and its two functions run (like argon2-cffi-bindings' smoke test)."""
    if native.FORCED_PURE:
        pytest.skip(FORCED_REASON)
    try:
        from memdb._scorer import ffi, lib
    except ImportError as exc:
        pytest.fail(f"memdb._scorer is not built ({exc}); pip install -e '.[test]' should compile native/scorer.c")
    assert native.AVAILABLE is True
    assert native.IMPLEMENTATION == "c"
    native.require_native()

    out = ffi.new("double[]", 1)
    params = ffi.new("double[]", [0.4, 0.3, 0.2, 0.1, 20.0, 14.0])
    one_ = ffi.new("double[]", [0.0])
    lib.memdb_score_batch(1, one_, ffi.new("double[]", [0.5]), one_, one_, ffi.new("unsigned char[]", [0]), params, out, ffi.NULL)
    assert out[0] == pytest.approx(4.0)
    idx = ffi.new("size_t[]", 2)
    assert lib.memdb_top_k(3, ffi.new("double[]", [1.0, 3.0, 2.0]), 2, idx) == 2
    assert list(idx) == [1, 2]


def test_implementation_flags_agree() -> None:
    assert native.IMPLEMENTATION == ("c" if native.AVAILABLE else "python")
    if not native.AVAILABLE:
        with pytest.raises(NativeBuildError, match="memdb native scorer: not in use"):
            native.require_native()


def _implementation_in_subprocess(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MEMDB_PURE_PYTHON"}
    if value is not None:
        env["MEMDB_PURE_PYTHON"] = value
    code = "import memdb.native as n; print(n.IMPLEMENTATION, n.AVAILABLE)"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.strip()


@pytest.mark.parametrize("value", ["1", "true", "YES", " yes "])
def test_env_forces_pure_twin(value: str) -> None:
    assert _implementation_in_subprocess(value) == "python False"


def test_env_unset_or_falsy_uses_c() -> None:
    require_c()
    assert _implementation_in_subprocess(None) == "c True"
    assert _implementation_in_subprocess("0") == "c True"


# --- the formula at known points ----------------------------------------------------------------


@pytest.mark.parametrize(("count", "freq"), [(0, 0.0), (20, 10.0), (1000, 10.0), (-5, 0.0), (NAN, 0.0), (INF, 10.0)])
def test_frequency_component(impl: Any, count: float, freq: float) -> None:
    assert one(impl[0], count=count)[1][0] == pytest.approx(freq, abs=1e-12)


def test_frequency_is_logarithmic(impl: Any) -> None:
    # log1p(4)/log1p(20): five accesses already give more than half the component
    assert one(impl[0], count=4)[1][0] == pytest.approx(10 * math.log1p(4) / math.log1p(20), abs=1e-12)


@pytest.mark.parametrize(("tag", "tags"), [(0.5, 5.0), (1.0, 10.0), (0.0, 0.0), (2.0, 10.0), (-1.0, 0.0), (NAN, 0.0)])
def test_tag_component(impl: Any, tag: float, tags: float) -> None:
    assert one(impl[0], tag=tag)[1][1] == pytest.approx(tags, abs=1e-12)


@pytest.mark.parametrize(("age", "recency"), [(0.0, 10.0), (14.0, 5.0), (28.0, 2.5), (-3.0, 10.0), (INF, 0.0), (NAN, 0.0)])
def test_age_component(impl: Any, age: float, recency: float) -> None:
    assert one(impl[0], age=age)[1][2] == pytest.approx(recency, abs=1e-12)


@pytest.mark.parametrize(
    ("fb", "feedback"), [(1.0, 10.0), (-1.0, 0.0), (None, 5.0), (0.0, 5.0), (0.5, 7.5), (3.0, 10.0), (-3.0, 0.0), (NAN, 5.0)]
)
def test_feedback_component(impl: Any, fb: float | None, feedback: float) -> None:
    assert one(impl[0], fb=fb)[1][3] == pytest.approx(feedback, abs=1e-12)


def test_default_neutral_episode(impl: Any) -> None:
    """New episode, default tag weight, no feedback: 0.4*0 + 0.3*5 + 0.2*10 + 0.1*5 = 4.0."""
    score, comps = one(impl[0])
    assert comps == pytest.approx((0.0, 5.0, 10.0, 5.0))
    assert score == pytest.approx(4.0, abs=1e-12)


def test_best_and_worst_are_clamped_to_scale(impl: Any) -> None:
    best, _ = one(impl[0], count=1e9, tag=1.0, age=0.0, fb=1.0)
    worst, _ = one(impl[0], count=0, tag=0.0, age=INF, fb=-1.0)
    assert 0.0 <= worst <= best <= 10.0
    assert best == pytest.approx(10.0, abs=1e-12)
    assert worst == 0.0


def test_custom_params(impl: Any) -> None:
    params = ScoreParams(w_freq=0.0, w_tags=0.0, w_age=1.0, w_feedback=0.0, freq_saturation=1.0, age_half_life_days=1.0)
    score, comps = one(impl[0], count=1, age=1.0, params=params)
    assert comps[0] == pytest.approx(10.0)
    assert score == pytest.approx(5.0, abs=1e-12)


def test_scores_without_components_and_empty_batch(impl: Any) -> None:
    score = impl[0]
    assert score([], [], [], []) == []
    assert score([], [], [], [], components=True) == ([], [])
    assert score([0, 20], [0.5, 1.0], [0, 14], [None, 1.0]) == pytest.approx([4.0, 0.4 * 10 + 0.3 * 10 + 0.2 * 5 + 0.1 * 10])


def test_array_inputs_are_accepted(impl: Any) -> None:
    d = array("d", [0.0, 20.0])
    assert impl[0](d, array("d", [0.5, 0.5]), array("d", [0.0, 0.0]), array("d", [0.0, 1.0])) == impl[0](
        [0, 20], [0.5, 0.5], [0, 0], [0.0, 1.0]
    )


def test_unequal_lengths_name_them(impl: Any) -> None:
    with pytest.raises(ValidationError, match=r"access_counts=2, tag_weights=1, ages_days=2, feedback=2"):
        impl[0]([0, 1], [0.5], [0, 0], [None, None])


def test_non_numeric_input_names_the_field(impl: Any) -> None:
    with pytest.raises(ValidationError, match="ages_days"):
        impl[0]([0], [0.5], ["yesterday"], [None])


# --- top_k -------------------------------------------------------------------------------------


def test_top_k_order_and_ties(impl: Any) -> None:
    top = impl[1]
    scores = [1.0, 3.0, 2.0, 3.0, NAN, -INF, 2.0]
    assert top(scores, 3) == [1, 3, 2]
    assert top(scores, 100) == [1, 3, 2, 6, 0, 5, 4]
    assert top(scores, 0) == []
    assert top([], 5) == []
    assert top([0.0, -0.0, 0.0], 3) == [0, 1, 2]  # -0.0 == 0.0: a tie, broken by index


@pytest.mark.parametrize("k", [-1, 1.5, "3"])
def test_top_k_rejects_bad_k(impl: Any, k: Any) -> None:
    with pytest.raises(ValidationError, match="top_k: k must be"):
        impl[1]([1.0], k)


# --- params ------------------------------------------------------------------------------------


def test_default_params_match_design() -> None:
    assert ScoreParams() == ScoreParams(0.4, 0.3, 0.2, 0.1, 20.0, 14.0)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"w_freq": -0.1, "w_tags": 0.8}, r"ScoreParams\.w_freq: must be >= 0, got -0\.1"),
        ({"w_freq": 0.5}, r"ScoreParams weights: must sum to 1, got 1\.1"),
        ({"freq_saturation": 0.5}, r"ScoreParams\.freq_saturation: must be >= 1, got 0\.5"),
        ({"age_half_life_days": 0}, r"ScoreParams\.age_half_life_days: must be > 0, got 0"),
        ({"age_half_life_days": NAN}, r"ScoreParams\.age_half_life_days: must be a finite number, got nan"),
        ({"w_age": "0.2"}, r"ScoreParams\.w_age: must be a finite number, got '0\.2'"),
        ({"freq_saturation": True}, r"ScoreParams\.freq_saturation: must be a finite number, got True"),
    ],
)
def test_params_validation(kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        ScoreParams(**kwargs)


def test_weights_sum_tolerance() -> None:
    ScoreParams(w_freq=0.4 + 5e-10)  # within 1e-9 of 1 is accepted
    with pytest.raises(ConfigError):
        ScoreParams(w_freq=0.4 + 5e-9)


# --- C against the twin --------------------------------------------------------------------------

counts = st.one_of(
    st.integers(min_value=0, max_value=10**6), st.floats(min_value=-5, max_value=1e7), st.sampled_from([0, 1, 19, 20, 21, NAN, INF])
)
unit_ish = st.one_of(st.floats(min_value=-0.5, max_value=1.5), st.sampled_from([0.0, 0.5, 1.0, NAN]))
ages = st.one_of(st.floats(min_value=-10, max_value=1e5), st.sampled_from([0.0, 14.0, NAN, INF]))
feedbacks = st.one_of(st.none(), st.floats(min_value=-2, max_value=2), st.sampled_from([-1.0, 0.0, 1.0, NAN]))
episodes = st.lists(st.tuples(counts, unit_ish, ages, feedbacks), max_size=200)


@st.composite
def score_params(draw: st.DrawFn) -> ScoreParams:
    raw = draw(st.lists(st.floats(min_value=0, max_value=1), min_size=4, max_size=4).filter(lambda w: sum(w) > 0.01))
    w_freq, w_tags, w_age, w_feedback = (w / sum(raw) for w in raw)
    return ScoreParams(
        w_freq,
        w_tags,
        w_age,
        w_feedback,
        freq_saturation=draw(st.floats(min_value=1, max_value=1e4)),
        age_half_life_days=draw(st.floats(min_value=1e-3, max_value=1e4)),
    )


@settings(max_examples=300, deadline=None)
@given(batch=episodes, params=score_params())
def test_c_matches_twin(batch: list[tuple[float, float, float, float | None]], params: ScoreParams) -> None:
    require_c()
    cnt, tag, age, fb = [e[0] for e in batch], [e[1] for e in batch], [e[2] for e in batch], [e[3] for e in batch]
    c_scores, c_comps = score_batch(cnt, tag, age, fb, params, components=True)
    p_scores, p_comps = py_score_batch(cnt, tag, age, fb, params, components=True)
    assert len(c_scores) == len(p_scores) == len(batch)
    for cs, ps, cc, pc in zip(c_scores, p_scores, c_comps, p_comps, strict=True):
        assert 0.0 <= cs <= 10.0
        assert abs(cs - ps) <= 1e-9
        assert all(abs(a - b) <= 1e-9 for a, b in zip(cc, pc, strict=True))
    assert score_batch(cnt, tag, age, fb, params) == c_scores
    for k in (0, 1, 10, len(batch)):
        assert top_k(c_scores, k) == py_top_k(c_scores, k)


@settings(max_examples=300, deadline=None)
@given(batch=episodes, params=score_params())
def test_score_one_is_the_batch_score_exactly(batch: list[tuple[float, float, float, float | None]], params: ScoreParams) -> None:
    # capture stores the one score's kept_relevance: the very double the batch gives, on both paths
    cnt, tag, age, fb = [e[0] for e in batch], [e[1] for e in batch], [e[2] for e in batch], [e[3] for e in batch]
    expected = py_score_batch(cnt, tag, age, fb, params)
    assert [native.score_one(*e, params) for e in batch] == expected
    if native.AVAILABLE:
        assert score_batch(cnt, tag, age, fb, params) == expected


@pytest.mark.parametrize(
    ("args", "named"),
    [(("3", 0.5, 0.0, None), "access_counts"), ((1.0, 0.5, 1.0, 10**400), "feedback"), ((1.0, 0.5, [1.0], None), "ages_days")],
)
def test_score_one_names_a_non_number(args: tuple[Any, ...], named: str) -> None:
    """C or twin, the error names the input as the batch's does (C's said "score_one", revO)."""
    with pytest.raises(ValidationError, match=f"score input {named}: must hold real numbers"):
        native.score_one(*args)


tie_heavy = st.lists(st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.5, 10.0, NAN, INF, -INF]), st.floats(allow_nan=True)), max_size=300)


@settings(max_examples=300, deadline=None)
@given(scores=tie_heavy, k=st.integers(min_value=0, max_value=320))
def test_top_k_c_matches_twin_and_reference(scores: list[float], k: int) -> None:
    require_c()
    reference = sorted(range(len(scores)), key=lambda i: (1, 0.0, i) if math.isnan(scores[i]) else (0, -scores[i], i))[:k]
    assert py_top_k(scores, k) == reference
    assert top_k(scores, k) == reference


@settings(max_examples=100, deadline=None)
@given(scores=tie_heavy, k=st.integers(min_value=0, max_value=320))
def test_public_top_k_is_the_chosen_implementation(scores: list[float], k: int) -> None:
    assert top_k(scores, k) == py_top_k(scores, k)


def test_public_score_batch_matches_twin() -> None:
    cols = ([0, 3, 20, 500], [0.5, 1.0, 0.0, 0.2], [0.0, 3.5, 40.0, 1.0], [None, 0.2, -1.0, None])
    assert score_batch(*cols, components=True) == py_score_batch(*cols, components=True)
