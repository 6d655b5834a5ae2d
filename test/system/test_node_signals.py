# SPDX-License-Identifier: Apache-2.0
"""
The memory node executables as real processes: one owner per file, and a clean stop on a signal.

- A second memory_node on a database another one owns exits 1 with one
  error line naming the owner's process, and changes nothing; the owner
  goes on serving.
- memory_lifecycle_node stops on SIGINT and on SIGTERM from every state it
  can be in (unconfigured, inactive, active): exit 0, no traceback, no
  error line; afterwards the file is free for another owner, SQLite closed
  it (no WAL left beside it), and it holds every write acknowledged while
  active, whole (durability.reopen and check_writes).
- SIGUSR1 prints every thread's stack and the node goes on; a crash prints
  them before the process dies.
"""

import hashlib
import os
import signal
import time

from helpers import durability
from helpers.lifecycle_cli import prepare, set_state
from helpers.memory_services import create_clients, OBSERVED_TURN_WAIT
from helpers.rosutil import NodeProcess, unique_namespace
from mira_memory.client import names
from mira_memory.core.store import ownership
import pytest

pytestmark = pytest.mark.ros


def error_lines(output):
    return [line for line in output.splitlines() if '[ERROR]' in line]


def files_digest(database):
    """Return the SHA-256 of the database and its WAL as they are on disk."""
    digest = hashlib.sha256()
    for path in (database, database.with_name(database.name + '-wal')):
        digest.update(path.read_bytes() if path.exists() else b'-')
    return digest.hexdigest()


def test_a_second_memory_node_exits_1_naming_the_owner(ros, memory_node, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    parameters = {'enabled': True, 'database_path': str(database)}
    owner = memory_node(parameters, ros=ros)
    entity = ros.call(*_entity_add(owner.prefix, 'Ada Lovelace'))
    assert entity.success, entity.message
    before = files_digest(database)

    second = memory_node(parameters)
    assert second.wait() == 1
    errors = error_lines(second.output())
    assert len(errors) == 1, second.output()
    assert f'owned by process {owner.process.pid}' in errors[0], errors
    assert 'Traceback' not in second.output()
    assert files_digest(database) == before
    # The owner never noticed.
    from mira_memory import srv
    status = ros.call(srv.AdminStatus, names.service_name(owner.prefix, names.ADMIN_STATUS))
    assert (status.success, status.entity_count) == (True, 1)
    assert owner.stop() == 0


def _entity_add(prefix, name):
    from mira_memory import srv
    return (srv.AdminEntityAdd, names.service_name(prefix, names.ADMIN_ENTITY_ADD),
            srv.AdminEntityAdd.Request(entity_type='person', canonical_name=name))


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
@pytest.mark.parametrize('reached', [(), ('configure',), ('configure', 'activate')],
                         ids=['unconfigured', 'inactive', 'active'])
def test_the_managed_node_stops_cleanly_on_a_signal(ros, tmp_path, reached, sig):
    root = tmp_path / 'disk'
    root.mkdir()
    workload = durability.Workload(ros, root, tmp_path, executable='memory_lifecycle_node')
    database = workload.database
    namespace = unique_namespace('sig')
    node = NodeProcess('memory_lifecycle_node', namespace=namespace, directory=tmp_path,
                       parameters={'enabled': True, 'database_path': str(database),
                                   'robot_profile': durability.ROBOT_PROFILE,
                                   **OBSERVED_TURN_WAIT})
    prefix = names.memory_node_name(namespace)
    try:
        create_clients(ros, prefix)
        prepare(ros, prefix)
        for transition in reached:
            assert set_state(ros, prefix, transition), node.describe(transition)
        if 'activate' in reached:
            # The writes acknowledged while active, to be found after the signal.
            workload.node, workload.prefix = node, prefix
            workload._serving()
            for name in durability.SUBJECTS:
                durability.done(workload.entity(name))
            for _ in range(3):
                durability.done(workload.remember())

        assert node.stop(sig) == 0, node.describe(f'exited uncleanly on {sig!r}')
        assert node.stopped_by == sig
        output = node.output()
        assert 'Traceback' not in output and not error_lines(output), output
    finally:
        if node.running():
            node.stop()
        ros.forget_clients(prefix)

    if not reached:
        assert not database.exists()  # unconfigured: nothing was ever opened
        return
    ownership.claim(str(database), create=False).release()  # the lock went with the process
    assert not database.with_name(database.name + '-wal').exists()
    reopened = durability.reopen(database)
    assert not reopened.problems, reopened.problems
    writes = durability.check_writes(reopened, workload.events)
    assert not writes.lost and not writes.partial, writes
    assert writes.checked == (5 if 'activate' in reached else 0)


@pytest.fixture
def unconfigured_node(tmp_path):
    """Start a managed memory node and wait until it is unconfigured; stop it after."""
    node = NodeProcess('memory_lifecycle_node', namespace=unique_namespace('stacks'),
                       directory=tmp_path,
                       parameters={'enabled': True,
                                   'database_path': str(tmp_path / 'memory.sqlite3')})
    try:
        node.wait_ready('managed memory node unconfigured', timeout=60.0)
        yield node
    finally:
        if node.running():
            node.stop()


def test_sigusr1_prints_where_every_thread_waits_and_the_node_goes_on(unconfigured_node):
    # How to see where a node that does not stop waits (docs/reliability.md).
    node = unconfigured_node
    time.sleep(0.5)  # into its spin (the line comes just before it)
    before = len(node.output())
    os.kill(node.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10.0
    while 'Current thread' not in node.output()[before:]:
        assert time.monotonic() < deadline, node.describe('printed no stacks on SIGUSR1')
        time.sleep(0.1)
    stacks = node.output()[before:]
    assert 'spin' in stacks and 'File "' in stacks, stacks
    assert node.running(), node.describe('SIGUSR1 ended it')
    assert node.stop(signal.SIGTERM) == 0, node.describe('exited uncleanly on SIGTERM')


def test_a_crash_leaves_every_threads_stack_in_the_log(unconfigured_node):
    # A crash inside rclpy's or DDS's C++ (SIGSEGV) leaves where each thread was.
    node = unconfigured_node
    os.kill(node.pid, signal.SIGSEGV)
    assert node.wait(30.0) == -signal.SIGSEGV, node.describe('did not die of SIGSEGV')
    output = node.output()
    assert 'Fatal Python error: Segmentation fault' in output and 'File "' in output, output
