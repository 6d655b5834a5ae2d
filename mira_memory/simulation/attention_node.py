# SPDX-License-Identifier: Apache-2.0
"""
The simulation's attention node: autonomous episodes, recall only.

Node `attention`. It subscribes to perception/observations; every observation
that matches one of the scenario's attention triggers starts one autonomous
episode (id "<trigger>-<observation>"), run through the same cognition
library as operator turns, one at a time in arrival order. The trigger's
scripted calls are the model's.

It has a recall_memory client and nothing else: no remember client is
created, so remember is unreachable from here by construction (the library
refuses it in autonomous episodes anyway, without any service call). Its
tool results go to attention/tool_results (its own topic: it can never
speak on cognition's, whose end-of-turn markers the operator's tools print
and perception acts on) with episode_kind autonomous, followed by an
end-of-episode marker (outcome episode_complete).
"""

import sys

from mira_memory.cognition import scenario as scenario_file
from mira_memory.cognition.episodes import AutonomousEpisode
from mira_memory.cognition.runner import (
    DEFAULT_CALL_TIMEOUT_SEC, EpisodeRunner, MemoryTools, SerialQueue, tool_result)
from mira_memory.msg import Observation, ToolResult
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.wire import (
    ATTENTION_RESULTS_TOPIC, HISTORY_PUBLISHER_QOS, HISTORY_SUBSCRIBER_QOS, OBSERVATIONS_TOPIC)
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node


class AttentionNode(Node):
    """Turns matching observations into autonomous, recall-only episodes."""

    def __init__(self, **kwargs):
        super().__init__('attention', **kwargs)
        settings = parameters.declare_read_only(self, (
            ('scenario_file', '',
             'Scenario TOML file: the attention triggers and their tool calls.'),
            ('memory_node', 'memory',
             'Memory node whose recall_memory service is called; relative names resolve '
             "in this node's namespace."),
            ('call_timeout_sec', DEFAULT_CALL_TIMEOUT_SEC,
             'Deadline of one recall call, including waiting for the service.'),
        ))
        path = settings['scenario_file']
        if not path:
            raise node_runner.StartupError('parameter scenario_file is required')
        try:
            self.scenario = scenario_file.load(path)
            # with_remember=False: autonomous activity never gets a remember client.
            self.memory_tools = MemoryTools(
                self, settings['memory_node'], with_remember=False,
                call_timeout_sec=settings['call_timeout_sec'],
                callback_group=ReentrantCallbackGroup())
        except ValueError as error:
            raise node_runner.StartupError(str(error)) from None
        self._results = self.create_publisher(
            ToolResult, ATTENTION_RESULTS_TOPIC, HISTORY_PUBLISHER_QOS)
        self._runner = EpisodeRunner(self, self.memory_tools, self._results)
        self._episodes = SerialQueue(self, self._run_episode, self._episode_failed)
        # Observations published before this node started are still attended to.
        self.create_subscription(
            Observation, OBSERVATIONS_TOPIC, self._on_observation, HISTORY_SUBSCRIBER_QOS)
        self.get_logger().info(
            f'attention ready: {len(self.scenario.triggers)} trigger(s), recall only')

    def _on_observation(self, observation):
        for trigger in self.scenario.triggers_for(observation.label, observation.entity_name):
            if not self._episodes.put((trigger, observation)):
                self.get_logger().error('episode queue full; observation dropped')

    async def _run_episode(self, item):
        trigger, observation = item
        episode = AutonomousEpisode(
            scenario_file.autonomous_episode_id(trigger.id, observation.observation_id),
            trigger=observation.text)
        await self._runner.run(episode, trigger.calls)
        self._publish_end(episode, f'trigger {trigger.id}, observation '
                                   f'{observation.observation_id}: {observation.text}')

    def _episode_failed(self, item, error):
        trigger, observation = item
        self.get_logger().error(
            f'autonomous episode of trigger {trigger.id} failed: {error!r}')
        episode = AutonomousEpisode(
            scenario_file.autonomous_episode_id(trigger.id, observation.observation_id),
            trigger=observation.text)
        self._publish_end(episode, 'failed', reason='internal_error')

    def _publish_end(self, episode, text, reason=''):
        message = tool_result(episode)
        message.outcome = ToolResult.OUTCOME_EPISODE_COMPLETE
        message.reason = reason
        message.text = text
        self._results.publish(message)


def main(args=None):
    """Run the attention node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    return node_runner.run(AttentionNode, 'attention', args)


if __name__ == '__main__':
    sys.exit(main())
