"""MCP tools driven in-process by the SDK's own client: idempotent facts, the caps the schemas
state, and errors that speak in tool terms (findings of the streamable-HTTP probe).

The server is ``build_server`` over a real LMDB database in ``tmp_path``, connected through the
SDK's in-memory transport, so each test takes well under a second.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import anyio
import pytest
from clocks import Clock
from mcp import Client

import memdb
from memdb.memory.models import PARTICIPANT_CHARS
from memdb.memory.text import MAX_TAG_CHARS
from memdb.surfaces.mcp_server import build_server

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
PARTICIPANT = "Dr. Maria Fernanda de la Cruz Rodriguez, Platform Reliability Engineering lead"  # 76 characters


def calls(db: memdb.Database, owner: str, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each (tool, arguments) called in order on an in-process server for ``owner``; the results."""

    async def go() -> list[Any]:
        with anyio.fail_after(30):
            async with Client(build_server(db, owner=owner)) as client:
                return [await client.call_tool(name, args) for name, args in steps]

    return anyio.run(go)


def tools(db: memdb.Database) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with Client(build_server(db, owner="ana")) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return anyio.run(go)


def text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.fixture
def db(tmp_path: Path) -> Any:
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as database:
        yield database


# --- record_fact is idempotent (finding 2) -----------------------------------------------------


def test_a_fact_with_its_tags_reordered_writes_nothing(db: memdb.Database) -> None:
    """record_fact is annotated idempotent, yet the same value with the same tags in another order
    wrote a new version, and ask then said the fact "corrects an earlier version"."""
    mem = db.owner("ana")
    first = mem.record("fact", "mono", key="ana/ui.font", tags=["ui", "pref"])
    again = mem.record("fact", "mono", key="ana/ui.font", tags=["Pref", "ui"])  # another order, and as typed
    assert again.id == first.id and again.tags == ("ui", "pref")
    assert [v.id for v in mem.versions(first.id)] == [first.id]

    a, b, asked = calls(
        db, "ana",
        ("record_fact", {"key": "ana/ui.theme", "value": "dark", "tags": ["ui", "pref"]}),
        ("record_fact", {"key": "ana/ui.theme", "value": "dark", "tags": ["pref", "ui", "UI"]}),
        ("ask", {"question": "what theme does ana prefer?"}),
    )  # fmt: skip
    assert not a.is_error and not b.is_error, text(b)
    assert b.structured_content["episode"]["id"] == a.structured_content["episode"]["id"]
    assert "nothing changed" in text(b) and "replaces" not in text(b)
    assert "corrects an earlier version" not in asked.structured_content["note"]
    assert len(mem.versions(a.structured_content["episode"]["id"])) == 1

    (changed,) = calls(db, "ana", ("record_fact", {"key": "ana/ui.theme", "value": "dark", "tags": ["ui"]}))  # a tag fewer: new
    assert changed.structured_content["episode"]["supersedes"] == a.structured_content["episode"]["id"]
    assert "replaces the value" in text(changed)


# --- schemas state the caps the server enforces (finding 3) ------------------------------------


