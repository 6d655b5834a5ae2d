# SPDX-License-Identifier: Apache-2.0
"""Retire, forget, backup, export, import and migrate through the real node and console."""

import io
import os
import re
import signal

from helpers.action_goals import ABORTED, finish
from helpers.copy_in_flight import backups_held, console_process, temporary_files
from helpers.copy_in_flight import wait_for_backup_in_flight
from helpers.memory_services import MemoryServices, OBSERVED_TURN_WAIT, remember_request
from helpers.raw_scan import raw_hits
from helpers.schema_v1 import make_version_1_database
from mira_memory import srv
from mira_memory.action import Backup, Export, Verify
from mira_memory.client import names
from mira_memory.console import offline_tools
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.store import ownership, schema
import pytest

pytestmark = pytest.mark.ros

SECRETS = ('Zorblatt Quennifer', 'Quenny Vexmarrow', 'Zorblatt hides the plumbix key',
           'plumbix key under the gazebo')


def run(main, *argv):
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def created(output, prefix):
    match = re.match(rf'created ({prefix}[1-9][0-9]*) ', output)
    assert match, output
    return match.group(1)


def start(memory_node, ros, database, hold_copies=None):
    node = memory_node({'enabled': True, 'database_path': str(database),
                        'robot_profile': 'Mira', **OBSERVED_TURN_WAIT}, ros=ros,
                       hold_copies=hold_copies)
    node.database = database
    # Backup and export write to the default output directory, beside the database.
    node.copies = database.with_name(database.stem + '-copies')
    return node


def test_retire_through_the_console(ros, memory_node, tmp_path, console_memory):
    memory = console_memory(start(memory_node, ros, tmp_path / 'memory.sqlite3'))
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


def test_retiring_a_wrong_memory_lets_remember_admit_the_correction(
        ros, memory_node, tmp_path, console_memory):
    node = start(memory_node, ros, tmp_path / 'memory.sqlite3')
    memory = console_memory(node)
    services = MemoryServices(ros, node.prefix)
    created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')

    def remember(number, utterance, value):
        # The node requires observed turns: MemoryServices says the turn first.
        return services.remember(remember_request(
            TurnContext(f'episode-{number}', f'turn-{number}', utterance),
            Proposal(kind='fact', subject='Ada Lovelace', predicate='lives_in', value=value,
                     related_entity=None, related_role=None,
                     evidence=f'Ada Lovelace lives in {value}')))

    wrong = remember(1, 'Ada Lovelace lives in Harrowgate.', 'Harrowgate')
    assert (wrong.status, wrong.outcome) == ('applied', 'created')
    refused = remember(2, 'No, Ada Lovelace lives in Pellham.', 'Pellham')
    assert (refused.status, refused.reason) == ('rejected', 'conflict')
    assert refused.conflicting_memory_ids == [wrong.memory_id]

    assert memory('retire', wrong.memory_id, '--reason', 'operator corrected it')[0] == 0
    corrected = remember(3, 'Ada Lovelace lives in Pellham, not Harrowgate.', 'Pellham')
    assert (corrected.status, corrected.outcome) == ('applied', 'created')
    assert corrected.memory_id != wrong.memory_id
    # Retired, the wrong memory is not a duplicate either: saying it again is a conflict
    # with the correction, not a reply naming the retired one.
    again = remember(4, 'Ada Lovelace lives in Harrowgate.', 'Harrowgate')
    assert (again.status, again.reason) == ('rejected', 'conflict')
    assert again.conflicting_memory_ids == [corrected.memory_id]


def copy_refused_as_busy(ros, node):
    """Ask for an export while a backup runs (a relative path, never copied anyway)."""
    status, result = finish(ros, node.prefix, 'export', Export.Goal(path='relative.jsonl'))
    return (status, result.success, result.error_code) == (ABORTED, False, 'busy') and (
        result.message.startswith('another job is running: backup (goal ')
        and result.message.endswith('this goal was not started; try again when it is done'))


