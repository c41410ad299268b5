"""Versions and facts: supersede instead of overwrite, facts under keys, and what erasure,
archiving and the queries do with chains of versions (issue 23, items 1 and 2).

Every test runs on LMDB and on PostgreSQL; every refused call is checked to write nothing
(every global compared before and after), and every change to memory to leave its audit record.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdb
from memdb.errors import ConfigError, NotFoundError, ValidationError
from memdb.query.results import Hit

UTC = dt.UTC
T0 = dt.datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


def everything(db: memdb.Database) -> dict[str, list[Any]]:
    """Every node of every global: what "writes nothing" is checked against."""
    with db.snapshot():
        return {name: list(db.globals[name].items()) for name in db.globals.names()}


def clean(db: memdb.Database) -> None:
    report = db.check()
    assert report.ok, report.problems


def deploy(mem: memdb.Memory, summary: str = "Deploy of build 41 went out", **fields: Any) -> memdb.Episode:
    base: dict[str, Any] = {
        "outcome": "success", "tags": ["deploy", "project-x"], "lesson": "run migrations first", "why": "the lock was free",
        "session": "s1", "content": "deployed build 41 to production",
    }  # fmt: skip
    return mem.record("debug", summary, **{**base, **fields})


# --- supersede --------------------------------------------------------------------------------


def test_supersede_writes_a_new_version_and_keeps_the_old_one(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    new = mem.supersede(old.id, reason="the smoke test failed afterwards", outcome="failure", lesson="wait for the smoke test")
    # the changes applied, every other field kept, the old one cited
    assert (new.outcome, new.lesson) == ("failure", "wait for the smoke test")
    assert (new.summary, new.why, new.tags, new.session, new.content, new.ts) == (old.summary, old.why, old.tags, "s1", old.content, old.ts)
    assert new.id != old.id and new.supersedes == old.id and old.id in new.cites
    assert new.supersede_reason == "the smoke test failed afterwards" and new.status == "active"
    # the old one is kept whole, marked, and linked to its successor
    kept = mem.peek(old.id)
    assert kept.status == "superseded" and kept.superseded_by == new.id and kept.outcome == "success" and kept.content == old.content
    assert [v.id for v in mem.versions(old.id)] == [v.id for v in mem.versions(new.id)] == [old.id, new.id]
    assert mem.count() == 2 and old.id in mem
    clean(edb)


def test_a_chain_of_versions_is_walked_from_any_of_them(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    first = deploy(mem)
    second = mem.supersede(first.id, reason="wrong build", summary="Deploy of build 42 went out")
    third = mem.supersede(second.id, reason="it failed", outcome="failure")
    chain = [first.id, second.id, third.id]
    for eid in chain:
        assert [v.id for v in mem.versions(eid)] == chain
    assert [v.status for v in mem.versions(first.id)] == ["superseded", "superseded", "active"]
    assert third.summary == "Deploy of build 42 went out" and third.supersedes == second.id
    assert mem.versions(deploy(mem, summary="unrelated").id)[0].supersedes is None  # an original alone is its own chain
    clean(edb)


def test_a_version_may_clear_a_field_or_add_a_citation(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    source = deploy(mem, summary="the postmortem")
    old = deploy(mem)
    cleared = mem.supersede(old.id, reason="the lesson was wrong", lesson=None)
    assert cleared.lesson is None and mem.peek(old.id).lesson == "run migrations first"
    cited = mem.supersede(cleared.id, reason="found the postmortem", cites=[source.id])
    assert cited.cites == (source.id, cleared.id)
    clean(edb)


def test_superseded_versions_stay_out_of_default_answers(edb: memdb.Database, clock: Clock) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    new = mem.supersede(old.id, reason="it failed", outcome="failure")
    queries: list[Callable[..., memdb.RecallResult]] = [
        lambda **kw: mem.recall(tags=["deploy"], **kw),
        lambda **kw: mem.recall(text="build production", **kw),
        lambda **kw: mem.recall(kind="debug", **kw),
        lambda **kw: mem.recall(session="s1", **kw),
        lambda **kw: mem.recall(since=T0 - DAY, until=T0 + DAY, **kw),
        lambda **kw: mem.ask("what happened with the deploy?", **kw),
    ]
    for query in queries:
        assert [m.episode.id for m in query()] == [new.id]
        both = query(include_superseded=True)
        assert {m.episode.id for m in both} == {old.id, new.id} and both.total == 2
        assert "including superseded versions" in str(both.interpretation)
        (earlier,) = [m for m in both if m.episode.id == old.id]
        assert earlier.episode.status == "superseded" and any(f"superseded by {new.id}" in w for w in earlier.why)
    # the outcome of the old version no longer answers
    assert not mem.recall(outcome="success").found and not mem.ask("successful deploys").found
    assert [e.id for e in mem.episodes()] == [new.id]
    # history counts the attempt once, as its current version; the chain can be listed
    h = mem.history(kind="debug")
    assert h.total == 1 and h.counts["failure"] == 1 and h.counts["success"] == 0
    listed = mem.history(kind="debug", include_superseded=True)
    assert listed.total == 1 and listed.superseded == 1 and {m.episode.id for m in listed.attempts} == {old.id, new.id}
    assert "1 superseded version listed too (not counted)" in str(listed)
    text = mem.ask("deploy", include_superseded=True).as_context()
    assert f"(superseded by {new.id})" in text and "(corrected: it failed)" in text


def test_words_only_an_earlier_version_holds(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    old = mem.record("research", "Benchmarked Zanzibar caching", outcome="success", tags=["cache"])
    new = mem.supersede(old.id, reason="wrong name", summary="Benchmarked Redis caching")
    assert not mem.ask("What about Zanzibar?").found  # no current memory mentions it: an honest empty answer
    found = mem.ask("What about Zanzibar?", include_superseded=True)
    assert [m.episode.id for m in found] == [old.id] and not found.partial
    assert [m.episode.id for m in mem.ask("Redis caching")] == [new.id]


def test_supersede_corrects_an_outcome_with_its_reason_audited(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    before = len(mem.audit())
    new = mem.supersede(old.id, reason="rolled back an hour later", outcome="failure")
    (entry,) = mem.audit()[before:]
    assert entry["action"] == "supersede" and entry["episode"] == old.id and entry["successor"] == new.id
    assert entry["reason"] == "rolled back an hour later" and entry["fields"] == ["outcome"]
    assert entry["outcome"] == {"from": "success", "to": "failure"}
    assert "build 41" not in repr(entry)  # ids, fields and the reason: never the episode's text


def test_supersede_is_sanitized_like_a_capture(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    old = deploy(mem, content="reported by qa@example.com")
    new = mem.supersede(old.id, reason="ask dana@example.com", what_happened="paged ops at ops@example.com")
    assert new.content == "reported by <EMAIL_1>" and new.what_happened == "paged ops at <EMAIL_2>"
    assert new.supersede_reason == "ask <EMAIL_1>"
    assert "example.com" not in repr(everything(edb))


def test_new_version_keeps_its_memory_and_is_not_archived_at_once(edb: memdb.Database, clock: Clock) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    mem.get(old.id)
    mem.feedback(old.id, 0.5)
    clock.now = T0 + 60 * DAY  # idle long enough to be archived
    new = mem.supersede(old.id, reason="it failed", outcome="failure")
    assert new.access_count == 1 and new.feedback == 0.5 and new.last_access == clock.now and new.ts == old.ts
    clock.now += DAY
    report = edb.maintain()
    assert report.archived == 0 and mem.peek(new.id).status == "active" and mem.peek(old.id).status == "superseded"
    clean(edb)


def test_superseded_versions_and_archived_episodes(edb: memdb.Database, clock: Clock) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    new = mem.supersede(old.id, reason="it failed", outcome="failure")
    before = everything(edb)
    with pytest.raises(ValidationError, match=f"superseded by {new.id}"):
        mem.archive(old.id)
    assert everything(edb) == before
    clock.now = T0 + 400 * DAY
    edb.maintain()  # the current version is archived by rule; the superseded one stays whole and hot
    assert mem.peek(old.id).status == "superseded" and mem.peek(old.id).content == old.content
    assert [v.status for v in mem.versions(old.id)] == ["superseded", "archived"]
    before = everything(edb)
    with pytest.raises(ValidationError, match="restore"):
        mem.supersede(new.id, reason="again", outcome="partial")
    assert everything(edb) == before
    mem.restore(new.id)
    newest = mem.supersede(new.id, reason="again", outcome="partial")
    assert [v.id for v in mem.versions(old.id)] == [old.id, new.id, newest.id]
    clean(edb)


def summarized_burst(edb: memdb.Database, clock: Clock) -> tuple[list[str], Hit]:
    """Six exchanges of one session an hour apart, summarized by maintain two days later: their
    ids and the summary's hit."""
    mem = edb.owner("ana")
    ids = []
    for i in range(6):
        clock.now = T0 + i * dt.timedelta(hours=1)
        ids.append(mem.record_exchange("s7", f"question {i} about the deploy", "answer").id)
    clock.now = T0 + 2 * DAY
    assert edb.maintain().summaries == 1
    (summary,) = mem.recall(kind="summary").memories
    return ids, summary


