"""No padding: a question's content words are not interchangeable.

A name the question asks about that no memory holds empties the answer (memories about other
things would only stand in for it); a plain word no memory holds is named and the answer is
labelled partial; history counts only attempts holding every word of the task.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.memory.layout import archived_words
from memdb.memory.text import tokenize
from memdb.query.engine import OwnerQueries
from memdb.query.plan import Query

UTC = dt.UTC
NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=UTC)

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)


@pytest.fixture
def team(tmp_path: Path) -> memdb.Memory:
    db = memdb.open(tmp_path / "db", clock=Clock(NOW))
    mem = db.owner("team")
    mem.record(
        "debug",
        "Deploy of Project X failed: migration lock",
        outcome="failure",
        tags=["project-x", "deploy"],
        ts=NOW - dt.timedelta(days=3),
    )
    mem.record("review", "Billing review: retry the invoice export", outcome="success", tags=["billing"], ts=NOW - dt.timedelta(days=2))
    mem.record("debug", "Twilio webhook retry storm after the outage", outcome="failure", tags=["twilio"], ts=NOW - dt.timedelta(days=1))
    mem.record("exchange", "Dana asked about the deploy window", tags=["chat"], ts=NOW - dt.timedelta(hours=5))
    return mem


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("What happened with Project Zeta last week?", "Zeta"),
        ("What did Priya say about the deploy?", "Priya"),
        ("Did the Kubernetes migration fail?", "Kubernetes"),
        ("Any news on OKR2 for the deploy?", "OKR2"),
        ("Did the AWS deploy fail?", "AWS"),
    ],
)
def test_a_name_no_memory_holds_empties_the_answer(team: memdb.Memory, question: str, name: str) -> None:
    # with the archived memories searched too: the name, as written, was compared with the
    # question's folded words, and the answer became a partial one about the other words
    for include_archived in (False, True):
        r = team.ask(question, now=NOW, include_archived=include_archived)
        assert not r.found and r.memories == [] and r.total == 0
        assert r.interpretation.missing_names == (name,)
        assert f"no memory mentions '{name}'" in r.note and "nothing about other things is offered" in r.note


def test_a_name_of_a_word_and_a_letter_no_memory_holds_empties_the_answer(team: memdb.Memory) -> None:
    """ "What happened with Project Y?" asked of "project" (one letter is no index term), and
    Project X's memories answered, unlabelled. Beside a tag of the family ("project-x"), a
    "Project Y" that is no tag and that no memory writes is a name no memory holds."""
    for include_archived in (False, True):
        r = team.ask("What happened with Project Y?", now=NOW, include_archived=include_archived)
        assert not r.found and r.interpretation.missing_names == ("Project Y",)
        assert "no memory mentions 'Project Y'" in r.note
    assert team.ask("What happened with Project X?", now=NOW).total == 1
    y = team.record("debug", "Project-Y blocked the deploy", outcome="failure", tags=["deploy"], ts=NOW - dt.timedelta(hours=1))
    r = team.ask("What happened with Project Y?", now=NOW)  # a memory writes it: no missing name
    assert r.found and r.interpretation.missing_names == () and "Project-Y blocked the deploy" in [m.episode.summary for m in r]
    team.archive(y.id)  # archived, it is still written ("no memory mentions" was false: a review's find)
    r = team.ask("What happened with Project Y?", now=NOW, include_archived=True)
    assert r.interpretation.missing_names == () and y.id in [m.id for m in r]


@pytest.mark.parametrize("question", ["Did the deploy API fail?", "any deploy failures in CI?", "What broke the deploy URL?"])
def test_a_common_acronym_is_a_word_not_a_name(team: memdb.Memory, question: str) -> None:
    """ "What was the last error from the payments API?" was empty: "API", in capitals, was taken
    for a name no memory holds. A common acronym ("API", "CI", "URL") names a kind of thing: the
    answer is labelled partial for it, as for any word no memory holds."""
    r = team.ask(question, now=NOW)
    assert r.found and r.partial and r.interpretation.missing_names == ()
    assert r.memories[0].episode.summary == "Deploy of Project X failed: migration lock"


def test_an_identifier_s_plural_is_its_singular_where_a_memory_holds_that(tmp_path: Path) -> None:
    """ "Any SEV1s last week?" was empty, "no memory mentions 'SEV1s'": the stemmer leaves words
    with digits (and short acronyms) alone, so the plural was a name no memory holds. Where a
    memory holds the singular, the question asks of it; the word is shown as written."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("oncall")
        sev1 = mem.record("debug", "SEV1: checkout down for 12 minutes", outcome="failure", tags=["sev1"], ts=NOW - dt.timedelta(days=9))
        pr = mem.record("review", "Reviewed the PR for the pool size", outcome="success", ts=NOW - dt.timedelta(days=2))
        r = mem.ask("Any SEV1s this week?", now=NOW)
        assert not r.found and r.interpretation.missing_names == () and r.interpretation.words == ("sev1s",)
        assert "1 earlier (latest 2026-06-22)" in r.note
        assert [m.id for m in mem.ask("Any SEV1s?", now=NOW)] == [sev1.id]
        assert [m.id for m in mem.ask("Which PRs did we review?", now=NOW)] == [pr.id]
        assert not mem.ask("Any SEV2s?", now=NOW).found  # no memory holds "sev2": a name, as before
        assert mem.ask("Any SEV2s?", now=NOW).interpretation.missing_names == ("SEV2s",)


