# SPDX-License-Identifier: Apache-2.0
"""
What the pending review queue adds to a refused remember: queue on vs queue off.

Copies the cached benchmark store (bench/generate.py; 10,000 memories by
default) to two private working files and starts two bench memory nodes
(bench_node.py: the product's MemoryNode plus the empty Trigger floor) on
them, alike but for one parameter: `queue` keeps refusals for review
(pending_enabled, the default; its bounds raised to QUEUE_BOUND so that
every refusal of a run is kept), `off` keeps nothing (pending_enabled
false). The queue node is first filled with QUEUE_MAX + 50 items, so every
refusal it keeps while measured goes into a queue that size. (A full queue
keeps nothing new: it costs the intake's one query and no write.) Then one
client calls, per iteration and in an order
shuffled every iteration (seeded), the same two refusals on both nodes, each
new (its own turn, value and predicate, so none is a duplicate of a kept one):

- `grounding`: "Maybe <subject> really likes <value>." refused by rule 10 (a
  hedge), which the queue keeps;
- `unknown_subject`: "By the way, <unknown name> really likes <value>, these
  days." refused by rule 14 (subject_not_found), which the queue keeps;

and the empty Trigger on the queue node. Each remember's operator turn is
published first, then an untimed pause (--turn-lead-ms), as the main bench
does. Right after each refusal's reply the same node's empty Trigger is
called (`after_<refusal>_<node>`): the node writes a kept refusal after its
reply (core/review/keep.py), so a request that arrives at once behind one
waits for that write, and this series shows what it waits. It prints per
series the calls and p50/p90/p99 in milliseconds, the queue/off ratio of
each refusal's p50 and of the Trigger behind it, each node's own remember
callback (MIRA_BENCH_CALLBACK_TIMES: p50 in microseconds) and the queue's
state at the end (waiting, dropped), with the load average before and after.

Then, in this process with no ROS, the keep itself on a queue of QUEUE_MAX
+ 50 items in a scratch store: the product's MemoryStore.keep_pending (its transaction
commits without an fsync of its own), against the very same transaction
committed durably (synchronous FULL, an fsync per refusal): what that choice
saves (core/review/keep.py says why it is made).

    . .work/jazzy/env.sh
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=71 python bench/review_cost.py
"""

import argparse
import json
import os
import pathlib
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time

import generate
from machine_readings import fsync_file
from mira_memory.client import names
from mira_memory.msg import OperatorUtterance
from mira_memory.simulation import processes
from mira_memory.srv import AdminPending, Remember
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
import report
from run_processes import CALL_TIMEOUT_S, READY_TIMEOUT_S, stop_process
from std_srvs.srv import Trigger
import workload

BENCH_DIR = pathlib.Path(__file__).resolve().parent
NODES = ('queue', 'off')
REFUSALS = ('grounding', 'unknown_subject')
REFUSAL_SERIES = tuple(f'{refusal}_{node}' for refusal in REFUSALS for node in NODES)
# The Trigger called right after each refusal's reply, on the same node.
AFTER_SERIES = tuple(f'after_{series}' for series in REFUSAL_SERIES)
SERIES = ('trigger',) + REFUSAL_SERIES + AFTER_SERIES
EXPECTED = {'grounding': 'rejected/evidence_not_in_utterance',
            'unknown_subject': 'rejected/subject_not_found'}
QUEUE_MAX = 200
# The node's bounds in the bench: high enough that every refusal of a run is kept.
QUEUE_BOUND = 10000
_VALUES = ('green tea', 'black coffee', 'ramen', 'jazz', 'chess', 'long walks', 'sushi',
           'the color teal')


def start_node(directory, name, database, robot_profile, queue, cpu=None):
    namespace = f'/mira_bench_review_{os.getpid()}_{name}'
    env = dict(os.environ, MIRA_BENCH_CALLBACK_TIMES=str(directory / f'{name}_callbacks.json'))
    pinned = ['taskset', '-c', str(cpu)] if cpu is not None else []
    process = processes.Process(
        [*pinned, sys.executable, str(BENCH_DIR / 'bench_node.py'), '--ros-args',
         '-r', f'__ns:={namespace}', '-p', 'enabled:=true',
         '-p', f'database_path:={database}', '-p', f'robot_profile:={robot_profile}',
         '-p', f'pending_enabled:={"true" if queue else "false"}',
         # Bounds out of the way: the bench times keeping, not refusing to keep.
         '-p', f'pending_max:={QUEUE_BOUND}', '-p', f'pending_max_per_episode:={QUEUE_BOUND}',
         '-p', f'pending_max_per_minute:={QUEUE_BOUND}'],
        directory / f'{name}.log', name=f'bench_node_{name}', env=env)
    return process, names.memory_node_name(namespace)


