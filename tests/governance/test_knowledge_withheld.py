"""Knowledge search and prepare read their text sanitized, as recall does: personal data and
secrets in it are never searched, so an address's words ("quill", "example", "org") choose no
lesson or pattern (a review's find)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from clocks import Clock

import memdb

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
EMAIL = "zed.quill@example.org"
# every word of the address names one of these, none of the rest of a task
UNRELATED = ("Use the example config for the org-wide rollout", "Quill pens are not a deploy tool")


@pytest.fixture
def kdb(tmp_path: Path) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "k", clock=Clock(T0))
    yield db
    db.close()


def _lessons(db: memdb.Database, mem: memdb.Memory, *texts: str) -> None:
    for text in texts:
        db.approve(mem.save_lesson(text, tags=["rollout"]).id, by="reviewer")


def test_knowledge_never_searches_a_withheld_value(kdb: memdb.Database) -> None:
    mem = kdb.owner("ana")
    _lessons(kdb, mem, *UNRELATED, "Mail the invoice after the billing run")
    assert mem.knowledge(text=EMAIL) == []  # a value alone matches nothing, as recall's text
    assert [e.text for e in mem.knowledge(text=f"invoice for {EMAIL}")] == ["Mail the invoice after the billing run"]
    assert len(mem.knowledge(text=f"{EMAIL} rollout", tags=["rollout"])) == 3  # its tags still choose


def test_prepare_never_matches_by_a_withheld_value(kdb: memdb.Database) -> None:
    mem = kdb.owner("ana")
    _lessons(kdb, mem, *UNRELATED)
    prepared = mem.prepare(f"write to {EMAIL} about it")
    assert prepared.text.startswith("Context for: write to <EMAIL_1> about it")
    assert "Knowledge:" not in prepared.text and not any(text in prepared.text for text in UNRELATED)
    assert "Nothing relevant found" in prepared.text


class _Redacting:
    """A custom sanitizer with its own mark, as the Sanitizer protocol allows."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return {k: re.sub(r"[\w.]+@[\w.]+\w", "[REDACTED]", v) for k, v in texts.items()}


def test_knowledge_never_searches_a_custom_sanitizer_s_mark(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "own", sanitizer=_Redacting(), clock=Clock(T0)) as db:
        mem = db.owner("ana")
        _lessons(db, mem, f"Mail {EMAIL} a redacted copy first", "Deploy after the billing run")
        assert [e.text for e in mem.knowledge(text="mail")] == ["Mail [REDACTED] a redacted copy first"]
        assert mem.knowledge(text="bob@corp.com") == []  # not the word "redacted" of its mark
        assert "Knowledge:" not in mem.prepare("write to bob@corp.com").text
