"""Relevance: the 40/30/20/10 score, kept at its level (1/25 of a point), its explanation,
buffered access tracking, batch rescoring.

Reads must stay reads: an access is counted in memory and flushed in one write
transaction once ``access_flush_every`` accesses wait and ``access_flush_seconds`` have passed
since the last flush, on ``flush()``, and on close. A crash loses at most the accesses since
the last flush; a clean close loses none.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memdb import native
from memdb.engine.process import after_fork
from memdb.memory.settings import Settings

__all__ = [
    "LEVELS_PER_POINT",
    "AccessTracker",
    "Explanation",
    "PendingAccess",
    "RelevanceModel",
    "band_of",
    "kept_relevance",
    "relevance_level",
]

# Relevance is kept to 1/25 of a point, the resolution ranking and the index codes read it at:
# fine enough that ranking reads few headers (one level is 0.0024 of a recency-ranked score),
# coarse enough that a level fits a byte, and that a day's ageing moves few stored values (a
# rescore writes only those; kept to 1e-9, an idle day moved nearly every header).
LEVELS_PER_POINT: Final = 25


def band_of(relevance: float) -> int:
    """Relevance band 0-10 (floor), the subscript of the band index."""
    return max(0, min(10, int(relevance)))


def relevance_level(relevance: float) -> int:
    """Relevance 0-10 in 25ths of a point, 0-250 (floor): what index codes keep of it. A value
    within 1e-9 of a level is that level, as 2.32 * 25 is 57.99999999999999; a relevance rounded
    to 1e-9 is on a level or 2.5e-8 (in 25ths) under it at least, so no other value moves."""
    return max(0, min(10 * LEVELS_PER_POINT, int(relevance * LEVELS_PER_POINT + 1e-9)))


_LEVEL_VALUES: Final = tuple(level / LEVELS_PER_POINT for level in range(10 * LEVELS_PER_POINT + 1))


def kept_relevance(score: float) -> float:
    """The relevance stored for a ``score``: the value of its level, the one rounding every stored
    relevance goes through. The level is taken of the score rounded to 1e-9, as index codes were
    before relevance was kept at its level, so a sum that is a level's value but for the last bits
    (and the C scorer beside its twin) keeps that level."""
    return _LEVEL_VALUES[relevance_level(round(score, 9))]


@dataclass(frozen=True)
class Explanation:
    """Why an episode scores what it scores: inputs, the four components (0-10) and weights.
    ``score`` is their weighted sum, ``relevance`` that sum as stored (``kept_relevance``)."""

    relevance: float
    frequency: float
    tags: float
    age: float
    feedback: float
    weights: Mapping[str, float]
    access_count: int
    tag_weight: float
    age_days: float
    feedback_value: float | None
    score: float

    def __str__(self) -> str:
        w = self.weights
        fb = "none" if self.feedback_value is None else f"{self.feedback_value:+.2f}"
        accesses = f"{self.access_count} access{'es' if self.access_count != 1 else ''}"
        return (
            f"relevance {self.relevance:.2f} ({self.score:.4f} kept to 1/25 of a point)"
            f" = {w['frequency']:.2f}*frequency {self.frequency:.2f} ({accesses})"
            f" + {w['tags']:.2f}*tags {self.tags:.2f} (weight {self.tag_weight:.2f})"
            f" + {w['age']:.2f}*age {self.age:.2f} ({self.age_days:.1f} days since last access)"
            f" + {w['feedback']:.2f}*feedback {self.feedback:.2f} ({fb})"
        )


class RelevanceModel:
    """Scores episodes with the database's settings through the native (or twin) scorer."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self._settings = settings
        self._params: tuple[Settings, native.ScoreParams] | None = None

    def params(self) -> native.ScoreParams:
        return self._params_of(self._settings())

    def _params_of(self, s: Settings) -> native.ScoreParams:
        cached = self._params
        if cached is not None and cached[0] is s:  # settings are frozen: same object, same params
            return cached[1]
        params = self._build_params(s)
        self._params = (s, params)
        return params

    @staticmethod
    def _build_params(s: Settings) -> native.ScoreParams:
        return native.ScoreParams(
            w_freq=s.w_frequency,
            w_tags=s.w_tags,
            w_age=s.w_age,
            w_feedback=s.w_feedback,
            freq_saturation=s.frequency_saturation,
            age_half_life_days=s.age_half_life_days,
        )

    @staticmethod
    def age_days(record: Mapping[str, Any], state: Mapping[str, Any], now: dt.datetime) -> float:
        """Days since the last access (or since the episode happened, if never accessed)."""
        last: dt.datetime = state.get("last_access") or record["ts"]
        return max((now - last).total_seconds(), 0.0) / 86400.0

    def score(self, record: Mapping[str, Any], state: Mapping[str, Any], now: dt.datetime) -> float:
        """Relevance 0-10 of one episode at ``now``, as stored (``kept_relevance``)."""
        return float(self.score_many([(record, state)], now)[0])

    def score_many(self, items: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]], now: dt.datetime) -> list[float]:
        """Relevance of many episodes in one native batch, as stored (``kept_relevance``): every
        stored relevance is computed here."""
        settings = self._settings()  # once: the database's settings are a property that reads a thread's state
        tag_weight, age_days = settings.tag_weight, self.age_days
        if len(items) == 1:  # a capture's one episode: by value, no arrays (native.score_one)
            ((r, s),) = items
            one = native.score_one(
                float(s.get("access_count", 0)),
                tag_weight(r.get("tags") or ()),
                age_days(r, s, now),
                s.get("feedback"),
                self._params_of(settings),
            )
            return [kept_relevance(one)]
        # lists, not arrays from generators: the C path takes lists through ffi.new
        counts = [float(s.get("access_count", 0)) for _, s in items]
        tags = [tag_weight(r.get("tags") or ()) for r, _ in items]
        ages = [age_days(r, s, now) for r, s in items]
        feedback = [s.get("feedback") for _, s in items]
        return [kept_relevance(x) for x in native.score_batch(counts, tags, ages, feedback, self._params_of(settings))]

    def explain(self, record: Mapping[str, Any], state: Mapping[str, Any], now: dt.datetime) -> Explanation:
        """The score with its four components and the inputs behind them."""
        settings = self._settings()
        tag_weight = settings.tag_weight(record.get("tags") or ())
        age = self.age_days(record, state, now)
        scores, comps = native.score_batch(
            [float(state.get("access_count", 0))], [tag_weight], [age], [state.get("feedback")], self.params(), components=True
        )
        f, t, a, fb = comps[0]
        return Explanation(
            relevance=kept_relevance(scores[0]),
            frequency=f,
            tags=t,
            age=a,
            feedback=fb,
            weights={"frequency": settings.w_frequency, "tags": settings.w_tags, "age": settings.w_age, "feedback": settings.w_feedback},
            access_count=int(state.get("access_count", 0)),
            tag_weight=tag_weight,
            age_days=age,
            feedback_value=state.get("feedback"),
            score=float(scores[0]),
        )


