# SPDX-License-Identifier: Apache-2.0
"""
Cognition hears a turn more than once: the operator's side sends it again until its marker.

The cognition node runs in the test process (a scripted turn without tool
calls); the test publishes turns on real DDS and reads the markers.
"""

from helpers.inprocess import InProcessNode
import pytest

pytestmark = pytest.mark.ros

SCENARIO = """
[[episodes]]
name = "e1"

[[episodes.turns]]
id = "t1"
text = "Hello, Mira."
"""


def test_the_same_turn_heard_again_runs_once_and_other_words_are_refused(
        ros, node_context, tmp_path):
    from mira_memory.cognition import scenario
    from mira_memory.cognition.node import CognitionNode
    from mira_memory.msg import OperatorUtterance, ToolResult
    from mira_memory.wire import HISTORY_PUBLISHER_QOS, HISTORY_SUBSCRIBER_QOS
    scenario_file = tmp_path / 'scenario.toml'
    scenario_file.write_text(SCENARIO)
    cognition = InProcessNode(node_context, {'scenario_file': str(scenario_file)},
                              node_class=CognitionNode)
    results = []
    subscription = ros.node.create_subscription(
        ToolResult, f'{cognition.namespace}/cognition/tool_results', results.append,
        HISTORY_SUBSCRIBER_QOS)
    publisher = ros.node.create_publisher(
        OperatorUtterance, f'{cognition.namespace}/operator/utterance', HISTORY_PUBLISHER_QOS)
    episode_id = scenario.operator_episode_id(scenario.new_run_id(), 'e1')

    def markers():
        return [message.reason for message in results
                if (message.outcome, message.episode_id, message.turn_id) == (
                    ToolResult.OUTCOME_TURN_COMPLETE, episode_id, 't1')]
    try:
        ros.spin_until(lambda: publisher.get_subscription_count() == 1,
                       'cognition to hear turns', timeout=30.0)
        # One writer, reliable: cognition hears these in this order and runs
        # its turns one at a time, so the last one's marker comes last.
        for text in ('Hello, Mira.', 'Hello, Mira.', 'Hello, Mira.', 'Goodbye, Mira.'):
            publisher.publish(OperatorUtterance(episode_id=episode_id, turn_id='t1', text=text))
        ros.spin_until(lambda: 'turn_id_reused' in markers(), 'the marker of other words',
                       timeout=30.0)
        ros.spin_for(0.5)
    finally:
        ros.node.destroy_publisher(publisher)
        ros.node.destroy_subscription(subscription)
        assert cognition.stop() == 0, cognition.failure
    # The first copy ran (its marker, no reason); two more copies changed nothing.
    assert markers() == ['', 'turn_id_reused']
