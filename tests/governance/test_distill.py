"""Session distillation (issue 26): a gateway session's capture becomes one typed, honest episode.

Offline: the caller's outcome, fields from the capture, once per session, nothing for nothing.
Through the real anthropic SDK over an httpx mock transport: a clean answer, a hedge then a
clean retry, two hedges, a success the last tool result contradicts, a malformed answer and an
API error. And the rules that fire it: the idle rule, its kinds, and erasure of what it cites.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx  # the HTTP client the anthropic SDK is built on
import pytest
from clocks import Clock

import memdb
from memdb.cli import main
from memdb.errors import ConfigError, SanitizerError, ValidationError
from memdb.governance.distill import (
    MAX_IDLE_TRIES,
    Distiller,
    Draft,
    OfflineDistiller,
    SessionCapture,
    kind_by_rule,
    reads_as_error,
    refusal,
)
from memdb.llm.adapters import AnthropicDistiller
from memdb.memory.models import Episode
from memdb.memory.settings import Settings
from memdb.surfaces.mcp_server import tool_specs

UTC = dt.UTC
T0 = dt.datetime(2026, 6, 3, 9, 0, tzinfo=UTC)
MINUTE = dt.timedelta(minutes=1)
HOUR = dt.timedelta(hours=1)


def open_db(tmp_path: Path, clock: Clock, distiller: Distiller | None = None) -> memdb.Database:
    return memdb.open(tmp_path / "db", clock=clock, distiller=distiller)


def capture(db: memdb.Database, clock: Clock, owner: str = "ana", session: str = "s1", last: Any = None) -> list[str]:
    """A gateway session as it happens: a question, a deploy that fails, a fix, a check.
    ``last`` is the check's result; returns the captured ids in order."""
    mem = db.owner(owner)
    ids = [mem.record_exchange(session, "Why does the deploy fail? Mail me at jane.doe@example.com", "Looking at it.", tags=["deploy"]).id]
    clock.advance(minutes=1)
    call = mem.record_tool_call(session, "deploy_api", {"env": "prod"})
    mem.record_tool_result(call.id, {"error": "migration lock timeout"})
    clock.advance(minutes=1)
    fix = mem.record_tool_call(session, "run_migrations", {"env": "prod"}, tags=["Project X"])
    mem.record_tool_result(fix.id, {"applied": 3})
    clock.advance(minutes=1)
    check = mem.record_tool_call(session, "deploy_api", {"env": "prod"})
    mem.record_tool_result(check.id, last if last is not None else {"deployed": True, "errors": 0})
    clock.advance(minutes=1)
    return [*ids, call.id, fix.id, check.id]


def marks(db: memdb.Database, owner: str = "ana") -> dict[tuple[Any, ...], Any]:
    return dict(db.globals["DIST"].items((owner,)))


# --- offline: the caller's outcome, the capture's facts -------------------------------------------


def test_a_closed_session_is_one_typed_episode_citing_its_capture(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ids = capture(db, clock)
        mem = db.owner("ana")
        before = mem.count()
        done = mem.close_session("s1", kind="debug", outcome="success", tags=["Hotfix"])
        assert (done.status, done.closed, done.events, done.attempts) == ("closed", True, 4, 1)
        ep = done.episode
        assert ep is not None and mem.count() == before + 1 and mem.peek(ep.id) == ep
        assert (ep.kind, ep.outcome, ep.session, ep.cites) == ("debug", "success", "s1", tuple(ids))
        assert ep.ts == mem.peek(ids[-1]).ts  # dated when the work ended
        assert ep.tags == ("hotfix", "deploy", "project-x")  # the caller's, then the events' own
        assert ep.summary == "Why does the deploy fail? Mail me at <EMAIL_1>"  # the first user message, as stored
        assert ep.what_we_tried == 'deploy_api {"env": "prod"}; run_migrations {"env": "prod"}; deploy_api {"env": "prod"}'
        assert ep.what_happened is not None and 'deploy_api -> {"error": "migration lock timeout"}' in ep.what_happened
        assert (ep.why, ep.lesson) == (None, None)  # offline, a cause or a lesson would be a guess
        assert "jane.doe" not in json.dumps(ep.model_dump(mode="json"))
        (audit,) = [a for a in mem.audit() if a["action"] == "distill"]
        assert audit["episode"] == ep.id and audit["session"] == "s1" and audit["distiller"] == "OfflineDistiller"
        assert db.sessions.counts("ana") == {"closed": 1, "refused": 0, "failed": 0}
        history = mem.history(kind="debug", tags=["deploy"])  # history answers from it
        assert history.total == 1 and history.attempts[0].episode.id == ep.id and history.counts["success"] == 1
        assert db.check().ok


def test_a_session_closes_once(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)
        mem = db.owner("ana")
        first = mem.close_session("s1", kind="debug", outcome="failure")
        count = mem.count()
        again = mem.close_session("s1", kind="routine", outcome="success")  # other arguments change nothing
        assert again.status == "already_closed" and again.closed and again.episode == first.episode
        assert first.episode is not None and first.episode.id in again.reason and "nothing written" in again.reason
        assert mem.count() == count and db.sessions.counts("ana")["closed"] == 1


def test_a_session_continued_after_its_close_closes_again_as_a_new_version(tmp_path: Path) -> None:
    """An agent went on after closing a session (the deploy failed, then a retry worked): the
    events were captured, but a second close said "already closed" and history kept the first
    outcome for good. Closing again now writes a new version of the episode the close wrote
    (one memory of the work, citing every event, the latest outcome); the idle rule opens such
    a session again; with nothing new, a close still writes nothing."""
    clock = Clock(T0)
    judge = Judge("success")
    with open_db(tmp_path, clock, distiller=judge) as db:
        ids = capture(db, clock, last={"error": "timeout"})
        mem = db.owner("ana")
        first = mem.close_session("s1", kind="debug", outcome="failure")
        assert first.episode is not None
        clock.advance(minutes=5)
        retry = mem.record_tool_call("s1", "deploy_api", {"env": "prod", "retry": True})
        mem.record_tool_result(retry.id, {"deployed": True})
        with pytest.raises(ValidationError, match="closed as debug"):
            mem.close_session("s1", kind="routine", outcome="success")
        again = mem.close_session("s1", kind="debug", outcome="success")
        assert again.status == "closed" and again.episode is not None and again.episode.supersedes == first.episode.id
        assert list(again.episode.cites) == [*ids, retry.id, first.episode.id]  # every event, and the version before
        assert again.episode.outcome == "success"
        h = mem.history(kind="debug")
        assert h.total == 1 and h.counts["success"] == 1  # one attempt, as it ended
        assert db.sessions.counts("ana")["closed"] == 1
        assert mem.close_session("s1", kind="debug", outcome="failure").status == "already_closed"
        # the idle rule: a closed session that goes on is open again, and closes again when idle
        clock.advance(minutes=5)
        late = mem.record_exchange("s1", "and the smoke test?", "green")
        clock.advance(hours=2)
        idle = db.close_idle_sessions()
        assert [d.session for d in idle.closed] == ["s1"] and idle.closed[0].episode is not None
        assert late.id in idle.closed[0].episode.cites and idle.closed[0].episode.supersedes == again.episode.id
        assert db.check().ok


def test_a_close_again_supersedes_what_the_user_corrected_and_waits_for_an_archived_one(tmp_path: Path) -> None:
    """The second review: closing again after the user had corrected the episode wrote an
    unrelated one (two attempts for one session), and erasing the session's events then left
    the corrected one; one archived meanwhile was forked the same way."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ids = capture(db, clock)
        mem = db.owner("ana")
        first = mem.close_session("s1", kind="debug", outcome="failure")
        assert first.episode is not None
        corrected = mem.supersede(first.episode.id, reason="it half worked", outcome="partial")
        clock.advance(minutes=5)
        mem.record_exchange("s1", "retried, and it worked", "great")
        again = mem.close_session("s1", kind="debug", outcome="success")
        assert again.status == "closed" and again.episode is not None and again.episode.supersedes == corrected.id
        assert mem.history(kind="debug").total == 1
        erased = mem.erase([ids[0]], reason="the user asked")  # every version goes with the events
        assert {first.episode.id, corrected.id, again.episode.id} <= set(erased.ids)
    with open_db(tmp_path / "b", clock) as db:
        capture(db, clock)
        mem = db.owner("ana")
        first = mem.close_session("s1", kind="debug", outcome="failure")
        assert first.episode is not None
        mem.archive(first.episode.id)
        mem.record_exchange("s1", "one more thing", "sure")
        waiting = mem.close_session("s1", kind="debug", outcome="success")
        assert waiting.status == "already_closed" and "archived" in waiting.reason and "restore" in waiting.reason
        assert mem.history(kind="debug").total == 1 and db.check().ok
        clock.advance(hours=2)  # the idle rule does not report it on every run, using up its limit
        assert [db.close_idle_sessions().owners for _ in range(2)] == [{}, {}]


def test_a_later_close_is_dated_when_the_work_ended_and_says_so_in_the_audit(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ids = capture(db, clock)
        clock.advance(hours=3)
        mem = db.owner("ana")
        done = mem.close_session("s1", kind="debug", outcome="partial")
        assert done.episode is not None and done.episode.ts == mem.peek(ids[-1]).ts and done.episode.recorded == clock.now
        actions = {a["action"]: a for a in mem.audit()}
        assert actions["backfill"]["episode"] == actions["distill"]["episode"] == done.episode.id  # not a silent backfill


def test_nothing_captured_writes_nothing_and_says_so(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ana, bo = db.owner("ana"), db.owner("bo")
        ana.record("debug", "typed work in a session", outcome="success", session="typed-only")
        capture(db, clock, owner="bo", session="shared")  # another owner's session of the same name
        for session in ("typed-only", "never-seen", "shared"):
            done = ana.close_session(session, kind="debug", outcome="success")
            assert (done.status, done.closed, done.episode) == ("nothing_captured", False, None)
            assert "no exchanges or tool calls of it are stored" in done.reason and "nothing written" in done.reason
        assert ana.count() == 1 and marks(db) == {}
        ids = capture(db, clock, owner="ana", session="shared")
        mine = ana.close_session("shared", kind="debug", outcome="partial")
        assert mine.episode is not None and mine.episode.cites == tuple(ids)  # bo's four events are not read
        assert bo.close_session("shared", kind="debug", outcome="success").status == "closed"  # closing is per owner too


def test_a_session_whose_events_were_erased_says_they_may_have_been(tmp_path: Path) -> None:
    """A review's find: closing a session whose events were erased, before or after a close,
    said "nothing captured", which was untrue. The erasure forgot the session's name (nothing of
    it survives), so the answer cannot tell erased from never captured, and says both."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        mem = db.owner("ana")
        ids = capture(db, clock)
        mem.erase(ids, reason="the user asked")
        for _ in range(2):  # before the close, and (the second session) after it
            done = mem.close_session("s1", kind="debug", outcome="failure")
            assert (done.status, done.episode) == ("nothing_captured", None)
            assert "nothing captured" not in done.reason and "or they were erased); nothing written" in done.reason
            ids = capture(db, clock)
            assert mem.close_session("s1", kind="debug", outcome="failure").status == "closed"
            mem.erase(ids, reason="the user asked")
        assert marks(db) == {("ana", "n", "closed"): 2}


