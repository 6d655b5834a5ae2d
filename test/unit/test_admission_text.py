# SPDX-License-Identifier: Apache-2.0
"""Admission of the text itself: invisible characters, scripts, raw length bounds."""

from dataclasses import replace

from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.rules import admit
import pytest

ROBOT = 'Kestrelbot'
SAID = TurnContext('ep-1', 'turn-1', 'Note this: Ottoline Vexworth drinks zumbleberry tea.')
FACT = Proposal(
    kind='fact', subject='Ottoline Vexworth', predicate='drinks', value='zumbleberry tea',
    related_entity=None, related_role=None, evidence='Ottoline Vexworth drinks zumbleberry tea')

# One of each kind of invisible character that changes what a text says.
INVISIBLE = {
    'soft-hyphen': '\u00ad', 'zero-width-space': '\u200b', 'zero-width-joiner': '\u200d',
    'right-to-left-override': '\u202e', 'line-separator': '\u2028',
    'variation-selector': '\ufe0f', 'byte-order-mark': '\ufeff', 'noncharacter': '\ufdd0',
    'tag': '\U000e0041',
}
PROPOSAL_FIELDS = ('kind', 'subject', 'predicate', 'value', 'evidence')
# 1,000,000 characters that NFKC would grow eighteen-fold.
HUGE = '\ufdfa' * 1_000_000


@pytest.fixture
def ottoline(store):
    return store.add_entity('person', 'Ottoline Vexworth')


def insert(text, char):
    return text[:3] + char + text[3:]


def rejected_with(result, reason):
    return (result.status, result.outcome, result.reason, result.memory_id) == (
        'rejected', '', reason, None)


@pytest.mark.parametrize('field', PROPOSAL_FIELDS)
@pytest.mark.parametrize('char', INVISIBLE.values(), ids=INVISIBLE.keys())
def test_invisible_character_in_a_proposal_field_is_invalid_proposal(
        store, ottoline, field, char):
    proposal = replace(FACT, **{field: insert(getattr(FACT, field), char)})

    result = admit(store, SAID, proposal, ROBOT)

    assert rejected_with(result, 'invalid_proposal')
    assert store.counts()['memories'] == 0


@pytest.mark.parametrize('char', INVISIBLE.values(), ids=INVISIBLE.keys())
def test_invisible_character_in_the_utterance_is_no_valid_turn(store, ottoline, char):
    # Like a control character in the utterance today: the turn is not valid
    # evidence, whatever the proposal says.
    said = replace(SAID, utterance=insert(SAID.utterance, char))

    result = admit(store, said, FACT, ROBOT)

    assert rejected_with(result, 'evidence_not_in_utterance')
    assert store.counts()['memories'] == 0


@pytest.mark.parametrize('field', ('episode_id', 'turn_id'))
@pytest.mark.parametrize('char', ('\u200b', '\u202e', '\u2028'))
def test_invisible_character_in_a_turn_id_is_no_valid_turn(store, ottoline, field, char):
    said = replace(SAID, **{field: insert(getattr(SAID, field), char)})

    assert rejected_with(admit(store, said, FACT, ROBOT), 'evidence_not_in_utterance')


def test_soft_hyphen_cannot_turn_adam_into_ada(store):
    # "Ada\u00adm" renders as "Adam": Ada never said anything here.
    store.add_entity('person', 'Ada')
    said = replace(SAID, utterance='Ada\u00adm likes tea.')
    proposal = replace(FACT, subject='Ada', predicate='likes', value='tea',
                       evidence='Ada\u00adm likes tea')

    assert rejected_with(admit(store, said, proposal, ROBOT), 'invalid_proposal')
    cleaned = replace(proposal, evidence='Adam likes tea')
    assert rejected_with(admit(store, said, cleaned, ROBOT), 'evidence_not_in_utterance')
    assert store.counts()['memories'] == 0


@pytest.mark.parametrize('field', PROPOSAL_FIELDS + ('related_entity', 'related_role'))
def test_huge_proposal_field_is_refused_by_its_raw_length(store, ottoline, field):
    relationship = field.startswith('related')
    proposal = replace(FACT, **{field: HUGE})
    if relationship:
        proposal = replace(proposal, kind='relationship', **{
            other: 'cousin' for other in ('related_entity', 'related_role') if other != field})

    result = admit(store, SAID, proposal, ROBOT)

    assert rejected_with(result, 'invalid_tool_arguments')
    assert store.counts()['memories'] == 0


