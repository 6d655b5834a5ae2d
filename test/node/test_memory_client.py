# SPDX-License-Identifier: Apache-2.0
"""
MemoryClient against an in-process memory node (node tier): its calls, names and errors.

The client runs on a node of its own, on the tier's Context, with its own
executor, as a script's node would. Its asynchronous form is what
cognition uses (test_cognition_runner.py); its jobs' cancel is tested on a
store large enough to cancel in test/system/test_admin_actions.py; the
example of docs/client.md against a real node process in
test/system/test_client_example.py.
"""

import itertools

from mira_memory.client import JobResult, MemoryClient, names, ServiceUnavailable
from mira_memory.msg import MemoryLink
import pytest

pytestmark = pytest.mark.ros

_names = itertools.count(1)


def unique(label):
    return f'{label} {next(_names)}'


@pytest.fixture(scope='module')
def client_node(node_context):
    """Return a node of the test's own, as a script makes one (no executor given)."""
    import rclpy
    node = rclpy.create_node('memory_client_test', context=node_context)
    yield node
    node.destroy_node()


@pytest.fixture(scope='module')
def memory(client_node, shared_memory_node):
    client = MemoryClient(client_node, namespace=shared_memory_node.namespace, timeout=20.0)
    yield client
    client.destroy()


def test_the_memory_node_name_is_namespace_slash_memory(memory, shared_memory_node):
    assert memory.memory_node == shared_memory_node.prefix
    assert memory.service_name(names.RECALL_MEMORY) == f'{shared_memory_node.prefix}/recall_memory'
    assert names.action_name('/mira/memory', names.BACKUP) == '/mira/memory/admin/backup'


def test_every_service_in_the_table_is_one_the_node_serves(memory, client_node):
    served = {name for name, _ in client_node.get_service_names_and_types()}
    expected = {memory.service_name(service) for service in names.SERVICE_TYPES}
    assert expected <= served, expected - served


def test_every_console_command_calls_a_service_of_the_table():
    from mira_memory.console.commands import COMMANDS, MEMORY
    for command in COMMANDS:
        if command.target != MEMORY:
            continue
        if command.job:
            assert names.ACTION_TYPES[command.words[0]] is command.service_type
        else:
            assert names.SERVICE_TYPES[command.service] is command.service_type, command.words


def test_entity_admin_and_recall_round_trip(memory):
    name = unique('Grace Hopper')
    before = memory.status()
    added = memory.entity_add('person', name)
    assert added.success, added.message
    assert memory.alias_add(added.entity.id, f'{name} alias').success
    [found] = memory.entity_find(f'{name} alias').entities
    assert (found.id, found.canonical_name) == (added.entity.id, name)
    stored = memory.call(names.ADMIN_ADD, memory.request(
        names.ADMIN_ADD, kind='fact', summary=f'{name} wrote the first compiler',
        links=[MemoryLink(entity_id=added.entity.id, role='subject')]))
    assert stored.success, stored.message
    assert memory.show(stored.memory.id).memory.summary == f'{name} wrote the first compiler'
    recalled = memory.recall(name, include_entities=True)
    assert (recalled.status, recalled.reason) == ('found', 'exact_match')
    assert f'{name} wrote the first compiler' in recalled.text
    assert [entity.id for entity in recalled.entities] == [added.entity.id]
    after = memory.status()
    assert (after.entity_count, after.memory_count) == (
        before.entity_count + 1, before.memory_count + 1)


def test_a_refusal_is_the_nodes_answer_not_an_exception(memory):
    refused = memory.alias_add('ENT999999', 'nobody')
    assert not refused.success
    assert refused.error_code == 'not_found'
    shown = memory.pending_show('P999999')
    assert (shown.success, shown.error_code) == (False, 'not_found')
    assert memory.dismiss('P999999', 'tester').error_code == 'not_found'


