"""memdb: embedded structured memory for LLM agents, on an M-style global key space over LMDB."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from memdb import errors
from memdb.database import Database, open
from memdb.globals import Global, Globals
from memdb.store import LMDBStore, Store

try:
    __version__ = version("memdb")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

__all__ = [
    "Database",
    "Global",
    "Globals",
    "LMDBStore",
    "Store",
    "__version__",
    "errors",
    "open",
]
