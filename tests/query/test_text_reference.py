"""Text search against a brute-force reference: random corpora for two owners, changed by
erasures, deletes, archives, restores, corrected versions, tool results and feedback, then
every text query shape (words alone, with a window, an outcome, a tag or a kind) compared
with the documented score computed the plain way from the records and headers: the same
top k, the same scores and the same totals; ``check()`` verifies blocks and columns after
every change. On both backends.

The reference counts terms from the records' text itself, not through the index's
``terms_of``: a word in an exchange's context (its ``content``) counts two thirds of one in
the episode's own text (BM25F field weighting, ``memdb.memory.layout.CONTEXT_TF``)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdb
from memdb.memory.ids import ts_micros
from memdb.memory.layout import SUPERSEDED, TEXT_FIELDS
from memdb.memory.text import term_counts, tokenize

pytestmark = pytest.mark.usefixtures("backend")

NOW = dt.datetime(2026, 7, 1, 12, tzinfo=dt.UTC)
WORDS = ["deploy", "rollback", "quota", "parser", "billing", "cache", "timeout", "schema"]
K1, B = 1.2, 0.75
CONTEXT_WEIGHT = 2 / 3  # what a word of an exchange's context counts against one of its own text
NAME = "cache"  # a word that is also a tag: where a hot memory carries the tag, recall weighs it NAME_WEIGHT times
NAME_WEIGHT = 2.0

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
episodes = st.lists(
    st.tuples(
        st.sampled_from(["ana", "bo"]),
        texts,
        st.one_of(st.just(""), texts),  # content: an exchange's context, a typed episode's details
        st.integers(0, 50 * 24),  # hours before NOW
        st.sampled_from([("debug", "failure"), ("debug", "success"), ("sprint", "partial"), ("exchange", None)]),
        st.lists(st.sampled_from(["x", "y", NAME]), max_size=2, unique=True),
    ),
    min_size=3,
    max_size=30,
)
changes = st.lists(
    st.tuples(st.sampled_from(["erase", "delete", "archive", "restore", "supersede", "feedback", "result"]), st.integers(0, 29), texts),
    max_size=8,
)
queries = st.lists(
    st.tuples(
        st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=3, unique=True),
        st.sampled_from([{}, {"outcome": "failure"}, {"tags": ["x"]}, {"kind": "debug"}, {"since": NOW - dt.timedelta(days=20)}]),
        st.sampled_from([1, 3, 10]),
    ),
    min_size=1,
    max_size=4,
)


def weighted_terms(record: dict[str, Any]) -> tuple[dict[str, float], float]:
    """A record's term frequencies and length as BM25F counts them: one for each occurrence in
    its text fields and tags, ``CONTEXT_WEIGHT`` for one in an exchange's content."""
    tf: dict[str, float] = {}
    for f in (*TEXT_FIELDS, "tags"):
        value = " ".join(record.get("tags") or ()) if f == "tags" else record.get(f)
        weight = CONTEXT_WEIGHT if f == "content" and record["kind"] == "exchange" else 1.0
        for t, n in term_counts(str(value or "")).items():
            tf[t] = tf.get(t, 0.0) + weight * n
    return tf, sum(tf.values())


def hot_docs(db: memdb.Database, owner: str, terms: list[str]) -> tuple[list[Any], dict[str, float], float]:
    """The owner's hot episodes as (id, header, record, tf, dl), and BM25's idf of ``terms`` and
    average length over them, computed from the records alone."""
    lay = db.episodes.layout
    docs = []
    with db.globals.snapshot():
        for subs, state in lay.states.items((owner,)):
            if state.get("status") in ("archived", SUPERSEDED):
                continue
            record = lay.record_of(owner, str(subs[1]))
            tf, dl = weighted_terms(record)
            docs.append((str(subs[1]), state, record, tf, dl))
    with_text = [d for d in docs if d[4]]
    n = max(len(with_text), 1)
    avgdl = max(sum(d[4] for d in with_text), 1) / n
    idf = {t: math.log(1 + (n - (df := sum(1 for d in docs if t in d[3])) + 0.5) / (df + 0.5)) for t in terms}
    return docs, idf, avgdl


