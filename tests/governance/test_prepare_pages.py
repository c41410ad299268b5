"""``prepare``'s recalls and ``failure_lessons`` rank from the search kernel's pages
(``OwnerQueries._ranked_top``): on a randomized corpus (owners, kinds, outcomes, tags, chat without
an outcome, lessons present, repeated and absent, archived episodes) they give what ranking every
match gives (``engine._KERNEL_PAGES`` off): the same memories in the same order, with the same
scores, the same block, and the same memories counted as read."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.query import engine

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
WORDS = ["deploy", "billing", "migration", "webhook", "twilio", "cache", "timeout", "rollback", "schema", "queue", "retry", "disk"]
TAGS = ["deploy", "billing", "twilio", "ops", "project-x", "project-y", "api-v1", "api-v2"]
KINDS = ["sprint", "routine", "debug", "research", "review"]
LESSONS = ["run migrations first", "pin the webhook secret", "warm the cache", "retry with backoff", "free the disk"]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _fill(mem: memdb.Memory, rng: random.Random, clock: Clock, n: int) -> None:
    for i in range(n):
        clock.advance(minutes=rng.randint(1, 300))
        tags = rng.sample(TAGS, rng.choice([0, 0, 1, 1, 2, 3]))
        if rng.random() < 0.3:  # talk: no outcome, found by the words but no attempt
            mem.record_exchange(f"s{i % 7}", _text(rng, rng.randint(2, 6)), _text(rng, rng.randint(1, 4)), tags=tags)
            continue
        outcome = rng.choice(["success", "partial", "failure", "failure"])
        lesson = rng.choice([*LESSONS, None, None]) if outcome != "success" else None
        ep = mem.record(rng.choice(KINDS), _text(rng, rng.randint(2, 8)), outcome=outcome, tags=tags, lesson=lesson)
        if rng.random() < 0.2:
            mem.feedback(ep.id, rng.choice([-1.0, 0.5, 1.0]))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[memdb.Database, Clock]]:
    """Two owners; the first half of each is archived by ``maintain`` 60 days on, then more is recorded."""
    clock = Clock(T0)
    path: Path = tmp_path_factory.mktemp("pages") / "db"
    with memdb.open(path, clock=clock, sync=False) as db:
        db.configure(pattern_every=1000)  # no patterns: the records and lessons are what is compared
        rng = random.Random(20261207)
        for owner in ("ana", "bo"):
            _fill(db.owner(owner), rng, clock, 180)
        clock.advance(days=60)
        assert db.maintain(now=clock.now).archived > 0
        for owner in ("ana", "bo"):
            _fill(db.owner(owner), rng, clock, 220)
        yield db, clock


def _both(mem: memdb.Memory, monkeypatch: pytest.MonkeyPatch, call: Any) -> tuple[Any, Any]:
    """``call()`` ranked every match and from the kernel's pages, with the ids each read touched
    (kept from the tracker, so the second run reads what the first did)."""
    tracker = mem._queries._layer.tracker
    out = []
    for pages in (False, True):
        touched: list[list[str]] = []
        monkeypatch.setattr(tracker, "touch", lambda owner, ids, at, touched=touched: touched.append(list(ids)))
        monkeypatch.setattr(engine, "_KERNEL_PAGES", pages)
        monkeypatch.setattr(engine, "_DRIVES", False)  # this corpus is small: pages are what is compared
        out.append((call(), touched))
    return out[0], out[1]


def _hits(hits: list[Any]) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in hits]


TASKS: list[tuple[str, dict[str, Any]]] = [
    ("deploy the billing migration", {}),
    ("webhook retry timeout", {}),
    ("cache", {}),
    ("deploy project x", {}),
    ("rollback the schema", {"kind": "debug"}),
    ("twilio webhook", {"tags": ["twilio"]}),
    ("disk queue retry", {"tags": ["ops", "deploy"], "kind": "sprint"}),
    ("migration on api v2", {"tags": ["api-v2"]}),
    ("billing", {"kind": "review", "limit": 3}),
    ("deploy rollback cache schema", {"limit": 8}),
]


@pytest.mark.parametrize("first_page", [engine._FIRST_PAGE, 1])
@pytest.mark.parametrize(("task", "kwargs"), TASKS)
def test_prepare_from_kernel_pages_equals_ranking_every_match(
    corpus: tuple[memdb.Database, Clock], monkeypatch: pytest.MonkeyPatch, task: str, kwargs: dict[str, Any], first_page: int
) -> None:
    db, clock = corpus
    monkeypatch.setattr(engine, "_FIRST_PAGE", first_page)  # 1: many widenings
    for owner in ("ana", "bo"):
        mem = db.owner(owner)
        (slow, slow_read), (fast, fast_read) = _both(mem, monkeypatch, partial(mem.prepare, task, now=clock.now, **kwargs))
        assert _hits(fast.records) == _hits(slow.records)
        assert _hits(fast.lessons) == _hits(slow.lessons)
        assert (fast.text, fast.left_out, fast.missing_names, fast.in_block) == (
            slow.text,
            slow.left_out,
            slow.missing_names,
            slow.in_block,
        )
        assert fast_read == slow_read


@pytest.mark.parametrize("first_page", [engine._FIRST_PAGE, 1])
def test_failure_lessons_from_kernel_pages_equal_ranking_every_match(
    corpus: tuple[memdb.Database, Clock], monkeypatch: pytest.MonkeyPatch, first_page: int
) -> None:
    """Lessons past many failures without one (a limit past the distinct lessons reads every page),
    with tags that boost and scope, a kind, and ids to skip."""
    db, clock = corpus
    monkeypatch.setattr(engine, "_FIRST_PAGE", first_page)
    rng = random.Random(7)
    mem = db.owner("ana")
    queries = mem._queries
    some = [m.id for m in mem.recall(text="deploy billing", limit=6, now=clock.now, include_archived=True).memories]
    for _ in range(25):
        text = _text(rng, rng.randint(1, 3))
        tags = rng.sample(TAGS, rng.choice([0, 1, 2]))
        kind = rng.choice([None, None, *KINDS])
        limit = rng.choice([1, 3, 5, 10])
        skip = set(rng.sample(some, rng.randint(0, len(some))))
        (slow, slow_read), (fast, fast_read) = _both(
            mem, monkeypatch, partial(queries.failure_lessons, text, tags, kind, limit=limit, skip=skip, now=clock.now)
        )
        assert _hits(fast) == _hits(slow), (text, tags, kind, limit)
        assert fast_read == slow_read


def test_recall_memories_equal_recall_s(corpus: tuple[memdb.Database, Clock], monkeypatch: pytest.MonkeyPatch) -> None:
    """What prepare reads of a recall is recall's memories, for each filter the kernel cannot apply."""
    db, clock = corpus
    mem = db.owner("bo")
    queries = mem._queries
    rng = random.Random(11)
    monkeypatch.setattr(engine, "_DRIVES", False)  # from pages, as on a large database
    for _ in range(25):
        args: dict[str, Any] = {"text": _text(rng, rng.randint(1, 3)), "limit": rng.choice([1, 5, 12])}
        args["kind"] = rng.choice([None, *KINDS])
        args["any_tags"] = rng.sample(TAGS, rng.choice([0, 1, 2]))
        args["scope_tags"] = rng.sample(TAGS, rng.choice([0, 1, 2]))
        args["with_outcome"] = rng.random() < 0.7
        args["include_archived"] = rng.random() < 0.7
        monkeypatch.setattr(queries._layer.tracker, "touch", lambda *a: None)
        expected = queries.recall(now=clock.now, **args).memories
        assert _hits(queries.recall_memories(now=clock.now, **args)) == _hits(expected), args