class Requests:
    """Refused remember requests, each new: its own turn, value and predicate."""

    def __init__(self, subjects):
        self._subjects = subjects
        self._sent = 0

    def refusal(self, kind):
        n = self._sent
        self._sent += 1
        value = f'{_VALUES[n % len(_VALUES)]} {n}'
        if kind == 'grounding':
            subject = self._subjects[n % len(self._subjects)]
            evidence = f'{subject} really likes {value}'
            utterance = f'Maybe {evidence}.'
        else:
            subject = f'Quennel Vorsk {n}'  # no entity of the store has this name
            evidence = f'{subject} really likes {value}'
            utterance = f'By the way, {evidence}, these days.'
        return Remember.Request(
            episode_id='review_bench', turn_id=f'rv{n}', utterance=utterance,
            kind='preference', subject=subject, predicate=f'bench_likes_{n}', value=value,
            evidence=evidence)


class Client:
    """One client node calling both bench nodes."""

    def __init__(self, node, executor, prefixes):
        self.node, self.executor = node, executor
        self.remember = {
            name: node.create_client(Remember, names.service_name(prefix, names.REMEMBER))
            for name, prefix in prefixes.items()}
        self.pending = {
            name: node.create_client(AdminPending, names.service_name(prefix, names.ADMIN_PENDING))
            for name, prefix in prefixes.items()}
        self.triggers = {name: node.create_client(Trigger, prefix + '/bench/empty')
                         for name, prefix in prefixes.items()}
        self.trigger = self.triggers['queue']
        self.utterances = {
            name: node.create_publisher(
                OperatorUtterance, prefix.rpartition('/')[0] + '/operator/utterance', 100)
            for name, prefix in prefixes.items()}

    def wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        for client in [*self.triggers.values(), *self.remember.values(),
                       *self.pending.values()]:
            if not client.wait_for_service(timeout_sec=max(deadline - time.monotonic(), 0.1)):
                raise RuntimeError(f'{client.srv_name} is not available')
        for publisher in self.utterances.values():
            while publisher.get_subscription_count() == 0:
                if time.monotonic() > deadline:
                    raise RuntimeError('a memory node does not subscribe to operator turns')
                self.executor.spin_once(timeout_sec=0.01)

    def refuse(self, name, request, turn_lead_s):
        """Publish the request's turn, pause (untimed), call remember; return (ns, response)."""
        self.utterances[name].publish(OperatorUtterance(
            episode_id=request.episode_id, turn_id=request.turn_id, text=request.utterance))
        time.sleep(turn_lead_s)
        return workload.call(self.executor, self.remember[name], request, CALL_TIMEOUT_S)

    def queue_state(self, name):
        _, response = workload.call(self.executor, self.pending[name], AdminPending.Request(),
                                    CALL_TIMEOUT_S)
        return {'waiting': response.pending_count, 'dropped': response.dropped_count}


