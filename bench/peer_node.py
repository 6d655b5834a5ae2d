#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The bench's peer: RobotMem's SDK behind the same RecallMemory/Remember services.

`tools/bench --peers` compares mira_memory with RobotMem (PyPI `robotmem`
0.1.3) on the same requests. Its wheel ships no ROS package, so this node
serves its SDK (offline: `embed_backend='none'`, BM25 full-text search, no
embedding model) under the request shapes of ours, in its own process on the
same executor kind (rclpy.spin), so both pay the same transport:

- `~/recall_memory` (RecallMemory): `RobotMemory.recall(query, n=5)`;
  found (its memories' texts, one a line) or miss;
- `~/remember` (Remember): `RobotMemory.learn('<subject> <predicate>
  <value>')`, the fact our store keeps; RobotMem stores free-text insights
  and has no subjects, slots or grounding (`learn` never rejects a value
  the utterance did not support); created or duplicate;
- `~/bench/empty` (Trigger): the floor, as in bench_node.py.

The peer is a bench-only dependency, never the product's: it is imported
from the directory in MIRA_BENCH_PEER_PATH (installed there by hand, see
bench/README.md), never installed by tools/bootstrap or CI.

  peer_node.py <database path> [--seed-from <mira database>]
  --seed-from: first learn the summaries of that store's active memories
  (the same 10,000 facts), then serve; prints PEER_READY when serving.
"""

import argparse
import json
import logging
import os
import pathlib
import sqlite3
import sys
import time

from mira_memory.srv import RecallMemory, Remember
import rclpy
from rclpy.node import Node
from std_srvs.srv import Trigger
import workload

PEER_PATH_VARIABLE = 'MIRA_BENCH_PEER_PATH'


def import_peer():
    """Return RobotMem's RobotMemory class from MIRA_BENCH_PEER_PATH (ImportError if absent)."""
    path = os.environ.get(PEER_PATH_VARIABLE)
    if path:
        sys.path.insert(0, path)
    # Offline, RobotMem logs a warning that sqlite-vec is missing (expected:
    # no vector search without embeddings) on every open.
    logging.getLogger('robotmem').setLevel(logging.ERROR)
    from robotmem.sdk import RobotMemory
    return RobotMemory


class PeerNode(Node):
    """RobotMem's SDK served over ROS with the request shapes of mira_memory."""

    def __init__(self, memory):
        super().__init__('memory')
        self._memory = memory
        self.create_service(Trigger, '~/bench/empty', lambda request, response: response)
        self.create_service(RecallMemory, '~/recall_memory', self._on_recall)
        self.create_service(Remember, '~/remember', self._on_remember)

    def _on_recall(self, request, response):
        found = self._memory.recall(request.query, n=5)
        if not found:
            response.status = RecallMemory.Response.STATUS_MISS
            return response
        response.status = RecallMemory.Response.STATUS_FOUND
        response.text = '\n'.join(memory['content'] for memory in found)
        return response

    def _on_remember(self, request, response):
        try:
            result = self._memory.learn(
                '%s %s %s' % (request.subject, request.predicate, request.value))
        except Exception as error:  # a peer failure is an answer, not a dead node
            response.status = Remember.Response.STATUS_REJECTED
            response.reason = Remember.Response.REASON_BACKEND_FAILURE
            response.error = str(error)[:200]
            return response
        response.status = Remember.Response.STATUS_APPLIED
        if result['status'] == 'created':
            response.outcome = Remember.Response.OUTCOME_CREATED
            response.memory_id = str(result['memory_id'])
        else:
            response.outcome = Remember.Response.OUTCOME_DUPLICATE
        return response


def seed(memory, source):
    """Learn the summaries of every active memory of a mira_memory database; return the count."""
    connection = sqlite3.connect(pathlib.Path(source).absolute().as_uri() + '?mode=ro', uri=True)
    try:
        rows = connection.execute(
            "SELECT summary FROM memories WHERE status = 'active' ORDER BY id").fetchall()
    finally:
        connection.close()
    for (summary,) in rows:
        memory.learn(summary)
    return len(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('database')
    parser.add_argument('--seed-from')
    args, ros_args = parser.parse_known_args(argv)
    workload.stop_with_runner()
    robot_memory = import_peer()
    memory = robot_memory(db_path=args.database, embed_backend='none')
    if args.seed_from:
        started = time.monotonic()
        count = seed(memory, args.seed_from)
        print('PEER_SEEDED ' + json.dumps({'memories': count,
                                           'seconds': time.monotonic() - started}), flush=True)
    rclpy.init(args=ros_args)
    node = PeerNode(memory)
    print('PEER_READY', flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        memory.close()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
