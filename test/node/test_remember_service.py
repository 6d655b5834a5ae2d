# SPDX-License-Identifier: Apache-2.0
"""
remember through the real service of one in-process memory node (node tier).

The rejection table (admission_cases.py) runs against a world seeded once
through the admin services; it writes nothing, so its rows cannot disturb
one another. Every other test creates entities with names of its own.
"""

import contextlib
from dataclasses import replace
import itertools
import re

from helpers.admission_cases import Case, CASES, context, FACT, FACT_CONTEXT, RELATIONSHIP
from helpers.admission_cases import RELATIONSHIP_CONTEXT, ROBOT_PROFILE
from helpers.memory_services import MemoryServices, message_strings, rcl_msg, rcl_srv
from helpers.memory_services import remember_request, SLOW_CALL_TIMEOUT, srv, start_enabled_node
from helpers.memory_services import unique, unique_token, write_lock_held
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.results import TURN_ALREADY_PROPOSED_ERROR
import pytest

pytestmark = pytest.mark.ros

TIMESTAMP = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ')
REASONS = [getattr(srv.Remember.Response, name) for name in dir(srv.Remember.Response)
           if name.startswith('REASON_')]
_turns = itertools.count(1)
# The node's SQLite lock wait in this module (the product's: 5 s).
LOCK_WAIT_S = 0.25

# Rows the service adds to the shared table. ROS strings end at a NUL, so
# the node sees the utterance only up to it; and the real store is made to
# fail instead of a wrapped one.
TABLE = {
    **CASES,
    'nul-cuts-the-utterance': Case(
        'evidence_not_in_utterance',
        context('Note this:\x00 Ottoline Vexworth drinks zumbleberry tea.'), FACT),
    'store-write-locked': Case('backend_failure', FACT_CONTEXT, FACT),
}
STORE_BREAKERS = {'store-write-locked': write_lock_held}


@pytest.fixture(scope='module')
def node(ros, module_memory_node):
    # This module tests admission, not the wait for a late operator turn
    # (test_observed_turns does, with the default 0.5 s): MemoryServices waits
    # until the node heard each turn before it calls remember, so the node
    # need not wait, and a turn it can never hear is answered at once. Nor
    # does it test how long a write waits for a lock another connection holds
    # (store-write-locked): the node waits a quarter second instead of 5 s.
    return start_enabled_node(module_memory_node, ros, 'remember', ROBOT_PROFILE,
                              lock_wait_s=LOCK_WAIT_S, observed_turn_wait_sec=0.0)


@pytest.fixture(scope='module')
def memory(ros, node):
    return MemoryServices(ros, node.prefix, node)


@pytest.fixture(scope='module')
def world(memory):
    """Seed the world the rejection table is written against (admission_cases.py)."""
    ids = {
        'ottoline': memory.entity('Ottoline Vexworth', aliases=['Ottie']),
        'quillon': memory.entity('Quillon Brask', aliases=['Quill']),
        'robot': memory.entity(ROBOT_PROFILE, entity_type='robot'),
        'samwise_north': memory.entity('Sam Northby', aliases=['Samwise']),
        'samwise_south': memory.entity('Sam Southby', aliases=['Samwise']),
    }
    ids['quillon_drinks'] = memory.memory(
        'Quillon drinks black coffee.', [(ids['quillon'], 'subject')],
        predicate='drinks', value='black coffee').id
    return ids


def turn(utterance):
    """Return a new operator turn with episode and turn ids of its own."""
    number = next(_turns)
    return TurnContext(f'episode-{number}', f'turn-{number}', utterance)


def fact(subject, predicate, value, evidence, kind='fact'):
    return Proposal(kind=kind, subject=subject, predicate=predicate, value=value,
                    related_entity=None, related_role=None, evidence=evidence)


def relationship(subject, predicate, related, role, evidence):
    return Proposal(kind='relationship', subject=subject, predicate=predicate, value=related,
                    related_entity=related, related_role=role, evidence=evidence)


def outcome(response):
    return (response.status, response.outcome, response.reason)


def links(memory_message):
    return [(link.entity_id, link.role) for link in memory_message.links]


def count_changes(before, after):
    return {name: after[name] - before[name] for name in after if after[name] != before[name]}


@contextlib.contextmanager
def store_broken(name, node):
    breaker = STORE_BREAKERS.get(name)
    with breaker(node.database_path) if breaker else contextlib.nullcontext():
        yield


