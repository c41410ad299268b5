"""``MemdbStore``: LangGraph's ``BaseStore`` on memdb's episodes (extra ``langgraph``).

Every item is a memdb fact (``Memory.record("fact", ...)``), so it is owner-scoped, sanitized,
indexed and found by memdb's query layer like any episode; nothing is written around the
episode layer. The mapping:

- owner: the namespace's first label, or the ``owner`` the store was built with (then the
  whole namespace is kept under that one owner, and no call reaches another owner's items);
- fact key: ``lg/`` + the rest of the namespace and the item key, ``/``-joined, each label with
  every character outside ``A-Za-z0-9_.:@-`` written ``+HH`` (its UTF-8 bytes); a key that
  would pass memdb's 128 characters, or that the sanitizer would read as personal data once
  escaped (``#12345678`` is ``+2312345678``, a phone's shape), is ``lg:`` + a SHA-256 prefix of
  the labels in the letters g-v instead (no digit, so no number of a person). Items keep the
  key they were written under: a get also looks for the digest, and for the hex digest long
  keys had before. A get or put is a keyed lookup (``Memory.fact``): a get's counts as an
  access (memdb counts reads for relevance), a put's does not (a write reads nothing);
- value: the fact's ``decisions`` hold the namespace, the key, the value as given (sanitized:
  an email comes back as ``<EMAIL_1>``, a value under ``password`` as ``<SECRET_1>``), the
  creation time and the expiry; the value's text (each string and number with its field name, or the
  ``fields`` paths, or the ``index`` paths of a put) is the fact's summary and content, which
  memdb indexes, so ``search(query=...)`` is ``Memory.recall(text=query, kind="fact")`` keeping
  the store's facts (by key, whoever wrote the current version), best first, each with memdb's
  rank score (several owners: interleaved by rank, ``_interleaved``). The text is at most the
  database's ``digest_chars`` characters (2,000 unless configured, up to 100,000): a longer
  one keeps an equal share of that from the start of each indexed field (short fields whole),
  so a long field's tail is not searchable, and a WARNING on this module's logger names the
  item's fact id and the characters left out. A query that holds no word memdb indexes
  ("what is it?", "?", "<EMAIL_1>": stopwords, one-letter words and placeholders) shares a
  word with no item and finds none (``[]``, where recall refuses it). An item put with
  ``index=False`` (or whose indexed paths hold no text) is never found by a query, only by
  filters and listings; an indexed one also matches the words of its fact key (its namespace
  after the owner, and its key), which memdb indexes for every fact;
- ``updated_at`` is the time of the item's latest put (kept in the fact's decisions): every
  put supersedes the fact, the same value again too (earlier values stay as versions, as for
  any fact, until their own expiry), and a refreshing read's new version moves only the
  expiry; a delete erases every version with an audit record, and so does a put over an
  expired item before it writes a fresh one;
- a version written through memdb's own API (``supersede``, ``record("fact", ...)`` on the
  item's key, the MCP tools) is read, not refused: a changed text is the item's value as
  ``{"content": text}``, any other change keeps the value the store last wrote (and its
  expiry); the next put writes a dict again.

Filters apply to value fields (dotted paths reach nested ones) with ``$eq``, ``$ne``, ``$gt``,
``$gte``, ``$lt``, ``$lte``; ``limit``/``offset`` count items after filtering, and page one
order (``_search``). A put whose value memdb sanitized logs a WARNING naming the item, how
many places changed and the kinds of data (never a value or a path). TTL follows
LangGraph's ``TTLConfig`` (minutes): an item expires ``ttl`` minutes after its last write or
refreshing read; expired items are never returned or listed, and are erased when a read or a
put meets them or ``sweep_ttl()`` (or ``db.maintain()``: ``_maintain_sweep``) runs, which also erases an earlier value (a version) whose
own expiry passed, with the versions before it; until then memdb's own queries still read it,
so ``TTLConfig(sweep_interval_minutes=...)`` starts a sweeper thread (``start_ttl_sweeper``).
A refreshing read writes a new expiry only once less than
half the TTL is left, so reading does not add a version each time. ``get`` and
``search(query=...)`` count as accesses of what they read (memdb's ``fact`` and recall do),
whatever ``refresh_ttl`` says (it moves the expiry only); listings (``search`` without a query,
``list_namespaces``, as memdb's ``facts``), puts, deletes and sweeps count none.

A store built without ``owner`` serves every owner of the database, as the LangGraph store it
replaces serves every namespace: hand an agent that acts for one user ``MemdbStore(db,
owner=user)``. Such a store's searches and listings that name no owner look at each owner
in turn (``Database.owners``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    validate_op_namespace,
)

from memdb import Database, Episode, Memory, RegexSanitizer
from memdb.errors import NoSearchableWordsError, NotFoundError, StoreClosedError, ValidationError

__all__ = ["MemdbStore"]

TAG = "langgraph"  # on every version the store writes; searches do not rely on it (_Cursor)
READABLE = "lg/"
HASHED = "lg:"
KEY_CHARS = 128  # memdb's cap on a fact key
_KEPT = re.compile(r"[A-Za-z0-9_.:@-]")
_LETTERS = str.maketrans("0123456789abcdef", "ghijklmnopqrstuv")
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_MISSING = object()
_log = logging.getLogger(__name__)  # under memdb's logger (memdb.engine.log), whose NullHandler keeps it quiet
_MESSAGES = RegexSanitizer()  # a caller's value in an error message, with personal data replaced


def _shown(value: object) -> str:
    text = _MESSAGES.sanitize({"v": repr(value)[:200]})["v"]
    return text if len(text) <= 80 else text[:77] + "..."


def _label(text: str) -> str:
    return "".join(c if _KEPT.match(c) else "".join(f"+{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text)


def _readable(stored: Sequence[str], key: str) -> str | None:
    """The readable fact key of an item, or None past memdb's 128 characters."""
    readable = READABLE + "/".join(_label(p) for p in (*stored, key))
    return readable if len(readable) <= KEY_CHARS else None


