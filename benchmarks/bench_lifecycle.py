"""Lifecycle cost: ``db.maintain(now)`` over a large database with 20% of it due for archiving,
the four cold-storage codecs on the same records, and ``mem.restore(id)`` latency.

Maintain. ``MEMDB_BENCH_LIFECYCLE_N`` (default 1,000,000) episodes of ``benchmarks.agent_data``
(seeded; realistic kinds, tags, sessions and 100-600 characters of text over about two years)
for one owner, imported with ``mem.import_episodes(batch, source="bench")`` in batches of 5,000
into ``memdb.open(path, sync=False, map_size=...)`` with an injected clock standing at the
generator's ``END``. Imported history counts as accessed at the import (DESIGN 5: it is not idle
from its dates), so the clock then moves 31 days on, past the 30 idle days of the archiving rule
for every episode, and ``db.maintain(now=END + 31 days)`` runs once, timed (wall and this
process's CPU time; rescoring changes every score, as the daily run does). The data are shaped so
that exactly every fifth episode is due (relevance < 3.0 and 30+ days without access; none is
accessed after the import):

- due (episode i with i % 5 == 0): the generator's text and tags without ``urgent``. With an
  ordinary tag (weight 0.5) and 31 days idle its relevance is 0.3*5 + 0.2*10*2^(-31/14) + 0.1*5 =
  2.43 (frequency 0, no feedback);
- the other 80%: tagged ``urgent`` (weight 1.0: 0.3*10 + 0.1*5 = 3.5 >= 3.0 whatever the age), kept.

The run must archive exactly the due episodes (asserted), then a second ``maintain`` at the same
``now`` must archive nothing (asserted; timed too). Burst summaries are switched off for this
database (``db.configure(burst_events=1_000_000)``): the generator's sessions are bursts (most
have more than 5 events within minutes), and a first ``maintain`` after a bulk import would
otherwise also write tens of thousands of summaries (which are themselves due when their sources
are), which is a different workload. The burst rule's scan of every header still runs and is
timed; only no window qualifies.

Cold codecs. ``ColdCodec(space, codec).pack(owner, record, hash)`` / ``.unpack(owner, value)``,
the calls the archiver and ``restore`` make, on the same ``MEMDB_BENCH_LIFECYCLE_SAMPLE`` (5,000)
stored records (``^MEM`` values of an import of agent_data episodes). The ``zstd-dict``
dictionary is trained the way memdb trains it, on the owner's first 5,000 records, and the sample
is the records after those, so it is measured on records it has not seen (the ratio a maintained
database actually got, in-sample or not, is printed separately). Ratio = raw msgpack bytes
(``codec.pack_value(record)``) / stored ``data`` bytes; the stored cold value also carries the
codec name, dictionary id, SHA-256 hash and raw size, shown as ``value B/rec``. Pack and unpack
times are ``time.perf_counter_ns`` around each call. Restore: ``mem.restore(id)`` on
``MEMDB_BENCH_LIFECYCLE_RESTORES`` (500) archived episodes of the maintained database, drawn at
random (seeded), one warm-up restore first; each restore is one write transaction (sync off).

Regenerate the results (pytest-benchmark tables, then this module's tables)::

    cd /work/main && MEMDB_BENCH_LIFECYCLE_N=1000000 /tmp/v/bin/python -m pytest benchmarks/bench_lifecycle.py \\
        --benchmark-only -p no:cacheprovider -q --benchmark-columns=median,rounds

or without pytest (the same measurements, the tables only), and where a maintain's time goes
(cProfile of a maintain over 50,000 episodes, cumulative seconds by stage)::

    cd /work/main && MEMDB_BENCH_LIFECYCLE_N=1000000 /tmp/v/bin/python -m benchmarks.bench_lifecycle
    cd /work/main && /tmp/v/bin/python -m benchmarks.bench_lifecycle --profile 50000

Building the database is not timed by the benchmarks but is printed (generation + import). At
1,000,000 episodes on a 2-core machine shared with others (load about 2) the build took 12
minutes and the first ``maintain`` 6.5, about 19 minutes in all; ``MEMDB_BENCH_LIFECYCLE_N=200000``
gives the per-episode costs in 3.5 minutes (the table splits a maintain into a cost per episode
held and one per episode archived, and projects 1,000,000 from them). pytest-benchmark's round of
a codec includes its first pack (for ``zstd-dict``, training the dictionary); the table's
per-record figures leave it out.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import math
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import memdb
from benchmarks import agent_data
from benchmarks.bench_globals import _commit, _machine
from memdb.engine import codec
from memdb.lifecycle.cold import _DICT_MAX_SAMPLES, CODECS, ColdCodec
from memdb.lifecycle.maintain import MaintenanceReport
from memdb.memory.audit import content_hash

N = int(os.environ.get("MEMDB_BENCH_LIFECYCLE_N", "1000000"))
SAMPLE = int(os.environ.get("MEMDB_BENCH_LIFECYCLE_SAMPLE", "5000"))
RESTORES = int(os.environ.get("MEMDB_BENCH_LIFECYCLE_RESTORES", "500"))
PROFILE_N = 50_000
IMPORT_BATCH = 5_000
OWNER = "ana"
SEED = agent_data.SEED
IMPORTED_AT = agent_data.END  # the clock during the import; the generator's episodes all come before it
IDLE_DAYS = 30  # Settings.archive_after_days (default)
NOW = IMPORTED_AT + dt.timedelta(days=IDLE_DAYS + 1)  # the maintain: every imported episode idle past the rule
DUE_EVERY = 5  # every fifth episode is due: 20%
NO_BURSTS = 1_000_000  # burst_events: no session of the generator (at most 40 events) is a burst


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _map_size(n: int) -> int:
    return max(1 << 30, n * 16_384)  # sparse; generous, so the map never grows mid-run


class Clock:
    """The injected clock: stands still at ``at`` until moved."""

    def __init__(self, at: dt.datetime) -> None:
        self.at = at

    def __call__(self) -> dt.datetime:
        return self.at


# --- the workload --------------------------------------------------------------------------------


def shape(ep: dict[str, Any], i: int) -> dict[str, Any]:
    """Make episode ``i`` due (every ``DUE_EVERY``-th: no ``urgent``) or keep it above the
    archiving rule (``urgent``)."""
    tags = [t for t in ep["tags"] if t != "urgent"]
    ep["tags"] = tags if i % DUE_EVERY == 0 else [*tags[:3], "urgent"]
    return ep


def workload(n: int, seed: int = SEED) -> Iterator[list[dict[str, Any]]]:
    """``n`` agent_data episodes in import batches, shaped by ``shape``."""
    i = 0
    for batch in agent_data.batches(n, IMPORT_BATCH, seed, end=IMPORTED_AT):
        for ep in batch:
            shape(ep, i)
            i += 1
        yield batch


def due_count(n: int) -> int:
    return (n + DUE_EVERY - 1) // DUE_EVERY


@dataclass
class Built:
    """A database of ``n`` shaped episodes, its clock, and how long building it took."""

    n: int
    path: Path
    db: memdb.Database
    clock: Clock
    build_s: float
    build_cpu: float

    @property
    def due(self) -> int:
        return due_count(self.n)


def build(path: Path, n: int, log: Callable[[str], None] = lambda s: None) -> Built:
    """Import ``n`` shaped episodes (batches of 5,000, sync off), then move the clock to ``NOW``."""
    clock = Clock(IMPORTED_AT)
    db = memdb.open(path, sync=False, map_size=_map_size(n), clock=clock)
    db.configure(burst_events=NO_BURSTS)
    mem = db.owner(OWNER)
    t0, c0 = time.perf_counter(), time.process_time()
    done = 0
    for batch in workload(n):
        done += mem.import_episodes(batch, source="bench").count
        if done % 100_000 == 0:
            log(f"  imported {done:,} in {time.perf_counter() - t0:,.0f} s")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert mem.count() == n, (mem.count(), n)
    clock.at = NOW
    return Built(n, path, db, clock, wall, cpu)


# --- maintain ------------------------------------------------------------------------------------


@dataclass
class MaintainRun:
    wall: float
    cpu: float
    report: MaintenanceReport


def run_maintain(built: Built) -> MaintainRun:
    """One ``db.maintain(now=NOW)``: wall and CPU seconds, and its report."""
    t0, c0 = time.perf_counter(), time.process_time()
    report = built.db.maintain(now=NOW)
    return MaintainRun(time.perf_counter() - t0, time.process_time() - c0, report)


def check_first(built: Built, run: MaintainRun) -> None:
    r = run.report
    assert r.rescored == built.n, (r.rescored, built.n)
    assert r.archived == built.due, f"archived {r.archived:,}, expected exactly the {built.due:,} due episodes"
    assert r.summaries == 0 and r.purged == 0 and not r.errors, r
    assert built.db.episodes.layout.stats.get((OWNER, "archived")) == built.due


def check_again(built: Built, run: MaintainRun) -> None:
    r = run.report
    assert r.rescored == built.n and r.archived == 0 and r.rescore_changed == 0 and r.summaries == 0, r


# --- restore -------------------------------------------------------------------------------------


def archived_ids(db: memdb.Database, k: int, seed: int = SEED) -> list[str]:
    """``k`` archived episode ids drawn at random (seeded) from ``^EPAR``."""
    ids = [str(subs[2]) for subs, _ in db.episodes.layout.archived.items((OWNER,))]
    return random.Random(seed).sample(ids, min(k, len(ids)))


@dataclass
class Latencies:
    """Per-call nanoseconds, with percentiles in microseconds."""

    ns: list[int] = field(default_factory=list)

    def pct(self, q: float) -> float:
        s = sorted(self.ns)
        return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))] / 1e3 if s else math.nan

    def mean(self) -> float:
        return statistics.fmean(self.ns) / 1e3 if self.ns else math.nan


def time_restores(db: memdb.Database, ids: list[str], out: Latencies) -> float:
    """Restore each id through the public API (``mem.restore``); returns CPU seconds."""
    mem = db.owner(OWNER)
    c0 = time.process_time()
    for eid in ids:
        t0 = time.perf_counter_ns()
        ep = mem.restore(eid)
        out.ns.append(time.perf_counter_ns() - t0)
        assert ep.status == "active"
    return time.process_time() - c0


def cold_ratio(db: memdb.Database) -> dict[str, Any]:
    """What the maintained database's ^COLD holds: codecs, raw and stored bytes."""
    raw = data = value = n = 0
    codecs: dict[str, int] = {}
    for _, v in db.episodes.layout.cold.items((OWNER,)):
        n += 1
        raw += v["raw_bytes"]
        data += len(v["data"])
        value += len(codec.pack_value(v))
        codecs[v["codec"]] = codecs.get(v["codec"], 0) + 1
    return {"n": n, "raw": raw, "data": data, "value": value, "codecs": codecs}


