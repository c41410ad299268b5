"""How ``ask`` reads a question's words: a kind's name is a kind only where such memories exist,
and question words ("show", "remember", "year") rank the matches of the other words without
matching anything themselves."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from query_times import at

import memdb


def _ids(result: memdb.RecallResult) -> list[str]:
    return [m.episode.id for m in result]


def test_a_kind_name_is_a_word_where_no_memory_has_that_kind(qdb: memdb.Database) -> None:
    mem = qdb.owner("ana")
    turn = mem.record("exchange", "Researching adoption agencies, it's been a dream", tags=["caroline"], ts=at(2))
    mem.record("exchange", "We went camping in the mountains", tags=["melanie"], ts=at(3))
    r = mem.ask("What did Caroline research?")
    assert r.interpretation.kind is None and "research" in r.interpretation.terms
    assert _ids(r) == [turn.id]
    # once the owner records research episodes, the same word asks for them
    study = mem.record("research", "Compared two adoption agencies", outcome="success", tags=["caroline"], ts=at(4))
    r = mem.ask("What did Caroline research?")
    assert r.interpretation.kind == "research" and _ids(r) == [study.id]


def test_an_outcome_word_is_a_word_where_no_memory_has_an_outcome(qdb: memdb.Database) -> None:
    mem = qdb.owner("ana")
    advice = mem.record("exchange", "Build relationships with your customers: that makes a business last", tags=["jon"], ts=at(2))
    mem.record("exchange", "We went camping in the mountains", tags=["gina"], ts=at(3))
    r = mem.ask("What advice does Jon give about running a successful business?")
    assert r.interpretation.outcome is None and "successful" in r.interpretation.words
    assert _ids(r) == [advice.id]
    # once the owner records episodes with outcomes, the same word asks for them
    won = mem.record("review", "Business review: the launch went well", outcome="success", tags=["jon"], ts=at(4))
    mem.record("review", "Business review: the pricing test flopped", outcome="failure", tags=["jon"], ts=at(5))
    r = mem.ask("Which business reviews were successful?")
    assert r.interpretation.outcome == "success" and _ids(r) == [won.id]


def test_question_words_rank_the_matches_but_match_nothing(qdb: memdb.Database) -> None:
    mem = qdb.owner("ana")
    pasta = mem.record("exchange", "Cooking pasta with a friend tonight, cooking is fun", ts=at(2))
    show = mem.record("exchange", "I taught vegan recipes on my own cooking show", ts=at(1))
    mem.record("exchange", "The show last night was long", ts=at(3))  # a question word alone
    r = mem.ask("When did I attend a cooking show?")
    assert r.interpretation.terms == ("attend", "cook")  # "show" asks, it does not filter
    assert _ids(r) == [show.id, pasta.id]  # the memory that holds "show" too ranks first
    # without other words a question word is no search at all: everything, newest first
    assert next(m.episode.summary for m in mem.ask("show me")) == "The show last night was long"


def test_an_issue_or_a_problem_says_how_a_thing_is_asked(qdb: memdb.Database) -> None:
    """ "Did we ever fix the webhook issue?" of a support agent ranked every VAT ticket that
    "issued a corrected invoice" above the webhook escalations: the stemmer makes "issu" of both,
    and "issued" was rarer than "webhook". "The webhook issue", "VAT problems" and "have we seen"
    ask about the webhook and the VAT: the words rank where a memory holds them and match nothing
    themselves; before another noun they name a thing ("the issue tracker")."""
    mem = qdb.owner("support")
    for day in range(2, 6):
        mem.record("exchange", f"Invoice {day} shows wrong VAT; issued a corrected invoice", ts=at(day))
    hook = mem.record("exchange", "Webhook deliveries dropped for Globex", ts=at(1))
    tracker = mem.record("exchange", "Moved the issue tracker to Linear", ts=at(1, 9))
    r = mem.ask("Did we ever fix the webhook issue?")
    assert r.interpretation.terms == ("fix", "webhook") and _ids(r) == [hook.id]
    r = mem.ask("Have we seen VAT problems before?")
    assert r.interpretation.terms == ("vat",) and len(_ids(r)) == 4 and not r.partial
    assert _ids(mem.ask("Where is the issue tracker?"))[0] == tracker.id  # "issue" matches "issued" too: ranked below
    # "related" and "concerning" are no such words: their stems are "relational" and "concerns"
    assert mem.ask("Any relational database concerns?").interpretation.words == ("relational", "database", "concerns")


def test_lately_asks_how_and_late_asks_what(qdb: memdb.Database) -> None:
    """ "Which homework was late?" of a tutor answered every homework: "lately" is a question word,
    and the stemmer makes "late" of it, so "late" was dropped too. "lately" is dropped as written."""
    mem = qdb.owner("tutor")
    late = mem.record("exchange", "Leo turned in the decimals homework late", ts=at(20))
    mem.record("exchange", "Sam's fractions homework was done on time", ts=at(21))
    r = mem.ask("Which homework was late?")
    assert r.interpretation.words == ("homework", "late") and _ids(r)[0] == late.id
    assert mem.ask("What homework came in lately?").interpretation.words == ("homework",)


@pytest.mark.parametrize("others", [0, 40])
def test_phrases_name_tags_whether_the_owner_has_few_tags_or_many(qdb: memdb.Database, others: int) -> None:
    """ask lists the tags of an owner with no more tags than the question has words, and seeks
    each phrase's tag otherwise: both find the same tags, multi-word ones too."""
    mem = qdb.owner("ana")
    for i in range(others):
        mem.record("exchange", f"note {i}", tags=[f"topic-{i}"], ts=at(5))
    release = mem.record("exchange", "Rolled out the build", tags=["project-x", "release-train"], ts=at(2))
    mem.record("exchange", "Rolled out another build", tags=["project-x"], ts=at(3))
    r = mem.ask("What happened with Project X on the release train?")
    assert r.interpretation.tags == ("project-x", "release-train") and _ids(r) == [release.id]
    r = mem.ask("What about the Project?")  # a word that begins a tag but names none
    assert r.interpretation.tags == () and r.interpretation.terms == ("project",)
    if others:
        r = mem.ask("Anything on topic 7?")
        assert r.interpretation.tags == ("topic-7",) and [m.episode.summary for m in r] == ["note 7"]


