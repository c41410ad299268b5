"""The native relevance scorer against its pure-Python twin, measured in the same run.

One call is what maintenance does with a whole owner: ``top_k(score_batch(...), 100)`` over
1,000,000 random episodes (``MEMDB_BENCH_EPISODES`` changes the count). Sides:

- ``python``: ``py_score_batch`` + ``py_top_k``, inputs as Python lists (the baseline);
- ``c-list``: ``score_batch`` + ``top_k`` on the C path, the same lists (conversion included);
- ``c-array``: the C path fed ``array('d')`` columns, which it uses without copying.

The C sides are skipped with a warning when the extension is not built or MEMDB_PURE_PYTHON
is set; they are never replaced by the twin. Every side must return the same top 100.

Regenerate the results (pytest-benchmark table, then the ratio table)::

    cd /work/main && python -m pytest benchmarks/bench_scorer.py --benchmark-only -p no:cacheprovider \\
        --benchmark-columns=median,ops -q

or without pytest (medians of repeated calls, the ratio table only)::

    cd /work/main && python -m benchmarks.bench_scorer
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import time
import warnings
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from memdb import native

EPISODES = int(os.environ.get("MEMDB_BENCH_EPISODES", "1000000"))
K = 100
SEED = 20260705
SIDES = ("python", "c-list", "c-array")
ROUNDS = {"python": 3, "c-list": 10, "c-array": 20}


@dataclass(frozen=True)
class Batch:
    """Columns of one owner's episodes, as lists and as ``array('d')``."""

    counts: list[int]
    tags: list[float]
    ages: list[float]
    feedback: list[float | None]
    arrays: tuple[array[float], array[float], array[float], array[float]]


def make_batch(n: int, seed: int = SEED) -> Batch:
    """A skewed, realistic mix: most episodes rarely read, a few hot; 70% without feedback."""
    rng = random.Random(seed)
    counts = [int(rng.expovariate(1 / 8)) for _ in range(n)]
    tags = [rng.choice((0.5, 0.5, 0.5, 1.0, 0.2, 0.0)) for _ in range(n)]
    ages = [rng.uniform(0.0, 365.0) for _ in range(n)]
    feedback = [None if rng.random() < 0.7 else rng.uniform(-1.0, 1.0) for _ in range(n)]
    # array('d') cannot hold None; NaN feedback means "none" in both implementations
    fb_array = array("d", [float("nan") if f is None else f for f in feedback])
    return Batch(counts, tags, ages, feedback, (array("d", counts), array("d", tags), array("d", ages), fb_array))


def run_python(b: Batch) -> list[int]:
    return native.py_top_k(native.py_score_batch(b.counts, b.tags, b.ages, b.feedback), K)


def run_c_list(b: Batch) -> list[int]:
    return native.top_k(native.score_batch(b.counts, b.tags, b.ages, b.feedback), K)


def run_c_array(b: Batch) -> list[int]:
    return native.top_k(native.score_batch(*b.arrays), K)


RUNNERS: dict[str, Callable[[Batch], list[int]]] = {"python": run_python, "c-list": run_c_list, "c-array": run_c_array}


def c_missing() -> str | None:
    """Why the C sides cannot run, or None."""
    return None if native.AVAILABLE else f"C scorer not in use ({native.IMPLEMENTATION} twin): C sides skipped"


# --- the ratio table -------------------------------------------------------------------------

RESULTS: dict[str, float] = {}  # side -> median seconds per call


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return "unknown"
    head = out.stdout.strip() or "no commit yet"
    return head + (" (uncommitted changes)" if dirty.stdout.strip() else "")


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cpus, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def format_table(results: dict[str, float], n: int) -> str:
    """Median ms per call, episodes/s, and the speed-up over the pure-Python twin."""
    base = results.get("python")
    head = ("side", "median ms", "episodes/s", "python/side")
    rows = [
        (side, f"{t * 1e3:,.1f}", f"{n / t:,.0f}", f"{base / t:,.1f}x" if base else "-")
        for side in SIDES
        if (t := results.get(side)) is not None
    ]
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    line = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [
        f"score_batch + top_k({K}) over {n:,} episodes; medians",
        f"machine: {_machine()}",
        f"commit:  {_commit()}",
        line.format(*head),
        line.format(*("-" * w for w in widths)),
    ]
    return "\n".join(out + [line.format(*row) for row in rows])


# --- pytest-benchmark ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def batch() -> Batch:
    return make_batch(EPISODES)


@pytest.fixture(scope="module")
def expected(batch: Batch) -> list[int]:
    return run_python(batch)


@pytest.mark.benchmark(group="score+top100")
@pytest.mark.parametrize("side", SIDES)
def test_score_top_k(benchmark: Any, batch: Batch, expected: list[int], side: str) -> None:
    if side != "python" and (why := c_missing()):
        warnings.warn(why, stacklevel=1)
        pytest.skip(why)
    top = benchmark.pedantic(RUNNERS[side], args=(batch,), rounds=ROUNDS[side], warmup_rounds=1 if side != "python" else 0)
    assert top == expected, f"{side}: top {K} differs from the pure-Python twin"
    benchmark.extra_info["episodes"] = EPISODES
    if benchmark.stats:  # None with --benchmark-disable
        RESULTS[side] = benchmark.stats.stats.median


def test_ratio_table(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Print the ratio table; it times nothing, so it reports as skipped (``benchmark`` keeps it under --benchmark-only)."""
    if RESULTS:
        with capsys.disabled():
            print("\n\n" + format_table(RESULTS, EPISODES) + "\n")
    pytest.skip("ratio table printed above" if RESULTS else "no benchmark results to tabulate")


# --- script mode -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scorer", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=EPISODES)
    args = parser.parse_args(argv)
    b = make_batch(args.episodes)
    expected_top = run_python(b)
    results: dict[str, float] = {}
    for side in SIDES:
        if side != "python" and (why := c_missing()):
            print(why)
            continue
        times = []
        for _ in range(ROUNDS[side]):
            t0 = time.perf_counter()
            top = RUNNERS[side](b)
            times.append(time.perf_counter() - t0)
        assert top == expected_top, f"{side}: top {K} differs from the pure-Python twin"
        results[side] = statistics.median(times)
    print(format_table(results, args.episodes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
