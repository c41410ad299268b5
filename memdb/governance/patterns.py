"""Patterns: every Nth record of a typed kind triggers extraction over those records.

Each typed record (kinds with an outcome) is counted per owner and kind in the record's own
transaction; when ``pattern_every`` (5) records of a kind have gathered, they become a batch
and an extractor reads them and says whether a pattern holds. A pattern is written with
citations to the records it rests on, private to the owner like the records themselves. The
offline extractor is the default; ``memdb.llm.AnthropicExtractor`` asks Claude with structured output.

Capture never waits on a model. An ``offline`` extractor (the default: deterministic, local)
runs right after the record that completes a batch, outside any transaction; any other one (a
model's) never does: its batches wait for ``Database.maintain`` (so the scheduler's daily run)
or ``Database.extract_patterns()``, as do a batch completed inside a caller's transaction and
one whose extraction failed. (The Anthropic extractor ran inside ``record()``: the fifth typed
record made three HTTP calls and waited an hour on a retry-after.)

What a model writes is a proposal, not a finding: each pattern it states goes to the review
queue as a pending lesson (``Knowledge.submit``), as reflection's do, and ``prepare`` offers it
only once a person approved it. (Stored as a pattern it was served first by ``prepare``, and a
planted record had the model write "Before any deploy, run curl ... | sh as root".) The
offline extractor's patterns are counts of the owner's own records and go to the library.

The patterns are a library, not a log: a batch that finds a pattern the owner already has (of
its kind and tags, ``same_pattern``) states it again in place, keeping its id and when it was
first found, counting the batches that found it, and citing the new batch (the text rests on
those records). Writing each finding anew filled a support agent's library with a copy of "In 5
of the last 5 escalation records tagged support: 5 failure" for every fifth escalation (sixty in a
year of daily ones), and ``prepare`` read them all to show the oldest.

Layout::

    ^PATN(owner, kind, "records"|"batches") = n     counters
    ^PATQ(owner, kind, n) = episode id              counted records not yet in a batch (the id counted: a
                                                     batch reads each as its current version)
    ^PATB(owner, kind, batch) = {...}                batch: ids, status pending|done|failed, patterns (written or
                                                     stated again), queued (review entries a model's patterns
                                                     became), error (sanitized), tries (failed calls of
                                                     the extractor: maintain stops retrying at PATTERN_TRIES)
    ^PATP(owner, kind, batch)                        batches not done yet (pending or failed), so a run
                                                     reads only those, never the whole history
    ^PATI(owner, id, kind, batch)                    the batches that count a record, by the id they hold:
                                                     a correction reads only those (``source_corrected``)
    ^PAT(owner, id) = {...}                          patterns, with cites
    ^PATK(owner, kind, id) = [tag, ...]              patterns by kind, with their tags sorted ("" if written
                                                     before it held them)
    ^PATN(0) = at                                    when maintain stated again the patterns corrections
                                                     had left stale (before patterns followed them): once
                                                     (a number: no owner's name)
    ^PATN(1) = True                                  ^PATI was built from the batches a memdb before it wrote:
                                                     once, by the first write that needs it (a flag, no time:
                                                     that write is a record's, and its capture time outlived
                                                     the record's erasure and its owner's)

Patterns follow corrections: a record a pattern's batch counted, corrected (``supersede``),
has the pattern stated again in the correction's transaction from the batch as it reads now
(``source_corrected``); it said "5 success" and cited the versions the owner said were wrong.
An erasure takes the patterns citing what it erased, and its ids out of the waiting records and
the batches (``erase_citing``); a version cut while later ones stay is counted as the one kept.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memdb.engine.globals import Global
from memdb.engine.log import logger
from memdb.errors import DuplicateError, LLMError, MemdbError, NotFoundError, SanitizerError, ValidationError
from memdb.governance.knowledge import Knowledge, jaccard
from memdb.governance.reflection import Usage, is_metered, normalized_tags, usage_of
from memdb.memory.episodes import Episodes, to_episode
from memdb.memory.ids import new_id
from memdb.memory.layout import SUPERSEDED
from memdb.memory.models import Episode, bound_text, unstorable, utc
from memdb.memory.settings import OUTCOMES
from memdb.memory.text import tokenize
from memdb.memory.timephrase import local_day

_log = logger(__name__)

__all__ = [
    "OfflineExtractor",
    "Pattern",
    "PatternExtractor",
    "PatternProposal",
    "Patterns",
    "same_pattern",
]

PATTERN_CHARS = 600
PATTERN_TRIES = 3  # failed calls after which maintain stops retrying a batch (extract_patterns still does)
_MIN_SUPPORT = 3  # of 5: a majority, so one or two coincidences are not a pattern
SAME_PATTERN = 0.8  # the Jaccard similarity of two statements' terms at which they say one thing
_INDEXED = (1,)  # ^PATN(1): ^PATI is built (a number: no owner's name)


def _batches(counted: Iterable[tuple[Any, ...]]) -> list[tuple[str, int]]:
    """The batches (kind, number) that ``^PATI`` nodes (owner, id, kind, batch) name, oldest first, once each."""
    return sorted({(str(subs[2]), int(subs[3])) for subs in counted}, key=lambda b: (b[1], b[0]))


def same_pattern(a: str, b: str) -> bool:
    """Whether two pattern texts say the same thing: their terms overlap by ``SAME_PATTERN``
    (Jaccard), so "3 failure, 1 success" found again is the same pattern, and "5 success" where
    it said "5 failure" is another."""
    return jaccard(tokenize(a), tokenize(b)) >= SAME_PATTERN


class Pattern(BaseModel):
    """A generalisation over one owner's records of one kind, citing the batch it was last
    found in; ``created`` is when it was first found, ``confirmed`` when a later batch found it
    again (None if none has), ``seen`` how many batches found it."""

    model_config = ConfigDict(frozen=True)

    id: str
    owner: str
    kind: str
    text: str
    cites: tuple[str, ...]
    tags: tuple[str, ...] = ()
    outcomes: dict[str, int] = Field(default_factory=dict)
    created: dt.datetime
    batch: int
    confirmed: dt.datetime | None = None
    seen: int = 1

    @property
    def latest(self) -> dt.datetime:
        """When a batch last found it."""
        return self.confirmed or self.created

    def line(self, zone: str = "UTC") -> str:
        """The pattern on one line, its days where days begin in ``zone`` (the database's, as
        every other line of a prepared block says them)."""
        head = f"{local_day(self.latest, zone)} {self.kind}" + (f" [{', '.join(self.tags)}]" if self.tags else "")
        found = f"; found in {self.seen} batches since {local_day(self.created, zone)}" if self.seen > 1 else ""
        return f"- {head}: {self.text} (from {len(self.cites)} records{found})".replace("\n", " ")


@dataclass(frozen=True)
class PatternProposal:
    """What an extractor found: text, the records it rests on, tags."""

    text: str
    cites: tuple[str, ...]
    tags: tuple[str, ...] = ()


@runtime_checkable
class PatternExtractor(Protocol):
    """Reads a batch of records of one kind and says which patterns, if any, hold; None for an
    item of a model's answer that could not be read (the batch counts it discarded).

    An extractor is deterministic and local unless its class sets ``offline = False`` (as
    ``AnthropicExtractor`` does): it runs as the record completing a batch is captured, and its
    patterns go to the library. One with ``offline = False`` is a model: it runs in maintain and
    ``Database.extract_patterns``, and its patterns wait in the review queue (module docstring).
    """

    def extract(self, owner: str, kind: str, episodes: Sequence[Episode]) -> Sequence[PatternProposal | None]: ...


def is_offline(extractor: PatternExtractor) -> bool:
    """Whether ``extractor`` is deterministic and local: unless it says ``offline = False``, as a
    model's does (an extractor written before the attribute existed runs at capture, as it did)."""
    return getattr(extractor, "offline", True) is not False


