"""Random tokens of no known shape (a server's bearer token, made as docs/mcp.md says with
secrets.token_urlsafe(32)): read as random where they mix capitals, small letters and digits and
read as no words; and the exact secrets a process registers, replaced whatever their shape."""

from __future__ import annotations

import random
import secrets
import string
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import memdb
from memdb.errors import ConfigError
from memdb.memory.sanitize import RegexSanitizer, register_secrets, sanitize_fields, unregister_secrets
from memdb.memory.sanitize.known import known_secrets

S = RegexSanitizer()


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


# --- the random-token rule --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [
        "r8n-UZsnf-DJyq4I3goRJuGf6bjgxO4djC9l65sqxTU",  # the probe's token_urlsafe(32)
        "Zq9vLm2Xw8RtB4nK7pD1sF6hJ3gL0cV5xY2aQ8wE",  # 40 letters and digits
        "AbC9_dE8-fG7hI6jK5lM4nO3pQ2rS1tU0vWx",  # 36, "_" and "-" in it
    ],
)
def test_a_random_token_in_free_text_is_a_secret(token: str) -> None:
    assert clean(f"Set the new agent up with token {token} today") == "Set the new agent up with token <SECRET_1> today"
    assert clean(f"({token})") == "(<SECRET_1>)"


def test_token_urlsafe_tokens_are_found() -> None:
    """Seeded, so the suite is deterministic: of 10,000 token_urlsafe(32) about one in 1,000 is
    missed, as the README says (every one with no digit, and those that read as words by chance;
    detect.py's comment); a bound of one in 600 fails a rate much worse than documented."""
    rng = random.Random(20261207)
    alphabet = string.ascii_letters + string.digits + "-_"
    tokens = ["".join(rng.choice(alphabet) for _ in range(43)) for _ in range(10_000)]
    missed = [t for t in tokens if clean(f"token {t} here") == f"token {t} here"]
    assert len(missed) <= 16, (len(missed), missed[:5])


@pytest.mark.parametrize(
    "text",
    [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # a SHA-256 in hex
        "0xA9FB57DBA1EEA9BC3E660A909D838D718C397AA3B561A6F7901E0E82974856A7",  # a hex constant
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",  # a git sha
        "2fb51598-3853-4178-84f8-e405a4e715ae",  # a UUID
        "20230914T223155647Z1b64098b-4ab7-43f6-afee-992304f198d8",  # a time and a UUID
        "20260701T120000123456Z-abcdef",  # a memdb id
        "Wav2Vec2ConformerRotaryPositionalEmbedding",  # identifiers of code
        "Qwen2_5OmniTalkerCausalLMOutputWithPast",
        "PPOCRV5MobileDetResidualSqueezeExcitationLayer",
        "report_2026_Q3_FinalVersion_v2_ACME_Holdings",
        "test_a_command_s_own_password_option_is_a_secret",
        "MEMDB_BENCH_SINGLE_SYNC_ROUNDS_2026",
        "https://docs.google.com/document/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit",  # a path segment
        r"C:\Users\ana\1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms.txt",
        "Zq9vLm2Xw8RtB4nK7pD1sF6h",  # random but short: 24
        "how-to-configure-the-deployment-pipeline-v2-for-production",
    ],
)
def test_what_is_no_random_token_stays(text: str) -> None:
    assert clean(f"see {text} here") == f"see {text} here"


def test_a_random_token_is_replaced_in_every_field_of_the_episode() -> None:
    token = "r8n-UZsnf-DJyq4I3goRJuGf6bjgxO4djC9l65sqxTU"
    out = S.sanitize({"summary": f"token {token}", "content": f"retried with {token}."})
    assert out == {"summary": "token <SECRET_1>", "content": "retried with <SECRET_1>."}


def test_the_random_token_rule_stays_linear() -> None:
    clean("aB3" * 20000)
    clean(("aB3" * 11 + " ") * 2000)


# --- exact secrets this process holds -------------------------------------------------------------------


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Two tokens registered for the test, unregistered after it (the registry is process-wide)."""
    tokens = [secrets.token_urlsafe(32), "plain-words-token-of-a-server"]
    register_secrets(tokens)
    yield tokens
    unregister_secrets(tokens)
    assert not set(tokens) & set(known_secrets())


def test_a_registered_secret_is_replaced_whatever_its_shape(registered: list[str]) -> None:
    shaped, words = registered
    assert clean(f"with token {words} today") == "with token <SECRET_1> today"  # no digit, no mix: no rule finds it
    assert clean(f"x{shaped}y and {words}") == "x<SECRET_1>y and <SECRET_2>"  # inside a word too
    assert clean(f"with token {words[:10]}\u200b{words[10:]}") == "with token <SECRET_1>"  # a hidden character inside


class Identity:
    """A custom sanitizer that knows nothing of the registry."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return dict(texts)


def test_a_registered_secret_is_replaced_after_any_sanitizer(registered: list[str]) -> None:
    _, words = registered
    out = sanitize_fields(Identity(), {"a": f"<SECRET_2> and {words}", "b": words})
    assert out == {"a": "<SECRET_2> and <SECRET_3>", "b": "<SECRET_3>"}  # numbered after those there


def test_a_registered_server_token_never_reaches_disk(tmp_path: Path, registered: list[str]) -> None:
    """The MCP probe's repro without the server: its tokens, once registered, are replaced in an
    episode, a lesson and under a custom sanitizer; an unregistered one of no shape is not."""
    _, words = registered
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("alice")
        ep = mem.record("debug", f"Set the new agent up with token {words} today", outcome="success")
        assert ep.summary == "Set the new agent up with token <SECRET_1> today"
        mem.record_exchange(session="s1", user_message=f"use {words}", response="ok")
    with memdb.open(tmp_path / "db2", sanitizer=Identity()) as db:
        assert words not in db.owner("alice").record("debug", f"token {words}", outcome="success").summary
    raw = b"".join(p.read_bytes() for d in ("db", "db2") for p in (tmp_path / d).rglob("*") if p.is_file())
    assert words.encode() not in raw


def test_registering_twice_needs_two_unregisters() -> None:
    token = secrets.token_urlsafe(32)
    register_secrets([token])
    register_secrets([token])
    unregister_secrets([token])
    assert token in known_secrets()
    unregister_secrets([token, "never-registered-value"])
    assert token not in known_secrets()


@pytest.mark.parametrize("value", ["sh0rt", "   admin  ", 12345678])
def test_a_short_or_non_text_secret_is_refused_without_echoing_it(value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        register_secrets(["a-long-enough-token", value])  # type: ignore[list-item]
    assert str(value).strip() not in str(caught.value) and "#2" in str(caught.value)
    assert "a-long-enough-token" not in known_secrets()  # nothing registered
