"""Plain-language time phrases ("last week", "since March 3", "before 2026-06-25") turned into windows.

Pure functions of the text, ``now`` and the database's timezone, so every boundary is testable.
A window is half-open ``[start, end)`` of aware UTC datetimes (what the indexes hold); days,
weeks (starting on ``week_start``, 0 = Monday) and months begin at local midnight in
``timezone``, so the local day of a DST change is 23 or 25 hours long. Open sides are
``OPEN_START`` and ``OPEN_END``. The rules (tests/query/test_timephrase.py pins each):

- ``today``, ``yesterday``, ``the day before yesterday``: that whole local day.
- ``earlier today`` / ``earlier this week|month|year``, ``week|month|quarter|year to date`` (and
  ``WTD``, ``MTD``, ``QTD``, ``YTD``): from the start of the unit to now. (In questions only: a
  record's "revenue year to date" gives figures so far, not when a thing happened.)
- ``this|last week|month|year``: the calendar unit (``last`` = the one before the current one);
  ``the week|month|year before last``: two back.
- ``Tuesday``, ``on Tuesday``: the latest Tuesday not in the future, today included;
  ``last Tuesday``: the latest Tuesday before today (on a Tuesday, a week ago);
  ``this Tuesday`` / ``Tuesday this week``: the Tuesday of this week; ``Tuesday last week``:
  the Tuesday of the previous week.
- ``the weekend`` after over/on/at/during..., ``this past weekend``: the latest Saturday and
  Sunday, the current one when today is one of them; ``last weekend``: the same on a weekday,
  the one before on a Saturday or Sunday; ``this weekend``: the current one (on a weekday it
  lies ahead, so it is ignored).
- ``this morning|afternoon|evening``, ``tonight``, ``last night``, ``yesterday evening``,
  ``Monday morning``: local hours 0-12, 12-18, 18-24 of that day; night is 18 h to 6 h.
- ``in|since|... March``, ``last March``, ``March 2025``, ``the March migration``: the calendar
  month; without a year the latest such month that has begun (``last March``: before the current
  month). A month name alone is a word ("June said", "the march of time") unless it stands
  capitalised and whole between a determiner and a noun ("our June release"), and "may"/"march"
  written in lower case or opening a sentence need a preposition ("may we deploy?", "May 3
  people join?").
- ``March 3``, ``3 March``, ``the 3rd of March``, ``March 3rd, 2025``, ``2026-03-03``: that day;
  without a year the latest such day not in the future.
- ``in|during|since|before|after|until 2025`` (1900 to this year; a bare number is no year).
- Chinese, Japanese and Korean dates written with their signs of year, month and day
  (``2026年7月14日``, ``7月14日``, ``6月1号``, ``2026년 7월 14일``, ``2026年7月``, ``7月份``, ``2026年``: not
  ``1990年代``, a decade, nor ``2026年度``, a fiscal year): that day, month or year, without a
  year the latest such, with no preposition needed; and their words of a relative day, week,
  month or year (``今天``, ``昨天``, ``先週``, ``上个月``, ``去年``, ``어제``, ``지난주``; ``明天``,
  ``来週``, ``내년`` ahead), as their English forms. A phrase begins and ends inside a run of a
  script written without spaces, or before a Korean particle ("在2026年7月14日", "14일에").
- Calendar quarters and half years: ``in Q1``, ``Q3 2025``, ``the first quarter (of 2025|of last
  year)``, ``in H2``: without a year the latest such that has begun; ``this|last quarter`` and
  ``the quarter before last`` as the other calendar units. "Q3" or "H2" alone may be a name ("the
  Q3 roadmap"): words; "first quarter" alone, "for Q3", "next quarter" and fiscal years are
  ignored.
- Seasons, of the hemisphere of the database's timezone (``SOUTHERN_ZONES``; else the northern):
  ``last|this past summer`` the latest that has ended, ``this summer`` the current one, else this
  year's (in April it lies ahead, and is ignored), ``in|during|over|since... (the)
  summer`` the latest that has begun, ``summer 2025`` (``the summer of 2025``) that year's; each
  three whole months (northern spring March-May, summer June-August, autumn or fall
  September-November, winter December-February; southern the other way round), and a winter (a
  southern summer) belongs to the year of its January. A season word alone, after ``the`` or
  before a name is a word ("Summer said", "the spring release", "in Spring Boot", "the fall of
  the API"); "fall" needs a qualifier, a year or in|during|over.
- ``N days|weeks|months|years ago`` (or ``back``): the calendar unit that far back, e.g. the week
  holding now - N weeks; ``N hours|minutes ago``: the hour (minute) before that moment.
- ``past|last N units``, ``the past week``, ``the last week`` (not ``last week``): rolling,
  ending now; hours, days and weeks are exact durations, months and years go back on the local
  calendar; one reaching back before the calendar ("the last 3000 years") starts at its start.
  A fortnight is fourteen days: ``the past|last fortnight`` rolls back 14 days, ``a fortnight
  ago`` is the week two weeks ago (in questions only: records keep the windows they were read
  with, as a fortnight holds no told hint).
- Anchored to a day (``X`` a date, a weekday, yesterday...): ``the day before|after X`` and ``N days
  before|after X``: that one day; ``the Sunday before|after X``: the latest Sunday before X's day
  (the first after it); ``the N days|weeks before|after X``: the N days or weeks between, X's
  day excluded; ``the week before|after X`` and ``N weeks before|after X``: the calendar
  week holding X minus (plus) N weeks. A preposition applies to the whole ("since the day after
  March 3" is from March 4 on); when what follows is no day ("the Monday before the release"),
  it may be an event (below); else the words are read as without the anchor (a Monday).
- Parts: ``the week of X`` is the calendar week holding day X, ``the weekend of X`` the Saturday
  and Sunday nearest X, ``the morning|afternoon|evening|night of X`` that part of X; ``the
  first|second|third|fourth week of`` a month is its days 1-7 (8-14, ...), ``the last week of``
  a month its last seven days; ``early|mid|late`` (``the beginning|middle|end of``) a week or
  month is its first half, middle half or second half in whole days,
  of a year January-June, April-September or July-December (a fuzzy phrase is read as a window
  that holds what it can mean, and the interpretation shows it); ``the Friday|weekend before
  last`` is the one a week before last Friday (weekend).
- A weekday beside a phrase placed as one calendar week, with nothing but a comma between
  (``on Friday 2 weeks ago``, ``last week on Friday``): that weekday of that week.
- ``June 1-5`` (``May 3rd - 5th, 2025``): those days of one month; ``2026/06/03``: as
  ``2026-06-03``.
- A day of the month by its ordinal: ``on|since|before... the 5th``, ``Monday the 15th``, ``the
  3rd of last month``: the latest such day not in the future (whose weekday is the one named), or
  of the month named. Without a preposition, a weekday or a month, or with a word other than a
  function or time word after it ("on the 5th attempt"), it is words.
- As of a day: a phrase placed from today (``yesterday``, ``last Friday``, ``last week``, ``last
  weekend``, ``N days ago``) beside a calendar date not after today, after ``on`` or ``before``
  (``last Friday on 23 January, 2022``, ``last week, as mentioned on November 6``),
  is placed as of the end of that day: what someone said then, in that day's words. The date
  is then part of the window, not a second phrase.
- Open bounds: ``since X`` from X's start and ``after X`` from X's end, both to ``OPEN_END``;
  ``before X`` (X excluded) and ``until|till|through X`` (X included) from ``OPEN_START``.
  Ranges: ``between X and Y``, ``from X to Y``, ``since X until Y``; a weekday, day or month
  of Y without a year is the first one from X on. ``from X`` alone is X ("everything from
  November").

By an event: ``before|after|since|until the|our... <up to four words>``, with or without a head
(``the day|week|month before|after``, ``N days|weeks before|after``, ``the Tuesday before``), or
a range of two (``between the X and the Y``, ``since the X until the Y``; not after a word of
comparison, "the difference between the client and the server"):
``find_event_anchor`` reads the words, the query layer finds the event, and ``place_after_event``
places the window from its time (before it, the event excluded; until it, included; after it;
since it, included; a head as from a day, in the event's local day).

A phrase that reads as time but names nothing memdb can place ("last sprint", "for FY25",
"next quarter", "at 3pm", "on 3/4", "2026-02-30") is *ignored*: ``read_time_phrases`` reports it
and leaves it out of the rest of the text, so that ``ask`` neither filters by its words nor
claims a window ("next May": this May or the next?; "in 2 weeks", ahead or a span?).
``read_time_phrases`` ignores "since the offsite" too, but ``ask`` reads it first as an event
(``find_event_anchor``): where no memory places the event, its words are searched like any
word, so the answer is labelled partial naming "offsite" (tests/query/test_timephrase.py::
test_ask_reads_an_unplaced_event_as_its_words_and_a_phrase_no_calendar_reads_as_ignored).

Phrases of the future are placed ahead, so that what a record told of ahead answers them (below):
``tomorrow``, ``the day after tomorrow``, ``this Friday`` on a Monday, ``this weekend`` on a
weekday, ``this summer`` in winter, ``next|the coming week|month|year``, ``next Friday`` (the
Friday of next week), ``next weekend`` (the first to begin). A bare day or month in a question is
the latest such, as above ("what broke on Friday?"), unless the question speaks of what is to come
as a record would (``_told_direction``: "what will we ship in March?", "what is on Friday?", "who
is presenting on Monday?"; and "when is my appointment in March?"): then the first such from now
on. Explicit dates are taken as written.

What a record tells of (``told_windows``) is read both ways: a phrase told of the past as above,
and one told of what is to come ("we'll meet on Friday", "my flight leaves on March 10", "next
week", "in 3 days") placed ahead: a day, month or season without a year the first such from
then on, ``tomorrow`` the next day, ``next|the coming week|month|year`` the calendar unit after
the current one, ``next Friday`` the Friday of next week, ``next weekend`` the first to begin,
``in N days|weeks|months|years`` the day N days on (the calendar unit holding that time).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, NamedTuple
from zoneinfo import ZoneInfo

from memdb.errors import ValidationError
from memdb.memory.text import HAN_CHARS, HANGUL_CHARS, IRREGULAR_VERBS, MARKS, UNSPACED_CHARS, tokenize

__all__ = [
    "OPEN_END",
    "OPEN_START",
    "SOUTHERN_ZONES",
    "TOLD_HINTS",
    "TOLD_MAX",
    "TOLD_PART_OF_DAY_US",
    "EventAnchor",
    "TimeReading",
    "TimeWindow",
    "day_of",
    "find_event_anchor",
    "find_time_phrase",
    "local_day",
    "local_day_span",
    "local_minute",
    "place_after_event",
    "read_time_phrases",
    "told_hint_in",
    "told_windows",
    "told_within",
]

UTC = dt.UTC
DAY = dt.timedelta(days=1)
US = dt.timedelta(microseconds=1)

OPEN_START: Final = dt.datetime.min.replace(tzinfo=dt.UTC)
"""The start of a window given only an end."""
OPEN_END: Final = dt.datetime.max.replace(tzinfo=dt.UTC)
"""The end of a window given only a start."""

_WEEKDAYS = {d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], 1
    )
}
_MONTHS |= {m[:3]: i for m, i in _MONTHS.items()} | {"sept": 9}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "couple of": 2, "a couple of": 2, "few": 3, "a few": 3,
}  # fmt: skip
_PARTS = {"morning": (0, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}  # local hours; night ends at 6 next day
_FALSE_FRIEND_MONTHS = frozenset({"may", "march", "mar"})  # "may we deploy?", "march on", "mar the release"
_HOLIDAYS = frozenset("black good cyber easter palm ash holy super ruby blue fat maundy shrove giving".split())  # "Black Friday"
_DETERMINERS = frozenset("the a an our my your their his her its that this last".split())
_MODIFIED_BY = frozenset("the our my your their his her its that".split())  # "the March migration"
_FUNCTION_WORDS = frozenset(
    """i me we us you they them he him she her it there here when what which who whom whose how why where whether
    and or but nor so if as than because though is was were are am be been being has have had do does did will would
    can could should shall may might must to for of in on at by with about from into not no all any some every each one
    ever""".split()
)  # a word that starts a clause ("since we moved", "since it is") rather than name an event
_AUX = frozenset("is was were are am be been has have had do does did will would can could should shall may might must".split())
_UNTIL_PREFIXES = frozenset({"before", "prior to", "until", "till", "through", "up to", "up until"})  # end at or before X
_OPEN_PREFIXES = _UNTIL_PREFIXES | {"since", "after", "from", "between"}  # an open bound or a range's half

_WD = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MON = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
)
# longer alternatives first: "a couple of" must not match as "a"
_NUM = r"\d{1,7}|a\s+couple\s+of|couple\s+of|a\s+few|few|an|a|one|two|three|four|five|six|seven|eight|nine|ten"
_UNITS = r"minutes?|mins?|hours?|days?|weeks?|fortnights?|months?|years?"
_Q = r"last|this|previous"
_ORD = r"(?:st|nd|rd|th)?"
_W = f"[\\w{MARKS}]"  # a word's character: a letter's marks stay on it ("since सर्वर" is no "since सर")
_WORD = rf"{_W}+(?:['’.-]{_W}+)*"
# Chinese, Japanese and Korean words of a relative day, week, month or year -> (unit, how many
# back: -1 is the next); Korean writes a space in some ("지난 주", or "지난주")
_CJK_RELATIVE = {
    word: (unit, back)
    for unit, back, words in [
        ("day", 0, "今天 今日 오늘"), ("day", 1, "昨天 昨日 어제"), ("day", 2, "前天 一昨日 그저께 그제"),
        ("day", -1, "明天 明日 내일"),
        ("week", 0, "本周 这周 这个星期 今週 이번주"), ("week", 1, "上周 上个星期 上星期 先週 지난주"),
        ("week", -1, "下周 下个星期 下星期 来週 다음주"),
        ("month", 0, "本月 这个月 今月 이번달"), ("month", 1, "上个月 上月 先月 지난달"), ("month", -1, "下个月 下月 来月 다음달"),
        ("year", 0, "今年 올해 금년"), ("year", 1, "去年 昨年 작년 지난해"), ("year", -1, "明年 来年 내년"),
    ]
    for word in words.split()
}  # fmt: skip
_CJK_RELATIVE_WORDS = "|".join(
    re.escape(w) if w[0] not in "이지다" else re.escape(w[:2]) + r"\s*" + re.escape(w[2:])  # 이번주, 지난주, 다음달...
    for w in sorted(_CJK_RELATIVE, key=len, reverse=True)
)
# A relative word is one inside a run of Han only where a word begins: at the run's start or after
# one of these (a preposition, "的", a pronoun or adverb before a time word, "我昨天"), a hiragana
# particle ("は昨日"), or a date's sign after a digit ("7月14日"); "提前天数" (days in advance),
# "聪明天才", "登上月球" hold "前天", "明天", "上月" across two words. Korean is spaced: a word's start
_CJK_WORD_BEFORE = re.compile(
    f"(?:[^{HAN_CHARS}{HANGUL_CHARS}]|[在于於从從到至自为為的是我你您他她它们們咱也都就还還和与與及或]|\\d[年月日号號])$"
)
# and one whose last character makes a word with the next ("上周期" is "上" and "周期", a period;
# "今年度", "明天才", "昨天气" reads "天气", weather), the names "今日头条", "明日香", and "오늘날" (nowadays)
_CJK_WORD_AFTER = re.compile("^(?:周[期年围边]|天[气才空然]|月[球亮饼]|年[代度龄纪级]|日[头香]|늘날)")
# Scripts whose words are written without a space before or after a time phrase: "在2026年7月14日",
# "2026-07-14の対応", "14일에" (``_PHRASE`` ends a phrase there, where ``\b`` would not)
_EDGE = f"[{UNSPACED_CHARS}{HANGUL_CHARS}]"
_PRE = r"since|after|before|prior\s+to|until|till|through|up\s+(?:to|until)|on|in|during|over|within|from|between|at"

# What can be placed in time. Alternatives sharing a start are ordered longest first; every
# match is then checked in _atom, which can still refuse it (a bare month name, "may").
_ATOM = "|".join(
    [
        # "the last day of February", "the first day of last month": one day (before "past1",
        # which leaves "the last day of" alone, and before "mon")
        # Chinese, Japanese and Korean dates written with their signs of year, month and day
        # ("2026年7月14日", "7月14日", "2026년 7월 14일", "2026年7月", "7月份", "2026年": not "1990年代"
        # nor the fiscal "2026年度"), and their words of a relative day, week, month or year
        r"(?P<cjd>(?P<cjy>\d{4})\s*[年년](?![代度대])(?:\s*(?P<cjm>\d{1,2})\s*[月월](?:\s*(?P<cjdd>\d{1,2})\s*[日일号號]|份)?)?"
        r"|(?P<cjm2>\d{1,2})\s*[月월](?:\s*(?P<cjd2>\d{1,2})\s*[日일号號]|份)?)",
        rf"(?P<cjr>{_CJK_RELATIVE_WORDS})",
        rf"(?P<edge>(?:the\s+)?(?P<edw>first|last)\s+day\s+of\s+(?:the\s+)?(?:(?P<edq>last|this|previous)\s+month"
        rf"|(?P<m4>{_MON})\.?(?:,?\s+(?P<y4>\d{{4}}))?))",
        r"(?P<day>(?:(?P<iso>\d{4}(?P<isep>[-/])\d{2}(?P=isep)\d{2})|(?P<dmy>(?<![\d.])\d{1,2}\.\d{1,2}\.\d{4}(?!\.?\d))"
        r"|(?P<dby>(?:the\s+)?day\s+before\s+yesterday)|(?P<yday>yesterday)|(?P<tday>today)"
        rf"|(?:(?P<wdq>{_Q})\s+)?(?P<wd>{_WD})(?:\s+(?:of\s+)?(?P<wdw>{_Q})\s+week)?"
        rf"|(?P<m1>{_MON})\.?\s+(?P<d1>\d{{1,2}}){_ORD}(?:\s*[-–]\s*(?P<d1e>\d{{1,2}}){_ORD})?(?:,?\s+(?P<y1>\d{{4}}))?"
        rf"|(?:the\s+)?(?P<d2>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<m2>{_MON})\.?(?:,?\s+(?P<y2>\d{{4}}))?"
        r"))(?:\s+(?P<part>morning|afternoon|evening|night))?",
        r"(?P<pod>this\s+(?P<podp>morning|afternoon|evening)|tonight|last\s+night)",
        r"(?P<earlier>earlier\s+(?:today|this\s+(?P<eu>week|month|year))"
        r"|(?P<tdu>week|month|quarter|year)(?:\s+|-)to(?:\s+|-)date|(?P<tda>[wmqy])td)",  # "year to date", "YTD"
        r"(?P<wbl>(?:the\s+)?(?P<wblu>week|month|quarter|year)\s+before\s+last)",
        rf"(?P<rel>(?P<relq>{_Q})\s+(?P<relu>week|month|quarter|year))",
        r"(?P<wkend>(?P<weq>last|previous|this\s+past|this|past|the\s+past|the)\s+weekend)",
        rf"(?P<ago>(?P<an>{_NUM})\s+(?P<au>{_UNITS})\s+(?:ago|back))",
        rf"(?P<past>(?:the\s+)?(?:past|last|previous)\s+(?P<pn>{_NUM})\s+(?P<pu>{_UNITS}))",
        r"(?P<past1>(?:(?:the|this)\s+)?past\s+(?P<pu1>minute|hour|day|week|fortnight|month|year)"
        r"|the\s+(?:last|previous)\s+(?P<pu2>hour|day|week|fortnight|month|year)(?!\s+of\b)"  # "the last week of March" is not rolling
        r"|(?:last|previous)\s+(?P<pu3>fortnight))",  # no calendar has fortnights: the past 14 days
        r"(?P<qtr>(?P<qthe>the\s+)?(?P<qn>first|second|third|fourth)\s+quarter"
        r"(?:\s+of\s+(?:(?P<qyq>last|this)\s+year|the\s+year|(?P<qy1>\d{4})))?"
        r"|(?P<qh>[qh])(?P<qd>[1-4])(?:,?\s+(?:of\s+)?(?P<qy2>\d{4}))?)",
        r"(?P<sea>(?:(?P<sq>last|this\s+past|this|past|previous)\s+|the\s+)?(?P<sn>summer|winter|spring|autumn|fall)"
        r"(?:,?\s+(?:of\s+)?(?P<sy>\d{4}))?)",
        rf"(?P<mon>(?:(?P<mq>{_Q})\s+)?(?P<m3>{_MON})\.?(?:,?\s+(?:of\s+)?(?P<y3>\d{{4}}))?)",
        r"(?P<year>\d{4})",
    ]
)
# What reads as time but cannot be placed: reported as ignored (see the module docstring).
_UNCLEAR = "|".join(
    [
        r"(?P<u_clock>(?:(?:at|since|before|after|until|around|by)\s+)?\d{1,2}(?::\d{2})?\s?(?:am|pm)"
        r"|(?:at|since|before|after|until|around|by)\s+(?:\d{1,2}:\d{2}|noon|midnight))",
        rf"(?P<u_since>since(?P<u_obj>(?:\s+{_WORD}){{1,3}}))",
        r"(?P<u_period>(?:last|this|next|previous|past|coming|upcoming)\s+(?:\d{1,3}\s+|few\s+|couple\s+of\s+)?"
        r"(?:sprint|quarter|fortnight|iteration|semester|decade)s?)",  # "last|this quarter" are placed (atom "rel")
        # (the named parts place a phrase of the future where it is told of or asked about: ``_ahead``)
        rf"(?P<u_future>(?P<u_tom>tomorrow|(?:the\s+)?(?P<u_dat>day\s+after\s+)tomorrow)"
        rf"|next\s+(?:(?P<u_nu>week|month|year|weekend|{_WD})|(?P<u_fm>{_MON}))"
        rf"|later\s+(?:today|this\s+(?:week|month|year))|(?:the\s+)?(?:coming|upcoming)\s+(?P<u_cu>week|month|year|weekend)"
        rf"|in\s+(?P<u_n>{_NUM})\s+(?P<u_u>{_UNITS}))",
        # a quarter after a word that does not place it ("for Q3", "next Q1"), and fiscal years
        r"(?P<u_quarter>(?:(?P<u_qp>in|during|since|before|after|until|by|for|last|this|next|of)\s+(?:the\s+)?)?"
        r"(?:q[1-4]|fy\s?\d{2,4})(?:\s+(?:of\s+)?(?P<u_qy>\d{4}))?|(?:first|second|third|fourth)\s+quarter)",
        r"(?P<u_vague>the\s+other\s+day|a\s+(?:little\s+)?while\s+(?:ago|back)|some\s+time\s+ago|ages\s+ago|a\s+long\s+time\s+ago)",
        r"(?P<u_slash>\d{1,2}/\d{1,2}(?:/(?P<u_sy>\d{4}|\d{2}))?)",  # day/month or month/day: never guessed
    ]
)
_PHRASE = re.compile(rf"(?:\b|(?<={_EDGE}))(?:(?P<pre>{_PRE})\s+)?(?:{_ATOM}|{_UNCLEAR})(?:\b|(?<={_EDGE})|(?={_EDGE}))", re.IGNORECASE)
# Every word a phrase of _PHRASE can begin with (besides numbers and "fy..."): matching only where
# one stands is 4-5 times faster than searching, and runs on every ``ask``
# (test_every_phrase_starts_at_a_trigger_word keeps the two in step).
_TRIGGERS = frozenset(
    """since after before prior until till through up on in during over within from between at the day yesterday today
    last this previous tonight earlier week month year past a an one two three four five six seven eight nine ten couple
    few next coming upcoming tomorrow later by for of first second third fourth some ages around q1 q2 q3 q4 h1 h2
    early mid late beginning start middle end weekend quarter summer winter spring autumn fall wtd mtd qtd ytd""".split()
).union(_WEEKDAYS, _MONTHS, _CJK_RELATIVE)
# A common word among them starts a phrase only before one of these ("the weekend", "in 2025").
_WEAK_TRIGGERS = frozenset("the a an on in at for of by up over from some".split())
_AFTER_WEAK = _TRIGGERS | frozenset(
    "other while long little time to hour hours minute minutes min mins days weeks fortnight fortnights months years morning afternoon"
    " evening night noon midnight".split()  # "at noon": a clock time, ignored (it emptied answers as a word)
)
_TOKEN = re.compile(rf"{_W}+")
# The words of text that is not ASCII: as _TOKEN, but each character of a script written without
# spaces apart, and a relative time word of Chinese, Japanese or Korean whole ("昨天", "지난주에"):
# a phrase may begin inside a run ("在2026年7月14日", "数据库昨天")
_INTL_TOKEN = re.compile(rf"{_CJK_RELATIVE_WORDS}|[{UNSPACED_CHARS}]|(?:(?![{UNSPACED_CHARS}]){_W})+")
_ATOM_ONLY = re.compile(rf"(?:{_ATOM})\b", re.IGNORECASE)
_CONNECTOR = re.compile(r"\s+(?P<conn>and|to|until|till|through|before|-|–)\s+", re.IGNORECASE)
_WORDS = re.compile(_WORD)
_NEXT_WORD = re.compile(rf"\s+({_W}+)")
_PREVIOUS_WORD = re.compile(rf"({_W}+)\s+$")
_TO_DATE_UNITS = {"w": "week", "m": "month", "q": "quarter", "y": "year"}  # "YTD": the year to date
# Phrases read in questions only. "Year to date" gives a period's figures so far ("revenue year to
# date is up"), not when a thing happened; a fortnight holds no told hint (TOLD_HINTS), so a record
# told of one only beside another phrase: read there, records captured before would differ from
# those captured after without an index upgrade.
_QUESTION_ONLY = re.compile(r"\b(?:(?:week|month|quarter|year)(?:\s+|-)to(?:\s+|-)date|[wmqy]td|fortnights?)\b", re.IGNORECASE)
_ATOM_KINDS = ("cjd", "cjr", "edge", "day", "pod", "earlier", "wbl", "rel", "wkend", "ago", "past", "past1", "qtr", "sea", "mon", "year")
# The head of a phrase anchored to a day: "the Sunday before", "two days after", "the week before"
# (the day itself follows, read as an atom of kind "day"; "the day before yesterday" reads alike).
_ANCHORED = re.compile(
    rf"\b(?:(?P<pre>{_PRE})\s+)?(?P<the>the\s+)?(?:(?P<n>{_NUM})\s+(?P<nu>days?|weeks?)|(?P<u>day|week)|(?P<wd>{_WD}))"
    r"\s+(?P<dir>before|after)\s+",
    re.IGNORECASE,
)
# The head of a part of a day's week, of a week, month or year, or of two back: "the week of
# March 3", "the first week of June", "early May", "mid-2025", "the end of the month", "the
# Friday before last" (what it is a part of follows: ``_part``).
_PART = re.compile(
    rf"\b(?:(?P<pre>{_PRE})\s+)?(?:the\s+)?(?:"
    r"(?P<of>week|weekend|morning|afternoon|evening|night)\s+of\s+"
    r"|(?P<nth>first|second|third|fourth|last)\s+week\s+of\s+"
    r"|(?P<edge>early|mid|late)(?:\s+|-)(?:in\s+)?"
    r"|(?P<edge2>beginning|start|middle|end)\s+of\s+"
    rf"|(?P<bl>{_WD}|weekend)\s+before\s+last\b"
    r")",
    re.IGNORECASE,
)
# What a part is of: a week, month or year before or of now, the current one, a month, a year.
_WHOLE = re.compile(
    rf"(?:(?P<q>{_Q})\s+(?P<qu>week|month|year)|the\s+(?P<tu>week|month|year)"
    rf"|(?P<m>{_MON})\.?(?:,?\s+(?:of\s+)?(?P<my>\d{{4}}))?|(?P<y>\d{{4}}))\b",
    re.IGNORECASE,
)
# A day of the month by its ordinal: "on the 5th", "Monday the 15th", "the 3rd of last month".
_ORDINAL_DAY = re.compile(
    rf"\b(?:(?P<pre>{_PRE})\s+)?(?:(?P<wd>{_WD}),?\s+)?the\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)\b"
    rf"(?:\s+of\s+(?:(?P<q>{_Q})|(?P<cur>the))\s+month\b)?",
    re.IGNORECASE,
)
_MONTH_AFTER = re.compile(rf"\s+(?:of\s+)?(?:{_MON})\b", re.IGNORECASE)  # "the 3rd of March": a date already
# After an ordinal, what makes it a rank and no day: a word joined to it ("3rd-party") or "of"
# ("the 1st of 3 retries"; "the 3rd of March" and "of last month" are read before)
_ORDINAL_NOT_DAY = re.compile(r"-\w|\s+of\b", re.IGNORECASE)
# more ordinals after one ("the 1st and 2nd", "the 2nd, 3rd and 4th"): the word after the last says
# whether they rank things ("items") or are days ("the 3rd and 4th we shipped")
_MORE_ORDINALS = re.compile(r"(?:\s*,\s*|\s+(?:and|or|to)\s+)(?:the\s+)?\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE)
_EDGES = {"early": "early", "beginning": "early", "start": "early", "mid": "mid", "middle": "mid", "late": "late", "end": "late"}
_NTH = {"first": 0, "second": 1, "third": 2, "fourth": 3}


@dataclass(frozen=True)
class TimeWindow:
    """A half-open UTC window ``[start, end)``, the phrase it came from and the zone it is shown in."""

    start: dt.datetime
    end: dt.datetime
    phrase: str
    zone: dt.tzinfo = UTC

    def __str__(self) -> str:
        if self.start == OPEN_START and self.end == OPEN_END:
            return self.phrase
        if self.start == OPEN_START or self.end == OPEN_END:  # one side only: "since Monday (from 2026-06-15)"
            edge, word = (self.start, "from") if self.end == OPEN_END else (self.end, "before")
            shown = self._moment(edge)
            return self.phrase if day_of(self._local(edge)) in self.phrase else f"{self.phrase} ({word} {shown})"
        first, after = self._local(self.start), self._local(self.end)
        if first.time() == dt.time(0) and after.time() == dt.time(0):  # whole local days
            last_day = after.date() - DAY
            if last_day <= first.date():
                return f"{self.phrase} ({day_of(first)})"
            return f"{self.phrase} ({day_of(first)} to {day_of(last_day)})"
        last = self._local(self.end - US)
        return f"{self.phrase} ({day_of(first)} {first:%H:%M} to {day_of(last)} {last:%H:%M} {self.zone})"

    def _local(self, at: dt.datetime) -> dt.datetime:
        try:
            return at.astimezone(self.zone)
        except OverflowError:  # within a day of datetime's range: show it in UTC
            return at

    def _moment(self, at: dt.datetime) -> str:
        local = self._local(at)
        return day_of(local) if local.time() == dt.time(0) else f"{day_of(local)} {local:%H:%M} {local.tzinfo}"


class TimeReading(NamedTuple):
    """What ``read_time_phrases`` found: the window, the text left to search, what was ignored."""

    window: TimeWindow | None
    rest: str
    ignored: tuple[str, ...]


def day_of(at: dt.date) -> str:
    """``YYYY-MM-DD`` with four digits of year also before year 1000 (``%Y`` gives ``1-01-01``)."""
    return f"{at.year:04d}-{at.month:02d}-{at.day:02d}"


def local_day(at: dt.datetime, timezone: str | dt.tzinfo = "UTC") -> str:
    """The day ``at`` falls on where days begin in ``timezone`` (the database's), as windows read
    days: a Tokyo morning is no day earlier for being shown in UTC."""
    return day_of(at.astimezone(_zone(timezone)))


def local_day_span(at: dt.datetime, timezone: str | dt.tzinfo = "UTC") -> tuple[dt.datetime, dt.datetime]:
    """The first instant of ``local_day(at)`` and of the day after, in UTC, as windows read days
    (a wall midnight a DST change skips maps to the change itself)."""
    cal = _Calendar(at, _zone(timezone), 0)
    return cal.days(cal.today)


def local_minute(at: dt.datetime, timezone: str | dt.tzinfo = "UTC") -> str:
    """``YYYY-MM-DD HH:MM`` of ``at`` in ``timezone``, the zone's abbreviation after it unless UTC."""
    local = at.astimezone(_zone(timezone))
    shown = f"{day_of(local)} {local:%H:%M}"
    return shown if timezone in ("UTC", UTC) else f"{shown} {local.tzname()}"


def find_time_phrase(text: str, now: dt.datetime, week_start: int = 0, timezone: str | dt.tzinfo = "UTC") -> tuple[TimeWindow | None, str]:
    """The first time phrase in ``text`` as a window (or a relative one placed as of a day the text
    names), and the text without it (else ``text`` as given).

    ``timezone`` is an IANA name (or a tzinfo) deciding where days begin. Phrases naming dates
    outside what a datetime can hold (year 0, 9999 + 1) yield no window.
    """
    window, used, _ = _scan(text, _Calendar(now, _zone(timezone), week_start, future=True))
    if window is None:
        return None, text
    return window, _cut(text, used)


def read_time_phrases(text: str, now: dt.datetime, week_start: int = 0, timezone: str | dt.tzinfo = "UTC") -> TimeReading:
    """The first time phrase of ``text`` as a window (or a relative one placed as of a day the
    text names: "last Friday, on 23 January 2022"), and every other phrase that reads as time (not
    understood, or a second window) as ignored; ``rest`` is the text without any of them.

    A query holds one window, so a second phrase is reported rather than searched as words.
    """
    zone = _zone(timezone)
    window, used, unclear = _scan(text, _Calendar(now, zone, week_start, future=True))
    # a question about what is to come ("what will we ship in March?", "what is on Friday?"), as a
    # record that says so is read, asks of the first such from now on; and so do "when is my
    # appointment in March?" and a deadline asked of ("what is due by Friday?")
    direction = _told_direction(text, *used[0], True) if window is not None and len(used) == 1 and window.end <= now else "past"
    if direction == "" or (direction == "past" and window is not None and len(used) == 1 and _WHEN_IS.match(text)):
        direction = "past" if _PAST_VERB.search(text) else "ahead"
    if direction == "ahead":
        for ahead, span in _scan_windows(text, _Calendar(now, zone, week_start, ahead=True)):
            if span == used[0] and ahead is not None and ahead.start > now:
                window = ahead
                break
    spans = sorted([*used, *unclear])
    return TimeReading(window, _cut(text, spans) if spans else text, tuple(text[s:e] for s, e in unclear))


class EventAnchor(NamedTuple):
    """A time a question gives by an event ("after the outage", "the day before the v2.4
    release"): ``find_event_anchor`` reads the words, the query layer finds the event among the
    owner's memories, and ``place_after_event`` places the window from its time."""

    span: tuple[int, int]  # of the whole phrase in the text
    phrase: str  # "the day before the v2.4 release"
    event: str  # "the v2.4 release": what to find the event by
    direction: str  # before, after, since or until; between when a second event ends a range
    head: _Head | None  # "the day", "two weeks", "the Tuesday"; None for an open bound
    end_event: str | None = None  # a range's second event: "between the outage and the SSO launch"
    end_direction: str = "until"  # until (the second event included) or before (excluded)


_EVENT_WORD = rf"{_W}(?:(?:[\w'’.-]|[{MARKS}])*{_W})?"
_EVENT_STOP = (
    "and|or|but|nor|when|where|while|with|without|to|for|in|on|at|of|from|by|as|if|so|because|than|that|which|who|whom|what|"
    "how|why|did|do|does|was|were|is|are|am|be|been|has|have|had|will|would|can|could|should|before|after|since|until|till|"
    "we|i|you|he|she|they|it|me|us|them|him|her|went|happened|happen"
)
# what names an event: a determiner and up to four words, none of them a function word
_EVENT_NOUN = rf"(?P<det>the|my|our|your|his|her|their)\s+(?P<event>{_EVENT_WORD}(?:\s+(?!(?:{_EVENT_STOP})\b){_EVENT_WORD}){{0,3}})"
_EVENT = re.compile(
    rf"\b(?:(?:on|in|during)\s+)?(?:(?P<the>the\s+)?(?:(?P<n>{_NUM})\s+(?P<nu>days?|weeks?|months?)|(?P<u>day|week|month)|(?P<wd>{_WD}))\s+)?"
    rf"(?P<dir>before|after|since|until|till|prior\s+to|between)\s+{_EVENT_NOUN}",
    re.IGNORECASE,
)
# An event named by a word and its number, no determiner needed: "since sprint 42", "after release
# 2.4", "before PR 118" (a bare word alone is too loose: "after lunch"; a month's or a weekday's
# number is a date, "since February 30" one no calendar places)
_QUANTITY = (
    "only|about|over|under|every|each|last|first|next|past|just|nearly|around|exactly|approximately|roughly|almost|"
    "some|all|least|most|than|another|per|top|up|down|within|more|less|fewer|few|several|many|those|these|another"
)
_NUMBERED_EVENT = re.compile(
    rf"\b(?P<dir>before|after|since|until|till)\s+(?P<event>(?!(?:{_EVENT_STOP}|{_QUANTITY}|the|a|an|my|our|your|their|{_MON}|{_WD})\b)"
    r"[^\W\d_][\w'’-]*\s+(?>v?\d(?:[\w-]|\.(?=\w))*))",  # the number whole: "release 2.4-rc1", never "release 2"
    re.IGNORECASE,
)
# The second half of a range of events: "... and the SSO launch", "... until the outage"
_EVENT_END = re.compile(
    rf",?\s+(?:(?P<conn>and|to|until|till|through|before)\s+)(?:(?P<dir2>before|until|till)\s+)?{_EVENT_NOUN}", re.IGNORECASE
)
_EVENT_TIME_WORDS = frozenset(
    "day days week weeks weekend month months year years morning afternoon evening night time times moment hour hours".split()
)
_QUALIFIERS = frozenset("last this next previous past coming".split())
_EVENT_WORDS = ("before", "after", "since", "until", "till", "prior", "between")  # one of which every phrase holds
# "the difference between the client and the server": a comparison, not a time between two events
_COMPARED = frozenset(
    """difference differences compare compared comparing comparison choose chose choosing choice decide decided deciding
    relationship link links connection connections gap distance split agreement contract tradeoff tradeoffs conflict
    conflicts balance pick picked""".split()
)


def find_event_anchor(text: str, now: dt.datetime, week_start: int = 0, timezone: str | dt.tzinfo = "UTC") -> EventAnchor | None:
    """The first phrase of ``text`` that gives a time by an event: before, after, since or until
    "the|my|our..." and up to four words ("after the outage", "since our last deploy") or a word
    and its number ("since sprint 42", "after release 2.4"),
    optionally after a head ("the day|week|month before", "two days after", "the Tuesday
    before"), or a range of two ("between the outage and the SSO launch", "since the v2.4
    release until the outage"; not after a word of comparison: "the difference between the
    client and the server"). None when there is none, or when what follows is itself a time
    ("after the weekend", "before the end of May": ``read_time_phrases`` reads those)."""
    folded = text.lower()
    if not any(w in folded for w in _EVENT_WORDS):  # most questions: a few substring tests, no regex search
        return None
    times: list[tuple[int, int]] | None = None  # the time phrases' spans, read when a phrase is first found
    for m in _EVENT.finditer(text):
        if times is None:  # (not what is unclear: "since the offsite" is an event)
            times = [span for _, span in _scan_windows(text, _Calendar(now, _zone(timezone), week_start))]
        direction = " ".join(m.group("dir").lower().split())
        # "last week after the outage": "last week" is a time of its own, not a head
        has_head = bool(m.group("n") or m.group("u") or m.group("wd")) and _previous_word(text, m.start()) not in _QUALIFIERS
        if has_head and direction not in ("before", "after"):
            continue  # "the day since": no such phrase
        start, end = m.start("event"), m.end("event")
        if not _an_event(text, start, end, times):
            continue  # "after the weekend", "before the 5th", "after the other day": a time, not an event
        second = _EVENT_END.match(text, end) if not has_head and direction in ("between", "since", "after") else None
        if second is not None and not _an_event(text, second.start("event"), second.end("event"), times):
            second = None
        if direction == "between" and (second is None or second.group("conn").lower() != "and" or _compares(text, m.start("dir"))):
            continue  # "between the outage" alone is no phrase, nor "the difference between X and Y"
        head = _head(m) if has_head else None
        phrase_start = m.start() if has_head else m.start("dir")  # an open bound starts at its word
        direction = "before" if direction == "prior to" else direction
        if second is not None:
            end = second.end("event")
            closing = "before" if "before" in (second.group("conn").lower(), (second.group("dir2") or "").lower()) else "until"
            return EventAnchor(
                (phrase_start, end), text[phrase_start:end], text[m.start("det") : m.end("event")], direction, None,
                text[second.start("det") : end], closing,
            )  # fmt: skip
        return EventAnchor((phrase_start, end), text[phrase_start:end], text[m.start("det") : end], direction, head)
    for m in _NUMBERED_EVENT.finditer(text):
        if times is None:
            times = [span for _, span in _scan_windows(text, _Calendar(now, _zone(timezone), week_start))]
        start, end = m.span("event")
        if not tokenize(text[start:end].split()[0]):  # a word no index holds, "after only 2 retries": no name
            continue
        if _an_event(text, start, end, times):  # "since May 5", "after week 3": times
            direction = m.group("dir").lower()
            return EventAnchor((m.start(), end), text[m.start() : end], text[start:end], direction, None)
    return None


def _compares(text: str, at: int) -> bool:
    """Whether "between" at ``at`` follows a word of comparison within the three words before it."""
    return not _COMPARED.isdisjoint(w.lower() for w in _WORDS.findall(text, max(at - 40, 0), at)[-3:])


def _an_event(text: str, start: int, end: int, times: list[tuple[int, int]]) -> bool:
    """Whether the words at ``start:end`` can name an event: no time phrase overlaps them and
    they hold no word of time ("the weekend", "the 5th", "the other day")."""
    return not any(lo < end and start < hi for lo, hi in times) and _EVENT_TIME_WORDS.isdisjoint(text[start:end].lower().split())


def place_after_event(
    anchor: EventAnchor,
    event_at: dt.datetime,
    now: dt.datetime,
    week_start: int = 0,
    timezone: str | dt.tzinfo = "UTC",
    end_at: dt.datetime | None = None,
) -> TimeWindow | None:
    """The window ``anchor`` gives once its event is placed at ``event_at`` (and a range's second
    at ``end_at``): before it (the event excluded), until it (included), after it, since it
    (included), between or from one to the other (the first included, the second as its word
    says); with a head, the day, week or month it names from the event's local day ("the day
    after the outage"). None for a range that ends before it starts."""
    cal = _Calendar(now, _zone(timezone), week_start)
    at = event_at.astimezone(UTC)
    if anchor.end_event is not None:
        if end_at is None:
            raise ValidationError(f"{anchor.phrase!r}: a range of events needs the time of its second, {anchor.end_event!r}")
        start = at + US if anchor.direction == "after" else at
        end = end_at.astimezone(UTC) + (US if anchor.end_direction == "until" else dt.timedelta(0))
        return TimeWindow(start, end, anchor.phrase, cal.zone) if start < end else None
    if anchor.head is not None:
        start, end = _from_day(at.astimezone(cal.zone).date(), anchor.head, cal)
    elif anchor.direction == "before":
        start, end = OPEN_START, at
    elif anchor.direction in ("until", "till"):
        start, end = OPEN_START, at + US
    else:
        start, end = (at if anchor.direction == "since" else at + US), OPEN_END
    return TimeWindow(start, end, anchor.phrase, cal.zone)


TOLD_MAX: Final = dt.timedelta(days=366)
"""The longest window a record's text can tell of (``last year``): a longer one (``since 2020``,
``before March``) says little about when a thing happened."""

TOLD_HINTS: Final = frozenset(
    """yesterday today tonight night morning afternoon evening ago back day days week weeks weekend weekends month
    months year years hour hours minute minutes min mins quarter quarters q1 q2 q3 q4 h1 h2 summer winter spring autumn
    fall tomorrow""".split()
).union(_WEEKDAYS, _MONTHS)
"""Words one of which every phrase ``told_windows`` can place holds (besides a year or a date, a
day of the month by its ordinal, ``TOLD_ORDINALS``, or a Chinese, Japanese or Korean sign of one,
``told_hint_in``): a record holding none of them tells of no time (test_every_told_phrase_holds_a_hint)."""
TOLD_ORDINALS: Final = frozenset(f"{d}{suffix}" for n in range(1, 32) for d in {str(n), f"{n:02d}"} for suffix in ("st", "nd", "rd", "th"))
"""A day of the month by its ordinal as a hint ("we shipped it on the 3rd", "the 03rd": ``_ORDINAL_DAY``
reads the phrase; layout 28), in every suffix, as a word and as the index's term of it: what
``_TOLD_WORD`` finds (ASCII digits, one or two), so capture's hints and a scan of every word agree."""
# what every Chinese, Japanese and Korean phrase holds: a relative word, or a sign of year or month
_CJK_HINT = re.compile(rf"{_CJK_RELATIVE_WORDS}|[年月년월]")


def told_hint_in(word: str) -> str | None:
    """The Chinese, Japanese or Korean time word or sign of year or month in ``word`` (a term of
    the index: "昨天", "月", "7월", "지난주에"), as ``told_windows`` takes hints, or None."""
    found = _CJK_HINT.search(word) if not word.isascii() else None
    return found.group() if found is not None else None


TOLD_PART_OF_DAY_US: Final = 12 * 3600 * 1_000_000
"""A told window at most this long (in microseconds: "last night", "yesterday evening") is a part
of one day, and belongs to the day it begins on (``told_within``)."""


def told_within(start_us: int, end_us: int, lo_us: int | None, hi_us: int | None) -> bool:
    """Whether a told window ``[start_us, end_us)`` falls in the asked window ``[lo_us, hi_us)``
    (None: open): when it lies within it, or when it is a part of a day that begins in it. "I
    watched it last night", said on May 2, tells of May 1: a night belongs to its evening's day
    (test_a_night_told_of_belongs_to_its_evening)."""
    if lo_us is not None and start_us < lo_us:
        return False
    if hi_us is None or end_us <= hi_us:
        return True
    return start_us < hi_us and end_us - start_us <= TOLD_PART_OF_DAY_US


# "Q1", a day of the month by its ordinal ("15th"), a word, or a year 1900-2099
_TOLD_WORD = re.compile(r"\b[qh][1-4]\b|\b[0-9][0-9]?(?:st|nd|rd|th)\b|[^\W\d_]+|\b(?:19|20)\d\d\b", re.IGNORECASE)
# the same, where a hint was found: the word that starts there (None inside a word: "night" of "nightly")
_TOLD_WORD_AT = re.compile(r"\b[qh][1-4]\b|\b[0-9][0-9]?(?:st|nd|rd|th)\b|(?<![^\W\d_])[^\W\d_]+|\b(?:19|20)\d\d\b", re.IGNORECASE)
_TOLD_REACH = 48  # characters on either side of a hint that a phrase holding it can span
# A deadline ("deliver it by September", "due Friday") bounds when a thing happens; it tells of no day.
_DEADLINE = re.compile(r"\b(?:by|due)\s+$", re.IGNORECASE)
# Where a clause speaks of what is ahead: "we will ship in September", "I'm going to Paris on
# Friday", "we'll meet Monday". Past forms ("was going to", "wanted to") speak of the past.
_FUTURE = re.compile(
    r"(?:\b(?:will|shall|gonna|wanna)\b|['’]ll\b|(?<!\bwas )(?<!\bwere )\bgoing\s+to\b"
    r"|\b(?:plan|plans|planning|intend|intends|intending|hope|hopes|hoping|want|wants|about)\s+to\b|\bplans?\s+for\s*$)",
    re.IGNORECASE,
)
# A present progressive speaks of what is arranged: "we're meeting on Friday", "what are we doing
# on Friday?" (in a clause with no past verb)
_PROGRESSIVE = re.compile(r"(?:\b(?:am|is|are)|['’](?:m|re|s))\s+(?:\w+\s+)?[a-z]{2,}ing\b", re.IGNORECASE)
_PROGRESSIVE_BEFORE = re.compile(_PROGRESSIVE.pattern + r"\s*$", re.IGNORECASE)  # just before the phrase: "meeting on Friday"
# An arranged event held in the present, just before the phrase: "I have a dentist appointment
# on Monday", "we've got the demo on Friday" (in a clause with no past verb)
_HELD_EVENT = re.compile(
    r"\b(?:have|has|['’]ve(?:\s+got)?|['’]s\s+got)\s+(?:(?!(?:from|of|about|after|before|since|for|with)\b)\w+\s+){0,3}(?:appointments?|meetings?|calls?|interviews?|exams?|tests?|flights?"
    r"|trips?|deadlines?|demos?|releases?|launch(?:es)?|reviews?|part(?:y|ies)|weddings?|games?|concerts?|class(?:es)?"
    r"|sessions?|matche?s?|dates?|surgery|visits?|conferences?|events?|presentations?|talks?|dinners?|lunch(?:es)?|shifts?)\s*$",
    re.IGNORECASE,
)
_HAVE_GOT = re.compile(r"\b(?:have|has|['’]ve|['’]s)\s+got\b", re.IGNORECASE)  # a present: "we've got the demo"
# A question asking when a thing is: "When is my dentist appointment in March?"
_WHEN_IS = re.compile(r"\W*when\s+(?:is|are)\b|\W*when['’]s\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?;\n]")
# What places a phrase in the past whatever the clause's tense: "we will revisit what happened
# last week" tells of last week, where "we will meet on Friday" tells of a Friday ahead.
_PAST_WORD = re.compile(r"\b(?:last|yesterday|ago|back|past|previous|earlier|(?:19|20)\d\d)\b", re.IGNORECASE)
_CLAUSE_REACH = 160  # characters before a phrase searched for the start of its clause
# A present tense that schedules, just before the phrase: "my flight leaves on March 10", "the
# review is on Monday", "our sprint starts Monday" tell of a day ahead
_SCHEDULED = re.compile(
    r"(?:\b(?:is|are|am|have|has|starts?|begins?|leaves?|departs?|arrives?|lands?|opens?|closes?|ends?|launch(?:es)?|ships?"
    r"|happens?|returns?|flies|fly|moves?|goes\s+live|takes?\s+place|kicks?|comes?)(?:\s+(?:out|off|back|home|away))?"
    r"|['’](?:s|re|m))\s*$",
    re.IGNORECASE,
)
# A plan, just before the phrase: "the key rotation is scheduled for March 10", "what is planned
# for Tuesday?" tell (and ask) of a day ahead; "was scheduled for" looks back from then
_PLANNED = re.compile(
    r"(?:\b(?P<aux>is|are|was|were|been)\s+|['’]s\s+)?\b(?:scheduled|planned|slated|booked|set)\s+(?:for|on)\s*$", re.IGNORECASE
)
# (not "-eed": "I need to pack" is no past)
_PAST_VERB = re.compile(rf"\b(?:was|were|did|had|[a-z]{{2,}}(?<!e)ed|{'|'.join(sorted(IRREGULAR_VERBS))})\b", re.IGNORECASE)
_CLAUSE_OPENER = re.compile(r"\W*(?:(?:and|but|so|then|ok|okay|well|also|oh|yes|no|hey|hi)\W+)*", re.IGNORECASE)


def told_windows(
    text: str, at: dt.datetime, week_start: int = 0, timezone: str | dt.tzinfo = "UTC", hints: Iterable[str] | None = None
) -> list[tuple[dt.datetime, dt.datetime]]:
    """The windows ``text``, written at ``at``, tells of: every time phrase placed as of ``at``
    that lies wholly before it ("yesterday", "last week", "on May 3", "two years ago") or, told
    of what is to come, wholly after it ("tomorrow", "next week", "my flight leaves on March 10",
    "we'll meet on Friday": the first such day from ``at`` on; ``_told_direction``), at most
    ``TOLD_MAX`` long and beginning within ``TOLD_MAX`` of ``at``, once each, in order. A plan
    told of is found by the day it was for: "what happened on March 10?" asked on March 12
    finds "my flight leaves on March 10" said in February. Phrases reaching ``at`` ("today",
    "this week") add nothing that ``at`` does not say, and open ones ("since March") and
    deadlines ("by May 3") bound no event.

    Only the text around hint words (``TOLD_HINTS``, years) is scanned: capture calls this for
    every record, and most name no time at all. A caller that knows which hints the text holds
    (capture has its terms) passes them as ``hints``, lowercase prefixes of those words, and
    the words are found by ``str.find`` instead of a pass over every word; a find counts only
    where a hint word starts, so both ways find the same words for the hints given
    (test_told_hints.py); capture's hints are its terms, and a word glued after digits, "5days",
    is one term and gives none, where the pass over every word reads "days" (revO)."""
    spans: list[tuple[int, int]] = []
    folded = text.lower() if hints is not None else ""
    if hints is None or len(folded) != len(text):  # lower() can change lengths ("İ"): positions would drift
        for m in _TOLD_WORD.finditer(text):
            word = m.group()
            if word[0].isdigit() or word.lower() in TOLD_HINTS:
                spans.append(m.span())
        if not text.isascii():  # a hint inside a run of Chinese or Korean: "昨天数据库迁移失败"
            spans.extend(m.span() for m in _CJK_HINT.finditer(text))
        spans.sort()
    else:
        found: set[tuple[int, int]] = set()  # "week" and "weekend" find one word twice
        for hint in hints:
            at_ = folded.find(hint)
            while at_ >= 0:
                if not hint.isascii():  # Chinese, Japanese, Korean: written without spaces, no word to read
                    found.add((at_, at_ + len(hint)))
                elif (starts := _TOLD_WORD_AT.match(text, at_)) is not None and (
                    starts.group()[0].isdigit() or starts.group().lower() in TOLD_HINTS
                ):
                    found.add(starts.span())
                at_ = folded.find(hint, at_ + len(hint))
        spans = sorted(found)
    regions: list[list[int]] = []
    for start, end in spans:
        lo, hi = max(start - _TOLD_REACH, 0), end + _TOLD_REACH
        if regions and lo <= regions[-1][1]:
            regions[-1][1] = hi
        else:
            regions.append([lo, hi])
    if not regions:
        return []
    zone = _zone(timezone)
    cal = _Calendar(at, zone, week_start)
    out: list[tuple[dt.datetime, dt.datetime]] = []
    ahead_cal: _Calendar | None = None
    for lo, hi in regions:
        # widen to whole words, so no phrase is read from half a word
        while lo > 0 and not text[lo - 1].isspace():
            lo -= 1
        while hi < len(text) and not text[hi].isspace():
            hi += 1
        region = text[lo:hi]
        ahead: dict[tuple[int, int], TimeWindow] | None = None  # the phrases placed ahead, read when one is asked for
        for window, (start, end) in _scan_windows(region, cal, with_unclear=True):
            if _QUESTION_ONLY.search(region, start, end):
                continue
            direction = _told_direction(text, lo + start, lo + end, window is not None)
            if direction == "past" and window is not None:
                # a rolling window ("the past week") ends just after now, as it holds now
                if window.start == OPEN_START or window.end > cal.now + US:
                    continue
            elif direction == "ahead":
                ahead_cal = ahead_cal or _Calendar(at, zone, week_start, ahead=True)
                # the phrase alone, read ahead; the whole region where the phrase alone reads otherwise
                alone = [w for w, span in _scan_windows(region[start:end], ahead_cal) if span == (0, end - start)]
                if alone:
                    window = alone[0]
                else:
                    if ahead is None:
                        ahead = {span: w for w, span in _scan_windows(region, ahead_cal) if w is not None}
                    window = ahead.get((start, end))
                if window is None or window.start <= cal.now or window.end == OPEN_END or window.start - cal.now > TOLD_MAX:
                    continue
            else:
                continue
            bounds = (window.start, window.end)
            if window.end - window.start <= TOLD_MAX and bounds not in out:
                out.append(bounds)
    return out


def _told_direction(text: str, start: int, end: int, placed: bool) -> str:
    """How the phrase at ``text[start:end]`` tells when a thing happens: "past" (as placed, the
    latest such), "ahead" (the first such from now on), or "" for a deadline ("by September",
    "due Friday"), which bounds when a thing happens and tells of no day.

    A phrase with a past word ("last week", "in 2024") is past whatever the clause's tense ("we
    will revisit what happened last week"); one in a clause that speaks of the future ("we'll meet
    on Friday", "on Friday we're going to ship", "our plans for July 4"), one after a present that
    schedules, a progressive or an arranged event held now, with no past verb in its clause ("my
    flight leaves on March 10", "the review is on Monday", "we're meeting on Friday", "I have a
    dentist appointment on Monday"), and one the past cannot place
    ("tomorrow", "next week") are ahead; else past
    (test_a_told_phrase_ahead_is_placed_ahead)."""
    before = text[max(start - _CLAUSE_REACH, 0) : start]
    if _DEADLINE.search(before):
        return ""
    if _PAST_WORD.search(text, start, end):
        return "past"
    ends = list(_CLAUSE_END.finditer(before))
    clause = before[ends[-1].end() :] if ends else before
    stop = _CLAUSE_END.search(text, end, end + _CLAUSE_REACH)
    rest = text[end : stop.start() if stop else end + _CLAUSE_REACH]  # the clause after the phrase
    plan = _PLANNED.search(clause)
    if (
        plan is not None
        and (plan.group("aux") or "").lower() not in ("was", "were", "been")
        and not (
            # a plan told in the past: "the review scheduled for March 3 was cancelled", "the deploy we
            # had planned for Monday failed", "what did we have planned for Tuesday?" (a review's finds)
            _PAST_VERB.search(clause, 0, plan.start()) or _PAST_VERB.search(rest.split(",")[0])
        )
    ):
        return "ahead"  # (test_a_plan_is_told_and_asked_of_ahead)
    # a phrase opening its clause has its verb after it: "On Friday we'll meet"
    if _FUTURE.search(clause) is not None or (_CLAUSE_OPENER.fullmatch(clause) and _FUTURE.search(rest) is not None):
        return "ahead"
    scheduled = (  # a present that schedules or a progressive, in a clause with no past verb
        (
            _SCHEDULED.search(clause) is not None
            or _PROGRESSIVE_BEFORE.search(clause) is not None
            or _HELD_EVENT.search(clause) is not None
            or (_CLAUSE_OPENER.fullmatch(clause) is not None and _PROGRESSIVE.search(rest.split(",")[0]) is not None)
        )
        and not _PAST_VERB.search(_HAVE_GOT.sub("", clause[clause.rfind(",") + 1 :]))
        and not _PAST_VERB.search(rest.split(",")[0])
    )
    if not placed:  # "in 3 days" is ahead only where the clause speaks of what is to come: "we haven't talked in a few days" is a span
        return "" if text[start : start + 3].lower() == "in " and not scheduled else "ahead"
    return "ahead" if scheduled else "past"


# --- scanning ---------------------------------------------------------------------------------


class _Unclear(Exception):
    """A phrase that reads as time but cannot be placed (an impossible date, a future phrase)."""


class _Calendar:
    """``now`` and the local calendar of one call: local days as aware UTC boundaries."""

    __slots__ = ("ahead", "future", "local", "now", "today", "week_start", "zone")

    def __init__(self, now: dt.datetime, zone: dt.tzinfo, week_start: int, ahead: bool = False, future: bool = False) -> None:
        # ``future``: the phrases of the future ("tomorrow", "next week", "this Friday" on a
        # Monday) are placed; ``ahead``: and, as a record tells of what is to come, an unqualified
        # day, month or season is the first such from today on ("leaves on March 10";
        # ``told_windows``), where a question means the latest such ("what broke on Friday?")
        self.ahead = ahead
        self.future = future or ahead
        self.zone = zone
        self.now = now.astimezone(UTC)
        self.local = self.now.astimezone(zone)
        self.today = self.local.date()
        self.week_start = week_start

    def at(self, day: dt.date, hour: int = 0) -> dt.datetime:
        """The first instant of local ``hour`` of ``day`` (24 and more: of a later day), in UTC.

        A wall time that a DST change skips maps to the change itself, and one it repeats to its
        first occurrence (fold 0), so days tile time without gaps or overlaps.
        """
        if hour >= 24:
            day, hour = day + DAY * (hour // 24), hour % 24
        return dt.datetime(day.year, day.month, day.day, hour, tzinfo=self.zone).astimezone(UTC)

    def days(self, first: dt.date, count: int = 1) -> tuple[dt.datetime, dt.datetime]:
        return self.at(first), self.at(first + DAY * count)

    def week_of(self, day: dt.date) -> dt.date:
        return day - DAY * ((day.weekday() - self.week_start) % 7)

    def months(self, year: int, month: int, count: int = 1) -> tuple[dt.datetime, dt.datetime]:
        return self.at(_month(year, month)), self.at(_month(year, month + count))


def _zone(timezone: str | dt.tzinfo) -> dt.tzinfo:
    if isinstance(timezone, dt.tzinfo):
        return timezone
    if timezone == "UTC":
        return UTC
    try:
        return ZoneInfo(timezone)
    except (KeyError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError; "Europe" a directory
        raise ValidationError(f"timezone {timezone!r}: not an IANA time zone name (e.g. UTC, Europe/Berlin)") from None


def _scan(text: str, cal: _Calendar) -> tuple[TimeWindow | None, list[tuple[int, int]], list[tuple[int, int]]]:
    """(the window, the spans of the phrases it came from, spans of the phrases that read as time
    but were not used): the first window, or a relative phrase placed as of a day (``_as_of``)."""
    windows: list[tuple[TimeWindow, tuple[int, int]]] = []
    unclear: list[tuple[int, int]] = []
    for found, where in _scan_windows(text, cal, with_unclear=True):
        if found is None:
            unclear.append(where)
        else:
            windows.append((found, where))
    if not windows:
        return None, [], unclear
    used: list[tuple[int, int]]
    window, used, wrong_day = _weekday_of_date(text, windows, cal)
    if window is None and len(windows) > 1:
        window, used = _as_of(text, windows, cal)
    if window is None and len(windows) > 1:
        window, used = _weekday_of_week(text, windows, cal)
    if window is None:
        window, used = windows[0][0], [windows[0][1]]
    unclear.extend(wrong_day)
    unclear.extend(where for _, where in windows if not any(s < where[1] and where[0] < e for s, e in (*used, *wrong_day)))
    return window, used, sorted(unclear)


_WEEKDAY_SHORT = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6}
# a weekday written before a date: "Tuesday, December 29", "Tue 2026-12-29", "on Sat, Dec 26"
_WEEKDAY_BEFORE = re.compile(rf"\b(?:on\s+)?(?P<wd>{_WD}|{'|'.join(_WEEKDAY_SHORT)})\.?,?\s+\Z", re.IGNORECASE)
_QUALIFIED = re.compile(r"\b(?:last|next|this|previous|past|coming)\s+\Z", re.IGNORECASE)
_BOUND_BEFORE = re.compile(r"\b(?:before|until|till|since|after|from|by|through|between|prior\s+to|up\s+to)\s+\Z", re.IGNORECASE)


def _weekday_of_date(
    text: str, windows: list[tuple[TimeWindow, tuple[int, int]]], cal: _Calendar
) -> tuple[TimeWindow | None, list[tuple[int, int]], list[tuple[int, int]]]:
    """A calendar date with its weekday written before it ("Tuesday, December 29", "Tue, Dec
    29"): the date, with the spans of both, and the weekday's as ignored where the date falls on
    another day. The date was a second window, ignored, and "Tue" a word no memory holds
    (test_a_weekday_written_before_a_date_is_the_date_s). A qualified weekday ("last Friday, on
    23 January") is a phrase of its own (``_as_of``). (None, [], []) where there is no such date."""
    for found, (start, end) in windows:
        m = _PHRASE.match(text, start)
        if m is None or m.end() != end or m.group("pre") or not any(m.group(k) for k in ("iso", "dmy", "m1", "m2")):
            continue
        w = _WEEKDAY_BEFORE.search(text, 0, start)
        if w is None or _QUALIFIED.search(text, 0, w.start()) or _BOUND_BEFORE.search(text, 0, w.start()):
            continue  # "before Friday, June 26" is a bound, read as the date's phrase reads it
        name = w.group("wd").lower()
        named = _WEEKDAYS[name] if name in _WEEKDAYS else _WEEKDAY_SHORT[name]
        if found.start.astimezone(cal.zone).weekday() != named:  # "Monday, December 29": the date says which day
            return found, [(start, end)], [(w.start(), w.end("wd"))]
        return TimeWindow(found.start, found.end, text[w.start() : end], found.zone), [(w.start(), start), (start, end)], []
    return None, [], []


def _as_of(text: str, windows: list[tuple[TimeWindow, tuple[int, int]]], cal: _Calendar) -> tuple[TimeWindow | None, list[tuple[int, int]]]:
    """A relative phrase placed as of a day the text names, with the spans of both ("last Friday
    on 23 January, 2022" is the Friday before that day, "last week, as mentioned on November 6"
    the week before that one): a question about what was said on a day uses the words said then.
    (None, []) when the text holds no such pair: a calendar date after "on" or "before", not after
    today ("decided yesterday about May 3" names no day it was said), and a phrase placed from today
    (yesterday, a weekday, last week, N days ago)."""
    day: dt.date | None = None
    anchor: tuple[int, int] | None = None
    relative: list[tuple[int, int]] = []
    for _, (start, end) in windows:
        m = _PHRASE.match(text, start)
        if m is None or m.end() != end or any(m.group(k) for k in ("mon", "year", "earlier")):
            continue  # an anchored phrase ("the Sunday before X") holds its own day
        pre = " ".join(m.group("pre").lower().split()) if m.group("pre") else None
        if m.group("iso") or m.group("dmy") or m.group("m1") or m.group("m2"):
            if anchor is None and pre in ("on", "before") and not m.group("part"):
                placed = _day(m, text, cal, "on", None)
                if placed is not None and placed[0] <= cal.today:
                    day, anchor = placed[0], (start, end)
        elif pre not in _OPEN_PREFIXES:  # "since last week, before May 3" is not read as of a day
            relative.append((start, end))
    if day is None or anchor is None or not relative:
        return None, []
    then = _Calendar(cal.at(day + DAY) - US, cal.zone, cal.week_start)
    phrase = relative[0]
    for found, where in _scan_windows(text, then):  # placed in its own context, as of the day's end
        if where == phrase and found is not None:
            shown = f"{text[where[0] : where[1]]} as of {day_of(day)}"
            return TimeWindow(found.start, found.end, shown, cal.zone), sorted([phrase, anchor])
    return None, []


def _weekday_of_week(
    text: str, windows: list[tuple[TimeWindow, tuple[int, int]]], cal: _Calendar
) -> tuple[TimeWindow | None, list[tuple[int, int]]]:
    """A bare weekday beside a phrase placed as one calendar week: that weekday of the week ("on
    Friday 2 weeks ago", "last week on Friday"), with the spans of both; else (None, [])."""
    weekday: tuple[int, tuple[int, int]] | None = None
    week: tuple[TimeWindow, tuple[int, int]] | None = None
    for found, (start, end) in windows:
        m = _PHRASE.match(text, start)
        if m is not None and m.end() == end and m.group("wd") and not (m.group("wdq") or m.group("wdw") or m.group("part")):
            if weekday is None and (m.group("pre") or "on").lower() == "on":
                weekday = _WEEKDAYS[m.group("wd").lower()], (start, end)
            continue
        if week is not None or not 6 * DAY < found.end - found.start < 8 * DAY:  # (an open window is longer)
            continue
        local = found.start.astimezone(cal.zone).date()
        if cal.at(local) == found.start and found.end == cal.at(local + 7 * DAY) and cal.week_of(local) == local:
            week = found, (start, end)
    if weekday is None or week is None:
        return None, []
    (s1, e1), (s2, e2) = sorted([weekday[1], week[1]])
    if text[e1:s2].strip(" ,"):
        return None, []  # "on Friday and last week": two times, not one
    first = week[0].start.astimezone(cal.zone).date()
    day = first + DAY * ((weekday[0] - first.weekday()) % 7)
    try:
        a, b = _bounded(*cal.days(day), True, None, cal)
    except _Unclear:
        return None, []  # this week's Friday, on a Wednesday: lies ahead
    return TimeWindow(a, b, f"{text[s1:e1]} {text[s2:e2]}", cal.zone), sorted([weekday[1], week[1]])


def _scan_windows(text: str, cal: _Calendar, with_unclear: bool = False) -> Iterator[tuple[TimeWindow | None, tuple[int, int]]]:
    """Each phrase of ``text`` that reads as time, left to right, with its span: its window, or
    None when it cannot be placed (only with ``with_unclear``)."""
    pos = 0
    tokens: list[re.Match[str]] = []
    if text.isascii():  # ASCII lowers letter for letter: the lowered text has the same words, lowered
        starts = _starts(_TOKEN.findall(text.lower()))
        if starts:  # (most questions name no time: their words are never matched as positions)
            tokens = list(_TOKEN.finditer(text))
    else:
        tokens = list(_INTL_TOKEN.finditer(text))
        starts = _starts(["".join(t.group().lower().split()) for t in tokens])  # "지난 주" is "지난주"
    for i in starts:
        token = tokens[i]
        if token.start() < pos:
            continue
        # IGNORECASE: no lower() of the text, which can change lengths ("İ")
        m = _ANCHORED.match(text, token.start())  # "the Sunday before October 25", read whole
        found = _anchored(m, text, cal) if m is not None else None
        if found is None and (m := _PART.match(text, token.start())) is not None:
            found = _part(m, text, cal)  # "the week of March 3", "early May", "the Friday before last"
        if found is None and (m := _ORDINAL_DAY.match(text, token.start())) is not None:
            found = _ordinal_day(m, text, cal)  # "on the 5th", "Monday the 15th"
        if found is None:
            m = _PHRASE.match(text, token.start())
            if m is None:
                continue
            try:
                found = _phrase(m, text, cal)
            except (_Unclear, ValueError, OverflowError):
                found = m.end(), None
        if found is None:  # not a time phrase after all ("the march of time"): try the next word
            continue
        start, (end, bounds) = token.start(), found  # every phrase begins where its token does
        if bounds is not None:
            yield TimeWindow(bounds[0], bounds[1], text[start:end], cal.zone), (start, end)
        elif with_unclear:
            yield None, (start, end)
        pos = end


def _starts(words: list[str]) -> list[int]:
    """Where a time phrase can begin among ``words`` (lowered): a cheap test before the regex."""
    out = []
    for i, word in enumerate(words):
        if word in _TRIGGERS:
            if word not in _WEAK_TRIGGERS:
                out.append(i)
                continue
            following = words[i + 1] if i + 1 < len(words) else ""
            if following[:1].isdigit() or following in _AFTER_WEAK or following.startswith("fy"):
                out.append(i)
        elif word[0].isdigit() or word.startswith("fy"):
            out.append(i)
    return out


def _phrase(m: re.Match[str], text: str, cal: _Calendar) -> tuple[int, tuple[dt.datetime, dt.datetime] | None] | None:
    """(where the phrase ends, its window or None when it cannot be placed), or None when ``m``
    is not a time phrase."""
    pre = m.group("pre")
    pre = " ".join(pre.lower().split()) if pre else None
    kind = next((k for k in _ATOM_KINDS if m.group(k) is not None), None)
    if kind is None:
        if cal.future and m.group("u_future") is not None and pre in (None, "on", "in", "during", "over"):
            return m.end(), _ahead(m, cal)
        return _unclear(m, text, pre)
    if (pre == "at" and kind != "wkend") or (pre == "within" and kind not in ("past", "past1")):
        return None  # "at 2025 numbers"; "within" only says "inside the past N units"
    tail = None  # a range's second half: "between X and Y", "from X to Y", "since X until Y"
    if pre in ("since", "after", "from", "between") and (c := _CONNECTOR.match(text, m.end())):
        conn = c.group("conn").lower()
        if (conn == "and") == (pre == "between") and (other := _ATOM_ONLY.match(text, c.end())) is not None:
            tail = conn, other
    try:
        return _place(m, kind, text, cal, pre, tail)
    except (_Unclear, ValueError, OverflowError):  # the whole phrase, range and all, is ignored
        return (tail[1].end() if tail else m.end()), None


def _anchored(m: re.Match[str], text: str, cal: _Calendar) -> tuple[int, tuple[dt.datetime, dt.datetime] | None] | None:
    """(end, window or None when it cannot be placed) of a phrase anchored to a day ("the Sunday
    before October 25, 2022", "two days after March 3"), or None when what follows the head is
    no day: the text is then read as usual ("Sunday before we left" is a Sunday)."""
    day_atom = _ATOM_ONLY.match(text, m.end())
    if day_atom is None or day_atom.group("day") is None or day_atom.group("part"):
        return None
    try:
        placed = _day(day_atom, text, cal, "on", None)  # a day after "before|after": "May" there is the month
        if placed is None:
            return None
        anchor, relative = placed
        a, b = _from_day(anchor, _head(m), cal)
        pre = " ".join(m.group("pre").lower().split()) if m.group("pre") else None
        if pre in ("from", "between", "at", "within"):
            return None  # a range's first half, "at", "within": not read here
        return day_atom.end(), _bounded(a, b, relative, pre, cal)
    except (_Unclear, ValueError, OverflowError):
        return day_atom.end(), None


class _Head(NamedTuple):
    """The head of a phrase anchored to a day or an event: "the Sunday before", "two weeks after"."""

    back: int  # -1 before, 1 after
    n: int
    unit: str  # day, week or month
    weekday: int | None
    span: bool = False  # "the two weeks after": the days between, not the week two weeks on


def _head(m: re.Match[str]) -> _Head:
    n = _count(m.group("n")) if m.group("n") else 1
    wd, unit = m.group("wd"), _unit(m.group("nu") or m.group("u") or "day")
    span = bool(m.group("the")) and n > 1  # "the 3 days before X", where "3 days before X" is one day
    return _Head(-1 if m.group("dir").lower() == "before" else 1, n, unit, _WEEKDAYS[wd.lower()] if wd else None, span)


def _from_day(anchor: dt.date, head: _Head, cal: _Calendar) -> tuple[dt.datetime, dt.datetime]:
    """The window a head places from a day: the latest such weekday before it (the first after),
    the day N days away, the calendar week (month) holding the day N weeks (months) away."""
    back, n = head.back, head.n
    if head.span:  # the whole days between the day and N units from it, the day itself excluded
        if head.unit == "month":
            far = _month(anchor.year, anchor.month + back * n)
            far = far.replace(day=min(anchor.day, calendar.monthrange(far.year, far.month)[1]))
        else:
            far = anchor + back * n * (7 if head.unit == "week" else 1) * DAY
        return (cal.at(anchor + DAY), cal.at(far + DAY)) if back > 0 else (cal.at(far), cal.at(anchor))
    if head.weekday is not None:
        index = head.weekday
        step = (anchor.weekday() - index - 1) % 7 + 1 if back < 0 else (index - anchor.weekday() - 1) % 7 + 1
        return cal.days(anchor + back * step * DAY)
    if head.unit == "day":
        return cal.days(anchor + back * n * DAY)
    if head.unit == "month":
        return cal.months(anchor.year, anchor.month + back * n)
    return cal.days(cal.week_of(anchor + back * 7 * n * DAY), 7)


def _part(m: re.Match[str], text: str, cal: _Calendar) -> tuple[int, tuple[dt.datetime, dt.datetime] | None] | None:
    """(end, window or None when it cannot be placed) of a part of a time (``_PART``), or None
    when what follows the head is not what it can be a part of: the text is then read as usual.

    - the week of X: the calendar week holding day X; the weekend of X: the Saturday and Sunday
      nearest X (a Wednesday's is the next one);
    - the first (second, third, fourth) week of a month: its days 1-7 (8-14, ...); its last week:
      its last seven days;
    - early, mid, late (the beginning, middle, end of): a week's, a month's first half, middle
      half, second half in whole days; a year's January-June, April-September, July-December:
      a fuzzy phrase is read as a window that holds what it can mean, and shown as placed;
    - the Friday (weekend) before last: the one a week before last Friday (last weekend).
    """
    g = m.group
    pre = " ".join(g("pre").lower().split()) if g("pre") else None
    if pre in ("from", "between", "within"):
        return None  # a range's first half: not read here
    if pre == "at":
        pre = None  # "at the end of May"
    end = m.end()
    try:
        if bl := g("bl"):
            if bl.lower() == "weekend":  # the weekend before "last weekend"
                a, b = cal.days(_last_saturday(cal.today) - 7 * DAY, 2)
            else:  # the one before "last Friday"
                a, b = cal.days(_last_weekday(cal.today, _WEEKDAYS[bl.lower()]) - 7 * DAY)
            return m.end(), _bounded(a, b, True, pre, cal)
        if g("of"):
            day_atom = _ATOM_ONLY.match(text, m.end())
            if day_atom is None or day_atom.group("day") is None or day_atom.group("part"):
                return None
            end = day_atom.end()
            placed = _day(day_atom, text, cal, "on", None)
            if placed is None:
                return None
            day, relative = placed
            of = g("of").lower()
            if of in _PARTS:  # "the morning of June 3"
                lo, hi = _PARTS[of]
                a, b = cal.at(day, lo), cal.at(day, hi)
            elif of == "week":
                a, b = cal.days(cal.week_of(day), 7)
            else:  # the nearest weekend: Monday and Tuesday the one before, Wednesday on the one after
                back = (day.weekday() - 6) % 7  # days since the last Sunday (0 on a Sunday)
                ahead = (5 - day.weekday()) % 7  # days to the next Saturday (0 on a Saturday)
                saturday = day - DAY * (back + 1) if back < ahead and day.weekday() != 5 else day + DAY * ahead
                a, b = cal.days(saturday, 2)
            return end, _bounded(a, b, relative, pre, cal)
        whole = _WHOLE.match(text, m.end())
        if whole is None:
            return None
        end = whole.end()  # what is ignored if it cannot be placed ("late this year" in June: ahead)
        placed_whole = _whole(whole, text, cal)
        if placed_whole is None:
            return None
        unit, first, days, relative = placed_whole
        if nth := g("nth"):
            if unit != "month":
                return None  # "the first week of 2025" is not read
            n = _NTH.get(nth.lower())
            start = first + DAY * (7 * n) if n is not None else first + DAY * (days - 7)
            a, b = cal.days(start, 7)
        else:
            edge = _EDGES[(g("edge") or g("edge2")).lower()]
            if unit == "year":
                lo_month = {"early": 1, "mid": 4, "late": 7}[edge]
                a, b = cal.months(first.year, lo_month, 6)
            else:
                half, quarter = -(-days // 2), days // 4
                lo_day, count = {"early": (0, half), "mid": (quarter, days - 2 * quarter), "late": (days - half, half)}[edge]
                a, b = cal.days(first + DAY * lo_day, count)
        return end, _bounded(a, b, relative, pre, cal)
    except (_Unclear, ValueError, OverflowError):
        return end, None


def _whole(m: re.Match[str], text: str, cal: _Calendar) -> tuple[str, dt.date, int, bool] | None:
    """(unit, first day, days, relative) of what a part is of (``_WHOLE``), or None when it is
    not a time here ("late May" yes, "the end of may" no: a month that is a common word)."""
    g, today = m.group, cal.today
    unit = (g("qu") or g("tu") or "").lower()
    if unit:
        back = 0 if g("tu") or g("q").lower() == "this" else 1
        if unit == "week":
            return "week", cal.week_of(today) - 7 * DAY * back, 7, True
        if unit == "month":
            first = _month(today.year, today.month - back)
        else:
            first = dt.date(today.year - back, 1, 1)
    elif name := g("m"):
        if not _month_word_ok(text, m.start("m"), name, None, "year" if g("my") else ""):
            return None
        month = _MONTHS[name.lower()]
        if g("my"):
            first = dt.date(int(g("my")), month, 1)
        else:  # the latest such month that has begun
            first = dt.date(today.year if month <= today.month else today.year - 1, month, 1)
        unit = "month"
    else:
        year = int(g("y"))
        if not 1900 <= year <= today.year:
            return None  # "mid 3000 requests"
        return "year", dt.date(year, 1, 1), 365, False
    if unit == "month":
        return "month", first, (_month(first.year, first.month + 1) - first).days, not g("my")
    return "year", first, 365, True


def _ordinal_day(m: re.Match[str], text: str, cal: _Calendar) -> tuple[int, tuple[dt.datetime, dt.datetime] | None] | None:
    """(end, window or None when it cannot be placed) of a day of the month by its ordinal, or
    None when it may not be a day. "the 5th" is a day after a preposition ("on the 5th"), a
    weekday ("Monday the 15th") or with its month ("the 3rd of last month"), and where no word
    but a function or time word follows ("on the 5th attempt" is no day): the latest such day
    not in the future, of the month named, or the latest whose weekday is the one named."""
    g = m.group
    pre = " ".join(g("pre").lower().split()) if g("pre") else None
    if pre in ("from", "between", "within", "in", "during", "over"):
        return None
    of_month = g("q") or g("cur")
    if not of_month and _MONTH_AFTER.match(text, m.end()) is not None:
        return None  # "the 3rd of March": a date, read by _PHRASE
    if not (pre or g("wd") or of_month):
        return None
    if not of_month and _ORDINAL_NOT_DAY.match(text, m.end()) is not None:
        return None  # "on the 3rd-party SDK", "on the 1st of 3 retries"
    after = m.end()
    while (more := _MORE_ORDINALS.match(text, after)) is not None:
        after = more.end()
    following_word = _NEXT_WORD.match(text, after)  # "on the 5th attempt", "on the 1st and 2nd items"
    if following_word is not None:
        word = following_word.group(1).lower()
        if word not in _FUNCTION_WORDS and word not in _TRIGGERS and word not in _PARTS:
            return None  # "on the 5th attempt"
    today, n = cal.today, int(g("d"))
    try:
        if of_month:
            back = 0 if g("cur") or g("q").lower() == "this" else 1
            first = _month(today.year, today.month - back)
            day = dt.date(first.year, first.month, n)  # ValueError: the month has no such day
        else:
            wanted = _WEEKDAYS[g("wd").lower()] if g("wd") else None
            day = _latest_day_of_month(today, n, wanted)
        a, b = cal.days(day)
        return m.end(), _bounded(a, b, True, pre, cal)
    except (_Unclear, ValueError, OverflowError):
        return m.end(), None


def _latest_day_of_month(today: dt.date, n: int, weekday: int | None) -> dt.date:
    """The latest day ``n`` of a month not after ``today`` (that falls on ``weekday``, if given),
    within 28 months (a weekday and a day of the month meet at least every 14); else _Unclear."""
    for back in range(28):
        first = _month(today.year, today.month - back)
        try:
            day = dt.date(first.year, first.month, n)
        except ValueError:
            continue  # "the 31st" of a month with 30 days
        if day <= today and (weekday is None or day.weekday() == weekday):
            return day
    raise _Unclear(f"no day {n} of a month within 28 months")


def _place(
    m: re.Match[str], kind: str, text: str, cal: _Calendar, pre: str | None, tail: tuple[str, re.Match[str]] | None
) -> tuple[int, tuple[dt.datetime, dt.datetime]] | None:
    """(end, window) of a phrase whose atom is of ``kind``, or None when it is not a time phrase.
    Raises _Unclear (or ValueError, OverflowError) for one that cannot be placed."""
    atom = _atom(m, kind, text, cal, pre)
    if atom is None:
        return None
    a, b, relative = atom
    if tail is not None:
        conn, other = tail
        kind2 = next(k for k in _ATOM_KINDS if other.group(k) is not None)
        second = _atom(other, kind2, text, cal, conn, after=a.astimezone(cal.zone).date())
        if second is not None:
            lo, hi = (b if pre == "after" else a), (second[0] if conn == "before" else second[1])
            if pre in ("from", "between"):
                lo, hi = min(a, second[0]), max(b, second[1])
            if hi <= lo:
                raise _Unclear("the range ends before it starts")
            return other.end(), (lo, hi)
    if pre == "between" or (pre == "from" and _atom(m, kind, text, cal, None) is not None):
        return None  # "notes from last week": the phrase is "last week"
    if pre == "from":  # "everything from November", "from 2025": what needs a preposition has one
        pre = None
    return m.end(), _bounded(a, b, relative, pre, cal)


def _bounded(a: dt.datetime, b: dt.datetime, relative: bool, pre: str | None, cal: _Calendar) -> tuple[dt.datetime, dt.datetime]:
    """The window of a placed phrase ``[a, b)`` under its preposition: open bounds for since,
    after, before and until. Raises _Unclear for a relative phrase ahead of now or an empty window."""
    if relative and pre not in _UNTIL_PREFIXES and a > cal.now and not cal.future:
        raise _Unclear("lies ahead")  # "this Friday" on a Monday: memories are of the past
    if pre in ("since", "after"):
        a, b = (a if pre == "since" else b), OPEN_END
    elif pre in ("before", "prior to"):
        a, b = OPEN_START, a
    elif pre in _UNTIL_PREFIXES:
        a = OPEN_START
    if b <= a:
        raise _Unclear("an empty window")  # "before 0001-01-01", a day its zone skipped
    return a, b


def _atom(
    m: re.Match[str], kind: str, text: str, cal: _Calendar, pre: str | None, after: dt.date | None = None
) -> tuple[dt.datetime, dt.datetime, bool] | None:
    """(start, end, relative) of one atom, or None when it is not a time phrase here.

    ``after``: the atom ends a range starting that day, so a weekday, day or month without a
    year is the first one from then on. ``relative`` is false for dates written out in full.
    """
    today, g = cal.today, m.group
    if kind == "cjd":
        return _cjk_date(m, cal, after)
    if kind == "cjr":
        at, past = m.span("cjr")
        word = "".join(g("cjr").split())
        if not _CJK_WORD_BEFORE.search(text[max(0, at - 2) : at] or " ") or _CJK_WORD_AFTER.match(word[-1] + text[past : past + 1]):
            return None  # a word inside another: "提前天数", "上周期"
        unit, back = _CJK_RELATIVE[word]
        return (*_calendar_unit(cal, unit, back), True)
    if kind == "edge":  # the first or last day of a month: of the latest such month begun, unless a year is given
        if q := g("edq"):
            first = _calendar_unit(cal, "month", 0 if q.lower() == "this" else 1)[0].astimezone(cal.zone).date()
        else:
            month = _MONTHS[g("m4").lower()]
            year = int(g("y4")) if g("y4") else today.year if month <= today.month else today.year - 1
            first = dt.date(year, month, 1)
        month_end = (first.replace(day=28) + 4 * DAY).replace(day=1) - DAY
        return (*cal.days(first if g("edw").lower() == "first" else month_end), not g("y4"))
    if kind == "day":
        placed = _day(m, text, cal, pre, after)
        if placed is None:
            return None
        day, relative = placed
        if part := g("part"):
            lo, hi = _PARTS[part.lower()]
            return cal.at(day, lo), cal.at(day, hi), relative
        if last := g("d1e"):  # "June 1-5": the days of a range in one month
            day.replace(day=int(last))  # ValueError (ignored) when the month has no such day: "June 1-31"
            if int(last) <= day.day:
                raise _Unclear("a range of days that ends before it starts")
            return (*cal.days(day, int(last) - day.day + 1), relative)
        return (*cal.days(day), relative)
    if kind == "pod":
        word = " ".join(g("pod").lower().split())
        day = today - DAY if word == "last night" else today
        lo, hi = _PARTS["night" if word in ("tonight", "last night") else g("podp").lower()]
        return cal.at(day, lo), cal.at(day, hi), True
    if kind == "earlier":  # "earlier this week", "month to date", "YTD": from the unit's start to now
        unit = (g("eu") or g("tdu") or _TO_DATE_UNITS.get((g("tda") or "").lower(), "day")).lower()
        start = {
            "day": today, "week": cal.week_of(today), "month": today.replace(day=1),
            "quarter": today.replace(month=(today.month - 1) // 3 * 3 + 1, day=1), "year": dt.date(today.year, 1, 1),
        }[unit]  # fmt: skip
        return cal.at(start), cal.now + US, True
    if kind in ("rel", "wbl"):
        unit = (g("relu") or g("wblu")).lower()
        back = 2 if kind == "wbl" else 0 if g("relq").lower() == "this" else 1
        return (*_calendar_unit(cal, unit, back), True)
    if kind == "wkend":
        word = " ".join(g("weq").lower().split())
        if word == "the" and pre is None:
            return None  # "plans for the weekend" may mean the coming one
        saturday = today - DAY * ((today.weekday() - 5) % 7)  # the latest Saturday, today included
        weekend_now = today.weekday() >= 5
        if word in ("last", "previous"):
            saturday = _last_saturday(today)
        elif word == "this" and not weekend_now:
            saturday += 7 * DAY  # the coming one: lies ahead
        return (*cal.days(saturday, 2), True)
    if kind == "ago":
        n, unit = _count(g("an")), _unit(g("au"))
        if unit == "fortnight":  # "a fortnight ago" is the week two weeks ago
            n, unit = 2 * n, "week"
        if unit in ("minute", "hour"):
            point = cal.now - _duration(n, unit)
            return point - _duration(1, unit), point + US, True
        return (*_calendar_unit(cal, unit, n), True)
    if kind in ("past", "past1"):
        n, unit = (_count(g("pn")), _unit(g("pu"))) if kind == "past" else (1, _unit(g("pu1") or g("pu2") or g("pu3")))
        try:
            start = _rolling(cal, n, unit)
        except (ValueError, OverflowError):  # "the last 3000 years": back past the calendar, so all of it
            start = OPEN_START
        return start, cal.now + US, True
    if kind == "qtr":
        return _quarter(m, cal, pre)
    if kind == "sea":
        return _season(m, text, cal, pre)
    if kind == "mon":
        return _month_atom(m, text, cal, pre, after)
    year = int(g("year"))  # kind == "year"
    if pre is None or pre in ("on", "over") or not 1900 <= year <= today.year:
        return None  # "2025" alone, "over 2025 requests", "in 2048 bytes": numbers
    return (*cal.months(year, 1, 12), False)


def _day(m: re.Match[str], text: str, cal: _Calendar, pre: str | None, after: dt.date | None) -> tuple[dt.date, bool] | None:
    """The local day an atom of kind "day" names, and whether it is relative to today."""
    today, g = cal.today, m.group
    if iso := g("iso"):  # (in any decimal digits: "٢٠٢٦-٠٧-١٤" too)
        y, mo, d = map(int, re.split("[-/]", iso))
        return dt.date(y, mo, d), False  # ValueError for 2026-02-30: unclear
    if dmy := g("dmy"):  # 10.03.2026, day first as written with dots (German, French, Russian...)
        d, mo, y = map(int, dmy.split("."))
        return dt.date(y, mo, d), False
    if g("dby"):
        return today - 2 * DAY, True
    if g("yday"):
        return today - DAY, True
    if g("tday"):
        return today, True
    if wd := g("wd"):
        qualifier, week = (g("wdq") or "").lower(), (g("wdw") or "").lower()
        if (qualifier and week) or (not qualifier and _previous_word(text, m.start("wd")) in _HOLIDAYS):
            return None  # "last Tuesday last week", "Black Friday"
        index = _WEEKDAYS[wd.lower()]
        if week or qualifier == "this":
            monday = cal.week_of(today) - (7 * DAY if week in ("last", "previous") else dt.timedelta(0))
            return monday + DAY * ((index - monday.weekday()) % 7), True
        if qualifier:  # last/previous Tuesday: before today
            return _last_weekday(today, index), True
        if after is not None or cal.ahead:
            after = after or today
            return after + DAY * ((index - after.weekday()) % 7), True
        return today - DAY * ((today.weekday() - index) % 7), True
    name_group = "m1" if g("m1") else "m2"
    year = g("y1") or g("y2")
    if not _month_word_ok(text, m.start(name_group), g(name_group), pre, "year" if year else "day"):
        return None
    month, day = _MONTHS[g(name_group).lower()], int(g("d1") or g("d2"))
    if year:
        return dt.date(int(year), month, day), False
    return _day_of_month(month, day, cal, after), True


def _day_of_month(month: int, day: int, cal: _Calendar, after: dt.date | None) -> dt.date:
    """The day ``month``/``day`` written without a year: the latest such not after today (the
    first from ``after`` on, or from today on where ``cal.ahead``)."""
    dt.date(2000, month, day)  # a leap year: ValueError only for a day no year has (June 31)
    today = cal.today
    ref, step = (after, 1) if after is not None else (today, 1) if cal.ahead else (today, -1)
    year_n = ref.year
    while True:  # Feb 29 skips years
        placed: dt.date | None
        try:
            placed = dt.date(year_n, month, day)
        except ValueError:
            placed = None
        if placed is not None and (placed <= ref if step < 0 else placed >= ref):
            return placed
        year_n += step
        if not 1 <= year_n <= 9999:
            raise _Unclear("no such day within datetime's years")


def _cjk_date(m: re.Match[str], cal: _Calendar, after: dt.date | None) -> tuple[dt.datetime, dt.datetime, bool]:
    """A date written with the signs of year, month and day ("2026年7月14日", "7月14日", "2026년 7월
    14일", "2026年7月", "2026年"): that day, month or year; without a year the latest such that has
    begun, or the first from ``after`` on, as "July 14" and "in July" are read (the signs say it
    is a date: no preposition is needed). ValueError for a day no month has."""
    g = m.group
    year = int(g("cjy")) if g("cjy") else None
    month, day = g("cjm") or g("cjm2"), g("cjdd") or g("cjd2")
    if month is None:  # "2026年"
        return (*cal.months(year or 0, 1, 12), False)
    n = int(month)
    if not 1 <= n <= 12:
        raise _Unclear("no such month")
    if day is not None:
        if year is not None:
            return (*cal.days(dt.date(year, n, int(day))), False)
        return (*cal.days(_day_of_month(n, int(day), cal, after)), True)
    if year is not None:
        return (*cal.months(year, n), False)
    today = cal.today
    if after is not None or cal.ahead:
        after = after or today
        year = after.year if n >= after.month else after.year + 1
    else:
        year = today.year if n <= today.month else today.year - 1
    return (*cal.months(year, n), True)


def _month_atom(
    m: re.Match[str], text: str, cal: _Calendar, pre: str | None, after: dt.date | None
) -> tuple[dt.datetime, dt.datetime, bool] | None:
    today, g = cal.today, m.group
    name, qualifier = g("m3"), (g("mq") or "").lower()
    if not _month_word_ok(text, m.start("m3"), name, pre, "year" if g("y3") else ""):
        return None
    month = _MONTHS[name.lower()]
    if g("y3"):
        return (*cal.months(int(g("y3")), month), False)
    if not (pre or qualifier or _names_a_month_of(text, m.start("m3"), m.end("m3"), name)):
        return None  # a month name alone is a word: "June said", "the march of time"
    if (after is not None or cal.ahead) and not qualifier:
        after = after or today
        year = after.year if month >= after.month else after.year + 1
    elif qualifier == "this":
        year = today.year
    elif qualifier:  # last/previous March: before the current month
        year = today.year if month < today.month else today.year - 1
    else:  # the latest such month that has begun
        year = today.year if month <= today.month else today.year - 1
    return (*cal.months(year, month), True)


def _quarter(m: re.Match[str], cal: _Calendar, pre: str | None) -> tuple[dt.datetime, dt.datetime, bool] | None:
    """A calendar quarter ("Q3 2025", "in Q1", "the first quarter of last year") or half year
    ("in H2"); without a year the latest such that has begun. "Q3" or "H2" alone may be a name
    ("the Q3 roadmap"): words; "first quarter" alone is time that cannot be placed (a fiscal one?)."""
    g, today = m.group, cal.today
    half = (g("qh") or "q").lower() == "h"
    n = int(g("qd")) if g("qd") else _NTH[g("qn").lower()] + 1
    months = 6 if half else 3
    if n * months > 12:
        return None  # "H3": no half year
    year_word, this_or_last = g("qy1") or g("qy2"), (g("qyq") or "").lower()
    if not (pre or year_word or this_or_last or g("qthe") or m.group(0).lower().endswith("the year")):
        if g("qd"):
            return None
        raise _Unclear("a quarter with nothing to place it by")
    first = (n - 1) * months + 1
    if year_word:
        return (*cal.months(int(year_word), first, months), False)
    if this_or_last or m.group(0).lower().endswith("the year"):
        year = today.year - (this_or_last == "last")
    else:  # the latest such that has begun
        year = today.year if first <= today.month else today.year - 1
    return (*cal.months(year, first, months), True)


SOUTHERN_ZONES: Final = (
    "Australia/",
    "Antarctica/",
    "Pacific/Auckland",
    "Pacific/Chatham",
    "Pacific/Fiji",
    "Pacific/Tongatapu",
    "Pacific/Apia",
    "Pacific/Noumea",
    "Pacific/Efate",
    "Pacific/Port_Moresby",
    "Pacific/Easter",
    "Pacific/Tahiti",
    "America/Argentina/",
    "America/Buenos_Aires",
    "America/Santiago",
    "America/Punta_Arenas",
    "America/Sao_Paulo",
    "America/Montevideo",
    "America/Asuncion",
    "America/La_Paz",
    "America/Lima",
    "Africa/Johannesburg",
    "Africa/Maputo",
    "Africa/Harare",
    "Africa/Windhoek",
    "Africa/Gaborone",
    "Africa/Lusaka",
    "Africa/Maseru",
    "Africa/Mbabane",
    "Africa/Luanda",
    "Africa/Lubumbashi",
    "Africa/Blantyre",
    "Africa/Dar_es_Salaam",
    "Indian/Mauritius",
    "Indian/Reunion",
    "Indian/Antananarivo",
    "Atlantic/Stanley",
    "Brazil/",
    "Chile/",
    "NZ",
)
"""Time zones of the southern hemisphere (IANA names or their starts), where summer is December
to February: the seasons a question names follow the database's timezone."""
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # northern; southern: +6 months
_SEASON_PRE = frozenset("in during over since before after until till through from between".split())


def _season(m: re.Match[str], text: str, cal: _Calendar, pre: str | None) -> tuple[dt.datetime, dt.datetime, bool] | None:
    """A season's three months (see the module docstring), or None when the word is a word."""
    g = m.group
    name, qualifier, year = g("sn").lower(), " ".join((g("sq") or "").lower().split()), g("sy")
    if not (qualifier or year):
        following = _NEXT_WORD.match(text, m.end())
        nxt = following.group(1) if following else ""
        if pre not in _SEASON_PRE or (name == "fall" and pre not in ("in", "during", "over")):
            return None  # "summer" alone, "the summer intern", "since the fall" (an event?)
        if (nxt and not (_function_word(nxt) or nxt.lower() in _TRIGGERS)) or nxt.lower() == "of":
            return None  # "in Spring Boot", "during the summer release", "in the fall of the API"
    if text[m.end() : m.end() + 1] in ("'", "’") and g("sn")[0].isupper() and not qualifier:
        return None  # "in Summer's notes": a name
    key = getattr(cal.zone, "key", "") or ""
    south = any(key == z or (z.endswith("/") and key.startswith(z)) for z in SOUTHERN_ZONES)
    first = (_SEASON_START[name] + (6 if south else 0) - 1) % 12 + 1

    def of_year(y: int) -> tuple[dt.datetime, dt.datetime]:  # the one of year y: a December start belongs to the next year
        return cal.months(y - 1 if first == 12 else y, first, 3)

    if year:
        return (*of_year(int(year)), False)
    if cal.ahead and qualifier in ("", "this"):  # the current one, or the next to begin
        y = cal.today.year - 1
        while of_year(y)[1] <= cal.now:
            y += 1
        return (*of_year(y), True)
    y = cal.today.year + 1
    while of_year(y)[0] > cal.now:  # the latest that has begun
        y -= 1
    if qualifier in ("last", "this past", "past", "previous"):
        while of_year(y)[1] > cal.now:  # the latest that has ended
            y -= 1
    elif qualifier == "this" and of_year(y)[1] <= cal.now:  # not the current one: this year's, maybe ahead (refused)
        y = cal.today.year
    return (*of_year(y), True)


def _names_a_month_of(text: str, start: int, end: int, name: str) -> bool:
    """Whether a month's full name, capitalised between a determiner and a noun, says when the
    noun was: "the March migration", "our June release" (not "the march of time", "June said")."""
    if not name[0].isupper() or (len(name) <= 3 and name.lower() != "may") or _previous_word(text, start) not in _MODIFIED_BY:
        return False
    following = _NEXT_WORD.match(text, end)
    return following is not None and not _function_word(following.group(1)) and following.group(1).lower() not in _TRIGGERS


def _ahead(m: re.Match[str], cal: _Calendar) -> tuple[dt.datetime, dt.datetime] | None:
    """The window of a phrase of the future (``u_future``) as a record tells of it: tomorrow,
    the day after; the calendar week, month or year after the current one ("next week", "the
    coming month"); the next weekend to begin; "next Friday" the Friday of next week; "in 3 days"
    the day 3 days on, "in two weeks" the calendar week holding that day. None for what is no
    day ahead: "next May" (this May or the next?), "in 2 hours", "later today"."""
    today, g = cal.today, m.group
    if g("u_tom"):
        return cal.days(today + DAY * (2 if g("u_dat") else 1))
    unit = (g("u_nu") or g("u_cu") or "").lower()
    if unit == "weekend":  # the first Saturday after today
        return cal.days(today + DAY * ((5 - today.weekday() - 1) % 7 + 1), 2)
    if unit in _WEEKDAYS:
        return cal.days(cal.week_of(today) + DAY * (7 + (_WEEKDAYS[unit] - cal.week_start) % 7))
    if unit:
        return _calendar_unit(cal, unit, -1)
    if not g("u_n"):  # "next May", "later today"
        return None
    n, unit = _count(g("u_n")), _unit(g("u_u"))
    if unit in ("minute", "hour") or not cal.ahead:  # in a question, "what changed in 3 days?" asks of a span
        return None
    if unit == "fortnight":  # no calendar has fortnights: the week two weeks on
        n, unit = 2 * n, "week"
    return _calendar_unit(cal, unit, -n)


def _unclear(m: re.Match[str], text: str, pre: str | None) -> tuple[int, None] | None:
    """Where an unplaceable time phrase ends (reported as ignored), or None when ``m`` is not one."""
    g = m.group
    if g("u_since") is not None:
        words = list(_WORDS.finditer(text, m.start("u_obj"), m.end("u_obj")))
        first = 1 if words[0].group().lower() in _DETERMINERS and len(words) > 1 else 0
        if _function_word(words[first].group()):
            return None  # "since we moved", "since it is": a clause (often "because"), not an event
        second = words[first + 1].group() if first and len(words) > first + 1 else ""
        last = first + 1 if second and not _function_word(second) and second.lower() not in _TRIGGERS else first  # not "last week"
        end = words[last].end()
        following = _NEXT_WORD.match(text, end)
        if following and following.group(1).lower() in _AUX:
            return None  # "since the cache was cold": a clause
        return end, None
    if g("u_future") is not None and (fm := g("u_fm")) and not _month_word_ok(text, m.start("u_fm"), fm, "next"):
        return None
    if g("u_quarter") is not None and not (pre or g("u_qp") or g("u_qy")) and "quarter" not in g("u_quarter").lower():
        return None  # "Q3" alone may be a name; "in Q3", "Q3 2025" are times
    if g("u_slash") is not None and not (pre or g("u_sy")):
        return None  # "3/4 of the tests": a fraction
    return m.end(), None


# --- small pieces -----------------------------------------------------------------------------


def _last_weekday(today: dt.date, index: int) -> dt.date:
    """ "last Tuesday": the latest such weekday before ``today`` (on a Tuesday, a week ago)."""
    return today - DAY * ((today.weekday() - index - 1) % 7 + 1)


def _last_saturday(today: dt.date) -> dt.date:
    """The Saturday of "last weekend": the latest one, or on a weekend day the one before."""
    return today - DAY * ((today.weekday() - 5) % 7) - 7 * DAY * (today.weekday() >= 5)


def _month(year: int, month: int) -> dt.date:
    """The first day of ``month`` of ``year``, months counted past 12 or below 1."""
    year += (month - 1) // 12
    return dt.date(year, (month - 1) % 12 + 1, 1)


def _calendar_unit(cal: _Calendar, unit: str, back: int) -> tuple[dt.datetime, dt.datetime]:
    """The local calendar day, week, month or year ``back`` units before the current one."""
    today = cal.today
    if unit == "day":
        return cal.days(today - DAY * back)
    if unit == "week":
        return cal.days(cal.week_of(today) - 7 * DAY * back, 7)
    if unit == "month":
        return cal.months(today.year, today.month - back)
    if unit == "quarter":
        return cal.months(today.year, (today.month - 1) // 3 * 3 + 1 - 3 * back, 3)
    return cal.months(today.year - back, 1, 12)


def _rolling(cal: _Calendar, n: int, unit: str) -> dt.datetime:
    """``now`` minus ``n`` units: exact for minutes to weeks, on the local calendar for months and years."""
    if unit not in ("month", "year"):
        return cal.now - _duration(n, unit)
    local = cal.local
    if unit == "month":
        first = _month(local.year, local.month - n)
        last_day = (_month(first.year, first.month + 1) - DAY).day
        wall = local.replace(year=first.year, month=first.month, day=min(local.day, last_day))
    else:
        try:
            wall = local.replace(year=local.year - n)
        except ValueError:  # Feb 29 in a year without one
            wall = local.replace(year=local.year - n, day=28)
    return wall.astimezone(UTC)


def _duration(n: int, unit: str) -> dt.timedelta:
    days = {"day": 1, "week": 7, "fortnight": 14}
    return dt.timedelta(minutes=n) if unit == "minute" else dt.timedelta(hours=n) if unit == "hour" else DAY * n * days[unit]


def _count(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _NUMBERS[word]


def _unit(word: str) -> str:
    word = word.lower().rstrip("s")
    return "minute" if word == "min" else word


def _function_word(word: str) -> bool:
    return word.lower().replace("’", "'").split("'")[0] in _FUNCTION_WORDS  # "it's", "we've"


def _previous_word(text: str, index: int) -> str:
    found = _PREVIOUS_WORD.search(text, max(0, index - 24), index)
    return found.group(1).lower() if found else ""


def _month_word_ok(text: str, index: int, word: str, pre: str | None, dated: str = "") -> bool:
    """Whether a month name that is also a common word is meant as the month: after a
    preposition; "march" when a day or year follows or capitalised ("last March"); "may" only
    capitalised, and with just a day where no sentence begins ("May 3 people join?").
    ``dated`` says what follows the name: "", "day" or "year"."""
    folded = word.lower()
    if pre or folded not in _FALSE_FRIEND_MONTHS:
        return True
    if folded != "may":
        return bool(dated) or word[0].isupper()
    if not word[0].isupper() or dated == "year":
        return word[0].isupper()
    before = text[:index].rstrip()
    return bool(before) and before[-1] not in ".!?:;\"'“(" and _previous_word(text, index) not in _AUX


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the (sorted, disjoint) spans, single-spaced."""
    pieces, pos = [], 0
    for start, end in spans:
        pieces.append(text[pos:start])
        pos = end
    pieces.append(text[pos:])
    return re.sub(r"\s+", " ", " ".join(pieces).strip())
