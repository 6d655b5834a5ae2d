# SPDX-License-Identifier: Apache-2.0
"""
SIGTERM stops managed memory nodes in their quietest state, many at once, on a loaded machine.

rclpy alone can lose a SIGTERM (ros/node_runner.py): its signal thread
wakes the executor first and shuts the context down only after, and an
executor that woke in between finds the context still valid and waits
again, for good when nothing else wakes it. An unconfigured managed node
has no timer, so nothing does. The window is short and needs load. So this
test makes its own: NODES nodes start at once and get SIGTERM in the same
instant, ROUNDS times (processes spinning on the CPU beside them did not
make the race more frequent, and pinning everything to one CPU made it
rarer). Every node must exit 0, with no traceback, and none may lose its
SIGTERM (still running after LOST_AFTER_S).

Without node_runner's SIGTERM handler about 1 node in 64 hung (measured
2026-12-05, 2 cores shared with other test runs): this test's 100 nodes
catch the handler's removal in about 4 runs of 5, and tools/mutation_check
runs it up to 4 times for that mutation. With the handler, none hung.
"""

import os
import pathlib
import signal
import time

from helpers.rosutil import NodeProcess, unique_namespace
from mira_memory.simulation import processes
import pytest

pytestmark = pytest.mark.ros

NODES = 20
ROUNDS = 5
# A node that got SIGTERM exits within a second or two with 5 test workers
# on 2 cores; a lost SIGTERM never ends. One of 100 nodes took over 10 s
# with the machine at load 23 to 33 (other test runs beside this one), so a
# node still running after STOP_WITHIN_S is given until LOST_AFTER_S: one
# that exits by then was slow (counted in the message, not a failure), one
# that does not lost its SIGTERM.
STOP_WITHIN_S = 10.0
LOST_AFTER_S = 60.0
# Deadline against a hang while NODES processes import rclpy at once under load.
START_WITHIN_S = 180.0
READY = 'managed memory node unconfigured'


def where_it_waits(node):
    """Return what the kernel says of a node's threads, and the stacks it prints on SIGUSR1."""
    proc = pathlib.Path('/proc', str(node.pid))
    lines = []
    try:
        lines += [line for line in (proc / 'status').read_text().splitlines()
                  if line.split(':')[0] in ('State', 'SigPnd', 'ShdPnd', 'SigBlk', 'SigIgn',
                                            'SigCgt', 'Threads')]
        for task in sorted((proc / 'task').iterdir()):
            state = (task / 'stat').read_text().rsplit(')', 1)[1].split()[0]
            blocked = next(line for line in (task / 'status').read_text().splitlines()
                           if line.startswith('SigBlk'))
            lines.append(f'{task.name} {(task / "comm").read_text().strip()} {state} '
                         f'{(task / "wchan").read_text()} {blocked}')
    except OSError as error:
        lines.append(f'/proc: {error}')
    before = len(node.output())
    os.kill(node.pid, signal.SIGUSR1)
    time.sleep(2.0)
    output = node.output()
    return ('\n'.join(lines) + '\nlog:\n' + output[:before][-1500:] + '\nafter SIGUSR1:\n'
            + output[before:][-4000:])


def _start_round(tmp_path, number):
    directory = tmp_path / f'round{number}'
    directory.mkdir()
    return [NodeProcess('memory_lifecycle_node', namespace=unique_namespace('term'),
                        directory=directory,
                        parameters={'enabled': True,
                                    'database_path': str(directory / f'{index}.sqlite3')})
            for index in range(NODES)]


# A lost SIGTERM still happens with the handler in place, rarely: 1 of 100
# nodes on Kilted in a clean-clone CI run (2026-12-06), 1 of 100 on Jazzy
# at load 23-33 (2026-12-05). Its cause is open (docs/reliability.md). Until
# it is found, a run of the whole suite would fail at random on it, so this
# test runs where it is asked for: tools/mutation_check sets
# MIRA_SIGTERM_LOAD_TEST=1 (it must catch the handler's removal), and so can
# anyone (MIRA_SIGTERM_LOAD_TEST=1 tools/test test/system/test_sigterm_under_load.py).
@pytest.mark.skipif(os.environ.get('MIRA_SIGTERM_LOAD_TEST') != '1',
                    reason='a lost SIGTERM still happens in about 1 of 100 nodes under load '
                    '(cause open, docs/reliability.md); run with MIRA_SIGTERM_LOAD_TEST=1')
def test_sigterm_stops_every_unconfigured_managed_node_at_once_under_load(
        tmp_path):
    hung, slow = [], []
    for number in range(ROUNDS):
        nodes = _start_round(tmp_path, number)
        try:
            for node in nodes:
                node.wait_ready(READY, timeout=START_WITHIN_S)
            # Inside their spin, waiting (the log line comes just before it).
            time.sleep(0.5)
            for node in nodes:
                os.kill(node.pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_WITHIN_S
            for node in nodes:
                # The harness's wait: None on timeout (NodeProcess.wait would fail at once).
                code = processes.Process.wait(node, max(0.0, deadline - time.monotonic()))
                if code is None:
                    code = processes.Process.wait(node, LOST_AFTER_S - STOP_WITHIN_S)
                    if code is not None:
                        slow.append(f'round {number}: {node.name} pid {node.pid}')
                    else:
                        hung.append(f'round {number}: {node.name} pid {node.pid}: '
                                    f'{where_it_waits(node)}')
                if code is not None:
                    assert code == 0 and 'Traceback' not in node.output(), node.describe('SIGTERM')
        finally:
            for node in nodes:
                if node.running():
                    node.stop(signal.SIGKILL, timeout=5.0)
    assert not hung, (f'{len(hung)} of {NODES * ROUNDS} nodes did not exit within '
                      f'{LOST_AFTER_S:g} s of SIGTERM: {hung}; {len(slow)} more took over '
                      f'{STOP_WITHIN_S:g} s: {slow}')
