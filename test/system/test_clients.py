# SPDX-License-Identifier: Apache-2.0
"""
Clients still get their answer when the first reply is lost.

A real rclpy server process (drop_first_server.py) leaves the first request
of chosen services unanswered, as if DDS had dropped the reply. The test
client, MemoryClient, the console and the operator source - all waiting
through mira_memory.ros.clients.call - resend a read-only or idempotent request once and
get the answer; a write that is not idempotent is sent exactly once.
"""

import pathlib
import signal
import subprocess
import sys
import time
import warnings

from helpers.rosutil import executable, NodeProcess, unique_namespace
from mira_memory.client import names
from mira_memory.ros import node_runner
from mira_memory.simulation import processes
import pytest

pytestmark = pytest.mark.ros

SERVER = pathlib.Path(__file__).resolve().parents[1] / 'helpers' / 'drop_first_server.py'


class DropFirstServer(processes.Process):
    """drop_first_server.py as a real process (the package's harness)."""

    def __init__(self, directory, dropped, slow_failures=()):
        self.namespace = unique_namespace('drop')
        self.prefix = names.memory_node_name(self.namespace)
        super().__init__(
            [sys.executable, str(SERVER), self.namespace, ','.join(dropped),
             ','.join(slow_failures)],
            directory / f'server_{self.namespace.strip("/")}.log', name='drop_first_server')
        try:
            self.wait_ready('ready', timeout=30)
        except BaseException:
            # The fixture only stops servers that started: never leave this one behind.
            self.stop()
            raise

    def received(self, service):
        return sum(1 for line in self.output().splitlines()
                   if line.startswith(f'received {service} '))

    def stop(self):
        # This stand-in server's own shutdown is not under test: SIGTERM, on
        # which it exits at once (dropping_node.py).
        return super().stop(first=signal.SIGTERM, timeout=20)


@pytest.fixture
def server(tmp_path, ros):
    started = []

    def start(*dropped, slow_failures=()):
        started.append(DropFirstServer(tmp_path, dropped, slow_failures))
        return started[-1]

    yield start
    for running in started:
        running.stop()
        ros.forget_clients(running.prefix)


def test_test_client_resends_read_only_and_idempotent_calls(ros, server):
    from mira_memory.srv import AdminFind, RecallMemory, Remember
    drop = server('recall_memory', 'remember', 'admin/find')
    recalled = ros.call(RecallMemory, names.service_name(drop.prefix, names.RECALL_MEMORY),
                        RecallMemory.Request(query='Ada'))
    assert recalled.text == 'fixed answer'
    remembered = ros.call(Remember, names.service_name(drop.prefix, names.REMEMBER),
                          Remember.Request())
    assert (remembered.status, remembered.memory_id) == ('applied', 'MEM7')
    found = ros.call(AdminFind, names.service_name(drop.prefix, names.ADMIN_FIND),
                     AdminFind.Request(name='Ada'))
    assert [entity.id for entity in found.entities] == ['ENT7']
    # The first of each was left unanswered; the resent one was answered.
    assert [drop.received(name) for name in ('recall_memory', 'remember', 'admin/find')] == [
        2, 2, 2]


def test_a_remember_resent_during_a_slow_store_failure_answers_what_the_resend_did(
        ros, server):
    # The first remember is slow (1 s passes: it is resent) and fails in the store;
    # the resent one is admitted. Answering the failure would say "rejected"
    # for a request whose twin wrote.
    from mira_memory.srv import Remember
    drop = server(slow_failures=('remember',))
    remembered = ros.call(Remember, names.service_name(drop.prefix, names.REMEMBER),
                          Remember.Request())
    assert (remembered.status, remembered.memory_id) == ('applied', 'MEM7')
    assert drop.received('remember') == 2


def test_a_write_that_is_not_idempotent_is_sent_once(ros, server):
    from mira_memory.ros import clients
    from mira_memory.srv import AdminEntityAdd
    drop = server('admin/entity_add')
    client = ros.client(AdminEntityAdd, names.service_name(drop.prefix, names.ADMIN_ENTITY_ADD))
    assert client.wait_for_service(timeout_sec=20)
    assert not clients.resendable(client)
    with ros.spinning() as executor:
        response = clients.call(executor, client, AdminEntityAdd.Request(
            entity_type='person', canonical_name='Ada'), time.monotonic() + 3.0)
    assert response is None
    assert drop.received('admin/entity_add') == 1


