"""Secrets this process holds, replaced wherever they occur, whatever their shape.

A random credential has no shape a pattern knows: a server's bearer token made with
``secrets.token_urlsafe(32)`` passed the sanitizer raw when an agent wrote it anywhere but after
"Bearer" (stored on disk, then shared with a team in a lesson). The process that configured the
token knows it exactly, so it registers it here, and every sanitizing of this process replaces
it by a ``<SECRET_n>``: the built-in sanitizer finds it first of all (``detect._detect_known``),
and ``sanitize_fields`` replaces it in what any other sanitizer returned
(``tests/memory/test_random_tokens.py``, ``tests/surfaces/test_mcp_tokens.py``).

A server calls :func:`register_secrets` with its configured tokens when it loads them and
:func:`unregister_secrets` with the old ones when it drops or rotates them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Final

from memdb.errors import ConfigError

__all__ = ["MIN_KNOWN_SECRET", "known_secrets", "register_secrets", "unregister_secrets"]

MIN_KNOWN_SECRET: Final = 8
"""The shortest value registered: a shorter one ("admin", "1234") is a word or a number that text
holds for other reasons, and replacing it everywhere would blank them."""

_LOCK: Final = threading.Lock()
_counts: dict[str, int] = {}  # a value registered twice (two servers of one process) stays until both unregister
_secrets: tuple[str, ...] = ()  # read without the lock: replaced whole, longest first


def known_secrets() -> tuple[str, ...]:
    """The registered secrets, longest first (so one that contains another is replaced whole)."""
    return _secrets


def register_secrets(values: Iterable[str]) -> None:
    """Replace each of ``values`` wherever this process sanitizes text, from now on.

    Raises ConfigError (naming the position, never the value) for a value that is not a str or
    is shorter than :data:`MIN_KNOWN_SECRET` characters once stripped; nothing is registered then."""
    checked = []
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ConfigError(f"known secret #{i + 1}: expected str, got {type(value).__name__} (give the token's text)")
        if len(value.strip()) < MIN_KNOWN_SECRET:
            raise ConfigError(
                f"known secret #{i + 1}: shorter than {MIN_KNOWN_SECRET} characters (a word that short would be replaced "
                "everywhere; use a long random token, e.g. secrets.token_urlsafe(32))"
            )
        checked.append(value.strip())
    global _secrets
    with _LOCK:
        for value in checked:
            _counts[value] = _counts.get(value, 0) + 1
        _secrets = tuple(sorted(_counts, key=len, reverse=True))


def unregister_secrets(values: Iterable[str]) -> None:
    """Stop replacing ``values`` (a rotated-out token); values never registered are ignored."""
    global _secrets
    with _LOCK:
        for value in values:
            key = value.strip() if isinstance(value, str) else value
            if isinstance(key, str) and key in _counts:
                _counts[key] -= 1
                if not _counts[key]:
                    del _counts[key]
        _secrets = tuple(sorted(_counts, key=len, reverse=True))
