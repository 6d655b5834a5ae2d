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

from mira_memory.srv import RecallMemory, Remember
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException
from rclpy.task import Future

SERVICES = {'recall_memory': RecallMemory, 'remember': Remember}


def main():
    namespace = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node('memory_proxy', namespace=namespace)
    # Reentrant: a request left waiting forever must not block the next ones.
    group = ReentrantCallbackGroup()
    received = {}
    never = Future()

    def proxy(service, service_type):
        client = node.create_client(service_type, f'memory/{service}', callback_group=group)

        async def callback(request, response):
            number = received[service] = received.get(service, 0) + 1
            print(f'received {service} {number}', flush=True)
            reply = await client.call_async(request)
            verb = 'dropped' if number == 1 else 'answered'
            print(f'{verb} {service} {number}: {reply.status}', flush=True)
            if number == 1:
                await never
            return reply
        return client, callback

    clients = []
    for service, service_type in SERVICES.items():
        client, callback = proxy(service, service_type)
        clients.append(client)
        node.create_service(service_type, f'~/{service}', callback, callback_group=group)
    while not all(client.service_is_ready() for client in clients):
        rclpy.spin_once(node, timeout_sec=0.1)
    print('ready', flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
