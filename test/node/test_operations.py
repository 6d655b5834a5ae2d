# SPDX-License-Identifier: Apache-2.0
"""
The memory node in operation, in-process (node tier).

One owner per database, a database that vanishes while the node runs, and
/diagnostics.
"""

import os
import shutil
import time

from helpers.diagnostics_util import diagnostics, values
from mira_memory import srv
from mira_memory.client import names
from mira_memory.ros.node_runner import StartupError
import pytest

pytestmark = pytest.mark.ros

UTTERANCE = 'Ada Lovelace prefers green tea.'
# Forward compatible with the observed-turns opt-out: an undeclared parameter is ignored.
NODE_PARAMETERS = {'enabled': True, 'robot_profile': 'Mira', 'require_observed_turns': False}


def error_lines(output):
    return [line for line in output.splitlines() if '[ERROR]' in line]


def start(memory_node, ros, database_path):
    process = memory_node({**NODE_PARAMETERS, 'database_path': str(database_path)}, ros=ros)
    process.database_path = database_path
    return process


def admin(ros, node, service_type, command, **fields):
    return ros.call(service_type, names.service_name(node.prefix, f'admin/{command}'),
                    service_type.Request(**fields))


def remember(ros, node, turn_id, utterance=UTTERANCE, value='green tea'):
    subject = 'Ada Lovelace'
    request = srv.Remember.Request(
        episode_id='e1', turn_id=turn_id, utterance=utterance, kind='preference',
        subject=subject, predicate='prefers_drink', value=value,
        evidence=utterance.rstrip('.'))
    return ros.call(srv.Remember, names.service_name(node.prefix, names.REMEMBER), request)


def recall(ros, node, query='Ada Lovelace'):
    return ros.call(srv.RecallMemory, names.service_name(node.prefix, names.RECALL_MEMORY),
                    srv.RecallMemory.Request(query=query))


# One owner per database ------------------------------------------------------------


def test_a_second_node_on_the_same_database_fails_startup_naming_the_owner(
        memory_node, ros, tmp_path):
    # flock(2) locks belong to the open file, so a second node in this very
    # process is refused as one in another process is; the exit code of a
    # StartupError: test/system/test_memory_node_process.py.
    database = tmp_path / 'db' / 'memory.sqlite3'
    owner = start(memory_node, ros, database)
    with pytest.raises(StartupError) as error:
        memory_node({**NODE_PARAMETERS, 'database_path': str(database)})
    assert str(database) in str(error.value) and f'process {os.getpid()}' in str(error.value)
    # The owner never noticed and keeps serving.
    status = admin(ros, owner, srv.AdminStatus, 'status')
    assert status.success and status.database_path == str(database)
    assert owner.stop() == 0
    # Stopping gives the file up: the next node owns it.
    third = start(memory_node, ros, database)
    assert admin(ros, third, srv.AdminStatus, 'status').success


# A vanished database is never acknowledged --------------------------------------------


def _remove_directory(database):
    shutil.rmtree(database.parent)


def _move_file(database):
    os.rename(database, database.with_name('moved.sqlite3'))


def _replace_file(database):
    other = database.with_name('other.sqlite3')
    other.write_bytes(b'')
    os.replace(other, database)


@pytest.mark.parametrize('vanish', [_remove_directory, _move_file, _replace_file],
                         ids=['directory_removed', 'file_moved', 'file_replaced'])
def test_a_vanished_database_is_never_acknowledged(memory_node, ros, tmp_path, vanish, capfd):
    database = tmp_path / 'db' / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    added = admin(ros, node, srv.AdminEntityAdd, 'entity_add',
                  entity_type='person', canonical_name='Ada Lovelace')
    assert added.success, added.message
    created = remember(ros, node, 't1')
    assert (created.status, created.outcome) == ('applied', 'created'), created
    assert recall(ros, node).status == 'found'
    # The background row count has finished: a count that starts after the
    # file vanished logs an error of its own, a second line this test
    # does not expect.
    diagnostics(ros, str(database), lambda status: values(status).get('memories') == '1')

    vanish(database)

    again = remember(ros, node, 't1')
    assert (again.status, again.reason, again.memory_id) == ('rejected', 'backend_failure', '')
    fresh = remember(ros, node, 't2', 'Ada Lovelace prefers black tea.', 'black tea')
    assert (fresh.status, fresh.reason) == ('rejected', 'backend_failure')
    assert recall(ros, node).status == 'unavailable'
    entity = admin(ros, node, srv.AdminEntityAdd, 'entity_add',
                   entity_type='person', canonical_name='Charles Babbage')
    assert (entity.success, entity.error_code) == (False, 'backend_failure')
    status = diagnostics(ros, str(database), lambda status: status.level == status.ERROR)
    assert 'removed, moved or replaced' in status.message
    assert node.stop() == 0
    log = capfd.readouterr().err
    errors = error_lines(log)
    assert len(errors) == 1 and str(database) in errors[0], log


