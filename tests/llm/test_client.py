"""The model calls of ``memdb.llm.client`` through the real ``anthropic`` SDK over an httpx mock
transport: errors redacted as they are made, retry-after bounded, a run's deadline and its stop
after failures in a row, unfinished answers refused, and the adapters' options checked."""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import re
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import anthropic._base_client
import httpx2 as httpx  # the HTTP client the anthropic SDK is built on
import pytest
from clocks import Clock

import memdb
import memdb.llm.client
from memdb.errors import ConfigError, LLMError
from memdb.llm.adapters import AnthropicDistiller, AnthropicExtractor, AnthropicReflector, AnthropicSummarizer
from memdb.llm.client import looks_like_a_secret
from memdb.memory.models import Episode
from memdb.memory.sanitize.known import known_secrets

UTC = dt.UTC
T0 = dt.datetime(2026, 6, 3, 6, 0, tzinfo=UTC)
HOUR = dt.timedelta(hours=1)
KEY = "sk-ant-api03-" + "S3cr3tKey" * 9 + "-xyzAA"
ECHO = f"invalid input near 'call jane.doe@example.com at +1 415 555 0199, card 4111 1111 1111 1111' x-api-key={KEY}"
ADAPTERS = (AnthropicSummarizer, AnthropicReflector, AnthropicExtractor, AnthropicDistiller)


def message(payload: Any = None, *, text: str | None = None, stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": text if text is not None else json.dumps(payload)}],
        "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 900, "output_tokens": 120},
    }  # fmt: skip


