"""Layout upgrades: a database written by an older memdb is brought to ``LAYOUT`` in place when
it is opened, idempotently and in bounded transactions."""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import socket
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from memdb.engine.codec import encode_subscript
from memdb.engine.globals import Global
from memdb.engine.log import logger
from memdb.errors import ConfigError, StoreBusyError
from memdb.memory.ids import episode_day, ts_micros
from memdb.memory.layout import LAYOUT, SUPERSEDED, entry_value, index_code, index_entries, terms_of, told_of
from memdb.memory.postings import Doc
from memdb.memory.relevance import band_of, kept_relevance, relevance_level

if TYPE_CHECKING:
    from memdb.memory.episodes import Episodes

__all__ = ["upgrade"]

_log = logger(__name__)
_CLAIM = ("upgrading",)  # ^META("upgrading") = {"holder", "until"}: who is upgrading, and till when unless renewed
CLAIM_SECONDS = 120.0
"""How long an upgrade's claim holds without a renewal (each of its transactions renews it): a
process that died upgrading holds up the others' opens this long, then one of them starts over."""
_WAIT_SECONDS = 0.2  # between looks at another process's claim

# What an upgrade does, by what the steps it crosses need:
_REBUILD: Final = "rebuild"  # each owner's text index rebuilt from its hot records, its index entries rewritten
_TELL: Final = "tell"  # the windows each hot record's text tells of read again (``told_of``), in the rebuild
_BY_SESSION: Final = "by_session"  # the archived episodes of each session indexed (``^EPSA``), in the rebuild
_KEEP: Final = "keep"  # every stored relevance at its level's value (``kept_relevance``), its band and level with it
_STEPS: Final[dict[int, frozenset[str]]] = {
    **dict.fromkeys((10, 15, 16, 17, 20, 24, 25, 26), frozenset({_REBUILD, _TELL})),
    22: frozenset({_REBUILD, _BY_SESSION}),
    27: frozenset({_KEEP}),
    28: frozenset({_TELL}),
}
"""What the step to each layout needs (``upgrade`` says what each changed); a step not named
rebuilds the text index, the safe choice. An upgrade without a rebuild among its steps rewrites
only what they change: from 26 to 27 the headers, band entries and levels (``_keep_batch``), from
27 to 28 the headers whose told windows change and their told entries (``_tell_batch``)."""
_ONLY_REBUILD: Final = frozenset({_REBUILD})


def _needs(old: int | None) -> frozenset[str]:
    """What the upgrade from layout ``old`` does: what each step to ``LAYOUT`` needs. None (a new
    database, or one written before layouts were recorded) crosses every step."""
    first = 1 if old is None else old + 1
    return frozenset().union(*(_STEPS.get(step, _ONLY_REBUILD) for step in range(first, LAYOUT + 1)))


def _claim(layer: Episodes, holder: str) -> tuple[bool, Any]:
    """In one write transaction: whether ``holder`` may upgrade (the layout is old and no other
    process holds a live claim: then the claim is its), and the layout the database holds."""
    meta = layer.layout.meta
    with layer.space.transaction():
        old = meta.get(("layout",))
        if old == LAYOUT:
            return False, old
        claim = meta.get(_CLAIM)
        now = time.time()
        if claim is not None and claim["holder"] != holder and claim["until"] > now and _alive(claim["holder"]):
            return False, old
        meta.set(_CLAIM, {"holder": holder, "until": now + CLAIM_SECONDS})
        return True, old


def _alive(holder: str) -> bool:
    """Whether the process named by a claim's ``holder`` ("host:pid:token") may still be
    upgrading: one of another host, or one of this host that exists (a killed one holds no claim)."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


def _release(layer: Episodes, holder: str) -> None:
    """Give up ``holder``'s claim (an upgrade that failed), so the next open need not wait for it to lapse."""
    meta = layer.layout.meta
    try:
        with layer.space.transaction():
            claim = meta.get(_CLAIM)
            if claim is not None and claim["holder"] == holder:
                meta.kill(_CLAIM)
    except Exception:  # the store itself failed: the claim lapses on its own
        _log.debug("layout upgrade: the claim could not be given up", exc_info=True)


