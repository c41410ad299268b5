"""Store contract (every backend must pass it) and LMDB durability: growth, isolation, crash safety.

The contract is every test that takes the ``store`` fixture: it runs on LMDB and on PostgreSQL
(``[lmdb]``/``[postgres]``, through the ``backend`` parameter of tests/conftest.py) unless
marked ``lmdb_only``. What PostgreSQL adds is in tests/engine/test_postgres.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_server import drop, unique_name

import memdb
from memdb.engine.postgres import PostgresStore
from memdb.engine.store import LMDB_MAX_KEY_BYTES, LMDBStore, Store
from memdb.errors import ConfigError, StoreBusyError, StoreClosedError, StoreError, StoreFullError

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is in tests/engine/)


@pytest.fixture
def store(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store on ``backend``: an LMDB directory, or a fresh memdb database on the throwaway server."""
    if backend == "lmdb":
        s: Store = LMDBStore(tmp_path / "db", map_size=1 << 20)
        yield s
        s.close()
        return
    url, name = request.getfixturevalue("pg_url"), unique_name()
    s = PostgresStore(url, name=name)
    yield s
    s.close()
    drop(url, name)


# --- the contract -----------------------------------------------------------------------------


def test_put_get_delete(store: Store) -> None:
    with store.write() as w:
        w.put(b"a", b"1")
        assert w.get(b"a") == b"1"  # a transaction sees its own writes
    with store.read() as r:
        assert r.get(b"a") == b"1" and r.get(b"b") is None
    with store.write() as w:
        assert w.delete(b"a") is True
        assert w.delete(b"a") is False


def test_scan_bounds_and_reverse(store: Store) -> None:
    keys = [bytes([i]) for i in range(1, 20)]
    with store.write() as w:
        for k in keys:
            w.put(k, k)
    with store.read() as r:
        assert [k for k, _ in r.scan(b"\x05", b"\x09")] == keys[4:8]
        assert [k for k, _ in r.scan(b"\x05", b"\x09", reverse=True)] == keys[4:8][::-1]
        assert [k for k, _ in r.scan(b"\x00", b"\xff", reverse=True)] == keys[::-1]
        assert list(r.scan(b"\x09", b"\x05")) == []
        assert [k for k, _ in r.scan(b"\x13", b"\xff", reverse=True)] == [b"\x13"]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keys=st.sets(st.binary(min_size=1, max_size=6), max_size=40),
    lo=st.binary(max_size=6),
    hi=st.binary(max_size=6),
    reverse=st.booleans(),
    limit=st.none() | st.integers(0, 45),
)
def test_scan_columns_is_scan_in_two_lists(store: Store, keys: set[bytes], lo: bytes, hi: bytes, reverse: bool, limit: int | None) -> None:
    """The first ``limit`` items of ``scan`` in two lists (``scan_keys``: the first alone), in a
    snapshot and inside a write (which sees its own writes)."""
    with store.write() as w:
        w.delete_range(b"", b"\xff" * 8)
        for k in keys:
            w.put(k, k[::-1] + b"v")
        expected = list(w.scan(lo, hi, reverse))[:limit]
        assert w.scan_columns(lo, hi, reverse, limit) == ([k for k, _ in expected], [v for _, v in expected])
        assert w.scan_keys(lo, hi, reverse, limit) == [k for k, _ in expected]
    with store.read() as r:
        assert r.scan_columns(lo, hi, reverse, limit) == ([k for k, _ in expected], [v for _, v in expected])
        assert r.scan_keys(lo, hi, reverse, limit) == [k for k, _ in expected]
    inside = sorted((k, k[::-1] + b"v") for k in keys if lo <= k < hi)
    assert expected == (inside[::-1] if reverse else inside)[:limit]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.dictionaries(st.binary(min_size=1, max_size=4), st.binary(max_size=4), max_size=20),
    batch=st.lists(st.tuples(st.binary(min_size=1, max_size=4), st.binary(max_size=4)), max_size=40),
)
def test_put_many_is_puts_in_order(store: Store, before: dict[bytes, bytes], batch: list[tuple[bytes, bytes]]) -> None:
    """put_many leaves what the same puts one by one would: later duplicates win, others stay."""
    with store.write() as w:
        w.delete_range(b"\x00", b"\xff" * 8)
        w.put_many(sorted(before.items()))
    with store.write() as w:
        w.put_many(batch)
    expected = dict(before)
    for k, v in batch:
        expected[k] = v
    with store.read() as r:
        assert list(r.scan(b"\x00", b"\xff" * 8)) == sorted(expected.items())