def test_summarized_sources_keep_their_summary_across_versions(edb: memdb.Database, clock: Clock) -> None:
    mem = edb.owner("ana")
    ids, summary = summarized_burst(edb, clock)
    new = mem.supersede(ids[0], reason="misheard", summary="question 0 about the rollback")
    assert new.status == "summarized"  # its burst is summarized already
    assert edb.maintain().summaries == 0
    with pytest.raises(ValidationError, match="summary is derived"):
        mem.supersede(summary.episode.id, reason="x", summary="y")
    report = mem.erase([new.id], reason="asked to")  # the chain, and the summary citing its first version
    assert set(report.ids) == {ids[0], new.id, summary.episode.id}
    clean(edb)


def test_erasing_a_summarized_earlier_version_frees_its_burst_and_the_version_kept(edb: memdb.Database, clock: Clock) -> None:
    """The summary citing an erased earlier version goes with it, and the sources left are events
    again, the version kept too: it was summarized only as its earlier version was."""
    mem = edb.owner("ana")
    ids, summary = summarized_burst(edb, clock)
    new = mem.supersede(ids[0], reason="misheard", summary="question 0 about the rollback")
    report = mem.erase_versions(ids[0], reason="the misheard question")
    assert set(report.ids) == {ids[0], summary.episode.id}
    assert {mem.peek(eid).status for eid in [new.id, *ids[1:]]} == {"active"}
    clean(edb)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda mem, ids: mem.supersede(ids["old"], reason="", outcome="failure"), ValidationError, "say why"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="   ", outcome="failure"), ValidationError, "say why"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x"), ValidationError, "no changes given"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", outcome="success"), ValidationError, "leave every field as it was"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", outcome="mostly"), ValidationError, "success, partial, failure"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", outcome=None), ValidationError, "needs an outcome"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", kind="review"), ValidationError, "kind does not change"),
        (lambda mem, ids: mem.supersede(ids["fact"], reason="x", key="ana/other"), ValidationError, "key does not change"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", feedback=1.0), ValidationError, "feedback"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", colour="red"), ValidationError, "colour"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", ts=T0 + DAY), ValidationError, "after the clock"),
        (lambda mem, ids: mem.supersede(ids["old"], reason="x", session="dana@example.com"), ValidationError, "personal data"),
        (lambda mem, ids: mem.supersede(ids["exchange"], reason="x", outcome="success"), ValidationError, "carries no outcome"),
        (lambda mem, ids: mem.supersede(ids["bob"], reason="x", outcome="failure"), NotFoundError, "no such episode for owner 'ana'"),
        (lambda mem, ids: mem.supersede("20260101T000000000000Z-000000", reason="x", summary="y"), NotFoundError, "no such episode"),
        (lambda mem, ids: mem.supersede("not an id", reason="x", summary="y"), NotFoundError, "not an episode id"),
        (lambda mem, ids: mem.supersede(ids["archived"], reason="x", summary="y"), ValidationError, "restore"),
        (lambda mem, ids: mem.versions(ids["bob"]), NotFoundError, "no such episode"),
    ],
)
def test_bad_supersede_names_the_problem_and_writes_nothing(
    edb: memdb.Database, call: Callable[[memdb.Memory, dict[str, str]], Any], error: type[Exception], message: str
) -> None:
    mem = edb.owner("ana")
    ids = {
        "old": deploy(mem).id,
        "exchange": mem.record_exchange("s2", "hello", "hi").id,
        "fact": mem.record("fact", "dark", key="ana/ui.theme").id,
        "archived": deploy(mem, summary="archived deploy").id,
        "bob": edb.owner("bob").record("debug", "bob's deploy", outcome="success").id,
    }
    mem.archive(ids["archived"])
    before = everything(edb)
    with pytest.raises(error) as caught:
        call(mem, ids)
    assert message in str(caught.value)
    assert everything(edb) == before