# --- codecs --------------------------------------------------------------------------------------


@dataclass
class CodecResult:
    codec: str
    records: int
    raw: int
    data: int
    value: int
    pack: Latencies
    unpack: Latencies
    first_pack_s: float  # the first pack of an owner: for zstd-dict, reading 5,000 records and training


@dataclass
class Sample:
    """A small database whose owner has ``_DICT_MAX_SAMPLES`` records to train on, then the sample."""

    path: Path
    db: memdb.Database
    records: list[dict[str, Any]]
    hashes: list[str]


def make_sample(path: Path, size: int = SAMPLE, seed: int = SEED + 1) -> Sample:
    db = memdb.open(path, sync=False, map_size=_map_size(size + _DICT_MAX_SAMPLES), clock=Clock(IMPORTED_AT))
    mem = db.owner(OWNER)
    for batch in agent_data.batches(_DICT_MAX_SAMPLES + size, IMPORT_BATCH, seed):
        mem.import_episodes(batch, source="bench")
    stored = [rec for _, rec in db.globals["MEM"].items((OWNER,))]  # key order: what the dictionary trains on comes first
    records = stored[_DICT_MAX_SAMPLES:]
    return Sample(path, db, records, [content_hash(r) for r in records])


def measure_codec(sample: Sample, name: str) -> CodecResult:
    """Pack every sample record with ``name``, then unpack every value (round trip checked)."""
    cold = ColdCodec(sample.db.episodes, name)
    t0 = time.perf_counter()
    cold.pack(OWNER, sample.records[0], sample.hashes[0])  # warm-up; trains zstd-dict's dictionary if there is none
    first = time.perf_counter() - t0
    pack, unpack = Latencies(), Latencies()
    values = []
    clock = time.perf_counter_ns
    for rec, digest in zip(sample.records, sample.hashes, strict=True):
        t = clock()
        v = cold.pack(OWNER, rec, digest)
        pack.ns.append(clock() - t)
        values.append(v)
    assert all(v["codec"] == name for v in values), {v["codec"] for v in values}
    cold.unpack(OWNER, values[0])  # warm-up: the decompressor (and its dictionary) are built once
    for v, rec in zip(values, sample.records, strict=True):
        t = clock()
        back = cold.unpack(OWNER, v)
        unpack.ns.append(clock() - t)
        assert back == rec
    return CodecResult(
        name, len(values), sum(v["raw_bytes"] for v in values), sum(len(v["data"]) for v in values),
        sum(len(codec.pack_value(v)) for v in values), pack, unpack, first,
    )  # fmt: skip