def test_put_many_with_an_empty_key_writes_none_of_the_batch(store: Store) -> None:
    with store.write() as w:
        w.put(b"kept", b"1")
    with pytest.raises(StoreError, match=r"put_many: .*empty"), store.write() as w:
        w.put_many([(b"a", b"1"), (b"", b"2"), (b"z", b"3")])
    with store.read() as r:
        assert list(r.scan(b"\x00", b"\xff")) == [(b"kept", b"1")]


@pytest.mark.parametrize(
    ("bad", "said"),
    [((b"b", b"2", b"x"), "3 values"), ((b"c",), "1 value"), (7, "int"), ([b"b", b"2"], "list"),
     ((b"k", None), "value NoneType"), ((b"k", "v"), "value str"), (("k", b"v"), "key str"), ((None, b"v"), "key NoneType"),
     ((b"k", bytearray(b"v")), "value bytearray"), ((b"k", memoryview(b"v")), "value memoryview")],
)  # fmt: skip
def test_put_many_refuses_an_item_that_is_no_pair_of_bytes_before_writing(store: Store, bad: tuple[object, ...], said: str) -> None:
    """A batch is all pairs of bytes or none of it is put, even when the caller goes on and commits,
    and StoreError names the item and what it held (LMDB's write log keeps a batch's keys and values
    flat; PostgreSQL raised ValueError: revP; a list pair passed the check and LMDB put the items
    before it; a None or str in a pair raised TypeError from LMDB or the driver)."""
    with store.write() as w:
        with pytest.raises(StoreError, match=rf"^put_many: item 1: {said} \(expected \(key bytes, value bytes\)\)$"):
            w.put_many([(b"a", b"1"), bad, (b"z", b"3")])  # type: ignore[list-item]
        w.put(b"kept", b"1")
    with store.read() as r:
        assert list(r.scan(b"\x00", b"\xff")) == [(b"kept", b"1")]


def test_put_many_takes_a_generator(store: Store) -> None:
    """Read once: PostgreSQL's checks used up a generator and put nothing, without an error (revQ)."""
    with store.write() as w:
        w.put_many((b"k%d" % i, b"v") for i in range(3))  # type: ignore[arg-type]
    with store.read() as r:
        assert [k for k, _ in r.scan(b"\x00", b"\xff")] == [b"k0", b"k1", b"k2"]


def test_delete_range(store: Store) -> None:
    with store.write() as w:
        for i in range(100):
            w.put(b"k%03d" % i, b"v")
        assert w.delete_range(b"k010", b"k020") == 10
        assert w.delete_range(b"k090", b"k\xff") == 10
    with store.read() as r:
        remaining = [k for k, _ in r.scan(b"", b"\xff")]
    assert len(remaining) == 80 and b"k015" not in remaining and b"k089" in remaining


def test_exception_rolls_back(store: Store) -> None:
    with store.write() as w:
        w.put(b"keep", b"1")
    with pytest.raises(RuntimeError), store.write() as w:
        w.put(b"lost", b"1")
        w.delete(b"keep")
        raise RuntimeError("boom")
    with store.read() as r:
        assert r.get(b"keep") == b"1" and r.get(b"lost") is None


def test_savepoint_rolls_back_alone(store: Store) -> None:
    with store.write() as w:
        w.put(b"outer", b"1")
        with pytest.raises(RuntimeError), w.savepoint() as inner:
            inner.put(b"inner", b"1")
            raise RuntimeError("boom")
        with w.savepoint() as inner:
            inner.put(b"inner2", b"1")
        assert w.get(b"inner") is None
    with store.read() as r:
        assert r.get(b"outer") == b"1" and r.get(b"inner") is None and r.get(b"inner2") == b"1"


