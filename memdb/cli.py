"""The ``memdb`` command: demo, dump a global, and (later) episodic commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import memdb
from memdb.errors import MemdbError


def _format_subs(subs: tuple[object, ...]) -> str:
    return "(" + ",".join(repr(s) if not isinstance(s, str) else '"' + s + '"' for s in subs) + ")" if subs else ""


def cmd_demo(args: argparse.Namespace) -> int:
    """Write a small ^MEM tree, then traverse it with $ORDER and $QUERY and print it."""
    from memdb.demo import run_demo

    run_demo(args.path, out=sys.stdout)
    return 0


def cmd_dump(args: argparse.Namespace) -> int:
    """Print every node of a global (or of all globals) as ^NAME(subs)=value."""
    with memdb.open(args.path) as db:
        names = [args.name.lstrip("^")] if args.name else db.globals.names()
        with db.snapshot():
            for name in names:
                for subs, value in db.globals[name].items():
                    print(f"^{name}{_format_subs(subs)}={value!r}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memdb", description="Embedded structured memory for LLM agents.")
    parser.add_argument("--version", action="version", version=f"memdb {memdb.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the demo on a database directory (default ./demo-db)")
    demo.add_argument("path", nargs="?", default="demo-db", help="database directory (created if missing)")
    demo.set_defaults(func=cmd_demo)

    dump = sub.add_parser("dump", help="print the nodes of a global as ^NAME(subs)=value")
    dump.add_argument("path", help="database directory")
    dump.add_argument("name", nargs="?", help="global name, e.g. ^MEM (default: all)")
    dump.set_defaults(func=cmd_dump)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memdb`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except MemdbError as exc:
        print(f"memdb: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
