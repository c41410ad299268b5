"""What an answer says beside its memories: how many matched and for what, what matched
outside the window, and why each memory matched (``Hit.why``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from memdb.memory.ids import from_micros, ts_micros
from memdb.memory.postings import TF_UNIT
from memdb.memory.sanitize.fields import tag_marker
from memdb.memory.timephrase import local_day, local_minute, told_within
from memdb.query.plan import Query, Why
from memdb.query.rank import Hits
from memdb.query.results import Hit, Interpretation, quoted

__all__ = ["found_note", "note_and", "noted", "nothing_note", "quoted", "why_matched", "withheld_note"]


def noted(why: Why, note: str) -> tuple[str, ...]:
    """``why`` (made now if it is made on demand) with ``note`` after it."""
    return (*(why if isinstance(why, tuple) else why()), note)


def why_matched(q: Query, h: dict[str, Any], hits: Hits, bm25: float) -> tuple[str, ...]:
    """Why a memory matched ``q``, as ``Hit.why`` shows it: in the window (or telling of a time in
    it), its tags, kind and outcome, session, words with their BM25, and its relevance."""
    why = []
    if q.lo is not None or q.hi is not None:
        ts = ts_micros(h["ts"])
        if (q.lo is None or q.lo <= ts) and (q.hi is None or ts < q.hi):
            why.append(f"in window ({local_minute(h['ts'], q.zone)})")
        else:  # a told match (_told_matches): its text tells of a time in the window
            told = [w for w in h.get("told", ()) if told_within(w[0], w[1], q.lo, q.hi)]
            why.append(f"tells of {', '.join(_told_days(w, q.zone) for w in told)} (recorded {local_minute(h['ts'], q.zone)})")
    why.extend(f"tag {t}" for t in q.tags)
    matched_any = [t for t in q.any_tags if t in h["tags"]]
    if matched_any:
        why.append("tag " + ", ".join(matched_any))
    if q.kind or q.outcome:
        why.append(f"{h['kind']}/{h.get('outcome') or 'no outcome'}")
    if q.session:
        why.append(f"session {q.session}")
    if hits:
        # occurrences as BM25 counts them: a word of an exchange's context counts two thirds
        why.append("text " + ", ".join(f"{t}×{round(tf / TF_UNIT, 3):g}" for t, (tf, _) in hits.items()) + f" (bm25 {bm25:.2f})")
    why.append(f"relevance {float(h['relevance']):.1f}")
    return tuple(why)


def _told_days(window: Sequence[int], zone: str) -> str:
    """A told window as days of ``zone`` (the database's, where its days begin): ``2026-07-01``
    or ``2026-06-22 to 2026-06-28``."""
    first, last = (local_day(from_micros(us), zone) for us in (window[0], window[1] - 1))
    return first if first == last else f"{first} to {last}"


def found_note(
    interp: Interpretation,
    total: int,
    shown: int | str,
    together: tuple[str, ...] = (),
    otherwise: str = "",
    elsewhere: tuple[str, str] = ("", ""),
    shown_memories: Sequence[Hit] = (),
    archived: str = "",
) -> str:
    """The note of an answer with matches: how many, for what, how many are shown (and, when the
    question's tags were widened, that no memory has them all; ``otherwise``: what went otherwise
    than the outcome a yes-or-no question asks about; ``elsewhere``: ``_elsewhere`` of the
    unmatched words; ``shown_memories``: those whose correcting an earlier version is said, as
    "What editor did I use before?" asks for it and the answer did not point to it; ``archived``:
    what archived memories match too)."""
    note = f"No memory has all of tags {', '.join(together)}; these have one of them. " if together else ""
    note += f"{total} match{'es' if total != 1 else ''} for {interp}; showing {shown}.{archived}"
    if otherwise:
        note += " " + otherwise
    corrected = sum(1 for m in shown_memories if m.episode.supersedes)
    if corrected == 1:
        note += " 1 shown memory corrects an earlier version; include_superseded=True to see it."
    elif corrected:
        note += f" {corrected} shown memories correct earlier versions; include_superseded=True to see them."
    if interp.unmatched:
        which, notes = elsewhere
        note += f" Partial: no {which}memory mentions {quoted(interp.unmatched)}; these match the other words.{notes}"
    return note


def nothing_note(
    interp: Interpretation,
    outside: tuple[int, int | None, int, bool, bool] | None,
    cold: str,
    elsewhen: str = "",
    archived: bool = False,
) -> str:
    """The note of an empty answer: nothing found, and what matched outside its window
    (``_outside``: counts before and after, the latest before, whether each count is capped)
    when that was looked at; ``cold`` says what archived memories match, ``elsewhen`` what
    archived ones match outside the window when no active one does (``_archived_elsewhen``);
    ``archived``: whether ``cold`` counts archived matches in the window."""
    if outside is None:
        return f"Nothing found for {interp}." + cold
    before, latest, after, more_before, more_after = outside
    if not (before or after):
        if elsewhen:
            return f"Nothing found for {interp}. No active memory matches at any time either;{elsewhen}" + cold
        either = "No active memory matches" if archived else "Nothing matches"  # the archived ones are counted next
        return f"Nothing found for {interp}. {either} at any time either." + cold
    bits = []
    if before:
        latest_day = f" (latest {local_day(from_micros(latest), interp.zone)})" if latest is not None else ""
        bits.append(f"{'at least ' if more_before else ''}{before} earlier{latest_day}")
    if after:
        bits.append(f"{'at least ' if more_after else ''}{after} later")
    label = "in that window"
    if interp.window:
        label = str(interp.window) if interp.window.phrase == "in the window" else interp.window.phrase
    rest = str(_without_window(interp))
    asked = str(replace(_without_window(interp), include_archived=False, include_superseded=False))
    if asked.startswith("everything"):  # the window is all that was asked (archived too, or not): say it whole
        return f"Nothing found for {interp}; {' and '.join(bits)}." + cold
    return f"Nothing {label} for {rest}; {' and '.join(bits)}." + cold


def note_and(note: Callable[[], str], more: str) -> str:
    """A note formatted when first read (``nothing_note``'s partial), and a sentence after it."""
    return f"{note()} {more}"


def _without_window(interp: Interpretation) -> Interpretation:
    return replace(interp, window=None)


def withheld_note(interp: Interpretation, tags: bool = False) -> str:
    """The note of a text or question whose only words were personal data or secrets
    (``interp.withheld``), or (``tags``) of a tag filter that needs a tag that was
    (``interp.withheld_tags``): nothing, said plainly. Memories hold such values as placeholders
    only, and such a tag as a marker of its kind, so none can be found by one, and memories about
    other things would only stand in for it."""
    values = interp.withheld_tags if tags else interp.withheld
    one = len(values) == 1
    if tags:
        whose = "the tag" if one else "the tags"
        held = f"memories keep such a tag only as a marker of its kind ({', '.join(dict.fromkeys(map(tag_marker, values)))})"
        instead = "Filter by other tags, or search by words of what you are looking for."
    else:
        whose = "the question's" if interp.question else "the text's"
        held = "memories hold such values only as placeholders"
        instead = "Search by other words of what you are looking for."
    return (
        f"Nothing found: {whose} {', '.join(values)} {'is' if one else 'are'} personal data or a secret, never searched as "
        f"{held}, so nothing about other things is offered in its place ({interp}). {instead}"
    )
