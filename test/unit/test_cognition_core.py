# SPDX-License-Identifier: Apache-2.0
"""Cognition-side library: tool schemas, argument parsing, episodes, working memory."""

import json
from typing import Optional

from helpers import strict_tool_schemas
from mira_memory.cognition.episodes import (
    AcquisitionBudget, Allowed, AutonomousEpisode, OperatorEpisode, Refused, RememberRequest,
    WorkingMemory)
from mira_memory.cognition.tools import (
    parse_recall_arguments, parse_remember_arguments, RECALL_MEMORY_TOOL, recall_result_text,
    RecallArguments, refused_text, remember_result_text, REMEMBER_TOOL, strict_parameters,
    ToolArgumentError, tools_for_episode)
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.pydantic_compat import Field, Model, StrictStr
import pytest

SECRET = 'Zyxwv-sentinel'

FACT = {
    'kind': 'fact', 'subject': 'Ada', 'predicate': 'favorite_drink', 'value': 'green tea',
    'related_entity': None, 'related_role': None, 'evidence': 'Ada drinks green tea',
}
RELATIONSHIP = {
    'kind': 'relationship', 'subject': 'Ada', 'predicate': 'works_with',
    'value': 'Charles', 'related_entity': 'Charles', 'related_role': 'colleague',
    'evidence': 'Ada works with Charles',
}
SECRET_FACT = dict(FACT, subject=SECRET, value=SECRET, evidence=SECRET)


def with_changes(base, **changes):
    return json.dumps(dict(base, **changes))


def operator_turn(utterance='Ada drinks green tea every morning'):
    episode = OperatorEpisode('e1')
    turn = episode.begin_turn('t1', utterance)
    return episode, turn


# Tool schemas

@pytest.mark.parametrize('tool', [RECALL_MEMORY_TOOL, REMEMBER_TOOL])
def test_tool_schema_is_strict(tool):
    parameters = tool['parameters']
    assert tool['strict'] is True
    assert tool['type'] == 'function'
    assert parameters['additionalProperties'] is False
    assert sorted(parameters['required']) == sorted(parameters['properties'])


@pytest.mark.parametrize('tool, before', [
    (RECALL_MEMORY_TOOL, strict_tool_schemas.RECALL_MEMORY),
    (REMEMBER_TOOL, strict_tool_schemas.REMEMBER)], ids=['recall_memory', 'remember'])
def test_schema_derived_from_the_model_is_the_one_written_by_hand_before(tool, before):
    # The same JSON text, key order included: the model is offered what it was before.
    assert json.dumps(tool['parameters']) == json.dumps(before)


@pytest.mark.parametrize('tool', [RECALL_MEMORY_TOOL, REMEMBER_TOOL])
def test_every_property_is_in_strict_form(tool):
    for spec in tool['parameters']['properties'].values():
        assert set(spec) <= {'type', 'enum', 'description'}  # no title, no default
        assert spec['type'] in ('string', ['string', 'null'])
        assert spec['description']


def test_strict_parameters_makes_a_nullable_field_a_required_type_union():
    class Sample(Model):
        """A model with one plain and one nullable field."""

        name: StrictStr = Field(..., description='a name')
        note: Optional[StrictStr] = Field(..., description='a note')

    assert strict_parameters(Sample) == {
        'type': 'object',
        'properties': {'name': {'type': 'string', 'description': 'a name'},
                       'note': {'type': ['string', 'null'], 'description': 'a note'}},
        'required': ['name', 'note'], 'additionalProperties': False}


def test_remember_related_fields_are_required_but_nullable():
    properties = REMEMBER_TOOL['parameters']['properties']
    for name in ('related_entity', 'related_role'):
        assert properties[name]['type'] == ['string', 'null']
        assert name in REMEMBER_TOOL['parameters']['required']


def test_remember_kind_is_an_enum_of_the_three_kinds():
    kind = REMEMBER_TOOL['parameters']['properties']['kind']
    assert kind['enum'] == ['fact', 'preference', 'relationship']


@pytest.mark.parametrize('kind', ['operator', 'autonomous'])
def test_tool_definitions_are_json_serializable(kind):
    tools = tools_for_episode(kind)
    assert json.loads(json.dumps(tools)) == list(tools)


def test_operator_episode_offers_both_tools():
    assert [tool['name'] for tool in OperatorEpisode('e1').tools] == [
        'recall_memory', 'remember']


def test_autonomous_episode_offers_only_recall():
    episode = AutonomousEpisode('a1', 'goal_follow_up')
    assert [tool['name'] for tool in episode.tools] == ['recall_memory']


