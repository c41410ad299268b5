"""Episodic layer: validation, honest outcomes, owner privacy, capture, PII fail-closed, indexes."""

from __future__ import annotations

import datetime as dt
import logging
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_server import drop, unique_name

import memdb
from memdb.engine import codec
from memdb.engine.globals import Globals
from memdb.engine.store import LMDBStore
from memdb.errors import ConfigError, CorruptValueError, KeyTooLongError, NotFoundError, SanitizerError, StoreFullError, ValidationError
from memdb.memory.ids import episode_day, new_id, time_prefix, time_prefix_at, ts_micros
from memdb.memory.layout import (
    LAYOUT,
    LEVELS_PER_POINT,
    MAX_DOCS,
    column_tail,
    entry_code,
    entry_codes,
    entry_of,
    entry_value,
    id_tail,
    index_code,
    relevance_level,
    tail_at,
    tail_id,
    tail_ts,
)
from memdb.memory.postings import decode_block, encode_block
from memdb.memory.sanitize import RegexSanitizer

UTC = dt.UTC
T0 = dt.datetime(2026, 7, 1, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


# --- 1. model ---------------------------------------------------------------------------------


def test_record_and_get_round_trip(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    ep = mem.record(
        "debug",
        "Twilio webhook rejected",
        outcome="failure",
        tags=["Project X", "twilio", "project-x"],
        decisions={"confidence": 8.5, "action": "rotate secret"},
        what_we_tried="re-sent the webhook",
        what_happened="401 again",
        why="signature secret was stale",
        lesson="check the signing secret first",
        participants=["ana", "bot"],
        artifact="runbooks/twilio.md",
        session="conv_123",
    )
    assert mem.peek(ep.id) == ep
    got = mem.get(ep.id)
    assert got.model_copy(update={"access_count": 0, "last_access": None, "relevance": ep.relevance}) == ep
    assert got.access_count == 1 and got.last_access == T0
    assert got.tags == ("project-x", "twilio")
    assert got.decisions == {"confidence": 8.5, "action": "rotate secret"}
    assert got.ts == T0 and got.ts.tzinfo is not None
    assert got.status == "active"
    assert 0 <= got.relevance <= 10


def test_given_timestamps_kept_exactly_as_utc(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    cest = dt.timezone(dt.timedelta(hours=2))
    ts = dt.datetime(2026, 7, 1, 11, 59, 59, 999999, tzinfo=cest)
    ep = mem.record("routine", "nightly", outcome="success", ts=ts)
    back = mem.get(ep.id)
    assert back.ts == ts and back.ts.utcoffset() == dt.timedelta(0)
    assert back.ts.hour == 9 and back.ts.microsecond == 999999
    assert episode_day(ep.id) == "2026-07-01"


def test_naive_datetime_rejected_naming_field(edb: memdb.Database) -> None:
    with pytest.raises(ValidationError, match=r"ts=.*naive"):
        edb.owner("ana").record("routine", "x", outcome="success", ts=dt.datetime(2026, 7, 1))
    assert edb.owner("ana").count() == 0


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"summary": ""}, "summary"),
        ({"summary": "\u200b"}, "summary='\\u200b': holds no visible character"),  # a zero-width space says nothing
        ({"tags": ["ok", ""]}, "''"),
        ({"feedback": 3}, "feedback=3"),
        ({"decisions": "not a dict"}, "decisions='not a dict'"),
        ({"colour": "blue"}, "colour"),
        # "Extra inputs are not permitted" said nothing of why, or of what can be set
        ({"relevance": 9.0}, "relevance=9.0: not a field a capture sets (memdb computes relevance, status and access counts; fields: ts,"),
        ({"session": "has space"}, "session='has space'"),
        ({"cites": ["nope"]}, "nope"),
    ],
)
def test_bad_fields_named(edb: memdb.Database, fields: dict[str, Any], needle: str) -> None:
    mem = edb.owner("ana")
    args: dict[str, Any] = {"kind": "debug", "summary": "s", "outcome": "partial", **fields}
    with pytest.raises((ValidationError, NotFoundError)) as info:
        mem.record(**args)
    assert needle in str(info.value)
    assert mem.count() == 0 and edb.check().ok


def test_ids_unique_and_sorted_by_time(edb: memdb.Database, clock: Clock) -> None:
    mem = edb.owner("ana")
    ids = []
    for i in range(50):
        if i % 7 == 0:
            clock.advance(seconds=1)
        ids.append(mem.record("exchange", f"turn {i}", session="s1").id)  # many share a timestamp
    assert len(set(ids)) == 50
    assert ids == sorted(ids)
    assert [e.id for e in mem.episodes()] == ids


# --- 2. typed kinds and honest outcomes --------------------------------------------------------


@pytest.mark.parametrize("outcome", [None, "mostly worked", "n/a", "Success", "SUCCESS", "succeeded", ""])
def test_typed_kind_requires_exact_outcome(edb: memdb.Database, outcome: str | None) -> None:
    mem = edb.owner("ana")
    with pytest.raises(ValidationError, match="outcome") as info:
        mem.record("sprint", "shipped search", outcome=outcome)
    assert "success, partial, failure" in str(info.value)
    assert mem.count() == 0
    assert list(edb.globals["MEM"].items()) == []


@pytest.mark.parametrize("outcome", ["success", "partial", "failure"])
def test_honest_outcomes_accepted(edb: memdb.Database, outcome: str) -> None:
    assert edb.owner("ana").record("review", "PR review", outcome=outcome).outcome == outcome


def test_builtin_kinds_carry_no_outcome(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    with pytest.raises(ValidationError, match="carries no outcome"):
        mem.record("exchange", "hi", outcome="success")
    assert mem.record("exchange", "hi").outcome is None


def test_unknown_kind_rejected(edb: memdb.Database) -> None:
    with pytest.raises(ValidationError, match="'meeting' is not configured"):
        edb.owner("ana").record("meeting", "standup", outcome="success")


def test_kinds_configurable_persisted_and_capped(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "k") as db:
        db.configure(typed_kinds=("incident", "deploy"))
        with pytest.raises(ConfigError, match="at most 6"):
            db.configure(typed_kinds=tuple(f"k{i}" for i in range(7)))
        with pytest.raises(ConfigError, match="built-in"):
            db.configure(typed_kinds=("exchange",))
    with memdb.open(tmp_path / "k") as db:
        assert db.settings.typed_kinds == ("incident", "deploy")
        db.owner("ana").record("incident", "pager", outcome="partial")
        with pytest.raises(ValidationError):
            db.owner("ana").record("sprint", "s", outcome="success")


# --- 3. owner scoping ------------------------------------------------------------------------

owners = st.sampled_from(["ana", "bo", "cy"])
writes = st.lists(
    st.tuples(
        owners, st.sampled_from(["debug", "exchange", "sprint"]), st.sampled_from(["deploy", "Project X", "billing"]), st.integers(0, 3)
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes)
def test_no_owner_sees_another(tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, str, str, int]]) -> None:
    path = tmp_path_factory.mktemp("own")
    with memdb.open(path, clock=Clock(T0 + dt.timedelta(days=4)), map_size=1 << 20) as db:  # after every scripted day
        mine: dict[str, set[str]] = {"ana": set(), "bo": set(), "cy": set()}
        for owner, kind, tag, day in ops:
            outcome = None if kind == "exchange" else "success"
            ep = db.owner(owner).record(
                kind, f"{owner} did {tag}", outcome=outcome, tags=[tag], ts=T0 + dt.timedelta(days=day), session="s1"
            )
            mine[owner].add(ep.id)
        for owner, ids in mine.items():
            mem = db.owner(owner)
            seen = {e.id for e in mem.episodes()}
            assert seen == ids
            assert mem.count() == len(ids)
            assert all(e.owner == owner for e in mem.episodes())
            for other, other_ids in mine.items():
                if other == owner:
                    continue
                for oid in other_ids:
                    assert oid not in mem
                    with pytest.raises(NotFoundError) as info:
                        mem.get(oid)
                    # the error is the same as for an id that never existed: existence is private
                    assert other not in str(info.value)
                    with pytest.raises(NotFoundError):
                        mem.feedback(oid, 1.0)
                    with pytest.raises(NotFoundError):
                        mem.delete(oid, reason="probe")
        assert db.check().ok