def error(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


Reply = Callable[[httpx.Request], httpx.Response]


def client(reply: Reply, seen: list[httpx.Request], max_retries: int = 2, **credentials: str) -> anthropic.Anthropic:
    """The real SDK, as the adapters build it (two retries by default), over a mocked transport."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return reply(request)

    return anthropic.Anthropic(
        **(credentials or {"api_key": "sk-ant-test"}),
        max_retries=max_retries,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


def always(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return lambda request: httpx.Response(status, json=body, headers=headers or {})


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The SDK's retry sleeps, recorded instead of slept."""
    waits: list[float] = []
    monkeypatch.setattr(anthropic._base_client.time, "sleep", waits.append)
    return waits


@pytest.fixture
def db(tmp_path: Path) -> Iterator[memdb.Database]:
    database = memdb.open(tmp_path / "db", clock=Clock(T0))
    yield database
    database.close()


def failures(db: memdb.Database, owners: list[str]) -> None:
    for owner in owners:
        db.owner(owner).record("debug", f"{owner}'s deploy failed", outcome="failure", tags=["deploy"], ts=T0 - HOUR)


def files(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.iterdir() if p.is_file())


# --- errors that echo the request ---------------------------------------------------------------


def test_an_api_error_echoing_the_request_is_redacted_wherever_it_goes(tmp_path: Path, slept: list[float]) -> None:
    """An API error may quote the request (an email of the prompt, a key of a header). Its text
    reached the reflect report, the distill reason (MCP's end_session returns it) and a pattern
    batch on disk raw; it is sanitized where the LLMError is made."""
    clock = Clock(T0)
    reply = always(400, error("invalid_request_error", ECHO))
    extractor = AnthropicExtractor(client=client(reply, []))
    path = tmp_path / "echo"
    with memdb.open(path, clock=clock, pattern_extractor=extractor, distiller=AnthropicDistiller(client=client(reply, []))) as db:
        failures(db, ["ana"])
        report = db.reflect(now=T0, reflector=AnthropicReflector(client=client(reply, [])))
        mem = db.owner("ana")
        for i in range(5):
            mem.record("debug", f"attempt {i}", outcome="failure", ts=T0 - HOUR + i * dt.timedelta(minutes=1))
        db.maintain()
        (batch,) = db.patterns.batch_status("ana", "debug")
        mem.record_exchange("s1", "deploy please", "on it")
        done = mem.close_session("s1", kind="debug")
        said = [*report.errors, batch["error"], done.reason]
        for text in said:
            assert "BadRequestError" in text and "<EMAIL_1>" in text and "<SECRET_1>" in text, text
            assert "jane.doe" not in text and KEY not in text and "4111" not in text and "555 0199" not in text
    raw = files(path)
    assert b"jane.doe" not in raw and KEY.encode() not in raw and b"4111 1111" not in raw


@pytest.mark.parametrize("credential", ["api_key", "auth_token"])
def test_the_clients_key_is_never_shown_or_stored(tmp_path: Path, slept: list[float], credential: str) -> None:
    """A gateway's key has no shape the patterns know: echoed in a 401, it reached reflect's
    errors, close_session's reason (MCP's end_session) and a pattern batch on disk raw. The
    client's key (or auth token) is a registered secret from its first call."""
    key = "team42-gw-7fa9c3Zq8K2xw9Lm3P"
    reply = always(401, error("authentication_error", f"API key {key} not valid"))

    def sdk() -> anthropic.Anthropic:
        return client(reply, [], **{credential: key})

    path = tmp_path / "key"
    with memdb.open(
        path, clock=Clock(T0), pattern_extractor=AnthropicExtractor(client=sdk()), distiller=AnthropicDistiller(client=sdk())
    ) as db:
        mem = db.owner("ana")
        for i in range(5):
            mem.record("debug", f"attempt {i}", outcome="failure", ts=T0 - HOUR + i * dt.timedelta(minutes=1))
        report = db.reflect(now=T0, reflector=AnthropicReflector(client=sdk()))
        db.maintain()
        (batch,) = db.patterns.batch_status("ana", "debug")
        mem.record_exchange("s1", "deploy please", "on it")
        done = mem.close_session("s1", kind="debug")
        for text in [*report.errors, batch["error"], done.reason]:
            assert "AuthenticationError" in text and "API key <SECRET_1> not valid" in text and key not in text, text
    assert key.encode() not in files(path)


@pytest.mark.parametrize("placeholder", ["anything", "password", "changeme", "not-needed", "sk-no-key-required", "my-secret-password-123"])
def test_a_placeholder_key_is_no_secret(db: memdb.Database, placeholder: str) -> None:
    """Gateways document placeholder keys ("anything", "not-needed"): registered as a secret of
    the process after one call, every capture after it stored "Is there <SECRET_1> else"."""
    failures(db, ["ana"])
    reply = always(401, error("authentication_error", "invalid x-api-key"))
    report = db.reflect(now=T0, reflector=AnthropicReflector(client=client(reply, [], api_key=placeholder)))
    assert report.errors and placeholder not in known_secrets()
    said = f"Is there {placeholder} else I can help with?"
    assert db.owner("ana").record_exchange("s1", said, "no").summary == said


@pytest.mark.parametrize(
    ("credential", "secret"),
    [
        ("team42-gw-7fa9c3Zq8K2xw9Lm3P", True),
        ("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", True),
        ("sk-9hW_MkK1LRDk2g9Jdl-gLA", True),
        ("4f1c7a9e2b8d3c6f0a5e9b2d7c4f1a8e", True),
        ("anything", False),
        ("sk-1234", False),
        ("YOUR_API_KEY_HERE_12345", False),
        ("litellm-master-key-12345", False),
        ("changeme1234567890123", False),
        ("a1b2c3d4 e5f6g7h8 i9j0k1", False),  # a space: a phrase, not a key
    ],
)
def test_which_credentials_read_as_a_secret(credential: str, secret: bool) -> None:
    assert looks_like_a_secret(credential) is secret


# --- answers memdb cannot use -------------------------------------------------------------------


DEEP = '{"lessons": ' + "[" * 5000 + "]" * 5000 + "}"


def test_a_deeply_nested_answer_is_unusable(db: memdb.Database, tmp_path: Path) -> None:
    """Arrays nested 5,000 deep (10 kB of answer) raised RecursionError out of reflect, for every
    owner, and out of close_session; it is an answer that is not the requested JSON."""
    failures(db, ["ana", "bo"])
    reply = always(200, message(text=DEEP))
    report = db.reflect(now=T0, reflector=AnthropicReflector(client=client(reply, [])))
    assert report.not_called == [] and len(report.errors) == 2
    assert all("the answer is not the requested JSON" in e for e in report.errors)
    with memdb.open(tmp_path / "distill", clock=Clock(T0), distiller=AnthropicDistiller(client=client(reply, []))) as other:
        mem = other.owner("ana")
        mem.record_exchange("s1", "deploy please", "on it")
        done = mem.close_session("s1", kind="debug")
        assert done.status == "failed" and "the answer is not the requested JSON" in done.reason


BAD = (
    "Deploy failed \ud800 badly, ask jane.doe@example.com"  # a lone surrogate, as the JSON escape "\ud800" decodes: UTF-8 cannot encode it
)
GOOD = "Check the Twilio signing secret first"
PATTERN = "Deploys fail while the migration lock is held"


def _answers_with_a_surrogate(request: httpx.Request) -> httpx.Response:
    """Lessons and patterns: a good one and one memdb cannot store; a session's fields: its summary unstorable."""
    body = json.loads(request.content)
    ids = re.findall(r"\[([^\]]+)\] \d{4}-", body["messages"][0]["content"])
    schema = json.dumps(body.get("output_config", ""))
    if "lessons" in schema:
        return httpx.Response(200, json=message({"lessons": [{"text": GOOD, "cites": ids[:2]}, {"text": BAD, "cites": ids[:2]}]}))
    if "patterns" in schema:
        return httpx.Response(200, json=message({"patterns": [{"text": PATTERN, "cites": ids[:3]}, {"text": BAD, "cites": ids[:3]}]}))
    if body.get("output_config") is None:
        return httpx.Response(200, content=json.dumps(message(text=BAD)).encode(), headers={"content-type": "application/json"})
    return httpx.Response(200, json=message({"summary": BAD, "outcome": "failure"}))


def test_one_unstorable_item_costs_itself_only(tmp_path: Path) -> None:
    """A lone surrogate in a lesson or a pattern reached the store, which raised out of reflect
    and maintain; then the client refused the whole answer, so one bad lesson threw away the good
    ones (item.py: stored 0). The item memdb cannot store costs itself only; a session's field
    that cannot be stored fails the close, its reason naming the field, never quoting the text."""
    clock = Clock(T0)
    reply = _answers_with_a_surrogate
    opened = memdb.open(
        tmp_path / "db", clock=clock, pattern_extractor=AnthropicExtractor(client=client(reply, [])),
        distiller=AnthropicDistiller(client=client(reply, [])),
    )  # fmt: skip
    with opened as db:
        for owner in ("ana", "bo"):
            for i in range(5):
                db.owner(owner).record("debug", f"{owner} deploy {i} failed", outcome="failure", ts=clock.now)
                clock.advance(minutes=1)
        report = db.reflect(reflector=AnthropicReflector(client=client(reply, [])))
        assert report.errors == [] and report.stored == 2
        assert all(report.owners[o].invalid == 1 for o in ("ana", "bo"))
        clock.advance(days=40)  # idle and unread: due for archiving
        done = db.maintain()
        assert done.archived == 10
        for owner in ("ana", "bo"):
            (batch,) = db.patterns.batch_status(owner, "debug")
            assert batch["status"] == "done" and batch["discarded"] == 1 and batch["error"] is None
            assert sorted(e.text for e in db.review_queue(owner)) == [GOOD, PATTERN]  # the lesson and the pattern
        mem = db.owner("ana")
        mem.record_exchange("s1", "deploy please", "on it")
        closed = mem.close_session("s1", kind="debug")
        assert closed.status == "failed" and closed.reason.endswith("the answer's summary cannot be stored (a lone surrogate)")


def test_a_text_answer_memdb_cannot_store_is_unusable(db: memdb.Database) -> None:
    """A summary is one item: a lone surrogate in it makes the whole answer unusable, with a message
    that quotes nothing of it."""
    calls = memdb.llm.client.Calls(
        "test", "summary", "claude-haiku-4-5", 100, timeout=10, max_retries=0, max_wait=10, run_seconds=60, stop_after=3
    )
    with pytest.raises(LLMError) as info:
        calls.text(client(_answers_with_a_surrogate, []), "system", "prompt")
    assert (
        str(info.value)
        == "summary with claude-haiku-4-5: the answer holds a lone surrogate, which UTF-8 cannot encode; nothing of it is used"
    )


# --- retries within bounds ----------------------------------------------------------------------


def _in_an_hour() -> str:
    return email.utils.format_datetime(dt.datetime.now(UTC) + HOUR, usegmt=True)


@pytest.mark.parametrize(
    "headers", [{"retry-after": "3600"}, {"retry-after-ms": "3600000"}, {"retry-after": "__date__"}], ids=["seconds", "ms", "date"]
)
def test_a_long_retry_after_fails_the_call_at_once(db: memdb.Database, slept: list[float], headers: dict[str, str]) -> None:
    """The SDK waits whatever retry-after asks: one 429 with 3600 held a reflect run two hours per
    owner. A wait past ``max_wait`` fails the call at once, saying so; a short one is waited for."""
    headers = {k: _in_an_hour() if v == "__date__" else v for k, v in headers.items()}
    failures(db, ["ana", "bo"])
    seen: list[httpx.Request] = []
    report = db.reflect(
        now=T0, reflector=AnthropicReflector(client=client(always(429, error("rate_limit_error", "slow down"), headers), seen))
    )
    assert len(seen) == 2 and slept == []  # one attempt per owner, no sleep
    assert all("HTTP 429, and the API asks to wait 3" in e and "waits at most 10 s" in e for e in report.errors)

    answers = iter([httpx.Response(429, json=error("rate_limit_error", "slow down"), headers={"retry-after": "2"})])
    seen.clear()
    ok = AnthropicReflector(client=client(lambda _: next(answers, httpx.Response(200, json=message({"lessons": []}))), seen))
    db.owner("ana").record("debug", "another try", outcome="failure", ts=T0)
    assert db.reflect(now=T0, owners=["ana"], reflector=ok).errors == [] and len(seen) == 2 and slept == [2.0]


def test_a_run_stops_calling_after_failures_in_a_row(db: memdb.Database, slept: list[float]) -> None:
    """With the API hanging, twenty owners were sixty attempts of 60 s each. After ``stop_after``
    calls in a row fail the run calls no more, and says which owners it did not reflect; the
    next run tries again."""
    owners = [f"user{i:02d}" for i in range(20)]
    failures(db, owners)
    seen: list[httpx.Request] = []

    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    reflector = AnthropicReflector(client=client(hang, seen))
    report = db.reflect(now=T0, reflector=reflector)
    assert len(seen) == 9 and reflector.usage.calls == 3  # three calls of three attempts each
    assert report.not_called == owners[3:] and "17 owners not reflected" in str(report) and "3 reflector failures" in str(report)
    assert all("not called: the last 3 calls of this run failed (APITimeoutError" in report.owners[o].error for o in owners[3:])  # type: ignore[operator]
    db.reflect(now=T0 + HOUR, reflector=reflector)
    assert len(seen) == 18  # a new run: three calls again


def test_unusable_answers_stop_no_other_owner(db: memdb.Database) -> None:
    """A review's find: three owners whose records the model refused to reflect on stopped every
    owner after them, every day: only the API's own failures count toward ``stop_after``."""
    owners = [f"user{i:02d}" for i in range(6)]
    failures(db, owners)
    seen: list[httpx.Request] = []

    def refuse_first_three(request: httpx.Request) -> httpx.Response:
        refused = len(seen) <= 3
        return httpx.Response(200, json=message({"lessons": []}, stop="refusal" if refused else "end_turn"))

    report = db.reflect(now=T0, reflector=AnthropicReflector(client=client(refuse_first_three, seen)))
    assert len(seen) == 6 and report.not_called == []


def test_a_run_has_a_deadline(db: memdb.Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """No call starts past the run's deadline, and an attempt's timeout is cut to the time left."""
    now = [0.0]
    monkeypatch.setattr(memdb.llm.client, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    owners = ["a1", "a2", "a3", "a4"]
    failures(db, owners)
    seen: list[httpx.Request] = []

    def slow(request: httpx.Request) -> httpx.Response:
        now[0] += 3.0  # each answer takes three seconds
        return httpx.Response(200, json=message({"lessons": []}))

    report = db.reflect(now=T0, reflector=AnthropicReflector(client=client(slow, seen), run_seconds=5))
    assert len(seen) == 2 and report.not_called == ["a3", "a4"]
    assert "not called: the run's deadline (5 s) has passed" in report.owners["a3"].error  # type: ignore[operator]
    assert [r.headers["x-stainless-read-timeout"] for r in seen] == ["5.0", "2.0"]  # the time left in the run


def test_a_run_s_deadline_leaves_no_owner_out_for_good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review's find: every run began with the first owner, so with a deadline that passes after
    two calls the last two owners were never reflected, day after day. A run asks the owners asked
    longest ago first, and reports them in the order named."""
    now = [0.0]
    monkeypatch.setattr(memdb.llm.client, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    owners = ["a1", "a2", "a3", "a4"]
    seen: list[httpx.Request] = []

    def slow(request: httpx.Request) -> httpx.Response:
        now[0] += 3.0
        return httpx.Response(200, json=message({"lessons": []}))

    reflector = AnthropicReflector(client=client(slow, seen), run_seconds=5)
    clock = Clock(T0)
    left_out = []
    with memdb.open(tmp_path / "db", clock=clock) as db:
        for _ in range(3):
            for owner in owners:  # something new for everyone, every day
                db.owner(owner).record("debug", f"{owner}'s deploy failed again", outcome="failure", ts=clock.now - HOUR)
            report = db.reflect(reflector=reflector)
            assert list(report.owners) == owners
            left_out.append(report.not_called)
            clock.advance(days=1)
    assert left_out == [["a3", "a4"], ["a1", "a2"], ["a3", "a4"]]


# --- answers that did not finish ----------------------------------------------------------------


@pytest.mark.parametrize(("stop", "said"), [("max_tokens", "cut off at max_tokens=2000"), ("refusal", "declined to answer")])
def test_an_unfinished_answer_is_not_used(db: memdb.Database, stop: str, said: str) -> None:
    """A complete JSON answer whose stop_reason is max_tokens or refusal was read as lessons."""
    failures(db, ["ana"])
    ep = db.owner("ana").recall(limit=1).memories[0].episode
    answer = message({"lessons": [{"text": "Rotate the secret everywhere", "cites": [ep.id]}]}, stop=stop)
    report = db.reflect(now=T0, reflector=AnthropicReflector(client=client(always(200, answer), [])))
    assert report.stored == 0 and db.review_queue() == []
    (failure,) = report.errors
    assert said in failure and f"stop_reason '{stop}'" in failure


# --- options ------------------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.__name__)
@pytest.mark.parametrize(
    ("option", "named"),
    [
        ({"model": ""}, "model=''"), ({"model": 42}, "model=42"), ({"max_tokens": 0}, "max_tokens=0"),
        ({"max_tokens": -5}, "max_tokens=-5"), ({"timeout": -1}, "timeout=-1"), ({"timeout": "soon"}, "timeout='soon'"),
        ({"max_retries": -3}, "max_retries=-3"), ({"max_retries": 10**6}, "max_retries=1000000"),
        ({"max_wait": float("nan")}, "max_wait=nan"), ({"run_seconds": 0}, "run_seconds=0"), ({"stop_after": 0}, "stop_after=0"),
    ],
)  # fmt: skip
def test_options_are_checked_when_an_adapter_is_made(adapter: type[Any], option: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=f"^{adapter.__name__}: {named}: "):
        adapter(api_key="sk-ant-test", **option)


@pytest.mark.parametrize(
    ("adapter", "option", "named"),
    [(AnthropicReflector, {"max_episodes": 0}, "max_episodes=0"), (AnthropicReflector, {"max_episodes": -25}, "max_episodes=-25"),
     (AnthropicDistiller, {"max_events": 1}, "max_events=1")],
)  # fmt: skip
def test_how_much_an_adapter_reads_is_checked(adapter: type[Any], option: dict[str, Any], named: str) -> None:
    """``max_episodes=0`` sent the whole window, and -25 all but the first 25."""
    with pytest.raises(ConfigError, match=named):
        adapter(api_key="sk-ant-test", **option)


def test_a_given_client_keeps_to_the_adapters_retries(slept: list[float]) -> None:
    """A client given with more retries than the adapter allows is held to the adapter's."""
    seen: list[httpx.Request] = []
    summarizer = AnthropicSummarizer(
        client=client(always(529, error("overloaded_error", "Overloaded")), seen, max_retries=50), max_retries=1
    )
    ep = Episode(id="x", owner="a", ts=T0, kind="exchange", summary="s")
    with pytest.raises(LLMError, match=r"InternalServerError|Overloaded"):
        summarizer.summarize([ep])
    assert len(seen) == 2 and summarizer.usage.calls == 1 and summarizer.usage.attempts == 2
