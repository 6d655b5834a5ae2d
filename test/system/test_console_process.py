# SPDX-License-Identifier: Apache-2.0
"""The memory_console executable as a real process against a real memory node."""

import itertools
import os
import pathlib
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

from helpers import middleware_profile as profiles
from helpers.rosutil import executable
from mira_memory.ros import launching
import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]

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
    # A script: the code of its first failed line (line 4, bad usage).
    assert result.returncode == 2, result.stderr
    assert 'commands:\n' in result.stdout
    entity = re.search(r'created (ENT[1-9][0-9]*) person', result.stdout).group(1)
    assert re.search(rf'^{entity} +person +{name}', result.stdout, re.MULTILINE)
    assert result.stderr.splitlines() == [
        'usage error: missing closing quote',
        'usage error: "MEMx" is not a memory id (expected MEM<n>, e.g. MEM1)',
        '2 of 7 lines failed: line 4 (exit 2), line 6 (exit 2)',
    ]
    # Nothing after quit runs.
    assert 'persistent memory is' not in result.stdout


def test_process_interactive_ends_at_end_of_input(node):
    result = console_process('--memory-node', node.prefix, stdin='memory persistent\n')
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('persistent memory is enabled\n')


def test_process_script_with_a_failed_line_exits_with_its_code_and_names_it(node):
    # Every line runs; the first failure's code is the exit code (a provisioning
    # script must not pass when a line failed).
    script = '\n'.join([f'memory entity find "{unique("Nobody")}"', 'memory show MEM999999',
                        'memory frobnicate', 'memory persistent']) + '\n'
    result = console_process('--memory-node', node.prefix, stdin=script)
    assert result.returncode == 1
    assert result.stdout.startswith('no entity has that exact name or alias\n'
                                    'persistent memory is enabled\n')
    assert result.stderr.splitlines() == [
        'error: not_found: memory MEM999999 not found',
        'usage error: unknown command: memory frobnicate (type help for the commands)',
        '2 of 4 lines failed: line 2 (exit 1), line 3 (exit 2)',
    ]


@pytest.mark.parametrize('args', [('--help',), ('memory', 'persistent')],
                         ids=['--help', 'memory persistent'])
