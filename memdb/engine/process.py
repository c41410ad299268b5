"""The one fork registry: per-process state (LMDB environments, id counters, buffered accesses)
is reset in a forked child by the hooks registered here, in registration order."""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["after_fork"]

_HOOKS: list[Callable[[], None]] = []


def after_fork(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook`` in every forked child before it goes on; usable as a decorator."""
    _HOOKS.append(hook)
    return hook


def _in_child() -> None:
    for hook in _HOOKS:
        hook()


os.register_at_fork(after_in_child=_in_child)
