"""Summarizers: a deterministic extractive default (offline) and one on the Anthropic API.

Both follow one protocol, so burst summaries, archive one-liners and (later) reflection work
the same with or without a key. The LLM path has timeouts and bounded retries; any failure
surfaces as ``LLMError`` and the caller leaves its episodes for the next run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memdb.memory.models import Episode
from memdb.memory.text import clip

__all__ = ["ExtractiveSummarizer", "Summarizer", "one_line_head"]

ONE_LINE_CHARS = 160
LINE_CHARS = 200


@runtime_checkable
class Summarizer(Protocol):
    """Turns episodes into short text."""

    def summarize(self, episodes: Sequence[Episode], max_lines: int = 3) -> str:
        """At most ``max_lines`` lines about what happened in ``episodes`` (oldest first)."""
        ...

    def one_line(self, episode: Episode) -> str:
        """One line that stays hot when ``episode`` is archived."""
        ...


class ExtractiveSummarizer:
    """Deterministic and offline: counts, the most telling summaries, and the lessons."""

    def summarize(self, episodes: Sequence[Episode], max_lines: int = 3) -> str:
        if not episodes:
            return ""
        first, last = episodes[0].ts, episodes[-1].ts
        kinds = Counter(e.kind + (f"/{e.outcome}" if e.outcome else "") for e in episodes)
        where = f"session {episodes[0].session}" if episodes[0].session else f"{first:%Y-%m-%d}"
        until = f"{last:%H:%M}" if last.date() == first.date() else f"{last:%Y-%m-%d %H:%M}"  # past midnight: the day too
        line1 = f"{len(episodes)} events in {where}, {first:%Y-%m-%d %H:%M} to {until} UTC: " + ", ".join(
            f"{n} {k}" for k, n in kinds.most_common()
        )
        # the events that say most: outcomes first (failures, then partials), then the latest
        rank = {"failure": 0, "partial": 1, "success": 2}
        telling = sorted(episodes, key=lambda e: (rank.get(e.outcome or "", 3), -e.ts.timestamp()))
        seen: list[str] = []
        for e in telling:
            s = clip(e.summary, 80)
            if s not in seen:
                seen.append(s)
            if len(seen) == 3:
                break
        line2 = "Notable: " + "; ".join(seen)
        lessons = list(dict.fromkeys(e.lesson for e in episodes if e.lesson))
        lines = [clip(line1, LINE_CHARS), clip(line2, LINE_CHARS)]
        if lessons:
            lines.append(clip("Lessons: " + "; ".join(lessons), LINE_CHARS))
        return "\n".join(lines[: max(max_lines, 1)])

    def one_line(self, episode: Episode) -> str:
        body = episode.summary.splitlines()[0] if episode.summary else ""
        if episode.lesson:
            body += f" (lesson: {episode.lesson})"
        return clip(one_line_head(episode) + body, ONE_LINE_CHARS)


def one_line_head(episode: Episode) -> str:
    """What an extractive one-liner opens with, ``"2026-03-04 debug/failure: "``: a reader that
    shows an archived episode's day and kind itself strips it (another summarizer's one-liner
    may not hold it)."""
    return f"{episode.ts:%Y-%m-%d} {episode.kind}" + (f"/{episode.outcome}" if episode.outcome else "") + ": "
