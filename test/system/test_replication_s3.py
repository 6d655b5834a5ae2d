# SPDX-License-Identifier: Apache-2.0
"""
An s3 replica, through real memory node processes and a real S3 server on 127.0.0.1.

The server is moto's (`moto_server`, a separate process), with its IAM
checks on: every request must carry a valid AWS Signature V4 by a key that
exists, so the node's own S3 calls (core/replication/s3.py) and
Litestream's are both checked by an independent implementation. The test
reads the bucket with boto3 (which moto brings), not with the node's code.

- Start-up refusals, one ERROR line each and no database file: an
  unreachable endpoint, a bucket with versioning, a bucket that does not
  exist, a wrong secret key, a URL that holds a credential.
- Writes reach the bucket; a forget, then every object in the bucket
  downloaded and scanned raw, within the stated delay: no canary text.
- The robot lost (Litestream and the node SIGKILLed, the database directory
  deleted), then memory_restore --from s3://... onto a new path: every
  write acknowledged more than the stated lag before the loss is there.

Skipped, saying why, only where moto is not installed (tools/bootstrap
installs it, so CI runs it).
"""

import importlib.util
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time

from helpers import durability
from helpers.replication import (
    CANARY, forget_everywhere, lose_and_restore, ok_and_in_sync, raw_hits, replica_files,
    ReplicatedWorkload, restore, STATED_LAG_SEC)
from mira_memory.core.replication.supervisor import meta_directory
import pytest

