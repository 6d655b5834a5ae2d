# SPDX-License-Identifier: Apache-2.0
"""
The simulation's perception node: scripted observations, no memory access.

Node `perception`. It publishes the scenario's observations on
perception/observations, in file order, one per 1/rate_hz seconds. An
observation with after_turn waits until cognition has finished that operator
turn (its end-of-turn marker on cognition/tool_results): in the simulation
the conversation is the story's clock, which keeps the run deterministic.
A real perception node has no such input.

It creates no service client at all: perception never reads or writes
memory.
"""

import sys

from mira_memory.cognition import scenario as scenario_file
from mira_memory.msg import Observation, ToolResult
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.wire import (
    HISTORY_PUBLISHER_QOS, HISTORY_SUBSCRIBER_QOS, OBSERVATIONS_TOPIC, TOOL_RESULTS_TOPIC)
from rclpy.node import Node


class PerceptionNode(Node):
    """Publishes the scenario's observations at the scenario's rate."""

    def __init__(self, **kwargs):
        super().__init__('perception', **kwargs)
        path = parameters.declare(
            self, 'scenario_file', '', 'Scenario TOML file: the observations and their rate.')
        if not path:
            raise node_runner.StartupError('parameter scenario_file is required')
        try:
            self.scenario = scenario_file.load(path)
        except scenario_file.ScenarioError as error:
            raise node_runner.StartupError(str(error)) from None
        self._pending = list(self.scenario.observations)
        self._finished_turns = set()
        self._publisher = self.create_publisher(
            Observation, OBSERVATIONS_TOPIC, HISTORY_PUBLISHER_QOS)
        if any(observation.after_turn for observation in self._pending):
            self.create_subscription(
                ToolResult, TOOL_RESULTS_TOPIC, self._on_tool_result, HISTORY_SUBSCRIBER_QOS)
        self._timer = None
        if self._pending:
            self._timer = self.create_timer(
                1.0 / self.scenario.observation_rate_hz, self._publish_next)
        self.get_logger().info(
            f'perception ready: {len(self._pending)} scripted observation(s) at '
            f'{self.scenario.observation_rate_hz:g} Hz')

    def _on_tool_result(self, message):
        if (message.episode_kind == ToolResult.EPISODE_OPERATOR and
                message.outcome == ToolResult.OUTCOME_TURN_COMPLETE):
            # after_turn names the scenario's episode, not this run's episode id.
            name = scenario_file.episode_name(message.episode_id)
            self._finished_turns.add((name, message.turn_id))

    def _publish_next(self):
        observation = self._pending[0]
        if observation.after_turn and observation.after_turn not in self._finished_turns:
            return
        self._pending.pop(0)
        message = Observation()
        message.observation_id = observation.id
        message.source = observation.source
        message.label = observation.label
        message.entity_name = observation.entity_name
        message.text = observation.text
        self._publisher.publish(message)
        self.get_logger().info(f'observation {observation.id}: {observation.text}')
        if not self._pending:
            self._timer.cancel()
            self.get_logger().info('all scripted observations published')


def main(args=None):
    """Run the perception node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    return node_runner.run(PerceptionNode, 'perception', args)


if __name__ == '__main__':
    sys.exit(main())