# --- tables --------------------------------------------------------------------------------------


@dataclass
class Results:
    built: dict[str, Any] = field(default_factory=dict)  # n, build_s, build_cpu
    first: MaintainRun | None = None
    again: MaintainRun | None = None
    restore: Latencies = field(default_factory=Latencies)
    restore_cpu: float = 0.0
    cold: dict[str, Any] = field(default_factory=dict)
    codecs: dict[str, CodecResult] = field(default_factory=dict)


RESULTS = Results()


def _layout(head: tuple[str, ...], rows: list[tuple[str, ...]], left: int = 1) -> list[str]:
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    line = "  ".join(("{:<%d}" if i < left else "{:>%d}") % w for i, w in enumerate(widths))
    return [line.format(*head), line.format(*("-" * w for w in widths)), *(line.format(*r) for r in rows)]


def format_tables(res: Results) -> str:
    out = [f"machine: {_machine()}", f"commit:  {_commit()}", f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores shared)"]
    if res.first is not None:
        n = res.built["n"]
        out += [
            "",
            f"maintain over {n:,} episodes (one owner, agent_data, {due_count(n):,} = 20% due), sync=False, "
            f"now = END + {(NOW - IMPORTED_AT).days} days",
            f"build (generate + import_episodes in batches of {IMPORT_BATCH:,}, not timed below): {res.built['build_s']:,.0f} s wall, "
            f"{res.built['build_cpu']:,.0f} s CPU = {res.built['build_s'] / n * 1e6:,.0f} µs/episode",
        ]
        head: tuple[str, ...] = ("run", "wall s", "cpu s", "rescored", "changed", "archived", "µs/episode", "ms/1k archived")
        rows: list[tuple[str, ...]] = []
        for label, run in (("first maintain", res.first), ("again, same now", res.again)):
            if run is None:
                continue
            rep = run.report
            rows.append((
                label, f"{run.wall:,.1f}", f"{run.cpu:,.1f}", f"{rep.rescored:,}", f"{rep.rescore_changed:,}",
                f"{rep.archived:,} ({rep.archived / n:.1%})", f"{run.wall / n * 1e6:,.1f}",
                f"{run.wall / rep.archived * 1e6:,.0f}" if rep.archived else "-",
            ))  # fmt: skip
        out += _layout(head, rows)
        if res.again is not None:
            per_ep = res.again.wall / n  # what a maintain with nothing to archive costs per episode
            per_arch = (res.first.wall - res.again.wall) / max(res.first.report.archived, 1)
            minutes = (per_ep * 1e6 + per_arch * 2e5) / 60
            projected = "" if n == 1_000_000 else f"; at 1,000,000 with 200,000 due: {minutes:,.1f} min projected"
            out.append(
                f"split: {per_ep * 1e6:,.1f} µs per episode held (scans + rescoring: the second run) + "
                f"{per_arch * 1e3:,.2f} ms per archived episode (the difference){projected}"
            )
    if res.cold:
        c = res.cold
        out.append(
            f"cold storage of that database: {c['n']:,} records ({', '.join(f'{k} {v:,}' for k, v in c['codecs'].items())}), "
            f"raw/data {c['raw'] / max(c['data'], 1):.2f}, raw/value {c['raw'] / max(c['value'], 1):.2f}, "
            f"{c['value'] / max(c['n'], 1):,.0f} bytes/record stored (dictionary trained on the records archived first)"
        )
    if res.codecs:
        any_c = next(iter(res.codecs.values()))
        out += [
            "",
            f"cold codecs on the same {any_c.records:,} stored records (held out from the dictionary's training), "
            f"raw msgpack {any_c.raw / any_c.records:,.0f} bytes/record",
            "ratio = raw / data; value = the whole ^COLD value (data + codec, dict id, SHA-256 hash, raw size)",
        ]
        head = ("codec", "ratio", "data B/rec", "value B/rec", "raw/value", "pack µs p50", "pack µs mean",
                "unpack µs p50", "unpack µs p95", "first pack ms")  # fmt: skip
        rows = [
            (
                r.codec, f"{r.raw / r.data:.2f}", f"{r.data / r.records:,.0f}", f"{r.value / r.records:,.0f}", f"{r.raw / r.value:.2f}",
                f"{r.pack.pct(0.5):,.1f}", f"{r.pack.mean():,.1f}", f"{r.unpack.pct(0.5):,.1f}", f"{r.unpack.pct(0.95):,.1f}",
                f"{r.first_pack_s * 1e3:,.0f}",
            )
            for r in res.codecs.values()
        ]  # fmt: skip
        out += _layout(head, rows)
        out.append("first pack: zstd-dict reads the owner's first 5,000 records and trains its 16 KiB dictionary then (once per owner)")
    if res.restore.ns:
        lat = res.restore
        cpu_us = res.restore_cpu / len(lat.ns) * 1e6
        out += [
            "",
            f"mem.restore(id) on {len(lat.ns):,} random archived episodes of the maintained database (a write transaction each, sync off)",
            *_layout(
                ("restore", "p50 µs", "p95 µs", "mean µs", "cpu µs/restore"),
                [("end to end", f"{lat.pct(0.5):,.0f}", f"{lat.pct(0.95):,.0f}", f"{lat.mean():,.0f}", f"{cpu_us:,.0f}")],
            ),
        ]
    return "\n".join(out)


