"""An owner erased by one process while another keeps running (``memdb serve``, an MCP server):
what the running one cached or loaded of the owner must not outlive the erasure, nor undo a
change made since by a third (revB findings 2, 3 and 4)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from clocks import Clock

import memdb
from memdb.engine.postgres import PostgresStore

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

T0 = dt.datetime(2026, 5, 1, 9, 0, tzinfo=dt.UTC)
_ROOT = Path(__file__).parents[2]


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock(T0)


def in_another_process(db: memdb.Database, path: Path, code: str) -> str:
    """Run ``code`` with ``db``, a ``memdb.Database`` on the same database opened by a new
    process, and return what it printed."""
    if isinstance(db.store, PostgresStore):  # the conftest's router holds the server's URL
        target = [memdb.open.url, db.store.name]  # type: ignore[attr-defined]
    else:
        target = [str(path), ""]
    script = textwrap.dedent(
        """
        import datetime as dt, sys
        import memdb
        where, name = sys.argv[1], sys.argv[2]
        with (memdb.open(where, name=name) if name else memdb.open(where)) as db:
            exec(sys.argv[3])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *target, textwrap.dedent(code)], capture_output=True, text=True, cwd=_ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _fill(mem: memdb.Memory, word: str, n: int = 210) -> list[str]:
    """Enough records for the owner's cold storage to train a dictionary on (200 samples)."""
    return [mem.record("debug", f"{word} job {i} failed on host {word}-{i}", outcome="failure", tags=["ops"]).id for i in range(n)]


def test_dictionary_ids_grow_across_an_owner_erasure(tmp_path: Path, clock: Clock) -> None:
    """The erasure took ^COLDDICT(owner, "last"), so the name's next dictionary was numbered 1
    again; a process holding a compressor for the erased owner's dictionary 1 then archived the
    new owner's records with it, labelled dictionary 1: they could never be restored, and
    check() said ok."""
    path = tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        first = _fill(mem, "zorblax")
        clock.advance(days=1)
        mem.archive(first[0])  # trains the owner's dictionary; this process keeps its compressor
        in_another_process(
            db,
            path,
            """
            db.erase_owner("ana", reason="account deleted")
            mem = db.owner("ana")
            ids = [mem.record("debug", f"quibblefrost task {i} on rack {i}", outcome="success").id for i in range(210)]
            mem.archive(ids[0])
            """,
        )
        target = [e.id for e in mem.episodes()][-1]
        mem.archive(target)
        assert db.check().ok, db.check().problems
        assert "quibblefrost" in mem.restore(target).summary
        assert db.globals["COLDDICT"].get(("ana", "last")) == db.globals["COLDDICT"].get((0, "last")) == 2


def test_check_finds_a_cold_record_its_dictionary_does_not_decode(tmp_path: Path, clock: Clock) -> None:
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        ids = _fill(mem, "zorblax")
        mem.archive(ids[0])
        dicts = db.globals["COLDDICT"]
        dict_id = dicts.get(("ana", "last"))
        assert db.check().ok
        samples = [f"another owner's text {i} about {i * 7} invoices".encode() * 3 for i in range(300)]
        dicts.set(("ana", dict_id), zstandard.train_dictionary(16 * 1024, samples).as_bytes())
        assert db.check().problems == [f"^COLD('ana',{ids[0]!r}): compressed with another dictionary than ^COLDDICT('ana',{dict_id})"]
        dicts.kill(("ana", dict_id))
        assert db.check().problems == [f"^COLD('ana',{ids[0]!r}): its dictionary {dict_id} is missing from ^COLDDICT (or damaged)"]
        # a damaged record is reported, never a KeyError out of check (a review's find)
        cold = db.globals["COLD"]
        for subs, blob in list(cold.items(("ana",))):
            cold[subs] = {k: v for k, v in blob.items() if k != "dict"}
        assert db.check().problems == [f"^COLD('ana',{ids[0]!r}): damaged (no dictionary number or no compressed data)"]
        for subs, _ in list(cold.items(("ana",))):
            cold[subs] = "not a record"
        assert db.check().problems == [f"^COLD('ana',{ids[0]!r}): damaged (not a cold record)"]


def test_an_owner_erasure_keeps_the_dictionary_ids_of_a_database_older_than_their_mark(tmp_path: Path, clock: Clock) -> None:
    """A database whose dictionaries were trained before ^COLDDICT(0, "last") existed: the
    erasure raises the mark to the owner's own newest id before taking it."""
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        mem.archive(_fill(mem, "zorblax")[0])
        db.globals["COLDDICT"].kill((0,))
        db.erase_owner("ana", reason="account deleted")
        assert db.globals["COLDDICT"].get((0, "last")) == 1
        mem.archive(_fill(mem, "quibblefrost")[0])
        assert db.globals["COLDDICT"].get(("ana", "last")) == 2 and db.check().ok


def test_an_owner_erasure_keeps_a_team_configured_elsewhere(tmp_path: Path, clock: Clock) -> None:
    """The erasure took the teams from this process's settings, loaded before another process
    configured a team, and wrote the whole mapping back: that team was deleted with its other
    members, and the audit record did not list it."""
    path = tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        db.configure(teams={"core": ["ana", "other"]})
        db.owner("ana").record("debug", "x", outcome="success")
        in_another_process(db, path, 'db.configure(teams={"core": ["ana", "other"], "ops": ["ana", "bob"]})')
        db.erase_owner("ana", reason="account deleted")
        assert db.settings.teams == {"core": ["other"], "ops": ["bob"]}
        (record,) = db.owner_erasures("ana")
        assert record["teams"] == ["core", "ops"]
    with memdb.open(path, clock=clock) as db:
        assert db.settings.teams == {"core": ["other"], "ops": ["bob"]}


def test_another_process_forgets_an_erased_owners_archive(tmp_path: Path, clock: Clock) -> None:
    """This process's digest of the owner's archived memories was checked against the owner's
    counters (archived, archive_changes), which the erasure resets: once the name archived one
    memory again, the counters matched and ask answered from the erased owner's archive."""
    path = tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        mem.archive(mem.record("debug", "zorblax outage in the billing cluster", outcome="failure", ts=T0 - dt.timedelta(days=3)).id)
        assert "1 archived match" in mem.ask("zorblax").note  # the digest is made and kept
        in_another_process(
            db,
            path,
            """
            db.erase_owner("ana", reason="account deleted")
            mem = db.owner("ana")
            mem.archive(mem.record("debug", "printer toner replaced", outcome="success", ts=dt.datetime(2026, 4, 1, tzinfo=dt.UTC)).id)
            """,
        )
        assert dict(db.globals["EPN"].items(("ana",)))[("ana", "archive_changes")] == 1  # as before the erasure
        answer = mem.ask("zorblax")
        assert not answer.found and "archived" not in answer.note, answer.note
        assert "1 archived match" in mem.ask("toner").note
