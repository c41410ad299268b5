"""Execution timelines: what an agent did in a session, step by step, from captured tool calls.

A timeline is reconstruction, never re-execution: nothing here calls a tool, replays a
request or touches a live system. ``export`` writes a versioned JSON record that says so in
its own fields (``"executable": false``) and is written without execute permission.

Each step is one ``tool_call`` episode of the owner's session (from the session index, in
time order): the tool, its bounded and sanitized input, the result when one was captured,
and when it ran. Archived calls have left the session index and are not listed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import heapq
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdb.errors import ValidationError
from memdb.memory.episodes import Episodes
from memdb.memory.models import Episode, check_ident, utc
from memdb.memory.sanitize import shown

__all__ = ["FORMAT", "VERSION", "SessionCalls", "Step", "Timeline", "build", "export", "sessions"]

FORMAT = "memdb.governance.timeline"
VERSION = 1
NOTICE = (
    "Audit record of captured tool calls. Not executable: no API of memdb re-runs a tool or replays a request "
    "from it; inputs and results are bounded, sanitized digests, not the original payloads."
)


@dataclass(frozen=True)
class Step:
    """One tool call: its order in the session, what ran with what input, what came back, when."""

    step: int
    id: str
    tool: str
    input: str
    result: str | None
    at: dt.datetime
    offset_seconds: float
    since_previous_seconds: float | None

    @property
    def status(self) -> str:
        return "result captured" if self.result is not None else "no result captured"

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step, "id": self.id, "tool": self.tool, "input": self.input, "result": self.result,
            "status": self.status, "at": self.at.isoformat(), "offset_seconds": self.offset_seconds,
            "since_previous_seconds": self.since_previous_seconds,
        }  # fmt: skip


@dataclass(frozen=True)
class Timeline:
    """A session's tool calls in order, for one owner."""

    owner: str
    session: str
    steps: list[Step]

    @property
    def started(self) -> dt.datetime | None:
        return self.steps[0].at if self.steps else None

    @property
    def ended(self) -> dt.datetime | None:
        return self.steps[-1].at if self.steps else None

    def __len__(self) -> int:
        return len(self.steps)

    def __str__(self) -> str:
        if not self.steps:
            return f"session {self.session}: no tool calls captured"
        lines = [f"session {self.session}: {len(self.steps)} tool calls, {self.started:%Y-%m-%d %H:%M:%S} to {self.ended:%H:%M:%S} UTC"]
        for s in self.steps:
            result = (s.result or "(no result captured)").replace("\n", " ")
            lines.append(f"{s.step:>3}. +{s.offset_seconds:.1f}s {s.tool}({s.input.replace(chr(10), ' ')[:120]}) -> {result[:120]}")
        return "\n".join(lines)


@dataclass(frozen=True)
class SessionCalls:
    """One of an owner's sessions with tool calls: how many, how many of them archived, when the last ran."""

    session: str
    calls: int
    archived: int
    last: dt.datetime


def sessions(layer: Episodes, owner: str, limit: int | None = None) -> list[SessionCalls]:
    """``owner``'s sessions with tool calls, the latest first (the ``limit`` latest when given),
    read from the headers of the hot tool calls (the kind index) and of the archived episodes,
    which keep kind, session and time: a session whose calls maintain archived still has a
    timeline, and a list of the hot ones alone forgot it (tests/surfaces/web/test_after_a_year.py).
    Headers, never records: not an access.

    Both are walked newest first and stop at the ``limit``-th session; the sessions listed are
    then counted from their own indexes. Every view read every call the owner ever made (a
    review's find: 903 ms a view at 20,000 calls; test_timeline.py)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValidationError(f"limit {shown(limit)}: must be a non-negative int, or None for every session")
    seen: dict[str, list[Any]] = {}
    cut = False
    for h in heapq.merge(_calls(layer, owner, layer.ids_of_kind(owner, "tool_call", reverse=True)),
                         _calls(layer, owner, layer.archived_ids(owner, reverse=True)),
                         key=lambda h: (h["ts"], h["id"]), reverse=True):  # fmt: skip
        name = h.get("session")
        if not name:
            continue
        if name not in seen:
            if limit is not None and len(seen) >= limit:
                cut = True  # (the calls walked so far may miss older calls of the sessions listed)
                break
            seen[name] = [0, 0, h["ts"]]  # the first seen is the latest
        row = seen[name]
        row[0] += 1
        row[1] += h.get("status") == "archived"
    if cut:
        for name, row in seen.items():
            row[0], row[1] = _count(layer, owner, name)
    out = [SessionCalls(str(name), calls, archived, utc(last, "ts")) for name, (calls, archived, last) in seen.items()]
    return sorted(out, key=lambda s: (s.last, s.session), reverse=True)


def _calls(layer: Episodes, owner: str, ids: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The headers of the tool calls among ``ids``, each with its id."""
    for eid in ids:
        h = layer.header(owner, eid)
        if h is not None and h.get("kind") == "tool_call":
            yield {**h, "id": eid}


