# SPDX-License-Identifier: Apache-2.0
"""Which words decided: the trigger that refused or allowed, for a person who reviews it."""

import types

from mira_memory.console import review_lines
from mira_memory.core.admission import results, verdict
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.rules import admit
from mira_memory.core.admission.verdict import ground
from mira_memory.core.store import MemoryStore
import pytest


@pytest.fixture
def store(tmp_path):
    with MemoryStore.open(tmp_path / 'memory.sqlite3') as opened:
        opened.add_entity('person', 'Ada Lovelace')
        yield opened


def test_a_refusal_names_the_trigger_its_words_position_and_scope():
    verdict = ground('Ada likes tea, or so people say.', 'Ada likes tea', 'Ada', 'tea', 'likes')
    assert verdict.failure == 'reported'
    assert verdict.decided_by.startswith('report "')
    assert 'reach sentence' in verdict.decided_by and '"Ada likes tea,"' in verdict.decided_by
    denied = ground('It is not true that Ada likes tea.', 'Ada likes tea', 'Ada', 'tea', 'likes')
    assert denied.decided_by == (
        'denial "not true" at characters 6-14, reach sentence, both ways, governs '
        '"that Ada likes tea", "It is"')


def test_a_negation_from_outside_is_named_too():
    verdict = ground("I don't think Ada likes tea.", 'Ada likes tea', 'Ada', 'tea', 'likes')
    assert verdict.failure is not None and verdict.decided_by


def test_an_admission_names_the_triggers_it_let_pass():
    verdict = ground('Ada never says no to cake.', 'Ada never says no to cake', 'Ada', 'cake',
                     'likes')
    assert verdict.failure is None
    assert verdict.decided_by.startswith('pseudo "never says no to" at characters 4-20')
    assert verdict.decided_by.endswith(': asserts')
    negated = ground('Ada does not like tea.', 'Ada does not like tea', 'Ada', 'tea',
                     'does_not_like')
    assert negated.decided_by.endswith(": the predicate's own")
    assert ground('Ada likes tea.', 'Ada likes tea', 'Ada', 'tea', 'likes').decided_by == ''


def test_the_receipt_records_what_was_let_pass_and_the_response_echoes_nothing(store):
    said = 'Ada Lovelace never says no to cake.'
    result = admit(store, TurnContext('e1', 't1', said), Proposal(
        'preference', 'Ada Lovelace', 'likes', 'cake', None, None, said.rstrip('.')), 'Mira')
    assert result.outcome == 'created', result
    receipt = store.get_receipt(result.memory_id)
    assert receipt.rules_ran.startswith('1-19; allowed: pseudo "never says no to"')
    refused = admit(store, TurnContext('e1', 't2', 'Maybe Ada Lovelace likes pie.'), Proposal(
        'preference', 'Ada Lovelace', 'likes_pie', 'pie', None, None, 'Ada Lovelace likes pie'),
        'Mira')
    # The error the Remember response carries is the fixed sentence, no operator words.
    assert refused.error == verdict.ERRORS['hedged'][1]
    assert 'Maybe' not in refused.error and 'Maybe' in refused.decided_by
    assert results.explanation(refused) == f'{refused.error} Decided by: {refused.decided_by}.'


def test_pending_show_prints_the_trigger_that_decided():
    item = types.SimpleNamespace(
        id='P1', created_at='2026-05-01T12:00:00Z', expires_at='2026-05-31T12:00:00Z',
        reason='evidence_not_in_utterance', rule='10',
        explanation='The evidence is hedged. Decided by: hedge "Maybe" at characters 0-5, '
                    'reach sentence, both ways, governs "Ada likes tea".',
        utterance='Maybe Ada likes tea.', episode_id='e1', turn_id='t1', kind='fact',
        subject='Ada', predicate='likes', value='tea', related_entity='', related_role='',
        evidence='Ada likes tea', robot_profile='Mira', conflicting_memory_ids=[],
        rules_version='6.0.0', rules_digest='x', judged_now='')
    lines = review_lines._pending_show(types.SimpleNamespace(
        item=item, now_status='still_refused', now_reason='evidence_not_in_utterance',
        now_rule='10', now_memory_ids=[]))
    assert '  explanation:  The evidence is hedged.' in lines
    assert ('  decided by:   hedge "Maybe" at characters 0-5, reach sentence, both ways, '
            'governs "Ada likes tea"') in lines
