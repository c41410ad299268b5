"""A label naming a secret reaches each item after it until three are kept, ordinary ones included: its
values ran to the first item kept, so ["password", "bob", "hunter2"], ["pin", "visa", "4821"] and
["api-key", "prod", "sk9f8d7s6a5"] stored the last raw, as a tag and as a participant (priv18)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_episodes import _lmdb_bytes
from test_participant_secrets import PARTICIPANT_LABELS
from test_participant_secrets import stored as people_stored
from test_tag_leaks import held
from test_tag_secret_values import LABELS
from test_tag_secret_values import stored as tags_stored

import memdb
from memdb.memory.layout import GLOBALS
from memdb.memory.text import normalize_tags

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
LISTS = [["password", "bob", "hunter2"], ["pin", "visa", "4821"], ["api-key", "prod", "sk9f8d7s6a5"]]


@pytest.mark.lmdb_only(reason="greps LMDB's files")
@pytest.mark.parametrize("items", LISTS)
def test_a_value_after_a_label_and_an_ordinary_item_is_withheld_end_to_end(tmp_path: Path, items: list[str]) -> None:
    raw = items[-1]
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        tagged = mem.record("debug", "x", outcome="success", tags=items)
        named = mem.record("review", "y", outcome="success", participants=items)
        assert tagged.tags == (*items[:2], "withheld-secret")
        assert named.participants == (*items[:2], "<SECRET_1>")
        assert mem.get(tagged.id).tags == tagged.tags and mem.get(named.id).participants == named.participants
        found = mem.recall(limit=10)
        assert found.total == 2 and raw not in repr(found.memories)
        assert [name for name in GLOBALS if held(name, db, [raw])] == []
    assert raw.encode() not in _lmdb_bytes(tmp_path / "m").lower()


@pytest.mark.parametrize(
    ("items", "tags", "people"),
    [
        (["password", "reset", "k8s"], ["password", "reset", "withheld-secret"], ["password", "reset", "<SECRET_1>"]),
        (["pin", "visa", "prod", "4821"], ["pin", "visa", "prod", "withheld-secret"], ["pin", "visa", "prod", "<SECRET_1>"]),
        (["pin", "visa", "prod", "ops", "4821"], ["pin", "visa", "prod", "ops", "4821"], ["pin", "visa", "prod", "ops", "4821"]),
    ],
)
def test_a_labels_reach_ends_at_the_third_item_kept(items: list[str], tags: list[str], people: list[str]) -> None:
    """Fail closed, at a known cost: "k8s" after "password" and an ordinary tag is lost; three
    items kept end the label's values."""
    assert tags_stored(items) == tags
    assert people_stored(items) == people


_TAG_WORDS = ["deploy", "bob", "visa", "prod", "reset", "billing", "ops"]
_NAMES = ["bob", "Alice", "Jean-Luc Picard", "Nguyễn Thị Minh Khai", "carol"]
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
# digits and letters, a digit and a letter in each: a generated password or key
_SECRET_SHAPED = st.text(_ALNUM, min_size=8, max_size=20).filter(lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    participants=st.booleans(),
    before=st.integers(0, 3),
    between=st.integers(0, 2),
    after=st.integers(0, 2),
    secret=_SECRET_SHAPED,
)
def test_a_secret_within_a_labels_reach_never_survives(
    data: st.DataObject, participants: bool, before: int, between: int, after: int, secret: str
) -> None:
    words = _NAMES if participants else _TAG_WORDS
    ordinary = st.lists(st.sampled_from(words), min_size=1, max_size=1).map(lambda w: w[0])
    label = data.draw(st.sampled_from(PARTICIPANT_LABELS if participants else LABELS))
    items = [
        *(data.draw(ordinary) for _ in range(before)),
        label,
        *(data.draw(ordinary) for _ in range(between)),
        secret,
        *(data.draw(ordinary) for _ in range(after)),
    ]
    kept = people_stored(items) if participants else tags_stored(items)
    assert kept[before + between + 1] in ("<SECRET_1>", "withheld-secret"), (items, kept)
    assert secret.lower() not in repr(kept).lower(), (items, kept)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(
        st.one_of(st.sampled_from(LABELS), st.sampled_from([*_TAG_WORDS, "Reset", "k8s", "v2", "withheld-secret"]), _SECRET_SHAPED),
        max_size=9,
    )
)
def test_stored_tags_recorded_again_read_the_same(items: list[str]) -> None:
    """A tag is stored once, and what was withheld as one marker: neither ends a label's reach, so
    an export imported again keeps its tags (no value raw the first time becomes one withheld)."""
    once = normalize_tags(tags_stored(items))
    assert normalize_tags(tags_stored(list(once))) == once, (items, once)
