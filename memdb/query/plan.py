"""What a query is once read (``Query``: window, tags, kind, outcome, words) and what matched it
before ranking (``Matches``), with the checks of recall's and history's arguments."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any, Final

from memdb.errors import NoSearchableWordsError, SanitizerError, ValidationError
from memdb.memory.ids import ts_micros
from memdb.memory.layout import ID_TAIL_BYTES, OUTCOME_OF_CODE, tail_id, tail_ts
from memdb.memory.models import check_tag_count, utc
from memdb.memory.sanitize import PLACEHOLDER, RegexSanitizer, Sanitizer, sanitize_fields, shown
from memdb.memory.sanitize.fields import TAG_MARKER, given_tags, tags_as_stored
from memdb.memory.sanitize.known import known_secrets
from memdb.memory.text import terms_and_words
from memdb.memory.timephrase import OPEN_END, OPEN_START, TimeWindow, day_of
from memdb.query.question import tag_form
from memdb.query.rank import Hits, Hot, RangeColumn

__all__ = [
    "QUESTION_CHARS",
    "Archived",
    "Matches",
    "Query",
    "Ranked",
    "TagFilters",
    "Why",
    "as_utc",
    "check_limit",
    "events_of",
    "header_passes",
    "in_scope",
    "recall_window",
    "sanitized",
    "tag_filters",
    "text_terms",
    "unsearched",
]

QUESTION_CHARS = 10_000  # the cap on a question or a text filter, checked before any work


# An archived match: id, header, postings of its one-line summary.
Archived = tuple[str, dict[str, Any], Hits]
# Why a memory matched, or what makes it when first read (``Hit.why``): most callers never ask.
Why = tuple[str, ...] | Callable[[], tuple[str, ...]]
# A ranked memory: id, header, score, why it matched, and the id's encoded subscript if known.
Ranked = tuple[str, dict[str, Any], float, Why, bytes | None]


@dataclass
class Matches:
    """What matched a query before ranking: the hot matches (a list, or one index range's
    columns), the archived ones, and how many there are."""

    listed: list[Hot] | None = None
    archived: list[Archived] = field(default_factory=list)
    total: int = 0
    counted: set[bytes] | None = None  # ids of every hot match when ``hot`` holds only the best
    column: RangeColumn | None = None  # the hot matches as columns, when one index range holds them all
    boosted: set[bytes] | None = None  # tails of the hot matches holding a boost tag, when all are known
    # matches through a boost tag alone, not yet looked up (tails, in time order): ranking looks
    # up only those whose score bound can reach the top (their text is the tag's own words at most)
    pending: RangeColumn | None = None
    best_text: float | None = None  # the best BM25 of every match, when ``listed`` holds only those that can rank
    bm25: list[float] | None = None  # the BM25 of each listed match, when the kernel computed it

    @property
    def hot(self) -> list[Hot]:
        """The hot matches as a list (built from the columns the first time it is asked for)."""
        if self.listed is None:
            self.listed = self.column.hot() if self.column is not None else []
        return self.listed

    @property
    def hot_count(self) -> int:
        """How many hot matches there are, without building the list or looking anything up."""
        listed = len(self.column) if self.column is not None and self.listed is None else len(self.hot)
        return listed + len(self.pending or ())


@dataclass
class Query:
    """A recall, a history or a question once read: its window ``[lo, hi)`` in microseconds,
    tags, words and filters."""

    lo: int | None
    hi: int | None
    tags: tuple[str, ...]
    any_tags: tuple[str, ...]
    terms: tuple[str, ...]
    terms_required: bool
    kind: str | None
    outcome: str | None
    session: str | None
    include_archived: bool = False
    boost_tags: tuple[str, ...] = ()
    rank_terms: tuple[str, ...] = ()
    tag_name_terms: tuple[str, ...] = ()
    include_superseded: bool = False
    told: bool = False  # the window also holds episodes whose text tells of a time in it
    with_outcome: bool = False  # only memories with an outcome (an index code's low bits)
    scope_tags: tuple[str, ...] = ()  # a memory with tags, none of them these, is left out (from its header)
    zone: str = field(default="UTC", compare=False)  # the database's time zone: notes show times as its days read
    # BM25's weights, read once per query (in its snapshot); ``replace`` makes a query without them
    weights: tuple[dict[str, float], float] | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def scored_terms(self) -> tuple[str, ...]:
        """Every term BM25 scores: the ones that match and the ones that only rank."""
        return self.terms + self.rank_terms


def header_passes(q: Query, h: dict[str, Any]) -> bool:
    """Whether a header (of an episode in no hot index) passes ``q``'s tag, kind, outcome and session filters."""
    tags = set(h["tags"])
    if not set(q.tags) <= tags or (q.any_tags and not set(q.any_tags) & tags) or not in_scope(q, h["tags"]):
        return False
    return not (
        (q.kind and h["kind"] != q.kind)
        or (q.outcome and h.get("outcome") != q.outcome)
        or (q.with_outcome and not h.get("outcome"))
        or (q.session and h.get("session") != q.session)
    )


