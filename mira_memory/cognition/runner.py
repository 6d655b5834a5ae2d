# SPDX-License-Identifier: Apache-2.0
"""
The ROS side of the cognition library, for any node that runs episodes.

- MemoryTools: the memory node's recall_memory and (only when the node is
  allowed it) remember services, through MemoryClient's asynchronous
  calls. Every call has a deadline and never blocks the executor: a
  request with no reply by then is removed, so a late reply is dropped. A
  call whose reply did not come is sent again, the identical request
  (call_with_retries: CALL_ATTEMPTS in all, within the one deadline); only
  when none came is it reported as no result.
- EpisodeRunner: runs the model's tool calls of one episode (or operator
  turn) through episode.plan_call -> service (Allowed only) -> result text
  -> turn record -> ToolResult -> working memory.
- SerialQueue: runs queued work one item at a time, in arrival order, as a
  coroutine task, so callbacks return at once and the executor stays free.

Everything here runs on a single-threaded executor (rclpy.spin); coroutines
interleave only at await points. The queue's coroutine is an executor task,
outside any callback group, and the clients and deadline timers share one
ReentrantCallbackGroup, so a response or a deadline is taken while the
coroutine waits for it and other callbacks (new utterances, working-memory
services) keep running meanwhile.
"""

import collections
from dataclasses import dataclass

from mira_memory.client import MemoryClient
from mira_memory.client import names
from mira_memory.cognition import tools
from mira_memory.cognition.episodes import Allowed, OperatorEpisode
from mira_memory.msg import ToolResult

DEFAULT_CALL_TIMEOUT_SEC = 5.0
# A memory call is sent at most this many times, the identical request each
# time, each attempt given an equal share of call_timeout_sec (so the whole
# call keeps its deadline). DDS loses a reply now and then, mostly while
# discovery settles; the memory node answers an identical repeat as it
# answered the first (recall reads; remember replays the turn's first
# answer), so a resend never writes twice and never changes the answer.
CALL_ATTEMPTS = 3
# Logged (warning) when a call got no reply and is sent again; the demo
# reports these lines.
REMEMBER_RESENT = 'sending the identical request once more'


async def call_with_retries(call_once, attempts=CALL_ATTEMPTS, on_retry=None):
    """
    Return the first reply of up to attempts identical calls, or None when none came.

    call_once() sends the one request and returns its reply, or None when
    its share of the deadline passed without one; on_retry(attempt) is
    called before each resend (to log it).
    """
    for attempt in range(1, attempts + 1):
        response = await call_once()
        if response is not None or attempt == attempts:
            return response
        if on_retry is not None:
            on_retry(attempt)
    return None


class MemoryTools:
    """
    The memory node's tool services for cognition, each call with a deadline.

    A MemoryClient (mira_memory/client) limited to recall_memory, and to
    remember only when with_remember is True (operator cognition). Without
    it the node has no way to reach remember at all; it does not even
    appear as a client in the ROS graph.
    """

    def __init__(self, node, memory_node, *, with_remember,
                 call_timeout_sec=DEFAULT_CALL_TIMEOUT_SEC, callback_group=None):
        if not call_timeout_sec > 0:
            raise ValueError('call_timeout_sec must be positive')
        services = (names.RECALL_MEMORY, names.REMEMBER) if with_remember else (
            names.RECALL_MEMORY,)
        self._node = node
        self._timeout = call_timeout_sec
        self.memory = MemoryClient(node, memory_node=memory_node, timeout=call_timeout_sec,
                                   services=services, callback_group=callback_group)

    @property
    def has_remember(self):
        return self.memory.offers(names.REMEMBER)

    async def recall(self, query):
        """Call recall_memory; return the response, or None when no reply came in time."""
        request = self.memory.request(names.RECALL_MEMORY, query=query)
        return await self.call(names.RECALL_MEMORY, request, 'recall_memory got no reply')

    async def remember(self, remember_request):
        """Call remember with a core RememberRequest; return the response or None."""
        if not self.has_remember:
            raise RuntimeError('this node has no remember client')
        request = self.memory.request(names.REMEMBER, **remember_request.service_fields())
        return await self.call(
            names.REMEMBER, request,
            f'remember got no reply in episode {request.episode_id} turn {request.turn_id}')

    async def call(self, service, request, what):
        """
        Send request within the deadline, again when no reply came; return the response or None.

        what starts the warning logged before a resend ("remember got no reply ...").
        """
        share = self._timeout / CALL_ATTEMPTS

        def resent(attempt):
            self._node.get_logger().warning(
                f'{what}; {REMEMBER_RESENT} (attempt {attempt + 1} of {CALL_ATTEMPTS})')
        return await call_with_retries(
            lambda: self.memory.call_async(service, request, timeout=share), on_retry=resent)


@dataclass(frozen=True)
class ToolOutcome:
    """What one model tool call came to, as published and handed to the model."""

    tool: str
    outcome: str
    reason: str
    memory_id: str
    text: str

    @property
    def reached_memory_node(self):
        """Return True when the memory node answered the call."""
        return self.outcome not in (ToolResult.OUTCOME_REFUSED, ToolResult.OUTCOME_NO_RESULT)


