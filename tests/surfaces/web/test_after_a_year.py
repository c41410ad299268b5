"""What the pages say once memory has aged: sessions whose calls maintain archived, a lesson shared
with one of the owner's teams on another team's agenda, audit logs longer than a page, replayed
forms, a reviewer's decisions, and a question asked with filters set (a team lead's year, probed)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from clocks import Clock
from conftest import ANA_TOKEN, BO_TOKEN, Site, _page_factory, _shots, serving, sign_in

import memdb
from memdb.governance.schedule import Scheduler
from memdb.surfaces.serve import ServeConfig, jobs_for

NOW = dt.datetime(2026, 12, 7, 9, 0, tzinfo=dt.UTC)
ARCHIVED_MANY = 205  # archive records: more than a page of the audit log


def _plant(db: memdb.Database, clock: Clock) -> dict[str, str]:
    ids: dict[str, str] = {}
    ana, bo = db.owner("ana"), db.owner("bo")
    for session, start in (("spring-incident", NOW - dt.timedelta(days=200)), ("today-checks", NOW - dt.timedelta(hours=2))):
        clock.now = start
        for tool in ("check_webhooks", "rotate_secret"):
            clock.advance(minutes=5)
            ana.record_tool_result(ana.record_tool_call(session, tool, {"provider": "twilio"}).id, {"ok": True})
    clock.now = NOW
    for call in list(ana.episodes(session="spring-incident")):
        ana.archive(call.id)  # as maintain does after a month
    with db.transaction():
        ids["cold"] = ana.record("routine", "Rotated the staging certificates", outcome="success", ts=NOW - dt.timedelta(days=90)).id
        ids["deploy"] = ana.record("debug", "Deploy failed", outcome="failure", tags=["deploy"], ts=NOW - dt.timedelta(days=40)).id
        ana.record("review", "Deploy review went fine", outcome="success", tags=["deploy"], ts=NOW - dt.timedelta(days=1))
        many = [ana.record("routine", f"Nightly backup {i}", outcome="success", ts=NOW - dt.timedelta(days=100, minutes=i)).id
                for i in range(ARCHIVED_MANY)]  # fmt: skip
    ana.archive(ids["cold"])
    ids["idle"] = ana.save_lesson("Restart the queue worker when it stalls").id
    ids["ana_share"] = ana.save_lesson("Keep the staging certificates in the vault").id
    ids["bo_data"] = bo.save_lesson("Payroll runs need a dry run the day before").id
    ids["bo_pending"] = bo.save_lesson("Payroll exports need a second reviewer").id
    db.approve([ids["idle"], ids["ana_share"]], by="ana")
    db.approve([ids["bo_data"]], by="bo")
    db.quarantine(ids["idle"], by="ana", reason="nobody used it this year")  # a decision, then a page of archive records
    for eid in many:
        ana.archive(eid)
    db.decide({ids["bo_data"]: "share"}, by="bo", team="data")
    db.ceremony("platform")  # bo's lesson is read by data, not by platform: on platform's agenda
    return ids


@pytest.fixture(scope="module")
def year_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("year")
    clock = Clock(NOW)
    db = memdb.open(root / "db", clock=clock)
    db.configure(timezone="Europe/Berlin", teams={"platform": ["ana", "bo"], "data": ["bo", "cy"]})
    ids = _plant(db, clock)
    config = ServeConfig({ANA_TOKEN: "ana", BO_TOKEN: "bo"}, reviewers={"ana": frozenset({"bo"})})
    scheduler = Scheduler(db.episodes, jobs_for(db, config.schedule))
    try:
        with serving(db, config, scheduler) as url:
            yield Site(url, db, clock, scheduler, ids, _shots(root))
    finally:
        db.close()


@pytest.fixture
def year_page(browser: Any, year_site: Site) -> Iterator[Callable[..., Any]]:
    yield from _page_factory(browser, year_site.url)


def _post(page: Any, site: Site, path: str, form: dict[str, str]) -> Any:
    """``form`` posted as the page's own form would be (its session's CSRF token, this Origin), no redirect followed."""
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    return page.request.post(path, form={"csrf": csrf, **form}, headers={"Origin": site.url}, max_redirects=0)


def test_timelines_list_sessions_whose_calls_were_archived(year_page: Any, year_site: Site) -> None:
    page = year_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/timelines")
    listed = page.locator("#sessions li").all_inner_texts()
    assert [s.split(" ")[0] for s in listed] == ["today-checks", "spring-incident"]  # the latest first
    assert "2 calls, 2 archived, last 2026-05-21" in listed[1]
    page.click("#sessions a >> text=spring-incident")
    assert page.locator("#steps tr").count() == 3  # its calls, read from cold storage


def test_a_lesson_shared_with_another_team_is_the_owner_s_to_decide_on_this_agenda(year_page: Any, year_site: Site) -> None:
    eid = year_site.ids["bo_data"]
    page = year_page()
    sign_in(page, BO_TOKEN)
    page.goto("/ceremony?team=platform")
    item = page.locator(f"#item-{eid}")
    assert "shared with data, not platform" in item.inner_text()
    assert item.locator("input[type=radio]").count() == 3  # not shown as decided
    item.locator("input[value=share]").check()
    with page.expect_navigation():
        page.click("#decide")
    assert year_site.db.entry(eid).shared_with == ("data", "platform")
    assert page.locator(f"#item-{eid} .decided").inner_text() == "shared with platform"


def test_a_replayed_share_is_refused_and_audited_once(year_page: Any, year_site: Site) -> None:
    eid = year_site.ids["ana_share"]
    page = year_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/ceremony?team=platform")
    form = {"team": "platform", f"d:{eid}": "share"}
    first, again = _post(page, year_site, "/ceremony/decide", form), _post(page, year_site, "/ceremony/decide", form)
    assert (first.status, again.status) == (303, 409)
    assert "shared with platform already (nothing was changed)" in again.text()
    shares = [r for r in year_site.db.owner("ana").audit() if r.get("entry") == eid and r["action"] == "share"]
    assert len(shares) == 1


def test_restoring_twice_says_it_is_restored_not_missing(year_page: Any, year_site: Site) -> None:
    eid = year_site.ids["cold"]
    page = year_page()
    sign_in(page, ANA_TOKEN)
    page.goto(f"/episodes/{eid}")
    assert _post(page, year_site, f"/episodes/{eid}/restore", {}).status == 303
    again = _post(page, year_site, f"/episodes/{eid}/restore", {})  # the same form, a second click
    assert again.status == 303 and again.headers["location"] == f"/episodes/{eid}"
    page.goto(f"/episodes/{eid}")
    assert f"{eid} is not archived (restored already?): nothing to restore" in page.locator(".flash").all_inner_texts()
    assert _post(page, year_site, f"/episodes/{year_site.ids['deploy']}x/restore", {}).status == 404  # no such id, as before


def test_the_audit_log_pages_back_and_filters_by_action(year_page: Any, year_site: Site) -> None:
    page = year_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/audit")
    assert page.locator("#audit tr").count() == 201  # a page of records, a header row
    assert "quarantine" not in page.locator("#audit").inner_text()  # a page of archive records since
    with page.expect_navigation():
        page.click("#older")
    assert page.title().startswith("Audit (201-") and "quarantine" in page.locator("#audit").inner_text()
    page.goto("/audit")
    page.select_option("select[name=action]", "quarantine")
    with page.expect_navigation():
        page.click("form.inline button")
    [row] = page.locator("#audit tr").all_inner_texts()[1:]
    assert "nobody used it this year" in row  # the reason the owner gave: the docs say so
    assert page.goto("/audit?action=nonsense").status == 400


def test_your_recent_decisions_are_the_signed_in_reviewer_s(year_page: Any, year_site: Site) -> None:
    eid = year_site.ids["bo_pending"]
    ana, bo = year_page(), year_page()
    sign_in(ana, ANA_TOKEN)
    sign_in(bo, BO_TOKEN)
    year_site.clock.advance(minutes=1)  # after the setup's approvals by ana: the latest decision
    ana.goto("/review")
    ana.check(f"#entry-{eid} input[type=checkbox]")
    with ana.expect_navigation():
        ana.click("#approve")
    first = ana.locator("#decided li").first.inner_text()
    assert eid in first and "approved" in first and "of bo" in first
    bo.goto("/review")
    assert eid not in bo.locator("#decided").inner_text()  # bo's list: what bo decided


def test_filters_given_with_a_question_are_said_to_be_not_applied(year_page: Any) -> None:
    page = year_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?q=deploy&kind=review&outcome=success&since=2026-12-01")
    assert page.inner_text("#ignored").startswith("Not applied: since 2026-12-01, kind review, outcome success.")
    for link in page.locator("#paging a").all():
        assert "kind=" not in (link.get_attribute("href") or "")


def test_a_reversed_window_is_refused_in_the_days_typed(year_page: Any) -> None:
    page = year_page()
    sign_in(page, ANA_TOKEN)
    assert page.goto("/memories?since=2026-03-01&until=2026-02-01").status == 400
    assert page.inner_text("[role=alert]") == "until '2026-02-01': before since '2026-03-01' (until is the last local day searched)"
    page.goto("/memories?tags=deploy&offset=40")
    assert re.match(r"Memories \(none from 41; \d+ in all\)", page.title())
