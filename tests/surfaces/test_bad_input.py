"""Bad input gets a memdb.errors exception naming what was wrong, and writes nothing: the cases
issue 25 found raising raw builtin errors or taking seconds, and a Hypothesis run over the
handle's capture and query methods with arbitrary argument values."""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdb
from memdb.errors import ConfigError, MemdbError, ValidationError


def _deep(levels: int) -> list[Any]:
    top: list[Any] = []
    cur = top
    for _ in range(levels):
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    return top


def test_the_cases_that_raised_builtin_errors(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        kept = mem.record("debug", "kept", outcome="success")
        selfref: dict[str, Any] = {}
        selfref["me"] = selfref
        cases = [
            (lambda: mem.import_episodes(5, source="x"), "import_episodes: give an iterable"),  # type: ignore[arg-type]
            (lambda: mem.import_episodes([None], source="x"), "import item 0: expected a mapping"),  # type: ignore[list-item]
            (lambda: mem.erase(5, reason="x"), "erase ids 5"),  # type: ignore[arg-type]
            (lambda: mem.erase([kept.id], reason=None), "erase reason None"),  # type: ignore[arg-type]
            (lambda: mem.record("debug", "x", outcome="success", decisions={"a": _deep(2500)}), "nested more than 32 levels"),
            (lambda: mem.record("debug", "x", outcome="success", decisions=selfref), "nested more than 32 levels"),
            (lambda: mem.ask("deploy " * 700_000), "at most 10,000"),
            (lambda: mem.recall(text="deploy " * 2_000), "at most 10,000"),
        ]
        for call, message in cases:
            with pytest.raises(ValidationError, match=message):
                call()
        assert mem.count() == 1 and db.check().ok
    with pytest.raises(ConfigError, match=r"map_size .*at most"):
        memdb.open(tmp_path / "big", map_size=2**70)
    with pytest.raises(ConfigError, match="NUL"):
        memdb.open("a\x00b")


def test_nesting_up_to_the_limit_is_kept(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        ep = db.owner("ana").record("debug", "x", outcome="success", decisions={"a": _deep(31)})
        assert db.owner("ana").get(ep.id).decisions == {"a": _deep(31)}


values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30), st.binary(max_size=10),
    st.lists(st.text(max_size=5), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)  # fmt: skip
CALLS = {
    "record": lambda mem, v: mem.record(v, v, outcome=v, tags=v),
    "record_exchange": lambda mem, v: mem.record_exchange(v, v, v),
    "record_tool_call": lambda mem, v: mem.record_tool_call(v, v, v),
    "recall": lambda mem, v: mem.recall(tags=v, text=v, kind=v, limit=v),
    "ask": lambda mem, v: mem.ask(v),
    "history": lambda mem, v: mem.history(kind=v, tags=v, text=v),
    "get": lambda mem, v: mem.get(v),
    "feedback": lambda mem, v: mem.feedback(v, v),
    "erase": lambda mem, v: mem.erase(v, reason=v),
    "save_lesson": lambda mem, v: mem.save_lesson(v, cites=v),
}


def _every_argument(method: str) -> Any:
    """A call of ``Memory.<method>`` with ``value`` for each of its parameters."""
    params = [p for name, p in inspect.signature(getattr(memdb.Memory, method)).parameters.items() if name != "self"]

    def call(mem: memdb.Memory, value: Any) -> Any:
        args = [value for p in params if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty]
        kwargs = {
            p.name: value for p in params if p.kind is p.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)
        }
        result = getattr(mem, method)(*args, **kwargs)
        return list(result) if inspect.isgenerator(result) else result

    return call


METHODS = sorted(name for name, _ in inspect.getmembers(memdb.Memory, callable) if not name.startswith("_"))
CALLS.update({f"{m}(*value)": _every_argument(m) for m in METHODS})


def test_every_public_method_of_the_handle_is_in_the_run() -> None:
    assert {f"{m}(*value)" for m in METHODS} <= set(CALLS)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(CALLS)), values)
def test_arbitrary_arguments_give_memdb_errors_and_write_nothing(tmp_path_factory: pytest.TempPathFactory, name: str, value: Any) -> None:
    where = tmp_path_factory.mktemp("bad")
    with contextlib.chdir(where), memdb.open(where / "db") as db:  # a path argument writes there, never in the tree
        mem = db.owner("ana")
        before = mem.count()
        try:
            CALLS[name](mem, value)
        except MemdbError:
            assert mem.count() == before  # refused whole
        assert db.check().ok


def test_export_then_import_round_trips_exactly_and_twice_adds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 25: datetimes inside decisions came back as strings, and importing the same file
    twice doubled every episode."""
    import datetime as dt

    from memdb.cli import main as cli_main

    when = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
    with memdb.open(tmp_path / "a") as db:
        mem = db.owner("ana")
        mem.record("review", "planned the cutover", outcome="success", decisions={"when": when, "steps": [{"at": when}], "n": 3})
        mem.record("debug", "cutover failed", outcome="failure", tags=["cutover"])
    out = tmp_path / "export.jsonl"
    assert cli_main(["export", "--db", str(tmp_path / "a"), "--file", str(out)]) == 0
    assert '{"$datetime": "2026-03-04T05:06:07+00:00"}' in out.read_text()
    for _ in range(2):
        assert cli_main(["import", str(out), "--db", str(tmp_path / "b"), "--json"]) == 0
    capsys.readouterr()
    with memdb.open(tmp_path / "b") as db:
        back = list(db.owner("ana").episodes())
        assert len(back) == 2  # the second import skipped both by id
        review = next(e for e in back if e.kind == "review")
        assert review.decisions == {"when": when, "steps": [{"at": when}], "n": 3}
        imports = [a for a in db.owner("ana").audit() if a["action"] == "import"]
        assert [a["count"] for a in imports] == [2, 0] and imports[1]["skipped"] == 2
        assert db.check().ok