def test_backup_runs_while_the_node_serves_everything_else(
        ros, memory_node, tmp_path, console_memory):
    release = tmp_path / 'hold'
    node = start(memory_node, ros, tmp_path / 'memory.sqlite3', hold_copies=release)
    memory = console_memory(node)
    services = MemoryServices(ros, node.prefix)
    ada = created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')
    tea = created(memory('add', 'fact', 'Ada likes tea', '--link', f'{ada}:subject')[1], 'MEM')
    target = node.copies / 'backup.sqlite3'
    with backups_held(release):
        backup = console_process(node, tmp_path, 'backup', str(target))
        wait_for_backup_in_flight(node, target, backup)
        assert copy_refused_as_busy(ros, node)
        # Every other service answers while the copy is in flight.
        assert services.recall('Ada Lovelace').status == 'found'
        remembered = services.remember(remember_request(
            TurnContext('episode-1', 'turn-1', 'Ada Lovelace drinks coffee.'),
            Proposal(kind='fact', subject='Ada Lovelace', predicate='drinks', value='coffee',
                     related_entity=None, related_role=None,
                     evidence='Ada Lovelace drinks coffee')))
        assert (remembered.status, remembered.outcome) == ('applied', 'created')
        assert memory('retire', tea, '--reason', 'she gave it up')[0] == 0
        assert memory('forget', tea)[0] == 0  # the preview writes nothing
        code, _, err = memory('forget', tea, '--yes')
        assert (code, err) == (
            1, 'error: busy: a backup, export or verify is running; forget when it is done\n')
        assert backup.running()
    out, _ = backup.process.communicate(timeout=60)
    assert backup.poll() == 0, backup.output()
    # One snapshot, taken when the copy began: without the memory remembered since.
    assert out == (f'backup written: {target} ({target.stat().st_size} bytes)\n'
                   '  entities 1, aliases 0, memories 1, links 1, payloads 1\n')
    assert memory('forget', tea, '--yes')[0] == 0
    assert '  memories:       1 (1 active)' in memory('persistent')[1].splitlines()
    from_backup = console_memory(start(memory_node, ros, target))
    assert '  memories:       1 (1 active)' in from_backup('persistent')[1].splitlines()


def test_sigint_during_a_backup_stops_it_and_the_node_cleanly(
        ros, memory_node, tmp_path, console_memory):
    database = tmp_path / 'memory.sqlite3'
    release = tmp_path / 'hold'
    node = start(memory_node, ros, database, hold_copies=release)
    memory = console_memory(node)
    created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')
    target = node.copies / 'backup.sqlite3'
    with backups_held(release):
        backup = console_process(node, tmp_path, 'backup', str(target))
        partial = wait_for_backup_in_flight(node, target, backup)
        assert node.stop() == 0
        # The copy ended with the node: no backup, its partial file removed.
        assert not target.exists() and not partial.exists()
        assert temporary_files(node.copies) == []
    assert 'Traceback' not in node.output()
    # No result will come (the console gives up 10 s after the node went away).
    backup.stop(first=signal.SIGKILL)
    # The store was closed and given up cleanly: another node opens it.
    again = console_memory(start(memory_node, ros, database))
    assert '  entities:       1' in again('persistent')[1].splitlines()


