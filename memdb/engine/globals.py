"""M-style globals over an ordered store: ``^NAME(sub, ...) = value`` with M operations.

Only nodes that hold a value are stored; a node "exists" as an intermediate when some key
lies in its subtree. So ``kill`` is one range delete and ancestors left empty vanish by
themselves, as in M. Transactions are per thread and nest through store savepoints.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Final

from memdb.engine import codec
from memdb.engine.codec import Subscript, Subscripts
from memdb.engine.store import ReadTxn, Store, WriteTxn
from memdb.errors import (
    CodecError,
    GlobalsError,
    InvalidSubscriptError,
    InvalidValueError,
    KeyTooLongError,
    MergeOverlapError,
    NotANumberError,
    ReadOnlyTransactionError,
)

__all__ = ["Global", "Globals"]

_MISSING: Final = object()
_CHUNK: Final = 512
_MAX_KEY_BYTES: Final = codec.MAX_KEY_BYTES
_unpack = codec.unpack_value
_encode = codec.encode
_encode_strs = codec.encode_strs
_encode_subscript = codec.encode_subscript


_key_of = operator.itemgetter(0)
_value_of = operator.itemgetter(1)
_bytes_len = bytes.__len__
_past_pair = operator.itemgetter(slice(2, None))
_NOTHING_MORE: Final = {()}
_BYTES: Final = {bytes}
_NUMBERS: Final = {int, float}
_JOINED: Final = nullcontext()  # Globals.transaction(savepoint=False) inside a transaction: the block joins it as it is

_Deferred = list[Counter[bytes]]
"""One transaction level's deferred deltas by encoded counter key: ``[plain, drop_zero]``,
then the encoded nodes whose subtrees this level discarded (``discard_deferred``).
Keys are encoded (so checked) when deferred: a bad subscript raises at the call, inside the
savepoint that made it, and equal numbers (1, 1.0) are one counter."""


class _Local(threading.local):
    """Per thread: the open write transaction and its deferred deltas, or the open snapshot.
    Class defaults, so a read is one attribute lookup rather than ``getattr`` with a default."""

    write: WriteTxn | None = None
    read: ReadTxn | None = None
    # ``write`` if set, else ``read``: what a read goes through, in one lookup (an attribute of
    # a threading.local costs ~40 ns, a tenth of what a point read adds to LMDB's own get)
    current: ReadTxn | None = None
    pending: list[_Deferred] | None = None
    staged: dict[Hashable, tuple[Callable[[list[Any]], None], list[Any]]] | None = None  # Globals.stage
    committed: list[list[Callable[[], None]]] | None = None  # Globals.after_commit, one list per nesting level
    snapshot: int = 0  # the number of the read-only snapshot open (Globals.snapshot_number), 0 for none


def _new_level() -> _Deferred:
    return [Counter(), Counter(), Counter()]


def _drop_deltas(level: _Deferred, key: bytes) -> None:
    """Remove ``level``'s deltas of the counters in the subtree of the encoded node ``key``."""
    lo, hi = codec.range_of(key)
    for counter in level[:2]:
        for k in [k for k in counter if lo <= k < hi]:
            del counter[k]


def _as_subs(subs: Any) -> Subscripts:
    if type(subs) is tuple:
        return subs
    if isinstance(subs, list):
        return tuple(subs)
    return (subs,)


def _show_key(key: Any) -> str:
    """An encoded key as ``^NAME(subs)`` for error messages, or its repr if it does not decode."""
    if isinstance(key, bytes):
        try:
            name, end = codec.decode_one(key)
            if isinstance(name, str):
                subs = codec.decode(key, end)
                return f"^{name}" + ("(" + ",".join(codec.short_repr(s) for s in subs) + ")" if subs else "")
        except (CodecError, IndexError):
            pass
    return f"encoded key {codec.short_repr(key)}"


def _check_puts(puts: list[tuple[bytes, bytes]]) -> None:
    """Check that every item is a pair of bytes (key, value), the key non-empty and within
    MAX_KEY_BYTES, so a write batch fails before its first write
    (tests/engine/test_globals.py::test_apply_refuses_a_bad_packed_item_having_written_nothing).
    Three passes in C, about 0.1 µs an item; the Python loop runs only to name the bad item."""
    try:
        sizes = list(map(_bytes_len, map(_key_of, puts)))  # TypeError unless every key is bytes
        if (
            min(sizes)
            and max(sizes) <= codec.MAX_KEY_BYTES
            and set(map(type, map(_value_of, puts))) == _BYTES
            # item[2:] is () for a pair, unhashable for a list: LMDB's putmulti takes 2-tuples only
            and set(map(_past_pair, puts)) == _NOTHING_MORE
        ):
            return
    except (TypeError, IndexError, KeyError):
        pass
    for item in puts:
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidValueError(f"apply: item {codec.short_repr(item)} is not a (key, value) tuple")
        key, value = item
        if not isinstance(key, bytes):
            raise InvalidSubscriptError(
                f"apply: encoded key {codec.short_repr(key)} is {type(key).__name__}, not bytes (build it with Global.key)"
            )
        if not key:
            raise InvalidSubscriptError(f"apply: empty encoded key (value {codec.short_repr(value)}; build keys with Global.key)")
        if len(key) > codec.MAX_KEY_BYTES:
            raise KeyTooLongError(f"encoded key of {len(key)} bytes: more than {codec.MAX_KEY_BYTES} ({key[:40]!r}...)")
        if type(value) is not bytes:
            raise InvalidValueError(
                f"apply: packed value {codec.short_repr(value)} for {_show_key(key)} is {type(value).__name__}, not bytes "
                "(pack it with codec.pack_value, or pass it in sets/encoded)"
            )


