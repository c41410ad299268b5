"""LMDB's data file read without mapping it, so a damaged ``data.mdb`` is refused with
CorruptionError before LMDB maps it: a read past the end of a mapped file is SIGBUS, and a
node whose size was flipped sends LMDB reading far outside its page, so neither would ever
be an exception.

``read_meta`` checks the two meta pages, and ``check_length`` that the file holds every page
they may reach. ``walk`` follows every page the newest meta's two B-trees reach (the main
tree and LMDB's free-page tree) and proves that each lies inside the file, is the page it
claims to be, and that every node, key, value and overflow run lies inside its page or the
file. After a clean walk LMDB only reads memory of the file. Pages are read with ``pread``: a
file that shrinks under the walk gives short reads, never a signal.

The layout is LMDB 0.9's (the version py-lmdb bundles), 64-bit, native byte order, as
``mdb.c`` defines it; offsets are from the start of a page:

=======  =====================================================================================
page     ``pgno`` u64 @0, ``pad`` u16 @8, ``flags`` u16 @10, then ``lower`` u16 @12 and
         ``upper`` u16 @14 (branch and leaf pages) or ``pages`` u32 @12 (the first page of an
         overflow run); node offsets (u16 each) from @16 up to ``lower``; nodes from ``upper``
meta     at @16 of pages 0 and 1: ``magic`` u32 (0xBEEFC0DE), ``version`` u32 (1), ``address``
         u64, ``mapsize`` u64, two tree records (free @40, main @88: ``pad`` u32, where the
         free record keeps the page size, ``flags`` u16, ``depth`` u16, ``branch``, ``leaf``,
         ``overflow``, ``entries`` and ``root`` u64), ``last_pg`` u64 @136, ``txnid`` u64 @144;
         LMDB uses the meta with the larger ``txnid``
node     ``lo`` u16, ``hi`` u16, ``flags`` u16, ``ksize`` u16, then the key and the value; a
         leaf's value has ``lo | hi << 16`` bytes, or is the u64 page number of an overflow run
         (flag ``F_BIGDATA``); a branch node's child page is ``lo | hi << 16 | flags << 32``
free     the free tree maps a txnid (u64 key) to a list of page numbers (u64 count, then the
         pages) that transaction freed
=======  =====================================================================================
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from memdb.errors import CorruptionError

__all__ = ["MAGIC", "Meta", "Tree", "check_length", "newest_txnid", "read_meta", "walk"]

MAGIC: Final = 0xBEEFC0DE
_VERSION: Final = 1
_PAGE_HEADER: Final = 16
_META_BYTES: Final = 152  # page header + MDB_meta
_MIN_PAGE, _MAX_PAGE = 512, 65536
_P_INVALID: Final = (1 << 64) - 1
_P_BRANCH, _P_LEAF, _P_OVERFLOW, _P_META = 0x01, 0x02, 0x04, 0x08
_F_BIGDATA: Final = 0x01
_INTEGERKEY: Final = 0x08  # the free tree's flags: its keys are txnids
_MAX_KEY: Final = 511  # the bundled LMDB's MDB_MAXKEYSIZE
_MAX_DEPTH: Final = 32  # LMDB's CURSOR_STACK: a deeper tree cannot be read
_TREE: Final = struct.Struct("=IHHQQQQQ")
_META: Final = struct.Struct("=IIQQ")
_TAIL: Final = struct.Struct("=QQ")
_U64: Final = struct.Struct("=Q")
_U32: Final = struct.Struct("=I")
# The walk reads nodes as u16 words in little-endian order (lo before hi); other platforms
# get the meta checks only.
SUPPORTED: Final = sys.byteorder == "little" and struct.calcsize("P") == 8


@dataclass(frozen=True)
class Tree:
    """One of a meta page's two B-tree records."""

    flags: int
    depth: int
    branch_pages: int
    leaf_pages: int
    overflow_pages: int
    entries: int
    root: int


@dataclass(frozen=True)
class Meta:
    """The meta page LMDB will use: the newer of the two."""

    slot: int
    txnid: int
    last_pgno: int
    page_size: int
    map_size: int
    free: Tree
    main: Tree


