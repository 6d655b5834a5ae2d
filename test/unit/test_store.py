# SPDX-License-Identifier: Apache-2.0
"""Tests of the SQLite memory store against real files in tmp_path."""

import datetime
import hashlib
import os
import random
import sqlite3

from conftest import FIXED_CREATED_AT
from helpers.schema_v1 import make_version_1_database
from helpers.schema_v2 import make_version_2_database
from mira_memory.core.admission.normalize import normalize_key
from mira_memory.core.store import BackendError, DuplicateAliasError, format_entity_id
from mira_memory.core.store import format_memory_id, InvalidInputError, MEDIA_TYPE_TEXT
from mira_memory.core.store import MemoryStore, NewMemory, NotFoundError, parse_entity_id
from mira_memory.core.store import parse_memory_id, reads, SOURCE_CONSOLE, transaction, writes
from mira_memory.core.store import SOURCE_OPERATOR_STATEMENT, StoreError, UnsupportedDatabaseError
from mira_memory.core.store.schema import SCHEMA_VERSION
import pytest

EMPTY_COUNTS = {
    'entities': 0, 'aliases': 0, 'memories': 0, 'active_memories': 0, 'links': 0,
    'payloads': 0,
}


@pytest.fixture
def mira(store):
    return store.add_entity('robot', 'Mira')


@pytest.fixture
def ada(store):
    return store.add_entity('person', 'Ada Lovelace')