def test_a_known_name_still_answers(team: memdb.Memory) -> None:
    r = team.ask("What did Dana ask about?", now=NOW)
    assert r.found and not r.partial and r.memories[0].episode.summary.startswith("Dana asked")


def test_a_plain_word_no_memory_holds_labels_the_answer_partial(team: memdb.Memory) -> None:
    r = team.ask("any rollback glitches with the deploy?", now=NOW)
    assert r.found and r.partial
    assert set(r.interpretation.unmatched) == {"rollback", "glitches"}
    assert "Partial: no memory mentions 'rollback', 'glitches'" in r.note
    assert all("deploy" in m.episode.summary.lower() for m in r.memories)


def test_words_no_memory_holds_beside_other_filters_say_what_the_rest_matches(team: memdb.Memory) -> None:
    """ "Any failed fixes in the past week?" of an owner whose memories never say "fix" is empty
    (the word is asked for, and the failures would only stand in for it) and says how many
    memories match the rest of the question, so an agent can ask again without the word. A
    word some memory holds says nothing of the rest: the other filters emptied the answer."""
    r = team.ask("Any failed fixes in the past week?")
    assert not r.found and r.memories == []
    assert r.note.endswith(
        " No memory mentions 'fixes'; 2 memories match the rest of the question"
        " (window in the past week (2026-06-24 09:00 to 2026-07-01 09:00 UTC), recorded or told of; outcome failure)."
    )
    assert team.ask("debug hotfix").note.endswith(" No memory mentions 'hotfix'; 2 memories match the rest of the question (kind debug).")
    assert "the rest" not in team.ask("Any successful deploys?").note  # "deploys" is held, by failures
    assert "the rest" not in team.ask("Any news on hotfixes?").note  # nothing but the word is asked


def test_the_rest_of_the_question_matching_archived_memories_only_is_said(tmp_path: Path) -> None:
    """ "Partial results in January?" of an owner whose January partials are all archived said
    only "Nothing matches at any time either": the rest of the question matches archived
    memories, which the note now counts, with how to see them."""
    clock = Clock(dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC))
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        for i in range(3):
            mem.record("debug", f"ledger item {i}", outcome="partial", tags=["ledger"])
            clock.advance(days=1)
        clock.now = dt.datetime(2026, 4, 1, 9, tzinfo=dt.UTC)
        assert db.maintain().archived == 3
        r = mem.ask("partial results in January")
        assert not r.found and r.interpretation.unmatched == ("results",)
        assert r.note.endswith(
            " No memory mentions 'results'; 3 archived memories match the rest of the question (window in January"
            " (2026-01-01 to 2026-01-31), recorded or told of; outcome partial); include_archived=True to see them."
        )
        r = mem.ask("partial results in January", include_archived=True)  # the word is still asked for
        assert not r.found and "; 3 memories match the rest of the question" in r.note


