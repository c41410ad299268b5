"""MCP surface: the server runs as a subprocess and is driven by the SDK's own client (stdio, HTTP).

Checks the tool list and schemas, every tool's text and structured results, errors that name
the argument and write nothing, and the owner clamp (server config or bearer token, never an
argument). Every client session runs under a deadline, so a hung server fails the test.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from clocks import Clock
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import memdb
from memdb.cli import main as cli_main
from memdb.errors import ConfigError
from memdb.memory.settings import Settings
from memdb.surfaces.mcp_server import ArgumentError, load_tokens, tool_specs

UTC = dt.UTC
NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=UTC)  # a Wednesday; the server's clock is pinned here
REPO = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/surfaces/)
TIMEOUT = 30.0  # seconds for one whole client session, start-up included
TOOLS = {
    "recall_episodes", "ask", "history", "record_episode", "record_fact", "record_feedback", "save_lesson", "timeline", "restore_episode",
    "end_session",
    "get_episode", "supersede_episode", "forget_episodes", "record_exchange", "record_tool_call", "record_tool_result", "knowledge",
    "prepare",
}  # fmt: skip
WRITES = {
    "record_episode", "record_fact", "record_feedback", "save_lesson", "restore_episode", "end_session", "supersede_episode",
    "forget_episodes",
    "record_exchange", "record_tool_call", "record_tool_result",
}  # fmt: skip
COUNTS_ACCESS = {"recall_episodes", "ask", "history", "get_episode", "knowledge", "prepare"}  # change later rankings
READS_ONLY = {"timeline"}  # reads in time order: no access counted, nothing changes
ANA_TOKEN = "ana-token-7f3a9c1e5b2d4680"
BOB_TOKEN = "bob-token-0d9e8c7b6a5f4321"


def write_tokens(config: Path, content: str) -> None:
    """A token file as it must be: its owner's alone (load_tokens refuses one others may read)."""
    config.write_text(content)
    config.chmod(0o600)


def _env() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def build_team(path: Path) -> dict[str, str]:
    """Two owners through the public API; returns the ids the tests refer to."""
    ids: dict[str, str] = {}
    clock = Clock(NOW)
    with memdb.open(path, clock=clock) as db:
        ana, bob = db.owner("ana"), db.owner("bob")
        ids["deploy_fail"] = ana.record(
            "debug", "Deploy of Project X failed: migration locked the users table", outcome="failure",
            tags=["Project X", "deploy"], lesson="Run migrations before the deploy window", why="the migration held a lock on users",
            ts=dt.datetime(2026, 6, 23, 10, tzinfo=UTC), session="s1",
        ).id  # fmt: skip
        ids["deploy_ok"] = ana.record(
            "debug", "Deploy of Project X went out after the migration ran early", outcome="success",
            tags=["project-x", "deploy"], ts=dt.datetime(2026, 6, 25, 16, tzinfo=UTC), session="s2",
        ).id  # fmt: skip
        ana.record(
            "sprint", "Shipped search v2 for Project X", outcome="success", tags=["project-x"], ts=dt.datetime(2026, 6, 26, 12, tzinfo=UTC)
        )
        clock.now = dt.datetime(2026, 6, 23, 11, tzinfo=UTC)  # gateway capture is live: it happens at the clock
        ids["chat"] = ana.record_exchange("s1", "What blocked the deploy?", "The migration lock.", tags=["chat"]).id
        clock.now += dt.timedelta(minutes=5)
        call = ana.record_tool_call("s1", "search_logs", {"query": "lock timeout"})
        clock.now = NOW
        ana.record_tool_result(call.id, {"hits": 3})
        ids["tool"] = call.id
        # bob shares a session name and a tag with ana: neither may leak through ana's server
        ids["bob"] = bob.record(
            "debug", "Payroll export zebracorn failed for Project X", outcome="failure", tags=["project-x", "payroll"],
            lesson="bob's private lesson", ts=dt.datetime(2026, 6, 23, 10, 30, tzinfo=UTC), session="s1",
        ).id  # fmt: skip
    return ids


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A read-only team database shared by the tests that do not write."""
    path = tmp_path_factory.mktemp("mcp") / "team"
    return path, build_team(path)


@pytest.fixture
def fresh(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A team database of its own, for tests that write."""
    path = tmp_path / "team"
    return path, build_team(path)


