"""Knowledge: the one review queue, tombstones, the share ceremony, bounded decay, quarantine."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from clocks import Clock

import memdb
from memdb.errors import DuplicateError, NotFoundError, PermissionDeniedError, ValidationError
from memdb.governance.knowledge import content_digest, hashed_shingles, jaccard, shingles

UTC = dt.UTC
T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=UTC)  # a Monday
DAY = dt.timedelta(days=1)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def kdb(tmp_path: Path, clock: Clock) -> Iterator[memdb.Database]:
    db = memdb.open(tmp_path / "k", clock=clock)
    yield db
    db.close()


LESSONS = [
    "Run database migrations before deploying the API",
    "Rotate the Twilio signing secret on every environment at once",
    "Pin the Node version in CI to match production",
    "Warm the cache after a cold start before routing traffic",
    "Check the queue depth before scaling the workers",
    "Keep feature flags out of the build configuration",
    "Ask for the error budget before promising an SLA",
]


def approved(db: memdb.Database, owner: str, text: str) -> memdb.governance.knowledge.Entry:
    entry = db.owner(owner).save_lesson(text)
    (done,) = db.approve(entry.id, by="rev")
    return done


# --- similarity ----------------------------------------------------------------------------------


def test_similarity_folds_case_spacing_and_stopwords() -> None:
    a, b = "Run migrations BEFORE   deploying the API.", "run migrations before deploying api"
    assert content_digest(a) == content_digest(b)
    assert jaccard(shingles(a), shingles("Always run migrations before deploying the API")) >= 0.6
    assert jaccard(shingles(a), shingles("Rotate Twilio secrets together")) == 0.0
    assert jaccard(set(), set()) == 0.0


# --- the one way in: pending and private ---------------------------------------------------------


def test_deliberate_save_lands_pending_and_private(kdb: memdb.Database) -> None:
    ana = kdb.owner("ana")
    ep = ana.record("debug", "migration lock", outcome="failure")
    entry = ana.save_lesson(LESSONS[0], cites=[ep.id], tags=["Deploys"])
    assert (entry.state, entry.visibility, entry.status, entry.source) == ("pending", "private", "active", "save")
    assert entry.cites == (ep.id,) and entry.tags == ("deploys",)
    assert [e.id for e in kdb.review_queue()] == [entry.id]
    assert ana.knowledge() == [] and kdb.owner("bo").knowledge() == []  # pending is not knowledge yet
    assert [e.id for e in ana.entries("pending")] == [entry.id] and kdb.owner("bo").entries() == []


def test_save_is_sanitized_and_must_cite_own_episodes(kdb: memdb.Database) -> None:
    ana, bo = kdb.owner("ana"), kdb.owner("bo")
    entry = ana.save_lesson("Mail ops at jane.doe@example.com before rotating keys")
    assert "jane.doe" not in entry.text and "<EMAIL_1>" in entry.text
    theirs = bo.record("debug", "bo's", outcome="success")
    with pytest.raises(ValidationError, match=theirs.id):
        ana.save_lesson(LESSONS[1], cites=[theirs.id])
    with pytest.raises(ValidationError, match="cites 'nope'"):
        ana.save_lesson(LESSONS[1], cites=["nope"])
    with pytest.raises(ValidationError):
        ana.save_lesson("the and of")  # no words left to compare or index
    assert len(kdb.review_queue()) == 1


def test_text_the_store_cannot_keep_is_refused_as_invalid(kdb: memdb.Database) -> None:
    """A lone surrogate (UTF-8 cannot encode it) passed Knowledge.clean and the store raised
    InvalidValueError from the write: a reflector's lesson holding one stopped reflect for every
    owner. It is a ValidationError, which costs the lesson only."""
    ana = kdb.owner("ana")
    with pytest.raises(ValidationError, match="lone surrogate"):
        ana.save_lesson("Deploy failed \ud800 badly")
    assert kdb.review_queue() == []


def test_review_single_and_batch_with_who_and_when(kdb: memdb.Database, clock: Clock) -> None:
    ana = kdb.owner("ana")
    ids = [ana.save_lesson(t).id for t in LESSONS[:4]]
    clock.now = T0 + dt.timedelta(hours=3)
    (one,) = kdb.approve(ids[0], by="rita")
    assert (one.state, one.visibility, one.decided_by, one.decided_at) == ("approved", "private", "rita", clock.now)
    batch = kdb.approve(ids[1:3], by="rita")
    assert [e.state for e in batch] == ["approved", "approved"]
    (rejected,) = kdb.reject([ids[3]], by="sam", reason="too vague")
    assert rejected.state == "rejected" and rejected.text == "" and rejected.reason == "too vague"
    assert kdb.review_queue() == []
    assert {e.id for e in ana.knowledge()} == set(ids[:3])
    audit = [a for a in ana.audit() if a["action"] in ("approve", "reject")]
    assert [(a["action"], a["by"], a["entry"]) for a in audit] == [
        ("approve", "rita", ids[0]), ("approve", "rita", ids[1]), ("approve", "rita", ids[2]), ("reject", "sam", ids[3]),
    ]  # fmt: skip
    assert all(a["at"] == clock.now for a in audit) and all(len(a["content_hash"]) == 64 for a in audit)


def test_review_batches_are_all_or_nothing(kdb: memdb.Database) -> None:
    ana = kdb.owner("ana")
    a, b = (ana.save_lesson(t).id for t in LESSONS[:2])
    kdb.approve(a, by="rita")
    with pytest.raises(ValidationError, match=f"entry '{a}': is approved, not pending"):
        kdb.approve([b, a], by="rita")
    with pytest.raises(NotFoundError, match="no such knowledge entry"):
        kdb.reject([b, "20260101T000000000000Z-000000"], by="rita")
    with pytest.raises(ValidationError, match="by ''"):
        kdb.approve(b, by="")
    assert [e.id for e in kdb.review_queue()] == [b]  # untouched by the failed batches


def test_near_duplicates_of_pending_and_approved_are_refused(kdb: memdb.Database) -> None:
    ana = kdb.owner("ana")
    first = ana.save_lesson(LESSONS[0])
    with pytest.raises(DuplicateError, match=f"pending entry {first.id}"):
        ana.save_lesson("Always run database migrations before deploying the API!")
    kdb.approve(first.id, by="rita")
    with pytest.raises(DuplicateError, match=f"approved entry {first.id}"):
        ana.save_lesson("run database migrations before deploying the api")
    kdb.owner("bo").save_lesson(LESSONS[0])  # another owner's private entry is not compared (nor revealed)


def test_rejection_tombstones_content_for_every_owner_without_keeping_text(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "tomb"
    secret = "Disable the audit log during quarterly close zebrafinch"
    with memdb.open(path, clock=clock) as db:
        entry = db.owner("ana").save_lesson(secret)
        db.reject(entry.id, by="rita", reason="unsafe")
        for owner, text in (
            ("ana", secret),
            ("bo", secret.upper()),
            ("cy", "Please disable the audit log during the quarterly close zebrafinch"),
        ):
            with pytest.raises(DuplicateError, match="rejected content"):
                db.owner(owner).save_lesson(text)
        ((digest,), stone) = next(iter(db.globals["KNT"].items()))
        assert digest == content_digest(secret) and set(stone) == {"sh", "at", "count"}
        assert all(isinstance(h, int) for h in stone["sh"])
        assert db.owner("ana").entries()[0].text == ""
        assert "zebrafinch" not in json.dumps(db.audit("ana"), default=str)
        db.compact()
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert b"zebrafinch" not in raw  # the text is gone from disk; the tombstone works on hashes


def test_an_owner_s_erasure_takes_their_lessons(tmp_path: Path, clock: Clock) -> None:
    """Erasure is a request and takes everything derived (DESIGN 5): a saved lesson cites no
    episode, so erase(everything=True) left it, served to teammates and on disk after compact().
    By tags it takes the entries carrying them; everything takes every entry the owner wrote."""
    path = tmp_path / "erase"
    with memdb.open(path, clock=clock) as db:
        db.configure(teams={"platform": ["ana", "bo"]})
        ana, bo = db.owner("ana"), db.owner("bo")
        ana.record("debug", "Acme deploy failed", outcome="failure", tags=["acme"])
        shared = ana.save_lesson("Call Walrusco's on-call before their deploys", tags=["acme"])
        pending = ana.save_lesson("Walrusco pays late; invoice them early", tags=["Acme"])
        untagged = approved(db, "ana", "Zebracorp rotates its keys on Fridays")
        quarantined = approved(db, "ana", "Quokkaline drops webhooks under load")
        db.quarantine(quarantined.id, by="rev", reason="Quokkaline disputes it")
        bo_own = approved(db, "bo", LESSONS[0])
        db.approve(shared.id, by="rev")
        db.decide({shared.id: "share"}, by="ana", team="platform")
        assert [e.id for e in bo.knowledge("walrusco")] == [shared.id]

        report = ana.erase(tags=["ACME"], reason="forget customer Acme")
        assert report.count == 1 and sorted(report.entries) == sorted([shared.id, pending.id])  # said, not only done
        assert bo.knowledge("walrusco") == [] and db.review_queue() == []
        assert {e.id: (e.state, e.status, e.text, e.tags) for e in ana.entries() if e.id in (shared.id, pending.id)} == {
            shared.id: ("rejected", "erased", "", ()),
            pending.id: ("rejected", "erased", "", ()),
        }
        assert db.entry(untagged.id).text  # untagged: not asked for

        report = ana.erase(everything=True, reason="ana's deletion request")
        assert report.count == 0 and sorted(report.entries) == sorted([untagged.id, quarantined.id])  # no episode left, lessons still go
        assert {(e.status, e.text) for e in ana.entries()} == {("erased", "")}
        assert [e.id for e in bo.knowledge()] == [bo_own.id]  # another owner's entries stay
        assert "Quokkaline" not in json.dumps(db.audit("ana"), default=str)  # a quarantine reason names what it judged
        db.compact()
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    for word in (b"Walrusco", b"Zebracorp", b"Quokkaline"):
        assert word not in raw


def _raw(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())


@pytest.mark.parametrize("how", ["ids", "tags", "everything"])
def test_an_erasure_redacts_what_reviewers_wrote_about_its_lessons(tmp_path: Path, clock: Clock, how: str) -> None:
    """A reviewer's reason for rejecting or quarantining a lesson names what it judged; once the
    lesson is erased, with the episode it cites or on request, its audit records keep ids and
    hashes only. The reasons survived erase(everything=True) and compact(): Erasure redacted the
    records of its episodes only, and a request skipped the entries its hooks had just erased."""
    path = tmp_path / "reasons"
    with memdb.open(path, clock=clock) as db:
        ana = db.owner("ana")
        ep = ana.record("debug", "Escalation of a churned customer", outcome="failure", tags=["churn"])
        ana.record("debug", "Routine deploy", outcome="success", tags=["deploy"])
        rejected = ana.save_lesson("Call the customer before renewals", cites=[ep.id], tags=["churn"])
        db.reject(rejected.id, by="rev", reason="too personal about Bartholomew Quincefield")
        quarantined = ana.save_lesson("Escalate churned accounts to tier two", cites=[ep.id], tags=["churn"])
        db.approve(quarantined.id, by="rev")
        db.quarantine(quarantined.id, by="rev", reason="quarantined: Zanzibarco complained")
        queued = ana.save_lesson("Churned customers want a call first", cites=[ep.id], tags=["churn"])
        erase: dict[str, Any] = {"ids": {"ids": [ep.id]}, "tags": {"tags": ["churn"]}, "everything": {"everything": True}}[how]
        report = ana.erase(reason="deletion request", **erase)
        assert sorted(report.entries) == sorted([rejected.id, quarantined.id, queued.id])
        audit = json.dumps(db.audit("ana"), default=str)
        assert "Quincefield" not in audit and "Zanzibarco" not in audit
        why = {a["entry"]: a["reason"] for a in db.audit("ana") if a["action"] == "erase" and a.get("entry")}
        assert set(why) == set(report.entries) and "[erased 2026-06-01]" not in why.values()  # why each went stays
        db.compact()
    assert b"Quincefield" not in _raw(path) and b"Zanzibarco" not in _raw(path)


@pytest.mark.parametrize("how", ["ids", "tags", "everything"])
def test_an_erasure_request_takes_the_tombstones_of_the_lessons_it_erases(tmp_path: Path, clock: Clock, how: str) -> None:
    """A tombstone keeps keyed hashes of a rejected lesson's words, and the key is in the same
    file: a guessed name ("quincefield") was confirmed offline after the lesson was erased with
    its evidence. An erasure request takes everything derived, so the tombstones of the rejected
    lessons it erases go, and that content may be queued again (for a reviewer to judge anew);
    one another owner's rejection shares stays, as do other owners' tombstones, and keep blocking."""
    path = tmp_path / "stones"
    gone_text, shared_text, bo_text = (
        "Quincefield hates Monday calls",
        "Skip code review for urgent fixes and push straight to prod",
        "Disable the audit log during quarterly close",
    )
    with memdb.open(path, clock=clock) as db:
        ana, bo = db.owner("ana"), db.owner("bo")
        ep = ana.record("debug", "Escalation of a churned customer", outcome="failure", tags=["churn"])
        gone = ana.save_lesson(gone_text, cites=[ep.id], tags=["churn"])
        both = ana.save_lesson(shared_text, cites=[ep.id], tags=["churn"])
        bo.save_lesson(shared_text.lower())  # queued: ana's pending entry is private to ana
        bo_own = bo.save_lesson(bo_text)
        db.reject([gone.id, both.id, bo_own.id], by="rev")  # bo's copy is rejected with ana's
        words = hashed_shingles(gone_text, db.knowledge.salt())
        erase: dict[str, Any] = {"ids": {"ids": [ep.id]}, "tags": {"tags": ["churn"]}, "everything": {"everything": True}}[how]
        report = ana.erase(reason="deletion request", **erase)
        assert sorted(report.entries) == sorted([gone.id, both.id])
        stones = dict(db.globals["KNT"].items())
        assert set(stones) == {(content_digest(shared_text),), (content_digest(bo_text),)}
        assert stones[(content_digest(shared_text),)]["count"] == 1  # bo's rejection is left
        assert not any(set(hashed_shingles("quincefield", db.knowledge.salt())) <= set(s["sh"]) for s in stones.values())
        db.compact()
    raw = _raw(path)
    assert not [h for h in words if h.to_bytes(8, "big") in raw]  # no hash of its words is left on disk
    with memdb.open(path, clock=clock) as db:
        assert db.owner("bo").save_lesson(gone_text).state == "pending"  # the trade-off: it may be queued again
        for owner, text in (("bo", shared_text), ("ana", bo_text)):
            with pytest.raises(DuplicateError, match="rejected content"):
                db.owner(owner).save_lesson(text)


def test_retention_redacts_what_audit_records_keep_of_the_lessons_it_erases(kdb: memdb.Database) -> None:
    """A pending lesson whose evidence retention purged goes as an erased one does, and the
    audit records about it lose their reasons as on every other path."""
    kdb.configure(retention_days=30)
    mem = kdb.owner("ana")
    old = mem.record("debug", "Deploy failed", outcome="failure", ts=T0 - 40 * DAY)
    orphan = mem.save_lesson("Run database migrations before deploying the API", cites=[old.id])
    kdb.episodes.audit.write("ana", "note", T0, entry=orphan.id, reason="flagged for Quincefield")  # what a reviewer may write
    assert kdb.maintain(now=T0).purged == 1 and kdb.entry(orphan.id).status == "erased"
    assert "Quincefield" not in json.dumps(kdb.audit("ana"), default=str)


def test_rejection_reaches_other_owners_pending_copies(kdb: memdb.Database, clock: Clock) -> None:
    text = "Skip code review for urgent fixes and push straight to prod"
    ana_copy = kdb.owner("ana").save_lesson(text)
    bo_copy = kdb.owner("bo").save_lesson(text.lower())  # accepted: ana's pending entry is private to ana
    other = kdb.owner("bo").save_lesson(LESSONS[0])
    clock.now = T0 + dt.timedelta(hours=2)
    (rejected,) = kdb.reject(ana_copy.id, by="rita", reason="dangerous")  # only what was asked for is returned
    assert rejected.id == ana_copy.id
    gone = kdb.entry(bo_copy.id)
    assert (gone.state, gone.text, gone.decided_by, gone.decided_at) == ("rejected", "", "rita", clock.now)
    assert gone.reason is not None and "repeats rejected content" in gone.reason and ana_copy.id not in gone.reason
    with pytest.raises(ValidationError, match=f"entry '{bo_copy.id}': is rejected, not pending"):
        kdb.approve(bo_copy.id, by="sam")
    assert [e.id for e in kdb.review_queue()] == [other.id]  # unrelated content stays queued
    assert kdb.owner("bo").knowledge() == []
    (audit,) = [a for a in kdb.audit("bo") if a["action"] == "reject"]
    assert (audit["entry"], audit["by"]) == (bo_copy.id, "rita")


def test_approve_refuses_tombstoned_content(kdb: memdb.Database) -> None:
    ana_copy = kdb.owner("ana").save_lesson("Disable the audit log during quarterly close zebrafinch")
    near = kdb.owner("bo").save_lesson("Disable the audit log during the yearly close zebrafinch")  # similarity 0.57
    fine = kdb.owner("bo").save_lesson(LESSONS[0])
    kdb.reject(ana_copy.id, by="rita")
    assert kdb.entry(near.id).state == "pending"  # under the threshold of 0.6: not the same content
    kdb.configure(duplicate_threshold=0.5)  # now it is, and approving it would bring rejected content back
    with pytest.raises(DuplicateError, match=f"entry '{near.id}': nearly repeats rejected content \\(tombstone [0-9a-f]{{12}}"):
        kdb.approve([fine.id, near.id], by="sam")
    assert {e.id for e in kdb.review_queue()} == {fine.id, near.id}  # all or nothing
    kdb.reject(near.id, by="sam")
    assert [e.id for e in kdb.approve(fine.id, by="sam")] == [fine.id]


def test_a_pending_lesson_whose_evidence_expired_leaves_the_queue(kdb: memdb.Database, clock: Clock) -> None:
    """Retention keeps approved knowledge whose sources it purged (DESIGN 5), and it kept a
    pending lesson whose every cited episode it purged too: a reviewer could approve a claim
    nothing backs any more. It goes as an erased one does (text dropped, no tombstone: the same
    lesson may come back on new evidence); one with a live source left stays pending."""
    kdb.configure(retention_days=30)
    mem = kdb.owner("ana")
    old = [mem.record("debug", f"Deploy failed, try {i}", outcome="failure", ts=T0 - (40 - i) * DAY).id for i in range(2)]
    recent = mem.record("debug", "Deploy failed again", outcome="failure", ts=T0 - DAY).id
    orphan = mem.save_lesson("Run database migrations before deploying the API", cites=old)
    backed = mem.save_lesson("Warm the cache after a cold start before routing traffic", cites=[old[0], recent])
    kept = mem.save_lesson("Check the queue depth before scaling the workers", cites=old)
    kdb.approve(kept.id, by="rita")
    report = kdb.maintain(now=T0)
    assert report.purged == 2
    assert [e.id for e in kdb.review_queue()] == [backed.id] and kdb.entry(backed.id).expired_cites == (old[0],)
    gone = kdb.entry(orphan.id)
    # an erased entry names none of the ids it cited (test_an_erased_entry_names_no_episode_it_cited)
    assert (gone.state, gone.status, gone.text, gone.decided_by, gone.cites, gone.expired_cites) == (
        "rejected",
        "erased",
        "",
        "retention",
        (),
        (),
    )
    assert kdb.entry(kept.id).state == "approved" and kdb.entry(kept.id).text  # approved knowledge stays
    (audit,) = [a for a in kdb.audit("ana") if a["action"] == "erase" and a.get("entry") == orphan.id]
    assert audit["by"] == "retention" and "expired" in audit["reason"]
    assert mem.save_lesson("Run database migrations before deploying the API", cites=[recent]).state == "pending"  # no tombstone


def test_approve_refuses_a_lesson_no_episode_backs_any_more(kdb: memdb.Database) -> None:
    """A database whose retention ran before pending lessons were dropped with their evidence
    still holds such a lesson: approving it is refused, naming why, and nothing is approved."""
    mem = kdb.owner("ana")
    ep = mem.record("debug", "Deploy failed", outcome="failure", ts=T0 - 40 * DAY)
    orphan = mem.save_lesson("Run database migrations before deploying the API", cites=[ep.id])
    fine = mem.save_lesson(LESSONS[1])
    hooks = kdb.lifecycle.erasure.hooks
    hooks[hooks.index(kdb.knowledge.erase_citing)] = lambda *_: []  # retention as it ran before, leaving the entry pending
    kdb.configure(retention_days=30)
    assert kdb.maintain(now=T0).purged == 1 and kdb.entry(orphan.id).state == "pending"
    with pytest.raises(ValidationError, match=f"entry '{orphan.id}': none of the 1 episodes it cites is left"):
        kdb.approve([fine.id, orphan.id], by="rita")
    assert {e.id for e in kdb.review_queue()} == {fine.id, orphan.id}  # all or nothing
    kdb.reject(orphan.id, by="rita")


def test_bad_arguments_are_validation_errors_naming_them(kdb: memdb.Database) -> None:
    ana = kdb.owner("ana")
    ep = ana.record("debug", "webhook signature check failed", outcome="failure")
    entry = ana.save_lesson(LESSONS[1], cites=ep.id, tags="Twilio")  # one id as a str is one citation, not its characters
    assert entry.cites == (ep.id,) and entry.tags == ("twilio",)
    none, five, two = cast(Any, None), cast(Any, 5), cast(Any, "2")  # wrong on purpose
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: ana.save_lesson(LESSONS[2], tags=none), "tags None"),
        (lambda: ana.save_lesson(LESSONS[2], cites=none), "cites None"),
        (lambda: ana.save_lesson(LESSONS[2], tags=[five]), "tags \\[5\\]: 5 is not a str"),
        (lambda: ana.knowledge(five), "text 5"),
        (lambda: ana.knowledge(tags=none), "tags None"),
        (lambda: kdb.review_queue(limit=two), "limit '2'"),
        (lambda: kdb.review_queue(limit=-1), "limit -1"),
        (lambda: kdb.approve(none, by="rita"), "ids None"),
        (lambda: kdb.approve([none], by="rita"), "None is not a str"),
        (lambda: kdb.reject(entry.id, by="rita", reason=five), "reason 5"),
    ]
    for call, needle in cases:
        with pytest.raises(ValidationError, match=needle):
            call()
    assert [e.id for e in kdb.review_queue()] == [entry.id] and kdb.entry(entry.id).state == "pending"
    assert [e.id for e in kdb.review_queue(limit=0)] == []


EMAIL, PHONE = "reviewer.raw@example.com", "+44 20 7946 0958"


def test_a_reviewer_that_looks_like_personal_data_is_refused(tmp_path: Path, clock: Clock) -> None:
    """``by=`` is kept in the entry (``decided_by``) and the audit trail: an email or a phone
    number as a reviewer is refused as an owner name is, shown only sanitized, and never reaches disk."""
    path = tmp_path / "by"
    with memdb.open(path, clock=clock) as db:
        pending = db.owner("ana").save_lesson(LESSONS[0])
        done = approved(db, "ana", LESSONS[1])
        calls: list[Callable[[str], object]] = [
            lambda by: db.approve(pending.id, by=by),
            lambda by: db.reject(pending.id, by=by, reason="dup"),
            lambda by: db.decide({done.id: "share"}, by=by),
            lambda by: db.quarantine(done.id, by=by, reason="stale"),
            lambda by: db.confirm_decay(done.id, "keep", by=by),
            lambda by: db.restore_entry(done.id, by=by),
        ]
        for call in calls:
            for who, placeholder in ((EMAIL, "<EMAIL_1>"), (PHONE, "<PHONE_1>")):
                with pytest.raises(ValidationError, match="looks like personal data") as err:
                    call(who)
                assert who not in str(err.value) and placeholder in str(err.value)
        assert (db.entry(pending.id).state, db.entry(done.id).status) == ("pending", "active")  # nothing decided
        assert db.approve(pending.id, by="rita")[0].decided_by == "rita"
        db.compact()
    raw = b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())
    assert EMAIL.encode() not in raw and PHONE.encode() not in raw


def test_error_messages_show_caller_values_sanitized(kdb: memdb.Database) -> None:
    """Every bad value an error quotes goes through the sanitizer: a log line of a refused call
    must not be where personal data ends up."""
    entry = approved(kdb, "ana", LESSONS[0])
    cases: list[Callable[[], object]] = [
        lambda: kdb.decide({entry.id: f"share with {EMAIL}"}, by="ana"),
        lambda: kdb.decide(cast(Any, [EMAIL]), by="ana"),
        lambda: kdb.confirm_decay(entry.id, cast(Any, EMAIL), by="rev"),
        lambda: kdb.ceremony(EMAIL),
        lambda: kdb.latest_agenda(EMAIL),
        lambda: kdb.review_queue(limit=cast(Any, EMAIL)),
        lambda: kdb.owner("ana").knowledge(cast(Any, [EMAIL])),
        lambda: kdb.owner("ana").save_lesson(EMAIL),  # nothing but a placeholder is left of it
    ]
    for call in cases:
        with pytest.raises(ValidationError) as err:
            call()
        assert EMAIL not in str(err.value) and "<EMAIL_1>" in str(err.value), str(err.value)
    # an entry decided before reviewers were checked may name one raw: the error shows it sanitized
    kdb.globals["KN"][("ana", entry.id)] = {**kdb.globals["KN"][("ana", entry.id)], "decided_by": EMAIL}
    with pytest.raises(ValidationError, match="is approved, not pending") as err:
        kdb.approve(entry.id, by="rev")
    assert EMAIL not in str(err.value) and "decided by '<EMAIL_1>'" in str(err.value)


# --- the share ceremony -----------------------------------------------------------------------


def test_ceremony_agenda_and_owner_only_decisions(kdb: memdb.Database) -> None:
    a1, a2, a3 = (approved(kdb, "ana", t) for t in LESSONS[:3])
    b1 = approved(kdb, "bo", LESSONS[3])
    kdb.owner("cy").save_lesson(LESSONS[4])  # pending: not on the agenda
    agenda = kdb.ceremony()
    assert {o: [i.entry.id for i in items] for o, items in agenda.by_owner().items()} == {"ana": [a1.id, a2.id, a3.id], "bo": [b1.id]}
    assert not any(i.carried_over for i in agenda.items)

    with pytest.raises(PermissionDeniedError, match=f"entry '{b1.id}': owned by 'bo'; only its owner can decide"):
        kdb.decide({a1.id: "share", b1.id: "share"}, by="ana")
    assert kdb.entry(a1.id).visibility == "private"  # all or nothing

    shared, kept, archived = kdb.decide({a1.id: "share", a2.id: "private", a3.id: "archive"}, by="ana")
    assert (shared.visibility, shared.shared_with, shared.owner) == ("shared", ("all",), "ana")
    assert (kept.visibility, kept.ceremony) == ("private", "kept")
    assert archived.status == "archived"
    bo_reads = {e.id: e for e in kdb.owner("bo").knowledge()}
    assert set(bo_reads) == {a1.id, b1.id} and bo_reads[a1.id].owner == "ana"  # attribution travels
    assert "[ana; all]" in bo_reads[a1.id].line()
    assert {e.id for e in kdb.owner("ana").knowledge()} == {a1.id, a2.id}  # archived is out of use
    assert [a["by"] for a in kdb.audit("ana") if a["action"] in ("share", "keep_private", "archive")] == ["ana"] * 3

    # bo said nothing: his item carries over, marked, and never expires
    for weeks in (1, 30):
        again = kdb.ceremony(now=T0 + weeks * 7 * DAY)
        assert [(i.entry.id, i.carried_over) for i in again.items] == [(b1.id, True)]
    restored = kdb.restore_entry(a3.id, by="ana")
    assert (restored.status, restored.visibility) == ("active", "private")
    assert a3.id in [i.entry.id for i in kdb.ceremony().items]  # back on the agenda


def test_teams_scope_shared_reads(kdb: memdb.Database) -> None:
    kdb.configure(teams={"core": ["ana", "bo"], "ops": ["cy"]})
    entry = approved(kdb, "ana", LESSONS[0])
    with pytest.raises(PermissionDeniedError, match="team 'ops': 'ana' is not a member"):
        kdb.decide({entry.id: "share"}, by="ana", team="ops")
    with pytest.raises(ValidationError, match="team 'nope': not configured"):
        kdb.ceremony("nope")
    assert [i.entry.id for i in kdb.ceremony("core").items] == [entry.id] and kdb.ceremony("ops").items == []
    (shared,) = kdb.decide({entry.id: "share"}, by="ana")
    assert shared.shared_with == ("core",)
    assert [e.id for e in kdb.owner("bo").knowledge()] == [entry.id]
    assert kdb.owner("cy").knowledge() == [] and kdb.owner("dan").knowledge() == []
    kdb.decide({entry.id: "private"}, by="ana")  # the owner can take it back
    assert kdb.owner("bo").knowledge() == []


def test_a_shared_lesson_names_none_of_its_owner_s_episodes(kdb: memdb.Database) -> None:
    """An episode id is its time to the microsecond: a shared lesson listing its cites told
    teammates when its owner's private episodes happened (README: ids tell nothing of other
    owners' activity). The owner still sees its own; no other way to the entry shows them."""
    ana, bo = kdb.owner("ana"), kdb.owner("bo")
    cited = [ana.record("debug", f"Deploy failed: migration lock {i}", outcome="failure", ts=T0 - (3 - i) * DAY).id for i in range(2)]
    entry = ana.save_lesson("Run database migrations before deploying the API", cites=cited, tags=["deploy"])
    kdb.approve(entry.id, by="rita")
    kdb.decide({entry.id: "share"}, by="ana")
    (seen,) = bo.knowledge("migrations")
    assert (seen.id, seen.owner, seen.text, seen.cites, seen.expired_cites) == (entry.id, "ana", entry.text, (), ())
    (own,) = ana.knowledge("migrations")
    assert own.cites == tuple(cited)
    (injected,) = bo.prepare("deploying the API: database migrations").knowledge
    assert injected.cites == ()
    shown = json.dumps([e.model_dump(mode="json") for e in bo.knowledge()])
    assert not any(c in shown for c in cited) and not any(c[:15] in shown for c in cited)
    # nor when or how its owner corrected one (a review's find): the flag says only that it is reviewed
    fixed = ana.supersede(cited[1], reason="stale alert", outcome="success")
    (seen,) = bo.knowledge("migrations")
    assert (seen.flagged_at, seen.flag_reason) == (None, "its owner is reviewing it") and "success" not in seen.line()
    assert fixed.supersedes == cited[1]
    assert kdb.entry(entry.id).flag_reason == "a record it cites was corrected (outcome failure -> success)"


