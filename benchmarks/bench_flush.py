"""The access flush: what counting reads costs, memdb against SQLite doing the same update.

Every read counts as an access (DESIGN 5: relevance follows use). memdb buffers accesses and
writes them in one transaction every ``access_flush_every`` (256) reads, inside the read that
fills the batch, so that read pays for it: the flush is the tail of a question's latency.

Data: ``--n`` (default ``MEMDB_BENCH_FLUSH_N`` or 200,000) episodes of ``benchmarks.agent_data``
for one owner, imported in batches of 5,000 (``memdb.open(sync=False)``), then reopened with the
default ``sync=True`` (committed means on disk). Each round reads 256 episodes drawn at random (seeded)
with ``get`` and times ``db.flush()``: the headers' access counts and relevance, the level chunks
of their text documents and the band entries that move, in one transaction with its fsync.

Baseline: SQLite (stdlib ``sqlite3``, WAL, ``synchronous=FULL``, so a commit is on disk as
memdb's is) holding the same episodes in a table with memdb's indexes (time, tag, kind+outcome,
session and a relevance index), and the same update: ``UPDATE ... SET access_count, last_access,
relevance`` of the same 256 rows in one transaction. SQLite keeps relevance in one column and its
index; memdb's indexes hold document numbers, so a flush rewrites no index entry
(``docs/search-core.md``).

Regenerate the committed table (``benchmarks/results/flush.md``)::

    python -m benchmarks.bench_flush

It builds in a temporary directory (about 0.5 GB at the default size), removed at the end, on
Ctrl-C and on SIGTERM (``timeout``, a CI runner's cancel) alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import memdb
from benchmarks import agent_data

N = int(os.environ.get("MEMDB_BENCH_FLUSH_N", "200000"))
ROUNDS = int(os.environ.get("MEMDB_BENCH_FLUSH_ROUNDS", "12"))
READS = 256  # memdb's default access_flush_every
SEED = 20261202


def build_memdb(path: Path, n: int) -> list[str]:
    """``n`` episodes imported into a memdb database at ``path``; their ids, in time order."""
    with memdb.open(path, sync=False) as db:
        owner = db.owner("team")
        for batch in agent_data.batches(n):
            owner.import_episodes(batch, source="bench")
        return [str(subs[2]) for subs, _ in db.globals["EPT"].items(("team",))]


def build_sqlite(path: Path, n: int) -> int:
    """The same ``n`` episodes in SQLite, with memdb's indexes; how many rows."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;
        CREATE TABLE episodes(id INTEGER PRIMARY KEY, ts TEXT, kind TEXT, outcome TEXT, session TEXT,
            summary TEXT, content TEXT, relevance REAL, access_count INTEGER, last_access TEXT);
        CREATE TABLE tags(tag TEXT, ts TEXT, id INTEGER, PRIMARY KEY(tag, ts, id)) WITHOUT ROWID;
        CREATE INDEX by_ts ON episodes(ts);
        CREATE INDEX by_kind ON episodes(kind, outcome, ts);
        CREATE INDEX by_session ON episodes(session, ts);
        CREATE INDEX by_relevance ON episodes(relevance, ts);
        """
    )
    rows = 0
    for batch in agent_data.batches(n):
        with con:
            for ep in batch:
                rows += 1
                ts = ep["ts"].isoformat()
                con.execute(
                    "INSERT INTO episodes VALUES (?,?,?,?,?,?,?,?,0,NULL)",
                    (rows, ts, ep["kind"], ep.get("outcome"), ep.get("session"), ep["summary"], ep.get("content"), 5.0),
                )
                con.executemany("INSERT OR IGNORE INTO tags VALUES (?,?,?)", [(t, ts, rows) for t in ep.get("tags", ())])
    con.close()
    return rows


def time_memdb(path: Path, ids: list[str], rounds: int) -> list[float]:
    """ms of each round's flush of ``READS`` random reads."""
    rng = random.Random(SEED)
    out = []
    with memdb.open(path) as db:
        db.configure(access_flush_every=10**9)  # flushed by hand below, once a round
        owner = db.owner("team")
        for _ in range(rounds):
            for eid in rng.sample(ids, READS):
                owner.get(eid)
            t0 = time.perf_counter_ns()
            db.flush()
            out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def time_sqlite(path: Path, rows: int, rounds: int) -> list[float]:
    """ms of each round's update of ``READS`` random rows, in one synced transaction."""
    rng = random.Random(SEED)
    con = sqlite3.connect(path)
    con.execute("PRAGMA synchronous=FULL")
    out = []
    for _ in range(rounds):
        picked = rng.sample(range(1, rows + 1), READS)
        now = time.time()
        t0 = time.perf_counter_ns()
        with con:
            con.executemany(
                "UPDATE episodes SET access_count = access_count + 1, last_access = ?, relevance = relevance + ? WHERE id = ?",
                [(str(now), rng.random(), i) for i in picked],
            )
        out.append((time.perf_counter_ns() - t0) / 1e6)
    con.close()
    return out


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Terminated(SystemExit):
    """SIGTERM as an exception, so the ``finally`` that removes the build directory runs."""


@contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """SIGTERM raises ``Terminated`` (exit 143, as the signal's) for the block: by default it
    ends the process at once and left the 0.5 GB build directory in /tmp
    (tests/benchmarks/test_bench_flush.py)."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set a handler
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(n: int = N, rounds: int = ROUNDS) -> dict[str, Any]:
    """Build ``n`` episodes on both sides, time ``rounds`` flushes each, print the table."""
    with _terminate_as_exit():
        work = Path(tempfile.mkdtemp(prefix="memdb-bench-flush-"))
        try:
            started = time.perf_counter()
            ids = build_memdb(work / "memdb", n)
            built = time.perf_counter() - started
            rows = build_sqlite(work / "sqlite.db", n)
            print(f"built {len(ids):,} episodes (memdb {built:.0f} s) and {rows:,} SQLite rows", file=sys.stderr)
            memdb_ms = time_memdb(work / "memdb", ids, rounds)
            sqlite_ms = time_sqlite(work / "sqlite.db", rows, rounds)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    m, s = statistics.median(memdb_ms), statistics.median(sqlite_ms)
    lines = [
        f"access flush of {READS} random reads, {n:,} episodes, {rounds} rounds, fsync at commit; ms",
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}; commit {_commit()}",
        "side     p50      max      memdb/sqlite p50",
        f"memdb    {m:7.1f}  {max(memdb_ms):7.1f}  {m / s:.2f}x",
        f"sqlite   {s:7.1f}  {max(sqlite_ms):7.1f}",
    ]
    print("\n".join(lines))
    return {"memdb_ms": memdb_ms, "sqlite_ms": sqlite_ms}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_flush", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=N, help="episodes on each side (default %(default)s, or $MEMDB_BENCH_FLUSH_N)")
    rounds_help = "flushes timed on each side (default %(default)s, or $MEMDB_BENCH_FLUSH_ROUNDS)"
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=rounds_help)
    args = parser.parse_args(argv)
    if args.n < READS:
        parser.error(f"--n {args.n}: each round reads {READS} distinct episodes (give at least {READS})")
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: at least 1")
    run(args.n, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
