"""A throwaway PostgreSQL cluster for the Postgres-backed tests and benchmarks.

``shared()`` starts one cluster per process on first use (initdb in a temporary directory,
a free loopback port, run as a non-root user when we are root) and stops it at exit, so every
test module and the benchmark script share it without a root conftest. The cluster runs from
Debian's ``postgresql`` package (``/usr/lib/postgresql/<version>/bin``); ``MEMDB_PG_BIN`` names
another bin directory, and ``MEMDB_TEST_POSTGRES_URL`` points the tests at an existing server
instead (nothing is started then).
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

__all__ = ["PostgresServer", "drop", "find_bin", "shared", "throwaway", "unique_name"]

_START_TIMEOUT = 60.0


def find_bin() -> Path:
    """The directory holding initdb and postgres: ``MEMDB_PG_BIN``, Debian's newest, or PATH."""
    explicit = os.environ.get("MEMDB_PG_BIN")
    if explicit:
        return Path(explicit)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: [int(x) for x in re.findall(r"\d+", p)])
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb")
    if which:
        return Path(os.path.realpath(which)).parent
    raise RuntimeError(
        "postgres test server: initdb not found (install Debian's server: apt-get install postgresql; "
        "or set MEMDB_PG_BIN to its bin directory, or MEMDB_TEST_POSTGRES_URL to an existing server)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child: get SIGINT (fast shutdown) if the test process dies without cleaning up."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class PostgresServer:
    """One initdb'd cluster in a temporary directory, listening on 127.0.0.1 only.

    ``durable=False`` (tests) turns fsync and synchronous commit off: a crash of the machine
    loses the throwaway cluster anyway. Benchmarks pass ``durable=True`` so that a commit
    waits for the WAL flush, like LMDB with ``sync=True``.
    """

    def __init__(self, *, durable: bool = False, user: str | None = None) -> None:
        self.durable = durable
        self.bin = find_bin()
        self.user = user or (("postgres" if _has_user("postgres") else "nobody") if os.geteuid() == 0 else None)
        self.dir = Path(tempfile.mkdtemp(prefix="memdb-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._ids: dict[str, int] = {}
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            self._ids = {"user": entry.pw_uid, "group": entry.pw_gid}
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        os.chmod(self.dir, 0o700)

    @property
    def url(self) -> str:
        return f"postgresql://memdb@127.0.0.1:{self.port}/postgres"

    def start(self) -> PostgresServer:
        try:
            self._initdb()
            for _attempt in range(5):  # a free port can be taken between probing and binding
                self.port = _free_port()
                if self._launch():
                    return self
            raise RuntimeError(f"postgres test server: could not start on a free port; log: {self._log_tail()}")
        except BaseException:
            self.stop()
            raise

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        done: subprocess.CompletedProcess[str] = subprocess.run(
            [str(self.bin / args[0]), *args[1:]], capture_output=True, text=True, timeout=120, check=False, cwd=self.dir, **self._ids
        )  # type: ignore[call-overload]
        return done

    def _initdb(self) -> None:
        done = self._run("initdb", "-D", str(self.data), "-U", "memdb", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
        if done.returncode != 0:
            raise RuntimeError(f"postgres test server: initdb failed ({done.returncode}): {done.stderr.strip()[-2000:]}")

    def _launch(self) -> bool:
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": "",
            "max_connections": "200",
            "shared_buffers": "128MB",
            "fsync": "on" if self.durable else "off",
            "synchronous_commit": "on" if self.durable else "off",
            "full_page_writes": "on" if self.durable else "off",
        }
        args = [str(self.bin / "postgres"), "-D", str(self.data)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True, preexec_fn=_die_with_parent, **self._ids
            )  # type: ignore[call-overload]
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return False
            if self._ready():
                return True
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"postgres test server: not ready after {_START_TIMEOUT:.0f}s; log: {self._log_tail()}")

    def _ready(self) -> bool:
        done = self._run("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-U", "memdb", "-d", "postgres", "-t", "1")
        return done.returncode == 0

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then remove the directory."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


_SHARED: list[str] = []
_SHARED_LOCK = threading.Lock()


def shared() -> str:
    """The URL of this process's test server, started on first call and stopped at exit."""
    with _SHARED_LOCK:
        if not _SHARED:
            url = os.environ.get("MEMDB_TEST_POSTGRES_URL")
            if not url:
                server = PostgresServer().start()
                atexit.register(server.stop)
                url = server.url
            _SHARED.append(url)
        return _SHARED[0]


def throwaway() -> bool:
    """True when the tests run on the cluster started here (dropped whole at exit)."""
    return not os.environ.get("MEMDB_TEST_POSTGRES_URL")


def unique_name(prefix: str = "t") -> str:
    """A fresh memdb database name, so tests sharing one server never see each other's data."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def drop(url: str, name: str) -> None:
    """Remove the tables of memdb database ``name`` (test cleanup on a shared server)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{name}_kv", "{name}_lock"')
