# SPDX-License-Identifier: Apache-2.0
"""
A cancel that races the end of a copy: the copy worker's commit point, on real files.

The worker runs a real backup of a real store on its thread; the cancel is
sent from inside may_publish, right before or right after the commit point,
which is exactly where a late cancel lands on a loaded machine. The action
server on top (accept or refuse, CANCELED or SUCCEEDED) is tested through a
real node in test/system/test_admin_actions.py.
"""

import threading
import time

import pytest

pytestmark = pytest.mark.ros


class _GuardCondition:
    def trigger(self):
        pass


class _Node:
    """The one thing CopyWorker asks of its node: a guard condition to wake it."""

    def create_guard_condition(self, callback, callback_group=None):
        return _GuardCondition()


def _run(worker, name, work, *args, **kwargs):
    """Drive CopyWorker.run as the executor would; return its result (or raise its error)."""
    from mira_memory.core.archive.progress import Meter
    coroutine = worker.run(name, 'goal-1', Meter(), work, *args, **kwargs)
    coroutine.send(None)  # the job's thread starts; run awaits its future
    worker._job.thread.join(60)
    worker._complete_on_executor()  # the guard condition's callback
    with pytest.raises(StopIteration) as stopped:
        coroutine.send(None)
    return stopped.value.value


@pytest.fixture
def worker():
    from mira_memory.memory.copy_worker import CopyWorker
    return CopyWorker(_Node())


def test_a_cancel_just_before_the_commit_point_is_accepted_and_nothing_is_written(
        worker, store, tmp_path):
    from mira_memory.core.archive import copies
    target = tmp_path / 'backup.sqlite3'
    before = sorted(path.name for path in tmp_path.iterdir())
    answers = []

    def may_publish():
        answers.append(worker.cancel('goal-1'))
        return worker.may_publish()

    with pytest.raises(copies.CopyStoppedError):
        _run(worker, 'backup', copies.backup, str(store.path), str(target),
             may_publish=may_publish)
    assert answers == [True]
    # Neither the target nor a partial file: the directory is as it was.
    assert sorted(path.name for path in tmp_path.iterdir()) == before


def test_a_cancel_just_after_the_commit_point_is_refused_and_the_copy_is_whole(
        worker, store, tmp_path):
    from mira_memory.core.archive import copies
    target = tmp_path / 'backup.sqlite3'
    answers = []

    def may_publish():
        passed = worker.may_publish()
        answers.append(worker.cancel('goal-1'))
        return passed

    copied = _run(worker, 'backup', copies.backup, str(store.path), str(target),
                  may_publish=may_publish)
    assert answers == [False]
    assert copied['path'] == str(target) and target.stat().st_size == copied['bytes']


def test_a_job_that_writes_nothing_drops_its_result_after_an_accepted_cancel(worker):
    from mira_memory.core.archive import copies
    answers = []

    def work(should_stop, progress):
        # The job's last stop check has passed; the cancel comes now.
        answers.append(worker.cancel('goal-1'))
        return 'summary'

    with pytest.raises(copies.CopyStoppedError):
        _run(worker, 'verify', work)
    assert answers == [True]


def test_a_cancel_of_another_goal_or_of_no_job_is_refused(worker):
    assert worker.cancel('goal-1') is False

    def work(should_stop, progress):
        assert worker.cancel('goal-2') is False
        return 'summary'

    assert _run(worker, 'verify', work) == 'summary'


def test_an_interrupt_while_the_job_runs_leaves_it_to_stop_and_blocks_nothing(worker):
    """
    A stop signal's KeyboardInterrupt raised in the coroutine that awaits a running job.

    rclpy steps the waiting coroutine on every wake of the executor, so the
    interrupt lands there. The coroutine must end at once, with the job asked
    to stop and still the running one, for stop() to wait for it: waiting for
    the job in the coroutine blocked the executor and the node ignored the
    signal. The job here ends only when asked to, or after 10 s on its own.
    """
    from mira_memory.core.archive import copies
    from mira_memory.core.archive.progress import Meter
    running = threading.Event()

    def work(should_stop, progress):
        running.set()
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if should_stop():
                raise copies.CopyStoppedError('stopped')
            time.sleep(0.01)
        return 'finished on its own'

    coroutine = worker.run('verify', 'goal-1', Meter(), work)
    coroutine.send(None)  # the job's thread starts; run awaits its future
    assert running.wait(10)
    with pytest.raises(KeyboardInterrupt):
        coroutine.throw(KeyboardInterrupt)
    job = worker.running
    assert job is not None and job.stop.is_set()
    worker.stop('the memory node stopped')
    with pytest.raises(copies.CopyStoppedError):
        job.outcome()


def test_a_job_left_by_its_coroutine_frees_the_worker_when_it_ends(worker):
    from mira_memory.core.archive.progress import Meter
    coroutine = worker.run('verify', 'goal-1', Meter(), lambda should_stop, progress: 'done')
    coroutine.send(None)
    with pytest.raises(KeyboardInterrupt):
        coroutine.throw(KeyboardInterrupt)
    assert worker.busy
    worker.running.thread.join(10)
    worker._complete_on_executor()  # the guard condition's callback
    assert not worker.busy