@dataclass(slots=True)
class PendingAccess:
    count: int
    last: dt.datetime


class AccessTracker:
    """Counts accesses in memory and applies them in batched write transactions.

    A batch is ``batch()`` accesses (not distinct episodes). A full batch is written by the
    access that fills it, unless the last flush was less than ``interval()`` seconds ago (a
    monotonic clock): then by the first access after that. Access counts are soft state, and
    each flush is a durable commit (an fsync): the interval keeps a busy reader at about one
    fsync a second instead of one every ``batch()`` reads, and a repeated read merges into the
    waiting batch. So a crash loses at most the accesses since the last flush: fewer than a
    batch, plus those that came within ``interval()`` seconds of that flush (a burst of reads
    followed by none waits for the next read, ``flush()`` or close).

    A batch is written only outside the caller's transaction or snapshot (``can_flush``):
    inside one the write would share its rollback, or be refused; the buffer then waits for the
    next access outside. A forked child starts with an empty buffer: the parent's accesses are
    the parent's.
    """

    def __init__(
        self,
        flush: Callable[[dict[tuple[str, str], PendingAccess]], None],
        batch: Callable[[], int],
        can_flush: Callable[[], bool] = lambda: True,
        interval: Callable[[], float] = lambda: 0.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._flush = flush
        self._batch = batch
        self._can_flush = can_flush
        self._interval = interval
        self._monotonic = monotonic
        self._pending: dict[tuple[str, str], PendingAccess] = {}
        self._accesses = 0  # in _pending, counting repeats
        self._flushed_at: float | None = None  # monotonic time of the last flush; None before the first
        self._lock = threading.Lock()
        _TRACKERS.add(self)

    def touch(self, owner: str, episode_ids: Iterable[str], now: dt.datetime) -> None:
        """Count one access of each id; flushes when the buffer holds a batch of accesses."""
        ids = list(episode_ids)
        # each access made without the dataclass's __init__ (called through the type) and with one key
        # tuple: a sixth of a LoCoMo question's touch
        new = PendingAccess.__new__
        with self._lock:
            pending = self._pending  # (a flush swaps in a new buffer, under the lock)
            for eid in ids:
                key = (owner, eid)
                p = pending.get(key)
                if p is None:
                    p = pending[key] = new(PendingAccess)
                    p.count, p.last = 1, now
                else:
                    p.count += 1
                    if now > p.last:
                        p.last = now
            self._accesses += len(ids)
            full = self._accesses >= self._batch()
        if full and self._due() and self._can_flush():
            self.flush()

    def _due(self) -> bool:
        """Whether ``interval()`` seconds have passed since the last flush (or none happened yet)."""
        return self._flushed_at is None or self._monotonic() - self._flushed_at >= self._interval()

    def pending(self, owner: str, episode_id: str) -> tuple[int, dt.datetime | None]:
        """Accesses of one episode not yet flushed (count, latest time)."""
        with self._lock:
            p = self._pending.get((owner, episode_id))
            return (p.count, p.last) if p else (0, None)

    def flush(self) -> int:
        """Write every buffered access now; returns how many episodes were updated."""
        with self._lock:
            batch, self._pending = self._pending, {}
            taken, self._accesses = self._accesses, 0
            self._flushed_at = self._monotonic()
        if batch:
            try:
                self._flush(batch)
            except BaseException:
                with self._lock:  # keep the counts for the next try
                    for key, p in batch.items():
                        q = self._pending.setdefault(key, PendingAccess(0, p.last))
                        q.count += p.count
                        q.last = max(q.last, p.last)
                    self._accesses += taken
                raise
        return len(batch)

    def _forget_after_fork(self) -> None:
        self._lock = threading.Lock()  # a lock held at the fork stays held in the child
        self._pending = {}
        self._accesses = 0
        self._flushed_at = None

    def discard(self, owner: str, episode_id: str) -> None:
        """Forget buffered accesses of an episode that no longer exists."""
        with self._lock:
            p = self._pending.pop((owner, episode_id), None)
            if p is not None:
                self._accesses -= p.count


_TRACKERS: weakref.WeakSet[AccessTracker] = weakref.WeakSet()


@after_fork
def _after_fork_in_child() -> None:
    for tracker in list(_TRACKERS):
        tracker._forget_after_fork()
