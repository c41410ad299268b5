"""Episode capture (``mem.record``) against SQLite doing the same inserts, measured in the same run.

Both sides get the same pre-generated episodes (seeded): the six typed kinds with an outcome and
``exchange`` without, 1-4 tags out of 50, sessions, 100-600 characters of content (~300 common
words plus a long tail of identifiers, paths, tickets, versions and hashes), lessons, notes and
decisions on some, an email or IP address in about 3% of them. One owner, historic timestamps,
a fixed clock. Sides:

- ``memdb``: ``mem.record(**episode)``, with every index (time, tag, kind+outcome, session,
  relevance band, text postings with BM25 statistics) written in the same transaction;
- ``memdb-nosan``: the same with a no-op sanitizer, to show what the PII sanitizer costs;
- ``memdb-import``: ``mem.import_episodes(chunk)`` in chunks of 1,000 (batched group only): the
  bulk path, which scores and writes a chunk at once, where ``record`` does so per episode and
  counts each typed record for pattern extraction;
- ``sqlite-guarded`` (batched group only): the ``sqlite`` side after memdb's own PII sanitizer
  and pydantic validation (``EpisodeInput``) of each episode: what an application on SQLite pays
  for two of memdb's capture guarantees, so the ratio to it is one at (nearly) equal guarantees;
- ``sqlite``: stdlib ``sqlite3``, a file database in WAL mode; one ``episodes`` table (id TEXT
  PRIMARY KEY, columns for every field, tags and decisions as JSON, relevance and its band),
  indexes (owner, ts), (owner, kind, outcome, ts), (owner, session, ts) for episodes with a
  session, (owner, band, ts), an ``episode_tags(owner, tag, ts, id)`` WITHOUT ROWID table, and an
  external-content FTS5 table over summary, content, what_we_tried, why, lesson and tags.

memdb's capture also sanitizes PII, validates with pydantic (tags normalised), tokenizes for its
own BM25 postings and scores relevance; SQLite's capture does none of that (FTS5 tokenizes in C,
and the baseline computes relevance with one Python expression). The ratio is therefore what a
memdb capture costs against a hand-written SQLite schema that skips those guarantees.

Groups (``episodes/round``; every round starts from an empty database in a fresh directory):

- ``single-sync``: one episode per transaction, durable commits: memdb ``sync=True`` (the
  default; LMDB fsyncs data, then the meta page) vs SQLite ``synchronous=FULL`` (one WAL fsync);
- ``single-nosync``: one episode per transaction, no fsync at commit: memdb ``sync=False`` vs
  SQLite ``synchronous=NORMAL``, the WAL setting with the same guarantee (an application crash
  loses nothing, an OS crash may lose the last commits, neither corrupts);
- ``batched``: 1,000 episodes per transaction (``with db.transaction(): ...``), durable commits
  (memdb ``sync=True``, SQLite ``FULL``);
- ``sized``: the batched capture of more episodes, one round, then bytes on disk: LMDB pages up
  to the last one used (``db.store.stat()["used_bytes"]``), LMDB's compacting copy, and after
  ``Database.compact()`` (every key written anew in order: memdb's VACUUM), SQLite pages after a
  WAL checkpoint and after VACUUM.

Each round's wall time is what pytest-benchmark reports; the summary also gives this process's CPU
time per round, which other load on a shared machine leaves alone (it leaves out fsync waits too).

Episodes per round: ``MEMDB_BENCH_SINGLE_SYNC`` (default 500), ``MEMDB_BENCH_SINGLE`` (1,000),
``MEMDB_BENCH_BATCHED`` (5,000), ``MEMDB_BENCH_SIZED`` (20,000); ``MEMDB_BENCH_ROUNDS`` (3). The
file takes about a minute and a half on an idle 2-core machine, under five when others share it.

Regenerate the results (pytest-benchmark tables, then the memdb/SQLite table)::

    cd /work/main && python -m pytest benchmarks/bench_capture.py --benchmark-only -p no:cacheprovider \\
        --benchmark-columns=median,ops -q

or without pytest (medians of the same rounds, the summary table only), and where memdb's
batched capture time goes (cProfile, cumulative seconds by stage)::

    cd /work/main && python -m benchmarks.bench_capture
    cd /work/main && python -m benchmarks.bench_capture --profile 5000
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import itertools
import json
import os
import platform
import pstats
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import lmdb
import pytest

import memdb
from memdb.engine.store import LMDBStore
from memdb.memory.models import EpisodeInput
from memdb.memory.sanitize import RegexSanitizer, Sanitizer, sanitize_fields
from memdb.memory.sanitize.fields import flatten_texts

SINGLE_SYNC = int(os.environ.get("MEMDB_BENCH_SINGLE_SYNC", "500"))
SINGLE = int(os.environ.get("MEMDB_BENCH_SINGLE", "1000"))
BATCHED = int(os.environ.get("MEMDB_BENCH_BATCHED", "5000"))
SIZED = int(os.environ.get("MEMDB_BENCH_SIZED", "20000"))
ROUNDS = int(os.environ.get("MEMDB_BENCH_ROUNDS", "3"))
BATCH = 1_000
SEED = 20260702
OWNER = "ana"
FIRST_TS = dt.datetime(2026, 1, 5, 8, 0, tzinfo=dt.UTC)
MAP_SIZE = 1 << 30  # sparse; generous so no round grows its map mid-write

Episode = dict[str, Any]

# --- the episodes ------------------------------------------------------------------------------

TYPED_KINDS = ("sprint", "routine", "roundtable", "research", "debug", "review")
OUTCOMES = ("success", "partial", "failure")
TAGS = tuple(
    """
    project-atlas project-borealis project-cinder project-delta project-ember infra ci deploy release
    database migration cache latency memory cpu network dns auth billing search ranking embeddings
    prompt eval dataset tokenizer gpu training inference api frontend backend mobile docs security
    privacy compliance oncall incident postmortem flaky-test refactor performance cost customer
    support planning roadmap research experiment urgent
    """.split()
)
WORDS = tuple(
    """
    the a to of and in is for on with that it was we this as at be by from not are but or have an
    they which you were all one had there when can been more if so out about also then into only
    after before over than because while until again
    user agent model prompt response tool call result error retry timeout request service server
    client cache database query index table schema migration deploy release build test tests suite
    pipeline job worker queue batch stream event log logs metric metrics trace alert incident latency
    throughput memory cpu disk network connection pool thread lock deadlock race condition config
    setting flag feature branch commit merge review patch fix bug regression issue ticket sprint
    plan goal task step estimate deadline owner team customer report dashboard budget cost token
    tokens context window embedding vector search ranking score threshold eval dataset sample label
    training inference gpu checkpoint weights parameter learning rate loss accuracy precision recall
    api endpoint payload json field value key secret credential permission role access audit policy
    session conversation message summary note decision lesson outcome partial success failure
    checked confirmed found noticed tried added removed changed updated reverted restarted rolled back
    increased reduced measured compared verified reproduced investigated traced profiled cached
    slow fast stale missing duplicate invalid broken stable flaky intermittent expected unexpected
    first second last next previous new old large small high low daily weekly nightly staging
    production local remote upstream downstream primary replica shard cluster node region zone
    postgres redis kafka kubernetes docker terraform python rust typescript grpc http graphql s3
    """.split()
)
_WEIGHTS = tuple(1.0 / (rank + 8) for rank in range(len(WORDS)))  # roughly Zipf, function words first
ACTIONS = ("retry", "rollback", "escalate", "ship", "defer", "investigate", "pin-version", "add-test")


def _rare(r: random.Random) -> str:
    """The long tail of agent text: identifiers, paths, tickets, versions, numbers, hashes."""
    a, b = r.choice(WORDS[60:]), r.choice(WORDS[60:])
    return r.choice((
        f"{a}_{b}", f"{a}{b.capitalize()}", f"src/{a}/{b}.py", f"PRJ-{r.randint(100, 9999)}",
        f"v{r.randint(0, 4)}.{r.randint(0, 30)}.{r.randint(0, 9)}", f"{r.randint(2, 5000)}ms", f"{r.getrandbits(28):07x}",
    ))  # fmt: skip


def _sentence(r: random.Random, lo: int, hi: int) -> str:
    words = r.choices(WORDS, weights=_WEIGHTS, k=r.randint(lo, hi))
    for _ in range(r.choice((0, 0, 1, 1, 2))):
        words.insert(r.randrange(1, len(words) + 1), _rare(r))
    text = " ".join(words)
    return text[0].upper() + text[1:] + r.choice((".", ".", ".", ";", ":"))


def _text(r: random.Random, chars: int) -> str:
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < chars:
        parts.append(_sentence(r, 6, 18))
    return " ".join(parts)[:chars].rstrip()


def _pii(r: random.Random, i: int) -> str:
    if r.random() < 0.5:
        return f" Contact owner{i % 97}.oncall@example.com for access."
    return f" Host 10.{i % 250}.{r.randrange(250)}.{r.randrange(1, 250)} stopped answering."


@cache
def episodes(n: int, seed: int = SEED) -> list[Episode]:
    """``n`` realistic agent episodes, the same for every side (``mem.record(**episode)`` arguments)."""
    r = random.Random(seed)
    out: list[Episode] = []
    ts = FIRST_TS
    session, left = "", 0
    for i in range(n):
        ts += dt.timedelta(seconds=r.randint(20, 480))
        if left == 0:
            session, left = f"conv_{i:06d}", r.randint(2, 12)
        left -= 1
        tags = r.sample(TAGS, r.randint(1, 4))
        if r.random() < 0.3:
            ep: Episode = {
                "kind": "exchange",
                "summary": _sentence(r, 5, 12),
                "content": f"user: {_text(r, r.randint(40, 200))}\nassistant: {_text(r, r.randint(60, 400))}",
                "session": session,
            }
        else:
            ep = {
                "kind": r.choice(TYPED_KINDS),
                "summary": _sentence(r, 6, 14),
                "outcome": r.choices(OUTCOMES, weights=(5, 3, 2))[0],
                "content": _text(r, r.randint(100, 600)),
            }
            if r.random() < 0.7:
                ep["session"] = session
            if r.random() < 0.4:
                ep["lesson"] = _sentence(r, 6, 16)
            if r.random() < 0.3:
                ep["what_we_tried"] = _sentence(r, 8, 20)
                ep["why"] = _sentence(r, 6, 14)
            if r.random() < 0.4:
                ep["decisions"] = {"confidence": round(r.uniform(1, 10), 1), "action": r.choice(ACTIONS)}
        if r.random() < 0.03:
            ep["content"] += _pii(r, i)
        ep["tags"] = tags
        ep["ts"] = ts
        out.append(ep)
    return out


def clock() -> dt.datetime:
    """The fixed 'now' of every side: a day after the last possible episode of the largest run."""
    return FIRST_TS + dt.timedelta(seconds=480 * max(SINGLE_SYNC, SINGLE, BATCHED, SIZED) + 86_400)


def input_bytes(eps: list[Episode]) -> float:
    """Mean JSON size of the episodes as given: the logical payload a byte count compares with."""
    return statistics.fmean(len(json.dumps(ep, default=str, ensure_ascii=False).encode()) for ep in eps)


class NoSanitizer:
    """A sanitizer that changes nothing, to measure what the default PII sanitizer costs."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return dict(texts)


