"""Told dates: an episode recorded on July 2 that says "the deploy failed yesterday" is in July 1's
window for ``ask`` (and for ``recall(include_told=True)``), with a why that says so.

The windows a record's text tells of are read at capture (``memdb.memory.layout.told_of``), kept in
its header and indexed in ``^EPTD``; these tests pin what is read, how a window query uses it, that
every lifecycle path keeps the index true (``check()``), the upgrade of an older database, the
timezone, a year of daily use, and a brute-force reference for the matches of random windows.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdb
from memdb.memory.layout import LAYOUT, TOLD_FIELDS, told_of
from memdb.memory.text import term_counts
from memdb.memory.timephrase import TOLD_HINTS, TOLD_MAX, TOLD_ORDINALS, TOLD_PART_OF_DAY_US, read_time_phrases, told_windows, told_within

UTC = dt.UTC
NOW = dt.datetime(2026, 7, 20, 12, 0, tzinfo=UTC)
JULY_2 = dt.datetime(2026, 7, 2, 9, 30, tzinfo=UTC)

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)


def day(d: int, month: int = 7) -> dt.datetime:
    return dt.datetime(2026, month, d, tzinfo=UTC)


# --- what a text tells of ---------------------------------------------------------------------


def test_told_windows_reads_every_past_phrase_once() -> None:
    text = "The deploy failed yesterday; last week the migration lock held. On 2026-06-03 we tried. Yesterday again."
    assert told_windows(text, JULY_2) == [(day(1), day(2)), (day(22, 6), day(29, 6)), (day(3, 6), day(4, 6))]


@pytest.mark.parametrize(
    "text",
    [
        "Deploy is green today",  # reaches now: the episode's own time says it
        "This week we ship",
        "Since March the webhook has been slow",  # open: bounds no event
        "We ship later this week",  # reaches now
        "We'll go camping this summer",  # the current season: reaches now
        "Next May we move",  # this May or the next: not placed
        "The backup runs in 2 hours",  # no day
        "Back in 2019 we ran on bare metal",  # a whole year is allowed...
        "Nothing about time here",
    ],
)
def test_told_windows_leaves_out_what_tells_of_no_other_time(text: str) -> None:
    windows = told_windows(text, JULY_2)
    assert all(end <= JULY_2 and end - start <= TOLD_MAX for start, end in windows)
    if "2019" not in text:
        assert windows == []


def ahead(d: int, month: int = 7, year: int = 2026, days: int = 1) -> tuple[dt.datetime, dt.datetime]:
    first = dt.datetime(year, month, d, tzinfo=UTC)
    return first, first + dt.timedelta(days=days)


@pytest.mark.parametrize(
    ("text", "told"),
    [
        # said on Thursday July 2, 2026: in a clause about what is ahead, a weekday, day or month
        # is the first such from then on (layout 15-16 told of none; layout 14 of June 26, and
        # of "in September" as September 2025)
        ("We'll meet on Friday", [ahead(3)]),
        ("On Friday we're going to ship", [ahead(3)]),
        ("I will call you on Monday about it", [ahead(6)]),
        ("We are going to ship it in September.", [(day(1, 9), day(1, 10))]),
        ("we plan to launch in May", [(dt.datetime(2027, 5, 1, tzinfo=UTC), dt.datetime(2027, 6, 1, tzinfo=UTC))]),
        # a present that schedules, with no past verb in its clause
        ("My flight leaves on March 10", [ahead(10, 3, 2027)]),
        ("I'm excited, my flight to Lisbon leaves on March 10", [ahead(10, 3, 2027)]),
        ("The review is on Monday", [ahead(6)]),
        ("The exam is on Friday and I need sleep", [ahead(3)]),
        ("Our sprint starts Monday", [ahead(6)]),
        ("We're meeting on Friday", [ahead(3)]),  # a progressive just before the phrase
        ("On Friday we're meeting Bob", [ahead(3)]),
        ("Our plans for July 4 are set", [ahead(4)]),
        ("I have on Monday a call with Bob", [ahead(6)]),
        ("I have a dentist appointment on Monday", [ahead(6)]),  # an arranged event held now
        ("We've got the demo on Friday", [ahead(3)]),
        ("She has an exam on Friday and is nervous", [ahead(3)]),
        # what the past cannot place
        ("The release is tomorrow", [ahead(3)]),
        ("The day after tomorrow we freeze the branch", [ahead(4)]),
        ("Next week we deploy", [ahead(6, days=7)]),
        ("the coming month is busy", [(day(1, 8), day(1, 9))]),
        ("The demo is next Friday", [ahead(10)]),  # the Friday of next week
        ("the demo is this Friday", [ahead(3)]),
        ("See you next weekend", [ahead(4, days=2)]),  # the first to begin
        ("we fly out in 3 days", [ahead(5)]),
        ("in two weeks we'll launch", [ahead(13, days=7)]),  # the calendar week holding July 16
        ("Hey! We haven't talked in a few days", []),  # a span, not a day ahead
        ("It broke twice in 3 days", []),
        # deadlines tell of no day
        ("Deliver SSO by September, the audit export due Friday", []),
        ("It was due by June 30", []),
        # the past stays told: a past clause, a past word, a year, another sentence
        ("I was going to the gym on Monday", [(day(29, 6), day(30, 6))]),
        ("We will revisit what happened last week", [(day(22, 6), day(29, 6))]),
        ("I will never forget the trip in 2024", [(dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2025, 1, 1, tzinfo=UTC))]),
        ("I'll tell you. We met on Monday", [(day(29, 6), day(30, 6))]),
        ("On Friday we met", [(day(26, 6), day(27, 6))]),
        ("We shipped it in May", [(day(1, 5), day(1, 6))]),
        ("The tickets on March 10 sold out", [(day(10, 3), day(11, 3))]),
        ("The review was on Monday", [(day(29, 6), day(30, 6))]),
        ("The outage on Monday cost us", [(day(29, 6), day(30, 6))]),
        ("We were meeting on Friday", [(day(26, 6), day(27, 6))]),
        ("I'm fixing the bug from Friday", [(day(26, 6), day(27, 6))]),
        ("I had a dentist appointment on Monday", [(day(29, 6), day(30, 6))]),
        ("I have notes from the meeting on Monday", [(day(29, 6), day(30, 6))]),
        ("I have a meeting on Monday that went badly", [(day(29, 6), day(30, 6))]),
    ],
)
def test_a_told_phrase_ahead_is_placed_ahead(text: str, told: list[tuple[dt.datetime, dt.datetime]]) -> None:
    assert told_windows(text, JULY_2) == told


@given(st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2090, 1, 1), timezones=st.just(UTC)))
def test_a_plan_is_told_of_within_a_year_ahead(at: dt.datetime) -> None:
    plans = ("We'll meet on Friday", "my flight leaves on March 10", "next week we deploy", "the demo is tomorrow", "in 3 months we move")
    for text in plans:
        for start, end in told_windows(text, at):
            assert at < start <= at + TOLD_MAX and end - start <= TOLD_MAX, (text, at)


def test_a_year_is_the_longest_told_window() -> None:
    assert told_windows("in 2019 we ran on bare metal", JULY_2) == [
        (dt.datetime(2019, 1, 1, tzinfo=UTC), dt.datetime(2020, 1, 1, tzinfo=UTC))
    ]
    assert told_windows("between 2019 and 2021 we ran on bare metal", JULY_2) == []  # three years say little of when


def test_every_told_phrase_holds_a_hint() -> None:
    """told_windows scans only around TOLD_HINTS words and years: each phrase form that places a
    past window holds one (the same forms as test_timephrase's)."""
    phrases = [
        "yesterday", "the day before yesterday", "last night", "yesterday evening", "Monday morning", "last Tuesday",
        "on Tuesday", "Tuesday last week", "last weekend", "this past weekend", "last week", "the week before last",
        "last month", "in May", "last March", "March 2026", "May 3", "3 May", "the 3rd of May", "May 3rd, 2026",
        "2026-05-03", "in 2025", "3 days ago", "two weeks ago", "a month ago", "2 years back", "the past week",
        "past 3 days", "last 2 months", "between May 3 and May 5", "from May 3 to May 9", "the day after May 3",
        "two days before 2026-05-03", "the Sunday before May 3", "the week before May 3", "the week of May 3",
        "the weekend of May 3", "the first week of May", "the last week of May", "early May", "mid-May", "late last year",
        "mid-2025", "the end of May", "the beginning of last month", "the Friday before last", "the weekend before last",
        "in Q1", "last quarter", "the first quarter of last year", "in H1", "the quarter before last", "the March migration",
        "last summer", "over the winter", "in the fall", "spring 2025", "the autumn of 2025",
    ]  # fmt: skip
    for phrase in phrases:
        text = f"it broke {phrase} in the morning standup"
        assert told_windows(text, JULY_2), phrase
        words = {w.lower() for w in phrase.replace(",", " ").replace("-", " ").split()}
        assert words & TOLD_HINTS or any(w[:4].isdigit() and len(w) >= 4 for w in words), phrase


@pytest.mark.parametrize("text", ["In Q1 we moved to Postgres", "The migration of last quarter broke it", "Last summer we moved"])
def test_capture_finds_a_quarter_by_its_terms(text: str) -> None:
    # capture looks for hints by the record's terms ("q1"), told_windows alone by its words
    record = {"ts": JULY_2, "summary": text}
    assert told_of(record, term_counts(text)) and told_windows(text, JULY_2)


@pytest.mark.parametrize("month", ["January", "February", "July", "March"])
def test_a_month_whose_stem_is_not_its_start_is_found(month: str) -> None:
    # Snowball makes "juli" of "July": capture finds the word by the start the two share
    record = {"ts": JULY_2, "summary": f"The outage of 3 {month} 2025 again"}
    assert told_of(record, term_counts(record["summary"])), month


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("昨天数据库迁移失败", (day(1), day(2))),  # inside a run: "yesterday"
        ("2026年6月30日数据库迁移失败", (day(30, 6), day(1))),
        ("6月30日の障害", (day(30, 6), day(1))),  # no year: the latest such day
        ("先週の障害", (day(22, 6), day(29, 6))),
        ("어제 배포 실패", (day(1), day(2))),
        ("지난주에 배포 실패", (day(22, 6), day(29, 6))),  # a particle after the word
        ("2026년 6월 30일 배포 실패", (day(30, 6), day(1))),
    ],
)
def test_chinese_japanese_and_korean_texts_tell_of_days(text: str, told: tuple[dt.datetime, dt.datetime]) -> None:
    """A record's Chinese, Japanese or Korean date or relative word tells of its day, as English
    does: capture finds the hint by the record's terms (the unigram "月", "7월", a bigram "昨天";
    ``told_hint_in``), told_windows alone by its words (layout 25)."""
    record = {"ts": JULY_2, "summary": text}
    assert told_windows(text, JULY_2) == [told], text
    assert told_of(record, term_counts(text)) == [[int(told[0].timestamp() * 1e6), int(told[1].timestamp() * 1e6)]], text


