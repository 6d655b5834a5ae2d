# SPDX-License-Identifier: Apache-2.0
"""
What the launch files share: failure handling, paths, the memory node's parameters.

A failed memory node ends the launch; a managed memory node is brought up
through launch_ros's lifecycle events; database paths must be absolute; the
memory node's parameters come from a params file and launch arguments.

Only stop_launch_on_failure(), start_after_success() and autostart() import
launch, so the rest is tested in the standalone environment, where launch
is not installed (it is not on PyPI).
"""

import os
import re


class NodeFailed(RuntimeError):
    """A node the launch cannot run without exited with an error."""


def shut_down_on_failure(event, context):
    """
    End the launch with 1 when the watched node exited non-zero (an OnProcessExit callback).

    Raising is how a launch file makes `ros2 launch` itself fail: the launch
    service logs "Caught exception in launch ...: <message>" at ERROR,
    shuts every other process down (SIGINT) and returns 1, so a service
    manager sees the failure. A Shutdown action would stop the launch too,
    but `ros2 launch` would then exit 0.
    """
    if event.returncode != 0:
        raise NodeFailed(
            f'{event.process_name} exited with code {event.returncode} (its error is logged '
            'above); shutting the whole launch down')


def stop_launch_on_failure(node_action):
    """Return the action that ends the launch when node_action's process fails."""
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    return RegisterEventHandler(OnProcessExit(
        target_action=node_action, on_exit=shut_down_on_failure))


def configure_failed(context):
    """
    End the launch with 1: autostart's configure failed (an OpaqueFunction's function).

    The managed node stays up, unconfigured, and has said why on one ERROR
    line; a plain memory node that cannot open its database exits 1 and
    ends the launch, and the lifecycle mode ends it the same way.
    """
    raise NodeFailed('the memory node could not be configured (its error is logged above); '
                     'shutting the whole launch down')


def autostart(lifecycle_node):
    """
    Return the actions that configure, then activate, a launch_ros LifecycleNode.

    launch_ros's events, as its lifecycle examples use them: a ChangeState
    event requests configure as soon as the node runs; the OnStateTransition
    configuring -> inactive requests activate. Both handlers act once, so an
    operator's later cleanup and configure (ros2 lifecycle set) is left
    alone: a configure that fails during autostart ends the launch with 1
    (configure_failed), one that fails later does not.
    """
    from launch.actions import EmitEvent, OpaqueFunction, RegisterEventHandler
    from launch.actions import UnregisterEventHandler
    from launch.events import matches_action
    from launch_ros.event_handlers import OnStateTransition
    from launch_ros.events.lifecycle import ChangeState
    from lifecycle_msgs.msg import Transition

    def change_state(transition_id):
        return EmitEvent(event=ChangeState(
            lifecycle_node_matcher=matches_action(lifecycle_node), transition_id=transition_id))

    on_failure = RegisterEventHandler(OnStateTransition(
        target_lifecycle_node=lifecycle_node, start_state='configuring',
        goal_state='unconfigured', entities=[OpaqueFunction(function=configure_failed)]))
    on_configured = RegisterEventHandler(OnStateTransition(
        target_lifecycle_node=lifecycle_node, start_state='configuring', goal_state='inactive',
        entities=[UnregisterEventHandler(on_failure.event_handler),
                  change_state(Transition.TRANSITION_ACTIVATE)],
        handle_once=True))
    return [on_failure, on_configured, change_state(Transition.TRANSITION_CONFIGURE)]


def launch_flag(name, text):
    """Return the launch argument name's true/false value as a bool; refuse anything else."""
    return _typed(name, text, bool)


def start_after_success(prerequisite, node_action):
    """
    Return the action that starts node_action once prerequisite's process exited 0.

    A one-shot prerequisite (the simulation's seed step) that fails ends the
    launch with exit 1 instead, as a failed memory node does.
    """
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit

    def on_exit(event, context):
        shut_down_on_failure(event, context)
        return [node_action]
    return RegisterEventHandler(OnProcessExit(target_action=prerequisite, on_exit=on_exit))


