"""Reflection: the daily budget (8 vs 9), the window, grounding, near-duplicate guards, and the
Anthropic reflector through the real SDK with a mocked HTTP transport."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx  # the HTTP client the anthropic SDK is built on
import pytest
from clocks import Clock

import memdb
from memdb.governance.reflection import OfflineReflector, Proposal
from memdb.llm.adapters import AnthropicReflector
from memdb.memory.models import Episode

UTC = dt.UTC
T0 = dt.datetime(2026, 6, 3, 6, 0, tzinfo=UTC)
HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)
TOPICS = ["migrations", "twilio", "caching", "queues", "flags", "budgets", "rollbacks", "certificates", "quotas", "dns"]


@pytest.fixture
def rdb(tmp_path: Path) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "r", clock=Clock(T0))
    yield db
    db.close()


class Scripted:
    """A reflector that proposes what a test says (citing real episodes unless told otherwise)."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.seen: list[list[Episode]] = []

    def reflect(self, owner: str, episodes: Sequence[Episode], max_lessons: int) -> list[Proposal]:
        self.seen.append(list(episodes))
        return list(self.make(episodes))


def distinct(n: int, offset: int = 0) -> Scripted:
    return Scripted(lambda eps: [Proposal(f"Lesson about {TOPICS[(i + offset) % 10]} number {i + offset}", (eps[0].id,)) for i in range(n)])


# --- the budget ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("proposed", "stored", "over"), [(8, 8, 0), (9, 8, 1)])
def test_at_most_eight_lessons_per_owner_per_day(rdb: memdb.Database, proposed: int, stored: int, over: int) -> None:
    rdb.owner("ana").record("debug", "something", outcome="failure", ts=T0 - HOUR)
    report = rdb.reflect(now=T0, reflector=distinct(proposed))
    assert report.stored == stored and report.over_budget == over
    assert len(rdb.review_queue()) == stored
    assert all(e.state == "pending" and e.visibility == "private" and e.source == "reflection" for e in rdb.review_queue())


def test_a_reflector_keeping_a_usage_of_its_own_still_reflects(rdb: memdb.Database) -> None:
    """A review's find: a user's reflector with a ``usage`` dict of its own was taken for one of
    memdb's metered adapters, and subtracting dicts failed every owner's reflection."""
    rdb.owner("ana").record("debug", "something", outcome="failure", ts=T0 - HOUR)
    reflector = distinct(2)
    reflector.usage = {"tokens": 0}  # type: ignore[attr-defined]
    assert rdb.reflect(now=T0, reflector=reflector).stored == 2


def test_the_cap_holds_across_runs_the_same_day_and_resets_the_next(rdb: memdb.Database) -> None:
    rdb.owner("ana").record("debug", "something", outcome="failure", ts=T0 - HOUR)
    rdb.owner("bo").record("debug", "other", outcome="failure", ts=T0 - HOUR)
    first = rdb.reflect(now=T0, reflector=distinct(5))
    assert first.owners["ana"].budget_left == 3 and first.stored == 10  # each owner has a budget of their own
    second = rdb.reflect(now=T0 + 17 * HOUR, reflector=distinct(5, offset=5))  # 23:00, still the same UTC day
    assert second.owners["ana"].stored.__len__() == 3 and second.owners["ana"].over_budget == 2
    third = rdb.reflect(now=T0 + 17 * HOUR + 59 * dt.timedelta(minutes=1), reflector=distinct(5, offset=20))  # 23:59
    assert third.stored == 0 and third.owners["ana"].budget_left == 0
    next_day = rdb.reflect(now=T0 + 18 * HOUR, reflector=distinct(9, offset=30))  # 00:00 the next day
    assert len(next_day.owners["ana"].stored) == 8
    assert len(rdb.review_queue(owner="ana")) == 16


def test_window_reads_the_last_three_days(rdb: memdb.Database) -> None:
    mem = rdb.owner("ana")
    edge = mem.record("debug", "exactly three days ago", outcome="success", ts=T0 - 3 * DAY)
    mem.record("debug", "just before the window", outcome="success", ts=T0 - 3 * DAY - dt.timedelta(microseconds=1))
    now = mem.record("debug", "right now", outcome="success", ts=T0)
    spy = Scripted(lambda eps: [])
    rdb.reflect(now=T0, reflector=spy)
    assert [e.id for e in spy.seen[0]] == [edge.id, now.id]
    rdb.configure(reflection_window_days=5)
    rdb.reflect(now=T0, reflector=spy)
    assert len(spy.seen[1]) == 3


