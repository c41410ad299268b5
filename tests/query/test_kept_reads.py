"""What a query keeps of an owner's documents between calls (``TextIndex.memo``: posting lists,
document frequencies, statistics, tags) is never stale: after any write, an answer's matches and
BM25 scores equal those of a database holding the same episodes that never answered before."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from query_times import NOW, at

import memdb

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)

_BM25 = re.compile(r"\(bm25 ([0-9.]+)\)")


def answer(result: Any) -> tuple[int, list[tuple[str, str]]]:
    """An answer as its total and (summary, BM25) of each memory: BM25 follows the document
    frequencies and lengths alone, not the reads that change relevance."""
    found = []
    for m in result:
        bm25 = next((b.group(1) for w in m.why if (b := _BM25.search(w))), "")
        found.append((m.episode.summary, bm25))
    return result.total, sorted(found)


def fresh(path: Path, episodes: list[tuple[str, list[str], int]], question: str, asked: bool) -> tuple[int, list[tuple[str, str]]]:
    """The answer of a new database holding ``episodes`` (summary, tags, day)."""
    db = memdb.open(path, clock=lambda: NOW)
    try:
        mem = db.owner("ana")
        for summary, tags, day in episodes:
            mem.record("exchange", summary, tags=tags, ts=at(day))
        return answer(mem.ask(question, limit=20) if asked else mem.recall(text=question, limit=20))
    finally:
        db.close()


def test_new_records_change_the_kept_counts_and_lists(tmp_path: Path) -> None:
    db = memdb.open(tmp_path / "live", clock=lambda: NOW)
    mem = db.owner("ana")
    episodes = [("alpha deploy went fine", ["ops"], 20)]
    mem.record("exchange", episodes[0][0], tags=["ops"], ts=at(20))
    assert mem.recall(text="alpha deploy", limit=20).total == 1  # its lists and counts are kept now
    for summary, day in (("alpha rollback needed", 21), ("beta deploy slow deploy", 22)):
        mem.record("exchange", summary, tags=["ops"], ts=at(day))
        episodes.append((summary, ["ops"], day))
    live = answer(mem.recall(text="alpha deploy", limit=20))
    db.close()
    assert live[0] == 3
    assert live == fresh(tmp_path / "fresh", episodes, "alpha deploy", asked=False)


def test_a_word_recorded_after_a_question_is_no_longer_unmatched(tmp_path: Path) -> None:
    db = memdb.open(tmp_path / "live", clock=lambda: NOW)
    mem = db.owner("ana")
    mem.record("exchange", "the deploy went fine", ts=at(20))
    first = mem.ask("what about the zebra deploy?")
    assert "zebra" in first.interpretation.unmatched  # a frequency of 0 is kept now
    mem.record("exchange", "a zebra crossed the deploy", ts=at(21))
    again = mem.ask("what about the zebra deploy?")
    db.close()
    assert again.interpretation.unmatched == ()
    assert "a zebra crossed the deploy" in [m.episode.summary for m in again]


def test_a_rolled_back_write_leaves_nothing_kept(tmp_path: Path) -> None:
    db = memdb.open(tmp_path / "live", clock=lambda: NOW)
    mem = db.owner("ana")
    mem.record("exchange", "gamma ray deploy", ts=at(20))
    before = answer(mem.recall(text="gamma deploy", limit=20))
    with pytest.raises(RuntimeError), db.transaction():
        mem.record("exchange", "gamma gamma burst", ts=at(21))
        inside = mem.recall(text="gamma deploy", limit=20)
        assert inside.total == 2  # the transaction's own write is searched, counts and all
        raise RuntimeError("roll back")
    after = answer(mem.recall(text="gamma deploy", limit=20))
    db.close()
    assert after == before


def test_deletes_and_archives_change_the_kept_counts(tmp_path: Path) -> None:
    db = memdb.open(tmp_path / "live", clock=lambda: NOW)
    mem = db.owner("ana")
    ids = [mem.record("exchange", s, ts=at(d)).id for s, d in (("omega lake trip", 20), ("omega omega lake", 21), ("lake house", 22))]
    mem.ask("what about omega lake?")
    mem.delete(ids[0], reason="test")
    mem.archive(ids[2])
    live = answer(mem.ask("what about omega lake?", limit=20))
    db.close()
    assert live == fresh(tmp_path / "fresh", [("omega omega lake", [], 21)], "what about omega lake?", asked=True)


_WORDS = ["alpha", "beta", "gamma", "delta", "lake", "trip"]
_op = st.one_of(
    st.tuples(st.just("record"), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4), st.sampled_from([[], ["ops"], ["beta"]])),
    st.tuples(st.just("delete"), st.integers(0, 20), st.just([])),
    st.tuples(st.just("ask"), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3), st.just([])),
    st.tuples(st.just("recall"), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3), st.just([])),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_op, min_size=1, max_size=12))
def test_every_answer_equals_a_fresh_databases(tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, Any, list[str]]]) -> None:
    base = tmp_path_factory.mktemp("kept")
    db = memdb.open(base / "live", clock=lambda: NOW)
    mem = db.owner("ana")
    held: list[tuple[str, str, list[str], int]] = []  # id, summary, tags, day
    checks: list[tuple[str, bool, list[tuple[str, list[str], int]], tuple[int, list[tuple[str, str]]]]] = []
    try:
        for i, (op, arg, tags) in enumerate(ops):
            if op == "record":
                summary, day = f"{' '.join(arg)} n{i}", 1 + i
                held.append((mem.record("exchange", summary, tags=tags, ts=at(day)).id, summary, tags, day))
            elif op == "delete" and held:
                eid = held.pop(arg % len(held))[0]
                mem.delete(eid, reason="test")
            elif op in ("ask", "recall"):
                question = " ".join(arg)
                got = mem.ask(question, limit=20) if op == "ask" else mem.recall(text=question, limit=20)
                checks.append((question, op == "ask", [(s, t, d) for _, s, t, d in held], answer(got)))
    finally:
        db.close()
    for n, (question, asked, episodes, live) in enumerate(checks):
        assert live == fresh(base / f"fresh{n}", episodes, question, asked), question


def test_a_transaction_that_searches_its_own_writes_keeps_nothing(tmp_path: Path) -> None:
    """Inside a transaction the counters capture defers are not applied yet: what a query there
    reads is not kept, or the committed answer would use the counts from before the writes."""
    db = memdb.open(tmp_path / "live", clock=lambda: NOW)
    mem = db.owner("ana")
    mem.record("exchange", "gamma ray deploy", ts=at(20))
    with db.transaction():
        mem.record("exchange", "gamma gamma burst", ts=at(21))
        for _ in range(2):  # the second reads its counts after the first wrote what was staged
            mem.recall(text="gamma burst deploy", limit=20)
    live = answer(mem.recall(text="gamma burst deploy", limit=20))
    db.close()
    both = [("gamma ray deploy", [], 20), ("gamma gamma burst", [], 21)]
    assert live == fresh(tmp_path / "fresh", both, "gamma burst deploy", asked=False)


@pytest.mark.parametrize("others", [0, 80])  # tags listed at once, or looked up phrase by phrase
def test_a_tag_used_after_a_question_is_known_to_the_next(tmp_path: Path, others: int) -> None:
    db = memdb.open(tmp_path / "live", clock=lambda: NOW)
    mem = db.owner("ana")
    for i in range(0, others, 20):  # (at most 32 tags an episode)
        mem.record("exchange", f"lunch {i}", tags=[f"t{j:03d}" for j in range(i, i + 20)], ts=at(19))
    mem.record("exchange", "lunch with the team", ts=at(20))
    assert mem.ask("what happened with project zeta?").interpretation.tags == ()
    mem.record("exchange", "kickoff meeting", tags=["project-zeta"], ts=at(21))
    again = mem.ask("what happened with project zeta?")
    db.close()
    assert again.interpretation.tags == ("project-zeta",)
    assert [m.episode.summary for m in again] == ["kickoff meeting"]
