# SPDX-License-Identifier: Apache-2.0
"""
Real-process ROS 2 helpers for the tests: start installed executables, call services.

Every process inherits ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and the run's
own ROS_DOMAIN_ID (set in conftest.py), and every test uses its own
namespace, so tests cannot hear each other or anything off this machine.
"""

import contextlib
import io
import itertools
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

from mira_memory.simulation import nodes as simulation
from mira_memory.simulation import processes

_namespace_counter = itertools.count(1)


def unique_namespace(prefix='t'):
    """Return a namespace no other test in this run uses."""
    return f'/{prefix}{os.getpid()}_{next(_namespace_counter)}'


# The installed path of one of the package's executables.
executable = simulation.executable_path


def console_memory_command(session, *words):
    """Run `memory <words>` in a console Session, as main() would; return (code, out, err)."""
    from mira_memory.console import memory_console
    stdout, stderr = io.StringIO(), io.StringIO()
    code = memory_console.run_command(session, ['memory', *words], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def write_params_file(directory, parameters):
    """Write a ROS parameters YAML file that applies to any node name; return its path."""
    handle = tempfile.NamedTemporaryFile(
        'w', suffix='.yaml', prefix='params_', dir=directory, delete=False)
    with handle:
        handle.write(simulation.parameters_yaml(parameters))
    return handle.name


class NodeProcess(processes.Process):
    """
    One installed executable running as a real process (the package's harness).

    Adds what a test needs: the ROS command line from a namespace and
    parameters, and failures instead of codes when the process hangs.
    """

    def __init__(self, name, *, namespace, parameters=None, node_name=None,
                 directory=None, extra_args=(), remaps=(), cwd=None, env=None,
                 hold_copies=None):
        """
        Start the installed executable name.

        hold_copies: a path, for a memory node whose backups wait while that
        file exists (copy_in_flight.backups_held).
        """
        directory = directory or tempfile.mkdtemp(prefix='mira_test_')
        if hold_copies is None:
            program = [executable(name)]
        else:
            from helpers.copy_in_flight import held_copy_command
            program = held_copy_command(name, hold_copies)
        command = [*program, *extra_args, '--ros-args', '-r', f'__ns:={namespace}']
        if node_name:
            command += ['-r', f'__node:={node_name}']
        for remap in remaps:
            command += ['-r', remap]
        if parameters:
            command += ['--params-file', write_params_file(directory, parameters)]
        log_path = pathlib.Path(directory) / f'{name}_{next(_namespace_counter)}.log'
        super().__init__(command, log_path, name=name, cwd=cwd, env=env)

    def wait(self, timeout=20.0):
        """Wait for the process to exit by itself and return its exit code; fail on timeout."""
        code = super().wait(timeout)
        if code is None:
            raise AssertionError(self.describe(f'did not exit within {timeout:g} s'))
        return code

    def stop(self, sig=signal.SIGINT, timeout=20.0):
        """
        Send sig, wait for the exit and return its code; fail if sig did not stop it.

        A process that ignored sig is asked for its threads' stacks
        (SIGUSR1: node_runner.start's faulthandler) before it is stopped
        harder, so that the failure shows where it waited; where gdb is
        installed, their native stacks too (a wait inside the middleware
        holds the GIL, and Python's stack ends at the call into it).
        """
        if self.process.poll() is None:
            self.stopped_by = sig
            self.process.send_signal(sig)
            if super().wait(timeout) is None:
                self.process.send_signal(signal.SIGUSR1)
                time.sleep(1.0)
                native = native_stacks(self.process.pid)
                super().stop(first=signal.SIGTERM, timeout=timeout)
                raise AssertionError(self.describe(f'ignored {sig!r}') + native)
        return self.process.returncode


def native_stacks(pid):
    """Return every thread's native stack of process pid, from gdb; '' without gdb."""
    gdb = shutil.which('gdb')
    if gdb is None:
        return ''
    try:
        result = subprocess.run(
            [gdb, '-batch', '-nx', '-p', str(pid), '-ex', 'thread apply all bt'],
            capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return '\n--- native stacks: gdb did not answer within 60 s ---'
    return f'\n--- native stacks (gdb -p {pid}) ---\n{result.stdout}'


class RosClient:
    """A test-side rclpy node that calls services with deadlines."""

    def __init__(self, context=None):
        """Start a client node in context (a fresh private one by default)."""
        import rclpy
        from rclpy.context import Context
        self._rclpy = rclpy
        self._owns_context = context is None
        self.context = context or Context()
        if self._owns_context:
            rclpy.init(context=self.context)
        self.node = rclpy.create_node(f'test_client_{os.getpid()}', context=self.context)
        self._clients = {}

    def client(self, service_type, name):
        """Return a (cached) client for the service."""
        key = (service_type, name)
        if key not in self._clients:
            self._clients[key] = self.node.create_client(service_type, name)
        return self._clients[key]

    def forget_clients(self, prefix):
        """
        Destroy the clients of every service under prefix (a stopped node's).

        Every client is a DDS writer and reader of this one participant; a
        node started later must discover all of them before its replies can
        reach us, so clients of nodes that are gone must not pile up.
        """
        for key in [key for key in self._clients if key[1].startswith(prefix + '/')]:
            self.node.destroy_client(self._clients.pop(key))

    def settle(self, service_type, name, request=None, timeout=60.0, attempt_timeout=2.0):
        """
        Call an idempotent service until one reply arrives, or fail.

        wait_for_service only says that our side matched the server; a reply
        can still be dropped while the server has not yet discovered our
        reply reader (slow on a loaded machine). Use this on a read-only
        service right after a node starts, before calls that are not safe to
        repeat.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.call(service_type, name, request, timeout=attempt_timeout)
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    def reply_through_a_new_client(self, node_prefix, timeout=60.0, attempt_timeout=2.0):
        """
        Get one admin/status reply of node_prefix through a client made now; destroy it.

        A node discovers this participant's endpoints in the order they were
        made, so the reply shows that it knows every client made before, an
        action client's too (MemoryClient.goal_client does the same).
        """
        from mira_memory.client import names
        from mira_memory.ros import clients
        from mira_memory.srv import AdminStatus
        probe = self.node.create_client(
            AdminStatus, names.service_name(node_prefix, names.ADMIN_STATUS))
        try:
            deadline = time.monotonic() + timeout
            assert probe.wait_for_service(timeout_sec=timeout), f'no {probe.srv_name}'
            with self.spinning() as executor:
                while clients.call(executor, probe, AdminStatus.Request(),
                                   min(time.monotonic() + attempt_timeout, deadline)) is None:
                    assert time.monotonic() < deadline, f'{probe.srv_name} never answered'
        finally:
            self.node.destroy_client(probe)

    def wait_for_service(self, service_type, name, timeout=20.0):
        """Wait until the service is available; False on timeout."""
        return self.client(service_type, name).wait_for_service(timeout_sec=timeout)

    def call(self, service_type, name, request=None, timeout=20.0, resend=None):
        """
        Call a service and return its response, failing the test on timeout.

        Read-only and idempotent services are resent once after a lost reply
        (mira_memory.ros.clients.call, the clients' one way to wait); resend
        False sends the request once.
        """
        from mira_memory.ros import clients
        client = self.client(service_type, name)
        if not client.wait_for_service(timeout_sec=timeout):
            raise AssertionError(f'service {name} is not available')
        with self.spinning() as executor:
            response = clients.call(
                executor, client, request if request is not None else service_type.Request(),
                time.monotonic() + timeout, resend=resend)
        if response is None:
            raise AssertionError(f'service {name} did not answer within {timeout} s')
        return response

    def service_names(self):
        """Return {service name: [types]} of the whole (test-domain) graph."""
        return dict(self.node.get_service_names_and_types())

    def spin_for(self, seconds):
        """Spin the client node for a while (graph discovery, subscriptions)."""
        deadline = time.monotonic() + seconds
        with self.spinning() as executor:
            while time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)

    def spin_until(self, condition, what, *, timeout, failure=None, logs=None, every_step=None):
        """
        Spin the client node until condition() is true; fail the test on timeout.

        failure() runs before every step and returns why waiting is pointless
        (a process under test died) or None; logs() goes into the timeout's
        failure message; every_step() runs before every step too (an
        operator turn's RepeatedTurn.send_again_if_due).
        """
        deadline = time.monotonic() + timeout
        with self.spinning() as executor:
            while not condition():
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f'gave up waiting for {what}:\n{logs() if logs else ""}')
                reason = failure() if failure else None
                if reason:
                    raise AssertionError(reason)
                if every_step is not None:
                    every_step()
                executor.spin_once(timeout_sec=0.1)

    @contextlib.contextmanager
    def spinning(self):
        """
        Yield an executor spinning nothing but the client node; shut it down after.

        Shut down here, while the context is alive: an executor left to the
        garbage collector destroys its SIGINT guard condition in __del__,
        which raises (PytestUnraisableExceptionWarning) once the context
        has shut down and destroyed it already.
        """
        executor = self._rclpy.executors.SingleThreadedExecutor(context=self.context)
        executor.add_node(self.node)
        try:
            yield executor
        finally:
            executor.remove_node(self.node)
            executor.shutdown()

    def close(self):
        """Destroy the node and shut its private context down (when it made one)."""
        self.node.destroy_node()
        if self._owns_context:
            self._rclpy.try_shutdown(context=self.context)
