# SPDX-License-Identifier: Apache-2.0
"""The memory node in-process (node tier): admin services, settings, startup, restart."""

import hashlib
import itertools
import re
import sqlite3

from helpers.schema_v1 import make_version_1_database
from mira_memory import msg, srv
from mira_memory.client import names
from mira_memory.ros.node_runner import StartupError
import pytest

pytestmark = pytest.mark.ros

SERVICES = {
    'status': srv.AdminStatus,
    'entity_add': srv.AdminEntityAdd,
    'entity_find': srv.AdminEntityFind,
    'alias_add': srv.AdminAliasAdd,
    'find': srv.AdminFind,
    'add': srv.AdminAdd,
    'show': srv.AdminShow,
    'list': srv.AdminList,
}
MISSING_ENTITY = 'ENT999999'
MISSING_MEMORY = 'MEM999999'
_names = itertools.count(1)


def unique(label):
    """Return a name no other test of this module uses."""
    return f'{label} {next(_names)}'


def link(entity_id, role):
    return msg.MemoryLink(entity_id=entity_id, role=role)


def admin(ros, node, command, **fields):
    service_type = SERVICES[command]
    request = service_type.Request()
    for field, value in fields.items():
        setattr(request, field, value)
    return ros.call(service_type, names.service_name(node.prefix, f'admin/{command}'), request)


def counts(ros, node):
    status = admin(ros, node, 'status')
    assert status.success, status.message
    return (status.entity_count, status.alias_count, status.memory_count,
            status.active_memory_count, status.link_count, status.payload_count)


def add_entity(ros, node, name, entity_type='person'):
    response = admin(ros, node, 'entity_add', entity_type=entity_type, canonical_name=name)
    assert response.success, response.message
    return response.entity.id


def add_memory(ros, node, summary, links=(), **fields):
    response = admin(ros, node, 'add', kind=fields.pop('kind', 'fact'), summary=summary,
                     links=list(links), **fields)
    assert response.success, response.message
    return response.memory.id


def node_services(ros, prefix):
    return {name for name in ros.service_names() if name.startswith(prefix + '/')}


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope='module')
def node(ros, shared_memory_node):
    return shared_memory_node


@pytest.fixture(scope='module')
def existing(ros, node):
    """Create an entity with an alias and a memory for the bad-input cases."""
    entity = add_entity(ros, node, 'Existing Entity')
    response = admin(ros, node, 'alias_add', entity_id=entity, alias='Existing Alias')
    assert response.success, response.message
    memory = add_memory(ros, node, 'Existing memory', [link(entity, 'subject')])
    return {'entity': entity, 'memory': memory}


# Enabled: every admin command succeeds ------------------------------------------


def test_status_reports_the_open_database(ros, node):
    status = admin(ros, node, 'status')
    assert status.success and status.error_code == ''
    assert status.enabled
    assert status.database_path == str(node.database_path)
    assert status.schema_version == 4
    assert status.robot_profile == 'Mira'


def test_recall_and_remember_are_served_when_enabled(ros, node):
    assert ros.wait_for_service(
        srv.RecallMemory, names.service_name(node.prefix, names.RECALL_MEMORY))
    assert ros.wait_for_service(srv.Remember, names.service_name(node.prefix, names.REMEMBER))


def test_entity_add_creates_an_entity_in_display_form(ros, node):
    before = counts(ros, node)
    name = unique('Ada Lovelace')
    response = admin(ros, node, 'entity_add', entity_type='Person',
                     canonical_name=f'  {name.replace(" ", "   ")} ')
    assert response.success and response.error_code == ''
    assert re.fullmatch(r'ENT[1-9][0-9]*', response.entity.id)
    assert response.entity.entity_type == 'person'
    assert response.entity.canonical_name == name
    assert response.message == f'created {response.entity.id}'
    assert counts(ros, node)[0] == before[0] + 1


def test_entity_add_gives_increasing_ids(ros, node):
    first = add_entity(ros, node, unique('First'))
    second = add_entity(ros, node, unique('Second'))
    assert int(second[3:]) > int(first[3:])


def test_entity_find_returns_every_exact_match_in_id_order(ros, node):
    name = unique('Twin Name')
    first = add_entity(ros, node, name)
    second = add_entity(ros, node, name.upper(), entity_type='robot')
    third = add_entity(ros, node, unique('Other'))
    assert admin(ros, node, 'alias_add', entity_id=third, alias=name).success
    response = admin(ros, node, 'entity_find', name=f' {name.lower()}  ')
    assert response.success
    assert [entity.id for entity in response.entities] == [first, second, third]
    assert response.entities[2].aliases == [name]


