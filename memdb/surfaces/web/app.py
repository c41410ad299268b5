"""The dashboard's plumbing: sign-in by token, the session cookie, CSRF, owner clamping, rendering.

Identity comes from the server only. A person signs in with a bearer token of the config (the
same ``[tokens]`` table as ``memdb mcp``); the server keeps the session (owner, CSRF token) in
memory and the browser gets an opaque id in an HttpOnly, SameSite=Strict cookie. Every POST
must carry the session's CSRF token in its form, and a form that names a person (``by``,
``owner``) is refused: actions are recorded as the signed-in owner, never as a field says.
Pages read through ``db.owner(signed-in owner)``, so another owner's episode id is a 404 worded
as a missing one. Page handlers are plain functions run in a worker thread (the store's
transactions open and end in one thread, as the MCP tools do).
"""

from __future__ import annotations

import datetime as dt
import hmac
import http
import secrets
import sys
import threading
import time
import traceback
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import anyio.to_thread
import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from memdb.errors import DuplicateError, MemdbError, NotFoundError, PermissionDeniedError, ValidationError
from memdb.lifecycle.summarize import one_line_head
from memdb.memory.models import Episode
from memdb.surfaces.hosts import host_header
from memdb.surfaces.throttle import Throttle

if TYPE_CHECKING:
    import memdb
    from memdb.governance.schedule import Scheduler

__all__ = ["COOKIE", "Dashboard", "Req", "WebError", "build_dashboard", "local_time", "summary_shown"]

