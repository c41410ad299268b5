"""Fixtures of the query suites: ``qdb`` (a fresh database on the test's backend, at NOW) and
``team`` (an owner with a small, known history in it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from query_times import NOW, at

import memdb


@pytest.fixture
def qdb(tmp_path: Path) -> Iterator[memdb.Database]:
    """A fresh database on the test's backend, its clock stopped at NOW."""
    db = memdb.open(tmp_path / "q", clock=lambda: NOW)
    yield db
    db.close()


@pytest.fixture
def team(qdb: memdb.Database) -> memdb.Memory:
    """Owner "team" in ``qdb`` with six episodes of June 2026 (and one of owner "other")."""
    mem = qdb.owner("team")
    mem.record("debug", "Deploy of Project X failed: migration locked the users table", outcome="failure",
               tags=["Project X", "deploy"], lesson="run migrations before the deploy window", ts=at(23, 10), session="s1")  # fmt: skip
    mem.record("sprint", "Shipped search v2 for Project X", outcome="success", tags=["project-x"], ts=at(25, 16), session="s2")
    mem.record("debug", "Billing webhook retries time out", outcome="partial", tags=["billing", "twilio"], ts=at(24, 16))
    mem.record("review", "Reviewed Project X rollout plan", outcome="success", tags=["project-x"], ts=at(2, 16))
    mem.record("debug", "Deploy failed again: migration lock", outcome="failure", tags=["project-x", "deploy"],
               lesson="take the lock with a timeout", ts=at(29, 8))  # fmt: skip
    mem.record("exchange", "User asked about the twilio quota", tags=["twilio"], ts=at(30, 23))
    qdb.owner("other").record("debug", "Other team's Project X deploy", outcome="failure", tags=["project-x", "deploy"], ts=at(24))
    return mem
