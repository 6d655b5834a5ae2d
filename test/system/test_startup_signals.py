# SPDX-License-Identifier: Apache-2.0
"""
SIGINT stops a node even while it is still loading, when started as a background job.

A shell script that starts a node with `&` (tools/chat does) hands it SIGINT
ignored. rclpy installs its handler only in rclpy.init, after the imports,
which take a second or more on a loaded machine; a SIGINT in between used to
be lost and the node ran on. node_runner.start() restores SIGINT first.
Real process, no timing: the test waits until SIGINT is no longer ignored
while rclpy is not loaded yet, which is the window that lost the signal.
"""

import pathlib
import signal
import time

from helpers.rosutil import executable, unique_namespace
from mira_memory.simulation import processes
import pytest

pytestmark = [
    pytest.mark.ros,
    pytest.mark.skipif(not pathlib.Path('/proc/self/status').exists(),
                       reason='reads the signal mask and mappings from Linux /proc'),
]

# Deadlines against a hang on a loaded machine, not timings.
LOAD_TIMEOUT = 60.0
EXIT_TIMEOUT = 30.0
RCLPY_LIBRARY = '_rclpy_pybind11'


def _program(pid):
    """Return the running program's argv[0]."""
    return pathlib.Path(f'/proc/{pid}/cmdline').read_bytes().split(b'\0')[0].decode()


def _sigint_ignored(pid):
    for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('SigIgn:'):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    raise AssertionError('no SigIgn line')


def test_sigint_while_loading_stops_a_node_started_with_sigint_ignored(tmp_path):
    # As a non-interactive shell starts a background job: SIGINT ignored.
    node = processes.Process(
        ['sh', '-c', 'trap "" INT; exec "$0" "$@"', executable('memory_node'),
         '--ros-args', '-r', f'__ns:={unique_namespace("sig")}', '-p', 'enabled:=true',
         '-p', f'database_path:={tmp_path / "memory.sqlite3"}'],
        tmp_path / 'memory_node.log', name='memory_node')
    try:
        deadline = time.monotonic() + LOAD_TIMEOUT
        # First the shell sets the ignore and execs Python (through env).
        while 'python' not in _program(node.pid):
            assert node.running(), node.describe('exited')
            assert time.monotonic() < deadline, 'Python never started'
            time.sleep(0.001)
        while _sigint_ignored(node.pid):
            assert node.running(), node.describe('exited')
            assert time.monotonic() < deadline, 'SIGINT stayed ignored'
            time.sleep(0.001)
        maps = pathlib.Path(f'/proc/{node.pid}/maps').read_text()
        assert RCLPY_LIBRARY not in maps, 'SIGINT was ignored until rclpy was loaded'
        # One SIGINT only: stop() ends the node for good if it does not stop on it.
        assert node.stop(timeout=EXIT_TIMEOUT) == 0, node.describe('stopped uncleanly')
        assert node.stopped_by == signal.SIGINT, node.describe('ignored SIGINT')
    finally:
        node.stop()
    output = node.output()
    assert 'Traceback' not in output
    assert 'persistent memory enabled' not in output
