"""The benchmark plots: drawn from real-shaped results, valid PNGs, and a missing result is named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import agents, report

pytest.importorskip("matplotlib")

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"  # the repository's, this file is in tests/benchmarks/
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path: Path) -> bool:
    data = path.read_bytes()
    return len(data) > 1_000 and data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"


def _tiny_agents(results: Path) -> None:
    """A real agents report at 200 and 300 episodes, memdb and bm25 only (no model to load)."""
    pytest.importorskip("bm25s")
    agents.main(
        ["--sizes", "200,300", "--dense-max", "0", "--queries", "2", "--json", str(results / "agents.json"), "--md", str(results / "x.md")]
    )


def test_report_draws_every_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(RESULTS / "locomo.json", tmp_path / "locomo.json")  # the committed LoCoMo results
    _tiny_agents(tmp_path)
    out = tmp_path / "png"
    written = report.main(["--results", str(tmp_path), "--out", str(out)])
    assert [p.name for p in written] == ["locomo_recall.png", "agents_latency.png", "agents_quality.png"]
    for p in written:
        assert p.parent == out and _is_png(p), p
    assert "missing" not in capsys.readouterr().out


def test_report_names_a_missing_result_and_draws_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _tiny_agents(tmp_path)
    capsys.readouterr()
    written = report.main(["--results", str(tmp_path)])
    assert [p.name for p in written] == ["agents_latency.png", "agents_quality.png"]
    assert all(_is_png(p) for p in written)
    assert not (tmp_path / "locomo_recall.png").exists()
    assert f"missing {tmp_path / 'locomo.json'}" in capsys.readouterr().out


def test_agents_runs_in_separate_files_are_plotted_together(tmp_path: Path) -> None:
    def fake(sizes: list[str]) -> dict[str, object]:
        return {"sizes": {n: {"systems": {}, "questions": {}, "from": sizes} for n in sizes}, "question_types": {}}

    (tmp_path / "agents.json").write_text(json.dumps(fake(["10000", "100000"])))
    (tmp_path / "agents-1m.json").write_text(json.dumps(fake(["1000000", "100000"])))
    rep = report.load_agents(tmp_path)
    assert rep is not None and list(rep["sizes"]) == ["10000", "100000", "1000000"]  # in numeric order
    assert rep["sizes"]["100000"]["from"] == ["1000000", "100000"]  # the later file wins
    assert report.load_agents(tmp_path / "nowhere") is None


def test_report_with_nothing_to_draw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["--results", str(tmp_path)]) == []
    printed = capsys.readouterr().out
    assert "missing" in printed and "locomo.json" in printed and "agents.json" in printed


def test_locomo_plot_from_a_fabricated_report(tmp_path: Path) -> None:
    real = json.loads((RESULTS / "locomo.json").read_text())
    # two systems, one without a category: the plot leaves a gap instead of failing
    systems = {"memdb": real["systems"]["memdb"], "bm25": {**real["systems"]["bm25"]}}
    systems["bm25"]["recall@10"] = {k: v for k, v in systems["bm25"]["recall@10"].items() if k != "3"}
    path = report.locomo_recall({**real, "systems": systems}, tmp_path)
    assert _is_png(path)
