"""The audit log: one writer and one reader shape for every record of what left hot storage,
what was imported, configured, decided or exported. Records keep ids, hashes, rules and
reasons, never an episode's text (an erasure redacts the one line an archive kept).

Every string a record holds passes the database's sanitizer on its way in, fail closed: an
erasure requested "from ana@example.com" keeps ``<EMAIL_1>``, an import's source path its
placeholders, and a sanitizer that fails refuses the write (the caller's transaction, and with
it the erasure or import, rolls back). Ids, hashes and codec names are kept exactly.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import unicodedata
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Final

from memdb.engine.globals import Global, Globals
from memdb.errors import SanitizerError
from memdb.memory.ids import new_id, time_prefix
from memdb.memory.models import utc
from memdb.memory.sanitize import RegexSanitizer, sanitize_fields

__all__ = ["AuditLog", "content_hash", "names_person"]

_EXACT: Final = frozenset({"action", "episode", "episodes", "entry", "hashes", "kept", "content_hash", "steps_sha256", "codec", "kind"})
"""Fields holding ids, hashes and names memdb made or checked: kept as they are (a hash's digits
can read as a card). ``kind`` is one of the configured kinds by the time a record is written
(every backfill of a historic record writes one: sanitizing it cost a tenth of such a capture)."""


_CONTENT: Final = ("one_line", "reason", "key")
"""What a record about an episode may keep of its content: redacted when the episode is erased."""
_SESSION_NAMED: Final = ("session", "path", "error", "reason")
"""Where a record may name a session (a distill, a timeline's export path): redacted when the
session is forgotten; never its outcome or status, which a session named "success" would hit."""


def content_hash(record: Mapping[str, Any]) -> str:
    """A stable SHA-256 of a record, for audit trails that must not keep the text itself."""
    blob = json.dumps(record, sort_keys=True, default=str, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


class AuditLog:
    """``^AUDIT(owner, id)`` for an owner's records and ``^AUDITDB(id)`` for database-wide ones.

    Every record has ``action`` and ``at``; ``entries`` returns each as
    ``{"owner": owner or None, "id": id, **record}``, oldest first.
    """

    def __init__(self, space: Globals, sanitize: Callable[[dict[str, str]], dict[str, str]] | None = None) -> None:
        self._space = space
        self._owned = space["AUDIT"]
        self._database = space["AUDITDB"]
        builtin = RegexSanitizer()
        self._sanitize = sanitize or (lambda texts: sanitize_fields(builtin, texts))

    def clean(self, action: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """``fields`` with every string in them (nested ones and dict keys too) sanitized, but
        ids and hashes. Raises SanitizerError (naming ``action``, never the text) if it fails."""
        texts: dict[str, str] = {}
        for k, v in fields.items():
            if k not in _EXACT:
                texts.update((f"{k}#{i}", s) for i, s in enumerate(_strings(v)))
        if not texts:
            return dict(fields)
        try:
            clean = iter(self._sanitize(texts).values())
        except SanitizerError as exc:
            raise SanitizerError(f"audit record {action!r}: {exc} (nothing written)") from None
        return {k: v if k in _EXACT else _put_back(v, clean) for k, v in fields.items()}

    def change(
        self, owner: str | None, action: str, at: dt.datetime, *, written: dt.datetime | None = None, **fields: Any
    ) -> tuple[Global, tuple[str, ...], dict[str, Any]]:
        """The write of one record, for a caller to apply with its other changes in one
        ``Globals.apply``; its id is the last subscript. The id sorts by ``written`` (default
        ``at``): an archive done by ``maintain(now=...)`` happens at ``now`` but is written,
        and ordered among the other records, at the clock's time."""
        record = {"action": action, "at": at, **self.clean(action, fields)}
        stamp = written or at
        if owner is None:
            return self._database, (new_id(stamp),), record
        return self._owned, (owner, new_id(stamp, owner)), record

    def write(self, owner: str | None, action: str, at: dt.datetime, **fields: Any) -> str:
        """Write one record now (inside the caller's transaction, if any); returns its id."""
        g, subs, record = self.change(owner, action, at, **fields)
        g.set(subs, record)
        return subs[-1]

    def entries(self, owner: str | None = None, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """Records oldest first: one owner's, or (``owner=None``) every owner's with the
        database-wide ones; ``since`` inclusive, ``until`` exclusive."""
        lo = time_prefix(utc(since, "since")) if since else None
        hi = time_prefix(utc(until, "until")) if until else None
        out: list[dict[str, Any]] = []
        owners = [owner] if owner is not None else [str(o) for o in self._owned.children()]
        for name in owners:
            out.extend({"owner": name, "id": subs[1], **v} for subs, v in self._owned.range((name,), lo, hi))
        if owner is None:
            out.extend({"owner": None, "id": subs[0], **v} for subs, v in self._database.range((), lo, hi))
        return sorted(out, key=lambda a: str(a["id"]))

    def redact_erased(self, owner: str, erased: Collection[str], sessions: Collection[str], now: dt.datetime) -> None:
        """Erasure beats append-only: what a record about an erased episode (``episode`` or
        ``successor``) or knowledge entry (``entry``; ``erased`` holds both kinds of id) keeps of
        its content is replaced by a marker: an archive's one-line summary, a version's reason (a
        caller's words, or a fact's key), a fact's key, and a reviewer's reason for rejecting or
        quarantining a lesson; so is every mention of a session none of whose episodes is left
        (``sessions``: a session id is capture too), in a distill or export record. Ids, hashes,
        actions, rules, scores and counts stay, and so do the ``erase`` records themselves, whose
        reasons are memdb's words for why an entry went; no other field of any record is ever
        changed (test_erasure_redacts_what_audit_records_keep,
        test_an_erasure_redacts_what_reviewers_wrote_about_its_lessons)."""
        if not erased and not sessions:
            return
        marker = f"[erased {now:%Y-%m-%d}]"
        for subs, entry in self._owned.items((owner,)):
            new = dict(entry)
            about = entry.get("episode") in erased or entry.get("successor") in erased or entry.get("entry") in erased
            if about and entry.get("action") != "erase":
                new.update((f, marker) for f in _CONTENT if entry.get(f))
            session = entry.get("session")
            if isinstance(session, str) and session in sessions:
                new = {k: _whole_replaced(v, session, marker) if k in _SESSION_NAMED and isinstance(v, str) else v for k, v in new.items()}
            if new != entry:
                self._owned.set(subs, new)

    def forget_member(self, owner: str, marker: str) -> None:
        """An owner's erasure (``memdb.lifecycle.erase.Erasure.erase_owner``) beats append-only
        too: where a database-wide ``configure`` record names the owner as a member of a team
        (``changes.teams``, from and to), ``marker`` stands instead. No other field changes."""
        for subs, entry in self._database.items(()):
            teams = (entry.get("changes") or {}).get("teams") if entry.get("action") == "configure" else None
            if not isinstance(teams, Mapping):
                continue
            new = {side: _without(lists, owner, marker) for side, lists in teams.items()}
            if new != teams:
                self._database.set(subs, {**entry, "changes": {**entry["changes"], "teams": new}})

    def forget_actor(self, owner: str, marker: str, actions: Collection[str]) -> int:
        """An owner's erasure beats append-only here too: where another owner's record of one of
        ``actions`` names ``owner`` as the person who acted (``by``: a reviewer's approval of a
        teammate's lesson), ``marker`` stands instead; how many records. Reads every other
        owner's record: the owner's own go with it (an archive's record per episode archived)."""
        named = [
            (subs, entry) for other in list(self._owned.children()) if other != owner
            for subs, entry in self._owned.items((other,))
            if names_person(entry.get("by"), owner) and entry.get("action") in actions
        ]  # fmt: skip
        for subs, entry in named:
            self._owned.set(subs, {**entry, "by": marker})
        return len(named)

    def owners(self) -> list[str]:
        """Owners with audit records."""
        return [str(o) for o in self._owned.children()]


def _whole_replaced(text: str, word: str, marker: str) -> str:
    r"""``text`` with ``marker`` for each whole mention of ``word``, leftmost first: one that no
    letter or digit touches on either side (a session "a" is not in "failed"; "_" is no letter).
    The same as ``re.sub(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", marker, text)``
    (``[^\W_]`` is ``str.isalnum``), without a pattern compiled per word: an erasure forgetting
    a thousand sessions spent 0.2 s compiling them (test_whole_replaced_is_the_per_session_pattern)."""
    if not word:  # (no session is "": a header's session is kept only when given)
        return text
    out: list[str] = []
    start = pos = 0
    while (at := text.find(word, pos)) >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            out += (text[start:at], marker)
            start = pos = end
        else:
            pos = at + 1
    return "".join([*out, text[start:]]) if out else text


def _without(teams: Any, owner: str, marker: str) -> Any:
    """A ``teams`` setting (team -> members) with ``marker`` for ``owner``; anything else as it is."""
    if not isinstance(teams, Mapping):
        return teams
    return {t: [marker if m == owner else m for m in members] if isinstance(members, list) else members for t, members in teams.items()}


def _strings(value: Any) -> Iterator[str]:
    """Every str in a value, dict keys included, in the order ``_put_back`` takes them back."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _put_back(value: Any, clean: Iterator[str]) -> Any:
    if isinstance(value, str):
        return next(clean)
    if isinstance(value, Mapping):
        return {_put_back(k, clean): _put_back(v, clean) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_put_back(v, clean) for v in value]
    return value


def names_person(by: object, name: str) -> bool:
    """Whether a record's ``by`` names ``name``: compared in NFC, as an owner's name is kept, since
    ``by`` is kept as typed ("José" decomposed; a final read's find: such a reviewer outlived
    ``erase_owner``)."""
    return isinstance(by, str) and unicodedata.normalize("NFC", by) == unicodedata.normalize("NFC", name)