@pytest.mark.parametrize(
    "text",
    [
        "提前天数设置为3天", "之前天气预报服务失败", "聪明天才计划的评审完成", "说明天气接口", "上周期的报表", "本周期结束",
        "登上月球计划", "今日头条的接口", "明日香的报告", "이그제큐티브 회의 완료", "오늘날 트렌드 정리", "1990년대 시스템 교체",
    ],
)  # fmt: skip
def test_a_chinese_relative_word_inside_another_word_tells_of_no_day(text: str) -> None:
    """ "提前天数" (days in advance) held "前天", "聪明天才" "明天", "上周期" "上周", "登上月球" "上月",
    "이그제큐티브" "그제", and "1990년대" (the 1990s) was the year 1990: each record told of a
    false window, and a question of those words was read as one (layout 26)."""
    assert told_windows(text, JULY_2) == [], text
    assert not told_of({"ts": JULY_2, "summary": text}, term_counts(text)), text


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("我昨天把数据库迁移了", (day(1), day(2))), ("数据库在上周迁移", (day(22, 6), day(29, 6))),
        ("作为去年的总结", (dt.datetime(2025, 1, 1, tzinfo=UTC), dt.datetime(2026, 1, 1, tzinfo=UTC))),
        ("上周末的部署失败", (day(22, 6), day(29, 6))), ("障害は昨日でした", (day(1), day(2))),
    ],
)  # fmt: skip
def test_a_chinese_relative_word_where_a_word_begins_tells_of_its_day(text: str, told: tuple[dt.datetime, dt.datetime]) -> None:
    assert told_windows(text, JULY_2) == [told], text


