# SPDX-License-Identifier: Apache-2.0
"""
Power cuts through the real memory node: every acknowledged write survives a cut at any sync.

test/helpers/power_cut.py says what is cut and checked. Every run of the suite
sweeps a short workload at a sample of its cut points (every kind of cut
among them); `tools/fault_sweep` sweeps a longer one at every cut point
(MIRA_SWEEP=full) and prints the figures docs/reliability.md records.
"""

import os

from helpers import durability, faultfs, power_cut
import pytest

pytestmark = pytest.mark.ros

FULL = os.environ.get('MIRA_SWEEP') == 'full'
# Memories per node run (250: more WAL pages between two forgets than
# SQLite's automatic checkpoint waits for), and cut points checked (None:
# every one).
REMEMBERS = 250 if FULL else 20
SAMPLE = None if FULL else 150


def test_every_acknowledged_write_survives_a_power_cut_at_any_sync(ros, tmp_path):
    root = tmp_path / 'disk'
    root.mkdir()
    recording = power_cut.record(root, tmp_path)
    events = durability.Workload(ros, root, tmp_path, recording=recording).run(REMEMBERS)
    # No write escaped the recorder: replayed with nothing lost, the recording
    # is the files as they are (the -shm, rebuilt after any crash, aside).
    replayed = {path: data for path, data in recording.disk().state('keep').items()
                if data != faultfs.DIRECTORY}
    assert replayed == {str(path): path.read_bytes() for path in root.rglob('*')
                        if path.is_file() and not path.name.endswith('-shm')}
    work = tmp_path / 'sweep'
    work.mkdir()
    figures = power_cut.Sweep(recording, events, work).run(sample=SAMPLE)
    durability.report('power_cut', figures.lines())
    assert not figures.failures, '\n'.join(figures.failures[:20])
    # Every kind of cut was tried, and the checks had something to check.
    kinds = set(figures.cut_points)
    assert {'sync WAL', 'sync database', 'directory sync', 'truncate WAL', 'sync copy',
            'link', 'unlink'} <= kinds, kinds
    assert figures.acknowledged_writes_checked > 0
    assert figures.acknowledged_copies_checked > 0
    if FULL:
        assert sum(figures.cut_points.values()) >= 500
        assert figures.checkpoints['automatic checkpoint'], figures.checkpoints
