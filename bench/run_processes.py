# SPDX-License-Identifier: Apache-2.0
"""
The processes and working copies of one benchmark run, and how they stop.

Run owns the runner's own rclpy client node and every process and
directory the run started, so one close() removes them all; the timeouts
here are those of every bench call, start and stop.
"""

import os
import pathlib
import shutil
import signal
import tempfile

from mira_memory.simulation import processes
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

BENCH_DIR = pathlib.Path(__file__).resolve().parent
CALL_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
WORK_PREFIX = 'mira_bench_'


class Run:
    """Everything one benchmark run started, so it can all be stopped and removed."""

    def __init__(self, settings):
        self.settings = settings
        self.processes = []
        self.directories = []
        self.remove_abandoned_work_directories()
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('mira_bench_client_%d' % os.getpid(), context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def work_directory(self, label):
        """Return a new private directory for one store's working copy and logs."""
        path = pathlib.Path(tempfile.mkdtemp(prefix='%s%d_%s_' % (
            WORK_PREFIX, os.getpid(), label)))
        self.directories.append(path)
        return path

    @staticmethod
    def remove_abandoned_work_directories():
        """Remove working copies left by runs that were killed (their runner is gone)."""
        for path in pathlib.Path(tempfile.gettempdir()).glob(WORK_PREFIX + '*_*'):
            runner = path.name[len(WORK_PREFIX):].split('_', 1)[0]
            if runner.isdigit() and not pathlib.Path('/proc', runner).exists():
                shutil.rmtree(path, ignore_errors=True)

    def spawn(self, command, log_path, env=None, **kwargs):
        """Start a process (the package's harness) that close() will stop if still running."""
        process = processes.Process(command, log_path, env=env, append=True, **kwargs)
        self.processes.append(process)
        return process

    def close(self):
        """Stop every process still running, remove working copies, shut the client down."""
        # Newest first: load clients stop while the nodes they call still answer.
        for process in reversed(self.processes):
            stop_process(process)
        for path in self.directories:
            shutil.rmtree(path, ignore_errors=True)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def stop_process(process):
    """SIGTERM (a clean node shutdown), then SIGKILL if it does not exit; return the exit code."""
    # Not SIGINT: processes started from a background job inherit it ignored.
    return process.stop(first=signal.SIGTERM, timeout=STOP_TIMEOUT_S)
