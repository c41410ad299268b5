"""A ``Store`` on a PostgreSQL-wire server, so agents on many machines share one memory.

One memdb database is one table ``<name>_kv (k BYTEA PRIMARY KEY, v BYTEA)`` plus a one-row
lock table ``<name>_lock``: ordered scans, prefix kills and merges are primary-key range
operations, and many memdb databases can share a server under different names.

Transactions (``docs/backends.md`` has the reasoning and the round-trip counts):

- a read is a ``REPEATABLE READ, READ ONLY`` transaction whose snapshot is taken on entry;
- a write first updates the lock row, so writers of one memdb database run one at a time, as
  on LMDB: every write sees the latest commit, ``increment`` is atomic across machines, and
  no two memdb writers can ever make each other fail;
- statements are batched: a write's BEGIN, lock and puts (merged into multi-row upserts) are
  held and travel in one multi-statement query with the next statement that needs an
  answer, so a write costs one round trip per read it makes plus one to commit;
- a serialization failure or deadlock (SQLSTATE 40001/40P01: possible on engines without
  READ COMMITTED, or with ``isolation="serializable"``) is retried within a budget by
  replaying the transaction's statements on a fresh transaction and checking that every
  read returns what it returned before. Then the code inside the ``with`` block, which cannot
  be re-run, saw exactly what a serial execution would show it. If a read differs, the
  transaction is rolled back and ``TransactionConflictError`` asks the caller to retry.

psycopg 3 is imported only when a store is opened: ``pip install 'memdb-agent[postgres]'``.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import select
import threading
import time
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, unquote, urlsplit

from memdb.engine.process import after_fork
from memdb.engine.store import batch_pairs
from memdb.errors import NotFoundError, StoreBusyError, StoreClosedError, StoreError, TransactionConflictError

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore", "is_postgres_url", "looks_like_url", "redact_url", "shown_url"]

_SCHEMES: Final = ("postgresql://", "postgres://")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")
_SNAPSHOT_WAIT = 10.0  # seconds compact() waits for other sessions' snapshots to end
_NAME_PARAM: Final = "memdb_name"
# memdb's own URL parameters (taken out before libpq sees the URL) for the limits below, in seconds
_LOCK_PARAM: Final = "memdb_lock_timeout"
_IDLE_PARAM: Final = "memdb_idle_timeout"
_LOCK_TIMEOUT: Final = 60.0  # how long a write waits for the lock row before StoreBusyError
_IDLE_TIMEOUT: Final = 300.0  # how long the server keeps a write whose client went silent mid-transaction
# libpq's TCP keepalives, unless the URL sets them: a dead server (or, set on the server's side
# too, a dead client) is found in about a minute (30 s idle, then 3 probes 10 s apart), not the
# system's 2 hours and more
_KEEPALIVES: Final = {"keepalives": "1", "keepalives_idle": "30", "keepalives_interval": "10", "keepalives_count": "3"}
_LOCK_NOT_AVAILABLE: Final = "55P03"
_IDLE_ENDED: Final = "25P03"  # idle_in_transaction_session_timeout: the server ended a stalled write
_RETRYABLE: Final = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
# a connection the server ended (admin_shutdown, crash_shutdown: a restart; a write idle past
# idle_timeout) or that just closed (None)
_LOST: Final = frozenset({None, "57P01", "57P02", _IDLE_ENDED})
_ISOLATIONS: Final = {"read committed": "READ COMMITTED", "serializable": "SERIALIZABLE"}
_PUT_ROWS: Final = 500  # rows per multi-row upsert (two parameters each; Postgres allows 65,535)
_MAX_PAGE_GROWTH: Final = 16  # the largest page: 16x the first


def is_postgres_url(path: object) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL (what ``memdb.open`` routes here): the
    scheme in any case, as RFC 3986 reads schemes, and blanks around the URL ignored (libpq takes
    neither, and ``PostgreSQL://...`` became a local directory named after the URL)."""
    return isinstance(path, str) and path.strip().lower().startswith(_SCHEMES)


def _normal(url: str) -> str:
    """``url`` as libpq takes it: no blanks around it, the scheme in lower case."""
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    return f"{scheme.lower()}{sep}{rest}"


# The grammar of a URL-shaped path: what ``looks_like_url`` refuses (docs/backends.md, "URL-shaped
# paths"; test_url_shapes pins each form, test_a_directory_is_not_url_shaped its neighbours). A
# connection string made a directory named after it, password and all, and the agent's memories
# went there instead of to the server. Matched at the start of the path folded (``_folded``),
# blanks around it aside:
#
#   shaped   = anything "://"            postgres ://h, DATABASE_URL=postgresql://..., ./a://b
#            | scheme ":" "/"            postgresql:/h/db, memdb:/pw@h
#            | pg "//"                   postgresql//h/db
#            | [lead] user ":" ... "@"   user:pw@h, my user:pw@h, ana@corp.com:pw@h, //ana:pw@h,
#                                        postgresql//ana:pw@h, postgresql/ana:pw@h (a Path's)
#            | keyword "="               host=h password=pw (libpq's key=value), Host=h;Password=pw
#   scheme   = letter (letter | digit | + - .)+   two characters at least: C:/mem is a drive
#   pg       = "postgres" | "postgresql", any case
#   lead     = [scheme] "//" | pg "/"
#   user     = a letter or _, then anything but / and :   not a drive (C:\...), not a time (2026-01-01T10:00/)
#   keyword  = a libpq connection keyword (or Npgsql's), any case
#
# So ``backups//ana@laptop``, ``postgres/notes@2026`` and ``2026-01-01T10:00/ana@host`` (no user:secret
# there) are directories, and ``./`` before any name makes it one.
_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]+"
_PG = r"(?i:postgres(?:ql)?)"
_USER = r"(?![A-Za-z]:[\\/])[^\W\d][^/:]*"
_KEYWORDS: Final = (
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth", "channel_binding",
    "connect_timeout", "client_encoding", "options", "application_name", "fallback_application_name",
    "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
    "replication", "gssencmode", "sslmode", "sslnegotiation", "requiressl", "sslcompression", "sslcert",
    "sslkey", "sslkeylogfile", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni",
    "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
    "gssdelegation", "service", "target_session_attrs", "load_balance_hosts", _NAME_PARAM, _LOCK_PARAM, _IDLE_PARAM,
    "server", "database", "username", "uid", "pwd",  # Npgsql's and ODBC's, for a pasted .NET string
)  # fmt: skip
_KEYWORD_NAME = rf"(?i:{'|'.join(sorted(_KEYWORDS, key=len, reverse=True))})"
_KEYWORD = rf"{_KEYWORD_NAME}\s*="
_URL_SHAPE: Final = re.compile(rf".*://|{_SCHEME}\s*:\s*/|{_PG}\s*//|(?:(?:{_SCHEME}\s*)?//|{_PG}\s*/)?{_USER}:[^@]*@|{_KEYWORD}", re.S)
# a key=value pair's start in a connection string: at the start, or after blanks or a ;
_PAIR = re.compile(rf"(?:^|[\s;]+)({_KEYWORD_NAME})\s*=\s*")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'?", re.S)  # libpq's quoting: \' and \\ inside
# a parameter after ``?`` or ``&`` (or ``;``), its value to the next ``&``: a ``#`` in a password is no end
_PARAM = re.compile(r"([?&;])([^=?&;]*)=([^&]*)")


