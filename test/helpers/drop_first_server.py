# SPDX-License-Identifier: Apache-2.0
"""
A real rclpy server, for the client tests, that never answers its first request.

    python drop_first_server.py NAMESPACE DROPPED[,...] [SLOW_FAILURE[,...]]

Serves the memory node's services under NAMESPACE/memory with fixed,
well-formed answers; each DROPPED service leaves its first request
unanswered for good (a reply lost in DDS looks the same to the client); each
SLOW_FAILURE service answers its first request after 2 s with a store
failure (as a store blocked by a lock does), the others answer every
request. Prints "received <service> <n>"
for every request, flushed, so a test can count what arrived.
"""

import sys

from mira_memory.msg import EntityRecord
from mira_memory.srv import AdminEntityAdd, AdminEntityFind, AdminFind, AdminStatus
from mira_memory.srv import RecallMemory, Remember
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException
from rclpy.task import Future


def _status(response):
    response.success = True
    response.enabled = True
    response.database_path = '/fixed/answer.sqlite3'
    response.schema_version = 1
    return response


def _entity(response):
    response.success = True
    response.entity = EntityRecord(id='ENT7', entity_type='person', canonical_name='Ada')
    return response


def _entities(response):
    response.success = True
    response.entities = [EntityRecord(id='ENT7', entity_type='person', canonical_name='Ada')]
    return response


def _recall(response):
    response.status = RecallMemory.Response.STATUS_MISS
    response.reason = RecallMemory.Response.REASON_NO_EXACT_MATCH
    response.text = 'fixed answer'
    return response


def _remember_failed(response):
    response.status = Remember.Response.STATUS_REJECTED
    response.reason = Remember.Response.REASON_BACKEND_FAILURE
    return response


def _remember(response):
    response.status = Remember.Response.STATUS_APPLIED
    response.outcome = Remember.Response.OUTCOME_CREATED
    response.memory_id = 'MEM7'
    return response


SERVICES = {
    'admin/status': (AdminStatus, _status),
    'admin/entity_add': (AdminEntityAdd, _entity),
    'admin/entity_find': (AdminEntityFind, _entities),
    'admin/find': (AdminFind, _entities),
    'recall_memory': (RecallMemory, _recall),
    'remember': (Remember, _remember),
}

FAILURES = {'remember': _remember_failed}
SLOW_FAILURE_SEC = 2.0


def main():
    namespace, dropped = sys.argv[1], set(filter(None, sys.argv[2].split(',')))
    slow_failures = set(filter(None, (sys.argv[3] if len(sys.argv) > 3 else '').split(',')))
    rclpy.init()
    node = rclpy.create_node('memory', namespace=namespace)
    # Reentrant: a request left waiting forever must not block the next ones.
    group = ReentrantCallbackGroup()
    received = {}
    never = Future()

    async def sleep(seconds):
        done = Future()
        timer = node.create_timer(seconds, lambda: done.set_result(None), callback_group=group)
        await done
        node.destroy_timer(timer)

    def serve(service, answer):
        async def callback(request, response):
            received[service] = received.get(service, 0) + 1
            print(f'received {service} {received[service]}', flush=True)
            if service in dropped and received[service] == 1:
                await never
            if service in slow_failures and received[service] == 1:
                await sleep(SLOW_FAILURE_SEC)
                return FAILURES[service](response)
            return answer(response)
        return callback

    for service, (service_type, answer) in SERVICES.items():
        node.create_service(service_type, f'~/{service}', serve(service, answer),
                            callback_group=group)
    print('ready', flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
