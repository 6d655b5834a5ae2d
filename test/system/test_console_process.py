# SPDX-License-Identifier: Apache-2.0
"""The memory_console executable as a real process against a real memory node."""

import itertools
import re
import subprocess

from helpers.rosutil import executable
import pytest

pytestmark = pytest.mark.ros

_names = itertools.count(1)


def unique(label):
    """Return a name no other test of this module uses."""
    return f'{label} {next(_names)}'


def created_id(output, prefix):
    match = re.match(rf'created ({prefix}[1-9][0-9]*) ', output)
    assert match, output
    return match.group(1)


@pytest.fixture(scope='module')
def node(ros, shared_memory_node):
    return shared_memory_node


# As a real process ----------------------------------------------------------------------


def console_process(*args, stdin=None):
    return subprocess.run([executable('memory_console'), *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_process_one_shot_create_and_find(node):
    name = unique('Process Person')
    created = console_process('--memory-node', node.prefix, 'memory', 'entity', 'add',
                              'person', name)
    assert created.returncode == 0, created.stderr
    entity = created_id(created.stdout, 'ENT')
    found = console_process('--memory-node', node.prefix, 'memory', 'find', name)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines() == [f'{entity} person "{name}"', '  no active memories']


def test_process_failed_call_exits_1(node):
    result = console_process('--memory-node', node.prefix, 'memory', 'show', 'MEM999999')
    assert result.returncode == 1 and result.stdout == ''
    assert result.stderr == 'error: not_found: memory MEM999999 not found\n'


def test_process_bad_usage_exits_2(node):
    result = console_process('--memory-node', node.prefix, 'memory', 'show', 'MEM-1')
    assert result.returncode == 2 and result.stdout == ''
    assert result.stderr.startswith('usage error: "MEM-1" is not a memory id')


def test_process_interactive_session(node):
    name = unique('Interactive Ida')
    session = '\n'.join([
        'help',
        '',
        f'memory entity add person "{name}"',
        f'memory find "{name}',
        f'memory entity find "{name}"',
        'memory show MEMx',
        'quit',
        'memory persistent',
    ]) + '\n'
    result = console_process('--memory-node', node.prefix, stdin=session)
    assert result.returncode == 0, result.stderr
    assert 'commands:\n' in result.stdout
    entity = re.search(r'created (ENT[1-9][0-9]*) person', result.stdout).group(1)
    assert re.search(rf'^{entity} +person +{name}', result.stdout, re.MULTILINE)
    assert result.stderr.splitlines() == [
        'usage error: missing closing quote',
        'usage error: "MEMx" is not a memory id (expected MEM<n>, e.g. MEM1)',
    ]
    # Nothing after quit runs.
    assert 'persistent memory is' not in result.stdout


def test_process_interactive_ends_at_end_of_input(node):
    result = console_process('--memory-node', node.prefix, stdin='memory persistent\n')
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('persistent memory is enabled\n')
