"""``memdb.aio``: memdb for asyncio code (``await memdb.aio.open(path)``); see ``memdb.surfaces.aio``.

A submodule, imported on demand (``import memdb.aio``), so ``import memdb`` never loads asyncio.
"""

from __future__ import annotations

from memdb.surfaces.aio import AsyncDatabase, AsyncMemory, open

__all__ = ["AsyncDatabase", "AsyncMemory", "open"]
