"""Synthetic agent memory: memdb's ``ask`` and ``recall`` against BM25, dense and hybrid retrieval, 10k-1M episodes.

    python -m benchmarks.agents --sizes 10000,100000      # writes benchmarks/results/agents.json and .md

and, for memdb and bm25 at a million episodes (estimated at half an hour here from the 100k run;
its own files, which ``python -m benchmarks.report`` plots together with ``agents.json``)::

    python -m benchmarks.agents --sizes 1000000 --dense-max 0 --json benchmarks/results/agents-1m.json \\
        --md benchmarks/results/agents-1m.md

Data. ``benchmarks.agent_data.episodes(n, seed)`` (seeded; about two years ending
``agent_data.END``, 200 Zipf-popular tags, six typed kinds with outcomes plus exchanges). memdb
gets them through its public API, ``db.owner("team").import_episodes(batch)`` in batches of
5,000 (``agent_data.batches``; ``memdb.open(sync=False)``). The baselines get one document per
episode (:func:`document`): ``agent_data.indexed_text(ep)`` (the text memdb's inverted index
holds: text fields and tags), then the kind and outcome memdb keeps as fields, written as
``"kind debug outcome failure"`` (``"kind exchange"`` for an exchange), then the date written
as ``"2026-05-03 May 2026"``: every fact the answer key filters on is in the document, so a
question naming a month or a failure can match by its words. ``bm25``, ``bm25-memdb-tokens``,
``dense`` and ``hybrid`` are those of ``benchmarks.baselines`` (bm25s with its own tokenizer;
the same BM25 over ``memdb.memory.text.tokenize``'s stemmed terms, so that tokenizing is not what is
compared; all-MiniLM-L6-v2 with exact cosine search; the fusion of bm25 and dense).

Questions. Generated from the data with a seeded RNG, ``--queries`` of each type; the tag of a
question is drawn uniformly among the tags that can anchor one (so rare tags are asked about as
often as popular ones), then an anchor episode uniformly among that tag's eligible episodes, so
no answer set is empty. A tag is written as people write it (``agent_data.tag_phrase``:
``project-x`` -> "Project X").

- ``last-week``: "What happened with <Tag> last week?", asked at a random moment of the week after
  the anchor's week; truth: the tag's episodes in the previous calendar week, Monday 00:00 UTC to
  Monday 00:00 UTC (memdb's "last week", ``memdb/memory/timephrase.py``);
- ``past-failures``: "Past failures on <Tag>?", asked at ``END``; truth: the tag's episodes with
  outcome ``failure``, all time;
- ``in-month``: "What did we try on <Tag> in <Month YYYY>?", the anchor's month, asked at ``END``;
  truth: the tag's episodes in that calendar month (UTC);
- ``kind-failures``: "<Kind> failures on <Tag>" (e.g. "Debug failures on Deploy"), asked at
  ``END``; truth: episodes of that kind, outcome ``failure`` and that tag;
- ``word+tag`` (text-ish): "<noun> <Tag>" with a rare noun (the less frequent half of
  ``agent_data``'s nouns, excluding nouns that are also tags and nouns whose memdb stem is shared
  with another word of the data, so that the answer does not depend on stemming); truth: the
  tag's episodes whose indexed text holds that word.

The oracle is a plain scan of the generated episodes (:func:`oracle`), with its own window
arithmetic, independent of memdb.

Systems. ``memdb-ask``: ``ask(question, now=now, limit=k)``, the question text as an agent would
pass it: the fair comparison with the baselines. ``memdb-recall``, shown as "memdb-recall
(oracle filters, upper bound)": the structured ``recall(tags=[t], since=, until=, kind=,
outcome=, text=, now=, limit=k)`` with exactly the filters that define the answer key, so it is
exact by construction; it shows what an agent that already knows the filters gets, not how well
memdb understands a question. ``bm25``, ``bm25-memdb-tokens``, ``dense``, ``hybrid``:
``search(question, k)``. Baselines know no "now": a relative phrase ("last week") is just words
to them.

Measures, per question, averaged per type and over all questions (T = the truth set, top-k = the
first k results a system returns; it may return fewer than k):

- ``precision@10`` = |top-10 ∩ T| / min(10, |T|): the hits over the most a top 10 could hold, so
  a system that returns fewer than 10 results is not paid for returning less (for |T| < 10 it
  equals recall@10);
- ``returned-precision@10`` = |top-10 ∩ T| / |top-10|: the share of what the system handed back
  that is right (0 when it returns nothing). memdb returns only matches, the baselines always
  10, so this one favours memdb; it was reported as P@10 before;
- ``recall@10`` = |top-10 ∩ T| / |T|; it cannot exceed 10 / |T|, so for large T see R-precision;
- ``r-precision`` = |top-R ∩ T| / R with R = min(|T|, 100): recall at k = the size of the truth
  set, capped at 100 (a second, untimed call with limit R);
- ``exact@10``: over questions with |T| <= 10, the share whose top-10 is exactly T.

Latency: wall time of the limit-10 call (``time.perf_counter_ns``; query embedding included
for dense), p50 and p95 over all questions, after 3 untimed warm-up questions. memdb runs with its
default settings, so every answer counts as an access and feeds its relevance score, as in use.
Ingestion: episodes per second of ``import_episodes`` (memdb), of building the bm25s index
(tokenising included) and of embedding the documents (dense, with torch on every core; queries
run on ``--torch-threads`` threads, default 1, so idle OpenMP workers do not steal CPU from the
other systems). Memory: memdb's database directory on disk (allocated and apparent bytes); for
bm25 the bytes of its score arrays and the process RSS growth while indexing; for dense the
embedding matrix bytes and the RSS growth.

Dense stops where it no longer fits: above ``--dense-max`` episodes (default 100,000), or when the
embedding time projected from the rate measured (first on 1,000 documents, then on the largest
size embedded) exceeds ``--dense-budget-minutes`` (default 20). The hybrid runs where dense runs.
Every skip is recorded with its reason, per size.

Reuse. A million episodes take about five minutes to import; ``MEMDB_BENCH_CACHE=/some/dir`` keeps
each size's memdb database there (with the ids in import order and the import time recorded when
it was built) and reuses it on later runs: the key is the data seed, ``agent_data``'s source and
memdb's index layout (``memdb.memory.layout.LAYOUT``), so code that reads the same format shares
one build (before/after comparisons) and a new layout or generator gets a fresh one. Each run
answers on a copy of the kept database, since every answer counts as an access and feeds the
relevance scores: two runs on one cache see the same data. Delete the directory when done.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import agent_data
from benchmarks.baselines import MEMDB_TOKENS
from benchmarks.locomo import _git_commit, _version, machine, percentile, recall_at_k

K = 10
R_CAP = 100
BATCH = 5_000
WARMUP = 3
OWNER = "team"
PROBE_DOCS = 1_000
QUESTION_TYPES: dict[str, str] = {
    "last-week": "What happened with <Tag> last week? (tag, previous calendar week)",
    "past-failures": "Past failures on <Tag>? (tag, outcome failure, all time)",
    "in-month": "What did we try on <Tag> in <Month YYYY>? (tag, calendar month)",
    "kind-failures": "<Kind> failures on <Tag> (kind, outcome failure, tag)",
    "word+tag": "<rare noun> <Tag> (text-ish: tag and the word in the text)",
}
SYSTEMS: tuple[str, ...] = ("memdb-ask", "memdb-recall", "bm25", MEMDB_TOKENS, "dense", "hybrid")
BASELINE_NAMES: tuple[str, ...] = ("bm25", MEMDB_TOKENS, "dense", "hybrid")
MEASURES: tuple[str, ...] = ("precision@10", "recall@10", "r-precision", "returned-precision@10")
LABELS: dict[str, str] = {"memdb-recall": "memdb-recall (oracle filters, upper bound)"}
_WORDS = re.compile(r"[^\W_]+")


# --- questions and the oracle -------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """A question's text, when it is asked, and the filters that define its true answer."""

    qtype: str
    text: str
    now: dt.datetime
    tag: str
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    kind: str | None = None
    outcome: str | None = None
    word: str | None = None


