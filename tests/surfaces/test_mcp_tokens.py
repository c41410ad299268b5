"""The bearer-token file: errors never echo a token or any part of one, and a token that could
never authenticate is refused when the file is read, not served to bare 401s.

``memdb mcp --transport http`` and ``memdb serve`` read tokens through ``load_tokens``. A file
grouping tokens in a sub-table printed both tokens whole (``token #1 maps to {...}``), and an
unquoted token with a dot printed its second half; a token with a non-ASCII character or white
space around it was accepted, counted as served, and refused on every request.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdb.errors import ConfigError
from memdb.surfaces.mcp_server import _token_owner, load_tokens
from memdb.surfaces.serve import load_config

GOOD = "bob-token-0d9e8c7b6a5f4321"
WINDOW = 6  # no run of this many characters of a token may appear in an error


def _write(path: Path, content: str) -> Path:
    path.write_text(content, encoding="utf-8")
    path.chmod(0o600)
    return path


def _echoes(message: str, path: Path, secret: str) -> bool:
    """Whether ``message`` (the file's path taken out) holds ``WINDOW`` characters running of ``secret``."""
    said = message.replace(str(path), "")
    parts = [p for p in secret.replace(".", " ").split() if p]  # each half of a dotted token too
    return any(p[i : i + WINDOW] in said for p in parts for i in range(max(1, len(p) - WINDOW + 1)))


# tokens of capitals and digits: no run of six of them occurs in an error's own words
_TOKEN = st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16, max_size=40)


