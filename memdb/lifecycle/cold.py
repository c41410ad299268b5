"""Cold storage codecs for archived records: zstandard with a dictionary trained on this
database's own records, plain zstandard, zlib, or plain msgpack.

Records of one database share most of their structure (field names, kinds, tags, phrasing),
which is what a trained dictionary captures; ``benchmarks/bench_lifecycle.py`` measures the
four codecs and ``zstd-dict`` is the default because it compresses best at similar speed.
The dictionary is stored in the database (``^COLDDICT``) so every process decodes the same way.

A dictionary is learned from record text, so it holds fragments of the records it was trained
on: ``retrain`` replaces an owner's dictionaries after an erasure (see ``memdb.lifecycle.erase``).
Dictionary ids only grow, across owners and their erasures, so a (de)compressor another
process cached can never be taken for another dictionary of the same name::

    ^COLDDICT(owner, id) = bytes     an owner's dictionary (trained on its records only)
    ^COLDDICT(owner, "last") = id    its newest id, kept when the dictionary is dropped
    ^COLDDICT(0, "last") = id        the newest id of the database: an owner's erasure takes its
                                     "last", and the name's next dictionary is numbered above this
                                     (a number, which no owner's name is; it holds no name)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any, Final

import zstandard

from memdb.engine import codec
from memdb.errors import ConfigError, CorruptionError, CorruptKeyError
from memdb.memory.check import archived_header_problems
from memdb.memory.episodes import Episodes

__all__ = ["CODECS", "ColdCodec"]

CODECS: Final = ("zstd-dict", "zstd", "zlib", "msgpack")
_LEVEL: Final = 9
_DICT_SIZE: Final = 16 * 1024
_DICT_MIN_SAMPLES: Final = 200
_DICT_MAX_SAMPLES: Final = 5000
_DATABASE: Final = 0  # ^COLDDICT's database-wide node


class ColdCodec:
    """Packs and unpacks archived records; trains the dictionary when there is enough to learn from."""

    def __init__(self, episodes: Episodes, codec_name: str = "zstd-dict") -> None:
        if codec_name not in CODECS:
            raise ConfigError(f"cold codec {codec_name!r}: choose one of {', '.join(CODECS)}")
        self.codec_name = codec_name
        self.dicts = episodes.space["COLDDICT"]
        self._episodes = episodes
        self._compressors: dict[tuple[str, int], Any] = {}
        self._decompressors: dict[tuple[str, int], Any] = {}

    def train(self, owner: str, samples: list[bytes | bytearray | memoryview]) -> int | None:
        """Train and store a dictionary for ``owner`` from packed records; its id (None if too few)."""
        if len(samples) < _DICT_MIN_SAMPLES:
            return None
        trained = zstandard.train_dictionary(_DICT_SIZE, samples[:_DICT_MAX_SAMPLES])
        with self._episodes.space.transaction(savepoint=False):
            dict_id = self._newest(owner) + 1
            self.dicts.set((_DATABASE, "last"), dict_id)
            self.dicts.set((owner, "last"), dict_id)
            self.dicts.set((owner, dict_id), trained.as_bytes())
        return dict_id

    def _newest(self, owner: str) -> int:
        """The newest dictionary id given out for ``owner`` or any other: an id given once is never
        given again (after the owner's erasure the database's mark remembers it; before this
        mark existed, each owner's own "last" did)."""
        return max(int(self.dicts.get((_DATABASE, "last"), 0)), int(self.dicts.get((owner, "last"), 0)))

    def retire(self, owner: str) -> None:
        """Before an owner's erasure kills ``^COLDDICT(owner)``: the database's mark keeps its
        newest id, so the name's next dictionary is not numbered as one of the erased owner's
        that another process still holds a compressor of (test_dictionary_ids_grow_across_an_owner_erasure)."""
        newest = self._newest(owner)
        if newest:
            self.dicts.set((_DATABASE, "last"), newest)

    def check(self) -> list[str]:
        """Problems of the cold records: one that cannot be decoded (compressed with another
        dictionary than the one stored under its id, so restore fails: "Dictionary mismatch";
        its dictionary missing; damaged), and one whose archived header says other than the
        record (``memdb.memory.check.archived_header_problems``). Decodes each record once:
        O(archived records)."""
        problems: list[str] = []
        with self._episodes.space.snapshot():
            for owner in self._episodes.owners():
                ids: dict[int, int | None] = {}
                for eid, value in self._episodes.cold_blobs(owner):
                    problem = self._undecodable(owner, eid, value, ids)
                    if problem is not None:
                        problems.append(problem)
                        continue
                    header = self._episodes.header(owner, eid)
                    if not isinstance(header, dict) or header.get("status") != "archived":
                        continue  # the episodes' check reports a cold record without an archived header
                    try:
                        record = self.unpack(owner, value)
                    except (CorruptionError, zstandard.ZstdError, zlib.error, KeyError, TypeError, ValueError):
                        # a damaged record is what check reports, never what stops it
                        problems.append(f"^COLD({owner!r},{eid!r}): damaged (cannot be decoded)")
                        continue
                    problems += archived_header_problems(owner, eid, header, record)
        return problems

    def _undecodable(self, owner: str, eid: str, value: Any, ids: dict[int, int | None]) -> str | None:
        """Why a cold value cannot be decoded, read from its frame header and its dictionary's id
        (``ids`` keeps each dictionary's, by number), or None."""
        if not isinstance(value, dict):
            return f"^COLD({owner!r},{eid!r}): damaged (not a cold record)"
        if value.get("codec") != "zstd-dict":
            return None
        stored, data = value.get("dict"), value.get("data")
        # a damaged record is what check reports, never what stops it (tests/lifecycle/test_owner_erasure_processes.py)
        if isinstance(stored, bool) or not isinstance(stored, int) or not isinstance(data, (bytes, bytearray, memoryview)):
            return f"^COLD({owner!r},{eid!r}): damaged (no dictionary number or no compressed data)"
        dict_id = stored
        if dict_id not in ids:
            raw = self.dicts.get((owner, dict_id))
            ids[dict_id] = zstandard.ZstdCompressionDict(raw).dict_id() if isinstance(raw, (bytes, bytearray)) else None
        if ids[dict_id] is None:
            return f"^COLD({owner!r},{eid!r}): its dictionary {dict_id} is missing from ^COLDDICT (or damaged)"
        try:
            framed = zstandard.get_frame_parameters(data).dict_id
        except zstandard.ZstdError:
            return f"^COLD({owner!r},{eid!r}): not a zstandard frame"
        if framed != ids[dict_id]:
            return f"^COLD({owner!r},{eid!r}): compressed with another dictionary than ^COLDDICT({owner!r},{dict_id})"
        return None

    def _current_dict(self, owner: str) -> int | None:
        # One dictionary per owner: it is learned from that owner's records only, so no owner's
        # text ends up in an artifact used for another's data.
        last = self.dicts.get((owner, "last"))
        if last is not None and (owner, int(last)) in self.dicts:
            return int(last)
        # none yet, or the last one was dropped by an erasure and not replaced: learn a new one
        samples: list[bytes | bytearray | memoryview] = []
        for record in self._episodes.hot_records(owner):
            samples.append(codec.pack_value(record))
            if len(samples) >= _DICT_MAX_SAMPLES:
                break
        return self.train(owner, samples)

    def _zdict(self, owner: str, dict_id: int) -> Any:
        raw = self.dicts.get((owner, dict_id))
        if raw is None:
            raise CorruptKeyError(f"cold dictionary {dict_id} of {owner!r}: missing from ^COLDDICT")
        return zstandard.ZstdCompressionDict(raw)

    def pack(self, owner: str, record: dict[str, Any], content_hash: str) -> dict[str, Any]:
        """The cold value for ``record``: codec name, dictionary id, bytes, and the content hash."""
        raw = codec.pack_value(record)
        name = self.codec_name
        dict_id = None
        if name == "zstd-dict":
            dict_id = self._current_dict(owner)
            if dict_id is None:
                name = "zstd"
            else:
                key = (owner, dict_id)
                if key not in self._compressors:
                    self._compressors[key] = zstandard.ZstdCompressor(level=_LEVEL, dict_data=self._zdict(owner, dict_id))
                data = self._compressors[key].compress(raw)
        if name == "zstd":
            data = zstandard.ZstdCompressor(level=_LEVEL).compress(raw)
        elif name == "zlib":
            data = zlib.compress(raw, 9)
        elif name == "msgpack":
            data = raw
        return {"codec": name, "dict": dict_id, "data": data, "hash": content_hash, "raw_bytes": len(raw)}

    def decodable(self, owner: str, values: Iterable[dict[str, Any]]) -> list[bool]:
        """For each cold value, whether the dictionary it was packed with is still stored: an
        erasure drops the owner's dictionaries (``retrain``), maybe between a ``pack`` and its
        write. Each dictionary is looked up once (an archive batch shares one)."""
        stored: dict[int, bool] = {}
        out = []
        for value in values:
            if value["codec"] != "zstd-dict":
                out.append(True)
                continue
            dict_id = int(value["dict"])
            if dict_id not in stored:
                stored[dict_id] = (owner, dict_id) in self.dicts
            out.append(stored[dict_id])
        return out

    def retrain(self, owner: str) -> int:
        """Drop every dictionary of ``owner`` and re-pack its dictionary-coded cold records
        under one retrained from those records only, in the current transaction; how many were re-packed.

        For erasure: every dictionary ever trained for the owner may hold fragments of erased
        records, because they were among its training samples. With fewer than
        ``_DICT_MIN_SAMPLES`` records left they are re-packed as plain zstd, and the owner's next
        archive trains a fresh dictionary from the records then present. Cost: O(owner's archived
        records): each is read once (the first ``_DICT_MAX_SAMPLES`` decompressed to train on),
        each dictionary-coded one is decompressed and compressed again, plus one training.
        Nothing here is cached until the caller's transaction commits, so a rollback leaves no
        (de)compressor for a dictionary that was never stored.
        """
        old = [int(subs[1]) for subs, _ in self.dicts.items((owner,)) if isinstance(subs[1], int)]
        if not old:
            return 0
        decoders = {i: zstandard.ZstdDecompressor(dict_data=self._zdict(owner, i)) for i in old}
        samples: list[bytes | bytearray | memoryview] = []
        coded: list[tuple[str, dict[str, Any]]] = []
        for eid, value in self._episodes.cold_blobs(owner):
            if value["codec"] == "zstd-dict":
                coded.append((eid, value))
            if len(samples) < _DICT_MAX_SAMPLES:
                samples.append(self._raw(owner, value, decoders))
        dict_id = self.train(owner, samples) if self.codec_name == "zstd-dict" else None
        encoder = zstandard.ZstdCompressor(level=_LEVEL, dict_data=self._zdict(owner, dict_id) if dict_id is not None else None)
        for eid, value in coded:
            data = encoder.compress(self._raw(owner, value, decoders))
            recoded = {**value, "codec": "zstd" if dict_id is None else "zstd-dict", "dict": dict_id, "data": data}
            self._episodes.set_cold_blob(owner, eid, recoded)
        for i in old:
            self.dicts.kill((owner, i))
        self.forget(owner)  # they hold erased text in memory; a later use rebuilds from the store
        return len(coded)

    def forget(self, owner: str) -> None:
        """Drop this process's (de)compressors of ``owner``'s dictionaries: the owner was erased,
        and they hold fragments of its records."""
        for cache in (self._compressors, self._decompressors):
            for key in [k for k in cache if k[0] == owner]:
                del cache[key]

    def unpack(self, owner: str, value: dict[str, Any]) -> dict[str, Any]:
        """The record back from a cold value."""
        record: dict[str, Any] = codec.unpack_value(self._raw(owner, value))
        return record

    def _raw(self, owner: str, value: dict[str, Any], decoders: dict[int, Any] | None = None) -> bytes:
        """The packed record inside a cold value; ``decoders`` (dictionary id -> decompressor),
        when given, decode dictionary-coded values instead of the cache."""
        name, data = value["codec"], value["data"]
        if name == "zstd-dict":
            dict_id = int(value["dict"])
            if decoders is not None:
                if dict_id not in decoders:
                    raise CorruptKeyError(f"cold dictionary {dict_id} of {owner!r}: missing from ^COLDDICT")
                decoder = decoders[dict_id]
            else:
                key = (owner, dict_id)
                if key not in self._decompressors:
                    self._decompressors[key] = zstandard.ZstdDecompressor(dict_data=self._zdict(owner, dict_id))
                decoder = self._decompressors[key]
            raw: bytes = decoder.decompress(data)
        elif name == "zstd":
            raw = zstandard.ZstdDecompressor().decompress(data)
        elif name == "zlib":
            raw = zlib.decompress(data)
        elif name == "msgpack":
            raw = data
        else:
            raise CorruptKeyError(f"cold record: unknown codec {name!r}")
        return raw
