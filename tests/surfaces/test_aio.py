"""``memdb.aio``: the owner handle's every method as a coroutine with the same parameters and
errors, run in worker threads, exact under many concurrent readers and writers."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import threading
from pathlib import Path
from typing import Any

import pytest
from clocks import Clock

import memdb
import memdb.aio
from memdb.errors import ConfigError, NotFoundError, ValidationError

NOW = dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC)
SYNC_ONLY = {"now", "settings"}  # no store access: plain method and property on both


def _public(cls: type) -> dict[str, Any]:
    return {name: getattr(cls, name) for name in dir(cls) if not name.startswith("_")}


def test_the_async_handle_covers_every_public_method_with_the_same_parameters() -> None:
    sync, asy = _public(memdb.Memory), _public(memdb.aio.AsyncMemory)
    expected = {"contains" if n == "__contains__" else n for n in sync} | {"contains"}
    assert set(asy) - {"sync"} == expected
    for name, method in sync.items():
        if name in SYNC_ONLY:
            assert not inspect.iscoroutinefunction(asy[name]), name
            continue
        twin = asy[name]
        assert inspect.iscoroutinefunction(twin) or inspect.isasyncgenfunction(twin), name
        assert inspect.signature(twin).parameters == inspect.signature(method).parameters, name
    assert inspect.isasyncgenfunction(asy["episodes"])


def test_the_async_database_covers_every_administrative_method() -> None:
    """All but the thread-bound blocks (``transaction``, ``snapshot``: run them with ``db.run``)
    and the engine's own objects (``globals``, ``store``, the layers)."""
    sync, asy = _public(memdb.Database), _public(memdb.aio.AsyncDatabase)
    thread_bound = {"transaction", "snapshot"}
    methods = {n for n, m in sync.items() if callable(m) and n not in thread_bound}
    assert methods <= set(asy)
    for name in methods - {"owner"}:
        assert inspect.iscoroutinefunction(asy[name]), name
        assert inspect.signature(asy[name]).parameters == inspect.signature(sync[name]).parameters, name


def test_same_results_and_errors(tmp_path: Path) -> None:
    async def go() -> None:
        with pytest.raises(ConfigError):
            await memdb.aio.open(tmp_path / "db", no_such_option=1)
        async with await memdb.aio.open(tmp_path / "db", clock=Clock(NOW)) as db:
            mem = db.owner("ana")
            ep = await mem.record("debug", "Deploy of Project X failed", outcome="failure", tags=["project-x"], lesson="lock first")
            assert (await mem.get(ep.id)).summary == ep.summary and await mem.contains(ep.id)
            assert [e.id async for e in mem.episodes()] == [ep.id]
            assert (await mem.ask("what failed with project x?")).memories[0].episode.id == ep.id
            with pytest.raises(ValidationError):
                await mem.record("debug", "no outcome given")
            with pytest.raises(NotFoundError):
                await db.owner("bob").get(ep.id)  # another owner's id is unknown, as in the sync handle
            assert await db.owners() == ["ana"] and (await db.check()).ok
            assert await db.run(lambda d: d.owner("ana").count()) == 1

    asyncio.run(go())


def test_many_concurrent_readers_and_writers_stay_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """50 tasks on 3 owners, each recording 6 episodes and reading between writes, all at once in
    worker threads: every count is exact, every task sees its own writes, and the indexes agree."""
    tasks, per_task, owners = 50, 6, ("ana", "bob", "eve")
    threads: set[int] = set()
    record = memdb.Memory.record

    def counted(self: memdb.Memory, *args: Any, **kwargs: Any) -> memdb.Episode:
        threads.add(threading.get_ident())
        return record(self, *args, **kwargs)

    monkeypatch.setattr(memdb.Memory, "record", counted)

    async def worker(db: memdb.aio.AsyncDatabase, n: int) -> list[str]:
        mem = db.owner(owners[n % len(owners)])
        ids = []
        for i in range(per_task):
            ep = await mem.record("debug", f"task {n} step {i} deploy", outcome="success", tags=[f"task-{n}"])
            ids.append(ep.id)
            seen = await mem.recall(tags=[f"task-{n}"], limit=50)
            assert {h.episode.id for h in seen.memories} == set(ids)  # its own writes, nobody else's
            await mem.ask("deploy", limit=3)
        return ids

    async def go() -> None:
        async with await memdb.aio.open(tmp_path / "db", clock=Clock(NOW)) as db:
            results = await asyncio.gather(*(worker(db, n) for n in range(tasks)))
            assert len({i for ids in results for i in ids}) == tasks * per_task
            for k, name in enumerate(owners):
                mine = sum(1 for n in range(tasks) if n % len(owners) == k)
                assert await db.owner(name).count() == mine * per_task
                assert len((await db.owner(name).recall(text="deploy", limit=0)).memories) == 0
                assert (await db.owner(name).recall(text="deploy", limit=0)).total == mine * per_task
            report = await db.check()
            assert report.ok, report.problems
            assert report.episodes == tasks * per_task

    asyncio.run(go())
    assert len(threads) > 1  # the calls really ran in several threads


_CLOSE_UNDER_LOAD = r"""
import asyncio, sys, tempfile, memdb.aio

async def main(delay: float) -> set[str]:
    db = await memdb.aio.open(tempfile.mkdtemp(dir=sys.argv[1]))
    mem = db.owner("ana")

    async def work(i: int) -> None:
        for j in range(400):
            await mem.record_exchange(f"s{i}", f"hello {i} {j} deploy", "ok")
            await mem.ask("what about deploy?")

    tasks = [asyncio.create_task(work(i)) for i in range(6)]
    await asyncio.sleep(delay)
    await db.close()
    return {type(r).__name__ for r in await asyncio.gather(*tasks, return_exceptions=True)}

for k in range(4):
    print(sorted(asyncio.run(main(0.1 + 0.05 * k))), flush=True)
"""


@pytest.mark.slow
def test_closing_while_calls_run_fails_them_and_the_process_lives(tmp_path: Path) -> None:
    """``await db.close()`` while other tasks' calls run in worker threads: those calls fail
    with StoreClosedError. It killed the process (SIGSEGV) in two ways: the environment was
    closed under a commit, and under a snapshot's read transaction that py-lmdb ends when its
    object is freed, after the snapshot had ended (a probe's find: 4 of 10 runs)."""
    import subprocess
    import sys

    for _ in range(3):  # each run closes four databases under load
        run = subprocess.run([sys.executable, "-c", _CLOSE_UNDER_LOAD, str(tmp_path)], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        assert set(run.stdout.split("\n")) <= {"['StoreClosedError']", "[]", ""}, run.stdout
