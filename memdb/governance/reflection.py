"""Reflection with a budget: recent episodes in, at most N cited lessons a day out, all pending.

Once a day ``Reflection.run`` gives each owner's recent episodes (``reflection_window_days``)
to a ``Reflector`` and files what it proposes through the knowledge store's one door, so
every lesson lands pending and private in the review queue. Guards, in order:

1. grounding: a lesson must cite episodes, all of them among the ones the reflector was
   given (so: existing, and the owner's own) and not erased by the time it is written
   (checked again in the entry's transaction); otherwise it is discarded and counted;
2. near duplicates of approved entries, pending proposals or rejected content are skipped
   and counted, which makes a second run on the same day a no-op;
3. the budget: at most ``lessons_per_day`` stored per owner per day, across runs: the local day
   of the database's ``timezone``, as the scheduler counts days. Each store is booked at its time
   (``^KNR(owner, "stored", µs)``, checked and bumped in the entry's own transaction) and a run
   counts those within its local day, so a zone changed between runs neither gives a second
   allowance in one day nor spends the next day's (test_a_zone_change_neither_doubles_nor_loses_the_budget);
   the per-day counts older versions kept (``^KNR(owner, "lessons", day)``, and before them the
   UTC day's ``^KNR(owner, day)``) still count for the day they name.

The default ``OfflineReflector`` is deterministic; ``AnthropicReflector`` asks Claude through
the ``anthropic`` SDK with structured (JSON schema) output. A failing reflector costs that
owner's run, never the budget, and is reported.

A reflector that calls a model (``Metered``: it has ``usage``) costs money, so the run spends it
only where it can buy something: it is not asked for an owner with nothing recorded since its
last reflection that dealt with everything proposed (the same window sent again gave the same
lessons, skipped as duplicates, every run), nor more than ``reflection_calls_per_day`` times a
(local) day per owner. What each owner's calls cost (calls, HTTP attempts, tokens) is in the report
and the audit record.

Layout (besides the budget)::

    ^KNR(owner, "stored", µs) = n                   lessons stored for the owner at that time (a week is kept)
    ^KNR(owner, "called", µs) = n                   model calls made for the owner at that time (a week is kept)
    ^KNR(owner, "lessons" | "calls", day) = n       the same per local day, as older versions kept them (read only)
    ^KNR(owner, "reflected") = {"recorded", "ids"}  when the newest episode the last complete reflection read was
                                                    recorded, and the episodes recorded then
    ^KNR(owner, "asked") = time                     when a run last asked the model for the owner: a run asks
                                                    the owners asked longest ago first, so owners a run's
                                                    deadline or failures left out go first the next time
"""

from __future__ import annotations

import datetime as dt
import re
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from memdb.errors import DuplicateError, LLMError, SanitizerError, ValidationError
from memdb.governance.knowledge import Knowledge
from memdb.memory.episodes import Episodes, OwnerEpisodes
from memdb.memory.ids import ts_micros
from memdb.memory.models import Episode, utc
from memdb.memory.text import clip, normalize_tag, tokenize
from memdb.memory.timephrase import local_day, local_day_span

__all__ = [
    "Metered",
    "OfflineReflector",
    "OwnerReflection",
    "Proposal",
    "Reflection",
    "ReflectionReport",
    "Reflector",
    "Usage",
]

MAX_CITES = 50
MAX_ROOM = 50  # proposals asked for beyond the budget, at most (room for the duplicates skipped)
_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class Usage:
    """What calls to a model cost: calls made (each may be retried), HTTP attempts, tokens in and
    out, and ``answers``: the calls the API answered, used or not (a call that failed on the API,
    an outage, got none: a session's idle tries count answers only)."""

    calls: int = 0
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    answers: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls, self.attempts + other.attempts,
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, self.answers + other.answers,
        )  # fmt: skip

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.calls - other.calls, self.attempts - other.attempts,
            self.input_tokens - other.input_tokens, self.output_tokens - other.output_tokens, self.answers - other.answers,
        )  # fmt: skip

    def __str__(self) -> str:
        return f"{self.calls} model calls ({self.attempts} HTTP attempts), {self.input_tokens} input and {self.output_tokens} output tokens"