def test_unknown_episode_kind_is_rejected():
    with pytest.raises(ValueError):
        tools_for_episode('background')


def test_changing_offered_tools_does_not_change_parsing():
    offered = tools_for_episode('operator')
    offered[0]['parameters']['additionalProperties'] = True
    offered[0]['parameters']['properties']['extra'] = {'type': 'string'}
    with pytest.raises(ToolArgumentError):
        parse_recall_arguments({'query': 'Ada', 'extra': 'x'})


def test_remember_description_states_the_acknowledgement_rule():
    description = REMEMBER_TOOL['description']
    assert 'at most one memory' in description
    assert 'Only the runtime result confirms a write' in description


# Argument parsing

def test_recall_arguments_parse_from_json_text():
    assert parse_recall_arguments('{"query": "Ada Lovelace"}') == RecallArguments(
        'Ada Lovelace')


def test_remember_arguments_parse_from_dict_with_nulls():
    assert parse_remember_arguments(FACT) == Proposal(
        'fact', 'Ada', 'favorite_drink', 'green tea', None, None, 'Ada drinks green tea')


def test_remember_arguments_parse_relationship_from_json_text():
    arguments = parse_remember_arguments(json.dumps(RELATIONSHIP))
    assert (arguments.related_entity, arguments.related_role) == ('Charles', 'colleague')


def test_parsing_applies_no_admission_rule():
    # Evidence that is not in any utterance and a non-token predicate still
    # have the schema's shape; judging them is the memory node's job.
    arguments = parse_remember_arguments(
        with_changes(FACT, predicate='Not A Token!', evidence='something else'))
    assert arguments.predicate == 'Not A Token!'


MALFORMED_REMEMBER = {
    'not json': '{"kind": "fact", "subject": "%s"' % SECRET,
    'array': json.dumps([SECRET]),
    'string': json.dumps(SECRET),
    'missing property': json.dumps(
        {k: v for k, v in SECRET_FACT.items() if k != 'evidence'}),
    'extra property': with_changes(SECRET_FACT, **{SECRET: SECRET}),
    'number': with_changes(SECRET_FACT, value=42),
    'list': with_changes(SECRET_FACT, value=[SECRET]),
    'bool': with_changes(SECRET_FACT, predicate=True),
    'null subject': with_changes(SECRET_FACT, subject=None),
    'number related role': with_changes(SECRET_FACT, related_role=7),
    'kind outside enum': with_changes(SECRET_FACT, kind=SECRET),
    'duplicate key': with_changes(SECRET_FACT).replace('{', '{"subject": "Ada", ', 1),
    'lone surrogate': with_changes(SECRET_FACT, evidence='\ud800'),
    # ROS strings end at NUL; the node would see a cut text it cannot judge.
    'nul character': with_changes(SECRET_FACT, value='green\x00tea'),
}


@pytest.mark.parametrize('case', sorted(MALFORMED_REMEMBER))
def test_malformed_remember_arguments_raise(case):
    with pytest.raises(ToolArgumentError):
        parse_remember_arguments(MALFORMED_REMEMBER[case])


@pytest.mark.parametrize('case', sorted(MALFORMED_REMEMBER))
def test_argument_error_does_not_echo_input(case):
    with pytest.raises(ToolArgumentError) as caught:
        parse_remember_arguments(MALFORMED_REMEMBER[case])
    assert SECRET not in str(caught.value)
    assert 'green tea' not in str(caught.value)


@pytest.mark.parametrize('raw', [
    '{"query": 5}', '{"query": null}', '{}', '{"query": "Ada", "limit": 3}', 'Ada', None, 7,
    '{"query": "Ada\\u0000Lovelace"}'])
def test_malformed_recall_arguments_raise(raw):
    with pytest.raises(ToolArgumentError):
        parse_recall_arguments(raw)


@pytest.mark.parametrize('changes, message', [
    ({'kind': SECRET}, 'property kind must be one of: fact, preference, relationship'),
    ({'value': 42}, 'property value must be a string'),
    ({'related_role': 7}, 'property related_role must be a string or null'),
    ({'subject': None}, 'property subject must be a string'),
    ({'evidence': 'green\x00tea'}, 'property evidence must be a string'),
    ({SECRET: 1, 'x': 2}, '2 unexpected properties; the tool defines only: kind, subject, '
                          'predicate, value, related_entity, related_role, evidence'),
])
def test_argument_error_is_one_line_naming_the_property(changes, message):
    with pytest.raises(ToolArgumentError) as caught:
        parse_remember_arguments(with_changes(SECRET_FACT, **changes))
    assert str(caught.value) == message


