# SPDX-License-Identifier: Apache-2.0
"""
The benchmark's start-up-only and peer modes run end to end on a tiny store.

Like test_bench_quick.py, these check what the runs report, never a timing.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

from mira_memory.ros import launching
import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The package's own discovery profile (config/dds/fastdds_discovery.xml).
PROFILE = ROOT / 'config' / 'dds' / 'fastdds_discovery.xml'


def run_bench(directory, *args):
    completed = subprocess.run(
        [sys.executable, str(ROOT / 'bench' / 'run_bench.py'), '--quick',
         '--domain', os.environ['ROS_DOMAIN_ID'], '--cache-dir', str(directory / 'cache'),
         '--results-dir', str(directory / 'results'), *args],
        capture_output=True, text=True, timeout=600)
    return completed


@pytest.mark.parametrize('clients_only', [False, True], ids=['every-process', 'clients-only'])
def test_startup_only_runs_with_the_dds_profile_and_measures_the_idle_node(tmp_path, clients_only):
    completed = run_bench(tmp_path, '--startup-only', '--startup-samples', '2',
                          '--dds-profile', str(PROFILE), '--idle-seconds', '1',
                          *(['--dds-profile-clients-only'] if clients_only else []))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    result = json.loads((tmp_path / 'results' / 'latest-startup-quick.json').read_text())
    store = result['stores']['large']
    assert set(result['stores']) == {'large'} and 'series' not in store
    assert len(store['startup']['ready_s']['samples']) == 2
    assert store['startup']['dds_profile'] == str(PROFILE.resolve())
    assert store['startup']['dds_profile_nodes'] is not clients_only
    assert store['idle']['seconds'] >= 1 and store['idle']['rss_after_bytes'] > 0
    assert store['node']['exit_code'] == 0
    whose = 'clients only' if clients_only else 'every process'
    assert f'start to ready (DDS profile {PROFILE.resolve()}, {whose})' in completed.stdout
    assert 'idle node: ' in completed.stdout


# What Fast DDS prints, by default on standard output, for a malformed
# ROS_DISCOVERY_SERVER (Jazzy and Kilted alike; test_console_process.py).
FAST_DDS_ERROR = "Wrong domain name passed into the server's list"


def test_a_load_clients_standard_output_carries_only_its_protocol(tmp_path):
    # The runner reads READY and the report from a load client's standard
    # output, and gives it Fast DDS's default log (no profile). Jazzy's Fast
    # DDS 2 prints its errors there: a shared-memory port error once took
    # READY's place and failed the run. Such a line goes to standard error
    # (where Kilted's Fast DDS 3 prints errors anyway).
    metadata = tmp_path / 'metadata.json'
    metadata.write_text(json.dumps({name: [] for name in (
        'found_queries', 'ambiguous_queries', 'miss_queries', 'remember_subjects')}))
    settings = {'node_prefix': '/nowhere', 'metadata_path': str(metadata), 'client_index': 0}
    env = {name: value for name, value in os.environ.items()
           if name not in launching.DDS_PROFILE_VARIABLES}
    errors = tmp_path / 'stderr.log'
    with errors.open('w') as stderr:
        client = subprocess.Popen(
            [sys.executable, str(ROOT / 'bench' / 'load_client.py'), json.dumps(settings)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
            env=dict(env, ROS_DISCOVERY_SERVER='no;such:server'))
        try:
            # It waits up to 30 s for a service that is not there.
            deadline = time.monotonic() + 25
            while FAST_DDS_ERROR not in errors.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            client.send_signal(signal.SIGTERM)
            output, _ = client.communicate(timeout=30)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
    assert FAST_DDS_ERROR in errors.read_text()
    assert output == ''


def test_a_missing_peer_is_named_with_how_to_install_it(tmp_path):
    env_path = tmp_path / 'no-peer-here'
    completed = subprocess.run(
        [sys.executable, str(ROOT / 'bench' / 'run_bench.py'), '--quick', '--peers',
         '--domain', os.environ['ROS_DOMAIN_ID'], '--cache-dir', str(tmp_path / 'cache'),
         '--results-dir', str(tmp_path / 'results')],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, MIRA_BENCH_PEER_PATH=str(env_path)))
    assert completed.returncode == 2
    assert 'pip install --no-deps --target %s robotmem==0.1.3' % env_path in completed.stdout


def _peer_installed():
    path = os.environ.get('MIRA_BENCH_PEER_PATH') or str(
        pathlib.Path.home() / '.cache' / 'mira_memory' /
        ('bench-peer-%s' % os.environ.get('ROS_DISTRO', 'jazzy')))
    return (pathlib.Path(path) / 'robotmem' / 'sdk.py').is_file()


@pytest.mark.skipif(not _peer_installed(),
                    reason='RobotMem (a bench-only dependency) is not installed for the bench; '
                           'bench/README.md says how')
def test_peers_serve_the_same_calls_on_both_sides(tmp_path):
    completed = run_bench(tmp_path, '--peers', '--calls', '5', '--warmup', '2')
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    result = json.loads((tmp_path / 'results' / 'latest-peers-quick.json').read_text())
    expected = {'trigger': 'ok', 'recall_found': 'found', 'recall_miss': 'miss',
                'remember_created': 'applied/created',
                'remember_duplicate': 'applied/duplicate'}
    for side in ('mira_memory', 'robotmem'):
        for series, outcome in expected.items():
            outcomes = result['series'][side][series]['outcomes']
            if side == 'robotmem' and series == 'recall_miss':
                # BM25 matches any shared word: a query we miss can find something there.
                assert set(outcomes) <= {'miss', 'found'} and sum(outcomes.values()) == 5
                continue
            assert outcomes == {outcome: 5}, (side, series)
    assert result['peer_seeded']['memories'] == result['memories']
    assert 'peer/ours' in completed.stdout and 'synchronous=NORMAL' in completed.stdout