# --- pytest-benchmark ----------------------------------------------------------------------------


class Maintained:
    """The large database, built once per module; the first maintain runs once, whoever asks first."""

    def __init__(self, root: Path) -> None:
        _log(f"\nbuilding {N:,} episodes ...")
        self.built = build(root / "lifecycle", N, _log)
        RESULTS.built = {"n": N, "build_s": self.built.build_s, "build_cpu": self.built.build_cpu}
        _log(f"built in {self.built.build_s:,.0f} s")

    def first(self) -> MaintainRun:
        if RESULTS.first is None:
            RESULTS.first = run_maintain(self.built)
            check_first(self.built, RESULTS.first)
            RESULTS.cold = cold_ratio(self.built.db)
        return RESULTS.first


@pytest.fixture(scope="module")
def maintained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Maintained]:
    m = Maintained(tmp_path_factory.mktemp("bench-lifecycle"))
    yield m
    m.built.db.close()
    shutil.rmtree(m.built.path, ignore_errors=True)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    s = make_sample(tmp_path_factory.mktemp("bench-codecs") / "db")
    yield s
    s.db.close()


@pytest.mark.benchmark(group="lifecycle maintain")
def test_maintain_first(benchmark: Any, maintained: Maintained) -> None:
    """The first maintain: rescoring N episodes, archiving the 20% due."""
    assert RESULTS.first is None, "the first maintain already ran"
    run = benchmark.pedantic(maintained.first, rounds=1, iterations=1)
    benchmark.extra_info.update(episodes=N, archived=run.report.archived, cpu_s=run.cpu)


