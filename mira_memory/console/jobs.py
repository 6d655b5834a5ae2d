# SPDX-License-Identifier: Apache-2.0
"""
The console's long jobs: backup, export and verify as goals of the memory node's actions.

run_goal() sends one goal to the memory node's action (the session's
MemoryClient owns its client), draws its feedback
(console/progress.py: a bar on a terminal, one line per 10% otherwise, on
stderr so that stdout keeps the result) and waits for the result with no
fixed limit: as long as the node's action server is there and the job
runs. Ctrl-C cancels the goal and prints what the node says was left
behind; with --no-wait it prints the goal id and returns once the node
accepted the goal. `memory jobs` asks the node's admin/jobs service which
job runs (job_lines() prints it): an answer, where the actions' status
topics would need a wait for their transient-local message.
"""

import contextlib
import signal
import threading
import time

from action_msgs.msg import GoalStatus
from mira_memory.client import names
from mira_memory.client.jobs import (cancel_before_acceptance, cancel_until_ended,
                                     CANCEL_WAIT_SEC, goal_id_text, GoalSending, JobError,
                                     SERVER_GONE_SEC)
from mira_memory.console.progress import ProgressDisplay, UNITS
from mira_memory.console.visible import visible
from mira_memory.core.archive.progress import Progress

# Exit code of a job canceled with Ctrl-C (a shell's for SIGINT).
EXIT_CANCELED = 130


class _Interrupts:
    """
    Ctrl-C while a job runs, counted as well as raised.

    Until the goal is sent, the first SIGINT of a job raises
    KeyboardInterrupt wherever the main thread is: nothing on the node
    needs canceling yet. From the send on (held()), every SIGINT is only
    counted, and the job's waits raise it between two spins of the
    executor (raise_pending), where the cancel expects it. Raised where it
    lands, it could leave the goal sent with nobody to cancel it (inside
    the send), escape the code that reports the cancel (between its
    "canceling" line and its wait), or land inside rclpy's executor while
    it takes a message of the job's action client: rclpy puts an entity
    back into its waits only after a take that returns, so the client
    would hear nothing more, not even the answer to its cancel. A first
    one raised inside a finalizer before the send (rclpy's Task.__del__
    runs after every callback) is dropped by Python; the waits raise it
    again the same way. Whoever catches one marks it seen.
    """

    def __init__(self):
        self.count = 0
        self.seen = 0
        self.before_job = 0
        self.holding = False

    @contextlib.contextmanager
    def counting(self):
        """Count SIGINTs inside the block; the first raises KeyboardInterrupt at once."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self.seen = self.before_job = self.count
        previous = signal.signal(signal.SIGINT, self._handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _handler(self, signum, frame):
        self.count += 1
        if self.count == self.before_job + 1 and not self.holding:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self):
        """Count every Ctrl-C inside the block without raising it (raise_pending does)."""
        self.holding = True
        try:
            yield
        finally:
            self.holding = False

    def mark_seen(self):
        self.seen = self.count

    def raise_pending(self):
        """Raise KeyboardInterrupt for a Ctrl-C not raised yet or dropped (once)."""
        if self.count > self.seen:
            self.seen = self.count
            raise KeyboardInterrupt


_interrupts = _Interrupts()


def run_command(session, command, goal, stdout, stderr, print_result):
    """
    Run a job command (backup, export, verify); return the exit code.

    session is the console's Session; print_result(command, result, stdout,
    stderr) prints a job's result as the console prints every response.
    The console's --timeout covers finding the node and its accepting the
    goal; the job itself may take as long as it takes.
    """
    deadline = time.monotonic() + session.settings.timeout
    node = session.settings.memory_node
    try:
        name = command.words[0]
        status, result = run_goal(session, node, name, goal, no_wait=command.no_wait,
                                  stderr=stderr, deadline=deadline)
    except JobError as error:
        print(visible(f'error: {error}'), file=stderr)
        return 1
    except JobCanceled as canceled:
        print(visible(canceled), file=stderr)
        return EXIT_CANCELED
    if status is None:
        print(f'{name} started: goal {result} (memory jobs shows its progress)', file=stdout)
        return 0
    return print_result(command, result, stdout, stderr)


def run_goal(session, node, name, goal, *, no_wait, stderr, deadline):
    """
    Send goal to node's action name (backup, export or verify); return (status, result).

    With no_wait, return (None, goal id text) once the goal is accepted.
    Raises JobError when no node answers by deadline or the node goes away;
    KeyboardInterrupt during the job cancels it and raises JobCanceled.
    """
    with _interrupts.counting():
        return _run_goal(session, node, name, goal, no_wait=no_wait, stderr=stderr,
                         deadline=deadline)


def _run_goal(session, node, name, goal, *, no_wait, stderr, deadline):
    action = names.action_name(node, name)
    # A goal is a write: the node must have discovered this console first.
    client = session.goal_client(name, deadline)
    if not client.wait_for_server(timeout_sec=max(deadline - time.monotonic(), 0.0)):
        raise JobError(f'no memory node offers the {name} action at {action}')
    display = ProgressDisplay(stderr, name)
    # The goal goes with the console's own id: a Ctrl-C before its
    # acceptance can cancel it, and a repeat can ask whether the node has it.
    sending = GoalSending(client, goal, lambda message: _show(display, message.feedback))
    # From the send on, a Ctrl-C is raised by the waits only (_Interrupts).
    with _interrupts.held():
        sending.send()
        return _follow(session, client, sending, display, name, no_wait=no_wait, stderr=stderr,
                       deadline=deadline)


def _follow(session, client, sending, display, name, *, no_wait, stderr, deadline):
    """Wait for the sent goal's acceptance and result; on Ctrl-C, cancel it."""
    try:
        _interrupts.raise_pending()
        _spin_until(session, sending.poll, deadline,
                    f'no answer from the node to the {name} goal: the {name} may have '
                    'started on the node (memory jobs shows it)')
        handle = _accepted(sending, name)
        if no_wait:
            return None, goal_id_text(handle.goal_id)
        result = handle.get_result_async()
        _wait_for_result(session, client, result, name)
        if result.result().status == GoalStatus.STATUS_UNKNOWN:
            raise JobError(f'the memory node rejected the {name} goal')
        if result.result().status == GoalStatus.STATUS_SUCCEEDED:
            display.finish()
    except KeyboardInterrupt:
        _interrupts.mark_seen()
        display.close()
        print(f'canceling the {name} (goal {goal_id_text(sending.goal_id)}) ...',
              file=stderr, flush=True)
        try:
            handle = cancel_before_acceptance(sending, lambda: _spin_once(session),
                                              time.monotonic() + CANCEL_WAIT_SEC)
        except (JobError, KeyboardInterrupt) as error:
            given_up = _gave_up(error, name, 'may have started', stderr)
            raise JobCanceled(name, '', given_up) from None
        if handle is None:
            raise
        raise JobCanceled(name, goal_id_text(sending.goal_id),
                          _cancel(session, handle, handle.get_result_async(), name,
                                  stderr)) from None
    finally:
        display.close()
    answer = result.result()
    return answer.status, answer.result


