"""Query layer: recall filters and planner, ask, honest empty answers, context blocks, history."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from query_times import NOW, at

import memdb
from memdb.engine.globals import Global
from memdb.errors import NoSearchableWordsError, ValidationError
from memdb.memory.ids import ts_micros
from memdb.query.engine import OwnerQueries
from memdb.query.results import said_words

UTC = dt.UTC

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)


def summaries(result: Any) -> list[str]:
    return [m.episode.summary for m in result]


# --- recall ------------------------------------------------------------------------------------


def test_recall_time_window_is_half_open(team: memdb.Memory) -> None:
    r = team.recall(since=at(23, 10), until=at(25, 16))
    assert summaries(r) and set(summaries(r)) == {
        "Deploy of Project X failed: migration locked the users table",
        "Billing webhook retries time out",
    }


def test_recall_tags_all_and_any(team: memdb.Memory) -> None:
    assert len(team.recall(tags=["project-x", "deploy"], limit=10)) == 2
    assert set(summaries(team.recall(any_tags=["billing", "deploy"], limit=10))) == {
        "Deploy of Project X failed: migration locked the users table",
        "Billing webhook retries time out",
        "Deploy failed again: migration lock",
    }


def test_recall_kind_outcome_session_text(team: memdb.Memory) -> None:
    assert summaries(team.recall(kind="debug", outcome="failure", limit=1)) == ["Deploy failed again: migration lock"]
    assert len(team.recall(outcome="success", limit=10)) == 2
    assert summaries(team.recall(session="s2")) == ["Shipped search v2 for Project X"]
    r = team.recall(text="users table migration")
    assert summaries(r)[0] == "Deploy of Project X failed: migration locked the users table"
    assert any("bm25" in w for w in r.memories[0].why)


def test_results_never_cross_owners(team: memdb.Memory, qdb: memdb.Database) -> None:
    for r in (team.recall(limit=50), team.ask("deploy failures"), team.recall(tags=["project-x"], limit=50)):
        assert all(m.episode.owner == "team" for m in r)
    assert "Other team" not in str(team.history(kind="debug"))


def test_recall_counts_access(team: memdb.Memory, qdb: memdb.Database) -> None:
    r = team.recall(tags=["billing"])
    assert team.peek(r.memories[0].episode.id).access_count == 0  # buffered
    qdb.flush()
    assert team.peek(r.memories[0].episode.id).access_count == 1


def test_a_rewritten_header_is_read_anew(team: memdb.Memory, qdb: memdb.Database) -> None:
    """Ranking keeps decoded headers by their bytes: once feedback or a flush of accesses writes
    a header again, the next query ranks and shows what was written, never what it kept."""
    first = team.recall(text="deploy migration", limit=5, now=NOW)
    top = first.memories[0]
    qdb.flush()  # the reads of ``first`` are written into the headers
    team.feedback(top.id, 1.0)
    again = team.recall(text="deploy migration", limit=5, now=NOW)
    hit = next(m for m in again.memories if m.id == top.id)
    stored = team.peek(top.id)
    assert hit.episode.relevance == stored.relevance > top.episode.relevance
    assert hit.episode.access_count == stored.access_count == 1 and hit.episode.feedback == 1.0
    assert hit.score > top.score  # the same text and time, a higher relevance
    assert f"relevance {stored.relevance:.1f}" in hit.why


def test_bad_filters_named(team: memdb.Memory) -> None:
    with pytest.raises(ValidationError, match="'meeting'"):
        team.recall(kind="meeting")
    with pytest.raises(ValidationError, match="'mostly'"):
        team.recall(outcome="mostly")
    with pytest.raises(ValidationError, match="until must be after since"):
        team.recall(since=at(5), until=at(4))
    with pytest.raises(ValidationError, match="limit"):
        team.recall(limit=-1)


def test_limit_zero_reports_the_matches(team: memdb.Memory) -> None:
    """``limit=0`` asks how many match: the answer shows none but must not claim nothing did."""
    r = team.recall(tags=["twilio"], limit=0)
    assert r.memories == [] and r.total == 2 and r.found
    assert r.note == "2 matches for tags twilio; showing none (limit 0)."
    assert "Nothing" not in r.as_context(500)
    asked = team.ask("twilio quota", limit=0)
    assert asked.memories == [] and asked.found and asked.total == team.ask("twilio quota", limit=10).total > 0
    assert "Nothing" not in asked.note
    none = team.recall(tags=["kubernetes"], limit=0)  # still honest when nothing matches
    assert not none.found and none.total == 0 and none.note.startswith("Nothing found")


@pytest.mark.parametrize("limit", [10**9, 2**62, 2**70])
def test_a_huge_limit_or_offset_answers_everything(team: memdb.Memory, limit: int) -> None:
    """A limit (or offset) far beyond the matches asks for all of them: the kernel's heap was
    sized by it, and ``recall(text=..., limit=2**62)`` corrupted the process's heap."""
    for query in (lambda **kw: team.recall(text="twilio quota", **kw), lambda **kw: team.ask("twilio quota", **kw)):
        everything = query(limit=limit)
        assert everything.total == len(everything.memories) == query(limit=100).total > 0
    assert team.recall(text="twilio quota", limit=5, offset=limit).memories == []
    assert len(team.recall(limit=limit).memories) == team.recall(limit=1000).total


@pytest.mark.parametrize("text", ["the", "x", "<EMAIL_1>", "what is it"])
def test_text_without_searchable_words_is_refused(team: memdb.Memory, text: str) -> None:
    """A text filter that makes no index term would filter nothing: recall and history refuse
    it, naming it, rather than answer for everything. A placeholder is personal data withheld:
    recall answers nothing, saying why (tests/query/test_withheld.py)."""
    queries = (team.history,) if text.startswith("<") else (team.recall, team.history)
    for query in queries:
        with pytest.raises(NoSearchableWordsError, match="not indexed") as caught:  # a ValidationError
            query(text=text)
        assert str(caught.value).startswith(f"text {text!r}: no searchable words")
    if text.startswith("<"):
        assert team.recall(text=text).note.startswith("Nothing found: the text's <EMAIL_1> is personal data or a secret")
    assert team.recall(text="the 7 users").found  # a digit and one real word are enough


@pytest.mark.parametrize("text", ["", "  "])
def test_an_empty_text_is_no_text_filter(team: memdb.Memory, text: str) -> None:
    """What JSON clients send for an optional field they leave empty: no filter, as None."""
    assert team.recall(text=text).total == team.recall().total
    assert team.history(text=text).total == team.history().total


def test_ask_without_searchable_words_searches_everything_and_says_so(team: memdb.Memory) -> None:
    """ask takes natural language and never refuses a question: one with no words left after
    question words and stopwords ranks everything, and its note and interpretation say so."""
    r = team.ask("what is it", limit=3)
    assert str(r.interpretation) == "everything" and not r.interpretation.terms
    assert r.found and r.total == team.recall(limit=50).total == 6
    assert r.note == "6 matches for everything; showing 3."


