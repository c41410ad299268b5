"""Sessions that stall, die or are ended: a stalled writer holds the lock row for a bounded time
and is named, the server probes its clients, and a connection ended at the commit says whether
anything was committed.

Probes f02 and f02b: a writer SIGSTOPped inside a transaction, or cut off by the network and
killed, held every other writer with no error and no end (the server kept the session ``idle in
transaction`` until its TCP gave up, 2 hours and more). Probe f01: a connection ended just before
the COMMIT went gave "commit: 57P01: terminating connection due to administrator command", without
the promised "outcome unknown", though nothing had been committed.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from postgres_server import drop, unique_name

from memdb.engine.postgres import PostgresStore
from memdb.errors import StoreBusyError, StoreError

SECRET = "S3cretPw!x"


@pytest.fixture
def url(pg_url: str) -> Iterator[Callable[[str], str]]:
    """URLs of one fresh memdb database, with a password (trust: the server never asks) and an
    application_name."""
    name = unique_name()
    base = pg_url.replace("memdb@", f"memdb:{SECRET}@", 1)

    def make(app: str, extra: str = "") -> str:
        return f"{base}?application_name={app}&memdb_name={name}{extra}"

    yield make
    drop(pg_url, name)


def _session(pg_url: str, app: str) -> tuple[int, str]:
    with psycopg.connect(pg_url, autocommit=True) as admin:
        rows = admin.execute("SELECT pid, state FROM pg_stat_activity WHERE application_name = %s", (app,)).fetchall()
    assert len(rows) == 1, rows
    return int(rows[0][0]), str(rows[0][1])


def _bounded(call: Callable[[], Any], seconds: float) -> Any:
    """``call()`` in a thread; fail (not hang, as the old code did) if it takes longer than ``seconds``."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_a_stalled_writer_makes_others_fail_within_lock_timeout_naming_it(url: Callable[[str], str], pg_url: str) -> None:
    holder = PostgresStore(url("stalled_holder"))
    other = PostgresStore(url("waiting_writer", "&memdb_lock_timeout=1"))  # the URL parameter
    try:
        assert other.lock_timeout == 1.0 and holder.lock_timeout == 60.0
        with holder.write() as w:
            w.put(b"held", b"1")
            assert w.first(b"held", b"helm") is not None  # sent: the lock row is held, the session idle in transaction
            pid, state = _session(pg_url, "stalled_holder")
            assert state == "idle in transaction"
            started = time.monotonic()
            with pytest.raises(StoreBusyError) as info:
                _bounded(lambda: _write(other, b"other"), 30)
            waited = time.monotonic() - started
        message = str(info.value)
        assert 0.9 <= waited < 15, waited
        assert f"session {pid}" in message and "'stalled_holder'" in message and "idle in transaction" in message
        assert "lock_timeout 1 s" in message and "pg_terminate_backend" in message and "nothing was committed" in message
        assert SECRET not in message
        _write(other, b"after")  # the holder committed: the lock is free again
        with other.read() as r:
            assert r.get(b"held") == b"1" and r.get(b"other") is None and r.get(b"after") == b"x"
    finally:
        holder.close()
        other.close()


def _write(store: PostgresStore, key: bytes) -> None:
    with store.write() as w:
        w.put(key, b"x")


def test_the_server_ends_a_writer_idle_past_idle_timeout_and_the_writer_replays(url: Callable[[str], str], pg_url: str) -> None:
    """A frozen writer no longer holds the others forever: the server ends its session after
    ``idle_timeout`` (the lock row is free), and the writer, when it resumes, replays its
    transaction on a fresh connection, as after a restart (nothing had been committed)."""
    holder = PostgresStore(url("frozen_holder"), idle_timeout=1)
    other = PostgresStore(url("next_writer"), lock_timeout=20)
    try:
        with holder.write() as w:
            w.put(b"a", b"1")
            assert w.first(b"a", b"b") == (b"a", b"1")
            time.sleep(2.5)  # stands for the process being stopped (SIGSTOP, a suspended laptop)
            started = time.monotonic()
            _bounded(lambda: _write(other, b"other"), 30)
            assert time.monotonic() - started < 5  # the lock row was free: nobody waited for the frozen one
            w.put(b"b", b"2")
            assert w.first(b"a", b"c") == (b"a", b"1")  # its session is gone: replayed on a fresh connection
        assert holder.replays == 1
        with other.read() as r:
            assert [r.get(k) for k in (b"a", b"b", b"other")] == [b"1", b"2", b"x"]
    finally:
        holder.close()
        other.close()