def own_turn(context):
    """
    Return the table's turn under an episode id of its own.

    The node takes one proposal per turn, and the table's rows share turns;
    a row whose episode id is itself the broken rule keeps it.
    """
    if context is None or context.episode_id != FACT_CONTEXT.episode_id:
        return context
    return replace(context, episode_id=f'{context.episode_id}-{next(_turns)}')


def call_case(memory, node, name):
    case = TABLE[name]
    with memory.robot_profile_set_to(case.profile), store_broken(name, node):
        return memory.remember(remember_request(own_turn(case.context), case.proposal),
                               timeout=SLOW_CALL_TIMEOUT)


# The rejection table ---------------------------------------------------------------------


def test_the_table_reaches_every_reason():
    assert len(REASONS) == 15
    assert {case.reason for case in TABLE.values()} == set(REASONS)


@pytest.mark.parametrize('name', TABLE)
def test_rejection_has_its_one_reason_and_writes_nothing(memory, node, world, name):
    before = memory.counts()

    response = call_case(memory, node, name)

    assert outcome(response) == ('rejected', '', TABLE[name].reason)
    assert response.memory_id == ''
    expected_conflicts = [world['quillon_drinks']] if TABLE[name].reason == 'conflict' else []
    assert response.conflicting_memory_ids == expected_conflicts
    assert 0 < len(response.error) <= 200
    assert memory.counts() == before


def test_the_table_base_requests_are_admitted(memory, world):
    admitted = [memory.remember(remember_request(FACT_CONTEXT, FACT)),
                memory.remember(remember_request(RELATIONSHIP_CONTEXT, RELATIONSHIP))]

    assert [response.status for response in admitted] == ['applied', 'applied']
    assert [links(memory.show(response.memory_id).memory) for response in admitted] == [
        [(world['ottoline'], 'subject')],
        [(world['ottoline'], 'subject'), (world['quillon'], 'cousin')]]


def input_strings(request, profile):
    texts = [getattr(request, name) for name in request.get_fields_and_field_types()
             if name != 'kind']
    return [text.casefold() for text in texts + [profile] if len(text) >= 3]


def test_no_response_field_echoes_any_input(memory, node, world):
    requests = {name: (remember_request(case.context, case.proposal), case.profile)
                for name, case in TABLE.items()}
    name = unique('Echo Marlowe')
    memory.entity(name)
    said = turn(f'{name} collects bluebottle glass.')
    collects = fact(name, 'collects', 'bluebottle glass', f'{name} collects bluebottle glass')
    requests['created'] = (remember_request(said, collects), ROBOT_PROFILE)
    # The same statement in another turn: already stored.
    requests['duplicate'] = (remember_request(turn(said.utterance), collects), ROBOT_PROFILE)
    echoes = []
    outcomes = {}

    for case_name, (request, profile) in requests.items():
        response = call_case(memory, node, case_name) if case_name in TABLE else (
            memory.remember(request))
        outcomes[case_name] = response.outcome or response.reason
        replies = [text.casefold() for text in message_strings(response)]
        echoes += [(case_name, text) for text in input_strings(request, profile)
                   if any(text in reply for reply in replies)]

    assert echoes == []
    assert outcomes == {**{name: case.reason for name, case in TABLE.items()},
                        'created': 'created', 'duplicate': 'duplicate'}


# Accepted writes ------------------------------------------------------------------------------


def test_created_memory_is_grounded_in_the_operator_wording(memory):
    name = unique('Ysolde Farrier')
    entity = memory.entity(name)
    spoken = name.upper().replace(' ', '  ', 1)
    said = turn(f'Remember this:   {spoken} drinks Nettle\u3000BEER, at noon.')
    proposal = fact(name, 'Drinks', 'nettle beer', f'{name.lower()} drinks nettle beer')
    before = memory.counts()

    response = memory.remember(remember_request(said, proposal))

    assert outcome(response) == ('applied', 'created', '')
    assert (response.conflicting_memory_ids, response.error) == ([], '')
    assert count_changes(before, memory.counts()) == {
        'memory_count': 1, 'active_memory_count': 1, 'link_count': 1, 'payload_count': 1}
    shown = memory.show(response.memory_id)
    stored = shown.memory
    summary = f'{spoken.replace("  ", " ")} drinks Nettle BEER'
    assert (stored.id, stored.kind, stored.summary) == (response.memory_id, 'fact', summary)
    assert (stored.predicate, stored.value) == ('drinks', 'Nettle BEER')
    assert (stored.source_kind, stored.source_label) == (
        'operator_statement', f'episode {said.episode_id} turn {said.turn_id}')
    assert (stored.status, stored.has_confidence) == ('active', False)
    assert TIMESTAMP.fullmatch(stored.created_at)
    assert [(link.entity_id, link.entity_name, link.role) for link in stored.links] == [
        (entity, name, 'subject')]
    assert [(payload.storage, payload.media_type, payload.text) for payload in shown.payloads] \
        == [('inline', 'text/plain', summary)]


