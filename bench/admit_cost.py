#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
What admit() itself costs, warm, in process: the grounding rules' share of remember.

Runs the bench's own remember shapes (workload.py: "By the way, <subject>
really likes <value>, these days.") through mira_memory.core.admission.rules.admit
on a real SQLite file, no ROS: created (grounding runs, then the durable
insert), rejected (the value was not said: refused before grounding, the
bench's remember_rejected), refused by grounding (a hedge), and the literal
checks alone. Prints the median and p90 in microseconds per outcome.

    python bench/admit_cost.py [--repeat 2000]

Run it on two checkouts (PYTHONPATH at each source tree) to compare rule
changes; the target allows remember rejected and duplicate at most 20% more.

--cold judges a new operator turn at every call (the rules keep no text
between calls, so every call reads its utterance afresh) and counts this
process's CPU time only (time.process_time), so other load on the machine
moves the figures less; it prints the best of --rounds rounds.
The figures in docs/grounding.md, "Cost", were taken this way.
"""

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.rules import admit
from mira_memory.core.store import MemoryStore

SUBJECTS = ('Ada Lovelace', 'Bob Stone', 'Carol Reed', 'Dana Scully')
VALUES = ('green tea', 'black coffee', 'quiet rooms', 'jazz', 'teal', 'sea charts')


def shapes(n):
    """Yield (outcome name, context, proposal) for the n-th round."""
    subject = SUBJECTS[n % len(SUBJECTS)]
    said = VALUES[n % len(VALUES)]
    evidence = f'{subject} really likes {said}'
    plain = f'By the way, {evidence}, these days.'
    yield 'created', TurnContext('bench', f'c{n}', plain), Proposal(
        'preference', subject, f'bench_likes_{n}', said, None, None, evidence)
    yield 'rejected_literal', TurnContext('bench', f'r{n}', plain), Proposal(
        'preference', subject, f'bench_likes_r{n}', VALUES[(n + 1) % len(VALUES)], None, None,
        evidence)
    yield 'rejected_grounding', TurnContext('bench', f'g{n}', f'Maybe {evidence}.'), Proposal(
        'preference', subject, f'bench_likes_g{n}', said, None, None, evidence)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--repeat', type=int, default=2000)
    parser.add_argument('--cold', action='store_true',
                        help='a new turn each call; CPU time, best round')
    parser.add_argument('--rounds', type=int, default=7, help='rounds of --cold')
    args = parser.parse_args(argv)
    if args.cold:
        return cold(args.repeat, args.rounds)
    timings = {}
    with tempfile.TemporaryDirectory() as directory:
        with MemoryStore.open(pathlib.Path(directory) / 'memory.sqlite3') as store:
            for subject in SUBJECTS:
                store.add_entity('person', subject)
            for n in range(args.repeat):
                for name, context, proposal in shapes(n):
                    start = time.perf_counter()
                    result = admit(store, context, proposal, 'Mira')
                    timings.setdefault(name, []).append(time.perf_counter() - start)
                    expected = 'applied' if name == 'created' else 'rejected'
                    if result.status != expected:
                        raise SystemExit(f'{name}: unexpected {result}')
    print(f'admit() warm, {args.repeat} rounds, median / p90 in us')
    for name, samples in timings.items():
        samples = sorted(samples[len(samples) // 10:])  # the first tenth warms up
        p90 = samples[int(len(samples) * 0.9)]
        print(f'  {name:20} {statistics.median(samples) * 1e6:8.1f} {p90 * 1e6:8.1f}')
    return 0


def cold(repeat, rounds):
    """Print each outcome's mean CPU time per call, the best of rounds, texts forgotten."""
    best = {}
    with tempfile.TemporaryDirectory() as directory:
        with MemoryStore.open(pathlib.Path(directory) / 'memory.sqlite3') as store:
            for subject in SUBJECTS:
                store.add_entity('person', subject)
            for round_ in range(rounds):
                totals = {}
                for n in range(repeat):
                    for name, context, proposal in shapes(n):
                        # A new turn each round: the turn's first proposal is judged.
                        context = TurnContext(context.episode_id, f'{context.turn_id}-{round_}',
                                              context.utterance)
                        start = time.process_time()
                        admit(store, context, proposal, 'Mira')
                        totals[name] = totals.get(name, 0.0) + time.process_time() - start
                for name, total in totals.items():
                    best[name] = min(best.get(name, total), total)
    print(f'admit() cold, {repeat} calls per outcome, best of {rounds} rounds, CPU us per call')
    for name, total in best.items():
        print(f'  {name:20} {total / repeat * 1e6:8.1f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
