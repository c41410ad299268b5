"""``MemdbStore`` reads that must hold whatever else happens to its facts: pages of one order,
keys found by a keyed lookup whatever their escapes read as, items changed through memdb's own
API, expired items swept out of memdb's answers, and what the app is told of sanitized values."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clocks import Clock
from langgraph.store.base import PutOp

import memdb
from memdb import RegexSanitizer
from memdb.errors import ValidationError
from memdb.integrations import langgraph as lg
from memdb.integrations.langgraph import MemdbStore

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def db(backend: str, tmp_path: Path) -> Iterator[memdb.Database]:
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as database:
        yield database


# --- paging ------------------------------------------------------------------------------------

_WORDS = "alpha beta gamma delta epsilon zeta eta theta".split()


def _filled(path: Path) -> tuple[memdb.Database, MemdbStore]:
    """A database holding ties (60 items of one text) and varied texts, in two namespaces, one put
    a second so every database built by it ranks alike."""
    clock = Clock(NOW)
    db = memdb.open(path, clock=clock)
    store = MemdbStore(db)
    for i in range(60):
        clock.advance(seconds=1)
        store.put(("ana", "m"), f"t{i:02d}", {"content": "invoice reminder"})
    for i in range(40):
        clock.advance(seconds=1)
        words = " ".join(_WORDS[(i * 3 + j) % len(_WORDS)] for j in range(i % 4 + 1))
        store.put(("ana", "m" if i % 3 else "other"), f"v{i:02d}", {"content": f"invoice {'invoice ' * (i % 3)}{words}"})
    return db, store


@pytest.mark.parametrize(("prefix", "query", "size"), [(("ana",), "invoice", 10), (("ana", "m"), "invoice alpha", 7), (("ana",), None, 9)])
def test_query_pages_are_slices_of_one_order(tmp_path: Path, backend: str, prefix: tuple[str, ...], query: str | None, size: int) -> None:
    """Page k of size n is items [k*n, (k+1)*n) of the whole ordered list, ties included: the
    store re-sorted memdb's first max(50, 2*(offset+limit)) hits by episode id while recall breaks
    ties newest first, so pages were cut from different candidate sets (k20..k29 twice, k50..k59
    never). The full listing is read from a twin database: reads count as accesses, and both
    must see the same scores."""
    whole_db, whole = _filled(tmp_path / "whole")
    paged_db, paged = _filled(tmp_path / "paged")
    try:
        full = [(r.namespace, r.key) for r in whole.search(prefix, query=query, limit=500)]
        pages: list[tuple[tuple[str, ...], str]] = []
        for offset in range(0, len(full) + size, size):
            page = [(r.namespace, r.key) for r in paged.search(prefix, query=query, limit=size, offset=offset)]
            assert page == full[offset : offset + size], offset
            pages += page
        assert pages == full and len(set(full)) == len(full) >= 40
        if query == "invoice":  # the ties come newest first, as memdb's recall gives them
            ties = [key for _, key in full if key.startswith("t")]
            assert ties == [f"t{i:02d}" for i in reversed(range(60))]
    finally:
        whole_db.close()
        paged_db.close()


def _owners_filled(path: Path) -> tuple[memdb.Database, MemdbStore]:
    """Three owners' items for one query: ana and bob 23 ties each (one text, one time), cy 5
    varied ones; built alike every time."""
    clock = Clock(NOW)
    db = memdb.open(path, clock=clock)
    store = MemdbStore(db)
    for i in range(23):
        for owner in ("bob", "ana"):
            store.put((owner, "mem"), f"k{i:02d}", {"content": "apple pie"})
    for i in range(5):
        clock.advance(seconds=1)
        store.put(("cy", "mem"), f"c{i}", {"content": f"apple {'apple ' * i}tart"})
    return db, store


@pytest.mark.parametrize("size", [4, 5, 7])
def test_query_pages_across_owners_are_slices_of_one_order(tmp_path: Path, backend: str, size: int) -> None:
    """A store without ``owner`` searching every owner read each owner's best offset+limit per
    page and merged them by score; those reads raised items no page returned, so the next
    page's merge changed: with 23 ties each, ana's k16-k22 came twice and bob's k09-k15 never.
    Owners now interleave by rank, and a page reads only the slots before its end."""
    whole_db, whole = _owners_filled(tmp_path / "whole")
    paged_db, paged = _owners_filled(tmp_path / "paged")
    try:
        full = [(r.namespace, r.key) for r in whole.search((), query="apple", limit=500)]
        every = {((o, "mem"), f"k{i:02d}") for o in ("ana", "bob") for i in range(23)} | {(("cy", "mem"), f"c{i}") for i in range(5)}
        assert len(full) == len(set(full)) and set(full) == every
        # every owner's best, owners in name order, then every owner's second, ...; cy runs out after 5
        assert [ns[0] for ns, _ in full[:6]] == ["ana", "bob", "cy", "ana", "bob", "cy"]
        assert [ns[0] for ns, _ in full[15:19]] == ["ana", "bob", "ana", "bob"]
        pages: list[tuple[tuple[str, ...], str]] = []
        for offset in range(0, len(full) + size, size):
            page = [(r.namespace, r.key) for r in paged.search((), query="apple", limit=size, offset=offset)]
            assert page == full[offset : offset + size], offset
            pages += page
        assert pages == full
    finally:
        whole_db.close()
        paged_db.close()


# --- keys --------------------------------------------------------------------------------------

_ORDINARY = [
    (("ana", "orders"), "#12345678"),
    (("ana", "tickets"), "#20250101"),
    (("ana", "notes"), ")17318293"),
    (("ana", "build #1042"), "log"),
    (("ana", "projects (2024)"), "plan"),
]


def test_keys_whose_escapes_read_as_personal_data_are_kept(db: memdb.Database) -> None:
    """A key the sanitizer keeps as written is kept: ``#12345678`` was written ``+2312345678``,
    a phone number to memdb's key check, and refused as personal data."""
    sanitizer = RegexSanitizer()
    store = MemdbStore(db)
    for namespace, key in _ORDINARY:
        assert all(sanitizer.sanitize({"k": x})["k"] == x for x in (*namespace, key))
        store.put(namespace, key, {"content": f"about {key}"})
    for namespace, key in _ORDINARY:
        item = store.get(namespace, key)
        assert item is not None and item.value == {"content": f"about {key}"} and item.key == key
    assert {(r.namespace, r.key) for r in store.search(("ana",), limit=50)} == set(_ORDINARY)
    assert sorted(store.list_namespaces()) == sorted({ns for ns, _ in _ORDINARY})
    keys = {str(f.key) for f in db.owner("ana").facts()}
    assert "lg/orders/+2312345678" not in keys and lg.fact_key(("orders",), "#12345678", lambda _: False) in keys  # the digest
    store.put(("ana", "orders"), "#12345678", {"content": "again"})
    assert store.get(("ana", "orders"), "#12345678").value == {"content": "again"}  # type: ignore[union-attr]
    store.delete(("ana", "orders"), "#12345678")
    assert store.get(("ana", "orders"), "#12345678") is None and len(db.owner("ana").facts()) == len(_ORDINARY) - 1
    # an ordinary key keeps its readable form
    store.put(("ana", "prefs"), "theme", {"content": "dark"})
    assert db.owner("ana").fact("lg/prefs/theme").decisions["key"] == "theme"


