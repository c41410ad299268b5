"""Text top-10 with the total: memdb ``recall(text=...)`` against tantivy, SQLite FTS5 and bm25s, same run.

Data: the episodes of ``benchmarks.bench_query`` at each size of ``--sizes`` (default
``100000,1000000``): ``benchmarks.agent_data`` episodes of the owner ``team`` (plus 500 of
``solo``, so memdb must scope by owner), memdb built and cached by ``bench_query.load``
(``MEMDB_BENCH_CACHE=/some/dir`` keeps and reuses it, with its build time as recorded then).
The baselines index the same ``team`` episodes as memdb stored them (read back through
``team.episodes()``: capture's sanitizer rewrites a few summaries, e.g. ``Project X Auth: Checked``
becomes ``<SECRET_1>``, so the generated text is not quite what memdb holds), one document each
holding exactly memdb's terms of the episode (``memdb.memory.text.tokenize`` of
``agent_data.indexed_text``: text fields and tags, folded, stemmed, stopwords dropped), so every
side matches the same episodes:

- ``tantivy`` (tantivy-py): one text field analysed by a whitespace tokenizer and nothing else
  (``index_option="freq"``: BM25 needs no positions), one writer thread; a ``BooleanQuery`` of
  ``SHOULD`` term queries, ``searcher.search(query, 10, count=True)``: the top 10 and ``.count``;
- ``sqlite-fts5``: a contentless FTS5 table (``unicode61``, as ``bench_query``), in a file of its
  own; ``... MATCH 'a OR b' ORDER BY rank LIMIT 10`` (rank is ``bm25()``) plus
  ``SELECT count(*) ... MATCH``;
- ``bm25s`` (numpy backend): ``retrieve([terms], k=10)``; bm25s has no count, so the total is
  the number of documents under any query term in its own sparse score matrix (the doc ids of
  each term's column set in a boolean mask, then ``np.count_nonzero``): what it stores, no second
  scoring pass, about 0.04 ms at 100k;
- ``memdb``: the public API, ``team.recall(text=q, limit=10, now=END)``, taking ``.total``.

The baselines' build times exclude reading the episodes back and running memdb's tokenizer (both
shown apart, done once for all), and each baseline indexes in a phase of its own (tantivy's
threads never run inside another side's timing); memdb's build is ``import_episodes`` of whole
episodes (every index, not only text), and its size is the whole database. Queries: ``bench_query``'s ``text`` draws, 200 seeded two-word
queries ``"<noun> <verb|adjective>"`` of mid-frequency words, any term matching, plus 20 warm-up
draws from another seed, run per side; the sides take turns ``--rounds`` times (default 3) and
each keeps its round of lowest p50, as the machine is shared. The baselines get the query's terms already tokenized
(their calls start from the term list); memdb gets the text. Latency is ``perf_counter_ns``
around each call, p50/p95 nearest-rank over the draws; ``cpu`` is the calling thread's CPU time
(``thread_time_ns``) of the same calls, which a shared machine's load disturbs far less. Every side's total must equal memdb's
on every draw: the table counts agreement, and the run exits 1 if any side disagrees.

Regenerate the committed table (``benchmarks/results/text.md``)::

    cd /work/main && MEMDB_BENCH_CACHE=/tmp/memdb-bench .venv/bin/python -m benchmarks.bench_text --sizes 100000,1000000

(``--sides``, ``--rounds``, ``--md`` and ``--note`` are described by ``--help``.)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import itertools
import json
import os
import resource
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import agent_data
from benchmarks import bench_query as bq
from benchmarks.bench_globals import _machine
from memdb import Episode, native
from memdb.memory import text as memdb_text
from memdb.memory.text import tokenize

SIZES = (100_000, 1_000_000)
LIMIT = 10
BASELINES = ("tantivy", "sqlite-fts5", "bm25s")
SIDES = ("memdb", *BASELINES)
TEXT_VERSION = 1  # bump when the baselines' layout here changes
RESULTS_MD = Path(__file__).resolve().parent / "results" / "text.md"
TANTIVY_ANALYZER = "memdb_terms"
TANTIVY_HEAP = 256_000_000
FTS_SCHEMA = "CREATE VIRTUAL TABLE docs USING fts5(body, content='', tokenize='unicode61')"
TARGETS = {"tantivy": 10.0, "sqlite-fts5": 0.2}  # issue 20: memdb p50 at most 10x tantivy's, 0.2x SQLite FTS5's


def _text_key() -> str:
    """bench_query's key plus memdb's tokenizer and this layout: what decides the baselines' bytes."""
    h = hashlib.sha1(f"{bq.CODE_KEY}-t{TEXT_VERSION}".encode())
    h.update(Path(memdb_text.__file__).read_bytes())
    return f"t{TEXT_VERSION}-{h.hexdigest()[:10]}"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def have(side: str) -> bool:
    """Whether a baseline's package imports (a missing one is skipped with a warning, never faked)."""
    module = {"tantivy": "tantivy", "bm25s": "bm25s"}.get(side)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def terms_of(episode: Episode) -> list[str]:
    """The terms memdb's inverted index holds for a stored episode, in order (repeats kept: they are
    term frequencies). Read back, not generated: capture's sanitizer may have rewritten some text."""
    fields: dict[str, Any] = {f: getattr(episode, f, None) for f in agent_data._INDEXED_FIELDS}
    return tokenize(agent_data.indexed_text({**fields, "tags": episode.tags, "participants": episode.participants}))


