"""Shared fixtures: a real memdb database in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import memdb


@pytest.fixture
def db(tmp_path: Path) -> Iterator[memdb.Database]:
    """A fresh database in ``tmp_path / "db"``, closed after the test."""
    database = memdb.open(tmp_path / "db", map_size=1 << 20)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def g(db: memdb.Database) -> memdb.Global:
    """The global ``^T`` of the ``db`` fixture, empty at the start."""
    return db.globals["T"]
