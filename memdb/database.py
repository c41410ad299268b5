"""The database facade: ``memdb.open(path)`` gives globals, transactions and (above) owners."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memdb.globals import Globals
from memdb.models import check_owner
from memdb.store import LMDBStore, Store

if TYPE_CHECKING:
    from datetime import datetime

    from memdb.episodes import CheckReport, Clock, EpisodeStore, RescoreReport
    from memdb.query import Owner
    from memdb.sanitize import Sanitizer
    from memdb.settings import Settings

__all__ = ["Database", "open"]


class Database:
    """One memdb database: a store, its global key space, and the layers built on it."""

    def __init__(self, store: Store, *, sanitizer: Sanitizer | None = None, clock: Clock | None = None) -> None:
        self.store = store
        self.globals = Globals(store)
        self._sanitizer = sanitizer
        self._clock = clock
        self._episodes: EpisodeStore | None = None

    @property
    def episodes(self) -> EpisodeStore:
        """The episodic layer (built on first use)."""
        if self._episodes is None:
            from memdb.episodes import EpisodeStore

            self._episodes = EpisodeStore(self.globals, sanitizer=self._sanitizer, clock=self._clock)
        return self._episodes

    def owner(self, name: str) -> Owner:
        """The handle for one owner's memory; every episode operation and query goes through it."""
        from memdb.query import Owner

        return Owner(self.episodes, check_owner(name))

    def owners(self) -> list[str]:
        """Owners with recorded episodes (administrative)."""
        return self.episodes.owners()

    @property
    def settings(self) -> Settings:
        """The rules saved in this database."""
        return self.episodes.settings

    def configure(self, **changes: object) -> Settings:
        """Change and persist settings (validated as a whole; ConfigError names a bad value)."""
        return self.episodes.configure(**changes)

    def check(self) -> CheckReport:
        """Verify that every index agrees with the records."""
        return self.episodes.check()

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

    def rescore(self, now: datetime | None = None) -> RescoreReport:
        """Recompute every episode's relevance at ``now`` in native batches."""
        return self.episodes.rescore(now)

    def flush(self) -> int:
        """Write buffered access counts now."""
        return self.episodes.flush() if self._episodes is not None else 0

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


def open(path: str | os.PathLike[str], *, sanitizer: Sanitizer | None = None, clock: Clock | None = None, **options: Any) -> Database:
    """Open (creating if missing) the memdb database in directory ``path`` on LMDB.

    ``sanitizer`` replaces the default PII sanitizer; ``clock`` (returning aware UTC
    datetimes) makes every time rule testable. Other options go to LMDBStore:
    ``map_size`` (initial bytes; grows by itself) and ``sync``.
    """
    return Database(LMDBStore(path, **options), sanitizer=sanitizer, clock=clock)
