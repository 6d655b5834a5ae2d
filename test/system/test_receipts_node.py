# SPDX-License-Identifier: Apache-2.0
"""Receipts and memory verify through the real memory node, console and offline tools."""

import json
import os
import re
import sqlite3
import subprocess

from helpers.action_goals import ABORTED, finish, without_progress
from helpers.copy_in_flight import backups_held, console_process
from helpers.copy_in_flight import wait_for_backup_in_flight
from helpers.diagnostics_util import diagnostics, values
from helpers.memory_services import database_fingerprint, MemoryServices, OBSERVED_TURN_WAIT
from helpers.memory_services import remember_request
from helpers.raw_scan import raw_hits
from helpers.rosutil import executable
from helpers.schema_v2 import make_version_2_database
from mira_memory.action import Verify
from mira_memory.core.admission import language
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
import pytest

pytestmark = pytest.mark.ros

TEA = 'Ada Lovelace prefers green tea.'
OBOE = 'Bob Stone plimsy plays the oboe.'
# A word the test adds to the rules through the extra language directory.
NEGATOR_TOML = ('language = "xx"\n[[trigger]]\nclass = "negation"\ndirection = "forward"\n'
                'words = ["plimsy"]\nexample = "Ada plimsy likes tea."\n')
SECRET = 'Note this: Ada Lovelace drinks quorvish nettle brew, every morning.'
SECRET_WORDS = ('quorvish', 'nettle brew', 'every morning', 'Note this')


def offline_verify(database, *args, extra=None):
    env = dict(os.environ)
    env.pop(language.EXTRA_LANGUAGE_ENV, None)
    if extra is not None:
        env[language.EXTRA_LANGUAGE_ENV] = str(extra)
    done = subprocess.run([executable('memory_verify'), '--database', str(database), *args],
                          capture_output=True, text=True, timeout=300, env=env)
    return done.returncode, done.stdout, done.stderr


def fact(kind, subject, predicate, value, evidence):
    return Proposal(kind=kind, subject=subject, predicate=predicate, value=value,
                    related_entity=None, related_role=None, evidence=evidence)


def start(memory_node, ros, database, hold_copies=None):
    node = memory_node({'enabled': True, 'database_path': str(database),
                        'robot_profile': 'Mira', **OBSERVED_TURN_WAIT}, ros=ros,
                       hold_copies=hold_copies)
    node.services = MemoryServices(ros, node.prefix)
    return node


def seed(node, console):
    for name in ('Ada Lovelace', 'Bob Stone'):
        assert console('entity', 'add', 'person', name)[0] == 0
    created = []
    for number, (utterance, proposal) in enumerate((
            (TEA, fact('preference', 'Ada Lovelace', 'prefers_drink', 'green tea',
                       'Ada Lovelace prefers green tea')),
            (OBOE, fact('fact', 'Bob Stone', 'plays', 'the oboe',
                        'Bob Stone plimsy plays the oboe'))), 1):
        result = node.services.remember(remember_request(
            TurnContext('episode-1', f'turn-{number}', utterance), proposal))
        assert (result.status, result.outcome) == ('applied', 'created'), result
        created.append(result.memory_id)
    assert console('add', 'fact', 'Ada writes notes', '--link', 'ENT1:subject')[0] == 0
    return created


def diagnostic_values(ros, database, until, timeout=30.0):
    """Return the values of the first /diagnostics status of database that until accepts."""
    return values(diagnostics(ros, str(database), lambda status: until(values(status)),
                              timeout))


