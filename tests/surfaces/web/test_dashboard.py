"""The dashboard in a real browser (headless Chromium): sign-in, every page, the owner-only actions,
and the refusals (no session, another owner's id, no CSRF token, a forged ``by``, hostile text).

One server and one browser for the module; each test signs in in a fresh browser context.
Screenshots of the pages go to a temporary directory (or ``$MEMDB_SCREENSHOTS``; docs/dashboard.md
shows a few).
"""

from __future__ import annotations

import html
import json
import re
import time
import urllib.request
from typing import Any

import pytest
from conftest import ANA_TOKEN, BO_TOKEN, HOSTILE, Site, sign_in

from memdb.errors import DuplicateError


def shot(page: Any, site: Site, name: str) -> None:
    page.screenshot(path=str(site.shots / f"{name}.png"), full_page=True)


def csrf_of(page: Any) -> str:
    return str(page.locator("input[name=csrf]").first.get_attribute("value"))


def follow(page: Any, selector: str) -> None:
    """Click a link or a form's button and wait for the page it leads to: a click only starts the
    navigation, and a read that does not wait (``is_visible``, ``count``, the database) could read
    the page before it (a cold CI run did, on the ask page)."""
    with page.expect_navigation():
        page.click(selector)


# --- sign-in and sessions ----------------------------------------------------------------------


def test_without_a_session_pages_go_to_sign_in_and_changes_are_refused(new_page: Any, site: Site) -> None:
    page = new_page()
    page.goto("/memories?q=deploy")
    assert page.url.startswith(f"{site.url}/signin?next=")
    shot(page, site, "signin")
    response = page.request.post("/review", form={"id": site.ids["lesson_ok"], "action": "approve"}, max_redirects=0)
    assert response.status == 403 and "no session" in response.text()
    assert site.db.entry(site.ids["lesson_ok"]).state == "pending"


def test_a_wrong_token_is_refused_without_echoing_it(new_page: Any) -> None:
    page = new_page()
    page.goto("/signin")
    page.fill("input[name=token]", "not-a-token-of-anyone-123")
    follow(page, "form[action='/signin'] button")
    assert page.inner_text("#signin-error") == "unknown token"
    assert "not-a-token-of-anyone" not in page.content()


