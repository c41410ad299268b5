"""Tag filters holding personal data or a secret, read as the question's text is (test_withheld.py):
left out, never searched nor echoed (``tags=["bob@example.com"]`` showed "bobexample-com" in the
reading and searched by it), and never dropped to widen the answer: a filter every memory must
match finds nothing, and says why; of several that any may match, the rest answer, labelled partial."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from query_times import NOW, at
from test_withheld import serialized

import memdb
from memdb.errors import ValidationError
from memdb.memory.sanitize import register_secrets, unregister_secrets
from memdb.surfaces.mcp_server import tool_specs

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

BOB = "bob.marsh@example.com"
CAROL = "carol.finch@example.org"
PHONE = "+1 415 555 0199"
# what a raw value's normal form or words would show of it
RAW = ("bob", "marsh", "bobmarsh", "carol", "finch", "415", "0199")


def _said(result: Any) -> str:
    return serialized(result)


def _no_raw(said: str) -> None:
    for piece in RAW:
        assert not re.search(rf"(?<![\w<]){piece}", said), piece


@pytest.fixture
def ana(qdb: memdb.Database) -> memdb.Memory:
    mem = qdb.owner("ana")
    mem.record("debug", "sent the invoice run to the customer", outcome="success", tags=[BOB, "billing"], ts=at(29))
    mem.record("debug", "the password reset mail bounced", outcome="failure", tags=[CAROL], ts=at(28))
    mem.record("debug", "billing webhook retries time out", outcome="partial", tags=["billing"], ts=at(27))
    return mem


def test_a_required_tag_of_personal_data_finds_nothing_and_says_so(ana: memdb.Memory) -> None:
    """Every tag given must match, and no memory carries an address as written: nothing, said,
    never "billing" alone in its place; the reading names the placeholder only."""
    for tags in ([BOB], [BOB, "billing"], [PHONE]):
        r = ana.recall(tags=tags)
        assert not r.found and r.memories == [] and r.total == 0
        assert r.interpretation.withheld_tags in (("<EMAIL_1>",), ("<PHONE_1>",))
        assert r.note.startswith("Nothing found: the tag <") and "personal data or a secret, never searched" in r.note
        assert "left out as personal data or a secret: tag <" in str(r.interpretation)
        _no_raw(_said(r))


def test_a_tag_of_personal_data_is_left_out_of_any_tags_and_the_answer_is_partial(ana: memdb.Memory) -> None:
    r = ana.recall(any_tags=[BOB, "billing"], limit=10)
    assert r.found and r.partial and r.interpretation.any_tags == ("billing",)
    assert r.interpretation.withheld_tags == ("<EMAIL_1>",)
    assert "left out as personal data or a secret: tag <EMAIL_1>" in r.note
    _no_raw(_said(r))
    only = ana.recall(any_tags=[BOB, CAROL])  # every tag of it withheld: nothing, not everything
    assert not only.found and only.interpretation.withheld_tags == ("<EMAIL_1>", "<EMAIL_2>")
    assert only.note.startswith("Nothing found: the tags <EMAIL_1>, <EMAIL_2> are personal data or a secret")


def test_a_tag_and_the_text_number_their_values_apart(ana: memdb.Memory) -> None:
    """Read in one pass with the text: <EMAIL_1> in the reading is one value, <EMAIL_2> another."""
    r = ana.recall(text=f"invoice {CAROL}", any_tags=[BOB, "billing"])
    assert r.interpretation.withheld == ("<EMAIL_1>",) and r.interpretation.withheld_tags == ("<EMAIL_2>",)
    assert "left out as personal data or a secret: <EMAIL_1>, tag <EMAIL_2>" in str(r.interpretation)


def test_history_counts_no_attempt_by_a_tag_of_personal_data(ana: memdb.Memory) -> None:
    h = ana.history(tags=[BOB])
    assert h.total == 0 and h.attempts == [] and h.interpretation.withheld_tags == ("<EMAIL_1>",)
    said = str(h)
    assert "left out as personal data or a secret: tag <EMAIL_1>" in said and "no attempt can be found by a tag" in said
    _no_raw(serialized(h) + said)
    assert ana.history(tags=["billing"]).total == 2  # the other tag still counts them


def test_a_stored_tag_of_personal_data_associates_no_one(ana: memdb.Memory) -> None:
    """Bob's and Carol's addresses were both "email-1", each its own record's number: a filter or a
    question by it listed both people's memories as one. Now the tag is a marker, which a filter may
    still ask for, naming no one."""
    assert [m.episode.tags for m in ana.recall(text="invoice")] == [("withheld-email", "billing")]
    assert not ana.recall(tags=["email-1"]).found
    asked = ana.ask("what about email-1?")  # a tag no memory carries: nothing, said, where it listed both people
    assert not asked.found and asked.interpretation.tags == () and "no memory mentions 'email-1'" in asked.note
    marked = ana.recall(tags=["withheld-email"], limit=10)
    assert marked.total == 2 and "withheld-email" in marked.note
    assert set(ana.known_tags()) == {"billing", "withheld-email"}


def test_ask_reads_a_value_it_was_given_as_no_tag(ana: memdb.Memory) -> None:
    """A question naming an address asks of no tag (the marker names no one): its other words
    answer, labelled partial."""
    r = ana.ask(f"what did we send to {BOB}?")
    assert r.interpretation.withheld == ("<EMAIL_1>",) and not (r.interpretation.tags or r.interpretation.any_tags)
    assert r.partial and [m.episode.summary for m in r] == ["sent the invoice run to the customer"]
    _no_raw(_said(r))


def test_prepare_leaves_out_a_tag_of_personal_data_and_scopes_by_it(ana: memdb.Memory) -> None:
    """The task's tags scope its records: left out, a tag of an address still scopes (dropped, every
    record of any tag would come in), and the block says it was left out."""
    prepared = ana.prepare("the mail bounced", tags=[CAROL], now=NOW)
    assert "Tags left out as personal data or a secret: <EMAIL_1>; no record is found by them." in prepared.text
    assert "password reset" not in prepared.text  # tagged withheld-email: not found by Carol's address
    _no_raw(prepared.text.casefold())
    kept = ana.prepare("webhook retries", tags=[CAROL, "billing"], now=NOW)
    assert "billing webhook retries" in kept.text and "password reset" not in kept.text


def test_failure_lessons_by_a_tag_of_personal_data_alone_find_none(ana: memdb.Memory) -> None:
    assert ana._queries.failure_lessons(None, [CAROL], now=NOW) == []
    assert ana._queries.failure_lessons("mail", [CAROL], now=NOW) == []


def test_the_mcp_tools_never_echo_a_tag_of_personal_data(qdb: memdb.Database, ana: memdb.Memory) -> None:
    specs = {s.name: s for s in tool_specs(qdb.settings)}

    def call(name: str, **args: object) -> tuple[str, dict[str, Any]]:
        spec = specs[name]
        out = spec.run(ana, spec.check_arguments(args))
        return out.text, out.data

    recalled = call("recall_episodes", tags=[BOB])
    assert not recalled[1]["found"] and "tag <EMAIL_1>" in recalled[1]["searched"]
    several = call("recall_episodes", any_tags=[BOB, "billing"], kinds=["debug", "exchange"])
    assert several[1]["total"] == 2 and "tag <EMAIL_1>" in several[1]["searched"]
    partial = call("recall_episodes", any_tags=[BOB, "billing"])
    assert partial[1]["partial"] and partial[1]["total"] == 2
    history = call("history", tags=[PHONE])
    assert history[1]["total"] == 0 and "tag <PHONE_1>" in history[1]["searched"]
    prepared = call("prepare", task="the invoice run", tags=[BOB])
    knowledge = call("knowledge", tags=[BOB])
    asked = call("ask", question=f"what about {BOB}?")
    for text, data in (recalled, several, partial, history, prepared, knowledge, asked):
        _no_raw(f"{text}\n{data}".casefold())


class _EmployeeIds(memdb.RegexSanitizer):
    def __init__(self) -> None:
        super().__init__(extra={"EMPLOYEE_ID": r"EMP-\d{6}"})


class _Redacting:
    """A custom sanitizer with its own mark, as the Sanitizer protocol allows."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return {k: re.sub(r"[\w.]+@[\w.]+\w", "[REDACTED]", v) for k, v in texts.items()}