# a brute-force model of recall's filters, to check the planner on random data
tags_st = st.sampled_from(["a", "b", "c", "d"])
episodes_st = st.lists(
    st.tuples(
        st.sampled_from(["debug", "sprint", "exchange"]),
        st.lists(tags_st, max_size=3),
        st.integers(0, 40),
        st.sampled_from(["alpha beta", "beta gamma", "delta", "alpha"]),
    ),
    min_size=1,
    max_size=25,
)
queries_st = st.fixed_dictionaries(
    {},
    optional={
        "tags": st.lists(tags_st, max_size=2),
        "any_tags": st.lists(tags_st, max_size=2),
        "kind": st.sampled_from(["debug", "sprint", "exchange"]),
        "outcome": st.sampled_from(["success", "failure"]),
        "text": st.sampled_from(["alpha", "gamma delta", "beta"]),
        "since": st.integers(0, 40).map(lambda d: at(1, 0) + dt.timedelta(days=d)),
        "until": st.integers(41, 50).map(lambda d: at(1, 0) + dt.timedelta(days=d)),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(episodes_st, queries_st)
def test_planner_equals_brute_force(
    tmp_path_factory: pytest.TempPathFactory, eps: list[tuple[str, list[str], int, str]], query: dict[str, Any]
) -> None:
    later = NOW + dt.timedelta(days=60)  # after every scripted episode: none is dated in the future
    with memdb.open(tmp_path_factory.mktemp("plan"), clock=lambda: later) as db:
        mem = db.owner("x")
        stored = []
        for i, (kind, tags, day, text) in enumerate(eps):
            outcome = None if kind == "exchange" else ("success" if i % 2 else "failure")
            stored.append(mem.record(kind, f"ep{i} {text}", outcome=outcome, tags=tags, ts=at(1, 0) + dt.timedelta(days=day, hours=i)))
        terms = set(query["text"].split()) if "text" in query else None

        def keep(e: Any) -> bool:
            return (
                ("since" not in query or e.ts >= query["since"])
                and ("until" not in query or e.ts < query["until"])
                and set(query.get("tags", [])) <= set(e.tags)
                and (not query.get("any_tags") or bool(set(query["any_tags"]) & set(e.tags)))
                and ("kind" not in query or e.kind == query["kind"])
                and ("outcome" not in query or e.outcome == query["outcome"])
                and (terms is None or bool(terms & set(e.summary.split())))
            )

        expected = {e.id for e in stored if keep(e)}
        r = mem.recall(limit=100, **query)
        assert {m.episode.id for m in r} == expected
        assert r.total == len(expected) and r.found == bool(expected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    episodes_st,
    st.sampled_from(["alpha", "gamma delta", "beta"]),
    st.lists(tags_st, max_size=1),
    st.sampled_from([None, None, "success", "failure"]),
    st.integers(0, 45),
    st.integers(1, 10),
)
def test_an_empty_windows_note_counts_every_match_outside_it(
    tmp_path_factory: pytest.TempPathFactory,
    eps: list[tuple[str, list[str], int, str]],
    text: str,
    tags: list[str],
    outcome: str | None,
    start: int,
    days: int,
) -> None:
    """An empty window's note says how many matches lie before and after it, and the latest
    before: what the matches of all time hold (the search kernel counts them in one call)."""
    later = NOW + dt.timedelta(days=60)
    since, until = at(1, 0) + dt.timedelta(days=start), at(1, 0) + dt.timedelta(days=start + days)
    with memdb.open(tmp_path_factory.mktemp("note"), clock=lambda: later) as db:
        mem = db.owner("x")
        for i, (kind, ep_tags, day, words) in enumerate(eps):
            result = None if kind == "exchange" else ("success" if i % 2 else "failure")
            shifted = day if day < start else day + days  # no episode in the window
            mem.record(kind, f"ep{i} {words}", outcome=result, tags=ep_tags, ts=at(1, 0) + dt.timedelta(days=shifted, hours=i % 24))
        every = mem.recall(text=text, tags=tags, outcome=outcome, limit=100)
        r = mem.recall(text=text, tags=tags, outcome=outcome, since=since, until=until, limit=100)
    stamps = [m.episode.ts for m in every]
    before, after = [t for t in stamps if t < since], [t for t in stamps if t >= until]
    assert len(before) + len(after) == len(stamps) and r.total == 0 and not r.found
    if not stamps:
        assert r.note.endswith("Nothing matches at any time either."), r.note
        return
    bits = ([f"{len(before)} earlier (latest {max(before):%Y-%m-%d})"] if before else []) + ([f"{len(after)} later"] if after else [])
    assert r.note.endswith("; " + " and ".join(bits) + "."), r.note


def test_text_driven_window_bounds_far_from_now(team: memdb.Memory) -> None:
    """A text query driven by its postings prunes ids by the window's bounds as strings; bounds
    before year 1000 or at the end of time must still select exactly by time."""
    everything = {m.episode.id for m in team.recall(text="deploy migration", limit=50)}
    assert everything
    since, until = dt.datetime(500, 1, 1, tzinfo=UTC), dt.datetime(9999, 12, 31, tzinfo=UTC)
    far = team.recall(text="deploy migration", since=since, until=until, limit=50)
    assert {m.episode.id for m in far} == everything
    late = team.recall(text="deploy migration", since=at(25), limit=50)
    assert {m.episode.id for m in late} == {i for i in everything if team.peek(i).ts >= at(25)}


ranking_st = st.lists(
    st.tuples(
        st.lists(tags_st, min_size=1, max_size=2),
        st.integers(0, 300),  # hours before NOW, so recency spreads over two weeks
        st.sampled_from(["alpha beta", "beta gamma", "delta", "alpha alpha"]),
        st.sampled_from([None, -1.0, -0.5, 0.5, 1.0]),  # feedback spreads relevance over bands
        st.integers(0, 8),  # reads, which raise the access component
    ),
    min_size=12,
    max_size=40,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ranking_st,
    st.sampled_from(
        [
            {},
            {"tags": ["a"]},
            {"tags": ["a", "b"]},  # at any time: the kernel over the tags' lists (the second one required)
            {"tags": ["b"], "outcome": "failure"},
            {"tags": ["b"], "outcome": "failure", "since": NOW - dt.timedelta(days=9)},
            {"kind": "debug", "outcome": "failure"},
            {"any_tags": ["b", "c"]},  # a union of ranges: not in time order
            {"text": "alpha"},
            {"any_tags": ["b", "c"], "text": "beta delta"},
        ]
    ),
)
def test_top_k_equals_the_head_of_the_full_ranking(
    tmp_path_factory: pytest.TempPathFactory, eps: list[tuple[list[str], int, str, float | None, int]], query: dict[str, Any]
) -> None:
    """The planner reads headers only for matches whose level-bounded score can reach the top k,
    best bound first, and stops once the k-th exact score beats every unread bound; what it
    returns must be exactly the first k of the full ranking (one-range queries take the
    columnar path, the others the listed one)."""
    with memdb.open(tmp_path_factory.mktemp("rank"), clock=lambda: NOW) as db:
        mem = db.owner("x")
        for i, (tags, hours, text, feedback, reads) in enumerate(eps):
            e = mem.record("debug", f"ep{i} {text}", outcome="failure", tags=tags, ts=NOW - dt.timedelta(hours=hours, minutes=i))
            if feedback is not None:
                mem.feedback(e.id, feedback)
            for _ in range(reads):
                mem.get(e.id)
        db.flush()
        everything = mem.recall(limit=100, now=NOW, **query)
        full = [(m.episode.id, m.score) for m in everything]
        for k in (1, 2, 3, 5):
            top = mem.recall(limit=k, now=NOW, **query)
            assert [(m.episode.id, m.score) for m in top] == full[:k]
            assert top.total == everything.total
        assert db.check().ok


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ranking_st, st.sampled_from(["gamma b", "alpha delta c", "beta alpha", "delta alpha", "gamma alpha"]))
def test_ask_top_k_with_a_boost_tag_equals_the_head_of_its_full_ranking(
    tmp_path_factory: pytest.TempPathFactory, eps: list[tuple[list[str], int, str, float | None, int]], question: str
) -> None:
    """With a tag and words, ask ranks the union (tag boost +0.1). The bounded ranking takes
    the boost from the tagged matches it read and skips tagged-only ones whose bound cannot
    reach the top (tag "alpha" is also a word, so its own postings rank them); it must return
    the head of the full ranking."""
    with memdb.open(tmp_path_factory.mktemp("boost"), clock=lambda: NOW) as db:
        mem = db.owner("x")
        mem.record("debug", "every tag", outcome="failure", tags=["alpha", "b", "c", "d"], ts=NOW - dt.timedelta(days=20))  # all known
        for i, (tags, hours, text, feedback, _) in enumerate(eps):
            tags = ["alpha" if t == "a" else t for t in tags]
            e = mem.record("debug", f"ep{i} {text}", outcome="failure", tags=tags, ts=NOW - dt.timedelta(hours=hours, minutes=i))
            if feedback is not None:
                mem.feedback(e.id, feedback)
        db.flush()
        everything = mem.ask(question, now=NOW, limit=100)
        assert everything.interpretation.boost_tags
        full = [(m.episode.id, m.score) for m in everything]
        for k in (1, 2, 3, 5):
            top = mem.ask(question, now=NOW, limit=k)
            assert [(m.episode.id, m.score) for m in top] == full[:k]
            assert top.total == everything.total


def test_ask_ranks_a_tagged_only_match_above_weak_word_matches(tmp_path: Path) -> None:
    """A match through the tag alone (no asked word) outranks weak word matches when its tag's
    own words score well: the bound that lets ranking skip tagged-only matches must keep it."""
    with memdb.open(tmp_path / "tagged", clock=lambda: NOW) as db:
        mem = db.owner("x")
        old = NOW - dt.timedelta(days=20)
        strong = mem.record("debug", "zeta zeta zeta report", outcome="failure", ts=old)
        for i in range(2):
            weak = mem.record("debug", f"zeta note number {i} with many more words in it", outcome="failure", ts=old)
            mem.feedback(weak.id, -1.0)
        tagged = mem.record("debug", "alpha alpha alpha", outcome="failure", tags=["alpha"], ts=NOW - dt.timedelta(hours=1))
        mem.feedback(tagged.id, 1.0)
        for i in range(10):  # "alpha" is common, "zeta" rare: the tag's words score below the best word match
            mem.record("debug", f"alpha filler {i}", outcome="success", ts=old)
        for i in range(15):
            mem.record("debug", f"misc entry {i}", outcome="success", ts=old)
        db.flush()
        full = mem.ask("zeta alpha", now=NOW, limit=50)
        assert full.interpretation.boost_tags == ("alpha",) and full.interpretation.rank_terms == ("alpha",)
        top = mem.ask("zeta alpha", now=NOW, limit=2)
        assert [m.episode.id for m in top] == [m.episode.id for m in full][:2] == [strong.id, tagged.id]
        assert top.total == full.total == 4


def test_a_tag_at_any_time_is_ranked_from_its_list_without_reading_its_range(qdb: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question about a tag at any time (no window, no words) is counted and ranked by the search
    kernel over the tag's list in the text index: its index range, which at a million episodes
    holds hundreds of thousands of entries, is never read. The answer is the documented ranking
    without text (0.6 * relevance / 10 + 0.4 * recency), the total exact."""
    mem = qdb.owner("ana")
    eps = [
        mem.record("debug", f"step {i}", outcome=("failure", "success")[i % 2], tags=["deploy", *(["db"] if i % 3 else [])],
                   ts=NOW - dt.timedelta(hours=7 * i))
        for i in range(40)
    ]  # fmt: skip
    for e in eps[::5]:
        mem.feedback(e.id, 1.0)
    qdb.flush()
    layout = qdb.episodes.layout
    want = sorted(((0.6 * e.relevance / 10 + 0.4 * 0.5 ** ((NOW - e.ts).total_seconds() / 86400 / 7), e.id) for e in (
        mem.peek(e.id) for e in eps if "db" in e.tags and e.outcome == "failure")), reverse=True)  # fmt: skip

    def refusing(read: Any) -> Any:
        def refused(g: Global, *args: Any, **kwargs: Any) -> Any:
            assert g not in (layout.by_tag, layout.by_tag_outcome), "a tag's index range was read"
            return read(g, *args, **kwargs)

        return refused

    for method in ("raw_columns", "raw_range", "raw_keys"):  # the ways an index range is read
        monkeypatch.setattr(Global, method, refusing(getattr(Global, method)))
    got = mem.recall(tags=["deploy", "db"], outcome="failure", now=NOW, limit=3)
    assert got.total == len(want) == 13
    assert [(round(m.score, 6), m.episode.id) for m in got] == [(round(s, 6), i) for s, i in want[:3]]


def test_an_exchange_ranks_above_a_neighbour_whose_context_holds_its_words(qdb: memdb.Database) -> None:
    """An exchange's content is the conversation around it, and a word there counts two thirds
    of one in its own text (BM25F, ``memdb.memory.layout.CONTEXT_TF``): the turn that says
    "pottery" ranks above the newer turn that only quotes it, where with equal weights (the same
    length, the same relevance) recency alone would put the newer one first."""
    mem = qdb.owner("ana")
    said = mem.record("exchange", "pottery class", content="> lovely week", ts=NOW - dt.timedelta(hours=2))
    quoted = mem.record("exchange", "lovely week", content="> pottery class", ts=NOW - dt.timedelta(hours=1))
    r = mem.recall(text="pottery", now=NOW, limit=2)
    assert [m.episode.id for m in r] == [said.id, quoted.id]
    said_why, quoted_why = (next(w for w in m.why if w.startswith("text ")) for m in r)
    assert said_why.startswith("text potteri×1 (") and quoted_why.startswith("text potteri×0.667 (")  # occurrences as BM25 counts them
    typed = mem.record("debug", "lovely week", content="pottery class", outcome="success", ts=NOW - dt.timedelta(hours=3))
    assert next(m for m in mem.recall(text="pottery", now=NOW, limit=3) if m.episode.id == typed.id).why[0].startswith("text potteri×1 ")


# --- ask ---------------------------------------------------------------------------------------


def test_ask_last_week_project_x(team: memdb.Memory) -> None:
    r = team.ask("What happened with Project X last week?")
    assert r.found
    assert r.interpretation.tags == ("project-x",)
    assert str(r.interpretation.window).startswith("last week (2026-06-22 to 2026-06-28)")
    assert set(summaries(r)) == {"Deploy of Project X failed: migration locked the users table", "Shipped search v2 for Project X"}


def test_ask_maps_outcome_words_and_keeps_terms(team: memdb.Memory) -> None:
    r = team.ask("which deploys failed in the past 10 days?", limit=10)
    assert r.interpretation.outcome == "failure"
    assert all(m.episode.outcome == "failure" for m in r)
    r = team.ask("anything about the twilio quota?")
    assert r.interpretation.boost_tags == ("twilio",) and "quota" in r.interpretation.words
    assert summaries(r)[0] == "User asked about the twilio quota"


def test_ask_tag_or_words_match_and_the_tag_ranks(team: memdb.Memory) -> None:
    """With a tag and other words, memories with the tag or the words match: words that no
    memory holds cannot hide the tagged ones, and a word match without the tag still shows."""
    r = team.ask("flamingo Project X", limit=10)
    assert r.interpretation.boost_tags == ("project-x",)
    assert r.interpretation.terms == ("flamingo",) and r.interpretation.rank_terms == ("project",)  # the tag's words rank
    assert sorted(summaries(r)) == sorted(m.episode.summary for m in team.recall(tags=["project-x"], limit=10))
    assert r.total == 4
    r = team.ask("twilio migration", limit=10)  # tagged twilio (2) or holding "migration" (2), none both
    assert r.total == 4
    assert set(summaries(r)) == {
        "Billing webhook retries time out",
        "User asked about the twilio quota",
        "Deploy of Project X failed: migration locked the users table",
        "Deploy failed again: migration lock",
    }
    # the tagged ones hold the tag's word and carry the tag: they rank first
    assert set(summaries(r)[:2]) == {"Billing webhook retries time out", "User asked about the twilio quota"}
    assert str(r.interpretation) == "text migration or tags twilio"


def test_ask_tag_filters_when_kind_or_outcome_is_asked(team: memdb.Memory) -> None:
    r = team.ask("Past failures on Project X?", limit=10)
    assert r.interpretation.tags == ("project-x",) and r.interpretation.outcome == "failure"
    assert r.interpretation.terms == ()  # "past" is a question word
    assert summaries(r) == ["Deploy failed again: migration lock", "Deploy of Project X failed: migration locked the users table"]
    r = team.ask("debug failures on twilio webhooks", limit=10)
    assert r.interpretation.tags == ("twilio",) and r.interpretation.kind == "debug" and not r.interpretation.boost_tags
    assert r.total == 0 and not r.found  # the only twilio debug was partial


def test_ask_honest_empty_with_earlier_matches(team: memdb.Memory) -> None:
    r = team.ask("What happened with Project X yesterday?")
    assert not r.found and r.memories == []
    assert r.note == "Nothing yesterday for tags project-x; 4 earlier (latest 2026-06-29)."
    assert "Nothing" in r.as_context(500)
    # with archived memories asked for too, the window is still said ("Nothing yesterday for
    # including archived" named no window and no question)
    r = team.ask("What happened on June 20?", include_archived=True)
    assert r.note.startswith("Nothing found for window on June 20 (2026-06-20), recorded or told of; including archived; "), r.note
    assert team.ask("What happened with Project X yesterday?", include_archived=True).note.startswith(
        "Nothing yesterday for tags project-x; including archived; 4 earlier"
    )


def test_honest_empty_counts_both_sides_exactly(team: memdb.Memory, qdb: memdb.Database) -> None:
    """The note counts the matches before and after an empty window, the same whether one index
    range holds the matches (read as columns) or the planner intersects several."""
    tagged = team.recall(tags=["project-x"], limit=50).memories
    since, until = at(26), at(26, 23)
    before = [m.episode.ts for m in tagged if m.episode.ts < since]
    after = [m.episode.ts for m in tagged if m.episode.ts >= until]
    assert before and after and len(before) + len(after) == len(tagged)
    expected = f"{len(before)} earlier (latest {max(before):%Y-%m-%d}) and {len(after)} later."
    one_range = team.recall(tags=["project-x"], since=since, until=until)
    intersected = team.recall(tags=["project-x"], any_tags=["project-x"], since=since, until=until)
    for r in (one_range, intersected):
        assert not r.found and r.total == 0
        assert r.note.endswith(expected), r.note
    queries = OwnerQueries(qdb.episodes, team.name)  # the query layer alone, below the handle
    counted = queries._outside(queries._compile(one_range.interpretation), cap=1)  # the kernel counts a tag's matches whole
    assert counted == (len(before), ts_micros(max(before)), len(after), False, False)
    every = [m.episode.ts for m in team.recall(limit=50).memories]
    window_only = team.recall(since=since, until=until)  # one index range, read by its keys: counts stop at the cap
    assert not window_only.found and len([t for t in every if t < since]) > 1 and len([t for t in every if t >= until]) > 1
    capped = queries._outside(queries._compile(window_only.interpretation), cap=1)
    assert capped == (1, ts_micros(max(t for t in every if t < since)), 1, True, True)
    worded = [m.episode.ts for m in team.recall(text="migration", limit=50).memories]
    r = team.recall(text="migration", since=since, until=until)  # text never reads one range
    early, late = [t for t in worded if t < since], [t for t in worded if t >= until]
    assert early and late and not r.found
    assert r.note.endswith(f"; {len(early)} earlier (latest {max(early):%Y-%m-%d}) and {len(late)} later.")


def test_ask_honest_empty_when_nothing_at_all(team: memdb.Memory) -> None:
    r = team.ask("kubernetes autoscaler")
    assert not r.found and "Nothing found" in r.note and "kubernetes" in r.note


def test_ask_rejects_empty_question(team: memdb.Memory) -> None:
    with pytest.raises(ValidationError):
        team.ask("   ")


# --- context blocks -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(1, 700))
def test_as_context_never_exceeds_budget(team: memdb.Memory, budget: int) -> None:
    r = team.recall(limit=10)
    block = r.as_context(max_chars=budget)
    assert len(block) <= budget
    full = r.as_context(max_chars=100_000)
    if block != full and budget > 150:
        assert "…[cut]" in block or "more not shown" in block
    for line in block.splitlines()[1:]:
        assert line in full.splitlines() or line.endswith("…[cut]") or "more not shown" in line


def test_as_context_puts_summaries_first(team: memdb.Memory) -> None:
    team.record("summary", "Week recap: two failed deploys, search shipped", tags=["project-x"], ts=at(30, 1))
    lines = team.recall(tags=["project-x"], limit=10).as_context(2000).splitlines()
    assert lines[1].startswith("- 2026-06-30 summary")
    assert "Lesson: run migrations before the deploy window" in "\n".join(lines)


def test_as_context_says_a_recurring_memory_once_with_every_date(qdb: memdb.Database) -> None:
    """A support agent's prompt block held "Globex: webhook deliveries dropped. Lesson: ask for the
    HAR file first" five times, one line a day, and no room for anything else. Memories whose
    lines differ only in their date are one line at the best one's place, with the other dates;
    what is left out is still counted in memories. Budgets hold as before."""
    mem = qdb.owner("support")
    for day in (18, 20, 22, 24):
        mem.record("debug", "Globex: webhook deliveries dropped", outcome="failure", tags=["globex"],
                   lesson="ask for the HAR file first", ts=at(day, 10))  # fmt: skip
    mem.record("debug", "Globex: webhook signature fixed", outcome="success", tags=["globex"], ts=at(25, 10))
    mem.record("debug", "Globex: webhook deliveries dropped", outcome="success", tags=["globex"], ts=at(26, 10))  # another outcome
    r = mem.recall(tags=["globex"], limit=10)
    lines = r.as_context(2000).splitlines()
    assert lines[1:] == [
        "- 2026-06-26 debug/success [globex]: Globex: webhook deliveries dropped",
        "- 2026-06-25 debug/success [globex]: Globex: webhook signature fixed",
        "- 2026-06-24 debug/failure [globex]: Globex: webhook deliveries dropped. Lesson: ask for the HAR file first"
        " (also on 2026-06-22, 2026-06-20, 2026-06-18)",
    ]
    short = r.as_context(200).splitlines()
    assert short[-1] == "(+4 more not shown)"  # the four failures the last line stands for
    assert len(r.as_context(200)) <= 200


# --- history --------------------------------------------------------------------------------


def test_history_counts_outcomes_and_lessons(team: memdb.Memory) -> None:
    h = team.history(kind="debug", tags=["deploy"])
    assert h.total == 2 and h.counts == {"success": 0, "partial": 0, "failure": 2}
    assert h.lessons == ["take the lock with a timeout", "run migrations before the deploy window"]
    assert str(h).startswith("2 past attempts (2 failure). Last failure 2026-06-29: Deploy failed again: migration lock. Lesson:")
    assert team.history(kind="research").total == 0


def test_history_keeps_the_lessons_of_failures_before_the_attempts_listed(team: memdb.Memory) -> None:
    """Lessons came only from the ``limit`` newest attempts: two failures followed by routine
    successes lost both lessons from ``History.lessons``. Every failure's lesson is kept, newest
    first, hot or archived."""
    h = team.history(kind="debug", tags=["deploy"], limit=1)
    assert [a.episode.summary for a in h.attempts] == ["Deploy failed again: migration lock"]
    assert h.lessons == ["take the lock with a timeout", "run migrations before the deploy window"]
    for day in range(1, 6):
        team.record("debug", f"Deploy {day} went fine", outcome="success", tags=["deploy"], ts=at(29, 9 + day))
    after = team.history(tags=["deploy"], limit=3)
    assert after.counts["success"] == 5 and after.lessons == h.lessons
    assert "Last failure 2026-06-29: Deploy failed again" in str(after)
    (older,) = [e for e in team.episodes() if e.lesson == "run migrations before the deploy window"]
    team.archive(older.id)
    assert team.history(tags=["deploy"], limit=3).lessons == h.lessons  # from what archiving keeps hot
    for n in range(60):  # the 50 newest distinct, so an answer stays readable
        team.record(
            "debug", f"Cron {n} failed", outcome="failure", tags=["cron"], lesson=f"lesson {n}", ts=at(1, 0) + dt.timedelta(minutes=n)
        )
    assert team.history(tags=["cron"], limit=1).lessons == [f"lesson {n}" for n in range(59, 9, -1)]


def test_history_rejects_an_inverted_window(team: memdb.Memory) -> None:
    """history checks its window as recall does: same error, both bounds named."""
    with pytest.raises(ValidationError, match="until must be after since") as from_history:
        team.history(since=at(5), until=at(4))
    with pytest.raises(ValidationError) as from_recall:
        team.recall(since=at(5), until=at(4))
    assert str(from_history.value) == str(from_recall.value)
    assert at(5).isoformat() in str(from_history.value) and at(4).isoformat() in str(from_history.value)
    with pytest.raises(ValidationError, match="until must be after since"):
        team.history(since=at(5), until=at(5))  # an empty window too


def test_history_refuses_a_negative_limit(team: memdb.Memory) -> None:
    with pytest.raises(ValidationError, match="limit -2: must be a non-negative int"):
        team.history(limit=-2)


def test_a_window_open_on_one_side_is_named_by_its_bound(team: memdb.Memory) -> None:
    """Not "window in the window (1000-01-01 to ...)": the open side has no date to show."""
    since = team.recall(since=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert str(since.interpretation).startswith("window since 2026-01-01")
    before = team.recall(until=dt.datetime(2020, 1, 1, 12, 30, tzinfo=dt.UTC))
    assert before.note == "Nothing found for window before 2020-01-01 12:30 UTC; 6 later."  # where the memories are


def test_an_empty_window_says_where_the_nearest_memories_are(qdb: memdb.Database) -> None:
    """ "What did we talk about last week?" of a chat owner who was away that week said only
    "Nothing found": an empty window with nothing else asked says, as a filtered one does, how
    many memories lie before and after it and when the latest before was."""
    mem = qdb.owner("sam")
    for day in (10, 12, 29):
        mem.record("exchange", f"chat on June {day}", ts=at(day, 20))
    r = mem.ask("What did we talk about last week?", now=at(30, 9))  # June 22-28
    assert r.note == (
        "Nothing found for window last week (2026-06-22 to 2026-06-28), recorded or told of; 2 earlier (latest 2026-06-12) and 1 later."
    )


def test_windows_at_the_edges_of_the_calendar(team: memdb.Memory) -> None:
    far = dt.timezone(dt.timedelta(hours=14))
    assert (
        team.recall(since=dt.datetime(9999, 12, 31, 23, 59, tzinfo=dt.UTC)).note
        == "Nothing found for window since 9999-12-31 23:59 UTC; 6 earlier (latest 2026-06-30)."
    )
    assert team.recall(until=dt.datetime(1, 1, 2, tzinfo=dt.UTC)).note == "Nothing found for window before 0001-01-02; 6 later."
    with pytest.raises(ValidationError, match="since '0001-01-01T00:00:00\\+14:00': outside the years 1-9999 once in UTC"):
        team.recall(since=dt.datetime(1, 1, 1, tzinfo=far))


@pytest.mark.parametrize("question", ["Did the webhook fix work?", "webhook working notes", "what work is left on the webhook"])
def test_work_is_no_outcome_word(qdb: memdb.Database, question: str) -> None:
    """Only the outcome words as written filter ("worked", "failed"): "work" and "working"
    share their stem with "worked", and hid every memory but successes."""
    mem = qdb.owner("ana")
    mem.record("debug", "Webhook retry fix deployed, still times out", outcome="failure", ts=at(29))
    mem.record("debug", "Working notes on the webhook payload format", outcome="partial", ts=at(29))
    r = mem.ask(question)
    assert r.interpretation.outcome is None and r.found
    assert mem.ask("what worked on the webhook?").interpretation.outcome == "success"


def test_tags_no_memory_has_together_are_asked_about_one_by_one(team: memdb.Memory) -> None:
    """ "Tell me about the deploy failures and the twilio issue" asks about both: no memory has
    both tags, so the ones with either answer, and the note says so; where memories have them
    together, those answer (and ``recall(tags=...)`` always wants every tag)."""
    r = team.ask("deploy failures and twilio")
    assert r.interpretation.any_tags == ("deploy", "twilio") and r.interpretation.tags == ()
    assert r.note.startswith("No memory has all of tags deploy, twilio; these have one of them. 2 matches")
    assert sorted(m.episode.summary for m in r) == [
        "Deploy failed again: migration lock",
        "Deploy of Project X failed: migration locked the users table",
    ]
    r = team.ask("billing and twilio")  # one memory has both: it alone answers
    assert r.interpretation.tags == ("billing", "twilio") and [m.episode.summary for m in r] == ["Billing webhook retries time out"]
    assert not team.recall(tags=["deploy", "twilio"]).memories  # the structured call means every tag


def test_a_yes_or_no_question_widens_tags_only_where_none_has_them_all(team: memdb.Memory) -> None:
    """ "Did the billing twilio retries fail?" of retries that went partly: a memory has both tags,
    so the answer is that none failed and how the attempts went, never "no memory has all of
    tags billing, twilio" and another twilio memory (an MCP probe's find)."""
    team.record("debug", "Twilio quota failure", outcome="failure", tags=["twilio"], ts=at(26))
    r = team.ask("did the billing twilio retries fail?")
    assert r.interpretation.tags == ("billing", "twilio") and r.interpretation.any_tags == ()
    assert not r.memories and "No memory has all" not in r.note
    assert "1 attempt went otherwise" in r.note and "partial" in r.note
    r = team.ask("deploy and twilio in the past 3 days")  # within the window too
    assert [m.episode.summary for m in r] == ["User asked about the twilio quota", "Deploy failed again: migration lock"]


@pytest.mark.parametrize(
    ("question", "outcome", "words"),
    [
        ("What went wrong with the deploy?", "failure", ()),  # "wrong" asks for failures
        # "billing" is a tag: asked alone, memories naming it match too (the tag ranks)
        ("What's new with billing?", None, ("billing",)),
        ("Who mentioned the webhook?", None, ("webhook",)),
        ("What did we decide about billing?", None, ("billing",)),  # "decide" matched any decision about anything
        # "decisions" and "make" were searched: "Which decisions did we make this month?" found nothing
        ("Which decisions did we make about billing?", None, ("billing",)),
        ("What did we choose for the webhook?", None, ("webhook",)),
        # "talk" was searched: "What did we talk about last week?" found nothing in a week of chats
        ("What did we talk about regarding billing?", None, ("billing",)),
        ("What did we discuss about the webhook?", None, ("webhook",)),
        ("How many attempts did the webhook take?", None, ("webhook",)),  # "take" was searched
        ("What did we work on last week?", None, ()),  # "work" filtered the week to what says "work"
        # a lesson is a field, not a word: "lessons" asked for failures whose text says "lessons"
        ("What were the lessons from the deploy failures?", "failure", ()),
        ("What did we learn about the migration?", None, ("migration",)),
        ("What did they say about billing?", None, ("billing",)),
        ("What did the user ask about twilio?", None, ("user",)),
        ("What went well with Project X?", "success", ()),  # how it went, in two words: its outcome
        ("What went badly with the deploy?", "failure", ()),
        # a negated outcome word asks for the other outcome: "didn't fail" asked for the failures
        ("Which Project X memories didn't fail?", "success", ()),
        ("What did not work on the deploy?", "failure", ()),
        ("What never worked with Project X?", "failure", ()),
        ("Which Project X memories did not break?", "success", ()),
        ("What has been failing with the deploy?", "failure", ()),
    ],
)
def test_words_that_say_how_a_question_asks(team: memdb.Memory, question: str, outcome: str | None, words: tuple[str, ...]) -> None:
    r = team.ask(question)
    assert (r.interpretation.outcome, r.interpretation.words) == (outcome, words) and r.found and not r.partial


def test_what_did_we_decide_asks_of_the_memories_that_say_so(qdb: memdb.Database) -> None:
    """ "What did we decide not to do?" answered every memory by recency: all its words say how it
    asks. With nothing else asked, the memories that say they decided (chose, planned...) answer,
    where some do, in a window too; elsewhere the question asks of everything, as before."""
    mem = qdb.owner("ana")
    decided = mem.record("roundtable", "We decided not to migrate the billing DB this quarter", outcome="success", ts=at(27))
    chose = mem.record("roundtable", "We chose Postgres over MySQL", outcome="success", ts=at(28))
    mem.record("routine", "Standup notes", outcome="success", ts=at(29))
    for question in ("What did we decide not to do?", "What did we decide?"):
        r = mem.ask(question)
        assert [m.id for m in r] == [decided.id] and r.interpretation.words == ("decide",)
    assert [m.id for m in mem.ask("What did we choose?")] == [chose.id]
    # "decisions" asks of the act, as "decide" does: no memory says "decisions", one says it decided
    assert [m.id for m in mem.ask("Which decisions did we make?")] == [decided.id]
    # with a window, the memories in it that say so ("what did we decide in February?" was all of February)
    r = mem.ask("What did we decide in June?", now=NOW)
    assert r.interpretation.words == ("decide",) and [m.id for m in r] == [decided.id]
    assert mem.ask("Which decisions did we make in June?", now=NOW).total == 1
    assert mem.ask("What did we do in June?", now=NOW).total == 3  # no act word: everything in it
    # where no memory of the window says it, the window's memories answer, as before (a review's find)
    mem.record("roundtable", "We discussed the roadmap", outcome="success", ts=at(20, month=5))
    assert mem.ask("What did we discuss in June?", now=NOW).total == 3
    other = qdb.owner("bob")
    other.record("routine", "Standup notes", outcome="success", ts=at(29))
    assert other.ask("What did we decide?").total == 1  # nothing says so: everything


def test_a_question_word_before_a_noun_is_searched(qdb: memdb.Database) -> None:
    """ "memory" asks for memories ("what memories about billing?"), but "the memory leak" names a
    leak: searching "leak" alone found the leaked credentials too, and ranked them first."""
    mem = qdb.owner("ana")
    leak = mem.record("debug", "Memory leak in the ingest worker: an unbounded cache", outcome="success", ts=at(28))
    mem.record("debug", "Credentials leak in a public gist: rotated the keys", outcome="success", ts=at(29))
    r = mem.ask("What did we try for the memory leak?")
    assert r.interpretation.words == ("memory", "leak") and r.memories[0].id == leak.id
    assert mem.ask("What memories do you have about leaks?").interpretation.words == ("leaks",)
    assert mem.ask("What's the status of the ingest worker?").interpretation.words == ("ingest", "worker")


def test_participants_are_searched(qdb: memdb.Database) -> None:
    """ "What did Bob review?" found nothing where Bob took part in a review: who took part is
    what a memory is about. A participant that is also a tag counts once; a fact's decisions are
    data, not words (the LangGraph store keeps unindexed values there), another record's are words
    (test_a_decision_is_found_by_its_words)."""
    from memdb.memory.layout import terms_of  # what capture indexes

    mem = qdb.owner("ana")
    review = mem.record("review", "Code review of the retry logic", outcome="success", participants=["Bob", "Ana Lee"], ts=at(28))
    chose = mem.record("roundtable", "Chose the orders platform", outcome="success", ts=at(27), decisions={"rejected": ["kubernetes"]})
    mem.record("fact", "the platform", key="ana/platform", decisions={"value": "nomad"}, ts=at(27))
    assert [m.id for m in mem.ask("What did Bob review?")] == [review.id]
    assert [m.id for m in mem.recall(text="kubernetes")] == [chose.id] and not mem.recall(text="nomad").found
    tf, _ = terms_of({"kind": "review", "summary": "retry", "tags": ["bob"], "participants": ["Bob", "Eve"]})
    assert tf["bob"] == tf["eve"] == tf["retri"]
    assert qdb.check().ok


def test_an_empty_json_member_is_no_word(tmp_path: Path) -> None:
    """A tool's result {"failed": 0, "error": null} says nothing failed: those keys are no words,
    so "what errors did the tests report?" finds the run that had one, not every clean run."""
    from memdb.memory.layout import terms_of

    clock = [dt.datetime(2026, 7, 1, 9, tzinfo=UTC)]
    with memdb.open(tmp_path / "db", clock=lambda: clock[0]) as db:
        mem = db.owner("agent")
        runs = []
        for failed, error in [(0, None), (2, "AssertionError in test_billing"), (0, None)]:
            clock[0] += dt.timedelta(hours=1)
            call = mem.record_tool_call(session="s1", tool="pytest", input={"args": ["-q"], "env": {}, "retries": 0})
            runs.append(mem.record_tool_result(call.id, {"passed": 40 - failed, "failed": failed, "error": error}).id)
        assert [m.id for m in mem.ask("Which errors were reported?")] == [runs[1]]
        assert [m.id for m in mem.recall(text="failed")] == [runs[1]]
        assert not mem.recall(text="retries").found and not mem.recall(text="env").found
        assert db.check().ok
    result = '{"empty": [], "blank": {}, "none": "", "off": false, "zero": 0.0, "word": "value", "count": 10, "text": "0", "gone": null}'
    terms = terms_of({"kind": "tool_call", "result": result})[0]
    assert {"word", "valu", "count", "text"} <= terms.keys() and not {"empti", "blank", "none", "off", "zero", "gone"} & terms.keys()
    prose = {"kind": "exchange", "summary": 'the "error": null case'}  # other kinds' text is words as written
    assert "error" in terms_of(prose)[0]


def test_an_answer_builds_no_episode_until_one_is_read(qdb: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Building a hit's episode (a pydantic model) is a third of a small query: an answer builds
    none until a caller reads one. Counting the corrected memories for the note built them all,
    and LoCoMo's recall took twice as long; the note now counts them when it is read."""
    from memdb.query import engine

    mem = qdb.owner("ana")
    for i in range(3):
        mem.record("debug", f"Deploy {i} failed on the lock", outcome="failure", ts=at(20 + i))
    mem.record("fact", "Editor: Vim", key="editor")
    mem.record("fact", "Editor: Neovim", key="editor")
    built: list[str] = []
    made = engine._episode_of
    monkeypatch.setattr(engine, "_episode_of", lambda *a: built.append(a[1]) or made(*a))
    for r in (mem.recall(text="deploy lock"), mem.ask("Which deploys failed?"), mem.ask("editor")):
        assert r.memories and built == []
        r.note  # noqa: B018 - reading the note may build them
        built.clear()
    assert "corrects an earlier version" in mem.ask("editor").note


def test_a_built_in_kind_named_by_a_word(qdb: memdb.Database) -> None:
    """ "What tools did I use yesterday?" searched "tools" and "use" and found nothing among
    yesterday's tool calls: "tool(s)", "tool calls" and "conversation(s)" name the built-in kinds
    where the owner keeps them, and not before a noun ("the tools directory")."""
    mem = qdb.owner("ana")
    call = mem.record_tool_call(session="s1", tool="web_search", input={"q": "lmdb map size"})
    mem.record_tool_result(call.id, result={"hits": 3})
    mem.record("debug", "Cleaned up the tools directory", outcome="success", ts=at(29))
    for question in ("What tools did I use today?", "list my tool calls"):
        r = mem.ask(question)
        assert r.interpretation.kind == "tool_call" and r.interpretation.words == () and [m.id for m in r] == [call.id]
    r = mem.ask("what's in the tools directory?")
    assert r.interpretation.kind is None and r.interpretation.words == ("tools", "directory")
    conversations = mem.ask("Which conversations mention lmdb?")  # no exchange is kept: a word, held by none
    assert conversations.interpretation.kind is None and "conversations" in conversations.interpretation.words
    chat = mem.record_exchange(session="c1", user_message="notes from the sales call?", response="sent them")
    r = mem.ask("Which conversations were about the sales call?")  # "call" is dropped only after "tool"
    assert r.interpretation.kind == "exchange" and r.interpretation.words == ("sales", "call") and [m.id for m in r] == [chat.id]


def test_a_typed_kind_named_in_the_plural(qdb: memdb.Database) -> None:
    """ "Any escalations this week?" of a support agent whose kinds are "ticket" and "escalation"
    searched the word "escalations", which no memory says (a kind is no word of the text), and
    answered that nothing matched at any time. A kind's plural names it as its name does; other
    forms of the word ("escalated") stay words, as a memory may say them."""
    qdb.configure(typed_kinds=("ticket", "escalation", "retry", "quiz"))
    mem = qdb.owner("support")
    mem.record("ticket", "Acme: login fails with SSO", outcome="success", tags=["acme"], ts=at(29))
    esc = mem.record("escalation", "Globex: webhook deliveries dropped", outcome="failure", tags=["globex"], ts=at(30))
    retry = mem.record("retry", "Globex webhooks sent again", outcome="success", tags=["globex"], ts=at(30, 9))
    quiz = mem.record("quiz", "Onboarding quiz for Acme's admins", outcome="partial", tags=["acme"], ts=at(30, 10))
    for question, kind, ids in (
        ("Any escalations this week?", "escalation", [esc.id]),
        ("escalation", "escalation", [esc.id]),
        ("Which retries worked for Globex?", "retry", [retry.id]),
        ("How many tickets did Acme open?", "ticket", None),
        ("Any quizzes this week?", "quiz", [quiz.id]),  # "quiz" doubles its "z"
    ):
        r = mem.ask(question)
        assert r.interpretation.kind == kind, question
        assert kind not in r.interpretation.words and kind + "s" not in r.interpretation.words
        if ids is not None:
            assert [m.id for m in r] == ids, question
    assert mem.ask("What was escalated?").interpretation.kind is None  # a word a memory may hold


def test_a_one_word_tag_asked_alone_finds_the_memories_naming_it(qdb: memdb.Database) -> None:
    """ "What did we learn about pgbouncer?" of an on-call agent found the change tagged
    "pgbouncer" and not the incident whose lesson says "load-test pgbouncer limits" (tagged
    "checkout"): a tag asked about with nothing else filtered. A one-word tag asked alone also
    matches the memories that name it (of the kind asked, if one is), the tag adding to the score; a
    tag of several words ("project-x") still filters, as memories saying "project" are not about
    Project X, and so does a tag beside a window or an outcome."""
    mem = qdb.owner("oncall")
    change = mem.record("routine", "Raised the pool size", outcome="success", tags=["pgbouncer"], ts=at(20))
    sev1 = mem.record("debug", "SEV1: checkout down", outcome="failure", tags=["checkout"], lesson="load-test pgbouncer limits", ts=at(10))
    mem.record("debug", "Project planning slipped", outcome="partial", tags=["planning"], ts=at(12))
    project = mem.record("sprint", "Shipped offline mode", outcome="success", tags=["project-x"], ts=at(15))
    r = mem.ask("What did we learn about pgbouncer?")
    assert r.interpretation.boost_tags == ("pgbouncer",) and [m.id for m in r] == [change.id, sev1.id]
    assert [m.id for m in mem.ask("What happened with Project X?")] == [project.id]
    r = mem.ask("Any debug memories involving pgbouncer?")  # beside a kind too: of that kind
    assert (r.interpretation.kind, [m.id for m in r]) == ("debug", [sev1.id])
    assert [m.id for m in mem.ask("pgbouncer failures")] == []  # a tag beside an outcome: the tagged failures
    assert [m.id for m in mem.ask("What happened with pgbouncer last month?")] == [change.id]  # July 1: June


def test_a_typed_kind_of_two_words_is_named(qdb: memdb.Database) -> None:
    """ "follow-ups about SSO" of a sales agent with kind "followup" searched "follow", "ups" and
    "sso", and said no memory mentions "ups"; a kind "code_review" could never be named at all,
    as the tokenizer splits on "_". Two words side by side, written as a kind with or without a
    separator, or as its plural, name it as one word does."""
    qdb.configure(typed_kinds=("followup", "code_review", "review"))  # "reviews" alone is a review
    mem = qdb.owner("sdr")
    follow = mem.record("followup", "Sent a follow-up to Globex about SSO", outcome="success", ts=at(29))
    review = mem.record("code_review", "Reviewed the SSO patch", outcome="partial", ts=at(30))
    for question, kind, words, ids in (
        ("follow-ups about SSO", "followup", ("sso",), [follow.id]),
        ("Any follow ups this week?", "followup", (), [follow.id]),
        ("code reviews about SSO", "code_review", ("sso",), [review.id]),
        ("partial code_review this week", "code_review", (), [review.id]),
    ):
        r = mem.ask(question)
        assert (r.interpretation.kind, r.interpretation.words, [m.id for m in r]) == (kind, words, ids), question
    quarterly = mem.record("review", "Quarterly review of the SSO rollout", outcome="success", ts=at(29))
    assert [m.id for m in mem.ask("Any reviews about SSO?")] == [quarterly.id]
    assert [m.id for m in mem.ask("Any code reviews?")] == [review.id]
    r = mem.ask("review the code of the SSO patch")  # not side by side: a review, and the word "code"
    assert r.interpretation.kind == "review" and "code" in r.interpretation.words


def test_an_empty_answer_with_an_outcome_tells_what_went_otherwise(team: memdb.Memory) -> None:
    """ "What went wrong with the billing webhooks?" found no failure and said only that: the
    attempt went partly. An empty answer asked of one outcome tells how many matching attempts
    went otherwise, as a yes-or-no question's does; where none did it says nothing more."""
    r = team.ask("What went wrong with the billing webhooks?")
    assert not r.found and r.interpretation.outcome == "failure"
    assert r.note == (
        "Nothing found for tags billing; outcome failure; ranked by text webhooks."
        " 1 attempt went otherwise, the newest 2026-06-24: partial."
    )
    assert team.ask("What went wrong with the quota?").note == "Nothing found for outcome failure; text quota."  # an exchange


def test_a_decision_is_found_by_its_words(qdb: memdb.Database) -> None:
    """ "What did we decide about the database?" found nothing of an episode whose decisions said
    {"database": "postgres"} when its text did not say so: a record's decisions are indexed by
    their keys and string values (layout 18), never a fact's (the LangGraph store's values,
    searchable only by the paths it indexes), and numbers say nothing."""
    mem = qdb.owner("ana")
    chose = mem.record("research", "Storage for the new ledger service", outcome="success", ts=at(29),
                       decisions={"database": "postgres", "rejected": ["mysql", {"why": "licensing"}], "confidence": 8.5})  # fmt: skip
    mem.record("debug", "Ledger migration dry run", outcome="partial", ts=at(30))
    mem.record("fact", "dark mode", key="ana/ui.theme", decisions={"value": "solarized"}, ts=at(28))
    for question in ("What did we decide about the database?", "Why did we reject MySQL?", "postgres", "licensing"):
        assert [m.id for m in mem.ask(question)] == [chose.id], question
    assert not mem.ask("solarized").found and not mem.recall(text="8.5").found
    assert qdb.check().ok


def test_opening_a_layout_17_database_indexes_decisions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layout 17 indexed no decision: opening such a database rebuilds the text index from the
    records, and the decision is found by its words."""
    from memdb.memory import layout

    with monkeypatch.context() as old_code:
        old_code.setattr(layout, "_decision_words", lambda value: iter(()))  # as layout 17 read a record
        with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
            chose = db.owner("ana").record("research", "Storage for the ledger", outcome="success", decisions={"database": "postgres"})
            db.globals["META"].set(("layout",), 17)
            assert not db.owner("ana").ask("postgres").found
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == layout.LAYOUT == 28 and db.check().ok
        assert [m.id for m in db.owner("ana").ask("What did we decide about the database?")] == [chose.id]


def test_an_identifier_is_asked_whole(qdb: memdb.Database) -> None:
    """ "What happened with INV-2026-0042?" answered with every memory saying "2026" or "inv"
    (an invoice of another number, a bank import of 2026): an identifier is a term whole
    (layout 21), asked whole, and one no memory holds is named, as a name is; its parts still
    find it ("invoice 0042"), and so does recall's text, archived ones too."""
    mem = qdb.owner("ana")
    sent = mem.record("routine", "Sent invoice INV-2026-0042 to Initech", outcome="success", tags=["invoicing"], ts=at(20))
    other = mem.record("routine", "Sent invoice INV-2026-0043 to Globex", outcome="success", tags=["invoicing"], ts=at(21))
    mem.record("debug", "Bank feed import failed for 2026 statements, 42 rows skipped", outcome="failure", ts=at(22))
    patched = mem.record("debug", "Patched CVE-2024-3094 on the build hosts", outcome="success", ts=at(23))
    for question in ("What happened with INV-2026-0042?", "inv-2026-0042", "Did the INV_2026_0042 go out?"):
        r = mem.ask(question)
        assert ([m.id for m in r], r.total) == ([sent.id], 1), question
    assert [m.id for m in mem.recall(text="INV-2026-0042")] == [sent.id]
    assert mem.ask("invoice 0042").memories[0].id == sent.id  # its parts find it, ranked first
    missing = mem.ask("What happened with INV-2026-0099?")
    assert not missing.found and missing.memories == [] and "no memory mentions 'INV-2026-0099'" in missing.note
    assert other.id in {m.id for m in mem.ask("invoice 0043")}
    qdb.lifecycle.archive("ana", patched.id, NOW)  # what stays hot of it holds the identifier too
    assert not mem.ask("CVE-2024-3094").found
    assert [m.id for m in mem.ask("CVE-2024-3094", include_archived=True)] == [patched.id]
    assert qdb.check().ok


def test_an_identifier_in_a_longer_run_or_a_phrase_is_not_named_missing(tmp_path: Path) -> None:
    """The reviews of layout 21: "3-day" and "24-hour" (phrases, not names) emptied answers that
    their parts had found; "INV-2026-0050.pdf" and "CVE-2024-3094_xz" were said to hold no
    "INV-2026-0050" and "CVE-2024-3094"; an owner named "bot-7" was a name no memory held; and a
    memory saying an identifier and once "no" before it was not the newest event about it."""
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("bot-7")
        offsite = mem.record("routine", "Planned the 3 day offsite agenda", outcome="success", ts=at(20))
        soak = mem.record("debug", "Soak test over 24 hours found a leak", outcome="failure", ts=at(21))
        pdf = mem.record("routine", "Attached INV-2026-0050.pdf for Globex", outcome="success", ts=at(22))
        xz = mem.record("debug", "Patched CVE-2024-3094_xz on the db hosts", outcome="success", ts=at(23))
        newest = mem.record("debug", "Patched CVE-2024-3094 on the build hosts; rescan shows no CVE-2024-3094 left",
                            outcome="success", ts=at(29))  # fmt: skip
        assert mem.ask("What did we plan for the 3-day offsite?").memories[0].id == offsite.id
        assert mem.ask("What did the 24-hour soak test find?").memories[0].id == soak.id
        assert [m.id for m in mem.ask("What happened with INV-2026-0050?")] == [pdf.id]
        assert xz.id in {m.id for m in mem.ask("Did we patch CVE-2024-3094_xz?")}
        assert [m.id for m in mem.ask("When did we last patch CVE-2024-3094?")] == [newest.id]
        assert mem.ask("What did Bot-7 patch?").found  # the owner's own name is no missing name
        # the second review: names whose parts other memories hold ("web-01" beside "web-02",
        # "gpt-5" beside "gpt-4", "v2.4.1" beside "v2.3.1") were answered by those memories
        mem.record("debug", "Rebooted web-02 after gpt-4 rollout of v2.3.1", outcome="success", ts=at(24))
        for question, name in (("Is web-01 healthy?", "web-01"), ("How did gpt-5 do?", "gpt-5"), ("What was in v2.4.1?", "v2.4.1")):
            r = mem.ask(question)
            assert not r.found and f"no memory mentions '{name}'" in r.note, question
        # the third review: a name written otherwise by the memory that holds it ("ISO 8601", a
        # host's full name, an invoice without its file's extension) is found, not named missing
        iso = mem.record("research", "Validated timestamps against ISO 8601", outcome="success", ts=at(25))
        host = mem.record("debug", "Deployed the hotfix to web-01.prod.internal", outcome="success", ts=at(26))
        mem.record("routine", "Bank import: row 8601 of the statements skipped", outcome="partial", ts=at(27))
        assert mem.ask("What about ISO-8601?").memories[0].id == iso.id
        assert [m.id for m in mem.ask("What did we do on web-01?")] == [host.id]
        assert [m.id for m in mem.ask("Where is INV-2026-0050.docx?")] == [pdf.id]  # its invoice, by the name it holds


@pytest.mark.usefixtures("backend")
def test_a_name_and_its_number_are_one_name_joined_or_apart(qdb: memdb.Database) -> None:
    """ "Did we switch to SHA-256?" of a memory writing "SHA256" said no memory mentions it, and
    "web02" missed "web-02": a name and its number are one name however they are joined."""
    mem = qdb.owner("ana")
    sha = mem.record("research", "Checksums switched to SHA256 after the audit", outcome="success", ts=at(20))
    web = mem.record("debug", "Disk full on web-02 again", outcome="failure", ts=at(21))
    gpt = mem.record("research", "GPT-4 eval regressed on long inputs", outcome="failure", ts=at(22))
    assert [m.id for m in mem.ask("Did we switch to sha-256?")] == [sha.id]
    assert [m.id for m in mem.ask("What happened on web02?")] == [web.id]
    assert [m.id for m in mem.ask("How did the gpt4 eval go?")] == [gpt.id]
    assert mem.recall(text="sha-256").total == mem.recall(text="SHA256").total == 1
    apart = mem.record("research", "Signed the build with SHA 256 and RSA", outcome="success", ts=at(23))
    assert {m.id for m in mem.recall(text="SHA-256")} == {sha.id, apart.id}  # written either way, both found
    for question, name in (("Is web-03 full?", "web-03"), ("How did gpt5 do?", "gpt5")):  # other names stay missing
        r = mem.ask(question)
        assert not r.found and f"no memory mentions '{name}'" in r.note, question


def test_opening_a_layout_20_database_indexes_identifiers_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layout 20 indexed an identifier's parts only: opening such a database rebuilds the text
    index, and the identifier is found whole."""
    from collections import Counter

    from memdb.memory import layout, text

    with monkeypatch.context() as old_code:
        old_code.setattr(layout, "term_counts", lambda value: Counter(text.tokenize(value)))  # as layout 20 read a text
        with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
            sent = db.owner("ana").record("routine", "Sent invoice INV-2026-0042", outcome="success")
            db.globals["META"].set(("layout",), 20)
            # its parts only were indexed: the memory that writes it is found by them
            assert db.owner("ana").recall(text="INV-2026-0042").interpretation.terms == ("inv", "2026", "0042")
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.check().ok
        assert db.owner("ana").recall(text="INV-2026-0042").interpretation.terms == ("inv-2026-0042",)  # held whole now
        assert [m.id for m in db.owner("ana").ask("What happened with INV-2026-0042?")] == [sent.id]


def test_a_record_with_decisions_says_it_decided(qdb: memdb.Database) -> None:
    """ "What did we decide?" with nothing else asked found the memories whose text says they
    decided, and not one whose decisions hold {"retriever": "hybrid"} when its text does not say
    so: what was decided is half of what memdb keeps. A record with decisions says "decided
    decision" too (layout 19); a fact's decisions are data, and an empty {} decided nothing."""
    mem = qdb.owner("ana")
    chose = mem.record("research", "Benchmarked BM25 against dense retrieval", outcome="partial", ts=at(27),
                       decisions={"retriever": "hybrid"})  # fmt: skip
    said = mem.record("review", "We decided to ship on Friday", outcome="success", ts=at(28))
    mem.record("debug", "Flaky test in the ledger", outcome="failure", ts=at(29), decisions={})
    mem.record("fact", "dark mode", key="ana/ui.theme", decisions={"value": "solarized"}, ts=at(26))
    for question in ("What did we decide?", "Which decisions did we make?"):
        assert sorted(m.id for m in mem.ask(question)) == sorted([chose.id, said.id]), question
    assert mem.ask("Which decisions did we make in June?").total == 2  # in a window too


def test_opening_a_layout_18_database_finds_what_was_decided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layout 18 had a record with decisions say nothing of deciding: opening such a database
    rebuilds the text index, and "What did we decide?" finds it."""
    from memdb.memory import layout

    with monkeypatch.context() as old_code:
        old_code.setattr(layout, "_DECIDED", "")  # as layout 18 read a record
        with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
            chose = db.owner("ana").record("research", "Storage for the ledger", outcome="success", decisions={"database": "postgres"})
            db.owner("ana").record("debug", "Ledger dry run", outcome="partial")
            db.globals["META"].set(("layout",), 18)
            assert db.owner("ana").ask("What did we decide?").interpretation.terms == ()  # no memory says so: everything
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == layout.LAYOUT and db.check().ok
        assert [m.id for m in db.owner("ana").ask("What did we decide?")] == [chose.id]


def test_how_many_asks_how_many(qdb: memdb.Database) -> None:
    """ "How many deploys failed?" asks about deploys: "many" is how it asks, and a failure that
    says "many users" is no deploy, nor is the answer partial for want of "many"."""
    mem = qdb.owner("ana")
    deploy = mem.record("debug", "Deploy failed: migration lock", outcome="failure", ts=at(29))
    mem.record("debug", "Login timeouts for many users", outcome="failure", ts=at(28))
    r = mem.ask("How many deploys failed?")
    assert r.interpretation.words == ("deploys",) and not r.partial and [m.id for m in r] == [deploy.id]


@pytest.mark.parametrize("question", ["Did the deploy fail?", "Has the deploy ever failed?", "was the deploy broken"])
def test_a_yes_or_no_question_about_an_outcome_tells_what_went_otherwise(team: memdb.Memory, question: str) -> None:
    """ "Did the deploy fail?" is answered by the failures, and its note tells of the attempts
    that went otherwise and the newest of them: the deploy that worked after them is not hidden.
    A question that lists ("deploy failures") says nothing of the others."""
    team.record("debug", "Deploy worked with the lock timeout", outcome="success", tags=["deploy"], ts=at(30, 9))
    r = team.ask(question)
    assert r.interpretation.outcome == "failure" and [m.episode.outcome for m in r] == ["failure", "failure"]
    assert r.note.endswith("showing 2. 1 attempt went otherwise, the newest 2026-06-30: success.")
    assert team.ask("deploy failures").note == "2 matches for tags deploy; outcome failure; showing 2."
    assert team.ask("Did the deploy succeed?").note.endswith("2 attempts went otherwise, the newest 2026-06-29: failure.")
    nothing = team.ask("Did billing fail?")  # no failure: the note says what there was
    assert not nothing.found and nothing.note.endswith("1 attempt went otherwise, the newest 2026-06-24: partial.")
    assert team.ask("Did the twilio quota fail?").note.endswith("1 attempt went otherwise, the newest 2026-06-24: partial.")
    assert team.ask("Did the users table fail?").note.endswith("No attempt it matches went otherwise than failure.")


def test_a_yes_or_no_question_counts_archived_attempts_that_went_otherwise(team: memdb.Memory) -> None:
    """Archived attempts keep their outcome hot, so "Did the deploy fail?" tells of the archived
    deploy that worked: the note said no attempt went otherwise."""
    worked = team.record("debug", "Deploy worked with the lock timeout", outcome="success", tags=["deploy"], ts=at(30, 9))
    team.archive(worked.id)
    r = team.ask("Did the deploy fail?")
    assert r.interpretation.outcome == "failure" and [m.episode.outcome for m in r] == ["failure", "failure"]
    assert "1 attempt went otherwise, the newest 2026-06-30: success." in r.note


def test_a_note_names_a_word_of_the_question_sanitized(qdb: memdb.Database) -> None:
    """A token or an address asked about is never echoed raw by a note, which reaches prompts,
    logs and MCP clients: the question's reading showed a placeholder while the note beside it
    named the raw token (a data-protection probe's find)."""
    mem = qdb.owner("ana")
    mem.record("debug", "Deploy of project alpha failed", outcome="failure", tags=["project-alpha"], ts=at(29))
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    said = [
        mem.ask(f"What happened with Project {token} last week?").note,
        mem.ask(f"deploy {token}").note,
        mem.ask("deploy ana.lopez@example.com").note,
        str(mem.history(text=f"deploy {token}")),
        str(mem.history(text="deploy ana.lopez@example.com")),
    ]
    for note in said:
        assert token not in note and "ana.lopez" not in note, note
    assert any("<SECRET_1>" in n or "<EMAIL_1>" in n for n in said)


def test_an_answer_shows_its_days_as_the_database_s_zone_reads_them(qdb: memdb.Database) -> None:
    """Days are read in the database's zone, so an answer shows them so: in Tokyo, "on July 19"
    answered with a memory shown at 2026-07-18 20:00 (UTC), a told July 14 was "2026-07-13 to
    2026-07-14", and a note's latest day and a history's last failure were a day early."""
    qdb.configure(timezone="Asia/Tokyo")
    mem = qdb.owner("ana")
    mem.record("debug", "On 2026-06-14 the deploy failed on a lock", outcome="failure", ts=dt.datetime(2026, 6, 16, 20, tzinfo=UTC))
    mem.record("debug", "late deploy fix", outcome="success", ts=dt.datetime(2026, 6, 18, 20, tzinfo=UTC))
    told = mem.ask("What happened on June 14?")
    assert [m.why[0] for m in told] == ["tells of 2026-06-14 (recorded 2026-06-17 05:00 JST)"]
    day = mem.ask("What happened on June 19?")
    assert [m.why[0] for m in day] == ["in window (2026-06-19 05:00 JST)"]
    assert "- 2026-06-19 debug/success: late deploy fix" in day.as_context()
    note = mem.ask("Did the deploy fail on June 19?").note
    assert note.endswith("(latest 2026-06-17). 1 attempt went otherwise, the newest 2026-06-19: success.")
    assert "Last failure 2026-06-17:" in str(mem.history(kind="debug"))
    assert "2026-06-19 debug/success: late deploy fix" in mem.prepare("late deploy fix").text


def test_ask_pages_an_answer_by_offset_as_recall_does(team: memdb.Memory) -> None:
    """A page of an answer: the dashboard's later pages of an ask asked for every match up to
    their own, and counted the earlier ones as read again."""
    whole = [m.id for m in team.ask("What happened with Project X?", limit=50)]
    assert len(whole) > 2
    pages = [m.id for m in team.ask("What happened with Project X?", limit=2)]
    pages += [m.id for m in team.ask("What happened with Project X?", limit=50, offset=2)]
    assert pages == whole
    with pytest.raises(ValidationError, match="offset"):
        team.ask("What happened with twilio?", offset=-1)


def test_the_pages_of_the_last_n_hold_n(qdb: memdb.Database) -> None:
    """A review's find: "the last 3 deploys" read by pages (ask's offset) ran past three."""
    mem = qdb.owner("ana")
    ids = [mem.record("debug", f"Deploy {i} of the api", outcome="success", tags=["deploy"], ts=at(20 + i)).id for i in range(8)]
    newest = ids[::-1]
    assert [m.id for m in mem.ask("the last 3 deploys", limit=10)] == newest[:3]
    assert [m.id for m in mem.ask("the last 3 deploys", limit=2)] + [
        m.id for m in mem.ask("the last 3 deploys", limit=2, offset=2)
    ] == newest[:3]
    assert mem.ask("the last 3 deploys", limit=2, offset=4).memories == []


def test_a_note_says_a_value_split_into_words_as_one_placeholder(qdb: memdb.Database) -> None:
    """A phone asked about is the words 1, 415, 555 and 0123: quoted one by one, each passed the
    sanitizer and the number was echoed raw beside its placeholder."""
    mem = qdb.owner("ana")
    mem.record("debug", "Billing failure on the webhook", outcome="failure", ts=at(29))
    r = mem.ask("billing failure, call +1 415 555 0123")
    assert "415" not in r.note and "0123" not in r.note and "<PHONE_1>" in r.note
    assert not any("415" in w for w in said_words(r.interpretation.unmatched))  # as MCP and the CLI list them


def test_words_beside_an_outcome_or_kind_still_filter(qdb: memdb.Database) -> None:
    """ "Any billing failures?" asks for failures about billing: where none mention billing the
    answer is an honest empty one, not the failures that happen to exist (DESIGN: never pads)."""
    mem = qdb.owner("ana")
    mem.record("debug", "Webhook signature check failed after key rotation", outcome="failure", ts=at(29))
    mem.record("debug", "Login page timeout under load", outcome="failure", ts=at(28))
    for question in ("Any billing failures in the past 10 days?", "debug billing"):
        r = mem.ask(question)
        assert not r.found and r.memories == [] and r.note.startswith("Nothing found")
    assert [m.episode.summary for m in mem.ask("Any login failures in the past 10 days?")] == ["Login page timeout under load"]