# --- memdb -------------------------------------------------------------------------------------


def open_memdb(path: Path, sync: bool, sanitize: bool = True) -> memdb.Database:
    return memdb.open(path, sync=sync, map_size=MAP_SIZE, clock=clock, sanitizer=None if sanitize else NoSanitizer())


def record_memdb(db: memdb.Database, eps: list[Episode], batch: int) -> int:
    """``mem.record`` per episode; ``batch`` > 1 wraps each ``batch`` of them in ``db.transaction()``."""
    mem = db.owner(OWNER)
    if batch == 1:
        for ep in eps:
            mem.record(**ep)
        return len(eps)
    for i in range(0, len(eps), batch):
        with db.transaction():
            for ep in eps[i : i + batch]:
                mem.record(**ep)
    return len(eps)


def import_memdb(db: memdb.Database, eps: list[Episode], batch: int) -> int:
    mem = db.owner(OWNER)
    return sum(mem.import_episodes(eps[i : i + batch], source="bench_capture").count for i in range(0, len(eps), batch))


def memdb_sizes(db: memdb.Database, path: Path) -> dict[str, int]:
    """Bytes as written (LMDB pages up to the last used one), of LMDB's compacting copy, and
    after ``Database.compact()``, memdb's VACUUM; closes ``db``."""
    store = db.store
    assert isinstance(store, LMDBStore)  # stat() is LMDB-only; this benchmark always opens LMDB
    written = store.stat()["used_bytes"]
    db.close()
    with tempfile.TemporaryDirectory(prefix="compact-", dir=path.parent) as dst:
        env = lmdb.open(str(path), readonly=True, lock=False)
        try:
            env.copy(dst, compact=True)
        finally:
            env.close()
        copied = os.path.getsize(os.path.join(dst, "data.mdb"))
    # LMDB's copy keeps each page as full as it was (about half, after splits); compact() writes
    # every key anew in order, pages filled as SQLite's VACUUM fills its own
    db = open_memdb(path, sync=True)
    try:
        db.compact()
        store = db.store
        assert isinstance(store, LMDBStore)
        compacted = store.stat()["used_bytes"]
    finally:
        db.close()
    return {"written": written, "copied": copied, "compacted": compacted}


