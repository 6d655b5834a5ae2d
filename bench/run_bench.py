#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark recall and remember against the empty-service floor.

For each store size (small and large) this copies the cached synthetic store
to a private working file, starts a real memory node process on it (the
product's MemoryNode plus an empty Trigger service in the same node), and
measures from one client, interleaved call by call: the Trigger floor (also
after an operator turn, as remember is called), the canned recall and
remember answers, recall found/ambiguous/miss and remember
created/duplicate/rejected (see workload.SERIES). Then
throughput with several client processes, start-up time, resident memory,
database size, and an in-process split of where the time of each call goes.
It prints a table and writes JSON (see README.md). Run it through tools/bench.
"""

import argparse
import collections
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import pstats
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import generate
from mira_memory.client import names
from mira_memory.core import recall, store as store_module
from mira_memory.core.admission import rules, turn_proposals
from mira_memory.memory import responses
from mira_memory.msg import OperatorUtterance
from mira_memory.ros import launching
from mira_memory.simulation import processes
from mira_memory.srv import RecallMemory, Remember
import peers
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.serialization import deserialize_message, serialize_message
import report
from std_srvs.srv import Trigger
import workload

BENCH_DIR = pathlib.Path(__file__).resolve().parent
DEFAULT_DOMAIN_ID = 71
DEFAULT_SEED = 20260
CALL_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
WORK_PREFIX = 'mira_bench_'

MODES = {
    'full': {
        'sizes': {'small': (10_000, 1_000), 'large': (1_000_000, 100_000)},
        'calls': 1000, 'warmup': 50, 'clients': 4, 'phase_s': 5.0, 'rounds': 2,
        'startup_samples': 3, 'breakdown_calls': 300, 'commit_samples': 200,
        'idle_seconds': 60.0, 'idle_settle_s': 5.0,
    },
    'quick': {
        'sizes': {'small': (2_000, 200), 'large': (10_000, 1_000)},
        'calls': 50, 'warmup': 10, 'clients': 2, 'phase_s': 1.0, 'rounds': 1,
        'startup_samples': 1, 'breakdown_calls': 20, 'commit_samples': 20,
        'idle_seconds': 2.0, 'idle_settle_s': 0.0,
    },
}


def parse_args(argv):
    """Parse the command line; mode defaults can be overridden one by one."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    parser.add_argument('--quick', action='store_true',
                        help='small stores and few calls (what CI runs); no verdict is final')
    parser.add_argument('--domain', type=int,
                        default=int(os.environ.get('MIRA_BENCH_DOMAIN_ID', DEFAULT_DOMAIN_ID)),
                        help='ROS_DOMAIN_ID of every process of the run '
                             '(default $MIRA_BENCH_DOMAIN_ID or %d)' % DEFAULT_DOMAIN_ID)
    parser.add_argument('--seed', type=int, default=DEFAULT_SEED)
    parser.add_argument('--calls', type=int, help='measured calls per series')
    parser.add_argument('--warmup', type=int, help='unmeasured calls per series first')
    parser.add_argument('--clients', type=int, help='throughput client processes')
    parser.add_argument('--phase-seconds', type=float, dest='phase_s',
                        help='length of one throughput phase')
    parser.add_argument('--sizes', help='override store sizes: SMALL_MEMORIES:ENTITIES,'
                                        'LARGE_MEMORIES:ENTITIES')
    parser.add_argument('--cache-dir', type=pathlib.Path, default=BENCH_DIR / 'cache')
    parser.add_argument('--results-dir', type=pathlib.Path, default=BENCH_DIR / 'results')
    parser.add_argument('--node-log-level', choices=('debug', 'info', 'warn', 'error'),
                        help="the memory node's --log-level (default: the product's, info); "
                             'for A/B runs that show what per-call logging costs')
    parser.add_argument('--turn-lead-ms', type=float, default=5.0, dest='turn_lead_ms',
                        help='untimed pause between publishing an operator turn and the call '
                             'that follows it (remember, canned_remember, trigger_after_turn); '
                             'default 5: the node has heard the turn, as in real use, where '
                             'cognition calls remember only after the model answered, hundreds '
                             'of ms after the turn. 0 calls at once: the node may have to wait '
                             'for the turn (the race the observed-turn wait covers)')
    parser.add_argument('--profile', action='store_true',
                        help='run the store nodes under cProfile and print where their time '
                             'goes (slows every call: the latencies of such a run are not '
                             'figures)')
    parser.add_argument('--startup-samples', type=int,
                        help='node starts per store (full: 3, quick: 1); the last one serves '
                             'the calls')
    parser.add_argument('--dds-profile', type=pathlib.Path, metavar='XML',
                        help='a Fast DDS profile file (such as config/dds/'
                             'fastdds_discovery.xml) for every process of the run, this '
                             "runner's clients included (FASTRTPS_DEFAULT_PROFILES_FILE for "
                             "Jazzy's Fast DDS 2, FASTDDS_DEFAULT_PROFILES_FILE for Kilted's "
                             'Fast DDS 3); compare with a run without it')
    parser.add_argument('--dds-profile-clients-only', action='store_true',
                        help='with --dds-profile: only the clients get it (this runner and the '
                             'load clients), the store nodes run without: a node that starts '
                             "waits for the running clients' announcements, and its own idle "
                             'CPU is not theirs')
    parser.add_argument('--startup-only', action='store_true',
                        help='only the start-up samples of the large store (and, in full mode, '
                             'its idle CPU): no calls')
    parser.add_argument('--peers', action='store_true',
                        help='only the peer comparison: the same recall and remember calls '
                             'against mira_memory and RobotMem (bench/peers.py), interleaved, '
                             'on the small store (10,000 memories in full mode)')
    parser.add_argument('--idle-seconds', type=float,
                        help="seconds the large store's node is left idle after the run to "
                             'measure its CPU (full: 60, quick: 2)')
    args = parser.parse_args(argv)
    args.mode = 'quick' if args.quick else 'full'
    settings = dict(MODES[args.mode])
    if args.dds_profile is not None:
        if not args.dds_profile.is_file():
            parser.error('--dds-profile: no such file: %s' % args.dds_profile)
        args.dds_profile = args.dds_profile.resolve()
    settings['dds_profile'] = None if args.dds_profile is None else str(args.dds_profile)
    if args.dds_profile_clients_only and args.dds_profile is None:
        parser.error('--dds-profile-clients-only needs --dds-profile')
    settings['dds_profile_nodes'] = bool(args.dds_profile) and not args.dds_profile_clients_only
    settings['startup_only'] = args.startup_only
    if args.peers and args.startup_only:
        parser.error('--peers and --startup-only are separate runs')
    for name in ('calls', 'warmup', 'clients', 'phase_s', 'startup_samples', 'idle_seconds'):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if args.sizes:
        pairs = [tuple(int(part) for part in size.split(':')) for size in args.sizes.split(',')]
        settings['sizes'] = dict(zip(('small', 'large'), pairs))
    if not 0 <= args.domain <= 232:
        parser.error('--domain must be a ROS domain id (0-232)')
    settings['seed'] = args.seed
    settings['domain_id'] = args.domain
    settings['node_log_level'] = args.node_log_level
    settings['turn_lead_s'] = args.turn_lead_ms / 1000.0
    args.settings = settings
    return args


