"""The MCP surface: ``memdb mcp`` serves one owner's memory to agents over stdio or loopback HTTP.

Two halves. The tools are plain functions of an owner handle that return compact text plus
structured data, with parameters declared once (``Param``) so the JSON schema the client sees
and the checks the server runs cannot drift apart. The SDK wiring (``build_server``) lists
them, checks arguments, and turns memdb errors into tool errors that name the argument.

The owner is never a tool argument: it is fixed when the server starts (stdio) or derived
from the bearer token of each HTTP request. The official ``mcp`` SDK (2.x) is imported only
when serving, so ``import memdb`` never needs the ``mcp`` extra.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import heapq
import hmac
import itertools
import json
import math
import os
import re
import shlex
import socket
import stat
import sys
import tomllib
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import memdb
from memdb.engine.postgres import is_postgres_url, redact_url
from memdb.errors import ConfigError, MemdbError, NotFoundError, ValidationError
from memdb.governance.knowledge import Entry
from memdb.lifecycle.summarize import one_line_head
from memdb.memory.ids import from_micros, ts_micros
from memdb.memory.models import (
    MAX_DEPTH,
    MAX_PARTICIPANTS,
    MAX_TAGS,
    PARTICIPANT_CHARS,
    Episode,
    bound_text,
    check_owner,
    truncation_marker,
    unstorable,
)
from memdb.memory.sanitize import register_secrets, shown
from memdb.memory.sanitize.messages import redacted
from memdb.memory.settings import BUILTIN_KINDS, OUTCOMES, Settings
from memdb.memory.text import MAX_TAG_BYTES, MAX_TAG_CHARS, normalize_tag
from memdb.memory.timephrase import TimeWindow, find_time_phrase, local_day
from memdb.query.results import History, Hit, Interpretation, RecallResult, said_words
from memdb.surfaces.handle import Memory
from memdb.surfaces.hosts import HostCheck, sdk_security
from memdb.surfaces.throttle import Throttle, client_address
from memdb.surfaces.tracing import span

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "LOOPBACK_NAMES",
    "MISSING_EXTRA",
    "SERVE_TABLES",
    "ArgumentError",
    "BearerAuth",
    "McpExtraMissingError",
    "Param",
    "ToolOutput",
    "ToolSpec",
    "bind_port",
    "build_server",
    "http_app",
    "load_tokens",
    "owner_of_token",
    "read_config",
    "run",
    "serve_http",
    "serve_stdio",
    "tool_specs",
]

MISSING_EXTRA = "memdb mcp needs the 'mcp' extra: pip install 'memdb-agent[mcp]'"
HOST = "127.0.0.1"  # loopback only: the token map is a local convenience, not internet-grade auth
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")  # the Host a request to this machine may name
DEFAULT_PORT = 8765
MIN_TOKEN_CHARS = 16
DECISIONS_CHARS = 20_000  # record_episode's decisions, measured as compact JSON (docs/mcp.md)
_LIST_CHARS = 600  # each text field, and the decisions as JSON, of an episode in a list (cut with a visible marker)
_LIST_CITES = 20  # cites shown per episode in a list (a session's episode cites up to 500 events)
_LISTED_TEXT = ("summary", "content", "lesson", "what_we_tried", "what_happened", "why", "result", "artifact", "supersede_reason")
_RECORD_OPTIONAL = ("tags", "lesson", "what_we_tried", "what_happened", "why", "content", "decisions", "session",
                    "artifact", "participants")  # fmt: skip
_MARKER = re.compile(re.escape(truncation_marker(0)).replace("0", r"(\d+)"))  # what ends a text cut at capture
_CUT_FIELDS = ("summary", "content", "lesson", "what_we_tried", "what_happened", "why", "result")


class McpExtraMissingError(MemdbError, ImportError):
    """The optional ``mcp`` SDK is not installed."""


class ArgumentError(ValidationError):
    """A tool argument is invalid; ``argument`` names it."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


# --- parameters: one declaration gives the JSON schema and the check ------------------------


def _shown(value: Any) -> str:
    """A short repr of an argument for an error message, sanitized (it reaches the client and logs)."""
    return shown(value, 60)


