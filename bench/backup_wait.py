# SPDX-License-Identifier: Apache-2.0
"""
How long requests wait while the memory node backs up, exports or verifies its store.

Copies the cached benchmark store (bench/generate.py; 1M memories by
default, generated on first use) to a private working file and starts one
real bench memory node on it (bench_node.py: the product's MemoryNode plus
the empty Trigger floor). One client then calls, back to back and round
robin, Trigger, recall (found queries) and remember (a new grounded
proposal, durable; its operator turn is published first, untimed):
first for --before-seconds, then from the moment it sends a goal to the
admin/backup action (the console's `memory backup`) until its result arrives. It prints the
copy's duration and, per series, the calls and p50/p99/max before and
during the copy. `--copy export` and `--copy verify` (the
console's `memory verify`, on the same copy worker) measure those instead;
for verify the working copy first gets the receipts remember would have
written (verify_cost.add_receipts), so verify judges every memory.

Back to back, the client and the node keep both cores of a 2-core machine
busy, and a verify's child (nice 10: requests first) gets what is left.
`--rounds-per-second R` paces the client instead (R rounds of the three
calls a second, the executor spinning in between), the rate of a robot
whose cognition asks its memory a few times a second, so the job also runs.

    . .work/jazzy/env.sh
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=71 python bench/backup_wait.py
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

import generate
from machine_readings import fsync_file
from mira_memory.action import Backup, Export, Verify
from mira_memory.client import names
from mira_memory.msg import OperatorUtterance
from mira_memory.simulation import processes
from mira_memory.srv import RecallMemory, Remember
import rclpy
from rclpy.action import ActionClient
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
import report
from run_processes import CALL_TIMEOUT_S, READY_TIMEOUT_S, stop_process
from std_srvs.srv import Trigger
import verify_cost
import workload

BENCH_DIR = pathlib.Path(__file__).resolve().parent
SERIES = ('trigger', 'recall_found', 'remember_created')
COPY_TIMEOUT_S = 1800.0


def start_node(directory, namespace, database, robot_profile):
    return processes.Process(
        [sys.executable, str(BENCH_DIR / 'bench_node.py'), '--ros-args',
         '-r', f'__ns:={namespace}', '-p', 'enabled:=true',
         '-p', f'database_path:={database}', '-p', f'robot_profile:={robot_profile}',
         # The copies are written beside the database, in the bench's own directory.
         '-p', f'admin_output_dirs:={directory}'],
        directory / 'node.log', name='bench_node')


class Client:
    """One client node calling the bench node's services round robin."""

    def __init__(self, node, executor, prefix, metadata):
        self.node, self.executor = node, executor
        services = workload.service_names(prefix)
        self.clients = {
            'trigger': node.create_client(Trigger, services['trigger']),
            'recall_found': node.create_client(RecallMemory, services['recall']),
            'remember_created': node.create_client(Remember, services['remember']),
        }
        self.copy_clients = {
            name: ActionClient(node, names.ACTION_TYPES[name], names.action_name(prefix, name))
            for name in (names.BACKUP, names.EXPORT, names.VERIFY)}
        self.utterances = node.create_publisher(
            OperatorUtterance, prefix.rpartition('/')[0] + '/operator/utterance', 100)
        self.workload = workload.Workload(metadata)
        self.sent = 0

    def wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        for client in self.clients.values():
            if not client.wait_for_service(timeout_sec=max(deadline - time.monotonic(), 0.1)):
                raise RuntimeError(f'{client.srv_name} is not available')
        for name, client in self.copy_clients.items():
            if not client.wait_for_server(timeout_sec=max(deadline - time.monotonic(), 0.1)):
                raise RuntimeError(f'the {name} action is not available')
        while self.utterances.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise RuntimeError('the memory node does not subscribe to operator turns')
            self.executor.spin_once(timeout_sec=0.01)

    def one_round(self, samples, outcomes, moments=None):
        """Call every series once; record round trips (ns), outcomes and when they began."""
        for series in SERIES:
            request = self.workload.request(series, self.sent)
            if series == 'remember_created':
                self.utterances.publish(OperatorUtterance(
                    episode_id=request.episode_id, turn_id=request.turn_id,
                    text=request.utterance))
            began = time.monotonic()
            elapsed, response = workload.call(
                self.executor, self.clients[series], request, CALL_TIMEOUT_S)
            if moments is not None:
                moments.append((elapsed, began, series))
            label = 'timeout' if response is None else workload.outcome(series, response)
            outcomes[series][label] = outcomes[series].get(label, 0) + 1
            samples[series].append(elapsed)
        self.sent += 1


def pace(executor, rounds_per_second, started, rounds):
    """Spin until round number `rounds` is due (at once when not paced)."""
    if not rounds_per_second:
        return
    due = started + rounds / rounds_per_second
    while (left := due - time.monotonic()) > 0:
        executor.spin_once(timeout_sec=left)