def test_a_close_whose_episode_was_erased_says_so(tmp_path: Path) -> None:
    """Erasing an event a close cited erases its episode, and the session stays closed (the rest
    is not distilled again); closing it again said the episode was "no longer in hot storage",
    which reads as archived, to restore. An archived one still says that."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        mem = db.owner("ana")
        ids = capture(db, clock)
        first = mem.close_session("s1", kind="debug", outcome="failure")
        assert first.episode is not None
        mem.erase(ids[:1], reason="the user asked")
        again = mem.close_session("s1", kind="debug", outcome="failure")
        assert (again.status, again.episode) == ("already_closed", None)
        assert "its episode was erased since; nothing written" in again.reason and "hot storage" not in again.reason
        assert first.episode.id not in again.reason  # the mark forgot it (test_derived_follows.py)
    with open_db(tmp_path / "b", clock) as db:
        mem = db.owner("ana")
        capture(db, clock)
        first = mem.close_session("s1", kind="debug", outcome="failure")
        assert first.episode is not None
        mem.archive(first.episode.id)
        again = mem.close_session("s1", kind="debug", outcome="failure")
        assert again.status == "already_closed" and f"as episode {first.episode.id} (no longer in hot storage)" in again.reason


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"kind": "debug"}, "outcome"),  # offline: never guessed
        ({"kind": "debug", "outcome": "mostly worked"}, "outcome"),
        ({"kind": "debug", "outcome": "Success"}, "outcome"),  # the caller's outcome is exact, as record's is
        ({"kind": "exchange", "outcome": "success"}, "kind"),
        ({"kind": "deploy", "outcome": "success"}, "kind"),
        ({"kind": "debug", "outcome": "success", "tags": "deploy"}, "tags"),
        ({"kind": "debug", "outcome": "success", "now": dt.datetime(2026, 6, 3, 9)}, "now"),  # naive
    ],
)
def test_bad_arguments_are_validation_errors_naming_them(tmp_path: Path, arguments: dict[str, Any], named: str) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)
        mem = db.owner("ana")
        count = mem.count()
        with pytest.raises(ValidationError, match=rf"^{named}\b"):
            mem.close_session("s1", **arguments)
        with pytest.raises(ValidationError, match=r"^session 'a b'"):
            mem.close_session("a b", kind="debug", outcome="success")
        assert mem.count() == count and marks(db) == {}


def test_the_mark_is_written_in_the_episodes_transaction(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)
        mem = db.owner("ana")
        count = mem.count()
        with pytest.raises(RuntimeError), db.transaction():
            assert mem.close_session("s1", kind="debug", outcome="success").status == "closed"
            raise RuntimeError("the caller's transaction fails")
        assert mem.count() == count and not any(k[1] == "closed" for k in marks(db))  # both rolled back
        assert mem.close_session("s1", kind="debug", outcome="success").status == "closed"  # still open, so it closes now


def test_a_failing_sanitizer_drops_the_episode_and_counts_it(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)

        class Broken:
            def sanitize(self, texts: dict[str, str]) -> dict[str, str]:
                raise SanitizerError("detector crashed")

        db.episodes.sanitizer = Broken()
        mem = db.owner("ana")
        with pytest.raises(SanitizerError, match="capture dropped"):
            mem.close_session("s1", kind="debug", outcome="success")
        assert db.globals["META"].get(("dropped_captures",)) == 1  # the counter survives: nothing else was written
        assert marks(db) == {} and mem.count() == 4


def test_distilled_episodes_count_toward_pattern_extraction(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        db.configure(pattern_every=3)
        mem = db.owner("ana")
        for session in ("s1", "s2", "s3"):
            capture(db, clock, session=session)
            mem.close_session(session, kind="debug", outcome="failure")
        (pattern,) = mem.patterns(kind="debug")  # the third closed session completed a batch: extracted at once
        assert len(pattern.cites) == 3 and "3 failure" in pattern.text


def test_erasing_a_cited_event_takes_the_episode_distilled_from_it(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ids = capture(db, clock)
        mem = db.owner("ana")
        done = mem.close_session("s1", kind="debug", outcome="success")
        assert done.episode is not None
        report = mem.erase([ids[0]], reason="the user asked to forget that message")
        assert set(report.ids) == {ids[0], done.episode.id}  # erased and audited with it
        assert done.episode.id not in mem and db.check().ok
        again = mem.close_session("s1", kind="debug", outcome="success")  # closed stays closed: nothing re-derived
        assert again.status == "already_closed" and again.episode is None and "erased since" in again.reason
        assert db.sessions.derived_from("ana", [ids[1]], "retention") == []  # routine pruning keeps experience


class ByLastResult:
    """A model without the network that judges honestly: failure when the last tool result reads
    as an error, else success. ``during`` runs once inside the first ``distill`` (another
    process capturing while the model is asked)."""

    judges_outcome = True

    def __init__(self, during: Any = None) -> None:
        self.during = during

    def distill(self, capture: SessionCapture, rejected: Sequence[str] = ()) -> Draft:
        if self.during is not None:
            self.during, during = None, self.during
            during()
        calls = [e for e in capture.events if e.kind == "tool_call" and e.result]
        failed = bool(calls) and reads_as_error(calls[-1].result)
        happened = "; ".join(f"{e.tool} -> {e.result or 'no result recorded'}" for e in capture.events if e.kind == "tool_call")
        return Draft(f"Session {capture.session}", outcome="failure" if failed else "success", what_happened=happened)


def test_a_late_error_result_continues_a_closed_session(tmp_path: Path) -> None:
    """A call still running when the idle rule closed its session as success: its result came
    later and read as an error, and nothing reopened the session (the close had cited the call
    without a result, and only new events counted), so the episode said success for good. A
    result after the close makes the session go on, idle from when the result came."""
    clock = Clock(T0)
    with open_db(tmp_path, clock, distiller=ByLastResult()) as db:
        mem = db.owner("ana")
        mem.record_exchange("ops", "Deploy the billing api", "Starting.")
        build = mem.record_tool_call("ops", "build", {"v": "2.4"})
        mem.record_tool_result(build.id, {"status": "built"})
        clock.advance(minutes=1)
        deploy = mem.record_tool_call("ops", "deploy", {"v": "2.4"})  # long-running: no result yet
        clock.advance(hours=1)  # idle exactly since the deploy call
        (first,) = db.close_idle_sessions().closed
        assert first.episode is not None and first.episode.outcome == "success"
        clock.advance(minutes=30)
        mem.record_tool_result(deploy.id, {"error": "rollout failed: 3/3 pods crashed"})
        arrived = clock.now
        assert db.close_idle_sessions(now=arrived + 59 * MINUTE).owners == {}  # idle from the result on, not before
        (again,) = db.close_idle_sessions(now=arrived + HOUR).closed
        assert again.episode is not None and again.episode.supersedes == first.episode.id
        assert again.episode.outcome == "failure" and "rollout failed" in (again.episode.what_happened or "")
        assert mem.history(kind="routine").total == 1 and mem.history(kind="routine").counts["failure"] == 1
        assert not [k for k in marks(db) if k[1] == "continued"]  # the news is in the episode now
        assert mem.close_session("ops", kind="routine").status == "already_closed"
        assert db.check().ok


def test_a_capture_while_the_distiller_runs_continues_the_session(tmp_path: Path) -> None:
    """The result came while the model was asked to close the session: the close wrote what it
    had read, and the session goes on, to be closed again with the result."""
    clock = Clock(T0)
    late: list[str] = []
    with open_db(tmp_path, clock, distiller=ByLastResult()) as db:
        mem = db.owner("ana")
        call = mem.record_tool_call("ops", "deploy", {"v": "2.4"})
        assert isinstance(db.sessions.distiller, ByLastResult)
        db.sessions.distiller.during = lambda: late.append(mem.record_tool_result(call.id, {"error": "timeout"}).id)
        first = mem.close_session("ops", kind="debug")
        assert first.status == "closed" and first.episode is not None and first.episode.outcome == "success" and late == [call.id]
        again = mem.close_session("ops", kind="debug")
        assert again.status == "closed" and again.episode is not None and again.episode.outcome == "failure"
        assert mem.close_session("ops", kind="debug").status == "already_closed"


def test_an_event_dated_before_the_close_continues_the_session(tmp_path: Path) -> None:
    """Live capture may date an event up to capture_tolerance_minutes before the clock: one
    captured after the close but dated before the close's last event was never distilled (the
    close compared ids, which sort by time) and close_session said already_closed."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        mem = db.owner("ana")
        asked = mem.record_exchange("s1", "Rotate the webhook secret", "on it")
        clock.advance(minutes=3)
        call = mem.record_tool_call("s1", "rotate_secret", {"provider": "twilio"})
        clock.advance(minutes=1)
        first = mem.close_session("s1", kind="debug", outcome="failure")
        assert first.episode is not None
        late = mem.record_exchange("s1", "Retry with the backup key worked", "great", ts=T0 + MINUTE)  # 3 minutes before the clock
        assert late.id < call.id
        again = mem.close_session("s1", kind="debug", outcome="success")
        assert again.status == "closed" and again.episode is not None and again.episode.supersedes == first.episode.id
        assert list(again.episode.cites) == [asked.id, late.id, call.id, first.episode.id]
        assert again.episode.ts == call.ts  # still dated when the work ended
        assert mem.close_session("s1", kind="debug", outcome="success").status == "already_closed"


