"""A time given by an event: "what happened after the outage?", "the day before the v2.4 release".

``find_event_anchor`` reads the phrase (``memdb.memory.timephrase``), ``ask`` finds the event among
the owner's memories with an outcome (the newest that holds every word of it) and
``place_after_event`` places the window from its time; the interpretation names the memory it
was anchored to. Where no such memory exists the words read as they always did.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from query_times import NOW, at

import memdb
from memdb.memory.timephrase import OPEN_END, OPEN_START, find_event_anchor, place_after_event

UTC = dt.UTC
US = dt.timedelta(microseconds=1)
on_both = pytest.mark.usefixtures("backend")  # the tests that ask a database: on LMDB and PostgreSQL (tests/conftest.py)


# --- reading the phrase -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "phrase", "event", "direction"),
    [
        ("What happened after the outage?", "after the outage", "the outage", "after"),
        ("What failed since our last deploy?", "since our last deploy", "our last deploy", "since"),
        ("What happened before the outage, and why?", "before the outage", "the outage", "before"),
        ("anything until the SSO launch", "until the SSO launch", "the SSO launch", "until"),
        ("prior to the SSO launch", "prior to the SSO launch", "the SSO launch", "before"),
        ("What did we do the day after the v2.4 release?", "the day after the v2.4 release", "the v2.4 release", "after"),
        ("What happened on the Tuesday before the outage?", "on the Tuesday before the outage", "the outage", "before"),
        ("two weeks after our launch party", "two weeks after our launch party", "our launch party", "after"),
        ("the month before the audit", "the month before the audit", "the audit", "before"),
        ("Did anything fail after the migration to Postgres 16?", "after the migration", "the migration", "after"),  # "to" ends it
        ("between the outage and the SSO launch", "between the outage and the SSO launch", "the outage", "between"),
        ("What happened since sprint 42?", "since sprint 42", "sprint 42", "since"),  # a word and its number
        ("anything broken after release 2.4.1?", "after release 2.4.1", "release 2.4.1", "after"),
        ("before PR 118 landed", "before PR 118", "PR 118", "before"),
    ],
)
def test_an_event_phrase_is_read(text: str, phrase: str, event: str, direction: str) -> None:
    anchor = find_event_anchor(text, NOW)
    assert anchor is not None and (anchor.phrase, anchor.event, anchor.direction) == (phrase, event, direction)
    assert text[anchor.span[0] : anchor.span[1]] == phrase


@pytest.mark.parametrize(
    "text",
    [
        "What happened after the weekend?",  # times, which read_time_phrases places
        "before the end of May",
        "after the 5th",
        "after the other day",
        "since we moved to postgres",  # a clause, not an event
        "what happened after lunch",  # no determiner: too loose to be an event
        "the day since the outage",  # a head only before or after
        "What happened last week?",
        "from the start",  # a range's first half alone
        "between the outage",
        "from the outage to the launch",  # "from the client to the server" is no time
        "What is the difference between the client and the server?",  # a comparison
        "Why did we choose between the old cluster and the new one?",
        "since May 5",  # a word and a number that are a time, not an event
        "after week 3",
        "what failed after 3 retries",
        "What broke after only 2 retries?",  # a word no index holds before the number: no name
        "Did the job stop after just 2 runs?",
        "until around 5 replicas",
    ],
)
def test_what_is_no_event_phrase(text: str) -> None:
    assert find_event_anchor(text, NOW) is None


EVENT = dt.datetime(2026, 6, 10, 22, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("after the outage", EVENT + US, OPEN_END),  # the event itself excluded
        ("since the outage", EVENT, OPEN_END),  # and included
        ("before the outage", OPEN_START, EVENT),
        ("until the outage", OPEN_START, EVENT + US),
        ("the day after the outage", dt.datetime(2026, 6, 11, tzinfo=UTC), dt.datetime(2026, 6, 12, tzinfo=UTC)),
        ("two days before the outage", dt.datetime(2026, 6, 8, tzinfo=UTC), dt.datetime(2026, 6, 9, tzinfo=UTC)),
        ("the Tuesday before the outage", dt.datetime(2026, 6, 9, tzinfo=UTC), dt.datetime(2026, 6, 10, tzinfo=UTC)),
        ("the Wednesday after the outage", dt.datetime(2026, 6, 17, tzinfo=UTC), dt.datetime(2026, 6, 18, tzinfo=UTC)),
        ("the week after the outage", dt.datetime(2026, 6, 15, tzinfo=UTC), dt.datetime(2026, 6, 22, tzinfo=UTC)),
        ("the month before the outage", dt.datetime(2026, 5, 1, tzinfo=UTC), dt.datetime(2026, 6, 1, tzinfo=UTC)),
        ("in the two weeks after the outage", dt.datetime(2026, 6, 11, tzinfo=UTC), dt.datetime(2026, 6, 25, tzinfo=UTC)),
        ("the 3 days before the outage", dt.datetime(2026, 6, 7, tzinfo=UTC), dt.datetime(2026, 6, 10, tzinfo=UTC)),
        ("the two months after the outage", dt.datetime(2026, 6, 11, tzinfo=UTC), dt.datetime(2026, 8, 11, tzinfo=UTC)),
    ],
)
def test_place_after_event(text: str, start: dt.datetime, end: dt.datetime) -> None:
    anchor = find_event_anchor(text, NOW)
    assert anchor is not None
    w = place_after_event(anchor, EVENT, NOW)
    assert (w.start, w.end, w.phrase) == (start, end, text)


@pytest.mark.parametrize(
    ("text", "start", "end", "closing"),
    [
        ("between the outage and the launch", EVENT, EVENT + dt.timedelta(days=2) + US, "until"),  # both included
        ("since the outage until the launch", EVENT, EVENT + dt.timedelta(days=2) + US, "until"),
        ("after the outage and before the launch", EVENT + US, EVENT + dt.timedelta(days=2), "before"),  # neither
    ],
)
def test_a_range_of_two_events(text: str, start: dt.datetime, end: dt.datetime, closing: str) -> None:
    anchor = find_event_anchor(text, NOW)
    assert anchor is not None and (anchor.event, anchor.end_event, anchor.end_direction) == ("the outage", "the launch", closing)
    w = place_after_event(anchor, EVENT, NOW, end_at=EVENT + dt.timedelta(days=2))
    assert w is not None and (w.start, w.end) == (start, end)
    assert place_after_event(anchor, EVENT, NOW, end_at=EVENT - dt.timedelta(days=2)) is None  # it ends before it starts


@given(
    st.datetimes(dt.datetime(2020, 1, 1), dt.datetime(2030, 12, 31), timezones=st.just(UTC)),
    st.sampled_from([UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("America/Santiago"), ZoneInfo("Asia/Kathmandu")]),
    st.integers(1, 10),
)
def test_days_from_an_event_are_local_calendar_days(event: dt.datetime, zone: dt.tzinfo, n: int) -> None:
    """ "N days after X" is the whole local day N days after X's local day, in the database's zone,
    DST days included (23 or 25 hours long)."""
    for direction, sign in (("after", 1), ("before", -1)):
        anchor = find_event_anchor(f"{n} days {direction} the outage", NOW)
        assert anchor is not None
        w = place_after_event(anchor, event, NOW, timezone=zone)
        day = event.astimezone(zone).date() + dt.timedelta(days=sign * n)
        first = dt.datetime(day.year, day.month, day.day, tzinfo=zone)
        after = first.date() + dt.timedelta(days=1)
        assert w.start == first.astimezone(UTC)
        assert w.end == dt.datetime(after.year, after.month, after.day, tzinfo=zone).astimezone(UTC)


# --- ask ---------------------------------------------------------------------------------------


@pytest.fixture
def ops(qdb: memdb.Database) -> dict[str, str]:
    """Owner "ana": an outage on June 10 with what came before and after it, a chat about it
    later, and another owner's newer outage."""
    mem = qdb.owner("ana")
    ids = {
        "before": mem.record("routine", "Rotated the DNS keys", outcome="success", tags=["dns"], ts=at(9, 15)).id,
        "outage": mem.record("debug", "Outage: API down after a DNS change", outcome="failure", tags=["outage", "dns"], ts=at(10)).id,
        "after": mem.record("sprint", "Lowered the DNS TTLs", outcome="success", tags=["dns"], ts=at(11)).id,
        "deploy1": mem.record("sprint", "Deploy of the billing service", outcome="success", tags=["deploy"], ts=at(15)).id,
        "deploy2": mem.record("sprint", "Deploy of the search service", outcome="success", tags=["deploy"], ts=at(20)).id,
        "fix": mem.record("debug", "Search index rebuilt after the deploy", outcome="success", tags=["search"], ts=at(21)).id,
        # talk about the outage, newer than it: no event, as it was said, not done, then
        "chat": mem.record("exchange", "We talked about the outage and the offsite chat again", ts=at(25)).id,
    }
    qdb.owner("bo").record("debug", "Outage of the login service", outcome="failure", tags=["outage"], ts=at(28))
    return ids


