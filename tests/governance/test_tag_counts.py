"""Tags a caller gives a knowledge entry, a knowledge search or an erasure are at most the model's
cap (``MAX_TAGS``, what an episode holds), refused by their count before the sanitizer reads each:
100,000 were read one by one. Tags already stored are read whatever their count."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import memdb
from memdb.errors import ValidationError
from memdb.memory.models import MAX_TAGS

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

MANY = [f"t{i}" for i in range(100_000)]
GIVEN: list[tuple[str, Callable[[memdb.Memory, list[str]], object], str]] = [
    ("save_lesson", lambda mem, tags: mem.save_lesson("Write the rollback step first", tags=tags), "tags"),
    ("knowledge", lambda mem, tags: mem.knowledge("rollback", tags=tags), "tags"),
    ("erase", lambda mem, tags: mem.erase(tags=tags, reason="forget them"), "erase tags"),
]


@pytest.mark.parametrize(("call", "where"), [pytest.param(c, w, id=i) for i, c, w in GIVEN])
@pytest.mark.parametrize("count", [MAX_TAGS + 1, len(MANY)])
def test_more_tags_than_the_model_holds_are_refused_by_their_count(
    tmp_path: Path, call: Callable[[memdb.Memory, list[str]], object], where: str, count: int
) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "s", outcome="success", tags=["t0"])
        with pytest.raises(ValidationError, match=rf"^{where}: {count} given, more than the {MAX_TAGS} an (entry|episode) holds$"):
            call(mem, MANY[:count])
        assert mem.entries() == [] and [e.id for e in mem.episodes()] == [ep.id]  # nothing queued, nothing erased
        call(mem, MANY[:MAX_TAGS])  # the cap itself is taken


def test_an_entry_stored_with_more_tags_is_still_read_and_found(tmp_path: Path) -> None:
    """An entry a memdb before the cap stored with 40 tags is listed and found by its 40th."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        entry = mem.save_lesson("Write the rollback step first", tags=["t0"])
        db.approve(entry.id, by="rev")
        rec = dict(db.knowledge.entries[("ana", entry.id)])
        db.knowledge.entries.set(("ana", entry.id), {**rec, "tags": MANY[:40]})  # as a memdb before the cap wrote it
        assert [e.tags for e in mem.entries()] == [tuple(MANY[:40])]
        assert [e.id for e in mem.knowledge(tags=[MANY[39]])] == [entry.id]