def _renew(layer: Episodes, holder: str) -> None:
    """In the caller's write transaction: renew ``holder``'s claim, or raise StoreBusyError where
    it lapsed and another process took it (this transaction then writes nothing)."""
    meta = layer.layout.meta
    claim = meta.get(_CLAIM)
    if claim is None or claim["holder"] != holder:
        taken = f"{claim['holder']} took it over" if claim is not None else "it was given up"
        raise StoreBusyError(f"layout upgrade: this process's claim lapsed and {taken} (open the database again)")
    meta.set(_CLAIM, {"holder": holder, "until": time.time() + CLAIM_SECONDS})


def _claimed(layer: Episodes) -> tuple[str | None, Any]:
    """Claim the upgrade for this process: the holder name and the layout to upgrade from, or
    (None, the layout) where the database is current, once another process finished it. While
    another process upgrades this one waits (its claim holds ``CLAIM_SECONDS`` past its last
    transaction): two upgrades at once each dropped and rebuilt the other's postings, and every
    document was indexed twice (a probe's find, on both backends)."""
    holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
    waited = False
    while True:
        mine, old = _claim(layer, holder)
        if mine or old == LAYOUT:
            return (holder if mine else None), old
        if not waited:
            claim = layer.layout.meta.get(_CLAIM) or {}
            _log.warning(
                "layout upgrade: waiting for the upgrade by %s to finish (its claim lapses %.0f s after its last write)",
                claim.get("holder", "another process"), CLAIM_SECONDS,
            )  # fmt: skip
            waited = True
        time.sleep(_WAIT_SECONDS)


def upgrade(layer: Episodes, batch: int = 5_000) -> int:
    """Bring a database written by an older memdb to the current index layout, in place and
    idempotently (layouts 1 and 2: index entries held an empty value or the relevance band;
    layout 3 holds ``index_code``; layout 4 adds the tag+outcome index; layout 5 stems to a
    fixpoint, so the text postings are rebuilt from the records; layout 6 keeps relevance
    to 1/25 of a point instead of a quarter; layout 7 keeps combining marks in words, so
    the postings are rebuilt again; layout 8 stems with Snowball and bigrams Chinese and
    Japanese runs; layout 9 keeps the postings in blocks under document numbers, with a list
    of documents per tag and per-document columns: ``memdb.memory.postings``; layout 10 indexes
    the windows each record's text tells of, ``told_of``, so each hot record is read once;
    layout 11 keeps the relevance levels of the text columns in level chunks of their own, so an
    access flush rewrites those and not the records; layout 12 puts each
    index entry's document number in its value instead of its relevance level, so an access
    flush rewrites no index entry: ``memdb.memory.layout.entry_value``; layout 13 counts a
    posting's tf in thirds of an occurrence, and an exchange's context two thirds of one
    (``memdb.memory.layout.terms_of``), so the postings are rebuilt from the records; layout 14
    drops negated auxiliaries whole, where "won't" made the term "won", and makes the past forms
    of common irregular verbs their verb's term, "bought" "buy": ``memdb.memory.text``; layout 15
    reads the told windows again, as a deadline, "by September", and a day ahead in a clause
    about the future, "we'll meet on Friday", tell of no past day: ``timephrase.told_windows``,
    and stems three-letter words ending in "y", where "fly" missed "flying": ``text.stem``; layout
    16 reads them again, as a season, "last summer", is a told window; layout 17 reads them
    again, as a record tells of what is ahead too, "my flight leaves on March 10", and a tool
    call's JSON members whose value is empty, {"failed": 0}, index no words; layout 18 indexes the
    words of a record's decisions, its keys and string values, but a fact's; layout 19 has a
    record with decisions say "decided decision" too, so "what did we decide?" finds it:
    ``layout.terms_of``; layout 20 reads the told windows again, as a date written day first with
    dots, "sent on 15.03.2026", is a day; layout 21 indexes an identifier that joins letters and
    digits, "INV-2026-0042", whole beside its parts: ``memdb.memory.text``; layout 22 indexes
    archived episodes by session, ``^EPSA``, so a session whose captures were archived closes;
    layout 23 indexes an identifier without its last words of letters too, "web-01.prod.internal"
    holding "web-01"; layout 24 reads the told windows again, as a plan, "scheduled for March 10",
    tells of the day ahead, a weekday written before a date, "Tuesday, December 29", is the date's,
    and "the last day of February" is a day; layout 25 indexes Han characters beside their
    bigrams, one-syllable Korean words, Thai, Lao, Myanmar and Khmer as bigrams, and an identifier
    written against Chinese or Japanese whole, ``memdb.memory.text``, and reads the told windows
    again, as Chinese, Japanese and Korean dates and relative words, "2026年7月14日", "昨天", tell
    of days; tags normalise as before it, as stored tags are never rewritten; layout 26 reads
    them again, as a Chinese relative word inside another word, "提前天数", "上周期", tells of no
    day, nor "1990년대" of 1990, ``memdb.memory.timephrase``; layout 27 keeps every stored
    relevance at its level's value, ``kept_relevance``, and rewrites the levels derived from it,
    so a database written before relevance was kept checks clean, and its first rescore no longer
    rewrites every header: that one-time cost is the upgrade's, with its progress report; layout
    28 reads the told windows again, as a day of the month by its ordinal alone, "we shipped it on
    the 3rd", tells of the latest such day, ``timephrase.TOLD_ORDINALS``).
    An upgrade does what the steps from the stored layout need (``_STEPS``), one batch of
    ``batch`` headers a transaction: where a step changed what is indexed (every step before 27),
    it rebuilds each owner's text index from the hot records and rewrites the index entries; from
    26 it writes only the headers whose kept relevance differs, their band entries and the level
    chunks that differ (26 to 27 alone, reading no record: 8.3 s for 100,000 agent episodes, where
    the rebuild took 66 s), and from 26 or 27 it reads each hot record's told windows again and
    writes only the headers whose windows change and their told entries. Returns how many
    episodes were rewritten (indexed again, or their header or level); a current database costs one read. The layout is recorded last, so an
    interrupted upgrade runs again on the next open (a rebuild starts each owner's over; the
    targeted path finds the batches it did unchanged)."""
    lay = layer.layout
    old = lay.meta.get(("layout",))
    if old == LAYOUT:
        return 0
    if isinstance(old, int) and old > LAYOUT:  # "upgrading" it would rewrite its indexes in a format it does not use
        raise ConfigError(
            f"database layout {old}: written by a newer memdb, and this one reads layouts up to {LAYOUT} "
            "(install the newer memdb; nothing was changed)"
        )
    holder, old = _claimed(layer)
    if holder is None:
        return 0
    try:
        return _upgrade(layer, holder, old, batch)
    except BaseException:
        _release(layer, holder)
        raise