def test_relationship_links_the_related_entity_under_its_role(memory):
    subject, related = unique('Perrin Coll'), unique('Aster Coll')
    subject_id, related_id = memory.entity(subject), memory.entity(related)
    said = turn(f'{subject} is the apprentice of {related}.')

    response = memory.remember(remember_request(said, relationship(
        subject, 'apprentice_of', related, 'master', f'{subject} is the apprentice of {related}')))

    stored = memory.show(response.memory_id).memory
    assert outcome(response) == ('applied', 'created', '')
    assert (stored.kind, stored.predicate, stored.value) == (
        'relationship', 'apprentice_of', related)
    assert links(stored) == [(subject_id, 'subject'), (related_id, 'master')]


SLOT_KINDS = [('fact', 'preference'), ('preference', 'fact'), ('fact', 'fact')]


@pytest.mark.parametrize('first_kind,second_kind', SLOT_KINDS,
                         ids=['-then-'.join(kinds) for kinds in SLOT_KINDS])
def test_same_slot_and_value_is_a_duplicate_across_kinds(memory, first_kind, second_kind):
    name = unique('Dunstan Hale')
    memory.entity(name)
    first = memory.remember(remember_request(
        turn(f'{name} prefers the window seat.'),
        fact(name, 'prefers', 'the window seat', f'{name} prefers the window seat',
             kind=first_kind)))
    before = memory.counts()

    again = memory.remember(remember_request(
        turn(f'Really, {name.upper()} PREFERS THE WINDOW SEAT.'),
        fact(name, 'prefers', 'THE  window seat', f'{name} prefers the window seat',
             kind=second_kind)))

    assert outcome(first) == ('applied', 'created', '')
    assert outcome(again) == ('applied', 'duplicate', '')
    assert (again.memory_id, again.error) == (first.memory_id, '')
    assert memory.counts() == before
    assert memory.show(first.memory_id).memory.kind == first_kind


@pytest.mark.parametrize('first_kind,second_kind', SLOT_KINDS,
                         ids=['-then-'.join(kinds) for kinds in SLOT_KINDS])
def test_another_value_in_the_slot_is_a_conflict_naming_the_existing_memory(
        memory, first_kind, second_kind):
    name = unique('Mirela Stone')
    memory.entity(name)
    first = memory.remember(remember_request(
        turn(f'{name} lives in Harrowgate.'),
        fact(name, 'lives_in', 'Harrowgate', f'{name} lives in Harrowgate', kind=first_kind)))
    stored_before = memory.show(first.memory_id)
    before = memory.counts()

    second = memory.remember(remember_request(
        turn(f'Now {name} lives in Pellham.'),
        fact(name, 'lives_in', 'Pellham', f'{name} lives in Pellham', kind=second_kind)))

    assert outcome(second) == ('rejected', '', 'conflict')
    assert (second.memory_id, second.conflicting_memory_ids) == ('', [first.memory_id])
    assert memory.counts() == before
    assert memory.show(first.memory_id) == stored_before


VARIANTS = {
    'fullwidth-utterance': lambda name: (
        ''.join(chr(ord(c) + 0xfee0) if '!' <= c <= '~' else c
                for c in f'{name} drinks sloe gin.'),
        fact(name, 'drinks', 'sloe gin', f'{name} drinks sloe gin')),
    'fullwidth-and-spaced-fields': lambda name: (
        f'Note: {name} drinks sloe gin.',
        fact(''.join(chr(ord(c) + 0xfee0) if '!' <= c <= '~' else c for c in name.lower()),
             'ＤＲＩＮＫＳ', 'ＳＬＯＥ\u3000ＧＩＮ', f'  {name.upper()}   drinks  sloe GIN ')),
    'case-and-whitespace-utterance': lambda name: (
        f'note:\u00a0{name.swapcase()}\u2003DRINKS   Sloe Gin!',
        fact(name, 'drinks', 'sloe gin', f'{name} drinks sloe gin')),
}