def test_a_partial_answer_is_labelled_in_the_prompt_block(team: memdb.Memory) -> None:
    """The note said "Partial", but the block a prompt reads (and the ``memdb ask`` command
    prints) did not: an agent read the deploy memories as the rollback glitches it asked about."""
    r = team.ask("any rollback glitches with the deploy?", now=NOW)
    first = r.as_context(2000).splitlines()[0]
    assert first.endswith("; partial: these do not mention 'rollback', 'glitches'):")
    assert "partial" not in team.ask("deploy", now=NOW).as_context(2000).splitlines()[0]


def test_history_counts_only_attempts_holding_every_word(team: memdb.Memory) -> None:
    h = team.history(text="twilio webhook retry")
    assert h.total == 1 and h.attempts[0].episode.summary.startswith("Twilio webhook retry")
    assert "twilio and webhook and retry" in str(h.interpretation)
    none = team.history(text="twilio webhook backoff")
    assert none.total == 0 and "no memory mentions 'backoff'" in str(none)


def test_a_name_only_cold_storage_holds_is_pointed_to(tmp_path: Path) -> None:
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "Zeta rollout failed on the canary", outcome="failure", tags=["zeta-rollout"])
        mem.archive(ep.id)
        r = mem.ask("What happened with Zeta?")
        assert not r.found and "no active memory mentions 'Zeta'" in r.note and "1 archived match" in r.note
        assert mem.ask("What happened with Zeta?", include_archived=True).found


def test_an_unmatched_word_held_in_cold_storage_is_said(tmp_path: Path) -> None:
    """A partial answer said "no memory mentions 'flaky'" of an owner whose archived memory of
    the flaky test did: it says no *active* memory does, and how many archived ones do."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        flaky = mem.record("debug", "Flaky checkout test fixed: it read the wall clock", outcome="success")
        mem.record("debug", "Fixed the auth token expiry", outcome="success")
        mem.archive(flaky.id)
        r = mem.ask("What was the fix for the flaky test?")
        assert r.found and r.partial and set(r.interpretation.unmatched) == {"flaky", "test"}
        assert "Partial: no active memory mentions 'flaky', 'test'; these match the other words. 1 archived match" in r.note
        assert "include_archived=True" in r.note
        with_cold = mem.ask("What was the fix for the flaky test?", include_archived=True)
        assert flaky.id in [m.id for m in with_cold] and not with_cold.partial
        r = mem.ask("What was the fix for the rollback?")  # held nowhere: no memory, as before
        assert "Partial: no memory mentions 'rollback'; these match the other words." in r.note
        assert "Also 1 archived match" in r.note  # the flaky test's fix matches "fix" as the active one does
        r = mem.ask("Any successful flaky tests?")  # no active memory holds the words; the rest matches one
        assert not r.found and "No active memory mentions 'flaky', 'tests'; 1 memory matches the rest of the question" in r.note
        assert "1 archived match" in r.note


def test_an_archived_memory_matches_by_its_tags_words_as_a_hot_one_does(tmp_path: Path) -> None:
    """Capture indexes a record's tags with its text, so "releases" finds a deploy tagged
    "release"; once archived, only its one-liner was searched and the same question lost it."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "Deploy of v2.6 failed: the parser crashed", outcome="failure", tags=["release", "parser"])
        assert [m.id for m in mem.ask("Which releases failed?")] == [ep.id]
        mem.archive(ep.id)
        r = mem.ask("Which releases failed?")
        assert not r.found and "1 archived match" in r.note
        assert [m.id for m in mem.ask("Which releases failed?", include_archived=True)] == [ep.id]