def reference(db: memdb.Database, owner: str, words: list[str], filters: dict[str, Any], now: dt.datetime) -> list[tuple[str, float]]:
    """Every hot match of the owner with its documented score, best first:
    ``0.9 * bm25 / best + 0.05 * relevance / 10 + 0.05 * 0.5 ** (age_days / 7)``, BM25 over the
    owner's hot episodes (k1 1.2, b 0.75), computed here from the records alone; a word that
    is the tag of a hot episode of the owner weighs ``NAME_WEIGHT`` times its idf."""
    terms = list(dict.fromkeys(t for w in words for t in tokenize(w)))
    docs, idf, avgdl = hot_docs(db, owner, terms)
    if NAME in words and any(NAME in state["tags"] for _, state, _, _, _ in docs):  # a name of the owner's tags
        for t in tokenize(NAME):
            idf[t] *= NAME_WEIGHT
    matched = []
    for eid, state, record, tf, dl in docs:
        if not any(t in tf for t in terms):
            continue
        if "outcome" in filters and record.get("outcome") != filters["outcome"]:
            continue
        if "kind" in filters and record["kind"] != filters["kind"]:
            continue
        if "tags" in filters and not set(filters["tags"]) <= set(record["tags"]):
            continue
        if "since" in filters and record["ts"] < filters["since"]:
            continue
        bm25 = sum(idf[t] * tf[t] * (K1 + 1) / (tf[t] + K1 * (1 - B + B * dl / avgdl)) for t in terms if t in tf)
        matched.append((eid, state, bm25))
    best = max((m[2] for m in matched), default=0.0) or 1.0
    scored = []
    for eid, state, bm25 in matched:
        recency = 0.5 ** (max(ts_micros(now) - ts_micros(state["ts"]), 0) / (7 * 86_400_000_000))
        scored.append((eid, round(0.9 * bm25 / best + 0.05 * float(state["relevance"]) / 10 + 0.05 * recency, 6)))
    return sorted(scored, key=lambda s: (-s[1], s[0]))


def change(db: memdb.Database, ids: list[tuple[str, str]], what: str, i: int, text: str) -> None:
    if not ids:
        return
    owner, eid = ids[i % len(ids)]
    mem = db.owner(owner)
    state = db.episodes.layout.states.get((owner, eid))
    if state is None:
        return
    status = state.get("status")
    if what == "erase":
        mem.erase([eid], reason="test")
    elif what == "delete":
        mem.delete(eid, reason="test")
    elif what == "archive" and status in ("active", "summarized"):
        mem.archive(eid)
    elif what == "restore" and status == "archived":
        mem.restore(eid)
    elif (
        what == "supersede" and status == "active" and state["kind"] != "exchange" and db.episodes.record_of(owner, eid)["summary"] != text
    ):
        ids.append((owner, mem.supersede(eid, reason="corrected", summary=text).id))
    elif what == "feedback" and status in ("active", "summarized"):
        mem.feedback(eid, 1.0 if i % 2 else -1.0)
    elif what == "result" and status in ("active", "summarized"):
        call = mem.record_tool_call("s1", "search", {"q": text})  # gateway capture is live: at NOW
        mem.record_tool_result(call.id, {"found": text})
        ids.append((owner, call.id))


def build(db: memdb.Database, eps: list[Any], ops: list[Any]) -> None:
    """Record the episodes, then make the changes, checking every index after each."""
    ids = []
    for i, (owner, text, content, hours, (kind, outcome), tags) in enumerate(eps):
        ts = NOW - dt.timedelta(hours=hours, minutes=i)
        ep = db.owner(owner).record(kind, f"{text} n{i}", content=content, outcome=outcome, tags=tags, ts=ts)
        ids.append((owner, ep.id))
    for what, i, text in ops:
        change(db, ids, what, i, text)
        assert db.check().ok, db.check().problems[:5]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(episodes, changes, queries)
def test_text_search_equals_the_reference(
    tmp_path_factory: pytest.TempPathFactory, eps: list[Any], ops: list[Any], asked: list[Any]
) -> None:
    with memdb.open(tmp_path_factory.mktemp("textref"), clock=lambda: NOW) as db:
        build(db, eps, ops)
        for words, filters, limit in asked:
            for owner in ("ana", "bo"):
                db.flush()
                want = reference(db, owner, words, filters, NOW)
                got = db.owner(owner).recall(text=" ".join(words), limit=limit, now=NOW, **filters)
                assert got.total == len(want)
                scores = [m.score for m in got.memories]
                assert scores == [s for _, s in want[:limit]]
                kth = want[min(limit, len(want)) - 1][1] if want else None
                assert {m.episode.id for m in got.memories if m.score != kth} == {e for e, s in want[:limit] if s != kth}
                assert all(m.episode.owner == owner for m in got.memories)


