"""Once ``record`` has committed its episode it returns it: the pattern run it starts afterwards,
in a transaction of its own, may fail (a conflict under ``isolation="serializable"``, the server
gone), and that failure is logged and left to ``maintain``, never raised as the record's.

Raised, a TransactionConflictError ("retry the transaction") from the pattern run read as the
record's own failure, and a caller who retried wrote the episode twice (probe f03: 4 writers
under serializable; f03b: the server stopped between the commit and the run).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.errors import StoreError, TransactionConflictError
from memdb.governance.patterns import Patterns

pytestmark = pytest.mark.usefixtures("backend")

SECRET_TEXT = "deploy of ana.lopez@example.org's branch"


def _failing_once(monkeypatch: pytest.MonkeyPatch, error: Exception) -> list[Exception]:
    """The next pattern extraction raises ``error`` (what the store raised in the pattern run's own
    reads or transaction); the list is empty once it has."""
    real = Patterns._extract
    failures = [error]

    def failing_once(self: Patterns, *args: Any, **kwargs: Any) -> int:
        if failures:
            raise failures.pop()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Patterns, "_extract", failing_once)
    return failures


@pytest.mark.parametrize(
    "error",
    [
        TransactionConflictError("postgres transaction: still failing after 2 retries (40001: ...) (retry the transaction later)"),
        StoreError("postgres store postgresql://agent:***@db/team: read: connection failed: server closed the connection"),
    ],
    ids=["conflict", "server-gone"],
)
def test_a_failed_pattern_run_after_the_commit_returns_the_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    """The fifth typed record completes a batch; its extraction fails after the record committed:
    record returns the episode (written once), the failure is logged without the record's text,
    and the batch stays pending until maintain extracts it."""
    failures = _failing_once(monkeypatch, error)
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        for k in range(4):
            mem.record("debug", f"warm up {k} deploy", outcome="success", tags=["deploy"])
        with caplog.at_level(logging.WARNING, logger="memdb"):
            fifth = mem.record("debug", SECRET_TEXT, outcome="success", tags=["deploy"])
        assert not failures, "the pattern run was not reached"
        assert mem.peek(fifth.id).summary == fifth.summary
        assert mem.count() == 5  # once: nothing tells the caller to retry
        (batch,) = db.patterns.batch_status("ana", "debug")
        assert batch["status"] == "pending"
        (line,) = [r for r in caplog.records if r.name == "memdb.governance.patterns"]
        message = line.getMessage()
        assert fifth.id in message and type(error).__name__ in message and "pending" in message
        assert "example.org" not in message and "deploy of" not in message and str(error) not in message
        db.maintain()
        (batch,) = db.patterns.batch_status("ana", "debug")
        assert batch["status"] == "done"
        assert mem.patterns("debug")
        assert db.check().ok


def test_a_failed_pattern_run_after_a_session_close_returns_the_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """close_session commits the session's episode, then runs the batch it completed, as record
    does: a conflict there raised out of the close after its episode was written."""
    failures = _failing_once(monkeypatch, TransactionConflictError("postgres transaction: still failing (retry the transaction later)"))
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        for k in range(4):
            mem.record("debug", f"warm up {k} deploy", outcome="success", tags=["deploy"])
        mem.record_exchange("s1", "the deploy failed again", "looking", tags=["deploy"])
        done = mem.close_session("s1", kind="debug", outcome="failure")
        assert not failures, "the pattern run was not reached"
        assert done.status == "closed" and done.episode is not None
        assert mem.history(kind="debug").total == 5
        (batch,) = db.patterns.batch_status("ana", "debug")
        assert batch["status"] == "pending"
        db.maintain()
        (batch,) = db.patterns.batch_status("ana", "debug")
        assert batch["status"] == "done"
