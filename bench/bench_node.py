#!/usr/bin/env python3
# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The benchmark's memory node: the product's MemoryNode plus the floor.

BenchMemoryNode adds `~/bench/empty` (std_srvs/srv/Trigger, empty callback)
to the same node, executor and process as recall and remember, so the floor
and the measured services share everything but the callback; it runs under
the product's own main loop (node_runner.run). `~/bench/canned_recall`
(RecallMemory) answers every request with the response the product's recall
callback gave the first time that request (query and include_entities) came:
a floor of exactly the shape of each recall, which separates moving and
converting the message from the work of producing it. Once constructed it prints
one line `BENCH_TIMES {...}` with CLOCK_MONOTONIC readings (comparable
across processes on Linux) so the runner can split start-up time into
interpreter and imports, MemoryNode construction (store open) and discovery.

MIRA_BENCH_PROFILE=<file> profiles everything the node does after
construction with cProfile and dumps the stats to <file> when the node is
destroyed (diagnosis only: it slows every callback).
"""

import cProfile
import json
import os
import sys
import time

from mira_memory import node_runner
from mira_memory.memory_node import MemoryNode
from mira_memory.srv import RecallMemory
from std_srvs.srv import Trigger
import workload

_IMPORTED = time.monotonic()
FLOOR_SERVICE = '~/bench/empty'
CANNED_RECALL_SERVICE = '~/bench/canned_recall'


def _empty(request, response):
    return response


class BenchMemoryNode(MemoryNode):
    """MemoryNode with the empty Trigger floor service and optional profiling."""

    def __init__(self, **kwargs):
        started = time.monotonic()
        super().__init__(**kwargs)
        self.create_service(Trigger, FLOOR_SERVICE, _empty)
        self._canned_recall = {}
        self.create_service(RecallMemory, CANNED_RECALL_SERVICE, self._on_canned_recall)
        print('BENCH_TIMES ' + json.dumps({
            'imported': _IMPORTED, 'init_started': started, 'constructed': time.monotonic(),
            'pid': os.getpid()}), flush=True)
        self._profile_path = os.environ.get('MIRA_BENCH_PROFILE')
        self._profiler = None
        if self._profile_path:
            self._profiler = cProfile.Profile()
            self._profiler.enable()

    def _on_canned_recall(self, request, response):
        key = (request.query, request.include_entities)
        canned = self._canned_recall.get(key)
        if canned is None:
            canned = self._canned_recall[key] = self._on_recall(request, response)
        return canned

    def destroy_node(self):
        """Dump the profile (when enabled), then close the store and destroy the node."""
        if self._profiler is not None:
            self._profiler.disable()
            self._profiler.dump_stats(self._profile_path)
            self._profiler = None
        super().destroy_node()


def main(args=None):
    """Run the bench node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    workload.stop_with_runner()
    return node_runner.run(BenchMemoryNode, 'memory', args)


if __name__ == '__main__':
    sys.exit(main())
