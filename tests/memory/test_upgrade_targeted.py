"""An upgrade whose steps need no text rebuild (layout 26 to 27) rewrites only what they change:
headers whose kept relevance differs, their band entries and the levels of the text columns. It
ends where the full rebuild ends, and it writes nothing else (memdb/memory/migrate.py)."""

from __future__ import annotations

import datetime as dt
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.engine import codec
from memdb.memory import migrate
from memdb.memory.ids import ts_micros
from memdb.memory.layout import INDEXES, LAYOUT, LEVELS_PER_POINT, OUTCOME_OF_CODE, SUPERSEDED, entry_value
from memdb.memory.relevance import band_of, kept_relevance, relevance_level

pytestmark = pytest.mark.usefixtures("backend")  # the upgrade runs on LMDB and PostgreSQL alike

UTC = dt.UTC
T0 = dt.datetime(2025, 7, 1, 9, 0, tzinfo=UTC)
OWNERS = ("ana", "bo", "cy")
# What a layout-26 header could hold, each with its level taken as layout 26 took it (no tolerance):
# None leaves the header as layout 27 wrote it; 2.32 is a kept value whose old level (57) is wrong;
# 2.3456789 and 7.123456789 are kept lower in their band; a hair under a whole number is kept at
# it, in the next band (0.99..., 3.99..., 9.99...); 6.0 is kept and its level right.
OLD_RELEVANCE = (None, 2.32, 2.3456789, 3.9999999999, 6.0, 7.123456789, 0.9999999999, 9.9999999999)
# the globals whose keys or values hold document numbers, which a rebuild hands out again, and
# the stamps, random at each write of a chunk: compared through ``_text_view`` and not as bytes
NUMBERED = ("EPDN", "EPX", "EPXT", "EPC", "EPCV", "EPL", "EPLV")
# what the targeted path may write: headers, band entries, level chunks and their stamps, told entries, the layout
TARGETED = ("EPST", "EPB", "EPL", "EPLV", "EPTD", "META")


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


def _at_layout_26(db: memdb.Database) -> tuple[int, int]:
    """Record episodes of three owners (archived and superseded ones among them) and store their
    relevance as layout 26 did (``OLD_RELEVANCE``): the header, the band entry and the level.
    Returns how many headers the upgrade should rewrite, and how many episodes (header or level)."""
    lay = db.episodes.layout
    headers = episodes = 0
    for o, owner in enumerate(OWNERS):
        mem = db.owner(owner)
        ids = [
            mem.record(
                ("debug", "sprint", "review")[i % 3],
                f"deploy {i} of service {i % 5} held the lock on shard {i % 7}",
                outcome=("failure", "success", "partial")[i % 3],
                tags=[["project-x"], ["billing", "urgent"], []][i % 3],
                session=f"s{i % 4}",
                lesson=f"pin shard {i % 7} before a deploy",
                ts=T0 - dt.timedelta(hours=5 * i + o),
            ).id
            for i in range(40 + 7 * o)
        ]
        for eid in ids[3::9]:
            mem.archive(eid)
        for eid in ids[5::11]:
            mem.supersede(eid, reason="the shard was wrong", summary="deploy held the lock on another shard")
        db.flush()
        with db.transaction():
            for i, (subs, header) in enumerate(list(lay.states.items((owner,)))):
                old = OLD_RELEVANCE[i % len(OLD_RELEVANCE)]
                if old is None:
                    continue
                eid, hot = str(subs[1]), header.get("status") not in ("archived", SUPERSEDED)
                level = int(old * LEVELS_PER_POINT)  # as layout 26 took it, without tolerance
                if hot:  # its band entry where layout 26 filed it, and its level
                    t, now = ts_micros(header["ts"]), band_of(header["relevance"])
                    raw = lay.by_band.raw_get(lay.by_band.key((owner, now, t, eid)))
                    assert raw is not None
                    lay.by_band.kill((owner, now, t, eid))
                    db.globals.apply((), packed=[(lay.by_band.key((owner, band_of(old), t, eid)), raw)])
                    lay.text.set_levels(owner, [(eid, level)])
                lay.states.set(subs, {**header, "relevance": old})
                kept = kept_relevance(old)
                headers += kept != old
                episodes += kept != old or (hot and relevance_level(kept) != level)
    db.globals["META"].set(("layout",), 26)
    return headers, episodes


def _raw(db: memdb.Database) -> dict[str, dict[bytes, bytes]]:
    """Every key of every global, as stored."""
    return {name: dict(db.globals[name].raw_range()) for name in db.globals.names()}


def _copy(source: memdb.Database, target: memdb.Database) -> None:
    """Make ``target`` hold exactly ``source``'s keys and values (a copy that works on both backends)."""
    with target.transaction():
        for name in target.globals.names():
            target.globals[name].kill()
        target.globals.apply((), packed=[kv for g in _raw(source).values() for kv in g.items()])