def _folded(text: str) -> str:
    """``text`` with each character as NFKC makes it where that is one character (a full-width
    ``：`` or ``＠`` pasted from a document is ``:`` or ``@``), and invisible format characters (a
    zero-width space) as blanks: one for one, so a span found in it masks the same characters of
    ``text``."""
    return "".join(" " if unicodedata.category(c) == "Cf" else n if len(n := unicodedata.normalize("NFKC", c)) == 1 else c for c in text)


def looks_like_url(path: object) -> bool:
    """Whether ``path`` is shaped like a URL or connection string (a mistyped one, or of another
    scheme, or libpq's key=value form) rather than a directory: ``memdb.open`` refuses it instead
    of making a directory named after it (the grammar above). A directory really named so opens
    as ``./name`` (with ``/`` for each ``//``)."""
    return isinstance(path, str) and _URL_SHAPE.match(_folded(path).strip()) is not None


def _password_span(text: str) -> tuple[int, int] | None:
    """Where the password of URL-shaped ``text`` is: from the user's ``:`` to the last ``@``
    (more, never less). The user's ``:`` is the first one, unless ``//`` follows it and no ``//``
    or ``@`` comes before it (a scheme's: ``mysql://ana:pw@h``). ``postgresql:/ana:pw@h`` is masked
    from its first ``:``, as ``ana:/pw:x@h`` is the same shape (test_url_shapes)."""
    text = _folded(text)
    at = text.rfind("@")
    if at < 0:
        return None
    colons = [i for i, c in enumerate(text[:at]) if c == ":"]
    if colons and text[colons[0] + 1 :].lstrip().startswith("//") and "//" not in text[: colons[0]] and "@" not in text[: colons[0]]:
        colons = colons[1:]  # a scheme's
    return (colons[0] + 1, at) if colons else None


def _conninfo_spans(text: str) -> list[tuple[int, int]]:
    """The values of a key=value connection string but harmless ones: quoted, to the closing
    ``'``; otherwise to the next pair (a blank in a .NET ``Password=a b;`` is part of it)."""
    spans, pos = [], 0
    while (pair := _PAIR.search(text, pos)) is not None:
        start = pair.end()
        if text.startswith("'", start):
            end = _QUOTED.match(text, start).end()  # type: ignore[union-attr]  # always matches at a '
        else:
            after = _PAIR.search(text, start)
            end = after.start() if after else len(text)
        if pair[1].lower() not in _SHOWN_PARAMS:
            spans.append((start, end))
        pos = max(end, start + 1)
    return spans


def _masked(text: str) -> str:
    """``text`` with its password and every parameter value but harmless ones as ``***``: the
    spans found in the folded text, each replaced whole in ``text``."""
    folded = _folded(text)
    if re.match(rf"\s*{_KEYWORD}", folded):  # key=value pairs: a ; separates them, not a URL's parameters
        spans = _conninfo_spans(folded)
    else:
        spans = [m.span(3) for m in _PARAM.finditer(folded) if m[2] not in _SHOWN_PARAMS]
    if (span := _password_span(folded)) is not None:
        spans.append(span)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:  # overlapping: one ***
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    out, pos = [], 0
    for start, end in merged:
        out += [text[pos:start], "***"]
        pos = end
    return "".join(out) + text[pos:]


def shown_url(url: str) -> str:
    """A URL, or anything shaped like one, as messages show it: ``redact_url`` for a PostgreSQL
    URL; otherwise with the password (after the user's ``:``, to the last ``@``), parameter
    values and a connection string's values (but harmless ones) masked."""
    return redact_url(url) if is_postgres_url(url) else _masked(url)


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError("postgres store: the psycopg 3 driver is not installed (pip install 'memdb-agent[postgres]')") from None
    return psycopg


def _ready(fd: int, events: int, timeout_ms: int) -> bool:
    """Whether socket ``fd`` is ready for ``events`` within ``timeout_ms``: poll, not select,
    which refuses a descriptor of 1024 or more (a busy server holds that many)."""
    poller = select.poll()
    poller.register(fd, events)
    return bool(poller.poll(timeout_ms))


def _split_url(url: str) -> tuple[str, str | None]:
    """The libpq URL without memdb's own parameters, and ``memdb_name``; the rest is passed as
    given (rebuilt by ``urlunsplit``, ``postgresql:///db?host=/run/pg`` lost its ``//``;
    re-encoded, a ``%20`` became a ``+`` that libpq does not decode)."""
    conninfo, params = _split_params(url)
    return conninfo, params.get(_NAME_PARAM)


def _split_params(url: str) -> tuple[str, dict[str, str]]:
    """The libpq URL without memdb's own parameters (``memdb_name``, ``memdb_lock_timeout``,
    ``memdb_idle_timeout``: libpq refuses a parameter it does not know), and their values (the
    last of each)."""
    url = _normal(url)
    try:
        urlsplit(url)  # libpq refuses what this refuses (an unclosed [ in the host)
    except ValueError as exc:
        raise StoreError(f"postgres store {redact_url(url)}: the URL does not parse: {exc} (check the host part)") from None
    base, mark, query = url.partition("?")
    kept, params = [], {}
    for item in query.split("&") if mark else ():
        key, _, value = item.partition("=")
        if unquote(key) in (_NAME_PARAM, _LOCK_PARAM, _IDLE_PARAM):
            params[unquote(key)] = unquote(value)
        elif item:
            kept.append(item)
    return (f"{base}?{'&'.join(kept)}" if kept else base), params


# Query parameters whose values messages may show; every other value (password, sslpassword,
# and whatever a caller put there) is masked, as is the password of the user part.
_SHOWN_PARAMS: Final = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "sslmode", "connect_timeout", "application_name",
    "target_session_attrs", "load_balance_hosts", "gssencmode", "channel_binding", _NAME_PARAM, _LOCK_PARAM, _IDLE_PARAM,
})  # fmt: skip


