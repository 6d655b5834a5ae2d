# SPDX-License-Identifier: Apache-2.0
"""
memory_lifecycle_node as a real process, driven through real lifecycle_msgs calls.

Every transition goes through the node's ~/get_available_transitions and
~/change_state as `ros2 lifecycle set` sends it (test/helpers/lifecycle_cli.py), and
every state is read back through ~/get_state. What the database holds is
read from the file itself, not from the node.
"""

import hashlib
import os
import pathlib
import signal
import sqlite3

from helpers.action_goals import ABORTED, finish, Goal
from helpers.copy_in_flight import backups_held, console_process, temporary_files
from helpers.copy_in_flight import wait_for_backup_in_flight
from helpers.diagnostics_util import diagnostics, values
from helpers.lifecycle_cli import get_state, prepare, set_state
from helpers.memory_services import create_clients, MemoryServices, OBSERVED_TURN_WAIT
from helpers.memory_services import remember_request
from helpers.rosutil import NodeProcess, unique_namespace
from helpers.schema_v1 import make_version_1_database
from mira_memory.action import Backup
from mira_memory.client import names
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.store import ownership
import pytest

pytestmark = pytest.mark.ros

ADA_TEA = (TurnContext('episode-1', 'turn-1', 'Ada Lovelace drinks tea.'),
           Proposal(kind='fact', subject='Ada Lovelace', predicate='drinks', value='tea',
                    related_entity=None, related_role=None,
                    evidence='Ada Lovelace drinks tea'))


@pytest.fixture
def managed(tmp_path):
    """Start memory_lifecycle_node processes (stopped with SIGINT after the test)."""
    started = []

    def start(ros, parameters, hold_copies=None):
        namespace = unique_namespace('lc')
        process = NodeProcess('memory_lifecycle_node', namespace=namespace,
                              parameters=parameters, directory=tmp_path,
                              hold_copies=hold_copies)
        started.append((process, ros))
        process.prefix = names.memory_node_name(namespace)
        create_clients(ros, process.prefix)
        prepare(ros, process.prefix)
        return process

    yield start
    for process, ros in started:
        if process.running():
            process.stop()
        ros.forget_clients(process.prefix)


def rows(database, table='memories'):
    """Count a table's rows in the file, through a read-only connection of the test's own."""
    conn = sqlite3.connect(f'file:{database}?mode=ro', uri=True)
    try:
        return conn.execute(f'SELECT count(*) FROM {table}').fetchone()[0]
    finally:
        conn.close()


def error_lines(output):
    return [line for line in output.splitlines() if '[ERROR]' in line]


def assert_file_is_free(database):
    """Claim the database file as another owner would, then give it back."""
    claim = ownership.claim(str(database))
    claim.release()


def assert_refused(services, database):
    """Every kind of call gets its unavailable answer, and the file gains no row."""
    before = rows(database), rows(database, 'entities'), rows(database, 'pending')
    recalled = services.recall('Ada Lovelace')
    assert (recalled.status, recalled.reason) == ('unavailable', 'store_unavailable')
    remembered = services.remember(remember_request(*ADA_TEA))
    assert (remembered.status, remembered.reason) == ('rejected', 'backend_failure')
    for command, fields in (('status', {}),
                            ('entity_add', {'entity_type': 'person',
                                            'canonical_name': 'Charles Babbage'}),
                            # Supervised review is admin too.
                            ('pending', {}), ('pending_show', {'pending_id': 'P1'}),
                            ('accept', {'pending_id': 'P1', 'reviewer': 'Dana'}),
                            ('supersede', {'pending_id': 'P1', 'reviewer': 'Dana'}),
                            ('dismiss', {'pending_id': 'P1', 'reviewer': 'Dana'}),
                            # The dry run of the rules reads the store: refused too.
                            ('check', {'utterance': 'Ada Lovelace prefers green tea.',
                                       'subject': 'Ada Lovelace', 'predicate': 'prefers_drink',
                                       'value': 'green tea'})):
        answer = services.admin(command, **fields)
        assert (answer.success, answer.error_code) == (False, 'unavailable'), answer
        assert 'only while active' in answer.message
    status, backup = finish(services.ros, services.prefix, 'backup',
                            Backup.Goal(path=str(database.with_name('memory-copies') / 'b.bak')))
    assert (status, backup.success, backup.error_code) == (ABORTED, False, 'unavailable')
    assert 'only while active' in backup.message
    assert (rows(database), rows(database, 'entities'), rows(database, 'pending')) == before


