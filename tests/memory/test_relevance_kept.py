"""Relevance is kept at its level (1/25 of a point), the resolution ranking and archiving read:
so a rescore writes only the headers whose kept value moved, every stored relevance is the kept
value of its score, and rankings move only within a level."""

from __future__ import annotations

import datetime as dt
import random
import shutil
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import memdb
from memdb.memory.layout import LEVELS_PER_POINT, relevance_level
from memdb.memory.relevance import _LEVEL_VALUES, kept_relevance

pytestmark = pytest.mark.usefixtures("backend")  # the database tests run on LMDB and PostgreSQL

UTC = dt.UTC
T0 = dt.datetime(2025, 7, 1, 9, 0, tzinfo=UTC)
LEVEL = 1 / LEVELS_PER_POINT
TAGS = ([], ["billing"], ["urgent"], ["urgent", "billing"], ["project-x"])


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def rdb(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "k", clock=clock)
    yield db
    db.close()


def decimal_level(score: float) -> int:
    """The level of a score rounded to 1e-9, in decimal arithmetic (no float's last bits)."""
    return min(int(Decimal(repr(round(score, 9))) * LEVELS_PER_POINT), 10 * LEVELS_PER_POINT)


def oracle_level(db: memdb.Database, record: dict[str, Any], header: dict[str, Any], at: dt.datetime) -> int:
    """The level of an episode's score at ``at``, summed from its components as the scorer sums
    them (not through ``kept_relevance``)."""
    ex = db.episodes.scorer.explain(record, header, at)
    w = ex.weights
    raw = w["frequency"] * ex.frequency + w["tags"] * ex.tags + w["age"] * ex.age + w["feedback"] * ex.feedback
    return decimal_level(min(max(raw, 0.0), 10.0))


def assert_kept(db: memdb.Database, owner: str, eid: str, at: dt.datetime) -> None:
    """The stored relevance is the value of its score's level at ``at``, the time it was written."""
    record, header = db.episodes.load(owner, eid)
    level = oracle_level(db, record, header, at)
    stored = header["relevance"]
    assert relevance_level(stored) == level, (eid, stored, level)
    assert stored == round(level * 0.04, 2), (eid, stored, level)


# --- the rounding rule ---------------------------------------------------------------------------


def test_a_level_value_keeps_its_level_and_itself() -> None:
    assert len(_LEVEL_VALUES) == 10 * LEVELS_PER_POINT + 1
    for level, value in enumerate(_LEVEL_VALUES):
        assert relevance_level(value) == level and kept_relevance(value) == value
        assert value == round(level * 0.04, 2)  # 2.32, as a user reads and types it
    assert list(_LEVEL_VALUES) == sorted(set(_LEVEL_VALUES))


@given(st.floats(0.0, 10.0), st.integers(0, 10 * LEVELS_PER_POINT))
def test_kept_relevance_keeps_the_level_and_the_archiving_decision(score: float, threshold_level: int) -> None:
    kept = kept_relevance(score)
    assert relevance_level(kept) == relevance_level(round(score, 9)) == decimal_level(score)
    assert kept <= round(score, 9) + 1e-9
    # a threshold on the grid, as a user types it (2.32, not 58/25 computed): the kept value is
    # under it exactly when the score's level is under the threshold's
    threshold = round(threshold_level * 0.04, 2)
    assert (kept < threshold) == (decimal_level(score) < threshold_level)


# --- an idle day -----------------------------------------------------------------------------------


def a_year_of_use(db: memdb.Database, clock: Clock) -> list[str]:
    """A year of one owner's days: a few episodes most days, earlier ones read again and rated,
    and a monthly rescore, as ``maintain`` would (without archiving)."""
    rng = random.Random(7)
    mem = db.owner("ana")
    ids: list[str] = []
    for day in range(365):
        clock.now = T0 + dt.timedelta(days=day, hours=rng.randrange(8, 18))
        for _ in range(rng.choice((0, 1, 1, 2))):
            outcome = rng.choice(("success", "failure", "partial"))
            ids.append(mem.record("debug", f"deploy {len(ids)} {outcome}", outcome=outcome, tags=rng.choice(TAGS)).id)
        if ids and rng.random() < 0.5:
            for eid in rng.sample(ids, min(3, len(ids))):
                mem.get(eid)
        if ids and rng.random() < 0.1:
            mem.feedback(rng.choice(ids), rng.choice((-1.0, -0.5, 0.5, 1.0)))
        if day % 30 == 29:
            db.flush()
            db.rescore(now=clock.now)
    db.flush()
    return ids