def redact_url(url: str) -> str:
    """The URL as messages show it: scheme, user, hosts, database and harmless parameters;
    the password and every other parameter's value as ``***`` (a URL that does not parse, whole)."""
    url = _normal(url)
    try:
        parts = urlsplit(url)
        if "@" in f"{parts.path}{parts.query}{parts.fragment}":  # a password with an unescaped /, ? or # in it
            return _masked(url)  # test_url_shapes, test_no_password_is_ever_shown: to the last @
        userinfo, at, hosts = parts.netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}{':***' if ':' in userinfo else ''}@{hosts}" if at else hosts
        query = "&".join(f"{k}={v if k in _SHOWN_PARAMS else '***'}" for k, v in parse_qsl(parts.query, keep_blank_values=True))
        # ``;password=`` in the path is masked as ``_masked`` masks it elsewhere (libpq reads it as
        # part of the database name; a review's find)
        path = _PARAM.sub(lambda m: f"{m[1]}{m[2]}={m[3] if m[2] in _SHOWN_PARAMS else '***'}", parts.path)
        return f"{parts.scheme}://{netloc}{path}{'?' if query else ''}{query}"  # a fragment means nothing to libpq
    except ValueError:  # e.g. an unclosed [ in the host
        return f"{url.partition('://')[0]}://***"


def _secrets_of(url: str) -> tuple[str, ...]:
    """The password and the masked parameter values of ``url``, which a driver's message could
    repeat (a conninfo it cannot parse): ``_say`` masks them too."""
    try:
        parts = urlsplit(url)
        found = [parts.password or "", *(v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in _SHOWN_PARAMS)]
        if (span := _password_span(url)) is not None:  # a password starting with /, which urlsplit reads as a path
            found.append(url[span[0] : span[1]])
    except ValueError:
        return ()
    return tuple(sorted({s for s in found if len(s) >= 3}, key=len, reverse=True))


def _seconds(what: str, given: float | None, in_url: str | None, param: str, default: float) -> float:
    """A limit in seconds from the option, else the URL parameter, else ``default``; 0 is none."""
    if given is not None and in_url is not None:
        raise StoreError(f"postgres store: {what} {given!r} and URL parameter {param}={in_url!r} both given (give one)")
    value: object = given if given is not None else in_url if in_url is not None else default
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = -1.0
    if not (seconds == 0 or 0.001 <= seconds < 86400 * 24):  # sent in whole ms: a smaller limit would be 0, none
        raise StoreError(f"postgres store: {what} {value!r}: seconds, 0 (no limit) or from 0.001, under 24 days")
    return seconds


def _held_by(holders: list[tuple[Any, ...]], secrets: tuple[str, ...]) -> str:
    """The sessions of ``_lock_holders`` as a message names them."""
    if not holders:
        return "held by a session the server does not name (of another role, or it let go meanwhile)"
    shown = []
    for pid, app, state, addr, seconds in holders:
        facts = [f"application_name {app!r}" if app else "", state or "", f"for {seconds} s" if seconds is not None else ""]
        facts.append(f"from {addr}" if addr else "")
        text = ", ".join(f for f in facts if f)
        for secret in secrets:
            text = text.replace(secret, "***")
        shown.append(f"session {pid}" + (f" ({text})" if text else ""))
    return "held by " + "; ".join(shown)


