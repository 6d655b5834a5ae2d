# SPDX-License-Identifier: Apache-2.0
"""Schema version 3 in the core: receipts, memory verify, migrate 2 -> 4, export/import."""

from dataclasses import replace
import hashlib
import io
import json
import os
import pathlib
import sqlite3
import subprocess
import sys

from conftest import fixed_clock
from helpers.admission_cases import CASES, FACT, FACT_CONTEXT, RELATIONSHIP, RELATIONSHIP_CONTEXT
from helpers.admission_cases import ROBOT_PROFILE
from helpers.raw_scan import database_files, raw_hits
from helpers.schema_v2 import make_version_2_database, MEMORY_IDS, SEQUENCES
from mira_memory.console import offline_tools
from mira_memory.core.admission import language, results, rules
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.rules import admit
from mira_memory.core.archive import copies, verify, verify_process as verify_child
from mira_memory.core.store import health, MemoryStore, NewMemory, schema, WriteTransaction
import pytest

# The words of one utterance, for the raw-byte scan after forget.
SECRET_UTTERANCE = 'Note this: Zorblatt Quennifer drinks plumbix cordial, every morning.'
SECRET_WORDS = ('Zorblatt', 'Quennifer', 'plumbix', 'cordial', 'every morning')


@pytest.fixture
def world(store):
    """Seed the admission table's world: Ottoline, Quillon (with aliases) and the robot."""
    ottoline = store.add_entity('person', 'Ottoline Vexworth')
    store.add_alias(ottoline.id, 'Ottie')
    quillon = store.add_entity('person', 'Quillon Brask')
    store.add_alias(quillon.id, 'Quill')
    store.add_entity('robot', ROBOT_PROFILE)
    return store


def digest_files(path):
    """
    Return the digests of the database's data: the main file and its -wal.

    The -shm file is SQLite's shared-memory index of the WAL, not data: every
    reader of a WAL database records its read mark there.
    """
    return {candidate.name: hashlib.sha256(candidate.read_bytes()).hexdigest()
            for candidate in database_files(path) if not candidate.name.endswith('-shm')}