def test_a_lesson_on_a_corrected_episode_is_recited_and_flagged(kdb: memdb.Database, clock: Clock) -> None:
    """An approved "recurring failure" lesson kept citing a failure its owner then corrected to a
    success (supersede), and prepare kept injecting it as it was. A correction moves every live
    entry's cite to the new version (which cites the old one); one that changes the outcome or
    the lesson flags an approved entry in use for a person (keep or quarantine, as a decay flag),
    its line saying so meanwhile. Decay's weekly budget is not spent; nothing is unapproved."""
    mem = kdb.owner("ana")
    a, b = (mem.record("debug", f"Deploy failed: migration lock {i}", outcome="failure", tags=["deploy"], ts=T0 - (2 - i) * DAY)
            for i in range(2))  # fmt: skip
    lesson = mem.save_lesson("Recurring failure on deploys: run database migrations first", cites=[a.id, b.id])
    kdb.approve(lesson.id, by="rita")
    pending = mem.save_lesson("Check the migration lock before deploying the API", cites=[b.id])
    clock.advance(hours=1)
    fixed = mem.supersede(b.id, reason="the alert was stale; it worked", outcome="success")
    entry = kdb.entry(lesson.id)
    assert entry.cites == (a.id, fixed.id) and entry.state == "approved" and entry.status == "active"
    assert (entry.flagged_at, entry.flag_reason) == (clock.now, "a record it cites was corrected (outcome failure -> success)")
    assert [e.id for e in kdb.flagged()] == [lesson.id] and "(under review: a record it cites was corrected" in entry.line()
    assert "(under review" in mem.prepare("deploy: run database migrations", max_chars=4000).text
    assert kdb.entry(pending.id).cites == (fixed.id,) and kdb.entry(pending.id).flagged_at is None  # a reviewer sees it anyway
    assert kdb.decay(now=clock.now).budget_left == kdb.settings.decay_flags_per_week  # this week's decay budget is untouched
    kept = kdb.confirm_decay(lesson.id, "keep", by="rita")
    assert (kept.flagged_at, kept.flag_reason) == (None, None) and "(under review" not in kept.line()
    again = mem.supersede(a.id, reason="typo", summary="Deploy failed: migration lock held")  # not the outcome or the lesson
    assert kdb.entry(lesson.id).cites == (again.id, fixed.id) and kdb.entry(lesson.id).flagged_at is None
    moved = [(r["episode"], r["successor"], r.get("flagged")) for r in kdb.audit("ana") if r["action"] == "source_corrected"]
    assert moved == [(b.id, fixed.id, True), (b.id, fixed.id, None), (a.id, again.id, None)]
    mem.erase([a.id], reason="forget it")  # any version erases the chain, and what cites it
    assert kdb.entry(lesson.id).status == "erased"


