# SPDX-License-Identifier: Apache-2.0
"""Schema version 2 and 3 in the core: retire, forget, backup, export/import, memory_migrate."""

import io
import json
import os
import sqlite3
import sys

from conftest import fixed_clock
from helpers.admission_cases import context, FACT, FACT_CONTEXT
from helpers.raw_scan import raw_hits
from helpers.schema_v1 import make_version_1_database
from mira_memory.console import offline_tools
from mira_memory.core.admission.rules import admit
from mira_memory.core.archive import copies, export_format, export_layout
from mira_memory.core.store import BusyError, InvalidInputError, MemoryStore, NewMemory
from mira_memory.core.store import NotFoundError, schema, TargetExistsError
from mira_memory.simulation import processes
import pytest

# Distinctive strings for the raw-byte scans: one per stored field.
SECRET_NAME = 'Zorblatt Quennifer'
SECRET_ALIAS = 'Quenny Vexmarrow'
SECRET_SUMMARY = 'Zorblatt hides the plumbix key'
SECRET_VALUE = 'plumbix key under the gazebo'
SECRET_PAYLOAD_ONLY = 'Xyloquartz ledger'


def add_secret_entity(store):
    entity = store.add_entity('person', SECRET_NAME)
    store.add_alias(entity.id, SECRET_ALIAS)
    memory = store.add_memory(NewMemory(
        kind='fact', summary=SECRET_SUMMARY, links=((entity.id, 'subject'),),
        predicate='hides', value=SECRET_VALUE))
    store._connection.raw.execute(
        'INSERT INTO payloads (memory_id, storage, media_type, text_body, created_at)'
        " VALUES (?, 'inline', 'text/plain', ?, '2026-01-02T03:04:05Z')",
        (memory.id, SECRET_PAYLOAD_ONLY))
    return entity, memory


SECRETS = (SECRET_NAME, SECRET_ALIAS, SECRET_SUMMARY, SECRET_VALUE, SECRET_PAYLOAD_ONLY)


# Retire ------------------------------------------------------------------------------

@pytest.fixture
def ada(store):
    ada = store.add_entity('person', 'Ada')
    other = store.add_entity('person', 'Bob')
    first = store.add_memory(NewMemory(kind='fact', summary='Ada likes tea',
                                       links=((ada.id, 'subject'), (other.id, 'friend')),
                                       predicate='likes', value='tea'))
    return ada, other, first


def test_retire_keeps_the_memory_with_time_and_reason(store, ada):
    _, _, first = ada
    retired = store.retire_memory(first.id, '  wrong   drink ')
    assert (retired.status, retired.retired_at, retired.retired_reason) == (
        'retired', '2026-01-02T03:04:05Z', 'wrong drink')
    memory, payloads = store.get_memory(first.id)
    assert memory == retired and len(payloads) == 1
    assert store.counts()['memories'] == 1 and store.counts()['active_memories'] == 0


def test_retired_memories_leave_find_list_and_admission_slots(store, ada):
    entity, other, first = ada
    store.retire_memory(first.id, 'wrong')
    assert store.newest_active_memories(entity.id, 10) == ([], False)
    assert store.newest_active_memories(other.id, 10) == ([], False)
    views, _ = store.find_with_newest_memories('Ada', entity_limit=5, memory_limit=8)
    assert views[0][1] == []
    with store.write() as tx:
        assert tx.slot_memories(entity.id, 'likes') == []


def test_retiring_the_conflicting_memory_admits_the_correction(store):
    subject = store.add_entity('person', 'Ottoline Vexworth')
    wrong = store.add_memory(NewMemory(
        kind='fact', summary='Ottoline Vexworth drinks mint tea',
        links=((subject.id, 'subject'),), predicate='drinks', value='mint tea'))
    assert admit(store, FACT_CONTEXT, FACT, 'Kestrelbot').reason == 'conflict'
    store.retire_memory(wrong.id, 'the operator corrected it')
    result = admit(store, context(FACT_CONTEXT.utterance, 'turn-0051'), FACT, 'Kestrelbot')
    assert (result.status, result.outcome) == ('applied', 'created')
    assert store.get_memory(wrong.id)[0].status == 'retired'