class EpisodeRunner:
    """
    Run a model's tool calls through an episode, the memory node and the observers.

    For each call, in order: episode.plan_call decides; only an Allowed call
    reaches the service; the result text (tools.*_text) is what the model
    gets; a remember reply is recorded on the current turn; a ToolResult is
    published; the text is appended to working memory (when one is given).
    A call that got no reply was already sent again by MemoryTools
    (call_with_retries); no result here means none of its attempts got one.
    """

    def __init__(self, node, memory_tools, publisher, working_memory=None):
        self._node = node
        self._tools = memory_tools
        self._publisher = publisher
        self.working_memory = working_memory

    async def run(self, episode, calls):
        """Run calls (scenario ToolCalls: tool + raw JSON arguments); return ToolOutcomes."""
        if isinstance(episode, OperatorEpisode) and not self._tools.has_remember:
            # An operator episode offers remember; a runner that cannot call it
            # would answer every remember with no result instead of the truth.
            raise ValueError('operator episodes need a runner with a remember client')
        outcomes = []
        for call in calls:
            outcome = await self._run_call(episode, call)
            self._publish(episode, outcome)
            if self.working_memory is not None:
                self.working_memory.add(outcome.text)
            outcomes.append(outcome)
        return outcomes

    def refuse(self, episode, calls, reason):
        """Publish, and keep in working memory, a refusal of calls that were not run."""
        for call in calls:
            tool = call.tool if call.tool in tools.TOOL_NAMES else ''
            text = tools.refused_text(call.tool, reason)
            outcome = ToolOutcome(tool, ToolResult.OUTCOME_REFUSED, reason, '', text)
            self._publish(episode, outcome)
            if self.working_memory is not None:
                self.working_memory.add(outcome.text)

    async def _run_call(self, episode, call):
        plan = episode.plan_call(call.tool, call.arguments)
        if not isinstance(plan, Allowed):
            return ToolOutcome(plan.tool, ToolResult.OUTCOME_REFUSED, plan.reason, '', plan.text)
        if plan.tool == tools.RECALL_MEMORY:
            return await self._recall(plan.arguments.query)
        return await self._remember(episode, plan.arguments)

    async def _recall(self, query):
        response = await self._tools.recall(query)
        if response is None:
            return self._no_result(tools.RECALL_MEMORY)
        text = tools.recall_result_text(response.status, response.reason, response.text)
        return ToolOutcome(tools.RECALL_MEMORY, response.status, response.reason, '', text)

    async def _remember(self, episode, request):
        turn = episode.current_turn
        response = await self._tools.remember(request)
        if response is None:
            turn.record_remember_no_result()
            return self._no_result(tools.REMEMBER)
        turn.record_remember_result(response.status, response.outcome, response.memory_id)
        text = tools.remember_result_text(
            response.status, response.outcome, response.reason, response.memory_id,
            list(response.conflicting_memory_ids), response.error, response.pending_review)
        outcome = response.status
        if response.outcome:
            outcome = f'{response.status}/{response.outcome}'
        memory_id = response.memory_id if response.status == tools.APPLIED else ''
        return ToolOutcome(tools.REMEMBER, outcome, response.reason, memory_id, text)

    @staticmethod
    def _no_result(tool):
        return ToolOutcome(
            tool, ToolResult.OUTCOME_NO_RESULT, tools.NO_RESULT, '',
            tools.refused_text(tool, tools.NO_RESULT))

    def _publish(self, episode, outcome):
        message = tool_result(episode)
        message.tool = outcome.tool
        message.outcome = outcome.outcome
        message.reason = outcome.reason
        message.memory_id = outcome.memory_id
        message.text = outcome.text
        self._publisher.publish(message)


def tool_result(episode):
    """Return a ToolResult with the episode's kind, id and (operator) current turn id."""
    message = ToolResult()
    message.episode_id = episode.episode_id
    if isinstance(episode, OperatorEpisode):
        message.episode_kind = ToolResult.EPISODE_OPERATOR
        message.turn_id = episode.current_turn.turn_id if episode.current_turn else ''
    else:
        message.episode_kind = ToolResult.EPISODE_AUTONOMOUS
    return message


def acknowledgement(turn, outcomes):
    """
    Return (line, memory_id): what the assistant says about storing, for this turn only.

    Derived only from the remember outcomes of the current turn (the turn's
    own record of the node's reply): applied/created -> stored, applied/
    duplicate -> already stored, rejected or refused -> not stored with the
    reason. No remember call -> no line. No reply -> no claim either way,
    because the write may or may not have happened.
    """
    created = turn.write_acknowledged()
    if created:
        return f'assistant: stored {created}', created
    duplicate = turn.already_stored()
    if duplicate:
        return f'assistant: that was already stored as {duplicate}', duplicate
    remembered = [outcome for outcome in outcomes if outcome.tool == tools.REMEMBER]
    if not remembered:
        return '', ''
    answered = [outcome for outcome in remembered if outcome.reached_memory_node]
    last = (answered or remembered)[-1]
    if last.outcome == ToolResult.OUTCOME_NO_RESULT:
        return 'assistant: I could not confirm whether that was stored (no result)', ''
    return f'assistant: I did not store that ({last.reason or last.outcome})', ''


class SerialQueue:
    """
    Run queued items one at a time, in arrival order, on the node's executor.

    put() returns at once (call it from a callback); a coroutine task drains
    the queue with the async handler. A handler that raises is logged and
    the queue carries on: one bad item must not stop the node.
    """

    def __init__(self, node, handler, on_error, maxlen=1000):
        self._node = node
        self._handler = handler
        self._on_error = on_error
        self._items = collections.deque()
        self._maxlen = maxlen
        self._draining = False

    def put(self, item):
        """Queue item; return False (and drop it) when the queue is full."""
        if len(self._items) >= self._maxlen:
            return False
        self._items.append(item)
        if not self._draining:
            self._draining = True
            self._node.executor.create_task(self._drain)
        return True

    async def _drain(self):
        try:
            while self._items:
                item = self._items.popleft()
                try:
                    await self._handler(item)
                except Exception as error:  # keep serving the next item
                    if not self._node.context.ok():
                        # Shutdown interrupted the item; nothing is left to report to.
                        return
                    self._on_error(item, error)
        finally:
            self._draining = False
