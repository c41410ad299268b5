"""Erasing many episodes in one call: the index it leaves is the one erasing them one by one
leaves (each posting block, tag list and column chunk rewritten once instead of once per
episode), and a request for everything or for the owner itself kills the owner's indexes by
range instead of episode by episode, leaving nothing of them."""

from __future__ import annotations

import datetime as dt
import itertools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.errors import NotFoundError
from memdb.lifecycle.erase import OWNER_KEYED
from memdb.memory import ids
from memdb.memory.layout import GLOBALS

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)

T0 = dt.datetime(2026, 5, 1, 9, 0, tzinfo=dt.UTC)
WORDS = [f"w{i:02d}" for i in range(24)] + ["deploy", "rollback", "zorblax", "quibblefrost"]
EPISODE_GLOBALS = (
    "MEM", "EPST", "EPT", "EPG", "EPGO", "EPK", "EPS", "EPB", "EPTD", "EPX", "EPXT", "EPDN", "EPC", "EPL", "EPDF", "EPN", "EPAR",
    "COLD", "EPSA", "EPSU", "EPFK",
)  # fmt: skip
"""The episode layer's globals: records, headers and every index (not the chunks' stamps, random
at each write, nor the audit records, one per erasure, nor what layers above derived, which their
hooks take from the set erased at once)."""


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock(T0)


def _same_ids(*owners: str) -> None:
    """Ids are a time and a per-process counter per owner from a random start: started at 0 for
    each of ``owners``, the same records give the same ids under each (so their globals compare)."""
    for owner in owners:
        ids._seqs[owner] = itertools.count(0)