@runtime_checkable
class Metered(Protocol):
    """A component that calls a model, with what its calls have cost so far (``memdb.llm``'s adapters)."""

    @property
    def usage(self) -> Usage: ...


def is_metered(reflector: object) -> bool:
    """Whether ``reflector`` counts its calls as memdb's adapters do: a ``usage`` of its own
    of another type (a user's reflector keeping a dict) is no count to subtract."""
    return isinstance(getattr(reflector, "usage", None), Usage)


def usage_of(reflector: object) -> Usage:
    """What ``reflector`` has spent so far (nothing for one that does not count as ``_metered``)."""
    usage = getattr(reflector, "usage", None)
    return usage if isinstance(usage, Usage) else Usage()


@dataclass(frozen=True)
class Proposal:
    """A lesson a reflector proposes, with the ids of the episodes it derives from."""

    text: str
    cites: tuple[str, ...]
    tags: tuple[str, ...] = ()


@runtime_checkable
class Reflector(Protocol):
    """Distills durable lessons from one owner's recent episodes."""

    def reflect(self, owner: str, episodes: Sequence[Episode], max_lessons: int) -> Sequence[Proposal | None]:
        """At most ``max_lessons`` proposals, each citing episodes of ``episodes`` (oldest first);
        None for an item of a model's answer that could not be read (counted invalid)."""
        ...


# --- the deterministic default ------------------------------------------------------------------

# The offline reflector's wording. Its fixed words (``TEMPLATE_WORDING``) say nothing about the
# lesson, and every lesson of a rule shares them: the near-duplicate guard leaves them out
# (``Knowledge.discount``), or two failing tools read 0.70 alike and one rejection refused both.
_WHERE_TAG = "{kind} work on {tag}"
_WHERE = "{kind} work"
_WORKED = "What worked for {where} after failing: {how}"
_RECURRING = "Recurring failure in {where}; {body}"
_NOTED = "lesson noted: {noted}"
_EG = "e.g. {summary}"
_REPEATED = "Repeated lesson: {lesson}"
_TOOL = "Tool {tool} keeps failing (e.g. {result}); check its inputs or the service before calling it again"
_ASKED = "Recurring question across sessions: {summary}"
TEMPLATE_WORDING: tuple[str, ...] = tuple(
    dict.fromkeys(
        piece.strip()
        for template in (_WHERE_TAG, _WHERE, _WORKED, _RECURRING, _NOTED, _EG, _REPEATED, _TOOL, _ASKED)
        for piece, _, _, _ in string.Formatter().parse(template)
        if piece.strip()
    )
)