def _kept(header: dict[str, Any]) -> dict[str, Any]:
    """``header`` with its relevance at its level's value (layout 27), the header itself where it
    is. Before layout 27 a header held its score to 1e-9 and the levels derived from it were
    taken without ``relevance_level``'s tolerance (2.32 was level 57): a rescore skips a header
    whose kept value it holds, so check() found those levels wrong until ageing moved them. The
    caller rewrites the levels from the kept value, and moves a band entry (``_left_band``)."""
    relevance = header["relevance"]
    kept = kept_relevance(relevance)
    return header if kept == relevance else {**header, "relevance": kept}


def _hot(header: dict[str, Any]) -> bool:
    """Whether an episode is in the hot indexes (an archived or superseded one is in none)."""
    return header.get("status") not in ("archived", SUPERSEDED)


def _left_band(header: dict[str, Any], state: dict[str, Any]) -> int | None:
    """The band whose entry a hot episode leaves as its header becomes ``state``, or None: its
    band stays (a score kept to 1e-9 is kept in its band; one a hair under a whole number is not)."""
    old = band_of(header["relevance"])
    return old if _hot(header) and old != band_of(state["relevance"]) else None


def _upgrade(layer: Episodes, holder: str, old: Any, batch: int) -> int:
    """The upgrade from layout ``old``, ``holder``'s claim held (``upgrade``): each owner's
    headers one batch a transaction, rebuilding its text index from them where a step needs it,
    else rewriting only what the steps change (``_STEPS``)."""
    lay = layer.layout
    started = time.perf_counter()
    # a new database records the layout here too: only a real upgrade is worth an INFO
    level = logging.DEBUG if old is None and not layer.owners() else logging.INFO
    _log.log(level, "layout upgrade from %s to %s begins", old if old is not None else "the first", LAYOUT)
    rewritten = done = 0
    reported = started
    owners = layer.owners()
    total = sum(int(lay.stats.get((o, "episodes"), 0)) for o in owners)
    needs = _needs(old)
    for owner in owners:
        if _REBUILD in needs:
            with layer.space.transaction():  # the text index and its statistics, rebuilt below
                _renew(layer, holder)
                if _TELL in needs:  # and the told index: a window read before may be read no more
                    lay.by_told.kill((owner,))
                if _BY_SESSION in needs:
                    lay.archived_sessions.kill((owner,))
                lay.text.drop_owner(owner)
                lay.doc_freq.kill((owner,))
                lay.stats.set((owner, "docs"), 0)
                lay.stats.set((owner, "terms"), 0)
        start: Any = None
        while True:
            with layer.space.transaction():
                _renew(layer, holder)
                chunk = list(itertools.islice(lay.states.range((owner,), start), batch))
                done += len(chunk)
                if _REBUILD in needs:
                    rewritten += _rebuild_batch(layer, owner, chunk, needs)
                else:  # the steps' own changes: relevance kept, then the told windows from the kept headers
                    kept = _keep_batch(layer, owner, chunk) if _KEEP in needs else set()
                    told = _tell_batch(layer, owner, chunk, needs) if _TELL in needs else set()
                    rewritten += len(kept | told)
            if chunk and (len(chunk) < batch or time.perf_counter() - reported >= 2.0):
                # the progress report (every 2 s at most): the memdb command shows these lines on a
                # terminal. It counts the episodes done, which reach the total: archived and
                # superseded ones are read but have no hot index to rewrite ("29 of 39" ended an
                # upgrade that was done: tests/memory/test_upgrade_progress.py)
                reported = time.perf_counter()
                _log.log(level, "layout upgrade: %d of %d episodes done, %d rewritten (%.0fs)", done, total, rewritten, reported - started)
            if len(chunk) < batch:
                break
            start = str(chunk[-1][0][1]) + "\x00"
    with layer.space.transaction():
        _renew(layer, holder)
        lay.meta.set(("layout",), LAYOUT)
        lay.meta.kill(_CLAIM)
    _log.log(level, "layout upgraded to %s: %d episodes rewritten in %.2fs", LAYOUT, rewritten, time.perf_counter() - started)
    return rewritten


