"""OpenTelemetry spans: names and attributes when a tracer provider is configured, none of
them carrying episode text or PII, and nothing at all when none is.

The OpenTelemetry SDK is not a memdb dependency (only the API comes, with ``anthropic``), so
spans are collected by a small recording provider written on the API: the same calls an SDK's
provider receives (``get_tracer``, ``start_as_current_span`` with attributes, ``set_attribute``,
``set_status``, ``end``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from opentelemetry import trace
from opentelemetry.trace import Span, SpanContext, Status

import memdb
from memdb.errors import ValidationError

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
SECRET = "ana.secret@example.com 4111 1111 1111 1111 zanzibarquux"


class Recorded(Span):
    def __init__(self, name: str, attributes: Mapping[str, Any]) -> None:
        self.name, self.attributes, self.status, self.ended = name, dict(attributes), None, False

    def end(self, end_time: int | None = None) -> None:
        self.ended = True

    def get_span_context(self) -> SpanContext:
        return trace.INVALID_SPAN_CONTEXT

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
        raise AssertionError("memdb adds no events (an exception event would carry its message)")

    def update_name(self, name: str) -> None:
        self.name = name

    def is_recording(self) -> bool:
        return True

    def set_status(self, status: Status | Any, description: str | None = None) -> None:
        self.status = status

    def record_exception(self, exception: BaseException, attributes: Any = None, timestamp: Any = None, escaped: bool = False) -> None:
        raise AssertionError("memdb records no exception (its message may quote text)")


class Recorder(trace.Tracer, trace.TracerProvider):
    def __init__(self) -> None:
        self.spans: list[Recorded] = []

    def get_tracer(self, name: str, *args: Any, **kwargs: Any) -> trace.Tracer:
        assert name == "memdb"
        return self

    def start_span(self, name: str, context: Any = None, kind: Any = None, attributes: Any = None, *args: Any, **kwargs: Any) -> Span:
        found = Recorded(name, attributes or {})
        self.spans.append(found)
        return found

    @contextmanager
    def start_as_current_span(self, name: str, context: Any = None, kind: Any = None, attributes: Any = None, **kw: Any) -> Iterator[Span]:
        assert kw.get("record_exception") is False and kw.get("set_status_on_exception") is False
        found = self.start_span(name, attributes=attributes)
        # as the SDK's tracer does: the two flags memdb passes go on to use_span
        with trace.use_span(found, end_on_exit=True, record_exception=False, set_status_on_exception=False):
            yield found


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Sequence[Recorded]:
    recorder = Recorder()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: recorder)
    return recorder.spans


def test_spans_name_the_operation_and_carry_no_text(tmp_path: Path, spans: Sequence[Recorded]) -> None:
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ana = db.owner("ana")
        ep = ana.record("debug", f"deploy failed {SECRET}", outcome="failure", lesson=SECRET)
        ana.record_exchange("s1", f"hello {SECRET}", f"answer {SECRET}")
        ana.recall(text=SECRET, limit=3)
        ana.ask(f"what failed with {SECRET}?")
        ana.history(kind="debug", text="deploy")
        with pytest.raises(ValidationError):
            ana.record("debug", f"no outcome {SECRET}")
        clock.advance(days=1)
        db.maintain()
        db.reflect()
    names = [s.name for s in spans]
    assert names[:3] == ["memdb.record", "memdb.record", "memdb.recall"]
    assert {"memdb.ask", "memdb.history", "memdb.maintain", "memdb.reflect"} <= set(names)
    record = spans[0]
    assert record.attributes == {"memdb.owner": "ana", "memdb.kind": "debug", "memdb.episode.id": ep.id} and record.ended
    recall = spans[2]
    assert recall.attributes["memdb.limit"] == 3 and recall.attributes["memdb.total"] == 2  # the episode and the exchange
    failed = [s for s in spans if s.status is not None]
    assert len(failed) == 1 and failed[0].attributes["error.type"] == "ValidationError"
    assert failed[0].status.description == "ValidationError"
    maintain = next(s for s in spans if s.name == "memdb.maintain")
    assert set(maintain.attributes) == {f"memdb.maintain.{k}" for k in ("summaries", "rescored", "archived", "purged")}
    for s in spans:
        shown = f"{s.name} {s.attributes!r} {getattr(s.status, 'description', '')}"
        for part in [*SECRET.split(" "), "deploy failed", "hello"]:
            assert part not in shown, (part, shown)


def test_no_provider_means_no_span(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's default (proxy) provider is no configuration: memdb asks it for no tracer."""
    monkeypatch.setattr(trace.ProxyTracerProvider, "get_tracer", lambda *a, **k: pytest.fail("tracer asked for"))
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        db.owner("ana").record("debug", "deploy failed", outcome="failure")
        db.owner("ana").ask("what failed?")
