"""Ranking's arithmetic: BM25 per term, and the score bounds that let ranking read the headers
of only the matches that can reach the top (``RangeColumn``: one index range's matches as
columns; ``bounded_by_recency`` for a union of ranges).

    with text:    score = 0.9 * bm25 / max_bm25 + 0.05 * relevance / 10 + 0.05 * recency (+ 0.1 if a boost tag)
    without text: score = 0.6 * relevance / 10 + 0.4 * recency

where ``recency = 0.5 ** (age_days / 7)``, BM25 uses k1 = 1.2, b = 0.75 over the owner's
inverted index, and a relevance level is 1/25 of a point. The weights put text first: on LoCoMo,
0.6/0.25/0.15 let recency and earlier reads reorder good text matches, costing about 0.02 of
recall@10.

A word of ``recall``'s text that names one of the owner's tags (a person, a project: what
memories are about) weighs ``NAME_WEIGHT`` times its idf. Idf reads a word that half the
memories hold as nearly worthless, and a name is such a word where the memories are one
person's talk with another (each turn tagged with its speaker): "What has Melanie painted?"
then ranks Caroline's turns about painting beside Melanie's, though the question is about her.
``ask`` makes a named tag a boost instead (+0.1), so its words are not weighed again. On
LoCoMo's split the boost's +0.1 beat 0, 0.03 and 0.05 on both halves (ask's recall@10 0.795 and
0.775 against at most 0.794 and 0.768); the score times 1.1 to 1.3 instead, or the name weighed
``NAME_WEIGHT`` as well, won at most 0.006 on 26, 30, 41 and lost 0.003 or more on 42, 43.
Questions naming the wrong person on purpose (LoCoMo's adversarial ones) lose a little to it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Mapping, Sequence

from memdb.memory.layout import LEVELS_PER_POINT, MAX_CODE, tail_ts
from memdb.memory.postings import TF_UNIT

__all__ = [
    "BY_RELEVANCE",
    "K1",
    "NAME_WEIGHT",
    "NO_HITS",
    "RECENCY_HALF_LIFE_DAYS",
    "TEXT_LEVEL",
    "WEEK_US",
    "B",
    "Hits",
    "Hot",
    "KernelHits",
    "RangeColumn",
    "bm25_term",
    "bounded_by_recency",
]

K1 = 1.2
"""BM25's term-frequency saturation. With ``B``, checked on LoCoMo's split (k1 0.9, 1.2, 1.5, 2
by b 0.5, 0.75, 0.9): every pair lies within 0.006 of recall@10 of this one on either half, and
the pair best on 26, 30, 41 (1.5, 0.5: recall 0.817 -> 0.817, ask 0.795 -> 0.801) loses recall's
@10 on 42, 43 (0.788 -> 0.785): noise, so the textbook values stay."""
B = 0.75
"""BM25's document-length normalisation (see ``K1``)."""
NAME_WEIGHT = 2.0
"""What a term of ``recall``'s text that names one of the owner's tags weighs, times its idf.
Chosen on LoCoMo's conversations 26, 30, 41 among 1.5, 2, 3 and 5 (2: recall@5 0.702 -> 0.707,
@10 0.812 -> 0.817), and checked on 42, 43 (@10 0.781 -> 0.788; multi-hop and open-domain
gain there too, adversarial questions, which name the wrong person, lose a little)."""
RECENCY_HALF_LIFE_DAYS = 7.0
WEEK_US = RECENCY_HALF_LIFE_DAYS * 86_400_000_000


