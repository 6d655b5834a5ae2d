# SPDX-License-Identifier: Apache-2.0
"""Read the memory node's /diagnostics statuses in a test."""

import time


def diagnostics(ros, hardware_id, until, timeout=30.0):
    """Return the first /diagnostics status for hardware_id that until(status) accepts."""
    from diagnostic_msgs.msg import DiagnosticArray
    seen = []
    subscription = ros.node.create_subscription(
        DiagnosticArray, '/diagnostics',
        lambda array: seen.extend(s for s in array.status if s.hardware_id == hardware_id), 10)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ros.spin_for(0.2)
            for status in seen:
                if until(status):
                    return status
        raise AssertionError(f'no matching /diagnostics status for {hardware_id}: {seen[-1:]}')
    finally:
        ros.node.destroy_subscription(subscription)


def values(status):
    """Return a status's values as {key: value}."""
    return {pair.key: pair.value for pair in status.values}