def test_missing_properties_are_named_in_schema_order():
    raw = {k: v for k, v in FACT.items() if k not in ('evidence', 'kind')}
    with pytest.raises(ToolArgumentError) as caught:
        parse_remember_arguments(raw)
    assert str(caught.value) == 'missing required properties: kind, evidence'


def test_missing_property_error_names_it():
    raw = {k: v for k, v in FACT.items() if k != 'evidence'}
    with pytest.raises(ToolArgumentError, match='evidence'):
        parse_remember_arguments(raw)


# Acquisition budget

def test_budget_allows_two_attempts_then_refuses():
    budget = AcquisitionBudget()
    assert [budget.try_acquire() for _ in range(3)] == [True, True, False]
    assert (budget.used, budget.remaining) == (2, 0)


def test_budget_limit_is_configurable():
    budget = AcquisitionBudget(limit=1)
    assert budget.try_acquire()
    assert not budget.try_acquire()


def test_recall_call_is_allowed_with_parsed_query():
    episode, _ = operator_turn()
    planned = episode.plan_call('recall_memory', '{"query": "Ada"}')
    assert planned == Allowed('recall_memory', RecallArguments('Ada'))


def test_allowed_recall_uses_one_attempt():
    episode, _ = operator_turn()
    episode.plan_call('recall_memory', '{"query": "Ada"}')
    assert episode.budget.remaining == 1


def test_malformed_recall_uses_an_attempt_and_is_refused():
    episode, _ = operator_turn()
    planned = episode.plan_call('recall_memory', '{"query": 3}')
    assert isinstance(planned, Refused)
    assert planned.reason == 'invalid_tool_arguments'
    assert episode.budget.used == 1


def test_third_recall_is_refused_without_reaching_the_service():
    episode = AutonomousEpisode('a1', 'attention')
    episode.plan_call('recall_memory', '{"query": "Ada"}')
    episode.plan_call('recall_memory', '{"query": "Bob"}')
    planned = episode.plan_call('recall_memory', '{"query": "Ada"}')
    assert isinstance(planned, Refused)
    assert planned.reason == 'acquisition_budget_exhausted'


def test_exhausted_budget_refuses_even_malformed_recall_as_exhausted():
    episode = AutonomousEpisode('a1', 'attention', acquisition_limit=0)
    planned = episode.plan_call('recall_memory', 'not json')
    assert planned.reason == 'acquisition_budget_exhausted'


def test_remember_does_not_use_the_acquisition_budget():
    episode, _ = operator_turn()
    episode.plan_call('remember', FACT)
    assert episode.budget.used == 0


def test_beginning_a_turn_makes_no_tool_call():
    episode = OperatorEpisode('e1')
    episode.begin_turn('t1', 'tell me about Ada')
    assert episode.budget.used == 0


# Tool availability

def test_autonomous_episode_refuses_remember():
    episode = AutonomousEpisode('a1', 'temporal_follow_up')
    planned = episode.plan_call('remember', FACT)
    assert isinstance(planned, Refused)
    assert planned.reason == 'tool_unavailable'


def test_unknown_tool_is_refused_without_echoing_its_name():
    episode, _ = operator_turn()
    planned = episode.plan_call(SECRET, '{}')
    assert planned.reason == 'unknown_tool'
    assert SECRET not in planned.text
    assert planned.tool == ''


def test_unknown_tool_uses_no_attempt():
    episode, _ = operator_turn()
    episode.plan_call('search_memory', '{"query": "Ada"}')
    assert episode.budget.used == 0


def test_remember_before_any_turn_is_refused_as_ungrounded():
    planned = OperatorEpisode('e1').plan_call('remember', FACT)
    assert planned.reason == 'evidence_not_in_utterance'


# Remember per turn

def test_remember_request_carries_the_current_turn_context():
    episode = OperatorEpisode('e1')
    episode.begin_turn('t1', 'first words')
    episode.begin_turn('t2', 'Ada drinks green tea every morning')
    planned = episode.plan_call('remember', FACT)
    assert planned == Allowed('remember', RememberRequest(
        'e1', 't2', 'Ada drinks green tea every morning', parse_remember_arguments(FACT)))


def test_model_supplied_utterance_is_rejected_as_extra_property():
    episode, _ = operator_turn()
    planned = episode.plan_call('remember', dict(FACT, utterance='Ada drinks green tea'))
    assert planned.reason == 'invalid_tool_arguments'


