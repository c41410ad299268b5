"""An LMDB directory as memdb keeps it: private file modes, no symbolic links inside, a lock
that makes compaction exclusive, and the checks of ``data.mdb`` made before LMDB maps it.

The lock. Every process that opens the database through memdb holds a shared POSIX lock on
one byte of ``lock.mdb`` far beyond anything LMDB locks (LMDB locks byte 0 while an
environment is open, and byte ``pid`` for each reader process), from before LMDB opens the
file until after LMDB has closed it. Compaction takes that byte exclusively, and also LMDB's
byte 0 (so no process opening the directory with plain LMDB gets in either), for the whole
copy and swap; an opener waits for it. The first opener of a directory, which finds nobody
else there, takes both exclusively too while it checks every page of ``data.mdb``
(``lmdbfile.walk``), so no writer changes the file under the walk.

POSIX locks belong to the process, and closing *any* descriptor of a file drops all of the
process's locks on it, LMDB's included (LMDB's documentation warns against opening its files
a second time for that reason). So the descriptor of ``lock.mdb`` opened here is the only one
memdb opens, and it stays open exactly as long as the environment does. ``data.mdb`` carries
no locks: opening and closing it for the checks is harmless.

Disk space. LMDB maps ``lock.mdb``, which it makes as a sparse file: writing to a page of it
that has no block, on a full file system, kills the process with SIGBUS. So the first opener
allocates the file's blocks (``allocate``) before LMDB maps it, and a full disk is a
StoreError; an open that fails creating a database removes what it made (``discard``).
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import sys
import time
from typing import Final

try:
    import pwd
    import resource
except ImportError:  # not on Windows
    pwd = None  # type: ignore[assignment]
    resource = None  # type: ignore[assignment]

from memdb.engine import lmdbfile
from memdb.errors import ConfigError, CorruptionError, StoreBusyError, StoreError

try:
    import fcntl
except ImportError:  # not on Windows: no locks there (compaction cannot see other processes)
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_MODE", "LmdbDirectory", "check_mode", "check_room", "fsync_dir", "holds_database", "with_hint", "write_failure"]

DEEP_CHECK_BYTES = 64 << 20
"""With ``verify=None`` (the default), a data.mdb up to this size has every page checked at the
first open (about 0.2 s at the limit); a larger one only its meta pages and length, so opening a
large database stays fast. ``verify=True`` checks every page whatever the size."""

DEFAULT_MODE: Final = 0o600
"""Files of a database are readable and writable by their owner only, unless ``open(mode=...)``."""

DATA, LOCK, COMPACT = "data.mdb", "lock.mdb", ".compact"
OURS: Final = 1 << 40  # the byte of lock.mdb memdb locks: no pid reaches it
LMDB: Final = 0  # the byte LMDB holds shared while an environment is open
_CHECK_ATTEMPTS: Final = 20  # checks of a file other processes commit to, before trusting them
WAIT_SECONDS = 120.0
"""How long an open waits for another process's compaction or first-open check to end."""

_READ_NOFOLLOW: Final = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_LOCK_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NO_ROOM: Final = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_OPEN_ATTEMPTS: Final = 20  # opens of lock.mdb that another process's failed creation removed meanwhile

# struct flock, for F_GETLK: (l_type, l_whence, l_start, l_len, l_pid) in the platform's order
_FLOCK: Final = {"linux": ("hhqqi4x", (0, 1, 2, 3, 4)), "darwin": ("qqihh", (3, 4, 0, 1, 2))}


def fsync_dir(path: str) -> None:
    """Make a rename in ``path`` survive a crash."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_mode(mode: object) -> int | None:
    """``mode`` if it is a file mode memdb can use (None: leave modes to the umask); else ConfigError."""
    if mode is None:
        return None
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o777 or mode & 0o111 or mode & 0o600 != 0o600:
        shown = oct(mode) if isinstance(mode, int) and not isinstance(mode, bool) else repr(mode)
        raise ConfigError(
            f"mode {shown}: a file mode without execute bits that lets the owner read and write "
            "(0o600, the default; e.g. 0o640 to share with a group; None leaves modes to the umask)"
        )
    return mode


def dir_mode(mode: int) -> int:
    """The directory's mode for files of ``mode``: search wherever read is allowed (0o600 -> 0o700)."""
    return mode | (mode & 0o444) >> 2


