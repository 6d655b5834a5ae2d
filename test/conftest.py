# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: loopback-only DDS, a private domain, real memory node processes."""

import datetime
import json
import os
import pathlib
import random

from mira_memory.ros import type_support
from mira_memory.simulation import processes
import pytest

# The suite's own process loads interfaces as the product's processes do
# (node_runner.start): without the interface generator, numpy deferred. The
# in-process nodes then run as deployed, and the generator's lark no longer
# warns of its deprecated sre_* imports in every worker.
type_support.load_runtime_only()

# DDS stays on loopback for every process the tests start, and the run gets a
# domain of its own (tools/test picks one; a bare pytest run picks here).
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 101)))
# A pytest-xdist worker gwN (tools/test) takes the run's domain + N, so the
# processes of two workers never discover each other.
_WORKER = os.environ.get('PYTEST_XDIST_WORKER', '')
if _WORKER.startswith('gw') and 'MIRA_WORKER_DOMAIN_SET' not in os.environ:
    os.environ['ROS_DOMAIN_ID'] = str(int(os.environ['ROS_DOMAIN_ID']) + int(_WORKER[2:]))
    os.environ['MIRA_WORKER_DOMAIN_SET'] = '1'


# Every process a test starts through the harness (simulation/processes.py:
# NodeProcess, the Simulation's nodes, console processes) dies with this
# pytest process, even when pytest itself is killed: no orphaned node.
processes.Process.die_with_parent = True


@pytest.fixture(scope='module', autouse=True)
def no_process_outlives_its_module():
    """
    Stop every process a test module left running, and fail the module for it.

    Set up before the module's other fixtures, so it ends after all of them:
    what still runs then was started by a test or fixture that failed to
    stop it (a constructor that raised half way, a missing finally).
    """
    yield
    left = processes.stop_still_running()
    if left:
        pytest.fail('processes left running by this module (now stopped): ' + ', '.join(
            f'{process.name} pid {process.pid}' for process in left))


# The store's clock in core tests, so created_at is a known string.
FIXED_NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
FIXED_CREATED_AT = '2026-01-02T03:04:05Z'


def fixed_clock():
    return FIXED_NOW


@pytest.fixture
def db_path(tmp_path):
    """Return the path of a fresh SQLite file in the test's own directory."""
    return tmp_path / 'memory.sqlite3'


@pytest.fixture
def store(db_path):
    """Open a fresh MemoryStore on a real file, with the fixed clock."""
    from mira_memory.core.store import MemoryStore
    opened = MemoryStore.open(db_path, clock=fixed_clock)
    yield opened
    opened.close()


def _ros_missing_reason():
    try:
        import rclpy  # noqa: F401
        from mira_memory.srv import RecallMemory  # noqa: F401
    except ImportError as error:
        return f'the built ROS 2 environment is not active ({error}); run tools/test'
    return None


ROS_MISSING = _ros_missing_reason()


# The order files run in. tools/test hands whole files to the pytest-xdist
# workers (--dist loadfile: a module's fixtures build their big stores once)
# in collection order (--no-loadscope-reorder), a worker taking the next file
# when it runs low. A long file that starts near the end holds up the whole
# run, so the longest go first. Their length is measured, not written down:
# every run records the seconds each of its files took (setup, call and
# teardown of every test) in .work/test-seconds.json, merged into what
# earlier runs recorded, so the order follows the suite as it changes and a
# run of a few files refreshes just those. A file not recorded yet (new)
# goes first too: running a short one early costs nothing, starting a long
# one last costs its whole length. Files not recorded (all of them in a
# fresh clone) go by tier: the system tier (real processes, the long files)
# first, then the node tier, then the unit tier. A stale figure only makes
# the run less even, never different.
SECONDS_FILE = pathlib.Path(__file__).resolve().parents[1] / '.work' / 'test-seconds.json'
TIER_ORDER = ('test/system/', 'test/node/')
_seconds_this_run = {}


def _file_of(nodeid):
    return nodeid.split('::', 1)[0]