@pytest.mark.lmdb_only(reason="two processes on one LMDB directory; the PostgreSQL server is shared by design")
def test_kept_column_chunks_follow_another_process_s_writes(tmp_path: Any) -> None:
    """A process keeps the column chunks it read; another process's capture, feedback and
    erasure change their stamps, so the next search reads them again and sees the change."""
    import subprocess
    import sys

    path = tmp_path / "db"
    with memdb.open(path, clock=lambda: NOW) as db:
        ana = db.owner("ana")
        first = ana.record("debug", "deploy quota", outcome="failure", ts=NOW - dt.timedelta(hours=1))
        assert ana.recall(text="deploy", now=NOW).total == 1  # the chunks are kept now
        script = (
            "import datetime as dt, memdb\n"
            f"now = dt.datetime({NOW.year}, {NOW.month}, {NOW.day}, {NOW.hour}, tzinfo=dt.UTC)\n"
            f"with memdb.open({str(path)!r}, clock=lambda: now) as db:\n"
            "    ana = db.owner('ana')\n"
            "    ana.record('debug', 'deploy rollback', outcome='success', ts=now - dt.timedelta(hours=2))\n"
            f"    ana.erase([{first.id!r}], reason='test')\n"
        )
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
        again = ana.recall(text="deploy", now=NOW)
        assert again.total == 1 and again.memories[0].episode.summary == "deploy rollback"
        assert db.check().ok


def ask_reference(db: memdb.Database, owner: str, interp: Any, now: dt.datetime) -> list[tuple[str, float]]:
    """``reference`` for what ``ask`` searched: its terms (any of them) or its boost tags match,
    its rank terms add to BM25, a boost tag adds 0.1, its tags and window filter."""
    terms, ranked = list(interp.terms), [t for t in interp.rank_terms if t not in interp.terms]
    docs, idf, avgdl = hot_docs(db, owner, terms + ranked)
    w = interp.window
    matched = []
    for eid, state, record, tf, dl in docs:
        boosted = bool(set(interp.boost_tags) & set(record["tags"]))
        if not (any(t in tf for t in terms) or boosted):
            continue
        if not set(interp.tags) <= set(record["tags"]) or (w and not w.start <= record["ts"] < w.end):
            continue
        bm25 = sum(idf[t] * tf[t] * (K1 + 1) / (tf[t] + K1 * (1 - B + B * dl / avgdl)) for t in terms + ranked if t in tf)
        matched.append((eid, state, bm25, boosted))
    best = max((m[2] for m in matched), default=0.0) or 1.0
    scored = []
    for eid, state, bm25, boosted in matched:
        recency = 0.5 ** (max(ts_micros(now) - ts_micros(state["ts"]), 0) / (7 * 86_400_000_000))
        score = 0.9 * bm25 / best + 0.05 * float(state["relevance"]) / 10 + 0.05 * recency + (0.1 if boosted else 0.0)
        scored.append((eid, round(score, 6)))
    return sorted(scored, key=lambda s: (-s[1], s[0]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    episodes,
    changes,
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(["x", "y"]), st.sampled_from([1, 3, 10])), min_size=1, max_size=3),
)
def test_ask_with_a_boost_tag_equals_the_reference(
    tmp_path_factory: pytest.TempPathFactory, eps: list[Any], ops: list[Any], asked: list[Any]
) -> None:
    """A question naming a tag and a word: the word or the tag matches, the tag boosts (the
    kernel's BOOST list), on the same corpora and changes as above."""
    with memdb.open(tmp_path_factory.mktemp("askref"), clock=lambda: NOW) as db:
        build(db, eps, ops)
        for word, tag, limit in asked:
            for owner in ("ana", "bo"):
                db.flush()
                got = db.owner(owner).ask(f"{word} {tag}", limit=limit, now=NOW)
                if not got.interpretation.terms or got.interpretation.missing_names:
                    continue
                want = ask_reference(db, owner, got.interpretation, NOW)
                assert got.total == len(want), (got.interpretation, got.note)
                assert [m.score for m in got.memories] == [s for _, s in want[:limit]]