@pytest.mark.parametrize("others", [0, 40])
def test_a_tag_is_named_by_its_plural_and_while_only_archived_memories_carry_it(qdb: memdb.Database, others: int) -> None:
    """ "billing-api deploys" was the word "deploys" or tag billing-api (every billing-api memory
    and other projects' deploys answered), and "web-02 incident" the same once maintain had
    archived every incident: a year-of-use probe's finds. The plural, and a word whose stem is a
    tag, name the tag; a tag only archived memories carry is a tag still."""
    mem = qdb.owner("ana")
    for i in range(others):
        mem.record("exchange", f"note {i}", tags=[f"topic-{i}"], ts=at(5))
    deploy = mem.record("debug", "Deploy billing-api v1.2", outcome="success", tags=["billing-api", "deploy"], ts=at(3))
    mem.record("debug", "Billing-api invoice job crashed", outcome="failure", tags=["billing-api"], ts=at(3))
    mem.record("debug", "Deploy web-02 config", outcome="success", tags=["web-02", "deploy"], ts=at(3))
    outage = mem.record("debug", "Outage: web-02 disk full", outcome="failure", tags=["web-02", "incident"], ts=at(2))
    for question in ("billing-api deploy", "billing-api deploys", "billing-api deployments"):
        r = mem.ask(question)
        assert r.interpretation.tags == ("billing-api", "deploy") and _ids(r) == [deploy.id], question
    mem.archive(outage.id)
    r = mem.ask("web-02 incidents", include_archived=True)
    assert r.interpretation.tags == ("web-02", "incident") and _ids(r) == [outage.id]
    # without the archived memories, their tags would only hide the hot memories saying the word
    hot = mem.ask("web-02 incidents").interpretation
    assert "incident" not in (*hot.tags, *hot.boost_tags) and hot.words == ("incidents",)
    assert mem.ask("what does the news say?").interpretation.tags == ()  # how a thing is asked is no tag
    # a plural alone, or one naming an outcome or a kind, stays a word (a review's finds)
    flaky = mem.record("debug", "The integration tests failed on CI", outcome="failure", tags=["ci"], ts=at(4))
    mem.record("debug", "Unit test harness", outcome="success", tags=["test"], ts=at(4))
    assert _ids(mem.ask("what tests failed?")) == [flaky.id]
    r = mem.ask("billing-api failures")
    assert r.interpretation.outcome == "failure" and r.interpretation.tags == ("billing-api",)


