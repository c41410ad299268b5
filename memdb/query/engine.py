"""Structured retrieval without embeddings: recall, ask, history, and context blocks for prompts.

Required words, with any window, outcome, tags, boost tags and words that only rank, are one
call of the search kernel (``memdb.memory.postings.search``, C in native/search.c): it merges
the words' posting blocks with the tags' lists, counts every match and returns only those whose
score can reach the top ``limit`` (``_kernel_matches``). For every other query the planner
starts from the most selective index (a tag's time range, a kind+outcome time
range, a session, the text postings, or the time index) and filters its entries from the
indexes alone: every entry ends in the same encoded (ts, id) tail and carries the episode's
relevance (to 1/25 of a point) and outcome, so each other filter is one key lookup and no
header is read to filter. When one index range holds exactly the matches (one tag, say, and
a window), it is read as columns by C loops. The survivors are ranked by reading headers
(``^EPST``) only for those whose score, bounded through their level, can still reach the top
``limit`` (the scores and bounds: ``memdb.query.rank``). Full records are read for the returned
memories only, so the cost follows the size of the most selective index range (a few key reads
per entry), not the database.

Beside this module: ``question`` reads a question's text (order, kinds, outcome words, names),
``plan`` holds a query once read and its matches, ``rank`` the scoring, ``notes`` what an
answer says beside its memories, ``results`` what callers get.

What a question reads of the owner's documents and nothing else (posting lists, document
frequencies, statistics, the tags and kinds indexed) is kept between calls in
``TextIndex.memo``, while the owner's column stamps say the documents are unchanged.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import heapq
import itertools
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cache, lru_cache, partial, wraps
from typing import Any, Concatenate, ParamSpec, TypeVar

from memdb import native
from memdb.engine.codec import children_range, decode_one, encode_int, encode_subscript, unpack_value
from memdb.engine.globals import Global, Globals
from memdb.engine.log import logger
from memdb.errors import ValidationError
from memdb.memory.episodes import Episodes, to_episode
from memdb.memory.ids import episode_day, from_micros, ts_micros
from memdb.memory.layout import (
    ID_SLICE,
    ID_TAIL_BYTES,
    LEVELS_PER_POINT,
    NO_OUTCOME,
    OUTCOME_OF_CODE,
    OWNER_ERASURES,
    SUPERSEDED,
    DecodedHeader,
    archived_words,
    column_tail,
    decoded_header,
    entry_code,
    entry_codes,
    indexed_text,
    successor_of,
    tail_id,
    tail_ts,
    terms_of,
)
from memdb.memory.models import Episode, utc
from memdb.memory.postings import ANY_OUTCOME, BOOST, CHUNK_DOCS, MATCH, RANK, REQUIRE, TF_UNIT, SearchParams, StoredList, count_outside
from memdb.memory.postings import Found as TextFound
from memdb.memory.postings import search as text_search
from memdb.memory.sanitize import PLACEHOLDER, shown
from memdb.memory.settings import BUILTIN_KINDS, FACT_KIND, OUTCOMES
from memdb.memory.text import MARKS, compound_parts, identifier_heads, split_words, term_counts, terms_and_words
from memdb.memory.timephrase import (
    TimeWindow,
    day_of,
    find_event_anchor,
    local_day,
    place_after_event,
    read_time_phrases,
    told_within,
)
from memdb.query.archived import ArchivedDigest, ArchivedMatch
from memdb.query.notes import found_note, note_and, noted, nothing_note, quoted, why_matched, withheld_note
from memdb.query.plan import (
    QUESTION_CHARS,
    Archived,
    Matches,
    Query,
    Ranked,
    as_utc,
    check_limit,
    events_of,
    header_passes,
    in_scope,
    recall_window,
    sanitized,
    tag_filters,
    text_terms,
    unsearched,
)
from memdb.query.question import (
    ACRONYM_PLURAL,
    ACT_FAMILIES,
    ACT_TERMS,
    FACT_WORDS,
    FAILING,
    HOW_IT_WENT,
    KIND_WORDS,
    NEGATED_OUTCOME,
    OUTCOME_WORDS,
    QUESTION_FORMS,
    QUESTION_WORDS,
    TALK,
    TALKED_ABOUT,
    WENT_WELL,
    act_kinds,
    asks_yes_or_no,
    compound_heads,
    kind_asked,
    kinds_named,
    letter_names,
    name_terms,
    one_word,
    order_asked,
    readable_question,
    tag_form,
    terms_of_word,
    word_forms,
)
from memdb.query.rank import (
    BY_RELEVANCE,
    K1,
    NAME_WEIGHT,
    NO_HITS,
    TEXT_LEVEL,
    WEEK_US,
    B,
    Hits,
    Hot,
    KernelHits,
    RangeColumn,
    bm25_term,
    bounded_by_recency,
)
from memdb.query.results import History, Hit, Interpretation, RecallResult

__all__ = ["OwnerQueries"]

_PROBE = 1024
_READ_WHOLE = 2  # up to this many times the limit, a range's matches are ranked by their headers, unbounded
_TailKeys = tuple[str, bytes, bytes]  # a hot match's id, the id's encoded subscript, its header's key
_KEYS_KEPT = 1 << 12  # ranked matches whose keys an owner's queries keep (``_keys_of``): about 350 bytes each
_FEW_SCORES = 32  # up to this many scores, ``_top`` sorts them in Python, for less than C's top_k costs
_DOCS, _TERMS = encode_subscript("docs"), encode_subscript("terms")  # subscripts of an owner's statistics
# What a process keeps of an owner's documents while they stay as they are (TextIndex.memo):
# entries (document frequencies, lists), and the bytes of posting lists: 2 MiB, or 8 bytes a
# document where that is more. The process keeps the owner's columns anyway (21 bytes a document,
# TextIndex.chunks); a list not kept is read again by every answer that needs it, and at a million
# episodes an empty window's note reads its tag's whole list (0.5 ms for the biggest, 576 KiB):
# the twenty tags benchmarks.bench_query draws hold 3.1 MiB there
_MEMO_ENTRIES = 1 << 14
_MEMO_LIST_BYTES = 2 << 20
_MEMO_LIST_BYTES_PER_DOC = 8
# An empty window's note counts a tag's matches outside it whole (count_outside: exact) where that
# is cheap, else reads the tag index keys nearest the window, up to 1,001 a side: 0.4-0.7 ms a
# note at 1,000,000 episodes (benchmarks.bench_query's data, 1.7-hour windows). One list without
# an outcome is counted from its blocks' headers where its documents' chunks lie wholly on one
# side of the window, so its cost follows the blocks that straddle, not its length: the biggest
# tag at 1M (576 KiB, 274,617 postings) takes 0.2 ms in C (26 ms in the twin, which reads every
# header). When every block straddles (times shuffled against document numbers: a history
# imported out of order) C decodes them all, 12.8 ms for that tag, hence a limit. Lists merged,
# or read with an outcome, are decoded whole, and with an outcome every match's record is looked
# up: 7.7 ms for that tag (2.7 ms at 129 KiB), so past _MERGED_BYTES the keys are read when one
# index range holds the matches; when none does (several tags) counting is always the cheaper:
# 4.5-8.8 ms at 1M for two top tags, where looking at the first 1,000 matches of all time (what
# is left) took 0.15-1.0 s.
# The twin counts the same lists, so its notes are C's (DESIGN 6b: identical answers), at about
# 2.3 us a decoded posting: it is for machines without a compiler, not for speed
_COUNTED_BYTES = 1 << 20
_MERGED_BYTES = 128 << 10
_LIST, _LIST_BYTES, _PARAMS = ("list",), ("list bytes",), ("params",)  # memo keys beside the terms' and statistics'
_LIST_ROOM = ("list room",)  # the bytes of lists the memo keeps (_MEMO_LIST_BYTES_PER_DOC)
_LIST_SIZE = ("list size",)  # a tag list's stored size (_list_bytes)
_TAGS, _TAG_STARTS, _KINDS = ("tags",), ("tag starts",), ("kinds",)
_TAGS_LISTED = 64  # an owner's tags ask lists at once, when it has no more (else one seek per phrase)
_LESSONS_READ = 256  # records ``failure_lessons`` reads a round trip, looking for lessons past those without one
_LESSONS_KEPT = 50  # distinct lessons a history keeps, newest first: 1,500 made an MCP answer of 68,000 characters
_EVENTS_READ = 1_000  # matches of an event's words read to find the newest ("after the deploy")
_DAY_US = 86_400 * 1_000_000
_EVENT_NUMBER = re.compile(r"v?\d[\w.-]*", re.IGNORECASE)  # "42", "2.4", "2.4-rc1", "v2": a number in an event's words
_NEWEST = re.compile(r"^((?:the|my|our|your|his|her|their)\s+)(?:very\s+)?(?:last|latest|most\s+recent)\s+(?=[^\W\d_])", re.IGNORECASE)
"""A word after an event's determiner that says what finding it does anyway: the newest."""
_EVENT_SPANS = (_DAY_US, 7 * _DAY_US, 31 * _DAY_US, 366 * _DAY_US, 3653 * _DAY_US, None)  # back from now
_EARLIEST_US, _LATEST_US = -(2**62), 2**62  # bounds of a halving over all time (times are int64 microseconds)
# a word said not to have happened: "no hire", "did not deploy", "never shipped", "wasn't merged"
_NEGATED = re.compile(
    rf"\b(?:no|not|never|without|cannot|[a-z]+n['’]t)\s+(?:(?:been|be|yet|a|an|the)\s+)?(?P<word>[^\W\d_](?:[\w'’-]|[{MARKS}])*)",
    re.IGNORECASE,
)
_EVER = re.compile(r"\bever\b", re.IGNORECASE)  # "did we ever...", "have we ever...": at any time, the archived too
_ARCHIVED_DL = 0  # an archived match's document length: unknown, so BM25 takes the average (``_bm25``)
_DIGESTED = 20_000  # archived memories an owner may have for their digest to be kept (about 0.5 KB each)
_DIGESTS_KEPT = 200_000  # archived memories a process keeps digests of, over all owners (``Layout.digests``)
_JOINED = re.compile(r"[-_.]")  # what joins an identifier's parts (``memdb.memory.text``)
# a question's words and the marks that join a tag's (a letter's combining marks stay on it: split
# at them, "सर्वर", "ฐานข้อมูล" and a decomposed "café" were searched as pieces and answered nothing)
_QUESTION_WORD = re.compile(f"(?:[\\w#+./:-]|[{MARKS}])+")
_LETTER = f"[^\\W_]|[{MARKS}]"  # a letter of a word, or a mark on one: where a name written in a text does not end
_LETTERS_DIGITS = re.compile(r"([^\W\d_]+)-?(\d+)")  # "sha256", "sha-256": a name and its number


def _other_spelling(term: str) -> str | None:
    """A name and its number written the other way, joined or apart ("sha256" <-> "sha-256",
    "web-02" <-> "web02"), or None for a term of another shape."""
    m = _LETTERS_DIGITS.fullmatch(term)
    if m is None:
        return None
    return f"{m[1]}{m[2]}" if "-" in term else f"{m[1]}-{m[2]}"


# The kernel's score with BM25 alone (SearchParams): what finds the best BM25 among the matches a
# filter it cannot apply keeps (``_filtered_best``)
_BY_TEXT: dict[str, float] = {"text_level": 0.0, "text_weight": 1.0, "recency_weight": 0.0, "boost": 0.0}
Passing = Callable[[Any, Sequence[tuple[bytes, int]]], list[bool]]
"""A check of a query's filters the search kernel cannot apply: whether each (tail, code) passes,
read in one snapshot ``txn``."""
_FIRST_PAGE = 32  # the kernel's first top k past the limit, when a filter is applied to its candidates
# Whether prepare's recalls and failure_lessons rank from the kernel's pages (``_ranked_top``); the
# tests turn it off to compare with ranking every match (tests/governance/test_prepare_pages.py)
_KERNEL_PAGES = True
# Whether a paged query ranks every match instead where that costs less (``_drives_better``); the
# tests turn it off so that their small corpora are ranked from pages
_DRIVES = True
_ORDERED_READ = 10_000  # matches put in time order at most ("the last three deploys"); past it, ranked as usual