@pytest.mark.parametrize('variant', VARIANTS.values(), ids=VARIANTS.keys())
def test_normalized_variants_are_admitted(memory, variant):
    name = unique('Lorcan Beck')
    entity = memory.entity(name)
    utterance, proposal = variant(name)

    response = memory.remember(remember_request(turn(utterance), proposal))

    assert outcome(response) == ('applied', 'created', '')
    stored = memory.show(response.memory_id).memory
    assert links(stored) == [(entity, 'subject')]
    assert (stored.predicate, stored.value.casefold()) == ('drinks', 'sloe gin')


def test_alias_in_any_case_resolves_the_subject(memory):
    name, alias = unique('Benedikta Rook'), unique('Benny')
    entity = memory.entity(name, aliases=[alias])
    said = turn(f'{alias.upper()} plays the oboe.')

    response = memory.remember(remember_request(
        said, fact(alias.lower(), 'plays', 'the oboe', f'{alias} plays the oboe')))

    assert links(memory.show(response.memory_id).memory) == [(entity, 'subject')]


CONTROL_CHARACTERS = {
    'tab-in-value': ('value', '\t', 'invalid_proposal'),
    'newline-in-evidence': ('evidence', '\n', 'invalid_proposal'),
    'escape-in-subject': ('subject', '\x1b', 'invalid_proposal'),
    'delete-in-predicate': ('predicate', '\x7f', 'invalid_proposal'),
    'c1-in-value': ('value', '\x85', 'invalid_proposal'),
    'carriage-return-in-utterance': ('utterance', '\r', 'evidence_not_in_utterance'),
    # Invisible characters change what a text says without showing: refused alike.
    'soft-hyphen-in-subject': ('subject', '\u00ad', 'invalid_proposal'),
    'zero-width-joiner-in-evidence': ('evidence', '\u200d', 'invalid_proposal'),
    'zero-width-space-in-value': ('value', '\u200b', 'invalid_proposal'),
    'bidi-override-in-value': ('value', '\u202e', 'invalid_proposal'),
    'bidi-isolate-in-subject': ('subject', '\u2066', 'invalid_proposal'),
    'line-separator-in-evidence': ('evidence', '\u2028', 'invalid_proposal'),
    'paragraph-separator-in-value': ('value', '\u2029', 'invalid_proposal'),
    'byte-order-mark-in-predicate': ('predicate', '\ufeff', 'invalid_proposal'),
    'variation-selector-in-kind': ('kind', '\ufe0f', 'invalid_proposal'),
    'soft-hyphen-in-utterance': ('utterance', '\u00ad', 'evidence_not_in_utterance'),
    'line-separator-in-utterance': ('utterance', '\u2028', 'evidence_not_in_utterance'),
    'zero-width-space-in-turn-id': ('turn_id', '\u200b', 'evidence_not_in_utterance'),
}


@pytest.mark.parametrize('field,char,reason', CONTROL_CHARACTERS.values(),
                         ids=CONTROL_CHARACTERS.keys())
def test_control_characters_are_rejected_not_removed(memory, field, char, reason):
    name = unique('Odile Varn')
    memory.entity(name)
    clean = remember_request(turn(f'Note: {name} paints sea cliffs.'), fact(
        name, 'paints', 'sea cliffs', f'{name} paints sea cliffs'))
    dirty = remember_request(turn(clean.utterance), fact(
        name, 'paints', 'sea cliffs', f'{name} paints sea cliffs'))
    text = getattr(dirty, field)
    setattr(dirty, field, text[:3] + char + text[3:])
    before = memory.counts()

    rejected = memory.remember(dirty)
    unchanged = memory.counts()
    admitted = memory.remember(clean)

    assert outcome(rejected) == ('rejected', '', reason)
    assert unchanged == before
    assert outcome(admitted) == ('applied', 'created', '')


# The second-person rule and the robot_profile parameter --------------------------------------