@dataclass(frozen=True)
class Param:
    """One tool argument: its JSON schema and the server-side check come from this alone."""

    name: str
    type: str  # JSON type: string | integer | number | boolean | array (of strings) | object
    description: str
    required: bool = False
    enum: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None  # characters of a string, items of an array, characters of an object as JSON
    default: Any = None
    # An array of tags: each item is normalised as a tag and capped as one; without it a bad tag
    # was refused naming no argument (test_schemas_state_the_item_and_nesting_caps_the_server_enforces).
    tag_items: bool = False
    item_max_length: int | None = None  # characters of each item of an array that is no tag list
    max_depth: int | None = None  # an object's levels of objects and arrays (capture refuses deeper)

    def schema(self) -> dict[str, Any]:
        """This parameter as a JSON schema property."""
        s: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            s["items"] = {"type": "string", **({"enum": list(self.enum)} if self.enum else {})}
            if self.tag_items:
                s["items"]["maxLength"] = MAX_TAG_CHARS
                s["description"] += (
                    f" Each at most {MAX_TAG_CHARS} characters ({MAX_TAG_BYTES} bytes in UTF-8) once normalised as a tag, "
                    "with a letter or digit."
                )
            if self.item_max_length is not None:
                s["items"]["maxLength"] = self.item_max_length
                s["description"] += f" Each at most {self.item_max_length} characters."
            if self.max_length is not None:
                s["maxItems"] = self.max_length
        elif self.type != "object":  # JSON schema cannot bound an object's size: the description says it
            if self.enum:
                s["enum"] = list(self.enum)
            if self.max_length is not None:
                s["maxLength"] = self.max_length
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        if self.default is not None:
            s["default"] = self.default
        return s

    def check(self, value: Any) -> Any:
        """The value if it fits the declaration; ArgumentError naming this parameter otherwise."""
        shown = _shown(value)

        def bad(reason: str) -> ArgumentError:
            return ArgumentError(self.name, f"{self.name} {shown}: {reason}")

        if self.type == "string":
            if not isinstance(value, str):
                raise bad("expected a string")
            if not value.strip():
                raise bad("empty (leave the argument out instead)")
            if self.max_length is not None and len(value) > self.max_length:
                raise bad(f"longer than {self.max_length} characters")
            if self.enum and value not in self.enum:
                raise bad(f"must be one of {', '.join(self.enum)}")
            return value.strip()
        if self.type in ("integer", "number"):
            # a JSON integer can be arbitrarily large: math.isfinite(10**400) overflows, so only floats go there
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
                raise bad(f"expected {'an integer' if self.type == 'integer' else 'a number'}{self._range()}")
            if self.type == "integer":
                if isinstance(value, float) and not value.is_integer():
                    raise bad(f"expected an integer{self._range()}")
                value = int(value)
            if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
                raise bad(f"out of range: expected{self._range()}")
            return value
        if self.type == "array":
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise bad("expected a list of non-empty strings")
            if self.max_length is not None and len(value) > self.max_length:
                raise bad(f"more than {self.max_length} items")
            wrong = [v for v in value if self.enum and v not in self.enum]
            if wrong:
                raise bad(f"{_shown(wrong[0])} is not one of {', '.join(self.enum)}")
            if self.tag_items:
                for v in value:
                    problem = _tag_problem(v)
                    if problem is not None:
                        raise ArgumentError(self.name, f"{self.name} item {_shown(v)}: {problem}")
            long = [v for v in value if self.item_max_length is not None and len(v) > self.item_max_length]
            if long:
                said = f"{len(long[0])} characters, more than {self.item_max_length}"
                raise ArgumentError(self.name, f"{self.name} item {_shown(long[0])}: {said}")
            return [v.strip() for v in value]
        if self.type == "boolean":
            if not isinstance(value, bool):
                raise bad("expected true or false")
            return value
        if self.type == "object":
            if not isinstance(value, dict):
                raise bad("expected a JSON object")
            # capture's own check, so what record stores a client may send back whole (test_mcp_depth.py)
            if self.max_depth is not None and (problem := unstorable(self.name, value)) is not None:
                raise ArgumentError(self.name, problem)  # names the path, never the value
            if self.max_length is not None:
                try:
                    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
                except (RecursionError, ValueError):  # nested too deep to measure: far too big anyway
                    raise bad("nested too deeply") from None
                if size > self.max_length:
                    raise bad(f"{size} characters as JSON, more than {self.max_length}")
            return value
        raise AssertionError(f"param {self.name}: unknown type {self.type!r}")  # a bug in the declarations

    def _range(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f" from {self.minimum:g} to {self.maximum:g}"
        if self.minimum is not None:
            return f" of at least {self.minimum:g}"
        return ""


def _tag_problem(item: str) -> str | None:
    """Why ``item`` is no tag (as capture and queries normalise tags), or None."""
    try:
        normalize_tag(item)
    except ValidationError as exc:  # "tag '...': reason": the reason alone, said of the argument's item
        return str(exc).removeprefix(f"tag {shown(item)}: ")
    return None


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns: compact text for the model, and the same facts as structured data."""

    text: str
    data: dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    """A tool: name, description, parameters, output schema and the function that runs it."""

    name: str
    title: str
    description: str
    params: tuple[Param, ...]
    output_schema: dict[str, Any]
    run: Callable[[Memory, dict[str, Any]], ToolOutput]
    read_only: bool = True
    windowed: bool = False  # takes window or since/until (not both)
    idempotent: bool = False  # a write that, repeated with the same arguments, changes nothing more
    destructive: bool = False  # removes memory for good (forget_episodes)
    # Reads that count accesses (or retrievals), which change later rankings: not read-only in
    # MCP's sense (readOnlyHint: "does not modify its environment"), though they write no memory.
    # docs/mcp.md, "Annotations"; test_annotations_tell_the_truth_about_side_effects.
    counts_access: bool = False

    def annotations(self) -> dict[str, bool]:
        """MCP's hints: read-only only when nothing changes at all; idempotent when a repeat changes nothing more."""
        pure = self.read_only and not self.counts_access
        return {"read_only": pure, "destructive": self.destructive, "idempotent": pure or self.idempotent}

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (no extra properties: an unknown argument is an error)."""
        return {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def check_arguments(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Checked arguments with defaults filled in; ArgumentError naming the first bad one."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ArgumentError("arguments", f"arguments {_shown(arguments)}: expected a JSON object")
        known = {p.name: p for p in self.params}
        for name in arguments:
            if name == "owner":
                raise ArgumentError(
                    "owner", "owner: not a tool argument; this server serves only the owner set by its configuration or your token"
                )
            if name not in known:  # a name is the caller's text too: shown sanitized (an email as a name)
                named = redacted(name)
                raise ArgumentError(named, f"{named}: unknown argument for {self.name} (expected {', '.join(known)})")
        out: dict[str, Any] = {}
        for p in self.params:
            value = arguments.get(p.name)
            if value is None:  # JSON null means "not given"
                if p.required:
                    raise ArgumentError(p.name, f"{p.name}: required ({p.description})")
                out[p.name] = p.default
            else:
                out[p.name] = p.check(value)
        if self.windowed and out.get("window") is not None and (out.get("since") is not None or out.get("until") is not None):
            raise ArgumentError("window", "window: give either a window phrase or since/until, not both")
        return out


# --- shaping results -------------------------------------------------------------------------


def _listed(data: dict[str, Any]) -> dict[str, Any]:
    """An episode's data bounded for a list: each text field and the decisions (as compact JSON)
    at ``_LIST_CHARS`` characters, the cites at ``_LIST_CITES``, and 'truncated' saying what was
    cut from what (get_episode shows it whole). Content alone was bounded: fifty memories with
    long lessons and decisions made a 1.45 MB answer (test_lists_bound_every_field)."""
    cut: dict[str, dict[str, int]] = {}
    for name in _LISTED_TEXT:
        value = data.get(name)
        if isinstance(value, str) and len(value) > _LIST_CHARS:
            data[name] = bound_text(value, _LIST_CHARS)
            cut[name] = {"original": len(value), "kept": len(data[name]) - len(truncation_marker(len(value)))}
    if "decisions" in data:
        size = len(_compact(data["decisions"]))
        if size > _LIST_CHARS:  # an object cannot end in a marker: the items that fit whole, in order
            kept: dict[str, Any] = {}
            used = 2  # the braces
            for key, value in data["decisions"].items():
                item = len(_compact(str(key))) + 1 + len(_compact(value)) + (1 if kept else 0)  # "key":value and a comma
                if used + item <= _LIST_CHARS:
                    kept[key], used = value, used + item
            data["decisions"] = kept
            cut["decisions"] = {"original": size, "kept": len(_compact(kept))}
    if len(data.get("cites", ())) > _LIST_CITES:
        cut["cites"] = {"original": len(data["cites"]), "kept": _LIST_CITES}
        data["cites"] = data["cites"][:_LIST_CITES]
    if cut:
        data["truncated"] = cut
    return data


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _episode_data(ep: Episode, listed: bool = False) -> dict[str, Any]:
    """An episode as JSON, without empty fields; ``listed`` bounds it for a list (``_listed``)."""
    data: dict[str, Any] = {
        "id": ep.id,
        "ts": ep.ts.isoformat(),
        "kind": ep.kind,
        "summary": ep.summary,
        "tags": list(ep.tags),
        "relevance": round(ep.relevance, 2),
        "status": ep.status,
    }
    for name in ("outcome", "lesson", "what_we_tried", "what_happened", "why", "session", "tool", "result", "artifact", "feedback",
                 "key", "supersedes", "supersede_reason", "superseded_by"):  # fmt: skip
        value = getattr(ep, name)
        if value is not None:
            data[name] = value
    if ep.content:
        data["content"] = ep.content
    if ep.decisions:
        data["decisions"] = ep.decisions
    if ep.participants:
        data["participants"] = list(ep.participants)
    if ep.cites:
        data["cites"] = list(ep.cites)
    return _listed(data) if listed else data


def _one_line(text: str, cap: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 1] + "…"


def _head(ep: Episode) -> str:
    head = ep.kind + (f"/{ep.outcome}" if ep.outcome else "")
    if ep.status != "active":
        head += f" ({ep.status})"
    return head


def _what(ep: Episode) -> str:
    """The gist of an episode in one line: a tool run shows its input and result."""
    if ep.kind == "tool_call" and ep.status != "archived":  # an archived one keeps its one-liner hot, not its run
        result = _one_line(ep.result, 80) if ep.result else "no result yet"
        return f"{ep.tool} {_one_line(ep.content, 80)} -> {result}"
    text = _one_line(ep.summary, 200)
    if ep.status == "archived":  # its summary is the one-liner, which may open with the day and kind shown already
        text = text.removeprefix(one_line_head(ep))
    if ep.key:
        text = f"{ep.key} = {text}"
    if ep.lesson and ep.lesson not in text:  # (an archived one-liner may hold it)
        text += ("" if text.endswith((".", "!", "?", ":")) else ".") + f" Lesson: {_one_line(ep.lesson, 200)}"
    return text


def _zone(mem: Memory) -> dt.tzinfo:
    """The database's timezone: lines date memories in it, as windows read days in it ("yesterday
    (2026-06-30)" listed a memory of that evening in Los Angeles as 2026-07-01, its UTC date)."""
    return dt.UTC if mem.settings.timezone == "UTC" else ZoneInfo(mem.settings.timezone)


def _memory_line(ep: Episode, zone: str) -> str:
    """A memory's line, dated as the database's ``zone`` reads days (an answer's interpretation
    carries it)."""
    tags = f" [{', '.join(ep.tags)}]" if ep.tags else ""
    return f"- {local_day(ep.ts, zone)} {_head(ep)}{tags}: {_what(ep)} (id {ep.id})"


def _event_line(ep: Episode, zone: dt.tzinfo) -> str:
    return f"- {ep.ts.astimezone(zone):%Y-%m-%d %H:%M} {_head(ep)}: {_what(ep)} (id {ep.id})"


# The query layer's notes and the library's errors name the Python API's arguments and calls; a
# tool's caller knows them by their names here (test_notes_name_the_tools_arguments,
# test_errors_about_archived_episodes_name_the_tools). The specific phrases go first.
_IN_TOOL_TERMS = (
    ("include_archived=True", "include_archived: true"), ("include_superseded=True", "include_superseded: true"),
    ("ask or recall with", "ask or recall_episodes with"), ("restore() it first", "restore it first with restore_episode"),
    ("restore()", "restore_episode"), ("feedback() rates", "record_feedback rates"), ("outcome='failure'", 'outcome "failure"'),
)  # fmt: skip
_PYTHON_CALL = re.compile(r"\b(restore|supersede)\(('[^']*')\)")  # restore('<id>'), supersede('<id>'): an id shown quoted
_CALL_IN_TOOL_TERMS = {"restore": "restore_episode with episode_id {}", "supersede": "episode {}"}


def _in_tool_terms(text: str) -> str:
    text = _PYTHON_CALL.sub(lambda m: _CALL_IN_TOOL_TERMS[m.group(1)].format(m.group(2)), text)
    for python, tool in _IN_TOOL_TERMS:
        text = text.replace(python, tool)
    return text


def _recall_output(result: RecallResult, searched: str, relabel: Callable[[str], str] = str) -> ToolOutput:
    searched, note = relabel(searched), _in_tool_terms(relabel(result.note))
    lines = [f"searched: {searched}", note]
    lines.extend(_memory_line(m.episode, result.interpretation.zone) for m in result.memories)
    data = {
        "found": result.found,
        "searched": searched,
        "note": note,
        "total": result.total,
        "partial": result.partial,
        "unmatched": list(said_words(result.interpretation.unmatched)),
        # the episode's own ``why`` stays; why it matched this query is ``match_why``
        "memories": [
            {**_episode_data(m.episode, listed=True), "score": m.score, "match_why": [_in_tool_terms(w) for w in m.why]}
            for m in result.memories
        ],
    }
    return ToolOutput("\n".join(lines), data)


def _cut(kept: str, marker: re.Match[str]) -> dict[str, int]:
    return {"original": int(marker.group(1)), "kept": len(kept) - len(marker.group(0))}


def _truncated(ep: Episode) -> dict[str, dict[str, int]]:
    """Which fields were cut when the episode was written, each with its original and kept length
    (of the sanitized text); an exchange's content reports its two sides."""
    out: dict[str, dict[str, int]] = {}
    for name in _CUT_FIELDS:
        value = getattr(ep, name)
        if not isinstance(value, str):
            continue
        if name == "content" and ep.kind == "exchange" and value.startswith("user: "):
            user, sep, response = value[len("user: ") :].partition("\nassistant: ")
            found = [m for m in _MARKER.finditer(value) if m.end() == len("user: ") + len(user)]
            if found:
                out["user_message"] = _cut(user, found[0])
            last = _MARKER.search(response) if sep else None
            if last is not None and last.end() == len(response):
                out["response"] = _cut(response, last)
            continue
        found = [m for m in _MARKER.finditer(value) if m.end() == len(value)]
        if found:
            out[name] = _cut(value, found[0])
    return out


def _written(ep: Episode, text: str) -> ToolOutput:
    """A write's reply: the episode, and what was cut and by how much (said in the text too)."""
    data: dict[str, Any] = {"episode": _episode_data(ep)}
    cut = _truncated(ep)
    if cut:
        data["truncated"] = cut
        text += "; cut to the stored cap: " + ", ".join(
            f"{name} kept {c['kept']:,} of {c['original']:,} characters ({c['original'] - c['kept']:,} cut)" for name, c in cut.items()
        )
    return ToolOutput(text, data)


def _fingerprint(args: Mapping[str, Any]) -> str:
    """What identifies a query across pages: every argument but the page size and the cursor."""
    query = {k: v for k, v in sorted(args.items()) if k not in ("limit", "cursor")}
    return hashlib.sha256(json.dumps(query, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _cursor(args: Mapping[str, Any], **position: Any) -> str:
    """An opaque cursor: where the next page of this query starts (recall: an ``o``ffset;
    timeline: ``a``fter the last event shown, by its ``t``ime and id)."""
    raw = json.dumps({"q": _fingerprint(args), **position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _position(args: Mapping[str, Any], tool: str, check: Callable[[dict[str, Any]], Any]) -> Any:
    """What ``check`` reads from the ``cursor`` this query gave (None without one); ArgumentError
    for one the tool did not give, or gave another query."""
    cursor = args.get("cursor")
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        query, position = data["q"], check(data)
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError, OverflowError):
        raise ArgumentError("cursor", f"cursor {_shown(cursor)}: not a cursor {tool} gave (leave it out to start again)") from None
    if query != _fingerprint(args):
        raise ArgumentError(
            "cursor", "cursor: it belongs to another query (pass the same arguments as the page that gave it; limit may change)"
        )
    return position


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(value)
    return value


def _offset_of(args: Mapping[str, Any]) -> int:
    """The page a ``cursor`` points to; ArgumentError for one this query did not give."""
    return _position(args, "recall_episodes", lambda data: _count(data["o"])) or 0


def _kind_offsets(args: Mapping[str, Any], kinds: list[str]) -> list[int]:
    """Where each of several ``kinds`` starts on the page a ``cursor`` points to (their offsets
    in ``kinds`` order); zeros without one, ArgumentError for one this query did not give."""

    def check(data: dict[str, Any]) -> list[int]:
        starts = data["k"]
        if not isinstance(starts, list) or len(starts) != len(kinds):
            raise ValueError(data)
        return [_count(n) for n in starts]

    starts: list[int] | None = _position(args, "recall_episodes", check)
    return starts if starts is not None else [0] * len(kinds)


def _after_of(args: Mapping[str, Any]) -> tuple[int, str] | None:
    """The (time in microseconds, id) of the last event a timeline's page showed, which the
    next page starts after; None without a cursor."""

    def check(data: dict[str, Any]) -> tuple[int, str]:
        t, a = data["t"], data["a"]
        if not isinstance(t, int) or isinstance(t, bool) or not isinstance(a, str):
            raise ValueError(data)
        from_micros(t)  # a time (OverflowError past year 9999)
        return t, a

    after: tuple[int, str] | None = _position(args, "timeline", check)
    return after


# --- argument helpers ------------------------------------------------------------------------


def _instant(text: str | None, name: str) -> dt.datetime | None:
    """An ISO date or datetime; a date means midnight UTC and a naive time means UTC."""
    if text is None:
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ArgumentError(name, f"{name} {_shown(text)}: not an ISO date or datetime (e.g. 2026-07-01 or 2026-07-01T09:00:00Z)") from None
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:  # 0001-01-01T00:00:00+14:00 is before year 1 in UTC
        raise ArgumentError(name, f"{name} {_shown(text)}: out of range once converted to UTC (years 1 to 9999)") from None


def _window_of(mem: Memory, args: Mapping[str, Any]) -> tuple[dt.datetime | None, dt.datetime | None, Callable[[str], str]]:
    """``since``/``until`` from either a plain-language ``window`` or ISO ``since``/``until``.

    The third item rewrites query-layer text to name the window by the caller's phrase.
    """
    phrase = args.get("window")
    if phrase is not None:
        window, rest = find_time_phrase(phrase, mem.now(), mem.settings.week_starts_on, mem.settings.timezone)
        if window is None:
            raise ArgumentError(
                "window",
                f"window {_shown(phrase)}: not a time phrase memdb understands "
                "(e.g. yesterday, last week, past 3 days, in May, since Monday, on 2026-07-01)",
            )
        if rest.strip():
            raise ArgumentError("window", f"window {_shown(phrase)}: only a time phrase, please ({_shown(rest.strip())} is left over)")
        return window.start, window.end, partial(_relabel, window)
    since, until = _instant(args.get("since"), "since"), _instant(args.get("until"), "until")
    if since is not None and until is not None and until <= since:
        raise ArgumentError("until", f"until {_shown(args['until'])}: must be after since {_shown(args['since'])}")
    return since, until, str


def _relabel(window: TimeWindow, text: str) -> str:
    """Name a window by the caller's phrase where the query layer, given bare since/until, says
    "in the window". Cosmetic, and only until ``recall``/``history`` accept a TimeWindow."""
    generic = TimeWindow(window.start, window.end, "in the window")
    return text.replace(f"Nothing {generic} for", f"Nothing {window.phrase} for").replace(str(generic), str(window))


# --- the tools -------------------------------------------------------------------------------


def _recall_episodes(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    since, until, relabel = _window_of(mem, args)
    limit = args["limit"]
    common = {
        "since": since, "until": until, "tags": args["tags"] or (), "any_tags": args["any_tags"] or (),
        "text": args["text"], "outcome": args["outcome"], "session": args["session"],
        "include_archived": bool(args["include_archived"]), "include_told": bool(args["include_told"]),
        "include_superseded": bool(args["include_superseded"]),
    }  # fmt: skip
    kinds: list[str] = list(dict.fromkeys(args["kinds"] or ()))
    if len(kinds) <= 1:
        # a page skips the ``offset`` best: the ranking is stable under the same query, as an
        # access only raises the relevance of what earlier pages returned (test_recall_pages_with_a_cursor)
        offset = _offset_of(args)
        result = mem.recall(kind=kinds[0] if kinds else None, limit=limit, offset=offset, **common)
        out = _recall_output(result, str(result.interpretation), relabel)
        position: dict[str, Any] = {"o": offset + len(result.memories)}
    else:
        # Several kinds: one exact query per kind (each uses its kind/outcome index), merged by
        # score. Scores share one formula, so without text they compare exactly; with text each
        # query normalises BM25 by its own best match, which favours each kind's top hit a little.
        # The cursor keeps where each kind's next page starts, and a page reads each kind's next
        # ``limit`` counting no access, then counts only the ones it shows, read again as their
        # kind's page: reading offset + limit of every kind, all counted, raised the hits never
        # shown past the next page's start, which then skipped some and repeated others
        # (test_several_kinds_page_through_every_match_once).
        starts = _kind_offsets(args, kinds)
        offset = sum(starts)
        results = [mem.recall(kind=k, limit=limit, offset=start, access=False, **common) for k, start in zip(kinds, starts, strict=True)]
        merged = heapq.merge(*([(m, i) for m in r.memories] for i, r in enumerate(results)), key=lambda h: (-h[0].score, h[0].episode.id))
        page = list(itertools.islice(merged, limit))  # each kind's shown hits are the head of its list, in its order
        taken = [sum(1 for _, i in page if i == j) for j in range(len(kinds))]
        for k, start, n in zip(kinds, starts, taken, strict=True):
            if n:
                mem.recall(kind=k, limit=n, offset=start, **common)  # the accesses of what this page shows
        memories = [m for m, _ in page]
        interp = replace(results[0].interpretation, kind=" or ".join(kinds))
        total = sum(r.total for r in results)
        result = RecallResult(bool(memories), memories, interp, total, _kinds_note(mem, kinds, common, interp, total, memories))
        out = _recall_output(result, str(interp), relabel)
        position = {"o": offset + len(memories), "k": [start + n for start, n in zip(starts, taken, strict=True)]}
    if offset + len(result.memories) < result.total and result.memories:
        cursor = _cursor(args, **position)
        return ToolOutput(
            out.text + f"\nmore: {result.total - offset - len(result.memories)} left; pass cursor {cursor} for the next page",
            {**out.data, "cursor": cursor},
        )
    return out


def _them(n: int) -> str:
    return "it" if n == 1 else "them"


def _kinds_note(mem: Memory, kinds: list[str], common: Mapping[str, Any], interp: Interpretation, total: int, memories: list[Hit]) -> str:
    """The note of an answer over several kinds. Each kind's own note counts that kind alone (and
    calls the others "other kinds"), so what one kind's note says is counted again over every
    kind, by the same queries with limit 0 (they return and touch nothing): archived matches,
    and for an empty answer the matches outside the window (archived ones too), the earlier
    versions and the matches of kinds not asked for. Latest days are not said (test_several_kinds_keep_what_one_kind_s_note_says)."""

    def count(of: list[str] | list[None] = kinds, **changed: Any) -> int:
        return sum(mem.recall(kind=k, limit=0, **{**common, **changed}).total for k in of)

    def matches(n: int, what: str = "match") -> str:
        return f"{n} {what}{'es' if n != 1 else ''}"

    archived = 0 if common["include_archived"] else count(include_archived=True) - total
    if total:
        note = f"{matches(total)} for {interp}; " + (f"showing {len(memories)}." if memories else "none left.")
        if archived:
            note += f" Also {matches(archived, 'archived match')}; include_archived: true to see {_them(archived)}."
        corrected = 0 if common["include_superseded"] else sum(1 for m in memories if m.episode.supersedes)
        if corrected:
            which = (
                "1 shown memory corrects an earlier version" if corrected == 1 else f"{corrected} shown memories correct earlier versions"
            )
            note += f" {which}; include_superseded: true to see {_them(corrected)}."
        return note
    note = f"Nothing found for {interp}."
    since, until = common["since"], common["until"]
    before = count(since=None, until=since) if since is not None else 0
    after = count(since=until, until=None) if until is not None else 0
    if before or after:
        note += " Outside the window: " + " and ".join(f"{n} {when}" for n, when in ((before, "earlier"), (after, "later")) if n) + "."
    if archived:
        one = "it" if archived == 1 else "one"
        note += (
            f" {matches(archived, 'archived match')}; include_archived: true to see {_them(archived)} (restore_episode brings {one} back)."
        )
    if (since is not None or until is not None) and not common["include_archived"]:
        elsewhen = count(since=None, until=None, include_archived=True) - before - after - archived
        if elsewhen:
            note += (
                f" {matches(elsewhen, 'archived match')} at other times; leave the window out and include_archived: true "
                f"to see {_them(elsewhen)}."
            )
    old = 0 if common["include_superseded"] else count(include_superseded=True)
    if old:
        what = "1 earlier version of a corrected memory matches" if old == 1 else f"{old} earlier versions of corrected memories match"
        note += f" {what}; include_superseded: true to see {_them(old)}."
    others = count([None]) if any(common[f] for f in ("tags", "any_tags", "text", "outcome")) else 0
    if others:
        what = "1 memory of another kind matches" if others == 1 else f"{others} memories of other kinds match"
        note += f" {what} the rest; leave kinds out to see {_them(others)}."
    return note


def _ask(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    result = mem.ask(
        args["question"], limit=args["limit"], include_archived=bool(args["include_archived"]),
        include_superseded=bool(args["include_superseded"]),
    )  # fmt: skip
    return _recall_output(result, str(result.interpretation))


def _restore_episode(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    ep = mem.restore(args["episode_id"])
    return ToolOutput(f"restored {_memory_line(ep, mem.settings.timezone)}", {"episode": _episode_data(ep)})


_FIELD_LABELS = (
    ("what_we_tried", "what we tried"), ("what_happened", "what happened"), ("why", "why"), ("lesson", "lesson"),
    ("content", "content"), ("result", "result"), ("artifact", "artifact"), ("session", "session"),
)  # fmt: skip


def _get_episode(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    ep = mem.get(args["episode_id"])
    versions = [v.id for v in mem.versions(ep.id)]
    lines = [_memory_line(ep, mem.settings.timezone)]
    lines += [f"{label}: {getattr(ep, name)}" for name, label in _FIELD_LABELS if getattr(ep, name)]
    if ep.decisions:
        lines.append(f"decisions: {json.dumps(ep.decisions, ensure_ascii=False, default=str)}")
    if ep.participants:
        lines.append(f"participants: {', '.join(ep.participants)}")
    if ep.supersedes:
        lines.append(f"corrects {ep.supersedes}" + (f": {ep.supersede_reason}" if ep.supersede_reason else ""))
    if ep.superseded_by:
        lines.append(f"superseded by {ep.superseded_by} (this is an earlier version)")
    if len(versions) > 1:
        lines.append("versions, oldest first: " + " -> ".join(versions))
    data: dict[str, Any] = {"episode": _episode_data(ep), "versions": versions}
    return ToolOutput("\n".join(lines), data)


def _supersede_episode(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    changes = {k: args[k] for k in _SUPERSEDE_FIELDS if args.get(k) is not None}  # none: the handle says what to give
    ep = mem.supersede(args["episode_id"], reason=args["reason"], **changes)
    text = (
        f"superseded {ep.supersedes} by {ep.id} ({_head(ep)}: {_one_line(ep.summary, 80)}); changed {', '.join(sorted(changes))}. "
        "The earlier version is kept, out of default answers (get_episode shows every version)."
    )
    data: dict[str, Any] = {"episode": _episode_data(ep), "superseded": ep.supersedes}
    cut = {name: c for name, c in _truncated(ep).items() if name in changes}  # what this correction cut, not what was cut before
    if cut:
        data["truncated"] = cut
        text += " Cut to the stored cap: " + ", ".join(
            f"{name} kept {c['kept']:,} of {c['original']:,} characters ({c['original'] - c['kept']:,} cut)" for name, c in cut.items()
        )
    return ToolOutput(text, data)


def _forget_episodes(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    report = mem.erase(list(dict.fromkeys(args["episode_ids"])), reason=args["reason"])
    text = (
        f"erased {report.count} episode{'s' if report.count != 1 else ''} for good ({', '.join(report.ids)}), every version "
        f"of each and the summaries derived from them included; audit record {report.audit_id} keeps ids and hashes, no content"
    )
    if report.entries:  # lessons citing them went too: said, never hidden
        text += f"; {len(report.entries)} knowledge entr{'ies' if len(report.entries) != 1 else 'y'} citing them erased too"
    data = {"erased": list(report.ids), "count": report.count, "audit_id": report.audit_id, "entries": list(report.entries)}
    return ToolOutput(text, data)


def _history(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    since, until, relabel = _window_of(mem, args)
    h: History = mem.history(kind=args["kind"], tags=args["tags"] or (), text=args["text"], since=since, until=until, limit=args["limit"])
    summary = relabel(str(h))
    lines = [summary]
    if h.lessons:
        shown_lessons = list(dict.fromkeys(_one_line(lesson, 200) for lesson in h.lessons))
        more = f" | and {len(shown_lessons) - 10} more (the lessons field)" if len(shown_lessons) > 10 else ""
        lines.append("Lessons: " + " | ".join(shown_lessons[:10]) + more)
    lines.extend(_memory_line(m.episode, h.interpretation.zone) for m in h.attempts)
    data = {
        "summary": summary,
        "searched": relabel(str(h.interpretation)),
        "total": h.total,
        "archived": h.archived,
        "counts": dict(h.counts),
        "lessons": [bound_text(lesson, _LIST_CHARS) for lesson in h.lessons],  # each once (History.lessons)
        "attempts": [_episode_data(m.episode, listed=True) for m in h.attempts],
    }
    return ToolOutput("\n".join(lines), data)


def _record_episode(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    fields = {k: args[k] for k in _RECORD_OPTIONAL if args.get(k) is not None}
    ts = _instant(args.get("ts"), "ts")
    ep = mem.record(args["kind"], args["summary"], ts=ts, outcome=args["outcome"], **fields)
    text = f"recorded {ep.id} ({ep.kind}/{ep.outcome}) at {ep.ts:%Y-%m-%d %H:%M} UTC; relevance {ep.relevance:.2f}"
    return _written(ep, text)


def _record_fact(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    try:  # the current version, to say when the same value and tags again changed nothing
        had: str | None = mem.fact(args["key"], access=False).id
    except MemdbError:  # none yet (record names what is wrong with the key)
        had = None
    ep = mem.record("fact", args["value"], key=args["key"], tags=args["tags"] or ())
    if ep.id == had:
        return _written(ep, f"fact {ep.key} = {_one_line(ep.summary, 200)} ({ep.id}) is recorded already with these tags: nothing changed")
    text = f"recorded fact {ep.key} = {_one_line(ep.summary, 200)} ({ep.id})"
    return _written(ep, text + (f"; it replaces the value of {ep.supersedes}, kept as an earlier version" if ep.supersedes else ""))


def _record_exchange(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    ep = mem.record_exchange(args["session"], args["user_message"], args["response"], tags=args["tags"] or ())
    return _written(ep, f"recorded exchange {ep.id} in session {ep.session} at {ep.ts:%Y-%m-%d %H:%M} UTC")


def _record_tool_call(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    ep = mem.record_tool_call(args["session"], args["tool"], args["input"], tags=args["tags"] or ())
    if args.get("result") is not None:
        ep = mem.record_tool_result(ep.id, args["result"])
    text = f"recorded tool call {ep.id} ({ep.tool}) in session {ep.session} at {ep.ts:%Y-%m-%d %H:%M} UTC"
    return _written(ep, text + ("" if ep.result else "; add its result with record_tool_result"))


def _record_tool_result(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    try:  # a result again: refused, or the same one, which writes nothing
        had = mem.peek(args["call_id"]).result is not None
    except MemdbError:  # record_tool_result names what is wrong with the id
        had = False
    ep = mem.record_tool_result(args["call_id"], args["result"])
    said = "was recorded already: nothing changed" if had else "is recorded"
    return _written(ep, f"the result of tool call {ep.id} ({ep.tool}) {said}")


def _entry_data(entry: Entry) -> dict[str, Any]:
    data: dict[str, Any] = {"id": entry.id, "owner": entry.owner, "text": entry.text, "tags": list(entry.tags), "cites": list(entry.cites),
                            "visibility": entry.visibility}  # fmt: skip
    if entry.shared_with:
        data["shared_with"] = list(entry.shared_with)
    return data


def _knowledge(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    entries = mem.knowledge(args["text"], tags=args["tags"] or (), limit=args["limit"])
    if not entries:
        text = "No approved knowledge" + (
            " matches." if args["text"] or args["tags"] else " yet (lessons wait in the review queue until a person approves them)."
        )
    else:
        text = "\n".join(f"- {e.text} (id {e.id}{', from ' + e.owner if e.owner != mem.name else ''})" for e in entries)
    return ToolOutput(text, {"entries": [_entry_data(e) for e in entries]})


def _prepare(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    p = mem.prepare(args["task"], kind=args["kind"], tags=args["tags"] or (), max_chars=args["max_chars"], limit=args["limit"])
    # only what the context holds: max_chars 200 returned a 193-character context beside 580 KB of records
    shown = p.in_block
    data = {
        "task": p.task,
        "context": p.text,
        "patterns": sum(1 for pattern in p.patterns if pattern.id in shown),
        "knowledge": [e.id for e in p.knowledge if e.id in shown],
        "records": [
            {**_episode_data(m.episode, listed=True), "score": m.score, "match_why": list(m.why)} for m in p.records if m.id in shown
        ],
        "lessons": [
            {**_episode_data(m.episode, listed=True), "score": m.score, "match_why": list(m.why)} for m in p.lessons if m.id in shown
        ],
        "missing_names": list(said_words(p.missing_names)),
        "left_out": p.left_out,
    }
    return ToolOutput(p.text, data)


def _end_session(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    done = mem.close_session(args["session"], kind=args["kind"], outcome=args["outcome"], tags=args["tags"] or ())
    data: dict[str, Any] = {
        "status": done.status, "closed": done.closed, "reason": done.reason, "events": done.events,
        "attempts": done.attempts, "rejected": list(done.rejected),
    }  # fmt: skip
    text = done.reason
    if done.episode is not None:
        data["episode"] = _episode_data(done.episode)
        text += "\n" + _memory_line(done.episode, mem.settings.timezone)
    return ToolOutput(text, data)


def _record_feedback(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    ep = mem.feedback(args["episode_id"], float(args["value"]))
    text = f"feedback {args['value']:+.2f} recorded on {ep.id} ({_head(ep)}: {_one_line(ep.summary, 80)}); relevance now {ep.relevance:.2f}"
    return ToolOutput(text, {"episode": _episode_data(ep, listed=True)})


def _save_lesson(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    entry = mem.save_lesson(args["text"], cites=args["cites"] or (), tags=args["tags"] or ())
    text = (
        f"saved {entry.id} as a pending, private lesson: it waits in the review queue and is not used "
        f"until a person approves it ({len(entry.cites)} cited episode{'s' if len(entry.cites) != 1 else ''})"
    )
    return ToolOutput(text, {"entry": {"id": entry.id, "state": entry.state, "visibility": entry.visibility, "cites": list(entry.cites)}})


def _span(since: dt.datetime | None, until: dt.datetime | None, zone: dt.tzinfo) -> str:
    if since is None and until is None:
        return ""
    start = f"{since.astimezone(zone):%Y-%m-%d %H:%M}" if since else "the start"
    named = "" if zone is dt.UTC else f" ({zone})"  # a time of day in the database's timezone, named where it is not UTC
    return (f" from {start} to {until.astimezone(zone):%Y-%m-%d %H:%M}" if until else f" from {start} on") + named


def _timeline(mem: Memory, args: dict[str, Any]) -> ToolOutput:
    since, until, _ = _window_of(mem, args)
    session, limit = args["session"], args["limit"]
    kinds = set(args["kinds"] or ())
    if session is None and since is None and until is None:
        raise ArgumentError("session", "session: give a session, or a time window (window, or since/until)")
    # Read in time order from the session's index (or the time index for a window alone), the
    # archived events too (a session's history never hides what was archived), until one past
    # the limit: ranking and then sorting the top 1,000 started a 1,100-event session at turn
    # 100 (test_a_long_session_s_timeline_starts_at_its_first_event). Not an access.
    # A page goes on after the last event the cursor's page showed, by (time, id), the order read:
    # from that time on, skipping what it showed of that time (several events may share one).
    after = _after_of(args)
    start = since
    if after is not None and (since is None or ts_micros(since) < after[0]):
        start = from_micros(after[0])
    events: list[Episode] = []
    for ep in mem.episodes(start, until, include_archived=True, session=session):
        if after is not None and (ts_micros(ep.ts), ep.id) <= after:
            continue
        if not kinds or ep.kind in kinds:
            events.append(ep)
            if len(events) > limit:
                break
    shown, truncated = events[:limit], len(events) > limit
    zone = _zone(mem)
    scope = f"session {session}{_span(since, until, zone)}" if session is not None else _span(since, until, zone).strip()
    if kinds:
        scope += f"; kinds {', '.join(sorted(kinds))}"
    data: dict[str, Any] = {"scope": scope, "shown": len(shown), "truncated": truncated}
    if not truncated and after is None:
        data["total"] = len(shown)
    if not shown:
        text = f"No events {scope}" + (" after the cursor's page." if after is not None else ".")
    else:
        head = f"Timeline {scope}: {len(shown)} event{'s' if len(shown) != 1 else ''} in time order"
        if after is not None:
            head += " after the cursor's page"
        if truncated:  # not the next event's time as since: more events than a page may share one time
            last = shown[-1]
            data["cursor"] = _cursor(args, t=ts_micros(last.ts), a=last.id)
            head += f" (more exist: to read on, pass cursor {data['cursor']} with the same arguments)."
        else:
            head += "."
        if zone is not dt.UTC and since is None and until is None:  # (a span names the timezone already)
            head += f" Times in {zone}."
        text = "\n".join([head, *(_event_line(e, zone) for e in shown)])
    data["events"] = [_episode_data(e, listed=True) for e in shown]
    return ToolOutput(text, data)


# --- declarations ----------------------------------------------------------------------------

_EPISODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "episode id (time-sortable)"},
        "ts": {"type": "string", "description": "when it happened, ISO 8601 UTC"},
        "kind": {"type": "string"},
        "outcome": {"type": "string", "enum": list(OUTCOMES)},
        "summary": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "lesson": {"type": "string"},
        "what_we_tried": {"type": "string"},
        "what_happened": {"type": "string"},
        "why": {"type": "string"},
        "session": {"type": "string"},
        "tool": {"type": "string", "description": "tool_call only: the tool that ran"},
        "result": {"type": "string", "description": "tool_call only: the bounded result digest"},
        "content": {"type": "string", "description": "bounded digest; a cut ends with an explicit marker"},
        "decisions": {"type": "object"},
        "participants": {"type": "array", "items": {"type": "string"}},
        "artifact": {"type": "string"},
        "cites": {"type": "array", "items": {"type": "string"}},
        "relevance": {"type": "number", "description": "0-10"},
        "feedback": {"type": "number"},
        "status": {"type": "string", "enum": ["active", "summarized", "archived", "superseded"]},
        "key": {"type": "string", "description": "fact only: what the fact is about, e.g. 'ana/ui.theme'; the value is the summary"},
        "supersedes": {"type": "string", "description": "the earlier version this one corrects"},
        "supersede_reason": {"type": "string", "description": "why this version replaced the earlier one"},
        "superseded_by": {"type": "string", "description": "status superseded: the version that replaced this one"},
    },
    "required": ["id", "ts", "kind", "summary", "tags", "relevance", "status"],
}
_TRUNCATED: dict[str, Any] = {
    "type": "object",
    "description": "only when text was cut to the stored cap: field -> original and kept lengths (characters, sanitized text)",
    "additionalProperties": {
        "type": "object",
        "properties": {"original": {"type": "integer"}, "kept": {"type": "integer"}},
        "required": ["original", "kept"],
    },
}
_LIST_CUT: dict[str, Any] = {
    **_TRUNCATED,
    "description": (
        f"only when a field was cut for this list (text fields at {_LIST_CHARS} characters ending with a marker, decisions to the "
        f"items that fit in {_LIST_CHARS} characters as JSON, cites to the first {_LIST_CITES}): field -> its 'original' and "
        "'kept' lengths (characters; items for cites); get_episode shows the episode whole"
    ),
}
_LISTED_SCHEMA: dict[str, Any] = {
    **_EPISODE_SCHEMA,
    "description": f"an episode in a list: each text field at most {_LIST_CHARS} characters ('truncated' says what was cut)",
    "properties": {**_EPISODE_SCHEMA["properties"], "truncated": _LIST_CUT},
}
_MEMORY_SCHEMA: dict[str, Any] = {
    **_LISTED_SCHEMA,
    "properties": {
        **_LISTED_SCHEMA["properties"],
        "score": {"type": "number", "description": "rank score of this query"},
        "match_why": {"type": "array", "items": {"type": "string"}, "description": "why it matched this query"},
    },
    "required": [*_EPISODE_SCHEMA["required"], "score", "match_why"],
}
_INCLUDE_ARCHIVED = Param(
    "include_archived", "boolean",
    "Match archived episodes too, through what stays hot of them (kind, outcome, tags, time, one line, lesson).",
    default=False,
)  # fmt: skip
_INCLUDE_SUPERSEDED = Param(
    "include_superseded", "boolean",
    "Match the earlier versions of corrected episodes too (an answer's note says when they match).",
    default=False,
)  # fmt: skip
_RECALL_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "found": {"type": "boolean"},
        "searched": {"type": "string", "description": "the window, tags, terms and filters actually used"},
        "note": {"type": "string", "description": "how many matched, or plainly that nothing did"},
        "total": {"type": "integer", "description": "matches before the limit"},
        "partial": {"type": "boolean", "description": "the memories match only some words; 'unmatched' names the others"},
        "unmatched": {"type": "array", "items": {"type": "string"}, "description": "words of the query no memory holds"},
        "memories": {"type": "array", "items": _MEMORY_SCHEMA},
        "cursor": {"type": "string", "description": "recall_episodes: more matches exist; pass it back for the next page"},
    },
    "required": ["found", "searched", "note", "total", "memories"],
}
_HISTORY_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "searched": {"type": "string"},
        "total": {"type": "integer"},
        "archived": {"type": "integer", "description": "of total: attempts archived to cold storage (counted from what stays hot)"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}, "description": "attempts by outcome"},
        "lessons": {
            "type": "array",
            "items": {"type": "string"},
            "description": f"each once, newest first; each at most {_LIST_CHARS} characters (a cut ends with a marker)",
        },
        "attempts": {"type": "array", "items": _LISTED_SCHEMA},
    },
    "required": ["summary", "searched", "total", "counts", "lessons", "attempts"],
}
_EPISODE_OUTPUT: dict[str, Any] = {"type": "object", "properties": {"episode": _EPISODE_SCHEMA}, "required": ["episode"]}
_FEEDBACK_OUTPUT: dict[str, Any] = {"type": "object", "properties": {"episode": _LISTED_SCHEMA}, "required": ["episode"]}
_SESSION_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["closed", "already_closed", "nothing_captured", "refused", "failed", "waiting"]},
        "closed": {"type": "boolean", "description": "the session is closed (now or earlier)"},
        "reason": {"type": "string"},
        "events": {"type": "integer", "description": "captured events read"},
        "attempts": {"type": "integer", "description": "answers asked of the distiller"},
        "rejected": {"type": "array", "items": {"type": "string"}, "description": "why each refused answer was refused"},
        "episode": _EPISODE_SCHEMA,
    },
    "required": ["status", "closed", "reason", "events"],
}
_GET_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "episode": _EPISODE_SCHEMA,
        "versions": {"type": "array", "items": {"type": "string"}, "description": "ids of every version, oldest first"},
    },
    "required": ["episode", "versions"],
}
_SUPERSEDE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "episode": _EPISODE_SCHEMA,
        "superseded": {"type": "string", "description": "the id of the earlier version"},
        "truncated": _TRUNCATED,
    },
    "required": ["episode", "superseded"],
}
_FORGET_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "erased": {
            "type": "array",
            "items": {"type": "string"},
            "description": "every id erased: those given, their versions, derived summaries",
        },
        "count": {"type": "integer"},
        "audit_id": {"type": "string", "description": "the audit record of the erasure (ids and hashes, no content)"},
        "entries": {"type": "array", "items": {"type": "string"}, "description": "knowledge entries citing them, erased too"},
    },
    "required": ["erased", "count", "audit_id"],
}
_SUPERSEDE_FIELDS = ("summary", "outcome", "tags", "lesson", "what_we_tried", "what_happened", "why", "content", "decisions",
                     "artifact", "participants", "result")  # fmt: skip
_ENTRY_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entry": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "state": {"type": "string", "enum": ["pending", "approved", "rejected"]},
                "visibility": {"type": "string"},
                "cites": {"type": "array", "items": {"type": "string"}},
            },
        }
    },
    "required": ["entry"],
}
_TIMELINE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scope": {"type": "string"},
        "shown": {"type": "integer"},
        "total": {"type": "integer", "description": "events in scope (absent when truncated, and on a page a cursor gave)"},
        "truncated": {"type": "boolean", "description": "more events follow the ones shown"},
        "cursor": {
            "type": "string",
            "description": "when truncated: pass it back with the same arguments for the events after the last one shown",
        },
        "events": {"type": "array", "items": _LISTED_SCHEMA},
    },
    "required": ["scope", "shown", "truncated", "events"],
}

