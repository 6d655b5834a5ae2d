#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The real cognition node with one change: it never hears the first operator turn.

    first_turn_lost_node.py --ros-args ...   (the cognition_node command line)

It runs the installed cognition node (node_runner.start, as
scripts/cognition_node does) with the first OperatorUtterance it receives
dropped, as a volatile subscription drops a turn sent before it had matched
the publisher (each side of a topic matches the other on its own discovery
data). The loss prints LOST_TURN. Every later utterance is heard.
"""

import sys

from mira_memory.ros import node_runner

LOST_TURN = 'the first operator turn was lost (test/helpers/first_turn_lost_node.py)'


def main():
    from mira_memory.cognition.node import CognitionNode
    on_utterance = CognitionNode._on_utterance
    lost = []

    def on_utterance_first_lost(node, message):
        if not lost:
            lost.append(message)
            print(LOST_TURN, flush=True)
            return
        on_utterance(node, message)

    CognitionNode._on_utterance = on_utterance_first_lost
    return node_runner.start('mira_memory.cognition.node')


if __name__ == '__main__':
    sys.exit(main())
