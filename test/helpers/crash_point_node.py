#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The real memory node, stopped dead between supersede's retire and its write, for kill -9.

    crash_point_node.py MARKER --ros-args ...   (the memory_node command line)

It runs the installed memory node (node_runner.start, as scripts/memory_node
does) with one change: when a supervised review is about to insert its
memory (store.ReviewTransaction.insert_memory), which supersede does right
after it retired the memories it replaces, inside the same open
transaction, it writes MARKER (JSON: the memories retired so far in that
transaction, as the transaction itself sees them) and sleeps until killed.
The test kills it with SIGKILL there, restarts the product's memory_node on
the same file and checks that nothing is lost and nothing is half done.
"""

import json
import os
import sys
import time

from mira_memory.core.store import writes
from mira_memory.ros import node_runner


def main():
    marker = sys.argv.pop(1)

    def stop_between_retire_and_write(transaction, new, **options):
        conn = transaction._require_active()
        retired = [row[0] for row in conn.execute(
            "SELECT id FROM memories WHERE status = 'retired' ORDER BY id")]
        partial = marker + '.partial'
        with open(partial, 'w') as out:
            json.dump({'pid': os.getpid(), 'retired_in_transaction': retired,
                       'in_transaction': conn.in_transaction}, out)
        os.replace(partial, marker)
        while True:
            time.sleep(60)

    writes.ReviewTransaction.insert_memory = stop_between_retire_and_write
    return node_runner.start('mira_memory.memory.node')


if __name__ == '__main__':
    sys.exit(main())
