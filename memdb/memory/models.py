"""Pydantic models of the episodic layer: what callers give (validated) and what they get back.

Validation happens here, at the boundary, so the layers below only ever see clean values;
every error names the field and the offending value.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import unicodedata
from collections.abc import Collection, Mapping, Sized
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator
from pydantic import ValidationError as PydanticError
from pydantic_core import PydanticCustomError

from memdb.errors import ValidationError
from memdb.memory.sanitize import RegexSanitizer, shown
from memdb.memory.sanitize.messages import redacted
from memdb.memory.text import normalize_tags, shown_tag

__all__ = [
    "MAX_DEPTH",
    "MAX_PARTICIPANTS",
    "MAX_TAGS",
    "PARTICIPANT_CHARS",
    "Episode",
    "EpisodeInput",
    "Outcome",
    "Status",
    "bound_text",
    "check_participants",
    "check_payload",
    "check_tag_count",
    "shown_name",
    "shown_value",
    "unstorable",
    "validation_error",
]

Outcome = Literal["success", "partial", "failure"]
Status = Literal["active", "summarized", "archived", "superseded"]

_OWNER = re.compile(r"[^\x00-\x1f\x7f]{1,64}\Z")
OWNER_BYTES = 128  # with a tag (also at most 128 bytes) and an episode's tail, an index key stays within LMDB's 511
_IDENT = re.compile(r"[A-Za-z0-9_.:@/+-]{1,128}\Z")
SUMMARY_CHARS = 500
MAX_TAGS: Final = 32  # tags an episode holds; also what a knowledge entry or a search by tags takes
# a person's name or an agent's id, stored as given (never normalised as a tag): MCP's schema states it
PARTICIPANT_CHARS: Final = 256
MAX_PARTICIPANTS: Final = 64  # participants an episode holds
_SANITIZER = RegexSanitizer()  # owner names are checked by the built-in detectors, whatever a database configures
FIRST_YEAR = 1000  # an id starts with the 4-digit year of its timestamp


def truncation_marker(length: int) -> str:
    """What ends a text cut from ``length`` characters."""
    return f" …[truncated {length} chars]"


def bound_text(text: str, cap: int) -> str:
    """Cut ``text`` to at most ``cap`` characters, ending with an explicit truncation marker."""
    if len(text) <= cap:
        return text
    marker = truncation_marker(len(text))
    return text[: max(cap - len(marker), 0)] + marker


_INVISIBLE: Final = frozenset(("Cc", "Cf", "Zl", "Zp"))
"""Unicode categories an owner name refuses: controls and format characters (a zero-width space,
a right-to-left override) make two names look alike, or one look like another."""


def check_owner(owner: str) -> str:
    """Validate an owner name and return it in NFC: 1-64 printable characters, valid Unicode (no
    lone surrogate), at most 128 bytes in UTF-8, no invisible format character, and nothing the
    built-in sanitizer would replace: it is the first subscript of every key, so a name that is an
    email or a phone number would put one on disk (as a session's would). NFC, since one name
    typed on two systems ("José" composed or with a combining accent) is one owner. Messages show
    the name sanitized."""
    if not isinstance(owner, str) or not _OWNER.match(owner) or owner.strip() != owner:
        raise ValidationError(f"owner {shown_value(owner)}: must be 1-64 printable characters without surrounding spaces")
    try:
        size = len(owner.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(f"owner {shown(owner)}: not valid Unicode (a lone surrogate); give a proper string") from None
    if any(unicodedata.category(c) in _INVISIBLE or (c.isspace() and c != " ") for c in owner):
        raise ValidationError(f"owner {shown(owner)}: holds an invisible or control character; use letters, digits and plain spaces")
    if not unicodedata.is_normalized("NFC", owner):
        owner = unicodedata.normalize("NFC", owner)
        size = len(owner.encode("utf-8"))
    if size > OWNER_BYTES:
        raise ValidationError(f"owner {shown(owner)}: {size} bytes in UTF-8, more than {OWNER_BYTES}")
    if kinds := personal_data_in(owner):
        raise ValidationError(f"owner {shown_name(owner)}: looks like personal data ({', '.join(kinds)}); use an opaque id")
    return owner


@functools.lru_cache(maxsize=1024)
def personal_data_in(name: str) -> tuple[str, ...]:
    """The placeholder kinds the built-in sanitizer would put in ``name`` (none for a good name):
    an id given to look something up must not be echoed by the error that says it is unknown.
    Read as given and, as a tag is, with its separators as spaces (``identifier_texts``): an owner
    "4111_1111_1111_1111" was accepted, and written as every key's first subscript."""
    return tuple(sorted(_SANITIZER.scan(_name_forms(name)).counts))


def shown_name(name: str) -> str:
    """A name ``personal_data_in`` refused, for its error: sanitized as given, or not at all where
    it has a form with its separators as spaces: no one form then shows none of its values
    ("bob_4111_1111_1111_1111" as given is the card; spaced, "10.0.0.1_4111_1111_1111_1111" is no
    longer the address; "pin_1234_10.1.1.1" showed its PIN: revQ)."""
    return "(not shown)" if "@name~spaced" in _name_forms(name) else shown(name)


def _name_forms(name: str) -> dict[str, str]:
    from memdb.memory.sanitize.fields import identifier_texts  # fields reads this module's caps: imported when first asked

    return identifier_texts({"name": name})


def shown_value(value: object) -> str:
    """``value`` for an error message: a scalar a caller writes (str, number, bool, None) shown
    sanitized, a time as ISO, anything else by its type. The repr of bytes or of a structure (a
    dataclass, a deque, a dict view), read as one text, showed raw the secrets capture withholds
    when it reads their parts: a named value, an argv pair (test_validation_shown.py)."""
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float)):  # bool is an int
        return shown(value)
    return type(value).__name__


