# SPDX-License-Identifier: Apache-2.0
"""
Replication's ROS-free parts: replica_url checks, Litestream's configuration, health from its log.

The processes themselves (Litestream, the node, sshd) are in
test/system/test_replication.py.
"""

import datetime
import hashlib
import json
import os
import pathlib
import stat
import subprocess
import tempfile
import time

from mira_memory.core.replication import s3, status, supervisor, target
import pytest


def test_a_directory_url_gives_a_file_replica():
    replica = target.parse('file:///mnt/replica/mira/')
    assert (replica.scheme, replica.path) == ('file', '/mnt/replica/mira')
    config = json.loads(replica.litestream_config('/data/memory.sqlite3'))
    assert config['dbs'] == [{'path': '/data/memory.sqlite3', 'monitor-interval': '1s',
                              'replica': {'sync-interval': '1s', 'type': 'file',
                                          'path': '/mnt/replica/mira'}}]
    assert config['logging'] == {'level': 'debug', 'type': 'json'}


def test_an_sftp_url_needs_a_key_and_a_pinned_host_key(tmp_path):
    key = tmp_path / 'id'
    key.write_text('key')
    host_key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA comment'
    replica = target.parse('sftp://mira@backup.example:2222/srv/mira', str(key), host_key)
    assert replica.litestream_replica() == {
        'sync-interval': '1s', 'type': 'sftp', 'host': 'backup.example:2222', 'user': 'mira',
        'path': '/srv/mira', 'key-path': str(key),
        'host-key': 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA'}
    with pytest.raises(target.ReplicaConfigError, match='needs replica_key_path'):
        target.parse('sftp://mira@backup/srv/mira', '', host_key)
    with pytest.raises(target.ReplicaConfigError, match='needs replica_host_key'):
        target.parse('sftp://mira@backup/srv/mira', str(key), '')
    with pytest.raises(target.ReplicaConfigError, match='must not hold a password'):
        target.parse('sftp://mira:secret@backup/srv/mira', str(key), host_key)
    with pytest.raises(target.ReplicaConfigError, match='USER@HOST'):
        target.parse('sftp://backup/srv/mira', str(key), host_key)


def test_an_s3_url_gives_litestreams_s3_replica_without_credentials():
    replica = target.parse('s3://mira-replicas/robots/robot-7/?endpoint=http://127.0.0.1:9000'
                           '&region=eu-central-1')
    assert (replica.bucket, replica.path, replica.region, replica.endpoint) == (
        'mira-replicas', 'robots/robot-7', 'eu-central-1', 'http://127.0.0.1:9000')
    assert replica.litestream_replica() == {
        'sync-interval': '1s', 'type': 's3', 'bucket': 'mira-replicas',
        'path': 'robots/robot-7', 'region': 'eu-central-1',
        'endpoint': 'http://127.0.0.1:9000', 'force-path-style': True}
    aws = target.parse('s3://mira-replicas/robot-7')
    assert aws.litestream_replica() == {
        'sync-interval': '1s', 'type': 's3', 'bucket': 'mira-replicas', 'path': 'robot-7',
        'region': target.DEFAULT_S3_REGION}


@pytest.mark.parametrize('url, says', [
    ('s3://bucket', 'needs a prefix of its own'),
    ('s3://bucket/', 'needs a prefix of its own'),
    ('s3://bucket/a/../b', 'needs a prefix of its own'),
    ('s3://AKIA:PASSWORD@bucket/mira', 'must not hold credentials'),
    ('s3://bucket/mira?accessKeyId=AKIA', "unsupported s3 query key 'accessKeyId'"),
    ('s3://bucket/mira?endpoint=ftp://host', 'endpoint must be http(s)://HOST[:PORT]'),
    ('s3://bucket/mira?endpoint=http://host/path', 'endpoint must be http(s)://HOST[:PORT]'),
    ('s3://bucket/mira?region=a&region=b', 'each s3 query key once'),
    ('s3://bucket:9000/mira', 's3://BUCKET/PREFIX (a bucket name, no port)'),
    ('s3://bucket/mira#x', 'no fragment'),
    ('s3://bucket/mira?endpoint=http://host:port', 'endpoint has an invalid port'),
    ('s3://bucket:x/mira?secretAccessKey=PASSWORD', "unsupported s3 query key 'secretAccessKey'"),
    ('s3://bucket/mira?PASSWORD', 'malformed query'),
])
def test_a_bad_s3_url_is_refused_with_one_line(url, says):
    with pytest.raises(target.ReplicaConfigError) as error:
        target.parse(url)
    assert says in str(error.value) and '\n' not in str(error.value)
    # A secret put where it does not belong is not echoed into the log.
    assert 'PASSWORD' not in str(error.value)


# AWS's published Signature Version 4 examples for S3 (the "Examples" of
# "Authenticating Requests: Using the Authorization Header").
_AWS_KEY = ('AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY')


@pytest.mark.parametrize('url, headers, signature', [
    ('https://examplebucket.s3.amazonaws.com/test.txt', {'Range': 'bytes=0-9'},
     'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41'),
    ('https://examplebucket.s3.amazonaws.com/?lifecycle', {},
     'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543'),
    ('https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J', {},
     '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7'),
])
def test_s3_requests_are_signed_as_aws_documents(url, headers, signature):
    now = datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc)
    signed = s3.signature_headers('GET', url, headers, hashlib.sha256(b'').hexdigest(),
                                  *_AWS_KEY, 'us-east-1', now)
    assert signed['authorization'].endswith(f'Signature={signature}'), signed
    assert signed['x-amz-date'] == '20130524T000000Z'