COOKIE = "memdb_session"
SIGNIN_COOKIE = "memdb_signin"  # the browser's signed nonce the sign-in forms' CSRF values are bound to, before any session exists
SIGNIN_VALID = dt.timedelta(hours=24)  # how long a sign-in page may stay open (its form's value carries when it was shown)
SESSION_IDLE = dt.timedelta(hours=8)
MAX_FORM_BYTES = 64 * 1024
NAMING_FIELDS = ("by", "owner", "user", "as")  # who acts is the session's owner; a form never says
SECURITY_HEADERS = {
    # no script at all, nothing from outside the server, no framing
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    # nothing to other sites; the server's own forms send their Origin ("no-referrer" made a
    # browser send "Origin: null", which the origin check then had to let through)
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def local_time(at: dt.datetime, zone: ZoneInfo, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """``at`` as the database's zone reads it: with the zone named after a time of day
    ("2026-06-30 01:30 CEST"; a zone without a name by its offset, "UTC-03"), a day alone as the
    local day. The filters, charts and schedule count local days, so every time shown is local."""
    local = at.astimezone(zone)
    text = local.strftime(fmt)
    if "%H" in fmt:
        name = local.tzname() or zone.key
        text += " " + (f"UTC{name}" if name[:1] in "+-" else name)
    return text


@jinja2.pass_context
def _local_filter(context: jinja2.runtime.Context, at: dt.datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> Markup:
    """The template filter ``local``: ``local_time`` in a ``<time>`` holding the instant (UTC) and the zone's name."""
    if at is None:
        return Markup("")
    zone: ZoneInfo = context["zone"]
    return Markup('<time datetime="{}" title="{}">{}</time>').format(at.astimezone(dt.UTC).isoformat(), zone.key, local_time(at, zone, fmt))


def summary_shown(episode: Episode) -> str:
    """The summary an episode shows under its own date and kind: an archived one's one line
    without the head that repeats them ("2026-06-28 routine/success: ")."""
    if episode.status == "archived":
        return episode.summary.removeprefix(one_line_head(episode))
    return episode.summary


class WebError(Exception):
    """A refusal with its HTTP status; the message is shown to the signed-in person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Session:
    """A signed-in person: the owner the token maps to, the CSRF token, a message for the next page."""

    id: str
    owner: str
    csrf: str
    seen: float
    flash: list[str] = field(default_factory=list)


class Sessions:
    """Sessions in memory (a restart signs everyone out), expiring after ``idle`` without a request."""

    def __init__(self, idle: dt.timedelta = SESSION_IDLE) -> None:
        self.idle = idle.total_seconds()
        self._by_id: dict[str, Session] = {}
        self._lock = threading.Lock()

    def new(self, owner: str) -> Session:
        s = Session(secrets.token_urlsafe(32), owner, secrets.token_urlsafe(32), time.monotonic())
        with self._lock:
            self._by_id[s.id] = s
        return s

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        now = time.monotonic()
        with self._lock:
            s = self._by_id.get(sid)
            if s is None:
                return None
            if now - s.seen > self.idle:
                del self._by_id[sid]
                return None
            s.seen = now
            return s

    def drop(self, sid: str) -> None:
        with self._lock:
            self._by_id.pop(sid, None)


@dataclass
class Req:
    """What a page handler gets: the signed-in session, query and form fields, path parameters."""

    me: Session
    query: Mapping[str, str]
    form: Mapping[str, list[str]]
    path: Mapping[str, str]

    @property
    def owner(self) -> str:
        return self.me.owner

    def field(self, name: str, default: str = "") -> str:
        values = self.form.get(name)
        return values[0].strip() if values else default

    def arg(self, name: str, default: str = "") -> str:
        return self.query.get(name, default).strip()


Handler = Callable[["Dashboard", Req], Response]


class Dashboard:
    """State shared by the pages: the database, who may sign in, reviewers, the scheduler, templates."""

    def __init__(
        self,
        db: memdb.Database,
        tokens: Mapping[str, str],
        *,
        reviewers: Mapping[str, frozenset[str]] | None = None,
        scheduler: Scheduler | None = None,
        secure_cookies: bool = False,
        throttle: Throttle | None = None,
    ) -> None:
        self.db = db
        self.tokens = dict(tokens)
        self.reviewers = dict(reviewers or {})
        self.scheduler = scheduler
        self.secure = secure_cookies
        self.sessions = Sessions()
        self.throttle = throttle if throttle is not None else Throttle()  # failed sign-ins per client address
        self._signin_key = secrets.token_bytes(32)  # signs the sign-in forms' CSRF values; a restart renews it
        loader = jinja2.PackageLoader("memdb.surfaces.web", "templates")
        self.templates = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
        self.templates.filters["local"] = _local_filter
        self.templates.filters["summary"] = summary_shown
        self.css = resources.files("memdb.surfaces.web").joinpath("static/style.css").read_bytes()

    def zone(self) -> ZoneInfo:
        """The database's time zone (its ``timezone`` setting), in which every time is shown."""
        return ZoneInfo(self.db.settings.timezone)

    def reviews(self, owner: str) -> list[str]:
        """Owners whose pending lessons ``owner`` may approve or reject: their own, and those the config gives them."""
        return sorted({owner, *self.reviewers.get(owner, frozenset())})

    def render(self, name: str, req: Req | None, status: int = 200, **context: Any) -> HTMLResponse:
        me = req.me if req is not None else None
        flash = list(me.flash) if me is not None else []
        if me is not None:
            me.flash.clear()
        template = self.templates.get_template(name)
        html = template.render(me=me, flash=flash, page=name.removesuffix(".html"), zone=self.zone(), **context)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def done(self, req: Req, message: str, to: str) -> Response:
        """After a change: the message on the next page, and a redirect so a reload repeats nothing."""
        req.me.flash.append(message)
        return RedirectResponse(to, status_code=303, headers=SECURITY_HEADERS)

    # --- the sign-in form's CSRF value ----------------------------------------------------------

    def signin_value(self, request: Request) -> tuple[str, str]:
        """The sign-in cookie and the CSRF value of a sign-in form. The cookie keeps the nonce the
        browser holds if this server signed it, so every sign-in tab shares it (a new one per page
        broke the forms of the tabs opened before), else a new one; the form's value is signed with
        that nonce and the time the page is shown, and is good for ``SIGNIN_VALID`` from then.

        Anyone may GET /signin, so a value this server signed can be planted in another browser:
        what keeps a sign-in from being forged is that it comes from this origin (``posted``) and
        the cookie's SameSite. The signing refuses values made elsewhere, and the time an old one."""
        held = request.cookies.get(SIGNIN_COOKIE)
        nonce = held.partition(".")[0] if held and self._signed_nonce(held) else secrets.token_urlsafe(24)
        issued = int(self.db.episodes.now().timestamp())  # the database's clock, as every time rule of the pages
        return f"{nonce}.{self._mac(nonce)}", f"{issued}.{self._mac(f'{nonce}.{issued}')}"

    def signin_accepts(self, cookie: str | None, given: str) -> bool:
        """Whether ``given`` is the value of a sign-in form this server showed, to the browser that
        holds ``cookie``, less than ``SIGNIN_VALID`` ago."""
        if not cookie or not self._signed_nonce(cookie):
            return False
        issued, _, mac = given.partition(".")
        if not issued.isdigit() or not hmac.compare_digest(mac.encode(), self._mac(f"{cookie.partition('.')[0]}.{issued}").encode()):
            return False
        age = self.db.episodes.now().timestamp() - int(issued)
        return 0 <= age <= SIGNIN_VALID.total_seconds()

    def _signed_nonce(self, value: str) -> bool:
        nonce, _, mac = value.partition(".")
        return bool(nonce) and hmac.compare_digest(mac.encode(), self._mac(nonce).encode())

    def _mac(self, text: str) -> str:
        return hmac.new(self._signin_key, text.encode(), "sha256").hexdigest()

    def signin_cookie(self, response: Response, value: str) -> None:
        self.cookie(response, SIGNIN_COOKIE, value, max_age=int(SIGNIN_VALID.total_seconds()))

    # --- the ASGI side ------------------------------------------------------------------------

    def cookie(self, response: Response, name: str, value: str, *, max_age: int | None = None) -> None:
        response.set_cookie(name, value, max_age=max_age, path="/", secure=self.secure, httponly=True, samesite="strict")

    def page(self, handler: Handler, *, post: bool = False) -> Callable[[Request], Awaitable[Response]]:
        """An endpoint: the session checked (and the CSRF token of a POST), then ``handler`` in a worker thread."""

        async def endpoint(request: Request) -> Response:
            me = self.sessions.get(request.cookies.get(COOKIE))
            try:
                if me is None:
                    if post:
                        raise WebError(403, "no session: sign in first (nothing was changed)")
                    target = urllib.parse.quote(request.url.path + (f"?{request.url.query}" if request.url.query else ""), safe="")
                    return RedirectResponse(f"/signin?next={target}", status_code=303, headers=SECURITY_HEADERS)
                form: dict[str, list[str]] = {}
                if post:
                    form = await self.posted(request, me)
                req = Req(me, dict(request.query_params), form, dict(request.path_params))
                return await anyio.to_thread.run_sync(lambda: self.run(handler, req))
            except WebError as exc:
                return self.refusal(exc, me)

        return endpoint

    def run(self, handler: Handler, req: Req) -> Response:
        try:
            return handler(self, req)
        except WebError:
            raise
        except NotFoundError as exc:
            raise WebError(404, str(exc)) from None
        except PermissionDeniedError as exc:
            raise WebError(403, str(exc)) from None
        except DuplicateError as exc:
            raise WebError(409, str(exc)) from None
        except ValidationError as exc:
            raise WebError(400, str(exc)) from None
        except MemdbError as exc:
            raise WebError(400, f"{type(exc).__name__}: {exc}") from None
        except Exception as exc:  # a bug: the page says so without details (they may hold personal data)
            print(f"memdb serve: {type(exc).__name__} in a dashboard page", flush=True)
            sys.stderr.write("".join(traceback.format_tb(exc.__traceback__)))  # where, never the message
            raise WebError(500, f"internal error ({type(exc).__name__}); the server's log has the details") from None

    def refusal(self, exc: WebError, me: Session | None) -> Response:
        req = Req(me, {}, {}, {}) if me is not None else None
        reason = http.HTTPStatus(exc.status).phrase.capitalize()  # "Not found": each page's title says what went wrong
        return self.render("error.html", req, status=exc.status, status_code=exc.status, reason=reason, message=str(exc))

    async def posted(self, request: Request, me: Session | None) -> dict[str, list[str]]:
        """The form of a POST, after the checks every change passes: same origin, size, CSRF, no naming fields."""
        origin = request.headers.get("origin")
        host = host_header(request.headers.get("host", ""))

        def ours(url: str) -> bool:
            """Whether ``url`` is of this server's host and port, compared as the Host check compares
            (memdb.surfaces.hosts: a browser at ``memdb.example.org.`` sends its Origin with the dot)."""
            return host is not None and host_header(urllib.parse.urlsplit(url).netloc) == host

        # "null" is an opaque origin (a sandboxed frame, a data: page, a redirect chain): no page of this server
        if origin is not None and (origin == "null" or not ours(origin)):
            raise WebError(403, f"origin {origin!r}: not this server (nothing was changed)")
        if origin is None and me is None:
            # A sign-in comes from this server's page: browsers send its Origin (or at least, under
            # this referrer policy, its Referer). Its CSRF value proves nothing about where the
            # POST came from (anyone may fetch one), so a sign-in from nowhere is refused; a
            # session's POST is kept by its session's secret token. A script signs in by sending
            # an Origin of this server, as a browser does.
            referer = request.headers.get("referer")
            if referer is None or not ours(referer):
                raise WebError(403, "sign-in: no Origin or Referer of this server; not this server's page (nothing was changed)")
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise WebError(415, f"content type {ctype or 'none'!r}: send a form (application/x-www-form-urlencoded)")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise WebError(413, f"form: more than {MAX_FORM_BYTES} bytes (nothing was changed)")
        try:
            pairs = urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(body), max_num_fields=500)
        except (UnicodeDecodeError, ValueError):
            raise WebError(400, "form: not a valid url-encoded form (nothing was changed)") from None
        form: dict[str, list[str]] = {}
        for key, value in pairs:
            form.setdefault(key, []).append(value)
        given = (form.pop("csrf", None) or [""])[0]
        if me is None:
            accepted = bool(given) and self.signin_accepts(request.cookies.get(SIGNIN_COOKIE), given)
        else:
            accepted = bool(given) and hmac.compare_digest(given.encode(), me.csrf.encode())
        if not accepted:
            old = " or its sign-in page more than a day old" if me is None else ""
            raise WebError(403, f"csrf token: missing or wrong{old} (reload the page and try again; nothing was changed)")
        named = [k for k in NAMING_FIELDS if k in form]
        if named:
            who = f" {me.owner}" if me is not None else ""
            raise WebError(400, f"{named[0]}: not a form field; actions are recorded as the signed-in owner{who} (nothing was changed)")
        return form


def build_dashboard(
    db: memdb.Database,
    tokens: Mapping[str, str],
    *,
    reviewers: Mapping[str, frozenset[str]] | None = None,
    scheduler: Scheduler | None = None,
    secure_cookies: bool = False,
    throttle: Throttle | None = None,
) -> SecurityHeaders:
    """The dashboard as an ASGI app (``memdb serve`` mounts it beside MCP at ``/mcp``, sharing
    one ``throttle`` of failed sign-ins with it)."""
    from memdb.surfaces.web import pages

    dash = Dashboard(db, tokens, reviewers=reviewers, scheduler=scheduler, secure_cookies=secure_cookies, throttle=throttle)
    routes = [Route(path, dash.page(handler, post=method == "POST"), methods=[method]) for method, path, handler in pages.ROUTES]
    routes += [
        Route("/signin", pages.signin_form(dash), methods=["GET"]),
        Route("/signin", pages.signin(dash), methods=["POST"]),
        Route("/static/style.css", pages.stylesheet(dash), methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.dashboard = dash
    return SecurityHeaders(app)


class SecurityHeaders:
    """Every response carries ``SECURITY_HEADERS``, Starlette's own too (its 404 for an unknown
    path, its 405 for a wrong method, a refused Host), which the pages set one by one."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message = {**message, "headers": [*message.get("headers", []), *(h for h in self._headers if h[0] not in present)]}
            await send(message)

        await self.app(scope, receive, with_headers)