SECOND_PERSON = {
    'you': ('Remember, you like {v}.', 'you', 'you like {v}'),
    'your': ('Your favourite place is {v}.', 'Your', 'Your favourite place is {v}'),
    'yours': ('Yours is the wing with {v}.', 'YOURS', 'Yours is the wing with {v}'),
    'yourself': ('You yourself like {v}.', 'yourself', 'You yourself like {v}'),
}


@pytest.mark.parametrize('utterance,subject,evidence', SECOND_PERSON.values(),
                         ids=SECOND_PERSON.keys())
def test_second_person_subject_denotes_the_robot_profile_entity(
        memory, world, utterance, subject, evidence):
    value = 'quiet lantern rooms'
    said = turn(utterance.format(v=value))

    response = memory.remember(remember_request(said, fact(
        subject, unique_token('likes'), value, evidence.format(v=value))))

    assert memory.robot_profile() == ROBOT_PROFILE
    assert outcome(response) == ('applied', 'created', '')
    stored = memory.show(response.memory_id).memory
    assert links(stored) == [(world['robot'], 'subject')]
    assert stored.summary == evidence.format(v=value)


def your_favourite(drink):
    return (turn(f'Your favourite drink is {drink}.'),
            fact('your', unique_token('favourite_drink'), drink,
                 f'Your favourite drink is {drink}'))


@pytest.mark.parametrize('supervised_step', ['entity_add', 'alias_add'])
def test_profile_entity_is_resolved_at_admission_time(memory, supervised_step):
    profile = unique('Gyroplex Unit')
    said, proposal = your_favourite('cold brew')
    request = remember_request(said, proposal)
    with memory.robot_profile_set_to(profile):
        before = memory.counts()
        refused = memory.remember(request)
        unchanged = memory.counts()
        if supervised_step == 'entity_add':
            robot = memory.entity(profile, entity_type='robot')
        else:
            robot = memory.entity(unique('Gyroplex Chassis'), entity_type='robot')
            memory.alias(robot, profile)
        # The same turn keeps its first answer; the operator's next turn is admitted.
        same_turn = memory.remember(request)
        retried = memory.remember(remember_request(turn(said.utterance), proposal))

    assert outcome(refused) == ('rejected', '', 'subject_not_found')
    assert unchanged == before
    assert outcome(same_turn) == ('rejected', '', 'subject_not_found')
    assert outcome(retried) == ('applied', 'created', '')
    assert links(memory.show(retried.memory_id).memory) == [(robot, 'subject')]


def test_ambiguous_profile_entity_is_rejected(memory):
    profile = unique('Twin Unit')
    memory.entity(profile, entity_type='robot')
    memory.entity(unique('Twin Frame'), entity_type='robot', aliases=[profile.lower()])
    with memory.robot_profile_set_to(profile):
        before = memory.counts()
        response = memory.remember(remember_request(*your_favourite('ginger tea')))
        after = memory.counts()

    assert outcome(response) == ('rejected', '', 'subject_ambiguous')
    assert after == before


def test_robot_profile_changed_at_runtime_is_used(memory, world):
    other = unique('Brassgear Unit')
    other_id = memory.entity(other, entity_type='robot')
    first = memory.remember(remember_request(*your_favourite('mint tea')))
    with memory.robot_profile_set_to(other):
        reported = memory.robot_profile()
        second = memory.remember(remember_request(*your_favourite('mint tea')))

    assert reported == other
    assert links(memory.show(first.memory_id).memory) == [(world['robot'], 'subject')]
    assert links(memory.show(second.memory_id).memory) == [(other_id, 'subject')]
    assert memory.robot_profile() == ROBOT_PROFILE


def test_robot_profile_with_control_characters_is_refused(memory, ros):
    parameter = rcl_msg.Parameter(name='robot_profile', value=rcl_msg.ParameterValue(
        type=rcl_msg.ParameterType.PARAMETER_STRING, string_value='Kestrel\nbot'))

    response = ros.call(rcl_srv.SetParameters, f'{memory.prefix}/set_parameters',
                        rcl_srv.SetParameters.Request(parameters=[parameter]))

    assert [result.successful for result in response.results] == [False]
    assert memory.robot_profile() == ROBOT_PROFILE


