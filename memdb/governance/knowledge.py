"""Knowledge: the semantic store beside the episodic one, and the gates every entry passes.

An entry (a reflected lesson or a deliberate save) is born ``pending`` and private in one
review queue, whatever wrote it; a person approves or rejects it, and there is no other way
to ``approved``. An approved entry stays private until its owner shares it at a ceremony, and
can be quarantined (reversibly) or archived. A rejection keeps only a tombstone, a SHA-256 of
the normalised text and keyed hashes of its word shingles, so the same content cannot come
back through the queue from any owner; an erasure request that takes the rejected lesson takes
its tombstone too (the hashes, with their key beside them, confirm a guessed word), unless
another owner's rejection of the same content still holds it. The weekly decay pass flags a
few idle entries; a person keeps or quarantines each. Nothing here deletes an approved entry.

Layout (owner first wherever the data is an owner's)::

    ^KN(owner, id) = {...}    the entry: text, cites, state, visibility, status, who decided and when
    ^KNQ(owner, id)           the review queue: pending entries
    ^KNA(owner, id)           approved entries in active use (not quarantined, not archived)
    ^KNS(team, id) = owner    entries shared with a team (read only through membership)
    ^KNF(owner, id) = {...}   entries flagged by decay, awaiting a person
    ^KNID(id) = owner         id -> owner, for the administrative calls that take bare ids
    ^KNT(sha256) = {...}      tombstones of rejected content, database-wide, without text
    ^KNW(week) = n            entries flagged by decay in the local week starting that day (the budget)
    ^KNC(team, id) = {...}    ceremony agendas ("*" when every team met at once): when, the items, which were carried over
                              (an erased entry's id leaves them: ``_off_agendas``)
    ^KNM("salt")              the key of the shingle hashes (random per database)
    ^KNM("agendas tidied")    set once the ids older erasures left on agendas were taken off
    ^KNN(owner, "entries")    entries written per owner (also: which owners have knowledge)
    ^AUDIT(owner, id)         every write and decision: who, when, what (a hash, not the text)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import secrets
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict

from memdb.errors import DuplicateError, NotFoundError, PermissionDeniedError, SanitizerError, ValidationError
from memdb.memory.audit import names_person
from memdb.memory.episodes import Episodes
from memdb.memory.ids import is_id, new_id
from memdb.memory.models import Episode, check_owner, check_tag_count, personal_data_in, shown_name, unstorable, utc
from memdb.memory.sanitize import sanitize_fields, shown
from memdb.memory.sanitize.fields import bound_sanitized
from memdb.memory.text import normalize_tag, tokenize
from memdb.query.plan import QUESTION_CHARS, sanitized, tag_filters, unsearched

__all__ = [
    "Agenda",
    "AgendaItem",
    "DecayReport",
    "Duplicate",
    "Entry",
    "Knowledge",
    "content_digest",
    "jaccard",
    "restore_note",
    "shingles",
    "unshared_note",
]

ENTRY_CHARS = 1000
ALL_TEAM = "all"
_AGENDAS_TIDIED = ("agendas tidied",)  # ^KNM: the ids older erasures left on agendas were taken off (tidy_agendas)
_DECISIONS = {"share": "share", "private": "private", "keep": "private", "keep_private": "private", "archive": "archive"}

EntryState = Literal["pending", "approved", "rejected"]
Visibility = Literal["private", "shared"]
EntryStatus = Literal["active", "quarantined", "archived", "erased"]


class Entry(BaseModel):
    """One knowledge entry as callers see it (no shingle hashes)."""

    model_config = ConfigDict(frozen=True)

    id: str
    owner: str
    text: str  # "" once rejected: only the tombstone's hashes remain
    source: Literal["reflection", "save"]
    cites: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    state: EntryState = "pending"
    visibility: Visibility = "private"
    status: EntryStatus = "active"
    shared_with: tuple[str, ...] = ()
    created: dt.datetime
    decided_by: str | None = None
    decided_at: dt.datetime | None = None
    reason: str | None = None
    ceremony: Literal["kept", "shared", "archived"] | None = None
    agendas: int = 0
    flagged_at: dt.datetime | None = None
    flag_reason: str | None = None  # why a flag other than decay's asks a person to look (a corrected source)
    kept_at: dt.datetime | None = None
    injected: int = 0
    last_injected: dt.datetime | None = None
    last_retrieved: dt.datetime | None = None
    expired_cites: tuple[str, ...] = ()  # cited episodes purged by retention: the lesson stays, its sources are gone
    # teams a restore did not share it with again: another owner's near copy was shared there while
    # it was quarantined (``restore``); it is on that team's agenda until its owner rules again
    unshared: tuple[str, ...] = ()
    hash: str

    def line(self) -> str:
        """One line for a prompt or a listing, with the owner's attribution (and, while a person
        has not looked, why it is under review)."""
        where = ", ".join(self.shared_with) if self.visibility == "shared" else "private"
        review = f" (under review: {self.flag_reason})" if self.flag_reason else ""
        return f"- [{self.owner}; {where}] {self.text}{review}".replace("\n", " ")


_ENTRY_FIELDS = tuple(Entry.model_fields)


def to_entry(record: Mapping[str, Any]) -> Entry:
    return Entry.model_validate({k: record[k] for k in _ENTRY_FIELDS if k in record})


# --- similarity: pure functions ----------------------------------------------------------------


def shingles(text: str) -> set[str]:
    """Word 1- and 2-shingles of the index terms of ``text`` (case, punctuation and stopwords folded)."""
    terms = tokenize(text)
    return set(terms) | {f"{a} {b}" for a, b in itertools.pairwise(terms)}


def content_digest(text: str) -> str:
    """SHA-256 of the normalised terms: the same words in other case or spacing give the same hash."""
    return hashlib.sha256(" ".join(tokenize(text)).encode("utf-8", "surrogatepass")).hexdigest()


def hashed_shingles(text: str, key: bytes) -> list[int]:
    """Keyed 64-bit hashes of the shingles, sorted: what a tombstone keeps instead of words."""
    return sorted(
        {
            int.from_bytes(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), key=key, digest_size=8).digest(), "big")
            for s in shingles(text)
        }
    )


def jaccard(a: Iterable[Any], b: Iterable[Any]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets: nothing is a duplicate of nothing)."""
    sa, sb = set(a), set(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


@dataclass(frozen=True)
class Duplicate:
    """Why a proposal is not new: it matches an approved or pending entry, or a tombstone."""

    against: Literal["approved", "pending", "rejected"]
    ref: str  # entry id, or the tombstone's hash
    similarity: float


# --- reports ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgendaItem:
    """One approved lesson on a ceremony agenda: private, or not shared with (some of) the team.

    ``carried_over`` when the same team's previous agenda had it and nobody ruled on it since;
    ``lost_shares`` names teams it was shared with that are no longer configured (its share
    reaches nobody there, so its owner rules again)."""

    entry: Entry
    carried_over: bool
    lost_shares: tuple[str, ...] = ()


@dataclass(frozen=True)
class Agenda:
    """A share ceremony's agenda: each member's approved private lessons nobody has ruled on."""

    id: str
    team: str | None
    at: dt.datetime
    items: list[AgendaItem]

    def by_owner(self) -> dict[str, list[AgendaItem]]:
        out: dict[str, list[AgendaItem]] = {}
        for item in self.items:
            out.setdefault(item.entry.owner, []).append(item)
        return out

    def __str__(self) -> str:
        head = f"ceremony {self.id} ({self.team or 'every team'}) at {self.at:%Y-%m-%d %H:%M} UTC: {len(self.items)} items"
        lines = [head]
        for owner, items in self.by_owner().items():
            lines.append(f"{owner}:")
            lines.extend(f"  {i.entry.id}{_item_notes(i)}: {i.entry.text}" for i in items)
        return "\n".join(lines)


@dataclass
class DecayReport:
    """What one decay pass did: entries flagged (never more than the week's budget) and what it left."""

    now: dt.datetime
    week: str
    flagged: list[Entry] = field(default_factory=list)
    idle: int = 0
    over_budget: int = 0
    budget_left: int = 0

    def __str__(self) -> str:
        return (
            f"decay at {self.now:%Y-%m-%d %H:%M} UTC (week of {self.week}): {len(self.flagged)} flagged of {self.idle} idle"
            f"{f', {self.over_budget} left for a later week' if self.over_budget else ''}; {self.budget_left} flags left this week"
        )


# --- the store --------------------------------------------------------------------------------


class Knowledge:
    """Entries, the review queue, tombstones, sharing and decay for one database."""

    def __init__(self, episodes: Episodes) -> None:
        self.episodes = episodes
        space = episodes.space
        self.space = space
        self.entries = space["KN"]
        self.queue = space["KNQ"]
        self.active = space["KNA"]
        self.shared = space["KNS"]
        self.flags = space["KNF"]
        self.ids = space["KNID"]
        self.tombstones = space["KNT"]
        self.weeks = space["KNW"]
        self.ceremonies = space["KNC"]
        self.meta = space["KNM"]
        self.stats = space["KNN"]
        self.audit = episodes.audit
        self._salt: bytes | None = None
        self._frame_phrases: tuple[str, ...] = ()
        self._frame: tuple[frozenset[int], ...] | None = None

    # --- teams ----------------------------------------------------------------------------------

    def owners(self) -> list[str]:
        """Owners with episodes or knowledge."""
        return sorted(set(self.episodes.owners()) | {str(o) for o in self.stats.children()})

    def teams(self) -> dict[str, list[str]]:
        """Configured teams; without any, every owner of the database is one team, ``all``."""
        configured = self.episodes.settings.teams
        return {t: list(m) for t, m in configured.items()} if configured else {ALL_TEAM: self.owners()}

    def teams_of(self, owner: str) -> list[str]:
        configured = self.episodes.settings.teams
        if not configured:
            return [ALL_TEAM]
        return [t for t, members in configured.items() if owner in members]

    def reading_teams(self, owner: str) -> list[str]:
        """The teams whose shares ``owner`` reads: their own, and ``all`` once teams are configured
        and the owner is in one. A share with ``all`` was a share with everyone; configuring teams
        must not silently take it from them (test_configuring_teams_keeps_lessons_shared_with_all)."""
        teams = self.teams_of(owner)
        configured = self.episodes.settings.teams
        if configured and teams and ALL_TEAM not in configured:
            teams.append(ALL_TEAM)
        return teams

    def reaches(self, shared_with: Iterable[str], team: str) -> bool:
        """Whether a lesson shared with the teams ``shared_with`` reaches the members of ``team``:
        shared with it, or with ``all`` while ``all`` is not a configured team (``reading_teams``).
        The one rule for whether a team reads a share: the ceremony's agenda, the replay check of
        ``decide`` and the dashboard's ruling ask it."""
        sw = set(shared_with)
        return team in sw or (ALL_TEAM in sw and ALL_TEAM not in (self.episodes.settings.teams or {}))

    def _lost(self, shared_with: Iterable[str]) -> tuple[str, ...]:
        """Shares with teams no longer configured (renamed or removed): they reach nobody."""
        live = {*(self.episodes.settings.teams or {}), ALL_TEAM}  # teams() would read every owner to say "all"
        return tuple(t for t in shared_with if t not in live)

    def _check_team(self, team: str) -> list[str]:
        teams = self.teams()
        if team not in teams:
            raise ValidationError(f"team {shown(team)}: not configured (teams: {', '.join(teams) or 'none'})")
        return teams[team]

    # --- similarity ------------------------------------------------------------------------------

    def salt(self) -> bytes:
        """The key of the shingle hashes, made once per database."""
        if self._salt is None:
            value = self.meta.get(("salt",))
            if value is None:
                with self.space.transaction():
                    value = self.meta.get(("salt",))
                    if value is None:
                        value = secrets.token_bytes(16)
                        self.meta.set(("salt",), value)
            self._salt = bytes(value)
        return self._salt

    def discount(self, phrases: Iterable[str]) -> None:
        """Leave a reflector's fixed wording (``phrases``) out of a similarity where both lessons
        hold a phrase of it whole: the offline reflector's template alone made lessons about two
        different tools 0.70 alike, so one rejection refused every other tool's lesson
        (test_template_words_make_no_duplicate); its single words stay, so two lessons written by
        hand that share "check" or "inputs" are compared whole (a review's find:
        test_hand_written_lessons_are_compared_whole)."""
        self._frame_phrases = tuple(dict.fromkeys((*self._frame_phrases, *phrases)))
        self._frame = None

    def similarity(self, a: Iterable[int], b: Iterable[int]) -> float:
        """Jaccard of two sets of shingle hashes without the template phrases both hold whole
        (``discount``): what a lesson says, not the template it is said in. A side made of
        template words only is compared whole."""
        if self._frame is None:
            phrases = (frozenset(hashed_shingles(p, self.salt())) for p in self._frame_phrases)
            self._frame = tuple(p for p in phrases if len(p) >= 3)  # two words or more: a phrase, not a word
        sa, sb = set(a), set(b)
        both = [p for p in self._frame if p <= sa and p <= sb]
        if not both:
            return jaccard(sa, sb)
        frame = frozenset().union(*both)
        ca, cb = sa - frame, sb - frame
        return jaccard(ca, cb) if ca and cb else jaccard(sa, sb)

    def clean(self, text: str, what: str = "entry") -> str:
        """Sanitized (fail-closed), bounded text with at least one word; what every entry stores.
        ValidationError for text the store cannot keep (a lone surrogate, which UTF-8 cannot
        encode: a model's lesson holding one raised from the store, out of reflect and maintain)."""
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"{what} text {shown(text)}: say something")
        if (problem := unstorable(f"{what} text", text)) is not None:
            raise ValidationError(problem)
        try:
            sanitized = sanitize_fields(self.episodes.sanitizer, {"text": text.strip()})
            out = dict(sanitized)
            bound_sanitized(lambda texts: sanitize_fields(self.episodes.sanitizer, texts), out, {"text": ENTRY_CHARS}, sanitized)
        except SanitizerError as exc:
            self.meta.increment(("dropped",))
            raise SanitizerError(f"{what}: dropped, nothing written ({exc})") from None
        clean: str = out["text"]
        if not tokenize(clean):
            raise ValidationError(f"{what} text {shown(text)}: has no words to index (only stopwords or placeholders)")
        return clean

    def duplicate(self, owner: str, clean_text: str) -> Duplicate | None:
        """The first approved or pending entry (own or shared with the owner's teams), or the
        tombstone, that ``clean_text`` nearly repeats; None when it is new."""
        threshold = self.episodes.settings.duplicate_threshold
        digest = content_digest(clean_text)
        sh = hashed_shingles(clean_text, self.salt())
        stone = self.tombstone_of(digest, sh)
        if stone is not None:
            return stone
        for rec in self._visible_records(owner):
            if rec["state"] == "rejected":
                continue
            sim = 1.0 if rec["hash"] == digest else self.similarity(sh, rec.get("sh") or ())
            if sim >= threshold:
                return Duplicate(rec["state"], rec["id"], sim)
        return None

    def tombstone_of(self, digest: str, sh: Iterable[int]) -> Duplicate | None:
        """The tombstone that content with this digest and these shingle hashes nearly repeats, if any."""
        if self.tombstones.get((digest,)) is not None:
            return Duplicate("rejected", digest, 1.0)
        threshold = self.episodes.settings.duplicate_threshold
        hashes = set(sh)
        for subs, stone in self.tombstones.items():
            sim = self.similarity(hashes, stone["sh"])
            if sim >= threshold:
                return Duplicate("rejected", str(subs[0]), sim)
        return None

    def refuse_shared_copy(self, rec: Mapping[str, Any], teams: Iterable[str], memo: dict[str, Any] | None = None) -> None:
        """DuplicateError when ``rec`` nearly repeats another owner's entry already shared with one
        of ``teams``: both shared, the team read the same lesson twice, each costing prompt room
        (test_sharing_what_the_team_already_reads_is_refused). ``memo`` keeps each team's shared
        records for the decisions of one ceremony (read once: a read of every share per lesson
        decided made 300 shares 9 s; a review's find)."""
        threshold = self.episodes.settings.duplicate_threshold
        memo = {} if memo is None else memo
        mine = set(rec.get("sh") or ())
        for team in teams:
            # the team's members read what is shared with ``all`` too, once teams are configured
            # (reading_teams): a copy shared with everyone before teams were set is read twice as
            # well (test_a_copy_shared_with_all_is_read_by_the_team_too)
            for source in dict.fromkeys((team, *((ALL_TEAM,) if self.reaches((ALL_TEAM,), team) else ()))):
                for other in self._live_shares(source, memo):
                    owner = other["owner"]
                    if owner == rec["owner"]:
                        continue
                    theirs = other.get("sh") or ()
                    if other["hash"] != rec["hash"] and mine.isdisjoint(theirs):
                        continue  # nothing in common: no similarity to compute
                    sim = 1.0 if other["hash"] == rec["hash"] else self.similarity(mine, theirs)
                    if sim >= threshold:
                        where = f"team {team!r}" if source == team else f"{ALL_TEAM!r}, which team {team!r} reads"
                        raise DuplicateError(
                            f"entry {rec['id']!r}: nearly repeats entry {other['id']!r} of {owner!r}, already shared with "
                            f"{where} (similarity {sim:.2f}); the team reads that one "
                            "(keep yours private, archive it, or share it with another team)"
                        )

    def _live_shares(self, team: str, memo: dict[str, Any]) -> list[dict[str, Any]]:
        """The entries shared with ``team`` that its members read now: approved and in active use.
        A quarantined copy is read by no one, so it blocks no share (test_a_quarantined_copy_does_not_stop_sharing)."""
        if team not in memo:
            memo[team] = [
                other
                for subs, owner in self.shared.items((team,))
                if (other := self.entries.get((owner, str(subs[1])))) is not None
                and other["state"] == "approved"
                and other["status"] == "active"
            ]
        out: list[dict[str, Any]] = memo[team]
        return out

    def _visible_records(self, owner: str) -> Iterable[dict[str, Any]]:
        """Records the owner may compare against: all of their own, and entries shared with their teams."""
        seen: set[str] = set()
        for _, rec in self.entries.items((owner,)):
            seen.add(rec["id"])
            yield rec
        for team in self.reading_teams(owner):
            for subs, other in self.shared.items((team,)):
                eid = str(subs[1])
                if eid not in seen:
                    seen.add(eid)
                    rec = self.entries.get((other, eid))
                    if rec is not None:
                        yield rec

    def uncited(self, owner: str, cites: Iterable[str]) -> list[str]:
        """The ids among ``cites`` that are not (or no longer) episodes of ``owner``; call it inside
        the write transaction, so an erasure cannot slip in between the check and the write."""
        return [c for c in cites if self.episodes.header(owner, c) is None]

    # --- the only way in --------------------------------------------------------------------------

    def submit(
        self,
        owner: str,
        text: str,
        *,
        source: Literal["reflection", "save"],
        cites: Iterable[str] = (),
        tags: Iterable[str] = (),
        now: dt.datetime | None = None,
    ) -> Entry:
        """Queue a new entry, pending and private (deliberate saves and reflection alike).

        Raises DuplicateError when it nearly repeats an approved or pending entry or rejected
        content; ValidationError for text without words, bad tags or citations that are not
        the owner's episodes; SanitizerError (nothing written) when the sanitizer fails.
        """
        check_owner(owner)
        at = utc(now, "now") if now is not None else self.episodes.now()
        clean = self.clean(text, "lesson" if source == "reflection" else "save")
        cited = list(dict.fromkeys(_strings("cites", cites, "episode id")))
        given = _strings("tags", tags, "tag")
        check_tag_count("tags", given, "an entry holds")  # by their count, before the sanitizer reads each
        raw_tags = self.episodes.clean(owner, {"tags": given}, {}, "tags")["tags"]  # sanitized as capture's are
        norm_tags = list(dict.fromkeys(normalize_tag(t) for t in raw_tags))
        with self.space.transaction():
            # checked here, not before: an erasure committed meanwhile must not leave an entry citing nothing
            missing = self.uncited(owner, cited)
            if missing:
                raise ValidationError(
                    f"cites {shown(missing[0])}: not an episode of owner {owner!r} (an entry cites its owner's episodes only)"
                )
            dup = self.duplicate(owner, clean)
            if dup is not None:
                raise DuplicateError(f"{source} {_shown(clean)}: nearly repeats {_describe(dup)} (similarity {dup.similarity:.2f})")
            # a scope of their own: entry ids reach team members, and must not count the owner's episodes
            eid = new_id(at, f"knowledge {owner}")
            while self.ids.get((eid,)) is not None:  # another process (or owner) took it
                eid = new_id(at, f"knowledge {owner}")
            record: dict[str, Any] = {
                "id": eid, "owner": owner, "text": clean, "source": source, "cites": cited, "tags": norm_tags,
                "state": "pending", "visibility": "private", "status": "active", "shared_with": [], "created": at,
                "agendas": 0, "injected": 0, "hash": content_digest(clean), "sh": hashed_shingles(clean, self.salt()),
            }  # fmt: skip
            self.entries.set((owner, eid), record)
            self.queue.set((owner, eid), "")
            self.ids.set((eid,), owner)
            self.stats.increment((owner, "entries"))
            self._audit(owner, at, "submit", record, by=owner if source == "save" else "reflection", source=source)
        return to_entry(record)

    # --- review ----------------------------------------------------------------------------------

    def pending(self, owner: str | None = None, limit: int | None = None) -> list[Entry]:
        """The review queue, oldest first (one owner's, or everyone's)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValidationError(f"limit {shown(limit)}: must be a non-negative int, or None for the whole queue")
        owners = [check_owner(owner)] if owner is not None else [str(o) for o in self.queue.children()]
        out = [to_entry(self.entries[(o, str(subs[1]))]) for o in owners for subs, _ in self.queue.items((o,))]
        out.sort(key=lambda e: e.id)
        return out if limit is None else out[:limit]

    def approve(self, ids: str | Iterable[str], *, by: str, now: dt.datetime | None = None) -> list[Entry]:
        """Approve pending entries (all or none); the entry stays private until its owner shares it.

        DuplicateError (nothing approved) when an entry repeats rejected content: a copy queued
        by another owner before the rejection must not bring it back (test_approve_refuses_tombstoned_content).
        ValidationError (nothing approved) when none of the episodes an entry cites is left: no
        evidence backs it (test_approve_refuses_a_lesson_no_episode_backs_any_more).
        """
        at, who = self._when(now), _person(by)
        with self.space.transaction():
            records = [self._require(eid, state="pending") for eid in _id_list(ids)]
            for rec in records:
                cites = rec.get("cites") or ()
                if cites and len(self.uncited(rec["owner"], cites)) == len(cites):
                    raise ValidationError(
                        f"entry {rec['id']!r}: none of the {len(cites)} episodes it cites is left (purged by retention or erased); "
                        "no evidence backs it, so it cannot be approved (reject it, or save the lesson again citing live episodes)"
                    )
                stone = self.tombstone_of(rec["hash"], rec.get("sh") or ())
                if stone is not None:
                    raise DuplicateError(
                        f"entry {rec['id']!r}: nearly repeats rejected content (tombstone {stone.ref[:12]}, similarity "
                        f"{stone.similarity:.2f}); it cannot be approved (reject it instead)"
                    )
            out = []
            for rec in records:
                new = {**rec, "state": "approved", "decided_by": who, "decided_at": at}
                self.entries.set((rec["owner"], rec["id"]), new)
                self.queue.kill((rec["owner"], rec["id"]))
                self.active.set((rec["owner"], rec["id"]), "")
                self._audit(rec["owner"], at, "approve", rec, by=who)
                out.append(to_entry(new))
        return out

    def reject(self, ids: str | Iterable[str], *, by: str, reason: str = "", now: dt.datetime | None = None) -> list[Entry]:
        """Reject pending entries (all or none): the text goes, a tombstone of hashes stays (until
        an erasure request takes the entry: ``_unbury``).

        Other owners' pending copies of the content (queued before the rejection, when their
        private entries were not compared) are rejected with it, by the same person: they could
        never be approved, and keeping them would keep rejected text on disk. Only the entries
        asked for are returned; the others are in their owners' audit trails.
        """
        at, who = self._when(now), _person(by)
        if not isinstance(reason, str):
            raise ValidationError(f"reason {shown(reason)}: must be a str (say why, or leave it empty)")
        reason = self.audit.clean("reject", {"reason": reason})["reason"]  # kept in the entry too: sanitized first
        with self.space.transaction():
            records = [self._require(eid, state="pending") for eid in _id_list(ids)]
            out = [self._reject(rec, who, at, reason or None) for rec in records]
            # only this rejection's stones: copies of older ones went when those were rejected
            threshold = self.episodes.settings.duplicate_threshold
            stones = [(rec["hash"], set(rec.get("sh") or ())) for rec in records]
            for owner in [str(o) for o in self.queue.children()]:
                for subs, _ in list(self.queue.items((owner,))):
                    rec = self.entries.get((owner, str(subs[1])))
                    if rec is None:
                        continue
                    sh = set(rec.get("sh") or ())
                    ref = next((d for d, s in stones if d == rec["hash"] or self.similarity(sh, s) >= threshold), None)
                    if ref is not None:
                        self._reject(dict(rec), who, at, f"repeats rejected content (tombstone {ref[:12]})")
        return out

    def _reject(self, rec: dict[str, Any], who: str, at: dt.datetime, reason: str | None) -> Entry:
        """Drop a pending entry's text and leave (or count) the tombstone of its content."""
        new = {k: v for k, v in rec.items() if k != "sh"}
        new.update(text="", state="rejected", decided_by=who, decided_at=at, reason=reason)
        self.entries.set((rec["owner"], rec["id"]), new)
        self.queue.kill((rec["owner"], rec["id"]))
        stone = self.tombstones.get((rec["hash"],))
        if stone is None:
            self.tombstones.set((rec["hash"],), {"sh": rec.get("sh") or [], "at": at, "count": 1})
        else:
            self.tombstones.set((rec["hash"],), {**stone, "count": int(stone.get("count", 1)) + 1})
        self._audit(rec["owner"], at, "reject", rec, by=who, reason=reason)
        return to_entry(new)

    def erase_citing(self, owner: str, episode_ids: set[str], at: dt.datetime, action: str = "erase") -> list[str]:
        """Erasure reaches derived knowledge: an entry of ``owner`` citing an erased episode loses
        its text and leaves every queue, index and team; the record keeps its hash for the audit.

        Retention is routine pruning, not a request (DESIGN 5): an entry citing episodes purged
        by it keeps its text and state, and records which sources expired; but a pending one
        whose every cited episode it purged is no candidate any more (a reviewer would approve a
        claim nothing backs), and goes as an erased one does
        (test_a_pending_lesson_whose_evidence_expired_leaves_the_queue)."""
        erased = []
        taken: list[Mapping[str, Any]] = []
        for subs, rec in list(self.entries.items((owner,))):
            gone = set(rec.get("cites") or ()) & episode_ids
            if not gone:
                continue
            eid = str(subs[1])
            if action == "retention":
                expired = sorted({*rec.get("expired_cites", ()), *gone})
                if rec["state"] == "pending" and set(rec["cites"]) <= set(expired):
                    self._erase({**rec, "expired_cites": expired}, at, "every episode it cites expired before review", by="retention")
                    erased.append(eid)
                    continue
                self.entries.set((owner, eid), {**rec, "expired_cites": expired})
                self._audit(owner, at, "sources_expired", rec, by="retention", episodes=sorted(gone))
                continue
            self._erase(rec, at, "cited an erased episode")
            erased.append(eid)
            taken.append(rec)
        self._off_agendas(taken)  # (retention erases pending entries: never on an agenda)
        self._unbury(taken)
        return erased

    def erase_requested(
        self, owner: str, at: dt.datetime, tags: Collection[str], since: dt.datetime | None, until: dt.datetime | None
    ) -> list[str]:
        """``Erasure.requests``: an erasure of everything (no ``tags``) takes every entry the owner
        wrote, in any state, cited or not (a saved lesson cites nothing, and was served to the
        owner's teams); one by tags takes the entries carrying any of them, created within
        ``since``/``until`` when given. Each keeps only its hash, as ``erase_citing`` leaves it;
        the erasure redacts the audit records about it, given the ids returned
        (test_an_owner_s_erasure_takes_their_lessons)."""
        chosen = []
        before = []  # erased already: by an erasure that left its id on the agendas, in older versions
        for _, rec in list(self.entries.items((owner,))):
            if rec.get("status") == "erased":
                before.append(rec)
                continue
            if tags and not set(tags) & set(rec.get("tags") or ()):
                continue
            if (since is not None and rec["created"] < since) or (until is not None and rec["created"] >= until):
                continue
            chosen.append(rec)
        for rec in chosen:
            self._erase(rec, at, "erased on request" if not tags else "carried an erased tag")
        self._off_agendas([*before, *chosen])
        self._unbury(chosen)
        return [rec["id"] for rec in chosen]

    def _unbury(self, erased: Iterable[Mapping[str, Any]]) -> None:
        """An erasure request takes the tombstones of the rejected lessons it erased (as they were
        before it): a tombstone's keyed shingle hashes, with their key in ``^KNM``, confirm a
        guessed word of the lesson offline (test_an_erasure_request_takes_the_tombstones_of_the_lessons_it_erases).
        A tombstone another rejected entry still shares (another owner's copy) stays, counting one
        rejection less. The content may be queued again, for a reviewer to judge anew; retention
        never comes here (routine pruning keeps tombstones)."""
        digests: dict[str, int] = {}
        for rec in erased:
            if rec.get("state") == "rejected" and rec.get("status") != "erased":
                digests[rec["hash"]] = digests.get(rec["hash"], 0) + 1
        if not digests:
            return
        left = {
            rec["hash"]
            for _, rec in self.entries.items()
            if rec.get("hash") in digests and rec.get("state") == "rejected" and rec.get("status") != "erased"
        }
        for digest, n in digests.items():
            stone = self.tombstones.get((digest,))
            if stone is None:
                continue
            if digest in left:
                self.tombstones.set((digest,), {**stone, "count": max(int(stone.get("count", 1)) - n, 1)})
            else:
                self.tombstones.kill((digest,))

    def tidy_agendas(self) -> int:
        """Once per database, at open: take off the agendas the ids of entries an erasure by an
        older memdb erased and left there (``_off_agendas`` takes them now, as it erases). One read
        once done. Returns how many agendas were rewritten."""
        if self.meta.get(_AGENDAS_TIDIED):
            return 0
        with self.space.transaction():
            if self.meta.get(_AGENDAS_TIDIED):  # another process got there first
                return 0
            erased = []
            for _, agenda in self.ceremonies.items(()):
                for eid in {*agenda["items"], *agenda.get("carried", ())}:
                    owner = self.ids.get((eid,))
                    rec = self.entries.get((owner, eid)) if owner is not None else None
                    if rec is not None and rec.get("status") == "erased":
                        erased.append(rec)
            rewritten = self._off_agendas(erased)
            self.meta.set(_AGENDAS_TIDIED, True)
        return rewritten

    def _off_agendas(self, erased: Iterable[Mapping[str, Any]]) -> int:
        """Take erased entries' ids off every kept agenda (``^KNC``), in the erasure's transaction:
        an id is the time its owner saved the lesson, derived data the erasure takes
        (test_an_erasure_takes_the_lesson_off_every_agenda). An agenda left empty stays, saying
        what it said when its items vanished (``latest_agenda`` left erased ones out): the next
        ceremony reads it for what was carried over, and an older agenda in its place would mark
        a lesson carried that this one did not have. Only entries ever put on an agenda
        (``agendas``) send it reading the agendas."""
        ids = {rec["id"] for rec in erased if int(rec.get("agendas", 0))}
        if not ids:
            return 0
        rewritten = 0
        for subs, agenda in list(self.ceremonies.items(())):
            if ids.isdisjoint(agenda["items"]) and ids.isdisjoint(agenda.get("carried", ())):
                continue
            new = {**agenda, "items": [i for i in agenda["items"] if i not in ids]}
            if "carried" in agenda:  # (agendas kept before it say nothing was carried)
                new["carried"] = [i for i in agenda["carried"] if i not in ids]
            self.ceremonies.set(subs, new)
            rewritten += 1
        return rewritten

    def _erase(self, rec: Mapping[str, Any], at: dt.datetime, reason: str, by: str = "erasure") -> None:
        """Empty an entry (text, tags, shingles, the ids it cites) and take it out of every queue,
        index and team. Its cites named the erased episodes, times of erased data outside the
        audit trail (test_an_erased_entry_names_no_episode_it_cited)."""
        owner, eid = rec["owner"], rec["id"]
        new = {k: v for k, v in rec.items() if k != "sh"}
        new.update(
            text="", tags=[], cites=[], expired_cites=[], state="rejected", status="erased", decided_by=by, decided_at=at, reason=reason
        )
        self.entries.set((owner, eid), new)
        for g in (self.queue, self.active, self.flags):
            g.kill((owner, eid))
        for team in list(self.shared.children()):
            self.shared.kill((team, eid))
        self._audit(owner, at, "erase", rec, by=by, reason=reason)

    def source_corrected(self, owner: str, old_id: str, old: Mapping[str, Any], new: Episode, changed: list[str], at: dt.datetime) -> None:
        """A cited episode was corrected (``supersede``, in its transaction): every live entry of
        ``owner`` citing it cites the new version instead (which cites the old one), and an
        approved entry in active use is flagged for a person when the correction changed its
        outcome or its lesson: "Recurring failure ..." resting on a failure corrected to a
        success was kept, cited and injected as it was (test_a_lesson_on_a_corrected_episode_is_recited_and_flagged).
        The flag asks, as decay's does: keep, or quarantine (``confirm_decay``); the entry stays
        approved meanwhile, its line saying it is under review. Decay's weekly budget is not spent."""
        if not int(self.stats.get((owner, "entries"), 0)):
            return  # (most owners, most corrections: a fact's new value supersedes the old one)
        moved = [f for f in ("outcome", "lesson") if f in changed]
        what = f"outcome {old.get('outcome')} -> {new.outcome}" if "outcome" in moved else "lesson changed"
        why = f"a record it cites was corrected ({what})"
        for _, rec in list(self.entries.items((owner,))):
            cites = rec.get("cites") or ()
            if old_id not in cites or rec["state"] == "rejected":
                continue
            eid = rec["id"]
            new_rec = {**rec, "cites": list(dict.fromkeys(new.id if c == old_id else c for c in cites))}
            flag = bool(moved) and rec["state"] == "approved" and rec["status"] == "active"
            # quarantined or archived: no one reads it now, but a restore must not bring it back
            # as if nothing had happened; ``restore`` raises the flag (test_decay_flags.py)
            held = bool(moved) and rec["state"] == "approved" and rec["status"] in ("quarantined", "archived")
            if flag or held:
                new_rec.update(flagged_at=at, flag_reason=why)
            if flag:
                self.flags.set((owner, eid), {"at": at, "why": why})
            self.entries.set((owner, eid), new_rec)
            self._audit(
                owner, at, "source_corrected", rec, by="supersede", episode=old_id, successor=new.id,
                flagged=flag or None, flag_on_restore=held or None,
            )  # fmt: skip

    # --- reads -----------------------------------------------------------------------------------

    def get(self, entry_id: str) -> Entry:
        """Any entry by id (administrative: review, ceremony and decay work across owners)."""
        return to_entry(self._require(entry_id))

    def own(self, owner: str, state: str | None = None) -> list[Entry]:
        """One owner's entries in any state, oldest first."""
        if state is not None and state not in ("pending", "approved", "rejected"):
            raise ValidationError(f"state {shown(state)}: one of pending, approved, rejected")
        return [to_entry(rec) for _, rec in self.entries.items((owner,)) if state is None or rec["state"] == state]

    def readable(self, owner: str) -> list[Entry]:
        """Approved entries in active use that ``owner`` may read: their own, and those shared with their teams.

        Another owner's entry comes without the ids of the episodes it cites (``cites``,
        ``expired_cites``): an episode id is its time, so a shared lesson handed teammates the
        exact times of its owner's private episodes (test_a_shared_lesson_names_none_of_its_owner_s_episodes),
        and without when and why it was flagged for review (a corrected outcome of a private episode)."""
        out: dict[str, Entry] = {}
        for subs, _ in self.active.items((owner,)):
            rec = self.entries.get((owner, str(subs[1])))
            if rec is not None:
                out[rec["id"]] = to_entry(rec)
        for team in self.reading_teams(owner):
            for subs, other in self.shared.items((team,)):
                eid = str(subs[1])
                rec = self.entries.get((str(other), eid))
                if eid not in out and rec is not None and rec["state"] == "approved" and rec["status"] == "active":
                    # nor when or how its owner corrected them: a flag for review says only that
                    flag = "its owner is reviewing it" if rec.get("flag_reason") else None
                    out[eid] = to_entry({**rec, "cites": (), "expired_cites": (), "flagged_at": None, "flag_reason": flag, "unshared": ()})
        return sorted(out.values(), key=lambda e: e.id)

    def search(
        self,
        owner: str,
        text: str | None = None,
        tags: Iterable[str] = (),
        limit: int = 20,
        now: dt.datetime | None = None,
        use: Literal["retrieved", "injected"] | None = "retrieved",
    ) -> list[Entry]:
        """Readable entries, best match first when ``text`` or ``tags`` are given (then only those
        sharing a term or a tag), newest first otherwise. A search counts as a retrieval (for
        decay); a listing of the newest does not: opening one's list withdrew every idle flag of
        the twenty newest (a review's find: test_a_listing_is_no_use_of_what_it_lists)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError(f"limit {shown(limit)}: must be a non-negative int")
        if text is not None and not isinstance(text, str):
            raise ValidationError(f"text {shown(text)}: must be a str to search for, or None for the newest entries")
        if now is not None:
            now = utc(now, "now")  # checked up front, whatever matches (a naive one passed when nothing did)
        given = _strings("tags", tags, "tag")
        check_tag_count("tags", given, "an entry holds")  # by their count, before the sanitizer reads each
        if text and len(text) > QUESTION_CHARS:  # before the sanitizer reads it, as recall's text
            raise ValidationError(f"text of {len(text):,} characters: at most {QUESTION_CHARS:,} (search for a few words)")
        # read sanitized, as recall's text is: an address's words ("quill", "example", "org") chose
        # unrelated lessons (a review's find: test_knowledge_never_searches_a_withheld_value)
        clean, withheld = sanitized(self.episodes.sanitizer, text, "text") if text else ("", ())
        terms = set(tokenize(unsearched(clean, withheld)))
        # and so are the tags: one of personal data or a secret is kept only as a marker ("withheld-email")
        filters = tag_filters(self.episodes.sanitizer, tags=given, after=withheld)
        want = set(filters.tags)
        if (withheld or filters.withheld) and not terms and not want:
            return []  # a text or tags of personal data or secrets alone match nothing, as in recall
        entries = self.readable(owner)
        if terms or want:
            scored = [(entry_score(e, terms, want), e) for e in entries]
            chosen = [e for s, e in sorted(scored, key=lambda p: (-p[0], p[1].id)) if s > 0][:limit]
        else:
            chosen = sorted(entries, key=lambda e: e.id, reverse=True)[:limit]
        if chosen and use is not None and (terms or want):
            self.touch(chosen, use, now)
        return chosen

    def touch(self, entries: Iterable[Entry], use: Literal["retrieved", "injected"], now: dt.datetime | None = None) -> None:
        """Note that entries were read or put into a prompt: the signals the decay pass looks at."""
        at = self._when(now)
        with self.space.transaction():
            for e in entries:
                rec = self.entries.get((e.owner, e.id))
                if rec is None:
                    continue
                if use == "injected":
                    rec = {**rec, "injected": int(rec.get("injected", 0)) + 1, "last_injected": at}
                else:
                    rec = {**rec, "last_retrieved": at}
                self.entries.set((e.owner, e.id), self._withdraw_idle_flag(rec, use, at))

    # --- the share ceremony -------------------------------------------------------------------

    def ceremony(self, team: str | None = None, *, now: dt.datetime | None = None) -> Agenda:
        """Build (and keep) the agenda: each member's approved lessons in active use that are not
        yet shared with the team (every team: with each of the owner's teams) and that nobody kept
        private or archived, including those whose share names a team no longer configured.

        Items not ruled on come back on the team's next agenda, marked carried over; nothing
        expires. Carried over is per team: another team's agenda, or a ruling since the team's
        previous agenda (an archived lesson restored), does not mark it (test_ceremony_teams.py).
        """
        at = self._when(now)
        teams = self.teams()
        scope = {team: self._check_team(team)} if team is not None else teams
        key = team or "*"
        last = self.ceremonies.order((key, ""), reverse=True)
        before = self.ceremonies.get((key, last)) if last is not None else None
        prev_items = set(before["items"]) if before else set()
        prev_at = utc(before["at"], "at") if before else None
        items: list[AgendaItem] = []
        rulings: dict[str, dict[str, dict[str, dt.datetime]]] = {}
        with self.space.transaction():
            for member in sorted({m for ms in scope.values() for m in ms}):
                mine = [t for t, ms in scope.items() if member in ms]
                for subs, _ in self.active.items((member,)):
                    rec = self.entries.get((member, str(subs[1])))
                    if rec is None or rec.get("ceremony") in ("kept", "archived"):
                        continue
                    shared_with = rec.get("shared_with") or ()
                    if rec["visibility"] == "shared" and all(self.reaches(shared_with, t) for t in mine):
                        continue
                    ruled = _ruled(rec, team)
                    if ruled is None and prev_at is not None and rec["id"] in prev_items and _after(rec.get("kept_at"), prev_at):
                        ruled = self._audited_ruling(member, rec["id"], team, prev_at, rulings)
                    carried = rec["id"] in prev_items and (ruled is None or prev_at is None or ruled < prev_at)
                    items.append(AgendaItem(to_entry(rec), carried_over=carried, lost_shares=self._lost(shared_with)))
                    self.entries.set((member, rec["id"]), {**rec, "agendas": int(rec.get("agendas", 0)) + 1})
            cid = new_id(at, f"ceremony {key}")
            carried_ids = [i.entry.id for i in items if i.carried_over]
            self.ceremonies.set((key, cid), {"at": at, "items": [i.entry.id for i in items], "carried": carried_ids})
        return Agenda(cid, team, at, items)

    def _audited_ruling(
        self, owner: str, eid: str, team: str | None, since: dt.datetime, memo: dict[str, dict[str, dict[str, dt.datetime]]]
    ) -> dt.datetime | None:
        """When the audit trail says ``eid`` was last ruled on for ``team`` (every team: None)
        since ``since``: for a lesson archived (and restored since, hence ``kept_at``) before
        rulings were kept in the entry (``ruled_at``), which showed "carried over" once although
        its owner had ruled (test_a_lesson_archived_before_rulings_were_kept_comes_back_new). A
        share rules for the teams it names only, as ``ruled_for`` does: one with another team read
        as this team's ruling (test_a_share_with_another_team_is_no_ruling_for_this_one). ``memo``:
        one read of an owner's audit per ceremony."""
        if owner not in memo:
            found: dict[str, dict[str, dt.datetime]] = {}
            for a in self.audit.entries(owner, since=since):
                action = a.get("action")
                if action not in ("share", "keep_private", "archive") or not isinstance(a.get("entry"), str):
                    continue
                said = a.get("teams")
                teams: list[Any] = said if action == "share" and isinstance(said, list) else ["*"]
                per = found.setdefault(a["entry"], {})
                for t in map(str, teams):  # "*": a ruling for every team
                    per[t] = max(utc(a["at"], "at"), per.get(t, since))
            memo[owner] = found
        per = memo[owner].get(eid) or {}
        times = list(per.values()) if team is None else [t for k, t in per.items() if k in ("*", team)]
        return max(times) if times else None

    def latest_agenda(self, team: str | None = None) -> Agenda | None:
        """The last agenda kept for ``team`` (every team: None), its items as they stand now
        (decided ones show their ``ceremony`` ruling); None before the first ceremony. Reads only:
        unlike ``ceremony`` it starts nothing and carries nothing over.

        Filtered by what is true now: an item erased or quarantined since, or whose owner is no
        longer in the team, is left out; a kept agenda showed a quarantined lesson as undecided
        and a leaver's private lessons to the team they left (test_ceremony_teams.py)."""
        members = set(self._check_team(team)) if team is not None else {m for ms in self.teams().values() for m in ms}
        key = team or "*"
        cid = self.ceremonies.order((key, ""), reverse=True)
        if cid is None:
            return None
        rec = self.ceremonies[(key, cid)]
        carried = set(rec.get("carried") or ())  # agendas kept before this field say nothing was carried
        items = []
        for eid in rec["items"]:
            owner = self.ids.get((eid,))
            entry = self.entries.get((str(owner), eid)) if owner is not None else None
            if entry is None or entry["owner"] not in members:
                continue
            # an archived one shows its ruling; one archived or quarantined otherwise is out of use
            if entry.get("status") == "active" or (entry.get("status") == "archived" and entry.get("ceremony") == "archived"):
                lost = self._lost(entry.get("shared_with") or ())
                items.append(AgendaItem(to_entry(entry), carried_over=eid in carried, lost_shares=lost))
        return Agenda(str(cid), team, utc(rec["at"], "at"), items)

    def decide(self, decisions: Mapping[str, str], *, by: str, team: str | None = None, now: dt.datetime | None = None) -> list[Entry]:
        """Apply an owner's decisions (entry id -> share | private | archive), all or none.

        Only the entry's owner may decide (PermissionDeniedError otherwise). ``share`` shares with
        ``team``, or with every team the owner is in; the entry keeps its owner's attribution.
        DuplicateError (nothing decided) when a shared entry would nearly repeat another owner's
        lesson the team already reads (``refuse_shared_copy``), or when a decision is in force
        already: shared with those teams, or kept private (``_refuse_replay``).
        """
        at, who = self._when(now), _person(by)
        if not isinstance(decisions, Mapping) or not decisions:
            raise ValidationError(f"decisions {shown(decisions)}: give a mapping of entry id -> share | private | archive")
        plan: list[tuple[dict[str, Any], str, list[str]]] = []
        shared_memo: dict[str, Any] = {}
        with self.space.transaction():
            for eid, raw in decisions.items():
                action = _DECISIONS.get(str(raw).strip().lower())
                if action is None:
                    raise ValidationError(f"decision {shown(raw)} for entry {shown(eid)}: one of share, private, archive")
                rec = self._require(eid)
                if rec["owner"] != who:
                    raise PermissionDeniedError(
                        f"entry {eid!r}: owned by {rec['owner']!r}; only its owner can decide about it (asked by {shown(who)})"
                    )
                if rec["state"] != "approved" or rec["status"] != "active":
                    raise ValidationError(
                        f"entry {eid!r}: is {rec['state']}/{rec['status']}; only approved entries in active use go to a ceremony"
                    )
                targets: list[str] = []
                if action == "share":
                    if team is not None:
                        if who not in self._check_team(team):
                            raise PermissionDeniedError(f"team {shown(team)}: {shown(who)} is not a member, so cannot share with it")
                        targets = [team]
                    else:
                        targets = self.teams_of(who)
                    if not targets:
                        raise ValidationError(f"entry {eid!r}: owner {shown(who)} is in no team to share with (configure teams)")
                    self._refuse_replay(rec, action, targets)
                    self.refuse_shared_copy(rec, targets, shared_memo)
                elif action == "private":
                    self._refuse_replay(rec, action, targets)
                plan.append((rec, action, targets))
            out = []
            for rec, action, targets in plan:
                owner, eid = rec["owner"], rec["id"]
                if action == "share":
                    # the owner rules again: shares with teams no longer configured go, lest a team
                    # configured again under an old name receive it unasked
                    lost = self._lost(rec.get("shared_with") or ())
                    for t in lost:
                        self.shared.kill((t, eid))
                    shared = sorted((set(rec.get("shared_with") or ()) - set(lost)) | set(targets))
                    new = {**rec, "visibility": "shared", "shared_with": shared, "ceremony": "shared"}
                    for t in targets:
                        self.shared.set((t, eid), owner)
                elif action == "private":
                    for t in rec.get("shared_with") or ():
                        self.shared.kill((t, eid))
                    new = {**rec, "visibility": "private", "shared_with": [], "ceremony": "kept"}
                else:
                    for t in rec.get("shared_with") or ():
                        self.shared.kill((t, eid))
                    self.active.kill((owner, eid))
                    self.flags.kill((owner, eid))
                    new = {
                        **rec,
                        "visibility": "private",
                        "shared_with": [],
                        "status": "archived",
                        "ceremony": "archived",
                        "flagged_at": None,
                        "flag_reason": None,
                    }
                if rec.get("unshared"):  # ruled on again: a share rules for its teams, the others for every team
                    new["unshared"] = [t for t in rec["unshared"] if t not in targets] if action == "share" else []
                # when it was last ruled on, for "carried over" (ceremony): a share with one team is
                # that team's ruling; the others rule for every team
                if action == "share" and team is not None:
                    new = {**new, "ruled_for": {**(rec.get("ruled_for") or {}), team: at}}
                else:
                    new = {**new, "ruled_at": at}
                self.entries.set((owner, eid), new)
                name = {"share": "share", "private": "keep_private", "archive": "archive"}[action]
                self._audit(owner, at, name, rec, by=who, teams=targets or None)
                out.append(to_entry(new))
        return out

    def _refuse_replay(self, rec: Mapping[str, Any], action: str, targets: Iterable[str]) -> None:
        """DuplicateError when a decision is in force already: a share every team of ``targets``
        reads (and with no team no longer configured left to drop), or a keep of a lesson kept
        private. A replay (a double click, a script run twice, two surfaces at once) was accepted
        and audited each time; checked in ``decide``'s write transaction, so two at once find the
        first one's ruling (test_a_replayed_decision_is_refused_and_audited_once). An archive
        replayed finds the lesson archived, out of the ceremony."""
        shared_with = rec.get("shared_with") or ()
        teams = list(targets)
        if action == "share" and all(self.reaches(shared_with, t) for t in teams) and not self._lost(shared_with):
            said = f"shared with {', '.join(teams)}"
        elif action == "private" and rec.get("ceremony") == "kept":
            said = "kept private"
        else:
            return
        raise DuplicateError(f"entry {rec['id']!r}: {said} already (nothing was changed)")

    # --- bounded decay --------------------------------------------------------------------------

    def week_of(self, now: dt.datetime) -> str:
        """The first day of ``now``'s local week: the database's ``timezone``, weeks starting on
        ``week_starts_on``, as the scheduler counts them. By the UTC date, the weekly run due
        Monday 04:00 in Tokyo (Sunday 19:00 UTC) was booked to the week before, sharing its budget
        (test_decay_weeks_are_local_weeks)."""
        settings = self.episodes.settings
        day = now.astimezone(dt.UTC if settings.timezone == "UTC" else ZoneInfo(settings.timezone)).date()
        return (day - dt.timedelta(days=(day.weekday() - settings.week_starts_on) % 7)).isoformat()

    def _withdraw_idle_flag(self, rec: dict[str, Any], use: str, at: dt.datetime) -> dict[str, Any]:
        """An entry used after decay flagged it idle is idle no more: the flag goes (audited), so
        no one quarantines a lesson a teammate relied on that day as "idle" (test_decay_flags.py).
        A correction's flag (``flag_reason``) stays: it asks a person whatever the use."""
        if rec.get("flagged_at") is None or rec.get("flag_reason") or self.flags.get((rec["owner"], rec["id"])) is None:
            return rec
        self.flags.kill((rec["owner"], rec["id"]))
        self._audit(rec["owner"], at, "decay_unflag", rec, by="decay", use=use, flagged_at=rec["flagged_at"])
        return {**rec, "flagged_at": None, "flag_withdrawn": {"at": at, "use": use}}

    def decay(self, now: dt.datetime | None = None) -> DecayReport:
        """Flag the most idle approved entries (never injected, not retrieved for ``decay_idle_days``),
        at most ``decay_flags_per_week`` per week across runs. Flags only: a person decides."""
        at = self._when(now)
        settings = self.episodes.settings
        idle_for = dt.timedelta(days=settings.decay_idle_days)
        week = self.week_of(at)
        report = DecayReport(at, week)
        with self.space.transaction():
            candidates: list[tuple[dt.datetime, str, dict[str, Any]]] = []
            for owner in self.owners():
                for subs, _ in self.active.items((owner,)):
                    rec = self.entries.get((owner, str(subs[1])))
                    if rec is None or rec.get("flagged_at") is not None or int(rec.get("injected", 0)) > 0:
                        continue
                    since = idle_since(rec)
                    if at - since >= idle_for:
                        candidates.append((since, rec["id"], rec))
            candidates.sort(key=lambda c: (c[0], c[1]))
            used = int(self.weeks.get((week,), 0))
            budget = max(settings.decay_flags_per_week - used, 0)
            report.idle = len(candidates)
            for since, eid, rec in candidates[:budget]:
                new = {**rec, "flagged_at": at}
                new.pop("flag_withdrawn", None)
                self.entries.set((rec["owner"], eid), new)
                self.flags.set((rec["owner"], eid), {"at": at, "week": week})
                self._audit(rec["owner"], at, "decay_flag", rec, by="decay", idle_days=round((at - since).total_seconds() / 86400, 2))
                report.flagged.append(to_entry(new))
            if report.flagged:
                self.weeks.increment((week,), len(report.flagged))
            report.over_budget = len(candidates) - len(report.flagged)
            report.budget_left = budget - len(report.flagged)
        return report

    def flagged(self) -> list[Entry]:
        """Entries flagged (by the decay pass, or for a corrected source: ``flag_reason``) that no
        person has decided on yet, oldest flag first."""
        out = [to_entry(self.entries[(str(o), str(subs[1]))]) for o in self.flags.children() for subs, _ in self.flags.items((o,))]
        return sorted(out, key=lambda e: (e.flagged_at or e.created, e.id))

    def confirm_decay(
        self, entry_id: str, action: Literal["keep", "quarantine"], *, by: str, reason: str = "", now: dt.datetime | None = None
    ) -> Entry:
        """A person's answer to a decay flag: ``keep`` clears it (and restarts the idle clock),
        ``quarantine`` takes the entry out of active use, reversibly."""
        at, who = self._when(now), _person(by)
        if action not in ("keep", "quarantine"):
            raise ValidationError(f"decay action {shown(action)}: keep or quarantine")
        with self.space.transaction():
            rec = self._require(entry_id)
            if self.flags.get((rec["owner"], rec["id"])) is None:
                gone = rec.get("flag_withdrawn")
                if gone:  # used since the flag: say so rather than "nothing to confirm" (test_decay_flags.py)
                    raise ValidationError(
                        f"entry {entry_id!r}: is not flagged by decay any more: it was "
                        f"{'put into a prompt' if gone['use'] == 'injected' else 'retrieved'} on "
                        f"{gone['at']:%Y-%m-%d %H:%M} UTC, after the flag, so it is in use, not idle "
                        "(to take it out of use anyway, quarantine it with a reason)"
                    )
                raise ValidationError(f"entry {entry_id!r}: is not flagged by decay (nothing to confirm)")
            self.flags.kill((rec["owner"], rec["id"]))
            if action == "keep":
                new = {**rec, "flagged_at": None, "flag_reason": None, "kept_at": at}
                self.entries.set((rec["owner"], rec["id"]), new)
                self._audit(rec["owner"], at, "decay_keep", rec, by=who)
                return to_entry(new)
            rec = {**rec, "flagged_at": None, "flag_reason": None}
            self.entries.set((rec["owner"], rec["id"]), rec)
            return self._quarantine(rec, who, reason or "idle: confirmed by decay review", at)

    def quarantine(self, entry_id: str, *, by: str, reason: str, now: dt.datetime | None = None) -> Entry:
        """Take an approved entry out of active use (no reads, no prompts), reversibly."""
        at, who = self._when(now), _person(by)
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"quarantine reason {shown(reason)}: say why (it is kept in the audit trail)")
        with self.space.transaction():
            rec = self._require(entry_id)
            self.flags.kill((rec["owner"], rec["id"]))
            return self._quarantine({**rec, "flagged_at": None, "flag_reason": None}, who, reason, at)

    def _quarantine(self, rec: dict[str, Any], who: str, reason: str, at: dt.datetime) -> Entry:
        if rec["state"] != "approved" or rec["status"] != "active":
            raise ValidationError(
                f"entry {rec['id']!r}: is {rec['state']}/{rec['status']}; only approved entries in active use are quarantined"
            )
        new = {**rec, "status": "quarantined"}
        self.entries.set((rec["owner"], rec["id"]), new)
        self.active.kill((rec["owner"], rec["id"]))  # shares stay recorded: restoring brings back those no copy took since
        self._audit(rec["owner"], at, "quarantine", rec, by=who, reason=reason)
        return to_entry(new)

    def restore(self, entry_id: str, *, by: str, now: dt.datetime | None = None) -> Entry:
        """Bring a quarantined entry back into use as it was, or an archived one back as private,
        to go on the next ceremony's agenda.

        A quarantined entry's shares come back except with a team that reads another owner's
        near copy now (shared there meanwhile, as a quarantined copy blocks nothing): the team
        read the lesson twice (test_a_restored_lesson_does_not_come_back_beside_a_teammate_s_copy).
        Those teams are named in ``unshared`` and the audit record, and the entry is on their
        agendas for its owner to rule on again; a share with ``all`` (teams configured since)
        becomes shares with the other teams (``_copies_read``)."""
        at, who = self._when(now), _person(by)
        with self.space.transaction():
            rec = self._require(entry_id)
            if rec["state"] != "approved" or rec["status"] not in ("quarantined", "archived"):
                raise ValidationError(
                    f"entry {entry_id!r}: is {rec['state']}/{rec['status']}; only quarantined or archived entries are restored"
                )
            owner, eid = rec["owner"], rec["id"]
            new = {**rec, "status": "active", "kept_at": at}
            unshared, instead = self._copies_read(rec) if rec["status"] == "quarantined" else ([], [])
            if rec["status"] == "archived":
                new["ceremony"] = None
            elif unshared:
                gone = {*unshared, *((ALL_TEAM,) if instead else ())}
                for team in gone:
                    self.shared.kill((team, eid))
                for team in instead:
                    self.shared.set((team, eid), owner)
                left = sorted({*(t for t in rec.get("shared_with") or () if t not in gone), *instead})
                ruled_for = {t: when for t, when in (rec.get("ruled_for") or {}).items() if t not in unshared}
                new.update(
                    shared_with=left, visibility="shared" if left else "private", ceremony=rec.get("ceremony") if left else None,
                    ruled_for=ruled_for, unshared=sorted({*(rec.get("unshared") or ()), *unshared}),
                )  # fmt: skip
            if rec.get("flag_reason"):  # a cited record was corrected while it was out of use
                self.flags.set((owner, eid), {"at": rec["flagged_at"] or at, "why": rec["flag_reason"]})
            self.entries.set((owner, eid), new)
            self.active.set((owner, eid), "")
            self._audit(
                owner, at, "restore_entry", rec, by=who, was=rec["status"], flagged=bool(rec.get("flag_reason")) or None,
                unshared=unshared or None, shared_instead_of_all=instead or None,
            )  # fmt: skip
        return to_entry(new)

    def _copies_read(self, rec: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        """The teams ``rec`` is shared with whose members read another owner's near copy now
        (``refuse_shared_copy``), and the teams to share it with instead of ``all``. A share with
        ``all`` once teams are configured reaches every team: where some of them read a copy, it
        becomes a share with each of the others, so their members keep it and only the teams
        with a copy are named; it was taken from every team
        (test_a_restored_lesson_shared_with_all_stays_with_the_teams_without_a_copy). A team no
        longer configured reaches nobody."""
        configured = list(self.episodes.settings.teams or {})
        live = {*configured, ALL_TEAM}
        memo: dict[str, Any] = {}
        taken: list[str] = []
        instead: list[str] = []
        shared_with = list(rec.get("shared_with") or ())
        for team in shared_with:
            if team not in live:
                continue
            everyone = team == ALL_TEAM and bool(configured) and ALL_TEAM not in configured
            hit = []
            for each in configured if everyone else [team]:
                try:
                    self.refuse_shared_copy(rec, [each], memo)
                except DuplicateError:
                    hit.append(each)
            taken += hit
            if everyone and hit:
                instead = [t for t in configured if t not in hit and t not in shared_with]
        return list(dict.fromkeys(taken)), instead

    # --- internals -----------------------------------------------------------------------------

    def _when(self, now: dt.datetime | None) -> dt.datetime:
        return utc(now, "now") if now is not None else self.episodes.now()

    def _require(self, entry_id: str, state: str | None = None) -> dict[str, Any]:
        if not is_id(entry_id):
            raise NotFoundError(f"entry {shown(entry_id)}: not an entry id (expected YYYYMMDDTHHMMSSffffffZ-xxxxxx)")
        owner = self.ids.get((entry_id,))
        rec = self.entries.get((str(owner), entry_id)) if owner is not None else None
        if rec is None:
            raise NotFoundError(f"entry {entry_id!r}: no such knowledge entry")
        if state is not None and rec["state"] != state:
            # shown sanitized: entries decided before reviewers were checked may name one raw
            raise ValidationError(f"entry {entry_id!r}: is {rec['state']}, not {state} (decided by {shown(rec.get('decided_by'))})")
        return dict(rec)

    def forget_person(self, name: str, marker: str) -> int:
        """An owner's erasure (``Erasure.persons``): where ``name`` decided about another owner's
        entry, ``marker`` stands instead, in its ``decided_by`` and the audit records of what the
        person did; how many mentions. Reads every other owner's entry and audit record (the
        owner's own go with it, unread)."""
        named = [
            (subs, rec) for owner in list(self.entries.children()) if owner != name
            for subs, rec in self.entries.items((owner,))
            # an erased entry's decided_by is memdb's word, not a person's
            if names_person(rec.get("decided_by"), name) and rec.get("status") != "erased"
        ]  # fmt: skip
        for subs, rec in named:
            self.entries.set(subs, {**rec, "decided_by": marker})
        return len(named) + self.audit.forget_actor(name, marker, _DECIDED_BY_A_PERSON)

    def _audit(self, owner: str, at: dt.datetime, action: str, rec: Mapping[str, Any], *, by: str, **extra: Any) -> None:
        """One audit record per write or decision: who, when, which entry, its content hash (never its text)."""
        entry = {"by": by, "entry": rec["id"], "content_hash": rec["hash"]}
        entry.update({k: v for k, v in extra.items() if v is not None})
        self.audit.write(owner, action, at, **entry)


def idle_since(rec: Mapping[str, Any]) -> dt.datetime:
    """When an entry was last used or decided on: decay's idle clock starts there."""
    since: dt.datetime = max(t for t in (rec.get("last_retrieved"), rec.get("decided_at"), rec.get("kept_at"), rec["created"]) if t)
    return since


def flag_why(entry: Entry) -> str:
    """Why and since when an entry awaits a keep/quarantine decision, for the person deciding."""
    when = f"{entry.flagged_at:%Y-%m-%d}" if entry.flagged_at else "?"
    if entry.flag_reason:
        return f"flagged {when}: {entry.flag_reason}"
    since = idle_since(entry.model_dump())
    return f"flagged {when}: idle, not used since {since:%Y-%m-%d}"


def entry_score(entry: Entry, terms: set[str], tags: set[str]) -> float:
    """How well an entry matches query terms and tags: term coverage plus half a point per shared tag."""
    score = 0.0
    if terms:
        score += len(terms & set(tokenize(entry.text))) / len(terms)
    if tags:
        score += 0.5 * len(tags & set(entry.tags))
    return score


def _ruled(rec: Mapping[str, Any], team: str | None) -> dt.datetime | None:
    """When the entry was last ruled on for ``team``'s agenda (every team's: None)."""
    per_team = rec.get("ruled_for") or {}
    times = [rec.get("ruled_at"), *(per_team.values() if team is None else [per_team.get(team)])]
    found = [utc(t, "ruled_at") for t in times if t is not None]
    return max(found) if found else None


def _after(when: Any, than: dt.datetime) -> bool:
    return when is not None and utc(when, "at") > than


def _item_notes(item: AgendaItem) -> str:
    notes = ["carried over"] if item.carried_over else []
    if item.lost_shares:
        notes.append(f"shared with {_teams(item.lost_shares)}, no longer a team")
    if item.entry.unshared:
        notes.append(unshared_note(item.entry))
    return f" ({'; '.join(notes)})" if notes else ""


def unshared_note(entry: Entry) -> str:
    """Why an agenda item restored from quarantine is not shared with some teams any more, or ""
    when it is: the CLI's agenda and the dashboard's ceremony page say it in these words
    (tests/surfaces/web/test_restore_message.py)."""
    if not entry.unshared:
        return ""
    return f"not shared again with {_teams(entry.unshared)} when restored: a near copy is read there"


def restore_note(entry: Entry) -> str:
    """What a restore did not bring back, for the person who restored ``entry``: the teams its
    share was not given back to (``unshared``), or "" when there are none. The JSON has the
    field; the CLI's text and the dashboard's message said only that it was restored, so a lead
    believed both teams read it again (test_restore_notes.py, tests/surfaces/web/test_restore_message.py)."""
    if not entry.unshared:
        return ""
    which = "that team's agenda" if len(entry.unshared) == 1 else "those teams' agendas"
    return (
        f"not shared again with {_teams(entry.unshared)}: another owner's near copy is read there "
        f"(on {which} for {entry.owner} to rule on again)"
    )


def _teams(teams: Iterable[str]) -> str:
    return ", ".join(map(repr, teams))


_DECIDED_BY_A_PERSON: Final = ("approve", "reject", "share", "keep_private", "archive", "decay_keep", "quarantine", "restore_entry")
"""The audit actions whose ``by`` is a person (``_person``), not memdb's word for a rule ("decay", "erasure")."""


def _person(by: str) -> str:
    """Who decided: a person's name, kept in the entry (``decided_by``) and the audit trail, so
    held to what an owner name is: nothing the sanitizer would replace, as an email or a phone
    number (test_a_reviewer_that_looks_like_personal_data_is_refused)."""
    if not isinstance(by, str) or not by.strip() or len(by) > 64 or by.strip() != by:
        raise ValidationError(f"by {shown(by)}: name the person deciding (1-64 characters, no surrounding spaces)")
    if kinds := personal_data_in(by):
        said = f"looks like personal data ({', '.join(kinds)}); name the person by a handle or an opaque id"
        raise ValidationError(f"by {shown_name(by)}: {said}")
    return by


def _strings(name: str, value: str | Iterable[str], one: str) -> list[str]:
    """A str or an iterable of str as a list (a single str is one item, never its characters)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise ValidationError(f"{name} {shown(value)}: give one {one} as a str, or a list of them")
    out = list(value)
    for item in out:
        if not isinstance(item, str):
            raise ValidationError(f"{name} {shown(value)}: {shown(item)} is not a str (each {one} is a str)")
    return out


def _id_list(ids: str | Iterable[str]) -> list[str]:
    out = _strings("ids", ids, "entry id")
    if not out:
        raise ValidationError("ids: give at least one entry id")
    if len(set(out)) != len(out):
        raise ValidationError(f"ids {shown(out)}: duplicates")
    return out


def _describe(dup: Duplicate) -> str:
    if dup.against == "rejected":
        # said to owners who never queued it too: it is a reviewer's rejection of this content, not theirs
        return f"rejected content (tombstone {dup.ref[:12]}): a reviewer rejected a lesson saying this, so no owner can queue it"
    return f"{dup.against} entry {dup.ref}"


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")