def _recorded_seconds():
    try:
        recorded = json.loads(SECONDS_FILE.read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _run_order(items):
    """Return a sort key per file: not yet measured first, by tier; then the longest."""
    files = list(dict.fromkeys(_file_of(item.nodeid) for item in items))
    seconds = _recorded_seconds()

    def key(file):
        if file in seconds:
            return (1, 0, -float(seconds[file]))
        tier = next((rank for rank, prefix in enumerate(TIER_ORDER) if file.startswith(prefix)),
                    len(TIER_ORDER))
        return (0, tier, 0.0)
    return {file: key(file) for file in files}


def pytest_runtest_logreport(report):
    # Under pytest-xdist the controller gets every worker's reports.
    file = _file_of(report.nodeid)
    _seconds_this_run[file] = _seconds_this_run.get(file, 0.0) + report.duration


def pytest_sessionfinish(session):
    """Stop what still runs (a session fixture's leak); record this run's seconds per file."""
    processes.stop_still_running()
    if not _seconds_this_run or hasattr(session.config, 'workerinput'):
        return
    seconds = {**_recorded_seconds(),
               **{file: round(value, 1) for file, value in _seconds_this_run.items()}}
    try:
        SECONDS_FILE.parent.mkdir(exist_ok=True)
        partial = SECONDS_FILE.with_name(f'{SECONDS_FILE.name}.{os.getpid()}')
        partial.write_text(json.dumps(seconds, indent=0, sort_keys=True), encoding='utf-8')
        # Whole or not at all, should two runs finish together.
        os.replace(partial, SECONDS_FILE)
    except OSError:
        pass  # a read-only checkout runs in the default order next time


def pytest_collection_modifyitems(config, items):
    """Run the longest files first; skip ROS tests, with the reason, without ROS."""
    order = _run_order(items)
    # sort() is stable: the tests of a file keep their order, files of one rank theirs.
    items.sort(key=lambda item: order[_file_of(item.nodeid)])
    if ROS_MISSING is None:
        return
    if os.environ.get('MIRA_REQUIRE_ROS') == '1':
        raise pytest.UsageError(f'MIRA_REQUIRE_ROS=1 but {ROS_MISSING}')
    skip = pytest.mark.skip(reason=ROS_MISSING)
    for item in items:
        if 'ros' in item.keywords:
            item.add_marker(skip)


LAUNCH_TESTS = pathlib.Path(__file__).parent / 'launch'


def pytest_ignore_collect(collection_path, config):
    """
    Collect the launch_testing files only when a run names test/launch.

    pytest.ini's python_files matches them, so `python -m pytest test/launch`
    runs them (launch_testing's pytest plugin); a run of the whole suite
    (tools/test, colcon's pytest target) leaves them to CMakeLists.txt's
    add_launch_test, and where launch_testing is absent they are not collected.
    """
    if not collection_path.name.endswith('_launch_test.py'):
        return None
    try:
        import launch_testing  # noqa: F401
    except ImportError:
        return True
    named = (pathlib.Path(arg.split('::')[0]).resolve() for arg in config.args)
    if any(path == LAUNCH_TESTS or LAUNCH_TESTS in path.parents for path in named):
        return None
    return True


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'ros: needs the built ROS 2 environment (real nodes over DDS)')


@pytest.fixture(scope='session', autouse=True)
def middleware_profile(tmp_path_factory):
    """
    Give every process the run starts the tests' Fast DDS profile.

    Set up before any test starts a process (helpers/middleware_profile.py
    says what it sets, and why); the profile's path, or None when the
    environment names a profile of its own.
    """
    from helpers import middleware_profile as profiles
    return profiles.use_for_every_process(tmp_path_factory.getbasetemp())


@pytest.fixture(scope='module')
def ros():
    """
    Return a test client node in a private rclpy context, one per test module.

    A module's own DDS participant, not one per worker for the whole run: a
    participant that outlives a few hundred node processes (many of them
    killed) was seen, on Kilted, deaf to the endpoints of a process started
    later, and hung for minutes destroying a client. A fresh one per module
    costs a participant's start-up, and bounds what a module inherits.
    """
    from helpers.rosutil import RosClient
    client = RosClient()
    yield client
    client.close()


