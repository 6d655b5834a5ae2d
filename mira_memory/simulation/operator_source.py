# SPDX-License-Identifier: Apache-2.0
"""
The simulation's operator: scripted utterances.

Node `operator_source`. It starts once the seed step (simulation/seed.py)
has created the scenario's entities: entity administration is supervised,
and the operator source has no admin service at all (it runs in the
operator_source enclave, docs/trust.md). It runs the scenario once:

1. Waits until the cognition node and the memory node subscribe to
   operator/utterance (the memory node admits remember only for turns it
   heard itself, and its subscription is volatile: a turn published before
   it matched would never reach it).
2. Publishes each scripted turn (episode_id, turn_id, text) and waits for
   cognition's end-of-turn marker for it, with a deadline, before the next;
   while it waits the turn goes again now and then (a listener may have
   matched late, ros/operator_topics.py).
   Episode ids are "<run id>-<scenario episode name>" with a run id made
   when the node starts, so no two runs publish the same episode id.

Then it exits 0 (exit_when_done, the default: the operator's script is over;
the other nodes keep running), or keeps spinning when exit_when_done is
false. Any failure (memory node or cognition missing, a turn
without a marker before its deadline, a parameter of the wrong type) exits 1.
"""

import sys

from mira_memory.cognition import scenario as scenario_file
from mira_memory.msg import ToolResult
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.ros.operator_topics import absolute_node_name, OperatorTopics, spin_until
from rclpy.node import Node


class ScenarioFailed(RuntimeError):
    """The scenario could not be run to its end."""


class OperatorSource(Node):
    """Plays the scenario's operator turns."""

    def __init__(self, **kwargs):
        super().__init__('operator_source', **kwargs)
        self.settings = parameters.declare_read_only(self, (
            ('scenario_file', '', 'Scenario TOML file: the operator turns.'),
            ('memory_node', 'memory',
             'Memory node which must hear every turn; relative names resolve in this '
             "node's namespace."),
            ('cognition_node', 'cognition',
             'Cognition node to wait for before the first utterance; relative names '
             "resolve in this node's namespace."),
            ('start_timeout_sec', 30.0,
             'How long to wait for the cognition and memory nodes to subscribe to '
             'operator/utterance.'),
            ('turn_timeout_sec', 30.0, "How long to wait for a turn's end-of-turn marker."),
            ('exit_when_done', True,
             'Exit (code 0) after the last turn; false keeps the node spinning.'),
        ))
        self.completed = False
        self.run_id = scenario_file.new_run_id()
        if not self.settings['scenario_file']:
            raise ScenarioFailed('parameter scenario_file is required')
        try:
            self.scenario = scenario_file.load(self.settings['scenario_file'])
        except scenario_file.ScenarioError as error:
            raise ScenarioFailed(str(error)) from None
        self._finished_turns = set()
        self._topics = OperatorTopics(self, self._on_tool_result)

    def _on_tool_result(self, message):
        if (message.episode_kind == ToolResult.EPISODE_OPERATOR and
                message.outcome == ToolResult.OUTCOME_TURN_COMPLETE):
            self._finished_turns.add((message.episode_id, message.turn_id))

    # Running the scenario (outside any callback, driving the executor) ----------

    def run(self, executor):
        """
        Wait for cognition and play every turn; raise ScenarioFailed on failure.

        Then, unless exit_when_done, keep spinning until SIGINT/SIGTERM.
        """
        self._executor = executor
        self.wait_for_listeners()
        self.get_logger().info(f'run id {self.run_id}: episode ids are {self.run_id}-<name>')
        for episode in self.scenario.episodes:
            episode_id = scenario_file.operator_episode_id(self.run_id, episode.name)
            for turn in episode.turns:
                self.play(episode_id, turn)
        self.completed = True
        self.get_logger().info('scenario complete')
        if not self.settings['exit_when_done']:
            executor.spin()

    def wait_for_listeners(self):
        """Wait until the cognition and memory nodes' utterance subscriptions are matched."""
        listeners = [self.settings['cognition_node'], self.settings['memory_node']]
        if not self._spin_until(lambda: self._topics.listeners_matched(listeners),
                                self.settings['start_timeout_sec']):
            names = ' and '.join(absolute_node_name(name, self.get_namespace())
                                 for name in listeners)
            raise ScenarioFailed(
                f'{names} did not both subscribe to {self._topics.utterance_topic} within '
                f"{self.settings['start_timeout_sec']:g} s "
                f'({self._topics.listeners_missing(listeners)})')

    def play(self, episode_id, turn):
        """Publish one operator turn and wait for its end-of-turn marker."""
        key = (episode_id, turn.id)
        self._finished_turns.discard(key)
        self._topics.say(episode_id, turn.id, turn.text)
        self.get_logger().info(f'operator {episode_id}/{turn.id}: {turn.text}')
        if not self._spin_until(lambda: key in self._finished_turns,
                                self.settings['turn_timeout_sec'],
                                every_step=self._topics.send_again_if_due):
            raise ScenarioFailed(f'no end-of-turn marker for {episode_id}/{turn.id}')

    def _spin_until(self, condition, timeout, every_step=None):
        return spin_until(self._executor, condition, timeout, every_step)


def main(args=None):
    """Run the scenario; exit 0 when it is complete, 1 when it fails or is interrupted."""
    return node_runner.run_once(OperatorSource, 'operator_source', (ScenarioFailed,),
                                'scenario', args)


if __name__ == '__main__':
    sys.exit(main())
