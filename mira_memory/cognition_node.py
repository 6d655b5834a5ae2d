# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The simulation's operator cognition node, with a scripted model.

Node `cognition` (/mira/cognition in the simulation). It subscribes to
operator/utterance and runs every utterance as one turn of an operator
episode (episodes keyed by episode_id; the acquisition budget of two is per
episode). Turns run strictly one at a time in arrival order. The model is the
scenario file: for each (episode, turn) it lists the tool calls the model
makes; an unscripted turn gets no tool call.

Every tool result goes to cognition/tool_results (ToolResult), followed by one
end-of-turn marker (outcome turn_complete, tool empty) whose text is the
acknowledgement line, derived only from the current turn's remember result.

It serves ~/working_memory/show and ~/working_memory/clear: the session's
bounded, volatile working memory, lost on restart by design. Operator text is
never pre-searched and no memory is injected: the only memory calls are the
ones the model makes.
"""

import collections
import sys

from mira_memory import node_runner
from mira_memory import scenario as scenario_file
from mira_memory.cognition import (
    acknowledgement, DEFAULT_CALL_TIMEOUT_SEC, EpisodeRunner, HISTORY_PUBLISHER_QOS,
    LIVE_SUBSCRIBER_QOS, MemoryTools, SerialQueue, TOOL_RESULTS_TOPIC, UTTERANCE_TOPIC)
from mira_memory.core.episodes import OperatorEpisode, WorkingMemory
from mira_memory.msg import OperatorUtterance, ToolResult
from mira_memory.srv import WorkingMemoryClear, WorkingMemoryShow
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

DEFAULT_WORKING_MEMORY_CAPACITY = 50
# Episodes a session keeps (for their budgets); the oldest is forgotten first.
EPISODES_KEPT = 256

# Reasons of an end-of-turn marker for a turn that could not run.
TURN_INVALID_IDS = 'invalid_turn_ids'
TURN_ID_REUSED = 'turn_id_reused'
TURN_INTERNAL_ERROR = 'internal_error'


class CognitionNode(Node):
    """Operator cognition: scripted model, real episodes, real memory services."""

    def __init__(self, **kwargs):
        super().__init__('cognition', **kwargs)
        self._declare_parameters()
        parameters = {name: self.get_parameter(name).value for name in (
            'scenario_file', 'memory_node', 'call_timeout_sec', 'working_memory_capacity')}
        if not parameters['scenario_file']:
            raise node_runner.StartupError('parameter scenario_file is required')
        try:
            self.scenario = scenario_file.load(parameters['scenario_file'])
            self.working_memory = WorkingMemory(parameters['working_memory_capacity'])
            group = ReentrantCallbackGroup()
            self.memory_tools = MemoryTools(
                self, parameters['memory_node'], with_remember=True,
                call_timeout_sec=parameters['call_timeout_sec'], callback_group=group)
        except ValueError as error:  # ScenarioError is a ValueError
            raise node_runner.StartupError(str(error)) from None
        self._results = self.create_publisher(
            ToolResult, TOOL_RESULTS_TOPIC, HISTORY_PUBLISHER_QOS)
        self._runner = EpisodeRunner(
            self, self.memory_tools, self._results, self.working_memory)
        self._episodes = collections.OrderedDict()
        self._turns = SerialQueue(self, self._run_turn, self._turn_failed)
        self.create_subscription(
            OperatorUtterance, UTTERANCE_TOPIC, self._on_utterance, LIVE_SUBSCRIBER_QOS)
        self.create_service(WorkingMemoryShow, '~/working_memory/show', self._on_show)
        self.create_service(WorkingMemoryClear, '~/working_memory/clear', self._on_clear)
        self.get_logger().info(
            f'cognition ready: {len(self.scenario.episodes)} scripted episode(s), '
            f'memory node {parameters["memory_node"]!r}, '
            f'working memory capacity {self.working_memory.capacity}')

    def _declare_parameters(self):
        def declare(name, default, kind, description):
            self.declare_parameter(name, default, ParameterDescriptor(
                type=kind, read_only=True, description=description))

        declare('scenario_file', '', ParameterType.PARAMETER_STRING,
                'Scenario TOML file: the scripted model (tool calls per operator turn).')
        declare('memory_node', 'memory', ParameterType.PARAMETER_STRING,
                'Memory node whose recall_memory and remember services are called; '
                "relative names resolve in this node's namespace.")
        declare('call_timeout_sec', DEFAULT_CALL_TIMEOUT_SEC, ParameterType.PARAMETER_DOUBLE,
                'Deadline of one memory service call, including waiting for the service.')
        declare('working_memory_capacity', DEFAULT_WORKING_MEMORY_CAPACITY,
                ParameterType.PARAMETER_INTEGER,
                'Entries kept in the volatile working memory; the oldest is dropped.')

    # Turns -------------------------------------------------------------------

    def _on_utterance(self, message):
        if not self._turns.put(message):
            self.get_logger().error(
                f'turn queue full; dropped episode {message.episode_id!r} '
                f'turn {message.turn_id!r}')

    async def _run_turn(self, message):
        episode_id, turn_id = message.episode_id, message.turn_id
        if not (scenario_file.is_valid_id(episode_id) and scenario_file.is_valid_id(turn_id)):
            self.get_logger().warning('ignored an utterance with invalid episode or turn id')
            self._publish_marker(episode_id, turn_id, TURN_INVALID_IDS)
            return
        episode = self._episode(episode_id)
        try:
            turn = episode.begin_turn(turn_id, message.text)
        except ValueError:
            self.get_logger().warning(
                f'ignored a repeated turn id: episode {episode_id} turn {turn_id}')
            self._publish_marker(episode_id, turn_id, TURN_ID_REUSED)
            return
        self.working_memory.add(f'operator {episode_id}/{turn_id}: {message.text}')
        calls = self.scenario.calls_for_turn(episode_id, turn_id)
        outcomes = await self._runner.run(episode, calls)
        line, memory_id = acknowledgement(turn, outcomes)
        if line:
            self.working_memory.add(line)
        self._publish_marker(episode_id, turn_id, '', line, memory_id)

    def _episode(self, episode_id):
        episode = self._episodes.get(episode_id)
        if episode is None:
            episode = self._episodes[episode_id] = OperatorEpisode(episode_id)
            while len(self._episodes) > EPISODES_KEPT:
                self._episodes.popitem(last=False)
        return episode

    def _turn_failed(self, message, error):
        self.get_logger().error(
            f'turn {message.episode_id}/{message.turn_id} failed: {error!r}')
        self._publish_marker(message.episode_id, message.turn_id, TURN_INTERNAL_ERROR)

    def _publish_marker(self, episode_id, turn_id, reason, text='', memory_id=''):
        message = ToolResult()
        message.episode_kind = ToolResult.EPISODE_OPERATOR
        message.episode_id = episode_id
        message.turn_id = turn_id
        message.outcome = ToolResult.OUTCOME_TURN_COMPLETE
        message.reason = reason
        message.memory_id = memory_id
        message.text = text
        self._results.publish(message)

    # Working memory ----------------------------------------------------------

    def _on_show(self, request, response):
        response.entries = list(self.working_memory.entries())
        response.capacity = self.working_memory.capacity
        return response

    def _on_clear(self, request, response):
        response.cleared = self.working_memory.clear()
        return response


def main(args=None):
    """Run the cognition node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    return node_runner.run(CognitionNode, 'cognition', args)


if __name__ == '__main__':
    sys.exit(main())
