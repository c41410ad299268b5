"""An empty window's note counts the matches before and after it exactly, past any cap, where the
search kernel finds the matches (required words, or tags alone: ``count_outside``), with the C
kernel and its pure-Python twin alike; a tag list too long to count cheaply says "at least"."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

import memdb
from memdb import native
from memdb.query import engine

pytestmark = pytest.mark.usefixtures("backend")  # on LMDB and on PostgreSQL (tests/conftest.py)

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SINCE, UNTIL = dt.datetime(2026, 3, 10, tzinfo=dt.UTC), dt.datetime(2026, 3, 17, tzinfo=dt.UTC)


def _episodes() -> list[dict[str, Any]]:
    """2,700 episodes every 90 minutes from January on, none in the window: about 1,100 before
    it and 1,600 after, two in three failures and two in three with a second tag, all saying
    "invoice"."""
    out, ts = [], START
    for i in range(2_700):
        if SINCE <= ts < UNTIL:
            ts = UNTIL + dt.timedelta(minutes=7)
        tags = ["billing", "deploy"] if i % 3 != 1 else ["billing"]
        outcome = "success" if i % 3 == 0 else "failure"
        out.append({"kind": "debug", "summary": f"invoice run {i}", "ts": ts, "outcome": outcome, "tags": tags})
        ts += dt.timedelta(minutes=90)
    return out


EPISODES = _episodes()


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, backend: str) -> Iterator[memdb.Memory]:
    """The episodes above, imported once per backend."""
    with memdb.open(tmp_path_factory.mktemp("outside") / "db", clock=lambda: START + dt.timedelta(days=400)) as db:
        mem = db.owner("team")
        mem.import_episodes(EPISODES, source="test")
        yield mem


def _expected(keep: Any, past_the_cap: bool) -> str:
    """The note's tail as a brute-force count over the episodes gives it."""
    stamps = [e["ts"] for e in EPISODES if keep(e)]
    before, after = [t for t in stamps if t < SINCE], [t for t in stamps if t >= UNTIL]
    assert len(before) + len(after) == len(stamps) and (len(after) > 1_000) == past_the_cap  # past the old cap of 1,000
    return f"; {len(before)} earlier (latest {max(before):%Y-%m-%d}) and {len(after)} later."


CASES: list[tuple[dict[str, Any], Any, bool]] = [
    ({"tags": ["billing"]}, lambda e: True, True),
    ({"tags": ["billing"], "outcome": "failure"}, lambda e: e["outcome"] == "failure", True),
    ({"tags": ["billing", "deploy"]}, lambda e: "deploy" in e["tags"], True),
    ({"text": "invoice"}, lambda e: True, True),
    ({"text": "invoice", "tags": ["deploy"], "outcome": "success"}, lambda e: "deploy" in e["tags"] and e["outcome"] == "success", False),
]


CASE_IDS = ["tag", "tag+outcome", "two tags", "text", "text+tag+outcome"]


@pytest.mark.parametrize(
    ("kernel", "asked", "keep", "past_the_cap"),
    [pytest.param(kernel, *case, id=f"{name}-{kernel}") for kernel in ("c", "twin") for name, case in zip(CASE_IDS, CASES, strict=True)],
)
def test_an_empty_windows_note_counts_past_a_thousand_exactly(
    team: memdb.Memory, monkeypatch: pytest.MonkeyPatch, kernel: str, asked: dict[str, Any], keep: Any, past_the_cap: bool
) -> None:
    """One tag (with an outcome or not), several, words: every match before and after the window
    is counted, as a brute-force count over what was recorded gives it, by the C kernel and by
    its twin (``MEMDB_PURE_PYTHON``), where the note said "at least 1000" before (for a while the
    twin read tag lists by their keys, saying "at least" where C counted: revD)."""
    if kernel == "c" and native.search_lib()[0] is None:
        pytest.skip("the C kernel is not in use (MEMDB_PURE_PYTHON, or not built)")
    if kernel == "twin":
        monkeypatch.setattr(native, "_SEARCH", (None, None))  # what MEMDB_PURE_PYTHON=1 chooses at import
    r = team.recall(since=SINCE, until=UNTIL, access=False, **asked)
    assert not r.found and r.total == 0
    assert r.note.endswith(_expected(keep, past_the_cap)), r.note


def test_a_tag_list_too_long_to_count_cheaply_says_at_least(team: memdb.Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``_COUNTED_BYTES`` a tag's index range is read by its keys from the window out, up to
    1,000 each side, and the note says so; the latest before is still exact."""
    monkeypatch.setattr(engine, "_COUNTED_BYTES", 0)
    r = team.recall(tags=["billing"], since=SINCE, until=UNTIL, access=False)
    latest = max(e["ts"] for e in EPISODES if e["ts"] < SINCE)
    assert r.note.endswith(f"; at least 1000 earlier (latest {latest:%Y-%m-%d}) and at least 1000 later."), r.note


def test_past_the_limits_one_tag_with_an_outcome_says_at_least_and_several_tags_count(
    team: memdb.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tag with an outcome is read past ``_MERGED_BYTES`` (its lists decoded whole, its matches
    looked up) by its index range's keys; several tags have no one range, so they are counted
    whatever their size: before, past the limit they looked at the first 1,000 matches of all
    time (0.15-1.0 s at a million episodes) and said "at least 1000 earlier" without the latest."""
    monkeypatch.setattr(engine, "_MERGED_BYTES", 0)
    monkeypatch.setattr(engine, "_COUNTED_BYTES", 0)
    r = team.recall(tags=["billing"], outcome="failure", since=SINCE, until=UNTIL, access=False)
    before = [e["ts"] for e in EPISODES if e["outcome"] == "failure" and e["ts"] < SINCE]  # 725: under the cap
    assert r.note.endswith(f"; {len(before)} earlier (latest {max(before):%Y-%m-%d}) and at least 1000 later."), r.note
    r = team.recall(tags=["billing", "deploy"], since=SINCE, until=UNTIL, access=False)
    assert r.note.endswith(_expected(lambda e: "deploy" in e["tags"], True)), r.note
