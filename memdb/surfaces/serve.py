"""``memdb serve``: one process serving the dashboard, MCP at ``/mcp`` and the scheduler.

One config file, the one ``memdb mcp --transport http`` reads, extended (docs/dashboard.md)::

    [tokens]                      # bearer token -> owner: MCP clients and dashboard sign-in alike
    "<long random token>" = "ana"
    [reviewers]                   # optional: who may approve or reject whose pending lessons (besides their own)
    ana = ["bo"]
    [teams]                       # optional: team -> members, applied to the database's teams setting at start
    platform = ["ana", "bo"]
    [schedule]                    # optional: local times in the database's timezone setting
    maintain = "03:00"            # daily
    reflect = "03:30"             # daily
    decay = "04:00"               # weekly, on the database's week_starts_on day
    idle_sessions = 15            # minutes between passes closing idle gateway sessions (0: never)
    enabled = true
    [llm]                         # optional: Claude for maintain, reflect and sessions (docs/llm.md)
    use = ["summarizer", "reflector", "extractor", "distiller"]    # the default: all four
    model = "claude-haiku-4-5"    # and the limits every adapter takes: timeout, max_retries,
    max_wait = 10                 # max_wait, run_seconds, stop_after (the API key only from the
                                  # ANTHROPIC_API_KEY environment variable, never from the file)

It listens on loopback. Another address needs ``--allow-remote`` and TLS (``--tls-cert`` and
``--tls-key``); a reverse proxy terminating TLS in front forwards to memdb on loopback, served with
``--behind-proxy --public-host NAME`` (cookies then marked Secure; the name required, as a request
naming neither it nor this machine is refused: DNS rebinding). The scheduler is a thread ticking
every ``TICK`` seconds; the lease in the database (``memdb.governance.schedule``) makes it one per
database across processes.

Failed sign-ins (the dashboard's form and bearer tokens at ``/mcp``, counted together) are
throttled per client address, the forwarded one behind the proxy: 5 within 15 minutes lock it
for 1 minute (429 with Retry-After), each further failure then doubles the lock up to 15 minutes,
and 15 quiet minutes after a lock forgive it (``memdb.surfaces.throttle``; docs/dashboard.md).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import memdb
from memdb.errors import ConfigError, MemdbError, ValidationError
from memdb.governance.schedule import Job, Scheduler, parse_time
from memdb.memory.models import check_owner
from memdb.memory.sanitize import shown
from memdb.surfaces.hosts import HostCheck, host_form, sdk_security
from memdb.surfaces.mcp_server import HOST, LOOPBACK_NAMES, open_served, read_config
from memdb.surfaces.throttle import Throttle

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "DEFAULT_PORT",
    "LLM_USES",
    "MISSING_EXTRA",
    "LLMConfig",
    "SchedulerThread",
    "ServeConfig",
    "WebExtraMissingError",
    "build_app",
    "jobs_for",
    "load_config",
    "public_host_names",
    "run",
]

MISSING_EXTRA = "memdb serve needs the 'web' extra: pip install 'memdb-agent[web]'"
DEFAULT_PORT = 8766
TICK = 30.0  # seconds between scheduler ticks
LOOPBACK_SOURCES = ("127.0.0.0/8", "::1")  # where a proxy on this machine connects from
_SCHEDULE_KEYS = {"maintain", "reflect", "decay", "idle_sessions", "enabled"}
LLM_USES = ("summarizer", "reflector", "extractor", "distiller")
_LLM_OPTIONS = ("model", "timeout", "max_retries", "max_wait", "run_seconds", "stop_after")


class WebExtraMissingError(MemdbError, ImportError):
    """The optional web dependencies (Starlette, uvicorn, Jinja2, the MCP SDK) are not installed."""


def _require_web() -> None:
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401

        from memdb.surfaces.mcp_server import _require_sdk

        _require_sdk()
    except ImportError as exc:
        if isinstance(exc, MemdbError):
            raise WebExtraMissingError(f"{MISSING_EXTRA} ({exc})") from None
        raise WebExtraMissingError(f"{MISSING_EXTRA} (missing {exc.name or exc})") from None


@dataclass(frozen=True)
class ScheduleConfig:
    """When the scheduled jobs run (local times in the database's timezone)."""

    maintain: dt.time = dt.time(3, 0)
    reflect: dt.time = dt.time(3, 30)
    decay: dt.time = dt.time(4, 0)
    idle_sessions: int = 15
    enabled: bool = True


@dataclass(frozen=True)
class LLMConfig:
    """Claude behind the components ``use`` names (``[llm]``), each adapter made with ``options``
    (model and limits, checked when the config is read). The API key comes from
    ``ANTHROPIC_API_KEY`` only: a key in the config file would be a key on disk."""

    use: tuple[str, ...] = LLM_USES
    options: tuple[tuple[str, Any], ...] = ()

    def adapters(self, client: Any | None = None) -> dict[str, Any]:
        """``memdb.open``'s keyword arguments: an adapter for each component used (``client`` for
        tests, over a mocked transport); ConfigError when the key is not in the environment."""
        from memdb.llm.adapters import AnthropicDistiller, AnthropicExtractor, AnthropicReflector, AnthropicSummarizer

        kinds: dict[str, tuple[str, Any]] = {
            "summarizer": ("summarizer", AnthropicSummarizer), "reflector": ("reflector", AnthropicReflector),
            "extractor": ("pattern_extractor", AnthropicExtractor), "distiller": ("distiller", AnthropicDistiller),
        }  # fmt: skip
        if client is None and not os.environ.get("ANTHROPIC_API_KEY"):
            raise ConfigError("[llm]: set ANTHROPIC_API_KEY in memdb serve's environment (the key is never read from the config file)")
        return {kinds[name][0]: kinds[name][1](client=client, **dict(self.options)) for name in self.use}


@dataclass(frozen=True)
class ServeConfig:
    """What ``memdb serve`` reads from its config file (module docstring)."""

    tokens: dict[str, str]
    reviewers: dict[str, frozenset[str]] = field(default_factory=dict)
    teams: dict[str, list[str]] | None = None
    schedule: ScheduleConfig = ScheduleConfig()
    llm: LLMConfig | None = None  # None: the offline defaults


def load_config(path: str | os.PathLike[str]) -> ServeConfig:
    """The config at ``path``: tokens as ``memdb mcp`` reads them, then reviewers, teams and the
    schedule, each checked (ConfigError names the table and key; a token is never echoed)."""
    from memdb.surfaces.mcp_server import MIN_TOKEN_CHARS, load_tokens

    where = os.fspath(path)
    tokens = load_tokens(path)
    raw = read_config(path)
    owners = set(tokens.values())

    def token_like(value: Any) -> bool:
        """Whether ``value`` is, or holds, a string that may be a token: one of them, or any as long
        (a token typed under the wrong table is in no [tokens] table)."""
        if isinstance(value, str):
            return value in tokens or len(value) >= MIN_TOKEN_CHARS
        if isinstance(value, (list, tuple)):
            return any(token_like(v) for v in value)
        if isinstance(value, dict):
            return any(token_like(k) or token_like(v) for k, v in value.items())
        return False

    def said(value: Any, quoted: bool = True) -> str:
        """``value`` for an error, unless it may be a token (a token is a password)."""
        if token_like(value):
            return "a value not shown (it may be a token)"
        return repr(value) if quoted else str(value)

    def unknown_key(table: str, given: dict[str, Any], keys: list[str], expected: str) -> ConfigError:
        """An unknown key, named unless it holds a table: ``ABC.DEF = 1`` is ``ABC = {DEF = 1}``,
        and those may be the halves of a token typed there unquoted
        (test_token_file_errors_never_echo_any_part_of_a_token)."""
        plain = [k for k in keys if not isinstance(given[k], dict)]
        if plain:
            return ConfigError(f"config {where!r}: [{table}] unknown key {said(plain[0])} (expected {expected})")
        return ConfigError(f"config {where!r}: [{table}] {len(keys)} unknown key(s) holding a table, not shown as they may be part "
                           f"of a token written with a dot (expected {expected})")  # fmt: skip

    def names(table: str, key: str, value: Any) -> list[str]:
        if isinstance(value, dict):  # key.rest = [...]: an unquoted key with a dot, which may be a token's halves
            raise ConfigError(
                f"config {where!r}: [{table}] an entry maps to a table, not a list of owner names (not shown: a key written "
                "with a dot, unquoted, may be part of a token; quote a name that holds a dot)"
            )
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            shown_value = said(value)
            raise ConfigError(f"config {where!r}: [{table}] {said(key, False)} = {shown_value}: expected a list of owner names")
        for v in value:
            if token_like(v):
                raise ConfigError(f"config {where!r}: [{table}] {said(key, False)}: a value not shown (may be a token), not an owner name")
        try:
            return [check_owner(v) for v in value]
        except ValidationError as exc:
            raise ConfigError(f"config {where!r}: [{table}] {said(key, False)}: {exc}") from None

    reviewers: dict[str, frozenset[str]] = {}
    for who, whom in dict(raw.get("reviewers") or {}).items():
        if isinstance(whom, dict):
            names("reviewers", who, whom)  # refused without its key
        if who not in owners:
            raise ConfigError(f"config {where!r}: [reviewers] {said(who)}: no token maps to this owner, so they cannot sign in to review")
        reviewers[who] = frozenset(names("reviewers", who, whom))
    teams = None
    if "teams" in raw:
        teams = {str(team): names("teams", team, members) for team, members in dict(raw["teams"]).items()}
    table = dict(raw.get("schedule") or {})
    unknown = sorted(set(table) - _SCHEDULE_KEYS)
    if unknown:
        raise unknown_key("schedule", table, unknown, ", ".join(sorted(_SCHEDULE_KEYS)))
    for k, v in table.items():
        if token_like(v):
            raise ConfigError(f"config {where!r}: [schedule] {k} = {said(v)}: not a setting of the schedule")
    times = {k: parse_time(str(table[k]), f"config {where!r}: [schedule] {k}") for k in ("maintain", "reflect", "decay") if k in table}
    idle = table.get("idle_sessions", 15)
    if isinstance(idle, bool) or not isinstance(idle, int) or not 0 <= idle <= 1440:
        raise ConfigError(f"config {where!r}: [schedule] idle_sessions = {idle!r}: minutes from 0 (never) to 1440")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"config {where!r}: [schedule] enabled = {enabled!r}: true or false")
    llm = _llm_config(where, raw["llm"], said, set(tokens), unknown_key) if "llm" in raw else None
    return ServeConfig(tokens, reviewers, teams, ScheduleConfig(**times, idle_sessions=idle, enabled=enabled), llm)


