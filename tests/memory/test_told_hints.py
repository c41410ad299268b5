"""``told_of`` finds a record's hints of a time by one set intersection where every term is
ASCII: it must find what testing each term found (the model below, memdb's code before), so
the told windows capture keeps are the same."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memdb.memory import layout
from memdb.memory.ids import ts_micros
from memdb.memory.layout import told_of
from memdb.memory.text import term_counts
from memdb.memory.timephrase import TOLD_HINTS, TOLD_ORDINALS, told_hint_in, told_windows

AT = dt.datetime(2026, 7, 2, 12, 0, tzinfo=dt.UTC)
WORDS = [
    *sorted(TOLD_HINTS), "nightly", "weekly", "rolled", "back", "ago", "last", "on", "the", "in", "deploy", "failed", "5th",
    "1999", "2025", "2100", "1899", "20٢٥", "3", "昨天", "7월", "Q1", "July", "juli", "mid-May", "2026-06-28", "v1.2", "PRJ-2024",
    "on 2026-06-28", "on 28.06.2026", "in mid-2025", "last week", "2 days ago", "on the 5th", "nightly on the 5th", "昨天数据库迁移失败",
    "on the 03rd", "on the ٣rd", "on the 1st of 3", "on the 3rd-party", "on the 1st and 2nd items",
]  # fmt: skip


def told_before(record: Mapping[str, Any], tf: Mapping[str, int]) -> list[list[int]]:
    """The model: told_of as it tested each term."""
    hints = [
        layout._TOLD_TERMS.get(t, t)
        for t in tf
        if t in layout._TOLD_TERMS or t in TOLD_ORDINALS or (len(t) == 4 and t[:2] in ("19", "20") and t.isdigit())
    ]
    if not all(map(str.isascii, tf)):
        hints += filter(None, map(told_hint_in, tf))
    if not hints:
        return []
    text = "\n".join(str(record[f]) for f in layout.TOLD_FIELDS if record.get(f))
    return [[ts_micros(a), ts_micros(b)] for a, b in told_windows(text, record["ts"], 0, "UTC", hints)]


@given(st.lists(st.sampled_from(WORDS), max_size=12), st.lists(st.sampled_from(WORDS), max_size=6))
def test_told_of_finds_the_hints_testing_each_term_found(summary: list[str], lesson: list[str]) -> None:
    record = {"ts": AT, "summary": " ".join(summary), "lesson": " ".join(lesson)}
    tf = term_counts(f"{record['summary']}\n{record['lesson']}")
    assert told_of(record, tf) == told_before(record, tf)


# a word of how often ("nightly", "weekly", "Mondays") shares its term with a hint word ("night",
# "week", "monday"); a date beside it ("on the 5th") is read by its own hint since layout 28
OFTEN = ["the nightly build failed on the 5th", "our weekly sync on the 5th", "Monthly report on the 5th", "we deploy on Mondays at 9"]


@given(st.lists(st.sampled_from([*WORDS, *OFTEN, "and then it was fixed"]), max_size=12))
@example(["the nightly build failed on the 5th"])
def test_the_hints_capture_passes_find_what_reading_every_word_finds(words: list[str]) -> None:
    """``hints`` only spare told_windows a pass over every word: the hint's letters inside a
    longer word are no hint word, and open no region there (told_windows' own rule)."""
    text = " ".join(words)
    record = {"ts": AT, "summary": text}
    assert told_of(record, term_counts(text)) == [[ts_micros(a), ts_micros(b)] for a, b in told_windows(text, AT)]


@pytest.mark.parametrize(("text", "hint"), [(OFTEN[0], "night"), (OFTEN[1], "week"), (OFTEN[2], "month"), (OFTEN[3], "monday")])
def test_a_word_of_how_often_opens_no_region(text: str, hint: str) -> None:
    # capture found "night" inside "nightly" (its term is "night") and placed what was near it
    # there, where "daily" (term "daili") placed nothing: the hint's letters inside a longer word
    # open no region ("on the 5th" beside it tells of June 5 by its own hint, "5th", since layout 28)
    assert told_windows(text, AT, hints=[hint]) == []
    fifth = [[ts_micros(dt.datetime(2026, 6, 5, tzinfo=dt.UTC)), ts_micros(dt.datetime(2026, 6, 6, tzinfo=dt.UTC))]]
    assert told_of({"ts": AT, "summary": text}, term_counts(text)) == (fifth if "5th" in text else [])


def test_a_hint_word_beside_a_word_of_how_often_still_tells() -> None:
    text = "the nightly build failed last night"
    night = [ts_micros(dt.datetime(2026, 7, 1, 18, tzinfo=dt.UTC)), ts_micros(dt.datetime(2026, 7, 2, 6, tzinfo=dt.UTC))]
    assert told_of({"ts": AT, "summary": text}, term_counts(text)) == [night]
