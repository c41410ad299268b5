"""The integrity check: every index, posting and statistic of every owner compared with what
the records say it should be (``db.check()``; the tests run it after every change)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdb.memory.ids import episode_day, ts_micros
from memdb.memory.layout import (
    INDEXES,
    SUPERSEDED,
    Layout,
    entry_of,
    header_of,
    index_code,
    index_entries,
    predecessor_of,
    successor_of,
    terms_of,
)
from memdb.memory.postings import Doc
from memdb.memory.settings import FACT_KIND

if TYPE_CHECKING:
    from memdb.memory.episodes import Episodes

__all__ = ["CheckReport", "check"]


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
        owners = set(layer.owners())
        indexes = (*(lay.index(name) for name in INDEXES), lay.text.blocks, lay.text.numbers, lay.text.columns, lay.text.levels)
        kept = (lay.mem, lay.states, lay.doc_freq, lay.archived, lay.archived_sessions, lay.cold, lay.superseded, lay.fact_keys)
        for g in (*kept, *indexes):
            owners.update(str(o) for o in g.children())
        for owner in sorted(owners):
            _check_owner(lay, owner, report)
    return report


def _check_owner(lay: Layout, owner: str, report: CheckReport) -> None:
    expected: dict[str, dict[tuple[Any, ...], Any]] = {name: {} for name in (*INDEXES, "EPAR", "EPSA", "EPSU")}
    expected_keys: dict[tuple[Any, ...], Any] = {}  # ^EPFK: the current version of each fact
    links: dict[str, tuple[str | None, str | None]] = {}  # id -> (the version it supersedes, its successor)
    expected_docs: dict[str, Doc] = {}  # the hot episodes' text documents, from their records
    docs = terms = count = archived = 0
    records: dict[str, tuple[tuple[Any, ...], Any]] = {}
    for subs, rec in lay.mem.items((owner,)):
        if len(subs) == 3 and isinstance(rec, dict):
            records[str(subs[2])] = (subs, rec)
        else:  # written into memdb's global by hand (README: write only globals of your own)
            report.problems.append(f"^MEM{subs!r}: not an episode record (^MEM holds (owner, day, id) = record)")
    cold = {str(subs[1]) for subs, _ in lay.cold.items((owner,)) if len(subs) == 2}
    numbers = {str(subs[1]): doc for subs, doc in lay.text.numbers.items((owner,)) if len(subs) == 2}
    for subs, state in lay.states.items((owner,)):
        if len(subs) != 2 or not isinstance(state, dict):
            report.problems.append(f"^EPST{subs!r}: not an episode state (^EPST holds (owner, id) = state)")
            continue
        eid = str(subs[1])
        count += 1
        found = records.pop(eid, None)
        links[eid] = (predecessor_of(state), successor_of(state))
        if state.get("status") == "archived":
            archived += 1
            if found is not None:
                report.problems.append(f"^MEM({owner!r},...,{eid!r}): archived episode still has a hot record")
            if eid not in cold:
                report.problems.append(f"^COLD({owner!r},{eid!r}): archived episode without a cold record")
            cold.discard(eid)
            for gname, subs_list in index_entries(owner, eid, state, state).items():
                expected[gname].update(dict.fromkeys(subs_list, ""))
            continue
        if eid in cold:
            report.problems.append(f"^COLD({owner!r},{eid!r}): cold record of an episode that is not archived")
            cold.discard(eid)
        if found is None:
            report.problems.append(f"^EPST({owner!r},{eid!r}): state without a record")
            continue
        (_, day, _), value = found
        header = header_of(value)
        if {k: state.get(k) for k in header} != header:
            report.problems.append(f"^EPST({owner!r},{eid!r}): header differs from the record")
        if episode_day(eid) != day:
            report.problems.append(f"^MEM({owner!r},{day!r},{eid!r}): id is filed under the wrong day")
        if state.get("status") == SUPERSEDED:  # the record stays; only its ^EPSU entry indexes it
            if successor_of(state) is None:
                report.problems.append(f"^EPST({owner!r},{eid!r}): superseded without a successor")
            for gname, subs_list in index_entries(owner, eid, value, state).items():
                expected[gname].update(dict.fromkeys(subs_list, ""))
            continue
        if value.get("kind") == FACT_KIND:
            if (owner, value.get("key")) in expected_keys:
                report.problems.append(f"^MEM({owner!r},...,{eid!r}): a second current version of fact {value.get('key')!r}")
            expected_keys[(owner, value.get("key"))] = eid
        code = index_code(state["relevance"], value.get("outcome"))
        doc = numbers.get(eid)  # a hot episode without one: the text index's problems name it
        entry = entry_of(doc, value.get("outcome")) if doc is not None else None
        for gname, subs_list in index_entries(owner, eid, value, state).items():
            expected[gname].update(dict.fromkeys(subs_list, entry))
        tf, dl = terms_of(value)
        expected_docs[eid] = Doc(eid, ts_micros(value["ts"]), code, tf, dl, tuple(value.get("tags") or ()))
        if dl:
            docs += 1
            terms += dl
    report.episodes += count
    for eid, (subs, _) in records.items():
        report.problems.append(f"^MEM{subs!r}: record without state ({eid})")
    for eid in cold:
        report.problems.append(f"^COLD({owner!r},{eid!r}): cold record without state")
    for eid, (older, newer) in links.items():  # a chain links both ways, or not at all
        if older is not None and links.get(older, (None, None))[1] != eid:
            report.problems.append(f"^EPST({owner!r},{eid!r}): supersedes {older!r}, which is not superseded by it")
        if newer is not None and links.get(newer, (None, None))[0] != eid:
            report.problems.append(f"^EPST({owner!r},{eid!r}): superseded by {newer!r}, which does not supersede it")
    actual_keys = dict(lay.fact_keys.items((owner,)))
    for key in expected_keys.keys() | actual_keys.keys():
        if expected_keys.get(key) != actual_keys.get(key):
            report.problems.append(f"^EPFK{key!r}: {actual_keys.get(key)!r}, but the current version is {expected_keys.get(key)!r}")
    for gname, entries in expected.items():
        actual = dict(lay.index(gname).items((owner,)))
        for missing in sorted(entries.keys() - actual.keys(), key=repr):
            report.problems.append(f"^{gname}{missing!r}: missing index entry")
        for extra in sorted(actual.keys() - entries.keys(), key=repr):
            report.problems.append(f"^{gname}{extra!r}: index entry without a record")
        for subs in sorted(entries.keys() & actual.keys(), key=repr):
            if entries[subs] != actual[subs]:
                report.problems.append(f"^{gname}{subs!r}: value {actual[subs]!r}, expected {entries[subs]!r}")
    want_df = Counter(term for d in expected_docs.values() for term in d.tf)
    have_df = {str(s[1]): v for s, v in lay.doc_freq.items((owner,)) if len(s) == 2}
    for term in want_df.keys() | have_df.keys():
        if want_df.get(term) != have_df.get(term):
            report.problems.append(f"^EPDF({owner!r},{term!r}): {have_df.get(term)} but {want_df.get(term, 0)} postings")
    report.problems.extend(lay.text.problems(owner, expected_docs))
    for name, want in (("docs", docs), ("terms", terms), ("episodes", count), ("archived", archived)):
        have = lay.stats.get((owner, name), 0)
        if have != want:
            report.problems.append(f"^EPN({owner!r},{name!r}): {have} but the records say {want}")