def query_terms(text: str) -> list[str]:
    """memdb's terms of a query, each once."""
    return list(dict.fromkeys(tokenize(text)))


# --- the baselines' indexes ----------------------------------------------------------------------


def _tantivy_schema() -> Any:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", tokenizer_name=TANTIVY_ANALYZER, index_option="freq")
    return sb.build()


def _tantivy_open(path: Path, schema: Any) -> Any:
    import tantivy

    index = tantivy.Index(schema, path=str(path))
    # not persisted by tantivy: registered again at every open; whitespace only, as memdb's terms are final
    index.register_tokenizer(TANTIVY_ANALYZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index


def build_baselines(
    where: Path, size: int, episodes: Iterable[Episode], sides: Sequence[str], log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Index ``episodes`` (the ``size`` stored episodes of ``team``) in each baseline under ``where``.

    The episodes are read and tokenized once (untimed for the sides); then each side indexes all
    of them in a phase of its own, so no side's background work (tantivy's indexing and merging
    threads) runs inside another side's timing on a machine of two cores.
    """
    seconds = dict.fromkeys(("read", "terms", *sides), 0.0)
    bodies: list[str] = []  # memdb's terms of each episode, joined by spaces
    postings = 0
    stored = iter(episodes)
    while True:
        t0 = time.perf_counter()
        chunk = list(itertools.islice(stored, bq.BATCH))
        t1 = time.perf_counter()
        seconds["read"] += t1 - t0
        if not chunk:
            break
        terms = [terms_of(e) for e in chunk]
        bodies += [" ".join(t) for t in terms]
        postings += sum(len(set(t)) for t in terms)
        seconds["terms"] += time.perf_counter() - t1
        if len(bodies) % 100_000 == 0:
            log(f"  read and tokenized {len(bodies):,}/{size:,}: {seconds['read']:.0f} + {seconds['terms']:.0f} s")
    if len(bodies) != size:
        raise ValueError(f"{len(bodies):,} stored episodes of {bq.OWNER!r}: expected {size:,} (a stale cache? remove it)")
    size_b: dict[str, int] = {}
    segments = None
    for side in sides:
        t0 = time.perf_counter()
        if side == "sqlite-fts5":
            _build_fts(where / "fts.db", bodies)
            seconds[side] = time.perf_counter() - t0
            size_b[side] = sum(f.stat().st_size for f in where.glob("fts.db*"))
        elif side == "tantivy":
            _build_tantivy(where / "tantivy", bodies)
            seconds[side] = time.perf_counter() - t0
            size_b[side] = bq._du(where / "tantivy")
            segments = _tantivy_open(where / "tantivy", _tantivy_schema()).searcher().num_segments
        elif side == "bm25s":
            retriever = _build_bm25s(bodies)
            seconds[side] = time.perf_counter() - t0
            retriever.save(str(where / "bm25s"), show_progress=False)  # not timed: the index is built in memory
            size_b[side] = bq._du(where / "bm25s")
            del retriever
        log(f"  {side}: {size:,} episodes indexed in {seconds[side]:.1f} s")
    return {
        "size": size,
        "seed": bq.SEED,
        "sides": list(sides),
        "seconds": seconds,
        "bytes": size_b,
        "postings": postings,
        "tantivy_segments": segments,
    }


def _build_fts(path: Path, bodies: Sequence[str]) -> None:
    con = bq.open_sqlite(path)
    try:
        con.execute(FTS_SCHEMA)
        for start in range(0, len(bodies), bq.BATCH):  # transactions of 5,000, as bench_query's SQLite
            con.execute("BEGIN")
            con.executemany("INSERT INTO docs (rowid, body) VALUES (?, ?)", enumerate(bodies[start : start + bq.BATCH], start + 1))
            con.execute("COMMIT")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def _build_tantivy(path: Path, bodies: Sequence[str]) -> None:
    import tantivy

    path.mkdir()
    writer = _tantivy_open(path, _tantivy_schema()).writer(heap_size=TANTIVY_HEAP, num_threads=1)
    for body in bodies:
        writer.add_document(tantivy.Document(body=body))
    writer.commit()
    writer.wait_merging_threads()


def _build_bm25s(bodies: Sequence[str]) -> Any:
    """bm25s indexed from token ids (its own vocabulary step, done here on memdb's terms)."""
    import bm25s

    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in body.split()] for body in bodies]
    retriever = bm25s.BM25()
    retriever.index((ids, vocab), show_progress=False)
    return retriever