def test_an_archived_memory_matches_by_its_participants_as_a_hot_one_does(tmp_path: Path) -> None:
    """Capture indexes who took part; archiving kept only the one-liner and tags hot, so "What did
    Bob review?" lost Bob's review once it was archived. The header keeps the participants, and
    restoring gives the record back whole."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        ep = mem.record("review", "Code review of the retry logic", outcome="success", participants=["Bob"])
        mem.archive(ep.id)
        assert "1 archived match" in mem.ask("What did Bob review?").note
        found = mem.ask("What did Bob review?", include_archived=True)
        assert [m.id for m in found] == [ep.id] and found.memories[0].episode.participants == ("Bob",)
        restored = mem.restore(ep.id)
        assert restored.participants == ("Bob",) and [m.id for m in mem.ask("What did Bob review?")] == [ep.id]
        assert db.check().ok


def test_an_earlier_version_that_alone_matches_is_pointed_to(tmp_path: Path) -> None:
    """ "vim", asked of an owner whose editor fact now says "Neovim": nothing current matches,
    and the answer says an earlier version does, as it says what archived memories match
    (DESIGN 6: it never hides what it holds)."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        mem.record("fact", "Editor: Vim", key="editor")
        mem.record("fact", "Editor: Neovim", key="editor")
        r = mem.ask("vim")
        pointer = "1 earlier version of a corrected memory matches, latest 2026-07-01; include_superseded=True to see it."
        assert not r.found and r.note.endswith(pointer)
        named = mem.ask("Is Vim my editor?")  # a name: "no current memory", and where the earlier one is
        assert named.note.startswith("Nothing found: no current memory mentions 'Vim'") and "1 earlier version" in named.note
        assert [m.episode.summary for m in mem.ask("vim", include_superseded=True)] == ["Editor: Vim"]
        assert mem.ask("emacs").note == "Nothing found for text emacs."
        # "What editor did I use before?" answers with the current value: the note says it
        # corrects an earlier one, and how to see it
        before = mem.ask("What editor did I use before?")
        assert [m.episode.summary for m in before] == ["Editor: Neovim"]
        assert "1 shown memory corrects an earlier version; include_superseded=True to see it." in before.note
        assert "corrects" not in mem.ask("editor", include_superseded=True).note


