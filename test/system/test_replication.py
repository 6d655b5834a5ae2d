# SPDX-License-Identifier: Apache-2.0
"""
Off-robot replication with Litestream, through real memory node processes.

- A directory replica: remembers under load, a forget of an entity (its
  memory and its pending item go with it) that answers at once and, within
  the stated delay, leaves no byte of their text in any replica file or in
  Litestream's local files; then the robot is lost (SIGKILL, its database
  directory deleted) and memory_restore brings the database back onto a new
  path: every write acknowledged more than the stated lag before the loss is
  there, none is partial, the ids are the node's, integrity and verify pass.
- memory_restore --timestamp between two known writes: the earlier is
  there, the later is not.
- Litestream killed while the node serves: no local write is lost, the
  supervisor restarts it, /diagnostics says ERROR and then OK again, and the
  replica catches up; a replica directory that disappears at run time
  blocks no write and the replica catches up when it is back.
- A forget while the replica directory is unreachable, then the node is
  killed: the next start wipes the replica (a marker beside the database
  remembers the wipe is owed) before Litestream replicates, and removes
  the killed node's configuration directory.
- A malformed replica_url and a replica that cannot be written: start-up
  fails with one ERROR line and no database file is created.
- An sftp replica on an sshd started here on 127.0.0.1 with throwaway keys:
  a wrong host key fails start-up; the remote files are private; a forget's
  text leaves them; memory_restore brings the database back over sftp.
  Skipped, saying why, only where OpenSSH's sshd is not installed (.ci/run
  installs it).

The s3 replica's tests are in test_replication_s3.py.
"""

import contextlib
import datetime
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from helpers import durability
from helpers.lifecycle_cli import prepare, set_state
from helpers.replication import (
    CANARY, check_restored, forget_everywhere, in_sync, litestream_pid, lose_and_restore,
    ok_and_in_sync, raw_hits, replica_files, ReplicatedWorkload, restore, STATED_LAG_SEC,
    wait_for_hits, wait_until_forgotten)
from mira_memory.core.replication.supervisor import meta_directory
import pytest

pytestmark = pytest.mark.ros
SSHD = pathlib.Path('/usr/sbin/sshd')


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


def test_directory_replica_forget_then_loss_and_restore(workloads, tmp_path):
    replica = tmp_path / 'replica'
    url = replica.as_uri()
    workload = workloads('robot', replica_url=url)
    workload.start_with_subjects(remembers=10)
    entity_id, values = workload.replicate_canary(replica)
    assert values['replica'] == url
    meta = meta_directory(workload.database)

    answered, waited = forget_everywhere(
        workload, entity_id, lambda: replica_files(replica, meta) + [workload.database],
        'a directory replica')
    # A scan mid-wipe sees an empty replica: look again once it is back in sync.
    workload.status(lambda level, values: values['replication'] == 'in sync')
    assert replica_files(replica), 'the replica is empty after the forget'
    assert raw_hits(replica_files(replica, meta), CANARY) == []
    for path in replica_files(replica):
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            continue  # compacted away since it was listed
        assert mode & 0o077 == 0, f'{path} is not private'

    new_path = tmp_path / 'new-robot' / 'memory.sqlite3'
    writes = lose_and_restore(workload, url, new_path)
    again = restore(url, new_path)
    assert again.returncode == 1 and 'refusing to overwrite' in again.stderr, again.stderr
    durability.report('replication_directory', [
        f'forget answered in {answered:.2f} s; its text left the replica after {waited:.1f} s',
        f'restored: {writes.checked} acknowledged writes checked, '
        f'{len(writes.lost)} within the last {STATED_LAG_SEC:g} s not replicated'])


def work_directories(pid):
    """Return the node's Litestream configuration directories (core/replication/supervisor.py)."""
    return sorted(pathlib.Path(tempfile.gettempdir()).glob(f'mira-replication-{pid}-*'))


