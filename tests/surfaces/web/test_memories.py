"""The memories page pages through its matches, keeping the filters, and offers what its notes
point to (earlier versions, archived memories) as options of the page, never as API arguments."""

from __future__ import annotations

import html
from typing import Any

from conftest import ANA_TOKEN, Site, sign_in


def hit_ids(page: Any) -> list[str]:
    links = page.locator("ol.hits li > a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    return [str(h).removeprefix("/episodes/") for h in links]


def follow(page: Any, selector: str) -> None:
    with page.expect_navigation():
        page.click(selector)


def test_recall_pages_through_every_match_keeping_the_filters(wide_page: Any, wide_site: Site) -> None:
    total = wide_site.db.owner("ana").recall(tags=["bulk"], kind="routine", limit=0).total
    assert total > 40  # three pages
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?tags=bulk&kind=routine")
    seen: list[str] = []
    pages = 0
    while True:
        pages += 1
        ids = hit_ids(page)
        first = len(seen) + 1
        assert f"{first}-{len(seen) + len(ids)} of {total}" in page.inner_text("#paging")
        assert f"showing {first}-{len(seen) + len(ids)}." in page.inner_text("#searched")
        assert (page.locator("#prev").count() == 1) == (pages > 1)
        seen += ids
        if page.locator("#next").count() == 0:
            break
        follow(page, "#next")
        assert "tags=bulk" in page.url and "kind=routine" in page.url and f"offset={len(seen)}" in page.url
    assert pages == 3 and len(seen) == len(set(seen)) == total
    follow(page, "#prev")
    assert hit_ids(page) == seen[20:40]


def test_ask_pages_too(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?q=bulk+run")
    first = hit_ids(page)
    follow(page, "#next")
    assert "q=bulk+run" in page.url and "offset=20" in page.url
    second = hit_ids(page)
    assert len(first) == 20 and second and not set(first) & set(second)


def test_a_page_past_the_last_match_says_it_shows_none(wide_page: Any, wide_site: Site) -> None:
    """A review's find: /memories?q=...&offset=100 over 67 matches said "67 matches ...; showing
    67. No matches this far on": the page rewrote the note's count only on a page with hits, and
    kept what the query layer counted (ask's, every match up to the page, before ask took an
    offset). The page says itself that it shows none past the last match, answer or search."""
    total = wide_site.db.owner("ana").recall(tags=["bulk"], limit=0).total
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    for path in ("/memories?q=bulk+run", "/memories?tags=bulk"):
        page.goto(f"{path}&offset=980")
        note = page.inner_text("#searched")
        assert "; showing 0." in note and f"showing {total}" not in note, (path, note)
        assert hit_ids(page) == [] and "No matches this far on" in page.inner_text("main")


def test_a_bad_offset_is_a_bad_request(wide_page: Any) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    for offset in ("-1", "x", "1e3", "100000"):
        response = page.goto(f"/memories?tags=bulk&offset={offset}")
        assert response is not None and response.status == 400 and "offset" in page.inner_text("#error")


def test_earlier_versions_are_an_option_of_the_page(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?text=summary")
    note = page.inner_text("#searched")
    assert "corrects an earlier version" in note and "include_superseded" not in note and 'tick "include earlier versions"' in note
    page.check("input[name=superseded]")
    follow(page, "form.search button")
    assert "superseded=1" in page.url and wide_site.ids["old"] in hit_ids(page) and wide_site.ids["new"] in hit_ids(page)
    assert page.is_checked("input[name=superseded]")
    page.goto("/memories?text=rotated")  # an archived match: the note points to the checkbox
    assert "include_archived" not in page.inner_text("main") and 'tick "include archived"' in html.unescape(page.inner_text("main"))
