"""Faithful over time: what memdb still knows, and says, after the lifecycle has forgotten.

Every rule is run with an injected clock moved by exact amounts: archiving after 30 idle days,
imports counted as accessed at import, summaries never archived by the run that writes them,
gateway capture live only, backfills audited.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.errors import ValidationError

UTC = dt.UTC
T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday
DAY = dt.timedelta(days=1)

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)


def _three_failures(db: memdb.Database, clock: Clock) -> list[str]:
    mem = db.owner("ana")
    ids = []
    for i, step in enumerate(("signature check", "retry budget", "signature check")):
        clock.now = T0 + i * DAY
        ids.append(
            mem.record(
                "debug", f"Twilio webhook failed at the {step}", outcome="failure", tags=["twilio"],
                what_happened=f"stopped at the {step}", lesson=f"verify the {step} first",
            ).id
        )  # fmt: skip
    return ids


def test_failures_survive_archiving_in_history_and_prepare(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ids = _three_failures(db, clock)
        mem = db.owner("ana")
        clock.now = T0 + 60 * DAY
        assert db.maintain().archived == 3
        assert not mem.recall(tags=["twilio"]).found  # out of the hot indexes ...
        h = mem.history(kind="debug", tags=["twilio"])
        assert h.total == 3 and h.archived == 3 and h.counts["failure"] == 3  # ... never out of experience
        # the one-liner carries the day and the lesson: said once each ("Last failure 2026-03-04:
        # 2026-03-04 debug/failure: ... (lesson: X). Lesson: X" before)
        assert str(h) == (
            "3 past attempts (3 failure; 3 archived). Last failure: 2026-03-04 debug/failure: "
            "Twilio webhook failed at the signature check (lesson: verify the signature check first)."
        )
        assert [a.episode.id for a in h.attempts] == ids[::-1]
        assert all(a.episode.status == "archived" and any("archived" in w for w in a.why) for a in h.attempts)
        assert h.lessons == ["verify the signature check first", "verify the retry budget first"]  # each once, newest first
        prep = mem.prepare("fix the twilio webhook", kind="debug", tags=["twilio"])
        assert "(archived)" in prep.text and "verify the signature check first" in prep.text
        assert db.check().ok


def test_archives_made_before_headers_kept_a_lesson_or_who_took_part_get_them_back(tmp_path: Path) -> None:
    """An archive made before its header kept the lesson or the participants gets them back from
    its cold record when the database is next opened, once: "What did Bob review?" finds it."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        review = mem.record("review", "Code review of the retry logic", outcome="partial", participants=["Bob"], lesson="test the backoff")
        other = mem.record("debug", "Cache warmed", outcome="success")
        clock.now = T0 + 60 * DAY
        assert db.maintain().archived == 2
        states, marks = db.globals["EPST"], db.globals["LIFE"]
        with db.transaction():  # what an older memdb wrote
            for eid in (review.id, other.id):
                header = states[("ana", eid)]
                states.set(("ana", eid), {k: v for k, v in header.items() if k not in ("lesson", "participants")})
            marks.kill_value(("archived lessons kept",))
            marks.kill_value(("archived participants kept",))
        before = mem.ask("What did Bob review?", include_archived=True)
        assert not before.found and "no memory mentions 'Bob'" in before.note
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        found = mem.ask("What did Bob review?", include_archived=True)
        assert [m.episode.id for m in found] == [review.id] and not found.interpretation.unmatched
        assert mem.history(kind="review").lessons == ["test the backoff"]
        assert "participants" not in db.globals["EPST"][("ana", other.id)]  # nobody took part: nothing to keep
        assert db.lifecycle.keep_archived_fields() == 0 and db.check().ok  # once


