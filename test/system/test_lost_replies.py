# SPDX-License-Identifier: Apache-2.0
"""
A lost reply is never a lost answer: cognition against a real memory node, first replies lost.

A real memory node, the simulation's seed step and cognition run as
processes; cognition calls the memory node through drop_first_reply_proxy.py,
which hands every request to the memory node and loses the memory node's
first reply of each service on purpose (the memory node did the work: a
remember was applied). Cognition sends the identical request again, and the
memory node answers the repeat with its first answer.
"""

import dataclasses
import pathlib
import signal
import sys

from helpers.rosutil import unique_namespace
from helpers.scenarios import ADA_PREFERS_GREEN_TEA
from mira_memory.client import names
from mira_memory.cognition import scenario
from mira_memory.cognition.runner import REMEMBER_RESENT
from mira_memory.msg import OperatorUtterance, ToolResult
from mira_memory.ros.operator_topics import RepeatedTurn
from mira_memory.simulation import nodes as simulation
from mira_memory.simulation import processes
from mira_memory.srv import AdminStatus
from mira_memory.wire import HISTORY_SUBSCRIBER_QOS
import pytest

pytestmark = pytest.mark.ros

WAIT = 120.0
PROXY = pathlib.Path(__file__).resolve().parents[1] / 'helpers' / 'drop_first_reply_proxy.py'


class Proxy(processes.Process):
    """drop_first_reply_proxy.py as a real process."""

    def __init__(self, namespace, directory):
        super().__init__([sys.executable, str(PROXY), namespace], directory / 'proxy.log',
                         name='drop_first_reply_proxy')
        try:
            self.wait_ready('ready', timeout=WAIT)
        except BaseException:
            self.stop()
            raise

    def lines(self, prefix):
        return [line for line in self.output().splitlines() if line.startswith(prefix)]

    def stop(self):
        return super().stop(first=signal.SIGTERM, timeout=20)


def test_cognition_gets_the_first_answer_when_the_replies_are_lost(ros, tmp_path):
    namespace = unique_namespace('lost')
    scenario_file = tmp_path / 'scenario.toml'
    scenario_file.write_text(ADA_PREFERS_GREEN_TEA)
    specs = {spec.name: spec for spec in simulation.simulation_nodes(
        database_path=str(tmp_path / 'memory.sqlite3'), scenario_file=str(scenario_file),
        namespace=namespace, call_timeout_sec=6.0)}
    # Cognition calls the proxy; the proxy calls the memory node.
    cognition = specs['cognition']
    specs['cognition'] = dataclasses.replace(cognition, parameters={
        **cognition.parameters, 'memory_node': 'memory_proxy'})
    results = []
    subscription = ros.node.create_subscription(
        ToolResult, f'{namespace}/cognition/tool_results', results.append,
        HISTORY_SUBSCRIBER_QOS)
    publisher = ros.node.create_publisher(
        OperatorUtterance, f'{namespace}/operator/utterance', 10)
    started = []

    def start(name):
        simulation.await_prerequisite(specs[name], started)
        started.append(simulation.Process(specs[name], tmp_path / 'logs'))

    def logs():
        return '\n'.join(f'--- {process.name}\n{process.output()}' for process in started)

    try:
        for name in ('memory', 'seed', 'cognition'):
            start(name)
        started.append(Proxy(namespace, tmp_path))
        ros.spin_until(lambda: started[1].poll() == 0, 'the seed step', timeout=WAIT,
                       logs=logs)
        ros.spin_until(lambda: publisher.get_subscription_count() >= 2,
                       'cognition and memory to hear turns', timeout=WAIT, logs=logs)
        episode_id = scenario.operator_episode_id(scenario.new_run_id(), 'e1')
        turn = RepeatedTurn(publisher, OperatorUtterance(
            episode_id=episode_id, turn_id='t1', text='Ada Lovelace prefers green tea.'))

        def marker():
            return next((message for message in results
                         if message.outcome == ToolResult.OUTCOME_TURN_COMPLETE), None)
        ros.spin_until(marker, 'the end of the turn', timeout=WAIT, logs=logs,
                       every_step=turn.send_again_if_due)
        status = ros.settle(AdminStatus, names.service_name(
            names.memory_node_name(namespace), names.ADMIN_STATUS), timeout=WAIT)
        proxy, cognition_log = started[-1], started[2].output()
    finally:
        ros.node.destroy_publisher(publisher)
        ros.node.destroy_subscription(subscription)
        for process in reversed(started):
            process.stop()
    # The memory node answered the first request of each; that reply was lost.
    assert proxy.lines('dropped ') == [
        'dropped recall_memory 1: found', 'dropped remember 1: applied'], logs()
    # The second request of each was answered (on a loaded machine that
    # reply can come after its share of the deadline, and a third is sent).
    answered = proxy.lines('answered ')
    assert {'answered recall_memory 2: found', 'answered remember 2: applied'} <= set(
        answered), logs()
    recall, remember = [message for message in results
                        if message.outcome != ToolResult.OUTCOME_TURN_COMPLETE]
    assert (recall.tool, recall.outcome) == ('recall_memory', 'found'), recall
    # The first answer, not applied/duplicate: this turn stored it.
    assert (remember.tool, remember.outcome, remember.memory_id) == (
        'remember', 'applied/created', 'MEM1')
    assert marker().text == 'assistant: stored MEM1'
    assert status.memory_count == 1
    # Each call was sent again at least once (recall and remember).
    assert cognition_log.count(REMEMBER_RESENT) >= 2, cognition_log
    assert 'recall_memory got no reply' in cognition_log, cognition_log
    assert 'remember got no reply' in cognition_log, cognition_log