def test_sign_in_sets_a_strict_httponly_session_cookie_and_returns_to_the_page_asked_for(new_page: Any, site: Site) -> None:
    page = new_page()
    page.goto("/decay")
    page.fill("input[name=token]", ANA_TOKEN)
    follow(page, "form[action='/signin'] button")
    page.wait_for_selector("#whoami")
    assert page.url == f"{site.url}/decay" and page.inner_text("#whoami") == "ana"
    [cookie] = [c for c in page.context.cookies() if c["name"] == "memdb_session"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert ANA_TOKEN not in cookie["value"]
    follow(page, "header .signout button")
    page.goto("/")
    assert "/signin" in page.url


def test_signing_in_from_any_open_sign_in_tab_works(new_page: Any, site: Site) -> None:
    """Every sign-in tab of a browser shares the cookie its form's CSRF value is bound to (a new
    tab no longer replaces the one an older tab holds), each page's value good for a day; missing
    values, stale ones and values this server did not sign are still refused. (A value it signed
    can be planted, as anyone may fetch one: the origin check refuses a sign-in from elsewhere,
    test_a_sign_in_page_is_good_for_a_day_and_a_sign_in_comes_from_this_origin.)"""
    first = new_page()
    first.goto("/signin")
    second = first.context.new_page()
    second.goto("/signin")
    for tab in (first, second):  # the older tab first, then the other: both sign in
        tab.fill("input[name=token]", ANA_TOKEN)
        follow(tab, "form[action='/signin'] button")
        assert tab.inner_text("#whoami") == "ana"
    fresh = new_page()
    fresh.goto("/signin")
    [cookie] = [c for c in fresh.context.cookies() if c["name"] == "memdb_signin"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["expires"] - time.time() > 23 * 3600
    form = {"token": ANA_TOKEN, "next": "/"}
    fresh.context.add_cookies([{"name": "memdb_signin", "value": "chosen-by-someone-else", "url": site.url}])
    for given in ({}, {"csrf": csrf_of(fresh)}, {"csrf": "chosen-by-someone-else"}):  # missing, stale, unsigned in both
        response = fresh.request.post("/signin", form=form | given, headers={"Origin": site.url}, max_redirects=0)
        assert response.status == 403 and "csrf token: missing or wrong" in response.text()
    assert not [c for c in fresh.context.cookies() if c["name"] == "memdb_session"]


# --- memories ----------------------------------------------------------------------------------


def search(page: Any, question: str) -> None:
    """Ask on the memories page and wait for the answer's page."""
    page.fill("input[name=q]", question)
    follow(page, "form.search button")


def test_ask_finds_the_owner_s_memories_and_an_empty_answer_says_what_was_searched(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories")
    search(page, "What happened with the Project X deploy?")
    hits = page.locator("ol.hits li")
    assert hits.count() == 2 and "Deploy of Project X" in hits.first.inner_text()
    assert "project-x" in page.inner_text("#searched")
    shot(page, site, "memories")
    search(page, "What happened with the Project X deploy zebracorn?")  # a partial answer says so, and why
    assert "Partial: no memory mentions 'zebracorn'" in page.inner_text("#searched")
    search(page, "What did we decide about zebracorn last week?")
    assert page.locator("ol.hits li").count() == 0
    assert "Nothing" in page.inner_text("#empty") and "zebracorn" in page.inner_text("#empty")
    assert "last week" in page.inner_text("#searched") or "window" in page.inner_text("#searched")
    shot(page, site, "memories-empty")


def test_recall_filters_and_the_owner_clamp(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?kind=debug&outcome=failure")
    lines = page.locator("ol.hits li").all_inner_texts()
    assert len(lines) == 1 and "migration held a lock" in lines[0]  # bo's failed debug episode is not ana's
    page.goto("/memories?text=payroll")
    assert page.locator("ol.hits li").count() == 0 and "payroll" in page.inner_text("#empty")


def test_an_episode_shows_its_record_and_explain_and_takes_feedback(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?q=deploy")
    follow(page, f"a[href='/episodes/{site.ids['deploy']}']")
    assert page.inner_text("#summary") == "Deploy of Project X failed: migration held a lock"
    assert page.inner_text("#f-lesson") == "run migrations before the deploy window"
    assert page.inner_text("#explain").startswith("relevance ")
    shot(page, site, "episode")
    follow(page, "#helped")
    assert page.inner_text(".flash") == "feedback +1 recorded"
    assert site.db.owner("ana").peek(site.ids["deploy"]).feedback == 1.0


def test_episode_text_with_html_and_script_renders_inert(new_page: Any, site: Site) -> None:
    page = new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, ANA_TOKEN)
    page.goto(f"/episodes/{site.ids['hostile']}")
    assert HOSTILE in page.inner_text("#summary") and HOSTILE in page.inner_text("#f-lesson")  # shown as text
    assert page.evaluate("window.__pwned") is None and dialogs == []
    assert page.locator("main script, main img").count() == 0
    page.goto("/memories?q=pasted+page")
    assert page.evaluate("window.__pwned") is None and page.locator("main script, main img").count() == 0
    shot(page, site, "episode-hostile")


def test_another_owner_s_episode_is_a_404_indistinguishable_from_a_missing_one(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    bo_id = site.ids["bo_episode"]
    missing = bo_id[:-6] + ("000000" if not bo_id.endswith("000000") else "111111")
    bodies = []
    for eid in (bo_id, missing):
        response = page.goto(f"/episodes/{eid}")
        assert response is not None and response.status == 404
        bodies.append(page.inner_text("#error").replace(eid, "ID"))
        assert "payroll" not in page.content().lower()
    assert bodies[0] == bodies[1] == "episode 'ID': no such episode"
    for action in ("restore", "feedback"):
        response = page.request.post(f"/episodes/{bo_id}/{action}", form={"csrf": csrf_of(page), "value": "1"})
        assert response.status == 404
    assert site.db.owner("bo").peek(bo_id).feedback is None


def test_an_archived_episode_can_be_restored(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?text=certificates&archived=1")
    follow(page, f"a[href='/episodes/{site.ids['archived']}']")
    assert page.is_visible("#archived")
    shot(page, site, "episode-archived")
    follow(page, "#restore")
    assert page.inner_text(".flash").startswith("restored ")
    assert not page.is_visible("#archived") and site.db.owner("ana").peek(site.ids["archived"]).status == "active"


# --- review ------------------------------------------------------------------------------------


def test_approve_and_reject_with_a_reason_recorded_as_the_signed_in_owner(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/review")
    assert site.ids["bo_pending"] not in page.content()  # bo's queue is bo's
    assert "Deploy of Project X failed" in page.inner_text(f"#entry-{site.ids['lesson_ok']} .cited")  # the cited episode beside it
    shot(page, site, "review")
    page.check(f"input[value='{site.ids['lesson_ok']}']")
    follow(page, "#approve")
    assert page.inner_text(".flash") == "approved 1 lesson"
    page.check(f"input[value='{site.ids['lesson_bad']}']")
    page.fill("input[name=reason]", "Fridays are for fixing, not deploying")
    follow(page, "#reject")
    assert page.inner_text(".flash") == "rejected 1 lesson"
    ok, bad = site.db.entry(site.ids["lesson_ok"]), site.db.entry(site.ids["lesson_bad"])
    assert (ok.state, ok.decided_by) == ("approved", "ana")
    assert (bad.state, bad.decided_by, bad.reason, bad.text) == ("rejected", "ana", "Fridays are for fixing, not deploying", "")
    # tombstoned: the rejected content cannot come back through the queue, from anyone
    with pytest.raises(DuplicateError):
        site.db.owner("bo").save_lesson("Always deploy on Fridays at five")
    # nor by posting the old form again
    response = page.request.post("/review", form={"csrf": csrf_of(page), "id": site.ids["lesson_bad"], "action": "approve"})
    assert response.status == 400 and "is rejected, not pending" in response.text()
    # another owner's entry id reads as a missing one
    response = page.request.post("/review", form={"csrf": csrf_of(page), "id": site.ids["bo_pending"], "action": "reject"})
    assert response.status == 404 and "no such knowledge entry" in response.text()
    assert site.db.entry(site.ids["bo_pending"]).state == "pending"
    actions = [(r["action"], r["by"]) for r in site.db.audit("ana") if r.get("entry") in (ok.id, bad.id)]
    assert ("approve", "ana") in actions and ("reject", "ana") in actions


# --- the refusals every change passes ----------------------------------------------------------


def test_a_change_without_the_csrf_token_is_refused(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, BO_TOKEN)
    entry = site.ids["bo_pending"]
    for form in ({"id": entry, "action": "approve"}, {"id": entry, "action": "approve", "csrf": "forged"}):
        response = page.request.post("/review", form=form)
        assert response.status == 403 and "csrf token: missing or wrong" in response.text()
    assert site.db.entry(site.ids["bo_pending"]).state == "pending"


def test_a_forged_by_is_refused_and_nothing_changes(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, BO_TOKEN)
    page.goto("/review")
    for name in ("by", "owner"):
        form = {"csrf": csrf_of(page), "id": site.ids["bo_pending"], "action": "approve", name: "ana"}
        response = page.request.post("/review", form=form)
        assert response.status == 400 and f"{name}: not a form field" in response.text()
    assert site.db.entry(site.ids["bo_pending"]).state == "pending"


def test_a_post_from_another_origin_is_refused(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, BO_TOKEN)
    form = {"csrf": csrf_of(page), "id": site.ids["bo_pending"], "action": "approve"}
    response = page.request.post("/review", form=form, headers={"Origin": "http://evil.example"})
    assert response.status == 403 and site.db.entry(site.ids["bo_pending"]).state == "pending"


# --- ceremony ----------------------------------------------------------------------------------


def test_a_ceremony_with_two_owners_each_deciding_only_their_own(new_page: Any, site: Site) -> None:
    ids = site.ids
    ana = new_page()
    sign_in(ana, ANA_TOKEN)
    ana.goto("/ceremony")
    follow(ana, "#start")
    assert ana.inner_text(".flash").startswith("agenda ")
    assert ana.is_visible(f"#owner-ana #item-{ids['ana_share']}") and ana.is_visible(f"#owner-bo #item-{ids['bo_share']}")
    assert ana.locator(f"input[name='d:{ids['bo_share']}']").count() == 0  # bo's lesson is bo's to decide
    shot(ana, site, "ceremony")
    ana.check(f"input[name='d:{ids['ana_share']}'][value=share]")
    follow(ana, "#decide")
    assert ana.inner_text(".flash") == "decided: 1 shared"
    assert ana.inner_text(f"#item-{ids['ana_share']} .decided") == "shared with platform"
    # a decision about bo's entry, forged into ana's form, is refused whole, in the words of a
    # missing entry: nothing says whose it is (the probe saw "owned by 'cy'", of another team)
    bodies = []
    for other in (ids["bo_share"], ids["bo_share"][:-6] + "ffffff"):
        form = {"csrf": csrf_of(ana), "team": "platform", f"d:{other}": "share", f"d:{ids['ana_keep']}": "private"}
        response = ana.request.post("/ceremony/decide", form=form)
        body = html.unescape(re.sub(r"<[^>]+>", "", response.text()))
        assert response.status == 404 and "'bo'" not in body
        bodies.append(body.replace(other, "ID"))
    assert bodies[0] == bodies[1] and "entry 'ID': no such knowledge entry" in bodies[0]
    assert site.db.entry(ids["bo_share"]).ceremony is None and site.db.entry(ids["ana_keep"]).ceremony is None
    bo = new_page()
    sign_in(bo, BO_TOKEN)
    bo.goto("/ceremony")
    assert bo.inner_text(f"#item-{ids['ana_share']} .decided") == "shared with platform"
    bo.check(f"input[name='d:{ids['bo_share']}'][value=private]")
    follow(bo, "#decide")
    assert bo.inner_text(".flash") == "decided: 1 kept"
    shared, kept = site.db.entry(ids["ana_share"]), site.db.entry(ids["bo_share"])
    assert (shared.visibility, shared.shared_with) == ("shared", ("platform",)) and kept.ceremony == "kept"
    assert any(r["action"] == "share" and r["by"] == "ana" for r in site.db.audit("ana"))
    assert any(r["action"] == "keep_private" and r["by"] == "bo" for r in site.db.audit("bo"))
    # the next agenda carries over what nobody ruled on, marked
    follow(bo, "#start")
    assert bo.inner_text(f"#item-{ids['ana_keep']} .carried") == "carried over"
    assert bo.locator(f"#item-{ids['ana_share']}").count() == 0  # decided: off the agenda
    shot(bo, site, "ceremony-carried")


# --- decay -------------------------------------------------------------------------------------


def test_decay_flags_keep_quarantine_and_restore(new_page: Any, site: Site) -> None:
    ids = site.ids
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/decay")
    flags = page.locator("article[id^=flag-]")
    assert 1 <= flags.count() <= 5
    assert page.is_visible(f"#flag-{ids['idle_1']}") and page.is_visible(f"#flag-{ids['idle_2']}")
    shot(page, site, "decay")
    page.fill(f"#flag-{ids['idle_1']} input[name=reason]", "the queue worker was replaced")
    follow(page, f"#flag-{ids['idle_1']} button[value=quarantine]")
    assert page.is_visible(f"#quarantined-{ids['idle_1']}")
    follow(page, f"#flag-{ids['idle_2']} button[value=keep]")
    assert page.locator("#no-flags").count() == 1
    assert site.db.entry(ids["idle_1"]).status == "quarantined" and site.db.entry(ids["idle_2"]).kept_at is not None
    follow(page, f"#quarantined-{ids['idle_1']} button[value=restore]")
    assert site.db.entry(ids["idle_1"]).status == "active"
    actions = [(r["action"], r["by"]) for r in site.db.audit("ana") if r.get("entry") in (ids["idle_1"], ids["idle_2"])]
    assert {("quarantine", "ana"), ("decay_keep", "ana"), ("restore_entry", "ana")} <= set(actions)
    # bo cannot act on ana's lessons: the id reads as a missing one
    bo = new_page()
    sign_in(bo, BO_TOKEN)
    bo.goto("/decay")
    response = bo.request.post("/decay", form={"csrf": csrf_of(bo), "entry": ids["idle_2"], "action": "quarantine", "reason": "x"})
    assert response.status == 404 and site.db.entry(ids["idle_2"]).status == "active"


# --- timelines, audit, overview, schedule ------------------------------------------------------


def test_a_session_timeline_and_its_export_download(new_page: Any, site: Site, tmp_path: Any) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/timelines")
    follow(page, "a[href='/timelines?session=ops-0701']")
    rows = page.locator("#steps tr").all_inner_texts()[1:]
    assert [r.split("\t")[3] for r in rows] == ["check_webhooks", "rotate_secret"]
    shot(page, site, "timeline")
    with page.expect_download() as info:
        page.click("#export")
    download = info.value
    assert download.suggested_filename == "timeline-ops-0701.json"
    target = tmp_path / "export.json"
    download.save_as(str(target))
    record = json.loads(target.read_text())
    assert record["executable"] is False and [s["tool"] for s in record["steps"]] == ["check_webhooks", "rotate_secret"]
    page.goto("/timelines?session=nobody-here")
    assert "No tool calls captured" in page.inner_text("#empty")
    # no export of a session without calls (one that does not exist, or another owner's), and no audit record of one
    exports = sum(r["action"] == "export_timeline" for r in site.db.audit("ana"))
    response = page.request.get("/timelines/export?session=nobody-here")
    assert response.status == 404 and "session 'nobody-here': no tool calls captured" in html.unescape(response.text())
    assert sum(r["action"] == "export_timeline" for r in site.db.audit("ana")) == exports


def test_audit_and_overview_pages(new_page: Any, site: Site) -> None:
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/audit")
    table = page.inner_text("#audit")
    assert "archive" in table and "bo" not in re.findall(r"\bby\b\s*(\w+)", table)
    shot(page, site, "audit")
    page.goto("/")
    assert page.locator("#per-day svg rect").count() > 0 and page.locator("#relevance svg rect").count() > 0
    assert "debug" in page.inner_text("#per-day")
    shot(page, site, "overview")


def test_the_pattern_library_shows_the_owner_s_patterns(new_page: Any, site: Site) -> None:
    """Patterns, the latest found first: ana's sprint pattern, found by two batches, with the
    records of the latest one; bo's is bo's alone; a kind the database has not is refused."""
    page = new_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/patterns")
    (article,) = page.locator("article.entry").all()
    text = article.inner_text()
    assert "In 5 of the last 5 sprint records tagged exports: 4 success, 1 failure." in text
    assert "found in 2 batches" in text and "(4 success, 1 failure)" in text
    shot(page, site, "patterns")
    with page.expect_navigation():
        article.locator("a").first.click()
    assert "Sprint 5 on the billing exports" in page.inner_text("main")
    page.goto("/patterns?kind=debug")
    assert page.locator("article.entry").count() == 0 and "of kind debug" in page.inner_text("#no-patterns")
    assert page.goto("/patterns?kind=nonsense").status == 400
    refused = page.goto("/patterns?kind=ana%40example.com")  # a refusal names the value sanitized
    assert refused.status == 400 and "kind '<EMAIL_1>'" in page.inner_text("main") and "ana@example.com" not in page.content()
    bo = new_page()
    sign_in(bo, BO_TOKEN)
    bo.goto("/patterns")
    assert bo.locator("article.entry").count() == 1 and "found 2026-07-01" in bo.inner_text("article.entry")
    assert "batches" not in bo.inner_text("article.entry")  # bo's was found once


def test_scheduled_runs_are_shown_with_their_reports(new_page: Any, site: Site) -> None:
    runs = site.scheduler.tick()
    assert sorted(r.job for r in runs) == ["close_idle_sessions", "decay", "maintain", "reflect"]
    page = new_page()
    sign_in(page, BO_TOKEN)
    page.goto("/schedule")
    table = page.inner_text("#runs")
    for job in ("maintain", "reflect", "decay", "close_idle_sessions"):
        assert job in table
    assert "maintain at 2026-07-01 09:00 UTC" in table and "held by this server" in page.content()
    shot(page, site, "schedule")


def test_no_page_fetches_anything_from_outside_the_server(new_page: Any, site: Site) -> None:
    page = new_page()
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(site.url) else None)
    sign_in(page, ANA_TOKEN)
    for path in ("/", "/memories?q=deploy", "/review", "/ceremony", "/decay", "/timelines", "/audit", "/schedule"):
        page.goto(path)
    assert outside == []
    with urllib.request.urlopen(f"{site.url}/signin") as r:
        assert "script-src" not in r.headers["content-security-policy"]
        assert "default-src 'none'" in r.headers["content-security-policy"]
