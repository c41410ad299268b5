"""Archived episodes are reachable from every surface: include_archived and restore on the
``memdb`` command and the MCP tools, and every empty answer says what cold storage holds."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.cli import main as cli_main
from memdb.surfaces.mcp_server import tool_specs

NOW = dt.datetime(2026, 5, 4, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def archived_db(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "db"
    clock = Clock(NOW - dt.timedelta(days=60))
    with memdb.open(path, clock=clock) as db:
        ep = db.owner("ana").record(
            "debug", "Alpha deploy failed on the lock", outcome="failure", tags=["alpha"], lesson="take the lock first"
        )
        clock.now = NOW
        assert db.maintain().archived == 1
    return path, ep.id


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert cli_main([*argv, "--json"]) == 0
    out: dict = json.loads(capsys.readouterr().out)  # type: ignore[type-arg]
    return out


def test_the_command_shows_archived_matches_and_restores_them(archived_db: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, eid = archived_db
    common = ("--db", str(path), "--owner", "ana")
    hot = _cli_json(capsys, "recall", *common, "--tags", "alpha")
    assert not hot["found"] and "1 archived match, latest" in hot["note"] and "--include-archived to see it" in hot["note"]  # the flag
    cold = _cli_json(capsys, "ask", "failures on alpha", *common, "--include-archived")
    assert cold["found"] and cold["memories"][0]["episode"]["status"] == "archived"
    assert cold["memories"][0]["episode"]["id"] == eid
    restored = _cli_json(capsys, "restore", eid, *common)
    assert restored["restored"]["status"] == "active" and restored["restored"]["lesson"] == "take the lock first"
    assert _cli_json(capsys, "recall", *common, "--tags", "alpha")["total"] == 1


def test_the_mcp_tools_show_archived_matches_and_restore_them(archived_db: tuple[Path, str]) -> None:
    path, eid = archived_db
    with memdb.open(path, clock=lambda: NOW) as db:
        mem = db.owner("ana")
        specs = {s.name: s for s in tool_specs(db.settings)}

        def call(name: str, **args: object) -> dict:  # type: ignore[type-arg]
            spec = specs[name]
            out: dict = spec.run(mem, spec.check_arguments(args)).data  # type: ignore[type-arg]
            return out

        assert "1 archived match" in call("recall_episodes", tags=["alpha"])["note"]
        found = call("ask", question="what failed on alpha?", include_archived=True)
        assert found["found"] and found["memories"][0]["status"] == "archived"
        history = call("history", tags=["alpha"])
        assert history["total"] == 1 and history["archived"] == 1 and history["lessons"] == ["take the lock first"]
        # the one-liner's day, kind and lesson are said once ("2026-03-05 debug/failure (archived):
        # 2026-03-05 debug/failure: ... (lesson: X). Lesson: X" before)
        line = specs["history"].run(mem, specs["history"].check_arguments({"tags": ["alpha"]})).text.splitlines()[-1]
        said = "- 2026-03-05 debug/failure (archived) [alpha]: Alpha deploy failed on the lock (lesson: take the lock first) (id "
        assert line.startswith(said)
        back = call("restore_episode", episode_id=eid)
        assert back["episode"]["status"] == "active"
        assert call("recall_episodes", tags=["alpha"])["total"] == 1
        with pytest.raises(memdb.errors.MemdbError):
            specs["ask"].check_arguments({"question": "x", "include_archived": "yes"})
        assert db.check().ok


def test_the_mcp_tools_reach_earlier_versions(tmp_path: Path) -> None:
    """An answer's note pointed to earlier versions ("include_superseded=True to see it", in the MCP tools' terms now) that no
    MCP tool could ask for."""
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("ana")
        mem.record("fact", "Editor: Vim", key="editor")
        mem.record("fact", "Editor: Neovim", key="editor")
        specs = {s.name: s for s in tool_specs(db.settings)}

        def call(name: str, **args: object) -> dict:  # type: ignore[type-arg]
            spec = specs[name]
            out: dict = spec.run(mem, spec.check_arguments(args)).data  # type: ignore[type-arg]
            return out

        assert "include_superseded: true to see it" in call("ask", question="vim")["note"]
        for name, args in (("ask", {"question": "vim"}), ("recall_episodes", {"text": "vim"})):
            old = call(name, include_superseded=True, **args)
            assert [m["summary"] for m in old["memories"]] == ["Editor: Vim"] and old["memories"][0]["status"] == "superseded"
