# SPDX-License-Identifier: Apache-2.0
"""
What the observed-turn window adds to a remember round trip.

Two real memory node processes on fresh databases, one with
require_observed_turns true (the default) and one with it false. For each
call, round robin between the two nodes: publish the operator turn, then at
once time the remember round trip (the client side of what cognition does).
Every remember after the first is applied/duplicate (one statement, many
turns), so the series compare the window, not fsync. Prints p50/p90/p99 of
both and the difference, and how many calls were rejected (expected 0).

    . .work/jazzy/env.sh
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=71 python bench/observed_turns.py
"""

import argparse
import os
import pathlib
import signal
import sys
import tempfile
import time

from mira_memory.client import names
from mira_memory.msg import OperatorUtterance
from mira_memory.simulation import nodes, processes
from mira_memory.srv import AdminEntityAdd, Remember
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
import report
import workload

TIMEOUT_S = 10.0


def start_node(directory, namespace, require):
    return processes.Process(
        [nodes.executable_path('memory_node'), '--ros-args', '-r', f'__ns:={namespace}',
         '-p', 'enabled:=true', '-p', f'database_path:={directory}/memory.sqlite3',
         '-p', 'robot_profile:=Mira', '-p', f'require_observed_turns:={str(require).lower()}'],
        pathlib.Path(directory) / 'memory_node.log', name='memory_node')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--warmup', type=int, default=50)
    args = parser.parse_args(argv)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'observed_turns_bench_{os.getpid()}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    started, targets = [], {}
    try:
        for label, require in (('window on', True), ('window off', False)):
            directory = tempfile.mkdtemp(prefix='mira_bench_turns_')
            namespace = f'/turns_bench_{os.getpid()}_{int(require)}'
            started.append(start_node(directory, namespace, require))
            memory = names.memory_node_name(namespace)
            remember = node.create_client(Remember, names.service_name(memory, names.REMEMBER))
            entity_add = node.create_client(
                AdminEntityAdd, names.service_name(memory, names.ADMIN_ENTITY_ADD))
            publisher = node.create_publisher(
                OperatorUtterance, f'{namespace}/operator/utterance', 100)
            for client in (remember, entity_add):
                if not client.wait_for_service(timeout_sec=60.0):
                    raise RuntimeError(f'{client.srv_name} is not available')
            _, added = workload.call(executor, entity_add, AdminEntityAdd.Request(
                entity_type='person', canonical_name='Ada Lovelace'), TIMEOUT_S)
            if added is None or not added.success:
                raise RuntimeError('could not seed the entity')
            deadline = time.monotonic() + 60.0
            while require and publisher.get_subscription_count() == 0:
                if time.monotonic() > deadline:
                    raise RuntimeError('the memory node does not subscribe to operator turns')
                executor.spin_once(timeout_sec=0.01)
            targets[label] = (remember, publisher, [], {})
        for number in range(args.warmup + args.calls):
            for label, (client, publisher, samples, outcomes) in targets.items():
                text = 'Ada Lovelace prefers green tea.'
                request = Remember.Request(
                    episode_id=f'bench-{os.getpid()}', turn_id=f't{number}', utterance=text,
                    kind='preference', subject='Ada Lovelace', predicate='prefers_drink',
                    value='green tea', evidence='Ada Lovelace prefers green tea')
                publisher.publish(OperatorUtterance(
                    episode_id=request.episode_id, turn_id=request.turn_id, text=text))
                elapsed, response = workload.call(executor, client, request, TIMEOUT_S)
                if number < args.warmup:
                    continue
                key = 'timeout' if response is None else (response.outcome or response.reason)
                outcomes[key] = outcomes.get(key, 0) + 1
                samples.append(elapsed)
        summaries = {}
        for label, (_, _, samples, outcomes) in targets.items():
            summaries[label] = report.latency_summary(samples)
            print(f'{label:10}  p50 {summaries[label]["p50_ms"]:.3f} ms  '
                  f'p90 {summaries[label]["p90_ms"]:.3f} ms  '
                  f'p99 {summaries[label]["p99_ms"]:.3f} ms  outcomes {outcomes}')
        on, off = summaries['window on'], summaries['window off']
        print(f'added by the window: p50 {on["p50_ms"] - off["p50_ms"]:+.3f} ms, '
              f'p99 {on["p99_ms"] - off["p99_ms"]:+.3f} ms ({args.calls} calls each)')
    finally:
        for process in started:
            process.stop(first=signal.SIGTERM, timeout=20)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return 0


if __name__ == '__main__':
    sys.exit(main())
