"""What a small structured recall reads (issue 20: every ``bench_query`` shape at a million
episodes at or below SQLite): ``recall(since, until, tags=[t])`` over a window of a few matches,
or of none, where the note counts the tag's matches outside it. Each test pins a read that such an
answer made and need not; the answers themselves are pinned by the reference tests
(tests/query/test_query.py, test_outside_counts.py, test_small_recall.py)."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import math
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from query_times import NOW

import memdb
import memdb.engine.globals
from memdb import native
from memdb.memory import postings
from memdb.memory.postings import TextIndex
from memdb.query import engine, plan
from memdb.query.results import Hit, Interpretation

pytestmark = pytest.mark.usefixtures("backend")  # on LMDB and on PostgreSQL (tests/conftest.py)

T0 = NOW - dt.timedelta(days=30)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[memdb.Database]:
    """120 episodes an hour apart: every third tagged ``billing``, the others ``deploy``."""
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as database:
        mem = database.owner("ana")
        with database.transaction():
            for i in range(120):
                tag = "billing" if i % 3 == 0 else "deploy"
                mem.record("debug", f"attempt {i} at the rollout", outcome="failure", tags=[tag], ts=T0 + dt.timedelta(hours=i))
        database.flush()
        yield database


def _window(first: int, hours: int) -> dict[str, Any]:
    return {"since": T0 + dt.timedelta(hours=first), "until": T0 + dt.timedelta(hours=first + hours), "now": NOW}


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Calls of ``owner.name`` from now on, one item each."""
    calls: list[int] = []
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_few_matches_over_the_limit_are_ranked_without_the_owners_levels(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seven matches for a limit of five: bounding them by their relevance levels read the owner's
    level stamps (a round trip on PostgreSQL) and cost more than the two headers it could save."""
    mem = db.owner("ana")
    levels = _counting(monkeypatch, TextIndex, "levels_of")
    r = mem.recall(tags=["billing"], **_window(0, 21))
    assert r.total == 7 and len(r.memories) == 5
    assert levels == []
    many = mem.recall(tags=["billing"], **_window(0, 60))  # twenty: bounded first, as before
    assert many.total == 20 and len(many.memories) == 5
    assert levels


def test_a_repeated_tag_filter_is_not_checked_again(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tag filter given as a list or tuple of strings is read once (``tag_filters``): the check
    of each tag was a tenth of a small recall's fixed cost, on every call."""
    mem = db.owner("ana")
    mem.recall(tags=["billing"], **_window(0, 21))
    checks = _counting(monkeypatch, plan, "given_tags")
    assert mem.recall(tags=["billing"], **_window(3, 21)).total == 7
    assert mem.recall(tags=("billing",), **_window(3, 21)).total == 7
    assert checks == []
    with pytest.raises(memdb.errors.ValidationError):  # a bad tag is still refused, every time
        mem.recall(tags=["billing", ""], **_window(3, 21))
    with pytest.raises(memdb.errors.ValidationError):
        mem.recall(tags=["billing", ""], **_window(3, 21))


def test_an_empty_windows_note_reads_its_tags_list_once(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The note of an empty window counts the tag's matches outside it from the tag's list. A list
    the memo did not keep (past 2 MiB of them, a fixed size) was read again by every such answer:
    at a million episodes the biggest tag's took 0.5 ms of a 0.7 ms answer. The memo keeps lists
    up to 8 bytes a document of the owner's (here, with the fixed size shrunk to one byte)."""
    monkeypatch.setattr(engine, "_MEMO_LIST_BYTES", 1)
    mem = db.owner("ana")
    reads = _counting(monkeypatch, TextIndex, "stored_list")
    notes = []
    for _ in range(3):
        r = mem.recall(tags=["billing"], **_window(1, 2))
        assert r.total == 0
        notes.append(r.note)
    assert notes[0] == notes[1] == notes[2] and "earlier" in notes[0] and "later" in notes[0]
    assert len(reads) == 1


def test_a_kept_list_is_split_for_the_kernel_once(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A list kept between answers is split into its blocks once, not on every count or search of
    it: at a million episodes the biggest tag's split took 35 us of a 46 us count."""
    lib, ffi = native.search_lib()
    if lib is None:
        pytest.skip("the C kernel is not in use (MEMDB_PURE_PYTHON=1): the twin splits nothing")
    splits: list[int] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(lib, name)

        def memdb_split_stored(self, *args: Any) -> Any:
            splits.append(1)
            return lib.memdb_split_stored(*args)

    monkeypatch.setattr(native, "search_lib", lambda: (Counting(), ffi))
    mem = db.owner("ana")
    first = mem.recall(tags=["billing"], **_window(1, 2))
    for _ in range(3):
        assert mem.recall(tags=["billing"], **_window(1, 2)).note == first.note
    assert mem.recall(tags=["billing"], **_window(4, 2)).total == 0
    assert len(splits) == 1


def test_a_few_scores_are_ordered_without_a_c_call(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranking seven matches called C's top_k, whose two ffi.new cost more than sorting seven
    scores (``engine._top``, which orders them as C does: the test below); many still go to C."""
    mem = db.owner("ana")
    c_calls = _counting(monkeypatch, native, "top_k")
    got = [(m.id, m.score) for m in mem.recall(tags=["billing"], **_window(0, 21)).memories]
    assert len(got) == 5 and c_calls == []
    monkeypatch.setattr(engine, "_FEW_SCORES", -1)  # C for any number: the order it gives is the reference
    assert [(m.id, m.score) for m in mem.recall(tags=["billing"], **_window(0, 21)).memories] == got
    assert len(c_calls) == 1


@given(st.lists(st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.5, 1.0, 7.5, math.nan]), max_size=40), st.integers(0, 45))
def test_few_scores_are_ordered_as_c_orders_them(scores: list[float], k: int) -> None:
    """Highest first, ties by lower index, NaN last: ``native.top_k``'s order (the twin's where C is off)."""
    assert engine._top(scores, k) == native.top_k(scores, k)


def test_a_hits_score_is_rounded_when_first_read(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recall rounded each hit's score to 6 places as it made the hit (0.4 us each); a hit now
    rounds it when the score is first read, to the same value."""
    hit = Hit.deferred("an-id", lambda: pytest.fail("the episode is not built"), 0.123456789, (), 6)
    assert hit.score == 0.123457 and hit.score == 0.123457
    assert Hit.deferred("an-id", lambda: pytest.fail("the episode is not built"), 0.123456789, ()).score == 0.123456789
    memories = db.owner("ana").recall(tags=["billing"], **_window(0, 21)).memories
    scores = [m.score for m in memories]
    assert len(scores) == 5 and all(s == round(s, 6) and 0 < s <= 1 for s in scores) and scores == sorted(scores, reverse=True)


def test_utc_times_are_taken_as_given(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recall's window and ``now`` given in UTC (as most callers give them) are used as they are,
    where each went through ``utc``'s checks and conversion; other zones still are converted and
    naive times refused."""
    mem = db.owner("ana")
    checked = _counting(monkeypatch, plan, "utc")
    want = [m.id for m in mem.recall(tags=["billing"], **_window(0, 21)).memories]
    assert len(want) == 5 and checked == []
    paris = dt.timezone(dt.timedelta(hours=2))
    shifted = {k: v.astimezone(paris) for k, v in _window(0, 21).items()}
    assert [m.id for m in mem.recall(tags=["billing"], **shifted).memories] == want
    assert len(checked) == 3  # since, until and now
    with pytest.raises(memdb.errors.ValidationError, match="naive datetime"):
        plan.as_utc(dt.datetime(2026, 7, 1), "since")


def test_a_small_recall_reads_its_snapshot_without_context_managers(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside its snapshot a recall read the range, the headers and the records each through
    ``Globals.reader()``, whose nullcontext was three Python calls a read; ``Globals.get_many`` and
    ``scan_columns`` read the snapshot's transaction directly."""
    mem = db.owner("ana")
    want = [(m.id, m.score) for m in mem.recall(tags=["billing"], **_window(0, 21)).memories]
    readers = _counting(monkeypatch, memdb.engine.globals, "nullcontext")
    assert [(m.id, m.score) for m in mem.recall(tags=["billing"], **_window(0, 21)).memories] == want
    assert readers == []


def test_the_memo_is_found_once_a_snapshot(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty window's answer asks for the owner's memo four times in its snapshot, and each time
    looked its stamps up and compared them (8 KB at a million episodes); nothing changes in a
    snapshot, so the memo found first stands. Only the columns' two stamps are looked up besides."""
    mem = db.owner("ana")
    first = mem.recall(tags=["billing"], **_window(1, 2)).note
    stamps = _counting(monkeypatch, TextIndex, "_stamps_of")
    assert mem.recall(tags=["billing"], **_window(1, 2)).note == first
    assert len(stamps) == 3
    mem.record("debug", "attempt late at the rollout", outcome="failure", tags=["billing"], ts=NOW - dt.timedelta(hours=1))
    assert "40 later" in mem.recall(tags=["billing"], **_window(1, 2)).note  # a new snapshot sees the capture


def test_a_recall_without_words_reads_no_stamps(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the owner has archived memories (the note of an answer with matches says so) was
    kept in the owner's memo, which is trusted by reading its stamps (8 KB at a million episodes):
    a recall without words read them for that alone. It reads the owner's archived counter, and
    an archive made since is still told."""
    mem = db.owner("ana")
    first = mem.recall(tags=["billing"], **_window(0, 21))
    stamps = _counting(monkeypatch, TextIndex, "_stamps_of")
    again = mem.recall(tags=["billing"], **_window(0, 21))
    assert (again.total, [m.id for m in again.memories], again.note) == (first.total, [m.id for m in first.memories], first.note)
    assert stamps == []
    mem.archive(first.memories[-1].id)
    after = mem.recall(tags=["billing"], **_window(0, 21))
    assert after.total == first.total - 1 and "Also 1 archived match" in after.note, after.note


def test_recall_is_timed_in_its_body(db: memdb.Database, caplog: pytest.LogCaptureFixture) -> None:
    """``recall`` times itself for the slow-query log: ``_timed``'s wrapper forwarded its 17
    parameters through ``*args`` and ``**kwargs``, 0.5 us of every recall (a hundredth of a small
    one). A slow recall is still logged, with what ``_timed`` logs (tests/surfaces/test_logging.py)."""
    assert not hasattr(engine.OwnerQueries.recall, "__wrapped__")
    db.configure(slow_query_ms=0)
    with caplog.at_level("WARNING", logger="memdb.query.engine"):
        db.owner("ana").recall(tags=["billing"], **_window(0, 21))
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["slow recall for owner 'ana'"]


def test_a_windows_range_is_read_from_the_kept_parent_key(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tag's range in the window is read between the layout's kept key of the tag and the
    window's ends encoded as ints: ``Global.raw_columns`` encoded the tag's key again and each bound
    through the subscript type dispatch on every recall. The matches are the same."""
    mem = db.owner("ana")
    columns = _counting(monkeypatch, memdb.engine.globals.Global, "raw_columns")
    r = mem.recall(tags=["billing"], **_window(0, 21))
    assert r.total == 7 and columns == []
    assert mem.recall(tags=["billing"], since=T0 + dt.timedelta(hours=3), now=NOW).total == 39  # one end open
    assert mem.recall(tags=["billing"], until=T0 + dt.timedelta(hours=3), now=NOW).total == 1
    assert columns == []


def test_an_empty_windows_count_makes_its_kernel_input_once(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The count behind an empty window's note made the kernel's input (eight ffi.new, its
    pointers copied) on every answer; it is kept with the tag's kept list, and made again for
    new chunks (a capture) only."""
    if native.search_lib()[0] is None:
        pytest.skip("the C kernel is not in use (MEMDB_PURE_PYTHON=1)")
    mem = db.owner("ana")
    made = _counting(monkeypatch, postings, "_c_input")
    first = mem.recall(tags=["billing"], **_window(1, 2))
    for hours in (4, 7, 10):
        assert mem.recall(tags=["billing"], **_window(hours, 2)).total == 0
    assert mem.recall(tags=["billing"], **_window(1, 2)).note == first.note
    assert len(made) == 1
    mem.record("debug", "attempt late at the rollout", outcome="failure", tags=["billing"], ts=NOW - dt.timedelta(hours=1))
    later = mem.recall(tags=["billing"], **_window(1, 2)).note
    assert "39 later" in first.note and "40 later" in later
    assert len(made) == 2


@pytest.mark.postgres_only(reason="round trips are what PostgreSQL pays per read; LMDB has none")
def test_a_small_recall_takes_few_round_trips(db: memdb.Database) -> None:
    """A recall of a few matches, or of none, reads each thing it needs once, inside its snapshot:
    the snapshot's start, the tag's range, then the headers, the records and the owner's archived
    counter (whether it has archived memories), or the stamps, the level stamps and the tag's list (kept)
    for the note of an empty window. They took 8 and 9 round trips: the stamps read outside the
    snapshot, the level stamps for ranking seven matches, the records' stamps twice, and a seek each
    for archived and superseded memories the owner never had."""
    mem = db.owner("ana")
    counts = []
    for window in (_window(0, 21), _window(1, 2)):
        mem.recall(tags=["billing"], **window)
        before = db.store.round_trips  # type: ignore[attr-defined]
        mem.recall(tags=["billing"], **window)
        counts.append(db.store.round_trips - before)  # type: ignore[attr-defined]
    assert counts[0] <= 5 and counts[1] <= 4, counts


def test_an_interpretation_made_at_once_is_the_dataclass_it_was() -> None:
    """``Interpretation`` sets its 27 fields in one step (every recall and question makes one): by
    keyword, with the defaults, equal, hashed, replaced, copied and pickled as before, and still
    frozen; an unknown keyword or a positional argument is refused."""
    made = Interpretation(tags=("billing",), terms=("deploy",), kind="debug")
    assert made == Interpretation(kind="debug", terms=("deploy",), tags=("billing",))
    assert hash(made) == hash(Interpretation(tags=("billing",), terms=("deploy",), kind="debug"))
    assert made.outcome is None and made.terms_required and made.zone == "UTC" and made.count is None
    assert [f.name for f in dataclasses.fields(made)] == list(vars(made))
    assert dataclasses.replace(made, zone="Europe/Paris") == made  # the zone takes no part in equality
    assert dataclasses.replace(made, kind=None) == Interpretation(tags=("billing",), terms=("deploy",))
    assert copy.copy(made) == made and pickle.loads(pickle.dumps(made)) == made
    assert repr(made).startswith("Interpretation(window=None, tags=('billing',), any_tags=(), terms=('deploy',)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.kind = "review"  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'tag'"):
        Interpretation(tag="billing")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Interpretation(None)


def test_an_empty_answer_then_a_correction_names_the_earlier_version(tmp_path: Path) -> None:
    """The "no superseded versions" an empty answer remembers for its owner is forgotten when a
    correction supersedes one (cached for good, the next note hid the earlier version: revL)."""
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as database:
        mem = database.owner("ana")
        mem.record("fact", "Editor: Vim", key="editor")
        assert mem.ask("emacs").note.startswith("Nothing found")  # remembered: no superseded versions
        mem.record("fact", "Editor: Neovim", key="editor")
        note = mem.ask("vim").note
        assert "earlier version of a corrected memory" in note, note


class _RacedCache(dict[str, int]):
    """A cache whose oldest entry another thread pops between this thread's look and its pop."""

    def __iter__(self) -> Iterator[str]:
        oldest = next(super().__iter__())
        super().pop(oldest)
        return iter([oldest])


def test_a_cache_evicted_by_two_threads_at_once_does_not_raise() -> None:
    """The text index's per-process caches are shared by a database's threads without a lock: two
    recalls making room at once popped the same oldest key, and one raised KeyError (revL: 8
    threads, 300 owners). Making room tolerates the other thread having been first."""
    from memdb.memory.postings import _make_room

    cache = _RacedCache(a=1, b=2)
    _make_room(cache, "c", 2)
    assert "a" not in cache and len(cache) <= 2
    _make_room(cache, "b", 2)  # a key held is never room to make
    assert "b" in cache
