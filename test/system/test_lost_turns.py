# SPDX-License-Identifier: Apache-2.0
"""
A turn lost to cognition is sent again, by the operator source and by operator_chat.

Cognition runs as a process through first_turn_lost_node.py, which drops
the first operator turn it receives, as a volatile subscription that had not
yet matched the publisher does. The operator's side sends the turn again
while its end-of-turn marker has not come, and the turn runs once.
"""

import pathlib
import subprocess
import sys

from helpers.rosutil import executable, unique_namespace
from helpers.scenarios import ADA_PREFERS_GREEN_TEA
from mira_memory.client import names
from mira_memory.simulation import nodes as simulation
from mira_memory.simulation import processes
from mira_memory.srv import AdminStatus
import pytest

pytestmark = pytest.mark.ros

WAIT = 120.0
HELPER = pathlib.Path(__file__).resolve().parents[1] / 'helpers' / 'first_turn_lost_node.py'
LOST_TURN = 'the first operator turn was lost (test/helpers/first_turn_lost_node.py)'


def simulation_specs(namespace, directory):
    """Return the simulation's NodeSpecs by name, on ADA_PREFERS_GREEN_TEA."""
    scenario_file = directory / 'scenario.toml'
    scenario_file.write_text(ADA_PREFERS_GREEN_TEA)
    return {spec.name: spec for spec in simulation.simulation_nodes(
        database_path=str(directory / 'memory.sqlite3'), scenario_file=str(scenario_file),
        namespace=namespace)}


def cognition_that_loses_a_turn(spec, directory):
    """Start cognition (spec) through first_turn_lost_node.py."""
    params_file = directory / 'cognition.params.yaml'
    params_file.write_text(simulation.params_yaml(spec))
    command = simulation.process_command(spec, params_file)
    return processes.Process([sys.executable, str(HELPER), *command[1:]],
                             directory / 'cognition.log', name='cognition')


def test_the_operator_source_sends_a_turn_again_that_cognition_lost(ros, tmp_path):
    namespace = unique_namespace('lostturn')
    specs = simulation_specs(namespace, tmp_path)
    started = []

    def start(name):
        simulation.await_prerequisite(specs[name], started)
        started.append(simulation.Process(specs[name], tmp_path / 'logs'))

    def logs():
        return '\n'.join(f'--- {process.name}\n{process.output()}' for process in started)

    try:
        start('memory')
        start('seed')
        started.append(cognition_that_loses_a_turn(specs['cognition'], tmp_path))
        start('operator_source')
        source = started[-1]
        ros.spin_until(lambda: source.poll() is not None, 'the operator source to finish',
                       timeout=WAIT, logs=logs)
        status = ros.settle(AdminStatus, names.service_name(
            names.memory_node_name(namespace), names.ADMIN_STATUS), timeout=WAIT)
        cognition = started[2].output()
    finally:
        for process in reversed(started):
            process.stop()
    assert source.poll() == 0, logs()
    assert cognition.count(LOST_TURN) == 1, logs()
    # The first turn ran once, from a copy sent again: one memory, remembered.
    assert 'turn_id_reused' not in logs()
    assert status.memory_count == 1, logs()


def test_operator_chat_sends_a_turn_again_that_cognition_lost(tmp_path):
    namespace = unique_namespace('lostchat')
    cognition = cognition_that_loses_a_turn(
        simulation_specs(namespace, tmp_path)['cognition'], tmp_path)
    try:
        # A turn of a chat episode has no scripted calls: it ends at once. No
        # memory node runs, and cognition's client of one makes the chat wait
        # start_timeout_sec for it before the turn.
        result = subprocess.run(
            [executable('operator_chat'), '--ros-args', '-r', f'__ns:={namespace}',
             '-p', 'turn_timeout_sec:=60.0', '-p', 'start_timeout_sec:=10.0'],
            input='Hello, Mira.\n/quit\n', capture_output=True, text=True,
            timeout=WAIT)
    finally:
        cognition.stop()
    logs = f'{result.stdout}\n{result.stderr}\n--- cognition\n{cognition.output()}'
    assert result.returncode == 0, logs
    assert cognition.output().count(LOST_TURN) == 1, logs
    assert '(no end of turn' not in result.stdout, logs
    assert 'turn_id_reused' not in logs
