"""What a query returns: the interpretation it searched, the hits (an episode, its score and
why it matched), and an honest note; ``History`` for past attempts."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import FrozenInstanceError, dataclass, field, fields
from typing import Any, Final, TypeVar

from memdb.errors import ValidationError
from memdb.lifecycle.summarize import one_line_head
from memdb.memory.models import Episode
from memdb.memory.sanitize.messages import redacted
from memdb.memory.timephrase import TimeWindow, local_day

__all__ = ["History", "Hit", "Interpretation", "RecallResult", "alike_groups", "alike_lines", "quoted", "said_words"]

_Frozen = TypeVar("_Frozen")


def _set_at_once(cls: type[_Frozen]) -> type[_Frozen]:
    """Give a frozen dataclass of defaulted fields an ``__init__`` (by keyword) that sets them in one
    step. The generated one sets each through ``object.__setattr__``: 6 us for ``Interpretation``'s
    27 fields, which every recall and question makes, against 1 us (an unknown keyword is refused
    as before: tests/query/test_recall_fixed_cost.py)."""
    defaults = {f.name: f.default for f in fields(cls)}  # type: ignore[arg-type]
    names = frozenset(defaults)
    set_once = object.__setattr__

    def __init__(self: _Frozen, **given: Any) -> None:
        if not names.issuperset(given):
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {min(set(given) - names)!r}")
        set_once(self, "__dict__", {**defaults, **given})

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", __init__)  # noqa: B010 -- (mypy keeps the dataclass's signature)
    return cls


@_set_at_once
@dataclass(frozen=True)
class Interpretation:
    """What a query actually searched: window, tags, terms and filters."""

    window: TimeWindow | None = None
    tags: tuple[str, ...] = ()
    any_tags: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    terms_required: bool = True
    kind: str | None = None
    outcome: str | None = None
    session: str | None = None
    question: str | None = None
    include_archived: bool = False
    words: tuple[str, ...] = ()  # the words behind ``terms``, for people (terms are stems)
    boost_tags: tuple[str, ...] = ()  # ask, when other words remain: these tags or the terms match, the tags rank
    rank_terms: tuple[str, ...] = ()  # the boost tags' own words: they rank as text but match nothing
    tag_name_terms: tuple[str, ...] = ()  # terms that name one of the owner's tags: they weigh NAME_WEIGHT times their idf
    all_terms: bool = False  # every term must match (history: the words of a task are not interchangeable)
    unmatched: tuple[str, ...] = ()  # words of the query no memory holds (the answer is partial, or empty for a name)
    missing_names: tuple[str, ...] = ()  # of those, names the question asks about: nothing else may stand in for them
    ignored: tuple[str, ...] = ()  # ask: phrases that read as time but were not understood, so neither window nor words
    include_superseded: bool = False  # earlier versions of corrected episodes match too
    told: bool = False  # the window also holds episodes recorded outside it whose text tells of a time in it
    anchor: str = ""  # ask: the memory a window given by an event ("after the outage") was placed at
    order: str = ""  # ask: "newest" or "oldest" when the question asks for the last or first matches
    count: int | None = None  # ask: how many of them ("the last three deploys"), else the limit
    with_outcome: bool = False  # only memories that carry an outcome (attempts: a chat message about the task is none)
    scope_tags: tuple[str, ...] = ()  # a memory whose tags are all others is left out (one without tags stays)
    zone: str = field(default="UTC", compare=False)  # the database's time zone, in which answers show their days
    # placeholders of the personal data and secrets the question or text held: never searched,
    # as memories hold such values only as placeholders (``memdb.query.plan.sanitized``)
    withheld: tuple[str, ...] = ()
    # the same of the tag filters given (``memdb.query.plan.tag_filters``): left out of them, never
    # searched, as memories keep such a tag only as a marker of its kind ("withheld-email")
    withheld_tags: tuple[str, ...] = ()

    def __str__(self) -> str:
        parts = []
        if self.window:
            parts.append(f"window {self.window}" + (", recorded or told of" if self.told else ""))
            if self.anchor:
                parts.append(self.anchor)
        if self.tags:
            parts.append("tags " + " and ".join(self.tags))
        if self.any_tags:
            parts.append("any of tags " + ", ".join(self.any_tags))
        if self.kind:
            parts.append(f"kind {self.kind}")
        if self.outcome:
            parts.append(f"outcome {self.outcome}")
        if self.session:
            parts.append(f"session {self.session}")
        if self.with_outcome and not self.outcome:
            parts.append("with an outcome")
        if self.scope_tags:
            parts.append("tagged " + " or ".join(self.scope_tags) + " or untagged")
        if self.terms:
            joined = (" and " if self.all_terms else " ").join(self.words or self.terms)
            text = ("text " if self.terms_required else "ranked by text ") + joined
            if self.boost_tags:
                text += " or tags " + ", ".join(self.boost_tags)
            parts.append(text)
        withheld_at = len(parts)  # the values left out are said there, after the rest is redacted (below)
        if self.order:
            parts.append(f"{self.order} first" + (f", {self.count}" if self.count else ""))
        if self.include_archived:
            parts.append("including archived")
        if self.include_superseded:
            parts.append("including superseded versions")
        ignored = "; ignored: " + ", ".join(repr(p) for p in self.ignored) if self.ignored else ""
        # what was asked, echoed in notes that reach logs and clients: a session, a tag or a word
        # given as an address or a phone number is shown sanitized, as in an error
        if not (self.withheld or self.withheld_tags):
            return redacted(("; ".join(parts) or "everything") + ignored)
        # the values left out are the sanitizer's own marks, shown as written: read with the rest,
        # "a secret: [EMAIL]" read as a labelled secret, and a custom mark became <SECRET_1> (a final read's find)
        said = [redacted("; ".join(parts[:withheld_at]))] if withheld_at else []
        said.append("left out as personal data or a secret: " + ", ".join((*self.withheld, *(f"tag {t}" for t in self.withheld_tags))))
        after = "; ".join(parts[withheld_at:])
        return "; ".join(said) + (redacted("; " + after) if after else "") + (redacted(ignored) if ignored else "")


def said_words(words: Iterable[str]) -> tuple[str, ...]:
    """Words of a question as an answer may echo them: sanitized, as a note reaches prompts, logs
    and clients (a token asked about was echoed raw beside its placeholder in the question). Read
    together, as a value split into words is one ("+1 415 555 0123" is the words 1, 415, 555 and
    0123): where they hold one, they are said as one sanitized span."""
    words = tuple(words)
    joined = " ".join(words)
    said = redacted(joined)
    return (said,) if said != joined else words


def quoted(words: Iterable[str]) -> str:
    """``said_words``, quoted for a note."""
    return ", ".join(f"'{w}'" for w in said_words(words))


class Hit:
    """One retrieved episode, its rank score and why it matched.

    The episode (a pydantic model) is built when first read, and so is ``why``: a caller that
    takes ids and scores of 25 hits skips 25 model constructions (on LoCoMo, about a third of
    a query) and 25 explanations (about a tenth)."""

    __slots__ = ("_episode", "_make", "_places", "_score", "_why", "id")

    def __init__(self, episode: Episode, score: float, why: tuple[str, ...]) -> None:
        self._episode: Episode | None = episode
        self._make: Callable[[], Episode] | None = None
        self._why: tuple[str, ...] | Callable[[], tuple[str, ...]] = why
        self.id = episode.id  # the episode's id, without building the episode
        self._score = score
        self._places: int | None = None  # the places ``score`` is rounded to when first read (None: as given)

    @classmethod
    def deferred(
        cls,
        episode_id: str,
        make: Callable[[], Episode],
        score: float,
        why: tuple[str, ...] | Callable[[], tuple[str, ...]],
        places: int | None = None,
    ) -> Hit:
        """A hit whose episode ``make()`` builds on first read (from data already read), and
        whose ``why`` (given, or made by calling it on first read) likewise; its ``score``
        rounded to ``places`` when first read (``round(x, 6)`` took 0.4 us a hit, five a
        recall, where most callers take ids and episodes)."""
        hit = cls.__new__(cls)
        hit._episode, hit._make, hit._why, hit.id, hit._score, hit._places = None, make, why, episode_id, score, places
        return hit

    @property
    def score(self) -> float:
        """The rank score (``memdb.query.engine`` says how it is made)."""
        places = self._places  # read once: another thread may round it between two reads
        if places is not None:
            self._score, self._places = round(self._score, places), None
        return self._score

    @property
    def why(self) -> tuple[str, ...]:
        """Why it matched: the filters it passed, its text matches and its relevance."""
        why = self._why
        if not isinstance(why, tuple):
            why = self._why = why()
        return why

    @property
    def episode(self) -> Episode:
        """The episode retrieved."""
        if self._episode is None:
            assert self._make is not None
            self._episode, self._make = self._make(), None
        return self._episode

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hit):
            return NotImplemented
        return (self.episode, self.score, self.why) == (other.episode, other.score, other.why)

    def __hash__(self) -> int:
        return hash((self.episode.id, self.score, self.why))

    def __repr__(self) -> str:
        return f"Hit(episode={self.episode!r}, score={self.score!r}, why={self.why!r})"

    def line(self, zone: str = "UTC") -> str:
        """One line for a prompt: date (its day in ``zone``, the database's), kind/outcome, tags,
        summary, lesson."""
        e = self.episode
        if e.status == "archived":  # the one-liner already carries date, kind and outcome
            return f"- (archived) {e.summary}"
        head = f"{local_day(e.ts, zone)} {e.kind}" + (f"/{e.outcome}" if e.outcome else "") + (f" {e.key}" if e.key else "")
        if e.tags:
            head += " [" + ", ".join(e.tags) + "]"
        text = e.summary.replace("\n", " ")
        if e.lesson:
            sep = " " if text.endswith((".", "!", "?", ":")) else ". "
            text += f"{sep}Lesson: {e.lesson}".replace("\n", " ")
        if e.status == "summarized":
            head += " (summarized)"
        if e.status == "superseded":  # an earlier version, shown only when asked for
            head += f" (superseded by {e.superseded_by})"
        elif e.supersedes:
            head += " (corrected" + (f": {e.supersede_reason}" if e.supersede_reason and e.kind != "fact" else "") + ")"
        return f"- {head}: {text}"


class RecallResult:
    """The answer to a query: memories (possibly none), what was searched, and an honest note.

    ``found`` and ``total`` count every match before the limit, so ``limit=0`` asks only how
    many matched: no memories, yet ``found`` when something did. Immutable, like the frozen
    dataclass it was; ``note`` may be given as a function of data already read, made into the
    note when first read (most callers take the memories only: formatting it cost about a tenth
    of a small recall).
    """

    __slots__ = ("_note", "found", "interpretation", "memories", "total")
    found: bool
    memories: list[Hit]
    interpretation: Interpretation
    total: int
    _note: str | Callable[[], str]

    def __init__(self, found: bool, memories: list[Hit], interpretation: Interpretation, total: int, note: str | Callable[[], str]) -> None:
        init = object.__setattr__
        init(self, "found", found)
        init(self, "memories", memories)
        init(self, "interpretation", interpretation)
        init(self, "total", total)
        init(self, "_note", note)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    @property
    def note(self) -> str:
        """What the answer means in a sentence: how many matched and how many are shown, or why
        nothing is (tests/query/test_query.py pins the wording)."""
        note = self._note
        if not isinstance(note, str):
            note = note()
            object.__setattr__(self, "_note", note)
        return note

    def _fields(self) -> tuple[bool, list[Hit], Interpretation, int, str]:
        return (self.found, self.memories, self.interpretation, self.total, self.note)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecallResult):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # holds a list, as the dataclass did

    def __reduce__(self) -> tuple[type[RecallResult], tuple[bool, list[Hit], Interpretation, int, str]]:
        # copy and pickle rebuild it through __init__ (the default path assigns its slots, which
        # __setattr__ refuses), with the note made
        return (RecallResult, self._fields())

    def __repr__(self) -> str:
        return (
            f"RecallResult(found={self.found!r}, memories={self.memories!r}, interpretation={self.interpretation!r}, "
            f"total={self.total!r}, note={self.note!r})"
        )

    @property
    def partial(self) -> bool:
        """Whether the memories match only some of the query's words (``interpretation.unmatched``
        names the ones no memory holds, ``interpretation.withheld`` and ``withheld_tags`` the
        personal data or secrets never searched)."""
        interp = self.interpretation
        return self.found and bool(interp.unmatched or interp.withheld or interp.withheld_tags)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.memories)

    def __len__(self) -> int:
        return len(self.memories)

    def as_context(self, max_chars: int = 2000) -> str:
        """A 'recent memories' block for a prompt: never longer than ``max_chars``, never cut silently.

        Summaries come first. A memory that does not fit whole is cut with a visible marker,
        and memories left out are counted.
        """
        if max_chars < 1:
            raise ValidationError(f"max_chars {max_chars!r}: must be positive")
        if not self.memories:
            return _fit(self.note, max_chars)
        ordered = sorted(self.memories, key=lambda m: m.episode.kind != "summary")
        # a partial answer says so where a prompt reads it: the memories about "the fix" are not
        # about "the flaky test" (test_a_partial_answer_is_labelled_in_the_prompt_block)
        unmatched = self.interpretation.unmatched
        said = f"; partial: these do not mention {quoted(unmatched)}" if unmatched else ""
        out = _fit(f"Recent memories ({self.interpretation}{said}):", max_chars)
        rest = len(ordered)  # memories, not lines, are counted
        for text, n in alike_lines(ordered, self.interpretation.zone):
            line = "\n" + text
            more = f"\n(+{rest} more not shown)"
            if len(out) + len(line) <= max_chars and (
                rest == n or len(out) + len(line) + len(f"\n(+{rest - n} more not shown)") <= max_chars
            ):
                out += line
                rest -= n
                continue
            room = max_chars - len(out)
            marker = " …[cut]"
            tail = f"\n(+{rest - n} more not shown)" if rest > n else ""
            if room - len(tail) >= 40 + len(marker):
                out += line[: room - len(tail) - len(marker)] + marker + tail
            elif len(more) <= room:
                out += more
            break
        return out


def alike_lines(hits: Sequence[Hit], zone: str = "UTC") -> list[tuple[str, int]]:
    """The prompt lines of ``hits`` (``Hit.line``), one for the memories whose lines differ only
    in their date, at the first one's place: "... Lesson: ask for the HAR file first (also on
    2026-07-01, 2026-06-22)", with how many memories each line stands for. A daily routine or a
    failure that recurs filled a prompt's budget with one line again and again; said once, with
    every date, it tells the same and leaves room for the rest."""
    return [(line, len(same)) for line, same in alike_groups(hits, zone)]


def alike_groups(hits: Sequence[Hit], zone: str = "UTC") -> list[tuple[str, list[Hit]]]:
    """``alike_lines`` with the hits each line stands for (the first one's, then the rest)."""
    lines: dict[str, tuple[str, list[Hit]]] = {}  # the line without its date -> (the first line, its hits)
    for hit in hits:
        line = hit.line(zone)
        lines.setdefault(_DATE.sub("", line, count=1), (line, []))[1].append(hit)
    out: list[tuple[str, list[Hit]]] = []
    for line, same in lines.values():
        also = ", ".join(local_day(h.episode.ts, zone) for h in same[1:])
        out.append((line + (f" (also on {also})" if also else ""), same))
    return out


_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")


def _fit(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max(max_chars - 1, 0)] + "…"


@dataclass(frozen=True)
class History:
    """Outcome-aware history of past attempts: counts, the attempts, and their lessons."""

    counts: dict[str, int]
    attempts: list[Hit]
    lessons: list[str]
    interpretation: Interpretation
    total: int = 0
    last_failures: list[Hit] = field(default_factory=list)
    archived: int = 0  # of ``total``: attempts whose full record is in cold storage (counted from what stays hot)
    superseded: int = 0  # earlier versions listed among the attempts (include_superseded), not counted in ``total``
    # archived attempts that pass every filter but the words, which only what stays hot of them was
    # searched for: not counted in ``total``, and never said to mention none of them
    unsearched: int = 0

    def __str__(self) -> str:
        if not self.total:
            unmatched = self.interpretation.unmatched
            if unmatched and self.unsearched:  # the words may be in their records, in cold storage
                said = f"; no hot memory mentions {quoted(unmatched)}"
            else:
                said = f"; no memory mentions {quoted(unmatched)}" if unmatched else ""
            if self.interpretation.withheld:  # every word must match, and no memory holds such a value as written
                said += "; no attempt can be found by personal data or a secret, which memories hold as placeholders"
            if self.interpretation.withheld_tags:  # every tag must match, and such a tag is kept only as a marker
                said += "; no attempt can be found by a tag of personal data or a secret, which memories keep only as a marker of its kind"
            return f"No past attempts found ({self.interpretation}{said}).{self._unsearched_note()}"
        counts = ", ".join(f"{n} {o}" for o, n in self.counts.items() if n)
        if self.archived:
            counts += f"; {self.archived} archived"
        text = f"{self.total} past attempt{'s' if self.total != 1 else ''} ({counts}).{self._unsearched_note(more=True)}"
        if self.superseded:
            text += f" {self.superseded} superseded version{'s' if self.superseded != 1 else ''} listed too (not counted)."
        if self.last_failures:
            f = self.last_failures[0].episode
            day, summary = local_day(f.ts, self.interpretation.zone), f.summary.rstrip(".")
            # an archived attempt's summary is its one-liner, which may carry its day and lesson already
            text += f" Last failure: {summary}." if summary.startswith(one_line_head(f)) else f" Last failure {day}: {summary}."
            if f.lesson and f.lesson not in summary:
                text += f" Lesson: {f.lesson}"
        return text

    def _unsearched_note(self, more: bool = False) -> str:
        """What was searched of the archived attempts the words did not find: an archived one keeps
        hot its one-liner, tags and lesson (and, archived since 2026-12-07, a short account of what
        was tried, what happened and why), and its record may say the words all the same."""
        n = self.unsearched
        if not n:
            return ""
        them, were = ("them", "were") if n != 1 else ("it", "was")
        return (
            f" {n}{' more' if more else ''} archived attempt{'s' if n != 1 else ''} {were} searched only by what stays hot"
            f" of {them} (one-liner, tags, lesson, a short account of what was tried): history without text counts {them},"
            f" restore() brings one back whole."
        )
