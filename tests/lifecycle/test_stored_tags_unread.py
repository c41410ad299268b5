"""Tags stored already (a closed session's events', a burst summary's sources') join the new
episode as they are and never reach the sanitizer again (``kept_tags``): read again, a stored
pair ["password", "deploy"] was a label and its secret. The built-in sanitizer reads a stored tag
as it did the first time, so only a sanitizer that records what it is given can tell (revH)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

from clocks import Clock

import memdb
from memdb.memory.sanitize import RegexSanitizer

T0 = dt.datetime(2026, 6, 3, 9, 0, tzinfo=dt.UTC)
EVENT_TAGS = ["vendor-acme", "rollout"]  # stored by capture, never given again


class _Recording:
    """The built-in sanitizer, keeping every (name, text) it is given."""

    def __init__(self) -> None:
        self.inner = RegexSanitizer()
        self.seen: list[tuple[str, str]] = []

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        self.seen.extend(texts.items())
        return self.inner.sanitize(texts)

    def tags_seen(self) -> list[str]:
        return [text for name, text in self.seen if name.startswith("tags")]


def test_close_session_gives_the_sanitizer_only_the_given_tags(tmp_path: Path) -> None:
    recording, clock = _Recording(), Clock(T0)
    with memdb.open(tmp_path / "db", sanitizer=recording, clock=clock) as db:
        mem = db.owner("ana")
        event = mem.record_exchange("s1", "why does the deploy fail?", "looking at it", tags=EVENT_TAGS)
        clock.advance(minutes=1)
        recording.seen.clear()
        done = mem.close_session("s1", kind="debug", outcome="success", tags=["given"])
        assert done.episode is not None and done.episode.tags == ("given", *event.tags)
        assert recording.tags_seen() and set(recording.tags_seen()) <= {"given"}


def test_a_burst_summary_gives_the_sanitizer_none_of_its_sources_tags(tmp_path: Path) -> None:
    recording, clock = _Recording(), Clock(T0)
    with memdb.open(tmp_path / "db", sanitizer=recording, clock=clock) as db:
        mem = db.owner("ana")
        for i in range(6):
            mem.record_exchange("s1", f"step {i}", "ok", tags=EVENT_TAGS if i == 0 else [])
            clock.advance(hours=1)
        recording.seen.clear()
        assert db.maintain(now=clock.now + dt.timedelta(days=2)).summaries == 1
        (summary,) = mem.recall(kind="summary").memories
        assert summary.episode.tags == tuple(EVENT_TAGS)
        assert recording.tags_seen() == []