NO_HITS: Mapping[str, tuple[int, int]] = {}  # shared by matches without term postings; never mutated
# What one relevance level (1/25 of a point) is worth in each score, i.e. how loose a bound is.
_RECENCY_LEVEL = 0.6 / 10 / LEVELS_PER_POINT
TEXT_LEVEL = 0.05 / 10 / LEVELS_PER_POINT
# the score without text (0.6 * relevance / 10 + 0.4 * recency) as the kernel bounds it: a level is
# worth _RECENCY_LEVEL, and nothing is scored by text (the lists are tags')
BY_RELEVANCE: dict[str, float] = {"text_level": _RECENCY_LEVEL, "text_weight": 0.0, "recency_weight": 0.4, "boost": 0.0}
_LEVEL_OF_CODE = tuple(code >> 2 for code in range(MAX_CODE + 1))
_FEW = 48  # up to this many matches, RangeColumn.best bounds them all at once rather than walking the levels


# A hot match: its encoded (ts, id) tail, its index code (relevance level, outcome), its term postings.
Hits = Mapping[str, tuple[int, int]]  # term -> (tf, document length), the terms it holds
Hot = tuple[bytes, int, Hits]


class KernelHits(Mapping[str, tuple[int, int]]):
    """A kernel match's term postings (term -> (tf, document length)) for the scored terms it
    holds, made into a dict only when read: ranking takes its BM25 from the kernel, so only
    ``why`` (itself made on demand) reads them."""

    __slots__ = ("_dict", "_dl", "_terms", "_tfs")

    def __init__(self, terms: tuple[str, ...], tfs: Sequence[int], dl: int) -> None:
        self._terms, self._tfs, self._dl = terms, tfs, dl  # tfs: the scored lists' first
        self._dict: dict[str, tuple[int, int]] | None = None

    @classmethod
    def of_rows(cls, terms: tuple[str, ...], tfs_rows: Sequence[Sequence[int]], dls: Sequence[int]) -> list[KernelHits]:
        """One for each of the kernel's rows (its term frequencies and length), made without a
        call of ``__init__`` each: a Python ``__init__`` reached through the type's call, for
        each of a LoCoMo question's 25 matches, was 0.3% of its instructions."""
        new = cls.__new__
        out: list[KernelHits] = []
        for tfs, dl in zip(tfs_rows, dls, strict=True):
            hits = new(cls)
            hits._terms, hits._tfs, hits._dl, hits._dict = terms, tfs, dl, None
            out.append(hits)
        return out

    def _made(self) -> dict[str, tuple[int, int]]:
        if self._dict is None:
            dl = self._dl
            self._dict = {t: (tf, dl) for t, tf in zip(self._terms, self._tfs, strict=False) if tf}
        return self._dict

    def __getitem__(self, term: str) -> tuple[int, int]:
        return self._made()[term]

    def __iter__(self) -> Iterator[str]:
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())


