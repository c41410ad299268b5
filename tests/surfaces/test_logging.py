"""Logging under ``memdb``: the events operators need (dropped captures, maintain runs, map growth,
layout upgrades, slow queries), and never a byte of episode text or PII in any record."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.engine.log import logger
from memdb.errors import SanitizerError
from memdb.memory.layout import LAYOUT

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
WORD = "zanzibarquux"  # a word only the episodes and questions hold
PII = [
    "ana.secret@example.com",
    "+1 415 555 0199",
    "4111 1111 1111 1111",
    "DE89370400440532013000",
    "sk-ant-api03-Zx9yQ7wV5uT3sR1pO9nM7lK5jH3gF1dS9aP7oI5uY3tR",
    "203.0.113.77",
]


class Exploding(memdb.RegexSanitizer):
    """The default sanitizer, failing on a marker, with the text in its message as a careless one would."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        if any("EXPLODE" in t for t in texts.values()):
            raise ValueError(f"cannot sanitize {dict(texts)!r}")
        return dict(super().sanitize(texts))


def test_the_logger_lives_under_memdb() -> None:
    assert logger("memdb.query.engine").parent is not None and logger("memdb.query.engine").name.startswith("memdb.")
    with pytest.raises(ValueError):
        logger("somebody.else")
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("memdb").handlers)


def test_a_run_with_planted_pii_logs_its_events_and_never_the_text(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="memdb")
    clock = Clock(NOW)
    secret = " ".join(PII)
    path = tmp_path / "db"
    with memdb.open(path, clock=clock, sanitizer=Exploding(), map_size=1 << 20) as db:
        db.configure(slow_query_ms=0)  # every query is "slow": each one logs
        ana = db.owner("ana")
        for i in range(7):  # a burst in one session, for maintain to summarize
            ana.record_exchange("s1", f"{WORD} question {i}: mail {secret}", f"{WORD} answer {i}, call {secret}")
        call = ana.record_tool_call("s1", "search", {"query": f"{WORD} {secret}"})
        ana.record_tool_result(call.id, {"hits": [f"{WORD} {secret}"]})
        ana.record("debug", f"{WORD} deploy failed for {secret}", outcome="failure", lesson=f"{WORD} ask {secret}", tags=["project-x"])
        with pytest.raises(SanitizerError):
            ana.record("debug", f"EXPLODE {WORD} {secret}", outcome="failure")
        ana.ask(f"what happened with {WORD} and {secret}?")
        ana.recall(text=f"{WORD} {secret}")
        ana.history(kind="debug", text=WORD)
        with db.transaction():  # far more than the 1 MiB map: it grows
            big = db.globals["BIG"]
            for i in range(400):
                big[i] = "x" * 4000
        clock.advance(days=2)
        report = db.maintain()
        assert report.summaries == 1
        db.globals["META"]["layout"] = LAYOUT - 1  # as an older memdb left it: reopening upgrades
    with memdb.open(path, clock=clock) as db:
        assert db.check().ok

    by_logger: dict[str, list[str]] = {}
    for record in caplog.records:
        by_logger.setdefault(record.name, []).append(record.getMessage())
        shown = f"{record.getMessage()} {record.args!r} {record.exc_text or ''} {record.stack_info or ''}"
        assert WORD not in shown and "EXPLODE" not in shown, shown
        for planted in PII:
            assert planted not in shown, (planted, shown)
    assert any("capture dropped for owner 'ana'" in m for m in by_logger["memdb.memory.episodes"])
    slow = " ".join(by_logger["memdb.query.engine"])
    assert all(f"slow {q} for owner 'ana'" in slow for q in ("ask", "recall", "history"))
    assert any("map of" in m and "grown from" in m for m in by_logger["memdb.engine.store"])
    assert any(m.startswith("maintain at") and "1 burst summaries" in m for m in by_logger["memdb.lifecycle.maintain"])
    assert any(f"layout upgraded to {LAYOUT}" in m for m in by_logger["memdb.memory.migrate"])
    assert {r.levelname for r in caplog.records if r.name == "memdb.query.engine"} == {"WARNING"}


def test_fast_queries_and_a_quiet_library_log_nothing_above_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """At the default threshold (500 ms) small queries stay silent."""
    caplog.set_level(logging.DEBUG, logger="memdb")
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        db.owner("ana").record("debug", "Deploy failed", outcome="failure")
        db.owner("ana").ask("what failed?")
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
