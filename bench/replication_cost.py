# SPDX-License-Identifier: Apache-2.0
"""
What replication costs a remember, and how far the replica lags at a robot's write rate.

Two real bench memory nodes (bench_node.py: the product's MemoryNode plus
the empty Trigger floor) on fresh databases, one replicating to a directory
(replica_url file://..., Litestream as its child) and one not.

Round trip: --rounds rounds of --round-calls calls to each node, the two
nodes' rounds interleaved ABAB (on, off, off, on, on, off, ...), so load
that drifts over the run lands on both alike. Each call is the node's
empty Trigger (the floor: an empty service round trip through the same
executor) and then a remember of a new memory (a new predicate, so every
call commits and syncs). Prints p50/p99 of both series per node, the
on/off ratios of remember and of its excess over the floor, and the load
average before and after. Lag: then, on the replicating node only, one
remember every --interval seconds; each memory's value is a unique token,
and the lag of a write is the time from its acknowledgement until a new
level-0 LTX file in the replica holds that token (scanned every 10 ms; LTX
pages are LZ4 compressed, a first occurrence stays literal). Prints lag
p50/p99.

    . .work/jazzy/env.sh
    cd bench && ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=71 python replication_cost.py
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

from mira_memory.simulation import processes
from mira_memory.srv import Remember
from remember_calls import bench_client, RememberTarget, Series
import report

BENCH_DIR = pathlib.Path(__file__).resolve().parent
LAG_TIMEOUT_S = 30.0
LABELS = ('replication on', 'replication off')


def start_node(directory, namespace, replica):
    extra = ['-p', f'replica_url:={replica.as_uri()}'] if replica else []
    return processes.Process(
        [sys.executable, str(BENCH_DIR / 'bench_node.py'), '--ros-args',
         '-r', f'__ns:={namespace}',
         '-p', 'enabled:=true', '-p', f'database_path:={directory}/memory.sqlite3',
         '-p', 'robot_profile:=Mira', *extra],
        pathlib.Path(directory) / 'memory_node.log', name='memory_node')


def remember_request(number, token):
    text = f'Ada Lovelace likes {token}.'
    return Remember.Request(
        episode_id=f'bench-{os.getpid()}', turn_id=f't{number}', utterance=text,
        kind='preference', subject='Ada Lovelace', predicate=f'likes_{number}', value=token,
        evidence=f'Ada Lovelace likes {token}')


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


def print_round_trips(targets, args, load_before, load_after):
    """Print p50/p99 of the floor and remember per node, and the on/off ratios."""
    summaries = {}
    for label, (_, floors, remembers) in targets.items():
        floor = report.latency_summary(floors)
        remember = report.latency_summary(remembers.samples)
        summaries[label] = floor, remember
        print(f'{label:15}  floor p50 {floor["p50_ms"]:.3f} ms  p99 {floor["p99_ms"]:.3f} ms'
              f'   remember p50 {remember["p50_ms"]:.3f} ms  p99 {remember["p99_ms"]:.3f} ms'
              f'  outcomes {remembers.outcomes}')
    (on_floor, on), (off_floor, off) = summaries['replication on'], summaries['replication off']
    print(f'on/off remember: p50 {on["p50_ms"] / off["p50_ms"]:.2f}x, '
          f'p99 {on["p99_ms"] / off["p99_ms"]:.2f}x; over the floor (p50): '
          f'{(on["p50_ms"] - on_floor["p50_ms"]) / (off["p50_ms"] - off_floor["p50_ms"]):.2f}x'
          f' ({args.rounds} rounds of {args.round_calls} calls each, ABAB)')
    print('load average (1, 5, 15 min): before ' + ' '.join(f'{v:.1f}' for v in load_before)
          + ', after ' + ' '.join(f'{v:.1f}' for v in load_after))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--rounds', type=int, default=20,
                        help='measured rounds per node (interleaved ABAB)')
    parser.add_argument('--round-calls', type=int, default=25,
                        help='floor + remember calls per round')
    parser.add_argument('--warmup-rounds', type=int, default=2)
    parser.add_argument('--lag-writes', type=int, default=30)
    parser.add_argument('--interval', type=float, default=1.0,
                        help='seconds between writes in the lag run (a robot: about 1)')
    args = parser.parse_args(argv)
    with bench_client('replication_bench') as (node, executor, started):
        targets, replica = {}, None
        for label in LABELS:
            directory = pathlib.Path(tempfile.mkdtemp(prefix='mira_bench_replication_'))
            namespace = f'/replication_bench_{os.getpid()}_{len(targets)}'
            if label == 'replication on':
                replica = directory / 'replica'
            started.append(start_node(directory, namespace, replica if not targets else None))
            # (target, floor round trips, remember round trips and outcomes)
            targets[label] = (RememberTarget(node, executor, namespace, floor=True), [], Series())
        load_before = os.getloadavg()
        number = 0
        for round_index in range(args.warmup_rounds + args.rounds):
            # ABAB: on, off, off, on, on, off, ...
            order = LABELS if round_index % 2 == 0 else LABELS[::-1]
            for label in order:
                target, floors, remembers = targets[label]
                for _ in range(args.round_calls):
                    floor = target.call_floor()
                    elapsed, outcome = target.call(remember_request(number, f'rt{number}'))
                    number += 1
                    if round_index >= args.warmup_rounds:
                        floors.append(floor)
                        remembers.add(elapsed, outcome)
        load_after = os.getloadavg()
        print_round_trips(targets, args, load_before, load_after)

        target = targets['replication on'][0]
        lags, seen = [], {}
        for index in range(args.lag_writes):
            token = f'lagtoken{index:05d}q'
            begun = time.monotonic()
            target.call(remember_request(100000 + index, token))
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
    return 0


if __name__ == '__main__':
    sys.exit(main())