def run(main, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([str(arg) for arg in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# The receipt ----------------------------------------------------------------------

def test_a_remembered_memory_has_its_receipt(world):
    result = admit(world, FACT_CONTEXT, FACT, ROBOT_PROFILE)
    assert (result.status, result.outcome) == ('applied', 'created')
    receipt = world.get_receipt(result.memory_id)
    assert receipt == replace(
        receipt, memory_id=result.memory_id, utterance=FACT_CONTEXT.utterance,
        episode_id='ep-7731', turn_id='turn-0042', kind='fact', subject='Ottoline Vexworth',
        predicate='drinks', value='zumbleberry tea', related_entity=None, related_role=None,
        evidence='Ottoline Vexworth drinks zumbleberry tea', robot_profile=ROBOT_PROFILE,
        rules_version=language.RULES_VERSION, rules_digest=language.rules_digest(),
        rules_ran='1-19', subject_entity_id=1, related_entity_id=None)
    assert receipt.created_at == world.get_memory(result.memory_id)[0].created_at
    assert result.decision == results.Decision('1-19', 1, None, ((1, 'subject'),))


def test_a_relationship_receipt_records_both_resolved_entities(world):
    result = admit(world, RELATIONSHIP_CONTEXT, RELATIONSHIP, ROBOT_PROFILE)
    receipt = world.get_receipt(result.memory_id)
    assert (receipt.related_entity, receipt.related_role) == ('Quillon Brask', 'cousin')
    assert (receipt.subject_entity_id, receipt.related_entity_id) == (1, 2)


def test_console_memories_and_rejections_write_no_receipt(world):
    memory = world.add_memory(NewMemory('fact', 'Ottie likes tea', links=((1, 'subject'),)))
    assert world.get_receipt(memory.id) is None
    rejected = admit(world, FACT_CONTEXT, replace(FACT, value='coffee'), ROBOT_PROFILE)
    assert rejected.status == 'rejected'
    assert world._connection.raw.execute('SELECT count(*) FROM receipts').fetchone() == (0,)


def test_the_receipt_commits_with_its_memory_or_neither_does(world, monkeypatch):
    def fail(self, receipt):
        raise sqlite3.OperationalError('disk I/O error')
    monkeypatch.setattr(WriteTransaction, 'insert_receipt', fail)
    result = admit(world, FACT_CONTEXT, FACT, ROBOT_PROFILE)
    assert result.reason == 'backend_failure'
    assert world.counts()['memories'] == 0


def test_judge_gives_the_reason_and_rule_admission_gives_and_writes_nothing(world, db_path):
    for name in ('Sam Northby', 'Sam Southby'):
        world.add_alias(world.add_entity('person', name).id, 'Samwise')
    before = digest_files(db_path)
    # Rules 1-17 read the request and the entities only.
    for name, case in CASES.items():
        if case.wrap_store or case.reason in ('conflict', 'backend_failure'):
            continue
        judged = rules.judge(world, case.context, case.proposal, case.profile)
        assert judged.rejection.reason == case.reason, name
        assert judged.rejection.rule, name
    assert digest_files(db_path) == before
    judged = rules.judge(world, FACT_CONTEXT, FACT, ROBOT_PROFILE)
    assert judged.rejection is None
    assert (judged.summary, judged.value) == ('Ottoline Vexworth drinks zumbleberry tea',
                                              'zumbleberry tea')


def test_rejections_name_their_rule(world):
    missing = admit(world, FACT_CONTEXT, replace(FACT, subject=''), ROBOT_PROFILE)
    assert (missing.reason, missing.rule) == ('invalid_tool_arguments', '1')
    negated = admit(world, TurnContext('e', 't', 'Ottoline Vexworth never drinks zumbleberry '
                                                 'tea.'), FACT, ROBOT_PROFILE)
    assert negated.status == 'rejected' and negated.rule in ('5', '10', '13')
    assert admit(world, FACT_CONTEXT, FACT, ROBOT_PROFILE).rule == ''


# Verify ---------------------------------------------------------------------------

def remember(store, number, utterance, proposal):
    result = admit(store, TurnContext('ep', f't{number}', utterance), proposal, ROBOT_PROFILE)
    assert (result.status, result.outcome) == ('applied', 'created'), result
    return result.memory_id


def fact(subject, predicate, value, evidence):
    return Proposal(kind='fact', subject=subject, predicate=predicate, value=value,
                    related_entity=None, related_role=None, evidence=evidence)


def collect(path, *ids):
    findings = []
    summary = verify.verify(str(path), ids, on_finding=findings.append)
    return summary, [finding.line() for finding in findings]


def test_verify_judges_every_active_remembered_memory_and_writes_nothing(world, db_path):
    tea = remember(world, 1, FACT_CONTEXT.utterance, FACT)
    quill = remember(world, 2, 'Quillon Brask plays the oboe.',
                     fact('Quillon Brask', 'plays', 'the oboe', 'Quillon Brask plays the oboe'))
    world.add_memory(NewMemory('fact', 'Ottie likes tea', links=((1, 'subject'),)))
    before = digest_files(db_path)
    summary, lines = collect(db_path)
    assert lines == []
    # The console's memory (MEM3) is counted too: not judged, and no failure.
    assert (summary.judged, summary.ok, summary.not_judged, summary.all_ok) == (2, 2, 1, True)
    assert summary.line() == (
        f'verified 2 memories: 2 ok, 0 would reject, 0 no receipt, 1 not judged (rules '
        f'{language.RULES_VERSION}+{language.rules_digest()}; 0 admitted under other rules)')
    assert digest_files(db_path) == before
    # Retired memories are not judged; asked for by id, they say why.
    world.retire_memory(quill, 'wrong instrument')
    summary, lines = collect(db_path)
    assert (summary.judged, summary.ok, summary.not_judged) == (1, 1, 1)
    summary, lines = collect(db_path, quill, 3, tea)
    assert lines == [f'MEM{quill} NOT JUDGED retired', 'MEM3 NOT JUDGED source console']
    assert (summary.judged, summary.not_judged, summary.all_ok) == (1, 2, True)
    with pytest.raises(verify.NotFoundError, match='memory MEM99 not found'):
        collect(db_path, 99)


def test_verify_judges_with_the_entities_as_they_are_now(world, db_path):
    remember(world, 1, FACT_CONTEXT.utterance, FACT)
    other = world.add_entity('person', 'Ottoline Vexworth')  # a second one: ambiguous now
    summary, lines = collect(db_path)
    assert lines == ['MEM1 WOULD REJECT subject_ambiguous (14)']
    assert summary.would_reject == 1 and not summary.all_ok
    world.forget_entity(other.id, apply=True)
    assert collect(db_path)[1] == []


def test_the_nodes_verify_process_answers_what_verify_answers_in_process(world, db_path):
    remember(world, 1, FACT_CONTEXT.utterance, FACT)
    quill = remember(world, 2, 'Quillon Brask plays the oboe.',
                     fact('Quillon Brask', 'plays', 'the oboe', 'Quillon Brask plays the oboe'))
    world.add_entity('person', 'Ottoline Vexworth')  # MEM1's subject is ambiguous now
    world.retire_memory(quill, 'wrong instrument')
    for ids in ((), (1, quill)):
        expected_findings = []
        expected = verify.verify(str(db_path), ids, on_finding=expected_findings.append)
        findings = []
        summary = verify_child.run(db_path, ids, on_finding=findings.append)
        assert (summary, findings) == (expected, expected_findings)
        assert findings[0].line() == 'MEM1 WOULD REJECT subject_ambiguous (14)'
    with pytest.raises(verify.NotFoundError, match='^memory MEM99 not found$'):
        verify_child.run(db_path, (1, 99))


def test_a_stopped_verify_process_is_killed_and_says_it_stopped(world, db_path):
    remember(world, 1, FACT_CONTEXT.utterance, FACT)
    with pytest.raises(copies.CopyStoppedError, match='verify stopped before it was complete'):
        verify_child.run(db_path, should_stop=lambda: True)
    # The child was reaped: this process has none left.
    children = pathlib.Path(f'/proc/{os.getpid()}/task/{os.getpid()}/children')
    if children.exists():
        assert children.read_text().split() == []


def test_a_verify_process_that_loads_other_rules_data_refuses_to_judge(
        world, db_path, monkeypatch):
    remember(world, 1, FACT_CONTEXT.utterance, FACT)
    # The node's digest no longer matches the data on disk (as after an upgrade).
    monkeypatch.setattr(language, 'rules_digest', lambda: '0' * 16)
    with pytest.raises(verify.BackendError,
                       match='changed on disk since the node started .node 0{16}, on disk '
                             '[0-9a-f]{16}.; restart the node'):
        verify_child.run(db_path)


def test_health_reports_what_verify_would_judge_again():
    report = health.Health()
    values = dict(report.report(enabled=True, database_path='/x', schema_version=3).values)
    assert values['memories admitted under other rules'] == 'unknown'
    report.set_receipt_counts(2, 5)
    values = dict(report.report(enabled=True, database_path='/x', schema_version=3).values)
    assert values['memories admitted under other rules'] == '2'
    assert values['remembered memories without receipt'] == '5'


def test_receipt_rules_counts(world):
    remember(world, 1, FACT_CONTEXT.utterance, FACT)
    running = (language.RULES_VERSION, language.rules_digest())
    assert world.receipt_rules_counts(*running) == (0, 0)
    assert world.receipt_rules_counts('2.9.0', running[1]) == (1, 0)


# The rules change: a negator added through the extra language directory -------------

# A word the test adds to the rules: "plimsy" now negates.
NEGATOR_TOML = ('language = "xx"\n[[trigger]]\nclass = "negation"\ndirection = "forward"\n'
                'words = ["plimsy"]\nexample = "Ada plimsy likes tea."\n')


def verify_process(database, extra=None, *args):
    """Run memory_verify in a process of its own (the rules are read once per process)."""
    env = dict(os.environ)
    env.pop(language.EXTRA_LANGUAGE_ENV, None)
    if extra is not None:
        env[language.EXTRA_LANGUAGE_ENV] = str(extra)
    done = subprocess.run(
        [sys.executable, '-c', 'import sys\nfrom mira_memory.console.offline_tools import '
         'verify_main\nsys.exit(verify_main())', '--database', str(database), *args],
        env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_a_new_negator_makes_verify_reject_exactly_the_memory_whose_sentence_has_it(
        world, db_path, tmp_path):
    remember(world, 1, FACT_CONTEXT.utterance, FACT)
    changed = remember(world, 2, 'Quillon Brask plimsy plays the oboe.',
                       fact('Quillon Brask', 'plays', 'the oboe',
                            'Quillon Brask plimsy plays the oboe'))
    world.close()
    extra = tmp_path / 'extra_language'
    extra.mkdir()
    (extra / 'xx.toml').write_text(NEGATOR_TOML, encoding='utf-8')
    before = digest_files(db_path)
    code, out, err = verify_process(db_path)
    assert (code, err) == (0, ''), out
    code, out, err = verify_process(db_path, extra)
    lines = out.splitlines()
    assert code == 1 and err == ''
    assert lines[0] == f'MEM{changed} WOULD REJECT invalid_proposal (13)'
    assert lines[1].startswith('verified 2 memories: 1 ok, 1 would reject, 0 no receipt (rules '
                               f'{language.RULES_VERSION}+')
    assert lines[1].endswith('; 2 admitted under other rules)') and len(lines) == 2
    code, out, _ = verify_process(db_path, extra, '--json')
    document = json.loads(out)
    assert code == 1 and [f['memory_id'] for f in document['findings']] == [f'MEM{changed}']
    assert document['findings'][0]['rules_digest'] == language.rules_digest()
    assert document['summary']['would_reject'] == 1
    assert digest_files(db_path) == before
    assert sorted(os.listdir(db_path.parent)) == ['extra_language', 'memory.sqlite3']


# Forget ---------------------------------------------------------------------------

def test_forget_removes_the_receipt_and_leaves_no_word_of_the_utterance(world, db_path):
    world.add_entity('person', 'Zorblatt Quennifer')
    memory_id = remember(world, 1, SECRET_UTTERANCE, fact(
        'Zorblatt Quennifer', 'drinks', 'plumbix cordial',
        'Zorblatt Quennifer drinks plumbix cordial'))
    secret_entity = world.find_entities('Zorblatt Quennifer')[0].id
    assert raw_hits(db_path, SECRET_WORDS)
    world.forget_memory(memory_id, apply=True)
    assert world.get_receipt(memory_id) is None
    # The entity's name is the operator's word too: forget it as well.
    world.forget_entity(secret_entity, apply=True)
    assert raw_hits(db_path, SECRET_WORDS) == []
    world.close()
    assert raw_hits(db_path, SECRET_WORDS) == []


# Backup, export, import -------------------------------------------------------------

@pytest.fixture
def remembered(world):
    remember(world, 1, FACT_CONTEXT.utterance, FACT)
    admit(world, RELATIONSHIP_CONTEXT, RELATIONSHIP, ROBOT_PROFILE)
    world.add_memory(NewMemory('fact', 'Ottie likes tea', links=((1, 'subject'),)))
    return world


def test_backup_contains_the_receipts(remembered, tmp_path):
    target = tmp_path / 'backup.sqlite3'
    copy = copies.backup(str(remembered.path), str(target))
    assert copy['counts']['receipts'] == 2
    with MemoryStore.open(target) as restored:
        assert restored.get_receipt(1) == remembered.get_receipt(1)


def test_export_import_export_carries_receipts_byte_identically(remembered, tmp_path):
    first = tmp_path / 'one.jsonl'
    copies.export(str(remembered.path), str(first))
    records = [json.loads(line) for line in first.read_text().splitlines()]
    assert records[0]['counts']['receipts'] == 2 and records[0]['schema_version'] == 4
    receipts = [r for r in records if r['type'] == 'receipt']
    assert [r['memory_id'] for r in receipts] == [1, 2]
    assert receipts[0]['utterance'] == FACT_CONTEXT.utterance
    code, out, err = run(offline_tools.import_main, '--database', tmp_path / 'new.sqlite3',
                         '--from', first)
    assert code == 0, err
    assert 'receipts 2' in out and 'schema version: 4' in out
    second = tmp_path / 'two.jsonl'
    copies.export(str(tmp_path / 'new.sqlite3'), str(second))
    assert first.read_bytes() == second.read_bytes()
    assert collect(tmp_path / 'new.sqlite3')[0].ok == 2


def _edited(path, target_id, **changes):
    lines = path.read_text(encoding='utf-8').splitlines(keepends=True)
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record.get('type') == 'receipt' and record['memory_id'] == target_id:
            record.update(changes)
            lines[index] = json.dumps(record, ensure_ascii=False) + '\n'
            return lines, index + 1
    raise AssertionError('no such receipt')


BAD_RECEIPTS = {
    'missing field': {'rules_ran': None, '_drop': 'rules_ran'},
    'blank utterance': {'utterance': '  '},
    'not text': {'subject': 7},
    'related half given': {'related_role': None},
    'bad entity id': {'subject_entity_id': 0},
    'other turn': {'turn_id': 'turn-9999'},
    'bad created_at': {'created_at': 'yesterday'},
    'of a console memory': {'memory_id': 3},
    'of a missing memory': {'memory_id': 9},
}


@pytest.mark.parametrize('name', sorted(BAD_RECEIPTS))
def test_a_malformed_receipt_is_refused_by_its_line(remembered, tmp_path, name):
    good = tmp_path / 'good.jsonl'
    copies.export(str(remembered.path), str(good))
    changes = dict(BAD_RECEIPTS[name])
    drop = changes.pop('_drop', None)
    lines, number = _edited(good, 2, **changes)
    if drop:
        record = json.loads(lines[number - 1])
        del record[drop]
        lines[number - 1] = json.dumps(record) + '\n'
    bad = tmp_path / 'bad.jsonl'
    bad.write_text(''.join(lines), encoding='utf-8')
    target = tmp_path / 'new.sqlite3'
    code, out, err = run(offline_tools.import_main, '--database', target, '--from', bad)
    assert code == 1 and out == '', err
    assert err.count('\n') == 1 and f'line {number}:' in err and 'nothing was written' in err
    assert not target.exists()


def test_an_edited_receipt_that_no_longer_grounds_its_memory_is_flagged_alone(
        remembered, tmp_path):
    good = tmp_path / 'good.jsonl'
    copies.export(str(remembered.path), str(good))
    negated = 'It is not true that Ottoline Vexworth drinks zumbleberry tea.'
    lines, _ = _edited(good, 1, utterance=negated)
    edited = tmp_path / 'edited.jsonl'
    edited.write_text(''.join(lines), encoding='utf-8')
    target = tmp_path / 'new.sqlite3'
    code, _, err = run(offline_tools.import_main, '--database', target, '--from', edited)
    assert code == 0, err
    code, out, err = run(offline_tools.verify_main, '--database', target)
    assert code == 1 and err == ''
    assert out.splitlines()[0] == 'MEM1 WOULD REJECT evidence_not_in_utterance (10)'
    assert out.splitlines()[1].startswith('verified 2 memories: 1 ok, 1 would reject')
    # A receipt the rules admit, but not as the memory is stored: a mismatch.
    lines, _ = _edited(good, 1, predicate='enjoys')
    edited.write_text(''.join(lines), encoding='utf-8')
    target.unlink()
    assert run(offline_tools.import_main, '--database', target, '--from', edited)[0] == 0
    assert run(offline_tools.verify_main, '--database', target)[1].splitlines()[0] == (
        'MEM1 MISMATCH predicate')


# memory_migrate 2 -> 3 --------------------------------------------------------------

def rows(path):
    conn = sqlite3.connect(path)
    try:
        return {table: conn.execute(f'SELECT * FROM {table} ORDER BY 1, 2').fetchall()
                for table in ('entities', 'aliases', 'memories', 'memory_links', 'payloads',
                              'sqlite_sequence')}
    finally:
        conn.close()


def test_the_store_refuses_a_version_2_file_naming_the_command(tmp_path):
    database = make_version_2_database(tmp_path / 'memory.sqlite3')
    before = database.read_bytes()
    with pytest.raises(schema.UnsupportedDatabaseError) as caught:
        MemoryStore.open(database)
    assert str(caught.value) == (
        'database has schema version 2, this node needs version 4; it was left unchanged: '
        f'stop the node and run: ros2 run mira_memory memory_migrate --database {database}')
    assert database.read_bytes() == before and os.listdir(tmp_path) == ['memory.sqlite3']


def test_migrate_turns_a_real_version_2_file_into_version_4(tmp_path):
    database = make_version_2_database(tmp_path / 'memory.sqlite3')
    original = rows(database)
    code, out, err = run(offline_tools.migrate_main, '--database', database)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f'migrating {database} from schema version 2 to 4'
    assert lines[1].startswith(f'backup: {database}.v2-backup-') and 'memories 4' in lines[1]
    assert lines[2] == ('migrated in one transaction: entities 3, aliases 1, memories 4, '
                        'links 5, payloads 4, receipts 0 (row counts unchanged; '
                        'integrity_check and foreign_key_check ok)')
    assert lines[3].startswith('receipts: none for the memories that existed before')
    assert lines[4].startswith('review: no refused proposal is pending yet')
    assert lines[5] == 'schema version: 4'
    backups = sorted(tmp_path.glob('memory.sqlite3.v2-backup-*'))
    assert len(backups) == 1 and schema.read_version(backups[0])[0] == 2
    assert rows(backups[0]) == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ['memory.sqlite3', backups[0].name]
    assert rows(database) == original
    assert dict(original['sqlite_sequence']) == SEQUENCES
    # Existing memories get no receipt: verify says so for the two active remembered ones.
    code, out, _ = run(offline_tools.verify_main, '--database', database)
    assert code == 1
    assert out.splitlines()[:2] == ['MEM4 NO RECEIPT', 'MEM5 NO RECEIPT']
    assert out.splitlines()[2].startswith('verified 2 memories: 0 ok, 0 would reject, '
                                          '2 no receipt')
    with MemoryStore.open(database, clock=fixed_clock) as store:
        assert store.schema_version == 4
        assert [m for m in MEMORY_IDS if store.get_receipt(m)] == []
        assert store.get_memory(2)[0].retired_reason == 'operator corrected it'
        # The forgotten MEM3 is not given again.
        assert store.add_memory(NewMemory(kind='fact', summary='z')).id == 6
        assert store.receipt_rules_counts(language.RULES_VERSION,
                                          language.rules_digest()) == (0, 2)
    code, out, _ = run(offline_tools.migrate_main, '--database', database)
    assert code == 0 and 'nothing to do' in out


def test_a_failed_migration_leaves_version_2(tmp_path, monkeypatch):
    database = make_version_2_database(tmp_path / 'memory.sqlite3')
    original = rows(database)

    def broken(conn):
        conn.execute('CREATE TABLE pending (x)')
        conn.execute('INSERT INTO memories (id) VALUES (NULL)')  # breaks NOT NULL
    monkeypatch.setattr(schema, '_add_v4_tables', broken)
    code, _, err = run(offline_tools.migrate_main, '--database', database)
    assert code == 1 and 'rolled back' in err
    assert schema.read_version(database)[0] == 2 and rows(database) == original


def test_verify_usage():
    assert run(offline_tools.verify_main)[0] == 2
    code, _, err = run(offline_tools.verify_main, '--database', '/x', 'ENT1')
    assert code == 2 and 'is not a memory id' in err
    code, _, err = run(offline_tools.verify_main, '--database', '/nonexistent/x')
    assert (code, err) == (1, 'error: no database at /nonexistent/x\n')


def test_a_version_2_export_imports_with_no_receipts(remembered, tmp_path):
    export = tmp_path / 'v3.jsonl'
    copies.export(str(remembered.path), str(export))
    records = [json.loads(line) for line in export.read_text().splitlines()]
    header = dict(records[0], schema_version=2)
    del header['counts']['receipts'], header['counts']['supersessions']
    old = [header] + [r for r in records[1:] if r['type'] != 'receipt']
    v2 = tmp_path / 'v2.jsonl'
    v2.write_text(''.join(json.dumps(r) + '\n' for r in old), encoding='utf-8')
    target = tmp_path / 'new.sqlite3'
    code, out, err = run(offline_tools.import_main, '--database', target, '--from', v2)
    assert code == 0, err
    assert 'receipts 0' in out
    assert collect(target)[0].no_receipt == 2
    # A receipt in a version 2 export is more than its header counted.
    v2.write_text(''.join(json.dumps(r) + '\n' for r in [header] + records[1:]),
                  encoding='utf-8')
    target.unlink()
    code, _, err = run(offline_tools.import_main, '--database', target, '--from', v2)
    assert code == 1 and 'truncated or padded' in err