def test_forget_owed_to_an_unreachable_replica_is_wiped_at_the_next_start(
        workloads, tmp_path):
    replica = tmp_path / 'replica'
    workload = workloads('robot', replica_url=replica.as_uri())
    workload.start_with_subjects()
    entity_id, _ = workload.replicate_canary(replica)

    # The replica's directory is unreachable (a file in its place) when the forget comes.
    away = tmp_path / 'replica.away'
    replica.rename(away)
    replica.write_text('not a directory\n')
    forget = workload.services.admin('forget', target=entity_id, confirm=True)
    assert forget.success and forget.applied, forget
    owed = workload.status(lambda level, values: level == 'ERROR'
                           and 'forget has not reached' in values.get('replica error', ''))
    assert owed['replication'] != 'in sync', owed
    # Killed with the wipe owed: nothing the node does at exit can help.
    killed_pid = workload.node.process.pid
    assert work_directories(killed_pid), 'no configuration directory for the node'
    workload.stop(signal.SIGKILL)
    assert work_directories(killed_pid), 'SIGKILL left no configuration directory to clean'

    replica.unlink()
    away.rename(replica)
    assert raw_hits(replica_files(replica), CANARY), 'the replica never held the canary'
    started = time.monotonic()
    workload.start()
    meta = meta_directory(workload.database)
    hits, waited = wait_until_forgotten(
        lambda: replica_files(replica, meta) + [workload.database], CANARY, started)
    assert hits == [], f'{waited:.0f} s after the start the forgotten text is still in {hits}'
    assert work_directories(killed_pid) == [], "the killed node's directory is still there"
    # Replication goes on after the wipe, from a new snapshot.
    durability.done(workload.remember())
    workload.status(ok_and_in_sync)
    workload.stop()
    durability.report('replication_owed_wipe', [
        f'a forget owed to an unreachable replica, node killed: wiped {waited:.1f} s '
        'after the next start'])


def replicated(replica, remembers):
    """
    Wait until remembers are in the replica's files.

    "in sync" on /diagnostics compares with the database position Litestream
    last saw, which may predate the writes; each remember's value has a
    made-up word of its own (durability.WORDS, six of them).
    """
    wait_for_hits(lambda: replica_files(replica),
                  [event.detail['texts'][0].split()[0] for event in remembers])


def test_restore_to_a_timestamp_between_two_writes(workloads, tmp_path):
    replica = tmp_path / 'replica'
    workload = workloads('robot', replica_url=replica.as_uri())
    workload.start_with_subjects()
    earlier = [durability.done(workload.remember()) for _ in range(3)]
    replicated(replica, earlier)
    # Litestream resolves --timestamp by its files' times, to the second: a
    # clear second either side of the point.
    time.sleep(1.5)
    point_ns = time.monotonic_ns()
    point = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    time.sleep(1.5)
    later = [durability.done(workload.remember()) for _ in range(3)]
    replicated(replica, later)
    workload.stop()

    timestamp = point.isoformat().replace('+00:00', 'Z')
    at_point = tmp_path / 'at-point.sqlite3'
    done = restore(replica.as_uri(), at_point, '--timestamp', timestamp)
    assert done.returncode == 0, done.stderr
    assert 'integrity_check: ok' in done.stdout and 'ready:' in done.stdout, done.stdout
    reopened = durability.reopen(at_point)
    assert not reopened.problems, reopened.problems
    writes = durability.check_writes(reopened, workload.events, before_ns=point_ns)
    assert writes.lost == [] and writes.partial == [], (timestamp, writes)
    earlier_ids = {event.detail['memory_id'] for event in earlier}
    later_ids = {event.detail['memory_id'] for event in later}
    assert earlier_ids <= set(reopened.memories), (timestamp, sorted(reopened.memories))
    assert not later_ids & set(reopened.memories), (timestamp, sorted(reopened.memories))
    # Without --timestamp the later writes are there too.
    latest = tmp_path / 'latest.sqlite3'
    assert restore(replica.as_uri(), latest).returncode == 0
    assert later_ids <= set(durability.reopen(latest).memories)