_log = logger(__name__)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _timed(query: Callable[Concatenate[OwnerQueries, _P], _R]) -> Callable[Concatenate[OwnerQueries, _P], _R]:
    """Log a query slower than the ``slow_query_ms`` setting: which one, whose, how long; never
    its question, words or results (memdb.engine.log)."""

    @wraps(query)
    def timed(self: OwnerQueries, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        started = time.perf_counter()
        result = query(self, *args, **kwargs)
        _log_if_slow(self, query.__name__, started)
        return result

    return timed


def _log_if_slow(queries: OwnerQueries, name: str, started: float) -> None:
    """``_timed``'s log of a query begun at ``started`` (``time.perf_counter``), if it was slow."""
    ms = (time.perf_counter() - started) * 1000
    threshold = queries._layer.settings.slow_query_ms
    if ms > threshold:
        _log.warning("slow %s for owner %r: %.0f ms (slow_query_ms %g)", name, queries.name, ms, threshold)


class OwnerQueries:
    """The query layer for one owner: ``recall``, ``ask`` and ``history`` over that owner's
    indexes only (every index key starts with the owner)."""

    def __init__(self, layer: Episodes, owner: str) -> None:
        self._layer = layer
        self._layout = layer.layout
        self._space = layer.space
        self.name = owner
        # the key of the owner's archived counter (_archived_counted), set here: an attribute added
        # later (a cached_property) made every attribute of the instance a dict lookup (+6k
        # instructions an empty recall)
        self._archived_key = layer.layout.stats.key((owner, "archived"))
        # a ranked match's keys, remembered (``_keys_of``, ``_record_keys``): its index tail -> (its
        # id, the id's encoded subscript, its header's key), and that subscript -> its record's key
        self._tail_keys: dict[bytes, _TailKeys] = {}
        self._record_key_of: dict[bytes, bytes] = {}
        # owner "kim": "kim"; owner "bot-7": "bot", "7" and the identifier "bot-7", as a question names it
        self._own_terms = frozenset(term_counts(owner))

    def __repr__(self) -> str:
        return f"<OwnerQueries {self.name!r}>"

    # --- public API ---------------------------------------------------------------------------

    def recall(
        self,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        tags: Iterable[str] = (),
        any_tags: Iterable[str] = (),
        text: str | None = None,
        kind: str | None = None,
        outcome: str | None = None,
        session: str | None = None,
        limit: int = 5,
        now: dt.datetime | None = None,
        include_archived: bool = False,
        *,
        include_superseded: bool = False,
        include_told: bool = False,
        offset: int = 0,
        with_outcome: bool = False,
        scope_tags: Iterable[str] = (),
        access: bool = True,
    ) -> RecallResult:
        """Episodes matching every filter given, best first (see the module docstring for ranking),
        after the ``offset`` best (a page: only the episodes returned count as accessed; none
        with ``access=False``, for a caller that shows only some of them and counts those).

        ``tags`` must all be present, ``any_tags`` at least one; ``text`` needs at least one
        of its terms; ``since`` is inclusive and ``until`` exclusive. Archived episodes match
        through their one-line summary only when ``include_archived`` (``restore`` brings
        back the full record); superseded versions, whole, only when ``include_superseded``.
        With ``include_told`` (``ask`` always), the window also holds the episodes recorded
        outside it whose text tells of a time within it: "the deploy failed yesterday",
        recorded on July 2, is in July 1's window.

        ``with_outcome`` keeps the memories that carry an outcome (attempts; ``prepare`` asks for
        these, where the best matches of any kind were chat about the task); ``scope_tags`` leaves
        out a memory whose tags are all others (one without tags stays), as ``prepare`` scopes
        a task given tags. Both filter before the limit, so no match of theirs is crowded out.
        """
        # timed here as _timed times the others: its wrapper's forwarding of these 17 parameters
        # through *args and **kwargs cost 0.5 us, a hundredth of a small recall
        started = time.perf_counter()
        interp, nothing = self._recall_interp(
            text, any_tags, kind, include_archived, with_outcome, scope_tags,
            since=since, until=until, tags=tags, outcome=outcome, session=session,
            include_superseded=include_superseded, include_told=include_told, refuse_withheld=False,
        )  # fmt: skip
        if nothing:  # a tag filter of personal data or a secret: no memory is found by it, none stands in
            _check_page(limit, offset)  # refused as with any other tag (test_a_withheld_tag_refuses_a_bad_page)
            result = RecallResult(False, [], interp, 0, withheld_note(interp, tags=True))
        else:
            result = self._run(interp, limit, now, offset, access=access)
        _log_if_slow(self, "recall", started)
        return result

    @_timed
    def recall_memories(
        self,
        text: str | None = None,
        any_tags: Iterable[str] = (),
        kind: str | None = None,
        limit: int = 5,
        now: dt.datetime | None = None,
        *,
        include_archived: bool = False,
        with_outcome: bool = False,
        scope_tags: Iterable[str] = (),
    ) -> list[Hit]:
        """``recall``'s memories alone, without its total or note (what ``prepare`` reads): a
        filter the search kernel cannot count (kind, scope tags, any of several tags) is then
        applied to its ranked pages (``_ranked_top``), where ``recall`` filters every match of
        the words. The memories returned count as accessed."""
        check_limit(limit)
        interp, nothing = self._recall_interp(text, any_tags, kind, include_archived, with_outcome, scope_tags, refuse_withheld=False)
        if nothing or (interp.withheld and not interp.terms):  # any of its words may match, and none can (prepare's task of an address)
            return []
        at = utc(now, "now") if now is not None else self._layer.now()
        with self._space.snapshot():
            q = self._compile(interp)
            if not (_KERNEL_PAGES and self._pageable(q)):
                return self._run(interp, limit, at).memories
            memories = self._memories(self._ranked_top(q, limit, at, {}))
        if memories:
            self._layer.tracker.touch(self.name, [m.id for m in memories], at)
        return memories

    def _recall_interp(
        self,
        text: str | None,
        any_tags: Iterable[str],
        kind: str | None,
        include_archived: bool,
        with_outcome: bool,
        scope_tags: Iterable[str],
        *,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        tags: Iterable[str] = (),
        outcome: str | None = None,
        session: str | None = None,
        include_superseded: bool = False,
        include_told: bool = False,
        refuse_withheld: bool = True,
    ) -> tuple[Interpretation, bool]:
        """What ``recall`` asks, checked: its window, tags, words and filters, and whether nothing
        can match. Personal data and secrets in ``text`` are left out (``withheld``): any of its
        words may match, and such a value matches nothing; a text of them alone is refused, as
        one of stopwords is, unless ``refuse_withheld`` is off. A tag filter of them is left out
        too (``withheld_tags``), and nothing can match where a tag it needs was (``tag_filters``)."""
        found, withheld = text_terms(text, self._layer.sanitizer, refuse_withheld=refuse_withheld)
        filters = tag_filters(self._layer.sanitizer, tags=tags, any_tags=any_tags, scope_tags=scope_tags, after=withheld)
        terms = self._identifiers_asked(found, include_archived) if found else found
        named: tuple[str, ...] = ()
        if terms:  # (the memo is the owner's stamps read: none for a recall without words)
            memo = self._layout.text.memo(self.name)
            named = tuple(t for t, w in terms.items() if (f := tag_form(w)) is not None and self._has_tag(memo, f))
        interp = Interpretation(
            tag_name_terms=named,
            window=recall_window(since, until),
            tags=filters.tags,
            any_tags=filters.any_tags,
            terms=tuple(terms),
            words=tuple(terms.values()),
            kind=self._check_kind(kind),
            outcome=self._check_outcome(outcome),
            session=session,
            include_archived=include_archived,
            include_superseded=include_superseded,
            told=include_told and (since is not None or until is not None),
            with_outcome=bool(with_outcome),
            scope_tags=filters.scope_tags,
            withheld=withheld,
            withheld_tags=filters.withheld,
            zone=self._layer.settings.timezone,
        )
        return interp, filters.matches_nothing

    @_timed
    def ask(
        self,
        question: str,
        now: dt.datetime | None = None,
        limit: int = 5,
        *,
        include_archived: bool = False,
        include_superseded: bool = False,
        offset: int = 0,
    ) -> RecallResult:
        """Answer a plain-language question: time phrases become a window, known tags become
        tag filters, outcome words an outcome filter, preference words ("prefer", "facts") the
        owner's facts, and the rest ranks by text; archived episodes match through what stays
        hot of them when ``include_archived``, superseded versions when ``include_superseded``.
        ``offset`` skips that many of the ranked matches (a page of an answer), as recall's.

        The question is read sanitized, as capture would store it: personal data and secrets in it
        are never searched, nor echoed. The other words and tags answer, labelled partial, the
        reading naming the placeholder; a question left with neither is answered with nothing, as
        a name no memory holds is (``withheld_note``; tests/query/test_withheld.py)."""
        if not isinstance(question, str) or not question.strip():
            raise ValidationError(f"question {shown(question)}: ask something")
        if len(question) > QUESTION_CHARS:  # before any work: a 5 MB question took 22 s
            raise ValidationError(f"question of {len(question):,} characters: at most {QUESTION_CHARS:,} (ask about one thing)")
        question, marks = sanitized(self._layer.sanitizer, question, "question")
        at = utc(now, "now") if now is not None else self._layer.now()
        # the question is read against the snapshot it is answered in (one view, one read transaction)
        read = partial(self._interpret, question, at, include_archived, include_superseded, marks)
        return self._run(read, limit, at, offset, widen_tags=True, asked=True)

    def _records_outcomes(self, kinds: Iterable[str]) -> bool:
        """Whether the owner keeps memories with an outcome: hot ones of a typed kind, or any
        archived memory (only its header says its kind; counting it keeps the filter). Kept in
        ``TextIndex.memo`` (archiving rewrites a column, so a new stamp drops it)."""
        kinds = tuple(kinds)
        memo = self._layout.text.memo(self.name)
        return _remembered(
            memo,
            ("records outcomes", *kinds),
            lambda: any(self._keeps_kind(k) for k in kinds) or bool(self._layout.stats.get((self.name, "archived"), 0)),
        )

    def _interpret(
        self, question: str, at: dt.datetime, include_archived: bool, include_superseded: bool, marks: tuple[str, ...] = ()
    ) -> Interpretation:
        """What ``ask`` makes of a question (sanitized: ``sanitized``, whose withheld values are
        ``marks``): its window, tags, kind, outcome and words."""
        asked = readable_question(question)  # "ｌａｓｔ ｗｅｅｋ" is "last week"; "怎么样了" asks
        withheld = tuple(dict.fromkeys((*(m.group() for m in PLACEHOLDER.finditer(asked)), *marks)))
        # a placeholder is read as no word: "<CARD_1>" named the tag "card-1" capture makes of a card
        question = unsearched(asked, withheld) if withheld else asked
        settings = self._layer.settings
        anchored = self._event_window(question, at, include_superseded)
        if anchored is None:
            # an event no memory places ("since the outage" of an owner with no outage) is its
            # words, as "after the outage" is: read as a time phrase, it was ignored, and the
            # answer was everything (test_an_event_no_memory_holds_reads_as_words)
            text = question
            unplaced = find_event_anchor(question, at, settings.week_starts_on, settings.timezone)
            if unplaced is not None:
                start, end = unplaced.span
                words = " ".join(filter(None, (unplaced.event, unplaced.end_event)))
                text = f"{question[:start]} {words} {question[end:]}"
            window, rest, ignored = read_time_phrases(text, at, settings.week_starts_on, settings.timezone)
            anchor = ""
        else:  # "what happened after the outage?": a query holds one window, so another phrase is ignored
            window, rest, anchor = anchored
            other = find_event_anchor(rest, at, settings.week_starts_on, settings.timezone)
            if other is not None:
                rest = rest[: other.span[0]] + rest[other.span[1] :]
            second, rest, ignored = read_time_phrases(rest, at, settings.week_starts_on, settings.timezone)
            ignored = (*((other.phrase,) if other else ()), *((second.phrase,) if second else ()), *ignored)
        order, count, rest, verb = order_asked(rest)
        rest = TALKED_ABOUT.sub(r"\g<about>", rest) if any(w in rest for w in ("about", " of ", " to ", " with ")) else rest
        written = rest  # as written: the tags' lookup gives the rest back as words ("didn t")
        tags, rest = self._known_tags_in(rest, include_archived)
        pairs = self._identifiers_asked(terms_and_words(rest), include_archived)
        kinds = set(self._layer.settings.typed_kinds)
        # an outcome word filters by outcome only where the owner keeps memories that carry one:
        # of an owner who records conversations alone, "a successful business" is words
        # (test_an_outcome_word_is_a_word_where_no_memory_has_an_outcome)
        outcome = next((OUTCOME_WORDS[w] for w in pairs.values() if w in OUTCOME_WORDS), None)
        folded = written.lower()
        how = HOW_IT_WENT.search(written) if outcome is None and ("go" in folded or "went" in folded) else None  # "went well"
        if how is not None:
            outcome = "success" if how.group("how").lower() in WENT_WELL else "failure"
        negated = NEGATED_OUTCOME.search(written)
        if negated is not None:  # "which deploys didn't fail?", "what never worked?": the other outcome
            outcome = "success" if negated.group("word").lower() in FAILING else "failure"
        if outcome is not None and not self._records_outcomes(kinds):
            outcome = how = negated = None
        # a kind's name filters by kind only where the owner keeps memories of that kind: elsewhere
        # it is a word ("what did Ana research?" of an owner who records no research episodes)
        named = {w: k for w, k in kinds_named(rest, self._layer.settings.typed_kinds).items() if self._keeps_kind(k)}
        kind = next(iter(named.values()), None)  # "any escalations this week?" of kind "escalation"
        acted = ""
        if order:
            # "When did we first source from LinkedIn?": the act an ordered question asks the time
            # of is the kind it shares a term with (kind "sourcing"; "debugging" names "debug" here,
            # where elsewhere it may be what a memory says; "pay", kind "payment"). The verb after
            # "last" wins over a kind its object names: "when did Acme last pay an invoice?" asks
            # for a payment, and "invoice" only says what was paid
            acts = act_kinds(tuple(k for k in self._layer.settings.typed_kinds if self._keeps_kind(k)))
            verb_term = terms_of_word(verb)[:1] if verb else ()
            if verb_term and verb_term[0] in acts:  # (only the verb: "get the design reviewed" is no review)
                acted, kind = verb.lower(), acts[verb_term[0]]
        if kind is None and not KIND_WORDS.keys().isdisjoint(pairs.values()):
            kind = kind_asked(written, self._keeps_kind)  # "what tools did I use yesterday?"
        if kind is None and not FACT_WORDS.isdisjoint(pairs.values()) and self._keeps_kind(FACT_KIND):
            kind = FACT_KIND  # "what does Ana prefer?": the owner's facts, about whatever words remain
        dropped = FACT_WORDS if kind == FACT_KIND else frozenset()
        dropped |= OUTCOME_WORDS.keys() if outcome else frozenset()
        dropped |= {how.group("how").lower()} if how is not None else frozenset()
        dropped |= {negated.group("word").lower(), "never", "not"} if negated is not None and outcome else frozenset()
        compound = compound_heads(written)
        if kind in KIND_WORDS.values():  # the words that named it, and "calls" of "tool calls"
            dropped |= {w for w, k in KIND_WORDS.items() if k == kind} | ({"call", "calls"} if kind == "tool_call" else set())
        dropped |= {w for w, k in named.items() if k == kind or acted} | ({acted} if acted else set())
        # a name is never a way of asking: "Have we talked to Jane Doe?" is about Doe, though "does"
        # makes the term "doe" (test_a_name_is_no_question_word)
        asking = [w for t, w in pairs.items() if t in QUESTION_WORDS]
        # (a question word written capitalised past the start, or in capitals, may be a name)
        capitalised = any(w[:1].upper() + w[1:] in question[1:] or w.upper() in question for w in asking)
        named_words = name_terms(question) if capitalised else {}
        kept = {
            t: w
            for t, w in pairs.items()
            if (t not in QUESTION_WORDS or t in compound or t in named_words) and w not in dropped and w not in QUESTION_FORMS
        }
        tag_as_word = False
        if not self._own_terms.isdisjoint(kept):
            kept = self._without_own_name(kept, question)
        if not kept and not (tags or kind or outcome or anchor or order):
            # "What did we decide?" asks of the memories that say they decided, where some do, in a
            # window too where some of it do ("what did we decide in February?" answered all of
            # February: a year-of-use probe's find); a question word alone asks of everything
            acts = {t: w for t, w in pairs.items() if t in ACT_TERMS and w.lower() not in dropped}
            acts |= {t: w for family in ACT_FAMILIES if not family.keys().isdisjoint(acts) for t, w in family.items() if t not in acts}
            kept = {t: acts[t] for t in acts if t not in self._unheld(acts)}
            if kept and window is not None and not self._held_in(window, tuple(kept)):
                kept = {}  # "what did we discuss last week?" of a week whose memories say no such thing: all of them
        elif not kept and len(tags) == 1 and not (window or outcome or anchor) and one_word(tags[0]):
            # "What did we learn about pgbouncer?", "any incidents involving postgres?" ask of the
            # memories (of the kind) that name it, tagged or not (the tag adds 0.1 to the score); a tag of
            # several words ("project-x") filters, as memories saying "project" are not about Project X
            kept = dict.fromkeys(terms_of_word(tags[0]), tags[0])
            tag_as_word = True
        kept = self._singular_where_held(kept, question)  # "Any SEV1s last week?" of memories tagged "sev1"
        terms = tuple(kept)
        # A named tag filters when nothing but structure is asked ("what happened with Project
        # X?", "debug failures on deploy"). With other words left, memories with the tag or with
        # the words both match and the tag ranks: a tag the question merely mentions (a person's
        # name, say) cannot hide the memory the words point to, and words no memory holds
        # ("what did we try on X") cannot hide the tagged ones.
        boost = tuple(tags) if terms and tags and (tag_as_word or not (kind or outcome)) else ()
        # No padding (DESIGN 6): a word no memory holds is named; a name no memory holds empties
        # the answer, since memories about other things would only stand in for it.
        unmatched = {t: kept[t] for t in self._unheld(kept)}
        names = name_terms(question) if unmatched else {}  # as written: sentence starts and capitals are in the question itself
        # an identifier is a name whatever its case ("what happened with inv-2026-0099?"): one no
        # memory holds whole is named, not stood in for by the memories that share a part of it
        missing = tuple(dict.fromkeys(names[t] if t in names else w for t, w in unmatched.items() if t in names or compound_parts(t)))
        missing += self._letter_names_missing(question, kept, tags)
        # the tags' own words rank as text too (capture indexes tags with the text)
        rank_terms = tuple(dict.fromkeys(t for tag in boost for t in terms_of_word(tag) if t not in kept))
        if kept:
            # question words ("show", "remember", "year") match nothing, as they say how a thing is
            # asked more than what it is; where a memory holds one ("my cooking show"), it ranks
            rank_terms += tuple(t for t in pairs if t in QUESTION_WORDS and t not in kept and t not in rank_terms)
        return Interpretation(
            window=window,
            tags=() if boost else tuple(tags),
            boost_tags=boost,
            rank_terms=rank_terms,
            terms=terms,
            words=tuple(kept.values()),
            # words left beside a kind or an outcome still filter: "billing failures" are failures
            # about billing, never failures padded in for want of any (DESIGN: ask never pads)
            terms_required=not (tags and not boost),
            kind=kind,
            outcome=outcome,
            question=asked,
            withheld=withheld,
            # "when did Leo first take a quiz?": forgetting never erases experience, and the first
            # quiz is as likely archived as not (its time, kind, outcome and one-liner stay hot);
            # "did we ever interview Kenji?" asks of any time, the forgotten too
            include_archived=include_archived or bool(order) or _EVER.search(question) is not None,
            include_superseded=include_superseded,
            unmatched=tuple(unmatched.values()),
            missing_names=missing,
            ignored=ignored,
            told=window is not None,
            anchor=anchor,
            order=order,
            count=count,
        )

    def _singular_where_held(self, kept: dict[str, str], question: str) -> dict[str, str]:
        """``kept`` with each plural term no memory holds made singular where a memory holds the
        singular: an identifier's ("SEV1s", "P0s") or an acronym's ("PRs", "SLOs"), which the
        stemmer leaves alone. "SEV1s" was the term "sev1s", taken for a name no memory holds, and
        the question about the owner's SEV1 incidents was answered with nothing. The word stays as
        written; other words are the stemmer's ("des", a typo of "does", is not "de")."""
        acronyms = {m.group().lower() for m in ACRONYM_PLURAL.finditer(question)} if "s" in question else set()
        plural = [
            t for t, w in kept.items()
            if len(t) > 2 and t[-1] == "s" and t[-2] != "s" and (any(c.isdigit() for c in t) or w in acronyms)
        ]  # fmt: skip
        unheld = set(self._unheld(plural)) if plural else set()
        if not unheld:
            return kept
        held = {t[:-1] for t in unheld} - set(self._unheld([t[:-1] for t in unheld]))
        return {(t[:-1] if t in unheld and t[:-1] in held else t): w for t, w in kept.items()}

    def _without_own_name(self, kept: dict[str, str], question: str) -> dict[str, str]:
        """``kept`` without the owner's own name where the question writes it as a name and no
        memory holds it: it asks about the owner, whose every memory this is ("What does Kim
        prefer?" of owner "kim" found nothing, for want of a memory saying "Kim")."""
        own = {t: kept[t] for t in kept if t in self._own_terms}
        gone = set(self._unheld(own)) & name_terms(question).keys()
        return {t: w for t, w in kept.items() if t not in gone}

    def _event_window(self, question: str, at: dt.datetime, include_superseded: bool) -> tuple[TimeWindow, str, str] | None:
        """The window a question gives by an event ("after the outage", "the day before the v2.4
        release"), placed at the newest memory with an outcome holding everything the event's
        words ask (its tags, words, kind, outcome); with the rest of the question and what the
        window was anchored to. None without such a phrase, or where no such memory matches the
        event: the words are then read as usual, so a missing event is named like any missing word."""
        settings = self._layer.settings
        anchor = find_event_anchor(question, at, settings.week_starts_on, settings.timezone)
        if anchor is None or not self._records_outcomes(settings.typed_kinds):
            return None  # (an owner who keeps conversations alone has no events to place a time by)
        first = self._event_moment(anchor.event, at, include_superseded)
        last = self._event_moment(anchor.end_event, at, include_superseded) if anchor.end_event else None
        if first is None or (anchor.end_event and last is None):
            return None
        window = place_after_event(
            anchor, from_micros(first[0]), at, settings.week_starts_on, settings.timezone, from_micros(last[0]) if last else None
        )
        if window is None:
            return None  # a range that ends before it starts: the words are read as words
        named = "; ".join(self._event_named(moment, window.zone) for moment in (first, last) if moment is not None)
        start, end = anchor.span
        return window, question[:start] + question[end:], named

    def _event_named(self, moment: tuple[int, str, str, int, bool], zone: dt.tzinfo) -> str:
        """What the interpretation says of an event: its words, its memory's summary, its time."""
        ts_us, words, summary, n, capped = moment
        local = from_micros(ts_us).astimezone(zone)
        shown_summary = summary if len(summary) <= 60 else summary[:59].rstrip() + "…"
        among = f", the newest of {'at least ' if capped else ''}{n} matching" if n > 1 else ""
        return f"{words} = {shown_summary!r} of {day_of(local)} {local:%H:%M}{among}"

    def _event_moment(self, words: str, at: dt.datetime, include_superseded: bool) -> tuple[int, str, str, int, bool] | None:
        """The newest memory with an outcome holding everything ``words`` ask (``_newest_event``):
        (its time, the words, its summary, how many such memories were read, whether more may be).
        Archived memories count: archiving keeps an episode's time, kind, outcome, tags and
        one-liner hot, and last March's outage is still the newest outage once it is forgotten."""
        # "the last sprint" is the newest sprint, as "the sprint" is ("last sprint" alone is a
        # period no calendar places: read as such it anchored nothing)
        event = self._interpret(_NEWEST.sub(r"\1", words, 1), at, True, include_superseded)
        every = replace(event, tags=event.tags + event.boost_tags, boost_tags=(), rank_terms=(), terms_required=True)
        q = self._compile(every)
        if every.unmatched:  # words only archived one-liners hold match them
            every = self._matched_in_cold(every, q)
        if every.window or every.unmatched or not (every.tags or every.terms or every.kind or every.outcome):
            return None
        # a number names the event whole: "release 2" is no "release 2.4-rc1", "v2.4" no "v2.4.1"
        numbers = tuple(w for w in words.split() if _EVENT_NUMBER.fullmatch(w))
        newest = self._newest_event(q, ts_micros(at), numbers)
        if newest is None:
            return None
        (ts_us, eid), n, capped = newest
        header = self._layout.states.get((self.name, eid)) or {}
        record = self._layout.record_of(self.name, eid) if header.get("status") != "archived" else None
        summary = str((record or {}).get("summary") or header.get("one_line") or eid)
        return ts_us, words, summary, n, capped

    def _newest_event(self, q: Query, now_us: int, numbers: Sequence[str] = ()) -> tuple[tuple[int, str], int, bool] | None:
        """The newest match of ``q`` with an outcome and every word of it, as (ts, id), with how
        many such matches the read that found it held and whether there may be more.

        Matches are read back from now a span at a time (the last day, week, month, year, decade,
        then all time), each read whole if it holds at most ``_EVENTS_READ``: the first span
        holding one holds the newest. A span holding more is halved, its later half read first,
        until a part is read whole, so the newest of any number is found (reads grow with the
        matches newer than it that are no such memory, over ``_EVENTS_READ``).

        Every word: "the v2.4 release" is no release of v2.6, as history counts attempts. Only
        memories with an outcome: a typed episode is recorded as the thing happens, an exchange
        is talk, recorded when it was said (of a race run last week, or of a plan): ``events_of``."""

        def read(lo: int | None, hi: int | None) -> tuple[list[tuple[int, str]], bool]:
            found = self._matches(replace(q, lo=lo, hi=hi), cap=_EVENTS_READ)
            moments = sorted(((ts, eid) for ts, eid, *_ in events_of(q, found)), reverse=True)
            # newest first, from the first that says the words itself: a plan in its decisions
            # ({"next": "onsite"}) is no onsite (test_an_event_is_what_a_memory_says_happened)
            first = next((i for i, (_, eid) in enumerate(moments) if self._says(eid, q.terms, numbers)), len(moments))
            return moments[first:], len(found.hot) >= _EVENTS_READ

        def newest_in(lo: int, hi: int) -> tuple[tuple[int, str], int] | None:
            moments, more = read(lo, hi)
            if not more or hi - lo <= 1:  # (more than a read within a microsecond: the newest of those read)
                return (max(moments), len(moments)) if moments else None
            mid = (lo + hi) // 2
            return newest_in(mid, hi) or newest_in(lo, mid)

        hi: int | None = None  # nothing such lies at or after it
        for span in _EVENT_SPANS:
            lo = now_us - span if span is not None else None
            moments, more = read(lo, hi)
            if more:
                found = newest_in(lo if lo is not None else _EARLIEST_US, hi if hi is not None else _LATEST_US)
                if found is not None:
                    return found[0], found[1], True
            elif moments:
                return max(moments), len(moments), lo is not None or hi is not None
            if lo is None:
                return None
            hi = lo
        return None

    def _says(self, eid: str, terms: Sequence[str], numbers: Sequence[str] = ()) -> bool:
        """Whether a memory holds ``terms`` in what it says happened, its decisions aside, and
        writes each of ``numbers`` whole (not as the start of a longer version)."""
        if not terms and not numbers:
            return True
        h = self._layout.states.get((self.name, eid))
        if h is None:
            return False
        text = self._text_of(eid, h, decisions=False)
        if not set(terms) <= term_counts(text).keys():
            return False
        return all(re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-]|\.\w)", text, re.IGNORECASE) for n in numbers)

    def _text_of(self, eid: str, h: Mapping[str, Any], decisions: bool = True) -> str:
        """What a memory's words are read from: a hot record's indexed text, an archived one's
        header (``archived_words``); without its decisions' words if not ``decisions``."""
        record = self._layout.record_of(self.name, eid) if h.get("status") != "archived" else None
        if record is not None:
            return indexed_text(record, decisions=decisions)
        return archived_words(h if decisions else {**h, "decided": ""})

    @_timed
    def history(
        self,
        kind: str | None = None,
        tags: Iterable[str] = (),
        text: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        limit: int = 10,
        *,
        include_superseded: bool = False,
    ) -> History:
        """Past attempts at this kind of task: counts by outcome, latest attempts and lessons.

        Archived attempts count too, from what archiving keeps hot (kind, outcome, tags, time,
        the one-liner and the lesson), and are marked as archived: forgetting never erases
        experience (DESIGN 5), so "the third time you tried this" stays true. An attempt
        counts once, as its current version; ``include_superseded`` lists the versions it
        replaced among the attempts too (``History.superseded`` says how many), uncounted. Without
        a ``kind``, the attempts are the memories that carry an outcome: a chat message that
        mentions the deploy is no attempt at it (``kind="exchange"`` counts those)."""
        check_limit(limit)
        found_terms, withheld = text_terms(text, self._layer.sanitizer)
        filters = tag_filters(self._layer.sanitizer, tags=tags, after=withheld)
        terms = self._identifiers_asked(found_terms, True)  # an archived attempt counts too
        with self._space.snapshot():
            unmatched = tuple(w for t, w in terms.items() if not self._layout.doc_freq.get((self.name, t), 0))
        interp = Interpretation(
            window=recall_window(since, until),
            tags=filters.tags,
            terms=tuple(terms),
            words=tuple(terms.values()),
            kind=self._check_kind(kind),
            all_terms=True,
            unmatched=unmatched,
            include_superseded=include_superseded,
            zone=self._layer.settings.timezone,
            withheld=withheld,
            withheld_tags=filters.withheld,
        )
        if withheld or filters.withheld:  # every word and tag must match, and no memory holds personal data or a secret as written
            return History({o: 0 for o in OUTCOMES}, [], [], interp)
        q = self._compile(interp)
        with self._space.snapshot():
            # an attempt at "twilio webhook retry" holds all three words: counting one that holds
            # only "retry" would pad the count with unrelated work
            attempt = q.kind is not None  # else: a memory with an outcome (its code's low bits)
            hot = [m for m in self._matches(q).hot if all(t in m[2] for t in q.terms) and (attempt or m[1] & 3)]
            archived = [a for a in self._archived_matches(q, None) if all(t in a[2] for t in q.terms) and (attempt or a[1].get("outcome"))]
            counts = Counter(OUTCOME_OF_CODE[code & 3] or "none" for _, code, _ in hot)
            counts.update(h.get("outcome") or "none" for _, h, _ in archived)
            unsearched = self._archived_unsearched(q, attempt, {eid for eid, _, _ in archived}) if q.terms else 0
            # newest first, hot and archived together: (ts_us, id) orders both
            found: list[tuple[int, str, dict[str, Any] | None]] = [(tail_ts(tail), tail_id(tail), None) for tail, _, _ in hot]
            found += [(ts_micros(h["ts"]), eid, h) for eid, h, _ in archived]
            superseded = []
            if q.include_superseded:  # listed beside the attempts, never counted as attempts again
                superseded = [
                    a for a in self._superseded_matches(q, None) if all(t in a[2] for t in q.terms) and (attempt or a[1].get("outcome"))
                ]
                found += [(ts_micros(h["ts"]), eid, h) for eid, h, _ in superseded]
            found.sort(key=lambda f: (f[0], f[1]), reverse=True)
            shown = found[: max(limit, 0)]
            headers = self._headers_of(eid for _, eid, h in shown if h is None)  # one batch: a round trip on PostgreSQL
            chosen = [(eid, h if h is not None else headers.get(eid)) for _, eid, h in shown]
            attempts = self._memories([(eid, h, 0.0, ("history",), None) for eid, h in chosen if h is not None])
            failures = [m for m in attempts if m.episode.outcome == "failure"]
            failed = {tail_id(tail) for tail, code, _ in hot if OUTCOME_OF_CODE[code & 3] == "failure"}
            failed |= {eid for eid, h, _ in archived if h.get("outcome") == "failure"}
            listed = {m.episode.id for m in attempts}
            older = [(eid, h) for _, eid, h in found if eid in failed and eid not in listed]  # newest first
            if not failures and older:  # the last failure is older than the attempts listed: it is said all the same
                eid, h = older[0]
                if (header := h or self._layout.states.get((self.name, eid))) is not None:
                    failures = self._memories([(eid, header, 0.0, ("history",), None)])
            # every failure's lesson, not only the listed attempts': a lesson is never forgotten
            # because routine work followed it (test_history_keeps_the_lessons_of_failures_before_the_attempts_listed)
            lessons = [m.episode.lesson for m in attempts if m.episode.lesson]
            lessons += self._older_lessons(older, set(lessons))
        lessons = list(dict.fromkeys(lessons))[:_LESSONS_KEPT]  # each once, newest first
        ordered = {o: counts.get(o, 0) for o in (*OUTCOMES, "none") if counts.get(o, 0) or o in OUTCOMES}
        return History(
            ordered,
            attempts,
            lessons,
            interp,
            len(hot) + len(archived),
            failures,
            archived=len(archived),
            superseded=len(superseded),
            unsearched=unsearched,
        )

    def _archived_unsearched(self, q: Query, attempt: bool, found: Collection[str]) -> int:
        """How many archived attempts pass ``q``'s filters but its words, besides those ``found``:
        only what stays hot of them was searched for the words, and history never says no memory
        mentions a word their records may hold (test_history_says_archived_attempts_were_searched_by_what_stays_hot).
        From the digest: no header read."""
        rest = replace(q, terms=(), terms_required=False, boost_tags=())
        digest = self._archived_digest()
        if digest is None:
            return sum(1 for eid, h, _ in self._archived_matches(rest, None) if eid not in found and (attempt or h.get("outcome")))
        return sum(1 for i in digest.matches(rest) if digest.ids[i] not in found and (attempt or digest.outcomes[i]))

    @_timed
    def failure_lessons(
        self,
        text: str | None = None,
        tags: Iterable[str] = (),
        kind: str | None = None,
        *,
        limit: int = 5,
        skip: Collection[str] = (),
        now: dt.datetime | None = None,
    ) -> list[Hit]:
        """Failures holding any word of ``text`` or any of ``tags`` (one of other tags only is
        about something else), best first, each holding a lesson no better one holds; archived
        ones too (their lesson stays hot). Read past the failures without a lesson, not from a
        capped list of the best ones: five newer failures without one hid the only lesson of a
        task from ``prepare`` (test_prepare_keeps_a_failure_s_lesson_past_newer_failures).
        ``skip``: ids a caller shows already. The failures returned count as accessed."""
        check_limit(limit)
        at = utc(now, "now") if now is not None else self._layer.now()
        found_terms, withheld = text_terms(text, self._layer.sanitizer, refuse_withheld=False)
        terms = self._identifiers_asked(found_terms, True)
        filters = tag_filters(self._layer.sanitizer, tags=tags, after=withheld, all_required=False)
        scope = filters.tags
        # any word may match, and personal data or a secret matches none; a scope of such tags alone
        # scopes to what none can be found by (dropped, it would scope nothing)
        if (filters.withheld and not scope) or (withheld and not terms and not scope):
            return []
        interp = Interpretation(
            any_tags=() if terms else scope,
            boost_tags=scope if terms else (),  # with words: a tag or a word matches (the tag ranks too)
            terms=tuple(terms),
            words=tuple(terms.values()),
            kind=self._check_kind(kind),
            outcome="failure",
            include_archived=True,
            scope_tags=scope,
        )
        q = self._compile(interp)
        said: set[str] = set()
        kept: list[Ranked] = []
        with self._space.snapshot():
            for page in self._failure_pages(q, limit + len(skip), at) if limit else ():
                ranked = [r for r in page if r[0] not in skip]
                for start in range(0, len(ranked), _LESSONS_READ):
                    chunk = ranked[start : start + _LESSONS_READ]
                    for r, lesson in zip(chunk, self._lessons(chunk), strict=True):
                        if lesson and lesson not in said:
                            said.add(lesson)
                            kept.append(r)
                            if len(kept) >= limit:
                                break
                    if len(kept) >= limit:
                        break
                if len(kept) >= limit:
                    break
            out = self._memories(kept)
        if out:
            self._layer.tracker.touch(self.name, [h.id for h in out], at)
        return out

    def _failure_pages(self, q: Query, first: int, at: dt.datetime) -> Iterator[list[Ranked]]:
        """``q``'s matches best first, in pages each new to the last: the kernel's top ``first``,
        then four times as many at each page (``_ranked_top``), until they are all listed; every
        match ranked at once when the kernel cannot page ``q``."""
        if not (_KERNEL_PAGES and self._pageable(q)):
            found = self._matches(q)
            yield self._rank(q, found, at, found.total)
            return
        memo: dict[str, Any] = {}
        listed: set[str] = set()
        keep = first
        while True:
            ranked = self._ranked_top(q, keep, at, memo)
            yield [r for r in ranked if r[0] not in listed]  # by id: an equal score may move between pages
            listed.update(r[0] for r in ranked)
            if len(ranked) < keep:
                return
            keep *= 4

    def missing_names(self, text: str, now: dt.datetime | None = None) -> tuple[str, ...]:
        """The names ``text`` asks about that no memory holds, archived ones included, as ``ask``
        reads them ("Deploy Project Zeta" of an owner whose memories know Project X): ask answers
        those with nothing, since memories about other things would only stand in for them."""
        return self.read_task(text, now)[0]

    def read_task(self, text: str, now: dt.datetime | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """How ``ask`` reads ``text``: the names no memory holds (``missing_names``) and the
        owner's tags its words name ("the billing api" of an owner tagging billing), for
        ``prepare``, which scopes records by those and the tags given."""
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"text {shown(text)}: give the words to read")
        if len(text) > QUESTION_CHARS:
            raise ValidationError(f"text of {len(text):,} characters: at most {QUESTION_CHARS:,}")
        text, marks = sanitized(self._layer.sanitizer, text, "text")  # its personal data and secrets are no names to say
        at = utc(now, "now") if now is not None else self._layer.now()
        with self._space.snapshot():
            interp = self._interpret(text, at, True, False, marks)
            if interp.missing_names and interp.unmatched:
                interp = self._matched_in_cold(interp, self._compile(interp))
        return interp.missing_names, tuple(dict.fromkeys((*interp.tags, *interp.any_tags, *interp.boost_tags)))

    def _older_lessons(self, failures: list[tuple[str, dict[str, Any] | None]], known: set[str]) -> list[str]:
        """The lessons of ``failures`` (id and header, or None for a hot one; newest first) until
        ``_LESSONS_KEPT`` distinct ones are known with ``known`` (a lesson said again counts once:
        test_history_keeps_fifty_lessons_past_repeated_ones): their records read a batch at a
        time, where a read each made a history of 1,500 attempts 1,497 round trips on PostgreSQL
        (test_history_and_ask_read_candidates_in_batches)."""
        out: list[str] = []
        distinct = set(known)
        for start in range(0, len(failures), _LESSONS_READ):
            if len(distinct) >= _LESSONS_KEPT:
                break
            chunk: list[Ranked] = [(eid, h or {}, 0.0, (), None) for eid, h in failures[start : start + _LESSONS_READ]]
            for lesson in self._lessons(chunk):
                if lesson:
                    out.append(lesson)
                    distinct.add(lesson)
        return out

    def _headers_of(self, eids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The headers of those of ``eids`` that have one, read in one batch (a round trip on
        PostgreSQL); decoded once by their bytes (``_header``: never mutate them)."""
        prefix = self._layout.parent_key(self._layout.states, (self.name,))
        keys = {eid: prefix + encode_subscript(eid) for eid in eids}
        with self._space.reader() as txn:
            raws = txn.get_many(list(keys.values()))
        return {eid: _header(raws[key]) for eid, key in keys.items() if key in raws}

    def _lessons(self, chunk: Sequence[Ranked]) -> list[str | None]:
        """The lessons of ranked attempts, their records read in one batch (a round trip on
        PostgreSQL); an archived one's from its header."""
        keys = self._record_keys(chunk)
        with self._space.reader() as txn:
            raws = txn.get_many(keys)
        return [
            self._lesson_of(r[0], r[1], unpack_value(raw) if (raw := raws.get(key)) is not None else {})
            for key, r in zip(keys, chunk, strict=True)
        ]

    def _lesson_of(self, eid: str, header: Mapping[str, Any] | None, record: Mapping[str, Any] | None = None) -> str | None:
        """An attempt's lesson: in the header an archived one keeps hot, else in its record
        (``record`` where the caller read it already, in a batch)."""
        if header is not None and header.get("status") == "archived":
            return header.get("lesson") or None
        if record is None:
            record = self._layout.record_of(self.name, eid)
        return (record or {}).get("lesson") or None

    # --- planning and execution -----------------------------------------------------------------

    def _check_kind(self, kind: str | None) -> str | None:
        if kind is None:
            return None
        if kind not in self._layer.settings.typed_kinds and kind not in BUILTIN_KINDS:
            known = ", ".join((*self._layer.settings.typed_kinds, *BUILTIN_KINDS))
            raise ValidationError(f"kind {shown(kind)}: not a configured kind ({known})")
        return kind

    @staticmethod
    def _check_outcome(outcome: str | None) -> str | None:
        if outcome is not None and outcome not in OUTCOMES:
            raise ValidationError(f"outcome {shown(outcome)}: must be one of {', '.join(OUTCOMES)}")
        return outcome

    def known_tags(self) -> list[str]:
        """Every tag this owner has used."""
        return [str(t) for t in self._layout.by_tag.children((self.name,))]

    def _known_tags_in(self, text: str, include_archived: bool = False) -> tuple[list[str], str]:
        """Phrases of ``text`` (up to 4 words) that name a known tag, longest first; and the rest.

        An owner with no more tags than the question has words has them listed (a seek each);
        otherwise each phrase costs one seek in the tag index, so an owner with thousands of
        tags pays for the question's length, not for listing them. Only phrases whose first
        word can begin a known tag are tried (``_tag_starts``). What was read is kept while
        the owner's documents stay as they are (``TextIndex.memo``): every episode written or
        taken out changes them, and with them any tag. With ``include_archived``, a tag only
        archived memories carry is known too, from the archived digest (a year of maintain
        archives most tags); without, it would hide the hot memories saying the word. Beside
        another tag, a word names a tag by its singular or stem where its own form is none and
        some memory has both ("billing-api deploys" of tags billing-api and deploy), unless it
        names an outcome or a kind ("billing-api failures"); alone it stays a word ("what tests failed?" of memories
        saying "tests" untagged: test_a_tag_is_named_by_its_plural_and_while_only_archived_memories_carry_it)."""
        memo = self._layout.text.memo(self.name)
        words = _QUESTION_WORD.findall(text)
        known = self._few_tags(memo, len(words)) if words else None  # every tag of the owner, if that few
        digest = self._archived_digest() if words and include_archived and self._has_archived() else None

        def is_tag(tag: str) -> bool:
            return (tag in known[0] if known is not None else self._has_tag(memo, tag)) or (digest is not None and tag in digest.by_tag)

        begins = self._tag_starts(memo, words, known)
        starts = [i for i, may in enumerate(begins) if may or (digest is not None and (f := tag_form(words[i])) and digest.tag_begins(f))]
        used = [False] * len(words)
        found: list[str] = []
        for size in (4, 3, 2, 1):
            for i in starts:
                if i + size > len(words) or any(used[i : i + size]):
                    continue
                tag = tag_form(" ".join(words[i : i + size]))
                if tag is None:
                    continue
                if tag in found or is_tag(tag):
                    found.append(tag)
                    for j in range(i, i + size):
                        used[j] = True
        typed = self._layer.settings.typed_kinds
        for i, word in enumerate(words if found else ()):
            if used[i] or not (forms := _singulars(word)):
                continue
            alt = next((t for t in forms if t in found or is_tag(t)), None)
            if alt is None or word.lower() in OUTCOME_WORDS or kinds_named(word, typed):
                continue
            # only where memories have it with the others: "deploy logs" of no memory tagged both is words
            if alt in found or self._tags_together([*found, alt]):
                found.append(alt)
                used[i] = True
        rest = " ".join(w for w, u in zip(words, used, strict=True) if not u)
        return list(dict.fromkeys(found)), rest

    def _few_tags(self, memo: dict[Any, Any], most: int) -> tuple[frozenset[str], tuple[str, ...]] | None:
        """Every tag of the owner, as a set and in order, when there are at most ``most`` of
        them (one seek each, and one more to see the end); None when there are more. Up to
        ``_TAGS_LISTED`` are read at once and kept in ``memo``, so later questions read none."""
        kept: tuple[int, tuple[frozenset[str], tuple[str, ...]] | None] | None = memo.get(_TAGS)
        if kept is None or (kept[1] is None and kept[0] < most):
            looked = max(most, _TAGS_LISTED)
            parent = self._layout.parent_key(self._layout.by_tag, (self.name,))
            lo, hi = children_range(parent)
            found: list[str] = []
            with self._space.reader() as txn:  # repeated $ORDER in one read: each seek passes a tag's entries
                while (item := txn.first(lo, hi)) is not None:
                    if len(found) == looked:
                        break
                    tag, end = decode_one(item[0], len(parent))
                    found.append(str(tag))
                    lo = item[0][:end] + b"\xff"
                else:
                    kept = memo[_TAGS] = (looked, (frozenset(found), tuple(found)))  # in key order, which is sorted
            if item is not None:
                kept = memo[_TAGS] = (looked, None)
        assert kept is not None
        tags = kept[1]
        return tags if tags is not None and len(tags[1]) <= most else None

    def _keeps_kind(self, kind: str) -> bool:
        """Whether the owner keeps hot memories of ``kind`` (one seek, kept in ``TextIndex.memo``)."""
        memo = self._layout.text.memo(self.name)
        return _remembered(memo, (*_KINDS, kind), lambda: bool(self._layout.by_kind.data((self.name, kind))))

    def _has_tag(self, memo: dict[Any, Any], tag: str) -> bool:
        """Whether the owner has used ``tag`` (one seek, kept in ``memo``)."""
        return _remembered(memo, (*_TAGS, tag), lambda: bool(self._layout.by_tag.data((self.name, tag))))

    def _tag_starts(self, memo: dict[Any, Any], words: Sequence[str], known: tuple[frozenset[str], tuple[str, ...]] | None) -> list[bool]:
        """For each word, whether a phrase starting with it may name a known tag: whether one
        of ``known`` (every tag of the owner) or else the first tag at or after the word's own
        tag form (one seek) begins with that form. A phrase's tag form begins with its first
        word's (tests/memory/test_text.py::test_a_phrase_tag_begins_with_its_first_words), so
        a word no known tag begins with starts no tag; a word with no tag form of its own
        ("#") is always tried. Each word's answer is kept in ``memo``."""
        owner, by_tag = self.name, self._layout.by_tag

        def may_start(word: str) -> bool:
            start = tag_form(word)
            if start is None:
                return True
            if known is not None:
                ordered = known[1]  # the tags beginning with a form follow it
                at = bisect.bisect_left(ordered, start)
                return at < len(ordered) and ordered[at].startswith(start)
            keys, _ = by_tag.raw_columns((owner,), start=start, limit=1)
            first = decode_one(keys[0], len(by_tag.key((owner,))))[0] if keys else None
            return isinstance(first, str) and first.startswith(start)

        return [_remembered(memo, (*_TAG_STARTS, word), partial(may_start, word)) for word in words]

    def _identifiers_asked(self, pairs: dict[str, str], include_archived: bool) -> dict[str, str]:
        """``pairs`` (terms and their words) with each identifier no memory holds whole asked as
        a memory may write it: by the longest identifier it holds that some memory does
        ("INV-2026-0042.pdf" of a memory saying "INV-2026-0042"), or by its words where it reads
        as a phrase ("3-day", "24-hour") or where a memory writes its parts apart ("ISO 8601",
        ``_written_apart``). Any other ("INV-2026-0099", "web-01" beside web-02) stays whole, and
        ask names it: memories holding some of its parts are about other things."""
        whole = [t for t in pairs if compound_parts(t) or _LETTERS_DIGITS.fullmatch(t)]
        if not whole:
            return pairs
        digest = self._archived_digest() if include_archived else None
        unheld = {t for t in self._unheld(whole) if digest is None or t not in digest.by_term}
        if not unheld:
            return pairs
        out: dict[str, str] = {}
        for term, word in pairs.items():
            if term not in unheld:
                out.setdefault(term, word)
                continue
            # "SHA-256" of a memory writing "SHA256", "web02" of one writing "web-02": one name,
            # asked as every memory writes it (joined, or apart: "SHA 256" beside "SHA256")
            other = _other_spelling(term)
            if other is not None and (not self._unheld([other]) or (digest is not None and other in digest.by_term)):
                out.setdefault(other, word)
                apart = term if compound_parts(term) else other
                if self._written_apart(apart, compound_parts(apart)):
                    for part in _JOINED.split(word if apart == term else apart):
                        for part_term, part_word in terms_and_words(part).items():
                            out.setdefault(part_term, part_word)
                continue
            if not compound_parts(term):  # a word of letters and digits no memory holds either way
                out.setdefault(term, word)
                continue
            heads = identifier_heads(term)
            missing = set(self._unheld(heads)) if heads else set()
            held = [h for h in heads if h not in missing]
            if held:
                out.setdefault(held[0], word)
            elif _reads_as_a_phrase(word) or self._written_apart(word, compound_parts(term)):
                for part in _JOINED.split(word):
                    for part_term, part_word in terms_and_words(part).items():
                        out.setdefault(part_term, part_word)
            else:
                out.setdefault(term, word)
        return out

    def _letter_names_missing(self, question: str, kept: Mapping[str, str], tags: Sequence[str]) -> tuple[str, ...]:
        """The names of a capitalised word and a letter ("Project Y") that no memory holds, where
        the owner tags others of the family ("project-x"): the letter is no index term, so the
        question would ask of "project" and Project X's memories would stand in for Project Y (an
        MCP probe's find). One is held where it is a tag or a memory writes it ("Project Y" in
        the text of one of the first ``_EVENTS_READ`` memories holding the word); with more
        memories holding the word than that, it is not named missing."""
        missing: list[str] = []
        for phrase, head in letter_names(question):
            form, terms = tag_form(phrase), terms_of_word(head)
            if form is None or form in tags or len(terms) != 1 or terms[0] not in kept or not self._tag_family(form.rsplit("-", 1)[0]):
                continue
            if self._counts(terms)[2] <= _EVENTS_READ and not self._written_apart(form, terms) and not self._archived_write(form, terms[0]):
                missing.append(phrase)  # (project-y: "Project Y", "Project-Y")
        return tuple(missing)

    def _archived_write(self, form: str, term: str) -> bool:
        """Whether an archived memory may hold the name ``form`` ("project-y"): as a tag, or in
        what stays hot of it (its one-liner, tags, decisions), among the first ``_EVENTS_READ``
        holding ``term``; True where that cannot be read (past ``_DIGESTED`` archived memories),
        so the name is not said missing (a review's find: "no memory mentions 'Project Y'" of an
        owner whose Project Y memory was archived)."""
        if not self._has_archived():
            return False
        digest = self._archived_digest()
        if digest is None:
            return True
        positions = digest.by_term.get(term, [])
        if form in digest.by_tag or len(positions) > _EVENTS_READ:
            return True
        written = re.compile(f"(?<!{_LETTER})" + r"[\W_]+".join(map(re.escape, form.split("-"))) + f"(?!{_LETTER})", re.IGNORECASE)
        for i in positions:
            h = self._layout.states.get((self.name, digest.ids[i]))
            if h is not None and written.search(archived_words(h)):
                return True
        return False

    def _tag_family(self, head: str) -> bool:
        """Whether the owner has a tag beginning ``head-`` ("project-x" for "project"): one seek."""
        start = head + "-"
        keys, _ = self._layout.by_tag.raw_columns((self.name,), start=start, limit=1)
        first = decode_one(keys[0], len(self._layout.by_tag.key((self.name,))))[0] if keys else None
        return isinstance(first, str) and first.startswith(start)

    def _written_apart(self, word: str, terms: tuple[str, ...], cap: int = _EVENTS_READ) -> bool:
        """Whether a hot memory writes the identifier ``word`` with spaces or other marks between
        its parts ("ISO 8601" for "ISO-8601", "Python 3.12" for "python-3.12"): one holding every
        part, among the first ``cap`` matches, whose text has them in order with nothing but
        punctuation or space between ("v2.3.1" and a "gpt-4" do not write "v2.4.1")."""
        if not terms or self._unheld(terms):
            return False
        parts = [p for p in _JOINED.split(word) if p]
        written = re.compile(f"(?<!{_LETTER})" + r"[\W_]+".join(map(re.escape, parts)) + f"(?!{_LETTER})", re.IGNORECASE)
        q = self._compile(Interpretation(terms=terms, words=terms))
        for tail, _, hits in self._matches(q, cap=cap).hot:
            if all(t in hits for t in terms):
                eid = tail_id(tail)
                h = self._layout.states.get((self.name, eid))
                if h is not None and written.search(self._text_of(eid, h)):
                    return True
        return False

    def _unheld(self, terms: Iterable[str]) -> list[str]:
        """The ``terms`` no memory of the owner holds (document frequency 0)."""
        terms = tuple(terms)
        return [t for t, df in zip(terms, self._counts(terms)[2:], strict=True) if not df]

    def _counts(self, terms: Sequence[str]) -> list[int]:
        """The owner's document count, total document length, and each term's document
        frequency: those this process read while the owner's documents stayed as they are
        (``TextIndex.memo``), the others in one batch of reads."""
        memo = self._layout.text.memo(self.name)
        wanted: list[bytes | str] = [_DOCS, _TERMS, *terms]  # the statistics' subscripts, then the terms
        counts: list[int | None] = [memo.get(k) for k in wanted]
        if None in counts:
            lay = self._layout
            stats, freqs = lay.parent_key(lay.stats, (self.name,)), lay.parent_key(lay.doc_freq, (self.name,))
            missing = [i for i, c in enumerate(counts) if c is None]
            keys = [stats + w if isinstance(w := wanted[i], bytes) else freqs + _term_subscript(w) for i in missing]
            with self._space.reader() as txn:
                got = txn.get_many(keys).get
            if len(memo) >= _MEMO_ENTRIES:
                memo.clear()
            for i, k in zip(missing, keys, strict=True):
                counts[i] = memo[wanted[i]] = 0 if (raw := got(k)) is None else int(unpack_value(raw))
        return counts  # type: ignore[return-value]  # every None was read

    def _compile(self, interp: Interpretation) -> Query:
        w = interp.window
        return Query(
            lo=ts_micros(w.start) if w else None,
            hi=ts_micros(w.end) if w else None,
            tags=interp.tags,
            any_tags=interp.any_tags,
            terms=interp.terms,
            terms_required=interp.terms_required,
            kind=interp.kind,
            outcome=interp.outcome,
            session=interp.session,
            include_archived=interp.include_archived,
            boost_tags=interp.boost_tags,
            rank_terms=interp.rank_terms,
            tag_name_terms=interp.tag_name_terms,
            include_superseded=interp.include_superseded,
            told=interp.told,
            with_outcome=interp.with_outcome,
            scope_tags=interp.scope_tags,
            zone=self._layer.settings.timezone,
        )

    def _run(
        self,
        interp: Interpretation | Callable[[], Interpretation],
        limit: int,
        now: dt.datetime | None,
        offset: int = 0,
        *,
        widen_tags: bool = False,
        access: bool = True,
        asked: bool = False,
    ) -> RecallResult:
        """The answer to ``interp`` (or to what ``interp()`` makes of a question, in the same snapshot).

        ``widen_tags`` (``ask``): where no memory has all of several tags the question names, the
        memories with any of them answer, and the note says so. "Tell me about the deploy failures
        and the billing issue" asks about both, not about what is both.

        Personal data or a secret left out of the words (``interp.withheld``; memories hold such
        values only as placeholders) leaves a text filter with nothing that can match, and
        leaves a question (``asked``) about nothing when no word or tag of it is left: then the
        answer is nothing, said (``withheld_note``)."""
        _check_page(limit, offset)
        at = as_utc(now, "now") if now is not None else self._layer.now()
        with self._space.snapshot():
            if not isinstance(interp, Interpretation):
                interp = interp()
            q = self._compile(interp)
            if interp.zone != q.zone:  # the answer shows its days as the database's zone reads them
                interp = replace(interp, zone=q.zone)
            if interp.withheld and not interp.terms and not (asked and (interp.tags or interp.any_tags)):
                return RecallResult(False, [], interp, 0, withheld_note(interp))
            if (q.include_archived or q.include_superseded) and interp.unmatched:
                interp = self._matched_in_cold(interp, q)  # words only archived one-liners (or old versions) hold match here
            if interp.missing_names:
                return RecallResult(False, [], interp, 0, self._missing_note(interp, q))
            found = self._found(q, offset + limit, at)
            together: tuple[str, ...] = ()
            # only where no memory has them all, at any time and of any outcome, as the note says:
            # "did the mobile app deploy fail?" of deploys that all worked is no question of any
            # mobile-app failure (test_a_yes_or_no_question_widens_tags_only_where_none_has_them_all)
            if widen_tags and not found.total and len(interp.tags) > 1 and not self._has_all_tags(q):
                together, interp = interp.tags, replace(interp, tags=(), any_tags=interp.tags)
                q = self._compile(interp)
                found = self._found(q, offset + limit, at)
            # "Did the deploy fail?": the failures answer, and the note tells of the attempts that
            # went otherwise, so one that worked after them is never hidden (_other_outcomes)
            otherwise = ""
            if widen_tags and q.outcome and asks_yes_or_no(interp.question or ""):
                otherwise = self._other_outcomes(q)
            elif widen_tags and q.outcome and not found.total:  # "what went wrong with the export?": it went partly
                otherwise = self._other_outcomes(q, say_none=False)
            # "the last 25 deploys" holds 25, whatever page of them is read (offset)
            wanted = min(offset + limit, interp.count) if interp.count else offset + limit
            ordered = None
            # widened to any of the tags, the newest of either is no answer ("when did Ana last deploy?")
            if (
                interp.order
                and found.total
                and not together
                and (self._records_outcomes(self._layer.settings.typed_kinds) or self._keeps_kind("tool_call"))
            ):
                ordered = self._in_time_order(q, interp.order, wanted, TALK.search(interp.question or "") is not None)
            if interp.order and found.total and ordered is None:  # too many, or none holds every word: ranked, and said so
                interp = replace(interp, order="", count=None, ignored=(*interp.ignored, f"{interp.order} first"))
            ranked = ordered[offset:wanted] if ordered is not None else self._rank(q, found, at, offset + limit)[offset:]
            memories = self._memories(ranked)
            # The note and ``found`` follow the match count, not what is shown: with ``limit=0``
            # matches still exist (test_limit_zero_reports_the_matches).
            note: str | Callable[[], str]
            if found.total:  # formatted when first read: it reads nothing (but what the unmatched words are held by)
                elsewhere = self._elsewhere(q, self._terms_of_words(interp, interp.unmatched)) if interp.unmatched else ("", "")
                shown_n = len(memories) if limit else "none (limit 0)"
                # counted when the note is read: it builds the episodes, which most callers never do
                may_correct = () if q.include_superseded else memories
                note = partial(found_note, interp, found.total, shown_n, together, otherwise, elsewhere, may_correct, self._archived_too(q))
            else:  # what it counts is read in this snapshot
                note = self._empty_note(interp, q)
                if otherwise:
                    note = partial(note_and, note, otherwise)
        if memories and access:
            self._layer.tracker.touch(self.name, [m.id for m in memories], at)
        return RecallResult(found.total > 0, memories, interp, found.total, note)

    def _has_all_tags(self, q: Query) -> bool:
        """Whether any memory, archived ones too, has every tag of ``q`` (what "no memory has all
        of tags" would say otherwise)."""
        return self._tags_together(q.tags)

    def _held_in(self, window: TimeWindow, terms: tuple[str, ...]) -> bool:
        """Whether a memory of ``window`` (hot, recorded in it) holds any of ``terms``."""
        q = Query(ts_micros(window.start), ts_micros(window.end), (), (), terms, True, None, None, None)
        return bool(self._matches(q, cap=1).total)

    def _tags_together(self, tags: Sequence[str]) -> bool:
        """Whether any memory, archived ones too, has every one of ``tags``."""
        only = Query(None, None, tuple(tags), (), (), False, None, None, None, include_archived=True)
        return bool(self._matches(only, cap=1).total)

    def _in_time_order(self, q: Query, order: str, keep: int, talk: bool = False) -> list[Ranked] | None:
        """The ``keep`` newest (oldest) events among the matches of ``q`` (memories with an
        outcome, and tool calls unless the question asks of ``talk``) holding every word of it
        some memory holds, in that order ("the last three deploys"), or None when more than
        ``_ORDERED_READ`` match or none is such a memory. Read in the query's snapshot."""
        # words no memory holds make the answer partial and are said; the order is of the rest
        # ("when did we last talk to Initech?", "the last error from the payments API")
        unheld = self._unheld(q.terms)
        if unheld and q.include_archived:  # a word only archived memories hold is asked all the same
            cold = self._archived_matches(replace(q, terms=tuple(unheld), terms_required=True, tags=(), any_tags=(), boost_tags=()), None)
            unheld = [t for t in unheld if not any(t in hits for _, _, hits in cold)]
        held = tuple(t for t in q.terms if t not in unheld)
        named = {t for tag in q.boost_tags for t in terms_of_word(tag)} if all(map(one_word, q.boost_tags)) else None
        # a tag the stemmer shortens names a memory only as written: "designer" is "design" to
        # the index, and "strong system design" is no designer's interview (test_an_ordered_tag_word_is_named_as_written)
        shortened = {tag: word_forms(tag) for tag in q.boost_tags if terms_of_word(tag) != (tag,)} if named else {}
        if named:  # "the last time we called Globex": a memory naming Globex (its tag is a word of it), never another's call
            q = replace(q, boost_tags=(), rank_terms=(), terms=tuple(dict.fromkeys((*held, *named))), terms_required=True)
        elif q.boost_tags:  # of a tag of several words ("Project X"), a memory with the tag
            q = replace(q, any_tags=q.boost_tags, boost_tags=(), rank_terms=(), terms=held, terms_required=bool(held))
        elif unheld:
            q = replace(q, terms=held, terms_required=bool(held) and q.terms_required)
        found = self._matches(q, cap=_ORDERED_READ + 1)
        if q.told:
            found = self._with_told(q, found)
        if len(found.hot) + len(found.archived) > _ORDERED_READ:
            return None
        # as an event is found (_newest_event): the first turn to mention a tournament is no first
        # tournament, nor is the first memory to say "video" the first video game tournament; a
        # tool call is recorded as it runs ("what was the last error from the payments API?")
        when = events_of(q, found, without_outcome=q.kind == "tool_call")
        # "when did I first talk about payments?" asks of talk: a tool call is no answer to it
        if q.kind is None and not talk and self._keeps_kind("tool_call"):
            calls = self._matches(replace(q, kind="tool_call"), cap=_ORDERED_READ + 1)
            if len(calls.hot) + len(calls.archived) > _ORDERED_READ:
                return None
            when += events_of(q, calls, without_outcome=True)
        if not when:
            return None
        when.sort(key=lambda w: (w[0], w[1]), reverse=order == "newest")
        out: list[Ranked] = []
        for _, eid, subscript, header, hits in when:
            h = header if header is not None else self._layout.states.get((self.name, eid))
            if h is None:
                continue
            text = self._text_of(eid, h) if shortened or held else ""  # read once, for both checks
            if (not shortened or _names_tags(h, text, shortened)) and _affirms(text, held):
                out.append((eid, h, 0.0, partial(why_matched, q, h, hits, 0.0), subscript))
                if len(out) >= keep:
                    break
        return out or None

    def _found(self, q: Query, keep: int, at: dt.datetime) -> Matches:
        """The matches of ``q`` that can reach the top ``keep``, with the told ones when asked."""
        found = self._matches(q, keep=keep, now_us=ts_micros(at))
        return self._with_told(q, found) if q.told else found

    def _other_outcomes(self, q: Query, cap: int = 1_000, say_none: bool = True) -> str:
        """What the note of a yes-or-no question about an outcome, or of an empty answer with one,
        adds: how many attempts matching the rest of the question went otherwise (another
        outcome; memories without one are no attempts), and the newest of them; that none did
        only with ``say_none``. Archived attempts count (their outcome stays hot): three archived
        deploys that worked were "no attempt went otherwise" beside a recent failure. Read in the
        query's snapshot."""
        found = self._matches(replace(q, outcome=None, include_archived=True), cap=cap)
        others = [(tail_ts(tail), OUTCOME_OF_CODE[code & 3]) for tail, code, _ in found.hot]
        others += [(ts_micros(h["ts"]), h.get("outcome")) for _, h, _ in found.archived]
        others = [(ts, o) for ts, o in others if o is not None and o != q.outcome]
        if not others:
            return f"No attempt it matches went otherwise than {q.outcome}." if say_none else ""
        ts, outcome = max(others)  # the newest (a tie goes by outcome name)
        more = "at least " if len(found.hot) >= cap else ""
        n = len(others)
        return f"{more}{n} attempt{'s' if n != 1 else ''} went otherwise, the newest {local_day(from_micros(ts), q.zone)}: {outcome}."

    def _empty_note(self, interp: Interpretation, q: Query) -> Callable[[], str]:
        """Say plainly that nothing matched, and whether something matched outside the window or
        in cold storage: what it counts is read now (in the query's snapshot), the sentence is
        formatted when first read (``nothing_note``)."""
        outside, elsewhen = None, ""
        cold = self._archived_note(q)
        if q.lo is not None:  # "what did we talk about last week?": where the nearest memories are
            outside = self._outside(q)
            if not (cold or outside[0] or outside[2]):  # "nothing at any time" is said of the archived too
                elsewhen = self._archived_elsewhen(replace(q, lo=None, hi=None, told=False))
        notes = cold + self._superseded_note(q) + self._rest_note(interp, q) + self._other_kinds(q)
        return partial(nothing_note, interp, outside, notes, elsewhen, bool(cold))

    def _other_kinds(self, q: Query, cap: int = 1_000) -> str:
        """When a kind emptied the answer, how many memories of other kinds match the rest, and
        which kinds: "Any failed card payments this month?" of a bookkeeper whose declined card
        was recorded as an expense said nothing matched. Read in the query's snapshot."""
        if not q.kind or q.kind == "tool_call" or not (q.terms or q.tags or q.any_tags or q.outcome):
            return ""
        found = self._matches(replace(q, kind=None), cap=cap)
        if q.told:
            found = self._with_told(replace(q, kind=None), found)
        kinds = Counter(
            [h["kind"] for _, h, _ in found.archived]
            + [h["kind"] for tail, _, _ in found.hot if (h := self._layout.states.get((self.name, tail_id(tail)))) is not None]
        )
        kinds.pop(q.kind, None)
        if not kinds:
            return ""
        n = sum(kinds.values())
        more = "at least " if len(found.hot) >= cap else ""
        which = ", ".join(f"{k} {c}" if len(kinds) > 1 else k for k, c in kinds.most_common(3))
        if n == 1:
            return f" 1 memory of another kind matches the rest ({which}); ask without the kind to see it."
        return f" {more}{n} memories of other kinds match the rest ({which}); ask without the kind to see them."

    def _archived_elsewhen(self, q: Query, cap: int = 1_000) -> str:
        """For an empty window with no hot match at any time: the archived matches at any time
        ("Any failed quizzes this week?" of a tutor whose failed quizzes are all archived said
        that nothing matched at any time). Read in the query's snapshot."""
        counted = self._archived_count(q, cap)
        if counted is None:
            return ""
        what, latest = counted
        return f" {what} at other times, latest {latest}; ask without the window and with include_archived=True to see them."

    def _rest_note(self, interp: Interpretation, q: Query, cap: int = 1_000) -> str:
        """When no memory holds any of the question's words but the rest of it (a window, tags, a
        kind, an outcome) matches memories, how many: "Any partial fixes last quarter?" of an owner
        whose memories never say "fix" is an empty answer, and the partial outcomes of last quarter
        are said to exist, not hidden nor offered in its place. Read in the query's snapshot."""
        if not (q.terms and interp.unmatched) or not (q.lo is not None or q.tags or q.any_tags or q.kind or q.outcome or q.session):
            return ""
        if not set(q.terms) <= set(self._terms_of_words(interp, interp.unmatched)):
            return ""  # a word some memory holds: the other filters emptied the answer
        rest = replace(q, terms=(), rank_terms=(), boost_tags=(), terms_required=False)
        found = self._matches(rest, cap=cap)
        if q.told:
            found = self._with_told(rest, found)
        n = len(found.hot) + len(found.archived)
        see = ""
        capped = len(found.hot) >= cap
        if not n and not q.include_archived:  # the rest matches archived memories only: said, with how to see them
            n = len(self._archived_matches(rest, cap))
            see, capped = ("; include_archived=True to see them" if n else ""), n >= cap
        if not n:
            return ""
        more = "at least " if capped else ""
        held = f"{more}{n} {'archived ' if see else ''}memor{'ies match' if n != 1 else 'y matches'}"
        asked = replace(interp, terms=(), words=(), unmatched=())
        which = self._elsewhere(q, q.terms)[0]  # "no active memory" where archived one-liners hold a word (their note follows)
        return f" No {which}memory mentions {quoted(interp.unmatched)}; {held} the rest of the question ({asked}){see}."

    @staticmethod
    def _terms_of_words(interp: Interpretation, words: Iterable[str]) -> tuple[str, ...]:
        """The terms of some of ``interp``'s words (its missing names, its unmatched words)."""
        folded = {w.casefold() for w in words}
        return tuple(t for t, w in zip(interp.terms, interp.words, strict=False) if w.casefold() in folded)

    def _elsewhere(self, q: Query, terms: tuple[str, ...]) -> tuple[str, str]:
        """Where words no hot memory holds are held all the same: which memories do not hold them
        ("active " when archived one-liners do, "current " when earlier versions do) and the
        notes saying how many do and how to see them. "No memory mentions 'flaky'" was false of
        an owner whose archived memories did (test_an_unmatched_word_held_in_cold_storage_is_said)."""
        only = replace(q, terms=terms, terms_required=True, tags=(), any_tags=(), boost_tags=())
        cold, old = self._archived_note(only), self._superseded_note(only)
        which = "active " if cold else "current " if old else ""
        if not cold and self._has_archived():
            # archived memories are searched by what stays hot of them: a full record in cold
            # storage may hold the word (a VAT id in an archived invoice's content)
            old += " Archived memories are searched by their one-line summaries, tags and decisions, not their full records."
        return which, cold + old

    def _matched_in_cold(self, interp: Interpretation, q: Query) -> Interpretation:
        """``interp`` without the unmatched words (and missing names) that an archived one-liner
        of the window holds: with ``include_archived`` those match, so they are no padding."""
        terms = {w.casefold(): t for t, w in zip(interp.terms, interp.words, strict=False)}
        wanted = tuple(terms[w.casefold()] for w in interp.unmatched if w.casefold() in terms)
        only = replace(q, terms=wanted, terms_required=True, tags=(), any_tags=(), boost_tags=())
        found = self._archived_matches(only, None) if q.include_archived else []
        if q.include_superseded:
            found += self._superseded_matches(only, None)
        held = {t for _, _, hits in found for t in hits}
        keep = tuple(w for w in interp.unmatched if terms.get(w.casefold()) not in held)
        # unmatched words are as the question's words were folded ("bob"), names as written ("Bob")
        folded = {w.casefold() for w in keep}
        return replace(interp, unmatched=keep, missing_names=tuple(w for w in interp.missing_names if w.casefold() in folded))

    def _missing_note(self, interp: Interpretation, q: Query) -> str:
        """The answer for a question about a name no memory holds: nothing, said plainly, and
        whether archived one-liners mention it."""
        terms = self._terms_of_words(interp, interp.missing_names)
        # ("Project Y" has no term of its own: where nothing is looked up, nothing is said of cold storage)
        which, notes = self._elsewhere(q, terms) if terms else ("", "")
        return (
            f"Nothing found: no {which}memory mentions {quoted(interp.missing_names)}, "
            f"so nothing about other things is offered in its place ({interp}).{notes}"
        )

    def _archived_too(self, q: Query, cap: int = 1_000) -> str:
        """Beside hot matches, whether archived memories match too: "Which offers were declined?"
        said "1 match" of an owner with three more declined offers archived, and an answer never
        hides what memdb has archived. Read in the query's snapshot."""
        if q.include_archived or not (self._has_archived() if q.terms else self._archived_counted()):
            return ""
        if not self._layout.archived.raw_keys((self.name,), q.lo, q.hi, limit=1):
            return ""  # one seek: nothing archived in the window
        if self._archived_digest() is None and not self._space.in_transaction:  # past _DIGESTED: no walk on every answer
            return f" Archived memories (more than {_DIGESTED:,}) are not counted here; include_archived=True searches them too."
        counted = self._archived_count(q, cap, sought=True)
        if counted is None:
            return ""
        them = "them" if counted[0] != "1 archived match" else "it"
        return f" Also {counted[0]} (latest {counted[1]}); include_archived=True to see {them}."

    def _has_archived(self) -> bool:
        """Whether the owner has archived memories, kept in ``TextIndex.memo`` (archiving changes a
        column, so a new stamp drops it; one erased since only costs a seek): most owners have none,
        and an answer then reads nothing to say so."""
        memo = self._layout.text.memo(self.name)
        return _remembered(memo, ("has archived",), lambda: bool(self._layout.stats.get((self.name, "archived"), 0)))

    def _archived_counted(self) -> bool:
        """``_has_archived`` from the owner's counter (^EPN) alone: one small value, where the memo
        is trusted by reading the owner's stamps (8 KB at a million episodes), which a recall
        without words reads for nothing else."""
        raw = self._layout.stats.raw_get(self._archived_key)
        return raw is not None and bool(unpack_value(raw))

    def _has_superseded(self) -> bool:
        """Whether the owner has earlier versions of corrected memories, kept in ``TextIndex.memo``
        as ``_has_archived`` is: a correction writes the new version's column and zeroes the old
        one's (``OwnerEpisodes._write_successor``), so a new stamp drops it. Most owners have none, and an
        empty answer then seeks nothing to say so."""
        memo = self._layout.text.memo(self.name)
        return _remembered(memo, ("has superseded",), lambda: bool(self._layout.superseded.raw_keys((self.name,), limit=1)))

    def _archived_note(self, q: Query, cap: int = 1_000) -> str:
        """When nothing hot matches, whether cold storage holds matches: an answer never hides
        what memdb has archived (DESIGN 6)."""
        if q.include_archived or not self._has_archived():
            return ""
        counted = self._archived_count(q, cap)
        if counted is None:
            return ""
        them, one = ("it", "it") if counted[0] == "1 archived match" else ("them", "one")
        return f" {counted[0]}, latest {counted[1]}; include_archived=True to see {them} (restore() brings {one} back)."

    def _archived_count(self, q: Query, cap: int, sought: bool = False) -> tuple[str, str] | None:
        """("N archived matches", the latest one's day) of ``q``, at most ``cap`` counted, or None
        when none matches (``sought``: the window is known to hold an archived memory). Read in
        the query's snapshot."""
        if not sought and not self._layout.archived.raw_keys((self.name,), q.lo, q.hi, limit=1):
            return None  # nothing archived in the window: one seek, where walking the range cost a few
        digest = self._archived_digest()
        if digest is not None:  # every match counted: the digest reads no header
            times, cap = [digest.times[i] for i in digest.matches(q)], len(digest) + 1
        else:
            times = [ts_micros(h["ts"]) for _, h, _ in self._archived_matches(q, cap)]
        if not times:
            return None
        n = len(times)
        return f"{'at least ' if n >= cap else ''}{n} archived match{'es' if n != 1 else ''}", local_day(from_micros(max(times)), q.zone)

    def _archived_digest(self) -> ArchivedDigest | None:
        """The owner's ``ArchivedDigest``, made once while the archived memories stay as they are
        (their count and ``archive_changes``: capture keeps it) and no owner is erased; None past ``_DIGESTED`` archived
        memories, and inside a write transaction (its counters are not applied yet). After
        archives, restores and erasures alone the last digest is updated, reading the headers of
        the memories archived since only (``_digest_since``)."""
        stats = self._layout.stats
        with self._space.snapshot():  # the counters and the archive they count, read together
            archived = int(stats.get((self.name, "archived"), 0))
            if archived > _DIGESTED or self._space.in_transaction:
                return None
            # and the owner erasures, which reset those counters (test_another_process_forgets_an_erased_owners_archive)
            version = (archived, int(stats.get((self.name, "archive_changes"), 0)), int(self._layout.meta.get(OWNER_ERASURES, 0)))
            digests, lock = self._layout.digests, self._layout.digests_lock
            with lock:
                kept = digests.pop(self.name, None)
                if kept is not None and kept[0] == version:
                    digests[self.name] = kept  # the most recently used last
                    held: ArchivedDigest = kept[1]
                    return held
            digest = self._digest_since(kept, version)
        with lock:  # least recently used out, while the digests kept hold more memories than _DIGESTS_KEPT
            digests[self.name] = (version, digest)
            while len(digests) > 1 and sum(len(d) for _, d in digests.values()) > _DIGESTS_KEPT:
                digests.pop(next(iter(digests)))
        return digest

    def _digest_since(self, kept: tuple[tuple[int, int, int], ArchivedDigest] | None, version: tuple[int, int, int]) -> ArchivedDigest:
        """The digest of the archive now, from the last one ``kept`` when every change since is a
        memory that came into or left the archive: as many as ``archive_changes`` moved by (each
        change bumps it once, and each memory in or out took at least one, so none other happened:
        no header rewritten in place, no memory restored and archived again). Else made anew,
        reading every header (~30 us a memory: 0.25 s at 8,000). Read in the caller's snapshot."""
        states, owner = self._layout.states, self.name
        keys = self._layout.archived.raw_keys((owner,))  # in time order; each ends with its id
        if kept is not None and kept[0][2] == version[2]:
            before = kept[1].key_set()
            new = [k for k in keys if k not in before]
            gone = len(before) - (len(keys) - len(new))
            if version[1] - kept[0][1] == len(new) + gone:  # test_the_digest_follows_archives_restores_and_erasures
                headers = {k: (eid, h) for k in new if (h := states.get((owner, eid := tail_id(k)))) is not None}
                return kept[1].updated(keys, headers)
        return ArchivedDigest.of((k, eid, h) for k in keys if (h := states.get((owner, eid := tail_id(k)))) is not None)

    def _superseded_note(self, q: Query, cap: int = 1_000) -> str:
        """When nothing current matches, whether earlier versions of corrected memories do: an
        answer never hides them ("vim" of an owner whose editor fact now says "Neovim")."""
        if q.include_superseded or not self._has_superseded() or not self._layout.superseded.raw_keys((self.name,), q.lo, q.hi, limit=1):
            return ""  # (nothing superseded in the window: one seek)
        old = self._superseded_matches(q, cap)
        if not old:
            return ""
        n, latest = len(old), max(h["ts"] for _, h, _ in old)
        what = "1 earlier version of a corrected memory matches" if n == 1 else f"{n} earlier versions of corrected memories match"
        more, them = ("at least " if n >= cap else ""), ("it" if n == 1 else "them")
        return f" {more}{what}, latest {local_day(latest, q.zone)}; include_superseded=True to see {them}."

    def _outside(self, q: Query, cap: int = 1_000) -> tuple[int, int | None, int, bool, bool]:
        """Matches of ``q`` before and after its window: (count before, time of the latest
        before if known, count after, whether each count stopped at ``cap``). Where the search
        kernel finds the matches (``_kernel_lists_of``) it counts them all (``_count_outside``);
        else one index range is read by its keys, from the window outwards; otherwise the first
        ``cap`` matches of all time are looked at."""
        kernel = self._kernel_lists_of(q) if q.lo is not None else None
        counted = self._count_outside(q, *kernel) if kernel is not None else None
        if counted is not None:
            return *counted, False, False
        whole = None if q.include_archived or q.include_superseded else self._single_range(q)
        if whole is not None:
            g, subs = whole
            # keys only: what is counted is the entries, and the latest one's time is in its key
            earlier = g.raw_keys(subs, None, q.lo, reverse=True, limit=cap + 1)  # one more says "more"
            later = len(g.raw_keys(subs, q.hi, None, limit=cap + 1)) if q.hi is not None else 0
            latest = tail_ts(earlier[0][len(g.key(subs)) :]) if earlier else None
            return min(len(earlier), cap), latest, min(later, cap), len(earlier) > cap, later > cap
        outside = self._matches(replace(q, lo=None, hi=None), cap=cap)
        stamps = [tail_ts(tail) for tail, _, _ in outside.hot] + [ts_micros(h["ts"]) for _, h, _ in outside.archived]
        capped = len(outside.hot) >= cap
        before = [t for t in stamps if q.lo is None or t < q.lo]
        return len(before), None if capped else max(before, default=None), len(stamps) - len(before), capped, capped

    def _sources(self, q: Query) -> list[tuple[str, Iterator[tuple[bytes, int]]]]:
        """Candidate streams, one per usable index, each yielding (encoded (ts, id) tail, code)
        of the entries in the window. The first word of a name says which filter it implies."""
        owner, lo, hi, st = self.name, q.lo, q.hi, self._layout
        # an entry's code is its outcome with its document's level: read once, when a stream is
        # first read (a text query may drop every stream unread)
        levels = cache(partial(st.text.levels_of, owner))
        srcs: list[tuple[str, Iterator[tuple[bytes, int]]]] = []
        for tag in q.tags:
            if q.outcome:  # the name says which filter a source implies: the tag (and the outcome)
                srcs.append((f"tag {tag}", _tails(st.by_tag_outcome, (owner, tag, q.outcome), lo, hi, levels)))
            else:
                srcs.append((f"tag {tag}", _tails(st.by_tag, (owner, tag), lo, hi, levels)))
        if q.any_tags:
            srcs.append(("any tag", _chain(_tails(st.by_tag, (owner, t), lo, hi, levels) for t in q.any_tags)))
        if q.kind or q.outcome:
            kinds = [q.kind] if q.kind else [*self._layer.settings.typed_kinds, *BUILTIN_KINDS]
            outcomes = [q.outcome] if q.outcome else [*OUTCOMES, NO_OUTCOME]
            label = f"kind {q.kind or '*'}/{q.outcome or '*'}"
            srcs.append((label, _chain(_tails(st.by_kind, (owner, k, o), lo, hi, levels) for k in kinds for o in outcomes)))
        if q.session:
            srcs.append((f"session {q.session}", _tails(st.by_session, (owner, q.session), lo, hi, levels)))
        if not srcs:  # every other range lies within the window too, so time never drives when one exists
            srcs.append(("time", _tails(st.by_time, (owner,), lo, hi, levels)))
        return srcs

    def _single_range(self, q: Query) -> tuple[Global, tuple[Any, ...]] | None:
        """The one index range whose entries in the window are exactly the hot matches of a
        query without text, if there is one (one tag, with or without an outcome; one session;
        one kind and outcome; or nothing but the window)."""
        owner, st = self.name, self._layout
        if q.any_tags or q.scored_terms or q.with_outcome or q.scope_tags:
            return None
        if q.tags:
            if len(q.tags) > 1 or q.kind or q.session:
                return None
            if q.outcome:
                return st.by_tag_outcome, (owner, q.tags[0], q.outcome)
            return st.by_tag, (owner, q.tags[0])
        if q.session:
            return (st.by_session, (owner, q.session)) if not (q.kind or q.outcome) else None
        if q.kind or q.outcome:
            return (st.by_kind, (owner, q.kind, q.outcome)) if q.kind and q.outcome else None
        return st.by_time, (owner,)

    def _matches(self, q: Query, cap: int | None = None, keep: int | None = None, now_us: int | None = None) -> Matches:
        """Hot episodes matching ``q``, found from the indexes alone (no header or record is read),
        driven by the smallest index; archived ones (from their headers) when asked for. With
        ``boost_tags`` and required terms, an episode matches through a boost tag or a term.

        Every time-ordered index entry ends in the same encoded (ts, id) tail and carries the
        episode's document number and outcome, which with the document's level make its index
        code (``memdb.memory.layout.entry_codes``), so the other filters are one
        lookup each: ``key(tag) + tail`` for a tag, ``key(kind, outcome) + tail`` for a kind,
        a block lookup for a term. With ``keep`` (the result limit) and ``now_us``, a query of
        required words with any window, outcome, tags, words that only rank and boost tags is
        answered by the search kernel (``memdb.memory.postings.search``) over the words' postings
        and the tags' lists, which counts every match and returns only those whose score can
        reach the top ``keep``.
        """
        if keep and now_us is not None and cap is None:
            if self._kernel_answers(q):
                return self._kernel_matches(q, keep, now_us)
            if self._kernel_answers_tags(q):
                return self._kernel_tag_matches(q, keep, now_us)
        if q.boost_tags and q.terms and q.terms_required and not q.any_tags:
            worded = self._matches_all(q, cap, keep)
            have = {m[0] for m in worded.hot}
            if (
                cap is None
                and len(q.boost_tags) == 1
                and not (q.kind or q.outcome or q.session or q.include_archived or q.include_superseded)
            ):
                # the tag's matches are its range in the window: read it as columns, look up nothing yet
                g, subs = self._layout.by_tag, (self.name, q.boost_tags[0])
                keys, packed = g.raw_columns(subs, q.lo, q.hi)
                n = len(g.key(subs))
                tagged_tails = [k[n:] for k in keys]
                codes = entry_codes(packed, self._layout.text.levels_of(self.name))
                alone = [(t, c) for t, c in zip(tagged_tails, codes, strict=True) if t not in have]
                worded.pending = RangeColumn([t for t, _ in alone], [c for _, c in alone], 0)
            else:
                # A tagged episode holding an asked term is among the worded ones (with its postings);
                # the others hold none, so only the tags' own words are looked up for them.
                tagged = self._matches_all(replace(q, any_tags=q.boost_tags, terms=(), terms_required=False), cap, None)
                tagged_tails = [m[0] for m in tagged.hot]
                extra = [m for m in tagged.hot if m[0] not in have]
                worded.hot.extend(extra[: None if cap is None else max(cap - len(worded.hot), 0)])
                archived_ids = {a[0] for a in worded.archived}
                worded.archived.extend(a for a in tagged.archived if a[0] not in archived_ids)
            counted = worded.counted if worded.counted is not None else {tail[ID_SLICE] for tail in have}
            worded.total = len(counted.union(t[ID_SLICE] for t in tagged_tails)) + len(worded.archived)
            if cap is None:  # every tagged match in the window is known, so the boost needs no lookup
                worded.boosted = set(tagged_tails)
            return worded
        return self._matches_all(q, cap, keep, now_us)

    def _matches_all(self, q: Query, cap: int | None, keep: int | None, now_us: int | None = None) -> Matches:
        owner, st = self.name, self._layout
        whole = self._single_range(q) if cap is None else None
        if whole is not None:  # one range holds exactly the hot matches: read it as columns
            g, subs = whole
            parent = st.parent_key(g, subs)
            keys, packed = _window_columns(self._space, parent, q.lo, q.hi)
            text = self._layout.text
            prefix = len(parent)
            found = Matches(column=RangeColumn(keys, lambda: entry_codes(packed, text.levels_of(owner)), prefix))
            if q.include_archived:
                found.archived = self._archived_matches(q, cap=None)
            if q.include_superseded:
                found.archived += self._superseded_matches(q, cap=None)
            found.total = len(keys) + len(found.archived)
            return found
        postings: dict[bytes, dict[str, tuple[int, int]]] = {}
        text_size = None
        if q.terms and q.terms_required:
            text_size = sum(int(st.doc_freq.get((owner, t), 0)) for t in q.terms)
        # Probe each index range up to a limit that shrinks to the smallest exact size seen, so
        # choosing the driver costs at most a few small reads.
        limit = _PROBE if text_size is None else min(_PROBE, text_size + 1)
        small: tuple[str, list[tuple[bytes, int]]] | None = None
        large: tuple[str, list[tuple[bytes, int]], Iterator[tuple[bytes, int]]] | None = None
        sources = self._sources(q)
        if sources[0][0] == "time" and text_size is not None:
            sources = []  # the kernel filters the text's matches by time itself: never scan the time index for it
        for name, stream in sources:
            head = list(itertools.islice(stream, limit))
            if len(head) < limit:
                small, limit = (name, head), len(head) + 1
            elif large is None:
                large = (name, head, stream)
        # Driving from an index range costs one lookup per filter and term for each candidate;
        # driving from the postings costs reading them. Compare like with like: when no range
        # ended within the probe, read on in the first one as far as it would still be cheaper.
        per_candidate = 1 + len(q.terms)
        if text_size is not None and small is None and large is not None:
            more = list(itertools.islice(large[2], max(text_size // per_candidate - len(large[1]), 0)))
            if len(large[1]) + len(more) < text_size // per_candidate:
                small = (large[0], large[1] + more)
            else:
                large = (large[0], large[1] + more, large[2])
        driver_name = "text"
        driver: Iterable[tuple[bytes, int]]
        if text_size is not None and (small is None or text_size < len(small[1]) * per_candidate):
            # the kernel applies the window and the outcome; the other filters look up its matches
            terms = tuple(dict.fromkeys(q.terms))
            found_text = self._text_search(q, [(t, MATCH) for t in terms], 0, 0)
            listed: list[tuple[bytes, int]] = []
            for (ts_us, suffix, code), tfs, dl in zip(found_text.columns, found_text.tfs, found_text.dls, strict=True):
                tail = column_tail(ts_us, suffix)
                postings[tail[ID_SLICE]] = {t: (tf, dl) for t, tf in zip(terms, tfs, strict=True) if tf}
                listed.append((tail, code))
            driver = listed
        elif small is not None:
            driver_name, driver = small
        else:
            assert large is not None  # the time source always yields something when nothing is small
            driver_name, driver = large[0], itertools.chain(large[1], large[2])
        found = Matches(self._filter(q, driver, driver_name, postings, cap))
        if q.include_archived:
            found.archived = self._archived_matches(q, cap=None if cap is None else cap - len(found.hot))
        if q.include_superseded:
            found.archived += self._superseded_matches(q, cap=None if cap is None else max(cap - len(found.hot) - len(found.archived), 0))
        found.total = len(found.hot) + len(found.archived)
        return found

    @staticmethod
    def _kernel_answers(q: Query) -> bool:
        """Whether the search kernel finds ``q``'s hot matches alone: required words, with any
        window, outcome, required tags, words that only rank and boost tags."""
        return bool(q.terms and q.terms_required) and not (
            q.any_tags or q.kind or q.session or q.include_archived or q.include_superseded or q.with_outcome or q.scope_tags
        )

    @staticmethod
    def _kernel_answers_tags(q: Query) -> bool:
        """Whether ``q`` asks for the episodes of its tags at any time: the search kernel counts and
        ranks them from the tags' lists in the text index, where the tags' index ranges would be
        read whole (at a million episodes a common tag's range holds 300,000 entries: 7.5 ms p50
        and 50-70 ms p95 for one tag, against 0.7 and 3-4 ms from its list). A window's range
        holds only its matches, and so does one tag's range with an outcome (the tag+outcome
        index: 1.1-1.4 ms p50 there, 1.5-1.6 from the list), so those are read instead."""
        return q.lo is None and q.hi is None and (len(q.tags) > 1 or not q.outcome) and OwnerQueries._kernel_finds_tags(q)

    @staticmethod
    def _kernel_finds_tags(q: Query) -> bool:
        """Whether the search kernel finds ``q``'s hot matches from its tags' lists alone (``_tag_lists``):
        tags, with any window and outcome, and nothing else."""
        return (
            bool(q.tags)
            and not (
                q.terms or q.rank_terms or q.any_tags or q.boost_tags or q.kind or q.session or q.include_archived or q.include_superseded
            )
            and not (q.with_outcome or q.scope_tags)
        )

    @staticmethod
    def _tag_lists(q: Query) -> list[tuple[str, int]]:
        """The kernel's lists of a tags-only query: the first tag's list matches, the others are required."""
        return [(q.tags[0], MATCH)] + [(t, REQUIRE) for t in q.tags[1:]]

    def _kernel_lists_of(self, q: Query) -> tuple[list[tuple[str, int]], bool] | None:
        """The kernel's lists that hold exactly ``q``'s hot matches at any time (required words, or
        tags alone), and whether they are tags only; None when the kernel does not find them."""
        if self._kernel_answers(q):
            return self._kernel_lists(q)[0], False
        return (self._tag_lists(q), True) if self._kernel_finds_tags(q) else None

    def _kernel_tag_matches(self, q: Query, keep: int, now_us: int) -> Matches:
        """``_matches`` of a tags-only query by the search kernel: the first tag's list matches, the
        others are required, nothing is scored but relevance and recency (``BY_RELEVANCE``); only
        the matches whose score can reach the top ``keep`` are listed, with the exact total."""
        found = self._text_search(q, self._tag_lists(q), keep, now_us, tags_only=True)
        hot: list[Hot] = [(column_tail(ts_us, suffix), code, NO_HITS) for ts_us, suffix, code in found.columns]
        return Matches(listed=hot, total=found.total)

    @staticmethod
    def _kernel_lists(q: Query) -> tuple[list[tuple[str, int]], tuple[str, ...]]:
        """The kernel's lists for ``q`` (a name and its role each) and the terms it scores."""
        terms = tuple(dict.fromkeys(q.terms))
        ranked = tuple(t for t in dict.fromkeys(q.rank_terms) if t not in terms)
        lists = [(t, MATCH) for t in terms] + [(t, RANK) for t in ranked]
        lists += [(t, BOOST) for t in dict.fromkeys(q.boost_tags)] + [(t, REQUIRE) for t in dict.fromkeys(q.tags)]
        return lists, terms + ranked

    def _kernel_matches(self, q: Query, keep: int, now_us: int) -> Matches:
        """``_matches`` by the search kernel: the required words' postings, the words that only
        rank, the boost tags' and the required tags' lists, with the window and the outcome,
        merged in C; only the matches whose score can reach the top ``keep`` are listed."""
        lists, scored = self._kernel_lists(q)
        found = self._text_search(q, lists, keep, now_us)
        tails = [column_tail(ts_us, suffix) for ts_us, suffix, _ in found.columns]
        hot: list[Hot] = list(
            zip(tails, [code for _, _, code in found.columns], KernelHits.of_rows(scored, found.tfs, found.dls), strict=True)
        )
        boosted: set[bytes] = set()
        first_boost, first_required = len(scored), len(lists) - len(dict.fromkeys(q.tags))
        if first_boost < first_required:
            boosted = {tail for tail, tfs in zip(tails, found.tfs, strict=True) if any(tfs[first_boost:first_required])}
        # the kernel's BM25 is the twin's sum, term by term in list order: what ``_bm25`` computes
        return Matches(listed=hot, total=found.total, best_text=found.best, boosted=boosted, bm25=found.bm25)

    @staticmethod
    def _pageable(q: Query) -> bool:
        """Whether the kernel ranks a superset of ``q``'s hot matches that ``q``'s other filters
        (kind, scope tags, any of several tags) keep exactly: required words, with any window,
        outcome, required tags, boost tags and words that only rank."""
        return bool(q.terms and q.terms_required) and not (q.session or q.include_superseded or q.told)

    def _superset(self, q: Query) -> tuple[Query, Passing | None]:
        """The query the kernel answers whose matches hold ``q``'s hot ones, and the check that
        keeps ``q``'s among them (None when they are the same). One of ``any_tags`` is a required
        tag; the archived matches are ``q``'s own (``_archived_of``)."""
        one = len(q.any_tags) == 1
        sup = replace(q, kind=None, scope_tags=(), any_tags=(), tags=q.tags + q.any_tags if one else q.tags, include_archived=False)
        if not (q.kind or q.scope_tags or (q.any_tags and not one)):
            return sup, None
        owner, st = self.name, self._layout
        kinds = [st.by_kind.key((owner, q.kind, o or NO_OUTCOME)) for o in OUTCOME_OF_CODE] if q.kind else None
        any_tags = [st.by_tag.key((owner, t)) for t in q.any_tags] if not one else []
        scope = st.parent_key(st.states, (owner,)) if q.scope_tags else None

        return sup, _index_checks(q, kinds, any_tags, scope)

    def _archived_of(self, q: Query) -> list[ArchivedMatch]:
        """``q``'s archived matches, as ``_matches`` finds them (with boost tags and words, those
        holding a word or a boost tag), as ``_archived_light`` gives them: from the digest, no
        header read."""
        found = self._archived_light(q)
        if q.boost_tags and not q.any_tags:  # as ``_matches`` merges the tagged ones in
            have = {a[0] for a in found}
            tagged = self._archived_light(replace(q, any_tags=q.boost_tags, terms=(), terms_required=False))
            found.extend(a for a in tagged if a[0] not in have)
        return found

    def _archived_light(self, q: Query) -> list[ArchivedMatch]:
        """``_archived_matches(q, None)`` as (id, time in us, tags, postings of ``q``'s terms,
        header or None): from the digest, whose matches' headers are read only when they can
        rank (``_archived_reaching``); past ``_DIGESTED``, from their headers."""
        digest = self._archived_digest()
        if digest is None:
            return [(eid, ts_micros(h["ts"]), frozenset(h["tags"]), hits, h, None) for eid, h, hits in self._archived_matches(q, None)]
        scored = q.scored_terms
        out: list[ArchivedMatch] = []
        shared: dict[tuple[int, ...], Hits] = {}  # one postings mapping for the memories holding the terms as often
        for i in digest.matches(q):
            words = digest.words[i]
            counts = tuple(words.get(t, 0) for t in scored)
            hits = shared.get(counts)
            if hits is None:
                hits = shared[counts] = {t: (n * TF_UNIT, _ARCHIVED_DL) for t, n in zip(scored, counts, strict=True) if n}
            out.append((digest.ids[i], digest.times[i], digest.tags[i], hits, None, digest.keys[i]))
        return out

    def _archived_reaching(
        self, q: Query, archived: list[ArchivedMatch], bm25: list[float], keep: int, top_text: float, now_us: int
    ) -> list[Archived]:
        """Of ``archived`` (with their ``bm25``), in their order, those whose score as ``_rank``
        gives it can reach the top ``keep`` of them, with their headers; the others cannot
        reach the top ``keep`` of all matches either. Everything of the score but relevance is
        known without the header (text over ``top_text``, recency, boost), and relevance adds at
        most 0.05 (0.6 without words): those whose score with the highest relevance stays below
        the ``keep``-th best with the lowest are left unread; of the others only the headers'
        bytes are read (one batch) for their relevance, and those below the ``keep``-th best
        score are left out. prepare decoded and ranked 6,000 archived headers to show 5
        (test_prepare_ranks_archived_memories_as_reading_them_all)."""
        states, owner = self._layout.states, self.name
        if not 0 < keep < len(archived):
            return [(eid, h, hits) for eid, _, _, hits, h0, _ in archived if (h := h0 or states.get((owner, eid))) is not None]
        with_text, boost = bool(q.terms), frozenset(q.boost_tags)
        lows: list[float] = []  # each one's score without its relevance, as ``_rank`` adds it up
        for (_, ts_us, tags, _, _, _), text in zip(archived, bm25, strict=True):
            recency = 0.5 ** (max(now_us - ts_us, 0) / WEEK_US)
            low = 0.9 * text / top_text + 0.05 * recency if with_text else 0.4 * recency
            if boost and not boost.isdisjoint(tags):
                low += 0.1
            lows.append(low)
        weight = 0.05 if with_text else 0.6  # of relevance / 10
        floor = heapq.nlargest(keep, lows)[-1] - weight - 1e-9
        chosen = [i for i, low in enumerate(lows) if low >= floor]
        prefix = self._layout.parent_key(states, (owner,))
        # (an archive key ends with the id's encoded subscript, as the header's key does)
        keys = [prefix + (a[5][-ID_TAIL_BYTES:] if (a := archived[i])[5] is not None else encode_subscript(a[0])) for i in chosen]
        with self._space.reader() as txn:
            raws = txn.get_many(keys)  # one round trip on PostgreSQL
        read: list[tuple[int, DecodedHeader]] = [
            (i, decoded_header(raw)) for i, key in zip(chosen, keys, strict=True) if (raw := raws.get(key)) is not None
        ]
        if len(read) > keep:  # exact scores (within rounding: ties kept) of those left
            scores = [lows[i] + weight * rel for i, (_, _, rel) in read]
            floor = heapq.nlargest(keep, scores)[-1] - 1e-9
            read = [r for r, score in zip(read, scores, strict=True) if score >= floor]
        return [(archived[i][0], h, archived[i][3]) for i, (h, _, _) in read]

    def _filtered_best(
        self, sup: Query, lists: list[tuple[str, int]], passing: Passing, now_us: int, kind: str | None, first: TextFound
    ) -> float | None:
        """The best BM25 among the matches of ``sup`` that pass: the kernel's top k by BM25 alone
        (``first``, its top ``_FIRST_PAGE``), widened until one of them passes or it holds them all
        (0 when none passes); None when only listing them all would tell, and ``_widens`` says not to."""
        keep = _FIRST_PAGE
        found = first
        while True:
            order = sorted(range(len(found.bm25)), key=lambda i: -found.bm25[i])
            entries = [(column_tail(found.columns[i][0], found.columns[i][1]), found.columns[i][2]) for i in order]
            with self._space.reader() as txn:
                ok = passing(txn, entries)
            for i, passed in zip(order, ok, strict=True):
                if passed:
                    return found.bm25[i]
            # a document the kernel left out scores below every one it listed: none passed
            if found.total <= keep:
                return 0.0
            keep *= 4
            if not self._widens(kind, keep, found.total):
                return None
            found = self._text_search(sup, lists, keep, now_us, by_text=True)

    def _ranked_top(self, q: Query, keep: int, at: dt.datetime, memo: dict[str, Any]) -> list[Ranked]:
        """The ``keep`` best matches of a ``_pageable`` query, as ``_rank`` orders every match
        (``_matches`` without a limit), from the kernel's top k of ``_superset(q)`` widened until
        its filtered candidates settle the top ``keep``; no total is counted. ``memo`` keeps what
        the next page of the same query reuses (its archived matches, its best BM25).

        Exact because the score divides BM25 by the best of ``q``'s matches (hot and archived),
        which the kernel is given (``norm``): then the superset's lower bounds are the ones
        ``_rank`` bounds ``q``'s by, a match the kernel leaves out bounds below its k-th best, and
        once ``keep`` filtered candidates reach that k-th best, none left out can rank
        (test_prepare_from_kernel_pages_equals_ranking_every_match)."""
        now_us = ts_micros(at)
        if "all" in memo:
            every: list[Ranked] = memo["all"]
            return every[:keep]
        if "archived" not in memo:
            sup, passes = self._superset(q)
            archived = self._archived_of(q) if q.include_archived else []
            lists, scored = self._kernel_lists(sup)
            memo.update(sup=sup, passes=passes, lists=lists, scored=scored, archived=archived)
            memo["archived bm25"] = archived_bm25 = self._bm25_shared(q, [a[3] for a in archived])
            memo["archived best"] = max(archived_bm25, default=0.0)
            if passes is not None:
                first = self._text_search(sup, lists, _FIRST_PAGE, now_us, by_text=True)  # serves both below
                if self._drives_better(q, first.total, keep):
                    return self._every_match_ranked(q, keep, at, memo)
                filtered = self._filtered_best(sup, lists, passes, now_us, q.kind, first)
                if filtered is None:
                    return self._every_match_ranked(q, keep, at, memo)
                memo["best"] = max(filtered, memo["archived best"])
        sup, passes, lists, scored, archived = memo["sup"], memo["passes"], memo["lists"], memo["scored"], memo["archived"]
        first_boost, first_required = len(scored), len(lists) - len(dict.fromkeys(sup.tags))
        boost_bonus = bool(sup.boost_tags)
        k = keep + _FIRST_PAGE if passes is not None else keep
        while True:
            best = memo.get("best")
            found = self._text_search(sup, lists, k, now_us, norm=(best or 1.0) if best is not None else 0.0)
            if best is None:  # every match the kernel's: its best, or an archived one's
                memo["best"] = best = max(found.best, memo["archived best"])
                if best > found.best:
                    continue  # ranked again, divided as ``_rank`` divides
            top = best or 1.0
            hot: list[Hot] = []
            bm25: list[float] = []
            boosted: set[bytes] = set()
            lows: list[float] = []  # each listed candidate's lower bound, as ``_text_lows`` makes it
            kept: list[float] = []
            tails = [column_tail(ts_us, suffix) for ts_us, suffix, _ in found.columns]
            if passes is not None:
                with self._space.reader() as txn:
                    ok = passes(txn, [(tail, col[2]) for tail, col in zip(tails, found.columns, strict=True)])
            for i, ((ts_us, _, code), tfs, dl, bm) in enumerate(zip(found.columns, found.tfs, found.dls, found.bm25, strict=True)):
                tail = tails[i]
                low = 0.9 * bm / top + TEXT_LEVEL * (code >> 2) + 0.05 * 0.5 ** (max(now_us - ts_us, 0) / WEEK_US)
                is_boosted = boost_bonus and any(tfs[first_boost:first_required])
                if is_boosted:
                    low += 0.1
                lows.append(low)
                if passes is not None and not ok[i]:
                    continue
                if is_boosted:
                    boosted.add(tail)
                hot.append((tail, code, KernelHits(scored, tfs, dl)))
                bm25.append(bm)
                kept.append(low)
            # settled when the kernel listed every match, or ``keep`` kept ones reach its k-th best
            # lower bound (every match it left out bounds a level below that)
            if found.total <= k or passes is None:
                break
            kth = heapq.nlargest(k, lows)[-1] if len(lows) >= k else math.inf
            if sum(low >= kth for low in kept) >= keep:
                break
            k *= 4
            if not self._widens(q.kind, k, found.total):
                return self._every_match_ranked(q, keep, at, memo)
        reaching = self._archived_reaching(q, archived, memo["archived bm25"], keep, top, now_us)
        found_q = Matches(listed=hot, archived=reaching, best_text=best, boosted=boosted, bm25=bm25)
        return self._rank(q, found_q, at, keep)

    def _drives_better(self, q: Query, total: int, keep: int) -> bool:
        """Whether ranking every match costs less than the kernel's pages, for a query with a filter
        the kernel cannot apply: when the superset's matches are few (``_PROBE`` twice: ranking
        them all is a few ms), or the kind's or the tags' index range is small enough to drive.
        With ``S`` its entries and ``T`` the superset's matches, pages read about ``keep * T / S``
        candidates to find ``keep`` that pass, the range ``S``: a range under ``sqrt(keep * T)``,
        or under ``_PROBE`` (where ``_matches`` drives from it: several filters pass fewer than any
        one), drives (a research failure tagged ab-test or gdpr: 52 ms from pages, 1.4 ranking
        every match; a review's find). ``total``: the superset's matches, as the kernel counted
        them. Probes at most that many entries of each range."""
        if not _DRIVES:
            return False
        if total <= 2 * _PROBE:
            return True
        limit = max(math.isqrt(max(keep, 1) * total), _PROBE) + 1  # filters compound: a range of _PROBE drives as ``_matches`` would
        for name, stream in self._sources(q):
            if (name.startswith("kind ") and q.kind) or name == "any tag":
                if sum(1 for _ in itertools.islice(stream, limit)) < limit:
                    return True
        return False

    @staticmethod
    def _widens(kind: str | None, keep: int, total: int) -> bool:
        """Whether the kernel's next page (``keep`` of ``total`` matches) is worth reading: short of
        all of them, or without a kind, whose index range drives ranking every match when few of
        the words' matches are of it (a research failure about the deploy: 91 ms from pages that
        list all 8,888 failures with the words, 11 from the kind's range)."""
        return keep < total or kind is None

    def _every_match_ranked(self, q: Query, keep: int, at: dt.datetime, memo: dict[str, Any]) -> list[Ranked]:
        """The top ``keep`` of every match of ``q`` ranked (kept in ``memo`` for the next pages)."""
        found = self._matches(q)
        memo["all"] = every = self._rank(q, found, at, found.total)
        return every[:keep]

    def _text_search(
        self,
        q: Query,
        lists: Sequence[tuple[str, int]],
        keep: int,
        now_us: int,
        tags_only: bool = False,
        *,
        by_text: bool = False,
        norm: float = 0.0,
    ) -> TextFound:
        """The search kernel over ``lists`` (a word's postings or a tag's list, and its role)
        with ``q``'s window and outcome: what it found, with the time, id suffix and index code
        of each document it returned (``columns``; ``column_tail`` makes their index tails). With ``tags_only``
        every list is a tag's, and the top ``keep`` rank by relevance and recency (``BY_RELEVANCE``);
        ``by_text`` ranks by BM25 alone (``BY_TEXT``). ``norm`` > 0 is the best BM25 the ranking
        divides by in place of the kernel's own (``SearchParams.norm``). ``q.with_outcome`` is
        applied by the kernel (``ANY_OUTCOME``), so it counts those matches exactly."""
        text, owner = self._layout.text, self.name
        idf, avgdl = self._bm25_weights(q)
        chunks = text.chunks(owner)
        memo = text.memo(owner)
        params = memo.get(_PARAMS)
        if params is None or params.avgdl != avgdl:
            params = memo[_PARAMS] = SearchParams(avgdl, K1, B, WEEK_US, TEXT_LEVEL, 0.9, 0.05, 1e-9, float(10 * LEVELS_PER_POINT), 0.1)
        if tags_only:
            params = replace(params, **BY_RELEVANCE)
        elif by_text:
            params = replace(params, **_BY_TEXT)
        if norm > 0.0:
            params = replace(params, norm=norm)
        blocks = [self._stored_list(memo, name, tags_only or role > RANK) for name, role in lists]
        weights = [idf.get(name, 0.0) if role <= RANK and not tags_only else 0.0 for name, role in lists]
        roles = [role for _, role in lists]
        summaries = text.chunk_summaries(owner, chunks) if keep else None  # top-k: bound documents by their chunk
        return text_search(blocks, weights, chunks, params, now_us, q.lo, q.hi, _kernel_outcome(q), keep, roles, summaries)

    def _count_outside(self, q: Query, lists: Sequence[tuple[str, int]], tags_only: bool) -> tuple[int, int | None, int] | None:
        """The matches ``_text_search`` finds in ``lists`` with ``q``'s outcome, counted before its
        window (with the latest of them) and after it (``count_outside``: one pass, exact). None
        for tag lists longer than ``_COUNTED_BYTES`` (one list without an outcome, counted from
        block headers) or ``_MERGED_BYTES`` (else) when one index range holds the matches: it is
        then read by its keys, from the window out, up to the cap."""
        text, owner = self._layout.text, self.name
        memo = text.memo(owner)
        lists = [(name, role) for name, role in lists if role != RANK]  # a word that only ranks makes no match
        outcome = _kernel_outcome(q)
        if tags_only and self._single_range(q) is not None:
            limit = _COUNTED_BYTES if len(lists) == 1 and outcome is None else _MERGED_BYTES
            if sum(self._list_bytes(memo, name) for name, _ in lists) > limit:
                return None
        blocks = [self._stored_list(memo, name, tags_only or role > RANK) for name, role in lists]
        chunks = text.chunks(owner)
        roles = [role for _, role in lists]
        return count_outside(blocks, chunks, q.lo, q.hi, outcome, roles, text.chunk_summaries(owner, chunks))

    def _list_bytes(self, memo: dict[Any, Any], tag: str) -> int:
        """The stored size of a tag's list, kept in ``memo``: a list too long to keep there is read
        once a memo, not on every empty answer that only asks how long it is (a read costs about
        1 us a KB: 0.6 ms for a common tag's 600 KB at a million episodes)."""
        key = (*_LIST_SIZE, tag)
        size: int | None = memo.get(key)
        if size is None:
            size = memo[key] = len(self._stored_list(memo, tag, True).data)
        return size

    def _stored_list(self, memo: dict[Any, Any], name: str, tag: bool) -> StoredList:
        """A term's blocks (a tag's list, with ``tag``) as stored: as this process read them while
        the owner's documents stayed as they are (``TextIndex.memo``), unless too large to keep."""
        key = (*_LIST, name, tag)
        found: StoredList | None = memo.get(key)
        if found is None:
            text = self._layout.text
            found = text.stored_list(self.name, name, tag=tag)
            held = memo.get(_LIST_BYTES, 0) + len(found.data)
            room: int | None = memo.get(_LIST_ROOM)
            if room is None:
                room = memo[_LIST_ROOM] = max(_MEMO_LIST_BYTES, _MEMO_LIST_BYTES_PER_DOC * CHUNK_DOCS * len(text.chunks(self.name).records))
            if held <= room:
                if len(memo) >= _MEMO_ENTRIES:
                    memo.clear()
                    held = len(found.data)
                memo[key], memo[_LIST_BYTES] = found, held
        return found

    def _filter(
        self,
        q: Query,
        driver: Iterable[tuple[bytes, int]],
        driver_name: str,
        postings: dict[bytes, dict[str, tuple[int, int]]],
        cap: int | None,
    ) -> list[Hot]:
        """The driver's entries that pass every other filter, by index lookups on their tails."""
        owner, st = self.name, self._layout
        tags = [st.by_tag.key((owner, t)) for t in q.tags if driver_name != f"tag {t}"]
        any_tags = [st.by_tag.key((owner, t)) for t in q.any_tags] if driver_name != "any tag" else []
        kinds = None
        if q.kind and not driver_name.startswith("kind "):
            kinds = [st.by_kind.key((owner, q.kind, o or NO_OUTCOME)) for o in OUTCOME_OF_CODE]
        outcome = OUTCOME_OF_CODE.index(q.outcome) if q.outcome else None
        session = st.by_session.key((owner, q.session)) if q.session and not driver_name.startswith("session ") else None
        window = (q.lo is not None or q.hi is not None) and driver_name == "text"
        lo = q.lo if q.lo is not None else -(1 << 62)
        hi = q.hi if q.hi is not None else 1 << 62
        looked_up = tuple(dict.fromkeys((q.terms if driver_name != "text" else ()) + q.rank_terms))  # the text driver brings its postings
        required = bool(q.terms and q.terms_required)
        match = set(q.terms)
        with_outcome = q.with_outcome and outcome is None
        # the scope reads each candidate's header (its tags), one lookup as for any other filter,
        # unless the tags required already hold it in scope
        scoped = set(q.scope_tags)
        held = bool(scoped & set(q.tags)) or bool(q.any_tags and set(q.any_tags) <= scoped)
        scope = st.parent_key(st.states, (owner,)) if scoped and not held else None
        if (
            not (tags or any_tags or kinds or session or window or looked_up or postings or with_outcome or scope)
            and driver_name != "any tag"
        ):
            # nothing to look up and no repeats (only any_tags' ranges overlap): keep or drop by code
            if outcome is None:
                return [(tail, code, NO_HITS) for tail, code in itertools.islice(driver, cap)]
            kept = [(tail, code, NO_HITS) for tail, code in driver if code & 3 == outcome]
            return kept[:cap] if cap is not None else kept  # (only the empty-answer note caps)
        out: list[Hot] = []
        seen: set[bytes] = set()
        text = self._layout.text

        check = _index_checks(q, kinds, any_tags, scope) if kinds is not None or any_tags or scope is not None else None

        def passing() -> Iterator[tuple[bytes, int]]:
            # a chunk of candidates at a time, each lookup filter one get_many over the chunk
            # (``_index_checks``; the tags and the session likewise)
            size = 64 if cap is not None else 512
            candidates = iter(driver)
            with self._space.reader() as txn:
                while chunk := list(itertools.islice(candidates, size)):
                    kept = [
                        (tail, code)
                        for tail, code in chunk
                        if (outcome is None or code & 3 == outcome)
                        and not (with_outcome and not code & 3)
                        and not (window and not lo <= tail_ts(tail) < hi)
                    ]
                    for p in tags:
                        if not kept:
                            break
                        found = txn.get_many([p + tail for tail, _ in kept])
                        kept = [(tail, code) for tail, code in kept if p + tail in found]
                    if session is not None and kept:
                        found = txn.get_many([session + tail for tail, _ in kept])
                        kept = [(tail, code) for tail, code in kept if session + tail in found]
                    if check is not None and kept:
                        kept = [entry for entry, ok in zip(kept, check(txn, kept), strict=True) if ok]
                    for tail, code in kept:
                        if tail in seen:  # a union of ranges (any_tags, kinds) can repeat an entry
                            continue
                        seen.add(tail)
                        yield tail, code

        entries = passing()
        # the terms are looked up a batch of candidates at a time (each block read serves many),
        # a small one when a cap may stop early
        batch = (256 if cap is not None else 1 << 16) if looked_up else 1 << 30
        while chunk := list(itertools.islice(entries, batch)):
            found = text.hits_of_keys(owner, looked_up, [t[-ID_TAIL_BYTES:] for t, _ in chunk]) if looked_up else None
            for i, (tail, code) in enumerate(chunk):
                hits = postings.get(tail[ID_SLICE], NO_HITS) if postings else NO_HITS
                if found is not None and found[i]:
                    hits = {**hits, **found[i]}
                if required and match.isdisjoint(hits):
                    continue
                out.append((tail, code, hits))
                if cap is not None and len(out) >= cap:
                    return out
        return out

    def _with_told(self, q: Query, found: Matches) -> Matches:
        """``found`` and the episodes recorded outside ``q``'s window whose text tells of a time
        within it (``^EPTD``), ranked from their headers beside the others. Text scores stay
        normalised by the best BM25 of all matches: when a told one beats every match the kernel
        saw, the window's matches are listed whole again (the kernel's pruning assumed its best)."""
        told = self._told_matches(q)
        if not told:
            return found
        if q.terms and found.best_text is not None and max(self._bm25(q, [hits for _, _, hits in told])) > found.best_text:
            found = self._matches(q)
        found.archived.extend(told)
        found.total += len(told)
        return found

    def _told_matches(self, q: Query) -> list[Archived]:
        """Hot episodes outside ``q``'s window whose told windows fall in it (``told_within``) and
        that pass ``q``'s other filters, with their postings of ``q``'s terms."""
        lo = q.lo if q.lo is not None else -(1 << 62)
        hi = q.hi if q.hi is not None else 1 << 62
        owner, lay = self.name, self._layout
        ids: dict[str, None] = {}
        for subs, _ in lay.by_told.range((owner,), q.lo, q.hi):
            start, end, ts, eid = int(subs[1]), int(subs[2]), int(subs[3]), str(subs[4])
            if told_within(start, end, q.lo, q.hi) and not lo <= ts < hi:  # one in the window by its time is among the others
                ids[eid] = None
        if not ids:
            return []
        headers = self._headers_of(ids)
        passing = [eid for eid, h in headers.items() if header_passes(q, h)]
        found = (
            lay.text.hits_of_keys(owner, q.scored_terms, [encode_subscript(eid) for eid in passing])
            if q.scored_terms
            else [{} for _ in passing]
        )
        out: list[Archived] = []
        boost = set(q.boost_tags)
        for eid, hits in zip(passing, found, strict=True):
            h = headers[eid]
            if q.terms and q.terms_required and not any(t in hits for t in q.terms) and boost.isdisjoint(h["tags"]):
                continue
            out.append((eid, h, hits))
        return out

    def _archived_matches(self, q: Query, cap: int | None) -> list[Archived]:
        """Archived episodes in the window whose header and one-line summary match ``q``: the
        headers of the digest's matches (``ArchivedDigest.matches``, their words counted there),
        or of every archived memory in the window past ``_DIGESTED``."""
        states, owner = self._layout.states, self.name
        out: list[Archived] = []
        digest = self._archived_digest()
        if digest is not None:
            scored = q.scored_terms
            for i in digest.matches(q, cap):
                if (h := states.get((owner, eid := digest.ids[i]))) is not None:
                    words = digest.words[i]
                    out.append((eid, h, {t: (words[t] * TF_UNIT, _ARCHIVED_DL) for t in scored if t in words}))
            return out
        for subs, _ in self._layout.archived.range((owner,), q.lo, q.hi):
            h = states.get((owner, eid := str(subs[2])))
            if h is None:
                continue
            tags = set(h["tags"])
            if not set(q.tags) <= tags or (q.any_tags and not set(q.any_tags) & tags) or not in_scope(q, h["tags"]):
                continue
            if (
                (q.kind and h["kind"] != q.kind)
                or (q.outcome and h.get("outcome") != q.outcome)
                or (q.with_outcome and not h.get("outcome"))
                or (q.session and h.get("session") != q.session)
            ):
                continue
            words = term_counts(archived_words(h))
            # every occurrence a whole one, as terms_of counts it; its length is unknown
            # (``_ARCHIVED_DL``): scored as a document of its one-liner's few words, an archived
            # memory took the BM25 of a very short one (10.4 where the average length gives 8.1)
            hits = {t: (words[t] * TF_UNIT, _ARCHIVED_DL) for t in q.scored_terms if t in words}
            # "text spend or tags travel": a memory with a boost tag matches as one with the words does
            if q.terms and q.terms_required and not any(t in hits for t in q.terms) and tags.isdisjoint(q.boost_tags):
                continue
            out.append((eid, h, hits))
            if cap is not None and len(out) >= cap:
                break
        return out

    def _superseded_matches(self, q: Query, cap: int | None) -> list[Archived]:
        """Superseded versions in the window whose header and record match ``q`` (their records
        stay hot, so their text is matched whole); ranked beside the others from their headers."""
        out: list[Archived] = []
        if cap is not None and cap <= 0:
            return out
        for subs, _ in self._layout.superseded.range((self.name,), q.lo, q.hi):
            eid = str(subs[2])
            h = self._layout.states.get((self.name, eid))
            record = self._layout.record_of(self.name, eid)
            if h is None or record is None or not header_passes(q, h):
                continue
            tf, dl = terms_of(record)
            hits = {t: (tf[t], dl) for t in q.scored_terms if tf.get(t)}
            if q.terms and q.terms_required and not any(t in hits for t in q.terms):
                continue
            out.append((eid, h, hits))
            if cap is not None and len(out) >= cap:
                break
        return out

    def _rank(self, q: Query, found: Matches, now: dt.datetime, limit: int) -> list[Ranked]:
        """The ``limit`` best matches by the documented score, reading headers only for the few
        whose score bound (from the relevance level in their index code) can reach the top."""
        archived = found.archived
        if not (found.hot_count or archived) or limit == 0:
            return []
        now_us = ts_micros(now)
        bm25: list[float] = []
        top_text = 1.0
        # (tail, term postings, bm25) of the hot matches that can reach the top ``limit``, in match order
        picks: list[tuple[bytes, Hits, float]]
        if found.column is not None and not q.terms:
            column = found.column
            # a few more matches than the limit are all read: bounding them first (their levels, from
            # a read of the owner's level stamps, then a bound each) cost more than the headers it saved
            chosen = range(len(column)) if len(column) <= _READ_WHOLE * limit else column.best(now_us, limit)
            at, keys_of = column.prefix, column.keys
            picks = [(keys_of[i][at:], NO_HITS, 0.0) for i in chosen]
            hot_count = len(column)
        else:
            hot = found.hot
            if q.terms:
                bm25 = list(found.bm25) if found.bm25 is not None else self._bm25(q, [hits for _, _, hits in hot])
                lows: list[float] = []  # of hot's first matches, when already known
                if found.pending:  # (only with a boost tag, hence with terms)
                    extras, lows = self._reachable(q, hot, bm25, found.pending, found.boosted, now_us, limit)
                    hot.extend(extras)
                    bm25 += self._bm25(q, [hits for _, _, hits in extras])
                    found.pending = None
                bm25 += self._bm25(q, [hits for _, _, hits in archived])
                top_text = (found.best_text if found.best_text is not None else max(bm25, default=0.0)) or 1.0
                picked = self._bounded_by_text(q, hot, found.boosted, bm25, top_text, now_us, limit, lows)
            else:
                picked = bounded_by_recency(hot, now_us, limit)
            picks = [(hot[i][0], hot[i][2], bm25[i] if q.terms else 0.0) for i in picked]
            hot_count = len(hot)
        # each pick's id, subscript and header key, by its tail (``_keys_of``)
        known = self._tail_keys
        picked_keys = [known.get(tail) or self._keys_of(tail) for tail, _, _ in picks]
        raws = self._space.get_many([pk[2] for pk in picked_keys])  # one round trip on PostgreSQL
        # (a hot match's keys or an archived one's id, header with its time and relevance, term postings, bm25)
        got = raws.get
        heads: list[tuple[_TailKeys | str, DecodedHeader, Hits, float]] = [
            (pk, decoded_header(raw), hits, text)
            for pk, (_, hits, text) in zip(picked_keys, picks, strict=True)
            if (raw := got(pk[2])) is not None
        ]
        for j, (eid, h, hits) in enumerate(archived):
            heads.append((eid, (h, ts_micros(h["ts"]), float(h["relevance"]) / 10.0), hits, bm25[hot_count + j] if q.terms else 0.0))
        boost = frozenset(q.boost_tags)
        # (``now_us - ts_us if ts_us < now_us else 0``: the age, never negative, without a call of max)
        if q.terms:
            scores = [
                0.9 * text / top_text + 0.05 * rel + 0.05 * 0.5 ** ((now_us - ts_us if ts_us < now_us else 0) / WEEK_US)
                for _, (_, ts_us, rel), _, text in heads
            ]
        else:
            scores = [0.6 * rel + 0.4 * 0.5 ** ((now_us - ts_us if ts_us < now_us else 0) / WEEK_US) for _, (_, ts_us, rel), _, _ in heads]
        if boost:
            scores = [s + 0.1 if not boost.isdisjoint(h["tags"]) else s for s, (_, (h, _, _), _, _) in zip(scores, heads, strict=True)]
        out: list[Ranked] = []
        for i in _top(scores, limit):
            keys, (h, _, _), hits, text = heads[i]
            if isinstance(keys, str):  # an archived match, by its id
                out.append((keys, h, scores[i], partial(why_matched, q, h, hits, text), None))
            else:
                out.append((keys[0], h, scores[i], partial(why_matched, q, h, hits, text), keys[1]))
        return out

    def _keys_of(self, tail: bytes) -> _TailKeys:
        """A hot match's id, the id's encoded subscript and its header's key, from its index tail
        (``tail_id``; the header's key is the owner's prefix and that subscript), kept in
        ``_tail_keys``: pure functions of the owner and the tail, so never stale. A LoCoMo question
        ranks 25 matches, mostly seen before, and making these was a tenth of its ranking."""
        known = self._tail_keys
        if len(known) >= _KEYS_KEPT:
            known.clear()
        subscript = tail[-ID_TAIL_BYTES:]
        header_key = self._layout.parent_key(self._layout.states, (self.name,)) + subscript
        keys = known[tail] = (tail_id(tail), subscript, header_key)
        return keys

    def _bounded_by_text(
        self,
        q: Query,
        hot: list[Hot],
        boosted: set[bytes] | None,
        bm25: list[float],
        top_text: float,
        now_us: int,
        limit: int,
        known: list[float],
    ) -> list[int]:
        """Positions in ``hot`` whose text score, exact recency and tag boost, with relevance at
        the bottom of its level, leave them within one level (``TEXT_LEVEL``) of the top
        ``limit``. ``known`` holds those lower bounds for hot's first matches, if computed."""
        if len(hot) <= limit:  # all of them (the kernel lists no more than can rank): no bound to compute
            return list(range(len(hot)))
        lows = known + self._text_lows(q, hot[len(known) :], boosted, bm25[len(known) :], top_text, now_us)
        if len(lows) <= limit:
            return list(range(len(lows)))
        cut = heapq.nlargest(limit, lows)[-1] - TEXT_LEVEL - 1e-9
        return [i for i, low in enumerate(lows) if low >= cut]

    def _text_lows(
        self, q: Query, hot: list[Hot], boosted: set[bytes] | None, bm25: list[float], top_text: float, now_us: int
    ) -> list[float]:
        """Each match's score with its relevance at the bottom of its level. The boost is looked
        up unless ``boosted`` holds every boosted tail."""
        boost = [self._layout.by_tag.key((self.name, t)) for t in q.boost_tags] if boosted is None else []
        lows: list[float] = []
        with self._space.reader() as txn:
            get = txn.get
            for i, (tail, code, _) in enumerate(hot):
                low = 0.9 * bm25[i] / top_text + TEXT_LEVEL * (code >> 2) + 0.05 * 0.5 ** (max(now_us - tail_ts(tail), 0) / WEEK_US)
                if (boosted is not None and tail in boosted) or (boost and any(get(p + tail) is not None for p in boost)):
                    low += 0.1
                lows.append(low)
        return lows

    def _reachable(
        self, q: Query, worded: list[Hot], bm25: list[float], pending: RangeColumn, boosted: set[bytes] | None, now_us: int, limit: int
    ) -> tuple[list[Hot], list[float]]:
        """The matches through a boost tag alone that can still reach the top ``limit``, with
        the postings of the tag's own words looked up; and the worded matches' lower bounds
        when they were computed (they then stay valid: the best BM25 is a worded one).

        Their BM25 counts only those words, so it is below ``sum(idf * (k1 + 1))``. When that
        is no more than the best worded BM25 (so the normalisation stays the worded one) and
        ``limit`` worded matches exist, a pending match whose score bound (that text, relevance
        at the top of its level, exact recency, the boost) is below the ``limit``-th worded
        lower bound cannot rank, and is counted without being read."""
        idf, _ = self._bm25_weights(q)
        ceiling = sum(idf[t] * (K1 + 1) for t in q.rank_terms)  # BM25 per term stays below idf * (k1 + 1)
        top = max(bm25, default=0.0)
        chosen: Iterable[int] = range(len(pending))
        lows: list[float] = []
        if len(worded) >= limit and top > 0 and ceiling <= top:
            lows = self._text_lows(q, worded, boosted, bm25, top, now_us)
            floor = heapq.nlargest(limit, lows)[-1] if limit else math.inf
            chosen = pending.reaching(floor, 0.9 * ceiling / top + 0.1, TEXT_LEVEL, 0.05, now_us)
        picked = list(chosen)
        tails = [pending.tail(i) for i in picked]
        found = self._layout.text.hits_of_keys(self.name, tuple(dict.fromkeys(q.rank_terms)), [t[-ID_TAIL_BYTES:] for t in tails])
        out: list[Hot] = [(tail, pending.codes[i], hits or NO_HITS) for i, tail, hits in zip(picked, tails, found, strict=True)]
        return out, lows

    def _bm25_weights(self, q: Query) -> tuple[dict[str, float], float]:
        """BM25's idf of each query term and the average document length, from the statistics."""
        if q.weights is not None:
            return q.weights
        terms = tuple(dict.fromkeys(q.scored_terms))
        counts = self._counts(terms)
        n_docs = max(counts[0], 1)
        avgdl = max(counts[1], 1) / n_docs
        idf = {}
        for t, df in zip(terms, counts[2:], strict=True):
            idf[t] = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        for t in q.tag_name_terms:  # a name weighs more than its share of the documents says (rank.NAME_WEIGHT)
            if t in idf:
                idf[t] *= NAME_WEIGHT
        q.weights = (idf, avgdl)
        return q.weights

    def _bm25_shared(self, q: Query, hits_list: Sequence[Hits]) -> list[float]:
        """``_bm25``, computed once for each postings mapping ``hits_list`` holds more than once
        (``_archived_light`` shares one among archived memories holding the terms as often)."""
        known: dict[int, float] = {}
        out: list[float] = []
        for hits in hits_list:
            score = known.get(id(hits))
            if score is None:
                score = known[id(hits)] = self._bm25(q, [hits])[0]
            out.append(score)
        return out

    def _bm25(self, q: Query, hits_list: Sequence[Hits]) -> list[float]:
        """Okapi BM25 of each candidate's term postings (tf, document length) for ``q.scored_terms``."""
        idf, avgdl = self._bm25_weights(q)
        return [sum(bm25_term(idf[t], tf, dl or avgdl, avgdl) for t, (tf, dl) in hits.items() if t in idf) for hits in hits_list]

    def _record_keys(self, ranked: Sequence[Ranked]) -> list[bytes]:
        """The keys of the ranked memories' records (``^MEM``), in order: the day's parent key and
        the id's subscript, kept by the subscript where the ranking gave it (``_keys_of``'s, the same
        object each time: a lookup of a hash already computed). A pure function of the owner and the
        subscript, so never stale."""
        owner, lay = self.name, self._layout
        mem, parent_key = lay.mem, lay.parent_key
        known = self._record_key_of
        keys = []
        for eid, _, _, _, e in ranked:
            key = known.get(e) if e is not None else None
            if key is None:
                key = parent_key(mem, (owner, episode_day(eid))) + (e if e is not None else encode_subscript(eid))
                if e is not None:
                    if len(known) >= _KEYS_KEPT:
                        known.clear()
                    known[e] = key
            keys.append(key)
        return keys

    def _memories(self, ranked: Sequence[Ranked]) -> list[Hit]:
        """The hits of ``ranked``, their records read in the query's snapshot."""
        out: list[Hit] = []
        if not ranked:
            return out
        owner = self.name
        keys = self._record_keys(ranked)
        raws = self._space.get_many(keys)  # one round trip on PostgreSQL
        deferred, got = Hit.deferred, raws.get
        for key, (eid, header, score, why, _) in zip(keys, ranked, strict=True):
            status = header.get("status")
            if status == "archived":
                record = {**header, "summary": header.get("one_line", ""), "content": ""}
                why = partial(noted, why, "archived: one-line summary (restore() brings back the full record)")
                out.append(Hit.deferred(eid, partial(to_episode, owner, eid, record, header), score, why, 6))
                continue
            # the record's bytes are read in the query's snapshot, and unpacked with the episode when first read
            raw = got(key)
            if raw is None:
                continue
            if status == SUPERSEDED:
                why = partial(noted, why, f"superseded by {successor_of(header)} (an earlier version)")
            out.append(deferred(eid, partial(_episode_of, owner, eid, raw, header), score, why, 6))
        return out


def _top(scores: list[float], k: int) -> list[int]:
    """``native.top_k``: a few scores are sorted here, where the C call's two ffi.new and the
    twin's array cost more than the sort. ``sorted`` with ``reverse`` is stable, so ties keep index
    order as in C; a NaN (which C ranks last) goes to C."""
    if len(scores) <= _FEW_SCORES and not math.isnan(sum(scores)):
        return sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:k]
    return native.top_k(scores, k)


def _window_columns(space: Globals, parent: bytes, lo: int | None, hi: int | None) -> tuple[list[bytes], list[bytes]]:
    """``Global.raw_columns(subs, lo, hi)`` of a time-keyed index range whose parent key the layout
    keeps (``parent``): its bounds are that key and one int encoded each, where raw_columns encoded
    the parent again and dispatched each bound on its type (a tenth of a small recall's steps)."""
    start, stop = children_range(parent)
    return space.scan_columns(parent + encode_int(lo) if lo is not None else start, parent + encode_int(hi) if hi is not None else stop)


def _check_page(limit: int, offset: int) -> None:
    """Refuse a bad ``limit`` or ``offset`` (ValidationError naming it, sanitized), before any answer."""
    check_limit(limit)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValidationError(f"offset {shown(offset)}: must be a non-negative int")


def _affirms(text: str, terms: Sequence[str]) -> bool:
    """Whether ``text`` says each of ``terms`` other than negated: "When did we last hire an SRE?"
    is not answered by "Debrief for Grace (sre): no hire" (test_a_negated_act_is_no_event)."""
    negated: Counter[str] = Counter()
    for m in _NEGATED.finditer(text) if "no" in text.lower() or "'t" in text or "’t" in text else ():
        negated.update(t for t in terms_of_word(m.group("word")) if t in terms)
    if not negated:
        return True
    said = Counter({t: n for t, n in term_counts(text).items() if t in negated})  # identifiers whole too, as negated
    return all(said[t] > n for t, n in negated.items())


def _names_tags(h: Mapping[str, Any], text: str, forms: Mapping[str, frozenset[str]]) -> bool:
    """Whether a memory (its header and text) carries each tag of ``forms`` or writes it (one of its forms, as a word)."""
    missing = [f for tag, f in forms.items() if tag not in h["tags"]]
    return not missing or all(set(split_words(text)) & f for f in missing)


def _index_checks(q: Query, kinds: list[bytes] | None, any_tags: list[bytes], scope: bytes | None) -> Passing:
    """The check of ``q``'s kind (``kinds``: its index key prefix for each outcome code), any of
    its tags (their index key prefixes) and scope (the headers' prefix) on (tail, code) entries:
    one ``get_many`` per filter for them all, a round trip each on PostgreSQL, where a get per
    candidate made history of 1,500 attempts 1,497 round trips and a prepare with a kind 968
    (test_history_and_ask_read_candidates_in_batches)."""

    def passing(txn: Any, entries: Sequence[tuple[bytes, int]]) -> list[bool]:
        ok = [True] * len(entries)
        if kinds is not None:
            found = txn.get_many([kinds[code & 3] + tail for tail, code in entries])
            ok = [o and kinds[code & 3] + tail in found for o, (tail, code) in zip(ok, entries, strict=True)]
        if any_tags:
            found = txn.get_many([p + tail for (tail, _), o in zip(entries, ok, strict=True) if o for p in any_tags])
            ok = [o and any(p + tail in found for p in any_tags) for o, (tail, _) in zip(ok, entries, strict=True)]
        if scope is not None:
            found = txn.get_many([scope + tail[-ID_TAIL_BYTES:] for (tail, _), o in zip(entries, ok, strict=True) if o])
            ok = [
                o and (raw := found.get(scope + tail[-ID_TAIL_BYTES:])) is not None and in_scope(q, decoded_header(raw)[0]["tags"])
                for o, (tail, _) in zip(ok, entries, strict=True)
            ]
        return ok

    return passing


def _kernel_outcome(q: Query) -> int | None:
    """The kernel's outcome filter of ``q``: its outcome, any outcome (``with_outcome``), or none."""
    return OUTCOME_OF_CODE.index(q.outcome) if q.outcome else ANY_OUTCOME if q.with_outcome else None


def _header(raw: bytes) -> dict[str, Any]:
    """``unpack_value(raw)`` of a header (^EPST), remembered by its bytes (never mutate it)."""
    return decoded_header(raw)[0]


def _episode_of(owner: str, eid: str, raw: bytes, header: dict[str, Any]) -> Episode:
    """The episode of a packed record and its header."""
    return to_episode(owner, eid, unpack_value(raw), header)


def _tails(g: Global, subs: tuple[Any, ...], lo: int | None, hi: int | None, levels_of: Callable[[], bytes]) -> Iterator[tuple[bytes, int]]:
    """(encoded (ts, id) tail, index code) of the entries of one time-ordered index range, with
    the levels of the owner's documents (``TextIndex.levels_of``), read at the first entry."""
    n = len(g.key(subs))
    levels = None
    for key, raw in g.raw_range(subs, lo, hi):
        if levels is None:
            levels = levels_of()
        yield key[n:], entry_code(raw, levels)


def _chain(streams: Iterable[Iterator[tuple[bytes, int]]]) -> Iterator[tuple[bytes, int]]:
    for s in streams:
        yield from s


def _reads_as_a_phrase(word: str) -> bool:
    """Whether a joined run reads as a phrase rather than a name: a number (or an ordinal, "3rd")
    first and a word of letters in it ("3-day", "24-hour", "1-on-1", "3rd-party"), where
    "web-01", "gpt-5" and "INV-2026-0099" name one thing."""
    parts = _JOINED.split(word)
    return re.fullmatch(r"[0-9]+(?:st|nd|rd|th)?", parts[0]) is not None and any(p.isalpha() for p in parts[1:])


@functools.lru_cache(maxsize=1 << 12)
def _singulars(word: str) -> tuple[str, ...]:
    """The tags a plural or inflected word of letters may name: its singular ("deploys",
    "fixes") and its stem's form ("deployments" -> "deploy"); none for a word of other marks."""
    form = tag_form(word)
    if form is None or not form.isalpha() or len(form) < 4:
        return ()
    stem = terms_of_word(form)
    if len(stem) != 1 or stem[0] in QUESTION_WORDS:  # "does", "news", "plans": how a thing is asked, never a tag
        return ()
    out = [form[:-2]] if form.endswith("es") else []
    out += [form[:-1]] if form.endswith("s") and not form.endswith("ss") else []
    out += [stem[0]] if stem[0] != form else []
    return tuple(dict.fromkeys(t for t in out if len(t) >= 3))


def _remembered(memo: dict[Any, Any], key: tuple[Any, ...], read: Callable[[], bool]) -> bool:
    """``memo[key]``, read and kept first if missing (``TextIndex.memo``: what a question derived
    from the owner's documents while they stay as they are), the memo bounded like every entry."""
    found: bool | None = memo.get(key)
    if found is None:
        if len(memo) >= _MEMO_ENTRIES:
            memo.clear()
        found = memo[key] = read()
    return found


@lru_cache(maxsize=1 << 14)
def _term_subscript(term: str) -> bytes:
    """A term's encoded subscript (a key is a pure function of its subscripts), remembered: a
    query reads each of its terms' document frequency, and questions share their words."""
    return encode_subscript(term)
