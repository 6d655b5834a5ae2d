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
"""

import sys

from mira_memory.client import MemoryCallError, MemoryClient
from mira_memory.client import names
from mira_memory.cognition import scenario as scenario_file
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from rclpy.node import Node


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
             'Deadline of one admin call, including waiting for the memory node.'),
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
                record = self._call(names.ADMIN_ENTITY_ADD, entity_type=entity.entity_type,
                                    canonical_name=entity.name).entity
                self.get_logger().info(
                    f'seed: created {record.id} {entity.entity_type} {entity.name!r}')
            for alias in entity.aliases:
                found = self._call(names.ADMIN_ENTITY_FIND, name=alias)
                if any(match.id == record.id for match in found.entities):
                    continue
                self._call(names.ADMIN_ALIAS_ADD, entity_id=record.id, alias=alias)
                self.get_logger().info(f'seed: alias {alias!r} added to {record.id}')
        self.get_logger().info('seed complete')

    def _call(self, service, **fields):
        """Call service with fields; raise SeedFailed without a reply or on a refusal."""
        try:
            response = self.memory.call(service, self.memory.request(service, **fields))
        except MemoryCallError as error:
            raise SeedFailed(str(error)) from None
        if not response.success:
            raise SeedFailed(f'{self.memory.client(service).srv_name}: '
                             f'{response.error_code}: {response.message}')
        return response


def main(args=None):
    """Seed once; exit 0 when every entity and alias exists, 1 otherwise."""
    return node_runner.run_once(Seed, 'seed', (SeedFailed,), 'seed', args)


if __name__ == '__main__':
    sys.exit(main())