def _rebuild_batch(layer: Episodes, owner: str, chunk: Sequence[tuple[Any, dict[str, Any]]], needs: frozenset[str]) -> int:
    """Index one batch of an owner's headers (``chunk``) again from their records, in the caller's
    transaction, after its text index was dropped: their postings, columns and index entries, and
    what else ``needs`` says. Returns how many were indexed (the hot ones with a record)."""
    lay = layer.layout
    settings = layer.settings
    sets: list[tuple[Global, Any, Any]] = []
    docs: list[Doc] = []
    hot: list[tuple[str, str | None, list[tuple[Global, Any]]]] = []  # (id, outcome, index entries)
    kills: list[tuple[Global, Any]] = []
    for subs, header in chunk:
        eid = str(subs[1])
        state = _kept(header) if _KEEP in needs else header
        left = _left_band(header, state)
        if left is not None:  # its new band's entry is written with the others below
            kills.append((lay.by_band, (owner, left, ts_micros(header["ts"]), eid)))
        if _BY_SESSION in needs and state.get("status") == "archived":  # its archive entries, as index_entries gives them
            sets.extend((lay.archived_sessions, e, "") for e in index_entries(owner, eid, state, state)["EPSA"])
        record = lay.mem.get((owner, episode_day(eid), eid)) if _hot(state) else None  # else no postings
        if record is None:  # (or a header without its record, damaged: check() names it)
            if state is not header:
                sets.append((lay.states, subs, state))
            continue
        tf, dl = terms_of(record)
        if _TELL in needs:
            told = told_of(record, tf, settings.week_starts_on, settings.timezone)
            if told or "told" in state:
                state = {**state, "told": told} if told else {k: v for k, v in state.items() if k != "told"}
        if state is not header:
            sets.append((lay.states, subs, state))
        code = index_code(state["relevance"], state.get("outcome"))
        docs.append(Doc(eid, ts_micros(record["ts"]), code, tf, dl, tuple(record.get("tags") or ())))
        entries = [(lay.index(gname), e) for gname, es in index_entries(owner, eid, state, state).items() for e in es]
        hot.append((eid, state.get("outcome"), entries))
    layer.space.apply(kills, sets)
    # each entry holds its episode's document number (``entry_value``, layout 12),
    # handed out in (ts, id) order as capture numbers documents
    numbered = lay.text.add(owner, docs)
    packed = [(g.key(e), entry_value(doc, outcome)) for (_, outcome, entries), doc in zip(hot, numbered, strict=True) for g, e in entries]
    layer.space.apply((), packed=packed)
    if docs:
        layer.space.defer_counts(lay.doc_freq, (owner,), (t for d in docs for t in d.tf), drop_zero=True)
        with_text = [d for d in docs if d.dl]
        layer.space.defer_increments(lay.stats, (owner,), {"docs": len(with_text), "terms": sum(d.dl for d in with_text)})
    return len(docs)