def _damaged(where: str, reason: str) -> CorruptionError:
    return CorruptionError(f"{where}: damaged: {reason} ({CorruptionError.HINT})")


def _pread(fd: int, size: int, offset: int) -> bytes:
    data = os.pread(fd, size, offset)
    while len(data) < size:  # pread may return less than asked before the end of the file
        more = os.pread(fd, size - len(data), offset + len(data))
        if not more:
            break
        data += more
    return data


def _parse_meta(page: bytes, slot: int, where: str) -> Meta:
    pgno = _U64.unpack_from(page, 0)[0]
    flags = struct.unpack_from("=H", page, 10)[0]
    magic, version, _address, map_size = _META.unpack_from(page, _PAGE_HEADER)
    if magic != MAGIC or not flags & _P_META:
        raise _damaged(where, f"meta page {slot} has no LMDB meta header (magic {magic:#010x}, flags {flags:#06x})")
    if version != _VERSION:
        raise _damaged(where, f"meta page {slot} has LMDB data version {version}, not {_VERSION}")
    if pgno != slot:
        raise _damaged(where, f"meta page {slot} says it is page {pgno}")
    free, main = (Tree(*_TREE.unpack_from(page, at)[1:]) for at in (40, 88))
    page_size = _TREE.unpack_from(page, 40)[0]
    last_pgno, txnid = _TAIL.unpack_from(page, 136)
    return Meta(slot, txnid, last_pgno, page_size, map_size, free, main)


def read_meta(fd: int, where: str) -> Meta:
    """Check both meta pages of the data file open at ``fd``; return the newer. Raises
    CorruptionError naming what is wrong. ``check_length`` checks the length they promise."""
    head = _pread(fd, _META_BYTES, 0)
    if len(head) < _META_BYTES:
        raise _damaged(where, f"{os.fstat(fd).st_size} bytes is shorter than LMDB's two meta pages")
    first = _parse_meta(head, 0, where)
    psize = first.page_size
    if psize & (psize - 1) or not _MIN_PAGE <= psize <= _MAX_PAGE:
        raise _damaged(where, f"meta page 0 gives a page size of {psize} bytes (a power of two from 512 to 65536)")
    head = _pread(fd, _META_BYTES, psize)
    if len(head) < _META_BYTES:
        raise _damaged(where, f"{os.fstat(fd).st_size} bytes is shorter than two meta pages of {psize} bytes")
    second = _parse_meta(head, 1, where)
    if second.page_size != psize:
        raise _damaged(where, f"the meta pages disagree on the page size ({psize} and {second.page_size})")
    for meta in (first, second):
        if meta.last_pgno < 1:
            raise _damaged(where, f"meta page {meta.slot} says the file holds {meta.last_pgno + 1} pages")
    meta = second if second.txnid > first.txnid else first
    _check_tree_record(meta, meta.main, "main", 0, where)
    _check_tree_record(meta, meta.free, "free", _INTEGERKEY, where)
    return meta


def newest_txnid(fd: int) -> int:
    """The larger txnid of the two meta pages, read without checks (-1 if unreadable): a
    cheap way to see whether a commit came between two moments."""
    head = _pread(fd, _META_BYTES, 0)
    if len(head) < _META_BYTES:
        return -1
    psize = _U32.unpack_from(head, 40)[0]
    other = _pread(fd, _META_BYTES, psize) if _MIN_PAGE <= psize <= _MAX_PAGE else b""
    txnids: list[int] = [_U64.unpack_from(page, 144)[0] for page in (head, other) if len(page) == _META_BYTES]
    return max(txnids)