def test_an_s3_bucket_is_addressed_as_litestream_does():
    keys = {'AWS_ACCESS_KEY_ID': 'id', 'AWS_SECRET_ACCESS_KEY': 'key'}
    assert s3.Bucket('mira', 'eu-west-1', environ=keys)._base == (
        'https://mira.s3.eu-west-1.amazonaws.com')
    assert s3.Bucket('mira.replicas', 'eu-west-1', environ=keys)._base == (
        'https://s3.eu-west-1.amazonaws.com/mira.replicas')
    assert s3.Bucket('mira', 'us-east-1', 'http://127.0.0.1:9000', environ=keys)._base == (
        'http://127.0.0.1:9000/mira')


def test_s3_credentials_come_from_the_environment_only():
    assert s3.credentials({'AWS_ACCESS_KEY_ID': 'id', 'AWS_SECRET_ACCESS_KEY': 'key',
                           'AWS_SESSION_TOKEN': 'token'}) == ('id', 'key', 'token')
    assert s3.credentials({'LITESTREAM_ACCESS_KEY_ID': 'id',
                           'LITESTREAM_SECRET_ACCESS_KEY': 'key'}) == ('id', 'key', '')
    with pytest.raises(s3.S3Error, match='needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY'):
        s3.credentials({'AWS_ACCESS_KEY_ID': 'id'})
    with pytest.raises(s3.S3Error, match='AWS_CA_BUNDLE is set'):
        s3.credentials({'AWS_ACCESS_KEY_ID': 'id', 'AWS_SECRET_ACCESS_KEY': 'key',
                        'AWS_CA_BUNDLE': '/etc/ca.pem'})


@pytest.mark.parametrize('url, says', [
    ('', 'replica_url is empty'),
    ('/mnt/replica', 'is not a replica URL'),
    ('ftp://host/x', 'is not a replica URL'),
    ('abs://container/mira', 'abs:// replicas are not supported, because forget'),
    ('gs://bucket/mira', 'gs:// replicas are not supported'),
    ('file://relative/dir', 'a file:// replica is a local directory'),
    ('file:///', 'absolute directory path other than /'),
    ('file:///a/../b', 'must not contain ".."'),
    ('file:///a?x=1', 'no query or fragment'),
    ('file:///a\nb', 'control characters'),
])
def test_a_bad_url_is_refused_with_one_line(url, says):
    with pytest.raises(target.ReplicaConfigError, match=says.replace('?', r'\?')) as error:
        target.parse(url)
    assert '\n' not in str(error.value)