def test_a_vanished_database_is_reported_without_any_request(memory_node, ros, tmp_path,
                                                             capfd):
    database = tmp_path / 'db' / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    diagnostics(ros, str(database), lambda status: status.level == status.OK)
    _remove_directory(database)
    status = diagnostics(ros, str(database), lambda status: status.level == status.ERROR)
    assert values(status)['file size bytes'] == 'missing'
    assert node.stop() == 0
    log = capfd.readouterr().err
    assert len(error_lines(log)) == 1, log


# Diagnostics ---------------------------------------------------------------------


def test_diagnostics_report_the_database_counts_and_latencies(memory_node, ros, tmp_path):
    database = tmp_path / 'db' / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    for name in ('Ada Lovelace', 'Charles Babbage'):
        assert admin(ros, node, srv.AdminEntityAdd, 'entity_add',
                     entity_type='person', canonical_name=name).success
    assert remember(ros, node, 't1').outcome == 'created'
    assert recall(ros, node).status == 'found'
    assert recall(ros, node, 'Nobody').status == 'miss'

    status = diagnostics(ros, str(database), lambda status: (
        values(status).get('recall calls last minute') == '2'
        and values(status).get('memories') == '1'))
    assert status.level == status.OK
    # diagnostic_updater's convention, with the fully qualified name: robots never collide.
    assert status.name == f'{node.namespace}/memory: persistent memory'
    reported = values(status)
    assert reported['database path'] == str(database)
    assert reported['schema version'] == '4'
    assert int(reported['file size bytes']) > 0
    assert (reported['entities'], reported['aliases'], reported['active memories']) == (
        '2', '0', '1')
    assert reported['remember calls last minute'] == '1'
    for key in ('recall p50 ms last minute', 'recall p99 ms last minute',
                'remember p50 ms last minute'):
        assert float(reported[key]) > 0
    assert reported['recall unavailable total'] == '0'
    assert reported['database lost'] == 'no'
    # The incremental counts agree with a full count.
    full = admin(ros, node, srv.AdminStatus, 'status')
    assert (full.entity_count, full.memory_count) == (2, 1)


def test_diagnostics_of_a_disabled_node(memory_node, ros):
    node = memory_node({'enabled': False}, ros=ros)
    name = f'{node.namespace}/memory: persistent memory'
    status = diagnostics(ros, 'none', lambda status: status.name == name)
    assert status.level == status.OK and status.message == 'persistent memory is disabled'
    assert node.stop() == 0


def test_the_diagnostics_period_is_a_parameter(memory_node, ros, tmp_path):
    database = tmp_path / 'db' / 'memory.sqlite3'
    node = memory_node({**NODE_PARAMETERS, 'database_path': str(database),
                        'diagnostics_period_sec': 0.2}, ros=ros)
    from diagnostic_msgs.msg import DiagnosticArray
    stamps = []
    subscription = ros.node.create_subscription(
        DiagnosticArray, '/diagnostics', lambda array: stamps.extend(
            time.monotonic() for status in array.status if status.hardware_id == str(database)),
        10)
    try:
        ros.spin_until(lambda: len(stamps) >= 11, 'eleven reports', timeout=30.0)
    finally:
        ros.node.destroy_subscription(subscription)
    # Ten periods of 0.2 s, not ten seconds (scheduling adds a little).
    assert stamps[-1] - stamps[0] < 5.0
    assert node.stop() == 0
    with pytest.raises(StartupError, match='diagnostics_period_sec must be between 0.1 and 60.0'):
        memory_node({**NODE_PARAMETERS, 'database_path': str(database),
                     'diagnostics_period_sec': 0.0})


