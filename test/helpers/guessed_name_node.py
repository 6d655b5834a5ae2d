#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The real memory node with one change: the random part of its temporary file names is known.

    guessed_name_node.py TOKEN --ros-args ...   (the memory_node command line)

It runs the installed memory node (node_runner.start, as scripts/memory_node
does) with secrets.token_hex returning TOKEN, so a test can plant a link at
the name a backup or an export will try: what an attacker who guessed the
name would do.
"""

import secrets
import sys

from mira_memory.ros import node_runner


def main():
    token = sys.argv.pop(1)
    secrets.token_hex = lambda nbytes=None: token
    return node_runner.start('mira_memory.memory.node')


if __name__ == '__main__':
    sys.exit(main())