# --- 4. gateway capture ----------------------------------------------------------------------


def test_exchange_digest_is_bounded_with_marker(edb: memdb.Database) -> None:
    edb.configure(digest_chars=200)
    mem = edb.owner("ana")
    ep = mem.record_exchange("conv_1", "Q" * 5000, "A" * 300)
    assert "Q" * 5000 not in ep.content
    assert "[truncated 5000 chars]" in ep.content and "[truncated 300 chars]" in ep.content
    user, assistant = ep.content.split("\nassistant: ")
    assert len(user.removeprefix("user: ")) <= 200 and len(assistant) <= 200
    assert ep.kind == "exchange" and ep.session == "conv_1" and ep.outcome is None
    assert len(mem.get(ep.id).summary) <= 500


def test_default_digest_cap_is_2000(edb: memdb.Database) -> None:
    ep = edb.owner("ana").record_exchange("c", "x" * 1999, "y" * 2001)
    assert "x" * 1999 in ep.content and "[truncated 2001 chars]" in ep.content


def test_tool_call_and_result(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    call = mem.record_tool_call("conv_1", "search", {"q": "deploy logs " * 400})
    assert call.kind == "tool_call" and call.tool == "search" and "[truncated" in call.content
    done = mem.record_tool_result(call.id, {"hits": 3, "top": "rollback runbook"})
    assert done.result is not None and "rollback runbook" in done.result
    assert mem.get(call.id).result == done.result
    ex = mem.record_exchange("conv_1", "hi", "hello")
    with pytest.raises(ValidationError, match="not a tool_call"):
        mem.record_tool_result(ex.id, "x")
    with pytest.raises(NotFoundError):
        edb.owner("bo").record_tool_result(call.id, "x")
    assert edb.check().ok


def test_a_second_result_for_a_call_is_refused(edb: memdb.Database) -> None:
    """A second result silently replaced the first: no version, no audit record, and a session
    closed as success kept saying so while its timeline showed the later error. Capture never
    overwrites: the same result again (delivered twice) writes nothing, another is refused naming
    the call, and a result recorded wrongly is corrected as any memory is, by a new version."""
    mem = edb.owner("ana")
    call = mem.record_tool_call("ops-1", "deploy", {"service": "billing", "notify": "ops@example.com"})
    done = mem.record_tool_result(call.id, {"status": "deployed", "by": "jane.doe@example.com"})
    audit = len(mem.audit())
    assert mem.record_tool_result(call.id, {"status": "deployed", "by": "jane.doe@example.com"}) == done  # its placeholder too
    with pytest.raises(ValidationError, match=rf"^tool result for {call.id}: the call has a result already") as refused:
        mem.record_tool_result(call.id, {"error": "rolled back: migration held a lock"})
    assert "corrected by superseding the call with its result" in str(refused.value)
    assert mem.peek(call.id).result == done.result and len(mem.audit()) == audit  # nothing written
    assert mem.recall(text="rolled back").found is False
    fixed = mem.supersede(call.id, reason="the gateway logged the wrong run", result='{"error": "rolled back"}')
    assert [v.result for v in mem.versions(call.id)] == [done.result, fixed.result]
    assert mem.audit()[-1]["action"] == "supersede" and mem.audit()[-1]["fields"] == ["result"]
    assert edb.check().ok


def test_import_keeps_timestamps_and_writes_one_audit(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    items = [{"kind": "exchange", "summary": f"turn {i}", "ts": T0 - dt.timedelta(days=30 - i), "session": "old"} for i in range(10)]
    report = mem.import_episodes(items, source="locomo:26")
    assert report.count == 10
    assert [mem.get(i).ts for i in report.ids] == [it["ts"] for it in items]
    audits = [a for a in mem.audit() if a["action"] == "import"]
    assert len(audits) == 1 and audits[0]["count"] == 10 and audits[0]["source"] == "locomo:26"


def test_import_is_all_or_nothing(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    items = [{"kind": "exchange", "summary": "ok"}, {"kind": "debug", "summary": "no outcome"}]
    with pytest.raises(ValidationError, match="import item 1"):
        mem.import_episodes(items, source="x")
    assert mem.count() == 0 and mem.audit() == []


# --- 5. PII -----------------------------------------------------------------------------------

PLANTED = {
    "email": "ana.lopez@example.com",
    "phone": "+1 (415) 555-0132",
    "card": "4111 1111 1111 1111",
    "iban": "GB82 WEST 1234 5698 7654 32",
    "ssn": "123-45-6789",
    "ip": "203.0.113.77",
    "key": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
}


def _lmdb_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.iterdir() if p.is_file())


@pytest.mark.lmdb_only(reason="reads LMDB's files (see test_planted_pii_never_reaches_the_server)")
def test_planted_pii_never_reaches_disk(tmp_path: Path) -> None:
    path = tmp_path / "pii"
    with memdb.open(path) as db:
        mem = db.owner("ana")
        text = " ".join(f"{k}: {v}" for k, v in PLANTED.items())
        ep = mem.record(
            "debug", f"mail {PLANTED['email']} failed", outcome="failure", content=text, lesson=f"call {PLANTED['phone']}",
            decisions={"contact": PLANTED["email"], "nested": [PLANTED["ssn"]]}, tags=["billing"],
        )  # fmt: skip
        mem.record_exchange("conv_9", f"my card is {PLANTED['card']}", f"noted, IBAN {PLANTED['iban']}")
        call = mem.record_tool_call("conv_9", "http", {"auth": f"Bearer {PLANTED['key']}", "ip": PLANTED["ip"]})
        mem.record_tool_result(call.id, f"ok from {PLANTED['ip']}")
        got = mem.get(ep.id)
        assert "<EMAIL_1>" in got.summary and got.decisions["contact"] == "<EMAIL_1>"  # consistent across fields
        db.store.sync()  # type: ignore[attr-defined]
    raw = _lmdb_bytes(path)
    for name, value in PLANTED.items():
        for form in {value, value.replace(" ", ""), value.encode().hex()}:
            assert form.encode() not in raw, f"{name} reached disk"
        assert value.encode("utf-16-le") not in raw


@pytest.mark.postgres_only(reason="reads the server's rows")
def test_planted_pii_never_reaches_the_server(pg_url: str) -> None:
    """The server-side twin of test_planted_pii_never_reaches_disk: no planted value in any row."""
    import psycopg

    name = unique_name()
    with memdb.open(pg_url, name=name) as db:
        mem = db.owner("ana")
        text = " ".join(f"{k}: {v}" for k, v in PLANTED.items())
        ep = mem.record("debug", f"mail {PLANTED['email']} failed", outcome="failure", content=text, tags=["billing"])
        mem.record_exchange("conv_9", f"my card is {PLANTED['card']}", f"noted, IBAN {PLANTED['iban']}")
        assert "<EMAIL_1>" in mem.get(ep.id).summary
    with psycopg.connect(pg_url, autocommit=True) as conn:
        raw = b"".join(k + v for k, v in conn.execute(f'SELECT k, v FROM "{name}_kv"').fetchall())
    assert raw
    for key, value in PLANTED.items():
        assert value.encode() not in raw, f"{key} reached the server"
    drop(pg_url, name)


class ExplodingSanitizer:
    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        raise RuntimeError("regex engine on fire")


class LossySanitizer:
    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return {}


@pytest.mark.lmdb_only(reason="reads LMDB's files, like test_planted_pii_never_reaches_disk")
@pytest.mark.parametrize("sanitizer", [ExplodingSanitizer(), LossySanitizer()])
def test_sanitizer_failure_drops_capture_fail_closed(tmp_path: Path, sanitizer: Any) -> None:
    path = tmp_path / "fc"
    secret = "zz-planted-9f8e7d-secret"
    with memdb.open(path, sanitizer=sanitizer) as db:
        mem = db.owner("ana")
        for attempt in (
            lambda: mem.record("debug", f"leak {secret}", outcome="failure"),
            lambda: mem.record_exchange("c1", f"leak {secret}", "r"),
            lambda: mem.import_episodes([{"kind": "exchange", "summary": secret}], source="x"),
        ):
            with pytest.raises(SanitizerError) as info:
                attempt()
            assert secret not in str(info.value)
        assert mem.count() == 0
        assert db.globals["EPN"].get(("ana", "dropped")) == 3
        assert db.globals["META"].get(("dropped_captures",)) == 3
    assert secret.encode() not in _lmdb_bytes(path)


def test_session_that_looks_like_pii_is_rejected(edb: memdb.Database) -> None:
    with pytest.raises(ValidationError, match="session looks like personal data"):
        edb.owner("ana").record_exchange("415-555-0132", "hi", "hello")


def test_custom_sanitizer_is_pluggable(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "c", sanitizer=RegexSanitizer(extra={"EMPLOYEE": r"EMP-\d{5}"})) as db:
        ep = db.owner("ana").record("exchange", "badge EMP-12345 used")
        assert ep.summary == "badge <EMPLOYEE_1> used"


def _luhn_complete(body: str) -> str:
    total = sum(d * 2 - 9 if d * 2 > 9 else d * 2 if i % 2 == 0 else d for i, d in enumerate(map(int, reversed(body))))
    return body + str((10 - total % 10) % 10)


@pytest.mark.lmdb_only(reason="reads LMDB's files, like test_planted_pii_never_reaches_disk (the capture path is the backend's too)")
@pytest.mark.parametrize("path", ["exchange", "tool_call", "tool_result", "record"])
def test_a_value_at_the_cut_is_sanitized_before_the_cut(tmp_path: Path, path: str) -> None:
    """Cutting first would keep half a value (``alice.longname@ex``) that no detector knows."""
    db_path = tmp_path / "cut"
    with memdb.open(db_path) as db:
        db.configure(digest_chars=200)
        mem = db.owner("ana")
        room = 200 - len(" …[truncated 999 chars]")
        for value in ("alice.longname@example.com", "4111 1111 1111 1111"):
            text = "x" * (room - 10) + f" {value} " + "tail " * 150  # the cut falls inside the value
            if path == "exchange":
                mem.record_exchange("c1", text, "ok")
            elif path == "tool_call":
                mem.record_tool_call("c1", "http", text)
            elif path == "tool_result":
                mem.record_tool_result(mem.record_tool_call("c1", "http", "q").id, text)
            else:
                mem.record("debug", "cut", outcome="failure", lesson=text)
    raw = _lmdb_bytes(db_path)
    for part in (b"alice.longname", b"4111 1111 1111 1", b"4111 1111"):
        assert part not in raw


def test_a_value_made_by_the_cut_is_sanitized_too(edb: memdb.Database) -> None:
    """20 digits are no card, but the first 16 of them pass Luhn: a cut that keeps exactly
    those 16 would store a card number."""
    edb.configure(digest_chars=200)
    card = _luhn_complete("411111111111111")
    room = 200 - len(" …[truncated 999 chars]")
    content = "see <EMAIL_1> " + "x" * (room - 31) + " " + card + "2468" + " tail" * 150
    assert edb.owner("ana").record("exchange", "probe", content="ok").content == "ok"
    ep = edb.owner("ana").record("exchange", "s", content=content)
    assert card not in ep.content and ep.content.split(" …[truncated")[0].endswith("<CARD_1>")
    assert edb.check().ok


def test_tool_result_numbers_after_the_calls_placeholders(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    call = mem.record_tool_call("c1", "lookup", {"email": "first@example.com"})
    done = mem.record_tool_result(call.id, {"other": "second@example.com"})
    assert "<EMAIL_1>" in done.content and "<EMAIL_2>" in done.result and "<EMAIL_1>" not in done.result


@pytest.mark.lmdb_only(reason="reads LMDB's files, like test_planted_pii_never_reaches_disk")
def test_decision_keys_and_large_ints_are_sanitized(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    card = 4111111111111111
    with memdb.open(path) as db:
        ep = db.owner("ana").record(
            "debug", "escalation", outcome="failure",
            decisions={"alice.keys@example.com": "contacted", "nested": {"+1 (415) 555-0199": [card, 42, 2026, True, None]}},
        )  # fmt: skip
        assert ep.decisions == {"<EMAIL_1>": "contacted", "nested": {"<PHONE_1>": ["<CARD_1>", 42, 2026, True, None]}}
        assert db.owner("ana").record("debug", "ints", outcome="success", decisions={"build": 12345678}).decisions == {"build": 12345678}
    raw = _lmdb_bytes(path)
    assert b"alice.keys" not in raw and b"555-0199" not in raw and b"4111111111111111" not in raw
    assert card.to_bytes(8, "big") not in raw  # nor as a msgpack integer


@pytest.mark.parametrize(
    ("decisions", "needle"),
    [
        ({"raw": b"bob@example.com"}, "decisions.raw: bytes is not stored"),
        ({"when": dt.datetime(2026, 1, 1)}, "decisions.when: a naive datetime"),
        ({"a": {"confidence": float("nan")}}, "decisions.a.confidence: NaN, not a finite number"),
        ({"a": {"confidence": float("-inf")}}, "decisions.a.confidence: an infinity, not a finite number"),
        ({"big": 1 << 70}, "decisions.big: an integer of 22 digits, beyond 64 bits"),
        ({"a": {1: "x"}}, "decisions.a key 1: keys must be str"),
        ({"a": {"x@example.com": 1, "X@EXAMPLE.COM": 2}}, "decisions.a: two keys read '<EMAIL_1>' once sanitized"),
        ({"s": {1, 2}}, "decisions.s: set is not stored"),
    ],
)
def test_decisions_the_store_cannot_keep_are_refused_naming_the_path(edb: memdb.Database, decisions: dict[str, Any], needle: str) -> None:
    """Named by the path, never the value: a date of birth, or digits that may be an account (a final read's find)."""
    with pytest.raises(ValidationError) as info:
        edb.owner("ana").record("debug", "s", outcome="failure", decisions=decisions)
    assert needle in str(info.value)
    assert "2026-01-01" not in str(info.value) and "1180591620717411303424" not in str(info.value)
    assert edb.owner("ana").count() == 0


@pytest.mark.lmdb_only(reason="reads LMDB's files, like test_planted_pii_never_reaches_disk")
@pytest.mark.parametrize("tag", ["4111_1111_1111_1111", "4111.1111.1111.1111", "123_45_6789", "ｃａｒｏｌ＠ｅｘａｍｐｌｅ．ｃｏｍ"])
def test_a_tag_that_normalises_into_pii_is_sanitized(tmp_path: Path, tag: str) -> None:
    """Normalising turns separators into "-" (a card's or an SSN's) and folds full-width forms."""
    path = tmp_path / "tags"
    with memdb.open(path) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "tagged", outcome="failure", tags=[tag, "billing"])
        assert ep.tags[0] in ("withheld-card", "withheld-ssn", "withheld-email") and mem.known_tags() == sorted(["billing", ep.tags[0]])
    raw = _lmdb_bytes(path)
    for shape in (b"4111-1111-1111-1111", b"123-45-6789", b"carolexample", b"4111_1111", b"123_45"):
        assert shape not in raw


@pytest.mark.lmdb_only(reason="reads LMDB's files, like test_planted_pii_never_reaches_disk")
def test_unicode_forms_of_pii_never_reach_disk(tmp_path: Path) -> None:
    path = tmp_path / "uni"
    values = [
        "４１１１ １１１１ １１１１ １１１１",
        "ｅｖｅ＠ｅｘａｍｐｌｅ．ｃｏｍ",
        "jörg@bücher.de",
        "١٢٣-٤٥-٦٧٨٩",
        "gb82 west 1234 5698 7654 32",
    ]
    with memdb.open(path) as db:
        mem = db.owner("ana")
        for v in values:
            assert v not in mem.record("debug", f"customer gave {v} today", outcome="failure").summary
    raw = _lmdb_bytes(path)
    assert not [v for v in values if v.encode() in raw]


def test_timestamps_before_year_1000_are_refused(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    # the time as a caller writes one, not Python's repr of it (an MCP probe's find)
    with pytest.raises(ValidationError, match=r"ts=0999-12-31T00:00:00\+00:00: year 999 \(UTC\): episodes start in year 1000"):
        mem.record("debug", "ancient", outcome="failure", ts=dt.datetime(999, 12, 31, tzinfo=UTC))
    old = mem.record("debug", "ancient scroll", outcome="failure", ts=dt.datetime(1000, 1, 1, tzinfo=UTC))
    assert old.id.startswith("10000101T") and mem.get(old.id).ts == dt.datetime(1000, 1, 1, tzinfo=UTC)
    assert [m.episode.id for m in mem.recall(text="scroll")] == [old.id]
    assert edb.check().ok


def test_a_timestamp_before_the_first_utc_instant_is_refused_naming_it(edb: memdb.Database) -> None:
    with pytest.raises(ValidationError, match=r"ts=.*: outside the years 1-9999 once in UTC"):
        edb.owner("ana").record("debug", "s", outcome="failure", ts=dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=14))))


def test_owner_and_tag_sizes_keep_every_index_key_within_lmdb(edb: memdb.Database) -> None:
    wide = "\U00020000"  # 4 bytes in UTF-8
    with pytest.raises(ValidationError, match="256 bytes in UTF-8, more than 128"):
        edb.owner(wide * 64)
    with pytest.raises(ValidationError, match="more than 128"):
        edb.owner("ana").record("debug", "s", outcome="failure", tags=[wide * 64])
    mem = edb.owner(wide * 32)  # the largest owner, with the largest tag
    ep = mem.record("debug", "s", outcome="failure", tags=[wide * 32], session="s" * 128)
    assert mem.recall(tags=[wide * 32]).memories[0].episode.id == ep.id
    assert edb.check().ok


def test_one_owner_name_typed_composed_or_decomposed_is_one_owner(edb: memdb.Database) -> None:
    composed, decomposed = "Jos\u00e9", "Jose\u0301"
    ep = edb.owner(decomposed).record("debug", "s", outcome="failure")
    assert edb.owner(composed).get(ep.id).owner == composed
    assert edb.owners() == [composed]


@pytest.mark.parametrize("name", ["ana\u200b", "ana\u202egnp.exe", "ana\u2028x", "ana\x85x", "ana\tb", "ana\u00a0b"])
def test_an_owner_name_with_an_invisible_character_is_refused(edb: memdb.Database, name: str) -> None:
    with pytest.raises(ValidationError, match=r"invisible or control character|printable"):
        edb.owner(name)


def test_an_owner_stored_before_names_were_normalised_stays_reachable(edb: memdb.Database) -> None:
    from memdb.memory.episodes import OwnerEpisodes

    for legacy in ("Jose\u0301", "ana\u200b"):  # as a database written before the rule holds them
        OwnerEpisodes(edb.episodes, legacy).record("debug", f"kept by {legacy!r}", outcome="failure")
        assert edb.owner(legacy).name == legacy
        assert edb.owner(legacy).count() == 1
    assert edb.owner("Jos\u00e9").count() == 0  # a new name in NFC is another owner
    with pytest.raises(ValidationError):
        edb.owner("bob\u200b")


@pytest.mark.parametrize("outcome", [" success ", "success\n", "Success"])
def test_an_outcome_is_exact_not_trimmed(edb: memdb.Database, outcome: str) -> None:
    with pytest.raises(ValidationError, match="outcome="):
        edb.owner("ana").record("debug", "s", outcome=outcome)


def test_ids_reveal_nothing_of_other_owners(edb: memdb.Database) -> None:
    ana, bob = edb.owner("ana"), edb.owner("bob")
    first = ana.record("exchange", "one")
    for i in range(7):
        bob.record("exchange", f"bob {i}")
    second = ana.record("exchange", "two")
    assert int(second.id[-6:], 16) - int(first.id[-6:], 16) == 1


# --- 6. indexes -------------------------------------------------------------------------------


def test_indexes_written_with_record(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    ep = mem.record("debug", "deploy broke", outcome="failure", tags=["project-x"], session="s9")
    g = edb.globals
    assert [s[-1] for s, _ in g["EPG"].items(("ana", "project-x"))] == [ep.id]
    assert [s[-1] for s, _ in g["EPK"].items(("ana", "debug", "failure"))] == [ep.id]
    assert [s[-1] for s, _ in g["EPGO"].items(("ana", "project-x", "failure"))] == [ep.id]
    chat = mem.record("exchange", "just talk", tags=["project-x"])
    assert chat.id not in {s[-1] for s, _ in g["EPGO"].items(("ana",))}  # no outcome, no tag+outcome entry
    assert [s[-1] for s, _ in g["EPS"].items(("ana", "s9"))] == [ep.id]
    # the stem of "deploy" (Snowball), once in three terms: tf and length in TF_UNITs (thirds)
    assert edb.episodes.layout.text.hits_of("ana", ["deploy"], [ep.id]) == [{"deploy": (3, 9)}]
    assert edb.check().ok


def test_encoded_parent_cache_empties_at_its_bound_and_never_goes_stale(edb: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Capture reuses encoded index parents; past the bound the cache starts over, and what
    is written stays exactly what the records say, in a batch and one by one, for two owners."""
    import memdb.memory.layout as layout_module

    monkeypatch.setattr(layout_module, "_PARENT_KEYS_KEPT", 5)
    ana, bo = edb.owner("ana"), edb.owner("bo")
    with edb.transaction():
        for i in range(12):
            ana.record("debug", f"step {i} of rollout{i % 4}", outcome="success", tags=[f"t{i % 5}", "shared"], session=f"s{i % 3}")
    for i in range(6):
        bo.record("exchange", f"talk about rollout{i % 2}", tags=[f"t{i}", "shared", "s1"], session=f"s{i % 3}")  # tag s1 = session s1
    assert len(edb.episodes.layout._parent_keys) <= 5
    assert edb.check().ok
    assert len(list(edb.globals["EPG"].items(("bo", "shared")))) == 6 and len(list(edb.globals["EPG"].items(("ana", "shared")))) == 12
    held = [e.id for e in bo.episodes()]
    found = edb.episodes.layout.text.hits_of("bo", ["rollout1"], held)
    assert {eid for eid, hits in zip(held, found, strict=True) if hits} == {e.id for e in bo.episodes() if "rollout1" in e.summary}


def test_a_record_refused_at_its_write_leaves_no_counts_behind(edb: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record whose keys are refused when written (here an index key over a lowered key
    limit) inside a caller's transaction changes no statistic or document frequency: they are
    deferred only after the write, so the batch around it commits consistent."""
    mem = edb.owner("ana")
    long_tag = "t" * 64
    with edb.transaction():
        first = mem.record("debug", "alpha beta", outcome="success", tags=["x"])
        limit = len(edb.globals["EPGO"].key(("ana", long_tag, "success"))) + 4  # room for that parent, not its (ts, id)
        with monkeypatch.context() as patch:
            patch.setattr(codec, "MAX_KEY_BYTES", limit)
            with pytest.raises(KeyTooLongError):
                mem.record("debug", "gamma delta alpha", outcome="success", tags=[long_tag])
        last = mem.record("debug", "alpha epsilon", outcome="failure", tags=["x"])
    assert [e.id for e in mem.episodes()] == [first.id, last.id]
    assert edb.check().ok
    df = edb.globals["EPDF"]
    assert (df.get(("ana", "alpha")), df.get(("ana", "gamma"))) == (2, None)
    assert edb.globals["EPN"].get(("ana", "episodes")) == 2


def test_a_failed_record_in_a_batch_leaves_the_batch_whole(edb: memdb.Database) -> None:
    """Capture writes only after its checks, so a record refused inside a caller's
    transaction has written nothing and the rest of the batch commits."""
    mem = edb.owner("ana")
    with edb.transaction():
        first = mem.record("debug", "before", outcome="success", tags=["x"])
        with pytest.raises(ValidationError, match="outcome"):
            mem.record("debug", "refused", outcome="mostly worked", tags=["x"])
        last = mem.record("debug", "after", outcome="failure", tags=["x"])
    assert [e.id for e in mem.episodes()] == [first.id, last.id]
    assert mem.count() == 2 and edb.check().ok


def test_check_reports_nodes_written_by_hand_into_memdbs_globals(edb: memdb.Database) -> None:
    """What the README's globals example would do to ^MEM on a database with episodes: check
    says so instead of failing on a node of another shape."""
    edb.owner("ana").record("debug", "deploy failed", outcome="failure")
    edb.globals["MEM"]["copy", "conv_123", "summary"] = "User asked about..."
    edb.globals["MEM"].increment(("counter",), 1)
    edb.globals["EPST"]["x"] = 1
    problems = edb.check().problems
    assert "^MEM('copy', 'conv_123', 'summary'): not an episode record (^MEM holds (owner, day, id) = record)" in problems
    assert "^MEM('counter',): not an episode record (^MEM holds (owner, day, id) = record)" in problems
    assert "^EPST('x',): not an episode state (^EPST holds (owner, id) = state)" in problems


def test_check_detects_drift(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    ep = mem.record("debug", "deploy broke", outcome="failure", tags=["project-x"])
    edb.globals["EPG"].kill(("ana", "project-x"))
    edb.globals["EPX"].set(("ana", "ghost", ep.id), [1, 1])
    problems = edb.check().problems
    assert any("missing index entry" in p and "project-x" in p for p in problems)
    assert any("ghost" in p for p in problems)


@given(st.datetimes(min_value=dt.datetime(1000, 1, 1), max_value=dt.datetime(9999, 12, 31), timezones=st.just(dt.UTC)))
def test_id_tail_is_the_encoded_time_and_id(ts: dt.datetime) -> None:
    """The query layer rebuilds an index tail from an id alone; it must equal what capture wrote."""
    eid = new_id(ts)
    tail = id_tail(eid.encode("ascii"))
    assert tail == codec.encode((ts_micros(ts), eid)) == tail_at(ts_micros(ts), eid.encode("ascii"))
    assert column_tail(ts_micros(ts), int(eid[-6:], 16)) == tail  # what a text match's column makes
    assert tail_id(tail) == eid and tail_ts(tail) == ts_micros(ts)


@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31), timezones=st.just(dt.UTC)))
def test_time_prefix_at_is_the_time_prefix_of_the_moment(ts: dt.datetime) -> None:
    """A text match's id is made from its column's microseconds without a datetime; it must be
    the id capture made (before the epoch too, where the day and the time of day are floored)."""
    assert time_prefix_at(ts_micros(ts)) == time_prefix(ts)


def test_index_values_carry_the_document_number_and_outcome(edb: memdb.Database) -> None:
    """An index entry holds its episode's document number and outcome; with the level of that
    document's level chunk it makes the episode's index code, which check() verifies."""
    mem = edb.owner("ana")
    mem.record("debug", "first", outcome="success")
    ep = mem.record("debug", "deploy broke", outcome="failure", tags=["project-x"])
    code = index_code(ep.relevance, "failure")
    assert code & 3 == 3 and code >> 2 == relevance_level(ep.relevance) == int(ep.relevance * LEVELS_PER_POINT)
    doc = edb.globals["EPDN"][("ana", ep.id)]
    assert doc == 1
    assert [v for _, v in edb.globals["EPG"].items(("ana", "project-x"))] == [entry_of(doc, "failure")] == [doc << 2 | 3]
    levels = edb.episodes.layout.text.levels_of("ana")
    assert entry_code(entry_value(doc, "failure"), levels) == code
    key = next(iter(edb.globals["EPT"].keys(("ana",), reverse=True)))
    edb.globals["EPT"].set(key, entry_of(doc, "failure") ^ 3)
    assert any("EPT" in p and f"expected {entry_of(doc, 'failure')}" in p for p in edb.check().problems)


@pytest.mark.parametrize("damaged", [b"\xa1x", b"\xcd\x01\x00", b"\xc0", b"\xcf\x00\x00\x00\x00", entry_value(5, None)])
def test_a_damaged_index_value_raises_a_clear_error(damaged: bytes) -> None:
    """A value that is no entry (a string, another width, nil), or one naming a document that
    has no level, raises CorruptValueError, never a wrong code: alone, and in a range (C reads
    ranges of more than a few, the twin the others)."""
    with pytest.raises(CorruptValueError, match="index entry"):
        entry_code(damaged, bytes(3))
    for before in (1, 20):
        with pytest.raises(CorruptValueError, match="index entry"):
            entry_codes([entry_value(1, None)] * before + [damaged], bytes(3))


@given(
    st.lists(st.tuples(st.integers(0, 2_999), st.sampled_from([None, "success", "partial", "failure"])), max_size=40),
    st.binary(min_size=3_000, max_size=3_000),
)
def test_entry_codes_are_each_entry_s_level_and_outcome(entries: list[tuple[int, str | None]], levels: bytes) -> None:
    """C and the twin make the same codes: the document's level and the entry's outcome."""
    values = [entry_value(doc, outcome) for doc, outcome in entries]
    want = [levels[doc] << 2 | ("success", "partial", "failure").index(o) + 1 if o else levels[doc] << 2 for doc, o in entries]
    assert entry_codes(values, levels) == [entry_code(v, levels) for v in values] == want
    assert [codec.unpack_value(v) for v in values] == [entry_of(doc, o) for doc, o in entries]  # what any msgpack reader sees


def test_document_numbers_stop_at_the_entry_format_s_limit() -> None:
    with pytest.raises(StoreFullError, match="at most 1,073,741,824 documents"):
        entry_value(MAX_DOCS, None)
    assert codec.unpack_value(entry_value(MAX_DOCS - 1, "failure")) == (MAX_DOCS - 1) << 2 | 3


def test_a_level_change_rewrites_no_index_entry(edb: memdb.Database) -> None:
    """Relevance moves the level of the episode's text document and its band entry; every
    other index entry holds the document number, so it stays as it was."""
    mem = edb.owner("ana")
    ep = mem.record("debug", "deploy broke", outcome="failure", tags=["project-x", "deploy"], session="s1")
    g = edb.globals

    def entries() -> dict[str, list[tuple[Any, Any]]]:
        return {name: list(g[name].items(("ana",))) for name in ("EPT", "EPG", "EPGO", "EPK", "EPS", "EPTD")}

    before = entries()
    old_band = int(ep.relevance)
    after = mem.feedback(ep.id, -1.0 if old_band > 0 else 1.0)
    assert int(after.relevance) != old_band  # the test needs a band move (hence a level move too)
    assert entries() == before
    assert [s[1] for s, _ in g["EPB"].items(("ana",))] == [int(after.relevance)]
    assert edb.check().ok
    levels = edb.episodes.layout.text.levels_of("ana")
    assert {entry_code(entry_value(v >> 2, "failure"), levels) for _, v in g["EPG"].items(("ana",))} == {
        index_code(after.relevance, "failure")
    }
    assert [m.id for m in mem.recall(tags=["deploy"], outcome="failure")] == [ep.id]


def test_upgrade_layout_rewrites_a_layout_1_database(tmp_path: Path, clock: Clock) -> None:
    """A database written before index entries carried codes (their value was "") is brought
    to the current layout when opened, and answers queries the same."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        for i in range(7):
            mem.record("debug", f"deploy broke {i}", outcome=("failure", "success")[i % 2], tags=["project-x"], session="s1")
        g = db.globals
        with db.transaction():
            for name in ("EPT", "EPG", "EPK", "EPS", "EPB"):
                for subs in list(g[name].keys()):
                    g[name].set(subs, "")
            g["EPGO"].kill()  # layout 3 had no tag+outcome index
            g["META"].kill(("layout",))
        assert not db.check().ok
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok
        assert db.globals["META"].get(("layout",)) == LAYOUT
        assert db.owner("ana").recall(tags=["project-x"], outcome="failure", limit=10).total == 4
        assert db.episodes.upgrade_layout() == 0


def test_upgrade_layout_rebuilds_postings_of_an_older_stemmer(tmp_path: Path, clock: Clock) -> None:
    """Layout 8 stems with Snowball ("deployment" -> "deploy"); a layout-7 database indexed Porter's
    step 1 alone ("deploy" -> "deploi", "deployment" kept whole), and opening it rebuilds the
    postings so "deploy" finds the deployment again."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "the deployment failed", outcome="failure")
        mem.record("debug", "nothing relevant", outcome="success")
        g = db.globals
        with db.transaction():
            ((first, block),) = [(subs[-1], v) for subs, v in g["EPX"].items(("ana", "deploy"))]
            g["EPX"].set(("ana", "deployment", first), block)
            g["EPX"].kill(("ana", "deploy"))
            g["EPDF"].set(("ana", "deployment"), 1)
            g["EPDF"].kill(("ana", "deploy"))
            g["META"].set(("layout",), 7)
        assert not db.check().ok
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert [m.episode.id for m in db.owner("ana").recall(text="deploy")] == [ep.id]


def test_upgrade_layout_rebuilds_postings_split_at_combining_marks(tmp_path: Path, clock: Clock) -> None:
    """Layout 7 keeps a word's combining marks in it; a layout-6 database split "किताब" at its
    vowel signs and dropped the one-letter pieces, and opening it rebuilds the postings."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "किताब खो गई", outcome="failure")
        g = db.globals
        with db.transaction():
            for term in ("किताब", "खो", "गई"):
                g["EPX"].kill(("ana", term))
                g["EPDF"].kill(("ana", term))
            doc = g["EPDN"][("ana", ep.id)]  # what layout 6 made of it: "कत", "ख", "गई" -> one term
            g["EPX"].set(("ana", "गई", doc), encode_block([doc], [1], 1))
            g["EPDF"].set(("ana", "गई"), 1)
            g["EPN"].set(("ana", "terms"), 1)
            g["META"].set(("layout",), 6)
        assert not db.check().ok
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert [m.episode.id for m in db.owner("ana").recall(text="किताब")] == [ep.id]


def test_upgrade_layout_indexes_han_characters_thai_and_korean_words(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layout 25 indexes a run's Han characters beside its bigrams, Thai by bigrams, one-syllable
    Korean words, and reads the told windows of Chinese dates; a layout-24 database held none of
    them, and opening it rebuilds the index and the told windows from the records."""
    from memdb.memory import text as text_module
    from memdb.memory import timephrase

    with monkeypatch.context() as old_code:  # as layout 24 read a record
        runs = text_module._runs  # layout 24 read Chinese and Japanese runs alone, without unigrams
        old_code.setattr(text_module, "_runs", lambda words, unigrams, *_: runs(words, False, text_module._CJK_RUN))
        old_code.setattr(text_module, "_index_term", text_module._term)
        old_code.setattr(timephrase, "_CJK_HINT", re.compile("(?!)"))
        with memdb.open(tmp_path / "old", clock=clock) as db:
            mem = db.owner("ana")
            lock = mem.record("debug", "昨天数据库被锁了", outcome="failure")
            thai = mem.record("debug", "เซิร์ฟเวอร์ล่มเพราะฐานข้อมูลเต็ม", outcome="failure")
            money = mem.record("debug", "고객이 돈 환불 요청", outcome="partial")
            assert not mem.recall(text="锁").found and not mem.recall(text="ล่ม").found
            db.globals["META"].set(("layout",), 24)
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        mem = db.owner("ana")
        assert [m.episode.id for m in mem.recall(text="锁")] == [lock.id]
        assert [m.episode.id for m in mem.recall(text="ล่ม")] == [thai.id]
        assert [m.episode.id for m in mem.recall(text="돈")] == [money.id]
        yesterday = lock.ts - dt.timedelta(days=1)
        assert [m.id for m in mem.ask(f"{yesterday.month}月{yesterday.day}日发生了什么？", now=lock.ts)] == [lock.id]


def test_upgrade_layout_refines_quarter_point_codes(tmp_path: Path, clock: Clock) -> None:
    """Layout 5 kept relevance in index codes to a quarter point; opening such a database
    rewrites every code to the current level (1/25 of a point)."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        eps = [mem.record("debug", f"deploy {i}", outcome="failure", tags=["x"]) for i in range(3)]
        mem.feedback(eps[0].id, 1.0)
        g = db.globals
        with db.transaction():
            for name in ("EPT", "EPG", "EPGO", "EPK", "EPS", "EPB"):
                for subs, code in list(g[name].items()):
                    g[name].set(subs, (code >> 2) * 4 // LEVELS_PER_POINT << 2 | code & 3)
            g["META"].set(("layout",), 5)
        assert not db.check().ok
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        headers = {e.id: db.owner("ana").peek(e.id).relevance for e in eps}
        levels = db.episodes.layout.text.levels_of("ana")
        codes = {levels[v >> 2] << 2 | v & 3 for _, v in db.globals["EPG"].items(("ana",))}
        assert codes == {index_code(r, "failure") for r in headers.values()}


def test_upgrade_layout_rebuilds_layout_10_columns_with_their_level_chunks(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """Layout 11 keeps the text columns' relevance levels in level chunks of their own; a layout-10
    database held the whole index code in each column record, and opening it rebuilds the text
    index (reporting progress) into the chunks capture writes now, finding the same. A rerun
    after an interruption (layout not yet recorded) rebuilds them to the same bytes."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        eps = [mem.record("debug", f"deploy broke {i}", outcome=("failure", "success")[i % 2], tags=["project-x"]) for i in range(9)]
        mem.feedback(eps[0].id, 1.0)
        mem.feedback(eps[1].id, -1.0)
        want = sorted(m.episode.id for m in mem.recall(text="deploy", outcome="failure"))
        db.flush()  # the accesses counted, in the current layout
        g = db.globals
        new_chunks = dict(g["EPC"].items(("ana",)))
        new_levels = dict(g["EPL"].items(("ana",)))
        assert len(new_chunks) == 1 and new_levels.keys() == new_chunks.keys()
        with db.transaction():
            for subs, records in new_chunks.items():  # what layout 10 wrote: the code in the record
                old = bytearray(records)
                for i, level in enumerate(new_levels[subs]):
                    old[i * 20 + 16] |= level << 2 & 0xFF
                    old[i * 20 + 17] = level >> 6
                g["EPC"].set(subs, bytes(old))
            g["EPL"].kill()
            g["EPLV"].kill()
            g["META"].set(("layout",), 10)
        assert not db.check().ok
    with caplog.at_level(logging.INFO, logger="memdb"), memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert dict(db.globals["EPC"].items(("ana",))) == new_chunks and dict(db.globals["EPL"].items(("ana",))) == new_levels
        assert sorted(m.episode.id for m in db.owner("ana").recall(text="deploy", outcome="failure")) == want
        db.flush()
        split = dict(db.globals["EPL"].items(("ana",)))
        db.globals["META"].set(("layout",), 10)
    assert any("layout upgrade" in r.getMessage() and "episodes rewritten" in r.getMessage() for r in caplog.records)
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert dict(db.globals["EPL"].items(("ana",))) == split


@pytest.mark.lmdb_only(
    reason="reads the refused database's bytes with a bare LMDB store; the refusal itself is backend-blind (migrate.upgrade)"
)
def test_a_database_of_a_newer_layout_is_refused_untouched(tmp_path: Path, clock: Clock) -> None:
    """Opening a database that a newer memdb wrote raises ConfigError naming both layouts and
    changes nothing (an "upgrade" would rewrite its indexes into this code's format); the store
    is closed, so the path opens again once the layout fits."""
    with memdb.open(tmp_path / "db", clock=clock) as db:
        ep = db.owner("ana").record("debug", "deploy broke", outcome="failure", tags=["x"])
        db.globals["META"].set(("layout",), LAYOUT + 1)
        before = {name: dict(db.globals[name].items()) for name in ("EPT", "EPG", "EPST", "META")}
    with pytest.raises(ConfigError, match=f"database layout {LAYOUT + 1}: written by a newer memdb.*up to {LAYOUT}"):
        memdb.open(tmp_path / "db", clock=clock)
    store = LMDBStore(tmp_path / "db")
    try:
        g = Globals(store)
        assert {name: dict(g[name].items()) for name in before} == before
        g["META"].set(("layout",), LAYOUT)
    finally:
        store.close()
    with memdb.open(tmp_path / "db", clock=clock) as db:
        assert db.check().ok and [e.id for e in db.owner("ana").episodes()] == [ep.id]


def test_one_process_upgrades_while_the_others_wait(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade is claimed in the database before it starts and renewed by each of its
    transactions: a second opener waits instead of dropping and rebuilding the same postings
    (two at once indexed every document twice). A claim that lapses passes to another process,
    and the first then writes nothing more."""
    from memdb.errors import StoreBusyError
    from memdb.memory import migrate

    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.owner("ana").record("debug", "deploy broke", outcome="failure")
        db.globals["META"].set(("layout",), LAYOUT - 1)
        layer = db.episodes
        assert migrate._claim(layer, "a") == (True, LAYOUT - 1)
        assert migrate._claim(layer, "b") == (False, LAYOUT - 1)  # a's claim holds: b waits
        assert migrate._claim(layer, "a") == (True, LAYOUT - 1)  # (its own: taken again)
        lapsed = migrate.time.time() + migrate.CLAIM_SECONDS + 1
        monkeypatch.setattr(migrate.time, "time", lambda: lapsed)
        assert migrate._claim(layer, "b") == (True, LAYOUT - 1)  # a stopped renewing: b takes over
        with pytest.raises(StoreBusyError, match="claim lapsed and b took it over"), db.transaction():
            db.globals["X"].set(("written",), 1)
            migrate._renew(layer, "a")
        assert db.globals["X"].get(("written",)) is None  # a's transaction wrote nothing
        monkeypatch.undo()
        # a holder on this host whose process is gone (killed while upgrading) is waited for by no one
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
        db.globals["META"].set(("upgrading",), {"holder": f"{socket.gethostname()}:{dead.stdout.strip()}:x", "until": 1e12})
        assert migrate._claim(layer, "c") == (True, LAYOUT - 1)
        db.globals["META"].kill(("upgrading",))


def test_an_upgrade_that_fails_gives_its_claim_up(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade interrupted (an exception, ^C) held its claim until it lapsed: the next open,
    even in the same process, waited two minutes."""
    from memdb.memory import migrate

    with memdb.open(tmp_path / "db", clock=clock) as db:
        db.owner("ana").record("debug", "deploy broke", outcome="failure")
        db.globals["META"].set(("layout",), LAYOUT - 1)

    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(migrate, "_upgrade", interrupted)
        with pytest.raises(KeyboardInterrupt):
            memdb.open(tmp_path / "db", clock=clock)
    with memdb.open(tmp_path / "db", clock=clock) as db:  # at once: no claim to wait for
        assert db.globals["META"].get(("layout",)) == LAYOUT and db.globals["META"].get(("upgrading",)) is None
        assert db.check().ok


@pytest.mark.slow
@pytest.mark.lmdb_only(reason="the children open the path on LMDB; the claim is backend-blind (the test above)")
def test_two_processes_opening_an_old_database_at_once_upgrade_it_once(tmp_path: Path) -> None:
    """Two processes opening a database of an older layout at the same moment: one upgrades, the
    other waits for it, and every index is as one upgrade leaves it (a probe found 33,003
    problems in ``check()`` and recall answering an episode twice)."""
    import subprocess
    import sys

    owners = ("ana", "bo", "cy", "di")
    with memdb.open(tmp_path / "db") as db:
        for name in owners:  # each owner's rebuild is two transactions or more: room to interleave
            db.owner(name).import_episodes(
                [{"kind": "debug", "summary": f"pgbouncer pool {i} exhausted on web-{i % 7}", "outcome": "failure"} for i in range(800)],
                source="test",
            )
        db.globals["META"].set(("layout",), 25)  # an upgrade that rebuilds the text index (migrate._STEPS)
    go = tmp_path / "go"
    child = (
        "import os, sys, time, memdb\n"
        "print('ready', flush=True)\n"
        "while not os.path.exists(sys.argv[2]): time.sleep(0.001)\n"  # both open at the same moment
        "memdb.open(sys.argv[1]).close()"
    )
    opens = [subprocess.Popen([sys.executable, "-c", child, str(tmp_path / "db"), str(go)], stdout=subprocess.PIPE) for _ in range(2)]
    assert [p.stdout.readline() for p in opens if p.stdout is not None] == [b"ready\n", b"ready\n"]
    go.touch()
    assert [p.wait(timeout=300) for p in opens] == [0, 0]
    with memdb.open(tmp_path / "db") as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert db.globals["META"].get(("upgrading",)) is None
        for name in owners:
            r = db.owner(name).recall(text="pgbouncer", limit=20)
            assert r.total == 800 and len({m.id for m in r}) == 20


def test_upgrade_layout_puts_document_numbers_in_the_index_entries(tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    """Layout 12's index entries hold the episode's document number and outcome; a layout-11
    database held its index code (level and outcome) in each, and opening it rewrites every
    entry once (reporting progress) to its episode's document number in the rebuilt text index
    (``check()`` verifies each; a tool call whose result gave it a second document number among
    them, numbered anew), answering the same."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        eps = [
            mem.record("debug", f"deploy broke {i}", outcome=("failure", "success")[i % 2], tags=["project-x"], session="s1")
            for i in range(9)
        ]
        call = mem.record_tool_call(session="s1", tool="search", input={"q": "deploy"})
        mem.record_tool_result(call.id, result={"hits": 3})  # its second document number
        mem.feedback(eps[0].id, 1.0)
        questions = [dict(tags=["project-x"], limit=20), dict(text="deploy", outcome="failure"), dict(session="s1", limit=20)]
        want = [sorted(m.episode.id for m in mem.recall(**q)) for q in questions]  # type: ignore[arg-type]
        db.flush()
        g = db.globals
        current = {name: dict(g[name].items(("ana",))) for name in ("EPT", "EPG", "EPGO", "EPK", "EPS", "EPB")}
        levels = db.episodes.layout.text.levels_of("ana")
        with db.transaction():  # what layout 11 wrote: the index code itself
            for name, entries in current.items():
                for subs, v in entries.items():
                    g[name].set(subs, levels[v >> 2] << 2 | v & 3)
            g["META"].set(("layout",), 11)
        assert not db.check().ok
    with caplog.at_level(logging.INFO, logger="memdb"), memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        numbers = {str(subs[1]): doc for subs, doc in db.globals["EPDN"].items(("ana",))}
        assert sorted(numbers.values()) == list(range(len(eps) + 1))  # numbered anew, densely
        for name, entries in current.items():
            assert {subs: v >> 2 for subs, v in db.globals[name].items(("ana",))} == {subs: numbers[str(subs[-1])] for subs in entries}
        mem = db.owner("ana")
        assert [sorted(m.episode.id for m in mem.recall(**q)) for q in questions] == want  # type: ignore[arg-type]
    assert any("layout upgrade" in r.getMessage() and "episodes rewritten" in r.getMessage() for r in caplog.records)


def test_upgrade_layout_weighs_the_fields_of_a_layout_12_database(tmp_path: Path, clock: Clock) -> None:
    """Layout 13 counts a posting's tf in thirds of an occurrence, an exchange's context at two
    thirds of one; a layout-12 database counted every occurrence as 1, and opening it rebuilds the
    text index from the records, so the turn that says a word ranks above the one that quotes it."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        quoted = mem.record("exchange", "lovely week", content="> pottery class")
        said = mem.record("exchange", "pottery class", content="> lovely week")
        g = db.globals
        with db.transaction():  # the blocks as layout 12 wrote them: each occurrence 1, in any field
            for subs, block in list(g["EPX"].items(("ana",))):
                docs, tfs = decode_block(block)
                assert set(tfs) <= {3, 2}  # (each word stands once in one field here)
                g["EPX"].set(subs, encode_block(docs, [1] * len(docs), 2))
            g["META"].set(("layout",), 12)
        assert not db.check().ok
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        hits = db.episodes.layout.text.hits_of("ana", ["potteri"], [said.id, quoted.id])
        assert [h["potteri"][0] for h in hits] == [3, 2]  # one occurrence in the turn, one in the context
        assert [m.episode.id for m in db.owner("ana").recall(text="pottery")] == [said.id, quoted.id]


def _index_as_an_older_layout(db: memdb.Database, eid: str, term: str, dl: int, layout: int) -> None:
    """Give owner "ana"'s episode ``eid`` the posting of ``term`` an older layout wrote, and mark
    the database as of that layout: opening it again must upgrade it."""
    g = db.globals
    with db.transaction():
        doc = int(g["EPDN"][("ana", eid)])
        g["EPX"].set(("ana", term, doc), encode_block([doc], [3], dl))
        g["META"].set(("layout",), layout)


def test_upgrade_layout_drops_the_won_of_a_layout_13_wont(tmp_path: Path, clock: Clock) -> None:
    """Layout 14 drops a negated auxiliary whole; layout 13 split "won't" at its apostrophe into
    the term "won", so a search for what was won found what won't be. Opening such a database
    rebuilds its text index from the records."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        wont = mem.record("debug", "The build won't start", outcome="failure")
        won = mem.record("review", "We won the Acme deal", outcome="success")
        _index_as_an_older_layout(db, wont.id, "won", 9, 13)  # "won" as layout 13 indexed it: in both
        assert not db.check().ok
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert [m.episode.id for m in db.owner("ana").recall(text="won")] == [won.id]


def test_upgrade_layout_stems_a_layout_14_fly(tmp_path: Path, clock: Clock) -> None:
    """Layout 15 stems three-letter words ending in "y": layout 14 kept "fly" whole, where
    "flying" was "fli", so "when did I fly?" missed "I'm flying". The upgrade rebuilds the terms."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        flew = mem.record("routine", "We fly to Lisbon on the red-eye", outcome="success")
        _index_as_an_older_layout(db, flew.id, "fly", 15, 14)  # "fly" as layout 14 indexed it
        assert not db.check().ok
    with memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and db.globals["META"].get(("layout",)) == LAYOUT
        assert [m.episode.id for m in db.owner("ana").recall(text="flying")] == [flew.id]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["add", "add", "delete", "feedback", "result"]), owners, st.integers(0, 50)), max_size=25))