def check_length(fd: int, meta: Meta, where: str) -> None:
    """Refuse a file that ends before a page the trees of ``meta`` may reach (LMDB would read
    past the end of its map: SIGBUS).

    A sound file may end before ``last_pgno``: pages a transaction took and gave back before
    it committed are never written, and if they are the last ones the file stops short (seen
    in 607 of 21,876 opens while another process wrote, and after 32 transactions of
    tests/engine/test_damaged_files.py). So every page past the end must be on the free list;
    the free tree is read only when the file is short."""
    claims = _Claims(fd, meta, where)
    if claims.have > meta.last_pgno:
        return
    if claims.have < 2 or not SUPPORTED:
        raise _damaged(where, claims.promised)
    freed: list[tuple[int, bytes]] = []
    if meta.free.root != _P_INVALID:
        _Walk(fd, meta, meta.free, True, claims, freed, where).run()
    claims.free(freed)


def _check_tree_record(meta: Meta, tree: Tree, name: str, flags: int, where: str) -> None:
    at = f"meta page {meta.slot}'s {name} tree"
    if tree.flags != flags:
        raise _damaged(where, f"{at} has flags {tree.flags:#06x}, not {flags:#06x}")
    if tree.root == _P_INVALID:
        if tree.depth or tree.entries or tree.branch_pages or tree.leaf_pages or tree.overflow_pages:
            raise _damaged(where, f"{at} has no root but counts {tree.entries} entries at depth {tree.depth}")
        return
    if not 2 <= tree.root <= meta.last_pgno:
        raise _damaged(where, f"{at} has its root at page {tree.root}, outside pages 2 to {meta.last_pgno}")
    if not 1 <= tree.depth <= _MAX_DEPTH:
        raise _damaged(where, f"{at} has depth {tree.depth} (1 to {_MAX_DEPTH})")


def walk(fd: int, meta: Meta, where: str) -> None:
    """Follow every page the trees of ``meta`` reach and check that LMDB can read each one
    without leaving it (see the module docstring); also that no page is reached twice, that
    the free tree lists only pages no tree uses, that every page past the end of the file is
    free, and that the meta's page counts are right."""
    if not SUPPORTED:
        return
    claims = _Claims(fd, meta, where)
    freed: list[tuple[int, bytes]] = []
    for name, tree in (("main", meta.main), ("free", meta.free)):
        if tree.root == _P_INVALID:
            continue
        counts = _Walk(fd, meta, tree, name == "free", claims, freed, where).run()
        expected = (tree.branch_pages, tree.leaf_pages, tree.overflow_pages, tree.entries)
        if counts != expected:
            raise _damaged(
                where,
                f"the {name} tree has {counts[0]} branch, {counts[1]} leaf and {counts[2]} overflow pages and "
                f"{counts[3]} entries; meta page {meta.slot} says {expected[0]}, {expected[1]}, {expected[2]} and {expected[3]}",
            )
    claims.free(freed)


class _Claims:
    """Which pages a walk found, and what for. The file's own pages are counted in a byte
    each; a page past its end can only be free (kept in a set), so a damaged ``last_pgno``
    costs no memory."""

    def __init__(self, fd: int, meta: Meta, where: str) -> None:
        self.size = os.fstat(fd).st_size  # nothing writes the file while it is checked
        self.last, self.where = meta.last_pgno, where
        self.have = self.size // meta.page_size  # pages wholly in the file
        self.promised = (
            f"meta page {meta.slot} says the file holds {self.last + 1} pages "
            f"({(self.last + 1) * meta.page_size} bytes), but it has {self.size} bytes"
        )
        self.owner = bytearray(min(self.last + 1, max(self.have, 2)))  # 0 unclaimed, 1 tree, 2 overflow, 3 free
        self.owner[0] = self.owner[1] = 1  # the meta pages
        self.beyond: set[int] = set()  # free pages past the end of the file

    def claim(self, pgno: int, kind: int, via: str) -> None:
        if not 2 <= pgno <= self.last:
            raise _damaged(self.where, f"{via} points to page {pgno}, outside pages 2 to {self.last}")
        if pgno >= self.have:
            raise _damaged(self.where, f"{via} points to page {pgno}, past the end of the file ({self.size} bytes)")
        if self.owner[pgno]:
            raise _damaged(self.where, f"{via} points to page {pgno}, which is reached twice")
        self.owner[pgno] = kind

    def free(self, freed: list[tuple[int, bytes]]) -> None:
        """Mark the pages of the free lists; then every page past the end must be among them."""
        last, have = self.last, self.have
        for txnid, idl in freed:
            for pgno in struct.unpack_from(f"={_U64.unpack_from(idl, 0)[0]}Q", idl, 8):
                if not 2 <= pgno <= last:
                    raise _damaged(self.where, f"the free list of transaction {txnid} names page {pgno}, outside pages 2 to {last}")
                if pgno >= have:
                    twice = pgno in self.beyond
                    self.beyond.add(pgno)
                else:
                    twice = bool(self.owner[pgno])
                    self.owner[pgno] = 3
                if twice:
                    raise _damaged(self.where, f"the free list of transaction {txnid} names page {pgno}, which is in use or listed twice")
        if last >= have and len(self.beyond) < last - have + 1:
            missing = next(p for p in range(have, last + 1) if p not in self.beyond)
            raise _damaged(self.where, f"{self.promised}, and page {missing} past its end is not free")