@pytest.mark.parametrize('field', ('utterance', 'episode_id', 'turn_id'))
def test_huge_turn_field_is_refused_by_its_raw_length(store, ottoline, field):
    said = replace(SAID, **{field: HUGE})

    assert rejected_with(admit(store, said, FACT, ROBOT), 'evidence_not_in_utterance')
    assert store.counts()['memories'] == 0


def test_statement_that_composes_only_after_case_folding_is_admitted(store):
    # T + U+0308 folds to U+1E97: the evidence is the utterance, verbatim.
    name = 'Zaka T\u0308orn'
    entity = store.add_entity('person', name)
    said = replace(SAID, utterance=f'{name} collects J\u030cade stones.')
    proposal = replace(FACT, subject=name, predicate='collects', value='J\u030cade stones',
                       evidence=f'{name} collects J\u030cade stones')

    result = admit(store, said, proposal, ROBOT)

    assert (result.status, result.outcome) == ('applied', 'created')
    memory, _ = store.get_memory(result.memory_id)
    assert [link.entity_id for link in memory.links] == [entity.id]
    assert memory.value == 'J\u030cade stones'


def test_devanagari_name_is_not_found_before_its_vowel_sign(store):
    store.add_entity('person', '\u0930\u093e\u092e')  # राम
    said = replace(SAID, utterance='\u0930\u093e\u092e\u093e likes tea.')  # रामा likes tea.
    proposal = replace(FACT, subject='\u0930\u093e\u092e', predicate='likes', value='tea',
                       evidence='\u0930\u093e\u092e\u093e likes tea')

    assert rejected_with(admit(store, said, proposal, ROBOT), 'subject_not_supported')


def test_devanagari_name_as_a_whole_word_is_admitted(store):
    store.add_entity('person', '\u0930\u093e\u092e')
    said = replace(SAID, utterance='\u0930\u093e\u092e likes tea.')
    proposal = replace(FACT, subject='\u0930\u093e\u092e', predicate='likes', value='tea',
                       evidence='\u0930\u093e\u092e likes tea')

    assert admit(store, said, proposal, ROBOT).outcome == 'created'


UNSEGMENTED = {
    # 艾达喜欢绿茶 (Ada likes green tea): no spaces, no visible word edges.
    'chinese': ('\u827e\u8fbe', '\u7eff\u8336', '\u827e\u8fbe\u559c\u6b22\u7eff\u8336'),
    # 艾达 喜欢 绿茶: spaces, but nothing says they are the word edges.
    'chinese-spaced': ('\u827e\u8fbe', '\u7eff\u8336', '\u827e\u8fbe \u559c\u6b22 \u7eff\u8336'),
    # エイダはお茶が好き (Ada likes tea).
    'japanese': ('\u30a8\u30a4\u30c0', '\u304a\u8336',
                 '\u30a8\u30a4\u30c0\u306f\u304a\u8336\u304c\u597d\u304d'),
    # เอดาชอบชา (Ada likes tea).
    'thai': ('\u0e40\u0e2d\u0e14\u0e32', '\u0e0a\u0e32',
             '\u0e40\u0e2d\u0e14\u0e32\u0e0a\u0e2d\u0e1a\u0e0a\u0e32'),
    # A known Latin name with a value in Han.
    'mixed': ('Ottoline Vexworth', '\u7eff\u8336', 'Ottoline Vexworth likes \u7eff\u8336'),
}


@pytest.mark.parametrize('subject,value,evidence', UNSEGMENTED.values(), ids=UNSEGMENTED.keys())
def test_scripts_written_without_spaces_are_refused(store, ottoline, subject, value, evidence):
    if subject != 'Ottoline Vexworth':
        store.add_entity('person', subject)
    said = replace(SAID, utterance=evidence + '\u3002')
    proposal = replace(FACT, subject=subject, predicate='likes', value=value, evidence=evidence)

    result = admit(store, said, proposal, ROBOT)

    assert rejected_with(result, 'evidence_not_in_utterance')
    assert store.counts()['memories'] == 0


def test_other_script_elsewhere_in_the_utterance_does_not_matter(store, ottoline):
    said = replace(SAID, utterance='Ottoline Vexworth drinks zumbleberry tea. \u8c22\u8c22')

    assert admit(store, said, FACT, ROBOT).outcome == 'created'