def test_memory_client_resends_reads_and_remember_but_never_a_write(ros, server):
    import rclpy
    from mira_memory.client import MemoryClient, NoReply
    drop = server('recall_memory', 'remember', 'admin/find', 'admin/entity_add')
    node = rclpy.create_node('memory_client_resend', context=ros.context)
    memory = MemoryClient(node, memory_node=drop.prefix, timeout=20.0)
    try:
        assert memory.recall('Ada').text == 'fixed answer'
        remembered = memory.remember({'episode_id': 'e1', 'turn_id': 't1'})
        assert (remembered.status, remembered.memory_id) == ('applied', 'MEM7')
        assert [entity.id for entity in memory.find('Ada').entities] == ['ENT7']
        with pytest.raises(NoReply, match=f'service {drop.prefix}/admin/entity_add did not'):
            memory.call(names.ADMIN_ENTITY_ADD, memory.request(
                names.ADMIN_ENTITY_ADD, entity_type='person', canonical_name='Ada'),
                timeout=3.0)
    finally:
        memory.destroy()
        node.destroy_node()
    assert [drop.received(name) for name in (
        'recall_memory', 'remember', 'admin/find', 'admin/entity_add')] == [2, 2, 2, 1]


def test_console_gets_its_answer_when_the_first_reply_is_lost(server, tmp_path):
    drop = server('admin/status', 'admin/find')
    result = subprocess.run(
        [executable('memory_console'), '--memory-node', drop.prefix, '--timeout', '20',
         'memory', 'find', 'Ada'],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'ENT7' in result.stdout
    # The console's first read (admin/status) and its command were each resent once.
    assert drop.received('admin/status') >= 2
    assert drop.received('admin/find') == 2


def run_seed(drop, directory, name, aliases=(), **parameters):
    """Seed one person through the stand-in server; return (exit code, output)."""
    scenario = directory / 'scenario.toml'
    quoted = ', '.join(f'"{alias}"' for alias in aliases)
    scenario.write_text(
        f'[[seed.entities]]\ntype = "person"\nname = "{name}"\naliases = [{quoted}]\n\n'
        '[[episodes]]\nname = "e1"\n[[episodes.turns]]\nid = "t1"\ntext = "Hello."\n')
    seed = NodeProcess(
        'simulation_seed', namespace=drop.namespace, directory=str(directory),
        parameters={'scenario_file': str(scenario), 'memory_node': drop.prefix, **parameters})
    code = seed.wait(timeout=60)
    return code, seed.output()


def test_seed_step_gets_its_answer_when_the_first_reply_is_lost(server, tmp_path):
    drop = server('admin/entity_find')
    code, output = run_seed(drop, tmp_path, 'Ada')
    assert code == 0, output
    # entity_find (read) was resent and answered with ENT7: nothing to create.
    assert "seed: 'Ada' already exists as ENT7" in output, output
    assert drop.received('admin/entity_find') == 2
    assert drop.received('admin/entity_add') == 0


def test_seed_step_reads_whether_a_write_whose_reply_was_lost_was_done(server, tmp_path):
    # The server does the first entity_add and alias_add and loses their replies.
    drop = server('admin/entity_add', 'admin/alias_add')
    code, output = run_seed(drop, tmp_path, 'Grace Hopper', ['Grace'], call_timeout_sec=2.0)
    assert code == 0, output
    assert (f'seed: {drop.prefix}/admin/entity_add did not answer in time; '
            'it was done: ENT8') in output, output
    assert f'{drop.prefix}/admin/alias_add did not answer in time; it was done: ENT8' in output
    assert 'seed complete' in output, output
    # Each write was sent once: the reads said it was done.
    assert (drop.received('admin/entity_add'), drop.received('admin/alias_add')) == (1, 1)


def test_every_reply_the_middleware_could_not_send_is_logged():
    # rclpy's own warning text for a reply Fast DDS did not send (service.cpp).
    unsent = ('failed to send response (timeout): client will not receive response, '
              'at ./src/rmw_response.cpp:152')
    logged, shown = [], []
    with warnings.catch_warnings():
        warnings.simplefilter('default')
        warnings.showwarning = lambda message, category, *where: shown.append(
            (category, str(message)))
        node_runner.log_unsent_replies(logged.append)
        for _ in range(3):
            # One code location each time: Python alone would show it once.
            warnings.warn(unsent, RuntimeWarning)
        warnings.warn('something else', DeprecationWarning)
    assert logged == [f'a service reply was not sent: {unsent}. The client was not discovered '
                      'in time; a client that resends gets its answer from the resend.'] * 3
    # Every other warning still goes where it went before.
    assert shown == [(DeprecationWarning, 'something else')]
