"""OpenTelemetry spans for the surfaces: record (and a tool call's result), recall, ask, history, maintain, reflect, MCP tools.

Off and free unless an application configured OpenTelemetry: memdb never imports it (the API
comes with ``anthropic``); a span is made only when ``opentelemetry.trace`` is already imported
and a real tracer provider is set (an SDK's), otherwise ``span`` costs one dict lookup.

Attributes follow the ``gen_ai`` semantic conventions where they apply (an MCP tool call is
``execute_tool {gen_ai.tool.name}`` with ``gen_ai.operation.name`` ``execute_tool``), else
``memdb.*``: the owner, a kind and episode id once validated, limits and counts. Never episode
text, a question, tool arguments, an argument as the caller gave it, or an exception's message
(``error.type`` names its class only), as for the logs (memdb.engine.log;
tests/surfaces/test_tracing.py, and tests/surfaces/test_tracing_sdk.py with the SDK's exporter).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

__all__ = ["Span", "span"]

Attribute = str | int | float | bool


class Span:
    """What instrumented code may do with its span: add safe attributes (a no-op when off)."""

    __slots__ = ("_span",)

    def __init__(self, real: Any = None) -> None:
        self._span = real

    def set(self, key: str, value: Attribute) -> None:
        if self._span is not None:
            self._span.set_attribute(key, value)


_OFF = Span()
_cache: list[Any] = [None, None]  # (provider, tracer): get_tracer once per configured provider


def _tracer() -> Any:
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:  # nobody imported OpenTelemetry, so nobody configured it
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    if _cache[0] is not provider:
        from memdb import __version__

        _cache[:] = [provider, provider.get_tracer("memdb", __version__)]
    return _cache[1]


class _Untraced:
    """The block of a span when tracing is off: one shared object, since a generator-based
    context manager made per call was 1.4 us of every recall (3% of a small one, recall18)."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return _OFF

    def __exit__(self, *exc: object) -> None:
        return None


_UNTRACED = _Untraced()


def span(name: str, attributes: Mapping[str, Attribute]) -> AbstractContextManager[Span]:
    """A span named ``name`` around the block when tracing is configured; a no-op otherwise.
    An exception sets the span's status to error with ``error.type``, never its message."""
    tracer = _tracer()
    return _UNTRACED if tracer is None else _traced(tracer, name, attributes)


@contextmanager
def _traced(tracer: Any, name: str, attributes: Mapping[str, Attribute]) -> Iterator[Span]:
    from opentelemetry.trace import Status, StatusCode

    with tracer.start_as_current_span(name, attributes=dict(attributes), record_exception=False, set_status_on_exception=False) as real:
        try:
            yield Span(real)
        except BaseException as exc:
            real.set_attribute("error.type", type(exc).__qualname__)
            real.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            raise
