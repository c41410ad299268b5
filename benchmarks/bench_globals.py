"""The globals layer against raw py-lmdb doing the same work, measured in the same run.

The data set is ``^MEM(day, id, field)``: 100 days x 2,000 ids x 5 fields = 1,000,000 nodes
(``MEMDB_BENCH_NODES`` changes the count; days fill 10,000 nodes each), values short strings,
ints and lists. The raw baseline stores the same nodes with its own simplest encoding: key
``f"{day}|{id}|{field}".encode()``, value ``msgpack.packb(v)``. Both sides start from the same
logical address ``(day, id, field)`` and return decoded values or subscript tuples, so the
ratio measures what memdb adds: the codec, msgpack options, the store and globals layers.

Regenerate the results (pytest-benchmark tables, then the memdb/raw ratio table)::

    cd /work/main && python -m pytest benchmarks/bench_globals.py --benchmark-only -p no:cacheprovider \\
        --benchmark-columns=median,ops -q

or without pytest (timeit-style medians, same operations, the ratio table only)::

    cd /work/main && python -m benchmarks.bench_globals

Operations (``nodes/call`` in the table):

- ``set-batched``: 100,000 nodes in transactions of 10,000 into an empty directory (a fresh one per round);
- ``get-snapshot``: 10,000 random existing nodes read inside one snapshot / one read transaction;
- ``get-single``: the same 10,000 reads, each in its own read transaction (``g.get`` outside a snapshot);
- ``order-children``: the 2,000 ids of one day, by repeated $ORDER vs a prefix cursor skipping repeats;
- ``items-day``: the 10,000 nodes of one day with values, ``g.items((day,))`` vs a prefix cursor;
- ``query-all``: every node by repeated $QUERY, one call after another as in M, vs one cursor over all keys;
- ``items-all``: every node with its value, ``g.items(())`` vs one cursor with unpack.

Both databases are written with ``sync=False`` (no fsync at commit), so the numbers measure
CPU and page-cache work, not the disk. Both are compacted after the build, before the reads
(``Dataset``: memdb's in-order build leaves half-full pages, raw's does not).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lmdb
import msgpack
import pytest

import memdb

NODES = int(os.environ.get("MEMDB_BENCH_NODES", "1000000"))
SET_NODES = min(100_000, NODES)
BATCH = 10_000
GETS = 10_000
SEED = 20260701
IDS_PER_DAY = 2_000
FIELDS = ("summary", "tags", "decisions", "ts", "relevance")
NODES_PER_DAY = IDS_PER_DAY * len(FIELDS)
FIRST_DAY = _dt.date(2026, 1, 1)
SIDES = ("memdb", "raw")

Node = tuple[str, str, str, Any]
Address = tuple[str, str, str]

# --- the data set ----------------------------------------------------------------------------


def day_name(day: int) -> str:
    return (FIRST_DAY + _dt.timedelta(days=day)).isoformat()


def address(k: int) -> Address:
    """The (day, id, field) of node number ``k``; ids are unique across days."""
    conv, field = divmod(k, len(FIELDS))
    return day_name(k // NODES_PER_DAY), f"conv_{conv:06d}", FIELDS[field]


def node_value(k: int) -> Any:
    conv, field = divmod(k, len(FIELDS))
    name = FIELDS[field]
    if name == "summary":
        return f"user asked about topic {conv % 97}; tried fix {conv % 13}"
    if name == "tags":
        return [f"project-{conv % 7}", "debug"] if conv % 3 else ["routine"]
    if name == "decisions":
        return ["retry", conv % 10]
    if name == "ts":
        return 1_767_225_600 + (k // NODES_PER_DAY) * 86_400 + conv % IDS_PER_DAY * 40
    return conv % 11  # relevance


def iter_nodes(n: int) -> Iterator[Node]:
    for k in range(n):
        yield (*address(k), node_value(k))


def batches(nodes: Iterable[Node], size: int = BATCH) -> Iterator[list[Node]]:
    it = iter(nodes)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _map_size(nodes: int) -> int:
    return max(256 << 20, nodes * 1024)  # generous, so neither side grows its map mid-run


def open_memdb(path: Path, nodes: int) -> memdb.Database:
    return memdb.open(path, map_size=_map_size(nodes), sync=False)


def open_raw(path: Path, nodes: int) -> lmdb.Environment:
    # The same environment options memdb's LMDBStore uses with sync=False.
    return lmdb.open(str(path), map_size=_map_size(nodes), sync=False, metasync=False, readahead=False)


# --- writes ----------------------------------------------------------------------------------


def write_memdb(db: memdb.Database, chunks: Iterable[list[Node]]) -> int:
    g = db.globals["MEM"]
    n = 0
    for chunk in chunks:
        with db.transaction():
            for day, conv, field, value in chunk:
                g[day, conv, field] = value
        n += len(chunk)
    return n


def write_raw(env: lmdb.Environment, chunks: Iterable[list[Node]]) -> int:
    packb = msgpack.packb
    n = 0
    for chunk in chunks:
        with env.begin(write=True) as txn:
            for day, conv, field, value in chunk:
                txn.put(f"{day}|{conv}|{field}".encode(), packb(value))
        n += len(chunk)
    return n


class FreshDir:
    """An empty database directory per round, for the write benchmark's setup/teardown."""

    def __init__(self, root: Path, side: str, nodes: int) -> None:
        self.root, self.side, self.nodes = root, side, nodes
        self.handle: Any = None
        self.path: Path | None = None

    def setup(self) -> tuple[tuple[Any], dict[str, Any]]:
        self.path = Path(tempfile.mkdtemp(prefix=f"set-{self.side}-", dir=self.root))
        self.handle = open_memdb(self.path, self.nodes) if self.side == "memdb" else open_raw(self.path, self.nodes)
        return (self.handle,), {}

    def teardown(self, *_: Any) -> None:
        self.handle.close()
        assert self.path is not None  # set by setup(), which always runs first
        shutil.rmtree(self.path, ignore_errors=True)


