# SPDX-License-Identifier: Apache-2.0
"""
The one process harness: start a process, log it, wait until it is ready, stop it.

The demo, the tests and the bench all run real processes the same way:
- its stdout and stderr go to a log file (never a pipe nobody reads, which
  would block a chatty node);
- it runs in a session of its own, so a terminal's Ctrl-C reaches the
  harness, which stops its processes itself, in the order it chooses;
- ready means a line in its log or a condition the caller checks (a service
  answering); a process that exits or stays unready fails with its exit code
  and the tail of its log;
- stop sends SIGINT (or the signal asked for), then SIGTERM, then SIGKILL,
  each after a timeout without an exit, and records which one it ended on;
- every process started and not yet seen to exit is listed (still_running),
  so a caller that failed half way can still stop all of them;
- with Process.die_with_parent set (the tests set it), the kernel sends a
  process SIGTERM when the process that started it dies, however it dies:
  a harness killed with SIGKILL leaves no node running behind it.

Plain standard library, no ROS: the bench and the ROS-free tests load it too.
"""

import ctypes
import functools
import pathlib
import signal
import subprocess
import sys
import time

# A deadline against a hang, not a timing: a node stops within a second or two.
STOP_TIMEOUT_S = 15.0
# How much of a log a failure message quotes.
TAIL_CHARACTERS = 4000
# How often wait_ready looks again.
POLL_INTERVAL_S = 0.05


# prctl(2) option: the signal a process gets when its parent thread ends.
_PR_SET_PDEATHSIG = 1
_started = []  # every Process started, until it is seen to have exited


class ProcessError(RuntimeError):
    """A process exited, or stayed unready, while something waited for it."""


def still_running():
    """Return the Processes started in this process that have not exited yet."""
    _started[:] = [process for process in _started if process.process.poll() is None]
    return list(_started)


def stop_still_running(timeout=STOP_TIMEOUT_S):
    """Stop every Process that is still running; return them (a leak to report)."""
    left = still_running()
    for process in left:
        # The harness's own stop: SIGINT, SIGTERM, SIGKILL, whatever a subclass adds.
        Process.stop(process, timeout=timeout)
    return left


# Looked up once here: the child, between fork and exec, only calls them.
_libc = ctypes.CDLL(None)
_prctl = _libc.prctl if sys.platform.startswith('linux') else None


def _sigint_at_default():
    """
    Give the child SIGINT at its default action, whatever this process does with it.

    ros2 launch catches SIGINT, and exec resets a caught signal to its
    default in the child: a launched node gets SIGINT from its first
    instruction. A background job of a shell (a CI script run with `&`,
    tools/chat) inherits SIGINT ignored instead, and so would every process
    started here: a SIGINT that came before the child installed its own
    handler was lost, and its stop waited STOP_TIMEOUT_S for SIGTERM.
    libc's signal(), not Python's: this runs between fork and exec.
    """
    _libc.signal(int(signal.SIGINT), 0)  # SIG_DFL


def _tied_to_parent():
    _sigint_at_default()
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


class Process:
    """One process started by the harness, its output in log_path."""

    # The tests set it: every process they start dies with the test run
    # (PR_SET_PDEATHSIG, Linux), even when the run itself is killed.
    die_with_parent = False

    def __init__(self, argv, log_path, *, name=None, env=None, cwd=None, append=False,
                 stdin=None, stdout=None):
        """
        Start argv now; stdout and stderr go to log_path.

        name: how messages call it (argv[0]'s file name by default); env, cwd
        as for subprocess.Popen; append: add to an existing log instead of
        replacing it. stdin, stdout: subprocess.PIPE for a process that
        talks to the caller (stderr still goes to the log).
        """
        self.command = [str(part) for part in argv]
        self.name = name or pathlib.Path(self.command[0]).name
        self.log_path = pathlib.Path(log_path)
        # The signal the process ended on under stop(); None while it was not needed.
        self.stopped_by = None
        with open(self.log_path, 'a' if append else 'w') as log:
            # The child writes to its own copy of the descriptor.
            self.process = subprocess.Popen(
                self.command, stdin=stdin, stdout=log if stdout is None else stdout,
                stderr=subprocess.STDOUT if stdout is None else log, env=env, cwd=cwd,
                text=True, start_new_session=True,
                preexec_fn=_tied_to_parent if self.die_with_parent else _sigint_at_default)
        _started.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()
        return False

    @property
    def pid(self):
        """Return the process id."""
        return self.process.pid

    def poll(self):
        """Return the exit code, or None while running."""
        return self.process.poll()

    def running(self):
        """Return True while the process has not exited."""
        return self.process.poll() is None

    def output(self):
        """Return everything the process wrote to its log so far."""
        return self.log_path.read_text(errors='replace')

    def describe(self, what):
        """Return a failure message: what, the exit code, and the log's tail."""
        code = self.process.poll()
        state = 'still running' if code is None else f'exit code {code}'
        text = self.output()
        cut = ' (last %d characters)' % TAIL_CHARACTERS if len(text) > TAIL_CHARACTERS else ''
        return (f'{self.name}: {what} ({state})\n'
                f'--- {self.log_path}{cut} ---\n{text[-TAIL_CHARACTERS:]}')

    def wait(self, timeout=None):
        """Wait for the process to exit by itself; return its exit code (None on timeout)."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _log_contains(self, text):
        return text in self.output()

    def wait_ready(self, ready, *, timeout, what=None):
        """
        Wait until ready holds; ProcessError if the process exits first or timeout passes.

        ready: a text that a line of the log must contain, or a callable
        that returns True once the process is ready (a service answers).
        """
        check = ready
        if isinstance(ready, str):
            what = what or f'{ready!r} in its log'
            check = functools.partial(self._log_contains, ready)
        what = what or 'ready'
        deadline = time.monotonic() + timeout
        while not check():
            if self.process.poll() is not None:
                raise ProcessError(self.describe(f'exited before {what}'))
            if time.monotonic() > deadline:
                raise ProcessError(self.describe(f'not {what} within {timeout:g} s'))
            time.sleep(POLL_INTERVAL_S)

    def stop(self, *, first=signal.SIGINT, timeout=STOP_TIMEOUT_S):
        """
        Stop the process and return its exit code (negative: the signal that ended it).

        Sends first (SIGINT by default), then SIGTERM, then SIGKILL, each
        after timeout seconds without an exit; stopped_by records the last
        one sent (None when the process had already exited).
        """
        for sig in dict.fromkeys((first, signal.SIGTERM, signal.SIGKILL)):
            if self.process.poll() is not None:
                break
            self.stopped_by = sig
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=None if sig == signal.SIGKILL else timeout)
            except subprocess.TimeoutExpired:
                continue
        return self.process.returncode
