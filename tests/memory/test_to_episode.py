"""``to_episode`` builds the Episode without ``model_construct``'s pass over the fields: what it
returns must be what ``model_construct`` returned, for every field, the fields set and every
use of the model (equality, hashing, copies, dumps)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memdb.memory.episodes import to_episode
from memdb.memory.models import Episode

TS = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
text = st.text(max_size=8)
records = st.fixed_dictionaries(
    {"ts": st.just(TS), "kind": st.sampled_from(["debug", "exchange", "fact"]), "summary": text},
    optional={
        "content": text, "decisions": st.dictionaries(text, st.integers(), max_size=2), "tags": st.lists(text, max_size=3),
        "outcome": st.sampled_from(["success", "failure", None]), "lesson": text, "participants": st.lists(text, max_size=2),
        "session": text, "tool": text, "result": text, "cites": st.lists(text, max_size=2), "recorded": st.just(TS),
        "key": text, "supersedes": text, "supersede_reason": text, "what_we_tried": text, "why": text,
    },
)  # fmt: skip
states = st.fixed_dictionaries(
    {"relevance": st.floats(0, 10)},
    optional={
        "access_count": st.integers(0, 9), "last_access": st.just(TS), "feedback": st.floats(-1, 1) | st.none(),
        "status": st.sampled_from(["active", "archived", "superseded"]), "supersedes": text, "superseded_by": text,
    },
)  # fmt: skip


def constructed(owner: str, eid: str, record: dict[str, Any], state: dict[str, Any]) -> Episode:
    """What to_episode returned before: ``model_construct`` of the same values."""
    return Episode.model_construct(**to_episode(owner, eid, record, state).__dict__)


@given(record=records, state=states)
def test_to_episode_is_model_construct(record: dict[str, Any], state: dict[str, Any]) -> None:
    fast, slow = to_episode("ana", "e1", record, state), constructed("ana", "e1", record, state)
    assert list(fast.__dict__.items()) == list(slow.__dict__.items())  # the fields' values, in the model's order
    assert fast.model_fields_set == slow.model_fields_set == set(Episode.model_fields)
    assert fast == slow and fast.__pydantic_extra__ is slow.__pydantic_extra__ is None and fast.__pydantic_private__ is None
    assert fast.model_dump() == slow.model_dump() and repr(fast) == repr(slow)
    moved = fast.model_copy(update={"status": "archived"})
    assert moved == slow.model_copy(update={"status": "archived"}) and "status" in moved.model_fields_set
    assert fast.model_fields_set == set(Episode.model_fields)  # a copy's fields set is its own
