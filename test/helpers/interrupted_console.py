#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The installed memory console with one change: its Ctrl-C comes inside rclpy, at WHERE.

    interrupted_console.py WHERE ARGS...   (ARGS: memory_console's arguments)

WHERE is where SIGINT reaches the console, as a Ctrl-C does when the
console's process is not scheduled for a while on a loaded machine:

send   inside rclpy's ActionClient.send_goal_async, right after the goal
       request went (the future is not kept yet);
take   inside rclpy's executor, as it takes the first message of the job's
       action client after the goal was sent (ActionClient.take_data, whose
       entity rclpy only puts back into its waits after a take that returns).

The console must still cancel the goal it sent, and hear the answer.
"""

import os
import signal
import sys

from mira_memory.ros import node_runner


def main():
    from rclpy.action import ActionClient
    where = sys.argv.pop(1)
    send_goal_async, take_data = ActionClient.send_goal_async, ActionClient.take_data
    sent = []

    def send_goal_async_interrupted(client, *args, **kwargs):
        sending = send_goal_async(client, *args, **kwargs)
        sent.append(client)
        if where == 'send':
            os.kill(os.getpid(), signal.SIGINT)  # Python runs its handler before the return
        return sending

    def take_data_interrupted(client):
        if where == 'take' and sent == [client]:
            sent.append('interrupted')
            os.kill(os.getpid(), signal.SIGINT)  # Python runs its handler before the take
        return take_data(client)

    if where not in ('send', 'take'):
        sys.exit(f'interrupted_console.py: WHERE is send or take, not {where!r}')
    ActionClient.send_goal_async = send_goal_async_interrupted
    ActionClient.take_data = take_data_interrupted
    return node_runner.start('mira_memory.console.memory_console', interrupted_exit_code=130,
                             entry='program')


if __name__ == '__main__':
    sys.exit(main())
