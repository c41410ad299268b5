"""``MemdbStore``: LangGraph's ``BaseStore`` on memdb's episodes (extra ``langgraph``).

Every item is a memdb fact (``Memory.record("fact", ...)``), so it is owner-scoped, sanitized,
indexed and found by memdb's query layer like any episode; nothing is written around the
episode layer. The mapping:

- owner: the namespace's first label, or the ``owner`` the store was built with (then the
  whole namespace is kept under that one owner, and no call reaches another owner's items);
- fact key: ``lg/`` + the rest of the namespace and the item key, ``/``-joined, each label with
  every character outside ``A-Za-z0-9_.:@-`` written ``+HH`` (its UTF-8 bytes); a key that
  would pass memdb's 128 characters is ``lg:`` + a SHA-256 prefix of the labels instead;
- value: the fact's ``decisions`` hold the namespace, the key, the value as given (sanitized:
  an email comes back as ``<EMAIL_1>``, a value under ``password`` as ``<SECRET_1>``), the
  creation time and the expiry; the value's text (each string and number with its field name, or the
  ``fields`` paths, or the ``index`` paths of a put) is the fact's summary and content, which
  memdb indexes, so ``search(query=...)`` is ``Memory.recall(text=query)`` over the store's
  facts (tag ``langgraph``), best first, each with memdb's rank score. The text is at most the
  database's ``digest_chars`` characters (2,000 unless configured, up to 100,000): a longer
  one keeps an equal share of that from the start of each indexed field (short fields whole),
  so a long field's tail is not searchable, and a WARNING on this module's logger names the
  item's fact id and the characters left out. A query that holds no word memdb indexes
  ("what is it?", "?", "<EMAIL_1>": stopwords, one-letter words and placeholders) shares a
  word with no item and finds none (``[]``, where recall refuses it). An item put with
  ``index=False`` (or whose indexed paths hold no text) is never found by a query, only by
  filters and listings; an indexed one also matches the words of its fact key (its namespace
  after the owner, and its key), which memdb indexes for every fact;
- ``updated_at`` is the time of the item's latest put (kept in the fact's decisions): every
  put supersedes the fact, the same value again too (earlier values stay as versions, as for
  any fact, until their own expiry), and a refreshing read's new version moves only the
  expiry; a delete erases every version with an audit record, and so does a put over an
  expired item before it writes a fresh one.

Filters apply to value fields (dotted paths reach nested ones) with ``$eq``, ``$ne``, ``$gt``,
``$gte``, ``$lt``, ``$lte``; ``limit``/``offset`` count items after filtering. TTL follows
LangGraph's ``TTLConfig`` (minutes): an item expires ``ttl`` minutes after its last write or
refreshing read; expired items are never returned or listed, and are erased when a read or a
put meets them or ``sweep_ttl()`` runs, which also erases an earlier value (a version) whose
own expiry passed, with the versions before it. A refreshing read writes a new expiry only once less than
half the TTL is left, so reading does not add a version each time. ``search(query=...)``
counts as an access of what it returns (memdb's recall does), whatever ``refresh_ttl`` says.

A store built without ``owner`` serves every owner of the database, as the LangGraph store it
replaces serves every namespace: hand an agent that acts for one user ``MemdbStore(db,
owner=user)``. Such a store's searches and listings that name no owner look at each owner
in turn (``Database.owners``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    validate_op_namespace,
)

from memdb import Database, Episode, Memory, RegexSanitizer
from memdb.errors import NoSearchableWordsError, NotFoundError, ValidationError

__all__ = ["MemdbStore"]

TAG = "langgraph"  # every item carries it, so a search ranks the store's facts only
READABLE = "lg/"
HASHED = "lg:"
KEY_CHARS = 128  # memdb's cap on a fact key
_KEPT = re.compile(r"[A-Za-z0-9_.:@-]")
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_MISSING = object()
_PAGE = 50
_log = logging.getLogger(__name__)  # under memdb's logger (memdb.engine.log), whose NullHandler keeps it quiet
_MESSAGES = RegexSanitizer()  # a caller's value in an error message, with personal data replaced


def _shown(value: object) -> str:
    text = _MESSAGES.sanitize({"v": repr(value)[:200]})["v"]
    return text if len(text) <= 80 else text[:77] + "..."


def _label(text: str) -> str:
    return "".join(c if _KEPT.match(c) else "".join(f"+{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text)


def fact_key(stored: Sequence[str], key: str) -> str:
    """The memdb fact key of an item: readable when it fits, else a digest (both injective)."""
    readable = READABLE + "/".join(_label(p) for p in (*stored, key))
    if len(readable) <= KEY_CHARS:
        return readable
    digest = hashlib.sha256(json.dumps([*stored, key]).encode("utf-8", "surrogatepass")).hexdigest()
    return HASHED + digest[:40]


def _scan_prefixes(stored_prefix: Sequence[str]) -> list[str]:
    """Fact-key prefixes holding every item under ``stored_prefix`` (and maybe others)."""
    readable = READABLE + "".join(_label(p) + "/" for p in stored_prefix)
    return [readable if len(readable) <= KEY_CHARS else READABLE, HASHED]


class MemdbStore(BaseStore):
    """LangGraph's ``BaseStore`` over a memdb database: items are owner-scoped memdb facts.

    ``db``: an open ``memdb.Database``. ``owner``: keep every namespace under this one owner
    (else the namespace's first label names the owner). ``fields``: value paths whose text is
    indexed (LangGraph's path syntax, e.g. ``["content", "tags[*]"]``; default each string
    and number in the value). ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl`` and
    ``refresh_on_read``; minutes).
    """

    supports_ttl = True

    def __init__(
        self,
        db: Database,
        *,
        owner: str | None = None,
        fields: Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if not isinstance(db, Database):
            raise ValidationError(f"MemdbStore db {type(db).__name__}: give an open memdb.Database (memdb.open(path))")
        self._db = db
        self._owner = db.owner(owner).name if owner is not None else None
        self._fields = list(fields) if fields is not None else None
        self.ttl_config = ttl
        self._handles: dict[str, Memory] = {}

    def __repr__(self) -> str:
        return f"<memdb.integrations.langgraph.MemdbStore owner={self._owner!r}>"

    # --- BaseStore -------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (each sees the writes before it), all or nothing: every
        operation is checked before the first runs, and a batch that puts runs in one
        transaction, so a put memdb refuses (personal data in a key, a value it cannot keep)
        rolls back the puts before it (test_a_batch_refused_by_memdb_writes_nothing)."""
        ops = list(ops)
        for op in ops:
            self._check(op)
        results: list[Result] = []
        # only a batch that puts holds the write lock: reads stay concurrent
        with self._db.transaction() if any(isinstance(op, PutOp) for op in ops) else nullcontext():
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list(op))
                else:
                    assert isinstance(op, PutOp)
                    self._put(op)
                    results.append(None)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (as ``memdb.aio`` runs every call), off the event loop."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Erase every expired item now (reads already omit them), and every earlier value of a
        live item whose own expiry passed (a value replaced before it expired stayed as a version
        past it); returns how many items and earlier versions went."""
        gone = 0
        for owner in self._owners(None):
            mem = self._memory(owner)
            now = mem.now()
            for episode in list(self._scan(mem, ())):
                if _expired(episode, now):
                    gone += self._expire(mem, episode)
                elif episode.supersedes is not None:
                    gone += self._expire_versions(mem, episode)
        return gone

    # --- operations --------------------------------------------------------------------------------

    def _check(self, op: Op) -> None:
        if not isinstance(op, (GetOp, SearchOp, ListNamespacesOp, PutOp)):
            raise ValidationError(f"store operation {type(op).__name__}: not one of GetOp, PutOp, SearchOp, ListNamespacesOp")
        validate_op_namespace(op)
        if isinstance(op, (GetOp, PutOp)):
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if not isinstance(op.key, str):
                raise ValidationError(f"store key {_shown(op.key)}: keys are str")
        if isinstance(op, PutOp) and op.value is not None and not isinstance(op.value, Mapping):
            raise ValidationError(f"store value for key {_shown(op.key)}: {type(op.value).__name__}, not a dict (LangGraph values are)")
        if isinstance(op, SearchOp) and op.filter:
            for name, wanted in op.filter.items():
                _check_filter(str(name), wanted)

    def _get(self, op: GetOp) -> Item | None:
        owner, stored = self._split(op.namespace)
        mem = self._reader(owner)
        if mem is None:
            return None
        episode = _current(mem, fact_key(stored, op.key))
        if episode is None:
            return None
        if _expired(episode, mem.now()):
            self._expire(mem, episode)
            return None
        if op.refresh_ttl:
            try:
                episode = mem.get(episode.id)  # an access
            except NotFoundError:  # deleted since it was read: a read of a missing item
                return None
            episode = self._refresh(mem, episode)
        return self._item(owner, episode)

    def _put(self, op: PutOp) -> None:
        owner, stored = self._split(op.namespace)
        mem = self._memory(owner)
        key = fact_key(stored, op.key)
        # the current version is read in the write's transaction: read before it, another
        # writer's delete in between made this delete raise NotFoundError, or this put follow a
        # version no longer there (test_concurrent_deletes_and_puts_of_one_item)
        with self._db.transaction():
            prior = _current(mem, key)
            if op.value is None:
                if prior is not None:
                    mem.delete(prior.id, reason="langgraph store: item deleted")
                return
            now = mem.now()
            if prior is not None and _expired(prior, now):
                # erased as met, then written afresh: superseded, the expired value stayed for good
                # as an earlier version (test_a_put_over_an_expired_item_erases_it_and_writes_a_fresh_one)
                mem.delete(prior.id, reason="langgraph store: ttl expired")
                prior = None
            # a first version's creation is the put's time; later ones keep the first's
            created = (prior.decisions.get("created_at") or prior.ts) if prior is not None else now
            self._write(mem, key, stored, op.key, dict(op.value), op.index, created, now, op.ttl, now)

    def _write(
        self,
        mem: Memory,
        key: str,
        stored: tuple[str, ...],
        item_key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None,
        created: dt.datetime,
        updated: dt.datetime,
        ttl: float | None,
        now: dt.datetime,
    ) -> Episode:
        """Record an item's value as the fact's new version; in the caller's transaction, which
        a refusal rolls back. ``updated`` is the time of the put that gave the value: a new
        version whose decisions hold it even when the value is the same again, as a put is a
        write (test_updated_at_is_the_latest_put)."""
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < 10**9):
            raise ValidationError(f"store ttl {_shown(ttl)}: a positive number of minutes, or None")
        text, left_out = _fitted([t for t in self._texts(value, index) if t.strip()], mem.settings.digest_chars)
        decisions = {
            "namespace": list(stored), "key": item_key, "value": value, "created_at": created, "updated_at": updated,
            "ttl": ttl, "index": index,
            "indexed": bool(text),
            "expires_at": now + dt.timedelta(minutes=ttl) if ttl is not None else None,
        }  # fmt: skip
        episode = mem.record(
            "fact", text or key, key=key, content=text if len(text) > 500 else "", tags=[TAG], decisions=decisions
        )  # fmt: skip
        kept = episode.decisions
        if kept.get("namespace") != list(stored) or kept.get("key") != item_key:
            # the sanitizer replaced part of a label: keep no item under a name it cannot be found
            # by. Raised in the caller's transaction, which rolls the record back: nothing is
            # written, not even a delete's audit record (test_personal_data_in_a_label_writes_nothing)
            raise ValidationError("store namespace or key: looks like personal data; use an opaque id")
        if left_out:
            _log.warning(
                "langgraph store: item %s of owner %r: %d characters of its indexed text are not searchable "
                "(the text is cut to digest_chars=%d; db.configure(digest_chars=...) raises it)",
                episode.id, mem.name, left_out, mem.settings.digest_chars,
            )  # fmt: skip
        return episode

    def _search(self, op: SearchOp) -> list[SearchItem]:
        owners, stored_prefix = self._scope(op.namespace_prefix)
        want = max(op.offset, 0) + max(op.limit, 0)
        query = (op.query or "").strip()
        ranked: list[tuple[float, str, str, Episode]] = []  # (sort key, owner, id, episode)
        for owner in owners:
            mem = self._reader(owner)
            if mem is None:
                continue
            found = self._recalled(mem, query, stored_prefix, op.filter, want) if query else self._listed(mem, stored_prefix, op.filter)
            ranked.extend(found if query else found[:want])
        ranked.sort(key=lambda r: (r[0], r[1], r[2]))
        page = ranked[max(op.offset, 0) : want]
        out = []
        for order, owner, _, episode in page:
            mem = self._memory(owner)
            if op.refresh_ttl:
                episode = self._refresh(mem, episode)
            score = -order if query else None
            item = self._item(owner, episode)
            out.append(SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score))
        return out

    def _recalled(
        self, mem: Memory, query: str, prefix: tuple[str, ...], flt: dict[str, Any] | None, want: int
    ) -> list[tuple[float, str, str, Episode]]:
        """The store's facts matching ``query`` through memdb's recall, best first."""
        found: list[tuple[float, str, str, Episode]] = []
        expired: list[Episode] = []
        now = mem.now()
        offset = 0
        while len(found) < want:
            try:
                result = mem.recall(text=query, kind="fact", tags=[TAG], limit=max(_PAGE, 2 * want), offset=offset)
            except NoSearchableWordsError:  # "what is it?": no word to share with an item, so no item matches
                return []
            for hit in result.memories:
                episode = hit.episode
                if not _ours(episode) or not _indexed(episode):
                    continue
                if _expired(episode, now):
                    expired.append(episode)
                elif _within(episode, prefix) and _matches(episode, flt):
                    found.append((-hit.score, mem.name, episode.id, episode))
            offset += len(result.memories)
            if not result.memories or offset >= result.total:
                break
        for episode in expired:  # after paging: erasing while paging would shift the pages
            self._expire(mem, episode)
        return found

    def _listed(self, mem: Memory, prefix: tuple[str, ...], flt: dict[str, Any] | None) -> list[tuple[float, str, str, Episode]]:
        """The store's facts under ``prefix`` passing ``flt``, most recently updated first."""
        now = mem.now()
        found = []
        for episode in self._scan(mem, prefix):
            if _expired(episode, now):
                self._expire(mem, episode)
            elif _matches(episode, flt):
                found.append((-_updated(episode).timestamp(), mem.name, episode.id, episode))
        found.sort(key=lambda r: (r[0], r[1], r[2]))
        return found

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        named = next((c.path[0] for c in conditions if c.match_type == "prefix" and c.path and c.path[0] != "*"), None)
        namespaces: set[tuple[str, ...]] = set()
        for owner in self._owners(None if self._owner else named):
            mem = self._reader(owner)
            if mem is None:
                continue
            now = mem.now()
            for episode in self._scan(mem, ()):
                if _expired(episode, now):
                    self._expire(mem, episode)
                else:
                    namespaces.add(self._namespace(owner, episode))
        chosen = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        chosen.sort()
        return chosen[max(op.offset, 0) : max(op.offset, 0) + max(op.limit, 0)]

    # --- parts -------------------------------------------------------------------------------------

    def _split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """(owner, the namespace as kept under that owner)."""
        if self._owner is not None:
            return self._owner, tuple(namespace)
        return namespace[0], tuple(namespace[1:])

    def _scope(self, prefix: tuple[str, ...]) -> tuple[list[str], tuple[str, ...]]:
        """The owners a search prefix reaches, and the prefix as kept under each."""
        if self._owner is not None:
            return [self._owner], tuple(prefix)
        if prefix:
            return [prefix[0]], tuple(prefix[1:])
        return self._owners(None), ()

    def _owners(self, named: str | None) -> list[str]:
        if self._owner is not None:
            return [self._owner]
        return [named] if named is not None else self._db.owners()

    def _memory(self, owner: str) -> Memory:
        mem = self._handles.get(owner)
        if mem is None:
            mem = self._handles[owner] = self._db.owner(owner)
        return mem

    def _reader(self, owner: str) -> Memory | None:
        """The handle to read ``owner`` through, or None for a label no owner can have (a
        write under it is refused; a read finds nothing)."""
        try:
            return self._memory(owner)
        except ValidationError:
            return None

    def _namespace(self, owner: str, episode: Episode) -> tuple[str, ...]:
        stored = tuple(episode.decisions["namespace"])
        return stored if self._owner is not None else (owner, *stored)

    def _item(self, owner: str, episode: Episode) -> Item:
        d = episode.decisions
        created = d.get("created_at") or episode.ts
        return Item(
            value=d["value"], key=d["key"], namespace=self._namespace(owner, episode), created_at=created, updated_at=_updated(episode)
        )

    def _scan(self, mem: Memory, prefix: tuple[str, ...]) -> Iterator[Episode]:
        """The store's current facts of ``mem`` under ``prefix`` (not an access)."""
        for start in _scan_prefixes(prefix):
            for episode in mem.facts(start):
                if _ours(episode) and _within(episode, prefix):
                    yield episode

    def _texts(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> list[str]:
        if index is False:
            return []
        paths = index if index is not None else self._fields
        if paths is None:
            return list(_leaves(value))
        return [text for path in paths for text in get_text_at_path(value, path)]

    def _refresh(self, mem: Memory, episode: Episode) -> Episode:
        """Push a TTL item's expiry out again once less than half its TTL is left (a new version)."""
        if not _refresh_due(episode, mem.now()):
            return episode
        with self._db.transaction():  # read again in the write's: deleted or written meanwhile, it is not written over
            current = _current(mem, str(episode.key))
            if current is None or current.id != episode.id:
                return episode  # erased or written again since the read (a put sets its own expiry)
            d, now = episode.decisions, mem.now()
            created, updated = d.get("created_at") or episode.ts, _updated(episode)  # only the expiry moves
            return self._write(
                mem, str(episode.key), tuple(d["namespace"]), d["key"], d["value"], d.get("index"), created, updated, d["ttl"], now
            )

    def _expire(self, mem: Memory, episode: Episode) -> int:
        """Erase an expired item; 0 if it was erased or written again since it was read (a delete
        of the version read would erase the new one with it: a delete takes every version)."""
        with self._db.transaction():
            current = _current(mem, str(episode.key))
            if current is None or not _expired(current, mem.now()):
                return 0
            mem.delete(current.id, reason="langgraph store: ttl expired")
        return 1

    def _expire_versions(self, mem: Memory, episode: Episode) -> int:
        """Erase a live item's earlier values up to the newest whose own expiry passed, with every
        version before it (``Memory.erase_versions``: a chain is never holed); how many went, 0
        if none expired or the item was written again since it was read."""
        try:
            versions = mem.versions(episode.id)
        except NotFoundError:  # deleted since it was listed
            return 0
        if not any(_expired(v, mem.now()) for v in versions[:-1]):
            return 0  # read first: a sweep opens no write for the items with nothing to erase
        with self._db.transaction():
            current = _current(mem, str(episode.key))
            if current is None or current.id != episode.id:
                return 0
            now = mem.now()
            expired = [v for v in mem.versions(current.id)[:-1] if _expired(v, now)]
            if not expired:
                return 0
            return mem.erase_versions(expired[-1].id, reason="langgraph store: ttl expired").count


def _current(mem: Memory, key: str) -> Episode | None:
    """The current fact under exactly ``key``, without counting an access."""
    for episode in mem.facts(key):
        if episode.key == key:
            return episode
    return None


def _ours(episode: Episode) -> bool:
    d = episode.decisions
    return bool(episode.key) and str(episode.key).startswith((READABLE, HASHED)) and isinstance(d.get("namespace"), list) and "value" in d


def _indexed(episode: Episode) -> bool:
    """Whether a query may find an item: it has indexed text (not ``put(index=False)``, nor
    indexed paths holding no text). One without is still a fact whose key memdb indexes, and
    the words of its labels and key would match (test_an_item_put_with_index_false_is_never_found_by_a_query)."""
    d = episode.decisions
    return d.get("indexed", d.get("index") is not False) is True  # items written before "indexed": by "index"


def _within(episode: Episode, prefix: tuple[str, ...]) -> bool:
    return tuple(episode.decisions["namespace"][: len(prefix)]) == prefix


def _updated(episode: Episode) -> dt.datetime:
    """An item's ``updated_at``: its latest put's time (items written before it was kept: the version's)."""
    updated = episode.decisions.get("updated_at")
    return updated if isinstance(updated, dt.datetime) else episode.ts


def _refresh_due(episode: Episode, now: dt.datetime) -> bool:
    """Whether a read should push a TTL item's expiry out: once less than half its TTL is left."""
    ttl, expires = episode.decisions.get("ttl"), episode.decisions.get("expires_at")
    return ttl is not None and isinstance(expires, dt.datetime) and expires - now < dt.timedelta(minutes=ttl / 2)


def _expired(episode: Episode, now: dt.datetime) -> bool:
    expires = episode.decisions.get("expires_at")
    return isinstance(expires, dt.datetime) and expires <= now


def _fitted(lines: list[str], budget: int) -> tuple[str, int]:
    """The indexed lines as one text of at most ``budget`` characters (memdb's cap on a fact's
    content), and how many characters were left out. Where they are longer, each line keeps an
    equal share of the room from its start (a short one whole; the longest give up their
    tails), shortest first, so every indexed field stays searchable by its beginning: cut at
    the cap as one text, a long field hid every field after it whole
    (test_every_field_of_a_long_value_is_searchable)."""
    text = "\n".join(lines)
    if len(text) <= budget:
        return text, 0
    room = budget - (len(lines) - 1)  # the newlines between them
    kept = list(lines)
    for n, i in enumerate(sorted(range(len(lines)), key=lambda i: len(lines[i]))):
        kept[i] = _head(lines[i], max(room, 0) // (len(lines) - n))
        room -= len(kept[i])
    # the longest last: what the sanitizer's placeholders add past the cap, memdb cuts from its end
    fitted = "\n".join(sorted((line for line in kept if line), key=len))
    return fitted, len(text) - len(fitted)


def _head(text: str, size: int) -> str:
    """``text`` cut to at most ``size`` characters at the end of a word (a cut word is another word)."""
    if len(text) <= size:
        return text
    end = max(text.rfind(" ", 0, size + 1), text.rfind("\n", 0, size + 1))
    return text[:end].rstrip() if end > 0 else text[:size]


def _leaves(value: Any, path: str = "") -> Iterator[str]:
    """Each string and number of a value as a line ``field: text`` (the field names count as
    text, as in LangGraph's default of indexing the whole value)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, f"{path} {k}".strip())
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, path)
    elif isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        yield f"{path}: {value}" if path else str(value)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    if condition.match_type not in ("prefix", "suffix"):
        raise ValidationError(f"namespace match type {_shown(condition.match_type)}: use prefix or suffix")
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


# --- filters -------------------------------------------------------------------------------------


def _check_filter(name: str, wanted: Any) -> None:
    if isinstance(wanted, Mapping):
        for k, v in wanted.items():
            if str(k).startswith("$"):
                if k not in _OPERATORS:
                    raise ValidationError(f"store filter {_shown(name)}: operator {_shown(k)} is not one of {', '.join(_OPERATORS)}")
            else:
                _check_filter(f"{name}.{k}", v)


def _matches(episode: Episode, flt: Mapping[str, Any] | None) -> bool:
    if not flt:
        return True
    value = episode.decisions["value"]
    return all(_compare(_at(value, str(name)), wanted) for name, wanted in flt.items())


def _at(value: Any, path: str) -> Any:
    """The field a filter names: a key as written, else a dotted path into nested dicts."""
    if isinstance(value, Mapping) and path in value:
        return value[path]
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_apply(actual, str(op), operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k, _MISSING), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return _same(actual, wanted)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # JSON's true is not 1
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return a is not _MISSING and bool(a == b)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _apply(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _same(actual, operand)
    if op == "$ne":
        return not _same(actual, operand)
    if not ((_number(actual) and _number(operand)) or (isinstance(actual, str) and isinstance(operand, str))):
        return False  # no order between a number and a text, or a missing field
    if op == "$gt":
        return bool(actual > operand)
    if op == "$gte":
        return bool(actual >= operand)
    if op == "$lt":
        return bool(actual < operand)
    return bool(actual <= operand)