_RUN_PAGES: Final = 256  # consecutive pages read with one pread


class _Walk:
    """One tree, level by level: each level's pages in page order, consecutive ones read together."""

    def __init__(self, fd: int, meta: Meta, tree: Tree, free: bool, claims: _Claims, freed: list[tuple[int, bytes]], where: str) -> None:
        self.fd, self.psize, self.last, self.tree = fd, meta.page_size, meta.last_pgno, tree
        self.free, self.claims, self.freed, self.where = free, claims, freed, where
        self.size, self.claim = claims.size, claims.claim
        self.branches = self.leaves = self.overflows = self.entries = 0

    def run(self) -> tuple[int, int, int, int]:
        self.claim(self.tree.root, 1, "the meta page")
        level = [self.tree.root]
        for depth in range(1, self.tree.depth + 1):
            below: list[int] = []
            for pgno, h, base in self.pages(sorted(level)):
                self.page(pgno, h, base, depth, below)
            level = below
        return self.branches, self.leaves, self.overflows, self.entries

    def damaged(self, reason: str) -> CorruptionError:
        return _damaged(self.where, reason)

    def pages(self, pgnos: list[int]) -> Iterator[tuple[int, memoryview, int]]:
        """(pgno, the u16 words of its run, the word where the page starts), in page order."""
        psize, i = self.psize, 0
        while i < len(pgnos):
            j = i + 1
            while j < len(pgnos) and j - i < _RUN_PAGES and pgnos[j] == pgnos[j - 1] + 1:
                j += 1
            data = _pread(self.fd, (j - i) * psize, pgnos[i] * psize)
            if len(data) < (j - i) * psize:
                raise self.damaged(
                    f"page {pgnos[i] + len(data) // psize} is cut short: the file ends at byte {len(data) + pgnos[i] * psize}"
                )
            h = memoryview(data).cast("H")
            for k in range(j - i):
                yield pgnos[i + k], h, k * psize >> 1
            i = j

    def page(self, pgno: int, h: memoryview, base: int, depth: int, below: list[int]) -> None:
        psize, at = self.psize, f"page {pgno} (byte {pgno * self.psize})"
        said = h[base] | h[base + 1] << 16 | h[base + 2] << 32 | h[base + 3] << 48
        if said != pgno:
            raise self.damaged(f"{at} says it is page {said}")
        flags, lower, upper = h[base + 5], h[base + 6], h[base + 7]
        leaf = depth == self.tree.depth
        if flags != (_P_LEAF if leaf else _P_BRANCH):
            what = "leaf" if leaf else "branch"
            raise self.damaged(f"{at} has flags {flags:#06x} where a {what} page belongs (depth {depth} of {self.tree.depth})")
        if lower & 1 or not _PAGE_HEADER < lower <= upper <= psize:
            raise self.damaged(f"{at} has free space from {lower} to {upper} in a page of {psize} bytes")
        ptrs = h[base + 8 : base + (lower >> 1)].tolist()
        if min(ptrs) < upper or max(ptrs) > psize - 8 or any([p & 1 for p in ptrs]):
            raise self.damaged(f"{at} has a node offset outside {upper} to {psize - 8}")
        words = [base + (p >> 1) for p in ptrs]
        if not leaf:
            if max([p + 8 + h[w + 3] for p, w in zip(ptrs, words, strict=True)]) > psize:
                raise self.damaged(f"{at} has a node whose key runs past the page")
            self.branches += 1
            for i, w in enumerate(words):
                child = h[w] | h[w + 1] << 16 | h[w + 2] << 32
                self.claim(child, 1, f"{at} node {i}")
                below.append(child)
            return
        self.leaves += 1
        self.entries += len(ptrs)
        # One pass for the common page: where each node ends, pushed past the page by a flag
        # (an overflow value) or a value of 64 KiB or more; such a page, the free tree's, or
        # one that fails goes node by node.
        if self.free or max([p + 8 + h[w + 3] + h[w] + ((h[w + 1] | h[w + 2]) << 16) for p, w in zip(ptrs, words, strict=True)]) > psize:
            self.odd_leaf(at, h, base, ptrs, words)

    def odd_leaf(self, at: str, h: memoryview, base: int, ptrs: list[int], words: list[int]) -> None:
        """A leaf of the free tree, or one with overflow values or an odd node: node by node."""
        psize, page = self.psize, h[base : base + (self.psize >> 1)].cast("B")
        for i, (p, w) in enumerate(zip(ptrs, words, strict=True)):
            node_flags, ksize, dsize = h[w + 2], h[w + 3], h[w] | h[w + 1] << 16
            if node_flags & ~_F_BIGDATA:
                raise self.damaged(f"{at}: node {i} has flags {node_flags:#06x} (memdb keeps plain key-value pairs)")
            if not (ksize == 8 if self.free else 1 <= ksize <= _MAX_KEY):
                raise self.damaged(f"{at}: node {i} has a key of {ksize} bytes")
            start = p + 8 + ksize
            if node_flags & _F_BIGDATA:
                if start + 8 > psize:
                    raise self.damaged(f"{at}: node {i}'s overflow page number runs past the page")
                first = _U64.unpack_from(page, start)[0]
                self.overflow(first, dsize, f"{at} node {i}")
                value = _pread(self.fd, dsize, first * psize + _PAGE_HEADER) if self.free else b""
            elif start + dsize > psize:
                raise self.damaged(f"{at} has a node whose key or value runs past the page (node {i}, a value of {dsize} bytes)")
            else:
                value = bytes(page[start : start + dsize]) if self.free else b""
            if self.free:
                txnid = _U64.unpack_from(page, p + 8)[0]
                if len(value) < 8 or len(value) % 8 or (_U64.unpack_from(value, 0)[0] + 1) * 8 > len(value):
                    raise self.damaged(f"{at}: the free list of transaction {txnid} is malformed")
                self.freed.append((txnid, value))

    def overflow(self, first: int, dsize: int, via: str) -> None:
        """Claim the overflow run holding a value of ``dsize`` bytes from page ``first``."""
        need = (_PAGE_HEADER - 1 + dsize) // self.psize + 1  # LMDB's OVPAGES
        if not 2 <= first <= self.last:
            raise self.damaged(f"{via} points to page {first}, outside pages 2 to {self.last}")
        head = _pread(self.fd, _PAGE_HEADER, first * self.psize)
        if len(head) < _PAGE_HEADER:
            raise self.damaged(f"{via} points to page {first}, past the end of the file ({self.size} bytes)")
        flags, pages = struct.unpack_from("=H", head, 10)[0], _U32.unpack_from(head, 12)[0]
        # a run may be longer than its value needs: LMDB rewrites a shorter value in place
        if _U64.unpack_from(head, 0)[0] != first or flags != _P_OVERFLOW or not need <= pages <= self.last - first + 1:
            raise self.damaged(f"{via} points to page {first}, which does not start an overflow run of {need} pages or more")
        if (first + pages) * self.psize > self.size:
            raise self.damaged(
                f"{via} points to an overflow run of {pages} pages from page {first}, past the end of the file ({self.size} bytes)"
            )
        for pgno in range(first, first + pages):
            self.claim(pgno, 2, via)
        self.overflows += pages
