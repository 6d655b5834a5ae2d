# SPDX-License-Identifier: Apache-2.0
"""
A real rclpy server, for the client tests, that never answers its first request.

    python drop_first_server.py NAMESPACE DROPPED[,...] [SLOW_FAILURE[,...]]

Serves the memory node's services under NAMESPACE/memory with fixed,
well-formed answers; each DROPPED service leaves its first request
unanswered for good (a reply lost in DDS looks the same to the client); each
SLOW_FAILURE service answers its first request after 2 s with a store
failure (as a store blocked by a lock does), the others answer every
request. Prints "received <service> <n>" for every request and "ready"
(dropping_node.py), flushed, so a test can count what arrived.
"""

import sys

from dropping_node import DroppingNode
from mira_memory.msg import EntityRecord
from mira_memory.srv import AdminEntityAdd, AdminEntityFind, AdminFind, AdminStatus
from mira_memory.srv import RecallMemory, Remember


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
    server = DroppingNode('memory', namespace)

    def answering(service, answer):
        async def handle(number, request, response):
            if service in dropped and number == 1:
                await server.lose_reply()
            if service in slow_failures and number == 1:
                await server.sleep(SLOW_FAILURE_SEC)
                return FAILURES[service](response)
            return answer(response)
        return handle

    for service, (service_type, answer) in SERVICES.items():
        server.serve(service, service_type, answering(service, answer))
    server.spin()


if __name__ == '__main__':
    main()
