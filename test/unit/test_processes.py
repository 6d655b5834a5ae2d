# SPDX-License-Identifier: Apache-2.0
"""The process harness (simulation/processes.py) on real child processes, no ROS."""

import os
import pathlib
import signal
import subprocess
import sys
import time

from mira_memory.simulation.processes import Process, ProcessError
import pytest

# The child says 'ready' once its signal dispositions are set, then waits.
CHILD = """
import signal, sys, time
print('starting', flush=True)
for name in sys.argv[1:]:
    signal.signal(getattr(signal, name), signal.SIG_IGN)
if 'SIGINT' not in sys.argv[1:]:
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
print('ready', flush=True)
while True:
    time.sleep(60)
"""


def child(tmp_path, *ignored):
    return Process([sys.executable, '-c', CHILD, *ignored], tmp_path / 'child.log',
                   name='child')


def test_output_goes_to_the_log_and_sigint_stops_a_process_that_handles_it(tmp_path):
    process = child(tmp_path)
    process.wait_ready('ready', timeout=60)
    assert process.running()
    assert process.stop() == 0
    assert process.stopped_by == signal.SIGINT
    assert process.output() == 'starting\nready\n'


def test_a_process_that_ignores_sigint_is_stopped_by_sigterm(tmp_path):
    process = child(tmp_path, 'SIGINT')
    process.wait_ready('ready', timeout=60)
    # It ignores SIGINT for ever, so the short timeout always runs out.
    assert process.stop(timeout=0.2) == -signal.SIGTERM
    assert process.stopped_by == signal.SIGTERM


def test_a_process_that_ignores_sigint_and_sigterm_is_killed(tmp_path):
    process = child(tmp_path, 'SIGINT', 'SIGTERM')
    process.wait_ready('ready', timeout=60)
    assert process.stop(timeout=0.2) == -signal.SIGKILL
    assert process.stopped_by == signal.SIGKILL


def test_stop_can_begin_with_another_signal(tmp_path):
    process = child(tmp_path, 'SIGINT')
    process.wait_ready('ready', timeout=60)
    assert process.stop(first=signal.SIGTERM) == -signal.SIGTERM
    assert process.stopped_by == signal.SIGTERM


def test_stopping_a_process_that_exited_sends_nothing(tmp_path):
    process = Process([sys.executable, '-c', 'raise SystemExit(3)'], tmp_path / 'exit.log')
    assert process.wait(timeout=60) == 3
    assert process.stop() == 3 and process.stopped_by is None


def test_wait_ready_fails_with_the_exit_code_and_the_log(tmp_path):
    process = Process([sys.executable, '-c', 'print("no database"); raise SystemExit(3)'],
                      tmp_path / 'early.log', name='early')
    with pytest.raises(ProcessError) as raised:
        process.wait_ready('ready', timeout=60)
    message = str(raised.value)
    assert message.startswith("early: exited before 'ready' in its log (exit code 3)")
    assert message.endswith('no database\n')


def test_wait_ready_takes_a_condition_and_fails_when_it_stays_false(tmp_path):
    process = child(tmp_path)
    try:
        process.wait_ready(lambda: 'ready' in process.output(), timeout=60, what='up')
        with pytest.raises(ProcessError, match='child: not answering within 0.1 s'):
            process.wait_ready(lambda: False, timeout=0.1, what='answering')
    finally:
        process.stop()


def test_the_log_keeps_its_last_characters_in_a_failure_message(tmp_path):
    process = Process([sys.executable, '-c', 'print("x" * 5000 + "END")'],
                      tmp_path / 'long.log', name='long')
    process.wait(timeout=60)
    message = process.describe('failed')
    assert '(last 4000 characters)' in message
    assert message.endswith('---\n' + 'x' * 3996 + 'END\n')


