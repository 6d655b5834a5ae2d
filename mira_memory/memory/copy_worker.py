# SPDX-License-Identifier: Apache-2.0
"""
One long job (backup, export, verify) at a time on a thread of its own, awaited by a coroutine.

The memory node spins a single-threaded executor. A copy of a 1M-memory
store takes seconds to minutes, so it runs on a worker thread with its own
read-only connection (core.archive.copies: one read transaction, which in
WAL mode neither blocks nor is blocked by the node's writer), while the
action's execute coroutine awaits an rclpy Future and the executor serves
every other request.

Waking the executor: an rclpy Future is polled by the executor only when
the executor wakes up, and completing it from a foreign thread wakes
nothing (an earlier version hung there). The worker therefore triggers a
guard condition (rcl's trigger is thread-safe); its callback runs on the
executor thread and completes the Future there. The guard condition and the
actions share a ReentrantCallbackGroup, so the guard condition can run
while the execute coroutine that waits for it still holds its group.

cancel() asks the running job to stop and returns at once (the coroutine
then gets the job's CopyStoppedError); stop() also waits for the thread,
for deactivate, cleanup, shutdown and the node's destroy.

A cancel and the end of a job can cross. The job has one commit point: a
backup or export just before its file is put in place (copies' may_publish),
any job when its work returns. Under one lock, a stop that comes before that
point wins (nothing is written, the goal ends CANCELED) and a cancel that
comes after it is refused (cancel() returns False, the goal ends SUCCEEDED):
an accepted cancel always means nothing was written.
"""

import threading

from mira_memory.core.archive.copies import CopyStoppedError
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future


class CopyWorker:
    """Runs at most one long job at a time off the executor thread."""

    def __init__(self, node):
        self.callback_group = ReentrantCallbackGroup()
        self._job = None
        # Why the node stopped the last job (stop()), for its goal's result.
        self.stopped_because = ''
        self._finished = node.create_guard_condition(
            self._complete_on_executor, callback_group=self.callback_group)

    @property
    def busy(self):
        """Return True while a job runs (set and read on the executor thread)."""
        return self._job is not None

    @property
    def running(self):
        """Return the running job (its name, goal id and meter), or None."""
        return self._job

    async def run(self, name, goal_id, meter, work, *args, **kwargs):
        """
        Run work(*args, should_stop=..., progress=meter.report, **kwargs) on a thread.

        Return its result; work's exception is raised here. Awaited on the
        executor thread, only while no job runs (check busy first).
        """
        if self._job is not None:
            raise RuntimeError('a long job is already running')  # callers check busy first
        job = _Job(name, goal_id, meter, work, args, kwargs, self._finished)
        self._job = job  # before the thread starts: its may_publish() asks for it
        try:
            job.thread.start()
        except Exception:
            self._job = None  # it never ran (no thread to be had)
            raise
        try:
            await job.done
        except BaseException:
            # Not the job's end: rclpy steps a waiting coroutine on every
            # wake of the executor, so a stop signal's KeyboardInterrupt
            # (ros/node_runner.py) can be raised right here. The job is asked
            # to stop and stays the running one: stop() (the node's
            # release_resources) waits for it. Waiting here would block the
            # executor on a job nobody had asked to stop, with the stop
            # signal spent: the node then ignored it.
            job.abandoned = True
            job.request_stop()
            raise
        # done completes only after the thread stored its outcome, or in
        # stop() after the join: the join is immediate.
        job.thread.join()
        self._job = None
        return job.outcome()

    def cancel(self, goal_id):
        """
        Ask the job of goal_id to stop; return at once, True when the stop will count.

        False when goal_id's job is not running or has passed its commit
        point: its goal is about to succeed, nothing can take that back.
        """
        job = self._job
        return job is not None and job.goal_id == goal_id and job.request_stop()

    def may_publish(self):
        """
        Pass the running job's commit point: True unless a stop came first (then False).

        Called on the job's thread by a backup or export just before its file
        is put in place (copies' may_publish); no cancel counts after it.
        """
        return self._job.commit()

    def stop(self, because='the memory node stopped'):
        """
        Ask a running job to end early and wait for its thread; on the executor thread.

        because says why, in the stopped goal's result.

        After spinning stopped (a node's destroy) nobody waits for the
        answer. A managed node also stops a job while it still spins
        (deactivate, cleanup, shutdown): completing the job's future here
        lets the execute coroutine answer its goal with the job's
        CopyStoppedError.
        """
        job = self._job
        if job is not None:
            self.stopped_because = because
            job.request_stop()
            job.thread.join()
            if not job.done.done():
                job.done.set_result(None)

    def _complete_on_executor(self):
        job = self._job
        if job is not None and job.ended.is_set():
            if job.abandoned:
                self._job = None  # nobody awaits it any more (run())
            elif not job.done.done():
                job.done.set_result(None)


class _Job:

    def __init__(self, name, goal_id, meter, work, args, kwargs, finished):
        self.name = name
        self.goal_id = goal_id
        self.meter = meter
        self.done = Future()
        self.stop = threading.Event()
        self.ended = threading.Event()
        # Orders a stop against the commit point (the module's docstring).
        self._commit_lock = threading.Lock()
        self._committed = False
        self._result = self._error = None
        self._finished = finished
        # True once the coroutine that awaited done has ended without it (run()).
        self.abandoned = False
        self.thread = threading.Thread(
            target=self._run, args=(work, args, kwargs), name=f'memory-{name}')

    def request_stop(self):
        """Stop the job unless it has passed its commit point; return whether it will stop."""
        with self._commit_lock:
            if not self._committed:
                self.stop.set()
            return not self._committed

    def commit(self):
        """Pass the commit point unless a stop came first; return whether it passed."""
        with self._commit_lock:
            if not self.stop.is_set():
                self._committed = True
            return self._committed

    def _run(self, work, args, kwargs):
        try:
            result = work(*args, should_stop=self.stop.is_set,
                          progress=self.meter.report, **kwargs)
            # A job that writes passed its commit point already; any other
            # (verify) passes it here, or its result is dropped for the stop.
            if not self.commit():
                raise CopyStoppedError(f'{self.name} stopped; its result was dropped')
            self._result = result
        except Exception as error:  # raised to the awaiting coroutine by outcome()
            self._error = error
        self.ended.set()
        try:
            # Also after a cancel: the execute coroutine waits for this.
            self._finished.trigger()
        except Exception:
            # After a SIGINT/SIGTERM the context is shut down and the trigger
            # fails; stop() waits for this thread and completes done itself.
            if not self.stop.is_set():
                raise

    def outcome(self):
        if self._error is not None:
            raise self._error
        return self._result
