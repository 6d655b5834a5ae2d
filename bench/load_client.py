#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
One throughput client process: call a service back to back during set phases.

Protocol (line-based, so several processes start each phase together):
argv[1] is a JSON object {"node_prefix", "metadata_path", "client_index"};
the process prints READY once both services answer, then reads one JSON
line from stdin, a list of phases {"series", "start", "end"} in wall-clock
seconds, runs them, and prints one JSON line with the calls completed
within each phase. Those two lines are all its standard output carries:
everything else written there (Fast DDS's own log) goes to standard error.
"""

import collections
import json
import os
import sys
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
import workload

CALL_TIMEOUT_S = 10.0
WARMUP_CALLS = 5


def protocol_channel():
    """
    Return the runner's line channel (standard output); from now on fd 1 is standard error.

    Fast DDS prints its own errors on fd 1 (on Jazzy a shared-memory port
    another process holds, now and then): on the runner's channel such a
    line took READY's place and failed the run.
    """
    channel = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return channel


def main():
    """Run the phases the runner sends and report calls per phase."""
    workload.stop_with_runner()
    channel = protocol_channel()
    settings = json.loads(sys.argv[1])
    with open(settings['metadata_path']) as handle:
        load = workload.Workload(json.load(handle))
    names = workload.service_names(settings['node_prefix'])
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node('bench_load_%d' % os.getpid(), context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    clients = {}
    try:
        for series in workload.THROUGHPUT_SERIES:
            kind = workload.service_kind(series)
            clients[series] = node.create_client(workload.SERVICE_TYPES[kind], names[kind])
            if not clients[series].wait_for_service(timeout_sec=30.0):
                raise RuntimeError('service %s is not available' % names[kind])
            for n in range(WARMUP_CALLS):
                workload.call(
                    executor, clients[series], load.request(series, n), CALL_TIMEOUT_S)
        print('READY', file=channel, flush=True)
        phases = json.loads(sys.stdin.readline())
        offset = settings['client_index']
        report = []
        for phase in phases:
            series = phase['series']
            requests = [load.request(series, offset + n) for n in range(64)]
            while time.time() < phase['start'] and context.ok():
                time.sleep(0.001)
            calls = 0
            outcomes = collections.Counter()
            # SIGTERM (the runner stopping early) shuts the context down.
            while context.ok():
                _, response = workload.call(
                    executor, clients[series], requests[calls % len(requests)], CALL_TIMEOUT_S)
                if time.time() > phase['end']:
                    break
                calls += 1
                label = 'timeout' if response is None else workload.outcome(series, response)
                outcomes[label] += 1
            report.append({'series': series, 'calls': calls, 'outcomes': dict(outcomes)})
        print(json.dumps(report), file=channel, flush=True)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return 0


if __name__ == '__main__':
    sys.exit(main())