def test_diagnostics_are_the_memory_nodes_own(memory, shared_memory_node):
    status = memory.diagnostics(timeout=20.0)
    assert status.name.startswith(f'{shared_memory_node.prefix}: ')
    assert status.hardware_id == str(shared_memory_node.database_path)
    assert 'schema version' in {value.key for value in status.values}


def test_review_reads(memory):
    pending = memory.pending()
    assert pending.success
    assert len(pending.items) == pending.pending_count
    assert memory.jobs().success


def _copies(node):
    # The node's default output directory, beside its database (admin_output_dirs).
    return node.database_path.parent / 'memory-copies'


def test_backup_job_returns_a_typed_result(memory, shared_memory_node):
    target = _copies(shared_memory_node) / 'copy.sqlite3'
    progress = []
    result = memory.backup(str(target), on_progress=progress.append)
    assert isinstance(result, JobResult)
    assert result.succeeded, result.result.message
    assert result.status == 'succeeded'
    assert result.result.path == str(target)
    assert target.stat().st_size == result.result.bytes
    # Feedback of a job this small may all come before the result is asked for.
    assert all(feedback.items_done <= feedback.items_total for feedback in progress)


def test_a_refused_job_says_why(memory, shared_memory_node, tmp_path):
    target = _copies(shared_memory_node) / 'exists.sqlite3'
    target.write_bytes(b'')
    result = memory.backup(str(target))
    assert not result.succeeded
    assert result.result.error_code == 'exists'
    elsewhere = memory.backup(str(tmp_path / 'elsewhere.sqlite3'))
    assert (elsewhere.succeeded, elsewhere.result.error_code) == (False, 'outside_output_dirs')


def test_a_first_goal_waits_for_a_reply_through_a_status_client_made_after_its_action_client(
        client_node, shared_memory_node, monkeypatch):
    # A goal's reply is lost for good while the node does not know the action
    # client; a client settled before it was made proves nothing of that.
    from mira_memory.ros import clients
    memory = MemoryClient(client_node, namespace=shared_memory_node.namespace, timeout=20.0)
    try:
        assert memory.settle(memory.deadline())
        status_clients = []
        real_call = clients.call

        def recording(executor, client, request, deadline, **options):
            if client.srv_name == memory.service_name(names.ADMIN_STATUS):
                status_clients.append(client)
            return real_call(executor, client, request, deadline, **options)
        monkeypatch.setattr(clients, 'call', recording)
        assert memory.verify().succeeded
        probes = [client for client in status_clients
                  if client is not memory.client(names.ADMIN_STATUS)]
        assert len(probes) == 1, status_clients
        assert probes[0] not in client_node.clients  # destroyed once it answered
        # Once per action client: the next goal of the job goes at once.
        assert memory.verify().succeeded
        assert len(status_clients) == 1, status_clients
    finally:
        memory.destroy()


def test_a_limited_client_has_no_other_client(client_node, shared_memory_node):
    recall_only = MemoryClient(client_node, memory_node=shared_memory_node.prefix,
                               services=(names.RECALL_MEMORY,))
    try:
        assert recall_only.offers(names.RECALL_MEMORY)
        assert not recall_only.offers(names.REMEMBER)
        with pytest.raises(PermissionError):
            recall_only.remember({'episode_id': 'e1'})
        clients = {name for name, _ in client_node.get_client_names_and_types_by_node(
            client_node.get_name(), client_node.get_namespace())}
        assert recall_only.service_name(names.RECALL_MEMORY) in clients
    finally:
        recall_only.destroy()


def test_an_unknown_service_is_refused_before_anything_is_sent(memory):
    with pytest.raises(KeyError, match='no service'):
        memory.call('admin/drop_everything')


def test_no_node_is_service_unavailable_within_the_deadline(client_node):
    import time
    absent = MemoryClient(client_node, namespace='/nobody_here', timeout=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(ServiceUnavailable) as raised:
            absent.status()
        assert time.monotonic() - started < 5.0
        assert raised.value.service_name == '/nobody_here/memory/admin/status'
        assert str(raised.value) == 'service /nobody_here/memory/admin/status is not available'
    finally:
        absent.destroy()
