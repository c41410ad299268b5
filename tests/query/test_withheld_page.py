"""A tag filter holding personal data answers nothing (no memory carries the value), but a bad
page of it is refused first, as with any other tag: a bad offset passed unnoticed behind a
withheld tag, and failed only once the tag was fixed; its value is named sanitized."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.errors import ValidationError

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)


@pytest.mark.parametrize("offset", [-1, "2", 1.5, True, None])
@pytest.mark.parametrize("tag", ["deploy", "bob@example.com"])
def test_a_withheld_tag_refuses_a_bad_page(tmp_path: Path, tag: str, offset: Any) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        mem.record(kind="debug", summary="deploy failed", outcome="failure", tags=["deploy"])
        with pytest.raises(ValidationError, match=r"^offset .*: must be a non-negative int$"):
            mem.recall(tags=[tag], offset=offset)


def test_a_bad_offset_is_named_sanitized(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        with pytest.raises(ValidationError) as err:
            db.owner("ana").recall(tags=["deploy"], offset="bob@example.com")
        assert "bob" not in str(err.value)