SET_CHUNKS: list[list[Node]] = []  # materialised on first use, so generation is never timed
WRITERS: dict[str, Callable[[Any], int]] = {
    "memdb": lambda db: write_memdb(db, SET_CHUNKS),
    "raw": lambda env: write_raw(env, SET_CHUNKS),
}


def set_chunks() -> list[list[Node]]:
    if not SET_CHUNKS:
        SET_CHUNKS.extend(batches(iter_nodes(SET_NODES)))
    return SET_CHUNKS


# --- the read data set -----------------------------------------------------------------------


def _compacted(env: lmdb.Environment, path: Path, nodes: int) -> lmdb.Environment:
    """``env`` copied with LMDB's compaction to ``path`` and reopened there (``env`` closed)."""
    path.mkdir()
    env.copy(str(path), compact=True)
    env.close()
    return open_raw(path, nodes)


class Dataset:
    """Both databases holding the same ``nodes`` nodes, plus the samples every read uses."""

    def __init__(self, root: Path, nodes: int) -> None:
        self.nodes = nodes
        self.db = open_memdb(root / "memdb", nodes)
        self.g = self.db.globals["MEM"]
        self.env = open_raw(root / "raw", nodes)
        self.build_seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        write_memdb(self.db, batches(iter_nodes(nodes)))
        t1 = time.perf_counter()
        write_raw(self.env, batches(iter_nodes(nodes)))
        t2 = time.perf_counter()
        self.build_seconds = {"memdb": t1 - t0, "raw": t2 - t1}
        # Reads run over packed files on both sides. Built in key order, raw's file is packed
        # already (LMDB fills a page to the brim when each key goes at its end), but memdb's is
        # not: its ^META key sorts after ^MEM, so every split of the last leaf leaves a half
        # page, and gets walk twice the pages (126 MB against 63 MB for 1M nodes). Compaction
        # (db.compact(), which appends every item into a fresh file) packs it; raw gets LMDB's
        # compacting copy, which changes nothing in its packed pages but treats both alike.
        self.db.compact()
        self.env = _compacted(self.env, root / "raw-packed", nodes)
        picks = random.Random(SEED).sample(range(nodes), min(GETS, nodes))  # same order for both sides
        self.sample: list[Address] = [address(k) for k in picks]
        self.day = address(nodes // 2)[0]
        self.day_nodes = sum(1 for k in range(nodes) if k // NODES_PER_DAY == nodes // 2 // NODES_PER_DAY)
        self.day_ids = self.day_nodes // len(FIELDS)
        self._check()

    def _check(self) -> None:
        """Both sides hold the same values (a wrong baseline would make every ratio meaningless)."""
        with self.env.begin() as txn:
            for day, conv, field in self.sample[:100]:
                raw = msgpack.unpackb(txn.get(f"{day}|{conv}|{field}".encode()))
                assert self.g[day, conv, field] == raw, (day, conv, field)

    def close(self) -> None:
        self.db.close()
        self.env.close()


# --- reads: each returns how many items it produced, so both sides can be checked equal --------


def get_snapshot_memdb(ds: Dataset) -> int:
    g, n = ds.g, 0
    with ds.db.snapshot():
        for day, conv, field in ds.sample:
            g[day, conv, field]
            n += 1
    return n


def get_snapshot_raw(ds: Dataset) -> int:
    unpackb, n = msgpack.unpackb, 0
    with ds.env.begin() as txn:
        for day, conv, field in ds.sample:
            unpackb(txn.get(f"{day}|{conv}|{field}".encode()))
            n += 1
    return n


def get_single_memdb(ds: Dataset) -> int:
    g, n = ds.g, 0
    for subs in ds.sample:
        if g.get(subs) is not None:
            n += 1
    return n


def get_single_raw(ds: Dataset) -> int:
    unpackb, env, n = msgpack.unpackb, ds.env, 0
    for day, conv, field in ds.sample:
        with env.begin() as txn:
            raw = txn.get(f"{day}|{conv}|{field}".encode())
        if unpackb(raw) is not None:
            n += 1
    return n


def children_memdb(ds: Dataset) -> int:
    return sum(1 for _ in ds.g.children((ds.day,)))


def children_raw(ds: Dataset) -> int:
    prefix = f"{ds.day}|".encode()
    start, last, n = len(prefix), b"", 0
    with ds.env.begin() as txn:
        cur = txn.cursor()
        if cur.set_range(prefix):
            for key in cur.iternext(values=False):
                if not key.startswith(prefix):
                    break
                conv = key[start : key.index(b"|", start)]
                if conv != last:
                    last = conv
                    conv.decode()
                    n += 1
    return n


def items_day_memdb(ds: Dataset) -> int:
    return sum(1 for _ in ds.g.items((ds.day,)))


def items_day_raw(ds: Dataset) -> int:
    prefix, unpackb, n = f"{ds.day}|".encode(), msgpack.unpackb, 0
    with ds.env.begin() as txn:
        cur = txn.cursor()
        if cur.set_range(prefix):
            for key, value in cur.iternext():
                if not key.startswith(prefix):
                    break
                (tuple(key.decode().split("|")), unpackb(value))
                n += 1
    return n


def query_all_memdb(ds: Dataset) -> int:
    g, n = ds.g, 0
    subs = g.query(())
    while subs is not None:
        n += 1
        subs = g.query(subs)
    return n


def query_all_raw(ds: Dataset) -> int:
    n = 0
    with ds.env.begin() as txn:
        for key in txn.cursor().iternext(values=False):
            tuple(key.decode().split("|"))
            n += 1
    return n


def items_all_memdb(ds: Dataset) -> int:
    return sum(1 for _ in ds.g.items(()))


def items_all_raw(ds: Dataset) -> int:
    unpackb, n = msgpack.unpackb, 0
    with ds.env.begin() as txn:
        for key, value in txn.cursor().iternext():
            (tuple(key.decode().split("|")), unpackb(value))
            n += 1
    return n


@dataclass(frozen=True)
class ReadOp:
    group: str
    work: Callable[[Dataset], int]  # items each call produces (the nodes/s numerator)
    memdb: Callable[[Dataset], int]
    raw: Callable[[Dataset], int]
    rounds: int | None = None  # fixed rounds for the whole-database scans; None lets pytest-benchmark calibrate


READ_OPS = {
    op.group: op
    for op in (
        ReadOp("get-snapshot", lambda ds: len(ds.sample), get_snapshot_memdb, get_snapshot_raw),
        ReadOp("get-single", lambda ds: len(ds.sample), get_single_memdb, get_single_raw),
        ReadOp("order-children", lambda ds: ds.day_ids, children_memdb, children_raw),
        ReadOp("items-day", lambda ds: ds.day_nodes, items_day_memdb, items_day_raw),
        ReadOp("query-all", lambda ds: ds.nodes, query_all_memdb, query_all_raw, rounds=3),
        ReadOp("items-all", lambda ds: ds.nodes, items_all_memdb, items_all_raw, rounds=3),
    )
}

# --- the ratio table -------------------------------------------------------------------------

RESULTS: dict[tuple[str, str], float] = {}  # (group, side) -> median seconds per call
WORK: dict[str, int] = {}  # group -> items per call
BUILD: dict[str, float] = {}  # side -> seconds to build the read data set


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return "unknown"
    head = out.stdout.strip() or "no commit yet"
    return head + (" (uncommitted changes)" if dirty.stdout.strip() else "")


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cpus, {platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"py-lmdb {lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))}), msgpack {'.'.join(map(str, msgpack.version))}"
    )


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.2f}"


def _rate(work: int, seconds: float | None) -> str:
    return "-" if not seconds else f"{work / seconds:,.0f}"


def _row(name: str, work: int, m: float | None, r: float | None) -> tuple[str, ...]:
    return (name, f"{work:,}", _ms(m), _ms(r), f"{m / r:.2f}" if m and r else "-", _rate(work, m), _rate(work, r))


def format_table(results: dict[tuple[str, str], float], work: dict[str, int], build: dict[str, float], nodes: int) -> str:
    """A plain-text table: median ms per call and nodes/s for each side, and memdb/raw."""
    head = ("operation", "nodes/call", "memdb ms", "raw ms", "memdb/raw", "memdb nodes/s", "raw nodes/s")
    rows = [_row(f"build {nodes:,} (1 run)", nodes, build.get("memdb"), build.get("raw"))] if build else []
    rows += [_row(g, work[g], results.get((g, "memdb")), results.get((g, "raw"))) for g in ("set-batched", *READ_OPS) if g in work]
    widths = [max(len(str(row[i])) for row in (head, *rows)) for i in range(len(head))]
    line = "  ".join("{:<%d}" % widths[0] if i == 0 else "{:>%d}" % w for i, w in enumerate(widths))  # noqa: UP031
    out = [
        f"memdb vs raw py-lmdb, {nodes:,} nodes ^MEM(day,id,field); medians",
        f"machine: {_machine()}",
        f"commit:  {_commit()}",
        line.format(*head),
        line.format(*("-" * w for w in widths)),
    ]
    out += [line.format(*row) for row in rows]
    return "\n".join(out)


# --- pytest-benchmark ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dataset]:
    ds = Dataset(tmp_path_factory.mktemp("bench-globals"), NODES)
    BUILD.update(ds.build_seconds)
    yield ds
    ds.close()


def _record(benchmark: Any, group: str, side: str, work: int) -> None:
    WORK[group] = work
    benchmark.extra_info["nodes_per_call"] = work
    if benchmark.stats:  # None or empty with --benchmark-disable
        median = benchmark.stats.stats.median
        RESULTS[group, side] = median
        benchmark.extra_info["nodes_per_s"] = work / median


def _bench_read(benchmark: Any, ds: Dataset, group: str, side: str) -> None:
    op = READ_OPS[group]
    fn = op.memdb if side == "memdb" else op.raw
    if op.rounds:
        produced = benchmark.pedantic(fn, args=(ds,), rounds=op.rounds)
    else:
        produced = benchmark(fn, ds)
    assert produced == op.work(ds), f"{group} {side}: produced {produced} items, expected {op.work(ds)}"
    _record(benchmark, group, side, produced)


@pytest.mark.benchmark(group="set-batched")
@pytest.mark.parametrize("side", SIDES)
def test_set_batched(benchmark: Any, tmp_path: Path, side: str) -> None:
    set_chunks()
    fresh = FreshDir(tmp_path, side, SET_NODES)
    written = benchmark.pedantic(WRITERS[side], setup=fresh.setup, teardown=fresh.teardown, rounds=3)
    assert written == SET_NODES
    _record(benchmark, "set-batched", side, SET_NODES)


@pytest.mark.benchmark(group="get-snapshot")
@pytest.mark.parametrize("side", SIDES)
def test_get_snapshot(benchmark: Any, data: Dataset, side: str) -> None:
    _bench_read(benchmark, data, "get-snapshot", side)


@pytest.mark.benchmark(group="get-single")
@pytest.mark.parametrize("side", SIDES)
def test_get_single(benchmark: Any, data: Dataset, side: str) -> None:
    _bench_read(benchmark, data, "get-single", side)


@pytest.mark.benchmark(group="order-children")
@pytest.mark.parametrize("side", SIDES)
def test_order_children(benchmark: Any, data: Dataset, side: str) -> None:
    _bench_read(benchmark, data, "order-children", side)


@pytest.mark.benchmark(group="items-day")
@pytest.mark.parametrize("side", SIDES)
def test_items_day(benchmark: Any, data: Dataset, side: str) -> None:
    _bench_read(benchmark, data, "items-day", side)


@pytest.mark.benchmark(group="query-all")
@pytest.mark.parametrize("side", SIDES)
def test_query_all(benchmark: Any, data: Dataset, side: str) -> None:
    _bench_read(benchmark, data, "query-all", side)


@pytest.mark.benchmark(group="items-all")
@pytest.mark.parametrize("side", SIDES)
def test_items_all(benchmark: Any, data: Dataset, side: str) -> None:
    _bench_read(benchmark, data, "items-all", side)


def test_ratio_table(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Print the memdb/raw table for the groups that ran; it times nothing, so it reports as skipped.

    It takes the ``benchmark`` fixture only so that ``--benchmark-only`` keeps it; skipping
    is how pytest-benchmark accepts a fixture that was never called.
    """
    if RESULTS:
        with capsys.disabled():
            print("\n\n" + format_table(RESULTS, WORK, BUILD, NODES) + "\n")
    pytest.skip("memdb/raw ratio table printed above" if RESULTS else "no benchmark results to tabulate")


# --- script mode -----------------------------------------------------------------------------


def _median_time(fn: Callable[..., Any], repeat: int, fresh: FreshDir | None = None) -> float:
    """Median wall time of ``repeat`` calls; with ``fresh``, each call gets a new empty database."""
    times = []
    for _ in range(repeat):
        args = fresh.setup()[0] if fresh else ()
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
        if fresh:
            fresh.teardown()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_globals", description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per operation for the short ones (default 7)")
    parser.add_argument("--repeat-large", type=int, default=3, help="runs for the writes and whole-database scans (default 3)")
    args = parser.parse_args(argv)
    results: dict[tuple[str, str], float] = {}
    work: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="memdb-bench-") as tmp:
        root = Path(tmp)
        set_chunks()
        work["set-batched"] = SET_NODES
        for side in SIDES:
            results["set-batched", side] = _median_time(WRITERS[side], args.repeat_large, FreshDir(root, side, SET_NODES))
        print(f"building {NODES:,} nodes on each side...", file=sys.stderr)
        ds = Dataset(root / "read", NODES)
        try:
            for group, op in READ_OPS.items():
                work[group] = op.work(ds)
                for side in SIDES:
                    fn = op.memdb if side == "memdb" else op.raw
                    results[group, side] = _median_time(lambda fn=fn: fn(ds), args.repeat_large if op.rounds else args.repeat)
                print(f"  {group} done", file=sys.stderr)
        finally:
            ds.close()
    print(format_table(results, work, ds.build_seconds, NODES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
