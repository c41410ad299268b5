"""MCP dispatch: each tool call runs in a worker thread, so one owner's slow call stalls nobody else.

The server runs in this process (the app ``serve_http`` builds, on a loopback port, in a thread
of its own) so a test
can slow down one owner's ``ask``; the clients are the SDK's own, over streamable HTTP.
"""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from clocks import Clock
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import trace
from test_tracing import Recorder

import memdb
from memdb.surfaces.mcp_server import HOST, BearerAuth, build_server

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
TOKENS = {"ana-token-7f3a9c1e5b2d4680": "ana", "bob-token-0d9e8c7b6a5f4321": "bob"}
SLOW = 2.0  # seconds ana's ask sleeps (at 1.0 a loaded machine took bob's whole session past SLOW / 2: 0.61 s)


def test_a_slow_call_for_one_http_owner_does_not_stall_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ask = memdb.Memory.ask
    sleeping = threading.Event()

    def slow_for_ana(self: memdb.Memory, *args: Any, **kwargs: Any) -> memdb.RecallResult:
        if self.name == "ana":
            sleeping.set()
            time.sleep(SLOW)  # a slow query: blocks its thread, as a long scan would
        return ask(self, *args, **kwargs)

    monkeypatch.setattr(memdb.Memory, "ask", slow_for_ana)
    recorder = Recorder()  # tracing configured: each tool call is a gen_ai execute_tool span
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: recorder)
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port = int(probe.getsockname()[1])
    url = f"http://{HOST}:{port}/mcp"

    async def call(token: str, question: str) -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("ask", {"question": question})
            assert not result.is_error and result.structured_content is not None

    async def go() -> dict[str, float]:
        took: dict[str, float] = {}

        async def one(token: str, question: str, after_ana_sleeps: bool) -> None:
            while after_ana_sleeps and not sleeping.is_set():
                await anyio.sleep(0.01)
            t0 = time.monotonic()
            await call(token, question)  # a whole client session: connect, initialize, ask
            took[TOKENS[token]], took[TOKENS[token] + "_done"] = time.monotonic() - t0, time.monotonic()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as clients:
                clients.start_soon(one, "ana-token-7f3a9c1e5b2d4680", "what failed with the deploy?", False)
                clients.start_soon(one, "bob-token-0d9e8c7b6a5f4321", "what happened with the billing job?", True)
        took["overlap"] = took["ana_done"] - took["bob_done"]
        return took

    path = tmp_path / "db"
    with memdb.open(path, clock=Clock(NOW)) as db:
        db.owner("ana").record("debug", "Deploy failed: the migration locked the users table", outcome="failure")
        db.owner("bob").record("routine", "Billing job ran clean", outcome="success")
        # the server on its own event loop in its own thread, so the clients' timings are honest
        app = BearerAuth(build_server(db, tokens=TOKENS).streamable_http_app(stateless_http=True, json_response=True, host=HOST), TOKENS)
        server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=anyio.run, args=(server.serve,))
        thread.start()
        try:
            deadline = time.monotonic() + 30
            while not server.started:
                assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.02)
            took = anyio.run(go)
        finally:
            server.should_exit = True
            thread.join(30)
    assert took["ana"] >= SLOW
    # bob started once ana's call was asleep, and was answered well before it ended (with calls
    # on the event loop, bob's whole session waited for ana's sleep: bob took 1.09 s of SLOW = 1.0)
    assert took["bob"] < SLOW / 2, took
    assert took["overlap"] > SLOW / 4, took
    tools = [s for s in recorder.spans if s.name.startswith("execute_tool")]
    assert [s.name for s in tools] == ["execute_tool ask"] * 2
    assert all(s.attributes == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask"} and s.ended for s in tools)
    asks = [s for s in recorder.spans if s.name == "memdb.ask"]
    assert sorted(s.attributes["memdb.owner"] for s in asks) == ["ana", "bob"]  # made in the worker threads
