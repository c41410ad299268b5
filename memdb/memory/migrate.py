"""Layout upgrades: a database written by an older memdb is brought to ``LAYOUT`` in place when
it is opened, idempotently and in bounded transactions."""

from __future__ import annotations

import itertools
import logging
import time
from typing import TYPE_CHECKING, Any

from memdb.engine.codec import encode_subscript
from memdb.engine.globals import Global
from memdb.engine.log import logger
from memdb.errors import ConfigError
from memdb.memory.ids import episode_day, ts_micros
from memdb.memory.layout import LAYOUT, SUPERSEDED, entry_value, index_code, index_entries, terms_of, told_of
from memdb.memory.postings import CHUNK_DOCS, Doc

if TYPE_CHECKING:
    from memdb.memory.episodes import Episodes

__all__ = ["upgrade"]

_log = logger(__name__)


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
    access flush rewrites those and not the records: ``_split_levels``; layout 12 puts each
    index entry's document number in its value instead of its relevance level, so an access
    flush rewrites no index entry: ``memdb.memory.layout.entry_value``).
    Returns how many episodes were rewritten; a current database costs one read. The
    layout is recorded last, so an interrupted upgrade runs again on the next open."""
    lay = layer.layout
    old = lay.meta.get(("layout",))
    if old == LAYOUT:
        return 0
    if isinstance(old, int) and old > LAYOUT:  # "upgrading" it would rewrite its indexes in a format it does not use
        raise ConfigError(
            f"database layout {old}: written by a newer memdb, and this one reads layouts up to {LAYOUT} "
            "(install the newer memdb; nothing was changed)"
        )
    started = time.perf_counter()
    # a new database records the layout here too: only a real upgrade is worth an INFO
    level = logging.DEBUG if old is None and not layer.owners() else logging.INFO
    _log.log(level, "layout upgrade from %s to %s begins", old if old is not None else "the first", LAYOUT)
    rewritten = 0
    reported = started
    owners = layer.owners()
    total = sum(int(lay.stats.get((o, "episodes"), 0)) for o in owners)
    settings = layer.settings
    for owner in owners:
        rebuild = old is None or old < 9
        tell = old is None or old < 10  # the windows each hot record's text tells of (``told_of``)
        if not rebuild and old < 11:
            _split_levels(layer, owner, level)
        if rebuild:
            with layer.space.transaction():  # the text index and its statistics, rebuilt below
                lay.text.drop_owner(owner)
                lay.doc_freq.kill((owner,))
                lay.stats.set((owner, "docs"), 0)
                lay.stats.set((owner, "terms"), 0)
        start: Any = None
        while True:
            with layer.space.transaction():
                chunk = list(itertools.islice(lay.states.range((owner,), start), batch))
                sets: list[tuple[Global, Any, Any]] = []
                docs: list[Doc] = []
                hot: list[tuple[str, str | None, list[tuple[Global, Any]]]] = []  # (id, outcome, index entries)
                for subs, state in chunk:
                    if state.get("status") in ("archived", SUPERSEDED):  # in no hot index, with no postings
                        continue
                    eid = str(subs[1])
                    code = index_code(state["relevance"], state.get("outcome"))
                    record = lay.mem.get((owner, episode_day(eid), eid)) if rebuild or tell else None
                    if record is not None:
                        tf, dl = terms_of(record)
                        if tell:
                            told = told_of(record, tf, settings.week_starts_on, settings.timezone)
                            if told or "told" in state:
                                state = {**state, "told": told} if told else {k: v for k, v in state.items() if k != "told"}
                                sets.append((lay.states, subs, state))
                        if rebuild:
                            docs.append(Doc(eid, ts_micros(record["ts"]), code, tf, dl, tuple(record.get("tags") or ())))
                    entries = [(lay.index(gname), e) for gname, es in index_entries(owner, eid, state, state).items() for e in es]
                    hot.append((eid, state.get("outcome"), entries))
                    rewritten += 1
                layer.space.apply((), sets)
                # layout 12: each entry holds its episode's document number (``entry_value``),
                # handed out now when the text index is rebuilt, else read
                if rebuild:
                    # in (ts, id) order, as capture numbers documents
                    numbered = dict(zip((d.eid for d in docs), lay.text.add(owner, docs), strict=True))
                else:
                    found = lay.text.numbers_of(owner, [encode_subscript(eid) for eid, _, _ in hot])
                    numbered = {eid: doc for (eid, _, _), doc in zip(hot, found, strict=True) if doc is not None}
                packed: list[tuple[bytes, bytes]] = []
                for eid, outcome, entries in hot:
                    doc = numbered.get(eid)
                    if doc is None:  # a hot episode without a document (damaged): check() names its missing entries
                        continue
                    value = entry_value(doc, outcome)
                    packed.extend((g.key(e), value) for g, e in entries)
                layer.space.apply((), packed=packed)
                if docs:
                    layer.space.defer_counts(lay.doc_freq, (owner,), (t for d in docs for t in d.tf), drop_zero=True)
                    with_text = [d for d in docs if d.dl]
                    layer.space.defer_increments(lay.stats, (owner,), {"docs": len(with_text), "terms": sum(d.dl for d in with_text)})
            if chunk and (len(chunk) < batch or time.perf_counter() - reported >= 2.0):
                # the progress report (every 2 s at most): the memdb command shows these lines on a terminal
                reported = time.perf_counter()
                _log.log(level, "layout upgrade: %d of %d episodes rewritten (%.0fs)", rewritten, total, reported - started)
            if len(chunk) < batch:
                break
            start = str(chunk[-1][0][1]) + "\x00"
    lay.meta.set(("layout",), LAYOUT)
    _log.log(level, "layout upgraded to %s: %d episodes rewritten in %.2fs", LAYOUT, rewritten, time.perf_counter() - started)
    return rewritten


def _split_levels(layer: Episodes, owner: str, level: int, batch: int = 256) -> None:
    """Layout 11: move an owner's text column levels to level chunks of their own, ``batch``
    chunks (of 1,024 documents) a transaction, reporting progress every 2 s at most."""
    started = reported = time.perf_counter()
    chunk: int | None = 0
    while chunk is not None:
        with layer.space.transaction():
            chunk = layer.layout.text.split_levels(owner, chunk, batch)
        if chunk is None or time.perf_counter() - reported >= 2.0:
            reported = time.perf_counter()
            done = f"{chunk * CHUNK_DOCS:,} documents" if chunk is not None else "done"
            _log.log(level, "layout upgrade: text levels of %r split out: %s (%.0fs)", owner, done, reported - started)