def test_knowledge_search_ranks_and_counts_retrieval(kdb: memdb.Database, clock: Clock) -> None:
    for t in LESSONS[:3]:
        approved(kdb, "ana", t)
    clock.now = T0 + DAY
    (hit,) = kdb.owner("ana").knowledge("twilio secret")
    assert "Twilio" in hit.text and kdb.entry(hit.id).last_retrieved == clock.now
    assert kdb.owner("ana").knowledge("kubernetes") == []


# --- bounded decay -------------------------------------------------------------------------------


@pytest.mark.parametrize(("idle_entries", "flagged"), [(5, 5), (6, 5)])
def test_decay_flags_at_most_five_a_week(kdb: memdb.Database, idle_entries: int, flagged: int) -> None:
    texts = [*LESSONS, "Document the rollback before the rollout"]
    entries = [approved(kdb, "ana" if i % 2 else "bo", texts[i]) for i in range(idle_entries)]
    later = T0 + 100 * DAY  # a Wednesday
    report = kdb.decay(now=later)
    assert len(report.flagged) == flagged and report.idle == idle_entries and report.over_budget == idle_entries - flagged
    assert kdb.decay(now=later + DAY).flagged == []  # same week: the cap holds across runs
    next_week = kdb.decay(now=later + 5 * DAY)  # Monday
    assert len(next_week.flagged) == idle_entries - flagged
    assert len(kdb.flagged()) == idle_entries
    assert sum(len(kdb.owner(o).entries()) for o in ("ana", "bo")) == len(entries)  # nothing deleted
    assert all(e.status == "active" for e in kdb.flagged())  # flags only


