# SPDX-License-Identifier: Apache-2.0
"""
Timed remember calls, each after its operator turn, against memory node processes.

What observed_turns.py and replication_cost.py share: one client node with
its own context and executor (bench_client), and per node under test a
RememberTarget that seeds the subject 'Ada Lovelace', publishes the
operator turn of each remember (as the operator source does) and times the
remember round trip right after it, the client side of what cognition does.
"""

import contextlib
import os
import signal
import time

from mira_memory.client import names
from mira_memory.msg import OperatorUtterance
from mira_memory.srv import AdminEntityAdd, Remember
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import Trigger
import workload

TIMEOUT_S = 10.0
READY_TIMEOUT_S = 60.0


@contextlib.contextmanager
def bench_client(name):
    """
    Yield (node, executor, started): a client node NAME_<pid> on loopback.

    Every process appended to `started` is stopped (SIGTERM) on the way out,
    before the client node and its context are shut down.
    """
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'{name}_{os.getpid()}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    started = []
    try:
        yield node, executor, started
    finally:
        for process in started:
            process.stop(first=signal.SIGTERM, timeout=20)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


class RememberTarget:
    """
    One memory node under test, ready once 'Ada Lovelace' is seeded.

    floor: the node is a bench node (bench_node.py) whose empty Trigger is
    called too. observes_turns: the node subscribes to operator turns, so
    the target waits for that subscription before the first call.
    """

    def __init__(self, node, executor, namespace, floor=False, observes_turns=True):
        self.executor = executor
        memory = names.memory_node_name(namespace)
        self.remember = node.create_client(Remember, names.service_name(memory, names.REMEMBER))
        self.floor = (node.create_client(Trigger, workload.service_names(memory)['trigger'])
                      if floor else None)
        entity_add = node.create_client(
            AdminEntityAdd, names.service_name(memory, names.ADMIN_ENTITY_ADD))
        self.publisher = node.create_publisher(
            OperatorUtterance, f'{namespace}/operator/utterance', 100)
        for client in filter(None, (self.remember, self.floor, entity_add)):
            if not client.wait_for_service(timeout_sec=READY_TIMEOUT_S):
                raise RuntimeError(f'{client.srv_name} is not available')
        _, added = workload.call(executor, entity_add, AdminEntityAdd.Request(
            entity_type='person', canonical_name='Ada Lovelace'), TIMEOUT_S)
        if added is None or not added.success:
            raise RuntimeError('could not seed the entity')
        deadline = time.monotonic() + READY_TIMEOUT_S
        while observes_turns and self.publisher.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise RuntimeError('the memory node does not subscribe to operator turns')
            executor.spin_once(timeout_sec=0.01)

    def call(self, request):
        """Publish the request's operator turn, then return (round trip in ns, outcome label)."""
        self.publisher.publish(OperatorUtterance(
            episode_id=request.episode_id, turn_id=request.turn_id, text=request.utterance))
        elapsed, response = workload.call(self.executor, self.remember, request, TIMEOUT_S)
        return elapsed, 'timeout' if response is None else (response.outcome or response.reason)

    def call_floor(self):
        """Return the round trip (ns) of one call of the empty Trigger."""
        elapsed, response = workload.call(self.executor, self.floor, Trigger.Request(), TIMEOUT_S)
        if response is None:
            raise RuntimeError('the floor did not answer')
        return elapsed


class Series:
    """The measured round trips (ns) of one target and how many calls ended in each outcome."""

    def __init__(self):
        self.samples = []
        self.outcomes = {}

    def add(self, elapsed, outcome):
        self.samples.append(elapsed)
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