def test_a_digest_key_holds_no_digit() -> None:
    """A hex digest read as a phone or a card about once in 800 keys, refusing a long key at
    random; written in the letters g-v it holds no number."""
    sanitizer = RegexSanitizer()
    for i in range(3000):
        key = lg.fact_key(("n" * 130,), f"k{i}")
        assert key.startswith("lg:") and len(key) == 43 and set(key[3:]) <= set("ghijklmnopqrstuv")
        assert sanitizer.sanitize({"@key": key})["@key"] == key


def test_an_item_under_the_earlier_hex_digest_is_still_read(db: memdb.Database) -> None:
    """Items past 128 characters took ``lg:`` + a hex digest before: found, rewritten and
    erased under that key (a fact's key never changes)."""
    namespace, key = ("projects", "n" * 130), "k"
    legacy = "lg:" + hashlib.sha256(json.dumps([*namespace, key]).encode()).hexdigest()[:40]
    mem = db.owner("ana")
    decisions = {"namespace": list(namespace), "key": key, "value": {"content": "old form"}, "created_at": NOW, "updated_at": NOW}
    mem.record("fact", "content: old form", key=legacy, tags=["langgraph"], decisions={**decisions, "ttl": None, "expires_at": None})
    store = MemdbStore(db)
    assert store.get(("ana", *namespace), key).value == {"content": "old form"}  # type: ignore[union-attr]
    store.put(("ana", *namespace), key, {"content": "new value"})
    assert [str(f.key) for f in mem.facts()] == [legacy] and store.get(("ana", *namespace), key).value == {"content": "new value"}  # type: ignore[union-attr]
    store.delete(("ana", *namespace), key)
    assert mem.facts() == []


