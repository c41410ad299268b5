"""Plain-language time phrases ("last week", "past 3 days", "in May") turned into UTC windows.

Pure functions of the phrase and ``now`` (UTC), so every boundary is testable. Windows are
half-open ``[start, end)`` in UTC; calendar phrases use whole UTC days, and weeks start on
``week_start`` (0 = Monday). Rolling phrases ("past 3 days") end at ``now`` itself.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["OPEN_END", "OPEN_START", "TimeWindow", "day_of", "find_time_phrase"]

UTC = dt.UTC
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], 1
    )
}
_MONTH_ABBR = {m[:3]: i for m, i in _MONTHS.items()}
_WEEKDAYS = {d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "couple of": 2, "a couple of": 2, "few": 3, "a few": 3,
}  # fmt: skip
# longer alternatives first: "a couple of" must not match as "a"
_NUM = r"(?P<n>\d{1,4}|a\s+couple\s+of|a\s+few|couple\s+of|few|an|a|one|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT = r"(?P<unit>hours?|days?|weeks?|months?|years?)"
_DATE = r"\d{4}-\d{2}-\d{2}"
_MONTH = (
    r"(?P<month>january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)"
)


OPEN_START: Final = dt.datetime.min.replace(tzinfo=dt.UTC)
"""The start of a window given only an end."""
OPEN_END: Final = dt.datetime.max.replace(tzinfo=dt.UTC)
"""The end of a window given only a start."""


@dataclass(frozen=True)
class TimeWindow:
    """A half-open UTC window ``[start, end)`` and the phrase it came from."""

    start: dt.datetime
    end: dt.datetime
    phrase: str

    def __str__(self) -> str:
        if self.start == OPEN_START or self.end == OPEN_END:
            return self.phrase  # "since ...", "before ...": the open side has no date to show
        last = self.end - dt.timedelta(microseconds=1)
        if self.start.time() == dt.time(0) and self.end.time() == dt.time(0):
            if self.end - self.start == dt.timedelta(days=1):
                return f"{self.phrase} ({day_of(self.start)})"
            return f"{self.phrase} ({day_of(self.start)} to {day_of(last)})"
        return f"{self.phrase} ({day_of(self.start)} {self.start:%H:%M} to {day_of(last)} {last:%H:%M} UTC)"


def day_of(at: dt.datetime) -> str:
    """``YYYY-MM-DD`` with four digits of year also before year 1000 (``%Y`` gives ``1-01-01``)."""
    return f"{at.year:04d}-{at.month:02d}-{at.day:02d}"


def _day(d: dt.date) -> dt.datetime:
    return dt.datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month_start(year: int, month: int) -> dt.datetime:
    while month < 1:
        month += 12
        year -= 1
    while month > 12:
        month -= 12
        year += 1
    return dt.datetime(year, month, 1, tzinfo=UTC)


def _week_start(now: dt.datetime, week_start: int) -> dt.datetime:
    today = _day(now.date())
    return today - dt.timedelta(days=(today.weekday() - week_start) % 7)


def _count(word: str) -> int:
    word = re.sub(r"\s+", " ", word.lower())
    return int(word) if word.isdigit() else _NUMBERS[word]


def _parse_date(text: str) -> dt.datetime | None:
    try:
        return _day(dt.date.fromisoformat(text))
    except ValueError:
        return None


def _rolling(now: dt.datetime, n: int, unit: str) -> dt.datetime:
    unit = unit.rstrip("s")
    if unit == "hour":
        return now - dt.timedelta(hours=n)
    if unit == "day":
        return now - dt.timedelta(days=n)
    if unit == "week":
        return now - dt.timedelta(weeks=n)
    if unit == "month":
        start = _month_start(now.year, now.month - n)
        last_day = (_month_start(start.year, start.month + 1) - dt.timedelta(days=1)).day
        return start.replace(day=min(now.day, last_day), hour=now.hour, minute=now.minute, second=now.second, microsecond=now.microsecond)
    try:
        return now.replace(year=now.year - n)
    except ValueError:  # Feb 29 in a year without one
        return now.replace(year=now.year - n, day=28)


def _match(phrase: re.Match[str], now: dt.datetime, week_start: int) -> TimeWindow | None:
    g = {k: v.lower() if v else v for k, v in phrase.groupdict().items()}  # IGNORECASE matched the original case
    text = phrase.group(0)
    today = _day(now.date())
    end_now = now + dt.timedelta(microseconds=1)
    kind = next(k for k, v in g.items() if v is not None and k.startswith("p_"))
    if kind == "p_today":
        return TimeWindow(today, today + dt.timedelta(days=1), text)
    if kind == "p_yesterday":
        return TimeWindow(today - dt.timedelta(days=1), today, text)
    if kind == "p_thisweek":
        ws = _week_start(now, week_start)
        return TimeWindow(ws, ws + dt.timedelta(days=7), text)
    if kind == "p_lastweek":
        ws = _week_start(now, week_start)
        return TimeWindow(ws - dt.timedelta(days=7), ws, text)
    if kind == "p_thismonth":
        return TimeWindow(_month_start(now.year, now.month), _month_start(now.year, now.month + 1), text)
    if kind == "p_lastmonth":
        return TimeWindow(_month_start(now.year, now.month - 1), _month_start(now.year, now.month), text)
    if kind == "p_thisyear":
        return TimeWindow(_month_start(now.year, 1), _month_start(now.year + 1, 1), text)
    if kind == "p_lastyear":
        return TimeWindow(_month_start(now.year - 1, 1), _month_start(now.year, 1), text)
    if kind == "p_past":
        n = _count(g["n"])
        return TimeWindow(_rolling(now, n, g["unit"]), end_now, text)
    if kind == "p_pastunit":  # "the past week" = past 1 week
        return TimeWindow(_rolling(now, 1, g["unit1"]), end_now, text)
    if kind == "p_ago":
        n = _count(g["n2"])
        unit = g["unit2"].rstrip("s")
        if unit == "day":
            d = today - dt.timedelta(days=n)
            return TimeWindow(d, d + dt.timedelta(days=1), text)
        if unit == "week":
            ws = _week_start(now, week_start) - dt.timedelta(weeks=n)
            return TimeWindow(ws, ws + dt.timedelta(days=7), text)
        if unit == "month":
            return TimeWindow(_month_start(now.year, now.month - n), _month_start(now.year, now.month - n + 1), text)
        if unit == "year":
            return TimeWindow(_month_start(now.year - n, 1), _month_start(now.year - n + 1, 1), text)
        return TimeWindow(now - dt.timedelta(hours=n + 1), now - dt.timedelta(hours=n) + dt.timedelta(microseconds=1), text)
    if kind == "p_sinceday":
        wd = _WEEKDAYS[g["weekday"].lower()]
        start = today - dt.timedelta(days=(today.weekday() - wd) % 7)
        return TimeWindow(start, end_now, text)
    if kind == "p_sincedate":
        since = _parse_date(g["since"])
        return TimeWindow(since, end_now, text) if since and since < end_now else None
    if kind == "p_between":
        a, b = _parse_date(g["a"]), _parse_date(g["b"])
        if a is None or b is None:
            return None
        a, b = min(a, b), max(a, b)
        return TimeWindow(a, b + dt.timedelta(days=1), text)
    if kind == "p_month":
        name = g["month"].lower()
        month = _MONTHS.get(name) or _MONTH_ABBR[name[:3]]
        if g.get("year"):
            year = int(g["year"])
        else:  # the most recent such month that has begun
            year = now.year if month <= now.month else now.year - 1
        return TimeWindow(_month_start(year, month), _month_start(year, month + 1), text)
    if kind == "p_on":
        day = _parse_date(g["date"])
        return TimeWindow(day, day + dt.timedelta(days=1), text) if day else None
    return None


_PHRASES = re.compile(
    r"\b(?:"
    r"(?P<p_between>between\s+(?P<a>" + _DATE + r")\s+and\s+(?P<b>" + _DATE + r"))"
    r"|(?P<p_sincedate>since\s+(?P<since>" + _DATE + r"))"
    r"|(?P<p_on>(?:on\s+)?(?P<date>" + _DATE + r"))"
    r"|(?P<p_today>today)"
    r"|(?P<p_yesterday>yesterday)"
    r"|(?P<p_thisweek>this\s+week)"
    r"|(?P<p_lastweek>last\s+week|previous\s+week)"
    r"|(?P<p_thismonth>this\s+month)"
    r"|(?P<p_lastmonth>last\s+month|previous\s+month)"
    r"|(?P<p_thisyear>this\s+year)"
    r"|(?P<p_lastyear>last\s+year|previous\s+year)"
    r"|(?P<p_ago>" + _NUM.replace("?P<n>", "?P<n2>") + r"\s+" + _UNIT.replace("?P<unit>", "?P<unit2>") + r"\s+ago)"
    r"|(?P<p_past>(?:(?:in\s+)?(?:the\s+)?(?:past|last|previous))\s+" + _NUM + r"\s+" + _UNIT + r")"
    r"|(?P<p_pastunit>(?:in\s+)?(?:the\s+)?past\s+(?P<unit1>hour|day|week|month|year))"
    r"|(?P<p_sinceday>since\s+(?:last\s+)?(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday))"
    r"|(?P<p_month>(?:in|during)\s+" + _MONTH + r"(?:\s+(?P<year>\d{4}))?)"
    r")\b",
    re.IGNORECASE,
)


def find_time_phrase(text: str, now: dt.datetime, week_start: int = 0) -> tuple[TimeWindow | None, str]:
    """The first time phrase in ``text`` as a window, and the text without it.

    Phrases naming dates outside what a datetime can hold (year 0, 9999 + 1) yield no window.
    """
    for m in _PHRASES.finditer(text):  # IGNORECASE: no lower(), which can change lengths ("İ")
        try:
            window = _match(m, now.astimezone(UTC), week_start)
        except (ValueError, OverflowError):
            window = None
        if window is not None:
            rest = (text[: m.start()] + " " + text[m.end() :]).strip()
            return TimeWindow(window.start, window.end, text[m.start() : m.end()]), re.sub(r"\s+", " ", rest)
    return None, text
