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


# every element holding text: its colour and the first opaque background behind it, as the page computes them
_COLOURS = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const behind = (el) => { for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3); }
    return [255, 255, 255]; };
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || ![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const style = getComputedStyle(el);
    const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66 && Number(style.fontWeight) >= 700);
    out.push([el.tagName.toLowerCase() + (el.className ? '.' + el.className : ''), rgb(style.color).slice(0, 3), behind(el), large]);
  }
  return out;
}"""


def _luminance(rgb: list[float]) -> float:
    r, g, b = ((v / 255) / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: list[float], bg: list[float]) -> float:
    hi, lo = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_text_colour_has_a_contrast_of_at_least_4_5(wide_page: Any, wide_site: Site) -> None:
    """WCAG 1.4.3: 4.5:1 (3:1 for large text), computed for every element with text on every page,
    a message after an action and an error included (``.others`` was #777 on white, 4.48:1)."""
    page = wide_page()
    seen: dict[str, Any] = {}

    def read() -> None:
        for what, fg, bg, large in page.evaluate(_COLOURS):
            seen[f"{what} {fg} on {bg}"] = (fg, bg, large)

    page.goto("/signin")
    read()
    sign_in(page, ANA_TOKEN)
    for path in pages_of(wide_site):
        page.goto(path)
        read()
    page.goto(f"/episodes/{wide_site.ids['debug']}")
    with page.expect_navigation():
        page.click("#helped")  # a flash message
    read()
    assert any(what.startswith("span.others") for what in seen) and any(what.startswith("p.flash") for what in seen)
    low = {what: round(contrast(fg, bg), 2) for what, (fg, bg, large) in seen.items() if contrast(fg, bg) < (3 if large else 4.5)}
    assert low == {}
