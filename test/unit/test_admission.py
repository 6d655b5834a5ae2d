# SPDX-License-Identifier: Apache-2.0
"""Admission: every rule with its one reason, grounding, slots, idempotency, no echo."""

from dataclasses import dataclass, fields, replace
import pathlib
import sqlite3

from conftest import FIXED_CREATED_AT as CREATED_AT
from helpers.admission_cases import Case, CASES, context, FACT, FACT_CONTEXT, RELATIONSHIP
from helpers.admission_cases import RELATIONSHIP_CONTEXT, ROBOT_PROFILE
from mira_memory.core.admission.operator_turn import source_label, TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.results import AdmissionResult, backend_failure
from mira_memory.core.admission.results import ERROR_MAX_LENGTH, REASONS
from mira_memory.core.admission.results import TURN_ALREADY_WROTE_ERROR
from mira_memory.core.admission.rules import admit
from mira_memory.core.store import BackendError, MemoryStore, NewMemory
import pytest


@dataclass(frozen=True)
class Seed:
    """Entity and memory ids of the seeded store."""

    ottoline: int
    quillon: int
    robot: int
    samwise_north: int
    samwise_south: int
    quillon_drinks: int


@pytest.fixture
def seed(store):
    ottoline = store.add_entity('person', 'Ottoline Vexworth')
    store.add_alias(ottoline.id, 'Ottie')
    quillon = store.add_entity('person', 'Quillon Brask')
    store.add_alias(quillon.id, 'Quill')
    robot = store.add_entity('robot', ROBOT_PROFILE)
    north = store.add_entity('person', 'Sam Northby')
    store.add_alias(north.id, 'Samwise')
    south = store.add_entity('person', 'Sam Southby')
    store.add_alias(south.id, 'Samwise')
    drinks = store.add_memory(NewMemory(
        'fact', 'Quillon drinks black coffee.', links=((quillon.id, 'subject'),),
        predicate='drinks', value='black coffee'))
    return Seed(ottoline.id, quillon.id, robot.id, north.id, south.id, drinks.id)


def counts(db_path):
    # A fresh connection, so the count also works after the admitting store closed.
    with MemoryStore.open(db_path) as store:
        return store.counts()


class FailingWriteStore:
    """A store whose write transaction cannot start."""

    def write(self):
        raise BackendError('database is locked')


class FailingInsertStore:
    """A store whose insert fails after every check passed, inside the transaction."""

    def __init__(self, store, error):
        self._store = store
        self._error = error

    def write(self):
        return FailingInsertTransaction(self._store.write(), self._error)


class FailingInsertTransaction:

    def __init__(self, transaction, error):
        self._transaction = transaction
        self._error = error

    def __enter__(self):
        self._tx = self._transaction.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self._transaction.__exit__(*exc_info)

    def __getattr__(self, name):
        return getattr(self._tx, name)

    def insert_memory(self, new, *, allow_runtime_source=False):
        self._tx.insert_memory(new, allow_runtime_source=allow_runtime_source)
        raise self._error


def closed(store):
    store.close()
    return store


# Rows that only the core can express: ROS strings carry neither None, nor
# non-text values, nor a NUL; and the service tests break the real store.
CASES = {
    **CASES,
    'missing-subject': Case('invalid_tool_arguments', FACT_CONTEXT, replace(FACT, subject=None)),
    'value-not-text': Case('invalid_tool_arguments', FACT_CONTEXT, replace(FACT, value=42)),
    'nul-in-subject': Case(
        'invalid_proposal', FACT_CONTEXT, replace(FACT, subject='Ottoline\x00Vexworth')),
    'no-turn': Case('evidence_not_in_utterance', None, FACT),
    # 15. backend_failure
    'write-fails': Case(
        'backend_failure', FACT_CONTEXT, FACT, wrap_store=lambda store: FailingWriteStore()),
    'store-closed': Case('backend_failure', FACT_CONTEXT, FACT, wrap_store=closed),
    'insert-fails-after-checks': Case(
        'backend_failure', FACT_CONTEXT, FACT,
        wrap_store=lambda store: FailingInsertStore(store, BackendError('disk full'))),
    'raw-sqlite-error': Case(
        'backend_failure', FACT_CONTEXT, FACT,
        wrap_store=lambda store: FailingInsertStore(
            store, sqlite3.OperationalError('disk I/O error'))),
}