def keep_cost_in_process(samples, directory):
    """Return {'no own fsync': p50 us, 'fsync per keep': p50 us} of keeping on a full queue."""
    from mira_memory.core.admission import rules
    from mira_memory.core.admission.operator_turn import TurnContext
    from mira_memory.core.admission.proposal_rules import Proposal
    from mira_memory.core.review import keep
    from mira_memory.core.store import MemoryStore, pending, writes
    settings = keep.ReviewSettings(max_items=QUEUE_MAX)
    results = {}
    for label, durable in (('no own fsync', False), ('fsync per keep', True)):
        with MemoryStore.open(directory / f'keep_{int(durable)}.sqlite3') as store:
            store.add_entity('person', 'Ada Lovelace')

            def one(n):
                context = TurnContext('bench', f't{n}', f'Maybe Ada Lovelace likes tea {n}.')
                proposal = Proposal('preference', 'Ada Lovelace', f'likes_{n}', f'tea {n}',
                                    None, None, f'Ada Lovelace likes tea {n}')
                result = rules.admit(store, context, proposal, 'Mira')
                return keep.pending_values(context, proposal, 'Mira', result)

            def durable_keep(values):
                # writes.keep_pending, committed with synchronous FULL.
                connection, clock = store._connection, store._clock
                now = writes.timestamp(clock)
                cutoff = writes.timestamp(lambda: clock() - settings.max_age)
                with connection.atomic(tracked=True, durable=True) as conn:
                    pending.insert(conn, (values[0], now, *values[1:]), now=now,
                                   cutoff=cutoff)
            keep_one = durable_keep if durable else (lambda values: store.keep_pending(
                values, max_age=settings.max_age))
            for n in range(QUEUE_MAX + 50):
                keep_one(one(n))
            times = []
            for n in range(QUEUE_MAX + 50, QUEUE_MAX + 50 + samples):
                values = one(n)
                started = time.perf_counter_ns()
                keep_one(values)
                times.append(time.perf_counter_ns() - started)
            if store.pending_items(1)[1][0] != QUEUE_MAX + 50 + samples:
                raise RuntimeError('the scratch queue did not keep every item')
        results[label] = statistics.median(times) / 1e3
    return results


