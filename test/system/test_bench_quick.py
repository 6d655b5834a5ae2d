# SPDX-License-Identifier: Apache-2.0
"""
The benchmark's quick mode runs end to end, so the benchmark itself cannot rot.

These tests check what the run reports and that every call got the answer
its series is about; they never judge a timing (product.md: performance is
measured by the benchmark, never by a timed test).
"""

import json
import os
import pathlib
import sqlite3
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERIES = {
    'trigger': 'ok',
    'trigger_after_turn': 'ok',
    'canned_remember': 'applied/duplicate',
    'canned_recall': 'found',
    'recall_found': 'found',
    'canned_ambiguous': 'ambiguous',
    'recall_ambiguous': 'ambiguous',
    'canned_found_full': 'found',
    'recall_found_full': 'found',
    'recall_miss': 'miss',
    'remember_created': 'applied/created',
    'remember_duplicate': 'applied/duplicate',
    'remember_rejected': 'rejected/value_not_supported',
    'console_recall': 'found',
}
LATENCY_KEYS = ('min_ms', 'p50_ms', 'p90_ms', 'p99_ms', 'max_ms')
TARGETS = {
    'recall_found_p50_vs_floor', 'recall_found_p99_vs_floor', 'recall_found_p50_large_vs_small',
    'remember_created_p50_vs_floor', 'remember_duplicate_p50_vs_floor',
    'remember_rejected_p50_vs_floor', 'resident_memory', 'start_to_ready',
    'i15_recall_found_p50_vs_canned', 'i15_recall_ambiguous_p50_vs_canned',
    'i15_remember_duplicate_p50_vs_turn_floor', 'i15_remember_rejected_p50_vs_turn_floor',
    'i15_remember_created_p50_vs_turn_floor', 'i15_throughput_recall_vs_trigger',
    'i15_start_to_advertised', 'i15_start_to_first_answer', 'i15_resident_memory',
    'i25_callback_created', 'i25_callback_duplicate', 'i25_callback_rejected', 'i25_idle_cpu',
    'i25_resident_memory_at_ready',
}
QUICK_CALLS = 12
# Seconds of each throughput phase (quick mode: 1): these tests check that
# the load clients got answers, never how many, and half a second gives
# them hundreds.
QUICK_PHASE_S = 0.5