def _text_view(db: memdb.Database) -> dict[str, Any]:
    """Each owner's text index by episode id instead of document number: the ids numbered, each
    live column (time, id, length, level and outcome), each term's and tag's (id, tf) postings."""
    text, view = db.episodes.layout.text, {}
    for owner in OWNERS:
        eid_of = {doc: eid for eid, doc in text.stored_numbers(owner)}
        problems: list[str] = []
        view[owner] = {
            "ids": sorted(eid_of.values()),
            "columns": {eid_of[doc]: col for doc, col in text.stored_columns(owner, problems)},
            "postings": sorted((t, eid_of[d], tf) for t, docs, tfs in text.stored_postings(owner) for d, tf in zip(docs, tfs, strict=True)),
            "tags": sorted((t, eid_of[d]) for t, docs, _ in text.stored_postings(owner, tags=True) for d in docs),
        }
        assert problems == []
    return view


def _view(db: memdb.Database) -> dict[str, Any]:
    """Every global key by key, as bytes but where a rebuild legitimately differs: an index entry
    holding its own episode's document number (``entry_value``) is shown as that and its outcome,
    the text index as ``_text_view``, and the next document number (a rebuild numbers only the hot
    episodes, from 0) is left out."""
    text = db.episodes.layout.text
    doc_of = {(owner, eid): doc for owner in OWNERS for eid, doc in text.stored_numbers(owner)}
    view: dict[str, Any] = {"text": _text_view(db)}
    for name, items in _raw(db).items():
        if name in NUMBERED:
            continue
        n = len(db.globals[name].key())
        for key, raw in items.items():
            subs = codec.decode(key, n)
            if name == "EPN" and subs[1:] == ("next_doc",):
                continue
            shown: Any = raw
            doc = doc_of.get((subs[0], subs[-1])) if name in INDEXES else None  # an entry's last subscript is its id
            if doc is not None:
                shown = next((("its document", o) for o in OUTCOME_OF_CODE if raw == entry_value(doc, o)), raw)
            view[name, key] = shown
    return view