def run_case(store, case):
    target = case.wrap_store(store) if case.wrap_store else store
    return admit(target, case.context, case.proposal, case.profile)


def srv_constants(prefix):
    srv = pathlib.Path(__file__).resolve().parents[2] / 'srv' / 'Remember.srv'
    return [line.split('=', 1)[1] for line in srv.read_text().splitlines()
            if line.startswith('string ' + prefix)]


def test_reasons_are_the_interface_tokens_in_the_spec_order():
    assert REASONS == tuple(srv_constants('REASON_'))


def test_the_table_reaches_every_reason():
    assert {case.reason for case in CASES.values()} | {'invalid_proposal'} == set(REASONS)
    assert len(REASONS) == 15


@pytest.mark.parametrize('case', CASES.values(), ids=CASES.keys())
def test_rejection_has_its_one_reason_and_writes_nothing(db_path, store, seed, case):
    before = counts(db_path)

    result = run_case(store, case)

    assert (result.status, result.outcome, result.reason) == ('rejected', '', case.reason)
    assert result.memory_id is None
    assert 0 < len(result.error) <= ERROR_MAX_LENGTH
    assert counts(db_path) == before


def test_backend_failure_helper_matches_a_failed_admission(store, seed):
    assert backend_failure() == run_case(store, CASES['store-closed'])


def test_conflict_names_only_the_existing_memory(store, seed):
    result = run_case(store, CASES['conflicting-value'])

    assert result.conflicting_memory_ids == (seed.quillon_drinks,)
    assert store.get_memory(seed.quillon_drinks)[0].value == 'black coffee'


def test_conflict_lists_at_most_eight_ids_ascending(store, seed):
    extra = [store.add_memory(NewMemory(
        'preference', 'Quillon drinks brew %d.' % n, links=((seed.quillon, 'subject'),),
        predicate='drinks', value='brew %d' % n)).id for n in range(9)]

    result = run_case(store, CASES['conflicting-value'])

    assert result.conflicting_memory_ids == tuple([seed.quillon_drinks] + extra[:7])


def input_strings(case):
    texts = [getattr(case.proposal, field.name) for field in fields(Proposal)
             if field.name != 'kind']
    if case.context is not None:
        texts.extend(getattr(case.context, field.name) for field in fields(TurnContext))
    texts.append(case.profile)
    return [text.casefold() for text in texts if isinstance(text, str) and len(text) >= 3]


def response_strings(result):
    strings = [str(getattr(result, field.name)) for field in fields(AdmissionResult)]
    return [text.casefold() for text in strings]


CREATED_CASE = Case('', FACT_CONTEXT, FACT)
DUPLICATE_CASE = Case('', RELATIONSHIP_CONTEXT, RELATIONSHIP)


@pytest.mark.parametrize('case', list(CASES.values()) + [CREATED_CASE, DUPLICATE_CASE],
                         ids=list(CASES.keys()) + ['created', 'duplicate'])
def test_no_response_field_echoes_any_input(store, seed, case):
    if case is DUPLICATE_CASE:
        run_case(store, case)

    result = run_case(store, case)

    for text in input_strings(case):
        for field_text in response_strings(result):
            assert text not in field_text


def test_created_memory_keeps_the_operator_wording(store, seed):
    turn = TurnContext(
        'ep-7731', 'turn-0042',
        'Note this:   OTTOLINE \u3000vexworth drinks Zumbleberry  TEA, every morning.')

    result = admit(store, turn, FACT, ROBOT_PROFILE)

    assert (result.status, result.outcome, result.reason, result.error) == (
        'applied', 'created', '', '')
    memory, payloads = store.get_memory(result.memory_id)
    assert memory.summary == 'OTTOLINE vexworth drinks Zumbleberry TEA'
    assert [(payload.storage, payload.media_type, payload.text) for payload in payloads] == [
        ('inline', 'text/plain', memory.summary)]
    assert (memory.kind, memory.predicate, memory.value) == ('fact', 'drinks', 'Zumbleberry TEA')
    assert (memory.source_kind, memory.source_label) == (
        'operator_statement', 'episode ep-7731 turn turn-0042')
    assert (memory.status, memory.confidence, memory.created_at) == ('active', None, CREATED_AT)
    assert [(link.entity_id, link.role) for link in memory.links] == [(seed.ottoline, 'subject')]


