# SPDX-License-Identifier: Apache-2.0
"""
A SIGINT or SIGTERM that lands inside a finalizer stops a node quietly.

rclpy runs Task.__del__ after every callback; a SIGINT that arrives then
raises its KeyboardInterrupt inside that __del__, where Python can only drop
it and print "Exception ignored in ..." with a traceback (seen once in CI, in
the lifecycle node's stop log). node_runner keeps exactly that exception
out of the log and raises it again from a callback of the node, outside
the finalizer (SIGTERM raises the same KeyboardInterrupt: node_runner's
docstring says why). Real process: a probe node whose finalizer sends
itself the signal and waits for it there.

The same interrupt raised in Python code that rclpy's C++ calls comes out of
the spin as another error (SystemError, RuntimeError); after a stop signal
that is a clean stop too, and without one it stays a failure.
"""

import os
import pathlib
import sqlite3
import subprocess
import sys
import time
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
        if 'SIGNAL' == 'none':
            # An interrupt lost in a finalizer while rclpy's context stays
            # valid: only node_runner's second interrupt can end the spin.
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGNAL)
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


# What rclpy's C++ does with a KeyboardInterrupt raised in Python code it
# calls (send_cancel_response's warning, take_result_request's conversion):
# it fails with another error, the interrupt as its cause (seen on Kilted).
INSIDE_RCLPY_PROBE = """
import os
import signal
import time

import rclpy.node


class ProbeNode(rclpy.node.Node):
    def __init__(self):
        super().__init__('inside_rclpy_probe')
        self.timer = self.create_timer(0.05, self.once)

    def once(self):
        self.timer.cancel()
        print('interrupting inside rclpy', flush=True)
        if 'SIGNAL' == 'none':
            raise SystemError('send_cancel_response returned a result with an exception set')
        try:
            os.kill(os.getpid(), signal.SIGNAL)
            time.sleep(5)
        except KeyboardInterrupt as interrupt:
            raise SystemError('send_cancel_response returned a result with an exception set'
                              ) from interrupt


def main():
    from mira_memory.ros import node_runner
    return node_runner.run(ProbeNode, 'inside_rclpy_probe')
"""


