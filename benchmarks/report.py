"""Plots of the committed benchmark results: LoCoMo recall by category, agents latency and quality.

    python -m benchmarks.report --results benchmarks/results

Reads ``locomo.json`` (``benchmarks.locomo``) and ``agents.json`` (``benchmarks.agents``) from
``--results``, whichever exist (a missing one is named, and its plots are not drawn), and writes
next to them (or to ``--out``). Further ``agents-*.json`` files (e.g. a separate 1M run,
``--sizes 1000000 --dense-max 0 --json benchmarks/results/agents-1m.json --md ...``) add their
sizes to the agents plots; a size measured in more than one file is taken from the last by name.

- ``locomo_recall.png``: evidence recall@10 per question category and overall, one bar per system;
- ``agents_latency.png``: p50 latency of one limit-10 call against the number of episodes, log-log,
  one line per system (a system that ran at one size only is a single point);
- ``agents_quality.png``: precision@10 (hits / min(10, |truth|)) and recall@10 per question type,
  one bar per system, one row of panels per size. A file written before that definition (its
  precision@10 was hits / results returned) is rescored from its per-question details on load
  (``benchmarks.agents.rescore_precision``). ``memdb-recall`` is labelled with its oracle filters.

Needs matplotlib (the ``bench`` extra); drawn with the Agg backend, so no display is needed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FILES: dict[str, str] = {"locomo": "locomo.json", "agents": "agents.json"}


def load_agents(results: Path) -> dict[str, Any] | None:
    """``agents.json`` with the sizes of every ``agents-*.json`` added (None without agents.json)."""
    first = results / FILES["agents"]
    if not first.exists():
        return None
    from benchmarks.agents import rescore_precision

    rep: dict[str, Any] = json.loads(first.read_text(encoding="utf-8"))
    sizes = dict(rep["sizes"])
    for extra in sorted(results.glob("agents-*.json")):
        sizes.update(json.loads(extra.read_text(encoding="utf-8"))["sizes"])
    for s in sizes.values():
        rescore_precision(s)  # a file from before P@10 = hits / min(10, |truth|)
    rep["sizes"] = dict(sorted(sizes.items(), key=lambda kv: int(kv[0])))
    return rep


def _label(name: str) -> str:
    from benchmarks.agents import label

    return label(name)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colors(names: Sequence[str]) -> dict[str, Any]:
    """One colour per system, the same in every panel."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {name: cmap(i % cmap.N) for i, name in enumerate(dict.fromkeys(names))}


def _grouped_bars(
    ax: Any,
    groups: Sequence[str],
    series: dict[str, list[float | None]],
    ylabel: str,
    colors: dict[str, Any] | None = None,
    label: Any = str,
) -> None:
    """Bars of each series side by side within each group; a missing value leaves a gap."""
    n = max(len(series), 1)
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0.0 for v in values], width, label=label(name), color=(colors or {}).get(name))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=15, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def _legend_on_top(fig: Any, ax: Any, height: float) -> None:
    """One legend for the figure, above the panels, so no bar hides under it."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 5), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.55 / height))


def locomo_recall(rep: dict[str, Any], out: Path) -> Path:
    """``locomo_recall.png``: recall@10 by category (and overall) per system."""
    plt = _pyplot()
    cats = list(rep["categories"])
    groups = [f"{c} {rep['categories'][c]}" for c in cats] + ["overall"]
    series = {name: [s["recall@10"].get(c) for c in [*cats, "overall"]] for name, s in rep["systems"].items()}
    fig, ax = plt.subplots(figsize=(11, 5.2))
    _grouped_bars(ax, groups, series, "evidence recall@10")
    ax.set_title(f"LoCoMo evidence recall@10 by category ({rep['data']['questions']} questions)")
    _legend_on_top(fig, ax, 5.2)
    path = out / "locomo_recall.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def agents_latency(rep: dict[str, Any], out: Path) -> Path:
    """``agents_latency.png``: p50 latency (ms) against size, log-log, one line per system."""
    plt = _pyplot()
    points: dict[str, list[tuple[int, float]]] = {}
    for size, s in rep["sizes"].items():
        for name, r in s["systems"].items():
            points.setdefault(name, []).append((int(size), r["latency_ms"]["p50"]))
    colors = _colors(list(points))
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for name, pts in points.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=_label(name), color=colors[name])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("episodes")
    ax.set_ylabel("p50 latency of one limit-10 call (ms)")
    ax.set_title("Synthetic agent memory: latency")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "agents_latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def agents_quality(rep: dict[str, Any], out: Path) -> Path:
    """``agents_quality.png``: precision@10 and recall@10 per question type per system, a row per size."""
    plt = _pyplot()
    sizes = list(rep["sizes"])
    colors = _colors([name for s in rep["sizes"].values() for name in s["systems"]])
    height = 0.6 + 4.2 * len(sizes)
    fig, axes = plt.subplots(len(sizes), 2, figsize=(13, height), squeeze=False)
    for row, size in enumerate(sizes):
        s = rep["sizes"][size]
        types = [t for t in rep["question_types"] if t in s["questions"]]
        for col, measure in enumerate(("precision@10", "recall@10")):
            series = {name: [r["by_type"].get(t, {}).get(measure) for t in types] for name, r in s["systems"].items()}
            ax = axes[row][col]
            _grouped_bars(ax, types, series, measure, colors, _label)
            ax.set_title(f"{int(size):,} episodes: {measure}", fontsize=10)
    fullest = max((axes[r][0] for r in range(len(sizes))), key=lambda a: len(a.get_legend_handles_labels()[1]))
    _legend_on_top(fig, fullest, height)
    path = out / "agents_quality.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """Draw every plot whose results exist; returns the paths written."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.report", description=(__doc__ or "").split("\n\n")[0])
    here = Path(__file__).resolve().parent / "results"
    p.add_argument("--results", type=Path, default=here, help="folder of locomo.json / agents.json (default benchmarks/results)")
    p.add_argument("--out", type=Path, help="where the PNGs go (default: the results folder)")
    args = p.parse_args(list(argv) if argv is not None else None)
    out = args.out or args.results
    out.mkdir(parents=True, exist_ok=True)
    found: dict[str, dict[str, Any]] = {}
    locomo = args.results / FILES["locomo"]
    if locomo.exists():
        found["locomo"] = json.loads(locomo.read_text(encoding="utf-8"))
    if (agents := load_agents(args.results)) is not None:
        found["agents"] = agents
    for key, name in FILES.items():
        if key not in found:
            print(f"missing {args.results / name}: its plots are not drawn")
    written: list[Path] = []
    if "locomo" in found:
        written.append(locomo_recall(found["locomo"], out))
    if "agents" in found:
        written += [agents_latency(found["agents"], out), agents_quality(found["agents"], out)]
    for path in written:
        print(f"wrote {path}")
    return written


if __name__ == "__main__":
    main()