def check_ident(field: str, value: str) -> str:
    """Validate an identifier-like field (session, tool): short, no spaces."""
    if not isinstance(value, str):
        raise ValidationError(f"{field}: expected str, got {type(value).__name__}")  # bytes or a structure: by its type
    if not _IDENT.match(value):
        raise ValidationError(f"{field} {shown(value)}: use 1-128 letters, digits or _.:@/+- (no spaces)")
    return value


def utc(value: dt.datetime, field: str = "ts") -> dt.datetime:
    """Keep an aware datetime exactly, as UTC; reject naive ones instead of guessing a zone."""
    if not isinstance(value, dt.datetime):
        raise ValidationError(f"{field} {shown_value(value)}: expected a timezone-aware datetime")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(f"{field} {value.isoformat()!r}: naive datetime (give a timezone, e.g. datetime.now(UTC))")
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise ValidationError(f"{field} {value.isoformat()!r}: outside the years 1-9999 once in UTC") from None


def _part(key: str) -> str:
    """A key of a path for a message: sanitized, and a lone surrogate in it escaped (a message
    holding one cannot be printed, logged or sent as JSON)."""
    return redacted(key.encode("utf-8", "backslashreplace").decode("utf-8"))


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


MAX_DEPTH = 32  # levels of dicts and lists below a stored value: deeper is refused, never a RecursionError


def unstorable(field: str, value: Any) -> str | None:
    """What makes a JSON-like ``value`` (``decisions``, a tool's input or result) impossible to
    store as given, as "path: reason (hint)", or None: containers nested more than ``MAX_DEPTH``
    levels below the value (or holding themselves), or a str or key that is not valid Unicode
    (a lone surrogate, as a stray byte of argv decodes to). Iterative, so any depth is a
    message, never a RecursionError; the message names the path, never the text
    (test_models.py: test_a_lone_surrogate_in_decisions_is_refused_naming_its_path)."""
    # the steps to an item, (is a key, key or index), are formatted only for a message: a key's
    # form is sanitized (``_part``), which every record with decisions paid for every key
    stack: list[tuple[Any, int, tuple[tuple[bool, Any], ...]]] = [(value, 0, ())]
    while stack:
        item, depth, steps = stack.pop()
        if isinstance(item, str):
            if _lone_surrogate(item):
                at = _path(field, steps)
                return f"{at}: not valid Unicode (a lone surrogate); give a proper string (decode bytes with errors='replace')"
        elif isinstance(item, (Mapping, list, tuple)):
            if depth > MAX_DEPTH:
                return f"{field} is nested more than {MAX_DEPTH} levels deep (flatten it, or pass the deep part as a JSON string)"
            if isinstance(item, Mapping):
                for k, v in item.items():
                    if isinstance(k, str) and _lone_surrogate(k):
                        return f"{_path(field, (*steps, (True, k)))} (a key): not valid Unicode (a lone surrogate); give a proper string"
                    stack.append((v, depth + 1, (*steps, (True, k))))
            else:
                stack.extend((v, depth + 1, (*steps, (False, i))) for i, v in enumerate(item))
    return None


def _path(field: str, steps: tuple[tuple[bool, Any], ...]) -> str:
    """``unstorable``'s path to an item: ``field.key[index]``, keys shown sanitized."""
    return field + "".join((f".{_part(k) if isinstance(k, str) else shown(k)}" if is_key else f"[{k}]") for is_key, k in steps)


