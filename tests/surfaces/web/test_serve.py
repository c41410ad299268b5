"""``memdb serve`` without a browser: the config (one file, the MCP one extended), MCP at ``/mcp``
beside the dashboard with the same tokens, the options that keep it on loopback, ``--demo``, a real
process whose scheduler records its runs in the database, and the library without the extra."""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import ANA_TOKEN, BO_TOKEN, Site
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import memdb
from memdb.cli import main as cli_main
from memdb.errors import ConfigError
from memdb.governance.schedule import Scheduler
from memdb.surfaces.mcp_server import load_tokens
from memdb.surfaces.serve import ScheduleConfig, load_config

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 60.0


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


FULL = f"""
[tokens]
"{ANA_TOKEN}" = "ana"
"{BO_TOKEN}" = "bo"

[reviewers]
ana = ["bo"]

[teams]
platform = ["ana", "bo"]

[schedule]
maintain = "02:15"
reflect = "02:45"
decay = "05:00"
idle_sessions = 0
"""


# --- the config ----------------------------------------------------------------------------------


def test_one_config_file_serves_mcp_and_the_dashboard(tmp_path: Path) -> None:
    path = write(tmp_path / "memdb.toml", FULL)
    config = load_config(path)
    assert config.tokens == {ANA_TOKEN: "ana", BO_TOKEN: "bo"} == load_tokens(path)  # memdb mcp reads the same file
    assert config.reviewers == {"ana": frozenset({"bo"})} and config.teams == {"platform": ["ana", "bo"]}
    assert config.schedule == ScheduleConfig(dt.time(2, 15), dt.time(2, 45), dt.time(5, 0), idle_sessions=0, enabled=True)
    assert load_config(write(tmp_path / "min.toml", f'[tokens]\n"{ANA_TOKEN}" = "ana"\n')).schedule == ScheduleConfig()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[reviewers]\ncarol = ["ana"]\n', "[reviewers] 'carol': no token maps to this owner"),
        ('[reviewers]\nana = "bo"\n', "[reviewers] ana = 'bo': expected a list of owner names"),
        ('[teams]\nplatform = ["ana@example.com"]\n', "[teams] platform:"),
        ('[schedule]\nmaintain = "3am"\n', "[schedule] maintain '3am': expected a local time HH:MM"),
        ('[schedule]\nweekly = "03:00"\n', "[schedule] unknown key 'weekly'"),
        ("[schedule]\nidle_sessions = -5\n", "[schedule] idle_sessions = -5: minutes from 0 (never) to 1440"),
        ("[schedule]\nenabled = 1\n", "[schedule] enabled = 1: true or false"),
        ("[dashboard]\nport = 1\n", "unknown key 'dashboard'"),
        (f'[teams]\nplatform = ["{ANA_TOKEN}"]\n', "[teams] platform: a value not shown (may be a token)"),
        (f'[reviewers]\n"{ANA_TOKEN}" = ["bo"]\n', "[reviewers] a value not shown (it may be a token)"),
    ],
)
def test_config_errors_name_the_table_and_key_and_never_a_token(tmp_path: Path, extra: str, message: str) -> None:
    path = write(tmp_path / "memdb.toml", f'[tokens]\n"{ANA_TOKEN}" = "ana"\n"{BO_TOKEN}" = "bo"\n{extra}')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value) and ANA_TOKEN not in str(info.value)


def test_a_config_others_may_read_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "memdb.toml", FULL)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="lets other users read or change its bearer tokens"):
        load_config(path)


# --- MCP beside the dashboard ----------------------------------------------------------------------


