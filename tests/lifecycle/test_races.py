"""Races between ``maintain``/``restore`` in one process and a change made by another.

Each test opens the database twice (A runs the lifecycle, B is the other machine) and lets B
make its change at the exact moment A is between reading and writing: inside A's summarizer
call or A's ``cold.pack`` (both run outside any transaction, and with a model the summarizer
takes seconds). Whatever the interleaving, nothing raises a bare KeyError, ``check()`` stays
clean and a version superseded stays superseded.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.errors import NotFoundError, ValidationError
from memdb.lifecycle.summarize import ExtractiveSummarizer
from memdb.memory.episodes import OwnerEpisodes
from memdb.memory.models import Episode

T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)


class RacingSummarizer(ExtractiveSummarizer):
    """The extractive summarizer, with another process's change landing during its first call."""

    def __init__(self) -> None:
        self.meanwhile: Callable[[], object] | None = None

    def summarize(self, episodes: Sequence[Episode], max_lines: int = 3) -> str:
        change, self.meanwhile = self.meanwhile, None
        if change is not None:
            change()
        return super().summarize(episodes, max_lines=max_lines)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def summarizer() -> RacingSummarizer:
    return RacingSummarizer()


@pytest.fixture
def pair(tmp_path: Path, clock: Clock, summarizer: RacingSummarizer) -> Iterator[tuple[memdb.Database, memdb.Database]]:
    """(A, B): two handles on one database; A runs maintain with the racing summarizer."""
    b = memdb.open(tmp_path / "db", clock=clock)
    a = memdb.open(tmp_path / "db", clock=clock, summarizer=summarizer)
    yield a, b
    a.close()
    b.close()


def burst(db: memdb.Database, clock: Clock, n: int = 8) -> list[str]:
    """``n`` exchanges of one session, ten minutes apart: a burst once its day is over."""
    ids = []
    for i in range(n):
        clock.now = T0 + dt.timedelta(minutes=10 * i)
        ids.append(db.owner("ana").record_exchange("s1", f"message {i} about the invoice", "ok").id)
    clock.now = T0 + dt.timedelta(days=2)
    return ids


def while_packing(a: memdb.Database, change: Callable[[], object]) -> None:
    """Run ``change`` (another process's) as A's next ``cold.pack`` outside a transaction
    returns: the window between archiving's read and its write."""
    cold = a.lifecycle.cold
    pack = cold.pack

    def racing_pack(owner: str, record: dict[str, Any], digest: str) -> dict[str, Any]:
        packed = pack(owner, record, digest)
        if not a.episodes.space.in_transaction:
            cold.pack = pack  # type: ignore[method-assign]
            change()
        return packed

    cold.pack = racing_pack  # type: ignore[method-assign]


def summaries(db: memdb.Database) -> list[dict[str, Any]]:
    return [e for e in db.owner("ana").export(complete=True) if e.get("type") == "episode" and e["kind"] == "summary"]


# --- burst summaries ---------------------------------------------------------------------------


def test_a_source_erased_while_summarizing_leaves_the_window_for_the_next_run(
    pair: tuple[memdb.Database, memdb.Database], clock: Clock, summarizer: RacingSummarizer
) -> None:
    a, b = pair
    ids = burst(b, clock)
    summarizer.meanwhile = lambda: b.owner("ana").erase([ids[3]], reason="user asked")
    report = a.maintain()  # raised a bare KeyError out of Episodes.set_status: the whole run lost
    assert report.summaries == 0 and report.changed_meanwhile == 1
    assert "1 changed by another process meanwhile" in str(report)
    assert a.check().problems == []
    again = a.maintain()  # the next run sees the window as it is: seven events, still a burst
    assert again.summaries == 1 and again.summarized_sources == 7
    (summary,) = summaries(a)
    assert ids[3] not in summary["cites"] and set(summary["cites"]) == set(ids) - {ids[3]}
    assert a.check().problems == []