class OfflineExtractor:
    """Deterministic: a tag shared by most of the batch (with its outcomes), else a majority outcome."""

    offline = True

    def extract(self, owner: str, kind: str, episodes: Sequence[Episode]) -> list[PatternProposal]:
        if not episodes:
            return []
        tag_counts = Counter(t for e in episodes for t in dict.fromkeys(e.tags))
        best = sorted(((n, t) for t, n in tag_counts.items() if n >= _MIN_SUPPORT), key=lambda p: (-p[0], p[1]))
        tags: tuple[str, ...] = ()
        if best:
            tag = best[0][1]
            group = [e for e in episodes if tag in e.tags]
            where, tags = f"{kind} on {tag}", (tag,)
        else:
            group, where = list(episodes), kind
        outcomes: Counter[str] = Counter(str(e.outcome) for e in group if e.outcome)
        top = max(OUTCOMES, key=lambda o: (outcomes.get(o, 0), -OUTCOMES.index(o)))
        if not best and outcomes.get(top, 0) < _MIN_SUPPORT:
            return []
        spread = ", ".join(f"{outcomes[o]} {o}" for o in sorted(outcomes, key=lambda o: (-outcomes[o], OUTCOMES.index(o))))
        text = f"In {len(group)} of the last {len(episodes)} {kind} records{f' tagged {tag}' if best else ''}: {spread}."
        lessons = Counter(e.lesson for e in group if e.lesson)
        if lessons:
            lesson, n = lessons.most_common(1)[0]
            # "recurring" only where records share it: a lesson one record holds was called
            # recurring "from 5 records" (test_a_lesson_one_record_holds_is_not_called_recurring)
            if n > 1:
                text += f" Recurring lesson for {where} ({n} records): {lesson}"
            else:
                text += f" A lesson from one of them: {max((e for e in group if e.lesson), key=lambda e: e.ts).lesson}"
        return [PatternProposal(bound_text(text, PATTERN_CHARS), tuple(e.id for e in group), tags)]


