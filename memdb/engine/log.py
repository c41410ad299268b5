"""The one home of memdb's logging: standard ``logging`` under the ``memdb`` logger.

Each module logs to ``logger(__name__)`` (``memdb.engine.store``, ``memdb.query.engine``, ...);
configure ``logging.getLogger("memdb")`` to see them. A NullHandler keeps a library that nobody
configured silent (not even Python's last-resort WARNING to stderr).

What a record may hold: ids, counts, durations, sizes, layout numbers, owner names (``check_owner``
admits none the sanitizer would replace) and exception types. Never episode text, a question,
tool inputs or results, nor an exception's message, which may quote them
(tests/surfaces/test_logging.py plants PII and checks every record).

Events: ``memdb.memory.episodes`` WARNING when a capture is dropped because the sanitizer failed;
``memdb.governance.patterns`` WARNING when the pattern run after a committed record or session
close fails (its batch stays pending for ``maintain``);
``memdb.lifecycle.maintain`` INFO for each maintain run and its report; ``memdb.engine.store`` INFO
when the LMDB map grows; ``memdb.memory.migrate`` INFO for a layout upgrade; ``memdb.query.engine``
WARNING for a recall, ask or history slower than the ``slow_query_ms`` setting;
``memdb.integrations.langgraph`` WARNING when a store item's indexed text passes ``digest_chars``
and part of it is not searchable (the item's fact id and the characters left out).
"""

from __future__ import annotations

import logging

__all__ = ["ROOT", "logger"]

ROOT = logging.getLogger("memdb")
ROOT.addHandler(logging.NullHandler())


def logger(name: str) -> logging.Logger:
    """The logger of memdb module ``name`` (pass ``__name__``), under ``memdb``."""
    if name != "memdb" and not name.startswith("memdb."):
        raise ValueError(f"logger {name!r}: not a memdb module (pass __name__)")
    return logging.getLogger(name)