@dataclass
class Baselines:
    """The baselines' indexes of one size, open for queries."""

    size: int
    root: Path
    info: dict[str, Any]
    fts: sqlite3.Connection | None = None
    tantivy: Any = None
    tantivy_schema: Any = None
    bm25s: Any = None

    def close(self) -> None:
        if self.fts is not None:
            self.fts.close()


def load_baselines(ds: bq.Dataset, sides: Sequence[str] = BASELINES, log: Callable[[str], None] = print) -> Baselines:
    """Open (building them first, from what ``ds`` stores, unless cached beside it) the baselines' indexes."""
    size = ds.size
    where = ds.root.parent / f"text-{size}-{bq.SEED}-{_text_key()}"
    meta = where / "build.json"
    info = json.loads(meta.read_text()) if meta.exists() else None
    if info is not None and set(sides) <= set(info["sides"]):
        info["cached"] = True
        log(f"reusing the {size:,}-episode text indexes in {where}")
    else:
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        log(f"indexing {size:,} episodes' memdb terms in {', '.join(sides)} under {where} ...")
        info = build_baselines(where, size, ds.team.episodes(), sides, log)
        info["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # of the process so far (Linux: KiB)
        meta.write_text(json.dumps(info))
        info["cached"] = False
        log(f"  baselines built; peak RSS of the process so far {info['peak_rss_mib']:,} MiB")
    out = Baselines(size, where, info)
    if "sqlite-fts5" in sides:
        out.fts = bq.open_sqlite(where / "fts.db")
    if "tantivy" in sides:
        out.tantivy_schema = _tantivy_schema()
        out.tantivy = _tantivy_open(where / "tantivy", out.tantivy_schema)
    if "bm25s" in sides:
        import bm25s

        out.bm25s = bm25s.BM25.load(str(where / "bm25s"))
    return out


# --- the calls: each takes a draw and returns memdb's idea of the total ---------------------------


def memdb_call(ds: bq.Dataset) -> Callable[[bq.Draw], int]:
    team, now = ds.team, agent_data.END

    def call(d: bq.Draw) -> int:
        r = team.recall(text=d.text, limit=LIMIT, now=now)
        assert len(r.memories) == min(LIMIT, r.total) and r.found == (r.total > 0), (len(r.memories), r.found, r.total)
        return int(r.total)

    return call


def tantivy_call(b: Baselines, terms: dict[str, list[str]]) -> Callable[[bq.Draw], int]:
    import tantivy

    searcher, schema = b.tantivy.searcher(), b.tantivy_schema
    should, term_query, boolean = tantivy.Occur.Should, tantivy.Query.term_query, tantivy.Query.boolean_query

    def call(d: bq.Draw) -> int:
        query = boolean([(should, term_query(schema, "body", t)) for t in terms[d.text or ""]])
        r = searcher.search(query, LIMIT, count=True)
        assert len(r.hits) == min(LIMIT, r.count), (len(r.hits), r.count)
        return int(r.count)

    return call


def fts_call(b: Baselines, terms: dict[str, list[str]]) -> Callable[[bq.Draw], int]:
    con = b.fts
    assert con is not None
    top = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10"
    count = "SELECT count(*) FROM docs WHERE docs MATCH ?"

    def call(d: bq.Draw) -> int:
        match = " OR ".join(f'"{t}"' for t in terms[d.text or ""])
        hits = con.execute(top, (match,)).fetchall()
        total = int(con.execute(count, (match,)).fetchone()[0])
        assert len(hits) == min(LIMIT, total), (len(hits), total)
        return total

    return call


def bm25s_call(b: Baselines, terms: dict[str, list[str]]) -> Callable[[bq.Draw], int]:
    import numpy as np

    retriever = b.bm25s
    indices, indptr, n = retriever.scores["indices"], retriever.scores["indptr"], retriever.scores["num_docs"]

    def call(d: bq.Draw) -> int:
        words = [t for t in terms[d.text or ""] if t in retriever.vocab_dict]
        if not words:
            return 0
        res = retriever.retrieve([words], k=LIMIT, show_progress=False)
        matched = np.zeros(n, dtype=bool)  # 20x cheaper than np.union1d of the columns at 100k (0.04 against 0.8 ms p50)
        for t in retriever.get_tokens_ids(words):
            matched[indices[indptr[t] : indptr[t + 1]]] = True
        assert res.documents.shape == (1, LIMIT)
        return int(np.count_nonzero(matched))

    return call


# --- measuring -----------------------------------------------------------------------------------


@dataclass
class Timed(bq.Result):
    """bench_query's result plus the calling thread's CPU time of each call (every side answers in
    the calling thread: tantivy's searcher runs single-threaded, SQLite and numpy too). A shared
    machine preempts a call of milliseconds and not one of 70 us, so wall times under load favour
    the short; CPU time does not count the preemption."""

    cpu_ns: list[int] = field(default_factory=list)

    def cpu_pct(self, q: float) -> float:
        """Nearest-rank percentile of the CPU time, in ms."""
        return bq.Result(self.cpu_ns, self.totals).pct(q)


def run_draws(call: Callable[[bq.Draw], int], draws: Sequence[bq.Draw]) -> Timed:
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    out = Timed([], [])
    for d in draws:
        w0, c0 = wall(), cpu()
        total = call(d)
        c1, w1 = cpu(), wall()
        out.latencies_ns.append(w1 - w0)
        out.cpu_ns.append(c1 - c0)
        out.totals.append(total)
    return out


@dataclass
class Run:
    """The results of one size: per side, and what the sides were built from."""

    size: int
    info: dict[str, Any]
    baselines: dict[str, Any]
    results: dict[str, Timed] = field(default_factory=dict)
    rounds: int = 1
    load: tuple[float, float] = (0.0, 0.0)  # the 1-minute load average when the queries began and ended

    def disagreements(self) -> dict[str, list[tuple[int, int, int]]]:
        """Per baseline, the draws whose total differs from memdb's: (draw, memdb, side)."""
        mem = self.results.get("memdb")
        if mem is None:
            return {}
        return {
            side: [(i, a, b) for i, (a, b) in enumerate(zip(mem.totals, r.totals, strict=True)) if a != b]
            for side, r in self.results.items()
            if side != "memdb"
        }


def measure(
    ds: bq.Dataset,
    b: Baselines | None,
    sides: Sequence[str],
    draws: Sequence[bq.Draw],
    warmups: Sequence[bq.Draw],
    log: Callable[[str], None] = print,
    rounds: int = 1,
) -> Run:
    """Warm each side up on ``warmups``, then time it on ``draws``; with ``rounds`` > 1 the sides take
    turns that many times and each keeps its round of lowest p50 (a shared machine's load comes and
    goes; the best round is the one least disturbed). Every round must give the same totals."""
    terms = {d.text or "": query_terms(d.text or "") for d in (*draws, *warmups)}
    run = Run(ds.size, ds.info, b.info if b is not None else {}, rounds=rounds)
    calls: dict[str, Callable[[bq.Draw], int]] = {}
    load = os.getloadavg()[0]
    for side in sides:
        if side == "memdb":
            calls[side] = memdb_call(ds)
        else:
            assert b is not None
            calls[side] = {"tantivy": tantivy_call, "sqlite-fts5": fts_call, "bm25s": bm25s_call}[side](b, terms)
    for i in range(rounds):
        for side, call in calls.items():
            for d in warmups:
                call(d)
            r = run_draws(call, draws)
            best = run.results.get(side)
            assert best is None or best.totals == r.totals, f"{side}: round {i + 1} counts differently from round 1"
            if best is None or r.pct(0.5) < best.pct(0.5):
                run.results[side] = r
            log(
                f"  {ds.size:,} {side} round {i + 1}/{rounds}: p50 {r.pct(0.5):.3f} ms, p95 {r.pct(0.95):.3f} ms, "
                f"cpu p50 {r.cpu_pct(0.5):.3f} ms"
            )
    run.load = (load, os.getloadavg()[0])
    return run


# --- the table -----------------------------------------------------------------------------------


def _ms(ms: float) -> str:
    return f"{ms:,.3f}" if ms < 1 else f"{ms:,.2f}" if ms < 100 else f"{ms:,.0f}"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f}" if n < 10 * 2**20 else f"{n / 2**20:,.0f}"


