# SPDX-License-Identifier: Apache-2.0
"""
The operator's end of operator/utterance and cognition/tool_results.

operator_source (scripted turns) and operator_chat (typed turns) both speak
as the operator: they publish OperatorUtterance turns and follow cognition's
ToolResult messages, with the same QoS, and both wait before the first turn
until the nodes that must hear it are subscribed and matched. OperatorTopics
is that shared part; each tool keeps what it does with the results.
"""

import time

from mira_memory.msg import OperatorUtterance, ToolResult
from mira_memory.wire import (
    HISTORY_PUBLISHER_QOS, HISTORY_SUBSCRIBER_QOS, TOOL_RESULTS_TOPIC, UTTERANCE_TOPIC)

SPIN_STEP_SEC = 0.05


class OperatorTopics:
    """Publishes operator turns on a node; hands every ToolResult to on_result."""

    def __init__(self, node, on_result):
        self._node = node
        self._utterances = node.create_publisher(
            OperatorUtterance, UTTERANCE_TOPIC, HISTORY_PUBLISHER_QOS)
        node.create_subscription(
            ToolResult, TOOL_RESULTS_TOPIC, on_result, HISTORY_SUBSCRIBER_QOS)

    @property
    def utterance_topic(self):
        """Return the resolved name of the utterance topic."""
        return self._utterances.topic_name

    def say(self, episode_id, turn_id, text):
        """Publish one operator turn."""
        self._utterances.publish(
            OperatorUtterance(episode_id=episode_id, turn_id=turn_id, text=text))

    def listeners_matched(self, node_names):
        """
        Return True once every named node subscribes to the utterance topic, all matched.

        Graph discovery and endpoint matching are separate; both are needed.
        Every subscriber seen (a memory node observing turns, too) must be
        matched before the first turn, or it would miss that turn: the
        listeners' subscriptions are volatile.
        """
        own_namespace = self._node.get_namespace()
        wanted = [split_node_name(name, own_namespace) for name in node_names]
        subscribers = self._node.get_subscriptions_info_by_topic(self.utterance_topic)
        present = all(
            any(info.node_name == name and info.node_namespace == namespace
                for info in subscribers)
            for namespace, name in wanted)
        return present and self._utterances.get_subscription_count() >= len(subscribers)


def absolute_node_name(name, own_namespace):
    """Return a node name with relative names resolved in own_namespace."""
    if name.startswith('/'):
        return name
    return f'{own_namespace.rstrip("/")}/{name}'


def split_node_name(name, own_namespace):
    """Return (namespace, name) of a node name, relative names in own_namespace."""
    namespace, _, base = absolute_node_name(name, own_namespace).rpartition('/')
    return namespace or '/', base


def spin_until(executor, condition, timeout):
    """Spin executor until condition() is true; return False when timeout passes first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        executor.spin_once(timeout_sec=SPIN_STEP_SEC)
    return True