def test_the_transitions_open_serve_refuse_and_release(ros, managed, tmp_path):
    database = tmp_path / 'db' / 'memory.sqlite3'
    node = managed(ros, {'enabled': True, 'database_path': str(database),
                         'robot_profile': 'Mira'})
    services = MemoryServices(ros, node.prefix)
    assert get_state(ros, node.prefix) == ('unconfigured', 1)
    # Constructed, nothing opened: the services answer, and there is no file yet.
    answer = services.admin('status')
    assert (answer.success, answer.error_code) == (False, 'unavailable')
    assert not database.parent.exists()

    assert set_state(ros, node.prefix, 'configure')
    assert get_state(ros, node.prefix) == ('inactive', 2)
    assert database.exists()
    assert_refused(services, database)

    assert set_state(ros, node.prefix, 'activate')
    assert get_state(ros, node.prefix) == ('active', 3)
    services.entity('Ada Lovelace')
    assert services.recall('Ada Lovelace').status == 'found'

    assert set_state(ros, node.prefix, 'deactivate')
    assert get_state(ros, node.prefix) == ('inactive', 2)
    assert_refused(services, database)

    assert set_state(ros, node.prefix, 'cleanup')
    assert get_state(ros, node.prefix) == ('unconfigured', 1)
    assert_file_is_free(database)
    assert services.admin('status').error_code == 'unavailable'

    # Configured again, the same file serves what it held.
    assert set_state(ros, node.prefix, 'configure')
    assert set_state(ros, node.prefix, 'activate')
    assert services.counts()['entity_count'] == 1
    assert services.recall('Ada Lovelace').status == 'found'
    assert node.stop() == 0
    assert 'Traceback' not in node.output()


def test_diagnostics_say_inactive_with_a_warning_and_active_without(ros, managed, tmp_path):
    from diagnostic_msgs.msg import DiagnosticStatus
    database = tmp_path / 'memory.sqlite3'
    node = managed(ros, {'enabled': True, 'database_path': str(database)})
    assert set_state(ros, node.prefix, 'configure')
    inactive = diagnostics(ros, str(database), lambda status: True)
    assert inactive.name == f'{node.prefix}: persistent memory'
    assert (inactive.level, inactive.message) == (
        DiagnosticStatus.WARN, 'inactive: every call is refused until the node is activated')
    assert values(inactive)['lifecycle state'] == 'inactive'
    assert set_state(ros, node.prefix, 'activate')
    active = diagnostics(
        ros, str(database), lambda status: values(status)['lifecycle state'] == 'active')
    assert (active.level, active.message) == (DiagnosticStatus.OK, 'persistent memory is serving')


