"""LangGraph's own store tests, ported to ``memdb.integrations.langgraph.MemdbStore``.

Sources (langchain-ai/langgraph at f09cfe8, read 2026-12-01), each test named after its original:

- ``libs/checkpoint-postgres/tests/test_store.py``: ``test_batch_order``, ``test_batch_get_ops``,
  ``test_batch_put_ops``, ``test_batch_search_ops``, ``test_batch_list_namespaces_ops``,
  ``test_basic_store_ops``, ``test_list_namespaces``, ``test_search``,
  ``test_search_namespace_segment_boundary``, ``test_search_empty_prefix_is_unconstrained``,
  ``test_search_namespace_like_metacharacters``, ``test_list_namespaces_segment_boundary``,
  ``test_namespace_labels_with_trailing_newline``, ``test_store_ttl``,
  ``test_omit_expired_filters_read_paths``, ``test_omit_expired_refresh_ttl_only_refreshes_live_rows``,
  ``test_omit_expired_search_pagination``, ``test_non_ascii``;
- ``libs/checkpoint/tests/test_store.py`` (the ``InMemoryStore`` suite): ``test_list_namespaces_basic``,
  ``..._with_wildcards``, ``..._pagination``, ``..._max_depth``, ``..._no_conditions``,
  ``..._empty_store``, ``test_cannot_put_empty_namespace``, and the search behaviours of the vector
  tests (``test_vector_update_with_embedding``, ``test_vector_search_with_filters``,
  ``test_vector_search_pagination``, ``test_embed_with_path``) with memdb's text ranking standing
  in for embeddings;
- ``libs/checkpoint-sqlite/tests/test_store.py``: ``test_sql_injection_filter_values``,
  ``test_numeric_filter_safety``, ``test_boolean_filter_safety``,
  ``test_filter_keys_with_hyphens_and_digits``.

What differs, on purpose: the original TTL tests sleep and edit expiry rows in SQL; here the
database clock is injected and moved (TTL is in minutes, as LangGraph's). A search with a query
returns the items memdb's recall matches (BM25 over the item text), not every item ranked by a
vector distance, so the vector tests become checks on which items a query finds and in what
order. Tests of the SQL stores' private helpers (``_escape_like_literal``, migrations) and of
``AsyncBatchedBaseStore`` (which this store is not) have no counterpart.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

import memdb
from memdb.integrations.langgraph import MemdbStore

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
TTL_MINUTES = 1.0
TTL_SECONDS = 60


class Ticking(Clock):
    """The injected clock, moving 1 ms at each reading so writes get distinct times."""

    def __call__(self) -> dt.datetime:
        self.now += dt.timedelta(milliseconds=1)
        return self.now


@pytest.fixture
def clock() -> Ticking:
    return Ticking(NOW)


@pytest.fixture
def store(backend: str, tmp_path: Path, clock: Ticking) -> Iterator[MemdbStore]:
    with memdb.open(tmp_path / "db", clock=clock) as db:
        yield MemdbStore(db)


# --- libs/checkpoint-postgres/tests/test_store.py ----------------------------------------------


def test_batch_order(store: MemdbStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})

    ops = [
        GetOp(namespace=("test", "foo"), key="key1"),
        PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
        SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(namespace=("test",), key="key3"),
    ]
    results = store.batch(ops)
    assert len(results) == 5
    assert isinstance(results[0], Item)
    assert results[0].value == {"data": "value1"} and results[0].key == "key1"
    assert results[1] is None
    assert isinstance(results[2], list) and len(results[2]) == 1
    assert isinstance(results[3], list) and len(results[3]) > 0
    assert results[4] is None

    ops_reordered = [
        SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
        GetOp(namespace=("test", "bar"), key="key2"),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
        PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
        GetOp(namespace=("test", "foo"), key="key1"),
    ]
    results = store.batch(ops_reordered)
    assert len(results) == 5
    assert isinstance(results[0], list) and len(results[0]) >= 2
    assert isinstance(results[1], Item) and results[1].value == {"data": "value2"} and results[1].key == "key2"
    assert isinstance(results[2], list) and len(results[2]) > 0
    assert results[3] is None
    assert isinstance(results[4], Item) and results[4].value == {"data": "value1"} and results[4].key == "key1"


def test_batch_get_ops(store: MemdbStore) -> None:
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})
    results = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "key3")])
    assert len(results) == 3
    assert results[0] is not None and results[0].key == "key1"
    assert results[1] is not None and results[1].key == "key2"
    assert results[2] is None


def test_batch_put_ops(store: MemdbStore) -> None:
    results = store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key3", None),  # a delete
        ]
    )
    assert results == [None, None, None]
    item1, item2 = store.get(("test",), "key1"), store.get(("test",), "key2")
    assert item1 and item1.value == {"data": "value1"}
    assert item2 and item2.value == {"data": "value2"}
    assert store.get(("test",), "key3") is None


def test_batch_search_ops(store: MemdbStore) -> None:
    for namespace, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(namespace, key, value)
    results = store.batch(
        [
            SearchOp(namespace_prefix=("test",), filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(namespace_prefix=("test",), filter=None, limit=2, offset=0),
            SearchOp(namespace_prefix=("test", "foo"), filter=None, limit=10, offset=0),
        ]
    )
    assert len(results[0]) == 2 and all(item.value["tag"] == "a" for item in results[0])
    assert len(results[1]) == 2
    assert len(results[2]) == 1 and results[2][0].namespace == ("test", "foo")


def test_batch_list_namespaces_ops(store: MemdbStore) -> None:
    test_data = [
        (("test", "documents", "public"), "doc1", {"content": "public doc"}),
        (("test", "documents", "private"), "doc2", {"content": "private doc"}),
        (("test", "images", "public"), "img1", {"content": "public image"}),
        (("prod", "documents", "public"), "doc3", {"content": "prod doc"}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    results = store.batch(
        [
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
            ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("public",)),), max_depth=None, limit=10, offset=0),
        ]
    )
    assert len(results[0]) == len(test_data)
    assert all(len(ns) <= 2 for ns in results[1])
    assert results[2] and all(ns[-1] == "public" for ns in results[2])


def test_basic_store_ops(store: MemdbStore) -> None:
    namespace = ("test", "documents")
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(namespace, "doc1")
    assert item and item.namespace == namespace and item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}

    store.put(namespace, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(namespace, "doc1")
    assert updated and updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at

    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None


def test_list_namespaces(store: MemdbStore) -> None:
    test_namespaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for namespace in test_namespaces:
        store.put(namespace, "dummy", {"content": "dummy"})
    assert len(store.list_namespaces()) == len(test_namespaces)
    test_prefix = store.list_namespaces(prefix=("test",))
    assert len(test_prefix) == 4 and all(ns[0] == "test" for ns in test_prefix)
    public = store.list_namespaces(suffix=("public",))
    assert len(public) == 3 and all(ns[-1] == "public" for ns in public)
    assert all(len(ns) <= 2 for ns in store.list_namespaces(max_depth=2))
    assert len(store.list_namespaces(limit=3)) == 3
    for namespace in test_namespaces:
        store.delete(namespace, "dummy")
    assert store.list_namespaces() == []


def test_search(store: MemdbStore) -> None:
    test_data = [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    assert len(store.search(("test",))) == 3
    docs = store.search(("test", "docs"))
    assert len(docs) == 2 and all(item.namespace == ("test", "docs") for item in docs)
    alice = store.search(("test",), filter={"author": "Alice"})
    assert len(alice) == 2 and all(item.value["author"] == "Alice" for item in alice)
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1
    for namespace, key, _ in test_data:
        store.delete(namespace, key)
    assert store.search(("test",)) == []


def _namespaces_found(store: MemdbStore, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {item.namespace for item in store.search(prefix, limit=100)}


def test_search_namespace_segment_boundary(store: MemdbStore) -> None:
    for namespace in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",), ("foobar", "baz"), ("foo2",)]:
        store.put(namespace, "k", {"v": 1})
    assert _namespaces_found(store, ("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces_found(store, ("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert _namespaces_found(store, ("foo", "child")) == {("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces_found(store, ("foo2",)) == {("foo2",)}
    assert _namespaces_found(store, ("fo",)) == set()


def test_search_empty_prefix_is_unconstrained(store: MemdbStore) -> None:
    for namespace in [("a",), ("b", "c"), ("d", "e", "f")]:
        store.put(namespace, "k", {"v": 1})
    assert _namespaces_found(store, ()) == {("a",), ("b", "c"), ("d", "e", "f")}


def test_search_namespace_like_metacharacters(store: MemdbStore) -> None:
    for namespace in [("user_1",), ("user_1", "child"), ("userX1",), ("a%b",), ("axxb",)]:
        store.put(namespace, "k", {"v": 1})
    assert _namespaces_found(store, ("user_1",)) == {("user_1",), ("user_1", "child")}
    assert _namespaces_found(store, ("a%b",)) == {("a%b",)}


def test_list_namespaces_segment_boundary(store: MemdbStore) -> None:
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foobar",),
        ("foobar", "baz"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    ]:
        store.put(namespace, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=("foo",), limit=100)) == {("foo",), ("foo", "child")}
    assert set(store.list_namespaces(suffix=("alice",), limit=100)) == {("uid", "users", "alice"), ("uid", "a", "b", "alice")}
    assert set(store.list_namespaces(prefix=("uid", "*", "alice"), limit=100)) == {("uid", "users", "alice")}
    assert set(store.list_namespaces(prefix=("uid",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    }


def test_namespace_labels_with_trailing_newline(store: MemdbStore) -> None:
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "alice\n"), "k", {"v": 2})
    assert set(store.list_namespaces(suffix=("alice",), limit=100)) == {("users", "alice")}
    assert set(store.list_namespaces(prefix=("users", "alice"), limit=100)) == {("users", "alice")}
    assert store.get(("users", "alice\n"), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_store_ttl(store: MemdbStore, clock: Ticking) -> None:
    """The original sleeps; here the clock moves the same (TTL_SECONDS - 2) steps."""
    ns = ("foo",)
    store.put(ns, key="item1", value={"foo": "bar"}, ttl=TTL_MINUTES)
    clock.advance(seconds=TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=True) is not None
    clock.advance(seconds=TTL_SECONDS - 2)
    assert len(store.search(ns, query="foo", refresh_ttl=True)) == 1
    clock.advance(seconds=TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=False) is not None
    clock.advance(seconds=TTL_SECONDS - 1)
    assert store.search(ns, query="bar", refresh_ttl=False) == []
    assert store.get(ns, key="item1") is None


def test_omit_expired_filters_read_paths(store: MemdbStore, clock: Ticking) -> None:
    expired_ns, control_ns = ("omit", "expired"), ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=TTL_MINUTES)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    clock.advance(minutes=2)
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert [i.key for i in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces and control_ns in namespaces


def test_omit_expired_refresh_ttl_only_refreshes_live_rows(store: MemdbStore, clock: Ticking) -> None:
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=TTL_MINUTES)
    clock.advance(seconds=40)
    store.put(ns, "live_get", {"n": 1}, ttl=TTL_MINUTES)
    store.put(ns, "live_search", {"n": 2}, ttl=TTL_MINUTES)
    clock.advance(seconds=35)  # "expired" is 75 s old, the live ones 35 s: less than half their TTL left
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    clock.advance(seconds=50)  # 85 s after the live ones were written: alive only because both reads refreshed them
    assert store.get(ns, "live_get", refresh_ttl=False) is not None
    assert store.get(ns, "live_search", refresh_ttl=False) is not None
    assert store.get(ns, "expired", refresh_ttl=False) is None


def test_omit_expired_search_pagination(store: MemdbStore, clock: Ticking) -> None:
    """Expired items are dropped before the page is cut, so page 1 is full."""
    ns = ("page",)
    store.put(ns, "c", {"k": "c"}, ttl=TTL_MINUTES * 10)
    store.put(ns, "b", {"k": "b"}, ttl=TTL_MINUTES * 10)
    store.put(ns, "expired", {"k": "x"}, ttl=TTL_MINUTES)
    store.put(ns, "a", {"k": "a"}, ttl=TTL_MINUTES * 10)
    clock.advance(minutes=2)
    # most recently updated first: a, expired, b, c
    assert [i.key for i in store.search(ns, limit=2, offset=0)] == ["a", "b"]
    assert [i.key for i in store.search(ns, limit=2, offset=2)] == ["c"]


def test_non_ascii(store: MemdbStore) -> None:
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


# --- libs/checkpoint/tests/test_store.py (InMemoryStore) ----------------------------------------


def test_list_namespaces_basic(store: MemdbStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"))) == ab
    assert sorted(store.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == ab[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == ab[2:]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(store: MemdbStore) -> None:
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == [("users", "123"), ("users", "456"), ("users", "789", "settings")]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    store.put(namespace=("admin", "users", "settings", "789"), key="foo", value={"data": "some_val"})
    assert store.list_namespaces(prefix=("*", "users"), suffix=("settings", "*")) == [("admin", "users", "settings", "789")]


def test_list_namespaces_pagination(store: MemdbStore) -> None:
    for i in range(20):
        store.put(namespace=("namespace", f"sub_{i:02d}"), key=f"id_{i:02d}", value={"data": f"value_{i:02d}"})
    for offset in (0, 5, 15):
        expected = [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]
        assert store.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == expected


def test_list_namespaces_max_depth(store: MemdbStore) -> None:
    for i, ns in enumerate([("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j", "k")]):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(max_depth=2)) == [("a", "b"), ("a", "g"), ("h", "i")]


def test_list_namespaces_no_conditions(store: MemdbStore) -> None:
    namespaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces()) == namespaces


def test_list_namespaces_empty_store(store: MemdbStore) -> None:
    assert store.list_namespaces() == []


def test_cannot_put_empty_namespace(store: MemdbStore) -> None:
    doc = {"foo": "bar"}

    async def run() -> None:
        for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
            with pytest.raises(InvalidNamespaceError):
                store.put(bad, "foo", doc)
            with pytest.raises(InvalidNamespaceError):
                await store.aput(bad, "foo", doc)

        await store.aput(("foo", "langgraph", "foo"), "bar", doc)
        assert (await store.aget(("foo", "langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
        assert (await store.asearch(("foo", "langgraph", "foo"), query="bar"))[0].value == doc
        await store.adelete(("foo", "langgraph", "foo"), "bar")
        assert await store.aget(("foo", "langgraph", "foo"), "bar") is None
        store.put(("foo", "langgraph", "foo"), "bar", doc)
        assert store.get(("foo", "langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
        assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
        store.delete(("foo", "langgraph", "foo"), "bar")
        assert store.get(("foo", "langgraph", "foo"), "bar") is None

        # past the public put api, a root label "langgraph" is allowed
        await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
        assert (await store.aget(("langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
        assert (await store.asearch(("langgraph", "foo")))[0].value == doc
        await store.adelete(("langgraph", "foo"), "bar")
        assert await store.aget(("langgraph", "foo"), "bar") is None
        store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
        assert store.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
        assert store.search(("langgraph", "foo"))[0].value == doc
        store.delete(("langgraph", "foo"), "bar")
        assert store.get(("langgraph", "foo"), "bar") is None
        # ... but labels are still checked there (validate_op_namespace)
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(("the", "thing.about"), "bar", doc)])

    asyncio.run(run())


def test_search_update_changes_what_a_query_finds(store: MemdbStore) -> None:
    """test_vector_update_with_embedding: an updated item is found by its new text only, and an
    item put with ``index=False`` is not found by a query (it stays reachable by get)."""
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    first = store.search(("test",), query="Zany Xerxes")
    assert [r.key for r in first] == ["doc1"] and first[0].score is not None and first[0].score > 0

    store.put(("test",), "doc1", {"text": "new text about dogs"})
    assert store.search(("test",), query="Zany Xerxes") == []
    assert store.search(("test",), query="new text about dogs")[0].key == "doc1"

    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert not any(r.key == "doc4" for r in store.search(("test",), query="new text about dogs", limit=3))
    assert store.get(("test",), "doc4").value == {"text": "new text about dogs"}  # type: ignore[union-attr]


def test_search_with_query_and_filters(store: MemdbStore) -> None:
    """test_vector_search_with_filters."""
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        store.put(("test",), key, value)
    # the filter narrows what the query matched: "apple" matches doc1 and doc3, only doc1 is red
    assert [r.key for r in store.search(("test",), query="apple", filter={"color": "red"})] == ["doc1"]
    assert [r.key for r in store.search(("test",), query="car", filter={"color": "red"})] == ["doc2"]
    assert {r.key for r in store.search(("test",), query="car apple", filter={"score": {"$gt": 3.2}})} == {"doc1", "doc3", "doc4"}
    assert [r.key for r in store.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})] == ["doc3"]


def test_search_pagination_with_query(store: MemdbStore) -> None:
    """test_vector_search_pagination."""
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    assert len(store.search(("test",), query="test", limit=10)) == 5


def test_index_paths_choose_the_searchable_text(tmp_path: Path, backend: str) -> None:
    """test_embed_with_path: store-level ``fields`` and a put's own ``index`` paths say which
    fields a query reaches; the rest of the value is kept and returned, but not found."""
    with memdb.open(tmp_path / "db", clock=Ticking(NOW)) as db:
        store = MemdbStore(db, fields=["key0", "key1", "key3"])
        store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
        store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
        assert {r.key for r in store.search(("test",), query="xxx")} == {"doc1", "doc2"}
        assert [r.key for r in store.search(("test",), query="uuu")] == ["doc2"]
        assert store.search(("test",), query="www") == []  # key2 is not indexed

        store.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}, index=["key0", "key1"])
        store.put(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}, index=["key1", "key3"])
        assert [r.key for r in store.search(("test",), query="aaa")] == ["doc3"]
        assert [r.key for r in store.search(("test",), query="ggg")] == ["doc4"]
        assert {r.key for r in store.search(("test",), query="bbb")} == {"doc3", "doc4"}
        assert store.search(("test",), query="ccc") == []
        assert store.get(("test",), "doc3").value["key2"] == "ccc"  # type: ignore[union-attr]


# --- libs/checkpoint-sqlite/tests/test_store.py: filters ------------------------------------------


def test_filter_values_are_literals(store: MemdbStore) -> None:
    """test_sql_injection_filter_values: a filter value only ever equals itself."""
    store.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    store.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    store.put(("docs",), "doc3", {"access": "secret", "title": "Secret Document"})
    for hostile in ["public' OR '1'='1", "public'; --", "public' UNION SELECT * FROM store --", "public\x00' OR '1'='1", "''''"]:
        assert store.search(("docs",), filter={"access": hostile}) == []
    store.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    assert [r.key for r in store.search(("docs",), filter={"title": "O'Brien's Document"})] == ["doc4"]


def test_numeric_filter_safety(store: MemdbStore) -> None:
    store.put(("items",), "item1", {"price": 10, "quantity": 5})
    store.put(("items",), "item2", {"price": 20, "quantity": 3})
    store.put(("items",), "item3", {"price": 30, "quantity": 1})
    results = store.search(("items",), filter={"price": {"$gt": 15}})
    assert len(results) == 2 and all(r.value["price"] > 15 for r in results)
    assert len(store.search(("items",), filter={"price": {"$lt": float("inf")}})) == 3
    assert len(store.search(("items",), filter={"price": {"$gt": float("-inf")}})) == 3
    assert store.search(("items",), filter={"price": {"$eq": float("nan")}}) == []
    assert len(store.search(("items",), filter={"price": {"$lt": 10**100}})) == 3
    store.put(("items",), "item4", {"price": -10, "quantity": 0})
    assert [r.key for r in store.search(("items",), filter={"price": {"$lt": 0}})] == ["item4"]


def test_boolean_filter_safety(store: MemdbStore) -> None:
    store.put(("flags",), "flag1", {"active": True, "name": "Feature A"})
    store.put(("flags",), "flag2", {"active": False, "name": "Feature B"})
    store.put(("flags",), "flag3", {"active": True, "name": "Feature C"})
    store.put(("flags",), "flag4", {"active": 1, "name": "Feature D"})  # JSON's 1 is not true
    assert {r.key for r in store.search(("flags",), filter={"active": True})} == {"flag1", "flag3"}
    assert [r.key for r in store.search(("flags",), filter={"active": False})] == ["flag2"]


def test_filter_keys_with_hyphens_and_digits(store: MemdbStore) -> None:
    store.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    assert [r.key for r in store.search(("docs",), filter={"access-level": "public"})] == ["hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"user.access-level": "nested"})] == ["hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"123abc": "ok"})] == ["digit"]
    assert [r.key for r in store.search(("docs",), filter={"user.123abc": "ok2"})] == ["digit"]


def test_many_concurrent_async_calls(store: MemdbStore) -> None:
    """test_async_batched_vector_search_concurrent, on the worker-thread abatch: puts, deletes
    and puts again, gathered, then filtered searches, gathered."""
    colors, things = ["red", "blue", "green", "yellow", "purple"], ["apple", "car", "house", "book", "phone"]
    scores = [3.0, 3.5, 4.0, 4.5, 5.0]
    docs = [
        (f"doc{i}", {"text": f"{colors[i % 5]} {things[i % 5]}", "color": colors[i % 5], "score": scores[i % 5], "index": i})
        for i in range(20)
    ]

    async def run() -> list[Any]:
        await asyncio.gather(*[store.aput(("test",), key, value) for key, value in docs])
        await asyncio.gather(*[store.adelete(("test",), key) for key, _ in docs[:10]])
        await asyncio.gather(*[store.aput(("test",), key, value) for key, value in docs[:10]])
        return await asyncio.gather(
            store.asearch(("test",), query="apple", filter={"color": "red"}),
            store.asearch(("test",), query="phone", filter={"score": {"$gt": 4.99}}),
            store.asearch(("test",), query="house", filter={"index": {"$gt": 5}}),
        )

    red_apples, phones, houses = asyncio.run(run())
    assert {r.key for r in red_apples} == {"doc0", "doc5", "doc10", "doc15"}
    assert {r.key for r in phones} == {"doc4", "doc9", "doc14", "doc19"}
    assert {r.key for r in houses} == {"doc7", "doc12", "doc17"}