def _accepted(sending, name):
    handle = sending.handle()
    if handle is None:
        raise JobError(f'the memory node rejected the {name} goal')
    return handle


class JobCanceled(Exception):
    """Ctrl-C canceled the goal; message says what the node left behind."""

    def __init__(self, name, goal_id, message):
        super().__init__(message)
        self.name = name
        self.goal_id = goal_id


def _show(display, feedback):
    display.update(Progress(feedback.phase, feedback.items_done, feedback.items_total,
                            feedback.bytes_written),
                   feedback.elapsed_sec,
                   feedback.remaining_sec if feedback.remaining_sec >= 0 else None)


def _spin_until(session, condition, deadline, failure):
    while not condition():
        if time.monotonic() > deadline:
            raise JobError(failure)
        _spin_once(session)


def _spin_once(session, timeout_sec=0.1):
    """Spin the console's executor once; a Ctrl-C before or during it is raised after it."""
    _interrupts.raise_pending()
    session.executor.spin_once(timeout_sec=timeout_sec)
    _interrupts.raise_pending()


def _wait_for_result(session, client, result, name):
    """Spin until the result arrives, as long as the action server stays in sight."""
    gone_since = None
    while not result.done():
        _spin_once(session, timeout_sec=0.2)
        if client.server_is_ready():
            gone_since = None
        elif gone_since is None:
            gone_since = time.monotonic()
        elif time.monotonic() - gone_since > SERVER_GONE_SEC:
            raise JobError(f'the memory node went away while the {name} ran '
                           f'(no {name} action for {SERVER_GONE_SEC:.0f} s); '
                           'whatever it had written was not put in place')


def _gave_up(error, name, running, stderr):
    """Return the line of a cancel given up (a second Ctrl-C, or no answer in time)."""
    if isinstance(error, KeyboardInterrupt):
        _interrupts.mark_seen()
        print(file=stderr)  # past the terminal's ^C
    reason = 'interrupted again' if isinstance(error, KeyboardInterrupt) else str(error)
    return f'{reason}: the {name} {running} on the node (memory jobs shows it)'


def _cancel(session, handle, result, name, stderr):
    """Cancel the goal and return what the node says was left behind (one line)."""
    try:
        cancel_until_ended(handle, result, lambda: _spin_once(session),
                           time.monotonic() + CANCEL_WAIT_SEC)
    except (JobError, KeyboardInterrupt) as error:
        return _gave_up(error, name, 'may still be running', stderr)
    answer = result.result()
    if answer.status == GoalStatus.STATUS_SUCCEEDED:
        return f'the {name} had already finished: {answer.result.message}'
    return answer.result.message


def job_lines(response):
    """Return the lines of `memory jobs` from an AdminJobs response."""
    if not response.running:
        return [response.message]
    progress = _feedback_line(response) if response.phase else 'no progress reported yet'
    return [response.message, '  ' + progress]


def _feedback_line(feedback):
    progress = Progress(feedback.phase, feedback.items_done, feedback.items_total,
                        feedback.bytes_written)
    text = (f'{progress.fraction:.0%}: {feedback.phase} {feedback.items_done} of '
            f'{feedback.items_total} {UNITS.get(feedback.phase, "items")}')
    if feedback.bytes_written:
        text += f', {feedback.bytes_written / 1e6:.1f} MB written'
    text += f', {feedback.elapsed_sec:.1f} s elapsed'
    if feedback.remaining_sec >= 0:
        text += f', about {feedback.remaining_sec:.1f} s left'
    return text