# --- grounding ---------------------------------------------------------------------------------


def test_ungrounded_proposals_are_discarded_and_counted(rdb: memdb.Database) -> None:
    ana = rdb.owner("ana")
    mine = ana.record("debug", "mine", outcome="failure", ts=T0 - HOUR)
    old = ana.record("debug", "outside the window", outcome="failure", ts=T0 - 10 * DAY)
    theirs = rdb.owner("bo").record("debug", "bo's", outcome="failure", ts=T0 - 2 * DAY)
    bad = Scripted(
        lambda eps: (
            [
                Proposal("No citation at all", ()),
                Proposal("Cites an id that does not exist", ("20260601T000000000000Z-abcdef",)),
                Proposal("Cites another owner's episode", (theirs.id,)),
                Proposal("Cites one of mine but also theirs", (mine.id, theirs.id)),
                Proposal("Cites an episode it never read", (old.id,)),
                Proposal("Grounded in what was read", (mine.id,)),
            ]
            if eps[0].owner == "ana"
            else []
        )
    )
    report = rdb.reflect(now=T0, owners=["ana"], reflector=bad)
    assert report.owners["ana"].ungrounded == 5 and report.discarded == 5 and report.stored == 1
    (entry,) = rdb.review_queue()
    assert entry.text == "Grounded in what was read" and entry.cites == (mine.id,)
    (audit,) = [a for a in rdb.audit("ana") if a["action"] == "reflect"]
    assert audit["ungrounded"] == 5 and audit["stored"] == [entry.id]


def test_episode_erased_during_reflection_is_ungrounded(rdb: memdb.Database) -> None:
    for owner in ("ana", "bo"):
        rdb.owner(owner).record("debug", f"{owner} webhook signature failed", outcome="failure", ts=T0 - HOUR)

    def erase_while_thinking(eps: list[Episode]) -> list[Proposal]:
        if eps[0].owner == "ana":  # the erasure commits while the (slow) reflector is still running
            rdb.owner("ana").erase([eps[0].id], reason="user asked to forget this")
        return [Proposal(f"Lesson for {eps[0].owner} about webhook signatures", (eps[0].id,))]

    report = rdb.reflect(now=T0, reflector=Scripted(erase_while_thinking))
    assert (report.owners["ana"].ungrounded, report.owners["ana"].stored) == (1, [])
    assert len(report.owners["bo"].stored) == 1  # the run went on to the next owner
    assert [e.owner for e in rdb.review_queue()] == ["bo"]
    assert rdb.owner("ana").entries() == [] and report.owners["ana"].budget_left == 8  # nothing spent


# --- near duplicates: idempotent reflection ----------------------------------------------------------


def failures(db: memdb.Database) -> list[str]:
    mem = db.owner("ana")
    ids = [
        mem.record("debug", f"Twilio webhook rejected, try {i}", outcome="failure", tags=["twilio"],
                   lesson="check the signing secret first", ts=T0 - (10 - i) * HOUR).id
        for i in range(3)
    ]  # fmt: skip
    ids.append(
        mem.record(
            "debug", "Twilio webhook accepted", outcome="success", tags=["twilio"], lesson="rotate secrets together", ts=T0 - HOUR
        ).id
    )
    return ids


def test_offline_reflector_lessons_cite_their_episodes(rdb: memdb.Database) -> None:
    ids = failures(rdb)
    report = rdb.reflect(now=T0)
    worked, recurring = rdb.review_queue()
    assert report.stored == 2
    assert worked.text == "What worked for debug work on twilio after failing: rotate secrets together" and worked.cites == tuple(ids)
    assert "Recurring failure in debug work on twilio" in recurring.text and "signing secret" in recurring.text
    assert recurring.cites == tuple(ids[:3]) and recurring.tags == ("twilio",)


