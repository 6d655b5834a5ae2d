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
import datetime
import json
import os
import pathlib
import signal
import sys

from call_costs import profile_summary
import generate
from interleaved_latency import interleaved, recall_split
from machine_readings import busy_fraction, cpu_times, durable_commit_floor, machine_info
from machine_readings import proc_status
from mira_memory.ros import launching
import peers
import report
from run_processes import BENCH_DIR, CALL_TIMEOUT_S, Run, stop_process
from store_bench import StoreBench
import workload

DEFAULT_DOMAIN_ID = 71
DEFAULT_SEED = 20260

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