def test_mcp_at_slash_mcp_uses_the_same_tokens(site: Site) -> None:
    async def go(token: str) -> tuple[set[str], Any]:
        with anyio.fail_after(TIMEOUT):
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10) as http,
                streamable_http_client(f"{site.url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                return tools, await session.call_tool("recall_episodes", {"text": "payroll"})

    tools, result = anyio.run(go, BO_TOKEN)
    assert {"ask", "recall_episodes", "record_episode"} <= tools
    assert "Bo's private payroll incident" in result.content[0].text
    _, result = anyio.run(go, ANA_TOKEN)  # the token picks the owner: ana sees none of bo's
    assert "Bo's private payroll incident" not in result.content[0].text
    request = urllib.request.Request(f"{site.url}/mcp", data=b"{}", headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request)
    assert info.value.code == 401


def test_a_host_header_of_another_name_is_refused_on_loopback(site: Site) -> None:
    request = urllib.request.Request(f"{site.url}/signin", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request)
    assert info.value.code == 400


# --- options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "--host 0.0.0.0: not a loopback address; add --allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote"], "a non-loopback address needs --tls-cert/--tls-key (tokens would cross"),
        # a proxy in front forwards to memdb on loopback: plain HTTP on the network was allowed, checks off (a probe's find)
        (["--host", "0.0.0.0", "--allow-remote", "--behind-proxy"], "a non-loopback address needs --tls-cert/--tls-key"),
        (["--tls-cert", "c.pem"], "--tls-cert and --tls-key: give both or neither"),
        (["--demo"], "--demo: serves the embedded demo database; leave --db and --config out"),
        (["--port", "0"], "--port 0: must be from 1 to 65535"),
    ],
)
def test_serve_options_keep_it_on_loopback(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    config = write(tmp_path / "memdb.toml", FULL)
    assert cli_main(["serve", "--db", str(tmp_path / "db"), "--config", str(config), *args]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "db").exists()  # refused before anything was opened


def test_serve_needs_a_config_or_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["serve", "--db", str(tmp_path / "db")]) == 1
    assert "--db and --config: both required (or --demo for a first look)" in capsys.readouterr().err


def test_a_database_that_is_not_there_is_refused_unless_create(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped --db served a new, empty database (every page empty, every MCP question
    "Nothing found"), as memdb mcp did: it is refused, naming --create, and nothing is made;
    with --create the server starts on a new database."""
    config = write(tmp_path / "memdb.toml", FULL)
    missing = tmp_path / "typo"
    assert cli_main(["serve", "--db", str(missing), "--config", str(config), "--port", str(_free_port())]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"memdb: --db {missing}: no memdb database there") and "pass --create" in err
    assert not missing.exists()
    proc = _serving(["--db", str(missing), "--config", str(config), "--create"], port := _free_port())
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/signin", timeout=10) as page:
            assert page.status == 200
        assert (missing / "data.mdb").is_file()
    finally:
        _stop(proc)


def test_the_library_and_cli_import_without_the_web_extra(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['jinja2'] = None; sys.modules['starlette'] = None\n"
        "import memdb, memdb.cli, memdb.surfaces.serve\n"
        "raise SystemExit(memdb.cli.main(['serve', '--demo']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("memdb: memdb serve needs the 'web' extra: pip install 'memdb-agent[web]'")


# --- real processes --------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serving(argv: list[str], port: int, *, command: str = "serve", host: str = "127.0.0.1") -> subprocess.Popen[str]:
    """``memdb COMMAND --port PORT ARGV`` started, once it listens on ``host`` (its ``--host``)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memdb.cli", command, "--port", str(port), *argv],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + TIMEOUT
    while True:
        if proc.poll() is not None:
            pytest.fail(f"memdb {command} exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return proc
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"memdb {command} did not start listening in time")
            time.sleep(0.1)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=30)
    return err


