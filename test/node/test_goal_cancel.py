# SPDX-License-Identifier: Apache-2.0
"""
A cancel that reaches the memory node between a goal's acceptance and its job's start.

rclpy accepts a goal, answers it, and runs its execute coroutine as a task
of a later executor step; a cancel request taken in the same step as the
goal is handled before that task. Such a cancel is accepted and the goal
ends CANCELED without running its job (memory/admin_actions.py), as
docs/interfaces.md promises of every accepted cancel. The console's Ctrl-C
before a goal's acceptance sends exactly this: a cancel by the goal id it
made (client/jobs.py cancel_before_acceptance).
"""

from helpers.action_goals import CANCELED
from mira_memory.action import Backup
from mira_memory.client import names
from mira_memory.client.jobs import new_goal_id
import pytest

pytestmark = pytest.mark.ros


def test_a_cancel_taken_with_its_goal_is_accepted_and_the_job_never_runs(
        ros, memory_node, tmp_path):
    from action_msgs.srv import CancelGoal
    from rclpy.action import ActionClient
    node = memory_node({'enabled': True, 'database_path': str(tmp_path / 'memory.sqlite3'),
                        'robot_profile': 'Mira'}, ros=ros)
    action = names.action_name(node.prefix, names.BACKUP)
    client = ActionClient(ros.node, Backup, action)
    cancels = ros.node.create_client(CancelGoal, f'{action}/_action/cancel_goal')
    try:
        assert client.wait_for_server(timeout_sec=20) and cancels.wait_for_service(20)
        target = tmp_path / 'memory-copies' / 'backup.sqlite3'
        goal_id = new_goal_id()
        with node.paused():
            sending = client.send_goal_async(Backup.Goal(path=str(target)), goal_uuid=goal_id)
            request = CancelGoal.Request()
            request.goal_info.goal_id = goal_id
            canceling = cancels.call_async(request)
        ros.spin_until(lambda: sending.done() and canceling.done(),
                       'the goal and cancel responses', timeout=30)
        assert sending.result().accepted
        answer = canceling.result()
        assert answer.return_code == CancelGoal.Response.ERROR_NONE, answer
        assert [bytes(info.goal_id.uuid) for info in answer.goals_canceling] == [
            bytes(goal_id.uuid)]
        result = sending.result().get_result_async()
        ros.spin_until(result.done, 'the goal result', timeout=30)
        assert (result.result().status, result.result().result.error_code) == (
            CANCELED, 'canceled'), result.result().result.message
        assert result.result().result.message == (
            'backup canceled (by its client); nothing was written')
        assert not target.exists()
        assert not target.parent.exists() or list(target.parent.iterdir()) == []
    finally:
        ros.node.destroy_client(cancels)
        client.destroy()
