"""Relevance in the database: settings, explanation, buffered access tracking, rescoring."""

from __future__ import annotations

import datetime as dt
import math
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from hypothesis import given
from hypothesis import strategies as st

import memdb
from memdb.errors import ConfigError
from memdb.memory.relevance import kept_relevance

UTC = dt.UTC
T0 = dt.datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/memory/)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def rdb(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "r", clock=clock)
    yield db
    db.close()


def freq(n: int, sat: float = 20.0) -> float:
    return 10 * min(1.0, math.log1p(n) / math.log1p(sat))


def test_fresh_episode_scores_by_formula(rdb: memdb.Database) -> None:
    mem = rdb.owner("ana")
    tagged = mem.record("debug", "x", outcome="failure", tags=["billing"])  # default tag weight 0.5
    urgent = mem.record("debug", "y", outcome="failure", tags=["urgent", "billing"])  # highest weight wins: 1.0
    plain = mem.record("debug", "z", outcome="failure")
    # frequency 0, age 10 (just happened), feedback none = 5; kept at its level (1/25 of a point)
    assert tagged.relevance == kept_relevance(0.3 * 5 + 0.2 * 10 + 0.1 * 5) == 4.0
    assert urgent.relevance == kept_relevance(0.3 * 10 + 0.2 * 10 + 0.1 * 5) == 5.48
    assert plain.relevance == kept_relevance(0.2 * 10 + 0.1 * 5) == 2.48


def test_explain_reports_components(rdb: memdb.Database, clock: Clock) -> None:
    mem = rdb.owner("ana")
    ep = mem.record("debug", "x", outcome="failure", tags=["urgent"], feedback=1.0)
    clock.now = T0 + dt.timedelta(days=14)
    ex = mem.explain(ep.id)
    assert (ex.frequency, ex.tags, ex.feedback) == (0.0, 10.0, 10.0)
    assert ex.age == pytest.approx(5.0) and ex.age_days == pytest.approx(14.0)
    assert ex.relevance == pytest.approx(0.4 * 0 + 0.3 * 10 + 0.2 * 5 + 0.1 * 10)
    assert "frequency" in str(ex) and "14.0 days" in str(ex)
    assert mem.peek(ep.id).access_count == 0  # explaining is not an access


def test_access_counts_and_recomputes(rdb: memdb.Database, clock: Clock) -> None:
    mem = rdb.owner("ana")
    ep = mem.record("debug", "x", outcome="failure")
    for i in range(20):
        clock.now = T0 + dt.timedelta(minutes=i)
        got = mem.get(ep.id)
    assert got.access_count == 20
    assert got.last_access == T0 + dt.timedelta(minutes=19)
    assert mem.explain(ep.id).frequency == pytest.approx(10.0)
    assert got.relevance == kept_relevance(0.4 * 10 + 0.2 * 10 + 0.1 * 5) == 6.48


def test_reads_are_buffered_and_flushed_in_batches(tmp_path: Path, clock: Clock) -> None:
    with memdb.open(tmp_path / "b", clock=clock) as db:
        db.configure(access_flush_every=3)
        mem = db.owner("ana")
        ids = [mem.record("debug", f"e{i}", outcome="success").id for i in range(3)]
        mem.get(ids[0])
        mem.get(ids[1])
        states = db.globals["EPST"]
        assert states[("ana", ids[0])]["access_count"] == 0  # buffered, not yet written
        mem.get(ids[2])  # third distinct episode fills the buffer: one flush
        assert [states[("ana", i)]["access_count"] for i in ids] == [1, 1, 1]
        assert db.check().ok


def test_clean_close_keeps_every_access(tmp_path: Path, clock: Clock) -> None:
    with memdb.open(tmp_path / "c", clock=clock) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "e", outcome="success")
        for _ in range(5):
            mem.get(ep.id)
    with memdb.open(tmp_path / "c", clock=clock) as db:
        assert db.owner("ana").peek(ep.id).access_count == 5
        assert db.check().ok


def test_a_full_batch_waits_for_the_flush_interval(tmp_path: Path, clock: Clock) -> None:
    """A busy reader fsyncs about once per access_flush_seconds, not once a batch: the batch that
    fills within the interval waits (and is read back from the buffer meanwhile), then goes
    with the first access after it; flush() and close write it at once."""
    with memdb.open(tmp_path / "i", clock=clock) as db:
        db.configure(access_flush_every=3, access_flush_seconds=3600)
        mem = db.owner("ana")
        ids = [mem.record("debug", f"e{i}", outcome="success").id for i in range(3)]
        states = db.globals["EPST"]
        for eid in ids:
            mem.get(eid)  # the first batch: nothing was flushed before, so it goes at once
        assert [states[("ana", i)]["access_count"] for i in ids] == [1, 1, 1]
        for eid in ids * 2:
            mem.get(eid)  # two more batches within the hour: they wait
        assert [states[("ana", i)]["access_count"] for i in ids] == [1, 1, 1]
        assert mem.explain(ids[0]).frequency == pytest.approx(freq(3))  # relevance counts the waiting ones
        assert db.flush() == 3
        assert [states[("ana", i)]["access_count"] for i in ids] == [3, 3, 3]
        mem.get(ids[0])
    with memdb.open(tmp_path / "i", clock=clock) as db:
        assert db.owner("ana").peek(ids[0]).access_count == 4  # close wrote the waiting one
        assert db.check().ok


