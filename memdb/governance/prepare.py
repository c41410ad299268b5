"""The retrieval rule for a new task: relevant patterns first, then approved knowledge the
owner may read, then the most similar past records with their outcomes and the lessons of
earlier failures, as one context block within a character budget."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memdb.errors import ValidationError
from memdb.governance.knowledge import Entry, Knowledge, entry_score
from memdb.governance.patterns import Pattern, Patterns, same_pattern
from memdb.memory.episodes import Episodes
from memdb.memory.models import bound_text, utc
from memdb.memory.sanitize import shown
from memdb.memory.sanitize.messages import redacted
from memdb.memory.text import tokenize
from memdb.query.engine import OwnerQueries
from memdb.query.notes import quoted
from memdb.query.plan import QUESTION_CHARS, sanitized, tag_filters, unsearched
from memdb.query.results import Hit, alike_groups

__all__ = ["Preparation", "prepare"]


@dataclass(frozen=True)
class Preparation:
    """The context for a new task: patterns, readable knowledge, similar past records, earlier
    failures holding a lesson the records do not, and the block; ``missing_names`` are the
    names of the task no memory holds (no record about other things stands in for them);
    ``in_block`` the ids of the patterns, knowledge entries, records and lessons whose lines
    are in the block (one cut visibly too), as a caller showing them beside it keeps to them."""

    task: str
    patterns: list[Pattern]
    knowledge: list[Entry]
    records: list[Hit]
    text: str
    left_out: int
    lessons: list[Hit] = field(default_factory=list)
    missing_names: tuple[str, ...] = ()
    in_block: frozenset[str] = frozenset()

    def as_context(self) -> str:
        return self.text


class _Block:
    """Lines added while they fit in ``max_chars``, always leaving room for a 'left out' note."""

    NOTE_ROOM = 28

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.lines: list[str] = []
        self.size = 0
        self.left_out = 0

    def add(self, line: str, reserve: bool = True, count: int = 1) -> bool:
        """Add ``line`` (standing for ``count`` items) if it fits, cut visibly if most of it does;
        else count its items as left out."""
        room = self.max_chars - self.size - (1 if self.lines else 0) - (self.NOTE_ROOM if reserve else 0)
        if len(line) <= room:
            self._push(line)
            return True
        if line.startswith("- ") and room >= 60:  # a long item is cut visibly, not silently
            self._push(line[: room - 7] + " …[cut]")
            return True
        self.left_out += count
        return False

    def room_for(self, title: str, first: str) -> bool:
        """Whether ``title`` and at least the visible start of ``first`` fit."""
        room = self.max_chars - self.size - (1 if self.lines else 0) - self.NOTE_ROOM
        return len(title) + 1 + min(len(first), 60) <= room

    def _push(self, line: str) -> None:
        self.size += len(line) + (1 if self.lines else 0)
        self.lines.append(line)

    def render(self) -> str:
        if self.left_out:
            note = f"(+{self.left_out} more not shown)"
            if self.size + len(note) + 1 <= self.max_chars:
                self.lines.append(note)
        return "\n".join(self.lines)


def _names_it_is_another_of(tag: str, named: Iterable[str]) -> tuple[str, ...]:
    """The names in ``named`` that ``tag`` is another of: as many words, only the last differing,
    in letters ("project-y" of "project-x", "billing-ui" of "billing-api"). A tag the task names
    is none, and so is another version or host ("api-v1" of "api-v2", "web-01" of "web-02"),
    whose lessons hold for the next one."""
    named = tuple(named)
    if tag in named:
        return ()
    words = tag.split("-")
    return tuple(
        name
        for name in named
        if len(other := name.split("-")) == len(words) > 1 and other[:-1] == words[:-1] and words[-1].isalpha() and other[-1].isalpha()
    )


def _without(task: str, names: Iterable[str]) -> str:
    """``task`` without ``names``, each as a phrase (whole words, any case): "Project Q" leaves
    the "Project X" beside it."""
    for name in names:
        phrase = r"\s+".join(map(re.escape, name.split()))
        task = re.sub(rf"(?<![\w-]){phrase}(?![\w-])", " ", task, flags=re.IGNORECASE)
    return " ".join(task.split())


def _alike(hits: list[Hit], zone: str) -> list[tuple[list[Hit], str, int]]:
    """``alike_groups`` of ``hits`` (their days in ``zone``, the database's) as the block takes them."""
    return [(same, line, len(same)) for line, same in alike_groups(hits, zone)]


def prepare(
    episodes: Episodes,
    queries: OwnerQueries,
    knowledge: Knowledge,
    patterns: Patterns,
    task: str,
    *,
    kind: str | None = None,
    tags: Iterable[str] = (),
    max_chars: int = 2000,
    limit: int = 5,
    now: dt.datetime | None = None,
) -> Preparation:
    """Relevant patterns first, then readable knowledge, then the most similar past records with
    their outcomes, as one block of at most ``max_chars``. Knowledge that makes it into the
    block counts as injected; records read count as accesses."""
    if not isinstance(task, str) or not task.strip():
        raise ValidationError(f"task {shown(task)}: describe the task")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 80:
        raise ValidationError(f"max_chars {max_chars!r}: an int, at least 80")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"limit {limit!r}: a positive int")
    typed = episodes.settings.typed_kinds
    if kind is not None and kind not in typed:
        raise ValidationError(f"kind {shown(kind)}: not a typed kind ({', '.join(typed)})")
    if len(task) > QUESTION_CHARS:  # before the sanitizer reads it, as ask's question
        raise ValidationError(f"task of {len(task):,} characters: at most {QUESTION_CHARS:,} (describe one task)")
    at = utc(now, "now") if now is not None else episodes.now()
    # tags of personal data or a secret are left out (never searched nor echoed), and still
    # scope the task: dropped, they would let every record in (test_prepare_withholds_a_tag_of_personal_data)
    filters = tag_filters(episodes.sanitizer, tags=tags, all_required=False)  # they scope the task
    want, scoped = list(filters.tags), bool(filters.tags or filters.withheld)

    def words_of(text: str) -> set[str]:
        """The terms of ``text`` read sanitized, as the records' query reads it: an address's words
        chose unrelated patterns and lessons (test_prepare_never_matches_by_a_withheld_value)."""
        return set(tokenize(unsearched(*sanitized(episodes.sanitizer, text, "task"))))

    terms = words_of(task)

    # A name of the task no memory holds, as ask reads it ("Deploy Project Zeta" of an owner who
    # knows Project X), is said first, and what follows matches the rest of the task: never
    # offered as if about it (test_prepare_pads_no_name_it_holds_no_record_of), never hiding
    # what the rest matches ("on Kubernetes" hid a billing api deploy's failure and lesson).
    # The owner's tags the task's words name ("Project X": project-x) say what it is about.
    worded = bool(terms)  # a task of stopwords only has no text to match (recall refuses it)
    missing, named = queries.read_task(task, at) if worded else ((), ())
    text = _without(task, missing) if missing else task

    def in_scope(tags: Iterable[str]) -> bool:
        """Whether a pattern, record or lesson of ``tags`` is about the task: one without tags is
        (about its kind); with tags given, one of a tag given, or of the tags the task names only
        ("the billing api"): a topic the task names admits no other person's record (Sam's [sam,
        fractions] for Maya). Without tags given, only what is about another of the name the task
        names is out: "Deploy Project X" opened with a pattern of Project Y's sprints, which
        shared only the word "project" (test_prepare_keeps_to_what_the_task_names), while a
        failure tagged [ops] or [kubernetes] about deploys keeps its lesson
        (test_prepare_keeps_the_lessons_of_failures_of_other_tags)."""
        held = set(tags)
        if not held:
            return True
        if scoped:
            return bool(held & set(want)) or held <= set(named)
        # out: a record about another of a name the task names, unless it is about that name too
        return not any(held.isdisjoint(names) for t in held if (names := _names_it_is_another_of(t, named)))

    # 1. patterns: same kind (when given), sharing tags or words with the task; a pattern of other
    # tags than the task's is about something else (a tutor's "lesson [sam]" is no context for
    # teaching Maya), where one without tags is about the kind
    scored = []
    for p in patterns.of(queries.name, kind):
        if not in_scope(p.tags):
            continue
        score = (
            (1.0 if kind else 0.0)
            + 0.5 * len(set(want) & set(p.tags))
            + (len(terms & set(tokenize(p.text))) / len(terms) if terms else 0.0)
        )
        if score > 0:
            scored.append((score, p))
    chosen_patterns: list[Pattern] = []
    for _, p in sorted(scored, key=lambda sp: (-sp[0], -sp[1].latest.timestamp(), sp[1].id)):  # the latest found first
        if not any(same_pattern(p.text, q.text) for q in chosen_patterns):  # the same pattern under other tags
            chosen_patterns.append(p)
        if len(chosen_patterns) >= limit:
            break

    # 2. knowledge the owner may read, by words and tags: by every word of the task, a name no
    # record holds too (a teammate's lesson about Zeta is about Zeta)
    entries = [e for e in knowledge.readable(queries.name) if entry_score(e, terms, set(want)) > 0]
    entries.sort(key=lambda e: (-entry_score(e, terms, set(want)), e.id))
    entries = entries[:limit]
    terms = words_of(text) if missing else terms
    worded = bool(terms)

    # 3. similar past records with outcomes: text and tags, then tags, then text alone. Records
    # with an outcome are searched for, not filtered out of the best matches of any kind: 25 chat
    # messages about a deploy took every slot from its failure (test_prepare_finds_a_failure_past_chat_about_the_task).
    # The task's tags scope the text as they scope patterns (``in_scope``): a record of other tags
    # is about something else, one without tags stays (test_prepare_keeps_the_records_to_the_tags_given),
    # and so does one of a tag the task's words name ("deploy the billing api", tags=["deploy"],
    # keeps the failure tagged billing). The query leaves out what is out of scope before its
    # limit, so no record in scope is crowded out.
    records: list[Hit] = []
    seen: set[str] = set()
    # given tags scope the query itself (before its limit); the names of the task only leave out
    # what is about another of them, read past more of the matches for it
    scope = list(dict.fromkeys((*want, *named))) if want else []
    more = 0 if want or not (named or scoped) else 4 * limit  # read past what is out of scope

    attempts: list[dict[str, Any]] = [{"text": text, "any_tags": want}] if want and worded else []
    attempts += [{"any_tags": want}] if want else []
    attempts += [{"text": text, "scope_tags": scope}] if worded else []
    for query in attempts:
        if len(records) >= limit:
            break
        # archived records count: their outcome and lesson stay hot (forgetting never erases experience)
        # only the memories are read (no total): recall_memories ranks them from the kernel's pages
        found = queries.recall_memories(
            kind=kind, limit=limit + len(seen) + more, now=at, include_archived=True, with_outcome=True, **query
        )
        for m in found:
            if m.episode.id not in seen and m.episode.kind != "summary" and in_scope(m.episode.tags):
                seen.add(m.episode.id)
                records.append(m)
            if len(records) >= limit:
                break

    # 4. the lessons of earlier failures the records do not state: a failure's lesson is never
    # forgotten because newer failures without one came after it, as history keeps every
    # failure's lesson (test_prepare_keeps_a_failure_s_lesson_past_newer_failures)
    stated: set[str] = {lesson for m in records if (lesson := m.episode.lesson)}
    lessons: list[Hit] = []
    if want or worded:  # the task's words (a name no memory holds aside) or the tags given, else those it names
        for m in queries.failure_lessons(text if worded else None, want, kind, limit=limit + len(stated) + more, skip=seen, now=at):
            if (lesson := m.episode.lesson) and lesson not in stated and in_scope(m.episode.tags):
                stated.add(lesson)
                lessons.append(m)
            if len(lessons) >= limit:
                break

    block = _Block(max_chars)
    # the task as the block and the result echo it: sanitized, as a note is (a token named in it
    # reached the prompt raw, while the memories it was read against hold placeholders)
    said_task = redacted(task.strip())
    block.add(bound_text(f"Context for: {said_task}".replace("\n", " "), 160), reserve=False)
    if filters.withheld:  # said first, as a name no record holds is
        left_out = ", ".join(filters.withheld)
        block.add(bound_text(f"Tags left out as personal data or a secret: {left_out}; no record is found by them.", 300), reserve=False)
    if missing:  # said first: what the block holds is read knowing it
        rest = f"the rest of the task ({bound_text(redacted(text.strip()), 80)})" if worded else ""
        by = " or ".join(x for x in (rest, f"the tags {', '.join(want)}" if want else "") if x)
        instead = f"what follows matches {by}, not it" if by else "nothing else is offered in its place"
        block.add(bound_text(f"No past record mentions {quoted(missing)}: {instead}.", 300), reserve=False)
    shown_entries: list[Entry] = []
    in_block: set[str] = set()
    items_of: tuple[tuple[str, list[tuple[Pattern | Entry | list[Hit], str, int]]], ...] = (
        ("Patterns:", [(p, p.line(episodes.settings.timezone), 1) for p in chosen_patterns]),
        ("Knowledge:", [(e, e.line(), 1) for e in entries]),
        ("Past records (with outcomes):", list(_alike(records, episodes.settings.timezone))),  # a recurring one once
        ("Lessons of earlier failures:", list(_alike(lessons, episodes.settings.timezone))),
    )
    for title, items in items_of:
        if not items:
            continue
        if not block.room_for(title, items[0][1]) or not block.add(title):
            block.left_out += sum(n for _, _, n in items)  # a heading without one item under it says nothing
            continue
        for obj, line, n in items:
            if not block.add(line, count=n):
                continue
            if isinstance(obj, list):
                in_block.update(m.episode.id for m in obj)
                continue
            in_block.add(obj.id)
            if isinstance(obj, Entry):
                shown_entries.append(obj)
    if not (chosen_patterns or entries or records or lessons):
        block.add("Nothing relevant found: no patterns, knowledge or past records match this task.", reserve=False)
    if shown_entries:
        knowledge.touch(shown_entries, "injected", at)
    said_missing = tuple(map(redacted, missing))
    return Preparation(
        said_task, chosen_patterns, entries, records, block.render(), block.left_out, lessons, said_missing, frozenset(in_block)
    )