class OfflineReflector:
    """Deterministic and offline: what worked after failing, recurring failures, repeated lessons.

    Groups are keyed by kind and tag (episodes without tags by kind alone). Proposals are
    ranked in that order, then by support; one whose episodes all ground an earlier proposal
    of the same rule (the same episodes under another tag) is dropped. The text
    avoids counts and dates, so the same situation a day later reads the same and the
    near-duplicate guard recognises it.
    """

    def reflect(self, owner: str, episodes: Sequence[Episode], max_lessons: int) -> list[Proposal]:
        if max_lessons <= 0:
            return []
        typed = sorted((e for e in episodes if e.outcome is not None and e.kind != "summary"), key=lambda e: (e.ts, e.id))
        groups: dict[tuple[str, str], list[Episode]] = defaultdict(list)
        for e in typed:
            for tag in e.tags or ("",):
                groups[(e.kind, tag)].append(e)
        candidates: list[tuple[int, int, tuple[str, str], Proposal]] = []
        for (kind, tag), group in sorted(groups.items()):
            where = _WHERE_TAG.format(kind=kind, tag=tag) if tag else _WHERE.format(kind=kind)
            tags: tuple[str, ...] = (tag,) if tag else ()
            failures = [e for e in group if e.outcome == "failure"]
            fixed = [e for e in group if e.outcome == "success" and failures and e.ts > failures[0].ts]
            if fixed:
                win = fixed[-1]
                how = win.lesson or win.what_we_tried or win.summary
                cites = (*(f.id for f in failures if f.ts < win.ts), win.id)
                candidates.append((0, -len(cites), (kind, tag), Proposal(clip(_WORKED.format(where=where, how=how), 500), cites, tags)))
            if len(failures) >= 2:
                noted = _most_common([f.lesson for f in failures if f.lesson])
                body = _NOTED.format(noted=noted) if noted else _EG.format(summary=failures[0].summary)
                text = clip(_RECURRING.format(where=where, body=body), 500)
                candidates.append((1, -len(failures), (kind, tag), Proposal(text, tuple(f.id for f in failures), tags)))
        # the same lesson written down more than once, whatever the kind
        by_lesson: dict[str, list[Episode]] = defaultdict(list)
        for e in typed:
            if e.lesson and tokenize(e.lesson):
                by_lesson[" ".join(tokenize(e.lesson))].append(e)
        for key, group in sorted(by_lesson.items()):
            if len(group) >= 2:
                tags = tuple(dict.fromkeys(t for e in group for t in e.tags))[:4]
                text = clip(_REPEATED.format(lesson=group[0].lesson), 500)
                candidates.append((2, -len(group), ("", key), Proposal(text, tuple(e.id for e in group), tags)))
        candidates += _capture_candidates(episodes)
        out: list[Proposal] = []
        grounds: list[tuple[int, set[str], set[str]]] = []
        for rule, _, _, proposal in sorted(candidates, key=lambda c: (c[0], c[1], c[2])):
            cited = set(proposal.cites)
            if any(r == rule and cited <= seen for r, seen, _ in grounds):
                continue  # the same episodes under another tag: the same lesson again
            words = set(tokenize(proposal.text.partition(": ")[2]))
            if rule == 2 and any(cited <= seen and words <= said for _, seen, said in grounds):
                continue  # a recurring failure already noted this lesson on these episodes
            grounds.append((rule, cited, set(tokenize(proposal.text))))
            out.append(proposal)
            if len(out) >= max_lessons:
                break
        return out


_FAILED_RESULT = re.compile(r"\b(error|errors|errored|fail(?:ed|ure|s)?|exception|timed? ?out|timeout|refused|denied|invalid)\b", re.I)


def _capture_candidates(episodes: Sequence[Episode]) -> list[tuple[int, int, tuple[str, str], Proposal]]:
    """Lessons from gateway capture, which carries no outcome: a tool whose results keep
    failing (rule 3), and a question asked again in other sessions (rule 4)."""
    out: list[tuple[int, int, tuple[str, str], Proposal]] = []
    failing: dict[str, list[Episode]] = defaultdict(list)
    asked: dict[str, list[Episode]] = defaultdict(list)
    for e in sorted(episodes, key=lambda e: (e.ts, e.id)):
        if e.kind == "tool_call" and e.tool and e.result and _FAILED_RESULT.search(e.result):
            failing[e.tool].append(e)
        elif e.kind == "exchange" and len(words := tokenize(e.summary)) >= 2:
            asked[" ".join(words)].append(e)
    for tool, calls in sorted(failing.items()):
        if len(calls) >= 2:
            # the kind of failure, not the result's text: ids and times in it changed every day, and
            # once the template's words stopped counting (TEMPLATE_WORDING) the same tool's lesson
            # passed its tombstone the next day (test_a_tool_s_lesson_reads_the_same_whatever_the_result_says)
            result = _most_common([_failure_kind(c.result or "") for c in calls]) or ""
            text = clip(_TOOL.format(tool=tool, result=result), 500)
            tags = tuple(dict.fromkeys(t for c in calls for t in c.tags))[:4]
            out.append((3, -len(calls), ("tool", tool), Proposal(text, tuple(c.id for c in calls), tags)))
    for key, group in sorted(asked.items()):
        if len({e.session for e in group}) >= 2:  # asked again in another session: worth remembering the answer
            text = clip(_ASKED.format(summary=group[0].summary), 500)
            tags = tuple(dict.fromkeys(t for e in group for t in e.tags))[:4]
            out.append((4, -len(group), ("asked", key), Proposal(text, tuple(e.id for e in group), tags)))
    return out