def in_scope(q: Query, tags: Iterable[str]) -> bool:
    """Whether a memory with ``tags`` is within ``q.scope_tags``: it carries one of them, or no tag
    at all (a memory of other tags is about something else; one without tags, about the kind)."""
    if not q.scope_tags:
        return True
    tags = tuple(tags)
    return not tags or not set(q.scope_tags).isdisjoint(tags)


def events_of(q: Query, found: Matches, without_outcome: bool = False) -> list[tuple[int, str, bytes | None, dict[str, Any] | None, Hits]]:
    """The matches in ``found`` that are events of ``q``: memories with an outcome (a typed
    episode is recorded as the thing happens; an exchange is talk, recorded when it was said),
    or any (``without_outcome``: ``found`` holds tool calls), holding every word of ``q``, as
    (ts, id, the id's encoded subscript if hot, header if archived, term postings)."""
    every = set(q.terms)
    out: list[tuple[int, str, bytes | None, dict[str, Any] | None, Hits]] = [
        (tail_ts(tail), tail_id(tail), tail[-ID_TAIL_BYTES:], None, hits)
        for tail, code, hits in found.hot
        if (without_outcome or OUTCOME_OF_CODE[code & 3]) and every <= hits.keys()
    ]
    out += [
        (ts_micros(h["ts"]), eid, None, h, hits)
        for eid, h, hits in found.archived
        if (without_outcome or h.get("outcome")) and every <= hits.keys()
    ]
    return out


def as_utc(value: dt.datetime, field: str) -> dt.datetime:
    """``utc(value, field)``: a datetime already in UTC is returned as it is (utc returns it too),
    without utc's checks and conversion; every recall passes two or three such times."""
    return value if type(value) is dt.datetime and value.tzinfo is dt.UTC else utc(value, field)


def recall_window(since: dt.datetime | None, until: dt.datetime | None) -> TimeWindow | None:
    """The ``[since, until)`` window of recall and history, or None when neither is given.

    Raises ValidationError naming both bounds when ``until`` is not after ``since``.
    """
    if since is None and until is None:
        return None
    start = as_utc(since, "since") if since is not None else OPEN_START
    end = as_utc(until, "until") if until is not None else OPEN_END
    if end <= start:
        raise ValidationError(f"window since={start.isoformat()} until={end.isoformat()}: until must be after since")
    if since is None:
        return TimeWindow(start, end, f"before {_moment(end)}")
    if until is None:
        return TimeWindow(start, end, f"since {_moment(start)}")
    return TimeWindow(start, end, "in the window")


def check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError(f"limit {shown(limit)}: must be a non-negative int")


def _moment(at: dt.datetime) -> str:
    return day_of(at) if at.time() == dt.time(0) else f"{day_of(at)} {at:%H:%M} UTC"