@pytest.mark.parametrize('reason', ['', '   ', 'x\u0007y', 'r' * 501])
def test_retire_needs_a_short_clean_reason(store, ada, reason):
    with pytest.raises(InvalidInputError):
        store.retire_memory(ada[2].id, reason)
    assert store.get_memory(ada[2].id)[0].status == 'active'


def test_retire_twice_or_missing_is_refused(store, ada):
    store.retire_memory(ada[2].id, 'wrong')
    with pytest.raises(InvalidInputError, match='already retired'):
        store.retire_memory(ada[2].id, 'again')
    with pytest.raises(NotFoundError):
        store.retire_memory(999, 'wrong')


# Forget ------------------------------------------------------------------------------

def test_forget_without_apply_only_reports(store, ada):
    entity, _, first = ada
    before = store.counts()
    plan = store.forget_entity(entity.id, apply=False)
    assert (plan.applied, plan.memory_ids, plan.alias_count, plan.link_count,
            plan.payload_count) == (False, (first.id,), 0, 2, 1)
    assert store.counts() == before


def test_forget_memory_removes_it_with_links_and_payloads(store, ada):
    entity, other, first = ada
    plan = store.forget_memory(first.id, apply=True)
    assert plan.applied and plan.memory_ids == (first.id,)
    with pytest.raises(NotFoundError):
        store.get_memory(first.id)
    assert store.counts() == {'entities': 2, 'aliases': 0, 'memories': 0,
                              'active_memories': 0, 'links': 0, 'payloads': 0}


def test_forget_entity_removes_every_memory_linked_in_any_role(store, ada):
    entity, other, first = ada
    own = store.add_memory(NewMemory(kind='fact', summary='Bob is tall',
                                     links=((other.id, 'subject'),)))
    store.add_alias(other.id, 'Bobby')
    plan = store.forget_entity(other.id, apply=True)
    # first links Bob as 'friend', so it goes too, with its link to Ada.
    assert plan.memory_ids == (first.id, own.id) and plan.alias_count == 1
    assert store.counts() == {'entities': 1, 'aliases': 0, 'memories': 0,
                              'active_memories': 0, 'links': 0, 'payloads': 0}
    assert store.get_entity(entity.id).canonical_name == 'Ada'
    with pytest.raises(NotFoundError):
        store.get_entity(other.id)


def test_forgotten_ids_are_never_given_again(db_path):
    with MemoryStore.open(db_path, clock=fixed_clock) as store:
        entity = store.add_entity('person', 'Ada')
        memory = store.add_memory(NewMemory(kind='fact', summary='x',
                                            links=((entity.id, 'subject'),)))
        store.forget_entity(entity.id, apply=True)
    with MemoryStore.open(db_path, clock=fixed_clock) as store:
        again = store.add_entity('person', 'Ada')
        later = store.add_memory(NewMemory(kind='fact', summary='x',
                                           links=((again.id, 'subject'),)))
        assert again.id == entity.id + 1 and later.id == memory.id + 1
        assert store.get_memory(later.id)[1][0].id == 2


def test_forget_leaves_no_copy_of_the_text_in_any_database_file(db_path):
    store = MemoryStore.open(db_path, clock=fixed_clock)
    reader = store.open_reader()
    keep = store.add_entity('person', 'Ada')
    entity, memory = add_secret_entity(store)
    assert reader.find_entities(SECRET_ALIAS)
    assert raw_hits(db_path, SECRETS)
    store.forget_entity(entity.id, apply=True)
    assert reader.find_entities(SECRET_NAME) == []
    assert raw_hits(db_path, SECRETS) == []
    store.close()
    assert raw_hits(db_path, SECRETS) == []
    with MemoryStore.open(db_path) as reopened:
        assert reopened.get_entity(keep.id).canonical_name == 'Ada'


