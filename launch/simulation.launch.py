# SPDX-License-Identifier: Apache-2.0
"""
The simulation: memory node, cognition, attention, perception, seed step, operator source.

    ros2 launch mira_memory simulation.launch.py
    ros2 launch mira_memory simulation.launch.py database_path:=/tmp/mira.sqlite3

The nodes, their names and parameters come from mira_memory.simulation.nodes, the
same description the demo and the CI tests start as processes. By default
the database is a new file in a fresh temporary directory, so every launch
starts empty; pass database_path to keep memory across launches. The
operator source starts when the seed step (admin enclave) has exited 0.
When the memory node or the seed step fails, the whole launch stops and
`ros2 launch` exits 1, as the bringup does.
"""

import os
import tempfile

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from mira_memory.ros import launching
from mira_memory.simulation import nodes as simulation


def _database_path(context):
    configured = LaunchConfiguration('database_path').perform(context)
    if not configured:
        # Made only when the nodes start, so --show-args or a given path leave
        # no empty temporary directory behind.
        return os.path.join(tempfile.mkdtemp(prefix='mira_simulation_'), 'memory.sqlite3')
    # Relative paths are refused, as in the bringup (the launch fails with this reason).
    return launching.absolute_database_path(configured)


def _use_sim_time(context):
    given = LaunchConfiguration('use_sim_time').perform(context).strip().lower()
    if given not in ('', 'true', 'false'):
        raise ValueError(f'launch argument use_sim_time must be true or false, not {given!r}')
    return None if not given else given == 'true'


def _nodes(context):
    specs = simulation.simulation_nodes(
        database_path=_database_path(context),
        scenario_file=LaunchConfiguration('scenario_file').perform(context),
        robot_profile=LaunchConfiguration('robot_profile').perform(context),
        namespace=LaunchConfiguration('namespace').perform(context),
        use_sim_time=_use_sim_time(context))
    nodes = {spec.name: simulation.launch_node(spec, output='screen') for spec in specs}
    # The operator source starts once the seed step has exited 0.
    actions = [nodes[spec.name] if not spec.after else
               launching.start_after_success(nodes[spec.after], nodes[spec.name])
               for spec in specs]
    # As in the bringup: a memory node that fails ends the launch with exit 1.
    memory_node = nodes[simulation.MEMORY_NODE]
    return [*actions, launching.stop_launch_on_failure(memory_node)]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            'robot_profile', default_value=simulation.DEFAULT_ROBOT_PROFILE,
            description='Robot profile name: the entity that you/your/yours/yourself '
                        'denote in remember (the scenario seeds it).'),
        DeclareLaunchArgument(
            'database_path', default_value='',
            description='Absolute path of the SQLite file of the memory node (relative '
                        'paths are refused). Empty (the default): a new file in a fresh '
                        'temporary directory, so every launch starts empty.'),
        DeclareLaunchArgument(
            'scenario_file', default_value=simulation.default_scenario_file(),
            description='Scenario TOML file: seed, operator turns, scripted model, '
                        'observations and attention triggers.'),
        DeclareLaunchArgument(
            'namespace', default_value=simulation.DEFAULT_NAMESPACE,
            description='Namespace of every simulation node (memory node at '
                        '<namespace>/memory).'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='',
            description='true: every node follows /clock. Empty (the default): not set, '
                        'so the nodes use the system clock.'),
        OpaqueFunction(function=_nodes),
    ])
