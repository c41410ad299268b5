"""The ``memdb`` command: the demo, capture and queries, stats, maintenance, JSONL export/import,
and governance (reflect, review, ceremony, decay, timeline, close-session).

Every command prints readable text, or JSON with ``--json``; an error prints one line
``memdb: what: reason`` on stderr and exits 1 (2 for usage errors). Under ``--json`` the error is
JSON on stdout instead, ``{"error": {"type": ..., "message": ...}}``, with the same exit codes, so
a script reads one JSON document from stdout whatever happens. Ctrl-C is one line too, exit 130.

Only the commands that record memory (``record``, ``fact KEY VALUE``, ``import``, and ``mcp`` and
``serve`` given ``--create``) and ``config SETTING=VALUE`` (a new database's kinds are set before its first
record) create a database at a path that holds none (``record``, ``fact`` and ``import`` only once they
succeed: ``_written``); every other command refuses such a path in one line, so a typo in ``--db``
never answers "nothing found" from a database it just created.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import difflib
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, NoReturn, TextIO, TypeVar

import msgpack

import memdb
from _memdb_cli import fail, json_asked, not_begun
from memdb.engine.lmdbdir import fsync_dir, holds_database
from memdb.engine.postgres import is_postgres_url, looks_like_url, shown_url
from memdb.engine.store import unopened
from memdb.errors import MemdbError, NotFoundError, ValidationError
from memdb.governance.knowledge import flag_why, restore_note
from memdb.memory.ids import is_id
from memdb.memory.models import FIRST_YEAR, MAX_DEPTH, check_owner
from memdb.memory.sanitize import shown
from memdb.memory.sanitize.messages import redacted
from memdb.memory.settings import DEFAULT_TYPED_KINDS
from memdb.memory.timephrase import local_minute
from memdb.query.results import said_words
from memdb.surfaces import export

try:
    import fcntl
except ImportError:  # not on Windows: scratch directories are then never swept (nothing proves them dead)
    fcntl = None  # type: ignore[assignment]

T = TypeVar("T")
DEFAULT_DB = "memdb-data"


# --- helpers -----------------------------------------------------------------------------------


def _when(text: str | None, what: str) -> dt.datetime | None:
    """An ISO date or datetime from the command line as aware UTC (no zone means UTC)."""
    return None if text is None else export.iso(text, what)


def _tags(text: str | None) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def _json_default(value: Any) -> Any:
    """JSON for what commands print: reports are dataclasses, episodes and entries pydantic models."""
    if isinstance(value, dt.datetime) and value.utcoffset() is not None:
        return export.utc_text(value)
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # shallow: json.dump comes back here for nested reports, models and dates
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _print_json(data: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout  # looked up per call, so redirected stdout (tests, pipes) is honoured
    json.dump(data, out, default=_json_default, ensure_ascii=False, indent=2)
    out.write("\n")


class Progress:
    """A progress bar on a terminal, advanced by counts (silent when ``stream`` is not a TTY)."""

    def __init__(self, total: int | None, label: str, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.show = self.stream.isatty()
        self.total, self.label, self.n, self.last = total, label, 0, 0.0

    def advance(self, by: int = 1) -> None:
        self.n += by
        now = time.monotonic()
        if self.show and (now - self.last > 0.1 or self.n == self.total):
            self.last = now
            if self.total:
                filled = int(30 * min(self.n, self.total) / self.total)
                self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.n}/{self.total}")
            else:
                self.stream.write(f"\r{self.label} {self.n}")
            self.stream.flush()

    def done(self) -> None:
        if self.show:
            self.stream.write(f"\r{self.label} done: {self.n}{' ' * 30}\n")


def progress(items: Iterable[T], total: int | None, label: str, stream: TextIO | None = None) -> Iterator[T]:
    """Yield ``items``, drawing a progress bar on a terminal (silent when not a TTY)."""
    bar = Progress(total, label, stream)
    for item in items:
        yield item
        bar.advance()
    bar.done()


def _holds_database(path: str) -> bool:
    """Whether ``path`` is a memdb database already: an LMDB directory with its data file, or a
    URL (the server says, when opened; ``memdb.open`` refuses one that is not PostgreSQL's).
    StoreError, saying whose the database is, where this user may not look: "no database
    there" sent them to make a second one."""
    return looks_like_url(path) or holds_database(path)


_CREATES = "this command only reads or changes an existing database; record, fact KEY VALUE, config SETTING=VALUE or import create one"


def _shown_db(db: str) -> str:
    """``--db`` as output and messages show it: a URL (PostgreSQL's or a mistyped one) without its password."""
    return shown_url(db) if looks_like_url(db) else db


def _open(args: argparse.Namespace, *, create: bool = False) -> memdb.Database:
    """The database at ``--db``; only commands that record memory or settings pass ``create`` (module docstring)."""
    if not create and not _holds_database(args.db):
        what = "no such directory" if not os.path.exists(args.db) else "no memdb database there"
        raise NotFoundError(f"--db {_shown_db(args.db)}: {what} ({_CREATES})")
    try:
        return _open_logged(args.db, create)
    except NotFoundError:
        if create or not is_postgres_url(args.db):
            raise
        # a mistyped memdb_name: the server holds no such database, and none was made
        raise NotFoundError(f"--db {_shown_db(args.db)}: no memdb database of that name on the server ({_CREATES})") from None


@contextlib.contextmanager
def _on_stderr(name: str, level: int) -> Iterator[None]:
    """Show logger ``name``'s records from ``level`` up on stderr while the block runs: the library
    only logs (memdb.engine.log), and a command decides what its user sees."""
    shown = logging.StreamHandler(sys.stderr)
    shown.setFormatter(logging.Formatter("memdb: %(message)s"))
    log = logging.getLogger(name)
    before = log.level
    log.addHandler(shown)
    log.setLevel(level)
    try:
        yield
    finally:
        log.removeHandler(shown)
        log.setLevel(before)


def _open_logged(path: str, create: bool) -> memdb.Database:
    """``memdb.open``, reporting a layout upgrade's progress on a terminal."""
    if not sys.stderr.isatty():
        return memdb.open(path, create=create)
    # on a terminal, an upgrade of an older database reports its progress (memdb.memory.migrate)
    with _on_stderr("memdb.memory.migrate", logging.INFO):
        return memdb.open(path, create=create)


def _may_exist(path: str) -> bool:
    """Whether something is at ``path`` (through a symlink: a link to nothing yet is no
    database), or this user may not look (``_open`` then says whose it is, where
    ``os.path.lexists`` said "nothing" and the command tried to create a database beside a
    database it may not read: a review's find)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _made_parents(parent: str) -> list[str]:
    """Make the directory ``parent`` as the path is written (``nothere/..`` makes ``nothere``, as
    every later command's open walks it); the directories made, deepest first."""
    missing = []
    at = parent
    while at and not os.path.isdir(at):
        missing.append(at)
        at = os.path.dirname(at)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    return missing


_SCRATCH: Final = ".memdb-new-"
_MARK: Final = ".memdb-scratch"
_MARK_TEXT: Final = b"memdb: a new database under construction beside its --db path; a dead builder's is removed\n"
"""The file that makes a ``_SCRATCH`` directory memdb's own: written (and synced) into it right
after its builder locks it, removed (and synced) before it is moved into place. A directory of
that name without it, whatever it holds, is never swept (tests/surfaces/test_cli_processes.py)."""


def _lock_dir(path: str, wait: bool) -> int | None:
    """A descriptor of the directory ``path`` holding its exclusive flock (None: another process
    holds it), so a sweep can tell a live build from a dead one's leftovers; closing it unlocks."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _mark(scratch: str) -> None:
    """Make the locked ``scratch`` memdb's own (``_MARK``), durably: from here a crash never leaves it unmarked."""
    fd = os.open(os.path.join(scratch, _MARK), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, _MARK_TEXT)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(scratch)


def _unmark(database: str) -> None:
    """Take the mark out of a scratch moved into place (the sweep reads only ``.memdb-new-*``
    names, so a mark a crash left in a database is inert; it is removed for tidiness)."""
    os.unlink(os.path.join(database, _MARK))
    fsync_dir(database)


def _marked(fd: int) -> bool:
    """Whether the directory at ``fd`` holds ``_MARK``, a regular file saying what it says."""
    try:
        mark = os.open(_MARK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except FileNotFoundError:
        return False
    try:
        return stat.S_ISREG(os.fstat(mark).st_mode) and os.read(mark, len(_MARK_TEXT) + 1) == _MARK_TEXT
    finally:
        os.close(mark)


def _sweep_scratch(parent: str) -> None:
    """Remove the scratch directories a killed ``_written`` left in ``parent`` (SIGKILL runs no
    cleanup): those marked as memdb's own (``_MARK``) that no live build holds locked and no
    process has open as a database. A directory merely named like one, even a database, is left
    (tests/surfaces/test_cli_processes.py). Best effort: a sweep that fails leaves them for the next one."""
    if fcntl is None:
        return
    try:
        names = [n for n in os.listdir(parent) if n.startswith(_SCRATCH)]
    except OSError:
        return
    for name in names:
        path = os.path.join(parent, name)
        with contextlib.suppress(OSError):  # a symlink or a file of that name, another's, or gone meanwhile
            fd = _lock_dir(path, wait=False)
            if fd is None:
                continue  # a live command is building it
            try:
                if not _marked(fd):
                    continue  # not one memdb made, or one whose builder had not marked it yet
                with unopened(path) as nobody_has_it:
                    held, now = os.fstat(fd), os.lstat(path)
                    if nobody_has_it and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):  # not renamed meanwhile
                        shutil.rmtree(path)
            finally:
                os.close(fd)


def _written(args: argparse.Namespace, write: Callable[[memdb.Database], T]) -> T:
    """``write`` on the database at ``--db``, for the commands that create one: where nothing is
    at that path, the new database is made in a private directory beside it and moved there
    whole only once ``write`` succeeded, so a refused record or import (or a Ctrl-C) leaves no
    database at a mistyped path to answer "Nothing found" from (module docstring;
    tests/surfaces/test_cli_scripting.py). An existing directory or a PostgreSQL URL is
    written in place, as ``_open`` does, and a path shaped like another URL goes there to be refused
    (test_no_form_of_a_mistyped_url_shows_its_password). The new database lands where later
    commands look: through symlinks and ``..`` as the path is written (a review's finds).
    The scratch directory is flocked and marked while it is built, so a later command removes one
    whose command was killed, and never one another command is building nor anything not made
    so (``_sweep_scratch``)."""
    if not looks_like_url(args.db):
        _sweep_scratch(os.path.dirname(os.path.realpath(args.db)))
    if looks_like_url(args.db) or _may_exist(args.db):
        with _open(args, create=True) as db:
            return write(db)
    made: list[str] = []
    scratch = None
    lock = None
    try:
        try:
            made = _made_parents(os.path.dirname(args.db) or ".")
            target = os.path.realpath(args.db)
            # a short name of its own: the database's name may be as long as a name can be
            scratch = tempfile.mkdtemp(prefix=_SCRATCH, dir=os.path.dirname(target))  # 0700, as memdb makes it
            lock = _lock_dir(scratch, wait=True)  # before the mark: a sweep takes only unlocked marked ones
            _mark(scratch)
        except OSError as exc:
            raise ValidationError(f"--db {args.db}: cannot create a database there: {exc.strerror or exc} (nothing was written)") from None
        with _open(argparse.Namespace(**{**vars(args), "db": scratch}), create=True) as db:
            result = write(db)
        try:
            os.rename(scratch, target)
        except OSError:
            if not os.path.isdir(target):
                raise
            # another command made a database there meanwhile (or someone a directory): write into it
            shutil.rmtree(scratch)
            scratch = None
            with _open(args, create=True) as db:
                return write(db)
        scratch = None
        with contextlib.suppress(OSError):  # committed, and in place: a directory that cannot be synced is no failure
            fsync_dir(os.path.dirname(target))
            _unmark(target)  # after the rename: killed before it, the scratch stays marked, so swept (a review's find)
        return result
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        for directory in made:
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        raise
    finally:
        if lock is not None:
            os.close(lock)


# --- commands ----------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the sample team memory and ask it questions."""
    from memdb.surfaces.demo import run_demo

    run_demo(args.path, out=sys.stdout)
    return 0


def _decisions(text: str | None) -> dict[str, Any]:
    """``--decisions``: a JSON object, e.g. '{"action": "rollback", "confidence": 8}'."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"--decisions {shown(text)}: not JSON ({exc.msg} at character {exc.pos})") from None
    except RecursionError:  # thousands of levels: capture refuses more than 32 anyway
        raise ValidationError(f"--decisions: nested too deeply (at most {MAX_DEPTH} levels)") from None
    if not isinstance(value, dict):
        raise ValidationError(f'--decisions {shown(text)}: expected a JSON object, e.g. \'{{"action": "rollback"}}\'')
    return value


def _stdin_text(what: str) -> str:
    """All of stdin as text, for a ``-`` argument (a pipe's output is longer than argv allows)."""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{what}: stdin is not UTF-8 text (byte {exc.start + 1})") from None


def cmd_record(args: argparse.Namespace) -> int:
    ts, decisions = _when(args.ts, "--ts"), _decisions(args.decisions)  # bad input is named before the database is opened
    content = _stdin_text("--content -") if args.content == "-" else args.content or ""  # `-`: the details from stdin, any length
    ep = _written(
        args,
        lambda db: db.owner(args.owner).record(
            args.kind, args.summary, outcome=args.outcome, tags=_tags(args.tags), lesson=args.lesson,
            session=args.session, content=content, ts=ts, what_we_tried=args.what_we_tried,
            what_happened=args.what_happened, why=args.why, decisions=decisions,
            participants=_tags(args.participants), artifact=args.artifact,
        ),
    )  # fmt: skip
    if args.json:
        _print_json(ep)
    else:
        print(f"recorded {ep.id} ({ep.kind}{'/' + ep.outcome if ep.outcome else ''}) relevance {ep.relevance:.2f}")
    return 0


def _for_the_command(note: str) -> str:
    """A note as the command says it: its flags, where the API's notes name keyword arguments."""
    return note.replace("include_archived=True", "--include-archived").replace("include_superseded=True", "--include-superseded")


def _print_result(result: Any, args: argparse.Namespace) -> None:
    if args.json:
        _print_json(
            {
                "found": result.found,
                "note": _for_the_command(result.note),
                "interpretation": str(result.interpretation),
                "total": result.total,
                "partial": result.partial,
                "unmatched": list(said_words(result.interpretation.unmatched)),
                "memories": [{"score": m.score, "why": list(m.why), "episode": m.episode} for m in result.memories],
            }
        )
        return
    # the note first: how many matched, what was searched, and what the answer lacks (a partial
    # answer's words that only archived memories hold, the earlier versions it corrects)
    print(_for_the_command(result.note))
    if result.memories:
        print(result.as_context(max_chars=args.max_chars))


def cmd_ask(args: argparse.Namespace) -> int:
    now = _when(args.now, "--now")  # bad input is named before the database is looked at
    with _open(args) as db:
        mem = db.owner(args.owner)
        asked = mem.ask(args.question, now=now, limit=args.limit, include_archived=args.include_archived,
                        include_superseded=args.include_superseded)  # fmt: skip
        _print_result(asked, args)
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    since, until = _when(args.since, "--since"), _when(args.until, "--until")  # named before the database is looked at
    with _open(args) as db:
        result = db.owner(args.owner).recall(
            since=since, until=until, tags=_tags(args.tags),
            any_tags=_tags(args.any_tags), text=args.text, kind=args.kind, outcome=args.outcome,
            session=args.session, limit=args.limit, include_archived=args.include_archived, include_told=args.include_told,
            include_superseded=args.include_superseded,
        )  # fmt: skip
        _print_result(result, args)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    with _open(args) as db:
        ep = db.owner(args.owner).restore(args.id)
        if args.json:
            _print_json({"restored": ep})
        else:
            print(f"restored {ep.id} from cold storage ({ep.kind}{'/' + ep.outcome if ep.outcome else ''}): {ep.summary}")
    return 0


_SHOWN_FIELDS = ("what_we_tried", "what_happened", "why", "lesson", "content", "result", "artifact", "session", "tool")


def _episode_text(ep: memdb.Episode, zone: str) -> str:
    """An episode whole, for people: a head line (its time where the database's days begin, as
    ask, recall and history date it), then each field that holds something."""
    head = f"{ep.id} {local_minute(ep.ts, zone)} {ep.kind}{'/' + ep.outcome if ep.outcome else ''}"
    if ep.key:
        head += f" {ep.key}"
    if ep.status != "active":
        head += f" ({ep.status})"
    lines = [head + (f" [{', '.join(ep.tags)}]" if ep.tags else ""), f"summary: {ep.summary}"]
    lines += [f"{name.replace('_', ' ')}: {getattr(ep, name)}" for name in _SHOWN_FIELDS if getattr(ep, name)]
    if ep.decisions:
        lines.append(f"decisions: {json.dumps(ep.decisions, ensure_ascii=False, default=str)}")
    if ep.supersedes:
        lines.append(f"corrects {ep.supersedes}" + (f": {ep.supersede_reason}" if ep.supersede_reason else ""))
    if ep.superseded_by:
        lines.append(f"superseded by {ep.superseded_by}")
    return "\n".join(lines)


def cmd_get(args: argparse.Namespace) -> int:
    """Show one episode whole, with the ids of its versions."""
    with _open(args) as db:
        mem = db.owner(args.owner)
        ep = mem.get(args.id)
        versions = [v.id for v in mem.versions(ep.id)]
        if args.json:
            _print_json({"episode": ep, "versions": versions})
        else:
            print(_episode_text(ep, db.settings.timezone))
            if len(versions) > 1:
                print("versions, oldest first: " + " -> ".join(versions))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """Why an episode ranks where it does: its relevance and the four weighted components."""
    with _open(args) as db:
        mem = db.owner(args.owner)
        ep = mem.peek(args.id)  # an explanation is not an access: it must not change what it explains
        why = mem.explain(ep.id, now=_when(args.now, "--now"))
        if args.json:
            _print_json({"id": ep.id, "summary": ep.summary, "explanation": why})
        else:
            print(f"{ep.id} {ep.kind}{'/' + ep.outcome if ep.outcome else ''}: {ep.summary}")
            print(why)
    return 0


def cmd_supersede(args: argparse.Namespace) -> int:
    """Correct an episode with a new version; the old one is kept, superseded."""
    changes: dict[str, Any] = {
        name: getattr(args, name)
        for name in ("summary", "outcome", "lesson", "content", "why", "what_happened", "what_we_tried")
        if getattr(args, name) is not None
    }
    if args.tags is not None:
        changes["tags"] = _tags(args.tags)
    if not changes:  # the API's message names its keyword arguments; the command's are flags
        raise ValidationError(
            f"supersede {shown(args.id)}: no changes given (give the corrected fields, e.g. --outcome failure or --lesson TEXT; "
            "nothing was changed)"
        )
    with _open(args) as db:
        ep = db.owner(args.owner).supersede(args.id, reason=args.reason, **changes)
        if args.json:
            _print_json({"episode": ep, "superseded": ep.supersedes})
        else:
            print(f"superseded {ep.supersedes} by {ep.id} ({ep.kind}{'/' + ep.outcome if ep.outcome else ''}): {ep.summary}")
    return 0


def cmd_fact(args: argparse.Namespace) -> int:
    """Show a fact's current value, or record a new one (which supersedes the old)."""
    if args.value is None:
        with _open(args) as db:
            try:
                ep = db.owner(args.owner).fact(args.key)
            except NotFoundError as exc:  # the API's hint names its method: the command's is `memdb facts`
                raise NotFoundError(str(exc).replace("(facts() lists the keys)", "(`memdb facts` lists the keys)")) from None
        if args.json:
            _print_json(ep)
        else:
            print(f"{ep.key} = {ep.summary}")
        return 0

    def write(db: memdb.Database) -> tuple[memdb.Episode, str | None]:
        mem = db.owner(args.owner)
        before = next((e.id for e in mem.facts(args.key) if e.key == args.key), None)
        return mem.record("fact", args.value, key=args.key, tags=_tags(args.tags)), before

    ep, before = _written(args, write)
    if args.json:
        _print_json(ep)
    elif ep.id == before:
        print(f"{ep.key} = {ep.summary} (unchanged, {ep.id})")
    else:
        print(f"{ep.key} = {ep.summary} ({ep.id}{', replacing ' + before if before else ''})")
    return 0


def cmd_facts(args: argparse.Namespace) -> int:
    """List the current value of every fact, by key."""
    with _open(args) as db:
        facts = db.owner(args.owner).facts(args.prefix)
        if args.json:
            _print_json(facts)
        else:
            if not facts:
                print("no facts" + (f" with keys starting {args.prefix!r}" if args.prefix else ""))
            for ep in facts:
                print(f"{ep.key} = {ep.summary}")
    return 0


def cmd_erase(args: argparse.Namespace) -> int:
    """Erase episodes for good, with their versions and what derives from them; asks first on a terminal."""
    ids, tags = list(dict.fromkeys(args.ids)), _tags(args.tags)
    if args.all_of_owner is not None:
        return _erase_owner(args, bool(ids or tags))
    if not (ids or tags):
        raise ValidationError("erase: give episode ids or --tags (nothing erased)")
    if not args.yes:
        what = [f"{len(ids)} episode{'s' if len(ids) != 1 else ''}"] if ids else []
        what += [f"every episode tagged {' or '.join(map(repr, tags))}"] if tags else []
        _confirm_erase(
            f"erase {' and '.join(what)} of owner {args.owner!r} for good, with every version "
            "and the summaries, knowledge and patterns derived from them? [y/N] "
        )
    with _open(args) as db:
        report = db.owner(args.owner).erase(ids or None, tags=tags, reason=args.reason)
        if args.json:
            _print_json(report)
        else:
            entries = f" and {len(report.entries)} knowledge entr{'ies' if len(report.entries) != 1 else 'y'}" if report.entries else ""
            episodes = f"{report.count} episode{'s' if report.count != 1 else ''}"
            print(f"erased {episodes}{entries}: {', '.join(report.ids)} (audit {report.audit_id})")
            if report.count or report.entries:
                print("their bytes leave the files at the next `memdb compact`")
    return 0


def _confirm_erase(question: str) -> None:
    """Ask ``question`` on the terminal; ValidationError unless answered yes (or not on a terminal,
    where ``--yes`` says it)."""
    if not sys.stdin.isatty():
        raise ValidationError("erase: --yes is required when not on a terminal (nothing erased)")
    sys.stderr.write(question)
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise ValidationError("erase: not confirmed (nothing erased)")


def _erase_owner(args: argparse.Namespace, narrowed: bool) -> int:
    """``erase --all-of-owner NAME``: the owner itself (``Database.erase_owner``); asks first on a terminal."""
    if narrowed:
        raise ValidationError("erase: --all-of-owner erases everything of the owner; give no ids or --tags with it (nothing erased)")
    if not args.yes:
        _confirm_erase(
            f"erase owner {shown(args.all_of_owner)} itself for good: every episode, knowledge entry, pattern, counter and "
            "audit record of it, its team memberships and its name (one audit record keeps a keyed hash of it)? [y/N] "
        )
    with _open(args) as db:
        report = db.erase_owner(args.all_of_owner, reason=args.reason)
        if args.json:
            _print_json(report)
        else:
            entries = f" and {len(report.entries)} knowledge entr{'ies' if len(report.entries) != 1 else 'y'}" if report.entries else ""
            print(f"erased the owner, {report.count} episode{'s' if report.count != 1 else ''}{entries} (audit {report.audit_id})")
            print("its bytes leave the files at the next `memdb compact`")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Verify every index against the records; exit 1 when anything disagrees."""
    with _open(args) as db:
        report = db.check()
    if args.json:
        _print_json({"ok": report.ok, "episodes": report.episodes, "problems": report.problems})
    elif report.ok:
        print(f"ok: {report.episodes} episodes, every index agrees with the records")
    else:
        print(f"{len(report.problems)} problems in {report.episodes} episodes:")
        for problem in report.problems:
            print(f"  {problem}")
    return 0 if report.ok else 1


def cmd_backup(args: argparse.Namespace) -> int:
    """A consistent copy of the whole database in a new directory, while it stays in use."""
    with _open(args) as db:
        db.backup(args.dest)
    size = os.path.getsize(os.path.join(args.dest, "data.mdb"))
    if args.json:
        _print_json({"backup": args.dest, "bytes": size})
    else:
        print(f"backed up to {args.dest} ({size:,} bytes); memdb --db {args.dest} ... reads the copy")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    """Rewrite the store without free space, so erased bytes leave the files; needs exclusive use."""
    with _open(args) as db:
        before = db.store.stat()["used_bytes"]
        db.compact()
        after = db.store.stat()["used_bytes"]
    if args.json:
        _print_json({"bytes_before": before, "bytes_after": after})
    else:
        print(f"compacted: {before:,} bytes before, {after:,} after" if before >= 0 else "compacted")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with _open(args) as db:
        h = db.owner(args.owner).history(kind=args.kind, tags=_tags(args.tags), text=args.text, limit=args.limit)
        if args.json:
            _print_json({"total": h.total, "counts": h.counts, "lessons": h.lessons, "attempts": [m.episode for m in h.attempts]})
        else:
            print(h)
            if h.lessons:  # every lesson of the attempts, those older than the ones listed too
                print("Lessons: " + " | ".join(h.lessons))
            for m in h.attempts:
                print(m.line(h.interpretation.zone))
    return 0


def cmd_close_session(args: argparse.Namespace) -> int:
    """Close a gateway session into one typed episode citing its capture; exit 1 when it is not
    closed (nothing captured, or a model's answer refused or failed), the reason printed either way."""
    with _open(args) as db:
        done = db.owner(args.owner).close_session(
            args.session, kind=args.kind, outcome=args.outcome, tags=_tags(args.tags), now=_when(args.now, "--now")
        )
        if args.json:
            _print_json({
                "session": done.session, "status": done.status, "closed": done.closed, "reason": done.reason, "events": done.events,
                "attempts": done.attempts, "rejected": done.rejected, "episode": done.episode,
            })  # fmt: skip
        else:
            print(done.reason)
            if done.episode is not None:
                e = done.episode
                print(f"  {local_minute(e.ts, db.settings.timezone)} {e.kind}/{e.outcome}: {e.summary}")
                for name in ("what_we_tried", "what_happened", "why", "lesson"):
                    if getattr(e, name):
                        print(f"  {name}: {getattr(e, name)}")
    return 0 if done.closed else 1


def cmd_stats(args: argparse.Namespace) -> int:
    with _open(args) as db:
        owners = {o: db.owner(o).count() for o in db.owners()}
        store = db.store.stat() if hasattr(db.store, "stat") else {}
        data = {
            "path": _shown_db(args.db) if is_postgres_url(args.db) else os.path.abspath(args.db),  # never a password
            "owners": owners,
            "episodes": sum(owners.values()),
            "dropped_captures": db.globals["META"].get(("dropped_captures",), 0),
            "store": store,
            "native_scorer": memdb.native.IMPLEMENTATION,
            "typed_kinds": list(db.settings.typed_kinds),
        }
        if args.json:
            _print_json(data)
        else:
            n, k = data["episodes"], len(owners)
            print(f"{data['path']}: {n} episode{'s' if n != 1 else ''}, {k} owner{'s' if k != 1 else ''}, "
                  f"{store.get('used_bytes', 0) / 1e6:.1f} MB used; typed kinds {', '.join(data['typed_kinds'])}")  # fmt: skip
            for owner, count in sorted(owners.items()):
                print(f"  {owner}: {count}")
            print(f"dropped captures (sanitizer failures): {data['dropped_captures']}; scorer: {data['native_scorer']}")
    return 0


def _setting_value(name: str, text: str) -> Any:
    """A setting's value as typed on the command line: JSON where it parses (numbers, true,
    null, lists, objects), a comma-separated list for a list setting, a plain string otherwise.
    An empty value is refused (an unset shell variable would empty the kinds: give [] for an
    empty list), and so is true/false for a setting that is a number."""
    from memdb.memory.settings import Settings

    field = Settings.model_fields.get(name)
    if field is None:
        known = ", ".join(Settings.model_fields)
        raise ValidationError(f"setting {shown(name)}: no such setting (settings: {known})")
    if not text.strip():
        raise ValidationError(f"setting {name}: empty value (give [] for an empty list, null for none)")
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    listed = getattr(field.annotation, "__origin__", None) in (tuple, list)
    if listed and isinstance(value, str):  # call,demo,deal (or "call", quoted): the list of them
        value = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, bool) and field.annotation is not bool:  # pydantic would take true as 1
        raise ValidationError(f"setting {name}={shown(text)}: a number, not true or false")
    return value


def cmd_config(args: argparse.Namespace) -> int:
    """Show the database's settings, or change some (validated as a whole, saved, audited)."""
    from memdb.memory.settings import Settings

    changes: dict[str, Any] = {}
    for item in args.changes:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise ValidationError(f"config: {shown(item)} is not SETTING=VALUE (e.g. typed_kinds=call,demo,deal)")
        if name in changes:
            raise ValidationError(f"config: setting {shown(name)} given twice (nothing was changed)")
        changes[name] = _setting_value(name, text)
    if changes and not _holds_database(args.db):
        Settings().updated(**changes)  # refused before a database is made for them (ConfigError names the value)
    with _open(args, create=bool(changes)) as db:
        before = db.settings.model_dump(mode="json")
        after = db.configure(**changes).model_dump(mode="json") if changes else before
        changed = {k: {"from": before[k], "to": v} for k, v in after.items() if before[k] != v}
        if args.json:
            _print_json({"settings": after, "changed": changed} if changes else {"settings": after})
        elif changes:
            for name, change in changed.items():
                print(f"{name}: {json.dumps(change['from'])} -> {json.dumps(change['to'])}")
            if not changed:
                print("no change: the settings already had those values")
        else:
            for name, value in after.items():
                about = Settings.model_fields[name].description
                print(f"{name} = {json.dumps(value)}" + (f"  # {about}" if about else ""))
    return 0


def _come(db: memdb.Database, now: dt.datetime | None, what: str) -> None:
    """ValidationError for a ``--now`` after the database's clock (past its capture tolerance) or
    before year 1000, for the commands that change what is stored at that time: a typo for a past
    date (2062 for 2026) archived early and left the burst rule's mark past every event recorded
    later, and made decay, reflection and the ceremony decide in a time to come
    (tests/surfaces/test_cli_scripting.py)."""
    if now is None:
        return
    if now.year < FIRST_YEAR:
        raise ValidationError(f"--now {now.isoformat()}: before year {FIRST_YEAR}, where memdb keeps no time (nothing was changed)")
    clock, tolerance = db.episodes.now(), db.settings.capture_tolerance_minutes
    if now > clock + dt.timedelta(minutes=tolerance):
        days = (now - clock).total_seconds() / 86400
        ahead = f"{days:.0f} days" if days >= 2 else f"{days * 24:.1f} h"
        raise ValidationError(
            f"--now {now.isoformat()}: {ahead} after the clock: {what} at a time that has come "
            f"(capture_tolerance_minutes={tolerance:g}; nothing was changed)"
        )


def cmd_maintain(args: argparse.Namespace) -> int:
    now = _when(args.now, "--now")
    args.interrupted = (
        "interrupted: the rule under way wrote nothing of its unfinished transaction; what earlier ones did is kept "
        "(the next maintain goes on from there)"
    )
    with _open(args) as db:
        _come(db, now, "maintain runs the rules")
        on_rule = _rule_progress(sys.stderr) if sys.stderr.isatty() else None
        report = db.maintain(now=now, on_rule=on_rule)
        if args.json:
            _print_json(report)
        else:
            print(report)
    return 0


def _private_file(path: str) -> TextIO:
    """``path`` opened for writing, readable by its owner only (0600), even if it existed:
    an export holds every episode (tests/surfaces/test_file_modes.py)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # never a terminal or a pipe given as the file
            os.fchmod(fd, 0o600)
        return open(fd, "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def _rule_progress(stream: TextIO) -> Callable[[str], None]:
    """One line per maintenance rule as it starts, with the time the previous one took."""
    started: list[tuple[str, float]] = []

    def on_rule(rule: str) -> None:
        now = time.monotonic()
        if started:
            name, at = started[-1]
            stream.write(f"maintain: {name} done in {now - at:.1f}s\n")
        if rule != "done":
            stream.write(f"maintain: {rule}...\n")
            started.append((rule, now))
        stream.flush()

    return on_rule


def cmd_export(args: argparse.Namespace) -> int:
    """Write every episode as JSONL, archived ones too (their full record, status "archived");
    with ``--complete`` every line typed, and after the episodes every earlier version, knowledge
    entry, pattern and audit record of each owner (``memdb.surfaces.export``).

    A ``--file`` is written whole or not at all: into a private file beside it, renamed over it
    once complete, so a failed export (or one of an owner the database lacks, refused first)
    leaves an earlier backup there as it was. With ``--json`` and ``--file`` a summary is
    printed; without ``--file`` the JSONL on stdout is the output (one JSON document a line)."""
    args.interrupted = (
        f"interrupted: --file {args.file} was left as it was (the partial export was removed)"
        if args.file
        else "interrupted: the export written to stdout is incomplete"
    )
    with _open(args) as db:
        owners = db.owners()
        if args.owner:
            name = db.owner(args.owner).name
            if name not in owners:
                raise NotFoundError(f"--owner {shown(args.owner)}: no such owner in this database (without it, every owner is exported)")
            owners = [name]
        total = sum(db.owner(o).count() for o in owners)  # count() includes archived episodes
        written: Counter[str] = Counter()
        if not args.file:
            _write_export(db, owners, total, sys.stdout, args.complete)
            return 0
        if os.path.exists(args.file) and not stat.S_ISREG(os.stat(args.file).st_mode):  # a pipe, a terminal
            with _private_file(args.file) as out:
                written = _write_export(db, owners, total, out, args.complete)
        else:
            folder, name = os.path.split(os.path.realpath(args.file))  # a link's target is what is replaced
            try:
                fd, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=folder)  # 0600
            except OSError as exc:
                raise ValidationError(f"--file {args.file}: {exc.strerror or exc} (nothing was written)") from None
            try:
                with open(fd, "w", encoding="utf-8") as out:
                    written = _write_export(db, owners, total, out, args.complete)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(partial, os.path.join(folder, name))
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(partial)
                raise
    if args.json:
        summary: dict[str, Any] = {"exported": written[export.EPISODE], "owners": owners, "file": args.file}
        if args.complete:
            summary["records"] = {kind: written[kind] for kind in export.NOT_IMPORTED}
        _print_json(summary)
    return 0


def _write_export(db: memdb.Database, owners: Sequence[str], total: int, out: TextIO, complete: bool) -> Counter[str]:
    """Write the owners' export lines to ``out`` as JSONL; how many of each record type
    (episodes only unless ``complete``)."""
    written: Counter[str] = Counter()
    rows = (row for o in owners for row in db.owner(o).export(complete=complete))
    for row in progress(rows, None if complete else total, "export"):
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        written[row.get(export.TYPE, export.EPISODE)] += 1
    return written


def _import_lines(path: str, forced_owner: str | None, skipped: Counter[str]) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """The episodes of a JSONL file by owner, each with its line number; the first bad line
    raises ValidationError naming the line and what is wrong with it. A complete export's
    records that import cannot bring back (earlier versions, knowledge, patterns, audit) are
    counted in ``skipped`` by type, never read as episodes."""
    by_owner: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    name = _STDIN if path == "-" else path
    # bytes, so a line that is not UTF-8 is reported with its number; `-` is stdin (a pipeline's jq ... | memdb import -)
    with contextlib.nullcontext(sys.stdin.buffer) if path == "-" else open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{name}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValidationError(f"{where}: not UTF-8 text (byte {exc.start + 1} of the line)") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"{where}: not JSON ({exc.msg})") from None
            except RecursionError:
                raise ValidationError(f"{where}: JSON nested too deeply") from None
            if not isinstance(row, dict):
                raise ValidationError(f"{where}: expected a JSON object (an episode, as export writes), got {type(row).__name__}")
            kind = export.record_type(row, where)
            if kind != export.EPISODE:
                skipped[kind] += 1
                continue
            owner = forced_owner or row.get("owner")
            if not owner:
                raise ValidationError(f"{where}: no owner in the line; pass --owner")
            if not isinstance(owner, str):
                raise ValidationError(f"{where}: owner {shown(owner)}: expected a string")
            try:
                owner = check_owner(owner)
            except ValidationError as exc:
                raise ValidationError(f"{where}: {exc}") from None
            item = export.import_row(row, where)
            assert item is not None  # an episode's line
            _check_import_ids(item, where)
            by_owner.setdefault(owner, []).append((lineno, item))
    return by_owner


_STDIN = "<stdin>"
_ID_FORMAT = "YYYYMMDDTHHMMSSffffffZ-xxxxxx"


def _check_import_ids(item: Mapping[str, Any], where: str) -> None:
    """An import line's ``id`` and ``cites`` have the id format, named with the line and field
    before anything is written (import_episodes named neither the line nor the field)."""
    if "id" in item and not is_id(item["id"]):
        raise ValidationError(f"{where}: id {shown(item['id'])}: not an episode id (expected {_ID_FORMAT}, as export writes)")
    cites = item.get("cites")
    if cites is None:
        return
    if not isinstance(cites, list):
        raise ValidationError(f"{where}: cites {shown(cites)}: expected a list of episode ids")
    for n, cited in enumerate(cites):
        if not is_id(cited):
            raise ValidationError(f"{where}: cites[{n}] {shown(cited)}: not an episode id (expected {_ID_FORMAT})")


def cmd_import(args: argparse.Namespace) -> int:
    """Import JSONL episodes (as written by export); each line's owner unless --owner is given.

    All or nothing: every line is read and checked first, and every owner's episodes are
    written in one transaction, so a bad line leaves the database as it was.
    """
    args.interrupted = "interrupted: nothing was imported (the import is one transaction)"
    not_imported: Counter[str] = Counter()
    by_owner = _import_lines(args.file, args.owner, not_imported)
    name = _STDIN if args.file == "-" else args.file
    source = "jsonl:stdin" if args.file == "-" else f"jsonl:{os.path.basename(args.file)}"
    counts: dict[str, int] = {}
    skipped: dict[str, int] = {}
    dropped: dict[str, int] = {}

    def write(db: memdb.Database) -> None:
        for done in (counts, skipped, dropped):  # a second try (_written) starts afresh
            done.clear()
        bar = Progress(sum(len(lines) for lines in by_owner.values()), "import")  # episodes, not owners
        with db.transaction():
            for owner, lines in by_owner.items():
                try:
                    report = db.owner(owner).import_episodes([item for _, item in lines], source=source)
                except ValidationError as exc:  # name the line, not the item's place in this owner's batch
                    found = export.IMPORT_ITEM.match(str(exc))
                    if found is None:
                        raise ValidationError(f"{name}: owner {owner!r}: {exc}") from None
                    lineno = lines[int(found.group(1))][0]
                    raise ValidationError(f"{name}:{lineno}{str(exc)[found.end() :]}") from None
                counts[owner] = report.count
                skipped[owner] = report.skipped
                dropped[owner] = report.dropped_cites
                bar.advance(len(lines))
        bar.done()

    _written(args, write)
    if args.json:  # per owner, as the lines below say it
        out: dict[str, Any] = {"imported": counts, "skipped": skipped, "dropped_cites": dropped}
        if not_imported:
            out["not_imported"] = dict(not_imported)
        _print_json(out)
    else:
        print(", ".join(f"{o}: {n} imported" for o, n in counts.items()) or "nothing to import")
    if not_imported and not args.json:
        print(
            "not imported (a complete export's records import cannot bring back; only episodes are imported): "
            + ", ".join(f"{n} {kind}" for kind, n in not_imported.items())
        )
    if any(skipped.values()) and not args.json:
        print(", ".join(f"{o}: {n} already imported (skipped by id)" for o, n in skipped.items() if n))
    if any(dropped.values()) and not args.json:
        print(
            ", ".join(
                f"{o}: {n} cites dropped: they name episodes not imported (an earlier version, which import never "
                "brings back, or one not in the file)"
                for o, n in dropped.items()
                if n
            )
        )
    return 0


def m_literal(value: Any) -> str:
    """A subscript or value in M notation: numbers canonical, strings quoted with ``""`` doubled and
    control characters as ``$C(n)``; what M has no literal for (bytes, maps, lists, datetimes,
    None) is marked so it cannot be read as a string (``$C`` bytes, JSON, ISO text in ``$ZDT()``)."""
    if isinstance(value, bool):
        return "1" if value else "0"  # M's truth values
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if text.endswith(".0"):
            text = text[:-2]
        return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text  # M writes .5, -.5
    if isinstance(value, str):
        parts: list[str] = []
        run: list[str] = []
        for ch in value:
            if ord(ch) < 32 or ord(ch) == 127:
                if run:
                    parts.append('"' + "".join(run).replace('"', '""') + '"')
                    run = []
                parts.append(f"$C({ord(ch)})")
            else:
                run.append(ch)
        if run or not parts:
            parts.append('"' + "".join(run).replace('"', '""') + '"')
        return "_".join(parts)
    if isinstance(value, (bytes, bytearray)):
        return f"$C({','.join(str(b) for b in value)})"  # $C() when empty: "" is the empty str
    if isinstance(value, (dt.date, dt.time)):
        return f'$ZDT("{value.isoformat()}")'
    if value is None:
        return "$ZNULL"
    return "$ZJSON(" + json.dumps(_dumped(value), ensure_ascii=False, sort_keys=True) + ")"


def _dumped(value: Any) -> Any:
    """A value inside ``$ZJSON(...)`` as JSON, for anything the codec stores, each distinct value
    printed distinctly: bytes as ``{"$C": [byte, ...]}`` (M's ``$C``), datetimes as
    ``{"$ZDT": "<ISO>"}``, an extension type as ``{"$ZEXT": [code, [byte, ...]]}``, a map with a
    key that is no str (msgpack allows any) as ``{"$M": [[key, value], ...]}``, and a str key
    starting with ``$`` doubled (a stored ``{"$C": 1}`` prints ``{"$$C": 1}``), so no stored map
    reads as a marker (tests/surfaces/test_dump_values.py)."""
    if isinstance(value, (bytes, bytearray)):
        return {"$C": list(value)}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {("$" + k if k.startswith("$") else k): _dumped(v) for k, v in value.items()}
        pairs = [[_dumped(k), _dumped(v)] for k, v in value.items()]
        return {"$M": sorted(pairs, key=lambda kv: json.dumps(kv[0], ensure_ascii=False, sort_keys=True))}
    if isinstance(value, msgpack.ExtType):  # a tuple too: before lists
        return {"$ZEXT": [value.code, list(value.data)]}
    if isinstance(value, (list, tuple)):
        return [_dumped(v) for v in value]
    if isinstance(value, (dt.date, dt.time)):
        return {"$ZDT": value.isoformat()}
    if value is None or isinstance(value, (str, int, float)):
        return value
    return _dumped(_json_default(value))


def cmd_dump(args: argparse.Namespace) -> int:
    """Print every node of a global (or of all globals) in M notation, ``^NAME(subs)=value``."""
    with _open(args) as db:
        names = [args.name.lstrip("^")] if args.name else db.globals.names()
        with db.snapshot():
            for name in names:
                for subs, value in db.globals[name].items():
                    node = f"^{name}({','.join(m_literal(s) for s in subs)})" if subs else f"^{name}"
                    print(f"{node}={m_literal(value)}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve one owner's memory to MCP clients (stdio), or each token's owner (loopback HTTP)."""
    from memdb.surfaces.mcp_server import run

    with _on_stderr("memdb.surfaces.throttle", logging.WARNING):  # a lock of failed bearer tokens
        return run(
            args.db, owner=args.owner, transport=args.transport, port=args.port, config=args.config, now=_when(args.now, "--now"),
            create=args.create,
        )  # fmt: skip


def cmd_serve(args: argparse.Namespace) -> int:
    """The dashboard, MCP at /mcp and the scheduler in one process (loopback unless told otherwise)."""
    from memdb.surfaces.serve import run

    db = None if args.demo and args.db is None else args.db or os.environ.get("MEMDB_PATH", DEFAULT_DB)
    with _on_stderr("memdb.surfaces.throttle", logging.WARNING):  # a lock of failed sign-ins
        return run(
            db, config=args.config, host=args.host, port=args.port, allow_remote=args.allow_remote, tls_cert=args.tls_cert,
            tls_key=args.tls_key, behind_proxy=args.behind_proxy, public_hosts=args.public_host or (), demo=args.demo,
            now=_when(args.now, "--now"), create=args.create,
        )  # fmt: skip


# --- governance: reflection, review, ceremony, decay, timelines ----------------------------------


def _by(args: argparse.Namespace) -> str:
    by = args.by or os.environ.get("MEMDB_USER")
    if not by:
        raise ValidationError("--by: name the person deciding (or set $MEMDB_USER); it is kept in the audit trail")
    return str(by)


def _emit(data: Any) -> None:
    """JSON to the current stdout."""
    _print_json(data)


def _entry_json(entry: Any) -> Any:
    return entry.model_dump(mode="json")


def _print_entries(entries: Sequence[Any], args: argparse.Namespace, empty: str) -> None:
    if args.json:
        _emit([_entry_json(e) for e in entries])
        return
    if not entries:
        print(empty)
    for e in entries:
        print(f"{e.id} {e.owner} {e.state}/{e.visibility}/{e.status} ({e.source}, cites {len(e.cites)}): {e.text or '[text removed]'}")


def cmd_reflect(args: argparse.Namespace) -> int:
    with _open(args) as db:
        now = _when(args.now, "--now")
        _come(db, now, "reflection runs")
        report = db.reflect(now=now, owners=[args.owner] if args.owner else None)
        if args.json:
            data = {
                "now": report.now, "day": report.day, "stored": report.stored, "skipped": report.skipped,
                "discarded": report.discarded, "over_budget": report.over_budget, "errors": report.errors,
                "owners": {name: vars(o) for name, o in report.owners.items()},
            }  # fmt: skip
            _emit(data)
        else:
            print(report)
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    """List the review queue, or approve / reject entries (one or many ids)."""
    with _open(args) as db:
        if args.action == "list":
            _print_entries(db.review_queue(owner=args.owner, limit=args.limit), args, "the review queue is empty")
            return 0
        if not args.ids:
            raise ValidationError(f"review {args.action}: give one or more entry ids")
        now = _when(args.now, "--now")
        _come(db, now, "a review is decided")
        if args.action == "approve":
            done = db.approve(args.ids, by=_by(args), now=now)
        else:
            done = db.reject(args.ids, by=_by(args), reason=args.reason or "", now=now)
        _print_entries(done, args, "nothing decided")
    return 0


def cmd_ceremony(args: argparse.Namespace) -> int:
    """Hold a share ceremony (a new agenda), show the last one without holding one, or apply an
    owner's decisions (ID=share|private|archive). ``show`` is the way to look: each ``agenda``
    is a ceremony, so looking twice marked every item carried over."""
    with _open(args) as db:
        now = _when(args.now, "--now")
        _come(db, now, "the ceremony is held")
        if args.action in ("agenda", "show"):
            agenda = db.ceremony(args.team, now=now) if args.action == "agenda" else db.latest_agenda(args.team)
            if agenda is None:
                if args.json:
                    _emit(None)
                else:
                    print(f"no ceremony held yet for {args.team or 'every team'} (memdb ceremony agenda holds one)")
                return 0
            if args.json:
                items = [
                    {"carried_over": i.carried_over, "lost_shares": list(i.lost_shares), "entry": _entry_json(i.entry)}
                    for i in agenda.items
                ]
                _emit({"id": agenda.id, "team": agenda.team, "at": agenda.at, "items": items})
            else:
                print(agenda)
            return 0
        decisions: dict[str, str] = {}
        for item in args.decisions:
            eid, sep, choice = item.partition("=")
            if not sep:
                raise ValidationError(f"decision {item!r}: write ENTRY_ID=share, ENTRY_ID=private or ENTRY_ID=archive")
            decisions[eid] = choice
        _print_entries(db.decide(decisions, by=_by(args), team=args.team, now=now), args, "nothing decided")
    return 0


def cmd_decay(args: argparse.Namespace) -> int:
    """Run the weekly decay pass, list flags, or answer them (keep / quarantine), or restore an entry."""

    with _open(args) as db:
        now = _when(args.now, "--now")
        _come(db, now, "decay runs")
        if args.action == "run":
            report = db.decay(now=now)
            if args.json:
                data = {
                    "now": report.now, "week": report.week, "idle": report.idle, "over_budget": report.over_budget,
                    "budget_left": report.budget_left, "flagged": [_entry_json(e) for e in report.flagged],
                }  # fmt: skip
                _emit(data)
            else:
                print(report)
                for e in report.flagged:
                    print(f"  flagged {e.id} ({e.owner}): {e.text}")
            return 0
        if args.action == "list":
            flagged = db.flagged()
            if args.json:
                _emit([{**_entry_json(e), "why": flag_why(e)} for e in flagged])
                return 0
            if flagged:
                print(
                    f"{len(flagged)} flagged; keep clears a flag (the entry stays in use), "
                    "quarantine takes it out of use (restore brings it back)"
                )
            else:
                print("no entries flagged")
            for e in flagged:
                _print_entries([e], args, "")
                print(f"    {flag_why(e)}")
            return 0
        if not args.ids:
            raise ValidationError(f"decay {args.action}: give one or more entry ids")
        by = _by(args)
        ids = list(dict.fromkeys(args.ids))
        try:
            # all or none, as review approve/reject: one bad id leaves every flag as it was (test_decay_flags.py)
            with db.transaction():
                if args.action == "restore":
                    done = [db.restore_entry(eid, by=by, now=now) for eid in ids]
                else:
                    done = [db.confirm_decay(eid, args.action, by=by, reason=args.reason or "", now=now) for eid in ids]
        except (ValidationError, NotFoundError) as err:
            if len(ids) == 1:
                raise
            raise type(err)(f"{err} (decay {args.action}: nothing done for any of the {len(ids)} ids)") from None
        _print_entries(done, args, "nothing decided")
        if args.action == "restore" and not args.json:  # what the restore did not give back (the JSON's unshared)
            print("".join(f"  {e.id}: {note}\n" for e in done if (note := restore_note(e))), end="")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    """Show a session's tool calls step by step; --export writes the non-executable JSON record."""
    with _open(args) as db:
        mem = db.owner(args.owner)
        if args.export:
            doc = mem.export_timeline(args.session, args.export, overwrite=args.overwrite)
            if args.json:
                _emit(doc)
            else:
                print(f"wrote {doc['step_count']} steps of session {args.session} to {args.export} (non-executable audit record)")
            return 0
        timeline = mem.timeline(args.session)
        if args.json:
            steps = [{**s.to_dict(), "at": export.utc_text(s.at)} for s in timeline.steps]
            _emit({"owner": timeline.owner, "session": timeline.session, "steps": steps})
        else:
            print(timeline)
    return 0


# --- parser ------------------------------------------------------------------------------------


class _RefuseJson(argparse.Action):
    """``dump --json``: a usage error that says why, rather than lines that are not JSON."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None
    ) -> None:
        parser.error(f"{option_string}: dump prints ^NAME(subs)=value lines, not JSON (export writes episodes as JSON lines)")


_TIME = "ISO 8601 date or datetime, e.g. 2026-07-01 or 2026-07-01T09:00+02:00 (no zone means UTC)"
_EPILOG = (
    "Every command but demo (which takes its DIR) takes --db DIR and, except dump and demo, --json (errors too are JSON then: "
    '{"error": {"type", "message"}} on stdout, same exit codes). Only record, fact KEY VALUE, import, '
    "mcp --create, serve --create and config SETTING=VALUE create a database (record, fact and import only once they "
    "succeed); the others refuse a path that holds none. import - reads stdin, and so does record --content -. "
    "Exit 0 ok, 1 error, 2 usage, 130 interrupted (Ctrl-C: the unfinished transaction wrote nothing)."
)


def build_parser() -> _Parser:
    parser = _Parser(prog="memdb", description="Embedded structured memory for LLM agents.", epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"memdb {memdb.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub.choices  # filled as the commands are added below

    def command(
        name: str, func: Callable[[argparse.Namespace], int], help_: str, owner: bool = True, json_: bool = True
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument(
            "--db", default=os.environ.get("MEMDB_PATH", DEFAULT_DB), help=f"database directory (default $MEMDB_PATH or ./{DEFAULT_DB})"
        )
        if owner:
            p.add_argument("--owner", default=os.environ.get("MEMDB_OWNER", "default"), help="owner (default $MEMDB_OWNER or 'default')")
        if json_:
            p.add_argument("--json", action="store_true", help='print JSON; errors too, as {"error": {"type", "message"}} on stdout')
        p.set_defaults(json=False)
        p.set_defaults(func=func)
        return p

    demo = sub.add_parser("demo", help="build a sample team memory in a directory and ask it questions (the README's main job)")
    demo.add_argument(
        "path", nargs="?", default="demo-db",
        help="a new or empty directory (default ./demo-db); an earlier demo's database there is replaced, anything else is refused",
    )  # fmt: skip
    demo.set_defaults(func=cmd_demo)

    outcome_help = "how it ended: success, partial or failure (typed kinds need one)"
    p = command("record", cmd_record, "record one episode")
    p.add_argument(
        "kind",
        help=f"a typed kind of this database (default {', '.join(DEFAULT_TYPED_KINDS)}; `memdb stats` lists the "
        "configured ones); facts have their own command, `memdb fact`",
    )
    p.add_argument("summary", help="one line saying what happened (sanitized; cut to the database's summary cap)")
    p.add_argument("--outcome", choices=["success", "partial", "failure"], help=outcome_help)
    p.add_argument("--tags", help="comma-separated, e.g. 'Project X,deploy' (normalised: Project X -> project-x)")
    p.add_argument("--what-we-tried", help="what was tried")
    p.add_argument("--what-happened", help="what happened when it was tried")
    p.add_argument("--why", help="why it turned out as it did")
    p.add_argument("--lesson", help="what to do differently next time")
    p.add_argument("--decisions", help='what was decided, as a JSON object, e.g. \'{"action": "rollback", "confidence": 8}\'')
    p.add_argument("--participants", help="comma-separated: who took part, e.g. 'Ana,Bo' (found by their names)")
    p.add_argument("--artifact", help="what it produced or touched: a path, a URL, a ticket")
    p.add_argument("--session", help="the session or conversation id it belongs to")
    p.add_argument("--content", help="the details (kept as a bounded digest, with a marker where it was cut); - reads them from stdin")
    p.add_argument("--ts", help=f"when it happened: {_TIME}; default now (an earlier time writes a backfill audit record)")

    limit_help = "at most this many memories (default %(default)s)"
    chars_help = "cut the printed context to this many characters (default %(default)s)"
    archived_help = "match archived episodes too, through what stays hot of them"
    superseded_help = "match the earlier versions of corrected memories too (`memdb get ID` lists one's versions)"
    p = command("ask", cmd_ask, "ask a plain-language question")
    p.add_argument("question", help="e.g. 'what happened with Project X last week?' (time phrases, tags, outcome words, text)")
    p.add_argument("--now", help=f"the time 'last week', 'yesterday' etc. are read against: {_TIME}; default now")
    p.add_argument("--limit", type=int, default=5, help=limit_help)
    p.add_argument("--max-chars", type=int, default=2000, help=chars_help)
    p.add_argument("--include-archived", action="store_true", help=archived_help)
    p.add_argument("--include-superseded", action="store_true", help=superseded_help)

    p = command("recall", cmd_recall, "structured retrieval by window, tags, text, kind, outcome")
    p.add_argument("--since", help=f"from this time, inclusive: {_TIME}")
    p.add_argument("--until", help=f"before this time, exclusive: {_TIME}")
    p.add_argument("--tags", help="comma-separated; episodes carrying all of them")
    p.add_argument("--any-tags", help="comma-separated; episodes carrying at least one of them")
    p.add_argument("--text", help="words to rank by (BM25 over every text field)")
    p.add_argument("--kind", help="one kind: a typed kind (`memdb stats` lists them), exchange, tool_call, summary or fact")
    p.add_argument("--session", help="one session id")
    p.add_argument("--outcome", choices=["success", "partial", "failure"], help="only episodes that ended so")
    p.add_argument("--limit", type=int, default=5, help=limit_help)
    p.add_argument("--max-chars", type=int, default=2000, help=chars_help)
    p.add_argument("--include-archived", action="store_true", help=archived_help)
    p.add_argument("--include-superseded", action="store_true", help=superseded_help)
    p.add_argument(
        "--include-told",
        action="store_true",
        help="with --since/--until: also episodes recorded outside the window whose text tells of a time in it (ask always does)",
    )

    p = command("restore", cmd_restore, "bring an archived episode's full record back from cold storage, with its indexes")
    p.add_argument("id", help="the episode id (ask/recall --include-archived shows archived ids)")

    p = command("get", cmd_get, "show one episode whole (every field, full stored content) and the ids of its versions")
    p.add_argument("id", help="the episode id (ask/recall/history show ids with --json)")

    p = command("explain", cmd_explain, "why an episode ranks where it does: relevance and its four weighted components")
    p.add_argument("id", help="the episode id (ask/recall/history show ids with --json)")
    p.add_argument("--now", help=f"the time its age is measured at: {_TIME}; default now")

    p = command("supersede", cmd_supersede, "correct an episode: a new version with the fields given, the old one kept as superseded")
    p.add_argument("id", help="the id of the current version")
    p.add_argument("--reason", required=True, help="why it is corrected (kept on the new version and in the audit trail)")
    p.add_argument("--summary", help="the corrected summary")
    p.add_argument("--outcome", choices=["success", "partial", "failure"], help="the corrected outcome (typed kinds)")
    p.add_argument("--tags", help="the corrected tags, comma-separated (replacing the old ones)")
    for flag in ("--lesson", "--content", "--why", "--what-happened", "--what-we-tried"):
        p.add_argument(flag, help=f"the corrected {flag[2:].replace('-', ' ')}")

    p = command("fact", cmd_fact, "show a fact's current value, or record a new value (superseding the old one)")
    p.add_argument("key", help="what the fact is about, e.g. ana/ui.theme (letters, digits, _.:@/+-)")
    p.add_argument("value", nargs="?", help="the new value (default: show the current one)")
    p.add_argument("--tags", help="comma-separated, when recording")

    p = command("facts", cmd_facts, "list the current value of every fact, by key")
    p.add_argument("--prefix", help="only keys starting with this, e.g. ana/")

    p = command("erase", cmd_erase, "erase episodes for good, every version and what derives from them (audited: ids and hashes)")
    p.add_argument("ids", nargs="*", help="episode ids")
    p.add_argument("--tags", help="comma-separated: erase every episode carrying any of them, archived ones and earlier versions too")
    p.add_argument("--reason", required=True, help="why (kept in the audit trail)")
    p.add_argument("--yes", action="store_true", help="do not ask (required when not on a terminal)")
    p.add_argument("--all-of-owner", metavar="NAME", help="erase this owner itself: all its data and its name (--owner is not read)")

    p = command("history", cmd_history, "outcomes and lessons of past attempts")
    p.add_argument("--kind", help="one typed kind (`memdb stats` lists them), e.g. debug")
    p.add_argument("--tags", help="comma-separated; attempts carrying all of them")
    p.add_argument("--text", help="words the attempts should match")
    p.add_argument("--limit", type=int, default=10, help="at most this many attempts listed (default %(default)s)")

    p = command(
        "close-session", cmd_close_session,
        "close a gateway session: its exchanges and tool calls become one typed episode citing them, once (exit 0 when "
        "it is closed, by this call or an earlier one: closing it again writes nothing, status already_closed; exit 1 when "
        "it is not: nothing captured, or a model's answer refused or failed)",
    )  # fmt: skip
    p.add_argument("session", help="the session id its exchanges and tool calls were captured under")
    p.add_argument("--kind", required=True, help="a typed kind of this database (`memdb stats` lists them), e.g. debug")
    p.add_argument(
        "--outcome", required=True, choices=["success", "partial", "failure"], help="how it ended (memdb never guesses one offline)"
    )
    p.add_argument("--tags", help="comma-separated, added to the events' own")
    p.add_argument("--now", help=f"the time of the close: {_TIME}; default now")

    command("stats", cmd_stats, "episodes per owner, size on disk, counters", owner=False)
    p = command(
        "config", cmd_config,
        "show the database's settings, or change them: typed kinds, caps, relevance weights, lifecycle rules, time zone "
        "(saved in the database; creates one when changing)",
        owner=False,
    )  # fmt: skip
    p.add_argument(
        "changes", nargs="*", metavar="SETTING=VALUE",
        help="e.g. typed_kinds=call,demo,deal timezone=Europe/Berlin archive_after_days=60 (JSON values: numbers, lists, "
        'objects such as tag_weights=\'{"urgent": 1.0}\'); none: list every setting',
    )  # fmt: skip
    p = command(
        "maintain", cmd_maintain, "run summaries, rescoring, archiving and retention (each rule reported on a terminal)", owner=False
    )
    p.add_argument("--now", help=f"the time the rules run at: {_TIME}; default now")

    p = command(
        "backup", cmd_backup,
        "write a consistent copy of the whole database (settings, knowledge, audit included) to a new directory, "
        "while it stays in use (LMDB; PostgreSQL: pg_dump)", owner=False,
    )  # fmt: skip
    p.add_argument("dest", help="a new or empty directory")
    command("check", cmd_check, "verify every index against the records (exit 1 when anything disagrees)", owner=False)
    command(
        "compact", cmd_compact,
        "rewrite the store without free space, so erased bytes leave the files (no other process may have it open)", owner=False,
    )  # fmt: skip
    p = command(
        "export", cmd_export,
        'write every episode as JSONL, archived ones too (with status "archived"); current versions only, unless --complete',
        owner=False,
    )  # fmt: skip
    p.add_argument("--owner", help="only this owner (default all)")
    p.add_argument(
        "--complete", action="store_true",
        help='an owner\'s whole copy (right of access): every line typed ("type": episode, version, knowledge, pattern, audit), '
        "adding every earlier version, the knowledge entries they wrote, their patterns and audit records; import brings back "
        "the episodes and skips the rest, saying how many",
    )  # fmt: skip
    p.add_argument("--file", help="output file, replaced only once the export is whole (default stdout); with --json a summary is printed")
    p = command(
        "import", cmd_import,
        "import JSONL episodes, all or nothing (keeps their timestamps; one audit record per owner). Status is not "
        "imported: archived episodes come back active, and the next maintain archives those still due",
        owner=False,
    )  # fmt: skip
    p.add_argument(
        "file",
        help="a JSONL file, one episode per line, as export writes, or - for stdin (a --complete export's other records are "
        "skipped and counted)",
    )
    p.add_argument("--owner", help="import everything for this owner (default: each line's owner)")

    p = command("mcp", cmd_mcp, "serve the memory to agents over MCP (needs the 'mcp' extra)", owner=False)
    p.add_argument("--owner", help="owner served over stdio (default $MEMDB_OWNER)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio", help="stdio (default) or streamable HTTP on 127.0.0.1")
    p.add_argument("--port", type=int, default=8765, help="HTTP port on 127.0.0.1 (default 8765)")
    p.add_argument("--config", help='HTTP: TOML file mapping bearer tokens to owners ([tokens] "<token>" = "<owner>")')
    p.add_argument("--now", help=f"pin the clock to this time (demos, tests): {_TIME}")
    p.add_argument("--create", action="store_true", help="start a new database at --db if there is none (else it is refused)")

    p = sub.add_parser(
        "serve", help="the dashboard, MCP at /mcp and the scheduler in one process (needs the 'web' extra)",
        description="Serve the dashboard, MCP over streamable HTTP at /mcp and the scheduler (docs/dashboard.md).",
    )  # fmt: skip
    p.add_argument("--db", help="database directory or postgresql:// URL (default $MEMDB_PATH or ./memdb-data)")
    p.add_argument("--config", help="TOML file: [tokens] as for memdb mcp, plus [reviewers], [teams], [schedule]")
    p.add_argument("--demo", action="store_true", help="serve the embedded demo database (no config; tokens are printed)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; others need --allow-remote)")
    p.add_argument("--port", type=int, default=8766, help="port (default 8766)")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (with TLS or --behind-proxy)")
    p.add_argument("--tls-cert", help="TLS certificate (PEM) for HTTPS")
    p.add_argument("--tls-key", help="TLS private key (PEM)")
    p.add_argument("--behind-proxy", action="store_true", help="a reverse proxy terminates TLS in front (cookies marked Secure)")
    p.add_argument(
        "--public-host", action="append", metavar="NAME",
        help="with --behind-proxy (required there): a name the proxy serves memdb under; others are refused (repeatable)",
    )  # fmt: skip
    p.add_argument("--create", action="store_true", help="start a new database at --db if there is none (else it is refused)")
    p.add_argument("--now", help=f"pin the clock to this time (demos, tests): {_TIME}")
    p.add_argument("--json", action="store_true", help='errors as JSON: {"error": {"type", "message"}} on stdout')
    p.set_defaults(func=cmd_serve, json=False)

    by_help = "the person deciding (default $MEMDB_USER); kept in the audit trail"
    p = command("reflect", cmd_reflect, "daily reflection: propose cited lessons (pending review) from recent episodes", owner=False)
    p.add_argument("--owner", help="only this owner (default all)")
    p.add_argument("--now", help=f"{_TIME}; default now")

    p = command("review", cmd_review, "the review queue: list, approve or reject pending knowledge entries", owner=False)
    p.add_argument("action", nargs="?", choices=["list", "approve", "reject"], default="list", help="list (default), approve or reject")
    p.add_argument("ids", nargs="*", help="entry ids (approve, reject)")
    p.add_argument("--by", help=by_help)
    p.add_argument("--reason", help="why (reject)")
    p.add_argument("--owner", help="list: only this owner's entries")
    p.add_argument("--limit", type=int, help="at most this many entries listed (default all)")
    p.add_argument("--now", help=f"the time of the decision: {_TIME}; default now")

    p = command("ceremony", cmd_ceremony, "the share ceremony: agenda of approved private lessons, and owners' decisions", owner=False)
    p.add_argument(
        "action", nargs="?", choices=["agenda", "show", "decide"], default="agenda",
        help="agenda (default: hold a ceremony, a new agenda), show (the last agenda as it stands, holding none) or decide",
    )  # fmt: skip
    p.add_argument("decisions", nargs="*", help="decide: ENTRY_ID=share|private|archive ...")
    p.add_argument("--team", help="one team (default every team)")
    p.add_argument("--by", help=by_help)
    p.add_argument("--now", help=f"{_TIME}; default now")

    p = command("decay", cmd_decay, "weekly decay: flag idle entries; a person keeps or quarantines each", owner=False)
    p.add_argument(
        "action", nargs="?", choices=["run", "list", "keep", "quarantine", "restore"], default="run",
        help="run (default: flag idle entries), list the flags, keep or quarantine flagged entries, restore a quarantined one",
    )  # fmt: skip
    p.add_argument("ids", nargs="*", help="entry ids (keep, quarantine, restore)")
    p.add_argument("--by", help=by_help)
    p.add_argument("--reason", help="why (quarantine)")
    p.add_argument("--now", help=f"{_TIME}; default now")

    p = command("timeline", cmd_timeline, "a session's tool calls step by step (reconstruction only; nothing is re-run)")
    p.add_argument("session", help="the session id the tool calls were captured under")
    p.add_argument("--export", metavar="FILE", help="write the versioned, non-executable JSON record to FILE")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")

    p = command("dump", cmd_dump, "print the nodes of a global in M notation, ^NAME(subs)=value", owner=False, json_=False)
    p.add_argument("name", nargs="?", help="global name, e.g. ^MEM (default: all)")
    p.add_argument("--json", nargs=0, action=_RefuseJson, help="not supported: dump prints ^NAME(subs)=value lines")
    return parser


class _UsageError(Exception):
    """A usage error, raised by the parser instead of exiting so ``main`` can print it as JSON."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    commands: Mapping[str, argparse.ArgumentParser]  # the top-level parser's, by name (build_parser)

    def error(self, message: str) -> Any:  # argparse's NoReturn; main turns it into exit 2
        # argparse quotes the bad value ("invalid choice: 'ana@example.com'"): sanitized, as every error is
        raise _UsageError(self, redacted(message))


def _is_option(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not word[1:2].isdigit()


def _takes(parser: argparse.ArgumentParser, option: str) -> bool:
    return option.split("=", 1)[0] in parser._option_string_actions


def _options_before_the_command(parser: _Parser, argv: Sequence[str]) -> None:
    """``memdb --json ask ...`` (git's and kubectl's habit): argparse said only "unrecognized
    arguments: --json", or for ``--db DIR ask`` that DIR is no command. Say where options go
    (tests/surfaces/test_cli_guidance.py)."""
    at = next((i for i, word in enumerate(argv) if word in parser.commands), None)
    if at is None:
        return
    early = [w for w in argv[:at] if _is_option(w)]
    if not early or any(w in ("-h", "--help", "--version") for w in early):
        return  # memdb --help, memdb --version: argparse's own
    name, given = argv[at], " ".join(argv[:at])
    command = parser.commands[name]
    foreign = [w.split("=", 1)[0] for w in early if not _takes(command, w)]
    if foreign:
        listed = f"`memdb {name} --help` lists {name}'s"
        command.error(f"{given}: {name} takes no {' or '.join(foreign)} (options go after the command; {listed})")
    command.error(f"{given} before {name}: options go after the command (memdb {name} ... {given})")


def _unrecognized(parser: _Parser, name: str | None, extras: Sequence[str]) -> NoReturn:
    """What a command was given that it does not take, said with what to do instead: argparse
    printed the top-level usage and "unrecognized arguments", naming neither the command nor,
    for ``ask --since``, that ``--since`` is ``recall``'s (tests/surfaces/test_cli_guidance.py)."""
    if name is None:  # (no command: argparse's own words)
        raise _UsageError(parser, redacted(f"unrecognized arguments: {' '.join(extras)}"))
    command = parser.commands[name]
    at = next((i for i, word in enumerate(extras) if _is_option(word)), None)
    if at is None:
        command.error(
            f"{' '.join(extras)}: more than {name} takes (quote a text of several words; `memdb {name} --help` lists its arguments)"
        )
    end = next((i for i in range(at + 1, len(extras)) if _is_option(extras[i])), len(extras))
    option, given = extras[at].split("=", 1)[0], " ".join(extras[at:end])
    others = [other for other, p in parser.commands.items() if other != name and _takes(p, option)]
    whose = f", but of {', '.join(others)}" if 0 < len(others) <= 3 else ", but of other commands" if others else ""
    near = difflib.get_close_matches(option, [o for o in command._option_string_actions if o.startswith("--")], n=1, cutoff=0.8)
    if name == "ask" and "recall" in others:  # --since, --tags, --outcome: what recall takes, ask reads in words
        hint = 'ask reads a time, tags and an outcome from the question itself, e.g. memdb ask "what failed since May 3?"; '
    else:
        hint = f"did you mean {near[0]}? " if near else ""
    command.error(f"{given}: not an option of {name}{whose} ({hint}`memdb {name} --help` lists {name}'s options)")


def _invocation_error(args: argparse.Namespace) -> str | None:
    """What makes ``args`` unusable before any command runs, named for the person who typed it:
    an empty ``--db`` or ``--owner`` (an environment variable set but empty, named), or a
    database path that is not UTF-8 (LMDB takes its path as UTF-8: it failed after making the
    directory, which the next run then called damaged; tests/surfaces/test_cli_scripting.py)."""
    for attr, var in (("db", "MEMDB_PATH"), ("owner", "MEMDB_OWNER")):
        value = getattr(args, attr, None)
        if isinstance(value, str) and not value.strip():
            if os.environ.get(var) == value:  # the default came from the variable (or equals it)
                return f"${var} is set but empty (unset it for the default, or give --{attr})"
            return f"--{attr} {value!r}: empty (give a {'directory or postgresql:// URL' if attr == 'db' else 'name'})"
    for attr, flag in (("db", "--db"), ("dest", "backup DEST"), ("path", "demo DIR")):
        value = getattr(args, attr, None)
        if isinstance(value, str) and not is_postgres_url(value):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                readable = os.fsencode(value).decode("utf-8", "backslashreplace")
                return f"{flag} {readable}: the path is not valid UTF-8 (memdb opens databases by UTF-8 paths; rename it)"
    return None


_INTERRUPTED = "interrupted (the unfinished transaction wrote nothing)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memdb`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = json_asked(argv)
    try:
        parser = build_parser()
        _options_before_the_command(parser, argv)
        args, extras = parser.parse_known_args(argv)
        if extras:
            _unrecognized(parser, args.command, extras)
    except _UsageError as exc:
        if as_json:
            fail("UsageError", f"{exc.parser.prog}: {exc}", True)
        else:
            exc.parser.print_usage(sys.stderr)
            print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before the command: as while memdb loads (_memdb_cli.py; test_cli_processes.py)
        return not_begun(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    as_json = getattr(args, "json", False)
    problem = _invocation_error(args)
    if problem is not None:
        fail("ValidationError", problem, as_json)
        return 1
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        # Ctrl-C: every change is a transaction, so the one under way was rolled back; the
        # command says so in one line (JSON under --json) and exits as a shell expects, 128 + SIGINT
        fail("Interrupted", getattr(args, "interrupted", _INTERRUPTED), as_json)
        return 130
    except MemdbError as exc:
        fail(type(exc).__name__, str(exc), as_json)
        return 1
    except BrokenPipeError:  # output piped into head & co.: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        fail(type(exc).__name__, f"{exc.filename or 'I/O'}: {exc.strerror or exc}", as_json)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
