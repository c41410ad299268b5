"""Capture writes the same bytes whatever its speed: every key and value of the globals the
write path owns (the record, its header, its index entries, the text index and its statistics)
after a small capture is pinned by a digest, so a change that meant only to be faster cannot
change the format unnoticed (on the C path and, in CI's second pass, on the twin: they agree).
Audit records and what layers above keep (patterns) are left out: their formats are theirs.

The digests were computed by main's code at a1ce113 (and are the same at ad8e9b1), before the
capture path was batched. A change that means to change what capture stores updates them, and
says so in its commit. The batched one changed once without that: only its two chunk stamps
(^EPCV, ^EPLV: random in use, counted by the fixture here), as the first batch of pattern counts
no longer opens a savepoint in the first transaction, which wrote the staged postings in two
parts (pattern counts staged per transaction: every other key and value is as before)."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import types
from collections.abc import Callable
from pathlib import Path

import lmdb
import pytest

import memdb
from benchmarks.bench_capture import episodes
from memdb.engine import codec
from memdb.memory import ids, postings

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)  # after the last of the episodes below
EPISODES = 240
BATCH = 100

# the globals _write_new and TextIndex write (memdb.memory.layout's names)
CAPTURED = (
    "MEM",
    "EPST",
    "EPT",
    "EPG",
    "EPGO",
    "EPK",
    "EPS",
    "EPB",
    "EPTD",
    "EPX",
    "EPXT",
    "EPDN",
    "EPC",
    "EPCV",
    "EPL",
    "EPLV",
    "EPDF",
    "EPN",
)
_PREFIXES = tuple(codec.encode_global(name) for name in CAPTURED)

# sha256 over (len, key, len, value) of each of their LMDB items in key order
DIGESTS = {
    "batched": "a0d767abf52b637f3744a369ead2156afca03689363cad9b829561d0ec015d4c",
    "import": "b3e70a2acc4205217286bce89435d99eec9ea221f285b3c17a30684e98cafbfb",
    "single": "86469fb7779078602c6229b51a4fbcb26fefd656d95569914a0bb194cae2c4af",
}


@pytest.fixture
def fixed_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids count from 0 in each scope, and the text index's chunk stamps count from 1: the two
    random parts of what capture writes."""
    monkeypatch.setattr(ids.secrets, "randbelow", lambda _n: 0)
    monkeypatch.setattr(ids, "_seqs", {})
    stamps = itertools.count(1)
    monkeypatch.setattr(postings, "os", types.SimpleNamespace(urandom=lambda k: next(stamps).to_bytes(k, "big")))


def _digest(path: Path) -> str:
    env = lmdb.open(str(path), readonly=True, lock=False)
    try:
        h = hashlib.sha256()
        with env.begin() as txn:
            for key, value in txn.cursor():
                if key.startswith(_PREFIXES):
                    h.update(len(key).to_bytes(4, "big") + key + len(value).to_bytes(4, "big") + value)
    finally:
        env.close()
    return h.hexdigest()


def _batched(db: memdb.Database) -> None:
    mem, eps = db.owner("ana"), episodes(EPISODES)
    for i in range(0, len(eps), BATCH):
        with db.transaction():
            for ep in eps[i : i + BATCH]:
                mem.record(**ep)


def _import(db: memdb.Database) -> None:
    mem, eps = db.owner("ana"), episodes(EPISODES)
    for i in range(0, len(eps), BATCH):
        mem.import_episodes(eps[i : i + BATCH], source="test")


def _single(db: memdb.Database) -> None:
    mem = db.owner("ana")
    for ep in episodes(EPISODES)[:60]:
        mem.record(**ep)


CAPTURES: dict[str, Callable[[memdb.Database], None]] = {"batched": _batched, "import": _import, "single": _single}


@pytest.mark.parametrize("how", sorted(CAPTURES))
@pytest.mark.usefixtures("fixed_ids")
def test_capture_writes_the_pinned_bytes(tmp_path: Path, how: str) -> None:
    path = tmp_path / "db"
    with memdb.open(path, sync=False, clock=lambda: NOW) as db:
        CAPTURES[how](db)
    assert _digest(path) == DIGESTS[how]


def test_a_capture_erased_in_its_own_transaction_leaves_no_document_frequency(tmp_path: Path) -> None:
    """Capture stages its document frequencies until the commit: an erasure of everything in the
    same transaction takes them too (``Globals.discard_deferred`` writes what was staged first)."""
    with memdb.open(tmp_path / "db", sync=False, clock=lambda: NOW) as db:
        mem = db.owner("ana")
        with db.transaction():
            mem.record(kind="debug", summary="Deploy failed on the staging cluster", outcome="failure", ts=NOW)
            mem.erase(everything=True, reason="test")
        assert list(db.globals["EPDF"].items()) == []
        assert db.check().ok
