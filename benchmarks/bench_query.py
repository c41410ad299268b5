"""Query latency: memdb's planner (``recall`` / ``ask``) against SQLite holding the same data, same run.

Data: ``benchmarks.agent_data`` episodes (seeded; 200 Zipf-popular tags, six typed kinds with
outcomes plus exchanges, sessions, about two years of timestamps) for the owner ``team`` at
each size of ``MEMDB_BENCH_SIZES`` (default ``10000,100000,1000000``), plus 500 episodes of a
second owner ``solo`` with the same tags and span, so that every query must scope by owner.
memdb is filled through ``import_episodes`` in batches of 5,000 (``memdb.open(sync=False)``);
SQLite (stdlib ``sqlite3``, one file, WAL, ``synchronous=OFF``) gets the same episodes in
transactions of 5,000, with its indexes already in place, then ``ANALYZE``. Build times are
measured and printed. The databases live in a temporary directory for the session (set
``MEMDB_BENCH_CACHE=/some/dir`` to keep and reuse them across runs: a reused memdb database
carries the access counts of earlier runs, and its build time is the one recorded then; the
cache key hashes memdb's sources, so a changed memdb gets fresh databases, unless
``MEMDB_BENCH_CODE_KEY`` names an earlier key to reuse, which the header then reports).

SQLite schema: ``episodes(id INTEGER PRIMARY KEY, eid, owner, ts, kind, outcome, session, relevance,
tags, summary, content, lesson, what_we_tried, what_happened)`` with indexes on ``(owner, ts)`` and
``(owner, kind, outcome, ts)``; ``episode_tags(owner, tag, ts, id)`` clustered on
``(owner, tag, ts, id)`` (WITHOUT ROWID); a contentless FTS5 table over the text memdb indexes
holding memdb's own terms of each episode (``memdb.memory.text.tokenize`` of the text fields and tags,
``agent_data.indexed_text``: folded, stemmed, stopwords dropped), queried with memdb's terms of
the query joined by OR, so both sides match exactly the same episodes and BM25 sees the same
term frequencies and lengths. ``relevance`` is copied from memdb's headers after each import
batch (not timed).

Shapes (``DRAWS`` = 200 seeded parameter draws each, plus 20 warm-up draws from another seed):

- ``time+tag``: ``recall(since, until, tags=[t])``, a 7-day window, t among the 20 most used tags;
- ``tag+outcome``: ``recall(tags=[t], outcome="failure")``, t among the 50 most used tags;
- ``text``: ``recall(text="<noun> <verb|adjective>")``, words of mid frequency (any term matches);
- ``mixed``: ``recall(since, until, tags=[t], text=...)``, a 30-day window, t among the top 20;
- ``ask``: ``ask("What happened with Project X last week?", now=...)``;
- ``time+tag/scaled``: time+tag with the window shrunk to ``7 days * 10,000 / size``, so the
  expected number of matches is the same at every size (cost follows matches, not the database).

Sides: ``memdb`` (the public API; reads count as accesses, buffered and flushed in write
transactions every 256 accesses, as in real use); ``sqlite``: the same answer, i.e. the same
filters, memdb's ranking formula (``0.6*rel/10 + 0.4*recency``, with text
``0.9*bm25/max_bm25 + 0.05*rel/10 + 0.05*recency``, ``bm25()`` of FTS5), the total number of
matches (``COUNT(*) OVER ()``) and the 5 full rows; ``sqlite-top5``: what one would write without
the total or memdb's ranking, ``ORDER BY ts DESC LIMIT 5`` (``ORDER BY bm25() LIMIT 5`` for text),
which lets SQLite stop early. ``ask`` on SQLite parses the question with memdb's own pure
functions (time phrase, known tags through a skip-scan of the tag index) in Python, as memdb does.

Latency is ``time.perf_counter_ns`` around each call; p50/p95 are over the draws. ``matches``
is the median number of matches per call (the ``total`` memdb reports); ``empty`` the share of
draws matching nothing (memdb then also looks outside the window to say so, which costs more
than a small answer). memdb and SQLite must agree on the total of every draw (asserted).

Regenerate (pytest-benchmark's table counts the 200 draws of a shape as one round; the tables
that matter are printed after it)::

    cd /work/main && MEMDB_BENCH_SIZES=10000,100000,1000000 /tmp/v/bin/python -m pytest \\
        benchmarks/bench_query.py --benchmark-only -p no:cacheprovider -q -s \\
        --benchmark-columns=median,rounds

or without pytest (same measurements, the tables only; ``--profile mixed`` adds a cProfile of
memdb on that shape at the largest size)::

    cd /work/main && MEMDB_BENCH_SIZES=10000,100000,1000000 /tmp/v/bin/python -m benchmarks.bench_query
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as dt
import hashlib
import io
import json
import math
import os
import pstats
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import memdb
from benchmarks import agent_data
from benchmarks.bench_globals import _commit, _machine
from memdb.memory.text import normalize_tag, tokenize
from memdb.memory.timephrase import find_time_phrase
from memdb.query.question import QUESTION_WORDS

SIZES = [int(s) for s in os.environ.get("MEMDB_BENCH_SIZES", "10000,100000,1000000").split(",") if s.strip()]
DRAWS = int(os.environ.get("MEMDB_BENCH_DRAWS", "200"))
WARMUP = 20
BATCH = 5_000
OWNER, OTHER, OTHER_EPISODES = "team", "solo", 500
SEED = agent_data.SEED
DATA_VERSION = 3  # bump when the layout here changes; memdb and agent_data sources are hashed in too
QUESTION = "What happened with Project X last week?"
SHAPES = ("time+tag", "tag+outcome", "text", "mixed", "ask", "time+tag/scaled")
EXACT = frozenset(SHAPES)  # totals must agree exactly (FTS5 indexes memdb's own terms, so text agrees too)
SIDES = ("memdb", "sqlite", "sqlite-top5")
WEEK_US = 7 * 86_400 * 1_000_000


def _code_key() -> str:
    """A hash of what decides the databases' bytes: memdb's sources, the generator, DATA_VERSION."""
    h = hashlib.sha1(f"v{DATA_VERSION}".encode())
    package = Path(memdb.__file__).parent
    for path in [*sorted(package.rglob("*.py")), Path(agent_data.__file__)]:  # every layer: the index layouts live below memdb/
        h.update(path.name.encode() + path.read_bytes())
    return f"v{DATA_VERSION}-{h.hexdigest()[:10]}"


THIS_CODE_KEY = _code_key()
CODE_KEY = os.environ.get("MEMDB_BENCH_CODE_KEY") or THIS_CODE_KEY
# MEMDB_BENCH_CODE_KEY reuses cached databases built by other sources (a 1M build takes ~10 minutes):
# honest only while the layout and the bytes a capture writes are the same (tests/memory/
# test_capture_bytes.py pins them); the header names both keys
BUILT_BY_OTHER_CODE = CODE_KEY != THIS_CODE_KEY
COMMIT = _commit()  # at import: the code that runs is the code that was there when the run started

# --- the two databases ---------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY, eid TEXT NOT NULL, owner TEXT NOT NULL, ts INTEGER NOT NULL, kind TEXT NOT NULL,
    outcome TEXT, session TEXT, relevance REAL NOT NULL, tags TEXT NOT NULL, summary TEXT NOT NULL,
    content TEXT NOT NULL, lesson TEXT, what_we_tried TEXT, what_happened TEXT
);
CREATE INDEX IF NOT EXISTS episodes_time ON episodes (owner, ts);
CREATE INDEX IF NOT EXISTS episodes_kind ON episodes (owner, kind, outcome, ts);
CREATE TABLE IF NOT EXISTS episode_tags (
    owner TEXT NOT NULL, tag TEXT NOT NULL, ts INTEGER NOT NULL, id INTEGER NOT NULL,
    PRIMARY KEY (owner, tag, ts, id)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS episodes_fts USING fts5(body, content='', tokenize='unicode61');
"""


