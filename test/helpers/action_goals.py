# SPDX-License-Identifier: Apache-2.0
"""Goals of the memory node's actions (backup, export, verify), as `ros2 action` sends them."""

import re
import time
import uuid

from mira_memory.client.jobs import CANCEL_RESEND_SEC
from mira_memory.client.names import action_name, ACTION_TYPES

# action_msgs/GoalStatus values a test compares results with.
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6


class Goal:
    """One goal sent through rclpy's ActionClient, its feedback kept as it comes."""

    def __init__(self, ros, node_prefix, job, request, *, server_timeout=60.0):
        from rclpy.action import ActionClient
        self.ros = ros
        name = action_name(node_prefix, job)
        self.client = ActionClient(ros.node, ACTION_TYPES[job], name)
        # The feedback topic too, subscribed before the server is waited for:
        # rclpy's client drops a goal's feedback once its result is in, and
        # the last feedback (complete) may arrive after the result.
        self._topic = []
        self._feedback_topic = ros.node.create_subscription(
            ACTION_TYPES[job].Impl.FeedbackMessage, f'{name}/_action/feedback',
            self._topic.append, 100)
        assert self.client.wait_for_server(timeout_sec=server_timeout), f'no action {name}'
        # The node must know this client before a goal's reply can reach it.
        ros.reply_through_a_new_client(node_prefix)
        self.feedback = []
        sent = self.client.send_goal_async(
            request, feedback_callback=lambda message: self.feedback.append(message.feedback))
        ros.spin_until(sent.done, f'{name} goal response', timeout=30)
        self.handle = sent.result()
        assert self.handle.accepted
        self.id = str(uuid.UUID(bytes=bytes(self.handle.goal_id.uuid)))
        self._result = self.handle.get_result_async()

    def wait_for(self, condition, what, timeout=120):
        """Spin until condition() or the goal's end."""
        self.ros.spin_until(lambda: condition() or self._result.done(), what, timeout=timeout)

    def cancel(self):
        """
        Request the cancel; return the first CancelGoal response, or None if the goal ended first.

        As the console does (client/jobs.py), a request with no response
        goes again every CANCEL_RESEND_SEC: under load a request or its reply
        can be lost. self.cancel_requests counts the requests sent; the
        response to a second request may refuse a goal already canceling.
        """
        requests = []
        sent_at = 0.0

        def answered_or_ended():
            nonlocal sent_at
            if self._result.done() or any(request.done() for request in requests):
                return True
            if not requests or time.monotonic() - sent_at >= CANCEL_RESEND_SEC:
                requests.append(self.handle.cancel_goal_async())
                sent_at = time.monotonic()
            return False
        self.ros.spin_until(answered_or_ended, 'the cancel response', timeout=30)
        self.cancel_requests = len(requests)
        return next((request.result() for request in requests if request.done()), None)

    def result(self, timeout=300):
        """Return (status, result) once the goal ended."""
        self.ros.spin_until(self._result.done, 'the goal result', timeout=timeout)
        answer = self._result.result()
        return answer.status, answer.result

    def final_feedback(self):
        """Return the feedback that says complete, from the client or the topic."""
        uuid_bytes = bytes(self.handle.goal_id.uuid)

        def complete():
            seen = self.feedback + [message.feedback for message in self._topic
                                    if bytes(message.goal_id.uuid) == uuid_bytes]
            return [feedback for feedback in seen if feedback.items_done == feedback.items_total]
        self.ros.spin_until(complete, 'the last feedback', timeout=10)
        return complete()[-1]

    def close(self):
        """Destroy the client and the feedback subscription (their DDS entities)."""
        self.ros.node.destroy_subscription(self._feedback_topic)
        self.client.destroy()


def finish(ros, node_prefix, job, request, timeout=300):
    """Send one goal and return (status, result) once it ended."""
    goal = Goal(ros, node_prefix, job, request)
    try:
        return goal.result(timeout)
    finally:
        goal.close()


def without_progress(err):
    """
    Return a console's stderr without its jobs' progress lines.

    Without a terminal the console prints one line per 10% of a job
    (console/progress.py), but only once the job has run for a while, so a
    small job under load may print its 100% line or none at all.
    """
    return ''.join(line for line in err.splitlines(keepends=True)
                   if not re.fullmatch(r'(backup|export|verify): \d+% \(.*\)\n', line))