def test_opening_a_layout_25_database_reads_chinese_told_windows_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layout 25 read "之前天气" as telling of the day before yesterday; opening such a database
    reads the told windows again, and the record tells of no day."""
    import re

    from memdb.memory import timephrase

    with monkeypatch.context() as old_code:  # as layout 25 read a record: a relative word anywhere
        old_code.setattr(timephrase, "_CJK_WORD_BEFORE", re.compile(""))
        old_code.setattr(timephrase, "_CJK_WORD_AFTER", re.compile("(?!)"))
        with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
            db.owner("ops").record("debug", "之前天气预报服务失败", outcome="failure", ts=JULY_2)
            db.globals["META"].set(("layout",), 25)
            assert _told_keys(db, "ops")
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.check().ok
        assert _told_keys(db, "ops") == []


def test_told_of_reads_the_narrative_fields_only() -> None:
    record = {"ts": JULY_2, "summary": "webhook retries", "result": "log of yesterday", "content": "it failed last week"}
    text = " ".join(str(v) for k, v in record.items() if k != "ts")
    assert told_of(record, term_counts(text)) == [[int(day(22, 6).timestamp() * 1e6), int(day(29, 6).timestamp() * 1e6)]]
    assert "result" not in TOLD_FIELDS


def test_a_text_whose_lower_case_is_longer_is_read_all_the_same() -> None:
    # "İ".lower() is two characters: found positions in the lowered text would drift
    text = "İİİİ " * 40 + "and the deploy failed yesterday"
    assert told_windows(text, JULY_2, hints=["yesterday"]) == told_windows(text, JULY_2) == [(day(1), day(2))]


def test_a_phrase_far_from_the_start_of_a_long_text_is_read() -> None:
    text = "word " * 400 + "and the deploy failed yesterday"
    assert told_windows(text, JULY_2) == [(day(1), day(2))]


# --- queries ----------------------------------------------------------------------------------


@pytest.fixture
def ops(tmp_path: Path) -> memdb.Memory:
    db = memdb.open(tmp_path / "db", clock=lambda: NOW)
    mem = db.owner("ops")
    mem.record("debug", "Deploy failed yesterday: migration lock", outcome="failure", tags=["deploy"], ts=JULY_2)
    mem.record("debug", "Deploy on the day itself went fine", outcome="success", tags=["deploy"], ts=day(1) + dt.timedelta(hours=15))
    mem.record("exchange", "Lunch with Bob, unrelated", tags=["chat"], ts=day(1) + dt.timedelta(hours=12))
    mem.record("debug", "Deploy failed last week: disk full", outcome="failure", tags=["deploy"], ts=day(8))  # tells of June 29 - July 5
    db.owner("other").record("debug", "Their deploy failed yesterday", outcome="failure", tags=["deploy"], ts=JULY_2)
    return mem


def test_ask_finds_what_a_later_episode_tells_of_and_says_so(ops: memdb.Memory) -> None:
    r = ops.ask("What happened with the deploy on July 1?", now=NOW, limit=10)
    summaries = [m.episode.summary for m in r]
    assert set(summaries) == {"Deploy failed yesterday: migration lock", "Deploy on the day itself went fine"}
    assert r.total == 2 and "recorded or told of" in r.note
    told = next(m for m in r if m.episode.summary.startswith("Deploy failed yesterday"))
    assert "tells of 2026-07-01 (recorded 2026-07-02 09:30)" in told.why
    on_the_day = next(m for m in r if m.episode.summary.startswith("Deploy on the day"))
    assert on_the_day.why[0].startswith("in window (2026-07-01")


def test_a_told_window_must_lie_within_the_asked_one(ops: memdb.Memory) -> None:
    # "last week" (June 29 - July 5) told on July 8 is not within July 1 alone, but is within July
    assert "Deploy failed last week: disk full" not in [m.episode.summary for m in ops.ask("deploy failures on July 1", now=NOW, limit=10)]
    assert "Deploy failed last week: disk full" in [m.episode.summary for m in ops.ask("deploy failures in July", now=NOW, limit=10)]


def test_a_night_told_of_belongs_to_its_evening(tmp_path: Path) -> None:
    """ "Watched it last night", said on July 2 at 11:54, tells of July 1 18:00 to July 2 06:00:
    that night is July 1's, as its evening is, and never July 2's (recorded then anyway) nor
    June 30's."""
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("ops")
        night = mem.record("exchange", "Watched the launch replay last night", ts=day(2) + dt.timedelta(hours=11, minutes=54))
        assert mem.get(night.id) is not None
        july_1 = mem.ask("What did I watch on July 1?", now=NOW, limit=5)
        assert [m.id for m in july_1] == [night.id]
        assert any(w.startswith("tells of 2026-07-01") for w in july_1.memories[0].why)
        evening = mem.ask("What did I watch on July 1 evening?", now=NOW, limit=5)
        assert [m.id for m in evening] == [night.id]
        assert not mem.ask("What did I watch on June 30?", now=NOW, limit=5).memories
        july_2 = mem.ask("What did I watch on July 2?", now=NOW, limit=5)
        assert [m.id for m in july_2] == [night.id] and july_2.memories[0].why[0].startswith("in window")


