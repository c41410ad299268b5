"""The demo behind ``memdb demo``: three weeks of a small agent team's memory, then questions.

Deterministic (seeded, with a fixed "now") so the README's output is reproducible. The
database is left as of that "now" (the look six weeks ahead is rolled back), so the answers
in docs/mcp.md are what ``memdb mcp --now 2026-07-01T09:00:00Z`` gives on it. The demo only
ever replaces a database it wrote itself (``^META("demo")``), file by file.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from typing import TextIO

import memdb
from memdb.engine.globals import Globals
from memdb.engine.store import LMDBStore
from memdb.errors import MemdbError, ValidationError

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
"""The demo's "now": a Wednesday, so "last week" is 2026-06-22 to 2026-06-28."""

_DAYS = 21
DEMO_MARK = ("demo",)
"""The ``^META`` node a demo database carries: only such a database is replaced by the next demo."""
DEMO_MARK_VALUE = "written by memdb demo; the next memdb demo in this directory replaces it"
_LMDB_FILES = frozenset({"data.mdb", "lock.mdb"})

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
SESSION = "ops-0701"
"""A gateway session of the demo's last morning, left open by the sample: the demo closes it."""
_FIX = [  # (minutes before NOW, tool, result) of that session
    (48, "check_webhooks", {"error": "signature mismatch", "failed": 12}),
    (44, "rotate_signing_secret", {"rotated": True}),
    (40, "check_webhooks", {"delivered": 12, "failed": 0}),
]
_CHATS = [
    "Can you summarise what blocked the Project X deploy?",
    "Did the billing webhooks recover overnight?",
    "Draft the release notes for the search changes",
    "What did we decide about the phone channel?",
]


class DemoClock:
    """The demo's clock: the sample is captured live, each event at its own moment (gateway
    capture refuses a timestamp away from the clock), then time stands at ``NOW``."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> dt.datetime:
        return self.now


def build_sample(db: memdb.Database, clock: DemoClock, seed: int = 7) -> int:
    """Write the sample memory through the public capture API as it happens, moving ``clock``
    to each event; returns episodes written."""
    rng = random.Random(seed)
    start = (NOW - dt.timedelta(days=_DAYS)).replace(hour=0, minute=0)
    written = 0
    for day in range(_DAYS):
        date = start + dt.timedelta(days=day)
        with db.transaction():
            for n in range(rng.randint(2, 5)):
                agent, kind, outcome, tags, summary, lesson = rng.choice(_EVENTS)
                ts = clock.now = date + dt.timedelta(hours=rng.randint(7, 19), minutes=rng.randint(0, 59))
                db.owner(agent).record(
                    kind, summary.format(n=day * 10 + n), outcome=outcome, tags=tags, lesson=lesson, ts=ts,
                    session=f"{agent}-{date:%m%d}", what_happened=f"Logged by {agent} during the {date:%A} shift.",
                )  # fmt: skip
                written += 1
            for agent in ("coder", "ops"):
                if rng.random() < 0.5:
                    ts = clock.now = date + dt.timedelta(hours=rng.randint(8, 18))
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
    clock.now = NOW - dt.timedelta(hours=20)
    db.owner("ops").record_exchange("ops-pager", "Please page me at +1 (415) 555-0132 or dana@example.com", "Noted.", ts=clock.now)
    # this morning's gateway session: a question, then tool calls until the webhooks deliver again
    ops = db.owner("ops")
    clock.now = NOW - dt.timedelta(minutes=50)
    question = "The Twilio webhooks are failing again, can you fix them?"
    ops.record_exchange(SESSION, question, "Checking the webhook deliveries.", ts=clock.now, tags=["twilio"])
    for minutes, tool, result in _FIX:
        clock.now = NOW - dt.timedelta(minutes=minutes)
        ops.record_tool_result(ops.record_tool_call(SESSION, tool, {"provider": "twilio"}, ts=clock.now).id, result)
    clock.now = NOW
    return written + 2 + len(_FIX)


def _is_demo(path: str) -> bool:
    """Whether the LMDB database in ``path`` carries the demo's mark. Read through the store
    alone: ``memdb.open`` would upgrade an older layout, and a database that is not the demo's
    must come out of this unchanged."""
    try:
        store = LMDBStore(path)
    except MemdbError:  # not an LMDB environment memdb can open: certainly not a demo
        return False
    try:
        return bool(Globals(store)["META"].get(DEMO_MARK) == DEMO_MARK_VALUE)
    except MemdbError:
        return False
    finally:
        store.close()


def clear_earlier_demo(path: str) -> None:
    """Make ``path`` ready for a new demo: a missing or empty directory is; a database an
    earlier demo wrote is removed, its two LMDB files only. Anything else raises
    ValidationError naming the path and why, and nothing is deleted (tests/surfaces/test_cli.py)."""
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path):
        raise ValidationError(f"demo {path!r}: not a directory; nothing was changed (give a new or empty directory, e.g. ./demo-db)")
    entries = sorted(os.listdir(path))
    if not entries:
        return
    others = [e for e in entries if e not in _LMDB_FILES]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise ValidationError(
            f"demo {path!r}: the directory holds other files ({shown}); nothing was changed (give a new or empty directory, e.g. ./demo-db)"
        )
    # A demo leaves both files; checking for both first means opening the store creates nothing.
    if set(entries) != _LMDB_FILES or not _is_demo(path):
        raise ValidationError(
            f"demo {path!r}: holds a database that memdb demo did not write; nothing was changed (give a new or empty directory)"
        )
    for name in entries:  # the LMDB files alone, never the directory: it may be the caller's own (".")
        os.remove(os.path.join(path, name))


class _WhatIf(Exception):
    """Raised to roll back the demo's look six weeks ahead."""