FIRST_PERSON = {
    'I': ('I drink elderflower cordial.', 'I', 'I drink elderflower cordial'),
    'me': ('me drinks elderflower cordial.', 'me', 'me drinks elderflower cordial'),
    'my': ('My drink is elderflower cordial.', 'My', 'My drink is elderflower cordial'),
    'mine': ('Mine is the elderflower cordial.', 'mine', 'Mine is the elderflower cordial'),
    'myself': ('Myself, I drink elderflower cordial.', 'MYSELF',
               'Myself, I drink elderflower cordial'),
}


@pytest.mark.parametrize('utterance,subject,evidence', FIRST_PERSON.values(),
                         ids=FIRST_PERSON.keys())
def test_first_person_never_denotes_the_robot(memory, world, utterance, subject, evidence):
    before = memory.counts()

    response = memory.remember(remember_request(turn(utterance), fact(
        subject, 'drinks', 'elderflower cordial', evidence)))

    assert memory.robot_profile() == ROBOT_PROFILE
    assert outcome(response) == ('rejected', '', 'subject_not_found')
    assert memory.counts() == before


# Tokens, duplicates, retries, one write per turn ---------------------------------------------


def test_predicate_is_case_folded_into_one_slot(memory):
    name = unique('Henrike Pole')
    memory.entity(name)
    evidence = f'{name} rides a tandem'
    first = memory.remember(remember_request(
        turn(evidence + '.'), fact(name, 'Rides', 'a tandem', evidence)))
    same = memory.remember(remember_request(
        turn(evidence + '.'), fact(name, 'RIDES', 'a tandem', evidence)))
    different = memory.remember(remember_request(
        turn(f'{name} rides a unicycle.'),
        fact(name, 'ｒｉｄｅｓ', 'a unicycle', f'{name} rides a unicycle')))

    assert memory.show(first.memory_id).memory.predicate == 'rides'
    assert (outcome(same), same.memory_id) == (('applied', 'duplicate', ''), first.memory_id)
    assert (outcome(different), different.conflicting_memory_ids) == (
        ('rejected', '', 'conflict'), [first.memory_id])


def test_relationship_predicate_and_role_are_case_folded(memory):
    subject, related = unique('Galen Ash'), unique('Rowan Ash')
    subject_id, related_id = memory.entity(subject), memory.entity(related)

    response = memory.remember(remember_request(
        turn(f'{subject} is the brother of {related}.'),
        relationship(subject, 'Brother_Of', related, 'SIBLING',
                     f'{subject} is the brother of {related}')))

    stored = memory.show(response.memory_id).memory
    assert stored.predicate == 'brother_of'
    assert links(stored) == [(subject_id, 'subject'), (related_id, 'sibling')]


def test_same_relationship_again_is_a_duplicate(memory):
    subject, alias, related = unique('Idris Vane'), unique('Idi'), unique('Nessa Vane')
    memory.entity(subject, aliases=[alias])
    memory.entity(related)
    first = memory.remember(remember_request(
        turn(f'{subject} is married to {related}.'),
        relationship(subject, 'married_to', related, 'spouse',
                     f'{subject} is married to {related}')))
    before = memory.counts()

    again = memory.remember(remember_request(
        turn(f'{alias} is married to {related.upper()}, as you know.'),
        relationship(alias, 'MARRIED_TO', related.lower(), 'Spouse',
                     f'{alias} is married to {related}')))

    assert outcome(first) == ('applied', 'created', '')
    assert (outcome(again), again.memory_id) == (('applied', 'duplicate', ''), first.memory_id)
    assert memory.counts() == before


def test_relationships_to_different_entities_never_conflict(memory):
    subject, first_friend, second_friend = (
        unique('Cosima Hart'), unique('Ebba Lind'), unique('Tove Lind'))
    subject_id = memory.entity(subject)
    memory.entity(first_friend)
    second_id = memory.entity(second_friend)
    memory.remember(remember_request(
        turn(f'{subject} is a friend of {first_friend}.'),
        relationship(subject, 'friend_of', first_friend, 'friend',
                     f'{subject} is a friend of {first_friend}')))

    second = memory.remember(remember_request(
        turn(f'{subject} is a friend of {second_friend}.'),
        relationship(subject, 'friend_of', second_friend, 'friend',
                     f'{subject} is a friend of {second_friend}')))

    assert outcome(second) == ('applied', 'created', '')
    assert links(memory.show(second.memory_id).memory) == [
        (subject_id, 'subject'), (second_id, 'friend')]


