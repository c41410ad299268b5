"""What archived memories answer by, kept in memory between questions: each one's time, kind,
outcome, session, tags and the terms of what stays hot of it (``archived_words``) with their
counts, with lists of positions by term and by tag, so counting, finding or ranking the archived
matches of a question reads no header but those of the matches it shows.

A digest is made from the owner's archived headers and stands while the owner's archived count
and ``archive_changes`` (bumped by every archive, restore, erasure of an archived memory and
header change) read as they did, and no owner is erased (an erasure resets those counters,
``OWNER_ERASURES``): capture, which changes the hot documents only, keeps it. When they moved
by exactly as many changes as memories came into or left the archive, those were all the
changes, so the next digest is the last one with those memories read and the others dropped
(``ArchivedDigest.updated``): a nightly archive of a few memories reads those few headers.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memdb.memory.ids import ts_micros
from memdb.memory.layout import archived_words
from memdb.memory.text import term_counts
from memdb.query.plan import Query, in_scope
from memdb.query.rank import Hits

__all__ = ["ArchivedDigest", "ArchivedMatch"]

ArchivedMatch = tuple[str, int, frozenset[str], Hits, dict[str, Any] | None, bytes | None]
"""An archived match as the digest knows it: id, time (us), tags, postings of the query's terms,
its header when read and its archive key when known (``OwnerQueries._archived_light``)."""

# What the digest knows of one archived memory: time (us), kind, outcome, session, tags, and the
# terms of its ``archived_words`` with their counts
_Entry = tuple[int, str, str | None, str | None, frozenset[str], dict[str, int]]


def _entry(header: Mapping[str, Any]) -> _Entry:
    words = dict(term_counts(archived_words(header)))
    return ts_micros(header["ts"]), header["kind"], header.get("outcome"), header.get("session"), frozenset(header["tags"]), words


@dataclass
class ArchivedDigest:
    """An owner's archived memories in time order, by position."""

    keys: list[bytes] = field(default_factory=list)  # each one's archive key (^EPAR): they sort as the memories do
    times: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    outcomes: list[str | None] = field(default_factory=list)
    sessions: list[str | None] = field(default_factory=list)
    tags: list[frozenset[str]] = field(default_factory=list)
    words: list[dict[str, int]] = field(default_factory=list)  # each one's terms with their counts
    by_term: dict[str, list[int]] = field(default_factory=dict)
    by_tag: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, headers: Iterable[tuple[bytes, str, Mapping[str, Any]]]) -> ArchivedDigest:
        """The digest of archived ``(archive key, id, header)`` given in time order."""
        d = cls()
        for key, eid, h in headers:
            d._append(key, eid, _entry(h))
        return d

    def _append(self, key: bytes, eid: str, entry: _Entry) -> None:
        i = len(self.ids)
        self._append_columns(key, eid, entry)
        for term in entry[5]:
            self.by_term.setdefault(term, []).append(i)
        for tag in entry[4]:
            self.by_tag.setdefault(tag, []).append(i)

    def updated(self, keys: Sequence[bytes], headers: Mapping[bytes, tuple[str, Mapping[str, Any]]]) -> ArchivedDigest:
        """The digest of the archived memories of ``keys`` (their archive keys, in order): those
        this digest holds as it holds them, the others from ``headers`` (key -> id and header; a
        key in neither is left out: erased since). A new digest, which shares what did not change
        with this one; this one, which other threads may read, stays as it is. Positions move
        monotonically, so each term's list is renumbered, never re-read: a few ms at 8,000 where
        reading every header took 0.25 s (test_the_digest_follows_archives_restores_and_erasures)."""
        n = len(self.keys)
        if len(keys) >= n and keys[:n] == self.keys:  # only new memories, all after the others: appended
            d = ArchivedDigest(
                self.keys[:], self.times[:], self.ids[:], self.kinds[:], self.outcomes[:], self.sessions[:], self.tags[:], self.words[:],
                dict(self.by_term), dict(self.by_tag),
            )  # fmt: skip
            for key in keys[n:]:
                if (found := headers.get(key)) is not None:
                    eid, h = found
                    entry = _entry(h)
                    for lists, names in ((d.by_term, entry[5]), (d.by_tag, entry[4])):
                        for name in names:
                            lists[name] = [*lists.get(name, ()), len(d.ids)]  # a copy: this digest's list stays
                    d._append_columns(key, eid, entry)
            return d
        same = 0  # the memories before the first change keep their positions, and the lists of those alone
        while same < min(n, len(keys)) and keys[same] == self.keys[same]:
            same += 1
        at = dict(zip(self.keys[same:], range(same, n), strict=True))
        moved = list(range(same)) + [-1] * (n - same)  # old position -> new one, or -1 when it left the archive
        d = ArchivedDigest(
            self.keys[:same], self.times[:same], self.ids[:same], self.kinds[:same], self.outcomes[:same], self.sessions[:same],
            self.tags[:same], self.words[:same],
        )  # fmt: skip
        added: list[int] = []
        for key in keys[same:]:
            i = at.get(key)
            if i is not None:
                moved[i] = len(d.ids)
                entry = (self.times[i], self.kinds[i], self.outcomes[i], self.sessions[i], self.tags[i], self.words[i])
                d._append_columns(key, self.ids[i], entry)
            elif (found := headers.get(key)) is not None:
                added.append(len(d.ids))
                d._append_columns(key, found[0], _entry(found[1]))
        left = len(d.ids) - len(added) < n  # some memories left the archive: their positions are dropped
        for old, new in ((self.by_term, d.by_term), (self.by_tag, d.by_tag)):
            for name, positions in old.items():
                if positions[-1] < same:  # shared: neither list changes
                    new[name] = positions
                    continue
                cut = bisect.bisect_left(positions, same)
                tail = list(map(moved.__getitem__, positions[cut:]))
                if kept := positions[:cut] + ([j for j in tail if j >= 0] if left else tail):
                    new[name] = kept
        for j in added:  # in their place among the others (a shared list is copied first)
            for lists, old_lists, names in ((d.by_term, self.by_term, d.words[j]), (d.by_tag, self.by_tag, d.tags[j])):
                for name in names:
                    have = lists.get(name)
                    if have is None or have is old_lists.get(name):
                        have = lists[name] = [*(have or ())]
                    bisect.insort(have, j)
        return d

    def _append_columns(self, key: bytes, eid: str, entry: _Entry) -> None:
        """One memory's columns appended, its terms' and tags' lists left to the caller."""
        self.keys.append(key)
        self.times.append(entry[0])
        self.ids.append(eid)
        self.kinds.append(entry[1])
        self.outcomes.append(entry[2])
        self.sessions.append(entry[3])
        self.tags.append(entry[4])
        self.words.append(entry[5])

    def __len__(self) -> int:
        return len(self.ids)

    def key_set(self) -> frozenset[bytes]:
        """The archive keys, as a set (made once: what the next digest is told apart from)."""
        found = self.__dict__.get("_key_set")
        if found is None:
            found = self.__dict__["_key_set"] = frozenset(self.keys)
        return found

    def tag_begins(self, start: str) -> bool:
        """Whether an archived memory's tag begins with ``start`` (a bisect of the sorted tags)."""
        ordered = self.__dict__.get("_sorted_tags")
        if ordered is None:
            ordered = self.__dict__["_sorted_tags"] = sorted(self.by_tag)
        at = bisect.bisect_left(ordered, start)
        return at < len(ordered) and ordered[at].startswith(start)

    def matches(self, q: Query, cap: int | None = None) -> list[int]:
        """Positions of the archived memories matching ``q``'s window, tags, kind, outcome,
        session, scope and words (any of its words, or a boost tag, when they are required: as
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
                or (q.with_outcome and not self.outcomes[i])
                or (q.session and self.sessions[i] != q.session)
                or (q.scope_tags and not in_scope(q, tags))
            ):
                continue
            out.append(i)
            if cap is not None and len(out) >= cap:
                break
        return out
