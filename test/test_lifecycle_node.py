# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


"""Retire, forget, backup, export, import and migrate through the real node and console."""

import io
import os
import re

from mira_memory import console, offline_tools, srv
from mira_memory.core import ownership, schema
import pytest
from schema_v1 import make_version_1_database
from test_lifecycle import raw_hits

pytestmark = pytest.mark.ros

SECRETS = ('Zorblatt Quennifer', 'Quenny Vexmarrow', 'Zorblatt hides the plumbix key',
           'plumbix key under the gazebo')


def run(main, *argv):
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def console_for(node):
    def memory(*words):
        return run(console.main, '--memory-node', node.prefix, '--timeout', '20', 'memory',
                   *words)
    return memory


def created(output, prefix):
    match = re.match(rf'created ({prefix}[1-9][0-9]*) ', output)
    assert match, output
    return match.group(1)


def start(memory_node, ros, database):
    node = memory_node({'enabled': True, 'database_path': str(database),
                        'robot_profile': 'Mira'}, ros=ros)
    node.database = database
    return node


def test_retire_through_the_console(ros, memory_node, tmp_path):
    memory = console_for(start(memory_node, ros, tmp_path / 'memory.sqlite3'))
    ada = created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')
    wrong = created(memory('add', 'fact', 'Ada likes mint tea', '--link', f'{ada}:subject',
                           '--predicate', 'likes', '--value', 'mint tea')[1], 'MEM')
    code, out, err = memory('retire', wrong, '--reason', 'she said coffee')
    assert code == 0, err
    assert re.fullmatch(rf'retired {wrong} at \S+Z: "she said coffee"\n', out)
    code, out, _ = memory('show', wrong)
    assert code == 0
    assert '  status:       retired\n' in out and '  reason:       she said coffee\n' in out
    assert re.search(r'  retired at:   \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n', out)
    assert wrong not in memory('find', 'Ada Lovelace')[1]
    assert wrong not in memory('list', ada)[1]
    assert '  memories:       1 (0 active)' in memory('persistent')[1]
    code, _, err = memory('retire', wrong, '--reason', 'again')
    assert code == 1 and err == f'error: invalid_argument: {wrong} is already retired\n'


def test_forget_leaves_no_text_in_any_file_while_running_and_after(ros, memory_node, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    memory = console_for(node)
    keep = created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')
    secret = created(memory('entity', 'add', 'person', SECRETS[0])[1], 'ENT')
    assert memory('alias', 'add', secret, SECRETS[1])[0] == 0
    secret_memory = created(memory('add', 'fact', SECRETS[2], '--link', f'{secret}:subject',
                                   '--link', f'{keep}:witness', '--predicate', 'hides',
                                   '--value', SECRETS[3])[1], 'MEM')
    # Recall reads through the node's second, read-only connection first.
    found = ros.call(srv.RecallMemory, f'{node.prefix}/recall_memory',
                     srv.RecallMemory.Request(query=SECRETS[1]))
    assert found.status == 'found'
    assert raw_hits(database, SECRETS)

    code, out, _ = memory('forget', secret)
    assert code == 0
    assert out == (f'would forget {secret}: 1 memories, 1 aliases, 2 links, 1 payloads\n'
                   f'  memories: {secret_memory}\n'
                   'nothing was removed; add --yes to remove it for good\n')
    assert memory('show', secret_memory)[0] == 0
    code, out, _ = memory('forget', secret, '--yes')
    assert code == 0 and out.startswith(f'forgot {secret}: 1 memories, 1 aliases')
    assert memory('show', secret_memory)[2] == (
        f'error: not_found: memory {secret_memory} not found\n')
    assert memory('entity', 'find', SECRETS[1])[1] == 'no entity has that exact name or alias\n'
    assert raw_hits(database, SECRETS) == []
    # The forgotten ids are not given again.
    assert created(memory('entity', 'add', 'person', 'Bob')[1], 'ENT') == 'ENT3'
    assert node.stop() == 0
    assert raw_hits(database, SECRETS) == []


def test_backup_export_and_import_through_node_and_tools(ros, memory_node, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    memory = console_for(node)
    ada = created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')
    for summary in ('Ada likes tea', 'Ada writes notes'):
        memory('add', 'fact', summary, '--link', f'{ada}:subject')
    assert memory('forget', 'MEM2', '--yes')[0] == 0
    backup = tmp_path / 'backup.sqlite3'
    code, out, err = memory('backup', str(backup))
    assert code == 0, err
    assert out == (f'backup written: {backup} ({backup.stat().st_size} bytes)\n'
                   '  entities 1, aliases 0, memories 1, links 1, payloads 1\n')
    assert schema.read_version(backup)[0] == 2
    code, _, err = memory('backup', str(backup))
    assert code == 1 and err.startswith('error: exists: ') and '--force' in err
    assert memory('backup', str(backup), '--force')[0] == 0
    code, _, err = memory('backup', str(database))
    assert code == 1 and err.startswith('error: ')
    export = tmp_path / 'memory.jsonl'
    code, out, err = memory('export', str(export))
    assert code == 0, err and out.startswith(f'export written: {export}')
    assert node.stop() == 0

    imported = tmp_path / 'imported.sqlite3'
    code, out, err = run(offline_tools.import_main, '--database', str(imported),
                         '--from', str(export))
    assert code == 0, err
    again = console_for(start(memory_node, ros, imported))
    lines = again('persistent')[1].splitlines()
    assert '  schema version: 2' in lines and '  memories:       1 (1 active)' in lines
    # MEM2 was forgotten before the export: the imported store does not reuse it.
    assert created(again('add', 'fact', 'x', '--link', f'{ada}:subject')[1], 'MEM') == 'MEM3'
    from_backup = console_for(start(memory_node, ros, backup))
    assert '  entities:       1' in from_backup('persistent')[1].splitlines()


def test_migrate_then_start_the_node(ros, memory_node, tmp_path):
    database = make_version_1_database(tmp_path / 'memory.sqlite3')
    code, out, err = run(offline_tools.migrate_main, '--database', str(database))
    assert code == 0, err
    memory = console_for(start(memory_node, ros, database))
    lines = memory('persistent')[1].splitlines()
    assert '  schema version: 2' in lines and '  memories:       2 (2 active)' in lines
    assert 'Ada likes tea' in memory('list', 'ENT1')[1]


def test_migrate_refuses_while_a_memory_node_runs(ros, memory_node, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    assert ownership._flock_owner(os.stat(database)) == node.process.pid
    before = database.read_bytes()
    code, out, err = run(offline_tools.migrate_main, '--database', str(database))
    assert code == 1 and out == ''
    assert f'owned by process {node.process.pid}' in err and 'stop the memory node' in err
    assert database.read_bytes() == before


def test_copy_services_declare_busy_and_exists():
    for service_type in (srv.AdminRetire, srv.AdminForget, srv.AdminBackup, srv.AdminExport):
        declared = {value for name, value in vars(service_type.Response).items()
                    if name.startswith('ERROR_')}
        assert declared == {'invalid_argument', 'not_found', 'duplicate_alias', 'disabled',
                            'backend_failure', 'busy', 'exists'}
