# SPDX-License-Identifier: Apache-2.0
"""
Robot bringup: the memory node, /mira/memory by default.

    ros2 launch mira_memory bringup.launch.py
    ros2 launch mira_memory bringup.launch.py database_path:=/var/lib/mira/memory.sqlite3

Parameters come from params_file (config/memory.yaml by default) and then
from the launch arguments, which win. When the memory node exits with an
error (a database it cannot open, one another node owns), the whole launch
stops and `ros2 launch` exits 1 (mira_memory.ros.launching).
"""

import os
import pathlib

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from mira_memory.ros import launching


def default_database_path():
    """Return $ROS_HOME/mira_memory/memory.sqlite3 (ROS_HOME defaults to ~/.ros), absolute."""
    ros_home = os.environ.get('ROS_HOME') or os.path.join('~', '.ros')
    return str(pathlib.Path(ros_home).expanduser().absolute() / 'mira_memory' / 'memory.sqlite3')


def generate_launch_description():
    share = get_package_share_directory('mira_memory')
    arguments = [
        DeclareLaunchArgument(
            'namespace', default_value='/mira',
            description='Namespace of the memory node; its services are '
                        '<namespace>/memory/recall_memory, .../remember and .../admin/*.'),
        DeclareLaunchArgument(
            'robot_profile', default_value='Mira',
            description='Robot profile name: the persistent entity that '
                        'you/your/yours/yourself denote in remember.'),
        DeclareLaunchArgument(
            'database_path', default_value=default_database_path(),
            description='Absolute path of the SQLite file; a missing parent directory is '
                        'created. Default: $ROS_HOME/mira_memory/memory.sqlite3 '
                        '(ROS_HOME defaults to ~/.ros).'),
        DeclareLaunchArgument(
            'enabled', default_value='true',
            description='Open persistent memory (true/false). false: no database, no '
                        'directory, no recall or remember services.'),
        DeclareLaunchArgument(
            'log_level', default_value='info',
            description='Log level of the memory node (debug, info, warn, error, fatal).'),
        DeclareLaunchArgument(
            'params_file', default_value=os.path.join(share, 'config', 'memory.yaml'),
            description='ROS parameters file of the memory node, applied before the '
                        'launch arguments above (which win).'),
    ]
    memory_node = Node(
        package='mira_memory',
        executable='memory_node',
        name='memory',
        namespace=LaunchConfiguration('namespace'),
        parameters=[
            LaunchConfiguration('params_file'),
            {
                'enabled': ParameterValue(LaunchConfiguration('enabled'), value_type=bool),
                # Typed as strings so that a name such as "true" or "42" stays text.
                'database_path': ParameterValue(
                    LaunchConfiguration('database_path'), value_type=str),
                'robot_profile': ParameterValue(
                    LaunchConfiguration('robot_profile'), value_type=str),
            },
        ],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
        output='screen',
    )
    return LaunchDescription(
        [*arguments, memory_node, launching.stop_launch_on_failure(memory_node)])