def test_schemas_state_the_item_and_nesting_caps_the_server_enforces(db: memdb.Database) -> None:
    listed = tools(db)
    record = listed["record_episode"].input_schema["properties"]
    assert record["tags"]["items"]["maxLength"] == MAX_TAG_CHARS
    assert f"at most {MAX_TAG_CHARS} characters" in record["tags"]["description"]
    assert "32 levels of nesting" in record["decisions"]["description"]
    assert "32 levels of nesting" in listed["supersede_episode"].input_schema["properties"]["decisions"]["description"]
    for tool in listed.values():  # every tag list, wherever it is taken
        for name, prop in tool.input_schema["properties"].items():
            if name in ("tags", "any_tags"):
                assert prop["items"]["maxLength"] == MAX_TAG_CHARS, f"{tool.name}.{name}"
            if name == "participants":  # names and ids as given, capped as the description says
                assert prop["items"]["maxLength"] == PARTICIPANT_CHARS, f"{tool.name}.{name}"
                assert f"Each at most {PARTICIPANT_CHARS} characters" in prop["description"]

    # levels below the object itself, as capture counts them (test_mcp_depth.py)
    deep: dict[str, Any] = {"a": 1}
    for _ in range(33):  # 33 levels below
        deep = {"a": deep}
    lists: list[Any] = [1]
    for _ in range(32):  # an object holding 33 levels of arrays
        lists = [lists]
    ok_deep: dict[str, Any] = {"a": 1}
    for _ in range(32):  # 32 levels below: taken
        ok_deep = {"a": ok_deep}
    episode = {"kind": "debug", "summary": "review", "outcome": "success"}
    part, tag, nested, listed_deep, fine, empty_tag, long_part, odd_part = calls(
        db, "ana",
        ("record_episode", {**episode, "participants": [PARTICIPANT + "x" * (PARTICIPANT_CHARS - len(PARTICIPANT) + 1)]}),
        ("recall_episodes", {"any_tags": ["deploy", "x" * 65]}),
        ("record_episode", {**episode, "decisions": deep}),
        ("record_episode", {**episode, "decisions": {"a": lists}}),
        ("record_episode", {**episode, "decisions": ok_deep, "participants": ["Ana", "Bo"]}),
        ("record_episode", {**episode, "tags": ["!!!"]}),
        ("record_episode", {**episode, "participants": [PARTICIPANT]}),
        ("record_episode", {**episode, "participants": ["--", "Ana"]}),
    )  # fmt: skip
    assert part.is_error and part.structured_content["error"]["argument"] == "participants"
    assert text(part).startswith("record_episode: invalid argument: participants item 'Dr. Maria")
    assert f"{PARTICIPANT_CHARS + 1} characters, more than {PARTICIPANT_CHARS}" in text(part) and "tag" not in text(part).split(":")[2]
    # a participant is stored as given, as the Python API takes it: a long name, one that makes no tag
    assert not long_part.is_error and long_part.structured_content["episode"]["participants"] == [PARTICIPANT]
    assert not odd_part.is_error and odd_part.structured_content["episode"]["participants"] == ["--", "Ana"]
    assert tag.is_error and tag.structured_content["error"]["argument"] == "any_tags"
    for result in (nested, listed_deep):  # 33 levels of objects below, or of arrays below an object
        assert result.is_error and result.structured_content["error"]["argument"] == "decisions", text(result)
        assert "nested more than 32 levels deep" in text(result) and "nothing was written" in text(result)
    assert not fine.is_error, text(fine)
    assert empty_tag.is_error and empty_tag.structured_content["error"]["argument"] == "tags"
    assert "nothing is left after normalising" in text(empty_tag)
    assert db.owner("ana").count() == 3  # only the three that fit


# --- errors in tool terms (finding 5) ----------------------------------------------------------


def test_errors_about_archived_episodes_name_the_tools(tmp_path: Path) -> None:
    """get_episode, record_feedback and supersede_episode on an archived episode told the agent to
    call restore('id') with include_archived=True: Python, which no MCP client can call."""
    clock = Clock(dt.datetime(2026, 1, 5, tzinfo=dt.UTC))
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ep = db.owner("ana").record("debug", "old deploy went fine", outcome="success")
        clock.advance(days=120)
        assert db.maintain().archived == 1
        got, rated, corrected = calls(
            db, "ana",
            ("get_episode", {"episode_id": ep.id}),
            ("record_feedback", {"episode_id": ep.id, "value": 1}),
            ("supersede_episode", {"episode_id": ep.id, "reason": "typo", "summary": "old deploy went well"}),
        )  # fmt: skip
    for result in (got, rated, corrected):
        assert result.is_error
        said = text(result) + " " + result.structured_content["error"]["message"]
        for python in ("restore(", "=True", "supersede(", "recall with"):
            assert python not in said, said
    assert f"restore_episode with episode_id '{ep.id}' brings it back" in text(got)
    assert "ask or recall_episodes with include_archived: true" in text(got)
    assert f"restore_episode with episode_id '{ep.id}'" in rated.structured_content["error"]["message"]
    assert f"episode '{ep.id}': archived; restore it first with restore_episode, then supersede it" in text(corrected)