def sanitized(sanitizer: Sanitizer, text: str, what: str) -> tuple[str, tuple[str, ...]]:
    """``text`` as capture would store it (the database's ``sanitizer``, reading it as a summary),
    and the placeholders in it, or the marks a custom sanitizer wrote (``_marks``): the personal
    data and secrets it held, which are never searched (``unsearched``).

    Memories hold such values as placeholders only, so the raw value could match nothing, and
    split into words ("zed", "quill", "example", "org") it matched other memories and came back
    in the answer's reading, notes and unmatched words (tests/query/test_withheld.py). Fail
    closed: a sanitizer that fails refuses the query with a SanitizerError naming nothing of it."""
    clean = _read_sanitized(sanitizer, {"summary": text}, what)["summary"]
    placeholders = [m.group() for m in PLACEHOLDER.finditer(clean)] if "<" in clean else []
    marks = [] if placeholders_only(sanitizer) else _marks(text, clean)
    return clean, tuple(dict.fromkeys((*placeholders, *marks)))


def _read_sanitized(sanitizer: Sanitizer, texts: dict[str, str], what: str) -> dict[str, str]:
    """``texts`` through the database's sanitizer, as a query reads them: a failure refuses the
    query with a SanitizerError naming the sanitizer and the exception type, nothing of the text."""
    try:
        return sanitize_fields(sanitizer, texts)
    except SanitizerError as exc:
        reason = _CAPTURE_DROPPED.sub("", str(exc))
        raise SanitizerError(f"{what}: not searched, the database's sanitizer failed on it ({reason}; nothing of it is shown)") from None


def placeholders_only(sanitizer: Sanitizer) -> bool:
    """Whether ``sanitizer`` marks values only with memdb's placeholders (memdb's own, with extra
    patterns too), which a regex finds again in any text: a custom one's marks are found only by
    lining its output up with what it read (``_marks``)."""
    return type(sanitizer).sanitize is RegexSanitizer.sanitize


_PIECES = re.compile(r"\s+|\S+")
_LINED_UP: Final = 2_000
"""Pieces (words and spaces) past which ``_marks`` takes the words new to the text as the marks:
lining the pieces up is quadratic (a final read's find: 1,000 addresses in a 10k-character question
took 15 s)."""


def _marks(text: str, clean: str) -> list[str]:
    """What a sanitizer wrote in ``clean`` in place of values of ``text`` other than memdb's
    placeholders: a custom one may mark a value any way ("[REDACTED]"), and its mark searched as
    words matched every memory it redacted (a review's find: test_a_custom_sanitizer_s_mark_is_withheld).
    The pieces (words, spaces) that differ, less the characters both sides share at their ends;
    a change that only folds case or width is no mark."""
    if clean == text:
        return []
    old, new = _PIECES.findall(text), _PIECES.findall(clean)
    if len(old) + len(new) > _LINED_UP:
        seen = set(old)
        return list(dict.fromkeys(p for p in new if p not in seen and any(c.isalnum() for c in PLACEHOLDER.sub("", p))))
    changed: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" and not (changed and "".join(new[j1:j2]).isspace()):
            continue
        if changed and changed[-1][1] == i1 and changed[-1][3] == j1:  # one mark of several words ("[REDACTED EMAIL]")
            changed[-1] = (changed[-1][0], i2, changed[-1][2], j2)
        else:
            changed.append((i1, i2, j1, j2))
    out = []
    for i1, i2, j1, j2 in changed:
        was, mark = "".join(old[i1:i2]).strip(), "".join(new[j1:j2]).strip()
        if unicodedata.normalize("NFKC", was).casefold() == unicodedata.normalize("NFKC", mark).casefold():
            continue
        head = 0
        while head < min(len(was), len(mark)) and was[head] == mark[head]:
            head += 1
        tail = 0
        while tail < min(len(was), len(mark)) - head and was[-1 - tail] == mark[-1 - tail]:
            tail += 1
        mark = mark[head : len(mark) - tail].strip()
        if any(c.isalnum() for c in PLACEHOLDER.sub("", mark)):  # a placeholder is withheld as itself
            out.append(mark)
    return out


