# SPDX-License-Identifier: Apache-2.0
"""
The node tier: memory nodes built in the test process (test/helpers/inprocess.py).

These fixtures replace the root conftest's real-process ones under the same
names: ros is a client on the tier's one private rclpy Context, and
memory_node, module_memory_node and shared_memory_node start InProcessNodes
on that Context, each under a namespace of its own, with a real SQLite file.
"""

import pytest


@pytest.fixture(scope='session')
def node_context():
    """Return the tier's private rclpy Context (one DDS participant per test worker)."""
    import rclpy
    from rclpy.context import Context
    context = Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture(scope='session')
def ros(node_context):
    """Return a test client node on the tier's Context (the nodes' own participant)."""
    from helpers.rosutil import RosClient
    client = RosClient(context=node_context)
    yield client
    client.close()


def _start(started, context, parameters=None, *, namespace=None, wait_service='admin/status',
           ros=None, cwd=None):
    from helpers.inprocess import InProcessNode
    node = InProcessNode(context, parameters, namespace=namespace, cwd=cwd)
    started.append((node, ros))
    if ros is not None and wait_service:
        from mira_memory.client import names
        status = names.service_name(node.prefix, names.ADMIN_STATUS)
        if not ros.wait_for_service(names.SERVICE_TYPES[names.ADMIN_STATUS], status):
            raise AssertionError(f'{status} is not in the graph')
        node.ros = ros
    return node


def _stop_all(started):
    failed = []
    for node, ros in reversed(started):
        if node.stop() != 0:
            failed.append(f'{node.prefix}: {node.failure!r}')
        if ros is not None:
            ros.forget_clients(node.prefix)
    # As a process's exit 1 would: a node that raised fails the test that ran it.
    assert not failed, failed


@pytest.fixture
def memory_node(node_context):
    """Start in-process memory nodes; stop them after the test."""
    started = []

    def start(parameters=None, **options):
        return _start(started, node_context, parameters, **options)

    yield start
    _stop_all(started)


@pytest.fixture(scope='module')
def module_memory_node(node_context, tmp_path_factory):
    """Like memory_node, for nodes that a whole test module shares."""
    started = []

    def start(parameters=None, **options):
        return _start(started, node_context, parameters, **options)

    start.directory = tmp_path_factory.mktemp('memory_node')
    yield start
    _stop_all(started)


@pytest.fixture(scope='module')
def shared_memory_node(ros, module_memory_node):
    """One enabled in-process memory node for a whole test module, on its own database."""
    database_path = module_memory_node.directory / 'shared' / 'memory.sqlite3'
    node = module_memory_node(
        {'enabled': True, 'database_path': str(database_path), 'robot_profile': 'Mira'},
        ros=ros)
    node.database_path = database_path
    return node