def test_retried_request_gets_the_first_answer(memory):
    name = unique('Rosamund Teller')
    memory.entity(name)
    request = remember_request(turn(f'{name} keeps a pet heron.'),
                               fact(name, 'keeps', 'a pet heron', f'{name} keeps a pet heron'))
    before = memory.counts()

    first = memory.remember(request)
    after_first = memory.counts()
    retry = memory.remember(request)

    # A lost reply is never a lost answer: the repeat is told that this turn stored it.
    assert (outcome(first), outcome(retry)) == (
        ('applied', 'created', ''), ('applied', 'created', ''))
    assert retry.memory_id == first.memory_id
    assert count_changes(before, after_first)['memory_count'] == 1
    assert memory.counts() == after_first


def test_second_different_proposal_in_one_turn_is_rejected(memory):
    name = unique('Anselm Quarry')
    memory.entity(name)
    said = turn(f'{name} carves chess sets, and sings sea shanties.')
    first = remember_request(said, fact(name, 'carves', 'chess sets', f'{name} carves chess sets'))
    second = remember_request(said, fact(
        name, 'sings', 'sea shanties', f'{name} carves chess sets, and sings sea shanties'))
    memory.remember(first)
    before = memory.counts()

    rejected = memory.remember(second)
    retried = memory.remember(first)

    assert outcome(rejected) == ('rejected', '', 'invalid_proposal')
    assert rejected.error == TURN_ALREADY_PROPOSED_ERROR
    assert memory.counts() == before
    assert outcome(retried) == ('applied', 'created', '')


def test_after_a_rejection_the_turn_takes_no_other_proposal(memory):
    name = unique('Ottilie Brand')
    memory.entity(name)
    said = turn(f'{name} does not like olives.')
    wrong = remember_request(said, fact(name, 'likes', 'olives', f'{name} does not like olives'))
    right = remember_request(said, fact(
        name, 'does_not_like', 'olives', f'{name} does not like olives'))
    before = memory.counts()

    rejected = memory.remember(wrong)
    variant = memory.remember(right)
    retried = memory.remember(wrong)
    next_turn = memory.remember(remember_request(turn(said.utterance), fact(
        name, 'does_not_like', 'olives', f'{name} does not like olives')))

    assert outcome(rejected) == ('rejected', '', 'invalid_proposal')
    assert outcome(variant) == ('rejected', '', 'invalid_proposal')
    assert variant.error == TURN_ALREADY_PROPOSED_ERROR
    assert (outcome(retried), retried.error) == (outcome(rejected), rejected.error)
    assert memory.counts()['memory_count'] == before['memory_count'] + 1
    assert outcome(next_turn) == ('applied', 'created', '')


def test_turn_ids_are_compared_exactly_as_sent(memory):
    name = unique('Wendel Aske')
    memory.entity(name)
    number = next(_turns)
    fullwidth = TurnContext(f'ｅ{number}', 't1', f'{name} paints lighthouses.')
    ascii_turn = TurnContext(f'e{number}', 't1', f'{name} sketches harbours.')
    first = memory.remember(remember_request(fullwidth, fact(
        name, 'paints', 'lighthouses', f'{name} paints lighthouses')))

    other = memory.remember(remember_request(ascii_turn, fact(
        name, 'sketches', 'harbours', f'{name} sketches harbours')))

    assert outcome(first) == ('applied', 'created', '')
    assert outcome(other) == ('applied', 'created', '')
    assert memory.show(first.memory_id).memory.source_label == (
        f'episode \\u{{ff45}}{number} turn t1')


# Store failure and robustness ------------------------------------------------------------------


def test_store_failure_is_backend_failure_and_only_that(memory, node):
    name = unique('Leopold Sark')
    memory.entity(name)
    request = remember_request(turn(f'{name} builds harpsichords.'), fact(
        name, 'builds', 'harpsichords', f'{name} builds harpsichords'))
    before = memory.counts()

    # A real store failure: another connection holds the write lock, so the
    # node's BEGIN IMMEDIATE times out and SQLite reports "database is locked".
    with write_lock_held(node.database_path):
        failed = memory.remember(request, timeout=SLOW_CALL_TIMEOUT)
    unchanged = memory.counts()
    admitted = memory.remember(request)

    assert outcome(failed) == ('rejected', '', 'backend_failure')
    assert (failed.memory_id, failed.conflicting_memory_ids) == ('', [])
    assert failed.error == 'The memory store failed; nothing was written.'
    assert unchanged == before
    assert outcome(admitted) == ('applied', 'created', '')


