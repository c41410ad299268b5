"""Time phrases to half-open UTC windows: exact boundaries for every supported phrase.

Reference calendar: 2026-06-15 is a Monday; 2026-01-01 is a Thursday; 2024 is a leap year, 2026 is not.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memdb.query.timephrase import TimeWindow, find_time_phrase

UTC = dt.UTC
US = dt.timedelta(microseconds=1)
DAY = dt.timedelta(days=1)


def U(y: int, m: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> dt.datetime:
    return dt.datetime(y, m, d, h, mi, s, us, tzinfo=UTC)


def before(moment: dt.datetime) -> dt.datetime:
    """One microsecond before ``moment``."""
    return moment - US


def window(text: str, now: dt.datetime, week_start: int = 0) -> tuple[dt.datetime, dt.datetime]:
    w, _ = find_time_phrase(text, now, week_start)
    assert w is not None, f"no window for {text!r}"
    return w.start, w.end


MON = U(2026, 6, 15, 12)  # a Monday noon
WED = U(2026, 6, 17, 10, 30)  # a Wednesday mid-morning


# --- today / yesterday ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "start"),
    [
        (U(2026, 6, 15), U(2026, 6, 15)),  # exactly midnight: the day that just began
        (before(U(2026, 6, 16)), U(2026, 6, 15)),  # last microsecond of the day
        (MON, U(2026, 6, 15)),
        (U(2026, 1, 1), U(2026, 1, 1)),
        (before(U(2026, 1, 1)), U(2025, 12, 31)),
        (U(2024, 2, 29, 8), U(2024, 2, 29)),
    ],
)
def test_today(now: dt.datetime, start: dt.datetime) -> None:
    assert window("today", now) == (start, start + DAY)


@pytest.mark.parametrize(
    ("now", "start"),
    [
        (U(2026, 6, 15), U(2026, 6, 14)),
        (before(U(2026, 6, 16)), U(2026, 6, 14)),
        (U(2026, 1, 1), U(2025, 12, 31)),  # across the year end
        (U(2024, 3, 1), U(2024, 2, 29)),  # leap year
        (U(2026, 3, 1), U(2026, 2, 28)),  # non-leap year
        (before(U(2026, 3, 1)), U(2026, 2, 27)),
        (U(2026, 2, 1, 5), U(2026, 1, 31)),
    ],
)
def test_yesterday(now: dt.datetime, start: dt.datetime) -> None:
    assert window("yesterday", now) == (start, start + DAY)


# --- this / last week -------------------------------------------------------------------------


@pytest.mark.parametrize("offset", range(7))
def test_weeks_monday_start(offset: int) -> None:
    now = U(2026, 6, 15, 9) + dt.timedelta(days=offset)  # Mon .. Sun of one week
    assert window("this week", now) == (U(2026, 6, 15), U(2026, 6, 22))
    assert window("last week", now) == (U(2026, 6, 8), U(2026, 6, 15))
    assert window("previous week", now) == (U(2026, 6, 8), U(2026, 6, 15))


@pytest.mark.parametrize("offset", range(7))
def test_weeks_sunday_start(offset: int) -> None:
    now = U(2026, 6, 14, 9) + dt.timedelta(days=offset)  # Sun 14 .. Sat 20
    assert window("this week", now, week_start=6) == (U(2026, 6, 14), U(2026, 6, 21))
    assert window("last week", now, week_start=6) == (U(2026, 6, 7), U(2026, 6, 14))


def test_week_start_changes_the_answer_on_a_sunday() -> None:
    sunday = U(2026, 6, 21, 12)
    assert window("this week", sunday, week_start=0) == (U(2026, 6, 15), U(2026, 6, 22))
    assert window("this week", sunday, week_start=6) == (U(2026, 6, 21), U(2026, 6, 28))
    assert window("last week", sunday, week_start=0) == (U(2026, 6, 8), U(2026, 6, 15))
    assert window("last week", sunday, week_start=6) == (U(2026, 6, 14), U(2026, 6, 21))


def test_week_boundary_at_monday_midnight() -> None:
    assert window("this week", U(2026, 6, 15)) == (U(2026, 6, 15), U(2026, 6, 22))
    assert window("last week", U(2026, 6, 15)) == (U(2026, 6, 8), U(2026, 6, 15))
    just_before = before(U(2026, 6, 15))  # Sunday 23:59:59.999999
    assert window("this week", just_before) == (U(2026, 6, 8), U(2026, 6, 15))
    assert window("last week", just_before) == (U(2026, 6, 1), U(2026, 6, 8))


def test_weeks_across_the_year_end() -> None:
    new_year = U(2026, 1, 1)  # a Thursday
    assert window("this week", new_year) == (U(2025, 12, 29), U(2026, 1, 5))
    assert window("last week", new_year) == (U(2025, 12, 22), U(2025, 12, 29))
    assert window("last week", new_year, week_start=6) == (U(2025, 12, 21), U(2025, 12, 28))


# --- this / last month ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "this", "last"),
    [
        (U(2026, 1, 31, 12), (U(2026, 1, 1), U(2026, 2, 1)), (U(2025, 12, 1), U(2026, 1, 1))),
        (U(2026, 1, 1), (U(2026, 1, 1), U(2026, 2, 1)), (U(2025, 12, 1), U(2026, 1, 1))),
        (before(U(2026, 1, 1)), (U(2025, 12, 1), U(2026, 1, 1)), (U(2025, 11, 1), U(2025, 12, 1))),
        (U(2024, 3, 1), (U(2024, 3, 1), U(2024, 4, 1)), (U(2024, 2, 1), U(2024, 3, 1))),
        (U(2026, 3, 1), (U(2026, 3, 1), U(2026, 4, 1)), (U(2026, 2, 1), U(2026, 3, 1))),
        (before(U(2026, 3, 1)), (U(2026, 2, 1), U(2026, 3, 1)), (U(2026, 1, 1), U(2026, 2, 1))),
        (U(2026, 12, 15), (U(2026, 12, 1), U(2027, 1, 1)), (U(2026, 11, 1), U(2026, 12, 1))),
    ],
)
def test_months(now: dt.datetime, this: tuple[dt.datetime, dt.datetime], last: tuple[dt.datetime, dt.datetime]) -> None:
    assert window("this month", now) == this
    assert window("last month", now) == last
    assert window("previous month", now) == last


# --- this / last year -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "year"),
    [(U(2026, 1, 1), 2026), (before(U(2026, 1, 1)), 2025), (MON, 2026), (U(2024, 2, 29), 2024)],
)
def test_years(now: dt.datetime, year: int) -> None:
    assert window("this year", now) == (U(year, 1, 1), U(year + 1, 1, 1))
    assert window("last year", now) == (U(year - 1, 1, 1), U(year, 1, 1))
    assert window("previous year", now) == (U(year - 1, 1, 1), U(year, 1, 1))


# --- past / last N units (rolling, ending at now) ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("past 3 days", dt.timedelta(days=3)),
        ("last 3 days", dt.timedelta(days=3)),
        ("previous 3 days", dt.timedelta(days=3)),
        ("in the past 3 days", dt.timedelta(days=3)),
        ("the last 3 days", dt.timedelta(days=3)),
        ("past three days", dt.timedelta(days=3)),
        ("past 1 day", dt.timedelta(days=1)),
        ("past one day", dt.timedelta(days=1)),
        ("the last couple of days", dt.timedelta(days=2)),
        ("the past couple of days", dt.timedelta(days=2)),
        ("last few days", dt.timedelta(days=3)),
        ("past ten days", dt.timedelta(days=10)),
        ("past 2 weeks", dt.timedelta(weeks=2)),
        ("last two weeks", dt.timedelta(weeks=2)),
        ("past 1 week", dt.timedelta(weeks=1)),
        ("past 24 hours", dt.timedelta(hours=24)),
        ("past an hour", dt.timedelta(hours=1)),
        ("past 5 hours", dt.timedelta(hours=5)),
        ("past 1 hour", dt.timedelta(hours=1)),
        ("the past week", dt.timedelta(weeks=1)),
        ("in the past week", dt.timedelta(weeks=1)),
        ("past day", dt.timedelta(days=1)),
        ("the past hour", dt.timedelta(hours=1)),
    ],
)
@pytest.mark.parametrize("now", [MON, U(2026, 6, 15), before(U(2026, 6, 15)), U(2026, 1, 1)])
def test_past_fixed_length(text: str, delta: dt.timedelta, now: dt.datetime) -> None:
    assert window(text, now) == (now - delta, now + US)


@pytest.mark.parametrize(
    ("text", "now", "start"),
    [
        ("past 1 month", U(2024, 3, 1), U(2024, 2, 1)),
        ("past 1 month", U(2026, 3, 1), U(2026, 2, 1)),
        ("past 1 month", U(2024, 3, 31, 9), U(2024, 2, 29, 9)),  # clamped to the leap day
        ("past 1 month", U(2026, 3, 31, 9), U(2026, 2, 28, 9)),  # clamped to Feb 28
        ("past 1 month", before(U(2026, 3, 1)), before(U(2026, 1, 29))),
        ("past month", U(2026, 1, 31, 12), U(2025, 12, 31, 12)),
        ("the past month", U(2026, 1, 15), U(2025, 12, 15)),
        ("past 3 months", U(2026, 5, 31), U(2026, 2, 28)),
        ("past three months", U(2026, 6, 15, 12), U(2026, 3, 15, 12)),
        ("past 2 months", U(2026, 1, 15), U(2025, 11, 15)),
        ("past 12 months", U(2026, 6, 15), U(2025, 6, 15)),
        ("past ten months", U(2026, 6, 15), U(2025, 8, 15)),
        ("past 14 months", U(2026, 1, 31), U(2024, 11, 30)),
        ("past couple of months", U(2026, 4, 30), U(2026, 2, 28)),
        ("past year", U(2026, 6, 15), U(2025, 6, 15)),
        ("past 2 years", U(2026, 6, 15, 3), U(2024, 6, 15, 3)),
        ("past 1 year", U(2024, 2, 29, 6), U(2023, 2, 28, 6)),  # no Feb 29 in 2023
    ],
)
def test_past_calendar_length(text: str, now: dt.datetime, start: dt.datetime) -> None:
    assert window(text, now) == (start, now + US)


def test_past_years_from_leap_day_into_a_leap_year() -> None:
    now = U(2028, 2, 29, 12)
    assert window("past 4 years", now) == (U(2024, 2, 29, 12), now + US)


# --- N units ago ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        ("3 days ago", MON, (U(2026, 6, 12), U(2026, 6, 13))),
        ("three days ago", U(2026, 6, 15), (U(2026, 6, 12), U(2026, 6, 13))),
        ("3 days ago", before(U(2026, 6, 15)), (U(2026, 6, 11), U(2026, 6, 12))),
        ("a day ago", U(2026, 1, 1), (U(2025, 12, 31), U(2026, 1, 1))),
        ("1 day ago", U(2024, 3, 1), (U(2024, 2, 29), U(2024, 3, 1))),
        ("0 days ago", MON, (U(2026, 6, 15), U(2026, 6, 16))),
        ("couple of days ago", MON, (U(2026, 6, 13), U(2026, 6, 14))),
        ("few days ago", MON, (U(2026, 6, 12), U(2026, 6, 13))),
        ("1 week ago", WED, (U(2026, 6, 8), U(2026, 6, 15))),
        ("two weeks ago", WED, (U(2026, 6, 1), U(2026, 6, 8))),
        ("one week ago", U(2026, 1, 1), (U(2025, 12, 22), U(2025, 12, 29))),
        ("2 months ago", U(2026, 1, 31), (U(2025, 11, 1), U(2025, 12, 1))),
        ("1 month ago", U(2026, 1, 1), (U(2025, 12, 1), U(2026, 1, 1))),
        ("a month ago", U(2024, 3, 31), (U(2024, 2, 1), U(2024, 3, 1))),
        ("13 months ago", MON, (U(2025, 5, 1), U(2025, 6, 1))),
        ("a year ago", MON, (U(2025, 1, 1), U(2026, 1, 1))),
        ("2 years ago", U(2026, 1, 1), (U(2024, 1, 1), U(2025, 1, 1))),
        ("3 hours ago", MON, (U(2026, 6, 15, 8), U(2026, 6, 15, 9) + US)),
        ("an hour ago", U(2026, 1, 1), (U(2025, 12, 31, 22), U(2025, 12, 31, 23) + US)),
    ],
)
def test_ago(text: str, now: dt.datetime, expected: tuple[dt.datetime, dt.datetime]) -> None:
    assert window(text, now) == expected


def test_weeks_ago_follows_week_start() -> None:
    sunday = U(2026, 6, 21, 12)
    assert window("1 week ago", sunday, week_start=0) == (U(2026, 6, 8), U(2026, 6, 15))
    assert window("1 week ago", sunday, week_start=6) == (U(2026, 6, 14), U(2026, 6, 21))


@pytest.mark.parametrize(
    ("text", "phrase"),
    [("met Bob a couple of days ago at lunch", "a couple of days ago"), ("met Bob a few days ago at lunch", "a few days ago")],
)
def test_ago_with_article_is_removed_whole(text: str, phrase: str) -> None:
    w, rest = find_time_phrase(text, MON)
    assert w is not None
    assert w.phrase == phrase
    assert rest == "met Bob at lunch"


# --- since <weekday> --------------------------------------------------------------------------

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


@pytest.mark.parametrize(
    ("day", "start"),
    [
        ("monday", U(2026, 6, 15)),
        ("tuesday", U(2026, 6, 16)),
        ("wednesday", U(2026, 6, 17)),  # today is Wednesday: since today's midnight
        ("thursday", U(2026, 6, 11)),
        ("friday", U(2026, 6, 12)),
        ("saturday", U(2026, 6, 13)),
        ("sunday", U(2026, 6, 14)),
    ],
)
@pytest.mark.parametrize("week_start", [0, 6])
def test_since_weekday(day: str, start: dt.datetime, week_start: int) -> None:
    assert window(f"since {day}", WED, week_start) == (start, WED + US)
    assert window(f"since last {day.title()}", WED, week_start) == (start, WED + US)


@pytest.mark.parametrize("index", range(7))
def test_since_weekday_when_today_is_that_weekday(index: int) -> None:
    today = U(2026, 6, 15) + dt.timedelta(days=index)
    for now in (today, today + dt.timedelta(hours=13), before(today + DAY)):
        assert window(f"since {WEEKDAYS[index]}", now) == (today, now + US)
    # one microsecond before that weekday starts, it means a week earlier
    assert window(f"since {WEEKDAYS[index]}", before(today)) == (today - 7 * DAY, today)


# --- since <date> -----------------------------------------------------------------------------


def test_since_date() -> None:
    assert window("since 2026-06-01", MON) == (U(2026, 6, 1), MON + US)
    assert window("since 2026-06-15", U(2026, 6, 15)) == (U(2026, 6, 15), U(2026, 6, 15) + US)
    assert window("since 2025-12-31", U(2026, 1, 1)) == (U(2025, 12, 31), U(2026, 1, 1) + US)


def test_since_invalid_date_is_no_window() -> None:
    assert find_time_phrase("since 2026-02-30", MON) == (None, "since 2026-02-30")


def test_since_future_date_is_not_inverted() -> None:
    w, _ = find_time_phrase("since 2026-07-01", MON)
    assert w is None or w.start < w.end


# --- in <month> [year] ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        ("in May", MON, (U(2026, 5, 1), U(2026, 6, 1))),
        ("in May", U(2026, 5, 1), (U(2026, 5, 1), U(2026, 6, 1))),  # May has just begun
        ("in May", U(2026, 5, 20), (U(2026, 5, 1), U(2026, 6, 1))),  # now is in May
        ("in May", before(U(2026, 5, 1)), (U(2025, 5, 1), U(2025, 6, 1))),  # not begun yet: last year's
        ("in December", U(2026, 1, 15), (U(2025, 12, 1), U(2026, 1, 1))),
        ("in December", before(U(2027, 1, 1)), (U(2026, 12, 1), U(2027, 1, 1))),
        ("in December", U(2026, 12, 1), (U(2026, 12, 1), U(2027, 1, 1))),
        ("in January", U(2026, 1, 1), (U(2026, 1, 1), U(2026, 2, 1))),
        ("in February", U(2024, 3, 1), (U(2024, 2, 1), U(2024, 3, 1))),
        ("in May 2026", U(2026, 1, 1), (U(2026, 5, 1), U(2026, 6, 1))),  # explicit year may lie ahead
        ("in May 2024", MON, (U(2024, 5, 1), U(2024, 6, 1))),
        ("in December 2025", MON, (U(2025, 12, 1), U(2026, 1, 1))),
        ("during feb 2024", MON, (U(2024, 2, 1), U(2024, 3, 1))),
        ("in Sept", MON, (U(2025, 9, 1), U(2025, 10, 1))),
        ("in sep 2025", MON, (U(2025, 9, 1), U(2025, 10, 1))),
        ("in jan", MON, (U(2026, 1, 1), U(2026, 2, 1))),
        ("In MAY", MON, (U(2026, 5, 1), U(2026, 6, 1))),
    ],
)
def test_in_month(text: str, now: dt.datetime, expected: tuple[dt.datetime, dt.datetime]) -> None:
    assert window(text, now) == expected


def test_in_month_followed_by_a_non_year_number() -> None:
    w, rest = find_time_phrase("in May 20266", MON)
    assert w is not None and (w.start, w.end, w.phrase) == (U(2026, 5, 1), U(2026, 6, 1), "in May")
    assert rest == "20266"


# --- on <date> / bare ISO date ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "phrase"),
    [
        ("on 2026-07-01", (U(2026, 7, 1), U(2026, 7, 2)), "on 2026-07-01"),
        ("2026-07-01", (U(2026, 7, 1), U(2026, 7, 2)), "2026-07-01"),
        ("On 2024-02-29", (U(2024, 2, 29), U(2024, 3, 1)), "On 2024-02-29"),
        ("on 2026-12-31", (U(2026, 12, 31), U(2027, 1, 1)), "on 2026-12-31"),
        ("2026-02-28", (U(2026, 2, 28), U(2026, 3, 1)), "2026-02-28"),
    ],
)
def test_on_date(text: str, expected: tuple[dt.datetime, dt.datetime], phrase: str) -> None:
    w, rest = find_time_phrase(f"notes {text} please", MON)
    assert w is not None
    assert (w.start, w.end, w.phrase) == (*expected, phrase)
    assert rest == "notes please"


@pytest.mark.parametrize("text", ["2026-02-30", "on 2026-02-30", "2026-13-01", "2026-00-10", "2026-04-31", "2025-02-29", "12026-07-01"])
def test_invalid_dates_yield_no_window(text: str) -> None:
    assert find_time_phrase(text, MON) == (None, text)


def test_invalid_date_is_skipped_for_a_later_phrase() -> None:
    w, rest = find_time_phrase("on 2026-02-30 then yesterday", MON)
    assert w is not None and (w.start, w.end, w.phrase) == (U(2026, 6, 14), U(2026, 6, 15), "yesterday")
    assert rest == "on 2026-02-30 then"


# --- between <date> and <date> ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("between 2026-06-01 and 2026-06-03", (U(2026, 6, 1), U(2026, 6, 4))),
        ("between 2026-06-03 and 2026-06-01", (U(2026, 6, 1), U(2026, 6, 4))),  # reversed order
        ("between 2026-06-01 and 2026-06-01", (U(2026, 6, 1), U(2026, 6, 2))),
        ("Between 2025-12-30 AND 2026-01-02", (U(2025, 12, 30), U(2026, 1, 3))),
        ("between 2024-02-28 and 2024-02-29", (U(2024, 2, 28), U(2024, 3, 1))),
    ],
)
def test_between(text: str, expected: tuple[dt.datetime, dt.datetime]) -> None:
    w, rest = find_time_phrase(f"what happened {text}?", MON)
    assert w is not None
    assert (w.start, w.end, w.phrase) == (*expected, text)
    assert rest == "what happened ?"


@pytest.mark.parametrize("text", ["between 2026-02-30 and 2026-03-01", "between 2026-03-01 and 2026-02-30"])
def test_between_with_an_invalid_date_is_no_window(text: str) -> None:
    assert find_time_phrase(text, MON) == (None, text)


# --- now in a non-UTC timezone ----------------------------------------------------------------


def test_non_utc_now_is_converted_first() -> None:
    plus2 = dt.datetime(2026, 3, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))  # = 2026-02-28 23:00 UTC
    assert window("today", plus2) == (U(2026, 2, 28), U(2026, 3, 1))
    assert window("yesterday", plus2) == (U(2026, 2, 27), U(2026, 2, 28))
    assert window("this month", plus2) == (U(2026, 2, 1), U(2026, 3, 1))
    assert window("in February", plus2) == (U(2026, 2, 1), U(2026, 3, 1))
    assert window("since saturday", plus2) == (U(2026, 2, 28), U(2026, 2, 28, 23) + US)
    start, end = window("past 3 hours", plus2)
    assert (start, end) == (U(2026, 2, 28, 20), U(2026, 2, 28, 23) + US)
    assert start.tzinfo is UTC and end.tzinfo is UTC

    minus5 = dt.datetime(2025, 12, 31, 20, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5)))  # = 2026-01-01 01:00 UTC
    assert window("today", minus5) == (U(2026, 1, 1), U(2026, 1, 2))
    assert window("this year", minus5) == (U(2026, 1, 1), U(2027, 1, 1))
    assert window("last year", minus5) == (U(2025, 1, 1), U(2026, 1, 1))
    assert window("last week", minus5) == (U(2025, 12, 22), U(2025, 12, 29))


# --- rest text, case, first match -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "phrase", "rest"),
    [
        ("notes from Last Week about memdb", "Last Week", "notes from about memdb"),
        ("LAST WEEK", "LAST WEEK", ""),
        ("  Yesterday   I  met   Ana  ", "Yesterday", "I met Ana"),
        ("deploys In The Past 3 Days", "In The Past 3 Days", "deploys"),
        ("Since Monday, what broke?", "Since Monday", ", what broke?"),
        ("bugs from In December 2025 onwards", "In December 2025", "bugs from onwards"),
        ("TODAY", "TODAY", ""),
        ("summary for this\nweek", "this\nweek", "summary for"),
    ],
)
def test_phrase_removed_and_case_insensitive(text: str, phrase: str, rest: str) -> None:
    w, r = find_time_phrase(text, MON)
    assert w is not None
    assert w.phrase == phrase
    assert r == rest


def test_first_phrase_wins() -> None:
    w, rest = find_time_phrase("yesterday and last week", MON)
    assert w is not None and w.phrase == "yesterday"
    assert rest == "and last week"


def test_no_phrase_returns_text_untouched() -> None:
    text = "  what  is memdb?  "
    assert find_time_phrase(text, MON) == (None, text)


@pytest.mark.parametrize(
    "text",
    [
        "maylan",
        "I may go",
        "in maylan",
        "in mayday",
        "todays notes",
        "yesterdays",
        "this weekend",
        "last weekend",
        "last weeks",
        "a couple days",
        "mondays since",
        "since mon",
        "the march of time",
        "last monday",
        "2026-07-01T10:00",
    ],
)
def test_non_phrases_are_not_matched(text: str) -> None:
    assert find_time_phrase(text, MON) == (None, text)


def test_possessive_still_matches() -> None:
    w, rest = find_time_phrase("today's notes", MON)
    assert w is not None and (w.start, w.end, w.phrase) == (U(2026, 6, 15), U(2026, 6, 16), "today")
    assert rest == "'s notes"


def test_text_whose_lowercase_changes_length() -> None:
    w, rest = find_time_phrase("İstanbul trip last week", MON)
    assert w is not None and w.phrase == "last week"
    assert rest == "İstanbul trip"


@pytest.mark.parametrize(
    "text",
    ["past 9999 years", "9999 years ago", "in May 0000", "in December 9999", "on 9999-12-31", "between 9999-12-30 and 9999-12-31"],
)
def test_out_of_range_does_not_raise(text: str) -> None:
    w, _ = find_time_phrase(text, MON)
    assert w is None or w.start < w.end


# --- __str__ ----------------------------------------------------------------------------------


def test_str_forms() -> None:
    assert str(TimeWindow(U(2026, 6, 14), U(2026, 6, 15), "yesterday")) == "yesterday (2026-06-14)"
    assert str(TimeWindow(U(2026, 6, 15), U(2026, 6, 22), "this week")) == "this week (2026-06-15 to 2026-06-21)"
    rolling = TimeWindow(U(2026, 6, 12, 12), MON + US, "past 3 days")
    assert str(rolling) == "past 3 days (2026-06-12 12:00 to 2026-06-15 12:00 UTC)"


# --- properties -------------------------------------------------------------------------------

NOWS = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 12, 31, 23, 59, 59, 999999), timezones=st.just(UTC))
CALENDAR = ["today", "yesterday", "this week", "last week", "this month", "last month", "this year", "last year"]
CONTAINS_NOW = {"today", "this week", "this month", "this year"}
BEFORE_TODAY = {"yesterday", "last week", "last month", "last year"}


def _midnight(moment: dt.datetime) -> bool:
    return moment.tzinfo is UTC and moment.time() == dt.time(0)


@given(now=NOWS, week_start=st.integers(0, 6))
def test_calendar_phrase_properties(now: dt.datetime, week_start: int) -> None:
    today = dt.datetime(now.year, now.month, now.day, tzinfo=UTC)
    for text in CALENDAR:
        start, end = window(text, now, week_start)
        assert start < end, text
        assert _midnight(start) and _midnight(end), text
        if text in CONTAINS_NOW:
            assert start <= now < end, text
        if text in BEFORE_TODAY:
            assert end <= today, text
    assert window("today", now) == (today, today + DAY)
    assert window("yesterday", now) == (today - DAY, today)
    ws, we = window("this week", now, week_start)
    assert we - ws == 7 * DAY and ws.weekday() == week_start
    assert window("last week", now, week_start) == (ws - 7 * DAY, ws)
    ms, me = window("this month", now)
    assert ms.day == 1 and me.day == 1 and (ms.year, ms.month) == (now.year, now.month)
    assert window("last month", now)[1] == ms
    assert window("last year", now)[1] == window("this year", now)[0] == U(now.year, 1, 1)


@given(now=NOWS, n=st.integers(0, 60), unit=st.sampled_from(["hours", "days", "weeks", "months", "years"]))
def test_rolling_windows_end_at_now(now: dt.datetime, n: int, unit: str) -> None:
    start, end = window(f"past {n} {unit}", now)
    assert end == now + US
    assert start <= now < end


@given(now=NOWS, offset=st.timedeltas(min_value=dt.timedelta(hours=-23, minutes=-59), max_value=dt.timedelta(hours=23, minutes=59)))
def test_timezone_of_now_does_not_matter(now: dt.datetime, offset: dt.timedelta) -> None:
    local = now.astimezone(dt.timezone(offset))
    for text in [*CALENDAR, "past 3 days", "since friday", "in May", "2 weeks ago"]:
        assert window(text, local) == window(text, now), text