def _episodes(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` records of a small vocabulary (common words span several posting blocks), some
    tagged, some facts recorded again (so erasing one version erases its chain)."""
    out = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
        ep: dict[str, Any] = {"ts": T0 - dt.timedelta(hours=n - i), "summary": f"e{i} {words}"}
        if rng.random() < 0.1:
            ep.update(kind="fact", key=f"k{rng.randint(0, 5)}")
        else:
            tags = rng.sample(["ops", "acme", "db", "x"], rng.randint(0, 2))
            ep.update(kind="debug", outcome=rng.choice(["success", "failure"]), tags=tags)
        out.append(ep)
    return out


def _record(db: memdb.Database, owner: str, episodes: list[dict[str, Any]]) -> list[str]:
    mem = db.owner(owner)
    return [mem.record(**ep).id for ep in episodes]


def _tree(db: memdb.Database, owner: str) -> dict[str, list[tuple[Any, Any]]]:
    """Every node under the owner in the episode layer's globals, without the owner's name."""
    return {name: [(subs[1:], value) for subs, value in db.globals[name].items((owner,))] for name in EPISODE_GLOBALS}


def _found(db: memdb.Database, owner: str, word: str) -> list[str]:
    return [h.episode.summary for h in db.owner(owner).recall(text=word, limit=50, access=False).memories]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_erasing_many_in_one_call_leaves_what_erasing_them_one_by_one_leaves(ldb: memdb.Database, seed: int) -> None:
    """Owners "many" and "one" record the same episodes with the same ids; "many" erases a
    random set in one call, "one" one id at a time: every global of the two is equal, node for
    node, check() passes, and a text search finds and ranks in both what it does in "never",
    which never recorded the erased episodes."""
    db = ldb
    rng = random.Random(seed)
    episodes = _episodes(rng, 300)
    _same_ids("many", "one")
    recorded = _record(db, "many", episodes)
    assert _record(db, "one", episodes) == recorded
    chosen = sorted(rng.sample(range(len(recorded)), 120))
    report = db.owner("many").erase([recorded[i] for i in chosen], reason="a request")
    one = db.owner("one")
    for i in chosen:
        try:
            one.erase(recorded[i], reason="a request")
        except NotFoundError:  # a fact version that went with its chain
            pass
    assert _tree(db, "many") == _tree(db, "one")
    kept = [ep for i, ep in enumerate(episodes) if recorded[i] not in set(report.ids)]
    _record(db, "never", kept)
    assert db.check().ok, db.check().problems
    for word in ["deploy", "zorblax", "w03", "w17", "acme"]:
        assert _found(db, "many", word) == _found(db, "one", word) == _found(db, "never", word), word


def test_an_erasure_of_an_unknown_id_among_others_removes_none(ldb: memdb.Database) -> None:
    """``Episodes.remove_many`` is all or none: one unknown id leaves every other episode and
    its postings in place."""
    db = ldb
    ids_ = _record(db, "ana", _episodes(random.Random(5), 20))
    before = _tree(db, "ana")
    with pytest.raises(NotFoundError):  # no enclosing transaction: its rollback would hide a partial removal
        db.episodes.remove_many("ana", [*ids_[:5], "20260501T000000000000Z-ffffff"])
    assert _tree(db, "ana") == before


def _full_owner(db: memdb.Database, clock: Clock, owner: str) -> None:
    """An owner with hot, summarized-free, archived and superseded episodes and facts."""
    mem = db.owner(owner)
    for i, ep in enumerate(_episodes(random.Random(7), 260)):
        mem.record(**ep)
        if i % 50 == 0:
            mem.record("fact", f"zorblax value {i}", key="zk")
    clock.advance(days=60)  # old enough, and never read: the archiving rule takes the low ones
    db.maintain()


def test_a_request_for_everything_leaves_no_node_of_the_owners_episodes(ldb: memdb.Database, clock: Clock) -> None:
    """``erase(everything=True)`` kills the owner's records, headers, cold records, indexes and
    text index by range (no zeroed column chunk of erased documents is left), keeps the owner (a
    new episode is found; its document number is a new one), and leaves another owner as it was."""
    db = ldb
    _full_owner(db, clock, "ana")
    db.owner("bob").record("debug", "bob's zorblax deploy", outcome="success")
    assert db.episodes.header("ana", next(db.episodes.archived_ids("ana"))) is not None  # archived ones too
    next_doc = db.globals["EPN"]["ana", "next_doc"]
    bob = _tree(db, "bob")
    report = db.owner("ana").erase(everything=True, reason="a request")
    assert report.count > 260
    above = {g for g in OWNER_KEYED if g.startswith(("KN", "PAT", "DIST"))}  # what layers above keep of the owner
    episode_globals = OWNER_KEYED - {"AUDIT", "LIFE", "EPIM", "COLDDICT", "EPN"} - above
    assert {g: db.globals[g].count(("ana",)) for g in sorted(episode_globals)} == dict.fromkeys(sorted(episode_globals), 0)
    assert {s[1] for s, _ in db.globals["EPN"].items(("ana",))} <= {"next_doc", "archive_changes", "dropped"}
    assert db.check().ok, db.check().problems
    assert _found(db, "ana", "zorblax") == []
    ep = db.owner("ana").record("debug", "a zorblax after the erasure", outcome="success")
    assert db.globals["EPDN"]["ana", ep.id] == next_doc  # numbers are never reused
    assert _found(db, "ana", "zorblax") == ["a zorblax after the erasure"]
    assert _tree(db, "bob") == bob
    assert db.check().ok, db.check().problems


def test_an_owner_erasure_leaves_no_key_under_the_owners_prefixes(ldb: memdb.Database, clock: Clock) -> None:
    """After ``erase_owner`` no global keyed by owners holds a node under the name (^LIFE: none
    below it), check() passes, and another owner's nodes are as they were."""
    db = ldb
    _full_owner(db, clock, "ana")
    db.owner("bob").record("debug", "bob's zorblax deploy", outcome="success")
    bob = _tree(db, "bob")
    db.erase_owner("ana", reason="account deleted")
    assert {g: db.globals[g].data(("ana",)) for g in sorted(OWNER_KEYED - {"LIFE"})} == dict.fromkeys(sorted(OWNER_KEYED - {"LIFE"}), 0)
    assert db.globals["LIFE"].data(("ana",)) < 10
    assert db.check().ok, db.check().problems
    assert _tree(db, "bob") == bob
    assert _found(db, "bob", "zorblax") == ["bob's zorblax deploy"]


def _rich_owner(db: memdb.Database, clock: Clock) -> None:
    """ "ana" with all that derives from records: sessions closed into typed episodes citing their
    events, others summarized as bursts (summaries citing their sources), pattern batches, facts
    recorded again, lessons approved, reflected on and shared at a ceremony, archives (summaries
    among them); and "bob" beside her, who approved her lessons and she his."""
    db.globals["KNM"].set(("salt",), bytes(16))  # the key of lessons' shingle hashes, else random per database
    db.configure(teams={"core": ["ana", "bob"]})
    ana, bob = db.owner("ana"), db.owner("bob")
    for i in range(16):
        for k in range(7):
            clock.advance(minutes=2)
            ana.record_exchange(f"s{i}", f"question {k} about the zorblax deploy {i}", f"answer {k}")
        ana.record("debug", f"deploy {i} failed", outcome="failure" if i % 3 else "success", tags=["ops"], lesson="read the logs")
        if i % 4 == 0:
            ana.record("fact", f"the deploy target is host {i}", key="target")
        if i % 2 == 0:
            ana.close_session(f"s{i}", kind="debug", outcome="success")
        clock.advance(hours=3)
    theirs = bob.record("debug", "bob's deploy", outcome="success", tags=["ops"])
    said = ("Always check the zorblax logs first", "Never deploy on fridays", "Pin the build tools")
    mine = [ana.save_lesson(text).id for text in said]
    db.approve(mine, by="bob")
    db.approve([bob.save_lesson("Always read bob's runbook first", cites=[theirs.id]).id], by="ana")
    db.ceremony("core")
    db.decide({mine[0]: "share"}, by="ana", team="core")
    clock.advance(days=2)
    db.maintain()  # the sessions left open are bursts: summarized, citing them
    db.reflect()
    clock.advance(days=60)
    db.maintain()  # archived, summaries too
    clock.advance(days=1)


_CHUNKS = ("EPC", "EPL", "EPCV", "EPLV")  # the owner's column chunks and their stamps


def test_a_request_for_everything_erases_what_the_whole_path_erases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``erase(everything=True)`` asks no finder what was derived, reads no summary's sources and
    frees none (every episode of the owner is a target, so what these find is one); the result
    is the one of the same request bounded by a time before everything, which does all that:
    the report, the audit records and every node left of every global. (Only the range deletes'
    own differ: no column chunk or zero counter of the owner's is left, which
    test_a_request_for_everything_leaves_no_node_of_the_owners_episodes pins.)"""
    monkeypatch.setattr(ids.secrets, "randbelow", lambda _n: 0)
    left, reports = [], []
    for n, bounded in enumerate((False, True)):
        ids._seqs.clear()  # each owner's ids count from the same start in both databases
        clock = Clock(T0)
        with memdb.open(tmp_path / str(n), clock=clock) as db:
            _rich_owner(db, clock)
            archived = [db.episodes.header("ana", eid) or {} for eid in db.episodes.archived_ids("ana")]
            assert any(h.get("kind") == "summary" for h in archived) and db.globals["PAT"].data(("ana",))
            since = {"since": T0 - dt.timedelta(days=365)} if bounded else {}
            reports.append(db.owner("ana").erase(everything=True, reason="a request", **since))
            nodes = {(name, subs): value for name in GLOBALS for subs, value in db.globals[name].items(())}
            assert db.check().ok, db.check().problems
        # the bounded request removes episode by episode: zeroed column chunks and counters, and their stamps
        left.append({k: v for k, v in nodes.items() if not (k[1][0] == "ana" and (k[0] in _CHUNKS or (k[0] == "EPN" and v == 0)))})
    whole, bounded_ = reports
    assert whole.count == bounded_.count > 140 and sorted(whole.ids) == sorted(bounded_.ids)
    assert whole.audit_id == bounded_.audit_id and sorted(whole.entries) == sorted(bounded_.entries) and len(whole.entries) >= 3
    stamps = {"EPCV", "EPLV"}  # the text index's chunk stamps, random at each write: compared by key only
    assert sorted(k for k in left[0] if k[0] in stamps) == sorted(k for k in left[1] if k[0] in stamps)
    assert {k: v for k, v in left[0].items() if k[0] not in stamps} == {k: v for k, v in left[1].items() if k[0] not in stamps}


def test_a_request_for_everything_takes_an_episode_an_index_lost(tmp_path: Path) -> None:
    """A request for everything asks no finder, so it takes every episode whose header the owner
    holds: a burst summary whose time-index entry was lost (a damaged database, which check()
    names) goes too, quoting the erased exchanges nowhere (revF)."""
    clock = Clock(dt.datetime(2026, 5, 1, 9, 0, tzinfo=dt.UTC))
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ana = db.owner("ana")
        for k in range(7):
            clock.advance(minutes=2)
            ana.record_exchange("s1", f"question {k} about zorblax", f"answer {k}")
        clock.advance(days=2)
        db.maintain()
        (summary,) = db.episodes.ids_of_kind("ana", "summary")
        (node,) = [subs for subs, _ in db.globals["EPT"].items(("ana",)) if str(subs[2]) == summary]
        db.globals["EPT"].kill(node)
        assert not db.check().ok
        report = ana.erase(everything=True, reason="a request")
        assert report.count == 8
        assert db.episodes.header("ana", summary) is None and db.episodes.record_of("ana", summary) is None
