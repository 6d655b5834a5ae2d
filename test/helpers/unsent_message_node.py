#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The real memory node with one change: the middleware does not send one message.

    unsent_message_node.py MESSAGE --ros-args ...   (the memory_node command line)

It runs the installed memory node (node_runner.start, as scripts/memory_node
does) with the first MESSAGE of its kind failing as Fast DDS fails a write
on a loaded machine: rclpy raises RCLError("... cannot publish data") from
the publish or the reply. MESSAGE is one of:

- execute: a goal's EXECUTING status (its state has changed first, as in
  rclpy's ServerGoalHandle._update_state);
- succeed: a goal's SUCCEEDED status (the same);
- feedback: a goal's feedback;
- diagnostics: the node's /diagnostics array (a timer's publish);
- reply: a service's reply (Service.send_response, as rclpy's executor
  sends it: Fast DDS fails the reply's write the same way);
- cancel: a goal's cancel request, taken by the action server and never
  answered, as one the middleware did not deliver (its loss prints
  LOST_CANCEL);
- accept: a goal's acceptance (the reply to its goal request), never
  sent, as one the middleware did not deliver: the goal runs while its
  client has no answer (its loss prints LOST_ACCEPTANCE);
- answers: every answer to a goal request (the acceptance, and the
  rejection of a repeat of the goal), never sent: the goal runs while its
  client never hears of it (the first loss prints LOST_ANSWERS).

`unsent_message_node.py cancel|accept|answers RELEASE ...` also holds backups in
flight while RELEASE exists (held_copy_node.py), so that a goal runs long
enough to be canceled (twice).

Every later message of the kind is sent.
"""

import pathlib
import sys

from held_copy_node import hold_backups
from mira_memory.ros import node_runner

LOST_CANCEL = 'the first cancel request was lost (test/helpers/unsent_message_node.py)'
LOST_ACCEPTANCE = "the first goal's acceptance was lost (test/helpers/unsent_message_node.py)"
LOST_ANSWERS = 'every answer to a goal request is lost (test/helpers/unsent_message_node.py)'
# The kinds whose goal must stay in flight until the test releases it.
HELD = ('cancel', 'accept', 'answers')

NOT_SENT = 'cannot publish data (test/helpers/unsent_message_node.py)'


def main():
    message = sys.argv.pop(1)
    if message in HELD:
        hold_backups(pathlib.Path(sys.argv.pop(1)))
    from rclpy.action.server import ActionServer, GoalEvent, ServerGoalHandle
    from rclpy.impl.implementation_singleton import rclpy_implementation
    from rclpy.publisher import Publisher
    from rclpy.service import Service
    error = rclpy_implementation.RCLError
    failed = []

    def fails(kind):
        if kind == message and not failed:
            failed.append(kind)
            return True
        return False

    update_state = ServerGoalHandle._update_state
    events = {'execute': GoalEvent.EXECUTE, 'succeed': GoalEvent.SUCCEED}

    def update_state_unsent(goal_handle, event):
        if event == events.get(message) and fails(message):
            with goal_handle._lock:
                goal_handle._goal_handle.update_goal_state(event)
            raise error(f'Failed publish goal status array: {NOT_SENT}')
        return update_state(goal_handle, event)

    publish_feedback = ServerGoalHandle.publish_feedback

    def publish_feedback_unsent(goal_handle, feedback):
        if fails('feedback'):
            raise error(f'Failed to publish feedback with an action server: {NOT_SENT}')
        return publish_feedback(goal_handle, feedback)

    publish = Publisher.publish

    def publish_unsent(publisher, msg):
        if publisher.topic_name == '/diagnostics' and fails('diagnostics'):
            raise error(f'Failed to publish: {NOT_SENT}')
        return publish(publisher, msg)

    send_response = Service.send_response

    def send_response_unsent(service, response, header):
        if fails('reply'):
            raise error(f'failed to send response: {NOT_SENT}')
        return send_response(service, response, header)

    execute_cancel_request = ActionServer._execute_cancel_request

    async def execute_cancel_request_lost(server, request_header_and_message):
        if fails('cancel'):
            print(LOST_CANCEL, flush=True)
            return None
        return await execute_cancel_request(server, request_header_and_message)

    send_goal_response = rclpy_implementation.ActionServer.send_goal_response

    def send_goal_response_lost(server_handle, header, response):
        if message == 'answers':
            if fails('answers'):
                print(LOST_ANSWERS, flush=True)
            return None
        if response.accepted and fails('accept'):
            print(LOST_ACCEPTANCE, flush=True)
            return None
        return send_goal_response(server_handle, header, response)

    ActionServer._execute_cancel_request = execute_cancel_request_lost
    rclpy_implementation.ActionServer.send_goal_response = send_goal_response_lost
    ServerGoalHandle._update_state = update_state_unsent
    ServerGoalHandle.publish_feedback = publish_feedback_unsent
    Publisher.publish = publish_unsent
    Service.send_response = send_response_unsent
    return node_runner.start('mira_memory.memory.node')


if __name__ == '__main__':
    sys.exit(main())