@pytest.mark.parametrize(("idle", "flagged"), [(dt.timedelta(days=90) - dt.timedelta(seconds=1), 0), (dt.timedelta(days=90), 1)])
def test_decay_idle_boundary(kdb: memdb.Database, idle: dt.timedelta, flagged: int) -> None:
    approved(kdb, "ana", LESSONS[0])
    assert len(kdb.decay(now=T0 + idle).flagged) == flagged


def test_decay_spares_injected_and_recently_retrieved(kdb: memdb.Database, clock: Clock) -> None:
    injected = approved(kdb, "ana", LESSONS[0])
    retrieved = approved(kdb, "ana", LESSONS[1])
    idle = approved(kdb, "ana", LESSONS[2])
    kdb.owner("ana").prepare("deploying the API: database migrations", max_chars=4000)
    assert kdb.entry(injected.id).injected == 1
    clock.now = T0 + 60 * DAY
    kdb.owner("ana").knowledge("twilio signing secret")
    report = kdb.decay(now=T0 + 120 * DAY)
    assert [e.id for e in report.flagged] == [idle.id] and retrieved.id not in [e.id for e in report.flagged]


def test_decay_confirmation_keep_or_quarantine_reversibly(kdb: memdb.Database) -> None:
    keep, drop = approved(kdb, "ana", LESSONS[0]), approved(kdb, "ana", LESSONS[1])
    kdb.decide({drop.id: "share"}, by="ana")
    now = T0 + 100 * DAY
    assert len(kdb.decay(now=now).flagged) == 2
    kept = kdb.confirm_decay(keep.id, "keep", by="rita", now=now)
    assert kept.flagged_at is None and kept.status == "active"
    gone = kdb.confirm_decay(drop.id, "quarantine", by="rita", now=now)
    assert gone.status == "quarantined" and kdb.flagged() == []
    assert [e.id for e in kdb.owner("ana").knowledge()] == [keep.id]
    assert kdb.owner("bo").knowledge() == []  # out of active use for the team too
    with pytest.raises(ValidationError, match="is not flagged"):
        kdb.confirm_decay(keep.id, "keep", by="rita")
    assert kdb.decay(now=now + 7 * DAY).flagged == []  # kept: the idle clock restarted
    back = kdb.restore_entry(drop.id, by="rita", now=now + 8 * DAY)
    assert (back.status, back.visibility) == ("active", "shared")
    assert [e.id for e in kdb.owner("bo").knowledge()] == [drop.id]
    actions = [(a["action"], a["by"]) for a in kdb.audit("ana") if a["action"].startswith(("decay", "quarantine", "restore"))]
    assert actions == [
        ("decay_flag", "decay"),
        ("decay_flag", "decay"),
        ("decay_keep", "rita"),
        ("quarantine", "rita"),
        ("restore_entry", "rita"),
    ]


