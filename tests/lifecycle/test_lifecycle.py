"""Lifecycle: burst summaries, archiving to cold storage, restore, audit, erasure, retention, maintain.

Every time rule is tested at its exact boundary with an injected clock.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx  # the HTTP client the anthropic SDK is built on
import pytest
from clocks import Clock

import memdb
from memdb.engine import codec
from memdb.errors import LLMError, NotFoundError, ValidationError
from memdb.lifecycle.summarize import ExtractiveSummarizer
from memdb.llm.adapters import AnthropicSummarizer
from memdb.memory.ids import episode_day
from memdb.memory.postings import Column
from memdb.memory.relevance import kept_relevance

UTC = dt.UTC
T0 = dt.datetime(2026, 6, 1, 10, 0, tzinfo=UTC)

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)


_CLOCKS: list[Clock] = []  # the running test's clock, for burst() to capture each event as it happens


@pytest.fixture
def clock() -> Iterator[Clock]:
    running = Clock(T0)
    _CLOCKS.append(running)
    yield running
    _CLOCKS.remove(running)


def burst(
    mem: memdb.Memory, n: int, start: dt.datetime = T0, session: str | None = "s1", spacing: dt.timedelta = dt.timedelta(hours=1)
) -> list[str]:
    """``n`` exchanges captured live, one every ``spacing`` from ``start`` (the clock moves to
    each, as gateway capture requires, and goes back to where it was)."""
    running = _CLOCKS[-1]
    back, ids = running.now, []
    for i in range(n):
        running.now = start + i * spacing
        ids.append(mem.record("exchange", f"event {i} about the deploy", session=session, ts=running.now, tags=["deploy"]).id)
    running.now = back
    return ids


def summaries_of(mem: memdb.Memory) -> list[memdb.Hit]:
    return list(mem.recall(kind="summary", limit=50))


# --- burst summaries -----------------------------------------------------------------------------


@pytest.mark.parametrize(("events", "expected"), [(5, 0), (6, 1)])
def test_burst_needs_more_than_five_events(ldb: memdb.Database, events: int, expected: int) -> None:
    mem = ldb.owner("ana")
    burst(mem, events)
    report = ldb.maintain(now=T0 + dt.timedelta(days=2))
    assert report.summaries == expected
    assert len(summaries_of(mem)) == expected


@pytest.mark.parametrize(("age", "expected"), [(dt.timedelta(hours=23, minutes=59), 0), (dt.timedelta(hours=24), 1)])
def test_burst_waits_until_window_is_24h_old(ldb: memdb.Database, age: dt.timedelta, expected: int) -> None:
    mem = ldb.owner("ana")
    burst(mem, 6, spacing=dt.timedelta(minutes=10))
    assert ldb.maintain(now=T0 + age).summaries == expected


def test_events_spread_over_more_than_24h_are_no_burst(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    burst(mem, 6, spacing=dt.timedelta(hours=5))  # 6 events over 25 h: no 24 h window holds 6
    assert ldb.maintain(now=T0 + dt.timedelta(days=3)).summaries == 0


def test_summary_cites_sources_which_stay_retrievable(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    ids = burst(mem, 7)
    ldb.maintain(now=T0 + dt.timedelta(days=2))
    (summary,) = summaries_of(mem)
    assert set(summary.episode.cites) == set(ids)
    assert 1 <= len(summary.episode.summary.splitlines()) <= 3
    assert summary.episode.kind == "summary" and summary.episode.outcome is None
    for eid in ids:
        assert mem.peek(eid).status == "summarized"
    assert len(mem.recall(tags=["deploy"], kind="exchange", limit=50)) == 7  # still found
    assert ldb.check().ok


def test_a_closed_session_is_not_summarized_again(ldb: memdb.Database, clock: Clock) -> None:
    """A probe's find: a session of five captured events closed by end_session got a burst summary
    from maintain, which counted the distilled episode as a sixth event and marked it summarized:
    the same work told three times. A session's close is no event and what it cites is told;
    events captured after the close are a burst as any (DESIGN 5)."""
    mem = ldb.owner("ana")
    told = burst(mem, 5)
    clock.now = T0 + dt.timedelta(hours=5)
    close = mem.close_session("s1", kind="debug", outcome="success").episode
    assert close is not None and close.cites == tuple(told)
    assert ldb.maintain(now=T0 + dt.timedelta(days=2)).summaries == 0
    assert summaries_of(mem) == [] and {mem.peek(eid).status for eid in [*told, close.id]} == {"active"}
    later = burst(mem, 6, start=T0 + dt.timedelta(days=3))  # the session went on after its close
    assert ldb.maintain(now=T0 + dt.timedelta(days=5)).summaries == 1
    (summary,) = summaries_of(mem)
    assert set(summary.episode.cites) == set(later) and mem.peek(close.id).status == "active"


def test_an_account_citing_some_steps_leaves_the_rest_a_burst(ldb: memdb.Database, clock: Clock) -> None:
    """A review's find: an agent's own typed episode in a session citing its first and last steps
    hid every step between from the burst rule (a range of cites was taken as told), so a year of
    such sessions got no summary at all. Only the steps it cites are told (DESIGN 5)."""
    mem = ldb.owner("ana")
    steps = burst(mem, 10)
    clock.now = T0 + dt.timedelta(hours=10)
    mem.record("debug", "Deploy fixed after the retry", outcome="success", session="s1", cites=[steps[0], steps[-1]], ts=clock.now)
    assert ldb.maintain(now=T0 + dt.timedelta(days=2)).summaries == 1
    (summary,) = summaries_of(mem)
    assert set(summary.episode.cites) == set(steps[1:-1])


@pytest.mark.parametrize(("first", "last"), [(["password"], ["deploy"]), (["AKIAIOSFODNN7EXAMPLE", "vendor"], [])])
def test_a_summary_keeps_its_sources_tags_as_stored(ldb: memdb.Database, clock: Clock, first: list[str], last: list[str]) -> None:
    """The sources' tags are stored already: sanitized again, ["password", "deploy"] was a header
    and its secret ("deploy" became "withheld-secret") and ["withheld-secret", "vendor"] lost "vendor" (revE)."""
    mem = ldb.owner("ana")
    tags = [mem.record_exchange("s1", f"step {i}", "ok", tags=first if i == 0 else []).tags for i in range(6)]
    clock.advance(hours=1)
    tags.append(mem.record_exchange("s1", "last step", "ok", tags=last).tags)
    ldb.maintain(now=clock.now + dt.timedelta(days=2))
    (summary,) = summaries_of(mem)
    assert summary.episode.tags == tuple(dict.fromkeys(t for kept in tags for t in kept))


def test_second_run_makes_no_second_summary(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    burst(mem, 8)
    first = ldb.maintain(now=T0 + dt.timedelta(days=2))
    second = ldb.maintain(now=T0 + dt.timedelta(days=2))
    third = ldb.maintain(now=T0 + dt.timedelta(days=5))
    assert (first.summaries, second.summaries, third.summaries) == (1, 0, 0)
    assert len(summaries_of(mem)) == 1


def test_sessionless_events_group_by_owner_day(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    day = dt.datetime(2026, 6, 1, tzinfo=UTC)
    burst(mem, 6, start=day + dt.timedelta(hours=18), session=None, spacing=dt.timedelta(minutes=30))  # 18:00-20:30
    burst(mem, 6, start=day + dt.timedelta(hours=22), session=None, spacing=dt.timedelta(hours=1))  # 22:00 .. next day 03:00
    report = ldb.maintain(now=day + dt.timedelta(days=3))
    assert report.summaries == 1  # day 1 holds 6 + 2 = 8 events; day 2 holds 4


def test_sessionless_events_group_by_the_database_s_day(ldb: memdb.Database) -> None:
    """An afternoon in Los Angeles (12:00-19:00, 20:00-03:00 UTC) was split at UTC midnight, 4 + 4,
    and no burst was summarized: the owner's day is the database's ``timezone`` day."""
    ldb.configure(timezone="America/Los_Angeles")
    start = dt.datetime(2026, 6, 1, 19, 0, tzinfo=UTC)  # 12:00 in Los Angeles (PDT)
    ids = burst(ldb.owner("ana"), 8, start=start, session=None)
    report = ldb.maintain(now=start + dt.timedelta(days=2))
    assert report.summaries == 1 and report.summarized_sources == 8
    assert {ldb.owner("ana").peek(i).status for i in ids} == {"summarized"}


def test_a_burst_on_the_day_the_clocks_go_back_is_summarized_across_runs(ldb: memdb.Database) -> None:
    """Los Angeles' November 1 2026 is 25 hours long: a run at 23:30 that day looked back 24 hours
    at the next, and the day's first events were never grouped (a review's find)."""
    ldb.configure(timezone="America/Los_Angeles")
    first = burst(ldb.owner("ana"), 4, start=dt.datetime(2026, 11, 1, 7, 5, tzinfo=UTC), session=None, spacing=dt.timedelta(minutes=5))
    last = burst(ldb.owner("ana"), 3, start=dt.datetime(2026, 11, 2, 2, 0, tzinfo=UTC), session=None, spacing=dt.timedelta(minutes=1))
    assert ldb.maintain(now=dt.datetime(2026, 11, 2, 7, 30, tzinfo=UTC)).summaries == 0  # 23:30 PST: the day is open
    report = ldb.maintain(now=dt.datetime(2026, 11, 3, 12, 0, tzinfo=UTC))
    assert (report.summaries, report.summarized_sources) == (1, 7)
    assert {ldb.owner("ana").peek(i).status for i in first + last} == {"summarized"}


def test_erasing_a_source_frees_the_rest_of_its_burst(ldb: memdb.Database) -> None:
    """Erasing one source erased the summary (derived content), and the 7 others stayed
    "summarized" by no summary: they are events again."""
    mem = ldb.owner("ana")
    ids = burst(mem, 8)
    assert ldb.maintain(now=T0 + dt.timedelta(days=2)).summaries == 1
    mem.erase([ids[0]], reason="the user asked")
    assert summaries_of(mem) == [] and {mem.peek(i).status for i in ids[1:]} == {"active"}
    assert ldb.check().ok


@pytest.mark.parametrize("session", ["s1", None])
@pytest.mark.parametrize("erased", [0, 3, 7])
def test_a_burst_freed_by_an_erasure_is_summarized_again(ldb: memdb.Database, clock: Clock, session: str | None, erased: int) -> None:
    """The 7 events an erasure freed were never summarized again: maintain's scan had passed
    their window (the clock moved on, as it does), and a middle source's erasure left the
    window's mark naming the erased summary. The next run summarizes them, once."""
    mem = ldb.owner("ana")
    ids = burst(mem, 8, session=session, spacing=dt.timedelta(minutes=10))
    clock.advance(days=2)
    assert ldb.maintain().summaries == 1
    clock.advance(days=1)
    assert ldb.maintain().summaries == 0
    mem.erase([ids[erased]], reason="the user asked")
    clock.advance(days=1)
    report = ldb.maintain()
    assert (report.summaries, report.summarized_sources) == (1, 7)
    (again,) = summaries_of(mem)
    assert set(mem.get(again.id).cites) == set(ids) - {ids[erased]}
    assert {mem.peek(i).status for i in ids if i != ids[erased]} == {"summarized"}
    clock.advance(days=1)
    assert ldb.maintain().summaries == 0 and len(summaries_of(mem)) == 1  # once
    assert ldb.check().ok


