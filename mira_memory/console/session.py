# SPDX-License-Identifier: Apache-2.0
"""
The console's ROS side: its options, and the session that calls the nodes' services.

Persistent-memory commands call the memory node's admin services through
a MemoryClient (mira_memory/client), `memory` and `memory clear` the
cognition node's working-memory services, each with a deadline; the jobs'
goals go through the same session (console/jobs.py).
"""

from dataclasses import dataclass
import faulthandler
import math
import os
import threading
import time

from mira_memory.client import MemoryClient, NoReply
from mira_memory.client import names
from mira_memory.console import review_lines
from mira_memory.console.commands import MEMORY, quoted, UsageError
from mira_memory.ros import clients
from mira_memory.ros import node_runner
from mira_memory.srv import WorkingMemoryShow
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

DEFAULT_MEMORY_NODE = names.memory_node_name()
DEFAULT_COGNITION_NODE = '/mira/cognition'
DEFAULT_TIMEOUT = 5.0
# One attempt of the first, read-only call that checks both directions of
# discovery; a reply normally takes milliseconds.
SETTLE_ATTEMPT_SEC = 0.5
# The cognition node's read-only service (the memory node's: MemoryClient.settle).
COGNITION_SETTLE_SERVICE = 'working_memory/show'


class CallError(Exception):
    """The service call did not produce an answer."""


class Session:
    """One console node in a private rclpy context; every call has a deadline."""

    def __init__(self, ros_args, settings):
        self.settings = settings
        self.context = Context()
        # The console handles Ctrl-C itself (cancel the line or the call).
        rclpy.init(args=ros_args, context=self.context,
                   signal_handler_options=SignalHandlerOptions.NO)
        try:
            self.node = rclpy.create_node(
                f'memory_console_{os.getpid()}', context=self.context,
                start_parameter_services=False)
            self.executor = SingleThreadedExecutor(context=self.context)
            self.executor.add_node(self.node)
        except BaseException:
            rclpy.try_shutdown(context=self.context)
            raise
        # The memory node's services and actions (the jobs' too: console/jobs.py).
        self.memory = MemoryClient(self.node, memory_node=settings.memory_node,
                                   timeout=settings.timeout, executor=self.executor)
        # The cognition node's working-memory services.
        self._clients = {}
        self._cognition_settled = False

    def _client(self, service_type, name):
        key = (service_type, name)
        if key not in self._clients:
            self._clients[key] = self.node.create_client(service_type, name)
        return self._clients[key]

    def _settle_cognition(self, deadline):
        """
        Get one reply from the cognition node's read-only service first.

        wait_for_service only says that this new console found the service;
        until the node has discovered the console in turn, a reply can be
        dropped for good (seen on a loaded machine with Kilted). Repeating a
        read is harmless, repeating a write is not, so no command goes out
        before one read came back (MemoryClient.settle does the same for
        the memory node).
        """
        target = self.settings.cognition_node
        client = self._client(WorkingMemoryShow,
                              f'{target.rstrip("/")}/{COGNITION_SETTLE_SERVICE}')
        while time.monotonic() < deadline:
            attempt = min(time.monotonic() + SETTLE_ATTEMPT_SEC, deadline)
            if clients.call(self.executor, client, WorkingMemoryShow.Request(),
                            attempt) is not None:
                self._cognition_settled = True
                return

    def call(self, command, request):
        """Call the command's service and return the response; raise CallError."""
        if hasattr(request, 'reviewer'):
            # Accept, supersede and dismiss say who decides (review_lines.reviewer).
            request.reviewer = review_lines.reviewer(self.settings.reviewer)
        if command.target == MEMORY:
            return self._call_memory(command, request)
        target = self.settings.cognition_node
        name = f'{target.rstrip("/")}/{command.service}'
        client = self._client(command.service_type, name)
        timeout = self.settings.timeout
        deadline = time.monotonic() + timeout
        if not client.wait_for_service(timeout_sec=timeout):
            raise CallError(f'no {command.target} node answered at {target} within {timeout} s')
        if not self._cognition_settled:
            self._settle_cognition(deadline)
        response = clients.call(self.executor, client, request, deadline)
        if response is None:
            raise CallError(
                f'the {command.target} node at {target} did not answer {name} '
                f'within {timeout} s')
        return response

    def _call_memory(self, command, request):
        target = self.settings.memory_node
        timeout = self.settings.timeout
        deadline = time.monotonic() + timeout
        if not self.memory.wait_for_service(command.service, deadline):
            raise CallError(f'no {command.target} node answered at {target} within {timeout} s')
        self.memory.settle(deadline, SETTLE_ATTEMPT_SEC)
        try:
            return self.memory.call(command.service, request, deadline=deadline)
        except NoReply:
            raise CallError(
                f'the {command.target} node at {target} did not answer '
                f'{self.memory.service_name(command.service)} within {timeout} s') from None

    def goal_client(self, job, deadline):
        """Return the action client of job once the memory node can answer a goal on it."""
        return self.memory.goal_client(job, deadline, SETTLE_ATTEMPT_SEC)

    def close(self, code=0, release_sec=None):
        """
        Destroy the node and shut the private context down.

        With release_sec (the executable), the middleware gets that long;
        past it the process exits with code without waiting. Under load Fast
        DDS has waited for good in destroying a console's node, after the
        answer was printed (rcl_node_fini; the nodes' stop is bounded the
        same way: ros/node_runner.py). Peers may then list the console until
        its DDS lease ends. A wait that holds Python's GIL leaves no thread
        of Python to run: then faulthandler's own thread, at twice the
        bound, prints every thread's stack and exits 1.
        """
        watchdog = None
        if release_sec is not None:
            watchdog = threading.Timer(release_sec, node_runner.exit_after_cleanup, (code,))
            watchdog.daemon = True
            watchdog.start()
            faulthandler.dump_traceback_later(2 * release_sec, exit=True)
        try:
            self.memory.destroy()
            self.executor.shutdown()
            self.node.destroy_node()
            rclpy.try_shutdown(context=self.context)
        finally:
            if watchdog is not None:
                watchdog.cancel()
                faulthandler.cancel_dump_traceback_later()


