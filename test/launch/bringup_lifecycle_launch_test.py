# SPDX-License-Identifier: Apache-2.0
"""
launch_testing test of the installed bringup.launch.py in lifecycle mode.

`lifecycle:=true` starts memory_lifecycle_node and autostarts it through
launch_ros's lifecycle events; the test finds it active and serving, then
deactivates it through its real ~/change_state and finds every call
refused. Run by `colcon test` (add_launch_test) or
`launch_test test/launch/bringup_lifecycle_launch_test.py` on a ROS 2
install; DDS settings come from the environment.
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
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from mira_memory.ros import clients
from mira_memory.srv import AdminEntityAdd, AdminStatus, RecallMemory
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

PREFIX = '/mira/memory'
# Bounded waits: discovery, configure and activate on a loaded 2-core machine.
SERVICE_WAIT = 30.0
CALL_WAIT = 10.0


@pytest.mark.launch_test
def generate_test_description():
    database_dir = tempfile.TemporaryDirectory(prefix='mira_bringup_lifecycle_test_')
    database_path = os.path.join(database_dir.name, 'memory.sqlite3')
    bringup = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory('mira_memory'), 'launch', 'bringup.launch.py')),
        launch_arguments={'lifecycle': 'true', 'database_path': database_path}.items())
    context = {'database_path': database_path, 'database_dir': database_dir}
    return launch.LaunchDescription([bringup, launch_testing.actions.ReadyToTest()]), context


class TestBringupLifecycle(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node('bringup_lifecycle_launch_test', context=cls.context)
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

    def state(self):
        return self.call(GetState, f'{PREFIX}/get_state', GetState.Request()).current_state.id

    def test_autostart_activates_then_deactivate_refuses(self, database_path):
        # Autostart runs after the launch began: wait for it (bounded).
        deadline = time.monotonic() + SERVICE_WAIT
        while self.state() != State.PRIMARY_STATE_ACTIVE:
            self.assertLess(time.monotonic(), deadline, 'the memory node never became active')
            self.executor.spin_once(timeout_sec=0.2)
        status = self.call(AdminStatus, f'{PREFIX}/admin/status', AdminStatus.Request())
        self.assertTrue(status.success, status.message)
        self.assertEqual(status.database_path, database_path)

        changed = self.call(ChangeState, f'{PREFIX}/change_state', ChangeState.Request(
            transition=Transition(id=Transition.TRANSITION_DEACTIVATE)))
        self.assertTrue(changed.success)
        self.assertEqual(self.state(), State.PRIMARY_STATE_INACTIVE)
        refused = self.call(AdminEntityAdd, f'{PREFIX}/admin/entity_add', AdminEntityAdd.Request(
            entity_type='person', canonical_name='Ada Lovelace'))
        self.assertEqual((refused.success, refused.error_code), (False, 'unavailable'))
        recalled = self.call(RecallMemory, f'{PREFIX}/recall_memory',
                             RecallMemory.Request(query='Ada Lovelace'))
        self.assertEqual(recalled.status, RecallMemory.Response.STATUS_UNAVAILABLE)


@launch_testing.post_shutdown_test()
class TestBringupLifecycleShutdown(unittest.TestCase):

    def test_processes_exit_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
