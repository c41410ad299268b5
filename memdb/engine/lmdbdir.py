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
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import sys
import time
from typing import Final

from memdb.engine import lmdbfile
from memdb.errors import ConfigError, CorruptionError, StoreBusyError, StoreError

try:
    import fcntl
except ImportError:  # not on Windows: no locks there (compaction cannot see other processes)
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_MODE", "LmdbDirectory", "check_mode"]

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

# struct flock, for F_GETLK: (l_type, l_whence, l_start, l_len, l_pid) in the platform's order
_FLOCK: Final = {"linux": ("hhqqi4x", (0, 1, 2, 3, 4)), "darwin": ("qqihh", (3, 4, 0, 1, 2))}


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

    def __init__(self, path: str, mode: int | None) -> None:
        self.path = path
        self.mode = mode
        self.data_identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the data.mdb checked
        self._scratch: int | None = None  # the inode of the .compact directory make_scratch created
        self._prepare_directory()
        lock_path = os.path.join(path, LOCK)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        create = 0o644 if mode is None else mode  # LMDB's own default, less execute bits
        try:
            try:
                self.fd = os.open(lock_path, flags | os.O_EXCL, create)
                self.lock_existed = False
            except FileExistsError:
                self.fd = os.open(lock_path, flags, create)
                self.lock_existed = True
        except OSError as exc:
            raise self._path_error(LOCK, exc) from None
        try:
            if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                raise StoreError(f"open {path!r}: {LOCK} is not a regular file (remove it; LMDB recreates it)")
            self._set_mode(self.fd)
            self.first = self._take_first()
            if not self.first:
                self._wait_shared()
        except BaseException:
            os.close(self.fd)
            raise

    # --- the directory and its modes -------------------------------------------------------------

    def _prepare_directory(self) -> None:
        try:
            if self.mode is None:
                os.makedirs(self.path, exist_ok=True)
            elif not os.path.isdir(self.path):
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                os.mkdir(self.path, dir_mode(self.mode))
                os.chmod(self.path, dir_mode(self.mode))  # exactly, whatever the umask
        except FileExistsError:
            if not os.path.isdir(self.path):
                raise StoreError(f"open {self.path!r}: is a file, not a directory (an LMDB store is a directory)") from None
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
        return StoreError(f"open {self.path!r}: {name}: {exc.strerror or exc}")

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

    def make_scratch(self) -> str:
        """A fresh, private ``.compact`` directory (a leftover of a compaction that was killed
        is removed first, see ``remove_scratch``); its path."""
        self.remove_scratch()
        scratch = os.path.join(self.path, COMPACT)
        try:
            os.mkdir(scratch, 0o700)
        except OSError as exc:
            raise StoreError(f"compact {self.path!r}: cannot create {COMPACT}: {exc.strerror or exc}") from None
        self._scratch = os.lstat(scratch).st_ino
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
            if self.lock_existed:
                raise CorruptionError(self._missing_message(where, "is missing")) from None
            return
        except OSError as exc:
            raise self._path_error(DATA, exc) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StoreError(f"open {self.path!r}: {DATA} is not a regular file")
            if st.st_size == 0:
                if self.lock_existed:
                    raise CorruptionError(self._missing_message(where, "is empty (0 bytes)"))
                return
            self._checked(fd, where, st.st_size <= DEEP_CHECK_BYTES if deep is None else deep)
            self.data_identity = (st.st_dev, st.st_ino)
        finally:
            os.close(fd)

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