# --- SQLite ------------------------------------------------------------------------------------

SQLITE_SCHEMA = """
CREATE TABLE episodes (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, ts INTEGER NOT NULL, kind TEXT NOT NULL, outcome TEXT,
    session TEXT, summary TEXT NOT NULL, content TEXT NOT NULL, tags_json TEXT NOT NULL,
    what_we_tried TEXT, why TEXT, lesson TEXT, decisions_json TEXT NOT NULL,
    relevance REAL NOT NULL, band INTEGER NOT NULL, access_count INTEGER NOT NULL DEFAULT 0,
    last_access INTEGER, feedback REAL, status TEXT NOT NULL DEFAULT 'active'
);
CREATE INDEX episodes_time ON episodes(owner, ts);
CREATE INDEX episodes_kind ON episodes(owner, kind, outcome, ts);
CREATE INDEX episodes_session ON episodes(owner, session, ts) WHERE session IS NOT NULL;
CREATE INDEX episodes_band ON episodes(owner, band, ts);
CREATE TABLE episode_tags (
    owner TEXT NOT NULL, tag TEXT NOT NULL, ts INTEGER NOT NULL, id TEXT NOT NULL,
    PRIMARY KEY (owner, tag, ts, id)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    summary, content, what_we_tried, why, lesson, tags_json, content='episodes', content_rowid='rowid'
);
"""
_INSERT_EPISODE = (
    "INSERT INTO episodes (id, owner, ts, kind, outcome, session, summary, content, tags_json, what_we_tried, why, lesson,"
    " decisions_json, relevance, band) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_TAG = "INSERT INTO episode_tags (owner, tag, ts, id) VALUES (?, ?, ?, ?)"
_INSERT_FTS = "INSERT INTO episodes_fts (rowid, summary, content, what_we_tried, why, lesson, tags_json) VALUES (?, ?, ?, ?, ?, ?, ?)"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_sqlite_seq = itertools.count()


def open_sqlite(path: Path, synchronous: str) -> sqlite3.Connection:
    path.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path / "episodes.db", isolation_level=None)  # explicit BEGIN/COMMIT
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.executescript(SQLITE_SCHEMA)
    return conn