def test_indexes_agree_after_random_writes_and_deletes(tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, str, int]]) -> None:
    with memdb.open(tmp_path_factory.mktemp("idx"), clock=Clock(T0), map_size=1 << 20) as db:
        ids: dict[str, list[str]] = {"ana": [], "bo": [], "cy": []}
        calls: dict[str, list[str]] = {"ana": [], "bo": [], "cy": []}
        for op, owner, n in ops:
            mem = db.owner(owner)
            if op == "add":
                if n % 3 == 0:
                    ep = mem.record_tool_call(f"s{n % 4}", "search", {"q": f"term{n}"})
                    calls[owner].append(ep.id)
                else:
                    ep = mem.record("debug", f"word{n} deploy", outcome="partial", tags=[f"t{n % 3}", "shared"], session=f"s{n % 4}")
                ids[owner].append(ep.id)
            elif op == "delete" and ids[owner]:
                victim = ids[owner].pop(n % len(ids[owner]))
                if victim in calls[owner]:
                    calls[owner].remove(victim)
                mem.delete(victim, reason="test")
            elif op == "feedback" and ids[owner]:
                mem.feedback(ids[owner][n % len(ids[owner])], (n % 3) - 1.0)
            elif op == "result" and calls[owner]:
                call = calls[owner][n % len(calls[owner])]
                try:
                    mem.record_tool_result(call, f"found result{n}")
                except ValidationError as exc:  # a call has one result: another is refused, writing nothing
                    assert "has a result already" in str(exc) and mem.peek(call).result is not None
        report = db.check()
        assert report.ok, report.problems
        assert report.episodes == sum(len(v) for v in ids.values())


