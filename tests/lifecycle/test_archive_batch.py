"""Archiving in batches (``Lifecycle.archive_due``: ``_ARCHIVE_BATCH`` episodes per write
transaction) writes what archiving one episode per transaction wrote, and a batch lands whole
or not at all. The races of a batch with another process are in test_races.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
import memdb.lifecycle.maintain as maintain
from memdb.errors import SanitizerError
from memdb.lifecycle.summarize import ExtractiveSummarizer
from memdb.memory.episodes import OwnerEpisodes
from memdb.memory.models import Episode
from memdb.memory.sanitize import RegexSanitizer

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
LATER = T0 + dt.timedelta(days=40)  # every imported episode 40 days idle
WORDS = ("deploy", "ledger", "invoice", "cron", "backup", "pgbouncer", "retry", "timeout", "migration", "cache")

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


def history(n: int) -> list[dict[str, Any]]:
    """``n`` past episodes sharing words (so they share posting blocks), one in three kept hot by
    ``urgent`` (tag weight 1.0 keeps relevance >= 3.5), some with participants, lessons,
    decisions and an account of what was tried, which an archived header keeps."""
    items = []
    for i in range(n):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
        item: dict[str, Any] = {
            "kind": ("routine", "debug", "review")[i % 3], "summary": f"job {i} {words}", "outcome": ("success", "failure")[i % 2],
            "tags": ["cron", *(["urgent"] if i % 3 == 0 else []), WORDS[i % len(WORDS)]],
            "ts": T0 - dt.timedelta(days=1, minutes=7 * i), "session": f"s{i % 9}",
        }  # fmt: skip
        if i % 4 == 0:
            item.update(participants=["bob"], lesson=f"check the {WORDS[i % len(WORDS)]} first")
        if i % 5 == 0:
            item.update(decisions={"next": "reject", "confidence": 7.5}, what_we_tried=f"restarted {words}")
        items.append(item)
    return items


def built(path: Path, clock: Clock) -> memdb.Database:
    """A database of 230 imported episodes (enough for a trained cold dictionary) and what
    archiving never takes: a fact, and a superseded version."""
    db = memdb.open(path, clock=clock)
    db.configure(burst_events=1_000_000)  # sessions of imported history are bursts: their summaries would get new ids in each
    mem = db.owner("ana")
    mem.import_episodes(history(230), source="test")
    mem.record("fact", "likes tea", key="drink")
    old = mem.record("routine", "nightly ledger copy", outcome="success", tags=["cron"])
    mem.supersede(old.id, reason="fix", summary="nightly ledger copy, corrected")
    return db


def clone(db: memdb.Database, path: Path, clock: Clock) -> memdb.Database:
    """A second database holding exactly ``db``'s keys and values (its ids too), on the same backend."""
    with db.store.read() as txn:
        items = [(bytes(k), bytes(v)) for k, v in txn.scan(b"", b"\xff" * 8)]
    other = memdb.open(path, clock=clock)
    with other.store.write() as txn:
        txn.delete_range(b"", b"\xff" * 8)
        txn.put_many(items)
    other.close()
    return memdb.open(path, clock=clock)


_STAMPS = ("EPCV", "EPLV")  # the text index's random chunk stamps: fresh bytes on every write


def contents(db: memdb.Database) -> dict[str, Any]:
    """Every global's nodes, decoded; audit records in their order (their ids count on from a
    random start per process) and chunk stamps left out."""
    out: dict[str, Any] = {}
    for name in db.globals.names():
        if name in _STAMPS:
            continue
        items = list(db.globals[name].items(()))
        out[name] = [value for _, value in items] if name.startswith("AUDIT") else items
    return out


