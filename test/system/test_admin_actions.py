# SPDX-License-Identifier: Apache-2.0
"""
Backup, export and verify as actions of a real memory node on a store of 100,000 memories.

The store is built once for the module (bench/generate.py, every active
remembered memory given its receipt as bench/verify_cost.py does), and each
test gives the node a private copy of it. Goals are sent through rclpy's
ActionClient as `ros2 action send_goal --feedback` sends them; files are
looked at on disk, not asked of the node.
"""

import pathlib
import shutil
import sqlite3
import sys
import time

from helpers.action_goals import ABORTED, CANCELED, finish, Goal, SUCCEEDED
from helpers.memory_services import memory_client
from helpers.rosutil import NodeProcess, unique_namespace
from mira_memory.action import Backup, Export, Verify
from mira_memory.client import names
from mira_memory.core.store.records import format_memory_id
import pytest

pytestmark = pytest.mark.ros

BENCH = pathlib.Path(__file__).resolve().parents[2] / 'bench'
MEMORIES, ENTITIES, SEED = 100_000, 10_000, 20260
# Cancel once a job has done this much of its work (by its own feedback).
HALFWAY = 0.3
# Memories the verify after the canceled one judges (by name).
VERIFY_NAMED = 2000


@pytest.fixture(scope='module')
def big_store(tmp_path_factory):
    """Return the path of the module's 100,000-memory store with every receipt (build once)."""
    sys.path.insert(0, str(BENCH))
    try:
        import generate
        import verify_cost
    finally:
        sys.path.remove(str(BENCH))
    cache = tmp_path_factory.mktemp('store')
    path, _ = generate.cached_store(cache, MEMORIES, ENTITIES, SEED, log=lambda *a: None)
    verify_cost.add_receipts(path)
    return path


@pytest.fixture
def node(big_store, tmp_path):
    """Start a memory node on a private copy of the big store; stop it with SIGINT after."""
    database = tmp_path / 'memory.sqlite3'
    shutil.copyfile(big_store, database)
    namespace = unique_namespace('jobs')
    process = NodeProcess('memory_node', namespace=namespace, directory=tmp_path,
                          parameters={'enabled': True, 'database_path': str(database),
                                      'robot_profile': 'Mira'})
    process.prefix = names.memory_node_name(namespace)
    process.database = database
    # The default output directory of backup and export, beside the database:
    # the node creates it as it opens the store.
    process.copies = tmp_path / 'memory-copies'
    deadline = time.monotonic() + 60
    while not process.copies.is_dir():
        assert process.running() and time.monotonic() < deadline, process.output()
        time.sleep(0.05)
    yield process
    if process.running():
        assert process.stop() == 0
    # Captured: pytest shows the node's log with a failed test only.
    print(process.output())
    assert 'Traceback' not in process.output()


def _fraction(feedback):
    return feedback.items_done / feedback.items_total if feedback.items_total else 0.0


def _check_feedback(feedback, phases):
    assert feedback, 'no feedback arrived'
    assert {message.phase for message in feedback} <= set(phases)
    for earlier, later in zip(feedback, feedback[1:]):
        assert later.elapsed_sec >= earlier.elapsed_sec
        if later.phase == earlier.phase:
            assert later.items_done >= earlier.items_done
            assert later.bytes_written >= earlier.bytes_written
    assert all(message.items_done <= message.items_total for message in feedback)
    assert any(message.remaining_sec >= 0 for message in feedback)


