"""Planted secrets (issue 25): every form of secret and personal data the issue lists, and those
the older tests plant, go in through every capture path (the API's record with every text field
and decisions, record_exchange, record_tool_call/result with JSON nested in strings,
import_episodes with its source, erase and delete reasons, save_lesson and a rejection's reason,
an owner name; the ``memdb record`` and ``memdb import`` commands; the MCP tools), then every
byte of the LMDB files after ``db.compact()`` and every error message raised on the way is
searched for them. Nothing planted may be found; placeholders and a canary must be.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.cli import main
from memdb.errors import MemdbError
from memdb.surfaces.mcp_server import tool_specs

pytestmark = pytest.mark.lmdb_only(reason="reads LMDB's files byte by byte")

UTC = dt.UTC
NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
CANARY = "zebracorn-canary-31337"  # plain text that must reach disk: proves the bytes are searched

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAplantedPEMbody0123\n-----END RSA PRIVATE KEY-----"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlcGxhbnRlZDAxMjM0NTY3ODk"

# name -> (the text as planted, the values that must never be found)
FORMS: dict[str, tuple[str, tuple[str, ...]]] = {
    # issue 25
    "url-dotless": ("postgres://admin:Hunter2pw@localhost/app", ("Hunter2pw",)),
    "url-redis": ("redis://:Redis7cache@cache:6379/0", ("Redis7cache",)),
    "url-dotted": ("postgresql://app:Dotted5pass@db.example.com:5432/app", ("Dotted5pass",)),
    "password": ("password=xkcd936q", ("xkcd936q",)),
    "db-password": ("DB_PASSWORD=Pg4dmin2026", ("Pg4dmin2026",)),
    "api-key-json": ('{"api_key": "ak-9f8e7d6c5b4a"}', ("ak-9f8e7d6c5b4a",)),
    "client-secret": ("client_secret: cs-0a1b2c3d4e", ("cs-0a1b2c3d4e",)),
    "aws": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED", ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED",)),
    "x-api-key": ("X-Api-Key: xak-77aa88bb99cc", ("xak-77aa88bb99cc",)),
    "json-in-json": (json.dumps({"body": json.dumps({"api_key": "nested-ak-5566"})}), ("nested-ak-5566",)),
    "phone-00": ("0044 20 7946 0960", ("0044 20 7946 0960",)),
    "card-dots": ("4012.8888.8888.1881", ("4012.8888.8888.1881", "4012888888881881")),
    "basic": ("Authorization: Basic dXNlcjpodW50ZXIyMDI2", ("dXNlcjpodW50ZXIyMDI2",)),
    "stripe-sk": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", ("4eC39HqLyjWDarjtT1zdp7dc",)),
    "stripe-rk": ("rk_live_51H8abcdefGHIJKLmnopQRSTuv", ("51H8abcdefGHIJKLmnopQRSTuv",)),
    "slack-webhook": (
        "https://hooks.slack.com/services/T01PLANTED/B02PLANTED/abcdefGHIJKLmnop12345678",
        ("T01PLANTED/B02PLANTED/abcdefGHIJKLmnop12345678",),
    ),
    "gitlab": ("glpat-xY9_zW8-vU7tS6rQ5pO4", ("xY9_zW8-vU7tS6rQ5pO4",)),
    "npm": ("npm_plantedabcdefghijklmnopqrstuvwxyz012", ("plantedabcdefghijklmnopqrstuvwxyz012",)),
    "huggingface": ("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", ("jCBaQngSHiHDRYOcsMcifUcysGyaiybUWz",)),
    "twilio": ("AC0123456789abcdef0123456789abcdef", ("0123456789abcdef0123456789abcdef",)),
    # the older tests' forms
    "email": ("ana.lopez@example.com", ("ana.lopez@example.com", "ana.lopez")),
    "phone": ("+1 (415) 555-0132", ("+1 (415) 555-0132", "14155550132")),
    "card": ("4111 1111 1111 1111", ("4111 1111 1111 1111", "4111111111111111")),
    "iban": ("GB82 WEST 1234 5698 7654 32", ("GB82 WEST 1234 5698 7654 32", "GB82WEST12345698765432")),
    "ssn": ("123-45-6789", ("123-45-6789",)),
    "ip": ("203.0.113.77", ("203.0.113.77",)),
    "anthropic": ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", ("AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",)),
    "github": ("ghp_plantedabcdefghijklmnopqrstuvwxyz01", ("plantedabcdefghijklmnopqrstuvwxyz01",)),
    "aws-id": ("AKIAIOSFODNN7PLANTED", ("AKIAIOSFODNN7PLANTED",)),
    "jwt": (JWT, ("c2lnbmF0dXJlcGxhbnRlZDAxMjM0NTY3ODk",)),
    "pem": (PEM, ("MIIEowIBAAKCAQEAplantedPEMbody0123",)),
    "bearer": ("Authorization: Bearer planted.bearer.token-0123456789", ("planted.bearer.token-0123456789",)),
    # a helper's audit of the bytes on disk (2026-12-06)
    "go-assign": ('password := "GoAssign7pw"', ("GoAssign7pw",)),
    "ruby-hash": (":password => 'RubyHash7pw'", ("RubyHash7pw",)),
    "amp-value": ("DB_PASSWORD=Tr0ub4dor&3xKq9Zw", ("Tr0ub4dor", "3xKq9Zw")),
    "short-key": ("SMTP_PASS=SmtpPass7pw", ("SmtpPass7pw",)),
    "xml": ("<password>XmlPass7pw</password>", ("XmlPass7pw",)),
    "config-pair": ('<add key="ApiKey" value="CfgPair7key"/>', ("CfgPair7key",)),
    "env-pair": ('{"name": "DB_PASSWORD", "value": "EnvPair7pw"}', ("EnvPair7pw",)),
    "curl-u": ("curl -u admin:CurlUser7pw https://api.example.com", ("CurlUser7pw",)),
    "flag": ("deploy --password Flag7pwd --verbose", ("Flag7pwd",)),
    "whsec": ("whsec_Planted7WebhookSecretAbcdefghij", ("Planted7WebhookSecretAbcdefghij",)),
    "aws-pair": ("AKIAIOSFODNN7PAIRED1,wJalrXUtnFEMI/K7MDENG/bPxRfiCYPAIRED0001", ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYPAIRED0001",)),
    "url-query": ("mysql://root:Xq7?kd93Lz@localhost/app", ("Xq7?kd93Lz", "kd93Lz")),
    "phone-slash": ("030/12345678", ("030/12345678", "03012345678")),
    "phone-dots": ("01.23.45.67.89", ("01.23.45.67.89",)),
    "phone-in": ("mobile 98765 43210", ("98765 43210", "9876543210")),
    "iban-dashes": ("DE89-3704-0044-0532-0130-00", ("DE89-3704-0044-0532-0130-00", "DE89370400440532013000")),
    "ssn-spaced": ("219 09 9999", ("219 09 9999", "219099999")),
    "uk-ni": ("AB 12 34 56 C", ("AB 12 34 56 C", "AB123456C")),
    "pan": ("ABCPE1234F", ("ABCPE1234F",)),
    "aadhaar": ("Aadhaar 2345 6789 0124", ("2345 6789 0124", "234567890124")),
    "sin": ("SIN 130-692-544", ("130-692-544", "130692544")),
    "steuer-id": ("Steuer-ID 65929970489", ("65929970489",)),
    "sv-nr": ("SV-Nr 65 170839 J 003", ("65 170839 J 003", "170839")),
    "konto": ("Kontonummer 532013001 BLZ 37040045", ("532013001", "37040045")),
    "cvc": ("Visa security code 94713", ("94713",)),
    "tel-de": ("Tel. 089/123456-0", ("089/123456-0", "123456-0")),
    "said-password": ("the DATEV password is Winter2026!", ("Winter2026",)),
    "ip-padded": ("192.168.001.010", ("192.168.001.010",)),
    "aws-host": ("ip-10-20-30-41.ec2.internal", ("10-20-30-41",)),
    "email-url": ("mailto:ana.url%40example.com", ("ana.url%40example.com", "ana.url")),
    # a second audit (2026-12-08): a key labels its value as a word before it does
    "json-labels": ('{"pin": "48213579", "passport": "P7Q41K209", "routing_number": "021000021"}', ("48213579", "P7Q41K209", "021000021")),
}
# secrets split across a decisions key and its value: the value alone is ordinary text
SPLIT = {
    "password": "dpw-xkcd936q", "DB_PASSWORD": "dpw-Pg4dmin", "api_key": "dak-1234abcd", "client_secret": "dcs-5678efgh",
    "aws_secret_access_key": "daws-wJalrXUtn/K7MDENG", "X-Api-Key": "dxak-99zz88yy", "token": "dtok-00aa11bb22",
}  # fmt: skip
OWNER_EMAIL = "ana.secret1@example.com"
NESTED = ("dnest-Qw3rty", "djson-p4ss", "hk-7f7f7f7f", "tk-4242abcd", "tk-pw-9999", "tk-cs-8888", "tr-tok-7777")  # under secret keys below
# under keys that are labels ("cvc2 73914" in prose)
LABELLED = {"cvc2": 73914, "pin": "57139246", "passport_no": "K3Z88Q417", "accountNumber": 50013002, "sort-code": "20-00-09"}
NEEDLES = sorted(
    {n for _, needles in FORMS.values() for n in needles}
    | {*SPLIT.values(), *NESTED, OWNER_EMAIL, "ana.secret1"}
    | {str(v) for v in LABELLED.values()}
)
ALL = " ; ".join(text for text, _ in FORMS.values())  # every form in one text
LINES = "\n".join(text for text, _ in FORMS.values())  # each at the start of a line: JSON writes "\\n" before it
SHORT = [text for text, _ in FORMS.values() if len(text) <= 60 and "\n" not in text]  # as tags, participants, MCP summaries


def variants(needle: str) -> set[str]:
    """A needle as it could sit on disk: as written, without or with dashes for spaces, lower case, its digits."""
    forms = {needle, needle.replace(" ", ""), needle.replace(" ", "-"), needle.lower()}
    digits = re.sub(r"\D", "", needle)
    if len(digits) >= 10:
        forms.add(digits)
    return forms


def leaks(text: str | bytes) -> list[str]:
    """The needles found in ``text``."""
    data = text if isinstance(text, bytes) else text.encode()
    return [needle for needle in NEEDLES if any(form.encode() in data for form in variants(needle))]


def decisions() -> dict[str, Any]:
    return {
        **SPLIT,
        "passcode": 90817263,  # digits under a secret key
        "nested": {"credentials": {"user": "svc", "pw": "dnest-Qw3rty"}, "notes": [ALL]},
        "request": json.dumps({"headers": {"Authorization": FORMS["basic"][0].split(": ", 1)[1]}, "password": "djson-p4ss"}),
        "contact": FORMS["email"][0],
        "form": LABELLED,
    }


def as_json(ep: memdb.Episode) -> str:
    return ep.model_dump_json()


def errors_of(calls: Iterable[tuple[str, Callable[[], object]]]) -> list[str]:
    """Each call's error message; a call that raises nothing is a mistake in this test's list."""
    out = []
    for label, call in calls:
        try:
            call()
        except Exception as exc:  # builtin errors too: their messages reach logs just the same
            out.append(f"{label}: {type(exc).__name__}: {exc}")
        else:
            pytest.fail(f"{label}: raised nothing")
    return out


def test_planted_secrets_reach_neither_disk_nor_an_error_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db"
    messages: list[str] = []
    with memdb.open(path, clock=lambda: NOW) as db:
        db.configure(digest_chars=20_000)  # nothing planted is cut away before it is looked at
        mem = db.owner("ana")

        # the API, every text field of a record and its decisions
        ep = mem.record(
            "debug", ALL, outcome="failure", content=f"{CANARY} {ALL}", what_we_tried=ALL, what_happened=ALL, why=ALL,
            lesson=ALL, artifact=ALL, participants=SHORT, tags=SHORT[:20], decisions=decisions(), session="s1",
            ts=NOW - dt.timedelta(hours=2),
        )  # fmt: skip
        got = mem.get(ep.id)
        assert not leaks(as_json(got)), leaks(as_json(got))
        assert got.decisions["password"].startswith("<SECRET_") and got.decisions["passcode"].startswith("<SECRET_")
        assert "postgres://admin:<SECRET_" in got.content and "@localhost/app" in got.content  # scheme and host stay
        exchange = mem.record_exchange("s1", f"my settings: {ALL}", f"noted {ALL}")
        call = mem.record_tool_call(
            "s1", "http",
            {"url": FORMS["url-dotless"][0], "headers": {"Authorization": FORMS["basic"][0].split(": ", 1)[1], "X-Api-Key": "hk-7f7f7f7f"},
             "body": json.dumps({"api_key": "tk-4242abcd", "inner": json.dumps({"password": "tk-pw-9999", "text": ALL})}),
             "items": [ALL, {"client_secret": "tk-cs-8888"}], "lines": LINES, "escaped": json.dumps({"log": LINES}), "form": LABELLED},
        )  # fmt: skip
        result = mem.record_tool_result(
            call.id, {"status": 200, "body": json.dumps({"token": "tr-tok-7777", "echo": ALL}), "text": ALL, "lines": [LINES]}
        )
        for episode in (exchange, call, result):
            assert not leaks(as_json(mem.get(episode.id)))
        report = mem.import_episodes(
            [{"kind": "debug", "summary": ALL, "outcome": "partial", "content": ALL, "lesson": ALL, "decisions": decisions(),
              "tags": SHORT[:10], "ts": NOW - dt.timedelta(days=3)}],
            source=f"export mailed by {FORMS['email'][0]} with password={FORMS['password'][0].split('=')[1]} {FORMS['url-dotless'][0]}",
        )  # fmt: skip
        doomed = mem.record("debug", "to delete", outcome="success", content=ALL)
        mem.delete(doomed.id, reason=f"erasure request: {ALL}")
        mem.erase(ids=report.ids, reason=f"asked by {FORMS['email'][0]}, {FORMS['phone'][0]}, {FORMS['url-redis'][0]}")
        lesson = mem.save_lesson(f"Never paste {ALL} into a ticket again", cites=[ep.id], tags=SHORT[:5])
        rejected = mem.save_lesson(f"Rotate credentials after {FORMS['aws'][0]} leaked", cites=[ep.id])
        db.reject(rejected.id, by="reviewer", reason=f"duplicate of what {FORMS['email'][0]} filed, {FORMS['card'][0]}")
        assert not leaks(json.dumps([e.model_dump(mode="json") for e in mem.entries()])) and lesson.id
        assert not leaks(json.dumps(db.audit(), default=str)), leaks(json.dumps(db.audit(), default=str))

        # MCP tools, as the server runs them
        specs = {s.name: s for s in tool_specs(db.settings)}

        def tool(name: str, args: dict[str, Any]) -> Any:
            spec = specs[name]
            return spec.run(mem, spec.check_arguments(args))

        out = tool("record_episode", {
            "kind": "debug", "summary": " ".join(SHORT)[:500], "outcome": "failure", "content": ALL, "lesson": ALL,
            "what_we_tried": ALL, "what_happened": ALL, "why": ALL, "decisions": decisions(), "tags": SHORT[:20],
            "artifact": FORMS["url-dotted"][0], "participants": SHORT, "session": "s2",
        })  # fmt: skip
        assert not leaks(json.dumps(out.data)) and not leaks(out.text)
        vault = f"Keys such as {' ; '.join(SHORT[12:])} belong in the vault, not in tickets or chats"  # no near duplicate
        out = tool("save_lesson", {"text": vault, "cites": [ep.id], "tags": SHORT[:3]})
        assert not leaks(json.dumps(out.data))
        for name, args in (
            ("record_episode", {"kind": FORMS["email"][0], "summary": "x", "outcome": "success"}),
            ("record_episode", {"kind": "debug", "summary": "x", "outcome": FORMS["card"][0]}),
            ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "ts": FORMS["url-dotless"][0]}),
            ("record_episode", {"kind": "debug", "summary": "x", "outcome": "success", "session": FORMS["phone"][0]}),
            ("record_feedback", {"episode_id": FORMS["email"][0], "value": 1}),
            ("restore_episode", {"episode_id": FORMS["card"][0]}),
            ("recall_episodes", {"since": FORMS["email"][0]}),
            ("recall_episodes", {"window": f"last week {FORMS['card'][0]}"}),
            ("save_lesson", {"text": "a lesson about deploys", "cites": [FORMS["email"][0]]}),
        ):
            try:
                tool(name, args)
            except MemdbError as exc:
                messages.append(f"mcp {name}: {exc}")
            else:
                pytest.fail(f"mcp {name} {args}: raised nothing")

        # the API's error paths, each given planted values where an id, a kind or a name belongs
        bad = [FORMS["email"][0], FORMS["card"][0], FORMS["url-dotless"][0], FORMS["anthropic"][0]]
        templates: list[tuple[str, Callable[[str], object]]] = [
            ("record kind", lambda p: mem.record(p, "x", outcome="success")),
            ("record kind ahead", lambda p: mem.record(p, "x", outcome="success", ts=NOW + dt.timedelta(days=1))),
            ("record outcome", lambda p: mem.record("debug", "x", outcome=p)),
            ("record cites", lambda p: mem.record("debug", "x", outcome="success", cites=[p])),
            ("record session", lambda p: mem.record("debug", "x", outcome="success", session=p)),
            ("record ts", lambda p: mem.record("debug", "x", outcome="success", ts=p)),  # type: ignore[arg-type]
            ("record tag", lambda p: mem.record("debug", "x", outcome="success", tags=[[p]])),
            ("recall tag", lambda p: mem.recall(tags=[" ".join([p] * 4)])),
            ("record decisions nan", lambda p: mem.record("debug", "x", outcome="success", decisions={p: float("nan")})),
            ("record decisions bytes", lambda p: mem.record("debug", "x", outcome="success", decisions={p: b"x"})),
            ("record field", lambda p: mem.record("debug", "x", outcome="success", **{p: 1})),  # type: ignore[arg-type]
            ("exchange session", lambda p: mem.record_exchange(p, "a", "b")),
            ("tool name", lambda p: mem.record_tool_call("s1", p, {})),
            ("tool result", lambda p: mem.record_tool_result(p, {})),
            ("get", lambda p: mem.get(p)),
            ("peek", lambda p: mem.peek(p)),
            ("explain", lambda p: mem.explain(p)),
            ("delete", lambda p: mem.delete(p, reason="r")),
            ("erase ids", lambda p: mem.erase(ids=[p], reason="r")),
            ("erase since", lambda p: mem.erase(since=p, reason="r")),  # type: ignore[arg-type]
            ("restore", lambda p: mem.restore(p)),
            ("archive", lambda p: mem.archive(p)),
            ("feedback id", lambda p: mem.feedback(p, 1.0)),
            ("feedback value", lambda p: mem.feedback(ep.id, p)),  # type: ignore[arg-type]
            ("recall outcome", lambda p: mem.recall(outcome=p)),
            ("recall kind", lambda p: mem.recall(kind=p)),
            ("recall since", lambda p: mem.recall(since=p)),  # type: ignore[arg-type]
            ("recall text", lambda p: mem.recall(text=[p])),  # type: ignore[arg-type]
            ("history kind", lambda p: mem.history(kind=p)),
            ("import kind", lambda p: mem.import_episodes([{"kind": p, "summary": "x"}], source="s")),
            ("import field", lambda p: mem.import_episodes([{"kind": "debug", "summary": "x", p: 1}], source="s")),
            ("lesson cites", lambda p: mem.save_lesson("a lesson about deploys", cites=[p])),
            ("entries state", lambda p: mem.entries(state=p)),
            ("reject id", lambda p: db.reject(p, by="reviewer")),
            ("reject by", lambda p: db.reject(lesson.id, by=p + "\n")),
            ("configure kinds", lambda p: db.configure(typed_kinds=[p])),
            ("configure timezone", lambda p: db.configure(timezone=p)),
            ("configure team", lambda p: db.configure(teams={"core": [p + "\n"]})),
            ("owner", lambda p: db.owner(p)),
            ("owner control", lambda p: db.owner(p + "\n")),
            ("audit owner", lambda p: db.audit(owner=p)),
            ("prepare kind", lambda p: mem.prepare("fix the deploy", kind=p)),
            ("fact key", lambda p: mem.fact(p.replace(" ", "")[:120] or "x y")),  # an ident: no spaces
            ("close session", lambda p: mem.close_session(p.replace(" ", "")[:120] or "x y", kind="debug", outcome="success")),
            ("close kind", lambda p: mem.close_session("s1", kind=p, outcome="success")),
            ("close outcome", lambda p: mem.close_session("s1", kind="debug", outcome=p)),
        ]
        calls: list[tuple[str, Callable[[], object]]] = [("owner email", partial(db.owner, OWNER_EMAIL))]
        calls += [(f"{name} {i}", partial(template, p)) for i, p in enumerate(bad) for name, template in templates]
        messages += errors_of(calls)
        db.compact()

    # the commands
    monkeypatch.setenv("MEMDB_PATH", str(path))
    assert main(["record", "--owner", "ana", "debug", ALL, "--outcome", "failure", "--content", ALL, "--lesson", ALL,
                 "--tags", ",".join(t for t in SHORT[:30] if "," not in t)[:2000], "--session", "cli1"]) == 0  # fmt: skip
    line = {"kind": "debug", "summary": ALL, "outcome": "success", "content": ALL, "decisions": decisions(), "ts": "2026-06-01T10:00:00Z"}
    jsonl = tmp_path / f"export-{FORMS['email'][0]}-password={SPLIT['password']}.jsonl"  # the source names the file
    jsonl.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert main(["import", str(jsonl), "--owner", "ana"]) == 0
    capsys.readouterr()
    for argv in (
        ["record", "--owner", "ana", FORMS["email"][0], "x", "--outcome", "success"],
        ["record", "--owner", "ana", "debug", "x", "--outcome", "success", "--ts", FORMS["url-dotless"][0]],
        ["record", "--owner", OWNER_EMAIL, "debug", "x", "--outcome", "success"],
        ["recall", "--owner", "ana", "--kind", FORMS["card"][0]],
        ["restore", "--owner", "ana", FORMS["email"][0]],
    ):
        assert main(argv) != 0
        messages.append(f"cli {argv[0]}: {capsys.readouterr().err}")
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text(json.dumps({"owner": FORMS["email"][0], "kind": "debug", "summary": "x"}) + "\n", encoding="utf-8")
    assert main(["import", str(bad_line)]) != 0
    messages.append(f"cli import: {capsys.readouterr().err}")

    with memdb.open(path) as db:
        assert db.owners() == ["ana"]  # the refused owner wrote nothing
        db.compact()
    raw = b"".join(p.read_bytes() for p in sorted(path.iterdir()) if p.is_file())
    assert CANARY.encode() in raw and b"<SECRET_" in raw and b"<EMAIL_" in raw  # the search can find what is there
    assert not leaks(raw), f"reached disk: {leaks(raw)}"
    assert len(messages) > 150
    for message in messages:
        assert not leaks(message), message