def test_an_earlier_version_takes_no_tool_result(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    call = mem.record_tool_call("s1", "search", {"q": "deploy logs"})
    new = mem.supersede(call.id, reason="wrong query recorded", content='{"q": "deploy errors"}')
    before = everything(edb)
    with pytest.raises(ValidationError, match=f"superseded by {new.id}"):
        mem.record_tool_result(call.id, {"hits": 3})
    assert everything(edb) == before
    assert mem.record_tool_result(new.id, {"hits": 3}).result == '{"hits": 3}'
    clean(edb)


def test_an_earlier_version_takes_no_feedback(edb: memdb.Database) -> None:
    """Feedback on an earlier version was accepted and raised that version's relevance, which no
    answer shows (an MCP probe's find): it names the current version and writes nothing."""
    mem = edb.owner("ana")
    old = mem.record("debug", "Deploy failed", outcome="failure")
    new = mem.supersede(old.id, reason="it was partial", outcome="partial")
    before = everything(edb)
    with pytest.raises(ValidationError, match=f"superseded by {new.id}; give feedback on that version"):
        mem.feedback(old.id, 1.0)
    assert everything(edb) == before
    assert mem.feedback(new.id, 1.0).feedback == 1.0
    clean(edb)


def test_superseding_twice_names_the_current_version(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    new = mem.supersede(old.id, reason="it failed", outcome="failure")
    before = everything(edb)
    with pytest.raises(ValidationError, match=f"already superseded by {new.id}"):
        mem.supersede(old.id, reason="again", outcome="partial")
    assert everything(edb) == before


# --- erasure of chains ---------------------------------------------------------------------------


@pytest.mark.parametrize("which", [0, 1, 2])
def test_erasing_any_version_erases_the_whole_chain(edb: memdb.Database, which: int) -> None:
    mem = edb.owner("ana")
    first = deploy(mem, content="secret build notes omega")
    second = mem.supersede(first.id, reason="wrong build", summary="Deploy of build 42 went out")
    third = mem.supersede(second.id, reason="it failed", outcome="failure")
    other = deploy(mem, summary="another deploy")
    chain = [first.id, second.id, third.id]
    report = mem.erase([chain[which]], reason="asked to")
    assert sorted(report.ids) == sorted(chain) and report.count == 3
    assert [e.id for e in mem.episodes()] == [other.id] and mem.count() == 1
    for eid in chain:
        assert eid not in mem
    assert not mem.recall(text="omega", include_superseded=True).found
    (entry,) = [a for a in mem.audit() if a["action"] == "erase"]
    assert sorted(entry["episodes"]) == sorted(chain) and "omega" not in repr(entry)
    clean(edb)


def test_delete_of_a_version_deletes_the_chain(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    new = mem.supersede(old.id, reason="it failed", outcome="failure")
    audit_id = mem.delete(old.id, reason="wrong memory")
    entry = next(a for a in mem.audit() if a["id"] == audit_id)
    assert sorted(entry["episodes"]) == sorted([old.id, new.id]) and mem.count() == 0
    clean(edb)


def test_a_time_range_takes_superseded_versions_in_it_and_their_chains(edb: memdb.Database, clock: Clock) -> None:
    mem = edb.owner("ana")
    may = mem.record("fact", "light", key="ana/ui.theme", ts=T0 - 40 * DAY)  # a backfill, audited
    june = mem.record("fact", "dark", key="ana/ui.theme")
    kept = deploy(mem)
    report = mem.erase(until=T0 - 30 * DAY, reason="everything before June")
    # the May value falls in the range; a version goes with its chain, so June's value goes too
    assert sorted(report.ids) == sorted([may.id, june.id]) and [e.id for e in mem.episodes()] == [kept.id]
    with pytest.raises(NotFoundError, match=re.escape("ana/ui.theme")):
        mem.fact("ana/ui.theme")
    clean(edb)


def test_retention_prunes_a_chain_by_its_current_version_and_old_versions_by_their_own(edb: memdb.Database, clock: Clock) -> None:
    """A chain goes whole once its current version is older than retention; a superseded version
    older than that goes alone (storage limitation: a value replaced long ago was kept for good
    while its key was updated), and the current one stays, standing alone."""
    mem = edb.owner("ana")
    old_chain = deploy(mem, summary="deploy in July")
    old_new = mem.supersede(old_chain.id, reason="it failed", outcome="failure")
    clock.now = T0 + 200 * DAY
    recent_first = mem.record("fact", "light", key="ana/ui.theme", ts=T0 + 10 * DAY)  # old, but superseded by a recent value
    recent = mem.record("fact", "dark", key="ana/ui.theme")
    edb.configure(retention_days=100)
    assert edb.maintain().purged == 3  # the July chain, and the theme's first value
    for eid in (old_chain.id, old_new.id, recent_first.id):
        assert eid not in mem
    current = mem.fact("ana/ui.theme")
    assert current.id == recent.id and current.summary == "dark" and current.supersedes is None
    assert [v.id for v in mem.versions(recent.id)] == [recent.id]
    (entry,) = [a for a in mem.audit() if a["action"] == "retention"]
    assert sorted(entry["episodes"]) == sorted([old_chain.id, old_new.id, recent_first.id]) and entry["kept"] == [recent.id]
    clean(edb)


@pytest.mark.parametrize("archived", [False, True], ids=["hot", "archived"])
def test_erase_versions_takes_earlier_versions_and_keeps_the_later_ones(edb: memdb.Database, archived: bool) -> None:
    """``erase_versions`` erases a superseded version and every version before it (a chain is
    never holed); the oldest version left stands alone, hot or archived, and no longer says
    what it corrected; audit records about the erased ones lose their reasons."""
    mem = edb.owner("ana")
    first = deploy(mem, summary="Deploy of build quokka went out")
    second = mem.supersede(first.id, reason="wrong build zebrareason", summary="Deploy of build 42 went out")
    third = mem.supersede(second.id, reason="it failed", outcome="failure")
    other = deploy(mem, summary="another deploy")
    if archived:
        mem.archive(third.id)
    before = everything(edb)
    with pytest.raises(ValidationError, match=f"erase_versions\\('{third.id}'\\): the current version"):
        mem.erase_versions(third.id, reason="asked to")
    with pytest.raises(ValidationError, match="reason"):
        mem.erase_versions(first.id, reason=" ")
    with pytest.raises(NotFoundError):
        edb.owner("bo").erase_versions(first.id, reason="asked to")
    assert everything(edb) == before
    report = mem.erase_versions(second.id, reason="old values")
    assert sorted(report.ids) == sorted([first.id, second.id]) and report.count == 2
    assert first.id not in mem and second.id not in mem and other.id in mem
    if archived:
        mem.restore(third.id)
    kept = mem.get(third.id)
    assert (kept.supersedes, kept.supersede_reason, kept.cites, kept.outcome) == (None, None, (), "failure")
    assert [v.id for v in mem.versions(third.id)] == [third.id]
    assert not mem.recall(text="quokka", include_superseded=True).found
    (entry,) = [a for a in mem.audit() if a["action"] == "erase"]
    assert sorted(entry["episodes"]) == sorted([first.id, second.id]) and entry["kept"] == [third.id]
    assert "zebrareason" not in repr(mem.audit())
    clean(edb)


# --- facts ----------------------------------------------------------------------------------------


def test_a_fact_is_recorded_read_and_listed_by_key(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    theme = mem.record("fact", "Ana prefers dark mode", key="ana/ui.theme", tags=["ui"])
    lang = mem.record("fact", "English", key="ana/lang")
    tz = mem.record("fact", "Europe/Berlin", key="team/tz")
    assert theme.kind == "fact" and theme.key == "ana/ui.theme" and theme.outcome is None
    got = mem.fact("ana/ui.theme")
    assert got.id == theme.id and got.summary == "Ana prefers dark mode" and got.access_count == 1
    assert [e.key for e in mem.facts()] == ["ana/lang", "ana/ui.theme", "team/tz"]
    assert [e.id for e in mem.facts("ana/")] == [lang.id, theme.id]
    assert [e.id for e in mem.facts("team")] == [tz.id] and mem.facts("zz") == []
    assert [m.episode.id for m in mem.recall(kind="fact", limit=10)] != []
    clean(edb)


def test_facts_do_not_count_against_the_typed_kinds(edb: memdb.Database) -> None:
    edb.configure(typed_kinds=["k1", "k2", "k3", "k4", "k5", "k6"])
    mem = edb.owner("ana")
    assert mem.record("fact", "dark", key="ana/ui.theme").kind == "fact"
    with pytest.raises(ConfigError, match="built-in kind"):
        edb.configure(typed_kinds=["fact"])


def test_recording_a_key_again_supersedes_its_value(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    light = mem.record("fact", "light", key="ana/ui.theme")
    dark = mem.record("fact", "dark", key="ana/ui.theme")
    assert dark.supersedes == light.id and mem.fact("ana/ui.theme").id == dark.id
    assert mem.peek(light.id).status == "superseded" and [v.summary for v in mem.versions(dark.id)] == ["light", "dark"]
    entry = mem.audit()[-1]
    assert entry["action"] == "supersede" and (entry["episode"], entry["successor"]) == (light.id, dark.id)
    assert (entry["reason"], entry["key"], entry["fields"]) == ("new value for fact", "ana/ui.theme", ["summary"])
    # the same value again writes nothing
    before = everything(edb)
    assert mem.record("fact", "dark", key="ana/ui.theme").id == dark.id
    assert everything(edb) == before
    # supersede() corrects a fact the same way, with a reason of one's own
    fixed = mem.supersede(dark.id, reason="typo", summary="dark (high contrast)")
    assert mem.fact("ana/ui.theme").id == fixed.id and [e.summary for e in mem.facts()] == ["dark (high contrast)"]
    assert not mem.recall(text="light").found and mem.recall(text="light", include_superseded=True).found
    clean(edb)


@pytest.mark.parametrize(("old", "new"), [(0, False), (True, 1), (1, 1.0), ([0], [False]), ({"n": {"m": 1}}, {"n": {"m": True}})])
def test_a_value_of_another_type_is_a_new_value(edb: memdb.Database, old: Any, new: Any) -> None:
    """Decisions equal under ``==`` but of another type (``0 == False``, ``1 == 1.0``) are a
    new value: compared with ``==``, the second record was dropped as the same value again and
    the fact kept answering the old one (the LangGraph store lost such puts)."""
    mem = edb.owner("ana")
    first = mem.record("fact", "task done", key="ana/task", decisions={"done": old})
    second = mem.record("fact", "task done", key="ana/task", decisions={"done": new})
    assert second.id != first.id and second.supersedes == first.id
    stored = mem.fact("ana/task").decisions["done"]
    assert stored == new and repr(stored) == repr(new)
    assert mem.audit()[-1]["fields"] == ["decisions"]
    # the same value of the same type again still writes nothing
    before = everything(edb)
    assert mem.record("fact", "task done", key="ana/task", decisions={"done": new}).id == second.id
    assert everything(edb) == before


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda mem: mem.record("fact", "dark"), ValidationError, "needs a key"),
        (lambda mem: mem.record("fact", "dark", key="ana ui"), ValidationError, "key='ana ui'"),
        (lambda mem: mem.record("fact", "dark", key=""), ValidationError, "key=''"),
        (lambda mem: mem.record("fact", "dark", key="dana@example.com/theme"), ValidationError, "key looks like personal data"),
        (lambda mem: mem.record("fact", "dark", key="ana/ui", outcome="success"), ValidationError, "carries no outcome"),
        (lambda mem: mem.record("debug", "x", outcome="success", key="ana/ui"), ValidationError, "only facts"),
        (lambda mem: mem.fact("ana/nothing"), NotFoundError, "fact 'ana/nothing'"),
        (lambda mem: mem.fact("not a key"), ValidationError, "key 'not a key'"),
        (lambda mem: mem.facts("not a prefix"), ValidationError, "prefix 'not a prefix'"),
        (lambda mem: mem.record("fact", "x" * 600, key="k", ts=T0 + DAY), ValidationError, "after the clock"),
    ],
)
def test_bad_facts_name_the_problem_and_write_nothing(
    edb: memdb.Database, call: Callable[[memdb.Memory], Any], error: type[Exception], message: str
) -> None:
    mem = edb.owner("ana")
    mem.record("fact", "dark", key="ana/ui.theme")
    before = everything(edb)
    with pytest.raises(error) as caught:
        call(mem)
    assert message in str(caught.value)
    assert everything(edb) == before


def test_facts_are_private_and_sanitized(edb: memdb.Database) -> None:
    ana, bob = edb.owner("ana"), edb.owner("bob")
    fact = ana.record("fact", "reach Ana at ana@example.com", key="ana/contact")
    assert fact.summary == "reach Ana at <EMAIL_1>" and "example.com" not in repr(everything(edb))
    assert bob.facts() == [] and fact.id not in bob
    with pytest.raises(NotFoundError):
        bob.fact("ana/contact")
    bob.record("fact", "bob's own", key="ana/contact")  # the same key, another owner: another fact
    assert ana.fact("ana/contact").id == fact.id and [e.summary for e in bob.facts()] == ["bob's own"]
    clean(edb)


def test_ask_answers_with_facts(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    deploy(mem)
    theme = mem.record("fact", "dark mode", key="ana/ui.theme")
    style = mem.record("fact", "short answers, no emoji", key="ana/style")
    other = mem.record("fact", "Europe/Berlin", key="team/tz")
    r = mem.ask("What does Ana prefer?")
    assert {m.episode.id for m in r} == {theme.id, style.id} and r.interpretation.kind == "fact"
    assert "fact ana/ui.theme: dark mode" in r.as_context()
    assert {m.episode.id for m in mem.ask("what are my preferences?", limit=10)} == {theme.id, style.id, other.id}
    # the words of a fact, its key's too, are indexed
    assert [m.episode.id for m in mem.recall(text="theme")] == [theme.id]
    assert [m.episode.id for m in mem.ask("emoji")] == [style.id]
    # without facts, preference words are plain words
    assert not edb.owner("bob").ask("what does Bob prefer?").found


def test_facts_are_not_archived_or_summarized(edb: memdb.Database, clock: Clock) -> None:
    mem = edb.owner("ana")
    facts = [mem.record("fact", f"value {i}", key=f"ana/k{i}").id for i in range(7)]  # a "burst" of facts in one day
    clock.now = T0 + 400 * DAY
    report = edb.maintain()
    assert report.summaries == 0 and report.archived == 0
    assert all(mem.peek(eid).status == "active" for eid in facts)
    before = everything(edb)
    with pytest.raises(ValidationError, match="facts are not archived"):
        mem.archive(facts[0])
    assert everything(edb) == before
    clean(edb)


def test_erasing_a_fact_frees_its_key(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    first = mem.record("fact", "light", key="ana/ui.theme")
    second = mem.record("fact", "dark", key="ana/ui.theme")
    assert sorted(mem.erase([first.id], reason="asked to").ids) == sorted([first.id, second.id])
    with pytest.raises(NotFoundError, match=re.escape("'ana/ui.theme'")):
        mem.fact("ana/ui.theme")
    again = mem.record("fact", "sepia", key="ana/ui.theme")
    assert again.supersedes is None and mem.fact("ana/ui.theme").id == again.id
    clean(edb)


def test_import_records_facts_in_order(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    current = mem.record("fact", "light", key="ana/ui.theme")
    items = [
        {"kind": "fact", "summary": "dark", "key": "ana/ui.theme", "ts": T0 - DAY},
        {"kind": "debug", "summary": "old deploy", "outcome": "failure", "ts": T0 - 2 * DAY},
        {"kind": "fact", "summary": "sepia", "key": "ana/ui.theme", "ts": T0 - DAY},
    ]
    report = mem.import_episodes(items, source="test")
    assert report.count == 3 and mem.fact("ana/ui.theme").summary == "sepia"
    assert [v.summary for v in mem.versions(current.id)] == ["light", "dark", "sepia"]
    assert [mem.peek(eid).summary for eid in report.ids] == ["dark", "old deploy", "sepia"]
    clean(edb)


# --- random sequences against a plain-Python model -------------------------------------------------

_OPS = st.lists(
    st.tuples(st.sampled_from(["record", "record", "supersede", "fact", "fact", "erase"]), st.integers(0, 40), st.integers(0, 3)),
    max_size=30,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_OPS)
def test_random_versions_and_facts_agree_with_a_model(tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]]) -> None:
    """Records, supersedes, facts and erasures in any order keep every index consistent, and the
    current versions, chains and fact values the queries give equal those of a plain model."""
    path: Path = tmp_path_factory.mktemp("versions")
    with memdb.open(path, clock=Clock(T0), map_size=1 << 22) as db:
        mem = db.owner("ana")
        chains: list[list[str]] = []  # each memory's versions, oldest first
        keys: dict[str, list[str]] = {}  # a fact's key -> its chain (one of ``chains``)
        summary: dict[str, str] = {}  # current id -> summary
        for op, n, k in ops:
            if op == "record":
                ep = mem.record("debug", f"attempt {n} on word{n % 5}", outcome="success", tags=[f"t{n % 3}"])
                chains.append([ep.id])
                summary[ep.id] = ep.summary
            elif op == "supersede" and chains:
                chain = chains[n % len(chains)]
                text = f"attempt {n} revised on word{k}"
                if summary[chain[-1]] != text:
                    ep = mem.supersede(chain[-1], reason=f"revision {n}", summary=text)
                    assert ep.supersedes == chain[-1]
                    summary[ep.id] = text
                    del summary[chain[-1]]
                    chain.append(ep.id)
            elif op == "fact":
                key, value = f"ana/k{k}", f"value {n % 4}"
                ep = mem.record("fact", value, key=key)
                chain = keys.get(key)
                if chain is None:
                    keys[key] = [ep.id]
                    chains.append(keys[key])
                elif summary[chain[-1]] == value:
                    assert ep.id == chain[-1]  # the same value: nothing written
                else:
                    assert ep.supersedes == chain[-1]
                    del summary[chain[-1]]
                    chain.append(ep.id)
                summary[ep.id] = value
            elif op == "erase" and chains:
                chain = chains.pop(n % len(chains))
                report = mem.erase([chain[k % len(chain)]], reason="test")
                assert sorted(report.ids) == sorted(chain)
                del summary[chain[-1]]
                keys = {key: c for key, c in keys.items() if c is not chain}
        clean(db)
        assert {e.id: e.summary for e in mem.episodes()} == summary
        assert {e.key: e.id for e in mem.facts()} == {key: c[-1] for key, c in keys.items()}
        for key, chain in keys.items():
            assert mem.fact(key).summary == summary[chain[-1]]
        assert mem.count() == sum(len(c) for c in chains)
        assert mem.recall(limit=100).total == len(summary)
        assert mem.recall(limit=0, include_superseded=True).total == sum(len(c) for c in chains)
        for chain in chains:
            assert [v.id for v in mem.versions(chain[0])] == chain


def test_check_verifies_versions_and_fact_keys(edb: memdb.Database) -> None:
    mem = edb.owner("ana")
    old = deploy(mem)
    new = mem.supersede(old.id, reason="it failed", outcome="failure")
    fact = mem.record("fact", "dark", key="ana/ui.theme")
    clean(edb)
    g = edb.globals
    state = g["EPST"][("ana", old.id)]
    breakages: list[tuple[Callable[[], Any], str]] = [
        (lambda: g["EPSU"].kill(("ana",)), "missing index entry"),
        (lambda: g["EPFK"].set(("ana", "ana/ui.theme"), new.id), "but the current version is"),
        (lambda: g["EPFK"].kill(("ana",)), "but the current version is"),
        (lambda: g["EPST"].set(("ana", old.id), {**state, "superseded_by": fact.id}), "which does not supersede it"),
        (lambda: g["EPST"].set(("ana", old.id), {k: v for k, v in state.items() if k != "superseded_by"}), "without a successor"),
    ]
    for breakage, problem in breakages:
        with pytest.raises(RuntimeError), edb.transaction():  # rolled back after the check
            breakage()
            report = edb.check()
            assert any(problem in p for p in report.problems), (problem, report.problems)
            raise RuntimeError("roll back")
        clean(edb)


def test_a_new_version_keeps_its_tags_as_stored(edb: memdb.Database) -> None:
    """Tags not changed are the version's own, as stored: sanitized again, the stored pair
    ["withheld-secret", "vendor"] read as a header and its secret, and "vendor" was lost (revE)."""
    mem = edb.owner("ana")
    old = deploy(mem, tags=["AKIAIOSFODNN7EXAMPLE", "vendor"])
    assert old.tags == ("withheld-secret", "vendor")
    new = mem.supersede(old.id, reason="it failed", outcome="failure")
    assert new.tags == old.tags
    assert mem.audit()[-1]["fields"] == ["outcome"]
    clean(edb)
