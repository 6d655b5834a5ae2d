# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Latency statistics, ratios to the floor, product target verdicts and the printed table."""

import math

import workload

PERCENTILES = (('p50', 50.0), ('p90', 90.0), ('p99', 99.0))
TARGET_STORE = 'large'


def percentile(sorted_values, q):
    """Return the q-th percentile of ascending values (linear interpolation)."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def latency_summary(samples_ns):
    """Return n, mean, min, p50, p90, p99 and max of round trips in milliseconds."""
    values = sorted(sample / 1e6 for sample in samples_ns)
    summary = {'n': len(values)}
    if not values:
        return summary
    summary['mean_ms'] = sum(values) / len(values)
    summary['min_ms'] = values[0]
    for name, q in PERCENTILES:
        summary[name + '_ms'] = percentile(values, q)
    summary['max_ms'] = values[-1]
    return summary


def add_floor_ratios(series):
    """Add p50 and p99 ratios to the floor (the Trigger series) to every series."""
    floor = series[workload.FLOOR]
    for summary in series.values():
        summary['ratio_to_floor'] = {
            name: summary[name + '_ms'] / floor[name + '_ms'] for name in ('p50', 'p99')}


def _target(identifier, description, measured, limit, unit, store_label, at_target_size):
    return {
        'id': identifier,
        'description': description,
        'store': store_label,
        'measured': measured,
        'limit': limit,
        'unit': unit,
        'verdict': 'pass' if measured is not None and measured <= limit else 'miss',
        'at_target_size': at_target_size,
    }


def targets(stores, at_target_size):
    """
    Return every product target of shared/product.md with its value and verdict.

    Every target is judged on the large store; at_target_size says whether
    that store really is 1,000,000 memories / 100,000 entities (full mode).
    """
    large = stores[TARGET_STORE]
    series = large['series']
    small_p50 = stores['small']['series']['recall_found']['p50_ms']
    rows = [
        ('recall_found_p50_vs_floor', 'recall (found) p50 <= 1.5x Trigger p50',
         series['recall_found']['ratio_to_floor']['p50'], 1.5, 'x floor'),
        ('recall_found_p99_vs_floor', 'recall (found) p99 <= 3x Trigger p99',
         series['recall_found']['ratio_to_floor']['p99'], 3.0, 'x floor'),
        ('recall_found_p50_large_vs_small',
         'recall (found) p50 at the large store <= 1.2x at the small store',
         series['recall_found']['p50_ms'] / small_p50, 1.2, 'x small'),
        ('remember_created_p50_vs_floor', 'remember (created, durable) p50 <= 4x Trigger p50',
         series['remember_created']['ratio_to_floor']['p50'], 4.0, 'x floor'),
        ('remember_duplicate_p50_vs_floor', 'remember (duplicate) p50 <= 1.5x Trigger p50',
         series['remember_duplicate']['ratio_to_floor']['p50'], 1.5, 'x floor'),
        ('remember_rejected_p50_vs_floor', 'remember (rejected) p50 <= 1.5x Trigger p50',
         series['remember_rejected']['ratio_to_floor']['p50'], 1.5, 'x floor'),
        ('resident_memory', 'memory node resident memory after the run <= 120 MB',
         large['node']['rss_after_run_bytes'] / 1e6, 120.0, 'MB'),
        ('start_to_ready', 'start to services ready (median of samples) <= 2 s',
         large['startup']['ready_s']['median'], 2.0, 's'),
    ]
    return [_target(*row, TARGET_STORE, at_target_size) for row in rows]


def _ms(value):
    return '-' if value is None else '%.3f' % value


def _breakdown_lines(breakdown):
    lines = ['  in-process split, median us   %7s %7s %7s %9s %11s %8s' % (
        'core', 'reads', 'build', 'serialize', 'deserialize', 'bytes')]
    for name, stages in breakdown.items():
        reads = stages.get('store_reads_us')
        lines.append('    %-27s %7.0f %7s %7.0f %9.0f %11.0f %8d' % (
            name, stages['core_us'], '-' if reads is None else '%.0f' % reads,
            stages['build_us'], stages['serialize_us'], stages['deserialize_us'],
            stages['response_bytes']))
    return lines


def format_table(result):
    """Return the human-readable report of one benchmark result."""
    lines = []
    machine = result['machine']
    lines.append('mira_memory benchmark (%s mode), %s, ROS 2 %s (rclpy %s, %s)' % (
        result['mode'], result['started_at'], machine['ros_distro'], machine['rclpy_version'],
        machine['rmw_implementation']))
    lines.append('machine: %s, %d cores, load average %s at start, %s at end' % (
        machine['cpu_model'], machine['cpu_count'],
        ' '.join('%.2f' % value for value in machine['load_average_start']),
        ' '.join('%.2f' % value for value in machine['load_average_end'])))
    for label, store in result['stores'].items():
        lines.append('')
        lines.append('%s store: %d memories, %d entities, %d aliases, %d links; '
                     'database %.1f MB + WAL %.1f MB; machine CPU busy %.0f%% during calls' % (
                         label, store['memories'], store['entities'], store['counts']['aliases'],
                         store['counts']['links'], store['database']['db_bytes'] / 1e6,
                         store['database']['wal_bytes'] / 1e6,
                         100 * store['system_cpu_busy_during_calls']))
        lines.append('  %-19s %6s %8s %8s %8s %8s %9s %9s  %s' % (
            'series', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'p50/floor', 'p99/floor',
            'outcomes'))
        for name, summary in store['series'].items():
            ratio = summary['ratio_to_floor']
            lines.append('  %-19s %6d %8s %8s %8s %8s %9.2f %9.2f  %s' % (
                name, summary['n'], _ms(summary['p50_ms']), _ms(summary['p90_ms']),
                _ms(summary['p99_ms']), _ms(summary['max_ms']), ratio['p50'], ratio['p99'],
                ' '.join('%s=%d' % item for item in sorted(summary['outcomes'].items()))))
        split = store['recall_found_split_ms']
        lines.append('  recall found p50 = floor %.3f ms + message (canned_recall - floor) '
                     '%.3f ms + producing it (recall_found - canned_recall) %.3f ms' % (
                         split['floor'], split['message'], split['producing']))
        throughput = store['throughput']
        lines.append('  throughput, %d client processes: recall found %.0f calls/s, '
                     'Trigger %.0f calls/s (ratio %.2f; machine CPU busy %.0f%%)' % (
                         throughput['clients'], throughput['recall_found']['calls_per_s'],
                         throughput['trigger']['calls_per_s'],
                         throughput['recall_found_over_trigger'],
                         100 * throughput['system_cpu_busy']))
        startup = store['startup']
        lines.append('  start to ready: median %.2f s (samples %s; medians: imports %.2f s, '
                     'rclpy.init %.3f s, node construction %.3f s, discovery and first call '
                     '%.3f s)' % (
                         startup['ready_s']['median'],
                         ', '.join('%.2f' % value for value in startup['ready_s']['samples']),
                         startup['imports_s']['median'], startup['rclpy_init_s']['median'],
                         startup['construct_s']['median'],
                         startup['discovery_and_first_call_s']['median']))
        node = store['node']
        lines.append('  node resident memory: %.1f MB after the run (%.1f MB at ready, '
                     'peak %.1f MB)' % (node['rss_after_run_bytes'] / 1e6,
                                        node['rss_at_ready_bytes'] / 1e6,
                                        node['rss_peak_bytes'] / 1e6))
        lines.extend(_breakdown_lines(store['breakdown']))
    lines.append('')
    scaling = result['scaling']
    lines.append('p50 large/small (measured interleaved): %s' % ', '.join(
        '%s %.2f' % (name, scaling['%s_p50_large_over_small' % name])
        for name in workload.SERIES))
    lines.append('durable one-row SQLite commit on this disk: p50 %.3f ms' % (
        result['durable_commit_ms']['p50_ms']))
    lines.append('')
    lines.append('targets (product.md), judged on the %s store%s:' % (
        TARGET_STORE, '' if result['at_target_size'] else ' (quick mode: NOT the 1M store)'))
    for target in result['targets']:
        lines.append('  %-4s %-66s %.2f %s (limit %g)' % (
            target['verdict'], target['description'], target['measured'], target['unit'],
            target['limit']))
    return '\n'.join(lines)