def _keep_batch(layer: Episodes, owner: str, chunk: Sequence[tuple[Any, dict[str, Any]]]) -> set[str]:
    """Bring one batch of an owner's headers (``chunk``) to their kept relevance (layout 27), in
    the caller's transaction, reading no record: each header whose kept value differs, a hot
    one's band entry where its band changed, and each hot document's level where it differs,
    kept or not (2.32 was stored as level 57). Returns the ids of the episodes it rewrote."""
    lay, text = layer.layout, layer.layout.text
    sets: list[tuple[Global, Any, Any]] = []
    moves: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = []  # a band entry's (old subscripts, new ones)
    hot: list[tuple[str, int]] = []  # (id, the level of its kept relevance)
    rewritten: set[str] = set()
    for subs, header in chunk:
        eid = str(subs[1])
        state = _kept(header)
        if state is not header:
            sets.append((lay.states, subs, state))
            rewritten.add(eid)
            left = _left_band(header, state)
            if left is not None:
                t = ts_micros(header["ts"])
                moves.append(((owner, left, t, eid), (owner, band_of(state["relevance"]), t, eid)))
        if _hot(state):
            hot.append((eid, relevance_level(state["relevance"])))
    moved: list[tuple[bytes, bytes]] = []
    if moves:  # an entry moves with its value (its document number and outcome), as a rescore moves it
        keys = [lay.by_band.key(old_subs) for old_subs, _ in moves]
        with layer.space.reader() as txn:
            found = txn.get_many(keys)
        moved = [(lay.by_band.key(new_subs), found[key]) for (_, new_subs), key in zip(moves, keys, strict=True) if key in found]
    layer.space.apply([(lay.by_band, old_subs) for old_subs, _ in moves], sets, packed=moved)
    stored = text.levels_of(owner)
    numbers = text.numbers_of(owner, [encode_subscript(eid) for eid, _ in hot])
    levels = [(eid, lv) for (eid, lv), doc in zip(hot, numbers, strict=True) if doc is not None and doc < len(stored) and stored[doc] != lv]
    text.set_levels(owner, levels)
    rewritten.update(eid for eid, _ in levels)
    return rewritten


def _tell_batch(layer: Episodes, owner: str, chunk: Sequence[tuple[Any, dict[str, Any]]], needs: frozenset[str]) -> set[str]:
    """Read the told windows of one batch of an owner's hot episodes again (``told_of`` of each
    record; layout 28 reads a day's ordinal), in the caller's transaction, after ``_keep_batch``
    when ``needs`` keeps relevance too (its headers are then the kept ones): each header whose
    windows change, and its told entries (``^EPTD``), which hold its document number and outcome
    as every index entry does. Nothing else is written. Returns the ids of the episodes it rewrote."""
    lay, settings = layer.layout, layer.settings
    sets: list[tuple[Global, Any, Any]] = []
    kills: list[tuple[Global, Any]] = []
    changed: list[tuple[str, int, str | None, list[list[int]]]] = []  # (id, its time, its outcome, its new windows)
    for subs, header in chunk:
        eid = str(subs[1])
        record = lay.mem.get((owner, episode_day(eid), eid)) if _hot(header) else None  # an archived one has no told entries
        if record is None:
            continue
        state = _kept(header) if _KEEP in needs else header
        old = [list(w) for w in state.get("told", ())]
        told = told_of(record, terms_of(record)[0], settings.week_starts_on, settings.timezone)
        if told == old:
            continue
        state = {**state, "told": told} if told else {k: v for k, v in state.items() if k != "told"}
        sets.append((lay.states, subs, state))
        t = ts_micros(header["ts"])
        kills.extend((lay.by_told, (owner, start, end, t, eid)) for start, end in old)
        changed.append((eid, t, state.get("outcome"), told))
    if not changed:
        return set()
    numbers = lay.text.numbers_of(owner, [encode_subscript(eid) for eid, _, _, _ in changed])
    packed = [
        (lay.by_told.key((owner, start, end, t, eid)), entry_value(doc, outcome))
        for (eid, t, outcome, told), doc in zip(changed, numbers, strict=True)
        if doc is not None
        for start, end in told
    ]
    layer.space.apply(kills, sets, packed=packed)
    return {eid for eid, _, _, _ in changed}
