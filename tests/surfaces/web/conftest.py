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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


@contextmanager
def serving(db: memdb.Database, config: ServeConfig, scheduler: Scheduler) -> Iterator[str]:
    """``memdb serve``'s app over ``db`` on a free loopback port, in a thread: its URL until the block ends."""
    import uvicorn

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
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _shots(root: Path) -> Path:
    shots = Path(os.environ.get("MEMDB_SCREENSHOTS") or root / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    return shots


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("dashboard")
    clock = Clock(NOW)
    db = memdb.open(root / "db", clock=clock)
    db.configure(teams={"platform": ["ana", "bo"]})
    ids = _plant(db, clock)
    config = ServeConfig({ANA_TOKEN: "ana", BO_TOKEN: "bo"})
    scheduler = Scheduler(db.episodes, jobs_for(db, config.schedule))
    try:
        with serving(db, config, scheduler) as url:
            yield Site(url, db, clock, scheduler, ids, _shots(root))
    finally:
        db.close()


# --- a second site: Berlin time, long words and URLs everywhere, every kind, many matches ----------

LATE = dt.datetime(2026, 7, 1, 21, 30, tzinfo=UTC)  # 23:30 in Berlin: the local day is a day after the UTC one
LONG_WORD = "Deploy-log-" + "x" * 300
LONG_URL = "https://example.com/" + "/".join(f"verylongpathsegment{i}" for i in range(25)) + "?q=" + "a" * 80
WIDE = f"{LONG_WORD} see {LONG_URL}"
WIDE_TAG = "a-tag-long-enough-to-be-wider-than-a-phone-screen"
WIDE_SESSION = "ops-" + "s" * 120
BULK = 45  # episodes tagged "bulk": more than two pages of matches


def _plant_wide(db: memdb.Database, clock: Clock) -> dict[str, str]:
    ids: dict[str, str] = {}
    ana, bo = db.owner("ana"), db.owner("bo")
    with db.transaction():
        for n, kind in enumerate(("debug", "sprint", "routine", "roundtable", "research", "review")):
            ids[kind] = ana.record(
                kind, f"{kind} {WIDE}", outcome="success", tags=[WIDE_TAG], content=WIDE, why=WIDE, lesson=WIDE,
                ts=LATE - dt.timedelta(days=n, hours=1),
            ).id  # fmt: skip
        ana.record("fact", LONG_URL, key="runbook", ts=LATE - dt.timedelta(days=7))
        # 23:30 UTC on 06-29 is 01:30 on 06-30 in Berlin
        ids["late"] = ana.record("sprint", "Late-night deploy across midnight", outcome="success", tags=["late"],
                                 ts=dt.datetime(2026, 6, 29, 23, 30, tzinfo=UTC)).id  # fmt: skip
        for i in range(BULK):
            ana.record("routine", f"Bulk run {i}", outcome="success", tags=["bulk"], ts=LATE - dt.timedelta(days=20, minutes=i))
        archived = ana.record("routine", "Rotated the staging certificates", outcome="success", tags=["certs"],
                              ts=LATE - dt.timedelta(days=3))  # fmt: skip
        ids["archived"] = archived.id
        ids["old"] = ana.record("debug", "Original wrong summary", outcome="failure", ts=LATE - dt.timedelta(days=4)).id
    ana.archive(ids["archived"])
    ids["new"] = ana.supersede(ids["old"], reason="it worked", outcome="success", summary="Corrected summary").id
    for minutes, tool in ((50, "check_webhooks"), (40, "fetch_page")):
        clock.now = LATE - dt.timedelta(minutes=minutes)
        call = ana.record_tool_call(WIDE_SESSION, tool, {"url": LONG_URL, "note": LONG_WORD})
        ana.record_tool_result(call.id, {"body": WIDE})
    clock.now = LATE - dt.timedelta(minutes=10)
    ana.record_exchange("chat-1", f"What about {LONG_URL}?", f"It says {LONG_WORD}")
    clock.now = LATE
    for i in range(5):  # a pattern of the long tag
        ana.record("sprint", f"Sprint {i} {LONG_WORD}", outcome="success", tags=[WIDE_TAG], ts=LATE - dt.timedelta(days=60 - i))
    pending = f"Read the deploy logs before retrying the migration job {LONG_WORD}"
    ids["pending"] = ana.save_lesson(pending, cites=[ids["archived"], ids["debug"]]).id
    approved = {
        "share": "Keep the certificates in the vault",
        "wide": f"Write the rollback step first, as the runbook at {LONG_URL} says",
        "archive": "Archive this lesson at the ceremony",
    }
    for name, text in approved.items():
        ids[name] = ana.save_lesson(text).id
    ids["bo_share"] = bo.save_lesson("Payroll runs need a dry run the day before").id
    db.approve([ids["share"], ids["wide"], ids["archive"], ids["bo_share"]], by="setup")
    long_ago = LATE - dt.timedelta(days=200)
    ids["idle"] = ana.save_lesson(f"Restart the queue worker when it stalls {LONG_WORD}", now=long_ago).id
    db.approve([ids["idle"]], by="setup", now=long_ago)
    db.decay(LATE)
    db.ceremony("platform")
    db.decide({ids["archive"]: "archive"}, by="ana", team="platform")
    db.ceremony("platform")
    return ids


@pytest.fixture(scope="module")
def wide_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A database in Europe/Berlin whose texts are long words and URLs (a layout must wrap them),
    with every kind of the last days, two pages of matches, archived, corrected and scheduled records."""
    root = tmp_path_factory.mktemp("wide")
    clock = Clock(LATE)
    db = memdb.open(root / "db", clock=clock)
    db.configure(timezone="Europe/Berlin", teams={"platform": ["ana", "bo"]})
    ids = _plant_wide(db, clock)
    config = ServeConfig({ANA_TOKEN: "ana", BO_TOKEN: "bo"})
    scheduler = Scheduler(db.episodes, jobs_for(db, config.schedule))
    scheduler.tick()
    try:
        with serving(db, config, scheduler) as url:
            yield Site(url, db, clock, scheduler, ids, _shots(root))
    finally:
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


def _page_factory(browser: Any, url: str) -> Iterator[Callable[..., Any]]:
    contexts: list[Any] = []

    def make(width: int = 1200, height: int = 900) -> Any:
        context = browser.new_context(base_url=url, accept_downloads=True, viewport={"width": width, "height": height})
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for c in contexts:
        c.close()


@pytest.fixture
def new_page(browser: Any, site: Site) -> Iterator[Callable[..., Any]]:
    """A factory of pages (of a viewport's ``width`` and ``height``), each in a fresh browser context
    (its own cookies), closed after the test."""
    yield from _page_factory(browser, site.url)


@pytest.fixture
def wide_page(browser: Any, wide_site: Site) -> Iterator[Callable[..., Any]]:
    """``new_page`` on ``wide_site``."""
    yield from _page_factory(browser, wide_site.url)


def sign_in(page: Any, token: str) -> None:
    page.goto("/signin")
    page.fill("input[name=token]", token)
    page.click("form[action='/signin'] button")
    page.wait_for_selector("#whoami")