def test_an_idle_day_rewrites_only_the_headers_whose_kept_relevance_moved(rdb: memdb.Database, clock: Clock) -> None:
    ids = a_year_of_use(rdb, clock)
    day = clock.now + dt.timedelta(days=1)
    rdb.rescore(now=day)
    states, text = rdb.globals["EPST"], rdb.globals["EPL"]

    def raw_headers() -> dict[str, bytes]:
        with rdb.globals.reader() as txn:
            return {eid: txn.get(states.key(("ana", eid))) for eid in ids}

    before, levels_before, bands_before = raw_headers(), dict(text.items()), dict(rdb.globals["EPB"].items())
    idle = day + dt.timedelta(days=1)
    moved = set()
    for eid in ids:
        record, header = rdb.episodes.load("ana", eid)
        if relevance_level(rdb.episodes.scorer.score(record, header, idle)) != relevance_level(header["relevance"]):
            moved.add(eid)
    report = rdb.rescore(now=idle)
    assert report.scored == len(ids)
    assert report.changed == len(moved)
    assert 0 < len(moved) < len(ids) // 3  # the last weeks' episodes (accessed or new) age by levels a day; the rest stay
    after = raw_headers()
    assert {eid for eid in ids if after[eid] != before[eid]} == moved  # the others byte for byte
    for eid in moved:
        assert_kept(rdb, "ana", eid, idle)
    # only moved episodes' levels (and bands) were written
    assert dict(text.items()) != levels_before or not moved
    moved_bands = {s[-1] for s in bands_before.keys() ^ dict(rdb.globals["EPB"].items()).keys()}
    assert moved_bands <= moved
    assert rdb.rescore(now=idle).changed == 0
    assert rdb.check().ok


# --- every path that stores relevance, as a model --------------------------------------------------


