"""``MemdbStore`` as memdb sees it: every item an owner's fact, sanitized, found by memdb's own
queries, corrected as a version and erased whole; and the LangGraph tests' shapes ported in
tests/integrations/test_langgraph_conformance.py."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from clocks import Clock
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import GetOp, PutOp, SearchOp

import memdb
from memdb.errors import NotFoundError, ValidationError
from memdb.integrations.langgraph import MemdbStore, fact_key

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
EMAIL = "ana.secret@example.com"
CARD = "4111 1111 1111 1111"


@pytest.fixture
def db(backend: str, tmp_path: Path) -> Iterator[memdb.Database]:
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as database:
        yield database


def test_an_item_is_a_fact_of_the_owner_the_namespace_names(db: memdb.Database) -> None:
    store = MemdbStore(db)
    store.put(("ana", "memories"), "theme", {"content": "prefers dark mode"})
    (fact,) = db.owner("ana").facts()
    assert fact.kind == "fact" and fact.key == "lg/memories/theme" and "langgraph" in fact.tags
    assert fact.decisions["value"] == {"content": "prefers dark mode"} and "dark mode" in fact.summary
    assert db.owner("bob").facts() == [] and db.owners() == ["ana"]
    # memdb's own queries find it: the item is indexed like any episode
    assert [h.episode.id for h in db.owner("ana").recall(text="dark mode")] == [fact.id]
    assert db.owner("bob").recall(text="dark mode").total == 0


def test_a_store_with_an_owner_keeps_every_namespace_under_it(db: memdb.Database) -> None:
    ana = MemdbStore(db, owner="ana")
    ana.put(("bob", "memories"), "k", {"content": "ana's note under a namespace that names bob"})
    assert db.owner("bob").facts() == [] and len(db.owner("ana").facts()) == 1
    assert ana.get(("bob", "memories"), "k") is not None
    assert MemdbStore(db, owner="bob").get(("bob", "memories"), "k") is None
    assert MemdbStore(db, owner="bob").search(()) == [] and MemdbStore(db, owner="bob").list_namespaces() == []
    assert ana.list_namespaces() == [("bob", "memories")]
    # the store without an owner reads it as ana's, namespace ("ana", "bob", "memories")
    assert MemdbStore(db).list_namespaces() == [("ana", "bob", "memories")]


def test_values_are_sanitized_before_anything_is_written(db: memdb.Database, tmp_path: Path, backend: str) -> None:
    store = MemdbStore(db)
    store.put(("ana", "contacts"), "c1", {"note": f"write to {EMAIL}", "card": CARD, "password": "hunter2zz", "n": 3})
    item = store.get(("ana", "contacts"), "c1")
    assert item is not None
    assert item.value == {"note": "write to <EMAIL_1>", "card": "<CARD_1>", "password": "<SECRET_1>", "n": 3}
    found = store.search(("ana",), query="write")
    assert [r.value for r in found] == [item.value]
    fact = db.owner("ana").facts()[0]
    for text in (fact.summary, fact.content, repr(fact.decisions)):
        assert EMAIL not in text and "4111" not in text and "hunter2zz" not in text
    if backend == "lmdb":
        db.flush()
        raw = b"".join(p.read_bytes() for p in sorted((tmp_path / "db").iterdir()) if p.is_file())
        assert EMAIL.encode() not in raw and b"hunter2zz" not in raw and b"4111 1111" not in raw


def test_personal_data_in_a_namespace_or_key_is_refused(db: memdb.Database) -> None:
    store = MemdbStore(db)
    with pytest.raises(ValidationError, match="personal data"):
        store.put((CARD, "memories"), "k", {"v": 1})  # the owner label (labels hold no ".", so no email)
    with pytest.raises(ValidationError, match="personal data"):
        store.put(("ana", CARD), "k", {"v": 1})
    with pytest.raises(ValidationError, match="personal data"):
        store.put(("ana", "memories"), EMAIL, {"v": 1})
    long_label = "x" * 150  # past a readable fact key: the labels live in decisions only, sanitized
    with pytest.raises(ValidationError, match="personal data"):
        store.put(("ana", long_label), EMAIL, {"v": 1})
    assert store.search(("ana",)) == [] and db.owner("ana").facts() == []
    assert db.owners() in ([], ["ana"])
    # a first label no owner can have finds nothing to read
    assert store.get((CARD, "memories"), "k") is None and store.get(("bad\nowner",), "k") is None
    assert store.search((CARD,)) == [] and store.list_namespaces(prefix=("bad\nowner",)) == []
    with pytest.raises(ValidationError):
        store.put(("bad\nowner",), "k", {"v": 1})


def test_long_namespaces_and_keys_get_a_digest_key(db: memdb.Database) -> None:
    store = MemdbStore(db)
    ns = ("ana", "projects", "n" * 120)
    store.put(ns, "k" * 200, {"content": "the long one"})
    store.put(("ana", "projects"), "short", {"content": "the short one"})
    assert store.get(ns, "k" * 200).value == {"content": "the long one"}  # type: ignore[union-attr]
    keys = sorted(str(f.key) for f in db.owner("ana").facts())
    assert keys[0] == "lg/projects/short" and re.fullmatch(r"lg:[g-v]{40}", keys[1])  # a digest holds no digit
    assert {r.key for r in store.search(("ana", "projects"))} == {"k" * 200, "short"}
    assert [r.key for r in store.search(("ana", "projects", "n" * 120), query="long")] == ["k" * 200]
    assert sorted(store.list_namespaces(prefix=("ana",))) == [("ana", "projects"), ns]
    store.delete(ns, "k" * 200)
    assert store.get(ns, "k" * 200) is None and len(db.owner("ana").facts()) == 1


def test_a_new_value_supersedes_and_a_delete_erases_every_version(db: memdb.Database) -> None:
    store, ana = MemdbStore(db), db.owner("ana")
    store.put(("ana", "prefs"), "editor", {"content": "vim"})
    store.put(("ana", "prefs"), "editor", {"content": "emacs"})
    store.put(("ana", "prefs"), "editor", {"content": "emacs"})  # the same value at the same time: nothing new
    current = ana.fact("lg/prefs/editor")
    assert [v.decisions["value"]["content"] for v in ana.versions(current.id)] == ["vim", "emacs"]
    assert ana.recall(text="vim").total == 0  # an old value is out of default answers
    store.delete(("ana", "prefs"), "editor")
    with pytest.raises(NotFoundError):
        ana.versions(current.id)
    assert ana.count() == 0
    assert [a["action"] for a in ana.audit()][-1] == "delete"


def test_a_bad_batch_fails_whole_before_it_writes(db: memdb.Database) -> None:
    store = MemdbStore(db)
    with pytest.raises(ValidationError, match="not a dict"):
        store.batch([PutOp(("ana", "x"), "ok", {"v": 1}), PutOp(("ana", "x"), "bad", ["not", "a", "dict"])])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not a dict") as bad:
        store.put(("ana", "x"), EMAIL, "a str")  # type: ignore[arg-type]
    assert EMAIL not in str(bad.value) and "<EMAIL_1>" in str(bad.value)  # errors never quote personal data
    with pytest.raises(ValidationError, match=r"operator '\$regex'"):
        store.search(("ana",), filter={"v": {"$regex": ".*"}})
    with pytest.raises(ValidationError, match="ttl"):
        store.put(("ana", "x"), "k", {"v": 1}, ttl=-5)
    assert db.owners() == []


def test_ttl_config_gives_the_default_and_sweep_erases_what_expired(tmp_path: Path) -> None:
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        store = MemdbStore(db, ttl={"default_ttl": 10, "refresh_on_read": False})
        store.put(("ana", "cache"), "a", {"v": 1})
        store.put(("ana", "cache"), "b", {"v": 2}, ttl=None)  # explicitly never expires
        clock.advance(minutes=9)
        assert store.get(("ana", "cache"), "a") is not None  # no refresh by default here
        clock.advance(minutes=2)
        assert store.sweep_ttl() == 1
        assert [f.decisions["key"] for f in db.owner("ana").facts()] == ["b"]
        assert store.sweep_ttl() == 0


def _raw(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())


def test_a_put_over_an_expired_item_erases_it_and_writes_a_fresh_one(tmp_path: Path, backend: str) -> None:
    """An expired item is erased when met: a put met it and superseded it instead, so the
    expired value stayed for good as an earlier version (versions(), include_superseded, the
    file after compact()), and sweep_ttl() found nothing to erase."""
    clock, path = Clock(NOW), tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        store, ana = MemdbStore(db), db.owner("ana")
        store.put(("ana", "mem"), "k", {"content": "lives at wombatstreet 12"}, ttl=1)
        clock.advance(minutes=2)
        store.put(("ana", "mem"), "k", {"content": "fresh value"})
        current = ana.fact("lg/mem/k")
        assert [v.id for v in ana.versions(current.id)] == [current.id] and current.supersedes is None
        item = store.get(("ana", "mem"), "k")
        assert item is not None and item.value == {"content": "fresh value"} and item.created_at == clock.now  # a new item
        assert ana.recall(text="wombatstreet", include_superseded=True).total == 0
        assert [a["reason"] for a in ana.audit() if a["action"] == "delete"] == ["langgraph store: ttl expired"]
        assert store.sweep_ttl() == 0 and db.check().ok
        db.compact()
    assert b"wombatstreet" not in _raw(path)


def test_sweep_erases_earlier_values_whose_own_ttl_ran_out(tmp_path: Path, backend: str) -> None:
    """A value put with a TTL and replaced before it expired stayed as an earlier version of a
    live item past its own expiry, for good; sweep_ttl() erases it (with the versions before it),
    and the item keeps its current value and its creation time."""
    clock, path = Clock(NOW), tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        store, ana = MemdbStore(db), db.owner("ana")
        store.put(("ana", "mem"), "k", {"content": "first wombatvalue"})
        store.put(("ana", "mem"), "k", {"content": "second quokkavalue"}, ttl=1)
        clock.advance(seconds=30)
        store.put(("ana", "mem"), "k", {"content": "third value"}, ttl=10)
        assert store.sweep_ttl() == 0  # nothing expired yet
        clock.advance(minutes=2)  # the second value's own minute is over; the item lives on
        assert store.sweep_ttl() == 2
        current = ana.fact("lg/mem/k")
        assert [v.decisions["value"] for v in ana.versions(current.id)] == [{"content": "third value"}]
        item = store.get(("ana", "mem"), "k")
        assert item is not None and item.value == {"content": "third value"} and item.created_at == NOW
        assert store.sweep_ttl() == 0 and db.check().ok
        db.compact()
    assert b"wombatvalue" not in _raw(path) and b"quokkavalue" not in _raw(path)


def test_store_search_goes_through_recall(db: memdb.Database) -> None:
    """A query ranks with memdb's recall (its scores; what it returns counts as accessed), and
    episodes that are not store items never appear."""
    store, ana = MemdbStore(db), db.owner("ana")
    ana.record("debug", "deploy of the dark theme failed", outcome="failure")
    ana.record("fact", "dark", key="ui.theme")  # a fact of ana's own, not the store's
    store.put(("ana", "notes"), "n1", {"content": "dark theme shipped"})
    store.put(("ana", "notes"), "n2", {"content": "light theme planned"})
    found = store.search(("ana",), query="dark theme")
    assert [r.key for r in found] == ["n1", "n2"] and found[0].score is not None and found[0].score >= (found[1].score or 0)
    db.flush()
    assert ana.peek(ana.fact("lg/notes/n1").id).access_count >= 1


def test_import_memdb_does_not_import_langgraph() -> None:
    code = "import sys, memdb; print(any(m.split('.')[0] in ('langgraph', 'langchain_core') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


_label = st.text(st.characters(exclude_characters=".\x00", exclude_categories=("Cs",)), min_size=1, max_size=30)


@given(st.lists(st.tuples(st.lists(_label, max_size=4).map(tuple), st.text(st.characters(exclude_categories=("Cs",)), max_size=40))))
def test_fact_keys_are_valid_and_distinct(items: list[tuple[tuple[str, ...], str]]) -> None:
    keys = {}
    for stored, key in items:
        fk = fact_key(stored, key)
        assert re.fullmatch(r"[A-Za-z0-9_.:@/+-]{1,128}", fk), fk
        assert keys.setdefault(fk, (stored, key)) == (stored, key)


@pytest.mark.parametrize(("old", "new"), [(0, False), (True, 1), (1, 1.0)])
def test_a_put_of_an_equal_value_of_another_type_is_kept(db: memdb.Database, old: object, new: object) -> None:
    """``{"done": False}`` after ``{"done": 0}`` is a new value (as in InMemoryStore), not the
    same one again: memdb compared facts with ``==`` and dropped the put."""
    store = MemdbStore(db, fields=["content"])
    for value in ("no", old, new):
        store.put(("ana", "tasks"), "t", {"content": "write report", "done": value})
    item = store.get(("ana", "tasks"), "t")
    assert item is not None and repr(item.value["done"]) == repr(new)


@pytest.mark.parametrize("query", ["what is it?", "?", "I", "who am I", "<EMAIL_1>"])
def test_a_query_without_searchable_words_finds_nothing(db: memdb.Database, query: str) -> None:
    """A query of stopwords, one-letter words or placeholders shares no word with any item:
    ``[]``, as BaseStore.search returns a list (memdb's recall refuses such a text, and the
    store let its ValidationError out, crashing LangMem's search tool on "what is it?")."""
    store = MemdbStore(db)
    store.put(("ana", "memories"), "theme", {"content": "Prefers dark mode"})
    assert store.search(("ana",), query=query) == []
    assert store.search((), query=query, filter={"content": "Prefers dark mode"}) == []
    assert [r.key for r in store.search(("ana",), query=f"{query} dark")] == ["theme"]


def test_an_item_put_with_index_false_is_never_found_by_a_query(db: memdb.Database) -> None:
    """``index=False`` keeps an item out of query results, also for the words of its
    namespace and key: its fact's summary was its key, and memdb indexes every fact's key."""
    store = MemdbStore(db)
    store.put(("ana", "recipes"), "lasagna", {"content": "layers of pasta"}, index=False)
    store.put(("ana", "recipes"), "soup", {"content": "lasagna soup is great"})
    for query in ("lasagna", "recipes", "layers of pasta"):
        assert [r.key for r in store.search(("ana",), query=query)] in ([], ["soup"])
    assert [r.key for r in store.search(("ana",), query="lasagna")] == ["soup"]
    # filters and listings still find it, and a later indexed put makes it searchable
    assert [r.key for r in store.search(("ana",), filter={"content": "layers of pasta"})] == ["lasagna"]
    assert {r.key for r in store.search(("ana", "recipes"))} == {"lasagna", "soup"}
    store.put(("ana", "recipes"), "lasagna", {"content": "layers of pasta"})
    assert [r.key for r in store.search(("ana",), query="pasta")] == ["lasagna"]
    # so is one whose indexed paths hold no text
    store.put(("ana", "recipes"), "pie", {"content": "apple pie"}, index=[])
    store.put(("ana", "recipes"), "tart", {"done": True, "n": None})
    assert store.search(("ana",), query="pie") == [] and store.search(("ana",), query="tart") == []


def test_concurrent_deletes_and_puts_of_one_item(db: memdb.Database) -> None:
    """Deleting a missing item is a no-op (LangGraph's), also when another writer deleted it
    between this delete's read and its write: the read and the write are one transaction (two
    graph branches deleting one item made one raise NotFoundError)."""
    store = MemdbStore(db)
    with ThreadPoolExecutor(4) as pool:
        for i in range(15):
            store.put(("ana", "m"), f"k{i}", {"content": f"item {i}"})
            deletes = [pool.submit(store.delete, ("ana", "m"), f"k{i}") for _ in range(3)]
            assert [f.result() for f in deletes] == [None] * 3
            assert store.get(("ana", "m"), f"k{i}") is None
        # puts racing deletes: the item ends deleted or with the value put, never an error
        store.put(("ana", "m"), "k", {"content": "first"})
        racing = [pool.submit(store.put, ("ana", "m"), "k", {"content": f"v{j}"} if j % 2 else None) for j in range(8)]
        assert [f.result() for f in racing] == [None] * 8
    item = store.get(("ana", "m"), "k")
    assert item is None or item.value["content"] in {f"v{j}" for j in range(1, 8, 2)}
    assert [a["action"] for a in db.owner("ana").audit()].count("delete") >= 15
    assert db.check().ok


def test_an_expiring_read_never_erases_a_value_put_meanwhile(backend: str, tmp_path: Path) -> None:
    """A read that meets an expired item erases it in a transaction that reads it again: it
    deleted the version it had read, and a delete takes every version of a fact, so a value
    put between the read and the delete went with it."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db, ThreadPoolExecutor(2) as pool:
        store = MemdbStore(db)
        for i in range(20):
            store.put(("ana", "cache"), "k", {"v": f"old {i}"}, ttl=1)
            clock.advance(minutes=2)
            read = pool.submit(store.get, ("ana", "cache"), "k")
            put = pool.submit(store.put, ("ana", "cache"), "k", {"v": f"new {i}"})
            assert put.result() is None
            got = read.result()
            assert got is None or got.value == {"v": f"new {i}"}
            item = store.get(("ana", "cache"), "k")
            assert item is not None and item.value == {"v": f"new {i}"}
            store.delete(("ana", "cache"), "k")


def _every_node(db: memdb.Database) -> dict[str, list[object]]:
    with db.snapshot():
        return {name: list(db.globals[name].items()) for name in db.globals.names()}


@pytest.mark.parametrize(
    ("namespace", "key"), [(("ana", "+14155550132"), "k"), (("ana", CARD), "k"), (("ana", "notes"), EMAIL), (("ana", "x" * 150), EMAIL)]
)
def test_personal_data_in_a_label_writes_nothing(db: memdb.Database, namespace: tuple[str, ...], key: str) -> None:
    """A put refused for personal data in a namespace label or key writes nothing: it recorded
    the fact, then deleted it, leaving a "delete" audit record of a call that failed."""
    store = MemdbStore(db)
    store.put(("ana", "notes"), "k", {"content": "hello"})
    before = _every_node(db)
    with pytest.raises(ValidationError, match="personal data"):
        store.put(namespace, key, {"content": "hi"})
    assert _every_node(db) == before
    assert [a["action"] for a in db.owner("ana").audit()] == []


@pytest.mark.parametrize(
    "refused",
    [
        PutOp(("ana", "m"), "4111111111111111", {"v": "x"}),
        PutOp(("ana", "m"), "nan", {"v": float("nan")}),
        PutOp(("ana", "m"), "raw", {"v": b"raw"}),
    ],
    ids=["card-number-key", "nan", "bytes"],
)
def test_a_batch_refused_by_memdb_writes_nothing(db: memdb.Database, refused: PutOp) -> None:
    """A put memdb refuses only when it records it (personal data in a key, a value it cannot
    keep) fails the whole batch: the puts before it were committed, though batch promised
    nothing done."""
    store = MemdbStore(db)
    store.put(("ana", "m"), "kept", {"content": "before the batch"})
    before = _every_node(db)
    ops = [PutOp(("ana", "m"), "new", {"content": "xylophone"}), PutOp(("ana", "m"), "kept", None), GetOp(("ana", "m"), "new"), refused]
    with pytest.raises(ValidationError):
        store.batch(ops)
    assert _every_node(db) == before
    assert store.get(("ana", "m"), "new") is None and store.get(("ana", "m"), "kept") is not None
    # a good batch's reads see its own puts
    got, found = store.batch([*ops[:3], SearchOp(("ana",), query="xylophone")])[2:]
    assert got == store.get(("ana", "m"), "new") and [r.key for r in found] == ["new"]  # type: ignore[union-attr]


def test_updated_at_is_the_latest_put(tmp_path: Path, backend: str) -> None:
    """``updated_at`` is the time of the latest put, the same value again too (LangGraph's
    stores write the row): memdb's version time stood for it, and a fact's same value again
    writes nothing, so a heartbeat put kept the old time and listed the item last."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        store = MemdbStore(db)
        for key in ("a", "a", "b", "a"):  # heartbeats: the same value again
            store.put(("ana", "m"), key, {"status": "ok"})
            clock.advance(minutes=1)
        item = store.get(("ana", "m"), "a")
        assert item is not None and (item.created_at, item.updated_at) == (NOW, NOW + dt.timedelta(minutes=3))
        assert [r.key for r in store.search(("ana",))] == ["a", "b"]


def test_a_ttl_refresh_moves_only_the_expiry(tmp_path: Path, backend: str) -> None:
    """A TTL-refreshing read writes a new expiry (a new version) but keeps ``updated_at``, as
    PostgresStore's ``UPDATE ... SET expires_at``: it became the read's time, and the item the
    most recently updated."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        store = MemdbStore(db, ttl={"default_ttl": 60, "refresh_on_read": True})
        store.put(("ana", "m"), "old", {"content": "written first"})
        clock.advance(minutes=10)
        store.put(("ana", "m"), "new", {"content": "written second"})
        clock.advance(minutes=30)  # old has 20 of its 60 minutes left: a read refreshes it
        assert store.get(("ana", "m"), "old") is not None
        old = store.get(("ana", "m"), "old", refresh_ttl=False)
        assert old is not None and (old.created_at, old.updated_at) == (NOW, NOW)
        assert len(db.owner("ana").versions(db.owner("ana").fact("lg/m/old").id)) == 2  # the new expiry
        assert [r.key for r in store.search(("ana",), refresh_ttl=False)] == ["new", "old"]
        clock.advance(minutes=45)  # past old's first expiry, within the one the read gave it
        assert store.get(("ana", "m"), "old") is not None and store.get(("ana", "m"), "new") is None


def test_every_field_of_a_long_value_is_searchable(db: memdb.Database, caplog: pytest.LogCaptureFixture) -> None:
    """A value's text longer than ``digest_chars`` keeps the start of every indexed field:
    cut at the cap as one text, a field after a long one was never found by a query. What is
    left out is said on the module's logger (ids and counts, no text)."""
    store = MemdbStore(db)
    store.put(("ana", "notes"), "long", {"content": "meeting notes " * 200, "topic": "axolotl"})
    store.put(("ana", "notes"), "many", {f"f{i}": f"word{i}x " + "filler " * 100 for i in range(12)})
    assert [r.key for r in store.search(("ana",), query="axolotl")] == ["long"]
    for i in range(12):
        assert [r.key for r in store.search(("ana",), query=f"word{i}x")] == ["many"]
    assert store.get(("ana", "notes"), "long").value["content"] == "meeting notes " * 200  # type: ignore[union-attr]
    fact = db.owner("ana").fact("lg/notes/many")
    assert len(fact.content) <= db.settings.digest_chars and "truncated" not in fact.content
    warnings = [r.getMessage() for r in caplog.records if r.name == "memdb.integrations.langgraph"]
    assert len(warnings) == 2 and fact.id in warnings[1] and "filler" not in warnings[1] and "not searchable" in warnings[1]
    # the cap is the database's: raised, the whole text is searchable and nothing is said
    db.configure(digest_chars=20_000)
    caplog.clear()
    store.put(("ana", "notes"), "many", {"f0": "filler " * 100 + "tailword"})
    assert [r.key for r in store.search(("ana",), query="tailword")] == ["many"] and not caplog.records
