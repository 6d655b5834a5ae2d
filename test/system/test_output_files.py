# SPDX-License-Identifier: Apache-2.0
"""
What a real memory node's backup and export write, and where: the attacks a caller may try.

- links planted at the temporary file's name (the old, predictable one and
  one an attacker guessed) are never written through;
- no file of the live database (-journal, -wal, -shm, by any path) is a target;
- copies go only to the node's admin_output_dirs (0700 by default), --force included;
- a goal's path never forges a line of the node's log.

Goals are sent as `ros2 action send_goal` sends them (action_goals.py);
files are looked at on disk.
"""

import os
import pathlib
import signal
import stat
import sys

from helpers.action_goals import ABORTED, finish, SUCCEEDED
from helpers.rosutil import executable, unique_namespace, write_params_file
from mira_memory.action import Backup, Export
from mira_memory.client import names
from mira_memory.simulation import processes
import pytest

pytestmark = pytest.mark.ros

JOBS = {'backup': Backup, 'export': Export}
VICTIM_TEXT = 'export PATH=/usr/bin\n'
GUESS = 'guessed'
GUESSED_NAME_NODE = pathlib.Path(__file__).parents[1] / 'helpers' / 'guessed_name_node.py'


def _start(ros, tmp_path, extra=None, *, guessed=False):
    """Start a memory node (guessed: its temporary names' random part is GUESS) and seed it."""
    database = tmp_path / 'memory.sqlite3'
    namespace = unique_namespace('files')
    parameters = {'enabled': True, 'database_path': str(database), 'robot_profile': 'Mira',
                  **(extra or {})}
    command = ([sys.executable, str(GUESSED_NAME_NODE), GUESS] if guessed
               else [executable('memory_node')])
    node = processes.Process(
        [*command, '--ros-args', '-r', f'__ns:={namespace}',
         '--params-file', write_params_file(tmp_path, parameters)],
        tmp_path / f'memory_node_{namespace.strip("/")}.log', name='memory_node')
    node.prefix = names.memory_node_name(namespace)
    node.database = database
    node.copies = tmp_path / 'memory-copies'
    from helpers.memory_services import create_clients
    from mira_memory import srv
    create_clients(ros, node.prefix)
    if not ros.wait_for_service(srv.AdminStatus, f'{node.prefix}/admin/status'):
        node.stop()
        raise AssertionError(f'memory node did not come up:\n{node.output()}')
    ros.settle(srv.AdminStatus, f'{node.prefix}/admin/status')
    response = ros.call(srv.AdminEntityAdd, f'{node.prefix}/admin/entity_add',
                        srv.AdminEntityAdd.Request(entity_type='person', canonical_name='Ada'))
    assert response.success, response.message
    return node


@pytest.fixture
def nodes(ros, tmp_path):
    """Start memory nodes with _start; stop each after the test, whatever happened."""
    started = []

    def start(*args, **kwargs):
        node = _start(ros, tmp_path, *args, **kwargs)
        started.append(node)
        return node
    yield start
    for node in started:
        node.stop(first=signal.SIGINT)
        ros.forget_clients(node.prefix)
        assert 'Traceback' not in node.output(), node.output()


@pytest.fixture
def victim(tmp_path):
    """Return a file of the node's user that a planted link points at (a shell rc file)."""
    path = tmp_path / 'victim' / 'bashrc'
    path.parent.mkdir()
    path.write_text(VICTIM_TEXT)
    path.chmod(0o644)
    return path


def _untouched(victim):
    assert victim.read_text() == VICTIM_TEXT
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def _plant(kind, at, victim):
    if kind == 'symlink':
        at.symlink_to(victim)
    else:
        os.link(victim, at)


def _temporaries(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith('.partial'))


@pytest.mark.parametrize('job', sorted(JOBS))
@pytest.mark.parametrize('kind', ['symlink', 'hardlink'])
def test_a_link_at_the_old_predictable_name_is_not_written_through(
        ros, nodes, victim, job, kind):
    node = nodes()
    target = node.copies / f'copy.{job}'
    planted = target.with_name(f'.{target.name}.{node.pid}.partial')
    _plant(kind, planted, victim)
    status, result = finish(ros, node.prefix, job, JOBS[job].Goal(path=str(target)))
    # The name is not used any more: the copy is written beside it, in a file of its own.
    assert (status, result.error_code) == (SUCCEEDED, ''), result.message
    _untouched(victim)
    assert not os.path.samefile(target, victim)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert planted.is_symlink() if kind == 'symlink' else os.path.samefile(planted, victim)
    assert _temporaries(node.copies) == [planted.name]