def test_deactivate_refuses_a_remember_and_writes_nothing(ros, managed, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    node = managed(ros, {'enabled': True, 'database_path': str(database),
                         'robot_profile': 'Mira', **OBSERVED_TURN_WAIT})
    services = MemoryServices(ros, node.prefix)
    assert set_state(ros, node.prefix, 'configure')
    assert set_state(ros, node.prefix, 'activate')
    services.entity('Ada Lovelace')
    assert set_state(ros, node.prefix, 'deactivate')
    digest = hashlib.sha256(database.read_bytes()).hexdigest()

    request = remember_request(*ADA_TEA)
    refused = services.remember(request)
    assert (refused.status, refused.reason, refused.memory_id) == (
        'rejected', 'backend_failure', '')
    assert rows(database) == 0
    assert hashlib.sha256(database.read_bytes()).hexdigest() == digest

    # The same request once active is admitted: the refusal was the state's.
    assert set_state(ros, node.prefix, 'activate')
    admitted = services.remember(request)
    assert (admitted.status, admitted.outcome) == ('applied', 'created')
    assert rows(database) == 1


def test_deactivate_stops_a_backup_in_flight_and_answers_its_caller(ros, managed, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    release = tmp_path / 'hold'
    node = managed(ros, {'enabled': True, 'database_path': str(database)}, hold_copies=release)
    assert set_state(ros, node.prefix, 'configure')
    assert set_state(ros, node.prefix, 'activate')
    MemoryServices(ros, node.prefix).entity('Ada Lovelace')
    target = tmp_path / 'memory-copies' / 'backup.sqlite3'
    with backups_held(release):
        backup = console_process(node, tmp_path, 'backup', str(target))
        partial = wait_for_backup_in_flight(node, target, backup)
        assert set_state(ros, node.prefix, 'deactivate')
        code = backup.wait(timeout=60)
        assert not partial.exists()
    assert (code, backup.output()) == (
        1, 'error: canceled: backup canceled (the memory node was deactivated); nothing was '
           'written\n')
    assert not target.exists()
    assert get_state(ros, node.prefix) == ('inactive', 2)
    assert node.stop() == 0
    assert 'Traceback' not in node.output()


def test_disabled_memory_serves_status_and_refuses_recall_and_remember(ros, managed, tmp_path):
    database = tmp_path / 'never' / 'memory.sqlite3'
    node = managed(ros, {'enabled': False, 'database_path': str(database)})
    services = MemoryServices(ros, node.prefix)
    assert set_state(ros, node.prefix, 'configure')
    assert set_state(ros, node.prefix, 'activate')
    status = services.admin('status')
    assert (status.success, status.enabled) == (True, False)
    assert services.admin('entity_add', entity_type='person',
                          canonical_name='Ada').error_code == 'disabled'
    assert services.recall('Ada Lovelace').status == 'unavailable'
    remembered = services.remember_unheard(remember_request(*ADA_TEA))
    assert (remembered.status, remembered.reason) == ('rejected', 'backend_failure')
    assert not database.parent.exists()
    assert node.stop() == 0
    assert 'Traceback' not in node.output()


def test_a_second_owner_is_refused_at_configure(ros, managed, memory_node, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    owner = memory_node({'enabled': True, 'database_path': str(database)}, ros=ros)
    node = managed(ros, {'enabled': True, 'database_path': str(database)})
    digest = hashlib.sha256(database.read_bytes()).hexdigest()

    assert not set_state(ros, node.prefix, 'configure')
    assert get_state(ros, node.prefix) == ('unconfigured', 1)
    errors = error_lines(node.output())
    assert len(errors) == 1, node.output()
    assert 'configure failed: cannot open persistent memory' in errors[0]
    assert f'owned by process {owner.process.pid}' in errors[0]
    assert hashlib.sha256(database.read_bytes()).hexdigest() == digest
    assert node.running()

    # Once the owner is gone, the same node configures.
    assert owner.stop() == 0
    assert set_state(ros, node.prefix, 'configure')
    assert get_state(ros, node.prefix) == ('inactive', 2)


def _version_3(path):
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE entities (id INTEGER PRIMARY KEY)')
        conn.execute('PRAGMA user_version = 3')
    conn.close()


@pytest.mark.parametrize('make, reason', [
    (make_version_1_database, 'schema version 1'),
    (_version_3, 'cannot open persistent memory'),
], ids=['version_1', 'user_version_3'])
def test_a_failed_configure_leaves_the_file_untouched(ros, managed, tmp_path, make, reason):
    directory = tmp_path / 'db'
    directory.mkdir()
    database = directory / 'memory.sqlite3'
    make(database)
    digest = hashlib.sha256(database.read_bytes()).hexdigest()
    node = managed(ros, {'enabled': True, 'database_path': str(database)})

    assert not set_state(ros, node.prefix, 'configure')
    assert get_state(ros, node.prefix) == ('unconfigured', 1)
    errors = error_lines(node.output())
    assert len(errors) == 1 and reason in errors[0], node.output()
    assert hashlib.sha256(database.read_bytes()).hexdigest() == digest
    assert [path.name for path in directory.iterdir()] == ['memory.sqlite3']
    assert_file_is_free(database)
    assert node.stop() == 0


@pytest.mark.parametrize('reached', [(), ('configure',), ('configure', 'activate')],
                         ids=['unconfigured', 'inactive', 'active'])
def test_shutdown_from_any_state_closes_everything(ros, managed, tmp_path, reached):
    database = tmp_path / 'memory.sqlite3'
    node = managed(ros, {'enabled': True, 'database_path': str(database)})
    for transition in reached:
        assert set_state(ros, node.prefix, transition)

    assert set_state(ros, node.prefix, 'shutdown')
    assert get_state(ros, node.prefix) == ('finalized', 4)
    if reached:
        assert_file_is_free(database)
    else:
        assert not database.exists()
    # Finalized, the process answers get_state until it is stopped.
    assert node.running()
    assert node.stop(signal.SIGTERM) == 0
    assert 'Traceback' not in node.output() and not error_lines(node.output())


def _backup_goal_in_flight(ros, node, tmp_path):
    """Send a backup goal that stays in flight (backups_held); return it and its target."""
    target = tmp_path / 'memory-copies' / 'backup.sqlite3'
    goal = Goal(ros, node.prefix, 'backup', Backup.Goal(path=str(target)))
    fds = pathlib.Path(f'/proc/{node.process.pid}/fd')

    def partial_open():
        return any(os.path.realpath(fd).startswith(f'{target.parent}/.{target.name}.')
                   for fd in fds.iterdir())
    goal.wait_for(partial_open, 'the backup writing its partial file')
    return goal, target


@pytest.mark.parametrize('transition, said', [('deactivate', 'deactivated'),
                                              ('shutdown', 'shut down')])
def test_a_transition_cancels_a_running_goal_and_removes_its_partial_file(
        ros, managed, tmp_path, transition, said):
    database = tmp_path / 'memory.sqlite3'
    release = tmp_path / 'hold'
    node = managed(ros, {'enabled': True, 'database_path': str(database)}, hold_copies=release)
    assert set_state(ros, node.prefix, 'configure')
    assert set_state(ros, node.prefix, 'activate')
    MemoryServices(ros, node.prefix).entity('Ada Lovelace')
    with backups_held(release):
        goal, target = _backup_goal_in_flight(ros, node, tmp_path)
        try:
            assert set_state(ros, node.prefix, transition)
            status, result = goal.result(timeout=60)
        finally:
            goal.close()
        assert temporary_files(target.parent) == []
    assert (status, result.success, result.error_code) == (ABORTED, False, 'canceled')
    assert result.message == f'backup canceled (the memory node was {said}); nothing was written'
    assert not target.exists()
    assert node.stop(signal.SIGTERM) == 0
    assert 'Traceback' not in node.output() and not error_lines(node.output())


@pytest.mark.parametrize('sent', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_a_signal_stops_the_node_promptly_while_a_goal_runs(ros, managed, tmp_path, sent):
    database = tmp_path / 'memory.sqlite3'
    release = tmp_path / 'hold'
    node = managed(ros, {'enabled': True, 'database_path': str(database)}, hold_copies=release)
    assert set_state(ros, node.prefix, 'configure')
    assert set_state(ros, node.prefix, 'activate')
    MemoryServices(ros, node.prefix).entity('Ada Lovelace')
    with backups_held(release):
        goal, target = _backup_goal_in_flight(ros, node, tmp_path)
        goal.close()
        # NodeProcess.stop fails the test unless this one signal ends the process.
        assert node.stop(sent) == 0
        assert temporary_files(target.parent) == []
    assert not target.exists()
    assert 'Traceback' not in node.output() and not error_lines(node.output())
    assert_file_is_free(database)
