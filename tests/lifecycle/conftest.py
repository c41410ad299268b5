"""Fixtures of the lifecycle suites: ``ldb``, a fresh database on the test's backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb


@pytest.fixture
def ldb(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    """A fresh database on the ``clock`` fixture of the requesting module (test_lifecycle: its T0)."""
    db = memdb.open(tmp_path / "l", clock=clock)
    yield db
    db.close()
