# SPDX-License-Identifier: Apache-2.0
"""
The operator cognition node: a scripted model, or a real chat-completions model.

Node `cognition` (/mira/cognition in the simulation). It subscribes to
operator/utterance and runs every utterance as one turn of an operator
episode (episodes keyed by episode_id; the acquisition budget of two is per
episode). Turns run strictly one at a time in arrival order. Parameter
`model` chooses who makes the tool calls:

- scripted (default): the scenario file lists, for each (episode, turn), the
  tool calls the model makes; an unscripted turn gets no tool call.
- openai_compatible: an OpenAI-compatible chat-completions server
  (cognition/chat.py runs the turn; docs/model.md). Its final text goes out as the
  end-of-turn marker's reply and into working memory. The blocking HTTP
  request runs in a worker thread, so the executor keeps serving meanwhile.

Every tool result goes to cognition/tool_results (ToolResult), followed by one
end-of-turn marker (outcome turn_complete, tool empty) whose text is the
acknowledgement line, derived only from the current turn's remember result.

It serves ~/working_memory/show and ~/working_memory/clear: the session's
bounded, volatile working memory, lost on restart by design. Operator text is
never pre-searched and no memory is injected: the only memory calls are the
ones the model makes.
"""

import collections
from dataclasses import dataclass
import os
import sys
import threading

from ament_index_python.packages import get_package_share_directory
from mira_memory import wire
from mira_memory.cognition import chat
from mira_memory.cognition import scenario as scenario_file
from mira_memory.cognition.episodes import (
    DEFAULT_WORKING_MEMORY_CAPACITY, DEFAULT_WORKING_MEMORY_MAX_CHARACTERS, OperatorEpisode,
    WorkingMemory)
from mira_memory.cognition.runner import (
    acknowledgement, DEFAULT_CALL_TIMEOUT_SEC, EpisodeRunner, MemoryTools, SerialQueue)
from mira_memory.cognition.tools import OPERATOR
from mira_memory.msg import OperatorUtterance, ToolResult
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.srv import WorkingMemoryClear, WorkingMemoryShow
from mira_memory.wire import HISTORY_PUBLISHER_QOS, LIVE_SUBSCRIBER_QOS
from mira_memory.wire import TOOL_RESULTS_TOPIC, UTTERANCE_TOPIC
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future

# Episodes a session keeps (for their budgets); the oldest is forgotten first.
EPISODES_KEPT = 256

# Values of parameter `model`.
SCRIPTED = 'scripted'
OPENAI_COMPATIBLE = 'openai_compatible'
MODELS = (SCRIPTED, OPENAI_COMPATIBLE)
DEFAULT_REQUEST_TIMEOUT_S = 60.0
SYSTEM_PROMPT = ('config', 'model', 'system_prompt.md')

# Reasons of an end-of-turn marker for a turn that could not run.
TURN_INVALID_IDS = 'invalid_turn_ids'
TURN_ID_REUSED = 'turn_id_reused'
TURN_INTERNAL_ERROR = 'internal_error'


@dataclass(frozen=True)
class ChatBackend:
    """The openai_compatible model and what every turn sends it."""

    model: chat.OpenAIChatModel
    endpoint: str
    system_prompt: str
    tools: list
    max_tool_rounds: int


