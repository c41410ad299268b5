"""A spaced SSN beside a time or a count (priv18): after a number and a space it was read as more
groups of a longer number unless that number was a date, so "met at 10:30 219 09 9999" kept it raw
and "1985-03-14T10:00 219 09 9999" read "00 219 09 9999" as a phone dialled with "00", cutting the
datetime; before a space and a number it was refused too, so "219 09 9999 5 copies" kept it raw.
A time, like a date, is no group of a number, and one number after the SSN is a count; two are a
longer run, kept as before. A tag with a date of birth the day first ("1985-14-03") read its month
and the SSN as a phone in its spaced form."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_numbers_in_context import _SSNS, clean
from test_tag_leaks import held

import memdb
from memdb.memory.layout import GLOBALS
from memdb.memory.sanitize import RegexSanitizer
from memdb.memory.sanitize.fields import tags_as_stored

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("written", "text"),
    [
        ("met at 10:30 219 09 9999", "met at 10:30 <SSN_1>"),
        ("at 10:30 219-09-9999", "at 10:30 <SSN_1>"),  # dashed: withheld on main already
        ("at 10:30:15 219 09 9999 ok", "at 10:30:15 <SSN_1> ok"),
        ("1985-03-14T10:00 219 09 9999", "1985-03-14T10:00 <SSN_1>"),  # the datetime whole
        ("1985-03-14T10:00:00.250 219 09 9999", "1985-03-14T10:00:00.250 <SSN_1>"),
        ("219 09 9999 5 copies", "<SSN_1> 5 copies"),
        ("ssn 219 09 9999 5 copies", "ssn <SSN_1> 5 copies"),  # was "ssn <GOV_ID_1> copies", the count taken
        ("born 1985-14-03 219 09 9999", "born 1985-14-03 <SSN_1>"),
    ],
)
def test_a_spaced_ssn_beside_a_time_or_a_count_is_withheld(tmp_path: Path, written: str, text: str) -> None:
    assert clean(written) == text
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        ep = db.owner("a").record("debug", written, outcome="success", tags=[written], participants=["bob", written])
        assert ep.summary == text and "<SSN_1>" in ep.participants[1] and "withheld-ssn" in ep.tags[0], (ep.tags, ep.participants)
        assert [name for name in GLOBALS if held(name, db, ["219099999"])] == []


@pytest.mark.parametrize(
    "text",
    [
        "010 01 1000 001 01 0001",  # a run of numbers: two groups after it
        "219 09 9999 5 6 copies",
        "12 219 09 9999 5",  # after a number that is no date nor time
        "10:30 to 11:45",
        "at 10:30 2 people",
        "1985-03-14T10:00:00Z ok",
        "between 10:30 and 12:45 on 2024-06-03, ports 8080 8081 8443",
        "v10.30.219 build 2048 4096",
    ],
)
def test_runs_of_numbers_times_and_ranges_stay(text: str) -> None:
    assert clean(text) == text


def test_a_tag_with_a_date_of_birth_the_day_first_reads_no_phone() -> None:
    """Its spaced form kept no date whole but one with the month second: "03 219 09 9999" was a
    phone. The date itself is still lost: a tag keeps no long number beside a withheld value."""
    for tag in ["born 1985-14-03 219 09 9999", "born 03/14/1985 219 09 9999 in Ohio", "born 1985/14/03 219 09 9999"]:
        assert tags_as_stored(RegexSanitizer().sanitize, [tag]).stored == ["withheld-ssn"], tag


@settings(max_examples=200, deadline=None)
@given(time=st.times().map(lambda t: t.strftime("%H:%M")), seconds=st.booleans(), ssn=_SSNS, count=st.integers(0, 99))
def test_any_spaced_ssn_after_a_time_or_before_a_count_is_withheld(time: str, seconds: bool, ssn: str, count: int) -> None:
    time += ":07" if seconds else ""
    assert clean(f"at {time} {ssn} here") == f"at {time} <SSN_1> here"
    assert clean(f"2024-06-03T{time} {ssn}") == f"2024-06-03T{time} <SSN_1>"
    assert clean(f"id {ssn} {count} copies") == f"id <SSN_1> {count} copies"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Bob 219 09 9999 2", "Bob <SSN_1> 2"),
        ("dependent 219 09 9999 1, spouse", "dependent <SSN_1> 1, spouse"),
        ("ports 443 22 8080 5432", "ports <SSN_1> 5432"),  # the stated cost of failing closed
        ("sizes 512 64 1024 2.", "sizes <SSN_1> 2."),
    ],
)
def test_a_spaced_ssn_before_one_number_is_withheld_whatever_follows(text: str, kept: str) -> None:
    """One number after a spaced SSN, then a word, punctuation or the text's end: withheld (fail
    closed). Reading it as more of a run of numbers at the end kept "Bob 219 09 9999 2" raw (revQ),
    to keep port lists whose first three numbers read as an SSN (revP): an SSN on disk costs more."""
    assert clean(text) == kept
