# SPDX-License-Identifier: Apache-2.0
"""
The remember rejection table shared by the core and the service tests.

Every case is a request that the seeded world would admit, except for the
one rule it breaks. The seeded world (built by each test module its own way):
- person "Ottoline Vexworth", alias "Ottie";
- person "Quillon Brask", alias "Quill";
- robot "Kestrelbot" (ROBOT_PROFILE);
- persons "Sam Northby" and "Sam Southby", both with alias "Samwise";
- one fact "Quillon drinks black coffee." (subject Quillon Brask, predicate
  drinks, value "black coffee"), which the conflict cases run into.

Every field of these cases is text that a ROS string can carry (no NUL), so
the same rows go through the real remember service unchanged.
"""

from dataclasses import dataclass, replace
from typing import Optional

from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal

ROBOT_PROFILE = 'Kestrelbot'

FACT_CONTEXT = TurnContext(
    'ep-7731', 'turn-0042', 'Note this: Ottoline Vexworth drinks zumbleberry tea, every morning.')
FACT = Proposal(
    kind='fact', subject='Ottoline Vexworth', predicate='drinks', value='zumbleberry tea',
    related_entity=None, related_role=None,
    evidence='Ottoline Vexworth drinks zumbleberry tea')

RELATIONSHIP_CONTEXT = TurnContext(
    'ep-7731', 'turn-0043', 'Ottoline Vexworth is the cousin of Quillon Brask, truly.')
RELATIONSHIP = Proposal(
    kind='relationship', subject='Ottoline Vexworth', predicate='cousin_of',
    value='Quillon Brask', related_entity='Quillon Brask', related_role='cousin',
    evidence='Ottoline Vexworth is the cousin of Quillon Brask')


def context(utterance, turn_id='turn-0050'):
    """Return an operator turn of the table's episode."""
    return TurnContext('ep-7731', turn_id, utterance)


@dataclass(frozen=True)
class Case:
    """One row of the rejection table: a request that breaks exactly one rule."""

    reason: str
    context: Optional[TurnContext]
    proposal: Proposal
    profile: str = ROBOT_PROFILE
    # Core tests only: wraps the store so that it fails. The service tests
    # make the real store fail instead.
    wrap_store: object = None


LONG_VALUE = 'z' * 257
LONG_EVIDENCE = 'Ottoline Vexworth drinks zumbleberry tea' + ' and more' * 52
YOUR_DRINK = context('Your favourite drink is zumbleberry tea.')
YOUR_DRINK_PROPOSAL = replace(
    FACT, subject='Your', predicate='favourite_drink',
    evidence='Your favourite drink is zumbleberry tea')