@pytest.mark.benchmark(group="lifecycle maintain")
def test_maintain_again(benchmark: Any, maintained: Maintained) -> None:
    """The same maintain again at the same now: idempotent, nothing archived."""
    maintained.first()
    run = benchmark.pedantic(run_maintain, args=(maintained.built,), rounds=1, iterations=1)
    check_again(maintained.built, run)
    RESULTS.again = run
    benchmark.extra_info.update(episodes=N, archived=run.report.archived, cpu_s=run.cpu)


@pytest.mark.benchmark(group="lifecycle restore")
def test_restore(benchmark: Any, maintained: Maintained) -> None:
    """``mem.restore(id)`` of random archived episodes, one per round."""
    maintained.first()
    db = maintained.built.db
    ids = archived_ids(db, RESTORES + 1)
    mem = db.owner(OWNER)
    mem.restore(ids.pop())  # warm-up: the decompressor and its dictionary are loaded once
    todo = iter(ids)
    c0 = time.process_time()

    def one() -> None:
        t = time.perf_counter_ns()
        mem.restore(next(todo))
        RESULTS.restore.ns.append(time.perf_counter_ns() - t)

    benchmark.pedantic(one, rounds=len(ids), iterations=1)
    RESULTS.restore_cpu = time.process_time() - c0
    benchmark.extra_info.update(p50_us=RESULTS.restore.pct(0.5), p95_us=RESULTS.restore.pct(0.95))


