# SPDX-License-Identifier: Apache-2.0
"""
The simulation's seed step: the scenario's entities and aliases, through the admin services.

Node `seed`, a one-shot process that runs before the operator source (the
launch file starts the operator source when it has exited 0; so do the demo
and the tests). Entity administration is a supervised operation, so the seed
runs in the admin enclave (docs/trust.md), never as the operator: the
operator source, which publishes the operator's words, has no admin service
at all.

For each seed entity: an entity whose name already resolves to exactly one
entity is not created again, and only its missing aliases are added, so a
second run on a persistent database creates no duplicates. Exit 0 when every
entity and alias exists; exit 1 on any failure (memory node missing, a name
resolving to several entities, a refused call, a parameter of the wrong type).

The seed starts together with the memory node, so its first call waits for
that node to come up, which on a loaded machine takes far longer than one
call (MEMORY_NODE_START_SEC). Its reads are sent again until a reply comes:
a reply is dropped while the node has not yet discovered the seed's reply
reader. A write is never sent again blind: when its reply does not come
within call_timeout_sec (the node's reply can be lost in the same way, even
after it has answered the seed's reads), the seed reads whether it was done
and sends it again only if it was not.
"""

import sys
import time
import types

from mira_memory.client import MemoryClient
from mira_memory.client import names
from mira_memory.cognition import scenario as scenario_file
from mira_memory.ros import clients
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.ros.operator_topics import spin_until
from rclpy.node import Node

# How long the first call waits for the memory node that starts alongside the
# seed: its start (imports, store open) took over 10 s with 5 test workers on
# 2 cores; a node that does not answer within a minute is not coming.
MEMORY_NODE_START_SEC = 60.0
# A read without a reply by then is sent again (clients.call resends once inside).
READ_ATTEMPT_SEC = 2.0
# How many times a write whose reply was lost, and which was not done, is sent.
WRITE_ATTEMPTS = 3


class ReplyLost(RuntimeError):
    """A write got no reply by its deadline: whether it was done is unknown."""


class SeedFailed(RuntimeError):
    """The seed could not be completed."""