# --- "the last three deploys": the newest (oldest) memories, in time order -----------------------


def test_the_last_and_the_first_are_the_newest_and_the_oldest(team: memdb.Memory) -> None:
    last = team.ask("What was the last deploy failure?")
    assert (last.interpretation.order, last.interpretation.count) == ("newest", 1)
    assert [m.episode.summary for m in last] == ["Deploy failed again: migration lock"]
    first = team.ask("What was the first deploy failure?")
    assert [m.episode.summary for m in first] == ["Deploy of Project X failed: migration locked the users table"]
    two = team.ask("How did the last two Project X memories go?")  # two: as many as said, newest first
    assert [m.episode.ts for m in two] == [at(29, 8), at(25, 16)] and "newest first, 2" in str(two.interpretation)
    several = team.ask("What were the latest deploys?")  # a plural without a number: as many as the limit
    assert several.interpretation.count is None and [m.episode.ts for m in several] == [at(29, 8), at(23, 10)]
    assert "three" not in str(team.ask("How did the last three deploys go?").interpretation)  # a count, not a word


def test_when_did_we_last_asks_for_the_newest_of_what_the_question_names(qdb: memdb.Database) -> None:
    """ "When did we last call Acme?" ranked every call with Acme's by score, the newest third;
    "did we last/first <verb>" asks for the newest (oldest) one, as "the last call" does. And a
    named tag beside the words (memories with the tag or the words match, the tag ranks) holds
    for the order too: "the last time we called Globex" was the newest call of anyone's, and
    "when did we last talk to Initech?" (no memory says "talk") is Initech's newest memory."""
    qdb.configure(typed_kinds=("call", "demo"))
    mem = qdb.owner("sdr")
    first = mem.record("call", "Call with Sarah at Acme", outcome="success", tags=["acme"], ts=at(2))
    failed = mem.record("call", "Call with Sarah at Acme: pricing", outcome="failure", tags=["acme"], ts=at(9))
    newest = mem.record("call", "Call with Sarah at Acme", outcome="partial", tags=["acme"], ts=at(12))
    mem.record("demo", "Demo for Acme: pricing questions, the call went long", outcome="success", tags=["acme"], ts=at(20))
    globex = mem.record("call", "Called Hank at Globex", outcome="success", tags=["globex"], ts=at(14))
    mem.record("call", "Called Bill at Initech", outcome="success", tags=["initech"], ts=at(18))
    initech = mem.record("demo", "Demo for Initech", outcome="success", tags=["initech"], ts=at(19))
    for question, order, ids in (
        ("When did we last call Acme?", "newest", [newest.id]),
        ("When did we first call Acme?", "oldest", [first.id]),
        ("When did Sarah last mention pricing?", "newest", None),  # a name of more words than one: below
        ("When was the last time we called Globex?", "newest", [globex.id]),
        ("When did we last talk to Initech?", "newest", [initech.id]),
    ):
        r = mem.ask(question)
        assert (r.interpretation.order, r.interpretation.count) == (order, 1), question
        assert ids is None or [m.id for m in r] == ids, question
    # a one-word tag is a word of the memories naming it: the call that names Globex untagged is
    # the last time we called Globex (a tag of several words, "Project X", would be required)
    again = mem.record("call", "Called Globex again about the renewal", outcome="partial", ts=at(16))
    for question, order, ids in (
        ("When was the last time we called Globex?", "newest", [again.id]),
        ("When did we last call Globex?", "newest", [again.id]),
        ("When did we first call Globex?", "oldest", [globex.id]),
    ):
        r = mem.ask(question)
        assert (r.interpretation.order, r.interpretation.count) == (order, 1), question
        assert ids is None or [m.id for m in r] == ids, question
    assert "last" not in mem.ask("When did Sarah Jane Smith last call?").interpretation.words
    r = mem.ask("When did acme last fail?")  # a subject of one word
    assert (r.interpretation.order, r.interpretation.outcome, [m.id for m in r]) == ("newest", "failure", [failed.id])
    r = mem.ask("When did latency last go down?")  # a metric goes down when a fix works: no outcome
    assert r.interpretation.outcome is None
    assert mem.ask("What did we do last week?").interpretation.order == ""  # a time phrase
    assert mem.ask("Did the call last long?").interpretation.order == ""  # a verb: a question word comes first
    assert mem.ask("How did the demo last so long?").interpretation.order == ""  # lasting a span
    r = mem.ask("When did the Acme account last fail?")  # two words after "the"
    assert (r.interpretation.order, r.interpretation.count) == ("newest", 1)
    r = mem.ask("Which calls did we last make?")  # as many as the limit
    assert (r.interpretation.order, r.interpretation.count) == ("newest", None)
    assert mem.ask("What version did we first ship?").interpretation.order == "oldest"
    # no memory has both tags, so either answers: the newest of either is no answer, ranked and said
    r = mem.ask("When did Initech last demo for Acme?")
    assert r.interpretation.order == "" and "newest first" in r.interpretation.ignored


