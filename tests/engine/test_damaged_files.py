"""A damaged database gives CorruptionError naming what is wrong and how to recover, never a
signal, a hang or a raw exception: the checks of memdb/engine/lmdbfile.py before LMDB maps
the file, the zero-length rule of memdb/engine/lmdbdir.py, the order guards of the store's
scans and codec.unpack_value's check of every stored value. Real LMDB files, real damage.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import lmdb
import msgpack
import pytest

import memdb
from memdb.engine import codec
from memdb.engine.globals import Globals
from memdb.engine.store import LMDBStore
from memdb.errors import CorruptionError, CorruptKeyError, CorruptValueError, StoreError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
pytestmark = pytest.mark.lmdb_only


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed memdb database of a few hundred episodes, a value on overflow pages and a
    freed one (so the free tree has entries): its data.mdb and lock.mdb."""
    path = tmp_path_factory.mktemp("pristine") / "db"
    t0 = dt.datetime(2026, 7, 1, tzinfo=dt.UTC)
    with memdb.open(path, clock=lambda: t0) as db:
        mem = db.owner("ana")
        for i in range(150):
            mem.record(
                "debug", f"Deploy {i} of project x failed: the migration held lock {i}", outcome="failure",
                tags=["project-x", f"t{i % 7}"], lesson=f"run migration {i} before the deploy window", ts=t0,
            )  # fmt: skip
        g = db.globals["FUZZ"]
        g["big"] = "x" * 30000
        g["gone"] = "y" * 20000
        del g["gone"]
    return path


def _copy(pristine: Path, dest: Path, data: bytes | None = None) -> Path:
    dest.mkdir(parents=True)
    shutil.copyfile(pristine / "lock.mdb", dest / "lock.mdb")
    (dest / "data.mdb").write_bytes((pristine / "data.mdb").read_bytes() if data is None else data)
    return dest