def test_a_source_superseded_while_summarizing_stays_superseded(
    pair: tuple[memdb.Database, memdb.Database], clock: Clock, summarizer: RacingSummarizer
) -> None:
    a, b = pair
    ids = burst(b, clock)
    new: list[str] = []
    summarizer.meanwhile = lambda: new.append(b.owner("ana").supersede(ids[3], reason="fix", summary="message 3 CORRECTED").id)
    report = a.maintain()  # turned the superseded version "summarized", back in the indexes piecemeal: 14 problems
    assert report.summaries == 0 and report.changed_meanwhile == 1
    assert a.check().problems == []
    assert a.owner("ana").peek(ids[3]).status == "superseded"
    assert a.maintain().summaries == 1
    (summary,) = summaries(a)
    assert ids[3] not in summary["cites"] and new[0] in summary["cites"]
    assert a.owner("ana").peek(ids[3]).status == "superseded"
    assert a.check().problems == []


def test_a_source_summarized_by_another_run_meanwhile_is_not_summarized_twice(
    pair: tuple[memdb.Database, memdb.Database], clock: Clock, summarizer: RacingSummarizer
) -> None:
    a, b = pair
    burst(b, clock)
    summarizer.meanwhile = b.maintain  # another process's nightly run got there first
    a.maintain()
    assert len(summaries(a)) == 1
    assert a.check().problems == []


# --- archiving ---------------------------------------------------------------------------------


def _due(b: memdb.Database, clock: Clock) -> Episode:
    """A routine episode that is due for archiving at the clock's (new) time."""
    episode = b.owner("ana").record("routine", "nightly job original text", outcome="success", tags=["cron"])
    clock.now = T0 + dt.timedelta(days=90)
    return episode


def test_an_episode_superseded_while_archiving_stays_superseded(pair: tuple[memdb.Database, memdb.Database], clock: Clock) -> None:
    a, b = pair
    old = _due(b, clock)
    new: list[str] = []
    while_packing(a, lambda: new.append(b.owner("ana").supersede(old.id, reason="fix", summary="nightly job CORRECTED text").id))
    report = a.maintain()  # archived the superseded version: 7 problems, export(complete=True) raised
    assert report.archived == 0 and report.changed_meanwhile == 1
    assert a.check().problems == []
    mem = a.owner("ana")
    assert [v.status for v in mem.versions(new[0])] == ["superseded", "active"]
    assert {old.id, new[0]} <= {e.get("id") for e in mem.export(complete=True)}  # reads every cold record
    with pytest.raises(NotFoundError):
        mem.restore(old.id)
    assert a.check().problems == []


def test_archive_of_an_episode_superseded_meanwhile_is_refused(pair: tuple[memdb.Database, memdb.Database], clock: Clock) -> None:
    a, b = pair
    old = _due(b, clock)
    new: list[str] = []
    while_packing(a, lambda: new.append(b.owner("ana").supersede(old.id, reason="fix", summary="nightly job CORRECTED text").id))
    with pytest.raises(ValidationError, match=f"superseded by {new[0] if new else ''}"):
        a.owner("ana").archive(old.id)
    assert a.owner("ana").peek(old.id).status == "superseded"
    assert a.check().problems == []


def test_an_episode_restored_while_archiving_is_not_archived_again(pair: tuple[memdb.Database, memdb.Database], clock: Clock) -> None:
    a, b = pair
    episode = _due(b, clock)

    def archived_and_restored() -> None:  # another process brought it back: an access, so it is not due now
        b.owner("ana").archive(episode.id)
        b.owner("ana").restore(episode.id)

    while_packing(a, archived_and_restored)
    report = a.maintain()
    assert report.archived == 0 and report.changed_meanwhile == 1
    assert a.owner("ana").peek(episode.id).status == "active"
    assert a.check().problems == []


