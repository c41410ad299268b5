"""``close_session(tags=...)`` reads its tags as capture does: sanitized as given, then normalised.
Normalised first, "dave@example.com" was "daveexample-com", which no sanitizer finds: the address
was stored in the episode, its tag index and every answer naming its tags."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock

import memdb
from memdb.errors import ValidationError
from memdb.memory.layout import GLOBALS

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

T0 = dt.datetime(2026, 6, 3, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def open_session(tmp_path: Path) -> Iterator[memdb.Memory]:
    """Ana's session "s1" with one exchange, a minute old: what close_session's refusals close."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        mem.record_exchange("s1", "why does the deploy fail?", "looking at it")
        clock.advance(minutes=1)
        yield mem


RAW = ("dave", "4111", "0199")  # what the values' normal forms would show of them


def test_close_session_tags_are_sanitized_as_given(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        mem.record_exchange("s1", "why does the deploy fail?", "looking at it", tags=["deploy"])
        clock.advance(minutes=1)
        tags = ["dave@example.com", "4111_1111_1111_1111", "+1_415_555_0199", "Hotfix"]  # the card and phone only in their normal form
        done = mem.close_session("s1", kind="debug", outcome="success", tags=tags)
        assert done.episode is not None
        assert done.episode.tags == ("withheld-email", "withheld-card", "withheld-phone", "hotfix", "deploy")
        assert mem.recall(tags=["withheld-card"]).memories[0].episode.id == done.episode.id
        holding = [name for name in GLOBALS for raw in RAW if raw in repr(list(db.globals[name].items(())))]
        assert holding == []
        assert db.check().ok


@pytest.mark.parametrize(
    "tags",
    [
        ["bob@example.com", "customer 4111-1111-1111-1111"],
        ["AKIAIOSFODNN7EXAMPLE", "vendor"],  # stored, then sanitized again: "vendor" read as the secret of a "withheld-secret" header
        ["password=hunter2", "bob@example.com"],
    ],
)
def test_close_session_tags_are_stored_as_record_stores_them(tmp_path: Path, tags: list[str]) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        recorded = mem.record(kind="debug", summary="the same tags", outcome="success", tags=tags)
        mem.record_exchange("s1", "why does the deploy fail?", "looking at it")
        clock.advance(minutes=1)
        done = mem.close_session("s1", kind="debug", outcome="success", tags=tags)
        assert done.episode is not None
        assert done.episode.tags == recorded.tags


@pytest.mark.parametrize(
    ("given", "events"),
    [
        ([], ["AKIAIOSFODNN7EXAMPLE", "vendor"]),  # stored ["withheld-secret", "vendor"]: read again, a header and its secret
        (["password"], ["deploy"]),  # given and stored joined: ["password", "deploy"] read as a pair
        (["token"], ["urgent"]),
        (["deploy", "password"], ["billing"]),
        (["AKIAIOSFODNN7EXAMPLE"], ["vendor"]),
        (["Bob@Example.com"], ["bob@example.com"]),  # one stored form: once
    ],
)
def test_close_session_keeps_its_events_tags_as_stored(tmp_path: Path, given: list[str], events: list[str]) -> None:
    """The events' tags are stored already: they join the episode as they are, after the given
    ones, which take capture's route once (revE: sanitized again, "vendor" was lost and "deploy"
    became "withheld-secret"). So too when a session that went on closes again (a new version)."""
    clock = Clock(T0)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        recorded = mem.record(kind="debug", summary="the same tags", outcome="success", tags=given)
        event = mem.record_exchange("s1", "why does the deploy fail?", "looking at it", tags=events)
        clock.advance(minutes=1)
        done = mem.close_session("s1", kind="debug", outcome="success", tags=given)
        assert done.episode is not None
        assert done.episode.tags == tuple(dict.fromkeys([*recorded.tags, *event.tags]))
        mem.record_exchange("s1", "and now?", "it works", tags=["retry"])
        clock.advance(minutes=1)
        again = mem.close_session("s1", kind="debug", outcome="success", tags=given)
        assert again.episode is not None and again.episode.supersedes == done.episode.id
        assert again.episode.tags == tuple(dict.fromkeys([*recorded.tags, *event.tags, "retry"]))
        assert db.check().ok


@pytest.mark.parametrize("bad", [b"bob@example.com", 5, None, ["bob@example.com"]])
def test_a_bad_close_session_tag_is_named_as_close_sessions(open_session: memdb.Memory, bad: object) -> None:
    mem = open_session
    with pytest.raises(ValidationError, match=rf"^close_session tags: tags\[1\]: expected str, got {type(bad).__name__}$") as err:
        mem.close_session("s1", kind="debug", outcome="success", tags=["deploy", bad])  # type: ignore[list-item]
    assert "bob" not in str(err.value)
    with pytest.raises(ValidationError, match=r"^close_session tags: 33 given, more than the 32 an episode holds"):
        mem.close_session("s1", kind="debug", outcome="success", tags=[f"t{i}" for i in range(33)])
    assert mem.count() == 1


@pytest.mark.parametrize("bad", [{"password", "Hunter2x"}, (t for t in ["password", "Hunter2x"]), "deploy"])
def test_close_session_takes_a_list_or_tuple_of_tags_as_record_does(open_session: memdb.Memory, bad: object) -> None:
    """revI: a set was taken, and the label rule read its order, the hash seed's: "hunter2x" was
    stored raw under some seeds."""
    mem = open_session
    with pytest.raises(ValidationError, match=r"^tags .*: close_session takes a list or tuple of tags") as err:
        mem.close_session("s1", kind="debug", outcome="success", tags=bad)  # type: ignore[arg-type]
    assert "Hunter2x" not in str(err.value) and mem.count() == 1
