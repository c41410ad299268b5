"""Ordered key-value stores: the ``Store`` protocol and its embedded LMDB backend.

Nothing LMDB-specific leaks above this module: callers see bytes keys and values,
snapshot reads, write transactions that nest (savepoints), ordered scans and range deletes.
LMDB errors are translated here into ``memdb.errors``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Final, Protocol, runtime_checkable

import lmdb

try:
    import fcntl
except ImportError:  # not on Windows: a backup's copy is not locked there (lmdbdir.py: no locks at all)
    fcntl = None  # type: ignore[assignment]

from memdb.engine.lmdbdir import (
    DATA,
    DEFAULT_MODE,
    LOCK,
    LmdbDirectory,
    check_mode,
    check_room,
    fsync_dir,
    holds_database,
    lock_bytes,
    take_unopened,
    with_hint,
    write_failure,
)
from memdb.engine.log import logger
from memdb.engine.process import after_fork
from memdb.errors import (
    ConfigError,
    CorruptionError,
    NotFoundError,
    StoreClosedError,
    StoreError,
    StoreFullError,
    TransactionConflictError,
)

__all__ = ["LMDBStore", "ReadTxn", "Store", "WriteTxn", "batch_pairs", "unopened"]


@runtime_checkable
class ReadTxn(Protocol):
    """A consistent snapshot of the store."""

    def get(self, key: bytes) -> bytes | None:
        """The value at ``key``, or None."""

    def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]:
        """The values of those of ``keys`` that exist: one call for a batch of point reads (one
        round trip on a networked backend)."""

    def scan(self, lo: bytes, hi: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Items with ``lo <= key < hi`` in key order (descending if ``reverse``)."""

    def first(self, lo: bytes, hi: bytes, reverse: bool = False) -> tuple[bytes, bytes] | None:
        """The first item of ``scan(lo, hi, reverse)``, or None: one seek, no iterator."""

    def scan_columns(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> tuple[list[bytes], list[bytes]]:
        """The keys and the values of the first ``limit`` items (all if None) of
        ``scan(lo, hi, reverse)`` as two lists, for callers that want a whole range: a backend
        can fill them without a Python step per item."""

    def scan_keys(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> list[bytes]:
        """The keys of ``scan_columns``, for a caller that counts or reads keys only (an index's
        entries): no value is read or copied (on LMDB a third of the cost of both)."""


@runtime_checkable
class WriteTxn(ReadTxn, Protocol):
    """A write transaction: sees its own writes; all-or-nothing on exit."""

    def put(self, key: bytes, value: bytes) -> None:
        """Set ``key`` to ``value``."""

    def put_many(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        """``put`` each (key, value) in order: one call for a batch, so a backend can loop in C."""

    def delete(self, key: bytes) -> bool:
        """Remove ``key``; True if it existed."""

    def delete_range(self, lo: bytes, hi: bytes) -> int:
        """Remove every key with ``lo <= key < hi``; returns how many."""

    def savepoint(self) -> AbstractContextManager[WriteTxn]:
        """A nested transaction: rolled back alone if its block raises."""


class Store(Protocol):
    """An ordered key-value backend for the globals layer."""

    def read(self) -> AbstractContextManager[ReadTxn]:
        """A read-only snapshot for the duration of the block."""

    def get(self, key: bytes) -> bytes | None:
        """The value at ``key`` in a snapshot of its own: ``read()`` and one ``get``, for a
        point read outside any transaction (a backend can do it in one step)."""

    def first(self, lo: bytes, hi: bytes, reverse: bool = False) -> tuple[bytes, bytes] | None:
        """``ReadTxn.first`` in a snapshot of its own, like ``get``."""

    def write(self) -> AbstractContextManager[WriteTxn]:
        """A write transaction, committed when the block exits normally."""

    def close(self) -> None:
        """Release the backend; later calls raise StoreClosedError."""

    def compact(self) -> None:
        """Reclaim space and scrub deleted bytes from disk (may need exclusive use)."""

    def stat(self) -> dict[str, int]:
        """At least ``entries`` and ``used_bytes`` (-1 where the backend cannot tell), for reports."""

    def backup(self, dest: str) -> None:
        """Write a consistent copy of the whole store to ``dest`` while it stays in use."""


# --- LMDB ------------------------------------------------------------------------------------

_log = logger(__name__)
_MIN_MAP = 1 << 20
_GROW_WHEN_USED = 0.75
_REPLAY_ATTEMPTS = 8
_first_of = operator.itemgetter(0)
_PAIR: Final = {2}
_BYTES: Final = {bytes}
_tuple_len = tuple.__len__  # TypeError for anything but a tuple: LMDB's putmulti takes 2-tuples only


def batch_pairs(items: Iterable[tuple[bytes, bytes]]) -> tuple[tuple[bytes, bytes], ...]:
    """``put_many``'s items read once (a caller's iterable too: PostgreSQL's checks used up a
    generator and put nothing), each a (key bytes, value bytes) tuple, checked before any is put:
    StoreError names the first item that is not and what it holds, never its bytes (revQ; a
    None or str value, or a list pair, raised TypeError from LMDB or the driver, after LMDB had
    put the items before it). Two passes in C; the loop runs only to name the bad item."""
    items = tuple(items)
    try:
        if not items or (set(map(_tuple_len, items)) == _PAIR and set(map(type, itertools.chain.from_iterable(items))) == _BYTES):
            return items
    except TypeError:  # an item that is no tuple
        pass
    for i, item in enumerate(items):
        if (problem := _pair_problem(item)) is not None:
            raise StoreError(f"put_many: item {i}: {problem} (expected (key bytes, value bytes))")
    return items  # tuples of a tuple's subclass (a NamedTuple), or bytes of a bytes subclass


def _pair_problem(item: object) -> str | None:
    """What makes ``item`` no (key bytes, value bytes) tuple, by types and counts only, or None."""
    if not isinstance(item, tuple):
        return type(item).__name__
    if len(item) != 2:
        return f"{len(item)} value{'s' if len(item) != 1 else ''}"
    for name, part in zip(("key", "value"), item, strict=True):
        if not isinstance(part, bytes):
            return f"{name} {type(part).__name__}"
    return None


LMDB_MAX_KEY_BYTES = 511  # the bundled LMDB's compile-time limit (Environment.max_key_size())


class _SharedEnv:
    """One lmdb.Environment per path per process, shared by every LMDBStore on that path.

    LMDB may only remap (grow) when no transaction of this process is open, so every
    transaction registers here and a resize waits for the count to reach zero.
    """

    def __init__(self, env: lmdb.Environment, directory: LmdbDirectory, pid: int, durable: bool) -> None:
        self.env = env
        self.directory = directory  # lock.mdb held open, with memdb's lock, as long as env is
        self.pid = pid
        # whether the env was opened with sync=True; a durable store on a non-durable env
        # flushes after each of its commits (tests/engine/test_store.py::test_each_store_keeps_its_own_sync)
        self.durable = durable
        self.refs = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        # One item per open transaction of this process. list.append and list.pop are atomic,
        # so opening and ending a transaction take no lock: an uncontended threading.Lock cost
        # 0.2 µs a section on the benchmark machine, a fifth of a point read. A resize sets
        # ``resizing`` and then waits for the list to empty; a transaction registers and then
        # checks ``resizing``, so either the resize sees it or it sees the resize and steps back
        # (tests/engine/test_store.py::test_transactions_and_resizes_in_many_threads_never_overlap).
        self.active: list[None] = []
        self.resizing = False
        # Only one thread of this process waits for LMDB's writer mutex at a time, and it holds
        # no registered transaction while it waits, so a resize can never wait on a waiter.
        self.write_lock = threading.Lock()
        self.writer_thread = 0  # get_ident() of the thread holding write_lock, 0 if none
        self.closing = False  # the last store of the path is closing it: openers wait (LMDBStore.close)
        self.closed = False  # the environment is closed: a thread that waited on a resize finds it so

    def this_thread_reads(self) -> bool:
        """Whether the calling thread has a read transaction of this env open (through any
        LMDBStore on the path): the map cannot grow under it, so waiting would never end.
        Read from LMDB's reader table, so the per-transaction fast path pays nothing."""
        return self._own_reads(threading.get_ident()) > 0

    def enter(self) -> None:
        """Register a transaction about to begin; waits while a resize is under way."""
        self.active.append(None)
        if self.resizing:
            self._wait_for_resize()

    def _wait_for_resize(self) -> None:
        # A thread that already holds a transaction need not wait: the resize cannot happen
        # before that one ends anyway, and waiting for it would never end.
        while self.resizing and not self.this_thread_reads():
            self.leave()  # step back, so the resize can see the list empty
            with self.cond:
                while self.resizing:
                    self.cond.wait()
            self.active.append(None)

    def leave(self) -> None:
        """Unregister a transaction that ended."""
        self.active.pop()
        if self.resizing:
            with self.cond:
                self.cond.notify_all()

    def close(self, path: str) -> None:
        """Close the environment once no other thread of this process has a transaction open.

        LMDB begins, ends and commits transactions without the GIL, and closing the environment
        under one killed the process (an asyncio database closed while its calls ran in worker
        threads). New transactions wait, then find the store closed (StoreClosedError); the
        open ones are waited for, up to ``_CLOSE_WAIT`` seconds (a snapshot another thread left
        open would otherwise hold the close for ever), then left to raise StoreClosedError at
        their next step. The calling thread's own transactions are not waited for.
        """
        me = threading.get_ident()
        deadline = time.monotonic() + _CLOSE_WAIT
        # no write of another thread under way (bounded: a writer may wait on this thread, for
        # a snapshot it holds to end before the map grows, or for the path it is closing)
        if self.writer_thread == me:
            locked = True
        elif self.resizing and self._own_reads(me):  # a grow waits, holding the lock, for this thread's snapshot
            locked = False
        else:
            locked = self.write_lock.acquire(timeout=_CLOSE_WAIT)
            if not locked:
                _log.warning("store %s closed while another thread's write transaction was still open", path)
        try:
            with self.cond:
                self.resizing = True
                own = self._own_reads(me) + (self.writer_thread == me)
                left = max(0.0, deadline - time.monotonic())
                if not self.cond.wait_for(lambda: len(self.active) <= own, timeout=left):
                    _log.warning("store %s closed with %d transaction(s) of other threads still open", path, len(self.active) - own)
                try:
                    self.env.close()
                finally:
                    self.closed = True
                    self.resizing = False
                    self.cond.notify_all()
        finally:
            if locked and self.writer_thread != me:
                self.write_lock.release()

    def _own_reads(self, thread: int) -> int:
        """How many read transactions the thread ``thread`` has open (LMDB's reader table)."""
        pid, tid = str(os.getpid()), format(thread, "x")
        return sum(
            1 for line in self.env.readers().splitlines()[1:] if (f := line.split()) and len(f) == 3 and f[:2] == [pid, tid] and f[2] != "-"
        )

    def grow(self, path: str, optional: bool = False) -> None:
        """Double the map once no transaction of this process is open (the caller holds none).

        If the calling thread itself holds a snapshot (through another LMDBStore on the same
        path), the map cannot grow until it ends: raise StoreFullError instead of waiting for
        ever, or, if ``optional``, leave the map as it is.
        """
        with self.cond:
            while self.resizing:
                self.cond.wait()
            if self.closed:
                raise StoreClosedError(f"grow map of {path!r}: the store was closed")
            if self.active and self.this_thread_reads():
                if optional:
                    return
                raise StoreFullError(
                    f"grow map of {path!r}: this thread holds an open snapshot of the same path, and the map "
                    "cannot grow under it (end the snapshot before writing this much, or open with a larger map_size)"
                )
            self.resizing = True
            try:
                while self.active and not self.closed:
                    self.cond.wait()
                if self.closed:  # closed while this waited for the snapshots to end
                    raise StoreClosedError(f"grow map of {path!r}: the store was closed")
                size = int(self.env.info()["map_size"]) * 2
                try:
                    self.env.set_mapsize(size)
                except lmdb.Error as exc:
                    _log.error("map of %s could not grow to %d bytes (%s)", path, size, type(exc).__name__)
                    raise StoreFullError(f"grow map of {path!r} to {size} bytes: {exc}") from None
                _log.info("map of %s grown from %d to %d bytes", path, size // 2, size)
            finally:
                self.resizing = False
                self.cond.notify_all()


_CLOSE_WAIT = 10.0  # seconds ``close`` waits for other threads' transactions to end
_MAX_MAP = 1 << 46  # 64 TiB: a larger map cannot be mapped on today's 64-bit machines

_ENVS: dict[str, _SharedEnv] = {}
_ENVS_LOCK = threading.Lock()
_ENVS_CLOSED = threading.Condition(_ENVS_LOCK)  # notified when a closing env leaves _ENVS
_FORKS = [0]  # bumped in a forked child, so stores notice without calling getpid per transaction


@after_fork
def _after_fork_in_child() -> None:
    _FORKS[0] += 1
    global _ENVS_LOCK, _ENVS_CLOSED
    _ENVS_LOCK = threading.Lock()
    _ENVS_CLOSED = threading.Condition(_ENVS_LOCK)


def _open_here(path: str) -> bool:
    """Whether this process has the environment in ``path`` open: then nothing here may open its
    ``lock.mdb`` a second time, as closing that descriptor would drop LMDB's locks (lmdbdir.py)."""
    with _ENVS_LOCK:
        shared = _ENVS.get(os.path.realpath(path))
        return shared is not None and shared.pid == os.getpid()


@contextmanager
def unopened(path: str) -> Iterator[bool]:
    """Whether no process has the LMDB environment in ``path`` open (nor is opening it through
    memdb), keeping its ``lock.mdb`` locked (``take_unopened``) so no open begins until the
    caller is done. One this process has open is open: its ``lock.mdb`` is not opened again."""
    if _open_here(path):
        yield False
        return
    try:
        fd = os.open(os.path.join(path, LOCK), os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:  # LMDB never opened it
        yield True
        return
    try:
        yield take_unopened(fd)
    finally:
        os.close(fd)


# LMDB's own findings of a damaged file (the checks before mapping catch most, not key order)
_DAMAGE = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.InvalidError, lmdb.VersionMismatchError, lmdb.CursorFullError)


def _translate(exc: lmdb.Error, what: str, store: LMDBStore | None = None) -> StoreError:
    if store is not None and store._closed:
        return StoreClosedError(f"{what}: store {store.path!r} was closed while a transaction was open")
    if isinstance(exc, lmdb.MapFullError):
        return StoreFullError(f"{what}: the LMDB map is full and could not grow ({exc})")
    if isinstance(exc, _DAMAGE):
        where = f" of {store.path!r}" if store is not None else ""
        return CorruptionError(f"{what}{where}: damaged: LMDB error {type(exc).__name__}: {exc} ({CorruptionError.HINT})")
    # a full disk or the file-size limit, which LMDB reports as EIO from a write cut short
    hint = write_failure(str(exc), store.path, os.path.join(store.path, DATA)) if store is not None else ""
    return StoreError(with_hint(f"{what}: LMDB error {type(exc).__name__}: {exc}", hint))


# py-lmdb returns bytes (buffers=False, the default); its stubs say bytes | memoryview.


def _scan(txn: lmdb.Transaction, lo: bytes, hi: bytes, reverse: bool, store: LMDBStore) -> Iterator[tuple[bytes, bytes]]:
    # One generator, not a translating one around the cursor loop: each item then passes
    # one frame instead of two, about 40 ns of the 250 an item costs.
    try:
        if lo >= hi:
            return
        cur: Any
        with txn.cursor() as cur:
            if not reverse:
                if not cur.set_range(lo):
                    return
                if cur.key() < lo:
                    raise _disorder(cur.key(), lo, hi)
                last = b""  # below every key: keys are never empty
                for key, value in cur:
                    if key >= hi:
                        return
                    if key <= last:
                        raise _disorder(key, lo, hi)
                    last = key
                    yield key, value
            else:
                if cur.set_range(hi):
                    ok = cur.prev()
                else:
                    ok = cur.last()
                ceiling = hi
                while ok:
                    key = cur.key()
                    if key < lo:
                        return
                    if key >= ceiling:
                        raise _disorder(key, lo, hi)
                    ceiling = key
                    yield key, cur.value()
                    ok = cur.prev()
    except lmdb.Error as exc:
        raise _translate(exc, "scan", store) from None


def _disorder(key: bytes, lo: bytes, hi: bytes) -> CorruptionError:
    """A seek or step that left its range or went backwards: the file's keys are out of order
    (a damaged byte the page checks cannot see). Raised, so that a loop seeking past each key
    it saw always moves on (tests/engine/test_damaged_files.py)."""
    return CorruptionError(
        f"scan from {lo[:40]!r} to {hi[:40]!r}: damaged: LMDB gave key {key[:40]!r} out of order ({CorruptionError.HINT})"
    )


def _scan_keys(txn: lmdb.Transaction, lo: bytes, hi: bytes, reverse: bool, limit: int | None) -> list[bytes]:
    if lo >= hi or (limit is not None and limit <= 0):
        return []
    cur: Any
    with txn.cursor() as cur:
        return _keys_from(cur, lo, hi, reverse, limit)


def _keys_from(cur: Any, lo: bytes, hi: bytes, reverse: bool, limit: int | None) -> list[bytes]:
    # one pass of C loops over the keys (see _scan_columns), the range checked as it is read
    if reverse:
        if not (cur.prev() if cur.set_range(hi) else cur.last()):
            return []
        above_lo = functools.partial(operator.le, lo)
        keys = list(itertools.islice(itertools.takewhile(above_lo, cur.iterprev(keys=True, values=False)), limit))
        if keys:
            if keys[0] >= hi:
                raise _disorder(keys[0], lo, hi)
            _check_order(keys, operator.gt, lo, hi)
    else:
        if not cur.set_range(lo):
            return []
        below_hi = functools.partial(operator.gt, hi)
        keys = list(itertools.islice(itertools.takewhile(below_hi, cur.iternext(keys=True, values=False)), limit))
        if keys:
            if keys[0] < lo:
                raise _disorder(keys[0], lo, hi)
            _check_order(keys, operator.lt, lo, hi)
    return keys


def _scan_columns(txn: lmdb.Transaction, lo: bytes, hi: bytes, reverse: bool, limit: int | None) -> tuple[list[bytes], list[bytes]]:
    # Keys, then values, each collected by C loops (py-lmdb's iterator, takewhile, islice):
    # about 0.17 µs per item (measured on 2,053 index entries) against about 0.5 µs for a
    # Python loop over scan(). The bound is a partial of operator's comparison, not the
    # method-wrapper hi.__gt__: 39 ns a key against 65 (and operator.lt checks the order in
    # 21 ns a key, bytes.__lt__ in 110). Both passes use one cursor: a second one was a
    # tenth of a five-key read (3.4 -> 3.1 µs).
    if lo >= hi or (limit is not None and limit <= 0):
        return [], []
    cur: Any
    with txn.cursor() as cur:
        keys = _keys_from(cur, lo, hi, reverse, limit)
        if not keys:
            return [], []
        cur.set_key(keys[0])  # the first key the first pass took, from either end
        step = cur.iterprev if reverse else cur.iternext
        values = list(itertools.islice(step(keys=False, values=True), len(keys)))
    return keys, values


def _get_many(txn: lmdb.Transaction, keys: list[bytes]) -> dict[bytes, bytes]:
    get = txn.get
    return {k: v for k in keys if (v := get(k)) is not None}


def _check_order(keys: list[bytes], before: Any, lo: bytes, hi: bytes) -> None:
    """Raise what ``scan`` raises if ``keys`` (in scan order) are not strictly ordered by
    ``before``: the first key out of order, so both scans report one damage alike
    (tests/engine/test_damaged_files.py). One C loop over adjacent pairs."""
    if not all(map(before, keys, itertools.islice(keys, 1, None))):
        bad = next(i for i in range(1, len(keys)) if not before(keys[i - 1], keys[i]))
        raise _disorder(keys[bad], lo, hi)


def _first(txn: lmdb.Transaction, lo: bytes, hi: bytes, reverse: bool) -> tuple[bytes, bytes] | None:
    if lo >= hi:
        return None
    cur: Any = txn.cursor()
    try:
        if not reverse:
            if not cur.set_range(lo):
                return None
            key = cur.key()
            if key < lo:
                raise _disorder(key, lo, hi)
            return (key, cur.value()) if key < hi else None
        ok = cur.prev() if cur.set_range(hi) else cur.last()
        if not ok:
            return None
        key = cur.key()
        if key >= hi:
            raise _disorder(key, lo, hi)
        return (key, cur.value()) if key >= lo else None
    finally:
        cur.close()


class _LMDBRead:
    """A read snapshot; also its own context manager, to keep the per-read overhead small."""

    __slots__ = ("_store", "_txn")

    def __init__(self, store: LMDBStore) -> None:
        self._store = store
        self._txn: Any = None  # an lmdb.Transaction while inside the block

    def __enter__(self) -> _LMDBRead:
        self._txn = self._store._begin(write=False)
        return self

    def __exit__(self, *exc: object) -> None:
        store = self._store
        txn, self._txn = self._txn, None
        try:
            if txn is not None:
                txn.abort()
        except lmdb.Error as err:
            raise _translate(err, "end of snapshot", store) from None
        finally:
            # py-lmdb ends a read transaction it reset at abort when the object is freed: the
            # last reference goes while the snapshot is still registered, so a close() waiting
            # for it can never free the environment under that (it killed the process)
            del txn
            store._shared.leave()

    # Every call translates LMDB errors: the store may be closed (another thread shutting
    # down) while the snapshot is open (tests/engine/test_store.py::test_closing_during_a_transaction_raises_store_closed).
    def get(self, key: bytes) -> bytes | None:
        try:
            value: bytes | None = self._txn.get(key)
        except lmdb.Error as exc:
            raise _translate(exc, "get", self._store) from None
        return value

    def first(self, lo: bytes, hi: bytes, reverse: bool = False) -> tuple[bytes, bytes] | None:
        try:
            return _first(self._txn, lo, hi, reverse)
        except lmdb.Error as exc:
            raise _translate(exc, "first", self._store) from None

    def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]:
        try:
            return _get_many(self._txn, keys)
        except lmdb.Error as exc:
            raise _translate(exc, "get_many", self._store) from None

    def scan(self, lo: bytes, hi: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        return _scan(self._txn, lo, hi, reverse, self._store)

    def scan_columns(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> tuple[list[bytes], list[bytes]]:
        try:
            return _scan_columns(self._txn, lo, hi, reverse, limit)
        except lmdb.Error as exc:
            raise _translate(exc, "scan_columns", self._store) from None

    def scan_keys(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> list[bytes]:
        try:
            return _scan_keys(self._txn, lo, hi, reverse, limit)
        except lmdb.Error as exc:
            raise _translate(exc, "scan_keys", self._store) from None


class _LMDBWrite:
    """A write transaction that can be replayed into a larger map when LMDB reports MDB_MAP_FULL.

    Every write is appended to an operation log. On map-full the whole LMDB transaction
    (and its open savepoints) is aborted, the map doubled, and the log replayed, but only
    if no other writer committed in between (same transaction id); otherwise the caller
    gets TransactionConflictError, never a silently different result.
    """

    __slots__ = ("_log", "_marks", "_start_id", "_store", "_txns")

    def __init__(self, store: LMDBStore, txn: lmdb.Transaction) -> None:
        self._store = store
        self._txns = [txn]
        # (op, key, value or range end), or put_many's (3, key, value, key, value, ...): a batch's keys
        # and values flat in one tuple of bytes, which the cyclic GC stops tracking at its first pass.
        # A tuple of the batch's pairs in it kept each pair alive until the commit (counted toward the
        # GC's next pass: one every ~20 records of a batched capture), and nested so, the entry stayed
        # tracked into the GC's oldest generation, one a batch, and set off its passes over the whole
        # heap (test_capture_gc.py)
        self._log: list[tuple[Any, ...]] = []
        self._marks: list[int] = []
        self._start_id = txn.id()

    @property
    def _txn(self) -> lmdb.Transaction:
        return self._txns[-1]

    def get(self, key: bytes) -> bytes | None:
        try:
            value: bytes | None = self._txns[-1].get(key)
        except lmdb.Error as exc:
            raise _translate(exc, "get", self._store) from None
        return value

    def scan(self, lo: bytes, hi: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        return _scan(self._txns[-1], lo, hi, reverse, self._store)

    def scan_columns(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> tuple[list[bytes], list[bytes]]:
        try:
            return _scan_columns(self._txns[-1], lo, hi, reverse, limit)
        except lmdb.Error as exc:
            raise _translate(exc, "scan_columns", self._store) from None

    def scan_keys(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> list[bytes]:
        try:
            return _scan_keys(self._txns[-1], lo, hi, reverse, limit)
        except lmdb.Error as exc:
            raise _translate(exc, "scan_keys", self._store) from None

    def first(self, lo: bytes, hi: bytes, reverse: bool = False) -> tuple[bytes, bytes] | None:
        try:
            return _first(self._txns[-1], lo, hi, reverse)
        except lmdb.Error as exc:
            raise _translate(exc, "first", self._store) from None

    def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]:
        try:
            return _get_many(self._txns[-1], keys)
        except lmdb.Error as exc:
            raise _translate(exc, "get_many", self._store) from None

    def put(self, key: bytes, value: bytes) -> None:
        self._log.append((0, key, value))
        try:
            self._txns[-1].put(key, value)
        except lmdb.MapFullError:
            self._retry_after_growth()
            self.put(key, value)
        except lmdb.BadValsizeError:
            self._log.pop()
            raise StoreError(f"put: key of {len(key)} bytes is empty or longer than LMDB allows ({key[:40]!r}...)") from None
        except lmdb.Error as exc:
            self._log.pop()
            raise _translate(exc, "put", self._store) from None

    def put_many(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        if not items:
            return
        # Checked before the first put: LMDB would stop half-way, with the log not knowing where.
        items = batch_pairs(items)  # what is put is what is logged
        sizes = list(map(len, map(_first_of, items)))
        if not min(sizes) or max(sizes) > LMDB_MAX_KEY_BYTES:
            bad = next(k for k, _ in items if not k or len(k) > LMDB_MAX_KEY_BYTES)
            raise StoreError(f"put_many: key of {len(bad)} bytes is empty or longer than LMDB allows ({bad[:40]!r}...)")
        try:
            with self._txns[-1].cursor() as cur:
                cur.putmulti(items)
        except lmdb.MapFullError:
            self._grow_and_replay()  # the log holds everything before this batch: replay, then redo it whole
            self.put_many(items)
            return
        except lmdb.Error as exc:
            raise _translate(exc, "put_many", self._store) from None
        self._log.append((3, *itertools.chain.from_iterable(items)))  # logged once put, flat (``_log``)

    def delete(self, key: bytes) -> bool:
        self._log.append((1, key, b""))
        try:
            return bool(self._txns[-1].delete(key))
        except lmdb.MapFullError:
            self._retry_after_growth()
            return self.delete(key)
        except lmdb.Error as exc:
            self._log.pop()
            raise _translate(exc, "delete", self._store) from None

    def delete_range(self, lo: bytes, hi: bytes) -> int:
        self._log.append((2, lo, hi))
        try:
            return self._delete_range(self._txns[-1], lo, hi)
        except lmdb.MapFullError:
            self._retry_after_growth()
            return self.delete_range(lo, hi)
        except lmdb.Error as exc:
            self._log.pop()
            raise _translate(exc, "delete_range", self._store) from None

    def _retry_after_growth(self) -> None:
        """Drop the failed operation from the log, grow and replay the rest; the caller retries
        the operation on the new transaction, so it returns its real result."""
        self._log.pop()
        self._grow_and_replay()

    @staticmethod
    def _delete_range(txn: lmdb.Transaction, lo: bytes, hi: bytes) -> int:
        count = 0
        if lo >= hi:
            return 0
        cur: Any
        with txn.cursor() as cur:
            if not cur.set_range(lo):
                return 0
            while True:
                key = cur.key()  # b"" once the cursor ran off the end
                if not key or key >= hi:
                    return count
                cur.delete()  # deletes and moves to the next item
                count += 1

    @contextmanager
    def savepoint(self) -> Iterator[_LMDBWrite]:
        try:
            child = self._store._env.begin(write=True, parent=self._txns[-1])
        except lmdb.Error as exc:
            raise _translate(exc, "savepoint", self._store) from None
        self._txns.append(child)
        self._marks.append(len(self._log))
        try:
            yield self
        except BaseException:
            self._txns.pop().abort()
            del self._log[self._marks.pop() :]
            raise
        else:
            self._txns.pop().commit()
            self._marks.pop()

    def _grow_and_replay(self) -> None:
        store = self._store
        for _attempt in range(_REPLAY_ATTEMPTS):
            for txn in reversed(self._txns[1:]):
                txn.abort()
            store._end(self._txns[0])
            self._txns = []
            store._grow()
            top = store._begin(write=True)
            if top.id() != self._start_id:
                store._end(top)
                raise TransactionConflictError(
                    "write: the map had to grow mid-transaction and another writer committed meanwhile (retry the transaction)"
                )
            txns = [top]
            try:
                bounds = [*self._marks, len(self._log)]
                start = 0
                for depth, end in enumerate(bounds):
                    if depth:
                        txns.append(store._env.begin(write=True, parent=txns[-1]))
                    for entry in self._log[start:end]:
                        op = entry[0]
                        if op == 0:
                            txns[-1].put(entry[1], entry[2])
                        elif op == 3:
                            with txns[-1].cursor() as cur:
                                cur.putmulti(zip(entry[1::2], entry[2::2], strict=True))
                        elif op == 1:
                            txns[-1].delete(entry[1])
                        else:
                            self._delete_range(txns[-1], entry[1], entry[2])
                    start = end
            except lmdb.MapFullError:
                self._txns = txns
                continue
            self._txns = txns
            return
        raise StoreFullError(f"write: the transaction still does not fit after growing the map {_REPLAY_ATTEMPTS} times")

    def _commit(self) -> None:
        if not self._txns:
            raise StoreError("commit: the transaction was already closed after a failure")
        store = self._store
        try:
            try:
                self._txns[0].commit()
            except lmdb.MapFullError:
                self._grow_and_replay()
                self._txns[0].commit()
            if store._sync and not store._shared.durable:
                # the env was opened with sync=False by another store on this path: this one
                # still promises that committed means on disk (still registered, so no compact
                # or resize can close the env under the flush)
                store._shared.env.sync(True)
        except lmdb.Error as exc:
            store._shared.leave()
            self._txns = []
            raise _translate(exc, "commit", store) from None
        except BaseException:
            self._abort()
            raise
        self._store._shared.leave()
        self._txns = []

    def _abort(self) -> None:
        if not self._txns:
            return
        txns, self._txns = self._txns, []
        try:
            for txn in reversed(txns[1:]):
                txn.abort()
        except lmdb.Error:
            pass  # the env was closed under the transaction: nothing left to abort
        try:
            self._store._end(txns[0])
        except lmdb.Error as exc:
            raise _translate(exc, "abort", self._store) from None


_PARTIAL = "data.mdb.partial"  # a backup's copy until it is whole
_BUSY = "another backup is writing there (give a new directory; nothing was written)"
_COMPACT_READERS = 126  # the readers of compaction's own environment (LMDB's default): one reads


def _remove_leftover(dest: str) -> None:
    """Unlink the partial copy of a backup that was killed, found alone in ``dest``; StoreError
    when a backup is writing it still (it holds the file's flock)."""
    partial = os.path.join(dest, _PARTIAL)
    fd = os.open(partial, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"backup to {dest!r}: {_BUSY}") from None
        os.unlink(partial)
    finally:
        os.close(fd)


def _left_after_failure(dest: str, partial: str, made: bool) -> str:
    """What a failed backup left in ``dest`` (its own copy is removed by ``_copy_to``), removing
    ``dest`` if this backup made it and it is empty."""
    if os.path.lexists(partial):
        return f"a partial copy {partial!r} (0600) is there: another backup's, or this one's if it could not be removed"
    if made:
        try:
            os.rmdir(dest)
        except OSError:
            return f"the directory {dest!r} was left"
        return "nothing was left"
    return f"nothing was left in {dest!r}"


def _check_owner(path: str, old: os.stat_result) -> None:
    """StoreError unless this process can give compaction's new data.mdb the owner and group
    of ``old``: the rewrite is a new file, its creator's, and a file the database's owner may
    not open locks them out."""
    if os.geteuid() == 0:
        return
    if old.st_uid != os.geteuid() or (old.st_gid != os.getegid() and old.st_gid not in os.getgroups()):
        raise StoreError(
            f"compact {path!r}: {DATA} belongs to uid {old.st_uid} (group {old.st_gid}), and this process "
            f"(uid {os.geteuid()}) cannot give the rewritten file to them (compact as its owner; nothing was changed)"
        )


class LMDBStore:
    """The embedded default: one LMDB environment in a directory.

    ``sync=True`` (default) means a committed transaction is on disk. ``sync=False`` skips
    the fsync at commit: much faster writes, and a process crash still loses nothing, but an
    operating-system crash or power loss may lose the most recent commits, and, on a file
    system that does not keep the order of writes, corrupt the database (LMDB's MDB_NOSYNC).
    The map starts at ``map_size`` bytes and doubles whenever it fills.

    ``mode`` (default 0o600) is the mode of the database's files, set at every open where
    this process owns them; the directory gets it with search bits (0o700), when memdb
    creates it or it holds nothing but the database. None leaves modes to the umask.

    ``create=False`` opens an existing database only (NotFoundError where there is none): a
    reader that mistypes a path must not find "nothing" in a database it just made.

    ``verify``: with True, the first process to open the directory (nobody else has it open)
    checks every page of ``data.mdb`` before LMDB maps it, so a damaged file raises
    CorruptionError instead of killing the process with SIGBUS or SIGSEGV; it costs about
    0.5 µs per entry. None (the default) does so for a file up to ``DEEP_CHECK_BYTES``
    (64 MiB) and keeps a larger database's opens fast; False never does. Every open checks
    the meta pages and that the file holds every page they may reach (a cut file is always
    caught); a page-level flip in a large file is caught by ``verify=True``.

    Stores on one path in one process share one environment: a later store adopts the
    current map size (it grows anyway), and each keeps its own ``sync``: a ``sync=True``
    store on an environment first opened with ``sync=False`` flushes after each of its
    commits, so committed still means on disk for it; the reverse gets durable commits.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        map_size: int = 64 << 20,
        sync: bool = True,
        max_readers: int = 126,
        mode: int | None = DEFAULT_MODE,
        verify: bool | None = None,
        create: bool = True,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise ConfigError(f"path {path!r}: give the directory of the database (a non-empty str or path)")
        if "\x00" in os.fsdecode(os.fspath(path)):
            raise ConfigError("path: holds a NUL character (no file system takes one)")
        for name, value, top in (("map_size", map_size, _MAX_MAP), ("max_readers", max_readers, 1 << 20)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise ConfigError(f"{name} {value!r}: a positive int, at most {top:,}")
        for name, flag in (("sync", sync), ("verify", verify), ("create", create)):
            if not isinstance(flag, bool) and not (name == "verify" and flag is None):
                raise ConfigError(f"{name} {flag!r}: True or False (a truthy string would not say which)")
        self._mode = check_mode(mode)
        self.path = os.path.realpath(os.fspath(path))
        if not create and not holds_database(self.path):  # StoreError where this process may not look
            what = "no such directory" if not os.path.exists(self.path) else "no database there"
            raise NotFoundError(f"path {os.fspath(path)}: {what} (create=False opens an existing database only)")
        self._closed = False
        self._sync = sync
        self._verify = verify
        self._map_size = max(int(map_size), _MIN_MAP)
        self._max_readers = max_readers
        self._forks = _FORKS[0]
        self._shared = self._acquire()

    def _acquire(self) -> _SharedEnv:
        pid = os.getpid()
        with _ENVS_CLOSED:
            shared = _ENVS.get(self.path)
            while shared is not None and shared.closing and shared.pid == pid:
                if shared.writer_thread == threading.get_ident():  # it waits for this thread: never for it
                    raise StoreClosedError(f"open {self.path!r}: the store is closing while this thread writes to it")
                _ENVS_CLOSED.wait()
                shared = _ENVS.get(self.path)
            if shared is None or shared.pid != pid:
                # A child after fork must not touch the parent's environment: open its own.
                env, directory = self._open_env(self._verify)
                shared = _SharedEnv(env, directory, pid, self._sync)
                _ENVS[self.path] = shared
            shared.refs += 1
            return shared

    def _open_env(self, verify: bool | None) -> tuple[lmdb.Environment, LmdbDirectory]:
        """Lock the directory, check data.mdb (every page if ``verify`` and no other process has
        it open), then let LMDB map it. The order matters: see memdb/engine/lmdbdir.py."""
        directory = LmdbDirectory(self.path, self._mode, self._max_readers)
        env: lmdb.Environment | None = None
        try:
            directory.check_data(deep=verify if directory.first else False)  # None: by size (DEEP_CHECK_BYTES)
            try:
                env = self._lmdb_open(directory)
            except StoreError as exc:
                if not directory.creating:
                    raise
                # a new database LMDB could not make (a full disk): what it left would be
                # refused as damaged ever after (tests/engine/test_disk_full.py)
                raise type(exc)(with_hint(exc.args[0], directory.discard())) from None
            directory.check_opened()
            if directory.first:
                directory.share()
            return env, directory
        except BaseException:
            if env is not None:
                env.close()
            directory.close()
            raise

    def _lmdb_open(self, directory: LmdbDirectory) -> lmdb.Environment:
        # A writer in another process that adds pages beyond this map between LMDB's reading
        # of the meta page and py-lmdb's first transaction fails the open with MDB_MAP_RESIZED
        # (seen while opening in a loop beside a writer): open again with a map that holds them.
        size = self._map_size
        for _ in range(_REPLAY_ATTEMPTS):
            try:
                return lmdb.open(
                    self.path,
                    map_size=size,
                    subdir=True,
                    sync=self._sync,
                    metasync=self._sync,
                    max_dbs=0,
                    max_readers=self._max_readers,
                    # the OS reads ahead on a fault: a cold query reads an index range and its
                    # headers, which lie together, in a few reads instead of a read a page (1M
                    # episodes, the page cache dropped: time+tag p50 2.9-7.6 -> 1.6-1.8 ms; warm,
                    # no change). LMDB advises against it only for a file larger than free memory
                    readahead=True,
                    mode=0o755 if self._mode is None else self._mode,  # py-lmdb drops execute bits for files
                )
            except lmdb.MapResizedError:
                size = max(size * 2, directory.used_bytes())
            except lmdb.Error as exc:
                if isinstance(exc, _DAMAGE):
                    raise _translate(exc, "open", self) from None
                hint = write_failure(str(exc), self.path, os.path.join(self.path, DATA))
                raise StoreError(with_hint(f"open {self.path!r}: {type(exc).__name__}: {exc}", hint)) from None
        raise StoreError(f"open {self.path!r}: other processes kept growing the map while it was being opened (open it again)")

    @property
    def _env(self) -> lmdb.Environment:
        if self._forks != _FORKS[0] or self._closed:
            self._check_usable()
        return self._shared.env

    def _check_usable(self) -> None:
        if self._closed:
            raise StoreClosedError(f"store {self.path!r}: closed")
        if self._forks != _FORKS[0]:
            self._forks = _FORKS[0]
            self._shared = self._acquire()

    @property
    def map_size(self) -> int:
        """The current map size in bytes."""
        return int(self._env.info()["map_size"])

    def _grow(self) -> None:
        self._env  # noqa: B018 -- raises if closed, reacquires after fork
        self._shared.grow(self.path)

    def _begin(self, write: bool) -> lmdb.Transaction:
        """Begin a transaction registered with the shared env; the caller must _end it."""
        env = self._env
        shared = self._shared
        shared.enter()
        try:
            for _ in range(3):
                try:
                    return env.begin(write=write)
                except lmdb.MapResizedError:
                    # Another process grew the map: adopt its size once no transaction of this
                    # process is open (unless this thread holds one itself: it would wait for ever).
                    shared.leave()
                    with shared.cond:
                        blocked = bool(shared.active) and shared.this_thread_reads()
                        if not blocked:
                            shared.resizing = True
                            while shared.active:
                                shared.cond.wait()
                            try:
                                env.set_mapsize(0)
                            finally:
                                shared.resizing = False
                                shared.cond.notify_all()
                    shared.enter()
                    if blocked:
                        raise StoreError(
                            f"begin on {self.path!r}: another process grew the map, and this thread holds an open "
                            "snapshot of the same path that the new size cannot be adopted under (end it first)"
                        ) from None
                except lmdb.Error as exc:
                    raise _translate(exc, "begin", self) from None
        except BaseException:
            shared.leave()
            raise
        shared.leave()
        raise StoreError(f"begin on {self.path!r}: the map kept being resized by other processes")

    def _end(self, txn: lmdb.Transaction | None, commit: bool = False) -> None:
        try:
            if txn is not None:
                if commit:
                    txn.commit()
                else:
                    txn.abort()
        finally:
            self._shared.leave()

    def _maybe_grow_ahead(self) -> None:
        env = self._env
        info = env.info()
        used = (info["last_pgno"] + 1) * env.stat()["psize"]
        if used > info["map_size"] * _GROW_WHEN_USED:
            self._shared.grow(self.path, optional=True)  # opportunistic: skipped under this thread's own snapshot

    def read(self) -> _LMDBRead:
        return _LMDBRead(self)

    def get(self, key: bytes) -> bytes | None:
        # read() and get() in one frame: a point read in its own snapshot is most of what
        # Global.get costs outside a transaction, and the context manager's five Python calls
        # cost as much as LMDB's lookup. Anything unusual (a resize under way, an error at
        # begin) takes read(), which waits, adopts a new map size and translates.
        if self._forks != _FORKS[0] or self._closed:
            self._check_usable()
        shared = self._shared
        shared.active.append(None)  # shared.enter(), not resizing
        if not shared.resizing:
            try:
                txn = shared.env.begin()
            except lmdb.Error:
                txn = None
            if txn is not None:
                try:
                    try:
                        value: bytes | None = txn.get(key)
                    finally:
                        txn.abort()  # a read-only transaction goes back to py-lmdb for reuse
                        del txn  # freed while registered (_LMDBRead.__exit__)
                except lmdb.Error as exc:
                    raise _translate(exc, "get", self) from None
                finally:
                    shared.active.pop()  # shared.leave()
                    if shared.resizing:
                        with shared.cond:
                            shared.cond.notify_all()
                return value
        shared.leave()
        with self.read() as t:
            return t.get(key)

    def first(self, lo: bytes, hi: bytes, reverse: bool = False) -> tuple[bytes, bytes] | None:
        # read() and first() in one call, like get: each step of an M $ORDER or $QUERY loop
        # outside a snapshot is one of these
        txn = self._begin_one()
        if txn is None:
            with self.read() as t:
                return t.first(lo, hi, reverse)
        try:
            try:
                return _first(txn, lo, hi, reverse)
            finally:
                txn.abort()
                del txn  # freed while registered (_LMDBRead.__exit__)
        except lmdb.Error as exc:
            raise _translate(exc, "first", self) from None
        finally:
            self._shared.leave()

    def _begin_one(self) -> lmdb.Transaction | None:
        """A registered read transaction for one call (``get`` does the same inline), or None
        when anything is unusual: the caller then takes read(), which waits, adopts a new map
        size and translates errors."""
        if self._forks != _FORKS[0] or self._closed:
            self._check_usable()
        shared = self._shared
        shared.enter()
        if not shared.resizing:
            try:
                return shared.env.begin()
            except lmdb.Error:
                pass
        shared.leave()
        return None

    @contextmanager
    def write(self) -> Iterator[_LMDBWrite]:
        self._env  # noqa: B018 -- raises if closed, reacquires after fork
        shared = self._shared
        me = threading.get_ident()
        if shared.writer_thread == me:  # write_lock is not reentrant: this would wait for itself
            raise StoreError(
                f"write on {self.path!r}: this thread already has a write transaction open on the same path (nest it as a savepoint)"
            )
        with shared.write_lock:
            shared.writer_thread = me
            try:
                self._maybe_grow_ahead()
                w = _LMDBWrite(self, self._begin(write=True))
                try:
                    yield w
                except BaseException:
                    w._abort()
                    raise
                w._commit()
            finally:
                shared.writer_thread = 0

    def backup(self, dest: str) -> None:
        """Copy the environment into ``dest``, a new or empty directory made private (0700, the
        file 0600), as of one snapshot while writers go on: LMDB's own copy, without free pages.

        The copy is written to ``data.mdb.partial``, 0600 before its first byte, and renamed to
        ``data.mdb`` once whole: a failed copy (a full disk) is removed, with the directory if
        this made it, and the error says what was left; a directory holding only the partial
        copy of a backup that was killed is used again. StoreError names a ``dest`` that holds
        anything else (tests/engine/test_backup_files.py)."""
        dest = os.fspath(dest)
        made = False
        try:
            try:
                os.makedirs(dest, mode=0o700)
                made = True
            except FileExistsError:
                pass  # a file there: listdir says so
            there = os.listdir(dest)
            if there == [_PARTIAL] and stat.S_ISREG(os.lstat(os.path.join(dest, _PARTIAL)).st_mode):
                _remove_leftover(dest)  # a killed backup's, unless another backup is writing it
            elif there:
                raise StoreError(f"backup to {dest!r}: the directory is not empty (give a new one; nothing was written)")
            os.chmod(dest, 0o700)
        except OSError as exc:
            raise StoreError(f"backup to {dest!r}: {exc.strerror or exc}") from None
        partial = os.path.join(dest, _PARTIAL)
        try:
            self._copy_to(partial, dest)
            fsync_dir(dest)
        except (StoreError, OSError) as exc:
            left = _left_after_failure(dest, partial, made)
            if isinstance(exc, StoreError):
                raise type(exc)(with_hint(exc.args[0], left)) from None
            hint = with_hint(write_failure(exc.strerror or str(exc), dest, partial), left)
            raise StoreError(with_hint(f"backup to {dest!r}: {exc.strerror or exc}", hint)) from None

    def _copy_to(self, path: str, dest: str) -> None:
        """LMDB's compacting copy into a new file at ``path``, private before its first byte,
        synced, then renamed to ``dest``'s data.mdb. The file is locked (flock) while written, so
        another backup into ``dest`` never takes it for a killed one's leftover, and it is renamed
        only while ``path`` is still this file: two backups into one directory made a half copy
        the one reported whole (a review's find; tests/engine/test_backup_files.py)."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError:
            raise StoreError(f"backup to {dest!r}: {_BUSY}") from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.fchmod(fd, 0o600)  # exactly, whatever the umask
            env = self._env
            shared = self._shared
            shared.enter()  # the copy reads in a transaction of its own: no resize may run under it
            try:
                env.copyfd(fd, compact=True)
            except lmdb.Error as exc:
                hint = write_failure(str(exc), dest, path)
                raise StoreError(with_hint(f"backup to {dest!r}: LMDB error {type(exc).__name__}: {exc}", hint)) from None
            finally:
                shared.leave()
            os.fsync(fd)
            if os.lstat(path).st_ino != os.fstat(fd).st_ino:
                raise StoreError(f"backup to {dest!r}: another backup replaced this one's copy (one backup into a directory at a time)")
            os.replace(path, os.path.join(dest, DATA))
        except BaseException:
            with contextlib.suppress(OSError):
                if os.lstat(path).st_ino == os.fstat(fd).st_ino:
                    os.unlink(path)  # this copy, never another backup's of the same name (a review's find)
            raise
        finally:
            os.close(fd)

    def compact(self) -> None:
        """Rewrite the environment into fresh pages, so deleted bytes leave the file.

        LMDB neither zeroes freed pages nor the space a deleted node leaves inside a live
        page, and its own compacting copy copies pages as they are. So this is a logical
        rewrite: every item, in key order, appended into a new environment (whose pages LMDB
        zero-fills) in a ``.compact`` directory of its own, which then replaces ``data.mdb``.

        It waits until no transaction of this process is open, and needs exclusive use: if
        another process has the database open, StoreBusyError names it. From that check to
        the swap, memdb's exclusive lock keeps every other opener waiting, so no commit can
        land in the file being replaced (tests/engine/test_compaction.py).
        """
        env = self._env
        shared = self._shared
        directory = shared.directory
        with shared.write_lock, shared.cond:
            shared.resizing = True  # blocks new transactions in this process
            try:
                while shared.active:
                    shared.cond.wait()
                directory.exclusive()
                self._rewrite(env, shared, directory)
            finally:
                shared.resizing = False
                shared.cond.notify_all()

    def _rewrite(self, env: lmdb.Environment, shared: _SharedEnv, directory: LmdbDirectory) -> None:
        """Copy every item into a fresh environment in ``.compact``, swap its data.mdb in and
        map it; with exclusive use held (``directory.exclusive``), which this gives back."""
        target = os.path.join(self.path, DATA)
        old = os.stat(target)
        mode = self._mode if self._mode is not None else stat.S_IMODE(old.st_mode)
        swapped = scratch = False
        try:
            _check_owner(self.path, old)
            # The copy holds at most the pages the data fills now (appended, they come out full),
            # and two meta pages, beside its lock.mdb. Not the file's size: its free pages are what
            # compaction on a nearly full disk is run to give back.
            live = env.stat()
            need = (live["branch_pages"] + live["leaf_pages"] + live["overflow_pages"] + 2) * live["psize"]
            check_room(self.path, need + lock_bytes(_COMPACT_READERS), f"compact {self.path!r}")
            made = os.path.join(directory.make_scratch(mode, _COMPACT_READERS), DATA)
            scratch = True
            try:
                fresh = lmdb.open(
                    os.path.dirname(made), map_size=int(env.info()["map_size"]), subdir=True, sync=True, max_dbs=0, meminit=True, mode=mode,
                    max_readers=_COMPACT_READERS,
                )  # fmt: skip
                try:
                    with env.begin() as src, fresh.begin(write=True) as dst:
                        cur: Any
                        with src.cursor() as cur:
                            for key, value in cur:
                                dst.put(key, value, append=True)
                finally:
                    fresh.close()
            except lmdb.Error as exc:
                raise _translate(exc, "compact", self) from None
            fd = os.open(made, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.fchmod(fd, mode)
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    # compacted by root (sudo, cron) or a member of its group: the file stays its owner's
                    # (tests/engine/test_compaction.py::test_compaction_by_root_keeps_the_files_owner)
                    try:
                        os.fchown(fd, old.st_uid, old.st_gid)
                    except OSError as exc:  # root without CAP_CHOWN (a user namespace, NFS root squash)
                        raise StoreError(
                            f"compact {self.path!r}: cannot give the rewritten {DATA} to uid {old.st_uid} (group {old.st_gid}): "
                            f"{exc.strerror or exc} (compact as its owner; nothing was changed)"
                        ) from None
            finally:
                os.close(fd)
            if not directory.scratch_is_ours():
                raise StoreError(f"compact {self.path!r}: .compact was replaced during the copy; nothing was swapped (compact again)")
            os.replace(made, target)  # a rename: replaces the entry itself, never follows a link
            swapped = True
        finally:
            try:
                if swapped:
                    self._remap(env, shared, directory)
                else:
                    directory.share_lmdb()  # nothing swapped: the environment goes on as it was
            finally:
                if scratch:
                    directory.remove_scratch()
        fsync_dir(self.path)  # the swap survives a crash too

    def _remap(self, env: lmdb.Environment, shared: _SharedEnv, directory: LmdbDirectory) -> None:
        """After the swap: LMDB must map the new file. Closing the environment drops every lock
        this process held on lock.mdb (other openers may come in now: they see the new file);
        the new file needs no walk, this process wrote it."""
        env.close()
        try:
            directory.relock()
            shared.env = self._lmdb_open(directory)
            directory.data_identity = None
            directory.check_opened()
        except BaseException:
            self._closed = True  # the old environment is gone; nothing can go on
            raise
        shared.durable = self._sync

    def sync(self) -> None:
        """Flush to disk (useful with ``sync=False``)."""
        self._env.sync(True)

    def stat(self) -> dict[str, int]:
        """Entries, pages and on-disk size, for reports and benchmarks."""
        env = self._env
        st = env.stat()
        info = env.info()
        return {
            "entries": int(st["entries"]),
            "page_size": int(st["psize"]),
            "used_bytes": int((info["last_pgno"] + 1) * st["psize"]),
            "map_size": int(info["map_size"]),
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with _ENVS_LOCK:
            shared = self._shared
            shared.refs -= 1
            last = shared.refs <= 0 and _ENVS.get(self.path) is shared
            if last:
                shared.closing = True  # an open of this path waits for the close (one env per path)
        if not last:
            return
        try:
            if shared.pid == os.getpid():
                # without _ENVS_LOCK: the close may wait for other threads, which may open other paths meanwhile
                shared.close(self.path)
                shared.directory.close()  # after LMDB's close: see memdb/engine/lmdbdir.py
        finally:
            with _ENVS_CLOSED:
                if _ENVS.get(self.path) is shared:
                    del _ENVS[self.path]
                _ENVS_CLOSED.notify_all()

    def __enter__(self) -> LMDBStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
