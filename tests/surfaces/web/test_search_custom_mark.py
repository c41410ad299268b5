"""A custom sanitizer's mark through the dashboard's paging links (a final read's find): the next
page's link carried the question sanitized, "[REDACTED]" in it, which no placeholder pattern knows
again, so page 2 searched the word "redacted" and answered another question than page 1."""

from __future__ import annotations

import datetime as dt
import html
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

import pytest

import memdb
from memdb.memory.sanitize import RegexSanitizer

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from memdb.surfaces.web.app import build_dashboard

NOW = dt.datetime(2026, 7, 10, tzinfo=dt.UTC)


class _Marking:
    """memdb's own sanitizer, its placeholders written as [REDACTED]."""

    inner = RegexSanitizer()

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return {k: re.sub(r"<[A-Z_]+_\d+>", "[REDACTED]", v) for k, v in self.inner.sanitize(texts).items()}


def _searched(page: str) -> str:
    return html.unescape(re.search(r'id="searched"[^>]*>(.*?)</', page, re.S).group(1))  # type: ignore[union-attr]


def test_the_next_page_asks_what_the_first_did(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db", sanitizer=_Marking(), clock=lambda: NOW) as db:
        mem = db.owner("ana")
        with db.transaction():
            for i in range(30):
                mem.record("debug", f"invoice run {i} finished", outcome="success", ts=NOW - dt.timedelta(hours=i + 1))
            for i in range(40):  # about other things, each holding a value the sanitizer marked
                at = NOW - dt.timedelta(hours=100 + i)
                mem.record("debug", f"wrote to user{i}@example.org about the outage", outcome="failure", ts=at)
        client = TestClient(build_dashboard(db, {"tok-0123456789abcdef": "ana"}))
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/signin").text).group(1)  # type: ignore[union-attr]
        client.post("/signin", data={"token": "tok-0123456789abcdef", "csrf": csrf, "next": "/"}, headers={"origin": "http://testserver"})
        first = client.get("/memories?" + urllib.parse.urlencode({"q": "invoice for dana@example.org"})).text
        link = html.unescape(re.search(r'href="([^"]*offset=20[^"]*)"', first).group(1))  # type: ignore[union-attr]
        second = client.get(link).text
        assert _searched(second) == _searched(first).replace("showing 1-20", "showing 21-30")
        assert "redacted" not in _searched(second).replace("[REDACTED]", "")
        assert len(re.findall(r"invoice run \d+", second)) >= 10 and "wrote to" not in second
