# SPDX-License-Identifier: Apache-2.0
"""
launch_testing test of the installed bringup.launch.py.

Starts the robot bringup with a robot profile and a temporary database, then
calls the memory node's real services. Run by `colcon test` (add_launch_test)
or `launch_test test/launch/bringup_launch_test.py` on a ROS 2 install; DDS
settings (ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE) come from the
environment.
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
from mira_memory.ros import clients
from mira_memory.srv import AdminEntityAdd, AdminStatus, RecallMemory
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

ROBOT_PROFILE = 'Mira'
PREFIX = '/mira/memory'
# Bounded waits: discovery and the first call on a loaded 2-core machine.
SERVICE_WAIT = 30.0
CALL_WAIT = 10.0


@pytest.mark.launch_test
def generate_test_description():
    database_dir = tempfile.TemporaryDirectory(prefix='mira_bringup_launch_test_')
    database_path = os.path.join(database_dir.name, 'memory.sqlite3')
    bringup = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory('mira_memory'), 'launch', 'bringup.launch.py')),
        launch_arguments={
            'robot_profile': ROBOT_PROFILE,
            'database_path': database_path,
        }.items())
    # The TemporaryDirectory lives in the test context until the run ends,
    # then removes the database.
    context = {'database_path': database_path, 'database_dir': database_dir}
    return launch.LaunchDescription([bringup, launch_testing.actions.ReadyToTest()]), context


class TestBringup(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node('bringup_launch_test', context=cls.context)
        cls.executor = SingleThreadedExecutor(context=cls.context)
        cls.executor.add_node(cls.node)

    @classmethod
    def tearDownClass(cls):
        cls.executor.shutdown()
        cls.node.destroy_node()
        rclpy.shutdown(context=cls.context)

    def call(self, service_type, name, request):
        client = self.node.create_client(service_type, name)
        try:
            self.assertTrue(client.wait_for_service(timeout_sec=SERVICE_WAIT),
                            f'{name} is not served')
            response = clients.call(
                self.executor, client, request, time.monotonic() + CALL_WAIT)
            self.assertIsNotNone(response, f'{name} did not answer within {CALL_WAIT} s')
            return response
        finally:
            self.node.destroy_client(client)

    def test_status_reports_the_launch_arguments(self, database_path):
        status = self.call(AdminStatus, f'{PREFIX}/admin/status', AdminStatus.Request())
        self.assertTrue(status.success, status.message)
        self.assertTrue(status.enabled)
        self.assertEqual(status.database_path, database_path)
        self.assertEqual(status.robot_profile, ROBOT_PROFILE)

    def test_entity_added_by_admin_is_recalled(self):
        added = self.call(AdminEntityAdd, f'{PREFIX}/admin/entity_add', AdminEntityAdd.Request(
            entity_type='person', canonical_name='Ada Lovelace'))
        self.assertTrue(added.success, added.message)

        recalled = self.call(RecallMemory, f'{PREFIX}/recall_memory',
                             RecallMemory.Request(query='ada lovelace', include_entities=True))
        self.assertEqual(recalled.status, RecallMemory.Response.STATUS_FOUND)
        self.assertEqual(recalled.reason, RecallMemory.Response.REASON_EXACT_MATCH)
        self.assertEqual([entity.id for entity in recalled.entities], [added.entity.id])
        self.assertEqual(recalled.entities[0].canonical_name, 'Ada Lovelace')

    def test_recall_and_remember_are_served_under_mira_memory(self):
        expected = {
            f'{PREFIX}/recall_memory': 'mira_memory/srv/RecallMemory',
            f'{PREFIX}/remember': 'mira_memory/srv/Remember',
        }
        found = {}
        deadline = time.monotonic() + SERVICE_WAIT
        while found != expected and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.2)
            found = {
                name: types[0]
                for name, types in self.node.get_service_names_and_types()
                if name in expected
            }
        self.assertEqual(found, expected)


@launch_testing.post_shutdown_test()
class TestBringupShutdown(unittest.TestCase):

    def test_processes_exit_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