class Run:
    """Everything one benchmark run started, so it can all be stopped and removed."""

    def __init__(self, settings):
        self.settings = settings
        self.processes = []
        self.directories = []
        self.remove_abandoned_work_directories()
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('mira_bench_client_%d' % os.getpid(), context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def work_directory(self, label):
        """Return a new private directory for one store's working copy and logs."""
        path = pathlib.Path(tempfile.mkdtemp(prefix='%s%d_%s_' % (
            WORK_PREFIX, os.getpid(), label)))
        self.directories.append(path)
        return path

    @staticmethod
    def remove_abandoned_work_directories():
        """Remove working copies left by runs that were killed (their runner is gone)."""
        for path in pathlib.Path(tempfile.gettempdir()).glob(WORK_PREFIX + '*_*'):
            runner = path.name[len(WORK_PREFIX):].split('_', 1)[0]
            if runner.isdigit() and not pathlib.Path('/proc', runner).exists():
                shutil.rmtree(path, ignore_errors=True)

    def spawn(self, command, log_path, env=None, **kwargs):
        """Start a process (the package's harness) that close() will stop if still running."""
        process = processes.Process(command, log_path, env=env, append=True, **kwargs)
        self.processes.append(process)
        return process

    def close(self):
        """Stop every process still running, remove working copies, shut the client down."""
        # Newest first: load clients stop while the nodes they call still answer.
        for process in reversed(self.processes):
            stop_process(process)
        for path in self.directories:
            shutil.rmtree(path, ignore_errors=True)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def stop_process(process):
    """SIGTERM (a clean node shutdown), then SIGKILL if it does not exit; return the exit code."""
    # Not SIGINT: processes started from a background job inherit it ignored.
    return process.stop(first=signal.SIGTERM, timeout=STOP_TIMEOUT_S)


def proc_status(pid):
    """Return VmRSS and VmHWM of a process in bytes."""
    values = {}
    with open('/proc/%d/status' % pid) as handle:
        for line in handle:
            name, _, rest = line.partition(':')
            if name in ('VmRSS', 'VmHWM'):
                values[name] = int(rest.split()[0]) * 1024
    return values


def process_cpu_seconds(pid):
    """Return the user + system CPU seconds a process has used (/proc/<pid>/stat)."""
    with open('/proc/%d/stat' % pid) as handle:
        # The command name (field 2) may hold spaces: split after its ')'.
        fields = handle.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def cpu_times():
    """Return (busy, total) jiffies of the whole machine from /proc/stat."""
    with open('/proc/stat') as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return total - idle, total


def busy_fraction(before, after):
    """Return the share of all CPUs that was busy between two cpu_times() readings."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total else 0.0


def file_size(path):
    """Return a file's size in bytes, 0 when it does not exist."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def fsync_file(path):
    """Flush a file's data to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def median_summary(samples):
    """Return samples with their median and maximum."""
    return {'samples': samples, 'median': statistics.median(samples), 'max': max(samples)}


def machine_info():
    """Describe the machine and software the run used."""
    model = 'unknown'
    with open('/proc/cpuinfo') as handle:
        for line in handle:
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    with open('/proc/meminfo') as handle:
        memory_total = int(handle.readline().split()[1]) * 1024
    rclpy_version = 'unknown'
    for distribution in ('ros-rclpy', 'ros-jazzy-rclpy', 'ros-kilted-rclpy'):
        try:
            rclpy_version = '%s %s' % (distribution, importlib.metadata.version(distribution))
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        'cpu_model': model,
        'cpu_count': os.cpu_count(),
        'cpus_usable': len(os.sched_getaffinity(0)),
        'memory_total_bytes': memory_total,
        'kernel': platform.release(),
        'python': platform.python_version(),
        'ros_distro': os.environ.get('MIRA_ROS_DISTRO') or os.environ.get('ROS_DISTRO') or '?',
        'rclpy_version': rclpy_version,
        'rmw_implementation': rclpy.get_rmw_implementation_identifier(),
        'sqlite_version': sqlite3.sqlite_version,
        'load_average_start': list(os.getloadavg()),
    }


def durable_commit_floor(directory, samples):
    """
    Time a one-row durable commit (WAL, synchronous=FULL) on the working copy's disk.

    This is what a created memory cannot avoid however fast the node is:
    the fsync that makes an acknowledged write survive power loss.
    """
    path = directory / 'commit_floor.sqlite3'
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute('PRAGMA journal_mode = WAL').fetchall()
        conn.execute('PRAGMA synchronous = FULL')
        conn.execute('CREATE TABLE t (x TEXT)')
        times = []
        for n in range(samples):
            started = time.perf_counter_ns()
            conn.execute('BEGIN IMMEDIATE')
            conn.execute('INSERT INTO t VALUES (?)', ('row %d' % n,))
            conn.execute('COMMIT')
            times.append(time.perf_counter_ns() - started)
    finally:
        conn.close()
    for suffix in ('', '-wal', '-shm'):
        pathlib.Path(str(path) + suffix).unlink(missing_ok=True)
    return report.latency_summary(times)


class StoreBench:
    """The measurements of one store: one node process, one working copy."""

    def __init__(self, run, label, cache_path, metadata, metadata_path, profile_path):
        self.run = run
        self.label = label
        self.settings = run.settings
        self.metadata = metadata
        self.metadata_path = metadata_path
        self.profile_path = profile_path
        self.directory = run.work_directory(label)
        self.db_path = self.directory / 'memory.sqlite3'
        shutil.copyfile(cache_path, self.db_path)
        # A fresh copy is dirty in the page cache; unflushed, the node's first
        # WAL checkpoint would fsync all of it (a 200+ ms stall at 1M memories
        # that a deployed store never has).
        fsync_file(self.db_path)
        self.namespace = '/mira_bench_%d_%s' % (os.getpid(), label)
        self.names = workload.service_names(names.memory_node_name(self.namespace))
        self.env = dict(os.environ, ROS_LOG_DIR=str(self.directory / 'ros_log'))
        self.node_log = self.directory / 'node.log'
        self.callback_times_path = self.directory / 'remember_callback_times.json'
        self.process = None
        self.clients = {}
        self.utterances = None
        self.result = None

    def start(self):
        """Start the node (start-up samples) and leave it serving; return the result section."""
        for kind, name in self.names.items():
            self.clients[kind] = self.run.node.create_client(workload.SERVICE_TYPES[kind], name)
        # The memory node admits remember only for operator turns it heard:
        # every remember's turn is said here first, as the operator source does.
        self.utterances = self.run.node.create_publisher(
            OperatorUtterance, self.namespace + '/operator/utterance', 100)
        self.result = {
            'memories': self.metadata['memories'],
            'entities': self.metadata['entities'],
            'counts': self.metadata['counts'],
            'store_cache': {
                'key': self.metadata['cache_key'],
                'cached': self.metadata['cached'],
                'generation_s': self.metadata['generation_s'],
                'bytes': file_size(self.db_path),
            },
            'work_directory': str(self.directory),
            'startup': self._startup(),
        }
        self._wait_for_turn_subscription()
        self.result['node'] = {'pid': self.process.pid,
                               'rss_at_ready_bytes': proc_status(self.process.pid)['VmRSS']}
        return self.result

    def finish(self):
        """Read memory and sizes, stop the node, then split the calls' costs in process."""
        status = proc_status(self.process.pid)
        self.result['node']['rss_after_run_bytes'] = status['VmRSS']
        self.result['node']['rss_peak_bytes'] = status['VmHWM']
        self.result['database'] = {
            'db_bytes': file_size(self.db_path),
            'wal_bytes': file_size(str(self.db_path) + '-wal'),
            'shm_bytes': file_size(str(self.db_path) + '-shm'),
        }
        self.result['node']['exit_code'] = stop_process(self.process)
        self.result['node']['remember_callback_us'] = self._callback_times()
        self.result['database']['db_bytes_after_close'] = file_size(self.db_path)
        for client in self.clients.values():
            self.run.node.destroy_client(client)
        self.clients = {}
        self.result['breakdown'] = cost_breakdown(
            self.db_path, self.metadata, self.settings['breakdown_calls'])

    def idle(self):
        """
        Leave the node idle for idle_seconds; record its CPU share and resident memory.

        Nothing calls it meanwhile; it still publishes /diagnostics at its
        default 1 Hz and keeps its subscriptions and DDS participant alive,
        which is what a robot's memory node does between turns.
        """
        seconds = self.settings['idle_seconds']
        pid = self.process.pid
        # Not yet idle right after its first answer: the node counts its rows
        # for /diagnostics in a thread of its own (up to 0.6 CPU s at 1M),
        # which a fast start leaves inside the window.
        time.sleep(self.settings['idle_settle_s'])
        rss_before = proc_status(pid)['VmRSS']
        cpu_before, started = process_cpu_seconds(pid), time.monotonic()
        # The runner's own executor is not spun: nothing of the client wakes the node.
        time.sleep(seconds)
        cpu = process_cpu_seconds(pid) - cpu_before
        elapsed = time.monotonic() - started
        self.result['idle'] = {
            'seconds': elapsed, 'cpu_seconds': cpu, 'cpu_share_of_one_core': cpu / elapsed,
            'rss_before_bytes': rss_before, 'rss_after_bytes': proc_status(pid)['VmRSS'],
            'load_average_after': list(os.getloadavg()),
        }

    def _callback_times(self):
        """Return {outcome: n and p50 us} of the serving node's remember callbacks."""
        try:
            with open(self.callback_times_path, encoding='utf-8') as source:
                times = json.load(source)
        except (OSError, ValueError):
            return {}  # the node did not stop cleanly; the report says so
        result = {}
        for outcome, values in times.items():
            if outcome.startswith(('cpu ', 'gc ')):
                continue
            result[outcome] = {'n': len(values),
                               'p50_us': report.percentile(sorted(values), 50.0) / 1e3}
            cpu = times.get('cpu ' + outcome)
            if cpu:
                result[outcome]['cpu_p50_us'] = report.percentile(sorted(cpu), 50.0) / 1e3
            collections = times.get('gc ' + outcome)
            if collections:
                # Share of the callbacks in which the collector ran at least once.
                result[outcome]['with_gc'] = sum(1 for n in collections if n) / len(collections)
        return result

    def _spawn_node(self, profile):
        command = [
            sys.executable, str(BENCH_DIR / 'bench_node.py'), '--ros-args',
            '-r', '__ns:=' + self.namespace,
            '-p', 'enabled:=true',
            '-p', 'database_path:=' + str(self.db_path),
            '-p', 'robot_profile:=' + self.metadata['robot_profile'],
        ]
        if self.settings['node_log_level']:
            command += ['--log-level', self.settings['node_log_level']]
        env = dict(self.env, MIRA_BENCH_CALLBACK_TIMES=str(self.callback_times_path))
        if profile:
            env['MIRA_BENCH_PROFILE'] = str(self.profile_path)
        if not self.settings['dds_profile_nodes']:
            for variable in launching.DDS_PROFILE_VARIABLES:
                env.pop(variable, None)
        return self.run.spawn(command, self.node_log, env=env)

    def _startup(self):
        """Start the node `startup_samples` times; keep the last one running."""
        names = ('ready_s', 'advertised_s', 'imports_s', 'rclpy_init_s', 'construct_s',
                 'discovery_and_first_call_s')
        phases = {name: [] for name in names}
        samples = self.settings['startup_samples']
        for sample in range(samples):
            last = sample == samples - 1
            spawned = time.monotonic()
            self.process = self._spawn_node(profile=last and self.profile_path is not None)
            advertised, ready = self._wait_ready(spawned)
            times = self._node_times(self.process.pid)
            phases['ready_s'].append(ready - spawned)
            phases['advertised_s'].append(advertised - spawned)
            phases['imports_s'].append(times['imported'] - spawned)
            phases['rclpy_init_s'].append(times['init_started'] - times['imported'])
            phases['construct_s'].append(times['constructed'] - times['init_started'])
            phases['discovery_and_first_call_s'].append(ready - times['constructed'])
            if not last:
                stop_process(self.process)
        result = {name: median_summary(values) for name, values in phases.items()}
        result['dds_profile'] = self.settings['dds_profile']
        result['dds_profile_nodes'] = self.settings['dds_profile_nodes']
        result['definition'] = (
            'process spawn until the first recall_memory response arrives (advertised: '
            'until the client first sees the service); the phases are interpreter start and '
            'imports, rclpy.init, MemoryNode construction (store open, services), then DDS '
            'discovery and the first call')
        return result

    def say(self, turn):
        """Publish an operator turn (episode id, turn id, text); not timed."""
        episode_id, turn_id, text = turn
        self.utterances.publish(OperatorUtterance(
            episode_id=episode_id, turn_id=turn_id, text=text))

    def _wait_ready(self, spawned):
        """Return (first seen advertised, first answered) monotonic times of recall_memory."""
        client = self.clients['recall']
        request = RecallMemory.Request(query=self.metadata['found_queries'][0])
        advertised = None
        while time.monotonic() - spawned < READY_TIMEOUT_S:
            if self.process.poll() is not None:
                raise processes.ProcessError(
                    self.process.describe('exited before recall_memory answered'))
            if client.service_is_ready():
                if advertised is None:
                    advertised = time.monotonic()
                _, response = workload.call(
                    self.run.executor, client, request, CALL_TIMEOUT_S)
                if response is not None:
                    return advertised, time.monotonic()
            else:
                time.sleep(0.002)
        raise processes.ProcessError(self.process.describe(
            'recall_memory did not answer within %.0f s' % READY_TIMEOUT_S))

    def _wait_for_turn_subscription(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        while self.utterances.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise RuntimeError('the memory node does not subscribe to operator turns')
            self.run.executor.spin_once(timeout_sec=0.01)

    def _node_times(self, pid):
        for line in self.node_log.read_text().splitlines():
            if line.startswith('BENCH_TIMES '):
                times = json.loads(line.split(' ', 1)[1])
                if times['pid'] == pid:
                    return times
        raise RuntimeError('the bench node printed no BENCH_TIMES line')

    def throughput(self):
        """Several client processes call back to back: Trigger and recall found phases."""
        clients = self.settings['clients']
        loaders = []
        for index in range(clients):
            settings = {'node_prefix': names.memory_node_name(self.namespace),
                        'metadata_path': str(self.metadata_path), 'client_index': index}
            loaders.append(self.run.spawn(
                [sys.executable, str(BENCH_DIR / 'load_client.py'), json.dumps(settings)],
                self.directory / 'load_client.log', env=self.env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        for process in loaders:
            if process.process.stdout.readline().strip() != 'READY':
                raise processes.ProcessError(process.describe('a load client failed'))
        phase_s = self.settings['phase_s']
        start = time.time() + 0.5
        phases = []
        for _ in range(self.settings['rounds']):
            for series in workload.THROUGHPUT_SERIES:
                phases.append({'series': series, 'start': start, 'end': start + phase_s})
                start += phase_s + 0.2
        for process in loaders:
            process.process.stdin.write(json.dumps(phases) + '\n')
            process.process.stdin.flush()
        totals = {series: {'calls': 0, 'outcomes': collections.Counter()}
                  for series in workload.THROUGHPUT_SERIES}
        for process in loaders:
            line = process.process.stdout.readline()
            if process.wait(STOP_TIMEOUT_S) is None:
                raise processes.ProcessError(process.describe('did not exit after reporting'))
            if not line:
                raise processes.ProcessError(process.describe('a load client reported nothing'))
            for phase in json.loads(line):
                totals[phase['series']]['calls'] += phase['calls']
                totals[phase['series']]['outcomes'].update(phase['outcomes'])
        seconds = phase_s * self.settings['rounds']
        result = {'clients': clients, 'seconds_per_series': seconds}
        for series, total in totals.items():
            result[series] = {'calls': total['calls'], 'calls_per_s': total['calls'] / seconds,
                              'outcomes': dict(total['outcomes'])}
        result['recall_found_over_trigger'] = (
            result['recall_found']['calls_per_s'] / result['trigger']['calls_per_s'])
        return result


def interleaved(run, benches):
    """
    Measure every series of every store round robin, one call of each per iteration.

    All store nodes serve at once, so machine noise lands on every series of
    every store alike: the floor ratios and the large/small ratio compare
    calls made at the same moments. The order of the (store, series) pairs
    is shuffled every iteration (seeded): a rotation would keep each pair's
    predecessor fixed, and a call right after a call to the other node pays
    for waking its node process, which would always land on the same series.
    Return {store label: {series: summary}}.
    """
    executor = run.executor
    settings = run.settings
    pairs = [(bench, series) for bench in benches for series in workload.SERIES]
    loads = {bench.label: workload.Workload(bench.metadata) for bench in benches}
    samples = {pair: [] for pair in pairs}
    # Round trips split by whether the previous call went to the same node.
    by_predecessor = {(pair, same): [] for pair in pairs for same in (True, False)}
    outcomes = {pair: collections.Counter() for pair in pairs}
    warmup = settings['warmup']
    for bench, series in pairs:
        client = bench.clients[workload.service_kind(series)]
        for n in range(warmup):
            request = loads[bench.label].request(series, n)
            turn = loads[bench.label].turn_before(series, n, request)
            if turn:
                bench.say(turn)
            workload.call_series(series, executor, client, request, CALL_TIMEOUT_S)
    order = list(pairs)
    shuffler = random.Random(settings['seed'])
    previous = None
    for iteration in range(settings['calls']):
        shuffler.shuffle(order)
        for pair in order:
            bench, series = pair
            request = loads[bench.label].request(series, warmup + iteration)
            turn = loads[bench.label].turn_before(series, warmup + iteration, request)
            if turn:
                # Published just before the call, outside the timed round trip:
                # without a lead the node may still have to wait for it.
                bench.say(turn)
                if settings['turn_lead_s']:
                    time.sleep(settings['turn_lead_s'])
            elapsed, response = workload.call_series(
                series, executor, bench.clients[workload.service_kind(series)], request,
                CALL_TIMEOUT_S)
            same_node, previous = previous is bench, bench
            if response is None:
                outcomes[pair]['timeout'] += 1
                continue
            samples[pair].append(elapsed)
            by_predecessor[pair, same_node].append(elapsed)
            outcomes[pair][workload.outcome(series, response)] += 1
    results = {}
    for bench in benches:
        result = results[bench.label] = {}
        for series in workload.SERIES:
            result[series] = report.latency_summary(samples[bench, series])
            result[series]['outcomes'] = dict(outcomes[bench, series])
            result[series]['expected_outcome'] = workload.EXPECTED_OUTCOMES[series]
            for same, key in ((True, 'after_same_node'), (False, 'after_other_node')):
                values = by_predecessor[(bench, series), same]
                result[series][key] = {'n': len(values), 'p50_ms': report.percentile(
                    sorted(value / 1e6 for value in values), 50.0)}
        report.add_floor_ratios(result)
    return results


def recall_split(series):
    """
    Split each recall series' p50 round trip with the two floors measured beside it.

    floor: the empty Trigger; message: what the recall response adds by
    being carried and converted (its same-shape canned series minus
    Trigger); producing: what the node adds by computing it, SQL (or its
    answer cache), rendering and message building (the recall series minus
    its canned series). Returns {recall series: {floor, message, producing}}.
    """
    floor = series['trigger']['p50_ms']
    split = {}
    for name, canned_name in workload.CANNED_OF.items():
        canned = series[canned_name]['p50_ms']
        split[name] = {'floor': floor, 'message': canned - floor,
                       'producing': series[name]['p50_ms'] - canned}
    return split


def _timed(function, samples):
    """Run function samples times; return (median microseconds, last result)."""
    times = []
    value = None
    for _ in range(samples):
        started = time.perf_counter_ns()
        value = function()
        times.append(time.perf_counter_ns() - started)
    return statistics.median(times) / 1000.0, value


def cost_breakdown(db_path, metadata, samples):
    """
    Split one call's node-side work into stages, in process, without transport.

    core: recall() or admit() (SQLite reads/writes plus rendering); of it,
    store_reads: the store calls recall makes; cached_core: the node's
    RecallCache answering a kept answer (what a repeated query costs while
    no write changed it); build: filling the response
    message (responses.py); serialize: rclpy's Python->C conversion and CDR
    serialization of the response (what send_response does); deserialize:
    the client's CDR->Python conversion. Medians in microseconds.
    """
    load = workload.Workload(metadata)
    result = {}
    with store_module.MemoryStore.open(db_path) as opened:
        reader = opened.open_reader()
        cache = recall.RecallCache(reader, opened)
        for series in ('recall_found', 'recall_ambiguous', 'recall_miss', 'recall_found_full'):
            request = load.request(series, 0)
            query = request.query
            core, outcome = _timed(lambda: recall.recall(reader, query), samples)
            cached, _ = _timed(lambda: cache.recall(query), samples)
            reads, _ = _timed(lambda: _recall_reads(reader, query), samples)
            result[series] = _message_stages(
                samples, core, RecallMemory.Response,
                lambda: responses.fill_recall(
                    RecallMemory.Response(), outcome, request.include_entities))
            result[series]['cached_core_us'] = cached
            result[series]['store_reads_us'] = reads
            result[series]['render_and_rest_us'] = core - reads
        remember = {}
        for series in ('remember_created', 'remember_duplicate', 'remember_rejected'):
            # Far beyond the measured run's numbers, so every created proposal is new.
            first = 10_000_000
            requests = [load.request(series, first + n) for n in range(samples)]
            remember[series] = iter(requests)
        for series, requests in remember.items():
            core, outcome = _timed(
                lambda: rules.admit(opened, *_proposal(next(requests)),
                                    metadata['robot_profile']), samples)
            result[series] = _message_stages(
                samples, core, Remember.Response,
                lambda: responses.fill_remember(Remember.Response(), outcome))
        # What the node does for a retry: TurnProposalLog answers it with the
        # turn's first answer, without admission.
        log = turn_proposals.TurnProposalLog()
        retries = [_proposal(load.request('remember_created', 20_000_000 + n))
                   for n in range(samples)]
        profile = metadata['robot_profile']
        for context, proposal in retries:
            log.answer(context, proposal,
                       lambda: rules.admit(opened, context, proposal, profile))
        retries = iter(retries)

        def retry():
            context, proposal = next(retries)
            return log.answer(context, proposal,
                              lambda: rules.admit(opened, context, proposal, profile))
        core, outcome = _timed(retry, samples)
        result['remember_retry'] = _message_stages(
            samples, core, Remember.Response,
            lambda: responses.fill_remember(Remember.Response(), outcome))
    result['trigger'] = _message_stages(samples, 0.0, Trigger.Response, Trigger.Response)
    return result


def _recall_reads(reader, query):
    matches = reader.find_entities(
        query, limit=recall.MAX_ENTITIES + 1, with_aliases=False)
    for entity in matches[:recall.MAX_ENTITIES]:
        reader.newest_active_memories(entity.id, recall.MAX_MEMORIES_PER_ENTITY)


def _proposal(request):
    context = rules.TurnContext(
        episode_id=request.episode_id, turn_id=request.turn_id, utterance=request.utterance)
    proposal = rules.Proposal(
        kind=request.kind, subject=request.subject, predicate=request.predicate,
        value=request.value, related_entity=request.related_entity or None,
        related_role=request.related_role or None, evidence=request.evidence)
    return context, proposal


def _message_stages(samples, core_us, message_type, build):
    build_us, message = _timed(build, samples)
    serialize_us, data = _timed(lambda: serialize_message(message), samples)
    deserialize_us, _ = _timed(lambda: deserialize_message(data, message_type), samples)
    return {
        'core_us': core_us, 'build_us': build_us, 'serialize_us': serialize_us,
        'deserialize_us': deserialize_us, 'response_bytes': len(data),
        'node_side_us': core_us + build_us + serialize_us,
    }


def profile_summary(path, limit=25):
    """Return the top functions of a cProfile dump by own time, as text."""
    stream = _Capture()
    stats = pstats.Stats(str(path), stream=stream)
    stats.sort_stats('tottime').print_stats(limit)
    stats.sort_stats('cumulative').print_stats(limit)
    return stream.text()


class _Capture:
    """A minimal text stream for pstats."""

    def __init__(self):
        self._parts = []

    def write(self, text):
        self._parts.append(text)

    def text(self):
        return ''.join(self._parts)


def main(argv=None):
    """Run the benchmark; return 0 when it completed (whatever the verdicts)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    settings = args.settings
    # Every process of the run (this one included) stays on loopback, in its own domain.
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_DOMAIN_ID'] = str(settings['domain_id'])
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
    os.environ[workload.RUNNER_PID_VARIABLE] = str(os.getpid())
    # The run's own profile or none: never one left in the caller's environment.
    for variable in launching.DDS_PROFILE_VARIABLES:
        os.environ.pop(variable, None)
    os.environ.update(launching.dds_profile_environment(settings['dds_profile']))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime('%Y%m%dT%H%M%SZ')
    result = {
        'format': 1,
        'mode': args.mode,
        'started_at': started.isoformat(timespec='seconds'),
        'command': [sys.argv[0], *(sys.argv[1:] if argv is None else argv)],
        'settings': dict(settings, sizes={label: {'memories': size[0], 'entities': size[1]}
                                          for label, size in settings['sizes'].items()}),
        'profiled': args.profile,
        'machine': machine_info(),
        'at_target_size': settings['sizes']['large'] == MODES['full']['sizes']['large'],
    }
    print('mira_memory bench: %s mode, ROS_DOMAIN_ID=%d, loopback only' % (
        args.mode, settings['domain_id']), flush=True)
    stores = {}
    sizes = settings['sizes']
    if settings['startup_only']:
        sizes = {'large': sizes['large']}
    peer_path = None
    if args.peers:
        sizes = {'small': sizes['small']}
        peer_path = peers.peer_path(os.environ.get('ROS_DISTRO', 'jazzy'))
        if not (peer_path / 'robotmem' / 'sdk.py').is_file():
            print(peers.install_hint(peer_path))
            return 2
    for label, (memories, entities) in sizes.items():
        path, metadata = generate.cached_store(
            args.cache_dir, memories, entities, settings['seed'],
            log=lambda text: print(text, flush=True))
        stores[label] = (path, metadata, path.with_suffix('.json'))
    args.results_dir.mkdir(parents=True, exist_ok=True)
    run = Run(settings)
    profiles = {}
    try:
        benches = []
        for label, (path, metadata, metadata_path) in stores.items():
            print('starting the %s store node (%d memories) ...' % (label, metadata['memories']),
                  flush=True)
            profile_path = None
            if args.profile:
                profile_path = args.results_dir / ('profile-%s-%s.pstats' % (stamp, label))
                profiles[label] = profile_path
            bench = StoreBench(run, label, path, metadata, metadata_path, profile_path)
            benches.append(bench)
            bench.start()
        if settings['startup_only']:
            return _startup_only(args, result, stamp, run, benches[0])
        if args.peers:
            return _peers(args, result, stamp, run, benches[0], peer_path)
        print('measuring latency, every series of both stores interleaved ...', flush=True)
        cpu_before = cpu_times()
        series = interleaved(run, benches)
        busy = busy_fraction(cpu_before, cpu_times())
        for bench in benches:
            bench.result['series'] = series[bench.label]
            bench.result['recall_split_ms'] = recall_split(series[bench.label])
            bench.result['system_cpu_busy_during_calls'] = busy
            bench.result['load_average_after_calls'] = list(os.getloadavg())
        for bench in benches:
            print('measuring throughput and costs of the %s store ...' % bench.label, flush=True)
            cpu_before = cpu_times()
            bench.result['throughput'] = bench.throughput()
            bench.result['throughput']['system_cpu_busy'] = busy_fraction(cpu_before, cpu_times())
            bench.result['throughput']['load_average_after'] = list(os.getloadavg())
            if bench.label == 'large':
                print('measuring the idle large store node for %.0f s ...' %
                      settings['idle_seconds'], flush=True)
                bench.idle()
            bench.finish()
        result['stores'] = {bench.label: bench.result for bench in benches}
        result['durable_commit_ms'] = durable_commit_floor(
            benches[-1].directory, settings['commit_samples'])
    finally:
        run.close()
    for label, store in result['stores'].items():
        store['work_directory_removed'] = not os.path.exists(store['work_directory'])
    large, small = result['stores']['large']['series'], result['stores']['small']['series']
    result['scaling'] = {
        '%s_p50_large_over_small' % name: large[name]['p50_ms'] / small[name]['p50_ms']
        for name in workload.SERIES}
    result['targets'] = report.targets(result['stores'], result['at_target_size'])
    result['machine']['load_average_end'] = list(os.getloadavg())
    result['finished_at'] = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='seconds')
    result['duration_s'] = round(
        (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(), 1)
    latest = _write_results(args, result, stamp, '')
    print()
    print(report.format_table(result))
    for label, path in profiles.items():
        print('\ncProfile of the %s store node (%s):' % (label, path))
        print(profile_summary(path))
    print('\nresults: %s' % latest)
    return 0


def _write_results(args, result, stamp, kind):
    """Write result as <stamp><suffix>.json and latest<suffix>.json; return the latter."""
    # '', '-quick', '-startup', '-startup-quick', '-peers', ...
    parts = (kind, '' if args.mode == 'full' else args.mode)
    suffix = ''.join('-' + part for part in parts if part)
    text = json.dumps(result, indent=1, ensure_ascii=False)
    (args.results_dir / ('%s%s.json' % (stamp, suffix))).write_text(text)
    latest = args.results_dir / ('latest%s.json' % suffix)
    latest.write_text(text)
    return latest


def _peers(args, result, stamp, run, bench, peer_path):
    """Finish a --peers run: start the peer, interleave both sides' calls; return 0."""
    try:
        print('starting the peer (RobotMem from %s) and seeding it with the %d memories ...' % (
            peer_path, bench.metadata['memories']), flush=True)
        peer = peers.PeerBench(run, bench.directory, bench.db_path, peer_path)
        print('measuring both sides interleaved ...', flush=True)
        result['series'] = peers.compare(run, bench, peer, args.settings, CALL_TIMEOUT_S)
        peer.close()
    finally:
        run.close()
    result['memories'] = bench.metadata['memories']
    result['peer_seeded'] = peer.seeded
    result['peer'] = {'package': 'robotmem', 'version': '0.1.3', 'path': str(peer_path),
                      'embed_backend': 'none'}
    result['machine']['load_average_end'] = list(os.getloadavg())
    latest = _write_results(args, result, stamp, 'peers')
    print()
    print(peers.format_report(result))
    print('\nresults: %s' % latest)
    return 0


def _startup_only(args, result, stamp, run, bench):
    """Finish a --startup-only run: the idle node, then the start-up report; return 0."""
    try:
        print('measuring the idle large store node for %.0f s ...' %
              args.settings['idle_seconds'], flush=True)
        bench.idle()
        status = proc_status(bench.process.pid)
        bench.result['node']['rss_after_run_bytes'] = status['VmRSS']
        bench.result['node']['rss_peak_bytes'] = status['VmHWM']
        bench.result['node']['exit_code'] = stop_process(bench.process)
    finally:
        run.close()
    result['stores'] = {'large': bench.result}
    result['machine']['load_average_end'] = list(os.getloadavg())
    latest = _write_results(args, result, stamp, 'startup')
    print()
    print(report.startup_table(result))
    print('\nresults: %s' % latest)
    return 0


if __name__ == '__main__':
    sys.exit(main())