def test_delete_leaves_audit_without_text(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    ep = mem.record("debug", "secret plan omega", outcome="failure")
    audit_id = mem.delete(ep.id, reason="user request")
    assert ep.id not in mem
    entry = next(a for a in mem.audit() if a["id"] == audit_id)
    assert entry["action"] == "delete" and entry["episodes"] == [ep.id] and len(entry["hashes"][0]) == 64
    assert "omega" not in repr(entry)
    with pytest.raises(ValidationError):
        mem.delete(ep.id, reason="  ")


@pytest.mark.lmdb_only(reason="damages a header in place through the globals, then reads it back")
def test_a_damaged_stored_outcome_is_a_corruption_error(edb: memdb.Database) -> None:
    from memdb.errors import CorruptionError

    mem = edb.owner("ana")
    ep = mem.record("debug", "deploy", outcome="failure")
    records, key = edb.globals["MEM"], ("ana", ep.day, ep.id)
    records[key] = {**records[key], "outcome": "failurf"}  # one flipped byte
    with pytest.raises(CorruptionError, match="stored outcome is damaged"):
        edb.check()  # never a raw KeyError from the index code


def test_an_upgrade_reports_its_progress(tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    """Opening a layout-7 database rebuilds its text index once, saying how far it has got."""
    with memdb.open(tmp_path / "old", clock=clock) as db:
        mem = db.owner("ana")
        ids = [mem.record("debug", f"deploy step {i}", outcome="success").id for i in range(3)]
        db.globals["META"].set(("layout",), 7)
    with caplog.at_level(logging.INFO, logger="memdb.memory.migrate"), memdb.open(tmp_path / "old", clock=clock) as db:
        assert db.check().ok and {m.id for m in db.owner("ana").recall(text="deploy")} == set(ids)
    progress = [r.getMessage() for r in caplog.records if "rewritten (" in r.getMessage()]
    assert progress and progress[-1].startswith("layout upgrade: 3 of 3 episodes done, 3 rewritten")
    with caplog.at_level(logging.INFO, logger="memdb.memory.migrate"), memdb.open(tmp_path / "old", clock=clock):
        pass
    assert len([r for r in caplog.records if "rewritten (" in r.getMessage()]) == len(progress)  # once
