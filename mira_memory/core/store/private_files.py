# SPDX-License-Identifier: Apache-2.0
"""
Personal memories stay private: files 0600, directories 0700.

Every file the memory node creates for a database is its owner's alone:
the database (core/store/ownership.py creates it), the copies a backup or an
export writes (core/archive/copies.py), and any directory created on the way
to them. SQLite creates the WAL and SHM files with the database file's
own mode, so a 0600 database has a 0600 WAL and SHM.

A database that already exists keeps its mode (the node never changes
what an operator chose), but a file that other users may read gets a
warning in the log and in /diagnostics (exposure()).
"""

import os
import pathlib
import stat

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
# Bits that let anyone but the owner read or write.
_SHARED_BITS = stat.S_IRWXG | stat.S_IRWXO


def make_directories(path):
    """
    Create directory path and its missing parents, each new one 0700 and durable.

    Existing directories are left as they are. (pathlib's mkdir(parents=True)
    creates the parents with the default mode, whatever mode says.) Each new
    directory's parent is synced before the next one is made: a name reaches
    the disk only when its directory is synced, and a power cut must not take
    away a database directory whose writes were acknowledged.
    """
    path = pathlib.Path(path)
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIRECTORY_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue
        # mkdir's mode is masked by the umask; 0700 can only lose bits, but be exact.
        os.chmod(directory, DIRECTORY_MODE)
        sync_directory(directory.parent)


def sync_directory(path):
    """Fsync the directory at path: the names made or removed in it survive a power cut."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def opener(path, flags):
    """Open path like open() does, creating a new file 0600 (open(..., opener=opener))."""
    fd = os.open(path, flags | os.O_CLOEXEC, FILE_MODE)
    try:
        # A file left by an earlier attempt keeps its mode: make it private too.
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_empty(path):
    """Create (or truncate) path as an empty 0600 file, for SQLite to open afterwards."""
    os.close(opener(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW))


def create_missing(path):
    """Create path as an empty 0600 file when it does not exist; an existing file is kept."""
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE))


def mode_text(mode):
    """Return the permission bits of a st_mode as four octal digits ('0600')."""
    return '%04o' % stat.S_IMODE(mode)


def exposure(path):
    """
    Return None when only the owner may access the file at path, else a one-line warning.

    A missing file is not exposed (there is nothing to read).
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if not mode & _SHARED_BITS:
        return None
    return (f'the database file {path} is accessible to other users (mode '
            f'{mode_text(mode)}): personal memories may be read by them; '
            f'chmod 600 {path} (and its -wal and -shm files)')