def test_an_answer_with_matches_says_what_archived_memories_match_too(tmp_path: Path) -> None:
    """A recruiter's "Which offers were declined?" said "1 match" with three more declined offers
    archived: a count that reads as complete hid what memdb had forgotten."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.configure(typed_kinds=["offer", "screen"])
        mem = db.owner("recruiter")
        old = [
            mem.record("offer", f"{name} declined our offer", outcome="failure", ts=NOW - dt.timedelta(days=90 - i))
            for i, name in enumerate(("Tom", "Ingrid", "Raj"))
        ]
        mem.record("offer", "Ana declined our offer: equity", outcome="failure", ts=NOW - dt.timedelta(days=2))
        mem.record("screen", "Screened Lee, who declined to relocate", outcome="success", ts=NOW - dt.timedelta(days=1))
        for e in old:
            mem.archive(e.id)
        r = mem.ask("Which offers were declined?", now=NOW)
        assert r.total == 1
        assert r.note.endswith("showing 1. Also 3 archived matches (latest 2026-04-04); include_archived=True to see them.")
        assert "Also" not in mem.ask("Which offers were declined?", now=NOW, include_archived=True).note
        assert "Also" not in mem.ask("Which screens?", now=NOW).note  # no archived screen
        # a tag beside a word no memory holds ("text spend or tags ..."): the archived with the tag count too
        mem.record("offer", "Ana's offer, for the record", outcome="success", tags=["ana"], ts=NOW - dt.timedelta(days=1))
        old_ana = mem.record("offer", "Ana's first offer", outcome="failure", tags=["ana"], ts=NOW - dt.timedelta(days=60))
        mem.archive(old_ana.id)
        assert "Also 1 archived match" in mem.ask("How much did we spend on Ana?", now=NOW).note
        mem.erase(ids=[old[2].id], reason="asked to")  # an archived memory erased changes no document: still counted right
        assert "Also 2 archived matches (latest 2026-04-03)" in mem.ask("Which offers were declined?", now=NOW).note
        mem.restore(old[0].id)
        r = mem.ask("Which offers were declined?", now=NOW)
        assert r.total == 2 and "Also 1 archived match (latest 2026-04-03)" in r.note
        window = mem.ask("Which offers were declined in the last month?", now=NOW)
        assert window.total == 1 and "archived" not in window.note  # none archived in the window


def test_the_archived_count_reads_what_the_archived_headers_say(tmp_path: Path) -> None:
    """The count of archived matches comes from a digest kept between questions; it matches what a
    walk of the archived headers matches, for every filter a question can carry (brute force)."""
    rng = random.Random(7)
    words = "deploy checkout billing webhook retry lock canary invoice".split()
    archived = 0
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        for i in range(120):
            ep = mem.record(
                rng.choice(["debug", "review"]),
                " ".join(rng.sample(words, 3)),
                outcome=rng.choice(["success", "failure", "partial"]),
                tags=rng.sample(["alpha", "beta", "gamma"], rng.randint(0, 2)),
                participants=rng.sample(["Dana", "Lee"], rng.randint(0, 1)),
                ts=NOW - dt.timedelta(days=200 - i),
            )
            if rng.random() < 0.7:
                mem.archive(ep.id)
                archived += 1
        queries: OwnerQueries = mem._queries
        digest = queries._archived_digest()
        assert digest is not None and len(digest) == archived
        headers = [(str(s[2]), db.globals["EPST"][("ana", str(s[2]))]) for s, _ in db.globals["EPAR"].items(("ana",))]

        def walked(q: Query) -> list[str]:  # the reference: every archived header, read and matched
            out = []
            for eid, h in headers:
                ts, tags, words = ms(h["ts"]), set(h["tags"]), set(tokenize(archived_words(h)))
                if (q.lo is not None and ts < q.lo) or (q.hi is not None and ts >= q.hi) or not set(q.tags) <= tags:
                    continue
                if (q.any_tags and not set(q.any_tags) & tags) or (q.kind and h["kind"] != q.kind):
                    continue
                if (q.outcome and h.get("outcome") != q.outcome) or (q.session and h.get("session") != q.session):
                    continue
                if q.terms and q.terms_required and not set(q.terms) & words and not set(q.boost_tags) & tags:
                    continue
                out.append(eid)
            return out

        for _ in range(200):
            lo = ms(NOW - dt.timedelta(days=rng.randint(0, 220))) if rng.random() < 0.5 else None
            q = Query(
                lo=lo, hi=lo + 40 * 86_400_000_000 if lo is not None and rng.random() < 0.7 else None,
                tags=tuple(rng.sample(["alpha", "beta"], rng.randint(0, 1))),
                any_tags=tuple(rng.sample(["beta", "gamma"], rng.randint(0, 2))),
                terms=tuple(rng.sample(["deploy", "lock", "dana", "alpha", "nothing"], rng.randint(0, 2))),
                terms_required=rng.random() < 0.8, kind=rng.choice([None, "debug"]), outcome=rng.choice([None, "failure"]), session=None,
                boost_tags=tuple(rng.sample(["alpha", "gamma"], rng.randint(0, 1))),
            )  # fmt: skip
            want = walked(q)
            assert [digest.ids[i] for i in digest.matches(q)] == want
            assert [eid for eid, _, _ in queries._archived_matches(q, None)] == want


def ms(at: dt.datetime) -> int:
    return int(at.timestamp() * 1_000_000)


def test_an_archived_memory_keeps_the_words_of_its_decisions(tmp_path: Path) -> None:
    """A recruiter's "Which candidates did we reject in October?" found the debrief whose decisions
    say {"next": "reject"} until it was archived; then nothing matched "at any time", since the
    one-liner kept hot holds no decision. Archiving keeps the decisions' words in the header."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.configure(typed_kinds=["debrief"])
        mem = db.owner("recruiter")
        ep = mem.record("debrief", "Debrief for Maya (backend): panel split", outcome="failure", decisions={"next": "reject"})
        mem.archive(ep.id)
        r = mem.ask("Which candidates did we reject?", now=NOW)
        assert not r.found and "1 archived match" in r.note
        r = mem.ask("Which candidates did we reject this month?", now=NOW)
        assert "No active memory matches at any time either. 1 archived match" in r.note  # no more "nothing matches"
        assert [m.id for m in mem.ask("Which candidates did we reject?", now=NOW, include_archived=True)] == [ep.id]
        assert [m.id for m in mem.ask("What did we decide?", now=NOW, include_archived=True)] == [ep.id]