def test_entity_find_never_matches_a_part_of_a_name(ros, node):
    name = unique('Grace Hopper')
    add_entity(ros, node, name)
    response = admin(ros, node, 'entity_find', name=name.split()[0])
    assert response.success and list(response.entities) == []


def test_alias_add_returns_the_entity_with_its_aliases(ros, node):
    entity = add_entity(ros, node, unique('Charles Babbage'))
    alias = unique('Charlie')
    before = counts(ros, node)
    response = admin(ros, node, 'alias_add', entity_id=entity, alias=alias)
    assert response.success
    assert response.entity.id == entity and response.entity.aliases == [alias]
    assert counts(ros, node)[1] == before[1] + 1
    found = admin(ros, node, 'entity_find', name=alias)
    assert [match.id for match in found.entities] == [entity]


def test_add_writes_memory_links_and_one_payload(ros, node):
    subject = add_entity(ros, node, unique('Subject'))
    other = add_entity(ros, node, unique('Colleague'))
    before = counts(ros, node)
    response = admin(
        ros, node, 'add', kind='relationship', summary='  worked   with a colleague ',
        links=[link(subject, 'subject'), link(other, 'Colleague')], predicate='Worked_With',
        value='a colleague', source_kind='biography', source_label='book, p. 12',
        has_confidence=True, confidence=0.75)
    assert response.success and response.error_code == ''
    memory = response.memory
    assert re.fullmatch(r'MEM[1-9][0-9]*', memory.id)
    assert (memory.kind, memory.summary, memory.predicate, memory.value) == (
        'relationship', 'worked with a colleague', 'worked_with', 'a colleague')
    assert (memory.source_kind, memory.source_label) == ('biography', 'book, p. 12')
    assert memory.has_confidence and memory.confidence == 0.75
    assert memory.status == 'active'
    assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', memory.created_at)
    assert [(item.entity_id, item.role) for item in memory.links] == [
        (subject, 'subject'), (other, 'colleague')]
    after = counts(ros, node)
    assert [a - b for a, b in zip(after, before)] == [0, 0, 1, 1, 2, 1]


def test_add_defaults_to_source_kind_console_without_confidence(ros, node):
    response = admin(ros, node, 'add', kind='observation', summary=unique('seen'))
    assert response.success
    assert response.memory.source_kind == 'console'
    assert not response.memory.has_confidence
    assert response.memory.predicate == '' and response.memory.value == ''
    assert list(response.memory.links) == []


def test_show_returns_every_field_and_the_summary_payload(ros, node):
    entity = add_entity(ros, node, unique('Shown'))
    memory = add_memory(ros, node, 'likes tea', [link(entity, 'subject')], kind='preference',
                        predicate='drink', value='tea')
    response = admin(ros, node, 'show', memory_id=memory)
    assert response.success
    assert response.memory.id == memory
    assert (response.memory.kind, response.memory.predicate, response.memory.value) == (
        'preference', 'drink', 'tea')
    assert [(item.entity_id, item.role) for item in response.memory.links] == [
        (entity, 'subject')]
    assert response.memory.links[0].entity_name.startswith('Shown')
    assert [(p.storage, p.media_type, p.text) for p in response.payloads] == [
        ('inline', 'text/plain', 'likes tea')]


def test_find_shows_each_match_with_its_active_memories(ros, node):
    name = unique('Found')
    first = add_entity(ros, node, name)
    second = add_entity(ros, node, name)
    older = add_memory(ros, node, 'first memory', [link(first, 'subject')])
    newer = add_memory(ros, node, 'second memory',
                       [link(first, 'subject'), link(second, 'friend')])
    response = admin(ros, node, 'find', name=name)
    assert response.success
    assert [entity.id for entity in response.entities] == [first, second]
    assert [memory.id for memory in response.entities[0].memories] == [older, newer]
    assert [memory.id for memory in response.entities[1].memories] == [newer]
    assert not response.entities[0].memories_truncated


def test_find_without_a_match_succeeds_empty(ros, node):
    response = admin(ros, node, 'find', name=unique('Nobody'))
    assert response.success and list(response.entities) == []


