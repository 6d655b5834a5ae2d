# SPDX-License-Identifier: Apache-2.0
"""
Bring a replicated database back onto a new machine: `litestream restore`, then checks.

restore() never overwrites: it refuses a target that exists (or whose WAL
or shared-memory file exists), restores into a private partial file beside
the target, runs PRAGMA integrity_check on it, and only then links it to
the target name (link(2) fails when the name appeared meanwhile). The
caller (console/restore_tool.py) runs memory verify on the result before
it says the database is ready.
"""

import os
import pathlib
import shutil
import sqlite3
import subprocess
import tempfile

from mira_memory.core.replication import s3, supervisor
from mira_memory.core.store import private_files

RESTORE_TIMEOUT_SEC = 600.0


class RestoreError(RuntimeError):
    """The restore was refused or failed (one line); nothing is left at the target."""


def _sidecars(path):
    return [pathlib.Path(f'{path}{suffix}') for suffix in ('', '-wal', '-shm', '-journal')]


def restore(target, to_path, timestamp=''):
    """Restore the replica target to to_path (absent); return the integrity_check result."""
    to_path = pathlib.Path(to_path).absolute()
    existing = [str(path) for path in _sidecars(to_path) if os.path.lexists(path)]
    if existing:
        raise RestoreError(f'refusing to overwrite {existing[0]}: restore onto a new path')
    try:
        if target.scheme == 's3':
            s3.credentials()  # Litestream's own message would not say what is missing
        binary = supervisor.litestream_binary()
        private_files.make_directories(to_path.parent)
    except (supervisor.ReplicationError, s3.S3Error, OSError) as error:
        raise RestoreError(str(error)) from None
    partial = to_path.parent / f'.{to_path.name}.restoring-{os.getpid()}'
    work = pathlib.Path(tempfile.mkdtemp(prefix='mira-restore-'))
    try:
        config = work / 'litestream.yml'
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, 'w') as handle:
            handle.write(target.litestream_config(partial, log_level='warn'))
        argv = [binary, 'restore', '-config', str(config), '-o', str(partial)]
        if timestamp:
            argv += ['-timestamp', timestamp]
        argv.append(str(partial))
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=RESTORE_TIMEOUT_SEC, umask=0o077, check=False)
        except subprocess.TimeoutExpired:
            raise RestoreError(f'litestream restore did not finish within '
                               f'{RESTORE_TIMEOUT_SEC:g} s') from None
        if done.returncode != 0 or not partial.is_file():
            reason = ' '.join((done.stderr or done.stdout).split())[-400:]
            raise RestoreError(f'litestream restore from {target.display} failed: '
                               f'{reason or "no database was written"}')
        os.chmod(partial, private_files.FILE_MODE)
        integrity = _integrity(partial)
        if integrity != 'ok':
            raise RestoreError(f'the restored database failed integrity_check: {integrity}')
        try:
            os.link(partial, to_path)
        except FileExistsError:
            raise RestoreError(f'refusing to overwrite {to_path}: it appeared during the '
                               'restore') from None
        private_files.sync_directory(to_path.parent)
        return integrity
    finally:
        for path in _sidecars(partial):
            if os.path.lexists(path):
                os.unlink(path)
        shutil.rmtree(work, ignore_errors=True)


def _integrity(path):
    conn = sqlite3.connect(path.as_uri() + '?mode=ro', uri=True)
    try:
        rows = [row[0] for row in conn.execute('PRAGMA integrity_check')]
    except sqlite3.Error as error:
        return f'{type(error).__name__}: {error}'
    finally:
        conn.close()
    return '; '.join(rows)
