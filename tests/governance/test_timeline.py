"""Execution timelines: step-by-step reconstruction of a session's tool calls, and the
versioned, non-executable export. Nothing can re-run a tool."""

from __future__ import annotations

import datetime as dt
import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import memdb
from memdb.errors import ValidationError
from memdb.governance.timeline import FORMAT, VERSION

UTC = dt.UTC
T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
SEC = dt.timedelta(seconds=1)


@pytest.fixture
def tdb(tmp_path: Path) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "t", clock=lambda: T0 + dt.timedelta(hours=1))
    db.configure(capture_tolerance_minutes=90)  # the sessions below were captured within the last 90 minutes
    yield db
    db.close()


def session(mem: memdb.Memory, name: str = "conv_1") -> list[str]:
    search = mem.record_tool_call(name, "search", {"q": "flights to Lisbon"}, ts=T0)
    mem.record_tool_result(search.id, {"hits": 3})
    mem.record_exchange(name, "book the cheapest", "Booking it now.", ts=T0 + 5 * SEC)
    book = mem.record_tool_call(name, "book", {"flight": "TP123", "card": "4111 1111 1111 1111"}, ts=T0 + 12 * SEC)
    mail = mem.record_tool_call(name, "send_email", {"to": "ana@example.com"}, ts=T0 + 12 * SEC + 500_000 * dt.timedelta(microseconds=1))
    mem.record_tool_result(mail.id, "queued")
    return [search.id, book.id, mail.id]


def test_timeline_reconstructs_steps_in_order(tdb: memdb.Database) -> None:
    mem = tdb.owner("ana")
    ids = session(mem)
    mem.record_tool_call("conv_2", "other", {}, ts=T0 + 2 * SEC)
    tl = mem.timeline("conv_1")
    assert [(s.step, s.id, s.tool) for s in tl.steps] == [(1, ids[0], "search"), (2, ids[1], "book"), (3, ids[2], "send_email")]
    first, second, third = tl.steps
    assert json.loads(first.input) == {"q": "flights to Lisbon"} and json.loads(first.result or "") == {"hits": 3}
    assert second.result is None and second.status == "no result captured"
    assert "4111" not in second.input and "<CARD_1>" in second.input  # sanitized at capture
    assert "ana@example.com" not in third.input and third.result == "queued"
    assert [s.offset_seconds for s in tl.steps] == [0.0, 12.0, 12.5]
    assert [s.since_previous_seconds for s in tl.steps] == [None, 12.0, 0.5]
    assert (tl.started, tl.ended) == (T0, T0 + 12.5 * SEC)
    assert "3 tool calls" in str(tl) and "book(" in str(tl)


def test_timeline_is_owner_private_and_honest_when_empty(tdb: memdb.Database) -> None:
    session(tdb.owner("ana"))
    assert len(tdb.owner("bo").timeline("conv_1")) == 0  # same session name, other owner: nothing
    assert str(tdb.owner("ana").timeline("nope")) == "session nope: no tool calls captured"
    with pytest.raises(ValidationError, match="session"):
        tdb.owner("ana").timeline("has spaces")


def test_export_is_versioned_non_executable_and_audited(tdb: memdb.Database, tmp_path: Path) -> None:
    mem = tdb.owner("ana")
    session(mem)
    target = tmp_path / "conv_1.timeline.json"
    doc = mem.export_timeline("conv_1", target)
    on_disk = json.loads(target.read_text())
    assert on_disk == doc
    assert (doc["format"], doc["version"], doc["executable"], doc["replayable"]) == (FORMAT, VERSION, False, False)
    assert "Not executable" in doc["notice"] and doc["step_count"] == 3 and len(doc["steps_sha256"]) == 64
    assert [s["tool"] for s in doc["steps"]] == ["search", "book", "send_email"]
    mode = target.stat().st_mode
    assert not mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    with pytest.raises(ValidationError, match="exists"):
        mem.export_timeline("conv_1", target)
    target.chmod(0o755)
    mem.export_timeline("conv_1", target, overwrite=True)
    assert not target.stat().st_mode & stat.S_IXUSR
    audit = [a for a in mem.audit() if a["action"] == "export_timeline"]
    assert len(audit) == 2 and audit[0]["steps_sha256"] == doc["steps_sha256"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_export_to_an_unwritable_path_is_a_validation_error(tdb: memdb.Database, tmp_path: Path, overwrite: bool) -> None:
    mem = tdb.owner("ana")
    session(mem)
    with pytest.raises(ValidationError, match=f"export path '{tmp_path}': is a directory"):
        mem.export_timeline("conv_1", tmp_path, overwrite=overwrite)
    missing = tmp_path / "no" / "such" / "dir.json"
    with pytest.raises(ValidationError, match="cannot be written"):
        mem.export_timeline("conv_1", missing, overwrite=overwrite)
    with pytest.raises(ValidationError, match="export path 5"):
        mem.export_timeline("conv_1", 5, overwrite=overwrite)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="cannot be written") as info:  # a path may name a person: shown sanitized
        mem.export_timeline("conv_1", tmp_path / "jane.doe@example.com" / "t.json", overwrite=overwrite)
    assert "jane.doe" not in str(info.value) and "<EMAIL_1>" in str(info.value)
    assert [a for a in mem.audit() if a["action"] == "export_timeline"] == []  # nothing written, nothing audited