def _sqlite_relevance(tags: list[str], ts: dt.datetime, now: dt.datetime) -> float:
    """What a plain application would store: memdb's 40/30/20/10 score of a new episode, inline."""
    tag_weight = max((1.0 if t == "urgent" else 0.5) for t in tags) if tags else 0.0
    age_days = max((now - ts).total_seconds(), 0.0) / 86400.0
    decay: float = 0.5 ** (age_days / 14.0)  # float ** float is typed Any (a negative base gives complex)
    return round(0.3 * 10.0 * tag_weight + 0.2 * 10.0 * decay + 0.1 * 5.0, 9)


def insert_sqlite_episode(cur: sqlite3.Cursor, ep: Episode, now: dt.datetime) -> None:
    """One episode: its row (a time-sortable id like memdb's), its tag rows and its FTS5 row."""
    ts: dt.datetime = ep["ts"]
    d = ts - _EPOCH
    t = (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    eid = ts.strftime("%Y%m%dT%H%M%S%fZ-") + f"{next(_sqlite_seq) & 0xFFFFFF:06x}"
    tags = ep.get("tags", [])
    tags_json = json.dumps(tags)
    relevance = _sqlite_relevance(tags, ts, now)
    get = ep.get
    cur.execute(
        _INSERT_EPISODE,
        (eid, OWNER, t, ep["kind"], get("outcome"), get("session"), ep["summary"], get("content", ""), tags_json,
         get("what_we_tried"), get("why"), get("lesson"), json.dumps(get("decisions", {})), relevance, int(relevance)),
    )  # fmt: skip
    rowid = cur.lastrowid
    cur.executemany(_INSERT_TAG, [(OWNER, tag, t, eid) for tag in tags])
    cur.execute(_INSERT_FTS, (rowid, ep["summary"], get("content", ""), get("what_we_tried"), get("why"), get("lesson"), tags_json))


def guarded(sanitizer: Sanitizer, ep: Episode) -> Episode:
    """``ep`` after memdb's PII sanitizer (every string, nested ones too, as capture flattens
    them) and its pydantic validation: what an application on SQLite would add for those two
    capture guarantees."""
    flat, rebuild = flatten_texts(dict(ep))
    return EpisodeInput.model_validate(rebuild(sanitize_fields(sanitizer, flat))).model_dump()


def insert_sqlite(conn: sqlite3.Connection, eps: list[Episode], batch: int, guard: bool = False) -> int:
    """SQLite inserts, ``batch`` episodes per transaction; with ``guard`` each episode goes
    through ``guarded`` first."""
    cur, now = conn.cursor(), clock()
    sanitizer = RegexSanitizer()
    for i in range(0, len(eps), batch):
        cur.execute("BEGIN")
        for ep in eps[i : i + batch]:
            insert_sqlite_episode(cur, guarded(sanitizer, ep) if guard else ep, now)
        cur.execute("COMMIT")
    return len(eps)


def sqlite_sizes(conn: sqlite3.Connection) -> dict[str, int]:
    """Bytes after a WAL checkpoint (pages as written), then after VACUUM; closes ``conn``."""

    def pages() -> int:
        return int(conn.execute("PRAGMA page_count").fetchone()[0]) * int(conn.execute("PRAGMA page_size").fetchone()[0])

    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    written = pages()
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    compacted = pages()
    conn.close()
    return {"written": written, "compacted": compacted}


# --- groups, sides, rounds ---------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    name: str
    episodes: int  # per round
    batch: int  # episodes per transaction
    sync: bool  # durable commits (memdb sync=True, SQLite FULL) or not (sync=False, NORMAL)
    sides: tuple[str, ...]
    what: str
    rounds: int | None = None  # None: MEMDB_BENCH_ROUNDS (or --rounds in script mode)


GROUPS = {
    g.name: g
    for g in (
        Group("single-sync", SINGLE_SYNC, 1, True, ("memdb", "sqlite"), "1/txn, fsync at commit"),
        Group("single-nosync", SINGLE, 1, False, ("memdb", "memdb-nosan", "sqlite"), "1/txn, no fsync at commit"),
        Group(
            "batched",
            BATCHED,
            BATCH,
            True,
            ("memdb", "memdb-nosan", "memdb-import", "sqlite-guarded", "sqlite"),
            f"{BATCH:,}/txn, fsync at commit",
        ),
        Group("sized", SIZED, BATCH, True, ("memdb", "sqlite"), f"{BATCH:,}/txn, fsync, 1 round, then bytes", rounds=1),
    )
}
SIZE_GROUP = "sized"  # its one round is measured on disk before the directory goes


class Round:
    """One side of one group writing into an empty database in a fresh directory."""

    def __init__(self, root: Path, group: Group, side: str) -> None:
        self.root, self.group, self.side = root, group, side
        self.eps = episodes(group.episodes)
        self.handle: Any = None
        self.path: Path | None = None
        self.cpu: list[float] = []  # CPU seconds of each round

    def setup(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"{self.group.name}-{self.side}-", dir=self.root))
        if self.side.startswith("sqlite"):
            self.handle = open_sqlite(self.path, "FULL" if self.group.sync else "NORMAL")
        else:
            self.handle = open_memdb(self.path, self.group.sync, sanitize=self.side != "memdb-nosan")

    def run(self) -> int:
        """Write the group's episodes; also notes this process's CPU seconds (other load on the machine stays out)."""
        c0 = time.process_time()
        if self.side.startswith("sqlite"):
            n = insert_sqlite(self.handle, self.eps, self.group.batch, guard=self.side == "sqlite-guarded")
        elif self.side == "memdb-import":
            n = import_memdb(self.handle, self.eps, self.group.batch)
        else:
            n = record_memdb(self.handle, self.eps, self.group.batch)
        self.cpu.append(time.process_time() - c0)
        return n

    def teardown(self) -> None:
        """Check the count, measure bytes once per side, close and delete (none of it timed)."""
        if self.handle is None:
            return
        handle, self.handle = self.handle, None
        try:
            if self.side.startswith("sqlite"):
                stored = handle.execute("SELECT count(*) FROM episodes").fetchone()[0]
            else:
                stored = handle.owner(OWNER).count()
            assert stored == len(self.eps), f"{self.group.name} {self.side}: {stored} episodes stored, {len(self.eps)} written"
            if self.group.name == SIZE_GROUP and self.side not in SIZES:
                assert self.path is not None
                SIZES[self.side] = sqlite_sizes(handle) if self.side.startswith("sqlite") else memdb_sizes(handle, self.path)
        finally:
            handle.close()  # a second close is harmless on both sides
            shutil.rmtree(self.path or "", ignore_errors=True)