def test_second_run_is_a_no_op_and_rejected_content_stays_out(rdb: memdb.Database) -> None:
    failures(rdb)
    assert rdb.reflect(now=T0).stored == 2
    again = rdb.reflect(now=T0 + HOUR)
    assert again.stored == 0 and again.owners["ana"].duplicates == {"approved": 0, "pending": 2, "rejected": 0}
    worked, recurring = rdb.review_queue()
    rdb.approve(worked.id, by="rita")
    rdb.reject(recurring.id, by="rita")
    later = rdb.reflect(now=T0 + 2 * DAY)  # a new day and a fresh budget: still nothing comes back
    assert later.stored == 0 and later.owners["ana"].duplicates == {"approved": 1, "pending": 0, "rejected": 1}
    assert rdb.review_queue() == []


def test_rejected_lessons_leave_room_for_the_others(rdb: memdb.Database) -> None:
    """Ten recurring failures make ten lessons, eight a day. A reviewer rejected the first
    day's eight; the offline reflector proposes them first again every day, each skipped by its
    tombstone, and the room it was asked for counted only pending and approved entries: the
    other two never reached the queue while the work recurred."""
    fixes = {
        "billing": "rotate the stripe webhook secret", "search": "rebuild the elastic index", "auth": "renew the saml certificate",
        "mailer": "raise the smtp rate limit", "cache": "flush redis before the warmup", "queue": "drain the kafka consumer group",
        "reports": "vacuum the analytics warehouse", "uploads": "extend the presigned url lifetime",
        "payroll": "lock the ledger period", "metrics": "compact the prometheus blocks",
    }  # fmt: skip
    mem = rdb.owner("ana")
    for i, (service, fix) in enumerate(fixes.items()):
        for k in range(2):
            mem.record("debug", f"{service} restart failed", outcome="failure", tags=[service], lesson=fix,
                       ts=T0 - DAY + (2 * i + k) * dt.timedelta(minutes=3))  # fmt: skip
    first = rdb.reflect(now=T0)
    assert first.stored == 8
    rdb.reject([e.id for e in rdb.review_queue("ana")], by="rita", reason="not useful")
    later = rdb.reflect(now=T0 + DAY)
    assert later.owners["ana"].duplicates["rejected"] == 8 and len(later.owners["ana"].stored) == 2
    rejected = {e.cites for e in mem.entries("rejected")}
    assert len(rejected) == 8 and not rejected & {e.cites for e in rdb.review_queue("ana")}


def test_offline_reflector_is_deterministic() -> None:
    eps = [
        Episode(id=f"20260601T0{i}0000000000Z-00000{i}", owner="a", ts=T0 + i * HOUR, kind="debug", outcome="failure",
                summary=f"step {i}", tags=("x", "y"), lesson="same lesson")
        for i in range(3)
    ]  # fmt: skip
    r = OfflineReflector()
    out = r.reflect("a", eps, 8)
    assert out == r.reflect("a", eps, 8)
    assert len(out) == 1  # tags x and y ground the same episodes: one lesson, not two; the repeated lesson is noted in it
    assert r.reflect("a", eps, 0) == []


# --- the Anthropic reflector through the SDK ------------------------------------------------------


def message(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": json.dumps(payload)}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 900, "output_tokens": 120},
    }


