"""The sanitizer of this checkout against another's (the commit before a speed-up), output for output.

    PYTHONPATH=. python -m benchmarks.sanitize_diff --base /path/to/checkout-of-the-parent [--episodes 20000] [--examples 3000]

A speed-up of ``memdb/memory/sanitize`` must change no byte of what capture stores. The base's
sanitize package is copied under another name (``memdb_sanitize_base``, the rest of memdb shared)
and both read, in one process and in the same order (so the clean-text memo is warm as in use):
(a) bench_capture's episodes as capture reads them (``flatten_texts``, the identifiers'
forms, ``sanitize_fields``, the rebuilt record); (b) every string literal of tests/memory/*.py,
alone, as a label key's value, repeated, and in a record of tags, participants and decisions;
(c) Hypothesis texts built from PII-like fragments. Prints the counts compared and the differences
(none expected); exits 1 on any.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import pathlib
import re
import shutil
import sys
import tempfile
import types
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import bench_capture
from memdb.memory.sanitize import detect as new_detect
from memdb.memory.sanitize import fields as new_fields

FRAGMENTS = (
    "ana@example.com", "bob.smith%40mail.co.uk", "+1 415 555 0132", "(415) 555-0132", "020 7946 0958", "+49 30 901820",
    "GB82 WEST 1234 5698 7654 32", "de89370400440532013000", "4111 1111 1111 1111", "4539-1488-0343-6467", "123-45-6789",
    "219 09 9999", "10.20.30.40", "2001:db8::1", "sk-ant-REDACTEDREDACTEDxx1234", "ghp_abcdefghijklmnopqrstuvwxyz0123",
    "AKIAIOSFODNN7EXAMPLE", "password=Hunter2!", "api_key: 'x1y2z3w4'", "Bearer eyJhbGciOi.eyJzdWIi.sig", "2024-06-01",
    "14 March 1985", "10:30", "23:59:59", "v1.2.3", "10.0.19045.3803", "PRJ-1234", "3417ms", "Tel.", "SSN", "PIN", "cvc",
    "account number", "Steuer-ID", "手机号是", "电话", "the password is", "conv_000123", "1985-03-14", "8 (912) 345-67-89",
    "１２３", "\u200b", "&#64;", "%2B", "<EMAIL_1>", "<SECRET_2>", "user:", "x=", " ", "  ", "\t", "\n", "\r\n", "-", "_", ".",
    "/", ":", "(", ")", "+", "0", "7", "42", "0044", "123456", "9876543210", "ABCDEF", "abc", "Konto", "IBAN", "token",
)  # fmt: skip


def load_base(root: pathlib.Path) -> tuple[types.ModuleType, types.ModuleType]:
    """The base checkout's ``detect`` and ``fields``, as a package of another name."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="sanitize_base_"))
    pkg = tmp / "memdb_sanitize_base"
    pkg.mkdir()
    for src in (root / "memdb" / "memory" / "sanitize").glob("*.py"):
        (pkg / src.name).write_text(src.read_text().replace("memdb.memory.sanitize", "memdb_sanitize_base"))
    sys.path.insert(0, str(tmp))
    try:
        return importlib.import_module("memdb_sanitize_base.detect"), importlib.import_module("memdb_sanitize_base.fields")
    finally:
        sys.path.remove(str(tmp))
        shutil.rmtree(tmp, ignore_errors=True)


def outcome(f: Callable[[], Any]) -> Any:
    """What ``f`` returns, or its error's type and message (both sides must fail alike)."""
    try:
        return f()
    except Exception as exc:  # compared, never hidden: a difference is reported
        return (type(exc).__name__, str(exc))


class Diff:
    """Both sides' sanitizers, fed the same inputs in the same order; counts and differences."""

    def __init__(self, base: tuple[types.ModuleType, types.ModuleType]) -> None:
        self.sides = [(base[0], base[1], base[0].RegexSanitizer()), (new_detect, new_fields, new_detect.RegexSanitizer())]
        self.compared = {"episodes": 0, "literals": 0, "hypothesis": 0}
        self.diffs: list[str] = []

    def same(self, what: str, results: list[Any]) -> None:
        if results[0] != results[1]:
            self.diffs.append(f"{what}: base {results[0]!r:.300} != new {results[1]!r:.300}")

    def texts(self, what: str, texts: dict[str, str]) -> None:
        """The texts of one call, through ``sanitize_fields`` of each side."""
        self.same(what, [outcome(functools.partial(d.sanitize_fields, s, texts)) for d, _, s in self.sides])

    def record(self, what: str, raw: dict[str, Any]) -> None:
        """A record as capture reads it: flattened, identifiers in both forms, sanitized, rebuilt."""

        def capture(d: types.ModuleType, f: types.ModuleType, s: Any) -> Any:
            flat, rebuild = f.flatten_texts(raw, "episode")
            idents = {k: raw[k] for k in ("session", "tool", "key") if isinstance(raw.get(k), str)}
            flat.update(f.identifier_texts(idents))
            clean = d.sanitize_fields(s, flat)
            return flat, clean, rebuild(clean)

        self.same(what, [outcome(functools.partial(capture, *side)) for side in self.sides])


def literals() -> list[str]:
    """Every string literal of the memory tests."""
    found: dict[str, None] = {}
    for path in sorted(pathlib.Path("tests/memory").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found[node.value] = None
    return list(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=pathlib.Path, required=True, help="a checkout of the commit to compare with")
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument("--examples", type=int, default=3_000, help="Hypothesis examples")
    args = parser.parse_args()
    diff = Diff(load_base(args.base))

    for i, ep in enumerate(bench_capture.episodes(args.episodes)):  # (a)
        diff.record(f"episode {i}", dict(ep))
        diff.compared["episodes"] += 1

    for i, lit in enumerate(literals()):  # (b)
        for _ in range(2):  # the second time from the memo, where it holds the text
            diff.texts(f"literal {i}", {"summary": lit})
        diff.texts(f"literal {i} fields", {"summary": lit, "content": f"{lit} {lit}", "lesson": f"x{lit}\n{lit}."})
        for kind in ("SECRET", "PHONE", "GOV_ID", "ACCOUNT"):
            diff.texts(f"literal {i} {kind}", {f"decisions.0~label:{kind}": lit, "~secret:x": lit})
        raw = {"kind": "debug", "summary": lit, "tags": [lit, "password", lit], "participants": ["bob", lit]}
        diff.record(f"literal {i} record", {**raw, "decisions": {"pin": lit, "note": lit, lit: 1}, "session": lit})
        diff.compared["literals"] += 1

    fragment = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4))

    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.lists(fragment, max_size=12).map("".join), min_size=1, max_size=3))
    def random_texts(parts: list[str]) -> None:  # (c)
        diff.texts("hypothesis", {f"f{i}": text for i, text in enumerate(parts)})
        diff.texts("hypothesis labelled", {"decisions.0~label:SECRET": parts[0], "summary": " ".join(parts)})
        diff.compared["hypothesis"] += 1

    random_texts()
    print("compared:", ", ".join(f"{k} {v}" for k, v in diff.compared.items()), f"- differences: {len(diff.diffs)}")
    for line in diff.diffs[:20]:
        print(re.sub(r"\s+", " ", line))
    return 1 if diff.diffs else 0


if __name__ == "__main__":
    sys.exit(main())
