"""A bad value that is a structure is named by its type in a validation error: its repr, read as
one text, showed raw the secrets its shape names (a named value, an argv pair) that capture
withholds when it reads the structure (``flatten_texts``)."""

from __future__ import annotations

import collections
import dataclasses
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.errors import ValidationError

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

SECRET, EMAIL = "s3cr3tvalue", "bob@example.com"
BAD: list[Any] = [
    {"name": "DB_PASSWORD", "value": SECRET},  # a Kubernetes env entry
    ["--password", SECRET],  # an argv
    ("Authorization", SECRET),
    {"owner": EMAIL},
]


@dataclasses.dataclass
class Env:
    name: str
    value: str


# shown by no repr: each a shape whose repr holds the secret raw, or bytes (revE)
OPAQUE: list[Any] = [
    Env("DB_PASSWORD", SECRET),
    types.SimpleNamespace(name="DB_PASSWORD", value=SECRET),
    collections.deque(["--password", SECRET]),
    {"name": "DB_PASSWORD", "value": SECRET}.items(),
    b"--password " + SECRET.encode(),
    EMAIL.encode(),
]

CASES = (
    [(field, value, f"{field}={type(value).__name__}: ") for field in ("kind", "session", "tool") for value in BAD]
    + [
        ("cites", BAD[0], "cites=dict: "),
        ("cites", [BAD[3]], "cites.0=dict: "),  # an item of the list
    ]
    + [
        (field, value, f"{field}={type(value).__name__}: ")
        for field in ("kind", "session", "tool", "artifact", "participants", "cites")
        for value in OPAQUE
    ]
)


@pytest.mark.parametrize(("field", "value", "named"), CASES)
def test_a_bad_structure_is_named_by_its_type(tmp_path: Path, field: str, value: Any, named: str) -> None:
    with memdb.open(tmp_path / "db") as db:
        with pytest.raises(ValidationError) as err:
            db.owner("ana").record(**{"kind": "debug", "summary": "x", "outcome": "success", field: value})
        said = str(err.value)
        assert named in said
        assert SECRET not in said and "bob" not in said


@pytest.mark.parametrize("value", OPAQUE)
def test_a_bad_owner_session_or_tool_is_named_by_its_type(tmp_path: Path, value: Any) -> None:
    """The checks before the model (an owner, a closing session or its kind or outcome, a tool call's tool) name it so too."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        calls: list[Callable[[], object]] = [
            lambda: db.owner(value),
            lambda: mem.close_session(value, kind="debug", outcome="success"),
            lambda: mem.close_session("s1", kind=value, outcome="success"),
            lambda: mem.close_session("s1", kind="debug", outcome=value),
            lambda: mem.record_tool_call("s1", value, {}),
        ]
        for call in calls:
            with pytest.raises(ValidationError) as err:
                call()
            said = str(err.value)
            assert type(value).__name__ in said
            assert SECRET not in said and "bob" not in said