def sha256_of(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fact(subject_id, summary='Mira likes tea', predicate='likes', value='tea', **extra):
    return NewMemory(kind='fact', summary=summary, links=((subject_id, 'subject'),),
                     predicate=predicate, value=value, **extra)


def table_names(path):
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def user_version(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute('PRAGMA user_version').fetchone()[0]
    finally:
        conn.close()


# Schema and lifecycle

def test_new_database_records_schema_version_4(store, db_path):
    assert store.schema_version == SCHEMA_VERSION == 4
    assert user_version(db_path) == 4


def test_new_database_has_the_normalized_tables(store, db_path):
    assert {'entities', 'aliases', 'memories', 'memory_links', 'payloads', 'receipts',
            'supersessions', 'pending', 'pending_closed', 'pending_counts'} <= table_names(
        db_path)


def test_store_path_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with MemoryStore.open('relative.sqlite3') as opened:
        assert opened.path == tmp_path / 'relative.sqlite3'
        assert opened.path.is_absolute()


def test_existing_version_4_database_reopens(db_path):
    MemoryStore.open(db_path).close()
    with MemoryStore.open(db_path) as reopened:
        assert reopened.schema_version == 4


def test_zero_byte_file_is_initialized_as_new_database(db_path):
    db_path.write_bytes(b'')
    with MemoryStore.open(db_path) as opened:
        assert opened.counts() == EMPTY_COUNTS
    assert user_version(db_path) == 4


def test_unversioned_database_without_schema_objects_is_initialized(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute('CREATE TABLE scratch (x)')
    conn.execute('DROP TABLE scratch')
    conn.close()
    assert db_path.stat().st_size > 0
    with MemoryStore.open(db_path) as opened:
        assert opened.schema_version == 4


def _unversioned_with_table(path):
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE notes (body TEXT)')
    conn.close()


def _unversioned_with_data(path):
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE notes (body TEXT)')
    conn.execute("INSERT INTO notes VALUES ('hello')")
    conn.commit()
    conn.close()


def _newer_version(path):
    MemoryStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute('PRAGMA journal_mode = DELETE')
    conn.execute('PRAGMA user_version = 5')
    conn.close()


def _version_2_without_tables(path):
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE entities (id INTEGER PRIMARY KEY)')
    conn.execute('PRAGMA user_version = 2')
    conn.close()


def _version_1(path):
    # A real version 1 file, as the previous code wrote it (WAL mode).
    make_version_1_database(path)


def _version_2(path):
    # A real version 2 file, with memories.
    make_version_2_database(path)


def _text_file(path):
    path.write_text('this is not a database\n' * 10, encoding='utf-8')


def _random_bytes(path):
    path.write_bytes(random.Random(1234).randbytes(8192))


UNSUPPORTED_FILES = [
    _unversioned_with_table, _unversioned_with_data, _newer_version,
    _version_2_without_tables, _version_1, _version_2, _text_file, _random_bytes,
]


@pytest.mark.parametrize('make_file', UNSUPPORTED_FILES)
def test_unsupported_file_raises_unsupported_database(db_path, make_file):
    make_file(db_path)
    with pytest.raises(UnsupportedDatabaseError):
        MemoryStore.open(db_path)


@pytest.mark.parametrize('make_file', UNSUPPORTED_FILES)
def test_unsupported_file_is_left_byte_for_byte_unchanged(db_path, make_file):
    make_file(db_path)
    before = sha256_of(db_path)
    with pytest.raises(UnsupportedDatabaseError):
        MemoryStore.open(db_path)
    assert sha256_of(db_path) == before


@pytest.mark.parametrize('make_file', UNSUPPORTED_FILES)
def test_unsupported_file_gets_no_side_files(db_path, make_file):
    make_file(db_path)
    before = sorted(os.listdir(db_path.parent))
    with pytest.raises(UnsupportedDatabaseError):
        MemoryStore.open(db_path)
    assert sorted(os.listdir(db_path.parent)) == before


def test_unsupported_error_code_is_stable(db_path):
    _text_file(db_path)
    with pytest.raises(UnsupportedDatabaseError) as caught:
        MemoryStore.open(db_path)
    assert caught.value.code == 'unsupported_database'


def test_directory_path_is_rejected(tmp_path):
    with pytest.raises(UnsupportedDatabaseError):
        MemoryStore.open(tmp_path)


def test_missing_parent_without_create_parent_fails_and_creates_nothing(tmp_path):
    path = tmp_path / 'absent' / 'memory.sqlite3'
    with pytest.raises(InvalidInputError, match='does not exist'):
        MemoryStore.open(path)
    assert not path.parent.exists()


def test_missing_parent_is_created_with_create_parent(tmp_path):
    path = tmp_path / 'absent' / 'nested' / 'memory.sqlite3'
    with MemoryStore.open(path, create_parent=True) as opened:
        assert opened.schema_version == 4
    assert path.is_file()


def test_close_is_idempotent(store):
    store.close()
    store.close()
    assert store.closed


@pytest.mark.parametrize('operation', [
    lambda s: s.add_entity('robot', 'Mira'),
    lambda s: s.add_alias(1, 'M'),
    lambda s: s.add_memory(NewMemory('event', 'It rained')),
    lambda s: s.find_entities('Mira'),
    lambda s: s.get_entity(1),
    lambda s: s.get_memory(1),
    lambda s: s.newest_active_memories(1, 8),
    lambda s: s.counts(),
    lambda s: s.open_reader(),
    lambda s: s.write().__enter__(),
])
def test_operations_after_close_raise_store_closed(store, operation):
    store.close()
    with pytest.raises(StoreError, match='store is closed'):
        operation(store)


def test_closing_the_store_closes_its_readers(store):
    reader = store.open_reader()
    store.close()
    with pytest.raises(StoreError, match='store is closed'):
        reader.counts()


# Pragmas and connections

def test_owner_connection_pragmas_read_back_after_reopen(db_path):
    MemoryStore.open(db_path).close()
    with MemoryStore.open(db_path) as reopened:
        conn = reopened._connection.raw
        assert conn.execute('PRAGMA foreign_keys').fetchone()[0] == 1
        assert conn.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
        assert conn.execute('PRAGMA synchronous').fetchone()[0] == 2


def test_wal_mode_is_persisted_in_the_file(store, db_path):
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
    finally:
        conn.close()


def test_foreign_keys_are_enforced_on_the_owner_connection(store):
    with pytest.raises(sqlite3.IntegrityError):
        store._connection.raw.execute(
            "INSERT INTO memory_links (memory_id, entity_id, role) VALUES (99, 99, 'x')")


def test_pragma_that_does_not_take_raises_backend_error(db_path):
    conn = sqlite3.connect(db_path)
    try:
        with pytest.raises(BackendError, match='did not take effect'):
            transaction.set_pragma(conn, 'user_version', 5, 6)
    finally:
        conn.close()


def test_reader_connection_pragmas(store):
    reader = store.open_reader()
    assert reader._connection.raw.execute('PRAGMA query_only').fetchone()[0] == 1
    assert reader._connection.raw.execute('PRAGMA foreign_keys').fetchone()[0] == 1


def test_reader_connection_cannot_insert(store):
    reader = store.open_reader()
    with pytest.raises(sqlite3.OperationalError):
        reader._connection.raw.execute(
            'INSERT INTO entities (entity_type, canonical_name, name_key, created_at)'
            " VALUES ('robot', 'X', 'x', '2026-01-01T00:00:00Z')")
    assert store.counts()['entities'] == 0


def test_reader_sees_writes_committed_after_it_opened(store):
    reader = store.open_reader()
    entity = store.add_entity('robot', 'Mira')
    assert reader.find_entities('mira') == [entity]


def test_closing_a_reader_leaves_the_store_open(store):
    store.open_reader().close()
    assert store.counts() == EMPTY_COUNTS


# Timestamps and identifiers

def test_timestamps_are_utc_iso_8601_from_the_injected_clock(db_path):
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    with MemoryStore.open(db_path, clock=lambda: datetime.datetime(
            2026, 1, 2, 3, 4, 5, 999, tzinfo=plus_two)) as opened:
        entity = opened.add_entity('robot', 'Mira')
        memory = opened.add_memory(fact(entity.id))
    assert memory.created_at == '2026-01-02T01:04:05Z'


def test_naive_clock_is_rejected_and_writes_nothing(db_path):
    with MemoryStore.open(db_path, clock=lambda: datetime.datetime(2026, 1, 1)) as opened:
        with pytest.raises(BackendError, match='timezone-aware'):
            opened.add_entity('robot', 'Mira')
        assert opened.counts() == EMPTY_COUNTS


def test_ids_render_as_ent_and_mem():
    assert format_entity_id(12) == 'ENT12'
    assert format_memory_id(7) == 'MEM7'


def test_ids_parse_back():
    assert parse_entity_id('ENT12') == 12
    assert parse_memory_id('MEM7') == 7


@pytest.mark.parametrize('text', [
    'ENTx', 'ENT-1', 'ent1', 'ENT0', 'ENT01', 'ENT 1', ' ENT1', 'ENT1\n', 'MEM1', '', None])
def test_malformed_entity_ids_are_rejected(text):
    with pytest.raises(InvalidInputError):
        parse_entity_id(text)


@pytest.mark.parametrize('text', ['MEMx', 'MEM-1', 'mem1', 'MEM0', 'ENT1', 'MEM1.0'])
def test_malformed_memory_ids_are_rejected(text):
    with pytest.raises(InvalidInputError):
        parse_memory_id(text)


def test_ids_continue_after_close_and_reopen(db_path):
    with MemoryStore.open(db_path) as first:
        mira = first.add_entity('robot', 'Mira')
        first.add_entity('person', 'Ada')
        memory = first.add_memory(fact(mira.id))
    with MemoryStore.open(db_path) as second:
        assert second.find_entities('Mira') == [mira]
        assert second.get_memory(memory.id)[0] == memory
        assert second.add_entity('place', 'Lab').id == 3
        assert second.add_memory(fact(mira.id, value='coffee')).id == memory.id + 1


# Entities and aliases

def test_add_entity_stores_display_form_and_token_type(store):
    entity = store.add_entity('Ｒｏｂｏｔ', '  Ｍｉｒａ   Unit ')
    assert (entity.entity_type, entity.canonical_name) == ('robot', 'Mira Unit')


def test_add_alias_returns_entity_with_all_aliases_in_order(store, mira):
    store.add_alias(mira.id, 'the robot')
    assert store.add_alias(mira.id, 'M') == store.get_entity(mira.id)
    assert store.get_entity(mira.id).aliases == ('the robot', 'M')


@pytest.mark.parametrize('variant', [
    'ada lovelace', 'ADA LOVELACE', '  Ada   Lovelace ', 'Ａｄａ Ｌｏｖｅｌａｃｅ',
    'Ada\u3000Lovelace', 'ada\u00a0lovelace'])
def test_canonical_name_variants_resolve_to_the_same_entity(store, ada, variant):
    assert store.find_entities(variant) == [ada]


@pytest.mark.parametrize('variant', ['the countess', 'THE  COUNTESS', 'ｔｈｅ Ｃｏｕｎｔｅｓｓ'])
def test_alias_variants_resolve_to_the_same_entity(store, ada, variant):
    entity = store.add_alias(ada.id, 'The Countess')
    assert store.find_entities(variant) == [entity]


@pytest.mark.parametrize('near_miss', [
    'Ada', 'Lovelace', 'Ada Lovelac', 'Ada Lovelace Jr', 'Adda Lovelace', 'AdaLovelace',
    'Countess'])
def test_prefixes_substrings_and_typos_do_not_resolve(store, ada, near_miss):
    store.add_alias(ada.id, 'The Countess')
    assert store.find_entities(near_miss) == []


def test_ambiguous_name_returns_every_match_in_id_order(store):
    first = store.add_entity('person', 'Sam')
    second = store.add_entity('person', 'Samantha')
    store.add_entity('person', 'Other')
    third = store.add_entity('dog', 'SAM')
    second = store.add_alias(second.id, 'sam')
    assert store.find_entities('sam') == [first, second, third]


def test_entity_matching_by_name_and_alias_is_returned_once(store):
    a = store.add_entity('person', 'Sam')
    b = store.add_entity('person', 'Samuel')
    b = store.add_alias(b.id, 'Sam ')  # same key as a's name: allowed on another entity
    store.add_alias(a.id, 'Sammy')
    assert [e.id for e in store.find_entities('SAM')] == [a.id, b.id]


def test_find_limit_caps_rows(store):
    ids = [store.add_entity('person', 'Sam').id for _ in range(3)]
    assert [e.id for e in store.find_entities('sam', limit=2)] == ids[:2]


def test_find_without_aliases_leaves_aliases_empty(store, mira):
    store.add_alias(mira.id, 'M')
    assert store.find_entities('mira', with_aliases=False)[0].aliases == ()


@pytest.mark.parametrize('name', ['', '   ', 'Mi\nra', 'a\tb', 'x\x00', 'x' * 257, None])
def test_invalid_find_name_is_rejected(store, name):
    with pytest.raises(InvalidInputError):
        store.find_entities(name)


@pytest.mark.parametrize('name', ['', '  ', 'Mi\nra', 'Mi\x07ra', 'x' * 257])
def test_invalid_canonical_name_writes_nothing(store, name):
    with pytest.raises(InvalidInputError):
        store.add_entity('robot', name)
    assert store.counts() == EMPTY_COUNTS


@pytest.mark.parametrize('entity_type', ['', 'two words', '1robot', 'ro-bot'])
def test_invalid_entity_type_writes_nothing(store, entity_type):
    with pytest.raises(InvalidInputError):
        store.add_entity(entity_type, 'Mira')
    assert store.counts() == EMPTY_COUNTS


@pytest.mark.parametrize('duplicate', ['the robot', 'The Robot', 'ＴＨＥ  ｒｏｂｏｔ'])
def test_duplicate_alias_is_rejected_and_writes_nothing(store, mira, duplicate):
    store.add_alias(mira.id, 'the robot')
    before = store.counts()
    with pytest.raises(DuplicateAliasError):
        store.add_alias(mira.id, duplicate)
    assert store.counts() == before


def test_alias_equal_to_canonical_name_is_a_duplicate(store, mira):
    with pytest.raises(DuplicateAliasError):
        store.add_alias(mira.id, 'MIRA')
    assert store.counts()['aliases'] == 0


def test_alias_of_missing_entity_is_not_found(store):
    with pytest.raises(NotFoundError):
        store.add_alias(5, 'ghost')


@pytest.mark.parametrize('alias', ['', 'a\nb', 'x' * 257])
def test_invalid_alias_writes_nothing(store, mira, alias):
    with pytest.raises(InvalidInputError):
        store.add_alias(mira.id, alias)
    assert store.counts()['aliases'] == 0


def test_get_entity_of_missing_id_is_not_found(store):
    with pytest.raises(NotFoundError, match='ENT3'):
        store.get_entity(3)


@pytest.mark.parametrize('bad_id', [0, -1, True, '1', 1.0])
def test_get_entity_with_invalid_id_is_invalid_input(store, bad_id):
    with pytest.raises(InvalidInputError):
        store.get_entity(bad_id)


# Manual memory writes

def test_manual_write_creates_exactly_one_inline_text_payload_of_the_summary(store, mira):
    memory = store.add_memory(fact(mira.id, summary='  Mira   likes ｔｅａ '))
    _, payloads = store.get_memory(memory.id)
    assert len(payloads) == 1
    payload = payloads[0]
    assert (payload.storage, payload.media_type, payload.text) == (
        'inline', MEDIA_TYPE_TEXT, 'Mira likes tea')
    assert (payload.object_ref, payload.sha256) == (None, None)


def test_manual_write_returns_the_stored_memory(store, mira):
    memory = store.add_memory(fact(mira.id, confidence=0.75, source_label='notebook'))
    assert store.get_memory(memory.id)[0] == memory
    assert (memory.kind, memory.summary, memory.predicate, memory.value) == (
        'fact', 'Mira likes tea', 'likes', 'tea')
    assert (memory.source_kind, memory.source_label, memory.confidence, memory.status) == (
        SOURCE_CONSOLE, 'notebook', 0.75, 'active')
    assert memory.created_at == FIXED_CREATED_AT


def test_memory_carries_the_normalized_value_key(store, mira):
    memory = store.add_memory(fact(mira.id, value='  Green　TEA '))
    assert (memory.value, memory.value_key) == ('Green TEA', normalize_key('green tea'))


def test_memory_without_predicate_value_or_links_is_allowed(store):
    memory = store.add_memory(NewMemory(kind='event', summary='It rained'))
    assert (memory.predicate, memory.value, memory.links) == (None, None, ())


def test_manual_write_rejects_operator_statement_source(store, mira):
    with pytest.raises(InvalidInputError, match='reserved'):
        store.add_memory(fact(mira.id, source_kind='Operator_Statement'))
    assert store.counts()['memories'] == 0


def test_link_to_missing_entity_between_valid_links_writes_nothing(store, mira, ada):
    before = store.counts()
    new = NewMemory(kind='relationship', summary='Mira knows Ada',
                    links=((mira.id, 'subject'), (99, 'witness'), (ada.id, 'object')))
    with pytest.raises(NotFoundError, match='ENT99'):
        store.add_memory(new)
    assert store.counts() == before


def _fail_payload_inserts(path):
    conn = sqlite3.connect(path)
    conn.execute('CREATE TRIGGER fail_payload BEFORE INSERT ON payloads'
                 " BEGIN SELECT RAISE(ABORT, 'injected payload failure'); END")
    conn.commit()
    conn.close()


def test_failure_after_memory_and_links_rolls_back_everything(store, db_path, mira):
    _fail_payload_inserts(db_path)
    before = store.counts()
    with pytest.raises(BackendError, match='injected payload failure'):
        store.add_memory(fact(mira.id))
    assert store.counts() == before


@pytest.mark.parametrize('confidence', [1.5, -0.1, float('nan'), float('inf'), True, '0.5'])
def test_invalid_confidence_writes_nothing(store, mira, confidence):
    with pytest.raises(InvalidInputError):
        store.add_memory(fact(mira.id, confidence=confidence))
    assert store.counts()['memories'] == 0


@pytest.mark.parametrize('confidence', [0, 0.0, 1, 1.0])
def test_boundary_confidence_is_stored_as_float(store, mira, confidence):
    memory = store.add_memory(fact(mira.id, confidence=confidence))
    assert memory.confidence == float(confidence)
    assert isinstance(memory.confidence, float)


@pytest.mark.parametrize('kind', ['opinion', '', 'fact!'])
def test_unknown_kind_writes_nothing(store, mira, kind):
    with pytest.raises(InvalidInputError):
        store.add_memory(NewMemory(kind=kind, summary='x', links=((mira.id, 'subject'),)))
    assert store.counts()['memories'] == 0


def test_invalid_role_token_writes_nothing(store, mira):
    with pytest.raises(InvalidInputError):
        store.add_memory(NewMemory(kind='fact', summary='x', links=((mira.id, 'Sub Ject!'),)))
    assert store.counts()['memories'] == 0


@pytest.mark.parametrize('links', [((1,),), (('ENT1', 'subject'),), ((0, 'subject'),), 5])
def test_malformed_links_write_nothing(store, mira, links):
    with pytest.raises(InvalidInputError):
        store.add_memory(NewMemory(kind='fact', summary='x', links=links))
    assert store.counts()['memories'] == 0


@pytest.mark.parametrize('field, value', [
    ('summary', ''), ('summary', 'a\nb'), ('predicate', 'likes tea'), ('value', 'te\ta'),
    ('value', ' '), ('source_kind', 'a b'), ('source_label', 'turn\n1')])
def test_invalid_memory_field_writes_nothing(store, mira, field, value):
    arguments = {'kind': 'fact', 'summary': 'Mira likes tea', 'links': ((mira.id, 'subject'),)}
    arguments[field] = value
    with pytest.raises(InvalidInputError):
        store.add_memory(NewMemory(**arguments))
    assert store.counts()['memories'] == 0


def test_duplicate_link_pairs_collapse(store, mira):
    memory = store.add_memory(NewMemory(
        kind='fact', summary='x', links=((mira.id, 'subject'), (mira.id, 'Ｓｕｂｊｅｃｔ'))))
    assert [(link.entity_id, link.role) for link in memory.links] == [(mira.id, 'subject')]


def test_links_are_ordered_by_entity_then_role_with_names(store, mira, ada):
    memory = store.add_memory(NewMemory(kind='event', summary='They met', links=(
        (ada.id, 'object'), (mira.id, 'witness'), (mira.id, 'subject'))))
    assert [(link.entity_id, link.entity_name, link.role) for link in memory.links] == [
        (mira.id, 'Mira', 'subject'), (mira.id, 'Mira', 'witness'),
        (ada.id, 'Ada Lovelace', 'object')]


def test_get_memory_of_missing_id_is_not_found(store):
    with pytest.raises(NotFoundError, match='MEM4'):
        store.get_memory(4)


def test_counts_cover_every_table(store, mira):
    store.add_alias(mira.id, 'M')
    store.add_memory(NewMemory(kind='event', summary='x', links=(
        (mira.id, 'subject'), (mira.id, 'object'))))
    assert store.counts() == {
        'entities': 1, 'aliases': 1, 'memories': 1, 'active_memories': 1, 'links': 2,
        'payloads': 1}


# Newest active memories

def _add_facts(store, entity_id, count):
    return [store.add_memory(fact(entity_id, value='v%d' % i)).id for i in range(count)]


def test_newest_active_returns_newest_n_in_ascending_order(store, mira):
    ids = _add_facts(store, mira.id, 10)
    memories, truncated = store.newest_active_memories(mira.id, 3)
    assert [m.id for m in memories] == ids[-3:]
    assert truncated


def test_newest_active_is_not_truncated_when_exactly_n_exist(store, mira):
    ids = _add_facts(store, mira.id, 3)
    memories, truncated = store.newest_active_memories(mira.id, 3)
    assert [m.id for m in memories] == ids
    assert not truncated


def test_newest_active_only_includes_memories_linked_to_the_entity(store, mira, ada):
    mine = store.add_memory(fact(mira.id)).id
    store.add_memory(fact(ada.id))
    memories, _ = store.newest_active_memories(mira.id, 8)
    assert [m.id for m in memories] == [mine]


def test_memory_linked_twice_to_an_entity_counts_once(store, mira):
    store.add_memory(fact(mira.id))
    twice = store.add_memory(NewMemory(kind='event', summary='Mira saw herself', links=(
        (mira.id, 'subject'), (mira.id, 'object'))))
    memories, truncated = store.newest_active_memories(mira.id, 1)
    assert memories == [twice]
    assert truncated


def test_newest_active_resolves_links_to_other_entities(store, mira, ada):
    store.add_memory(NewMemory(kind='relationship', summary='Mira knows Ada', links=(
        (mira.id, 'subject'), (ada.id, 'object'))))
    memories, _ = store.newest_active_memories(mira.id, 8)
    assert [(link.entity_name, link.role) for link in memories[0].links] == [
        ('Mira', 'subject'), ('Ada Lovelace', 'object')]


def test_newest_active_of_entity_without_memories_is_empty(store, mira):
    assert store.newest_active_memories(mira.id, 8) == ([], False)


def test_find_with_newest_memories_caps_entities_and_memories(store):
    entities = [store.add_entity('person', 'Sam %d' % i) for i in range(3)]
    for entity in entities:
        store.add_alias(entity.id, 'Sam')
    ids = _add_facts(store, entities[0].id, 4)

    views, entities_truncated = store.find_with_newest_memories(
        'SAM', entity_limit=2, memory_limit=3)

    assert [entity.id for entity, _, _ in views] == [e.id for e in entities[:2]]
    assert entities_truncated
    first_memories, first_truncated = views[0][1], views[0][2]
    assert [m.id for m in first_memories] == ids[-3:] and first_truncated
    assert views[1][1:] == ([], False)


def test_find_with_newest_memories_without_entity_limit_returns_all(store):
    for i in range(7):
        store.add_alias(store.add_entity('person', 'Kim %d' % i).id, 'Kim')

    views, entities_truncated = store.find_with_newest_memories(
        'kim', entity_limit=None, memory_limit=8, with_aliases=True)

    assert len(views) == 7 and not entities_truncated
    assert views[0][0].aliases == ('Kim',)


@pytest.mark.parametrize('limit', [0, -1, None, True])
def test_newest_active_rejects_invalid_limit(store, mira, limit):
    with pytest.raises(InvalidInputError):
        store.newest_active_memories(mira.id, limit)


# Admission write transactions

def operator_fact(subject_id, label, value='tea', kind='fact', predicate='likes'):
    return NewMemory(kind=kind, summary='I like %s' % value, links=((subject_id, 'subject'),),
                     predicate=predicate, value=value, source_kind=SOURCE_OPERATOR_STATEMENT,
                     source_label=label)


def test_write_transaction_commits_on_clean_exit(store, mira):
    with store.write() as tx:
        memory = tx.insert_memory(operator_fact(mira.id, 'turn-1'), allow_runtime_source=True)
    assert store.get_memory(memory.id)[0] == memory
    assert memory.source_kind == SOURCE_OPERATOR_STATEMENT


def test_write_transaction_rolls_back_on_exception(store, mira):
    before = store.counts()
    with pytest.raises(RuntimeError):
        with store.write() as tx:
            tx.insert_memory(operator_fact(mira.id, 'turn-1'), allow_runtime_source=True)
            raise RuntimeError('admission changed its mind')
    assert store.counts() == before


def test_insert_memory_without_permission_rejects_runtime_source(store, mira):
    with store.write() as tx:
        with pytest.raises(InvalidInputError):
            tx.insert_memory(operator_fact(mira.id, 'turn-1'))
    assert store.counts()['memories'] == 0


def test_insert_memory_creates_one_inline_payload_of_the_summary(store, mira):
    with store.write() as tx:
        memory = tx.insert_memory(operator_fact(mira.id, 'turn-1'), allow_runtime_source=True)
    _, payloads = store.get_memory(memory.id)
    assert [(p.storage, p.media_type, p.text) for p in payloads] == [
        ('inline', 'text/plain', 'I like tea')]


def test_caught_insert_failure_inside_transaction_leaves_no_partial_rows(
        store, db_path, mira):
    _fail_payload_inserts(db_path)
    before = store.counts()
    with store.write() as tx:
        with pytest.raises(BackendError):
            tx.insert_memory(operator_fact(mira.id, 'turn-1'), allow_runtime_source=True)
    assert store.counts() == before


def test_transaction_reads_see_its_own_insert(store, mira):
    with store.write() as tx:
        memory = tx.insert_memory(operator_fact(mira.id, 'turn-1'), allow_runtime_source=True)
        assert tx.slot_memories(mira.id, 'likes') == [memory]


def test_write_transaction_find_entities_matches_exactly(store, mira):
    store.add_alias(mira.id, 'the robot')
    with store.write() as tx:
        assert [e.id for e in tx.find_entities('THE ROBOT')] == [mira.id]
        assert tx.find_entities('robot') == []


def test_slot_memories_holds_facts_and_preferences_of_the_subject_predicate(store, mira, ada):
    wanted = [
        store.add_memory(fact(mira.id)).id,
        store.add_memory(NewMemory(kind='preference', summary='Mira prefers tea',
                                   links=((mira.id, 'subject'),), predicate='likes',
                                   value='tea')).id,
    ]
    store.add_memory(fact(mira.id, predicate='dislikes'))
    store.add_memory(fact(ada.id))
    store.add_memory(NewMemory(kind='fact', summary='x', links=((mira.id, 'object'),),
                               predicate='likes', value='tea'))
    store.add_memory(NewMemory(kind='relationship', summary='x', links=(
        (mira.id, 'subject'), (ada.id, 'object')), predicate='likes', value='Ada Lovelace'))
    with store.write() as tx:
        assert [m.id for m in tx.slot_memories(mira.id, 'LIKES')] == wanted


def test_relationship_memories_holds_only_relationships(store, mira, ada):
    store.add_memory(fact(mira.id, predicate='knows', value='Ada Lovelace'))
    wanted = store.add_memory(NewMemory(kind='relationship', summary='Mira knows Ada', links=(
        (mira.id, 'subject'), (ada.id, 'object')), predicate='knows', value='Ada Lovelace'))
    with store.write() as tx:
        assert tx.relationship_memories(mira.id, 'knows') == [wanted]


def test_turn_memory_finds_the_operator_statement_of_that_turn(store, mira):
    store.add_memory(fact(mira.id, source_label='turn-7'))
    with store.write() as tx:
        assert tx.turn_memory('turn-7') is None
        memory = tx.insert_memory(operator_fact(mira.id, 'turn-7'), allow_runtime_source=True)
        assert tx.turn_memory('turn-7') == memory
        assert tx.turn_memory('turn-8') is None


def test_transaction_methods_after_exit_raise(store, mira):
    with store.write() as tx:
        pass
    with pytest.raises(StoreError, match='not active'):
        tx.find_entities('Mira')


def test_nested_write_transaction_is_refused(store):
    with store.write():
        with pytest.raises(StoreError, match='already open'):
            store.add_entity('robot', 'Mira')
    assert store.counts()['entities'] == 0


# Query plans

def _populated(store):
    mira = store.add_entity('robot', 'Mira')
    ada = store.add_entity('person', 'Ada')
    store.add_alias(mira.id, 'M')
    for index in range(20):
        store.add_memory(NewMemory(kind='relationship', summary='x%d' % index, links=(
            (mira.id, 'subject'), (ada.id, 'object')), predicate='knows', value='Ada'))
    with store.write() as tx:
        tx.insert_memory(operator_fact(mira.id, 'turn-1'), allow_runtime_source=True)


HOT_QUERIES = {
    'find_entities': (reads.FIND_ENTITIES_SQL, {'key': 'mira', 'limit': 6}),
    'find_aliases': (reads.FIND_ALIASES_SQL, {'key': 'mira', 'limit': 6}),
    'entity': (reads.ENTITY_SQL, {'entity_id': 1}),
    'entity_aliases': (reads.ENTITY_ALIASES_SQL, {'entity_id': 1}),
    'payloads': (reads.PAYLOADS_SQL, {'memory_id': 1}),
    # Forget and retire.
    'entity_memory_ids': (writes.ENTITY_MEMORY_IDS_SQL, {'entity_id': 1}),
    'memory_link_count': (writes.MEMORY_LINK_COUNT_SQL, {'memory_id': 1}),
    'memory_payload_count': (writes.MEMORY_PAYLOAD_COUNT_SQL, {'memory_id': 1}),
    'entity_alias_count': (writes.ENTITY_ALIAS_COUNT_SQL, {'entity_id': 1}),
    'retire': (writes.RETIRE_SQL, {'memory_id': 1, 'now': 'x', 'reason': 'y'}),
}
for _index, _sql in enumerate(writes.DELETE_MEMORY_SQL + writes.DELETE_ENTITY_SQL):
    HOT_QUERIES['delete_%d' % _index] = (_sql, {'memory_id': 1, 'entity_id': 1})
for _name, _ids_sql, _params in [
        ('newest', reads.NEWEST_ACTIVE_IDS_SQL, {'entity_id': 1, 'limit': 9}),
        ('slot', reads.SLOT_MEMORY_IDS_SQL, {'entity_id': 1, 'predicate': 'knows'}),
        ('relationship', reads.RELATIONSHIP_MEMORY_IDS_SQL,
         {'entity_id': 1, 'predicate': 'knows'}),
        ('turn', reads.TURN_MEMORY_IDS_SQL, {'source_label': 'turn-1'}),
        ('by_id', reads.MEMORY_IDS_BY_ID_SQL, {'memory_id': 1})]:
    HOT_QUERIES[_name + '_memories'] = (
        reads.MEMORIES_BY_IDS_SQL.format(ids=_ids_sql), _params)
    HOT_QUERIES[_name + '_links'] = (reads.LINKS_BY_IDS_SQL.format(ids=_ids_sql), _params)


@pytest.mark.parametrize('name', sorted(HOT_QUERIES))
def test_hot_query_plan_uses_indexes_and_never_scans_a_table(store, name):
    _populated(store)
    sql, params = HOT_QUERIES[name]
    plan = [row[3] for row in store._connection.raw.execute('EXPLAIN QUERY PLAN ' + sql, params)]
    assert not [step for step in plan if step.startswith('SCAN')], plan
    assert any(step.startswith('SEARCH') for step in plan), plan


def test_turn_query_uses_the_partial_operator_turn_index(store):
    _populated(store)
    plan = [row[3] for row in store._connection.raw.execute(
        'EXPLAIN QUERY PLAN ' + reads.TURN_MEMORY_IDS_SQL, {'source_label': 'x'})]
    assert any('memories_operator_turn' in step for step in plan), plan


def test_newest_query_walks_the_link_index_without_sorting(store):
    _populated(store)
    plan = [row[3] for row in store._connection.raw.execute(
        'EXPLAIN QUERY PLAN ' + reads.NEWEST_ACTIVE_IDS_SQL,
        {'entity_id': 1, 'limit': 9})]
    assert any('memory_links_entity' in step for step in plan), plan
    assert not [step for step in plan if 'TEMP B-TREE' in step], plan


# Replication owns the checkpoints

def _wal_pages(path):
    wal = path.with_name(path.name + '-wal')
    return (wal.stat().st_size - 32) // (4096 + 24) if wal.exists() else 0


@pytest.mark.parametrize('replicated', [False, True], ids=['alone', 'replicated'])
def test_a_replicated_store_never_checkpoints_by_itself(db_path, replicated):
    # Without replication SQLite's autocheckpoint keeps the WAL near 1,000
    # pages; with it, pages stay in the WAL until Litestream checkpoints.
    entered = []
    store = MemoryStore.open(db_path)
    try:
        if replicated:
            store.leave_checkpoints_to_replication(lambda: entered.append(1) or _Nothing())
        subject = store.add_entity('robot', 'Mira')
        for number in range(600):
            summary = f'Mira likes tea {number} ' + 'x' * 3000
            store.add_memory(fact(subject.id, summary=summary, value=f'tea {number}'))
        pages = _wal_pages(db_path)
        assert (pages > 1500) if replicated else (pages < 1500), pages
        assert entered == []  # no truncation ran
    finally:
        store.close()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False
