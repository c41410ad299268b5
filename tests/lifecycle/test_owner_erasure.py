"""Erasing an owner itself (``Database.erase_owner``): a person's name can be an owner, and a
request for everything kept it in about twenty nodes (counters, marks, its audit log, pattern
batches, knowledge's entry index, the settings' teams) and in ``db.owners()``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
from memdb.cli import main
from memdb.errors import NotFoundError, ValidationError
from memdb.lifecycle.erase import ERASED_OWNER, NOT_OWNER_KEYED, OWNER_KEYED
from memdb.memory.ids import ts_micros
from memdb.memory.layout import GLOBALS

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)

T0 = dt.datetime(2026, 5, 1, 9, 0, tzinfo=dt.UTC)
NAME = "Zanzibella Quornstrom"
WORDS = ("zorblax", "glimmerquartz", "quibblefrost", "snorkelwidget", "wumpus", "sess-zq-4417")


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock(T0)


def _live(db: memdb.Database, clock: Clock) -> None:
    """An owner named as a person, using every part of memdb: typed records that make pattern
    batches, a burst of exchanges in a session closed into a typed episode, a tool call, a fact,
    lessons saved, approved and shared at a team's ceremony, reflection, archives in cold
    storage with the owner's own dictionary (200+ records), an import; and another owner."""
    db.configure(teams={"core": [NAME, "other"], "solo": [NAME]})
    mem, other = db.owner(NAME), db.owner("other")
    for i in range(210):
        clock.advance(minutes=3)
        mem.record("debug", f"job {i} failed on zorblax", outcome="failure", tags=["ops"], lesson="read the zorblax logs")
    for i in range(7):
        clock.advance(minutes=2)
        mem.record_exchange("sess-zq-4417", f"question {i} about quibblefrost", "an answer")
    call = mem.record_tool_call("sess-zq-4417", "search", {"q": "snorkelwidget"})
    mem.record_tool_result(call.id, {"rows": 3})
    mem.record("fact", "likes tea", key="drink")
    lesson = mem.save_lesson("Always check the glimmerquartz logs first")
    for i in range(6):
        other.record("debug", f"other job {i}", outcome="success", tags=["ops"])
    clock.advance(hours=2)
    mem.close_session("sess-zq-4417", kind="debug", outcome="success")
    db.approve([lesson.id], by="reviewer")
    db.ceremony("core")
    db.decide({lesson.id: "share"}, by=NAME, team="core")
    clock.advance(days=2)
    db.maintain()
    db.reflect()
    clock.advance(days=60)
    db.maintain()  # archives most of them, under the owner's trained dictionary
    mem.import_episodes(
        [{"kind": "debug", "summary": "imported wumpus", "outcome": "success", "ts": clock.now - dt.timedelta(days=3)}], source="old"
    )
    assert db.globals["COLDDICT"].data((NAME,)) and db.globals["COLD"].data((NAME,))


def _naming(db: memdb.Database, *words: str) -> list[str]:
    """Every node of every memdb global whose subscripts or value hold one of ``words``."""
    found = []
    for name in GLOBALS:
        for subs, value in db.globals[name].items(()):
            text = repr(subs) + repr(value)
            if any(w.lower() in text.lower() for w in words):
                found.append(f"^{name}{subs}")
    return found


def test_an_owner_erasure_leaves_no_trace_of_the_owner(tmp_path: Path, clock: Clock, backend: str) -> None:
    path = tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        _live(db, clock)
        kept = {e.id for e in db.owner("other").episodes()}
        db.owner(NAME).erase(everything=True, reason="account deleted")
        assert NAME in db.owners() and _naming(db, NAME)  # what a request for everything keeps: the finding
        report = db.erase_owner(NAME, reason=f"account of {NAME.lower()} deleted")
        assert report.audit_id is not None
        assert db.owners() == ["other"] and {e.id for e in db.owner("other").episodes()} == kept
        assert db.settings.teams == {"core": ["other"], "solo": []}
        assert _naming(db, NAME, *WORDS) == []
        (record,) = db.owner_erasures(NAME)
        assert record["id"] == report.audit_id and record["owner"] is None and record["action"] == "erase_owner"
        assert record["reason"] == f"account of {ERASED_OWNER} deleted" and record["teams"] == ["core", "solo"]
        assert record["hashes"][0].startswith("hmac-sha256:") and db.owner_erasures("other") == []
        configured = [a for a in db.audit() if a["action"] == "configure"]
        assert ERASED_OWNER in json.dumps(configured, default=str) and NAME not in json.dumps(db.audit(), default=str)
        assert db.check().ok
        db.compact()
        with db.store.read() as txn:  # every key and value the store holds, on either backend
            raw = b"".join(bytes(k) + bytes(v) for k, v in txn.scan(b"", b"\xff" * 8))
        assert NAME.encode() not in raw and b"other job" in raw
    if (path / "data.mdb").exists():  # LMDB: the bytes left the files
        disk = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
        assert [w for w in (NAME, *WORDS) if w.encode() in disk] == []


