"""Layout upgrades: a database written by an older memdb is brought to ``LAYOUT`` in place when
it is opened, idempotently and in bounded transactions."""

from __future__ import annotations

import itertools
import logging
import time
from typing import TYPE_CHECKING, Any

from memdb.engine.globals import Global
from memdb.engine.log import logger
from memdb.memory.ids import episode_day
from memdb.memory.layout import LAYOUT, SUPERSEDED, index_code, index_entries

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
    the postings are rebuilt again).
    Returns how many episodes were rewritten; a current database costs one read. The
    layout is recorded last, so an interrupted upgrade runs again on the next open."""
    lay = layer.layout
    old = lay.meta.get(("layout",))
    if old == LAYOUT:
        return 0
    started = time.perf_counter()
    # a new database records the layout here too: only a real upgrade is worth an INFO
    level = logging.DEBUG if old is None and not layer.owners() else logging.INFO
    _log.log(level, "layout upgrade from %s to %s begins", old if old is not None else "the first", LAYOUT)
    rewritten = 0
    for owner in layer.owners():
        mem = layer.owner(owner)
        if old is None or old < 8:
            with layer.space.transaction():  # postings and their statistics, rebuilt below
                lay.postings.kill((owner,))
                lay.doc_freq.kill((owner,))
                lay.stats.set((owner, "docs"), 0)
                lay.stats.set((owner, "terms"), 0)
        start: Any = None
        while True:
            with layer.space.transaction():
                chunk = list(itertools.islice(lay.states.range((owner,), start), batch))
                sets: list[tuple[Global, Any, Any]] = []
                for subs, state in chunk:
                    if state.get("status") in ("archived", SUPERSEDED):  # in no hot index, with no postings
                        continue
                    eid = str(subs[1])
                    code = index_code(state["relevance"], state.get("outcome"))
                    for gname, entries in index_entries(owner, eid, state, state).items():
                        sets.extend((lay.index(gname), e, code) for e in entries)
                    if old is None or old < 8:
                        record = lay.mem.get((owner, episode_day(eid), eid))
                        if record is not None:
                            sets += mem._text_index_changes(eid, {}, record)[1]
                    rewritten += 1
                layer.space.apply((), sets)
            if len(chunk) < batch:
                break
            start = str(chunk[-1][0][1]) + "\x00"
    lay.meta.set(("layout",), LAYOUT)
    _log.log(level, "layout upgraded to %s: %d episodes rewritten in %.2fs", LAYOUT, rewritten, time.perf_counter() - started)
    return rewritten