def test_an_episode_corrected_in_place_while_archiving_is_left_for_the_next_run(
    pair: tuple[memdb.Database, memdb.Database], clock: Clock
) -> None:
    a, b = pair
    call = b.owner("ana").record_tool_call("s1", "search", {"q": "invoice"})
    clock.now = T0 + dt.timedelta(days=90)
    while_packing(a, lambda: b.owner("ana").record_tool_result(call.id, {"hits": 3}))  # the result came meanwhile
    report = a.maintain()
    assert report.archived == 0 and report.changed_meanwhile == 1
    assert a.maintain().archived == 1  # the next run archives it whole, with its result
    (archived,) = a.lifecycle.read_archived("ana", [call.id])
    assert archived.result is not None and "3" in archived.result
    assert a.check().problems == []


def test_an_erasure_dropping_the_dictionary_while_archiving_leaves_no_undecodable_record(
    pair: tuple[memdb.Database, memdb.Database], clock: Clock
) -> None:
    a, b = pair
    items = [
        {"kind": "routine", "summary": f"nightly job {i} copied the ledger", "outcome": "success", "tags": ["cron"],
         "ts": T0 - dt.timedelta(days=1, minutes=i)}
        for i in range(210)
    ]  # fmt: skip
    report = b.owner("ana").import_episodes(items, source="test")  # enough records for a trained dictionary
    clock.now = T0 + dt.timedelta(days=90)
    # erasing any episode drops the owner's dictionaries (ColdCodec.retrain): here, the one the first
    # archived record was just packed with
    while_packing(a, lambda: b.owner("ana").erase([report.ids[0]], reason="user asked"))  # not the one packed
    first = a.maintain()
    # the record packed with the dropped dictionary did not change: it is packed again, not said
    # changed by another process (the first batched version left it, and revC: its whole batch)
    assert first.changed_meanwhile == 0 and first.archived == 209
    assert a.maintain().archived == 0
    archived = [e for e in a.owner("ana").export(complete=True) if e.get("type") == "episode"]  # decodes every cold record
    assert len(archived) == 209 and {e["status"] for e in archived} == {"archived"}
    assert a.check().problems == []


@pytest.mark.parametrize("change", ["read", "corrected", "erased"])
def test_one_episode_changed_while_archiving_a_batch_is_left_alone(
    pair: tuple[memdb.Database, memdb.Database], clock: Clock, change: str
) -> None:
    """Twelve due episodes are archived in one write: another process reads, corrects or erases
    the sixth after A read the batch and before A writes it; only that one is left."""
    a, b = pair
    items = [
        {"kind": "routine", "summary": f"nightly job {i} copied the ledger", "outcome": "success", "tags": ["cron"],
         "ts": T0 - dt.timedelta(days=1 + i)}  # one a day: no burst
        for i in range(12)
    ]  # fmt: skip
    ids = b.owner("ana").import_episodes(items, source="test").ids
    clock.now = T0 + dt.timedelta(days=90)
    target = ids[5]

    def meanwhile() -> None:
        mem = b.owner("ana")
        if change == "read":  # an access: no longer idle, so not due
            mem.get(target)
            b.flush()
        elif change == "corrected":
            mem.supersede(target, reason="fix", summary="nightly job CORRECTED")
        else:
            mem.erase([target], reason="user asked")

    while_packing(a, meanwhile)
    report = a.maintain()
    assert report.archived == 11 and report.changed_meanwhile == (0 if change == "erased" else 1)  # an erased one is simply gone
    archives = [r["episode"] for r in a.owner("ana").audit() if r["action"] == "archive"]
    assert sorted(archives) == sorted(i for i in ids if i != target)
    header = a.episodes.header("ana", target)
    assert (header and header["status"]) == {"read": "active", "corrected": "superseded", "erased": None}[change]
    assert a.check().problems == []
    assert a.maintain().archived == 0  # read or corrected now: not idle
    assert a.check().problems == []


