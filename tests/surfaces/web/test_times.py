"""Times on the dashboard are the database's (``settings.timezone``, here Europe/Berlin), named:
the days of the filters, the charts and the schedule are local days, so a time shown in UTC put
an episode of 06-30 (01:30 in Berlin) under 06-29 in a list filtered to 06-30."""

from __future__ import annotations

import re
from typing import Any

from conftest import ANA_TOKEN, WIDE_SESSION, Site, sign_in


def times(page: Any, selector: str = "main") -> list[str]:
    return [t.strip() for t in page.locator(f"{selector} time").all_inner_texts()]


def test_every_time_shown_is_local_and_names_its_zone(wide_page: Any, wide_site: Site) -> None:
    page = wide_page()
    sign_in(page, ANA_TOKEN)
    # 2026-06-29 23:30 UTC is 2026-06-30 01:30 in Berlin: the day filtered for, and the day shown
    page.goto("/memories?since=2026-06-30&until=2026-06-30&tags=late")
    [hit] = page.locator("ol.hits li a").all_inner_texts()
    assert hit.startswith("2026-06-30 01:30 CEST sprint/success")
    assert page.locator("ol.hits time").get_attribute("datetime") == "2026-06-29T23:30:00+00:00"
    page.goto(f"/episodes/{wide_site.ids['late']}")
    heading = page.inner_text("h1")
    assert "2026-06-30 01:30 CEST" in heading and "UTC" not in heading
    page.goto(f"/timelines?session={WIDE_SESSION}")  # calls at 20:40 and 20:50 UTC
    assert "last 2026-07-01 22:50 CEST" in page.inner_text("ul.sessions")
    assert times(page, "#steps") == ["22:40:00 CEST", "22:50:00 CEST"]
    page.goto("/ceremony")
    assert re.search(r"Agenda \S+ of 2026-07-01 23:30 CEST:", page.inner_text("main"))
    page.goto("/audit")
    assert times(page, "#audit")[0] == "2026-07-01 23:30:00 CEST"
    page.goto("/schedule")  # an interval job's period is shown as its local start, a week by its first day
    rows = {r.split("\t")[0]: r.split("\t") for r in page.locator("#runs tr").all_inner_texts()[1:]}
    assert rows["close_idle_sessions"][1:4] == ["2026-07-01 23:30 CEST", "ok", "2026-07-01 23:30 CEST"]
    assert rows["decay"][1] == "week of 2026-06-29" and rows["maintain"][1] == "2026-07-01"
    assert "until 2026-07-01 23:40 CEST" in page.inner_text("main")
    for path in ("/memories?tags=bulk", "/review", "/decay", "/patterns", "/timelines", f"/episodes/{wide_site.ids['debug']}"):
        page.goto(path)
        assert times(page), path
        for shown in times(page):  # a day alone, or a time named by its zone
            assert re.fullmatch(r"\d{4}-\d\d-\d\d|(\d{4}-\d\d-\d\d )?\d\d:\d\d(:\d\d)? CEST", shown), (path, shown)