def test_no_api_re_runs_or_replays_anything(tdb: memdb.Database) -> None:
    mem = tdb.owner("ana")
    names = {n.lower() for obj in (mem, tdb, mem.timeline("x")) for n in dir(obj)}
    assert not {n for n in names if any(w in n for w in ("replay", "rerun", "re_run", "execute", "invoke"))}


def test_tool_sessions_list_every_session_with_calls_the_latest_first(tdb: memdb.Database) -> None:
    """What the dashboard's Timelines list reads through the owner handle (it reached into the
    episode layer): sessions with tool calls, archived ones too, counted from headers (no access)."""
    mem = tdb.owner("ana")
    first = session(mem, "conv_1")
    mem.record_tool_call("conv_2", "search", {"q": "hotels"}, ts=T0 + 30 * SEC)
    mem.record_exchange("chat_only", "hello", "hi", ts=T0 + 40 * SEC)  # no tool call: not listed
    tdb.owner("bo").record_tool_call("bo_conv", "search", {"q": "x"}, ts=T0)
    mem.archive(first[0])
    listed = mem.tool_sessions()
    assert [(s.session, s.calls, s.archived) for s in listed] == [("conv_2", 1, 0), ("conv_1", 3, 1)]
    assert listed[1].last == T0 + 12 * SEC + 500_000 * dt.timedelta(microseconds=1)
    assert mem.peek(first[1]).access_count == 0  # listing is no access


def test_relevances_read_the_latest_hot_episodes_without_access(tdb: memdb.Database) -> None:
    mem = tdb.owner("ana")
    ids = session(mem)
    got = mem.relevances(2)
    assert len(got) == 2 and all(0 <= r <= 10 for r in got)
    assert len(mem.relevances()) == 4 and mem.relevances(0) == []  # the exchange too: every hot episode
    assert all(mem.peek(i).access_count == 0 for i in ids)
    with pytest.raises(ValidationError, match="limit -1: must be a non-negative int"):
        mem.relevances(-1)


@pytest.mark.usefixtures("backend")
def test_the_latest_sessions_are_listed_without_reading_the_whole_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review's find: each Timelines view read the header of every tool call and archived
    episode the owner ever had (903 ms a view at 20,000 calls) to show 200 sessions. With a limit
    the newest calls are walked until that many sessions are found (archived ones among them), and
    those are counted from their own indexes: exact counts, a bounded read."""
    with memdb.open(tmp_path / "l", clock=lambda: T0 + dt.timedelta(hours=1)) as db:
        db.configure(capture_tolerance_minutes=90)
        mem = db.owner("ana")
        early = mem.record_tool_call("long", "search", {"q": "first"}, ts=T0)  # "long" began before the others
        for n in range(30):
            mem.record_tool_call(f"old_{n:02d}", "search", {"q": n}, ts=T0 + (n + 1) * SEC)
        archived = mem.record_tool_call("archived", "search", {"q": "x"}, ts=T0 + 40 * SEC)
        mem.record_tool_call("long", "book", {"q": "last"}, ts=T0 + 50 * SEC)
        mem.record_tool_call("newest", "search", {"q": "y"}, ts=T0 + 60 * SEC)
        mem.archive(archived.id)
        every = mem.tool_sessions()
        reads: list[str] = []
        header = db.episodes.header
        monkeypatch.setattr(db.episodes, "header", lambda owner, eid: reads.append(eid) or header(owner, eid))
        latest = mem.tool_sessions(3)
        assert [(s.session, s.calls, s.archived) for s in latest] == [("newest", 1, 0), ("long", 2, 0), ("archived", 1, 1)]
        assert latest == every[:3] and early.id in reads  # "long" counted whole, from its own index
        assert len(reads) <= 10  # not the 30 older sessions' calls
        with pytest.raises(ValidationError, match="limit -1"):
            mem.tool_sessions(-1)
