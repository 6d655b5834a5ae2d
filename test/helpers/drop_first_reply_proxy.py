# SPDX-License-Identifier: Apache-2.0
"""
A real rclpy proxy in front of a real memory node that loses the first reply of each service.

    python drop_first_reply_proxy.py NAMESPACE

Node NAMESPACE/memory_proxy serves ~/recall_memory and ~/remember and hands
every request to the memory node NAMESPACE/memory. The first request of
each service reaches the memory node, which answers it (a remember is
applied); the proxy then never passes that answer on, exactly as a reply
DDS lost on its way back. Every later request is answered with the memory
node's reply. Prints "received <service> <n>" for every request and
"answered <service> <n>: <status>" or "dropped <service> <n>: <status>"
once the memory node replied, flushed, so a test can tell what happened.
"""

import sys
import time

from dropping_node import DroppingNode
from mira_memory.srv import AdminStatus, RecallMemory, Remember
import rclpy

SERVICES = {'recall_memory': RecallMemory, 'remember': Remember}


def main():
    proxy = DroppingNode('memory_proxy', sys.argv[1])

    def passing_on(service, client):
        async def handle(number, request, response):
            reply = await proxy.call(client, request)
            verb = 'dropped' if number == 1 else 'answered'
            print(f'{verb} {service} {number}: {reply.status}', flush=True)
            if number == 1:
                await proxy.lose_reply()
            return reply
        return handle

    clients = []
    for service, service_type in SERVICES.items():
        clients.append(proxy.node.create_client(service_type, f'memory/{service}',
                                                callback_group=proxy.group))
        proxy.serve(service, service_type, passing_on(service, clients[-1]))
    while not all(client.service_is_ready() for client in clients):
        rclpy.spin_once(proxy.node, timeout_sec=0.1)
    _known_to_the_memory_node(proxy)
    proxy.spin()


def _known_to_the_memory_node(proxy, timeout=30.0):
    """
    Get one admin/status reply through a client made after the proxy's clients.

    The memory node's reply to the proxy's first request is lost while the
    node has not yet discovered the proxy's clients (seen once on Kilted:
    then no first reply reached the proxy to drop), and a node usually
    discovers a participant's endpoints in the order they were made
    (MemoryClient.goal_client does the same).
    """
    probe = proxy.node.create_client(AdminStatus, 'memory/admin/status',
                                     callback_group=proxy.group)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not probe.service_is_ready():
                rclpy.spin_once(proxy.node, timeout_sec=0.1)
                continue
            future = probe.call_async(AdminStatus.Request())
            rclpy.spin_until_future_complete(proxy.node, future, timeout_sec=1.0)
            if future.done():
                return
            probe.remove_pending_request(future)
        raise RuntimeError(f'no admin/status reply from the memory node in {timeout:g} s')
    finally:
        proxy.node.destroy_client(probe)


if __name__ == '__main__':
    main()
