# SPDX-License-Identifier: Apache-2.0
"""
A real rclpy server, for the client tests, that never answers its first request.

    python drop_first_server.py NAMESPACE DROPPED[,...] [SLOW_FAILURE[,...]]

Serves the memory node's services under NAMESPACE/memory with fixed,
well-formed answers, except that entity_add and alias_add add the names
entity_find and find answer to (Ada, ENT7, to begin with). Each DROPPED
service does its first request and leaves it unanswered for good (a reply
lost in DDS after the node's commit looks the same to the client); each
SLOW_FAILURE service answers its first request after 2 s with a store
failure (as a store blocked by a lock does), the others answer every
request. Prints "received <service> <n>" for every request and "ready"
(dropping_node.py), flushed, so a test can count what arrived.
"""

import sys

from dropping_node import DroppingNode
from mira_memory.msg import EntityRecord
from mira_memory.srv import AdminAliasAdd, AdminEntityAdd, AdminEntityFind, AdminFind, AdminStatus
from mira_memory.srv import RecallMemory, Remember


def _status(response, request):
    response.success = True
    response.enabled = True
    response.database_path = '/fixed/answer.sqlite3'
    response.schema_version = 1
    return response


# The entities by every name they answer to: Ada (ENT7) to begin with;
# entity_add and alias_add add to it.
NAMED = {'Ada': EntityRecord(id='ENT7', entity_type='person', canonical_name='Ada')}


def _entity(response, request):
    response.success = True
    record = EntityRecord(id=f'ENT{7 + len(set(map(id, NAMED.values())))}',
                          entity_type=request.entity_type,
                          canonical_name=request.canonical_name)
    NAMED[request.canonical_name] = record
    response.entity = record
    return response


def _alias(response, request):
    record = next(record for record in NAMED.values() if record.id == request.entity_id)
    NAMED[request.alias] = record
    response.success = True
    response.entity = record
    return response


def _entities(response, request):
    response.success = True
    response.entities = [NAMED[request.name]] if request.name in NAMED else []
    return response


def _recall(response, request):
    response.status = RecallMemory.Response.STATUS_MISS
    response.reason = RecallMemory.Response.REASON_NO_EXACT_MATCH
    response.text = 'fixed answer'
    return response


def _remember_failed(response, request):
    response.status = Remember.Response.STATUS_REJECTED
    response.reason = Remember.Response.REASON_BACKEND_FAILURE
    return response


def _remember(response, request):
    response.status = Remember.Response.STATUS_APPLIED
    response.outcome = Remember.Response.OUTCOME_CREATED
    response.memory_id = 'MEM7'
    return response


SERVICES = {
    'admin/status': (AdminStatus, _status),
    'admin/entity_add': (AdminEntityAdd, _entity),
    'admin/alias_add': (AdminAliasAdd, _alias),
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
                # Done, and its reply lost: as a reply the middleware could
                # not send after the node had committed.
                answer(response, request)
                await server.lose_reply()
            if service in slow_failures and number == 1:
                await server.sleep(SLOW_FAILURE_SEC)
                return FAILURES[service](response, request)
            return answer(response, request)
        return handle

    for service, (service_type, answer) in SERVICES.items():
        server.serve(service, service_type, answering(service, answer))
    server.spin()


if __name__ == '__main__':
    main()
