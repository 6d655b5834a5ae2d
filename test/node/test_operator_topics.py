# SPDX-License-Identifier: Apache-2.0
"""
What operator_source and operator_chat share: node-name resolution, and a turn sent again.

The resend test runs on real DDS (the node tier's participant).
"""

from helpers.rosutil import unique_namespace
import pytest

pytestmark = pytest.mark.ros  # operator_topics imports the generated messages


@pytest.mark.parametrize('name, namespace, absolute, split', [
    ('cognition', '/mira', '/mira/cognition', ('/mira', 'cognition')),
    ('cognition', '/', '/cognition', ('/', 'cognition')),
    ('/other/memory', '/mira', '/other/memory', ('/other', 'memory')),
    ('/memory', '/mira', '/memory', ('/', 'memory')),
    ('robot/memory', '/mira', '/mira/robot/memory', ('/mira/robot', 'memory')),
    ('robot/memory', '/', '/robot/memory', ('/robot', 'memory')),
])
def test_node_names_resolve_in_the_own_namespace(name, namespace, absolute, split):
    from mira_memory.ros.operator_topics import absolute_node_name, split_node_name
    assert absolute_node_name(name, namespace) == absolute
    assert split_node_name(name, namespace) == split


def test_a_turn_goes_again_until_a_listener_that_matched_late_hears_it(ros):
    # A volatile listener that joins after the turn was sent never gets that
    # copy (the same as one that the publisher had matched before it matched
    # the publisher): only the turn sent again reaches it.
    from mira_memory.msg import OperatorUtterance
    from mira_memory.ros.operator_topics import RepeatedTurn, TURN_RESEND_AFTER_SEC
    from mira_memory.wire import HISTORY_PUBLISHER_QOS, LIVE_SUBSCRIBER_QOS
    topic = f'{unique_namespace("resend")}/operator/utterance'
    publisher = ros.node.create_publisher(OperatorUtterance, topic, HISTORY_PUBLISHER_QOS)
    heard = []
    turn = RepeatedTurn(publisher, OperatorUtterance(
        episode_id='e1', turn_id='t1', text='Ada Lovelace prefers green tea.'))
    subscription = ros.node.create_subscription(
        OperatorUtterance, topic, heard.append, LIVE_SUBSCRIBER_QOS)
    resent = 0
    try:
        ros.spin_until(lambda: publisher.get_subscription_count() == 1, 'the listener to match',
                       timeout=30.0)

        def heard_it():
            nonlocal resent
            resent += turn.send_again_if_due()
            return bool(heard)
        ros.spin_until(heard_it, 'the turn sent again', timeout=sum(TURN_RESEND_AFTER_SEC) + 5)
        ros.spin_for(0.5)
    finally:
        ros.node.destroy_subscription(subscription)
        ros.node.destroy_publisher(publisher)
    # Copies sent before the listener matched are lost too; the first copy always is.
    assert 1 <= len(heard) <= resent
    assert {(message.episode_id, message.turn_id, message.text) for message in heard} == {
        ('e1', 't1', 'Ada Lovelace prefers green tea.')}


def test_a_turn_is_sent_again_at_its_resend_times_and_not_after():
    from mira_memory.ros import operator_topics
    now = [100.0]
    published = []

    class Publisher:
        def publish(self, message):
            published.append(message)
    turn = operator_topics.RepeatedTurn(Publisher(), 'turn', clock=lambda: now[0])
    sent = []
    for moment in (100.5, 101.0, 101.1, 103.0, 110.0, 114.0, 116.0, 200.0):
        now[0] = moment
        sent.append(turn.send_again_if_due())
    # 1, 3, 7 and 15 s after the first: a late check sends once for every time passed.
    assert sent == [False, True, False, True, True, False, True, False]
    assert published == ['turn'] * 5


def test_the_wait_for_listeners_says_which_node_it_has_not_seen(ros):
    # A start that times out names the listener never seen subscribing and
    # the matched count, so that a discovery fault can be told from a node
    # that was not started.
    import rclpy
    from mira_memory.msg import OperatorUtterance
    from mira_memory.ros.operator_topics import OperatorTopics
    from mira_memory.wire import HISTORY_SUBSCRIBER_QOS, UTTERANCE_TOPIC
    namespace = unique_namespace('listeners')
    operator = rclpy.create_node('operator', namespace=namespace, context=ros.context)
    memory = rclpy.create_node('memory', namespace=namespace, context=ros.context)
    try:
        topics = OperatorTopics(operator, lambda message: None)
        listeners = ['cognition', 'memory']
        assert topics.listeners_missing(listeners) == (
            f'not seen subscribing: {namespace}/cognition, {namespace}/memory; '
            '0 of the 0 subscriptions seen are matched')
        memory.create_subscription(OperatorUtterance, UTTERANCE_TOPIC, lambda message: None,
                                   HISTORY_SUBSCRIBER_QOS)
        ros.spin_until(lambda: topics.listeners_matched(['memory']), 'memory to match',
                       timeout=30.0)
        assert not topics.listeners_matched(listeners)
        assert topics.listeners_missing(listeners) == (
            f'not seen subscribing: {namespace}/cognition; '
            '1 of the 1 subscriptions seen are matched')
    finally:
        memory.destroy_node()
        operator.destroy_node()
