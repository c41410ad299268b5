"""Archived memories as questions read them: what an archived attempt keeps hot of its story
(``archived_account``) and what history says of the archived attempts its words did not find;
the owner's ``ArchivedDigest`` kept up to date across archives, restores and erasures (here and
in another process) without reading every header again; and ranking that reads only the
archived headers that can reach the top, giving what ranking all of them gives."""

from __future__ import annotations

import datetime as dt
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.memory import layout as layout_module
from memdb.memory.layout import ACCOUNT_CHARS, archived_account, archived_words
from memdb.memory.text import term_counts
from memdb.query import engine
from memdb.query.archived import ArchivedDigest

T0 = dt.datetime(2026, 1, 5, 14, 0, tzinfo=dt.UTC)
_ROOT = Path(__file__).parents[2]


def _three_failures(mem: memdb.Memory, clock: Clock) -> list[str]:
    ids = []
    for i in range(3):
        ep = mem.record(
            "debug",
            f"Migration {i + 1} of billing-api failed",
            outcome="failure",
            tags=["migration"],
            what_happened="the pgbouncer pool held the advisory lock",
            lesson=f"drain the pool first ({i + 1})",
        )
        ids.append(ep.id)
        clock.advance(days=7)
    return ids


def test_history_finds_archived_attempts_by_what_happened(tmp_path: Path) -> None:
    """An archived attempt keeps hot a short account of what was tried, what happened and why:
    "the third time you tried this" stays true of the words only its what_happened said, and so
    do its lessons (DESIGN 5); ask finds it too."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock, sync=False) as db:
        mem = db.owner("dev")
        for eid in _three_failures(mem, clock):
            mem.archive(eid)
        h = mem.history(kind="debug", tags=["migration"], text="pgbouncer")
        assert (h.total, h.archived, h.counts["failure"]) == (3, 3, 3), str(h)
        assert h.lessons == ["drain the pool first (3)", "drain the pool first (2)", "drain the pool first (1)"]
        assert "no memory mentions" not in str(h)
        assert "3 archived match" in mem.ask("What happened with pgbouncer?").note
        assert len(mem.recall(text="pgbouncer", include_archived=True).memories) == 3
        assert db.check().problems == []
        restored = mem.restore(h.attempts[0].id)  # restoring takes the account out of the header
        assert "account" not in db.episodes.layout.states[("dev", restored.id)]


def test_history_says_archived_attempts_were_searched_by_what_stays_hot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Archived before their header kept an account (or with the words in what it does not keep),
    attempts that match but for the words are never said to be mentioned by no memory: history
    says how many archived attempts were searched by what stays hot of them only, and how to see them."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock, sync=False) as db:
        mem = db.owner("dev")
        monkeypatch.setattr(layout_module, "archived_account", lambda record: "")  # as archived before
        for eid in _three_failures(mem, clock):
            mem.archive(eid)
        mem.record("debug", "Cache warmed before the deploy", outcome="success", tags=["cache"])  # hot, another tag
        h = mem.history(kind="debug", tags=["migration"], text="pgbouncer")
        text = str(h)
        assert h.total == 0 and h.unsearched == 3
        assert "no memory mentions" not in text and "no hot memory mentions 'pgbouncer'" in text, text
        assert "3 archived attempts were searched only by what stays hot" in text and "history without text" in text, text
        # one found by its one-liner: the two others are said beside it
        h = mem.history(kind="debug", tags=["migration"], text="migration 3")
        assert (h.total, h.unsearched) == (1, 2) and "2 more archived attempts were searched only" in str(h), str(h)
        # nothing archived of that kind: nothing to say of cold storage
        h = mem.history(kind="sprint", text="pgbouncer")
        assert h.unsearched == 0 and "no memory mentions 'pgbouncer'" in str(h)


def test_an_archive_made_before_gets_its_account_from_cold_storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers archived before they kept an account get it once from their cold record, as they got
    their lesson and decisions (``Lifecycle.keep_archived_fields``)."""
    clock = Clock(T0)
    path = tmp_path / "db"
    with memdb.open(path, clock=clock, sync=False) as db:
        mem = db.owner("dev")
        with monkeypatch.context() as m:
            m.setattr(layout_module, "archived_account", lambda record: "")
            for eid in _three_failures(mem, clock):
                mem.archive(eid)
        db.globals["LIFE"].kill(("archived accounts kept",))  # as a database archived by an older memdb
        assert mem.history(kind="debug", tags=["migration"], text="pgbouncer").total == 0
    with memdb.open(path, clock=clock, sync=False) as db:
        h = db.owner("dev").history(kind="debug", tags=["migration"], text="pgbouncer")
        assert (h.total, h.archived, h.unsearched) == (3, 3, 0), str(h)
        assert db.check().problems == []


