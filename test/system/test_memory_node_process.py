# SPDX-License-Identifier: Apache-2.0
"""The memory_node executable as a real process: a startup failure's exit, the signals, DDS."""

import pathlib
import signal
import sqlite3

from mira_memory import msg, srv
from mira_memory.client import names
from mira_memory.core import store
import pytest

pytestmark = pytest.mark.ros


def error_lines(output):
    return [line for line in output.splitlines() if '[ERROR]' in line]


@pytest.mark.parametrize('parameters, reason', [
    ({'enabled': 'true'}, 'parameter enabled must be true or false'),
    ({'enabled': True, 'database_path': 'relative/memory.sqlite3'}, 'must be absolute'),
], ids=['mistyped_enabled', 'relative_parameter_path'])
def test_a_startup_error_is_one_log_line_and_exit_1(memory_node, parameters, reason):
    # Every startup error's text: test/node/test_memory_node.py.
    process = memory_node(parameters)
    assert process.wait() == 1
    errors = error_lines(process.output())
    assert len(errors) == 1 and reason in errors[0], process.output()
    assert 'Traceback' not in process.output()


def test_an_unsupported_database_is_one_log_line_and_exit_1(memory_node, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    database.write_text('not a database\n')
    process = memory_node({'enabled': True, 'database_path': str(database)})
    assert process.wait() == 1
    errors = error_lines(process.output())
    assert len(errors) == 1 and 'cannot open persistent memory' in errors[0], process.output()
    assert database.read_text() == 'not a database\n'


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_shuts_down_cleanly(ros, memory_node, tmp_path, sig):
    database = tmp_path / 'memory.sqlite3'
    process = memory_node({'enabled': True, 'database_path': str(database)}, ros=ros)
    prefix = process.prefix
    entity = ros.call(srv.AdminEntityAdd, names.service_name(prefix, names.ADMIN_ENTITY_ADD),
                      srv.AdminEntityAdd.Request(entity_type='person',
                                                 canonical_name='Ada Lovelace'))
    assert entity.success, entity.message
    added = ros.call(srv.AdminAdd, names.service_name(prefix, names.ADMIN_ADD),
                     srv.AdminAdd.Request(
                         kind='fact', summary='wrote the first program',
                         links=[msg.MemoryLink(entity_id=entity.entity.id, role='subject')]))
    assert added.success, added.message
    assert process.stop(sig) == 0
    assert 'Traceback' not in process.output()
    with store.MemoryStore.open(database) as reopened:
        assert reopened.counts() == {'entities': 1, 'aliases': 0, 'memories': 1,
                                     'active_memories': 1, 'links': 1, 'payloads': 1}
    conn = sqlite3.connect(database)
    try:
        assert conn.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
        assert conn.execute('PRAGMA foreign_key_check').fetchall() == []
    finally:
        conn.close()


@pytest.mark.parametrize('broken', [False, True], ids=['shipped', 'broken-control'])
def test_fast_dds_reads_the_shipped_discovery_profile(
        ros, memory_node, tmp_path, monkeypatch, broken):
    # config/dds/fastdds_discovery.xml as installed, given the way bringup
    # gives it (the variable ROS_DISTRO's Fast DDS reads); a broken copy shows
    # that Fast DDS's parser reads that variable and speaks up when it cannot
    # read a profile (or reads one twice).
    from ament_index_python.packages import get_package_share_directory
    from mira_memory.ros import launching
    profile = pathlib.Path(get_package_share_directory('mira_memory'),
                           'config', 'dds', 'fastdds_discovery.xml')
    if broken:
        profile = tmp_path / 'broken.xml'
        profile.write_text('<profiles><participant profile_name="x"><rtps><bogus/>'
                           '</rtps></participant></profiles>\n')
    for name in launching.DDS_PROFILE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in launching.dds_profile_environment(str(profile)).items():
        monkeypatch.setenv(name, value)
    process = memory_node({'enabled': True, 'database_path': str(tmp_path / 'memory.sqlite3')},
                          ros=ros)
    status = ros.call(srv.AdminStatus, names.service_name(process.prefix, names.ADMIN_STATUS),
                      srv.AdminStatus.Request())
    assert status.success, status.message
    assert process.stop() == 0
    assert ('XMLPARSER' in process.output()) == broken, process.output()
