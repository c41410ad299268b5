"""The JSONL export format, written and read here: ``Memory.export`` and ``memdb export`` write
it, ``memdb import`` and ``Memory.import_episodes`` read it back.

A line is one JSON object. By default every line is an episode: its ``Episode`` fields
(``model_dump(mode="json")``), with each datetime inside ``decisions`` as ``{"$datetime": ISO}``
(JSON has none), the current versions only, archived ones included (their full record, status
"archived"). That is what import brings back, and the default stays as it was.

A complete export (``complete=True``, ``memdb export --complete``) is the owner's copy of
everything memdb holds of them: every line has a ``type``, ``episode`` for the lines above,
then ``version`` (an earlier version of a memory: status "superseded", with ``superseded_by``),
``knowledge`` (an entry the owner wrote, in any state), ``pattern`` and ``audit`` (one of the
owner's audit records, datetimes as ISO text in UTC ending ``Z``, as an episode's ``ts``). Import
cannot bring those back (an earlier version would come back current, an entry would skip
review, an audit record would be forged), so it skips them (``memdb import`` says how many); a
``type`` it does not know is refused. Both read a line through ``import_row``, so they take the
same lines alike.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any, Final

from memdb.errors import ValidationError
from memdb.memory.episodes import IMPORTED_FIELDS
from memdb.memory.models import MAX_DEPTH, Episode
from memdb.memory.sanitize import shown

__all__ = [
    "EPISODE",
    "IMPORT_ITEM",
    "NOT_IMPORTED",
    "TYPE",
    "audit_row",
    "episode_row",
    "import_row",
    "is_export_row",
    "iso",
    "record_type",
    "tagged",
    "typed",
    "untagged",
]

TYPE: Final = "type"
EPISODE: Final = "episode"
NOT_IMPORTED: Final = ("version", "knowledge", "pattern", "audit")
"""The record types of a complete export besides episodes, in the order it writes them."""
_DATETIME: Final = "$datetime"  # {"$datetime": ISO}: a datetime inside decisions


def episode_row(episode: Episode) -> dict[str, Any]:
    """An episode (or an earlier version) as an export line writes it."""
    row = episode.model_dump(mode="json")
    row["decisions"] = tagged(episode.decisions)  # a datetime inside decisions comes back a datetime
    return row


def audit_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """An audit record as JSON: its datetimes as ISO text in UTC ending ``Z`` (it is read, never imported)."""
    return {str(k): _plain(v) for k, v in record.items()}


def typed(kind: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` as a complete export's line of record type ``kind`` (the type first)."""
    return {TYPE: kind, **row}


def record_type(row: Mapping[str, Any], where: str) -> str:
    """The record type of a line read back: ``episode`` (an untyped line is one), or one of
    ``NOT_IMPORTED``; ValidationError naming ``where`` for a type export never writes."""
    kind = row.get(TYPE, EPISODE)
    if kind != EPISODE and kind not in NOT_IMPORTED:
        raise ValidationError(
            f"{where}: type {shown(kind)} is not a record memdb export writes ({', '.join((EPISODE, *NOT_IMPORTED))}); nothing was imported"
        )
    return str(kind)


def is_export_row(row: Mapping[str, Any]) -> bool:
    """Whether a mapping given to import is an export's line: typed, or carrying every field of
    an episode (``episode_row`` writes them all, None included). A mapping written by hand is
    not, and import refuses a field it does not take there rather than drop it."""
    return TYPE in row or all(name in row for name in Episode.model_fields)


def import_row(row: Mapping[str, Any], where: str) -> dict[str, Any] | None:
    """An export's line as import takes it, for ``memdb import`` and ``Memory.import_episodes``
    alike: an episode's fields that import takes (``IMPORTED_FIELDS``: what memdb computes,
    owner, relevance, status, versions, is computed again), its ts and the datetimes inside its
    decisions as datetimes; None for a complete export's record import cannot bring back
    (``NOT_IMPORTED``). ValidationError naming ``where`` for a type export never writes or a
    bad time."""
    if record_type(row, where) != EPISODE:
        return None
    item = {k: row[k] for k in IMPORTED_FIELDS if row.get(k) is not None}
    if "decisions" in item:
        item["decisions"] = untagged(item["decisions"], where)
    if "ts" in item and not isinstance(item["ts"], dt.datetime):  # (a row not yet through JSON keeps its own)
        item["ts"] = iso(item["ts"], f"{where}: ts")
    return item


def tagged(value: Any) -> Any:
    """``value`` with every datetime as ``{"$datetime": ISO}``, for export."""
    if isinstance(value, dt.datetime):
        return {_DATETIME: value.isoformat()}
    if isinstance(value, Mapping):
        return {k: tagged(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [tagged(v) for v in value]
    return value


def untagged(value: Any, where: str, depth: int = 0) -> Any:
    """The inverse of ``tagged``, for import; a bad ISO time, or nesting past ``MAX_DEPTH`` (what
    capture refuses too, before this walk could exhaust the stack), is a ValidationError naming ``where``."""
    if isinstance(value, (dict, list)) and depth > MAX_DEPTH:
        raise ValidationError(f"{where}: decisions is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        if set(value) == {_DATETIME} and isinstance(value[_DATETIME], str):
            return iso(value[_DATETIME], f"{where}: decisions datetime")
        return {k: untagged(v, where, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [untagged(v, where, depth + 1) for v in value]
    return value


IMPORT_ITEM: Final = re.compile(r"^import item (\d+)")
"""How ``import_episodes`` names an item it refuses (the CLI and the handle renumber it)."""


def iso(text: Any, what: str) -> dt.datetime:
    """An ISO date or datetime string as aware UTC (no zone means UTC); ValidationError naming
    ``what`` for anything else. The one reading of a time given as text: the command line's
    and an export's."""
    if not isinstance(text, str):
        raise ValidationError(f"{what} {shown(text)}: expected an ISO date or datetime string (e.g. 2026-07-01T09:00+00:00)")
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"{what} {shown(text)}: not an ISO date or datetime (e.g. 2026-07-01 or 2026-07-01T09:00+00:00)") from None
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+14:00 is before year 1 in UTC
        raise ValidationError(f"{what} {shown(text)}: out of range once converted to UTC (years 1 to 9999)") from None


def utc_text(value: dt.datetime) -> str:
    """A UTC time as exports and every ``--json`` output write it: ISO 8601 ending ``Z``, as
    pydantic writes an episode's ``ts``; with ``+00:00`` beside it one instant read as two strings
    (tests/surfaces/test_export_times.py, test_cli_scripting.py)."""
    return value.astimezone(dt.UTC).isoformat().removesuffix("+00:00") + "Z"


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.utcoffset() is not None:
        return utc_text(value)
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return value
