"""The one Host rule's parsing, exactly: which header names which host, in the form names compare
in. (Over HTTP, on every surface: tests/surfaces/web/test_signin_throttle.py, "one Host rule".)"""

from __future__ import annotations

import pytest

from memdb.surfaces.hosts import host_form, host_header


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        ("localhost", ("localhost", "")),
        ("LocalHost:8766", ("localhost", "8766")),
        ("memdb.example.org.", ("memdb.example.org", "")),  # fully qualified: the same name
        ("MEMDB.example.org.:443", ("memdb.example.org", "443")),
        ("127.0.0.1.", ("127.0.0.1", "")),
        ("[::1]:8766", ("[::1]", "8766")),
        ("[0:0:0:0:0:0:0:1]", ("[::1]", "")),  # an address spelled as the configured one is
        ("[::FFFF:127.0.0.1]", ("[::ffff:7f00:1]", "")),
        ("localhost..", ("localhost.", "")),  # one final dot, not any number: no name matches this
        ("evil@localhost", ("evil@localhost", "")),  # matches no configured name
        ("", None),
        ("::1", None),  # an IPv6 address only in brackets
        ("[127.0.0.1]", None),
        ("[::1", None),
        ("localhost:80@evil", None),
        ("localhost:abc", None),
        ("localhost:", None),
        ("localhost:123456", None),
        ("[::1]:8766:1", None),
    ],
)
def test_a_host_header_is_read_as_its_name_and_port(header: str, parsed: tuple[str, str] | None) -> None:
    assert host_header(header) == parsed


@pytest.mark.parametrize(
    ("name", "form"),
    [("Memdb.Example.ORG.", "memdb.example.org"), ("::1", "[::1]"), ("[2001:DB8::1]", "[2001:db8::1]"), ("[::1]:443", None), ("[x]", None)],
)
def test_a_configured_name_takes_the_same_form(name: str, form: str | None) -> None:
    assert host_form(name) == form