def check_payload(where: str, field: str, value: Any) -> None:
    """ValidationError ("where: ...") for a tool's input or result ``unstorable`` says is not
    kept as given, before anything reads it (a payload 1,000 levels deep raised RecursionError)."""
    if (problem := unstorable(field, value)) is not None:
        raise ValidationError(f"{where}: {problem}")


def validation_error(exc: PydanticError, what: str = "episode") -> ValidationError:
    """Translate a pydantic error into memdb's, naming each field and the bad value."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "value"
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":  # "Extra inputs are not permitted" named no way out
            settable = ", ".join(n for n in EpisodeInput.model_fields if n not in ("kind", "summary"))
            msg = f"not a field a capture sets (memdb computes relevance, status and access counts; fields: {settable})"
        if err.get("type") == "unstorable":  # names its path; the value is what could not be shown
            parts.append(msg)
            continue
        if err.get("type") == "missing":  # its input is the whole item: a repr of every other field said nothing
            parts.append(f"{redacted(loc)}: required")
            continue
        if loc == "tags" and msg.startswith("tag "):  # normalize_tag's names the bad tag as capture reads it; the list as given is not
            parts.append(f"tags: {msg}")
            continue
        given = err.get("input")
        if loc.partition(".")[0] == "tags" and isinstance(given, str):  # read as capture reads a tag (revD):
            value = shown_tag(given)  # "4111_1111_1111_1111" is a card
        elif loc == "tags":  # by its type: a mapping's keys are tags read as text
            value = type(given).__name__
        else:  # a time as a caller writes one ("ts=0500-01-01T00:00:00+00:00"); a structure or bytes by its type
            value = shown_value(given)
        parts.append(f"{redacted(loc)}={value}: {msg}")
    return ValidationError(f"{what}: " + "; ".join(parts))


def _shows_something(text: str) -> bool:
    """Whether ``text`` holds a character an answer could show (not only spaces, controls, marks)."""
    return any(unicodedata.category(c)[0] not in "CZM" or unicodedata.category(c) == "Co" for c in text)


def check_participants(where: str, participants: Any, stored: Collection[str] = ()) -> None:
    """ValidationError ("where: participants[i]: ...") for a participant a caller gives now that
    names no one ("", "   ", a zero-width space) or is longer than ``PARTICIPANT_CHARS``, the
    length shown, never the text. Called where new values enter (record, supersede's changes),
    never by the model: it validates a record whole, and a supersede copying a version's stored
    participants, or an import of an export made before the rule, failed on values the caller
    never gave (0e3a9fa, d96a182, reverted in 846e83e). ``stored``: the version's own, taken as
    they are. Anything but a list of str is left to the model, which names it by type."""
    if not isinstance(participants, (list, tuple)) or len(participants) > MAX_PARTICIPANTS:
        return  # more than an episode holds is refused by their count before any is read (``Episodes._prepare``)
    for i, who in enumerate(participants):
        if not isinstance(who, str) or who in stored:
            continue
        if len(who) > PARTICIPANT_CHARS:  # before reading its characters
            raise ValidationError(
                f"{where}: participants[{i}]: {len(who)} characters, more than {PARTICIPANT_CHARS} (a person's name or an agent's id)"
            )
        if not _shows_something(who):
            raise ValidationError(f"{where}: participants[{i}]: holds no visible character (name who took part, or leave it out)")


def check_tag_count(where: str, tags: Sized, holds: str = "an episode holds") -> None:
    """ValidationError ("where: N given, more than the MAX_TAGS ...") for tags a caller gives
    beyond the model's cap, by their count before any is sanitized or normalised (100,000 tags
    were read one by one); never for tags read from stored data."""
    if len(tags) > MAX_TAGS:
        raise ValidationError(f"{where}: {len(tags)} given, more than the {MAX_TAGS} {holds}")


# A capture's text field: a str, never bytes decoded. Capture sanitizes the strings it is given
# (``flatten_texts``); bytes passed it unread, and pydantic's lax mode decoded them into the record:
# session=b"bob@example.com" put the address in ^MEM and the session indexes (test_text_fields.py)
_Text = Annotated[str, Strict()]


class EpisodeInput(BaseModel):
    """A new episode as a caller describes it; kind/outcome rules are checked against settings later."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    kind: _Text
    summary: _Text = Field(min_length=1)
    ts: dt.datetime | None = None
    content: _Text = ""
    decisions: dict[str, Any] = Field(default_factory=dict)
    tags: list[_Text] = Field(default_factory=list, max_length=MAX_TAGS)
    outcome: _Text | None = None
    what_we_tried: _Text | None = None
    what_happened: _Text | None = None
    why: _Text | None = None
    lesson: _Text | None = None
    participants: list[_Text] = Field(default_factory=list, max_length=MAX_PARTICIPANTS)
    artifact: _Text | None = None
    session: _Text | None = None
    tool: _Text | None = None
    result: _Text | None = None
    feedback: float | None = Field(None, ge=-1.0, le=1.0)
    cites: list[_Text] = Field(default_factory=list)
    key: _Text | None = None  # kind "fact" only: what the fact is about, e.g. "ana/ui.theme"

    @field_validator("tags", "participants", "cites", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        # capture sanitizes the items of a list or tuple (flatten_texts); another iterable (a set, a
        # deque, a generator), made a list by pydantic, reached the store unread
        if not isinstance(value, (list, tuple)):
            raise ValueError("Input should be a valid list (a list or tuple of str)")
        return value

    @field_validator("summary")
    @classmethod
    def _visible(cls, value: str) -> str:
        # a zero-width space passed as a summary (an MCP probe's find) says nothing any answer could show
        if not _shows_something(value):
            raise ValueError("holds no visible character (say what happened)")
        return value

    @field_validator("ts")
    @classmethod
    def _aware(cls, value: dt.datetime | None) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("naive datetime: give a timezone-aware one (e.g. UTC); memdb does not guess")
        try:
            value = value.astimezone(dt.UTC)
        except OverflowError:  # 0001-01-01T00:00+14:00 is before the first UTC instant Python holds
            raise ValueError("outside the years 1-9999 once in UTC") from None
        if value.year < FIRST_YEAR:
            raise ValueError(f"year {value.year} (UTC): episodes start in year {FIRST_YEAR} or later")
        return value

    @field_validator("outcome", mode="before")
    @classmethod
    def _exact_outcome(cls, value: Any) -> Any:
        # before the model strips whitespace: " success " is not exactly an outcome
        if isinstance(value, str) and value not in ("success", "partial", "failure"):
            raise ValueError("not one of success, partial, failure (exactly; no hedging: pick the closest)")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        # each once, in order, by the remembered forms (``normalize_tags``): capture reuses a few
        # tags, and normalising each anew (NFKC, a regex, a category per character) was a third
        # of this model's validation
        return list(normalize_tags(tags))

    @field_validator("decisions", mode="before")
    @classmethod
    def _storable(cls, decisions: Any) -> Any:
        # before the dict type check, so a key that is not valid Unicode is named as a value is
        if isinstance(decisions, Mapping) and (problem := unstorable("decisions", decisions)) is not None:
            raise PydanticCustomError("unstorable", "{problem}", {"problem": problem})
        return decisions

    @field_validator("decisions")
    @classmethod
    def _confidence(cls, decisions: dict[str, Any]) -> dict[str, Any]:
        # the one decision field memdb reads: confidence on the 0-10 scale of DESIGN 4
        c = decisions.get("confidence")
        if c is not None and (isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 <= c <= 10):
            raise ValueError(f"confidence {c!r}: a number from 0 to 10")
        return decisions

    @field_validator("session", "tool", "key")
    @classmethod
    def _ident(cls, value: str | None) -> str | None:
        if value is not None and not _IDENT.match(value):
            raise ValueError("use 1-128 letters, digits or _.:@/+- (no spaces)")
        return value


class Episode(BaseModel):
    """One stored episode, as returned to its owner."""

    model_config = ConfigDict(frozen=True)

    id: str
    owner: str
    ts: dt.datetime
    kind: str
    summary: str
    content: str = ""
    decisions: dict[str, Any] = Field(default_factory=dict)
    tags: tuple[str, ...] = ()
    outcome: Outcome | None = None
    what_we_tried: str | None = None
    what_happened: str | None = None
    why: str | None = None
    lesson: str | None = None
    participants: tuple[str, ...] = ()
    artifact: str | None = None
    session: str | None = None
    tool: str | None = None
    result: str | None = None
    relevance: float = 0.0
    access_count: int = 0
    last_access: dt.datetime | None = None
    feedback: float | None = None
    status: Status = "active"
    cites: tuple[str, ...] = ()
    recorded: dt.datetime | None = None  # when memdb wrote it (``ts`` is when it happened); None before layout 7's successors
    key: str | None = None  # a fact's key (kind "fact"), e.g. "ana/ui.theme"; the value is ``summary``
    supersedes: str | None = None  # the version this one replaced (``Memory.supersede``, or a fact recorded again)
    supersede_reason: str | None = None  # why it replaced that version (also in the audit record)
    superseded_by: str | None = None  # the version that replaced this one (status "superseded")

    @property
    def day(self) -> str:
        """The UTC calendar day, ``YYYY-MM-DD``."""
        return self.ts.strftime("%Y-%m-%d")