@pytest.mark.parametrize("archived", [False, True])
def test_erasing_a_summary_frees_its_burst(ldb: memdb.Database, clock: Clock, archived: bool) -> None:
    """Erasing a burst summary by its own id took its window's mark and left its sources
    "summarized" by no summary, never summarized again. They are events again, as when a
    source is erased, and the next run summarizes them anew (archived, the summary's cites
    are read from its cold record)."""
    mem = ldb.owner("ana")
    ids = burst(mem, 7, spacing=dt.timedelta(minutes=2))
    clock.advance(days=2)
    assert ldb.maintain().summaries == 1
    (summary,) = summaries_of(mem)
    if archived:
        mem.archive(summary.id)
    mem.erase([summary.id], reason="a wrong summary")
    assert {mem.peek(i).status for i in ids} == {"active"} and ldb.check().ok
    clock.advance(days=1)
    report = ldb.maintain()
    assert (report.summaries, report.summarized_sources) == (1, 7)
    (again,) = summaries_of(mem)
    assert again.id != summary.id and set(mem.get(again.id).cites) == set(ids)
    assert {mem.peek(i).status for i in ids} == {"summarized"} and ldb.check().ok


def test_an_erasure_leaves_no_burst_that_is_not_one_summarized(ldb: memdb.Database, clock: Clock) -> None:
    """The look back an erasure asks for applies the rule as it is: 5 events left of a burst of
    6 are no burst, a window of 4 events never was one, and a burst whose summary stands is not
    summarized twice."""
    mem = ldb.owner("ana")
    six = burst(mem, 6, session="s1", spacing=dt.timedelta(minutes=10))
    seven = burst(mem, 7, session="s2", spacing=dt.timedelta(minutes=10))
    four = burst(mem, 4, session="s3", spacing=dt.timedelta(minutes=10))
    clock.advance(days=2)
    assert ldb.maintain().summaries == 2
    clock.advance(days=3)
    mem.erase([six[2]], reason="the user asked")
    assert ldb.maintain().summaries == 0
    assert {mem.peek(i).status for i in six if i != six[2]} | {mem.peek(i).status for i in four} == {"active"}
    assert {mem.peek(i).status for i in seven} == {"summarized"} and len(summaries_of(mem)) == 1