def _upgraded(db: memdb.Database, caplog: pytest.LogCaptureFixture) -> tuple[int, tuple[int, ...]]:
    """Upgrade ``db`` in batches of 7 (several per owner): what it returns and its last progress line."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memdb.memory.migrate"):
        rewritten = migrate.upgrade(db.episodes, batch=7)
    lines = [r.getMessage() for r in caplog.records if r.name == "memdb.memory.migrate"]
    last = [m for m in (re.match(r"layout upgrade: (\d+) of (\d+) episodes done, (\d+) rewritten", line) for line in lines) if m][-1]
    return rewritten, tuple(map(int, last.groups()))


def test_an_upgrade_from_26_rewrites_only_what_changed_and_ends_where_a_rebuild_ends(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """From layout 26 only relevance changed (kept at its level's value, layout 27): rebuilding
    every owner's text index for it took 13.9 s for 100,000 episodes on LMDB and 91 s on
    PostgreSQL. The targeted upgrade writes headers, band entries and level chunks alone, and
    its database is the rebuilt one key by key, but for the document numbers the rebuild hands
    out again (it numbers only the hot episodes, from 0: archived and superseded ones keep no
    number, so every later document's number moves) and the random stamps of the chunks it writes."""
    with memdb.open(tmp_path / "a", clock=clock) as db, memdb.open(tmp_path / "b", clock=clock) as rebuilt:
        headers, episodes = _at_layout_26(db)
        assert not db.check().ok  # 2.32's level 57, 3.99...'s band 3
        before, after = _upgraded_against_a_rebuild(db, rebuilt, caplog, episodes)
        assert {name for name in after.keys() | before.keys() if after.get(name) != before.get(name)} <= set(TARGETED)
        assert sum(after["EPST"][k] != v for k, v in before["EPST"].items()) == headers


def _upgraded_against_a_rebuild(
    db: memdb.Database, rebuilt: memdb.Database, caplog: pytest.LogCaptureFixture, rewritten: int
) -> tuple[dict[str, dict[bytes, bytes]], dict[str, dict[bytes, bytes]]]:
    """Upgrade ``db`` (its copy in ``rebuilt`` by a full rebuild, from layout 25): it rewrites
    ``rewritten`` episodes, reports its progress to the end, checks clean, and ends where the
    rebuild ends. Returns every key of ``db`` before and after."""
    _copy(db, rebuilt)
    before = _raw(db)
    total = len(before["EPST"])
    assert _upgraded(db, caplog) == (rewritten, (total, total, rewritten))
    assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
    rebuilt.globals["META"].set(("layout",), 25)  # the step to 26 rebuilds the text index and reads the told windows again
    assert _upgraded(rebuilt, caplog)[0] > rewritten  # every hot episode indexed again
    assert rebuilt.check().ok
    assert _view(db) == _view(rebuilt)
    return before, _raw(db)


def test_an_interrupted_targeted_upgrade_runs_again_to_the_same_end(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped after some of its batches (^C), the targeted upgrade leaves the layout at 26 and
    its claim given up; the next open finishes it, and the database is the one an upgrade run at
    once leaves (batches already done find nothing more to change)."""
    with memdb.open(tmp_path / "a", clock=clock) as db, memdb.open(tmp_path / "b", clock=clock) as whole:
        _at_layout_26(db)
        _copy(db, whole)
        migrate.upgrade(whole.episodes, batch=7)
        calls = 0
        keep_batch = migrate._keep_batch

        def stopped(*args: Any) -> int:
            nonlocal calls
            calls += 1
            if calls == 9:  # in the second owner
                raise KeyboardInterrupt
            return keep_batch(*args)

        with monkeypatch.context() as patched:
            patched.setattr(migrate, "_keep_batch", stopped)
            with pytest.raises(KeyboardInterrupt):
                migrate.upgrade(db.episodes, batch=7)
        assert db.globals["META"].get(("layout",)) == 26 and db.globals["META"].get(("upgrading",)) is None
    with memdb.open(tmp_path / "a", clock=clock) as db, memdb.open(tmp_path / "b", clock=clock) as whole:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert _raw(db).keys() == _raw(whole).keys()
        for name, items in _raw(db).items():
            if name not in ("EPCV", "EPLV"):  # random stamps, new at each write of a chunk
                assert items == _raw(whole)[name], name


def test_what_an_upgrade_does_is_what_the_steps_it_crosses_need() -> None:
    """The declared steps: from 27 only the told windows are read again, from 26 relevance is kept
    too; from older layouts the text index is rebuilt, with the told windows read again and the
    archived sessions indexed before 22."""
    assert migrate._needs(27) == {"tell"}
    assert migrate._needs(26) == {"keep", "tell"}
    assert migrate._needs(25) == migrate._needs(22) == {"rebuild", "tell", "keep"}
    assert migrate._needs(21) == migrate._needs(None) == {"rebuild", "tell", "by_session", "keep"}


def _at_layout_27(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> int:
    """Record episodes of three owners as layout 27 did, which took no day's ordinal for a hint of
    a time (archived, superseded and ones telling of other days among them); returns how many
    hot ones tell of a day by its ordinal alone ("we reverted the deploy on the 3rd", not "on the
    3rd again": the 3rd of what), which the upgrade should rewrite."""
    from memdb.memory import layout
    from memdb.memory.timephrase import TOLD_ORDINALS, told_windows

    texts = (
        "we reverted the deploy on the 3rd", "the deploy failed yesterday", "deploy {i} went fine", "on the 21st and yesterday it broke",
    )  # fmt: skip
    telling = 0
    with monkeypatch.context() as old_code:
        old_code.setattr(layout, "_ASCII_HINTS", layout._ASCII_HINTS - TOLD_ORDINALS)
        for o, owner in enumerate(OWNERS):
            mem = db.owner(owner)
            ids = [
                mem.record("debug", texts[i % 4].format(i=i), outcome=("failure", "success")[i % 2], ts=T0 - dt.timedelta(days=i + o))
                for i in range(20 + 3 * o)
            ]
            for ep in ids[1::6]:
                mem.archive(ep.id)
            for ep in ids[4::8]:  # none archived
                mem.supersede(ep.id, reason="typo", summary=ep.summary + " again")
    for owner in OWNERS:  # the hot ones whose summary tells of more than their header says
        for subs, header in db.episodes.layout.states.items((owner,)):
            if header.get("status") not in ("archived", SUPERSEDED):
                told = told_windows(db.owner(owner).get(str(subs[1])).summary, header["ts"])
                telling += len(told) != len(header.get("told", ()))
    db.globals["META"].set(("layout",), 27)
    return telling


def test_an_upgrade_from_27_reads_the_told_windows_again_and_writes_only_them(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From layout 27 only the told windows changed (a day's ordinal is a hint, layout 28): the
    upgrade reads each hot record's windows again and writes the headers that change and their
    told entries, nothing else, and ends where the full rebuild ends."""
    with memdb.open(tmp_path / "a", clock=clock) as db, memdb.open(tmp_path / "b", clock=clock) as rebuilt:
        telling = _at_layout_27(db, monkeypatch)
        assert telling > 0
        before, after = _upgraded_against_a_rebuild(db, rebuilt, caplog, telling)
        assert {name for name in after.keys() | before.keys() if after.get(name) != before.get(name)} == {"EPST", "EPTD", "META"}
        assert migrate.upgrade(db.episodes) == 0  # done once