class Patterns:
    """Counting, batching, extraction and reading of patterns for one database."""

    def __init__(self, episodes: Episodes, knowledge: Knowledge, extractor: PatternExtractor | None = None) -> None:
        self.episodes = episodes
        self.knowledge = knowledge  # where a model's patterns wait for review
        self.space = episodes.space
        self._due = threading.local()  # batches records completed, per thread (_due_here)
        self.extractor: PatternExtractor = extractor or OfflineExtractor()
        self.counters = self.space["PATN"]
        self.waiting = self.space["PATQ"]
        self.batches = self.space["PATB"]
        self.undone = self.space["PATP"]
        self.patterns = self.space["PAT"]
        self.by_kind = self.space["PATK"]
        self.counting = self.space["PATI"]
        self._indexed_here = False  # ^PATN(1) seen set, outside a transaction (it is never unset)

    def on_record(self, owner: str, episode: Episode) -> None:
        """``Episodes.record_hooks``: count a typed record, in its transaction. The count is staged
        (``Globals.stage``) and written with the transaction's other records' at its commit, or
        before anything reads the counting (``_flush_counts``): counted record by record, a batched
        capture paid a counter, a waiting record and a seek each. The batch a record completes is
        its own, which ``run_due`` extracts once that transaction is over."""
        at = episode.recorded or self.episodes.now()  # when it was captured: a batch it completes is made then
        self.space.stage(("patterns", owner), partial(self.count, owner), [(episode.kind, episode.id, at)])

    def _flush_counts(self) -> None:
        """Write the counts this transaction staged (``on_record``), so that they are read too."""
        self.space.flush_staged()

    def _due_here(self) -> list[tuple[str, str, int, str]]:
        """The batches (owner, kind, number, the record completing it) this thread's records
        completed since its last ``run_due``: a thread's, so that another thread's records (say,
        a bulk load in a transaction) never run here."""
        due: list[tuple[str, str, int, str]] | None = getattr(self._due, "batches", None)
        if due is None:
            due = self._due.batches = []
        return due

    def run_due(self, owner: str, after: str) -> int:
        """Extract the batches ``owner``'s record just completed, with an offline extractor (never
        inside a transaction, so an extractor call does not hold the write lock); returns patterns
        written. Only those: batches completed inside a caller's transaction wait for ``maintain``
        or ``extract_patterns``, as do a model's (capture does not wait on a network:
        test_capture_never_waits_on_a_model_extractor). The first record after a bulk load in one
        transaction ran every batch the load completed: thousands of round trips on PostgreSQL
        (test_a_record_after_a_transaction_runs_only_its_own_batch).

        ``after`` is the committed episode whose record (or session close) completed them: a
        failure here (a conflict under ``serializable``, the server gone) is logged and its batch
        stays pending for ``maintain``. Raised, it read as the record's own failure, and a caller
        who retried, as a TransactionConflictError says, wrote the episode twice
        (tests/surfaces/test_record_after_commit.py)."""
        try:
            return self._run_due(owner, after)
        except MemdbError as exc:  # the episode is committed: what failed after it is not its failure
            # ids and the exception's type only: its message may quote a record (memdb.engine.log)
            _log.warning(
                "pattern run after %s of owner %s failed (%s): its batch stays pending for maintain", after, owner, type(exc).__name__
            )
            return 0

    def _run_due(self, owner: str, after: str) -> int:
        due = self._due_here()
        # the batches ``after`` completed: those a caller's transaction completed were staged,
        # counted at its commit, after every run_due inside it, and wait for maintain
        mine = [(kind, number) for name, kind, number, by in due if name == owner and by == after]
        due[:] = [entry for entry in due if entry[0] != owner]
        if not mine:
            return 0
        if self.space.in_transaction or not is_offline(self.extractor):
            return 0
        written = 0
        for kind, number in dict.fromkeys(mine):
            batch = self.batches.get((owner, kind, number))
            if batch is not None and batch["status"] == "pending":  # not rolled back, nor done by another process
                written += self._extract(owner, kind, number, batch, self.episodes.now())
        return written

    def count(self, owner: str, records: Iterable[tuple[str, str, dt.datetime]]) -> None:
        """Count new records, as (kind, id, when captured), in the records' transaction; each
        batch they complete is noted for ``run_due`` with the record that completed it. Writes
        what counting them one by one wrote, once a kind: its counter, the records left waiting,
        and each batch completed (tests/governance/test_patterns_staged.py holds the two equal)."""
        settings = self.episodes.settings
        by_kind: dict[str, list[tuple[str, dt.datetime]]] = {}
        for kind, eid, at in records:
            if kind in settings.typed_kinds:
                by_kind.setdefault(kind, []).append((eid, at))
        for kind, counted in by_kind.items():
            self._count_kind(owner, kind, counted, settings.pattern_every)

    def _count_kind(self, owner: str, kind: str, counted: list[tuple[str, dt.datetime]], every: int) -> None:
        n = start = int(self.counters.increment((owner, kind, "records"), len(counted))) - len(counted)
        # Waiting records are numbered n, n+1, ... since the last batch: a batch is complete when
        # ``every`` of them wait, the oldest ``every - 1`` numbers back (erasures leave gaps).
        waiting = {int(subs[-1]): eid for subs, eid in self.waiting.items((owner, kind))}
        done: list[tuple[list[str], dt.datetime, str]] = []  # each batch's ids, when it was made, and by which record
        for eid, at in counted:
            n += 1
            waiting[n] = eid
            if n - min(waiting) + 1 >= every and len(waiting) >= every:
                done.append(([str(waiting[k]) for k in sorted(waiting)], at, eid))
                waiting = {}
        sets: list[tuple[Global, Any, Any]] = [(self.waiting, (owner, kind, k), eid) for k, eid in waiting.items() if k > start]
        if not done:
            self.space.apply((), sets)
            return
        self._index()
        first = int(self.counters.increment((owner, kind, "batches"), len(done))) - len(done)
        due = self._due_here()
        for number, (ids, at, by) in enumerate(done, first + 1):
            sets.append((self.batches, (owner, kind, number), {"ids": ids, "status": "pending", "at": at}))
            sets.extend((self.counting, (owner, eid, kind, number), "") for eid in ids)
            sets.append((self.undone, (owner, kind, number), ""))
            due.append((owner, kind, number, by))
        self.space.apply([(self.waiting, (owner, kind))], sets)

    def run_pending(
        self, owner: str | None = None, *, retry_failed: bool = False, max_tries: int | None = None, now: dt.datetime | None = None
    ) -> int:
        """Extract patterns for batches waiting (one owner's or all); returns patterns written (a
        model's, queued for review, are not counted: ``batch_status`` has them). ``retry_failed``
        retries failed batches, those whose extractor failed fewer than ``max_tries`` times when
        given (a batch the model refuses every day cost a call every day, and with a run's deadline
        kept the batches after it waiting).

        Never called inside a transaction by the record path, so an LLM call does not hold the
        write lock. A failure marks the batch failed, with the error (sanitized), for a later retry.
        """
        at = utc(now, "now") if now is not None else self.episodes.now()
        self._flush_counts()
        if owner is None:
            self.follow_corrections(at)
        owners = [owner] if owner is not None else [str(o) for o in self.undone.children()]
        written = 0
        for name in owners:
            for subs, _ in list(self.undone.items((name,))):
                kind, number = str(subs[1]), int(subs[2])
                batch = self.batches.get((name, kind, number))
                if batch is None or batch["status"] not in ("pending", "failed"):
                    continue
                if batch["status"] == "failed" and not (retry_failed and (max_tries is None or batch.get("tries", 0) < max_tries)):
                    continue
                written += self._extract(name, kind, number, batch, at)
        return written

    def failed(self, owner: str | None = None) -> tuple[int, int]:
        """How many batches (one owner's or all) are failed: those ``maintain`` still retries, and
        those it gave up on after ``PATTERN_TRIES`` failed calls (``extract_patterns`` retries them)."""
        self._flush_counts()
        owners = [owner] if owner is not None else [str(o) for o in self.undone.children()]
        retried = given_up = 0
        for name in owners:
            for subs, _ in self.undone.items((name,)):
                batch = self.batches.get(subs)
                if batch is not None and batch["status"] == "failed":
                    if batch.get("tries", 0) < PATTERN_TRIES:
                        retried += 1
                    else:
                        given_up += 1
        return retried, given_up

    def _extract(self, owner: str, kind: str, number: int, batch: dict[str, Any], at: dt.datetime) -> int:
        mem = self.episodes.owner(owner)
        episodes = []
        for eid in dict.fromkeys(self._current(owner, eid) for eid in batch["ids"]):
            if eid is None:
                continue
            try:
                episodes.append(mem.peek(eid))
            except NotFoundError:  # erased or archived since: the batch is what is left
                continue
        before = usage_of(self.extractor)
        try:
            found = list(self.extractor.extract(owner, kind, episodes)) if episodes else []
            # a model's answer is text like any capture: sanitized (fail closed) before it is stored
            proposals = [(p, self._clean(owner, p, f"pattern of {kind} batch {number}")) for p in found if p is not None]
        except (LLMError, SanitizerError) as exc:
            self._failed(owner, kind, number, batch, str(exc), self._tried(before))
            return 0
        except Exception as exc:  # a custom extractor's bug: the record that triggered it is committed already
            self._failed(owner, kind, number, batch, f"{type(self.extractor).__name__} raised {type(exc).__name__}: {exc}", 1)
            return 0
        known = {e.id for e in episodes}
        ids: list[str] = []
        queued: list[str] = []
        written: list[tuple[list[str], str]] = []  # (tags, text) of this batch's patterns
        discarded = len(found) - len(proposals)  # items of a model's answer that were no pattern
        reviewed = not is_offline(self.extractor)
        with self.space.transaction():
            current = self.batches.get((owner, kind, number))
            if current is None or current["status"] == "done":  # another process got there first
                return 0
            if any((self.episodes.header(owner, e.id) or {}).get("status") == SUPERSEDED for e in episodes):
                return 0  # corrected while the extractor ran: the batch stays pending, read again as corrected
            for p, (text, tags) in proposals:
                cites = tuple(dict.fromkeys(p.cites))
                if not cites or not set(cites) <= known or not tokenize(text):
                    discarded += 1  # a pattern must rest on records of this batch
                    continue
                if unstorable("text", text) is not None:
                    discarded += 1  # a lone surrogate: the store refuses it, and raised out of maintain
                    continue
                if any(self.episodes.header(owner, eid) is None for eid in cites):
                    discarded += 1  # erased while the extractor ran
                    continue
                cited = [e for e in episodes if e.id in cites]
                record: dict[str, Any] = {
                    "id": new_id(at, owner), "owner": owner, "kind": kind, "text": text, "cites": list(cites),
                    "tags": tags, "outcomes": dict(Counter(e.outcome for e in cited if e.outcome)),
                    "created": at, "batch": number, "confirmed": None, "seen": 1,
                }  # fmt: skip
                if any(sorted(t) == sorted(tags) and same_pattern(text, said) for t, said in written):
                    discarded += 1  # one batch finds a pattern once (an extractor may say it twice)
                    continue
                written.append((tags, text))
                if reviewed:  # a model's: a proposal for a person to approve, as a reflected lesson is
                    try:
                        queued.append(self.knowledge.submit(owner, text, source="reflection", cites=cites, tags=tags, now=at).id)
                    except (DuplicateError, ValidationError):
                        discarded += 1  # approved, pending or rejected already, or no usable lesson
                    continue
                record = self._held_again(owner, record)
                self.patterns.set((owner, record["id"]), record)
                self.by_kind.set((owner, kind, record["id"]), sorted(record["tags"]))
                ids.append(record["id"])
            self.batches.set(
                (owner, kind, number),
                {**batch, "status": "done", "patterns": ids, "queued": queued, "discarded": discarded, "error": None},
            )
            self.undone.kill((owner, kind, number))
        return len(ids)

    def _tried(self, before: Usage) -> int:
        """1 if the extractor's failure was a try: a metered one that made no call was not asked
        (its run had passed its deadline or stopped after failures), and that costs no try."""
        return 1 if not is_metered(self.extractor) or (usage_of(self.extractor) - before).calls else 0

    def _failed(self, owner: str, kind: str, number: int, batch: dict[str, Any], error: str, tried: int) -> None:
        """Mark a batch failed, keeping its error through the database's sanitizer: an API error
        may echo the request (an email of a record, a key), and the error was stored raw. A
        sanitizer that fails keeps only that the error's text was dropped."""
        try:
            kept = self.episodes.audit.clean("pattern batch", {"error": error})["error"]
        except SanitizerError:
            kept = "the extraction failed (its message was not kept: the sanitizer failed on it)"
        self.batches.set((owner, kind, number), {**batch, "status": "failed", "error": kept, "tries": batch.get("tries", 0) + tried})

    def _current(self, owner: str, episode_id: str) -> str | None:
        """The current version of a counted record, or None if erased: a record corrected after it
        was counted (``^PATQ`` and a batch hold the id counted) is read as corrected, and a pattern
        counts and cites what the owner holds true now (test_a_record_corrected_before_its_batch_is_read_as_corrected)."""
        try:
            return self.episodes.chain(owner, episode_id)[-1]
        except NotFoundError:
            return None

    def _held_again(self, owner: str, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` as the statement of a pattern the owner already has, where it has one of
        the same kind and tags that says the same thing (``same_pattern``): its id and first
        finding kept, its batches counted, the rest the new statement's. Copies written before
        patterns were a library are folded into it (the oldest id stays). In the caller's
        transaction."""
        tags = sorted(record["tags"])
        same = [
            old
            for subs, held in self.by_kind.items((owner, record["kind"]))
            # the index holds each pattern's tags: only those of the same tags are read (a correction
            # read every pattern of the kind here); "" is an entry written before it held them
            if (held == "" or sorted(held) == tags)
            and (old := self.patterns.get((owner, subs[2]))) is not None
            and sorted(old.get("tags") or ()) == tags
            and same_pattern(old["text"], record["text"])
        ]
        if not same:
            return record
        for old in same:
            self._drop(owner, old)
        every = [*same, record]  # (a pattern stated again brings its own history: _restate)
        first = min(every, key=lambda old: old["id"])
        seen = sum(int(old.get("seen") or 1) for old in every)
        latest = max(old.get("confirmed") or old["created"] for old in every)
        return {**record, "id": first["id"], "created": first["created"], "confirmed": latest, "seen": seen}

    def _drop(self, owner: str, record: dict[str, Any]) -> None:
        self.patterns.kill((owner, record["id"]))
        self.by_kind.kill((owner, record["kind"], record["id"]))

    # --- corrections: a pattern is stated again from its batch as it reads now ------------------------

    def source_corrected(
        self, owner: str, _old_id: str, _old: Mapping[str, Any], new: Episode, _changed: list[str], at: dt.datetime
    ) -> None:
        """``Episodes.supersede_hooks``, in the correction's transaction: each pattern whose batch
        counted the corrected record (any version of it) is stated again from that batch
        (``_restate``), as knowledge citing the old version cites the new one. A pattern kept "5
        success" after one of the five was corrected to a failure, citing the version the owner
        said was wrong (test_a_pattern_is_stated_again_when_a_record_it_counted_is_corrected)."""
        self._flush_counts()
        if self.by_kind.order((owner, new.kind, "")) is None:
            return  # no pattern of its kind (a fact's new value, most corrections): one seek
        # the batches counting a version of it, from ^PATI: reading every pattern of the kind and a
        # batch for each made a correction cost the owner's library, under the write lock (a
        # review's find: 195 ms a supersede on PostgreSQL at 200 patterns)
        for kind, number in self._counting(owner, self.episodes.chain(owner, new.id)):
            batch = self.batches.get((owner, kind, number))
            held = self._held(owner, kind, number, batch)
            if held:  # a batch that found nothing, or is not extracted yet, is read as corrected when it is
                self._restate(owner, kind, number, batch, held, at)

    def _index(self) -> None:
        """Build ``^PATI`` once from the batches a memdb before it wrote (``^PATN(1)`` says it is
        built); in the caller's write transaction, by the first write that needs it."""
        if self._indexed_here:
            return
        if self.counters.get(_INDEXED) is not None:
            self._indexed_here = not self.space.in_transaction  # seen committed: it is never unset
            return
        with self.space.transaction():
            for subs, batch in self.batches.items():
                for eid in batch.get("ids") or ():
                    self.counting.set((subs[0], str(eid), subs[1], subs[2]), "")
            self.counters.set(_INDEXED, True)

    def forget_index_time(self) -> bool:
        """Once per database, at open: ``^PATN(1)`` as a memdb before this one wrote it held the
        time it was set, the capture time of the record whose batch needed the index, which no
        erasure took (test_an_owner_erasure_leaves_no_time_of_the_owner); it becomes the flag.
        Returns whether it was rewritten (one read otherwise)."""
        if self.counters.get(_INDEXED) in (None, True):
            return False
        with self.space.transaction():
            if self.counters.get(_INDEXED) in (None, True):  # another process got there first
                return False
            self.counters.set(_INDEXED, True)
        return True

    def _counting(self, owner: str, ids: Iterable[str]) -> list[tuple[str, int]]:
        """The batches (kind, number) that count any of ``ids``, oldest first, once each."""
        return _batches(self._counted_ids(owner, ids))

    def _counted_ids(self, owner: str, ids: Iterable[str]) -> list[tuple[Any, ...]]:
        """The ``^PATI`` nodes (owner, id, kind, batch) of ``ids``: a seek for each, or, for as
        many ids as the owner's records ever counted (a request for everything), one pass over the
        owner's nodes, which are no more: 20,000 seeks for 3,000 counted records were a third of
        ``erase(everything=True)``."""
        self._index()
        wanted = set(map(str, ids))
        # (a few ids, as a correction's chain: their seeks, without reading the counters first)
        if len(wanted) > 64 and len(wanted) >= sum(int(n) for subs, n in self.counters.items((owner,)) if subs[-1] == "records"):
            return [subs for subs, _ in self.counting.items((owner,)) if str(subs[1]) in wanted]
        return [subs for eid in wanted for subs, _ in self.counting.items((owner, eid))]

    def _held(self, owner: str, kind: str, number: int, batch: dict[str, Any] | None) -> list[dict[str, Any]]:
        """The patterns whose text is batch ``number``'s: among those it lists (a pattern another
        batch found again names that batch since), read by id."""
        if batch is None or "patterns" not in batch:  # (a batch never extracted lists none)
            return []
        found = [self.patterns.get((owner, str(pid))) for pid in dict.fromkeys(batch["patterns"])]
        return [rec for rec in found if rec is not None and rec["kind"] == kind and int(rec["batch"]) == number]

    def follow_corrections(self, now: dt.datetime | None = None) -> int:
        """Once per database (``^PATN(0)``): state again the patterns whose batch holds a record
        corrected before patterns followed corrections; ``run_pending`` (so maintain) calls it.
        Returns the batches stated again (test_maintain_states_again_the_patterns_corrections_left_stale)."""
        if self.counters.get((0,)) is not None:
            return 0
        at = utc(now, "now") if now is not None else self.episodes.now()
        done = 0
        with self.space.transaction():
            if self.counters.get((0,)) is not None:  # another process got there first
                return 0
            for owner in [str(o) for o in self.patterns.children()]:
                for (kind, number), held in self._by_batch(owner).items():
                    batch = self.batches.get((owner, kind, number))
                    if any((self.episodes.header(owner, eid) or {}).get("status") == SUPERSEDED for eid in self._counted(batch, held)):
                        self._restate(owner, kind, number, batch, held, at)
                        done += 1
            self.counters.set((0,), at)
        return done

    def _by_batch(self, owner: str) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """An owner's patterns by the batch whose records their text states."""
        out: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for _, rec in self.patterns.items((owner,)):
            out.setdefault((str(rec["kind"]), int(rec["batch"])), []).append(rec)
        return out

    @staticmethod
    def _counted(batch: dict[str, Any] | None, held: Iterable[dict[str, Any]]) -> list[str]:
        """The ids a batch counted, then those its patterns cite (the current versions of some:
        one whose counted version was cut by ``erase_versions`` is still read)."""
        return list(dict.fromkeys([*(batch or {}).get("ids", ()), *(c for rec in held for c in rec.get("cites") or ())]))

    def _restate(
        self, owner: str, kind: str, number: int, batch: dict[str, Any] | None, held: list[dict[str, Any]], at: dt.datetime
    ) -> None:
        """In the caller's transaction: state again the patterns ``held`` (whose text is batch
        ``number``'s) from the batch's records as they read now: current versions, an erased one
        left out, an archived one as what stays hot of it. One the batch still finds (of the same
        tags) keeps its id and history; one it no longer finds goes; one it finds anew joins the
        library as any finding does. An offline extractor states it, the default one where a
        model extracts (a model's findings are lessons under review, and follow corrections as
        knowledge does). Where the extractor fails, the patterns go and the batch is failed, for
        maintain to extract again: the correction stands."""
        extractor = self.extractor if is_offline(self.extractor) else OfflineExtractor()
        episodes = self._as_now(owner, self._counted(batch, held))
        try:
            found = [p for p in extractor.extract(owner, kind, episodes) if p is not None] if episodes else []
            proposals = [(p, self._clean(owner, p, f"pattern of {kind} batch {number}")) for p in found]
        except Exception as exc:  # a custom extractor's bug, or the sanitizer failing: never the correction's failure
            for rec in held:
                self._drop(owner, rec)
            if batch is not None:
                error = f"stating it again after a correction: {type(exc).__name__}: {exc}"
                self._failed(owner, kind, number, {**batch, "patterns": []}, error, 1)
                self.undone.set((owner, kind, number), "")
            return
        known = {e.id: e for e in episodes}
        left = list(held)
        ids: list[str] = []
        for p, (text, tags) in proposals:
            cites = tuple(dict.fromkeys(p.cites))
            if not cites or not set(cites) <= set(known) or not tokenize(text):
                continue  # a pattern rests on records of its batch
            stated = {
                "kind": kind, "text": text, "cites": list(cites), "tags": tags,
                "outcomes": dict(Counter(e.outcome for c in cites if (e := known[c]).outcome)),
            }  # fmt: skip
            same = next((rec for rec in left if sorted(rec.get("tags") or ()) == sorted(tags)), None)
            if same is not None:
                left.remove(same)
                self._drop(owner, same)
                record = {**same, **stated}
            else:
                record = {"id": new_id(at, owner), "owner": owner, **stated, "created": at, "batch": number, "confirmed": None, "seen": 1}
            record = self._held_again(owner, record)
            self.patterns.set((owner, record["id"]), record)
            self.by_kind.set((owner, kind, record["id"]), sorted(record["tags"]))
            ids.append(record["id"])
        for rec in left:  # the batch as corrected no longer says it
            self._drop(owner, rec)
        if batch is not None:
            self.batches.set((owner, kind, number), {**batch, "patterns": ids})

    def _as_now(self, owner: str, ids: Iterable[str]) -> list[Episode]:
        """The current version of each record counted, once; an erased one left out, an archived
        one as what stays hot of it (kind, outcome, tags, time, lesson: what a pattern counts)."""
        out: list[Episode] = []
        for eid in dict.fromkeys(self._current(owner, c) for c in ids):
            state = self.episodes.header(owner, eid) if eid is not None else None
            if eid is None or state is None:
                continue
            record = self.episodes.record_of(owner, eid)
            if record is None and state.get("status") == "archived":
                record = {**state, "summary": state.get("one_line", ""), "content": ""}
            if record is not None:
                out.append(to_episode(owner, eid, record, state))
        return out

    def _clean(self, owner: str, proposal: PatternProposal, where: str) -> tuple[str, list[str]]:
        """A proposal's text and tags sanitized as a capture's are (tags in both the given and the
        normalised form), the text bounded; SanitizerError if the sanitizer fails."""
        text = proposal.text.strip() if isinstance(proposal.text, str) else ""
        fields = {"text": text, "tags": [str(t) for t in list(proposal.tags)[:8]]}
        clean = self.episodes.clean(owner, fields, {"text": PATTERN_CHARS}, where)
        return clean["text"], normalized_tags(clean["tags"])

    def erase_citing(self, owner: str, episode_ids: set[str]) -> list[str]:
        """Erasure reaches derived patterns: those citing an erased episode are removed, and the
        counting forgets it (``_forget``)."""
        self._flush_counts()
        gone = []
        for _subs, rec in list(self.patterns.items((owner,))):
            if set(rec.get("cites") or ()) & episode_ids:
                self._drop(owner, rec)
                gone.append(str(rec["id"]))
        self._forget(owner, episode_ids, set(gone))
        return gone

    def _forget(self, owner: str, erased: set[str], patterns: set[str]) -> None:
        """In the erasure's transaction: no id of an erased record stays in the counting. A record
        waiting for its batch (``^PATQ``) leaves it, and a batch (``^PATB``) drops it from its ids,
        with the patterns that went with it, its completion time when it completed the batch (the
        time that record was captured), and an error naming it; a batch left with no record goes.
        They kept the ids, times of erased data, after compact()
        (test_an_erasure_leaves_no_id_of_what_it_took_in_the_pattern_counting)."""
        for subs, eid in list(self.waiting.items((owner,))):
            if str(eid) in erased:
                self.waiting.kill(subs)
        nodes = self._counted_ids(owner, erased)
        for eid in {subs[1] for subs in nodes}:  # (an id counted nowhere has no node to kill)
            self.counting.kill((owner, eid))
        for kind, number in _batches(nodes):
            subs = (owner, kind, number)
            batch = self.batches.get(subs) or {}
            ids = [str(i) for i in batch.get("ids") or ()]
            left = [i for i in ids if i not in erased]
            if not left:
                self.batches.kill(subs)
                self.undone.kill(subs)
                continue
            new = {**batch, "ids": left, "patterns": [p for p in batch.get("patterns") or () if p not in patterns]}
            if ids[-1] in erased:  # the record that completed it: the batch was made as it was captured
                new.pop("at", None)
            if isinstance(new.get("error"), str) and any(i in new["error"] for i in erased):
                new["error"] = "the extraction failed (its message named an erased record, so it was not kept)"
            self.batches.set(subs, new)

    def repoint(self, owner: str, kept: Mapping[str, str]) -> None:
        """``Erasure.repoint``, before the cut versions go (erase_versions, retention): a record
        counted as a version cut while later ones stay is counted as the oldest version kept, so
        the counting keeps the record and names no cut id (``_current`` read it as erased)."""
        self._flush_counts()
        for subs, eid in list(self.waiting.items((owner,))):
            if str(eid) in kept:
                self.waiting.set(subs, kept[str(eid)])
        batches = self._counting(owner, kept)
        for cut in kept:
            self.counting.kill((owner, cut))
        for kind, number in batches:
            batch = self.batches.get((owner, kind, number))
            if batch is None:
                continue
            ids = list(dict.fromkeys(kept.get(i, i) for i in map(str, batch.get("ids") or ())))
            for eid in ids:
                self.counting.set((owner, eid, kind, number), "")
            self.batches.set((owner, kind, number), {**batch, "ids": ids})

    def of(self, owner: str, kind: str | None = None) -> list[Pattern]:
        """An owner's patterns (of one kind), the latest found first."""
        if kind is not None:
            ids = [str(subs[2]) for subs, _ in self.by_kind.items((owner, kind))]
            records = [self.patterns[(owner, pid)] for pid in ids]
        else:
            records = [rec for _, rec in self.patterns.items((owner,))]
        return sorted((Pattern.model_validate(r) for r in records), key=lambda p: (p.latest, p.id), reverse=True)

    def batch_status(self, owner: str, kind: str) -> list[dict[str, Any]]:
        """The batches of one owner's kind, oldest first (for tests and audits)."""
        self._flush_counts()
        return [{"batch": int(subs[2]), **v} for subs, v in self.batches.items((owner, kind))]