def test_forget_reports_busy_when_a_reader_pins_the_wal(db_path, monkeypatch):
    # Each truncation attempt waits out the store's lock wait for the reader
    # (5 s in the product); what forget answers after the last one is tested.
    monkeypatch.setattr('mira_memory.core.store.transaction.WAL_TRUNCATE_ATTEMPTS', 2)
    monkeypatch.setattr('mira_memory.core.store.transaction.LOCK_WAIT_S', 0.1)
    with MemoryStore.open(db_path) as store:
        entity = store.add_entity('person', 'Ada')
        other = sqlite3.connect(db_path, isolation_level=None)
        try:
            other.execute('BEGIN')
            other.execute('SELECT count(*) FROM entities').fetchone()
            store.add_entity('person', 'Bob')
            with pytest.raises(BusyError, match='run the forget again'):
                store.forget_entity(entity.id, apply=True)
            other.execute('COMMIT')
        finally:
            other.close()
        with pytest.raises(NotFoundError):
            store.get_entity(entity.id)


# Backup ------------------------------------------------------------------------------

def test_backup_is_a_verified_single_file_copy(store, ada, tmp_path):
    store.retire_memory(ada[2].id, 'wrong')
    target = tmp_path / 'copy.sqlite3'
    result = copies.backup(str(store.path), str(target))
    assert result['counts']['memories'] == 1 and result['bytes'] == target.stat().st_size
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith('copy')] == [
        'copy.sqlite3']
    with MemoryStore.open(target) as copy:
        assert copy.get_memory(ada[2].id)[0].retired_reason == 'wrong'
        assert copy.counts() == store.counts()


def test_backup_never_replaces_a_file_without_force(store, tmp_path):
    target = tmp_path / 'copy.sqlite3'
    target.write_text('precious')
    with pytest.raises(TargetExistsError, match='--force'):
        copies.backup(str(store.path), str(target))
    assert target.read_text() == 'precious'
    copies.backup(str(store.path), str(target), force=True)
    assert target.read_bytes().startswith(b'SQLite format 3\x00')


@pytest.mark.parametrize('target', ['relative.sqlite3', '', '/nonexistent-dir/x.sqlite3'])
def test_backup_refuses_bad_targets(store, target):
    with pytest.raises(InvalidInputError):
        copies.backup(str(store.path), target)


@pytest.mark.parametrize('copy', [copies.backup, copies.export])
@pytest.mark.parametrize('force', [False, True])
@pytest.mark.parametrize('suffix', ['', '-wal', '-shm', '-journal'])
def test_copies_refuse_the_database_itself_and_never_offer_force(store, copy, force, suffix):
    before = store.path.read_bytes()
    with pytest.raises(InvalidInputError,
                       match='^the target is the database itself or one of its files$'):
        copy(str(store.path), str(store.path) + suffix, force=force)
    assert store.path.read_bytes() == before


def test_backup_is_the_snapshot_of_its_start_while_the_store_keeps_writing(store, ada, tmp_path):
    """The node writes while a backup runs: the copy is the snapshot taken when it began."""
    before = store.counts()
    written = []

    def write_during_the_copy(progress):
        if not written:
            written.append(store.add_memory(NewMemory(
                kind='fact', summary='Ada writes notes', links=((ada[0].id, 'subject'),))))

    target = tmp_path / 'copy.sqlite3'
    result = copies.backup(str(store.path), str(target), pages=1,
                           progress=write_during_the_copy)
    assert written and store.counts()['memories'] == before['memories'] + 1
    assert result['counts']['memories'] == before['memories']
    with MemoryStore.open(target) as copy:
        assert copy.counts() == before


class StopAfter:
    """should_stop that answers True from its nth question on."""

    def __init__(self, n):
        self.asked, self.n = 0, n

    def __call__(self):
        self.asked += 1
        return self.asked >= self.n


@pytest.mark.parametrize('n', [1, 3])
def test_a_stopped_backup_writes_nothing(store, ada, tmp_path, n):
    target = tmp_path / 'copy.sqlite3'
    stop = StopAfter(n)
    with pytest.raises(copies.CopyStoppedError, match='^backup stopped before it was complete'):
        copies.backup(str(store.path), str(target), pages=1, should_stop=stop)
    assert stop.asked == n
    assert [path.name for path in tmp_path.iterdir() if 'copy' in path.name] == []


def test_a_stopped_export_writes_nothing(store, ada, tmp_path):
    target = tmp_path / 'memory.jsonl'
    with pytest.raises(copies.CopyStoppedError, match='^export stopped before it was complete'):
        copies.export(str(store.path), str(target), should_stop=StopAfter(1))
    assert [path.name for path in tmp_path.iterdir() if 'memory.jsonl' in path.name] == []