def _ids(r: memdb.RecallResult) -> set[str]:
    return {m.id for m in r}


@on_both
def test_after_an_event_is_what_came_after_it(qdb: memdb.Database, ops: dict[str, str]) -> None:
    mem = qdb.owner("ana")
    r = mem.ask("What happened after the outage?", limit=10)
    assert r.interpretation.window is not None and r.interpretation.window.start == at(10) + US
    assert _ids(r) == {ops[k] for k in ("after", "deploy1", "deploy2", "fix", "chat")}
    assert r.interpretation.anchor == "the outage = 'Outage: API down after a DNS change' of 2026-06-10 12:00"
    assert "the outage = 'Outage: API down" in str(r.interpretation)
    since = mem.ask("What happened since the outage?", limit=10)
    assert _ids(since) == _ids(r) | {ops["outage"]}
    assert _ids(mem.ask("What happened before the outage?", limit=10)) == {ops["before"]}


@on_both
def test_a_day_from_an_event(qdb: memdb.Database, ops: dict[str, str]) -> None:
    mem = qdb.owner("ana")
    assert _ids(mem.ask("What happened the day before the outage?")) == {ops["before"]}
    assert _ids(mem.ask("What happened the day after the outage?")) == {ops["after"]}
    r = mem.ask("What happened on the Sunday after the outage?")  # June 14: nothing, said plainly
    assert not r.found and r.note.startswith("Nothing found for window on the Sunday after the outage (2026-06-14)")


