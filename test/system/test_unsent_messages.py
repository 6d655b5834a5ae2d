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

A cancel request can be lost the same way (a verify once ran to its end
while its client waited 30 s for the cancel's reply): the console and the
Python client send it again until the node answers, and end with the
goal's CANCELED result. So can a goal's acceptance, while the node runs
the job: the console and the Python client send the goal again with its
id, which the node refuses as one it has, and wait for its result by that
id. With every answer to the goal lost, the console's Ctrl-C cancels the
goal by the id it gave it.
"""

import pathlib
import re
import signal
import sys
import time

from helpers.action_goals import finish, SUCCEEDED
from helpers.copy_in_flight import (backups_held, console_process, temporary_files,
                                    wait_for_backup_in_flight)
from helpers.memory_services import create_clients, memory_client
from helpers.rosutil import unique_namespace, write_params_file
from mira_memory import srv
from mira_memory.action import Backup
from mira_memory.client import names
from mira_memory.simulation import processes
import pytest

pytestmark = pytest.mark.ros

UNSENT_MESSAGE_NODE = pathlib.Path(__file__).parents[1] / 'helpers' / 'unsent_message_node.py'
INTERRUPTED_CONSOLE = (pathlib.Path(__file__).parents[1] / 'helpers'
                       / 'interrupted_console.py')
WARNINGS = {
    'execute': 'a goal message was not published and the goal goes on: Failed publish goal',
    'succeed': 'a goal message was not published and the goal goes on: Failed publish goal',
    'feedback': 'a goal message was not published and the goal goes on: Failed to publish',
    'diagnostics': 'a message was not sent and the node goes on: Failed to publish',
    'reply': 'a message was not sent and the node goes on: failed to send response',
}
LOST_CANCEL = 'the first cancel request was lost'
LOST_ACCEPTANCE = "the first goal's acceptance was lost"
LOST_ANSWERS = 'every answer to a goal request is lost'
# The kinds whose goals the node holds in flight (unsent_message_node.HELD).
HELD = ('cancel', 'accept', 'answers')
# A goal that is never run would wait for good: the failure, not a hang.
GOAL_TIMEOUT_SEC = 60


@pytest.fixture
def node(ros, tmp_path, request):
    """Start the memory node whose first message of request.param is not sent."""
    namespace = unique_namespace('unsent')
    parameters = {'enabled': True, 'database_path': str(tmp_path / 'memory.sqlite3'),
                  'robot_profile': 'Mira'}
    release = tmp_path / 'hold'  # backups held in flight while it exists (HELD)
    process = processes.Process(
        [sys.executable, str(UNSENT_MESSAGE_NODE), request.param,
         *([str(release)] if request.param in HELD else []),
         '--ros-args', '-r', f'__ns:={namespace}',
         '--params-file', write_params_file(tmp_path, parameters)],
        tmp_path / 'memory_node.log', name='memory_node')
    process.prefix = names.memory_node_name(namespace)
    process.unsent = request.param
    process.release = release
    process.copies = tmp_path / 'memory-copies'
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


CANCELED_MESSAGE = 'backup canceled (by its client); nothing was written'


@pytest.mark.parametrize('node', ['cancel'], indirect=True)
def test_the_client_sends_a_lost_cancel_request_again(node):
    target = node.copies / 'backup.sqlite3'
    with memory_client(node.prefix, 'lost_cancel') as memory:
        with backups_held(node.release):
            job = memory.start_job('backup', Backup.Goal(path=str(target)))
            deadline = time.monotonic() + 60
            while not temporary_files(node.copies):
                assert not job.done() and time.monotonic() < deadline, node.output()
                job.spin(0.1)
            result = job.cancel()
    assert LOST_CANCEL in node.output()
    assert (result.status, result.result.error_code) == ('canceled', 'canceled'), (
        result.result.message)
    assert result.result.message == CANCELED_MESSAGE
    assert not target.exists() and temporary_files(node.copies) == []


# What each node of the console's tests loses (unsent_message_node.py).
LOST = {'cancel': LOST_CANCEL, 'answers': LOST_ANSWERS}


@pytest.mark.parametrize('node', sorted(LOST), indirect=True)
def test_the_consoles_ctrl_c_cancels_when_a_cancel_or_an_acceptance_is_lost(node, tmp_path):
    # cancel: the first cancel request is lost, the console sends it again.
    # answers: no answer to the goal comes, the console cancels the id it gave the goal.
    target = node.copies / 'backup.sqlite3'
    with backups_held(node.release):
        console = console_process(node, tmp_path, 'backup', str(target))
        wait_for_backup_in_flight(node, target, console)
        console.process.send_signal(signal.SIGINT)
        console.process.wait(timeout=90)  # the console gives up within 60 s
    assert LOST[node.unsent] in node.output(), console.output()
    assert console.poll() == 130, console.output()
    assert console.output().splitlines()[-1] == CANCELED_MESSAGE, console.output()
    assert not target.exists() and temporary_files(node.copies) == []


@pytest.mark.parametrize('node', ['answers'], indirect=True)
def test_a_ctrl_c_while_the_console_sends_its_goal_still_cancels_the_goal(node, tmp_path):
    # The Ctrl-C reaches the console inside rclpy's send_goal_async, right
    # after the goal's request went; the node runs the backup (held) and
    # answers are lost, so only a cancel by the goal's id can stop it.
    target = node.copies / 'backup.sqlite3'
    with backups_held(node.release):
        console = console_process(node, tmp_path, 'backup', str(target),
                                  console=[sys.executable, str(INTERRUPTED_CONSOLE), 'send'])
        console.process.wait(timeout=90)  # the console gives up within 60 s
    assert console.poll() == 130, console.output()
    assert console.output().splitlines()[-1] == CANCELED_MESSAGE, console.output()
    assert not target.exists() and temporary_files(node.copies) == []


UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'


@pytest.mark.parametrize('node', ['accept'], indirect=True)
@pytest.mark.parametrize('wait', ['wait', 'no-wait'])
def test_the_console_whose_goal_acceptance_is_lost_sends_it_again_and_has_the_job(
        node, tmp_path, wait):
    # Without the repeat the console waits its --timeout (60 s) for the
    # acceptance and says it had no answer, while the node wrote the backup.
    target = node.copies / 'backup.sqlite3'
    console = console_process(node, tmp_path, 'backup', str(target),
                              *(['--no-wait'] if wait == 'no-wait' else []))
    stdout, _ = console.process.communicate(timeout=90)
    assert LOST_ACCEPTANCE in node.output(), console.output()
    assert console.poll() == 0, console.output()
    if wait == 'no-wait':
        assert re.fullmatch(rf'backup started: goal {UUID} \(memory jobs shows its progress\)',
                            stdout.strip()), stdout
        deadline = time.monotonic() + GOAL_TIMEOUT_SEC
        while not target.exists():
            assert time.monotonic() < deadline, node.output()
            time.sleep(0.1)
    else:
        assert stdout.startswith(f'backup written: {target} ('), (stdout, console.output())
    assert target.is_file()


@pytest.mark.parametrize('node', ['accept'], indirect=True)
def test_the_client_whose_goal_acceptance_is_lost_sends_it_again_and_has_the_job(node):
    target = node.copies / 'backup.sqlite3'
    with memory_client(node.prefix, 'lost_acceptance') as memory:
        result = memory.backup(str(target))
    assert LOST_ACCEPTANCE in node.output()
    assert result.succeeded, result.result.message
    assert result.result.path == str(target) and target.is_file()