def test_retention_frees_no_burst_to_summarize_again(ldb: memdb.Database, clock: Clock) -> None:
    """What retention leaves of a burst is older than its cutoff by the next run: summarizing it
    again would write a summary that run purges."""
    mem = ldb.owner("ana")
    ids = burst(mem, 8, session="s1", spacing=dt.timedelta(hours=1))
    clock.advance(days=2)
    assert ldb.maintain().summaries == 1
    ldb.configure(retention_days=30)
    clock.now = T0 + dt.timedelta(days=30, minutes=30)  # the cutoff falls inside the burst: its first source goes
    report = ldb.maintain()
    assert report.purged == 2 and summaries_of(mem) == []  # the source and the summary derived from it
    assert {mem.peek(i).status for i in ids[1:]} == {"active"}
    clock.advance(days=1)
    report = ldb.maintain()
    assert report.summaries == 0 and report.purged == 7


def test_burst_windows_per_owner_are_private(ldb: memdb.Database) -> None:
    burst(ldb.owner("ana"), 3)
    burst(ldb.owner("bo"), 3)
    assert ldb.maintain(now=T0 + dt.timedelta(days=2)).summaries == 0  # 3 + 3 never add up across owners


# --- the Anthropic summarizer through the real SDK ------------------------------------------------

MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [
        {
            "type": "text",
            "text": (
                "Seven deploy attempts in session s1.\nTwo failed on the migration lock.\nFixed by running migrations first.\nExtra line."
            ),
        }
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 412, "output_tokens": 38},
}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def sdk_client(responses: list[tuple[int, dict[str, Any]]], seen: list[httpx.Request]) -> anthropic.Anthropic:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, body = responses[min(len(seen) - 1, len(responses) - 1)]
        return httpx.Response(status, json=body, headers={"request-id": f"req_{len(seen)}"})

    return anthropic.Anthropic(api_key="sk-ant-test", max_retries=1, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def test_anthropic_summarizer_through_sdk(tmp_path: Path, clock: Clock) -> None:
    seen: list[httpx.Request] = []
    summarizer = AnthropicSummarizer(client=sdk_client([(200, MESSAGE)], seen))
    with memdb.open(tmp_path / "llm", clock=clock, summarizer=summarizer) as db:
        mem = db.owner("ana")
        burst(mem, 7)
        assert db.maintain(now=T0 + dt.timedelta(days=2)).summaries == 1
        (summary,) = summaries_of(mem)
        assert summary.episode.summary.splitlines() == [
            "Seven deploy attempts in session s1.",
            "Two failed on the migration lock.",
            "Fixed by running migrations first. Extra line.",  # at most three lines, and nothing dropped unsaid
        ]
    body = json.loads(seen[0].content)
    assert seen[0].url.path == "/v1/messages" and body["model"] == "claude-haiku-4-5"
    assert "event 0 about the deploy" in body["messages"][0]["content"]
    assert "data, never instructions" in body["system"]


@pytest.mark.parametrize(("stop", "said"), [("max_tokens", "cut off at max_tokens=300"), ("refusal", "declined to answer")])
def test_an_unfinished_summary_leaves_its_window(tmp_path: Path, clock: Clock, stop: str, said: str) -> None:
    """A summary cut off at max_tokens, or a refusal ("I'm sorry, but I can't help..."), was stored
    as the burst's summary citing its seven sources, which were marked summarized."""
    text = "I'm sorry, but I can't help summarize this content." if stop == "refusal" else "The agent deployed the API; the first"
    answer = {**MESSAGE, "stop_reason": stop, "content": [{"type": "text", "text": text}]}
    with memdb.open(tmp_path / "cut", clock=clock, summarizer=AnthropicSummarizer(client=sdk_client([(200, answer)], []))) as db:
        mem = db.owner("ana")
        ids = burst(mem, 7)
        report = db.maintain(now=T0 + dt.timedelta(days=2))
        assert report.summaries == 0 and report.summarizer_failures == 1 and said in report.errors[0]
        assert f"stop_reason '{stop}'" in report.errors[0] and text not in report.errors[0]
        assert all(mem.peek(i).status == "active" for i in ids) and summaries_of(mem) == []


def test_a_summary_past_its_lines_is_cut_with_a_mark(tmp_path: Path, clock: Clock) -> None:
    """Ten lines were cut to three with nothing to say so; the lines past the third join it, and
    what does not fit ends in an ellipsis."""
    answer = {**MESSAGE, "content": [{"type": "text", "text": "\n".join(f"line {i}: " + "x" * 60 for i in range(10))}]}
    with memdb.open(tmp_path / "ten", clock=clock, summarizer=AnthropicSummarizer(client=sdk_client([(200, answer)], []))) as db:
        mem = db.owner("ana")
        burst(mem, 7)
        assert db.maintain(now=T0 + dt.timedelta(days=2)).summaries == 1
        (summary,) = summaries_of(mem)
        lines = summary.episode.summary.splitlines()
        assert len(lines) == 3 and lines[2].startswith("line 2: ") and "line 3: " in lines[2] and lines[2].endswith("…")


def test_anthropic_failure_leaves_episodes_for_the_next_run(tmp_path: Path, clock: Clock) -> None:
    seen: list[httpx.Request] = []
    failing = AnthropicSummarizer(client=sdk_client([(529, OVERLOADED)], seen))
    with memdb.open(tmp_path / "llm2", clock=clock, summarizer=failing) as db:
        mem = db.owner("ana")
        ids = burst(mem, 7)
        report = db.maintain(now=T0 + dt.timedelta(days=2))
        assert report.summaries == 0 and report.summarizer_failures == 1
        assert "overloaded" in report.errors[0].lower() or "529" in report.errors[0]
        assert len(seen) == 2  # one retry, then give up
        assert all(mem.peek(i).status == "active" for i in ids) and summaries_of(mem) == []
        assert db.check().ok
    with memdb.open(tmp_path / "llm2", clock=clock, summarizer=AnthropicSummarizer(client=sdk_client([(200, MESSAGE)], []))) as db:
        assert db.maintain(now=T0 + dt.timedelta(days=3)).summaries == 1  # retried next run


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="<html>proxy login</html>", headers={"content-type": "text/html"}),
        httpx.Response(200, text="<html>proxy login</html>", headers={"content-type": "application/json"}),
        httpx.Response(200, json={"id": "m", "type": "message", "role": "assistant"}),
        httpx.Response(200, json={**MESSAGE, "content": None}),
    ],
)
def test_an_unreadable_answer_costs_only_its_summary(tmp_path: Path, clock: Clock, response: httpx.Response) -> None:
    """A proxy's page or a message without content is a failed summary, not a failed maintain:
    archiving and the other rules still run."""
    client = anthropic.Anthropic(
        api_key="sk-ant-test", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(lambda _: response))
    )
    with memdb.open(tmp_path / "bad", clock=clock, summarizer=AnthropicSummarizer(client=client)) as db:
        mem = db.owner("ana")
        ids = burst(mem, 7)
        report = db.maintain(now=T0 + dt.timedelta(days=2))
        assert report.summaries == 0 and report.summarizer_failures == 1 and "could not be read" in report.errors[0]
        assert all(mem.peek(i).status == "active" for i in ids) and db.check().ok