@pytest.mark.parametrize("batch", [7, maintain._ARCHIVE_BATCH])
def test_batched_archiving_writes_what_one_by_one_wrote(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    one_by_one = built(tmp_path / "a", clock)
    batched = clone(one_by_one, tmp_path / "b", clock)
    try:
        clock.now = LATER
        monkeypatch.setattr(maintain, "_ARCHIVE_BATCH", 1)
        reference = one_by_one.maintain()
        monkeypatch.setattr(maintain, "_ARCHIVE_BATCH", batch)
        report = batched.maintain()
        assert reference.archived == report.archived == 154  # the 230 imported less the 77 urgent ones, and the corrected version
        assert reference.changed_meanwhile == report.changed_meanwhile == 0
        # the same records, headers, cold records, indexes, posting blocks, counters and audit records
        assert contents(batched) == contents(one_by_one)
        assert batched.check().problems == [] and one_by_one.check().problems == []
        assert batched.maintain().archived == 0
    finally:
        one_by_one.close()
        batched.close()


# --- a failure mid-batch -----------------------------------------------------------------------


class MarkingSummarizer(ExtractiveSummarizer):
    """The extractive one-liner, marked for the episodes named in ``marked``."""

    def __init__(self) -> None:
        self.marked: set[str] = set()

    def one_line(self, episode: Episode) -> str:
        line = super().one_line(episode)
        return f"MARKED {line}" if episode.id in self.marked else line


class RefusingSanitizer(RegexSanitizer):
    """The built-in sanitizer, failing on any text holding ``MARKED`` (an audit record's one-liner)."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        if any("MARKED" in text for text in texts.values()):
            raise RuntimeError("refused")
        return super().sanitize(texts)


def _failing_from(calls: int, real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, raising from its ``calls``-th call on."""
    seen = [0]

    def failing(*args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] >= calls:
            raise RuntimeError("crashed")
        return real(*args, **kwargs)

    return failing


@pytest.fixture
def marked(tmp_path: Path, clock: Clock) -> Iterator[tuple[memdb.Database, MarkingSummarizer]]:
    summarizer = MarkingSummarizer()
    db = memdb.open(tmp_path / "f", clock=clock, summarizer=summarizer, sanitizer=RefusingSanitizer())
    yield db, summarizer
    db.close()


@pytest.mark.parametrize("failure", ["audit record refused", "crash after the batch's writes"])
def test_a_failure_mid_batch_archives_nothing_of_that_batch(
    marked: tuple[memdb.Database, MarkingSummarizer], clock: Clock, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    db, summarizer = marked
    mem = db.owner("ana")
    ids = mem.import_episodes([{**item, "tags": ["cron"]} for item in history(10)], source="test").ids
    clock.now = LATER
    db.episodes.rescore(LATER)  # as maintain does first
    due = list(db.episodes.ids_in_band("ana", 2))  # the order archive_due takes them in
    assert sorted(due) == sorted(ids)
    monkeypatch.setattr(maintain, "_ARCHIVE_BATCH", 4)
    if failure == "audit record refused":  # the 2nd episode of the 2nd batch: its audit record fails to sanitize
        summarizer.marked.add(due[5])
        error: type[Exception] = SanitizerError
    else:  # the 2nd batch fails once its records, indexes, postings and audit records are written, before its commit
        monkeypatch.setattr(OwnerEpisodes, "_bump_df", _failing_from(2, OwnerEpisodes._bump_df))
        error = RuntimeError
    with pytest.raises(error):
        db.maintain()
    # one archive per transaction left the 1st episode of the 2nd batch archived (5 in all, or 1 for the crash)
    states = {eid: (db.episodes.header("ana", eid) or {}).get("status") for eid in ids}
    assert {eid for eid, status in states.items() if status == "archived"} == set(due[:4])
    assert db.episodes.layout.stats.get(("ana", "archived")) == 4
    assert [a["episode"] for a in mem.audit() if a["action"] == "archive"] == due[:4]
    assert list(db.episodes.ids_in_band("ana", 2)) == due[4:]  # the rest is hot, in its indexes
    assert db.check().problems == []
    summarizer.marked.clear()
    monkeypatch.undo()
    assert db.maintain().archived == 6
    assert db.check().problems == []
