# SPDX-License-Identifier: Apache-2.0
"""
A replica's files, touched directly: the start-up write probe and the wipe after forget.

Litestream 0.5 keeps a replica as LTX files under ``<path>/ltx/<level>/``;
the wipe removes every one of them, so no page image written before a
forget survives in the replica, and Litestream then writes a new snapshot
of the forgotten-clean database (core/replication/supervisor.py).

A directory replica is handled with the file system; an sftp replica with
OpenSSH's ``sftp`` client in batch mode: key authentication only, the host
key pinned (never trust-on-first-use), a connect timeout so an unreachable
server fails fast instead of hanging the caller. An s3 replica with the
node's own S3 calls (core/replication/s3.py): Litestream keeps its objects
under ``<prefix>/<level>/``, and the wipe removes every object under
``<prefix>/``. A bucket that keeps versions is refused at the probe, since
a deleted object's old versions would still hold the forgotten text.
"""

import os
import pathlib
import shutil
import subprocess
import tempfile

from mira_memory.core.replication import s3
from mira_memory.core.store import private_files

LTX_DIRECTORY = 'ltx'
PROBE_NAME = '.mira-replica-probe'
# Litestream's compaction levels: 0 (every sync), 1-3 (compacted), 9 (snapshots).
LTX_LEVELS = tuple(range(10))
SFTP_TIMEOUT_SEC = 20.0
CONNECT_TIMEOUT_SEC = 5


class ReplicaUnreachable(OSError):
    """The replica could not be written or wiped (one line, for the log and /diagnostics)."""


def probe(target, work_dir):
    """Write a small file into the replica and remove it; raise ReplicaUnreachable if not."""
    if target.scheme == 's3':
        _probe_s3(target)
        return
    if target.scheme == 'file':
        directory = pathlib.Path(target.path)
        try:
            private_files.make_directories(directory)
            probe_path = directory / PROBE_NAME
            fd = os.open(probe_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                         private_files.FILE_MODE)
            try:
                os.write(fd, b'probe\n')
                os.fsync(fd)
            finally:
                os.close(fd)
            probe_path.unlink()
        except OSError as error:
            raise ReplicaUnreachable(
                f'cannot write the replica directory {target.path}: '
                f'{error.strerror or error}') from None
        return
    local = pathlib.Path(work_dir) / PROBE_NAME
    local.write_bytes(b'probe\n')
    remote = f'{target.path}/{PROBE_NAME}'
    commands = [f'-mkdir {_quote(prefix)}' for prefix in _prefixes(target.path)]
    commands += [f'put {_quote(str(local))} {_quote(remote)}', f'rm {_quote(remote)}']
    _sftp(target, work_dir, commands)


def wipe(target, work_dir):
    """Remove every LTX file of the replica; raise ReplicaUnreachable when it cannot."""
    if target.scheme == 's3':
        _wipe_s3(target)
        return
    if target.scheme == 'file':
        ltx = pathlib.Path(target.path) / LTX_DIRECTORY
        # A replica directory that is not there (an unmounted disk, a file in
        # its place) may hold the text elsewhere later: not wiped, not done.
        if not pathlib.Path(target.path).is_dir():
            raise ReplicaUnreachable(f'the replica directory {target.path} is not there')
        try:
            if ltx.exists():
                shutil.rmtree(ltx)
                private_files.sync_directory(target.path)
        except OSError as error:
            raise ReplicaUnreachable(
                f'cannot remove the replica files in {ltx}: {error.strerror or error}') from None
        return
    base = f'{target.path}/{LTX_DIRECTORY}'
    # rm takes a glob; "-" keeps going where a level has no file (or no directory).
    commands = [f'-rm {_quote(f"{base}/{level}")}/*' for level in LTX_LEVELS]
    commands += [f'-rmdir {_quote(f"{base}/{level}")}' for level in LTX_LEVELS]
    commands.append(f'-rmdir {_quote(base)}')
    _sftp(target, work_dir, commands)
    # What is left must be nothing: a listing of the level directories fails
    # when ltx/ is gone, and lists the survivors otherwise.
    listing = _sftp(target, work_dir, [f'-ls -1 {_quote(base)}/*/*'])
    survivors = [line for line in listing.splitlines()
                 if line.strip().endswith('.ltx') and not line.startswith('sftp>')]
    if survivors:
        raise ReplicaUnreachable(f'{len(survivors)} replica files could not be removed')