pytestmark = pytest.mark.ros
BUCKET = 'mira-replicas'
PREFIX = 'robots/robot-7'
# moto's IAM setup below: create the user, its policy and its key, unsigned.
_SETUP_ACTIONS = 3


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class LocalS3:
    """A moto_server process on 127.0.0.1 with IAM checks on, and a key allowed s3:*."""

    def __init__(self, directory):
        self.port = _free_port()
        self.endpoint = f'http://127.0.0.1:{self.port}'
        server = pathlib.Path(sys.executable).parent / 'moto_server'
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(_SETUP_ACTIONS))
        self.log = directory / 'moto.log'
        with open(self.log, 'wb') as log:
            self.process = subprocess.Popen(
                [str(server if server.exists() else shutil.which('moto_server')),
                 '-H', '127.0.0.1', '-p', str(self.port)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30.0
        while True:
            with socket.socket() as client:
                if client.connect_ex(('127.0.0.1', self.port)) == 0:
                    break
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, 'moto_server did not listen'
            time.sleep(0.05)
        import boto3
        iam = boto3.client('iam', endpoint_url=self.endpoint, region_name='us-east-1',
                           aws_access_key_id='setup', aws_secret_access_key='setup')
        iam.create_user(UserName='robot')
        iam.put_user_policy(UserName='robot', PolicyName='replica', PolicyDocument=json.dumps({
            'Version': '2012-10-17',
            'Statement': [{'Effect': 'Allow', 'Action': 's3:*', 'Resource': '*'}]}))
        key = iam.create_access_key(UserName='robot')['AccessKey']
        self.key_id, self.secret = key['AccessKeyId'], key['SecretAccessKey']
        self.client = boto3.client('s3', endpoint_url=self.endpoint, region_name='us-east-1',
                                   aws_access_key_id=self.key_id,
                                   aws_secret_access_key=self.secret)

    def url(self, bucket=BUCKET, prefix=PREFIX, endpoint=None):
        return f's3://{bucket}/{prefix}?endpoint={endpoint or self.endpoint}'

    def download(self, directory, bucket=BUCKET):
        """Copy every object version of bucket into a new directory; return its files."""
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        pages = self.client.get_paginator('list_object_versions').paginate(Bucket=bucket)
        for number, version in enumerate(
                item for page in pages for item in page.get('Versions', [])):
            try:
                body = self.client.get_object(Bucket=bucket, Key=version['Key'])['Body'].read()
            except self.client.exceptions.NoSuchKey:
                continue  # deleted since it was listed (a compaction, a wipe)
            (directory / f'{number:05d}.object').write_bytes(body)
        return replica_files(directory)

    def close(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def local_s3(tmp_path, monkeypatch):
    """Yield a LocalS3 whose key is in the environment the node and memory_restore inherit."""
    if importlib.util.find_spec('moto') is None:
        pytest.skip("moto is not installed (pip install 'moto[server]'; tools/bootstrap "
                    'installs it)')
    server = LocalS3(tmp_path)
    try:
        monkeypatch.setenv('AWS_ACCESS_KEY_ID', server.key_id)
        monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', server.secret)
        for name in ('AWS_SESSION_TOKEN', 'AWS_CA_BUNDLE', 'AWS_PROFILE',
                     'LITESTREAM_ACCESS_KEY_ID', 'LITESTREAM_SECRET_ACCESS_KEY'):
            monkeypatch.delenv(name, raising=False)
        server.client.create_bucket(Bucket=BUCKET)
        yield server
    finally:
        server.close()


@pytest.fixture
def workloads(ros, tmp_path):
    """Make ReplicatedWorkloads; a node still running at the end is stopped (SIGKILL)."""
    made = []

    def make(name, **replication):
        workload = ReplicatedWorkload(ros, tmp_path / name, tmp_path, replication=replication)
        made.append(workload)
        return workload
    yield make
    for workload in made:
        if workload.node is not None and workload.node.poll() is None:
            workload.stop(signal.SIGKILL)


def test_bad_s3_replicas_fail_startup_and_leave_no_database(
        workloads, local_s3, monkeypatch):
    local_s3.client.create_bucket(Bucket='versioned')
    local_s3.client.put_bucket_versioning(
        Bucket='versioned', VersioningConfiguration={'Status': 'Enabled'})
    cases = [
        (local_s3.url(endpoint=f'http://127.0.0.1:{_free_port()}'), 'cannot reach 127.0.0.1'),
        (local_s3.url(bucket='versioned'), 'has versioning Enabled (GetBucketVersioning)'),
        (local_s3.url(bucket='absent'), 'NoSuchBucket'),
        (f's3://{BUCKET}/{PREFIX}?endpoint={local_s3.endpoint}&secretAccessKey=x',
         "unsupported s3 query key 'secretAccessKey'"),
    ]
    for number, (url, says) in enumerate(cases):
        workload = workloads(f'robot-{number}', replica_url=url)
        exited = workload.start_failing()
        assert exited is not None, f'the node started serving with {url}'
        assert exited.code == 1 and not exited.traceback, exited
        assert len(exited.errors) == 1 and says in exited.errors[0], (url, exited.errors)
        assert not workload.database.exists()
    monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', 'not-the-secret')
    workload = workloads('robot-wrong-key', replica_url=local_s3.url())
    exited = workload.start_failing()
    assert exited is not None and exited.code == 1, exited
    assert len(exited.errors) == 1 and 'SignatureDoesNotMatch' in exited.errors[0], exited
    assert not workload.database.exists()
    # Nothing was written into the bucket by the refused starts.
    assert local_s3.client.list_objects_v2(Bucket=BUCKET).get('KeyCount', 0) == 0


def test_s3_replica_forget_then_loss_and_restore(workloads, local_s3, tmp_path):
    url = local_s3.url()
    scan = tmp_path / 'scan'
    workload = workloads('robot', replica_url=url)
    workload.start_with_subjects(remembers=5)
    entity_id = workload.write_canary()
    values = workload.status(ok_and_in_sync)
    assert values['replica'] == url, values
    deadline = time.monotonic() + 2 * STATED_LAG_SEC
    while {secret for _, secret in raw_hits(local_s3.download(scan), CANARY)} != set(CANARY):
        assert time.monotonic() < deadline, 'the canary never reached the bucket'
        time.sleep(0.5)
    keys = [item['Key'] for item in
            local_s3.client.list_objects_v2(Bucket=BUCKET).get('Contents', [])]
    assert keys and all(key.startswith(f'{PREFIX}/') for key in keys), keys

    meta = meta_directory(workload.database)
    answered, waited = forget_everywhere(
        workload, entity_id,
        lambda: local_s3.download(scan) + replica_files(meta) + [workload.database],
        'an s3 replica')
    # Replication goes on from a new snapshot, and the text stays gone.
    durability.done(workload.remember())
    workload.status(ok_and_in_sync)
    assert local_s3.download(scan), 'the bucket is empty after the forget'
    assert raw_hits(local_s3.download(scan), CANARY) == []

    # Writes under load up to the loss, then the robot is lost.
    writes = lose_and_restore(workload, url, tmp_path / 'new-robot' / 'memory.sqlite3')
    durability.report('replication_s3', [
        f'forget answered in {answered:.2f} s; its text left the bucket after {waited:.1f} s',
        f'restored from s3: {writes.checked} acknowledged writes checked, '
        f'{len(writes.lost)} within the last {STATED_LAG_SEC:g} s not replicated'])


def test_memory_restore_from_s3_needs_the_credentials(local_s3, tmp_path, monkeypatch):
    monkeypatch.delenv('AWS_SECRET_ACCESS_KEY')
    new_path = tmp_path / 'new.sqlite3'
    done = restore(local_s3.url(), new_path)
    assert done.returncode == 1, done
    assert 'needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY' in done.stderr, done.stderr
    assert not new_path.exists()
