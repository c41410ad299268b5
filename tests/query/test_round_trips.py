"""Round trips of the query layer on PostgreSQL: a read's cost must not grow with its matches
(each one a round trip to the server), as docs/backends.md states."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

import memdb

T0 = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
WORDS = "deploy migration lock invoice webhook redis cache latency outage rollback billing queue worker".split()


@pytest.mark.postgres_only(reason="round trips are what PostgreSQL pays per read; LMDB has none")
def test_history_and_ask_read_candidates_in_batches(backend: str, tmp_path: Path) -> None:
    """A probe's find: history of 1,500 attempts made 1,497 round trips and a long ask 400-490,
    one index lookup per candidate; they are read a chunk of candidates per round trip now."""
    now = [T0]
    rng = random.Random(1)
    with memdb.open(tmp_path / "db", clock=lambda: now[0]) as db:
        mem = db.owner("ana")
        costs = []
        for n in (100, 800):
            with db.transaction():
                while sum(1 for _ in mem.episodes()) < n:
                    now[0] += dt.timedelta(minutes=20)
                    mem.record("debug", " ".join(rng.choice(WORDS) for _ in range(8)), ts=now[0] - dt.timedelta(minutes=1),
                               outcome=rng.choice(["success", "failure"]), tags=rng.sample(["apollo", "billing", "infra"], 2))  # fmt: skip
            db.flush()
            counts = []
            for read in (
                lambda: mem.history(kind="debug", tags=["apollo"]),
                lambda: mem.ask("Why did the Apollo rollback of the billing worker queue fail after the redis cache outage?"),
            ):
                before = db.store.round_trips  # type: ignore[attr-defined]
                read()
                counts.append(db.store.round_trips - before)  # type: ignore[attr-defined]
            costs.append(counts)
        (history_100, ask_100), (history_800, ask_800) = costs
        assert history_800 <= history_100 + 10 and ask_800 <= ask_100 + 10, costs
        assert history_800 < 40, costs


def test_history_keeps_fifty_lessons_past_repeated_ones(tmp_path: Path) -> None:
    """A review's find: reading the older failures' lessons a batch at a time stopped once as many
    lessons as were missing had been read, counting again the ones the listed attempts said, so
    a history of 75 distinct lessons kept 45."""
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    with memdb.open(tmp_path / "db", clock=lambda: t0 + dt.timedelta(days=1)) as db:
        mem = db.owner("ana")
        lessons = [f"new lesson N{i}" for i in range(41, 71)]  # the oldest failures' lessons, said once
        pool = [f"listed lesson L{i}" for i in range(5)] + [f"new lesson N{i}" for i in range(1, 41)]
        lessons += [pool[i % len(pool)] for i in range(256)]  # then lessons said again and again
        lessons += [f"listed lesson L{i}" for i in range(5)]  # the newest: the attempts listed
        with db.transaction():
            for n, lesson in enumerate(lessons):
                mem.record("debug", f"attempt {n} at the deploy", outcome="failure", lesson=lesson, ts=t0 + dt.timedelta(minutes=n))
        h = mem.history(kind="debug", limit=5)
        assert len(h.lessons) == 50 and h.lessons == list(dict.fromkeys(reversed(lessons)))[:50]