def test_the_generated_configuration_is_private_and_removed_on_close(tmp_path):
    logger = type('Logger', (), {'info': print, 'error': print})()
    replicator = supervisor.Supervisor(target.parse((tmp_path / 'replica').as_uri()),
                                       tmp_path / 'memory.sqlite3', logger, binary='/bin/false')
    config = replicator.config_path
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(config.parent).st_mode) == 0o700
    replicator.check_replica()
    assert stat.S_IMODE(os.stat(tmp_path / 'replica').st_mode) == 0o700
    assert os.listdir(tmp_path / 'replica') == []
    replicator.close()
    assert not config.parent.exists()


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _line(message, **fields):
    return json.dumps({'time': 't', 'level': 'DEBUG', 'msg': message, **fields})


def _sync(replica, database):
    return _line('replica sync', txid={'replica': f'{replica:016x}', 'db': f'{database:016x}'})


def test_health_follows_litestream_log_lines():
    clock = Clock()
    health = status.ReplicationStatus('file:///r', clock=clock, wall=lambda: 0.0)
    health.started(42)
    assert dict(health.report(10.0)[2])['replication'] == 'starting'
    health.read_log_line(_sync(0, 3))
    clock.now += 12.0
    level, message, values = health.report(lag_warn_sec=10.0)
    assert (level, dict(values)['replication'], dict(values)['replication lag sec']) == (
        'WARN', 'behind', '12.0')
    # The upload of an LTX file at level 0 carries a second "level" key.
    health.read_log_line('{"level":"DEBUG","msg":"ltx file uploaded","level":0,'
                         '"minTXID":"0000000000000001","maxTXID":"0000000000000003"}')
    level, _, values = health.report(10.0)
    assert (level, dict(values)['replication'], dict(values)['replica txid']) == (
        'OK', 'in sync', '3')
    assert dict(values)['last replica sync'] == '1970-01-01T00:00:00Z'
    health.read_log_line(json.dumps({'level': 'ERROR', 'msg': 'sync error',
                                     'error': 'mkdir /r/ltx: not a directory'}))
    level, message, values = health.report(10.0)
    assert level == 'ERROR' and dict(values)['replication'] == 'replica unreachable'
    assert message == 'replication: replica unreachable: sync error: mkdir /r/ltx: not a directory'
    clock.now += 1.0
    health.read_log_line(_sync(3, 3))
    assert health.report(10.0)[0] == 'OK'


def test_an_exit_is_an_error_until_the_replica_catches_up():
    clock = Clock()
    health = status.ReplicationStatus('file:///r', clock=clock)
    health.started(1)
    health.read_log_line(_sync(2, 2))
    health.read_log_line('not json: panic')
    health.exited(-9)
    clock.now += 5.0
    level, message, values = health.report()
    assert level == 'ERROR' and 'litestream exited with status -9' in message
    assert dict(values)['litestream restarts'] == '1'
    assert dict(values)['replication lag sec'] == '5.0'  # since the last sync
    assert health.last_error_line() == 'not json: panic'
    health.started(2)
    clock.now += 1.0
    health.read_log_line(_sync(2, 2))
    assert health.report()[0] == 'OK'


def test_after_a_wipe_the_replica_is_not_in_sync_before_litestream_syncs_again():
    health = status.ReplicationStatus('file:///r', clock=Clock())
    health.started(1)
    health.read_log_line(_sync(5, 5))
    assert dict(health.report()[2])['replication'] == 'in sync'
    health.purge_requested()
    health.stopped()
    health.purged()
    health.started(2)
    assert dict(health.report()[2])['replication'] == 'starting'
    health.read_log_line(_sync(1, 1))
    assert dict(health.report()[2])['replication'] == 'in sync'


class Logger:
    def __init__(self):
        self.lines = []

    def info(self, line):
        self.lines.append(('INFO', line))

    def warning(self, line):
        self.lines.append(('WARN', line))

    def error(self, line):
        self.lines.append(('ERROR', line))


def _fake_litestream(tmp_path, body):
    binary = tmp_path / 'litestream'
    binary.write_text(f'#!/bin/sh\n{body}\n')
    binary.chmod(0o700)
    return str(binary)


def _wait(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.02)