def test_snapshot_isolation(store: Store) -> None:
    with store.write() as w:
        w.put(b"x", b"old")
    with store.read() as r:
        with store.write() as w:
            w.put(b"x", b"new")
        assert r.get(b"x") == b"old"
    with store.read() as r:
        assert r.get(b"x") == b"new"


def test_store_get_reads_the_last_commit_in_a_snapshot_of_its_own(store: Store) -> None:
    """``Store.get`` is ``read()`` plus one ``get``: it sees every commit before it, and
    neither an open snapshot nor an open transaction of the caller."""
    assert store.get(b"x") is None
    with store.write() as w:
        w.put(b"x", b"1")
    assert store.get(b"x") == b"1"
    with store.read() as r:
        with store.write() as w:
            w.put(b"x", b"2")
        assert r.get(b"x") == b"1" and store.get(b"x") == b"2"
    with store.write() as w:
        w.put(b"x", b"3")
        w.put(b"y", b"new")
        assert store.get(b"x") == b"2" and store.get(b"y") is None  # not committed yet
    assert store.get(b"x") == b"3" and store.get(b"y") == b"new"


@given(
    keys=st.sets(st.binary(min_size=1, max_size=3), max_size=12), lo=st.binary(max_size=3), hi=st.binary(max_size=3), reverse=st.booleans()
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_store_first_is_first_in_a_snapshot_of_its_own(store: Store, keys: set[bytes], lo: bytes, hi: bytes, reverse: bool) -> None:
    with store.write() as w:
        w.delete_range(b"", b"\xff" * 4)
        w.put_many([(k, k + b"!") for k in sorted(keys)])
    with store.read() as r:
        want = r.first(lo, hi, reverse)
    assert store.first(lo, hi, reverse) == want
    inside = sorted(k for k in keys if lo <= k < hi)
    assert want == (None if not inside else ((k := inside[-1 if reverse else 0]), k + b"!"))


def test_closed_store_raises(tmp_path: Path) -> None:
    s = LMDBStore(tmp_path / "c")
    s.close()
    with pytest.raises(StoreClosedError), s.read():
        pass
    with pytest.raises(StoreClosedError):
        s.get(b"k")
    with pytest.raises(StoreClosedError):
        s.first(b"a", b"z")


class _WatchedEnv:
    """An lmdb.Environment that records every resize made while a read transaction of this
    process is open (LMDB's reader table says so): the overlap the store must never allow."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self.resizes = 0
        self.overlaps: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def set_mapsize(self, size: int) -> None:
        me = str(os.getpid())
        live = [line for line in self._env.readers().splitlines()[1:] if line.split()[:1] == [me] and line.split()[2:] != ["-"]]
        if live:
            self.overlaps.append("; ".join(live))
        self.resizes += 1
        self._env.set_mapsize(size)


def test_transactions_and_resizes_in_many_threads_never_overlap(tmp_path: Path) -> None:
    """Transactions register without a lock (store._SharedEnv): readers in four threads, by
    ``get`` and by ``read()``, while a writer grows the map again and again. No resize may
    happen while a read transaction is open, and every read sees a committed value."""
    s = LMDBStore(tmp_path / "threads", map_size=1 << 20)
    with s.write() as w:
        w.put(b"n", b"0")
    watched = _WatchedEnv(s._shared.env)
    s._shared.env = watched  # type: ignore[assignment]  # the proxy delegates everything else
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader(i: int) -> None:
        try:
            while not stop.is_set():
                if i % 2:
                    assert s.get(b"n") is not None
                else:
                    with s.read() as r:
                        assert r.get(b"n") is not None and r.get(b"missing") is None
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(4)]
    for th in threads:
        th.start()
    try:
        for i in range(60):
            with s.write() as w:
                for j in range(50):
                    w.put(b"pad%06d" % (i * 50 + j), b"x" * 2000)
                w.put(b"n", str(i).encode())
    finally:
        stop.set()
        for th in threads:
            th.join(timeout=60)
    assert not any(th.is_alive() for th in threads), "a reader hangs"
    assert not errors, errors
    assert watched.resizes >= 3 and not watched.overlaps, (watched.resizes, watched.overlaps)
    assert not s._shared.active
    s.close()


def test_store_get_adopts_a_map_another_process_grew(tmp_path: Path) -> None:
    """A map grown by another process makes LMDB's begin fail (MDB_MAP_RESIZED): ``get``
    then takes ``read()``'s path, which adopts the new size, and reads what was written."""
    path = tmp_path / "grown"
    s = LMDBStore(path, map_size=1 << 20)
    with s.write() as w:
        w.put(b"a", b"0")
    assert s.get(b"a") == b"0"  # this process's environment is now mapped at 1 MiB
    child = _run(
        f"""
        from memdb.engine.store import LMDBStore
        s = LMDBStore({str(path)!r}, map_size=1 << 20)
        for i in range(40):
            with s.write() as w:
                for j in range(100):
                    w.put(b"pad%04d" % (i * 100 + j), b"x" * 1000)
        with s.write() as w:
            w.put(b"a", b"1")
        print(s.map_size)
        """
    )
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert int(out) > 1 << 20  # the child grew the map
    assert s.get(b"a") == b"1" and s.get(b"pad3999") == b"x" * 1000
    assert s.map_size == int(out)
    s.close()


# --- LMDB specifics ---------------------------------------------------------------------------


def test_map_grows_by_itself(tmp_path: Path) -> None:
    s = LMDBStore(tmp_path / "grow", map_size=1 << 20)
    start = s.map_size
    value = os.urandom(3000)
    with s.write() as w:  # one transaction far larger than the initial map: replayed after growth
        for i in range(4000):
            w.put(b"big%06d" % i, value)
    for batch in range(5):  # and many transactions past it
        with s.write() as w:
            for i in range(1000):
                w.put(b"k%d-%06d" % (batch, i), value)
    assert s.map_size >= 16 * start
    s.close()
    s = LMDBStore(tmp_path / "grow", map_size=1 << 20)
    with s.read() as r:
        assert sum(1 for _ in r.scan(b"big", b"big\xff")) == 4000
        assert sum(1 for _ in r.scan(b"k", b"k\xff")) == 5000
        assert r.get(b"big003999") == value
    s.close()


def test_map_grows_under_batches_of_put_many(tmp_path: Path) -> None:
    # the write log keeps each batch (its pairs in the entry itself) and replays it after growth
    s = LMDBStore(tmp_path / "grow", map_size=1 << 20)
    value = os.urandom(3000)
    with s.write() as w:
        w.put(b"a", b"1")
        for batch in range(40):
            w.put_many([(b"b%02d-%04d" % (batch, i), value) for i in range(100)])
    with s.read() as r:
        assert r.get(b"a") == b"1" and sum(1 for _ in r.scan(b"b", b"b\xff")) == 4000
        assert r.get(b"b39-0099") == value
    s.close()


def test_growth_inside_savepoint_keeps_rollback_semantics(tmp_path: Path) -> None:
    s = LMDBStore(tmp_path / "sp", map_size=1 << 20)
    value = os.urandom(2000)
    with s.write() as w:
        w.put(b"a", b"1")
        with pytest.raises(RuntimeError), w.savepoint():
            for i in range(3000):  # forces growth while the savepoint is open
                w.put(b"in%06d" % i, value)
            raise RuntimeError("boom")
        w.put(b"b", b"2")
    with s.read() as r:
        assert r.get(b"a") == b"1" and r.get(b"b") == b"2" and r.get(b"in000001") is None
    s.close()


def test_lmdb_put_many_refuses_a_key_over_lmdbs_limit_before_writing(tmp_path: Path) -> None:
    s = LMDBStore(tmp_path / "k", map_size=1 << 20)
    assert s._env.max_key_size() == LMDB_MAX_KEY_BYTES
    with pytest.raises(StoreError, match=f"put_many: key of {LMDB_MAX_KEY_BYTES + 1} bytes"), s.write() as w:
        w.put_many([(b"a", b"1"), (b"k" * (LMDB_MAX_KEY_BYTES + 1), b"2")])
    with s.write() as w:  # the longest key LMDB allows is fine
        w.put_many([(b"k" * LMDB_MAX_KEY_BYTES, b"x")])
    with s.read() as r:
        assert [k for k, _ in r.scan(b"\x00", b"\xff")] == [b"k" * LMDB_MAX_KEY_BYTES]
    s.close()


def test_put_many_grows_the_map_mid_batch_and_keeps_savepoints(tmp_path: Path) -> None:
    """A batch that fills the map is replayed whole after growth, inside a savepoint too; a
    savepoint that raises after such a batch still rolls back alone."""
    s = LMDBStore(tmp_path / "pm", map_size=1 << 20)
    value = os.urandom(2000)
    with s.write() as w:
        w.put(b"a", b"1")
        with w.savepoint():
            w.put_many([(b"kept%06d" % i, value) for i in range(2000)])
        with pytest.raises(RuntimeError), w.savepoint():
            w.put_many([(b"gone%06d" % i, value) for i in range(3000)])
            raise RuntimeError("boom")
        w.put_many([(b"b", b"2")])
        size = s.map_size
        i = 0
        while s.map_size == size:  # plain puts until the map grows again: the batches above are replayed
            w.put(b"later%06d" % i, value)
            i += 1
    with s.read() as r:
        assert r.get(b"a") == b"1" and r.get(b"b") == b"2" and r.get(b"gone000001") is None
        assert sum(1 for _ in r.scan(b"kept", b"kept\xff")) == 2000 and r.get(b"kept001999") == value
        assert sum(1 for _ in r.scan(b"later", b"later\xff")) == i
    s.close()


def _run(code: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


@pytest.mark.slow
def test_readers_in_other_processes_see_only_committed_states(tmp_path: Path) -> None:
    path = tmp_path / "iso"
    s = LMDBStore(path)
    with s.write() as w:
        w.put(b"a", b"0")
        w.put(b"b", b"0")
    # The writer keeps the invariant a == b; every commit bumps both.
    writer = _run(
        f"""
        from memdb.engine.store import LMDBStore
        s = LMDBStore({str(path)!r})
        for i in range(1, 301):
            with s.write() as w:
                w.put(b"a", str(i).encode())
                for j in range(50):
                    w.put(b"pad%d" % j, b"x" * 100)
                w.put(b"b", str(i).encode())
        print("done")
        """
    )
    reader = _run(
        f"""
        from memdb.engine.store import LMDBStore
        s = LMDBStore({str(path)!r})
        seen, torn = set(), 0
        for _ in range(3000):
            with s.read() as r:
                a, b = r.get(b"a"), r.get(b"b")
                torn += a != b
                seen.add(a)
        print(torn, len(seen))
        """
    )
    _, w_err = writer.communicate(timeout=120)
    r_out, r_err = reader.communicate(timeout=120)
    assert writer.returncode == 0, w_err
    assert reader.returncode == 0, r_err
    torn, _distinct = map(int, r_out.split())
    assert torn == 0
    with s.read() as r:
        assert r.get(b"a") == r.get(b"b") == b"300"
    s.close()


@pytest.mark.slow
def test_writer_killed_mid_transaction_leaves_last_commit(tmp_path: Path) -> None:
    path = tmp_path / "crash"
    child = _run(
        f"""
        import sys, time
        from memdb.engine.store import LMDBStore
        s = LMDBStore({str(path)!r}, map_size=1 << 20)
        with s.write() as w:
            w.put(b"committed", b"yes")
        with s.write() as w:
            for i in range(20000):  # grows the map too
                w.put(b"uncommitted%06d" % i, b"x" * 200)
            print("in-txn", flush=True)
            time.sleep(60)
        """
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == "in-txn", child.stderr.read() if child.stderr else ""
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    s = LMDBStore(path, map_size=1 << 20)
    with s.read() as r:
        assert r.get(b"committed") == b"yes"
        assert next(r.scan(b"uncommitted", b"uncommitted\xff"), None) is None
    with s.write() as w:  # the stale writer lock was released by the kill
        w.put(b"after", b"ok")
    with s.read() as r:
        assert r.get(b"after") == b"ok"
    s.close()


def test_one_environment_per_path(tmp_path: Path) -> None:
    a = LMDBStore(tmp_path / "same")
    b = LMDBStore(tmp_path / "same")
    with a.write() as w:
        w.put(b"k", b"v")
    with b.read() as r:
        assert r.get(b"k") == b"v"
    a.close()
    with b.read() as r:  # closing one handle leaves the shared environment open for the other
        assert r.get(b"k") == b"v"
    b.close()


def test_sync_false_mode_commits(tmp_path: Path) -> None:
    s = LMDBStore(tmp_path / "fast", sync=False)
    with s.write() as w:
        w.put(b"k", b"v")
    s.sync()
    s.close()
    s = LMDBStore(tmp_path / "fast")
    with s.read() as r:
        assert r.get(b"k") == b"v"
    s.close()


@pytest.mark.lmdb_only(reason="asserts LMDB's own stat() fields")
def test_stat_reports_entries(store: Store) -> None:
    assert isinstance(store, LMDBStore)
    with store.write() as w:
        w.put(b"a", b"1")
    st = store.stat()
    assert st["entries"] == 1 and st["used_bytes"] > 0


def test_each_store_keeps_its_own_sync(tmp_path: Path) -> None:
    """A sync=True store on a path a sync=False store opened first still flushes every commit
    (committed means on disk); the fast one does not pay for it."""
    fast = LMDBStore(tmp_path / "db", sync=False)
    durable = LMDBStore(tmp_path / "db")
    shared = durable._shared
    assert shared is fast._shared and not shared.env.flags()["sync"]

    class Spy:
        def __init__(self, env: Any) -> None:
            self.env, self.syncs = env, 0

        def sync(self, force: bool = False) -> None:
            self.syncs += 1
            self.env.sync(force)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.env, name)

    spy = Spy(shared.env)
    shared.env = spy
    try:
        with fast.write() as w:
            w.put(b"fast", b"1")
        assert spy.syncs == 0
        with durable.write() as w:
            w.put(b"durable", b"1")
        assert spy.syncs == 1
        fast.close()
        with durable.write() as w:  # still, after the fast one is gone
            w.put(b"durable2", b"1")
        assert spy.syncs == 2
    finally:
        shared.env = spy.env
    with durable.read() as r:
        assert r.get(b"fast") == r.get(b"durable") == b"1"
    durable.close()


def test_growth_under_this_threads_own_snapshot_fails_instead_of_hanging(tmp_path: Path) -> None:
    """A write through one store that must grow the map while the same thread holds a snapshot
    through another store on the path raises StoreFullError (growing under the snapshot would
    be unsafe, waiting for it would never end); writes that fit still go through, and once
    the snapshot ends the map grows as usual. Run in a thread, so a regression fails here."""
    a = LMDBStore(tmp_path / "db", map_size=1 << 20)
    b = LMDBStore(tmp_path / "db", map_size=1 << 20)
    with a.write() as w:
        w.put(b"x", b"1")
    outcome: list[object] = []

    def run() -> None:
        try:
            with a.read() as snap:
                with b.write() as w:  # fits: the opportunistic grow-ahead steps aside
                    w.put(b"small", b"s")
                with pytest.raises(StoreFullError, match="snapshot"):
                    for i in range(400):
                        with b.write() as w:
                            w.put(b"big%04d" % i, b"v" * 4000)
                assert snap.get(b"x") == b"1"
            for i in range(400):  # snapshot over: the map grows
                with b.write() as w:
                    w.put(b"big%04d" % i, b"v" * 4000)
            outcome.append("done")
        except BaseException as exc:  # reported by the main thread
            outcome.append(exc)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(30)
    assert not th.is_alive(), "deadlock: the writer waits for its own thread's snapshot"
    assert outcome == ["done"], outcome
    assert b.map_size > 1 << 20
    a.close()
    b.close()


def test_nested_write_through_a_second_store_raises_instead_of_hanging(tmp_path: Path) -> None:
    a = LMDBStore(tmp_path / "db")
    b = LMDBStore(tmp_path / "db")
    outcome: list[object] = []

    def run() -> None:
        try:
            with a.write() as w:
                w.put(b"k", b"v")
                with pytest.raises(StoreError, match="already has a write transaction"):
                    with b.write():
                        pass
            with b.write() as w:  # afterwards, fine
                w.put(b"k2", b"v")
            outcome.append("done")
        except BaseException as exc:
            outcome.append(exc)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(30)
    assert not th.is_alive() and outcome == ["done"], outcome
    a.close()
    b.close()


@pytest.mark.parametrize("op", ["get", "first", "scan", "scan_columns", "scan_keys"])
@pytest.mark.parametrize("kind", ["read", "write"])
def test_closing_during_a_transaction_raises_store_closed(tmp_path: Path, kind: str, op: str) -> None:
    """close() while a snapshot or transaction is open (a shutdown handler): the next call in
    it raises StoreClosedError, never a raw lmdb.Error."""
    s = LMDBStore(tmp_path / "db")
    with s.write() as w:
        w.put(b"k", b"v")
    calls: dict[str, Callable[[Any], object]] = {
        "get": lambda t: t.get(b"k"),
        "first": lambda t: t.first(b"a", b"z"),
        "scan": lambda t: list(t.scan(b"a", b"z")),
        "scan_columns": lambda t: t.scan_columns(b"a", b"z"),
        "scan_keys": lambda t: t.scan_keys(b"a", b"z"),
    }
    with pytest.raises(StoreClosedError):
        with s.read() if kind == "read" else s.write() as t:
            s.close()
            calls[op](t)


def test_opening_a_regular_file_raises_store_error(tmp_path: Path) -> None:
    f = tmp_path / "not-a-dir"
    f.write_bytes(b"hello")
    with pytest.raises(StoreError, match=r"not-a-dir.*is a file"):
        LMDBStore(f)


@pytest.mark.parametrize(
    ("args", "options", "needle"),
    [
        ((None,), {}, "path None: give the directory"),
        (("",), {}, "path '': give the directory"),
        (("x",), {"map_size": "big"}, "map_size 'big': a positive int"),
        (("x",), {"map_size": 0}, "map_size 0: a positive int"),
        (("x",), {"sync": "no"}, "sync 'no': True or False"),
        (("x",), {"verify": "yes"}, "verify 'yes': True or False"),
        (("x",), {"mode": 0o644 | 0o111}, "mode 0o755: a file mode without execute bits"),
        (("x",), {"bogus": 1}, "open: unknown option(s) 'bogus' for LMDBStore; it takes map_size, sync, max_readers, mode, verify"),
        (("x",), {"clock": 5}, "clock 5: a callable"),
        (("x",), {"sanitizer": object()}, "needs a sanitize(texts) method"),
    ],
)
def test_open_names_a_bad_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[Any, ...], options: dict[str, Any], needle: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        memdb.open(*args, **options)
    assert needle in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing created on the way


def test_compact_refuses_while_another_process_has_the_database_open(tmp_path: Path) -> None:
    """Its writes would go to the file compaction replaces, and be lost without a word."""
    path = tmp_path / "c"
    with memdb.open(path) as db:
        db.globals["T"]["x"] = 1
        child = subprocess.Popen(
            [sys.executable, "-c", f"import memdb, sys; db = memdb.open({str(path)!r}); print('open', flush=True); sys.stdin.read()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "open"
            with pytest.raises(StoreBusyError, match=f"process {child.pid} has the database open; compaction needs exclusive use"):
                db.compact()
        finally:
            child.communicate("", timeout=30)
        db.compact()  # alone again
        assert db.globals["T"]["x"] == 1


def test_get_many_reads_what_exists_in_the_snapshot_and_the_transaction(store: Store) -> None:
    with store.write() as w:
        w.put(b"a", b"1")
        w.put(b"c", b"3")
    with store.read() as r:
        assert r.get_many([b"a", b"b", b"c", b"a"]) == {b"a": b"1", b"c": b"3"}
        assert r.get_many([]) == {}
    with store.write() as w:
        w.put(b"b", b"2")  # its own write, not yet committed
        w.delete(b"a")
        assert w.get_many([b"a", b"b", b"c"]) == {b"b": b"2", b"c": b"3"}


# --- closing while other threads work (LMDBStore.close waits for them, bounded) ----------------


def test_a_close_waiting_for_a_thread_blocks_no_other_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A close waits for another thread's open snapshot (py-lmdb frees under it otherwise), but
    not while holding the registry of paths: opening another database went on waiting with it."""
    import time

    from memdb.engine import store as store_module

    monkeypatch.setattr(store_module, "_CLOSE_WAIT", 2.0)
    s = LMDBStore(tmp_path / "a")
    held, release = threading.Event(), threading.Event()

    def reader() -> None:
        with s.read():
            held.set()
            release.wait(10)

    t = threading.Thread(target=reader)
    t.start()
    held.wait(10)
    closing = threading.Thread(target=s.close)
    closing.start()
    time.sleep(0.2)  # the close now waits for the reader
    other = LMDBStore(tmp_path / "b")  # at once: no wait for the close of "a"
    assert closing.is_alive()
    other.close()
    release.set()
    t.join(10)
    closing.join(10)
    assert not closing.is_alive()


def test_a_writer_opening_another_path_during_a_close_does_not_deadlock(tmp_path: Path) -> None:
    """The close waited for the writer's lock while holding the path registry, and the writer
    waited for the registry to open another database inside its transaction: both hung."""
    s = LMDBStore(tmp_path / "a")
    started, opened = threading.Event(), threading.Event()
    outcome: list[str] = []

    def writer() -> None:
        try:
            with s.write() as w:
                w.put(b"k", b"v")
                started.set()
                threading.Event().wait(0.3)  # the close begins meanwhile
                LMDBStore(tmp_path / "b").close()
                opened.set()
        except StoreError as exc:
            outcome.append(type(exc).__name__)
        else:
            outcome.append("committed")

    t = threading.Thread(target=writer)
    t.start()
    started.wait(10)
    s.close()
    t.join(15)
    assert not t.is_alive() and opened.is_set() and outcome in (["committed"], ["StoreClosedError"])


def test_a_close_inside_a_snapshot_ends_a_grow_waiting_for_it(tmp_path: Path) -> None:
    """A writer waiting to grow the map (for this thread's snapshot to end) held the write lock
    the close waited for: the close now sees it waits on this thread, and the writer is told
    the store closed (StoreClosedError, not a raw lmdb.Error)."""
    s = LMDBStore(tmp_path / "db", map_size=1 << 20)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(10_000):
                with s.write() as w:
                    w.put(b"k%06d" % i, b"x" * 2000)
        except BaseException as exc:  # the test reads what ended it
            errors.append(exc)

    with s.read():
        t = threading.Thread(target=writer)
        t.start()
        t.join(2)  # the map filled: the writer waits in grow for this snapshot
        assert t.is_alive()
        s.close()
    t.join(10)
    assert not t.is_alive() and len(errors) == 1 and isinstance(errors[0], StoreClosedError), errors


def test_lmdb_lets_the_os_read_ahead(tmp_path: Path) -> None:
    """A cold query's faults on the map read ahead: an index range and its headers lie together,
    and with readahead off (MADV_RANDOM) each page was a read of its own (1M episodes, the page
    cache dropped: time+tag p50 2.9-7.6 ms against 1.6-1.8; warm, the same)."""
    store = LMDBStore(tmp_path / "db")
    try:
        assert store._shared.env.flags()["readahead"] is True
    finally:
        store.close()