@asynccontextmanager
async def stdio_session(db: Path, owner: str = "ana") -> AsyncIterator[ClientSession]:
    """An initialised SDK client session on ``memdb mcp`` started as a subprocess over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memdb.cli", "mcp", "--db", str(db), "--owner", owner, "--now", NOW.isoformat()],
        env=_env(),
        cwd=str(REPO),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def run_session(db: Path, body: Any, owner: str = "ana") -> Any:
    """Run ``body(session)`` against a fresh stdio server, failing (not hanging) after TIMEOUT."""

    async def go() -> Any:
        with anyio.fail_after(TIMEOUT):
            async with stdio_session(db, owner) as session:
                return await body(session)

    return anyio.run(go)


def text(result: Any) -> str:
    assert result.content and result.content[0].type == "text"
    return str(result.content[0].text)


async def ok(session: ClientSession, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = await session.call_tool(tool, args)
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return text(result), result.structured_content


async def error(session: ClientSession, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = await session.call_tool(tool, args)
    assert result.is_error, f"{tool}({args}) should fail: {text(result)}"
    assert result.structured_content is not None
    return text(result), result.structured_content["error"]


# --- stdio -------------------------------------------------------------------------------------


def test_lists_the_tools_with_schemas_and_descriptions(team: tuple[Path, dict[str, str]]) -> None:
    async def body(s: ClientSession) -> Any:
        return (await s.list_tools()).tools

    tools = {t.name: t for t in run_session(team[0], body)}
    assert set(tools) == TOOLS  # save_lesson waits for the review queue
    for t in tools.values():
        assert t.description and len(t.description) > 60
        schema = t.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "owner" not in schema["properties"]  # the owner is never an argument
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
        assert t.output_schema and t.output_schema["type"] == "object"
        assert t.annotations is not None and t.annotations.read_only_hint is (t.name in READS_ONLY)  # the others write or count accesses
        assert t.annotations.destructive_hint is (t.name == "forget_episodes")
        assert t.annotations.idempotent_hint is (t.name in ("end_session", "record_fact", *READS_ONLY))
    record = tools["record_episode"].input_schema
    assert set(record["required"]) == {"kind", "summary", "outcome"}
    assert record["properties"]["outcome"]["enum"] == ["success", "partial", "failure"]
    assert record["properties"]["kind"]["enum"] == ["sprint", "routine", "roundtable", "research", "debug", "review"]
    assert {"exchange", "tool_call"} <= set(tools["recall_episodes"].input_schema["properties"]["kinds"]["items"]["enum"])
    end = tools["end_session"]
    assert set(end.input_schema["required"]) == {"session", "kind", "outcome"}  # offline: the outcome is never guessed
    assert end.annotations is not None and end.annotations.idempotent_hint is True  # a session ends once


def test_end_session_distills_the_owners_capture_once(fresh: tuple[Path, dict[str, str]]) -> None:
    path, ids = fresh

    async def body(s: ClientSession) -> None:
        out, data = await ok(s, "end_session", {"session": "s1", "kind": "debug", "outcome": "failure", "tags": ["deploy"]})
        assert data["status"] == "closed" and data["closed"] and data["events"] == 2  # ana's exchange and tool call, not bob's
        episode = data["episode"]
        assert episode["kind"] == "debug" and episode["outcome"] == "failure" and episode["session"] == "s1"
        assert episode["cites"] == [ids["chat"], ids["tool"]] and episode["summary"] == "What blocked the deploy?"
        assert episode["what_we_tried"] == 'search_logs {"query": "lock timeout"}' and "hits" in episode["what_happened"]
        assert "closed as debug/failure" in out
        again, data = await ok(s, "end_session", {"session": "s1", "kind": "debug", "outcome": "success"})
        assert data["status"] == "already_closed" and data["episode"]["id"] == episode["id"] and "nothing written" in again
        _, data = await ok(s, "end_session", {"session": "s9", "kind": "debug", "outcome": "success"})
        assert data["status"] == "nothing_captured" and not data["closed"] and "episode" not in data
        out, err = await error(s, "end_session", {"session": "s2", "kind": "debug"})
        assert err["argument"] == "outcome" and "nothing was written" in out
        _, history = await ok(s, "history", {"kind": "debug", "tags": ["deploy"]})
        assert history["total"] == 3 and episode["id"] in {a["id"] for a in history["attempts"]}  # history answers from it

    run_session(path, body)


def test_recall_and_ask_give_text_and_structured_content(team: tuple[Path, dict[str, str]]) -> None:
    path, ids = team

    async def body(s: ClientSession) -> None:
        out, data = await ok(s, "recall_episodes", {"tags": ["Project X", "deploy"], "window": "last week", "limit": 5})
        assert data["found"] and data["total"] == 2 and "tags project-x and deploy" in data["searched"]
        assert {m["id"] for m in data["memories"]} == {ids["deploy_ok"], ids["deploy_fail"]}
        fail = next(m for m in data["memories"] if m["id"] == ids["deploy_fail"])
        assert fail["outcome"] == "failure" and fail["lesson"] == "Run migrations before the deploy window" and fail["match_why"]
        assert fail["why"] == "the migration held a lock on users"  # the episode's own why, beside why it matched
        assert ids["deploy_fail"] in out and "Lesson: Run migrations before the deploy window" in out

        _, data = await ok(s, "recall_episodes", {"kinds": ["exchange", "tool_call"], "session": "s1"})
        assert {m["kind"] for m in data["memories"]} == {"exchange", "tool_call"}
        tool = next(m for m in data["memories"] if m["kind"] == "tool_call")
        assert tool["tool"] == "search_logs" and '"hits": 3' in tool["result"]

        _, data = await ok(s, "recall_episodes", {"outcome": "failure", "text": "migration"})
        assert [m["id"] for m in data["memories"]] == [ids["deploy_fail"]]

        out, data = await ok(s, "ask", {"question": "What happened with Project X last week?"})
        assert data["found"] and "window last week" in data["searched"] and "tags project-x" in data["searched"]
        assert out.startswith("searched: window last week")

    run_session(path, body)


def test_history_and_timeline(team: tuple[Path, dict[str, str]]) -> None:
    path, ids = team

    async def body(s: ClientSession) -> None:
        out, data = await ok(s, "history", {"kind": "debug", "tags": ["deploy"]})
        assert data["total"] == 2 and data["counts"] == {"success": 1, "partial": 0, "failure": 1}
        assert data["lessons"] == ["Run migrations before the deploy window"]
        assert out.startswith("2 past attempts (1 success, 1 failure). Last failure 2026-06-23")

        out, data = await ok(s, "timeline", {"session": "s1"})
        assert [e["kind"] for e in data["events"]] == ["debug", "exchange", "tool_call"]  # time order
        assert data["total"] == 3 and not data["truncated"]
        lines = out.splitlines()
        assert lines[0] == "Timeline session s1: 3 events in time order."
        assert "debug/failure" in lines[1] and "tool_call: search_logs" in lines[3] and '-> {"hits": 3}' in lines[3]

        _, data = await ok(s, "timeline", {"since": "2026-06-23", "until": "2026-06-24", "kinds": ["tool_call"]})
        assert [e["id"] for e in data["events"]] == [ids["tool"]]

        out, data = await ok(s, "timeline", {"window": "last week", "limit": 2})
        assert data["shown"] == 2 and data["truncated"] and "more exist" in out

    run_session(path, body)


def test_history_s_text_is_described_as_it_is_read(tmp_path: Path) -> None:
    """history's text shared recall's description, "at least one must occur; ranked by BM25",
    but history counts the attempts holding every word, newest first."""
    path = tmp_path / "words"
    with memdb.open(path, clock=Clock(NOW)) as db:
        ana = db.owner("ana")
        ana.record("debug", "Deploy of the billing api failed", outcome="failure", tags=["deploy"], ts=NOW - dt.timedelta(hours=2))
        ana.record("debug", "Rollback of the search index worked", outcome="success", ts=NOW - dt.timedelta(hours=1))

    async def body(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        said = tools["history"].input_schema["properties"]["text"]["description"]
        assert "every attempt must hold, all of them" in said and "at least one" not in said and "BM25" not in said
        _, both = await ok(s, "history", {"text": "deploy rollback"})
        _, one = await ok(s, "history", {"text": "rollback"})
        _, any_word = await ok(s, "recall_episodes", {"text": "deploy rollback"})
        assert both["total"] == 0 and one["total"] == 1 and any_word["total"] == 2

    run_session(path, body)


def test_empty_results_say_so_plainly(team: tuple[Path, dict[str, str]]) -> None:
    async def body(s: ClientSession) -> None:
        out, data = await ok(s, "ask", {"question": "What happened with the mobile app yesterday?"})
        assert not data["found"] and data["memories"] == [] and data["total"] == 0
        assert "Nothing found" in out and "mobile app" in out
        out, data = await ok(s, "recall_episodes", {"tags": ["deploy"], "window": "yesterday"})
        assert not data["found"] and data["note"] == "Nothing yesterday for tags deploy; 2 earlier (latest 2026-06-25)."
        out, data = await ok(s, "history", {"kind": "review"})
        assert data["total"] == 0 and out.startswith("No past attempts found")
        out, data = await ok(s, "timeline", {"session": "nope"})
        assert data["events"] == [] and out == "No events session nope."

    run_session(team[0], body)


def test_match_reasons_never_overwrite_the_episodes_why(tmp_path: Path) -> None:
    # issue 23: recall_episodes and ask built each memory by hand and put the match reasons in ``why``
    with memdb.open(tmp_path / "db", map_size=1 << 20) as db:
        mem = db.owner("ana")
        mem.record("debug", "Webhook retries failed", outcome="failure", tags=["twilio"], why="the signing secret was stale")
        specs = {s.name: s for s in tool_specs(db.settings)}
        for tool, args in (("recall_episodes", {"tags": ["twilio"]}), ("ask", {"question": "webhook retries"})):
            data = specs[tool].run(mem, specs[tool].check_arguments(args)).data
            (memory,) = data["memories"]
            assert memory["why"] == "the signing secret was stale", tool
            assert memory["match_why"] and all(isinstance(w, str) for w in memory["match_why"]), tool
        schema = specs["recall_episodes"].output_schema["properties"]["memories"]["items"]
        assert schema["properties"]["why"] == {"type": "string"} and "match_why" in schema["required"]


def test_get_supersede_and_forget(fresh: tuple[Path, dict[str, str]]) -> None:
    path, ids = fresh
    with memdb.open(path) as db:
        long = db.owner("ana").record("research", "Read the whole incident log", outcome="success", content="log line. " * 150)
        before = db.owner("ana").count()

    async def body(s: ClientSession) -> tuple[str, str]:
        out, data = await ok(s, "get_episode", {"episode_id": long.id})
        assert data["episode"]["content"] == long.content and len(long.content) > 600  # whole, not cut as in lists
        assert data["versions"] == [long.id] and out.startswith("- ") and "content: log line." in out
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert "at most 2,000 characters" in (tools["get_episode"].description or "")

        out, data = await ok(
            s, "supersede_episode", {"episode_id": ids["deploy_ok"], "reason": "it was rolled back the same day", "outcome": "failure"}
        )
        new = data["episode"]
        assert data["superseded"] == ids["deploy_ok"] and new["supersedes"] == ids["deploy_ok"] and new["outcome"] == "failure"
        assert new["supersede_reason"] == "it was rolled back the same day" and "earlier version is kept" in out
        _, data = await ok(s, "recall_episodes", {"tags": ["deploy"], "outcome": "success"})
        assert data["memories"] == []  # the old outcome no longer answers
        out, data = await ok(s, "get_episode", {"episode_id": ids["deploy_ok"]})
        assert data["episode"]["status"] == "superseded" and data["episode"]["superseded_by"] == new["id"]
        assert data["versions"] == [ids["deploy_ok"], new["id"]] and f"superseded by {new['id']}" in out

        out, err = await error(s, "supersede_episode", {"episode_id": ids["deploy_ok"], "reason": "again", "outcome": "partial"})
        assert f"already superseded by {new['id']}" in out and "nothing was written" in out
        out, err = await error(s, "supersede_episode", {"episode_id": new["id"], "outcome": "partial"})
        assert err["argument"] == "reason"
        out, err = await error(s, "supersede_episode", {"episode_id": ids["bob"], "reason": "probe", "outcome": "success"})
        assert err["type"] == "NotFoundError"  # bob's episode is no episode of ana's
        out, err = await error(s, "forget_episodes", {"episode_ids": [ids["bob"]], "reason": "probe"})
        assert err["type"] == "NotFoundError" and "nothing was written" in out
        out, err = await error(s, "forget_episodes", {"episode_ids": [ids["chat"]]})
        assert err["argument"] == "reason"

        out, data = await ok(s, "forget_episodes", {"episode_ids": [new["id"]], "reason": "wrong project"})
        assert sorted(data["erased"]) == sorted([ids["deploy_ok"], new["id"]]) and data["count"] == 2 and data["audit_id"]
        assert "for good" in out
        _, err = await error(s, "get_episode", {"episode_id": new["id"]})
        assert err["type"] == "NotFoundError"
        return str(new["id"]), str(data["audit_id"])

    new_id, audit_id = run_session(path, body)
    with memdb.open(path) as db:
        ana = db.owner("ana")
        assert ana.count() == before - 1 and new_id not in ana and ids["deploy_ok"] not in ana
        assert ids["bob"] in db.owner("bob")
        (entry,) = [a for a in ana.audit() if a["id"] == audit_id]
        assert entry["action"] == "erase" and entry["reason"] == "wrong project"
        assert db.check().ok


def test_record_episode_and_feedback(fresh: tuple[Path, dict[str, str]]) -> None:
    path, ids = fresh

    async def body(s: ClientSession) -> tuple[str, str]:
        out, data = await ok(
            s, "record_episode",
            {"kind": "debug", "summary": "Rolled back deploy 7; mail dana@example.com", "outcome": "partial",
             "tags": ["Project X"], "lesson": "Keep the rollback script tested", "session": "s9"},
        )  # fmt: skip
        ep = data["episode"]
        assert out.startswith(f"recorded {ep['id']} (debug/partial) at 2026-07-01 09:00 UTC")
        assert ep["tags"] == ["project-x"] and ep["ts"] == NOW.isoformat() and "dana@example.com" not in ep["summary"]
        out, data = await ok(s, "record_feedback", {"episode_id": ids["deploy_fail"], "value": 1})
        assert data["episode"]["feedback"] == 1.0 and "relevance now" in out
        return str(ep["id"]), str(data["episode"]["relevance"])

    new_id, _ = run_session(path, body)
    with memdb.open(path) as db:
        ana = db.owner("ana")
        stored = ana.peek(new_id)
        assert stored.outcome == "partial" and stored.lesson == "Keep the rollback script tested"
        assert "dana@example.com" not in stored.summary  # sanitized before it was written
        assert ana.peek(ids["deploy_fail"]).feedback == 1.0


def test_record_fact_keeps_a_preference_that_ask_answers_from(fresh: tuple[Path, dict[str, str]]) -> None:
    """The tools' help named facts, which ask answers from, but no tool could record one (an MCP
    probe's find)."""
    path, _ = fresh

    async def body(s: ClientSession) -> None:
        out, data = await ok(s, "record_fact", {"key": "ana/ui.theme", "value": "dark mode", "tags": ["ui"]})
        first = data["episode"]
        assert out.startswith("recorded fact ana/ui.theme = dark mode") and first["kind"] == "fact"
        _, again = await ok(s, "record_fact", {"key": "ana/ui.theme", "value": "dark mode", "tags": ["ui"]})
        assert again["episode"]["id"] == first["id"]  # the same value: nothing new
        out, data = await ok(s, "record_fact", {"key": "ana/ui.theme", "value": "solarized"})
        assert f"replaces the value of {first['id']}" in out
        _, answer = await ok(s, "ask", {"question": "what does Ana prefer for the ui theme?"})
        assert [m["summary"] for m in answer["memories"]][:1] == ["solarized"]
        _, err = await error(s, "record_fact", {"key": "ana@example.com", "value": "x"})
        assert "ana@example.com" not in json.dumps(err)

    run_session(path, body)


