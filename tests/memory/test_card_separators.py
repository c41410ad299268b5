"""A card is found however its groups are parted: by spaces and dashes, and by dots or slashes
between groups of four ("4111/1111/1111/1111" was kept as written, in text and in a tag), while
dates and versions, which use the same separators, stay as written."""

from __future__ import annotations

import datetime as dt
import string

import pytest
from cards import luhn_complete
from hypothesis import given
from hypothesis import strategies as st

from memdb.memory.sanitize import RegexSanitizer
from memdb.memory.sanitize.fields import tags_as_stored
from memdb.memory.text import normalize_tag

S = RegexSanitizer()
SEPARATORS = ["", " ", "-", ".", "/", "\uff0f"]  # the last: a full-width slash, as CJK input writes it


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


def stored_tag(tag: str) -> str:
    """The tag as memories carry it: as capture keeps it, normalised."""
    return normalize_tag(tags_as_stored(S.sanitize, [tag]).stored[0])


@st.composite
def cards16(draw: st.DrawFn) -> str:
    """A Luhn-valid 16-digit card number in four groups, parted by any separator cards are written with
    (none starts with 20, no issuer's: the 2-series is 22-27)."""
    first = draw(st.sampled_from("23456"))
    second = draw(st.sampled_from("234567" if first == "2" else string.digits))
    number = luhn_complete(first + second + draw(st.text(string.digits, min_size=13, max_size=13)))
    return draw(st.sampled_from(SEPARATORS)).join(number[i : i + 4] for i in range(0, 16, 4))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card 4111/1111/1111/1111 ok", "card <CARD_1> ok"),
        ("card 4111/1111/1111/1111, exp 07/29", "card <CARD_1>, exp 07/29"),
        ("paid with 4012.8888.8888.1881.", "paid with <CARD_1>."),
        ("カード４１１１／１１１１／１１１１／１１１１です", "カード<CARD_1>です"),
        ("on 2026/07/01 paid 5555/5555/5555/4444", "on 2026/07/01 paid <CARD_1>"),
        ("4111/1111/1111/1111 and 4111 1111 1111 1111", "<CARD_1> and <CARD_1>"),  # one number, one placeholder
    ],
)
def test_a_card_parted_by_slashes_or_dots_is_withheld_in_text(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    ("tag", "kept"),
    [
        ("4111/1111/1111/1111", "withheld-card"),
        ("4111.1111.1111.1111", "withheld-card"),
        ("Customer 4111/1111/1111/1111", "customer-withheld-card"),
    ],
)
def test_a_card_parted_by_slashes_or_dots_is_withheld_in_a_tag(tag: str, kept: str) -> None:
    assert stored_tag(tag) == kept


@given(card=cards16())
def test_any_16_digit_card_in_four_groups_is_withheld(card: str) -> None:
    assert clean(f"paid with {card} yesterday") == "paid with <CARD_1> yesterday"
    assert stored_tag(card) == "withheld-card"
    assert stored_tag(f"customer {card}") == "customer-withheld-card"


_DATE_FORMATS = ["%Y{s}%m{s}%d", "%d{s}%m{s}%Y", "%m{s}%d{s}%Y", "%Y{s}%-m{s}%-d", "%-d{s}%-m{s}%Y", "%Y{s}%m{s}%d %H:%M"]
dates = st.builds(
    lambda day, form, sep: day.strftime(form.format(s=sep)),
    st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2099, 12, 31)),
    st.sampled_from(_DATE_FORMATS),
    st.sampled_from(["/", ".", "-"]),
)
versions = st.one_of(
    st.lists(st.integers(0, 99_999), min_size=1, max_size=3).flatmap(  # 10.0.19045.3803, 1.2.3.4
        lambda rest: st.integers(0, 99).map(lambda major: ".".join(map(str, [major, *rest])))
    ),
    st.lists(st.integers(1, 99), min_size=1, max_size=3).flatmap(  # calendar versions: 2026.7.1
        lambda rest: st.integers(1900, 2099).map(lambda year: ".".join(map(str, [year, *rest])))
    ),
)


@given(values=st.lists(st.one_of(dates, versions), min_size=1, max_size=4), glue=st.sampled_from([" ", ", ", "-", " - ", "/"]))
def test_dates_and_versions_are_no_cards(values: list[str], glue: str) -> None:
    """Dates, versions and runs of them ("2026/07/01-2026/07/31") part no groups of four; a
    four-part version of small numbers is an IP address (a known limit), never a card. Versions
    have at most four parts here: the last four of a longer one may be four digits each and
    Luhn-valid ("1.4111.1111.1111.2002" is "1.<CARD_1>", as it was before slashes)."""
    assert "<CARD_" not in clean(f"on {glue.join(values)} ok")


@pytest.mark.parametrize(
    "text",
    [
        "seasons 2023/2024/2025/2026 ok",
        "revenue 2023 2024 2025 2026",  # a table's header
        "2023-2024-2025-2026 and 2023.2024.2025.2026",
        "years 2010 2011 2012 2013 2014",
        "revenue 2023 2024 2025 2026 6 7",  # a header and a cell (revF)
        "2023/2024/2025/2026/6",
        "shifts 2000/0400/0800/1200",  # times of day
    ],
)
def test_a_list_of_years_is_no_card(text: str) -> None:
    """Four years in a row passed Luhn's check one time in ten ("2023/2024/2025/2026" does), and
    with a number after them too."""
    assert clean(text) == text


@given(years=st.lists(st.integers(1900, 2099).map(str), min_size=4, max_size=5), sep=st.sampled_from(SEPARATORS[1:]))
def test_years_in_a_row_are_no_card(years: list[str], sep: str) -> None:
    assert "<CARD_" not in clean(f"in {sep.join(years)} ok")


@pytest.mark.parametrize("card", ["2221 0000 0000 0009", "2720/9900/0000/0007", "2200-0000-0000-0004", "2000000000000006"])
def test_a_card_of_the_two_series_is_withheld(card: str) -> None:
    """Mastercard's 2-series and Mir (22-27) are cards parted or not; a number starting with 20
    (no issuer's) is withheld unparted, fail closed, and only parted taken for years or times."""
    assert clean(f"paid {card} ok") == "paid <CARD_1> ok"
