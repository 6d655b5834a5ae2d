# SPDX-License-Identifier: Apache-2.0
"""
The simulation's operator: a supervised seed, then scripted utterances.

Node `operator_source`. It runs the scenario once:

1. Seed: the entities and aliases that must exist before the conversation,
   through the memory node's admin services (entity administration is a
   supervised operation; conversation cannot create entities). Idempotent: an
   entity whose name already resolves to exactly one entity is not created
   again, and only its missing aliases are added, so a second run on a
   persistent database creates no duplicates.
2. Waits until the cognition node and the memory node subscribe to
   operator/utterance (the memory node admits remember only for turns it
   heard itself, and its subscription is volatile: a turn published before
   it matched would never reach it).
3. Publishes each scripted turn (episode_id, turn_id, text) and waits for
   cognition's end-of-turn marker for it, with a deadline, before the next.
   Episode ids are "<run id>-<scenario episode name>" with a run id made
   when the node starts, so no two runs publish the same episode id.

Then it exits 0 (exit_when_done, the default: the operator's script is over;
the other nodes keep running), or keeps spinning when exit_when_done is
false. Any failure (memory node or cognition missing, a seed error, a turn
without a marker before its deadline, a parameter of the wrong type) exits 1.
"""

import sys
import time

from mira_memory.cognition import scenario as scenario_file
from mira_memory.msg import ToolResult
from mira_memory.ros import clients
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.ros.operator_topics import absolute_node_name, OperatorTopics, spin_until
from mira_memory.srv import AdminAliasAdd, AdminEntityAdd, AdminEntityFind
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node


class ScenarioFailed(RuntimeError):
    """The scenario could not be run to its end."""


