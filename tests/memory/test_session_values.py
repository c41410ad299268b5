"""A session's name is an identifier, kept as given or refused: it is read as a tag is, with its
separators as spaces too. Read as text only, "415-200-0000_ref" kept the phone "_" glues into a
word, and the name went raw into ^MEM and the session indexes while a tag or a participant of the
same text was withheld (revK's probe)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from test_tag_leaks import held

import memdb
from memdb.errors import ValidationError
from memdb.memory.layout import GLOBALS

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("session", "raw"),
    [("415-200-0000_ref", "4152000000"), ("415/200/0000", "4152000000"), ("bob_4111_1111_1111_1111", "4111111111111111")],
)
def test_a_session_holding_a_value_in_its_spaced_form_is_refused(tmp_path: Path, session: str, raw: str) -> None:
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("a")
        with pytest.raises(ValidationError, match="session looks like personal data") as caught:
            mem.record_exchange(session=session, user_message="hi", response="hello")
        with pytest.raises(ValidationError, match="session looks like personal data"):
            mem.record("debug", "x", outcome="success", session=session)
        with pytest.raises(ValidationError, match="session: looks like personal data") as closing:
            mem.close_session(session, kind="debug", outcome="success")
        assert raw not in str(caught.value) and session not in str(closing.value)
        assert [name for name in GLOBALS if held(name, db, [raw])] == []


@pytest.mark.parametrize(
    "session",
    [
        "conv_123",
        "run-2024-06-01-1234",
        "sess_2024_06_01",
        "thread/123/456/7890",
        "gpt-4o-2024-08-06",
        "a1b2c3d4-5678-90ab-cdef-1234567890ab",
    ],
)
def test_an_ordinary_session_with_numbers_is_kept(tmp_path: Path, session: str) -> None:
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        ep = db.owner("a").record_exchange(session=session, user_message="hi", response="hello")
        assert ep.session == session
