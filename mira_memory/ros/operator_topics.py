# SPDX-License-Identifier: Apache-2.0
"""
The operator's end of operator/utterance and cognition/tool_results.

operator_source (scripted turns) and operator_chat (typed turns) both speak
as the operator: they publish OperatorUtterance turns and follow cognition's
ToolResult messages, with the same QoS, and both wait before the first turn
until the nodes that must hear it are subscribed and matched. OperatorTopics
is that shared part; each tool keeps what it does with the results.

Matched is not yet heard. Each side of a topic matches the other on its own
discovery data, so the publisher may count a listener as matched before
that listener has matched the publisher, and a volatile listener drops a
turn sent in that window for good. A turn therefore goes again, identical,
while its end-of-turn marker has not come (TURN_RESEND_AFTER_SEC):
cognition runs a turn once and ignores the same turn heard again, and the
memory node keeps one copy of it.
"""

import time

from mira_memory.msg import OperatorUtterance, ToolResult
from mira_memory.wire import (
    HISTORY_PUBLISHER_QOS, HISTORY_SUBSCRIBER_QOS, TOOL_RESULTS_TOPIC, UTTERANCE_TOPIC)

SPIN_STEP_SEC = 0.05
# Seconds after a turn was first sent at which it goes again while its
# marker has not come: soon for the discovery window, then more sparsely
# (a model may think for a while; a repeat costs the listeners a lookup).
TURN_RESEND_AFTER_SEC = (1.0, 3.0, 7.0, 15.0)


class OperatorTopics:
    """Publishes operator turns on a node; hands every ToolResult to on_result."""

    def __init__(self, node, on_result):
        self._node = node
        self._utterances = node.create_publisher(
            OperatorUtterance, UTTERANCE_TOPIC, HISTORY_PUBLISHER_QOS)
        node.create_subscription(
            ToolResult, TOOL_RESULTS_TOPIC, on_result, HISTORY_SUBSCRIBER_QOS)
        self._turn = None

    @property
    def utterance_topic(self):
        """Return the resolved name of the utterance topic."""
        return self._utterances.topic_name

    def say(self, episode_id, turn_id, text):
        """Publish one operator turn; send_again_if_due() repeats it while unanswered."""
        self._turn = RepeatedTurn(
            self._utterances,
            OperatorUtterance(episode_id=episode_id, turn_id=turn_id, text=text))

    def send_again_if_due(self):
        """Publish the last turn again if a resend time has passed (RepeatedTurn)."""
        return self._turn is not None and self._turn.send_again_if_due()

    def listeners_matched(self, node_names):
        """
        Return True once every named node subscribes to the utterance topic, all matched.

        Graph discovery and endpoint matching are separate; both are needed.
        Every subscriber seen (a memory node observing turns, too) must be
        matched before the first turn, or it would miss that turn: the
        listeners' subscriptions are volatile.
        """
        unseen, matched, seen = self._listeners(node_names)
        return not unseen and matched >= seen

    def listeners_missing(self, node_names):
        """Return what listeners_matched(node_names) still waits for, in words."""
        unseen, matched, seen = self._listeners(node_names)
        return (f'not seen subscribing: {", ".join(unseen) or "none"}; '
                f'{matched} of the {seen} subscriptions seen are matched')

    def _listeners(self, node_names):
        """Return (the named nodes not seen subscribing, matched count, subscriptions seen)."""
        own_namespace = self._node.get_namespace()
        subscribers = self._node.get_subscriptions_info_by_topic(self.utterance_topic)
        subscribing = {(info.node_namespace, info.node_name) for info in subscribers}
        unseen = [absolute_node_name(name, own_namespace) for name in node_names
                  if split_node_name(name, own_namespace) not in subscribing]
        return unseen, self._utterances.get_subscription_count(), len(subscribers)


class RepeatedTurn:
    """One operator turn: published now, and again at TURN_RESEND_AFTER_SEC while unanswered."""

    def __init__(self, publisher, message, clock=time.monotonic):
        self._publisher = publisher
        self._message = message
        self._clock = clock
        now = clock()
        self._resend_times = [now + after for after in TURN_RESEND_AFTER_SEC]
        publisher.publish(message)

    def send_again_if_due(self):
        """
        Publish the turn again when a resend time has passed; return True if it went.

        Call it while waiting for the turn's marker, and not after.
        """
        now = self._clock()
        due = False
        while self._resend_times and now >= self._resend_times[0]:
            self._resend_times.pop(0)
            due = True
        if due:
            self._publisher.publish(self._message)
        return due


def absolute_node_name(name, own_namespace):
    """Return a node name with relative names resolved in own_namespace."""
    if name.startswith('/'):
        return name
    return f'{own_namespace.rstrip("/")}/{name}'


def split_node_name(name, own_namespace):
    """Return (namespace, name) of a node name, relative names in own_namespace."""
    namespace, _, base = absolute_node_name(name, own_namespace).rpartition('/')
    return namespace or '/', base


def spin_until(executor, condition, timeout, every_step=None):
    """
    Spin executor until condition() is true; return False when timeout passes first.

    every_step(), when given, runs before each step (a turn's resend).
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        if every_step is not None:
            every_step()
        executor.spin_once(timeout_sec=SPIN_STEP_SEC)
    return True