HOSTILE_REQUESTS = {
    'all-empty': srv.Remember.Request(),
    'huge-utterance': remember_request(
        turn('Ottoline Vexworth drinks zumbleberry tea. ' * 5000), FACT),
    'huge-fields': srv.Remember.Request(
        episode_id='e' * 10000, turn_id='t' * 10000, utterance='u' * 100000, kind='k' * 10000,
        subject='s' * 100000, predicate='p' * 10000, value='v' * 100000,
        related_entity='r' * 100000, related_role='o' * 10000, evidence='d' * 100000),
    'every-control-character': remember_request(
        turn(''.join(map(chr, range(32))) + '\x7f'),
        replace(FACT, subject=''.join(map(chr, range(1, 32))))),
}


# One field of 1,000,000 characters that NFKC would grow eighteen-fold: the
# node refuses it by its raw length, before normalizing anything.
HUGE = '\ufdfa' * 1_000_000
OVERSIZED = {
    'value': ('value', 'invalid_tool_arguments'),
    'evidence': ('evidence', 'invalid_tool_arguments'),
    'subject': ('subject', 'invalid_tool_arguments'),
    'utterance': ('utterance', 'evidence_not_in_utterance'),
    'turn-id': ('turn_id', 'evidence_not_in_utterance'),
}


@pytest.mark.parametrize('field,reason', OVERSIZED.values(), ids=OVERSIZED.keys())
def test_oversized_field_is_refused_before_normalization(memory, field, reason):
    name = unique('Huge Harrow')
    memory.entity(name)
    request = remember_request(turn(f'{name} keeps bees.'), fact(
        name, 'keeps', 'bees', f'{name} keeps bees'))
    setattr(request, field, HUGE)
    before = memory.counts()

    response = memory.remember(request, timeout=SLOW_CALL_TIMEOUT)

    assert outcome(response) == ('rejected', '', reason)
    assert response.error and '\ufdfa' not in response.error
    assert memory.counts() == before


# 艾达喜欢绿茶 / エイダはお茶が好き / เอดาชอบชา: "Ada likes (green) tea" with no spaces.
UNSEGMENTED = {
    'chinese': ('\u827e\u8fbe', '\u7eff\u8336', '\u827e\u8fbe\u559c\u6b22\u7eff\u8336'),
    'japanese': ('\u30a8\u30a4\u30c0', '\u304a\u8336',
                 '\u30a8\u30a4\u30c0\u306f\u304a\u8336\u304c\u597d\u304d'),
    'thai': ('\u0e40\u0e2d\u0e14\u0e32', '\u0e0a\u0e32',
             '\u0e40\u0e2d\u0e14\u0e32\u0e0a\u0e2d\u0e1a\u0e0a\u0e32'),
}


@pytest.mark.parametrize('subject,value,evidence', UNSEGMENTED.values(), ids=UNSEGMENTED.keys())
def test_scripts_written_without_spaces_are_refused(memory, subject, value, evidence):
    memory.entity(subject)
    before = memory.counts()

    response = memory.remember(remember_request(turn(evidence + '\u3002'), fact(
        subject, 'likes', value, evidence)))

    assert outcome(response) == ('rejected', '', 'evidence_not_in_utterance')
    assert memory.counts() == before


def test_node_keeps_serving_after_bad_input(memory, node, world):
    before = memory.counts()

    rejected = {name: memory.remember(request) for name, request in HOSTILE_REQUESTS.items()}

    assert {name: response.status for name, response in rejected.items()} == dict.fromkeys(
        HOSTILE_REQUESTS, 'rejected')
    # Empty ids name no operator turn the node could have heard: that is
    # decided before the proposal is looked at.
    assert rejected['all-empty'].reason == 'evidence_not_in_utterance'
    assert memory.counts() == before
    assert node.running()
    name = unique('Still Serving')
    memory.entity(name)
    response = memory.remember(remember_request(
        turn(f'{name} hums in the evening.'), fact(name, 'hums', 'in the evening',
                                                   f'{name} hums in the evening')))
    assert outcome(response) == ('applied', 'created', '')
