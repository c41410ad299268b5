"""The audit page says which text its records keep besides hashes, and says it truly: distill
records keep the session's name and an outcome's correction both values, which it did not say."""

from __future__ import annotations

import datetime as dt
import html
import re
from pathlib import Path

from clocks import Clock

import memdb
from memdb.surfaces.web import pages
from memdb.surfaces.web.app import Dashboard, Req, Session

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
_NOT_TEXT = re.compile(r"[0-9a-f]{16,64}|\d{8}T\d{12}Z-[0-9a-f]+")  # hashes and ids


def test_the_audit_page_names_every_kind_of_text_its_records_keep(tmp_path: Path) -> None:
    clock = Clock(T0)
    with memdb.open(tmp_path / "a", clock=clock) as db:
        ana = db.owner("ana")
        for i in range(3):
            clock.advance(minutes=1)
            ana.record_exchange(session="deploy-of-payroll", user_message=f"deploy the payroll service {i}", response="done")
        clock.advance(minutes=1)
        ana.close_session("deploy-of-payroll", kind="debug", outcome="success")
        failed = ana.record("debug", "Deploy of the payroll failed", outcome="failure", lesson="Check the VPN first")
        ana.supersede(failed.id, reason="it went through after all", outcome="success")
        clock.advance(days=40)
        db.maintain()
        kept = {
            (r["action"], key)
            for r in ana.audit()
            for key, value in r.items()
            if key not in ("owner", "id", "action", "at", "by") and isinstance(value, str) and not _NOT_TEXT.fullmatch(value)
        }
        text = {("distill", "session"), ("supersede", "reason"), ("archive", "one_line")}
        assert text <= kept  # what the page must name: the rest are names memdb chose (rules, kinds, codecs)
        outcome = next(r["outcome"] for r in ana.audit() if r["action"] == "supersede")
        assert outcome == {"from": "failure", "to": "success"}  # a correction's outcome keeps both values
        page = html.unescape(pages.audit(Dashboard(db, {"t": "ana"}), Req(Session("s", "ana", "c", 0.0), {}, {}, {})).body.decode())
        said = re.search(r"appears only as a hash, except (.*?)</p>", page, re.S)
        assert said is not None
        for claim in (
            "one-line summary",
            "the name of a session that was distilled",
            "an outcome's old and new value",
            "the reason a person gave",
        ):
            assert claim in said.group(1)