CASES = {
    # 1. invalid_tool_arguments
    'blank-subject': Case(
        'invalid_tool_arguments', FACT_CONTEXT, replace(FACT, subject=' \u3000 ')),
    'empty-predicate': Case('invalid_tool_arguments', FACT_CONTEXT, replace(FACT, predicate='')),
    'empty-value': Case('invalid_tool_arguments', FACT_CONTEXT, replace(FACT, value='')),
    'blank-evidence': Case('invalid_tool_arguments', FACT_CONTEXT, replace(FACT, evidence='  ')),
    'empty-kind': Case('invalid_tool_arguments', FACT_CONTEXT, replace(FACT, kind='')),
    'value-over-256': Case(
        'invalid_tool_arguments',
        context('Ottoline Vexworth drinks %s.' % LONG_VALUE),
        replace(FACT, value=LONG_VALUE, evidence='Ottoline Vexworth drinks ' + LONG_VALUE)),
    'evidence-over-500': Case(
        'invalid_tool_arguments', context(LONG_EVIDENCE + '.'),
        replace(FACT, evidence=LONG_EVIDENCE)),
    'predicate-over-64': Case(
        'invalid_tool_arguments', FACT_CONTEXT, replace(FACT, predicate='d' * 65)),
    'blank-related-entity': Case(
        'invalid_tool_arguments', RELATIONSHIP_CONTEXT,
        replace(RELATIONSHIP, related_entity='   ')),
    # 2. invalid_proposal
    'unknown-kind': Case('invalid_proposal', FACT_CONTEXT, replace(FACT, kind='opinion')),
    'observation-kind': Case(
        'invalid_proposal', FACT_CONTEXT, replace(FACT, kind='observation')),
    'predicate-not-token': Case(
        'invalid_proposal', FACT_CONTEXT, replace(FACT, predicate='drinks daily')),
    'predicate-starts-with-digit': Case(
        'invalid_proposal', FACT_CONTEXT, replace(FACT, predicate='9drinks')),
    'role-not-token': Case(
        'invalid_proposal', RELATIONSHIP_CONTEXT, replace(RELATIONSHIP, related_role='cousin!')),
    'related-role-is-subject': Case(
        'invalid_proposal', RELATIONSHIP_CONTEXT, replace(RELATIONSHIP, related_role='Subject')),
    'control-in-value': Case(
        'invalid_proposal', FACT_CONTEXT, replace(FACT, value='zumbleberry\ttea')),
    'control-in-evidence': Case(
        'invalid_proposal', FACT_CONTEXT,
        replace(FACT, evidence='Ottoline Vexworth drinks\nzumbleberry tea')),
    'control-in-subject': Case(
        'invalid_proposal', FACT_CONTEXT, replace(FACT, subject='Ottoline\x1bVexworth')),
    'c1-control-in-evidence': Case(
        'invalid_proposal', FACT_CONTEXT,
        replace(FACT, evidence='Ottoline Vexworth drinks\x85zumbleberry tea')),
    'control-in-predicate': Case(
        'invalid_proposal', FACT_CONTEXT, replace(FACT, predicate='drinks\x7f')),
    'control-in-related-role': Case(
        'invalid_proposal', RELATIONSHIP_CONTEXT,
        replace(RELATIONSHIP, related_role='cou\rsin')),
    # 3. related_entity_invalid_for_kind
    'fact-with-related-entity': Case(
        'related_entity_invalid_for_kind', FACT_CONTEXT,
        replace(FACT, related_entity='Quillon Brask')),
    'preference-with-related-role': Case(
        'related_entity_invalid_for_kind', FACT_CONTEXT,
        replace(FACT, kind='preference', related_role='cousin')),
    # 4. related_fields_incomplete
    'relationship-without-role': Case(
        'related_fields_incomplete', RELATIONSHIP_CONTEXT,
        replace(RELATIONSHIP, related_role=None)),
    'relationship-with-empty-entity': Case(
        'related_fields_incomplete', RELATIONSHIP_CONTEXT,
        replace(RELATIONSHIP, related_entity='')),
    'relationship-without-both': Case(
        'related_fields_incomplete', RELATIONSHIP_CONTEXT,
        replace(RELATIONSHIP, related_entity=None, related_role=None)),
    # 5. evidence_not_in_utterance
    'evidence-not-said': Case(
        'evidence_not_in_utterance', context('Ottoline Vexworth drinks plain water.'), FACT),
    'evidence-inside-a-word': Case(
        'evidence_not_in_utterance',
        context('Ottoline Vexworth drinks zumbleberry teapots daily.'), FACT),
    'empty-utterance': Case('evidence_not_in_utterance', context(''), FACT),
    'control-in-utterance': Case(
        'evidence_not_in_utterance',
        context('Note this:\nOttoline Vexworth drinks zumbleberry tea.'), FACT),
    'utterance-over-4000': Case(
        'evidence_not_in_utterance',
        context(FACT_CONTEXT.utterance + ' and so on' * 400), FACT),
    'empty-episode-id': Case(
        'evidence_not_in_utterance', replace(FACT_CONTEXT, episode_id=''), FACT),
    'empty-turn-id': Case(
        'evidence_not_in_utterance', replace(FACT_CONTEXT, turn_id=''), FACT),
    'turn-id-over-64': Case(
        'evidence_not_in_utterance', replace(FACT_CONTEXT, turn_id='t' * 65), FACT),
    'turn-id-with-space': Case(
        'evidence_not_in_utterance', replace(FACT_CONTEXT, turn_id='turn 42'), FACT),
    # 6. subject_not_supported
    'subject-alias-not-in-evidence': Case(
        'subject_not_supported', FACT_CONTEXT, replace(FACT, subject='Ottie')),
    'second-person-not-in-evidence': Case(
        'subject_not_supported', FACT_CONTEXT, replace(FACT, subject='you')),
    # 7. related_entity_not_supported
    'related-alias-inside-a-word': Case(
        'related_entity_not_supported', RELATIONSHIP_CONTEXT,
        replace(RELATIONSHIP, related_entity='Quill', value='Quill')),
    # 8. relationship_value_mismatch
    'relationship-value-is-subject': Case(
        'relationship_value_mismatch', RELATIONSHIP_CONTEXT,
        replace(RELATIONSHIP, value='Ottoline Vexworth')),
    # 9. value_not_supported
    'value-not-in-evidence': Case(
        'value_not_supported', FACT_CONTEXT, replace(FACT, value='oolong')),
    'value-inside-a-word': Case(
        'value_not_supported', FACT_CONTEXT, replace(FACT, value='berry tea')),
    'value-said-outside-evidence': Case(
        'value_not_supported', FACT_CONTEXT,
        replace(FACT, value='every morning')),
    # 10. subject_not_found / subject_ambiguous
    'unknown-subject': Case(
        'subject_not_found', context('Zebulon Pikeworth drinks zumbleberry tea.'),
        replace(FACT, subject='Zebulon Pikeworth',
                evidence='Zebulon Pikeworth drinks zumbleberry tea')),
    'first-person-is-not-the-robot': Case(
        'subject_not_found', context('My favourite drink is zumbleberry tea.'),
        replace(YOUR_DRINK_PROPOSAL, subject='My',
                evidence='My favourite drink is zumbleberry tea')),
    'second-person-without-profile': Case(
        'subject_not_found', YOUR_DRINK, YOUR_DRINK_PROPOSAL, profile=''),
    'second-person-profile-unknown': Case(
        'subject_not_found', YOUR_DRINK, YOUR_DRINK_PROPOSAL, profile='Gyroplex Unit'),
    'ambiguous-subject': Case(
        'subject_ambiguous', context('Samwise drinks zumbleberry tea.'),
        replace(FACT, subject='Samwise', evidence='Samwise drinks zumbleberry tea')),
    'second-person-profile-ambiguous': Case(
        'subject_ambiguous', YOUR_DRINK, YOUR_DRINK_PROPOSAL, profile='Samwise'),
    # 11. related_entity_not_found / related_entity_ambiguous
    'unknown-related-entity': Case(
        'related_entity_not_found', context('Ottoline Vexworth is the cousin of Zebulon Pike.'),
        replace(RELATIONSHIP, value='Zebulon Pike', related_entity='Zebulon Pike',
                evidence='Ottoline Vexworth is the cousin of Zebulon Pike')),
    'second-person-related-is-not-mapped': Case(
        'related_entity_not_found', context('Ottoline Vexworth is a good friend of yours.'),
        replace(RELATIONSHIP, predicate='friend_of', value='yours', related_entity='yours',
                related_role='friend', evidence='Ottoline Vexworth is a good friend of yours')),
    'second-person-you-related-is-not-mapped': Case(
        'related_entity_not_found', context('Ottoline Vexworth is the cousin of you, Kestrel.'),
        replace(RELATIONSHIP, value='you', related_entity='you',
                evidence='Ottoline Vexworth is the cousin of you')),
    'ambiguous-related-entity': Case(
        'related_entity_ambiguous', context('Ottoline Vexworth is the cousin of Samwise.'),
        replace(RELATIONSHIP, value='Samwise', related_entity='Samwise',
                evidence='Ottoline Vexworth is the cousin of Samwise')),
    # 13. conflict (the seed holds: Quillon Brask drinks black coffee)
    'conflicting-value': Case(
        'conflict', context('Nowadays Quillon Brask drinks zumbleberry tea.'),
        replace(FACT, subject='Quillon Brask', evidence='Quillon Brask drinks zumbleberry tea')),
    'conflicting-value-across-kinds': Case(
        'conflict', context('Nowadays Quill drinks zumbleberry tea.'),
        replace(FACT, kind='preference', subject='Quill',
                evidence='Quill drinks zumbleberry tea')),
}
