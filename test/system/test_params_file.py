# SPDX-License-Identifier: Apache-2.0
"""
config/memory.yaml against the real memory node: every parameter, in docs/parameters.md's order.

And the params file works: a real node started with config/memory.yaml and
the bringup's layering takes the file's values, and a given launch
argument wins (the same parameters list the bringup hands launch_ros,
written as the --params-file files ros2 launch would pass).
"""

import pathlib
import re

from helpers.rosutil import NodeProcess, unique_namespace, write_params_file
from mira_memory import srv
from mira_memory.client import names
import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]
MEMORY_YAML = ROOT / 'config' / 'memory.yaml'


def declared_parameters():
    """Return the names of the parameters a real MemoryNode declares (disabled: no file)."""
    import rclpy
    from mira_memory.memory.node import MemoryNode
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = MemoryNode(context=context)
        try:
            return set(node._parameters)
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def parameters_table_order():
    """Return the memory node's parameters as docs/parameters.md lists them, use_sim_time last."""
    text = (ROOT / 'docs' / 'parameters.md').read_text()
    section = text[text.index('## `memory_node`'):]
    section = section[:section.index('\n## ', 1)]
    rows = re.findall(r'^\| `([a-z_]+)` \| `[^`]*` \|', section, re.MULTILINE)
    # use_sim_time is rclpy's own, not declared by the node: the file lists it last.
    return rows + ['use_sim_time']


def yaml_parameters():
    yaml = pytest.importorskip('yaml')
    return list(yaml.safe_load(MEMORY_YAML.read_text())['/**']['ros__parameters'])


# rclpy's own, set only on the command line by those who need it; use_sim_time,
# also rclpy's, is listed because simulations set it.
NOT_LISTED = {'start_type_description_service'}


def test_memory_yaml_lists_every_parameter_the_node_declares():
    assert set(yaml_parameters()) == declared_parameters() - NOT_LISTED


def test_memory_yaml_follows_the_parameters_page():
    assert yaml_parameters() == parameters_table_order()


def test_the_params_file_is_what_the_node_runs_with_unless_an_argument_is_given(ros, tmp_path):
    from mira_memory.ros import launching
    database = tmp_path / 'from_file' / 'memory.sqlite3'
    params = tmp_path / 'robot.yaml'
    params.write_text(f'/**:\n  ros__parameters:\n    enabled: true\n'
                      f'    database_path: {database}\n    robot_profile: FileBot\n')
    defaults = {'enabled': True, 'database_path': str(tmp_path / 'default.sqlite3'),
                'robot_profile': 'Mira'}
    not_given = dict.fromkeys(launching.OVERRIDABLE, '')
    cases = ((not_given, 'FileBot'), ({**not_given, 'robot_profile': 'ArgBot'}, 'ArgBot'))
    for given, profile in cases:
        namespace = unique_namespace('params')
        layers = launching.memory_node_parameters(
            str(params), names.memory_node_name(namespace), given, defaults)
        # The files ros2 launch passes, in order (launch_ros writes each dict to one).
        extra = ['--ros-args']
        for layer in filter(None, layers):
            path = layer if isinstance(layer, str) else write_params_file(tmp_path, layer)
            extra += ['--params-file', path]
        process = NodeProcess('memory_node', namespace=namespace, directory=tmp_path,
                              extra_args=extra)
        try:
            status = ros.call(srv.AdminStatus, names.service_name(
                names.memory_node_name(namespace), names.ADMIN_STATUS), timeout=60.0)
            assert (status.database_path, status.robot_profile) == (str(database), profile), \
                process.output()
        finally:
            assert process.stop() == 0, process.output()
            ros.forget_clients(names.memory_node_name(namespace))