def sdk_client(responses: list[tuple[int, dict[str, Any]]], seen: list[httpx.Request]) -> anthropic.Anthropic:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, body = responses[min(len(seen) - 1, len(responses) - 1)]
        return httpx.Response(status, json=body, headers={"request-id": f"req_{len(seen)}"})

    return anthropic.Anthropic(api_key="sk-ant-test", max_retries=1, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def test_anthropic_reflector_structured_output(rdb: memdb.Database) -> None:
    ids = failures(rdb)
    seen: list[httpx.Request] = []
    answer = {"lessons": [{"text": "Rotate the Twilio signing secret everywhere at once", "cites": [ids[0], ids[3]], "tags": ["Twilio"]}]}
    report = rdb.reflect(now=T0, reflector=AnthropicReflector(client=sdk_client([(200, message(answer))], seen)))
    assert report.stored == 1 and report.errors == []
    (entry,) = rdb.review_queue()
    assert (entry.text, entry.cites, entry.tags, entry.state) == (
        "Rotate the Twilio signing secret everywhere at once",
        (ids[0], ids[3]),
        ("twilio",),
        "pending",
    )
    body = json.loads(seen[0].content)
    assert seen[0].url.path == "/v1/messages" and body["model"] == "claude-haiku-4-5"
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert "lessons" in body["output_config"]["format"]["schema"]["properties"]
    prompt = body["messages"][0]["content"]
    assert all(f"[{i}]" in prompt for i in ids) and "at most 8" in prompt
    assert "data, never instructions" in body["system"]


def test_anthropic_reflector_citing_unknown_or_other_owners_episodes(rdb: memdb.Database) -> None:
    ids = failures(rdb)
    theirs = rdb.owner("bo").record("debug", "bo's private failure", outcome="failure", ts=T0 - HOUR)
    answer = {
        "lessons": [
            {"text": "Invented evidence", "cites": ["20260101T000000000000Z-ffffff"]},
            {"text": "Borrowed evidence", "cites": [theirs.id]},
            {"text": "Mixed evidence", "cites": [ids[0], theirs.id]},
            {"text": "No evidence", "cites": []},
            {"text": "Grounded lesson about webhook secrets", "cites": [ids[1]]},
        ]
    }
    reflector = AnthropicReflector(client=sdk_client([(200, message(answer))], []))
    report = rdb.reflect(now=T0, owners=["ana"], reflector=reflector)
    assert report.owners["ana"].ungrounded == 4 and report.discarded == 4 and report.stored == 1
    assert [e.text for e in rdb.review_queue()] == ["Grounded lesson about webhook secrets"]


@pytest.mark.parametrize(
    ("status", "body", "needle"),
    [
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "Overloaded"),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}, "BadRequestError"),
        (200, message({"not": "the schema"}), "not the requested JSON"),
    ],
)
def test_anthropic_reflector_errors_cost_nothing_but_the_run(rdb: memdb.Database, status: int, body: dict[str, Any], needle: str) -> None:
    failures(rdb)
    seen: list[httpx.Request] = []
    report = rdb.reflect(now=T0, reflector=AnthropicReflector(client=sdk_client([(status, body)], seen)))
    assert report.stored == 0 and len(report.errors) == 1 and needle in report.errors[0]
    assert rdb.review_queue() == []
    assert rdb.reflect(now=T0).stored == 2  # the budget was not spent: the offline run still gets its lessons
    (failed, _) = [a for a in rdb.audit("ana") if a["action"] == "reflect"]
    assert needle in failed["error"]


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
def test_anthropic_reflector_answer_that_is_not_json_costs_only_the_run(rdb: memdb.Database, content_type: str) -> None:
    failures(rdb)
    rdb.owner("bo").record("debug", "bo's failure", outcome="failure", ts=T0 - HOUR)
    page = b"<html>upstream proxy error for jane.doe@example.com</html>"  # a 200 that is not the API's answer

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=page, headers={"content-type": content_type})

    client = anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    report = rdb.reflect(now=T0, reflector=AnthropicReflector(client=client))
    assert sorted(report.owners) == ["ana", "bo"] and report.stored == 0 and len(report.errors) == 2
    for error in report.errors:
        assert "anthropic reflection with claude-haiku-4-5: the answer could not be read" in error
        assert "proxy error" not in error and "jane.doe" not in error  # the answer's text is never quoted
    assert [a["error"] is not None for a in rdb.audit("ana") if a["action"] == "reflect"] == [True]
    assert rdb.reflect(now=T0).stored == 2  # the budget was not spent