def test_forget_leaves_no_text_in_any_file_while_running_and_after(
        ros, memory_node, tmp_path, console_memory):
    database = tmp_path / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    memory = console_memory(node)
    keep = created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')
    secret = created(memory('entity', 'add', 'person', SECRETS[0])[1], 'ENT')
    assert memory('alias', 'add', secret, SECRETS[1])[0] == 0
    secret_memory = created(memory('add', 'fact', SECRETS[2], '--link', f'{secret}:subject',
                                   '--link', f'{keep}:witness', '--predicate', 'hides',
                                   '--value', SECRETS[3])[1], 'MEM')
    # Recall reads through the node's second, read-only connection first.
    found = ros.call(srv.RecallMemory, names.service_name(node.prefix, names.RECALL_MEMORY),
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


def test_backup_export_and_import_through_node_and_tools(
        ros, memory_node, tmp_path, console_memory):
    database = tmp_path / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    memory = console_memory(node)
    ada = created(memory('entity', 'add', 'person', 'Ada Lovelace')[1], 'ENT')
    for summary in ('Ada likes tea', 'Ada writes notes'):
        memory('add', 'fact', summary, '--link', f'{ada}:subject')
    assert memory('forget', 'MEM2', '--yes')[0] == 0
    backup = node.copies / 'backup.sqlite3'
    code, out, err = memory('backup', str(backup))
    assert code == 0, err
    assert out == (f'backup written: {backup} ({backup.stat().st_size} bytes)\n'
                   '  entities 1, aliases 0, memories 1, links 1, payloads 1\n')
    assert schema.read_version(backup)[0] == 4
    code, _, err = memory('backup', str(backup))
    assert code == 1 and err.startswith('error: exists: ') and '--force' in err
    assert memory('backup', str(backup), '--force')[0] == 0
    code, _, err = memory('backup', str(database))
    assert (code, err) == (1, 'error: invalid_argument: the target is the database itself or '
                              'one of its files\n')
    code, _, err = memory('backup', str(tmp_path / 'elsewhere.sqlite3'), '--force')
    assert code == 1 and err.startswith('error: outside_output_dirs: '), err
    export = node.copies / 'memory.jsonl'
    code, out, err = memory('export', str(export))
    assert code == 0, err
    assert out == (f'export written: {export} ({export.stat().st_size} bytes)\n'
                   '  entities 1, aliases 0, memories 1, links 1, payloads 1\n')
    assert node.stop() == 0

    imported = tmp_path / 'imported.sqlite3'
    code, out, err = run(offline_tools.import_main, '--database', str(imported),
                         '--from', str(export))
    assert code == 0, err
    again = console_memory(start(memory_node, ros, imported))
    lines = again('persistent')[1].splitlines()
    assert '  schema version: 4' in lines and '  memories:       1 (1 active)' in lines
    # MEM2 was forgotten before the export: the imported store does not reuse it.
    assert created(again('add', 'fact', 'x', '--link', f'{ada}:subject')[1], 'MEM') == 'MEM3'
    from_backup = console_memory(start(memory_node, ros, backup))
    assert '  entities:       1' in from_backup('persistent')[1].splitlines()


def test_migrate_then_start_the_node(ros, memory_node, tmp_path, console_memory):
    database = make_version_1_database(tmp_path / 'memory.sqlite3')
    code, out, err = run(offline_tools.migrate_main, '--database', str(database))
    assert code == 0, err
    memory = console_memory(start(memory_node, ros, database))
    lines = memory('persistent')[1].splitlines()
    assert '  schema version: 4' in lines and '  memories:       2 (2 active)' in lines
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


def test_copy_services_and_actions_declare_busy_and_exists():
    for service_type in (srv.AdminRetire, srv.AdminForget):
        declared = {value for name, value in vars(service_type.Response).items()
                    if name.startswith('ERROR_')}
        assert declared == {'invalid_argument', 'not_found', 'duplicate_alias', 'disabled',
                            'backend_failure', 'unavailable', 'busy', 'exists'}
    jobs = {'invalid_argument', 'disabled', 'backend_failure', 'unavailable', 'busy',
            'canceled'}
    for action_type, also in ((Backup, {'exists', 'outside_output_dirs'}),
                              (Export, {'exists', 'outside_output_dirs'}),
                              (Verify, {'not_found'})):
        declared = {value for name, value in vars(action_type.Result).items()
                    if name.startswith('ERROR_')}
        assert declared == jobs | also