def test_a_question_about_a_day_as_said_on_another_finds_what_was_said(tmp_path: Path) -> None:
    """ "What did I finish last Friday, on 23 January 2022?" asks about what was said on January 23
    of the Friday before it (January 21), long before now: not about the Friday before today."""
    said = dt.datetime(2022, 1, 23, 15, tzinfo=UTC)
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("joanna")
        told = mem.record("exchange", "I finally finished my screenplay last Friday!", ts=said)
        mem.record("exchange", "I finished a screenplay draft on the train", ts=NOW - dt.timedelta(days=3))  # the Friday before now
        mem.record("exchange", "Lunch plans with Nate", ts=said - dt.timedelta(days=2))
        r = mem.ask("What did I finish last Friday on 23 January, 2022?", now=NOW, limit=5)
        assert str(r.interpretation.window) == "last Friday as of 2022-01-23 (2022-01-21)" and r.interpretation.ignored == ()
        assert [m.id for m in r] == [told.id]
        assert any(w.startswith("tells of 2022-01-21") for w in r.memories[0].why)


@pytest.mark.parametrize(
    ("told", "asked", "within"),
    [
        ((day(1), day(2)), (day(1), day(2)), True),  # the day itself
        ((day(1), day(8)), (day(1), day(2)), False),  # a week is not within one of its days
        ((day(1, 6), day(1)), (day(1, 6), day(1)), True),
        ((day(1) + dt.timedelta(hours=18), day(2) + dt.timedelta(hours=6)), (day(1), day(2)), True),  # a night: its evening's day
        ((day(1) + dt.timedelta(hours=18), day(2) + dt.timedelta(hours=6)), (day(2), day(3)), False),
        ((day(1) + dt.timedelta(hours=18), day(2) + dt.timedelta(hours=6)), (None, day(2)), True),
        ((day(1) + dt.timedelta(hours=18), day(2) + dt.timedelta(hours=6)), (day(1), None), True),
        ((day(1) + dt.timedelta(hours=18), day(2) + dt.timedelta(hours=6)), (day(1) + dt.timedelta(hours=19), day(3)), False),
    ],
)
def test_told_within(told: tuple[dt.datetime, dt.datetime], asked: tuple[dt.datetime | None, dt.datetime | None], within: bool) -> None:
    def us(at: dt.datetime | None) -> int | None:
        return None if at is None else int(at.timestamp() * 1_000_000)

    start, end = us(told[0]), us(told[1])
    assert start is not None and end is not None
    assert told_within(start, end, us(asked[0]), us(asked[1])) is within
    assert TOLD_PART_OF_DAY_US == 12 * 3600 * 1_000_000


def test_recall_counts_told_episodes_only_when_asked(ops: memdb.Memory) -> None:
    plain = ops.recall(since=day(1), until=day(2), tags=["deploy"], now=NOW, limit=10)
    assert [m.episode.summary for m in plain] == ["Deploy on the day itself went fine"] and plain.total == 1
    told = ops.recall(since=day(1), until=day(2), tags=["deploy"], now=NOW, limit=10, include_told=True)
    assert told.total == 2 and {m.episode.summary for m in told} == {
        "Deploy on the day itself went fine",
        "Deploy failed yesterday: migration lock",
    }


def test_told_episodes_pass_every_other_filter(ops: memdb.Memory) -> None:
    kw = {"since": day(1), "until": day(2), "now": NOW, "limit": 10, "include_told": True}
    assert [m.episode.summary for m in ops.recall(outcome="success", **kw)] == ["Deploy on the day itself went fine"]
    assert [m.episode.summary for m in ops.recall(tags=["chat"], **kw)] == ["Lunch with Bob, unrelated"]
    assert [m.episode.summary for m in ops.recall(text="migration", **kw)] == ["Deploy failed yesterday: migration lock"]
    assert ops.recall(text="disk", **kw).total == 0