def test_list_returns_the_entity_and_its_active_memories(ros, node):
    entity = add_entity(ros, node, unique('Listed'))
    memories = [add_memory(ros, node, f'memory {n}', [link(entity, 'subject')])
                for n in range(3)]
    response = admin(ros, node, 'list', entity_id=entity)
    assert response.success
    assert response.entity.id == entity
    assert [memory.id for memory in response.entity.memories] == memories


# Enabled: bad input is refused, nothing is written, the node keeps serving -------

BAD_INPUT = [
    ('entity_add', {'entity_type': 'person', 'canonical_name': ''}, 'invalid_argument'),
    ('entity_add', {'entity_type': 'person', 'canonical_name': '   '}, 'invalid_argument'),
    ('entity_add', {'entity_type': 'person', 'canonical_name': 'Ada\x07'}, 'invalid_argument'),
    ('entity_add', {'entity_type': 'two words', 'canonical_name': 'Ada'}, 'invalid_argument'),
    ('entity_add', {'entity_type': '', 'canonical_name': 'Ada'}, 'invalid_argument'),
    ('entity_add', {'entity_type': 'person', 'canonical_name': 'x' * 257}, 'invalid_argument'),
    ('entity_find', {'name': ''}, 'invalid_argument'),
    ('entity_find', {'name': 'Ada\nLovelace'}, 'invalid_argument'),
    ('alias_add', {'entity_id': 'ENTx', 'alias': 'Ada'}, 'invalid_argument'),
    ('alias_add', {'entity_id': 'ENT-1', 'alias': 'Ada'}, 'invalid_argument'),
    ('alias_add', {'entity_id': 'ENT01', 'alias': 'Ada'}, 'invalid_argument'),
    ('alias_add', {'entity_id': MISSING_ENTITY, 'alias': 'Ada'}, 'not_found'),
    ('alias_add', {'entity_id': '{entity}', 'alias': ''}, 'invalid_argument'),
    ('alias_add', {'entity_id': '{entity}', 'alias': 'Al\x1bias'}, 'invalid_argument'),
    ('alias_add', {'entity_id': '{entity}', 'alias': 'existing  ALIAS'}, 'duplicate_alias'),
    ('alias_add', {'entity_id': '{entity}', 'alias': 'Existing Entity'}, 'duplicate_alias'),
    ('find', {'name': ''}, 'invalid_argument'),
    ('find', {'name': 'Ada\x1f'}, 'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'has_confidence': True, 'confidence': 1.5},
     'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'has_confidence': True, 'confidence': -0.1},
     'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'has_confidence': True,
             'confidence': float('nan')}, 'invalid_argument'),
    ('add', {'kind': 'opinion', 'summary': 'x'}, 'invalid_argument'),
    ('add', {'kind': '', 'summary': 'x'}, 'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': ''}, 'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'tab\there'}, 'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'links': [(MISSING_ENTITY, 'subject')]},
     'not_found'),
    ('add', {'kind': 'fact', 'summary': 'x',
             'links': [('{entity}', 'subject'), (MISSING_ENTITY, 'friend')]}, 'not_found'),
    ('add', {'kind': 'fact', 'summary': 'x', 'links': [('ENTx', 'subject')]},
     'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'links': [('{entity}', 'not a token')]},
     'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'source_kind': 'operator_statement'},
     'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'predicate': 'has spaces'}, 'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'value': 'bell\x07'}, 'invalid_argument'),
    ('add', {'kind': 'fact', 'summary': 'x', 'source_label': 'line\nbreak'},
     'invalid_argument'),
    ('show', {'memory_id': 'MEM-1'}, 'invalid_argument'),
    ('show', {'memory_id': 'MEM0'}, 'invalid_argument'),
    ('show', {'memory_id': 'mem1'}, 'invalid_argument'),
    ('show', {'memory_id': ''}, 'invalid_argument'),
    ('show', {'memory_id': MISSING_MEMORY}, 'not_found'),
    ('list', {'entity_id': 'ENTx'}, 'invalid_argument'),
    ('list', {'entity_id': '{memory}'}, 'invalid_argument'),
    ('list', {'entity_id': MISSING_ENTITY}, 'not_found'),
]


def _resolve(fields, existing):
    resolved = {}
    for field, value in fields.items():
        if field == 'links':
            value = [link(entity_id.format(**existing), role) for entity_id, role in value]
        elif isinstance(value, str):
            value = value.format(**existing)
        resolved[field] = value
    return resolved


@pytest.mark.parametrize(
    'command, fields, code', BAD_INPUT,
    ids=[f'{command}-{index}-{code}' for index, (command, _, code) in enumerate(BAD_INPUT)])