def test_show_and_verify_online_then_after_a_rules_change(ros, memory_node, tmp_path,
                                                          monkeypatch, console_memory):
    database = tmp_path / 'memory.sqlite3'
    monkeypatch.delenv(language.EXTRA_LANGUAGE_ENV, raising=False)
    node = start(memory_node, ros, database)
    console = console_memory(node)
    tea, oboe = seed(node, console)

    code, out, err = console('show', tea)
    assert code == 0, err
    running = f'{language.RULES_VERSION}+{language.rules_digest()}'
    receipt = out.split('  receipt:')[1]
    assert receipt.startswith(f'      rules {running}, ran 1-19, written ')
    assert f'    utterance:  "{TEA}"\n' in receipt
    assert '    turn:       episode "episode-1" turn "turn-1"\n' in receipt
    assert ('    proposal:   preference subject "Ada Lovelace" predicate "prefers_drink" '
            'value "green tea"\n') in receipt
    assert '    robot:      "Mira"\n    resolved:   subject ENT1\n' in receipt
    code, out, _ = console('show', 'MEM3')
    assert out.endswith('  receipt:      none (added by the console, or remembered before '
                        'schema version 3)\n')

    before = database_fingerprint(database)
    code, out, err = console('verify')
    assert (code, without_progress(err)) == (0, '')
    # MEM3, added by the console, is counted but not judged.
    assert out == (f'verified 2 memories: 2 ok, 0 would reject, 0 no receipt, 1 not judged '
                   f'(rules {running}; 0 admitted under other rules)\n')
    code, out, _ = console('verify', '--json')
    assert code == 0 and json.loads(out)['summary']['ok'] == 2
    assert database_fingerprint(database) == before
    values = diagnostic_values(ros, database, lambda v: v.get(
        'memories admitted under other rules') == '0')
    assert values['remembered memories without receipt'] == '0'
    assert node.stop() == 0
    assert 'every active remembered memory was admitted under the running' in node.output()

    # The rules change: "plimsy", a word of the second sentence, becomes a negator.
    extra = tmp_path / 'extra_language'
    extra.mkdir()
    (extra / 'xx.toml').write_text(NEGATOR_TOML, encoding='utf-8')
    monkeypatch.setenv(language.EXTRA_LANGUAGE_ENV, str(extra))
    node = start(memory_node, ros, database)
    console = console_memory(node)
    values = diagnostic_values(ros, database, lambda v: v.get(
        'memories admitted under other rules') == '2')
    assert values['remembered memories without receipt'] == '0'
    assert re.search(r'\[INFO\] .* 2 active remembered memories were admitted under other '
                     r'grounding rules than the running ones \('
                     + re.escape(language.RULES_VERSION) + r'\+[0-9a-f]{16}\) and 0 '
                     r'have no receipt; judge them again with: memory verify', node.output())
    before = database_fingerprint(database)
    code, out, err = console('verify')
    assert (code, without_progress(err)) == (1, '')
    lines = out.splitlines()
    assert lines[0] == f'{oboe} WOULD REJECT invalid_proposal (13)'
    assert lines[1].startswith('verified 2 memories: 1 ok, 1 would reject, 0 no receipt')
    assert lines[1].endswith('; 2 admitted under other rules)') and len(lines) == 2
    assert console('verify', tea)[0] == 0
    code, out, _ = console('verify', oboe, '--json')
    document = json.loads(out)
    assert code == 1 and document['findings'] == [{
        'memory_id': oboe, 'reason': 'invalid_proposal', 'rule': '13',
        'rules_digest': language.rules_digest(), 'rules_version': language.RULES_VERSION,
        'status': 'would_reject'}]
    assert database_fingerprint(database) == before
    # The operator retires it: verify is clean again, and so is the count.
    assert console('retire', oboe, '--reason', 'not what was said')[0] == 0
    assert console('verify')[0] == 0
    diagnostic_values(ros, database, lambda v: v.get(
        'memories admitted under other rules') == '1')
    code, _, err = console('verify', 'ENT1')
    assert code == 2 and 'is not a memory id' in err
    code, _, err = console('verify', 'MEM99')
    assert (code, err) == (1, 'error: not_found: memory MEM99 not found\n')
    assert node.stop() == 0

    # Offline, with the node stopped: the same answer, and nothing written.
    before = database.read_bytes()
    code, out, err = offline_verify(database, oboe, extra=extra)
    assert (code, err) == (0, ''), out
    assert out.splitlines()[0] == f'{oboe} NOT JUDGED retired'
    assert database.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith('memory.')) == [
        'memory.sqlite3']