def test_a_forget_just_before_close_still_wipes_the_replica(tmp_path):
    replica = tmp_path / 'replica'
    (replica / 'ltx' / '0').mkdir(parents=True)
    (replica / 'ltx' / '0' / '0000000000000001-0000000000000001.ltx').write_bytes(b'secret')
    meta = supervisor.meta_directory(tmp_path / 'memory.sqlite3')
    (meta / 'ltx' / '0').mkdir(parents=True)
    (meta / 'ltx' / '0' / 'local.ltx').write_bytes(b'secret')
    replicator = supervisor.Supervisor(
        target.parse(replica.as_uri()), tmp_path / 'memory.sqlite3', Logger(),
        binary=_fake_litestream(tmp_path, 'echo started; exec sleep 600'))
    replicator.start()
    _wait(lambda: replicator.status.running)
    with replicator.wal_truncation():
        assert not replicator.status.running  # stopped before the checkpoint
    replicator.close()
    assert not (replica / 'ltx').exists() and not meta.exists()


def test_litestream_that_exits_is_restarted_and_reported(tmp_path):
    logger = Logger()
    replicator = supervisor.Supervisor(
        target.parse((tmp_path / 'replica').as_uri()), tmp_path / 'memory.sqlite3', logger,
        binary=_fake_litestream(tmp_path, 'echo "cannot open database"; exit 3'))
    replicator.start()
    try:
        _wait(lambda: replicator.status.restarts >= 2)  # 1 s backoff, then 2 s
    finally:
        replicator.close()
    level, message, _ = replicator.status.report()
    assert level == 'ERROR' and 'litestream exited with status 3' in message
    assert ('ERROR', 'replication: litestream exited with status 3 (cannot open database); '
                     'restarting in 1 s') in logger.lines


def test_a_wipe_owed_at_close_is_done_at_the_next_start_before_litestream(tmp_path):
    database = tmp_path / 'memory.sqlite3'
    replica = tmp_path / 'replica'
    (replica / 'ltx' / '0').mkdir(parents=True)
    (replica / 'ltx' / '0' / '0000000000000001-0000000000000001.ltx').write_bytes(b'secret')
    away = tmp_path / 'replica.away'
    # Litestream says whether the replica still held the text when it started.
    binary = _fake_litestream(
        tmp_path, f'if [ -e {replica}/ltx ]; then echo dirty >> {tmp_path}/starts; '
                  f'else echo clean >> {tmp_path}/starts; fi; exec sleep 600')
    first = supervisor.Supervisor(target.parse(replica.as_uri()), database, Logger(), binary)
    starts = tmp_path / 'starts'
    first.start()
    _wait(lambda: starts.exists() and starts.read_text().split() == ['dirty'])
    replica.rename(away)
    replica.write_text('not a directory')  # unreachable: the wipe cannot be done
    with first.wal_truncation():
        pass
    first.close()
    marker = supervisor.owed_wipe_marker(database)
    assert stat.S_IMODE(os.stat(marker).st_mode) == 0o600

    replica.unlink()
    away.rename(replica)
    logger = Logger()
    second = supervisor.Supervisor(target.parse(replica.as_uri()), database, logger, binary)
    assert second.status.report()[2][1] == ('replication', 'wiping the replica after a forget')
    second.start()
    try:
        # The fake says what it saw once it runs (status.running is set at its start).
        _wait(lambda: len(starts.read_text().split()) == 2)
    finally:
        second.close()
    assert starts.read_text().split() == ['dirty', 'clean']
    assert not (replica / 'ltx').exists() and not marker.exists()
    assert any(level == 'WARN' and 'has not reached' in line for level, line in logger.lines)


def test_configuration_directories_of_dead_nodes_are_removed(tmp_path):
    gone = subprocess.Popen(['true'])
    gone.wait()
    temp = pathlib.Path(tempfile.gettempdir())
    stale = temp / f'mira-replication-{gone.pid}-test'
    stale.mkdir()
    (stale / 'litestream.yml').write_text('dbs: []\n')
    live = pathlib.Path(tempfile.mkdtemp(prefix=f'mira-replication-{os.getpid()}-'))
    try:
        replicator = supervisor.Supervisor(target.parse((tmp_path / 'replica').as_uri()),
                                           tmp_path / 'memory.sqlite3', Logger(), '/bin/false')
        replicator.close()
        assert not stale.exists()
        assert live.is_dir()
    finally:
        live.rmdir()