def test_bad_input_is_refused_and_writes_nothing(ros, node, existing, command, fields, code):
    before = counts(ros, node)
    response = admin(ros, node, command, **_resolve(fields, existing))
    assert not response.success
    assert response.error_code == code
    assert response.message and '\n' not in response.message
    # The status call both proves nothing was written and that the node still serves.
    assert counts(ros, node) == before
    assert node.running()


def test_error_codes_are_the_declared_constants():
    for service_type in SERVICES.values():
        declared = {value for name, value in vars(service_type.Response).items()
                    if name.startswith('ERROR_')}
        assert declared == {'invalid_argument', 'not_found', 'duplicate_alias', 'disabled',
                            'backend_failure', 'unavailable'}


# Disabled ---------------------------------------------------------------------------


@pytest.fixture(scope='module')
def disabled(ros, module_memory_node, tmp_path_factory):
    directory = tmp_path_factory.mktemp('disabled')
    database_path = directory / 'never' / 'memory.sqlite3'
    process = module_memory_node(
        {'enabled': False, 'database_path': str(database_path), 'robot_profile': 'Mira'},
        ros=ros, wait_service='admin/list')
    process.directory = directory
    return process


def test_disabled_creates_no_file_and_no_directory(ros, disabled):
    assert admin(ros, disabled, 'status').success
    assert list(disabled.directory.iterdir()) == []


def test_disabled_status_says_so(ros, disabled):
    status = admin(ros, disabled, 'status')
    assert status.success and not status.enabled
    assert status.message == 'persistent memory is disabled'
    assert status.database_path == '' and status.schema_version == 0
    assert status.robot_profile == 'Mira'


def test_disabled_serves_no_recall_or_remember(ros, disabled):
    # admin/list is created last, so once it is in the graph everything is.
    services = node_services(ros, disabled.prefix)
    assert names.service_name(disabled.prefix, names.ADMIN_LIST) in services
    assert names.service_name(disabled.prefix, names.RECALL_MEMORY) not in services
    assert names.service_name(disabled.prefix, names.REMEMBER) not in services


@pytest.mark.parametrize('command, fields', [
    ('entity_add', {'entity_type': 'person', 'canonical_name': 'Ada'}),
    ('entity_find', {'name': 'Ada'}),
    ('alias_add', {'entity_id': 'ENT1', 'alias': 'Ada'}),
    ('find', {'name': 'Ada'}),
    ('add', {'kind': 'fact', 'summary': 'x'}),
    ('show', {'memory_id': 'MEM1'}),
    ('list', {'entity_id': 'ENT1'}),
])
def test_disabled_admin_commands_answer_disabled(ros, disabled, command, fields):
    response = admin(ros, disabled, command, **fields)
    assert not response.success
    assert response.error_code == 'disabled'
    assert response.message == 'persistent memory is disabled'


def test_config_file_without_memory_section_is_disabled(ros, memory_node, tmp_path):
    config_dir = tmp_path / 'config'
    config_dir.mkdir()
    config_file = config_dir / 'mira.toml'
    config_file.write_text('[robot]\nname = "Mira"\ndatabase_path = "data/memory.sqlite3"\n')
    process = memory_node({'config_file': str(config_file), 'enabled': True,
                           'database_path': str(tmp_path / 'param' / 'memory.sqlite3')},
                          ros=ros, wait_service='admin/list', cwd=str(config_dir))
    status = admin(ros, process, 'status')
    assert status.success and not status.enabled
    assert [path.name for path in config_dir.iterdir()] == ['mira.toml']
    assert not (tmp_path / 'param').exists()
    services = node_services(ros, process.prefix)
    assert names.service_name(process.prefix, names.RECALL_MEMORY) not in services


def test_config_file_enabled_false_creates_nothing(ros, memory_node, tmp_path):
    config_file = tmp_path / 'mira.toml'
    config_file.write_text(
        '[memory]\nenabled = false\ndatabase_path = "data/memory.sqlite3"\n')
    process = memory_node({'config_file': str(config_file)}, ros=ros)
    assert not admin(ros, process, 'status').enabled
    assert not (tmp_path / 'data').exists()


# Config file: relative paths --------------------------------------------------------