def test_process_output_pipe_closed_early_is_a_quiet_exit(node, args):
    # `memory_console --help | head`: the reader has gone before the console
    # writes; no traceback, the code of a program ended by SIGPIPE.
    process = subprocess.Popen([executable('memory_console'), '--memory-node', node.prefix, *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err.decode()) == (141, '')


# Fast DDS's own log -------------------------------------------------------------------

STUCK_MIDDLEWARE_PROBE = """
import time

from mira_memory.console import memory_console
from mira_memory.ros import node_runner
import rclpy.node

node_runner.MIDDLEWARE_RELEASE_SEC = 1.0


def destroy_for_good(node):
    # As Fast DDS once waited, inside rcl_node_fini, after the answer: in
    # Python (GIL free) or in C holding the GIL (ctypes.PyDLL keeps it).
    if HOLD_GIL:
        ctypes.PyDLL(None).sleep(60)
    time.sleep(60)


rclpy.node.Node.destroy_node = destroy_for_good
program = memory_console.program
"""


def run_stuck_console(tmp_path, hold_gil, *args):
    """Run the console executable's way in (node_runner.start, entry program), its end stuck."""
    source = 'import ctypes\nHOLD_GIL = ' + repr(hold_gil) + '\n' + STUCK_MIDDLEWARE_PROBE
    (tmp_path / 'stuck_middleware_probe.py').write_text(source, encoding='utf-8')
    start = ('from mira_memory.ros import node_runner\n'
             'node_runner.start("stuck_middleware_probe", entry="program")\n')
    environment = {**os.environ, 'PYTHONPATH': os.pathsep.join(
        filter(None, (str(tmp_path), os.environ.get('PYTHONPATH'))))}
    started = time.monotonic()
    # Without the bound: 60 s in destroy_for_good, past this test's 30 s.
    result = subprocess.run([sys.executable, '-c', start, *args], cwd=tmp_path, env=environment,
                            capture_output=True, text=True, timeout=30)
    return result, time.monotonic() - started


def test_a_console_the_middleware_does_not_let_go_exits_with_its_answer_and_code(node, tmp_path):
    result, took = run_stuck_console(tmp_path, False, '--memory-node', node.prefix,
                                     'memory', 'show', 'MEM999999')
    assert took < 20
    assert (result.returncode, result.stdout) == (1, '')
    assert result.stderr == 'error: not_found: memory MEM999999 not found\n'


def test_a_console_stuck_holding_the_gil_prints_its_answer_then_the_stacks_and_exits_1(
        node, tmp_path):
    result, took = run_stuck_console(tmp_path, True, '--memory-node', node.prefix,
                                     'memory', 'persistent')
    # The command's own code is 0; faulthandler's exit is 1.
    assert took < 20
    assert result.returncode == 1
    assert result.stdout.startswith('persistent memory is enabled\n'), result.stdout
    assert 'Timeout (0:00:02)!' in result.stderr and 'in destroy_for_good' in result.stderr


FAST_DDS_ERROR = "Wrong domain name passed into the server's list"
NO_NODE = 'error: no memory node answered at /nowhere within 1.0 s\n'


def console_making_fast_dds_log_an_error(environment):
    """
    Run one console command whose participant makes Fast DDS log an error of its own.

    A malformed ROS_DISCOVERY_SERVER does that, on Jazzy and Kilted alike; by
    default Fast DDS prints it on standard output.
    """
    result = subprocess.run(
        [executable('memory_console'), '--memory-node', '/nowhere', '--timeout', '1',
         'memory', 'find', 'Ada'], capture_output=True, text=True, timeout=60,
        env={**environment, 'ROS_DISCOVERY_SERVER': 'no;such:server'})
    assert (result.returncode, result.stdout) == (1, '')
    return result.stderr


def test_the_middlewares_own_log_stays_out_of_the_output_in_a_test_run(middleware_profile):
    if middleware_profile is None:
        pytest.skip('the environment names a Fast DDS profile of its own; the run keeps it')
    assert console_making_fast_dds_log_an_error(os.environ) == NO_NODE


def test_every_process_of_a_test_run_reads_its_distros_participant_settings(middleware_profile):
    # What the processes read: the default participant profile of the file
    # the environment names (helpers/middleware_profile.py says why Jazzy
    # announces every half second, and why Kilted keeps Fast DDS's 3 s and
    # sends no type information).
    if middleware_profile is None:
        pytest.skip('the environment names a Fast DDS profile of its own; the run keeps it')
    named = [os.environ[name] for name in launching.DDS_PROFILE_VARIABLES
             if os.environ.get(name)]
    assert named == [str(middleware_profile)]
    space = {'dds': 'http://www.eprosima.com'}
    defaults = ElementTree.parse(named[0]).getroot().findall(
        "dds:profiles/dds:participant[@is_default_profile='true']", space)
    assert len(defaults) == 1
    period = defaults[0].find(
        'dds:rtps/dds:builtin/dds:discovery_config/dds:leaseAnnouncement', space)
    if os.environ['ROS_DISTRO'] in launching.FAST_DDS_2_DISTROS:
        assert period is not None
        assert (period.findtext('dds:sec', namespaces=space),
                period.findtext('dds:nanosec', namespaces=space)) == ('0', '500000000')
        assert defaults[0].find('dds:rtps/dds:propertiesPolicy', space) is None
    else:
        # Fast DDS 3: no setting of the period at all, so its default, and
        # one property: no type propagation.
        assert period is None
        properties = defaults[0].findall(
            'dds:rtps/dds:propertiesPolicy/dds:properties/dds:property', space)
        assert [(each.findtext('dds:name', namespaces=space),
                 each.findtext('dds:value', namespaces=space))
                for each in properties] == [('fastdds.type_propagation', 'disabled')]


def xml_shape(element):
    """Return element as nested (tag, attributes, text, children), whitespace aside."""
    return (element.tag, dict(element.attrib), (element.text or '').strip(),
            [xml_shape(child) for child in element])


def test_the_documented_discovery_profile_is_what_every_jazzy_test_process_reads():
    page = (ROOT / 'docs' / 'operations.md').read_text(encoding='utf-8')
    documented = re.search(r'### How long discovery takes\n.*?```xml\n(.*?)```', page,
                           re.DOTALL).group(1)
    # Jazzy's: Kilted's keeps the default period (helpers/middleware_profile.py).
    tests = ElementTree.fromstring(profiles.profile_text('jazzy'))
    # The tests' file adds only its log setting (no consumer).
    tests.remove(tests.find('{http://www.eprosima.com}log'))
    assert xml_shape(tests) == xml_shape(ElementTree.fromstring(documented))


def test_the_documented_kilted_profile_is_what_every_kilted_test_process_reads():
    page = (ROOT / 'docs' / 'operations.md').read_text(encoding='utf-8')
    documented = re.search(r'### A participant that stops hearing new peers.*?```xml\n(.*?)```',
                           page, re.DOTALL).group(1)
    tests = ElementTree.fromstring(profiles.profile_text('kilted'))
    tests.remove(tests.find('{http://www.eprosima.com}log'))
    assert xml_shape(tests) == xml_shape(ElementTree.fromstring(documented))


def test_the_shipped_log_profile_sends_the_middlewares_own_log_to_stderr():
    # config/dds/log_to_stderr.xml, named as docs/console.md says: the
    # console's standard output stays its answer.
    from ament_index_python.packages import get_package_share_directory
    profile = pathlib.Path(get_package_share_directory('mira_memory'), 'config', 'dds',
                           'log_to_stderr.xml')
    environment = {name: value for name, value in os.environ.items()
                   if name not in launching.DDS_PROFILE_VARIABLES}
    stderr = console_making_fast_dds_log_an_error(
        {**environment, **launching.dds_profile_environment(str(profile))})
    assert FAST_DDS_ERROR in stderr
    assert stderr.endswith(NO_NODE)
