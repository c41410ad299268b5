"""Failed sign-ins over real HTTP: the dashboard's form, ``/mcp`` beside it and ``memdb mcp
--transport http`` lock a client address out with 429 and ``Retry-After`` (the exact time rules:
tests/surfaces/test_throttle.py); and ``--behind-proxy`` checks the Host against the names given
with ``--public-host``, which it requires. Before, a guesser could try tokens without limit, and
behind a proxy any Host reached memdb (a page of another site resolving its name to 127.0.0.1)."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import ANA_TOKEN, BO_TOKEN
from starlette.testclient import TestClient
from test_serve import FULL, _free_port, _serving, _stop, write

import memdb
from memdb.cli import main as cli_main
from memdb.surfaces.serve import ServeConfig, build_app

BASE = "http://127.0.0.1:8766"
GUESSER, OTHER = "203.0.113.7", "198.51.100.9"
WRONG = [f"guess-{i}-not-a-token-of-anyone" for i in range(12)]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
CONFIG = ServeConfig({ANA_TOKEN: "ana", BO_TOKEN: "bo"})


def proxied(app: Any, base_url: str = BASE) -> TestClient:
    """A client reaching ``app`` through a proxy on 127.0.0.1, read by uvicorn's proxy headers as
    ``memdb serve --behind-proxy`` has it: each request's X-Forwarded-For is its client's address."""
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    return TestClient(ProxyHeadersMiddleware(app, trusted_hosts="127.0.0.1"), base_url=base_url, client=("127.0.0.1", 5000))


def sign_in(client: TestClient, token: str, address: str = GUESSER, **headers: str) -> Any:
    """The sign-in form posted as a browser posts it (its CSRF value, this server's Origin), from ``address``."""
    page = client.get("/signin")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    return client.post("/signin", data={"csrf": found.group(1), "token": token},
                       headers={"Origin": BASE, "X-Forwarded-For": address, **headers}, follow_redirects=False)  # fmt: skip


def mcp(client: TestClient, token: str | None, address: str = GUESSER, **headers: str) -> Any:
    auth = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "X-Forwarded-For": address, **auth, **headers})


@pytest.fixture
def db(tmp_path: Path) -> Any:
    with memdb.open(tmp_path / "db") as opened:
        yield opened


