"""The demo behind ``memdb demo``: three weeks of a small agent team's memory, then questions.

Deterministic (seeded, with a fixed "now") so the README's output is reproducible.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import shutil
from typing import TextIO

import memdb

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
"""The demo's "now": a Wednesday, so "last week" is 2026-06-22 to 2026-06-28."""

_DAYS = 21

# (agent, kind, outcome, tags, summary, lesson) templates; {n} is filled per episode
_EVENTS = [
    (
        "coder",
        "debug",
        "failure",
        ["Project X", "deploy"],
        "Deploy {n} of Project X failed: migration held a lock on users",
        "Run schema migrations before the deploy window",
    ),
    (
        "coder",
        "debug",
        "partial",
        ["Project X", "deploy"],
        "Deploy {n} of Project X went out with the search index stale",
        "Rebuild the index as a deploy step, not by hand",
    ),
    ("coder", "sprint", "success", ["Project X", "search"], "Shipped search improvements {n} for Project X", None),
    ("ops", "routine", "success", ["backups"], "Nightly backup verification {n} passed", None),
    (
        "ops",
        "debug",
        "failure",
        ["billing", "twilio"],
        "Twilio webhook {n} rejected: signature secret was rotated",
        "Check the signing secret before retrying webhooks",
    ),
    (
        "ops",
        "research",
        "partial",
        ["billing"],
        "Compared invoice providers ({n} shortlisted)",
        "Stripe tax covers EU VAT; Paddle does not fit our volume",
    ),
    (
        "planner",
        "roundtable",
        "partial",
        ["Project X", "roadmap"],
        "Roundtable {n} on Project X scope: phone channel deferred",
        "List supported channels and their quality before adding one",
    ),
    ("planner", "review", "success", ["Project X"], "Reviewed Project X rollout plan v{n}", None),
]
_CHATS = [
    "Can you summarise what blocked the Project X deploy?",
    "Did the billing webhooks recover overnight?",
    "Draft the release notes for the search changes",
    "What did we decide about the phone channel?",
]


def build_sample(db: memdb.Database, seed: int = 7) -> int:
    """Write the sample memory through the public capture API; returns episodes written."""
    rng = random.Random(seed)
    start = (NOW - dt.timedelta(days=_DAYS)).replace(hour=0, minute=0)
    written = 0
    for day in range(_DAYS):
        date = start + dt.timedelta(days=day)
        with db.transaction():
            for n in range(rng.randint(2, 5)):
                agent, kind, outcome, tags, summary, lesson = rng.choice(_EVENTS)
                ts = date + dt.timedelta(hours=rng.randint(7, 19), minutes=rng.randint(0, 59))
                db.owner(agent).record(
                    kind, summary.format(n=day * 10 + n), outcome=outcome, tags=tags, lesson=lesson, ts=ts,
                    session=f"{agent}-{date:%m%d}", what_happened=f"Logged by {agent} during the {date:%A} shift.",
                )  # fmt: skip
                written += 1
            for agent in ("coder", "ops"):
                if rng.random() < 0.5:
                    ts = date + dt.timedelta(hours=rng.randint(8, 18))
                    mem = db.owner(agent)
                    mem.record_exchange(
                        f"{agent}-{date:%m%d}", rng.choice(_CHATS), "Here is what the memory says ...", ts=ts, tags=["chat"]
                    )
                    call = mem.record_tool_call(
                        f"{agent}-{date:%m%d}", "search_logs", {"query": "deploy errors", "since": f"{date:%Y-%m-%d}"}, ts=ts
                    )
                    mem.record_tool_result(call.id, {"hits": rng.randint(0, 9)})
                    written += 2
    # the gateway sanitizes at capture: this email and phone never reach disk
    db.owner("ops").record_exchange(
        "ops-pager", "Please page me at +1 (415) 555-0132 or dana@example.com", "Noted.", ts=NOW - dt.timedelta(hours=20)
    )
    return written + 1


def run_demo(path: str | os.PathLike[str], out: TextIO) -> None:
    """Build the sample in ``path`` (replacing an earlier demo there) and ask it questions."""
    path = os.fspath(path)
    if os.path.isdir(path) and os.path.exists(os.path.join(path, "data.mdb")):
        shutil.rmtree(path)
    with memdb.open(path, clock=lambda: NOW, sync=False) as db:
        n = build_sample(db)
        out.write(
            f"memdb {memdb.__version__} demo: {n} episodes of three agents (planner, coder, ops) "
            f"over {_DAYS} days in {os.path.abspath(path)}\n"
        )
        out.write(f'"now" is {NOW:%A %Y-%m-%d %H:%M} UTC; native scorer: {"C" if memdb.native.AVAILABLE else "pure Python"}\n')

        coder, ops = db.owner("coder"), db.owner("ops")
        for mem, question in (
            (coder, "What happened with Project X last week?"),
            (ops, "Any billing failures in the past 10 days?"),
            (coder, "What happened with the mobile app yesterday?"),
            (db.owner("planner"), "What happened with the roadmap yesterday?"),
        ):
            result = mem.ask(question, limit=3)
            out.write(f"\n[{mem.name}] Q: {question}\n    searched: {result.interpretation}\n")
            out.write("    " + result.as_context(max_chars=900).replace("\n", "\n    ") + "\n")
            if result.found:
                out.write(f"    why #1: {', '.join(result.memories[0].why)}\n")

        history = coder.history(kind="debug", tags=["deploy"])
        out.write(f"\n[coder] history of debug/deploy: {history}\n")
        if history.attempts:
            out.write(f"    explain #1: {coder.explain(history.attempts[0].episode.id)}\n")
        chat = next(iter(ops.recall(session="ops-pager", limit=1)), None)
        if chat:
            first = chat.episode.content.splitlines()[0]
            out.write(f"\n[ops] what the gateway stored for a message with an email and a phone number:\n    {first}\n")

        mem_global = db.globals["MEM"]
        days = list(mem_global.children(("coder",)))
        out.write(f'\nUnder the hood: ^MEM("coder", day, id) holds {len(days)} days from {days[0]!s} to {days[-1]!s}; ')
        out.write(f"index check: {'ok' if db.check().ok else 'PROBLEMS'}\n")

        report = db.maintain(now=NOW + dt.timedelta(days=45))
        out.write(f"\nSix weeks later, db.maintain(): {report}\n")
        archived = coder.recall(tags=["deploy"], include_archived=True, limit=1)
        if archived.found:
            out.write(f"    still findable when archived: {archived.memories[0].line()}\n")
