"""The MCP server refuses decisions by nesting exactly as capture does: one count, capture's.

A probe's find: the server counted levels its own way and refused a 33-container object that
Python ``record`` (and the CLI, and import) stores, so decisions read back whole by
``get_episode`` could not be sent back by ``supersede_episode``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import anyio
import pytest
from clocks import Clock
from mcp import Client

import memdb
from memdb.errors import ValidationError
from memdb.memory.models import MAX_DEPTH
from memdb.surfaces.mcp_server import build_server

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
EPISODE = {"kind": "debug", "summary": "deep decisions", "outcome": "success"}


def nested(levels: int, leaf: Any) -> dict[str, Any]:
    """``leaf`` inside ``levels`` objects below the decisions object itself."""
    value: Any = {"k": leaf}
    for _ in range(levels):
        value = {"k": value}
    return value  # type: ignore[no-any-return]


def deepest(value: Any) -> Any:
    while isinstance(value, dict) and "k" in value:
        value = value["k"]
    return value


@pytest.mark.parametrize("leaf", ["x", 1, None, {}, []])
@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_what_record_stores_the_mcp_tools_take(tmp_path: Path, leaf: Any, levels: int) -> None:
    decisions = nested(levels, leaf)
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("ana")
        try:
            stored = mem.record(decisions=decisions, **EPISODE)
        except ValidationError:
            stored = None

        async def go() -> list[Any]:
            with anyio.fail_after(30):
                return await calls()

        async def calls() -> list[Any]:
            async with Client(build_server(db, owner="ana")) as client:
                results = [await client.call_tool("record_episode", {**EPISODE, "decisions": decisions})]
                if stored is not None:  # read back whole, sent back whole
                    got = await client.call_tool("get_episode", {"episode_id": stored.id})
                    back = got.structured_content["episode"]["decisions"]
                    assert deepest(back) == leaf
                    args = {"episode_id": stored.id, "reason": "reworded", "decisions": back, "summary": "deeper decisions"}
                    results.append(await client.call_tool("supersede_episode", args))
                return results

        results = anyio.run(go)
        for result in results:
            assert result.is_error == (stored is None), result.content[0].text
        if stored is None:
            assert "nested more than 32 levels deep" in results[0].content[0].text
    assert (stored is not None) == (levels <= MAX_DEPTH - 1 or (levels == MAX_DEPTH and leaf not in ({}, [])))
