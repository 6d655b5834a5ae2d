# SPDX-License-Identifier: Apache-2.0
"""
The memory node in the test process: the node tier's harness (test/node/).

InProcessNode builds memory/node.py's MemoryNode on the tier's shared private
rclpy Context, with its parameters as overrides (typed by their values, as
a params file types them), and spins it on its own SingleThreadedExecutor
in a thread, as node_runner.run spins the real process. The tests' RosClient
lives on the same Context, so clients and services match inside one DDS
participant: no discovery between processes, no lost first replies. A node
that cannot start raises node_runner.StartupError from start(); what the
installed executable makes of that (one log line, exit 1) is tested once per
executable in test/system/.
"""

import contextlib
import gc
import os
import threading
import time

from helpers.rosutil import unique_namespace
from mira_memory.client import names


class InProcessNode:
    """One MemoryNode spinning in a thread of the test process."""

    def __init__(self, context, parameters=None, *, namespace=None, cwd=None,
                 node_class=None):
        from mira_memory.memory.node import MemoryNode
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.parameter import Parameter
        self.namespace = namespace or unique_namespace('n')
        self.prefix = names.memory_node_name(self.namespace)
        self.context = context
        overrides = [Parameter(name, value=value) for name, value in (parameters or {}).items()]
        with _working_directory(cwd):
            # Raises StartupError as the process would before exiting 1.
            self.node = (node_class or MemoryNode)(
                context=context, namespace=self.namespace, parameter_overrides=overrides)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        # What ended the node as a process would have ended with a traceback
        # and exit 1: an exception out of spinning or out of destroy_node.
        self.failure = None
        self._stopping = threading.Event()
        # paused(): the spin thread waits on _pause_requested outside _step.
        self._pause_requested = threading.Event()
        self._step = threading.Lock()
        self._thread = threading.Thread(target=self._spin, name=f'spin {self.prefix}',
                                        daemon=True)
        self._thread.start()

    def _spin(self):
        from rclpy.executors import ExternalShutdownException
        try:
            while not self._stopping.is_set() and self.context.ok():
                if self._pause_requested.is_set():
                    time.sleep(0.01)
                    continue
                with self._step:
                    self.executor.spin_once(timeout_sec=0.05)
        except ExternalShutdownException:
            pass  # the context shut down: node_runner.run ends its spin the same way
        except Exception as error:  # the process would end with a traceback, exit 1
            self.failure = error

    @contextlib.contextmanager
    def paused(self):
        """
        Hold the node's executor still for the block; it takes what came meanwhile after.

        Requests sent inside the block are delivered at once (one DDS
        participant) and wait in the node's readers, so the node takes
        them in the same step, as a loaded node takes requests that arrived
        together.
        """
        self._pause_requested.set()
        try:
            with self._step:
                yield
        finally:
            self._pause_requested.clear()

    def running(self):
        """Return True until stop()."""
        return self._thread.is_alive()

    def output(self):
        """Say where the log is: an in-process node logs to the test's own stderr."""
        return '(in-process node: its log is in the captured stderr)'

    def stop(self):
        """
        Stop spinning, then destroy the node (closing its store), as node_runner does.

        Return the exit code the process would have had: 0, or 1 when
        spinning or destroying the node raised (the exception is in failure).
        Stopping again returns the same code.
        """
        if self._thread.is_alive():
            self._stopping.set()
            self._thread.join(timeout=20)
            assert not self._thread.is_alive(), f'{self.prefix} did not stop spinning'
        if self.executor is not None:
            self.executor.remove_node(self.node)
            self.executor.shutdown(timeout_sec=1.0)
            # A remember still waiting for its turn is a coroutine the executor
            # holds: close it now, while its timer exists, not at some later
            # garbage collection (a process would simply have exited).
            self.executor = None
            gc.collect()
            try:
                self.node.destroy_node()
            except Exception as error:  # the process would end with a traceback, exit 1
                self.failure = self.failure or error
        return 0 if self.failure is None else 1


@contextlib.contextmanager
def _working_directory(path):
    if path is None:
        yield
        return
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)
