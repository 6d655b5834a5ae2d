# SPDX-License-Identifier: Apache-2.0
"""
Publishes a node's health on /diagnostics once a second.

A small stand-in for diagnostic_updater (not on the package registries the
standalone environment uses), with the same output shape, so
diagnostic_aggregator and rqt_robot_monitor treat it like any other: one
diagnostic_msgs/DiagnosticStatus per period on the absolute topic
/diagnostics, named "<node name>: <task>", hardware_id the thing it
describes (here the database path), values as key/value strings.
"""

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from mira_memory.core import health
from mira_memory.wire import DIAGNOSTICS_DEPTH, DIAGNOSTICS_TOPIC

PERIOD_SEC = 1.0

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
    """Publishes report() of one task of node on /diagnostics every PERIOD_SEC."""

    def __init__(self, node, task, hardware_id, report, period_sec=PERIOD_SEC):
        self._node = node
        self._name = f'{node.get_name()}: {task}'
        self._hardware_id = hardware_id
        self._report = report
        self._publisher = node.create_publisher(
            DiagnosticArray, DIAGNOSTICS_TOPIC, DIAGNOSTICS_DEPTH)
        self._timer = node.create_timer(period_sec, self.publish)

    def publish(self):
        """Publish one DiagnosticArray now."""
        try:
            status = status_message(self._name, self._hardware_id, self._report())
        except Exception as error:  # a timer callback must not raise into the executor
            self._node.get_logger().error(
                f'diagnostics report failed: {error!r}', throttle_duration_sec=60.0)
            return
        array = DiagnosticArray()
        array.header.stamp = self._node.get_clock().now().to_msg()
        array.status = [status]
        self._publisher.publish(array)
