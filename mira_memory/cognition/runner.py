# SPDX-License-Identifier: Apache-2.0
"""
The ROS side of the cognition library, for any node that runs episodes.

- MemoryTools: async clients of the memory node's recall_memory and
  (only when the node is allowed it) remember services. Every call has a
  deadline and never blocks the executor: call_async, then await inside a
  coroutine while a one-shot timer cancels the request when the deadline
  passes. A cancelled request is removed with remove_pending_request, so a
  late reply is dropped. A call whose reply did not come is sent again,
  the identical request (call_with_retries: CALL_ATTEMPTS in all, within
  the one deadline); only when none came is it reported as no result.
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
import time

from mira_memory.cognition import tools
from mira_memory.cognition.episodes import Allowed, OperatorEpisode
from mira_memory.msg import ToolResult
from mira_memory.srv import RecallMemory, Remember
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.task import Future

DEFAULT_CALL_TIMEOUT_SEC = 5.0
SERVICE_POLL_SEC = 0.05
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
    Clients of the memory node's tool services, each call with a deadline.

    The remember client exists only when with_remember is True (operator
    cognition). Without it the node has no way to reach remember at all; it
    does not even appear as a client in the ROS graph.
    """

    def __init__(self, node, memory_node, *, with_remember,
                 call_timeout_sec=DEFAULT_CALL_TIMEOUT_SEC, callback_group=None):
        if not call_timeout_sec > 0:
            raise ValueError('call_timeout_sec must be positive')
        self._node = node
        self._group = callback_group or ReentrantCallbackGroup()
        self._timeout = float(call_timeout_sec)
        # Deadlines are intervals; wall-clock or simulated time jumps must not move them.
        self._clock = Clock(clock_type=ClockType.STEADY_TIME)
        prefix = memory_node.rstrip('/')
        self.recall_client = node.create_client(
            RecallMemory, f'{prefix}/recall_memory', callback_group=self._group)
        self.remember_client = None
        if with_remember:
            self.remember_client = node.create_client(
                Remember, f'{prefix}/remember', callback_group=self._group)

    @property
    def has_remember(self):
        return self.remember_client is not None

    async def recall(self, query):
        """Call recall_memory; return the response, or None when no reply came in time."""
        request = RecallMemory.Request()
        request.query = query
        return await self.call(self.recall_client, request, 'recall_memory got no reply')

    async def remember(self, remember_request):
        """Call remember with a core RememberRequest; return the response or None."""
        if self.remember_client is None:
            raise RuntimeError('this node has no remember client')
        request = Remember.Request()
        for name, value in remember_request.service_fields().items():
            setattr(request, name, value)
        return await self.call(
            self.remember_client, request,
            f'remember got no reply in episode {request.episode_id} turn {request.turn_id}')

    async def call(self, client, request, what):
        """
        Send request within the deadline, again when no reply came; return the response or None.

        what starts the warning logged before a resend ("remember got no reply ...").
        """
        share = self._timeout / CALL_ATTEMPTS

        def resent(attempt):
            self._node.get_logger().warning(
                f'{what}; {REMEMBER_RESENT} (attempt {attempt + 1} of {CALL_ATTEMPTS})')
        return await call_with_retries(lambda: self.call_once(client, request, share),
                                       on_retry=resent)

    async def call_once(self, client, request, timeout):
        """
        Send request once; return the response, or None when none came within timeout.

        Waiting for the service to appear counts against the same timeout, so
        a node started before the memory node still gets its answer, and a
        missing memory node costs at most one timeout per attempt.
        """
        deadline = time.monotonic() + timeout
        while not client.service_is_ready():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            await self.sleep(min(SERVICE_POLL_SEC, remaining))
        future = client.call_async(request)
        timer = self._one_shot(max(deadline - time.monotonic(), 0.001), future.cancel)
        try:
            response = await future
        finally:
            timer.cancel()
            self._node.destroy_timer(timer)
        if future.cancelled():
            # The reply may still arrive; it must not complete anything now.
            client.remove_pending_request(future)
            return None
        return response

    async def sleep(self, seconds):
        """Wait without blocking the executor."""
        done = Future()
        timer = self._one_shot(seconds, lambda: done.set_result(None))
        try:
            await done
        finally:
            timer.cancel()
            self._node.destroy_timer(timer)

    def _one_shot(self, seconds, action):
        timer = None

        def fire():
            timer.cancel()
            action()

        timer = self._node.create_timer(
            seconds, fire, callback_group=self._group, clock=self._clock)
        return timer


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