def _ratio(x: float) -> str:
    return f"{x:,.2f}x" if x < 10 else f"{x:,.0f}x"


def versions() -> str:
    return (
        f"memdb scorer {native.IMPLEMENTATION}, SQLite {sqlite3.sqlite_version}, tantivy {_version('tantivy')}, "
        f"bm25s {_version('bm25s')}, numpy {_version('numpy')}"
    )


def format_table(runs: Sequence[Run], draws: int = bq.DRAWS) -> str:
    """The markdown table of the runs, with the machine, commit and versions above it."""
    rounds = max((run.rounds for run in runs), default=1)
    out = [
        f"machine: {_machine()}",
        f"versions: {versions()}",
        f"commit: {bq.COMMIT} at the start of the run; memdb + generator sources {bq.CODE_KEY}, baselines {_text_key()}",
        f"{draws} draws per side after {bq.WARMUP} warm-up draws, the best of {rounds} round(s) by p50; top {LIMIT} with the total; "
        "ms per query",
        "",
        "| size | side | matches p50 | p50 ms | p95 ms | memdb/side p50 | cpu p50 ms | memdb/side cpu p50 | build s | episodes/s "
        "| index MiB | totals = memdb |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for run in runs:
        mem = run.results.get("memdb")
        bad = run.disagreements()
        for side in SIDES:
            r = run.results.get(side)
            if r is None:
                continue
            meta = run.info if side == "memdb" else run.baselines
            sec, size_b = meta["seconds"].get(side), meta["bytes"].get(side)
            vs = mem is not None and side != "memdb"
            cells = [
                f"{run.size:,}", side, f"{statistics.median(r.totals):,.0f}", _ms(r.pct(0.5)), _ms(r.pct(0.95)),
                _ratio(mem.pct(0.5) / r.pct(0.5)) if mem and vs else "-",
                _ms(r.cpu_pct(0.5)), _ratio(mem.cpu_pct(0.5) / r.cpu_pct(0.5)) if mem and vs else "-",
                f"{sec:,.1f}" if sec else "-", f"{run.size / sec:,.0f}" if sec else "-", _mib(size_b) if size_b is not None else "-",
                "-" if side == "memdb" or side not in bad else f"{len(r.totals) - len(bad[side])}/{len(r.totals)}",
            ]  # fmt: skip
            out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for run in runs:
        mem = run.results.get("memdb")
        base = run.baselines
        cached = {"memdb": run.info.get("cached"), "baselines": base.get("cached")}
        if base:
            sec = base["seconds"]
            out.append(
                f"- {run.size:,}: baselines built from memdb's terms of {base['postings']:,} (episode, term) pairs; "
                f"reading the stored episodes back took {sec['read']:.1f} s and memdb's tokenizer {sec['terms']:.1f} s "
                f"(in no side's build time); tantivy segments: {base.get('tantivy_segments')}"
                + ("; built earlier and reused: " + ", ".join(k for k, v in cached.items() if v) if any(cached.values()) else "")
            )
        out.append(
            f"- {run.size:,}: load average (1 min) {run.load[0]:.1f} when the queries began, {run.load[1]:.1f} when they ended "
            f"({os.cpu_count()} cpus; above that, calls of milliseconds get preempted and slow down more than short ones)"
        )
        for side, target in TARGETS.items():
            r = run.results.get(side)
            if mem and r:
                times, cpu = mem.pct(0.5) / r.pct(0.5), mem.cpu_pct(0.5) / r.cpu_pct(0.5)
                verdict = "met" if times <= target else "not met"
                out.append(
                    f"- {run.size:,}: memdb/{side} at p50 = {times:,.2f}x (target at most {target:g}x: {verdict}); in CPU time {cpu:,.2f}x"
                )
    return "\n".join(out)


def write_md(table: str, sizes: Sequence[int], path: Path = RESULTS_MD, note: str = "") -> None:
    command = f"python -m benchmarks.bench_text --sizes {','.join(map(str, sizes))}"
    path.write_text(
        "# Text top-10 with the total: memdb recall(text=...) vs tantivy, SQLite FTS5, bm25s, same data, same run\n\n"
        f"```\n{command}\n```\n\n"
        "Every side indexes memdb's own terms of the same episodes and returns the top 10 plus the number of matches; "
        "data, indexes and calls are in the docstring of `benchmarks/bench_text.py`. memdb's build is the whole database "
        "(`import_episodes`, every index), the baselines' only the text index of pre-tokenized terms.\n\n"
        + (note.strip() + "\n\n" if note.strip() else "")
        + table
        + "\n"
    )


# --- script --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_text", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated numbers of episodes")
    parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated sides to run")
    parser.add_argument("--rounds", type=int, default=3, help="turns of all sides; each side keeps its round of lowest p50")
    parser.add_argument("--md", type=Path, default=RESULTS_MD, help="where to write the markdown table ('-' for nowhere)")
    parser.add_argument("--note", default="", help="a paragraph for the markdown file, above the table (what was run, and why)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    sides = [s for s in args.sides.split(",") if s.strip()]
    unknown = sorted(set(sides) - set(SIDES))
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: must be at least 1")
    if unknown:
        parser.error(f"--sides: unknown {unknown} (choose among {', '.join(SIDES)})")
    for side in [s for s in sides if not have(s)]:
        print(f"WARNING: {side} skipped: it does not import (pip install the 'bench' extra)", file=sys.stderr)
        sides.remove(side)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    sets = bq.Datasets()
    runs = []
    try:
        for size in sizes:
            ds = sets.get(size)
            b = load_baselines(ds, [s for s in sides if s in BASELINES], log)
            try:
                runs.append(measure(ds, b, sides, ds.draws["text"], ds.warmups["text"], log, rounds=args.rounds))
            finally:
                b.close()
        sets.close()
    finally:
        with contextlib.suppress(Exception):
            sets.cleanup()
    table = format_table(runs)
    print(table)
    if str(args.md) != "-":
        write_md(table, sizes, args.md, args.note)
    bad = {(run.size, side): d for run in runs for side, d in run.disagreements().items() if d}
    for (size, side), d in bad.items():
        print(f"{size:,} {side}: {len(d)} draws disagree with memdb's total, e.g. (draw, memdb, {side}) {d[:3]}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