class OperatorSource(Node):
    """Seeds the memory node, then plays the scenario's operator turns."""

    def __init__(self, **kwargs):
        super().__init__('operator_source', **kwargs)
        self.settings = parameters.declare_read_only(self, (
            ('scenario_file', '', 'Scenario TOML file: the seed and the operator turns.'),
            ('memory_node', 'memory',
             'Memory node whose admin services perform the seed and which must hear '
             "every turn; relative names resolve in this node's namespace."),
            ('cognition_node', 'cognition',
             'Cognition node to wait for before the first utterance; relative names '
             "resolve in this node's namespace."),
            ('call_timeout_sec', 10.0,
             'Deadline of one admin call, including waiting for the memory node.'),
            ('start_timeout_sec', 30.0,
             'How long to wait for the cognition and memory nodes to subscribe to '
             'operator/utterance.'),
            ('turn_timeout_sec', 30.0, "How long to wait for a turn's end-of-turn marker."),
            ('exit_when_done', True,
             'Exit (code 0) after the last turn; false keeps the node spinning.'),
        ))
        self.completed = False
        self.run_id = scenario_file.new_run_id()
        if not self.settings['scenario_file']:
            raise ScenarioFailed('parameter scenario_file is required')
        try:
            self.scenario = scenario_file.load(self.settings['scenario_file'])
        except scenario_file.ScenarioError as error:
            raise ScenarioFailed(str(error)) from None
        memory = self.settings['memory_node'].rstrip('/')
        self._entity_find = self.create_client(AdminEntityFind, f'{memory}/admin/entity_find')
        self._entity_add = self.create_client(AdminEntityAdd, f'{memory}/admin/entity_add')
        self._alias_add = self.create_client(AdminAliasAdd, f'{memory}/admin/alias_add')
        self._finished_turns = set()
        self._topics = OperatorTopics(self, self._on_tool_result)

    def _on_tool_result(self, message):
        if (message.episode_kind == ToolResult.EPISODE_OPERATOR and
                message.outcome == ToolResult.OUTCOME_TURN_COMPLETE):
            self._finished_turns.add((message.episode_id, message.turn_id))

    # Running the scenario (outside any callback, driving the executor) ----------

    def run(self, executor):
        """Seed, wait for cognition, play every turn; raise ScenarioFailed on failure."""
        self._executor = executor
        self.seed()
        self.wait_for_listeners()
        self.get_logger().info(f'run id {self.run_id}: episode ids are {self.run_id}-<name>')
        for episode in self.scenario.episodes:
            episode_id = scenario_file.operator_episode_id(self.run_id, episode.name)
            for turn in episode.turns:
                self.play(episode_id, turn)
        self.completed = True
        self.get_logger().info('scenario complete')

    def seed(self):
        """Make every seed entity and alias exist exactly once."""
        for entity in self.scenario.seed:
            matches = self._call(self._entity_find, AdminEntityFind.Request(name=entity.name))
            if len(matches.entities) > 1:
                raise ScenarioFailed(
                    f'seed: {entity.name!r} resolves to {len(matches.entities)} entities')
            if matches.entities:
                record = matches.entities[0]
                self.get_logger().info(
                    f'seed: {entity.name!r} already exists as {record.id}; not created')
            else:
                record = self._call(self._entity_add, AdminEntityAdd.Request(
                    entity_type=entity.entity_type, canonical_name=entity.name)).entity
                self.get_logger().info(
                    f'seed: created {record.id} {entity.entity_type} {entity.name!r}')
            for alias in entity.aliases:
                found = self._call(self._entity_find, AdminEntityFind.Request(name=alias))
                if any(match.id == record.id for match in found.entities):
                    continue
                self._call(self._alias_add, AdminAliasAdd.Request(
                    entity_id=record.id, alias=alias))
                self.get_logger().info(f'seed: alias {alias!r} added to {record.id}')

    def wait_for_listeners(self):
        """Wait until the cognition and memory nodes' utterance subscriptions are matched."""
        listeners = [self.settings['cognition_node'], self.settings['memory_node']]
        if not self._spin_until(lambda: self._topics.listeners_matched(listeners),
                                self.settings['start_timeout_sec']):
            names = ' and '.join(absolute_node_name(name, self.get_namespace())
                                 for name in listeners)
            raise ScenarioFailed(
                f'{names} did not both subscribe to {self._topics.utterance_topic}')

    def play(self, episode_id, turn):
        """Publish one operator turn and wait for its end-of-turn marker."""
        key = (episode_id, turn.id)
        self._finished_turns.discard(key)
        self._topics.say(episode_id, turn.id, turn.text)
        self.get_logger().info(f'operator {episode_id}/{turn.id}: {turn.text}')
        if not self._spin_until(lambda: key in self._finished_turns,
                                self.settings['turn_timeout_sec']):
            raise ScenarioFailed(f'no end-of-turn marker for {episode_id}/{turn.id}')

    def _call(self, client, request):
        deadline = time.monotonic() + self.settings['call_timeout_sec']
        if not self._spin_until(client.service_is_ready, self.settings['call_timeout_sec']):
            raise ScenarioFailed(f'service {client.srv_name} is not available')
        response = clients.call(self._executor, client, request, deadline)
        if response is None:
            raise ScenarioFailed(f'service {client.srv_name} did not answer in time')
        if not response.success:
            raise ScenarioFailed(
                f'{client.srv_name}: {response.error_code}: {response.message}')
        return response

    def _spin_until(self, condition, timeout):
        return spin_until(self._executor, condition, timeout)


def main(args=None):
    """Run the scenario; exit 0 when it is complete, 1 when it fails or is interrupted."""
    try:
        rclpy.init(args=args)
    except rclpy_implementation.RCLError as error:
        # Unusable ROS arguments, such as a params file that is missing or not valid YAML.
        rclpy.logging.get_logger('operator_source').error(f'cannot start: {error}')
        return 1
    node = None
    executor = SingleThreadedExecutor()
    try:
        node = OperatorSource()
        executor.add_node(node)
        node.run(executor)
        if not node.settings['exit_when_done']:
            executor.spin()
    except (ScenarioFailed, node_runner.StartupError) as error:
        rclpy.logging.get_logger('operator_source').error(str(error))
        return 1
    except (KeyboardInterrupt, ExternalShutdownException,
            rclpy_implementation.RCLError) as error:
        # RCLError: a signal shut the context down while the executor was
        # between waits (see node_runner); anything else while ok is a bug.
        if isinstance(error, rclpy_implementation.RCLError) and rclpy.ok():
            raise
        if node is None or not node.completed:
            rclpy.logging.get_logger('operator_source').error(
                'interrupted before the scenario was complete')
            return 1
    finally:
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
