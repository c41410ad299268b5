"""Run damaged-file trials, one forked process per trial, and print one JSON line per trial.

Used by tests/engine/test_damaged_files.py, which starts this script in a subprocess so that
neither a signal nor a hang in a trial can touch pytest. The script imports memdb once; each
trial is a ``fork``: the child opens the damaged copy, reads every global node by node, writes
one node, reads it back and exits with a code saying how it ended; the parent reports the
child's end, a signal included (a negative ``status``), and kills a child that runs too long.

    python damage_trials.py TRIALS.json

TRIALS.json: ``{"dirs": [directory, ...], "options": {...LMDBStore options}, "seconds": N}``;
each directory holds one damaged copy of a database.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback

from memdb.engine.globals import Globals
from memdb.engine.store import LMDBStore
from memdb.errors import CorruptionError, MemdbError

OPENED, CORRUPT, OTHER_MEMDB, RAW = 0, 3, 4, 5


def trial(path: str, options: dict[str, object]) -> int:
    """How one open-read-write of ``path`` ends; prints what a non-clean end was."""
    try:
        store = LMDBStore(path, **options)  # type: ignore[arg-type]
        try:
            space = Globals(store)
            nodes = 0
            for name in space.names():
                for _subs, _value in space[name].items():
                    nodes += 1
            space["FUZZ"]["written", "after", "damage"] = nodes
            assert space["FUZZ"]["written", "after", "damage"] == nodes
        finally:
            store.close()
    except CorruptionError as exc:
        print(f"CorruptionError: {exc}", file=sys.stderr)
        return CORRUPT
    except MemdbError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return OTHER_MEMDB
    except BaseException:
        traceback.print_exc()
        return RAW
    return OPENED


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    options, seconds = spec["options"], float(spec["seconds"])
    for path in spec["dirs"]:
        err = os.path.join(path, "..", os.path.basename(path) + ".err")
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 2)
            code = trial(path, options)
            sys.stderr.flush()
            os._exit(code)
        deadline = time.monotonic() + seconds
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = -1
                break
            time.sleep(0.002)
        if status == -1:
            result = "timeout"
        elif os.WIFSIGNALED(status):
            result = -os.WTERMSIG(status)
        else:
            result = os.WEXITSTATUS(status)
        with open(err, encoding="utf-8", errors="replace") as f:
            detail = f.read()[-2000:]
        print(json.dumps({"dir": path, "status": result, "detail": detail}), flush=True)


if __name__ == "__main__":
    main()
