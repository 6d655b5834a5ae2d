# SPDX-License-Identifier: Apache-2.0
"""
What the launch files share: a failed memory node ends the launch; absolute paths.

Only stop_launch_on_failure() imports launch, so the rest is tested in the
standalone environment, where launch is not installed (it is not on PyPI).
"""

import os


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
