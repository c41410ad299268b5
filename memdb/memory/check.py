"""The integrity check: every index, posting and statistic of every owner compared with what
the records say it should be (``db.check()``; the tests run it after every change).

It runs in memory bounded by the damage found, not by the owner's size: records and states are
read once, side by side in id order, and each structure (an index, the fact keys, the document
numbers, the column records, the term and tag postings) is compared as sums of entry hashes in
``BUCKETS`` buckets, what the records say against what is stored, each read in one streaming
pass. Only where a bucket's sums differ does a second pass hold that bucket's entries, exactly,
and report them as a whole-owner comparison would. What grows with the owner is small: the
document frequencies by term (a Counter), each document's length (4 bytes) and whether some
episode has its number (a byte) (``tests/memory/test_check.py``). An entry hashes with the types
of its parts, so a subscript or value of another type that compares or hashes equal ("deploy" and
b"deploy", 1 and 1.0) is a difference (test_a_subscript_of_another_type_is_damage). A difference the
sums miss needs a bucket's two sums to agree by chance (modulo 2**64; ``hash`` of -1 and of -2 are
one in CPython, and no value compared is negative but a column's time before 1970; 0.0 and -0.0
are one too, as they were to the whole-owner comparison)."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memdb.engine import codec
from memdb.memory.ids import episode_day, ts_micros
from memdb.memory.layout import (
    INDEXES,
    SUPERSEDED,
    Layout,
    entry_of,
    header_of,
    index_code,
    index_entries,
    kept_when_archived,
    predecessor_of,
    successor_of,
    terms_of,
)
from memdb.memory.postings import CHUNK_DOCS, id_of, stored_tf
from memdb.memory.settings import FACT_KIND

if TYPE_CHECKING:
    from memdb.memory.episodes import Episodes

__all__ = ["ARCHIVED_COMPARED", "BUCKETS", "CheckReport", "archived_header_problems", "check"]

BUCKETS: Final = 4096
"""Buckets each structure's hash sums are kept in: a bucket whose sums differ is compared entry
by entry in a second pass, so damage costs memory by the buckets it touches (the tests lower it,
so that damaged entries share buckets with sound ones)."""

ARCHIVED_COMPARED: Final = ("ts", "kind", "outcome", "tags", "session", "supersedes", "lesson", "participants", "decided", "account")
"""The fields of an archived header that its cold record implies (``header_of`` and
``kept_when_archived``). Its one-liner is not among them: a ``Summarizer`` made it from the
record, and another summarizer, or another version of one, makes another."""

_NO_DL: Final = 0xFFFFFFFF
_MASK: Final = (1 << 64) - 1
_GROW: Final = 1 << 16  # documents past the last set that still grow the array


@dataclass
class CheckReport:
    """Result of ``db.check()``: every index compared with the records it should reflect."""

    episodes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


def check(layer: Episodes) -> CheckReport:
    """Verify that every index agrees exactly with the records (for tests and users)."""
    report = CheckReport()
    lay = layer.layout
    with layer.space.snapshot():
        layer.space.flush_staged()  # what this transaction staged, so it is read too
        owners = set(layer.owners())
        indexes = (*(lay.index(name) for name in INDEXES), lay.text.blocks, lay.text.numbers, lay.text.columns, lay.text.levels)
        kept = (lay.mem, lay.states, lay.doc_freq, lay.archived, lay.archived_sessions, lay.cold, lay.superseded, lay.fact_keys)
        for g in (*kept, *indexes):
            owners.update(str(o) for o in g.children())
        for owner in sorted(owners):
            _OwnerCheck(lay, owner).run(report)
    return report


def archived_header_problems(owner: str, eid: str, header: Mapping[str, Any], record: Any) -> list[str]:
    """What differs between an archived episode's header and its record decoded from cold storage
    (``ColdCodec.check`` decodes it: the codec is the lifecycle's), one problem a field, naming
    the field but not its value (it may be the record's text); a record whose fields are not of
    their types is damaged, reported, never raised (test_a_cold_record_with_a_damaged_field_is_reported_not_raised)."""
    if not isinstance(record, dict) or "ts" not in record or "kind" not in record:
        return [f"^COLD({owner!r},{eid!r}): damaged (not an episode record)"]
    try:
        want = header_of(record) | kept_when_archived(record)
    except (TypeError, ValueError, AttributeError, KeyError):  # a field of the wrong type (participants=5): check reports, never raises
        return [f"^COLD({owner!r},{eid!r}): damaged (a field is not what an episode record holds)"]
    out = [
        f"^EPST({owner!r},{eid!r}): archived header's {name} differs from its cold record"
        for name in ARCHIVED_COMPARED
        if header.get(name) != want.get(name)
    ]
    if not isinstance(header.get("one_line"), str):
        out.append(f"^EPST({owner!r},{eid!r}): archived header without a one-liner")
    return out


def _hash(key: Any, value: Any) -> int:
    # with the types: equal values of other types hash alike ("deploy" and b"deploy", 1 and 1.0
    # and True), and a subscript stored as bytes for a string is damage the old check reported
    kinds = tuple(map(type, key)) if isinstance(key, tuple) else type(key)
    try:
        return hash((key, kinds, value, type(value)))
    except TypeError:  # a damaged value (a list, a map) is never what the records say
        return hash((key, kinds, repr(value)))


class _Sums:
    """One structure's entries, as the records say they should be (``add_want``) and as stored
    (``add_have``): first as a difference of hash sums by bucket (the bucket of the entry's
    ``group``: its key, or its term, so that a term's postings share one), then, for the
    buckets where it is not zero, the entries themselves."""

    def __init__(self) -> None:
        self.n = BUCKETS
        self.sums = array("Q", [0]) * self.n  # modulo 2**64
        self.suspect: frozenset[int] | None = None  # set for the second pass
        self.wanted: list[tuple[Any, Any]] = []  # in the order the records gave them
        self.had: dict[Any, Any] = {}

    def add_want(self, group: Any, key: Any, value: Any) -> None:
        b = hash(group) % self.n
        if self.suspect is None:
            self.sums[b] = (self.sums[b] + _hash(key, value)) & _MASK
        elif b in self.suspect:
            self.wanted.append((key, value))

    def add_have(self, group: Any, key: Any, value: Any) -> None:
        b = hash(group) % self.n
        if self.suspect is None:
            self.sums[b] = (self.sums[b] - _hash(key, value)) & _MASK
        elif b in self.suspect:
            self.had[key] = value

    def holds(self, group: Any) -> bool:
        """Whether the second pass keeps ``group``'s entries."""
        return self.suspect is not None and hash(group) % self.n in self.suspect

    def differ(self) -> bool:
        """Whether some bucket differs; its buckets are kept for the second pass."""
        self.suspect = frozenset(b for b, d in enumerate(self.sums) if d)
        self.sums = array("Q")
        return bool(self.suspect)


class _Docs:
    """A value (below 2**32, or a byte) per document number, in an array that grows with the
    numbers set (an owner's are dense from 0); a number far past them (only damage makes one)
    in a dict, so a damaged number or ``next_doc`` costs no memory."""

    def __init__(self, fill: int, typecode: str = "I") -> None:
        self.fill = fill
        self.values = array(typecode)
        self.other: dict[int, int] = {}

    def get(self, doc: int) -> int:
        if 0 <= doc < len(self.values):
            return self.values[doc]
        return self.other.get(doc, self.fill)

    def known(self, doc: int) -> int | None:
        """The value of ``doc``, or None where none was set."""
        value = self.values[doc] if 0 <= doc < len(self.values) else self.other.get(doc, self.fill)
        return None if value == self.fill else value

    def set(self, doc: int, value: int) -> None:
        n = len(self.values)
        if n <= doc < 2 * n + _GROW:
            self.values.extend(array(self.values.typecode, [self.fill]) * (doc + 1 - n + n // 2))
        if 0 <= doc < len(self.values):
            self.values[doc] = value
        else:
            self.other[doc] = value


class _OwnerCheck:
    """One owner's check: the records walked (twice if something differs), every structure read
    in its own order."""

    def __init__(self, lay: Layout, owner: str) -> None:
        self.lay, self.owner = lay, owner
        self.entries = {name: _Sums() for name in (*INDEXES, "EPAR", "EPSA", "EPSU")}
        self.facts, self.numbers, self.columns = _Sums(), _Sums(), _Sums()
        self.postings, self.tag_postings = _Sums(), _Sums()
        self.df: Counter[str] = Counter()
        self.docs = self.terms = self.count = self.archived = 0
        self.first = True
        self.next_doc = int(lay.stats.get((owner, "next_doc"), 0))
        self.dls = _Docs(_NO_DL)  # the hot documents' lengths, from their records
        self.claimed = _Docs(0, "B")  # 1 for a number some episode has
        self.has_cold = lay.cold.data((owner,)) >= 10
        self.walked: list[str] = []

    def run(self, report: CheckReport) -> None:
        lay, owner = self.lay, self.owner
        self.walk()
        report.episodes += self.count
        walked = self.walked
        for subs, eid in lay.fact_keys.items((owner,)):
            self.facts.add_have(subs, subs, eid)
        for name, sums in self.entries.items():
            for subs, value in lay.index(name).items((owner,)):
                sums.add_have(subs, subs, value)
        df = self._doc_freq()
        numbered = self._numbers()
        chunks, live = self._chunks()
        lists = [self._lists(tags, sums) for tags, sums in ((False, self.postings), (True, self.tag_postings))]
        all_sums = (self.facts, *self.entries.values(), self.numbers, self.columns, self.postings, self.tag_postings)
        if any([s.differ() for s in all_sums]):  # a list: every structure keeps its buckets
            self.first = False
            self.walk()
            self._second_reads()
        facts, entries, numbers, columns = self._facts(), self._entries(), self._numbered(), self._columns()
        postings = [
            self._postings(sums, g.name) for g, sums in ((lay.text.blocks, self.postings), (lay.text.tag_blocks, self.tag_postings))
        ]
        report.problems += walked + facts + entries + df + numbers + numbered + chunks + live + columns
        for found, wrong in zip(lists, postings, strict=True):
            report.problems += found + wrong
        for name, want in (("docs", self.docs), ("terms", self.terms), ("episodes", self.count), ("archived", self.archived)):
            have = lay.stats.get((owner, name), 0)
            if have != want:
                report.problems.append(f"^EPN({owner!r},{name!r}): {have} but the records say {want}")

    # --- the records ---------------------------------------------------------------------------

    def walk(self) -> None:
        """Each state with its record, in id order (a record filed out of order, or a state
        without one in order, waits for the end): what they say goes into the sums, and, in the
        first pass, what is wrong with them into ``walked``."""
        lay, owner = self.lay, self.owner
        out = self.walked if self.first else None
        stray: dict[str, tuple[tuple[Any, ...], Any]] = {}  # records not in id order (misfiled)
        pending: dict[str, dict[str, Any]] = {}  # hot states whose record was not in order
        records = self._filed(stray, out)
        cur = next(records, None)
        for subs, state in lay.states.items((owner,)):
            if len(subs) != 2 or not isinstance(state, dict):
                if out is not None:
                    out.append(f"^EPST{subs!r}: not an episode state (^EPST holds (owner, id) = state)")
                continue
            eid = str(subs[1])
            if out is not None:
                self.count += 1
                self._links(eid, state, out)
            if isinstance(subs[1], str):
                while cur is not None and cur[0] < eid:
                    self._passed(cur[0], cur[1], cur[2], stray, out)
                    cur = next(records, None)
                if cur is not None and cur[0] == eid:
                    self._episode(eid, state, (cur[1], cur[2]))
                    cur = next(records, None)
                    continue
            found = stray.pop(eid, None)
            if found is None and state.get("status") != "archived":
                pending[eid] = state
                continue
            self._episode(eid, state, found)
        while cur is not None:
            self._passed(cur[0], cur[1], cur[2], stray, out)
            cur = next(records, None)
        for eid, found in stray.items():
            waiting = pending.pop(eid, None)
            if waiting is not None:
                self._episode(eid, waiting, found)
                continue
            if out is None:
                continue
            state = lay.states.get((owner, eid))
            if not isinstance(state, dict):
                out.append(f"^MEM{found[0]!r}: record without state ({eid})")
            elif state.get("status") == "archived":
                out.append(f"^MEM({owner!r},...,{eid!r}): archived episode still has a hot record")
            else:  # a second record of an episode, under another day
                out.append(f"^MEM({owner!r},{found[0][1]!r},{eid!r}): id is filed under the wrong day")
        for eid, state in pending.items():
            self._episode(eid, state, None)
        if out is not None and self.has_cold:
            for key, _ in lay.cold.raw_range((owner,)):
                subs = codec.decode(key, len(lay.cold.key()))
                if len(subs) == 2 and not isinstance(lay.states.get((owner, str(subs[1]))), dict):
                    out.append(f"^COLD({owner!r},{str(subs[1])!r}): cold record without state")

    def _filed(self, stray: dict[str, tuple[tuple[Any, ...], Any]], out: list[str] | None) -> Iterator[tuple[str, tuple[Any, ...], Any]]:
        """The owner's records filed under their id's day, in id order; any other into ``stray``."""
        last = ""
        for subs, rec in self.lay.mem.items((self.owner,)):
            if len(subs) != 3 or not isinstance(rec, dict):  # written into memdb's global by hand (README: write only globals of your own)
                if out is not None:
                    out.append(f"^MEM{subs!r}: not an episode record (^MEM holds (owner, day, id) = record)")
                continue
            eid = str(subs[2])
            if isinstance(subs[2], str) and subs[1] == episode_day(eid) and eid > last:
                last = eid
                yield eid, subs, rec
            else:
                stray[eid] = (subs, rec)

    def _passed(
        self, eid: str, subs: tuple[Any, ...], rec: Any, stray: dict[str, tuple[tuple[Any, ...], Any]], out: list[str] | None
    ) -> None:
        """A record whose id no state in order had: without state, or its state comes later."""
        if isinstance(self.lay.states.get((self.owner, eid)), dict):
            stray[eid] = (subs, rec)
        elif out is not None:
            out.append(f"^MEM{subs!r}: record without state ({eid})")

    def _links(self, eid: str, state: dict[str, Any], out: list[str]) -> None:
        """A chain of versions links both ways, or not at all."""
        older, newer = predecessor_of(state), successor_of(state)
        if older is not None and self._link(older)[1] != eid:
            out.append(f"^EPST({self.owner!r},{eid!r}): supersedes {older!r}, which is not superseded by it")
        if newer is not None and self._link(newer)[0] != eid:
            out.append(f"^EPST({self.owner!r},{eid!r}): superseded by {newer!r}, which does not supersede it")

    def _link(self, eid: str) -> tuple[str | None, str | None]:
        state = self.lay.states.get((self.owner, eid))
        return (predecessor_of(state), successor_of(state)) if isinstance(state, dict) else (None, None)

    def _episode(self, eid: str, state: dict[str, Any], found: tuple[tuple[Any, ...], Any] | None) -> None:
        lay, owner = self.lay, self.owner
        out = self.walked if self.first else None
        if state.get("status") == "archived":
            if out is not None:
                self.archived += 1
                if found is not None:
                    out.append(f"^MEM({owner!r},...,{eid!r}): archived episode still has a hot record")
                if not self.has_cold or (owner, eid) not in lay.cold:
                    out.append(f"^COLD({owner!r},{eid!r}): archived episode without a cold record")
            self._want_entries(eid, state, state, "")
            return
        if out is not None and self.has_cold and (owner, eid) in lay.cold:
            out.append(f"^COLD({owner!r},{eid!r}): cold record of an episode that is not archived")
        if found is None:
            if out is not None:
                out.append(f"^EPST({owner!r},{eid!r}): state without a record")
            return
        (_, day, _), value = found
        if out is not None:
            header = header_of(value)
            if {k: state.get(k) for k in header} != header:
                out.append(f"^EPST({owner!r},{eid!r}): header differs from the record")
            if episode_day(eid) != day:
                out.append(f"^MEM({owner!r},{day!r},{eid!r}): id is filed under the wrong day")
        if state.get("status") == SUPERSEDED:  # the record stays; only its ^EPSU entry indexes it
            if out is not None and successor_of(state) is None:
                out.append(f"^EPST({owner!r},{eid!r}): superseded without a successor")
            self._want_entries(eid, value, state, "")
            return
        if value.get("kind") == FACT_KIND:
            key = (owner, value.get("key"))
            self.facts.add_want(key, key, eid)
        code = index_code(state["relevance"], value.get("outcome"))
        number = lay.text.number(owner, eid)  # a hot episode without one: the text index's problems name it
        entry = entry_of(number, value.get("outcome")) if number is not None else None
        self._want_entries(eid, value, state, entry)
        tf, dl = terms_of(value)
        self.numbers.add_want(eid, eid, None)
        if number is not None:
            doc = number
            ts_us = ts_micros(value["ts"])
            self.columns.add_want(doc, doc, (ts_us, eid, dl, code))
            for term, n in tf.items():
                self.postings.add_want(term, (term, doc), stored_tf(n))
            for tag in dict.fromkeys(value.get("tags") or ()):
                self.tag_postings.add_want(tag, (tag, doc), 1)
            if self.first:
                self.dls.set(doc, min(dl, _NO_DL - 1))
        if out is not None:
            self.df.update(tf.keys())
            if dl:
                self.docs += 1
                self.terms += dl

    def _want_entries(self, eid: str, value: dict[str, Any], state: dict[str, Any], entry: Any) -> None:
        for name, subs_list in index_entries(self.owner, eid, value, state).items():
            sums = self.entries[name]
            for subs in dict.fromkeys(subs_list):
                sums.add_want(subs, subs, entry)

    # --- what is stored ------------------------------------------------------------------------

    def _doc_freq(self) -> list[str]:
        """^EPDF against the hot records' terms (read once: its Counter is the one per-term
        structure kept)."""
        out: list[str] = []
        owner, want = self.owner, self.df
        for subs, have in self.lay.doc_freq.items((owner,)):
            if len(subs) != 2:
                continue
            term = str(subs[1])
            wanted = want.pop(term, None)
            if wanted != have:
                out.append(f"^EPDF({owner!r},{term!r}): {have} but {wanted or 0} postings")
        for term, wanted in want.items():
            out.append(f"^EPDF({owner!r},{term!r}): None but {wanted} postings")
        self.df = Counter()
        return out

    def _numbers(self) -> list[str]:
        """^EPDN: its numbers into the sums, and the number each document has, kept as a bit."""
        owner, out = self.owner, []
        shared, top = False, None
        for eid, doc in self.lay.text.stored_numbers(owner):
            self.numbers.add_have(eid, eid, None)
            shared = shared or self.claimed.get(doc) == 1
            self.claimed.set(doc, 1)
            top = doc if top is None else max(top, doc)
        if shared:
            out.append(f"^EPDN({owner!r}): two episodes share a document number")
        if top is not None and top >= self.next_doc:
            out.append(f"^EPN({owner!r},'next_doc'): {self.next_doc}, but document {top} exists")
        return out

    def _chunks(self) -> tuple[list[str], list[str]]:
        """The column records chunk by chunk: their problems, then the live records no episode's
        number names; the live ones into the sums."""
        out: list[str] = []
        orphans: list[str] = []
        for doc, col in self.lay.text.stored_columns(self.owner, out):
            self.columns.add_have(doc, doc, (col.ts_us, id_of(col), col.dl, col.code))
            if self.claimed.get(doc) != 1:
                orphans.append(f"^EPC({self.owner!r},{doc // CHUNK_DOCS}): live record of document {doc}, which no episode has")
        return out, orphans

    def _lists(self, tags: bool, sums: _Sums) -> list[str]:
        """An owner's term lists (tag lists with ``tags``), one block at a time: the postings into
        the sums; in the first pass, what is wrong with the lists into the problems, and in the
        second only the buckets kept are read."""
        out: list[str] | None = [] if self.first else None
        wanted = None if self.first else sums.holds
        for term, docs, tfs in self.lay.text.stored_postings(self.owner, tags=tags, problems=out, wanted=wanted, length=self.dls.known):
            for doc, tf in zip(docs, tfs, strict=True):
                sums.add_have(term, (term, doc), tf)
        return out or []

    def _second_reads(self) -> None:
        """What is stored in the buckets that differ (the records' side was walked again)."""
        lay, owner = self.lay, self.owner
        for subs, eid in lay.fact_keys.items((owner,)) if self.facts.suspect else ():
            self.facts.add_have(subs, subs, eid)
        for name, sums in self.entries.items():
            for subs, value in lay.index(name).items((owner,)) if sums.suspect else ():
                sums.add_have(subs, subs, value)
        for eid, _ in lay.text.stored_numbers(owner) if self.numbers.suspect else ():
            self.numbers.add_have(eid, eid, None)
        for doc, col in lay.text.stored_columns(owner) if self.columns.suspect else ():
            self.columns.add_have(doc, doc, col)
        for tags, sums in ((False, self.postings), (True, self.tag_postings)):
            if sums.suspect:
                self._lists(tags, sums)

    # --- the differences, from the buckets kept -----------------------------------------------

    def _facts(self) -> list[str]:
        out, owner = [], self.owner
        expected: dict[Any, str] = {}
        for key, eid in self.facts.wanted:
            if key in expected:
                out.append(f"^MEM({owner!r},...,{eid!r}): a second current version of fact {key[1]!r}")
            expected[key] = eid
        actual = self.facts.had
        for key in expected.keys() | actual.keys():
            if expected.get(key) != actual.get(key):
                out.append(f"^EPFK{key!r}: {actual.get(key)!r}, but the current version is {expected.get(key)!r}")
        return out

    def _entries(self) -> list[str]:
        out = []
        for name, sums in self.entries.items():
            entries, actual = dict(sums.wanted), sums.had
            for missing in sorted(entries.keys() - actual.keys(), key=repr):
                out.append(f"^{name}{missing!r}: missing index entry")
            for extra in sorted(actual.keys() - entries.keys(), key=repr):
                out.append(f"^{name}{extra!r}: index entry without a record")
            for subs in sorted(entries.keys() & actual.keys(), key=repr):
                if entries[subs] != actual[subs]:
                    out.append(f"^{name}{subs!r}: value {actual[subs]!r}, expected {entries[subs]!r}")
        return out

    def _numbered(self) -> list[str]:
        owner, hot, numbers = self.owner, dict(self.numbers.wanted), self.numbers.had
        out = [f"^EPDN({owner!r},{eid!r}): hot episode without a text document number" for eid in sorted(hot.keys() - numbers.keys())]
        out += [f"^EPDN({owner!r},{eid!r}): document number of an episode that is not hot" for eid in sorted(numbers.keys() - hot.keys())]
        return out

    def _columns(self) -> list[str]:
        out, owner, live = [], self.owner, self.columns.had
        for doc, (ts_us, eid, dl, code) in self.columns.wanted:
            col = live.get(doc)
            if col is None:
                out.append(f"^EPC({owner!r},{doc // CHUNK_DOCS}): no live record of document {doc} ({eid})")
            elif (col.ts_us, id_of(col), col.dl, col.code) != (ts_us, eid, dl, code):
                out.append(f"^EPC({owner!r},{doc // CHUNK_DOCS}): record of document {doc} differs from episode {eid}")
        return out

    def _postings(self, sums: _Sums, name: str) -> list[str]:
        want, have = dict(sums.wanted), sums.had
        wrong = sorted(p for p in want.keys() | have.keys() if want.get(p) != have.get(p))
        if not wrong:
            return []
        docs = {doc for _, doc in wrong}
        by_doc: dict[int, str] = {}
        for eid, doc in self.lay.text.stored_numbers(self.owner):
            if doc in docs:
                by_doc[doc] = eid
        where = f"^{name}({self.owner!r},"
        return [f"{where}{t!r},...): document {d} ({by_doc.get(d)}): tf {have.get((t, d))}, expected {want.get((t, d))}" for t, d in wrong]