def run_demo(path: str | os.PathLike[str], out: TextIO) -> None:
    """Build the sample in ``path`` (a new or empty directory, or an earlier demo's, which is
    replaced) and ask it questions; ValidationError if ``path`` holds anything else."""
    path = os.fspath(path)
    clear_earlier_demo(path)
    clock = DemoClock()
    with memdb.open(path, clock=clock, sync=False) as db:
        db.globals["META"].set(DEMO_MARK, DEMO_MARK_VALUE)
        n = build_sample(db, clock)
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

        # The auto-trigger: the session ends, its capture becomes a typed episode with an honest
        # outcome (offline, the agent gives it: memdb never guesses one), and history answers from it.
        done = ops.close_session(SESSION, kind="debug", outcome="success", tags=["billing"])
        out.write(f'\n[ops] close_session("{SESSION}", kind="debug", outcome="success"): a gateway session becomes a typed episode\n')
        if done.episode is not None:
            ep = done.episode
            out.write(f"    {ep.ts:%Y-%m-%d %H:%M} {ep.kind}/{ep.outcome} [{', '.join(ep.tags)}]: {ep.summary}\n")
            out.write(f"    what_we_tried: {ep.what_we_tried}\n    what_happened: {ep.what_happened}\n")
            again = ops.close_session(SESSION, kind="debug", outcome="success").status
            out.write(f"    cites the {len(ep.cites)} captured events; closing it again: {again.replace('_', ' ')}, nothing written\n")
        twilio = ops.history(kind="debug", tags=["twilio"])
        out.write(f"[ops] history of debug/twilio: {twilio}\n")
        if twilio.attempts:
            out.write(f"    latest attempt: {twilio.attempts[0].line().removeprefix('- ')}\n")

        mem_global = db.globals["MEM"]
        days = list(mem_global.children(("coder",)))
        out.write(f'\nUnder the hood: ^MEM("coder", day, id) holds {len(days)} days from {days[0]!s} to {days[-1]!s}; ')
        out.write(f"index check: {'ok' if db.check().ok else 'PROBLEMS'}\n")

        # A what-if in one transaction, rolled back: the database stays as the questions above
        # saw it, so it answers the same to `memdb ask` and `memdb mcp --now` afterwards.
        db.flush()  # the accesses so far are kept; maintain would flush them inside the rollback
        try:
            with db.transaction():
                report = db.maintain(now=NOW + dt.timedelta(days=45))
                out.write(f"\nSix weeks later, db.maintain(): {report}\n")
                archived = coder.recall(tags=["deploy"], include_archived=True, limit=1)
                if archived.found:
                    out.write(f"    still findable when archived: {archived.memories[0].line()}\n")
                raise _WhatIf
        except _WhatIf:
            pass
        out.write(f"    (a what-if in one transaction, rolled back: the database stays as of {NOW:%Y-%m-%d %H:%M} UTC)\n")
