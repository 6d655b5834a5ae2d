# SPDX-License-Identifier: Apache-2.0
"""
A SIGINT that lands inside a finalizer stops a node quietly.

rclpy runs Task.__del__ after every callback; a SIGINT that arrives then
raises its KeyboardInterrupt inside that __del__, where Python can only drop
it and print "Exception ignored in ..." with a traceback (seen once in CI, in
the lifecycle node's stop log). rclpy's own handler has already begun the
stop, so node_runner drops exactly that exception. Real process: a probe
node whose finalizer sends itself SIGINT and waits for it there.
"""

import os
import subprocess
import sys
import types

import pytest

pytestmark = pytest.mark.ros

PROBE = """
import os
import signal
import time

import rclpy.node


class SignalInFinalizer:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        # Python runs the handler here, inside __del__, at the next bytecode.
        for _ in range(100):
            time.sleep(0.05)


class ProbeNode(rclpy.node.Node):
    def __init__(self):
        super().__init__('finalizer_probe')
        self.timer = self.create_timer(0.05, self.once)

    def once(self):
        self.timer.cancel()
        print('interrupting from a finalizer', flush=True)
        SignalInFinalizer()  # dropped at once: __del__ runs in this callback


def main():
    from mira_memory.ros import node_runner
    return node_runner.run(ProbeNode, 'finalizer_probe')
"""


def test_a_sigint_inside_a_finalizer_stops_the_node_without_a_traceback(tmp_path):
    (tmp_path / 'finalizer_probe.py').write_text(PROBE, encoding='utf-8')
    start = ('from mira_memory.ros import node_runner\n'
             'raise SystemExit(node_runner.start("finalizer_probe"))\n')
    result = subprocess.run([sys.executable, '-c', start], cwd=tmp_path,
                            env={**os.environ, 'PYTHONPATH': os.pathsep.join(
                                filter(None, (str(tmp_path), os.environ.get('PYTHONPATH'))))},
                            capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    assert 'interrupting from a finalizer' in output
    assert (result.returncode, 'Traceback' in output, 'Exception ignored' in output) == (
        0, False, False), output


def test_only_a_keyboard_interrupt_is_dropped_every_other_unraisable_goes_on():
    from mira_memory.ros import node_runner
    seen = []
    hook = node_runner.quiet_interrupts_in_finalizers(seen.append)
    interrupt = types.SimpleNamespace(exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt())
    failure = types.SimpleNamespace(exc_type=ValueError, exc_value=ValueError('a real bug'))

    hook(interrupt)
    hook(failure)

    assert seen == [failure]