@pytest.mark.parametrize(
    ("tool", "args", "argument"),
    [
        ("record_episode", {"kind": "debug", "summary": "no outcome"}, "outcome"),
        ("record_episode", {"kind": "debug", "summary": "hedged", "outcome": "mostly fine"}, "outcome"),
        ("record_episode", {"kind": "exchange", "summary": "not a task kind", "outcome": "success"}, "kind"),
        ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "ts": "last tuesday"}, "ts"),
        ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "tags": "deploy"}, "tags"),
        ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "owner": "bob"}, "owner"),
        ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "colour": "red"}, "colour"),
        ("record_feedback", {"episode_id": "x", "value": 2}, "value"),
        ("recall_episodes", {"limit": "abc"}, "limit"),
        ("recall_episodes", {"limit": 0}, "limit"),
        ("recall_episodes", {"window": "sometime soon"}, "window"),
        ("recall_episodes", {"window": "last week", "since": "2026-06-01"}, "window"),
        ("recall_episodes", {"since": "2026-06-30", "until": "2026-06-01"}, "until"),
        ("recall_episodes", {"kinds": ["debug", "gossip"]}, "kinds"),
        ("ask", {}, "question"),
        ("history", {"kind": "chat"}, "kind"),
        ("timeline", {}, "session"),
        # JSON integers have no size limit, datetimes do: each is an argument error, not a crash
        ("recall_episodes", {"limit": 10**400}, "limit"),
        ("record_feedback", {"episode_id": "x", "value": 10**400}, "value"),
        ("record_feedback", {"episode_id": "x", "value": -(10**5000)}, "value"),  # too long even for repr()
        ("recall_episodes", {"since": "0001-01-01T00:00:00+14:00"}, "since"),
        ("history", {"until": "9999-12-31T23:00:00-05:00"}, "until"),
        ("timeline", {"since": "0001-01-01T00:00:00+14:00"}, "since"),
        ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "ts": "9999-12-31T23:59:59-05:00"}, "ts"),
        ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "decisions": {"k": "w" * 20_001}}, "decisions"),
        ("record_exchange", {"session": "s1", "user_message": "hi"}, "response"),
        ("record_tool_call", {"session": "s1", "tool": "t", "input": "not an object"}, "input"),
        ("record_tool_result", {"call_id": "x"}, "result"),
        ("knowledge", {"limit": 0}, "limit"),
        ("prepare", {"task": "x", "max_chars": 10}, "max_chars"),
        ("recall_episodes", {"cursor": "e30"}, "cursor"),  # {} : no offset
        ("timeline", {"session": "s1", "cursor": "e30"}, "cursor"),  # {} : no position
        ("timeline", {"session": "s1", "cursor": "eyJxIjoiMCIsIm8iOjV9"}, "cursor"),  # {"q":"0","o":5} : recall's kind
    ],
)
def test_bad_arguments_name_the_argument(tool: str, args: dict[str, Any], argument: str, tmp_path: Path) -> None:
    # The same checks the server runs, in process (the wire path is covered below): fast, exhaustive.
    with memdb.open(tmp_path / "db", map_size=1 << 20) as db:
        spec = next(s for s in tool_specs(db.settings) if s.name == tool)
        with pytest.raises(ArgumentError) as caught:
            spec.run(db.owner("ana"), spec.check_arguments(args))
        assert db.owner("ana").count() == 0
    assert caught.value.argument == argument and str(caught.value).startswith(argument)


