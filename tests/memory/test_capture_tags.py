"""A gateway capture takes tags as record does, a list or a tuple: record_exchange and
record_tool_call made a list of any iterable, so tags="deploy" stored one tag a letter and a set
or a generator was taken, where record refuses them (revH)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.errors import ValidationError

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
CAPTURES: dict[str, Callable[[Any, Any], Any]] = {
    "exchange": lambda mem, tags: mem.record_exchange("s1", "hi", "ok", tags=tags),
    "tool_call": lambda mem, tags: mem.record_tool_call("s1", "search", {"q": "x"}, tags=tags),
}


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("tags", ["deploy", {"deploy"}, (t for t in ["deploy"]), {"deploy": 1}])
def test_a_capture_refuses_tags_that_are_no_list_as_record_does(tmp_path: Path, capture: str, tags: Any) -> None:
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        with pytest.raises(ValidationError, match="valid list") as info:
            CAPTURES[capture](mem, tags)
        with pytest.raises(ValidationError) as recorded:
            mem.record("debug", "x", outcome="success", tags=tags if not hasattr(tags, "send") else (t for t in ["deploy"]))
        assert str(info.value) == str(recorded.value)
        assert mem.recall().total == 0


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("tags", [["deploy", "ops"], ("deploy", "ops")])
def test_a_capture_takes_a_list_or_a_tuple(tmp_path: Path, capture: str, tags: Any) -> None:
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        assert CAPTURES[capture](db.owner("ana"), tags).tags == ("deploy", "ops")