def test_another_owner_told_episodes_never_show(ops: memdb.Memory) -> None:
    r = ops.ask("what failed on July 1?", now=NOW, limit=10)
    assert all("Their" not in m.episode.summary for m in r)


def test_an_empty_window_with_a_told_episode_is_not_empty(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("ana")
        mem.record("exchange", "I had dinner with my mom yesterday", ts=dt.datetime(2023, 5, 4, 10, tzinfo=UTC))
        r = mem.ask("Who did I have dinner with on May 3, 2023?", now=NOW)
        assert r.found and [m.episode.summary for m in r] == ["I had dinner with my mom yesterday"]


# --- the index stays true through the lifecycle -----------------------------------------------


def _told_keys(db: memdb.Database, owner: str) -> list[tuple[object, ...]]:
    return [subs for subs, _ in db.globals["EPTD"].items((owner,))]


def test_erase_archive_restore_and_supersede_keep_the_told_index_true(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("ops")
        a = mem.record("debug", "Deploy failed yesterday", outcome="failure", ts=JULY_2)
        b = mem.record("debug", "Rollback went wrong yesterday", outcome="failure", ts=JULY_2 + dt.timedelta(hours=1))
        assert len(_told_keys(db, "ops")) == 2 and db.check().ok
        mem.archive(a.id)
        assert [k[-1] for k in _told_keys(db, "ops")] == [b.id] and db.check().ok
        assert mem.ask("what failed on July 1?", now=NOW, limit=10).total == 1
        mem.restore(a.id)
        assert len(_told_keys(db, "ops")) == 2 and db.check().ok
        c = mem.supersede(b.id, reason="it was not yesterday", summary="Rollback went wrong")
        assert c.id not in [k[-1] for k in _told_keys(db, "ops")] and b.id not in [k[-1] for k in _told_keys(db, "ops")]
        assert db.check().ok
        mem.erase(a.id, reason="test")
        assert _told_keys(db, "ops") == [] and db.check().ok
        assert mem.ask("what failed on July 1?", now=NOW, limit=10).total == 0


def test_opening_a_layout_9_database_reads_told_dates(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        mem = db.owner("ops")
        told = mem.record("debug", "Deploy failed yesterday", outcome="failure", ts=JULY_2)
        mem.record("debug", "Deploy went fine", outcome="success", ts=JULY_2)
        g = db.globals
        with db.transaction():  # what layout 9 wrote: no told windows in headers, no ^EPTD
            g["EPTD"].kill()
            state = g["EPST"][("ops", told.id)]
            g["EPST"].set(("ops", told.id), {k: v for k, v in state.items() if k != "told"})
            g["META"].set(("layout",), 9)
        assert db.owner("ops").ask("what failed on July 1?", now=NOW).total == 0
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.check().ok
        assert [m.episode.id for m in db.owner("ops").ask("what failed on July 1?", now=NOW)] == [told.id]


def test_opening_a_layout_14_database_reads_told_dates_again(tmp_path: Path) -> None:
    """Layout 14 read "we'll meet on Friday", said on Thursday July 2, as the Friday before;
    opening such a database reads every hot record's told windows again."""
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        mem = db.owner("ops")
        ahead = mem.record("routine", "We'll meet on Friday about the deploy", outcome="success", ts=JULY_2)
        told = mem.record("debug", "Deploy failed yesterday", outcome="failure", ts=JULY_2)
        g = db.globals
        friday = [int(day(26, 6).timestamp() * 1e6), int(day(27, 6).timestamp() * 1e6)]
        with db.transaction():  # what layout 14 wrote for it
            state = g["EPST"][("ops", ahead.id)]
            g["EPST"].set(("ops", ahead.id), {**state, "told": [friday]})
            g["EPTD"].set(("ops", friday[0], friday[1], int(JULY_2.timestamp() * 1e6), ahead.id), b"")
            g["META"].set(("layout",), 14)
        assert [m.episode.id for m in db.owner("ops").ask("what happened on June 26?", now=NOW)] == [ahead.id]
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.check().ok
        assert not db.owner("ops").ask("what happened on June 26?", now=NOW).found
        assert [m.episode.id for m in db.owner("ops").ask("what failed on July 1?", now=NOW)] == [told.id]


def test_opening_a_layout_16_database_reads_plans_ahead(tmp_path: Path) -> None:
    """Layout 16 read no window of "my flight leaves on Friday", said on Thursday July 2: opening
    such a database reads every hot record's told windows again, and the plan is found by its day."""
    with memdb.open(tmp_path / "old", clock=lambda: JULY_2) as db:
        mem = db.owner("ops")
        plan = mem.record("routine", "My flight to Lisbon leaves on Friday", outcome="success", ts=JULY_2)
        g = db.globals
        with db.transaction():  # what layout 16 wrote for it
            state = g["EPST"][("ops", plan.id)]
            g["EPST"].set(("ops", plan.id), {k: v for k, v in state.items() if k != "told"})
            g["EPTD"].kill(("ops",))
            g["META"].set(("layout",), 16)
        assert not db.owner("ops").ask("what happened on July 3?", now=NOW).found
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.check().ok
        found = db.owner("ops").ask("what happened on July 3?", now=NOW)
        assert [m.episode.id for m in found] == [plan.id] and "tells of 2026-07-03" in found.memories[0].why[0]


def test_a_plan_is_told_and_asked_of_ahead(tmp_path: Path) -> None:
    """ "Key rotation is scheduled for March 10", said on March 2, told of the March 10 before, a
    year back, and "what is planned for Tuesday?" asked of the Tuesday past (a year-of-use
    probe's find). A plan tells and asks of the day ahead; "was scheduled for" looks back."""
    assert told_windows("Key rotation is scheduled for July 10", JULY_2) == [(day(10), day(11))]
    assert told_windows("The upgrade is planned for Friday", JULY_2) == [(day(3), day(4))]
    assert told_windows("The review was scheduled for July 1 but slipped", JULY_2) == [(day(1), day(2))]
    # told in the past, it looks back (a review's finds)
    assert told_windows("The security review scheduled for July 1 was cancelled", JULY_2) == [(day(1), day(2))]
    assert told_windows("The deploy we had planned for Monday failed", JULY_2) == [(day(29, 6), day(30, 6))]
    with memdb.open(tmp_path / "db", clock=lambda: JULY_2) as db:
        plan = db.owner("ops").record("routine", "Key rotation is scheduled for July 10", outcome="success")
        r = db.owner("ops").ask("what is planned for July 10?", now=JULY_2)
        assert [m.id for m in r] == [plan.id] and r.interpretation.window is not None
        assert r.interpretation.window.start == day(10)


def test_opening_a_layout_23_database_reads_plans_ahead_again(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "old", clock=lambda: JULY_2) as db:
        mem = db.owner("ops")
        plan = mem.record("routine", "Key rotation is scheduled for July 10", outcome="success", ts=JULY_2)
        g = db.globals
        with db.transaction():  # layout 23 read the July 10 a year back: here its window is dropped
            state = g["EPST"][("ops", plan.id)]
            g["EPST"].set(("ops", plan.id), {k: v for k, v in state.items() if k != "told"})
            g["EPTD"].kill(("ops",))
            g["META"].set(("layout",), 23)
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.check().ok
        found = db.owner("ops").ask("what happened on July 10?", now=day(12))
        assert [m.episode.id for m in found] == [plan.id]


def test_a_plan_is_found_by_its_day_once_it_has_come(tmp_path: Path) -> None:
    """Said on February 1: the flight on March 10 is found by that day, by its month, and
    not before it was said; a past event said the same day stays where it was."""
    clock = [dt.datetime(2026, 2, 1, 10, tzinfo=UTC)]
    with memdb.open(tmp_path / "db", clock=lambda: clock[0]) as db:
        mem = db.owner("ana")
        plan = mem.record_exchange(session="s1", user_message="My flight to Lisbon leaves on March 10, so excited", response="Enjoy!")
        past = mem.record_exchange(session="s1", user_message="I moved to Berlin on January 5", response="Welcome!")
        later = dt.datetime(2026, 3, 12, tzinfo=UTC)
        assert [m.episode.id for m in mem.ask("What happened on March 10?", now=later)] == [plan.id]
        assert [m.episode.id for m in mem.ask("What about Lisbon in March?", now=later)] == [plan.id]
        assert [m.episode.id for m in mem.ask("What happened on January 5?", now=later)] == [past.id]
        assert not mem.ask("What happened on March 10, 2025?", now=later).found  # as layout 16 read it
        assert db.check().ok


def test_ask_finds_a_plan_told_of_ahead(tmp_path: Path) -> None:
    """A question about what is ahead ("what is planned for next week?") has its window there:
    the plans told of it answer, and an empty answer says what matches at other times."""
    thursday = dt.datetime(2026, 7, 2, 9, 30, tzinfo=UTC)
    with memdb.open(tmp_path / "db", clock=lambda: thursday) as db:
        mem = db.owner("ops")
        plan = mem.record("routine", "Next week we migrate the billing DB", outcome="success", tags=["billing"])
        review = mem.record("review", "The security review is on Monday", outcome="success")
        mem.record("debug", "Billing DB migration failed", outcome="failure", tags=["billing"], ts=day(1))
        answer = mem.ask("What is planned for next week?")
        assert {m.episode.id for m in answer} == {plan.id, review.id}
        assert "next week (2026-07-06 to 2026-07-12), recorded or told of" in str(answer.interpretation)
        assert [m.episode.id for m in mem.ask("What happens next Monday?")] == [review.id]
        assert [m.episode.id for m in mem.ask("What is on Monday?")] == [review.id]  # a present: the Monday ahead
        empty = mem.ask("Any billing failures tomorrow?")
        assert not empty.found and "1 earlier" in empty.note


def test_yesterday_is_read_in_the_database_timezone(tmp_path: Path) -> None:
    # 23:30 UTC on July 1 is already July 2 in Berlin: "yesterday" there is July 1
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        db.configure(timezone="Europe/Berlin")
        mem = db.owner("ana")
        mem.record("debug", "Deploy failed yesterday", outcome="failure", ts=dt.datetime(2026, 7, 1, 23, 30, tzinfo=UTC))
        state = db.globals["EPST"][("ana", next(iter(db.globals["EPST"].keys(("ana",))))[1])]
        berlin = dt.timezone(dt.timedelta(hours=2))
        start = dt.datetime(2026, 7, 1, tzinfo=berlin)
        assert state["told"] == [[int(start.timestamp() * 1e6), int((start + dt.timedelta(days=1)).timestamp() * 1e6)]]


# --- a year of use, and a brute-force reference -----------------------------------------------


def test_a_year_of_daily_notes_about_yesterday(tmp_path: Path) -> None:
    """Every morning for a year, a note about what broke yesterday: each day's window holds that
    day's own notes (none: they are written the morning after) and exactly the next morning's."""
    start = dt.datetime(2025, 7, 1, 8, tzinfo=UTC)
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("ops")
        with db.transaction():
            ids = [
                mem.record("debug", f"Yesterday the cron job {i} broke", outcome="failure", ts=start + dt.timedelta(days=i)).id
                for i in range(365)
            ]
        assert db.check().ok
        for i in (0, 1, 59, 180, 363):
            the_day = (start + dt.timedelta(days=i)).replace(hour=0)
            r = mem.recall(since=the_day, until=the_day + dt.timedelta(days=1), now=NOW, limit=5, include_told=True)
            # the note written that morning tells of the day before; the next morning's tells of this one
            assert r.total == 2 and {m.episode.id for m in r} == {ids[i], ids[i + 1]}
            told = next(m for m in r if m.episode.id == ids[i + 1])
            assert any(w.startswith("tells of ") for w in told.why)


def test_a_year_of_plans_for_tomorrow_in_berlin(tmp_path: Path) -> None:
    """Every morning for a year (across both DST changes), in Berlin, a plan for tomorrow: asked
    each morning after, "what is planned for today?" holds exactly yesterday's plan and today's
    own, and "what is planned for tomorrow?" exactly today's."""
    from zoneinfo import ZoneInfo

    berlin = ZoneInfo("Europe/Berlin")
    first = dt.date(2025, 7, 1)
    clock = [dt.datetime(2025, 7, 1, 9, tzinfo=berlin).astimezone(UTC)]
    with memdb.open(tmp_path / "db", clock=lambda: clock[0]) as db:
        db.configure(timezone="Europe/Berlin")
        mem = db.owner("ops")
        ids = []
        for i in range(366):
            clock[0] = dt.datetime.combine(first + dt.timedelta(days=i), dt.time(9), berlin).astimezone(UTC)
            ids.append(mem.record("routine", f"Tomorrow we demo feature {i}", outcome="success").id)
            if i:
                today = mem.ask("What is planned for today?", limit=5)
                assert {m.episode.id for m in today} == {ids[i - 1], ids[i]}, i
                ahead = mem.ask("What is planned for tomorrow?", limit=5)
                assert [m.episode.id for m in ahead] == [ids[i]], i
                assert any(w.startswith("tells of ") for w in ahead.memories[0].why)
            if i % 30 == 29:
                db.maintain()  # nothing idle for 30 days is asked for here
        assert db.check().ok


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    notes=st.lists(
        st.tuples(
            st.integers(0, 60), st.sampled_from(["yesterday", "last week", "two days ago", "on May 3", "in May", "today", "last night", ""])
        ),
        min_size=1,
        max_size=25,
    ),
    window=st.tuples(st.integers(-40, 70), st.integers(1, 45)),
)
def test_told_matches_equal_a_brute_force_scan(
    tmp_path_factory: pytest.TempPathFactory, notes: list[tuple[int, str]], window: tuple[int, int]
) -> None:
    first = dt.datetime(2026, 5, 1, 10, tzinfo=UTC)
    lo = dt.datetime(2026, 5, 1, tzinfo=UTC) + dt.timedelta(days=window[0])
    hi = lo + dt.timedelta(days=window[1])
    with memdb.open(tmp_path_factory.mktemp("told") / "db", clock=lambda: NOW) as db:
        mem = db.owner("ops")
        expected = set()
        for offset, phrase in notes:
            ts = first + dt.timedelta(days=offset)
            ep = mem.record("debug", f"the deploy broke {phrase}".strip(), outcome="failure", ts=ts)
            windows = told_windows(ep.summary, ts)
            if lo <= ts < hi or any(lo <= a and (b <= hi or (a < hi and b - a <= dt.timedelta(hours=12))) for a, b in windows):
                expected.add(ep.id)
        top = mem.recall(since=lo, until=hi, text="deploy", now=NOW, limit=3, include_told=True)
        r = mem.recall(since=lo, until=hi, text="deploy", now=NOW, limit=100, include_told=True)
        assert r.total == top.total == len(expected) and {m.episode.id for m in r} == expected
        assert [m.id for m in top] == [m.id for m in r][:3]  # the kernel's pruning holds with told matches beside
        assert db.check().ok


def test_a_told_match_that_beats_every_match_in_the_window_ranks_first(tmp_path: Path) -> None:
    """The kernel prunes relative to the best BM25 it saw; a told match scoring higher makes the
    query list the window's matches whole, so the ranking is the one a full scan gives."""
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("ops")
        wordy = " ".join(f"filler{i}" for i in range(60))
        for h in range(30):
            mem.record("debug", f"webhook {wordy} {h}", outcome="failure", ts=day(1) + dt.timedelta(hours=h % 24, minutes=h))
        told = mem.record("debug", "webhook webhook broke yesterday", outcome="failure", ts=JULY_2)
        top = mem.recall(since=day(1), until=day(2), text="webhook", now=NOW, limit=2, include_told=True)
        assert top.total == 31 and top.memories[0].id == told.id
        full = mem.recall(since=day(1), until=day(2), text="webhook", now=NOW, limit=40, include_told=True)
        assert [m.id for m in top] == [m.id for m in full][:2]


def test_a_date_written_day_first_with_dots_is_a_day(tmp_path: Path) -> None:
    """A bookkeeper's "What happened on 10.03.2026?" searched the words "10 03 2026" (every
    memory holds "2026") and said nothing of a time; a memory saying "sent on 15.03.2026" told of no
    day. Day first with dots is how Germans, the French and others write a date: a day, asked or
    told of; an impossible one is said to be ignored. Opening a layout 19 database reads the told
    windows again."""
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        mem = db.owner("books")
        due = mem.record("routine", "Globex invoice INV-2026-0042 sent on 15.03.2026", outcome="success", ts=JULY_2)
        mem.record("routine", "Paid the 2026 rent", outcome="success", ts=JULY_2)
        r = mem.ask("What happened on 15.03.2026?", now=NOW)
        assert str(r.interpretation.window).startswith("on 15.03.2026 (2026-03-15)") and [m.id for m in r] == [due.id]
        assert "on 31.02.2026" in mem.ask("What happened on 31.02.2026?", now=NOW).interpretation.ignored
        g = db.globals
        with db.transaction():  # what layout 19 wrote for it: no told window
            state = g["EPST"][("books", due.id)]
            g["EPST"].set(("books", due.id), {k: v for k, v in state.items() if k != "told"})
            g["EPTD"].kill(("books",))
            g["META"].set(("layout",), 19)
        assert not db.owner("books").ask("What happened on 15.03.2026?", now=NOW).found
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.check().ok
        assert [m.id for m in db.owner("books").ask("What happened on 15.03.2026?", now=NOW)] == [due.id]


def test_a_dotted_date_inside_a_longer_number_is_no_date() -> None:
    """ "firmware 1.2.2026.4" told of February 1; "server 10.10.10.2026" was a window."""
    at = dt.datetime(2026, 12, 4, 12, tzinfo=dt.UTC)
    for text in ("firmware 1.2.2026.4", "server 10.10.10.2026 down?"):
        assert read_time_phrases(text, at).window is None and told_windows(text, at) == []
    assert read_time_phrases("sent on 15.03.2026.", at).window is not None  # a sentence's full stop after it


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("we shipped it on the 1st", (day(1), day(2))),
        ("the deploy broke on the 23rd", (day(23, 6), day(24, 6))),  # the latest 23rd not in the future
        ("On The 30TH the pager went off twice", (day(30, 6), day(1))),
        ("we met the vendor on the 15th and signed", (day(15, 6), day(16, 6))),
        ("we shipped it on the 03rd", (day(3, 6), day(4, 6))),  # zero-padded: a hint too, as the scan of every word reads it
        ("on the 23rd and 24th we shipped", (day(23, 6), day(24, 6))),  # days listed: the first places the phrase
    ],
)
def test_a_day_of_the_month_by_its_ordinal_alone_tells_of_its_day(text: str, told: tuple[dt.datetime, dt.datetime]) -> None:
    """ "we shipped it on the 3rd" holds no hint word but its ordinal: before layout 28 it told of
    no day, alone or at capture (``TOLD_ORDINALS``)."""
    assert told_windows(text, JULY_2) == [told], text
    assert told_of({"ts": JULY_2, "summary": text}, term_counts(text)) == [[int(told[0].timestamp() * 1e6), int(told[1].timestamp() * 1e6)]]


