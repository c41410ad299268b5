"""The database facade: ``memdb.open(path)`` gives globals, owners, and the lifecycle.

This is the top of the layer stack; it wires the layers together and adds nothing of its own
but the ``Memory`` handle, which joins an owner's capture, queries and lifecycle operations.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from memdb.episodes import CheckReport, Clock, EpisodeStore, RescoreReport
from memdb.globals import Globals
from memdb.lifecycle import ErasureReport, Lifecycle, MaintenanceReport
from memdb.models import Episode, check_owner
from memdb.query import Owner
from memdb.sanitize import Sanitizer
from memdb.settings import Settings
from memdb.store import LMDBStore, Store
from memdb.summarize import Summarizer

__all__ = ["Database", "Memory", "open"]


class Memory(Owner):
    """One owner's memory: capture, queries, and the lifecycle operations on its episodes."""

    def __init__(self, store: EpisodeStore, owner: str, lifecycle: Lifecycle) -> None:
        super().__init__(store, owner)
        self._lifecycle = lifecycle

    def restore(self, episode_id: str) -> Episode:
        """Bring an archived episode's full record back from cold storage, with its indexes."""
        return self._lifecycle.restore(self, episode_id)

    def archive(self, episode_id: str) -> None:
        """Archive one episode now (the lifecycle does this by rule in ``maintain``)."""
        self._lifecycle.archive(self, episode_id, self.store.now())

    def erase(
        self,
        ids: Iterable[str] | None = None,
        *,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        everything: bool = False,
        reason: str,
    ) -> ErasureReport:
        """Delete episodes (by id, time range, or all) from hot and cold storage and every index,
        with the summaries derived from them. The audit record keeps ids and hashes, no content.
        Freed pages may still hold old bytes until ``db.compact()``."""
        return self._lifecycle.erase(self, ids, since, until, everything, reason)

    def audit(self, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """This owner's audit records, oldest first."""
        return self._lifecycle.audit(self.name, since, until)


class Database:
    """One memdb database: a store, its global key space, and the layers built on it."""

    def __init__(
        self, store: Store, *, sanitizer: Sanitizer | None = None, clock: Clock | None = None, summarizer: Summarizer | None = None
    ) -> None:
        self.store = store
        self.globals = Globals(store)
        self.episodes = EpisodeStore(self.globals, sanitizer=sanitizer, clock=clock)
        self.lifecycle = Lifecycle(self.episodes, summarizer)

    def owner(self, name: str) -> Memory:
        """The handle for one owner's memory; every episode operation and query goes through it."""
        return Memory(self.episodes, check_owner(name), self.lifecycle)

    def owners(self) -> list[str]:
        """Owners with recorded episodes (administrative)."""
        return self.episodes.owners()

    @property
    def settings(self) -> Settings:
        """The rules saved in this database."""
        return self.episodes.settings

    def configure(self, **changes: Any) -> Settings:
        """Change and persist settings (validated as a whole; ConfigError names a bad value); audited."""
        return self.episodes.configure(**changes)

    def check(self) -> CheckReport:
        """Verify that every index agrees with the records."""
        return self.episodes.check()

    def rescore(self, now: dt.datetime | None = None) -> RescoreReport:
        """Recompute every episode's relevance at ``now`` in native batches."""
        return self.episodes.rescore(now)

    def maintain(self, now: dt.datetime | None = None) -> MaintenanceReport:
        """Run the lifecycle: burst summaries, rescoring, archiving, retention (idempotent)."""
        return self.lifecycle.maintain(now)

    def audit(self, owner: str | None = None, since: dt.datetime | None = None, until: dt.datetime | None = None) -> list[dict[str, Any]]:
        """The append-only audit log, oldest first: one owner's, or everyone's with database-wide records."""
        return self.lifecycle.audit(check_owner(owner) if owner is not None else None, since, until)

    def compact(self) -> None:
        """Rewrite the store without free pages, so erased bytes are gone from disk too.

        Needs exclusive use: no other process may have the database open.
        """
        self.flush()
        self.store.compact()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing across globals; nests; rolls back on exception."""
        with self.globals.transaction():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A consistent read-only view for the block."""
        with self.globals.snapshot():
            yield

    def flush(self) -> int:
        """Write buffered access counts now."""
        return self.episodes.flush()

    def close(self) -> None:
        """Flush buffered accesses and close the store; the database cannot be used afterwards."""
        try:
            self.flush()
        finally:
            self.store.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(
    path: str | os.PathLike[str],
    *,
    sanitizer: Sanitizer | None = None,
    clock: Clock | None = None,
    summarizer: Summarizer | None = None,
    **options: Any,
) -> Database:
    """Open (creating if missing) the memdb database in directory ``path`` on LMDB.

    ``sanitizer`` replaces the default PII sanitizer; ``clock`` (returning aware UTC
    datetimes) makes every time rule testable; ``summarizer`` replaces the extractive one
    (e.g. ``AnthropicSummarizer()``). Other options go to LMDBStore: ``map_size`` (initial
    bytes; grows by itself) and ``sync``.
    """
    return Database(LMDBStore(path, **options), sanitizer=sanitizer, clock=clock, summarizer=summarizer)