def test_a_batch_packed_before_an_erasure_dropped_its_dictionary_is_archived_whole(
    pair: tuple[memdb.Database, memdb.Database], clock: Clock
) -> None:
    """Another process's erasure drops the dictionary after A packed its whole batch: every blob
    of the batch is undecodable, yet no episode changed; they are packed again and archived, and
    the report says nothing changed meanwhile (it said all 60 had)."""
    a, b = pair
    items = [
        {"kind": "routine", "summary": f"job {i} copied the ledger {i * 7}", "outcome": "success",
         "tags": ["cron", "urgent"] if i >= 60 else ["cron"], "ts": T0 - dt.timedelta(days=1, minutes=i)}
        for i in range(260)
    ]  # fmt: skip
    ids = b.owner("ana").import_episodes(items, source="test").ids
    clock.now = T0 + dt.timedelta(days=40)
    cold = a.lifecycle.cold
    pack = cold.pack
    packs: list[int] = []

    def racing_pack(owner: str, record: dict[str, Any], digest: str) -> dict[str, Any]:
        packed = pack(owner, record, digest)
        packs.append(1)
        if len(packs) == 60 and not a.episodes.space.in_transaction:  # the batch's last pack
            cold.pack = pack  # type: ignore[method-assign]
            b.owner("ana").erase([ids[-1]], reason="user asked")  # an urgent one, never due
        return packed

    cold.pack = racing_pack  # type: ignore[method-assign]
    report = a.maintain()
    assert (report.archived, report.changed_meanwhile) == (60, 0)
    assert "changed by another process" not in str(report)
    assert len([e for e in a.owner("ana").export(complete=True) if e.get("status") == "archived"]) == 60  # each decodes
    assert a.check().problems == []


def test_an_episode_rated_into_a_band_not_yet_read_is_archived_once(pair: tuple[memdb.Database, memdb.Database], clock: Clock) -> None:
    """A rating is no access, so an episode rated up while A walks the low bands is still due in a
    band the walk has not read: it was collected twice into one batch, which the batch refused,
    and maintain raised, archiving nothing."""
    a, b = pair
    items = [
        {"kind": "routine", "summary": f"job {i} copied the ledger", "outcome": "success", "tags": ["cron"],
         "ts": T0 - dt.timedelta(days=1 + i)}
        for i in range(10)
    ]  # fmt: skip
    ids = b.owner("ana").import_episodes(items, source="test").ids
    clock.now = T0 + dt.timedelta(days=40)
    for eid in ids:
        b.owner("ana").feedback(eid, -1.0)  # band 1
    header, archive_due = a.episodes.header, a.lifecycle.archive_due
    rated: list[str] = []
    walking: list[bool] = []

    def walking_header(owner: str, eid: str) -> dict[str, Any] | None:
        if walking and eid == ids[0] and not rated:  # band 1 read, by archiving's walk
            rated.append(eid)
            b.owner("ana").feedback(eid, 1.0)  # band 2, not read yet, still idle
        return header(owner, eid)

    def walked(*args: Any, **kwargs: Any) -> int:
        walking.append(True)
        return archive_due(*args, **kwargs)

    a.episodes.header = walking_header  # type: ignore[method-assign]
    a.lifecycle.archive_due = walked  # type: ignore[method-assign]
    report = a.maintain()
    assert rated and (report.archived, report.changed_meanwhile) == (10, 0)
    assert sorted(r["episode"] for r in a.owner("ana").audit() if r["action"] == "archive") == sorted(ids)
    assert a.check().problems == []


# --- restore -----------------------------------------------------------------------------------


