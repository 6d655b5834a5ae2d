# SPDX-License-Identifier: Apache-2.0
"""
Personal memories stay private, through the real memory node.

The node creates its database, WAL, SHM, backups and exports 0600 and a
directory it creates 0700, whatever the umask it was started with (the
test starts it with the permissive 022). A database file that other users
may read is served, with a warning in the log and in /diagnostics.
"""

import contextlib
import os
import stat

from helpers.action_goals import finish
from helpers.diagnostics_util import diagnostics, values
from mira_memory import srv
from mira_memory.action import Backup, Export
from mira_memory.client import names
from mira_memory.core.store import MemoryStore
import pytest

pytestmark = pytest.mark.ros

PARAMETERS = {'enabled': True, 'robot_profile': 'Mira'}


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@contextlib.contextmanager
def umask(value):
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


def test_the_node_creates_every_file_0600_and_its_directories_0700(memory_node, ros, tmp_path):
    database = tmp_path / 'new' / 'nested' / 'memory.sqlite3'
    with umask(0o022):
        node = memory_node({**PARAMETERS, 'database_path': str(database)}, ros=ros)
    added = ros.call(srv.AdminEntityAdd, names.service_name(node.prefix, names.ADMIN_ENTITY_ADD),
                     srv.AdminEntityAdd.Request(entity_type='person', canonical_name='Ada'))
    assert added.success, added.message
    assert {path.name: oct(mode(path)) for path in (tmp_path / 'new', database.parent)} == {
        'new': oct(0o700), 'nested': oct(0o700)}
    files = [database, database.with_name('memory.sqlite3-wal'),
             database.with_name('memory.sqlite3-shm')]
    assert {path.name: oct(mode(path)) for path in files} == {
        path.name: oct(0o600) for path in files}
    # The default output directory of backup and export, made 0700 like the others.
    copies = database.with_name('memory-copies')
    assert oct(mode(copies)) == oct(0o700)
    for action_type, command in ((Backup, 'backup'), (Export, 'export')):
        target = copies / command
        _, answer = finish(ros, node.prefix, command, action_type.Goal(path=str(target)))
        assert answer.success, answer.message
        assert oct(mode(target)) == oct(0o600), command
        # --force replaces the file with a new 0600 one, also over a 0644 file.
        target.chmod(0o644)
        _, answer = finish(ros, node.prefix, command,
                           action_type.Goal(path=str(target), force=True))
        assert answer.success, answer.message
        assert oct(mode(target)) == oct(0o600), command
    assert sorted(path.name for path in copies.iterdir()) == ['backup', 'export']
    status = diagnostics(ros, str(database), lambda status: 'file mode' in values(status))
    assert (status.level, values(status)['file mode']) == (status.OK, '0600')
    assert node.stop() == 0
    assert file_mode_warnings(node.output()) == []


def file_mode_warnings(output):
    """
    Return the node's WARN lines about its file's mode.

    Only those: on a loaded machine the node may also warn, rightly, that a
    reply could not be sent to a client it had not discovered yet.
    """
    return [line for line in output.splitlines()
            if '[WARN]' in line and 'accessible to other users' in line]


def test_a_database_readable_by_others_is_served_with_a_warning(memory_node, ros, tmp_path):
    database = tmp_path / 'shared' / 'memory.sqlite3'
    database.parent.mkdir()
    MemoryStore.open(database).close()
    database.chmod(0o644)
    node = memory_node({**PARAMETERS, 'database_path': str(database)}, ros=ros)
    # Served: the operator chose the mode.
    status = ros.call(srv.AdminStatus, names.service_name(node.prefix, names.ADMIN_STATUS))
    assert status.success and status.enabled
    warned = diagnostics(ros, str(database), lambda status: status.level == status.WARN)
    assert 'accessible to other users (mode 0644)' in warned.message
    assert values(warned)['file mode'] == '0644'
    # The node never changes what the operator chose.
    assert oct(mode(database)) == oct(0o644)
    assert node.stop() == 0
    warnings = file_mode_warnings(node.output())
    assert len(warnings) == 1 and 'chmod 600' in warnings[0], node.output()
    database.chmod(0o600)
    private = memory_node({**PARAMETERS, 'database_path': str(database)}, ros=ros)
    ok = diagnostics(ros, str(database), lambda status: values(status).get('file mode') == '0600')
    assert ok.level == ok.OK
    assert private.stop() == 0