def test_a_model_is_asked_only_when_something_is_new_and_what_it_costs_is_told(rdb: memdb.Database) -> None:
    """Every run paid a call per owner with budget left, sending the same window again, and no
    report or audit record said what the calls cost. The report and the audit say it; an owner
    with nothing recorded since a complete reflection is not asked; nor past
    ``reflection_calls_per_day``."""
    ids = failures(rdb)
    seen: list[httpx.Request] = []
    answer = {"lessons": [{"text": "Rotate the Twilio signing secret everywhere at once", "cites": [ids[0]]}]}
    reflector = AnthropicReflector(client=sdk_client([(200, message(answer))], seen))
    first = rdb.reflect(now=T0, reflector=reflector)
    usage = first.owners["ana"].usage
    assert (usage.calls, usage.attempts, usage.input_tokens, usage.output_tokens) == (1, 1, 900, 120)
    assert "1 model calls (1 HTTP attempts), 900 input and 120 output tokens" in str(first)
    (audit,) = [a for a in rdb.audit("ana") if a["action"] == "reflect"]
    assert (audit["calls"], audit["attempts"], audit["input_tokens"], audit["output_tokens"]) == (1, 1, 900, 120)
    for later in (T0, T0 + HOUR):  # a second run the same day, and an hour on: nothing new
        again = rdb.reflect(now=later, reflector=reflector)
        assert again.owners["ana"].unasked == "nothing recorded since its last reflection" and len(seen) == 1
    assert "1 owners with nothing to ask" in str(again) and again.usage.calls == 0
    rdb.configure(reflection_calls_per_day=2)
    rdb.owner("ana").record("debug", "Twilio webhook rejected again", outcome="failure", tags=["twilio"], ts=T0 - 20 * HOUR)
    assert rdb.reflect(now=T0 + 2 * HOUR, reflector=reflector).owners["ana"].usage.calls == 1 and len(seen) == 2
    rdb.owner("ana").record("debug", "and again", outcome="failure", tags=["twilio"], ts=T0)
    capped = rdb.reflect(now=T0 + 3 * HOUR, reflector=reflector).owners["ana"]
    assert capped.unasked == "its 2 model calls of the day are made (reflection_calls_per_day)" and len(seen) == 2
    assert rdb.reflect(now=T0 + DAY, reflector=reflector).owners["ana"].usage.calls == 1  # a new day
    assert rdb.reflect(now=T0 + DAY).owners["ana"].unasked is None  # the offline reflector costs nothing: always asked


def test_a_model_is_asked_for_what_its_answer_holds(rdb: memdb.Database) -> None:
    """An owner with 50 entries was asked for 58 lessons within max_tokens=2000; the answer that
    gave them was cut off and the day lost, said only as "not the requested JSON"."""
    mem = rdb.owner("ana")
    ids = [mem.record("debug", f"attempt {i} on topic {i}", outcome="failure", ts=T0 - (i + 1) * HOUR).id for i in range(60)]
    for i in range(50):
        rdb.knowledge.submit("ana", f"Saved lesson {i}: subsystem {i * 37 % 101} needs flag {i}", source="save", cites=[ids[i]], now=T0)
    seen: list[httpx.Request] = []
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo".split()
    words += "sierra tango uniform victor whiskey xray yankee zulu amber basalt cobalt dune ember fjord granite harbor islet jetty".split()
    lessons = [
        {"text": f"When {words[3 * i]} breaks, check {words[3 * i + 1]} before {words[3 * i + 2]}", "cites": [ids[i]]} for i in range(12)
    ]
    reflector = AnthropicReflector(client=sdk_client([(200, message({"lessons": lessons}))], seen))
    report = rdb.reflect(now=T0, reflector=reflector)
    prompt = json.loads(seen[0].content)["messages"][0]["content"]
    assert "Propose at most 12 durable lessons" in prompt and reflector.room == 12 and report.stored == 8
    cut = {**message({"lessons": lessons}), "stop_reason": "max_tokens"}
    mem.record("debug", "a new attempt", outcome="failure", ts=T0)
    failed = rdb.reflect(now=T0 + DAY, reflector=AnthropicReflector(client=sdk_client([(200, cut)], [])))
    assert "cut off at max_tokens=2000 (stop_reason 'max_tokens'; raise max_tokens)" in failed.errors[0]


def test_a_model_s_lessons_are_read_one_by_one(rdb: memdb.Database) -> None:
    """One item with an int cite lost the whole answer."""
    ids = failures(rdb)
    answer = {"lessons": [{"text": "Rotate the Twilio signing secret everywhere", "cites": [ids[2]]}, {"text": "x", "cites": [123]}, "no"]}
    report = rdb.reflect(now=T0, reflector=AnthropicReflector(client=sdk_client([(200, message(answer))], [])))
    assert report.errors == [] and report.stored == 1 and report.owners["ana"].invalid == 2 and report.owners["ana"].proposed == 3
    (entry,) = rdb.review_queue()
    assert entry.text == "Rotate the Twilio signing secret everywhere"