def test_a_cold_record_repacked_while_restoring_comes_back_as_repacked(pair: tuple[memdb.Database, memdb.Database], clock: Clock) -> None:
    a, b = pair
    mem = b.owner("ana")
    v1 = mem.record("routine", "nightly job original text", outcome="success", tags=["cron"])
    v2 = mem.supersede(v1.id, reason="fix", summary="nightly job CORRECTED text")
    mem.archive(v2.id)
    cold = a.lifecycle.cold
    unpack = cold.unpack
    erased: list[str] = []

    def erase_v1() -> None:  # re-packs v2's cold record without the link to v1, or unlinks its hot record
        erased.extend(b.owner("ana").erase_versions(v1.id, reason="user asked").ids)

    def racing_unpack(owner: str, value: dict[str, Any]) -> dict[str, Any]:
        # another process's erasure lands between A's read of the cold record and its write,
        # when A reads it outside its write transaction (B would wait for A's transaction)
        if not a.episodes.space.in_transaction:
            cold.unpack = unpack  # type: ignore[method-assign]
            erase_v1()
        return unpack(owner, value)

    cold.unpack = racing_unpack  # type: ignore[method-assign]
    a.owner("ana").restore(v2.id)  # restored the stale record, still naming the erased version
    if not erased:  # no window: it lands after
        erase_v1()
    kept = a.owner("ana").peek(v2.id)
    assert kept.status == "active" and kept.supersedes is None and v1.id not in kept.cites
    assert a.check().problems == []


# --- cites: what is derived from an episode never cites it erased ----------------------------


def erasing_while_preparing(a: memdb.Database, b: memdb.Database, victim: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """B erases ``victim`` as A's next capture is prepared (sanitized, outside the write), as
    when a distiller's answer is being recorded."""
    prepare = OwnerEpisodes._prepare

    def racing_prepare(self: OwnerEpisodes, *args: Any, **kwargs: Any) -> dict[str, Any]:
        prepared = prepare(self, *args, **kwargs)
        if self._layer is a.episodes and not a.episodes.space.in_transaction:
            monkeypatch.setattr(OwnerEpisodes, "_prepare", prepare)
            b.owner("ana").erase([victim], reason="user asked")
        return prepared

    monkeypatch.setattr(OwnerEpisodes, "_prepare", racing_prepare)


def test_a_cite_erased_while_recording_is_refused(pair: tuple[memdb.Database, memdb.Database], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = pair
    event = b.owner("ana").record_exchange("s1", "the customer's address is on the invoice", "ok")
    erasing_while_preparing(a, b, event.id, monkeypatch)
    # (already refused before the check moved into the write; this pins it there)
    with pytest.raises(ValidationError, match=f"cites {event.id!r}"):
        a.owner("ana").record("debug", "closed the session", outcome="success", session="s1", cites=[event.id])
    assert [e.kind for e in a.owner("ana").episodes()] == []
    assert a.check().problems == []


def test_a_new_cite_erased_while_superseding_is_refused(
    pair: tuple[memdb.Database, memdb.Database], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    mem = b.owner("ana")
    close = mem.record("debug", "closed the session", outcome="success", session="s1")
    event = mem.record_exchange("s1", "the customer's address is on the invoice", "ok")
    erasing_while_preparing(a, b, event.id, monkeypatch)
    with pytest.raises(ValidationError, match=f"cites {event.id!r}"):  # a distilled session continued, citing an erased event
        a.owner("ana").supersede(close.id, reason="the session continued", summary="closed it again", cites=[event.id])
    assert a.owner("ana").peek(close.id).status == "active"
    assert a.check().problems == []


# --- the memory layer's own guard --------------------------------------------------------------


def test_set_status_refuses_what_left_the_hot_indexes(pair: tuple[memdb.Database, memdb.Database], clock: Clock) -> None:
    a, _ = pair
    mem = a.owner("ana")
    old = mem.record("routine", "nightly job original text", outcome="success")
    mem.supersede(old.id, reason="fix", summary="nightly job CORRECTED text")
    gone = mem.record("routine", "another job", outcome="success")
    mem.erase([gone.id], reason="user asked")
    with a.episodes.space.transaction():
        with pytest.raises(ValidationError, match="superseded"):
            a.episodes.set_status("ana", [old.id], "summarized")
        with pytest.raises(NotFoundError, match=gone.id):
            a.episodes.set_status("ana", [gone.id], "summarized")
        with pytest.raises(ValidationError, match="archived"):
            a.episodes.set_status("ana", [], "archived")
    assert a.check().problems == []