class CognitionNode(Node):
    """Operator cognition: scripted model, real episodes, real memory services."""

    def __init__(self, **kwargs):
        super().__init__('cognition', **kwargs)
        settings = self._declare_parameters()
        self.model = settings['model']
        if self.model not in MODELS:
            raise node_runner.StartupError(
                f'parameter model must be one of: {", ".join(MODELS)}')
        if self.model == SCRIPTED and not settings['scenario_file']:
            raise node_runner.StartupError('parameter scenario_file is required')
        self.scenario = None
        self._chat = None
        try:
            if self.model == SCRIPTED:
                self.scenario = scenario_file.load(settings['scenario_file'])
            else:
                self._chat = self._chat_backend(settings)
            self.working_memory = WorkingMemory(
                settings['working_memory_capacity'], settings['working_memory_max_characters'])
            group = ReentrantCallbackGroup()
            self.memory_tools = MemoryTools(
                self, settings['memory_node'], with_remember=True,
                call_timeout_sec=settings['call_timeout_sec'], callback_group=group)
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
        if self.scenario is not None:
            model = f'{len(self.scenario.episodes)} scripted episode(s)'
        else:
            model = (f'model {self._chat.model.model!r} at {self._chat.endpoint} '
                     f'(openai_compatible)')
        self.get_logger().info(
            f'cognition ready: {model}, memory node {settings["memory_node"]!r}, '
            f'working memory capacity {self.working_memory.capacity} entries, '
            f'{self.working_memory.max_characters} characters')

    def _declare_parameters(self):
        """Declare every parameter (read-only) and return {name: value}."""
        return parameters.declare_read_only(self, (
            ('model', SCRIPTED,
             'Who makes the tool calls: scripted (the scenario file) or '
             'openai_compatible (a chat-completions server, see model_*).'),
            ('scenario_file', '',
             'Scenario TOML file: the scripted model (tool calls per operator turn); '
             'required when model is scripted.'),
            ('model_endpoint', '',
             'openai_compatible: base URL of the chat-completions API, such as '
             'http://127.0.0.1:8080/v1.'),
            ('model_name', '', 'openai_compatible: the model name sent with every request.'),
            ('api_key_env', '',
             'openai_compatible: NAME of the environment variable holding the API key '
             '(never the key itself); empty for a server that needs none.'),
            ('request_timeout_s', DEFAULT_REQUEST_TIMEOUT_S,
             'openai_compatible: deadline of one chat-completions request; no retries.'),
            ('max_tool_rounds', chat.DEFAULT_MAX_TOOL_ROUNDS,
             'openai_compatible: model replies per turn whose tool calls are run; '
             'calls after that are refused (tool_round_limit).'),
            ('temperature', 0.0,
             'openai_compatible: sampling temperature sent with every request.'),
            ('system_prompt_file', '',
             'openai_compatible: system prompt file; empty for the installed '
             'share/mira_memory/config/model/system_prompt.md.'),
            ('memory_node', 'memory',
             'Memory node whose recall_memory and remember services are called; '
             "relative names resolve in this node's namespace."),
            ('call_timeout_sec', DEFAULT_CALL_TIMEOUT_SEC,
             'Deadline of one memory service call, including waiting for the service.'),
            ('working_memory_capacity', DEFAULT_WORKING_MEMORY_CAPACITY,
             'Entries kept in the volatile working memory; the oldest is dropped.'),
            ('working_memory_max_characters', DEFAULT_WORKING_MEMORY_MAX_CHARACTERS,
             'Characters the volatile working memory (the model prompt) may hold in all; '
             'the oldest entries are dropped, one longer entry is kept cut (at least 200).'),
        ))

    def _chat_backend(self, values):
        """Build the openai_compatible backend from the parameter values; raise ValueError."""
        if values['max_tool_rounds'] < 1:
            raise ValueError('max_tool_rounds must be at least 1')
        api_key = ''
        if values['api_key_env']:
            # The key is read here and handed to the client; it is never logged.
            api_key = os.environ.get(values['api_key_env'], '')
            if not api_key:
                raise ValueError(
                    f'api_key_env names {values["api_key_env"]}, which is not set or empty')
        prompt_file = values['system_prompt_file'] or os.path.join(
            get_package_share_directory('mira_memory'), *SYSTEM_PROMPT)
        try:
            model = chat.OpenAIChatModel(
                base_url=values['model_endpoint'], model=values['model_name'],
                api_key=api_key, timeout_s=values['request_timeout_s'],
                temperature=values['temperature'])
        except ImportError:
            raise ValueError(
                'model openai_compatible needs the openai Python package '
                '(pip install openai; see docs/model.md)') from None
        return ChatBackend(
            model=model, endpoint=values['model_endpoint'],
            system_prompt=chat.load_system_prompt(prompt_file),
            tools=chat.chat_tools(OPERATOR), max_tool_rounds=values['max_tool_rounds'])

    # Turns -------------------------------------------------------------------

    def _on_utterance(self, message):
        if not self._turns.put(message):
            self.get_logger().error(
                f'turn queue full; dropped episode {message.episode_id!r} '
                f'turn {message.turn_id!r}')

    async def _run_turn(self, message):
        episode_id, turn_id = message.episode_id, message.turn_id
        if not (wire.is_valid_id(episode_id) and wire.is_valid_id(turn_id)):
            self.get_logger().warning('ignored an utterance with invalid episode or turn id')
            self._publish_marker(episode_id, turn_id, TURN_INVALID_IDS)
            return
        episode = self._episode(episode_id)
        if episode.heard_before(turn_id, message.text):
            # The operator's side sends a turn again until its marker comes
            # (ros/operator_topics.py): this turn has run, and its marker is
            # on the durable results topic.
            self.get_logger().debug(f'heard turn {episode_id}/{turn_id} again; it ran once')
            return
        try:
            turn = episode.begin_turn(turn_id, message.text)
        except ValueError:
            self.get_logger().warning(
                'ignored a repeated turn id with other words: '
                f'episode {episode_id} turn {turn_id}')
            self._publish_marker(episode_id, turn_id, TURN_ID_REUSED)
            return
        # The model gets the context before this turn; the utterance comes on its own.
        context = self.working_memory.entries()
        self.working_memory.add(f'operator {episode_id}/{turn_id}: {message.text}')
        reason, reply = '', ''
        if self._chat is None:
            calls = self.scenario.calls_for_turn(episode_id, turn_id)
            outcomes = await self._runner.run(episode, calls)
        else:
            outcomes = []

            async def run_tools(calls):
                ran = await self._runner.run(episode, calls)
                outcomes.extend(ran)
                return ran

            result = await chat.run_turn(
                self._complete, run_tools, self._chat.system_prompt, context, message.text,
                self._chat.tools, self._chat.max_tool_rounds)
            self._log_model_turn(episode_id, turn_id, result)
            if result.unexecuted_calls:
                self._runner.refuse(episode, result.unexecuted_calls, result.reason)
            reason, reply = result.reason, result.text
            self.working_memory.add(f'assistant: {reply}')
        line, memory_id = acknowledgement(turn, outcomes)
        if line:
            self.working_memory.add(line)
        self._publish_marker(episode_id, turn_id, reason, line, memory_id, reply)

    async def _complete(self, messages, tools):
        """Ask the model in a worker thread; the executor keeps spinning meanwhile."""
        done = Future(executor=self.executor)
        executor = self.executor

        def request():
            try:
                done.set_result(self._chat.model.complete(messages, tools))
            except Exception as error:  # handed to the awaiting coroutine
                done.set_exception(error)
            # The awaiting task resumes on the executor's next pass: wake it now.
            executor.wake()

        # A daemon thread: a request in flight must not hold up the process's exit.
        threading.Thread(target=request, name='model-request', daemon=True).start()
        return await done

    def _log_model_turn(self, episode_id, turn_id, result):
        where = f'turn {episode_id}/{turn_id}'
        if result.reason == chat.REPLIED:
            self.get_logger().info(
                f'{where}: the model replied after {result.tool_rounds} tool round(s)')
        elif result.reason == chat.MODEL_UNAVAILABLE:
            self.get_logger().error(
                f'{where}: the model is unavailable ({result.detail}); '
                f'{self._chat.model.model!r} at {self._chat.endpoint}')
        else:
            self.get_logger().warning(
                f'{where}: ended with {result.reason} after {result.tool_rounds} tool round(s)')

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

    def _publish_marker(self, episode_id, turn_id, reason, text='', memory_id='', reply=''):
        message = ToolResult()
        message.episode_kind = ToolResult.EPISODE_OPERATOR
        message.episode_id = episode_id
        message.turn_id = turn_id
        message.outcome = ToolResult.OUTCOME_TURN_COMPLETE
        message.reason = reason
        message.memory_id = memory_id
        message.text = text
        message.reply = reply
        self._results.publish(message)

    # Working memory ----------------------------------------------------------

    def _on_show(self, request, response):
        response.entries = list(self.working_memory.entries())
        response.capacity = self.working_memory.capacity
        response.characters = self.working_memory.characters
        response.max_characters = self.working_memory.max_characters
        return response

    def _on_clear(self, request, response):
        response.cleared = self.working_memory.clear()
        return response


def main(args=None):
    """Run the cognition node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    return node_runner.run(CognitionNode, 'cognition', args)


if __name__ == '__main__':
    sys.exit(main())