def lock_bytes(max_readers: int) -> int:
    """The size LMDB gives ``lock.mdb`` for ``max_readers``: a 192-byte header and a 64-byte
    slot per reader beyond the first (mdb.c, mdb_env_setup_locks; pinned by
    tests/engine/test_disk_full.py::test_lock_bytes_is_the_size_lmdb_gives_the_lock_file)."""
    return (max_readers - 1) * 64 + 192


def _free_bytes(path: str) -> int | None:
    """The bytes this process may still write on the file system holding ``path`` (root may
    use the reserved blocks too); None where the platform cannot say."""
    if not hasattr(os, "statvfs"):
        return None
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes} bytes"


def _file_limit() -> int | None:
    """The process's file-size limit (``ulimit -f``) in bytes, None if it has none."""
    if resource is None:
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def check_room(directory: str, nbytes: int, what: str) -> None:
    """StoreError unless the file system holding ``directory`` has ``nbytes`` free and the
    process's file-size limit lets one file grow to ``nbytes``: refused before anything is written."""
    free = _free_bytes(directory)
    if free is not None and free < nbytes:
        raise StoreError(
            f"{what}: needs about {_size(nbytes)} free in {directory!r}, and its file system has {_size(free)} "
            "(free some space and retry; nothing was changed)"
        )
    limit = _file_limit()
    if limit is not None and limit < nbytes:
        raise StoreError(
            f"{what}: needs to write a file of about {_size(nbytes)}, past this process's file-size limit of "
            f"{_size(limit)} (ulimit -f; raise it and retry; nothing was changed)"
        )


_FULL_BELOW: Final = 1 << 20
"""Free bytes under which a failed write is put down to a full file system: a short write uses
up the space it failed in, so what is left after it is about nothing."""


def write_failure(reason: str, directory: str, file: str | None = None) -> str:
    """For a write LMDB reported failed (``reason``, its message), the likely cause, as a hint
    for the message: a short write on a full disk or past the file-size limit reaches LMDB as
    EIO, and "Input/output error" points at the hardware instead
    (tests/engine/test_disk_full.py). "" when ``reason`` is no such failure."""
    if not any(os.strerror(code) in reason for code in (errno.EIO, *_NO_ROOM)):
        return ""
    causes = []
    free = _free_bytes(directory)
    if free is not None and free < _FULL_BELOW:
        causes.append(f"the file system holding {directory!r} is full ({_size(free)} free): free some space and retry")
    limit = _file_limit()
    if limit is not None:
        try:
            size = os.stat(file).st_size if file is not None else 0
        except OSError:
            size = 0
        if size + _FULL_BELOW >= limit:
            causes.append(f"the file reached this process's file-size limit of {_size(limit)} (ulimit -f): raise it and retry")
    if causes:
        return "likely cause: " + "; ".join(causes)
    if os.strerror(errno.EIO) in reason:
        return "the disk is not full and no file-size limit was reached: check the device (e.g. dmesg)"
    return ""


def with_hint(message: str, hint: str) -> str:
    """``message`` with ``hint`` added to its closing parenthesis, or in one of its own."""
    if not hint:
        return message
    return f"{message[:-1]}; {hint})" if message.endswith(")") else f"{message} ({hint})"


def allocate(fd: int, nbytes: int, what: str) -> None:
    """Give the file at ``fd`` real blocks for its first ``nbytes`` (and that length), so LMDB
    can map it and write to it: a page without a block on a full disk is SIGBUS. StoreError on
    a full disk or past the file-size limit; a file system that cannot allocate ahead is left
    to its own ways (glibc writes the blocks instead where the call is not supported)."""
    if not hasattr(os, "posix_fallocate"):  # macOS: no sparse-file SIGBUS seen there to guard against
        return
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except OSError as exc:
        if exc.errno in _NO_ROOM:
            hint = "raise the process's file-size limit, ulimit -f" if exc.errno == errno.EFBIG else "free some space"
            raise StoreError(f"{what}: cannot allocate {_size(nbytes)}: {exc.strerror} ({hint} and retry)") from None
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENODEV, errno.ESPIPE):
            raise StoreError(f"{what}: cannot allocate {_size(nbytes)}: {exc.strerror or exc}") from None


