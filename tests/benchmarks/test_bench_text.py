"""The text benchmark on 300 episodes: every side finds the matches a brute-force scan finds, and the table says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import bench_query, bench_text

SIZE = 300
DRAWS = 40


def _quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[bench_query.Dataset]:
    ds = bench_query.load(SIZE, tmp_path_factory.mktemp("bench-text"), log=_quiet)
    yield ds
    ds.close()


def _sides() -> list[str]:
    return [s for s in bench_text.SIDES if bench_text.have(s)]  # a baseline that does not import is skipped, never faked


def _run(ds: bench_query.Dataset, logged: list[str] | None = None) -> bench_text.Run:
    sides = _sides()
    b = bench_text.load_baselines(ds, [s for s in sides if s in bench_text.BASELINES], log=logged.append if logged is not None else _quiet)
    try:
        return bench_text.measure(ds, b, sides, ds.draws["text"][:DRAWS], ds.warmups["text"][:5], log=_quiet)
    finally:
        b.close()


def test_every_side_counts_the_matches_of_a_brute_force_scan(dataset: bench_query.Dataset) -> None:
    assert "memdb" in _sides() and "sqlite-fts5" in _sides()
    stored = [set(bench_text.terms_of(e)) for e in dataset.team.episodes()]
    assert len(stored) == SIZE
    draws = dataset.draws["text"][:DRAWS]
    truth = [sum(1 for terms in stored if terms & set(bench_text.query_terms(d.text or ""))) for d in draws]
    assert max(truth) > bench_text.LIMIT and len(set(truth)) > 5  # more than a page, and not one number for all
    run = _run(dataset)
    assert set(run.results) == set(_sides())
    for side, result in run.results.items():
        assert result.totals == truth, side
        assert len(result.latencies_ns) == len(result.cpu_ns) == DRAWS and min(result.latencies_ns) > 0
        assert sum(result.cpu_ns) <= sum(result.latencies_ns) * 1.05, side  # one thread's CPU time fits in the wall time
    assert all(not bad for bad in run.disagreements().values())


def test_rounds_keep_each_sides_best_and_the_same_totals(dataset: bench_query.Dataset) -> None:
    b = bench_text.load_baselines(dataset, ["sqlite-fts5"], log=_quiet)
    logged: list[str] = []
    try:
        run = bench_text.measure(dataset, b, ["memdb", "sqlite-fts5"], dataset.draws["text"][:10], [], log=logged.append, rounds=3)
    finally:
        b.close()
    assert len(logged) == 6 and run.rounds == 3
    for side in ("memdb", "sqlite-fts5"):
        p50s = [float(line.split("p50 ")[1].split(" ms")[0]) for line in logged if f" {side} round" in line]
        assert run.results[side].pct(0.5) == pytest.approx(min(p50s), abs=5e-4)
    assert "the best of 3 round(s) by p50" in bench_text.format_table([run], draws=10)


def test_the_indexes_are_reused_and_answer_the_same(dataset: bench_query.Dataset) -> None:
    first = _run(dataset)
    logged: list[str] = []
    again = _run(dataset, logged)
    assert any(line.startswith("reusing") for line in logged), logged
    assert {s: r.totals for s, r in again.results.items()} == {s: r.totals for s, r in first.results.items()}
    assert again.baselines["cached"] is True


def test_the_table_names_each_side_its_agreement_and_the_targets(dataset: bench_query.Dataset, tmp_path: Path) -> None:
    run = _run(dataset)
    table = bench_text.format_table([run], draws=DRAWS)
    rows = [line for line in table.splitlines() if line.startswith("| 300 |")]
    assert [r.split(" | ")[1] for r in rows] == _sides()
    for row in rows[1:]:
        assert row.endswith(f"| {DRAWS}/{DRAWS} |"), row  # every baseline agrees with memdb on every draw
    assert "memdb/sqlite-fts5 at p50 = " in table and "target at most 0.2x" in table
    assert ("memdb/tantivy at p50 = " in table) == ("tantivy" in _sides())
    cpu = {r.split(" | ")[1]: r.split(" | ")[6] for r in rows}  # the CPU time of each side, a number of ms
    assert all(float(v) > 0 for v in cpu.values()), cpu
    assert "machine: " in table and "SQLite " in table and "commit: " in table and "load average (1 min) " in table
    out = tmp_path / "text.md"
    bench_text.write_md(table, [SIZE], out)
    md = out.read_text()
    assert md.startswith("# Text top-10") and "python -m benchmarks.bench_text --sizes 300" in md and table in md


def test_a_disagreement_is_reported_per_draw(dataset: bench_query.Dataset) -> None:
    run = _run(dataset)
    mem = run.results["memdb"]
    run.results["sqlite-fts5"] = bench_text.Timed(mem.latencies_ns, [mem.totals[0] + 1, *mem.totals[1:]], mem.cpu_ns)
    assert run.disagreements()["sqlite-fts5"] == [(0, mem.totals[0], mem.totals[0] + 1)]
    row = next(r for r in bench_text.format_table([run], draws=DRAWS).splitlines() if "| sqlite-fts5 |" in r)
    assert row.endswith(f"| {DRAWS - 1}/{DRAWS} |")