_WRITE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"episode": _EPISODE_SCHEMA, "truncated": _TRUNCATED},
    "required": ["episode"],
}
_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "owner": {"type": "string", "description": "whose lesson it is (another owner's when shared with your team)"},
        "text": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "cites": {
            "type": "array",
            "items": {"type": "string"},
            "description": "the episodes it derives from (yours only: another owner's lesson names none of its owner's episodes)",
        },
        "visibility": {"type": "string"},
        "shared_with": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "owner", "text", "tags", "cites", "visibility"],
}
_KNOWLEDGE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"entries": {"type": "array", "items": _ENTRY_SCHEMA}},
    "required": ["entries"],
}
_PREPARE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string"},
        "context": {"type": "string", "description": "the block to put in a prompt, within max_chars"},
        "patterns": {"type": "integer", "description": "patterns in the context"},
        "knowledge": {"type": "array", "items": {"type": "string"}, "description": "ids of the knowledge entries in the context"},
        "records": {"type": "array", "items": _MEMORY_SCHEMA, "description": "the past records in the context (within max_chars)"},
        "lessons": {
            "type": "array",
            "items": _MEMORY_SCHEMA,
            "description": "earlier failures in the context, holding a lesson the records do not state",
        },
        "missing_names": {
            "type": "array",
            "items": {"type": "string"},
            "description": "names in the task no memory holds: no record about other names stands in for them",
        },
        "left_out": {"type": "integer", "description": "items that did not fit in max_chars (neither in the context nor listed here)"},
    },
    "required": ["task", "context", "patterns", "knowledge", "records", "lessons", "missing_names", "left_out"],
}