@dataclass
class Settings:
    """Console options given before the command."""

    memory_node: str = DEFAULT_MEMORY_NODE
    cognition_node: str = DEFAULT_COGNITION_NODE
    timeout: float = DEFAULT_TIMEOUT
    # Who accepts, supersedes or dismisses pending items; default: the OS user.
    reviewer: str = ''
    show_help: bool = False


def _node_name(option, value):
    if not value or value.strip() != value or '//' in value:
        raise UsageError(f'{option} needs a node name such as /mira/memory, got {quoted(value)}')
    return value


def _timeout(option, value):
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f'{option} needs a positive number of seconds, got {quoted(value)}')
    return seconds


def _reviewer(option, value):
    if not value.strip() or not value.isprintable():
        raise UsageError(f'{option} needs a name, got {quoted(value)}')
    return value


_CONSOLE_OPTIONS = {
    '--memory-node': ('memory_node', _node_name),
    '--cognition-node': ('cognition_node', _node_name),
    '--timeout': ('timeout', _timeout),
    '--reviewer': ('reviewer', _reviewer),
}


def parse_console_options(args):
    """Split leading console options from the command words; raise UsageError."""
    settings = Settings()
    args = list(args)
    while args and args[0].startswith('-') and args[0] != '-':
        name, separator, value = args.pop(0).partition('=')
        if name in ('-h', '--help') and not separator:
            settings.show_help = True
            continue
        if name not in _CONSOLE_OPTIONS:
            raise UsageError(f'unknown option {name} (options: --memory-node, '
                             '--cognition-node, --timeout, --reviewer, --help)')
        if not separator:
            if not args:
                raise UsageError(f'{name} needs a value')
            value = args.pop(0)
        field, convert = _CONSOLE_OPTIONS[name]
        setattr(settings, field, convert(name, value))
    return settings, args