@on_both
def test_the_event_is_the_newest_memory_with_an_outcome_holding_every_word(qdb: memdb.Database, ops: dict[str, str]) -> None:
    mem = qdb.owner("ana")
    r = mem.ask("What happened the day after the deploy?")
    assert r.interpretation.anchor.endswith("of 2026-06-20 12:00, the newest of at least 2 matching")  # of the last month read
    assert _ids(r) == {ops["fix"]}
    billing = mem.ask("What happened after the billing deploy?", limit=10)  # every word: the first deploy
    assert billing.interpretation.anchor.startswith("the billing deploy = 'Deploy of the billing service' of 2026-06-15")
    # an exchange is talk, recorded when said: "the offsite chat" only it holds anchors nothing
    chat = mem.ask("What happened after the offsite chat?")
    assert chat.interpretation.anchor == "" and chat.interpretation.window is None


@on_both
def test_the_newest_of_more_events_than_one_read_holds(qdb: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Matches are read a span at a time back from now (a day, a week, a month...), so the newest
    of many is found however many there are: with reads of two, five deploys over five months."""
    from memdb.query import engine

    monkeypatch.setattr(engine, "_EVENTS_READ", 2)
    mem = qdb.owner("ana")
    for month in (1, 2, 3, 4, 5):
        mem.record("sprint", f"Deploy {month} of the API", outcome="success", tags=["deploy"], ts=at(3, month=month))
    r = mem.ask("What happened after the deploy?")
    assert r.interpretation.window is not None and r.interpretation.window.start == at(3, month=5) + US
    assert "'Deploy 5 of the API'" in r.interpretation.anchor


@pytest.mark.parametrize("read", [1, 2, 3, 1_000])
@on_both
def test_the_newest_event_equals_a_brute_force_scan(qdb: memdb.Database, monkeypatch: pytest.MonkeyPatch, read: int) -> None:
    """Seeded times over three years, talk about deploys newer than any deploy (never an event),
    reads of one to a thousand matches: the anchor is the newest deploy a scan finds."""
    import random

    from memdb.query import engine

    monkeypatch.setattr(engine, "_EVENTS_READ", read)
    rng = random.Random(read)
    mem = qdb.owner("ana")
    times = [NOW - dt.timedelta(seconds=rng.randrange(1, 3 * 365 * 86_400)) for _ in range(12)]
    for i, ts in enumerate(times):
        mem.record("sprint", f"Deploy number {i}", outcome=rng.choice(["success", "failure"]), tags=["deploy"], ts=ts)
    for h in range(5):  # talk after the newest deploy: matches that are no event
        mem.record("exchange", "We talked about the deploy again", tags=["deploy"], ts=max(times) + dt.timedelta(hours=h + 1))
    r = mem.ask("What happened after the deploy?")
    assert r.interpretation.window is not None and r.interpretation.window.start == max(times) + US


@on_both
def test_an_archived_event_still_anchors(qdb: memdb.Database) -> None:
    """Forgetting keeps an episode's time, kind, outcome, tags and one-liner hot: the newest
    outage is the newest whether or not it has been archived, and one whose tag and words only
    archived memories hold is found too."""
    mem = qdb.owner("ana")
    mem.record("debug", "Outage of the API after a DNS change", outcome="failure", tags=["outage"], ts=at(2))
    newer = mem.record("debug", "Outage of the API after a bad deploy", outcome="failure", tags=["outage"], ts=at(12))
    mem.archive(newer.id)
    r = mem.ask("What happened after the outage?")
    assert r.interpretation.window is not None and r.interpretation.window.start == at(12) + US
    assert "2026-06-12" in r.interpretation.anchor
    lonely = mem.record("review", "Tabletop drill of the failover", outcome="success", tags=["drill"], ts=at(20))
    mem.archive(lonely.id)
    drill = mem.ask("What happened before the failover drill?", limit=10)
    assert drill.interpretation.window is not None and drill.interpretation.window.end == at(20)


@on_both
def test_another_owner_event_never_anchors(qdb: memdb.Database, ops: dict[str, str]) -> None:
    bo = qdb.owner("bo")
    r = bo.ask("What happened before the outage?")
    assert "Outage of the login service" in r.interpretation.anchor and "API down" not in r.interpretation.anchor
    assert not r.found  # ana's memories before bo's outage are not bo's


@on_both
@pytest.mark.parametrize("preposition", ["after", "since", "before", "until"])
def test_an_event_no_memory_holds_reads_as_words(qdb: memdb.Database, ops: dict[str, str], preposition: str) -> None:
    """Whatever its preposition: "since the kubernetes upgrade" was read as a time phrase no
    calendar places, ignored, and the answer was every memory ("2 matches for everything")."""
    r = qdb.owner("ana").ask(f"What happened {preposition} the kubernetes upgrade?")
    assert r.interpretation.anchor == "" and r.interpretation.window is None and not r.found
    assert "kubernetes" in r.interpretation.unmatched and not r.interpretation.ignored
    assert r.interpretation.question == f"What happened {preposition} the kubernetes upgrade?"


@on_both
def test_between_two_events(qdb: memdb.Database, ops: dict[str, str]) -> None:
    mem = qdb.owner("ana")
    r = mem.ask("What happened between the outage and the billing deploy?", limit=10)
    assert _ids(r) == {ops[k] for k in ("outage", "after", "deploy1")}
    assert "the billing deploy = 'Deploy of the billing service' of 2026-06-15 12:00" in r.interpretation.anchor
    backwards = mem.ask("What happened between the billing deploy and the outage?")  # ends before it starts: words
    assert backwards.interpretation.anchor == ""
    second = mem.ask("What happened before the outage after the billing deploy?")
    assert second.interpretation.ignored == ("after the billing deploy",) and _ids(second) == {ops["before"]}


@on_both
def test_the_last_event_is_the_newest(qdb: memdb.Database, ops: dict[str, str]) -> None:
    """ "Since the last sprint" read "last sprint" as a period no calendar places: ignored, and the
    answer was every memory. The newest is what finding an event gives anyway."""
    mem = qdb.owner("ana")
    r = mem.ask("What happened since the last deploy?", limit=10)
    assert r.interpretation.anchor.startswith("the last deploy = 'Deploy of the search service' of 2026-06-20")
    assert _ids(r) == {ops[k] for k in ("deploy2", "fix", "chat")} and not r.interpretation.ignored
    sprint = mem.ask("What happened after the most recent sprint?", limit=10)
    assert sprint.interpretation.anchor.startswith("the most recent sprint = 'Deploy of the search service'")
    assert _ids(sprint) == {ops[k] for k in ("fix", "chat")}


@on_both
def test_an_event_named_by_its_number(qdb: memdb.Database) -> None:
    mem = qdb.owner("ana")
    mem.record("sprint", "Sprint 41 closed: billing v2 shipped", outcome="success", ts=at(10))
    s42 = mem.record("sprint", "Sprint 42 closed: search half done", outcome="partial", ts=at(20))
    later = mem.record("debug", "Disk full on web-02", outcome="failure", ts=at(22))
    r = mem.ask("What failed since sprint 42?")
    assert r.interpretation.anchor.startswith("sprint 42 = 'Sprint 42 closed") and _ids(r) == {later.id}
    assert _ids(mem.ask("What happened after sprint 41?", limit=10)) == {s42.id, later.id}
    # the number whole: "release 2" is no "release 2.4-rc1", and "release 2.4-rc1" no "release 2"
    mem.record("sprint", "Release 2 shipped to staging", outcome="success", ts=at(11))
    rc1 = mem.record("sprint", "Release 2.4-rc1 cut", outcome="success", ts=at(23))
    hotfix = mem.record("debug", "Hotfix for the login page failed", outcome="failure", ts=at(24))
    assert mem.ask("Which hotfix failed after release 2.4-rc1?").interpretation.anchor.startswith("release 2.4-rc1 = 'Release 2.4-rc1")
    since2 = mem.ask("What failed since release 2?", limit=10)
    assert since2.interpretation.anchor.startswith("release 2 = 'Release 2 shipped") and hotfix.id in {m.id for m in since2}
    assert rc1.id not in {m.id for m in mem.ask("What failed since release 2?", limit=10)}  # (not a failure)
    none = mem.ask("What happened since sprint 99?")  # no such sprint: its words, and no memory holds 99
    assert not none.found and none.interpretation.anchor == "" and "99" in none.interpretation.unmatched


@on_both
def test_a_second_time_phrase_beside_an_event_is_ignored(qdb: memdb.Database, ops: dict[str, str]) -> None:
    r = qdb.owner("ana").ask("What happened last week after the outage?", limit=10)
    assert r.interpretation.ignored == ("last week",) and r.interpretation.window is not None
    assert r.interpretation.window.phrase == "after the outage"
