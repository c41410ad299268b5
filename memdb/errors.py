"""One exception hierarchy for memdb: every failure a caller can catch derives from MemdbError.

Messages follow "what: reason (hint)" and name the offending value, so a log line alone
says what to fix. Backend errors (LMDB, SDKs) are translated at the boundary with ``from None``.
"""

from __future__ import annotations


class MemdbError(Exception):
    """Base class of every error memdb raises on purpose."""


# --- codec -----------------------------------------------------------------------------


class CodecError(MemdbError):
    """A key or value cannot be encoded or decoded."""


class InvalidSubscriptError(CodecError, TypeError):
    """A subscript is not a non-empty str, a finite int/float, or bytes."""


class KeyTooLongError(CodecError):
    """An encoded key exceeds the store's key-size limit (511 bytes for LMDB)."""


class InvalidValueError(CodecError, TypeError):
    """A value cannot be serialised with msgpack."""


# --- store -----------------------------------------------------------------------------


class StoreError(MemdbError):
    """The storage backend failed."""


class StoreClosedError(StoreError):
    """An operation was attempted on a closed store or database."""


class StoreFullError(StoreError):
    """The store could not grow to hold a transaction's writes."""


class TransactionConflictError(StoreError):
    """A transaction could not be completed because another writer changed the data; retry it."""


class ReadOnlyTransactionError(StoreError):
    """A write was attempted inside a read-only snapshot."""


class StoreBusyError(StoreError):
    """Another process holds the database in a way this operation cannot wait out: it has the
    database open while compaction needs exclusive use, or it kept exclusive use (compacting,
    or checking the file at its first open) longer than an open waits."""


class CorruptionError(StoreError):
    """Stored bytes are damaged: the data file fails its structural checks, or a stored key or
    value cannot be decoded. Nothing is repaired in place; ``HINT`` says how to recover."""

    HINT = (
        "the database cannot be read safely: restore its directory from a `memdb backup` copy, or `memdb import` "
        "an earlier `memdb export` file into a new directory (episodes only)"
    )


class CorruptKeyError(CodecError, CorruptionError):
    """Stored bytes are not a valid encoded key (damaged, or written by something else)."""


class CorruptValueError(CodecError, CorruptionError):
    """Stored bytes are not a value ``pack_value`` wrote (damaged, or written by something else)."""


# --- globals ---------------------------------------------------------------------------


class GlobalsError(MemdbError):
    """A global operation is invalid."""


class InvalidGlobalNameError(GlobalsError, ValueError):
    """A global name is not letters and digits starting with a letter."""


class MergeOverlapError(GlobalsError):
    """MERGE between a node and its own ancestor or descendant (M: MERGEDESC)."""


class NotANumberError(GlobalsError, TypeError):
    """increment on a node whose value is not an int or float."""


# --- episodes and above ------------------------------------------------------------------


class ValidationError(MemdbError, ValueError):
    """Input to the episodic API is invalid; the message names the field and the value."""


class NoSearchableWordsError(ValidationError):
    """A text filter holds no word the index keeps (stopwords, one-letter words, placeholders):
    it would match nothing or, dropped, everything. A caller for whom such a text simply finds
    nothing (the LangGraph store's ``search(query=...)``) catches this one."""


class ConfigError(MemdbError, ValueError):
    """A configuration value is invalid."""


class NotFoundError(MemdbError, KeyError):
    """No such record for this owner (also raised for another owner's ids: existence is private)."""

    def __str__(self) -> str:  # KeyError quotes its argument; a message should read as prose
        return str(self.args[0]) if self.args else ""


class SanitizerError(MemdbError):
    """The PII sanitizer failed; the capture was dropped and nothing was written (or the query's
    question or text was refused unread)."""


class NativeBuildError(MemdbError):
    """The native scorer is unavailable and cannot be built."""


class LLMError(MemdbError):
    """A call to a language-model provider failed."""


# --- governance --------------------------------------------------------------------------


class PermissionDeniedError(MemdbError):
    """A person tried to decide something only someone else may decide (e.g. sharing another owner's lesson)."""


class DuplicateError(MemdbError, ValueError):
    """A knowledge write repeats approved, pending or rejected (tombstoned) content, or another
    owner's lesson the team reads already, or a ceremony decision already in force (a share the
    teams read, a keep of a lesson kept private): nothing is written."""
