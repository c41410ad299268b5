"""LMDB against PostgreSQL (loopback) under the same memdb code, measured in the same run.

Three parts, each reported as ``postgres/lmdb`` ratios of medians, with the round trips a
Postgres call costs (``PostgresStore.round_trips``; the median over draws for queries):

- globals: the operations of ``benchmarks.bench_globals`` (its memdb side, unchanged) over
  ``MEMDB_BENCH_NODES`` nodes ``^MEM(day, id, field)`` (default 50,000; 2,000 random gets);
- query: the ``recall`` / ``ask`` shapes of ``benchmarks.bench_query`` (its memdb side and
  its seeded draws) over ``MEMDB_BENCH_EPISODES`` episodes of ``benchmarks.agent_data``
  (default 5,000, imported in batches of 1,000; 50 draws per shape after 10 warm-ups);
- writers: 1, 2 and 4 processes recording typed episodes (``record``, each its own
  transaction with its indexes and counters) into one database at once for ``--seconds``
  (default 5) each; the aggregate episodes/s, then ``db.check()`` on the result.

Both backends run without waiting for the disk at commit: LMDB with ``sync=False``, the
Postgres cluster with ``synchronous_commit=off`` (``--durable``: LMDB ``sync=True`` and
Postgres ``synchronous_commit=on``, ``fsync=on``). The Postgres server is a throwaway cluster
started by ``tests/postgres_server.py`` on a free loopback port, or ``--url`` to use one's own
(the tables ``bench_*`` are dropped first). Client and server share the machine's cores.

Regenerate::

    cd /work/main && /tmp/v/bin/python -m benchmarks.bench_backends
    cd /work/main && /tmp/v/bin/python -m benchmarks.bench_backends --durable
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import memdb
from benchmarks import agent_data, bench_globals, bench_query
from memdb.engine.postgres import PostgresStore

BACKENDS = ("lmdb", "postgres")
NODES = int(os.environ.get("MEMDB_BENCH_NODES", "50000"))
GETS = 2_000
EPISODES = int(os.environ.get("MEMDB_BENCH_EPISODES", "5000"))
IMPORT_BATCH = 1_000
DRAWS, WARMUP = 50, 10
WRITERS = (1, 2, 4)
MAP_SIZE = 1 << 30


@dataclass
class Place:
    """Where one backend's databases live: a directory for LMDB, a server for Postgres."""

    backend: str
    root: Path
    url: str
    durable: bool

    def open(self, name: str) -> memdb.Database:
        if self.backend == "lmdb":
            return memdb.open(self.root / name, map_size=MAP_SIZE, sync=self.durable)
        return memdb.open(self.url, name=f"bench_{name}")

    def trips(self, db: memdb.Database) -> int:
        store = db.store
        return store.round_trips if isinstance(store, PostgresStore) else 0