@pytest.mark.parametrize(
    ("sanitizer", "tag", "marker", "said"),
    [(_EmployeeIds, "EMP-123456", "withheld-employee-id", "<EMPLOYEE_ID_1>"), (_Redacting, BOB, "withheld", "[REDACTED]")],
)
def test_the_database_s_own_sanitizer_reads_the_tags(
    tmp_path: Path, sanitizer: Callable[[], memdb.Sanitizer], tag: str, marker: str, said: str
) -> None:
    """The sanitizer given to memdb.open reads the tag filters as it reads capture's tags: the
    built-in one knows no employee id; a custom one's mark ("[REDACTED]") is named as written,
    and the tag it changed is kept as "withheld", since such a mark may carry a number of its own."""
    with memdb.open(tmp_path / "own", sanitizer=sanitizer(), clock=lambda: NOW) as db:
        mem = db.owner("ana")
        assert mem.record("debug", "reset the router", outcome="success", tags=[tag, "ops"], ts=at(29)).tags == (marker, "ops")
        r = mem.recall(tags=[tag])
        assert not r.found and r.interpretation.withheld_tags == (said,) and f"tag {said}" in r.note
        assert "123456" not in _said(r) and "marsh" not in _said(r)
        assert mem.recall(any_tags=[tag, "ops"]).partial
        assert mem.history(tags=[tag]).total == 0
        assert mem.recall(tags=[marker]).total == 1


