"""``db.check()`` in bounded memory: each kind of damage, in an owner whose text index spans
several column chunks and whose index sums share buckets between damaged and sound entries, is
reported exactly as a whole-owner comparison (the check as it was, kept below as the oracle)
reports it."""

from __future__ import annotations

import datetime as dt
import struct
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from text_index_oracle import text_index_problems

import memdb
from benchmarks import agent_data
from memdb.memory import check as check_module
from memdb.memory.ids import episode_day, ts_micros
from memdb.memory.layout import (
    INDEXES,
    SUPERSEDED,
    Layout,
    entry_of,
    header_of,
    index_code,
    index_entries,
    predecessor_of,
    successor_of,
    terms_of,
)
from memdb.memory.postings import CHUNK_DOCS, Doc, block_header, decode_block, encode_block
from memdb.memory.settings import FACT_KIND

OWNER = "team"
EPISODES = 2_300  # three column chunks of 1,024 documents, and lists of many blocks


class _RolledBack(Exception):
    pass


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[memdb.Database]:
    path: Path = tmp_path_factory.mktemp("check") / "db"
    database = memdb.open(path, clock=Clock(agent_data.END + dt.timedelta(minutes=1)), sync=False)
    mem = database.owner(OWNER)
    for batch in agent_data.batches(EPISODES, 1_000):
        mem.import_episodes(batch, source="test")
    ids = [e.id for e in mem.episodes()]
    mem.archive(ids[10])
    mem.archive(ids[1_500])
    mem.supersede(ids[20], reason="it was wrong", summary="what happened, corrected")
    mem.record("fact", "dark", key="team/ui.theme")
    database.owner("other").record("debug", "deploy broke", outcome="failure", tags=["x"])
    assert database.check().problems == []
    try:
        yield database
    finally:
        database.close()


def _middle(db: memdb.Database) -> tuple[str, int, dict[str, Any]]:
    """A hot episode of the second column chunk, with tags and an outcome: (id, doc, record)."""
    lay = db.episodes.layout
    for subs, doc in lay.text.numbers.items((OWNER,)):
        eid = str(subs[1])
        record = lay.record_of(OWNER, eid)
        if CHUNK_DOCS + 100 <= doc < 2 * CHUNK_DOCS and record and record.get("tags") and record.get("outcome"):
            return eid, int(doc), record
    raise AssertionError("no episode in the second chunk")


def _archived(db: memdb.Database) -> str:
    return next(str(s[1]) for s, st in db.episodes.layout.states.items((OWNER,)) if st.get("status") == "archived")


def _rewrite_block(db: memdb.Database, name: str, term: str, doc: int, change: Callable[[list[int], list[int]], None]) -> None:
    g = db.globals[name]
    for subs, block in g.items((OWNER, term)):
        docs, tfs = decode_block(block)
        if doc in docs:
            change(docs, tfs)
            g.set(subs, encode_block(docs, tfs, block_header(block)[2]))
            return
    raise AssertionError(f"{term}: no block holds {doc}")


def _tf_plus_one(docs: list[int], tfs: list[int], doc: int) -> None:
    tfs[docs.index(doc)] += 1


def _without(docs: list[int], tfs: list[int], doc: int) -> None:
    i = docs.index(doc)
    del docs[i], tfs[i]