def _pooled(store: PostgresStore) -> Any:
    """One of the store's connections (checked out: the caller checks it in)."""
    return store._checkout()


@pytest.mark.parametrize(("extra", "idle", "interval", "count"), [("", 30, 10, 3), ("&keepalives_idle=45&keepalives_count=4", 45, 10, 4)])
def test_connections_probe_a_dead_peer_on_both_sides(url: Callable[[str], str], extra: str, idle: int, interval: int, count: int) -> None:
    """TCP keepalives on the client's socket (libpq's options, unless the URL sets them) and on
    the server's (its session settings), so a dead peer is found in about a minute."""
    store = PostgresStore(url("keepalive", extra))
    conn = _pooled(store)
    try:
        sock = socket.socket(fileno=os.dup(conn.pgconn.socket))
        try:
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == idle
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == interval
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == count
        finally:
            sock.close()
        server = [conn.execute(f"SHOW tcp_keepalives_{k}").fetchone()[0] for k in ("idle", "interval", "count")]
        assert server == [str(idle), str(interval), str(count)]
    finally:
        store._checkin(conn)
        store.close()


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"lock_timeout": -1}, "lock_timeout -1"),
        ({"idle_timeout": "soon"}, "idle_timeout 'soon'"),
        ({"lock_timeout": 0.0004}, "lock_timeout 0.0004"),  # sent in whole ms it was 0: no limit at all
    ],
)
def test_bad_limits_are_named(url: Callable[[str], str], options: dict[str, Any], needle: str) -> None:
    with pytest.raises(StoreError, match=needle):
        PostgresStore(url("bad"), **options)
    with pytest.raises(StoreError, match="both given"):
        PostgresStore(url("bad", "&memdb_lock_timeout=5"), lock_timeout=6)


def _end_before_commit(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Have the server end the session right after the store's last check before COMMIT (what a
    restart or an operator's pg_terminate_backend landing there does; the probe's f01)."""
    armed = [False]
    real = PostgresStore._quiet

    def then_ended(conn: psycopg.Connection[Any]) -> bool:
        ok = real(conn)
        if armed[0]:
            armed[0] = False
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (conn.info.backend_pid,))  # returns once it has gone
        return ok

    monkeypatch.setattr(PostgresStore, "_quiet", staticmethod(then_ended))
    return armed


def test_a_connection_ended_before_the_commit_was_reached_is_replayed(
    url: Callable[[str], str], pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session ended with writes still to go before the COMMIT: the server's 57P01 came as
    the answer to the first of them, so the COMMIT never ran and the transaction is replayed."""
    store = PostgresStore(url("ended_early"))
    armed = _end_before_commit(pg_url, monkeypatch)
    try:
        with store.write() as w:
            w.put(b"a", b"1")
            assert w.first(b"a", b"b") == (b"a", b"1")
            w.put(b"b", b"2")  # buffered: it goes with the COMMIT
            armed[0] = True
        assert store.replays == 1
        with store.read() as r:
            assert (r.get(b"a"), r.get(b"b")) == (b"1", b"2")
    finally:
        store.close()


def test_a_connection_ended_at_the_commit_says_the_outcome_is_unknown(
    url: Callable[[str], str], pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everything sent, only the COMMIT to go, and the session ended: the answer cannot tell
    whether the server committed first, and the error says so (docs/backends.md)."""
    store = PostgresStore(url("ended_at_commit"))
    armed = _end_before_commit(pg_url, monkeypatch)
    try:
        with pytest.raises(StoreError) as info, store.write() as w:
            w.put(b"a", b"1")
            assert w.first(b"a", b"b") == (b"a", b"1")  # sent: nothing left but the COMMIT
            armed[0] = True
        message = str(info.value)
        assert "commit" in message and "outcome is unknown" in message and "may or may not have happened" in message
        assert SECRET not in message
        assert store.replays == 0
        with store.write() as w:  # the store goes on
            w.put(b"c", b"3")
    finally:
        store.close()


def test_limits_of_zero_are_not_sent(url: Callable[[str], str]) -> None:
    """``0`` sets nothing: the escape for an engine that refuses the settings; the server's own apply."""
    store = PostgresStore(url("no_limits"), lock_timeout=0, idle_timeout=0)
    try:
        with store.write() as w:
            w.put(b"a", b"1")
            assert w._query("SHOW lock_timeout", ()) == [("0",)]
        assert not any("set_config" in sql for sql in store._sql.open_write)
    finally:
        store.close()