def test_an_archived_account_is_bounded_and_cut_at_a_word() -> None:
    assert archived_account({"kind": "debug", "summary": "x"}) == ""
    assert (
        archived_account({"kind": "debug", "what_happened": "the  pool\nheld the lock", "why": "locks"}) == "the pool held the lock | locks"
    )
    long = archived_account(
        {"kind": "debug", "what_we_tried": "retried the pgbouncer drain " * 40, "what_happened": "it failed", "why": "x " * 500}
    )
    assert len(long) <= ACCOUNT_CHARS
    tried, happened, why = long.split(" | ")
    assert happened == "it failed"  # a short part is kept whole; the long ones share the rest
    assert tried.endswith("…") and why.endswith("…")
    assert all(w in {"retried", "the", "pgbouncer", "drain"} for w in tried.rstrip("…").split()), tried  # no word cut in two


def _digest_of(mem: memdb.Memory) -> ArchivedDigest | None:
    return mem._queries._archived_digest()


def _fresh_digest(db: memdb.Database, mem: memdb.Memory) -> ArchivedDigest | None:
    db.episodes.layout.digests.clear()
    return _digest_of(mem)


def _same(a: ArchivedDigest, b: ArchivedDigest) -> None:
    assert (a.keys, a.ids, a.times, a.kinds, a.outcomes, a.sessions, a.tags, a.words) == (
        b.keys,
        b.ids,
        b.times,
        b.kinds,
        b.outcomes,
        b.sessions,
        b.tags,
        b.words,
    )
    assert a.by_term == b.by_term and a.by_tag == b.by_tag


