"""The ``memdb`` console script's entry point, a module outside the memdb package on purpose:
importing any memdb module first runs ``memdb/__init__.py``, whose imports take a moment before
``memdb.cli.main`` can catch a Ctrl-C, and one there printed a Python traceback. Caught here, it
is one line and exit 130, as it is later (tests/surfaces/test_cli_processes.py).

It is also the one home of what both say of a Ctrl-C before the command began, and of how an
error is printed (``memdb.cli`` imports them): this module must import nothing of memdb's.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

NOT_BEGUN = "interrupted before the command began (nothing was done)"


def json_asked(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for JSON, known before parsing so a usage error or an early Ctrl-C
    can be JSON too; ``dump`` has no JSON mode (its ``--json`` is the error)."""
    return "--json" in argv and list(argv[:1]) != ["dump"]


def fail(kind: str, message: str, as_json: bool) -> None:
    """An error: ``{"error": ...}`` on stdout under --json (what a script parses), else one line on stderr."""
    if as_json:
        import json  # only when needed: an import before ``main``'s try is a window for a traceback

        sys.stdout.write(json.dumps({"error": {"type": kind, "message": message}}, ensure_ascii=False, indent=2) + "\n")
    else:
        print(f"memdb: {message}", file=sys.stderr)


def not_begun(argv: Sequence[str]) -> int:
    """Say that a Ctrl-C came before the command began (JSON if ``argv`` asks for it); exit 130."""
    fail("Interrupted", NOT_BEGUN, json_asked(argv))
    return 130


def main() -> int:
    """Run the ``memdb`` command (``memdb.cli.main``), quiet about a Ctrl-C while it loads."""
    try:
        from memdb.cli import main as run
    except KeyboardInterrupt:
        return not_begun(sys.argv[1:])
    return run()


if __name__ == "__main__":
    raise SystemExit(main())
