"""What an error message may show of a bad value: its repr after the built-in sanitizer, cut short.

Error messages name the offending value ("what: reason (hint)"), and they reach logs, terminals
and MCP clients; a value given by mistake in the wrong argument (an email as an episode id, a
card number as a kind) must not travel with them. ``shown`` is for every message that echoes
input; ``tests/memory/test_secrets.py`` walks the error paths that do.
"""

from __future__ import annotations

from typing import Final

from memdb.memory.sanitize.detect import RegexSanitizer

__all__ = ["redacted", "shown"]

_SANITIZER: Final = RegexSanitizer()
_READ: Final = 2048  # characters sanitized: far more than shown, so a value at the cut is still seen whole


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` with personal data and secrets replaced by placeholders, at most ``limit``
    characters; a str is sanitized before its repr, so escapes do not hide a value. Never raises."""
    try:
        if isinstance(value, str):
            text = repr(_SANITIZER.sanitize({"v": value[:_READ]})["v"])
        else:
            text = _SANITIZER.sanitize({"v": repr(value)[:_READ]})["v"]
    except Exception:  # a broken __repr__, an int too long to print: the type is enough
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def redacted(text: str) -> str:
    """``text`` for a message, personal data and secrets replaced (a path such as
    ``decisions.<EMAIL_1>`` built from a caller's keys). Never raises."""
    try:
        return _SANITIZER.sanitize({"v": text})["v"]
    except Exception:
        return "<text>"