def test_bad_arguments_over_the_wire_write_nothing(fresh: tuple[Path, dict[str, str]]) -> None:
    path, ids = fresh
    with memdb.open(path) as db:
        before = db.owner("ana").count()

    async def body(s: ClientSession) -> None:
        out, err = await error(s, "record_episode", {"kind": "debug", "summary": "no outcome"})
        assert err["argument"] == "outcome" and "outcome: required" in out and "nothing was written" in out
        out, err = await error(s, "record_episode", {"kind": "debug", "summary": "x", "outcome": "meh"})
        assert err["argument"] == "outcome" and "success, partial, failure" in out
        out, err = await error(s, "record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "session": "dana@example.com"})
        assert "session looks like personal data" in out and err["type"] == "ValidationError"
        out, err = await error(s, "record_feedback", {"episode_id": ids["deploy_fail"], "value": -3})
        assert err["argument"] == "value" and "from -1 to 1" in out
        out, err = await error(s, "record_feedback", {"episode_id": "20260101T000000000000Z-000000", "value": 1})
        assert err["type"] == "NotFoundError" and "no such episode" in out
        out, err = await error(s, "recall_episodes", {"limit": "abc"})
        assert out == "recall_episodes: invalid argument: limit 'abc': expected an integer from 1 to 50"
        with pytest.raises(MCPError, match="no such tool"):
            await s.call_tool("delete_everything", {})
        out, err = await error(s, "save_lesson", {"lesson": "x"})
        assert "lesson" in out  # an unknown argument is named; nothing is written

    run_session(path, body)
    with memdb.open(path) as db:
        assert db.owner("ana").count() == before
        assert db.owner("ana").peek(ids["deploy_fail"]).feedback is None


def test_extreme_arguments_over_the_wire_are_tool_errors(fresh: tuple[Path, dict[str, str]]) -> None:
    path, ids = fresh
    with memdb.open(path) as db:
        before = db.owner("ana").count()
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("recall_episodes", {"limit": 10**400}, "limit"),
        ("record_feedback", {"episode_id": ids["deploy_fail"], "value": 10**400}, "value"),
        ("recall_episodes", {"since": "0001-01-01T00:00:00+14:00"}, "since"),
        ("history", {"until": "9999-12-31T23:00:00-05:00"}, "until"),
        ("timeline", {"since": "0001-01-01T00:00:00+14:00"}, "since"),
        ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "ts": "9999-12-31T23:59:59-05:00"}, "ts"),
        ("record_episode", {"kind": "debug", "summary": "big", "outcome": "success", "decisions": {"k": "word " * 800_000}}, "decisions"),
    ]

    async def body(s: ClientSession) -> None:
        for tool, args, argument in calls:
            out, err = await error(s, tool, args)
            assert err["argument"] == argument and out.startswith(f"{tool}: invalid argument: {argument} "), out
        out, _ = await error(
            s, "record_episode", {"kind": "debug", "summary": "big", "outcome": "success", "decisions": {"k": "w" * 30_000}}
        )
        assert "more than 20000" in out and "nothing was written" in out

    run_session(path, body)
    with memdb.open(path) as db:
        assert db.owner("ana").count() == before
        assert db.owner("ana").peek(ids["deploy_fail"]).feedback is None


