# SPDX-License-Identifier: Apache-2.0
"""
Where a backup or an export may write, and how its file is put there.

Target checks (check_target), on resolved paths (symlinks and '..'
followed), before anything is written:
- never a file of the live database: the database itself or any name SQLite
  gives its companions (-journal, -wal, -shm, and the -mjXXXXXXXX super
  journal of a transaction across databases), whatever link or '..' the
  path takes to get there;
- only inside the output directories, when the caller names some (the
  memory node's admin_output_dirs parameter; --force does not widen them).

The file is written first to a temporary file beside the target, created
with O_CREAT|O_EXCL|O_NOFOLLOW under a name nobody can guess
(.<target name>.<128 random bits>.partial): whatever already sits at that
name (a symlink, a hard link to someone's file, a FIFO) makes the copy fail
instead of being written through. publish() then puts the complete, fsynced
file in place with link() (no force: an existing target is never replaced,
even one that appears meanwhile) or rename() (force: the name is replaced,
never the file a symlink there points to).
"""

import os
import pathlib
import re
import secrets

from mira_memory.core.errors import BackendError, InvalidInputError, PathNotAllowedError
from mira_memory.core.errors import TargetExistsError
from mira_memory.core.store import private_files

TEMPORARY_SUFFIX = '.partial'
# The names SQLite gives the files of a database (sqlite3 pager.c, wal.c, vdbeaux.c).
_SIDECAR_SUFFIXES = ('', '-journal', '-wal', '-shm')
_SUPER_JOURNAL = re.compile(r'-mj[0-9A-Fa-f]{8}\Z')
# O_EXCL: fail on any name that exists; O_NOFOLLOW: a symlink there is not followed.
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _resolved(path):
    return pathlib.Path(os.path.realpath(path))


def is_database_file(database, target):
    """Return True when target (resolved) is the database at database or a companion file."""
    database = _resolved(database)
    target = _resolved(target)
    if target.parent != database.parent or not target.name.startswith(database.name):
        return _same_file(target, database)
    rest = target.name[len(database.name):]
    return rest in _SIDECAR_SUFFIXES or bool(_SUPER_JOURNAL.match(rest)) or _same_file(
        target, database)


def _same_file(a, b):
    # A hard link to the database is the database.
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def output_directories(text, database):
    """
    Return the directories admin_output_dirs names, as absolute paths.

    text: directories separated by ':' (as in PATH); empty means the one
    default directory beside the database, <database stem>-copies. Raises
    InvalidInputError for a relative path.
    """
    names = [name for name in text.split(':') if name.strip()] if text else []
    if not names:
        database = pathlib.Path(database)
        return (database.with_name(database.stem + '-copies'),)
    directories = []
    for name in names:
        path = pathlib.Path(name.strip()).expanduser()
        if not path.is_absolute():
            raise InvalidInputError(f'admin_output_dirs must name absolute directories: {name!r}')
        directories.append(path)
    return tuple(directories)


def prepare_directories(directories):
    """Create the output directories that are missing, each 0700 (private_files)."""
    for directory in directories:
        private_files.make_directories(directory)


def check_target(database, path, force, directories=None):
    """
    Return the target of a backup or export as a Path, or raise why it is refused.

    path must be an absolute path, never a file of the live database
    (is_database_file), inside one of directories when it is given
    (PathNotAllowedError, --force or not), a file in an existing directory,
    and not an existing file unless force.
    """
    if not isinstance(path, str) or not path:
        raise InvalidInputError('the target path is empty')
    target = pathlib.Path(path)
    if not target.is_absolute():
        raise InvalidInputError('the target path must be absolute (it is resolved by the node,'
                                " not by the caller's working directory)")
    # Before the other checks: their answers suggest --force or another
    # directory, which must never be offered for the database itself.
    if is_database_file(database, target):
        raise InvalidInputError('the target is the database itself or one of its files')
    # Before the checks that look at the target: a caller learns nothing of
    # the files outside the output directories, not even that one exists.
    if directories is not None and not _inside(target, directories):
        raise PathNotAllowedError(
            '%s is outside the directories the node writes copies to (%s); '
            'see the parameter admin_output_dirs'
            % (target, ', '.join(str(d) for d in directories)))
    if not target.parent.is_dir():
        raise InvalidInputError('the target directory does not exist: %s' % target.parent)
    if target.is_dir():
        raise InvalidInputError('the target is a directory: %s' % target)
    if os.path.lexists(target) and not force:
        raise TargetExistsError('%s exists; give --force to replace it' % target)
    return target


def _inside(target, directories):
    parent = _resolved(target.parent)
    return any(parent.is_relative_to(_resolved(directory)) for directory in directories)


def _temporary_name(target):
    return '.%s.%s%s' % (target.name, secrets.token_hex(16), TEMPORARY_SUFFIX)


def create_temporary(target):
    """
    Create the temporary file of a copy to target; return (its open fd, its path).

    The file is new, 0600 and this process's: if its name is taken by
    anything, the copy fails (BackendError) and nothing is written.
    """
    temporary = target.with_name(_temporary_name(target))
    try:
        fd = os.open(temporary, _CREATE_FLAGS, private_files.FILE_MODE)
    except FileExistsError:
        raise BackendError('the temporary file name %s is taken; nothing was written'
                           % temporary) from None
    except OSError as error:
        # ELOOP: a symlink raced in at the name; never write through it.
        raise BackendError('cannot create the temporary file %s: %s'
                           % (temporary, error.strerror)) from None
    try:
        os.fchmod(fd, private_files.FILE_MODE)  # exact, whatever the umask
    except BaseException:
        os.close(fd)
        os.unlink(temporary)
        raise
    return fd, temporary


def require_same_file(fd, temporary):
    """Raise BackendError unless the name temporary still is the file open at fd."""
    mine = os.fstat(fd)
    try:
        there = os.lstat(temporary)
    except OSError:
        there = None
    if there is None or (there.st_dev, there.st_ino) != (mine.st_dev, mine.st_ino):
        raise BackendError('the temporary file %s was replaced while the copy ran; '
                           'nothing was written' % temporary)


def publish(fd, temporary, target, force):
    """Put the complete temporary file in place; without force never replace anything."""
    require_same_file(fd, temporary)
    os.fsync(fd)
    if force:
        os.replace(temporary, target)
    else:
        try:
            # link() fails if the target appeared meanwhile: no overwrite race.
            os.link(temporary, target)
        except FileExistsError:
            raise TargetExistsError('%s exists; give --force to replace it'
                                    % target) from None
        os.unlink(temporary)
    private_files.sync_directory(target.parent)


def discard(temporary):
    """Remove a temporary file and SQLite's transient companions of it, if present."""
    for suffix in ('', '-journal', '-wal', '-shm'):
        try:
            os.unlink(str(temporary) + suffix)
        except FileNotFoundError:
            pass
