"""What archived memories answer by, kept in memory between questions: each one's time, kind,
outcome, session, tags and the terms of what stays hot of it (``archived_words``), with lists of
positions by term and by tag, so counting or finding the archived matches of a question reads
no header but those of its matches.

A digest is made from the owner's archived headers and stands while the owner's archived count
and ``archive_changes`` (bumped by every archive, restore, erasure of an archived memory and
header backfill) read as they did, and no owner is erased (an erasure resets those counters,
``OWNER_ERASURES``): capture, which changes the hot documents only, keeps it.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memdb.memory.ids import ts_micros
from memdb.memory.layout import archived_words
from memdb.memory.text import term_counts
from memdb.query.plan import Query

__all__ = ["ArchivedDigest"]


@dataclass
class ArchivedDigest:
    """An owner's archived memories in time order, by position."""

    times: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    outcomes: list[str | None] = field(default_factory=list)
    sessions: list[str | None] = field(default_factory=list)
    tags: list[frozenset[str]] = field(default_factory=list)
    by_term: dict[str, list[int]] = field(default_factory=dict)
    by_tag: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, headers: Iterable[tuple[str, Mapping[str, Any]]]) -> ArchivedDigest:
        """The digest of archived ``(id, header)`` pairs given in time order."""
        d = cls()
        for i, (eid, h) in enumerate(headers):
            d.times.append(ts_micros(h["ts"]))
            d.ids.append(eid)
            d.kinds.append(h["kind"])
            d.outcomes.append(h.get("outcome"))
            d.sessions.append(h.get("session"))
            tags = frozenset(h["tags"])
            d.tags.append(tags)
            for term in term_counts(archived_words(h)):
                d.by_term.setdefault(term, []).append(i)
            for tag in tags:
                d.by_tag.setdefault(tag, []).append(i)
        return d

    def __len__(self) -> int:
        return len(self.ids)

    def tag_begins(self, start: str) -> bool:
        """Whether an archived memory's tag begins with ``start`` (a bisect of the sorted tags)."""
        ordered = self.__dict__.get("_sorted_tags")
        if ordered is None:
            ordered = self.__dict__["_sorted_tags"] = sorted(self.by_tag)
        at = bisect.bisect_left(ordered, start)
        return at < len(ordered) and ordered[at].startswith(start)

    def matches(self, q: Query, cap: int | None = None) -> list[int]:
        """Positions of the archived memories matching ``q``'s window, tags, kind, outcome,
        session and words (any of its words, or a boost tag, when they are required: as
        ``OwnerQueries._archived_matches`` matches a header), in time order, at most ``cap``."""
        lo = bisect.bisect_left(self.times, q.lo) if q.lo is not None else 0
        hi = bisect.bisect_left(self.times, q.hi) if q.hi is not None else len(self.times)
        if q.terms and q.terms_required:  # the lists of the words (and boost tags), joined
            lists = [self.by_term.get(t, []) for t in q.terms] + [self.by_tag.get(t, []) for t in q.boost_tags]
            candidates: Iterable[int] = sorted(set(itertools.chain.from_iterable(lists)))
        elif q.tags:
            tagged: list[list[int]] = [self.by_tag.get(t, []) for t in q.tags]
            shortest: list[int] = min(tagged, key=len)
            candidates = shortest
        elif q.any_tags:
            candidates = sorted(set(itertools.chain.from_iterable(self.by_tag.get(t, []) for t in q.any_tags)))
        else:
            candidates = range(lo, hi)
        want, any_tags = frozenset(q.tags), frozenset(q.any_tags)
        out: list[int] = []
        for i in candidates:
            if not lo <= i < hi:
                continue
            tags = self.tags[i]
            if (
                (want and not want <= tags)
                or (any_tags and not any_tags & tags)
                or (q.kind and self.kinds[i] != q.kind)
                or (q.outcome and self.outcomes[i] != q.outcome)
                or (q.session and self.sessions[i] != q.session)
            ):
                continue
            out.append(i)
            if cap is not None and len(out) >= cap:
                break
        return out