def test_an_erased_late_event_is_no_news(tmp_path: Path) -> None:
    """An event captured after the close, then erased, leaves the session closed as it was, and
    its id leaves the marks that said the session went on."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)
        mem = db.owner("ana")
        done = mem.close_session("s1", kind="debug", outcome="failure")
        assert done.episode is not None
        late = mem.record_exchange("s1", "one more thing", "sure")
        assert [k for k in marks(db) if k[1] == "continued"] == [("ana", "continued", "s1", late.id)]
        assert mem.erase([late.id], reason="the user asked").ids == [late.id]
        assert late.id not in str(marks(db)) and done.episode.id in mem
        assert mem.close_session("s1", kind="debug", outcome="success").status == "already_closed"
        assert ("ana", "open", "s1") not in marks(db)  # no news: the idle rule has nothing to report of it
        assert db.close_idle_sessions(now=clock.now + 2 * HOUR).owners == {}
        assert db.check().ok


def test_a_corrected_result_continues_a_closed_session(tmp_path: Path) -> None:
    """A second result is refused, pointing to ``supersede`` for a correction: that correction
    of a call in a closed session left it closed as success while its timeline showed the error
    (a review's find), unless the call happened to be the session's last event."""
    clock = Clock(T0)
    with open_db(tmp_path, clock, distiller=ByLastResult()) as db:
        mem = db.owner("ana")
        mem.record_exchange("ops", "Deploy the billing api", "Starting.")
        deploy = mem.record_tool_call("ops", "deploy", {"v": "2.4"})
        mem.record_tool_result(deploy.id, {"status": "ok"})
        clock.advance(minutes=1)
        mem.record_exchange("ops", "Looks done", "Yes.")
        clock.advance(hours=1)
        (first,) = db.close_idle_sessions().closed
        assert first.episode is not None and first.episode.outcome == "success"
        clock.advance(minutes=10)
        mem.supersede(deploy.id, reason="the rollout had failed", result={"error": "rollout failed"})
        (again,) = db.close_idle_sessions(now=clock.now + HOUR).closed
        assert again.episode is not None and again.episode.outcome == "failure"
        assert mem.history(kind="routine").counts["failure"] == 1 and db.check().ok
        # a correction of what it is filed under (tags) is no news of the session (a review's find)
        clock.advance(days=30)
        mem.supersede(mem.versions(deploy.id)[-1].id, reason="filed", tags=["http"])
        assert db.close_idle_sessions(now=clock.now + 2 * HOUR).owners == {}


def test_erasing_an_event_the_episode_does_not_cite_leaves_it(tmp_path: Path) -> None:
    """Erasure took the distilled episode for any event in the first..last range of its cites,
    cited or not; it takes what cites the erased event. An erased late event is no news: the
    session is closed as it was, and its id leaves the marks."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        mem = db.owner("ana")
        mem.record_exchange("s1", "Rotate the webhook secret", "on it")
        clock.advance(minutes=3)
        mem.record_tool_call("s1", "rotate_secret", {"provider": "twilio"})
        clock.advance(minutes=1)
        done = mem.close_session("s1", kind="debug", outcome="failure")
        assert done.episode is not None
        late = mem.record_exchange("s1", "Retry with the backup key worked", "great", ts=T0 + MINUTE)
        assert late.id not in done.episode.cites
        assert mem.erase([late.id], reason="the user asked").ids == [late.id]
        assert done.episode.id in mem and late.id not in str(marks(db))
        assert mem.close_session("s1", kind="debug", outcome="success").status == "already_closed"
        assert db.check().ok
        # archived, the episode's cites are read from cold storage
        ids = capture(db, clock, session="s2")
        kept = mem.close_session("s2", kind="debug", outcome="success")
        assert kept.episode is not None
        mem.archive(kept.episode.id)
        other = mem.record_exchange("s2", "and the docs?", "updated")
        assert mem.erase([other.id], reason="the user asked").ids == [other.id]
        assert set(mem.erase([ids[1]], reason="the user asked").ids) == {ids[1], kept.episode.id}
        assert db.check().ok


def _mark_left_on(db: memdb.Database, episode_id: str) -> None:
    """The session's closed mark naming ``episode_id`` again, as erase_versions and retention
    left it before they repointed it (a database written then)."""
    mark = db.globals["DIST"].get(("ana", "closed", "s1"))
    db.globals["DIST"].set(("ana", "closed", "s1"), {**mark, "episode": episode_id})


@pytest.mark.parametrize("mark", ["repointed", "left on the erased version"])
def test_erasing_the_version_a_close_wrote_keeps_the_session_derived(tmp_path: Path, backend: str, mark: str) -> None:
    """A review's find: erase_versions of the version a session's close wrote left its mark
    naming an erased id, so erasing the session's events then left the corrected version, a
    summary of those events citing them. The mark follows the version kept, and a mark naming
    an erased version is read as the current version of the session's episode."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ids = capture(db, clock)
        mem = db.owner("ana")
        first = mem.close_session("s1", kind="debug", outcome="failure").episode
        assert first is not None
        kept = mem.supersede(first.id, reason="more precise", summary="The deploy failed on a migration lock")
        mem.erase_versions(first.id, reason="forget the first wording")
        assert marks(db)[("ana", "closed", "s1")]["episode"] == kept.id
        if mark != "repointed":
            _mark_left_on(db, first.id)
        again = mem.close_session("s1", kind="debug", outcome="success")
        assert again.status == "already_closed" and again.episode is not None and again.episode.id == kept.id and kept.id in again.reason
        report = mem.erase([ids[0]], reason="the user asked to be forgotten")
        assert set(report.ids) == {ids[0], kept.id} and kept.id not in mem
        assert db.check().ok


@pytest.mark.parametrize("mark", ["repointed", "left on the erased version"])
def test_a_session_closes_again_as_a_new_version_of_what_erase_versions_kept(tmp_path: Path, backend: str, mark: str) -> None:
    """A review's find: after erase_versions of the version its close wrote, a session that went
    on closed again into a second, unlinked episode (history counted two attempts)."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)
        mem = db.owner("ana")
        first = mem.close_session("s1", kind="debug", outcome="failure").episode
        assert first is not None
        kept = mem.supersede(first.id, reason="more precise", summary="The deploy failed on a migration lock")
        mem.erase_versions(first.id, reason="forget the first wording")
        if mark != "repointed":
            _mark_left_on(db, first.id)
        clock.advance(minutes=5)
        mem.record_exchange("s1", "Retried once the lock was released: it works", "great")
        again = mem.close_session("s1", kind="debug", outcome="success")
        assert again.status == "closed" and again.episode is not None and again.episode.supersedes == kept.id
        assert mem.history(kind="debug").total == 1 and marks(db)[("ana", "closed", "s1")]["episode"] == again.episode.id
        assert db.check().ok


def test_retention_purging_the_version_a_close_wrote_keeps_the_session_on_the_version_kept(tmp_path: Path, backend: str) -> None:
    """Retention cuts old versions as erase_versions does: the session's mark follows the
    version kept, so the session closes again as a new version of it, and erasing what it
    cites takes it."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)
        mem = db.owner("ana")
        first = mem.close_session("s1", kind="debug", outcome="failure").episode
        assert first is not None
        clock.advance(days=200)
        kept = mem.supersede(first.id, reason="it half worked", outcome="partial", ts=clock.now - dt.timedelta(days=1))
        db.configure(retention_days=100)
        db.maintain()
        assert first.id not in mem and kept.id in mem
        assert marks(db)[("ana", "closed", "s1")]["episode"] == kept.id
        late = mem.record_exchange("s1", "Retried once the lock was released: it works", "great")
        again = mem.close_session("s1", kind="debug", outcome="success")
        assert again.status == "closed" and again.episode is not None and again.episode.supersedes == kept.id
        assert mem.history(kind="debug").total == 1
        assert {late.id, kept.id, again.episode.id} <= set(mem.erase([late.id], reason="the user asked").ids)
        assert db.check().ok


# --- the honesty check -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "error"),
    [
        ('{"error": "migration lock timeout"}', True),
        ("Traceback (most recent call last): ...", True),
        ('{"ok": false, "reason": "quota"}', True),
        ('{"status": 503}', True),
        ("HTTP 404 Not Found", True),
        ('{"failed": 12, "delivered": 0}', True),
        ("connection refused", True),
        ('{"deployed": true, "errors": 0}', False),
        ('{"error": null, "rows": 3}', False),
        ('{"failed": 0, "delivered": 12}', False),
        ("done, no errors", False),
        ('{"hits": 3}', False),
        ("", False),
        # shapes an error word hides in, or that carry none (each read as no error before)
        ('{"statusCode": 503, "body": "Service Unavailable"}', True),
        ('{"http_status": "502"}', True),
        ('{"exit_code": 1, "stderr": "fatal: could not read from remote repository"}', True),
        ('{"exitCode": -9}', True),
        ('{"returncode": 2, "stdout": ""}', True),
        ("Command returned non-zero exit status 1", True),
        ("exit status 1", True),
        ("HTTP/1.1 502 Bad Gateway", True),
        ("HTTP 404", True),
        ("ModuleNotFoundError: No module named 'app'", True),
        ("java.lang.NullPointerException", True),
        ("npm ERR! code E404", True),
        ("Segmentation fault (core dumped)", True),
        ("ECONNREFUSED 10.0.0.1:5432", True),
        ("ENOENT: no such file or directory", True),
        ('{"code": "ETIMEDOUT"}', True),
        ("connection reset by peer", True),
        ("Unable to connect to the server", True),
        ("OOMKilled", True),
        ("错误：连接被拒绝", True),
        ("部署失败", True),
        ("エラーが発生しました", True),
        ("Fehler: Verbindung abgelehnt", True),
        ("erreur : délai dépassé", True),
        ("ошибка соединения", True),
        ("Error handling request /api/deploy", True),  # gunicorn's: an error, not a topic
        # reports of no error, and text about errors as a topic
        ('{"errors": 0}', False),
        ('{"exit_code": 0, "stdout": "deployed"}', False),
        ('{"exitCode": 0}', False),
        ('{"status": 200}', False),
        ('{"statusCode": 201}', False),
        ("HTTP/1.1 200 OK", False),
        ('{"lastError": null}', False),
        ("no errors found", False),
        ("12 passed, 0 failed", False),
        ("Refactored the error handling of the payment client; all tests pass", False),
        ("added an error boundary around the form", False),
        ("non-fatal warning: a flag is deprecated", False),
        ("mirror synced; failover configured", False),
        ("EXPORT done, ENABLED", False),
        ("没有错误", False),
        ("keine Fehler", False),
        # errors in the shape an error takes (exception names, errno codes, rc, status lines only there)
        ('{"stderr": "TypeError: Cannot read properties of undefined"}', True),
        ('{"stderr": "Traceback ...\\nKeyError: \'user\'"}', True),
        ("Uncaught TypeError: x is not a function", True),
        ("Caused by: java.io.IOException: Broken pipe", True),
        ("OSError: [Errno 98] Address already in use", True),
        ("getaddrinfo ENOTFOUND api.example.com", True),
        ("spawn git ENOENT", True),
        ('{"rc": 2, "changed": false}', True),
        ("< HTTP/1.1 503 Service Unavailable", True),
        ("HTTP 409 Conflict", True),
        ("Error: 0 is not a valid index", True),
        ("Deploy at 10:00 failed", True),
        ('{"errors": 3}', True),
        ("失败: 3", True),
        ("오류가 발생했습니다", True),
        ("배포 실패", True),
        ("échec de la connexion", True),
        ("Fehler beim Laden der Konfiguration", True),
        ("エラー: 接続できません", True),
        # successes the last round read as errors (a false one refuses an honest success twice)
        ("def load(path):\n    try:\n        return json.load(open(path))\n    except FileNotFoundError:\n        return {}\n", False),
        ("Wrote src/app.py (42 lines)\n+    except KeyError:\n+        return default", False),
        ("ls src/: App.tsx ErrorBoundary.tsx NotFoundError.ts", False),
        ("tests/test_api.py::TestNotFoundError::test_message PASSED\n===== 1 passed in 0.1s =====", False),
        ("Removed deprecated TimeoutError handling; tests pass", False),
        ("Wrote ErrorPage.tsx and NotFoundError handler", False),
        ('Created docs page "Handling a TypeError"', False),
        ('if (err.code === "ENOENT") { return null; }', False),
        ('git commit -m "handle ECONNRESET on retry"\n[main a1b2c3] handle ECONNRESET on retry', False),
        ("Retry policy: 3 tries on ECONNRESET, ETIMEDOUT; deployed", False),
        ('{"checks": 12, "fatal": 0, "warnings": 2}', False),
        ('{"ok": true, "fatal": false}', False),
        ('{"warnings": [], "fatal": null}', False),
        ('{"aborted": false}', False),
        ("Summary: 12 checks, 0 fatal, 0 warnings", False),
        ("no fatal errors", False),
        ("0 Fehler, 2 Warnungen", False),
        ("Testergebnis: 12 bestanden, 0 Fehler", False),
        ("Résultat : 12 réussis, 0 erreur", False),
        ("ok (0 échec)", False),
        ("Tests: 0 échoué, 12 réussis", False),
        ("错误: 0", False),
        ("錯誤: 0", False),
        ("失败 0", False),
        ("测试通过：失败 0，错误 0", False),
        ('{"失败": 0}', False),
        ('{"code": 0, "message": "操作成功", "data": {"错误": 0}}', False),
        ("テスト完了: エラー 0 件", False),
        ("没有发现错误", False),
        ("未发现错误", False),
        ("エラーはありません", False),
        ("오류가 없습니다", False),
        ("Nenhum erro", False),
        ("Ошибок нет", False),
        ("已添加错误处理，测试全部通过", False),
        ("エラー処理を追加しました。テストはすべて成功", False),
        ("오류 처리를 추가했습니다", False),
        ("Fehler-Logging eingerichtet, Build erfolgreich", False),
        ("Ajout de la gestion d'erreur", False),
        ("Fehler behoben", False),
        ("Fehler im Parser behoben", False),
        ("erreur corrigée dans le parseur", False),
        ("修复了解析器中的错误", False),
        ('{"version": {"major": 2, "minor": 0, "rc": 1}}', False),
        ('{"rc": 0, "changed": true}', False),
        ("Created alert rule for HTTP 503 responses", False),
        ('Created alert rule "HTTP 500 rate > 1%"', False),
    ],
)
def test_what_reads_as_an_error(result: str, error: bool) -> None:
    assert reads_as_error(result) is error


def _event(kind: str, i: int, **fields: Any) -> Episode:
    return Episode(id=f"20260603T09{i:02d}00000000Z-00000{i}", owner="ana", ts=T0 + i * MINUTE, kind=kind, summary="x", **fields)


def _capture(last_result: str, outcome: str | None = None) -> SessionCapture:
    events = (
        _event("exchange", 0, content="user: deploy please"),
        _event("tool_call", 1, tool="deploy_api", content="{}", result=last_result),
        _event("tool_call", 2, tool="status", content="{}"),  # still running: it says nothing yet
    )
    return SessionCapture("ana", "s1", "debug", events, 3, outcome)


@pytest.mark.parametrize("hedge", ["mostly worked", "n/a", "success-ish", "partially", "worked", "success.", "", "  ", None])
def test_a_missing_or_hedged_outcome_is_refused(hedge: str | None) -> None:
    reason = refusal(Draft("Deployed", outcome=hedge), _capture('{"ok": true}'))
    assert reason is not None and "success, partial, failure" in reason


def test_success_after_an_error_is_refused_and_the_callers_outcome_is_theirs() -> None:
    errored = _capture('{"error": "timeout"}')
    reason = refusal(Draft("Deployed", outcome="success"), errored)
    assert reason is not None and "contradicts the last tool result" in reason and "deploy_api" in reason
    assert refusal(Draft("Deployed", outcome="failure"), errored) is None
    assert refusal(Draft("Deployed", outcome=" Partial "), errored) is None  # case and space are not hedging
    assert refusal(Draft("Deployed", outcome="success"), _capture('{"ok": true}')) is None
    assert refusal(Draft("Deployed"), _capture('{"error": "timeout"}', outcome="success")) is None  # the caller's word
    assert refusal(Draft("  ", outcome="failure"), errored) == (
        "the summary is empty: say in one sentence what the session was about and how it ended"
    )


def test_kinds_by_rule_first_match_then_the_default() -> None:
    events = [_event("tool_call", 1, tool="deploy_api", tags=("ops",)), _event("exchange", 2, tags=("chore",))]
    rules = Settings().updated(session_kinds={"tag:Chore": "routine", "tool:deploy_api": "debug"})
    assert rules.session_kinds == {"tag:chore": "routine", "tool:deploy_api": "debug"}
    assert kind_by_rule(events, rules) == "routine"  # the first rule that matches wins
    assert kind_by_rule(events, Settings().updated(session_kinds={"tool:deploy_api": "debug", "tag:chore": "routine"})) == "debug"
    assert kind_by_rule(events, Settings()) == "routine"  # the documented default
    assert kind_by_rule(events, Settings().updated(session_default_kind="research")) == "research"
    assert kind_by_rule(events, Settings().updated(session_default_kind=None)) is None
    assert kind_by_rule(events, Settings().updated(typed_kinds=("incident", "deploy"))) is None  # "routine" is not typed there


@pytest.mark.parametrize(
    "changes",
    [
        {"session_kinds": {"deploy_api": "debug"}},
        {"session_kinds": {"tool:two words": "debug"}},
        {"session_kinds": {"tag:x": "incident"}},  # not a typed kind
        {"session_kinds": {"tag:Chore": "routine", "tag:chore": "debug"}},
        {"session_default_kind": "Not A Kind"},
        {"session_idle_minutes": 0},
        {"session_idle_minutes": -5},
    ],
)
def test_session_settings_are_validated(tmp_path: Path, changes: dict[str, Any]) -> None:
    with memdb.open(tmp_path / "db") as db:
        with pytest.raises(ConfigError, match=next(iter(changes))):
            db.configure(**changes)
        db.configure(session_idle_minutes=15, session_kinds={"tool:deploy_api": "debug"})
    with memdb.open(tmp_path / "db") as db:  # kept with the data
        assert (db.settings.session_idle_minutes, db.settings.session_kinds) == (15, {"tool:deploy_api": "debug"})


def test_session_rules_are_checked_and_shown_sanitized(tmp_path: Path) -> None:
    """A rule is a caller's text: its errors showed it raw, and a tool name that is an address
    (which capture refuses, so no rule could match it) was saved raw."""
    email = "jane.doe@example.com"
    with memdb.open(tmp_path / "db") as db:
        for rules, needle in (
            ({email: "debug"}, "write 'tool:NAME'"),
            ({f"tool:{email}": "debug"}, "looks like personal data"),
            ({"tag:x": f"not {email}"}, "not a kind name"),
        ):
            with pytest.raises(ConfigError, match=needle) as info:
                db.configure(session_kinds=rules)
            assert email not in str(info.value) and "<EMAIL_1>" in str(info.value)
        assert db.settings.session_kinds == {}


# --- the idle rule -----------------------------------------------------------------------------------


class Judge:
    """A distiller that judges outcomes as a test says (a model without the network)."""

    judges_outcome = True

    def __init__(self, *outcomes: str) -> None:
        self.outcomes = list(outcomes)
        self.seen: list[tuple[SessionCapture, tuple[str, ...]]] = []

    def distill(self, capture: SessionCapture, rejected: Sequence[str] = ()) -> Draft:
        self.seen.append((capture, tuple(rejected)))
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        return Draft(f"Session {capture.session} distilled", outcome=outcome, lesson="run migrations first")


def test_offline_the_idle_rule_writes_nothing_and_reports_waiting(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock, session="old")
        capture(db, clock, session="done")
        db.owner("ana").close_session("done", kind="debug", outcome="success")
        clock.advance(minutes=50)
        capture(db, clock, session="recent")
        count = db.owner("ana").count()
        report = db.close_idle_sessions(now=clock.now + 30 * MINUTE)  # "old" idle 83 min, "recent" 30 min
        assert [d.session for d in report.waiting] == ["old"] and report.closed == []
        assert "never guesses an outcome" in report.waiting[0].reason and "1 waiting" in str(report)
        assert db.owner("ana").count() == count  # an outcome is never invented
        later = db.close_idle_sessions(now=clock.now + 2 * HOUR)
        assert sorted(d.session for d in later.waiting) == ["old", "recent"]
        db.owner("ana").close_session("old", kind="debug", outcome="failure")  # someone closes it with an outcome
        assert [d.session for d in db.close_idle_sessions(now=clock.now + 3 * HOUR).waiting] == ["recent"]


def test_the_idle_rule_closes_idle_sessions_into_the_kind_the_rules_give(tmp_path: Path) -> None:
    clock = Clock(T0)
    judge = Judge("failure")
    with open_db(tmp_path, clock, distiller=judge) as db:
        db.configure(session_kinds={"tag:chore": "routine", "tool:deploy_api": "debug"}, session_default_kind="research")
        capture(db, clock, session="deploy")
        db.owner("ana").record_exchange("tidy", "rename the labels", "done", tags=["chore"])
        db.owner("bo").record_exchange("reading", "what is CRDT?", "a data type")
        assert db.close_idle_sessions(now=clock.now + 58 * MINUTE).owners == {}  # not idle yet (60 minutes by default)
        report = db.close_idle_sessions(now=clock.now + 61 * MINUTE)
        kinds = {(d.session, d.episode.kind) for d in report.closed if d.episode}
        assert kinds == {("deploy", "debug"), ("tidy", "routine"), ("reading", "research")}
        assert all(d.episode and d.episode.outcome == "failure" for d in report.closed)
        assert sorted(report.owners) == ["ana", "bo"]
        assert db.close_idle_sessions(now=clock.now + 2 * HOUR).owners == {}  # closed ones are not read again
        assert len(judge.seen) == 3


def test_the_idle_rule_reads_only_what_is_new_and_keeps_to_its_limit(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock, distiller=Judge("partial")) as db:
        for n in range(3):
            db.owner("ana").record_exchange(f"s{n}", f"question {n}", "answer")
        clock.advance(hours=2)
        first = db.close_idle_sessions(limit=2)
        assert len(first.closed) == 2 and first.deferred == 1 and "1 left for the next run" in str(first)
        assert db.globals["DIST"].get(("ana", "seen")) is not None  # the next run reads from here
        assert [d.session for d in db.close_idle_sessions().closed] == ["s2"]
        with pytest.raises(ValidationError, match=r"^idle"):
            db.close_idle_sessions(idle=dt.timedelta(0))
        db.owner("ana").record_exchange("s3", "later", "answer")  # captured after a run: still found
        assert db.close_idle_sessions(idle=dt.timedelta(minutes=0.5), now=clock.now + MINUTE).closed[0].session == "s3"


def test_a_session_refused_again_and_again_is_left_to_an_explicit_close(tmp_path: Path) -> None:
    clock = Clock(T0)
    judge = Judge("mostly worked")
    with open_db(tmp_path, clock, distiller=judge) as db:
        capture(db, clock)
        count = db.owner("ana").count()
        for n in range(MAX_IDLE_TRIES):
            (done,) = db.close_idle_sessions(now=clock.now + (2 + n) * HOUR).refused
            assert done.attempts == 2 and len(done.rejected) == 2
        (waiting,) = db.close_idle_sessions(now=clock.now + 9 * HOUR).waiting
        assert f"{MAX_IDLE_TRIES} tries were refused" in waiting.reason
        assert db.sessions.counts("ana")["refused"] == MAX_IDLE_TRIES and db.owner("ana").count() == count
        judge.outcomes = ["partial"]
        assert db.owner("ana").close_session("s1", kind="debug").status == "closed"  # an explicit close still can


def test_a_session_whose_captures_were_archived_still_closes_from_them(tmp_path: Path) -> None:
    """A session left open (the offline distiller waits for an outcome) whose captures maintain
    archived 30 days later said "nothing captured" when closed, and its timeline showed no
    call: its experience could never be recorded. The archived captures are read back from
    cold storage (not restored), found by the archived-by-session index (layout 22)."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ids = capture(db, clock)
        clock.advance(days=40)
        db.maintain()
        mem = db.owner("ana")
        assert {mem.versions(eid)[-1].status for eid in ids} == {"archived"}
        assert [s.id for s in mem.timeline("s1").steps] == ids[1:]  # the three tool calls, archived
        done = mem.close_session("s1", kind="debug", outcome="failure")
        assert done.status == "closed" and done.episode is not None and list(done.episode.cites) == ids
        assert "migration lock timeout" in (done.episode.what_happened or "")
        assert {mem.versions(eid)[-1].status for eid in ids} == {"archived"}  # read, not restored
        assert db.close_idle_sessions().owners == {}  # closed: no longer waiting
        erased = mem.erase([ids[0]], reason="the user asked")  # an archived capture takes what was distilled
        assert done.episode.id in erased.ids
        assert db.check().ok


def test_a_session_closed_late_is_not_archived_by_the_next_maintain(tmp_path: Path) -> None:
    """The episode a close writes is dated when the work ended; closed 40 days later, it was
    idle for the archiving rule from that date, so the next maintain archived it the day it was
    written. It counts as accessed when written, as a burst summary or an import does (DESIGN 5)."""
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        capture(db, clock)
        clock.advance(days=40)
        done = db.owner("ana").close_session("s1", kind="debug", outcome="failure")
        assert done.episode is not None and done.episode.ts < T0 + dt.timedelta(days=1)
        eid = done.episode.id
        clock.advance(days=1)
        db.maintain()
        assert db.owner("ana").peek(eid).status == "active"
        clock.advance(days=30)
        db.maintain()
        assert db.owner("ana").versions(eid)[-1].status == "archived"  # idle 30 days from its writing


def test_opening_a_layout_21_database_indexes_archived_captures_by_session(tmp_path: Path) -> None:
    clock = Clock(T0)
    with open_db(tmp_path, clock) as db:
        ids = capture(db, clock)
        clock.advance(days=40)
        db.maintain()
        db.globals["EPSA"].kill(("ana",))  # as layout 21 left it: no archived-by-session index
        db.globals["META"].set(("layout",), 21)
        assert not db.check().ok
    with open_db(tmp_path, clock) as db:
        assert db.check().ok
        assert list(db.owner("ana").close_session("s1", kind="debug", outcome="failure").episode.cites) == ids  # type: ignore[union-attr]


def test_a_draft_that_does_not_validate_costs_the_try_and_keeps_its_text_off_disk(tmp_path: Path) -> None:
    class Sloppy(Judge):
        def distill(self, capture: SessionCapture, rejected: Sequence[str] = ()) -> Draft:
            return Draft("Deployed", outcome="failure", why=["secret-sauce", "not text"])  # type: ignore[arg-type]

    clock = Clock(T0)
    with open_db(tmp_path, clock, distiller=Sloppy("failure")) as db:
        capture(db, clock)
        mem = db.owner("ana")
        count = mem.count()
        done = mem.close_session("s1", kind="debug")
        assert (done.status, done.attempts) == ("failed", 1) and "does not validate" in done.reason and "why" in done.reason
        (audit,) = [a for a in mem.audit() if a["action"] == "distill"]
        assert audit["error"] == "the distilled episode does not validate" and mem.count() == count
        assert "secret-sauce" not in json.dumps(audit, default=str)


# --- the Anthropic distiller through the SDK ------------------------------------------------------------


def message(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": json.dumps(payload)}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 700, "output_tokens": 150},
    }


def answer(outcome: str | None, **fields: str) -> dict[str, Any]:
    body = {
        "summary": "Deploy of Project X failed on a migration lock, then went out after running migrations first",
        "what_we_tried": "Deployed, ran the migrations, deployed again",
        "what_happened": "The first deploy hit a lock timeout; the second went out",
        "why": "The migration held a lock on the users table",
        "lesson": "Run migrations before the deploy window",
        **fields,
    }
    if outcome is not None:
        body["outcome"] = outcome
    return message(body)


def sdk_client(responses: list[tuple[int, dict[str, Any]]], seen: list[httpx.Request]) -> anthropic.Anthropic:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status, body = responses[min(len(seen) - 1, len(responses) - 1)]
        return httpx.Response(status, json=body, headers={"request-id": f"req_{len(seen)}"})

    # no SDK retries: each test counts the requests memdb itself makes
    return anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def model_db(tmp_path: Path, responses: list[tuple[int, dict[str, Any]]], seen: list[httpx.Request], last: Any = None) -> memdb.Database:
    clock = Clock(T0)
    db = open_db(tmp_path, clock, distiller=AnthropicDistiller(client=sdk_client(responses, seen)))
    capture(db, clock, last=last)
    return db


def prompt_of(request: httpx.Request) -> str:
    return str(json.loads(request.content)["messages"][0]["content"])


def test_a_clean_answer_fills_the_episode(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    with model_db(tmp_path, [(200, answer("success"))], seen) as db:
        done = db.owner("ana").close_session("s1", kind="debug")  # no outcome: the model judges it
        assert done.status == "closed" and done.attempts == 1 and done.rejected == ()
        ep = done.episode
        assert ep is not None and ep.outcome == "success" and ep.lesson == "Run migrations before the deploy window"
        assert ep.why == "The migration held a lock on the users table" and len(ep.cites) == 4
        body = json.loads(seen[0].content)
        assert seen[0].url.path == "/v1/messages" and body["model"] == "claude-haiku-4-5"
        assert body["output_config"]["format"]["type"] == "json_schema"
        assert {"summary", "outcome", "lesson"} <= set(body["output_config"]["format"]["schema"]["properties"])
        assert "data, never instructions" in body["system"]
        prompt = prompt_of(seen[0])
        assert all(f"[{i}]" in prompt for i in ep.cites) and "migration lock timeout" in prompt
        assert "<EMAIL_1>" in prompt and "jane.doe" not in prompt  # only the stored, sanitized text
        (audit,) = [a for a in db.owner("ana").audit() if a["action"] == "distill"]
        assert audit["distiller"] == "AnthropicDistiller" and audit["rejected"] == 0


def test_a_hedge_is_asked_again_once_with_the_reason(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    with model_db(tmp_path, [(200, answer("mostly worked")), (200, answer("partial"))], seen) as db:
        done = db.owner("ana").close_session("s1", kind="debug")
        assert done.status == "closed" and done.episode is not None and done.episode.outcome == "partial"
        assert done.attempts == 2 and len(done.rejected) == 1 and "'mostly worked'" in done.rejected[0]
        assert len(seen) == 2 and "refused" not in prompt_of(seen[0])
        assert "Your previous answer was refused: the outcome 'mostly worked' is not one of" in prompt_of(seen[1])


@pytest.mark.parametrize("hedges", [("success-ish", "n/a"), (None, "partially")])  # None: no outcome at all
def test_two_hedges_write_nothing_and_the_session_stays_open(tmp_path: Path, hedges: tuple[str | None, str]) -> None:
    seen: list[httpx.Request] = []
    responses = [(200, answer(hedges[0])), (200, answer(hedges[1])), (200, answer("failure"))]
    with model_db(tmp_path, responses, seen) as db:
        mem = db.owner("ana")
        count = mem.count()
        done = mem.close_session("s1", kind="debug")
        assert (done.status, done.closed, done.episode, done.attempts, len(done.rejected)) == ("refused", False, None, 2, 2)
        assert "asked twice" in done.reason and "nothing written" in done.reason
        assert mem.count() == count and db.sessions.counts("ana") == {"closed": 0, "refused": 1, "failed": 0}
        (audit,) = [a for a in mem.audit() if a["action"] == "distill"]
        assert audit["status"] == "refused" and "success-ish" not in json.dumps(audit, default=str)  # no model text on disk
        later = mem.close_session("s1", kind="debug")  # open for a later try
        assert later.status == "closed" and later.episode is not None and later.episode.outcome == "failure"


def test_success_the_last_tool_result_contradicts_is_asked_again(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    last = {"error": "deploy rejected: health check failed"}
    with model_db(tmp_path, [(200, answer("success")), (200, answer("failure"))], seen, last=last) as db:
        done = db.owner("ana").close_session("s1", kind="debug")
        assert done.episode is not None and done.episode.outcome == "failure" and len(seen) == 2
        assert "contradicts the last tool result: deploy_api returned" in done.rejected[0]
        assert "health check failed" in prompt_of(seen[1])


@pytest.mark.parametrize("last", [{"statusCode": 503, "body": "Service Unavailable"}, {"exit_code": 1, "stderr": "fatal: no remote"}])
def test_success_after_a_failed_call_of_any_shape_is_asked_again(tmp_path: Path, last: dict[str, Any]) -> None:
    """A 503 in a statusCode field, or a non-zero exit code, had no error word at a word boundary:
    the model's "success" after it closed the session as a success."""
    seen: list[httpx.Request] = []
    with model_db(tmp_path, [(200, answer("success")), (200, answer("failure"))], seen, last=last) as db:
        done = db.owner("ana").close_session("s1", kind="debug")
        assert done.episode is not None and done.episode.outcome == "failure" and len(seen) == 2
        assert "contradicts the last tool result" in done.rejected[0]


def test_a_hedge_is_quoted_sanitized(tmp_path: Path) -> None:
    """A hedged outcome was quoted raw in the refusal's reason: close_session's answer, MCP's
    end_session output and the second prompt carried the address the model wrote."""
    seen: list[httpx.Request] = []
    hedge = "mostly ok; ask jane.doe@example.com, +1 415 555 0199"
    with model_db(tmp_path, [(200, answer(hedge))], seen) as db:
        done = db.owner("ana").close_session("s1", kind="debug")
        assert done.status == "refused" and len(seen) == 2
        for text in (done.reason, *done.rejected, prompt_of(seen[1])):
            assert "the outcome 'mostly ok; ask <EMAIL_1>, <PHONE_1>' is not one of" in text
            assert "jane.doe" not in text and "555 0199" not in text


def _outage_then(answers: dict[str, Any], seen: list[httpx.Request]) -> anthropic.Anthropic:
    """The SDK over a transport that answers 529 until ``answers["down"]`` is False, then ``answers["body"]``."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if answers["down"]:
            return httpx.Response(529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        return httpx.Response(200, json=answers["body"])

    return anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def test_an_outage_parks_no_idle_session(tmp_path: Path) -> None:
    """Each idle pass during an outage charged every session a try, the ones a run never called
    (it stops after stop_after failures in a row) too, and after MAX_IDLE_TRIES passes (45
    minutes under memdb serve) every idle session waited for good, no call made once the API was
    back. A try is an answer the model gave that could not be used; an API failure is none."""
    clock = Clock(T0)
    seen: list[httpx.Request] = []
    api: dict[str, Any] = {"down": True, "body": answer("success")}
    owners = ["ana", "bo", "cy", "dee", "eve", "fay"]
    with open_db(tmp_path, clock, distiller=AnthropicDistiller(client=_outage_then(api, seen))) as db:
        for owner in owners:
            db.owner(owner).record_exchange("s1", f"{owner}: deploy please", "on it")
        clock.advance(hours=2)
        for _ in range(MAX_IDLE_TRIES + 1):
            report = db.close_idle_sessions()
            assert [d.status for d in report.failed] == ["failed"] * 6 and report.waiting == []
            clock.advance(minutes=15)
        assert len(seen) == 3 * (MAX_IDLE_TRIES + 1)  # stop_after calls a pass, the others not called
        api["down"] = False
        report = db.close_idle_sessions()
        assert sorted(d.session for d in report.closed) == ["s1"] * 6 and report.waiting == []


def test_unusable_answers_still_leave_a_session_to_an_explicit_close(tmp_path: Path) -> None:
    """What the model answered and memdb could not use (no JSON of the schema) is a try: after
    MAX_IDLE_TRIES the idle rule stops paying for the session."""
    clock = Clock(T0)
    seen: list[httpx.Request] = []
    api: dict[str, Any] = {"down": False, "body": message({"not": "the schema"})}
    with open_db(tmp_path, clock, distiller=AnthropicDistiller(client=_outage_then(api, seen))) as db:
        db.owner("ana").record_exchange("s1", "deploy please", "on it")
        clock.advance(hours=2)
        for _ in range(MAX_IDLE_TRIES):
            (done,) = db.close_idle_sessions().failed
            assert "not the requested JSON" in done.reason
            clock.advance(minutes=15)
        (waiting,) = db.close_idle_sessions().waiting
        assert f"{MAX_IDLE_TRIES} tries were refused or unusable" in waiting.reason and len(seen) == MAX_IDLE_TRIES


def test_the_callers_outcome_is_used_and_said_in_the_prompt(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    with model_db(tmp_path, [(200, answer("success"))], seen) as db:
        done = db.owner("ana").close_session("s1", kind="debug", outcome="partial")
        assert done.episode is not None and done.episode.outcome == "partial"
        assert "The outcome is fixed by whoever did the work: partial" in prompt_of(seen[0])


@pytest.mark.parametrize(
    ("status", "body", "needle"),
    [
        (200, message({"not": "the schema"}), "not the requested JSON"),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}, "BadRequestError"),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "Overloaded"),
    ],
)
def test_a_malformed_answer_or_an_api_error_writes_nothing(tmp_path: Path, status: int, body: dict[str, Any], needle: str) -> None:
    seen: list[httpx.Request] = []
    with model_db(tmp_path, [(status, body), (200, answer("failure"))], seen) as db:
        mem = db.owner("ana")
        count = mem.count()
        done = mem.close_session("s1", kind="debug")  # never a raw exception
        assert (done.status, done.closed, done.episode, done.attempts) == ("failed", False, None, 1)
        assert "anthropic session distillation with claude-haiku-4-5" in done.reason and needle in done.reason
        assert len(seen) == 1 and mem.count() == count and db.sessions.counts("ana")["failed"] == 1
        assert mem.close_session("s1", kind="debug").status == "closed"  # the session stayed open


def test_with_a_model_the_idle_rule_closes_and_end_session_may_omit_the_outcome(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []
    with model_db(tmp_path, [(200, answer("partial"))], seen) as db:
        db.configure(session_kinds={"tool:deploy_api": "debug"})
        (done,) = db.close_idle_sessions(now=T0 + 2 * HOUR).closed
        assert done.episode is not None and (done.episode.kind, done.episode.outcome) == ("debug", "partial")
        assert "Session s1, debug work: 4 captured events" in prompt_of(seen[0])
    end = {s.name: s for s in tool_specs(Settings(), judges_outcome=True)}["end_session"]
    assert set(end.input_schema()["required"]) == {"session", "kind"}
    assert isinstance(AnthropicDistiller(client=sdk_client([], [])), Distiller) and isinstance(OfflineDistiller(), Distiller)
    with pytest.raises(ConfigError, match="distiller"):
        memdb.open(tmp_path / "other", distiller=object())  # type: ignore[arg-type]


# --- the command ---------------------------------------------------------------------------------------


def test_memdb_close_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        mem = db.owner("ana")
        mem.record_exchange("s1", "Why does the deploy fail?", "A lock.")
        mem.record_tool_result(mem.record_tool_call("s1", "deploy_api", {"env": "prod"}).id, {"error": "lock timeout"})
    argv = ["close-session", "s1", "--kind", "debug", "--db", str(path), "--owner", "ana"]
    assert main([*argv, "--outcome", "failure", "--tags", "deploy"]) == 0
    out = capsys.readouterr().out
    assert "closed as debug/failure" in out and "what_happened: deploy_api -> " in out
    assert main([*argv, "--outcome", "failure", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "already_closed" and data["closed"] and data["episode"]["tags"] == ["deploy"]
    assert main([*argv[:2], "--kind", "debug", "--outcome", "success", "--db", str(path), "--json"]) == 1  # owner default: nothing
    assert json.loads(capsys.readouterr().out)["status"] == "nothing_captured"
    assert main(argv) == 2 and "the following arguments are required: --outcome" in capsys.readouterr().err  # a usage error