def new_tally():
    return {series: [] for series in SERIES}, {series: {} for series in SERIES}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--memories', type=int, default=1_000_000)
    parser.add_argument('--entities', type=int, default=100_000)
    parser.add_argument('--seed', type=int, default=20260)
    parser.add_argument('--copy', choices=('backup', 'export', 'verify'), default='backup')
    parser.add_argument('--before-seconds', type=float, default=10.0)
    parser.add_argument('--warmup', type=int, default=30)
    parser.add_argument('--rounds-per-second', type=float, default=0.0,
                        help='pace the client (0: back to back)')
    parser.add_argument('--cache-dir', default=str(BENCH_DIR / 'cache'))
    parser.add_argument('--json', help='also write every figure to this file')
    args = parser.parse_args(argv)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'

    cached, metadata = generate.cached_store(
        args.cache_dir, args.memories, args.entities, args.seed)
    directory = pathlib.Path(tempfile.mkdtemp(prefix='mira_bench_backup_'))
    database = directory / 'memory.sqlite3'
    shutil.copyfile(cached, database)
    if args.copy == 'verify':
        verify_cost.add_receipts(database)
    fsync_file(database)
    target = directory / ('copy.sqlite3' if args.copy == 'backup' else 'copy.jsonl')
    namespace = f'/mira_bench_backup_{os.getpid()}'
    process = start_node(directory, namespace, database, metadata['robot_profile'])
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'backup_wait_bench_{os.getpid()}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        client = Client(node, executor, names.memory_node_name(namespace), metadata)
        client.wait_ready()
        warm_samples, warm_outcomes = new_tally()
        for _ in range(args.warmup):
            client.one_round(warm_samples, warm_outcomes)

        before, before_outcomes = new_tally()
        begun = time.monotonic()
        end = begun + args.before_seconds
        rounds = 0
        while time.monotonic() < end:
            client.one_round(before, before_outcomes)
            rounds += 1
            pace(executor, args.rounds_per_second, begun, rounds)

        during, during_outcomes = new_tally()
        moments = []
        action = client.copy_clients[args.copy]
        started = time.monotonic()
        goal = (Verify.Goal() if args.copy == 'verify'
                else {'backup': Backup, 'export': Export}[args.copy].Goal(path=str(target)))
        sending = action.send_goal_async(goal)
        copy = None
        rounds = 0
        while copy is None or not copy.done():
            if time.monotonic() - started > COPY_TIMEOUT_S:
                raise RuntimeError(f'no {args.copy} result after {COPY_TIMEOUT_S:.0f} s')
            client.one_round(during, during_outcomes, moments)
            rounds += 1
            pace(executor, args.rounds_per_second, started, rounds)
            if copy is None and sending.done():
                copy = sending.result().get_result_async()
        copy_s = time.monotonic() - started
        answer = copy.result().result
        if not answer.success:
            raise RuntimeError(f'{args.copy} failed: {answer.error_code}: {answer.message}')
    finally:
        code = stop_process(process)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)

    database_mb = database.stat().st_size / 1e6
    result = {
        'copy': args.copy, 'rounds_per_second': args.rounds_per_second,
        'memories': args.memories, 'database_mb': database_mb,
        'copy_s': copy_s, 'copy_bytes': getattr(answer, 'bytes', 0), 'node_exit_code': code,
        'before': {series: report.latency_summary(before[series]) for series in SERIES},
        'during': {series: report.latency_summary(during[series]) for series in SERIES},
        'outcomes_before': before_outcomes, 'outcomes_during': during_outcomes,
        'slowest_during': [
            {'series': series, 'ms': elapsed / 1e6, 'began_after_s': began - started}
            for elapsed, began, series in sorted(moments, reverse=True)[:5]],
    }
    shutil.rmtree(directory, ignore_errors=True)
    paced = (f'{args.rounds_per_second:g} rounds/s' if args.rounds_per_second
             else 'back to back')
    print(f'client: {paced}')
    print(f'{args.copy} of {args.memories} memories ({database_mb:.1f} MB): '
          f'{copy_s:.1f} s, {getattr(answer, "bytes", 0) / 1e6:.1f} MB written; '
          f'node exit code {code}')
    print(f'  {"series":18} {"phase":7} {"calls":>6} {"p50 ms":>8} {"p99 ms":>8} '
          f'{"max ms":>8}  outcomes')
    for series in SERIES:
        for phase, outcomes in (('before', before_outcomes), ('during', during_outcomes)):
            summary = result[phase][series]
            print(f'  {series:18} {phase:7} {summary["n"]:6d} {summary["p50_ms"]:8.3f} '
                  f'{summary["p99_ms"]:8.3f} {summary["max_ms"]:8.3f}  {outcomes[series]}')
    longest = max(result['during'][series]['max_ms'] for series in SERIES[1:])
    print(f'longest recall/remember wait during the {args.copy}: {longest:.1f} ms')
    print('slowest calls during it: ' + ', '.join(
        f'{slow["series"]} {slow["ms"]:.1f} ms at {slow["began_after_s"]:.1f} s'
        for slow in result['slowest_during']))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
