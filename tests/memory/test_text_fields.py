"""A capture's text fields take str only, and its lists of text (tags, participants, cites) a list
or tuple: capture sanitizes the strings of those (``flatten_texts``), and pydantic's lax mode made
bytes a str and a set, deque or generator a list past it. ``session=b"bob@example.com"`` put the
address in ^MEM, ^EPS and ^EPST; ``participants={"bob@example.com"}`` stored it as given (revE)."""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.errors import ValidationError
from memdb.memory.layout import GLOBALS

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

EMAIL = "bob@example.com"
RAW: Any = EMAIL.encode()  # what the signatures refuse to type
PAST = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
TEXT_FIELDS = ("kind", "summary", "content", "outcome", "what_we_tried", "what_happened", "why", "lesson", "artifact", "session", "result")
LISTS: list[Callable[[list[str]], Any]] = [collections.deque, set, frozenset, iter, lambda v: dict.fromkeys(v).keys()]

Capture = Callable[[memdb.Memory], object]


def _record(**fields: Any) -> Capture:
    return lambda mem: mem.record(**{"kind": "debug", "summary": "s", "outcome": "success", **fields})


def _imported(**fields: Any) -> Capture:
    item = {"kind": "debug", "summary": "s", "outcome": "success", "ts": PAST, **fields}
    return lambda mem: mem.import_episodes([item], source="test")


CASES: list[tuple[str, Capture, str]] = [
    *((f"record {name}", _record(**{name: EMAIL.encode()}), f"{name}=bytes: ") for name in TEXT_FIELDS),
    *((f"import {name}", _imported(**{name: EMAIL.encode()}), f"{name}=bytes: ") for name in TEXT_FIELDS),
    ("exchange session", lambda mem: mem.record_exchange(RAW, "q", "a"), "session=bytes: "),
    ("tool_call session", lambda mem: mem.record_tool_call(RAW, "search", {}), "session=bytes: "),
    ("tool_call tool", lambda mem: mem.record_tool_call("s1", RAW, {}), "tool: expected str, got bytes"),
    *(
        (f"record {name} {make([]).__class__.__name__}", _record(**{name: make([EMAIL])}), f"{name}={type(make([])).__name__}: ")
        for name in ("tags", "participants", "cites")
        for make in LISTS
    ),
    *(
        (f"import {name} {make([]).__class__.__name__}", _imported(**{name: make([EMAIL])}), f"{name}={type(make([])).__name__}: ")
        for name in ("tags", "participants")
        for make in LISTS
    ),
]


@pytest.mark.parametrize(("capture", "named"), [pytest.param(c, n, id=i) for i, c, n in CASES])
def test_bytes_and_other_iterables_are_refused_by_type(tmp_path: Path, capture: Capture, named: str) -> None:
    with memdb.open(tmp_path / "db") as db:
        with pytest.raises(ValidationError) as err:
            capture(db.owner("ana"))
        said = str(err.value)
        assert named in said and "bob" not in said
        holding = [name for name in GLOBALS if "bob" in repr(list(db.globals[name].items(())))]
        assert holding == []


def test_a_tuple_of_text_is_still_a_list(tmp_path: Path) -> None:
    """Tuples are read by capture as lists are (an ``Episode``'s own fields are tuples: import takes them)."""
    with memdb.open(tmp_path / "db") as db:
        ep = db.owner("ana").record("debug", "s", outcome="success", tags=("deploy", EMAIL), participants=("ana", EMAIL))
        assert ep.tags == ("deploy", "withheld-email") and "bob" not in repr(ep.participants)


@pytest.mark.parametrize("who", ["--", "...", "x" * 100])
def test_a_participant_that_makes_no_tag_is_recorded_and_found(tmp_path: Path, who: str) -> None:
    """Capture compares participants with the tags to index one that is also a tag once; it did
    so by ``normalize_tag``, so a participant with nothing left after normalising, or longer than
    a tag may be, failed the record (or a whole import) with an error about a "tag"."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "s", outcome="success", participants=[who, "Bob"], tags=["bob"])
        item = {"kind": "debug", "summary": "t", "outcome": "success", "ts": PAST, "participants": [who]}
        report = mem.import_episodes([item], source="test")
        assert ep.participants == (who, "Bob") and len(report.ids) == 1
        assert [m.id for m in mem.recall(text="bob")] == [ep.id]  # the participant that is a tag, indexed once
        assert db.check().problems == []