def absolute_database_path(configured):
    """
    Return the launch argument database_path, ~ expanded; refuse a relative path.

    A relative path would resolve against the working directory of
    `ros2 launch`, wherever that happens to be: the memory node refuses it
    too, and the launch file says so before starting anything.
    """
    path = os.path.expanduser(configured)
    if not os.path.isabs(path):
        raise ValueError(
            'database_path must be an absolute path (a relative path would resolve '
            'against the working directory of ros2 launch)')
    return path


# The memory-node launch arguments of the bringup that set a parameter, with
# the parameter's type. Each is empty by default, meaning "not given".
OVERRIDABLE = {'enabled': bool, 'database_path': str, 'robot_profile': str,
               'use_sim_time': bool}


def _pattern(key):
    """Return the regular expression of a params-file node key ('/**', '/mira/memory', ...)."""
    key = key if key.startswith('/') else f'/{key}'
    parts = []
    for token in re.split(r'(/\*\*|\*)', key):
        if token == '/**':
            parts.append('(?:/[^/]+)*')
        elif token == '*':
            parts.append('[^/]*')
        else:
            parts.append(re.escape(token))
    return re.compile(''.join(parts))


def _node_sections(document, prefix=''):
    """Yield (node key, parameters) of a params-file document, namespaces nested or joined."""
    if not isinstance(document, dict):
        return
    for key, value in document.items():
        if not isinstance(value, dict):
            continue
        name = f'{prefix}/{str(key).strip("/")}' if prefix else str(key)
        if isinstance(value.get('ros__parameters'), dict):
            yield name, value['ros__parameters']
        else:
            yield from _node_sections(value, name)


def params_file_values(params_file, node_name):
    """
    Return {parameter: value} that params_file sets for the node node_name (/ns/name).

    Sections are matched like rcl does (a fully qualified name, '/**' for any
    namespaces, '*' for one name); a later section wins. A file that cannot
    be read or parsed gives {}: the node reports it itself, on one line.
    """
    import yaml
    try:
        with open(params_file, encoding='utf-8') as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return {}
    values = {}
    for key, parameters in _node_sections(document):
        if _pattern(key).fullmatch(node_name):
            values.update(parameters)
    return values


def _typed(name, text, kind):
    if kind is bool:
        lowered = text.strip().lower()
        if lowered not in ('true', 'false'):
            raise ValueError(f'launch argument {name} must be true or false, not {text!r}')
        return lowered == 'true'
    return text


def memory_node_parameters(params_file, node_name, given, defaults):
    """
    Return the memory node's `parameters` list for launch_ros: the params file, then overrides.

    Precedence, highest first: a launch argument that was given (non-empty
    in given), the params file, then the bringup's defaults. A default is
    passed only for a parameter the params file does not set (an empty
    database_path counts as not set: enabled memory needs a path), so the
    file decides everything the launch command line leaves alone.
    """
    from_file = params_file_values(params_file, node_name) if params_file else {}
    overrides = {}
    for name, value in defaults.items():
        if name not in from_file or (name == 'database_path' and not from_file[name]):
            overrides[name] = value
    for name, kind in OVERRIDABLE.items():
        text = given.get(name, '')
        if text != '':
            overrides[name] = _typed(name, text, kind)
    return ([params_file] if params_file else []) + [overrides]


# Where Fast DDS looks for its XML profile: Fast DDS 2 (Humble, Jazzy) reads
# FASTRTPS_DEFAULT_PROFILES_FILE, Fast DDS 3 (Kilted on) reads
# FASTDDS_DEFAULT_PROFILES_FILE. Only one may be set: Kilted's rmw still
# reads the old name too (deprecated, with a warning), and a profile given
# under both is loaded twice, which Fast DDS refuses with an XMLPARSER error.
DDS_PROFILE_VARIABLES = ('FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE')
FAST_DDS_2_DISTROS = ('humble', 'iron', 'jazzy')


def dds_profile_environment(profile, distro=None):
    """
    Return the environment that gives a process the Fast DDS profile at profile.

    The variable the distro's Fast DDS reads (distro: ROS_DISTRO by
    default); none when profile is empty (the process keeps whatever its
    environment says).
    """
    if not profile:
        return {}
    distro = os.environ.get('ROS_DISTRO', '') if distro is None else distro
    return {DDS_PROFILE_VARIABLES[0 if distro in FAST_DDS_2_DISTROS else 1]: profile}