_WINDOW = Param(
    "window", "string",
    "Time window in plain language, e.g. 'yesterday', 'last week', 'past 3 days', 'in May', 'since Monday', "
    "'on 2026-07-01'. Use this or since/until.",
    max_length=100,
)  # fmt: skip
_SINCE = Param("since", "string", "Start of the window (inclusive), ISO date or datetime; UTC if no zone.", max_length=40)
_UNTIL = Param("until", "string", "End of the window (exclusive), ISO date or datetime; UTC if no zone.", max_length=40)
_TAGS = Param(
    "tags",
    "array",
    "Tags that must all be present, e.g. ['project-x', 'deploy'] ('Project X' is normalised).",
    max_length=MAX_TAGS,
    tag_items=True,
)
_TEXT = Param("text", "string", "Words to search for (at least one must occur); ranked by BM25.", max_length=1000)


def tool_specs(settings: Settings, *, judges_outcome: bool = False) -> list[ToolSpec]:
    """The tools for a database with these settings (its typed kinds shape the schemas);
    ``judges_outcome``: its distiller judges a session's outcome, so end_session may omit it."""
    typed = tuple(settings.typed_kinds)
    kinds = (*typed, *BUILTIN_KINDS)
    kinds_help = (
        f"Episode kinds: {', '.join(typed)} (tasks with an outcome); exchange (a conversation turn); "
        "tool_call (a tool run with input and result); summary (made by maintenance); fact (a durable fact or preference "
        "under a key, e.g. 'ana/ui.theme')."
    )
    cap = settings.digest_chars
    kept = (
        f"Stored text keeps at most {cap:,} characters (this database's digest_chars): longer text is sanitized, then cut "
        "with a marker, and the reply's 'truncated' gives the original and kept lengths."
    )
    text_in = max(4000, 2 * cap)  # a field's input: twice what is kept, so a stored one read back and edited is taken
    return [
        ToolSpec(
            "recall_episodes", "Recall episodes",
            "Structured search of this memory: episodes matching every filter given (time window, tags, text, kinds, "
            "outcome, session), best first. Use it before acting, to reuse what worked and avoid repeating failures. "
            "When nothing matches it says so plainly and shows what it searched. " + kinds_help,
            (
                _WINDOW, _SINCE, _UNTIL, _TAGS,
                Param("any_tags", "array", "Tags of which at least one must be present.", max_length=MAX_TAGS, tag_items=True),
                _TEXT,
                Param("kinds", "array", "Only these kinds (any of them).", enum=kinds, max_length=len(kinds)),
                Param("outcome", "string", "Only episodes with this outcome.", enum=OUTCOMES),
                Param("session", "string", "Only episodes of this session id.", max_length=128),
                Param("limit", "integer", "Most episodes to return (a page; more pages through cursor).", minimum=1, maximum=50,
                      default=5),
                _INCLUDE_ARCHIVED,
                _INCLUDE_SUPERSEDED,
                Param("include_told", "boolean", "With a window: also the episodes recorded outside it whose text tells of a "
                      "time in it ('the deploy failed yesterday', recorded the day after). ask always includes them.",
                      default=False),
                Param("cursor", "string", "The cursor a previous page returned, to get the next page of the same query "
                      "(same arguments; limit may change).", max_length=200),
            ),
            _RECALL_OUTPUT, _recall_episodes, windowed=True, counts_access=True,
        ),
        ToolSpec(
            "ask", "Ask the memory",
            "Ask a plain-language question, e.g. 'What happened with Project X last week?' or 'Any billing failures "
            "in the past 10 days?'. Time phrases become a window (also one given by an event, 'after the outage', placed "
            "at the newest memory of it; 'the last three deploys' asks for the newest, in time order; one of the future, "
            "'next week', 'tomorrow', 'what is on Friday?', a window ahead, holding the plans memories told of it), known tags become "
            "tag filters, outcome words an outcome "
            "filter (for 'Did the deploy fail?' the note also tells of the attempts that went otherwise), preference words "
            "('prefer', 'facts') the owner's facts, and the rest ranks by text. The answer says "
            "what it searched; when nothing matches it says so.",
            (
                Param("question", "string", "The question, in plain language.", required=True, max_length=1000),
                Param("limit", "integer", "Most episodes to return.", minimum=1, maximum=50, default=5),
                _INCLUDE_ARCHIVED,
                _INCLUDE_SUPERSEDED,
            ),
            _RECALL_OUTPUT, _ask, counts_access=True,
        ),
        ToolSpec(
            "restore_episode", "Restore an archived episode",
            "Bring an archived episode's full record back from cold storage into the active memory (answers say when "
            "archived episodes match; recall_episodes or ask with include_archived shows their ids). Audited.",
            (
                Param("episode_id", "string", "The archived episode's id.", required=True, max_length=64),
            ),
            _EPISODE_OUTPUT, _restore_episode, read_only=False,
        ),
        ToolSpec(
            "get_episode", "Get one episode whole",
            "One of your episodes whole, by id: every field as stored (lists cut each text field at "
            f"{_LIST_CHARS} characters, and the decisions and cites) and the ids of all its versions. Stored text is a bounded "
            f"digest: each field keeps at most {cap:,} characters ({2 * cap + 32:,} for an exchange's two sides), and text cut when it "
            "was recorded ends with a marker giving its original length. An earlier, superseded version is shown too, "
            "marked. Archived episodes need restore_episode first.",
            (
                Param("episode_id", "string", "The episode's id, as recall_episodes, ask, history or timeline show it.",
                      required=True, max_length=64),
            ),
            _GET_OUTPUT, _get_episode, counts_access=True,
        ),
        ToolSpec(
            "supersede_episode", "Correct an episode",
            "Correct one of your episodes without overwriting it: a new version with the fields you give changed "
            "(the others kept; a fact's text is its value, so a new text keeps its old content and decisions only if given again) "
            "replaces it in every answer, citing it; the earlier version is kept, marked superseded, "
            "and reachable through get_episode. Outcomes stay honest: a typed episode keeps success, partial or failure, "
            "and a corrected outcome is recorded with your reason. Audited; personal data is replaced by placeholders.",
            (
                Param("episode_id", "string", "The id of the current version to correct.", required=True, max_length=64),
                Param("reason", "string", "Why the episode is corrected (kept on the new version and in the audit trail).",
                      required=True, max_length=500),
                Param("summary", "string", "The corrected summary.", max_length=500),
                Param("outcome", "string", "The corrected outcome.", enum=OUTCOMES),
                Param("tags", "array", "The corrected tags (replacing the old ones).", max_length=MAX_TAGS, tag_items=True),
                # as record_episode takes them: a field read back whole (its cut marker too) and corrected fits
                Param("lesson", "string", f"The corrected lesson. {kept}", max_length=text_in),
                Param("what_we_tried", "string", f"The corrected approach. {kept}", max_length=text_in),
                Param("what_happened", "string", f"What actually happened. {kept}", max_length=text_in),
                Param("why", "string", f"Why it ended this way. {kept}", max_length=text_in),
                Param("content", "string", f"The corrected detail. {kept}", max_length=100_000),
                Param("decisions", "object", f"The corrected decisions, a JSON object of at most {DECISIONS_CHARS:,} characters "
                      f"as JSON and {MAX_DEPTH} levels of nesting below it.", max_length=DECISIONS_CHARS, max_depth=MAX_DEPTH),
                Param("artifact", "string", "The corrected link or path.", max_length=2000),
                Param("participants", "array", "The corrected participants.",
                      max_length=MAX_PARTICIPANTS, item_max_length=PARTICIPANT_CHARS),
                Param("result", "string", f"A tool call's corrected result (at most {cap:,} characters kept).", max_length=100_000),
            ),
            _SUPERSEDE_OUTPUT, _supersede_episode, read_only=False,
        ),
        ToolSpec(
            "forget_episodes", "Forget episodes for good",
            "Erase some of your episodes for good: each one, every version of it and the summaries derived from it leave "
            "hot and cold storage and every index, and knowledge citing them goes too. Irreversible. The audit record "
            "keeps your reason, the ids and content hashes, never the content.",
            (
                Param("episode_ids", "array", "Ids of the episodes to erase.", required=True, max_length=50),
                Param("reason", "string", "Why they are erased (kept in the audit trail).", required=True, max_length=500),
            ),
            _FORGET_OUTPUT, _forget_episodes, read_only=False, destructive=True,
        ),
        ToolSpec(
            "history", "History of past attempts",
            "Outcomes of past attempts at a kind of task: counts by outcome, the latest attempts, the last failure and "
            "the lessons learned. Use it before retrying something (e.g. kind 'debug' with tags ['twilio']).",
            (
                Param("kind", "string", "Only this kind of episode.", enum=kinds),
                _TAGS,
                # not _TEXT: history counts attempts, and one holding only some of a task's words is other work
                Param("text", "string", "Words every attempt must hold, all of them (an attempt at 'twilio webhook retry' "
                      "holds all three); attempts are counted and listed newest first, not ranked by text.", max_length=1000),
                _WINDOW, _SINCE, _UNTIL,
                Param("limit", "integer", "Most attempts to list (counts cover all).", minimum=1, maximum=50, default=10),
            ),
            _HISTORY_OUTPUT, _history, windowed=True, counts_access=True,
        ),
        ToolSpec(
            "record_episode", "Record an episode",
            "Record one finished piece of work in this memory, with an honest outcome: success, partial or failure "
            "(pick the closest; no hedging). Add a lesson when there is one: it is what later recalls surface. "
            "Personal data (emails, phone numbers, keys...) is replaced by placeholders before anything is written.",
            (
                Param("kind", "string", "What sort of work this was.", required=True, enum=typed),
                Param("summary", "string", "One or two sentences: what happened.", required=True, max_length=500),
                Param("outcome", "string", "How it ended.", required=True, enum=OUTCOMES),
                Param("tags", "array", "Topics, projects or systems, e.g. ['project-x', 'deploy'].", max_length=MAX_TAGS, tag_items=True),
                Param("lesson", "string", f"What to do (or avoid) next time. {kept}", max_length=text_in),
                Param("what_we_tried", "string", f"The approach taken. {kept}", max_length=text_in),
                Param("what_happened", "string", f"What actually happened. {kept}", max_length=text_in),
                Param("why", "string", f"Why it ended this way. {kept}", max_length=text_in),
                Param("content", "string", f"Longer detail. {kept}", max_length=100_000),
                Param("decisions", "object", "Decisions as a JSON object, e.g. {\"action\": \"rollback\", \"confidence\": 8}; "
                      "its keys and string values are found by their words, as the text is ('what did we decide about "
                      f"the rollback?'); at most {DECISIONS_CHARS:,} characters as JSON and {MAX_DEPTH} levels of nesting below it "
                      "(objects and arrays inside one another).", max_length=DECISIONS_CHARS, max_depth=MAX_DEPTH),
                Param("session", "string", "Session id this belongs to (letters, digits, _.:@/+-).", max_length=128),
                Param("artifact", "string", "A link or path to what was produced.", max_length=2000),
                Param("participants", "array", "Who took part.", max_length=MAX_PARTICIPANTS, item_max_length=PARTICIPANT_CHARS),
                Param("ts", "string", "When it happened, ISO datetime (UTC if no zone); default now.", max_length=40),
            ),
            _WRITE_OUTPUT, _record_episode, read_only=False,
        ),
        ToolSpec(
            "record_fact", "Record a fact",
            "Keep a durable fact or preference under a key, e.g. 'ana/ui.theme' = 'dark mode'. Recording a key again replaces "
            "its value (the earlier one is kept as a version); the same value and tags again change nothing. ask answers from "
            "facts ('what does Ana prefer?'). Personal data is replaced by placeholders before anything is written.",
            (
                Param("key", "string", "What the fact is about, e.g. 'ana/ui.theme' (letters, digits, _.:@/+-).",
                      required=True, max_length=128),
                Param("value", "string", "The fact itself, e.g. 'dark mode'.", required=True, max_length=500),
                Param("tags", "array", "Topics, e.g. ['ui'].", max_length=MAX_TAGS, tag_items=True),
            ),
            _WRITE_OUTPUT, _record_fact, read_only=False, idempotent=True,
        ),
        ToolSpec(
            "end_session", "End a session",
            "Say a session is over: its captured exchanges and tool calls become one episode of the kind given, with an "
            "honest outcome (success, partial or failure) and what was tried, what happened and the lesson, citing them. "
            + ("Leave outcome out to have it judged from the events; a hedged one is refused. " if judges_outcome
               else "Give the outcome: this memory never guesses one. ")
            + "A session ends once: ending it again, or one with nothing captured, writes nothing and says so.",
            (
                Param("session", "string", "The session id the exchanges and tool calls were captured under.",
                      required=True, max_length=128),
                Param("kind", "string", "What sort of work the session was.", required=True, enum=typed),
                Param("outcome", "string", "How it ended" + (" (judged from the events when left out)." if judges_outcome else "."),
                      required=not judges_outcome, enum=OUTCOMES),
                Param("tags", "array", "Topics to add to the events' own, e.g. ['deploy'].", max_length=16, tag_items=True),
            ),
            _SESSION_OUTPUT, _end_session, read_only=False, idempotent=True,
        ),
        ToolSpec(
            "record_feedback", "Rate a memory",
            "Say how useful an episode was when you used it: from -1 (misleading) to 1 (exactly right). The latest "
            "feedback counts and changes how the episode ranks later.",
            (
                Param("episode_id", "string", "The episode's id, as shown by recall_episodes, ask, history or timeline.",
                      required=True, max_length=64),
                Param("value", "number", "Usefulness from -1 to 1.", required=True, minimum=-1.0, maximum=1.0),
            ),
            _FEEDBACK_OUTPUT, _record_feedback, read_only=False,
        ),
        ToolSpec(
            "record_exchange", "Record an exchange",
            "Capture one conversation turn of a session as it happens: the user's message and the response, each kept as a "
            f"bounded digest of at most {cap:,} characters (cut with a marker; the reply's 'truncated' says by how much), "
            "personal data replaced by placeholders. end_session later turns a session's capture into one episode.",
            (
                Param("session", "string", "The session id (letters, digits, _.:@/+-).", required=True, max_length=128),
                Param("user_message", "string", f"What the user said. {kept}", required=True, max_length=100_000),
                Param("response", "string", f"What was answered. {kept}", required=True, max_length=100_000),
                Param("tags", "array", "Topics, e.g. ['deploy'].", max_length=16, tag_items=True),
            ),
            _WRITE_OUTPUT, _record_exchange, read_only=False,
        ),
        ToolSpec(
            "record_tool_call", "Record a tool call",
            "Capture one tool call of a session as it happens: the tool, its input and (now or later with "
            f"record_tool_result) its result, each kept as a bounded digest of at most {cap:,} characters as JSON (cut with "
            "a marker; the reply's 'truncated' says by how much). timeline shows a session's calls step by step.",
            (
                Param("session", "string", "The session id (letters, digits, _.:@/+-).", required=True, max_length=128),
                Param("tool", "string", "The tool's name.", required=True, max_length=128),
                Param("input", "object", f"The tool's input, a JSON object of at most {DECISIONS_CHARS:,} characters as JSON.",
                      required=True, max_length=DECISIONS_CHARS),
                Param("result", "string", f"The result, when it is already known. {kept}", max_length=100_000),
                Param("tags", "array", "Topics, e.g. ['deploy'].", max_length=16, tag_items=True),
            ),
            _WRITE_OUTPUT, _record_tool_call, read_only=False,
        ),
        ToolSpec(
            "record_tool_result", "Record a tool call's result",
            "Attach the result to one of your earlier tool calls (record_tool_call gave its id), once: the same result "
            "again changes nothing, another is refused (correct a wrong one with supersede_episode and its result). "
            f"Kept as a bounded digest of at most {cap:,} characters.",
            (
                Param("call_id", "string", "The tool call's id.", required=True, max_length=64),
                Param("result", "string", f"The result. {kept}", required=True, max_length=100_000),
            ),
            _WRITE_OUTPUT, _record_tool_result, read_only=False,
        ),
        ToolSpec(
            "knowledge", "Read approved knowledge",
            "The approved lessons you may use: your own, and those shared with your teams at a ceremony (with their "
            "owner). Lessons you save or reflection proposes appear here only once a person approves them. Best match "
            "first when text or tags are given.",
            (
                Param("text", "string", "Words to match, e.g. 'deploy migrations'.", max_length=1000),
                Param("tags", "array", "Topics the lessons carry.", max_length=16, tag_items=True),
                Param("limit", "integer", "Most lessons to return.", minimum=1, maximum=50, default=10),
            ),
            _KNOWLEDGE_OUTPUT, _knowledge, counts_access=True,
        ),
        ToolSpec(
            "prepare", "Prepare for a task",
            "Context for a new task in one block: relevant patterns first, then approved knowledge, then the most "
            "similar past records with their outcomes and lessons, within max_chars. Use it before starting work.",
            (
                Param("task", "string", "The task, in plain language.", required=True, max_length=1000),
                Param("kind", "string", "The kind of task, when known.", enum=typed),
                Param("tags", "array", "Topics, e.g. ['deploy'].", max_length=16, tag_items=True),
                Param("max_chars", "integer", "Size of the context block.", minimum=200, maximum=20_000, default=2000),
                Param("limit", "integer", "Most past records to include.", minimum=1, maximum=20, default=5),
            ),
            _PREPARE_OUTPUT, _prepare, counts_access=True,
        ),
        ToolSpec(
            "save_lesson", "Save a lesson",
            "Propose a durable lesson learned, citing the episodes it comes from. It lands pending and private in the "
            "human review queue, like every write to knowledge; near-duplicates of approved, pending or rejected "
            "lessons are refused.",
            (
                Param("text", "string", "The lesson, one or two sentences.", required=True, max_length=2000),
                Param("cites", "array", "Ids of your episodes this lesson derives from.", max_length=50),
                Param("tags", "array", "Topics, e.g. ['deploy'].", max_length=16, tag_items=True),
            ),
            _ENTRY_OUTPUT, _save_lesson, read_only=False,
        ),
        ToolSpec(
            "timeline", "Timeline",
            "The events of one session, or of a time window, in time order, the earliest first: kinds, outcomes, "
            "exchanges and tool calls with their inputs and results, archived ones too. Give a session, a window, or both; "
            "where more events follow, the result's cursor reads on. Reads only: no access is counted.",
            (
                Param("session", "string", "Session id.", max_length=128),
                _WINDOW, _SINCE, _UNTIL,
                Param("kinds", "array", "Only these kinds.", enum=kinds, max_length=len(kinds)),
                Param("limit", "integer", "Most events to show (the earliest first).", minimum=1, maximum=200, default=50),
                Param("cursor", "string", "The cursor a previous page returned, to get the events after it "
                      "(same arguments; limit may change).", max_length=200),
            ),
            _TIMELINE_OUTPUT, _timeline, windowed=True,
        ),
    ]  # fmt: skip


