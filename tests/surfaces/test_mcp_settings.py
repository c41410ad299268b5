"""A long-running server sees the settings another process changed, on both backends.

``memdb mcp --transport http`` loaded the settings once: after ``db.configure(teams=...)`` in
another process (what ``memdb config`` or an admin script does) moved bob out of a team, bob's
token still read the team's shared lesson until the server restarted, and a new timezone or
typed kind never reached the answers or the tool schemas. Here this process serves (the server
``build_server`` makes, driven by the SDK's in-memory client; ``memdb serve``'s dispatcher for
the dashboard) and a child process changes the settings, as one LMDB environment per path per
process requires.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from clocks import Clock
from mcp import Client
from postgres_server import drop, throwaway, unique_name

import memdb
from memdb.surfaces.mcp_server import build_server

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["lmdb", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Where the database is: ``memdb.open``'s arguments, the same in this process and the child."""
    if request.param == "lmdb":
        yield {"path": str(tmp_path / "db")}
        return
    url, name = request.getfixturevalue("pg_url"), unique_name()
    yield {"path": url, "name": name}
    if not throwaway():
        drop(url, name)


def _configure_elsewhere(target: dict[str, Any], **changes: Any) -> None:
    """``db.configure(**changes)`` in another process, as ``memdb config`` or an admin script runs it."""
    code = textwrap.dedent(
        """
        import json, sys
        import memdb
        target, changes = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        with memdb.open(target.pop("path"), **target) as db:
            db.configure(**changes)
        """
    )
    import json

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code, json.dumps(target), json.dumps(changes)], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr


def _share_a_lesson(db: memdb.Database) -> str:
    db.configure(teams={"alpha": ["alice", "bob"], "beta": ["carol"]})
    alice = db.owner("alice")
    ep = alice.record("debug", "Deploy of billing failed: migrations locked the users table", outcome="failure", tags=["billing"],
                      ts=NOW - dt.timedelta(hours=2))  # fmt: skip
    entry = alice.save_lesson("Run billing migrations before the deploy window opens, never during it", cites=[ep.id], tags=["billing"])
    db.approve(entry.id, by="reviewer")
    db.ceremony("alpha")
    db.decide({entry.id: "share"}, by="alice", team="alpha")
    db.owner("bob").record("debug", "Bob's deploy went out", outcome="success", ts=dt.datetime(2026, 6, 30, 23, 30, tzinfo=dt.UTC))
    return entry.id


def test_a_serving_process_sees_settings_another_process_changed(target: dict[str, Any]) -> None:
    with memdb.open(target["path"], **{k: v for k, v in target.items() if k != "path"}, clock=Clock(NOW)) as db:
        entry = _share_a_lesson(db)
        server = build_server(db, owner="bob")

        async def serve(steps: list[tuple[str, dict[str, Any]]]) -> list[Any]:
            async with Client(server) as client:
                out = [await client.call_tool(name, args) for name, args in steps]
                listed = {t.name: t for t in (await client.list_tools()).tools}
                return [*out, listed]

        def run(*steps: tuple[str, dict[str, Any]]) -> list[Any]:
            return anyio.run(serve, list(steps))

        knowledge = ("knowledge", {"text": "billing migrations"})
        timeline = ("timeline", {"since": "2026-06-30", "until": "2026-07-02"})
        seen, events, listed = run(knowledge, timeline)
        assert [e["id"] for e in seen.structured_content["entries"]] == [entry]  # bob is in alpha
        assert "2026-06-30 23:30" in events.content[0].text and "Asia/Tokyo" not in events.content[0].text
        assert "ops" not in listed["record_episode"].input_schema["properties"]["kind"]["enum"]

        # another process moves bob out of alpha, sets a timezone and adds a typed kind; this server runs on
        kinds = [k for k in db.settings.typed_kinds if k != "review"] + ["ops"]  # at most six; no review episodes here
        _configure_elsewhere(target, teams={"alpha": ["alice"], "beta": ["carol", "bob"]}, timezone="Asia/Tokyo", typed_kinds=kinds)

        seen, events, recorded, listed = run(knowledge, timeline, ("record_episode", {"kind": "ops", "summary": "x", "outcome": "success"}))
        assert seen.structured_content["entries"] == []  # no longer a member: alpha's lesson is not bob's to read
        assert "2026-07-01 08:30" in events.content[0].text and "Asia/Tokyo" in events.content[0].text  # the zone is in force
        assert not recorded.is_error and recorded.structured_content["episode"]["kind"] == "ops"  # and the kinds
        assert "ops" in listed["record_episode"].input_schema["properties"]["kind"]["enum"]


def test_memdb_serve_reads_the_settings_before_each_dashboard_request(tmp_path: Path) -> None:
    """The dashboard shares the server's Database: ``memdb serve``'s dispatcher reads the settings as
    saved before each of its requests, as the MCP server does per call."""
    from memdb.surfaces.serve import _Dispatch

    target = {"path": str(tmp_path / "db")}
    with memdb.open(target["path"], clock=Clock(NOW)) as db:
        db.configure(teams={"alpha": ["alice", "bob"]})
        seen: list[Any] = []

        async def web(scope: Any, receive: Any, send: Any) -> None:
            seen.append(db.settings.teams)

        async def mcp(scope: Any, receive: Any, send: Any) -> None:
            raise AssertionError("not an MCP request")

        app = _Dispatch(mcp, web, db.refresh_settings)
        _configure_elsewhere(target, teams={"alpha": ["alice"]})
        assert db.settings.teams == {"alpha": ["alice", "bob"]}  # as loaded, until a request reads them again

        async def request() -> None:
            await app({"type": "http", "path": "/knowledge"}, None, None)

        anyio.run(request)
        assert seen == [{"alpha": ["alice"]}]
