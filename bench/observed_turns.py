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
import sys
import tempfile

from mira_memory.simulation import nodes, processes
from mira_memory.srv import Remember
from remember_calls import bench_client, RememberTarget, Series
import report


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
    with bench_client('observed_turns_bench') as (node, executor, started):
        targets = {}
        for label, require in (('window on', True), ('window off', False)):
            directory = tempfile.mkdtemp(prefix='mira_bench_turns_')
            namespace = f'/turns_bench_{os.getpid()}_{int(require)}'
            started.append(start_node(directory, namespace, require))
            targets[label] = (RememberTarget(node, executor, namespace, observes_turns=require),
                              Series())
        for number in range(args.warmup + args.calls):
            for target, series in targets.values():
                text = 'Ada Lovelace prefers green tea.'
                elapsed, outcome = target.call(Remember.Request(
                    episode_id=f'bench-{os.getpid()}', turn_id=f't{number}', utterance=text,
                    kind='preference', subject='Ada Lovelace', predicate='prefers_drink',
                    value='green tea', evidence='Ada Lovelace prefers green tea'))
                if number >= args.warmup:
                    series.add(elapsed, outcome)
        summaries = {}
        for label, (_, series) in targets.items():
            summaries[label] = report.latency_summary(series.samples)
            print(f'{label:10}  p50 {summaries[label]["p50_ms"]:.3f} ms  '
                  f'p90 {summaries[label]["p90_ms"]:.3f} ms  '
                  f'p99 {summaries[label]["p99_ms"]:.3f} ms  outcomes {series.outcomes}')
        on, off = summaries['window on'], summaries['window off']
        print(f'added by the window: p50 {on["p50_ms"] - off["p50_ms"]:+.3f} ms, '
              f'p99 {on["p99_ms"] - off["p99_ms"]:+.3f} ms ({args.calls} calls each)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
