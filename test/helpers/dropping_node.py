# SPDX-License-Identifier: Apache-2.0
"""
A real rclpy node whose services can leave a request unanswered for good (lost-reply tests).

A reply that DDS loses looks the same to a client as a request that is never
answered, so a service handler that awaits lose_reply() is such a reply.
Every request is counted per service and printed as "received <service> <n>",
and "ready" once the node spins, flushed, so a test can count what arrived.
Used by the helper scripts drop_first_server.py and drop_first_reply_proxy.py,
which import it from their own directory.
"""

from mira_memory.ros import node_runner
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException
from rclpy.task import Future


class DroppingNode:
    """One rclpy node NAMESPACE/NAME; call serve() for each service, then spin()."""

    def __init__(self, name, namespace):
        # Stop signals as the package's nodes take them (ros/node_runner.py):
        # with rclpy's own handlers a Kilted server once waited for good
        # after SIGTERM, and its test for the harness's 20 s.
        node_runner.init_ros()
        self.node = rclpy.create_node(name, namespace=namespace)
        # Reentrant: a request left waiting forever must not block the next ones.
        self.group = ReentrantCallbackGroup()
        self._received = {}
        self._never = Future()

    def serve(self, service, service_type, handle):
        """Serve ~/SERVICE: `await handle(number, request, response)`, number counting from 1."""
        async def callback(request, response):
            number = self._received[service] = self._received.get(service, 0) + 1
            print(f'received {service} {number}', flush=True)
            return await handle(number, request, response)
        self.node.create_service(service_type, f'~/{service}', callback, callback_group=self.group)

    async def lose_reply(self):
        """Never return: the request being handled gets no reply, for good."""
        await self._never

    async def call(self, client, request, attempts=3, wait=5.0):
        """
        Return client's reply to request, resending the identical request when none comes.

        The memory node's reply to this node can be lost too (the node had not
        discovered this client's reply reader yet): as cognition does, the
        identical request goes again, which the node answers as the first.
        """
        for _ in range(attempts):
            future = client.call_async(request)
            settled = Future()
            future.add_done_callback(lambda _: settled.done() or settled.set_result(True))
            timer = self.node.create_timer(
                wait, lambda: settled.done() or settled.set_result(False),
                callback_group=self.group)
            replied = await settled
            self.node.destroy_timer(timer)
            if replied:
                return future.result()
            client.remove_pending_request(future)
        raise RuntimeError(f'no reply from {client.service_name} in {attempts} attempts')

    async def sleep(self, seconds):
        """Wait SECONDS inside a handler without holding up the other requests."""
        done = Future()
        timer = self.node.create_timer(seconds, lambda: done.set_result(None),
                                       callback_group=self.group)
        await done
        self.node.destroy_timer(timer)

    def spin(self):
        """Print "ready", serve until SIGINT or SIGTERM, release the node and exit 0."""
        print('ready', flush=True)
        # A signal also wakes the wait inside rcl, as in the package's nodes.
        interrupt = node_runner.InterruptAgain()
        interrupt.attach(self.node)
        node_runner.StopSignalWakeup(interrupt)
        try:
            rclpy.spin(self.node)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        # The middleware's own release, as the nodes do it: a process that
        # exits without it leaves shared-memory ports that the next process
        # on them may not hear through (docs/operations.md).
        self.node.destroy_node()
        rclpy.try_shutdown()
        node_runner.exit_after_cleanup(0)