def _memory_node_name(namespace):
    from mira_memory.client import names
    return names.memory_node_name(namespace)


def _start_memory_node(started, directory, parameters=None, *, namespace=None,
                       wait_service='admin/status', ros=None, cwd=None, hold_copies=None):
    from helpers.rosutil import NodeProcess, unique_namespace
    namespace = namespace or unique_namespace()
    process = NodeProcess('memory_node', namespace=namespace, parameters=parameters,
                          directory=directory, cwd=cwd, hold_copies=hold_copies)
    process.namespace = namespace
    process.prefix = _memory_node_name(namespace)
    started.append(process)
    if ros is not None and wait_service:
        from helpers.memory_services import create_clients
        from mira_memory.client import names
        create_clients(ros, process.prefix)
        if not ros.wait_for_service(names.SERVICE_TYPES[wait_service],
                                    names.service_name(process.prefix, wait_service)):
            raise AssertionError(f'memory node did not come up:\n{process.output()}')
        # Both directions discovered before the test's first, maybe unrepeatable, call.
        ros.settle(names.SERVICE_TYPES[names.ADMIN_STATUS],
                   names.service_name(process.prefix, names.ADMIN_STATUS))
        process.ros = ros
    return process


def _stop_all(started):
    for process in started:
        if process.process.poll() is None:
            process.stop()
        if getattr(process, 'ros', None) is not None:
            process.ros.forget_clients(process.prefix)


@pytest.fixture
def memory_node(tmp_path):
    """Start real memory node processes; stop them (SIGINT) after the test."""
    started = []

    def start(parameters=None, *, namespace=None, wait_service='admin/status', ros=None,
              cwd=None, hold_copies=None):
        return _start_memory_node(started, tmp_path, parameters, namespace=namespace,
                                  wait_service=wait_service, ros=ros, cwd=cwd,
                                  hold_copies=hold_copies)

    yield start
    _stop_all(started)


@pytest.fixture
def console_memory():
    """
    Return a factory: for a node, a function that runs a console `memory` command.

    That function takes the command's words and returns (exit code, stdout,
    stderr). It runs in this process, through the console's own Session and
    run_command, exactly as `memory_console --memory-node <node> memory
    <words>` runs it, with one session (one DDS participant) per node for the
    test: a console process per command would cost about 0.4 CPU s for its
    imports and participant alone. The executable as a real process is
    tested in test/system/test_console_process.py.
    """
    from mira_memory.console import memory_console
    from helpers.rosutil import console_memory_command
    sessions = {}

    def for_node(node):
        def memory(*words):
            session = sessions.get(node.prefix)
            if session is None:
                session = sessions[node.prefix] = memory_console.Session(
                    ['memory_console'],
                    memory_console.Settings(memory_node=node.prefix, timeout=30.0))
            return console_memory_command(session, *words)
        return memory

    yield for_node
    for session in sessions.values():
        session.close()


@pytest.fixture(scope='module')
def module_memory_node(tmp_path_factory):
    """Like memory_node, for processes that a whole test module shares."""
    directory = tmp_path_factory.mktemp('memory_node')
    started = []

    def start(parameters=None, *, namespace=None, wait_service='admin/status', ros=None,
              cwd=None):
        return _start_memory_node(started, directory, parameters, namespace=namespace,
                                  wait_service=wait_service, ros=ros, cwd=cwd)

    start.directory = directory
    yield start
    _stop_all(started)


@pytest.fixture(scope='module')
def shared_memory_node(ros, module_memory_node):
    """
    One enabled memory node for a whole test module, on its own database.

    Tests that share it must not depend on what the others wrote: they use
    names of their own and compare counts before and after.
    """
    database_path = module_memory_node.directory / 'shared' / 'memory.sqlite3'
    process = module_memory_node(
        {'enabled': True, 'database_path': str(database_path), 'robot_profile': 'Mira'},
        ros=ros)
    process.database_path = database_path
    return process