def unsearched(text: str, withheld: Iterable[str]) -> str:
    """``text`` with the ``withheld`` values ``sanitized`` found in it, and every placeholder, read
    as no word: what of it is searched. A mark is blanked where it stands alone (not inside a word)."""
    for mark in sorted(set(withheld), key=len, reverse=True):
        if PLACEHOLDER.fullmatch(mark) is None:
            for form in dict.fromkeys((mark, unicodedata.normalize("NFKC", mark))):  # as ``ask`` reads it, NFKC
                start = r"(?<!\w)" if form[0].isalnum() or form[0] == "_" else ""
                end = r"(?!\w)" if form[-1].isalnum() or form[-1] == "_" else ""
                text = re.sub(f"{start}{re.escape(form)}{end}", " ", text)
    return PLACEHOLDER.sub(" ", text) if "<" in text else text


_CAPTURE_DROPPED = re.compile(r" \(capture dropped[^)]*\)")  # sanitize_fields speaks of capture; a query is no capture


def text_terms(text: str | None, sanitizer: Sanitizer, *, refuse_withheld: bool = True) -> tuple[dict[str, str], tuple[str, ...]]:
    """The index terms of a ``text`` filter with the words they came from ({} for no filter), read
    from it sanitized (``sanitized``), and the placeholders of the values left out of it.

    A text that makes no term would filter nothing, so it is refused (``NoSearchableWordsError``)
    rather than dropped (an answer for "everything" to ``text="the"`` would pass for a match); so
    is one of personal data or secrets alone unless ``refuse_withheld`` is off, for a caller that
    reads such a text as matching nothing.
    """
    if text is None or (isinstance(text, str) and not text.strip()):
        return {}, ()  # an empty field (JSON clients send "" for one left out) filters nothing
    if not isinstance(text, str):
        raise ValidationError(f"text {shown(text)}: expected str, got {type(text).__name__}")
    if len(text) > QUESTION_CHARS:
        raise ValidationError(f"text of {len(text):,} characters: at most {QUESTION_CHARS:,} (search for a few words)")
    clean, withheld = sanitized(sanitizer, text, "text")
    terms = terms_and_words(unsearched(clean, withheld))
    if not terms and (refuse_withheld or not withheld):
        never = "personal data and secrets are never searched, as memories hold them as placeholders; " if withheld else ""
        raise NoSearchableWordsError(
            f"text {shown(clean)}: no searchable words ({never}stopwords, one-letter words and placeholders are not indexed; "
            "use other words, or leave text out)"
        )
    return terms, withheld


@dataclass(frozen=True)
class TagFilters:
    """Tag filters as searched (``tag_filters``): each normalised, without the tags that held
    personal data or a secret; ``withheld``: what the sanitizer wrote for those, the only way an
    answer names them; ``matches_nothing``: no memory can match (a required tag was withheld, or
    every tag of ``any_tags`` or of ``scope_tags``), and dropping them would widen the answer."""

    tags: tuple[str, ...] = ()
    any_tags: tuple[str, ...] = ()
    scope_tags: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()
    matches_nothing: bool = False


