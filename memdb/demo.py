"""The demo behind ``memdb demo``: a small ^MEM tree written, traversed and printed."""

from __future__ import annotations

import os
from typing import TextIO

import memdb


def run_demo(path: str | os.PathLike[str], out: TextIO) -> None:
    """Write a few conversations into ^MEM in one transaction, then walk them the M way."""
    with memdb.open(path) as db:
        mem = db.globals["MEM"]
        with db.transaction():
            mem.kill()
            mem["2026-07-01", "conv_123", "summary"] = "User asked about the Project X deploy; we rolled back."
            mem["2026-07-01", "conv_123", "decisions"] = {"confidence": 8.5, "action": "rollback"}
            mem["2026-07-01", "conv_123", "tags"] = ["project-x", "urgent"]
            mem["2026-07-01", "conv_9", "summary"] = "Weekly sync: nothing blocked."
            mem["2026-06-30", "conv_1", "summary"] = "Kick-off for Project X."
            mem["count"] = 0
            for _ in range(3):
                mem.increment(("count",))

        out.write(f"memdb {memdb.__version__}: ^MEM in {os.path.abspath(path)}\n\n")
        out.write("Days, by $ORDER (collation order, not insertion order):\n")
        for day in mem.children():
            out.write(f"  {day!r}: data={mem.data((day,))}, conversations={list(mem.children((day,)))}\n")
        out.write("\nEvery node with a value, by $QUERY:\n")
        node = mem.query(())
        while node is not None:
            out.write(f"  ^MEM({','.join(repr(s) for s in node)}) = {mem[node]!r}\n")
            node = mem.query(node)
        last = mem.order(("",), reverse=True)
        out.write(f"\nLast subscript at the top level (reverse $ORDER from ''): {last!r}\n")
