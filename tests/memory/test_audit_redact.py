"""``AuditLog.redact_erased`` forgets sessions without a pattern compiled per session, and
redacts exactly what the per-session pattern did: names with regex metacharacters, names inside
longer words, names that are a part of other forgotten names."""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import memdb
from memdb.memory.audit import _SESSION_NAMED, _whole_replaced

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
# letters and digits of several scripts, "_" (no letter), and what a pattern would read as syntax
CHARS = "ab1_ é٣x.*+?()[]{}|^$\\- /:"


def _per_session(text: str, session: str, marker: str) -> str:
    """The reference: the pattern redact_erased compiled for each session until it stopped."""
    return re.sub(rf"(?<![^\W_]){re.escape(session)}(?![^\W_])", marker, text)


@given(word=st.text(CHARS, min_size=1, max_size=4), parts=st.lists(st.one_of(st.text(CHARS, max_size=3), st.just("W")), max_size=8))
@example(word="a", parts=["failed a a-b ba W"])
@example(word="aa", parts=["W", "a"])  # "aaa": the first whole-or-not match decides, leftmost first
@example(word="a.b", parts=["axb W"])  # a metacharacter is a character
@example(word="a-a", parts=["x", "W", "-a"])  # "xa-a-a": not whole at 1, whole at 3, inside the first
def test_whole_replaced_is_the_per_session_pattern(word: str, parts: list[str]) -> None:
    text = "".join(word if p == "W" else p for p in parts)
    assert _whole_replaced(text, word, "[erased]") == _per_session(text, word, "[erased]")


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(1, 6)))


@pytest.mark.usefixtures("backend")
def test_a_redaction_of_many_sessions_is_the_per_session_one(tmp_path: Path) -> None:
    """Records naming their own session and other ones, forgotten or not, in every field a session
    can be in: each loses the mentions of its own session only, as the per-session pattern did."""
    rng = random.Random(20261207)
    names = list(dict.fromkeys(_name(rng) for _ in range(300)))
    forgotten = set(rng.sample(names, len(names) // 2))
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        audit = db.episodes.audit
        with db.transaction():  # (one commit)
            for i in range(600):
                own, other = rng.choice(names), rng.choice(names)
                fields = {
                    "session": own,
                    "reason": f"closed {own} after {other}{rng.choice(['', 'x', '_', own])}",
                    "path": f"/exports/{own}.json",
                    "error": f"{own}{own} {rng.choice(CHARS)}{own}",
                    "kind": own,  # no field a session is named in: kept
                }
                audit.write("ana", "distill", NOW, **fields)
                if i % 50 == 0:
                    audit.write("ana", "archive", NOW, episode=f"e{i}", one_line=f"job {own}")  # names no session
        before = audit.entries("ana")
        audit.redact_erased("ana", set(), forgotten, NOW)
        marker = f"[erased {NOW:%Y-%m-%d}]"

        def reference(record: dict[str, Any]) -> dict[str, Any]:
            own = record.get("session")
            if own not in forgotten:
                return record
            return {k: _per_session(v, own, marker) if k in _SESSION_NAMED and isinstance(v, str) else v for k, v in record.items()}

        after = audit.entries("ana")
        assert after == [reference(r) for r in before]
        assert sum(a != b for a, b in zip(after, before, strict=True)) > 200  # (most of them changed)