def test_ever_asks_of_any_time_the_archived_too(tmp_path: Path) -> None:
    """ "Did we ever interview Kenji?" of a recruiter whose Kenji memories were all archived was an
    empty answer (its note counted them): "ever" asks of any time, and forgetting erases no
    experience, so the archived memories answer it as they do an ordered question."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        db.configure(typed_kinds=["interview"])
        mem = db.owner("recruiter")
        ep = mem.record("interview", "Onsite with Kenji for backend", outcome="success", tags=["kenji"], lesson="send the take-home first")
        again = mem.record("interview", "Second onsite with Kenji", outcome="failure", tags=["kenji"], lesson="send the take-home first")
        mem.archive(ep.id)
        mem.archive(again.id)
        assert not mem.ask("Did we interview Kenji?", now=NOW).found
        r = mem.ask("Did we ever interview Kenji?", now=NOW)
        assert r.interpretation.include_archived and {m.id for m in r} == {ep.id, again.id}
        assert mem.history(kind="interview").lessons == ["send the take-home first"]  # each lesson once


def test_an_archived_match_is_scored_at_the_average_length(tmp_path: Path) -> None:
    """An archived memory's one-liner is no document of its own length: BM25 takes the average
    length for it, not the few words of its one-liner (which scored it as a very short document)."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        old = mem.record("debug", "Webhook retry storm on checkout", outcome="failure", content="long " * 40)
        for i in range(10):
            mem.record("debug", f"other thing {i}", outcome="success", content="filler " * (i * 10))
        mem.archive(old.id)
        r = mem.recall(text="webhook retry storm", include_archived=True, now=NOW)
        (hit,) = r.memories
        queries: OwnerQueries = mem._queries
        idf, _ = queries._bm25_weights(queries._compile(r.interpretation))
        assert f"(bm25 {sum(idf.values()):.2f})" in hit.why[0]  # tf 1 at the average length: each term's idf


def test_a_name_is_no_question_word(tmp_path: Path) -> None:
    """ "Have we talked to Jane Doe?" asked of "talked" and "jane": "does" makes the question word
    "doe", so the name was dropped, and the verb was a word no memory held."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        doe = mem.record("exchange", "Call with Jane Doe about the renewal", tags=["renewal"])
        mem.record("exchange", "Call with Jane Smith about hiring")
        r = mem.ask("Have we talked to Jane Doe?", now=NOW)
        assert r.interpretation.words == ("jane", "doe") and r.memories[0].id == doe.id and not r.partial
        assert mem.ask("What does Jane want?", now=NOW).interpretation.words == ("jane", "want")  # "does" still asks


def test_an_unmatched_word_says_archived_full_records_are_not_searched(tmp_path: Path) -> None:
    """A bookkeeper's "DE287451369" (a VAT id in an archived invoice's content) said "no memory
    mentions" it, with include_archived=True too: the archived are searched by what stays hot of
    them, and the note says so where the owner has archived memories."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("books")
        r = mem.ask("DE287451369", now=NOW)
        assert "Archived memories" not in r.note  # nothing archived: nothing unsearched
        ep = mem.record("review", "Invoice to Globex checked", outcome="success", tags=["globex"], content="VAT id DE287451369")
        mem.archive(ep.id)
        for archived in (False, True):
            r = mem.ask("DE287451369", now=NOW, include_archived=archived)
            assert not r.found and r.note.endswith(
                "Archived memories are searched by their one-line summaries, tags and decisions, not their full records."
            )