# --- the summary table -------------------------------------------------------------------------

Timing = tuple[float, float]  # median wall seconds per round, median CPU seconds of this process per round
RESULTS: dict[tuple[str, str], Timing] = {}  # (group, side) -> timing
SIZES: dict[str, dict[str, int]] = {}  # side -> {"written": bytes, "compacted": bytes}


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return "unknown"
    return (out.stdout.strip() or "no commit yet") + (" (uncommitted changes)" if dirty.stdout.strip() else "")


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    load = ", load %.1f" % os.getloadavg()[0] if hasattr(os, "getloadavg") else ""  # noqa: UP031
    return (
        f"{cpu}, {os.cpu_count()} cpus{load}, {platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"py-lmdb {lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))}), SQLite {sqlite3.sqlite_version}"
    )


def _columns(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    line = "  ".join("{:<%d}" % w if i < 2 else "{:>%d}" % w for i, w in enumerate(widths))  # noqa: UP031
    return [line.format(*head), line.format(*("-" * w for w in widths)), *(line.format(*row) for row in rows)]


def format_table(results: dict[tuple[str, str], Timing], sizes: dict[str, dict[str, int]]) -> str:
    """Episodes/s per side with the ratio to SQLite in the same group, then bytes on disk per episode."""
    head = ("group", "side", "episodes", "wall s", "episodes/s", "÷ sqlite", "÷ guarded", "cpu s", "cpu ÷ sqlite")
    rows: list[tuple[str, ...]] = []
    for group in GROUPS.values():
        base = results.get((group.name, "sqlite"))
        guard = results.get((group.name, "sqlite-guarded"))
        for side in group.sides:
            if (group.name, side) not in results:
                continue
            wall, cpu = results[group.name, side]
            vs = base is not None and side != "sqlite"
            rows.append((
                f"{group.name} ({group.what})", side, f"{group.episodes:,}", f"{wall:.2f}", f"{group.episodes / wall:,.0f}",
                f"{base[0] / wall:.3f}" if vs and base else "",
                f"{guard[0] / wall:.3f}" if guard and side.startswith("memdb") else "",
                f"{cpu:.2f}", f"{base[1] / cpu:.3f}" if vs and base and cpu else "",
            ))  # fmt: skip
    out = [
        "memdb capture vs SQLite (WAL, same indexes, FTS5), same episodes; medians per round",
        "÷ sqlite: episodes/s ÷ SQLite's (wall); cpu ÷ sqlite: the same from this process's CPU time (other load left out)",
        "÷ guarded: memdb episodes/s ÷ those of SQLite after memdb's sanitizer and validation (sqlite-guarded)",
        f"machine: {_machine()}",
        f"commit:  {_commit()}",
        *_columns(head, rows),
    ]
    if sizes:
        n = GROUPS[SIZE_GROUP].episodes
        out += ["", f"bytes on disk after {n:,} episodes ({SIZE_GROUP}); input as JSON: {input_bytes(episodes(n)):,.0f} bytes/episode"]
        size_rows = []
        for what, label in (
            ("written", "as written (LMDB last page; SQLite pages after checkpoint)"),
            ("copied", "LMDB's compacting copy (pages as full as written)"),
            ("compacted", "compacted (Database.compact(); SQLite VACUUM)"),
        ):
            m, q = sizes.get("memdb", {}).get(what), sizes.get("sqlite", {}).get(what)
            size_rows.append((
                label, "",
                f"{m:,} ({m / n:,.0f}/ep)" if m else "-",
                f"{q:,} ({q / n:,.0f}/ep)" if q else "-",
                f"{m / q:.2f}" if m and q else "-",
            ))  # fmt: skip
        out += _columns(("bytes", "", "memdb", "sqlite", "memdb/sqlite"), size_rows)
    return "\n".join(out)


# --- pytest-benchmark --------------------------------------------------------------------------


def _bench(benchmark: Any, root: Path, group: str, side: str) -> None:
    g = GROUPS[group]
    rnd = Round(root, g, side)  # generates the episodes now, so no round times it
    try:
        written = benchmark.pedantic(rnd.run, setup=rnd.setup, teardown=rnd.teardown, rounds=g.rounds or ROUNDS)
    finally:
        rnd.teardown()  # --benchmark-disable runs once without teardown
    assert written == g.episodes
    benchmark.extra_info["episodes_per_round"] = g.episodes
    if benchmark.stats:  # None or empty with --benchmark-disable
        median = benchmark.stats.stats.median
        RESULTS[group, side] = (median, statistics.median(rnd.cpu))
        benchmark.extra_info["episodes_per_s"] = g.episodes / median
        benchmark.extra_info["cpu_s_median"] = statistics.median(rnd.cpu)


@pytest.mark.benchmark(group="capture single-sync")
@pytest.mark.parametrize("side", GROUPS["single-sync"].sides)
def test_single_sync(benchmark: Any, tmp_path: Path, side: str) -> None:
    _bench(benchmark, tmp_path, "single-sync", side)


@pytest.mark.benchmark(group="capture single-nosync")
@pytest.mark.parametrize("side", GROUPS["single-nosync"].sides)
def test_single_nosync(benchmark: Any, tmp_path: Path, side: str) -> None:
    _bench(benchmark, tmp_path, "single-nosync", side)


@pytest.mark.benchmark(group="capture batched")
@pytest.mark.parametrize("side", GROUPS["batched"].sides)
def test_batched(benchmark: Any, tmp_path: Path, side: str) -> None:
    _bench(benchmark, tmp_path, "batched", side)


@pytest.mark.benchmark(group="capture sized")
@pytest.mark.parametrize("side", GROUPS["sized"].sides)
def test_sized(benchmark: Any, tmp_path: Path, side: str) -> None:
    """One larger batched round per side, then its bytes on disk (the table's second part)."""
    _bench(benchmark, tmp_path, "sized", side)


def test_summary_table(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Print the memdb/SQLite table; it times nothing, so it reports as skipped.

    It takes the ``benchmark`` fixture only so that ``--benchmark-only`` keeps it; skipping
    is how pytest-benchmark accepts a fixture that was never called.
    """
    if RESULTS:
        with capsys.disabled():
            print("\n\n" + format_table(RESULTS, SIZES) + "\n")
    pytest.skip("memdb/SQLite table printed above" if RESULTS else "no benchmark results to tabulate")


# --- script mode -------------------------------------------------------------------------------

# Where a batched capture's time goes (--profile): (label, file suffix or "~" for C, function),
# summed cumulative seconds. Within "by stage", rows at one indent under the same parent do not
# overlap; "by operation" cuts across stages (a key is encoded for apply, increments and checks).
PROFILE_STAGES: tuple[tuple[str, str, str], ...] = (
    ("record, total", "memdb/memory/episodes.py", "record"),
    ("prepare (no I/O)", "memdb/memory/episodes.py", "_prepare"),
    ("  PII sanitizer (sanitize_fields)", "memdb/memory/sanitize/detect.py", "sanitize_fields"),
    ("  flatten + rebuild text fields", "memdb/memory/sanitize/fields.py", "flatten_texts"),
    ("  flatten + rebuild text fields", "memdb/memory/sanitize/fields.py", "rebuild"),
    ("  pydantic EpisodeInput.model_validate", "pydantic/main.py", "model_validate"),
    ("    tag normalising (validator)", "memdb/memory/text.py", "normalize_tag"),
    ("write (_write_new)", "memdb/memory/episodes.py", "_write_new"),
    ("  id collision check (Global.holds)", "memdb/engine/globals.py", "holds"),
    ("  relevance scorer (RelevanceModel.score_many)", "memdb/memory/relevance.py", "score_many"),
    ("  terms and their counts (layout.terms_of)", "memdb/memory/layout.py", "terms_of"),
    ("  told dates (layout.told_of)", "memdb/memory/layout.py", "told_of"),
    ("  Globals.apply (record, header, index entries)", "memdb/engine/globals.py", "apply"),
    ("  audit record (AuditLog.write)", "memdb/memory/audit.py", "write"),
    ("  pattern counts staged (governance hook)", "memdb/governance/patterns.py", "on_record"),
    ("  returned Episode (to_episode)", "memdb/memory/episodes.py", "to_episode"),
    ("commit: staged postings and columns (flush_staged)", "memdb/engine/globals.py", "flush_staged"),
    ("  posting blocks and columns (TextIndex._write_docs)", "memdb/memory/postings.py", "_write_docs"),
    ("  statistics and document frequencies (_count_captured)", "memdb/memory/episodes.py", "_count_captured"),
    ("  pattern counts (Patterns.count)", "memdb/governance/patterns.py", "count"),
)
PROFILE_OPERATIONS: tuple[tuple[str, str, str], ...] = (
    ("Global.increment (get, unpack, pack, put)", "memdb/engine/globals.py", "increment"),
    ("key encode (Global._key, codec)", "memdb/engine/globals.py", "_key"),
    ("value pack (codec.pack_value, msgpack)", "memdb/engine/codec.py", "pack_value"),
    ("value unpack (codec.unpack_value)", "memdb/engine/codec.py", "unpack_value"),
    ("store put (_LMDBWrite.put, put_many)", "memdb/engine/store.py", "put"),
    ("store put (_LMDBWrite.put, put_many)", "memdb/engine/store.py", "put_many"),
    ("  of which LMDB Transaction.put (C)", "~", "<method 'put' of 'Transaction' objects>"),
    ("  of which LMDB Cursor.putmulti (C)", "~", "<method 'putmulti' of 'Cursor' objects>"),
    ("store get (_LMDBWrite.get)", "memdb/engine/store.py", "get"),
    ("transaction machinery (Globals.transaction)", "memdb/engine/globals.py", "_transaction"),
)


def stage_seconds(stats: dict[Any, Any], stages: tuple[tuple[str, str, str], ...]) -> dict[str, float]:
    """Cumulative seconds of each stage's label in cProfile's ``stats`` (0.0 for a label whose
    function never ran: a name gone stale, which ``tests/benchmarks/test_bench_capture.py`` catches)."""
    totals = dict.fromkeys((label for label, _, _ in stages), 0.0)  # in order, once each
    for (filename, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.items():
        for label, suffix, name in stages:
            if func == name and (filename == suffix if suffix == "~" else filename.endswith(suffix)):
                totals[label] += ct
    return totals


def profiled(n: int) -> tuple[dict[Any, Any], float, float]:
    """cProfile's stats of ``n`` episodes recorded in transactions of 1,000 (sync=False), with the
    wall and CPU seconds of the profiled run."""
    eps = episodes(n)
    with tempfile.TemporaryDirectory(prefix="memdb-profile-") as tmp:
        warm = open_memdb(Path(tmp) / "warm", sync=False)  # regex compiling and pydantic set-up: not per episode
        record_memdb(warm, eps[:50], BATCH)
        warm.close()
        db = open_memdb(Path(tmp) / "db", sync=False)
        prof = cProfile.Profile()
        t0, c0 = time.perf_counter(), time.process_time()
        prof.runcall(record_memdb, db, eps, BATCH)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        db.close()
    return pstats.Stats(prof).stats, wall, cpu  # type: ignore[attr-defined]


def profile(n: int) -> str:
    """Where a batched capture of ``n`` episodes spends its time, by stage and by operation."""
    stats, wall, cpu = profiled(n)
    total = next((ct for (f, _, fn), (_, _, _, ct, _) in stats.items() if fn == "record_memdb" and f.endswith("bench_capture.py")), wall)
    head = f"{'':<54}{'cum s':>8}{'µs/ep':>9}{'share':>8}"

    def rows(stages: tuple[tuple[str, str, str], ...]) -> list[str]:
        return [f"{label:<54}{t:>8.2f}{t / n * 1e6:>9.0f}{t / total:>8.0%}" for label, t in stage_seconds(stats, stages).items()]

    return "\n".join([
        f"memdb batched capture under cProfile: {n:,} episodes, {BATCH:,}/txn, sync=False: {wall:.2f} s wall, {cpu:.2f} s CPU",
        "(cProfile adds a fixed cost per Python call, so call-heavy stages look bigger than they are)",
        f"{'by stage':<54}{head[54:]}",
        *rows(PROFILE_STAGES),
        f"{'by operation, all callers':<54}{head[54:]}",
        *rows(PROFILE_OPERATIONS),
    ])  # fmt: skip


def _median_round(rnd: Round, rounds: int) -> Timing:
    times = []
    for _ in range(rounds):
        rnd.setup()
        try:
            t0 = time.perf_counter()
            rnd.run()
            times.append(time.perf_counter() - t0)
        finally:
            rnd.teardown()
    return statistics.median(times), statistics.median(rnd.cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_capture", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds per side (default {ROUNDS})")
    parser.add_argument("--profile", type=int, metavar="N", help="instead, profile memdb's batched capture of N episodes")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile(args.profile))
        return 0
    results: dict[tuple[str, str], Timing] = {}
    with tempfile.TemporaryDirectory(prefix="memdb-bench-") as tmp:
        for group in GROUPS.values():
            for side in group.sides:
                results[group.name, side] = _median_round(Round(Path(tmp), group, side), group.rounds or args.rounds)
                print(f"  {group.name} {side}: {group.episodes / results[group.name, side][0]:,.0f} episodes/s", file=sys.stderr)
    print(format_table(results, SIZES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