# Export and import -------------------------------------------------------------------

@pytest.fixture
def full_store(store):
    ada = store.add_entity('person', 'Ada Lovelace')
    mira = store.add_entity('robot', 'Mira')
    store.add_alias(ada.id, 'Ada')
    store.add_alias(ada.id, 'Countess ☃')
    first = store.add_memory(NewMemory(kind='fact', summary='Ada likes tea',
                                       links=((ada.id, 'subject'),), predicate='likes',
                                       value='tea', confidence=0.3))
    store.add_memory(NewMemory(kind='relationship', summary='Ada knows Mira',
                               links=((ada.id, 'subject'), (mira.id, 'related')),
                               predicate='knows', value='Mira', source_label='ep/t1'))
    newest = store.add_memory(NewMemory(kind='event', summary='Ada visited',
                                        links=((ada.id, 'subject'),)))
    store.retire_memory(first.id, 'she prefers coffee')
    store.forget_memory(newest.id, apply=True)
    return store


def import_into(database, source):
    out, err = io.StringIO(), io.StringIO()
    code = offline_tools.import_main(['--database', str(database), '--from', str(source)],
                                     stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_export_import_export_is_byte_identical_and_keeps_ids(full_store, tmp_path):
    first = tmp_path / 'one.jsonl'
    copies.export(str(full_store.path), str(first))
    code, out, err = import_into(tmp_path / 'new.sqlite3', first)
    assert code == 0, err
    assert 'memories 2' in out and 'schema version: 4' in out
    second = tmp_path / 'two.jsonl'
    copies.export(str(tmp_path / 'new.sqlite3'), str(second))
    assert first.read_bytes() == second.read_bytes()
    header = json.loads(first.read_text().splitlines()[0])
    assert header['schema_version'] == 4
    assert header['sequences']['memories'] == 3
    with MemoryStore.open(tmp_path / 'new.sqlite3') as imported:
        # MEM3 was forgotten before the export; the import does not give it again.
        assert imported.add_memory(NewMemory(kind='fact', summary='y')).id == 4
        assert imported.get_memory(1)[0].retired_reason == 'she prefers coffee'
        assert [e.id for e in imported.find_entities('Countess ☃')] == [1]


def test_export_is_deterministic_and_in_id_order(full_store, tmp_path):
    copies.export(str(full_store.path), str(tmp_path / 'a.jsonl'))
    copies.export(str(full_store.path), str(tmp_path / 'b.jsonl'))
    assert (tmp_path / 'a.jsonl').read_bytes() == (tmp_path / 'b.jsonl').read_bytes()
    types = [json.loads(line)['type'] for line in (tmp_path / 'a.jsonl').read_text().splitlines()]
    assert types == ['header', 'entity', 'entity', 'alias', 'alias', 'memory', 'memory',
                     'link', 'link', 'link', 'payload', 'payload']


def _lines(path):
    return path.read_text(encoding='utf-8').splitlines(keepends=True)


def _edit(lines, index, **changes):
    record = json.loads(lines[index])
    record.update(changes)
    return lines[:index] + [json.dumps(record, ensure_ascii=False) + '\n'] + lines[index + 1:]


BAD_EXPORTS = {
    # name: (edit of the 12 lines, line number named in the refusal)
    'truncated_line': (lambda lines: lines[:-1] + [lines[-1][:20]], 12),
    'missing_lines': (lambda lines: lines[:-2], 11),
    'wrong_version': (lambda lines: _edit(lines, 0, schema_version=1), 1),
    'not_an_export': (lambda lines: ['hello\n'] + lines[1:], 1),
    'broken_reference': (lambda lines: _edit(lines, 7, memory_id=99), 8),
    'alias_of_missing_entity': (lambda lines: _edit(lines, 3, entity_id=7), 4),
    'duplicate_id': (lambda lines: lines[:2] + [lines[1]] + lines[2:], 3),
    'out_of_order': (lambda lines: lines[:1] + [lines[2], lines[1]] + lines[3:], 3),
    'unnormalized_name': (lambda lines: _edit(lines, 1, canonical_name='  Ada  Lovelace'), 2),
    'bad_kind': (lambda lines: _edit(lines, 5, kind='rumour'), 6),
    'retired_without_reason': (lambda lines: _edit(lines, 5, retired_reason=None), 6),
    'not_json': (lambda lines: lines[:4] + ['{"type": \n'] + lines[5:], 5),
    'section_order': (lambda lines: lines[:3] + [lines[5]] + lines[3:5] + lines[6:], 5),
    # Imported as the text "5" before the records were pydantic models.
    'numeric_payload_text': (lambda lines: _edit(lines, 10, text=5), 11),
    'created_at_not_text': (lambda lines: _edit(lines, 1, created_at=20260102), 2),
    'extra_field': (lambda lines: _edit(lines, 3, note='x'), 4),
}


@pytest.mark.parametrize('name', sorted(BAD_EXPORTS))
def test_bad_export_is_refused_with_its_line_and_nothing_written(full_store, tmp_path, name):
    good = tmp_path / 'good.jsonl'
    copies.export(str(full_store.path), str(good))
    edit, line = BAD_EXPORTS[name]
    bad = tmp_path / 'bad.jsonl'
    bad.write_text(''.join(edit(_lines(good))), encoding='utf-8')
    target = tmp_path / 'new.sqlite3'
    code, out, err = import_into(target, bad)
    assert code == 1 and out == ''
    assert err.count('\n') == 1 and f'line {line}:' in err, err
    assert 'nothing was written' in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ['bad.jsonl', 'good.jsonl',
                                                          'memory.sqlite3',
                                                          'memory.sqlite3-shm',
                                                          'memory.sqlite3-wal']


@pytest.mark.parametrize('index, changes, message', [
    (10, {'text': 5}, 'line 11: payload text must be text'),
    (1, {'id': 0}, 'line 2: entity id must be a positive integer'),
    (7, {'memory_id': '1'}, 'line 8: link memory_id must be a positive integer'),
    (5, {'retired_at': 7}, 'line 6: memory retired_at must be text'),
    (1, {'created_at': None}, 'line 2: entity created_at must not be null'),
    (3, {'note': 'x'}, 'line 4: alias record must have exactly the fields alias, created_at, '
                       'entity_id, id, type'),
])
def test_a_malformed_record_is_one_line_naming_its_type_and_field(
        full_store, tmp_path, index, changes, message):
    good = tmp_path / 'good.jsonl'
    copies.export(str(full_store.path), str(good))
    bad = tmp_path / 'bad.jsonl'
    bad.write_text(''.join(_edit(_lines(good), index, **changes)), encoding='utf-8')
    code, _, err = import_into(tmp_path / 'new.sqlite3', bad)
    assert code == 1 and err == f'error: {bad}: {message}; nothing was written\n'


def test_record_models_have_exactly_the_exported_fields():
    # Export writes RECORD_FIELDS; import checks the models: the two must not drift.
    for kind, model in export_format._RECORD_MODELS.items():
        assert tuple(model.__fields__) == ('type', *export_layout.RECORD_FIELDS[kind])


def test_import_refuses_a_database_that_is_not_empty(full_store, tmp_path):
    export = tmp_path / 'e.jsonl'
    copies.export(str(full_store.path), str(export))
    before = full_store.path.read_bytes()
    code, _, err = import_into(full_store.path, export)
    assert code == 1 and 'not empty' in err
    assert full_store.path.read_bytes() == before


def test_import_into_an_empty_existing_file_keeps_it_empty_on_refusal(tmp_path):
    target = tmp_path / 'new.sqlite3'
    target.write_bytes(b'')
    bad = tmp_path / 'bad.jsonl'
    bad.write_text('{"type": "header"}\n')
    code, _, err = import_into(target, bad)
    assert code == 1 and 'line 1:' in err
    assert target.read_bytes() == b''
    assert sorted(os.listdir(tmp_path)) == ['bad.jsonl', 'new.sqlite3']


def test_import_usage_errors_exit_2(tmp_path):
    err = io.StringIO()
    assert offline_tools.import_main(['--database', str(tmp_path / 'x')], stderr=err) == 2
    assert 'usage error' in err.getvalue()


# memory_migrate ----------------------------------------------------------------------

def migrate(path):
    out, err = io.StringIO(), io.StringIO()
    code = offline_tools.migrate_main(['--database', str(path)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# The tables of version 1 (every later one added tables).
V1_TABLES = ('entities', 'aliases', 'memories', 'memory_links', 'payloads')


def test_migrate_turns_a_real_version_1_file_into_version_4(tmp_path):
    database = make_version_1_database(tmp_path / 'memory.sqlite3')
    conn = sqlite3.connect(database)
    v1_rows = {table: conn.execute('SELECT * FROM %s ORDER BY 1, 2' % table).fetchall()
               for table in V1_TABLES}
    conn.close()
    code, out, err = migrate(database)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f'migrating {database} from schema version 1 to 4'
    assert lines[1].startswith(f'backup: {database}.v1-backup-')
    assert 'memories 2' in lines[2] and 'integrity_check' in lines[2]
    assert lines[3].startswith('receipts: none for the memories that existed before')
    assert lines[4].startswith('review: no refused proposal is pending yet')
    assert lines[5] == 'schema version: 4'
    backups = sorted(tmp_path.glob('memory.sqlite3.v1-backup-*'))
    assert len(backups) == 1
    assert schema.read_version(backups[0])[0] == 1
    # No -wal or -shm stays behind: the file stands alone, like a stopped node's.
    assert sorted(p.name for p in tmp_path.iterdir()) == ['memory.sqlite3', backups[0].name]
    with MemoryStore.open(database, clock=fixed_clock) as store:
        assert store.schema_version == 4
        assert store._connection.raw.execute('SELECT count(*) FROM receipts').fetchone() == (0,)
        assert store.pending_items(10) == ([], (0, 0, 0))
        for table in V1_TABLES:
            rows = store._connection.raw.execute(
                'SELECT * FROM %s ORDER BY 1, 2' % table).fetchall()
            if table == 'memories':
                rows = [row[:-2] for row in rows]
                assert all(row[-2:] == (None, None) for row in store._connection.raw.execute(
                    'SELECT * FROM memories'))
            assert rows == v1_rows[table], table
        # Ids continue after the largest migrated one and are never reused.
        store.forget_memory(2, apply=True)
        assert store.add_memory(NewMemory(kind='fact', summary='z')).id == 3
        store.retire_memory(1, 'migrated and retired')
    code, out, _ = migrate(database)
    assert code == 0 and 'nothing to do' in out


def test_migrate_refuses_a_database_another_process_owns(tmp_path, tmp_path_factory):
    # The memory node takes this lock when it opens the database;
    # a separate process holding the same claim stands in for it here, and
    # test_lifecycle_node.py checks the real node once it claims.
    database = make_version_1_database(tmp_path / 'memory.sqlite3')
    before = database.read_bytes()
    holder = processes.Process(
        [sys.executable, '-c',
         'import signal, sys\nfrom mira_memory.core.store import ownership\n'
         'held = ownership.claim(sys.argv[1], create=False)\n'
         'signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n'
         'print("held", flush=True)\nsignal.sigwait({signal.SIGINT})\n', str(database)],
        tmp_path_factory.mktemp('holder') / 'holder.log', name='claim holder')
    try:
        holder.wait_ready('held', timeout=60)
        code, out, err = migrate(database)
    finally:
        holder.stop()
    assert code == 1 and out == ''
    assert f'owned by process {holder.pid}' in err and 'stop the memory node first' in err
    assert err.count('\n') == 1
    assert database.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ['memory.sqlite3']


@pytest.mark.parametrize('content, message', [
    (b'not a database at all, just text\n' * 40, 'not a usable SQLite database'),
    (None, 'no database at'),
])
def test_migrate_refuses_what_is_not_version_1(tmp_path, content, message):
    database = tmp_path / 'memory.sqlite3'
    if content is not None:
        database.write_bytes(content)
    code, _, err = migrate(database)
    assert code == 1 and message in err, err
    assert not list(tmp_path.glob('*backup*'))


def test_migrate_usage_errors_exit_2():
    err = io.StringIO()
    assert offline_tools.migrate_main([], stderr=err) == 2
    assert 'usage error' in err.getvalue()


def test_offline_tools_have_help(capsys):
    for main in (offline_tools.migrate_main, offline_tools.import_main):
        assert main(['--help']) == 0
        assert 'exit codes: 0' in capsys.readouterr().out.replace('\n', ' ')