# --- configuration ---------------------------------------------------------------------------


SERVE_TABLES = ("reviewers", "teams", "schedule", "llm")
"""Tables of the same config file that ``memdb serve`` reads (and checks); ``memdb mcp`` ignores them."""


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML config at ``path``, refused unless it is its owner's alone (it holds bearer tokens).

    The file must have mode 0600 or stricter: one that group or others may read or write is
    refused, saying how to fix it. Tables other than ``[tokens]`` and ``SERVE_TABLES`` are refused.
    """
    where = os.fspath(path)
    try:
        with open(where, "rb") as f:
            mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
            if mode & 0o077 and os.name == "posix":
                # a bearer token is a password: refused before it is read (tests/surfaces/test_file_modes.py)
                raise ConfigError(
                    f"config {where!r}: mode {mode:04o} lets other users read or change its bearer tokens "
                    f"(make it the owner's alone: chmod 600 {shlex.quote(where)})"
                )
            text = f.read().decode()  # the text too: which tables have a header in it
            config = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"config {where!r}: no such file") from None
    except UnicodeDecodeError as exc:  # (its message would show the byte, which may be a token's)
        raise ConfigError(f"config {where!r}: not valid TOML (not UTF-8 text, at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {where!r}: not valid TOML ({exc})") from None
    unknown = sorted(set(config) - {"tokens", *SERVE_TABLES})
    if unknown:
        also = ", ".join(SERVE_TABLES)
        tables = [k for k in unknown if isinstance(config[k], dict)]
        # A misspelled table ("[token]") is named when its header is in the file; a token written
        # with a dot before the [tokens] header (k9Xq.Yb3N = "ana") is a table too, named after
        # the token's first half, and is not (test_token_file_errors_never_echo_any_part_of_a_token).
        named = [k for k in tables if len(k) < MIN_TOKEN_CHARS and re.search(rf"^\s*\[\s*{re.escape(k)}\s*[].]", text, re.M)]
        if named:
            raise ConfigError(f"config {where!r}: unknown key {named[0]!r} (expected a [tokens] table; memdb serve also reads {also})")
        if tables:
            raise ConfigError(
                f"config {where!r}: {len(tables)} unknown table(s), not shown as they may be part of a token "
                f"(tokens go in a [tokens] table, quoted when they hold a dot; memdb serve also reads {also})"
            )
        # a key of a value is never echoed: a token written before its [tokens] header is one (a token is a password)
        raise ConfigError(
            f"config {where!r}: {len(unknown)} key(s) outside any table, not shown as they may be tokens "
            f"(tokens go in a [tokens] table; memdb serve also reads {also})"
        )
    return config


def load_tokens(path: str | os.PathLike[str]) -> dict[str, str]:
    """Bearer token -> owner from a TOML file with a ``[tokens]`` table; ConfigError says what is wrong.

    The file is read as ``read_config`` reads it. Errors never echo a token, nor any part of one
    (a sub-table's keys, the rest of a dotted key): they point at its position instead
    (test_token_file_errors_never_echo_any_part_of_a_token). A token that could never
    authenticate is refused here rather than served to 401s: one with a character outside
    printable ASCII (an HTTP header carries ASCII), or with white space around it (the header's
    is stripped) (test_tokens_that_could_never_authenticate_are_refused_at_load).
    """
    where = os.fspath(path)
    tokens = read_config(path).get("tokens")
    if not isinstance(tokens, dict) or not tokens:
        raise ConfigError(f'config {where!r}: no [tokens] table (add e.g. [tokens] "<long random token>" = "ana")')
    out: dict[str, str] = {}
    for i, (token, owner) in enumerate(tokens.items(), 1):
        at = f"config {where!r}: token #{i}"
        if isinstance(owner, dict):  # [tokens.NAME], or an unquoted token with a dot: its keys are tokens
            raise ConfigError(
                f"{at} maps to a table, not an owner name (a [tokens.NAME] sub-table, or a token with a dot left unquoted: "
                'write each token directly under [tokens], quoted, as "<token>" = "<owner>")'
            )
        if not isinstance(owner, str):
            what = {bool: "true or false", int: "a number", float: "a number", list: "a list"}.get(type(owner), "a date or time")
            raise ConfigError(f'{at} maps to {what}, not an owner name (write "<token>" = "<owner>")')
        if len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(f"{at} is shorter than {MIN_TOKEN_CHARS} characters (use a long random one)")
        if token != token.strip():
            raise ConfigError(f"{at} begins or ends with white space, which no request can send (remove it from the file)")
        bad = next((n for n, c in enumerate(token, 1) if not " " <= c <= "~"), None)
        if bad is not None:
            raise ConfigError(
                f"{at}: character {bad} is outside printable ASCII, which an HTTP header cannot carry reliably "
                "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        if owner in tokens:  # swapped, or pasted twice: a token as an owner's name would be shown and stored
            raise ConfigError(f'{at} maps to a token, not an owner name (write "<token>" = "<owner>")')
        try:
            out[token] = check_owner(owner)
        except ValidationError as exc:
            # the owner's name is shown only when it cannot be a token (a long one may be one, swapped in)
            reason = str(exc)
            if len(owner) >= MIN_TOKEN_CHARS:
                reason = "owner (not shown: it may be a token): " + reason.removeprefix(f"owner {shown(owner)}: ")
            raise ConfigError(f"{at}: {reason}") from None
    return out


def owner_of_token(token: str, tokens: Mapping[str, str]) -> str | None:
    """The owner of ``token`` (white space around it ignored), compared with every configured
    token in constant time: their SHA-256 digests are compared, all of one length, so the timing
    shows neither a token's length nor how much of one a guess got right."""
    given = hashlib.sha256(token.strip().encode()).digest()
    owner = None
    for known, name in tokens.items():
        if hmac.compare_digest(given, hashlib.sha256(known.encode()).digest()):
            owner = name
    return owner


def _token_owner(authorization: str | None, tokens: Mapping[str, str]) -> str | None:
    """The owner of a ``Bearer`` token (``owner_of_token``)."""
    if not authorization or not authorization.lower().startswith("bearer "):
        return None
    return owner_of_token(authorization[7:], tokens)


class BearerAuth:
    """ASGI middleware: every HTTP request needs a known bearer token, or it gets 401; a client
    address that tried too many wrong ones gets 429 with ``Retry-After`` (``throttle``, shared
    with the dashboard's sign-in in ``memdb serve``; ``memdb.surfaces.throttle``)."""

    def __init__(self, app: ASGIApp, tokens: Mapping[str, str], throttle: Throttle | None = None) -> None:
        self.app = app
        self.tokens = dict(tokens)
        self.throttle = throttle if throttle is not None else Throttle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            address = client_address(scope)
            # locked: refused before the token is looked at, so a guess during a lock tells nothing
            wait = self.throttle.retry_after(address)
            if wait is None:
                # exactly one Authorization header: with two, a check of one and a use of the other could disagree
                given = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
                if len(given) == 1 and _token_owner(given[0], self.tokens) is not None:
                    await self.app(scope, receive, send)
                    return
                if given:  # a tried value; a request without one (a CORS preflight, a probe) is no guess
                    wait = self.throttle.failed(address, "MCP over HTTP")
                if wait is None:
                    await _refuse(send, 401, "unauthorized", "missing or unknown bearer token (one Authorization header)")
                    return
            await _refuse(send, 429, "too_many_requests", f"too many failed bearer tokens from this address: retry after {wait} s", wait)
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, error: str, description: str, retry_after: int | None = None) -> None:
    """A JSON refusal of ``BearerAuth`` (it names no token: none is ever echoed)."""
    body = json.dumps({"error": error, "error_description": description}).encode()
    headers = [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="memdb"'),
               (b"content-length", str(len(body)).encode())]  # fmt: skip
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# --- the SDK wiring --------------------------------------------------------------------------