def test_a_get_or_put_is_a_keyed_lookup(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """``get("item-1")`` read every item whose fact key starts with it (item-10 ... item-1999,
    and a child namespace's items): 30 ms at 5,000 items, and a put did it under the write lock.
    Without any listing of facts, get, put and delete still work."""
    store = MemdbStore(db)
    store.batch([PutOp(("ana", "m"), f"item-{i}", {"content": f"note {i}"}) for i in range(30)])
    store.put(("ana", "m", "item-1"), "child", {"content": "a child namespace's item"})

    def no_listing(*_: object) -> None:
        raise AssertionError("a get or put listed facts")

    monkeypatch.setattr(memdb.Memory, "facts", no_listing)
    assert store.get(("ana", "m"), "item-1").value == {"content": "note 1"}  # type: ignore[union-attr]
    assert store.get(("ana", "m"), "item-") is None and store.get(("ana", "m"), "") is None
    store.put(("ana", "m"), "item-1", {"content": "changed"})
    store.put(("ana", "m"), "", {"content": "empty key"})
    store.delete(("ana", "m"), "item-2")
    assert store.get(("ana", "m"), "item-1").value == {"content": "changed"}  # type: ignore[union-attr]
    assert store.get(("ana", "m"), "").value == {"content": "empty key"}  # type: ignore[union-attr]
    assert store.get(("ana", "m"), "item-2") is None
    assert store.get(("ana", "m", "item-1"), "child") is not None


# --- items changed through memdb ---------------------------------------------------------------


def test_an_item_changed_through_memdb_reads_as_memdb_holds_it(db: memdb.Database) -> None:
    """memdb's own corrections of a store item (``supersede``, ``record("fact", ...)`` on its key;
    the MCP tools make the same calls) made ``get`` raise a bare KeyError('value') and search and
    listings drop the item, or left the store saying what memdb had corrected."""
    store, mem = MemdbStore(db), db.owner("ana")
    store.put(("ana", "prefs"), "theme", {"content": "Prefers dark mode"})
    created = store.get(("ana", "prefs"), "theme").created_at  # type: ignore[union-attr]

    # decisions replaced, the text kept: the value is the one the store wrote
    mem.supersede(mem.fact("lg/prefs/theme").id, reason="tidy", decisions={"note": "cleaned"})
    item = store.get(("ana", "prefs"), "theme")
    assert item is not None and item.value == {"content": "Prefers dark mode"} and item.created_at == created
    assert [r.key for r in store.search(("ana",))] == ["theme"] and store.list_namespaces() == [("ana", "prefs")]

    # the text corrected: memdb's text is the value
    mem.supersede(mem.fact("lg/prefs/theme").id, reason="the user corrected it", summary="Prefers light mode")
    item = store.get(("ana", "prefs"), "theme")
    assert item is not None and item.value == {"content": "Prefers light mode"} and item.created_at == created
    assert [(r.key, r.value) for r in store.search(("ana",), query="light")] == [("theme", {"content": "Prefers light mode"})]
    assert [r.value for r in store.search(("ana", "prefs"))] == [{"content": "Prefers light mode"}]

    # recorded again as a plain fact
    mem.record("fact", "Prefers blue", key="lg/prefs/theme")
    item = store.get(("ana", "prefs"), "theme")
    assert item is not None and item.value == {"content": "Prefers blue"} and item.namespace == ("ana", "prefs")
    assert store.list_namespaces() == [("ana", "prefs")]

    # a put writes a dict again, over any of them
    store.put(("ana", "prefs"), "theme", {"content": "Prefers green", "since": 2026})
    assert store.get(("ana", "prefs"), "theme").value == {"content": "Prefers green", "since": 2026}  # type: ignore[union-attr]

    # a fact under a store key the store never wrote: a get names it, a listing knows no namespace for it
    mem.record("fact", "Set by hand", key="lg/prefs/font")
    assert store.get(("ana", "prefs"), "font").value == {"content": "Set by hand"}  # type: ignore[union-attr]
    assert [r.key for r in store.search(("ana",))] == ["theme"]


@pytest.mark.parametrize("words", [1, 200])
def test_an_item_corrected_through_memdb_keeps_no_copy_of_its_old_value(db: memdb.Database, words: int) -> None:
    """``supersede(id, summary=...)`` of an item (MCP ``supersede_episode`` too) read as the new
    text, but the new version kept the old value whole in its decisions, and a long item its old
    text in its content, where a query by the old words still found the corrected item."""
    store, mem = MemdbStore(db), db.owner("ana")
    old = "Prefers dark mode" + " and so on" * words
    store.put(("ana", "prefs"), "theme", {"content": old, "since": 2024})
    fixed = mem.supersede(mem.fact("lg/prefs/theme").id, reason="the user corrected it", summary="Prefers light mode")
    assert "dark" not in " ".join([fixed.summary, fixed.content, repr(fixed.decisions)])
    assert store.get(("ana", "prefs"), "theme").value == {"content": "Prefers light mode"}  # type: ignore[union-attr]
    assert store.search(("ana",), query="dark") == [] and [r.key for r in store.search(("ana",), query="light")] == ["theme"]
    assert store.list_namespaces() == [("ana", "prefs")]


def test_an_item_recorded_again_through_memdb_is_found_by_a_query(db: memdb.Database) -> None:
    """``record("fact", ..., key="lg/...")`` (what MCP ``record_fact`` does) writes a version
    without the store's ``langgraph`` tag, and queries asked recall for that tag: get and
    listings showed the new text, ``search(query=...)`` never found it."""
    store, mem = MemdbStore(db), db.owner("ana")
    store.put(("ana", "prefs"), "theme", {"content": "Prefers dark mode"})
    mem.record("fact", "Prefers blue mode", key="lg/prefs/theme")
    mem.record("fact", "Blue is the colour of the sky", key="colour")  # the owner's own fact: not an item
    assert mem.fact("lg/prefs/theme").tags == ()
    for query in ("blue", "mode"):
        assert [(r.key, r.value) for r in store.search(("ana",), query=query)] == [("theme", {"content": "Prefers blue mode"})]
    assert [r.key for r in MemdbStore(db).search((), query="blue")] == ["theme"]
    assert store.search(("ana",), query="dark") == []


def test_updated_at_of_a_change_through_memdb_is_its_time(tmp_path: Path, backend: str) -> None:
    """``supersede`` keeps the episode's ``ts`` (when it happened): an item corrected an hour
    after its put read ``updated_at`` as the put's time, and listed as not changed since."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        store, mem = MemdbStore(db), db.owner("ana")
        store.put(("ana", "prefs"), "theme", {"content": "Prefers dark mode"})
        clock.advance(minutes=30)
        store.put(("ana", "prefs"), "font", {"content": "Prefers serif"})
        clock.advance(minutes=30)
        mem.supersede(mem.fact("lg/prefs/theme").id, reason="the user corrected it", summary="Prefers light mode")
        item = store.get(("ana", "prefs"), "theme")
        assert item is not None and item.updated_at == NOW + dt.timedelta(hours=1) and item.created_at == NOW
        assert [r.key for r in store.search(("ana",))] == ["theme", "font"]  # most recently updated first
        clock.advance(minutes=5)
        mem.supersede(mem.fact("lg/prefs/theme").id, reason="tidy", decisions={"note": "cleaned"})
        assert store.get(("ana", "prefs"), "theme").updated_at == NOW + dt.timedelta(minutes=65)  # type: ignore[union-attr]


def test_an_item_changed_through_memdb_keeps_its_expiry(tmp_path: Path, backend: str) -> None:
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        store, mem = MemdbStore(db), db.owner("ana")
        store.put(("ana", "scratch"), "otp", {"content": "code tangerine"}, ttl=10)
        mem.supersede(mem.fact("lg/scratch/otp").id, reason="tidy", decisions={})
        assert store.get(("ana", "scratch"), "otp", refresh_ttl=False) is not None
        clock.advance(minutes=11)
        assert store.get(("ana", "scratch"), "otp") is None and mem.facts() == []


# --- ttl sweeper -------------------------------------------------------------------------------


def _until(condition: object, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_the_ttl_sweeper_takes_expired_items_out_of_memdbs_answers(tmp_path: Path, backend: str) -> None:
    """An expired item is never returned by the store, but it stays a fact that memdb's ask,
    recall, MCP tools and export read until it is erased; ``TTLConfig(sweep_interval_minutes=...)``
    was accepted and did nothing. The sweeper erases it within the interval."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        store, mem = MemdbStore(db), db.owner("ana")
        store.put(("ana", "scratch"), "otp", {"content": "staging cluster login code tangerine"}, ttl=10)
        store.put(("ana", "prefs"), "theme", {"content": "staging cluster theme dark"})
        clock.advance(minutes=30)
        assert "tangerine" in str(mem.recall(text="staging cluster").memories)  # not swept yet
        future = store.start_ttl_sweeper(sweep_interval_minutes=0.0005)
        assert store.start_ttl_sweeper() is future  # one sweeper at a time
        assert _until(lambda: "tangerine" not in str(mem.recall(text="staging cluster").memories))
        assert not any("tangerine" in str(row) for row in mem.export())
        assert store.get(("ana", "prefs"), "theme") is not None  # no ttl: kept
        assert store.stop_ttl_sweeper(timeout=10) and future.result(timeout=10) is None


def test_a_ttl_config_with_a_sweep_interval_starts_the_sweeper(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        store = MemdbStore(db, ttl={"default_ttl": 10, "sweep_interval_minutes": 60})
        running = store.start_ttl_sweeper()
        assert not running.done()
        assert store.stop_ttl_sweeper(timeout=10) and running.done()
        assert MemdbStore(db, ttl={"default_ttl": 10}).stop_ttl_sweeper() is True  # none started
        # closing the database ends a sweeper that was still running
        future = MemdbStore(db).start_ttl_sweeper(sweep_interval_minutes=0.0005)
    assert future.result(timeout=20) is None


def test_closing_the_database_stops_the_sweeper_at_once(tmp_path: Path, backend: str) -> None:
    """Nothing told the sweeper the database closed: its thread lived, and its future stayed
    pending, until the next interval (up to 5 minutes by default)."""
    db = memdb.open(tmp_path / "db", clock=Clock(NOW))
    store = MemdbStore(db, ttl={"default_ttl": 10, "sweep_interval_minutes": 60})
    future = store.start_ttl_sweeper()
    assert not future.done()
    db.close()
    assert future.result(timeout=5) is None
    assert _until(lambda: not any(t.name == "memdb-ttl-sweeper" for t in threading.enumerate()), 5)
    assert db.close_hooks == []  # the stopped sweeper left nothing for the database to call
    assert store.stop_ttl_sweeper(timeout=1)


def test_stopping_the_sweeper_inside_a_transaction_is_refused(tmp_path: Path, backend: str) -> None:
    """A sweep waiting for the write lock the caller held made ``stop_ttl_sweeper()`` (no
    timeout) inside ``db.transaction()`` wait forever; it is refused there, and works after."""
    with memdb.open(tmp_path / "db", clock=Clock(NOW)) as db:
        store = MemdbStore(db)
        future = store.start_ttl_sweeper(sweep_interval_minutes=0.0005)
        with db.transaction():
            store.put(("ana", "m"), "k", {"v": "y"})
            time.sleep(0.1)  # the sweeper wakes and waits for the write lock
            with pytest.raises(ValidationError, match=r"inside db\.transaction"):
                store.stop_ttl_sweeper()
        assert not future.done()
        assert store.stop_ttl_sweeper(timeout=10) and future.result(timeout=10) is None
        with db.transaction():
            assert store.stop_ttl_sweeper() is True  # none runs: nothing to wait for


# --- what the app is told ----------------------------------------------------------------------


def test_a_sanitized_put_is_told_without_the_value(db: memdb.Database, caplog: pytest.LogCaptureFixture) -> None:
    """``put`` returned None and said nothing when memdb replaced personal data in the value; a
    WARNING names the item, how many places changed and the kinds of data, never a value nor a
    path: paths were the value's own keys, and a map keyed by person logged the person."""
    caplog.set_level(logging.WARNING, logger="memdb.integrations.langgraph")
    store = MemdbStore(db)
    value = {
        "content": "Call +1 415 555 2671",
        "password": "hunter2",
        "contacts": {"bob@example.com": "friend"},
        "emails": {"Jane Doe (clinic patient)": "jane@example.com"},
        "order": 4111111111111111,
    }
    store.put(("ana", "m"), "contact", value)
    (record,) = [r for r in caplog.records if r.name == "memdb.integrations.langgraph"]
    message = record.getMessage()
    assert record.levelno == logging.WARNING and db.owner("ana").fact("lg/m/contact").id in message
    assert "5 place(s)" in message and all(kind in message for kind in ("EMAIL", "PHONE", "SECRET", "CARD"))
    assert not any(raw in message for raw in ("415", "hunter2", "bob@", "4111", "Jane", "clinic", "jane@"))
    assert not any(key in message for key in ("content", "password", "contacts", "emails", "order", "<EMAIL_1>"))
    caplog.clear()
    store.put(("ana", "m"), "plain", {"content": "nothing personal", "n": 3})
    assert not [r for r in caplog.records if r.name == "memdb.integrations.langgraph"]


# --- retention ---------------------------------------------------------------------------------


def test_retention_erases_items_not_put_within_it(tmp_path: Path, backend: str) -> None:
    """What docs/langgraph.md says: ``retention_days`` counts from an item's latest put; reads
    do not keep it (a read is not a write), a put does."""
    clock = Clock(NOW)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.configure(retention_days=30)
        store = MemdbStore(db)
        store.put(("ana", "prefs"), "read", {"content": "read daily"})
        store.put(("ana", "prefs"), "rewritten", {"content": "put again monthly"})
        for day in range(1, 46):
            clock.advance(days=1)
            store.get(("ana", "prefs"), "read")
            if day % 20 == 0:
                store.put(("ana", "prefs"), "rewritten", {"content": "put again monthly"})
            db.maintain()
        assert store.get(("ana", "prefs"), "read") is None
        assert store.get(("ana", "prefs"), "rewritten") is not None