def test_a_tag_read_before_it_was_registered_as_a_secret_is_withheld_after(ana: memdb.Memory) -> None:
    """Tag filters read by memdb's own sanitizer are kept between calls, for as long as the
    process's registered secrets stay: a token registered after a first read is withheld from
    the next one."""
    token = "Zq8vN3xR7tLw2Kp9Hs4M"  # a random credential: no pattern knows its shape
    first = ana.recall(tags=[token])
    assert "left out" not in str(first.interpretation)
    assert ana.recall(tags=[token]).interpretation == first.interpretation  # read again: the same
    register_secrets([token])
    try:
        said = str(ana.recall(tags=[token]).interpretation)
        assert "<SECRET_1>" in said and token.lower() not in said.lower()
    finally:
        unregister_secrets([token])
    assert str(ana.recall(tags=[token]).interpretation) == str(first.interpretation)


def test_more_tags_required_than_an_episode_holds_are_refused_by_their_count(qdb: memdb.Database) -> None:
    """An episode holds at most 32 tags, so 33 required ones match nothing: refused by their count
    before the sanitizer reads them (100,000 were read one by one); any of many may still match."""
    mem = qdb.owner("ana")
    mem.record("debug", "deploy failed", outcome="failure", tags=["t1"])
    many = [f"t{i}" for i in range(1, 34)]
    with pytest.raises(ValidationError, match=r"^tags: 33 given, more than the 32 an episode holds \(no memory carries them all\)"):
        mem.recall(tags=many)
    assert mem.recall(any_tags=many).found


def test_more_scope_tags_than_an_episode_holds_still_scope_a_task(qdb: memdb.Database) -> None:
    # prepare's tags scope the task (a memory with any of them, or none, stays): 33 are no contradiction
    mem = qdb.owner("ana")
    mem.record("debug", "deploy failed on the pool", outcome="failure", tags=["t1"], lesson="raise the pool size")
    many = [f"t{i}" for i in range(1, 34)]
    assert "raise the pool size" in mem.prepare("deploy the pool", tags=many).as_context()


def test_a_tag_read_kept_for_a_scope_does_not_let_too_many_required_tags_through(qdb: memdb.Database) -> None:
    # a read of 33 tags kept for prepare (a scope) was taken by recall's lookup of the same tags
    mem = qdb.owner("ana")
    mem.record("debug", "deploy failed", outcome="failure", tags=["t1"])
    many = [f"t{i}" for i in range(1, 34)]
    mem.prepare("deploy", tags=many)
    with pytest.raises(ValidationError, match=r"^tags: 33 given, more than the 32 an episode holds"):
        mem.recall(tags=many)