def _trials(dirs: list[Path], **options: Any) -> list[dict[str, Any]]:
    """Run damage_trials.py on ``dirs`` (one forked process per trial) and return its reports."""
    spec = dirs[0].parent / "trials.json"
    spec.write_text(json.dumps({"dirs": [str(d) for d in dirs], "options": options, "seconds": 20}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(HERE / "damage_trials.py"), str(spec)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(reports) == len(dirs)
    return reports


def _assert_clean(reports: list[dict[str, Any]]) -> Counter[str]:
    """Every trial opened, read everything and wrote (0), or raised CorruptionError (3)."""
    names = {0: "opened", 3: "CorruptionError"}
    bad = [r for r in reports if r["status"] not in names]
    assert not bad, "\n\n".join(f"{r['dir']}: status {r['status']}\n{r['detail']}" for r in bad[:5])
    for r in reports:
        if r["status"] == 3:  # says what is wrong and how to recover
            assert "damaged" in r["detail"] and CorruptionError.HINT in r["detail"], r["detail"]
    return Counter(names[r["status"]] for r in reports)


# --- the fuzz test ------------------------------------------------------------------------------


def _truncations(size: int, psize: int, rnd: random.Random) -> list[int]:
    """30 lengths: the edges of the meta pages, 8 KiB and half (issue 25's SIGBUS), then random."""
    edges = [0, 1, 100, psize - 1, psize, 2 * psize - 1, 2 * psize, 8192, size // 2, size - psize, size - 1]
    return edges + sorted(rnd.randrange(1, size) for _ in range(30 - len(edges)))


def test_truncated_and_flipped_files_give_corruption_error_or_a_clean_open(pristine: Path, tmp_path: Path) -> None:
    """30 truncations and 60 damaged files (one to three bytes changed anywhere, or in a meta
    page): each in a process of its own, opened, read node by node and written to. Without the
    checks, 8 KiB or half a file was SIGBUS, and about one flip in twenty SIGBUS or SIGSEGV."""
    rnd = random.Random(25)
    data = (pristine / "data.mdb").read_bytes()
    psize = int.from_bytes(data[40:44], sys.byteorder)  # meta page 0's page size
    dirs = [_copy(pristine, tmp_path / f"cut{i}", data[:n]) for i, n in enumerate(_truncations(len(data), psize, rnd))]
    for i in range(60):
        damaged = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randrange(len(data)) if i % 4 else rnd.choice((0, psize)) + rnd.randrange(16, 152)
            damaged[at] ^= rnd.randrange(1, 256)
        dirs.append(_copy(pristine, tmp_path / f"flip{i}", bytes(damaged)))
    first = _trials(dirs)
    outcomes = _assert_clean(first)
    # A cut that takes only free pages off the end is no damage (LMDB never wrote them): it
    # opens, and every node reads. Every other cut is refused, by the page walk and by the
    # meta and length checks alone (the second run has no page walk).
    refused = {r["dir"] for r in first[:30] if r["status"] == 3}
    assert len(refused) >= 25 and outcomes["CorruptionError"] >= len(refused)
    assert {r["dir"] for r in _trials(dirs[:30], verify=False) if r["status"] == 3} == refused


def test_an_intact_copy_opens_cleanly_in_the_trial_runner(pristine: Path, tmp_path: Path) -> None:
    (report,) = _trials([_copy(pristine, tmp_path / "intact")])
    assert report["status"] == 0, report["detail"]


# --- each case by name ------------------------------------------------------------------------


_CUT = r"data\.mdb: damaged: .*(is cut short|past the end of the file|past its end is not free)"


@pytest.mark.parametrize("verify", [True, False])
def test_a_file_cut_to_8_kib_or_half_is_refused_before_mapping(pristine: Path, tmp_path: Path, verify: bool) -> None:
    """issue 25: both were SIGBUS. With the page walk a cut shows as the first page it reads
    past the end; without it, as a page past the end the free list does not hold (or as the
    free tree's own page, cut off)."""
    data = (pristine / "data.mdb").read_bytes()
    for n in (8192, len(data) // 2):
        path = _copy(pristine, tmp_path / f"cut{n}", data[:n])
        with pytest.raises(CorruptionError, match=_CUT) as info:
            LMDBStore(path, verify=verify)
        assert "`memdb import` an earlier `memdb export` file" in str(info.value)


def _short_but_sound(path: Path) -> tuple[int, int]:
    """Write random transactions with plain LMDB until data.mdb ends before the last page the
    meta page counts (the pages past its end were taken and given back before a commit, so
    never written); (the file's length, the length the meta page promises)."""
    env = lmdb.open(str(path), map_size=1 << 30, max_dbs=0, sync=False)
    rnd = random.Random(8)
    try:
        for _ in range(400):
            with env.begin(write=True) as w:
                keys = [b"k%07d" % rnd.randrange(10**6) for _ in range(rnd.randrange(1, 200))]
                for k in keys:
                    w.put(k, bytes(rnd.choice([20, 300, 3000, 9000])))
                for k in keys[: len(keys) * rnd.randrange(10) // 10]:
                    w.delete(k)
            promised = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
            size = (path / "data.mdb").stat().st_size
            if size < promised:
                return size, promised
    finally:
        env.close()
    raise AssertionError("400 transactions and data.mdb never ended before its last page")


def test_a_file_may_end_before_pages_that_are_free_but_not_before_one_in_use(tmp_path: Path) -> None:
    """LMDB never writes pages a transaction took and gave back: a sound file can end before
    the last page its meta counts (refusing that refused sound databases: 607 of 21,876 opens
    while another process wrote). Only a page past the end that is not free is damage."""
    path = tmp_path / "short"
    size, promised = _short_but_sound(path)
    for verify in (True, False):
        with LMDBStore(path, verify=verify) as store, store.read() as r:
            assert len(list(r.scan(b"k", b"l"))) > 0
    psize = int.from_bytes((path / "data.mdb").read_bytes()[40:44], sys.byteorder)
    with open(path / "data.mdb", "r+b") as f:
        f.truncate(size - 20 * psize)  # into pages in use
    for verify in (True, False):
        with pytest.raises(CorruptionError, match=_CUT):
            LMDBStore(path, verify=verify)
    assert promised > size


def test_an_empty_data_file_beside_a_lock_file_is_refused(pristine: Path, tmp_path: Path) -> None:
    """issue 25: cut to 0 bytes it opened silently as an empty database."""
    path = _copy(pristine, tmp_path / "empty", b"")
    with pytest.raises(CorruptionError, match=r"data.mdb: damaged: is empty \(0 bytes\), but lock.mdb shows the directory held a database"):
        LMDBStore(path)
    assert (path / "data.mdb").stat().st_size == 0  # nothing written into it
    (path / "data.mdb").unlink()
    with pytest.raises(CorruptionError, match=r"data\.mdb: damaged: is missing, but lock\.mdb shows"):
        LMDBStore(path)
    assert not (path / "data.mdb").exists()


def test_an_empty_data_file_alone_is_a_new_database(tmp_path: Path) -> None:
    """What a first open killed before LMDB wrote its meta pages leaves, if it left no lock.mdb."""
    path = tmp_path / "new"
    path.mkdir()
    (path / "data.mdb").write_bytes(b"")
    with LMDBStore(path) as store:
        with store.write() as w:
            w.put(b"k", b"v")
    with LMDBStore(path) as store, store.read() as r:
        assert r.get(b"k") == b"v"


def test_a_file_that_is_not_lmdb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    path.mkdir()
    (path / "data.mdb").write_bytes(b"SQLite format 3\x00" + bytes(16384))
    with pytest.raises(CorruptionError, match="meta page 0 has no LMDB meta header"):
        LMDBStore(path)


def test_a_node_that_runs_past_its_page_is_refused_when_pages_are_checked(pristine: Path, tmp_path: Path) -> None:
    data = bytearray((pristine / "data.mdb").read_bytes())
    psize = int.from_bytes(data[40:44], sys.byteorder)
    root = int.from_bytes(data[psize + 128 : psize + 136], sys.byteorder)  # meta page 1 is the newer: main root
    leaf = _first_leaf(data, psize, root)
    node = leaf * psize + int.from_bytes(data[leaf * psize + 16 : leaf * psize + 18], sys.byteorder)
    data[node : node + 2] = b"\xff\xff"  # the value's size, low half: far past the page
    path = _copy(pristine, tmp_path / "node", bytes(data))
    with pytest.raises(CorruptionError, match=f"page {leaf} .* has a node whose key or value runs past the page"):
        LMDBStore(path)


def _first_leaf(data: bytearray, psize: int, pgno: int) -> int:
    while int.from_bytes(data[pgno * psize + 10 : pgno * psize + 12], sys.byteorder) == 0x01:  # a branch page
        node = pgno * psize + int.from_bytes(data[pgno * psize + 16 : pgno * psize + 18], sys.byteorder)
        pgno = int.from_bytes(data[node : node + 4], sys.byteorder) | int.from_bytes(data[node + 4 : node + 6], sys.byteorder) << 32
    return pgno


def _out_of_order(pristine: Path, tmp_path: Path) -> Path:
    """A flipped key byte the page checks cannot see: the first leaf's last key now sorts
    before every other."""
    data = bytearray((pristine / "data.mdb").read_bytes())
    psize = int.from_bytes(data[40:44], sys.byteorder)
    root = int.from_bytes(data[psize + 128 : psize + 136], sys.byteorder)
    leaf = _first_leaf(data, psize, root)
    lower = int.from_bytes(data[leaf * psize + 12 : leaf * psize + 14], sys.byteorder)
    last = leaf * psize + int.from_bytes(data[leaf * psize + lower - 2 : leaf * psize + lower], sys.byteorder)
    data[last + 8] = 0x00
    return _copy(pristine, tmp_path / "order", bytes(data))


@pytest.mark.parametrize("reverse", [False, True])
def test_keys_out_of_order_raise_in_scan_columns_as_in_scan(pristine: Path, tmp_path: Path, reverse: bool) -> None:
    """scan_columns (which items() reads its chunks with) checks every key's order, not only
    the first's, and names the key scan names."""
    path = _out_of_order(pristine, tmp_path)
    with LMDBStore(path) as store, store.read() as txn:
        with pytest.raises(CorruptionError, match="out of order") as by_scan:
            list(txn.scan(b"\x00", b"\xff", reverse))
        with pytest.raises(CorruptionError, match="out of order") as by_columns:
            txn.scan_columns(b"\x00", b"\xff", reverse)
    assert str(by_columns.value) == str(by_scan.value)


def test_keys_out_of_order_end_a_scan_with_corruption_error_not_a_loop(pristine: Path, tmp_path: Path) -> None:
    """A chunked scan seeking past the last key it saw went round for ever; now the step
    backwards raises."""
    path = _out_of_order(pristine, tmp_path)
    with LMDBStore(path) as store:
        space = Globals(store)
        with pytest.raises(CorruptionError, match="out of order"):
            for name in space.names():
                for _ in space[name].items():
                    pass


# --- stored values and keys -------------------------------------------------------------------

_BAD_VALUES = {
    "extra data": codec.pack_value("ok") + b"\x00",
    "invalid UTF-8": b"\xa2\xff\xfe",
    "datetime out of range": msgpack.ExtType(1, (2**70).to_bytes(9, "big", signed=True)),
    "datetime of 3 bytes": msgpack.ExtType(1, b"\x00\x00\x01"),
    "truncated": codec.pack_value("a longer string")[:-3],
    "unhashable map key": b"\x81\x91\x01\x02",
    "reserved byte": b"\xc1",
}


@pytest.mark.parametrize("kind", list(_BAD_VALUES))
def test_a_value_that_does_not_decode_is_corrupt_value_error(tmp_path: Path, kind: str) -> None:
    raw = _BAD_VALUES[kind]
    packed = raw if isinstance(raw, bytes) else msgpack.packb(raw)
    with memdb.open(tmp_path / "db") as db:
        g = db.globals["T"]
        g["x"] = 1
        with db.store.write() as w:
            w.put(g.key(("x",)), packed)
        for read in (lambda: g["x"], lambda: g.get("x"), lambda: list(g.items()), lambda: g.increment(("x",))):
            with pytest.raises(CorruptValueError) as info:
                read()
            assert isinstance(info.value, CorruptionError) and isinstance(info.value, StoreError)
            assert f"({len(packed)} bytes): damaged: cannot be decoded" in str(info.value) and CorruptionError.HINT in str(info.value)


def test_a_key_that_does_not_decode_is_corruption_error(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        g = db.globals["T"]
        with db.store.write() as w:
            w.put(g.key(()) + b"\x7f\x01", codec.pack_value(1))
        with pytest.raises(CorruptKeyError) as info:
            list(g.items())
        assert isinstance(info.value, CorruptionError)


def test_values_memdb_writes_still_decode(tmp_path: Path) -> None:
    values = ["text", 1, -2**63, 2**64 - 1, 1.5, None, True, b"\x00", [1, [2]], {"a": {"b": 1}}, {1: "int key"},
              dt.datetime(2026, 7, 1, 12, 30, tzinfo=dt.UTC), msgpack.ExtType(9, b"user's own")]  # fmt: skip
    for value in values:
        assert codec.unpack_value(codec.pack_value(value)) == value
