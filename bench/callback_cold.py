#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The memory node's remember callback in process: back to back vs after a pause (cold).

Drives MemoryNode._on_remember (the exact callback the service calls) of a
node built in this process on a copy of a bench store, without transport,
in rounds of one created, one duplicate (a retry of an earlier created
request) and one rejected proposal, and, as the control, an empty async
callback timed the same way ('empty': what a call costs from the same
caches with none of the product's work). Each mode times the same callbacks:
  warm: calls back to back;
  pause: an idle --pause-ms sleep before every call (as the serving node
    idles between the bench's calls: its caches go cold);
  pause+gc_frozen: the same after gc.freeze() (start-up objects out of the
    collector's generations);
  pause+gc_off: the same with the collector disabled (diagnosis only).
  pause+spin: the pause busy-waited instead of slept (the CPU never idles).
Prints p50 per outcome and mode, and the garbage collections that ran.
Diagnosis only: bench/README.md quotes its output.

  bench/callback_cold.py <database copy> <store metadata .json> [--rounds N] [--pause-ms MS]
"""

import argparse
import cProfile
import gc
import json
import pstats
import statistics
import sys
import time

from mira_memory.memory.node import MemoryNode
from mira_memory.srv import Remember
import rclpy
from rclpy.context import Context
import workload


OUTCOMES = ('created', 'duplicate', 'rejected', 'empty')


async def empty_callback(request, response):
    """Return the response untouched: the control, a remember callback with no work."""
    return response


def drive(coroutine):
    """Run a coroutine that never waits (its turn is already heard) to its result."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError('the callback waited')


def split_statements(steps, started, ended, statements):
    """Add one created callback's time before its first statement and per statement."""
    steps.setdefault('before', ('before the first statement (grounding, checks)', []))[1].append(
        statements[0][0] - started)
    ends = [stamp for stamp, _ in statements[1:]] + [ended]
    for position, ((stamp, sql), end) in enumerate(zip(statements, ends)):
        label = ' '.join(sql.split())[:60]
        steps.setdefault((position, label), (label, []))[1].append(end - stamp)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('database')
    parser.add_argument('metadata')
    parser.add_argument('--rounds', type=int, default=300)
    parser.add_argument('--pause-ms', type=float, default=5.0)
    parser.add_argument('--modes', default='warm,pause,pause+gc_frozen,pause+spin,warm')
    parser.add_argument('--statement-times', action='store_true',
                        help='split the warm created callbacks by SQLite statement: the time '
                        'from each statement start to the next (p50), and before the first')
    parser.add_argument('--profile', metavar='OUTCOME', choices=OUTCOMES,
                        help="profile this outcome's callbacks of the modes with cProfile "
                        'and print where the time goes (times of such a run are not figures)')
    args = parser.parse_args(argv)
    profiler = cProfile.Profile() if args.profile else None
    with open(args.metadata, encoding='utf-8') as source:
        metadata = json.load(source)
    context = Context()
    rclpy.init(context=context, args=[
        '--ros-args', '-p', 'enabled:=true', '-p', 'database_path:=' + args.database,
        '-p', 'robot_profile:=' + metadata['robot_profile']])
    node = MemoryNode(context=context)
    load = workload.Workload(metadata)
    window = node.turn_gate.window
    statements = []
    steps = {}
    store = node.service.store
    for connection in [store._connection] + [reader._connection for reader in store._readers]:
        # The trace callback runs as each statement starts: its time
        # stamp, until the next one's, is that statement and the Python
        # between them (--statement-times).
        connection.require_open().set_trace_callback(
            lambda sql: statements.append((time.perf_counter_ns(), sql)))
    collections = [0]
    gc.callbacks.append(lambda phase, info: phase == 'start' and collections.__setitem__(
        0, collections[0] + 1))
    n = int(time.time()) * 10_000  # new predicates on every run of the same copy
    print('python %s, %d rounds per mode, pause %.1f ms' % (
        sys.version.split()[0], args.rounds, args.pause_ms))
    # One unmeasured call first: the first remember loads the language data
    # (a cost of the first call only; the bench's warm-up hides it too).
    first = load.request('remember_created', n)
    window.observe(first.episode_id, first.turn_id, first.utterance)
    started = time.perf_counter()
    drive(node._on_remember(first, Remember.Response()))
    print('  first remember of the process (loads the language data): %.0f ms' % (
        (time.perf_counter() - started) * 1e3))
    for mode in args.modes.split(','):
        if mode == 'pause+gc_frozen':
            gc.collect()
            gc.freeze()
        times = {outcome: [] for outcome in OUTCOMES}
        cpu = {outcome: [] for outcome in OUTCOMES}
        counts = {}
        collections[0] = 0
        for _ in range(args.rounds):
            n += 1
            created = load.request('remember_created', n)
            calls = (('created', created), ('duplicate', created),
                     ('rejected', load.request('remember_rejected', n)), ('empty', created))
            for label, request in calls:
                window.observe(request.episode_id, request.turn_id, request.utterance)
                if mode.startswith('pause'):
                    if mode == 'pause+spin':
                        until = time.perf_counter() + args.pause_ms / 1e3
                        while time.perf_counter() < until:
                            pass
                    else:
                        time.sleep(args.pause_ms / 1e3)
                response = Remember.Response()
                statements.clear()
                cpu_started = time.thread_time_ns()
                profiled = profiler is not None and label == args.profile
                if profiled:
                    profiler.enable()
                callback = empty_callback if label == 'empty' else node._on_remember
                started = time.perf_counter_ns()
                response = drive(callback(request, response))
                times[label].append(time.perf_counter_ns() - started)
                if profiled:
                    profiler.disable()
                cpu[label].append(time.thread_time_ns() - cpu_started)
                counts[label] = len(statements)
                if args.statement_times and label == 'created' and mode == 'warm':
                    split_statements(steps, started, started + times[label][-1], statements)
                if label != 'empty':
                    got = workload.outcome('remember', response)
                    assert got.split('/')[1].startswith(label[:4]) or label == 'rejected', got
        if mode == 'pause+gc_frozen':
            gc.unfreeze()
        print('  %-16s wall (cpu) p50 us: created %5.0f (%5.0f)  duplicate %4.0f (%4.0f)  '
              'rejected %4.0f (%4.0f)  empty %3.0f (%3.0f); %d gc runs' % (
                  mode, *(statistics.median(values[k]) / 1e3 for k in OUTCOMES
                          for values in (times, cpu)), collections[0]))
    if steps:
        print('  the warm created callback by statement, p50 us (each statement until the '
              'next starts, Python between them included):')
        for label, values in steps.values():
            print('    %6.0f  %s' % (statistics.median(values) / 1e3, label))
    print('  SQLite statements per call: ' + ', '.join(
        '%s %d' % (k, counts[k]) for k in OUTCOMES if k != 'empty'))
    if profiler is not None:
        stats = pstats.Stats(profiler)
        print('  profile of the %s callbacks (%d calls per mode):' % (args.profile, args.rounds))
        stats.sort_stats('tottime').print_stats(30)
    node.destroy_node()
    rclpy.shutdown(context=context)


if __name__ == '__main__':
    sys.exit(main())
