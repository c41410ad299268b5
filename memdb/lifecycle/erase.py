"""Erasure: a request that takes an owner's episodes (by id, time range, or all) out of hot and
cold storage and every index, with everything derived from them; and opt-in retention, the
same erasure by age. Each leaves one audit record with ids and hashes, never content.

Versions (``Memory.supersede``, facts recorded again) are one memory: erasing any version
erases every version of its chain, older and newer, since a newer one copies the older's
content and an older one must never come back as current. A time range selects the versions
whose time falls in it (superseded ones included). ``erase_versions`` is the one way to keep a
memory while its earlier versions go: a superseded version goes with every version before it
(a chain is never holed), and the oldest left stands alone, no longer linked to what it
corrected. Retention, routine pruning, erases a chain whose current version is old enough, and
from the others the superseded versions old enough, that way (storage limitation: a key
updated every month kept every value it ever had).

An owner's name is an identifier too (a person's name or user id can be one), and a request for
everything keeps it: the owner's counters, marks, audit log and team memberships name it.
``erase_owner`` takes the owner itself: everything ``erase(everything=True)`` takes, then every
node of every global keyed by the owner (``OWNER_KEYED``), what the others hold of it (where
it reviewed their lessons, ``ERASED_OWNER`` stands for it), and its place in the settings'
teams; one database-wide audit record keeps a keyed hash of the name (``owner_erasures`` finds
it from the name), never the name.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from memdb.errors import NotFoundError, SanitizerError, ValidationError
from memdb.lifecycle.cold import ColdCodec
from memdb.memory.episodes import Episodes
from memdb.memory.ids import check_id, ts_micros
from memdb.memory.layout import OWNER_ERASURES, unlinked
from memdb.memory.models import check_owner, check_tag_count, utc
from memdb.memory.sanitize import sanitize_fields, shown
from memdb.memory.sanitize.fields import given_tags, tags_as_stored
from memdb.memory.text import normalize_tag, normalize_tags

__all__ = ["ERASED_OWNER", "NOT_OWNER_KEYED", "OWNER_KEYED", "Erasure", "ErasureReport"]

OWNER_KEYED: Final = frozenset({
    "MEM", "EPST", "EPT", "EPG", "EPGO", "EPK", "EPS", "EPB", "EPTD", "EPX", "EPXT", "EPDN", "EPC", "EPCV", "EPL", "EPLV",
    "EPDF", "EPN", "EPAR", "COLD", "EPSA", "EPSU", "EPFK", "AUDIT", "EPIM", "LIFE", "COLDDICT",
    "KN", "KNQ", "KNA", "KNF", "KNN", "KNR", "PATN", "PATQ", "PATB", "PATP", "PATI", "PAT", "PATK", "DIST",
})  # fmt: skip
"""The globals of ``memdb.memory.layout.GLOBALS`` whose first subscript is an owner's name:
``erase_owner`` kills the owner's subtree of each (test_every_global_is_known_to_the_owner_erasure)."""

NOT_OWNER_KEYED: Final[Mapping[str, str]] = {
    "META": "settings and counters: the owner leaves the settings' teams, and the count of owner erasures grows",
    "AUDITDB": "database-wide records: a team list of a configure record names it as ERASED_OWNER",
    "KNID": "entry id -> owner: the nodes naming the owner go",
    "KNS": "shared entries by team: the owner's entries go with its request for everything",
    "KNT": "tombstones: hashes, shared across owners; its erased lessons' go with them",
    "KNW": "decay counts by week",
    "KNC": "ceremony agendas by team: the ids of the entries an erasure takes leave them (knowledge's requests and hooks)",
    "KNM": "knowledge's salt and counters",
    "SCHED": "scheduler lock and runs",
}
"""The other globals, and what an owner's erasure does to each."""

ERASED_OWNER: Final = "[erased owner]"
"""What stands for an erased owner's name where a database-wide record named it."""

_DATABASE: Final = 0  # ^LIFE's database-wide subtree: a number, which no owner's name (a str) is
_OWNER_KEY: Final = "owner erasure key"


