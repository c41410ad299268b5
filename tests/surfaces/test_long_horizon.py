"""A year of a small team's memory, simulated day by day with an injected clock: typed episodes,
gateway exchanges and tool calls, an import, feedback; maintain every day, reflection daily and
decay weekly. Then questions whose exact answers are known from the script.

Every answer must be exact, and nothing that exists in hot or cold storage may be reported
missing: this is the promise "the third time you tried this, the last two failed" after months.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest
from clocks import Clock

import memdb

UTC = dt.UTC
START = dt.datetime(2026, 1, 5, 8, 0, tzinfo=UTC)  # a Monday
DAY = dt.timedelta(days=1)

# The task tried four times over the year, with how each ended: the questions' ground truth.
TWILIO = [
    (dt.date(2026, 2, 10), "failure", "signature check", "verify the signing secret before retrying"),
    (dt.date(2026, 4, 3), "failure", "retry storm", "cap retries with backoff"),
    (dt.date(2026, 7, 20), "partial", "idempotency keys", "store idempotency keys for 24 h"),
    (dt.date(2026, 10, 2), "success", "queue in front", "put a queue in front of the webhook"),
]
AGREED = dt.date(2026, 3, 12)


def _at(day: dt.date, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def simulate(path: Path) -> tuple[memdb.Database, Clock, dict[str, str]]:
    rng = random.Random(2026)
    clock = Clock(START)
    db = memdb.open(path, clock=clock, sync=False)
    db.configure(teams={"core": ["ana", "ben"]})
    ana, ben = db.owner("ana"), db.owner("ben")
    ids: dict[str, str] = {}
    # last year's tracker, imported on the first day: history, not events as they happen
    legacy = [
        {"kind": "debug", "summary": f"Legacy incident {i} on the billing cron", "outcome": "failure" if i % 3 else "success",
         "tags": ["legacy", "billing"], "ts": START - (60 - i) * DAY}
        for i in range(30)
    ]  # fmt: skip
    ana.import_episodes(legacy, source="tracker export 2025")
    twilio = {d: (o, step, lesson) for d, o, step, lesson in TWILIO}
    day = START.date()
    while day < dt.date(2027, 1, 4):
        if day.weekday() < 5:
            clock.now = _at(day, 9)
            ana.record("routine", f"Morning checks {day:%m-%d}", outcome="success", tags=["ops"])
            if rng.random() < 0.6:
                clock.now = _at(day, 10, rng.randrange(60))
                ben.record_exchange(f"ben-{day:%m%d}", f"Can you draft the {day:%B} status note?", "Drafted.", tags=["chat"])
                call = ben.record_tool_call(f"ben-{day:%m%d}", "search_docs", {"q": "status template"})
                ben.record_tool_result(call.id, {"hits": rng.randrange(5)})
            if day in twilio:
                outcome, step, lesson = twilio[day]
                clock.now = _at(day, 14)
                ep = ana.record(
                    "debug", f"Twilio webhook fix attempt: {step}", outcome=outcome, tags=["twilio"],
                    what_happened=f"the {step} approach ended in {outcome}", lesson=lesson,
                )  # fmt: skip
                ids[f"twilio {day}"] = ep.id
            if day == AGREED:
                clock.now = _at(day, 16)
                ids["agreed"] = ben.record(
                    "review", "Call with Contoso: agreed invoices are due net 45 days", outcome="success", tags=["contoso"],
                    decisions={"terms": "net 45", "confidence": 9},
                ).id  # fmt: skip
            if rng.random() < 0.1:
                clock.now = _at(day, 17)
                recent = ana.recall(tags=["ops"], limit=1).memories
                if recent:
                    ana.feedback(recent[0].episode.id, 0.5)
        clock.now = _at(day, 23, 30)
        db.maintain()
        db.reflect()
        if day.weekday() == 6:
            db.decay()
        day += DAY
    clock.now = _at(day, 9)
    return db, clock, ids


@pytest.mark.slow
def test_a_year_later_every_answer_is_exact(tmp_path: Path) -> None:
    db, clock, ids = simulate(tmp_path / "year")
    with db:
        ana, ben = db.owner("ana"), db.owner("ben")
        assert db.check().ok

        # "how many times did we try the twilio webhook fix, and how did each end?"
        h = ana.history(kind="debug", tags=["twilio"])
        assert h.total == 4 and h.counts == {"success": 1, "partial": 1, "failure": 2}
        assert [(a.episode.id, a.episode.outcome) for a in h.attempts] == [(ids[f"twilio {d}"], o) for d, o, _, _ in reversed(TWILIO)]
        assert h.lessons == [lesson for _, _, _, lesson in reversed(TWILIO)]
        assert str(h).startswith("4 past attempts (1 success, 1 partial, 2 failure") and "Last failure: 2026-04-03 debug/failure" in str(h)

        # "what did we agree with Contoso in March?": hot or, once archived, pointed to and reachable
        r = ben.ask("What did we agree with Contoso in March?", now=clock.now)
        if r.found:
            assert [m.episode.id for m in r.memories] == [ids["agreed"]]
        else:
            assert "1 archived match" in r.note
            r = ben.ask("What did we agree with Contoso in March?", now=clock.now, include_archived=True)
            assert [m.episode.id for m in r.memories] == [ids["agreed"]]
        assert "net 45" in r.memories[0].episode.summary

        # "anything about Project Unknown?": an honest nothing, naming the name
        unknown = ana.ask("Anything about Project Unknown?", now=clock.now)
        assert not unknown.found and "'Unknown'" in unknown.note and unknown.note.startswith("Nothing found: no memory mentions")

        # nothing that exists in hot or cold storage is reported missing
        for mem in (ana, ben):
            everything = list(mem.episodes(include_archived=True))
            assert len(everything) == mem.count()
            for tag in sorted({t for e in everything for t in e.tags}):
                want = sum(1 for e in everything if tag in e.tags)
                got = mem.recall(tags=[tag], include_archived=True, limit=0, now=clock.now)
                assert got.total == want, (mem, tag)
                hot = mem.recall(tags=[tag], limit=0, now=clock.now)
                if hot.total == 0 and want:
                    assert "archived match" in hot.note, (mem, tag)
        # the imported history and the reflection's lessons are still there, and audited
        assert ana.history(tags=["legacy"]).total == 30
        assert any(a["action"] == "import" for a in ana.audit())
        assert ana.entries() or ben.entries()
