"""The dashboard's pages: each a function of the dashboard and a request, reading and acting
only through the signed-in owner (``db.owner(req.owner)``) or, for knowledge, checking that the
entry is theirs (or one they review) before acting, with ``by`` the signed-in owner."""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.parse
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from memdb.errors import NotFoundError, SanitizerError, ValidationError
from memdb.governance.knowledge import Entry, restore_note, unshared_note
from memdb.memory.models import Episode
from memdb.memory.sanitize import shown
from memdb.memory.settings import BUILTIN_KINDS, OUTCOMES
from memdb.query.plan import placeholders_only, sanitized
from memdb.surfaces.mcp_server import owner_of_token
from memdb.surfaces.throttle import client_address
from memdb.surfaces.web import chart
from memdb.surfaces.web.app import COOKIE, SECURITY_HEADERS, Dashboard, Req, WebError, local_time, summary_shown

__all__ = ["ROUTES", "signin", "signin_form", "stylesheet"]

SEARCH_LIMIT = 20
SCAN = 5000  # most episodes a listing page reads (sessions, charts)
AUDIT_SHOWN = 200  # audit records a page shows
DECISIONS_SHOWN = 10
SESSIONS_SHOWN = 200
CHART_DAYS = 14


def _no_episode(eid: str) -> WebError:
    # one wording for unknown ids, malformed ones and other owners' (tests/surfaces/web/test_dashboard.py)
    return WebError(404, f"episode {shown(eid)}: no such episode")


def _no_entry(eid: str) -> WebError:
    return WebError(404, f"entry {shown(eid)}: no such knowledge entry")


# --- overview -------------------------------------------------------------------------------------


def overview(dash: Dashboard, req: Req) -> Response:
    mem = dash.db.owner(req.owner)
    zone = ZoneInfo(mem.settings.timezone)
    today = mem.now().astimezone(zone).date()
    days = [today - dt.timedelta(days=n) for n in range(CHART_DAYS - 1, -1, -1)]
    first = dt.datetime.combine(days[0], dt.time(), tzinfo=zone).astimezone(dt.UTC)
    per_day: dict[str, list[int]] = {}
    for ep in mem.episodes(since=first):
        row = per_day.setdefault(ep.kind, [0] * CHART_DAYS)
        row[(ep.ts.astimezone(zone).date() - days[0]).days] += 1
    bins = [0] * 10
    for relevance in mem.relevances(SCAN):
        bins[min(int(relevance), 9)] += 1
    entries = mem.entries()
    # count() holds archived episodes and earlier versions too; the chart below reads hot ones.
    # Archived ones are what is left: counting them read every archived one-liner (0.3 s a view at
    # 12k archived), earlier versions are few and have their own index
    total, hot = mem.count(), mem.recall(limit=0).total
    earlier = max(mem.recall(limit=0, include_superseded=True).total - hot, 0)
    archived = max(total - hot - earlier, 0)
    incl = [f"{archived} archived"] if archived else []
    incl += [f"{earlier} earlier version{'s' if earlier != 1 else ''}"] if earlier else []
    counts = {
        "episodes" + (f" (incl. {', '.join(incl)})" if incl else ""): total,
        "pending lessons": sum(e.state == "pending" for e in entries),
        "approved lessons": sum(e.state == "approved" and e.status == "active" for e in entries),
        "quarantined": sum(e.status == "quarantined" for e in entries),
        "decay flags": sum(e.owner == req.owner for e in dash.db.flagged()),
    }
    labels, bands = [f"{d:%m-%d}" for d in days], [f"{i}-{i + 1}" for i in range(10)]
    return dash.render(
        "overview.html", req, counts=counts, days=labels, per_day=dict(sorted(per_day.items())), bands=bands, bins=bins,
        per_day_chart=chart.stacked_bars(labels, per_day, "episodes per day by kind", "per-day"),
        relevance_chart=chart.histogram(bands, bins, "relevance of the latest episodes", "relevance"),
        scanned=min(sum(bins), SCAN),
    )  # fmt: skip


