"""The fixed time of the query suites, shared by ``test_query.py`` and ``tests/query/conftest.py``
(a plain module: tests may import it, unlike a conftest)."""

from __future__ import annotations

import datetime as dt

UTC = dt.UTC
NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=UTC)  # a Wednesday


def at(day: int, hour: int = 12, month: int = 6) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, tzinfo=UTC)
