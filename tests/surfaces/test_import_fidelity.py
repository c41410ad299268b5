"""Export then import keeps what a memory means, not only its rows.

An export writes each episode with the id it had; an import gives new ids. What ties episodes
together must follow: a burst summary's cites name its sources' new ids and those sources stay
``summarized`` (else the next maintain summarizes the same burst twice); a session an imported
typed episode closed stays closed (else the idle rule reads its captures as an open session and
a model distiller closes it again: two episodes of one piece of work, counted twice by history);
a cite of an episode the file does not hold (an earlier version: export writes current ones) is
dropped and counted, never left dangling.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.cli import main
from memdb.errors import ValidationError
from memdb.governance.distill import Draft, SessionCapture
from memdb.memory.models import Episode

UTC = dt.UTC
T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Judge:
    """A distiller that judges outcomes (a model without the network): it must not be asked."""

    judges_outcome = True

    def __init__(self) -> None:
        self.asked: list[str] = []

    def distill(self, capture: SessionCapture, rejected: Sequence[str] = ()) -> Draft:
        self.asked.append(capture.session)
        return Draft(f"Session {capture.session} distilled", outcome="success")


def exported(db: memdb.Database, owner: str = "ana") -> list[Episode]:
    """Every episode of ``owner``, archived ones too: what ``memdb export`` writes, and what a
    migration in Python hands to another database's ``import_episodes``."""
    return list(db.owner(owner).episodes(include_archived=True))


def a_burst(db: memdb.Database, clock: Clock, session: str = "s1", n: int = 7) -> list[str]:
    mem = db.owner("ana")
    ids = []
    for i in range(n):
        ids.append(mem.record_exchange(session, f"deploy question {i}", "ok").id)
        clock.advance(minutes=1)
    return ids


pytestmark = pytest.mark.usefixtures("backend")


