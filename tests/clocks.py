"""The injectable clock every time-rule test uses: time moves only when the test moves it."""

from __future__ import annotations

import datetime as dt


class Clock:
    """A callable returning a fixed aware UTC ``now`` that tests set or advance exactly."""

    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        """Move time forward by ``datetime.timedelta(**delta)``."""
        self.now += dt.timedelta(**delta)
