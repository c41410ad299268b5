"""What a memdb LoCoMo question costs after what comes between two questions.

    python -m benchmarks.locomo_between --data ../shared/data/locomo --rounds 3

``benchmarks.locomo`` writes the accesses each answer counted after it (``System.settle``), so every
timed question follows a write. This script asks every conversation's questions of memdb's rows
(``memdb``: ``recall`` with time phrases, ``memdb-ask``: ``ask``) with one of three things between
two questions, and reports each question's wall time (p50, p95) per mode:

- ``back-to-back``: nothing (accesses are buffered, written when memdb's own rule says);
- ``write``: the accesses written (``db.flush()``), as ``benchmarks.locomo`` does;
- ``pause``: a 2 ms sleep and no write, as an agent that asks now and then.

Modes run in turn, in a rotated order each round, every run in a fresh database; the table gives
each mode's median over the rounds. If ``pause`` costs about what ``write`` costs, a question after
a write pays for the CPU gone cold (caches, other processes), not for memdb's caches read again.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.locomo import MEMDB_VARIANTS, Conversation, MemdbSystem, load_data, percentile

MODES = ("back-to-back", "write", "pause")
PAUSE_S = 0.002


def run_mode(conversations: Sequence[Conversation], variant: str, mode: str, workdir: Path, k: int = 25) -> list[float]:
    """Each question's wall time (ms) of ``variant`` over every conversation, with ``mode`` between
    two questions; a fresh database per conversation, indexed and warmed as ``benchmarks.locomo`` does."""
    between: Callable[[MemdbSystem], object] = {
        "back-to-back": lambda s: None,
        "write": MemdbSystem.settle,
        "pause": lambda s: time.sleep(PAUSE_S),
    }[mode]
    times: list[float] = []
    for i, conv in enumerate(conversations):
        system = MemdbSystem(workdir / f"{variant}-{mode}-{i}", MEMDB_VARIANTS[variant])
        try:
            system.index(conv)
            system.search(conv.questions[0].question if conv.questions else "warm up", k)
            system.settle()
            for q in conv.questions:
                t0 = time.perf_counter_ns()
                system.search(q.question, k)
                times.append((time.perf_counter_ns() - t0) / 1e6)
                between(system)
        finally:
            system.close()
    return times


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, tuple[float, float]]]:
    """Run every mode for each row ``--rounds`` times; print and return the medians (p50, p95) in ms."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.locomo_between", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data", required=True, type=Path, help="a folder of LoCoMo conversation .json files, or one file")
    p.add_argument("--rounds", type=int, default=3, help="runs of every mode (default 3)")
    p.add_argument("--systems", default="memdb,memdb-ask", help="memdb rows, comma-separated (default memdb,memdb-ask)")
    args = p.parse_args(list(argv) if argv is not None else None)
    rows = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = set(rows) - set(MEMDB_VARIANTS)
    if unknown:
        raise SystemExit(f"unknown memdb rows: {', '.join(sorted(unknown))} (of {', '.join(MEMDB_VARIANTS)})")
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: at least 1")
    conversations = load_data(args.data)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {(r, m): [] for r in rows for m in MODES}
    with tempfile.TemporaryDirectory(prefix="memdb-locomo-between-") as tmp:
        for n in range(args.rounds):
            order = MODES[n % len(MODES) :] + MODES[: n % len(MODES)]
            for row in rows:
                for mode in order:
                    times = run_mode(conversations, row, mode, Path(tmp) / f"r{n}")
                    runs[(row, mode)].append((statistics.median(times), percentile(times, 95)))
    out: dict[str, dict[str, tuple[float, float]]] = {}
    print(f"{'row':<10} {'between':<13} {'p50 ms':>8} {'p95 ms':>8}  (medians of {args.rounds} rounds; p50s of each round)")
    for (row, mode), got in runs.items():
        p50, p95 = statistics.median(g[0] for g in got), statistics.median(g[1] for g in got)
        out.setdefault(row, {})[mode] = (p50, p95)
        print(f"{row:<10} {mode:<13} {p50:8.3f} {p95:8.3f}  ({', '.join(f'{g[0]:.3f}' for g in got)})")
    return out


if __name__ == "__main__":
    main()
