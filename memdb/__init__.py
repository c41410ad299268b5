"""memdb: embedded structured memory for LLM agents, on an M-style global key space over LMDB."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from memdb import errors, native
from memdb.engine.globals import Global, Globals
from memdb.engine.store import LMDBStore, Store
from memdb.governance.knowledge import Entry
from memdb.governance.reflection import OfflineReflector
from memdb.lifecycle.maintain import MaintenanceReport
from memdb.lifecycle.summarize import ExtractiveSummarizer, Summarizer
from memdb.llm.adapters import AnthropicReflector, AnthropicSummarizer
from memdb.memory.models import Episode
from memdb.memory.sanitize import RegexSanitizer, Sanitizer
from memdb.memory.settings import Settings
from memdb.query.results import History, Hit, RecallResult
from memdb.surfaces.database import Database, open
from memdb.surfaces.handle import Memory

try:  # the distribution is memdb-agent ("memdb" on the package index is another project)
    __version__ = version("memdb-agent")
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
    "Hit",
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