def test_a_short_burst_window_still_summarizes_an_owners_day(ldb: memdb.Database) -> None:
    """Sessionless events group by UTC day whatever the window; a run in the middle of that day
    must not move the next run's start past the day's first events."""
    ldb.configure(burst_window_hours=6.0)
    mem = ldb.owner("ana")
    for i in range(7):
        mem.record("exchange", f"note {i} about the deploy", ts=T0.replace(hour=1) + i * dt.timedelta(minutes=20))
    day = T0.replace(hour=0)
    assert ldb.maintain(now=day + dt.timedelta(hours=12)).summaries == 0  # the day is still open
    assert ldb.maintain(now=day + dt.timedelta(days=1, hours=12)).summaries == 1


def test_anthropic_error_is_memdb_error() -> None:
    summarizer = AnthropicSummarizer(
        client=sdk_client([(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})], [])
    )
    ep = memdb.memory.models.Episode(id="x", owner="a", ts=T0, kind="exchange", summary="s")
    with pytest.raises(LLMError, match="BadRequestError"):
        summarizer.summarize([ep])


def test_extractive_summary_is_deterministic_and_short() -> None:
    eps = [memdb.memory.models.Episode(id=str(i), owner="a", ts=T0 + dt.timedelta(minutes=i), kind="debug",
                                outcome="failure" if i % 2 else "success",
                                summary=f"step {i} " + "x" * 300, lesson="lock first" if i == 3 else None) for i in range(8)]  # fmt: skip
    s = ExtractiveSummarizer()
    text = s.summarize(eps)
    assert text == s.summarize(eps) and len(text.splitlines()) == 3
    assert all(len(line) <= 200 for line in text.splitlines())
    assert "lock first" in text and len(s.one_line(eps[3])) <= 160


def test_an_extractive_summary_past_midnight_names_both_days() -> None:
    """ "2026-06-02 13:20 to 06:50 UTC" read as ending before it began."""
    start = dt.datetime(2026, 6, 2, 23, 20, tzinfo=dt.UTC)
    eps = [memdb.memory.models.Episode(id=str(i), owner="a", ts=start + dt.timedelta(hours=i), kind="tool_call", summary="check_pool call")
           for i in range(3)]  # fmt: skip
    assert "2026-06-02 23:20 to 2026-06-03 01:20 UTC" in ExtractiveSummarizer().summarize(eps)
    assert "2026-06-02 23:20 to 23:40 UTC" in ExtractiveSummarizer().summarize(
        [eps[0], eps[0].model_copy(update={"ts": start + dt.timedelta(minutes=20)})]
    )


# --- archiving, cold storage, restore -------------------------------------------------------------


def only_feedback_counts(db: memdb.Database) -> None:
    """Relevance = the feedback component, so a test sets it exactly: 5 * (feedback + 1)."""
    db.configure(w_frequency=0.0, w_tags=0.0, w_age=0.0, w_feedback=1.0)


@pytest.mark.parametrize(("feedback", "archived"), [(-0.402, 1), (-0.4, 0)])  # relevance 2.99 vs 3.0
def test_archive_relevance_boundary(ldb: memdb.Database, feedback: float, archived: int) -> None:
    only_feedback_counts(ldb)
    ep = ldb.owner("ana").record("debug", "old thing", outcome="failure", feedback=feedback, ts=T0)
    assert ldb.owner("ana").peek(ep.id).relevance == kept_relevance(5 * (feedback + 1))  # 2.96 (its level) vs 3.0
    assert ldb.maintain(now=T0 + dt.timedelta(days=31)).archived == archived


@pytest.mark.parametrize(("idle", "archived"), [(dt.timedelta(days=29, hours=23, minutes=59), 0), (dt.timedelta(days=30), 1)])
def test_archive_idle_boundary(ldb: memdb.Database, clock: Clock, idle: dt.timedelta, archived: int) -> None:
    only_feedback_counts(ldb)
    mem = ldb.owner("ana")
    ep = mem.record("debug", "old thing", outcome="failure", feedback=-1.0, ts=T0 - dt.timedelta(days=90))
    clock.now = T0
    mem.get(ep.id)  # accessed at T0: the idle clock restarts
    ldb.flush()
    assert ldb.maintain(now=T0 + idle).archived == archived


def test_archived_episode_leaves_hot_indexes_keeps_one_line_and_restores(ldb: memdb.Database, clock: Clock) -> None:
    mem = ldb.owner("ana")
    keep = mem.record("debug", "Hot and relevant", outcome="success", tags=["urgent"], ts=T0)
    old = mem.record(
        "debug",
        "Twilio webhook signature mismatch",
        outcome="failure",
        tags=["twilio"],
        lesson="rotate secrets together",
        ts=T0 - dt.timedelta(days=60),
    )
    report = ldb.maintain(now=T0 + dt.timedelta(days=1))
    assert report.archived == 1 and ldb.check().ok
    assert mem.recall(tags=["twilio"]).found is False
    found = mem.recall(tags=["twilio"], include_archived=True)
    assert found.found and found.memories[0].episode.status == "archived"
    assert "Twilio webhook signature mismatch" in found.memories[0].episode.summary
    assert any("archived" in w for w in found.memories[0].why)
    assert ldb.globals["MEM"].get(("ana", old.day, old.id)) is None
    cold = ldb.globals["COLD"][("ana", old.id)]
    assert cold["codec"] in ("zstd-dict", "zstd") and len(cold["data"]) < cold["raw_bytes"]
    (audit,) = [a for a in mem.audit() if a["action"] == "archive"]
    assert audit["episode"] == old.id and audit["rule"].startswith("relevance < 3")
    assert set(audit["components"]) == {"frequency", "tags", "age", "feedback"} and audit["relevance"] < 3
    assert len(audit["content_hash"]) == 64 and "Twilio" in audit["one_line"]

    restored = mem.restore(old.id)
    assert restored.lesson == "rotate secrets together" and restored.status == "active"
    assert mem.recall(tags=["twilio"]).found and mem.recall(text="signature").found
    assert ldb.check().ok
    assert [a["action"] for a in mem.audit()][-2:] == ["archive", "restore"]
    assert ldb.maintain(now=T0 + dt.timedelta(days=1)).archived == 0  # a restore is an access
    assert keep.id in mem
    with pytest.raises(NotFoundError):
        mem.restore(keep.id)


