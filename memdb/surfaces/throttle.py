"""Failed sign-ins slowed down per client address: the dashboard's sign-in form and every bearer
token checked over HTTP (``/mcp`` of ``memdb serve``, ``memdb mcp --transport http``).

The rule (docs/dashboard.md, "Failed sign-ins"): an address that fails ``max_failures`` times
within ``window`` seconds is locked for ``first_lock`` seconds; while it is on strike, each
further failure after a lock ends locks it again for twice as long, up to ``max_lock``. An
address is forgiven (its record dropped) once a whole ``window`` passes without a failure after
its last lock, or after its last failure when it was never locked. A locked address gets 429 with
``Retry-After`` before its token is looked at, so a lock is no oracle; a success never clears
failures (someone holding one token could otherwise reset the count between guesses at another),
and touches no other address. Only a tried value counts: a request with no token, and a form
refused by its origin or CSRF check, are no failure (a page of another site cannot lock a
person's address out through their browser).

Addresses: IPv4 as is, IPv6 by its /64 (one host holds a whole /64), every loopback address as
one (a local process picks any source in 127.0.0.0/8, so each would be a fresh count); behind a
proxy the forwarded address (uvicorn's ``proxy_headers`` puts it in the scope). Memory is bounded: at most
``max_addresses`` records, the one with the oldest failure evicted first. The clock is monotonic
seconds, injectable (a database clock pinned by ``--now`` would never end a lock). A lock is a
WARNING on this module's logger (``memdb serve`` and ``memdb mcp`` show it on stderr); nothing here
logs a token, a tried value or an address (an address is personal data).
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memdb.engine.log import logger

__all__ = ["FIRST_LOCK", "LOOPBACK", "MAX_ADDRESSES", "MAX_FAILURES", "MAX_LOCK", "WINDOW", "Throttle", "client_address"]

_log = logger(__name__)

MAX_FAILURES = 5  # failed attempts within WINDOW before the first lock
WINDOW = 15 * 60.0  # seconds
FIRST_LOCK = 60.0  # seconds; doubled by each further failure while on strike
MAX_LOCK = 15 * 60.0  # seconds: the longest lock
MAX_ADDRESSES = 10_000  # records kept (about 200 bytes each)
_ADDRESS_CHARS = 64  # a forwarded address is the proxy's text: kept bounded
LOOPBACK = "loopback"  # the one key of every loopback address


def client_address(scope: Mapping[str, Any]) -> str:
    """The key of a request's client: its address (the forwarded one behind a trusted proxy),
    an IPv6 one as its /64 network, every loopback one as ``LOOPBACK``, anything else (a test
    client's name) as given, bounded."""
    client = scope.get("client")
    host = str(client[0]) if client else ""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host[:_ADDRESS_CHARS]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:a.b.c.d is an IPv4 client on a dual-stack socket
    if ip.is_loopback:  # 127.0.0.2 is as much this machine as 127.0.0.1: one count, however a guesser binds
        return LOOPBACK
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


@dataclass
class _Record:
    failures: deque[float]  # times of the failures since the last lock (or within the window)
    strikes: int = 0  # locks since the address was last forgiven
    locked_until: float = -math.inf
    last: float = -math.inf  # the last failure

    def forgiven(self, now: float, window: float) -> bool:
        return now >= (self.locked_until if self.strikes else self.last) + window


@dataclass
class Throttle:
    """Failures per client address and the locks they earn (module docstring). Shared by the
    dashboard and ``/mcp`` of one server, so a guess on either counts against both."""

    max_failures: int = MAX_FAILURES
    window: float = WINDOW
    first_lock: float = FIRST_LOCK
    max_lock: float = MAX_LOCK
    max_addresses: int = MAX_ADDRESSES
    clock: Callable[[], float] = time.monotonic
    _records: OrderedDict[str, _Record] = field(default_factory=OrderedDict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_failures < 1 or self.max_addresses < 1:
            raise ValueError("Throttle: max_failures and max_addresses must be at least 1")
        if not 0 < self.first_lock <= self.max_lock or self.window <= 0:
            raise ValueError("Throttle: window and first_lock must be positive, first_lock at most max_lock")

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until ``address`` may try again, or None when it is not locked."""
        now = self.clock()
        with self._lock:
            record = self._records.get(address)
            if record is None or now >= record.locked_until:
                return None
            return max(1, math.ceil(record.locked_until - now))

    def failed(self, address: str, surface: str) -> int | None:
        """Count a failed attempt of ``address`` (not locked: callers ask ``retry_after`` first);
        the seconds of the lock it earns, or None. ``surface`` names where, for the log line."""
        now = self.clock()
        with self._lock:
            record = self._records.pop(address, None)
            if record is None or record.forgiven(now, self.window):
                record = _Record(deque(maxlen=self.max_failures))
            while record.failures and now - record.failures[0] >= self.window:
                record.failures.popleft()
            record.failures.append(now)
            record.last = now
            self._records[address] = record  # last in order: the most recent failure
            while len(self._records) > self.max_addresses:
                self._records.popitem(last=False)  # the oldest failure: forgiven soonest anyway
            if not record.strikes and len(record.failures) < self.max_failures:
                return None
            record.strikes += 1
            record.failures.clear()
            seconds = min(self.first_lock * 2.0 ** min(record.strikes - 1, 64), self.max_lock)
            record.locked_until = now + seconds
        # how often, never who or with what: the address is personal data and the value a secret
        _log.warning("%s: a client address is locked for %g s after failed sign-ins (lock %d in a row)", surface, seconds, record.strikes)
        return math.ceil(seconds)

    def __len__(self) -> int:
        """How many addresses are on record (the memory bound's test reads it)."""
        return len(self._records)