def callback_p50_us(path, outcome):
    times = json.loads(pathlib.Path(path).read_text()).get(outcome, [])
    return (statistics.median(times) / 1e3 if times else None), len(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--memories', type=int, default=10_000)
    parser.add_argument('--entities', type=int, default=1_000)
    parser.add_argument('--seed', type=int, default=20260)
    parser.add_argument('--calls', type=int, default=1000, help='measured iterations')
    parser.add_argument('--turn-lead-ms', type=float, default=5.0)
    parser.add_argument('--node-cpu', type=int, default=None,
                        help='pin both nodes to this CPU and this client to the others '
                             '(separates what the nodes do after a reply from the client)')
    parser.add_argument('--cache-dir', default=str(BENCH_DIR / 'cache'))
    parser.add_argument('--json', help='also write every figure to this file')
    args = parser.parse_args(argv)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    load_before = os.getloadavg()
    started_at = time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())

    cached, metadata = generate.cached_store(
        args.cache_dir, args.memories, args.entities, args.seed)
    directory = pathlib.Path(tempfile.mkdtemp(prefix='mira_bench_review_'))
    nodes, prefixes = {}, {}
    for name in NODES:
        database = directory / f'{name}.sqlite3'
        shutil.copyfile(cached, database)
        fsync_file(database)
        nodes[name], prefixes[name] = start_node(
            directory, name, database, metadata['robot_profile'], queue=name == 'queue',
            cpu=args.node_cpu)
    if args.node_cpu is not None:
        os.sched_setaffinity(0, set(range(os.cpu_count())) - {args.node_cpu})
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'review_cost_bench_{os.getpid()}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    requests = Requests(metadata['remember_subjects'])
    samples = {series: [] for series in SERIES}
    outcomes = {series: {} for series in SERIES}
    lead = args.turn_lead_ms / 1000.0
    order = random.Random(args.seed)
    try:
        client = Client(node, executor, prefixes)
        client.wait_ready()
        # Fill the queue (and give the off node the same calls).
        for number in range(QUEUE_MAX + 50):
            kind = REFUSALS[number % 2]
            for name in NODES:
                client.refuse(name, requests.refusal(kind), lead)
        filled = client.queue_state('queue')
        if filled['waiting'] != QUEUE_MAX + 50:
            raise RuntimeError(f'the queue holds {filled}, not {QUEUE_MAX + 50}')
        for _ in range(args.calls):
            plan = list(('trigger',) + REFUSAL_SERIES)
            order.shuffle(plan)
            for series in plan:
                if series == 'trigger':
                    elapsed, response = workload.call(
                        executor, client.trigger, Trigger.Request(), CALL_TIMEOUT_S)
                    label = 'ok' if response is not None else 'timeout'
                else:
                    kind, _, name = series.rpartition('_')
                    elapsed, response = client.refuse(name, requests.refusal(kind), lead)
                    label = 'timeout' if response is None else '%s/%s%s' % (
                        response.status, response.reason,
                        ' (kept)' if response.pending_review else '')
                    expected = EXPECTED[kind] + (' (kept)' if name == 'queue' else '')
                    if label != expected:
                        raise RuntimeError(f'{series}: {label}, expected {expected}')
                    after, answer = workload.call(
                        executor, client.triggers[name], Trigger.Request(), CALL_TIMEOUT_S)
                    samples['after_' + series].append(after)
                    after_label = 'ok' if answer is not None else 'timeout'
                    tally = outcomes['after_' + series]
                    tally[after_label] = tally.get(after_label, 0) + 1
                samples[series].append(elapsed)
                outcomes[series][label] = outcomes[series].get(label, 0) + 1
        state = {name: client.queue_state(name) for name in NODES}
    finally:
        codes = {name: stop_process(process) for name, process in nodes.items()}
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    in_process = keep_cost_in_process(args.calls, directory)
    load_after = os.getloadavg()
    summaries = {series: report.latency_summary(samples[series]) for series in SERIES}
    callbacks = {}
    for name in NODES:
        for kind in REFUSALS:
            callbacks[f'{kind}_{name}'] = callback_p50_us(
                directory / f'{name}_callbacks.json', EXPECTED[kind])
    kept_write = callback_p50_us(directory / 'queue_callbacks.json', 'kept refusal write (after '
                                 'the reply)')
    shutil.rmtree(directory, ignore_errors=True)

    print(f'review queue cost, {args.memories} memories, {args.calls} calls per series, '
          f'{started_at}, {platform.node()}, {os.cpu_count()} cores; load average '
          f'{load_before[0]:.2f} before, {load_after[0]:.2f} after; node exit codes {codes}')
    print(f'  {"series":24} {"calls":>6} {"p50 ms":>8} {"p90 ms":>8} {"p99 ms":>8}'
          f' {"node p50 us":>12}  outcomes')
    for series in SERIES:
        summary = summaries[series]
        node_us = callbacks.get(series, (None, 0))[0]
        print(f'  {series:24} {summary["n"]:6d} {summary["p50_ms"]:8.3f} '
              f'{summary["p90_ms"]:8.3f} {summary["p99_ms"]:8.3f} '
              f'{"-" if node_us is None else f"{node_us:.0f}":>12}  {outcomes[series]}')
    ratios = {}
    for kind in REFUSALS:
        kept, off = summaries[f'{kind}_queue'], summaries[f'{kind}_off']
        ratios[kind] = kept['p50_ms'] / off['p50_ms']
        kept_us, off_us = callbacks[f'{kind}_queue'][0], callbacks[f'{kind}_off'][0]
        print(f'  {kind}: kept (queue full) / not kept, p50 {ratios[kind]:.3f}x '
              f'({kept["p50_ms"] - off["p50_ms"]:+.3f} ms); in the node '
              f'{kept_us - off_us:+.0f} us ({kept_us:.0f} vs {off_us:.0f})')
        behind, behind_off = summaries[f'after_{kind}_queue'], summaries[f'after_{kind}_off']
        ratios['after_' + kind] = behind['p50_ms'] / behind_off['p50_ms']
        print(f'    the Trigger right behind it: p50 {ratios["after_" + kind]:.3f}x '
              f'({behind["p50_ms"] - behind_off["p50_ms"]:+.3f} ms)')
    print(f'  the write after the reply in the queue node, p50: {kept_write[0]:.0f} us '
          f'(n={kept_write[1]})')
    print(f'  queue at the end: {state["queue"]}; off node: {state["off"]}')
    print('  keep on a full queue, in process, p50: ' + ', '.join(
        f'{label} {us:.0f} us' for label, us in in_process.items()))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({
            'memories': args.memories, 'calls': args.calls, 'started_at': started_at,
            'load_average_before': load_before, 'load_average_after': load_after,
            'series': summaries, 'outcomes': outcomes, 'node_callback_p50_us': callbacks,
            'ratios': ratios, 'queue_state': state, 'node_exit_codes': codes,
            'keep_in_process_p50_us': in_process, 'kept_write_in_node_p50_us': kept_write[0]},
            indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
