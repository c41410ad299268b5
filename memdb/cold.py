"""Cold storage codecs for archived records: zstandard with a dictionary trained on this
database's own records, plain zstandard, zlib, or plain msgpack.

Records of one database share most of their structure (field names, kinds, tags, phrasing),
which is what a trained dictionary captures; ``benchmarks/bench_lifecycle.py`` measures the
four codecs and ``zstd-dict`` is the default because it compresses best at similar speed.
The dictionary is stored in the database (``^COLDDICT``) so every process decodes the same way.
"""

from __future__ import annotations

import zlib
from typing import Any, Final

import zstandard

from memdb import codec
from memdb.errors import ConfigError, CorruptKeyError
from memdb.globals import Globals

__all__ = ["CODECS", "ColdStore"]

CODECS: Final = ("zstd-dict", "zstd", "zlib", "msgpack")
_LEVEL: Final = 9
_DICT_SIZE: Final = 16 * 1024
_DICT_MIN_SAMPLES: Final = 200
_DICT_MAX_SAMPLES: Final = 5000


class ColdStore:
    """Packs and unpacks archived records; trains the dictionary when there is enough to learn from."""

    def __init__(self, space: Globals, codec_name: str = "zstd-dict") -> None:
        if codec_name not in CODECS:
            raise ConfigError(f"cold codec {codec_name!r}: choose one of {', '.join(CODECS)}")
        self.codec_name = codec_name
        self.dicts = space["COLDDICT"]
        self.space = space
        self._compressors: dict[tuple[str, int], Any] = {}
        self._decompressors: dict[tuple[str, int], Any] = {}

    def train(self, owner: str, samples: list[bytes | bytearray | memoryview]) -> int | None:
        """Train and store a dictionary for ``owner`` from packed records; its id (None if too few)."""
        if len(samples) < _DICT_MIN_SAMPLES:
            return None
        trained = zstandard.train_dictionary(_DICT_SIZE, samples[:_DICT_MAX_SAMPLES])
        dict_id = int(self.dicts.increment((owner, "last")))
        self.dicts.set((owner, dict_id), trained.as_bytes())
        return dict_id

    def _current_dict(self, owner: str) -> int | None:
        # One dictionary per owner: it is learned from that owner's records only, so no owner's
        # text ends up in an artifact used for another's data.
        last = self.dicts.get((owner, "last"))
        if last is not None:
            return int(last)
        samples: list[bytes | bytearray | memoryview] = []
        for _, record in self.space["MEM"].items((owner,)):
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

    def unpack(self, owner: str, value: dict[str, Any]) -> dict[str, Any]:
        """The record back from a cold value."""
        name, data = value["codec"], value["data"]
        if name == "zstd-dict":
            key = (owner, int(value["dict"]))
            if key not in self._decompressors:
                self._decompressors[key] = zstandard.ZstdDecompressor(dict_data=self._zdict(owner, key[1]))
            raw = self._decompressors[key].decompress(data)
        elif name == "zstd":
            raw = zstandard.ZstdDecompressor().decompress(data)
        elif name == "zlib":
            raw = zlib.decompress(data)
        elif name == "msgpack":
            raw = data
        else:
            raise CorruptKeyError(f"cold record: unknown codec {name!r}")
        record: dict[str, Any] = codec.unpack_value(raw)
        return record