def test_a_model_s_lesson_cites_only_what_it_was_shown(rdb: memdb.Database) -> None:
    """With ``max_episodes=3`` the prompt lists three records; a lesson citing a fourth the run
    read, but the model never saw, was queued as grounded."""
    mem = rdb.owner("ana")
    ids = [mem.record("debug", f"webhook attempt {i} failed", outcome="failure", ts=T0 - (10 - i) * HOUR).id for i in range(10)]
    seen: list[httpx.Request] = []
    answer = {
        "lessons": [{"text": "A lesson on a record it never saw", "cites": [ids[3]]}, {"text": "Grounded in one shown", "cites": [ids[9]]}]
    }
    report = rdb.reflect(now=T0, reflector=AnthropicReflector(client=sdk_client([(200, message(answer))], seen), max_episodes=3))
    prompt = json.loads(seen[0].content)["messages"][0]["content"]
    assert [i for i in ids if i in prompt] == ids[-3:]
    assert report.owners["ana"].ungrounded == 1 and [e.text for e in rdb.review_queue()] == ["Grounded in one shown"]


def files(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.iterdir() if p.is_file())


def test_a_lessons_tags_are_sanitized_as_given(tmp_path: Path) -> None:
    """A model's tags were normalised before the sanitizer saw them: "jane.doe@example.com" and
    "10.1.2.3" reached disk as "jane-doeexample-com" and "10-1-2-3", shapes no pattern knows. They
    are sanitized in the form given, as a capture's are, then normalised; a tag that does not
    normalise is dropped, not the lesson."""
    path = tmp_path / "tags"
    given = ["jane.doe@example.com", "+1 415 555 0199", "4111 1111 1111 1111", "10.1.2.3", "Twilio", "!!!"]
    with memdb.open(path, clock=Clock(T0)) as db:
        ids = failures(db)
        captured = db.owner("ana").record("debug", "the same tags by capture", outcome="failure", tags=given[:5], ts=T0 - HOUR)
        answer = {"lessons": [{"text": "Rotate the Twilio signing secret everywhere at once", "cites": [ids[0]], "tags": given}]}
        report = db.reflect(now=T0, reflector=AnthropicReflector(client=sdk_client([(200, message(answer))], [])))
        assert report.stored == 1 and report.owners["ana"].invalid == 0
        (entry,) = db.review_queue()
        assert entry.tags == captured.tags == ("withheld-email", "withheld-phone", "withheld-card", "withheld-ip", "twilio")
    raw = files(path)
    for leaked in (b"jane-doeexample-com", b"jane.doe", b"10-1-2-3", b"10.1.2.3", b"4111-1111", b"415-555"):
        assert leaked not in raw, leaked


def test_a_lessons_placeholders_are_numbered_with_its_text(tmp_path: Path) -> None:
    """A lesson's tags were sanitized apart from its text, so their placeholders were numbered
    apart: "<EMAIL_1>" in the text was bob and the tag "email-1" was jane. Sanitized in one pass,
    as a capture's fields are, one number names one value across both."""
    text = "Check the rota with bob@example.com before paging"
    with memdb.open(tmp_path / "num", clock=Clock(T0)) as db:
        ids = failures(db)
        captured = db.owner("ana").record("debug", text, outcome="failure", tags=["jane@example.com", "bob@example.com"], ts=T0 - HOUR)
        answer = {"lessons": [{"text": text, "cites": [ids[0]], "tags": ["jane@example.com", "bob@example.com"]}]}
        report = db.reflect(now=T0, reflector=AnthropicReflector(client=sdk_client([(200, message(answer))], [])))
        assert report.stored == 1
        (entry,) = db.review_queue()
        assert "<EMAIL_1>" in entry.text and captured.summary == entry.text
        assert entry.tags == captured.tags == ("withheld-email",)  # a tag keeps no number (its own record's)