def _llm_config(
    where: str,
    table: Any,
    said: Callable[[Any], str],
    tokens: set[str],
    unknown_key: Callable[[str, dict[str, Any], list[str], str], ConfigError],
) -> LLMConfig:
    """The ``[llm]`` table, checked: known keys, no API key, the components used, and every
    option as the adapters check it (ConfigError naming the table and key, never a token)."""
    if not isinstance(table, dict):
        raise ConfigError(f"config {where!r}: llm: expected a table [llm]")
    if "api_key" in table:  # never echoed: it is a key
        raise ConfigError(f"config {where!r}: [llm] api_key: not read from a file; set ANTHROPIC_API_KEY in memdb serve's environment")
    unknown = sorted(set(table) - {"use", *_LLM_OPTIONS})
    if unknown:
        raise unknown_key("llm", table, unknown, ", ".join(("use", *_LLM_OPTIONS)))
    for k, v in table.items():
        if isinstance(v, str) and v in tokens:  # a model name is as long as a token may be: only a token itself is refused
            raise ConfigError(f"config {where!r}: [llm] {k}: a value not shown (it is a bearer token), not a setting of [llm]")
    use = table.get("use", list(LLM_USES))
    if not isinstance(use, list) or not use or not all(isinstance(u, str) and u in LLM_USES for u in use):
        raise ConfigError(f"config {where!r}: [llm] use = {said(use)}: a list of one or more of {', '.join(LLM_USES)}")
    config = LLMConfig(tuple(dict.fromkeys(use)), tuple((k, table[k]) for k in _LLM_OPTIONS if k in table))
    try:
        config.adapters(client=_UNUSED)  # made once to check the options; the server makes its own
    except ConfigError as exc:
        raise ConfigError(f"config {where!r}: [llm] {exc}") from None
    return config


