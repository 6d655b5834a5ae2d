# SPDX-License-Identifier: Apache-2.0
"""
One backup, export or verify at a time on a thread of its own, awaited by a service coroutine.

The memory node spins a single-threaded executor. A copy of a 1M-memory
store takes seconds, so it runs on a worker thread with its own read-only
connection (core.archive.copies: one read transaction, which in WAL mode neither
blocks nor is blocked by the node's writer), while the admin service's
coroutine awaits an rclpy Future and the executor serves every other request.

Waking the executor: an rclpy Future is polled by the executor only when
the executor wakes up, and completing it from a foreign thread wakes
nothing (an earlier version hung there). The worker therefore triggers a
guard condition (rcl's trigger is thread-safe); its callback runs on the
executor thread and completes the Future there. The guard condition and the
copy services share a ReentrantCallbackGroup, so the guard condition can run
while the service coroutine that waits for it still holds its group.
"""

import threading

from mira_memory.core.errors import BusyError
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future


class CopyWorker:
    """Runs at most one copy at a time off the executor thread."""

    def __init__(self, node):
        self.callback_group = ReentrantCallbackGroup()
        self._job = None
        self._finished = node.create_guard_condition(
            self._complete_on_executor, callback_group=self.callback_group)

    @property
    def busy(self):
        """Return True while a copy runs (set and read on the executor thread)."""
        return self._job is not None

    async def run(self, work, *args, **kwargs):
        """
        Run work(*args, should_stop=..., **kwargs) on a thread; return its result.

        Awaited by a service coroutine on the executor thread. work's
        exception is raised here. BusyError when a copy already runs.
        """
        if self._job is not None:
            raise BusyError(
                'another backup, export or verify is running; try again when it is done')
        job = _Job(work, args, kwargs, self._finished)
        self._job = job
        try:
            job.thread.start()
            await job.done
        finally:
            # done completes only after the thread stored its outcome; the
            # join is immediate then (or after stop() when shutting down).
            job.thread.join()
            self._job = None
        return job.outcome()

    def stop(self):
        """
        Ask a running copy to end early and wait for its thread; on the executor thread.

        After spinning stopped (a node's destroy) nobody waits for the
        answer. A managed node also stops a copy while it still spins
        (deactivate, cleanup, shutdown): completing the job's future here
        lets the service coroutine answer its caller with the copy's
        CopyStoppedError.
        """
        job = self._job
        if job is not None:
            job.stop.set()
            job.thread.join()
            if not job.done.done():
                job.done.set_result(None)

    def _complete_on_executor(self):
        job = self._job
        if job is not None and job.ended.is_set() and not job.done.done():
            job.done.set_result(None)


class _Job:

    def __init__(self, work, args, kwargs, finished):
        self.done = Future()
        self.stop = threading.Event()
        self.ended = threading.Event()
        self._result = self._error = None
        self._finished = finished
        self.thread = threading.Thread(
            target=self._run, args=(work, args, kwargs), name='memory-copy')

    def _run(self, work, args, kwargs):
        try:
            self._result = work(*args, should_stop=self.stop.is_set, **kwargs)
        except Exception as error:  # raised to the awaiting coroutine by outcome()
            self._error = error
        self.ended.set()
        if not self.stop.is_set():
            # Once stop is set the executor has stopped: nobody waits for the
            # answer any more (the guard condition lives until stop() joined).
            self._finished.trigger()

    def outcome(self):
        if self._error is not None:
            raise self._error
        return self._result