def _bucket(target):
    try:
        return s3.Bucket(target.bucket, target.region, target.endpoint)
    except s3.S3Error as error:
        raise ReplicaUnreachable(str(error)) from None


def _refuse_versions(target, bucket):
    versioning = bucket.versioning()
    if versioning:
        raise ReplicaUnreachable(
            f'bucket {target.bucket} has versioning {versioning} (GetBucketVersioning): '
            'a deleted object would keep the forgotten text in its old versions; use a '
            'bucket that never had versioning (nor object lock)')


def _probe_s3(target):
    bucket = _bucket(target)
    try:
        _refuse_versions(target, bucket)
        key = f'{target.path}/{PROBE_NAME}'
        bucket.put(key, b'probe\n')
        bucket.delete(key)
    except s3.S3Error as error:
        raise ReplicaUnreachable(str(error)) from None


def _wipe_s3(target):
    bucket = _bucket(target)
    # The trailing slash keeps a sibling prefix (robot-1 beside robot-10) out.
    prefix = f'{target.path}/'
    try:
        # Versioning turned on since the start would keep every deleted object.
        _refuse_versions(target, bucket)
        for key in bucket.keys(prefix):
            bucket.delete(key)
        survivors = bucket.keys(prefix)
    except s3.S3Error as error:
        raise ReplicaUnreachable(str(error)) from None
    if survivors:
        raise ReplicaUnreachable(f'{len(survivors)} replica objects could not be removed '
                                 f'from s3://{target.bucket}/{prefix}')


def known_hosts_line(target):
    """Return the known_hosts line that pins the sftp server's host key."""
    host = target.host if target.port == 22 else f'[{target.host}]:{target.port}'
    return f'{host} {target.host_key}\n'


def _prefixes(path):
    parts = pathlib.PurePosixPath(path).parts[1:]
    return ['/' + '/'.join(parts[:index]) for index in range(1, len(parts) + 1)]


def _quote(text):
    if '"' in text or '\n' in text:
        raise ReplicaUnreachable(f'unsupported character in replica path {text!r}')
    return f'"{text}"'


def _sftp(target, work_dir, commands):
    """Run commands through `sftp -b`; return its output or raise ReplicaUnreachable."""
    client = shutil.which('sftp')
    if client is None:
        raise ReplicaUnreachable('an sftp replica needs the OpenSSH sftp client '
                                 '(Debian: apt-get install openssh-client)')
    known_hosts = pathlib.Path(work_dir) / 'known_hosts'
    known_hosts.write_text(known_hosts_line(target))
    with tempfile.NamedTemporaryFile('w', dir=work_dir, suffix='.batch', delete=False) as batch:
        batch.write('\n'.join(commands) + '\n')
    argv = [client, '-q', '-b', batch.name, '-P', str(target.port), '-i', target.key_path,
            '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes',
            '-o', 'PasswordAuthentication=no', '-o', 'StrictHostKeyChecking=yes',
            '-o', f'UserKnownHostsFile={known_hosts}', '-o', 'GlobalKnownHostsFile=/dev/null',
            '-o', f'ConnectTimeout={CONNECT_TIMEOUT_SEC}', '-o', 'LogLevel=ERROR',
            f'{target.user}@{target.host}']
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=SFTP_TIMEOUT_SEC, check=False)
    except subprocess.TimeoutExpired:
        raise ReplicaUnreachable(
            f'the sftp replica {target.display} did not answer within '
            f'{SFTP_TIMEOUT_SEC:g} s') from None
    finally:
        os.unlink(batch.name)
    if done.returncode != 0:
        reason = ' '.join((done.stderr or done.stdout).split())[-300:]
        raise ReplicaUnreachable(f'the sftp replica {target.display} failed: {reason}')
    return done.stdout
