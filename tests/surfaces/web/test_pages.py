"""What the pages say about archived, corrected and counted records: an archived lesson can be
restored, a superseded episode points to its current version instead of offering feedback that
fails, an archived episode's one line is not repeated under its own date, and the overview's
episode count says what it includes."""

from __future__ import annotations

import re
from typing import Any

from conftest import ANA_TOKEN, Site, sign_in


def follow(page: Any, selector: str) -> None:
    with page.expect_navigation():
        page.click(selector)


def test_a_lesson_archived_at_the_ceremony_can_be_restored(wide_page: Any, wide_site: Site) -> None:
    eid = wide_site.ids["archive"]
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/decay")
    item = page.locator(f"#archived-{eid}")
    assert "Archive this lesson at the ceremony" in item.inner_text()
    assert re.search(r"archived at the ceremony \d{4}-\d\d-\d\d \d\d:\d\d CEST by ana", item.inner_text())
    follow(page, f"#archived-{eid} button[value=restore]")
    assert page.inner_text(".flash") == f"restore: {eid}" and page.locator(f"#archived-{eid}").count() == 0
    entry = wide_site.db.entry(eid)
    assert (entry.status, entry.ceremony) == ("active", None)  # back, private, for the next agenda


def test_a_superseded_episode_points_to_its_current_version_and_takes_no_feedback(wide_page: Any, wide_site: Site) -> None:
    old, new = wide_site.ids["old"], wide_site.ids["new"]
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto(f"/episodes/{old}")
    assert page.inner_text("#superseded").startswith("Superseded by ")
    assert page.locator("#superseded a").get_attribute("href") == f"/episodes/{new}"
    assert page.locator("#helped, #misled").count() == 0
    page.goto(f"/episodes/{new}")
    assert page.locator("#superseded").count() == 0 and page.locator("#helped").count() == 1


def test_an_archived_episode_s_one_line_is_not_repeated_under_its_own_date(wide_page: Any, wide_site: Site) -> None:
    eid = wide_site.ids["archived"]
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto(f"/episodes/{eid}")
    assert page.inner_text("#summary") == "Rotated the staging certificates"
    page.goto("/review")
    [cited] = [li for li in page.locator(f"#entry-{wide_site.ids['pending']} .cited li").all_inner_texts() if "Rotated" in li]
    assert cited == "2026-06-28 routine/success: Rotated the staging certificates"
    page.goto("/memories?text=rotated&archived=1")
    [hit] = page.locator("ol.hits li").all_inner_texts()
    assert hit.count("routine/success") == 1 and "Rotated the staging certificates" in hit


def test_the_overview_s_episode_count_says_what_it_includes(wide_page: Any, wide_site: Site) -> None:
    mem = wide_site.db.owner("ana")
    archived = sum(e.status == "archived" for e in mem.episodes(include_archived=True))  # the planted one, and maintain's
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/")
    rows = dict(r.split("\t") for r in page.locator("table.counts tr").all_inner_texts())
    assert rows[f"episodes (incl. {archived} archived, 1 earlier version)"] == str(mem.count())
    hot = int(re.search(r"the latest (\d+) hot episodes", page.inner_text("#relevance")).group(1))
    assert hot + archived + 1 == mem.count()