@pytest.mark.parametrize(
    "text",
    [
        "the 3rd time we tried it failed", "it worked on the 5th attempt", "we came 2nd in the race", "it was 123rd in the list",
        # a rank, not a day: a word joined to it, "of" a count, a list of ordinals naming what they rank (revT)
        "we depend on the 3rd-party SDK", "it failed on the 1st of 3 retries", "the alert fired on the 3rd of 5 hosts",
        "we focused on the 1st and 2nd items", "on the 2nd, 3rd and 4th nodes it crashed",
    ],
)  # fmt: skip
def test_an_ordinal_that_is_no_day_tells_of_none(text: str) -> None:
    assert told_windows(text, JULY_2) == [], text
    assert not told_of({"ts": JULY_2, "summary": text}, term_counts(text)), text


def test_a_record_telling_of_a_day_by_its_ordinal_is_found_by_that_day(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:
        ops = db.owner("ops")
        ep = ops.record("debug", "We reverted the billing API on the 23rd", outcome="failure", ts=JULY_2)
        answer = ops.ask("what happened on June 23?", now=JULY_2)
        assert [m.id for m in answer] == [ep.id]


def test_opening_a_layout_27_database_reads_ordinal_told_windows_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layout 27 took no ordinal for a hint: a record saying "on the 23rd" told of no day; opening
    such a database reads the told windows again, and it tells of June 23."""
    from memdb.memory import layout

    with monkeypatch.context() as old_code:  # as layout 27 read a record: no ordinal is a hint
        old_code.setattr(layout, "_ASCII_HINTS", layout._ASCII_HINTS - TOLD_ORDINALS)
        with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
            db.owner("ops").record("debug", "We reverted the billing API on the 23rd", outcome="failure", ts=JULY_2)
            db.globals["META"].set(("layout",), 27)
            assert _told_keys(db, "ops") == []
    with memdb.open(tmp_path / "old", clock=lambda: NOW) as db:
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.check().ok
        assert len(_told_keys(db, "ops")) == 1