def test_the_archived_digest_outlives_capture_and_follows_the_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting archived matches beside every answer reads a digest of the archive, made once: a
    capture (which changes the hot documents only) keeps it, an archive or a restore remakes it.
    Past ``_DIGESTED`` archived memories the note says they were not counted, walking nothing."""
    from memdb.query import engine

    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        old = [mem.record("debug", f"deploy {i} failed", outcome="failure", ts=NOW - dt.timedelta(days=40 + i)) for i in range(3)]
        for e in old[:2]:
            mem.archive(e.id)
        queries: OwnerQueries = mem._queries
        first = queries._archived_digest()
        mem.record("debug", "deploy went fine", outcome="success")
        assert queries._archived_digest() is first and "Also 2 archived matches" in mem.ask("deploy", now=NOW).note
        mem.archive(old[2].id)
        assert queries._archived_digest() is not first and "Also 3 archived matches" in mem.ask("deploy", now=NOW).note
        monkeypatch.setattr(engine, "_DIGESTED", 2)
        note = mem.ask("deploy", now=NOW).note
        assert note.endswith("Archived memories (more than 2) are not counted here; include_archived=True searches them too.")
        assert len(mem.ask("deploy", now=NOW, include_archived=True)) == 4  # the walk of the headers, as before


def test_an_empty_answer_says_what_other_kinds_match(tmp_path: Path) -> None:
    """ "Any failed card payments this month?" of a bookkeeper whose declined card was recorded as
    an expense said nothing matched: where a kind emptied the answer, the note counts the
    memories of other kinds matching the rest."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        db.configure(typed_kinds=["expense", "payment"])
        mem = db.owner("books")
        mem.record("expense", "Workspace renewal failed: card declined", outcome="failure", tags=["card"], ts=NOW - dt.timedelta(hours=2))
        mem.record("payment", "Paid Hetzner by transfer", outcome="success", tags=["hetzner"], ts=NOW - dt.timedelta(hours=2))
        r = mem.ask("Any failed card payments this month?", now=NOW)
        assert not r.found and r.note.endswith("1 memory of another kind matches the rest (expense); ask without the kind to see it.")
        assert "another kind" not in mem.ask("Any payments to Hetzner this month?", now=NOW).note  # found: nothing to add


def test_the_digests_kept_are_the_most_recently_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server answering many owners in turn rebuilt a digest on every question when the first
    made was the first evicted: the least recently used goes, while the digests kept hold more
    archived memories than ``_DIGESTS_KEPT``."""
    from memdb.query import engine

    monkeypatch.setattr(engine, "_DIGESTS_KEPT", 4)
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        handles = {}
        for name in ("a", "b", "c"):
            mem = handles[name] = db.owner(name)
            for i in range(2):
                mem.archive(mem.record("debug", f"deploy {i}", outcome="failure", ts=NOW - dt.timedelta(days=40 + i)).id)
        digest = {name: h._queries._archived_digest() for name, h in handles.items() if name != "c"}  # a, b kept (4)
        assert handles["a"]._queries._archived_digest() is digest["a"]  # a used: b is the least recent
        handles["c"]._queries._archived_digest()  # c in, b out
        assert handles["a"]._queries._archived_digest() is digest["a"]
        assert handles["b"]._queries._archived_digest() is not digest["b"]


def test_an_answer_before_any_archive_does_not_hide_a_later_one(tmp_path: Path) -> None:
    """Whether an owner has archived memories is remembered between answers (most have none):
    archiving forgets it, so the next answer counts the archived match."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        failed = mem.record("debug", "deploy failed", outcome="failure", ts=NOW - dt.timedelta(hours=2))
        mem.record("debug", "deploy ok", outcome="success", ts=NOW - dt.timedelta(hours=1))
        assert "archived" not in mem.ask("deploy", now=NOW).note
        mem.archive(failed.id)
        assert mem.ask("deploy", now=NOW).note.endswith("Also 1 archived match (latest 2026-07-01); include_archived=True to see it.")