def last_week(now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The calendar week before ``now``'s, Monday 00:00 UTC to Monday 00:00 UTC (half-open)."""
    now = now.astimezone(dt.UTC)
    monday = dt.datetime(now.year, now.month, now.day, tzinfo=dt.UTC) - dt.timedelta(days=now.weekday())
    return monday - dt.timedelta(days=7), monday


def month_of(ts: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The calendar month (UTC) holding ``ts``, half-open."""
    ts = ts.astimezone(dt.UTC)
    start = dt.datetime(ts.year, ts.month, 1, tzinfo=dt.UTC)
    return start, dt.datetime(ts.year + ts.month // 12, ts.month % 12 + 1, 1, tzinfo=dt.UTC)


def words_of(ep: dict[str, Any]) -> set[str]:
    """The lower-case words of the text memdb indexes for ``ep`` (no stemming)."""
    return set(_WORDS.findall(agent_data.indexed_text(ep).lower()))


def matches(ep: dict[str, Any], q: Question) -> bool:
    """Whether ``ep`` belongs to the true answer of ``q``."""
    ts = ep["ts"]
    return (
        q.tag in ep["tags"]
        and (q.since is None or ts >= q.since)
        and (q.until is None or ts < q.until)
        and ts < q.now
        and (q.kind is None or ep["kind"] == q.kind)
        and (q.outcome is None or ep.get("outcome") == q.outcome)
        and (q.word is None or q.word in words_of(ep))
    )


def oracle(eps: Sequence[dict[str, Any]], q: Question) -> frozenset[int]:
    """Positions in ``eps`` of the episodes that answer ``q``: a plain scan."""
    return frozenset(i for i, ep in enumerate(eps) if matches(ep, q))


def rare_words(eps: Sequence[dict[str, Any]]) -> list[str]:
    """Nouns of the less frequent half of ``agent_data.NOUNS`` that occur in ``eps``, are not tags,
    and share their memdb stem with no other word of the data (the answer must not hinge on stemming)."""
    from memdb.memory.text import stem

    vocab: set[str] = set()
    for ep in eps:
        vocab |= words_of(ep)
    by_stem: dict[str, set[str]] = defaultdict(set)
    for w in vocab:
        by_stem[stem(w)].add(w)
    tags = set(agent_data.TAGS)
    tail = agent_data.NOUNS[len(agent_data.NOUNS) // 2 :]
    return sorted(w for w in set(tail) if w in vocab and w not in tags and by_stem[stem(w)] == {w})


def make_questions(eps: Sequence[dict[str, Any]], per_type: int, seed: int = agent_data.SEED) -> list[Question]:
    """``per_type`` distinct questions of each type in :data:`QUESTION_TYPES` (fewer if the data
    cannot anchor that many), seeded; see the module docstring for how they are drawn."""
    end = max(ep["ts"] for ep in eps) + dt.timedelta(microseconds=1)
    end = max(end, agent_data.END)
    by_tag: dict[str, list[int]] = defaultdict(list)
    failures: dict[str, list[int]] = defaultdict(list)
    for i, ep in enumerate(eps):
        for t in ep["tags"]:
            by_tag[t].append(i)
            if ep.get("outcome") == "failure":
                failures[t].append(i)
    out: list[Question] = []

    def draw(qtype: str, make: Callable[[random.Random], Question | None]) -> None:
        rng = random.Random(f"{seed}:{qtype}")
        seen: set[tuple[str, dt.datetime]] = set()
        tries = 0
        while len(seen) < per_type and tries < per_type * 20:
            tries += 1
            q = make(rng)
            if q is not None and (q.text, q.now) not in seen:
                seen.add((q.text, q.now))
                out.append(q)

    tags = sorted(by_tag)
    fail_tags = sorted(failures)

    def week(rng: random.Random) -> Question:
        tag = rng.choice(tags)
        anchor = eps[rng.choice(by_tag[tag])]["ts"]
        start, monday = last_week(anchor + dt.timedelta(days=7))
        now = monday + dt.timedelta(seconds=rng.randrange(7 * 86_400))
        return Question("last-week", f"What happened with {agent_data.tag_phrase(tag)} last week?", now, tag, start, monday)

    def past(rng: random.Random) -> Question:
        tag = rng.choice(fail_tags)
        return Question("past-failures", f"Past failures on {agent_data.tag_phrase(tag)}?", end, tag, outcome="failure")

    def month(rng: random.Random) -> Question:
        tag = rng.choice(tags)
        start, stop = month_of(eps[rng.choice(by_tag[tag])]["ts"])
        text = f"What did we try on {agent_data.tag_phrase(tag)} in {start:%B %Y}?"
        return Question("in-month", text, end, tag, start, stop)

    def kind(rng: random.Random) -> Question:
        tag = rng.choice(fail_tags)
        k = eps[rng.choice(failures[tag])]["kind"]
        text = f"{k.capitalize()} failures on {agent_data.tag_phrase(tag)}"
        return Question("kind-failures", text, end, tag, kind=k, outcome="failure")

    nouns = rare_words(eps)
    with_word: dict[str, list[int]] = {w: [] for w in nouns}
    if nouns:
        for i, ep in enumerate(eps):
            for w in words_of(ep) & with_word.keys():
                with_word[w].append(i)

    def word(rng: random.Random) -> Question | None:
        if not nouns:
            return None
        w = rng.choice(nouns)
        tag = rng.choice(eps[rng.choice(with_word[w])]["tags"])
        return Question("word+tag", f"{w} {agent_data.tag_phrase(tag)}", end, tag, word=w)

    for qtype, make in (("last-week", week), ("past-failures", past), ("in-month", month), ("kind-failures", kind), ("word+tag", word)):
        draw(qtype, make)
    return out


# --- measures -----------------------------------------------------------------------------------


def label(name: str) -> str:
    """How a system is shown in tables and plots (``memdb-recall`` names its oracle filters)."""
    return LABELS.get(name, name)


def precision_at_k(ranked: Sequence[int], truth: Collection[int], k: int) -> float:
    """|top-k ∩ truth| / min(k, |truth|): the hits over the most that k results could hold.

    Returning fewer than k results is neither rewarded nor punished; raises on an empty truth.
    """
    if not truth:
        raise ValueError("precision_at_k: empty truth")
    top = dict.fromkeys(ranked[:k])
    return sum(1 for x in top if x in truth) / min(k, len(truth))


def returned_precision_at_k(ranked: Sequence[int], truth: Collection[int], k: int) -> float:
    """|top-k ∩ truth| / |top-k|: the share of what was returned that is right (0 if nothing was)."""
    top = list(dict.fromkeys(ranked[:k]))
    return sum(1 for x in top if x in truth) / len(top) if top else 0.0


def r_precision(ranked: Sequence[int], truth: Collection[int], cap: int = R_CAP) -> float:
    """Recall at k = |truth| capped at ``cap``: |top-R ∩ truth| / R, R = min(|truth|, cap)."""
    r = min(len(truth), cap)
    if r == 0:
        raise ValueError("r_precision: empty truth")
    return len(set(ranked[:r]) & set(truth)) / r


def exact(ranked: Sequence[int], truth: Collection[int], k: int) -> bool | None:
    """Whether the top-k is exactly ``truth``; None when ``truth`` is larger than k (not counted)."""
    if len(truth) > k:
        return None
    return set(ranked[:k]) == set(truth)


@dataclass
class Tally:
    """Per-question scores and latencies of one system at one size."""

    rows: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    exact: list[tuple[str, bool]] = field(default_factory=list)
    latencies_ms: list[tuple[str, float]] = field(default_factory=list)

    def add(self, qtype: str, top_k: Sequence[int], top_r: Sequence[int], truth: Collection[int], ms: float) -> dict[str, float]:
        scores = {
            "precision@10": precision_at_k(top_k, truth, K),
            "recall@10": recall_at_k([str(x) for x in top_k], [str(x) for x in truth], K),
            "r-precision": r_precision(top_r, truth),
            "returned-precision@10": returned_precision_at_k(top_k, truth, K),
        }
        self.rows.append((qtype, scores))
        if (e := exact(top_k, truth, K)) is not None:
            self.exact.append((qtype, e))
        self.latencies_ms.append((qtype, ms))
        return scores

    def _means(self, qtype: str | None) -> dict[str, Any]:
        rows = [s for t, s in self.rows if qtype is None or t == qtype]
        ex = [e for t, e in self.exact if qtype is None or t == qtype]
        out: dict[str, Any] = {m: round(sum(s[m] for s in rows) / len(rows), 4) if rows else None for m in MEASURES}
        out["exact@10"] = round(sum(ex) / len(ex), 4) if ex else None
        out["exact_eligible"] = len(ex)
        out["questions"] = len(rows)
        return out

    def _latency(self, qtype: str | None) -> dict[str, float]:
        ms = [x for t, x in self.latencies_ms if qtype is None or t == qtype]
        return {"p50": round(percentile(ms, 50), 4), "p95": round(percentile(ms, 95), 4)}

    def summary(self) -> dict[str, Any]:
        types = [t for t in QUESTION_TYPES if any(q == t for q, _ in self.rows)]
        return {
            "overall": self._means(None),
            "by_type": {t: {**self._means(t), "latency_ms": self._latency(t)} for t in types},
            "latency_ms": self._latency(None),
        }


# --- systems ------------------------------------------------------------------------------------


@dataclass
class Answerer:
    """A system under test: answers a question with episode positions, best first."""

    name: str
    search: Callable[[Question, int], list[int]]


def _rss() -> int:
    """Resident set size of this process in bytes (0 where /proc is missing)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _disk(path: Path) -> dict[str, int]:
    files = [f.stat() for f in path.rglob("*") if f.is_file()]
    return {"disk_bytes": sum(s.st_blocks * 512 for s in files), "apparent_bytes": sum(s.st_size for s in files)}


def document(ep: dict[str, Any]) -> str:
    """A baseline's document for ``ep``: the text memdb indexes, its kind and outcome, the date in words."""
    facets = f"kind {ep['kind']}" + (f" outcome {ep['outcome']}" if ep.get("outcome") else "")
    return f"{agent_data.indexed_text(ep)}\n{facets}\n{ep['ts']:%Y-%m-%d %B %Y}"


def recall_call(owner: Any, q: Question, k: int) -> Any:
    """The structured ``recall`` that ``q`` stands for."""
    return owner.recall(tags=[q.tag], since=q.since, until=q.until, kind=q.kind, outcome=q.outcome, text=q.word, now=q.now, limit=k)


class MemdbSide:
    """One memdb database holding the episodes of one size, filled through ``import_episodes``."""

    def __init__(self, path: Path, size: int, fresh: bool = True) -> None:
        import memdb

        if fresh and path.exists():
            shutil.rmtree(path)
        self.path = path
        self.db = memdb.open(path, sync=False, map_size=max(1 << 30, size * 16_384))
        self.owner = self.db.owner(OWNER)
        self.position: dict[str, int] = {}
        self.import_seconds = 0.0
        self.generate_seconds = 0.0
        self.disk: dict[str, int] = {}
        self.interpretations: dict[str, Any] = {}  # question -> what ask understood

    def add(self, chunk: list[dict[str, Any]], first: int) -> None:
        t0 = time.perf_counter()
        ids = self.owner.import_episodes(chunk, source="benchmarks.agents").ids
        self.import_seconds += time.perf_counter() - t0
        self.position.update((eid, first + i) for i, eid in enumerate(ids))

    def ask(self, q: Question, k: int) -> list[int]:
        result = self.owner.ask(q.text, now=q.now, limit=k)
        self.interpretations[q.text] = result.interpretation
        return [self.position[m.episode.id] for m in result.memories]

    def recall(self, q: Question, k: int) -> list[int]:
        return [self.position[m.episode.id] for m in recall_call(self.owner, q, k).memories]

    def close(self) -> None:
        self.db.close()


def _cache_key(seed: int) -> str:
    """What decides a kept database's bytes: the seed, the generator and memdb's index layout."""
    from memdb.memory.layout import LAYOUT

    h = hashlib.sha1(f"{seed}-{LAYOUT}".encode() + Path(agent_data.__file__).read_bytes())
    return f"layout{LAYOUT}-{h.hexdigest()[:10]}"


def _memdb_side(size: int, workdir: Path, seed: int, say: Callable[[str], None]) -> tuple[MemdbSide, list[dict[str, Any]]]:
    """memdb filled with ``size`` episodes, and the episodes: imported now, or a copy of the
    database kept under ``MEMDB_BENCH_CACHE`` (see the docstring) with the episodes generated again."""
    cache = os.environ.get("MEMDB_BENCH_CACHE")
    kept = Path(cache) / f"agents-{size}-{_cache_key(seed)}" if cache else None
    meta = kept / "build.json" if kept is not None else None
    path = workdir / f"memdb-{size}"
    if kept is not None and meta is not None and meta.exists():
        info = json.loads(meta.read_text())
        if path.exists():
            shutil.rmtree(path)
        shutil.copytree(kept / "memdb", path)
        _write_back(path)
        mem = MemdbSide(path, size, fresh=False)
        eps = [ep for chunk in agent_data.batches(size, BATCH, seed) for ep in chunk]
        mem.position = {eid: i for i, eid in enumerate(info["ids"])}
        mem.import_seconds, mem.generate_seconds, mem.disk = info["import_seconds"], info["generate_seconds"], info["disk"]
        say(f"  {size:,}: reusing the memdb database kept in {kept} (imported in {mem.import_seconds:.1f} s when built)")
        return mem, eps
    eps = []
    mem = MemdbSide(path, size)
    t0 = time.perf_counter()
    for chunk in agent_data.batches(size, BATCH, seed):
        mem.add(chunk, len(eps))
        eps.extend(chunk)
    mem.generate_seconds = time.perf_counter() - t0 - mem.import_seconds
    mem.db.flush()
    # the import ran with sync=False: write its gigabytes back now, as _write_back does for a kept
    # copy, so the questions' reads and flushes do not queue behind the kernel's write-back
    mem.db.store.sync()
    mem.disk = _disk(mem.path)
    rate = size / mem.import_seconds
    say(f"  {size:,}: memdb imported in {mem.import_seconds:.1f} s ({rate:,.0f} eps/s), generation {mem.generate_seconds:.1f} s")
    if kept is not None and meta is not None:
        shutil.rmtree(kept, ignore_errors=True)
        kept.mkdir(parents=True)
        mem.db.close()  # copied closed, so the kept copy is whole
        shutil.copytree(path, kept / "memdb")
        _write_back(kept / "memdb")  # its write-back would land in the questions' flushes too
        ids = sorted(mem.position, key=mem.position.__getitem__)
        info = {"ids": ids, "import_seconds": mem.import_seconds, "generate_seconds": mem.generate_seconds, "disk": mem.disk}
        meta.write_text(json.dumps(info))
        mem = _reopened(mem)
    return mem, eps


def _write_back(directory: Path) -> None:
    """fsync every file of a fresh copy: otherwise the kernel writes its gigabytes back while the
    questions run, and the first access flush's fsync waits for all of them (two runs of the same
    code measured word+tag p95 68 and 148 ms that way)."""
    for f in directory.iterdir():
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _reopened(mem: MemdbSide) -> MemdbSide:
    """``mem`` opened again on its path (after it was closed to be copied), keeping what it measured."""
    again = MemdbSide(mem.path, len(mem.position), fresh=False)
    again.position, again.import_seconds = mem.position, mem.import_seconds
    again.generate_seconds, again.disk = mem.generate_seconds, mem.disk
    return again


def _by_text(retriever: Any) -> Callable[[Question, int], list[int]]:
    """A baseline answers with the question's text alone."""

    def search(q: Question, k: int) -> list[int]:
        return list(retriever.search(q.text, k))

    return search


def _set_torch_threads(n: int | None) -> None:
    if n:
        import torch

        torch.set_num_threads(n)


@dataclass
class DensePlan:
    """Whether dense runs at a size: the measured embedding rate and the limits that stop it."""

    max_size: int
    budget_minutes: float
    rate: float | None = None  # documents per second
    measured_on: int = 0
    probe: dict[str, Any] = field(default_factory=dict)

    def skip_reason(self, size: int) -> str | None:
        if size > self.max_size:
            return f"above --dense-max {self.max_size:,}"
        if self.rate is None or size <= self.measured_on:
            return None
        minutes = size / self.rate / 60
        if minutes > self.budget_minutes:
            return (
                f"embedding {size:,} documents would take about {minutes:.0f} min at {self.rate:.0f} docs/s "
                f"(measured on {self.measured_on:,}), over the {self.budget_minutes:g} min budget (--dense-budget-minutes)"
            )
        return None

    def measured(self, docs: int, seconds: float) -> None:
        if docs >= self.measured_on and seconds > 0:
            self.rate, self.measured_on = docs / seconds, docs


# --- one size -----------------------------------------------------------------------------------


def run_size(
    size: int,
    workdir: Path,
    per_type: int,
    seed: int,
    dense: DensePlan,
    torch_threads: int,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build every system on ``size`` episodes, ask every question of each; the figures."""
    from benchmarks.baselines import load_baselines

    out: dict[str, Any] = {"episodes": size, "skipped": {}, "ingest": {}, "memory": {}}
    mem, eps = _memdb_side(size, workdir, seed, say)
    out["generate_seconds"] = round(mem.generate_seconds, 2)
    out["ingest"]["memdb"] = {"seconds": round(mem.import_seconds, 2), "eps_per_s": round(size / mem.import_seconds, 1)}
    out["memory"]["memdb"] = mem.disk

    warnings: list[str] = []
    want = ["bm25", MEMDB_TOKENS]
    reason = dense.skip_reason(size)
    if reason is None:
        want.append("dense")
    built = {r.name: r for r in load_baselines(want, warn=warnings.append, torch_threads=None)}
    for w in warnings:
        say(w)
        for name in want:
            if w.startswith(f"WARNING: baseline {name} "):
                out["skipped"][name] = w.removeprefix("WARNING: ")
    docs = [document(ep) for ep in eps]
    out["text_bytes"] = sum(len(agent_data.indexed_text(ep).encode()) for ep in eps)
    answerers = [Answerer("memdb-ask", mem.ask), Answerer("memdb-recall", mem.recall)]
    for name in ("bm25", MEMDB_TOKENS):
        if name not in built:
            continue
        bm25 = built[name]
        rss, t0 = _rss(), time.perf_counter()
        bm25.index(docs)
        took = time.perf_counter() - t0
        arrays = getattr(bm25._retriever, "scores", {})  # bm25s keeps its sparse score matrix here
        out["ingest"][name] = {"seconds": round(took, 2), "eps_per_s": round(size / took, 1)}
        out["memory"][name] = {
            "index_bytes": sum(int(getattr(a, "nbytes", 0)) for a in arrays.values()),
            "rss_growth_bytes": max(_rss() - rss, 0),
        }
        say(f"  {size:,}: {name} indexed in {took:.1f} s")
    if "dense" in built:
        model = built["dense"]
        _set_torch_threads(os.cpu_count())
        if dense.rate is None and size > PROBE_DOCS:
            t0 = time.perf_counter()
            model.embed(docs[:PROBE_DOCS])
            took = time.perf_counter() - t0
            dense.measured(PROBE_DOCS, took)
            dense.probe = {"docs": PROBE_DOCS, "seconds": round(took, 2), "docs_per_s": round(PROBE_DOCS / took, 1)}
            say(f"  dense probe: {PROBE_DOCS:,} documents in {took:.1f} s")
            reason = dense.skip_reason(size)
        if reason is None:
            rss, t0 = _rss(), time.perf_counter()
            model.index(docs)
            took = time.perf_counter() - t0
            dense.measured(size, took)
            out["ingest"]["dense"] = {"seconds": round(took, 2), "eps_per_s": round(size / took, 1)}
            out["memory"]["dense"] = {"matrix_bytes": int(model._matrix.nbytes), "rss_growth_bytes": max(_rss() - rss, 0)}
            say(f"  {size:,}: dense embedded in {took:.1f} s ({size / took:.0f} docs/s)")
        else:
            del built["dense"]
        _set_torch_threads(torch_threads)
    if reason is not None:
        out["skipped"]["dense"] = reason
    if "bm25" in built and "dense" in built:
        from benchmarks.baselines import HybridRetriever

        hybrid = HybridRetriever(built["bm25"], built["dense"])
        hybrid.index(docs)  # both parts already hold these documents: nothing is rebuilt
        built["hybrid"] = hybrid
    else:
        out["skipped"]["hybrid"] = "needs bm25 and dense, and " + ("dense" if "bm25" in built else "bm25") + " did not run"
    for name in BASELINE_NAMES:
        if name in built:
            answerers.append(Answerer(name, _by_text(built[name])))
    out["systems_run"] = [a.name for a in answerers]

    questions = make_questions(eps, per_type, seed)
    truths = [oracle(eps, q) for q in questions]
    sizes_by_type: dict[str, list[int]] = defaultdict(list)
    for q, t in zip(questions, truths, strict=True):
        sizes_by_type[q.qtype].append(len(t))
    out["questions"] = {
        t: {"count": len(v), "truth_median": sorted(v)[len(v) // 2], "truth_max": max(v), "truth_at_most_10": sum(1 for x in v if x <= K)}
        for t, v in sizes_by_type.items()
    }
    say(f"  {size:,}: {len(questions)} questions; systems {', '.join(a.name for a in answerers)}")
    tallies = {a.name: Tally() for a in answerers}
    details: list[dict[str, Any]] = []
    for a in answerers:
        for q in questions[:WARMUP]:
            a.search(q, K)
    for q, truth in zip(questions, truths, strict=True):
        row: dict[str, Any] = {"type": q.qtype, "question": q.text, "now": q.now.isoformat(), "truth": len(truth), "systems": {}}
        r = min(len(truth), R_CAP)
        for a in answerers:
            t0 = time.perf_counter_ns()
            top_k = a.search(q, K)
            ms = (time.perf_counter_ns() - t0) / 1e6
            top_r = top_k if r <= K else a.search(q, r)
            scores = tallies[a.name].add(q.qtype, top_k, top_r, truth, ms)
            row["systems"][a.name] = {**{m: round(v, 4) for m, v in scores.items()}, "returned": len(top_k), "ms": round(ms, 3)}
        row["interpretation"] = str(mem.interpretations.get(q.text, ""))
        details.append(row)
    out["systems"] = {name: t.summary() for name, t in tallies.items()}
    out["details"] = details
    out["versions"] = {"memdb": _version("memdb-agent"), "lmdb": _version("lmdb")}
    for r in built.values():
        out["versions"].update(r.versions())
    mem.close()
    shutil.rmtree(mem.path, ignore_errors=True)
    return out


# --- the report ---------------------------------------------------------------------------------


def _f(x: Any, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _bytes(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def _memory_cell(name: str, memory: dict[str, Any]) -> str:
    if name.startswith("memdb"):
        m = memory.get("memdb")
        return f"{_bytes(m['disk_bytes'])} on disk" if m else "-"
    if name in ("bm25", MEMDB_TOKENS) and name in memory:
        m = memory[name]
        return f"{_bytes(m['index_bytes'])} index, RSS +{_bytes(m['rss_growth_bytes'])}"
    if name == "dense" and "dense" in memory:
        m = memory["dense"]
        return f"{_bytes(m['matrix_bytes'])} matrix, RSS +{_bytes(m['rss_growth_bytes'])}"
    if name == "hybrid":
        return "bm25 + dense"
    return "-"


def _ingest_cell(name: str, ingest: dict[str, Any]) -> str:
    key = "memdb" if name.startswith("memdb") else name
    if key in ingest:
        return f"{ingest[key]['eps_per_s']:,.0f}"
    if name == "hybrid" and "bm25" in ingest and "dense" in ingest:
        return f"{1 / (1 / ingest['bm25']['eps_per_s'] + 1 / ingest['dense']['eps_per_s']):,.0f}"
    return "-"


def markdown(rep: dict[str, Any]) -> str:
    """The results as Markdown tables, the command on top."""
    m = rep["machine"]
    lines = [
        "# Synthetic agent memory: memdb ask/recall vs BM25, dense, hybrid",
        "",
        "```",
        rep["command"],
        "```",
        "",
        f"Commit `{rep['commit']}`; {m['cpu']} ({m['cores']} cores), Python {m['python']}; "
        + ", ".join(f"{k} {v}" for k, v in rep["versions"].items())
        + f". {rep['seconds']:,.0f} s in all.",
        "",
        f"{rep['questions_per_type']} questions per type, seed {rep['seed']}. P@10 = hits in the top 10 / min(10, |truth|) "
        "(returning fewer than 10 is not rewarded); right/returned = hits / results returned (memdb returns only "
        "matches, baselines always 10: it favours memdb, and was reported as P@10 before); "
        "R@10 = share of the truth in the top 10 (at most 10/|truth|); R-prec = recall at k = |truth| capped at "
        f"{R_CAP}; exact = share of questions with |truth| <= 10 whose top 10 is exactly the truth (n = how many such "
        "questions). Latency of one limit-10 call. `÷ best`: a memdb row's P@10 over the best baseline's P@10, and its "
        "p50 over the fastest baseline's p50. memdb-recall is given exactly the answer key's filters (oracle filters): "
        "an upper bound, not a system answering the question; memdb-ask is. Baseline documents hold the indexed text, "
        "tags, kind, outcome and date; bm25 uses bm25s's tokenizer, bm25-memdb-tokens memdb's own (stemmed). "
        "A plain Python script (not pytest-benchmark); see the docstring of `benchmarks/agents.py`.",
    ]
    if rep.get("dense", {}).get("probe"):
        p = rep["dense"]["probe"]
        lines += ["", f"Dense probe: {p['docs']:,} documents embedded in {p['seconds']} s ({p['docs_per_s']} docs/s, every core)."]
    for size, s in rep["sizes"].items():
        lines += ["", f"## {int(size):,} episodes", ""]
        lines += [f"Ran: {', '.join(s['systems_run'])}. Indexed text: {_bytes(s['text_bytes'])}."]
        for name, why in s["skipped"].items():
            lines.append(f"Skipped {name}: {why}.")
        lines += [
            "",
            "| system | P@10 | P@10 ÷ best | right/returned | R@10 | R-prec | exact (n) | p50 ms | p50 ÷ fastest | p95 ms "
            "| ingest eps/s | memory |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        best = best_baseline(s)
        for name, r in s["systems"].items():
            o = r["overall"]
            memdb = name.startswith("memdb")
            p_ratio = _ratio(o["precision@10"], best.get("precision@10")) if memdb else ""
            l_ratio = _ratio(r["latency_ms"]["p50"], best.get("p50")) if memdb else ""
            lines.append(
                f"| {label(name)} | {_f(o['precision@10'])} | {p_ratio} | {_f(o.get('returned-precision@10'))} | "
                f"{_f(o['recall@10'])} | {_f(o['r-precision'])} | {_f(o['exact@10'])} ({o['exact_eligible']}) | "
                f"{r['latency_ms']['p50']:.2f} | {l_ratio} | {r['latency_ms']['p95']:.2f} | "
                f"{_ingest_cell(name, s['ingest'])} | {_memory_cell(name, s['memory'])} |"
            )
        types = [t for t in QUESTION_TYPES if t in s["questions"]]
        lines += [
            "",
            "P@10 / R@10 / R-prec by question type (|truth| median, max):",
            "",
            "| system | "
            + " | ".join(f"{t} ({s['questions'][t]['truth_median']}, {s['questions'][t]['truth_max']})" for t in types)
            + " |",
            "|---|" + "---|" * len(types),
        ]
        for name, r in s["systems"].items():
            cells = []
            for t in types:
                b = r["by_type"].get(t)
                cells.append(f"{_f(b['precision@10'], 2)} / {_f(b['recall@10'], 2)} / {_f(b['r-precision'], 2)}" if b else "-")
            lines.append(f"| {label(name)} | " + " | ".join(cells) + " |")
        lines += ["", "Latency p50 / p95 ms by question type:", "", "| system | " + " | ".join(types) + " |", "|---|" + "---|" * len(types)]
        for name, r in s["systems"].items():
            cells = [f"{r['by_type'][t]['latency_ms']['p50']:.2f} / {r['by_type'][t]['latency_ms']['p95']:.2f}" for t in types]
            lines.append(f"| {label(name)} | " + " | ".join(cells) + " |")
        lines += ["", "What `ask` understood (first two questions of each type; P@10 and results returned, memdb-ask vs bm25):", ""]
        shown: Counter[str] = Counter()
        for d in s["details"]:
            if shown[d["type"]] >= 2:
                continue
            shown[d["type"]] += 1
            line = f"- `{d['question']}` (now {d['now'][:10]}, |truth| {d['truth']}): {d['interpretation']}"
            for name in ("memdb-ask", "bm25"):
                if name in d["systems"]:
                    a = d["systems"][name]
                    line += f"; {name} {a['precision@10']:.2f} ({a['returned']})"
            lines.append(line)
    return "\n".join(lines) + "\n"


def rescore_precision(size_report: dict[str, Any]) -> bool:
    """Bring one size of a report written before precision@10 became hits / min(10, |truth|) up to date.

    Such a report's ``precision@10`` was hits / returned; it becomes ``returned-precision@10`` and
    ``precision@10`` is recomputed, overall and per type, from the per-question details (hits =
    that share times the results returned, an integer). Returns whether anything changed.
    """
    systems = size_report["systems"]
    if all("returned-precision@10" in r["overall"] for r in systems.values()):
        return False
    new: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for d in size_report["details"]:
        for name, a in d["systems"].items():
            hits = round(a["precision@10"] * a["returned"])
            new[name].append((d["type"], hits / min(K, d["truth"])))
    for name, r in systems.items():
        if "returned-precision@10" in r["overall"]:
            continue
        for part, qtype in [(r["overall"], None), *((b, t) for t, b in r["by_type"].items())]:
            vals = [v for t, v in new[name] if qtype is None or t == qtype]
            part["returned-precision@10"] = part["precision@10"]
            part["precision@10"] = round(sum(vals) / len(vals), 4) if vals else None
    size_report["rescored"] = "precision@10 recomputed from the details (hits / min(10, |truth|))"
    return True


def best_baseline(size_report: dict[str, Any]) -> dict[str, float]:
    """The best baseline figures at one size: the highest P@10 and the lowest p50 of any non-memdb system."""
    base = [r for name, r in size_report["systems"].items() if not name.startswith("memdb")]
    if not base:
        return {}
    return {
        "precision@10": max(r["overall"]["precision@10"] for r in base),
        "p50": min(r["latency_ms"]["p50"] for r in base),
    }


def _ratio(value: float | None, against: float | None) -> str:
    return f"{value / against:.2f}x" if value is not None and against else "-"


def print_table(rep: dict[str, Any]) -> None:
    print(f"{'size':>9} {'system':<42} {'P@10':>6} {'R@10':>6} {'R-prec':>7} {'exact':>6} {'p50 ms':>9} {'p95 ms':>9}")
    for size, s in rep["sizes"].items():
        for name, r in s["systems"].items():
            o = r["overall"]
            print(
                f"{int(size):>9,} {label(name):<42} {_f(o['precision@10']):>6} {_f(o['recall@10']):>6} {_f(o['r-precision']):>7} "
                f"{_f(o['exact@10']):>6} {r['latency_ms']['p50']:>9.3f} {r['latency_ms']['p95']:>9.3f}"
            )
        for name, why in s["skipped"].items():
            print(f"{int(size):>9,} {name:<42} skipped: {why}")


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes {text!r}: comma-separated episode counts, e.g. 10000,100000") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes {text!r}: at least one positive count")
    return sizes


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns the JSON report (also written to ``--json``)."""
    here = Path(__file__).resolve().parent / "results"
    p = argparse.ArgumentParser(prog="python -m benchmarks.agents", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--sizes", type=_sizes, default=[10_000, 100_000, 1_000_000], help="episode counts (default 10000,100000,1000000)")
    p.add_argument("--dense-max", type=int, default=100_000, help="largest size the dense baseline runs at (default 100000; 0: never)")
    p.add_argument("--dense-budget-minutes", type=float, default=20.0, help="skip dense where embedding would take longer (default 20)")
    p.add_argument("--queries", type=int, default=50, help="questions per type (default 50)")
    p.add_argument("--seed", type=int, default=agent_data.SEED, help=f"data and question seed (default {agent_data.SEED})")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads while answering (default 1; embedding uses every core)")
    p.add_argument("--json", type=Path, default=here / "agents.json", help="write the report here (default benchmarks/results/agents.json)")
    p.add_argument("--md", type=Path, default=here / "agents.md", help="write the tables here (default benchmarks/results/agents.md)")
    p.add_argument("--workdir", type=Path, help="where the memdb databases are built (default: a temporary directory, removed after)")
    args = p.parse_args(list(argv) if argv is not None else None)

    started = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memdb-agents-"))
    workdir.mkdir(parents=True, exist_ok=True)
    dense = DensePlan(args.dense_max, args.dense_budget_minutes)

    def say(message: str) -> None:
        print(message, flush=True)

    sizes: dict[str, Any] = {}
    try:
        for size in args.sizes:
            say(f"{size:,} episodes")
            sizes[str(size)] = run_size(size, workdir, args.queries, args.seed, dense, args.torch_threads, say)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    versions: dict[str, str] = {"python": platform.python_version()}
    for s in sizes.values():
        versions.update(s.pop("versions"))
    command = "python -m benchmarks.agents " + " ".join(argv if argv is not None else sys.argv[1:])
    rep = {
        "benchmark": "synthetic agent episodes: precision/recall@10 against an oracle",
        "command": command.strip(),
        "commit": _git_commit(),
        "machine": machine(),
        "versions": versions,
        "seconds": round(time.perf_counter() - started, 1),
        "k": K,
        "r_cap": R_CAP,
        "seed": args.seed,
        "questions_per_type": args.queries,
        "question_types": QUESTION_TYPES,
        "dense": {"max": args.dense_max, "budget_minutes": args.dense_budget_minutes, "probe": dense.probe},
        "sizes": sizes,
    }
    print_table(rep)
    for path, text in ((args.json, json.dumps(rep, indent=2) + "\n"), (args.md, markdown(rep))):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return rep


if __name__ == "__main__":
    main()
