"""``db.check()`` compares each archived episode's header with its cold record: what archiving
kept hot of it (time, kind, outcome, tags, session, version link, lesson, who took part, what it
decided, the account of the attempt) must be what the record says, and a cold record that
cannot be decoded is reported, never raised."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.engine import codec

T0 = dt.datetime(2026, 1, 5, 9, tzinfo=dt.UTC)


def _attempt(mem: Any, i: int) -> str:
    """An attempt with every field an archived header keeps."""
    return str(
        mem.record(
            "debug",
            f"pgbouncer pool exhausted on deploy {i}",
            outcome="failure",
            tags=["project-x", "postgres"],
            lesson="raise the pool size before a deploy",
            what_we_tried="restarted the pooler",
            what_happened="connections piled up again",
            why="the pool was sized for last year's traffic",
            participants=["ana", "bo"],
            decisions={"next": "resize the pool"},
            session="sess-deploy",
        ).id
    )


@pytest.fixture
def archived(tmp_path: Path) -> Iterator[tuple[memdb.Database, str]]:
    """A database with one archived attempt: (database, its id)."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        eid = _attempt(mem, 1)
        mem.record("routine", "rotated the logs", outcome="success")
        clock.advance(days=1)
        mem.archive(eid)
        assert db.check().problems == []
        yield db, eid


CHANGED = {  # a field archiving keeps hot, and a value its record does not hold
    "kind": "review",
    "outcome": "success",
    "tags": ["project-x"],
    "lesson": "nothing to learn",
    "participants": ["ana"],
    "decided": "next keep the pool decided decision",
    "account": "restarted the pooler",
}


@pytest.mark.parametrize("field", sorted(CHANGED))
def test_a_changed_field_of_an_archived_header_is_reported_by_name(archived: tuple[memdb.Database, str], field: str) -> None:
    """One field of the header written with the globals API, none of the archive's indexes
    touched: check() reports that field of that episode, and nothing else."""
    db, eid = archived
    states = db.globals["EPST"]
    header = states[("ana", eid)]
    assert header[field] != CHANGED[field]
    states[("ana", eid)] = {**header, field: CHANGED[field]}
    assert db.check().problems == [f"^EPST('ana',{eid!r}): archived header's {field} differs from its cold record"]


def test_a_field_the_record_lacks_is_reported_in_the_header(archived: tuple[memdb.Database, str]) -> None:
    """A header that keeps an account where its record tells none differs from it too."""
    db, _ = archived
    mem = db.owner("ana")
    other = str(mem.record("routine", "rotated the logs again", outcome="success").id)
    mem.archive(other)
    states = db.globals["EPST"]
    states[("ana", other)] = {**states[("ana", other)], "account": "tried something"}
    assert db.check().problems == [f"^EPST('ana',{other!r}): archived header's account differs from its cold record"]


def test_an_archived_header_without_its_one_liner_is_reported(archived: tuple[memdb.Database, str]) -> None:
    db, eid = archived
    states = db.globals["EPST"]
    states[("ana", eid)] = {k: v for k, v in states[("ana", eid)].items() if k != "one_line"}
    assert db.check().problems == [f"^EPST('ana',{eid!r}): archived header without a one-liner"]


def test_a_cold_record_that_cannot_be_decoded_is_reported_not_raised(archived: tuple[memdb.Database, str]) -> None:
    db, eid = archived
    cold = db.globals["COLD"]
    blob = cold[("ana", eid)]
    assert blob["codec"] != "zstd-dict"  # too few records to train a dictionary: plain zstandard
    cold[("ana", eid)] = {**blob, "data": b"not a zstandard frame"}
    assert db.check().problems == [f"^COLD('ana',{eid!r}): damaged (cannot be decoded)"]
    cold[("ana", eid)] = {**blob, "codec": "msgpack", "data": codec.pack_value(["not", "a", "record"])}
    assert db.check().problems == [f"^COLD('ana',{eid!r}): damaged (not an episode record)"]


@pytest.mark.parametrize("damaged", [{"participants": 5}, {"tags": 7}], ids=["participants", "tags"])
def test_a_cold_record_with_a_damaged_field_is_reported_not_raised(archived: tuple[memdb.Database, str], damaged: dict[str, Any]) -> None:
    """A record that decodes but holds a field of another type: reading what its header should
    keep raised TypeError out of check()."""
    db, eid = archived
    cold = db.globals["COLD"]
    record = {"ts": T0, "kind": "debug", **damaged}
    cold[("ana", eid)] = {**cold[("ana", eid)], "codec": "msgpack", "data": codec.pack_value(record)}
    assert db.check().problems == [f"^COLD('ana',{eid!r}): damaged (a field is not what an episode record holds)"]


def test_a_year_of_archiving_restoring_and_erasing_checks_clean(tmp_path: Path) -> None:
    """A year of daily work, maintained weekly (archives trained on a dictionary), with restores,
    corrections and an erasure of an earlier version whose current one was archived (its header
    and cold record both unlinked): every archived header agrees with its cold record."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock, sync=False) as db:
        mem = db.owner("ana")
        corrected: list[tuple[str, str]] = []  # (earlier version, current one)
        for i in range(250):  # enough hot records, when the first are archived, to train a dictionary on
            mem.record("routine", f"setup step {i} of the new cluster", outcome="success", tags=["setup"])
        for day in range(365):
            if day % 3 == 0:
                _attempt(mem, day)
            mem.record("roundtable", f"planning round {day}", outcome="partial", participants=["ana", "cy"], tags=["planning"])
            mem.record("routine", f"nightly backup {day}", outcome="success", tags=["ops"])
            if day % 40 == 5:
                old = str(mem.record("research", f"benchmark of queue {day}", outcome="partial", lesson="measure twice").id)
                corrected.append((old, str(mem.supersede(old, reason="wrong figure", summary=f"benchmark of queue {day}, rerun").id)))
            if day % 7 == 6:
                db.maintain()
            if day % 60 == 30:  # brought back, read, and archived again by a later run
                for eid in _archived_ids(db)[:3]:
                    mem.restore(eid)
            clock.advance(days=1)
        db.maintain()
        states = db.globals["EPST"]
        archived = _archived_ids(db)
        dicts = [s for s, _ in db.globals["COLDDICT"].items(("ana",)) if isinstance(s[1], int)]
        assert len(archived) > 300 and dicts, (len(archived), dicts)
        unlinked = next(old for old, new in corrected if states[("ana", new)].get("status") == "archived")
        mem.erase_versions(unlinked, reason="the old figure was someone's private number")
        assert db.check().problems == []


def _archived_ids(db: memdb.Database) -> list[str]:
    return [str(s[1]) for s, st in db.globals["EPST"].items(("ana",)) if st.get("status") == "archived"]
