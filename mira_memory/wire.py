# SPDX-License-Identifier: Apache-2.0
"""
The wire contract between the nodes: topic names, QoS profiles and the id rule.

Every node imports its topic names and QoS from here, so a publisher and
its subscribers cannot drift apart. The services are named where they are
served (the memory node's ~/recall_memory, ~/remember, ~/admin/<command>)
and typed by mira_memory/srv.

Publishers keep recent history (transient local) so observers that join
late, such as a transcript, still see a whole run; subscribers choose.
Cognition's and the memory node's utterance subscriptions are volatile: an
operator's words are events, and a restarted node must not act on old ones
again.

The QoS profiles are built from rclpy on first use (a module __getattr__),
so the ROS-free modules (the scenario loader) can import the id rule from
here without loading rclpy; `from mira_memory.wire import LIVE_SUBSCRIBER_QOS`
works as for any constant.
"""

import re

UTTERANCE_TOPIC = 'operator/utterance'
TOOL_RESULTS_TOPIC = 'cognition/tool_results'
# Attention's own results (autonomous episodes): never on cognition's topic,
# whose end-of-turn markers the operator's tools print and perception acts on.
ATTENTION_RESULTS_TOPIC = 'attention/tool_results'
OBSERVATIONS_TOPIC = 'perception/observations'
DIAGNOSTICS_TOPIC = '/diagnostics'
DIAGNOSTICS_DEPTH = 10


# name -> (durability, depth); every profile is reliable and keeps the last depth.
_QOS = {
    'HISTORY_PUBLISHER_QOS': ('TRANSIENT_LOCAL', 1000),
    'HISTORY_SUBSCRIBER_QOS': ('TRANSIENT_LOCAL', 1000),
    'LIVE_SUBSCRIBER_QOS': ('VOLATILE', 1000),
}


def __getattr__(name):
    """Build a QoS profile of _QOS on first use; the same object afterwards."""
    if name not in _QOS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    durability, depth = _QOS[name]
    profile = QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=getattr(DurabilityPolicy, durability))
    globals()[name] = profile
    return profile


# Episode, turn, observation and trigger ids on the topics. Ids end up in
# memory provenance labels ("episode <id> turn <id>"), where whitespace
# would let two turns share one label. (Admission checks its own, looser
# bound in core/admission/operator_turn.py: 1-64 characters, no whitespace
# or control characters; every id this rule accepts passes it.)
ID_PATTERN = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')


def is_valid_id(text):
    """Return True when text may be an episode, turn, observation or trigger id."""
    return isinstance(text, str) and ID_PATTERN.fullmatch(text) is not None
