# SPDX-License-Identifier: Apache-2.0
"""
A message the middleware does not send ends neither the memory node nor its goal.

Under load Fast DDS can fail a write ("cannot publish data"), and rclpy
raises it from the publish or the service reply: once in CI, the EXECUTING
status of a backup goal, which ended the whole node with a traceback. Here
the real node runs with the first message of one kind failing that way
(helpers/unsent_message_node.py); a goal must still run and end with its
own result, the node must log one warning, and it must go on serving. The
lost reply is the first one, to the fixture's admin/status, which the
client sends again.
"""

import pathlib
import sys
import time

from helpers.action_goals import finish, SUCCEEDED
from helpers.memory_services import create_clients
from helpers.rosutil import unique_namespace, write_params_file
from mira_memory import srv
from mira_memory.action import Backup
from mira_memory.client import names
from mira_memory.simulation import processes
import pytest

pytestmark = pytest.mark.ros

UNSENT_MESSAGE_NODE = pathlib.Path(__file__).parents[1] / 'helpers' / 'unsent_message_node.py'
WARNINGS = {
    'execute': 'a goal message was not published and the goal goes on: Failed publish goal',
    'succeed': 'a goal message was not published and the goal goes on: Failed publish goal',
    'feedback': 'a goal message was not published and the goal goes on: Failed to publish',
    'diagnostics': 'a message was not sent and the node goes on: Failed to publish',
    'reply': 'a message was not sent and the node goes on: failed to send response',
}
# A goal that is never run would wait for good: the failure, not a hang.
GOAL_TIMEOUT_SEC = 60


@pytest.fixture
def node(ros, tmp_path, request):
    """Start the memory node whose first message of request.param is not sent."""
    namespace = unique_namespace('unsent')
    parameters = {'enabled': True, 'database_path': str(tmp_path / 'memory.sqlite3'),
                  'robot_profile': 'Mira'}
    process = processes.Process(
        [sys.executable, str(UNSENT_MESSAGE_NODE), request.param,
         '--ros-args', '-r', f'__ns:={namespace}',
         '--params-file', write_params_file(tmp_path, parameters)],
        tmp_path / 'memory_node.log', name='memory_node')
    process.prefix = names.memory_node_name(namespace)
    process.unsent = request.param
    try:
        create_clients(ros, process.prefix)
        assert ros.wait_for_service(srv.AdminStatus, f'{process.prefix}/admin/status'), \
            process.output()
        ros.settle(srv.AdminStatus, f'{process.prefix}/admin/status')
        yield process
    finally:
        process.stop()
        ros.forget_clients(process.prefix)


def _wait_for_line(process, line, timeout=30):
    deadline = time.monotonic() + timeout
    while line not in process.output():
        assert process.running() and time.monotonic() < deadline, process.output()
        time.sleep(0.1)


@pytest.mark.parametrize('node', sorted(WARNINGS), indirect=True)
def test_a_message_not_sent_ends_neither_the_node_nor_its_goal(ros, node, tmp_path):
    for attempt in ('first', 'second'):
        target = tmp_path / 'memory-copies' / f'{attempt}.sqlite3'
        status, result = finish(ros, node.prefix, 'backup', Backup.Goal(path=str(target)),
                                timeout=GOAL_TIMEOUT_SEC)
        assert (status, result.error_code) == (SUCCEEDED, ''), result.message
        assert result.path == str(target) and target.is_file()
        if attempt == 'first':
            _wait_for_line(node, WARNINGS[node.unsent])
    assert node.running(), node.output()
    assert 'Traceback' not in node.output(), node.output()
    assert node.output().count(' goes on: ') == 1, node.output()