class _Acts:
    """The erased owner's own times: each of its acts moves the clock to a time no one else
    acts at, so a value made from one of them is a trace of the owner."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.times = clock, set[dt.datetime]()

    def __call__(self) -> None:
        self.clock.advance(seconds=7, microseconds=1)  # the others act on whole minutes
        self.times.add(self.clock.now)

    def others(self, **delta: float) -> None:
        """Move on to a time of the others' acts: a whole minute."""
        self.clock.advance(**delta)
        self.clock.now = self.clock.now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)


def _values(value: Any) -> Iterator[Any]:
    """A stored value's scalars: its mappings' keys and values, its sequences' items."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _values(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _values(item)
    else:
        yield value


def _timed(db: memdb.Database, times: set[dt.datetime]) -> list[str]:
    """Every node of every memdb global whose subscripts or value hold one of ``times``: as a
    datetime, microseconds, an ISO text, or an id's time (episodes', entries', audit records')."""
    said = {f for t in times for f in (t.strftime("%Y%m%dT%H%M%S%f"), t.isoformat())}
    micros = {ts_micros(t) for t in times}

    def holds(x: Any) -> bool:
        if isinstance(x, dt.datetime):
            return x in times
        if isinstance(x, int) and not isinstance(x, bool):
            return x in micros
        if isinstance(x, (str, bytes)):
            text = x if isinstance(x, str) else x.decode("latin-1")
            return any(f in text for f in said)
        return False

    return [f"^{name}{subs}" for name in GLOBALS for subs, v in db.globals[name].items(()) if any(map(holds, [*subs, *_values(v)]))]


@pytest.mark.parametrize("others", [False, True], ids=["only-owner", "one-of-two"])
def test_an_owner_erasure_leaves_no_time_of_the_owner(tmp_path: Path, clock: Clock, others: bool) -> None:
    """No node keeps a time of the erased owner's acts, database-wide ones too: ``^PATN(1)`` kept
    when the pattern counting was indexed, the capture time of the owner's fifth typed record."""
    act = _Acts(clock)
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.configure(teams={"core": [NAME, "other"]})
        mem, other = db.owner(NAME), db.owner("other")
        for i in range(12):  # two batches counted, so the counting is indexed at the owner's fifth
            act()
            mem.record("debug", f"job {i} failed", outcome="failure", tags=["ops"], session="sess-1", lesson="read the logs")
        act()
        call = mem.record_tool_call("sess-1", "search", {"q": "x"})
        act()
        mem.record_tool_result(call.id, {"rows": 3})
        act()
        mem.record("fact", "likes tea", key="drink")
        act()
        lesson = mem.save_lesson("Always check the glimmer logs first")
        act.others(hours=2)
        if others:
            for i in range(6):
                other.record("debug", f"other job {i}", outcome="success", tags=["ops"])
            other.save_lesson("Always read the other logs first")
        db.approve([lesson.id], by="reviewer")
        db.ceremony("core")
        act()
        db.decide({lesson.id: "share"}, by=NAME, team="core")
        act()
        mem.close_session("sess-1", kind="debug", outcome="success")
        act.others(days=2)
        db.maintain()
        db.reflect()
        act.others(days=60)
        db.maintain()
        act.others(days=1)
        assert _timed(db, act.times)  # (the scan finds the owner's times while it is there)
        db.erase_owner(NAME, reason="account deleted")
        assert _timed(db, act.times) == []  # ^KNC too: an agenda named the lesson, whose id is the time it was saved
        assert db.check().ok


