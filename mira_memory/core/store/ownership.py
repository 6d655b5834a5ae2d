# SPDX-License-Identifier: Apache-2.0
"""
One owner per database file: an exclusive lock held for the owner's lifetime.

The memory node, and every offline tool that rewrites a database (migration,
import), calls `claim(path)` before SQLite opens the file and keeps the
returned `Ownership` until it exits. A second claimant fails at once with
DatabaseBusyError naming the file and, where the kernel tells, the owning
process.

Why flock(2) on the database file itself, not a sidecar lock file: the lock
is tied to the file's inode, so deleting or renaming a sidecar can never let
a second owner in, and nothing extra is left on disk. On Linux, flock locks
are independent of the POSIX record locks SQLite takes on the same file, so
the two never interfere. (On NFS, Linux emulates flock with record locks;
the database must be on a local file system, as SQLite's WAL mode requires
anyway.) The kernel drops the lock when the process dies, so a crash never
leaves a stale owner behind.

`Ownership.still_at_path()` tells whether the locked file is still the one at
the path: a database that was unlinked, moved or replaced while its owner ran
must never be acknowledged as written.
"""

import fcntl
import os

from mira_memory.core.store import private_files


class DatabaseBusyError(Exception):
    """Another process owns the database file; the message names it."""

    def __init__(self, path, owner_pid):
        owner = f'process {owner_pid}' if owner_pid else 'another process'
        super().__init__(f'{path} is already owned by {owner} (one owner per database)')
        self.path = path
        self.owner_pid = owner_pid


class Ownership:
    """An exclusive flock on one database file, held until release()."""

    def __init__(self, path, fd):
        self.path = path
        self._fd = fd
        stat = os.fstat(fd)
        self._identity = (stat.st_dev, stat.st_ino)

    def still_at_path(self):
        """Return True while the locked file is the file at the path, not unlinked."""
        if self._fd is None:
            return False
        try:
            at_path = os.stat(self.path)
        except OSError:
            return False
        # One stat is enough (it runs twice per remember): while this process
        # holds the descriptor the inode cannot be freed and reused, so a file
        # at the path with the held identity is the held file, and it is linked.
        return (at_path.st_dev, at_path.st_ino) == self._identity

    def release(self):
        """Give up ownership (closing the descriptor drops the lock); idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.release()


def claim(path, *, create=True):
    """
    Take exclusive ownership of the database file at path, without waiting.

    With create, a missing file is created empty and 0600, its owner's alone
    (SQLite treats an empty file as a new database; core/store/private_files.py);
    the parent directory must exist. Opening never
    changes an existing file's bytes. Raises DatabaseBusyError when another
    process owns it, OSError when the file cannot be opened.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC
    if create:
        flags |= os.O_CREAT
    fd = os.open(path, flags, private_files.FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _flock_owner(os.fstat(fd))
        os.close(fd)
        raise DatabaseBusyError(path, owner) from None
    except BaseException:
        os.close(fd)
        raise
    return Ownership(path, fd)


def _flock_owner(stat):
    """Return the pid holding a FLOCK on the file, from /proc/locks, or None."""
    wanted = '%02x:%02x:%d' % (os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino)
    try:
        with open('/proc/locks', encoding='ascii', errors='replace') as locks:
            for line in locks:
                # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
                fields = line.split()
                if ('->' not in fields and len(fields) >= 6 and fields[1] == 'FLOCK'
                        and fields[5] == wanted):
                    return int(fields[4])
    except (OSError, ValueError):
        pass
    return None