class KeptRelevance(RuleBasedStateMachine):
    """Captures, imports, reads, feedback, corrections, archive and restore, and rescores, with
    the clock moving between them: every header's relevance is always the kept value of its
    score at the time it was last written (``scored``)."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="memdb-kept-")
        self.clock = Clock(T0)
        self.db = memdb.open(Path(self.dir) / "m", clock=self.clock)
        self.mem = self.db.owner("ana")
        self.scored: dict[str, dt.datetime] = {}  # id -> when its relevance was last computed
        self.hot: list[str] = []  # current versions, which can be read, rated, corrected, archived

    def teardown(self) -> None:
        try:
            assert self.db.check().ok
        finally:
            self.db.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _pick(self, i: int) -> str:
        return self.hot[i % len(self.hot)]

    @rule(tags=st.sampled_from(TAGS), feedback=st.sampled_from((None, -1.0, 0.25, 1.0)))
    def record(self, tags: list[str], feedback: float | None) -> None:
        extra = {} if feedback is None else {"feedback": feedback}
        ep = self.mem.record("debug", f"step {len(self.scored)}", outcome="success", tags=tags, **extra)
        self.scored[ep.id] = self.clock.now
        self.hot.append(ep.id)

    @rule(days=st.integers(1, 400), tags=st.sampled_from(TAGS))
    def import_one(self, days: int, tags: list[str]) -> None:
        row = {"kind": "debug", "summary": "imported", "outcome": "failure", "tags": tags, "ts": self.clock.now - dt.timedelta(days=days)}
        (eid,) = self.mem.import_episodes([row], source="model").ids
        self.scored[eid] = self.clock.now  # accessed at import
        self.hot.append(eid)

    @rule(hours=st.integers(1, 24 * 60))
    def advance(self, hours: int) -> None:
        self.clock.advance(hours=hours)

    @rule(i=st.integers(0, 1000), times=st.integers(1, 4))
    def read(self, i: int, times: int) -> None:
        if self.hot:
            eid = self._pick(i)
            for _ in range(times):
                self.mem.get(eid)
            self.db.flush()
            self.scored[eid] = self.clock.now

    @rule(i=st.integers(0, 1000), value=st.sampled_from((-1.0, -0.3, 0.0, 0.6, 1.0)))
    def rate(self, i: int, value: float) -> None:
        if self.hot:
            eid = self._pick(i)
            self.mem.feedback(eid, value)
            self.scored[eid] = self.clock.now

    @rule(i=st.integers(0, 1000))
    def correct(self, i: int) -> None:
        if self.hot:
            old = self._pick(i)
            new = self.mem.supersede(old, reason="model", summary=f"corrected {len(self.scored)}")
            self.hot[self.hot.index(old)] = new.id
            self.scored[new.id] = self.clock.now  # the old version keeps its header as it was

    @rule(i=st.integers(0, 1000))
    def archive_and_restore(self, i: int) -> None:
        if self.hot:
            eid = self._pick(i)
            self.mem.archive(eid)
            self.mem.restore(eid)  # a restore is an access
            self.scored[eid] = self.clock.now

    @rule()
    def rescore(self) -> None:
        self.db.rescore(now=self.clock.now)
        self.scored = dict.fromkeys(self.scored, self.clock.now)

    @invariant()
    def stored_relevance_is_the_kept_score(self) -> None:
        for eid, at in self.scored.items():
            assert_kept(self.db, "ana", eid, at)


test_kept_relevance_model = KeptRelevance.TestCase
test_kept_relevance_model.settings = settings(
    max_examples=12, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# --- ranking ---------------------------------------------------------------------------------------


def test_rankings_move_only_within_a_level(rdb: memdb.Database, clock: Clock) -> None:
    """Ranking weighs the stored relevance; kept at its level, a match's score drops by less than
    a level's worth (0.0024 without text, 0.0002 with), so only matches whose scores were that
    close can change places; every index code is the unrounded score's."""
    ids = a_year_of_use(rdb, clock)
    rdb.rescore(now=clock.now)
    raw, kept = {}, {}
    for eid in ids:
        record, header = rdb.episodes.load("ana", eid)
        raw[eid] = rdb.episodes.scorer.explain(record, header, clock.now).score
        kept[eid] = header["relevance"]
        assert relevance_level(kept[eid]) == relevance_level(round(raw[eid], 9))
    mem = rdb.owner("ana")
    for query, weight in (({"tags": ["billing"]}, 0.6), ({"text": "deploy failure"}, 0.05)):
        hits = mem.recall(**query, limit=len(ids)).memories
        assert len(hits) > 20
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        # each hit's score with its unrounded relevance, as ranking weighed it before
        before = [h.score + weight * (raw[h.id] - kept[h.id]) / 10 for h in hits]
        assert all(0 <= old - h.score < weight * LEVEL / 10 for old, h in zip(before, hits, strict=True))
        swapped = [(a, b) for a in range(len(hits)) for b in range(a + 1, len(hits)) if before[a] < before[b]]
        assert all(before[b] - before[a] < weight * LEVEL / 10 for a, b in swapped)


# --- archiving -------------------------------------------------------------------------------------


def test_the_archiving_threshold_reads_the_kept_relevance_as_the_score(rdb: memdb.Database, clock: Clock) -> None:
    """Relevance < 3.0 (on the 1/25 grid) holds of the kept value exactly when it holds of the
    score: a tag weighing 0.7 scores 3.0 at 14 * log2(5) = 32.5 days (2.1 + 0.5 + 0.2 * 2.0).
    The audit record shows the kept relevance the rule compared and the unrounded components."""
    rdb.configure(tag_weights={"urgent": 1.0, "mid": 0.7})
    mem = rdb.owner("ana")
    ep = mem.record("debug", "deploy held a lock", outcome="failure", tags=["mid"])
    even = T0 + dt.timedelta(days=14 * 2.321928094887362)
    for at, due in ((even - dt.timedelta(hours=2), False), (even + dt.timedelta(hours=2), True)):
        clock.now = at
        ex = mem.explain(ep.id, now=at)
        assert (ex.score < 3.0) == due
        assert rdb.maintain(now=at).archived == due
        if not due:
            assert mem.peek(ep.id).relevance == ex.relevance == 3.0
    (record,) = [a for a in mem.audit() if a.get("action") == "archive"]
    assert record["relevance"] == ex.relevance == 2.96
    w, c = ex.weights, record["components"]
    assert 2.96 <= w["frequency"] * c["frequency"] + w["tags"] * c["tags"] + w["age"] * c["age"] + w["feedback"] * c["feedback"] < 3.0