def test_litestream_killed_and_replica_gone_block_no_write(workloads, tmp_path):
    replica = tmp_path / 'replica'
    workload = workloads('robot', replica_url=replica.as_uri())
    workload.start_with_subjects(remembers=1)
    workload.status(lambda level, values: values['replication'] == 'in sync')
    child = litestream_pid(workload.node.process.pid)
    assert child is not None, 'no litestream child'
    os.kill(child, signal.SIGKILL)
    for _ in range(3):
        durability.done(workload.remember())
    errored = workload.status(lambda level, values: level == 'ERROR'
                              and values['litestream restarts'] == '1')
    assert 'exited' in errored['replica error'], errored
    recovered = workload.status(lambda level, values: level == 'OK'
                                and values['replication'] == 'in sync'
                                and litestream_pid(workload.node.process.pid) not in (None, child))
    assert float(recovered['replication lag sec']) < STATED_LAG_SEC
    # memory persistent shows the same (admin/status).
    lines = workload.services.admin('status').replication
    assert 'litestream restarts: 1' in lines and 'health: OK' in lines, lines

    # The replica's directory goes away (a file in its place): writes go on.
    replica.rename(tmp_path / 'replica.away')
    replica.write_text('not a directory\n')
    started = time.monotonic()
    for _ in range(3):
        event = durability.done(workload.remember())
        assert (event.acked_ns - event.sent_ns) / 1e9 < 2.0
    unreachable = workload.status(lambda level, values: level == 'ERROR')
    assert unreachable['replication'] == 'replica unreachable', unreachable
    replica.unlink()
    (tmp_path / 'replica.away').rename(replica)
    caught_up = workload.status(lambda level, values: level == 'OK'
                                and values['replication'] == 'in sync', timeout=45.0)
    recovery = time.monotonic() - started
    checked, problems = durability.check_shown(workload)
    assert not problems, problems
    lost_at = time.monotonic_ns() + int(STATED_LAG_SEC * 1e9)  # the replica caught up
    workload.stop()
    new_path = tmp_path / 'restored.sqlite3'
    done = restore(replica.as_uri(), new_path)
    assert done.returncode == 0, done.stderr
    problems, writes = check_restored(new_path, workload.events, lost_at)
    assert problems == [] and writes.lost == [], (problems, writes.lost)
    durability.report('replication_faults', [
        f'litestream SIGKILLed: ERROR, then OK after its restart; {checked} writes shown',
        f'replica gone and back: caught up {recovery:.1f} s after it left '
        f'(lag then {caught_up["replication lag sec"]} s)'])


def test_managed_node_runs_litestream_only_while_active(workloads, tmp_path):
    replica = tmp_path / 'replica'
    workload = workloads('robot', replica_url=replica.as_uri())
    workload.executable = 'memory_lifecycle_node'
    workload.start(wait=False)
    prepare(workload.ros, workload.prefix, timeout=durability.START_TIMEOUT)
    pid = workload.node.process.pid
    assert set_state(workload.ros, workload.prefix, 'configure')
    assert litestream_pid(pid) is None
    assert set_state(workload.ros, workload.prefix, 'activate')
    workload._serving()
    assert wait_until(lambda: litestream_pid(pid) is not None)
    durability.done(workload.entity(durability.SUBJECTS[0]))
    assert set_state(workload.ros, workload.prefix, 'deactivate')
    assert wait_until(lambda: litestream_pid(pid) is None), 'litestream still runs'
    assert set_state(workload.ros, workload.prefix, 'activate')
    assert wait_until(lambda: litestream_pid(pid) is not None)
    workload.status(in_sync)
    child = litestream_pid(pid)
    workload.stop()
    assert not pathlib.Path(f'/proc/{child}').exists(), 'litestream outlived the node'


def wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize('url, says', [
    ('ftp://example.com/x', 'is not a replica URL'),
    ('gs://bucket/mira', 'gs:// replicas are not supported'),
    ('file:///proc/mira-replica', 'is not writable'),
])
def test_bad_replica_fails_startup_and_leaves_no_database(workloads, url, says):
    workload = workloads('robot', replica_url=url)
    exited = workload.start_failing()
    assert exited is not None, 'the node started serving'
    assert exited.code == 1 and not exited.traceback, exited
    assert len(exited.errors) == 1 and says in exited.errors[0], exited.errors
    assert not workload.database.exists()


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def local_sshd(directory):
    """Run sshd on 127.0.0.1 for the current user's key login; yield (port, key, host key)."""
    if not SSHD.exists():
        pytest.skip('OpenSSH sshd is not installed (Debian: apt-get install openssh-server)')
    directory.mkdir(mode=0o700)
    for name in ('host', 'client'):
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                        str(directory / name)], check=True)
    (directory / 'authorized_keys').write_text((directory / 'client.pub').read_text())
    (directory / 'authorized_keys').chmod(0o600)
    port = _free_port()
    config = directory / 'sshd_config'
    config.write_text('\n'.join([
        f'Port {port}', 'ListenAddress 127.0.0.1', f'HostKey {directory / "host"}',
        f'AuthorizedKeysFile {directory / "authorized_keys"}', 'StrictModes no',
        'PasswordAuthentication no', 'KbdInteractiveAuthentication no', 'UsePAM no',
        'PermitRootLogin prohibit-password', f'PidFile {directory / "sshd.pid"}',
        # Files the sftp server creates are the login's alone.
        'Subsystem sftp internal-sftp -u 0077', '']))
    pathlib.Path('/run/sshd').mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation
    server = subprocess.Popen([str(SSHD), '-D', '-e', '-f', str(config)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10.0
        while True:
            with socket.socket() as client:
                if client.connect_ex(('127.0.0.1', port)) == 0:
                    break
            assert server.poll() is None, server.stderr.read().decode()
            assert time.monotonic() < deadline, 'sshd did not listen'
            time.sleep(0.05)
        host_key = ' '.join((directory / 'host.pub').read_text().split()[:2])
        yield port, directory / 'client', host_key
    finally:
        server.terminate()
        server.wait(10)


def test_sftp_replica_forget_and_restore(workloads, tmp_path):
    user = subprocess.run(['id', '-un'], capture_output=True, text=True, check=True).stdout
    remote = tmp_path / 'server' / 'mira'
    with local_sshd(tmp_path / 'ssh') as (port, key, host_key):
        url = f'sftp://{user.strip()}@127.0.0.1:{port}{remote}'
        wrong = workloads(
            'wrong', replica_url=url, replica_key_path=str(key),
            replica_host_key=' '.join((tmp_path / 'ssh' / 'client.pub').read_text().split()[:2]))
        exited = wrong.start_failing()
        assert exited is not None and exited.code == 1, exited
        assert len(exited.errors) == 1 and 'is not writable' in exited.errors[0], exited.errors
        assert not wrong.database.exists()

        workload = workloads('robot', replica_url=url, replica_key_path=str(key),
                             replica_host_key=host_key)
        workload.start_with_subjects(remembers=3)
        entity_id, _ = workload.replicate_canary(remote, until=ok_and_in_sync)
        for path in replica_files(remote):
            assert path.stat().st_mode & 0o077 == 0, f'{path} is not private'

        started = time.monotonic()
        forget = workload.services.admin('forget', target=entity_id, confirm=True)
        answered = time.monotonic() - started
        assert forget.success and forget.applied and answered < 5.0, (forget, answered)
        hits, waited = wait_until_forgotten(lambda: replica_files(remote), CANARY, started)
        assert hits == [], f'after {waited:.0f} s the forgotten text is still in {hits}'
        durability.done(workload.remember())
        workload.status(ok_and_in_sync)
        workload.stop()
        shutil.rmtree(workload.database.parent)

        new_path = tmp_path / 'new-robot' / 'memory.sqlite3'
        done = restore(url, new_path, '--key-path', str(key), '--host-key', host_key)
        assert done.returncode == 0, done.stderr
        assert 'ready:' in done.stdout, done.stdout
        reopened = durability.reopen(new_path)
        assert not reopened.problems, reopened.problems
        writes = durability.check_writes(reopened, workload.events)
        assert not writes.lost and not writes.partial, writes
        assert raw_hits([new_path], CANARY) == []
    durability.report('replication_sftp', [
        f'forget answered in {answered:.2f} s; its text left the sftp replica after '
        f'{waited:.1f} s; restored {writes.checked} writes'])