def _spread_memory_ids(database, count):
    """Return count MEM<n> ids of active remembered memories, evenly spread over the store."""
    conn = sqlite3.connect(f'file:{database}?mode=ro', uri=True)
    try:
        ids = [row[0] for row in conn.execute(
            "SELECT id FROM memories WHERE source_kind = 'operator_statement'"
            " AND status = 'active' ORDER BY id")]
    finally:
        conn.close()
    assert len(ids) >= count, len(ids)
    return [format_memory_id(ids[i * len(ids) // count]) for i in range(count)]


def _partial_files(directory):
    return sorted(path.name for path in directory.iterdir() if path.name.endswith('.partial'))


def _rows(database, table='memories'):
    conn = sqlite3.connect(f'file:{database}?mode=ro', uri=True)
    try:
        return conn.execute(f'SELECT count(*) FROM {table}').fetchone()[0]
    finally:
        conn.close()


# Attempts at a cancel halfway: one that the job outran is answered SUCCEEDED
# (docs/interfaces.md), so the test tries again. Under load the feedback
# that says halfway can reach this client late, but not three times running.
CANCEL_ATTEMPTS = 3


def cancel_halfway(start_goal, past_half, phases, outran, timeout=120):
    """
    Cancel a goal once its feedback is past_half; return (status, result) of a canceled one.

    A refused cancel means the job passed its commit point first: its goal
    must then succeed, with what outran(result) checks, and the next
    attempt starts. An accepted cancel must end the goal CANCELED. (A
    refusal answers a second request, sent when the first got no response,
    also when the first had been accepted: then the goal's status decides.)
    """
    for _ in range(CANCEL_ATTEMPTS):
        goal = start_goal()
        try:
            goal.wait_for(lambda: any(past_half(f) for f in goal.feedback), 'the job halfway',
                          timeout=timeout)
            response = goal.cancel()
            status, result = goal.result()
            _check_feedback(goal.feedback, phases)
        finally:
            goal.close()
        if response is not None and response.goals_canceling:
            assert status == CANCELED, (status, result.message)
        if status == CANCELED and (response is None or goal.cancel_requests > 1
                                   or response.goals_canceling):
            return status, result
        assert status == SUCCEEDED, (status, result.message)
        outran(result)
    raise AssertionError(f'the job finished before every one of {CANCEL_ATTEMPTS} cancels')


@pytest.mark.parametrize('job', ['backup', 'export'])
def test_a_copy_reports_progress_cancels_halfway_without_a_trace_then_finishes(
        ros, node, tmp_path, job):
    action_type = {'backup': Backup, 'export': Export}[job]
    outputs = node.copies
    target = outputs / f'memory.{job}'
    phases = {'backup': ('copying', 'checking'), 'export': ('writing',)}[job]
    # For backup, halfway is into integrity_check, the long part of a backup.
    past_half = ((lambda f: f.phase == 'checking' and _fraction(f) >= HALFWAY) if job == 'backup'
                 else (lambda f: _fraction(f) >= HALFWAY))

    def outran(result):
        # The job passed its commit point before the cancel came: it is whole.
        assert (result.success, result.path) == (True, str(target)), result.message
        assert _partial_files(outputs) == []
        assert target.stat().st_size == result.bytes
        if job == 'backup':
            assert _rows(target) == MEMORIES
        target.unlink()

    status, result = cancel_halfway(
        lambda: Goal(ros, node.prefix, job, action_type.Goal(path=str(target))),
        past_half, phases, outran)
    assert (status, result.success, result.error_code) == (
        CANCELED, False, 'canceled'), result.message
    assert result.message == f'{job} canceled (by its client); nothing was written'
    assert _partial_files(outputs) == [] and not target.exists()

    second = Goal(ros, node.prefix, job, action_type.Goal(path=str(target)))
    try:
        status, result = second.result()
        _check_feedback(second.feedback, phases)
        assert (status, result.success, result.error_code) == (SUCCEEDED, True, ''), (
            result.message)
        # Before close: the last feedback may still be on its way on the topic.
        last = second.final_feedback()
    finally:
        second.close()
    assert (result.path, result.bytes) == (str(target), target.stat().st_size)
    assert (result.memory_count, result.entity_count) == (MEMORIES, ENTITIES)
    assert _partial_files(outputs) == []
    assert (last.phase, last.remaining_sec) == (phases[-1], 0.0)
    if job == 'backup':
        assert _rows(target) == MEMORIES
    else:
        assert target.read_text(encoding='utf-8').count('\n') == last.items_total + 1


def test_memory_client_reports_progress_and_cancels_its_job(node):
    target = node.copies / 'client.export'
    with memory_client(node.prefix, 'client_job') as memory:
        # A cancel the node refuses came after the job's commit point: the
        # export is then whole, and the next attempt cancels again.
        for _ in range(CANCEL_ATTEMPTS):
            progress = []
            job = memory.start_job('export', Export.Goal(path=str(target), force=True),
                                   on_progress=progress.append)
            deadline = time.monotonic() + 120
            while not any(_fraction(f) >= HALFWAY for f in progress):
                assert not job.done() and time.monotonic() < deadline, progress[-1:]
                job.spin(0.1)
            result = job.cancel()
            if result.status == 'canceled':
                break
            assert result.succeeded and target.stat().st_size == result.result.bytes
            target.unlink()
        else:
            raise AssertionError(f'the export finished before every one of {CANCEL_ATTEMPTS} '
                                 'cancels')
    _check_feedback(progress, ('writing',))
    assert (result.status, result.succeeded, result.result.error_code) == (
        'canceled', False, 'canceled'), result.result.message
    assert result.result.message == 'export canceled (by its client); nothing was written'
    assert _partial_files(node.copies) == [] and not target.exists()


def test_verify_reports_progress_cancels_halfway_then_finishes(ros, node):
    def outran(result):
        assert result.success, result.message

    status, result = cancel_halfway(
        lambda: Goal(ros, node.prefix, 'verify', Verify.Goal()),
        lambda f: _fraction(f) >= HALFWAY, ('judging',), outran, timeout=300)
    assert (status, result.error_code, result.judged) == (CANCELED, 'canceled', 0), result.message
    assert result.message == 'verify canceled (by its client); nothing was changed'

    # The node finishes a verify after the cancel. The cancel above needed
    # the whole store (a job long enough to stop halfway); finishing does
    # not, so this one names memories spread over the store: a full verify
    # of all of them would take three times the canceled part again, and a
    # full verify's summary is checked on small stores (test_receipts_node.py).
    named = _spread_memory_ids(node.database, VERIFY_NAMED)
    second = Goal(ros, node.prefix, 'verify', Verify.Goal(memory_ids=named))
    try:
        status, result = second.result(timeout=600)
        _check_feedback(second.feedback, ('judging',))
        assert (status, result.success) == (SUCCEEDED, True), result.message
        # Before close: the last feedback may still be on its way on the topic.
        total = second.final_feedback().items_total
    finally:
        second.close()
    assert total == len(named) == VERIFY_NAMED
    assert result.judged == total and result.ok + result.mismatch + result.would_reject == total
    assert result.message.startswith(f'verified {total} memories: ')


def test_a_second_goal_is_refused_with_the_running_job_named(ros, node):
    outputs = node.copies
    target = outputs / 'memory.jsonl'
    running = Goal(ros, node.prefix, 'export', Export.Goal(path=str(target)))
    try:
        running.wait_for(lambda: running.feedback, 'feedback of the running export')
        for job, goal in (('backup', Backup.Goal(path=str(outputs / 'b.sqlite3'))),
                          ('verify', Verify.Goal()),
                          ('export', Export.Goal(path=str(outputs / 'e.jsonl')))):
            status, result = finish(ros, node.prefix, job, goal, timeout=30)
            assert (status, result.success, result.error_code) == (ABORTED, False, 'busy')
            assert result.message.startswith(
                f'another job is running: export (goal {running.id}, ')
            assert result.message.endswith(
                'this goal was not started; try again when it is done')
        running.cancel()
        assert running.result()[0] == CANCELED
    finally:
        running.close()
    assert _partial_files(outputs) == []
    assert not (outputs / 'b.sqlite3').exists() and not (outputs / 'e.jsonl').exists()


def test_bad_goals_end_at_once_with_todays_error_codes(ros, node, tmp_path):
    existing = node.copies / 'existing.sqlite3'
    existing.write_text('keep me\n')
    cases = (
        ('backup', Backup.Goal(path='relative.sqlite3'), 'invalid_argument',
         'the target path must be absolute'),
        ('backup', Backup.Goal(path=str(existing)), 'exists',
         f'{existing} exists; give --force to replace it'),
        ('export', Export.Goal(path=str(node.database)), 'invalid_argument',
         'the target is the database itself'),
        ('export', Export.Goal(path=str(tmp_path / 'e.jsonl'), force=True),
         'outside_output_dirs', f'{tmp_path / "e.jsonl"} is outside the directories'),
        ('verify', Verify.Goal(memory_ids=['MEM999999999']), 'not_found',
         'memory MEM999999999 not found'),
    )
    for job, goal, code, message in cases:
        status, result = finish(ros, node.prefix, job, goal, timeout=60)
        assert (status, result.success, result.error_code) == (ABORTED, False, code)
        assert result.message.startswith(message), result.message
    assert existing.read_text() == 'keep me\n'
    assert _partial_files(node.copies) == [] and _partial_files(tmp_path) == []