@pytest.mark.parametrize('job', sorted(JOBS))
@pytest.mark.parametrize('kind', ['symlink', 'hardlink'])
def test_a_link_at_a_guessed_name_fails_the_job_and_is_not_written_through(
        ros, nodes, victim, job, kind):
    node = nodes(guessed=True)
    target = node.copies / f'copy.{job}'
    planted = target.with_name(f'.{target.name}.{GUESS}.partial')
    _plant(kind, planted, victim)
    status, result = finish(ros, node.prefix, job, JOBS[job].Goal(path=str(target)))
    assert (status, result.error_code) == (ABORTED, 'backend_failure'), result.message
    assert result.message == (f'the temporary file name {planted} is taken; '
                              'nothing was written')
    _untouched(victim)
    assert not target.exists()
    # What was planted is left as it was: the node never removes what it did not make.
    assert planted.is_symlink() if kind == 'symlink' else os.path.samefile(planted, victim)


@pytest.mark.parametrize('name', ['{db}-journal', '{db}-wal', '{db}-shm', '{db}-mj0A1B2C3D',
                                  '{dir}/sub/../{base}-journal', 'link-to-journal',
                                  'hardlink-to-db'])
def test_no_file_of_the_live_database_is_a_target(ros, nodes, tmp_path, name):
    # The database's own directory is an output directory here: only the name refuses.
    node = nodes({'admin_output_dirs': str(tmp_path)})
    database = node.database
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'link-to-journal').symlink_to(f'{database}-journal')
    os.link(database, tmp_path / 'hardlink-to-db')
    path = tmp_path / name.format(db=database, dir=tmp_path, base=database.name)
    for job in sorted(JOBS):
        status, result = finish(ros, node.prefix, job,
                                JOBS[job].Goal(path=str(path), force=True))
        assert (status, result.error_code) == (ABORTED, 'invalid_argument'), result.message
        assert result.message == 'the target is the database itself or one of its files'
    assert not pathlib.Path(f'{database}-journal').exists()
    # Every later copy works (a bogus -journal would make each fail: readonly database).
    for job in sorted(JOBS):
        status, result = finish(ros, node.prefix, job,
                                JOBS[job].Goal(path=str(tmp_path / f'after.{job}')))
        assert (status, result.error_code) == (SUCCEEDED, ''), result.message


def test_copies_go_only_to_the_output_directory_created_private_by_default(
        ros, nodes, tmp_path):
    node = nodes()
    assert stat.S_IMODE(node.copies.stat().st_mode) == 0o700
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    (node.copies / 'out').symlink_to(elsewhere)
    existing = elsewhere / 'authorized_keys'
    existing.write_text('ssh-ed25519 AAAA key\n')
    for path in (tmp_path / 'copy', existing, node.copies / 'out' / 'copy',
                 node.copies / '..' / 'copy'):
        for job in sorted(JOBS):
            status, result = finish(ros, node.prefix, job,
                                    JOBS[job].Goal(path=str(path), force=True))
            assert (status, result.error_code) == (ABORTED, 'outside_output_dirs'), (
                path, result.message)
            assert f'{path} is outside the directories' in result.message
    assert existing.read_text() == 'ssh-ed25519 AAAA key\n'
    assert sorted(p.name for p in elsewhere.iterdir()) == ['authorized_keys']
    for job in sorted(JOBS):
        status, result = finish(ros, node.prefix, job,
                                JOBS[job].Goal(path=str(node.copies / f'copy.{job}')))
        assert (status, result.error_code) == (SUCCEEDED, ''), result.message


def test_named_output_directories_are_created_and_the_only_ones(ros, nodes, tmp_path):
    first, second = tmp_path / 'backups', tmp_path / 'exports' / 'daily'
    node = nodes({'admin_output_dirs': f'{first}:{second}'})
    assert [stat.S_IMODE(d.stat().st_mode) for d in (first, second)] == [0o700, 0o700]
    assert not node.copies.exists()
    status, result = finish(ros, node.prefix, 'backup', Backup.Goal(path=str(first / 'b')))
    assert status == SUCCEEDED, result.message
    status, result = finish(ros, node.prefix, 'export', Export.Goal(path=str(second / 'e')))
    assert status == SUCCEEDED, result.message
    status, result = finish(ros, node.prefix, 'export', Export.Goal(path=str(tmp_path / 'e')))
    assert (status, result.error_code) == (ABORTED, 'outside_output_dirs')


def test_a_goal_path_cannot_forge_a_log_line(ros, nodes):
    node = nodes()
    forged = '[ERROR] [1.0] [memory]: ALL MEMORIES LOST'
    name = f'x\n{forged}\x1b[2J\x1b[32m'
    status, result = finish(ros, node.prefix, 'export',
                            Export.Goal(path=str(node.copies / name)))
    assert status == SUCCEEDED, result.message
    log = node.output()
    assert 'export of' in log
    assert not any(line.startswith(forged) for line in log.splitlines()), log
    assert '\x1b' not in log
