# SPDX-License-Identifier: Apache-2.0
"""
`tools/bench --peers`: the same recall and remember calls against mira_memory and RobotMem.

Both serve the same RecallMemory/Remember request shapes over ROS from
their own process (ours: bench_node.py; RobotMem's SDK: peer_node.py, both
under rclpy.spin), on the same 10,000 memories (the peer learns our store's
summaries first), and the calls are interleaved in one shuffled loop with
each side's own empty Trigger floor, so machine noise lands on both alike.
RobotMem is a bench-only dependency, installed by hand into its own
directory (bench/README.md); the bench never installs it.
"""

import collections
import json
import os
import pathlib
import random
import sys
import time

from mira_memory.client import names
import report
import workload

# The series both sides serve; remember's turn (ours only checks it) and
# the pause before the call are the same for both.
SERIES = ('trigger', 'recall_found', 'recall_miss', 'remember_created', 'remember_duplicate')
PEER_READY_TIMEOUT_S = 600.0
# What RobotMem 0.1.3 does differently, read from its source (sdk.py,
# db_cog.py, dedup.py, ops/memories.py); printed beside the figures.
DIFFERENCES = (
    'RobotMem 0.1.3 (offline, embed_backend=none) differs from mira_memory in what an answer '
    'means:',
    '  durability: WAL with synchronous=NORMAL (db_cog.py): a commit is acknowledged before '
    'it is fsynced, so the last answers before a power loss can be lost; ours is '
    'synchronous=FULL, fsynced before the answer;',
    '  grounding: learn() stores any free-text insight; there is no operator turn, no '
    'utterance/evidence check, no subject, slot or conflict rule, so nothing is ever '
    'rejected (our rejected series has no peer counterpart);',
    '  duplicates: exact text, then Jaccard token similarity >= 0.7 against FTS5 candidates '
    '(dedup.py); ours: the same slot and value, or a retry of the same turn;',
    '  recall: BM25 full-text search over all memories, top 5 (no exact-name resolution, no '
    'ambiguity answer); ours: exact normalized names and aliases, newest memories per entity.',
)


def peer_path(distro):
    """Return the directory RobotMem is installed into for the bench (MIRA_BENCH_PEER_PATH)."""
    configured = os.environ.get('MIRA_BENCH_PEER_PATH')
    if configured:
        return pathlib.Path(configured)
    return pathlib.Path.home() / '.cache' / 'mira_memory' / ('bench-peer-%s' % distro)


def install_hint(path):
    """Return how to install the peer by hand (the bench never does)."""
    return ('RobotMem is not installed for the bench: install it (a bench-only dependency, '
            "never the product's) with\n  python -m pip install --no-deps --target %s "
            'robotmem==0.1.3\n(its offline path imports only pydantic, which the venv has; '
            'mcp, sqlite-vec and fastembed are not needed offline)' % path)


class PeerBench:
    """The peer's node process and its clients."""

    def __init__(self, run, directory, seed_from, path):
        self.run = run
        self.directory = directory
        self.namespace = '/mira_bench_%d_peer' % os.getpid()
        self.log = directory / 'peer_node.log'
        env = dict(os.environ, MIRA_BENCH_PEER_PATH=str(path),
                   ROS_LOG_DIR=str(directory / 'ros_log'))
        started = time.monotonic()
        self.process = run.spawn(
            [sys.executable, str(pathlib.Path(__file__).parent / 'peer_node.py'),
             str(directory / 'robotmem.db'), '--seed-from', str(seed_from),
             '--ros-args', '-r', '__ns:=' + self.namespace], self.log, env=env)
        services = workload.service_names(names.memory_node_name(self.namespace))
        self.clients = {kind: run.node.create_client(workload.SERVICE_TYPES[kind], services[kind])
                        for kind in ('trigger', 'recall', 'remember')}
        self.seeded = self._wait_ready(started)

    def _wait_ready(self, started):
        deadline = started + PEER_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(self.process.describe('the peer node exited'))
            text = self.log.read_text() if self.log.exists() else ''
            if 'PEER_READY' in text and all(
                    client.service_is_ready() for client in self.clients.values()):
                for line in text.splitlines():
                    if line.startswith('PEER_SEEDED '):
                        return json.loads(line.split(' ', 1)[1])
                return None
            time.sleep(0.05)
        raise RuntimeError('the peer node did not get ready')

    def close(self):
        for client in self.clients.values():
            self.run.node.destroy_client(client)


def compare(run, ours, peer, settings, call_timeout_s):
    """
    Interleave every series on both sides; return {'mira_memory': ..., 'robotmem': ...}.

    ours is the started StoreBench of the 10,000-memory store.
    """
    executor = run.executor
    loads = {'mira_memory': workload.Workload(ours.metadata),
             'robotmem': workload.Workload(ours.metadata)}
    clients = {'mira_memory': ours.clients, 'robotmem': peer.clients}
    pairs = [(side, series) for side in loads for series in SERIES]
    samples = {pair: [] for pair in pairs}
    outcomes = {pair: collections.Counter() for pair in pairs}

    def call(side, series, n, measured):
        request = loads[side].request(series, n)
        if series.startswith('remember'):
            if side == 'mira_memory':
                ours.say(loads[side].turn_before(series, n, request))
            if settings['turn_lead_s']:
                time.sleep(settings['turn_lead_s'])
        elapsed, response = workload.call_series(
            series, executor, clients[side][workload.service_kind(series)], request,
            call_timeout_s)
        if not measured:
            return
        if response is None:
            outcomes[side, series]['timeout'] += 1
            return
        samples[side, series].append(elapsed)
        outcomes[side, series][workload.outcome(series, response)] += 1

    for side, series in pairs:
        for n in range(settings['warmup']):
            call(side, series, n, measured=False)
    order = list(pairs)
    shuffler = random.Random(settings['seed'])
    for iteration in range(settings['calls']):
        shuffler.shuffle(order)
        for side, series in order:
            call(side, series, settings['warmup'] + iteration, measured=True)
    result = {}
    for side in loads:
        result[side] = {}
        for series in SERIES:
            summary = report.latency_summary(samples[side, series])
            summary['outcomes'] = dict(outcomes[side, series])
            result[side][series] = summary
    return result


def format_report(result):
    """Return the text of a --peers run."""
    series = result['series']
    lines = [report.machine_line(result['machine'], result['machine']['load_average_end']) +
             ' (load at the end)',
             "peers: %d memories on each side (RobotMem learned our store's %d summaries in "
             "%.1f s); p50 ms, ratio to the side's own Trigger floor, and RobotMem / ours" % (
                 result['memories'], result['peer_seeded']['memories'],
                 result['peer_seeded']['seconds']),
             '  %-19s %10s %7s %10s %7s %9s  %s' % (
                 'series', 'ours p50', '/floor', 'peer p50', '/floor', 'peer/ours',
                 'outcomes (ours | peer)')]
    ours, peer = series['mira_memory'], series['robotmem']
    for name in SERIES:
        lines.append('  %-19s %10.3f %7.2f %10.3f %7.2f %9.2f  %s | %s' % (
            name, ours[name]['p50_ms'], ours[name]['p50_ms'] / ours['trigger']['p50_ms'],
            peer[name]['p50_ms'], peer[name]['p50_ms'] / peer['trigger']['p50_ms'],
            peer[name]['p50_ms'] / ours[name]['p50_ms'],
            ' '.join('%s=%d' % item for item in sorted(ours[name]['outcomes'].items())),
            ' '.join('%s=%d' % item for item in sorted(peer[name]['outcomes'].items()))))
    lines.extend(DIFFERENCES)
    return '\n'.join(lines)
