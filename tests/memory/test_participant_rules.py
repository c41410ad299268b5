"""A participant a caller gives is a name or an agent's id: one that names no one ("", "   ") or is
longer than ``PARTICIPANT_CHARS`` (the cap MCP's schema states) is refused where new values enter,
record and supersede's changes. Stored episodes that hold such values (recorded before the rule,
or imported from an export made then) still load, export, import and are superseded: the rule in
the model broke both (0e3a9fa, d96a182, reverted in 846e83e)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import memdb
from memdb.errors import ValidationError
from memdb.memory.models import MAX_PARTICIPANTS, PARTICIPANT_CHARS

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

PAST = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
LONG = "y" * 10_000
OLD = ["Bob", "", LONG]  # what an episode recorded before the rule may hold ("   " is stored stripped: "")


@pytest.mark.parametrize("blank", ["", "   ", "\u200b"])
def test_a_participant_named_by_nothing_is_refused_naming_the_field(tmp_path: Path, blank: str) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        with pytest.raises(ValidationError, match=r"^episode: participants\[1\]: holds no visible character"):
            mem.record("debug", "s", outcome="success", participants=["Bob", blank])
        assert mem.count() == 0


def test_a_participant_longer_than_the_cap_is_refused_naming_its_length(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "s", outcome="success", participants=["x" * PARTICIPANT_CHARS])
        with pytest.raises(ValidationError, match=rf"participants\[1\]: 10000 characters, more than {PARTICIPANT_CHARS}") as err:
            mem.record("debug", "t", outcome="success", participants=["Bob", LONG])
        assert "yyy" not in str(err.value)  # the length, never the text
        assert [m.id for m in mem.recall(limit=5)] == [ep.id]


@pytest.mark.parametrize("given", ["", "   ", LONG])
def test_a_supersede_refuses_a_participant_it_adds(tmp_path: Path, given: str) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "s", outcome="success", participants=["Bob"])
        with pytest.raises(ValidationError, match=rf"^supersede\('{ep.id}'\): participants\[1\]: "):
            mem.supersede(ep.id, reason="who else", participants=["Bob", given])
        assert [v.id for v in mem.versions(ep.id)] == [ep.id] and mem.get(ep.id).participants == ("Bob",)


def test_stored_participants_from_before_the_rule_round_trip(tmp_path: Path) -> None:
    """An export made before the rule imports, exports, imports again and is superseded, keeping
    its participants; a supersede may name them again beside a new one."""
    with memdb.open(tmp_path / "db") as db:
        ana, bo = db.owner("ana"), db.owner("bo")
        item = {"id": "20260105T090000000000Z-aaaaaa", "kind": "debug", "summary": "s", "outcome": "success", "ts": PAST}
        (eid,) = ana.import_episodes([{**item, "participants": ["Bob", "   ", LONG]}], source="an export made before").ids
        assert ana.get(eid).participants == tuple(OLD)
        exported = list(ana.export())
        assert [e["participants"] for e in exported] == [OLD]
        (copy,) = bo.import_episodes(exported, source="ana's export").ids
        assert bo.get(copy).participants == tuple(OLD)
        newer = ana.supersede(eid, reason="the outcome was wrong", outcome="failure")
        assert newer.participants == tuple(OLD)
        again = ana.supersede(newer.id, reason="Cy was there too", participants=[*OLD, "Cy"])
        assert again.participants == (*OLD, "Cy")
        assert db.check().problems == []


def test_more_participants_than_an_episode_holds_are_refused_by_their_count_before_any_is_read(tmp_path: Path) -> None:
    # 100,000 of 256 characters each were read one by one (4.3 s) before the count refused them (revT)
    many = ["", *(f"agent-{i}" for i in range(MAX_PARTICIPANTS))]  # a blank first: reading items would name it
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        with pytest.raises(ValidationError, match=rf"participants: {MAX_PARTICIPANTS + 1} given, more than the {MAX_PARTICIPANTS}"):
            mem.record("debug", "s", outcome="success", participants=many)
        ep = mem.record("debug", "s", outcome="success", participants=["Bob"])
        with pytest.raises(ValidationError, match=rf"participants: {MAX_PARTICIPANTS + 1} given, more than the {MAX_PARTICIPANTS}"):
            mem.supersede(ep.id, reason="who took part", participants=many)
        assert list(mem.get(ep.id).participants) == ["Bob"]
