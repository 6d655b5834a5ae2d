# SPDX-License-Identifier: Apache-2.0
"""
Where a database is replicated: the replica_url, checked, and what Litestream needs.

Two kinds of replica are supported, because forget must reach every byte
of a replica (core/replication/wipe.py) and this package can remove a
replica's files from these two by itself:

- ``file:///absolute/directory``: a directory (a mounted disk, an NFS share);
- ``sftp://user@host[:port]/absolute/directory``: an SSH server, with key
  authentication only (``replica_key_path``) and a pinned host key
  (``replica_host_key``, one known_hosts-style ``type base64`` line).

Object storage (``s3://``, ``gs://``, ``abs://``) and Litestream's other
types are refused with one line that says why: forget could not remove the
forgotten text from them (docs/storage.md#replication-and-restore).
"""

from dataclasses import dataclass
import json
import pathlib
import urllib.parse

SUPPORTED_SCHEMES = ('file', 'sftp')
# Litestream's types this package recognises but cannot wipe on forget.
UNWIPEABLE_SCHEMES = ('s3', 'gs', 'abs', 'webdav', 'webdavs', 'nats', 'oss')
SYNC_INTERVAL = '1s'
MONITOR_INTERVAL = '1s'


class ReplicaConfigError(ValueError):
    """The replica settings are unusable; the node must not start (one line)."""


@dataclass(frozen=True)
class ReplicaTarget:
    """A checked replica: file (path only) or sftp (host, port, user, path, key, host key)."""

    url: str
    scheme: str
    path: str
    host: str = ''
    port: int = 22
    user: str = ''
    key_path: str = ''
    host_key: str = ''

    @property
    def display(self):
        """Return the URL to show in logs and /diagnostics (it never holds a secret)."""
        return self.url

    def litestream_replica(self):
        """Return the replica section of Litestream's configuration."""
        section = {'sync-interval': SYNC_INTERVAL}
        if self.scheme == 'file':
            section.update({'type': 'file', 'path': self.path})
        else:
            section.update({'type': 'sftp', 'host': f'{self.host}:{self.port}',
                            'user': self.user, 'path': self.path,
                            'key-path': self.key_path, 'host-key': self.host_key})
        return section

    def litestream_config(self, database_path, log_level='debug'):
        """
        Return Litestream's configuration for database_path, as text.

        JSON is YAML, so no YAML library is needed. debug logging is what
        the supervisor reads the replica's position from ("replica sync",
        "ltx file uploaded" lines, core/replication/supervisor.py).
        """
        return json.dumps({
            'logging': {'level': log_level, 'type': 'json'},
            'dbs': [{'path': str(database_path), 'monitor-interval': MONITOR_INTERVAL,
                     'replica': self.litestream_replica()}],
        }, indent=2) + '\n'


def parse(url, key_path='', host_key=''):
    """Return the ReplicaTarget of url, or raise ReplicaConfigError (one line)."""
    if not isinstance(url, str) or not url.strip():
        raise ReplicaConfigError('replica_url is empty')
    url = url.strip()
    if any(ord(character) < 32 for character in url):
        raise ReplicaConfigError('replica_url must not contain control characters')
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in UNWIPEABLE_SCHEMES:
        raise ReplicaConfigError(
            f'replica_url {url!r}: {scheme}:// replicas are not supported, because forget '
            'could not remove forgotten text from them; use file:// or sftp://')
    if scheme not in SUPPORTED_SCHEMES:
        raise ReplicaConfigError(
            f'replica_url {url!r} is not a replica URL: expected file:///DIRECTORY or '
            'sftp://USER@HOST[:PORT]/DIRECTORY')
    if parts.query or parts.fragment:
        raise ReplicaConfigError(f'replica_url {url!r} must have no query or fragment')
    path = urllib.parse.unquote(parts.path)
    if not path.startswith('/') or path.rstrip('/') == '':
        raise ReplicaConfigError(
            f'replica_url {url!r} needs an absolute directory path other than /')
    path = str(pathlib.PurePosixPath(path))
    if '..' in pathlib.PurePosixPath(path).parts:
        raise ReplicaConfigError(f'replica_url {url!r} must not contain ".."')
    if scheme == 'file':
        if parts.netloc not in ('', 'localhost'):
            raise ReplicaConfigError(
                f'replica_url {url!r}: a file:// replica is a local directory (file:///DIR)')
        return ReplicaTarget(url=url, scheme='file', path=path)
    return _sftp(url, parts, path, key_path, host_key)


def _sftp(url, parts, path, key_path, host_key):
    if parts.password is not None:
        raise ReplicaConfigError(
            'replica_url must not hold a password: sftp uses key authentication '
            '(replica_key_path)')
    try:
        port = parts.port or 22
    except ValueError:
        raise ReplicaConfigError(f'replica_url {url!r} has an invalid port') from None
    if not parts.hostname or not parts.username:
        raise ReplicaConfigError(
            f'replica_url {url!r}: an sftp replica needs sftp://USER@HOST[:PORT]/DIRECTORY')
    if not key_path:
        raise ReplicaConfigError(
            'an sftp replica needs replica_key_path (key authentication only)')
    key = pathlib.Path(key_path).expanduser()
    if not key.is_absolute() or not key.is_file():
        raise ReplicaConfigError(f'replica_key_path {key_path!r} is not an absolute path '
                                 'to a readable key file')
    fields = host_key.split()
    if len(fields) < 2 or not fields[0].startswith(('ssh-', 'ecdsa-')):
        raise ReplicaConfigError(
            "an sftp replica needs replica_host_key: the server's public host key as "
            "'TYPE BASE64' (ssh-keyscan prints it)")
    return ReplicaTarget(url=url, scheme='sftp', path=path, host=parts.hostname, port=port,
                         user=urllib.parse.unquote(parts.username), key_path=str(key),
                         host_key=' '.join(fields[:2]))
