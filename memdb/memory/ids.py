"""Ids and the time they carry: one format for episodes, audit records and knowledge entries.

An id is ``YYYYMMDDTHHMMSSffffffZ-xxxxxx``: its UTC timestamp, then a per-process counter from
a random start, so ids sort by time and the first 22 characters bound a time range. Every
index subscripts time as microseconds since the epoch (``ts_micros``), exact and ordered.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import secrets
from collections.abc import Callable, Iterator
from typing import Any, TypeGuard

from memdb.engine.codec import EPOCH
from memdb.engine.process import after_fork
from memdb.errors import NotFoundError
from memdb.memory.sanitize import shown

__all__ = [
    "EPOCH_ORDINAL",
    "ID_LENGTH",
    "ID_PATTERN",
    "Clock",
    "check_id",
    "episode_day",
    "from_micros",
    "id_at",
    "is_id",
    "new_id",
    "time_prefix",
    "time_prefix_at",
    "ts_micros",
    "utcnow",
]

Clock = Callable[[], dt.datetime]
ID_PATTERN = re.compile(r"\d{8}T\d{12}Z-[0-9a-f]{6}\Z")
ID_LENGTH = 29
EPOCH_ORDINAL = EPOCH.date().toordinal()


def utcnow() -> dt.datetime:
    """The default clock: aware UTC now."""
    return dt.datetime.now(dt.UTC)


def ts_micros(ts: dt.datetime) -> int:
    """Microseconds since the epoch: the time subscript of every index (exact, ordered)."""
    d = ts - EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def from_micros(us: int) -> dt.datetime:
    """The aware UTC datetime ``us`` microseconds after the epoch."""
    return EPOCH + dt.timedelta(microseconds=us)


_seqs: dict[str, Iterator[int]] = {}
after_fork(_seqs.clear)  # a forked child counts from fresh random starts


def new_id(ts: dt.datetime, scope: str = "") -> str:
    """A unique id that sorts by time.

    The suffix is a per-process counter from a random start, one per ``scope`` (the owner the
    id is handed to): ids with the same timestamp keep their creation order, ids from other
    processes are checked on write, and the ids one owner sees tell nothing of how many
    others recorded in between.
    """
    seq = _seqs.get(scope)
    if seq is None:
        if len(_seqs) >= 1 << 16:  # bounded; a fresh random start keeps ids unique
            _seqs.clear()
        seq = _seqs[scope] = itertools.count(secrets.randbelow(1 << 24))
    # strftime took 2.4 us; the day is formatted once per day (_day_prefix), the rest here
    day = _day_prefix(ts.toordinal() - EPOCH_ORDINAL)
    return f"{day}T{ts.hour:02d}{ts.minute:02d}{ts.second:02d}{ts.microsecond:06d}Z-{next(seq) & 0xFFFFFF:06x}"


def time_prefix(ts: dt.datetime) -> str:
    """The first 22 characters of every id made at ``ts``: a bound for ranges of ids by time."""
    return ts.strftime("%Y%m%dT%H%M%S%fZ")


_DAY_US = 86_400_000_000
_DAY_PREFIXES: dict[int, str] = {}  # days since the epoch -> "YYYYMMDD"


def _day_prefix(days: int) -> str:
    """The ``YYYYMMDD`` of the day ``days`` after the epoch, from ``strftime`` once per day (so
    it is the string ``strftime`` gives), then from a bounded cache."""
    day = _DAY_PREFIXES.get(days)
    if day is None:
        if len(_DAY_PREFIXES) >= 1 << 16:
            _DAY_PREFIXES.clear()
        day = _DAY_PREFIXES[days] = (EPOCH + dt.timedelta(days=days)).strftime("%Y%m%d")
    return day


def time_prefix_at(us: int) -> str:
    """``time_prefix(from_micros(us))`` without a datetime: a text query turns each document's
    time into its id, and ``strftime`` was most of that. The day comes from ``_day_prefix``,
    the time of day from integer arithmetic."""
    days, rest = divmod(us, _DAY_US)
    day = _day_prefix(days)
    seconds, micros = divmod(rest, 1_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{day}T{hours:02d}{minutes:02d}{seconds:02d}{micros:06d}Z"


def id_at(us: int, suffix: int) -> str:
    """The id of an episode made at ``us`` microseconds with counter ``suffix`` (what ``new_id``
    made), from the two numbers a text index column keeps of it."""
    return f"{time_prefix_at(us)}-{suffix:06x}"


def is_id(value: Any) -> TypeGuard[str]:
    """Whether ``value`` has the id format."""
    return isinstance(value, str) and ID_PATTERN.match(value) is not None


def check_id(episode_id: Any, what: str = "episode") -> str:
    """``episode_id`` if it has the id format; NotFoundError naming it otherwise."""
    if not is_id(episode_id):
        raise NotFoundError(f"{what} {shown(episode_id)}: not an {what} id (expected YYYYMMDDTHHMMSSffffffZ-xxxxxx)")
    return episode_id


def episode_day(episode_id: str) -> str:
    """The ``YYYY-MM-DD`` day an id was created for (ids start with their UTC timestamp)."""
    return f"{episode_id[0:4]}-{episode_id[4:6]}-{episode_id[6:8]}"