def test_the_name_can_be_an_owner_again(tmp_path: Path, clock: Clock) -> None:
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner(NAME)
        for i in range(3):
            mem.record("debug", f"deploy {i} failed", outcome="failure", tags=["deploy"])
        mem.recall(text="deploy")  # this process keeps what it read of the owner's index
        db.erase_owner(NAME, reason="account deleted")
        again = db.owner(NAME).record("debug", "a new deploy", outcome="success", tags=["deploy"])
        assert [h.id for h in db.owner(NAME).recall(text="deploy")] == [again.id]
        assert db.owner(NAME).count() == 1 and db.owners() == [NAME] and db.check().ok
        assert len(db.owner_erasures(NAME)) == 1


def test_an_owner_erasure_refuses_what_it_cannot_do_and_writes_nothing(tmp_path: Path, clock: Clock) -> None:
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.owner("ana").record("debug", "x", outcome="success")
        before = db.audit()
        with pytest.raises(NotFoundError, match=r"owner 'nobody': nothing of it in this database \(nothing erased\)"):
            db.erase_owner("nobody", reason="typo")
        with pytest.raises(ValidationError, match="erase_owner reason"):
            db.erase_owner("ana", reason=" ")
        with pytest.raises(ValidationError, match="owner"):
            db.erase_owner("ana@example.com", reason="x")
        assert db.audit() == before and db.owners() == ["ana"] and db.owner_erasures("nobody") == []


