"""The owner handle: one class by composition, no internal operation reachable, and every path
that takes an episode out of hot storage leaves an audit record naming it."""

from __future__ import annotations

import datetime as dt
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.errors import ValidationError
from memdb.memory.layout import GLOBALS

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


def _public_methods() -> list[str]:
    return sorted(name for name, _ in inspect.getmembers(memdb.Memory, callable) if not name.startswith("_"))


def test_the_handle_is_one_class_composed_of_its_parts() -> None:
    """No layer is stacked under the handle by inheritance, and each public method is its own."""
    assert memdb.Memory.__mro__ == (memdb.Memory, object)
    for name in _public_methods():
        assert name in vars(memdb.Memory), name


def test_internal_operations_are_not_reachable_from_the_handle(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        for internal in ("remove", "move_to_cold", "move_from_cold", "clean", "audit_log", "store", "set_status", "load"):
            assert not hasattr(mem, internal), internal


def test_the_query_hit_is_hit_and_memory_is_the_handle(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        assert type(mem) is memdb.Memory
        mem.record("debug", "deploy failed", outcome="failure", tags=["x"])
        (hit,) = mem.recall(tags=["x"]).memories
        assert type(hit) is memdb.Hit and hit.episode.summary == "deploy failed"


def _hot_ids(db: memdb.Database, owner: str) -> set[str]:
    return {e.id for e in db.owner(owner).episodes()}


def _audited_ids(db: memdb.Database, owner: str) -> set[str]:
    named: set[str] = set()
    for record in db.audit(owner):
        if isinstance(record.get("episode"), str):
            named.add(record["episode"])
        named.update(record.get("episodes") or ())
    return named


def _world(tmp_path: Path) -> tuple[memdb.Database, Clock, list[str]]:
    """An owner with a summarizable burst, old idle episodes and recent ones."""
    clock = Clock(T0)
    db = memdb.open(tmp_path / "db", clock=clock)
    mem = db.owner("ana")
    ids = [mem.record("debug", f"deploy step {i} failed", outcome="failure", tags=["deploy"], session="s1").id for i in range(7)]
    ids += [mem.record_exchange("s2", f"question {i}", "answer").id for i in range(2)]
    clock.advance(days=1)
    return db, clock, ids


# Every public method of the handle, with a call that exercises it, or None where the method
# cannot take an episode out of hot storage by its nature (reads, captures, knowledge writes).
# A new public method must be listed here: test_every_public_method_is_classified fails otherwise.
_WAYS: dict[str, Callable[[memdb.Memory, list[str]], Any] | None] = {
    "archive": lambda mem, ids: mem.archive(ids[0]),
    "erase": lambda mem, ids: mem.erase(ids[:2], reason="asked to"),
    "delete": lambda mem, ids: mem.delete(ids[3], reason="wrong"),
    "erase_versions": lambda mem, ids: (
        mem.supersede(ids[4], reason="typo", summary="deploy step 4 failed twice"), mem.erase_versions(ids[4], reason="old value")
    ),
    "restore": lambda mem, ids: (mem.archive(ids[1]), mem.restore(ids[1])),
    "feedback": lambda mem, ids: mem.feedback(ids[0], -1.0),
    "record": lambda mem, ids: mem.record("debug", "another", outcome="success"),
    "record_exchange": lambda mem, ids: mem.record_exchange("s3", "hi", "ho"),
    "record_tool_call": lambda mem, ids: mem.record_tool_call("s3", "search", {"q": "x"}),
    "record_tool_result": lambda mem, ids: mem.record_tool_result(mem.record_tool_call("s3", "search", {}).id, {"ok": 1}),
    "import_episodes": lambda mem, ids: mem.import_episodes([{"kind": "debug", "summary": "old", "outcome": "partial"}], source="t"),
    "get": lambda mem, ids: mem.get(ids[0]),
    "recall": lambda mem, ids: mem.recall(tags=["deploy"]),
    "ask": lambda mem, ids: mem.ask("what failed on deploy?"),
    "history": lambda mem, ids: mem.history(kind="debug"),
    "prepare": lambda mem, ids: mem.prepare("deploy again", kind="debug"),
    "save_lesson": lambda mem, ids: mem.save_lesson("run migrations first", cites=[ids[0]]),
    "export_timeline": lambda mem, ids: mem.export_timeline("s1"),
    "timeline": lambda mem, ids: mem.timeline("s1"),
    "close_session": lambda mem, ids: mem.close_session("s2", kind="routine", outcome="success"),
    "supersede": lambda mem, ids: mem.supersede(ids[0], reason="it worked after all", outcome="success"),
    "fact": lambda mem, ids: (mem.record("fact", "dark", key="ana/ui"), mem.record("fact", "light", key="ana/ui"), mem.fact("ana/ui")),
    "versions": None, "facts": None,
    "knowledge": None, "entries": None, "patterns": None, "peek": None, "explain": None, "count": None,
    "episodes": None, "export": None, "known_tags": None, "audit": None, "now": None, "relevances": None, "tool_sessions": None,
}  # fmt: skip


def test_every_public_method_is_classified() -> None:
    assert sorted(_WAYS) == _public_methods()


@pytest.mark.parametrize("method", [name for name, way in _WAYS.items() if way is not None])
def test_every_way_out_of_hot_storage_is_audited(tmp_path: Path, method: str) -> None:
    """Whatever a handle method does, each episode it takes out of hot storage (archived, erased,
    deleted) is named by an audit record written with it, and the indexes agree."""
    db, _, ids = _world(tmp_path)
    with db:
        mem = db.owner("ana")
        before, audited_before = _hot_ids(db, "ana"), _audited_ids(db, "ana")
        way = _WAYS[method]
        assert way is not None
        way(mem, ids)
        gone = before - _hot_ids(db, "ana")
        assert gone <= _audited_ids(db, "ana") - audited_before, f"{method}: left hot storage unaudited: {gone}"
        assert db.check().ok
        if method in ("archive", "erase", "delete", "erase_versions"):
            assert gone, f"{method} took nothing out: the walk would prove nothing"


def test_maintain_and_retention_audit_what_they_take(tmp_path: Path) -> None:
    """The rule runs: archiving by relevance, burst summaries, retention; one audit record per episode taken."""
    db, clock, _ = _world(tmp_path)
    with db:
        db.configure(retention_days=300)
        before = _hot_ids(db, "ana")
        clock.advance(days=60)
        report = db.maintain()
        assert report.archived
        clock.advance(days=300)
        assert db.maintain().purged
        gone = before - _hot_ids(db, "ana")
        assert gone and gone <= _audited_ids(db, "ana")
        assert db.check().ok


def test_every_global_memdb_writes_is_named_in_the_layout() -> None:
    """One module holds the global names: a new global elsewhere must be registered there."""
    import re

    root = Path(memdb.__file__).parent
    used = set()
    for path in root.rglob("*.py"):
        used.update(re.findall(r"""(?:space|globals)\[["']([A-Z][A-Z0-9]*)["']\]""", path.read_text()))
    assert used and used <= set(GLOBALS), sorted(used - set(GLOBALS))


def test_recall_offset_pages_and_counts_only_what_it_returns(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=Clock(T0)) as db:
        mem = db.owner("ana")
        for i in range(7):
            mem.record("debug", f"attempt {i}", outcome="success", tags=["deploy"], ts=T0 - dt.timedelta(hours=i + 1))
        first = [m.episode.id for m in mem.recall(tags=["deploy"], limit=3).memories]
        second = mem.recall(tags=["deploy"], limit=3, offset=3)
        last = mem.recall(tags=["deploy"], limit=3, offset=6)
        ids = first + [m.episode.id for m in second.memories] + [m.episode.id for m in last.memories]
        assert second.total == 7 and len(ids) == len(set(ids)) == 7
        db.flush()  # access counts are buffered
        assert [mem.peek(eid).access_count for eid in ids] == [1] * 7  # a later page does not count earlier ones again
        assert not mem.recall(tags=["deploy"], offset=7).memories
        with pytest.raises(ValidationError, match="offset -1"):
            mem.recall(tags=["deploy"], offset=-1)


@pytest.mark.parametrize("complete", [False, True])
def test_what_export_writes_import_episodes_brings_back(tmp_path: Path, backend: str, complete: bool) -> None:
    """A review's find: ``export``'s docstring says ``import_episodes`` brings its lines back,
    but it refused them (owner, relevance, status: "not a field a capture sets"; a complete
    export at its first earlier version); only ``memdb import`` read them. Now both read them
    alike: the episodes come back, as JSON or as export gave them, and a complete export's other
    records are skipped."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ana = db.owner("ana")
        first = ana.record("debug", "Deploy failed: lock", outcome="failure", tags=["deploy"], decisions={"at": T0, "n": 3})
        ana.supersede(first.id, reason="typo", summary="Deploy failed: the migration lock")
        ana.record("fact", "dark", key="ui/theme")
        clock.advance(minutes=1)
        ana.record("fact", "light", key="ui/theme")
        ana.archive(ana.record("review", "An old review", outcome="success").id)
        ana.save_lesson("Run the migrations before a deploy")
        rows = list(ana.export(complete=complete))
        source = {(e.kind, e.summary, e.ts, str(e.decisions)) for e in ana.episodes(include_archived=True)}
    for n, given in enumerate((rows, [json.loads(json.dumps(row)) for row in rows])):
        with memdb.open(tmp_path / f"copy{n}", clock=Clock(T0 + dt.timedelta(days=1))) as db:
            copy = db.owner("ana")
            report = copy.import_episodes(given, source="export")
            assert (report.count, report.dropped_cites) == (len(source), 2)  # the cites of the earlier versions
            assert {(e.kind, e.summary, e.ts, str(e.decisions)) for e in copy.episodes()} == source
            assert copy.fact("ui/theme").summary == "light" and copy.entries() == []
            assert copy.import_episodes(given, source="export").skipped == len(source)  # again: nothing new
    with memdb.open(tmp_path / "db", clock=clock) as db, pytest.raises(ValidationError, match="not a field a capture sets"):
        db.owner("bo").import_episodes([{"kind": "debug", "summary": "x", "outcome": "success", "status": "archived"}], source="t")