@st.composite
def _files(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A token file of some shape people write (or mistype), and the tokens in it."""
    one, two = draw(_TOKEN), draw(_TOKEN)
    cut = draw(st.integers(min_value=1, max_value=len(one) - 1))
    dotted = f"{one[:cut]}.{one[cut:]}"  # written unquoted: TOML reads a table {first: {second: ...}}
    value = draw(st.sampled_from(["3", "4.5", "true", '["alice"]', f'{{ "{two}" = "bob" }}', f'"{two}"', f'"{one}"',
                                  "1979-05-27T07:32:00Z", '" alice"', '"a\\u0000b"', '""', f'"{one.lower()}x{two.lower()}"']))  # fmt: skip
    shapes = [
        f'[tokens]\n"{one}" = {value}\n',
        f'[tokens]\n[tokens.production-agents]\n"{one}" = "alice"\n"{two}" = "bob"\n',
        f'[tokens]\n{dotted} = "alice"\n',
        f'{dotted} = "alice"\n[tokens]\n"{two}" = "bob"\n',
        f'"{one}" = "alice"\n[tokens]\n"{two}" = "bob"\n',
        f'[{one}]\n"{two}" = "bob"\n',
        f'[tokens]\n"{one[:cut]}" = "alice"\n',
        f'[tokens]\n"{one}" = "alice"\n"{two} = "bob"\n',
        f'[tokens]\n"{one}" = "alice"\n"{one}" = "bob"\n',
        f'[tokens]\n" {one}" = "alice"\n',
        f'[tokens]\n"{one}ñ" = "alice"\n',
        f'[tokens]\n"{one}" = "alice"\n[teams]\n{dotted} = ["alice"]\n',
        f'[tokens]\n"{one}" = "alice"\n[reviewers]\nalice = "{two}"\n',
        f'[tokens]\n"{one}" = "alice"\n[reviewers]\n{dotted} = ["alice"]\n',
        f'[tokens]\n"{one}" = "alice"\n[schedule]\n{dotted} = 3\n',
        f'[tokens]\n"{one}" = "alice"\n[llm]\n{dotted} = "claude-haiku-4-5"\n',
    ]
    return draw(st.sampled_from(shapes)), [one, two]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_files())
def test_token_file_errors_never_echo_any_part_of_a_token(tmp_path: Path, case: tuple[str, list[str]]) -> None:
    content, secrets = case
    path = _write(tmp_path / "tokens.toml", content)
    for load in (load_tokens, load_config):
        try:
            load(path)
        except ConfigError as exc:
            for secret in secrets:
                assert not _echoes(str(exc), path, secret), f"{load.__name__} echoed part of a token: {exc}"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (f'[tokens]\n[tokens.production-agents]\n"{GOOD}" = "alice"\n', "token #1 maps to a table, not an owner name"),
        ('[tokens]\nk9Xq2LmPz7Rt4Wv8.Yb3Nc6Hd1Jf5Gs0Ae = "alice"\n', "a token with a dot left unquoted"),
        ('k9Xq2LmPz7Rt4Wv8.Yb3Nc6Hd1Jf5Gs0Ae = "alice"\n[tokens]\n', "1 unknown table(s), not shown as they may be part of a token"),
        (f'[tokens]\n"{GOOD}" = 3\n', "token #1 maps to a number, not an owner name"),
        (f'[tokens]\n"{GOOD}" = ["alice"]\n', "token #1 maps to a list"),
        (f'[tokens]\n"{GOOD}" = "{GOOD}"\n', "token #1 maps to a token, not an owner name"),
        (f'[tokens]\n"{GOOD}" = "{"x" * 70}"\n', "token #1: owner (not shown: it may be a token): must be 1-64 printable"),
        (f'[tokens]\n"{GOOD}" = " ana"\n', "token #1: owner ' ana'"),  # a short name cannot be a token: shown
        (f'[token]\n"{GOOD}" = "ana"\n', "unknown key 'token'"),  # a misspelled table is still named
    ],
)
def test_token_file_errors_say_what_is_wrong_without_the_token(tmp_path: Path, content: str, said: str) -> None:
    path = _write(tmp_path / "tokens.toml", content)
    with pytest.raises(ConfigError) as info:
        load_tokens(path)
    message = str(info.value)
    assert said in message
    for secret in (GOOD, "k9Xq2LmPz7Rt4Wv8.Yb3Nc6Hd1Jf5Gs0Ae", "x" * 70):
        assert not _echoes(message, path, secret), message


@pytest.mark.parametrize(
    ("token", "said"),
    [
        (" erin-token-with-leading-space-xyz", "begins or ends with white space"),
        ("erin-token-with-trailing-space-xyz ", "begins or ends with white space"),
        ("erin-token-with-trailing-tab-xyz\t", "begins or ends with white space"),
        ("contraseña-Kq9vZ-de-dave-2026", "character 9 is outside printable ASCII"),
        ("dave-token-with-a-bell-\u0007-inside", "character 24 is outside printable ASCII"),
        ("dave-token-emoji-\U0001f511-2026-xyz", "outside printable ASCII"),
    ],
)
def test_tokens_that_could_never_authenticate_are_refused_at_load(tmp_path: Path, token: str, said: str) -> None:
    path = _write(tmp_path / "tokens.toml", f'[tokens]\n"{GOOD}" = "bob"\n{json.dumps(token, ensure_ascii=False)} = "dave"\n')
    for load in (load_tokens, load_config):
        with pytest.raises(ConfigError) as info:
            load(path)
        message = str(info.value)
        assert message.startswith(f"config {str(path)!r}: token #2") and said in message, message
        assert not _echoes(message, path, token.strip()) and "ñ" not in message and "\U0001f511" not in message


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=st.text(min_size=16, max_size=40))
def test_every_token_the_file_accepts_authenticates(tmp_path: Path, token: str) -> None:
    """A request sends the token as UTF-8 bytes, which the server reads as latin-1 (ASGI headers)."""
    path = _write(tmp_path / "tokens.toml", f'[tokens]\n{json.dumps(token, ensure_ascii=False)} = "dave"\n')
    try:
        tokens = load_tokens(path)
    except ConfigError as exc:
        assert not _echoes(str(exc), path, token) or token.strip() != token or not token.isascii(), str(exc)
        return
    header = ("Bearer " + token).encode("utf-8").decode("latin-1")
    assert _token_owner(header, tokens) == "dave"


def test_a_served_token_is_never_stored(tmp_path: Path) -> None:
    """A probe's find: the server's own token, written by an agent anywhere but after "Bearer",
    was stored raw (and, shared in a lesson, let another owner act as its owner). A token with
    words in it has no shape the sanitizer's patterns know; the server registers its tokens."""
    pytest.importorskip("mcp")
    import memdb
    from memdb.memory.sanitize import unregister_secrets
    from memdb.surfaces.mcp_server import build_server

    token = "correct-horse-battery-staple-4242"
    with memdb.open(tmp_path / "db") as db:
        try:
            build_server(db, tokens={token: "ana"})
            ep = db.owner("ana").record("debug", f"the agent pasted {token} into the ticket", outcome="failure")
            assert token not in ep.summary and "<SECRET_" in ep.summary
        finally:
            unregister_secrets([token])
    assert token.encode() not in (tmp_path / "db" / "data.mdb").read_bytes()