def _sha(stored: Sequence[str], key: str) -> str:
    return hashlib.sha256(json.dumps([*stored, key]).encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _digest(stored: Sequence[str], key: str) -> str:
    """An item's digest key: its hex digest written in the letters g-v. Without a digit it reads as
    no number of a person: one hex digest in 800 did (a phone, a card), and its item was refused
    (test_a_digest_key_holds_no_digit)."""
    return HASHED + _sha(stored, key).translate(_LETTERS)


def fact_key(stored: Sequence[str], key: str, keeps: Callable[[str], bool] | None = None) -> str:
    """The memdb fact key a new item takes: the readable one when it fits and ``keeps`` (the
    database's sanitizer) leaves it as written, else the digest (both injective, and apart: one
    starts ``lg/``, the other ``lg:``). The ``+HH`` escapes can make an ordinary key read as a
    phone number (``#12345678`` is ``+2312345678``): such a key takes the digest instead of being
    refused (test_keys_whose_escapes_read_as_personal_data_are_kept)."""
    readable = _readable(stored, key)
    if readable is not None and (keeps is None or keeps(readable)):
        return readable
    return _digest(stored, key)


def _lookup_keys(stored: Sequence[str], key: str) -> list[str]:
    """Every fact key an item may be under, most likely first: the readable one, the digest, and
    the hex digest items past 128 characters took before digests were letters (read, never written)."""
    readable = _readable(stored, key)
    if readable is not None:
        return [readable, _digest(stored, key)]
    return [_digest(stored, key), HASHED + _sha(stored, key)]


def _scan_prefixes(stored_prefix: Sequence[str]) -> list[str]:
    """Fact-key prefixes holding every item under ``stored_prefix`` (and maybe others)."""
    readable = READABLE + "".join(_label(p) + "/" for p in stored_prefix)
    return [readable if len(readable) <= KEY_CHARS else READABLE, HASHED]


class MemdbStore(BaseStore):
    """LangGraph's ``BaseStore`` over a memdb database: items are owner-scoped memdb facts.

    ``db``: an open ``memdb.Database``. ``owner``: keep every namespace under this one owner
    (else the namespace's first label names the owner). ``fields``: value paths whose text is
    indexed (LangGraph's path syntax, e.g. ``["content", "tags[*]"]``; default each string
    and number in the value). ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl``,
    ``refresh_on_read``, ``sweep_interval_minutes``; minutes).
    """

    supports_ttl = True

    def __init__(
        self,
        db: Database,
        *,
        owner: str | None = None,
        fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if not isinstance(db, Database):
            raise ValidationError(f"MemdbStore db {type(db).__name__}: give an open memdb.Database (memdb.open(path))")
        self._db = db
        self._owner = db.owner(owner).name if owner is not None else None
        self._fields = list(fields) if fields is not None else None
        self.ttl_config = ttl
        self._handles: dict[str, Memory] = {}
        self._sweeper_lock = threading.Lock()
        self._sweeper: tuple[threading.Thread, concurrent.futures.Future[None], threading.Event] | None = None
        with _REGISTERING:  # once per database: a store built per request adds no sweep of its own
            if _maintain_sweep not in db.maintain_hooks:
                db.maintain_hooks.append(_maintain_sweep)
        if ttl and ttl.get("sweep_interval_minutes"):
            self.start_ttl_sweeper()

    def __repr__(self) -> str:
        return f"<memdb.integrations.langgraph.MemdbStore owner={self._owner!r}>"

    # --- BaseStore -------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (each sees the writes before it), all or nothing: every
        operation is checked before the first runs, and a batch that puts runs in one
        transaction, so a put memdb refuses (personal data in a key, a value it cannot keep)
        rolls back the puts before it (test_a_batch_refused_by_memdb_writes_nothing)."""
        ops = list(ops)
        for op in ops:
            self._check(op)
        results: list[Result] = []
        # only a batch that puts holds the write lock: reads stay concurrent
        with self._db.transaction() if any(isinstance(op, PutOp) for op in ops) else nullcontext():
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list(op))
                else:
                    assert isinstance(op, PutOp)
                    self._put(op)
                    results.append(None)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (as ``memdb.aio`` runs every call), off the event loop."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Erase every expired item now (reads already omit them), and every earlier value of a
        live item whose own expiry passed (a value replaced before it expired stayed as a version
        past it); returns how many items and earlier versions went. ``db.maintain()`` runs the
        same sweep over every owner (``_maintain_sweep``)."""
        return self._sweep(None)

    def _sweep(self, now: dt.datetime | None) -> int:
        gone = 0
        for owner in self._owners(None):
            mem = self._memory(owner)
            at = now if now is not None else mem.now()
            for view in list(self._scan(mem, ())):
                if _expired(view, at):
                    gone += self._expire(mem, view)
                elif view.episode.supersedes is not None:
                    gone += self._expire_versions(mem, view.episode, at)
        return gone

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Run ``sweep_ttl`` every ``sweep_interval_minutes`` (else the ``TTLConfig``'s, else 5) in
        a daemon thread, as LangGraph's PostgresStore and SqliteStore do; started by the store
        itself when its ``TTLConfig`` sets ``sweep_interval_minutes``. Until a sweep erases an
        expired item it is a fact memdb's own queries, MCP tools and exports still read (the
        store never returns it): the interval bounds how long. The future is done once the
        sweeper stops (``stop_ttl_sweeper``, or the database closed); cancelling it stops it.
        A second call while one runs returns the running one's future."""
        with self._sweeper_lock:
            if self._sweeper is not None and self._sweeper[0].is_alive():
                return self._sweeper[1]
            minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
            if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not 0 < minutes < 10**9:
                raise ValidationError(f"ttl sweep interval {_shown(minutes)}: a positive number of minutes")
            stop = threading.Event()
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.add_done_callback(lambda f: stop.set() if f.cancelled() else None)
            thread = threading.Thread(
                target=self._sweep_loop, args=(float(minutes) * 60, stop, future), daemon=True, name="memdb-ttl-sweeper"
            )
            self._sweeper = (thread, future, stop)
            # the database's close wakes it: waiting out the interval, it outlived the database by
            # up to the interval (test_closing_the_database_stops_the_sweeper_at_once)
            self._db.close_hooks.append(stop.set)
            thread.start()
            return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; True once it stopped (or none ran), False if ``timeout`` seconds passed
        first. Refused inside ``db.transaction()`` (ValidationError) while one runs: a sweep may be
        waiting for the write lock the caller holds, and the join would wait forever
        (test_stopping_the_sweeper_inside_a_transaction_is_refused)."""
        with self._sweeper_lock:
            sweeper = self._sweeper
        if sweeper is None:
            return True
        thread, _, stop = sweeper
        if thread.is_alive() and self._db.globals.in_transaction:
            raise ValidationError(
                "stop_ttl_sweeper: called inside db.transaction(), whose write lock a sweep may be waiting for "
                "(call it after the transaction)"
            )
        stop.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        with self._sweeper_lock:
            if self._sweeper is sweeper:
                self._sweeper = None
        return True

    def _sweep_loop(self, seconds: float, stop: threading.Event, future: concurrent.futures.Future[None]) -> None:
        try:
            while not stop.wait(seconds):
                try:
                    gone = self.sweep_ttl()
                except StoreClosedError:  # the database closed under it: nothing left to sweep
                    break
                except Exception:  # a failed sweep is retried next time; the thread lives on
                    _log.exception("langgraph store: a ttl sweep failed")
                    continue
                if gone:
                    _log.info("langgraph store: the ttl sweep erased %d expired items and versions", gone)
        finally:
            try:
                self._db.close_hooks.remove(stop.set)
            except ValueError:
                pass
            if not future.done():
                future.set_result(None)

    # --- operations --------------------------------------------------------------------------------

    def _check(self, op: Op) -> None:
        if not isinstance(op, (GetOp, SearchOp, ListNamespacesOp, PutOp)):
            raise ValidationError(f"store operation {type(op).__name__}: not one of GetOp, PutOp, SearchOp, ListNamespacesOp")
        validate_op_namespace(op)
        if isinstance(op, (GetOp, PutOp)):
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if not isinstance(op.key, str):
                raise ValidationError(f"store key {_shown(op.key)}: keys are str")
        if isinstance(op, PutOp) and op.value is not None and not isinstance(op.value, Mapping):
            raise ValidationError(f"store value for key {_shown(op.key)}: {type(op.value).__name__}, not a dict (LangGraph values are)")
        if isinstance(op, SearchOp) and op.filter:
            for name, wanted in op.filter.items():
                _check_filter(str(name), wanted)

    def _get(self, op: GetOp) -> Item | None:
        owner, stored = self._split(op.namespace)
        mem = self._reader(owner)
        if mem is None:
            return None
        view = self._lookup(mem, stored, op.key, access=True)  # a read: an access, whatever refresh_ttl says
        if view is None:
            return None
        if _expired(view, mem.now()):
            self._expire(mem, view)
            return None
        if op.refresh_ttl:
            view = self._refresh(mem, view)
        return self._item(owner, view)

    def _put(self, op: PutOp) -> None:
        owner, stored = self._split(op.namespace)
        mem = self._memory(owner)
        # the current version is read in the write's transaction: read before it, another
        # writer's delete in between made this delete raise NotFoundError, or this put follow a
        # version no longer there (test_concurrent_deletes_and_puts_of_one_item)
        with self._db.transaction():
            prior = self._lookup(mem, stored, op.key, access=False)
            if op.value is None:
                if prior is not None:
                    mem.delete(prior.episode.id, reason="langgraph store: item deleted")
                return
            now = mem.now()
            if prior is not None and _expired(prior, now):
                # erased as met, then written afresh: superseded, the expired value stayed for good
                # as an earlier version (test_a_put_over_an_expired_item_erases_it_and_writes_a_fresh_one)
                mem.delete(prior.episode.id, reason="langgraph store: ttl expired")
                prior = None
            # an item stays under the fact key it has; a new one takes the readable key if memdb keeps it
            key = str(prior.episode.key) if prior is not None else fact_key(stored, op.key, self._keeps)
            # a first version's creation is the put's time; later ones keep the first's
            created = prior.created if prior is not None else now
            given = dict(op.value)
            episode = self._write(mem, key, stored, op.key, given, op.index, created, now, op.ttl, now)
            _tell_sanitized(mem, episode, given)

    def _write(
        self,
        mem: Memory,
        key: str,
        stored: tuple[str, ...],
        item_key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None,
        created: dt.datetime,
        updated: dt.datetime,
        ttl: float | None,
        now: dt.datetime,
    ) -> Episode:
        """Record an item's value as the fact's new version; in the caller's transaction, which
        a refusal rolls back. ``updated`` is the time of the put that gave the value: a new
        version whose decisions hold it even when the value is the same again, as a put is a
        write (test_updated_at_is_the_latest_put)."""
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < 10**9):
            raise ValidationError(f"store ttl {_shown(ttl)}: a positive number of minutes, or None")
        text, left_out = _fitted([t for t in self._texts(value, index) if t.strip()], mem.settings.digest_chars)
        decisions = {
            "namespace": list(stored), "key": item_key, "value": value, "created_at": created, "updated_at": updated,
            "ttl": ttl, "index": index,
            "indexed": bool(text),
            "expires_at": now + dt.timedelta(minutes=ttl) if ttl is not None else None,
        }  # fmt: skip
        episode = mem.record(
            "fact", text or key, key=key, content=text if len(text) > 500 else "", tags=[TAG], decisions=decisions
        )  # fmt: skip
        kept = episode.decisions
        if kept.get("namespace") != list(stored) or kept.get("key") != item_key:
            # the sanitizer replaced part of a label: keep no item under a name it cannot be found
            # by. Raised in the caller's transaction, which rolls the record back: nothing is
            # written, not even a delete's audit record (test_personal_data_in_a_label_writes_nothing)
            raise ValidationError("store namespace or key: looks like personal data; use an opaque id")
        if left_out:
            _log.warning(
                "langgraph store: item %s of owner %r: %d characters of its indexed text are not searchable "
                "(the text is cut to digest_chars=%d; db.configure(digest_chars=...) raises it)",
                episode.id, mem.name, left_out, mem.settings.digest_chars,
            )  # fmt: skip
        return episode

    def _search(self, op: SearchOp) -> list[SearchItem]:
        """One order over one set of candidates, paged by ``offset``/``limit``: with a query, each
        owner's matches in memdb's recall order (best first; ties newest first), several owners'
        interleaved by rank (``_interleaved``); without, most recently updated first, then by
        owner and fact key. Page k of size n is items [k*n, (k+1)*n) of that order
        (test_query_pages_are_slices_of_one_order, test_query_pages_across_owners_are_slices_of_one_order)."""
        owners, stored_prefix = self._scope(op.namespace_prefix)
        start = max(op.offset, 0)
        want = start + max(op.limit, 0)
        query = (op.query or "").strip()
        picked: list[tuple[float | None, str, _View]] = []  # (score, owner, item), in order
        if query:
            picked = self._interleaved(owners, query, stored_prefix, op.filter, want)
        else:
            listed: list[tuple[tuple[Any, ...], str, _View]] = []
            for owner in owners:
                mem = self._reader(owner)
                if mem is not None:
                    listed.extend(
                        ((-v.updated.timestamp(), owner, str(v.episode.key)), owner, v)
                        for v in self._listed(mem, stored_prefix, op.filter)[:want]
                    )
            listed.sort(key=lambda r: r[0])
            picked = [(None, owner, view) for _, owner, view in listed]
        out = []
        for shown_score, owner, view in picked[start:want]:
            mem = self._memory(owner)
            if op.refresh_ttl:
                view = self._refresh(mem, view)
            item = self._item(owner, view)
            out.append(SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, shown_score))
        return out

    def _interleaved(
        self, owners: list[str], query: str, prefix: tuple[str, ...], flt: dict[str, Any] | None, want: int
    ) -> list[tuple[float | None, str, _View]]:
        """The first ``want`` matches of ``query``: each owner's in memdb's recall order, several
        owners' by rank (every owner's best, owners in name order, then every owner's second, ...).

        Recall counts what it reads as accessed, which raises it. Single-owner pages stay one
        order because a page reads exactly the items before its end, a set that only rises. Merged
        by score, owners' lists were each read to ``want`` deep, and the reads raised items no
        page returned, so the next page's merge changed (repeats and gaps). By rank, the slots
        before a page's end hold the same items whatever the reads did, so only those are read
        (test_query_pages_across_owners_are_slices_of_one_order). Scores of different owners come
        from different memories (each owner's word statistics and reads) and are not compared."""
        cursors = [_Cursor(mem, query, prefix, flt) for mem in (self._reader(o) for o in sorted(owners)) if mem is not None]
        picked: list[tuple[float | None, str, _View]] = []
        alive = cursors
        while alive and len(picked) < want:
            room = want - len(picked)
            low = min(c.taken for c in alive)
            behind = [c for c in alive if c.taken == low]  # a round begun: its later owners come next
            if len(behind) < len(alive) or room < len(alive):
                for cursor in behind[:room]:
                    picked.extend((score, cursor.mem.name, view) for score, view in cursor.take(1))
            else:  # whole rounds, each owner's next matches read at once: all fall before the page's end
                rounds = room // len(alive)
                taken = [cursor.take(rounds) for cursor in alive]
                for r in range(rounds):
                    picked.extend((got[r][0], c.mem.name, got[r][1]) for c, got in zip(alive, taken, strict=True) if r < len(got))
            alive = [c for c in alive if not c.done]
        for cursor in cursors:  # after paging: erasing while paging would shift the pages
            for view in cursor.expired:
                self._expire(cursor.mem, view)
        return picked

    def _listed(self, mem: Memory, prefix: tuple[str, ...], flt: dict[str, Any] | None) -> list[_View]:
        """The store's items under ``prefix`` passing ``flt``, most recently updated first (then by fact key)."""
        now = mem.now()
        found = []
        for view in self._scan(mem, prefix):
            if _expired(view, now):
                self._expire(mem, view)
            elif _matches(view, flt):
                found.append(view)
        found.sort(key=lambda v: (-v.updated.timestamp(), str(v.episode.key)))
        return found

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        named = next((c.path[0] for c in conditions if c.match_type == "prefix" and c.path and c.path[0] != "*"), None)
        namespaces: set[tuple[str, ...]] = set()
        for owner in self._owners(None if self._owner else named):
            mem = self._reader(owner)
            if mem is None:
                continue
            now = mem.now()
            for view in self._scan(mem, ()):
                if _expired(view, now):
                    self._expire(mem, view)
                else:
                    namespaces.add(self._namespace(owner, view))
        chosen = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        chosen.sort()
        return chosen[max(op.offset, 0) : max(op.offset, 0) + max(op.limit, 0)]

    # --- parts -------------------------------------------------------------------------------------

    def _split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """(owner, the namespace as kept under that owner)."""
        if self._owner is not None:
            return self._owner, tuple(namespace)
        return namespace[0], tuple(namespace[1:])

    def _scope(self, prefix: tuple[str, ...]) -> tuple[list[str], tuple[str, ...]]:
        """The owners a search prefix reaches, and the prefix as kept under each."""
        if self._owner is not None:
            return [self._owner], tuple(prefix)
        if prefix:
            return [prefix[0]], tuple(prefix[1:])
        return self._owners(None), ()

    def _owners(self, named: str | None) -> list[str]:
        if self._owner is not None:
            return [self._owner]
        return [named] if named is not None else self._db.owners()

    def _memory(self, owner: str) -> Memory:
        mem = self._handles.get(owner)
        if mem is None:
            mem = self._handles[owner] = self._db.owner(owner)
        return mem

    def _reader(self, owner: str) -> Memory | None:
        """The handle to read ``owner`` through, or None for a label no owner can have (a
        write under it is refused; a read finds nothing)."""
        try:
            return self._memory(owner)
        except ValidationError:
            return None

    def _keeps(self, key: str) -> bool:
        """Whether the database's sanitizer leaves a fact key as written (memdb refuses one it changes)."""
        try:
            return bool(self._db.episodes.sanitizer.sanitize({"@key": key}).get("@key") == key)
        except Exception:  # a failing sanitizer: the digest, and the record says what failed
            return False

    def _lookup(self, mem: Memory, stored: tuple[str, ...], key: str, *, access: bool) -> _View | None:
        """The item under exactly this namespace and key: a keyed lookup of each fact key it may
        have (``Memory.fact``), not a scan of the keys sharing its prefix. A get's is an access;
        a put's or delete's is not: a write reads nothing for the app, and it counted a read of
        the value it replaced (test_reads_count_as_accesses_and_writes_do_not)."""
        for candidate in _lookup_keys(stored, key):
            episode = _current(mem, candidate, access)
            if episode is not None:
                return _resolve(mem, episode, (stored, key))
        return None

    def _namespace(self, owner: str, view: _View) -> tuple[str, ...]:
        return view.namespace if self._owner is not None else (owner, *view.namespace)

    def _item(self, owner: str, view: _View) -> Item:
        return Item(
            value=view.value, key=view.key, namespace=self._namespace(owner, view), created_at=view.created, updated_at=view.updated
        )

    def _scan(self, mem: Memory, prefix: tuple[str, ...]) -> Iterator[_View]:
        """The store's current items of ``mem`` under ``prefix`` (not an access)."""
        for start in _scan_prefixes(prefix):
            for episode in mem.facts(start):
                view = _resolve(mem, episode)
                if view is not None and _within(view, prefix):
                    yield view

    def _texts(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> list[str]:
        if index is False:
            return []
        paths = index if index is not None else self._fields
        if paths is None:
            return list(_leaves(value))
        return [text for path in paths for text in get_text_at_path(value, path)]

    def _refresh(self, mem: Memory, view: _View) -> _View:
        """Push a TTL item's expiry out again once less than half its TTL is left (a new version)."""
        if not _refresh_due(view, mem.now()):
            return view
        with self._db.transaction():  # read again in the write's: deleted or written meanwhile, it is not written over
            key = str(view.episode.key)
            if not _is_current(mem, view.episode.id):
                return view  # erased or written again since the read (a put sets its own expiry)
            # only the expiry moves
            episode = self._write(
                mem, key, view.namespace, view.key, view.value, view.index, view.created, view.updated, view.ttl, mem.now()
            )
        return _view_of(episode)

    def _expire(self, mem: Memory, view: _View) -> int:
        """Erase an expired item; 0 if it was erased or written again since it was read (a delete
        of the version read would erase the new one with it: a delete takes every version)."""
        with self._db.transaction():
            if not _is_current(mem, view.episode.id):
                return 0
            mem.delete(view.episode.id, reason="langgraph store: ttl expired")
        return 1

    def _expire_versions(self, mem: Memory, episode: Episode, now: dt.datetime) -> int:
        """Erase a live item's earlier values up to the newest whose own expiry passed, with every
        version before it (``Memory.erase_versions``: a chain is never holed); how many went, 0
        if none expired or the item was written again since it was read."""
        try:
            versions = mem.versions(episode.id)
        except NotFoundError:  # deleted since it was listed
            return 0
        if not any(_version_expired(v, now) for v in versions[:-1]):
            return 0  # read first: a sweep opens no write for the items with nothing to erase
        with self._db.transaction():
            if not _is_current(mem, episode.id):
                return 0
            expired = [v for v in mem.versions(episode.id)[:-1] if _version_expired(v, now)]
            if not expired:
                return 0
            return mem.erase_versions(expired[-1].id, reason="langgraph store: ttl expired").count


_REGISTERING = threading.Lock()


def _maintain_sweep(db: Database, now: dt.datetime) -> int:
    """``db.maintain()``'s expiry of store items (a ``Database.maintain_hooks`` entry, registered
    by the first store built over ``db``): the sweeper's sweep over every owner at maintain's
    time, so a database maintained on a schedule without a sweeper thread erases expired items
    too (test_maintain_erases_expired_store_items)."""
    gone = MemdbStore(db)._sweep(now)
    if gone:
        _log.info("langgraph store: maintain erased %d expired items and versions", gone)
    return gone


class _Cursor:
    """One owner's store items matching a query, read through memdb's recall in its order, a few
    at a time. It asks for facts, not for the store's tag: a fact recorded again through memdb
    (``record("fact", ..., key="lg/...")``, MCP ``record_fact``) keeps no tag, and its item
    dropped out of queries (test_an_item_recorded_again_through_memdb_is_found_by_a_query). The
    owner's other facts the words match are read and skipped."""

    def __init__(self, mem: Memory, query: str, prefix: tuple[str, ...], flt: dict[str, Any] | None) -> None:
        self.mem, self._query, self._prefix, self._filter = mem, query, prefix, flt
        self._offset = 0  # recall's position: what it returned is read, and rises, so it stays before
        self._now = mem.now()
        self.taken = 0
        self.done = False
        self.expired: list[_View] = []

    def take(self, n: int) -> list[tuple[float, _View]]:
        """The next ``n`` matching items (fewer at the end, and ``done`` set), with their scores."""
        found: list[tuple[float, _View]] = []
        while len(found) < n and not self.done:
            need = n - len(found)
            try:
                result = self.mem.recall(text=self._query, kind="fact", limit=need, offset=self._offset)
            except NoSearchableWordsError:  # "what is it?": no word to share with an item, so no item matches
                self.done = True
                break
            for hit in result.memories:
                if not str(hit.episode.key or "").startswith((READABLE, HASHED)):
                    continue  # a fact of the owner's own
                view = _resolve(self.mem, hit.episode)
                if view is None or not view.indexed:
                    continue
                if _expired(view, self._now):
                    self.expired.append(view)
                elif _within(view, self._prefix) and _matches(view, self._filter):
                    found.append((hit.score, view))
            self._offset += len(result.memories)
            if len(result.memories) < need or self._offset >= result.total:
                self.done = True
        self.taken += len(found)
        return found


@dataclass(frozen=True)
class _View:
    """An item as the store reads it from its fact's current version (``_resolve``)."""

    episode: Episode  # the current version
    namespace: tuple[str, ...]  # as kept under the owner
    key: str
    value: dict[str, Any]
    created: dt.datetime
    updated: dt.datetime
    ttl: float | None
    expires: dt.datetime | None
    index: Literal[False] | list[str] | None
    indexed: bool  # whether a query may find it


_RECORDED = "new value for fact"  # memdb's reason on a fact recorded again (the store's puts are)


def _current(mem: Memory, key: str, access: bool) -> Episode | None:
    """The current fact under exactly ``key`` (a keyed lookup; an access when ``access``)."""
    try:
        return mem.fact(key, access=access)
    except NotFoundError:
        return None


def _is_current(mem: Memory, episode_id: str) -> bool:
    """Whether ``episode_id`` is still its fact's current version, read without counting an access:
    the writes' checks and the sweeper read nothing for the app (``_current`` counted one each,
    raising items nobody read)."""
    try:
        return mem.peek(episode_id).superseded_by is None
    except NotFoundError:
        return False


def _ours(episode: Episode) -> bool:
    d = episode.decisions
    return bool(episode.key) and str(episode.key).startswith((READABLE, HASHED)) and isinstance(d.get("namespace"), list) and "value" in d


def _written(episode: Episode, before: Episode | None) -> bool:
    """Whether the store wrote this version: its decisions hold an item, and they are not the
    version before's copied by a ``Memory.supersede`` (a store write always changes them: its
    time or its expiry)."""
    if not _ours(episode):
        return False
    if episode.supersedes is None or episode.supersede_reason == _RECORDED or before is None:
        return True
    return before.decisions != episode.decisions


def _view_of(episode: Episode) -> _View:
    d = episode.decisions
    updated = d.get("updated_at")
    expires = d.get("expires_at")
    return _View(
        episode, tuple(d["namespace"]), str(d["key"]), d["value"], d.get("created_at") or episode.ts,
        updated if isinstance(updated, dt.datetime) else episode.ts,  # items written before it was kept: the version's
        d.get("ttl"), expires if isinstance(expires, dt.datetime) else None, d.get("index"),
        d.get("indexed", d.get("index") is not False) is True,  # items written before "indexed": by "index"
    )  # fmt: skip


def _resolve(mem: Memory, episode: Episode, named: tuple[tuple[str, ...], str] | None = None) -> _View | None:
    """The item a store fact's current version holds. A version written through memdb's own
    API (``supersede``, ``record("fact", ...)`` on the item's key; the MCP tools too) is read,
    not refused: what it changed of the text is the item's new value, ``{"content": text}``;
    a change of anything else keeps the value the store last wrote, with its namespace, key,
    creation and expiry (test_an_item_changed_through_memdb_reads_as_memdb_holds_it). ``named``
    (a get's namespace and key) names a fact the store never wrote; without it such a fact is
    no item (None)."""
    before = None
    if episode.supersedes is not None and _ours(episode) and episode.supersede_reason != _RECORDED:
        try:
            before = mem.peek(episode.supersedes)
        except NotFoundError:  # cut by erase_versions
            before = None
    if _written(episode, before):
        return _view_of(episode)
    try:
        versions = mem.versions(episode.id)
    except NotFoundError:
        versions = [episode]
    base = next((v for i, v in reversed(list(enumerate(versions[:-1]))) if _written(v, versions[i - 1] if i else None)), None)
    text = episode.content or episode.summary
    if base is None:
        if named is None:
            return None
        stored, key = named
        first = versions[0].ts
        return _View(episode, stored, key, {"content": text}, first, _changed_at(episode), None, None, None, True)
    kept = _view_of(base)
    if (episode.summary, episode.content) == (base.summary, base.content):
        return replace(kept, episode=episode, updated=_changed_at(episode))
    changed = episode.content if episode.content and episode.content != base.content else episode.summary
    return replace(kept, episode=episode, value={"content": changed}, updated=_changed_at(episode), index=None, indexed=True)


def _changed_at(episode: Episode) -> dt.datetime:
    """When memdb wrote a version: ``supersede`` keeps the episode's ``ts`` (when it happened), so
    the item read as changed at its put (test_updated_at_of_a_change_through_memdb_is_its_time)."""
    return episode.recorded if episode.recorded is not None else episode.ts


def _within(view: _View, prefix: tuple[str, ...]) -> bool:
    return view.namespace[: len(prefix)] == prefix


def _refresh_due(view: _View, now: dt.datetime) -> bool:
    """Whether a read should push a TTL item's expiry out: once less than half its TTL is left."""
    return view.ttl is not None and view.expires is not None and view.expires - now < dt.timedelta(minutes=view.ttl / 2)


def _expired(view: _View, now: dt.datetime) -> bool:
    return view.expires is not None and view.expires <= now


def _version_expired(episode: Episode, now: dt.datetime) -> bool:
    """Whether an earlier value's own expiry passed (one memdb wrote has none of its own)."""
    expires = episode.decisions.get("expires_at")
    return isinstance(expires, dt.datetime) and expires <= now


_PLACEHOLDER = re.compile(r"<([A-Z][A-Z_]*)_[0-9]+>")


def _tell_sanitized(mem: Memory, episode: Episode, given: Mapping[str, Any]) -> None:
    """A WARNING that memdb replaced personal data in a put's value, so an app can tell the value
    it reads back differs from the one it put (``put`` returns None, as BaseStore's does). It
    gives the item's fact id, how many places changed and the kinds of data replaced (memdb's
    placeholder names), never a path: a path is made of the value's own keys, which are data (a
    map keyed by person wrote the person's name into the log, outside erasure and retention)
    (test_a_sanitized_put_is_told_without_the_value)."""
    places = dict(_replaced(given, episode.decisions.get("value"), ()))
    if places:
        kinds = sorted({kind for text in places.values() for kind in _PLACEHOLDER.findall(text)})
        _log.warning(
            "langgraph store: item %s of owner %r: personal data replaced by placeholders in %d place(s) of its value "
            "(kinds: %s; get returns the placeholders; a number replaced becomes text)",
            episode.id, mem.name, len(places), ", ".join(kinds),
        )  # fmt: skip


def _replaced(given: Any, kept: Any, path: tuple[object, ...]) -> Iterator[tuple[tuple[object, ...], str]]:
    """The places (paths as kept, never shown) where ``kept`` holds a placeholder that ``given``
    did not, each with the kept text holding it (a key or a string)."""
    if isinstance(kept, Mapping):
        for k, v in kept.items():
            raw = given.get(k, _MISSING) if isinstance(given, Mapping) else _MISSING
            here = (*path, str(k))
            if raw is _MISSING and _PLACEHOLDER.search(str(k)):
                yield here, str(k)
            else:
                yield from _replaced(raw, v, here)
    elif isinstance(kept, (list, tuple)):
        raws = list(given) if isinstance(given, (list, tuple)) and len(given) == len(kept) else [_MISSING] * len(kept)
        for i, (raw, v) in enumerate(zip(raws, kept, strict=True)):
            yield from _replaced(raw, v, (*path, i))
    elif isinstance(kept, str) and _PLACEHOLDER.search(kept) and not (isinstance(given, str) and given == kept):
        yield path, kept


def _fitted(lines: list[str], budget: int) -> tuple[str, int]:
    """The indexed lines as one text of at most ``budget`` characters (memdb's cap on a fact's
    content), and how many characters were left out. Where they are longer, each line keeps an
    equal share of the room from its start (a short one whole; the longest give up their
    tails), shortest first, so every indexed field stays searchable by its beginning: cut at
    the cap as one text, a long field hid every field after it whole
    (test_every_field_of_a_long_value_is_searchable)."""
    text = "\n".join(lines)
    if len(text) <= budget:
        return text, 0
    room = budget - (len(lines) - 1)  # the newlines between them
    kept = list(lines)
    for n, i in enumerate(sorted(range(len(lines)), key=lambda i: len(lines[i]))):
        kept[i] = _head(lines[i], max(room, 0) // (len(lines) - n))
        room -= len(kept[i])
    # the longest last: what the sanitizer's placeholders add past the cap, memdb cuts from its end
    fitted = "\n".join(sorted((line for line in kept if line), key=len))
    return fitted, len(text) - len(fitted)


def _head(text: str, size: int) -> str:
    """``text`` cut to at most ``size`` characters at the end of a word (a cut word is another word)."""
    if len(text) <= size:
        return text
    end = max(text.rfind(" ", 0, size + 1), text.rfind("\n", 0, size + 1))
    return text[:end].rstrip() if end > 0 else text[:size]


def _leaves(value: Any, path: str = "") -> Iterator[str]:
    """Each string and number of a value as a line ``field: text`` (the field names count as
    text, as in LangGraph's default of indexing the whole value)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, f"{path} {k}".strip())
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, path)
    elif isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        yield f"{path}: {value}" if path else str(value)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    if condition.match_type not in ("prefix", "suffix"):
        raise ValidationError(f"namespace match type {_shown(condition.match_type)}: use prefix or suffix")
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


# --- filters -------------------------------------------------------------------------------------


def _check_filter(name: str, wanted: Any) -> None:
    if isinstance(wanted, Mapping):
        for k, v in wanted.items():
            if str(k).startswith("$"):
                if k not in _OPERATORS:
                    raise ValidationError(f"store filter {_shown(name)}: operator {_shown(k)} is not one of {', '.join(_OPERATORS)}")
            else:
                _check_filter(f"{name}.{k}", v)


def _matches(view: _View, flt: Mapping[str, Any] | None) -> bool:
    if not flt:
        return True
    value = view.value
    return all(_compare(_at(value, str(name)), wanted) for name, wanted in flt.items())


def _at(value: Any, path: str) -> Any:
    """The field a filter names: a key as written, else a dotted path into nested dicts."""
    if isinstance(value, Mapping) and path in value:
        return value[path]
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_apply(actual, str(op), operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k, _MISSING), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return _same(actual, wanted)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # JSON's true is not 1
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return a is not _MISSING and bool(a == b)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _apply(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _same(actual, operand)
    if op == "$ne":
        return not _same(actual, operand)
    if not ((_number(actual) and _number(operand)) or (isinstance(actual, str) and isinstance(operand, str))):
        return False  # no order between a number and a text, or a missing field
    if op == "$gt":
        return bool(actual > operand)
    if op == "$gte":
        return bool(actual >= operand)
    if op == "$lt":
        return bool(actual < operand)
    return bool(actual <= operand)
