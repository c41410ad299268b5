"""The ``Host`` a request to memdb over HTTP may name: one rule for the dashboard, ``/mcp`` of
``memdb serve`` and ``memdb mcp --transport http``, checked before any token is looked at.

A page of another site that resolves its own name to 127.0.0.1 (DNS rebinding) reaches memdb
naming that site, and is refused. Names compare in one form (``host_form``): lower case, without
a final dot (``memdb.example.org.`` is the same name, fully qualified), an IP address spelled
canonically, an IPv6 one in brackets; any port. The request passed on names its host in that
form, so the MCP SDK's own check after it (exact and case-sensitive) agrees: it refused
``LOCALHOST`` only after the token was checked and counted, and told a right token (421) from a
wrong one (401).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HostCheck", "host_form", "host_header", "sdk_security"]

# a name (no colon or bracket: an IPv6 address only in brackets) or a bracketed address, then a port
_HOST_HEADER = re.compile(r"(?P<name>\[[^\[\]]*\]|[^:\[\]]+)(?::(?P<port>[0-9]{1,5}))?")


def host_form(name: str) -> str | None:
    """``name`` (a host name or IP address, no port) in the form names compare in (module
    docstring); None for brackets around anything but an IPv6 address."""
    name = name.lower().removesuffix(".")
    if name.startswith("[") and name.endswith("]"):
        try:
            return f"[{ipaddress.IPv6Address(name[1:-1])}]"
        except ValueError:
            return None
    if "[" in name or "]" in name:
        return None
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return name
    return f"[{ip}]" if ip.version == 6 else str(ip)


def host_header(value: str) -> tuple[str, str] | None:
    """A ``Host`` header (or an origin's host and port) as its name in ``host_form`` and its port
    ("" when none is given); None when it names no host."""
    found = _HOST_HEADER.fullmatch(value)
    name = host_form(found["name"]) if found else None
    if found is None or not name:
        return None
    return name, found["port"] or ""


class HostCheck:
    """ASGI middleware: a request whose ``Host`` names none of ``names`` (compared in
    ``host_form``, any port) gets 400 before anything else runs; one that does goes on with its
    ``Host`` in that form (module docstring)."""

    def __init__(self, app: ASGIApp, names: Iterable[str]) -> None:
        self.app = app
        self.names = frozenset(form for form in map(host_form, names) if form)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = [value for key, value in scope["headers"] if key.lower() == b"host"]
        host = host_header(given[0].decode("latin-1")) if len(given) == 1 else None  # two: which one would the app read?
        if host is None or host[0] not in self.names:
            body = b"Invalid host header"
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 400, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        name, port = host
        shown = f"{name}:{port}".encode() if port else name.encode()
        headers = [(key, shown if key.lower() == b"host" else value) for key, value in scope["headers"]]
        await self.app({**scope, "headers": headers}, receive, send)


def sdk_security(names: Iterable[str]) -> TransportSecuritySettings:
    """The MCP SDK's own Host and Origin check for ``names``, after ``HostCheck``: the same names
    with or without a port (it allowed only ``name:port`` by default, refusing a bare
    ``127.0.0.1``), and an ``Origin`` of any of them over http or https."""
    from mcp.server.transport_security import TransportSecuritySettings

    forms = list(dict.fromkeys(form for form in map(host_form, names) if form))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in forms] + forms,
        allowed_origins=[f"{scheme}://{n}{port}" for n in forms for scheme in ("http", "https") for port in ("", ":*")],
    )