def test_serve_demo_is_a_first_look_without_config() -> None:
    port = _free_port()
    proc = _serving(["--demo"], port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/signin") as r:
            assert r.status == 200 and "Sign in" in r.read().decode()
    finally:
        err = _stop(proc)
    assert re.search(r"sign in as ops with token \S{20,}", err) and f"dashboard on http://127.0.0.1:{port}/" in err


def test_a_serve_process_applies_the_config_s_teams_and_records_its_scheduled_runs(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        db.owner("ana").record("debug", "Deploy failed", outcome="failure")
    config = write(tmp_path / "memdb.toml", FULL.replace("idle_sessions = 0", "idle_sessions = 15"))
    port = _free_port()
    proc = _serving(["--db", str(path), "--config", str(config), "--now", "2026-07-01T09:00:00+00:00"], port)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:  # the first tick runs every job whose period is due (catch-up); it records each run
            with memdb.open(path) as db:
                runs = Scheduler(db.episodes, []).runs()
            if (len(runs) == 4 and all(r.status == "ok" for r in runs)) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        _stop(proc)
    assert sorted((r.job, r.period) for r in runs) == [
        ("close_idle_sessions", "2026-07-01T09:00Z"), ("decay", "2026-06-29"), ("maintain", "2026-07-01"), ("reflect", "2026-07-01"),
    ]  # fmt: skip
    with memdb.open(path) as db:
        assert db.settings.teams == {"platform": ["ana", "bo"]}
        assert Scheduler(db.episodes, []).lock() is None  # given up on shutdown


def test_behind_a_proxy_the_public_host_name_is_accepted(tmp_path: Path) -> None:
    """Behind a proxy, the name it serves memdb under (``--public-host``, required there; the
    other names refused: tests/surfaces/web/test_signin_throttle.py)."""
    from starlette.testclient import TestClient

    from memdb.surfaces.serve import ServeConfig, build_app

    with memdb.open(tmp_path / "db") as db:
        config = ServeConfig({ANA_TOKEN: "ana"})
        for behind_proxy, status in ((False, 400), (True, 200)):
            app = build_app(db, config, behind_proxy=behind_proxy, public_hosts=["memdb.example.org"] if behind_proxy else ())
            with TestClient(app, base_url="https://memdb.example.org") as client:
                assert client.get("/signin").status_code == status
        with pytest.raises(ConfigError, match="--behind-proxy: name the host the proxy serves memdb under with --public-host"):
            build_app(db, config, behind_proxy=True)


def test_a_token_before_its_table_is_never_echoed(tmp_path: Path) -> None:
    """Tokens written without the [tokens] header (an easy slip) were echoed as an unknown key,
    and a new one appended under another table was echoed as its key or value."""
    path = write(tmp_path / "memdb.toml", f'"{ANA_TOKEN}" = "ana"\n')
    for load in (load_tokens, load_config):
        with pytest.raises(ConfigError) as info:
            load(path)
        assert "key(s) outside any table, not shown" in str(info.value) and ANA_TOKEN not in str(info.value)
    new = "newtoken-9f8e7d6c5b4a3210"
    for table in ("reviewers", "teams", "schedule"):
        path = write(tmp_path / "memdb.toml", f'[tokens]\n"{ANA_TOKEN}" = "ana"\n[{table}]\n"{new}" = "bo"\n')
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert new not in str(info.value) and ANA_TOKEN not in str(info.value), table
    path = write(tmp_path / "memdb.toml", f'[tokens]\n"{ANA_TOKEN}" = "ana"\n[schedule]\nmaintain = "{ANA_TOKEN}"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert ANA_TOKEN not in str(info.value)


def test_the_dashboard_s_hardening_holds_on_every_response(tmp_path: Path) -> None:
    """A probe's finds: a POST with Origin "null" (a sandboxed or data: page) passed the origin
    check; Starlette's own 404, 405 and host refusals came without the security headers; a day
    out of range was a 500; on 127.0.0.2 /mcp took any Host and the dashboard refused its own."""
    from starlette.testclient import TestClient

    from memdb.surfaces.serve import ServeConfig, build_app

    with memdb.open(tmp_path / "db") as db:
        config = ServeConfig({ANA_TOKEN: "ana"})
        with TestClient(build_app(db, config), base_url="http://127.0.0.1:8766") as client:
            for response in (client.get("/nope"), client.put("/review"), client.get("/", headers={"Host": "evil.example"})):
                assert response.headers["x-frame-options"] == "DENY" and "default-src 'none'" in response.headers["content-security-policy"]
            signin = client.post("/signin", data={"token": ANA_TOKEN}, headers={"Origin": "null"})
            assert signin.status_code == 403 and "null&#39;: not this server" in signin.text
        with TestClient(build_app(db, config, host="127.0.0.2"), base_url="http://127.0.0.2:8766") as client:
            assert client.get("/signin").status_code == 200
            foreign = client.post("/mcp", json={}, headers={"Host": "evil.example", "Authorization": f"Bearer {ANA_TOKEN}"})
            assert foreign.status_code in (400, 421)


def test_a_day_out_of_range_is_a_bad_request() -> None:
    """``/memories?until=9999-12-31`` was a 500 (the day after it overflows), as MCP says 400."""
    from zoneinfo import ZoneInfo

    from memdb.errors import ValidationError
    from memdb.surfaces.web.pages import _day

    with pytest.raises(ValidationError, match="until '9999-12-31': out of range"):
        _day("9999-12-31", "until", ZoneInfo("UTC"), after=True)
    with pytest.raises(ValidationError, match="since '0001-01-01': out of range"):
        _day("0001-01-01", "since", ZoneInfo("Asia/Tokyo"))


def test_a_sign_in_page_is_good_for_a_day_and_a_sign_in_comes_from_this_origin(tmp_path: Path) -> None:
    """A review's finds: the sign-in form's value, signed by the server, carried no time and was
    taken for the life of the process ("valid for a day" was only the cookie's max_age), and a
    sign-in POST without an Origin passed the origin check. A value the server signed can be
    planted (anyone may GET /signin): what stops a login CSRF is that a sign-in comes from this
    origin (Origin, else a Referer of it) and the SameSite cookie. A page's value now expires a
    day after the page was shown, by the database's clock; a newer tab of the browser still works."""
    from clocks import Clock
    from starlette.testclient import TestClient

    from memdb.surfaces.web.app import build_dashboard

    base = "http://127.0.0.1:8766"
    here = {"Origin": base}
    clock = Clock(dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC))

    def shown(client: TestClient) -> str:
        page = client.get("/signin")
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert found is not None
        return found.group(1)

    with memdb.open(tmp_path / "db", clock=clock) as db:
        app = build_dashboard(db, {ANA_TOKEN: "ana"})
        with TestClient(app, base_url=base) as browser:
            old_tab = shown(browser)
            clock.advance(hours=23)
            new_tab = shown(browser)
            clock.advance(hours=2)  # the old tab's page is 25 hours old, the new one's 2
            stale = browser.post("/signin", data={"csrf": old_tab, "token": ANA_TOKEN}, headers=here, follow_redirects=False)
            assert stale.status_code == 403 and "csrf token" in stale.text and "memdb_session" not in browser.cookies
            fresh = browser.post("/signin", data={"csrf": new_tab, "token": ANA_TOKEN}, headers=here, follow_redirects=False)
            assert fresh.status_code == 303 and "memdb_session" in browser.cookies
        with TestClient(app, base_url=base) as client:
            value = shown(client)
            form = {"csrf": value, "token": ANA_TOKEN}
            for headers in ({}, {"Referer": "http://evil.example/signin"}, {"Origin": "http://evil.example", "Referer": f"{base}/signin"}):
                refused = client.post("/signin", data=form, headers=headers, follow_redirects=False)
                assert refused.status_code == 403 and "not this server" in refused.text, headers
            assert "memdb_session" not in client.cookies
            signed_in = client.post("/signin", data=form, headers={"Referer": f"{base}/signin?next=%2F"}, follow_redirects=False)
            assert signed_in.status_code == 303 and "memdb_session" in client.cookies
