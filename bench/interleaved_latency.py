# SPDX-License-Identifier: Apache-2.0
"""
The latency loop: every series of every store, call by call, shuffled, against its floors.

interleaved() makes the timed calls; recall_split() divides each recall
series' median round trip into the floor, the message and the producing.
"""

import collections
import random
import time

import report
from run_processes import CALL_TIMEOUT_S
import workload


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