def test_quarantine_needs_a_reason_and_an_approved_entry(kdb: memdb.Database) -> None:
    pending = kdb.owner("ana").save_lesson(LESSONS[0])
    with pytest.raises(ValidationError, match="reason"):
        kdb.quarantine(pending.id, by="rita", reason=" ")
    with pytest.raises(ValidationError, match="is pending/active"):
        kdb.quarantine(pending.id, by="rita", reason="looks wrong")


@pytest.mark.parametrize(("second_run", "flagged"), [(dt.timedelta(microseconds=-1), 0), (dt.timedelta(0), 1)])
def test_decay_budget_renews_exactly_when_the_week_starts(kdb: memdb.Database, second_run: dt.timedelta, flagged: int) -> None:
    kdb.configure(decay_flags_per_week=1)
    approved(kdb, "ana", LESSONS[0])
    approved(kdb, "ana", LESSONS[1])
    monday = dt.datetime(2026, 9, 7, tzinfo=UTC)
    assert len(kdb.decay(now=monday - dt.timedelta(days=6)).flagged) == 1  # Tuesday
    assert len(kdb.decay(now=monday + second_run).flagged) == flagged  # Sunday 23:59:59.999999 vs Monday 00:00


def test_decay_weeks_are_local_weeks(kdb: memdb.Database) -> None:
    """The scheduler runs decay on the first day of the database's local week; decay booked its
    flags to the week of the UTC date, so in Tokyo the run due Monday 04:00 (Sunday 19:00 UTC)
    shared the budget of the week before, and its report named that week."""
    kdb.configure(timezone="Asia/Tokyo", decay_flags_per_week=1, week_starts_on=0)
    for text in LESSONS[:3]:
        approved(kdb, "ana", text)
    first = kdb.decay(now=dt.datetime(2026, 12, 9, 3, 0, tzinfo=UTC))  # Wednesday, 12:00 in Tokyo
    assert first.week == "2026-12-07" and len(first.flagged) == 1
    monday_local = dt.datetime(2026, 12, 13, 19, 1, tzinfo=UTC)  # Monday 2026-12-14 04:01 in Tokyo, Sunday in UTC
    second = kdb.decay(now=monday_local)
    assert second.week == "2026-12-14" and len(second.flagged) == 1 and "week of 2026-12-14" in str(second)
    assert len(kdb.decay(now=monday_local + dt.timedelta(hours=1)).flagged) == 0  # that week's budget is spent


def test_a_naive_now_is_refused_whatever_matches(tmp_path: Path) -> None:
    """``knowledge(now=<naive>)`` returned [] when nothing matched (and raised only after the
    search when something did), where every other ``now=`` refuses one up front."""
    with memdb.open(tmp_path / "db") as db:
        for text in (None, "nothing holds this"):
            with pytest.raises(ValidationError, match="now"):
                db.owner("ana").knowledge(text, now=dt.datetime(2026, 7, 1, 9))