@pytest.mark.benchmark(group="lifecycle cold codecs")
@pytest.mark.parametrize("name", CODECS)
def test_codec(benchmark: Any, sample: Sample, name: str) -> None:
    """Pack then unpack the sample with one codec (one round; per-record times in the table)."""
    result = benchmark.pedantic(measure_codec, args=(sample, name), rounds=1, iterations=1)
    RESULTS.codecs[name] = result
    benchmark.extra_info.update(ratio=result.raw / result.data, pack_us_p50=result.pack.pct(0.5), unpack_us_p50=result.unpack.pct(0.5))


def test_summary_table(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Print the tables; it times nothing, so it reports as skipped (see bench_capture)."""
    if RESULTS.first or RESULTS.codecs:
        with capsys.disabled():
            print("\n\n" + format_tables(RESULTS) + "\n")
    pytest.skip("lifecycle tables printed above" if RESULTS.first or RESULTS.codecs else "no results to tabulate")


# --- script mode: the measurements, and a profile -----------------------------------------------

# (label, file suffix or "~" for C, function, caller (file suffix, function) or None for all callers)
Stage = tuple[str, str, str, tuple[str, str] | None]
PROFILE_STAGES: tuple[Stage, ...] = (
    ("maintain, total", "memdb/lifecycle.py", "maintain", None),
    ("burst rule: scan of every header (no burst)", "memdb/lifecycle.py", "summarize_bursts", None),
    ("rescoring (EpisodeStore.rescore)", "memdb/episodes.py", "rescore", None),
    ("  header scan (^EPST range, unpack)", "memdb/globals.py", "_scan_items", ("memdb/episodes.py", "rescore")),
    ("  scores (RelevanceModel.score_many, C)", "memdb/relevance.py", "score_many", ("memdb/episodes.py", "rescore")),
    ("  header + band writes (Globals.apply)", "memdb/globals.py", "apply", ("memdb/episodes.py", "rescore")),
    ("archive_due: selection + archiving", "memdb/lifecycle.py", "archive_due", None),
    ("  band scan (^EPB range)", "memdb/globals.py", "_scan_items", ("memdb/lifecycle.py", "archive_due")),
    ("  header read per candidate (Global.get)", "memdb/globals.py", "get", ("memdb/lifecycle.py", "archive_due")),
    ("  archive one episode (Lifecycle.archive)", "memdb/lifecycle.py", "archive", None),
    ("    load record + header (_load)", "memdb/episodes.py", "_load", ("memdb/lifecycle.py", "archive")),
    ("    explanation (RelevanceModel.explain)", "memdb/relevance.py", "explain", None),
    ("    one-line summary (to_episode + one_line)", "memdb/episodes.py", "to_episode", ("memdb/lifecycle.py", "archive")),
    ("    one-line summary (to_episode + one_line)", "memdb/summarize.py", "one_line", None),
    ("    content hash (json.dumps + sha256)", "memdb/episodes.py", "content_hash", ("memdb/lifecycle.py", "archive")),
    ("    compression (ColdCodec.pack)", "memdb/cold.py", "pack", None),
    ("      dictionary lookup per pack (_current_dict)", "memdb/cold.py", "_current_dict", None),
    ("        of which training, once (ColdCodec.train)", "memdb/cold.py", "train", None),
    ("      msgpack of the record (pack_value)", "memdb/codec.py", "pack_value", ("memdb/cold.py", "pack")),
    ("      zstd compress (C)", "~", "<method 'compress' of 'zstandard.backend_c.ZstdCompressor' objects>", None),
    ("    move to cold (OwnerMemory.move_to_cold)", "memdb/episodes.py", "move_to_cold", None),
    ("      reload record + header (_load)", "memdb/episodes.py", "_load", ("memdb/episodes.py", "move_to_cold")),
    ("      hot index entries + postings (_hot_changes)", "memdb/episodes.py", "_hot_changes", ("memdb/episodes.py", "move_to_cold")),
    ("        of which tokenizing (_terms_of)", "memdb/episodes.py", "_terms_of", ("memdb/episodes.py", "_hot_changes")),
    ("      index moves + cold/audit writes (Globals.apply)", "memdb/globals.py", "apply", ("memdb/episodes.py", "move_to_cold")),
    ("      audit id (new_id)", "memdb/episodes.py", "new_id", ("memdb/episodes.py", "move_to_cold")),
    ("      counters + document frequencies (_apply_deferred)", "memdb/globals.py", "_apply_deferred", ("memdb/globals.py", "transaction")),
    ("      LMDB commit, one per archived episode (C)", "~", "<method 'commit' of 'Transaction' objects>", None),
)
PROFILE_OPERATIONS: tuple[Stage, ...] = (
    ("Global.get (a read transaction each outside a txn)", "memdb/globals.py", "get", None),
    ("Global.increment (^EPN, ^EPDF at commit)", "memdb/globals.py", "increment", None),
    ("key encode (Global._key)", "memdb/globals.py", "_key", None),
    ("value pack (codec.pack_value)", "memdb/codec.py", "pack_value", None),
    ("value unpack (codec.unpack_value)", "memdb/codec.py", "unpack_value", None),
    ("LMDB delete_range (store)", "memdb/store.py", "delete_range", None),
    ("LMDB put (store)", "memdb/store.py", "put", None),
)


def _matches(filename: str, suffix: str) -> bool:
    return filename == suffix if suffix == "~" else filename.endswith(suffix)


def _stage_seconds(stats: dict[Any, Any], suffix: str, name: str, caller: tuple[str, str] | None) -> float:
    total = 0.0
    for (filename, _line, func), (_cc, _nc, _tt, ct, callers) in stats.items():
        if func != name or not _matches(filename, suffix):
            continue
        if caller is None:
            total += ct
            continue
        for (cfile, _cline, cfunc), cstats in callers.items():
            if cfunc == caller[1] and cfile.endswith(caller[0]):
                total += cstats[3]  # cumulative time of the calls from this caller
    return total


def _profile_rows(stats: dict[Any, Any], stages: tuple[Stage, ...], archived: int, total: float) -> list[str]:
    totals: dict[str, float] = {}
    for label, suffix, name, caller in stages:
        totals[label] = totals.get(label, 0.0) + _stage_seconds(stats, suffix, name, caller)
    return [f"{label:<58}{s:>8.2f}{s / max(archived, 1) * 1e6:>12.0f}{s / total:>8.0%}" for label, s in totals.items()]


def profile(n: int) -> str:
    """cProfile one ``maintain`` over ``n`` shaped episodes (build not profiled)."""
    with tempfile.TemporaryDirectory(prefix="memdb-bench-lifecycle-") as tmp:
        built = build(Path(tmp) / "db", n)
        try:
            prof = cProfile.Profile()  # wall clock: a CPU-time timer is a system call per event and triples the run
            t0, c0 = time.perf_counter(), time.process_time()
            report = prof.runcall(built.db.maintain, now=NOW)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            check_first(built, MaintainRun(wall, cpu, report))
            audits = [v for v in built.db.episodes.audit.entries(OWNER) if v.get("action") == "archive"]
            t = time.perf_counter_ns()
            audit_bytes = sum(len(codec.pack_value(a)) for a in audits)
            audit_pack_us = (time.perf_counter_ns() - t) / 1e3 / max(len(audits), 1)
        finally:
            built.db.close()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = _stage_seconds(stats, "memdb/lifecycle.py", "maintain", None) or wall
    head = f"{'cum s':>8}{'µs/archived':>12}{'share':>8}"
    return "\n".join([
        f"maintain under cProfile: {n:,} episodes, {report.archived:,} archived, sync=False: {wall:.2f} s wall, {cpu:.2f} s CPU "
        f"({report.rescored:,} rescored, {report.rescore_changed:,} changed)",
        "(cProfile adds a fixed cost per Python call, so call-heavy stages look bigger than they are; on a shared machine,",
        " time the process waits for a CPU lands in whatever runs then: compare two runs; rows at one indent",
        " under one parent do not overlap; µs/archived divides by the archived count even for per-episode stages)",
        f"{'by stage':<58}{head}",
        *_profile_rows(stats, PROFILE_STAGES, report.archived, total),
        f"{'by operation, all callers':<58}{head}",
        *_profile_rows(stats, PROFILE_OPERATIONS, report.archived, total),
        f"audit records: {len(audits):,} archive records, {audit_bytes / max(len(audits), 1):,.0f} bytes each packed, "
        f"{audit_pack_us:.1f} µs each to pack (measured apart; written inside the apply above)",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_lifecycle", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N, help=f"episodes in the maintained database (default {N:,})")
    parser.add_argument(
        "--profile", type=int, nargs="?", const=PROFILE_N, metavar="N", help=f"instead, cProfile a maintain over N episodes ({PROFILE_N:,})"
    )
    parser.add_argument("--skip-maintain", action="store_true", help="only the codec table")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile(args.profile))
        return 0
    log = _log
    with tempfile.TemporaryDirectory(prefix="memdb-bench-lifecycle-") as tmp:
        sample = make_sample(Path(tmp) / "codecs")
        try:
            for name in CODECS:
                RESULTS.codecs[name] = r = measure_codec(sample, name)
                log(f"  {name}: ratio {r.raw / r.data:.2f}, pack p50 {r.pack.pct(0.5):.1f} µs, unpack p50 {r.unpack.pct(0.5):.1f} µs")
        finally:
            sample.db.close()
        if not args.skip_maintain:
            log(f"building {args.n:,} episodes ...")
            built = build(Path(tmp) / "lifecycle", args.n, log)
            RESULTS.built = {"n": args.n, "build_s": built.build_s, "build_cpu": built.build_cpu}
            log(f"built in {built.build_s:,.0f} s; maintain ...")
            try:
                RESULTS.first = run_maintain(built)
                check_first(built, RESULTS.first)
                log(f"  first maintain {RESULTS.first.wall:,.1f} s: {RESULTS.first.report}")
                RESULTS.again = run_maintain(built)
                check_again(built, RESULTS.again)
                log(f"  again {RESULTS.again.wall:,.1f} s")
                RESULTS.cold = cold_ratio(built.db)
                ids = archived_ids(built.db, RESTORES + 1)
                built.db.owner(OWNER).restore(ids.pop())  # warm-up
                RESULTS.restore_cpu = time_restores(built.db, ids, RESULTS.restore)
            finally:
                built.db.close()
    print(format_tables(RESULTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