def test_an_unexpected_exception_is_a_tool_error_naming_only_its_type(fresh: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    # a bug in a tool (simulated: history raises KeyError with an argument in its message) must not
    # become a JSON-RPC error with the server's traceback; the traceback goes to stderr, once
    path, _ = fresh
    script = (
        "import sys, memdb.cli, memdb.surfaces.mcp_server as server\n"
        "def broken(mem, args): raise KeyError(args['text'])\n"
        "server._history = broken\n"
        "raise SystemExit(memdb.cli.main(sys.argv[1:]))\n"
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-c", script, "mcp", "--db", str(path), "--owner", "ana", "--now", NOW.isoformat()], env=_env()
    )
    log = tmp_path / "stderr.txt"

    async def go() -> tuple[str, dict[str, Any], dict[str, Any]]:
        with anyio.fail_after(TIMEOUT), log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                out, err = await error(s, "history", {"text": "dana@example.com"})
                _, still = await ok(s, "recall_episodes", {"tags": ["deploy"]})  # the server lives on
                return out, err, still

    out, err, still = anyio.run(go)
    assert out == "history: internal error (KeyError); the server's log has the details"
    assert err == {"type": "InternalError", "exception": "KeyError"}
    assert still["found"]
    logged = log.read_text()
    assert logged.count("Traceback") == 1 and "KeyError" in logged


def test_owner_clamp_over_stdio(team: tuple[Path, dict[str, str]]) -> None:
    path, ids = team

    async def body(s: ClientSession) -> list[str]:
        seen: list[str] = []  # everything the read tools showed ana
        calls: list[tuple[str, dict[str, Any]]] = [
            ("recall_episodes", {"limit": 50}),
            ("recall_episodes", {"text": "zebracorn payroll"}),
            ("recall_episodes", {"tags": ["payroll"]}),
            ("ask", {"question": "payroll zebracorn failures"}),
            ("history", {"tags": ["project-x"], "limit": 50}),
            ("timeline", {"session": "s1"}),
            ("timeline", {"since": "2026-06-01", "limit": 200}),
        ]
        for tool, args in calls:
            out, data = await ok(s, tool, args)
            seen.append(out + repr(data))
        out, err = await error(s, "record_feedback", {"episode_id": ids["bob"], "value": 1})
        # exactly what an id that never existed gets: existence is private too
        assert out == f"record_feedback: not found: episode {ids['bob']!r}: no such episode for owner 'ana' (nothing was written)"
        _, err = await error(s, "recall_episodes", {"owner": "bob"})
        assert err["argument"] == "owner"
        return seen

    shown = run_session(path, body, owner="ana")
    assert len(shown) == 7
    for output in shown:
        # queries may echo the words searched for, never bob's episode
        assert "Payroll export" not in output and "bob's private lesson" not in output and ids["bob"] not in output

    async def as_bob(s: ClientSession) -> dict[str, Any]:
        return (await ok(s, "recall_episodes", {"text": "zebracorn"}))[1]

    assert [m["id"] for m in run_session(path, as_bob, owner="bob")["memories"]] == [ids["bob"]]


# --- command line and configuration ----------------------------------------------------------


def test_import_memdb_never_needs_the_extra(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['mcp'] = None\n"
        "import memdb, memdb.cli, memdb.surfaces.mcp_server\n"
        "raise SystemExit(memdb.cli.main(['mcp', '--db', sys.argv[1], '--owner', 'ana']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "db")], env={**os.environ, **_env()}, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == "memdb: memdb mcp needs the 'mcp' extra: pip install 'memdb-agent[mcp]'"


def test_cli_option_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "db")
    config = tmp_path / "tokens.toml"
    write_tokens(config, f'[tokens]\n"{ANA_TOKEN}" = "ana"\n')
    cases = [
        (["mcp", "--db", db], "--owner: required for stdio"),
        (["mcp", "--db", db, "--owner", "ana", "--config", str(config)], "--config: only for --transport http"),
        (["mcp", "--db", db, "--transport", "http"], "--config: required for --transport http"),
        (["mcp", "--db", db, "--transport", "http", "--config", str(config), "--owner", "ana"], "--owner: not allowed"),
        (["mcp", "--db", db, "--transport", "http", "--config", str(config), "--port", "70000"], "--port 70000"),
    ]
    monkeypatch.delenv("MEMDB_OWNER", raising=False)
    for argv, message in cases:
        assert cli_main(argv) == 1
        assert message in capsys.readouterr().err
    assert not (tmp_path / "db").exists()  # refused before opening anything


def test_a_database_that_is_not_there_is_refused_unless_create(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A probe's find: ``memdb mcp --db typo`` made an empty database and answered "Nothing found"
    to every question, where ``memdb ask --db typo`` refuses. It is refused now, in one line
    naming --create, and nothing is made; with --create a new database is started."""
    typo, empty = tmp_path / "db_yaer", tmp_path / "empty"
    empty.mkdir()
    for path in (typo, empty):
        assert cli_main(["mcp", "--db", str(path), "--owner", "ana"]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"memdb: --db {path}: no memdb database there") and "pass --create" in err and "memdb demo" in err
    assert not typo.exists() and list(empty.iterdir()) == []
    new = tmp_path / "new"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memdb.cli", "mcp", "--db", str(new), "--owner", "ana", "--create"], env=_env(), cwd=str(REPO)
    )

    async def go() -> None:
        with anyio.fail_after(TIMEOUT):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                await ok(s, "record_episode", {"kind": "debug", "summary": "First memory", "outcome": "success"})

    anyio.run(go)
    with memdb.open(new, create=False) as db:
        assert [e.summary for e in db.owner("ana").episodes()] == ["First memory"]


def test_http_on_a_busy_port_is_one_line_and_exit_1(tmp_path: Path) -> None:
    config = tmp_path / "tokens.toml"
    write_tokens(config, f'[tokens]\n"{ANA_TOKEN}" = "ana"\n')
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "memdb.cli", "mcp", "--db", str(tmp_path / "db"), "--transport", "http", "--port", str(port),
             "--config", str(config)],
            env={**os.environ, **_env()}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"memdb: --port {port}: cannot listen on 127.0.0.1:{port}: Address already in use (pick another --port)"
    ]
    assert not (tmp_path / "db").exists()  # refused before the database was opened


def test_token_config_errors_never_echo_a_token(tmp_path: Path) -> None:
    config = tmp_path / "tokens.toml"
    for content, message in [
        ('[tokens]\n"short" = "ana"\n', "token #1 is shorter than 16 characters"),
        (f'[tokens]\n"{ANA_TOKEN}" = 3\n', "token #1 maps to a number"),
        (f'[tokens]\n"{ANA_TOKEN}" = " ana"\n', "token #1: owner ' ana'"),
        ("[tokens]\n", "no [tokens] table"),
        (f'[token]\n"{ANA_TOKEN}" = "ana"\n', "unknown key 'token'"),
        ("[tokens\n", "not valid TOML"),
    ]:
        write_tokens(config, content)
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")) as caught:
            load_tokens(config)
        assert ANA_TOKEN not in str(caught.value)
    with pytest.raises(ConfigError, match="no such file"):
        load_tokens(tmp_path / "missing.toml")
    write_tokens(config, f'[tokens]\n"{ANA_TOKEN}" = "ana"\n"{BOB_TOKEN}" = "bob"\n')
    assert load_tokens(config) == {ANA_TOKEN: "ana", BOB_TOKEN: "bob"}


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_token_file_others_may_read_or_change_is_refused(tmp_path: Path, mode: int) -> None:
    config = tmp_path / "tokens.toml"
    config.write_text(f'[tokens]\n"{ANA_TOKEN}" = "ana"\n')
    config.chmod(mode)
    with pytest.raises(ConfigError) as info:
        load_tokens(config)
    message = str(info.value)
    assert f"mode {mode:04o} lets other users read or change its bearer tokens" in message
    assert f"chmod 600 {config}" in message and ANA_TOKEN not in message


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_token_file_is_read(tmp_path: Path, mode: int) -> None:
    config = tmp_path / "tokens.toml"
    config.write_text(f'[tokens]\n"{ANA_TOKEN}" = "ana"\n')
    config.chmod(mode)
    assert load_tokens(config) == {ANA_TOKEN: "ana"}


# --- streamable HTTP ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(team: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``memdb mcp --transport http`` on a free loopback port with tokens for ana and bob; yields the URL."""
    with serving_http(team[0], tmp_path_factory.mktemp("mcp-http")) as url:
        yield url


@contextmanager
def serving_http(db: Path, where: Path) -> Iterator[str]:
    """A ``memdb mcp --transport http`` process of its own over ``db`` (its token file in ``where``):
    the URL of its ``/mcp``. Its own throttle too: failed tokens counted elsewhere do not lock it."""
    config = where / "tokens.toml"
    write_tokens(config, f'[tokens]\n"{ANA_TOKEN}" = "ana"\n"{BOB_TOKEN}" = "bob"\n')
    port = _free_port()
    argv = ["-m", "memdb.cli", "mcp", "--db", str(db), "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, *argv, "--config", str(config), "--now", NOW.isoformat()],
        env={**os.environ, **_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"memdb mcp --transport http exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("memdb mcp --transport http did not start listening in time")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


def run_http(url: str, token: str, body: Any) -> Any:
    async def go() -> Any:
        with anyio.fail_after(TIMEOUT):
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await body(session)

    return anyio.run(go)


def test_http_token_picks_the_owner(http_server: str, team: tuple[Path, dict[str, str]]) -> None:
    ids = team[1]

    async def body(s: ClientSession) -> tuple[set[str], dict[str, Any], dict[str, Any]]:
        names = {t.name for t in (await s.list_tools()).tools}
        _, mine = await ok(s, "recall_episodes", {"tags": ["project-x"], "limit": 50})
        _, err = await error(s, "recall_episodes", {"owner": "bob"})
        return names, mine, err

    names, mine, err = run_http(http_server, ANA_TOKEN, body)
    assert names == TOOLS and err["argument"] == "owner"
    assert ids["deploy_fail"] in {m["id"] for m in mine["memories"]} and ids["bob"] not in {m["id"] for m in mine["memories"]}

    async def as_bob(s: ClientSession) -> dict[str, Any]:
        return (await ok(s, "recall_episodes", {"tags": ["project-x"], "limit": 50}))[1]

    assert [m["id"] for m in run_http(http_server, BOB_TOKEN, as_bob)["memories"]] == [ids["bob"]]


def test_http_serves_the_new_read_tools_per_token(http_server: str, team: tuple[Path, dict[str, str]]) -> None:
    """knowledge, prepare and cursor pages over HTTP, each request clamped to its token's owner
    (the writing tools run over stdio against fresh databases: this server's is shared)."""
    ids = team[1]

    async def body(s: ClientSession) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        _, knowledge = await ok(s, "knowledge", {})
        _, prepared = await ok(s, "prepare", {"task": "deploy Project X", "tags": ["project-x"]})
        _, page = await ok(s, "recall_episodes", {"tags": ["project-x"], "limit": 1})
        seen = [m["id"] for m in page["memories"]]
        while "cursor" in page:
            _, page = await ok(s, "recall_episodes", {"tags": ["project-x"], "limit": 1, "cursor": page["cursor"]})
            seen += [m["id"] for m in page["memories"]]
        return knowledge, prepared, seen

    knowledge, prepared, seen = run_http(http_server, ANA_TOKEN, body)
    assert knowledge["entries"] == [] and ids["deploy_fail"] in {r["id"] for r in prepared["records"]}
    assert ids["bob"] not in {r["id"] for r in prepared["records"]} and ids["bob"] not in seen
    assert len(seen) == len(set(seen)) == 3 and ids["deploy_fail"] in seen  # ana's three project-x episodes, one a page
    _, bobs, bob_seen = run_http(http_server, BOB_TOKEN, body)
    assert [r["id"] for r in bobs["records"]] == [ids["bob"]] and bob_seen == [ids["bob"]]


def test_http_rejects_a_missing_or_wrong_token(http_server: str) -> None:
    for headers in ({}, {"Authorization": "Bearer not-a-known-token-at-all"}, {"Authorization": ANA_TOKEN}):
        response = httpx2.post(http_server, headers=headers, timeout=10)
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")

    async def never(s: ClientSession) -> None:
        raise AssertionError("initialize should have failed")

    with pytest.raises((MCPError, ExceptionGroup)) as caught:  # the SDK may wrap the refusal in task-group errors
        run_http(http_server, "not-a-known-token-at-all", never)
    assert isinstance(caught.value, MCPError) or caught.group_contains(MCPError)


def test_http_refuses_two_authorization_headers(team: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """Two headers, even both valid or one valid: the middleware and the tools must read the same one, so neither is trusted.
    Its own server: the four refusals count as failed sign-ins, and the module's server saw the
    earlier tests' wrong tokens from this machine (the throttle locks it at the fifth)."""
    with serving_http(team[0], tmp_path) as served:
        url = httpx2.URL(served)
        replies = [two_authorization_headers(url, first, second) for first, second in (
            (ANA_TOKEN, BOB_TOKEN), (ANA_TOKEN, "not-a-known-token"), ("not-a-known-token", ANA_TOKEN), (ANA_TOKEN, ANA_TOKEN),
        )]  # fmt: skip
    for reply in replies:
        assert reply.startswith(b"HTTP/1.1 401") and b"one Authorization header" in reply, reply[:200]


def two_authorization_headers(url: httpx2.URL, first: str, second: str) -> bytes:
    """The reply to a POST to ``url`` carrying two Authorization headers, as raw bytes (an HTTP
    client may fold repeated headers into one line)."""
    request = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\nAuthorization: Bearer {first}\r\n"
        f"Authorization: Bearer {second}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((url.host, url.port), timeout=10) as conn:
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return reply


def test_save_lesson_lands_pending_and_private(team: tuple[Path, dict[str, str]]) -> None:
    path, _ = team

    async def body(s: ClientSession) -> None:
        _, rec = await ok(s, "recall_episodes", {"tags": ["deploy"], "limit": 1})
        cited = rec["memories"][0]["id"]
        out, data = await ok(s, "save_lesson", {"text": "Run migrations before every deploy window", "cites": [cited]})
        assert data["entry"]["state"] == "pending" and data["entry"]["visibility"] == "private"
        assert "review queue" in out
        out, _ = await error(s, "save_lesson", {"text": "Run migrations before every deploy window"})
        assert "duplicate" in out.lower() or "repeats" in out.lower()

    run_session(path, body)
    with memdb.open(path) as db:
        (entry,) = db.review_queue()
        assert entry.owner == "ana" and entry.state == "pending"


# --- annotations, pages, capture, knowledge and prepare (issue 23) ------------------------------


def test_annotations_tell_the_truth_about_side_effects(tmp_path: Path) -> None:
    """A tool is read-only in MCP's sense only if nothing changes: ask and recall count accesses,
    which change later rankings, so they are not; the declarations say which tools do."""
    specs = {s.name: s for s in tool_specs(Settings())}
    assert set(specs) == TOOLS
    assert {n for n, s in specs.items() if not s.read_only} == WRITES
    assert {n for n, s in specs.items() if s.counts_access} == COUNTS_ACCESS
    assert WRITES | COUNTS_ACCESS | READS_ONLY == TOOLS
    assert {n for n, s in specs.items() if s.annotations()["read_only"]} == READS_ONLY
    path, ids = tmp_path / "team", build_team(tmp_path / "team")

    async def body(s: ClientSession) -> None:
        for _ in range(2):
            await ok(s, "ask", {"question": "What happened with Project X last week?"})

    with memdb.open(path) as db:
        before = db.owner("ana").peek(ids["deploy_fail"]).access_count
    run_session(path, body)
    with memdb.open(path) as db:
        assert db.owner("ana").peek(ids["deploy_fail"]).access_count == before + 2  # asking changed the episode's ranking state


def test_recall_pages_with_a_cursor(tmp_path: Path) -> None:
    path = tmp_path / "many"
    with memdb.open(path, clock=Clock(NOW)) as db:
        ana = db.owner("ana")
        with db.transaction():
            for i in range(23):
                ana.record("debug", f"Deploy attempt {i}", outcome="success" if i % 3 else "failure", tags=["deploy"],
                           ts=NOW - dt.timedelta(hours=i + 1))  # fmt: skip
        all_ids = {e.id for e in ana.episodes()}

    async def body(s: ClientSession) -> None:
        query = {"tags": ["deploy"], "limit": 10}
        seen: list[str] = []
        out, page = await ok(s, "recall_episodes", query)
        assert page["total"] == 23 and len(page["memories"]) == 10 and "pass cursor" in out
        pages = 1
        while True:
            seen += [m["id"] for m in page["memories"]]
            if "cursor" not in page:
                break
            out, page = await ok(s, "recall_episodes", {**query, "cursor": page["cursor"], "limit": 7 if pages == 1 else 10})
            pages += 1
        assert pages == 3 and len(seen) == len(set(seen)) == 23 and set(seen) == all_ids  # every match once, none twice
        _, again = await ok(s, "recall_episodes", query)
        assert [m["id"] for m in again["memories"]] == seen[:10]  # stable under the same query
        out, err = await error(s, "recall_episodes", {"tags": ["other"], "cursor": again["cursor"]})
        assert err["argument"] == "cursor" and "another query" in out
        _, err = await error(s, "recall_episodes", {**query, "cursor": "not-a-cursor"})
        assert err["argument"] == "cursor"
        _, both = await ok(s, "recall_episodes", {"kinds": ["debug", "exchange"], "limit": 20})
        _, rest = await ok(s, "recall_episodes", {"kinds": ["debug", "exchange"], "limit": 20, "cursor": both["cursor"]})
        assert len(both["memories"]) == 20 and len(rest["memories"]) == 3 and "cursor" not in rest
        assert not {m["id"] for m in both["memories"]} & {m["id"] for m in rest["memories"]}

    run_session(path, body)


def test_several_kinds_keep_what_one_kind_s_note_says(tmp_path: Path) -> None:
    """With kinds ["debug"] an empty answer said "1 archived match ... include_archived: true to
    see it"; with ["debug", "sprint"] only "Nothing found", and "Also 1 archived match" beside
    results was dropped too: several kinds were merged under a note of their own that counted
    nothing else. What one kind's note says is counted over every kind now."""
    path = tmp_path / "kinds"
    clock = Clock(NOW - dt.timedelta(days=60))
    with memdb.open(path, clock=clock) as db:
        ana = db.owner("ana")
        ana.record("debug", "Deploy of the billing api failed: migration lock", outcome="failure", tags=["deploy"], lesson="migrate first")
        clock.now = NOW
        assert db.maintain().archived == 1
        ana.record("debug", "Migration of the users table ran clean", outcome="success", tags=["db"], ts=NOW - dt.timedelta(days=2))
        ana.record("sprint", "Sprint shipped the deploy dashboard", outcome="success", tags=["deploy"], ts=NOW - dt.timedelta(days=5))
        ana.record("review", "Review of the deploy runbook failed", outcome="failure", tags=["deploy"], ts=NOW - dt.timedelta(days=20))

    async def body(s: ClientSession) -> None:
        failures = {"tags": ["deploy"], "outcome": "failure"}
        _, one = await ok(s, "recall_episodes", {**failures, "kinds": ["debug"]})
        _, two = await ok(s, "recall_episodes", {**failures, "kinds": ["debug", "sprint"]})
        assert "1 archived match" in one["note"] and not two["found"]
        assert two["note"] == (
            "Nothing found for tags deploy; kind debug or sprint; outcome failure. 1 archived match; include_archived: true to see it "
            "(restore_episode brings it back). 1 memory of another kind matches the rest; leave kinds out to see it."
        )
        _, found = await ok(s, "recall_episodes", {"text": "migration", "kinds": ["debug", "sprint"]})
        assert found["total"] == 1 and found["note"].endswith("showing 1. Also 1 archived match; include_archived: true to see it.")
        _, window = await ok(s, "recall_episodes", {"tags": ["deploy"], "kinds": ["debug", "sprint"], "window": "yesterday"})
        assert "Outside the window: 1 earlier." in window["note"] and "1 archived match" in window["note"]
        _, cold = await ok(s, "recall_episodes", {**failures, "kinds": ["debug", "sprint"], "include_archived": True})
        assert cold["total"] == 1 and "archived match" not in cold["note"]

    run_session(path, body)


def test_a_long_session_s_timeline_starts_at_its_first_event(tmp_path: Path) -> None:
    """A probe's find: the timeline of a 1,100-event session, "the earliest first", began at turn
    100: it ranked the session's best 1,000 and sorted those by time. It reads the session's
    index in time order now, says where to read on, and counts no access."""
    path = tmp_path / "long"
    clock = Clock(NOW - dt.timedelta(days=2))
    with memdb.open(path, clock=clock, sync=False) as db:
        ana = db.owner("ana")
        with db.transaction():
            for i in range(1050):
                ana.record_exchange("main", f"turn number {i}", "ok")
                clock.advance(seconds=30)
        first = next(ana.episodes(session="main"))

    async def body(s: ClientSession) -> None:
        out, data = await ok(s, "timeline", {"session": "main", "limit": 3})
        assert [e["summary"] for e in data["events"]] == ["turn number 0", "turn number 1", "turn number 2"]
        assert data["truncated"] and "total" not in data and f"pass cursor {data['cursor']}" in out
        seen: list[str] = []
        page: dict[str, Any] = {"cursor": None}
        while "cursor" in page:
            cursor = {"cursor": page["cursor"]} if page["cursor"] else {}
            _, page = await ok(s, "timeline", {"session": "main", "limit": 200, **cursor})
            seen += [e["summary"] for e in page["events"]]
        assert seen == [f"turn number {i}" for i in range(1050)] and page["shown"] == 50  # each once, in order

    run_session(path, body)
    with memdb.open(path) as db:
        assert db.owner("ana").peek(first.id).access_count == first.access_count  # a timeline is no access


def test_timeline_pages_through_events_that_share_a_time_once_each(tmp_path: Path) -> None:
    """A review's find: timeline paged by ``next_since``, the time of the first event not shown,
    and since is inclusive: where more events than a page share one time (an import, a batch
    recorded with one ts), every page gave the same next_since and the same page, for ever. A
    cursor on the last event shown, (time, id), reads on past it: each event once, then no cursor."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        ana = db.owner("ana")
        at = NOW - dt.timedelta(hours=1)
        ids = [ana.record("exchange", f"imported {i}", session="s", ts=at).id for i in range(9)]
        late = ana.record("exchange", "after the import", session="s", ts=at + dt.timedelta(seconds=1)).id
        spec = next(s for s in tool_specs(db.settings) if s.name == "timeline")
        for query in ({"session": "s"}, {"since": (at - dt.timedelta(minutes=1)).isoformat()}):
            for limit in (3, 4, 10):
                seen: list[str] = []
                page = spec.run(ana, spec.check_arguments({**query, "limit": limit})).data
                for _ in range(10):
                    seen += [e["id"] for e in page["events"]]
                    if "cursor" not in page:
                        break
                    assert page["truncated"] and "next_since" not in page
                    page = spec.run(ana, spec.check_arguments({**query, "limit": limit, "cursor": page["cursor"]})).data
                assert "cursor" not in page and not page["truncated"], (query, limit)
                assert seen == [*sorted(ids), late], (query, limit)  # each once, in (time, id) order
        page = spec.run(ana, spec.check_arguments({"session": "s", "limit": 3})).data
        with pytest.raises(ArgumentError) as caught:  # a cursor belongs to its query
            spec.run(ana, spec.check_arguments({"session": "other", "limit": 3, "cursor": page["cursor"]}))
        assert caught.value.argument == "cursor" and "another query" in str(caught.value)


def test_lines_date_memories_in_the_database_s_timezone(tmp_path: Path) -> None:
    """A probe's find: in a database on Los Angeles time, "yesterday (2026-06-30)" listed an
    evening's hotfix as 2026-07-01, its UTC date, and the timeline's window and times were UTC
    unlabelled. Lines show the days and times the windows are read in."""
    path = tmp_path / "la"
    with memdb.open(path, clock=Clock(NOW)) as db:
        db.configure(timezone="America/Los_Angeles")
        db.owner("ana").record("debug", "Late-night hotfix of the billing api", outcome="success", tags=["billing"], session="hot",
                               ts=dt.datetime.fromisoformat("2026-06-30T21:30:00-07:00"))  # fmt: skip

    async def body(s: ClientSession) -> None:
        line = "- 2026-06-30 debug/success [billing]: Late-night hotfix of the billing api"
        for tool, args in (("recall_episodes", {"window": "yesterday"}), ("ask", {"question": "What happened yesterday?"}),
                           ("history", {"tags": ["billing"], "window": "yesterday"})):  # fmt: skip
            out, data = await ok(s, tool, args)
            assert line in out and data[("attempts" if tool == "history" else "memories")][0]["ts"].startswith("2026-07-01T04:30"), tool
        out, _ = await ok(s, "timeline", {"window": "yesterday"})
        first, event = out.splitlines()
        assert first.startswith("Timeline from 2026-06-30 00:00 to 2026-07-01 00:00 (America/Los_Angeles): 1 event")
        assert event.startswith("- 2026-06-30 21:30 debug/success")
        out, _ = await ok(s, "timeline", {"session": "hot"})
        assert out.splitlines()[0].endswith("Times in America/Los_Angeles.") and "- 2026-06-30 21:30" in out

    run_session(path, body)


def test_a_timeline_shows_archived_events_and_notes_name_the_tools_arguments(tmp_path: Path) -> None:
    """A session whose events were archived answered "No events session fix-0310", and an archived
    tool call read "None -> no result yet"; the notes said ``include_archived=True`` and
    ``restore()``, which a tool's caller knows as ``include_archived: true`` and ``restore_episode``."""
    path = tmp_path / "archived"
    clock = Clock(NOW - dt.timedelta(days=90))
    with memdb.open(path, clock=clock) as db:
        ana = db.owner("ana")
        ana.record_exchange("fix-0310", "The search cache is stampeding", "Looking at the logs")
        ana.record_tool_call("fix-0310", "grep_logs", {"pattern": "stampede"})
        clock.now = NOW
        assert db.maintain().archived == 2

    async def body(s: ClientSession) -> None:
        out, data = await ok(s, "timeline", {"session": "fix-0310"})
        assert data["shown"] == 2 and [e["status"] for e in data["events"]] == ["archived", "archived"]
        assert "None" not in out and "grep_logs" in out
        window = {"since": (NOW - dt.timedelta(days=91)).date().isoformat(), "until": (NOW - dt.timedelta(days=89)).date().isoformat()}
        _, data = await ok(s, "timeline", window)
        assert data["shown"] == 2
        out, data = await ok(s, "recall_episodes", {"session": "fix-0310"})
        assert data["total"] == 0 and "include_archived: true" in data["note"] and "restore_episode" in data["note"]
        assert "=True" not in out and "restore()" not in out

    run_session(path, body)


def test_argument_errors_show_the_caller_s_values_sanitized(team: tuple[Path, dict[str, str]]) -> None:
    path, _ = team

    async def body(s: ClientSession) -> None:
        for args in ({"kinds": ["ana@example.com"]}, {"ana@example.com": 1}):
            out, _ = await error(s, "recall_episodes", args)
            assert "ana@example.com" not in out and "<EMAIL_1>" in out
        with pytest.raises(MCPError) as unknown:  # a protocol error, as the SDK raises it
            await s.call_tool("ana@example.com", {})
        assert "ana@example.com" not in str(unknown.value) and "<EMAIL_1>" in str(unknown.value)

    run_session(path, body)


def test_recall_include_told_adds_episodes_telling_of_the_window(tmp_path: Path) -> None:
    path = tmp_path / "told"
    with memdb.open(path, clock=Clock(NOW)) as db:
        db.owner("ana").record("debug", "Deploy failed yesterday", outcome="failure", ts=NOW - dt.timedelta(hours=1))
    day_before = (NOW - dt.timedelta(days=1)).date().isoformat()
    window = {"since": day_before, "until": NOW.date().isoformat()}

    async def body(s: ClientSession) -> None:
        _, plain = await ok(s, "recall_episodes", window)
        assert plain["total"] == 0
        _, told = await ok(s, "recall_episodes", {**window, "include_told": True})
        assert told["total"] == 1 and any(w.startswith(f"tells of {day_before}") for w in told["memories"][0]["match_why"])
        _, asked = await ok(s, "ask", {"question": "what failed yesterday?"})
        assert asked["total"] == 1

    run_session(path, body)


def test_capture_tools_say_what_was_cut_and_by_how_much(fresh: tuple[Path, dict[str, str]]) -> None:
    path, _ = fresh

    async def body(s: ClientSession) -> None:
        out, data = await ok(
            s, "record_exchange", {"session": "s7", "user_message": "Call me at +1 (415) 555-0132", "response": "x" * 5000}
        )
        assert "truncated" in data and set(data["truncated"]) == {"response"}
        cut = data["truncated"]["response"]
        assert cut["original"] == 5000 and 0 < cut["kept"] < 2000 and f"kept {cut['kept']:,} of 5,000 characters" in out
        assert "<PHONE_1>" in data["episode"]["content"] and data["episode"]["kind"] == "exchange"

        out, data = await ok(s, "record_tool_call", {"session": "s7", "tool": "search_logs", "input": {"query": "lock"}})
        call = data["episode"]
        assert call["kind"] == "tool_call" and call["tool"] == "search_logs" and "record_tool_result" in out and "truncated" not in data
        _, data = await ok(s, "record_tool_result", {"call_id": call["id"], "result": "3 hits"})
        assert data["episode"]["id"] == call["id"] and data["episode"]["result"] == "3 hits"
        _, data = await ok(s, "record_tool_call", {"session": "s7", "tool": "deploy", "input": {"env": "prod"}, "result": "ok"})
        assert data["episode"]["result"] == "ok"
        out, _ = await error(s, "record_tool_result", {"call_id": "20260701T090000000000Z-abcdef", "result": "x"})
        assert "nothing was written" in out

        out, data = await ok(s, "record_episode", {"kind": "debug", "summary": "Long one", "outcome": "success", "content": "y" * 9000})
        assert data["truncated"]["content"]["original"] == 9000 and "content kept" in out
        _, timeline = await ok(s, "timeline", {"session": "s7"})
        assert [e["kind"] for e in timeline["events"]] == ["exchange", "tool_call", "tool_call"]

    run_session(path, body)


def test_lists_bound_every_field(tmp_path: Path) -> None:
    """A probe's find: lists bounded content at 600 characters but carried every other text field
    and the decisions whole, 1.45 MB for fifty memories, and prepare with max_chars 200 returned
    580 KB of records beside its 193-character context. Each text field and the decisions are
    bounded as content is, 'truncated' says what was cut, and prepare lists what its context holds."""
    path = tmp_path / "big"
    long = "lorem ipsum dolor sit amet deploy " * 110  # 3,740 characters: stored at 2,000
    decisions = {f"k{i}": "option value words " * 8 for i in range(120)}  # about 19,000 characters as JSON
    with memdb.open(path, clock=Clock(NOW)) as db:
        ana = db.owner("ana")
        with db.transaction():
            for i in range(8):
                ana.record("debug", f"Deploy attempt {i} failed", outcome="failure", tags=["deploy"], lesson=long, what_we_tried=long,
                           what_happened=long, why=long, content=long * 5, decisions=decisions, session="s1",
                           ts=NOW - dt.timedelta(hours=8 - i))  # fmt: skip
        whole = ana.peek(next(ana.episodes()).id)

    def bounded(memory: dict[str, Any]) -> None:
        for name in ("lesson", "what_we_tried", "what_happened", "why", "content"):
            assert len(memory[name]) <= 600 and memory[name].endswith(f"…[truncated {len(getattr(whole, name))} chars]"), name
            assert memory["truncated"][name] == {
                "original": len(getattr(whole, name)),
                "kept": 600 - len(f" …[truncated {len(getattr(whole, name))} chars]"),
            }
        assert len(json.dumps(memory["decisions"], separators=(",", ":"))) <= 600 and memory["decisions"]
        assert memory["truncated"]["decisions"]["original"] > 18_000 and memory["truncated"]["decisions"]["kept"] <= 600

    async def body(s: ClientSession) -> None:
        for tool, args, key in (
            ("recall_episodes", {"tags": ["deploy"], "limit": 50}, "memories"), ("ask", {"question": "deploy failures"}, "memories"),
            ("history", {"tags": ["deploy"]}, "attempts"), ("timeline", {"session": "s1"}, "events"),
        ):  # fmt: skip
            _, data = await ok(s, tool, args)
            assert data[key], tool
            for memory in data[key]:
                bounded(memory)
        _, data = await ok(s, "history", {"tags": ["deploy"]})
        assert data["lessons"] and all(len(lesson) <= 600 for lesson in data["lessons"])
        _, data = await ok(s, "get_episode", {"episode_id": whole.id})
        assert (
            data["episode"]["lesson"] == whole.lesson
            and data["episode"]["decisions"] == whole.decisions
            and "truncated" not in data["episode"]
        )
        out, data = await ok(s, "prepare", {"task": "deploy", "max_chars": 200, "limit": 20})
        assert len(out) <= 200 and data["left_out"] > 0
        listed = [m["summary"] for m in [*data["records"], *data["lessons"]]]
        assert len(listed) <= 1 and all(summary in out for summary in listed)  # only what the context holds
        assert len(json.dumps(data)) < 5_000
        _, roomy = await ok(s, "prepare", {"task": "deploy", "max_chars": 20_000, "limit": 8})
        assert len(roomy["records"]) == 8 and all(m["summary"] in roomy["context"] for m in roomy["records"])
        for memory in roomy["records"]:
            bounded(memory)

    run_session(path, body)


def test_a_field_read_back_and_corrected_is_taken_as_record_episode_takes_it(fresh: tuple[Path, dict[str, str]]) -> None:
    """A probe's find: supersede_episode took at most 2,000 characters of a lesson (content too)
    where record_episode takes 4,000 and cuts with a marker, so an agent that read a cut lesson
    back (2,000 characters, its marker included) and fixed a typo was refused."""
    path, _ = fresh

    async def body(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        record, supersede = (tools[n].input_schema["properties"] for n in ("record_episode", "supersede_episode"))
        for name in ("lesson", "what_we_tried", "what_happened", "why", "content", "summary", "artifact"):
            assert supersede[name]["maxLength"] == record[name]["maxLength"], name
        lesson = "Always drain the worker queue before restarting; " * 60  # 3,000 characters
        _, data = await ok(
            s, "record_episode", {"kind": "debug", "summary": "Worker restart lost jobs", "outcome": "failure", "lesson": lesson}
        )
        _, data = await ok(s, "get_episode", {"episode_id": data["episode"]["id"]})
        stored = data["episode"]["lesson"]
        assert len(stored) == 2000
        out, data = await ok(
            s,
            "supersede_episode",
            {"episode_id": data["episode"]["id"], "reason": "typo", "lesson": stored.replace("Always", "Always,", 1)},
        )
        assert data["episode"]["lesson"].startswith("Always, drain") and len(data["episode"]["lesson"]) <= 2000
        assert data["truncated"] == {"lesson": {"original": 2001, "kept": data["truncated"]["lesson"]["kept"]}} and "lesson kept" in out
        _, data = await ok(s, "supersede_episode", {"episode_id": data["episode"]["id"], "reason": "shorter", "lesson": "Drain first."})
        assert "truncated" not in data  # a cut of an earlier version is not this correction's

    run_session(path, body)


def test_knowledge_and_prepare(fresh: tuple[Path, dict[str, str]]) -> None:
    path, ids = fresh

    async def propose(s: ClientSession) -> None:
        _, data = await ok(s, "knowledge", {})
        assert data["entries"] == []
        await ok(s, "save_lesson", {"text": "Run migrations before every deploy window", "cites": [ids["deploy_fail"]], "tags": ["deploy"]})
        out, data = await ok(s, "knowledge", {})
        assert data["entries"] == [] and "review queue" in out  # pending is not knowledge yet

    run_session(path, propose)
    with memdb.open(path) as db:
        (entry,) = db.review_queue()
        db.approve(entry.id, by="tester")

    async def read(s: ClientSession) -> None:
        out, data = await ok(s, "knowledge", {"text": "deploy migrations"})
        assert [e["id"] for e in data["entries"]] == [entry.id] and data["entries"][0]["owner"] == "ana"
        assert "Run migrations before every deploy window" in out
        out, data = await ok(s, "prepare", {"task": "deploy Project X", "tags": ["deploy"], "max_chars": 1500})
        assert data["knowledge"] == [entry.id] and len(data["context"]) <= 1500 and out == data["context"]
        assert ids["deploy_fail"] in {r["id"] for r in data["records"]} and "Run migrations" in out
        assert all(ids["bob"] != r["id"] for r in data["records"])  # owner-clamped

    run_session(path, read)

    async def bob(s: ClientSession) -> None:
        _, data = await ok(s, "knowledge", {})
        assert data["entries"] == []  # ana's approved lesson is private until a ceremony shares it

    run_session(path, bob, owner="bob")
    with memdb.open(path) as db:
        db.decide({entry.id: "share"}, by="ana")

    async def shared(s: ClientSession) -> None:
        _, data = await ok(s, "knowledge", {})
        # shared, it names none of ana's episodes: their ids are their times
        assert [(e["id"], e["owner"], e["cites"]) for e in data["entries"]] == [(entry.id, "ana", [])]

    run_session(path, shared, owner="bob")


# --- docs/mcp.md --------------------------------------------------------------------------------

_ID = re.compile(r"\d{8}T\d{12}Z-[0-9a-f]{6}")


def _docs_session() -> tuple[str, list[tuple[str, dict[str, Any] | None, str]]]:
    """docs/mcp.md's demo session: its first line, then each call with the text it shows."""
    doc = (REPO / "docs" / "mcp.md").read_text()
    block = doc.split("## A session against the demo database", 1)[1].split("```text\n", 1)[1].split("\n```", 1)[0]
    first, *lines = block.splitlines()
    calls: list[tuple[str, dict[str, Any] | None, str]] = []
    shown: list[str] = []
    for line in [*lines, "> end"]:
        if line.startswith("> "):
            if calls:
                calls[-1] = (*calls[-1][:2], "\n".join(shown))
            tool, _, args = line[2:].partition(" ")
            calls.append((tool, json.loads(args) if args else None, ""))
            shown = []
        elif line.startswith("  "):
            shown.append(line[2:])
    calls.pop()  # the "> end" sentinel
    return first, calls


def test_the_docs_session_is_what_the_demo_database_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, calls = _docs_session()
    assert first == f"# connected: memdb {memdb.__version__}" and len(calls) == 8
    path = tmp_path / "demo-db"
    assert cli_main(["demo", str(path)]) == 0
    capsys.readouterr()

    async def body(s: ClientSession) -> None:
        ids: dict[str, str] = {}  # an id in the docs -> the same episode's id in this run
        for tool, args, shown in calls:
            if tool == "tools/list":
                assert ", ".join(t.name for t in (await s.list_tools()).tools) == shown
                continue
            assert args is not None
            result = await s.call_tool(tool, json.loads(_ID.sub(lambda m: ids[m.group(0)], json.dumps(args))))
            got = ("[error] " if result.is_error else "") + text(result)
            ids.update(zip(_ID.findall(shown), _ID.findall(got), strict=True))
            assert _ID.sub(lambda m: ids[m.group(0)], shown) == got, f"{tool} {args}"

    run_session(path, body, owner="coder")