def ts_us(ts: dt.datetime) -> int:
    d = ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def _map_size(size: int) -> int:
    return max(1 << 30, size * 16_384)  # generous: no map growth mid-build


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def open_sqlite(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")  # like memdb's sync=False: no fsync at commit
    con.execute("PRAGMA cache_size=-262144")  # 256 MiB page cache
    con.execute("PRAGMA mmap_size=17179869184")  # reads through the OS page cache, as LMDB does
    return con


@dataclass
class Dataset:
    """Both databases holding ``size`` episodes of ``team`` (and 500 of ``solo``), and the draws."""

    size: int
    root: Path
    db: memdb.Database
    sql: sqlite3.Connection
    info: dict[str, Any]
    draws: dict[str, list[Draw]] = field(default_factory=dict)
    warmups: dict[str, list[Draw]] = field(default_factory=dict)

    @property
    def team(self) -> Any:
        return self.db.owner(OWNER)

    def close(self) -> None:
        self.db.close()
        self.sql.close()


def build(root: Path, size: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Fill both databases in ``root``; returns build times, sizes and tag counts."""
    db = memdb.open(root / "memdb", sync=False, map_size=_map_size(size))
    con = open_sqlite(root / "sqlite.db")
    con.executescript(SCHEMA)
    seconds = {"memdb": 0.0, "sqlite": 0.0, "generate": 0.0}
    tag_counts: Counter[str] = Counter()
    states = db.episodes.layout.states
    try:
        for owner, n, seed in ((OWNER, size, SEED), (OTHER, OTHER_EPISODES, SEED + 1)):
            handle = db.owner(owner)
            chunks = agent_data.batches(n, BATCH, seed)
            done = 0
            while True:
                t0 = time.perf_counter()
                chunk = next(chunks, None)
                t1 = time.perf_counter()
                seconds["generate"] += t1 - t0
                if chunk is None:
                    break
                ids = handle.import_episodes(chunk, source="bench").ids
                t2 = time.perf_counter()
                seconds["memdb"] += t2 - t1
                with db.snapshot():  # relevance as memdb computed it, and the text as it stored it (not timed)
                    relevance = [float(states.get((owner, eid))["relevance"]) for eid in ids]
                    stored = [db.episodes.layout.record_of(owner, eid) for eid in ids]
                t3 = time.perf_counter()
                _insert_sqlite(con, owner, chunk, ids, relevance, stored)
                seconds["sqlite"] += time.perf_counter() - t3
                if owner == OWNER:
                    tag_counts.update(t for ep in chunk for t in ep["tags"])
                done += len(chunk)
                if done % 100_000 == 0 or done == n:
                    took = ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
                    log(f"  {owner} {done:,}/{n:,}: {took}")
        t0 = time.perf_counter()
        con.execute("ANALYZE")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        seconds["sqlite"] += time.perf_counter() - t0
    finally:
        db.close()
        con.close()
    return {
        "size": size,
        "seed": SEED,
        "version": DATA_VERSION,
        "seconds": seconds,
        "bytes": {"memdb": _du(root / "memdb"), "sqlite": _du(root) - _du(root / "memdb")},
        "tag_counts": dict(tag_counts.most_common()),
    }


def _insert_sqlite(
    con: sqlite3.Connection, owner: str, chunk: list[dict[str, Any]], ids: list[str], relevance: list[float], stored: list[dict[str, Any]]
) -> None:
    """One batch into SQLite; its full-text index gets the text memdb stored (the sanitizer
    replaces what looks like a secret, so both sides index the same words)."""
    con.execute("BEGIN")
    first = con.execute("SELECT coalesce(max(id), 0) + 1 FROM episodes").fetchone()[0]
    rows, texts = [], []
    tags: list[tuple[str, str, int, int]] = []
    for i, (ep, eid, rel, rec) in enumerate(zip(chunk, ids, relevance, stored, strict=True)):
        rowid, t = first + i, ts_us(ep["ts"])
        rows.append((
            rowid, eid, owner, t, ep["kind"], ep.get("outcome"), ep.get("session"), rel, json.dumps(ep["tags"]),
            ep["summary"], ep.get("content", ""), ep.get("lesson"), ep.get("what_we_tried"), ep.get("what_happened"),
        ))  # fmt: skip
        tags.extend((owner, tag, t, rowid) for tag in ep["tags"])
        texts.append((rowid, " ".join(tokenize(agent_data.indexed_text(rec)))))
    con.executemany("INSERT INTO episodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.executemany("INSERT INTO episode_tags VALUES (?,?,?,?)", tags)
    con.executemany("INSERT INTO episodes_fts (rowid, body) VALUES (?,?)", texts)
    con.execute("COMMIT")


def load(size: int, root: Path | None = None, log: Callable[[str], None] = print) -> Dataset:
    """Open (building it first unless cached) the dataset of ``size`` episodes under ``root``."""
    base = Path(root) if root is not None else Path(os.environ["MEMDB_BENCH_CACHE"])
    where = base / f"query-{size}-{SEED}-{CODE_KEY}"
    meta = where / "build.json"
    if meta.exists():
        info = json.loads(meta.read_text())
        info["cached"] = True
        log(f"reusing the {size:,}-episode databases in {where}")
    elif BUILT_BY_OTHER_CODE:  # building them now would file this code's bytes under the other key
        raise SystemExit(f"MEMDB_BENCH_CODE_KEY={CODE_KEY}: no databases of {size:,} episodes built by it in {base} (unset it to build)")
    else:
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        log(f"building {size:,} episodes (+{OTHER_EPISODES} of {OTHER!r}) in {where} ...")
        info = build(where, size, log)
        meta.write_text(json.dumps(info))
        info["cached"] = False
    ds = Dataset(size, where, memdb.open(where / "memdb", sync=False, map_size=_map_size(size)), open_sqlite(where / "sqlite.db"), info)
    ds.draws = {s: make_draws(s, ds, SEED + 101 * i, DRAWS) for i, s in enumerate(SHAPES)}
    ds.warmups = {s: make_draws(s, ds, SEED + 7 + 101 * i, WARMUP) for i, s in enumerate(SHAPES)}
    return ds


# --- parameter draws ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Draw:
    now: dt.datetime
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    tags: tuple[str, ...] = ()
    text: str | None = None
    outcome: str | None = None
    question: str | None = None


def _weighted(rng: random.Random, counts: dict[str, int], top: int) -> str:
    items = list(counts.items())[:top]
    return rng.choices([t for t, _ in items], weights=[c for _, c in items])[0]


def _words(rng: random.Random) -> str:
    noun = rng.choice(agent_data.NOUNS[20:200])
    other = rng.choice(agent_data.VERBS[20:120] if rng.random() < 0.6 else agent_data.ADJECTIVES[15:80])
    return f"{noun} {other}"


def make_draws(shape: str, ds: Dataset, seed: int, n: int) -> list[Draw]:
    rng = random.Random(seed)
    counts = ds.info["tag_counts"]
    first, last = agent_data.START, agent_data.END
    span = (last - first).total_seconds()
    out = []
    for _ in range(n):
        if shape in ("time+tag", "time+tag/scaled"):
            days = 7.0 if shape == "time+tag" else 7.0 * 10_000 / ds.size
            width = dt.timedelta(days=days)
            until = first + width + dt.timedelta(seconds=rng.random() * (span - width.total_seconds()))
            out.append(Draw(now=until, since=until - width, until=until, tags=(_weighted(rng, counts, 20),)))
        elif shape == "tag+outcome":
            out.append(Draw(now=last, tags=(_weighted(rng, counts, 50),), outcome="failure"))
        elif shape == "text":
            out.append(Draw(now=last, text=_words(rng)))
        elif shape == "mixed":
            width = dt.timedelta(days=30)
            until = first + width + dt.timedelta(seconds=rng.random() * (span - width.total_seconds()))
            out.append(Draw(now=until, since=until - width, until=until, tags=(_weighted(rng, counts, 20),), text=_words(rng)))
        elif shape == "ask":
            now = first + dt.timedelta(days=14, seconds=rng.random() * (span - 14 * 86_400))
            out.append(Draw(now=now, question=QUESTION))
        else:
            raise ValueError(shape)
    return out


# --- memdb ---------------------------------------------------------------------------------------


def memdb_call(shape: str, ds: Dataset) -> Callable[[Draw], int]:
    team = ds.team

    def call(d: Draw) -> int:
        if shape == "ask":
            r = team.ask(d.question or "", now=d.now)
        else:
            r = team.recall(since=d.since, until=d.until, tags=d.tags, text=d.text, outcome=d.outcome, now=d.now)
        assert len(r.memories) == min(5, r.total), (len(r.memories), r.total)
        return int(r.total)

    return call


# --- SQLite --------------------------------------------------------------------------------------

KNOWN_TAGS_SQL = """
WITH RECURSIVE t(tag) AS (
    SELECT min(tag) FROM episode_tags WHERE owner = :owner
    UNION ALL
    SELECT (SELECT min(tag) FROM episode_tags WHERE owner = :owner AND tag > t.tag) FROM t WHERE t.tag IS NOT NULL
)
SELECT tag FROM t WHERE tag IS NOT NULL
"""  # a skip-scan of the (owner, tag, ...) key: one seek per distinct tag, like memdb's $ORDER
_RECENCY = "pow(0.5, max(:now - e.ts, 0) / 604800000000.0)"
_COLUMNS = "e.id, e.eid, e.ts, e.kind, e.outcome, e.session, e.relevance, e.tags, e.summary, e.content, e.lesson"


def sqlite_sql(tags: Sequence[str], window: bool, text: bool, outcome: bool, top5: bool) -> str:
    """The SQL for one query shape: memdb's answer (``top5`` False) or the idiomatic top 5.

    All of ``tags`` must be present: the first drives through ``episode_tags``, the others are
    primary-key probes. The text is FTS5's ``MATCH`` over the terms joined by OR. With tags and
    text, the tag/time candidates are materialized and one FTS5 scan (``CROSS JOIN`` keeps it
    outer) probes them through an automatic index: left to itself the planner probes FTS5 row by
    row (``rowid = ? AND MATCH``), and each probe recomputes ``bm25()``'s statistics over the whole
    posting lists (at 1M episodes 725 ms p50 against 52 ms; at 10k it wins, 0.18 against 0.70 ms).
    """
    ctes = ""
    if tags:
        frm = "episode_tags t JOIN episodes e ON e.id = t.id"
        where = "t.owner = :owner AND t.tag = :tag0" + (" AND t.ts >= :lo AND t.ts < :hi" if window else "")
        newest = "t.ts DESC"
        for i in range(1, len(tags)):
            probe = f"SELECT 1 FROM episode_tags x WHERE x.owner = :owner AND x.tag = :tag{i} AND x.ts = t.ts AND x.id = t.id"
            where += f" AND EXISTS ({probe})"
        if text:
            ctes = f"c AS MATERIALIZED (SELECT t.id FROM episode_tags t WHERE {where}), "
            frm = "episodes_fts CROSS JOIN c ON c.id = episodes_fts.rowid JOIN episodes e ON e.id = c.id"
            where = "episodes_fts MATCH :match"
    else:
        frm = "episodes e"
        where = "e.owner = :owner" + (" AND e.ts >= :lo AND e.ts < :hi" if window else "")
        newest = "e.ts DESC"
        if text:
            frm = "episodes_fts JOIN episodes e ON e.id = episodes_fts.rowid"
            where += " AND episodes_fts MATCH :match"
    if outcome:
        where += " AND e.outcome = :outcome"
    if top5:
        with_ = f"WITH {ctes.removesuffix(', ')} " if ctes else ""
        return f"{with_}SELECT {_COLUMNS} FROM {frm} WHERE {where} ORDER BY {'bm25(episodes_fts)' if text else newest} LIMIT 5"
    if text:
        matches = f"SELECT e.id, -bm25(episodes_fts) AS s, e.relevance, e.ts FROM {frm} WHERE {where}"
        score = f"0.9 * s / max(s) OVER () + 0.05 * e.relevance / 10 + 0.05 * {_RECENCY}"
    else:
        matches = f"SELECT e.id, e.relevance, e.ts FROM {frm} WHERE {where}"
        score = f"0.6 * e.relevance / 10 + 0.4 * {_RECENCY}"
    return f"""
WITH {ctes}m AS ({matches}),
top AS (SELECT e.id, {score} AS score, count(*) OVER () AS total FROM m e ORDER BY score DESC LIMIT 5)
SELECT {_COLUMNS}, top.score, top.total FROM top JOIN episodes e ON e.id = top.id ORDER BY top.score DESC"""


def _fts_query(text: str) -> str:
    return " OR ".join(f'"{t}"' for t in dict.fromkeys(tokenize(text)))


def _params(d: Draw, tags: Sequence[str], lo: dt.datetime | None, hi: dt.datetime | None) -> dict[str, Any]:
    p: dict[str, Any] = {"owner": OWNER, "now": ts_us(d.now)}
    p.update({f"tag{i}": t for i, t in enumerate(tags)})
    if lo is not None and hi is not None:
        p["lo"], p["hi"] = ts_us(lo), ts_us(hi)
    if d.text:
        p["match"] = _fts_query(d.text)
    if d.outcome:
        p["outcome"] = d.outcome
    return p


def _tags_in(text: str, known: set[str]) -> tuple[list[str], str]:
    """memdb's ``Owner._known_tags_in`` on SQLite's side: phrases of up to 4 words naming a known tag."""
    words = re.findall(r"[\w#+./:-]+", text)
    used = [False] * len(words)
    found: list[str] = []
    for size in (4, 3, 2, 1):
        for i in range(len(words) - size + 1):
            if any(used[i : i + size]):
                continue
            try:
                tag = normalize_tag(" ".join(words[i : i + size]))
            except memdb.errors.ValidationError:
                continue
            if tag in known:
                found.append(tag)
                used[i : i + size] = [True] * size
    return list(dict.fromkeys(found)), " ".join(w for w, u in zip(words, used, strict=True) if not u)


def sqlite_call(shape: str, ds: Dataset, top5: bool) -> Callable[[Draw], int]:
    con = ds.sql
    if shape == "ask":

        def ask(d: Draw) -> int:
            window, rest = find_time_phrase(d.question or "", d.now, 0)
            known = {r[0] for r in con.execute(KNOWN_TAGS_SQL, {"owner": OWNER})}
            tags, rest = _tags_in(rest, known)
            terms = [w for w in tokenize(rest) if w not in QUESTION_WORDS]
            assert window is not None and tags and not terms, (window, tags, terms)  # the question is time + tags only
            sql = sqlite_sql(tags, True, False, False, top5)
            rows = con.execute(sql, _params(d, tags, window.start, window.end)).fetchall()
            return len(rows) if top5 else (rows[0][-1] if rows else 0)

        return ask
    d0 = ds.draws[shape][0]
    sql = sqlite_sql(d0.tags, d0.since is not None, d0.text is not None, d0.outcome is not None, top5)

    def call(d: Draw) -> int:
        rows = con.execute(sql, _params(d, d.tags, d.since, d.until)).fetchall()
        return len(rows) if top5 else (rows[0][-1] if rows else 0)

    return call


def caller(side: str, shape: str, ds: Dataset) -> Callable[[Draw], int]:
    return memdb_call(shape, ds) if side == "memdb" else sqlite_call(shape, ds, top5=side == "sqlite-top5")


# --- measuring -----------------------------------------------------------------------------------


@dataclass
class Result:
    latencies_ns: list[int]
    totals: list[int]

    def pct(self, q: float) -> float:
        """Nearest-rank percentile, in ms."""
        s = sorted(self.latencies_ns)
        return s[max(math.ceil(q * len(s)) - 1, 0)] / 1e6


RESULTS: dict[tuple[int, str, str], Result] = {}
INFO: dict[int, dict[str, Any]] = {}


def run_draws(call: Callable[[Draw], int], draws: Sequence[Draw]) -> Result:
    lat, totals = [], []
    clock = time.perf_counter_ns
    for d in draws:
        t0 = clock()
        total = call(d)
        lat.append(clock() - t0)
        totals.append(total)
    return Result(lat, totals)


def measure(ds: Dataset, shape: str, side: str, run: Callable[[Callable[[], Result]], Result] | None = None) -> Result:
    """Warm up on other draws, then time every draw; checks SQLite's totals against memdb's."""
    call = caller(side, shape, ds)
    for d in ds.warmups[shape]:
        call(d)
    draws = ds.draws[shape]
    result = run(lambda: run_draws(call, draws)) if run else run_draws(call, draws)
    RESULTS[ds.size, shape, side] = result
    mem = RESULTS.get((ds.size, shape, "memdb"))
    if side == "sqlite" and mem is not None and shape in EXACT:
        bad = [(i, a, b) for i, (a, b) in enumerate(zip(mem.totals, result.totals, strict=True)) if a != b]
        assert not bad, f"{shape} at {ds.size:,}: memdb and SQLite disagree on {len(bad)} draws, e.g. (draw, memdb, sqlite) {bad[:3]}"
    return result


# --- tables --------------------------------------------------------------------------------------


def _f(ms: float) -> str:
    return f"{ms:,.2f}" if ms < 100 else f"{ms:,.0f}"


def _agreement(size: int, shape: str) -> str:
    m, s = RESULTS.get((size, shape, "memdb")), RESULTS.get((size, shape, "sqlite"))
    if not m or not s:
        return "-"
    same = sum(a == b for a, b in zip(m.totals, s.totals, strict=True))
    return "all" if same == len(m.totals) else f"{same}/{len(m.totals)}"


def format_tables(results: dict[tuple[int, str, str], Result], info: dict[int, dict[str, Any]]) -> str:
    out = [
        f"memdb recall/ask vs SQLite (same data, same run); {DRAWS} draws per cell, p50/p95 ms per call",
        f"machine: {_machine()}, SQLite {sqlite3.sqlite_version}",
        f"commit:  {COMMIT} at the start of the run; memdb + generator sources {CODE_KEY}"
        + (f" (databases built by those sources, queried by these: {THIS_CODE_KEY})" if BUILT_BY_OTHER_CODE else ""),
        "",
        "build (import in batches of 5,000, sync off; SQLite with its indexes in place, then ANALYZE):",
    ]
    for size, meta in sorted(info.items()):
        sec, size_b = meta["seconds"], meta["bytes"]
        cached = " (cached: times from when it was built)" if meta.get("cached") else ""
        out.append(
            f"  {size:>9,}: memdb {sec['memdb']:7.1f} s ({size / sec['memdb']:,.0f} episodes/s, {size_b['memdb'] / 2**20:,.0f} MiB)"
            f"   sqlite {sec['sqlite']:6.1f} s ({size / sec['sqlite']:,.0f}/s, {size_b['sqlite'] / 2**20:,.0f} MiB)"
            f"   generator {sec['generate']:.1f} s{cached}"
        )
    head: tuple[str, ...] = ("size", "shape", "matches p50", "empty", "memdb p50", "memdb p95", "sqlite p50", "sqlite p95")
    head += ("memdb/sqlite p50", "top5 p50", "memdb/top5", "same totals")
    rows = []
    for size in sorted({k[0] for k in results}):
        for shape in SHAPES:
            m, s, t = (results.get((size, shape, side)) for side in SIDES)
            if not m and not s:
                continue
            ref = m or s
            assert ref is not None
            rows.append((
                f"{size:,}", shape, f"{statistics.median(ref.totals):,.0f}", f"{ref.totals.count(0) / len(ref.totals):.0%}",
                _f(m.pct(0.5)) if m else "-", _f(m.pct(0.95)) if m else "-",
                _f(s.pct(0.5)) if s else "-", _f(s.pct(0.95)) if s else "-",
                f"{m.pct(0.5) / s.pct(0.5):.1f}x" if m and s else "-",
                _f(t.pct(0.5)) if t else "-",
                f"{m.pct(0.5) / t.pct(0.5):.0f}x" if m and t else "-",
                _agreement(size, shape),
            ))  # fmt: skip
    out += ["", *_layout(head, rows)]
    out += [
        "",
        "cost grows with matches, not with the database (time+tag; /scaled shrinks the window as the database grows):",
    ]
    head2 = ("size", "shape", "matches p50", "memdb p50", "memdb us/match", "sqlite p50", "sqlite us/match")
    rows2 = []
    for shape in ("time+tag", "time+tag/scaled"):
        for size in sorted({k[0] for k in results}):
            m, s = results.get((size, shape, "memdb")), results.get((size, shape, "sqlite"))
            if not m:
                continue
            matches = statistics.median(m.totals)
            rows2.append((
                f"{size:,}", shape, f"{matches:,.0f}", _f(m.pct(0.5)), f"{1e3 * m.pct(0.5) / max(matches, 1):,.1f}",
                _f(s.pct(0.5)) if s else "-", f"{1e3 * s.pct(0.5) / max(matches, 1):,.1f}" if s else "-",
            ))  # fmt: skip
    out += _layout(head2, rows2)
    return "\n".join(out)


def _layout(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    line = "  ".join(("{:<%d}" if i < 2 else "{:>%d}") % w for i, w in enumerate(widths))
    return [line.format(*head), line.format(*("-" * w for w in widths)), *(line.format(*r) for r in rows)]


# --- pytest-benchmark ----------------------------------------------------------------------------


class Datasets:
    """Builds each size once per session (or reuses ``MEMDB_BENCH_CACHE``); keeps one open at a time."""

    def __init__(self) -> None:
        cache = os.environ.get("MEMDB_BENCH_CACHE")
        self._tmp = None if cache else tempfile.mkdtemp(prefix="memdb-bench-query-")
        self.root = Path(cache or self._tmp or ".")
        self.open: Dataset | None = None

    def get(self, size: int) -> Dataset:
        if self.open is None or self.open.size != size:
            self.close()
            self.open = load(size, self.root, log=lambda s: print(s, file=sys.stderr, flush=True))
            INFO[size] = self.open.info
        return self.open

    def close(self) -> None:
        if self.open is not None:
            self.open.close()
            self.open = None

    def cleanup(self) -> None:
        self.close()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def datasets() -> Iterator[Datasets]:
    ds = Datasets()
    yield ds
    ds.cleanup()


CASES = [(size, shape, side) for size in SIZES for shape in SHAPES for side in SIDES]


@pytest.mark.parametrize(("size", "shape", "side"), CASES, ids=[f"{n}-{shape}-{side}" for n, shape, side in CASES])
def test_query(benchmark: Any, datasets: Datasets, size: int, shape: str, side: str) -> None:
    ds = datasets.get(size)
    benchmark.group = f"{shape} @ {size:,}"
    benchmark.extra_info["draws"] = DRAWS

    def run(fn: Callable[[], Result]) -> Result:
        return benchmark.pedantic(fn, rounds=1, iterations=1)  # type: ignore[no-any-return]

    result = measure(ds, shape, side, run)
    benchmark.extra_info.update(p50_ms=result.pct(0.5), p95_ms=result.pct(0.95), matches_p50=statistics.median(result.totals))


def test_zz_tables(benchmark: Any, datasets: Datasets, capsys: pytest.CaptureFixture[str]) -> None:
    """Print the comparison tables; it times nothing, so it reports as skipped (see bench_globals)."""
    datasets.close()
    if RESULTS:
        with capsys.disabled():
            print("\n\n" + format_tables(RESULTS, INFO) + "\n")
    pytest.skip("tables printed above" if RESULTS else "no results to tabulate")


# --- script mode ---------------------------------------------------------------------------------


def profile(ds: Dataset, shape: str, top: int = 30) -> str:
    """cProfile of memdb over the shape's draws (after a warm-up), sorted by internal time."""
    call = memdb_call(shape, ds)
    for d in ds.warmups[shape]:
        call(d)
    prof = cProfile.Profile()
    prof.enable()
    for d in ds.draws[shape]:
        call(d)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_query", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=SHAPES, help="also cProfile memdb on this shape at the largest size")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shapes to run")
    parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated sides to run")
    args = parser.parse_args(argv)
    sets = Datasets()
    try:
        for size in SIZES:
            ds = sets.get(size)
            for shape in args.shapes.split(","):
                for side in args.sides.split(","):
                    r = measure(ds, shape, side)
                    print(f"  {size:,} {shape} {side}: p50 {r.pct(0.5):.2f} ms, p95 {r.pct(0.95):.2f} ms", file=sys.stderr, flush=True)
            if args.profile and size == SIZES[-1]:
                print(f"\ncProfile of memdb, {args.profile} at {size:,} ({DRAWS} draws):\n" + profile(ds, args.profile))
        sets.close()
        print(format_tables(RESULTS, INFO))
    finally:
        with contextlib.suppress(Exception):
            sets.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
