# SPDX-License-Identifier: Apache-2.0
"""
SIGKILL during writes: after a restart every acknowledged write is there.

A memory node process (memory_node, and memory_lifecycle_node configured
and activated) takes remember calls one after another. Each round sends
one more and kills the process with SIGKILL a random moment later, while
it may be waiting for the turn, admitting, committing or answering. The
node is restarted on the same file: it must show every memory whose reply
said created (durability.check_shown). At the end the file, closed, is
reopened as a restarting node does: integrity_check and memory_verify
pass, every acknowledged write is whole, and the killed calls' memories
are whole or absent (durability.check_writes).

A killed process keeps the page cache, so this is the crash a power cut
is not; test_power_cut.py cuts the power. Every suite run kills 4 times
per executable; MIRA_SWEEP=full (tools/fault_sweep) 40 times.
"""

import os
import random

from helpers import durability
import pytest

pytestmark = pytest.mark.ros

FULL = os.environ.get('MIRA_SWEEP') == 'full'
ROUNDS = 40 if FULL else 4
WRITES_PER_ROUND = 3
# The kill comes up to this many times the last acknowledged remember's round
# trip after the call is sent: before, during or after the write.
KILL_WITHIN_ROUND_TRIPS = 1.5


@pytest.mark.parametrize('executable', ['memory_node', 'memory_lifecycle_node'])
def test_sigkill_during_writes_loses_no_acknowledged_write(ros, tmp_path, executable):
    root = tmp_path / 'disk'
    root.mkdir()
    workload = durability.Workload(ros, root, tmp_path, executable=executable)
    rng = random.Random(ROUNDS)
    workload.start()
    for name in durability.SUBJECTS:
        durability.done(workload.entity(name))
    killed, shown = [], 0
    for _ in range(ROUNDS):
        for _ in range(WRITES_PER_ROUND):
            last = durability.done(workload.remember())
        round_trip = (last.acked_ns - last.sent_ns) / 1e9
        killed.append(workload.remember_and_kill(
            rng.uniform(0, KILL_WITHIN_ROUND_TRIPS * round_trip)))
        workload.start()
        checked, problems = durability.check_shown(workload)
        assert not problems, problems
        assert checked >= WRITES_PER_ROUND * len(killed)
        shown += checked
    workload.stop()

    reopened = durability.reopen(workload.database)
    assert not reopened.problems, reopened.problems
    writes = durability.check_writes(reopened, workload.events)
    assert not writes.lost and not writes.partial, writes
    durability.report(f'crash_restart_{executable}', [
        f'SIGKILLs during a remember: {len(killed)}, of which '
        f'{sum(event.acked_ns is not None for event in killed)} came after its reply',
        f'acknowledged writes shown after the restarts: {shown}; in the file at the end: '
        f'{writes.checked}; lost: {len(writes.lost)}; partial: {len(writes.partial)}'])