def tag_filters(
    sanitizer: Sanitizer,
    *,
    tags: Iterable[str] = (),
    any_tags: Iterable[str] = (),
    scope_tags: Iterable[str] = (),
    after: Iterable[str] = (),
    all_required: bool = True,
) -> TagFilters:
    """Tag filters read as capture stores tags: a tag that capture would store otherwise than as
    its normal form held personal data or a secret (``marked_tag``: "bob@example.com" is kept as
    "withheld-email"), so it is left out, never searched nor echoed; its normal form
    ("bobexample-com") named the address in every answer, and no memory carries it.

    Read in one pass with ``after`` (the placeholders of the query's text), so a placeholder
    names one value across both. ValidationError names a bad tag (sanitized), or more ``tags``
    than an episode holds where each must be present (``all_required``; a caller whose ``tags``
    scope the answer passes False), SanitizerError refuses the query when the sanitizer fails
    (``sanitized``)."""
    # memdb's own sanitizer reads a text the same way while the process's registered secrets stay
    # (a custom one may not): a tag filter is read once, not on every call (15-20 us, 18% of a
    # five-match time+tag recall's profile at 100k). Tags given as a list or tuple of strings are
    # looked up as given: only tags that were checked are kept, so a second call of the same needs
    # no check (3 us of a 100 us recall at 1M)
    plain = (_strings(tags), _strings(any_tags), _strings(scope_tags))
    if type(sanitizer) is RegexSanitizer and None not in plain and plain != _NO_TAGS:
        after = tuple(after)  # read once: a generator too
        cached = _TAG_FILTERS.get((id(sanitizer), known_secrets(), *plain, after, all_required))
        if cached is not None and cached[0] is sanitizer:
            return cached[1]
    given = {name: given_tags(values, name) for name, values in (("tags", tags), ("any_tags", any_tags), ("scope_tags", scope_tags))}
    if all_required:  # more than an episode holds are never all present: refused before the sanitizer reads them
        check_tag_count("tags", given["tags"], "an episode holds (no memory carries them all)")
    raw = [t for ts in given.values() for t in ts]
    if not raw:
        return TagFilters()
    after = tuple(after)
    # kept apart by ``all_required``: a read kept for a scope never passed the count check
    key = (id(sanitizer), known_secrets(), *given.values(), after, all_required)
    cached = _TAG_FILTERS.get(key) if type(sanitizer) is RegexSanitizer else None
    if cached is not None and cached[0] is sanitizer:
        return cached[1]
    read = _read_tag_filters(sanitizer, given, raw, after)
    if type(sanitizer) is RegexSanitizer:
        if len(_TAG_FILTERS) >= _TAG_FILTERS_KEPT:
            _TAG_FILTERS.clear()
        _TAG_FILTERS[key] = (sanitizer, read)
    return read


def _strings(values: Iterable[str]) -> tuple[str, ...] | None:
    """``values`` as a tuple when given as a list or tuple of strings, else None."""
    if values == ():
        return ()
    if type(values) is not tuple:
        if type(values) is not list:
            return None
        values = tuple(values)
    for v in values:
        if type(v) is not str:
            return None
    return values


_NO_TAGS: Final = ((), (), ())


_TAG_FILTERS: dict[tuple[Any, ...], tuple[Sanitizer, TagFilters]] = {}
_TAG_FILTERS_KEPT: Final = 4_096  # tag filters read, kept per process (a few hundred bytes each)


def _read_tag_filters(sanitizer: Sanitizer, given: dict[str, tuple[str, ...]], raw: list[str], after: Iterable[str]) -> TagFilters:
    """``tag_filters``' reading, through the sanitizer."""
    stored, _, clean = tags_as_stored(lambda texts: _read_sanitized(sanitizer, texts, "tags"), raw, " ".join(after))
    # every placeholder the tags hold is a withheld tag's (a tag holding one is stored otherwise)
    withheld = [m.group() for n, v in clean.items() if not n.startswith("~") and "<" in v for m in PLACEHOLDER.finditer(v)]
    custom = not placeholders_only(sanitizer)
    kept: dict[str, list[str]] = {name: [] for name in given}
    required = False  # a tag every memory must carry was withheld
    at = 0
    for name, ts in given.items():
        for i, t in enumerate(ts, at):
            if tag_form(stored[i]) == (normal := tag_form(t)) and normal is not None:
                kept[name].append(normal)
                continue
            required |= name == "tags"
            said = clean[f"tags[{i}]"]  # its slot, named as the Sanitizer protocol names a tag
            if custom and PLACEHOLDER.search(said) is None:  # what another sanitizer wrote in its place
                withheld += _marks(t, said) or [TAG_MARKER]
        at += len(ts)
    out = {name: tuple(dict.fromkeys(ts)) for name, ts in kept.items()}
    nothing = required or any(given[name] and not out[name] for name in ("any_tags", "scope_tags"))
    return TagFilters(out["tags"], out["any_tags"], out["scope_tags"], tuple(dict.fromkeys(withheld)), nothing)