def test_history_names_the_last_failure_older_than_the_attempts_listed(tmp_path: Path) -> None:
    """ "12 past attempts (11 success, 1 failure)." named no last failure where the failure was
    older than the attempts listed: it is named all the same."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        mem.record("debug", "checkout deploy broke", outcome="failure", tags=["checkout"], ts=NOW - dt.timedelta(days=30))
        for i in range(4):
            mem.record("debug", f"checkout deploy {i}", outcome="success", tags=["checkout"], ts=NOW - dt.timedelta(days=10 - i))
        h = mem.history(kind="debug", tags=["checkout"], limit=3)
        assert h.total == 5 and len(h.attempts) == 3 and "Last failure 2026-06-01: checkout deploy broke." in str(h)


def test_attempts_and_a_tag_scope_filter_before_the_limit(team: memdb.Memory) -> None:
    """``prepare``'s filters (``recall(with_outcome=..., scope_tags=...)``): chat about a task
    took every slot of its best text matches, and records of other tags every slot of a scoped
    one; filtered before the limit, hot and archived alike, none of theirs is crowded out."""
    queries: OwnerQueries = team._queries
    for i in range(12):
        team.record_exchange(f"c{i}", "When is the deploy window for Project X?", "Soon.", tags=["chat"])
    assert all(m.episode.kind == "exchange" for m in queries.recall(text="deploy window", limit=3, now=NOW).memories)
    for include_archived in (False, True):
        found = queries.recall(text="deploy window", limit=3, now=NOW, include_archived=include_archived, with_outcome=True)
        assert [m.episode.summary for m in found.memories] == ["Deploy of Project X failed: migration lock"] and found.total == 1
    assert "with an outcome" in str(found.interpretation)
    scoped = queries.recall(text="retry", limit=5, now=NOW, include_archived=True, scope_tags=["billing"])
    assert [m.episode.summary for m in scoped.memories] == ["Billing review: retry the invoice export"]  # not Twilio's
    team.record("debug", "Retry the nightly export", outcome="partial", ts=NOW - dt.timedelta(hours=1))  # no tags: in any scope
    scoped = queries.recall(text="retry", limit=5, now=NOW, scope_tags=["billing"], with_outcome=True)
    assert {m.episode.summary for m in scoped.memories} == {"Retry the nightly export", "Billing review: retry the invoice export"}
    assert queries.recall(tags=["chat"], limit=5, now=NOW, with_outcome=True).total == 0  # one tag's range, read as columns otherwise
    for m in queries.recall(text="retry deploy window", limit=50, now=NOW).memories:
        team.archive(m.episode.id)  # from what stays hot of them
    found = queries.recall(text="deploy window", limit=3, now=NOW, include_archived=True, with_outcome=True)
    assert [m.episode.status for m in found.memories] == ["archived"] and found.total == 1
    scoped = queries.recall(text="retry", limit=5, now=NOW, include_archived=True, scope_tags=["billing"])
    assert {m.episode.tags for m in scoped.memories} == {(), ("billing",)} and scoped.total == 2


def test_the_lessons_of_failures_are_read_past_those_without_one(team: memdb.Memory) -> None:
    """What ``prepare`` asks of the query layer beside recall: the lessons of the failures
    matching a task, best first, read past those without one, within the tags given."""
    queries: OwnerQueries = team._queries
    lesson = team.record("debug", "Deploy failed on the lock", outcome="failure", lesson="take the lock with a timeout",
                         ts=NOW - dt.timedelta(days=9)).id  # fmt: skip
    for i in range(6):
        team.record("debug", f"Deploy failed {i}", outcome="failure", ts=NOW - dt.timedelta(hours=i + 1))
    (hit,) = queries.failure_lessons(text="deploy", limit=3, now=NOW)
    assert hit.episode.id == lesson and queries.failure_lessons(text="deploy", skip={lesson}, now=NOW) == []
    assert queries.failure_lessons(tags=["project-x"], now=NOW) == []  # Project X's failure holds none; this one has no tags
    (either,) = queries.failure_lessons(text="lock", tags=["project-x"], now=NOW)  # a tag or a word, within the tags or untagged
    assert either.episode.id == lesson
    team.record("debug", "Lock on billing failed", outcome="failure", tags=["billing"], lesson="ask billing", ts=NOW - dt.timedelta(days=1))
    assert [h.episode.id for h in queries.failure_lessons(text="lock", tags=["project-x"], now=NOW)] == [lesson]  # not billing's


def test_a_task_s_missing_names_are_read_as_ask_reads_them(team: memdb.Memory) -> None:
    """``prepare`` asks the query layer which names of a task no memory holds (archived ones
    count), where ask answers with nothing: re-read there, "Deploy Project Zeta" got Project X's records."""
    queries: OwnerQueries = team._queries
    assert queries.missing_names("Deploy Project Zeta", NOW) == ("Zeta",) and not team.ask("Deploy Project Zeta", now=NOW).found
    assert queries.missing_names("Deploy Project X", NOW) == () and queries.missing_names("deploy project zeta", NOW) == ()
    (old,) = team.recall(text="migration lock", limit=1, now=NOW).memories
    zeta = team.supersede(old.episode.id, reason="named", summary="Deploy of Project Zeta failed: migration lock")
    assert queries.missing_names("Deploy Project Zeta", NOW) == ()
    team.archive(zeta.id)  # its one-liner stays hot, and names it
    assert queries.missing_names("Deploy Project Zeta", NOW) == ()
