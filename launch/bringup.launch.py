# SPDX-License-Identifier: Apache-2.0
"""
Robot bringup: the memory node, /mira/memory by default.

    ros2 launch mira_memory bringup.launch.py
    ros2 launch mira_memory bringup.launch.py database_path:=/var/lib/mira/memory.sqlite3
    ros2 launch mira_memory bringup.launch.py params_file:=/etc/mira/memory.yaml
    ros2 launch mira_memory bringup.launch.py lifecycle:=true
    ros2 launch mira_memory bringup.launch.py dds_profile:=/etc/mira/fastdds_discovery.xml

Parameters come from params_file (config/memory.yaml by default). A launch
argument that sets a parameter (enabled, database_path, robot_profile,
use_sim_time) overrides the file only when it is given; the bringup's own
defaults (enabled, $ROS_HOME/mira_memory/memory.sqlite3, robot profile Mira)
fill in only what the file leaves unset (mira_memory.ros.launching). When
the memory node exits with an error (a database it cannot open, one another
node owns), the whole launch stops and `ros2 launch` exits 1.

lifecycle:=true starts the managed memory_lifecycle_node instead and, with
autostart (the default), configures and activates it through launch_ros's
lifecycle events; a configure that fails then ends the launch with 1 too.
autostart:=false leaves it unconfigured for a lifecycle manager
(nav2_lifecycle_manager with bond_timeout 0.0) or `ros2 lifecycle set`.
"""

import os
import pathlib

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from mira_memory.ros import launching

NODE_NAME = 'memory'


def default_database_path():
    """Return $ROS_HOME/mira_memory/memory.sqlite3 (ROS_HOME defaults to ~/.ros), absolute."""
    ros_home = os.environ.get('ROS_HOME') or os.path.join('~', '.ros')
    return str(pathlib.Path(ros_home).expanduser().absolute() / 'mira_memory' / 'memory.sqlite3')


def bringup_defaults():
    """Return what the bringup sets when neither the params file nor an argument does."""
    return {'enabled': True, 'database_path': default_database_path(), 'robot_profile': 'Mira'}


def _memory_node(context):
    namespace = LaunchConfiguration('namespace').perform(context)
    node_name = f'{namespace.rstrip("/")}/{NODE_NAME}' if namespace.strip('/') else f'/{NODE_NAME}'
    given = {name: LaunchConfiguration(name).perform(context)
             for name in launching.OVERRIDABLE}
    parameters = launching.memory_node_parameters(
        LaunchConfiguration('params_file').perform(context), node_name, given,
        bringup_defaults())
    # Strings stay strings (launch_ros would read a name such as "true" or "42" as YAML).
    parameters[-1] = {name: ParameterValue(value, value_type=str) if isinstance(value, str)
                      else value for name, value in parameters[-1].items()}
    ros_arguments = ['--log-level', LaunchConfiguration('log_level').perform(context)]
    enclave = LaunchConfiguration('enclave').perform(context)
    if enclave:
        ros_arguments += ['--enclave', enclave]
    managed = launching.launch_flag('lifecycle', LaunchConfiguration('lifecycle').perform(context))
    dds_profile = launching.dds_profile_environment(
        LaunchConfiguration('dds_profile').perform(context))
    memory_node = (LifecycleNode if managed else Node)(
        package='mira_memory',
        executable='memory_lifecycle_node' if managed else 'memory_node',
        name=NODE_NAME,
        namespace=namespace,
        parameters=parameters,
        ros_arguments=ros_arguments,
        additional_env=dds_profile,
        output='screen',
    )
    actions = [memory_node, launching.stop_launch_on_failure(memory_node)]
    if managed and launching.launch_flag(
            'autostart', LaunchConfiguration('autostart').perform(context)):
        actions += launching.autostart(memory_node)
    return actions


def generate_launch_description():
    share = get_package_share_directory('mira_memory')
    arguments = [
        DeclareLaunchArgument(
            'namespace', default_value='/mira',
            description='Namespace of the memory node; its services are '
                        '<namespace>/memory/recall_memory, .../remember and .../admin/*.'),
        DeclareLaunchArgument(
            'params_file', default_value=os.path.join(share, 'config', 'memory.yaml'),
            description='ROS parameters file of the memory node. The launch arguments '
                        'below that set a parameter override it only when given.'),
        DeclareLaunchArgument(
            'robot_profile', default_value='',
            description='Robot profile name: the persistent entity that '
                        'you/your/yours/yourself denote in remember. Empty (the default): taken '
                        'from params_file; Mira when the file does not set it either.'),
        DeclareLaunchArgument(
            'database_path', default_value='',
            description='Absolute path of the SQLite file; a missing parent directory is '
                        'created (0700, the file 0600). Empty (the default): taken from '
                        'params_file; when the file leaves it empty too, '
                        '$ROS_HOME/mira_memory/memory.sqlite3 (ROS_HOME defaults to ~/.ros).'),
        DeclareLaunchArgument(
            'enabled', default_value='',
            description='Open persistent memory (true/false). false: no database, no '
                        'directory, no recall or remember services. Empty (the default): '
                        'taken from params_file; true when the file does not set it either.'),
        DeclareLaunchArgument(
            'use_sim_time', default_value='',
            description='true: the memory node follows /clock (simulation). Empty (the '
                        'default): taken from params_file.'),
        DeclareLaunchArgument(
            'log_level', default_value='info',
            description='Log level of the memory node (debug, info, warn, error, fatal).'),
        DeclareLaunchArgument(
            'enclave', default_value='',
            description='SROS2 enclave of the memory node, passed as --enclave: '
                        '<namespace>/memory of the policy memory_policy prints for the '
                        'namespace (/mira/memory; docs/trust.md). Empty: none.'),
        DeclareLaunchArgument(
            'dds_profile', default_value='',
            description='A Fast DDS profile for the memory node (sets the '
                        "FAST*_DEFAULT_PROFILES_FILE ROS_DISTRO's Fast DDS reads), such as "
                        'share/mira_memory/config/'
                        'dds/fastdds_discovery.xml: announcements every 0.2 s, so nodes that '
                        'start find it at once, for about 0.3% of a core (docs/launch.md). '
                        'Empty (the default): the environment decides.'),
        DeclareLaunchArgument(
            'lifecycle', default_value='false',
            description='true: run the managed memory_lifecycle_node (lifecycle_msgs '
                        'transitions, as Nav2 servers; it offers no bond) instead of '
                        'memory_node.'),
        DeclareLaunchArgument(
            'autostart', default_value='true',
            description='With lifecycle:=true: configure and activate the node at launch '
                        '(a failed configure ends the launch with 1). false: leave it '
                        'unconfigured for a lifecycle manager or ros2 lifecycle set.'),
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=_memory_node)])