def _require_sdk() -> None:
    try:
        import mcp.server  # noqa: F401
    except ImportError as exc:
        if (exc.name or "").split(".")[0] == "mcp":
            raise McpExtraMissingError(MISSING_EXTRA) from None
        # installed but broken (a missing dependency, a shadowing module): say so, not "install it"
        raise McpExtraMissingError(f"memdb mcp: the 'mcp' SDK is installed but failed to import: {exc}") from None
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp")
    except PackageNotFoundError:  # vendored or on sys.path without metadata: trust the import
        return
    if not found.split(".")[0].isdigit() or int(found.split(".")[0]) != 2:
        # mcp 1.x has another server API (decorators, camelCase fields): fail clearly, not mid-request
        raise McpExtraMissingError(f"{MISSING_EXTRA} (found mcp {found}; memdb needs mcp 2.x)")


def _error_result(tool: ToolSpec, exc: MemdbError) -> CallToolResult:
    from mcp import types

    message = _in_tool_terms(str(exc))  # "restore('id') brings it back" is no call an agent can make
    error: dict[str, Any] = {"type": type(exc).__name__, "message": message}
    if isinstance(exc, ArgumentError):
        error["argument"] = exc.argument
        text = f"{tool.name}: invalid argument: {message}"
    elif isinstance(exc, ValidationError):
        text = f"{tool.name}: invalid arguments: {message}"
    elif isinstance(exc, NotFoundError):
        text = f"{tool.name}: not found: {message}"
    else:
        text = f"{tool.name}: {message}"
    if not tool.read_only:
        text += " (nothing was written)"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content={"error": error}, is_error=True)


