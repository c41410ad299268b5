"""The audit log: one writer and one reader shape for every record of what left hot storage,
what was imported, configured, decided or exported. Records keep ids, hashes, rules and
reasons, never an episode's text (an erasure redacts the one line an archive kept)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Collection, Mapping
from typing import Any

from memdb.engine.globals import Global, Globals
from memdb.memory.ids import new_id, time_prefix
from memdb.memory.models import utc

__all__ = ["AuditLog", "content_hash"]


def content_hash(record: Mapping[str, Any]) -> str:
    """A stable SHA-256 of a record, for audit trails that must not keep the text itself."""
    blob = json.dumps(record, sort_keys=True, default=str, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


class AuditLog:
    """``^AUDIT(owner, id)`` for an owner's records and ``^AUDITDB(id)`` for database-wide ones.

    Every record has ``action`` and ``at``; ``entries`` returns each as
    ``{"owner": owner or None, "id": id, **record}``, oldest first.
    """

    def __init__(self, space: Globals) -> None:
        self._space = space
        self._owned = space["AUDIT"]
        self._database = space["AUDITDB"]

    def change(
        self, owner: str | None, action: str, at: dt.datetime, *, written: dt.datetime | None = None, **fields: Any
    ) -> tuple[Global, tuple[str, ...], dict[str, Any]]:
        """The write of one record, for a caller to apply with its other changes in one
        ``Globals.apply``; its id is the last subscript. The id sorts by ``written`` (default
        ``at``): an archive done by ``maintain(now=...)`` happens at ``now`` but is written,
        and ordered among the other records, at the clock's time."""
        record = {"action": action, "at": at, **fields}
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

    def redact_one_lines(self, owner: str, erased: Collection[str], now: dt.datetime) -> None:
        """Erasure beats append-only: an archive record's one-line summary is the erased
        episode's content, so it is replaced by a marker; the record, its hash and its
        reasons stay. No other field of any audit record is ever changed."""
        if not erased:
            return
        for subs, entry in self._owned.items((owner,)):
            if entry.get("episode") in erased and entry.get("one_line"):
                self._owned.set(subs, {**entry, "one_line": f"[erased {now:%Y-%m-%d}]"})

    def owners(self) -> list[str]:
        """Owners with audit records."""
        return [str(o) for o in self._owned.children()]
