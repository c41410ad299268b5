"""recall_episodes with several kinds pages through every match once, counting only what it shows.

A page over several kinds ran ``recall(kind=k, limit=offset + limit)`` per kind, every one of
them counting an access, and sliced the merged list at ``offset``: the hits never shown rose in
relevance past the next page's start, so a walk of 300 matches showed 14 twice and never showed
14 others, and one page of 10 counted reads on 20 episodes. Driven through the tool functions
(``ToolSpec.run``), as the server runs them, over a real LMDB database.
"""

from __future__ import annotations

import collections
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.surfaces.mcp_server import tool_specs

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)


def _walk(mem: memdb.Memory, spec: Any, query: dict[str, Any], limits: list[int]) -> tuple[list[str], int]:
    """The ids every page of ``query`` shows, in order, following each cursor; and the first page's total."""
    page = spec.run(mem, spec.check_arguments({**query, "limit": limits[0]})).data
    total, seen, n = page["total"], [], 1
    while True:
        seen += [m["id"] for m in page["memories"]]
        if "cursor" not in page:
            return seen, total
        page = spec.run(mem, spec.check_arguments({**query, "limit": limits[n % len(limits)], "cursor": page["cursor"]})).data
        n += 1


@pytest.mark.parametrize(
    "query",
    [
        {"tags": ["walk"], "kinds": ["debug", "sprint"]},
        {"text": "deploy migration", "kinds": ["sprint", "debug", "review"]},  # ranked by text, three kinds (one empty)
    ],
)
def test_several_kinds_page_through_every_match_once(tmp_path: Path, query: dict[str, Any]) -> None:
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("carol")
        with db.transaction():
            for i in range(300):
                words = "deploy migration" if i % 4 == 0 else "deploy" if i % 4 == 1 else "migration" if i % 4 == 2 else "other"
                mem.record("sprint" if i % 3 == 0 else "debug", f"item {i} {words}", outcome="success", tags=["walk"],
                           ts=NOW - dt.timedelta(hours=i + 1))  # fmt: skip
        spec = next(s for s in tool_specs(db.settings) if s.name == "recall_episodes")
        # the full list, as one page of each kind counting nothing, merged
        rest = {x: v for x, v in query.items() if x != "kinds"}
        everything = {m.id for k in query["kinds"] for m in mem.recall(kind=k, limit=300, access=False, **rest).memories}
        seen, total = _walk(mem, spec, query, [10, 7, 10, 13])
        twice = [i for i, n in collections.Counter(seen).items() if n > 1]
        assert total == len(everything) and not twice and set(seen) == everything, (len(seen), len(set(seen)), len(everything))
        again = spec.run(mem, spec.check_arguments({**query, "limit": 10})).data
        assert [m["id"] for m in again["memories"]] == seen[:10]  # the first page is the first page again


def test_a_page_of_several_kinds_counts_an_access_only_on_what_it_shows(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        mem = db.owner("carol")
        with db.transaction():
            for i in range(60):
                mem.record("sprint" if i % 3 == 0 else "debug", f"item {i}", outcome="success", tags=["walk"],
                           ts=NOW - dt.timedelta(hours=i + 1))  # fmt: skip
        spec = next(s for s in tool_specs(db.settings) if s.name == "recall_episodes")
        before = {e.id: e.access_count for e in mem.episodes()}
        shown: list[str] = []
        cursor = None
        for _ in range(3):  # page 3 read offset + limit = 30 of each kind, and counted them all
            args = {"tags": ["walk"], "kinds": ["debug", "sprint"], "limit": 10, **({"cursor": cursor} if cursor else {})}
            page = spec.run(mem, spec.check_arguments(args)).data
            shown += [m["id"] for m in page["memories"]]
            cursor = page["cursor"]
        db.flush()
        after = {e.id: e.access_count for e in mem.episodes()}
        counted = {i for i in after if after[i] != before[i]}
        assert counted == set(shown) and len(shown) == 30
        assert all(after[i] == before[i] + 1 for i in shown)