@pytest.fixture(scope='module')
def quick_run(tmp_path_factory):
    """Run `run_bench.py --quick` once as a subprocess; return (result, stdout, directory)."""
    directory = tmp_path_factory.mktemp('bench')
    completed = subprocess.run(
        [sys.executable, str(ROOT / 'bench' / 'run_bench.py'), '--quick',
         '--calls', str(QUICK_CALLS), '--phase-seconds', str(QUICK_PHASE_S),
         '--domain', os.environ['ROS_DOMAIN_ID'],
         '--cache-dir', str(directory / 'cache'), '--results-dir', str(directory / 'results')],
        capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    result = json.loads((directory / 'results' / 'latest-quick.json').read_text())
    return result, completed.stdout, directory


@pytest.fixture(scope='module')
def stores(quick_run):
    return quick_run[0]['stores']


def test_both_stores_report_every_series(stores):
    assert set(stores) == {'small', 'large'}
    for store in stores.values():
        assert set(store['series']) == set(SERIES)


def test_every_series_has_ordered_non_negative_latencies(stores):
    for store in stores.values():
        for summary in store['series'].values():
            values = [summary[key] for key in LATENCY_KEYS]
            assert summary['n'] == QUICK_CALLS
            assert 0 <= values[0] and values == sorted(values)


def test_every_call_got_the_outcome_of_its_series(stores):
    for store in stores.values():
        for name, expected in SERIES.items():
            assert store['series'][name]['outcomes'] == {expected: QUICK_CALLS}


def test_ratios_to_the_floor_are_reported(stores):
    for store in stores.values():
        for summary in store['series'].values():
            for key in ('ratio_to_floor', 'ratio_to_turn_floor'):
                assert set(summary[key]) == {'p50', 'p99'}
                assert all(ratio > 0 for ratio in summary[key].values())
        assert store['series']['trigger']['ratio_to_floor'] == {'p50': 1.0, 'p99': 1.0}
        turn_floor = store['series']['trigger_after_turn']
        assert turn_floor['ratio_to_turn_floor'] == {'p50': 1.0, 'p99': 1.0}


def test_the_node_timed_each_remember_outcome_inside_its_callback(stores):
    for store in stores.values():
        callbacks = store['node']['remember_callback_us']
        # The canned answer is not the product's callback: timed apart, as the
        # control (an empty callback), never as one of the product's outcomes.
        assert set(callbacks) == {
            SERIES[name] for name in SERIES if name.startswith('remember')} | {
            'canned (empty callback)'}
        for timed in callbacks.values():
            # Warm-up calls are timed too: at least the measured ones.
            assert timed['n'] >= QUICK_CALLS and timed['p50_us'] > 0
            # Its own CPU time beside it, and how often the collector ran in it.
            assert timed['cpu_p50_us'] > 0 and 0.0 <= timed['with_gc'] <= 1.0


def test_every_recall_is_split_against_both_floors(stores):
    for store in stores.values():
        splits = store['recall_split_ms']
        assert set(splits) == {'recall_found', 'recall_ambiguous', 'recall_found_full'}
        for split in splits.values():
            assert set(split) == {'floor', 'message', 'producing'} and split['floor'] > 0


def test_only_the_full_series_carry_the_structured_entities(stores):
    for store in stores.values():
        breakdown = store['breakdown']
        # The same answer: the structured entities make the message larger.
        assert (breakdown['recall_found_full']['response_bytes']
                > breakdown['recall_found']['response_bytes'])
        assert breakdown['remember_retry']['core_us'] > 0


def test_throughput_clients_completed_calls_with_expected_outcomes(stores):
    for store in stores.values():
        throughput = store['throughput']
        assert throughput['clients'] >= 2
        assert throughput['trigger']['calls'] > 0
        assert throughput['recall_found']['calls'] > 0
        assert set(throughput['trigger']['outcomes']) == {'ok'}
        assert set(throughput['recall_found']['outcomes']) == {'found'}
        assert set(throughput['canned_recall']['outcomes']) == {'found'}


def test_startup_memory_and_database_size_are_reported(stores):
    for store in stores.values():
        assert store['startup']['ready_s']['median'] > 0
        assert 0 < store['startup']['advertised_s']['median'] <= store['startup']['ready_s'][
            'median']
        assert store['node']['rss_after_run_bytes'] > 0
        assert store['database']['db_bytes'] > 0


def test_the_idle_large_store_node_is_measured(quick_run):
    idle = quick_run[0]['stores']['large']['idle']
    assert idle['seconds'] > 0 and idle['cpu_seconds'] >= 0
    assert idle['cpu_share_of_one_core'] == idle['cpu_seconds'] / idle['seconds']
    assert idle['rss_before_bytes'] > 0 and idle['rss_after_bytes'] > 0
    assert 'small' not in quick_run[0]['stores'] or 'idle' not in quick_run[0]['stores']['small']
    assert 'idle node: ' in quick_run[1]


def test_generated_stores_have_the_requested_sizes(quick_run):
    settings = quick_run[0]['settings']['sizes']
    for label, store in quick_run[0]['stores'].items():
        assert store['memories'] == settings[label]['memories']
        assert store['counts']['memories'] == store['memories']
        assert store['counts']['entities'] == store['entities'] == settings[label]['entities']


def test_benchmark_writes_never_reach_the_cached_store(quick_run):
    result, _, directory = quick_run
    for store in result['stores'].values():
        cached = directory / 'cache' / (store['store_cache']['key'] + '.sqlite3')
        conn = sqlite3.connect(cached.as_uri() + '?mode=ro', uri=True)
        try:
            count = conn.execute('SELECT count(*) FROM memories').fetchone()[0]
        finally:
            conn.close()
        assert count == store['memories']


def test_every_product_target_has_a_verdict(quick_run):
    result = quick_run[0]
    assert {target['id'] for target in result['targets']} == TARGETS
    for target in result['targets']:
        assert target['verdict'] in ('pass', 'miss')
        assert target['at_target_size'] is False


def test_scaling_ratio_and_machine_are_reported(quick_run):
    result = quick_run[0]
    assert result['scaling']['recall_found_p50_large_over_small'] > 0
    assert len(result['machine']['load_average_start']) == 3
    assert len(result['machine']['load_average_end']) == 3
    assert result['machine']['cpu_count'] >= 1


def test_the_run_stopped_its_node_and_removed_its_working_copies(stores):
    for store in stores.values():
        assert store['node']['exit_code'] == 0
        assert store['work_directory_removed']
        assert not os.path.exists(store['work_directory'])


def test_the_table_is_printed(quick_run):
    stdout = quick_run[1]
    assert 'recall_found' in stdout and 'targets (product.md, then the stricter ones)' in stdout
