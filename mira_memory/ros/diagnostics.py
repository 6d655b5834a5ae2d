# SPDX-License-Identifier: Apache-2.0
"""
Publishes a node's health on /diagnostics, once a period (1 s by default).

A small stand-in for diagnostic_updater, which is not on the package
registries the standalone environment uses (PyPI has no diagnostic_updater
wheel), so one publisher serves both a ROS install and the standalone
environment. Its output follows diagnostic_updater's conventions, so
diagnostic_aggregator and rqt_robot_monitor treat it like any other: one
diagnostic_msgs/DiagnosticStatus per period on the absolute topic
/diagnostics, named "<fully qualified node name>: <task>" (two robots'
namespaces never collide), hardware_id the thing it describes (here the
database path; "none" when there is none), values as key/value strings.
config/diagnostics_analyzers.yaml groups it for diagnostic_aggregator.
"""

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from mira_memory.core.store import health
from mira_memory.wire import DIAGNOSTICS_DEPTH, DIAGNOSTICS_TOPIC

PERIOD_SEC = 1.0
MIN_PERIOD_SEC = 0.1
MAX_PERIOD_SEC = 60.0
# hardware_id when the task describes no hardware (diagnostic_updater's "none").
NO_HARDWARE = 'none'

_LEVELS = {
    health.LEVEL_OK: DiagnosticStatus.OK,
    health.LEVEL_WARN: DiagnosticStatus.WARN,
    health.LEVEL_ERROR: DiagnosticStatus.ERROR,
}


def status_message(name, hardware_id, report):
    """Return the DiagnosticStatus of one core health.Report."""
    status = DiagnosticStatus()
    status.level = _LEVELS[report.level]
    status.name = name
    status.message = report.message
    status.hardware_id = hardware_id
    status.values = [KeyValue(key=key, value=value) for key, value in report.values]
    return status


class DiagnosticsPublisher:
    """Publishes report() of one task of node on /diagnostics every period_sec."""

    def __init__(self, node, task, hardware_id, report, period_sec=PERIOD_SEC):
        if not MIN_PERIOD_SEC <= period_sec <= MAX_PERIOD_SEC:
            raise ValueError(f'the diagnostics period must be between {MIN_PERIOD_SEC} and '
                             f'{MAX_PERIOD_SEC} seconds')
        self._node = node
        self.name = f'{node.get_fully_qualified_name()}: {task}'
        self._hardware_id = hardware_id or NO_HARDWARE
        self._report = report
        self._publisher = node.create_publisher(
            DiagnosticArray, DIAGNOSTICS_TOPIC, DIAGNOSTICS_DEPTH)
        self._timer = node.create_timer(period_sec, self.publish)

    def destroy(self):
        """Stop publishing (the node may create another publisher later)."""
        self._node.destroy_timer(self._timer)
        self._node.destroy_publisher(self._publisher)

    def publish(self):
        """Publish one DiagnosticArray now."""
        try:
            status = status_message(self.name, self._hardware_id, self._report())
        except Exception as error:  # a timer callback must not raise into the executor
            self._node.get_logger().error(
                f'diagnostics report failed: {error!r}', throttle_duration_sec=60.0)
            return
        array = DiagnosticArray()
        array.header.stamp = self._node.get_clock().now().to_msg()
        array.status = [status]
        self._publisher.publish(array)
