#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The installed memory console with one change: its Ctrl-C comes while it sends its goal.

    interrupted_send_console.py ARGS...   (memory_console's arguments)

rclpy's ActionClient.send_goal_async writes the goal request, then keeps
its future; here SIGINT reaches the console right after the request went,
still inside the send, as a Ctrl-C does when the console's process is not
scheduled for a while on a loaded machine. The console must still cancel
the goal it sent.
"""

import os
import signal
import sys

from mira_memory.ros import node_runner


def main():
    from rclpy.action import ActionClient
    send_goal_async = ActionClient.send_goal_async

    def send_goal_async_interrupted(client, *args, **kwargs):
        sending = send_goal_async(client, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)  # Python runs its handler before the return
        return sending

    ActionClient.send_goal_async = send_goal_async_interrupted
    return node_runner.start('mira_memory.console.memory_console', interrupted_exit_code=130,
                             entry='program')


if __name__ == '__main__':
    sys.exit(main())
