"""Numbers that text kept for what stood beside them, though a tag or a participant withheld them
(left16): a spaced SSN after a date and a space (it was refused as more of a longer number; a date
of any written form, fixO), a NANP phone with two groups or more joined after it (read as no phone,
as one with a single group is), a card right after a "+" (refused so an international phone would
not be read as a card). Dates, versions, timestamps, ranges and lists stay as they were; an id of
dashed groups does too unless it holds an SSN or a NANP phone with two groups or more on one side,
which is withheld (fail closed: "lot 12-34-567-89-0123" is "lot 12-34-<SSN_1>"), and a spaced SSN
after a date is withheld whatever the date means ("2024-06-01 123 45 6789" is "2024-06-01 <SSN_1>")."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cards import luhn_complete
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tag_leaks import held

import memdb
from memdb.memory.layout import GLOBALS
from memdb.memory.sanitize import RegexSanitizer

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
S = RegexSanitizer()


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


@pytest.mark.parametrize(
    ("written", "text"),
    [
        ("born 1985-03-14 219 09 9999", "born 1985-03-14 <SSN_1>"),
        ("born 14.03.1985 219 09 9999", "born 14.03.1985 <SSN_1>"),
        ("born 03/14/1985 219 09 9999 in Ohio", "born 03/14/1985 <SSN_1> in Ohio"),
        ("dob 1985-03-14 219 09 9999 ssn", "dob 1985-03-14 <SSN_1> ssn"),
        ("born 1985-3-14 219 09 9999", "born 1985-3-14 <SSN_1>"),  # any written date (fixO)
        ("born 1985-14-03 219 09 9999", "born 1985-14-03 <SSN_1>"),
        ("born 14.3.1985 219 09 9999", "born 14.3.1985 <SSN_1>"),
        ("born 14 March 1985 219 09 9999", "born 14 March 1985 <SSN_1>"),
        ("born March 14th, 1985 219 09 9999", "born March 14th, 1985 <SSN_1>"),
        ("born September. 30th, 1985 219 09 9999", "born September. 30th, 1985 <SSN_1>"),  # the longest
        ("dob 14-Mar-1985 219 09 9999", "dob 14-Mar-1985 <SSN_1>"),
        ("415-200-0000-646-555-010", "<PHONE_1>-646-555-010"),
        ("call 415-200-0000-646-555", "call <PHONE_1>-646-555"),
        ("ref 01-02-415-200-0000", "ref 01-02-<PHONE_1>"),
        ("ids 219-09-9999-01-02", "ids <SSN_1>-01-02"),
        ("+4111 1111 1111 1111", "+<CARD_1>"),
        ("card +4111111111111111 on file", "card +<CARD_1> on file"),
        ("+5500-0000-0000-0004", "+<CARD_1>"),
    ],
)
def test_a_number_kept_for_its_neighbour_is_withheld(tmp_path: Path, written: str, text: str) -> None:
    assert clean(written) == text
    raws = ["219099999", "4152000000", "4111111111111111", "5500000000000004"]
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        ep = db.owner("a").record("debug", written, outcome="success", tags=[written], participants=["bob", written])
        assert ep.summary == text and "<" in ep.participants[1] and "withheld" in ep.tags[0], (ep.tags, ep.participants)
        assert [name for name in GLOBALS if held(name, db, raws)] == []


@pytest.mark.parametrize(
    "text",
    [
        "123-45-6789-01",  # one group beside a value is no second id (test_joined_ids)
        "415-200-0000-01",
        "on 2024-06-03 12 219 09 9999",  # after a number and a space, a longer spaced number
        "2024-06-03T10:00:00Z 219 09",
        "2024-06-03-2024-06-14",
        "from 2024-06-01-2024-06-30 to 01.07.2024-31.07.2024",
        "2024-06-03 10:00:00 build 1024 2048 4096",
        "v1.2.3-200-300-4000-5000",
        "ports 8080-8081-8082-8083",
        "PO-2026-000123-000124-000125",
        "ISBN 978-3-16-148410-0",
        "size=512+256+1024",
        "tel +44 7911 123456 ok",  # a phone, not a card
    ],
)
def test_dates_versions_ranges_and_ids_stay(text: str) -> None:
    """None of these holds an SSN or a phone beside a date or two groups or more (below)."""
    kept = clean(text)
    assert kept == text or (text.startswith("tel") and kept == "tel <PHONE_1> ok"), kept


@pytest.mark.parametrize(
    ("text", "withheld"),
    [
        ("lot 12-34-567-89-0123", "lot 12-34-<SSN_1>"),  # an SSN with two groups or more joined before it
        ("part 10-20-300-40-5000", "part 10-20-<SSN_1>"),
        ("ref 10-20-415-200-0000", "ref 10-20-<PHONE_1>"),
        ("lot 567-89-0123-12-34", "lot <SSN_1>-12-34"),  # or after it
        ("2024-06-01 123 45 6789", "2024-06-01 <SSN_1>"),  # a spaced SSN after a date
    ],
)
def test_an_id_holding_an_ssn_by_its_neighbours_loses_the_ssn(text: str, withheld: str) -> None:
    """Fail closed, as the README says: an SSN or a NANP phone with two groups or more joined on one
    side, or spaced after a date, is withheld from an id too."""
    assert clean(text) == withheld


# --- properties ----------------------------------------------------------------------------------

_DATES = st.dates(dt.date(1900, 1, 1), dt.date(2099, 12, 31)).flatmap(
    lambda d: st.sampled_from([d.strftime("%Y-%m-%d"), d.strftime("%d.%m.%Y"), d.strftime("%m/%d/%Y"), d.strftime("%Y/%m/%d")])
)
_MONTHS = ("January", "Feb", "March", "Apr.", "May", "June", "Jul", "August", "Sept", "october", "NOV", "December")
_DAY_SUFFIX = st.sampled_from(["", "st", "th"])
# Dates as people write them (fixO): one-digit parts, dots and slashes, the day first or the month
# first with the year first or last, a month's name
_WRITTEN_DATES = st.tuples(st.dates(dt.date(1900, 1, 1), dt.date(2099, 12, 31)), _DAY_SUFFIX, st.sampled_from("-./")).flatmap(
    lambda t: st.sampled_from(
        [
            f"{t[0].year}{t[2]}{t[0].month}{t[2]}{t[0].day}",
            f"{t[0].year}{t[2]}{t[0].day:02d}{t[2]}{t[0].month:02d}",
            f"{t[0].day}{t[2]}{t[0].month}{t[2]}{t[0].year}",
            f"{t[0].month}{t[2]}{t[0].day}{t[2]}{t[0].year}",
            f"{t[0].day}{t[1]} {_MONTHS[t[0].month - 1]} {t[0].year}",
            f"{t[0].day:02d}-{_MONTHS[t[0].month - 1]}-{t[0].year}",
            f"{_MONTHS[t[0].month - 1]} {t[0].day}{t[1]}, {t[0].year}",
            f"{_MONTHS[t[0].month - 1]} {t[0].day} {t[0].year}",
        ]
    )
)
_SSNS = st.tuples(st.integers(1, 899).filter(lambda a: a != 666), st.integers(1, 99), st.integers(1, 9999)).map(
    lambda t: f"{t[0]:03d} {t[1]:02d} {t[2]:04d}"
)
_NANP = st.tuples(st.integers(200, 999), st.integers(200, 999), st.integers(0, 9999)).map(lambda t: f"{t[0]}-{t[1]}-{t[2]:04d}")
_GROUPS = st.lists(st.integers(0, 9999).map(str), min_size=2, max_size=5).map(lambda gs: "-" + "-".join(gs))
_CARDS = st.tuples(st.sampled_from("3456"), st.integers(15, 18)).flatmap(
    lambda t: st.text("0123456789", min_size=t[1] - 1, max_size=t[1] - 1).map(lambda body: luhn_complete(t[0] + body))
)


@settings(max_examples=200, deadline=None)
@given(date=_DATES, ssn=_SSNS)
def test_any_spaced_ssn_after_any_date_is_withheld(date: str, ssn: str) -> None:
    assert clean(f"born {date} {ssn} here") == f"born {date} <SSN_1> here"


@settings(max_examples=300, deadline=None)
@given(date=_WRITTEN_DATES, ssn=_SSNS)
def test_any_spaced_ssn_after_any_written_date_is_withheld(date: str, ssn: str) -> None:
    assert clean(f"born {date} {ssn} here") == f"born {date} <SSN_1> here"


@settings(max_examples=200, deadline=None)
@given(phone=_NANP, groups=_GROUPS)
def test_any_phone_with_groups_after_it_is_withheld(phone: str, groups: str) -> None:
    out = clean(f"call {phone}{groups}")
    assert "<" in out and phone not in out, out  # <PHONE_1>, or a card or an id it makes with the groups


@settings(max_examples=200, deadline=None)
@given(card=_CARDS, spaced=st.booleans())
def test_any_card_after_a_plus_is_withheld(card: str, spaced: bool) -> None:
    written = " ".join(card[i : i + 4] for i in range(0, len(card), 4)) if spaced else card
    assert clean(f"pay +{written} now") == "pay +<CARD_1> now"


@settings(max_examples=200, deadline=None)
@given(
    dates=st.lists(_DATES, min_size=1, max_size=3),
    version=st.lists(st.integers(0, 99), min_size=2, max_size=3).map(lambda v: ".".join(map(str, v))),
    time=st.times().map(lambda t: t.strftime("%H:%M:%S")),
)
def test_dates_ranges_timestamps_and_versions_stay(dates: list[str], version: str, time: str) -> None:
    text = f"from {'-'.join(dates)} at {dates[0]}T{time}Z on {dates[-1]} {time}, v{version} ({version})"
    assert clean(text) == text


@settings(max_examples=300, deadline=None)
@given(
    date=_WRITTEN_DATES,
    version=st.lists(st.integers(0, 99), min_size=2, max_size=3).map(lambda v: ".".join(map(str, v))),
    time=st.times().map(lambda t: t.strftime("%H:%M:%S")),
    count=st.integers(0, 10**6),
)
def test_written_dates_times_and_versions_stay(date: str, version: str, time: str, count: int) -> None:
    text = f"on {date} {time} ({date}, {time}) v{version} {version} in {count} runs"
    assert clean(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1985-3-14 " * 5000 + "219 09 9999", "1985-3-14 " * 5000 + "<SSN_1>"),
        ("March 14, 1985 " * 5000 + "219 09 9999", "March 14, 1985 " * 5000 + "<SSN_1>"),
        ("1 219 09 9999 x " * 5000, "1 219 09 9999 x " * 5000),  # each after a number, none a date
        # a number after each but the last: a count, no longer run (priv18: each was kept raw)
        ("14 March 1985 219 09 9999 " * 5000, "14 March 1985 <SSN_1> " * 5000),
        ("12 219 09 9999 5 " * 5000, "12 219 09 9999 5 " * 5000),  # after a number, none a date
    ],
)
def test_dates_before_spaced_numbers_take_linear_time(text: str, expected: str) -> None:
    # Each spaced SSN reads a bounded window before it for a date (test_sanitize.py::test_repetitive_input)
    assert clean(text) == expected
