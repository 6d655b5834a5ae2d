# SPDX-License-Identifier: Apache-2.0
"""
The observed-turn gate: remember only for an operator turn the memory node heard.

The node subscribes to operator/utterance, the topic cognition reads, and
keeps the turns it heard in a core TurnWindow. remember is admitted only for
a turn in that window with exactly the request's utterance. Cognition and
the node receive each utterance independently, so a remember may arrive
first: heard() is a coroutine that waits for the turn (observed_turn_wait_sec)
on a future that the subscription completes, or a one-shot steady-clock
timer ends. The remember service and those timers are in one
ReentrantCallbackGroup, so on the single-threaded executor (rclpy.spin)
other requests, and the subscription itself, are served while it waits.
"""

from mira_memory.core.admission import turns
from mira_memory.msg import OperatorUtterance
from mira_memory.wire import LIVE_SUBSCRIBER_QOS, UTTERANCE_TOPIC
from rclpy.clock import Clock, ClockType
from rclpy.task import Future

# remember calls waiting for their turn at once; more are decided at once
# (a flood of calls for turns nobody said must not pile up timers).
MAX_TURN_WAITS = 64


class TurnGate:
    """The heard operator turns of a node, and the remember calls waiting for theirs."""

    def __init__(self, node, window, wait_sec, callback_group):
        """Subscribe node to operator turns into window; wait_sec bounds each wait."""
        self._node = node
        self.window = window
        self._wait_sec = wait_sec
        self._group = callback_group
        # (episode_id, turn_id) -> [(utterance, Future)] of remember calls waiting.
        self._waiters = {}
        self._waiting = 0
        # A deadline is an interval: simulated or wall-clock time jumps must not move it.
        self._steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        # Volatile: a restarted node must not refill its window with old words.
        self.subscription = node.create_subscription(
            OperatorUtterance, UTTERANCE_TOPIC, self.observe, LIVE_SUBSCRIBER_QOS)

    def observe(self, message):
        """Keep an operator turn heard on the topic; wake the remember calls waiting for it."""
        if not self.window.observe(message.episode_id, message.turn_id, message.text):
            self._node.get_logger().warning(
                'ignored an operator turn with an empty or over-long id or text',
                throttle_duration_sec=5.0)
            return
        for utterance, heard in self._waiters.get((message.episode_id, message.turn_id), ()):
            if utterance == message.text and not heard.done():
                heard.set_result(True)

    async def heard(self, request):
        """
        Return turns.HEARD, NOT_HEARD or DIFFERENT for the request's turn.

        A turn not (yet) heard with this utterance is waited for up to
        observed_turn_wait_sec; the executor serves everything else meanwhile.
        """
        key = (request.episode_id, request.turn_id)
        heard = self.window.check(*key, request.utterance)
        if heard == turns.HEARD or self._wait_sec == 0 or self._waiting >= MAX_TURN_WAITS:
            return heard
        arrived = Future()
        waiter = (request.utterance, arrived)
        self._waiters.setdefault(key, []).append(waiter)
        self._waiting += 1
        timer = None

        def deadline():
            timer.cancel()
            if not arrived.done():
                arrived.set_result(False)

        timer = self._node.create_timer(self._wait_sec, deadline,
                                        callback_group=self._group, clock=self._steady_clock)
        started = self._steady_clock.now()
        try:
            await arrived
        finally:
            timer.cancel()
            self._node.destroy_timer(timer)
            self._waiting -= 1
            waiters = self._waiters[key]
            waiters.remove(waiter)
            if not waiters:
                del self._waiters[key]
        # Debug, not info: see the remember log line in memory/service.py.
        self._node.get_logger().debug(
            f'remember waited {(self._steady_clock.now() - started).nanoseconds / 1e6:.1f} ms '
            f'for its operator turn ({"heard" if arrived.result() else "not heard"})')
        return self.window.check(*key, request.utterance)

    def diagnostic_values(self):
        """Return the window's (key, value) pairs for /diagnostics."""
        return (
            ('observed turns', str(len(self.window))),
            ('observed turns max', str(self.window.max_turns)),
        )