_UNUSED = object()  # a client that is never called: adapters made only to check their options


def jobs_for(db: memdb.Database, schedule: ScheduleConfig) -> list[Job]:
    """The scheduled jobs of ``memdb serve`` over ``db``: maintain and reflect daily, decay weekly,
    idle sessions closed every ``idle_sessions`` minutes; each returns its report as text."""
    jobs = [
        Job("maintain", "day", lambda now: str(db.maintain(now)), at=schedule.maintain),
        Job("reflect", "day", lambda now: str(db.reflect(now)), at=schedule.reflect),
        Job("decay", "week", lambda now: str(db.decay(now)), at=schedule.decay),
    ]
    if schedule.idle_sessions:
        jobs.append(Job("close_idle_sessions", "minutes", lambda now: str(db.close_idle_sessions(now)), minutes=schedule.idle_sessions))
    return jobs


class SchedulerThread(threading.Thread):
    """Ticks ``scheduler`` every ``interval`` seconds until ``stop()``; gives the lease up at the end."""

    def __init__(self, scheduler: Scheduler, interval: float = TICK) -> None:
        super().__init__(name="memdb-scheduler", daemon=True)
        self.scheduler = scheduler
        self.interval = interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self.scheduler.tick()
            except MemdbError as exc:  # the store failed (disk full, server gone): try again next tick
                print(f"memdb serve: scheduler tick failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            except Exception as exc:  # a bug: its message may hold data, so only its type is shown
                print(f"memdb serve: scheduler tick failed: {type(exc).__name__}", file=sys.stderr, flush=True)
            self._stop_event.wait(self.interval)
        try:
            self.scheduler.release()
        except Exception as exc:
            print(f"memdb serve: could not release the scheduler lock: {type(exc).__name__}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        self._stop_event.set()


class _Dispatch:
    """``/mcp`` to the MCP app behind bearer auth, everything else to the dashboard; lifespan to MCP
    (its session manager needs it). Each dashboard request first reads the settings as saved now
    (``refresh``), as each MCP call does: teams, the timezone and the kinds another process changed
    are in force at once, not at the next restart (tests/surfaces/test_mcp_settings.py)."""

    def __init__(self, mcp: ASGIApp, web: ASGIApp, refresh: Callable[[], object]) -> None:
        self.mcp = mcp
        self.web = web
        self.refresh = refresh

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.mcp(scope, receive, send)
            return
        path = scope.get("path", "")
        if path == "/mcp" or path.startswith("/mcp/"):
            await self.mcp(scope, receive, send)  # (the MCP server refreshes per call)
            return
        if scope["type"] == "http" and not path.startswith("/static/"):  # a stylesheet depends on no setting
            import anyio.to_thread

            await anyio.to_thread.run_sync(self.refresh)  # a store read: off the event loop
        await self.web(scope, receive, send)


def build_app(
    db: memdb.Database,
    config: ServeConfig,
    *,
    scheduler: Scheduler | None = None,
    secure_cookies: bool = False,
    host: str = HOST,
    behind_proxy: bool = False,
    public_hosts: Sequence[str] = (),
    throttle: Throttle | None = None,
) -> ASGIApp:
    """The one ASGI app of ``memdb serve``: the dashboard at ``/``, MCP (stateless streamable HTTP,
    the tools of ``memdb mcp``, the same tokens) at ``/mcp``, one ``throttle`` of failed sign-ins
    and bearer tokens over both. On loopback, a request naming another host is refused, before
    any token is looked at; behind a proxy (``behind_proxy``), one naming neither this machine nor
    one of the ``public_hosts`` the proxy serves memdb under (``public_host_names`` checks them)."""
    _require_web()
    from memdb.surfaces.mcp_server import BearerAuth, build_server
    from memdb.surfaces.web.app import SecurityHeaders, build_dashboard

    if behind_proxy and not public_hosts:
        raise ConfigError(f"--behind-proxy: {_NEEDS_PUBLIC_HOST}")
    public_hosts = public_host_names(public_hosts)
    server = build_server(db, tokens=config.tokens)
    # The names of this machine, the address listened on included ("127.0.0.2": the SDK checked
    # only its three default names, and the dashboard refused its own address); behind a proxy,
    # which listens on loopback too, the public names as well: a page of another site resolving
    # its name to 127.0.0.1 (DNS rebinding) reaches memdb with its own name, and is refused.
    names: list[str] | None = None
    if behind_proxy or _is_loopback(host):
        names = [*LOOPBACK_NAMES, host, *(public_hosts if behind_proxy else ())]
    # a public address over TLS: the SDK's own rule (the certificate names the server)
    security = sdk_security(names) if names is not None else None
    mcp_app = server.streamable_http_app(stateless_http=True, json_response=True, host=host, transport_security=security)
    throttle = throttle if throttle is not None else Throttle()  # one for both: a guess on either counts against the other
    mcp = BearerAuth(mcp_app, config.tokens, throttle)
    web = build_dashboard(
        db, config.tokens, reviewers=config.reviewers, scheduler=scheduler, secure_cookies=secure_cookies, throttle=throttle
    )
    app: ASGIApp = _Dispatch(mcp, web, db.refresh_settings)
    if names is not None:  # the Host first, on both surfaces: a rebinding page neither tries tokens nor locks anyone out
        app = HostCheck(app, names)
    return SecurityHeaders(app)


_NEEDS_PUBLIC_HOST = (
    "name the host the proxy serves memdb under with --public-host (e.g. --public-host memdb.example.org; repeat it "
    "for more names): requests naming another host are refused"
)
_HOST_NAME = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*")


def public_host_names(given: Sequence[str]) -> list[str]:
    """The ``--public-host`` names, checked and in the form a Host header carries them (lower
    case, an IPv6 address in brackets); ConfigError names one that is no host name (a URL, a port,
    a path, a wildcard: the proxy serves memdb under exact names)."""
    names = []
    for raw in given:
        name = host_form(raw.strip())  # an IP address included, in brackets or not
        if name is None or not (name.startswith("[") or _HOST_NAME.fullmatch(name)):
            raise ConfigError(
                f"--public-host {shown(raw, 80)}: not a host name (give the name alone, e.g. memdb.example.org: "
                "no scheme, port, path or wildcard)"
            )
        names.append(name)
    return list(dict.fromkeys(names))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--port {port}: cannot listen on {host}:{port}: {exc.strerror or exc} (pick another --port)") from None
    return sock


def _demo(out: Any) -> tuple[memdb.Database, ServeConfig, str]:
    """The demo's sample memory in a new temporary directory, its clock standing at the demo's now,
    and a fresh token per demo owner (printed, never stored)."""
    from memdb.surfaces.demo import DemoClock, build_sample

    path = tempfile.mkdtemp(prefix="memdb-serve-demo-")
    clock = DemoClock()
    db = memdb.open(path, clock=clock)
    build_sample(db, clock)
    tokens = {secrets.token_urlsafe(24): owner for owner in db.owners()}
    for token, owner in tokens.items():
        print(f"memdb serve --demo: sign in as {owner} with token {token}", file=out)
    return db, ServeConfig(tokens, schedule=ScheduleConfig(idle_sessions=0)), path


def run(
    db_path: str | os.PathLike[str] | None,
    *,
    config: str | os.PathLike[str] | None = None,
    host: str = HOST,
    port: int = DEFAULT_PORT,
    allow_remote: bool = False,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    behind_proxy: bool = False,
    public_hosts: Sequence[str] = (),
    demo: bool = False,
    now: dt.datetime | None = None,
    create: bool = False,
) -> int:
    """Entry point of ``memdb serve``: check the options, open the database, serve until stopped.
    ``create`` starts a database where there is none (``open_served``); ``public_hosts``, the
    names a proxy serves memdb under, are required with ``behind_proxy`` and only with it."""
    _require_web()
    import anyio
    import uvicorn

    if not 0 < port < 65536:
        raise ConfigError(f"--port {port}: must be from 1 to 65535")
    if (tls_cert is None) != (tls_key is None):
        raise ConfigError("--tls-cert and --tls-key: give both or neither")
    if not _is_loopback(host):
        if not allow_remote:
            raise ConfigError(f"--host {host}: not a loopback address; add --allow-remote (with --tls-cert/--tls-key) to listen there")
        if tls_cert is None:  # a proxy in front listens on loopback itself (--behind-proxy there)
            raise ConfigError(
                f"--host {host}: a non-loopback address needs --tls-cert/--tls-key (tokens would cross the network in clear; "
                "a reverse proxy that terminates TLS forwards to memdb on loopback, with --behind-proxy)"
            )
    if behind_proxy and not public_hosts:
        raise ConfigError(f"--behind-proxy: {_NEEDS_PUBLIC_HOST}")
    if public_hosts and not behind_proxy:
        raise ConfigError(
            "--public-host: only with --behind-proxy (on loopback the Host is this machine's name; with --tls-cert the "
            "certificate names the server)"
        )
    public_hosts = public_host_names(public_hosts)
    if demo and (db_path is not None or config is not None):
        raise ConfigError("--demo: serves the embedded demo database; leave --db and --config out")
    if not demo and (db_path is None or config is None):
        raise ConfigError("--db and --config: both required (or --demo for a first look)")
    settings = load_config(config) if config is not None else None
    models = settings.llm.adapters() if settings is not None and settings.llm is not None else {}  # before the port, too
    sock = _bind(host, port)  # a busy port fails here, before the database opens
    demo_path = None
    try:
        if demo:
            db, settings, demo_path = _demo(sys.stderr)
        else:
            assert db_path is not None and settings is not None
            fixed = now
            db = open_served("serve", db_path, create, clock=(lambda: fixed) if fixed is not None else None, **models)
        with db:
            if settings.teams is not None and db.settings.teams != settings.teams:
                db.configure(teams=settings.teams)  # the config is the one place teams are declared (audited)
            scheduler = Scheduler(db.episodes, jobs_for(db, settings.schedule)) if settings.schedule.enabled else None
            secure = tls_cert is not None or behind_proxy
            app = build_app(
                db, settings, scheduler=scheduler, secure_cookies=secure, host=host, behind_proxy=behind_proxy, public_hosts=public_hosts
            )
            ticker = SchedulerThread(scheduler) if scheduler is not None else None
            if ticker is not None:
                ticker.start()
            scheme = "https" if tls_cert else "http"
            shown = f"[{host}]" if ":" in host else host
            print(
                f"memdb serve: dashboard on {scheme}://{shown}:{port}/, MCP on {scheme}://{shown}:{port}/mcp, "
                f"{len(set(settings.tokens.values()))} owner(s), scheduler {'on' if ticker else 'off'}"
                + (f", Claude for {', '.join(settings.llm.use)}" if settings.llm is not None else ""),
                file=sys.stderr, flush=True,
            )  # fmt: skip
            # X-Forwarded-For only behind the proxy, and from any loopback source: the proxy reaches
            # --host ::1 from ::1 (trusting 127.0.0.1 alone, every client there was the proxy's one
            # address), and any local process may bind any of them, so trusting one is no safer
            uv = uvicorn.Config(
                app, host=host, port=port, log_level="warning", lifespan="on", ssl_certfile=tls_cert, ssl_keyfile=tls_key,
                proxy_headers=behind_proxy, forwarded_allow_ips=list(LOOPBACK_SOURCES) if behind_proxy else None,
            )  # fmt: skip
            # uvicorn re-raises the signal that stopped it once it has shut down; handlers of our own
            # receive it, so the scheduler stops and gives its lease up instead of the process dying first
            stopped: list[int] = []
            main = threading.current_thread() is threading.main_thread()  # signals reach the main thread only
            previous = {sig: signal.signal(sig, lambda n, _f: stopped.append(n)) for sig in (signal.SIGINT, signal.SIGTERM) if main}
            try:
                anyio.run(uvicorn.Server(uv).serve, [sock])
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
                if ticker is not None:
                    ticker.stop()
                    ticker.join(timeout=60)
    finally:
        sock.close()
        if demo_path is not None:
            shutil.rmtree(demo_path, ignore_errors=True)
    return 0
