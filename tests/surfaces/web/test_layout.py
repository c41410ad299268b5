"""The dashboard's layout in a real browser: nothing scrolls sideways at a phone's 320 px or a
desktop's 1280 px however long a word, URL, id or session name is (WCAG 1.4.10, reflow); wide
tables scroll inside their own box. Text colours have a contrast of at least 4.5:1 (WCAG 1.4.3)."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
from conftest import ANA_TOKEN, WIDE_SESSION, WIDE_TAG, Site, sign_in


def pages_of(site: Site) -> list[str]:
    ids = site.ids
    return [
        "/", "/memories", f"/memories?tags={urllib.parse.quote(WIDE_TAG)}", "/memories?q=deploy+log", "/memories?text=nothingmatches",
        f"/episodes/{ids['debug']}", f"/episodes/{ids['archived']}", f"/episodes/{ids['old']}", "/review", "/ceremony", "/decay",
        "/patterns", "/timelines", f"/timelines?session={WIDE_SESSION}", "/audit", "/schedule", "/episodes/nosuchid",
    ]  # fmt: skip


# where the page is wider than the viewport: the elements sticking out, outside any box that scrolls on its own
_STICKING_OUT = """() => {
  const width = document.documentElement.clientWidth;
  const inScroller = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
    if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return true; } return false; };
  return [...document.querySelectorAll('body *')].filter(el => el.getBoundingClientRect().right > width + 0.5 && !inScroller(el))
    .slice(0, 5).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + el.className : '')
      + ' ' + Math.round(el.getBoundingClientRect().right));
}"""


@pytest.mark.parametrize("width", [320, 1280])
def test_no_page_scrolls_sideways(wide_page: Any, wide_site: Site, width: int) -> None:
    page = wide_page(width=width, height=800)
    page.goto("/signin")
    wide: dict[str, Any] = {}
    if page.evaluate("document.documentElement.scrollWidth") > width:
        wide["/signin"] = page.evaluate(_STICKING_OUT)
    sign_in(page, ANA_TOKEN)
    for path in pages_of(wide_site):
        page.goto(path)
        if page.evaluate("document.documentElement.scrollWidth") > width:
            wide[path] = page.evaluate(_STICKING_OUT)
    assert wide == {}