def test_an_ordered_answer_holds_the_archived_memories(tmp_path: Path) -> None:
    """ "When did Leo first take a quiz?" of a tutor three months on answered with the oldest quiz
    still hot, in November, though Leo's first quiz, in September, was archived: forgetting never
    erases experience, and what an archived memory keeps hot (its time, kind, outcome, one-liner)
    answers it. A question asking for the first or last searches the archived memories too, and
    its interpretation says so."""
    now = [dt.datetime(2026, 9, 1, 15, tzinfo=dt.UTC)]
    db = memdb.open(tmp_path / "tutor", clock=lambda: now[0])
    db.configure(typed_kinds=("quiz", "lesson"))
    mem = db.owner("tutor")
    first = mem.record("quiz", "Leo: quiz on fractions", outcome="failure", tags=["leo"])
    now[0] += dt.timedelta(days=70)
    assert db.maintain().archived == 1
    latest = mem.record("quiz", "Leo: quiz on decimals", outcome="success", tags=["leo"])
    now[0] += dt.timedelta(days=1)
    r = mem.ask("When did Leo first take a quiz?")
    assert r.interpretation.include_archived and [(m.id, m.episode.status) for m in r] == [(first.id, "archived")]
    assert [m.id for m in mem.ask("How did Leo do on the last quiz?")] == [latest.id]
    assert [m.id for m in mem.ask("Leo's quizzes")] == [latest.id]  # unordered: the hot ones, and the archived one counted
    assert "Also 1 archived match (latest 2026-09-01)" in mem.ask("Leo's quizzes").note
    # a word only the archived quiz holds is asked all the same: the newest quiz on fractions is
    # the archived one, not the newest quiz (a recruiter's "data engineer" answered with a backend one)
    assert [m.id for m in mem.ask("When did Leo last take a quiz on fractions?")] == [first.id]
    # an empty window said "Nothing matches at any time either" of the failed quiz, archived
    r = mem.ask("Any failed quizzes this week?")
    assert not r.found and r.note == (
        "Nothing found for window this week (2026-11-09 to 2026-11-15), recorded or told of; kind quiz; outcome failure."
        " No active memory matches at any time either; 1 archived match at other times, latest 2026-09-01;"
        " ask without the window and with include_archived=True to see them. 1 attempt went otherwise, the newest 2026-11-10: success."
    )
    db.close()


