"""Reflection's near-duplicate guard compares what a lesson says, not the offline reflector's
wording: one rejected lesson about a tool must not block every other tool's, for any owner."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.errors import DuplicateError

T0 = dt.datetime(2026, 6, 3, 6, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def sdb(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "s", clock=clock)
    yield db
    db.close()


def failing(db: memdb.Database, clock: Clock, owner: str, tool: str, *results: str) -> None:
    mem = db.owner(owner)
    for i, result in enumerate(results):
        call = mem.record_tool_call(f"s-{tool}-{i}", tool, {"q": i})
        mem.record_tool_result(call.id, result)
        clock.advance(minutes=1)


def test_template_words_make_no_duplicate(sdb: memdb.Database, clock: Clock) -> None:
    """ana's lesson about `search` was rejected; bo's about `billing`, and ana's own about `cache`,
    are other lessons: the template's words alone made them 0.70 alike, so the tombstone (and
    ana's own pending lesson) refused them, even saved by hand."""
    failing(sdb, clock, "ana", "search", "timeout", "timeout")
    assert sdb.reflect().stored == 1
    sdb.reject([e.id for e in sdb.review_queue()], by="lead", reason="search had a known outage that day")
    clock.advance(days=1)
    failing(sdb, clock, "bo", "billing", "timeout", "timeout")
    failing(sdb, clock, "ana", "cache", "timeout", "timeout")
    report = sdb.reflect()
    assert report.owners["bo"].duplicates == {"approved": 0, "pending": 0, "rejected": 0}
    assert report.owners["ana"].duplicates == {"approved": 0, "pending": 0, "rejected": 1}  # search again: its tombstone
    assert sorted((e.owner, e.text.split()[1]) for e in sdb.review_queue()) == [("ana", "cache"), ("bo", "billing")]
    saved = sdb.owner("bo").save_lesson("Tool ledger keeps failing (e.g. timeout); check its inputs or the service before calling it again")
    assert saved.state == "pending"
    # the real near duplicates are still refused: the rejected content, and a pending one
    with pytest.raises(DuplicateError, match=r"rejected content .*no owner can queue it"):
        sdb.owner("bo").save_lesson("Tool search keeps failing (e.g. timeout): check its inputs or the service before calling it again")
    with pytest.raises(DuplicateError, match="pending entry"):
        sdb.owner("bo").save_lesson("tool billing keeps failing, e.g. timeout; check its inputs or the service before calling it again")


def test_recurring_failures_with_other_lessons_noted_are_other_lessons(sdb: memdb.Database) -> None:
    """ "...; lesson noted: retry later" and "...; lesson noted: check dns" were 0.62 alike."""
    ana = sdb.owner("ana")
    first = ana.save_lesson("Recurring failure in debug work on deploy; lesson noted: retry later")
    assert ana.save_lesson("Recurring failure in debug work on deploy; lesson noted: check dns").state == "pending"
    with pytest.raises(DuplicateError, match=first.id):
        ana.save_lesson("Recurring failure in debug work on deploy; lesson noted: retry it later")


def test_a_tool_s_lesson_reads_the_same_whatever_the_result_says(sdb: memdb.Database, clock: Clock) -> None:
    """The lesson names the kind of failure, not the result's text: a request id in it changed
    every day and brought a rejected lesson back past its tombstone."""
    failing(sdb, clock, "ana", "search", "Timed out after 30s (request 81723)", "timeout after 30s (request 81724)")
    (entry,) = sdb.review_queue() if sdb.reflect().stored else ()
    assert entry.text.startswith("Tool search keeps failing (e.g. timeout);")
    sdb.reject(entry.id, by="lead")
    clock.advance(days=1)
    failing(sdb, clock, "ana", "search", "request 99812 timed out", "request 99813: time out")
    report = sdb.reflect()
    assert report.stored == 0 and report.owners["ana"].duplicates["rejected"] == 1


def test_hand_written_lessons_are_compared_whole(sdb: memdb.Database, clock: Clock) -> None:
    """A review's find: the template's single words (tool, check, inputs, service) were left out
    of every comparison, so a reworded copy of a rejected hand-written lesson (0.67 alike) came
    back at 0.33. Only template phrases both lessons hold whole are left out."""
    sdb.reflect()  # the offline reflector's wording is discounted from its first run
    rejected = sdb.owner("ana").save_lesson("Tool failing? check inputs, then the service")
    sdb.reject(rejected.id, by="lead", reason="the tool is deprecated")
    with pytest.raises(DuplicateError, match="rejected content"):
        sdb.owner("bo").save_lesson("Tool keeps failing: check its inputs or the service")


@pytest.mark.parametrize(
    ("first", "then"), [("request failed", "failure: upstream"), ("3 errors", "errored twice"), ("timed out", "time out")]
)
def test_a_reworded_failure_does_not_bring_a_rejected_tool_lesson_back(sdb: memdb.Database, clock: Clock, first: str, then: str) -> None:
    """A review's find: the tool's lesson is its name and the failure's kind besides the template,
    so "(e.g. failed)" one week and "(e.g. failure)" the next were 0.40 alike and the rejected
    lesson was back in the queue. Each kind reads as one word whatever the result's wording."""
    failing(sdb, clock, "ana", "search", first, first)
    (entry,) = sdb.review_queue() if sdb.reflect().stored else ()
    sdb.reject(entry.id, by="lead", reason="search is being replaced")
    clock.advance(days=8)  # the new failures outnumber the old in the window
    failing(sdb, clock, "ana", "search", then, then, then)
    report = sdb.reflect()
    assert report.stored == 0 and report.owners["ana"].duplicates["rejected"] == 1 and sdb.review_queue() == []


def test_another_kind_of_failure_is_another_lesson(sdb: memdb.Database, clock: Clock) -> None:
    """Refused after a rejected lesson about timeouts is news a reviewer has not judged."""
    failing(sdb, clock, "ana", "search", "timed out", "timed out")
    (entry,) = sdb.review_queue() if sdb.reflect().stored else ()
    sdb.reject(entry.id, by="lead")
    clock.advance(days=8)
    failing(sdb, clock, "ana", "search", "connection refused", "connection refused", "connection refused")
    assert sdb.reflect().stored == 1
    assert [e.text for e in sdb.review_queue()] == [
        "Tool search keeps failing (e.g. refused); check its inputs or the service before calling it again"
    ]
