"""The search box says what it searched as the database stores it: a value the question or a
filter held (an address, a key, a card) is never echoed by the page's title, the note of filters
not applied or the paging links (a review's find); the input keeps what the user typed."""

from __future__ import annotations

import urllib.parse
from typing import Any

from conftest import ANA_TOKEN, Site, sign_in
from test_memories import follow, hit_ids

EMAIL = "zed.quill@example.org"
KEY = "AKIAIOSFODNN7EXAMPLE"
CARD = "4111111111111111"


def test_the_search_box_echoes_no_value_it_withheld(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/memories?" + urllib.parse.urlencode({"q": f"bulk run for {EMAIL} {CARD}", "text": KEY, "session": EMAIL}))
    assert page.title().startswith("bulk run for <EMAIL_1> <CARD_1> · Memories")
    assert "text <SECRET_1>" in page.inner_text("#ignored") and "session <EMAIL_1>" in page.inner_text("#ignored")
    assert page.input_value("input[name=q]") == f"bulk run for {EMAIL} {CARD}"  # what was typed, to edit
    shown = page.content().replace(page.locator("form.search").evaluate("f => f.outerHTML"), "")
    links = page.locator("#paging a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    for raw in (EMAIL, KEY, CARD, urllib.parse.quote_plus(EMAIL), "quill", "4111"):
        assert raw not in shown and raw not in page.title() and not any(raw in str(link) for link in links)
    first = hit_ids(page)
    follow(page, "#next")  # the sanitized question asks what the raw one did: the next page of the same matches
    assert "offset=20" in page.url and "quill" not in page.url and page.title().startswith("bulk run for <EMAIL_1> <CARD_1> ·")
    second = hit_ids(page)
    assert len(first) == 20 and second and not set(first) & set(second)
    assert "left out as personal data or a secret: <EMAIL_1>, <CARD_1>" in page.inner_text("#searched")
