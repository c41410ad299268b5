"""docs/langgraph.md runs as written: its Python blocks, in order, in an empty directory, offline."""

from __future__ import annotations

import contextlib
import io
import re
import socket
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "langgraph.md"


def test_the_langgraph_page_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the docs example opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    out = io.StringIO()
    namespace: dict[str, Any] = {"__name__": "docs_langgraph"}
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)
    lines = out.getvalue().splitlines()

    assert lines[0] == "{'content': 'Prefers dark mode; mail <EMAIL_1>'}"
    assert lines[1:4] == ["['theme']", "[('ana', 'memories')]", "content: Prefers dark mode; mail <EMAIL_1>"]
    assert '"Deploys on Tuesdays only"' in lines[4] and '"namespace":["ana","memories"]' in lines[4]
    assert lines[5].startswith("The billing deploy failed: ") and "migration held a lock" in lines[5]
    assert lines[6].startswith("1 check_deploy ") and "billing" in lines[6] and "migration held a lock" in lines[6]
    assert lines[7] == "closed failure 1"
    assert "1 past attempt (1 failure)" in "\n".join(lines[8:])
    assert (tmp_path / "agent-mem").is_dir()
