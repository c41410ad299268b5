"""Fixtures of the memory suites: ``edb``, a fresh database on the test's backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb


@pytest.fixture
def edb(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    """A fresh database on the ``clock`` fixture of the requesting module (test_episodes: its T0)."""
    database = memdb.open(tmp_path / "edb", clock=clock, map_size=1 << 20)
    try:
        yield database
    finally:
        database.close()
