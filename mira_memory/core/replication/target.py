# SPDX-License-Identifier: Apache-2.0
"""
Where a database is replicated: the replica_url, checked, and what Litestream needs.

Three kinds of replica are supported, because forget must reach every
byte of a replica (replica_files.wipe) and this package can remove a
replica's files from these by itself:

- ``file:///absolute/directory``: a directory (a mounted disk, an NFS share);
- ``sftp://user@host[:port]/absolute/directory``: an SSH server, with key
  authentication only (``replica_key_path``) and a pinned host key
  (``replica_host_key``, one known_hosts-style ``type base64`` line);
- ``s3://bucket/prefix[?endpoint=URL&region=NAME]``: S3-compatible object
  storage (AWS without endpoint; MinIO and others with one, addressed
  path-style), the query keys Litestream's own URLs use. The credentials
  are never in the URL: the environment holds them (core/replication/s3.py).

Litestream's other types (``gs://``, ``abs://``, ...) are refused with one
line that says why: forget could not remove the forgotten text from them
(docs/storage.md#replication-and-restore).
"""

from dataclasses import dataclass
import json
import pathlib
import urllib.parse

SUPPORTED_SCHEMES = ('file', 'sftp', 's3')
# Litestream's types this package recognises but cannot wipe on forget.
UNWIPEABLE_SCHEMES = ('gs', 'abs', 'webdav', 'webdavs', 'nats', 'oss')
SYNC_INTERVAL = '1s'
# Litestream's S3 URL query keys that are allowed here (none carries a secret).
S3_QUERY_KEYS = ('endpoint', 'region')
DEFAULT_S3_REGION = 'us-east-1'
MONITOR_INTERVAL = '1s'


class ReplicaConfigError(ValueError):
    """The replica settings are unusable; the node must not start (one line)."""


@dataclass(frozen=True)
class ReplicaTarget:
    """
    A checked replica: file (path), sftp (host, port, user, path, key, host key) or s3.

    For s3, path is the key prefix inside bucket (no leading slash) and
    endpoint is empty for AWS itself.
    """

    url: str
    scheme: str
    path: str
    host: str = ''
    port: int = 22
    user: str = ''
    key_path: str = ''
    host_key: str = ''
    bucket: str = ''
    region: str = ''
    endpoint: str = ''

    @property
    def display(self):
        """Return the URL to show in logs and /diagnostics (it never holds a secret)."""
        return self.url

    def litestream_replica(self):
        """Return the replica section of Litestream's configuration."""
        section = {'sync-interval': SYNC_INTERVAL}
        if self.scheme == 'file':
            section.update({'type': 'file', 'path': self.path})
        elif self.scheme == 's3':
            section.update({'type': 's3', 'bucket': self.bucket, 'path': self.path,
                            'region': self.region})
            if self.endpoint:
                section.update({'endpoint': self.endpoint, 'force-path-style': True})
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
            'could not remove forgotten text from them; use file://, sftp:// or s3://')
    if scheme not in SUPPORTED_SCHEMES:
        raise ReplicaConfigError(
            f'replica_url {url!r} is not a replica URL: expected file:///DIRECTORY, '
            'sftp://USER@HOST[:PORT]/DIRECTORY or s3://BUCKET/PREFIX')
    if scheme == 's3':
        return _s3(url, parts)
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


def _s3(url, parts):
    if parts.username is not None or parts.password is not None:
        raise ReplicaConfigError(
            'replica_url must not hold credentials: an s3 replica takes them from the '
            "node's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
    # The query is checked before the URL is ever echoed: a value that is
    # not allowed there may be a secret.
    try:
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True,
                                      strict_parsing=bool(parts.query))
    except ValueError:
        raise ReplicaConfigError('replica_url has a malformed query') from None
    unknown = sorted(set(query) - set(S3_QUERY_KEYS))
    if unknown:
        raise ReplicaConfigError(
            f'replica_url: unsupported s3 query key {unknown[0]!r} (allowed: '
            f'{", ".join(S3_QUERY_KEYS)}; credentials come from the environment)')
    if parts.fragment:
        raise ReplicaConfigError('replica_url must have no fragment')
    bucket = parts.hostname or ''
    try:
        has_port = parts.port is not None
    except ValueError:
        has_port = True
    if not bucket or has_port or not all(
            (character.isascii() and character.isalnum()) or character in '.-'
            for character in bucket):
        raise ReplicaConfigError(
            f'replica_url {url!r}: an s3 replica is s3://BUCKET/PREFIX (a bucket name, '
            'no port)')
    if any(len(values) != 1 or not values[0] for values in query.values()):
        raise ReplicaConfigError(f'replica_url {url!r}: each s3 query key once, with a value')
    prefix = urllib.parse.unquote(parts.path).strip('/')
    # The wipe after a forget removes every object under the prefix: the
    # replica needs a prefix of its own, never the whole bucket.
    if not prefix or '//' in prefix or any(
            part in ('.', '..') for part in prefix.split('/')):
        raise ReplicaConfigError(
            f'replica_url {url!r}: an s3 replica needs a prefix of its own inside the '
            'bucket (s3://BUCKET/PREFIX; no ".", ".." or empty parts)')
    endpoint = query.get('endpoint', [''])[0]
    if endpoint:
        endpoint_parts = urllib.parse.urlsplit(endpoint)
        try:
            endpoint_parts.port
        except ValueError:
            raise ReplicaConfigError(
                f'replica_url {url!r}: endpoint has an invalid port') from None
        if (endpoint_parts.scheme not in ('http', 'https') or not endpoint_parts.hostname
                or endpoint_parts.path.strip('/') or endpoint_parts.query
                or endpoint_parts.username or endpoint_parts.password):
            raise ReplicaConfigError(
                f'replica_url {url!r}: endpoint must be http(s)://HOST[:PORT], no path')
        endpoint = f'{endpoint_parts.scheme}://{endpoint_parts.netloc}'
    region = query.get('region', [DEFAULT_S3_REGION])[0]
    return ReplicaTarget(url=url, scheme='s3', path=prefix, bucket=bucket, region=region,
                         endpoint=endpoint)