def test_created_writes_exactly_one_memory_link_and_payload(db_path, store, seed):
    before = counts(db_path)

    admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)

    after = counts(db_path)
    assert {key: after[key] - before[key] for key in after} == {
        'entities': 0, 'aliases': 0, 'memories': 1, 'active_memories': 1, 'links': 1,
        'payloads': 1}


@pytest.mark.parametrize('utterance,proposal', [
    ('ＯＴＴＯＬＩＮＥ ＶＥＸＷＯＲＴＨ ｄｒｉｎｋｓ ｚｕｍｂｌｅｂｅｒｒｙ ｔｅａ.', FACT),
    (FACT_CONTEXT.utterance, replace(
        FACT, subject='ｏｔｔｏｌｉｎｅ  ｖｅｘｗｏｒｔｈ', value='ＺＵＭＢＬＥＢＥＲＲＹ\u3000ＴＥＡ',
        evidence='  ottoline VEXWORTH   drinks zumbleberry TEA ')),
    ('Note: ottie drinks zumbleberry tea.', replace(
        FACT, subject='OTTIE', evidence='Ottie Drinks Zumbleberry Tea')),
], ids=['fullwidth-utterance', 'variant-fields', 'alias-case'])
def test_normalized_variants_are_admitted(store, seed, utterance, proposal):
    result = admit(store, context(utterance), proposal, ROBOT_PROFILE)

    assert (result.status, result.outcome) == ('applied', 'created')
    memory = store.get_memory(result.memory_id)[0]
    assert [link.entity_id for link in memory.links] == [seed.ottoline]


def test_fullwidth_utterance_is_stored_in_nfkc_display_form(store, seed):
    turn = context('ＯＴＴＯＬＩＮＥ ＶＥＸＷＯＲＴＨ ｄｒｉｎｋｓ ｚｕｍｂｌｅｂｅｒｒｙ ｔｅａ.')

    result = admit(store, turn, FACT, ROBOT_PROFILE)

    assert store.get_memory(result.memory_id)[0].summary == (
        'OTTOLINE VEXWORTH drinks zumbleberry tea')


def test_fact_then_preference_with_the_same_value_is_a_duplicate(db_path, store, seed):
    first = admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)
    before = counts(db_path)

    second = admit(store, context(FACT_CONTEXT.utterance), replace(FACT, kind='preference'),
                   ROBOT_PROFILE)

    assert (second.status, second.outcome, second.memory_id) == (
        'applied', 'duplicate', first.memory_id)
    assert (second.reason, second.error) == ('', '')
    assert counts(db_path) == before


def test_duplicate_compares_normalized_values(store, seed):
    first = admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)

    second = admit(
        store, context('ottie drinks ZUMBLEBERRY   TEA.'),
        replace(FACT, subject='Ottie', value='zumbleberry tea', evidence='ottie drinks '
                'zumbleberry tea'), ROBOT_PROFILE)

    assert (second.outcome, second.memory_id) == ('duplicate', first.memory_id)


def test_duplicate_requires_the_same_direct_links(store, seed):
    other = store.add_memory(NewMemory(
        'fact', 'Ottoline drinks zumbleberry tea with Quillon.',
        links=((seed.ottoline, 'subject'), (seed.quillon, 'companion')),
        predicate='drinks', value='zumbleberry tea'))

    result = admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)

    assert result.outcome == 'created'
    assert result.memory_id != other.id


def test_retried_request_is_idempotent(db_path, store, seed):
    first = admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)
    after_first = counts(db_path)

    retry = admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)

    assert (first.outcome, retry.outcome) == ('created', 'duplicate')
    assert retry.memory_id == first.memory_id
    assert counts(db_path) == after_first


