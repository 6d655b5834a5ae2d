# SPDX-License-Identifier: Apache-2.0
"""
What replication costs a remember, and how far the replica lags at a robot's write rate.

Two real memory node processes on fresh databases, one replicating to a
directory (replica_url file://..., Litestream as its child) and one not.
Round trip: round robin between the two, each call a new memory (a new
predicate, so every call commits and syncs); prints p50/p90/p99 of both and
the ratio. Lag: then, on the replicating node only, one remember every
--interval seconds; each memory's value is a unique token, and the lag of a
write is the time from its acknowledgement until a new level-0 LTX file in
the replica holds that token (scanned every 10 ms; LTX pages are LZ4
compressed, a first occurrence stays literal). Prints lag p50/p99.

    . .work/jazzy/env.sh
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=71 python bench/replication_cost.py
"""

import argparse
import os
import pathlib
import signal
import sys
import tempfile
import time

from mira_memory.msg import OperatorUtterance
from mira_memory.simulation import nodes, processes
from mira_memory.srv import AdminEntityAdd, Remember
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
import report
import workload

TIMEOUT_S = 10.0
LAG_TIMEOUT_S = 30.0


def start_node(directory, namespace, replica):
    extra = ['-p', f'replica_url:={replica.as_uri()}'] if replica else []
    return processes.Process(
        [nodes.executable_path('memory_node'), '--ros-args', '-r', f'__ns:={namespace}',
         '-p', 'enabled:=true', '-p', f'database_path:={directory}/memory.sqlite3',
         '-p', 'robot_profile:=Mira', *extra],
        pathlib.Path(directory) / 'memory_node.log', name='memory_node')


def remember_request(number, token):
    text = f'Ada Lovelace likes {token}.'
    return Remember.Request(
        episode_id=f'bench-{os.getpid()}', turn_id=f't{number}', utterance=text,
        kind='preference', subject='Ada Lovelace', predicate=f'likes_{number}', value=token,
        evidence=f'Ada Lovelace likes {token}')


class Target:
    """One node under test: its remember client and operator turn publisher."""

    def __init__(self, node, executor, namespace):
        self.remember = node.create_client(Remember, f'{namespace}/memory/remember')
        entity_add = node.create_client(AdminEntityAdd, f'{namespace}/memory/admin/entity_add')
        self.publisher = node.create_publisher(
            OperatorUtterance, f'{namespace}/operator/utterance', 100)
        for client in (self.remember, entity_add):
            if not client.wait_for_service(timeout_sec=60.0):
                raise RuntimeError(f'{client.srv_name} is not available')
        _, added = workload.call(executor, entity_add, AdminEntityAdd.Request(
            entity_type='person', canonical_name='Ada Lovelace'), TIMEOUT_S)
        if added is None or not added.success:
            raise RuntimeError('could not seed the entity')
        deadline = time.monotonic() + 60.0
        while self.publisher.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise RuntimeError('the memory node does not subscribe to operator turns')
            executor.spin_once(timeout_sec=0.01)

    def call(self, executor, number, token):
        request = remember_request(number, token)
        self.publisher.publish(OperatorUtterance(
            episode_id=request.episode_id, turn_id=request.turn_id, text=request.utterance))
        elapsed, response = workload.call(executor, self.remember, request, TIMEOUT_S)
        return elapsed, None if response is None else (response.outcome or response.reason)


def replicated_at(replica, token, seen):
    """Return True once a level-0 LTX file of the replica holds token (seen: read files)."""
    for path in sorted((replica / 'ltx' / '0').glob('*.ltx')):
        if path.name not in seen:
            try:
                seen[path.name] = path.read_bytes()
            except FileNotFoundError:  # compacted away meanwhile
                continue
        if token.encode() in seen[path.name]:
            return True
    return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--calls', type=int, default=500)
    parser.add_argument('--warmup', type=int, default=20)
    parser.add_argument('--lag-writes', type=int, default=30)
    parser.add_argument('--interval', type=float, default=1.0,
                        help='seconds between writes in the lag run (a robot: about 1)')
    args = parser.parse_args(argv)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'replication_bench_{os.getpid()}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    started, targets = [], {}
    replica = None
    try:
        for label in ('replication on', 'replication off'):
            directory = pathlib.Path(tempfile.mkdtemp(prefix='mira_bench_replication_'))
            namespace = f'/replication_bench_{os.getpid()}_{len(targets)}'
            if label == 'replication on':
                replica = directory / 'replica'
            started.append(start_node(directory, namespace, replica if not targets else None))
            targets[label] = (Target(node, executor, namespace), [], {})
        for number in range(args.warmup + args.calls):
            for label, (target, samples, outcomes) in targets.items():
                elapsed, outcome = target.call(executor, number, f'rt{number}')
                if number >= args.warmup:
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1
                    samples.append(elapsed)
        summaries = {}
        for label, (_, samples, outcomes) in targets.items():
            summaries[label] = report.latency_summary(samples)
            print(f'{label:15}  p50 {summaries[label]["p50_ms"]:.3f} ms  '
                  f'p90 {summaries[label]["p90_ms"]:.3f} ms  '
                  f'p99 {summaries[label]["p99_ms"]:.3f} ms  outcomes {outcomes}')
        on, off = summaries['replication on'], summaries['replication off']
        print(f'on/off: p50 {on["p50_ms"] / off["p50_ms"]:.2f}x, '
              f'p99 {on["p99_ms"] / off["p99_ms"]:.2f}x ({args.calls} calls each)')

        target = targets['replication on'][0]
        lags, seen = [], {}
        for index in range(args.lag_writes):
            token = f'lagtoken{index:05d}q'
            begun = time.monotonic()
            _, outcome = target.call(executor, 100000 + index, token)
            acked = time.monotonic()
            while not replicated_at(replica, token, seen):
                if time.monotonic() - acked > LAG_TIMEOUT_S:
                    raise RuntimeError(f'{token} never reached the replica')
                time.sleep(0.01)
            lags.append(time.monotonic() - acked)
            time.sleep(max(0.0, args.interval - (time.monotonic() - begun)))
        lag = report.latency_summary([int(value * 1e9) for value in lags])
        print(f'replication lag at one write per {args.interval:g} s ({len(lags)} writes): '
              f'p50 {lag["p50_ms"] / 1000:.2f} s  p99 {lag["p99_ms"] / 1000:.2f} s  '
              f'max {max(lags):.2f} s')
    finally:
        for process in started:
            process.stop(first=signal.SIGTERM, timeout=20)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return 0


if __name__ == '__main__':
    sys.exit(main())