def test_an_empty_answer_says_what_cold_storage_holds(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        _three_failures(db, clock)
        mem = db.owner("ana")
        clock.now = T0 + 60 * DAY
        db.maintain()
        r = mem.recall(tags=["twilio"])
        assert not r.found and r.total == 0
        assert r.note.endswith("3 archived matches, latest 2026-03-04; include_archived=True to see them (restore() brings one back).")
        a = mem.ask("what failed on twilio?")
        assert not a.found and "3 archived matches" in a.note
        both = mem.ask("what failed on twilio?", include_archived=True)
        assert both.found and both.total == 3 and "archived" not in both.note.split(";")[-1]
        assert all(m.episode.status == "archived" for m in both.memories)
        restored = mem.restore(both.memories[0].episode.id)
        assert mem.recall(tags=["twilio"]).total == 1 and restored.lesson


def test_imported_history_is_not_idle_from_its_dates(tmp_path: Path) -> None:
    """Imported episodes count as accessed at import: the 30 idle days start then, not at their ts."""
    clock = Clock(T0 + 200 * DAY)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        items = [
            {"kind": "debug", "summary": f"alpha deploy {i}", "outcome": "failure", "tags": ["alpha"], "ts": T0 + i * DAY}
            for i in range(40)
        ]
        mem.import_episodes(items, source="tracker export")
        clock.now += 29 * DAY
        assert db.maintain().archived == 0 and mem.recall(tags=["alpha"], limit=0).total == 40
        clock.now += 2 * DAY  # 31 days after the import: the relevance rule applies as to any idle episode
        report = db.maintain()
        assert report.archived == 40 and mem.history(tags=["alpha"]).total == 40
        assert "40 archived matches" in mem.ask("failures on alpha").note


def test_a_summary_is_never_archived_by_the_run_that_writes_it(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        for i in range(8):  # a burst, captured live
            clock.now = T0 + i * dt.timedelta(minutes=10)
            mem.record_exchange("s1", f"step {i} of the migration", "ok")
        clock.now = T0 + 90 * DAY  # long idle: the sources are due, and the summary is dated like them
        report = db.maintain()
        assert report.summaries == 1 and report.archived == 8
        (summary,) = mem.recall(kind="summary").memories
        assert summary.episode.status == "active" and summary.episode.last_access == clock.now
        clock.now += 31 * DAY
        assert db.maintain().archived == 1  # a later run applies the rule to it like to any other


def test_gateway_capture_is_live_only(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        ok = mem.record_exchange("s1", "hi", "ho", ts=T0 - dt.timedelta(minutes=4, seconds=59))  # within 5 minutes
        assert ok.ts == T0 - dt.timedelta(minutes=4, seconds=59) and ok.recorded == T0
        for capture in (
            lambda ts: mem.record_exchange("s1", "hi", "ho", ts=ts),
            lambda ts: mem.record_tool_call("s1", "search", {"q": "x"}, ts=ts),
        ):
            with pytest.raises(ValidationError, match=r"before the clock: gateway capture is live only; .*import_episodes"):
                capture(T0 - dt.timedelta(minutes=5, seconds=1))
            with pytest.raises(ValidationError, match="after the clock"):
                capture(T0 + dt.timedelta(minutes=6))
        assert mem.count() == 1 and db.check().ok
        db.configure(capture_tolerance_minutes=60)
        assert mem.record_exchange("s1", "hi", "ho", ts=T0 - dt.timedelta(minutes=59)).ts == T0 - dt.timedelta(minutes=59)


def test_a_typed_record_of_an_earlier_event_is_audited_and_a_future_one_refused(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        sprint = mem.record("sprint", "Sprint 12 closed", outcome="partial", ts=T0 - 14 * DAY)
        assert sprint.ts == T0 - 14 * DAY and sprint.recorded == T0
        (backfill,) = [a for a in mem.audit() if a["action"] == "backfill"]
        assert backfill["episode"] == sprint.id and backfill["ts"] == T0 - 14 * DAY and backfill["at"] == T0
        now = mem.record("sprint", "Sprint 13 opened", outcome="success")
        assert now.recorded == now.ts == T0 and [a["action"] for a in mem.audit()] == ["backfill"]
        with pytest.raises(ValidationError, match=r"record\('sprint'\): ts .* after the clock"):
            mem.record("sprint", "Sprint 14", outcome="success", ts=T0 + DAY)
        assert mem.count() == 2 and db.check().ok


@pytest.mark.parametrize("minutes", [0.0, 5.0, 1440.0])
def test_the_tolerance_is_exact_at_its_edge(tmp_path: Path, minutes: float) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.configure(capture_tolerance_minutes=minutes)
        mem, edge = db.owner("ana"), dt.timedelta(minutes=minutes)
        mem.record_exchange("s1", "at the edge", "ok", ts=T0 - edge)
        mem.record_exchange("s1", "at the other edge", "ok", ts=T0 + edge)
        for off in (T0 - edge - dt.timedelta(microseconds=1), T0 + edge + dt.timedelta(microseconds=1)):
            with pytest.raises(ValidationError):
                mem.record_exchange("s1", "beyond", "no", ts=off)
        assert mem.count() == 2


def test_retention_is_routine_and_keeps_approved_knowledge(tmp_path: Path) -> None:
    """Retention purges old episodes (hot or archived) but never the lessons learned from them;
    erasure on request still takes everything derived."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ids = _three_failures(db, clock)
        mem = db.owner("ana")
        kept = mem.save_lesson("verify the webhook signature before retrying", cites=ids[:2])
        db.approve(kept.id, by="lead")
        clock.now = T0 + 60 * DAY
        db.maintain()  # archived
        db.configure(retention_days=90)
        clock.now = T0 + 100 * DAY
        assert db.maintain().purged == 3 and mem.count() == 0 and mem.history(tags=["twilio"]).total == 0
        entry = db.entry(kept.id)
        assert entry.state == "approved" and entry.status == "active" and entry.text.startswith("verify the webhook")
        assert entry.expired_cites == tuple(sorted(ids[:2]))
        assert [e.id for e in mem.knowledge("webhook signature")] == [kept.id]
        (note,) = [a for a in mem.audit() if a["action"] == "sources_expired"]
        assert note["entry"] == kept.id and sorted(note["episodes"]) == sorted(ids[:2])
        assert db.check().ok


def test_erasure_on_request_still_takes_the_lessons_derived(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ids = _three_failures(db, clock)
        mem = db.owner("ana")
        lesson = mem.save_lesson("verify the webhook signature before retrying", cites=ids[:1])
        db.approve(lesson.id, by="lead")
        mem.erase(ids[:1], reason="user request")
        entry = db.entry(lesson.id)
        assert entry.status == "erased" and entry.text == "" and mem.knowledge("webhook") == []


def test_feedback_returns_the_relevance_explain_shows(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "deploy", outcome="success")
        for _ in range(6):
            mem.get(ep.id)  # buffered accesses, not yet flushed
        back = mem.feedback(ep.id, 1.0)
        assert back.relevance == pytest.approx(mem.explain(ep.id).relevance) and back.access_count == 6
        db.flush()
        assert mem.peek(ep.id).relevance == pytest.approx(back.relevance)


def test_decisions_confidence_is_on_the_zero_to_ten_scale(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        assert mem.record("review", "ok", outcome="success", decisions={"confidence": 8.5}).decisions["confidence"] == 8.5
        for bad in (11, -0.5, "high", True):
            with pytest.raises(ValidationError, match="confidence"):
                mem.record("review", "no", outcome="success", decisions={"confidence": bad})
        assert mem.count() == 1


def test_the_offline_reflector_learns_from_capture_and_is_not_blocked_by_its_pending_lessons(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.configure(lessons_per_day=1)
        mem = db.owner("ana")
        for day in range(2):  # a tool that keeps failing, across two sessions
            clock.now = T0 + day * DAY
            for _ in range(2):
                call = mem.record_tool_call(f"s{day}", "deploy_api", {"service": "billing"})
                mem.record_tool_result(call.id, {"error": "timeout after 30s"})
            mem.record_exchange(f"s{day}", "How do I rotate the billing webhook secret?", "See the runbook.")
        first = db.reflect(now=clock.now)
        (entry,) = [db.entry(i) for i in first.owners["ana"].stored]
        assert entry.state == "pending" and "deploy_api keeps failing" in entry.text
        clock.now += DAY
        second = db.reflect(now=clock.now)  # yesterday's proposal is pending: today's budget goes to the next lesson
        (other,) = [db.entry(i) for i in second.owners["ana"].stored]
        assert "Recurring question" in other.text and "rotate the billing webhook secret" in other.text


def test_an_erased_session_leaves_no_trace_in_the_lifecycle_marks(tmp_path: Path) -> None:
    """After erasing every episode of a session and compacting, its id is nowhere on disk."""
    clock = Clock(T0)
    path = tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        for i in range(7):
            clock.now = T0 + i * dt.timedelta(minutes=5)
            mem.record_exchange("sess-zanzibar-4417", f"step {i}", "ok")
        mem.record_exchange("sess-kept", "other work", "ok")
        clock.now = T0 + 2 * DAY
        assert db.maintain().summaries == 1
        assert any("sess-zanzibar-4417" in str(subs) for subs, _ in db.globals["LIFE"].items())
        mem.erase(everything=True, reason="account closed")
        assert not any("sess-zanzibar-4417" in str(subs) for subs, _ in db.globals["LIFE"].items())
        assert db.check().ok
        db.compact()
    if (path / "data.mdb").exists():  # the LMDB backend: the bytes are gone too
        assert b"sess-zanzibar-4417" not in (path / "data.mdb").read_bytes()


def test_cites_must_be_the_owners_own_episodes(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        ana, bo = db.owner("ana"), db.owner("bo")
        mine, theirs = ana.record("debug", "first", outcome="failure"), bo.record("debug", "bo's", outcome="failure")
        assert ana.record("debug", "second", outcome="success", cites=[mine.id]).cites == (mine.id,)
        missing = mine.id[:-6] + "ffffff"
        messages = []
        for bad in (theirs.id, missing):
            with pytest.raises(ValidationError) as caught:
                ana.record("debug", "third", outcome="success", cites=[bad])
            messages.append(str(caught.value).replace(bad, "ID"))
        assert messages[0] == messages[1]  # another owner's id reads as a missing one
        assert ana.count() == 2 and db.check().ok
