# SPDX-License-Identifier: Apache-2.0
"""
launch_testing test of the installed simulation.launch.py with its demo scenario.

The launch file starts the memory node (on a temporary database), cognition,
perception, attention, the seed step and, once it exited 0, the operator
source; the scenario runs by itself.
This test watches /mira/cognition/tool_results and the ROS graph. Run by
`colcon test` (add_launch_test) or `launch_test test/launch/simulation_launch_test.py`
on a ROS 2 install; DDS settings come from the environment.
"""

import os
import tempfile
import time
import unittest

from ament_index_python.packages import get_package_share_directory
import launch
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
import launch_testing
import launch_testing.actions
import launch_testing.asserts
from mira_memory.cognition import scenario
from mira_memory.msg import ToolResult
from mira_memory.wire import HISTORY_SUBSCRIBER_QOS
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import NodeNameNonExistentError

NAMESPACE = '/mira'
# Cognition's results, and attention's on a topic of its own.
TOOL_RESULTS = ('/mira/cognition/tool_results', '/mira/attention/tool_results')
RECALL_TYPE = 'mira_memory/srv/RecallMemory'
REMEMBER_TYPE = 'mira_memory/srv/Remember'
# Bounded waits on a loaded 2-core machine: five processes start, then the
# scenario's ten operator turns and one autonomous episode run.
SCENARIO_WAIT = 120.0
GRAPH_WAIT = 30.0

# The demo scenario's remember calls (config/scenarios/demo.toml) on a fresh
# database: (episode, turn) -> (outcome, reason, memory_id).
EXPECTED_OPERATOR_REMEMBERS = {
    ('e1', 't1'): ('applied/created', '', 'MEM1'),
    ('e1', 't2'): ('applied/created', '', 'MEM2'),
    ('e1', 't3'): ('applied/created', '', 'MEM3'),
    ('e1', 't5'): ('rejected', 'value_not_supported', ''),
    ('e2', 't2'): ('applied/duplicate', '', 'MEM1'),
    ('e2', 't3'): ('rejected', 'conflict', ''),
}
LAST_OPERATOR_TURN = ('e2', 't4')
AUTONOMOUS_EPISODE = 'greet_ada-o1'


@pytest.mark.launch_test
def generate_test_description():
    database_dir = tempfile.TemporaryDirectory(prefix='mira_simulation_launch_test_')
    simulation = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory('mira_memory'), 'launch', 'simulation.launch.py')),
        launch_arguments={
            'database_path': os.path.join(database_dir.name, 'memory.sqlite3'),
        }.items())
    # The TemporaryDirectory lives in the test context until the run ends.
    context = {'database_dir': database_dir}
    return launch.LaunchDescription([simulation, launch_testing.actions.ReadyToTest()]), context


class TestSimulation(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node('simulation_launch_test', context=cls.context)
        cls.executor = SingleThreadedExecutor(context=cls.context)
        cls.executor.add_node(cls.node)
        cls.results = []
        # Transient local: results published before this test joined arrive too.
        for topic in TOOL_RESULTS:
            cls.node.create_subscription(
                ToolResult, topic, cls.results.append, HISTORY_SUBSCRIBER_QOS)

    @classmethod
    def tearDownClass(cls):
        cls.executor.shutdown()
        cls.node.destroy_node()
        rclpy.shutdown(context=cls.context)

    def spin_until(self, condition, timeout):
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.2)
        return condition()

    def scenario_finished(self):
        turn_done = any(
            result.outcome == ToolResult.OUTCOME_TURN_COMPLETE
            and (scenario.episode_name(result.episode_id), result.turn_id) == LAST_OPERATOR_TURN
            for result in self.results)
        autonomous_done = any(
            result.outcome == ToolResult.OUTCOME_EPISODE_COMPLETE
            and result.episode_id == AUTONOMOUS_EPISODE
            for result in self.results)
        return turn_done and autonomous_done

    def remember_results(self, episode_kind):
        return [
            result for result in self.results
            if result.tool == 'remember' and result.episode_kind == episode_kind
        ]

    def test_scenario_remember_results_arrive_with_expected_outcomes(self):
        self.assertTrue(
            self.spin_until(self.scenario_finished, SCENARIO_WAIT),
            f'scenario did not finish; results so far: {self.results}')

        operator = {
            # Episode ids are "<run id>-<name>"; the expectations use the names.
            (scenario.episode_name(result.episode_id), result.turn_id):
                (result.outcome, result.reason, result.memory_id)
            for result in self.remember_results(ToolResult.EPISODE_OPERATOR)
        }
        self.assertEqual(operator, EXPECTED_OPERATOR_REMEMBERS)

        autonomous = [
            (result.episode_id, result.outcome, result.reason)
            for result in self.remember_results(ToolResult.EPISODE_AUTONOMOUS)
        ]
        self.assertEqual(
            autonomous, [(AUTONOMOUS_EPISODE, ToolResult.OUTCOME_REFUSED, 'tool_unavailable')])

    def test_seed_step_exits_once_the_entities_exist(self, proc_info):
        # The operator source starts only after this (launching.start_after_success).
        proc_info.assertWaitForShutdown(process='simulation_seed', timeout=SCENARIO_WAIT)

    def test_operator_source_exits_once_its_script_is_done(self, proc_info):
        # Waiting here also keeps the end of the run from racing its own exit:
        # the post-shutdown check then sees the code it chose, not a SIGINT.
        proc_info.assertWaitForShutdown(process='operator_source', timeout=SCENARIO_WAIT)

    def clients_once_visible(self, node_name, ready):
        """Return node_name's clients once ready(clients, publishers) holds, else None."""
        deadline = time.monotonic() + GRAPH_WAIT
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.2)
            try:
                clients = self.node.get_client_names_and_types_by_node(node_name, NAMESPACE)
                publishers = self.node.get_publisher_names_and_types_by_node(
                    node_name, NAMESPACE)
            except NodeNameNonExistentError:
                continue
            if ready(clients, publishers):
                return clients
        return None

    def test_attention_has_a_recall_client_and_no_remember_client(self):
        clients = self.clients_once_visible(
            'attention', lambda clients, _: any(RECALL_TYPE in types for _, types in clients))
        self.assertIsNotNone(clients, 'attention never showed its recall_memory client')
        self.assertNotIn(REMEMBER_TYPE, [type_ for _, types in clients for type_ in types])

    def test_perception_has_no_remember_client(self):
        # Its observations publisher shows that the graph has its endpoints.
        clients = self.clients_once_visible(
            'perception', lambda _, publishers: any(
                name == '/mira/perception/observations' for name, _ in publishers))
        self.assertIsNotNone(clients, 'perception never showed its observations publisher')
        self.assertNotIn(REMEMBER_TYPE, [type_ for _, types in clients for type_ in types])


@launch_testing.post_shutdown_test()
class TestSimulationShutdown(unittest.TestCase):

    def test_processes_exit_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
