# SPDX-License-Identifier: Apache-2.0
"""
Backup, export and verify through the memory node's actions against the offline tools, one run.

Copies the cached benchmark store (bench/generate.py; 1,000,000 memories by
default) to a private working file and gives every remembered memory its
receipt (verify_cost.add_receipts), so verify judges all of them. Then,
on that same file and in this one run:

1. offline, each in a process of its own and with no node running:
   `memory_verify --database WORK` (the offline tool), and the core's
   backup and export (core.archive.copies, what the node runs);
2. through a real memory node (bench_node.py) on WORK: a goal to each of
   the admin/backup, admin/export and admin/verify actions, timed from the
   goal sent to its result received, feedback counted as it comes.

It prints one line per job: offline seconds, through the node, the ratio
(the target for verify: at most 1.5), and the feedback messages
received. Nothing else runs against the node meanwhile (requests during a
job: backup_wait.py).

    . .work/jazzy/env.sh
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=71 python bench/jobs_vs_offline.py
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

from backup_wait import start_node
import generate
from mira_memory.action import Verify
from mira_memory.client import names
import rclpy
from rclpy.action import ActionClient
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from run_processes import READY_TIMEOUT_S, stop_process
import verify_cost

BENCH_DIR = pathlib.Path(__file__).resolve().parent
JOB_TIMEOUT_S = 3600.0
OFFLINE = {
    'verify': ('from mira_memory.console.offline_tools import verify_main\n'
               'sys.exit(verify_main(["--database", sys.argv[1]]))'),
    'backup': ('from mira_memory.core.archive import copies\n'
               'copies.backup(sys.argv[1], sys.argv[2])'),
    'export': ('from mira_memory.core.archive import copies\n'
               'copies.export(sys.argv[1], sys.argv[2])'),
}


def offline(job, work, target):
    """Run the offline tool for job in a process of its own; return its seconds."""
    with open(os.devnull, 'w') as sink:
        code, seconds, _, err = verify_cost.run_measured(OFFLINE[job], [str(work), str(target)],
                                                         sink)
    if code not in ((0, 1) if job == 'verify' else (0,)):
        raise SystemExit(f'offline {job} failed ({code}): {err}')
    return seconds


def through_node(executor, node, prefix, job, target):
    """Send one goal to the node's action for job; return (seconds, result, feedback count)."""
    action_type = names.ACTION_TYPES[job]
    client = ActionClient(node, action_type, names.action_name(prefix, job))
    try:
        if not client.wait_for_server(timeout_sec=READY_TIMEOUT_S):
            raise SystemExit(f'no {job} action')
        goal = Verify.Goal() if job == 'verify' else action_type.Goal(path=str(target))
        feedback = []
        started = time.monotonic()
        sending = client.send_goal_async(goal, feedback_callback=feedback.append)
        executor.spin_until_future_complete(sending, timeout_sec=60)
        result = sending.result().get_result_async()
        while not result.done():
            if time.monotonic() - started > JOB_TIMEOUT_S:
                raise SystemExit(f'no {job} result after {JOB_TIMEOUT_S:.0f} s')
            executor.spin_once(timeout_sec=0.5)
        seconds = time.monotonic() - started
        answer = result.result().result
        if not answer.success:
            raise SystemExit(f'{job} failed: {answer.error_code}: {answer.message}')
        return seconds, answer, len(feedback)
    finally:
        client.destroy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--memories', type=int, default=1_000_000)
    parser.add_argument('--entities', type=int, default=100_000)
    parser.add_argument('--seed', type=int, default=20260)
    parser.add_argument('--cache-dir', default=str(BENCH_DIR / 'cache'))
    parser.add_argument('--jobs', default='backup,export,verify')
    args = parser.parse_args()
    jobs = args.jobs.split(',')
    cached, _ = generate.cached_store(args.cache_dir, args.memories, args.entities, args.seed)
    figures = {}
    with tempfile.TemporaryDirectory(prefix='jobs_vs_offline_', dir=args.cache_dir) as name:
        directory = pathlib.Path(name)
        work = directory / 'memory.sqlite3'
        shutil.copyfile(cached, work)
        receipts = verify_cost.add_receipts(work)
        for job in jobs:
            target = directory / f'offline.{job}'
            figures[job] = {'offline_s': offline(job, work, target)}
            target.unlink(missing_ok=True)
        namespace = f'/mira_jobs_{os.getpid()}'
        process = start_node(directory, namespace, work, generate.ROBOT_PROFILE)
        context = Context()
        rclpy.init(context=context)
        node = rclpy.create_node(f'jobs_bench_{os.getpid()}', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        try:
            process.wait_ready('persistent memory enabled', timeout=READY_TIMEOUT_S)
            for job in jobs:
                target = directory / f'node.{job}'
                seconds, answer, feedback = through_node(
                    executor, node, names.memory_node_name(namespace), job, target)
                figures[job].update(node_s=seconds, feedback=feedback,
                                    message=answer.message)
                target.unlink(missing_ok=True)
        finally:
            code = stop_process(process)
            executor.shutdown()
            node.destroy_node()
            rclpy.try_shutdown(context=context)
    print(json.dumps({'memories': args.memories, 'receipts': receipts, 'node_exit_code': code,
                      'jobs': figures}, indent=1))
    print(f'{"job":8} {"offline s":>10} {"node s":>10} {"ratio":>6} {"feedback":>9}')
    for job, figure in figures.items():
        print(f'{job:8} {figure["offline_s"]:10.1f} {figure["node_s"]:10.1f} '
              f'{figure["node_s"] / figure["offline_s"]:6.2f} {figure["feedback"]:9d}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