def _internal_error_result(tool: ToolSpec, exc: Exception) -> CallToolResult:
    """An unexpected exception as a tool error: its type only, since its message and the
    traceback may hold argument values (personal data); the traceback goes to stderr once."""
    from mcp import types

    print(f"memdb mcp: {tool.name}: unexpected {type(exc).__name__}", file=sys.stderr)
    traceback.print_exception(exc, file=sys.stderr)
    text = f"{tool.name}: internal error ({type(exc).__name__}); the server's log has the details"
    if not tool.read_only:
        text += " (whether anything was written is unknown: check with recall_episodes)"
    error = {"type": "InternalError", "exception": type(exc).__name__}
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content={"error": error}, is_error=True)


def build_server(db: memdb.Database, *, owner: str | None = None, tokens: Mapping[str, str] | None = None) -> Server[Any]:
    """An MCP server over ``db`` for one fixed ``owner`` (stdio), or per bearer token (HTTP, ``tokens``).

    Exactly one of ``owner`` and ``tokens`` is given; tool arguments never choose the owner.
    """
    _require_sdk()
    import anyio.to_thread
    from mcp import types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    if (owner is None) == (tokens is None):
        raise ConfigError("mcp server: give either an owner (stdio) or a token map (HTTP)")
    if tokens is not None:
        # a token an agent writes anywhere (not only after "Bearer") is stored as <SECRET_n>, never
        # raw: a random one has no shape the patterns know (test_a_served_token_is_never_stored)
        register_secrets(tokens)
    if owner is not None:
        db.owner(owner)  # validates the name now rather than on the first call
    # The tools as this database's settings shape them (typed kinds, digest_chars), made again when
    # another process changed the settings: every request reads them as saved now (refresh_settings),
    # so a team change or a new timezone is in force at the next call, not at a restart
    # (tests/surfaces/test_mcp_settings.py).
    built: list[tuple[Settings, dict[str, ToolSpec], list[types.Tool]]] = []

    def current() -> tuple[dict[str, ToolSpec], list[types.Tool]]:
        settings = db.refresh_settings()
        if built and built[-1][0] is settings:
            return built[-1][1], built[-1][2]
        specs = {spec.name: spec for spec in tool_specs(settings, judges_outcome=db.sessions.distiller.judges_outcome)}
        tools = [
            types.Tool(
                name=s.name, title=s.title, description=s.description, input_schema=s.input_schema(), output_schema=s.output_schema,
                annotations=types.ToolAnnotations(
                    title=s.title, read_only_hint=s.annotations()["read_only"], destructive_hint=s.destructive,
                    idempotent_hint=s.annotations()["idempotent"], open_world_hint=False,
                ),
            )
            for s in specs.values()
        ]  # fmt: skip
        built[:] = [(settings, specs, tools)]
        return specs, tools

    names = tuple(current()[0])  # the same tools whatever the settings: only their schemas follow them

    def owner_of(ctx: ServerRequestContext[Any, Any]) -> str:
        if tokens is None:
            assert owner is not None
            return owner
        request = ctx.request
        given = request.headers.getlist("authorization") if request is not None else []
        found = _token_owner(given[0], tokens) if len(given) == 1 else None
        if found is None:  # the middleware already refused such requests; never fall back to anyone
            raise MCPError(code=types.INVALID_REQUEST, message="unauthorized: missing or unknown bearer token")
        return found

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        _, tools = await anyio.to_thread.run_sync(current)  # a store read: off the event loop
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        if params.name not in names:
            raise MCPError(code=types.INVALID_PARAMS, message=f"tool {_shown(params.name)}: no such tool (tools: {', '.join(names)})")
        spec = built[-1][1][params.name]  # for an error before the settings are read; the call runs the current one
        mem = db.owner(owner_of(ctx))

        def execute() -> ToolOutput:
            nonlocal spec
            spec = current()[0][params.name]
            with span(f"execute_tool {spec.name}", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": spec.name}):
                out = spec.run(mem, spec.check_arguments(params.arguments))
                if spec.counts_access:
                    db.flush()  # reads count as accesses; make them durable rather than lost on a kill
            return out

        # Each call runs whole in a worker thread, so a slow call (one owner's ask over a large
        # memory) never stalls the event loop or another owner's calls; that is safe because a
        # transaction opens and ends in one thread and the store serializes writers
        # (tests/surfaces/test_mcp_dispatch.py).
        try:
            out = await anyio.to_thread.run_sync(execute)
        except MemdbError as exc:
            return _error_result(spec, exc)
        except Exception as exc:  # a bug: the client gets a tool error, the traceback goes to our stderr only
            return _internal_error_result(spec, exc)
        return types.CallToolResult(content=[types.TextContent(type="text", text=out.text)], structured_content=out.data)

    who = f"the memory of owner {owner!r}" if owner is not None else "the memory of the owner your token maps to"
    return Server(
        "memdb",
        version=memdb.__version__,
        title="memdb",
        instructions=(
            f"memdb holds {who}: episodes of past work with honest outcomes and lessons. "
            "Before a task, use prepare (or ask, recall_episodes, knowledge; history before retrying something); after it, record_episode "
            "with an honest outcome (or end_session when your exchanges and tool calls were captured); use record_feedback "
            "when a memory helped or misled you."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(db: memdb.Database, owner: str) -> None:
    """Serve ``owner``'s memory over stdin/stdout until the client closes the pipe."""
    _require_sdk()
    from mcp.server.stdio import stdio_server

    server = build_server(db, owner=owner)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def bind_port(port: int) -> socket.socket:
    """A socket bound to ``127.0.0.1:port``, so a busy port is a clear ConfigError before
    anything is announced (and nothing can take the port between the check and serving)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a closed server's TIME_WAIT is no obstacle
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--port {port}: cannot listen on {HOST}:{port}: {exc.strerror or exc} (pick another --port)") from None
    return sock


def http_app(db: memdb.Database, tokens: Mapping[str, str], *, throttle: Throttle | None = None) -> ASGIApp:
    """The ASGI app of ``memdb mcp --transport http``: the Host checked first (this machine's
    names: the SDK checks it only after the token, so a page of another site resolving its name
    to 127.0.0.1, DNS rebinding, could try tokens and lock this machine's clients out), then the
    bearer token (``BearerAuth``, throttled per client address), then MCP at ``/mcp``; one Host
    rule, ``memdb serve``'s (``memdb.surfaces.hosts``)."""
    _require_sdk()
    server = build_server(db, tokens=tokens)
    security = sdk_security(LOOPBACK_NAMES)
    mcp_app = server.streamable_http_app(stateless_http=True, json_response=True, host=HOST, transport_security=security)
    return HostCheck(BearerAuth(mcp_app, tokens, throttle), LOOPBACK_NAMES)


async def serve_http(db: memdb.Database, tokens: Mapping[str, str], port: int = DEFAULT_PORT, *, sock: socket.socket | None = None) -> None:
    """Serve streamable HTTP on ``127.0.0.1:port`` (``/mcp``, ``http_app``); each request's bearer token picks its owner.

    ``sock`` is a socket already bound to that port (``bind_port``); without it the port is
    bound here, and a busy one raises ConfigError. Stateless and JSON-only: no session
    outlives a request, so nothing of one token's requests is reachable from another's.
    """
    _require_sdk()
    import uvicorn

    sock = sock or bind_port(port)
    # no proxy in front: uvicorn would take X-Forwarded-For from any local client (its default trusts
    # 127.0.0.1, or $FORWARDED_ALLOW_IPS), and each guess would name an address of its own
    config = uvicorn.Config(http_app(db, tokens), host=HOST, port=port, log_level="warning", lifespan="on", proxy_headers=False)
    print(f"memdb mcp: serving {len(set(tokens.values()))} owner(s) on http://{HOST}:{port}/mcp", file=sys.stderr, flush=True)
    with sock:
        await uvicorn.Server(config).serve(sockets=[sock])


def open_served(command: str, db_path: str | os.PathLike[str], create: bool, **options: Any) -> memdb.Database:
    """The database a server (``memdb mcp``, ``memdb serve``) serves: only ``create`` makes one where
    there is none, since a mistyped ``--db`` served an empty one that answered "Nothing found" to
    every question, and a client shows no server's stderr."""
    try:
        return memdb.open(db_path, create=create, **options)
    except NotFoundError:
        where = redact_url(str(db_path)) if is_postgres_url(str(db_path)) else os.fspath(db_path)
        raise NotFoundError(
            f"--db {where}: no memdb database there (memdb {command} serves an existing one: pass --create to start a new one "
            "there, or make it first, e.g. memdb demo DIR)"
        ) from None


def run(
    db_path: str | os.PathLike[str],
    *,
    owner: str | None = None,
    transport: str = "stdio",
    port: int = DEFAULT_PORT,
    config: str | os.PathLike[str] | None = None,
    now: dt.datetime | None = None,
    create: bool = False,
) -> int:
    """Entry point of ``memdb mcp``: check the options, open the database, serve until stopped.

    ``now`` pins the database clock (for demos and tests: "last week" stays the same week);
    ``create`` starts a database where there is none (``open_served``).
    """
    _require_sdk()
    import anyio

    if transport == "stdio":
        owner = owner or os.environ.get("MEMDB_OWNER")
        if config is not None:
            raise ConfigError("--config: only for --transport http (stdio serves the one --owner)")
        if not owner:
            raise ConfigError("--owner: required for stdio (or set $MEMDB_OWNER)")
        check_owner(owner)
    elif transport == "http":
        if owner:
            raise ConfigError("--owner: not allowed with --transport http (each token in --config names its owner)")
        if config is None:
            raise ConfigError('--config: required for --transport http (a TOML file with [tokens] "<token>" = "<owner>")')
        if not 0 < port < 65536:
            raise ConfigError(f"--port {port}: must be from 1 to 65535")
        tokens = load_tokens(config)
    else:
        raise ConfigError(f"--transport {transport!r}: must be stdio or http")
    sock = bind_port(port) if transport == "http" else None  # a busy port fails here, before the database opens
    fixed = now
    try:
        with open_served("mcp", db_path, create, clock=(lambda: fixed) if fixed is not None else None) as db:
            if transport == "stdio":
                assert owner is not None
                anyio.run(serve_stdio, db, owner)
            else:
                anyio.run(partial(serve_http, db, tokens, port, sock=sock))
    finally:
        if sock is not None:
            sock.close()
    return 0
