"""The ``memdb`` console script's entry point, a module outside the memdb package on purpose:
importing any memdb module first runs ``memdb/__init__.py``, whose imports take a moment before
``memdb.cli.main`` can catch a Ctrl-C, and one there printed a Python traceback. Caught here, it
is one line and exit 130, as it is later (tests/surfaces/test_cli_processes.py)."""

from __future__ import annotations

import sys

NOT_BEGUN = "interrupted before the command began (nothing was done)"
"""What ``memdb.cli.main`` says too of a Ctrl-C before its command runs."""


def main() -> int:
    """Run the ``memdb`` command (``memdb.cli.main``), quiet about a Ctrl-C while it loads."""
    try:
        from memdb.cli import main as run
    except KeyboardInterrupt:
        argv = sys.argv[1:]
        if "--json" in argv and argv[:1] != ["dump"]:  # as memdb.cli.main decides it before parsing
            import json

            print(json.dumps({"error": {"type": "Interrupted", "message": NOT_BEGUN}}, indent=2))
        else:
            print(f"memdb: {NOT_BEGUN}", file=sys.stderr)
        return 130
    return run()


if __name__ == "__main__":
    raise SystemExit(main())