def _digest(rows: list[tuple[Any, ...]]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for row in rows:
        for col in row:
            raw = col if isinstance(col, bytes) else repr(col).encode()
            h.update(len(raw).to_bytes(4, "big"))
            h.update(raw)
    return h.digest()


def _say(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """A server message on one line (libpq's span several, with tabs), ``secrets`` masked."""
    text = " ".join(str(exc).split())
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None)
    return state if isinstance(state, str) else None


_FORKS = [0]


@after_fork
def _after_fork_in_child() -> None:
    _FORKS[0] += 1


class _Sql:
    """The statements of one memdb database, with its table names quoted once."""

    def __init__(self, name: str, write_isolation: str, lock_timeout: float = _LOCK_TIMEOUT, idle_timeout: float = _IDLE_TIMEOUT) -> None:
        kv, lock = f'"{name}_kv"', f'"{name}_lock"'
        self.kv, self.lock = kv, lock
        self.begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        # a write's opening, sent with its first statement: BEGIN, its limits (for this transaction
        # only: SET LOCAL; a limit of 0 is not set, so the server's own applies), the lock row
        limits = [
            f"set_config('{setting}', '{round(seconds * 1000)}', true)"
            for setting, seconds in (("lock_timeout", lock_timeout), ("idle_in_transaction_session_timeout", idle_timeout))
            if seconds > 0
        ]
        self.open_write = [
            f"BEGIN ISOLATION LEVEL {write_isolation}",
            *([f"SELECT {', '.join(limits)}"] if limits else []),
            f"UPDATE {lock} SET n = n + 1 WHERE id = 1",
        ]
        # who holds the lock row (the transaction that updated it last, while it runs) or the table
        # (VACUUM FULL): pg_locks shows every session's locks to every role; pg_stat_activity the
        # rest of one's own role's sessions only
        self.holders = (
            "SELECT l.pid, a.application_name, a.state, host(a.client_addr), floor(extract(epoch FROM now() - a.xact_start))::bigint "
            "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.granted AND l.pid <> pg_backend_pid() AND ("
            f"(l.locktype = 'transactionid' AND l.transactionid = (SELECT xmax FROM {lock} WHERE id = 1)) OR "
            "(l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.relation IN (to_regclass(%s), to_regclass(%s)))) "
            "ORDER BY l.pid"
        )
        self.get = f"SELECT v FROM {kv} WHERE k = %s"
        self.get_many = f"SELECT k, v FROM {kv} WHERE k = ANY(%s)"
        self.scan = f"SELECT k, v FROM {kv} WHERE k >= %s AND k < %s ORDER BY k LIMIT %s"
        self.scan_reverse = f"SELECT k, v FROM {kv} WHERE k >= %s AND k < %s ORDER BY k DESC LIMIT %s"
        self.scan_keys = f"SELECT k FROM {kv} WHERE k >= %s AND k < %s ORDER BY k LIMIT %s"
        self.scan_keys_reverse = f"SELECT k FROM {kv} WHERE k >= %s AND k < %s ORDER BY k DESC LIMIT %s"
        self.delete = f"WITH d AS (DELETE FROM {kv} WHERE k = %s RETURNING k) SELECT count(*) FROM d"
        self.delete_range = f"WITH d AS (DELETE FROM {kv} WHERE k >= %s AND k < %s RETURNING k) SELECT count(*) FROM d"
        self.count = f"SELECT count(*) FROM {kv}"
        self._upserts: dict[int, str] = {}

    def upsert(self, rows: int) -> str:
        sql = self._upserts.get(rows)
        if sql is None:
            values = ", ".join(["(%s, %s)"] * rows)
            sql = f"INSERT INTO {self.kv} (k, v) VALUES {values} ON CONFLICT (k) DO UPDATE SET v = excluded.v"
            self._upserts[rows] = sql
        return sql


class _PgTxn:
    """One server transaction on one pooled connection, with a replayable log.

    Statements whose answer nobody waits for (BEGIN and the lock row of a write, upserts,
    savepoints) are bound client-side and held in ``_pending``; they travel in one
    multi-statement query with the next statement that needs an answer, and with COMMIT.
    The log holds every statement sent, in order: writes as bound SQL or with their
    parameters, reads with a digest of their rows. ``_restart`` replays it on a fresh
    transaction after a retryable failure, and continues only if every read gives the same
    rows again.
    """

    def __init__(self, store: PostgresStore, write: bool) -> None:
        self._store = store
        self._write = write
        self._sql = store._sql
        self._conn: psycopg.Connection[Any] | None = store._checkout()
        self._bind = store._pg.ClientCursor(self._conn).mogrify
        self._pending: list[str] = []
        self._puts: dict[bytes, bytes] = {}
        self._log: list[tuple[str, tuple[Any, ...] | None, bytes | None]] = []
        self._started = False  # the server transaction was begun
        self._depth = 0
        self._attempts = 0
        self._broken: str | None = None
        try:
            self._begin()
        except BaseException:
            self._finish(ok=False)
            raise

    # --- plumbing -------------------------------------------------------------------------------

    def _live(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._broken is not None:
            raise StoreError(f"postgres transaction: no longer usable ({self._broken or 'already ended'})")
        return self._conn

    def _begin(self) -> None:
        """A read takes its snapshot now (one round trip); a write queues BEGIN and its lock
        row, which go with its first statement: nothing it does before needs the server."""
        if self._write:
            self._pending = list(self._sql.open_write)
            return
        self._pending = [self._sql.begin_read]
        try:
            self._send("SELECT 1", None)  # Postgres takes the snapshot at the first statement, not at BEGIN
        except Exception as exc:
            self._failed(exc, "begin")

    def _send(self, sql: str, params: tuple[Any, ...] | None) -> psycopg.Cursor[Any]:
        """Send the pending statements and then this one; the cursor holds this one's result.

        ``params=None`` means ``sql`` is bound already. Batched, that is one round trip; a
        statement with parameters (a bulk upsert, a read outside a batch) is bound by the
        server and, after pending statements, costs one more.
        """
        conn = self._live()
        store = self._store
        pending, self._pending = self._pending, []
        if pending:
            self._started = True
        if params is None and store._batch:
            cur = conn.execute("; ".join([*pending, sql]))
            while cur.nextset():  # the cursor starts at the first statement's result
                pass
            store._round_trips += 1
            return cur
        if pending and store._batch:
            conn.execute("; ".join(pending))
            store._round_trips += 1
        else:
            for statement in pending:
                conn.execute(statement)
                store._round_trips += 1
        store._round_trips += 1
        return conn.execute(sql, params, binary=params is not None)

    def _queue(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """Hold a statement whose result nobody waits for; it goes with the next ``_send``."""
        self._live()
        bound = self._bind(sql, params) if params else sql
        self._log.append((bound, None, None))
        self._pending.append(bound)

    def _query(self, sql: str, params: tuple[Any, ...], lo: bytes = b"", hi: bytes | None = None) -> list[tuple[Any, ...]]:
        """Run a statement that reads or changes keys in ``[lo, hi)`` and wait for its rows.

        Buffered puts in that range are sent first (with the statement, in one round trip);
        others stay buffered: writes to other keys commute with it, and reads of them are
        answered from the buffer.
        """
        if self._puts and (hi is None or any(lo <= k < hi for k in self._puts)):
            self._flush_puts()
        while True:
            try:
                rows = self._fetch(sql, params)
            except Exception as exc:
                self._failed(exc, "read")
                continue  # _failed returned: the transaction was replayed, ask again
            self._log.append((sql, params, _digest(rows)))
            return rows

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if self._pending:  # ride along with the pending statements
            return self._send(self._bind(sql, params), None).fetchall()
        return self._send(sql, params).fetchall()

    def _flush_puts(self, bulk: bool = False) -> None:
        """Turn buffered puts into multi-row upserts: bound into the batch while few, sent now
        with server-side binding (cheaper to encode) once a full chunk has gathered."""
        if not self._puts or (bulk and len(self._puts) < _PUT_ROWS):
            return
        items = list(self._puts.items())
        self._puts = {}
        for start in range(0, len(items), _PUT_ROWS):
            chunk = items[start : start + _PUT_ROWS]
            params = tuple(x for kv in chunk for x in kv)
            sql = self._sql.upsert(len(chunk))
            if len(chunk) < _PUT_ROWS:
                self._queue(sql, params)
                continue
            self._log.append((sql, params, None))
            try:
                self._send(sql, params)
            except Exception as exc:
                self._failed(exc, "write")  # a replay re-sends this upsert from the log

    def _failed(self, exc: Exception, what: str) -> None:
        """Replay after a retryable failure (returns), or end the transaction and raise."""
        pg = self._store._pg
        if not isinstance(exc, pg.Error):
            self._broken = f"{what} failed"
            self._finish(ok=False)
            raise exc
        state = _sqlstate(exc)
        if state in _RETRYABLE:
            self._restart(exc)
            return
        if state == _LOCK_NOT_AVAILABLE:
            self._busy(what)
        closed = self._conn is None or self._conn.closed
        # (25P03 is a pg.InternalError: its class is "invalid transaction state")
        lost = (isinstance(exc, pg.OperationalError) or state == _IDLE_ENDED) and state in _LOST and closed
        if lost and (what != "commit" or state == _IDLE_ENDED):
            # the connection was lost before anything was committed (a server restart leaves
            # every pooled connection dead; the server ends a write idle past idle_timeout only
            # while it waits for the next statement, so before a COMMIT): the server rolled the
            # transaction back, so it is replayed on a fresh connection, as a serialization
            # failure is; a commit whose answer was lost may have happened, and is never replayed
            self._lost()
            self._restart(exc)
            return
        self._broken = f"{what} failed"
        self._finish(ok=False)
        raise self._store._translate(exc, what, closed) from None

    def _busy(self, what: str) -> None:
        """Raise StoreBusyError for a write whose wait for a lock passed ``lock_timeout``, naming
        who holds it: a writer stalled inside a transaction (a frozen process, a cut network)
        held every other writer with no error and no end (probes f02, f02b)."""
        store = self._store
        self._rollback_quietly()
        holders = store._lock_holders(self._conn) if self._conn is not None else []
        self._broken = "the write lock was busy"
        self._finish(ok=False)
        raise StoreBusyError(
            f"postgres store {store.url}: write ({what}): the write lock of memdb database {store.name!r} was not free within "
            f"lock_timeout {store.lock_timeout:g} s: {_held_by(holders, store._secrets)} "
            f"(nothing was committed; retry later. A holder in state 'active' is working (a long import or maintain): "
            f"raise lock_timeout to wait for it; one 'idle in transaction' is stalled or cut off: the server ends it after "
            f"idle_timeout {store.idle_timeout:g} s, or end it now with SELECT pg_terminate_backend(pid))"
        ) from None

    def _lost(self) -> None:
        """Drop this transaction's connection, which the server ended, and the pool's idle ones
        (a restart ends them all): the replay checks out a fresh one."""
        if self._conn is not None:
            self._store._discard(self._conn)
            self._conn = None
        self._started = False
        self._store._drop_idle()

    def _restart(self, cause: Exception) -> None:
        pg = self._store._pg
        store = self._store
        while True:
            self._attempts += 1
            if self._attempts > store._retries:
                self._broken = "retries exhausted"
                self._finish(ok=False)
                raise TransactionConflictError(
                    f"postgres transaction: still failing after {store._retries} retries "
                    f"({_sqlstate(cause)}: {_say(cause, store._secrets)}) (retry the transaction later)"
                ) from None
            self._rollback_quietly()
            time.sleep(min(0.002 * 2**self._attempts, 0.2) * random.uniform(0.5, 1.5))
            try:
                if self._conn is None:
                    self._conn = store._checkout()
                    self._bind = store._pg.ClientCursor(self._conn).mogrify
                self._begin()
                for sql, params, digest in self._log:
                    if params is None:
                        self._pending.append(sql)
                    elif digest is None:
                        self._send(sql, params)
                    elif _digest(self._fetch(sql, params)) != digest:
                        self._broken = "a read changed on replay"
                        self._finish(ok=False)
                        raise TransactionConflictError(
                            "postgres transaction: another writer changed data this transaction had read, "
                            f"and the server refused to serialize them ({_sqlstate(cause)}) (retry the transaction)"
                        )
                store._replays += 1
                return
            except pg.Error as exc:
                if _sqlstate(exc) == _LOCK_NOT_AVAILABLE:
                    self._busy("replay")
                if _sqlstate(exc) not in _RETRYABLE:
                    self._broken = "replay failed"
                    self._finish(ok=False)
                    raise store._translate(exc, "replay") from None
                cause = exc

    def _rollback_quietly(self) -> None:
        """End the server transaction whatever its state; a connection that cannot even roll
        back is dropped (``self._conn`` becomes None)."""
        self._pending = []
        conn = self._conn
        started, self._started = self._started, False
        if conn is None or not started:
            return
        try:
            if conn.info.transaction_status != self._store._pg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")
                self._store._round_trips += 1
        except Exception:
            self._store._discard(conn)
            self._conn = None

    def _finish(self, ok: bool) -> None:
        """End the server transaction (commit if ``ok``) and give the connection back."""
        if self._conn is None:
            return
        if ok and self._write:
            self._flush_puts()
            if len(self._pending) == len(self._sql.open_write) and not self._started:
                self._pending = []  # a write that wrote nothing: no need to take the lock now
        if not ok:
            self._rollback_quietly()
        elif not self._write and self._store._end_reads_unanswered and self._started:
            # A read-only snapshot's end cannot fail on Postgres, and nothing here depends on
            # it: send COMMIT and collect the answer when the connection is next checked out.
            conn = self._conn
            self._conn = None
            self._store._checkin(conn, commit_sent=self._store._send_commit(conn))
            return
        elif self._started or self._pending:
            while True:
                if self._conn is not None and not self._store._quiet(self._conn):
                    # the server ended the connection while this transaction ran (a restart): the
                    # COMMIT was never sent, so nothing was committed and the replay is safe
                    self._lost()
                    self._restart(self._store._pg.OperationalError("the server ended the connection before the commit was sent"))
                    continue
                reached: list[bool] = []
                try:
                    self._send_commit(reached)
                    break
                except Exception as exc:
                    # raises, or replays the transaction: then commit again. An error before the
                    # COMMIT was reached is a write's: nothing was committed, and a lost
                    # connection is replayed as before any commit
                    self._failed(exc, "commit" if reached else "write")
        conn, self._conn = self._conn, None
        self._started = False
        if conn is not None:
            self._store._checkin(conn)

    def _send_commit(self, reached: list[bool]) -> None:
        """Send the pending statements and COMMIT, as ``_send`` would; ``reached`` gets True once
        the COMMIT may have reached the server: it stays empty when the send failed, or when a
        statement before it failed (the server runs a query's statements in turn and stops at
        the first error, which it sends after their results). So a connection ended just before
        the COMMIT went (probe f01: a 57P01 reply to the batch, "outcome unknown" in no word) is
        known to have committed nothing."""
        conn = self._live()
        store = self._store
        pending, self._pending = self._pending, []
        if pending:
            self._started = True
        if not store._batch:
            for statement in pending:
                conn.execute(statement)
                store._round_trips += 1
            reached.append(True)
            conn.execute("COMMIT")
            store._round_trips += 1
            return
        pg = store._pg
        pgconn = conn.pgconn
        pgconn.send_query("; ".join([*pending, "COMMIT"]).encode(conn.info.encoding))
        reached.append(True)  # sent or on its way: from here, only the answers tell
        results = conn.wait(pg.generators.execute(pgconn))
        store._round_trips += 1
        ok = (pg.pq.ExecStatus.COMMAND_OK, pg.pq.ExecStatus.TUPLES_OK)
        failed = next((i for i, result in enumerate(results) if result.status not in ok), None)
        if failed is None and len(results) == len(pending) + 1:
            return
        if failed is not None and failed < len(pending):
            reached.clear()
        if failed is None:
            raise pg.OperationalError("the server's answer to the commit was cut short")
        raise pg.errors.error_from_result(results[failed], encoding=conn.info.encoding)

    def _commit(self) -> None:
        self._finish(ok=True)

    def _abort(self) -> None:
        self._puts = {}
        self._finish(ok=False)

    # --- ReadTxn ----------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        if key in self._puts:  # this transaction's own write, not yet sent
            return self._puts[key]
        rows = self._query(self._sql.get, (key,), key, key + b"\x00")
        return bytes(rows[0][0]) if rows else None

    def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]:
        """Values of every key that exists, in one round trip."""
        found = {k: self._puts[k] for k in keys if k in self._puts}
        rest = [k for k in keys if k not in found]
        if rest:
            found.update((bytes(k), bytes(v)) for k, v in self._query(self._sql.get_many, (rest,), min(rest), max(rest) + b"\x00"))
        return found

    def first(self, lo: bytes, hi: bytes, reverse: bool = False) -> tuple[bytes, bytes] | None:
        if lo >= hi:
            return None
        rows = self._query(self._sql.scan_reverse if reverse else self._sql.scan, (lo, hi, 1), lo, hi)
        return (bytes(rows[0][0]), bytes(rows[0][1])) if rows else None

    def scan(self, lo: bytes, hi: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        if lo >= hi:
            return iter(())
        return self._scan(lo, hi, reverse)

    def scan_columns(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> tuple[list[bytes], list[bytes]]:
        items = list(itertools.islice(self.scan(lo, hi, reverse), limit)) if limit is None or limit > 0 else []
        return [k for k, _ in items], [v for _, v in items]

    def scan_keys(self, lo: bytes, hi: bytes, reverse: bool = False, limit: int | None = None) -> list[bytes]:
        # one statement with the limit (or all of the range), keys only: the values stay on the server
        if lo >= hi or (limit is not None and limit <= 0):
            return []
        sql = self._sql.scan_keys_reverse if reverse else self._sql.scan_keys
        return [bytes(row[0]) for row in self._query(sql, (lo, hi, limit), lo, hi)]

    def _scan(self, lo: bytes, hi: bytes, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        # The first page matches the globals layer's chunk of 512; later pages grow, so a long scan costs few round trips.
        size = self._store._page_size
        top = size * _MAX_PAGE_GROWTH
        sql = self._sql.scan_reverse if reverse else self._sql.scan
        while True:
            rows = self._query(sql, (lo, hi, size), lo, hi)
            for k, v in rows:
                yield bytes(k), bytes(v)
            if len(rows) < size:
                return
            last = bytes(rows[-1][0])
            if reverse:
                hi = last
            else:
                lo = last + b"\x00"
            size = min(size * 4, top)

    # --- WriteTxn ---------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes) -> None:
        self._live()
        if not key:
            raise StoreError("put: the empty key cannot be stored")
        self._puts[key] = value
        if len(self._puts) >= _PUT_ROWS:
            self._flush_puts(bulk=True)

    def put_many(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        # checked before the first put, as LMDB checks a batch: all of it is put or none
        items = batch_pairs(items)
        if any(not k for k, _ in items):
            raise StoreError("put_many: the empty key cannot be stored")
        for key, value in items:
            self.put(key, value)

    def delete(self, key: bytes) -> bool:
        return bool(self._query(self._sql.delete, (key,), key, key + b"\x00")[0][0])

    def delete_range(self, lo: bytes, hi: bytes) -> int:
        if lo >= hi:
            return 0
        return int(self._query(self._sql.delete_range, (lo, hi), lo, hi)[0][0])

    @contextmanager
    def savepoint(self) -> Iterator[_PgTxn]:
        self._flush_puts()
        name = f"memdb_sp{self._depth}"
        self._queue(f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield self
        except BaseException:
            self._depth -= 1
            if self._conn is not None and self._broken is None:
                self._puts = {}  # buffered since the last savepoint boundary: inside this one
                self._queue(f"ROLLBACK TO SAVEPOINT {name}")
                self._queue(f"RELEASE SAVEPOINT {name}")
            raise
        self._depth -= 1
        self._flush_puts()
        self._queue(f"RELEASE SAVEPOINT {name}")


class PostgresStore:
    """memdb's key space in one table of a PostgreSQL-wire server (PostgreSQL; CockroachDB and
    YugabyteDB by design, unverified).

    ``url`` is a libpq URL; ``name`` (or the URL parameter ``memdb_name``) picks the memdb
    database on that server: tables ``<name>_kv`` and ``<name>_lock``, created if missing
    (``create=False``: NotFoundError instead, so a mistyped name makes no database).
    ``isolation`` is the writers' level: ``"read committed"`` (default; writers still run one
    at a time behind the lock row) or ``"serializable"``. ``retries`` bounds the replays after
    serialization failures. ``page_size`` is the first page of a scan (pages then grow).
    ``batch=False`` sends one statement per round trip, for a server or proxy that refuses
    several statements in one query.

    ``lock_timeout`` (seconds, default 60; URL parameter ``memdb_lock_timeout``) bounds a write's
    wait for the lock row: StoreBusyError then names the session holding it. ``idle_timeout``
    (default 300; ``memdb_idle_timeout``) is how long the server keeps a write transaction whose
    client sends nothing (a stalled or cut-off process holding the lock row): it ends the
    session, and the write is rolled back. 0 sets no limit (the server's own setting applies,
    by default none). Connections use TCP keepalives
    (libpq's ``keepalives*`` URL parameters override them), on the server's side too.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        isolation: str = "read committed",
        retries: int = 8,
        page_size: int = 512,
        pool_size: int = 8,
        batch: bool = True,
        connect_timeout: float = 10.0,
        create: bool = True,
        lock_timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        conninfo, params = _split_params(url)
        url_name = params.get(_NAME_PARAM)
        lock_timeout = _seconds("lock_timeout", lock_timeout, params.get(_LOCK_PARAM), _LOCK_PARAM, _LOCK_TIMEOUT)
        idle_timeout = _seconds("idle_timeout", idle_timeout, params.get(_IDLE_PARAM), _IDLE_PARAM, _IDLE_TIMEOUT)
        if name is not None and url_name is not None and name != url_name:
            raise StoreError(f"postgres store: name {name!r} and URL parameter {_NAME_PARAM}={url_name!r} disagree (give one)")
        name = name or url_name or "memdb"
        if not _NAME.fullmatch(name):
            raise StoreError(f"postgres store: name {name!r} is not lower-case letters, digits and _ starting with a letter (max 48)")
        level = _ISOLATIONS.get(isolation.lower().replace("_", " "))
        if level is None:
            raise StoreError(f"postgres store: isolation {isolation!r} is not one of {', '.join(_ISOLATIONS)}")
        if not isinstance(create, bool):
            raise StoreError(f"postgres store: create {create!r}: True or False (a truthy string would not say which)")
        if retries < 0 or page_size < 1 or pool_size < 0:
            raise StoreError(
                f"postgres store: retries {retries}, page_size {page_size}, pool_size {pool_size} must be non-negative (page_size >= 1)"
            )
        self._pg: Any = _driver()
        self.url = redact_url(conninfo)
        self._secrets = _secrets_of(conninfo)
        self.name = name
        self._conninfo = conninfo
        self._connect_timeout = connect_timeout
        self._retries = retries
        self._page_size = page_size
        self._pool_size = pool_size
        self._batch = batch
        self._end_reads_unanswered = batch  # set to False (below) on engines other than Postgres
        self.lock_timeout = lock_timeout
        self.idle_timeout = idle_timeout
        self._sql = _Sql(name, level, lock_timeout, idle_timeout)
        self._keepalives = self._keepalives_for(conninfo)
        self._pool: list[tuple[psycopg.Connection[Any], bool]] = []  # idle, and whether a COMMIT is unanswered
        self._lock = threading.Lock()
        self._closed = False
        self._forks = _FORKS[0]
        self._round_trips = 0
        self._replays = 0
        conn = self._checkout()
        try:
            version = str(conn.execute("SELECT version()").fetchall()[0][0])
            self.engine = "cockroachdb" if "CockroachDB" in version else "yugabytedb" if "-YB-" in version else "postgresql"
            self._end_reads_unanswered = self._end_reads_unanswered and self.engine == "postgresql"
            if not create:  # an existing database only: a mistyped name must not make one
                found = conn.execute("SELECT to_regclass(%s), to_regclass(%s)", (self._sql.kv, self._sql.lock)).fetchall()[0]
                if None in found:
                    raise NotFoundError(
                        f"postgres store {self.url}: no memdb database named {name!r} there (create=False opens an existing one only)"
                    )
            else:
                self._create_tables(conn)
        except BaseException:
            self._discard(conn)
            raise
        self._checkin(conn)

    # --- connections ----------------------------------------------------------------------------

    def _keepalives_for(self, conninfo: str) -> dict[str, str]:
        """libpq's keepalive options the URL leaves unset, as ``_KEEPALIVES`` gives them."""
        try:
            given = self._pg.conninfo.conninfo_to_dict(conninfo)
        except Exception:  # a URL libpq refuses: connecting says why
            return {}
        return {k: v for k, v in _KEEPALIVES.items() if k not in given}

    def _connect(self) -> psycopg.Connection[Any]:
        pg = self._pg
        try:
            conn: psycopg.Connection[Any] = pg.connect(
                self._conninfo, autocommit=True, connect_timeout=max(1, round(self._connect_timeout)), **self._keepalives
            )
        except pg.Error as exc:
            raise StoreError(
                f"postgres store {self.url}: cannot connect: {_say(exc, self._secrets)} (is the server up, and the URL right?)"
            ) from None
        self._keep_alive_on_server(conn)
        return conn

    @staticmethod
    def _keep_alive_on_server(conn: psycopg.Connection[Any]) -> None:
        """Have the server probe this client as libpq probes the server: the session of a writer
        whose machine died or lost its network held the lock row until the server's TCP gave up
        (2 hours and more by default; probe f02b). Session settings any role may change; an
        engine without them (or a Unix socket, where they mean nothing) keeps its own."""
        params = conn.info.get_parameters()  # what the URL and connect() set: the password never
        if conn.info.host.startswith("/") or params.get("keepalives") == "0":
            return
        values = tuple(params.get(k) or _KEEPALIVES[k] for k in ("keepalives_idle", "keepalives_interval", "keepalives_count"))
        try:
            conn.execute(
                "SELECT set_config('tcp_keepalives_idle', %s, false), set_config('tcp_keepalives_interval', %s, false), "
                "set_config('tcp_keepalives_count', %s, false)",
                values,
            )
        except Exception:  # not offered by this engine: its own keepalives stay
            pass

    def _checkout(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise StoreClosedError(f"postgres store {self.name!r} at {self.url}: closed")
        while True:
            with self._lock:
                if self._forks != _FORKS[0]:
                    # A forked child must not talk on its parent's sockets; psycopg leaves them
                    # open for the parent when these objects are collected in the child.
                    self._forks = _FORKS[0]
                    self._pool = []
                if not self._pool:
                    break
                conn, commit_sent = self._pool.pop()
            if self._collect(conn) if commit_sent else self._quiet(conn):
                return conn
            self._discard(conn)
        return self._connect()

    @staticmethod
    def _quiet(conn: psycopg.Connection[Any]) -> bool:
        """Whether an idle pooled connection has nothing to read: the server says nothing to an
        idle client but that it is ending the connection (a restart's FATAL 57P01, or the close
        itself). One that has is dropped before a write's whole batch is sent on it, where the
        loss would read as a commit that may or may not have happened."""
        try:
            return not conn.closed and not _ready(conn.pgconn.socket, select.POLLIN, 0)
        except Exception:  # (OSError, ValueError, or the driver's own "connection is lost"): not usable
            return False

    def _send_commit(self, conn: psycopg.Connection[Any]) -> bool:
        """Send COMMIT without waiting for its answer; False if even that failed."""
        try:
            pgconn = conn.pgconn
            pgconn.send_query(b"COMMIT")
            while pgconn.flush():  # a few bytes: the socket takes them at once in practice
                _ready(pgconn.socket, select.POLLOUT, 1000)
        except Exception:
            return False
        return True

    def _collect(self, conn: psycopg.Connection[Any]) -> bool:
        """Read the answer to a COMMIT sent by ``_send_commit``; True if the connection is idle and well."""
        try:
            ok = True
            while (result := conn.pgconn.get_result()) is not None:
                ok = ok and result.status == self._pg.pq.ExecStatus.COMMAND_OK
            return ok and conn.info.transaction_status == self._pg.pq.TransactionStatus.IDLE
        except Exception:
            return False

    def _checkin(self, conn: psycopg.Connection[Any] | None, commit_sent: bool | None = None) -> None:
        """Pool an idle connection (or one whose COMMIT is on its way: ``commit_sent``)."""
        if conn is None:
            return
        if commit_sent is False:
            self._discard(conn)
            return
        with self._lock:
            idle = commit_sent or conn.info.transaction_status == self._pg.pq.TransactionStatus.IDLE
            if not self._closed and not conn.closed and len(self._pool) < self._pool_size and idle:
                self._pool.append((conn, bool(commit_sent)))
                return
        self._discard(conn)

    def _drop_idle(self) -> None:
        """Close every pooled connection: after one was found lost, the others (a server restart)
        are likely lost too, and each would cost a failed try."""
        with self._lock:
            idle, self._pool = self._pool, []
        for conn, _ in idle:
            self._discard(conn)

    def _discard(self, conn: psycopg.Connection[Any]) -> None:
        try:
            conn.close()
        except Exception:  # closing a broken connection may fail again; it is gone either way
            pass

    def _translate(self, exc: Exception, what: str, closed: bool = False) -> StoreError:
        """A driver error as a StoreError; a connection lost during a commit says that the
        outcome is unknown (the server may have committed before it went), as documented: a
        57P01 said only "terminating connection due to administrator command" (probe f01)."""
        pg = self._pg
        state = _sqlstate(exc)
        said = f"{state}: {_say(exc, self._secrets)}" if state else f"connection failed: {_say(exc, self._secrets)}"
        if isinstance(exc, pg.OperationalError) and what == "commit" and (state in _LOST or closed):
            return StoreError(
                f"postgres store {self.url}: commit: {said} (the connection was lost during the commit: its outcome is unknown, "
                "the commit may or may not have happened; read the data back before writing it again)"
            )
        if isinstance(exc, pg.OperationalError) and state is None:
            return StoreError(f"postgres store {self.url}: {what}: {said} (nothing was committed)")
        return StoreError(f"postgres store {self.url}: {what}: {state or type(exc).__name__}: {_say(exc, self._secrets)}")

    def _lock_holders(self, conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
        """The sessions holding this database's lock row or tables (pid, application_name, state,
        client address, seconds in its transaction), as far as the server tells; [] if it cannot."""
        try:
            return list(conn.execute(self._sql.holders, (self._sql.kv, self._sql.lock)).fetchall())
        except Exception:  # an engine without pg_locks or xmax: the error goes without names
            return []

    def _create_tables(self, conn: psycopg.Connection[Any]) -> None:
        """Create the two tables if missing; concurrent openers may race, so retry once or twice."""
        pg = self._pg
        # YugabyteDB hash-shards a plain primary key; ASC asks for range sharding (Postgres rejects it).
        pk = "PRIMARY KEY (k ASC)" if self.engine == "yugabytedb" else "PRIMARY KEY (k)"
        statements = [
            f"CREATE TABLE IF NOT EXISTS {self._sql.kv} (k BYTEA NOT NULL, v BYTEA NOT NULL, {pk})",
            f"CREATE TABLE IF NOT EXISTS {self._sql.lock} (id INTEGER NOT NULL PRIMARY KEY, n BIGINT NOT NULL)",
            f"INSERT INTO {self._sql.lock} (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
        ]
        for attempt in range(3):
            try:
                for sql in statements:
                    conn.execute(sql)
                return
            except (pg.errors.UniqueViolation, pg.errors.DuplicateTable, pg.errors.DuplicateObject):
                if attempt == 2:
                    raise
            except pg.Error as exc:
                raise self._translate(exc, f"create tables for {self.name!r}") from None

    # --- Store ----------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[_PgTxn]:
        txn = _PgTxn(self, write=False)
        try:
            yield txn
        except BaseException:
            txn._abort()
            raise
        txn._commit()

    def get(self, key: bytes) -> bytes | None:
        with self.read() as txn:
            return txn.get(key)

    def first(self, lo: bytes, hi: bytes, reverse: bool = False) -> tuple[bytes, bytes] | None:
        with self.read() as txn:
            return txn.first(lo, hi, reverse)

    @contextmanager
    def write(self) -> Iterator[_PgTxn]:
        txn = _PgTxn(self, write=True)
        try:
            yield txn
        except BaseException:
            txn._abort()
            raise
        txn._commit()

    def backup(self, dest: str) -> None:
        """Not offered: the server's own tools back up its databases whole and consistently."""
        raise StoreError(
            f"postgres store {self.url}: backup to {dest!r}: back up the server's database with pg_dump "
            f"(memdb's tables are {self._sql.kv} and {self._sql.lock}; nothing was written)"
        )

    def compact(self) -> None:
        """Rewrite the table so deleted rows leave its files (VACUUM FULL; takes an exclusive lock).

        Old bytes may survive in WAL segments, replicas and backups until those recycle. On
        CockroachDB and YugabyteDB the engine's own garbage collection does this: a no-op here.
        """
        if self.engine != "postgresql":
            return
        pg = self._pg
        conn = self._checkout()
        try:
            self._wait_for_snapshots(conn)
            conn.execute(f"VACUUM FULL {self._sql.kv}")
        except pg.Error as exc:
            self._discard(conn)
            raise self._translate(exc, "compact") from None
        except StoreBusyError:
            self._checkin(conn)
            raise
        self._checkin(conn)

    def _wait_for_snapshots(self, conn: psycopg.Connection[Any]) -> None:
        """Wait, up to ``_SNAPSHOT_WAIT`` seconds, until no other session of the database holds
        a snapshot: VACUUM FULL keeps every row an open snapshot may still see, so an erasure
        compacted under another process's long read left its rows in the files while compact()
        reported success (a probe's find); StoreBusyError names the sessions still holding one."""
        deadline = time.monotonic() + _SNAPSHOT_WAIT
        while True:
            holders = [
                int(row[0])
                for row in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend' AND backend_xmin IS NOT NULL"
                ).fetchall()
            ]
            if not holders:
                return
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"postgres store {self.url}: compact: session(s) {', '.join(map(str, holders))} hold a snapshot that may still "
                    "see erased rows, which the rewrite would keep (retry once their transactions end; nothing was changed)"
                )
            time.sleep(0.1)

    def stat(self) -> dict[str, int]:
        """Entries, and the table's size on the server in bytes (-1 where the engine cannot tell)."""
        with self.read() as txn:
            entries = int(txn._query(self._sql.count, ())[0][0])
            size = -1
            if self.engine == "postgresql":
                size = int(txn._query("SELECT pg_total_relation_size(%s::regclass)", (self._sql.kv,))[0][0])
        return {"entries": entries, "used_bytes": size}

    @property
    def round_trips(self) -> int:
        """Round trips to the server so far (waits for an answer), for tests and benchmarks."""
        return self._round_trips

    @property
    def replays(self) -> int:
        """Transactions replayed successfully after a serialization failure."""
        return self._replays

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            pool, self._pool = self._pool, []
        for conn, _ in pool:
            self._discard(conn)

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