def test_second_different_proposal_in_one_turn_is_rejected(db_path, store, seed):
    turn = context('Ottoline Vexworth drinks zumbleberry tea, and reads sea charts.')
    first = admit(store, turn, FACT, ROBOT_PROFILE)
    before = counts(db_path)

    second = admit(store, turn, replace(
        FACT, predicate='reads', value='sea charts',
        evidence='Ottoline Vexworth drinks zumbleberry tea, and reads sea charts'), ROBOT_PROFILE)

    assert first.outcome == 'created'

    assert (second.status, second.reason) == ('rejected', 'invalid_proposal')
    assert second.error == TURN_ALREADY_WROTE_ERROR
    assert counts(db_path) == before


def test_the_next_turn_may_write_again(store, seed):
    admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)

    result = admit(store, RELATIONSHIP_CONTEXT, RELATIONSHIP, ROBOT_PROFILE)

    assert result.outcome == 'created'


@pytest.mark.parametrize('utterance,subject,evidence', [
    ('Remember, you like quiet rooms.', 'you', 'you like quiet rooms'),
    ('Your favourite place is quiet rooms.', 'Your', 'Your favourite place is quiet rooms'),
    ('Yours is the room with quiet rooms.', 'YOURS', 'Yours is the room with quiet rooms'),
    ('You yourself like quiet rooms.', 'yourself', 'You yourself like quiet rooms'),
], ids=['you', 'your', 'yours', 'yourself'])
def test_second_person_subject_denotes_the_robot(store, seed, utterance, subject, evidence):
    proposal = replace(FACT, subject=subject, predicate='likes', value='quiet rooms',
                       evidence=evidence)

    result = admit(store, context(utterance), proposal, ROBOT_PROFILE)

    assert result.outcome == 'created'
    memory = store.get_memory(result.memory_id)[0]
    assert [(link.entity_id, link.role) for link in memory.links] == [(seed.robot, 'subject')]
    assert memory.summary == evidence


def test_robot_profile_is_resolved_at_admission_time(store, seed):
    turn = context('Your favourite drink is zumbleberry tea.')
    proposal = replace(FACT, subject='Your', predicate='favourite_drink',
                       evidence='Your favourite drink is zumbleberry tea')
    refused = admit(store, turn, proposal, 'Gyroplex Unit')
    store.add_alias(seed.robot, 'Gyroplex Unit')

    accepted = admit(store, turn, proposal, 'Gyroplex Unit')

    assert refused.reason == 'subject_not_found'
    assert accepted.outcome == 'created'
    links = store.get_memory(accepted.memory_id)[0].links
    assert [link.entity_id for link in links] == [seed.robot]


@pytest.mark.parametrize('utterance,subject,evidence', [
    ('I drink zumbleberry tea.', 'I', 'I drink zumbleberry tea'),
    ('me drinks zumbleberry tea.', 'me', 'me drinks zumbleberry tea'),
    ('My drink is zumbleberry tea.', 'My', 'My drink is zumbleberry tea'),
    ('Mine is the zumbleberry tea.', 'mine', 'Mine is the zumbleberry tea'),
    ('Myself, I drink zumbleberry tea.', 'myself', 'Myself, I drink zumbleberry tea'),
], ids=['I', 'me', 'my', 'mine', 'myself'])
def test_first_person_never_denotes_the_robot(store, seed, utterance, subject, evidence):
    proposal = replace(FACT, subject=subject, evidence=evidence)

    result = admit(store, context(utterance), proposal, ROBOT_PROFILE)

    assert result.reason == 'subject_not_found'


def test_first_person_resolves_literally_like_any_name(store, seed):
    me = store.add_entity('person', 'Me')
    proposal = replace(FACT, subject='me', evidence='me drinks zumbleberry tea')

    result = admit(store, context('me drinks zumbleberry tea.'), proposal,
                   ROBOT_PROFILE)

    links = store.get_memory(result.memory_id)[0].links
    assert [link.entity_id for link in links] == [me.id]