def _user(uid: int, with_id: bool = True) -> str:
    """A user's name (and uid), or the uid alone where it has no name."""
    try:
        name = pwd.getpwuid(uid).pw_name if pwd is not None else None
    except KeyError:
        name = None
    if name is None:
        return f"uid {uid}"
    return f"{name} (uid {uid})" if with_id else name


def _whose(st: os.stat_result, path: str, database: bool) -> str:
    """The end of a permission error's message on ``path`` (the database's directory or one of
    its files if ``database``, else a directory above it): whose it is, its mode, who this
    process is, and what to do."""
    me = os.geteuid()
    if st.st_uid == me:
        hint = f"it is this user's own: give it its permissions back, e.g. chmod u+rwx {path!r}"
    elif database:
        hint = f"run the command as {_user(st.st_uid, with_id=False)}, whose database it is"
    else:
        hint = "run the command as a user allowed there, or choose another path"
    return f"belongs to {_user(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):04o}, and this process runs as {_user(me)} ({hint})"


def denied(path: str, what: str) -> str:
    """The message for a database this process may not read or write (or make): whose the
    directory in the way is, its mode, and who this process is."""
    blocking = path
    while True:
        try:
            st = os.stat(blocking)
            break
        except (PermissionError, FileNotFoundError):
            parent = os.path.dirname(blocking)
            if parent == blocking:
                return f"{what} {path!r}: permission denied"
            blocking = parent
        except OSError:
            return f"{what} {path!r}: permission denied"
    shown = "the directory" if blocking == path else f"directory {blocking!r}"
    return f"{what} {path!r}: permission denied: {shown} {_whose(st, blocking, blocking == path)}"


def holds_database(path: str) -> bool:
    """Whether ``path`` holds a database's ``data.mdb``: StoreError (saying whose it is) where
    this process may not look, since "no database there" would send the user to make a second
    one beside it (tests/engine/test_permissions.py)."""
    try:
        return stat.S_ISREG(os.stat(os.path.join(path, DATA)).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError:
        raise StoreError(denied(path, "open")) from None


def _lock(fd: int, kind: int, start: int, wait: bool = False) -> bool:
    """Take (or change to) a POSIX lock of ``kind`` on byte ``start``; False if another process holds a conflicting one."""
    if fcntl is None:
        return True
    try:
        fcntl.lockf(fd, kind if wait else kind | fcntl.LOCK_NB, 1, start, os.SEEK_SET)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def take_unopened(fd: int) -> bool:
    """Take memdb's and LMDB's bytes of the ``lock.mdb`` at ``fd`` exclusively: True when no
    process has the environment open nor is opening it through memdb, and none can begin to
    while ``fd`` stays open (closing it drops these locks, and every other lock this process
    holds on that file: never call it on an environment this process has open)."""
    return _lock(fd, _EX, OURS) and _lock(fd, _EX, LMDB)


def _who(pid: int | None) -> str:
    return "another process" if pid is None else f"process {pid}"


def holder(fd: int, start: int) -> int | None:
    """The pid of a process holding a lock on byte ``start`` of the file at ``fd`` that an
    exclusive lock would conflict with (never this process), if any; None where the platform
    is unknown. F_GETLK takes nothing."""
    layout = _FLOCK.get(sys.platform)
    if layout is None or fcntl is None:
        return None
    fmt, order = layout
    fields = [0] * 5
    for value, at in zip((fcntl.F_WRLCK, os.SEEK_SET, start, 1, 0), order, strict=True):
        fields[at] = value
    answer = struct.unpack(fmt, fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(fmt, *fields)))
    return None if answer[order[0]] == fcntl.F_UNLCK else int(answer[order[4]])


