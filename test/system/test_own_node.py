# SPDX-License-Identifier: Apache-2.0
"""
tools/node and tools/console as the README uses them: real processes, real DDS, a real file.

tools/node starts a memory node on a database of the caller's choice and
prints the console command that reaches it; the test runs exactly that
printed command (in a shell whose environment does not name the domain, so
the command must carry it), then stops the node with SIGINT, as Ctrl-C
does, and expects a clean exit. The one-shot form (`tools/node --database
PATH memory ...`) starts a node for one console command and stops it.
"""

import os
import pathlib
import signal
import subprocess
import time

import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT = 120.0
ONE_COMMAND = 'one command, e.g.:'
CONSOLE = 'the console:'


def environment():
    """Return the environment without ROS_DOMAIN_ID: the printed command must set it."""
    env = dict(os.environ)
    env.pop('ROS_DOMAIN_ID', None)
    return env


def domain():
    return os.environ.get('ROS_DOMAIN_ID', '0')


@pytest.fixture
def own_node(tmp_path):
    """Start tools/node on a fresh database; yield (process, printed lines, database)."""
    database = tmp_path / 'own' / 'memory.sqlite3'
    process = subprocess.Popen(
        ['tools/node', '--database', str(database), '--domain-id', domain()], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment())
    lines = []
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not any(ONE_COMMAND in line for line in lines):
            line = process.stdout.readline()
            assert line and time.monotonic() < deadline, ''.join(lines)
            lines.append(line)
        yield process, lines, database
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def printed(lines, label):
    line = next(line for line in lines if label in line)
    return line.split(label, 1)[1].strip()


def run_printed(command, stdin=None):
    return subprocess.run(['bash', '-c', command], cwd=ROOT, input=stdin, capture_output=True,
                          text=True, timeout=120, env=environment())


def test_the_printed_console_command_reaches_the_node_and_ctrl_c_stops_it(own_node):
    process, lines, database = own_node
    assert f'on {database}' in lines[-3] and f'ROS_DOMAIN_ID={domain()}' in lines[-3], lines

    one = run_printed(printed(lines, ONE_COMMAND))
    assert one.returncode == 0, one.stderr
    assert 'persistent memory is enabled' in one.stdout
    assert f'database:       {database}' in one.stdout

    # The README's session: an entity, a dry run of the rules, recall.
    session = run_printed(printed(lines, CONSOLE), stdin='\n'.join((
        'memory entity add person "Ada Lovelace"',
        'memory check "Ada Lovelace prefers green tea." --subject "Ada Lovelace" '
        '--predicate prefers_drink --value "green tea" --kind preference',
        'memory recall "Ada Lovelace"',
        'memory persistent', '')))
    assert session.returncode == 0, session.stderr
    assert 'created ENT1 person "Ada Lovelace"' in session.stdout
    assert 'created: remember would store this as a new memory' in session.stdout
    assert 'recall_memory: found (exact_match)' in session.stdout
    # The check wrote nothing.
    assert 'memories:       0 (0 active)' in session.stdout

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0, process.stdout.read()
    assert database.exists()


def test_one_console_command_on_a_node_started_for_it(tmp_path):
    database = tmp_path / 'memory.sqlite3'

    def node(*command):
        return subprocess.run(
            ['tools/node', '--database', str(database), '--domain-id', domain(), *command],
            cwd=ROOT, capture_output=True, text=True, timeout=180, env=environment())

    created = node('memory', 'entity', 'add', 'robot', 'Mira')
    assert created.returncode == 0, created.stderr
    assert created.stdout == 'created ENT1 robot "Mira"\n'
    # The node stopped and gave the file up: a second one opens it again.
    missing = node('memory', 'show', 'MEM7')
    assert missing.returncode == 1
    assert 'error: not_found: memory MEM7 not found' in missing.stderr


def test_no_database_is_one_clear_line_and_exit_2():
    result = subprocess.run(['tools/node'], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith('node: --database PATH is required')