def run_probe(tmp_path, name, source):
    """Run the probe module through node_runner.start, as an installed executable; return it."""
    (tmp_path / f'{name}.py').write_text(source, encoding='utf-8')
    start = ('from mira_memory.ros import node_runner\n'
             f'raise SystemExit(node_runner.start("{name}"))\n')
    return subprocess.run([sys.executable, '-c', start], cwd=tmp_path,
                          env={**os.environ, 'PYTHONPATH': os.pathsep.join(
                              filter(None, (str(tmp_path), os.environ.get('PYTHONPATH'))))},
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize('sent', ['SIGINT', 'SIGTERM', 'none'])
def test_a_signal_inside_a_finalizer_stops_the_node_without_a_traceback(tmp_path, sent):
    result = run_probe(tmp_path, 'finalizer_probe', PROBE.replace('SIGNAL', sent))
    output = result.stdout + result.stderr
    assert 'interrupting from a finalizer' in output
    assert (result.returncode, 'Traceback' in output, 'Exception ignored' in output) == (
        0, False, False), output


@pytest.mark.parametrize('sent', ['SIGINT', 'SIGTERM'])
def test_a_stop_signal_that_rclpy_turned_into_another_error_is_a_clean_stop(tmp_path, sent):
    result = run_probe(tmp_path, 'inside_rclpy_probe', INSIDE_RCLPY_PROBE.replace('SIGNAL', sent))
    output = result.stdout + result.stderr
    assert 'interrupting inside rclpy' in output
    assert (result.returncode, 'Traceback' in output) == (0, False), output


def test_that_error_without_a_stop_signal_is_still_a_failure(tmp_path):
    probe = INSIDE_RCLPY_PROBE.replace('SIGNAL', 'none')
    result = run_probe(tmp_path, 'inside_rclpy_probe', probe)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert 'SystemError: send_cancel_response returned a result with an exception set' in output


# An executable's module whose import runs a finalizer that gets SIGINT, as
# importlib's module-lock callback did (a node started with SIGINT ignored,
# stopped while it loaded; Kilted, loaded): the interrupt is dropped there.
WHILE_LOADING_PROBE = """
import os
import signal
import time


class SignalInFinalizer:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        # Python runs the handler here, inside __del__, at the next bytecode.
        for _ in range(100):
            time.sleep(0.05)


SignalInFinalizer()  # dropped at once: __del__ runs while the module loads


def main():
    print('the node ran', flush=True)
    return 3
"""


def test_a_sigint_dropped_in_a_finalizer_while_the_modules_load_still_stops_the_start(tmp_path):
    result = run_probe(tmp_path, 'while_loading_probe', WHILE_LOADING_PROBE)
    assert (result.returncode, result.stdout, result.stderr) == (0, '', '')


AFTER_THE_SPIN_PROBE = """
import os
import signal
import time

from mira_memory.ros import node_runner

node_runner.stop_on_signals()


def signal_and_wait():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)


try:
    node_runner._until_stopped(signal_and_wait)
    print('the signal during the spin did not raise')
except KeyboardInterrupt:
    print('raised during the spin')
# The spin has ended: the cleanup runs, and a stop signal arrives then (or
# one rclpy already acted on is handled by Python only now).
os.kill(os.getpid(), signal.SIGINT)
time.sleep(0.2)
signal.signal(signal.SIGINT, signal.SIG_IGN)
print('cleanup done', node_runner.stop_signal_received())
"""


def test_a_stop_signal_after_the_spin_ended_does_not_cut_the_cleanup_short():
    # The race seen once in CI (Jazzy, exit -2): rclpy ended the spin, and
    # Python's handler of the same SIGINT ran only in the cleanup.
    result = subprocess.run([sys.executable, '-c', AFTER_THE_SPIN_PROBE], capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stdout) == (
        0, 'raised during the spin\ncleanup done True\n'), result.stderr


def test_only_a_keyboard_interrupt_is_raised_again_every_other_unraisable_goes_on():
    from mira_memory.ros import node_runner
    seen, again = [], []
    hook = node_runner.quiet_interrupts_in_finalizers(
        seen.append, interrupt_again=lambda: again.append('interrupt'))
    interrupt = types.SimpleNamespace(exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt())
    failure = types.SimpleNamespace(exc_type=ValueError, exc_value=ValueError('a real bug'))

    hook(interrupt)
    hook(failure)

    assert (seen, again) == ([failure], ['interrupt'])


WAITING_IN_RCL_PROBE = """
import os
import signal
import threading

from mira_memory.ros import node_runner
import rclpy
import rclpy.node

node_runner.init_ros()
node = rclpy.node.Node('waiting_probe')  # no timer: nothing else wakes the executor
interrupt_again = node_runner.InterruptAgain()
wakeup = node_runner._wake_on_stop_signals(interrupt_again, node)
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGNAL)).start()
try:
    rclpy.spin(node)
    print('the spin ended by itself')
except KeyboardInterrupt:
    print('KeyboardInterrupt')
wakeup.close()
node.destroy_node()
rclpy.try_shutdown()
"""


@pytest.mark.parametrize('sent', ['SIGINT', 'SIGTERM'])
def test_a_stop_signal_ends_a_spin_that_waits_inside_rcl(sent):
    # The main thread waits in rcl_wait with the GIL released, and rclpy has
    # no signal handler of its own: only StopSignalWakeup ends that wait.
    result = subprocess.run([sys.executable, '-c', WAITING_IN_RCL_PROBE.replace('SIGNAL', sent)],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, 'KeyboardInterrupt\n'), result.stderr


STUCK_CLEANUP_PROBE = """
import os
import signal
import threading
import time

from mira_memory.ros import node_runner
import rclpy.node

node_runner.SHUTDOWN_DEADLINE_SEC = 1.0


class ProbeNode(rclpy.node.Node):
    def __init__(self):
        super().__init__('stuck_cleanup_probe')
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()

    def release_resources(self):
        print('cleanup stuck', flush=True)
        time.sleep(60)  # a store or a child process that does not let go


def main():
    return node_runner.run(ProbeNode, 'stuck_cleanup_probe')
"""


def test_a_cleanup_that_does_not_end_is_cut_at_the_deadline_with_the_stacks(tmp_path):
    started = time.monotonic()
    result = run_probe(tmp_path, 'stuck_cleanup_probe', STUCK_CLEANUP_PROBE)
    output = result.stdout + result.stderr
    assert result.returncode == 1 and time.monotonic() - started < 30, output
    assert 'cleanup stuck' in output and 'Timeout (0:00:01)!' in output, output
    assert 'in release_resources' in output, output


STUCK_MIDDLEWARE_PROBE = """
import os
import signal
import threading
import time

from mira_memory.memory.node import MemoryNode
from mira_memory.ros import node_runner
import rclpy.node

node_runner.MIDDLEWARE_RELEASE_SEC = 1.0


def destroy_for_good(node):
    time.sleep(60)  # as the middleware once waited, inside rcl_node_fini


rclpy.node.Node.destroy_node = destroy_for_good


class StartedMemoryNode(MemoryNode):
    def __init__(self):
        super().__init__()
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()


def main():
    return node_runner.run(StartedMemoryNode, 'memory', [
        '--ros-args', '-r', '__ns:=/NAMESPACE', '-p', 'enabled:=true',
        '-p', 'database_path:=DATABASE'])
"""


def test_a_memory_node_whose_middleware_does_not_let_go_exits_0_with_its_store_closed(tmp_path):
    database = tmp_path / 'memory.sqlite3'
    source = (STUCK_MIDDLEWARE_PROBE.replace('NAMESPACE', f'stuck_middleware_{os.getpid()}')
              .replace('DATABASE', str(database)))
    started = time.monotonic()
    result = run_probe(tmp_path, 'stuck_middleware_probe', source)
    output = result.stdout + result.stderr
    # Without the bound the cleanup deadline (30 s) cut it: exit 1 and the stacks.
    assert result.returncode == 0 and time.monotonic() - started < 20, output
    assert 'the middleware did not destroy the node within 1 s of its stop' in output, output
    assert 'it waits in destroy_for_good' in output and 'Timeout' not in output, output
    # The store was closed before: SQLite removes the -wal of its last connection.
    assert database.exists() and not pathlib.Path(f'{database}-wal').exists(), output
    with sqlite3.connect(database) as connection:
        assert connection.execute('PRAGMA integrity_check').fetchone() == ('ok',)
