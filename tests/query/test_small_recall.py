"""The fixed cost of a small structured recall: what is skipped or deferred changes no answer.

The note is formatted when first read (``RecallResult.note``), and ``RangeColumn.best`` bounds a few
matches at once instead of walking their levels; both must give what the eager forms gave."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_times import NOW, at

import memdb
from memdb.errors import ValidationError
from memdb.memory.ids import ts_micros
from memdb.memory.layout import MAX_CODE, column_tail
from memdb.query import rank
from memdb.query.results import Interpretation, RecallResult

pytestmark = pytest.mark.usefixtures("backend")  # the recall tests run on LMDB and on PostgreSQL (tests/conftest.py)


def test_a_note_given_as_a_function_is_made_once_when_first_read() -> None:
    calls: list[int] = []

    def make() -> str:
        calls.append(1)
        return "2 matches for tags billing; showing 2."

    lazy = RecallResult(True, [], Interpretation(tags=("billing",)), 2, make)
    assert calls == []
    assert lazy.note == "2 matches for tags billing; showing 2." and lazy.note == lazy.note
    assert calls == [1]
    eager = RecallResult(True, [], Interpretation(tags=("billing",)), 2, "2 matches for tags billing; showing 2.")
    assert lazy == eager and repr(lazy) == repr(eager)
    assert "note='2 matches for tags billing; showing 2.'" in repr(eager)
    assert eager != RecallResult(True, [], Interpretation(tags=("billing",)), 2, "another note")


def test_a_result_stays_immutable() -> None:
    r = RecallResult(False, [], Interpretation(), 0, "Nothing found for everything.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.total = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.note = "something else"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del r.found  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(r)  # it holds a list, as the frozen dataclass did
    assert r.note == "Nothing found for everything."


def test_a_result_copies_and_pickles_with_its_note_made() -> None:
    lazy = RecallResult(True, [], Interpretation(tags=("billing",)), 2, lambda: "2 matches for tags billing; showing 2.")
    for again in (copy.copy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert again == lazy and again is not lazy and again.note == "2 matches for tags billing; showing 2."


def test_the_note_tells_of_the_answer_not_of_later_writes(team: memdb.Memory) -> None:
    r = team.recall(tags=["twilio"])
    team.record("debug", "Twilio quota raised", outcome="success", tags=["twilio"], ts=at(30, 12))  # before the note is read
    assert r.total == 2 and len(r.memories) == 2
    assert r.note == "2 matches for tags twilio; showing 2."
    assert team.recall(tags=["twilio"]).note == "3 matches for tags twilio; showing 3."


def test_a_partial_answer_still_names_the_missing_words(team: memdb.Memory) -> None:
    r = team.ask("migration lock zanzibar")
    assert r.note.endswith("Partial: no memory mentions 'zanzibar'; these match the other words."), r.note


def test_recall_normalises_tags_alike_each_time(team: memdb.Memory) -> None:
    first = team.recall(tags=["Project X"], limit=10)
    again = team.recall(tags=["PROJECT_X", "project-x"], limit=10)
    assert first.interpretation.tags == again.interpretation.tags == ("project-x",)
    assert [m.id for m in first] == [m.id for m in again] and first.total == 4
    for bad in ([""], [7], ["!!!"]):  # a bad tag is refused every time, not only the first
        for _ in range(2):
            with pytest.raises(ValidationError, match="tag"):
                team.recall(tags=bad)  # type: ignore[list-item]


_NOW_US = ts_micros(NOW)
_DAY_US = 86_400_000_000


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-60 * _DAY_US, 2 * _DAY_US), st.integers(0, 2**20), st.integers(0, MAX_CODE)),
        min_size=1,
        max_size=rank._FEW,
        unique_by=lambda m: (m[0], m[1]),
    ),
    st.integers(1, 12),
)
def test_bounding_a_few_matches_at_once_keeps_what_the_walk_keeps(matches: list[tuple[int, int, int]], limit: int) -> None:
    # ages from two months before NOW to two days after it (a ``now`` before some matches)
    ordered = sorted((column_tail(_NOW_US + age, suffix), code) for age, suffix, code in matches)
    column = rank.RangeColumn([t for t, _ in ordered], [c for _, c in ordered], 0)
    at_once = column.best(_NOW_US, limit)
    few = rank._FEW
    rank._FEW = 0  # the walk over the levels, newest first
    try:
        walked = column.best(_NOW_US, limit)
    finally:
        rank._FEW = few
    assert at_once == walked
    assert len(at_once) >= min(limit, len(ordered))


def test_a_window_of_a_few_tagged_matches_ranks_as_before(qdb: memdb.Database) -> None:
    """Twelve matches in one tag's window, relevance and age mixed: the top five are the five
    best by the documented score, whichever way the candidates were bounded."""
    mem = qdb.owner("team")
    for i in range(12):
        outcome, feedback = ("failure", "success", "partial")[i % 3], ((i * 7) % 11 - 5) / 5  # relevance varies
        lesson = "retry with backoff" if i % 4 == 0 else None
        ts = NOW - dt.timedelta(hours=3 * i)
        mem.record("debug", f"Billing retry {i}", outcome=outcome, feedback=feedback, lesson=lesson, tags=["billing"], ts=ts)
    since, until = NOW - dt.timedelta(days=2), NOW + dt.timedelta(hours=1)
    r = mem.recall(since=since, until=until, tags=["billing"], now=NOW)
    everything = mem.recall(since=since, until=until, tags=["billing"], now=NOW, limit=12)
    assert r.total == everything.total == 12
    assert [m.id for m in r] == [m.id for m in everything][:5]
    assert [m.score for m in r] == sorted((m.score for m in everything), reverse=True)[:5]
    assert len({m.episode.relevance for m in everything}) > 2  # the relevances do differ


def test_an_empty_window_points_to_what_is_archived_in_it_only(team: memdb.Memory) -> None:
    old = team.record("debug", "Billing export timed out", outcome="failure", tags=["billing"], ts=at(10, 9))
    team.archive(old.id)
    inside = team.recall(since=at(10, 0), until=at(11, 0), tags=["billing"])
    assert not inside.found
    assert inside.note.endswith(
        "for tags billing; 1 later. 1 archived match, latest 2026-06-10; include_archived=True to see it (restore() brings it back)."
    ), inside.note
    outside = team.recall(since=at(12, 0), until=at(13, 0), tags=["billing"])  # the archived one lies before it
    assert outside.note.endswith("for tags billing; 1 later."), outside.note