def _failure_kind(result: str) -> str:
    """The first failure word of a tool's result, folded to one word per kind ("Timed out" and
    "time out" -> "timeout", "failure" and "fails" -> "failed", "errors" -> "error"): the tool's
    lesson is two words besides the template, so "request failed" one day and "failure: upstream"
    the next made it 0.40 alike and a rejected lesson came back past its tombstone
    (test_a_reworded_failure_does_not_bring_a_rejected_tool_lesson_back). "failed", whose stem
    "fail" and "fails" share, keeps matching the tombstones of lessons written before."""
    found = _FAILED_RESULT.search(result)
    word = found.group(1).lower() if found else "error"
    if word.startswith("time"):
        return "timeout"
    if word.startswith("fail"):
        return "failed"
    return "error" if word.startswith("error") else word


def _most_common(texts: Iterable[str]) -> str | None:
    counts = Counter(texts)
    if not counts:
        return None
    return max(counts.items(), key=lambda kv: kv[1])[0]  # ties: the first seen (Counter keeps order)


# --- the daily run --------------------------------------------------------------------------


@dataclass
class OwnerReflection:
    """What reflection did for one owner."""

    owner: str
    read: int = 0
    proposed: int = 0
    stored: list[str] = field(default_factory=list)
    ungrounded: int = 0
    invalid: int = 0
    duplicates: dict[str, int] = field(default_factory=lambda: {"approved": 0, "pending": 0, "rejected": 0})
    over_budget: int = 0
    budget_left: int = 0
    spent: bool = False  # the day's lessons_per_day were stored by earlier runs: the reflector was not asked
    error: str | None = None
    unasked: str | None = None  # why a model reflector was not asked: nothing new, or the day's calls are made
    stopped: bool = False  # failed without a call: the run had stopped calling the model (deadline, failures in a row)
    usage: Usage = field(default_factory=Usage)

    @property
    def skipped(self) -> int:
        return sum(self.duplicates.values())


@dataclass
class ReflectionReport:
    """What one ``reflect`` run did, per owner and in total."""

    now: dt.datetime
    day: str
    owners: dict[str, OwnerReflection] = field(default_factory=dict)

    @property
    def stored(self) -> int:
        return sum(len(o.stored) for o in self.owners.values())

    @property
    def discarded(self) -> int:
        """Proposals without valid citations (or with unusable text): never stored."""
        return sum(o.ungrounded + o.invalid for o in self.owners.values())

    @property
    def skipped(self) -> int:
        return sum(o.skipped for o in self.owners.values())

    @property
    def over_budget(self) -> int:
        return sum(o.over_budget for o in self.owners.values())

    @property
    def budget_spent(self) -> list[str]:
        """Owners not reflected for because earlier runs stored the day's ``lessons_per_day``."""
        return [o.owner for o in self.owners.values() if o.spent]

    @property
    def errors(self) -> list[str]:
        return [f"{o.owner}: {o.error}" for o in self.owners.values() if o.error]

    @property
    def unasked(self) -> list[str]:
        """Owners a model reflector was not asked for, and why (nothing new, the day's calls made)."""
        return [f"{o.owner}: {o.unasked}" for o in self.owners.values() if o.unasked]

    @property
    def not_called(self) -> list[str]:
        """Owners whose reflector failed without a call made: the run had stopped calling (its
        deadline passed, or its calls kept failing); the next run reflects for them."""
        return [o.owner for o in self.owners.values() if o.stopped]

    @property
    def usage(self) -> Usage:
        """What the run's model calls cost, over every owner."""
        total = Usage()
        for o in self.owners.values():
            total += o.usage
        return total

    def __str__(self) -> str:
        failed = len(self.errors) - len(self.not_called)
        return (
            f"reflect at {self.now:%Y-%m-%d %H:%M} UTC: {self.stored} lessons queued for review, {self.skipped} near duplicates skipped, "
            f"{self.discarded} discarded (ungrounded or unusable), {self.over_budget} over the daily budget"
            + (f"; {self.usage}" if self.usage.calls else "")
            + (f"; {failed} reflector failures" if failed else "")
            + (f"; {len(self.not_called)} owners not reflected (the run stopped calling the model)" if self.not_called else "")
            + (f"; {len(self.unasked)} owners with nothing to ask" if self.unasked else "")
            + (
                f"; the day's budget ({self.day}) was already spent for {', '.join(self.budget_spent)} (it renews the next local day)"
                if self.budget_spent
                else ""
            )
        )


