# SPDX-License-Identifier: Apache-2.0
"""
Cuts under load with replication on: the replica holds a prefix of what was acknowledged.

The power-cut sweep (test_power_cut.py) records the node's file operations
through an LD_PRELOAD library and replays them to each cut point. Litestream
is a Go program: its system calls do not go through libc, so it cannot be
recorded that way. Here a cut is SIGKILL of Litestream and then, a random
few milliseconds later with a remember in flight, of the node, at a random
moment of a remember load; neither gets to sync once more. After each cut
the replica is restored onto a new path and must hold a prefix of the
acknowledged writes: every write up to some point there, whole, under its
own id, none after it, nothing no call made. The node is then started again
on its database (Litestream carries on from its own files) for the next cut.

MIRA_CUT_SEED=N repeats a run's random choices (the seed is in every message).
"""

import os
import random
import signal
import time

from helpers import durability
from helpers.replication import in_sync, litestream_pid, replica_files, ReplicatedWorkload
from helpers.replication import restore, wait_for_hits
import pytest

pytestmark = pytest.mark.ros

CUTS = 3
LOAD_SEC = (0.5, 2.5)
KILL_AFTER_SEC = (0.0, 0.05)


@pytest.fixture
def workload(ros, tmp_path):
    made = ReplicatedWorkload(ros, tmp_path / 'robot', tmp_path,
                              replication={'replica_url': (tmp_path / 'replica').as_uri()})
    yield made
    if made.node is not None and made.node.poll() is None:
        made.stop(signal.SIGKILL)


def prefix_problems(reopened, events, cut_ns):
    """Return why what a restored replica holds is not a prefix of the acknowledged writes."""
    held = set(reopened.memories)
    writes = durability.check_writes(reopened, events, before_ns=cut_ns)
    problems = list(reopened.problems) + writes.partial
    # A memory held under its id with other contents is a lost line for that id.
    problems += [line for line in writes.lost if not line.startswith('MEM')
                 or int(line.split()[0][3:]) in held]
    acked = [event.detail['memory_id'] for event in events
             if event.kind == 'remember' and event.acked_ns is not None]
    present = [memory_id in held for memory_id in acked]
    if present != sorted(present, reverse=True):
        problems.append('not a prefix: held ' + ''.join('x' if here else '.' for here in present))
    return problems, present.count(True), len(acked)


def test_the_replica_holds_a_prefix_of_the_acknowledged_writes_at_every_cut(
        workload, tmp_path):
    seed = int(os.environ.get('MIRA_CUT_SEED', time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    replica_url = (tmp_path / 'replica').as_uri()
    workload.start_with_subjects()
    # The entities reach the replica before the first cut: the prefix is of memories.
    # "in sync" alone can come from Litestream's first snapshot, before it has
    # looked at the WAL again: wait until the replica's bytes hold the names.
    workload.status(in_sync)
    wait_for_hits(lambda: replica_files(tmp_path / 'replica'), durability.SUBJECTS)
    lines = []
    for cut in range(CUTS):
        if cut:
            workload.start()
        deadline = time.monotonic() + rng.uniform(*LOAD_SEC)
        while time.monotonic() < deadline:
            durability.done(workload.remember())
        child = litestream_pid(workload.node.process.pid)
        assert child is not None, f'seed {seed}: no litestream child'
        os.kill(child, signal.SIGKILL)
        workload.remember_and_kill(rng.uniform(*KILL_AFTER_SEC))
        cut_ns = time.monotonic_ns()

        restored = tmp_path / f'cut-{cut}.sqlite3'
        done = restore(replica_url, restored)
        assert done.returncode == 0, (seed, cut, done.stderr)
        reopened = durability.reopen(restored)
        problems, held, acked = prefix_problems(reopened, workload.events, cut_ns)
        assert problems == [], (f'seed {seed}, cut {cut}', problems)
        lines.append(f'cut {cut}: the replica held the first {held} of {acked} '
                     'acknowledged memories')
    durability.report('replication_cuts', [f'seed {seed}'] + lines)