def test_failed_sign_ins_lock_the_address_out_of_the_dashboard(
    db: memdb.Database, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with proxied(build_app(db, CONFIG)) as client:
        assert [sign_in(client, WRONG[i]).status_code for i in range(4)] == [401] * 4
        fifth = sign_in(client, WRONG[4])
        assert fifth.status_code == 429 and fifth.headers["retry-after"] == "60"
        assert "unknown token, and too many failed sign-ins from your address: try again in 1 minute" in fifth.text
        right = sign_in(client, ANA_TOKEN)  # locked: the right token is not even looked at
        assert right.status_code == 429 and "memdb_session" not in right.headers.get("set-cookie", "")
        assert "too many failed sign-ins from your address: try again in 1 minute" in right.text
        assert 0 < int(right.headers["retry-after"]) <= 60
        ok = sign_in(client, BO_TOKEN, OTHER)  # another address signs in; its success lifts nobody's lock
        assert ok.status_code == 303 and "memdb_session" in ok.headers["set-cookie"]
        client.cookies.delete("memdb_session")  # (the one cookie jar: the guesser holds no session)
        assert sign_in(client, ANA_TOKEN).status_code == 429
    locks = [r for r in caplog.records if r.name == "memdb.surfaces.throttle"]
    assert [r.levelname for r in locks] == ["WARNING"] and "locked for 60 s" in locks[0].getMessage()
    out = capsys.readouterr()
    said = caplog.text + out.out + out.err
    assert not any(secret in said for secret in [*WRONG, ANA_TOKEN, BO_TOKEN, GUESSER])  # never a value, nor the address


def test_the_lock_ends_and_the_right_token_then_signs_in(db: memdb.Database) -> None:
    from memdb.surfaces.throttle import Throttle

    now = [0.0]
    with proxied(build_app(db, CONFIG, throttle=Throttle(clock=lambda: now[0]))) as client:
        for token in WRONG[:5]:
            sign_in(client, token)
        now[0] = 59.9
        assert sign_in(client, ANA_TOKEN).status_code == 429
        now[0] = 60.0
        assert sign_in(client, ANA_TOKEN).status_code == 303


def test_refused_forms_and_empty_tokens_are_no_failures(db: memdb.Database) -> None:
    """Another site's page can make a person's browser post the sign-in form: refused by its
    origin (or CSRF) check, such a post must not count, or any page could lock people out."""
    with proxied(build_app(db, CONFIG)) as client:
        for token in WRONG:
            assert sign_in(client, token, Origin="http://evil.example").status_code == 403
            forged = client.post("/signin", data={"csrf": "forged", "token": token}, headers={"Origin": BASE, "X-Forwarded-For": GUESSER})
            assert forged.status_code == 403
            assert sign_in(client, "").status_code == 401
        assert sign_in(client, ANA_TOKEN).status_code == 303


def test_mcp_and_the_dashboard_count_failures_together(db: memdb.Database) -> None:
    with proxied(build_app(db, CONFIG)) as client:
        assert [sign_in(client, t).status_code for t in WRONG[:3]] == [401] * 3
        assert [mcp(client, t).status_code for t in WRONG[3:5]] == [401, 429]  # two more, at /mcp: five
        locked = mcp(client, ANA_TOKEN)
        assert locked.status_code == 429 and 0 < int(locked.headers["retry-after"]) <= 60
        assert json.loads(locked.text)["error"] == "too_many_requests" and ANA_TOKEN not in locked.text
        assert sign_in(client, ANA_TOKEN).status_code == 429
        assert mcp(client, ANA_TOKEN, OTHER).status_code == 200  # another address is not locked


def test_mcp_requests_without_a_token_are_no_guess(db: memdb.Database) -> None:
    """A CORS preflight or a probe carries no Authorization: 401, never counted."""
    with proxied(build_app(db, CONFIG)) as client:
        assert {mcp(client, None).status_code for _ in range(12)} == {401}
        preflight = {"Origin": BASE, "Access-Control-Request-Method": "POST", "X-Forwarded-For": GUESSER}
        assert {client.options("/mcp", headers=preflight).status_code for _ in range(12)} == {401}
        assert mcp(client, ANA_TOKEN).status_code == 200


def test_memdb_mcp_over_http_is_throttled_and_checks_the_host_first(db: memdb.Database) -> None:
    """``memdb mcp --transport http``: the SDK checked the Host after the token, so a page of
    another site resolving its name to 127.0.0.1 told a right token (421) from a wrong one (401)."""
    from memdb.surfaces.mcp_server import http_app

    with TestClient(http_app(db, CONFIG.tokens), base_url="http://127.0.0.1:8765") as client:
        for token in WRONG:  # another name: refused before the token, so nothing is learnt or counted
            assert mcp(client, token, Host="evil.example:8765").status_code == 400
        assert mcp(client, ANA_TOKEN, Host="evil.example:8765").status_code == 400
        assert mcp(client, ANA_TOKEN).status_code == 200
        assert [mcp(client, t).status_code for t in WRONG[:5]] == [401] * 4 + [429]
        assert mcp(client, ANA_TOKEN).status_code == 429


# --- behind a proxy: the public names ----------------------------------------------------------------


def test_behind_a_proxy_only_the_public_names_and_this_machine_s_reach_memdb(db: memdb.Database) -> None:
    app = build_app(db, CONFIG, behind_proxy=True, public_hosts=["memdb.example.org"])
    with proxied(app, "https://memdb.example.org") as client:
        assert client.get("/signin").status_code == 200
        assert client.get("/signin", headers={"Host": "127.0.0.1:8766"}).status_code == 200  # a proxy that keeps its own Host
        assert client.get("/signin", headers={"Host": "evil.example"}).status_code == 400  # DNS rebinding
        for token in WRONG:  # refused before the token: a rebinding page neither guesses nor locks anyone out
            assert mcp(client, token, Host="evil.example").status_code == 400
        assert mcp(client, ANA_TOKEN, Origin="https://memdb.example.org").status_code == 200
        assert mcp(client, ANA_TOKEN, Origin="https://evil.example").status_code == 403
        page = client.get("/signin")
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None
        signed_in = client.post("/signin", data={"csrf": found.group(1), "token": ANA_TOKEN},
                                headers={"Origin": "https://memdb.example.org"}, follow_redirects=False)  # fmt: skip
        assert signed_in.status_code == 303


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--behind-proxy"], "--behind-proxy: name the host the proxy serves memdb under with --public-host (e.g. --public-host"),
        (["--public-host", "memdb.example.org"], "--public-host: only with --behind-proxy"),
        (["--behind-proxy", "--public-host", "https://memdb.example.org"], "--public-host 'https://memdb.example.org': not a host name"),
        (["--behind-proxy", "--public-host", "memdb.example.org:443"], "--public-host 'memdb.example.org:443': not a host name"),
        (["--behind-proxy", "--public-host", "*.example.org"], "'*.example.org': not a host name (give the name alone"),
        (["--behind-proxy", "--public-host", "[::1]:443"], "]:443': not a host name"),  # (the address itself is shown as a placeholder)
        (["--behind-proxy", "--public-host", "[memdb]"], "--public-host '[memdb]': not a host name"),
    ],
)
def test_behind_a_proxy_the_public_name_is_required(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    config = write(tmp_path / "memdb.toml", FULL)
    assert cli_main(["serve", "--db", str(tmp_path / "db"), "--config", str(config), *args]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "db").exists()  # refused before anything was opened


def test_public_host_names_are_kept_as_a_host_header_carries_them() -> None:
    from memdb.surfaces.serve import public_host_names

    given = ["Memdb.Example.ORG", "memdb.example.org.", "::1", "[2001:db8::1]", "192.0.2.10", "memdb"]
    assert public_host_names(given) == ["memdb.example.org", "[::1]", "[2001:db8::1]", "192.0.2.10", "memdb"]


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


def post_from(port: int, token: str, *, listening: str = "127.0.0.1", source: str | None = None, **headers: str) -> int:
    """The status of an MCP initialize sent to ``listening:port`` from a connection of its own
    (bound to ``source`` when given, as a local process may bind any loopback address), with
    ``headers`` over the defaults (underscores for dashes: ``X_Forwarded_For``)."""
    body = json.dumps(INITIALIZE)
    given = {
        "Host": f"[{listening}]:{port}" if ":" in listening else f"{listening}:{port}", **MCP_HEADERS, "Authorization": f"Bearer {token}",
        **{name.replace("_", "-"): value for name, value in headers.items()}, "Content-Length": str(len(body)), "Connection": "close",
    }  # fmt: skip
    head = "".join(f"{name}: {value}\r\n" for name, value in given.items())
    with socket.create_connection((listening, port), timeout=10, source_address=(source, 0) if source else None) as conn:
        conn.sendall(f"POST /mcp HTTP/1.1\r\n{head}\r\n{body}".encode())
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return int(reply.split()[1])


@pytest.mark.parametrize("listening", ["127.0.0.1", "::1"])
def test_a_serve_process_behind_a_proxy_throttles_the_forwarded_address(tmp_path: Path, listening: str) -> None:
    """The real process: the proxy (on the loopback address memdb listens on, so ::1 for
    ``--host ::1``) forwards the client's address, and each forwarded address has its own count;
    a Host that is not the public name is refused. On ::1 the proxy was not trusted (only
    127.0.0.1 was), so every client counted as the proxy's one address: one guesser locked all out."""
    if ":" in listening and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    path = tmp_path / "db"
    memdb.open(path).close()
    config = write(tmp_path / "memdb.toml", FULL.replace("idle_sessions = 0", "enabled = false"))
    port = _free_port()
    argv = ["--db", str(path), "--config", str(config), "--host", listening, "--behind-proxy", "--public-host", "memdb.example.org"]
    proc = _serving(argv, port, host=listening)

    def post(token: str, client: str, host: str = "memdb.example.org") -> int:
        return post_from(port, token, listening=listening, Host=host, X_Forwarded_For=client)

    try:
        assert post(ANA_TOKEN, "203.0.113.7", host="evil.example") == 400
        assert [post(t, "203.0.113.7") for t in WRONG[:5]] == [401] * 4 + [429]
        assert post(ANA_TOKEN, "203.0.113.7") == 429
        assert post(ANA_TOKEN, "198.51.100.9") == 200  # another client behind the same proxy
    finally:
        err = _stop(proc)
    assert "locked for 60 s" in err and "203.0.113.7" not in err and WRONG[0] not in err


def test_on_loopback_every_local_source_address_is_one_client(tmp_path: Path) -> None:
    """Not behind a proxy, every local process is this machine: one binding 127.0.0.2, .3, ...
    (any of 127.0.0.0/8) for each guess had a fresh count each time, and guessed without end."""
    path = tmp_path / "db"
    memdb.open(path).close()
    config = write(tmp_path / "memdb.toml", FULL.replace("idle_sessions = 0", "enabled = false"))
    port = _free_port()
    proc = _serving(["--db", str(path), "--config", str(config)], port)
    try:
        assert [post_from(port, t, source=f"127.0.{i}.{i + 2}") for i, t in enumerate(WRONG[:5])] == [401] * 4 + [429]
        assert post_from(port, ANA_TOKEN) == 429  # from 127.0.0.1: the same machine, the same lock
    finally:
        err = _stop(proc)
    assert "locked for 60 s" in err


def test_memdb_mcp_over_http_ignores_x_forwarded_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``memdb mcp --transport http`` has no proxy in front: uvicorn read X-Forwarded-For from any
    local client (its default trusts 127.0.0.1, and $FORWARDED_ALLOW_IPS more), so a guess naming
    an address of its own there had a fresh count each time, and a forged one escaped a lock."""
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")  # the process inherits it: even so, no header is trusted
    path = tmp_path / "db"
    memdb.open(path).close()
    config = write(tmp_path / "memdb.toml", f'[tokens]\n"{ANA_TOKEN}" = "ana"\n')
    port = _free_port()
    proc = _serving(["--db", str(path), "--config", str(config), "--transport", "http"], port, command="mcp")
    try:
        guesses = [post_from(port, t, X_Forwarded_For=f"10.0.{i}.1") for i, t in enumerate(WRONG[:5])]
        assert guesses == [401] * 4 + [429]
        assert post_from(port, ANA_TOKEN, X_Forwarded_For="198.51.100.9") == 429  # a forged address escapes no lock
    finally:
        err = _stop(proc)
    assert "locked for 60 s" in err


# --- one Host rule --------------------------------------------------------------------------------


THIS_MACHINE = ["LOCALHOST:8766", "localhost.", "Localhost.:8766", "127.0.0.1", "127.0.0.1.:8766", "[::1]", "[0:0::1]:8766"]
ELSEWHERE = ["evil.example", "EVIL.example.:8766", "localhost.evil.example", "localhost:80@evil", "[::2]", "[127.0.0.1]", "localhost.."]


@pytest.mark.parametrize("surface", ["serve", "serve behind a proxy", "memdb mcp"])
def test_one_host_rule_whatever_the_case_a_final_dot_or_the_port(db: memdb.Database, surface: str) -> None:
    """A Host names a host whatever its case, with a final dot (the name fully qualified) and with
    or without a port, on every surface alike; the MCP SDK compared it exactly, after the token:
    ``LOCALHOST`` got 421 for a right token and 401 for a wrong one (counted), and memdb mcp
    refused a bare ``127.0.0.1``. Any other name is refused before the token, and nothing counted."""
    from memdb.surfaces.mcp_server import http_app

    public = ["MEMDB.Example.org", "memdb.example.org.:443"] if surface == "serve behind a proxy" else []
    app = {
        "serve": lambda: build_app(db, CONFIG),
        "serve behind a proxy": lambda: build_app(db, CONFIG, behind_proxy=True, public_hosts=["memdb.example.org"]),
        "memdb mcp": lambda: http_app(db, CONFIG.tokens),
    }[surface]()
    with TestClient(app, base_url=BASE) as client:
        for host in ELSEWHERE + ([] if public else ["memdb.example.org"]):
            assert [mcp(client, t, Host=host).status_code for t in WRONG] == [400] * len(WRONG), host
        for host in THIS_MACHINE + public:
            assert mcp(client, ANA_TOKEN, Host=host).status_code == 200, host
        assert [mcp(client, t, Host="LOCALHOST").status_code for t in WRONG[:5]] == [401] * 4 + [429]  # counted here, and only here


def test_the_dashboard_signs_in_under_its_public_name_with_a_final_dot(db: memdb.Database) -> None:
    """A browser at ``https://memdb.example.org./`` sends that Host and Origin: the same name."""
    app = build_app(db, CONFIG, behind_proxy=True, public_hosts=["memdb.example.org"])
    with TestClient(app, base_url="https://memdb.example.org.") as client:
        page = client.get("/signin")
        assert page.status_code == 200
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None
        signed_in = client.post("/signin", data={"csrf": found.group(1), "token": ANA_TOKEN},
                                headers={"Origin": "https://memdb.example.org."}, follow_redirects=False)  # fmt: skip
        assert signed_in.status_code == 303 and "memdb_session" in signed_in.headers["set-cookie"]
        foreign = client.post("/signin", data={"csrf": found.group(1), "token": ANA_TOKEN},
                              headers={"Origin": "https://memdb.example.org.evil.example"}, follow_redirects=False)  # fmt: skip
        assert foreign.status_code == 403