def _decoded_one_by_one(keys: list[bytes], raws: list[bytes], n: int) -> Iterator[tuple[Subscripts, Any]]:
    """(subscripts, value) of each item in turn, decoded from byte ``n`` of its key."""
    decode, unpack = codec.decode, codec.unpack_value
    for k, v in zip(keys, raws, strict=True):
        yield decode(k, n), unpack(v)


def _check_delta(g: Global, subs: Subscripts, delta: Any) -> None:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise NotANumberError(f"defer_increment ^{g.name}{g._show(subs)}: delta {delta!r} is not an int or float")


class Globals:
    """The global key space of one store: global lookup, transactions and snapshots."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._local = _Local()
        self._cache: dict[str, Global] = {}

    def __getitem__(self, name: str) -> Global:
        g = self._cache.get(name)
        if g is None:
            g = Global(self, name)
            self._cache[name] = g
        return g

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self[name].data(()) != 0

    def names(self) -> list[str]:
        """Names of the globals that hold at least one node, in collation order."""
        out: list[str] = []
        lo = b"\x60"
        with self.reader() as txn:
            while True:
                item = txn.first(lo, b"\x61")
                if item is None:
                    return out
                name, end = codec.decode_one(item[0])
                out.append(str(name))
                lo = item[0][:end] + b"\xff"

    # --- transactions -------------------------------------------------------------------------

    def _write_txn(self) -> WriteTxn | None:
        return self._local.write

    def _read_txn(self) -> ReadTxn | None:
        return self._local.current

    def transaction(self, savepoint: bool = True) -> AbstractContextManager[None]:
        """All-or-nothing across globals; nests (an inner block that raises rolls back alone).

        ``savepoint=False`` joins an enclosing transaction as it is: for blocks that check
        everything before their first write, where a nested transaction buys nothing (and the
        block pays no generator either: capture joins its caller's once per record).
        """
        if self._local.read is not None:
            raise ReadOnlyTransactionError("transaction: cannot write inside a read-only snapshot (leave the snapshot first)")
        if not savepoint and self._local.write is not None:
            return _JOINED
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        outer = self._write_txn()
        if outer is not None:
            self.flush_staged()  # what was staged so far belongs to the enclosing level: written there
            pending = self._local.pending
            assert pending is not None  # set with write, for the outermost transaction
            pending.append(_new_level())
            hooks = self._local.committed
            assert hooks is not None
            hooks.append([])
            try:
                with outer.savepoint():
                    yield
            except BaseException:
                pending.pop()  # the savepoint's deferred increments roll back with it
                hooks.pop()  # and its after-commit calls
                if self._local.staged is not None:
                    self._local.staged.clear()  # and so do the writes it staged
                raise
            hooks[-2].extend(hooks.pop())
            mine, theirs = pending.pop(), pending[-1]
            for key in mine[2]:  # the enclosing level's deltas there were deferred before this level's discard
                _drop_deltas(theirs, key)
            for m, t in zip(mine, theirs, strict=True):
                t.update(m)  # and its discards go on up, to the levels enclosing that one
            return
        committed: list[list[Callable[[], None]]] = [[]]
        self._local.committed = committed
        try:
            with self.store.write() as txn:
                self._local.write = self._local.current = txn
                self._local.pending = pending = [_new_level()]
                self._local.staged = {}
                try:
                    yield
                    self.flush_staged()
                    self._apply_deferred(pending[0])
                finally:
                    self._local.write = self._local.current = None
                    self._local.pending = None
                    self._local.staged = None
        finally:
            self._local.committed = None
        for call in committed[0]:  # committed: the store's write returned
            call()

    def after_commit(self, call: Callable[[], None]) -> None:
        """Run ``call`` once this thread's outermost transaction has committed (now, outside
        one); never if the transaction, or the savepoint it was registered in, rolls back. For
        caches of what a transaction writes that other threads read (the settings:
        test_settings_a_thread_configures_in_a_transaction)."""
        hooks = self._local.committed
        if hooks is None or self._write_txn() is None:
            call()
            return
        hooks[-1].append(call)

    def stage(self, key: Hashable, flush: Callable[[list[Any]], None], items: Iterable[Any]) -> None:
        """Collect ``items`` to be written by ``flush(all items staged under key)`` later in this
        transaction: before it commits, before a savepoint opens, or when ``flush_staged`` is
        called (a layer calls it before it reads what it staged). Outside a transaction,
        ``flush`` runs at once in one. Items staged inside a savepoint that rolls back are
        dropped with it. For writes that many records of one transaction share (the last block
        of a term's postings): staged, they are written once per transaction."""
        staged = self._local.staged
        if staged is None or self._write_txn() is None:
            with self.transaction():
                flush(list(items))
            return
        entry = staged.get(key)
        if entry is None:
            entry = staged[key] = (flush, [])
        entry[1].extend(items)

    def flush_staged(self) -> None:
        """Write everything ``stage`` collected in this thread's transaction, in staging order."""
        staged = self._local.staged
        while staged:
            flush, items = staged.pop(next(iter(staged)))
            flush(items)

    def defer_increment(self, g: Global, subs: Any, delta: int | float, drop_zero: bool = False) -> None:
        """Add ``delta`` to a counter when the outermost transaction commits (now, outside one).

        Counters that many writes of one transaction touch (statistics, document frequencies)
        are then written once per transaction instead of once per write: a counter's deltas
        are summed, and the sum added to its value at commit. Reads inside the transaction see
        the value before the deferred deltas. With ``drop_zero`` a counter whose value at
        commit is zero or less is removed; one counter takes one ``drop_zero`` setting per
        transaction (mixing them raises GlobalsError at the call, since a sum has no order to
        apply them in). Subscripts are checked here, like ``increment``'s: a bad one raises at
        the call, not at the commit.
        """
        subs = _as_subs(subs)
        _check_delta(g, subs, delta)
        key = g._key(subs)
        with self._deferring():
            self._level((key,), drop_zero)[key] += delta  # type: ignore[assignment]  # Counter holds floats too

    def defer_increments(self, g: Global, parent: Any, deltas: Mapping[Any, int | float], drop_zero: bool = False) -> None:
        """``defer_increment`` of ``g(*parent, child)`` by ``delta`` for each child and delta of
        ``deltas``: one call for the many counters one write touches (a document's terms)."""
        parent = _as_subs(parent)
        if not set(map(type, deltas.values())) <= _NUMBERS:  # one pass in C; the loop names a bad one
            for child, delta in deltas.items():
                _check_delta(g, (*parent, child), delta)
        keys = g._child_keys(parent, deltas)
        with self._deferring():
            counter = self._level(keys, drop_zero)
            for key, delta in zip(keys, deltas.values(), strict=True):
                counter[key] += delta  # type: ignore[assignment]  # Counter holds floats too

    def defer_counts(self, g: Global, parent: Any, children: Iterable[Subscript], drop_zero: bool = False) -> None:
        """``defer_increment`` of ``g(*parent, child)`` by 1 for each child, counted in C
        (``Counter.update``): capture adds one to each of ~40 document frequencies per episode."""
        keys = g._child_keys(_as_subs(parent), children)
        with self._deferring():
            self._level(keys, drop_zero).update(keys)  # a list, not a Mapping: each counts 1

    def discard_deferred(self, g: Global, subs: Any = ()) -> None:
        """Drop this transaction's deferred deltas (``defer_increment``) of counters in the
        subtree of ``g(subs)``, about to be killed: applied at commit, they would bring back a
        counter that a KILL took (an owner's statistics after its erasure). Like the KILL, the
        discard belongs to the current nested transaction: the enclosing levels' deltas go when
        it commits into them, and stay if it rolls back (test_a_discard_rolls_back_with_its_savepoint)."""
        pending = self._local.pending
        if not pending:
            return
        self.flush_staged()  # a staged write may defer deltas (capture's document frequencies): they go too
        key = g._key(_as_subs(subs))
        _drop_deltas(pending[-1], key)
        if len(pending) > 1:
            pending[-1][2][key] += 1

    def _deferring(self) -> AbstractContextManager[None]:
        """Outside a transaction, one for the deferral (applied at its commit, so at once)."""
        return nullcontext() if self._write_txn() is not None else self.transaction()

    def _level(self, keys: Iterable[bytes], drop_zero: bool) -> Counter[bytes]:
        """This transaction level's counter of deltas for ``drop_zero``, once no level of the
        transaction holds one of ``keys`` under the other setting."""
        pending = self._local.pending
        assert pending is not None  # callers hold a transaction (_deferring)
        other = 0 if drop_zero else 1
        for level in pending:
            if level[other] and not level[other].keys().isdisjoint(keys):
                key = next(k for k in keys if k in level[other])
                raise GlobalsError(
                    f"defer_increment {_show_key(key)}: drop_zero={bool(drop_zero)} for a counter this transaction already "
                    f"deferred with drop_zero={not drop_zero} (deltas are summed at commit: give a counter one drop_zero setting)"
                )
        return pending[-1][1 - other]

    def _apply_deferred(self, pending: _Deferred) -> None:
        """Apply the outermost transaction's deferred deltas, inside it, just before it commits:
        every counter read, then the new values written in one batch (a transaction of
        capture touches thousands of document frequencies)."""
        puts: list[tuple[bytes, bytes]] = []
        dropped: list[bytes] = []
        unpack = codec.unpack_value
        with self.writer() as txn:
            for drop_zero, deltas in enumerate(pending[:2]):
                for key, delta in deltas.items():
                    if not delta:
                        continue
                    raw = txn.get(key)
                    current = 0 if raw is None else unpack(raw)
                    if isinstance(current, bool) or not isinstance(current, (int, float)):
                        raise NotANumberError(
                            f"increment {_show_key(key)}: value {current!r:.60} is not a number (M would coerce; memdb refuses)"
                        )
                    new = current + delta
                    if new <= 0 and drop_zero:
                        if raw is not None:
                            dropped.append(key)
                        continue
                    try:
                        puts.append((key, codec.pack_value(new)))
                    except InvalidValueError as exc:
                        raise InvalidValueError(f"increment {_show_key(key)}: {exc}") from None
            txn.put_many(puts)
            for key in dropped:
                txn.delete(key)

    def snapshot(self) -> AbstractContextManager[None]:
        """A consistent read-only view for the block (reads inside a transaction see the transaction)."""
        return _Snapshot(self)

    def snapshot_number(self) -> int:
        """A number unique in the process to the read-only snapshot this thread is in (``snapshot``),
        0 outside one and inside a transaction: what a reader may key a value read there by, to
        read it once in the snapshot, as nothing can change it there."""
        return self._local.snapshot

    def reader(self) -> AbstractContextManager[ReadTxn]:
        """The current transaction or snapshot if any, else a fresh short snapshot."""
        txn = self._read_txn()
        if txn is not None:
            return nullcontext(txn)
        return self.store.read()

    def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]:
        """``reader().get_many(keys)`` (values by encoded key, for the keys that have one) without
        the context manager: inside a snapshot, ``reader``'s nullcontext was three Python calls,
        and a small recall makes two such reads (one round trip on PostgreSQL)."""
        txn = self._local.current
        if txn is not None:
            return txn.get_many(keys)
        with self.store.read() as short:
            return short.get_many(keys)

    def scan_columns(self, lo: bytes, hi: bytes) -> tuple[list[bytes], list[bytes]]:
        """``reader().scan_columns(lo, hi)`` without the context manager, as ``get_many``."""
        txn = self._local.current
        if txn is not None:
            return txn.scan_columns(lo, hi)
        with self.store.read() as short:
            return short.scan_columns(lo, hi)

    def writer(self, atomic: bool = False) -> AbstractContextManager[WriteTxn]:
        """The current write transaction (a savepoint of it if ``atomic``), else a new one."""
        txn = self._write_txn()
        if txn is not None:
            return txn.savepoint() if atomic else nullcontext(txn)
        if self._local.read is not None:
            raise ReadOnlyTransactionError("write inside a read-only snapshot (leave the snapshot first)")
        return self.store.write()

    def apply(
        self,
        kills: Iterable[tuple[Global, Any]] = (),
        sets: Iterable[tuple[Global, Any, Any]] = (),
        encoded: Iterable[tuple[bytes, Any]] = (),
        packed: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        """Kill subtrees, then set values, all in one transaction.

        ``encoded`` sets values under keys already encoded (``Global.key(parent) + tail``),
        for layers that write many keys sharing a few parents; ``packed`` does the same with
        values already packed (``codec.pack_value``), for values that repeat. Every key and
        value is encoded, and every encoded key and packed value checked, before the first
        write, so invalid input (a bad subscript, an empty or over-long key, an unstorable
        value, a packed value that is not bytes) raises having written nothing, even inside an
        outer transaction.
        """
        ranges = [codec.range_of(g._key(_as_subs(subs))) for g, subs in kills]
        puts = [(g._key(_as_subs(subs)), codec.pack_value(value)) for g, subs, value in sets]
        built = len(puts)  # keys from _key and values from pack_value are valid by construction
        for key, value in encoded:
            try:
                puts.append((key, codec.pack_value(value)))
            except InvalidValueError as exc:
                raise InvalidValueError(f"apply: value for {_show_key(key)}: {exc}") from None
        puts.extend(packed)
        if len(puts) > built:
            _check_puts(puts[built:] if built else puts)
        with self.writer() as txn:
            for lo, hi in ranges:
                txn.delete_range(lo, hi)
            txn.put_many(puts)

    @property
    def in_transaction(self) -> bool:
        """True inside ``transaction()`` on this thread."""
        return self._write_txn() is not None

    @property
    def in_block(self) -> bool:
        """True inside ``transaction()`` or ``snapshot()`` on this thread: a write now would
        join the caller's transaction (and its rollback) or be refused by the snapshot."""
        return self._read_txn() is not None


class _Snapshot:
    """``Globals.snapshot``'s block: a class, not a generator, as every query opens one (the
    generator's context manager cost 2 us of a 100 us recall)."""

    __slots__ = ("_read", "_space")

    def __init__(self, space: Globals) -> None:
        self._space = space
        self._read: AbstractContextManager[ReadTxn] | None = None  # the snapshot this block opened

    def __enter__(self) -> None:
        space = self._space
        if space._read_txn() is not None:  # inside a transaction or snapshot: reads see that one
            return
        read = space.store.read()
        txn = read.__enter__()
        self._read = read
        local = space._local
        local.read = local.current = txn
        local.snapshot = next(_SNAPSHOTS)

    def __exit__(self, *exc: Any) -> None:
        read, self._read = self._read, None
        if read is not None:
            local = self._space._local
            local.read = local.current = None
            local.snapshot = 0
            read.__exit__(*exc)


_SNAPSHOTS = itertools.count(1)  # snapshot numbers (Globals.snapshot_number); next() is atomic under the GIL


class Global:
    """One global, ``^NAME``: a sparse tree of typed values addressed by subscript tuples."""

    __slots__ = ("_hi", "_last_query", "_local", "_mixed", "_prefix", "_space", "_text", "name")

    def __init__(self, space: Globals, name: str) -> None:
        self.name = codec.check_global_name(name)
        self._space = space
        self._local = space._local  # one lookup less on every read
        self._prefix = codec.encode_global(name)
        self._text = codec.text_prefix(self._prefix)  # for codec.encode_strs
        # set by the first key with a subscript other than a str: from then on encode_strs
        # checks types instead of paying a failed join's TypeError on every such key
        self._mixed = False
        self._hi = self._prefix + b"\xff"
        self._last_query: tuple[Subscripts, bytes] | None = None

    def __repr__(self) -> str:
        return f"<Global ^{self.name}>"

    # --- keys ----------------------------------------------------------------------------------

    def _key(self, subs: Subscripts) -> bytes:
        key = _encode_strs(subs, self._text, self._mixed)
        if key is not None and len(key) <= _MAX_KEY_BYTES:
            return key
        return self._encoded(subs)

    def _encoded(self, subs: Subscripts) -> bytes:
        """``_key`` for keys ``codec.encode_strs`` declines: numbers, bytes, and bad or
        over-long keys, which raise naming the global."""
        if not self._mixed and not all(type(s) is str for s in subs):
            self._mixed = True
        try:
            key = _encode(subs, self._prefix)
        except InvalidSubscriptError as exc:
            raise InvalidSubscriptError(f"^{self.name}{self._show(subs)}: {exc}") from None
        except KeyTooLongError as exc:
            raise KeyTooLongError(f"key of ^{self.name}: {exc}") from None
        if len(key) > _MAX_KEY_BYTES:
            codec.check_key_length(key, self._prefix, subs, self.name)
        return key

    def _child_keys(self, parent: Subscripts, children: Iterable[Any]) -> list[bytes]:
        """The keys of ``self(*parent, child)`` for each child, checked as ``_key`` checks
        (a string met before costs a dict lookup)."""
        base = self._key(parent)
        children = children if isinstance(children, (list, tuple)) else list(children)
        try:
            keys = [base + part for part in codec.encode_each(children)]
        except InvalidSubscriptError as exc:
            raise InvalidSubscriptError(f"^{self.name}{self._show(parent)}: {exc}") from None
        except KeyTooLongError as exc:
            raise KeyTooLongError(f"key of ^{self.name}: {exc}") from None
        if keys and max(map(len, keys)) > codec.MAX_KEY_BYTES:
            for key, child in zip(keys, children, strict=True):
                codec.check_key_length(key, self._prefix, (*parent, child), self.name)
        return keys

    def _show(self, subs: Subscripts) -> str:
        return "(" + ",".join(codec.short_repr(s) for s in subs) + ")" if subs else ""

    def _decode(self, key: bytes) -> Subscripts:
        return codec.decode(key, len(self._prefix))

    # --- reads ---------------------------------------------------------------------------------

    def _raw(self, key: bytes) -> bytes | None:
        txn = self._local.current  # Globals._read_txn, inline: this is every read's path
        if txn is None:
            return self._space.store.get(key)
        return txn.get(key)

    def _first(self, lo: bytes, hi: bytes, reverse: bool) -> tuple[bytes, bytes] | None:
        """``ReadTxn.first`` in the current transaction or snapshot, else in one of its own."""
        txn = self._local.current
        if txn is None:
            return self._space.store.first(lo, hi, reverse)
        return txn.first(lo, hi, reverse)

    # __getitem__ and get are _key, _raw and unpack_value inline: each call saved is a tenth of
    # a point read (benchmarks/bench_globals.py, get-snapshot and get-single).

    def __getitem__(self, subs: Any) -> Any:
        if type(subs) is not tuple:
            subs = _as_subs(subs)
        key = _encode_strs(subs, self._text, self._mixed)
        if key is None or len(key) > _MAX_KEY_BYTES:
            key = self._encoded(subs)
        txn = self._local.current
        raw = self._space.store.get(key) if txn is None else txn.get(key)
        if raw is None:
            raise KeyError(subs)
        return _unpack(raw)

    def get(self, subs: Any, default: Any = None) -> Any:
        """The node's value, or ``default`` if it has none."""
        if type(subs) is not tuple:
            subs = _as_subs(subs)
        key = _encode_strs(subs, self._text, self._mixed)
        if key is None or len(key) > _MAX_KEY_BYTES:
            key = self._encoded(subs)
        txn = self._local.current
        raw = self._space.store.get(key) if txn is None else txn.get(key)
        if raw is None:
            return default
        return _unpack(raw)

    def __contains__(self, subs: Any) -> bool:
        return self.data(_as_subs(subs)) % 2 == 1

    def data(self, subs: Any = ()) -> int:
        """M $DATA: 0 no node, 1 value only, 10 children only, 11 value and children."""
        key = self._key(_as_subs(subs))
        with self._space.reader() as txn:
            has_value = txn.get(key) is not None
            has_children = txn.first(*codec.children_range(key)) is not None
        return (10 if has_children else 0) + (1 if has_value else 0)

    def holds(self, subs: Any = ()) -> bool:
        """Whether the node or a node below it holds a value (``data(subs) != 0``), in one seek
        where ``data`` takes a read and a seek: capture asks it of every id it hands out."""
        lo, hi = codec.range_of(self._key(_as_subs(subs)))
        return self._first(lo, hi, False) is not None

    def order(self, subs: Any, reverse: bool = False) -> Subscript | None:
        """M $ORDER: the next (or previous) sibling subscript at the last level; None past the end.

        An empty string as the last subscript means "before the first" (forward) or
        "after the last" (reverse). The seed need not exist.
        """
        subs = _as_subs(subs)
        if not subs:
            raise InvalidSubscriptError(f"^{self.name}: order needs at least one subscript (use '' to start)")
        parent = self._key(subs[:-1])
        lo, hi = codec.children_range(parent)
        last = subs[-1]
        if not (isinstance(last, str) and last == ""):
            here = self._key(subs)
            if reverse:
                hi = here
            else:
                lo = here + b"\xff"
        item = self._first(lo, hi, reverse)
        if item is None:
            return None
        return codec.decode_one(item[0], len(parent))[0]

    def children(self, subs: Any = (), reverse: bool = False) -> Iterator[Subscript]:
        """The child subscripts of a node, in collation order (repeated $ORDER).

        Each step is one seek past the previous child's whole subtree, in chunks of short
        snapshots outside a transaction (like ``items``).
        """
        parent = self._key(_as_subs(subs))
        lo, hi = codec.children_range(parent)
        n = len(parent)
        while True:
            chunk: list[tuple[Subscript, int]] = []
            with self._space.reader() as txn:
                while len(chunk) < _CHUNK:
                    item = txn.first(lo, hi, reverse)
                    if item is None:
                        break
                    child, end = codec.decode_one(item[0], n)
                    chunk.append((child, end))
                    here = item[0][:end]
                    if reverse:
                        hi = here
                    else:
                        lo = here + b"\xff"
            for child, _ in chunk:
                yield child
            if len(chunk) < _CHUNK:
                return

    def query(self, subs: Any = (), reverse: bool = False) -> Subscripts | None:
        """M $QUERY: the next (previous) node holding a value, depth first; None at the end.

        The node given is never returned, and the global's root is never returned.
        """
        subs = _as_subs(subs)
        last = self._last_query  # an M loop passes back what it was just given: skip re-encoding
        key = last[1] if last is not None and last[0] is subs else self._key(subs)
        lo, hi = self._prefix + b"\x00", self._hi
        if reverse:
            hi = key
        else:
            lo = key + b"\x00"
        item = self._first(lo, hi, reverse)
        if item is None:
            return None
        found = self._decode(item[0])
        self._last_query = (found, item[0])
        return found

    def items(self, subs: Any = (), reverse: bool = False) -> Iterator[tuple[Subscripts, Any]]:
        """Every node with a value in the subtree of ``subs`` (itself included), depth first.

        Yields full subscript tuples. Outside a transaction or snapshot the subtree is read in
        short chunks, so writing while iterating is safe but not isolated; wrap the loop in
        ``db.snapshot()`` for one consistent view.
        """
        lo, hi = codec.range_of(self._key(_as_subs(subs)))
        return self._scan_items(lo, hi, reverse)

    def range(
        self, subs: Any = (), start: Subscript | None = None, stop: Subscript | None = None, reverse: bool = False
    ) -> Iterator[tuple[Subscripts, Any]]:
        """Like ``items`` under ``subs``, limited to children ``c`` with ``start <= c < stop``.

        A seek, not a filter: the cost follows the nodes in the range, not the subtree.
        """
        return self._scan_items(*self._children_bounds(subs, start, stop), reverse)

    def _children_bounds(self, subs: Any, start: Subscript | None, stop: Subscript | None) -> tuple[bytes, bytes]:
        """Encoded [lo, hi) of the children ``c`` of ``subs`` with ``start <= c < stop``."""
        subs = _as_subs(subs)
        base = self._key(subs)
        lo, hi = codec.children_range(base)
        if start is not None:
            lo = max(lo, self._child_key(base, subs, start))
        if stop is not None:
            hi = min(hi, self._child_key(base, subs, stop))
        return lo, hi

    def _child_key(self, base: bytes, subs: Subscripts, child: Any) -> bytes:
        """``_key((*subs, child))`` from ``base``, the key of ``subs``: a child's key is its
        parent's and the child's encoded subscript (a range's bounds: one encode, not three)."""
        try:
            key = base + _encode_subscript(child)
        except (InvalidSubscriptError, KeyTooLongError):
            key = b""
        if not key or len(key) > _MAX_KEY_BYTES:
            return self._key((*subs, child))  # raises naming the global and the subscript
        return key

    # --- encoded access, for layers that own a fixed key layout (the episode indexes) ----------

    def key(self, subs: Any = ()) -> bytes:
        """The encoded store key of a node. Keys of one global sort as their subscripts collate,
        and a child's key starts with its parent's, so ``key(parent) + suffix`` addresses a
        child whose encoded tail is ``suffix``."""
        return self._key(_as_subs(subs))

    def raw_get(self, key: bytes) -> bytes | None:
        """The packed value (``codec.unpack_value`` reads it) stored under an encoded key."""
        return self._raw(key)

    def raw_range(self, subs: Any = (), start: Subscript | None = None, stop: Subscript | None = None) -> Iterator[tuple[bytes, bytes]]:
        """``range`` without decoding: (encoded key, packed value) pairs, so a caller that knows
        where its subscripts sit in the key can slice them instead of decoding every key."""
        return self._scan_raw(*self._children_bounds(subs, start, stop))

    def raw_columns(
        self, subs: Any = (), start: Subscript | None = None, stop: Subscript | None = None, reverse: bool = False, limit: int | None = None
    ) -> tuple[list[bytes], list[bytes]]:
        """``raw_range`` as two lists (encoded keys, packed values; in descending order if
        ``reverse``, at most ``limit`` of them) read in one snapshot: for a caller that wants a
        whole range, or the first ``limit`` nodes from one end, at a fraction of the cost of
        iterating it."""
        lo, hi = self._children_bounds(subs, start, stop)
        with self._space.reader() as txn:
            return txn.scan_columns(lo, hi, reverse, limit)

    def raw_keys(
        self, subs: Any = (), start: Subscript | None = None, stop: Subscript | None = None, reverse: bool = False, limit: int | None = None
    ) -> list[bytes]:
        """The keys of ``raw_columns``, without reading the values: for counting an index's
        entries or reading what its keys say."""
        lo, hi = self._children_bounds(subs, start, stop)
        with self._space.reader() as txn:
            return txn.scan_keys(lo, hi, reverse, limit)

    def leaf_items(self, subs: Any = ()) -> Iterator[tuple[Subscript, Any]]:
        """(last subscript, value) of the nodes one level below ``subs`` that have values,
        decoding only that subscript: the fast path for posting lists and similar leaves.
        Deeper nodes under a child are skipped."""
        base = self._key(_as_subs(subs))
        n = len(base)
        lo, hi = codec.children_range(base)
        decode_one, unpack = codec.decode_one, codec.unpack_value
        for key, raw in self._scan_raw(lo, hi):
            child, end = decode_one(key, n)
            if end == len(key):
                yield child, unpack(raw)

    def _scan_raw(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        local = self._local
        txn = local.read
        if txn is not None and local.write is None:
            # inside a read-only snapshot nothing can write (or grow the map) under the cursor
            return txn.scan(lo, hi)
        return self._scan_raw_chunked(lo, hi)

    def _scan_raw_chunked(self, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        while True:
            with self._space.reader() as txn:
                chunk = []
                for item in txn.scan(lo, hi):
                    chunk.append(item)
                    if len(chunk) >= _CHUNK:
                        break
            yield from chunk
            if len(chunk) < _CHUNK:
                return
            lo = chunk[-1][0] + b"\x00"

    def _scan_items(self, lo: bytes, hi: bytes, reverse: bool) -> Iterator[tuple[Subscripts, Any]]:
        # Chained iterators of C (zip, map), so no Python frame runs per item: only per chunk.
        return itertools.chain.from_iterable(self._item_chunks(lo, hi, reverse))

    def _item_chunks(self, lo: bytes, hi: bytes, reverse: bool) -> Iterator[Iterator[tuple[Subscripts, Any]]]:
        # Chunks are read into lists and the cursor closed before anything is yielded, so the
        # caller may write (even enough to grow the map) while iterating. Columns of bytes,
        # not (key, value) tuples: bytes are not tracked by the garbage collector, and
        # collections walking 512 tuples a chunk cost a fifth of a whole-global scan.
        unpack, n = codec.unpack_value, len(self._prefix)
        while True:
            with self._space.reader() as txn:
                keys, raws = txn.scan_columns(lo, hi, reverse, _CHUNK)
            subs = codec.decode_many(keys, n)
            if subs is not None:  # every key valid; a damaged value still raises where it stands
                yield zip(subs, map(unpack, raws), strict=True)
            else:  # one at a time, so a damaged key raises where it stands
                yield _decoded_one_by_one(keys, raws, n)
            if len(keys) < _CHUNK:
                return
            if reverse:
                hi = keys[-1]
            else:
                lo = keys[-1] + b"\x00"

    def keys(self, subs: Any = (), reverse: bool = False) -> Iterator[Subscripts]:
        """Subscript tuples of the nodes with values under ``subs``."""
        for s, _ in self.items(subs, reverse):
            yield s

    def count(self, subs: Any = ()) -> int:
        """How many nodes with values lie in the subtree of ``subs``."""
        lo, hi = codec.range_of(self._key(_as_subs(subs)))
        with self._space.reader() as txn:
            return sum(1 for _ in txn.scan(lo, hi))

    # --- writes --------------------------------------------------------------------------------

    def __setitem__(self, subs: Any, value: Any) -> None:
        self.set(subs, value)

    def set(self, subs: Any, value: Any) -> None:
        """Set a node's value (any msgpack value or datetime)."""
        subs = _as_subs(subs)
        key = self._key(subs)
        try:
            raw = codec.pack_value(value)
        except InvalidValueError as exc:
            raise InvalidValueError(f"^{self.name}{self._show(subs)}: {exc}") from None
        txn = self._space._write_txn()
        if txn is not None:
            txn.put(key, raw)
            return
        with self._space.writer() as t:
            t.put(key, raw)

    def __delitem__(self, subs: Any) -> None:
        self.kill(subs)

    def kill(self, subs: Any = ()) -> int:
        """M KILL: remove the node and its whole subtree; returns how many values were removed."""
        lo, hi = codec.range_of(self._key(_as_subs(subs)))
        with self._space.writer() as txn:
            return txn.delete_range(lo, hi)

    def kill_value(self, subs: Any) -> bool:
        """M ZKILL: remove the node's value only; its children stay. True if it had one."""
        key = self._key(_as_subs(subs))
        with self._space.writer() as txn:
            return txn.delete(key)

    def merge(self, subs: Any, source: Global, source_subs: Any = ()) -> int:
        """M MERGE ``self(subs) = source(source_subs)``: copy the value and subtree, re-rooted.

        Overlapping destination nodes are overwritten, others kept. Returns nodes copied.
        Raises MergeOverlapError if one node lies inside the other (M: MERGEDESC).
        """
        dst = self._key(_as_subs(subs))
        src = source._key(_as_subs(source_subs))
        if src == dst:
            return 0
        # Ancestry is range membership, not a byte prefix: "a" encodes as a prefix of "a\x00"
        # (60 61 00 / 60 61 00 FF 00) although they are siblings.
        if src < dst < src + b"\xff" or dst < src < dst + b"\xff":
            raise MergeOverlapError(
                f"merge ^{self.name}{self._show(_as_subs(subs))} = ^{source.name}{self._show(_as_subs(source_subs))}: "
                "a node cannot be merged into its own ancestor or descendant"
            )
        lo, hi = codec.range_of(src)
        copied = 0
        dst_subs = _as_subs(subs)
        with self._space.writer(atomic=True) as txn:
            while True:
                chunk = []
                for item in txn.scan(lo, hi):
                    chunk.append(item)
                    if len(chunk) >= _CHUNK:
                        break
                for k, v in chunk:
                    new = dst + k[len(src) :]
                    if len(new) > codec.MAX_KEY_BYTES:
                        codec.check_key_length(new, self._prefix, dst_subs + source._decode(k)[len(_as_subs(source_subs)) :], self.name)
                    txn.put(new, v)
                copied += len(chunk)
                if len(chunk) < _CHUNK:
                    return copied
                lo = chunk[-1][0] + b"\x00"

    def increment(self, subs: Any, delta: int | float = 1) -> int | float:
        """M $INCREMENT: atomically add ``delta`` to a numeric value (undefined counts as 0)."""
        if isinstance(delta, bool) or not isinstance(delta, (int, float)):
            raise NotANumberError(f"increment ^{self.name}: delta {delta!r} is not an int or float")
        subs = _as_subs(subs)
        key = self._key(subs)
        with self._space.writer() as txn:
            raw = txn.get(key)
            new = self._added(subs, 0 if raw is None else codec.unpack_value(raw), delta)
            try:
                packed = codec.pack_value(new)
            except InvalidValueError as exc:
                raise InvalidValueError(f"increment ^{self.name}{self._show(subs)}: {exc}") from None
            txn.put(key, packed)
            return new

    def _added(self, subs: Subscripts, current: Any, delta: int | float) -> int | float:
        if isinstance(current, bool) or not isinstance(current, (int, float)):
            raise NotANumberError(
                f"increment ^{self.name}{self._show(subs)}: value {current!r:.60} is not a number (M would coerce; memdb refuses)"
            )
        return current + delta
