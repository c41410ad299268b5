"""OpenTelemetry spans as an application configured with the SDK sees them: the SDK's
``TracerProvider`` set as the global provider, ``SimpleSpanProcessor`` into an
``InMemorySpanExporter``. Record, recall, ask, maintain, reflect and an MCP tool call each give
their span, with the names and attributes memdb/surfaces/tracing.py documents (``execute_tool
{name}`` and the ``gen_ai`` attributes for the tool call), parented as the calls nest, and no
span anywhere carries an episode's text or a planted secret. With no SDK configured, the same
calls give the same answers and no span. The MCP SDK makes spans of its own on the same
provider (``tools/call ask`` and others); memdb's tool span nests inside its request span, and
the check for text covers those too.

(tests/surfaces/test_tracing.py checks the same contract on a recording provider written on the
API alone, which tests/surfaces/test_mcp_dispatch.py reuses.)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from clocks import Clock
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

import memdb
from memdb.errors import ValidationError
from memdb.surfaces.mcp_server import build_server

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
SECRET = "ana.secret@example.com 4111 1111 1111 1111 sk-ant-api03-zanzibarquux0123456789"
TEXT = "deploy of the billing service failed on the migration lock"


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The SDK set up as an application does (``trace.set_tracer_provider``), for this test only:
    the API lets a process set its provider once, so the once-guard is fresh here and restored
    after (as OpenTelemetry's own test utilities reset it)."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    trace.set_tracer_provider(provider)
    assert trace.get_tracer_provider() is provider
    yield found
    provider.shutdown()


def _workload(path: Path) -> dict[str, Any]:
    """Every traced operation once, with the secret and the text planted where a caller can put
    them; returns what the calls answered, to compare with tracing off."""
    clock = Clock(NOW)
    with memdb.open(path, clock=clock) as db:
        ana = db.owner("ana")
        ep = ana.record("debug", f"{TEXT} {SECRET}", outcome="failure", lesson=f"release the lock {SECRET}", tags=["billing"])
        call = ana.record_tool_call("s1", "deploy", {"service": "billing", "token": SECRET})
        ana.record_tool_result(call.id, {"status": "failed", "note": SECRET})
        with pytest.raises(ValidationError):
            ana.record(f"kind {SECRET}", TEXT, outcome="failure")  # a kind that is not one: never an attribute
        recall = ana.recall(text=f"billing {SECRET}", limit=3)
        ask = ana.ask(f"what failed with billing? {SECRET}")
        clock.advance(days=1)
        maintain = db.maintain()
        reflect = db.reflect()

        async def mcp_ask() -> Any:
            async with Client(build_server(db, owner="ana")) as client:
                return await client.call_tool("ask", {"question": f"billing lock {SECRET}"})

        tool = anyio.run(mcp_ask)
        return {
            "episode": ep.summary, "recall": recall.total, "ask": [h.episode.summary for h in ask],
            "maintain": (maintain.summaries, maintain.archived), "reflect": reflect.stored,
            "tool": (tool.is_error, (tool.structured_content or {}).get("found")),
        }  # fmt: skip


def _shown(span: ReadableSpan) -> str:
    """Everything a span would export: name, attributes, status, events, scope."""
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    return f"{span.name} {dict(span.attributes or {})!r} {span.status.description} {events!r} {span.instrumentation_scope}"


def test_each_operation_gives_its_span_with_the_documented_attributes(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    answers = _workload(tmp_path / "db")
    every = exporter.get_finished_spans()
    spans = [s for s in every if s.instrumentation_scope is not None and s.instrumentation_scope.name == "memdb"]
    by_name: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    assert set(by_name) == {
        "memdb.record", "memdb.record_tool_result", "memdb.recall", "memdb.ask", "memdb.maintain", "memdb.reflect", "execute_tool ask",
    }  # fmt: skip

    ok, tool_call, bad = by_name["memdb.record"]
    assert dict(ok.attributes or {}) == {"memdb.owner": "ana", "memdb.kind": "debug", "memdb.episode.id": ok.attributes["memdb.episode.id"]}  # type: ignore[index]
    assert ok.status.status_code is StatusCode.UNSET
    assert dict(tool_call.attributes or {})["memdb.kind"] == "tool_call"
    (result,) = by_name["memdb.record_tool_result"]
    assert dict(result.attributes or {}) == {"memdb.owner": "ana", "memdb.episode.id": tool_call.attributes["memdb.episode.id"]}  # type: ignore[index]
    # the failed record: its error's class, no message, no exception event, and no kind (it was not one)
    assert bad.status.status_code is StatusCode.ERROR and bad.status.description == "ValidationError"
    assert dict(bad.attributes or {}) == {"memdb.owner": "ana", "error.type": "ValidationError"} and bad.events == ()

    recall, ask_direct, ask_mcp = by_name["memdb.recall"][0], *by_name["memdb.ask"]
    assert dict(recall.attributes or {}) == {"memdb.owner": "ana", "memdb.limit": 3, "memdb.total": answers["recall"]}
    assert dict(ask_direct.attributes or {}) == {"memdb.owner": "ana", "memdb.limit": 5, "memdb.total": len(answers["ask"])}
    (maintain,) = by_name["memdb.maintain"]
    assert set(maintain.attributes or {}) == {f"memdb.maintain.{k}" for k in ("summaries", "rescored", "archived", "purged")}
    assert (maintain.attributes or {})["memdb.maintain.summaries"] == answers["maintain"][0]
    (reflect,) = by_name["memdb.reflect"]
    assert dict(reflect.attributes or {}) == {
        "memdb.reflect.owners": 1,
        "memdb.reflect.stored": answers["reflect"],
        "memdb.reflect.discarded": 0,
    }

    # the MCP tool call, by the gen_ai conventions for a tool execution, with the handle's ask inside it
    (tool,) = by_name["execute_tool ask"]
    assert dict(tool.attributes or {}) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask"}
    assert tool.kind is SpanKind.INTERNAL and tool.status.status_code is StatusCode.UNSET
    assert ask_mcp.parent is not None and tool.context is not None and ask_mcp.parent.span_id == tool.context.span_id
    assert ask_mcp.context is not None and ask_mcp.context.trace_id == tool.context.trace_id
    # and it sits inside the MCP SDK's own request span, so one trace runs from the request to the query
    (request,) = [s for s in every if s.name == "tools/call ask"]
    assert request.context is not None and tool.parent is not None and tool.parent.span_id == request.context.span_id
    assert answers["tool"][0] is False

    for s in every:  # the MCP SDK's spans too: a tool's arguments reach none of them
        shown = _shown(s)
        for part in [*SECRET.split(" "), TEXT, "billing", "migration", "release the lock", "what failed"]:
            assert part not in shown, (part, shown)


def test_without_an_sdk_the_calls_answer_the_same_and_make_no_span(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    traced = _workload(tmp_path / "traced")
    assert exporter.get_finished_spans()
    exporter.clear()
    with pytest.MonkeyPatch.context() as mp:  # back to the API's default: the proxy provider, nothing configured
        mp.setattr(trace, "_TRACER_PROVIDER", None)
        assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        plain = _workload(tmp_path / "plain")
    assert plain == traced
    assert exporter.get_finished_spans() == ()
