"""memdb: embedded structured memory for LLM agents, on an M-style global key space over LMDB."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from memdb import errors, native
from memdb.database import Database, Memory, open
from memdb.globals import Global, Globals
from memdb.knowledge import Entry
from memdb.lifecycle import MaintenanceReport
from memdb.models import Episode
from memdb.query import History, RecallResult
from memdb.reflection import AnthropicReflector, OfflineReflector
from memdb.sanitize import RegexSanitizer, Sanitizer
from memdb.settings import Settings
from memdb.store import LMDBStore, Store
from memdb.summarize import AnthropicSummarizer, ExtractiveSummarizer, Summarizer

try:
    __version__ = version("memdb")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

__all__ = [
    "AnthropicReflector",
    "AnthropicSummarizer",
    "Database",
    "Entry",
    "Episode",
    "ExtractiveSummarizer",
    "Global",
    "Globals",
    "History",
    "LMDBStore",
    "MaintenanceReport",
    "Memory",
    "OfflineReflector",
    "RecallResult",
    "RegexSanitizer",
    "Sanitizer",
    "Settings",
    "Store",
    "Summarizer",
    "__version__",
    "errors",
    "native",
    "open",
]