def _count(layer: Episodes, owner: str, session: str) -> tuple[int, int]:
    """A session's tool calls, and how many of them are archived, from its own indexes."""
    hot = sum(1 for _ in _calls(layer, owner, layer.ids_in_session(owner, session)))
    cold = sum(1 for _ in _calls(layer, owner, layer.archived_ids_in_session(owner, session)))
    return hot + cold, cold


def build(
    layer: Episodes, owner: str, session: str, read_archived: Callable[[str, Sequence[str]], list[Episode]] | None = None
) -> Timeline:
    """Reconstruct ``session``'s tool calls for ``owner`` (reads only; no access counted), the
    archived ones too when ``read_archived`` (``Lifecycle.read_archived``) reads them back."""
    check_ident("session", session)
    steps: list[Step] = []
    mem = layer.owner(owner)
    with layer.space.snapshot():
        episodes = [mem.peek(eid) for eid in layer.ids_in_session(owner, session)]
        if read_archived is not None:  # only the archived tool calls are read back from cold storage
            cold = [
                eid for eid in layer.archived_ids_in_session(owner, session) if (layer.header(owner, eid) or {}).get("kind") == "tool_call"
            ]
            episodes += read_archived(owner, cold)
    calls = sorted((e for e in episodes if e.kind == "tool_call"), key=lambda e: (e.ts, e.id))
    first = calls[0].ts if calls else None
    previous: dt.datetime | None = None
    for n, e in enumerate(calls, 1):
        assert first is not None
        steps.append(
            Step(
                step=n, id=e.id, tool=e.tool or "?", input=e.content, result=e.result, at=e.ts,
                offset_seconds=(e.ts - first).total_seconds(),
                since_previous_seconds=(e.ts - previous).total_seconds() if previous is not None else None,
            )
        )  # fmt: skip
        previous = e.ts
    return Timeline(owner, session, steps)


def export(
    layer: Episodes,
    owner: str,
    session: str,
    path: str | os.PathLike[str] | None = None,
    *,
    now: dt.datetime | None = None,
    overwrite: bool = False,
    read_archived: Callable[[str, Sequence[str]], list[Episode]] | None = None,
) -> dict[str, Any]:
    """The timeline as a versioned, non-executable JSON record (``build``'s, archived calls too
    with ``read_archived``); written to ``path`` when given
    (mode 0600: its owner's alone, never executable), and noted in the owner's audit trail.

    Raises ValidationError naming the path when it is not a writable file path (a directory,
    a missing parent, no permission); nothing is audited then.
    """
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ValidationError(f"export path {shown(path)}: give a file path (str or os.PathLike)")
    at = utc(now, "now") if now is not None else layer.now()
    timeline = build(layer, owner, session, read_archived)
    steps = [s.to_dict() for s in timeline.steps]
    digest = hashlib.sha256(json.dumps(steps, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    doc: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "executable": False, "replayable": False, "notice": NOTICE,
        "owner": owner, "session": session, "exported_at": at.isoformat(),
        "started": timeline.started.isoformat() if timeline.started else None,
        "ended": timeline.ended.isoformat() if timeline.ended else None,
        "step_count": len(steps), "steps_sha256": digest, "steps": steps,
    }  # fmt: skip
    if path is not None:
        target = Path(path)
        if target.is_dir():
            raise ValidationError(f"export path {shown(str(target))}: is a directory (give a file path inside it)")
        if target.exists() and not overwrite:
            raise ValidationError(f"export path {shown(str(target))}: exists (pass overwrite=True to replace it)")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        try:
            fd = os.open(target, flags, 0o600)
        except OSError as exc:
            raise ValidationError(f"export path {shown(str(target))}: cannot be written ({exc.strerror or type(exc).__name__})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                # the owner's alone, and data, not a program: even a file that existed with other bits
                os.fchmod(fd, 0o600)
            json.dump(doc, f, ensure_ascii=False, indent=2)
            f.write("\n")
    layer.audit.write(
        owner, "export_timeline", at, session=session, steps=len(steps), steps_sha256=digest, path=str(path) if path else None
    )
    return doc
