# SPDX-License-Identifier: Apache-2.0
"""
SIGTERM stops managed memory nodes in their quietest state, many at once, on a loaded machine.

An unconfigured managed node has no timer: its main thread waits inside
rcl, and only node_runner's StopSignalWakeup ends that wait; then the main
thread alone destroys the node and shuts rclpy down, within node_runner's
deadline, and the process ends without the interpreter's teardown
(ros/node_runner.py says what each of these prevents). The races they close
need load, so this test makes its own: NODES nodes start at once and get
SIGTERM in the same instant, ROUNDS times. Every node must exit 0 with no
traceback, or be cut at node_runner's cleanup deadline (exit 1, every
thread's stack in its log; counted and printed); none may lose its SIGTERM
(still running after LOST_AFTER_S). A node that does is described by the
kernel (/proc: its state, its threads and where they wait, its signal
masks) and by the stacks it prints on SIGUSR1.
"""

import datetime
import os
import pathlib
import signal
import time

from helpers.rosutil import NodeProcess, unique_namespace
from mira_memory.ros import node_runner
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
# What faulthandler prints when node_runner cuts a cleanup at its deadline.
CUT_AT_DEADLINE = f'Timeout ({datetime.timedelta(seconds=node_runner.SHUTDOWN_DEADLINE_SEC)})!'


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


# 100 nodes started at once take a minute or more of both cores: a load
# test, run where it is asked for (MIRA_SIGTERM_LOAD_TEST=1, as
# docs/reliability.md says), not in every suite run.
@pytest.mark.skipif(os.environ.get('MIRA_SIGTERM_LOAD_TEST') != '1',
                    reason='a load test of 100 nodes at once (docs/reliability.md); '
                    'run with MIRA_SIGTERM_LOAD_TEST=1')
def test_sigterm_stops_every_unconfigured_managed_node_at_once_under_load(
        tmp_path):
    hung, slow, cut = [], [], []
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
                if code == 1 and CUT_AT_DEADLINE in node.output():
                    # Bounded, with every thread's stack in its log (node_runner._shut_down).
                    cut.append(f'round {number}: {node.name} pid {node.pid}:\n'
                               f'{node.output()[-3000:]}')
                elif code is not None:
                    assert code == 0 and 'Traceback' not in node.output(), node.describe('SIGTERM')
        finally:
            for node in nodes:
                if node.running():
                    node.stop(signal.SIGKILL, timeout=5.0)
    assert not hung, (f'{len(hung)} of {NODES * ROUNDS} nodes did not exit within '
                      f'{LOST_AFTER_S:g} s of SIGTERM: {hung}; {len(slow)} more took over '
                      f'{STOP_WITHIN_S:g} s: {slow}; {len(cut)} cleanups cut at the deadline: '
                      f'{cut}')
    print(f'{NODES * ROUNDS} nodes: {len(slow)} took over {STOP_WITHIN_S:g} s, '
          f'{len(cut)} cleanups cut at the deadline {cut}')
