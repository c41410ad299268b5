"""A corrected fact holds no copy of the value it corrects: its text and decisions are its value,
so a correction of the text does not carry the old content or decisions into the new version."""

from __future__ import annotations

import datetime as dt

import pytest
from clocks import Clock

import memdb

T0 = dt.datetime(2026, 7, 1, 12, 0, tzinfo=dt.UTC)
OLD = "the gate code is tangerine"
pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


def _words(episode: memdb.Episode) -> str:
    return " ".join([episode.summary, episode.content, repr(episode.decisions)])


def test_a_corrected_fact_keeps_no_copy_of_its_old_text(edb: memdb.Database) -> None:
    """``supersede(id, summary=...)`` copied the old content and decisions into the new version:
    the old value stayed in the current fact (a LangGraph item's whole value is in its decisions,
    a long one's text in its content, still found by its words)."""
    mem = edb.owner("ana")
    fact = mem.record("fact", OLD, key="ana/gate", content=f"{OLD}, said the porter", decisions={"said": OLD})
    fixed = mem.supersede(fact.id, reason="changed", summary="the gate code is plum")
    assert "tangerine" not in _words(fixed) and (fixed.content, fixed.decisions) == ("", {})
    assert not mem.recall(text="tangerine").found and mem.recall(text="plum").found
    assert mem.audit()[-1]["fields"] == ["summary", "content", "decisions"]
    # what the correction names is kept: the content and decisions given with it
    again = mem.supersede(fixed.id, reason="details", summary="the gate code is fig", content="fig, said the porter", decisions={"n": 1})
    assert (again.content, again.decisions) == ("fig, said the porter", {"n": 1})
    # a correction of anything but the text keeps the value whole
    tagged = mem.supersede(again.id, reason="tag", tags=["gate"])
    assert (tagged.summary, tagged.content, tagged.decisions) == (again.summary, again.content, again.decisions)


def test_a_summary_cut_from_the_content_follows_it(edb: memdb.Database) -> None:
    """A long value keeps its head as the summary and the whole as the content (the LangGraph
    store writes so): a correction of the content alone kept the old head as the summary."""
    mem = edb.owner("ana")
    long_old = f"{OLD} " + "and more words " * 49 + "and more words"
    fact = mem.record("fact", long_old, key="ana/gate", content=long_old)
    assert fact.summary != fact.content and fact.content.startswith(fact.summary.split(" …[")[0])
    long_new = "the gate code is plum " + "and more words " * 49 + "and more words"
    fixed = mem.supersede(fact.id, reason="changed", content=long_new)
    assert "tangerine" not in _words(fixed) and fixed.content == long_new and fixed.summary.startswith("the gate code is plum")
    # a summary of its own (not the content's head) is the caller's, and stays
    own = mem.record("fact", "gate details", key="ana/door", content=long_old)
    assert mem.supersede(own.id, reason="changed", content=long_new).summary == "gate details"