@dataclass(frozen=True)
class ErasureReport:
    """What an erasure removed: how many episodes, and their ids (content is gone), and the
    knowledge entries that went with them or with the request."""

    count: int
    ids: list[str]
    audit_id: str | None = None  # the audit record written, if any
    entries: list[str] = field(default_factory=list)  # knowledge entries erased (a request for everything took an owner's lessons)


class Erasure:
    """Erasure and retention for one database."""

    def __init__(self, episodes: Episodes, cold: ColdCodec) -> None:
        self.episodes = episodes
        self.cold = cold
        self.marks = episodes.space["LIFE"]  # the lifecycle's marks (memdb.lifecycle.maintain), for burst windows of erased sessions
        # What layers above derive from episodes (knowledge entries, patterns) goes with them:
        # called as hook(owner, erased ids, now, action) inside every erasure's transaction, retention's
        # too; action is "erase", "delete" or "retention" (routine pruning keeps approved knowledge),
        # or "erase_owner", whose kills of OWNER_KEYED follow: a hook may then skip what lies under the name.
        # A hook that erases knowledge entries returns their ids (ErasureReport.entries, and the
        # audit records about them are redacted with the episodes'), else None.
        self.hooks: list[Callable[[str, set[str], dt.datetime, str], list[str] | None]] = []
        # Episodes derived from the targets that go with them, as summaries do (distilled sessions):
        # finder(owner, target ids, action) -> ids, asked before anything is removed, so they are
        # erased, audited and handed to ``hooks`` like the targets themselves (not asked by a request
        # for everything: every episode of the owner is a target then).
        self.derived: list[Callable[[str, Collection[str], str], Iterable[str]]] = []
        # Marks above this layer that name a session (distill's closed and open marks): called as
        # forget(owner, session ids) inside the erasure's transaction once none of a session's episodes is left.
        self.forget: list[Callable[[str, set[str]], object]] = []
        # Marks above this layer kept per session that may name an erased episode (distill's): called
        # as touched(owner, sessions, erased ids) inside the erasure's transaction with the sessions of
        # the episodes it erased (their headers say, before they go), so it reads those sessions' marks only.
        self.touched: list[Callable[[str, set[str], set[str]], object]] = []
        # Marks above this layer that name a version (distill's closed marks name the version a
        # session's close wrote): called as repoint(owner, {cut id: kept id}) inside the erasure's
        # transaction, before the cut versions go (their headers still read), when earlier versions
        # are cut and later ones kept (erase_versions, retention), so that what named a cut version
        # names the oldest version left of its memory and does not lose the memory.
        self.repoint: list[Callable[[str, dict[str, str]], object]] = []
        # What an owner wrote above this layer that cites no episode (a saved lesson) goes with a
        # request for everything or for tags: hook(owner, now, tags (none: everything), since, until),
        # in the erasure's transaction, even when no episode is left to erase; returns the entries it erased.
        self.requests: list[Callable[[str, dt.datetime, Sequence[str], dt.datetime | None, dt.datetime | None], list[str]]] = []
        # Where layers above name an owner as the person who acted on another owner's data (a
        # reviewer's decided_by and audit records): person(name, marker) puts marker there, in
        # ``erase_owner``'s transaction, and returns how many mentions it replaced.
        self.persons: list[Callable[[str, str], int]] = []

    def apply_retention(self, owner: str, now: dt.datetime) -> int:
        """Opt-in retention: erase episodes older than ``retention_days``, and the superseded
        versions older than that of memories kept current (audited)."""
        days = self.episodes.settings.retention_days
        if days is None:
            return 0
        cutoff = now - dt.timedelta(days=days)
        return self.erase(owner, until=cutoff, reason=f"retention: older than {days:g} days", action="retention").count

    def erase(
        self,
        owner: str,
        ids: Iterable[str] | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        everything: bool = False,
        reason: str = "",
        action: str = "erase",
        tags: Iterable[str] = (),
    ) -> ErasureReport:
        """Delete an owner's episodes (by id, by time range, by tag, or all) from hot and cold
        storage and every index, with summaries derived from them (archived ones too) and, through
        ``hooks``, what the layers above derived; one audit record with ids and hashes only.
        ``tags`` erases the episodes carrying any of them, hot, archived or superseded ("forget
        everything about customer Acme"), within ``since``/``until`` when given.

        The owner's cold-storage dictionaries were trained on its records, erased ones included,
        so when anything is erased they are dropped and the remaining archived records re-packed
        under one retrained from those alone (``ColdCodec.retrain``), in the same transaction:
        O(owner's archived records) on top of the erasure itself.
        """
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"erase reason {shown(reason)}: say why (it is kept in the audit trail)")
        if ids is not None and (isinstance(ids, (bytes, Mapping)) or not isinstance(ids, Iterable | str)):
            raise ValidationError(f"erase ids {shown(ids)}: give an episode id or a list of them")
        if ids is not None and not isinstance(ids, str):
            ids = list(ids)
            if not ids and since is None and until is None and not everything and not tags:
                # an empty list erases nothing: an audit record of it would say a request was met
                raise ValidationError("erase: the list of ids is empty (give at least one episode id)")
        wanted = self._stored_tags(given_tags(tags, "erase tags"))
        if wanted and everything:
            raise ValidationError(f"erase: tags {shown(wanted)} and everything=True: give one (everything erases every tag)")
        if ids is None and since is None and until is None and not everything and not wanted:
            raise ValidationError("erase: give ids, a time range, tags, or everything=True")
        # targets are found inside the write, so one erased meanwhile by another process is not missed or missing
        with self.episodes.space.transaction():
            targets = self._targets(owner, ids, since, until, everything, superseded=action != "retention", tags=wanted)
            whole = everything and since is None and until is None  # every episode of the owner, every version
            for eid in [] if whole else list(targets):  # a version goes with its whole chain (module docstring)
                targets.update(dict.fromkeys(self.episodes.chain(owner, eid)))
            cut = self._old_versions(owner, ts_micros(utc(until, "until")), targets) if action == "retention" and until else {}
            request = (wanted, since, until) if action == "erase" and (everything or wanted) else None
            return self._take(owner, targets, cut, reason, action, request, everything=whole)

    def _stored_tags(self, given: tuple[str, ...]) -> list[str]:
        """The tags memories carry for ``given`` (normalised, each once), refusing one that held
        personal data or a secret: capture stored it as the marker of its kind ("withheld-email"),
        which every such value shares, so it names no one's episodes; its normal form, looked up,
        erased nothing, audited as a request met, and was echoed (test_erase_refuses_a_tag_of_personal_data)."""
        if not given:
            return []
        check_tag_count("erase tags", given)  # by their count, before the sanitizer reads each
        try:
            read = tags_as_stored(lambda texts: sanitize_fields(self.episodes.sanitizer, texts), given)
        except SanitizerError as exc:
            raise SanitizerError(f"erase tags: not read, the database's sanitizer failed on them ({exc}); nothing erased") from None
        for t, stored, said in zip(given, read.stored, read.said, strict=True):
            marker = normalize_tag(stored)
            if marker != normalize_tag(t):
                raise ValidationError(
                    f"erase tags: tag {said!r} holds personal data or a secret: erase by ids, or by the stored marker "
                    f"{marker!r} (every episode whose tag held such a value carries it); nothing erased"
                )
        return list(normalize_tags(given))

    def erase_owner(self, owner: str, reason: str) -> ErasureReport:
        """Erase an owner itself: what ``erase(everything=True)`` takes (episodes, entries, what
        layers derived), then every node of ``OWNER_KEYED`` under its name (counters, marks, its
        audit log, pattern batches, cold dictionaries, reflection budget), its entries' ids in
        ^KNID, and its membership of the settings' teams; a database-wide record that named it
        in a team names ``ERASED_OWNER``. One database-wide audit record, ``erase_owner``, keeps
        the reason, the counts and in ``hashes`` a keyed hash of the name (``owner_hash``). Where
        it acted on another owner's data as a person (``persons``: it reviewed a teammate's
        lesson), ``ERASED_OWNER`` stands for it. All in one transaction; ``owner`` as
        ``Episodes.owner_name`` gives it.

        The reason is kept with the name in it, as a word, replaced by ``ERASED_OWNER`` ("account
        of <name> deleted"). NotFoundError for a name the database holds nothing of (an audit
        record would say a person was erased who never was; a name that only reviewed others'
        lessons is held); ValidationError for an empty
        reason. Other owners' memories that mention the name in their text are theirs, and stay."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"erase_owner reason {shown(reason)}: say why (it is kept in the audit trail)")
        # "account of <name> deleted": the record keeps the reason, and must not keep the name; sanitized
        # first, so an e-mail built on the name still reads as one (test_the_reason_is_sanitized_before_the_name_goes)
        reason = self.episodes.audit.clean("erase_owner", {"reason": reason})["reason"]
        reason = re.sub(rf"(?<!\w){re.escape(owner)}(?!\w)", ERASED_OWNER, reason, flags=re.IGNORECASE)
        try:
            return self._erase_owner(owner, reason)
        except BaseException:
            self.episodes.reload_settings()  # the teams changed in the transaction rolled back: not kept in memory either
            raise

    def _erase_owner(self, owner: str, reason: str) -> ErasureReport:
        with self.episodes.space.transaction():
            # read inside the write: a team another process configured since this one loaded its
            # settings is kept, the owner leaving it too (test_an_owner_erasure_keeps_a_team_configured_elsewhere)
            teams = {t: list(m) for t, m in self.episodes.reload_settings().teams.items()}
            # a person who only reviewed others' lessons is named there alone (test_a_reviewers_name_goes_from_what_it_reviewed)
            named = sum(person(owner, ERASED_OWNER) for person in self.persons)
            if not named and not self._holds(owner) and not any(owner in m for m in teams.values()):
                raise NotFoundError(f"owner {shown(owner)}: nothing of it in this database (nothing erased)")
            report = self._take_owner(owner)
            left = sorted(t for t, members in teams.items() if owner in members)
            if left:  # written as any change of settings is, then redacted with the others below
                self.episodes.configure(teams={t: [m for m in members if m != owner] for t, members in teams.items()})
            space = self.episodes.space
            space.flush_staged()  # the erasure's staged writes (postings) land before the kills, not after
            self.cold.retire(owner)  # its dictionary ids are not given again to the name
            for name in sorted(OWNER_KEYED):
                g = space[name]
                # and its deferred counters (^EPN) are not written at the commit (test_the_name_can_be_an_owner_again)
                space.discard_deferred(g, (owner,))
                # ^LIFE's database-wide marks share its first level with owners' names ("archived lessons
                # kept", a valid owner name): a mark's value stays; elsewhere the owner's node is its own (^EPCV)
                kept = g.get((owner,)) if name == "LIFE" else None
                g.kill((owner,))
                if kept is not None:
                    g.set((owner,), kept)
            ids = space["KNID"]
            for subs in [subs for subs, who in ids.items(()) if who == owner]:
                ids.kill(subs)
            self.episodes.audit.forget_member(owner, ERASED_OWNER)
            self.episodes.layout.meta.increment(OWNER_ERASURES)  # other processes' caches of the name are stale
            audit_id = self.episodes.audit.write(
                None, "erase_owner", self.episodes.now(), reason=reason, hashes=[self.owner_hash(owner)],
                count=report.count, entries=len(report.entries), teams=left,
            )  # fmt: skip
        self.cold.forget(owner)
        with self.episodes.layout.digests_lock:
            self.episodes.layout.digests.pop(owner, None)
        return ErasureReport(report.count, report.ids, audit_id, report.entries)

    def _take_owner(self, owner: str) -> ErasureReport:
        """In ``erase_owner``'s transaction, before its kills: what ``erase(everything=True)``
        takes that its kills of ``OWNER_KEYED`` under the name do not, that is this process's
        buffered accesses of the episodes and, through ``hooks`` (action ``"erase_owner"``) and
        ``requests``, what the layers above hold of the owner elsewhere (knowledge's team shares and
        tombstones); the report names the episodes. The rest of a request's work writes only under
        the name, for the kills to delete in the same transaction: each episode hashed for its
        ``erase`` audit record, derived and citing summaries found, session and burst marks, the
        owner's audit log redacted, its cold dictionary retrained: five sixths of erase_owner's CPU
        time at 20,000 and 100,000 episodes (tests/lifecycle/test_owner_erasure_reference.py)."""
        now = self.episodes.now()
        ids = list(self._targets(owner, None, None, None, everything=True))
        for eid in ids:
            self.episodes.left_hot(owner, eid)
        entries: list[str] = []
        if ids:
            for hook in self.hooks:
                entries += hook(owner, set(ids), now, "erase_owner") or ()
        for ask in self.requests:
            entries += ask(owner, now, (), None, None)
        return ErasureReport(len(ids), ids, None, list(dict.fromkeys(entries)))

    def owner_hash(self, owner: str) -> str:
        """A keyed SHA-256 of an owner's name, as ``erase_owner`` records it: the key is this
        database's (made at the first owner erasure), so the audit log alone, exported or
        shipped to a log store, confirms no guess of a name; whoever holds the database can
        check one (``owner_erasures``)."""
        key = self.marks.get((_DATABASE, _OWNER_KEY))
        if key is None:
            key = os.urandom(32)
            self.marks.set((_DATABASE, _OWNER_KEY), key)
        return "hmac-sha256:" + hmac.new(bytes(key), owner.encode("utf-8"), hashlib.sha256).hexdigest()

    def owner_erasures(self, owner: str) -> list[dict[str, Any]]:
        """The ``erase_owner`` audit records of an owner's name, oldest first (none before the
        first owner erasure). Reads the whole audit log: an administrator's question."""
        try:
            owner = check_owner(owner)
        except ValidationError:
            if not isinstance(owner, str):
                raise
            # else a name held before the rules (Episodes.owner_name): looked up as given
        if self.marks.get((_DATABASE, _OWNER_KEY)) is None:
            return []
        digest = self.owner_hash(owner)
        return [
            a for a in self.episodes.audit.entries(None)
            if a["owner"] is None and a.get("action") == "erase_owner" and digest in (a.get("hashes") or ())
        ]  # fmt: skip

    def _holds(self, owner: str) -> bool:
        """Whether any global keyed by owners holds anything under ``owner`` (in ^LIFE, below it:
        a database-wide mark may have its name)."""
        return any(self.episodes.space[name].data((owner,)) >= (10 if name == "LIFE" else 1) for name in OWNER_KEYED)

    def erase_versions(self, owner: str, episode_id: str, reason: str, action: str = "erase") -> ErasureReport:
        """Erase a superseded version and every version before it, keeping the later ones: the
        oldest left stands alone (``Episodes.unlink``: no link to, reason for or cite of what it
        corrected). What was derived from the erased versions goes as with ``erase``; one audit
        record with their ids and hashes and the version ``kept``. ValidationError (nothing
        written) for a current version, which ``erase`` takes with its whole memory."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError(f"erase_versions reason {shown(reason)}: say why (it is kept in the audit trail)")
        with self.episodes.space.transaction():
            chain = self.episodes.chain(owner, check_id(episode_id))  # NotFoundError for another owner's id
            if chain[-1] == episode_id:
                raise ValidationError(
                    f"erase_versions({episode_id!r}): the current version of its memory; give an earlier one "
                    "(versions() lists them), or erase() the whole memory"
                )
            return self._take(owner, {}, dict.fromkeys(chain[: chain.index(episode_id) + 1]), reason, action, None)

    def _take(
        self,
        owner: str,
        targets: dict[str, None],
        cut: dict[str, None],
        reason: str,
        action: str,
        request: tuple[Sequence[str], dt.datetime | None, dt.datetime | None] | None,
        everything: bool = False,
    ) -> ErasureReport:
        """In the caller's transaction: erase ``targets`` (whole chains) and ``cut`` (the earlier
        versions of chains whose later ones stay), with what was derived from them; ``request``
        (tags, since, until) when it is a request for everything or for tags, which also takes
        what the owner wrote (``requests``); with ``everything``, the targets are every episode of
        the owner, and they go by range deletes (``Episodes.remove_all``). One audit record."""
        now = self.episodes.now()
        hashes: dict[str, str] = {}
        entries: list[str] = []
        # With everything, every episode of the owner, every version, is a target already, and what
        # a finder derives is one of them (an owner's own): asking, it read every target's header
        # (test_a_request_for_everything_erases_what_the_whole_path_erases)
        if not everything:
            for finder in self.derived:  # what layers above derived (a distilled session); then their chains too
                targets.update(dict.fromkeys(finder(owner, {*targets, *cut}, action)))
            for eid in list(targets):
                targets.update(dict.fromkeys(self.episodes.chain(owner, eid)))
        cut = {eid: None for eid in cut if eid not in targets}
        # the oldest version left of each cut chain, to stand alone once the ones before it are gone
        head_of = self._heads(owner, cut)
        heads = {h for h in head_of.values() if h is not None and h not in targets}
        # summaries are derived content: erasing a source erases the summaries citing it, and
        # the sources left are events again, for the next maintain to summarize without it
        # (they stayed "summarized" by no summary: test_erasing_a_source_frees_the_rest_of_its_burst)
        freed: set[str] = set()
        citing = [] if everything else self._citing_summaries(owner, {**targets, **cut})  # (every summary is a target)
        for summary_id, cites in citing:
            targets.setdefault(summary_id, None)
            freed.update(cites)
        gone = {**targets, **cut}
        # what the headers say, read one by one: an owner's whole history is not held at once
        summaries: dict[str, dict[str, Any]] = {}
        sessions: set[str] = set()
        for eid in gone:
            header = self.episodes.header(owner, eid)
            if header and header.get("kind") == "summary":
                summaries[eid] = header
            if header and header.get("session"):
                sessions.add(header["session"])
        # a summary erased itself frees its sources the same way (test_erasing_a_summary_frees_its_burst);
        # with everything, none is left to free: reading what each cites unpacked every archived one
        for summary_id in [] if everything else summaries.keys() - {sid for sid, _ in citing}:
            freed.update(self._cites(owner, summary_id, summaries[summary_id]))
        freed.update(head for c in freed & set(cut) if (head := head_of[c]) is not None)  # summarized as its earlier version was
        moved = {eid: head for eid, head in head_of.items() if head is not None and head not in gone}
        if moved:
            for repoint in self.repoint:
                repoint(owner, moved)
        # each block they are in rewritten once; or, all of them, the owner's indexes killed whole
        hashes.update(self.episodes.remove_all(owner, gone) if everything else self.episodes.remove_many(owner, gone))
        for head in sorted(heads):
            if self.episodes.unlink(owner, head, cut):  # archived: its cold record names them too
                blob = self.episodes.cold_blob(owner, head)
                assert blob is not None  # an archived header always has its cold record (db.check() says so)
                self.episodes.set_cold_blob(owner, head, self.cold.pack(owner, unlinked(self.cold.unpack(owner, blob), cut), blob["hash"]))
        self._forget_bursts(owner, set(summaries))
        self._unsummarize(owner, freed - set(gone), again=action != "retention")
        forgotten = self._forget_sessions(owner, sessions)
        if hashes:
            self.cold.retrain(owner)
            for hook in self.hooks:
                entries += hook(owner, set(hashes), now, action) or ()
            for touch in self.touched:
                touch(owner, sessions, set(hashes))
        if request is not None:  # a request, not pruning (DESIGN 5: it takes everything derived)
            for ask in self.requests:
                entries += ask(owner, now, *request)
        # every record about what went: its episodes and the entries the hooks and requests took
        # (a reviewer's reason names what it judged: test_an_erasure_redacts_what_reviewers_wrote_about_its_lessons)
        self.episodes.audit.redact_erased(owner, {*hashes, *entries}, forgotten, now)
        audit_id = None
        if hashes or action == "erase":
            kept = {"kept": sorted(heads)} if heads else {}
            audit_id = self.episodes.audit.write(
                owner, action, now, reason=reason, count=len(hashes), episodes=list(hashes), hashes=list(hashes.values()), **kept
            )
        return ErasureReport(len(hashes), list(hashes), audit_id, list(dict.fromkeys(entries)))

    def _heads(self, owner: str, cut: Collection[str]) -> dict[str, str | None]:
        """Each cut version's first later version that is not cut (None if there is none), each
        chain walked once: a key updated every month for years cuts dozens of versions."""
        head_of: dict[str, str | None] = {}
        for eid in cut:
            path: list[str] = []
            nxt: str | None = eid
            while nxt is not None and nxt in cut and nxt not in head_of:
                path.append(nxt)
                nxt = self.episodes.successor(owner, nxt)
            head = head_of[nxt] if nxt is not None and nxt in head_of else nxt
            head_of.update(dict.fromkeys(path, head))
        return head_of

    def _old_versions(self, owner: str, cutoff: int, targets: dict[str, None]) -> dict[str, None]:
        """Retention's cut: the superseded versions dated before ``cutoff`` (microseconds) of
        chains that stay (their current version is not among ``targets``), each with every
        version before it."""
        cut: dict[str, None] = {}
        for eid in self.episodes.superseded_ids(owner, None, cutoff, reverse=True):  # the newest cuts its chain's prefix once
            if eid in targets or eid in cut:
                continue
            chain = self.episodes.chain(owner, eid)
            cut.update(dict.fromkeys(chain[: chain.index(eid) + 1]))
        return cut

    def _forget_sessions(self, owner: str, sessions: set[str]) -> set[str]:
        """A session id is capture too: the marks that name a session none of whose episodes is
        left go with the last of them, the lifecycle's burst marks and, through ``forget``, the
        layers' above (nothing of it survives compact(): test_erasing_a_session_forgets_its_id).
        Returns those sessions."""
        if not sessions:
            return set()
        left = {sid for sid in sessions if next(self.episodes.ids_in_session(owner, sid), None) is not None}
        if left != sessions:  # archived episodes are in no session index: their headers say
            for eid in self.episodes.archived_ids(owner):
                header = self.episodes.header(owner, eid)
                if header is not None and header.get("session") in sessions:
                    left.add(header["session"])
        gone = sessions - left
        for sid in gone:
            self.marks.kill((owner, "burst", f"session:{sid}"))
        if gone:
            for forget in self.forget:
                forget(owner, gone)
        return gone

    def _targets(
        self,
        owner: str,
        ids: Iterable[str] | None,
        since: dt.datetime | None,
        until: dt.datetime | None,
        everything: bool,
        superseded: bool = True,
        tags: Sequence[str] = (),
    ) -> dict[str, None]:
        targets: dict[str, None] = {}
        if ids is not None:
            if isinstance(ids, str):
                ids = [ids]
            for eid in ids:
                if self.episodes.header(owner, check_id(eid)) is None:
                    raise NotFoundError(f"episode {eid!r}: no such episode for owner {owner!r}")
                targets[eid] = None
        lo = ts_micros(utc(since, "since")) if since is not None else None
        hi = ts_micros(utc(until, "until")) if until is not None else None
        if tags:  # a time range narrows the tagged ones down
            for tag in tags:
                targets.update(dict.fromkeys(self.episodes.ids_tagged(owner, tag, lo, hi)))
            # archived and superseded episodes are in no tag index: their headers keep the tags
            elsewhere = [*self.episodes.archived_ids(owner, lo, hi), *(self.episodes.superseded_ids(owner, lo, hi) if superseded else ())]
            for eid in elsewhere:
                header = self.episodes.header(owner, eid)
                if header is not None and not set(tags).isdisjoint(header.get("tags") or ()):
                    targets[eid] = None
        elif since is not None or until is not None or everything:
            targets.update(dict.fromkeys(self.episodes.ids_in_time(owner, lo, hi)))
            targets.update(dict.fromkeys(self.episodes.archived_ids(owner, lo, hi)))
            if superseded:
                targets.update(dict.fromkeys(self.episodes.superseded_ids(owner, lo, hi)))
            if everything and superseded and since is None and until is None:
                # and every other episode with a header: the path that asks no finder (``_take``)
                # must not rely on those indexes listing them all (a damaged database, revF)
                targets.update(dict.fromkeys(self.episodes.ids_held(owner)))
        return targets

    def _citing_summaries(self, owner: str, targets: dict[str, None]) -> list[tuple[str, list[str]]]:
        """Summaries citing any target, with what they cite: hot ones through the kind index,
        archived ones through the archive index and their headers' kind (their cites are only in
        the cold record)."""
        if not targets:
            return []
        found = []
        for sid in self.episodes.ids_of_kind(owner, "summary"):
            if sid in targets:  # (going anyway: its record is not read)
                continue
            record = self.episodes.record_of(owner, sid)
            if record and any(c in targets for c in record.get("cites") or ()):
                found.append((sid, list(record["cites"])))
        for sid in self.episodes.archived_ids(owner):
            if sid in targets:
                continue
            header = self.episodes.header(owner, sid)
            if header is None or header.get("kind") != "summary":
                continue
            cold = self.episodes.cold_blob(owner, sid)
            cites = list(self.cold.unpack(owner, cold).get("cites") or ()) if cold is not None else []
            if any(c in targets for c in cites):
                found.append((sid, cites))
        return found

    def _cites(self, owner: str, episode_id: str, header: Mapping[str, Any] | None) -> list[str]:
        """What an episode cites, from its hot record or, archived, its cold one."""
        if header is not None and header.get("status") == "archived":
            blob = self.episodes.cold_blob(owner, episode_id)
            record = self.cold.unpack(owner, blob) if blob is not None else {}
        else:
            record = self.episodes.record_of(owner, episode_id) or {}
        return list(record.get("cites") or ())

    def _forget_bursts(self, owner: str, summaries: set[str]) -> None:
        """The burst marks naming an erased summary go with it: a mark left said its window was
        summarized, and the window's events, freed, were never summarized again
        (test_a_burst_freed_by_an_erasure_is_summarized_again)."""
        if summaries:
            for subs in [subs for subs, sid in self.marks.items((owner, "burst")) if sid in summaries]:
                self.marks.kill(subs)

    def _unsummarize(self, owner: str, ids: set[str], again: bool = True) -> None:
        """Mark the ``summarized`` sources of an erased summary active again (an archived one
        comes back active when restored); with ``again``, ``^LIFE(owner, "burst_freed", ts_us)``
        marks the earliest of them, so the next maintain looks back that far and summarizes them
        anew if they are still a burst: its scan had passed their window
        (test_a_burst_freed_by_an_erasure_is_summarized_again). Retention frees none for that:
        what it leaves of a window is older than its cutoff by the next run, and goes then."""
        hot = []
        for eid in ids:
            header = self.episodes.header(owner, eid)
            if header is None:
                continue
            if header.get("status") == "summarized":
                hot.append((header["ts"], eid))
            elif header.get("status") == "archived" and header.get("archived_from") == "summarized":
                self.episodes.keep_in_header(owner, eid, archived_from="active")
        self.episodes.set_status(owner, [eid for _, eid in hot], "active")
        if again and hot:
            self.marks.set((owner, "burst_freed", ts_micros(min(ts for ts, _ in hot))), True)