# --- a database written before relevance was kept -----------------------------------------------------


def test_a_database_written_before_relevance_was_kept_is_kept_at_open(tmp_path: Path, clock: Clock) -> None:
    """Before layout 27 a header held its score to 1e-9 and the levels derived from it were its
    floor in 25ths without tolerance: 2.32 (feedback -0.36) was level 57. A rescore skips a header
    holding its kept value, so check() found those levels wrong until ageing moved them. Opening
    such a database keeps every header's relevance (hot, archived, superseded) at its level's
    value and rewrites the levels once: check() is clean, and a rescore at the same instant
    rewrites nothing (the first one rewrote every header)."""
    path = tmp_path / "old"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        ids = [mem.record("debug", f"rated {fb}", outcome="failure", feedback=fb).id for fb in (-0.36, -0.44, 0.1, 0.5)]
        for hours in (7, 30, 200, 1000):  # aged off the grid
            ids.append(mem.record("debug", f"aged {hours}", outcome="success", tags=["urgent"], ts=T0 - dt.timedelta(hours=hours)).id)
        mem.archive(ids[-1])
        ids.append(mem.supersede(ids[-2], reason="fixed", summary="aged, corrected").id)
        db.flush()
        states, scorer = db.globals["EPST"], db.episodes.scorer
        old: dict[str, float] = {}
        with db.transaction():  # what the code before layout 27 stored: the score to 1e-9, levels without tolerance
            for subs, header in list(states.items(("ana",))):
                eid = str(subs[1])
                old[eid] = round(scorer.explain(header, header, T0).score, 9)
                states.set(subs, {**header, "relevance": old[eid]})
                db.episodes.layout.text.set_levels("ana", [(eid, int(old[eid] * LEVELS_PER_POINT))])
            db.globals["META"].set(("layout",), 26)
        assert old[ids[0]] == 2.32 and len(set(old.values()) - set(_LEVEL_VALUES)) >= 3  # on a level and off it
        assert not db.check().ok  # 2.32's level 57
    with memdb.open(path, clock=clock) as db:
        assert db.check().ok
        headers = {str(subs[1]): header for subs, header in db.globals["EPST"].items(("ana",))}
        assert headers.keys() == old.keys()
        assert {eid: h["relevance"] for eid, h in headers.items()} == {eid: kept_relevance(v) for eid, v in old.items()}
        assert db.rescore(now=T0).changed == 0
        assert db.check().ok


def test_an_archiving_threshold_between_levels_acts_as_the_upper_level(rdb: memdb.Database, clock: Clock) -> None:
    """The threshold is compared with the kept relevance, the value users see: 3.02 archives an
    episode scoring 3.03 (kept 3.00) and keeps one scoring 3.05 (kept 3.04), and the setting's
    description says so."""
    rdb.configure(w_frequency=0.0, w_tags=0.0, w_age=0.0, w_feedback=1.0, archive_below_relevance=3.02)
    mem = rdb.owner("ana")
    low = mem.record("debug", "scores 3.03", outcome="failure", feedback=-0.394)  # 5 * (1 - 0.394)
    high = mem.record("debug", "scores 3.05", outcome="failure", feedback=-0.39)
    assert (mem.explain(low.id).relevance, mem.explain(high.id).relevance) == (3.0, 3.04)
    assert rdb.maintain(now=T0 + dt.timedelta(days=31)).archived == 1
    assert [e.id for e in mem.episodes()] == [high.id]
    description = memdb.Settings.model_fields["archive_below_relevance"].description or ""
    assert "kept to 1/25 of a point" in description and "3.02 acts as 3.04" in description
