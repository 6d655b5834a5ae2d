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
import subprocess
import time

import pytest
from rosutil import executable, unique_namespace

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
    log_path = tmp_path / 'memory_node.log'
    with open(log_path, 'w') as log:
        # As a non-interactive shell starts a background job: SIGINT ignored.
        process = subprocess.Popen(
            ['sh', '-c', 'trap "" INT; exec "$0" "$@"', executable('memory_node'),
             '--ros-args', '-r', f'__ns:={unique_namespace("sig")}', '-p', 'enabled:=true',
             '-p', f'database_path:={tmp_path / "memory.sqlite3"}'],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + LOAD_TIMEOUT
        # First the shell sets the ignore and execs Python (through env).
        while 'python' not in _program(process.pid):
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, 'Python never started'
            time.sleep(0.001)
        while _sigint_ignored(process.pid):
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, 'SIGINT stayed ignored'
            time.sleep(0.001)
        maps = pathlib.Path(f'/proc/{process.pid}/maps').read_text()
        assert RCLPY_LIBRARY not in maps, 'SIGINT was ignored until rclpy was loaded'
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=EXIT_TIMEOUT) == 0, log_path.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = log_path.read_text()
    assert 'Traceback' not in output
    assert 'persistent memory enabled' not in output