def test_an_owner_erasure_is_all_or_nothing(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.configure(teams={"core": [NAME, "other"]})
        ep = db.owner(NAME).record("debug", "x", outcome="success")

        def fails(*_: Any) -> None:
            raise ValidationError("planted")

        monkeypatch.setattr(db.episodes.audit, "forget_member", fails)
        with pytest.raises(ValidationError, match="planted"):
            db.erase_owner(NAME, reason="account deleted")
        assert db.owner(NAME).get(ep.id).summary == "x" and db.owners() == [NAME]
        assert db.settings.teams == {"core": [NAME, "other"]} and db.check().ok


def test_a_failed_owner_erasure_inside_a_transaction_keeps_its_counts(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's repro (revB finding 5): erase_owner failing after its kills, inside a caller's
    transaction that goes on and commits, dropped the counts that transaction had deferred for
    the owner's record: ^EPN and ^EPDF said one document, the records two."""
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mem = db.owner("ana")
        mem.record("debug", "first deploy failed", outcome="failure")

        def fails(*_: Any) -> None:
            raise ValidationError("planted")

        monkeypatch.setattr(db.episodes.audit, "forget_member", fails)
        with db.transaction():
            second = mem.record("debug", "second deploy failed on zorblax", outcome="failure")
            with pytest.raises(ValidationError, match="planted"):
                db.erase_owner("ana", reason="account deleted")
        assert mem.count() == 2 and [h.id for h in mem.recall(text="zorblax")] == [second.id]
        assert db.check().ok, db.check().problems


def test_the_reason_is_sanitized_before_the_name_goes(tmp_path: Path, clock: Clock) -> None:
    """The name was replaced first, so "ana.smith@example.com" became "[erased owner]@example.com",
    which the sanitizer no longer took for an e-mail: its domain was kept."""
    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.owner("ana.smith").record("debug", "x", outcome="success")
        db.erase_owner("ana.smith", reason="GDPR request from ana.smith@example.com, +44 20 7946 0958 (Ana.Smith)")
        (record,) = db.owner_erasures("ana.smith")
        assert record["reason"] == f"GDPR request from <EMAIL_1>, <PHONE_1> ({ERASED_OWNER})"


@pytest.mark.parametrize("own_episodes", [True, False], ids=["owner", "reviewer-only"])
def test_a_reviewers_name_goes_from_what_it_reviewed(tmp_path: Path, clock: Clock, own_episodes: bool) -> None:
    """The name stayed in the entries it decided about as a reviewer (``decided_by``) and their
    audit records (``by``), as the dashboard passes the signed-in owner; and a person who only
    reviewed could not be erased at all ("nothing of it in this database")."""
    path = tmp_path / "db"
    with memdb.open(path, clock=clock) as db:
        if own_episodes:
            db.owner(NAME).record("debug", "mine", outcome="success")
        other = db.owner("other")
        approved, rejected, theirs = (other.save_lesson(t) for t in (
            "Always read the retry budget first", "Never deploy on fridays without a rollback plan", "Pin the build tools",
        ))  # fmt: skip
        db.approve([approved.id], by=NAME)
        db.reject([rejected.id], by=NAME, reason="a duplicate")
        db.approve([theirs.id], by="lead")
        db.quarantine(approved.id, by=NAME, reason="stale")
        db.restore_entry(approved.id, by=NAME)
        db.erase_owner(NAME, reason="left the company")
        decided = {e.id: e.decided_by for e in other.entries()}
        assert decided == {approved.id: ERASED_OWNER, rejected.id: ERASED_OWNER, theirs.id: "lead"}
        by = [(a["action"], a["by"]) for a in other.audit() if a["action"] != "submit"]
        assert by == [("approve", ERASED_OWNER), ("reject", ERASED_OWNER), ("approve", "lead"), *(
            (action, ERASED_OWNER) for action in ("quarantine", "restore_entry"))]  # fmt: skip
        assert _naming(db, NAME) == [] and len(db.owner_erasures(NAME)) == 1 and db.check().ok
        db.compact()
        with db.store.read() as txn:
            raw = b"".join(bytes(k) + bytes(v) for k, v in txn.scan(b"", b"\xff" * 8))
        assert NAME.encode() not in raw and b"lead" in raw


def test_a_reviewer_named_with_a_decomposed_accent_goes_too(tmp_path: Path, clock: Clock) -> None:
    """A final read's find: an owner's name is kept in NFC, a decision's ``by`` as typed, so "José"
    typed decomposed (as some keyboards give it) in both calls was "nothing of it" and stayed."""
    import unicodedata

    name = unicodedata.normalize("NFD", "José")
    with memdb.open(tmp_path / "db", clock=clock) as db:
        other = db.owner("other")
        lesson = other.save_lesson("Always read the retry budget first")
        db.approve([lesson.id], by=name)
        db.erase_owner(name, reason="left the company")
        assert [e.decided_by for e in other.entries()] == [ERASED_OWNER]
        assert [a["by"] for a in other.audit() if a["action"] == "approve"] == [ERASED_OWNER]


def test_an_owner_named_as_a_database_mark_leaves_the_mark(tmp_path: Path, clock: Clock) -> None:
    """^LIFE's database-wide marks share its first level with owners' names."""
    with memdb.open(tmp_path / "db", clock=clock) as db:
        mark = "archived lessons kept"
        assert db.globals["LIFE"].get((mark,)) is True
        db.owner(mark).record("debug", "x", outcome="success")
        db.erase_owner(mark, reason="account deleted")
        assert db.globals["LIFE"].get((mark,)) is True and db.owners() == []


@pytest.mark.lmdb_only(reason="the command on a directory")
def test_the_command_erases_an_owner_after_asking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db"
    with memdb.open(path) as db:
        db.owner(NAME).record("debug", "x", outcome="success")
        db.owner("other").record("debug", "y", outcome="success")
    argv = ["erase", "--all-of-owner", NAME, "--reason", "account deleted", "--db", str(path)]
    monkeypatch.setattr("sys.stdin", _Stdin("n\n"))
    assert main(argv) == 1 and "not confirmed" in capsys.readouterr().err
    assert main([*argv, "--tags", "x", "--yes"]) == 1 and "give no ids or --tags" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", _Stdin("y\n"))
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == 1 and out["audit_id"]
    with memdb.open(path) as db:
        assert db.owners() == ["other"] and len(db.owner_erasures(NAME)) == 1


class _Stdin:
    def __init__(self, text: str) -> None:
        self.text = text

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.text


def test_every_global_is_known_to_the_owner_erasure() -> None:
    """A new global must say whether it is keyed by owner (then an owner's erasure kills its
    subtree) or what the erasure does to it."""
    assert OWNER_KEYED.isdisjoint(NOT_OWNER_KEYED)
    assert OWNER_KEYED | set(NOT_OWNER_KEYED) == set(GLOBALS)