def _column_dl(db: memdb.Database, doc: int) -> None:
    g = db.globals["EPC"]
    chunk = bytearray(g[(OWNER, doc // CHUNK_DOCS)])
    off = doc % CHUNK_DOCS * 20 + 12
    struct.pack_into("<I", chunk, off, struct.unpack_from("<I", chunk, off)[0] + 1)
    g.set((OWNER, doc // CHUNK_DOCS), bytes(chunk))


def _damages(db: memdb.Database) -> list[tuple[str, Callable[[], Any], str]]:
    """(name, damage, a words of the problem it must cause)."""
    g = db.globals
    eid, doc, record = _middle(db)
    day, t = episode_day(eid), ts_micros(record["ts"])
    term = sorted(terms_of(record)[0])[0]
    tag = record["tags"][0]
    state = g["EPST"][(OWNER, eid)]
    archived = _archived(db)
    archived_state = g["EPST"][(OWNER, archived)]
    superseded = next(str(s[1]) for s, st in g["EPST"].items((OWNER,)) if st.get("status") == SUPERSEDED)
    old_state = g["EPST"][(OWNER, superseded)]
    fake = eid[:-6] + "ffffff"
    return [
        ("missing index entry", lambda: g["EPT"].kill((OWNER, t, eid)), "missing index entry"),
        ("extra index entry", lambda: g["EPG"].set((OWNER, "zz-ghost", t, fake), 0), "index entry without a record"),
        ("wrong entry value", lambda: g["EPK"].set(next(iter(g["EPK"].keys((OWNER, record["kind"])))), 7), "value 7, expected"),
        ("wrong posting tf", lambda: _rewrite_block(db, "EPX", term, doc, lambda d, f: _tf_plus_one(d, f, doc)), "expected"),
        ("posting missing", lambda: _rewrite_block(db, "EPX", term, doc, lambda d, f: _without(d, f, doc)), "tf None"),
        ("wrong df counter", lambda: g["EPDF"].increment((OWNER, term), 1), f"^EPDF({OWNER!r},{term!r})"),
        ("column value", lambda: _column_dl(db, doc), f"record of document {doc} differs"),
        ("tag-list entry", lambda: _rewrite_block(db, "EPXT", tag, doc, lambda d, f: _without(d, f, doc)), "EPXT"),
        ("archived header", lambda: g["EPST"].set((OWNER, archived), {**archived_state, "session": "sess-elsewhere"}), "EPSA"),
        ("hot header", lambda: g["EPST"].set((OWNER, eid), {**state, "kind": "review"}), "header differs"),
        ("fact key", lambda: g["EPFK"].set((OWNER, "team/ui.theme"), eid), "but the current version is"),
        ("second current fact", lambda: g["MEM"].set((OWNER, day, eid), {**record, "kind": FACT_KIND, "key": "team/ui.theme"}), "second"),
        ("document number", lambda: g["EPDN"].kill((OWNER, eid)), "without a text document number"),
        ("misfiled record", lambda: (g["MEM"].kill((OWNER, day, eid)), g["MEM"].set((OWNER, "2001-01-01", eid), record)), "wrong day"),
        ("record without state", lambda: g["MEM"].set((OWNER, day, fake), {**record, "id": fake}), "record without state"),
        ("state without record", lambda: g["MEM"].kill((OWNER, day, eid)), "state without a record"),
        ("cold record", lambda: g["COLD"].kill((OWNER, archived)), "without a cold record"),
        ("version link", lambda: g["EPST"].set((OWNER, superseded), {**old_state, "superseded_by": eid}), "does not supersede it"),
        ("next_doc", lambda: g["EPN"].set((OWNER, "next_doc"), 5), "next_doc"),
        ("level chunk", lambda: g["EPL"].set((OWNER, 40), b"\x00"), "levels of a chunk that has no records"),
        ("count", lambda: g["EPN"].increment((OWNER, "episodes"), 1), "'episodes'"),
    ]


NAMES = [  # the names of _damages, each a test
    "missing index entry",
    "extra index entry",
    "wrong entry value",
    "wrong posting tf",
    "posting missing",
    "wrong df counter",
    "column value",
    "tag-list entry",
    "archived header",
    "hot header",
    "fact key",
    "second current fact",
    "document number",
    "misfiled record",
    "record without state",
    "state without record",
    "cold record",
    "version link",
    "next_doc",
    "level chunk",
    "count",
]


@pytest.mark.slow
@pytest.mark.parametrize("buckets", [7, check_module.BUCKETS])
@pytest.mark.parametrize("name", NAMES)
def test_check_reports_each_damage_as_the_whole_owner_comparison(
    db: memdb.Database, monkeypatch: pytest.MonkeyPatch, name: str, buckets: int
) -> None:
    """With seven buckets the damaged entries share buckets with sound ones, and the other
    buckets are left out of the second pass; with the default, they are nearly alone."""
    monkeypatch.setattr(check_module, "BUCKETS", buckets)
    damage, words = next((d, w) for n, d, w in _damages(db) if n == name)
    with pytest.raises(_RolledBack), db.transaction():
        damage()
        problems = check_module.check(db.episodes).problems
        assert any(words in p for p in problems), (words, problems)
        assert sorted(problems) == sorted(_whole_owner_check(db.episodes)), problems
        raise _RolledBack
    assert db.check().problems == []


def test_a_damaged_document_number_or_next_doc_costs_no_memory(db: memdb.Database) -> None:
    """Per-document arrays grow with the numbers an owner has, not with a number read: a next_doc
    of 2**40 and a document number of 2**29 are reported as the whole-owner comparison does."""
    eid, _, _ = _middle(db)
    with pytest.raises(_RolledBack), db.transaction():
        db.globals["EPN"].set((OWNER, "next_doc"), 1 << 40)
        db.globals["EPDN"].set((OWNER, eid), (1 << 29) + 5)
        problems = check_module.check(db.episodes).problems
        assert any(f"no live record of document {(1 << 29) + 5}" in p for p in problems), problems
        assert sorted(problems) == sorted(_whole_owner_check(db.episodes))
        raise _RolledBack


def test_a_subscript_of_another_type_is_damage(db: memdb.Database) -> None:
    """A tag index entry whose tag is stored as bytes, or an id as bytes: Python hashes ASCII
    str and bytes alike, so the hash sums missed what the whole-owner comparison reported."""
    by_tag = db.episodes.layout.by_tag
    (owner, tag, ts, eid), value = next(iter(by_tag.items((OWNER,))))
    for damaged in ((owner, str(tag).encode(), ts, eid), (owner, tag, ts, str(eid).encode())):
        with pytest.raises(_RolledBack), db.transaction():
            by_tag.kill((owner, tag, ts, eid))
            by_tag.set(damaged, value)
            problems = check_module.check(db.episodes).problems
            assert problems and sorted(problems) == sorted(_whole_owner_check(db.episodes)), problems
            raise _RolledBack
    assert db.check().problems == []


def test_check_of_a_sound_database_is_empty_with_any_buckets(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    for buckets in (1, 7, 4096):
        monkeypatch.setattr(check_module, "BUCKETS", buckets)
        report = db.check()
        assert report.problems == [] and report.episodes == EPISODES + 3 == _episodes(db)


def test_check_holds_a_small_part_of_what_the_whole_owner_comparison_held(db: memdb.Database) -> None:
    """Peak Python memory of check() (tracemalloc), against the whole-owner comparison's in the
    same run: 12 KB an episode then (a scale probe: 1,262 MB more at 105,201 episodes)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        assert check_module.check(db.episodes).problems == []
        bounded = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        assert _whole_owner_check(db.episodes) == []
        whole = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert bounded * 10 < whole, (bounded, whole)


def _episodes(db: memdb.Database) -> int:
    return sum(1 for _ in db.globals["EPST"].items())


# --- the oracle: the whole-owner check as it was before it ran in bounded memory ---------------


def _whole_owner_check(layer: Any) -> list[str]:
    problems: list[str] = []
    lay = layer.layout
    with layer.space.snapshot():
        owners = set(layer.owners())
        indexes = (*(lay.index(name) for name in INDEXES), lay.text.blocks, lay.text.numbers, lay.text.columns, lay.text.levels)
        kept = (lay.mem, lay.states, lay.doc_freq, lay.archived, lay.archived_sessions, lay.cold, lay.superseded, lay.fact_keys)
        for g in (*kept, *indexes):
            owners.update(str(o) for o in g.children())
        for owner in sorted(owners):
            _whole_owner(lay, owner, problems)
    return problems


def _whole_owner(lay: Layout, owner: str, out: list[str]) -> None:
    expected: dict[str, dict[tuple[Any, ...], Any]] = {name: {} for name in (*INDEXES, "EPAR", "EPSA", "EPSU")}
    expected_keys: dict[tuple[Any, ...], Any] = {}
    links: dict[str, tuple[str | None, str | None]] = {}
    expected_docs: dict[str, Doc] = {}
    docs = terms = count = archived = 0
    records: dict[str, tuple[tuple[Any, ...], Any]] = {}
    for subs, rec in lay.mem.items((owner,)):
        if len(subs) == 3 and isinstance(rec, dict):
            records[str(subs[2])] = (subs, rec)
        else:
            out.append(f"^MEM{subs!r}: not an episode record (^MEM holds (owner, day, id) = record)")
    cold = {str(subs[1]) for subs, _ in lay.cold.items((owner,)) if len(subs) == 2}
    numbers = {str(subs[1]): doc for subs, doc in lay.text.numbers.items((owner,)) if len(subs) == 2}
    for subs, state in lay.states.items((owner,)):
        if len(subs) != 2 or not isinstance(state, dict):
            out.append(f"^EPST{subs!r}: not an episode state (^EPST holds (owner, id) = state)")
            continue
        eid = str(subs[1])
        count += 1
        found = records.pop(eid, None)
        links[eid] = (predecessor_of(state), successor_of(state))
        if state.get("status") == "archived":
            archived += 1
            if found is not None:
                out.append(f"^MEM({owner!r},...,{eid!r}): archived episode still has a hot record")
            if eid not in cold:
                out.append(f"^COLD({owner!r},{eid!r}): archived episode without a cold record")
            cold.discard(eid)
            for gname, subs_list in index_entries(owner, eid, state, state).items():
                expected[gname].update(dict.fromkeys(subs_list, ""))
            continue
        if eid in cold:
            out.append(f"^COLD({owner!r},{eid!r}): cold record of an episode that is not archived")
            cold.discard(eid)
        if found is None:
            out.append(f"^EPST({owner!r},{eid!r}): state without a record")
            continue
        (_, day, _), value = found
        header = header_of(value)
        if {k: state.get(k) for k in header} != header:
            out.append(f"^EPST({owner!r},{eid!r}): header differs from the record")
        if episode_day(eid) != day:
            out.append(f"^MEM({owner!r},{day!r},{eid!r}): id is filed under the wrong day")
        if state.get("status") == SUPERSEDED:
            if successor_of(state) is None:
                out.append(f"^EPST({owner!r},{eid!r}): superseded without a successor")
            for gname, subs_list in index_entries(owner, eid, value, state).items():
                expected[gname].update(dict.fromkeys(subs_list, ""))
            continue
        if value.get("kind") == FACT_KIND:
            if (owner, value.get("key")) in expected_keys:
                out.append(f"^MEM({owner!r},...,{eid!r}): a second current version of fact {value.get('key')!r}")
            expected_keys[(owner, value.get("key"))] = eid
        code = index_code(state["relevance"], value.get("outcome"))
        doc = numbers.get(eid)
        entry = entry_of(doc, value.get("outcome")) if doc is not None else None
        for gname, subs_list in index_entries(owner, eid, value, state).items():
            expected[gname].update(dict.fromkeys(subs_list, entry))
        tf, dl = terms_of(value)
        expected_docs[eid] = Doc(eid, ts_micros(value["ts"]), code, tf, dl, tuple(value.get("tags") or ()))
        if dl:
            docs += 1
            terms += dl
    for eid, (subs, _) in records.items():
        out.append(f"^MEM{subs!r}: record without state ({eid})")
    for eid in cold:
        out.append(f"^COLD({owner!r},{eid!r}): cold record without state")
    for eid, (older, newer) in links.items():
        if older is not None and links.get(older, (None, None))[1] != eid:
            out.append(f"^EPST({owner!r},{eid!r}): supersedes {older!r}, which is not superseded by it")
        if newer is not None and links.get(newer, (None, None))[0] != eid:
            out.append(f"^EPST({owner!r},{eid!r}): superseded by {newer!r}, which does not supersede it")
    actual_keys = dict(lay.fact_keys.items((owner,)))
    for key in expected_keys.keys() | actual_keys.keys():
        if expected_keys.get(key) != actual_keys.get(key):
            out.append(f"^EPFK{key!r}: {actual_keys.get(key)!r}, but the current version is {expected_keys.get(key)!r}")
    for gname, entries in expected.items():
        actual = dict(lay.index(gname).items((owner,)))
        for missing in sorted(entries.keys() - actual.keys(), key=repr):
            out.append(f"^{gname}{missing!r}: missing index entry")
        for extra in sorted(actual.keys() - entries.keys(), key=repr):
            out.append(f"^{gname}{extra!r}: index entry without a record")
        for subs in sorted(entries.keys() & actual.keys(), key=repr):
            if entries[subs] != actual[subs]:
                out.append(f"^{gname}{subs!r}: value {actual[subs]!r}, expected {entries[subs]!r}")
    want_df = Counter(term for d in expected_docs.values() for term in d.tf)
    have_df = {str(s[1]): v for s, v in lay.doc_freq.items((owner,)) if len(s) == 2}
    for term in want_df.keys() | have_df.keys():
        if want_df.get(term) != have_df.get(term):
            out.append(f"^EPDF({owner!r},{term!r}): {have_df.get(term)} but {want_df.get(term, 0)} postings")
    out.extend(text_index_problems(lay.text, owner, expected_docs))
    for name, want in (("docs", docs), ("terms", terms), ("episodes", count), ("archived", archived)):
        have = lay.stats.get((owner, name), 0)
        if have != want:
            out.append(f"^EPN({owner!r},{name!r}): {have} but the records say {want}")