@given(
    batch=st.integers(1, 6),
    interval=st.sampled_from([0.0, 0.5, 2.0]),
    steps=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0.0, 0.1, 0.6, 3.0]), st.booleans()), max_size=40),
)
def test_the_tracker_flushes_exactly_when_a_batch_is_full_and_due(
    batch: int, interval: float, steps: list[tuple[int, float, bool]]
) -> None:
    """Model-based: against a reference of the rule (flush when at least ``batch`` accesses wait
    and no flush happened within ``interval`` seconds, or when asked), every flush happens on
    exactly the access the reference says, with exactly the counts it holds, and no access is
    lost or counted twice."""
    from memdb.memory.relevance import AccessTracker, PendingAccess

    now = [100.0]
    written: list[dict[str, int]] = []

    def write(b: dict[tuple[str, str], PendingAccess]) -> None:
        written.append({eid: p.count for (_, eid), p in b.items()})

    tracker = AccessTracker(write, lambda: batch, interval=lambda: interval, monotonic=lambda: now[0])
    waiting: dict[str, int] = {}
    last: float | None = None
    expected: list[dict[str, int]] = []
    for i, (n, advance, explicit) in enumerate(steps):
        now[0] += advance
        ids = [f"e{(i + j) % 3}" for j in range(n)]
        tracker.touch("ana", ids, T0)
        for eid in ids:
            waiting[eid] = waiting.get(eid, 0) + 1
        if sum(waiting.values()) >= batch and (last is None or now[0] - last >= interval):
            expected.append(waiting)  # (batch >= 1, so a full one holds something)
            waiting, last = {}, now[0]
        if explicit:
            tracker.flush()
            if waiting:
                expected.append(waiting)
            waiting, last = {}, now[0]
        assert written == expected
        assert all(tracker.pending("ana", eid)[0] == waiting.get(eid, 0) for eid in ("e0", "e1", "e2"))