def test_a_burst_summary_keeps_its_sources_and_is_not_written_again(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        a_burst(db, clock)
        clock.advance(days=2)
        assert db.maintain().summaries == 1
        rows = exported(db)
    later = Clock(T0 + dt.timedelta(days=40))
    with memdb.open(tmp_path / "b", clock=later) as db:
        report = db.owner("ana").import_episodes(rows, source="test")
        assert (report.count, report.dropped_cites) == (8, 0)
        by_source = dict(zip([r.id for r in rows], report.ids, strict=True))
        summary = next(ep for ep in db.owner("ana").episodes() if ep.kind == "summary")
        old_summary = next(r for r in rows if r.kind == "summary")
        assert list(summary.cites) == [by_source[c] for c in old_summary.cites]  # the new ids, in order
        assert {db.owner("ana").peek(c).status for c in summary.cites} == {"summarized"}
        assert db.maintain().summaries == 0  # the burst was summarized already
        assert db.owner("ana").recall(text="deploy", limit=20).total == 8


def test_a_closed_session_stays_closed(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        mem = db.owner("ana")
        captured = a_burst(db, clock, n=3)
        closed = mem.close_session("s1", kind="debug", outcome="failure")
        assert closed.episode is not None
        a_burst(db, clock, session="s2", n=2)  # never closed: it stays a session to close
        rows = exported(db)
    judge = Judge()
    later = Clock(T0 + dt.timedelta(days=3))
    with memdb.open(tmp_path / "b", clock=later, distiller=judge) as db:
        mem = db.owner("ana")
        report = mem.import_episodes(rows, source="test")
        by_source = dict(zip([r.id for r in rows], report.ids, strict=True))
        idle = db.close_idle_sessions()
        assert judge.asked == ["s2"] and [d.session for d in idle.closed] == ["s2"]
        again = mem.close_session("s1", kind="debug", outcome="success")
        assert again.status == "already_closed" and again.episode is not None
        assert again.episode.id == by_source[closed.episode.id]
        typed = [ep.session for ep in mem.episodes() if ep.kind in db.settings.typed_kinds]
        assert sorted(typed) == ["s1", "s2"]  # s1 once (imported), s2 closed here
        assert mem.history(kind="debug").total == 1
        # erasing an imported capture takes what was distilled from it, as it did before the export
        erased = mem.erase([by_source[captured[0]]], reason="the user asked")
        assert by_source[closed.episode.id] in erased.ids


def test_cites_of_episodes_not_in_the_file_are_dropped_and_counted(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        mem = db.owner("ana")
        first = mem.record("debug", "twilio webhook failed", outcome="failure", tags=["twilio"])
        clock.advance(minutes=1)
        newer = mem.supersede(first.id, reason="it was partial", outcome="partial")
        assert first.id in newer.cites
        rows = exported(db)
    with memdb.open(tmp_path / "b", clock=Clock(T0 + dt.timedelta(days=1))) as db:
        report = db.owner("ana").import_episodes(rows, source="test")
        assert (report.count, report.dropped_cites) == (1, 1)
        assert db.owner("ana").peek(report.ids[0]).cites == ()
        audit = [r for r in db.owner("ana").audit() if r["action"] == "import"]
        assert audit[-1]["dropped_cites"] == 1


@pytest.mark.lmdb_only(reason="the command takes a directory for --db; the API tests above run on both")
def test_the_command_s_json_counts_what_was_imported_skipped_and_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        first = db.owner("ana").record("debug", "twilio webhook failed", outcome="failure", tags=["twilio"])
        clock.advance(minutes=1)
        db.owner("ana").supersede(first.id, reason="it was partial", outcome="partial")
        db.owner("bo").record("exchange", "payroll runs on Friday")
    out = tmp_path / "x.jsonl"
    assert main(["export", "--db", str(tmp_path / "a"), "--file", str(out)]) == 0
    capsys.readouterr()
    for expected in (
        {"imported": {"ana": 1, "bo": 1}, "skipped": {"ana": 0, "bo": 0}, "dropped_cites": {"ana": 1, "bo": 0}},
        {"imported": {"ana": 0, "bo": 0}, "skipped": {"ana": 1, "bo": 1}, "dropped_cites": {"ana": 0, "bo": 0}},
    ):
        assert main(["import", "--db", str(tmp_path / "b"), str(out), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == expected


def test_an_id_given_twice_is_imported_once(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        db.owner("ana").record("debug", "twilio webhook failed", outcome="failure")
        rows = exported(db)
    with memdb.open(tmp_path / "b", clock=Clock(T0 + dt.timedelta(days=1))) as db:
        report = db.owner("ana").import_episodes(rows + rows, source="test")
        assert (report.count, report.skipped) == (1, 1)
        assert db.owner("ana").count() == 1


@pytest.mark.usefixtures("backend")
def test_an_erased_import_comes_back_when_imported_again(tmp_path: Path) -> None:
    """An accidental erase of imported episodes could not be undone from the export: importing
    it again said every line was "already imported" and wrote nothing (a DBA probe's find). The
    map of what was imported is followed only to episodes still here; one still here is skipped."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        for i in range(3):
            db.owner("ana").record("debug", f"deploy {i} failed", outcome="failure", tags=["acme" if i else "web"])
        rows = exported(db)
    with memdb.open(tmp_path / "b", clock=Clock(T0 + dt.timedelta(days=1))) as db:
        ana = db.owner("ana")
        assert ana.import_episodes(rows, source="backup").count == 3
        assert ana.erase(None, tags=["acme"], reason="by mistake").count == 2
        again = ana.import_episodes(rows, source="backup")
        assert (again.count, again.skipped) == (2, 1) and ana.count() == 3
        assert sorted(e.summary for e in ana.episodes()) == ["deploy 0 failed", "deploy 1 failed", "deploy 2 failed"]
        assert (ana.import_episodes(rows, source="backup").count, db.check().ok) == (0, True)


def ids(n: int) -> str:
    """A source id an export could have given (distinct for each ``n`` below 3,600)."""
    return f"20260301T09{n // 60:02d}{n % 60:02d}000000Z-{n:06x}"


def test_the_order_of_writing_follows_the_cites_and_keeps_the_facts_order(tmp_path: Path) -> None:
    """Items are written after the ones they cite (a topological order: a chain of thousands
    writes in linear time), facts in the order given (the last value given is the current one),
    a circle of cites loses only the cites it must, and a cite of an earlier import since
    erased is dropped, never written dangling."""
    clock = Clock(T0)
    day = dt.timedelta(days=1)
    with memdb.open(tmp_path / "b", clock=clock) as db:
        mem = db.owner("ana")
        report = mem.import_episodes(
            [
                {"id": ids(1), "kind": "exchange", "summary": "asked about plans", "ts": T0 - 3 * day},
                {"id": ids(2), "kind": "fact", "key": "plan", "summary": "plan is free", "cites": [ids(1)], "ts": T0 - 2 * day},
                {"id": ids(3), "kind": "fact", "key": "plan", "summary": "plan is pro", "ts": T0 - day},
            ],
            source="test",
        )
        assert mem.fact("plan").summary == "plan is pro" and report.dropped_cites == 0

        # one given first citing into a circle (10 cites 4; 4 and 5 cite each other): only a
        # cite that goes round the circle is dropped
        circle = [
            {"id": ids(10), "kind": "exchange", "summary": "x", "cites": [ids(4)], "ts": T0 - 4 * day},
            {"id": ids(4), "kind": "exchange", "summary": "a", "cites": [ids(5)], "ts": T0 - 3 * day},
            {"id": ids(5), "kind": "exchange", "summary": "b", "cites": [ids(4)], "ts": T0 - 2 * day},
        ]
        report = mem.import_episodes(circle, source="test")
        x, a, b = (mem.peek(i) for i in report.ids)
        assert report.dropped_cites == 1 and a.cites == () and b.cites == (a.id,) and x.cites == (a.id,)

        # facts of two keys keep their own orders, and make no circle of cites between them
        report = mem.import_episodes(
            [
                {"id": ids(20), "kind": "fact", "key": "plan2", "summary": "plan is team", "cites": [ids(21)], "ts": T0 - 2 * day},
                {"id": ids(21), "kind": "exchange", "summary": "asked", "cites": [ids(22)], "ts": T0 - 2 * day},
                {"id": ids(22), "kind": "fact", "key": "seats", "summary": "seats are 5", "ts": T0 - day},
            ],
            source="test",
        )
        assert report.dropped_cites == 0 and mem.fact("plan2").cites == (report.ids[1],)

        # an earlier import, erased since: a cite of it names nothing here
        first = mem.import_episodes([{"id": ids(7), "kind": "exchange", "summary": "source", "ts": T0 - 3 * day}], source="test")
        mem.erase(first.ids, reason="the user asked")
        later = mem.import_episodes([{"id": ids(8), "kind": "summary", "summary": "sum", "cites": [ids(7)], "ts": T0 - day}], source="test")
        assert later.dropped_cites == 1 and mem.peek(later.ids[0]).cites == ()

        # a chain given newest first: each written after the one it cites
        chain = [
            {"id": ids(100 + k), "kind": "exchange", "summary": f"step {k}", "ts": T0 - day,
             **({"cites": [ids(100 + k - 1)]} if k else {})}
            for k in range(300)
        ][::-1]  # fmt: skip
        report = mem.import_episodes(chain, source="test")
        by_source = dict(zip([r["id"] for r in chain], report.ids, strict=True))
        assert report.dropped_cites == 0
        assert all(mem.peek(by_source[ids(100 + k)]).cites == (by_source[ids(99 + k)],) for k in range(1, 300))
        assert db.check().ok


@pytest.mark.lmdb_only(reason="the command takes a directory for --db; the API tests above run on both")
def test_the_command_round_trip_keeps_cites_and_names_the_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        a_burst(db, clock)
        clock.advance(days=2)
        db.maintain()
    out = tmp_path / "x.jsonl"
    assert main(["export", "--db", str(tmp_path / "a"), "--file", str(out)]) == 0
    assert main(["import", "--db", str(tmp_path / "b"), str(out)]) == 0
    capsys.readouterr()
    with memdb.open(tmp_path / "b") as db:
        summary = next(ep for ep in db.owner("ana").episodes() if ep.kind == "summary")
        assert len(summary.cites) == 7 and {db.owner("ana").peek(c).status for c in summary.cites} == {"summarized"}
    # the file again with a bad line after the ones already imported: the error names its line
    lines = out.read_text().splitlines()
    bad = json.loads(lines[0])
    bad.update(id=None, kind="debug")  # a typed kind without an outcome
    out.write_text("\n".join([*lines, json.dumps(bad)]) + "\n")
    assert main(["import", "--db", str(tmp_path / "b"), str(out)]) != 0
    assert f"x.jsonl:{len(lines) + 1}" in capsys.readouterr().err


def test_an_import_refused_writes_nothing(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "b", clock=Clock(T0)) as db:
        good = {"kind": "debug", "summary": "ok", "outcome": "success", "ts": T0 - dt.timedelta(days=1)}
        with pytest.raises(ValidationError, match="import item 1"):
            db.owner("ana").import_episodes([good, {"kind": "debug", "summary": "no outcome"}], source="test")
        assert db.owner("ana").count() == 0