def test_config_file_relative_path_resolves_against_its_directory(ros, memory_node, tmp_path):
    config_dir = tmp_path / 'etc' / 'mira'
    config_dir.mkdir(parents=True)
    elsewhere = tmp_path / 'cwd'
    elsewhere.mkdir()
    config_file = config_dir / 'mira.toml'
    config_file.write_text(
        '[memory]\nenabled = true\ndatabase_path = "../data/nested/mira-memory.sqlite3"\n')
    process = memory_node({'config_file': str(config_file)}, ros=ros, cwd=str(elsewhere))
    status = admin(ros, process, 'status')
    assert status.enabled
    expected = tmp_path / 'etc' / 'data' / 'nested' / 'mira-memory.sqlite3'
    assert expected.is_file()
    assert status.database_path and expected.samefile(status.database_path)
    assert list(elsewhere.iterdir()) == []


# Startup failures -------------------------------------------------------------------


def _unversioned(path):
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE notes (text TEXT)')
        conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.close()


def _version_3(path):
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE entities (id INTEGER PRIMARY KEY)')
        conn.execute('PRAGMA user_version = 3')
    conn.close()


def _version_1(path):
    # A real version 1 file as the previous code wrote it: WAL mode, with rows.
    make_version_1_database(path)


def _text_file(path):
    path.write_text('not a database\n')


@pytest.mark.parametrize('make', [_unversioned, _version_3, _version_1, _text_file],
                         ids=['unversioned', 'user_version_3', 'version_1', 'text_file'])
def test_unsupported_database_fails_startup_untouched(memory_node, tmp_path, make):
    directory = tmp_path / 'db'
    directory.mkdir()
    database = directory / 'memory.sqlite3'
    make(database)
    digest = sha256(database)
    with pytest.raises(StartupError, match='cannot open persistent memory'):
        memory_node({'enabled': True, 'database_path': str(database)})
    assert sha256(database) == digest
    assert [path.name for path in directory.iterdir()] == ['memory.sqlite3']


def test_version_1_database_is_refused_with_the_migration_command(memory_node, tmp_path):
    database = make_version_1_database(tmp_path / 'memory.sqlite3')
    with pytest.raises(StartupError) as error:
        memory_node({'enabled': True, 'database_path': str(database)})
    assert 'schema version 1' in str(error.value)
    assert f'ros2 run mira_memory memory_migrate --database {database}' in str(error.value)


@pytest.mark.parametrize('parameters, reason', [
    ({'enabled': True, 'database_path': ''}, 'database_path is empty'),
    ({'enabled': True}, 'database_path is empty'),
    ({'enabled': True, 'database_path': 'relative/memory.sqlite3'}, 'must be absolute'),
    ({'enabled': 'true'}, 'parameter enabled must be true or false'),
], ids=['empty_path', 'no_path', 'relative_parameter_path', 'mistyped_enabled'])
def test_bad_settings_fail_startup_with_one_error(memory_node, parameters, reason):
    # What the executable makes of a StartupError (one [ERROR] line, exit 1,
    # no traceback): test/system/test_memory_node_process.py.
    with pytest.raises(StartupError) as error:
        memory_node(parameters)
    assert reason in str(error.value)


def test_missing_parent_directory_is_created(ros, memory_node, tmp_path):
    database = tmp_path / 'a' / 'b' / 'memory.sqlite3'
    process = memory_node({'enabled': True, 'database_path': str(database)}, ros=ros)
    assert admin(ros, process, 'status').enabled
    assert database.is_file()


# Lifecycle ----------------------------------------------------------------------------


def test_restart_keeps_entity_and_memory_ids(ros, memory_node, tmp_path):
    parameters = {'enabled': True, 'database_path': str(tmp_path / 'memory.sqlite3')}
    first = memory_node(parameters, ros=ros)
    ada = add_entity(ros, first, 'Ada Lovelace')
    assert admin(ros, first, 'alias_add', entity_id=ada, alias='Ada').success
    memory = add_memory(ros, first, 'wrote the first program', [link(ada, 'subject')])
    assert first.stop() == 0

    second = memory_node(parameters, ros=ros)
    shown = admin(ros, second, 'show', memory_id=memory)
    assert shown.success and shown.memory.summary == 'wrote the first program'
    listed = admin(ros, second, 'list', entity_id=ada)
    assert listed.entity.aliases == ['Ada']
    assert [item.id for item in listed.entity.memories] == [memory]
    assert add_entity(ros, second, 'Charles Babbage') == f'ENT{int(ada[3:]) + 1}'
    assert add_memory(ros, second, 'another') == f'MEM{int(memory[3:]) + 1}'