# --- memories -------------------------------------------------------------------------------------


def _day(text: str, what: str, zone: ZoneInfo, after: bool = False) -> dt.datetime | None:
    if not text:
        return None
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"{what} {text!r}: expected a date YYYY-MM-DD") from None
    try:
        return dt.datetime.combine(day + dt.timedelta(days=1 if after else 0), dt.time(), tzinfo=zone).astimezone(dt.UTC)
    except OverflowError:
        raise ValidationError(f"{what} {text!r}: out of range (days from 0001-01-02 to 9999-12-30)") from None


# The query layer's notes name the Python API's arguments and calls; a person here knows them as
# the page's options (tests/surfaces/web/test_memories.py), as the CLI says its flags and MCP its arguments
_IN_PAGE_TERMS = (
    ("include_archived=True", 'tick "include archived"'),
    ("include_superseded=True", 'tick "include earlier versions"'),
    ("restore()", "the Restore button on its page"),
)
MAX_OFFSET = 1000  # the matches a page may skip: a search that many pages long wants narrowing


def _in_page_terms(note: str) -> str:
    for python, page in _IN_PAGE_TERMS:
        note = note.replace(python, page)
    return note


def _offset(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_OFFSET:
        raise WebError(400, f"offset {shown(text)}: a number of matches to skip, 0 to {MAX_OFFSET} (narrow the search to see later ones)")
    return int(text)


def memories(dash: Dashboard, req: Req) -> Response:
    mem = dash.db.owner(req.owner)
    zone = ZoneInfo(mem.settings.timezone)
    q = {k: req.arg(k) for k in ("q", "since", "until", "tags", "kind", "outcome", "session", "text")}
    archived, superseded = req.arg("archived") == "1", req.arg("superseded") == "1"
    offset = _offset(req.arg("offset") or "0")
    result, hits, note = None, [], ""
    # ask takes a question alone: filters given with one are named as not applied, and left out
    # of the paging links (tests/surfaces/web/test_after_a_year.py)
    # what the page says of the words typed (its title, the note of filters not applied, the
    # paging links): as the database stores them, personal data and secrets as placeholders
    said = {k: _sanitized(dash, v) for k, v in q.items() if v and k in ("q", "text", "tags", "session")}
    ignored = {k: said.get(k, v) for k, v in q.items() if v and k != "q"} if q["q"] else {}
    if q["q"]:
        result = mem.ask(q["q"], limit=SEARCH_LIMIT, include_archived=archived, include_superseded=superseded, offset=offset)
        hits = result.memories
    elif any(q.values()) or archived or superseded:
        tags = [t.strip() for t in q["tags"].split(",") if t.strip()]
        since, until = _day(q["since"], "since", zone), _day(q["until"], "until", zone, after=True)
        if since is not None and until is not None and until <= since:
            # in the days typed: the query layer names the window's UTC instants, a day off in a zone east of UTC
            raise WebError(400, f"until {shown(q['until'])}: before since {shown(q['since'])} (until is the last local day searched)")
        result = mem.recall(
            since, until, tags, text=q["text"] or None,
            kind=q["kind"] or None, outcome=q["outcome"] or None, session=q["session"] or None, limit=SEARCH_LIMIT,
            include_archived=archived, include_superseded=superseded, offset=offset,
        )  # fmt: skip
        hits = result.memories
    paging: dict[str, Any] = {}
    if result is not None:
        dash.db.flush()  # reading counts as access: durable, as the MCP tools make it
        note = _in_page_terms(result.note)
        if result.found:
            # the note counts the page's matches from 1: it says which of them this page shows, and
            # past the last match that it shows none (not the count of what the query was asked for)
            showing = f"{offset + 1}-{offset + len(hits)}" if hits else "0"
            note = re.sub(r"; showing \d+\.", f"; showing {showing}.", note, count=1)
        # the links carry what was searched, sanitized: a value in them (an address, a key) stayed
        # in the browser's history and any page's Referer; a placeholder is withheld again, so the
        # next page asks what this one did (test_the_search_box_echoes_no_value_it_withheld). A
        # custom sanitizer's mark ("[REDACTED]") would be searched as a word on the next page (a
        # final read's find): its links carry the words as typed, as this page's own address does
        if placeholders_only(dash.db.episodes.sanitizer):
            q_linked = {k: said.get(k, v) for k, v in q.items()}
        else:
            q_linked = q
        kept = {k: v for k, v in q_linked.items() if v and k not in ignored}
        kept |= ({"archived": "1"} if archived else {}) | ({"superseded": "1"} if superseded else {})

        def at(n: int) -> str:
            return "/memories?" + urllib.parse.urlencode(kept | ({"offset": str(n)} if n else {}))

        more = len(hits) == SEARCH_LIMIT and offset + len(hits) < result.total and offset + SEARCH_LIMIT <= MAX_OFFSET
        paging = {
            "first": offset + 1, "last": offset + len(hits), "total": result.total,
            "prev": at(max(offset - SEARCH_LIMIT, 0)) if offset else "", "next": at(offset + SEARCH_LIMIT) if more else "",
        }  # fmt: skip
    kinds = [*mem.settings.typed_kinds, *sorted(BUILTIN_KINDS)]
    return dash.render(
        "memories.html", req, q=q, archived=archived, superseded=superseded, result=result, hits=hits, note=note, paging=paging,
        kinds=kinds, outcomes=OUTCOMES, ignored=ignored, asked=said.get("q", ""),
    )  # fmt: skip


def _sanitized(dash: Dashboard, text: str) -> str:
    """``text`` as the database's sanitizer stores it; a sanitizer that fails shows none of it."""
    try:
        return sanitized(dash.db.episodes.sanitizer, text, "text")[0]
    except SanitizerError:
        return "(not shown)"


def _archived_view(dash: Dashboard, owner: str, eid: str) -> Episode:
    """What stays hot of an archived episode (its one line, kind, outcome, tags, lesson), the one
    line without the date and kind the page shows beside it."""
    mem = dash.db.owner(owner)
    for version in mem.versions(eid):
        if version.id == eid and version.status == "archived":
            return version.model_copy(update={"summary": summary_shown(version)})
    raise NotFoundError(eid)


def episode(dash: Dashboard, req: Req) -> Response:
    mem = dash.db.owner(req.owner)
    eid = req.path["id"]
    try:
        try:
            ep, why = mem.get(eid), mem.explain(eid)
        except NotFoundError:
            ep, why = _archived_view(dash, req.owner, eid), None
        versions = mem.versions(eid)
    except (NotFoundError, ValidationError):
        raise _no_episode(eid) from None
    dash.db.flush()
    decisions = json.dumps(ep.decisions, ensure_ascii=False, indent=1, default=str) if ep.decisions else ""
    current = versions[-1] if ep.status == "superseded" and versions and versions[-1].id != ep.id else None
    return dash.render("episode.html", req, ep=ep, why=why, versions=versions, decisions=decisions, current=current)


def restore_episode(dash: Dashboard, req: Req) -> Response:
    eid = req.path["id"]
    mem = dash.db.owner(req.owner)
    try:
        ep = mem.restore(eid)
    except (NotFoundError, ValidationError):
        # an own episode that is not archived (a second click, a resubmitted form) is no missing one
        try:
            mine = eid in mem
        except ValidationError:  # a malformed id
            mine = False
        if not mine:
            raise _no_episode(eid) from None
        return dash.done(req, f"{eid} is not archived (restored already?): nothing to restore", f"/episodes/{eid}")
    return dash.done(req, f"restored {ep.id} from cold storage", f"/episodes/{ep.id}")


def feedback(dash: Dashboard, req: Req) -> Response:
    eid = req.path["id"]
    try:
        value = float(req.field("value"))
    except ValueError:
        raise WebError(400, f"feedback {shown(req.field('value'))}: a number from -1 to 1") from None
    mem = dash.db.owner(req.owner)
    if eid not in mem:
        raise _no_episode(eid)
    mem.feedback(eid, value)
    return dash.done(req, f"feedback {value:+g} recorded", f"/episodes/{eid}")


# --- review ---------------------------------------------------------------------------------------


def _cited(dash: Dashboard, entry: Entry) -> list[tuple[str, Episode | None]]:
    """The episodes an entry cites, read as its owner (never an access); None where one is gone."""
    mem = dash.db.owner(entry.owner)
    out: list[tuple[str, Episode | None]] = []
    for cid in entry.cites:
        try:
            out.append((cid, mem.peek(cid)))
        except NotFoundError:
            try:
                out.append((cid, _archived_view(dash, entry.owner, cid)))
            except (NotFoundError, ValidationError):
                out.append((cid, None))
    return out


def review(dash: Dashboard, req: Req) -> Response:
    owners = dash.reviews(req.owner)
    pending = [e for o in owners for e in dash.db.review_queue(o)]
    # what the signed-in person decided, latest first: an owner's own lessons were listed whoever
    # decided them, and a reviewer's decisions on others' lessons not at all (test_after_a_year.py)
    mine = [e for o in owners for e in dash.db.owner(o).entries() if e.decided_by == req.owner and e.decided_at is not None]
    decided = sorted(mine, key=lambda e: (e.decided_at, e.id), reverse=True)[:DECISIONS_SHOWN]
    cited = {e.id: _cited(dash, e) for e in pending}
    return dash.render("review.html", req, pending=pending, cited=cited, decided=decided, owners=owners)


def decide_review(dash: Dashboard, req: Req) -> Response:
    ids, action = req.form.get("id", []), req.field("action")
    if action not in ("approve", "reject"):
        raise WebError(400, f"action {shown(action)}: approve or reject")
    if not ids:
        raise WebError(400, "no entry chosen: tick at least one lesson (nothing was changed)")
    allowed = set(dash.reviews(req.owner))
    for eid in ids:
        try:
            entry = dash.db.entry(eid)
        except NotFoundError:
            raise _no_entry(eid) from None
        if entry.owner not in allowed:  # another owner's entry reads as a missing one
            raise _no_entry(eid)
    if action == "approve":
        done = dash.db.approve(ids, by=req.owner)
    else:
        done = dash.db.reject(ids, by=req.owner, reason=req.field("reason"))
    verb = "approved" if action == "approve" else "rejected"
    return dash.done(req, f"{verb} {len(done)} lesson{'s' if len(done) != 1 else ''}", "/review")


# --- ceremony -------------------------------------------------------------------------------------


def _team(dash: Dashboard, req: Req, given: str) -> tuple[str, list[str]]:
    teams = dash.db.knowledge.teams_of(req.owner)
    if not teams:
        raise WebError(404, f"owner {req.owner!r}: in no team, so at no ceremony (configure teams)")
    team = given or teams[0]
    if team not in teams:
        raise WebError(404, f"team {shown(team)}: not one of your teams ({', '.join(teams)})")
    return team, teams


def ceremony(dash: Dashboard, req: Req) -> Response:
    team, teams = _team(dash, req, req.arg("team"))
    agenda = dash.db.latest_agenda(team)
    grouped = agenda.by_owner() if agenda is not None else {}
    ruled = {i.entry.id: _ruling(dash, i.entry, team) for i in agenda.items} if agenda is not None else {}
    # a restored lesson not shared again beside a teammate's copy says so, as the CLI's agenda does
    notes = {i.entry.id: unshared_note(i.entry) for i in agenda.items} if agenda is not None else {}
    return dash.render("ceremony.html", req, team=team, teams=teams, agenda=agenda, grouped=grouped, ruled=ruled, notes=notes)


def _ruling(dash: Dashboard, entry: Entry, team: str) -> str | None:
    """What was decided about ``entry`` for ``team``'s agenda, as the page says it; None while its
    owner has to decide. A share with another team is no ruling for this one: the item is on this
    agenda because this team does not read it (test_after_a_year.py)."""
    if entry.ceremony == "kept":
        return "kept private"
    if entry.ceremony == "archived":
        return "archived"
    if entry.ceremony == "shared" and dash.db.knowledge.reaches(entry.shared_with, team):
        return f"shared with {team}"
    return None


def start_ceremony(dash: Dashboard, req: Req) -> Response:
    team, _ = _team(dash, req, req.field("team"))
    agenda = dash.db.ceremony(team)
    return dash.done(req, f"agenda {agenda.id}: {len(agenda.items)} items", f"/ceremony?team={urllib.parse.quote(team)}")


def decide_ceremony(dash: Dashboard, req: Req) -> Response:
    team, _ = _team(dash, req, req.field("team"))
    decisions = {k[2:]: v[0] for k, v in req.form.items() if k.startswith("d:") and v and v[0] in ("share", "private", "archive")}
    if not decisions:
        raise WebError(400, "no decision chosen (nothing was changed)")
    for eid in decisions:
        try:
            entry = dash.db.entry(eid)
        except NotFoundError:
            raise _no_entry(eid) from None
        if entry.owner != req.owner:  # owner-only: another owner's entry reads as a missing one, its owner unnamed
            raise _no_entry(eid)
    # a replayed form (a double click, back and resubmit, two at once) is refused by decide, in
    # its write transaction, as every surface's replay is: a DuplicateError, so a 409 (test_after_a_year.py)
    done = dash.db.decide(decisions, by=req.owner, team=team)
    counts = Counter(e.ceremony for e in done)
    said = ", ".join(f"{n} {what}" for what, n in sorted(counts.items(), key=lambda kv: str(kv[0])))
    return dash.done(req, f"decided: {said}", f"/ceremony?team={urllib.parse.quote(team)}")


# --- decay ----------------------------------------------------------------------------------------


def decay(dash: Dashboard, req: Req) -> Response:
    mem = dash.db.owner(req.owner)
    flags = [e for e in dash.db.flagged() if e.owner == req.owner]
    approved = mem.entries("approved")
    quarantined = [e for e in approved if e.status == "quarantined"]
    archived = [e for e in approved if e.status == "archived"]
    # who archived each and when: the entry does not say, its audit record does (the latest archive of it)
    archiving = {r["entry"]: r for r in mem.audit() if r.get("action") == "archive" and r.get("entry")} if archived else {}
    runs = dash.scheduler.runs("decay", limit=1) if dash.scheduler is not None else []
    budget = dash.db.settings.decay_flags_per_week
    return dash.render(
        "decay.html", req, flags=flags, quarantined=quarantined, archived=archived, archiving=archiving,
        last=runs[0] if runs else None, budget=budget,
    )  # fmt: skip


def decide_decay(dash: Dashboard, req: Req) -> Response:
    eid, action = req.field("entry"), req.field("action")
    if action not in ("keep", "quarantine", "restore"):
        raise WebError(400, f"action {shown(action)}: keep, quarantine or restore")
    try:
        entry = dash.db.entry(eid)
    except NotFoundError:
        raise _no_entry(eid) from None
    if entry.owner != req.owner:  # owner-only: another owner's entry reads as a missing one
        raise _no_entry(eid)
    if action == "restore":
        note = restore_note(dash.db.restore_entry(eid, by=req.owner))  # what it did not give back (test_restore_message.py)
        return dash.done(req, f"restore: {eid}" + (f"; {note}" if note else ""), "/decay")
    dash.db.confirm_decay(eid, action, by=req.owner, reason=req.field("reason"))  # type: ignore[arg-type]
    return dash.done(req, f"{action}: {eid}", "/decay")


# --- patterns -------------------------------------------------------------------------------------


def patterns(dash: Dashboard, req: Req) -> Response:
    """The owner's pattern library, the latest found first, with the records each rests on."""
    mem = dash.db.owner(req.owner)
    kinds = mem.settings.typed_kinds
    kind = req.arg("kind")
    if kind and kind not in kinds:
        raise WebError(400, f"kind {shown(kind)}: one of the typed kinds ({', '.join(kinds)})")
    return dash.render("patterns.html", req, patterns=mem.patterns(kind or None), kind=kind, kinds=kinds)


# --- timelines ------------------------------------------------------------------------------------


def timelines(dash: Dashboard, req: Req) -> Response:
    mem = dash.db.owner(req.owner)
    # archived calls' sessions too (test_after_a_year.py); the latest only, and one more to know
    # there are older ones: the whole history was read on every view (test_timeline.py)
    sessions = mem.tool_sessions(SESSIONS_SHOWN + 1)
    session = req.arg("session")
    timeline = mem.timeline(session) if session else None
    rows = {s.session: [s.calls, s.archived, s.last] for s in sessions[:SESSIONS_SHOWN]}
    return dash.render("timelines.html", req, sessions=rows, more=len(sessions) > SESSIONS_SHOWN, session=session, timeline=timeline)


def export_timeline(dash: Dashboard, req: Req) -> Response:
    session = req.arg("session")
    if not session:
        raise WebError(400, "session: say which session to export")
    mem = dash.db.owner(req.owner)
    if not mem.timeline(session).steps:  # before exporting: an export is audited, and an empty one exported nothing
        raise WebError(404, f"session {shown(session)}: no tool calls captured (nothing to export)")
    record = mem.export_timeline(session)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", session)[:80]
    body = json.dumps(record, ensure_ascii=False, indent=2, default=str).encode()
    headers = {**SECURITY_HEADERS, "content-disposition": f'attachment; filename="timeline-{name}.json"'}
    return Response(body, media_type="application/json", headers=headers)


# --- audit and schedule ---------------------------------------------------------------------------

_AUDIT_HEAD = ("owner", "id", "action", "at", "by")


def audit(dash: Dashboard, req: Req) -> Response:
    """The owner's audit records, newest first, a page at a time, of one action if asked: the page
    showed the newest 200 alone, so one maintain run's archive records hid every decision before
    it (test_after_a_year.py)."""
    every = dash.db.owner(req.owner).audit()
    actions = sorted({str(r.get("action")) for r in every})
    action = req.arg("action")
    if action and action not in actions:
        raise WebError(400, f"action {shown(action)}: none of your audit records has it ({', '.join(actions) or 'none yet'})")
    records = [r for r in reversed(every) if not action or r.get("action") == action]
    offset = req.arg("offset") or "0"
    if not (offset.isascii() and offset.isdigit()) or (int(offset) >= len(records) > 0):
        raise WebError(400, f"offset {shown(offset)}: a number of records to skip, 0 to {max(len(records) - 1, 0)}")
    start = int(offset)
    page = records[start : start + AUDIT_SHOWN]
    zone = dash.zone()
    rows = [
        (r.get("at"), r.get("action"), r.get("by", ""), "; ".join(f"{k}={_short(v, zone)}" for k, v in r.items() if k not in _AUDIT_HEAD))
        for r in page
    ]

    def at(n: int) -> str:
        return "/audit?" + urllib.parse.urlencode(({"action": action} if action else {}) | ({"offset": str(n)} if n else {}))

    older = start + AUDIT_SHOWN < len(records)
    paging = {
        "first": start + 1 if page else 0, "last": start + len(page), "total": len(records),
        "newer": at(max(start - AUDIT_SHOWN, 0)) if start else "", "older": at(start + AUDIT_SHOWN) if older else "",
    }  # fmt: skip
    return dash.render("audit.html", req, rows=rows, shown=AUDIT_SHOWN, paging=paging, action=action, actions=actions)


def _short(value: Any, zone: ZoneInfo) -> str:
    if isinstance(value, dt.datetime):
        return local_time(value, zone, "%Y-%m-%d %H:%M:%S")
    text = json.dumps(value, ensure_ascii=False, default=str).strip('"')
    return text if len(text) <= 80 else text[:77] + "..."


def schedule(dash: Dashboard, req: Req) -> Response:
    if dash.scheduler is None:
        return dash.render("schedule.html", req, runs=[], jobs=[], cadences={}, lock=None, enabled=False)
    s = dash.scheduler
    cadences = {j.name: j.cadence for j in s.jobs}
    return dash.render(
        "schedule.html", req, runs=s.runs(limit=10), jobs=s.jobs, cadences=cadences, lock=s.lock(), enabled=True, me_holder=s.holder
    )


# --- signing in and out ---------------------------------------------------------------------------


def _local(target: str) -> str:
    """A redirect target on this server only (a path, never ``//host`` or a scheme)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def signin_form(dash: Dashboard) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        if dash.sessions.get(request.cookies.get(COOKIE)) is not None:
            return RedirectResponse(_local(request.query_params.get("next", "/")), status_code=303, headers=SECURITY_HEADERS)
        cookie, value = dash.signin_value(request)
        response = dash.render("signin.html", None, csrf=value, next=_local(request.query_params.get("next", "/")), error="")
        dash.signin_cookie(response, cookie)
        return response

    return endpoint


def signin(dash: Dashboard) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            form = await dash.posted(request, None)
        except WebError as exc:
            return dash.refusal(exc, None)
        token = (form.get("token") or [""])[0]
        target = _local((form.get("next") or ["/"])[0])
        # counted only past the origin and CSRF checks: another site's page cannot lock a person's address out
        address = client_address(request.scope)
        wait = dash.throttle.retry_after(address)  # locked: the token is not looked at, so a guess tells nothing
        owner = owner_of_token(token, dash.tokens) if token and wait is None else None
        if owner is None:  # never echo the token
            error = "unknown token"
            if wait is not None:
                error = f"too many failed sign-ins from your address: try again in {_seconds(wait)}"
            elif token and (wait := dash.throttle.failed(address, "dashboard sign-in")) is not None:
                error = f"unknown token, and too many failed sign-ins from your address: try again in {_seconds(wait)}"
            cookie, value = dash.signin_value(request)
            refused = dash.render("signin.html", None, status=401 if wait is None else 429, csrf=value, next=target, error=error)
            if wait is not None:
                refused.headers["retry-after"] = str(wait)
            dash.signin_cookie(refused, cookie)
            return refused
        session = dash.sessions.new(owner)
        response = RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
        dash.cookie(response, COOKIE, session.id)  # the sign-in value stays: other sign-in tabs still hold it
        return response

    return endpoint


def _seconds(n: int) -> str:
    """A wait as people read it: "45 seconds", "2 minutes" (rounded up), "15 minutes"."""
    if n < 60:
        return f"{n} second{'s' * (n != 1)}"
    minutes = -(-n // 60)
    return f"{minutes} minute{'s' * (minutes != 1)}"


def signout(dash: Dashboard, req: Req) -> Response:
    dash.sessions.drop(req.me.id)
    response = RedirectResponse("/signin", status_code=303, headers=SECURITY_HEADERS)
    response.delete_cookie(COOKIE, path="/", secure=dash.secure, httponly=True, samesite="strict")
    return response


def stylesheet(dash: Dashboard) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return Response(dash.css, media_type="text/css", headers={**SECURITY_HEADERS, "cache-control": "max-age=3600"})

    return endpoint


ROUTES: list[tuple[str, str, Callable[[Dashboard, Req], Response]]] = [
    ("GET", "/", overview),
    ("GET", "/memories", memories),
    ("GET", "/episodes/{id}", episode),
    ("POST", "/episodes/{id}/restore", restore_episode),
    ("POST", "/episodes/{id}/feedback", feedback),
    ("GET", "/review", review),
    ("POST", "/review", decide_review),
    ("GET", "/ceremony", ceremony),
    ("POST", "/ceremony/start", start_ceremony),
    ("POST", "/ceremony/decide", decide_ceremony),
    ("GET", "/decay", decay),
    ("POST", "/decay", decide_decay),
    ("GET", "/patterns", patterns),
    ("GET", "/timelines", timelines),
    ("GET", "/timelines/export", export_timeline),
    ("GET", "/audit", audit),
    ("GET", "/schedule", schedule),
    ("POST", "/signout", signout),
]