def test_the_digest_follows_archives_restores_and_erasures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After archives, restores and erasures the kept digest is updated from the headers of the
    memories that came into the archive only (a nightly archive made the next question read every
    archived header: 0.25 s at 8,000), and equals the digest made anew; an erased archived memory
    is never found. A header changed in place (a backfill) makes it anew."""
    clock = Clock(T0 + dt.timedelta(days=10))
    rng = random.Random(5)
    words = ["deploy", "billing", "webhook", "cache", "pgbouncer", "schema", "queue"]
    with memdb.open(tmp_path / "db", clock=clock, sync=False) as db:
        mem = db.owner("dev")
        ids = []
        for i in range(60):
            text = " ".join(rng.sample(words, 2))
            ids.append(
                mem.record(
                    rng.choice(["debug", "sprint"]),
                    f"{text} job {i}",
                    outcome=rng.choice(["success", "failure"]),
                    tags=rng.sample(["ops", "billing", "infra"], rng.randint(0, 2)),
                    ts=T0 + dt.timedelta(hours=i),
                ).id
            )
        archived: set[str] = set()
        for eid in rng.sample(ids, 20):
            mem.archive(eid)
            archived.add(eid)
        assert _digest_of(mem) is not None
        made: list[int] = []
        real_of = ArchivedDigest.of.__func__  # type: ignore[attr-defined]
        monkeypatch.setattr(ArchivedDigest, "of", classmethod(lambda cls, headers: made.append(1) or real_of(cls, headers)))
        erased: set[str] = set()
        for step in range(40):
            action = rng.choice(["archive", "archive", "restore", "erase", "record"])
            hot = [e for e in ids if e not in archived and e not in erased]
            if action == "archive" and hot:  # of any age: often before the others archived
                eid = rng.choice(hot)
                mem.archive(eid)
                archived.add(eid)
            elif action == "restore" and archived:
                eid = rng.choice(sorted(archived))
                mem.restore(eid)
                archived.discard(eid)
            elif action == "erase" and archived:
                eid = rng.choice(sorted(archived))
                mem.erase([eid], reason="asked")
                archived.discard(eid)
                erased.add(eid)
            elif action == "record":
                ids.append(mem.record("debug", f"pgbouncer step {step}", outcome="failure", tags=["ops"]).id)
            kept = _digest_of(mem)
            assert kept is not None and set(kept.ids) == archived
            assert not made, f"made anew after {action}"
            fresh = _fresh_digest(db, mem)
            made.clear()
            assert fresh is not None
            _same(kept, fresh)
            found = {m.id for m in mem.recall(text="pgbouncer deploy billing", include_archived=True, limit=100).memories}
            assert not found & erased
        # a header changed in place, by another counter move than a memory in or out: made anew
        eid = sorted(archived)[0]
        db.episodes.keep_in_header("dev", eid, account="zorblax handled")
        kept = _digest_of(mem)
        assert made and kept is not None and "zorblax" in kept.by_term


def _in_another_process(path: Path, code: str) -> None:
    script = "import datetime as dt, sys\nimport memdb\nwith memdb.open(sys.argv[1]) as db:\n    exec(sys.argv[2])\n"
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), textwrap.dedent(code)], capture_output=True, text=True, cwd=_ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr


def test_the_digest_follows_another_process_archiving_and_erasing(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        mem = db.owner("ana")
        old = [mem.record("debug", f"zorblax outage {i}", outcome="failure", ts=T0 + dt.timedelta(days=i)).id for i in range(4)]
        mem.archive(old[1])
        assert "1 archived match" in mem.ask("zorblax outage").note  # the digest is made and kept
        _in_another_process(
            path,
            f"""
            mem = db.owner("ana")
            mem.archive({old[0]!r}); mem.archive({old[3]!r}); mem.erase([{old[1]!r}], reason="asked")
            """,
        )
        note = mem.ask("zorblax outage").note
        assert "2 archived matches" in note, note
        kept = _digest_of(mem)
        assert kept is not None and sorted(kept.ids) == sorted([old[0], old[3]])
        _same(kept, _fresh_digest(db, mem) or ArchivedDigest())


def _corpus(mem: memdb.Memory, clock: Clock, rng: random.Random, n: int) -> None:
    words = ["deploy", "atlas", "billing", "webhook", "retry", "cache"]
    for i in range(n):
        clock.advance(minutes=rng.randint(1, 600))
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
        ep = mem.record(
            rng.choice(["sprint", "debug", "routine"]),
            f"{text} step {i}",
            outcome=rng.choice(["success", "failure", "partial"]),
            tags=rng.sample(["atlas", "ops", "billing"], rng.randint(0, 2)),
            lesson=rng.choice([None, "drain the pool"]),
        )
        if rng.random() < 0.3:
            mem.feedback(ep.id, rng.choice([-1.0, 0.5, 1.0]))


def test_prepare_ranks_archived_memories_as_reading_them_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranking reads the headers of the archived matches that can reach the top only: on a random
    archive (relevance from feedback and accesses, times over months, boost tags), recall_memories
    and prepare give what ranking every archived match from its header gives (no digest, no kernel
    pages): the same memories in the same order with the same scores."""
    clock = Clock(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    rng = random.Random(2026)
    with memdb.open(tmp_path / "db", clock=clock, sync=False) as db:
        mem = db.owner("dev")
        _corpus(mem, clock, rng, 300)
        clock.advance(days=90)
        assert db.maintain(now=clock.now).archived > 100
        queries = mem._queries
        for text in ("deploy atlas", "billing retry", "webhook cache", "atlas"):  # read while archived: their relevance rises
            for _ in range(3):
                mem.recall(text=text, include_archived=True, limit=8)
        db.episodes.flush()
        _corpus(mem, clock, rng, 40)
        monkeypatch.setattr(queries._layer.tracker, "touch", lambda *a: None)
        for _ in range(30):
            args: dict[str, Any] = {
                "text": " ".join(rng.sample(["deploy", "atlas", "billing", "webhook", "retry", "cache", "step"], rng.randint(1, 3))),
                "limit": rng.choice([1, 2, 5, 12]),
                "kind": rng.choice([None, "sprint", "debug"]),
                "any_tags": rng.sample(["atlas", "ops", "billing"], rng.choice([0, 1, 2])),
                "with_outcome": rng.random() < 0.5,
                "include_archived": True,
            }
            fast = [(h.id, h.score) for h in queries.recall_memories(now=clock.now, **args)]
            with monkeypatch.context() as m:  # every archived header read and its words counted, every match ranked
                m.setattr(engine, "_DIGESTED", -1)
                m.setattr(engine, "_KERNEL_PAGES", False)
                slow = [(h.id, h.score) for h in queries.recall_memories(now=clock.now, **args)]
            assert fast == slow, args
        with monkeypatch.context() as m:
            m.setattr(engine, "_DIGESTED", -1)
            m.setattr(engine, "_KERNEL_PAGES", False)
            slow_prep = mem.prepare("Deploy atlas", now=clock.now)
        fast_prep = mem.prepare("Deploy atlas", now=clock.now)
        assert [(h.id, h.score) for h in fast_prep.records] == [(h.id, h.score) for h in slow_prep.records]
        assert fast_prep.text == slow_prep.text


def test_an_archived_match_read_from_the_digest_is_the_one_read_from_its_header() -> None:
    """The digest counts an archived memory's words as ``archived_words`` gives them."""
    header = {"ts": T0, "kind": "debug", "outcome": "failure", "tags": ["ops"], "one_line": "pgbouncer pgbouncer held", "account": "lock"}
    d = ArchivedDigest.of([(b"k", "id1", header)])
    assert d.words[0] == dict(term_counts(archived_words(header)))
    assert d.words[0]["pgbouncer"] == 2 and d.by_term["lock"] == [0]  # the account's words are among them
