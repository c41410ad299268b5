"""The dashboard for people using a screen reader, a keyboard or a magnifier, in a real browser:
every control named by a label of its own, errors announced, a skip link, header cells scoped,
titles that tell pages apart, ceremony choices grouped under their lesson, and charts whose
numbers are a table, whose legend wraps and whose series differ by more than colour (WCAG 1.1.1,
1.3.1, 1.4.1, 1.4.11, 2.4.1, 2.4.2, 3.3.1, 4.1.2)."""

from __future__ import annotations

import re
from typing import Any

from conftest import ANA_TOKEN, WIDE_SESSION, Site, sign_in

from memdb.surfaces.web import chart


def paths(site: Site) -> list[str]:
    ids = site.ids
    return [
        "/", "/memories", "/memories?q=deploy+log", f"/episodes/{ids['debug']}", f"/episodes/{ids['archived']}", "/review",
        "/ceremony", "/decay", "/patterns", "/timelines", f"/timelines?session={WIDE_SESSION}", "/audit", "/schedule",
    ]  # fmt: skip


# form controls whose only name is a placeholder (or none): a label, aria-label(ledby) or title names one
_UNNAMED = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby') && !el.title)
  .map(el => el.outerHTML)"""


def test_every_form_control_has_a_name_of_its_own(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    page.goto("/signin")
    unnamed = {"/signin": page.evaluate(_UNNAMED)}
    sign_in(page, ANA_TOKEN)
    for path in paths(wide_site):
        page.goto(path)
        unnamed[path] = page.evaluate(_UNNAMED)
    assert {p: u for p, u in unnamed.items() if u} == {}


def test_errors_are_announced_and_tied_to_their_field(wide_page: Any) -> None:
    page = wide_page()
    page.goto("/signin")
    page.fill("input[name=token]", "not-a-token-of-anyone-123")
    with page.expect_navigation():
        page.click("form[action='/signin'] button")
    assert page.get_attribute("#signin-error", "role") == "alert"
    token = page.locator("input[name=token]")
    assert token.get_attribute("aria-describedby") == "signin-error" and token.get_attribute("aria-invalid") == "true"
    sign_in(page, ANA_TOKEN)
    page.goto("/episodes/nosuchid")
    assert page.get_attribute("#error", "role") == "alert"


def test_a_skip_link_leads_past_the_navigation(wide_page: Any) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/review")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main" and page.url.endswith("#main")


def test_every_header_cell_says_what_it_heads(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    unscoped = {}
    for path in paths(wide_site):
        page.goto(path)
        unscoped[path] = page.evaluate("[...document.querySelectorAll('th')].filter(th => !['row', 'col'].includes(th.scope)).length")
    assert {p: n for p, n in unscoped.items() if n} == {}


def test_titles_tell_pages_apart(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    titles = []
    for eid in (wide_site.ids["late"], wide_site.ids["archived"]):
        page.goto(f"/episodes/{eid}")
        titles.append(page.title())
    assert titles == ["Late-night deploy across midnight · Episode · memdb", "Rotated the staging certificates · Episode · memdb"]
    page.goto("/memories?q=deploy+log")
    assert page.title() == "deploy log · Memories · memdb"
    page.goto("/memories?tags=bulk&offset=20")
    assert page.title() == "Memories (21-40) · memdb"
    page.goto("/episodes/nosuchid")
    assert page.title() == "Not found (404) · memdb"
    page.goto("/patterns?kind=nonsense")
    assert page.title() == "Bad request (400) · memdb"


def test_ceremony_choices_are_grouped_under_their_lesson(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/ceremony")
    items = page.locator("article.entry:has(input[type=radio])")
    assert items.count() >= 2
    for item in items.all():
        text = item.locator(".text").inner_text()
        group = page.get_by_role("group", name=text[:40])
        assert [r.get_attribute("value") for r in group.get_by_role("radio").all()] == ["share", "private", "archive"]
        assert group.get_by_role("radio", name="keep").count() == 1


def _contrast(a: str, b: str) -> float:
    def lum(colour: str) -> float:
        h = colour.lstrip("#")
        h = "".join(c * 2 for c in h) if len(h) == 3 else h
        c = [int(h[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        r, g, bl = (v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c)
        return 0.2126 * r + 0.7152 * g + 0.0722 * bl

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_chart_colours_stand_out_from_the_background() -> None:
    assert [c for c in chart.PALETTE if _contrast(c, "#ffffff") < 3] == []  # WCAG 1.4.11: graphics at least 3:1


def test_charts_have_their_numbers_as_a_table_a_whole_legend_and_patterns(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    page.goto("/")
    # every count of the picture is in the table: "<day> <kind>: <n>" of each bar segment
    page.click("#per-day details summary")  # opens the table
    table = page.locator("#per-day details table")
    kinds = [k.strip() for k in table.locator("thead th").all_inner_texts()][1:-1]
    cells = {}
    for row in table.locator("tbody tr").all():
        day, *counts, _total = row.locator("th, td").all_inner_texts()
        cells |= {(day, k): n for k, n in zip(kinds, counts, strict=True)}
    segments = page.locator("#per-day svg rect title").all_text_contents()
    assert len(kinds) >= 9 and segments
    for segment in segments:
        day, kind, n = re.fullmatch(r"(\S+) (\S+): (\d+)", segment).groups()
        assert cells[(day, kind)] == n
    assert page.locator("#relevance details table tbody tr").count() == 10
    # the legend: one entry per kind, none outside the picture
    box = page.evaluate("(() => { const v = document.querySelector('#per-day svg').viewBox.baseVal; return [v.width, v.height]; })()")
    legend = page.evaluate(
        "[...document.querySelectorAll('#per-day svg .legend text')]"
        ".map(t => { const b = t.getBBox(); return [t.textContent, b.x + b.width, b.y + b.height]; })"
    )
    assert sorted(name for name, _, _ in legend) == sorted(kinds)
    assert [name for name, right, bottom in legend if right > box[0] or bottom > box[1]] == []
    # each kind's fill is a pattern of its own, not a colour alone
    shapes = page.evaluate("[...document.querySelectorAll('#per-day svg pattern')].map(p => p.innerHTML.replace(/#[0-9a-f]{6}/gi, ''))")
    assert len(shapes) == len(kinds) == len(set(shapes))
