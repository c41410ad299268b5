"""A real ``memdb serve`` app on a free loopback port over a small two-owner database, and Debian's
headless Chromium driven by Playwright (never a downloaded browser). Without Chromium or
Playwright the browser tests skip, saying why, except under CI (``CI=true``), where they fail."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.governance.schedule import Scheduler
from memdb.surfaces.serve import ServeConfig, build_app, jobs_for

UTC = dt.UTC
NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=UTC)  # a Wednesday
ANA_TOKEN = "ana-dashboard-token-5c1f0e9a"
BO_TOKEN = "bo-dashboard-token-93d7b2a4e"
HOSTILE = '<script>window.__pwned = 1; alert("x")</script><img src=x onerror="window.__pwned = 2">'


def _browser_missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run; .ci/run installs chromium)")
    pytest.skip(reason)


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    _browser_missing("no chromium on PATH (Debian: apt-get install chromium)")
    raise AssertionError("unreachable")


@dataclass
class Site:
    """The running server and what the tests planted in it."""

    url: str
    db: memdb.Database
    clock: Clock
    scheduler: Scheduler
    ids: dict[str, str] = field(default_factory=dict)
    shots: Path = Path()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _plant(db: memdb.Database, clock: Clock) -> dict[str, str]:
    ids: dict[str, str] = {}
    ana, bo = db.owner("ana"), db.owner("bo")
    with db.transaction():
        deploy = ana.record(
            "debug", "Deploy of Project X failed: migration held a lock", outcome="failure", tags=["Project X", "deploy"],
            lesson="run migrations before the deploy window", ts=NOW - dt.timedelta(days=2),
        )  # fmt: skip
        ids["deploy"] = deploy.id
        fixed = ana.record(
            "debug", "Deploy of Project X worked after moving the migration", outcome="success", tags=["Project X", "deploy"],
            ts=NOW - dt.timedelta(days=1),
        )  # fmt: skip
        ids["fixed"] = fixed.id
        ids["hostile"] = ana.record(
            "research", f"Pasted page {HOSTILE}", outcome="partial", content=f"raw: {HOSTILE}", lesson=HOSTILE,
            ts=NOW - dt.timedelta(hours=5),
        ).id  # fmt: skip
        old = ana.record("routine", "Rotated the staging certificates", outcome="success", tags=["certs"], ts=NOW - dt.timedelta(days=3))
        ids["archived"] = old.id
        ids["bo_episode"] = bo.record("debug", "Bo's private payroll incident", outcome="failure", ts=NOW - dt.timedelta(days=1)).id
    ana.archive(ids["archived"])
    # pattern batches, long before the charts' days: ana's sprint pattern found twice, bo's once
    for owner, n in ((ana, 10), (bo, 5)):
        for i in range(n):
            owner.record("sprint", f"Sprint {i} on the billing exports", outcome=("success", "failure")[i % 5 == 4],
                         tags=["exports"], ts=NOW - dt.timedelta(days=60 - i))  # fmt: skip
    for minutes, tool, result in ((30, "check_webhooks", {"failed": 12}), (20, "rotate_secret", {"rotated": True})):
        clock.now = NOW - dt.timedelta(minutes=minutes)
        ana.record_tool_result(ana.record_tool_call("ops-0701", tool, {"provider": "twilio"}).id, result)
    clock.now = NOW
    # review queue: two of ana's, one of bo's (ana must never see it)
    ids["lesson_ok"] = ana.save_lesson("Run migrations before the deploy window opens", cites=[deploy.id]).id
    ids["lesson_bad"] = ana.save_lesson("Always deploy on Fridays at five", cites=[fixed.id]).id
    ids["bo_pending"] = bo.save_lesson("Payroll exports need a second reviewer").id
    # approved and private: the ceremony's agenda, two owners
    ids["ana_share"] = ana.save_lesson("Keep the staging certificates in the vault").id
    ids["ana_keep"] = ana.save_lesson("Write the rollback step first").id
    ids["bo_share"] = bo.save_lesson("Payroll runs need a dry run the day before").id
    db.approve([ids["ana_share"], ids["ana_keep"], ids["bo_share"]], by="setup")
    # long idle approved lessons: the weekly decay pass flags them
    long_ago = NOW - dt.timedelta(days=200)
    ids["idle_1"] = ana.save_lesson("Restart the queue worker when it stalls", now=long_ago).id
    ids["idle_2"] = ana.save_lesson("Page the on-call engineer for disk alerts", now=long_ago).id
    db.approve([ids["idle_1"], ids["idle_2"]], by="setup", now=long_ago)
    db.decay(NOW)
    return ids


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    import uvicorn

    root = tmp_path_factory.mktemp("dashboard")
    clock = Clock(NOW)
    db = memdb.open(root / "db", clock=clock)
    db.configure(teams={"platform": ["ana", "bo"]})
    ids = _plant(db, clock)
    config = ServeConfig({ANA_TOKEN: "ana", BO_TOKEN: "bo"})
    scheduler = Scheduler(db.episodes, jobs_for(db, config.schedule))
    port = _free_port()
    app = build_app(db, config, scheduler=scheduler)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the dashboard server did not start")
        time.sleep(0.05)
    shots = Path(os.environ.get("MEMDB_SCREENSHOTS") or root / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    try:
        yield Site(f"http://127.0.0.1:{port}", db, clock, scheduler, ids, shots)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        db.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _browser_missing("playwright is not installed (pip install playwright; its browsers are not needed)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def new_page(browser: Any, site: Site) -> Iterator[Any]:
    """A factory of pages, each in a fresh browser context (its own cookies), closed after the test."""
    contexts: list[Any] = []

    def make() -> Any:
        context = browser.new_context(base_url=site.url, accept_downloads=True, viewport={"width": 1200, "height": 900})
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for c in contexts:
        c.close()


def sign_in(page: Any, token: str) -> None:
    page.goto("/signin")
    page.fill("input[name=token]", token)
    page.click("form[action='/signin'] button")
    page.wait_for_selector("#whoami")