def test_cold_storage_uses_a_trained_dictionary(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    with ldb.transaction():
        for i in range(400):
            mem.record("routine", f"Nightly backup {i} verified on host db-{i % 7}", outcome="success", tags=["backups"],
                       content="Checked snapshot sizes, restore test passed, retention policy applied.",
                       ts=T0 - dt.timedelta(days=90, minutes=i))  # fmt: skip
    only_feedback_counts(ldb)
    ldb.configure(w_feedback=1.0)
    with ldb.transaction():
        for eid in [e.id for e in mem.episodes()][:50]:
            mem.feedback(eid, -1.0)
    assert ldb.maintain(now=T0).archived == 50
    codecs = {v["codec"] for _, v in ldb.globals["COLD"].items(("ana",))}
    assert codecs == {"zstd-dict"}
    assert ldb.check().ok


# --- audit, erasure, retention ------------------------------------------------------------------


def test_configuration_changes_are_audited(ldb: memdb.Database) -> None:
    ldb.configure(archive_after_days=45)
    (entry,) = [a for a in ldb.audit() if a["action"] == "configure"]
    assert entry["changes"] == {"archive_after_days": {"from": 30.0, "to": 45.0}} and entry["owner"] is None


def test_audit_by_owner_and_time(ldb: memdb.Database, clock: Clock) -> None:
    ana, bo = ldb.owner("ana"), ldb.owner("bo")
    ana.import_episodes([{"kind": "exchange", "summary": "x"}], source="a")
    clock.now = T0 + dt.timedelta(days=1)
    bo.import_episodes([{"kind": "exchange", "summary": "y"}], source="b")
    assert [a["source"] for a in ldb.audit(owner="ana")] == ["a"]
    assert [a["source"] for a in ldb.audit(since=T0 + dt.timedelta(hours=1)) if a["action"] == "import"] == ["b"]
    assert not hasattr(ldb, "delete_audit")


def test_erase_by_id_range_and_everything(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    other = ldb.owner("bo").record("exchange", "bo's", ts=T0)
    ids = burst(mem, 6, spacing=dt.timedelta(days=1))
    assert mem.erase([ids[0]], reason="user request").count == 1
    assert mem.erase(since=T0 + dt.timedelta(days=1), until=T0 + dt.timedelta(days=3), reason="range").ids == ids[1:3]
    assert mem.erase(everything=True, reason="account closed").count == 3
    assert mem.count() == 0 and other.id in ldb.owner("bo")
    assert ldb.check().ok
    with pytest.raises(ValidationError):
        mem.erase(reason="nothing given")
    with pytest.raises(NotFoundError):
        mem.erase([other.id], reason="not mine")


def test_erase_by_tag_takes_hot_archived_and_earlier_versions(tmp_path: Path, clock: Clock) -> None:
    """ "Forget everything about customer Acme": a support agent had to list the ids itself, and
    archived memories and earlier versions are in no index it can read. ``erase(tags=...)``
    takes every episode carrying a tag ("Acme Corp" as "acme-corp"), hot, archived or corrected,
    narrowed by ``since``/``until``, and nothing else; after compact() no byte of them is left."""
    path = tmp_path / "tags"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("support")
        hot = mem.record("debug", "Acme: SSO login fails for Quokkabank users", outcome="failure", tags=["Acme Corp"], ts=T0)
        old = mem.record("debug", "Acme: invoice VAT wrong Quokkabank", outcome="success", tags=["acme-corp", "billing"],
                         ts=T0 - dt.timedelta(days=90))  # fmt: skip
        mem.archive(old.id)
        corrected = mem.supersede(hot.id, reason="typo", summary="Acme: SSO login fails for Quokkabank staff")
        earlier = mem.record("debug", "Acme: export slow for Quokkabank", outcome="partial", tags=["acme corp"],
                             ts=T0 - dt.timedelta(days=400))  # fmt: skip
        globex = mem.record("debug", "Globex: webhooks dropped", outcome="failure", tags=["globex", "billing"], ts=T0)
        other = db.owner("bo").record("debug", "Acme at bo's", outcome="success", tags=["acme-corp"], ts=T0)
        within = mem.erase(tags=["ACME corp"], since=T0 - dt.timedelta(days=100), reason="Acme asked to be forgotten")
        assert set(within.ids) == {hot.id, corrected.id, old.id} and earlier.id in mem
        assert set(mem.erase(tags="acme-corp", reason="the rest").ids) == {earlier.id}
        assert [e.id for e in mem.episodes(include_archived=True)] == [globex.id] and other.id in db.owner("bo")
        assert not mem.ask("Quokkabank", include_archived=True, include_superseded=True).found
        assert mem.erase(tags=["acme-corp"], reason="again").count == 0  # nothing left: an audited no-op
        for bad, said in ((["!!!"], "tag '!!!'"), (b"acme", "erase tags b'acme'")):
            with pytest.raises(ValidationError, match=re.escape(said)):
                mem.erase(tags=bad, reason="x")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="everything=True: give one"):
            mem.erase(tags=["globex"], everything=True, reason="x")
        assert globex.id in mem
        db.compact()
        assert db.check().ok
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert b"Quokkabank" not in raw and b"quokkabank" not in raw


def summarized_burst(db: memdb.Database, mem: memdb.Memory, n: int) -> tuple[list[str], Any]:
    """A burst of ``n`` events and, two days on, its one summary."""
    ids = burst(mem, n)
    db.maintain(now=T0 + dt.timedelta(days=2))
    (summary,) = summaries_of(mem)
    return ids, summary


def test_erase_cascades_to_summaries_and_archived(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    ids, summary = summarized_burst(ldb, mem, 6)
    mem.archive(ids[1])
    report = mem.erase([ids[0], ids[1]], reason="gdpr")
    assert set(report.ids) == {ids[0], ids[1], summary.episode.id}
    assert ldb.check().ok


def test_erase_takes_archived_summaries_citing_the_sources(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    ids, summary = summarized_burst(ldb, mem, 7)
    sid = summary.episode.id
    mem.archive(sid)  # the summary's cites now live only in its cold record
    report = mem.erase(ids[:2], reason="user asked to forget these")
    assert sid in report.ids and sid not in mem
    assert ldb.globals["COLD"].get(("ana", sid)) is None
    with pytest.raises(NotFoundError):
        mem.restore(sid)
    assert ldb.check().ok


def test_delete_takes_the_summaries_citing_the_episode(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    ids, summary = summarized_burst(ldb, mem, 6)
    mem.delete(ids[0], reason="user asked")
    assert summary.episode.id not in mem and ids[0] not in mem
    assert ldb.check().ok


@pytest.mark.parametrize(("kept", "codec_after"), [(220, "zstd-dict"), (15, "zstd")])
def test_erase_retrains_the_cold_dictionary(tmp_path: Path, clock: Clock, kept: int, codec_after: str) -> None:
    path = tmp_path / "dict"
    secret = "Quokkafalcon"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        with db.transaction():
            old = T0 - dt.timedelta(days=90)
            secrets = [mem.record("debug", f"{secret} merger step {i} with Zanzibarco", outcome="failure", ts=old + dt.timedelta(minutes=i),
                                  content=f"Confidential: {secret} acquisition closes in Q3").id for i in range(200)]  # fmt: skip
            keep = [mem.record("routine", f"Nightly backup {i} verified on host db-{i % 7}", outcome="success", tags=["backups"],
                               content="Checked snapshot sizes, restore test passed.", ts=old + dt.timedelta(hours=5, minutes=i)).id
                    for i in range(kept)]  # fmt: skip
        mems = db.globals["MEM"]
        originals = {eid: codec.pack_value(mems[("ana", episode_day(eid), eid)]) for eid in keep}
        for eid in [secrets[0], *keep]:  # the first archive trains on every record, the secret ones too
            mem.archive(eid)
        dicts = db.globals["COLDDICT"]
        trained = {s[1] for s, _ in dicts.items(("ana",)) if isinstance(s[1], int)}
        assert trained and {v["codec"] for _, v in db.globals["COLD"].items(("ana",))} == {"zstd-dict"}

        cold = dict(db.globals["COLD"].items(("ana",)))
        with pytest.raises(RuntimeError), db.transaction():
            mem.erase(secrets, reason="deletion request")
            raise RuntimeError("rolled back")
        assert dict(db.globals["COLD"].items(("ana",))) == cold  # never half-written

        assert mem.erase(secrets, reason="deletion request").count == 200
        assert db.check().ok
        restored = mem.restore(keep[1])  # in the same process: no stale cached dictionary
        assert codec.pack_value(mems[("ana", restored.day, restored.id)]) == originals[restored.id]
        mem.archive(keep[1])
        db.compact()
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert raw.count(secret.encode()) == 0 and raw.count(b"Zanzibarco") == 0
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        left = {s[1] for s, _ in db.globals["COLDDICT"].items(("ana",)) if isinstance(s[1], int)}
        assert not left & trained  # every dictionary that learned from the erased text is gone
        assert {v["codec"] for _, v in db.globals["COLD"].items(("ana",))} == {codec_after}
        for eid in keep:
            assert mem.restore(eid).id == eid
            assert codec.pack_value(db.globals["MEM"][("ana", episode_day(eid), eid)]) == originals[eid]
        mem.archive(keep[0])  # archiving goes on after the dictionary was dropped
        assert mem.restore(keep[0]).id == keep[0] and db.check().ok


@pytest.mark.lmdb_only(reason="reads LMDB's files, like test_planted_pii_never_reaches_disk")
def test_erased_text_is_gone_from_disk_after_compact(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "erase"
    secret = "Zanzibar-quokka-7731 plan"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        keep = mem.record("exchange", "unrelated note", ts=T0)
        for i in range(20):
            clock.now = T0 + dt.timedelta(minutes=i)  # captured as it happens
            mem.record("exchange", f"{secret} number {i}", content=f"details of {secret}", ts=clock.now)
        clock.now = T0
        archived = mem.record("exchange", f"{secret} archived", ts=T0 - dt.timedelta(days=400))
        mem.archive(archived.id)
        report = mem.erase(everything=True, reason="deletion request")
        assert report.count == 22
        audit = [a for a in mem.audit() if a["action"] == "erase"]
        assert len(audit) == 1 and secret not in json.dumps(audit, default=str)
        db.compact()
        assert mem.count() == 0 and db.check().ok
        mem.record("exchange", "still usable after compaction", ts=T0)
        assert keep.id not in mem
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert b"Zanzibar" not in raw and b"quokka" not in raw
    with memdb.open(path, clock=clock) as db:
        assert db.owner("ana").count() == 1


def test_retention_is_opt_in_and_audited(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    old = mem.record("exchange", "ancient", ts=T0 - dt.timedelta(days=100))
    new = mem.record("exchange", "recent", ts=T0 - dt.timedelta(days=10))
    assert ldb.maintain(now=T0).purged == 0
    ldb.configure(retention_days=90)
    report = ldb.maintain(now=T0)
    assert report.purged == 1 and old.id not in mem and new.id in mem
    (entry,) = [a for a in mem.audit() if a["action"] == "retention"]
    assert entry["episodes"] == [old.id] and "ancient" not in json.dumps(entry, default=str)


def test_retention_purges_the_old_values_of_a_memory_kept_current(tmp_path: Path, clock: Clock, backend: str) -> None:
    """Storage limitation over a year of daily maintain: with retention_days=30, a fact updated
    every month kept every earlier value for good (only a chain whose current version was old
    was pruned). A superseded version goes once its own time is past the cutoff, audited; the
    current value stays whole and readable, and so does approved knowledge."""
    path = tmp_path / "year"
    value = "works at employer {:02d} wombatco".format
    with memdb.open(path, clock=clock) as db:
        db.configure(retention_days=30)
        mem = db.owner("ana")
        ep = mem.record("debug", "Deploy failed: the migration held a lock", outcome="failure")
        lesson = mem.save_lesson("Run migrations before the deploy window", cites=[ep.id])
        db.approve(lesson.id, by="rev")
        mem.record("fact", value(0), key="ana/employer")
        for day in range(1, 366):
            clock.advance(days=1)
            if day % 30 == 0:
                mem.record("fact", value(day // 30), key="ana/employer")
            db.maintain(now=clock.now)
        current = mem.fact("ana/employer")
        assert (current.summary, current.supersedes) == (value(12), None)  # day 360; day 330's value is past the cutoff
        assert [v.summary for v in mem.versions(current.id)] == [value(12)]
        purged = [eid for a in mem.audit() if a["action"] == "retention" for eid in a["episodes"]]
        assert len(purged) == 13 and ep.id in purged  # the twelve earlier values and the old episode
        assert db.entry(lesson.id).state == "approved" and db.entry(lesson.id).text  # retention never deletes approved knowledge
        assert "employer 03" not in json.dumps(mem.audit(), default=str)
        assert db.check().ok
        db.compact()
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert not [n for n in range(12) if f"employer {n:02d}".encode() in raw]
    assert backend != "lmdb" or f"employer {12:02d}".encode() in raw


def test_maintain_is_idempotent(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    burst(mem, 9)
    mem.record("debug", "stale", outcome="failure", ts=T0 - dt.timedelta(days=200))
    now = T0 + dt.timedelta(days=40)
    first = ldb.maintain(now=now)
    state = {s: v for s, v in ldb.globals["EPST"].items()}
    second = ldb.maintain(now=now)
    assert first.summaries == 1 and first.archived >= 1
    assert (second.summaries, second.archived, second.rescore_changed, second.purged) == (0, 0, 0, 0)
    assert {s: v for s, v in ldb.globals["EPST"].items()} == state
    assert "archived" in str(first)


def test_episodes_with_archived_reads_their_full_records_in_time_order(ldb: memdb.Database) -> None:
    """What an export needs: every episode, the archived ones read back from cold storage."""
    mem = ldb.owner("ana")
    ids = burst(mem, 4)
    mem.archive(ids[1])
    hot = [e.id for e in mem.episodes()]
    assert ids[1] not in hot
    every = list(mem.episodes(include_archived=True))
    assert [e.id for e in every] == ids and every[1].status == "archived" and every[1].content == mem.restore(ids[1]).content
    assert [e.id for e in mem.episodes(include_archived=True, reverse=True)] == ids[::-1]


def test_maintain_skips_an_episode_erased_after_it_was_found_due(ldb: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process may erase (or archive) an episode between archive_due finding it and
    archiving it: maintain goes on with the rest instead of failing with NotFoundError."""
    only_feedback_counts(ldb)
    mem = ldb.owner("ana")
    ids = [mem.record("debug", f"old {i}", outcome="failure", feedback=-1.0, ts=T0).id for i in range(4)]
    original = ldb.lifecycle._archive
    erased: list[str] = []

    def archive_racing(m: Any, episode_ids: list[str], now: dt.datetime, rule: str, due: bool = False) -> tuple[list[str], list[str]]:
        if not erased:  # the other process's erase lands first
            erased.append(episode_ids[0])
            ldb.owner("ana").erase([episode_ids[0]], reason="deletion request")
        return original(m, episode_ids, now, rule, due)

    monkeypatch.setattr(ldb.lifecycle, "_archive", archive_racing)
    assert ldb.maintain(now=T0 + dt.timedelta(days=31)).archived == 3
    kept = {str(subs[1]): state["status"] for subs, state in ldb.globals["EPST"].items(("ana",))}
    assert kept == {i: "archived" for i in ids if i != erased[0]}
    assert ldb.check().ok


def test_settings_changed_by_another_handle_are_kept_and_used(tmp_path: Path, clock: Clock) -> None:
    """configure() applies its change to the settings as saved now, so another handle's change
    stays; maintain() reads the rules again before it runs."""
    with memdb.open(tmp_path / "s", clock=clock) as a, memdb.open(tmp_path / "s", clock=clock) as b:
        b.owner("ana").record("debug", "old thing", outcome="failure", ts=T0 - dt.timedelta(days=60))
        assert b.settings.retention_days is None
        a.configure(retention_days=30)
        b.configure(access_flush_every=64)
        assert b.settings.retention_days == 30 and b.settings.access_flush_every == 64
        a.configure(retention_days=40)
        assert b.maintain(now=T0).purged == 1 and b.settings.retention_days == 40


def test_erasing_one_episode_rewrites_the_blocks_it_shares(tmp_path: Path, clock: Clock) -> None:
    """Erasure takes one episode out of blocks other episodes still fill: after compact(), no
    byte of its own words remains (its id stays in the audit record, by design), its column
    record is zeroed, and the others are found as before."""
    path = tmp_path / "erase-one"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        others = []
        for i in range(300):  # several blocks of the shared words
            clock.now = T0 + dt.timedelta(minutes=i)
            others.append(mem.record("exchange", f"deploy rollback number {i}", ts=clock.now).id)
        clock.now = T0 + dt.timedelta(minutes=150, seconds=30)
        gone = mem.record("exchange", "deploy rollback of the xylophonist wombatcake", ts=clock.now)
        assert mem.recall(text="wombatcake").total == 1
        doc = db.episodes.layout.text.number("ana", gone.id)
        assert doc is not None
        mem.erase([gone.id], reason="deletion request")
        assert mem.recall(text="deploy").total == 300 and mem.recall(text="wombatcake").total == 0
        assert db.episodes.layout.text.number("ana", gone.id) is None and db.episodes.layout.text.column("ana", doc) == Column(
            0, 0, 0, 0, False
        )
        db.compact()
        assert db.check().ok
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    for trace in (b"wombatcake", b"xylophon"):  # its words, stemmed or not
        assert trace not in raw
    with memdb.open(path, clock=clock) as db:
        assert {m.episode.id for m in db.owner("ana").recall(text="rollback", limit=500)} == set(others)


def stored(db: memdb.Database) -> str:
    """Every node of every global as text: what is left, on either backend."""
    with db.snapshot():
        return json.dumps({name: list(db.globals[name].items()) for name in db.globals.names()}, default=str)


def test_erasing_a_session_forgets_its_id(tmp_path: Path, clock: Clock) -> None:
    """A session id is capture too: once its last episode is erased, distill's closed mark and
    the distill and export_timeline audit records no longer name it (they kept it, on disk
    after compact()); a session with episodes left keeps its marks."""
    path = tmp_path / "sessions"
    gone, kept = "acmecorp-escalation-0701", "globex-rollout-0702"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        events: dict[str, list[str]] = {}
        for session in (gone, kept):
            asked = mem.record_exchange(session, "the webhooks fail", "Checking.")
            call = mem.record_tool_call(session, "check_webhooks", {"provider": "x"})
            mem.record_tool_result(call.id, {"failed": 3})
            events[session] = [asked.id, call.id]
            assert mem.close_session(session, kind="debug", outcome="success").status == "closed"
            mem.export_timeline(session, tmp_path / f"timeline-{session}.json")
        erased = mem.erase(events[gone], reason="customer asked to be forgotten")
        assert erased.count == 3  # with the episode distilled from them, the session's last
        assert gone not in stored(db) and kept in stored(db)
        assert [s for s, _ in db.globals["DIST"].items(("ana", "closed"))] == [("ana", "closed", kept)]
        records = [a for a in mem.audit() if a["action"] in ("distill", "export_timeline")]
        assert [a.get("session") for a in records] == ["[erased 2026-06-01]", "[erased 2026-06-01]", kept, kept]
        assert all(a["steps_sha256"] for a in records if a["action"] == "export_timeline")  # hashes stay
        assert mem.close_session(kept, kind="debug", outcome="success").status == "already_closed"
        db.compact()
        assert db.check().ok
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert gone.encode() not in raw


def test_erasure_redacts_what_audit_records_keep(tmp_path: Path, clock: Clock) -> None:
    """Audit records about an erased episode keep its id and hashes, not its content: a fact's
    key (recording it again wrote "new value for fact <key>"), a supersede reason in the
    caller's words, an archive's one line all survived erase() and compact() before."""
    path = tmp_path / "audit"
    with memdb.open(path, clock=clock) as db:
        mem, bo = db.owner("ana"), db.owner("bo")
        first = mem.record("fact", "first value", key="ana/diagnosis.zebrakey")
        second = mem.record("fact", "second value", key="ana/diagnosis.zebrakey")
        ep = mem.record("debug", "deploy broke", outcome="failure", ts=T0 - dt.timedelta(days=90))
        fixed = mem.supersede(ep.id, reason="zebrareason: it was the migration", outcome="partial")
        mem.archive(fixed.id)
        other = bo.record("fact", "kept", key="bo/zebrakeeps")
        bo.record("fact", "kept again", key="bo/zebrakeeps")
        mem.erase(everything=True, reason="deletion request")
        ana = mem.audit()
        assert "zebra" not in json.dumps(ana, default=str)
        versions = [a for a in ana if a["action"] == "supersede"]
        assert [(a["episode"], a["successor"]) for a in versions] == [(first.id, second.id), (ep.id, fixed.id)]
        assert {a["reason"] for a in versions} == {"[erased 2026-06-01]"} and versions[0]["key"] == "[erased 2026-06-01]"
        (archive,) = [a for a in ana if a["action"] == "archive"]
        assert archive["content_hash"] and archive["rule"] and archive["one_line"] == "[erased 2026-06-01]"
        assert [a["key"] for a in bo.audit() if a["action"] == "supersede"] == ["bo/zebrakeeps"] and other.id in bo.versions(other.id)[0].id
        db.compact()
        text = stored(db)
        assert "zebrakey" not in text and "zebrareason" not in text and "zebrakeeps" in text
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert b"zebrakey" not in raw and b"zebrareason" not in raw


def test_erasure_redacts_a_session_s_name_and_keeps_why_an_entry_went(ldb: memdb.Database) -> None:
    """A session named like a word ("success") had its distill record's outcome redacted too, and
    an entry erased on request had its own erase record's reason redacted, so the trail no longer
    said why it went (a review's finds)."""
    mem = ldb.owner("ana")
    mem.record_exchange("success", "the deploy of the billing job", "done")
    closed = mem.close_session("success", kind="debug", outcome="success")
    assert closed.episode is not None
    mem.save_lesson("Run migrations first")
    mem.erase(everything=True, reason="deletion request")
    audit = mem.audit()
    (distill,) = [a for a in audit if a["action"] == "distill"]
    assert distill["session"] == "[erased 2026-06-01]" and distill["outcome"] == "success"
    assert [a["reason"] for a in audit if a["action"] == "erase" and a.get("entry")] == ["erased on request"]


def test_reading_an_archived_episode_says_it_is_archived(ldb: memdb.Database) -> None:
    """``get`` of an id an answer with include_archived=True had just shown said "no such episode"."""
    mem = ldb.owner("ana")
    ep = mem.record("debug", "Twilio webhook retries", outcome="failure")
    mem.archive(ep.id)
    with pytest.raises(NotFoundError, match=r"archived, so its full record is in cold storage \(restore\("):
        mem.get(ep.id)
    with pytest.raises(NotFoundError, match="no such episode"):  # another owner's archived episode is unknown to this one
        ldb.owner("bo").get(ep.id)
    assert mem.restore(ep.id).summary == "Twilio webhook retries" and mem.get(ep.id).status == "active"


def test_archiving_keeps_decisions_words_and_restoring_takes_them_out(ldb: memdb.Database) -> None:
    mem = ldb.owner("ana")
    ep = mem.record("debug", "Chose the store", outcome="success", decisions={"database": "postgres"})
    mem.archive(ep.id)
    assert "postgres" in ldb.globals["EPST"][("ana", ep.id)]["decided"]
    mem.restore(ep.id)
    assert "decided" not in ldb.globals["EPST"][("ana", ep.id)] and ldb.check().ok


def test_older_archives_get_their_decisions_words_back_once(tmp_path: Path) -> None:
    """Archives made before the header kept decisions' words get them from their cold record on
    open, once (``^LIFE("archived decisions kept")``)."""
    clock = [dt.datetime(2026, 3, 1, 9, tzinfo=dt.UTC)]
    with memdb.open(tmp_path / "db", clock=lambda: clock[0]) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "Debrief for Maya", outcome="failure", decisions={"next": "reject"})
        mem.archive(ep.id)
        with db.transaction():  # as an archive made before 2026-12-06 left it
            state = db.globals["EPST"][("ana", ep.id)]
            db.globals["EPST"].set(("ana", ep.id), {k: v for k, v in state.items() if k != "decided"})
            db.globals["LIFE"].kill(("archived decisions kept",))
        assert not mem.ask("Which did we reject?", include_archived=True).found
    with memdb.open(tmp_path / "db", clock=lambda: clock[0]) as db:
        assert [m.id for m in db.owner("ana").ask("Which did we reject?", include_archived=True)] == [ep.id]


def test_restoring_reads_the_told_windows_again(tmp_path: Path) -> None:
    """An episode archived under layout 19 kept no told window for "on 15.03.2026" (the upgrade
    reads only hot records): restoring reads its told windows as this code does."""
    clock = [dt.datetime(2026, 3, 20, 9, tzinfo=dt.UTC)]
    with memdb.open(tmp_path / "db", clock=lambda: clock[0]) as db:
        mem = db.owner("books")
        ep = mem.record("debug", "The transfer bounced on 15.03.2026", outcome="failure")
        mem.archive(ep.id)
        with db.transaction():  # as layout 19 left it: no told window
            state = db.globals["EPST"][("books", ep.id)]
            db.globals["EPST"].set(("books", ep.id), {k: v for k, v in state.items() if k != "told"})
        mem.restore(ep.id)
        assert [m.id for m in mem.ask("What bounced on 15.03.2026?")] == [ep.id] and db.check().ok


def test_erasing_an_empty_list_of_ids_is_refused(ldb: memdb.Database) -> None:
    """MCP forget_episodes with no ids said "erased 0 episodes for good" and wrote an audit record."""
    mem = ldb.owner("ana")
    before = len(mem.audit())
    with pytest.raises(ValidationError, match="the list of ids is empty"):
        mem.erase([], reason="asked to")
    assert len(mem.audit()) == before