# The check after the commit (in process: the file must vanish between the
# commit and the reply, which no outside process can time) -----------------------


@pytest.fixture
def memory_service(tmp_path):
    # MemoryService: the node's handlers without a node, an executor or a context.
    from mira_memory.core import config
    from mira_memory.memory.service import MemoryService
    database = tmp_path / 'db' / 'memory.sqlite3'
    service = MemoryService(config.settings_from_parameters(True, str(database)),
                            robot_profile=lambda: 'Mira')
    service.database_path = database
    yield service
    service.close()


def test_a_remember_committed_as_the_file_vanishes_is_not_acknowledged(
        memory_service, monkeypatch):
    from mira_memory.core.admission import rules
    service = memory_service
    added = service.admin(
        'entity_add',
        srv.AdminEntityAdd.Request(entity_type='person', canonical_name='Ada Lovelace'),
        srv.AdminEntityAdd.Response())
    assert added.success, added.message
    admit = rules.admit
    committed = []

    def admit_then_vanish(*args, **kwargs):
        result = admit(*args, **kwargs)
        committed.append(result)
        os.unlink(service.database_path)
        return result

    monkeypatch.setattr(rules, 'admit', admit_then_vanish)
    request = srv.Remember.Request(
        episode_id='e1', turn_id='t1', utterance=UTTERANCE, kind='preference',
        subject='Ada Lovelace', predicate='prefers_drink', value='green tea',
        evidence=UTTERANCE.rstrip('.'))
    # The node's remember callback is a coroutine (it may wait for the
    # operator turn); its synchronous part, which this test is about, is
    # MemoryService.remember.
    answer = service.remember(request)
    assert [(result.status, result.outcome) for result in committed] == [('applied', 'created')]
    assert (answer.status, answer.reason, answer.memory_id) == (
        'rejected', 'backend_failure', None)


def test_an_admin_write_committed_as_the_file_vanishes_is_not_acknowledged(memory_service):
    service = memory_service

    def add_then_vanish(request, response):
        service.admin_entity_add(request, response)
        os.rename(service.database_path, service.database_path.with_name('moved.sqlite3'))

    answer = service.admin(
        'entity_add',
        srv.AdminEntityAdd.Request(entity_type='person', canonical_name='Ada Lovelace'),
        srv.AdminEntityAdd.Response(), handler=add_then_vanish)
    assert (answer.success, answer.error_code, answer.entity.id) == (
        False, 'backend_failure', '')


def test_a_forget_drops_the_texts_the_node_keeps_in_memory(memory_service):
    # (Admission keeps no text past its call: test/unit/test_operator_turn.py.)
    service = memory_service
    added = service.admin(
        'entity_add',
        srv.AdminEntityAdd.Request(entity_type='person', canonical_name='Ada Lovelace'),
        srv.AdminEntityAdd.Response())
    assert added.success, added.message
    created = service.remember(srv.Remember.Request(
        episode_id='e1', turn_id='t1', utterance=UTTERANCE, kind='preference',
        subject='Ada Lovelace', predicate='prefers_drink', value='green tea',
        evidence=UTTERANCE.rstrip('.')))
    assert (created.status, created.outcome) == ('applied', 'created')
    shown = service.recall_cache.recall('Ada Lovelace')
    assert 'green tea' in shown.text
    # Recall kept its answer.
    assert len(service.recall_cache) == 1

    def forget(request, response):
        return service.admin('forget', request, response)
    preview = forget(srv.AdminForget.Request(target=f'MEM{created.memory_id}', confirm=False),
                     srv.AdminForget.Response())
    assert preview.success, preview.message
    # A preview removes nothing, so it keeps what it kept.
    assert len(service.recall_cache) == 1
    forgotten = forget(srv.AdminForget.Request(target=f'MEM{created.memory_id}', confirm=True),
                       srv.AdminForget.Response())
    assert forgotten.success, forgotten.message
    assert len(service.recall_cache) == 0
    assert 'green tea' not in service.recall_cache.recall('Ada Lovelace').text
