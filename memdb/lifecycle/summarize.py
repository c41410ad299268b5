"""Summarizers: a deterministic extractive default (offline) and one on the Anthropic API.

Both follow one protocol, so burst summaries, archive one-liners and (later) reflection work
the same with or without a key. The LLM path has timeouts and bounded retries; any failure
surfaces as ``LLMError`` and the caller leaves its episodes for the next run.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from memdb.errors import ConfigError, LLMError
from memdb.memory.models import Episode

__all__ = ["AnthropicSummarizer", "ExtractiveSummarizer", "Summarizer"]

ONE_LINE_CHARS = 160
LINE_CHARS = 200
DEFAULT_MODEL = "claude-haiku-4-5"


@runtime_checkable
class Summarizer(Protocol):
    """Turns episodes into short text."""

    def summarize(self, episodes: Sequence[Episode], max_lines: int = 3) -> str:
        """At most ``max_lines`` lines about what happened in ``episodes`` (oldest first)."""
        ...

    def one_line(self, episode: Episode) -> str:
        """One line that stays hot when ``episode`` is archived."""
        ...


def _clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def anthropic_client(api_key: str | None, timeout: float, max_retries: int, what: str) -> Any:
    """An ``anthropic.Anthropic`` client with timeouts and bounded retries, or ConfigError
    naming what needed it; the one place every LLM-backed component gets its client."""
    import anthropic

    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ConfigError(f"{what}: no API key (pass api_key= or set ANTHROPIC_API_KEY)")
    return anthropic.Anthropic(api_key=key, timeout=timeout, max_retries=max_retries)


class ExtractiveSummarizer:
    """Deterministic and offline: counts, the most telling summaries, and the lessons."""

    def summarize(self, episodes: Sequence[Episode], max_lines: int = 3) -> str:
        if not episodes:
            return ""
        first, last = episodes[0].ts, episodes[-1].ts
        kinds = Counter(e.kind + (f"/{e.outcome}" if e.outcome else "") for e in episodes)
        where = f"session {episodes[0].session}" if episodes[0].session else f"{first:%Y-%m-%d}"
        line1 = f"{len(episodes)} events in {where}, {first:%Y-%m-%d %H:%M} to {last:%H:%M} UTC: " + ", ".join(
            f"{n} {k}" for k, n in kinds.most_common()
        )
        # the events that say most: outcomes first (failures, then partials), then the latest
        rank = {"failure": 0, "partial": 1, "success": 2}
        telling = sorted(episodes, key=lambda e: (rank.get(e.outcome or "", 3), -e.ts.timestamp()))
        seen: list[str] = []
        for e in telling:
            s = _clip(e.summary, 80)
            if s not in seen:
                seen.append(s)
            if len(seen) == 3:
                break
        line2 = "Notable: " + "; ".join(seen)
        lessons = list(dict.fromkeys(e.lesson for e in episodes if e.lesson))
        lines = [_clip(line1, LINE_CHARS), _clip(line2, LINE_CHARS)]
        if lessons:
            lines.append(_clip("Lessons: " + "; ".join(lessons), LINE_CHARS))
        return "\n".join(lines[: max(max_lines, 1)])

    def one_line(self, episode: Episode) -> str:
        head = f"{episode.ts:%Y-%m-%d} {episode.kind}" + (f"/{episode.outcome}" if episode.outcome else "")
        body = episode.summary.splitlines()[0] if episode.summary else ""
        if episode.lesson:
            body += f" (lesson: {episode.lesson})"
        return _clip(f"{head}: {body}", ONE_LINE_CHARS)


class AnthropicSummarizer:
    """Summaries written by Claude through the official ``anthropic`` SDK.

    The key comes from ``api_key`` or ``ANTHROPIC_API_KEY``; ``client`` may be given (tests
    pass one whose HTTP transport is mocked). One-liners for archiving stay extractive: they
    are many, and must never depend on a network.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        client: Any | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        max_tokens: int = 300,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self._fallback = ExtractiveSummarizer()
        self.client = client if client is not None else anthropic_client(api_key, timeout, max_retries, "AnthropicSummarizer")

    def summarize(self, episodes: Sequence[Episode], max_lines: int = 3) -> str:
        import anthropic

        listing = "\n".join(
            f"- {e.ts:%Y-%m-%d %H:%M} {e.kind}{'/' + e.outcome if e.outcome else ''}: {_clip(e.summary, 300)}"
            + (f" (lesson: {_clip(e.lesson, 200)})" if e.lesson else "")
            for e in episodes
        )
        prompt = (
            f"Summarize these {len(episodes)} events of one agent work session in at most {max_lines} short lines. "
            "State what happened and how it turned out; keep outcomes honest (say failure when it failed). "
            "Plain text, no bullets, no preamble.\n\n" + listing
        )
        try:
            message = self.client.messages.create(
                model=self.model, max_tokens=self.max_tokens, messages=[{"role": "user", "content": prompt}]
            )
            text = "".join(getattr(block, "text", "") for block in message.content)
        except anthropic.APIError as exc:
            raise LLMError(f"anthropic summary with {self.model}: {type(exc).__name__}: {exc}") from None
        except Exception as exc:  # an answer that is not a message (a proxy's page, JSON without content)
            raise LLMError(f"anthropic summary with {self.model}: the answer could not be read ({type(exc).__name__})") from None
        lines = [_clip(line.lstrip("-• ").strip(), LINE_CHARS) for line in text.splitlines() if line.strip()]
        if not lines:
            raise LLMError(f"anthropic summary with {self.model}: the response had no text")
        return "\n".join(lines[:max_lines])

    def one_line(self, episode: Episode) -> str:
        return self._fallback.one_line(episode)
