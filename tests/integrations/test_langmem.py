"""LangMem's memory tools on ``MemdbStore``: ``create_manage_memory_tool`` creates, updates and
deletes memories, ``create_search_memory_tool`` finds them through memdb's recall, both with the
namespace template LangMem documents and inside a LangGraph graph that holds the store. The
tools themselves need no model, so none is used."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from clocks import Clock
from langgraph.graph import END, START, StateGraph
from langmem import create_manage_memory_tool, create_search_memory_tool

import memdb
from memdb.integrations.langgraph import MemdbStore

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
NAMESPACE = ("{langgraph_user_id}", "memories")  # the user id first: it becomes the memdb owner
ANA = {"configurable": {"langgraph_user_id": "ana"}}
BOB = {"configurable": {"langgraph_user_id": "bob"}}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[memdb.Database]:
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as database:
        yield database


@pytest.fixture
def store(db: memdb.Database) -> MemdbStore:
    return MemdbStore(db)


def _found(search: Any, query: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    return list(json.loads(search.invoke({"query": query}, config=config)))


def test_manage_and_search_tools_work_on_memdb(db: memdb.Database, store: MemdbStore) -> None:
    manage = create_manage_memory_tool(namespace=NAMESPACE, store=store)
    search = create_search_memory_tool(namespace=NAMESPACE, store=store)

    created = manage.invoke({"content": "Prefers dark mode in every editor"}, config=ANA)
    assert created.startswith("created memory ")
    memory_id = created.removeprefix("created memory ")
    manage.invoke({"content": "Deploys on Tuesdays only"}, config=ANA)
    manage.invoke({"content": "Bob prefers light mode"}, config=BOB)

    (hit,) = _found(search, "dark mode", ANA)
    assert hit["key"] == memory_id and hit["namespace"] == ["ana", "memories"]
    assert hit["value"] == {"content": "Prefers dark mode in every editor"} and hit["score"] > 0
    assert [h["value"]["content"] for h in _found(search, "light mode", BOB)] == ["Bob prefers light mode"]
    assert _found(search, "tuesdays", BOB) == []  # bob's search never reaches ana's memories

    assert manage.invoke({"content": "Prefers light mode now", "action": "update", "id": memory_id}, config=ANA).startswith("updated")
    assert _found(search, "dark", ANA) == []
    assert [h["value"]["content"] for h in _found(search, "light mode", ANA)] == ["Prefers light mode now"]

    # in memdb, each memory is ana's fact, and its earlier value a version of it
    ana = db.owner("ana")
    fact = ana.fact(f"lg/memories/{memory_id}")
    values = [v.decisions["value"]["content"] for v in ana.versions(fact.id)]
    assert values == ["Prefers dark mode in every editor", "Prefers light mode now"]

    assert manage.invoke({"action": "delete", "id": memory_id}, config=ANA).startswith("Deleted")
    assert [h["value"]["content"] for h in _found(search, "mode tuesdays", ANA)] == ["Deploys on Tuesdays only"]


def test_the_tools_sanitize_what_they_save(store: MemdbStore) -> None:
    manage = create_manage_memory_tool(namespace=NAMESPACE, store=store)
    search = create_search_memory_tool(namespace=NAMESPACE, store=store)
    manage.invoke({"content": "Reach me at ana.private@example.com"}, config=ANA)
    (hit,) = _found(search, "reach", ANA)
    assert hit["value"]["content"] == "Reach me at <EMAIL_1>"


def test_the_tools_find_the_store_of_the_graph_they_run_in(db: memdb.Database, store: MemdbStore) -> None:
    """Without ``store=``, LangMem's tools take the store the graph was compiled with (get_store)."""
    manage = create_manage_memory_tool(namespace=NAMESPACE)
    search = create_search_memory_tool(namespace=NAMESPACE)

    class State(TypedDict):
        note: str
        found: str

    def remember(state: State) -> dict[str, str]:
        manage.invoke({"content": state["note"]})
        return {}

    async def recall(state: State) -> dict[str, str]:
        return {"found": await search.ainvoke({"query": state["note"]})}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=store)

    out = asyncio.run(app.ainvoke({"note": "likes short answers", "found": ""}, config=ANA))
    assert [h["value"]["content"] for h in json.loads(out["found"])] == ["likes short answers"]
    assert [f.decisions["value"] for f in db.owner("ana").facts()] == [{"content": "likes short answers"}]
