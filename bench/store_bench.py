# SPDX-License-Identifier: Apache-2.0
"""
One store under test: its working copy, its node process and what was measured of it.

StoreBench copies a cached store, starts the bench node on it (the
start-up samples), and measures its throughput with load client
processes, its idle CPU, its memory and database sizes, and, once the node
has stopped, the in-process cost split of its calls.
"""

import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from call_costs import cost_breakdown
from machine_readings import file_size, fsync_file, proc_status, process_cpu_seconds
from mira_memory.client import names
from mira_memory.msg import OperatorUtterance
from mira_memory.ros import launching
from mira_memory.simulation import processes
from mira_memory.srv import RecallMemory
import report
from run_processes import BENCH_DIR, CALL_TIMEOUT_S, READY_TIMEOUT_S, STOP_TIMEOUT_S
from run_processes import stop_process
import workload


def median_summary(samples):
    """Return samples with their median and maximum."""
    return {'samples': samples, 'median': statistics.median(samples), 'max': max(samples)}


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
            line = process.process.stdout.readline()
            if line.strip() != 'READY':
                raise processes.ProcessError(process.describe(
                    'a load client said %r instead of READY' % line))
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
