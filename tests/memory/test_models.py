"""Validation at the boundary (memdb.memory.models): a value the store cannot keep as given is
refused with a ValidationError naming where it is, before anything is written or read deeply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.errors import ValidationError
from memdb.memory import text
from memdb.memory.models import MAX_DEPTH, EpisodeInput


def _nested(levels: int, inner: Any = "x") -> Any:
    for _ in range(levels):
        inner = [inner]
    return inner


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 500, 1000, 5000])
def test_a_tool_payload_nested_past_the_cap_is_refused_naming_the_field_and_the_cap(tmp_path: Path, levels: int) -> None:
    """1,000 levels raised a raw RecursionError (500 was kept): the cap of ``decisions`` holds for
    a tool's input and result too, whatever the depth."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        deep = _nested(levels, "jane.doe@example.org")
        with pytest.raises(ValidationError, match=rf"record_tool_call: input is nested more than {MAX_DEPTH} levels deep"):
            mem.record_tool_call("s1", "search", {"q": deep})
        call = mem.record_tool_call("s1", "search", {"q": 1})
        with pytest.raises(ValidationError, match=rf"result is nested more than {MAX_DEPTH} levels deep"):
            mem.record_tool_result(call.id, {"rows": deep})
        with pytest.raises(ValidationError, match=rf"result is nested more than {MAX_DEPTH} levels deep"):
            mem.supersede(call.id, reason="the result came late", result={"rows": deep})
        assert mem.get(call.id).result is None and mem.count() == 1


def test_a_tool_payload_holding_itself_is_refused() -> None:
    from memdb.memory.models import unstorable

    loop: dict[str, Any] = {}
    loop["me"] = loop
    assert (
        unstorable("input", loop)
        == f"input is nested more than {MAX_DEPTH} levels deep (flatten it, or pass the deep part as a JSON string)"
    )


def test_a_tool_payload_up_to_the_cap_is_kept(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        call = mem.record_tool_call("s1", "search", _nested(MAX_DEPTH - 1, "deep"))
        assert "deep" in call.content
        assert "found" in (mem.record_tool_result(call.id, {"r": _nested(MAX_DEPTH - 2, "found")}).result or "")


@pytest.mark.parametrize(
    ("decisions", "path"),
    [
        ({"a": "x\udcff jane.doe@example.org"}, "decisions.a"),
        ({"steps": ["ok", {"note": "\ud800"}]}, "decisions.steps[1].note"),
        ({"k\udcff": 1}, "decisions.k\\udcff (a key)"),
    ],
)
def test_a_lone_surrogate_in_decisions_is_refused_naming_its_path(tmp_path: Path, decisions: dict[str, Any], path: str) -> None:
    """It passed validation and failed in the store with an InvalidValueError naming no field and
    quoting the start of the internal record; now refused at validation, the value not shown."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        with pytest.raises(ValidationError) as caught:
            mem.record("debug", "x", outcome="success", decisions=decisions)
        message = str(caught.value)
        assert message.startswith(f"episode: {path}: not valid Unicode (a lone surrogate)"), message
        assert "jane" not in message and "<EMAIL" not in message and "ts" not in message.split(":")[1]
        message.encode("utf-8")  # printable, loggable, sendable as JSON: no surrogate in the message itself
        with pytest.raises(ValidationError, match=r"import item 0: decisions\.a: not valid Unicode"):
            mem.import_episodes([{"kind": "debug", "summary": "x", "outcome": "success", "decisions": {"a": "\udcff"}}], source="t")
        assert mem.count() == 0


def test_a_lone_surrogate_in_a_tool_payload_is_refused_naming_its_path(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        call = mem.record_tool_call("s1", "search", {"q": 1})
        with pytest.raises(ValidationError, match=r"result\.rows\[0\]: not valid Unicode") as caught:
            mem.record_tool_result(call.id, {"rows": ["\udcff jane.doe@example.org"]})
        assert "jane" not in str(caught.value)
        with pytest.raises(ValidationError, match=r"record_tool_call: input\.q: not valid Unicode"):
            mem.record_tool_call("s1", "search", {"q": "\udcff"})
        assert mem.count() == 1


def test_validating_tags_again_reads_their_remembered_forms() -> None:
    # capture validates a few tags again and again: each normalised anew (NFKC, a regex, a
    # Unicode category per character) was a third of EpisodeInput's validation
    text._normal_tag.cache_clear()
    for _ in range(3):
        item = EpisodeInput(kind="debug", summary="s", tags=["Project X", "project_x", "Deploy"])
        assert item.tags == ["project-x", "deploy"]  # each once, in order
    assert text._normal_tag.cache_info().misses == 3  # "Project X", "project_x", "Deploy": once each


def test_a_recorded_episode_owns_its_nested_values(tmp_path: Path) -> None:
    # capture keeps the model's validated values without copying them again (model_dump did):
    # they are the sanitizer's rebuild of the input, so nothing a caller holds changes them
    decisions: dict[str, Any] = {"options": ["a", ("b", 2)], "then": {"retry": [1]}}
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "tried", outcome="failure", decisions=decisions, participants=["bob"])
        decisions["options"].append("c")
        decisions["then"]["retry"].append(2)
        expected = {"options": ["a", ["b", 2]], "then": {"retry": [1]}}
        assert ep.decisions == expected and mem.get(ep.id).decisions == expected