class Reflection:
    """The daily reflection pass of one database."""

    def __init__(self, episodes: Episodes, knowledge: Knowledge, reflector: Reflector | None = None) -> None:
        self.episodes = episodes
        self.knowledge = knowledge
        self.reflector: Reflector = reflector or OfflineReflector()
        self.budget = episodes.space["KNR"]
        knowledge.discount(TEMPLATE_WORDING)  # saved by hand in these words too: compared by what they say

    def run(
        self, now: dt.datetime | None = None, *, owners: Iterable[str] | None = None, reflector: Reflector | None = None
    ) -> ReflectionReport:
        """Reflect for every owner (or ``owners``) at ``now``; see the module docstring for the guards."""
        at = utc(now, "now") if now is not None else self.episodes.now()
        self.episodes.reload_settings()  # another process may have changed the budget, the window or the zone
        day = _Day.of(at, self.episodes.settings.timezone)
        report = ReflectionReport(at, day.label)
        use = reflector or self.reflector
        named = list(owners) if owners is not None else self.episodes.owners()
        done: dict[str, OwnerReflection] = {}
        metered = is_metered(use)
        for owner in self._fair_order(named) if metered else named:
            done[owner] = self._one(self.episodes.owner(owner), at, day, use)
            if metered and not done[owner].stopped and done[owner].usage.calls:
                self.budget.set((owner, "asked"), at)
        report.owners = {owner: done[owner] for owner in named}  # reported in the order named
        return report

    def spent(self, owner: str, at: dt.datetime | None = None) -> int:
        """Lessons stored for ``owner`` on ``at``'s local day (now's by default), in the database's
        ``timezone``, as the daily budget counts them (test_the_budget_counts_local_days)."""
        when = utc(at, "at") if at is not None else self.episodes.now()
        return self._stored(owner, _Day.of(when, self.episodes.settings.timezone))

    def _stored(self, owner: str, day: _Day) -> int:
        """Lessons stored for ``owner`` within ``day``, with what older versions booked to its label
        (the local day's count, and before it the UTC day's)."""
        legacy = int(self.budget.get((owner, "lessons", day.label), 0)) + int(self.budget.get((owner, day.label), 0))
        return legacy + self._booked(owner, "stored", day)

    def _calls(self, owner: str, day: _Day) -> int:
        """Model calls made for ``owner`` within ``day`` (with the count older versions kept for its label)."""
        return int(self.budget.get((owner, "calls", day.label), 0)) + self._booked(owner, "called", day)

    def _booked(self, owner: str, what: str, day: _Day) -> int:
        return sum(int(n) for _, n in self.budget.range((owner, what), day.lo, day.hi))

    def _book(self, owner: str, what: str, day: _Day, n: int) -> None:
        """Book ``n`` at the run's time, and let go of what no local day of any zone still holds."""
        self.budget.increment((owner, what, day.at), n)
        for subs, _ in list(self.budget.range((owner, what), None, day.at - _KEPT_US)):
            self.budget.kill(subs)

    def _fair_order(self, owners: list[str]) -> list[str]:
        """``owners``, the ones never asked first, then those asked longest ago: a run that stops
        calling the model (its deadline, failures in a row) left the same owners out every day
        when it always began with the first name (test_a_run_s_deadline_leaves_no_owner_out_for_good)."""
        never = dt.datetime.min.replace(tzinfo=dt.UTC)
        return sorted(owners, key=lambda o: self.budget.get((o, "asked"), never))  # stable: ties keep their order

    def _one(self, mem: OwnerEpisodes, at: dt.datetime, day: _Day, reflector: Reflector) -> OwnerReflection:
        settings = self.episodes.settings
        out = OwnerReflection(mem.name)
        cap = settings.lessons_per_day
        out.budget_left = max(cap - self._stored(mem.name, day), 0)
        since = at - dt.timedelta(days=settings.reflection_window_days)
        episodes = list(mem.episodes(since=since, until=at + dt.timedelta(microseconds=1)))
        out.read = len(episodes)
        if not episodes:
            return out
        if out.budget_left == 0:
            out.spent = True  # said in the report: "0 over the budget" hid why nothing was queued
            return out
        metered = is_metered(reflector)
        newest = max(_recorded(e) for e in episodes)
        if metered:
            done = self.budget.get((mem.name, "reflected"))
            if done is not None and _nothing_new(episodes, done["recorded"], set(done["ids"])):
                out.unasked = "nothing recorded since its last reflection"  # the same window again: the same lessons, paid again
                return out
            if self._calls(mem.name, day) >= settings.reflection_calls_per_day:
                out.unasked = f"its {settings.reflection_calls_per_day} model calls of the day are made (reflection_calls_per_day)"
                return out
        before = usage_of(reflector)
        try:
            # Asked for room beyond the budget by as many entries as the owner already has pending,
            # approved or rejected by a reviewer: a deterministic reflector proposes yesterday's
            # lessons first, and those are skipped as duplicates (a rejected one by its tombstone), so
            # without the room new lessons would never reach the queue; counting only pending and
            # approved ones, a day whose lessons were all rejected starved it for good
            # (test_rejected_lessons_leave_room_for_the_others). An erased entry is no duplicate.
            # A model reflector asks for no more than its answer holds (AnthropicReflector.room).
            entries = sum(1 for e in self.knowledge.own(mem.name) if e.status != "erased")
            proposals = list(reflector.reflect(mem.name, episodes, out.budget_left + min(entries, MAX_ROOM)))
        except LLMError as exc:
            out.error = str(exc)
            self._spent(mem.name, day, out, reflector, before)
            out.stopped = metered and out.usage.calls == 0
            self._audit(mem.name, at, out, reflector)
            return out
        self._spent(mem.name, day, out, reflector, before)
        known = {e.id for e in episodes}
        out.proposed = len(proposals)
        for p in proposals:
            if p is None:
                out.invalid += 1  # an item of a model's answer that was no lesson: it alone is lost
                continue
            cites = tuple(dict.fromkeys(p.cites))[:MAX_CITES] if isinstance(p.cites, (list, tuple)) else ()
            if not cites or not all(isinstance(c, str) and c in known for c in cites):
                out.ungrounded += 1  # no citation, no candidacy: unknown, another owner's, or outside what was read
                continue
            try:
                clean = self.knowledge.clean(p.text, "lesson")
                tags = self._lesson_tags(mem.name, p.text, p.tags)
            except (ValidationError, SanitizerError):
                out.invalid += 1
                continue
            dup = self.knowledge.duplicate(mem.name, clean)
            if dup is not None:
                out.duplicates[dup.against] += 1
                continue
            with self.episodes.space.transaction():
                if self.knowledge.uncited(mem.name, cites):
                    out.ungrounded += 1  # erased while the reflector ran (test_episode_erased_during_reflection_is_ungrounded)
                    continue
                if self._stored(mem.name, day) >= cap:  # the hard cap, also across processes
                    out.over_budget += 1
                    continue
                try:
                    entry = self.knowledge.submit(mem.name, clean, source="reflection", cites=cites, tags=tags, now=at)
                except DuplicateError:
                    out.duplicates["pending"] += 1
                    continue
                except ValidationError:
                    out.invalid += 1  # whatever else the door refuses costs the proposal, never the run
                    continue
                self._book(mem.name, "stored", day, 1)
            out.stored.append(entry.id)
        out.budget_left = max(cap - self._stored(mem.name, day), 0)
        if metered and out.over_budget == 0:
            # every proposal was dealt with: until something new is recorded, asking again buys nothing
            # (over the budget, tomorrow's run asks again for what did not fit)
            # the newest capture time read, with every episode recorded then (one, but with a clock that stands still)
            self.budget.set((mem.name, "reflected"), {"recorded": newest, "ids": sorted(e.id for e in episodes if _recorded(e) == newest)})
        self._audit(mem.name, at, out, reflector)
        return out

    def _lesson_tags(self, owner: str, text: str, tags: Any) -> list[str]:
        """The tags a reflector suggested (at most 8), sanitized in the form given as a capture's
        are (fail closed: SanitizerError), then normalised, dropping those that do not normalise.
        Normalised first, "jane.doe@example.com" was stored as "jane-doeexample-com", a form no
        pattern knows (test_a_lessons_tags_are_sanitized_as_given). Sanitized in one pass with
        the lesson's text, as a capture's fields are, so a placeholder names one value across both:
        alone, the tags numbered their own ("<EMAIL_1>" in the text, "email-1" a tag, two people;
        test_a_lessons_placeholders_are_numbered_with_its_text)."""
        given = [str(t) for t in list(tags)[:8]] if isinstance(tags, (list, tuple)) else []
        if not given:
            return []
        return normalized_tags(self.episodes.clean(owner, {"text": text, "tags": given}, {}, "lesson tags")["tags"])

    def _spent(self, owner: str, day: _Day, out: OwnerReflection, reflector: Reflector, before: Usage) -> None:
        """What the owner's reflection cost, in ``out`` and in the day's count of calls."""
        if is_metered(reflector):
            out.usage = usage_of(reflector) - before
            if out.usage.calls:
                self._book(owner, "called", day, out.usage.calls)

    def _audit(self, owner: str, at: dt.datetime, out: OwnerReflection, reflector: Reflector) -> None:
        self.episodes.audit.write(
            owner, "reflect", at, by="reflection", reflector=type(reflector).__name__, read=out.read,
            proposed=out.proposed, stored=out.stored, ungrounded=out.ungrounded, invalid=out.invalid,
            duplicates=out.duplicates, over_budget=out.over_budget, error=out.error,
            calls=out.usage.calls, attempts=out.usage.attempts, input_tokens=out.usage.input_tokens,
            output_tokens=out.usage.output_tokens,
        )  # fmt: skip