class RangeColumn:
    """The hot matches of one index range as columns, in the range's (ts, id) order: encoded
    keys and index codes. Filled by C loops, so a large answer costs no Python step per match
    until ranking, which looks only at the newest few of each relevance level. The codes may
    come as a function of the query's snapshot, called when first needed: a range of no more
    matches than the answer shows never needs them, so its documents' levels are not read
    (one round trip fewer on PostgreSQL)."""

    __slots__ = ("_codes", "_levels", "keys", "prefix")

    def __init__(self, keys: list[bytes], codes: list[int] | Callable[[], list[int]], prefix: int) -> None:
        self.keys = keys  # in (ts, id) order
        self._codes = codes  # the index code of each key, or what makes them
        self._levels: bytes | None = None
        self.prefix = prefix  # key[prefix:] is the encoded (ts, id) tail

    @property
    def codes(self) -> list[int]:
        if callable(self._codes):
            self._codes = self._codes()
        return self._codes

    @property
    def levels(self) -> bytes:
        """The matches' relevance levels, one byte each."""
        if self._levels is None:
            self._levels = bytes(map(_LEVEL_OF_CODE.__getitem__, self.codes))
        return self._levels

    def __len__(self) -> int:
        return len(self.keys)

    def tail(self, i: int) -> bytes:
        return self.keys[i][self.prefix :]

    def hot(self) -> list[Hot]:
        p = self.prefix
        return [(k[p:], c, NO_HITS) for k, c in zip(self.keys, self.codes, strict=True)]

    def best(self, now_us: int, limit: int) -> list[int]:
        """Positions of the matches whose score ``0.6 relevance/10 + 0.4 recency`` can reach the
        top ``limit``, knowing each one's relevance level (1/25 of a point) and time.

        Within one level a newer match bounds higher, so each level is walked newest first
        (``rfind`` over the levels) and left as soon as a match falls below the cut so far,
        one relevance level under the ``limit``-th best lower bound seen; the cut only rises.
        """
        n = len(self.keys)
        if n <= limit:
            return list(range(n))
        levels, keys, prefix = self.levels, self.keys, self.prefix
        if n <= _FEW:
            # A few matches: every bound, then the same cut. The walk below leaves out only
            # matches bounding below its cut so far, which only rises, so both keep the same ones.
            lows = [
                _RECENCY_LEVEL * level + 0.4 * math.pow(0.5, max(now_us - tail_ts(key[prefix:]), 0) / WEEK_US)
                for key, level in zip(keys, levels, strict=True)
            ]
            cut = heapq.nlargest(limit, lows)[-1] - _RECENCY_LEVEL - 1e-9 if limit else math.inf
            return [i for i, low in enumerate(lows) if low >= cut]
        best: list[float] = []  # a min-heap of the ``limit`` best lower bounds so far
        seen: list[tuple[float, int]] = []
        cut = -math.inf
        for level in sorted(set(levels), reverse=True):
            i = n
            while (i := levels.rfind(level, 0, i)) != -1:
                low = _RECENCY_LEVEL * level + 0.4 * math.pow(0.5, max(now_us - tail_ts(keys[i][prefix:]), 0) / WEEK_US)
                if low < cut:
                    break  # older matches of this level bound lower still
                seen.append((low, i))
                if len(best) < limit:
                    heapq.heappush(best, low)
                elif low > best[0]:
                    heapq.heapreplace(best, low)
                if len(best) == limit:
                    cut = best[0] - _RECENCY_LEVEL - 1e-9
        return sorted(i for low, i in seen if low >= cut)

    def reaching(self, floor: float, base: float, level_weight: float, recency_weight: float, now_us: int) -> list[int]:
        """Positions whose score bound ``base + level_weight * (level + 1) + recency_weight *
        recency`` is at least ``floor``: each level walked newest first, left at the first
        match below it (older ones bound lower)."""
        levels, keys, prefix = self.levels, self.keys, self.prefix
        out: list[int] = []
        for level in set(levels):
            top = base + level_weight * (level + 1)
            i = len(keys)
            while (i := levels.rfind(level, 0, i)) != -1:
                if top + recency_weight * math.pow(0.5, max(now_us - tail_ts(keys[i][prefix:]), 0) / WEEK_US) + 1e-9 < floor:
                    break
                out.append(i)
        return sorted(out)


def bm25_term(idf: float, tf: int, dl: float, avgdl: float) -> float:
    """One term's Okapi BM25 contribution to one document (k1 = K1, b = B), from its stored tf
    (in ``TF_UNIT``s of an occurrence: a context's words count less, ``terms_of``)."""
    occurrences = tf / TF_UNIT
    return idf * occurrences * (K1 + 1) / (occurrences + K1 * (1 - B + B * dl / avgdl))


def bounded_by_recency(hot: list[Hot], now_us: int, limit: int) -> list[int]:
    """Positions in ``hot`` (in any order, e.g. a union of ranges) whose score can reach the
    top ``limit``: ``RangeColumn.best`` over the matches put in time order, in hot's order."""
    if len(hot) <= limit:
        return list(range(len(hot)))
    order = sorted(range(len(hot)), key=lambda i: hot[i][0])  # tails sort by (ts, id)
    column = RangeColumn([hot[i][0] for i in order], [hot[i][1] for i in order], 0)
    return sorted(order[j] for j in column.best(now_us, limit))  # hot's order, so ties rank as in a full scan
