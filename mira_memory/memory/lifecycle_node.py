# SPDX-License-Identifier: Apache-2.0
"""
The managed memory node: memory/node.py's wiring behind the ROS 2 lifecycle.

`memory_lifecycle_node` serves what `memory_node` serves, under the same name
and parameters, as a managed node (lifecycle_msgs, `ros2 lifecycle`,
nav2_lifecycle_manager, launch_ros's lifecycle events), the way Nav2's
servers come up:

- construction: the parameters are declared and every service is created:
  recall_memory, remember and admin/*, plus the lifecycle services
  (~/change_state, ~/get_state, ...). Nothing is opened.
- configure: the parameters are read and checked, the file is claimed and
  the store opened and its schema checked, in MemoryServing._open_memory,
  the one place both nodes open it. A failure leaves the node unconfigured,
  says why on one ERROR line and has changed nothing on disk.
- activate: the calls are served.
- deactivate: every call gets its documented unavailable answer (recall
  `unavailable`, remember `backend_failure`, admin `unavailable`) and
  nothing is read or written; a backup, export or verify in flight is
  stopped (its goal ends, canceled, its partial file removed).
- cleanup: the store is closed and the file given up (another node may
  take it); shutdown does the same from any state, then the node is
  finalized and answers get_state until the process is stopped.

The node offers no bond (nav2_lifecycle_manager: bond_timeout 0.0). While
inactive it keeps hearing operator turns and reporting on /diagnostics
(level WARN, "lifecycle state" inactive); unconfigured or finalized it does
neither. Between configure and cleanup nothing else changes, so what a
plain memory node does, this one does while active.
"""

import dataclasses
import sys

from mira_memory.core.store import health
from mira_memory.memory.node import MemoryServing
from mira_memory.ros import node_runner
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

UNCONFIGURED, INACTIVE, ACTIVE, FINALIZED = 'unconfigured', 'inactive', 'active', 'finalized'


class LifecycleMemoryNode(MemoryServing, LifecycleNode):
    """The memory node as a managed (lifecycle) node."""

    def __init__(self, **kwargs):
        super().__init__('memory', **kwargs)
        self._state = UNCONFIGURED
        self._init_serving()
        self._declare_parameters()
        self._create_services(recall_and_remember=True)
        self.get_logger().info(
            'managed memory node unconfigured: configure and activate it '
            f'(ros2 lifecycle set {self.get_fully_qualified_name()} configure, then activate)')

    def _refusal(self):
        if self._state == ACTIVE:
            return None
        return f'the memory node is {self._state}: it serves only while active (lifecycle)'

    # Transitions ---------------------------------------------------------------

    def on_configure(self, state):
        try:
            self._open_memory()
        except node_runner.StartupError as error:
            self.get_logger().error(f'configure failed: {error}')
            return TransitionCallbackReturn.FAILURE
        except Exception as error:  # rclpy would swallow it without a word (errorprocessing)
            self.get_logger().error(f'configure failed unexpectedly: {error!r}')
            self._close_memory()
            return TransitionCallbackReturn.FAILURE
        self._state = INACTIVE
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        self._state = ACTIVE
        self._start_replication()
        self.get_logger().info('active: serving')
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state):
        self._state = INACTIVE
        # A backup, export or verify must not go on while inactive.
        self._copies.stop('the memory node was deactivated')
        if self._replication is not None:
            self._replication.stop()  # Litestream runs only while active
        self.get_logger().info('inactive: every call is refused until activated')
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state):
        self._close_memory('the memory node was cleaned up')
        self._state = UNCONFIGURED
        self.get_logger().info('cleaned up: the database is closed and its file given up')
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        self._close_memory('the memory node was shut down')
        self._state = FINALIZED
        self.get_logger().info(
            f'shut down from {state.label}: nothing is open; stop the process to end it')
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state):
        # A transition callback raised (rclpy's errorprocessing): give up
        # whatever was open and go back to unconfigured.
        self.get_logger().error(f'a transition from {state.label} failed; back to unconfigured')
        self._close_memory()
        self._state = UNCONFIGURED
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self):
        """Close the store (once), then destroy the node."""
        # node_runner calls this after spinning stopped, so no request is in flight.
        self._close_memory()
        self._destroy_actions()
        super().destroy_node()

    # Diagnostics ---------------------------------------------------------------

    def _diagnostic_report(self):
        report = super()._diagnostic_report()
        values = report.values + (('lifecycle state', self._state),)
        if self._state == ACTIVE or report.level == health.LEVEL_ERROR:
            return dataclasses.replace(report, values=values)
        return dataclasses.replace(
            report, level=health.LEVEL_WARN, values=values,
            message='inactive: every call is refused until the node is activated')


def main(args=None):
    """Run the managed memory node until SIGINT/SIGTERM; exit 1 if it cannot be built."""
    return node_runner.run(LifecycleMemoryNode, 'memory', args)


if __name__ == '__main__':
    sys.exit(main())
