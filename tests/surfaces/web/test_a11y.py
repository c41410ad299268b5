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