_KEPT_US = 7 * 86_400_000_000  # bookings older than a week: no local day holding a run's time reaches back that far


@dataclass(frozen=True)
class _Day:
    """A run's local day: its label, its first instant and the next day's (µs), and the run's time."""

    label: str
    lo: int
    hi: int
    at: int

    @classmethod
    def of(cls, at: dt.datetime, timezone: str) -> _Day:
        first, after = local_day_span(at, timezone)  # memdb's one reading of local days
        now = ts_micros(at)
        # (a wall midnight a DST change skips or repeats: the bounds still hold the run's time)
        return cls(local_day(at, timezone), min(ts_micros(first), now), max(ts_micros(after), now + 1), now)


def _nothing_new(episodes: Iterable[Episode], at: dt.datetime, ids: set[str]) -> bool:
    """Whether every episode was recorded before ``at``, or at ``at`` and is one of ``ids``."""
    return all(_recorded(e) < at or (_recorded(e) == at and e.id in ids) for e in episodes)


def _recorded(episode: Episode) -> dt.datetime:
    """When memdb wrote ``episode`` (its time, for one written before layout 7 kept that)."""
    return episode.recorded or episode.ts


def normalized_tags(tags: Iterable[Any], cap: int = 8) -> list[str]:
    """At most ``cap`` of a model's sanitized tags, those that normalise cleanly (others are
    dropped, not fatal): what a reflected lesson or an extracted pattern keeps."""
    out: list[str] = []
    for t in list(tags)[:cap]:
        try:
            out.append(normalize_tag(str(t)))
        except ValidationError:
            continue
    return out