# A harness process: starts a long child through Process (tied to it when
# argv[2] is 'tied'), prints the child's pid, then waits to be killed.
STARTER = """
import sys, time
from mira_memory.simulation import processes
processes.Process.die_with_parent = sys.argv[2] == 'tied'
child = processes.Process([sys.executable, '-c', 'import time; time.sleep(600)'],
                          sys.argv[1], name='grandchild')
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid):
    """Return True while pid runs (a zombie left for a reaper that does not reap is not)."""
    try:
        stat = pathlib.Path(f'/proc/{pid}/stat').read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(')', 1)[1].split()[0] != 'Z'


def _signals_pending(pid):
    """Return the pending-signal masks of pid (its own and its process group's) from /proc."""
    fields = dict(line.split(':', 1) for line in
                  pathlib.Path(f'/proc/{pid}/status').read_text().splitlines())
    return int(fields['SigPnd'], 16) | int(fields['ShdPnd'], 16)


def _orphan_after_its_starter_is_killed(tmp_path, mode, wait_s):
    """
    Kill the starter, give its orphan wait_s to go; return (alive, signals pending) after.

    The kernel queues the parent-death signal while the starter exits, so
    it is pending before starter.wait() returns: from then on a tied
    orphan only needs the CPU to die, and wait_s is a bound on that.
    """
    starter = subprocess.Popen([sys.executable, '-c', STARTER, str(tmp_path / 'child.log'), mode],
                               stdout=subprocess.PIPE, text=True)
    pid = int(starter.stdout.readline())
    starter.kill()
    starter.wait()
    starter.stdout.close()
    deadline = time.monotonic() + wait_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(pid)
    pending = _signals_pending(pid) if alive else 0
    if alive:
        os.kill(pid, signal.SIGKILL)
    return alive, pending


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='PR_SET_PDEATHSIG is Linux')
def test_a_process_tied_to_its_starter_ends_when_the_starter_is_killed(tmp_path):
    # What the tests rely on (conftest.py): a killed pytest leaves no node behind.
    # A long bound: a loaded machine may leave the dying orphan unscheduled for a while.
    assert _orphan_after_its_starter_is_killed(tmp_path, 'tied', wait_s=30) == (False, 0)


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='PR_SET_PDEATHSIG is Linux')
def test_an_untied_process_outlives_its_killed_starter(tmp_path):
    # The control: without the tie the orphan runs on (so the test above can fail).
    # A tied orphan has its signal pending once the starter is reaped, so an
    # orphan alive a moment later with no signal pending was never signaled:
    # no need to wait out the tied test's long bound.
    assert _orphan_after_its_starter_is_killed(tmp_path, 'free', wait_s=1) == (True, 0)


def test_a_process_still_running_is_listed_until_stopped(tmp_path):
    from mira_memory.simulation import processes
    process = child(tmp_path)
    assert process in processes.still_running()
    # Its SIGINT handler set: a SIGINT before that can be lost (a parent that
    # ignores SIGINT, as a test worker can, passes that on), and the stop
    # then waits its whole timeout for SIGTERM.
    process.wait_ready('ready', timeout=60)
    assert process in processes.stop_still_running()
    assert process.poll() is not None and process not in processes.still_running()


# Prints what the child's Python found SIGINT set to at its start.
SIGINT_AT_START = ('import signal; '
                   'print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)')


@pytest.mark.parametrize('tied', [False, True], ids=['untied', 'tied'])
def test_a_child_gets_sigint_at_its_default_where_the_starter_ignores_it(
        tmp_path, monkeypatch, tied):
    # As a node under ros2 launch, not as a background job of a shell: a stop
    # right after the start is not lost (the stop would wait 15 s for SIGTERM).
    monkeypatch.setattr(Process, 'die_with_parent', tied)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        process = Process([sys.executable, '-c', SIGINT_AT_START], tmp_path / 'child.log')
    finally:
        signal.signal(signal.SIGINT, previous)
    assert process.wait(timeout=60) == 0
    assert process.output() == 'True\n'


def test_a_stop_right_after_the_start_is_not_lost_where_the_starter_ignores_sigint(tmp_path):
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        process = child(tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    # Sent before the child can have set its own handler.
    assert process.stop(timeout=10) in (0, 1, -signal.SIGINT)
    assert process.stopped_by == signal.SIGINT