def _drop_bench_tables(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        names = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'bench\\_%'").fetchall()]
        for name in names:
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def _median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# --- globals -----------------------------------------------------------------------------------


class GlobalsData:
    """The duck type bench_globals' memdb functions read: ``db``, ``g``, ``sample``, ``day``..."""

    def __init__(self, place: Place, nodes: int) -> None:
        self.nodes = nodes
        self.db = place.open("globals")
        self.g = self.db.globals["MEM"]
        self.g.kill(())
        t0 = time.perf_counter()
        bench_globals.write_memdb(self.db, bench_globals.batches(bench_globals.iter_nodes(nodes)))
        self.build_seconds = time.perf_counter() - t0
        picks = random.Random(bench_globals.SEED).sample(range(nodes), min(GETS, nodes))
        self.sample = [bench_globals.address(k) for k in picks]
        mid = nodes // 2 // bench_globals.NODES_PER_DAY
        self.day = bench_globals.address(nodes // 2)[0]
        self.day_nodes = sum(1 for k in range(nodes) if k // bench_globals.NODES_PER_DAY == mid)
        self.day_ids = self.day_nodes // len(bench_globals.FIELDS)


GLOBAL_OPS: dict[str, tuple[Callable[[Any], int], int]] = {  # name -> (memdb function, repeats)
    "get-snapshot": (bench_globals.get_snapshot_memdb, 5),
    "get-single": (bench_globals.get_single_memdb, 5),
    "order-children": (bench_globals.children_memdb, 5),
    "items-day": (bench_globals.items_day_memdb, 5),
    "items-all": (bench_globals.items_all_memdb, 3),
    "query-all": (bench_globals.query_all_memdb, 1),
}


def bench_globals_part(places: dict[str, Place], nodes: int, log: Callable[[str], None]) -> list[Row]:
    rows: list[Row] = []
    data = {}
    for backend, place in places.items():
        log(f"globals: building {nodes:,} nodes on {backend}")
        data[backend] = GlobalsData(place, nodes)
    rows.append(Row("build (1 run)", nodes, {b: d.build_seconds for b, d in data.items()}, {}))
    for name, (fn, repeat) in GLOBAL_OPS.items():
        seconds: dict[str, float] = {}
        trips: dict[str, float] = {}
        work = 0
        for backend, ds in data.items():
            before = places[backend].trips(ds.db)
            work = fn(ds)
            trips[backend] = places[backend].trips(ds.db) - before

            # A def rather than ``lambda fn=fn, ds=ds: fn(ds)``, which mypy cannot type (python/mypy#12557); same call, same binding.
            def call(fn: Callable[[Any], int] = fn, ds: GlobalsData = ds) -> int:
                return fn(ds)

            seconds[backend] = _median_time(call, repeat)
        rows.append(Row(name, work, seconds, trips))
        log(f"globals: {name} done")
    for ds in data.values():
        ds.db.close()
    return rows


# --- query -------------------------------------------------------------------------------------


class QueryData:
    """The duck type bench_query's draws and memdb calls read: ``size``, ``info``, ``team``."""

    def __init__(self, place: Place, size: int) -> None:
        self.size = size
        self.db = place.open("query")
        tag_counts: Counter[str] = Counter()
        t0 = time.perf_counter()
        for owner, n, seed in ((bench_query.OWNER, size, agent_data.SEED), (bench_query.OTHER, 500, agent_data.SEED + 1)):
            mem = self.db.owner(owner)
            if mem.count():
                raise SystemExit(f"bench_backends: the {place.backend} query database is not empty")
            for chunk in agent_data.batches(n, IMPORT_BATCH, seed):
                mem.import_episodes(chunk, source="bench")
                if owner == bench_query.OWNER:
                    tag_counts.update(t for ep in chunk for t in ep["tags"])
        self.build_seconds = time.perf_counter() - t0
        self.info = {"tag_counts": dict(tag_counts.most_common())}

    @property
    def team(self) -> Any:
        return self.db.owner(bench_query.OWNER)


def bench_query_part(places: dict[str, Place], size: int, log: Callable[[str], None]) -> list[Row]:
    data = {}
    for backend, place in places.items():
        log(f"query: importing {size:,} episodes on {backend}")
        data[backend] = QueryData(place, size)
    rows = [Row("import (1 run)", size, {b: d.build_seconds for b, d in data.items()}, {})]
    for i, shape in enumerate(bench_query.SHAPES):
        seconds, trips, totals = {}, {}, {}
        for backend, ds in data.items():
            draws = bench_query.make_draws(shape, ds, agent_data.SEED + 101 * i, DRAWS)  # type: ignore[arg-type]
            warm = bench_query.make_draws(shape, ds, agent_data.SEED + 7 + 101 * i, WARMUP)  # type: ignore[arg-type]
            call = bench_query.memdb_call(shape, ds)  # type: ignore[arg-type]
            for d in warm:
                call(d)
            lat, got, rts = [], [], []
            for d in draws:
                before = places[backend].trips(ds.db)
                t0 = time.perf_counter()
                got.append(call(d))
                lat.append(time.perf_counter() - t0)
                rts.append(places[backend].trips(ds.db) - before)
            trips[backend] = statistics.median(rts)
            seconds[backend] = statistics.median(lat)
            totals[backend] = got
        assert totals["lmdb"] == totals["postgres"], f"{shape}: the backends found different totals"
        rows.append(Row(shape, 1, seconds, trips))
        log(f"query: {shape} done")
    for ds in data.values():
        ds.db.close()
    return rows


# --- concurrent writers --------------------------------------------------------------------------


def _writer(place: Place, name: str, me: int, start: Any, stop_at: Any, out: Any) -> None:
    db = place.open(name)
    mem = db.owner("team")
    rng = random.Random(me)
    words = agent_data.NOUNS[:200]
    first = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    out.put(("ready", me))
    start.wait()
    n = 0
    while time.time() < stop_at.value:
        text = " ".join(rng.choice(words) for _ in range(12))
        tag = rng.choice(agent_data.TAGS[:30])
        mem.record(
            "debug", f"writer {me}: {text}", outcome="failure", tags=[tag], lesson=text, ts=first + dt.timedelta(seconds=n * 10 + me)
        )
        n += 1
    db.close()
    out.put(("done", n))


def bench_writers_part(places: dict[str, Place], seconds: float, log: Callable[[str], None]) -> list[Row]:
    ctx = multiprocessing.get_context("spawn")  # no inherited connections or LMDB environments
    rows = []
    for procs in WRITERS:
        rates = {}
        for backend, place in places.items():
            name = f"writers{procs}"
            place.open(name).close()  # create before the race
            start, out = ctx.Event(), ctx.Queue()
            stop_at = ctx.Value("d", 0.0)
            workers = [ctx.Process(target=_writer, args=(place, name, i, start, stop_at, out)) for i in range(procs)]
            for w in workers:
                w.start()
            try:
                for _ in workers:  # every process imported and connected: only then the clock starts
                    assert out.get(timeout=120)[0] == "ready"
                stop_at.value = time.time() + seconds
                start.set()
                counts = [int(out.get(timeout=seconds + 120)[1]) for _ in workers]
            finally:
                for w in workers:
                    w.join(timeout=60)
                    if w.is_alive():
                        w.kill()
            rates[backend] = sum(counts) / seconds
            with place.open(name) as db:
                report = db.check()
                assert report.ok and report.episodes == sum(counts), (report.problems[:5], report.episodes, sum(counts))
        rows.append(Row(f"{procs} writer{'s' if procs > 1 else ''}", 1, rates, {}, per="eps/s"))
        log(f"writers: {procs} done")
    return rows


# --- tables --------------------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    work: int
    value: dict[str, float]  # seconds per call, or a rate when per == "eps/s"
    trips: dict[str, float]  # Postgres round trips per unit
    per: str = ""

    def cells(self) -> tuple[str, ...]:
        lm, pg = self.value.get("lmdb"), self.value.get("postgres")
        if self.per == "eps/s":
            ratio = f"{lm / pg:.1f}x slower" if lm and pg else "-"
            return (self.name, "-", f"{lm:,.0f}/s" if lm else "-", f"{pg:,.0f}/s" if pg else "-", ratio, "-")
        ratio = f"{pg / lm:.1f}" if lm and pg else "-"
        trips = self.trips.get("postgres")
        trip_cell = "-" if trips is None else f"{trips:,.0f}"
        return (self.name, f"{self.work:,}", _ms(lm), _ms(pg), ratio, trip_cell)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.3f}" if seconds < 0.01 else f"{seconds * 1e3:,.1f}"


def format_table(title: str, rows: list[Row], head: tuple[str, ...]) -> str:
    cells = [r.cells() for r in rows]
    widths = [max(len(str(c[i])) for c in (head, *cells)) for i in range(len(head))]
    line = "  ".join("{:<%d}" % widths[0] if i == 0 else "{:>%d}" % w for i, w in enumerate(widths))  # noqa: UP031
    out = [title, line.format(*head), line.format(*("-" * w for w in widths))]
    out += [line.format(*c) for c in cells]
    return "\n".join(out)


def _server(durable: bool, url: str | None) -> tuple[str, Callable[[], None]]:
    if url:
        _drop_bench_tables(url)
        return url, lambda: None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from postgres_server import PostgresServer  # type: ignore[import-not-found]  # lives in tests/, put on sys.path just above

    server = PostgresServer(durable=durable).start()
    return server.url, server.stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_backends", description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an existing server (libpq URL) instead of a throwaway cluster")
    parser.add_argument("--durable", action="store_true", help="commits wait for the disk on both backends")
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each concurrent-writer run (default 5)")
    parser.add_argument("--parts", default="globals,query,writers", help="comma-separated subset of globals,query,writers")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    url, stop = _server(args.durable, args.url)
    out = []
    try:
        with tempfile.TemporaryDirectory(prefix="memdb-bench-backends-") as tmp:
            places = {b: Place(b, Path(tmp), url, args.durable) for b in BACKENDS}
            mode = "durable commits" if args.durable else "commits without waiting for the disk"
            out.append(f"memdb on LMDB vs PostgreSQL (loopback), {mode}")
            out.append(f"machine: {bench_globals._machine()}; server: {_server_version(url)}")
            out.append(f"commit:  {bench_globals._commit()}")
            head = ("operation", "items", "lmdb ms", "postgres ms", "pg/lmdb", "pg round trips/call")
            if "globals" in parts:
                rows = bench_globals_part(places, NODES, log)
                out.append("\n" + format_table(f"globals, {NODES:,} nodes; medians per call", rows, head))
            if "query" in parts:
                rows = bench_query_part(places, EPISODES, log)
                title = f"query, {EPISODES:,} episodes; median latency (and round trips) of {DRAWS} draws per shape"
                out.append("\n" + format_table(title, rows, head))
            if "writers" in parts:
                rows = bench_writers_part(places, args.seconds, log)
                whead = ("writer processes", "-", "lmdb", "postgres", "lmdb/pg", "-")
                title = f"concurrent writers, record() for {args.seconds:g} s; episodes/s, all processes"
                out.append("\n" + format_table(title, rows, whead))
    finally:
        stop()
    print("\n".join(out))
    return 0


def _server_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        return str(conn.execute("SHOW server_version").fetchall()[0][0])


if __name__ == "__main__":
    sys.exit(main())
