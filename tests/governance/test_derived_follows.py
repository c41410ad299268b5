"""What governance derives follows what happens to its sources, on both backends: a pattern is
stated again when a record it counted is corrected, a restored lesson does not bring back a
share a teammate's copy took since, and an erasure leaves no id of what it took in a closed
session's mark."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.errors import DuplicateError
from memdb.governance.knowledge import restore_note
from memdb.memory.layout import GLOBALS

pytestmark = pytest.mark.usefixtures("backend")

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
MIN = dt.timedelta(minutes=1)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def fdb(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "f", clock=clock)
    yield db
    db.close()


def backups(mem: memdb.Memory, outcomes: list[str], tags: list[list[str]] | None = None) -> list[str]:
    """Routine records of verifying backups, one a minute (five complete a batch)."""
    return [
        mem.record("routine", f"verified the nightly backup {i}", outcome=o, tags=(tags[i] if tags else ["backups"]),
                   ts=T0 - dt.timedelta(days=1) + i * MIN).id
        for i, o in enumerate(outcomes)
    ]  # fmt: skip


# --- finding: a pattern kept counting and citing the version a correction replaced ----------------


def test_a_pattern_is_stated_again_when_a_record_it_counted_is_corrected(fdb: memdb.Database, clock: Clock) -> None:
    """A pattern "In 5 of the last 5 ... 5 success" stayed so after one of the five was corrected to a
    failure, citing (and the Patterns page linking) the version the owner said was wrong, and
    ``prepare`` handed it on. It is stated again in the correction's transaction from the batch
    as corrected: counts, text and cites of the current versions; its id and history stay."""
    mem = fdb.owner("ana")
    ids = backups(mem, ["success"] * 5)
    (before,) = mem.patterns()
    assert before.text.startswith("In 5 of the last 5 routine records tagged backups: 5 success.")
    clock.advance(days=1)
    fixed = mem.supersede(ids[2], reason="the restore test had actually failed", outcome="failure")
    (after,) = mem.patterns()
    assert after.text.startswith("In 5 of the last 5 routine records tagged backups: 4 success, 1 failure.")
    assert after.outcomes == {"success": 4, "failure": 1}
    assert set(after.cites) == {*ids[:2], fixed.id, *ids[3:]} and ids[2] not in after.cites
    assert (after.id, after.created, after.seen, after.batch) == (before.id, before.created, before.seen, before.batch)
    (prepared,) = mem.prepare("routine backups verification").patterns
    assert prepared == after and "4 success, 1 failure" in mem.prepare("routine backups verification").text
    again = mem.supersede(fixed.id, reason="it did pass on a second look", outcome="success")  # a chain: its current version
    (last,) = mem.patterns()
    assert last.outcomes == {"success": 5} and again.id in last.cites and fixed.id not in last.cites


class Reads:
    """A global whose reads are counted, a node each ``get`` and each node ``items`` walks (a
    global's own slots take no patch)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.reads = inner, 0

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.reads += 1
        return self.inner.get(*args, **kwargs)

    def items(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for node in self.inner.items(*args, **kwargs):
            self.reads += 1
            yield node

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_correction_reads_only_the_batches_that_counted_it(fdb: memdb.Database, clock: Clock) -> None:
    """A review's find: every correction of a typed record read every pattern of its kind and a
    batch for each, under the write lock (195 ms a supersede on PostgreSQL at 200 patterns). It
    reads the batches counting a version of it (``^PATI``) and their patterns, whatever the library holds."""
    mem = fdb.owner("ana")
    ids = [
        mem.record(
            "routine", f"verified backup {b}-{i}", outcome="success", tags=[f"area{b}"], ts=T0 - dt.timedelta(days=1) + (5 * b + i) * MIN
        ).id
        for b in range(12)
        for i in range(5)
    ]
    assert len(mem.patterns()) == 12
    patterns, batches = Reads(fdb.patterns.patterns), Reads(fdb.patterns.batches)
    fdb.patterns.patterns, fdb.patterns.batches = patterns, batches
    clock.advance(days=1)
    fixed = mem.supersede(ids[7], reason="the restore test had failed", outcome="failure")
    assert batches.reads == 1 and patterns.reads <= 3  # batch 2 and its pattern (restated: read again to fold)
    (area1,) = [p for p in mem.patterns() if p.tags == ("area1",)]
    assert area1.outcomes == {"success": 4, "failure": 1} and fixed.id in area1.cites
    batches.reads = patterns.reads = 0
    mem.supersede(fixed.id, reason="it passed on a second look", outcome="success")  # the batch holds the first version
    assert batches.reads == 1
    (area1,) = [p for p in mem.patterns() if p.tags == ("area1",)]
    assert area1.outcomes == {"success": 5}


def test_the_index_of_counted_records_is_built_for_batches_an_older_memdb_wrote(tmp_path: Path, clock: Clock) -> None:
    """Batches written before ``^PATI`` are indexed once (``^PATN(1)``), by the first write that
    needs it: a correction then restates their patterns as it does for new ones."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        ids = backups(db.owner("ana"), ["success"] * 5)
        db.globals["PATI"].kill(("ana",))  # as a memdb before the index wrote it
        db.globals["PATN"].kill((1,))
    with memdb.open(tmp_path / "old", clock=clock) as db:
        clock.advance(days=1)
        db.owner("ana").supersede(ids[2], reason="the restore test had actually failed", outcome="failure")
        (after,) = db.owner("ana").patterns()
        assert after.outcomes == {"success": 4, "failure": 1}
        assert db.globals["PATN"].get((1,)) is True and db.check().ok


def test_the_index_mark_an_older_memdb_timed_holds_no_time_once_reopened(tmp_path: Path, clock: Clock) -> None:
    """``^PATN(1)`` held the time the index was built, which is a record's capture time (the
    fifth typed one's, which needed it): no erasure took it, the owner's included
    (tests/lifecycle/test_owner_erasure.py::test_an_owner_erasure_leaves_no_time_of_the_owner).
    A database an older memdb wrote keeps the flag instead, from its next open on."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        backups(db.owner("ana"), ["success"] * 5)
        db.globals["PATN"].set((1,), clock.now)  # as a memdb before this one wrote it
    clock.advance(days=1)
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.globals["PATN"].get((1,)) is True
        db.erase_owner("ana", reason="account deleted")
        assert list(db.globals["PATN"].items(())) == [((1,), True)] and db.check().ok


def test_a_pattern_a_correction_undoes_is_replaced_by_what_the_batch_says_now(fdb: memdb.Database) -> None:
    """A correction that takes the tag three records shared: "tagged backups" no longer holds;
    the batch as corrected says what it says now (here: its majority outcome), nothing more."""
    mem = fdb.owner("ana")
    ids = backups(mem, ["success"] * 5, tags=[["backups"], ["backups"], ["backups"], ["restore"], ["restore"]])
    (tagged,) = mem.patterns()
    assert tagged.tags == ("backups",)
    mem.supersede(ids[0], reason="it was a restore drill, not a backup check", tags=["restore"])
    (now,) = mem.patterns()
    assert now.tags == ("restore",) and now.text.startswith("In 3 of the last 5 routine records tagged restore: 3 success.")
    assert tagged.id not in {p.id for p in mem.patterns()}


def test_an_erased_record_drops_out_of_a_pattern_stated_again(fdb: memdb.Database) -> None:
    """A record of the batch erased (one the pattern does not cite, so the pattern stays) is no
    longer counted when a correction states the pattern again, and no id of it is left there."""
    mem = fdb.owner("ana")
    ids = backups(mem, ["success"] * 5, tags=[["backups"]] * 4 + [["misc"]])
    (pattern,) = mem.patterns()
    assert pattern.text.startswith("In 4 of the last 5 ")
    mem.erase([ids[4]], reason="recorded by mistake")
    assert [p.id for p in mem.patterns()] == [pattern.id]  # not cited: the pattern stays
    fixed = mem.supersede(ids[0], reason="it failed", outcome="failure")
    (after,) = mem.patterns()
    assert after.text.startswith("In 4 of the last 4 routine records tagged backups: 3 success, 1 failure.")
    assert ids[4] not in after.cites and fixed.id in after.cites


def test_maintain_states_again_the_patterns_corrections_left_stale(fdb: memdb.Database) -> None:
    """Patterns a correction left as they were (before patterns followed corrections) are stated
    again by the next maintain, once: later runs do not read the library again."""
    mem = fdb.owner("ana")
    ids = backups(mem, ["success"] * 5)
    hooks = fdb.episodes.supersede_hooks
    follow = next(h for h in hooks if getattr(h, "__self__", None) is fdb.patterns)
    hooks.remove(follow)  # as an older memdb corrected it
    fixed = mem.supersede(ids[1], reason="it failed", outcome="failure")
    hooks.append(follow)
    (stale,) = mem.patterns()
    assert stale.outcomes == {"success": 5} and ids[1] in stale.cites
    fdb.maintain()
    (healed,) = mem.patterns()
    assert healed.id == stale.id and healed.outcomes == {"success": 4, "failure": 1} and fixed.id in healed.cites
    assert fdb.patterns.follow_corrections() == 0  # done once: marked


# --- finding: restoring a quarantined lesson brought its shares back beside a teammate's copy -------


def test_a_restored_lesson_does_not_come_back_beside_a_teammate_s_copy(fdb: memdb.Database) -> None:
    """A copy quarantined is read by no one, so a teammate may share a near copy meanwhile;
    restoring the first brought its share back without the shared-copy check, and the team
    read the lesson twice. The share with such a team is not brought back: the lesson returns
    to its owner's agenda for that team, the result and the audit record naming the team; its
    share with a team that reads no copy comes back."""
    fdb.configure(teams={"platform": ["ana", "bo", "cy"], "data": ["ana", "dee"]})
    a = fdb.owner("ana").save_lesson("Run database migrations before the deploy window opens")
    b = fdb.owner("bo").save_lesson("Run the database migrations before the deploy window opens")
    fdb.approve([a.id, b.id], by="lead")
    fdb.decide({a.id: "share"}, by="ana")  # with each of her teams: platform and data
    fdb.quarantine(a.id, by="lead", reason="wrong for the new pipeline")
    fdb.decide({b.id: "share"}, by="bo", team="platform")
    restored = fdb.restore_entry(a.id, by="lead")
    assert (restored.status, restored.visibility, restored.shared_with, restored.unshared) == ("active", "shared", ("data",), ("platform",))
    assert [e.owner for e in fdb.owner("cy").knowledge()] == ["bo"]  # the team reads one copy
    assert [e.id for e in fdb.owner("dee").knowledge()] == [a.id]  # no copy in data: shared again
    (item,) = [i for i in fdb.ceremony("platform").items if i.entry.id == a.id]
    assert not item.carried_over and "not shared again with 'platform' when restored" in str(fdb.latest_agenda("platform"))
    (audited,) = [r for r in fdb.audit("ana") if r["action"] == "restore_entry"]
    assert audited["unshared"] == ["platform"]
    with pytest.raises(DuplicateError, match=f"repeats entry '{b.id}' of 'bo'"):
        fdb.decide({a.id: "share"}, by="ana", team="platform")
    (kept,) = fdb.decide({a.id: "private"}, by="ana")  # its owner rules again: the note has done its work
    assert kept.unshared == () and kept.shared_with == ()


def test_a_restored_lesson_shared_with_all_stays_with_the_teams_without_a_copy(fdb: memdb.Database, clock: Clock) -> None:
    """A review's find: a lesson shared with ``all`` (teams configured since) reaches every team;
    restored while one team reads another owner's near copy, it lost its share with every team,
    and the note said the same of a team that reads no copy. Its ``all`` share becomes shares with
    the teams without a copy: their members keep it, and only the team with the copy is named."""
    bo = fdb.owner("bo").save_lesson("Run the database migrations before the deploy window")
    ana = fdb.owner("ana").save_lesson("Run database migrations before the deploy window")
    fdb.approve([bo.id, ana.id], by="lead")
    fdb.decide({ana.id: "share"}, by="ana")  # no teams yet: with all
    fdb.configure(teams={"platform": ["ana", "bo", "dan"], "ops": ["ana", "cy"], "web": ["eve"]})
    assert [e.id for e in fdb.owner("cy").knowledge()] == [ana.id]
    fdb.quarantine(ana.id, by="lead", reason="checking")
    fdb.decide({bo.id: "share"}, by="bo", team="platform")
    clock.advance(days=1)
    restored = fdb.restore_entry(ana.id, by="lead")
    assert (restored.visibility, restored.shared_with, restored.unshared) == ("shared", ("ops", "web"), ("platform",))
    assert [e.id for e in fdb.owner("cy").knowledge()] == [ana.id]  # ops: no copy there, still read
    assert [e.id for e in fdb.owner("eve").knowledge()] == [ana.id]
    assert [e.owner for e in fdb.owner("dan").knowledge()] == ["bo"]  # platform reads one copy
    assert "not shared again with 'platform'" in restore_note(restored) and "'ops'" not in restore_note(restored)
    assert [i.entry.id for i in fdb.ceremony("platform").items] == [ana.id]
    assert fdb.ceremony("ops").items == []  # it reaches ops: nothing to rule on there
    (audited,) = [r for r in fdb.audit("ana") if r["action"] == "restore_entry"]
    assert (audited["unshared"], audited["shared_instead_of_all"]) == (["platform"], ["ops", "web"])
    assert fdb.check().ok


def test_an_erased_entry_names_no_episode_it_cited(fdb: memdb.Database) -> None:
    """A lesson erased because it cited an erased episode kept its ``cites`` in ``^KN``: the
    erased id, a time of erased data outside the audit trail. No global but ``AUDIT`` names it."""
    mem = fdb.owner("ana")
    gone = mem.record("debug", "The deploy of the payroll service failed", outcome="failure", lesson="check the VPN first")
    kept = mem.record("debug", "The second deploy went through", outcome="success")
    lesson = mem.save_lesson("Check the VPN before deploying payroll", cites=[gone.id, kept.id])
    fdb.approve(lesson.id, by="lead")
    report = mem.erase([gone.id], reason="the user asked")
    assert report.entries == [lesson.id] and fdb.entry(lesson.id).cites == ()
    naming = [name for name in GLOBALS if name != "AUDIT" and gone.id in repr(list(fdb.globals[name].items()))]
    assert naming == []


def test_a_restored_lesson_shared_with_everyone_stays_private_where_a_copy_is_read(tmp_path: Path, clock: Clock) -> None:
    """Without teams, a share is with ``all``: a copy shared there since keeps the restored
    lesson private, back on its owner's agenda."""
    with memdb.open(tmp_path / "all", clock=clock) as db:
        a = db.owner("ana").save_lesson("Rotate the signing keys before the quarterly audit")
        b = db.owner("bo").save_lesson("Rotate the signing keys before each quarterly audit")
        db.approve([a.id, b.id], by="lead")
        db.decide({a.id: "share"}, by="ana")
        db.quarantine(a.id, by="lead", reason="superseded by the new key policy")
        db.decide({b.id: "share"}, by="bo")
        restored = db.restore_entry(a.id, by="lead")
        assert (restored.visibility, restored.shared_with, restored.unshared, restored.ceremony) == ("private", (), ("all",), None)
        assert [e.owner for e in db.owner("cy").knowledge()] == ["bo"]
        assert a.id in {i.entry.id for i in db.ceremony().items}


# --- finding: a closed session's mark kept the ids of what an erasure took ----------------------


def session(mem: memdb.Memory, clock: Clock, name: str = "s1") -> list[str]:
    """A gateway session: a question, a failing deploy call, a check; the captured ids in order."""
    asked = mem.record_exchange(name, "Why does the deploy fail?", "Looking at it.")
    clock.advance(minutes=1)
    call = mem.record_tool_call(name, "deploy_api", {"env": "prod"})
    mem.record_tool_result(call.id, {"error": "migration lock timeout"})
    clock.advance(minutes=1)
    check = mem.record_tool_call(name, "deploy_api", {"env": "prod"})
    mem.record_tool_result(check.id, {"deployed": True})
    clock.advance(minutes=1)
    return [asked.id, call.id, check.id]


def dist(db: memdb.Database, owner: str = "ana") -> str:
    """Every node of the owner's session marks, as text (either backend)."""
    return repr(list(db.globals["DIST"].items((owner,))))


def test_an_erasure_leaves_no_id_of_what_it_took_in_a_closed_session_s_mark(fdb: memdb.Database, clock: Clock) -> None:
    """Erasing a session's first event takes the episode distilled from it; the session has
    other events, so its mark stays (closed stays closed), and it kept the ids of the erased
    episode and event, times of erased data. It names neither now: its cited range is the
    events left, and a close again says the episode was erased, with no id of it."""
    mem = fdb.owner("ana")
    ids = session(mem, clock)
    done = mem.close_session("s1", kind="debug", outcome="success")
    assert done.episode is not None and done.episode.id in dist(fdb) and ids[0] in dist(fdb)
    report = mem.erase([ids[0]], reason="the user asked to forget that message")
    assert set(report.ids) == {ids[0], done.episode.id}
    left = dist(fdb)
    assert done.episode.id not in left and ids[0] not in left and ids[1] in left  # the range starts at the first left
    again = mem.close_session("s1", kind="debug", outcome="success")  # closed stays closed: nothing re-derived
    assert again.status == "already_closed" and again.episode is None and "erased since" in again.reason
    assert done.episode.id not in again.reason
    clock.advance(hours=3)
    assert fdb.close_idle_sessions().closed == [] and mem.count() == 2  # the idle rule does not reopen it
    assert done.episode.id not in dist(fdb) and fdb.check().ok
    clock.advance(minutes=1)
    late = mem.record_exchange("s1", "Is it deployed now?", "Yes.")  # the session goes on: closed again, anew
    closed = mem.close_session("s1", kind="debug", outcome="success")
    assert closed.status == "closed" and closed.episode is not None and late.id in closed.episode.cites
    assert closed.episode.id in dist(fdb)


def test_erasing_a_close_s_last_event_keeps_later_news_as_news(fdb: memdb.Database, clock: Clock) -> None:
    """The last cited event erased with the episode: the mark's range ends at the last event
    left, so an event captured after the close is still news, and the ones it read are not."""
    mem = fdb.owner("ana")
    ids = session(mem, clock)
    done = mem.close_session("s1", kind="debug", outcome="success")
    assert done.episode is not None
    mem.erase([ids[2]], reason="held a customer's host name")
    assert ids[2] not in dist(fdb) and done.episode.id not in dist(fdb)
    assert mem.close_session("s1", kind="debug", outcome="success").status == "already_closed"
    clock.advance(minutes=1)
    mem.record_exchange("s1", "And the rollback?", "Not needed.")
    assert mem.close_session("s1", kind="debug", outcome="success").status == "closed"


# --- finding: pattern batches and waiting records kept the ids of erased records ----------------


def test_an_erasure_reads_the_marks_of_its_sessions_only(fdb: memdb.Database, clock: Clock) -> None:
    """A review's find: every erasure walked all of the owner's closed-session marks, in its write
    transaction, to find the few naming an erased id (28 ms an erasure at 2,000 sessions). It
    reads the marks of the erased records' sessions (their headers say which, before they go)."""
    mem = fdb.owner("ana")
    sessions = {name: session(mem, clock, name) for name in ("s1", "s2", "s3")}
    for name in sessions:
        mem.close_session(name, kind="debug", outcome="success")
    late = mem.record_exchange("s2", "Is it deployed now?", "Yes.")  # s2 went on after its close
    note = mem.record("debug", "a note of no session", outcome="failure")
    marks = Reads(fdb.sessions.marks)
    fdb.sessions.marks = marks
    mem.erase([note.id], reason="the user asked")
    assert marks.reads == 0
    mem.erase([late.id], reason="the user asked")  # no news of s2 any more
    assert marks.reads <= 3 and late.id not in dist(fdb)
    marks.reads = 0
    report = mem.erase([sessions["s3"][0]], reason="the user asked")  # with the episode distilled from it
    assert len(report.ids) == 2 and not any(i in dist(fdb) for i in report.ids)
    assert marks.reads <= 6  # s3's marks (and its continued ones), not s1's nor s2's
    assert fdb.check().ok


def counting(db: memdb.Database, owner: str = "ana") -> str:
    """Every node of the owner's pattern counting and library, as text (either backend)."""
    return repr([list(db.globals[name].items((owner,))) for name in ("PATQ", "PATB", "PATP", "PATI", "PAT", "PATK")])


def test_an_erasure_leaves_no_id_of_what_it_took_in_the_pattern_counting(fdb: memdb.Database, clock: Clock) -> None:
    """Erasure took the patterns citing an erased record, but the batch that counted it
    (``^PATB``) and the records waiting for the next batch (``^PATQ``) kept its id, a time of
    erased data. The batch drops it (with the pattern that went, and its completion time when the
    erased record completed it), a waiting record leaves the queue, and a batch left with no
    record goes; counting goes on with the records left."""
    mem = fdb.owner("ana")
    ids = backups(mem, ["success"] * 7)  # a batch of five with its pattern, two waiting
    (pattern,) = mem.patterns()
    assert ids[4] in counting(fdb) and ids[6] in counting(fdb)
    report = mem.erase([ids[4], ids[6]], reason="recorded on the wrong system")
    assert set(report.ids) == {ids[4], ids[6]}
    after = counting(fdb)
    assert ids[4] not in after and ids[6] not in after and pattern.id not in after
    (batch,) = fdb.patterns.batch_status("ana", "routine")
    assert batch["ids"] == ids[:4] and batch["patterns"] == [] and "at" not in batch
    assert [v for _, v in fdb.globals["PATQ"].items(("ana",))] == [ids[5]]
    more = backups(mem, ["failure"] * 4)  # the waiting one and four more complete the next batch
    assert fdb.patterns.batch_status("ana", "routine")[-1]["ids"] == [ids[5], *more]
    mem.erase(ids[:4], reason="the whole week was a test system")
    assert [b["batch"] for b in fdb.patterns.batch_status("ana", "routine")] == [2]  # left with no record: gone
    assert not any(i in counting(fdb) for i in ids[:5])
    assert fdb.check().ok


def test_a_cut_version_is_counted_as_the_version_kept(fdb: memdb.Database) -> None:
    """Cutting a record's earlier versions (erase_versions) left the batch counting the cut id,
    which reads as erased: the batch lost the record. It counts the version kept."""
    mem = fdb.owner("ana")
    ids = backups(mem, ["success"] * 3)
    fixed = mem.supersede(ids[1], reason="it failed", outcome="failure")
    mem.erase_versions(ids[1], reason="the wrong value is not to be kept")
    assert ids[1] not in counting(fdb)
    assert [v for _, v in fdb.globals["PATQ"].items(("ana",))] == [ids[0], fixed.id, ids[2]]
    backups(mem, ["success"] * 2)
    assert any("1 failure" in p.text for p in mem.patterns())


@pytest.mark.lmdb_only(reason="reads the LMDB data file's bytes after compact()")
def test_an_erased_record_s_id_leaves_the_pattern_counting_on_disk(tmp_path: Path, clock: Clock) -> None:
    """After compact(), the only bytes left of an erased record's id are the audit trail's (its
    erase record lists it by design): none are in the pattern globals' pages."""
    path = tmp_path / "disk"
    with memdb.open(path, clock=clock) as db:
        mem = db.owner("ana")
        ids = backups(mem, ["success"] * 7)
        mem.erase([ids[4], ids[6]], reason="recorded on the wrong system")
        db.compact()
        nodes = {name: repr(list(db.globals[name].items())) for name in db.globals.names()}
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    for eid in (ids[4], ids[6]):
        assert [name for name, text in nodes.items() if eid in text] == ["AUDIT"]
        assert raw.count(eid.encode()) == nodes["AUDIT"].count(eid)  # no copy left in a free page either