def test_service_fields_map_null_related_fields_to_empty_strings():
    episode, _ = operator_turn()
    fields = episode.plan_call('remember', FACT).arguments.service_fields()
    assert fields == dict(
        FACT, related_entity='', related_role='', episode_id='e1', turn_id='t1',
        utterance='Ada drinks green tea every morning')


def test_second_remember_in_a_turn_is_refused_locally():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_result('rejected', '', '')
    planned = episode.plan_call('remember', RELATIONSHIP)
    assert planned.reason == 'remember_limit_reached'


def test_identical_remember_after_a_reply_is_refused():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_result('applied', 'created', 'MEM1')
    assert episode.plan_call('remember', FACT).reason == 'remember_limit_reached'


def test_remember_while_the_first_is_in_flight_is_refused():
    episode, _ = operator_turn()
    episode.plan_call('remember', FACT)
    assert episode.plan_call('remember', FACT).reason == 'remember_limit_reached'


def test_malformed_remember_does_not_use_the_turns_remember():
    episode, _ = operator_turn()
    episode.plan_call('remember', dict(FACT, value=None))
    assert isinstance(episode.plan_call('remember', FACT), Allowed)


def test_new_turn_allows_remember_again():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_result('applied', 'created', 'MEM1')
    episode.begin_turn('t2', 'Ada works with Charles')
    assert isinstance(episode.plan_call('remember', RELATIONSHIP), Allowed)


def test_turn_id_cannot_be_reused_in_an_episode():
    episode, _ = operator_turn()
    with pytest.raises(ValueError):
        episode.begin_turn('t1', 'again')


def test_identical_retry_after_no_result_is_allowed_with_the_same_request():
    episode, turn = operator_turn()
    first = episode.plan_call('remember', FACT)
    turn.record_remember_no_result()
    retry = episode.plan_call('remember', json.dumps(FACT))
    assert retry == first


def test_different_remember_after_no_result_is_refused():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_no_result()
    changed = dict(FACT, value='tea')
    assert episode.plan_call('remember', changed).reason == 'remember_limit_reached'


def test_retry_after_no_result_is_allowed_only_once():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_no_result()
    episode.plan_call('remember', FACT)
    turn.record_remember_no_result()
    assert episode.plan_call('remember', FACT).reason == 'remember_limit_reached'


def test_result_without_a_pending_call_is_a_wiring_error():
    _, turn = operator_turn()
    with pytest.raises(RuntimeError):
        turn.record_remember_result('applied', 'created', 'MEM1')


# Acknowledgement rule

def test_created_result_acknowledges_the_write():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_result('applied', 'created', 'MEM7')
    assert turn.write_acknowledged() == 'MEM7'


def test_duplicate_result_is_already_stored_not_a_write():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_result('applied', 'duplicate', 'MEM7')
    assert (turn.write_acknowledged(), turn.already_stored()) == (None, 'MEM7')


def test_rejected_result_acknowledges_nothing():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_result('rejected', '', '')
    assert (turn.write_acknowledged(), turn.already_stored()) == (None, None)


def test_no_result_acknowledges_nothing():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    turn.record_remember_no_result()
    assert turn.write_acknowledged() is None


def test_request_alone_acknowledges_nothing():
    episode, turn = operator_turn()
    episode.plan_call('remember', FACT)
    assert turn.write_acknowledged() is None


def test_earlier_turns_write_is_not_acknowledged_in_a_new_turn():
    episode, first = operator_turn()
    episode.plan_call('remember', FACT)
    first.record_remember_result('applied', 'created', 'MEM7')
    second = episode.begin_turn('t2', 'thanks')
    assert second.write_acknowledged() is None


def test_late_reply_is_recorded_on_its_own_turn():
    episode, first = operator_turn()
    episode.plan_call('remember', FACT)
    second = episode.begin_turn('t2', 'are you there?')
    first.record_remember_result('applied', 'created', 'MEM7')
    assert (first.write_acknowledged(), second.write_acknowledged()) == ('MEM7', None)


# Result texts

def test_created_text_states_the_new_memory():
    text = remember_result_text('applied', 'created', '', 'MEM7', [], '')
    assert text == 'remember: applied (created): stored as new durable memory MEM7.'


def test_duplicate_text_says_no_new_record_was_written():
    text = remember_result_text('applied', 'duplicate', '', 'MEM7', [], '')
    assert 'already stored as MEM7; no new record was written' in text
    assert 'new durable memory' not in text


def test_rejected_text_says_no_write_happened():
    text = remember_result_text(
        'rejected', '', 'subject_not_found', '', [], 'the subject is not a known entity.')
    assert text == ('remember: rejected (subject_not_found): not stored: the subject is '
                    'not a known entity; no write happened.')