def test_tool_calls_are_events_put_in_time_order(tmp_path: Path) -> None:
    """ "What was the last error from the payments API?" of a coding agent ranked its tool calls
    by score and said it ignored "newest first": only memories with an outcome were events, and
    a word no memory holds ("API") left no memory holding every word. A tool call is recorded as
    it runs, so it is an event; the order is of the words some memory holds, and the answer is
    labelled partial for the others."""
    now = [at(10)]
    db = memdb.open(tmp_path / "coder", clock=lambda: now[0])  # gateway capture is live: the clock moves
    mem = db.owner("coder")
    ids = []
    calls = [("payments", "ECONNRESET"), ("users", "E11000 duplicate key"), ("payments", "upstream timeout")]
    for day, (service, error) in enumerate(calls):
        now[0] = at(10 + day)
        call = mem.record_tool_call(f"s{day}", "http_request", {"service": service})
        mem.record_tool_result(call.id, {"error": error})
        ids.append(call.id)
    now[0] = at(20)
    mem.record_exchange(session="c1", user_message="why do payments errors keep coming?", response="looking")
    r = mem.ask("What was the last error from the payments API?")
    assert (r.interpretation.order, [m.id for m in r]) == ("newest", [ids[2]]) and r.partial
    r = mem.ask("What was my first tool call?")
    assert (r.interpretation.kind, [m.id for m in r]) == ("tool_call", [ids[0]])
    # where talk matches too, a tool call is no answer to when one talked: ranked, and said
    r = mem.ask("When did I first ask about payments errors?")
    assert r.interpretation.order == "" and r.interpretation.ignored == ("oldest first",)
    db.close()


def test_in_chronological_order_puts_every_match_in_time_order(team: memdb.Memory) -> None:
    """ "Everything about the deploys in chronological order" searched "chronological" (a partial
    answer, ranked); "oldest first", "newest first" and "reverse chronological order" alike."""
    asked = {
        q: team.ask(q)
        for q in ("Show me the deploy failures in chronological order", "deploy failures, oldest first",
                  "deploy failures, newest first", "the deploy failures in reverse chronological order")
    }  # fmt: skip
    orders = [r.interpretation.order for r in asked.values()]
    assert orders == ["oldest", "oldest", "newest", "newest"] and all(r.interpretation.count is None for r in asked.values())
    oldest = [m.episode.ts for m in asked["deploy failures, oldest first"]]
    assert oldest == sorted(oldest) and len(oldest) == 2 and not any(r.partial for r in asked.values())
    assert [m.episode.ts for m in asked["deploy failures, newest first"]] == oldest[::-1]


def test_talk_is_not_put_in_time_order(qdb: memdb.Database) -> None:
    """As for an event (test_event_anchors): an exchange is recorded when something is said,
    so the first turn to mention a tournament is no first tournament; ranked as usual, and said."""
    mem = qdb.owner("ana")
    mem.record("exchange", "Nate said the video game tournament is next week", ts=at(2))
    won = mem.record("exchange", "Nate: I won my first video game tournament!", ts=at(9))
    r = mem.ask("When did Nate win his first video game tournament?")
    assert r.interpretation.order == "" and r.interpretation.ignored == ("oldest first",)
    assert r.memories[0].id == won.id