def test_verify_is_busy_while_a_backup_runs_and_offline_verify_while_the_node_runs(
        ros, memory_node, tmp_path, console_memory):
    database = tmp_path / 'memory.sqlite3'
    release = tmp_path / 'hold'
    node = start(memory_node, ros, database, hold_copies=release)
    console = console_memory(node)
    seed(node, console)
    target = tmp_path / 'memory-copies' / 'backup.sqlite3'
    with backups_held(release):
        backup = console_process(node, tmp_path, 'backup', str(target))
        wait_for_backup_in_flight(node, target, backup)
        status, answer = finish(ros, node.prefix, 'verify', Verify.Goal())
        assert (status, answer.success, answer.error_code) == (ABORTED, False, 'busy')
        assert answer.message.startswith('another job is running: backup (goal ')
    assert backup.wait(timeout=60) == 0, backup.describe('backup failed')
    # The backup holds the receipts.
    connection = sqlite3.connect(target)
    assert connection.execute('SELECT count(*) FROM receipts').fetchone() == (2,)
    connection.close()
    before = database_fingerprint(database)
    code, out, err = offline_verify(database)
    assert code == 1 and out == ''
    assert f'owned by process {node.process.pid}' in err
    assert 'while the node runs use the console: memory verify' in err
    assert database_fingerprint(database) == before


def test_forget_removes_the_receipt_with_no_word_left_while_running_and_after(
        ros, memory_node, tmp_path, console_memory):
    database = tmp_path / 'memory.sqlite3'
    node = start(memory_node, ros, database)
    console = console_memory(node)
    assert console('entity', 'add', 'person', 'Ada Lovelace')[0] == 0
    result = node.services.remember(remember_request(
        TurnContext('episode-9', 'turn-1', SECRET),
        fact('fact', 'Ada Lovelace', 'drinks', 'quorvish nettle brew',
             'Ada Lovelace drinks quorvish nettle brew')))
    assert result.outcome == 'created', result
    assert 'quorvish' in console('show', result.memory_id)[1]
    # The receipt alone holds "Note this" and "every morning".
    assert {word for _, word in raw_hits(database, SECRET_WORDS)} >= {
        'Note this', 'every morning'}
    code, out, _ = console('forget', result.memory_id, '--yes')
    assert code == 0 and out.startswith(f'forgot {result.memory_id}: 1 memories')
    assert raw_hits(database, SECRET_WORDS) == []
    assert console('verify')[1].startswith('verified 0 memories')
    assert node.stop() == 0
    assert raw_hits(database, SECRET_WORDS) == []


def test_a_version_2_file_is_refused_byte_identical_then_migrated(
        ros, memory_node, tmp_path, console_memory):
    directory = tmp_path / 'db'
    directory.mkdir()
    database = make_version_2_database(directory / 'memory.sqlite3')
    before = database.read_bytes()
    process = memory_node({'enabled': True, 'database_path': str(database)})
    assert process.wait() == 1
    errors = [line for line in process.output().splitlines() if '[ERROR]' in line]
    assert len(errors) == 1, process.output()
    assert errors[0].endswith(
        'database has schema version 2, this node needs version 4; it was left unchanged: '
        f'stop the node and run: ros2 run mira_memory memory_migrate --database {database}')
    assert database.read_bytes() == before
    assert os.listdir(directory) == ['memory.sqlite3']
    done = subprocess.run([executable('memory_migrate'), '--database', str(database)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    node = start(memory_node, ros, database)
    console = console_memory(node)
    values = diagnostic_values(ros, database, lambda v: v.get(
        'remembered memories without receipt') == '2')
    assert values['memories admitted under other rules'] == '0'
    assert ('0 active remembered memories were admitted under other grounding rules than the '
            'running ones') in node.output() and 'and 2 have no receipt' in node.output()
    code, out, _ = console('verify')
    assert code == 1
    assert out.splitlines()[:2] == ['MEM4 NO RECEIPT', 'MEM5 NO RECEIPT']
    assert '  schema version: 4' in console('persistent')[1].splitlines()