def test_conflict_text_lists_the_conflicting_memories():
    text = remember_result_text(
        'rejected', '', 'conflict', '', ['MEM3', 'MEM4'], 'a different value is stored')
    assert text.endswith('Conflicting memories: MEM3, MEM4.')


@pytest.mark.parametrize('reply', [
    ('applied', '', '', 'MEM7', [], ''),
    ('applied', 'created', '', '', [], ''),
    ('', '', '', '', [], ''),
])
def test_unrecognized_remember_reply_claims_no_write(reply):
    text = remember_result_text(*reply)
    assert 'stored as' not in text
    assert 'do not assume the memory was stored' in text


def test_recall_text_has_a_header_and_the_service_text():
    text = recall_result_text('found', 'exact_match', 'Remembered (may be stale): ...')
    assert text == 'recall_memory: found (exact_match)\nRemembered (may be stale): ...'


def test_no_result_text_for_remember_warns_not_to_assume_a_write():
    assert refused_text('remember', 'no_result') == (
        'remember: no result: no result was received; do not assume the memory was stored.')


@pytest.mark.parametrize('raw', [
    with_changes(SECRET_FACT, value=3),
    with_changes(SECRET_FACT, **{SECRET: 'x'}),
    SECRET,
])
def test_invalid_remember_refusal_text_has_no_argument_values(raw):
    episode, _ = operator_turn()
    planned = episode.plan_call('remember', raw)
    assert planned.reason == 'invalid_tool_arguments'
    assert SECRET not in planned.text


def test_remember_limit_refusal_text_has_no_argument_values():
    episode, _ = operator_turn()
    episode.plan_call('remember', FACT)
    planned = episode.plan_call('remember', SECRET_FACT)
    assert planned.reason == 'remember_limit_reached'
    assert SECRET not in planned.text
    assert 'no write happened' in planned.text


def test_invalid_recall_refusal_text_has_no_argument_values():
    episode, _ = operator_turn()
    planned = episode.plan_call('recall_memory', {'query': SECRET, 'limit': SECRET})
    assert SECRET not in planned.text


# Working memory

def test_working_memory_keeps_entries_oldest_first():
    memory = WorkingMemory()
    memory.add('operator: hello')
    memory.add('assistant: hi')
    assert memory.entries() == ('operator: hello', 'assistant: hi')


def test_working_memory_drops_the_oldest_when_full():
    memory = WorkingMemory(capacity=2)
    for entry in ('a', 'b', 'c'):
        memory.add(entry)
    assert memory.entries() == ('b', 'c')


def test_working_memory_default_capacity_is_fifty():
    assert WorkingMemory().capacity == 50


def test_working_memory_clear_returns_the_dropped_count():
    memory = WorkingMemory()
    memory.add('a')
    memory.add('b')
    assert (memory.clear(), memory.entries()) == (2, ())


def test_working_memory_rejects_a_non_positive_capacity():
    with pytest.raises(ValueError):
        WorkingMemory(capacity=0)


def test_working_memory_drops_the_oldest_entries_to_stay_within_its_characters():
    memory = WorkingMemory(capacity=50, max_characters=250)
    for entry in ('a' * 100, 'b' * 100, 'c' * 100):
        memory.add(entry)
    assert memory.entries() == ('b' * 100, 'c' * 100)
    assert memory.characters == 200
    memory.add('d' * 50)
    assert memory.entries() == ('b' * 100, 'c' * 100, 'd' * 50)
    assert memory.characters == 250


def test_working_memory_keeps_one_overlong_entry_cut_with_a_marker():
    memory = WorkingMemory(max_characters=300)
    memory.add('operator e1/t1: hello')
    entry = 'x' * 10_000
    memory.add(entry)
    (kept,) = memory.entries()  # the earlier entry had to go to make room
    assert len(kept) <= 300 and memory.characters == len(kept)
    cut = len(entry) - kept.index(' [')
    assert kept == 'x' * (10_000 - cut) + (
        f' [... {cut} more characters not kept in working memory]')


def test_working_memory_clear_resets_its_characters():
    memory = WorkingMemory()
    memory.add('a' * 10)
    memory.clear()
    assert memory.characters == 0 and memory.max_characters == 48000


@pytest.mark.parametrize('max_characters', [0, 199, 1000.0, None])
def test_working_memory_rejects_a_character_bound_too_small_for_its_marker(max_characters):
    with pytest.raises(ValueError):
        WorkingMemory(max_characters=max_characters)