class LmdbDirectory:
    """One process's hold on a database directory: ``lock.mdb`` open, memdb's lock held
    (``first`` says whether exclusively: nobody else had the directory open), and modes set.

    Raises StoreError for a path that is not a usable directory or holds a symbolic link,
    StoreBusyError when another process keeps exclusive use past ``WAIT_SECONDS``.
    """

    def __init__(self, path: str, mode: int | None, max_readers: int = 126) -> None:
        self.path = path
        self.mode = mode
        self.data_identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the data.mdb checked
        self.creating = False  # this open makes the database: check_data found no data.mdb to keep
        self._scratch: int | None = None  # the inode of the .compact directory make_scratch created
        self._made_dir = False  # whether this open made the directory (removed again by ``discard``)
        self._prepare_directory()
        lock_path = os.path.join(path, LOCK)
        try:
            for _ in range(_OPEN_ATTEMPTS):
                self._open_lock(lock_path)
                if self._lock_is_current(lock_path):
                    break
                os.close(self.fd)  # a failed creation removed it while this waited: open the new one
            else:
                raise StoreError(f"open {path!r}: {LOCK} kept being removed by other processes' failed opens (open it again)")
            if self.first:
                self._allocate_lock(max_readers)
        except BaseException:
            if self._made_dir:
                self._remove_made_dir()
            raise

    def _open_lock(self, lock_path: str) -> None:
        """Open (or make) ``lock.mdb`` and take memdb's lock on it: exclusive if nobody else has it open."""
        create = 0o644 if self.mode is None else self.mode  # LMDB's own default, less execute bits
        try:
            try:
                self.fd = os.open(lock_path, _LOCK_FLAGS | os.O_EXCL, create)
                self.lock_existed = False
            except FileExistsError:
                self.fd = os.open(lock_path, _LOCK_FLAGS, create)
                self.lock_existed = True
        except OSError as exc:
            raise self._path_error(LOCK, exc) from None
        try:
            if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                raise StoreError(f"open {self.path!r}: {LOCK} is not a regular file (remove it; LMDB recreates it)")
            self._set_mode(self.fd)
            self.first = self._take_first()
            if not self.first:
                self._wait_shared()
        except BaseException:
            os.close(self.fd)
            raise

    def _lock_is_current(self, lock_path: str) -> bool:
        """Whether the ``lock.mdb`` locked is still the one at its path (``discard`` unlinks it)."""
        try:
            here = os.lstat(lock_path)
        except FileNotFoundError:
            return False
        held = os.fstat(self.fd)
        return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)

    def _allocate_lock(self, max_readers: int) -> None:
        """Blocks for every page of ``lock.mdb`` LMDB will map (its size for ``max_readers``, or
        the file's own if larger: LMDB keeps that), while nobody else has it open; on a full
        disk a lock.mdb this open made is removed and StoreError says so."""
        try:
            allocate(self.fd, max(lock_bytes(max_readers), os.fstat(self.fd).st_size), f"open {self.path!r}: {LOCK}")
        except StoreError as exc:
            left = self._discard_lock() if not self.lock_existed else "nothing was changed"
            os.close(self.fd)
            raise StoreError(with_hint(exc.args[0], left)) from None

    # --- the directory and its modes -------------------------------------------------------------

    def _prepare_directory(self) -> None:
        try:
            if not os.path.isdir(self.path):
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                os.mkdir(self.path, 0o777 if self.mode is None else dir_mode(self.mode))
                self._made_dir = True
                if self.mode is not None:
                    os.chmod(self.path, dir_mode(self.mode))  # exactly, whatever the umask
        except FileExistsError:
            if not os.path.isdir(self.path):
                raise StoreError(f"open {self.path!r}: is a file, not a directory (an LMDB store is a directory)") from None
        except PermissionError:
            raise StoreError(denied(self.path, "open")) from None
        except OSError as exc:
            what = "is a file, not a directory" if os.path.exists(self.path) and not os.path.isdir(self.path) else exc.strerror
            raise StoreError(f"open {self.path!r}: {what} (an LMDB store is a directory)") from None
        if self.mode is None:
            return
        st = os.stat(self.path)
        want = dir_mode(self.mode)
        if stat.S_IMODE(st.st_mode) != want and st.st_uid == os.geteuid():
            # Only a directory that holds nothing but the database: never a caller's project
            # directory or /tmp (tests/engine/test_permissions.py).
            if set(os.listdir(self.path)) <= {DATA, LOCK, COMPACT}:
                try:
                    os.chmod(self.path, want)
                except OSError as exc:  # a read-only file system: LMDB's own open says the rest
                    raise StoreError(f"open {self.path!r}: cannot make the directory private: {exc.strerror or exc}") from None

    def _set_mode(self, fd: int) -> None:
        if self.mode is not None:
            st = os.fstat(fd)
            if stat.S_IMODE(st.st_mode) != self.mode and st.st_uid == os.geteuid():
                os.fchmod(fd, self.mode)

    def _path_error(self, name: str, exc: OSError) -> StoreError:
        if exc.errno == errno.ELOOP or os.path.islink(os.path.join(self.path, name)):
            return StoreError(
                f"open {self.path!r}: {name} is a symbolic link; memdb never follows links inside a database "
                f"directory (put the file itself there, or open the directory the link points into)"
            )
        if exc.errno == errno.EACCES:
            return StoreError(self._denied(name))
        return StoreError(f"open {self.path!r}: {name}: {exc.strerror or exc}")

    def _denied(self, name: str) -> str:
        """Permission denied on ``name``: whose the file is, where the directory is not in the way."""
        try:
            st = os.stat(os.path.join(self.path, name))
        except OSError:
            return denied(self.path, "open")
        return f"open {self.path!r}: {name}: permission denied: it {_whose(st, os.path.join(self.path, name), True)}"

    # --- a database this open was making ----------------------------------------------------------

    def discard(self) -> str:
        """After LMDB failed to make the database (``creating``; a full disk): remove what this
        open left, ``data.mdb`` and ``lock.mdb`` (a lock.mdb LMDB set up beside no data.mdb is
        refused as damaged ever after) and the directory if this open made it. Only while no
        other process has the directory (LMDB's failed open dropped this process's locks).
        What was left, for the message."""
        if not _lock(self.fd, _EX, OURS) or not _lock(self.fd, _EX, LMDB):
            return f"another process has opened {self.path!r} meanwhile: {LOCK} was left"
        if self._committed():
            # another process opened it, committed and went between LMDB's failure and these
            # locks: its database, never this open's to remove (a review's find)
            return f"another process made the database in {self.path!r} meanwhile: it was left as it is"
        try:
            os.unlink(os.path.join(self.path, DATA))
        except FileNotFoundError:
            pass
        except OSError:
            return f"{os.path.join(self.path, DATA)} was left: remove it and {LOCK}"
        return self._discard_lock()

    def _committed(self) -> bool:
        """Whether ``data.mdb`` holds a committed transaction (a meta page's txnid past 0)."""
        try:
            fd = os.open(os.path.join(self.path, DATA), os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return False
        except OSError:
            return True  # unreadable: left as it is
        try:
            return lmdbfile.newest_txnid(fd) > 0
        finally:
            os.close(fd)

    def _discard_lock(self) -> str:
        """Unlink ``lock.mdb`` (this process holds it exclusively) and the directory if this open made it."""
        try:
            os.unlink(os.path.join(self.path, LOCK))
        except OSError:
            return f"{os.path.join(self.path, LOCK)} was left: remove it"
        if self._made_dir:
            return "nothing was left" if self._remove_made_dir() else f"the directory {self.path!r} was left, empty"
        return "nothing was left"

    def _remove_made_dir(self) -> bool:
        try:
            os.rmdir(self.path)
        except OSError:
            return False
        return True

    # --- the lock ---------------------------------------------------------------------------------

    def _take_first(self) -> bool:
        """Exclusive use if nobody else has the directory open: memdb's byte and LMDB's."""
        if not _lock(self.fd, _EX, OURS):
            return False
        if _lock(self.fd, _EX, LMDB):
            return True
        _lock(self.fd, _SH, OURS)  # someone has it open through plain LMDB: share
        return False

    def _wait_shared(self) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        pause = 0.002
        while not _lock(self.fd, _SH, OURS):
            if time.monotonic() > deadline:
                pid = holder(self.fd, OURS)
                raise StoreBusyError(
                    f"open {self.path!r}: {_who(pid)} has kept exclusive use for {WAIT_SECONDS:.0f} s "
                    "(it is compacting the database or checking its file; retry when it is done)"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def share(self) -> None:
        """After an exclusive first open: let other openers in."""
        _lock(self.fd, _SH, OURS)

    def exclusive(self) -> None:
        """Exclusive use for compaction, or StoreBusyError naming a process that has the
        database open; on failure the shared lock is still held (POSIX keeps a lock whose
        change failed). LMDB's byte 0 goes back to shared when ``share_lmdb`` is called."""
        if not _lock(self.fd, _EX, OURS):
            pid = holder(self.fd, OURS)
            raise StoreBusyError(
                f"compact {self.path!r}: {_who(pid)} has the database open; compaction needs exclusive use (close it there first)"
            )
        if not _lock(self.fd, _EX, LMDB):
            pid = holder(self.fd, LMDB)
            _lock(self.fd, _SH, OURS)
            raise StoreBusyError(
                f"compact {self.path!r}: {_who(pid)} has the LMDB environment open (not through memdb); "
                "compaction needs exclusive use (close it there first)"
            )

    def share_lmdb(self) -> None:
        """Back to what an open environment holds after a compaction that did not swap."""
        _lock(self.fd, _SH, LMDB)
        _lock(self.fd, _SH, OURS)

    def relock(self) -> None:
        """Take the shared lock again after LMDB closed its environment (which dropped it)."""
        self._wait_shared()

    def close(self) -> None:
        """Release: only once LMDB has closed the environment (see the module docstring)."""
        os.close(self.fd)

    # --- compaction's scratch directory ------------------------------------------------------------

    def make_scratch(self, mode: int, max_readers: int) -> str:
        """A fresh, private ``.compact`` directory (a leftover of a compaction that was killed
        is removed first, see ``remove_scratch``), with a ``lock.mdb`` whose blocks are
        allocated for an environment of ``max_readers`` (LMDB maps it: SIGBUS on a full disk
        otherwise); its path. StoreError, and nothing left, where the disk has no room."""
        self.remove_scratch()
        scratch = os.path.join(self.path, COMPACT)
        try:
            os.mkdir(scratch, 0o700)
        except OSError as exc:
            raise StoreError(f"compact {self.path!r}: cannot create {COMPACT}: {exc.strerror or exc}") from None
        self._scratch = os.lstat(scratch).st_ino
        try:
            fd = os.open(os.path.join(scratch, LOCK), _LOCK_FLAGS | os.O_EXCL, mode)
            try:
                allocate(fd, lock_bytes(max_readers), f"compact {self.path!r}: {COMPACT}/{LOCK}")
            finally:
                os.close(fd)
        except BaseException as exc:
            self.remove_scratch()
            if isinstance(exc, OSError):
                raise StoreError(f"compact {self.path!r}: cannot create {COMPACT}/{LOCK}: {exc.strerror or exc}") from None
            raise
        return scratch

    def scratch_is_ours(self) -> bool:
        """Whether ``.compact`` is still the directory ``make_scratch`` created."""
        try:
            st = os.lstat(os.path.join(self.path, COMPACT))
        except OSError:
            return False
        return stat.S_ISDIR(st.st_mode) and st.st_ino == self._scratch

    def remove_scratch(self) -> None:
        """Remove ``.compact`` and the two files compaction writes there, and nothing else: a
        link or anything else there is refused (StoreError), never followed or emptied."""
        scratch = os.path.join(self.path, COMPACT)
        try:
            fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return
        except OSError:
            raise StoreError(
                f"compact {self.path!r}: {COMPACT} is not a directory of memdb's (a link or a file); "
                "compaction writes only a directory of its own there (remove it)"
            ) from None
        try:
            for name in (DATA, LOCK):
                try:
                    st = os.lstat(name, dir_fd=fd)
                except FileNotFoundError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    raise StoreError(f"compact {self.path!r}: {COMPACT}/{name} is not a regular file (remove it)")
                os.unlink(name, dir_fd=fd)  # never follows a link: at most a link goes
        finally:
            os.close(fd)
        try:
            os.rmdir(scratch)
        except OSError:
            raise StoreError(f"compact {self.path!r}: {COMPACT} holds files compaction did not write (move them away)") from None

    # --- data.mdb ---------------------------------------------------------------------------------

    def check_data(self, deep: bool | None) -> None:
        """Refuse a ``data.mdb`` LMDB must not map: a link, not a file, damaged, or empty where
        the directory says it held a database (``lock.mdb`` was there before this open; LMDB
        writes both meta pages in the same open that creates ``data.mdb``, after ``lock.mdb``)."""
        data_path = os.path.join(self.path, DATA)
        where = f"database {self.path!r}: {DATA}"
        try:
            fd = os.open(data_path, _READ_NOFOLLOW)
        except FileNotFoundError:
            if self.lock_existed and not self._lock_never_set_up():
                raise CorruptionError(self._missing_message(where, "is missing")) from None
            self.creating = self.first
            return
        except OSError as exc:
            raise self._path_error(DATA, exc) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StoreError(f"open {self.path!r}: {DATA} is not a regular file")
            if st.st_size == 0:
                if self.lock_existed and not self._lock_never_set_up():
                    raise CorruptionError(self._missing_message(where, "is empty (0 bytes)"))
                self.creating = self.first
                return
            self._checked(fd, where, st.st_size <= DEEP_CHECK_BYTES if deep is None else deep)
            self.data_identity = (st.st_dev, st.st_ino)
        finally:
            os.close(fd)

    def _lock_never_set_up(self) -> bool:
        """Whether ``lock.mdb`` was never set up by LMDB: its magic number (the first 4 bytes,
        which LMDB writes when it sets the file up and never clears) is zero, so no environment
        ever opened here. That is what a first open that failed leaves (memdb's or LMDB's own
        creation of the file, then a full disk or a kill), never a database's lock: one then
        opens as new (tests/engine/test_disk_full.py). Only alone (``first``): another process
        may be setting it up right now."""
        if not self.first:
            return False
        return os.pread(self.fd, 4, 0).strip(b"\x00") == b""

    def _checked(self, fd: int, where: str, deep: bool) -> None:
        """Check the file open at ``fd`` (every page if ``deep``). Alone (``first``), nothing
        changes the file under them. Otherwise another process may commit meanwhile, and a
        commit rewrites a meta page and may reuse pages a check was reading: a failure counts
        only if no commit came between (then the damage is real), and a check that commits
        keep overtaking is given up, the file being in live use by them."""
        for _ in range(_CHECK_ATTEMPTS):
            before = lmdbfile.newest_txnid(fd)
            try:
                meta = lmdbfile.read_meta(fd, where)
                if deep:
                    lmdbfile.walk(fd, meta, where)  # reads every page the trees reach: the length too
                else:
                    lmdbfile.check_length(fd, meta, where)
                return
            except CorruptionError:
                if self.first or lmdbfile.newest_txnid(fd) == before:
                    raise

    def used_bytes(self) -> int:
        """The bytes of the pages the newest meta page counts now (another process may have
        added some since ``check_data``; 0 if it cannot be read: LMDB's open then says why)."""
        try:
            fd = os.open(os.path.join(self.path, DATA), _READ_NOFOLLOW)
        except OSError:
            return 0
        try:
            meta = lmdbfile.read_meta(fd, DATA)
            return (meta.last_pgno + 1) * meta.page_size
        except CorruptionError:
            return 0
        finally:
            os.close(fd)

    def _missing_message(self, where: str, what: str) -> str:
        return (
            f"{where}: damaged: {what}, but {LOCK} shows the directory held a database ({CorruptionError.HINT}; "
            f"if it never held data, remove {os.path.join(self.path, LOCK)} and open it again)"
        )

    def check_opened(self) -> None:
        """After LMDB opened the directory: ``data.mdb`` is still the regular file checked
        (nothing swapped a link in), and has the mode."""
        try:
            fd = os.open(os.path.join(self.path, DATA), _READ_NOFOLLOW)
        except OSError as exc:
            raise self._path_error(DATA, exc) from None
        try:
            st = os.fstat(fd)
            known = self.data_identity
            if not stat.S_ISREG(st.st_mode) or (known is not None and known != (st.st_dev, st.st_ino)):
                raise StoreError(f"open {self.path!r}: {DATA} was replaced while it was being opened (open it again)")
            self._set_mode(fd)
        finally:
            os.close(fd)


_EX: Final = fcntl.LOCK_EX if fcntl is not None else 0
_SH: Final = fcntl.LOCK_SH if fcntl is not None else 0
