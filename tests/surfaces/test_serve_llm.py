"""``memdb serve``'s ``[llm]`` table: Claude for the scheduled jobs and sessions from the config
file (nothing outside Python could turn the adapters on), the API key from the environment only,
every option checked as the adapters check it; driven through the real SDK over a mocked transport."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx  # the HTTP client the anthropic SDK is built on
import pytest
from clocks import Clock

import memdb
from memdb.errors import ConfigError
from memdb.llm.adapters import AnthropicDistiller, AnthropicExtractor, AnthropicReflector, AnthropicSummarizer
from memdb.surfaces import serve
from memdb.surfaces.serve import LLMConfig, load_config

T0 = dt.datetime(2026, 6, 3, 6, 0, tzinfo=dt.UTC)
TOKEN = "ana-serve-token-5c1f0e9a7d"


def config(tmp_path: Path, llm: str) -> Path:
    path = tmp_path / "memdb.toml"
    path.write_text(f'[tokens]\n"{TOKEN}" = "ana"\n{llm}')
    path.chmod(0o600)
    return path


def test_the_llm_table_puts_claude_behind_the_jobs_it_names(tmp_path: Path) -> None:
    path = config(tmp_path, '[llm]\nuse = ["summarizer", "reflector"]\nmodel = "claude-sonnet-4-5"\nmax_wait = 5\nstop_after = 2\n')
    llm = load_config(path).llm
    assert llm == LLMConfig(("summarizer", "reflector"), (("model", "claude-sonnet-4-5"), ("max_wait", 5), ("stop_after", 2)))
    assert load_config(config(tmp_path, "")).llm is None  # no table: the offline defaults
    seen: list[httpx.Request] = []
    answer = {
        "id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Seven deploy steps in session s1; all went out."}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 10},
    }  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=answer)

    client = anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    models = llm.adapters(client=client)  # type: ignore[union-attr]
    assert set(models) == {"summarizer", "reflector"} and isinstance(models["summarizer"], AnthropicSummarizer)
    assert models["reflector"].calls.max_wait == 5 and models["reflector"].calls.stop_after == 2
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock, **models) as db:
        mem = db.owner("ana")
        for i in range(7):
            mem.record_exchange("s1", f"deploy step {i}", "ok")
        assert db.maintain(now=T0 + dt.timedelta(hours=25)).summaries == 1
    assert json.loads(seen[0].content)["model"] == "claude-sonnet-4-5"
    every = load_config(config(tmp_path, "[llm]\n")).llm
    assert every is not None and [type(a) for a in every.adapters(client=client).values()] == [
        AnthropicSummarizer, AnthropicReflector, AnthropicExtractor, AnthropicDistiller,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('api_key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"\n', "[llm] api_key: not read from a file; set ANTHROPIC_API_KEY"),
        ("temperature = 0.2\n", "[llm] unknown key 'temperature' (expected use, model, timeout"),
        ('use = ["summariser"]\n', "[llm] use = ['summariser']: a list of one or more of summarizer, reflector, extractor, distiller"),
        ("use = []\n", "[llm] use = []: a list of one or more of"),
        ("timeout = -1\n", "[llm] AnthropicSummarizer: timeout=-1: a number of seconds from 0.1 to 600"),
        ('max_retries = "3"\n', "[llm] AnthropicSummarizer: max_retries='3': an int from 0 to 10"),
        ('model = ""\n', "[llm] AnthropicSummarizer: model='': a model name"),
        (f'model = "{TOKEN}"\n', "[llm] model: a value not shown (it is a bearer token)"),
    ],
)
def test_llm_config_errors_name_the_table_and_key_and_never_a_key(tmp_path: Path, table: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config(tmp_path, "[llm]\n" + table))
    assert message in str(info.value) and "abcdefghijklmnop" not in str(info.value) and TOKEN not in str(info.value)


def test_serve_with_claude_needs_the_key_in_its_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before the port is taken or the database opened."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY in memdb serve's environment"):
        serve.run(tmp_path / "db", config=config(tmp_path, '[llm]\nuse = ["reflector"]\n'), port=1)
    assert not (tmp_path / "db").exists()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    made: dict[str, Any] = LLMConfig(("reflector",)).adapters()
    assert isinstance(made["reflector"], AnthropicReflector)