@pytest.mark.slow
def test_crash_loses_at_most_the_unflushed_batch(tmp_path: Path) -> None:
    path = tmp_path / "crash"
    code = f"""
        import os, signal, datetime as dt, memdb
        db = memdb.open({str(path)!r})
        db.configure(access_flush_every=10, access_flush_seconds=0)
        mem = db.owner("ana")
        ids = [mem.record("debug", f"e{{i}}", outcome="success").id for i in range(25)]
        for i in ids:
            mem.get(i)          # 25 distinct accesses: two flushes of 10, 5 left in memory
        print(",".join(ids), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    ids = proc.stdout.strip().split(",")
    with memdb.open(path) as db:
        counts = [db.owner("ana").peek(i).access_count for i in ids]
        assert sum(counts) == 20 and counts[:20] == [1] * 20
        assert db.check().ok


def test_rescore_ages_everything(rdb: memdb.Database, clock: Clock) -> None:
    mem = rdb.owner("ana")
    bo = rdb.owner("bo")
    eps = [mem.record("debug", f"e{i}", outcome="success", tags=["urgent"]) for i in range(30)]
    other = bo.record("debug", "b", outcome="success")
    report = rdb.rescore(now=T0 + dt.timedelta(days=28))
    assert report.scored == 31 and report.changed == 31
    for ep in eps:
        assert mem.peek(ep.id).relevance == pytest.approx(0.3 * 10 + 0.2 * 2.5 + 0.1 * 5)
    assert bo.peek(other.id).relevance == pytest.approx(0.2 * 2.5 + 0.1 * 5)
    bands = {s[1] for s, _ in rdb.globals["EPB"].items(("ana",))}
    assert bands == {4}
    assert rdb.check().ok
    assert rdb.rescore(now=T0 + dt.timedelta(days=28)).changed == 0  # idempotent


def test_rescore_in_small_batches_matches(rdb: memdb.Database) -> None:
    mem = rdb.owner("ana")
    for i in range(25):
        mem.record("debug", f"e{i}", outcome="success", tags=["urgent"] if i % 2 else [])
    report = rdb.episodes.rescore(now=T0 + dt.timedelta(days=3), batch=7)
    assert report.scored == 25
    assert rdb.check().ok


def test_feedback_moves_band(rdb: memdb.Database) -> None:
    mem = rdb.owner("ana")
    ep = mem.record("debug", "x", outcome="failure", tags=["urgent"])  # 5.5
    assert mem.feedback(ep.id, -1.0).relevance == pytest.approx(5.0)
    assert mem.feedback(ep.id, 1.0).relevance == pytest.approx(6.0)
    assert [s[1] for s, _ in rdb.globals["EPB"].items(("ana",))] == [6]
    assert rdb.check().ok


def test_weights_configurable_validated_and_persisted(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "w") as db:
        with pytest.raises(ConfigError, match="sum to"):
            db.configure(w_frequency=0.5)
        with pytest.raises(ConfigError, match="w_age"):
            db.configure(w_age=-0.1)
        db.configure(w_frequency=0.1, w_tags=0.1, w_age=0.7, w_feedback=0.1, tag_weights={"urgent": 1.0, "vip": 0.9})
        ep = db.owner("a").record("debug", "x", outcome="success", tags=["vip"])
        assert ep.relevance == pytest.approx(0.1 * 9 + 0.7 * 10 + 0.1 * 5)
    with memdb.open(tmp_path / "w") as db:
        assert db.settings.w_age == 0.7 and db.settings.tag_weights["vip"] == 0.9


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"age_half_life_days": float("inf")}, "age_half_life_days=inf"),
        ({"frequency_saturation": float("inf")}, "frequency_saturation=inf"),
        ({"archive_after_days": float("inf")}, "archive_after_days=inf"),
        ({"retention_days": float("nan")}, "retention_days=nan"),
        ({"burst_window_hours": 1e9}, "burst_window_hours=1000000000.0"),
        ({"archive_after_days": 1e9}, "archive_after_days=1000000000.0"),
    ],
)
def test_settings_that_would_break_later_are_refused_now(tmp_path: Path, change: dict[str, float], needle: str) -> None:
    """An infinite half-life was saved, then every record() failed naming ScoreParams; an
    infinite archive age made every maintain() overflow."""
    with memdb.open(tmp_path / "s") as db:
        with pytest.raises(ConfigError, match=needle):
            db.configure(**change)
        db.owner("a").record("debug", "x", outcome="success")
        db.maintain()


def test_tag_weight_keys_are_normalised_like_tags(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "t") as db:
        db.configure(tag_weights={"Urgent": 1.0, "Project X": 0.9})
        assert db.settings.tag_weights == {"urgent": 1.0, "project-x": 0.9}
        ep = db.owner("a").record("debug", "x", outcome="success", tags=["Project X"])
        assert db.owner("a").explain(ep.id).tag_weight == 0.9
        with pytest.raises(ConfigError, match="both the tag 'urgent'"):
            db.configure(tag_weights={"urgent": 1.0, "URGENT": 0.2})


def test_a_settings_tag_of_personal_data_is_refused(tmp_path: Path) -> None:
    """A card number as a tag is stored as "withheld-card", the marker every card shares: as a
    tag_weights key (or a session rule's tag) it was stored raw, on disk after compact(), and weighed
    a tag no episode can carry; then as its marker, and one customer's card weighed every memory
    that withheld a card. It is refused, named sanitized; the marker may be named on purpose."""
    card = "4539-1488-0343-6467"
    path = tmp_path / "t"
    with memdb.open(path) as db:
        for changes in ({"tag_weights": {card: 0.9, "urgent": 1.0}}, {"session_kinds": {f"tag:{card}": "debug"}}):
            with pytest.raises(
                ConfigError, match=r"tag '<CARD_1>': holds personal data .* \(name 'withheld-card' to mean them all\)$"
            ) as info:
                db.configure(**changes)
            assert card not in str(info.value)
        assert db.settings.tag_weights == {"urgent": 1.0} and db.settings.session_kinds == {}  # nothing written
        db.configure(tag_weights={"withheld-card": 0.2, "urgent": 1.0})
        mem = db.owner("a")
        other = mem.record("debug", "another customer's card", outcome="success", tags=["4916 3385 0660 8131"])
        assert other.tags == ("withheld-card",) and mem.explain(other.id).tag_weight == 0.2  # the marker, named, weighs them all
        db.compact()
    raw = b"".join(p.read_bytes() for p in path.iterdir() if p.is_file())
    assert card.encode() not in raw


def test_a_batch_is_so_many_accesses_not_so_many_episodes(rdb: memdb.Database) -> None:
    """README: flushed every access_flush_every accesses; re-reading the same few episodes fills
    the batch too (before, only distinct episodes counted, so nothing was ever flushed)."""
    rdb.configure(access_flush_every=10)
    mem = rdb.owner("ana")
    ep = mem.record("debug", "x", outcome="success")
    for _ in range(10):
        mem.get(ep.id)
    assert rdb.globals["EPST"].get(("ana", ep.id))["access_count"] == 10  # on disk, without a flush


def test_accesses_inside_a_snapshot_or_a_rolled_back_transaction_are_kept(rdb: memdb.Database) -> None:
    rdb.configure(access_flush_every=5)
    mem = rdb.owner("ana")
    ids = [mem.record("debug", f"x {i}", outcome="success").id for i in range(7)]
    with rdb.snapshot():
        for eid in ids:
            mem.get(eid)  # a flush here would be refused by the snapshot: it waits instead
    with pytest.raises(RuntimeError), rdb.transaction():
        for eid in ids:
            mem.get(eid)  # a flush here would be rolled back below: it waits instead
        raise RuntimeError("caller gives up")
    rdb.flush()
    assert [rdb.globals["EPST"].get(("ana", eid))["access_count"] for eid in ids] == [2] * 7


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_counts_only_its_own_accesses(tmp_path: Path, clock: Clock) -> None:
    with memdb.open(tmp_path / "f", clock=clock) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "x", outcome="success")
        for _ in range(3):
            mem.get(ep.id)  # buffered in the parent
        pid = os.fork()
        if pid == 0:  # the child: one access of its own through the handle it inherited, then out
            try:
                mem.get(ep.id)
                db.close()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    with memdb.open(tmp_path / "f", clock=clock) as db:
        assert db.owner("ana").peek(ep.id).access_count == 4


def test_a_flush_keeps_the_headers_it_writes_as_decoded(rdb: memdb.Database, clock: Clock) -> None:
    """The headers an access flush writes are kept decoded by their bytes (``packed_header``),
    so the next question does not decode them again: what is kept must be exactly what the bytes
    decode to, type for type (a tuple for a list, another tzinfo, would change what readers see)."""
    from memdb.engine.codec import unpack_value
    from memdb.memory.layout import _HEADS, decoded_header

    rdb.configure(access_flush_every=5)
    mem = rdb.owner("ana")
    ids = [mem.record("debug", f"deploy {i}", outcome="success", tags=["x", "y"], session="s").id for i in range(5)]
    clock.now = T0.astimezone(dt.timezone(dt.timedelta(hours=2))) + dt.timedelta(hours=3)  # an offset clock
    _HEADS.clear()
    for eid in ids:
        mem.get(eid)  # the fifth flushes
    with rdb.globals.reader() as txn:
        raws = [txn.get(rdb.globals["EPST"].key(("ana", eid))) for eid in ids]
    assert all(raw in _HEADS for raw in raws)

    def shape(v: object) -> object:
        if isinstance(v, dict):
            return {k: shape(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return (type(v), [shape(x) for x in v])
        return (type(v), v, getattr(v, "tzinfo", None))

    for raw in raws:
        kept = decoded_header(raw)
        assert shape(kept[0]) == shape(unpack_value(raw))
        assert kept[0]["access_count"] == 1 and kept[0]["last_access"] == clock.now


def test_an_access_flush_rewrites_no_index_entry(rdb: memdb.Database, clock: Clock) -> None:
    """Reads move relevance levels: a flush rewrites the episodes' headers, their level chunks
    (with the stamps) and the band entries that move, and no other index entry, since those
    hold the document number (layout 12). What it wrote is what check() expects, and the
    moved levels rank a recall at once."""
    mem = rdb.owner("ana")
    eps = [
        mem.record("debug", f"deploy broke {i}", outcome=("failure", "success")[i % 2], tags=["project-x", f"t{i}"], session="s1")
        for i in range(12)
    ]
    clock.advance(days=40)  # old enough that a read raises relevance by levels and bands
    rdb.episodes.rescore()
    names = {name: rdb.globals[name] for name in ("EPT", "EPG", "EPGO", "EPK", "EPS", "EPTD", "EPB", "EPST", "EPL", "EPLV", "EPC")}

    def stored() -> dict[str, dict[Any, Any]]:
        return {name: dict(g.items()) for name, g in names.items()}

    before = stored()
    for ep in eps[::2]:
        mem.get(ep.id)
    assert rdb.flush() == 6
    after = stored()
    changed = {name for name in names if before[name] != after[name]}
    assert changed == {"EPST", "EPL", "EPLV", "EPB"}
    moved = {s[-1] for s in before["EPB"].keys() ^ after["EPB"].keys()}
    assert moved and moved <= {ep.id for ep in eps[::2]}
    assert sorted(before["EPB"].values()) == sorted(after["EPB"].values())  # a band entry moves with its value
    assert rdb.check().ok
    top = mem.recall(tags=["project-x"], limit=6)
    assert {m.id for m in top} == {ep.id for ep in eps[::2]}
