#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The benchmark's memory node: the product's MemoryNode plus the floor.

BenchMemoryNode adds `~/bench/empty` (std_srvs/srv/Trigger, empty callback)
to the same node, executor and process as recall and remember, so the floor
and the measured services share everything but the callback; it runs under
the product's own main loop (node_runner.run). `~/bench/canned_recall`
(RecallMemory) answers every request with the response the product's recall
callback gave the first time that request (query and include_entities) came:
a floor of exactly the shape of each recall, which separates moving and
converting the message from the work of producing it. `~/bench/canned_remember`
(Remember) answers every request with one prebuilt applied/duplicate
response: the same for remember. Once constructed it prints
one line `BENCH_TIMES {...}` with CLOCK_MONOTONIC readings (comparable
across processes on Linux) so the runner can split start-up time into
interpreter and imports, MemoryNode construction (store open) and discovery.

MIRA_BENCH_CALLBACK_TIMES=<file> has the node time its remember callback
(from the request handed to the callback to the response handed back, per
outcome) and write those durations to <file> as JSON when the node is
destroyed: the runner subtracts them from the round trips to show what rclpy,
DDS and the client add around the product's own work. The canned remember's
callback is timed the same way, as 'canned (empty callback)': the control.
Beside each duration it records the callback thread's CPU time
('cpu <outcome>') and the garbage
collections that ran inside the callback ('gc <outcome>'), which tell a
callback that waited or was preempted from one that computed, and show
what the collector costs the callback.

With callback times on, the write of a refusal kept for review, which the
node runs after remember's reply (MemoryService.write_kept), is
timed too, under 'kept refusal write (after the reply)' (only the calls
that wrote something).

MIRA_BENCH_PROFILE=<file> profiles everything the node does after
construction with cProfile and dumps the stats to <file> when the node is
destroyed (diagnosis only: it slows every callback).
"""

import collections
import cProfile
import gc
import json
import os
import sys
import time

from mira_memory.ros import type_support
# Before any interface is used, as node_runner.start() does for memory_node.
type_support.load_runtime_only()

from mira_memory.memory.node import MemoryNode  # noqa: E402,I100 (after the call above)
from mira_memory.ros import node_runner  # noqa: E402
from mira_memory.srv import RecallMemory, Remember  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
import workload  # noqa: E402

_IMPORTED = time.monotonic()
FLOOR_SERVICE = '~/bench/empty'
CANNED_RECALL_SERVICE = '~/bench/canned_recall'
CANNED_REMEMBER_SERVICE = '~/bench/canned_remember'
# The canned remember's callback times are recorded under this name.
CANNED_OUTCOME = 'canned (empty callback)'
# The write of a refusal kept for review, after remember's reply.
KEPT_WRITE = 'kept refusal write (after the reply)'


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
        self._canned_remember = Remember.Response(
            status=Remember.Response.STATUS_APPLIED, outcome=Remember.Response.OUTCOME_DUPLICATE,
            memory_id='MEM1000001')
        self.create_service(Remember, CANNED_REMEMBER_SERVICE, self._on_canned_remember)
        print('BENCH_TIMES ' + json.dumps({
            'imported': _IMPORTED, 'init_started': started, 'constructed': time.monotonic(),
            'pid': os.getpid()}), flush=True)
        self._callback_times_path = os.environ.get('MIRA_BENCH_CALLBACK_TIMES')
        self._callback_times = collections.defaultdict(list)
        self._gc_runs = 0
        if self._callback_times_path is not None:
            gc.callbacks.append(self._count_gc)
            if self.service.enabled:
                self._time_kept_writes()
        self._profile_path = os.environ.get('MIRA_BENCH_PROFILE')
        self._profiler = None
        if self._profile_path:
            self._profiler = cProfile.Profile()
            self._profiler.enable()

    def _on_canned_recall(self, request, response):
        key = (request.query, request.include_entities)
        canned = self._canned_recall.get(key)
        if canned is None:
            canned = self._canned_recall[key] = self.service.recall(request, response)
        return canned

    async def _on_remember(self, request, response):
        # MemoryNode.__init__ registers self._on_remember, so this override is
        # what the service calls.
        if self._callback_times_path is None:
            return await super()._on_remember(request, response)
        return await self._timed(super()._on_remember(request, response))

    async def _on_canned_remember(self, request, response):
        # Async like remember's callback, so the two reach the executor alike;
        # timed the same way, under its own name: the in-node control of an
        # empty remember callback (what the timing itself and a call from
        # cold caches cost, with none of the product's work).
        if self._callback_times_path is None:
            return self._canned_remember
        return await self._timed(self._canned(), CANNED_OUTCOME)

    async def _canned(self):
        return self._canned_remember

    async def _timed(self, callback, outcome=None):
        """Await callback (a coroutine); record its time under outcome (default: its own)."""
        collections = self._gc_runs
        cpu_started = time.thread_time_ns()
        started = time.perf_counter_ns()
        response = await callback
        elapsed = time.perf_counter_ns() - started
        outcome = outcome or workload.outcome('remember', response)
        self._callback_times[outcome].append(elapsed)
        # The callback's own CPU time (this thread): wall time minus it is
        # time the process waited (fsync, or preempted by another process).
        self._callback_times['cpu ' + outcome].append(time.thread_time_ns() - cpu_started)
        self._callback_times['gc ' + outcome].append(self._gc_runs - collections)
        return response

    def _time_kept_writes(self):
        service = self.service
        write_kept = service.write_kept

        def timed():
            waiting = bool(service._kept)
            started = time.perf_counter_ns()
            write_kept()
            if waiting:
                self._callback_times[KEPT_WRITE].append(time.perf_counter_ns() - started)
        service.write_kept = timed

    def _count_gc(self, phase, info):
        if phase == 'start':
            self._gc_runs += 1

    def destroy_node(self):
        """Write callback times and the profile (when enabled), close the store, destroy."""
        if self._callback_times_path is not None:
            with open(self._callback_times_path, 'w', encoding='utf-8') as out:
                json.dump(self._callback_times, out)
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