def test_too_many_to_order_are_ranked_and_said(team: memdb.Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdb.query import engine

    monkeypatch.setattr(engine, "_ORDERED_READ", 1)
    r = team.ask("What was the last deploy failure?")
    assert r.interpretation.ignored == ("newest first",) and r.found and len(r.memories) == 2


def test_the_owners_own_name_asks_about_the_owner(qdb: memdb.Database) -> None:
    """ "What does Kim prefer?" asked of owner "kim": no memory says "Kim", as every one is hers;
    the name was a missing name and emptied the answer. Where memories do say it, it filters as
    any word; and the word written in lower case ("the default timeout") is a word as ever."""
    kim = qdb.owner("kim")
    editor = kim.record("fact", "Editor: Neovim", key="editor")
    r = kim.ask("What does Kim prefer?")
    assert r.interpretation.missing_names == () and [m.id for m in r] == [editor.id]
    default = qdb.owner("default")
    default.record("debug", "Raised the request timeout to 30 s", outcome="success", ts=at(3))
    assert default.ask("What is the default timeout?").interpretation.unmatched == ("default",)  # a word, named as missing


def test_an_ordered_tag_word_is_named_as_written(tmp_path: Path) -> None:
    """ "When did we last interview a designer?" answered with a backend onsite whose text says
    "strong system design": to the index "designer" is "design". A one-word tag the stemmer
    shortens names an untagged memory only where it writes the tag (or its plural) as a word."""
    now = [dt.datetime(2026, 11, 2, 13, tzinfo=dt.UTC)]
    db = memdb.open(tmp_path / "hiring", clock=lambda: now[0])
    db.configure(typed_kinds=("interview",))
    mem = db.owner("recruiter")
    zoe = mem.record("interview", "Portfolio review with Zoe for the designer role", outcome="success", tags=["zoe", "designer"])
    now[0] += dt.timedelta(days=10)
    kim = mem.record("interview", "Kim, one of two designers we met: good critique", outcome="success", tags=["kim"])
    now[0] += dt.timedelta(days=12)
    mem.record("interview", "Onsite with Priya for backend: strong system design", outcome="success", tags=["priya", "backend"])
    now[0] += dt.timedelta(days=1)
    assert [m.id for m in mem.ask("When did we last interview a designer?")] == [kim.id]  # untagged, writes "designers"
    assert [m.id for m in mem.ask("When did we first interview a designer?")] == [zoe.id]
    db.close()


def test_the_act_an_ordered_question_asks_the_time_of_names_its_kind(tmp_path: Path) -> None:
    """ "When did we first source from LinkedIn?" asked the word "source" beside the LinkedIn tag;
    no memory held both, so either answered, ranked, with a GitHub sourcing first. The verb of an
    ordered question names the kind it shares a term with (kind "sourcing")."""
    now = [dt.datetime(2026, 1, 5, 10, tzinfo=dt.UTC)]
    db = memdb.open(tmp_path / "hiring", clock=lambda: now[0])
    db.configure(typed_kinds=("sourcing", "screen"))
    mem = db.owner("recruiter")
    mem.record("sourcing", "Sourced Kenji from GitHub for backend", outcome="success", tags=["kenji", "github"])
    now[0] += dt.timedelta(days=1)
    outreach = mem.record("sourcing", "LinkedIn outreach campaign for SRE: 2 replies", outcome="partial", tags=["linkedin"])
    now[0] += dt.timedelta(days=3)
    mem.record("screen", "Screened Nina (came in from LinkedIn)", outcome="success", tags=["nina", "linkedin"])
    now[0] += dt.timedelta(days=1)
    r = mem.ask("When did we first source from LinkedIn?")
    assert r.interpretation.kind == "sourcing" and r.interpretation.order == "oldest" and [m.id for m in r] == [outreach.id]
    assert mem.ask("What did we source from LinkedIn?").interpretation.kind is None  # unordered: a word, as before
    db.close()


def test_an_event_is_what_a_memory_says_happened(tmp_path: Path) -> None:
    """ "Which candidates did we reject after the onsite?" took as "the onsite" a screen whose
    decisions said {"next": "onsite"}: a plan is no onsite. The event a question is anchored on
    says the words itself (its text, tags, participants), not only in its decisions."""
    now = [dt.datetime(2026, 11, 30, 13, tzinfo=dt.UTC)]
    db = memdb.open(tmp_path / "hiring", clock=lambda: now[0])
    db.configure(typed_kinds=("interview", "debrief", "screen"))
    mem = db.owner("recruiter")
    onsite = mem.record("interview", "Onsite with Grace for the SRE role: stalled", outcome="failure", tags=["grace"])
    now[0] += dt.timedelta(days=1)
    rejected = mem.record("debrief", "Debrief for Grace: no hire", outcome="failure", tags=["grace"], decisions={"next": "reject"})
    now[0] += dt.timedelta(days=1)
    mem.record("screen", "Recruiter screen, Priya: good energy", outcome="success", tags=["priya"], decisions={"next": "onsite"})
    now[0] += dt.timedelta(hours=2)
    r = mem.ask("Which candidates did we reject after the onsite?")
    assert onsite.summary[:20] in r.interpretation.anchor and [m.id for m in r] == [rejected.id]
    db.close()


def test_a_negated_act_is_no_event(tmp_path: Path) -> None:
    """ "When did we last hire an SRE?" answered with "Debrief for Grace (sre): no hire": a memory
    saying an act did not happen is no time it happened."""
    now = [dt.datetime(2026, 11, 20, 10, tzinfo=dt.UTC)]
    db = memdb.open(tmp_path / "hiring", clock=lambda: now[0])
    db.configure(typed_kinds=("debrief",))
    mem = db.owner("recruiter")
    hired = mem.record("debrief", "Debrief for Felix (sre): hire at L5", outcome="success", tags=["felix", "sre"])
    now[0] += dt.timedelta(days=5)
    mem.record("debrief", "Debrief for Grace (sre): no hire, panel 1 of 4", outcome="failure", tags=["grace", "sre"])
    now[0] += dt.timedelta(days=1)
    mem.record("debrief", "Debrief for Omar (sre): we did not hire him, then we did hire Ana", outcome="success", tags=["sre"])
    now[0] += dt.timedelta(days=1)
    r = mem.ask("When did we last hire an SRE?")
    assert r.interpretation.order == "newest" and [m.episode.summary[:18] for m in r] == ["Debrief for Omar ("]  # one hire said
    r = mem.ask("When did we first hire an SRE?")
    assert [m.id for m in r] == [hired.id]
    db.close()


def test_the_verb_an_ordered_question_times_wins_over_the_kind_its_object_names(tmp_path: Path) -> None:
    """A bookkeeper's "When did Acme last pay?" answered a payment of early June, the last memory
    saying "paid", where "Payment received from Acme" came later; "When did Acme last pay an
    invoice?" listed invoices ("invoice" named the kind) and ignored "newest first". "pay" names
    kind "payment" (a "-ment" noun's verb), and the verb after "last" wins over its object's kind."""
    now = [dt.datetime(2026, 6, 5, 10, tzinfo=dt.UTC)]
    db = memdb.open(tmp_path / "books", clock=lambda: now[0])
    db.configure(typed_kinds=("invoice", "payment"))
    mem = db.owner("books")
    mem.record("invoice", "Issued INV-2026-0047 to Acme", outcome="success", tags=["acme"])
    now[0] += dt.timedelta(days=2)
    first = mem.record("payment", "Acme paid INV-2026-0047 in full", outcome="success", tags=["acme"])
    now[0] += dt.timedelta(days=13)
    issued = mem.record("invoice", "Issued INV-2026-0056 to Acme", outcome="success", tags=["acme"])
    now[0] += dt.timedelta(days=6)
    last = mem.record("payment", "Payment received from Acme Corp for INV-2026-0056", outcome="success", tags=["acme"])
    now[0] += dt.timedelta(days=4)
    for question, want in (
        ("When did Acme last pay?", last),
        ("When did Acme last pay an invoice?", last),
        ("When did Acme first pay?", first),
        ("When did we last invoice Acme?", issued),
    ):
        r = mem.ask(question)
        assert r.interpretation.order and [m.id for m in r] == [want.id], question
    db.close()


def test_only_the_verb_an_ordered_question_times_names_a_kind(tmp_path: Path) -> None:
    """ "When did we last get the onboarding design reviewed?" took "reviewed" as kind review and
    missed the sprint memory saying it: only the verb after "last" names a kind by its act."""
    now = [dt.datetime(2026, 6, 5, 10, tzinfo=dt.UTC)]
    db = memdb.open(tmp_path / "team", clock=lambda: now[0])
    mem = db.owner("team")
    said = mem.record("sprint", "Ana reviewed the onboarding design", outcome="success")
    now[0] += dt.timedelta(days=1)
    r = mem.ask("When did we last get the onboarding design reviewed?")
    assert r.interpretation.kind is None and [m.id for m in r] == [said.id]
    db.close()