def test_predicate_case_folds_into_one_slot(store, seed):
    first = admit(store, FACT_CONTEXT, replace(FACT, predicate='Drinks'), ROBOT_PROFILE)

    same = admit(store, context(FACT_CONTEXT.utterance), replace(FACT, predicate='DRINKS'),
                 ROBOT_PROFILE)
    different = admit(
        store, context('Ottoline Vexworth drinks oolong.', 'turn-0051'),
        replace(FACT, predicate='ｄｒｉｎｋｓ', value='oolong',
                evidence='Ottoline Vexworth drinks oolong'), ROBOT_PROFILE)

    assert store.get_memory(first.memory_id)[0].predicate == 'drinks'
    assert (same.outcome, same.memory_id) == ('duplicate', first.memory_id)
    assert (different.reason, different.conflicting_memory_ids) == (
        'conflict', (first.memory_id,))


def test_relationship_predicate_and_role_are_case_folded(store, seed):
    result = admit(store, RELATIONSHIP_CONTEXT, replace(
        RELATIONSHIP, predicate='Cousin_Of', related_role='Cousin'), ROBOT_PROFILE)

    memory = store.get_memory(result.memory_id)[0]
    assert memory.predicate == 'cousin_of'
    assert [(link.entity_id, link.role) for link in memory.links] == [
        (seed.ottoline, 'subject'), (seed.quillon, 'cousin')]
    assert (memory.kind, memory.value) == ('relationship', 'Quillon Brask')


def test_relationship_duplicate_is_matched_by_value_and_links(store, seed):
    first = admit(store, RELATIONSHIP_CONTEXT, RELATIONSHIP, ROBOT_PROFILE)

    again = admit(
        store, context('ottie is the cousin of quill and of Quillon Brask.'),
        replace(RELATIONSHIP, subject='Ottie', related_role='COUSIN',
                evidence='ottie is the cousin of quill and of Quillon Brask'), ROBOT_PROFILE)

    assert (again.outcome, again.memory_id) == ('duplicate', first.memory_id)


def test_relationship_named_by_an_alias_of_the_related_entity_is_a_duplicate(store, seed):
    memories_before = store.counts()['memories']
    first = admit(store, RELATIONSHIP_CONTEXT, RELATIONSHIP, ROBOT_PROFILE)

    again = admit(
        store, context('Ottoline Vexworth is the cousin of Quill.'),
        replace(RELATIONSHIP, value='Quill', related_entity='Quill',
                evidence='Ottoline Vexworth is the cousin of Quill'), ROBOT_PROFILE)

    assert (again.outcome, again.memory_id) == ('duplicate', first.memory_id)
    assert store.counts()['memories'] == memories_before + 1


def test_relationships_never_conflict(store, seed):
    admit(store, RELATIONSHIP_CONTEXT, RELATIONSHIP, ROBOT_PROFILE)
    proposal = replace(RELATIONSHIP, value='Sam Northby', related_entity='Sam Northby',
                       evidence='Ottoline Vexworth is the cousin of Sam Northby')

    second = admit(store, context('Ottoline Vexworth is the cousin of Sam Northby.'), proposal,
                   ROBOT_PROFILE)

    assert second.outcome == 'created'
    links = store.get_memory(second.memory_id)[0].links
    assert [(link.entity_id, link.role) for link in links] == [
        (seed.ottoline, 'subject'), (seed.samwise_north, 'cousin')]


def test_admission_never_touches_existing_memories(store, seed):
    before = store.get_memory(seed.quillon_drinks)
    for case in CASES.values():
        if case.wrap_store is None:
            run_case(store, case)
    admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)

    assert store.get_memory(seed.quillon_drinks) == before


def test_turn_ids_that_normalize_alike_are_different_turns(store, seed):
    fullwidth = TurnContext('\uff45\uff11', 't1', FACT_CONTEXT.utterance)
    ascii_turn = TurnContext('e1', 't1', RELATIONSHIP_CONTEXT.utterance)

    first = admit(store, fullwidth, FACT, ROBOT_PROFILE)
    second = admit(store, ascii_turn, RELATIONSHIP, ROBOT_PROFILE)

    assert (first.outcome, second.outcome) == ('created', 'created')
    labels = [store.get_memory(result.memory_id)[0].source_label for result in (first, second)]
    assert labels == ['episode \\u{ff45}\\u{ff11} turn t1', 'episode e1 turn t1']


def test_a_backslash_in_a_turn_id_cannot_forge_an_escape():
    assert source_label(TurnContext('\\u{ff45}', 't', '')) != source_label(
        TurnContext('\uff45', 't', ''))