class Seed(Node):
    """Makes the scenario's seed entities and aliases exist exactly once."""

    def __init__(self, **kwargs):
        super().__init__('seed', **kwargs)
        self.settings = parameters.declare_read_only(self, (
            ('scenario_file', '', 'Scenario TOML file: its [seed] entities and aliases.'),
            ('memory_node', 'memory',
             'Memory node whose admin services perform the seed; relative names resolve '
             "in this node's namespace."),
            ('call_timeout_sec', 10.0,
             'Deadline of one admin call; the first waits up to a minute for the memory '
             'node to start.'),
        ))
        if not self.settings['scenario_file']:
            raise SeedFailed('parameter scenario_file is required')
        try:
            self.scenario = scenario_file.load(self.settings['scenario_file'])
        except scenario_file.ScenarioError as error:
            raise SeedFailed(str(error)) from None
        self.memory = MemoryClient(
            self, memory_node=self.settings['memory_node'],
            timeout=self.settings['call_timeout_sec'],
            services=(names.ADMIN_ENTITY_FIND, names.ADMIN_ENTITY_ADD, names.ADMIN_ALIAS_ADD))
        self._answered = False  # whether the memory node has answered a call yet

    def run(self, executor):
        """Seed every entity and alias (outside any callback, driving executor)."""
        self.memory.executor = executor
        for entity in self.scenario.seed:
            matches = self._call(names.ADMIN_ENTITY_FIND, name=entity.name)
            if len(matches.entities) > 1:
                raise SeedFailed(
                    f'seed: {entity.name!r} resolves to {len(matches.entities)} entities')
            if matches.entities:
                record = matches.entities[0]
                self.get_logger().info(
                    f'seed: {entity.name!r} already exists as {record.id}; not created')
            else:
                record = self._write(
                    names.ADMIN_ENTITY_ADD, lambda: self._entity_named(entity),
                    entity_type=entity.entity_type, canonical_name=entity.name).entity
                self.get_logger().info(
                    f'seed: created {record.id} {entity.entity_type} {entity.name!r}')
            for alias in entity.aliases:
                if self._has_alias(record, alias):
                    continue
                self._write(names.ADMIN_ALIAS_ADD,
                            lambda: record if self._has_alias(record, alias) else None,
                            entity_id=record.id, alias=alias)
                self.get_logger().info(f'seed: alias {alias!r} added to {record.id}')
        self.get_logger().info('seed complete')

    def _entity_named(self, entity):
        """Return the one entity called entity.name, of its type, or None."""
        found = self._call(names.ADMIN_ENTITY_FIND, name=entity.name).entities
        matches = [match for match in found if match.canonical_name == entity.name
                   and match.entity_type == entity.entity_type]
        return matches[0] if len(matches) == 1 else None

    def _has_alias(self, record, alias):
        found = self._call(names.ADMIN_ENTITY_FIND, name=alias)
        return any(match.id == record.id for match in found.entities)

    def _write(self, service, written, **fields):
        """
        Send a write; when its reply is lost, read whether it was done, and send it again if not.

        A write is never sent twice blind: it could write twice. But its
        reply is lost when the node had not yet discovered this client
        (under load, on Kilted, even after the node had answered this
        client's reads). written() reads the store: the entity or alias
        (as a record), or None when the write did not happen; the seed is
        the only writer of its names. Return the response; a write found
        done after a lost reply answers with the record it read.
        """
        for _ in range(WRITE_ATTEMPTS):
            try:
                return self._call(service, **fields)
            except ReplyLost as lost:
                record = written()
                if record is not None:
                    self.get_logger().info(f'seed: {lost}; it was done: {record.id}')
                    return types.SimpleNamespace(success=True, entity=record)
                self.get_logger().info(f'seed: {lost}; it was not done: sent again')
        raise SeedFailed(f'service {self.memory.service_name(service)} did not answer '
                         f'{WRITE_ATTEMPTS} times')

    def _call(self, service, **fields):
        """Call service with fields; raise SeedFailed without a reply or on a refusal."""
        client = self.memory.client(service)
        request = self.memory.request(service, **fields)
        executor = self.memory.executor
        if service == names.ADMIN_ENTITY_FIND:
            response = self._read(client, request)
        else:
            # A write is sent once (_write decides whether to send it again).
            timeout = self.settings['call_timeout_sec']
            deadline = time.monotonic() + timeout
            if not spin_until(executor, client.service_is_ready, timeout):
                raise SeedFailed(f'service {client.srv_name} is not available')
            response = clients.call(executor, client, request, deadline)
            if response is None:
                raise ReplyLost(f'{client.srv_name} did not answer in time')
        if not response.success:
            raise SeedFailed(f'{client.srv_name}: {response.error_code}: {response.message}')
        return response

    def _read(self, client, request):
        """
        Send a read until one reply comes; SeedFailed when none by its deadline.

        The first read waits MEMORY_NODE_START_SEC (the node starts with the
        seed), every later one call_timeout_sec.
        """
        timeout = (self.settings['call_timeout_sec'] if self._answered
                   else max(MEMORY_NODE_START_SEC, self.settings['call_timeout_sec']))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SeedFailed(f'service {client.srv_name} did not answer within {timeout:g} s')
            if not client.service_is_ready():
                spin_until(self.memory.executor, client.service_is_ready, left)
                continue
            response = clients.call(self.memory.executor, client, request,
                                    time.monotonic() + min(READ_ATTEMPT_SEC, left))
            if response is not None:
                self._answered = True
                return response


def main(args=None):
    """Seed once; exit 0 when every entity and alias exists, 1 otherwise."""
    return node_runner.run_once(Seed, 'seed', (SeedFailed,), 'seed', args)


if __name__ == '__main__':
    sys.exit(main())
