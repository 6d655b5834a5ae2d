# SPDX-License-Identifier: Apache-2.0
"""
memory check's dry run (core/review/check.py) answers what remember answers, writing nothing.

Every case of the grounding corpus runs on a real SQLite file: first every
case is checked and the file must stay byte for byte what it was; then each
case is checked and admitted right after, and the check must have given
the answer admission gives (status, outcome, reason, rule), on a store that
fills as the cases are admitted (so duplicates and conflicts count too).
The node's service and the console: test/node/test_check_service.py.
"""

import dataclasses
import hashlib

from helpers.corpus_cases import load, ROBOT_PROFILE
from mira_memory.core.admission import results, rules, verdict
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.review import check
import pytest


@pytest.fixture(scope='module')
def corpus():
    return load()


def seed(store, corpus):
    for entity in corpus.entities:
        added = store.add_entity(entity.entity_type, entity.name)
        for alias in entity.aliases:
            store.add_alias(added.id, alias)


def fingerprint(path):
    """Return the SHA-256 of the database file and its WAL (a commit changes one of them)."""
    digest = hashlib.sha256()
    for suffix in ('', '-wal', '-journal'):
        part = path.with_name(path.name + suffix)
        digest.update(suffix.encode() + b':' + (part.read_bytes() if part.exists() else b''))
    return digest.hexdigest()


def checked(store, case):
    with store.snapshot() as conn:
        return check.check(conn, case.utterance, case.proposal, ROBOT_PROFILE)


def answer(result):
    return (result.status, result.outcome, result.reason, result.rule)


def own_turn(case):
    # A case with ids of its own tests the ids; a check has a turn of its own.
    return case.episode_id is None and case.turn_id is None


def test_checking_every_case_writes_nothing(corpus, store, db_path):
    seed(store, corpus)
    before_counts, before_file = store.counts(), fingerprint(db_path)
    answers = [checked(store, case).result.status for case in corpus.cases]

    assert store.counts() == before_counts
    assert fingerprint(db_path) == before_file
    assert store.pending_items(1)[1][0] == 0
    # Not vacuous: both answers occur.
    assert {'applied', 'rejected'} <= set(answers)


def test_a_check_answers_exactly_what_admission_answers_next(corpus, store):
    seed(store, corpus)
    compared = 0
    for number, case in enumerate(corpus.cases, 1):
        if not own_turn(case):
            continue
        before = checked(store, case)
        admitted = rules.admit(store, case.context(number), case.proposal, ROBOT_PROFILE)
        assert answer(before.result) == answer(admitted), case.label
        if admitted.outcome == results.OUTCOME_DUPLICATE:
            assert before.result.memory_id == admitted.memory_id, case.label
        if admitted.outcome == results.OUTCOME_CREATED:
            assert before.result.memory_id is None
            assert before.summary and before.subject_entity_id, case.label
        compared += 1
    assert compared > 100


def test_a_statement_checked_after_it_was_stored_is_a_duplicate(store):
    ada = store.add_entity('person', 'Ada Lovelace')
    utterance = 'Ada Lovelace prefers green tea.'
    proposal = Proposal('preference', 'Ada Lovelace', 'prefers_drink', 'green tea',
                        None, None, 'Ada Lovelace prefers green tea')
    with store.snapshot() as conn:
        first = check.check(conn, utterance, proposal, ROBOT_PROFILE)
    assert answer(first.result) == ('applied', 'created', '', '')
    assert (first.summary, first.value, first.subject_entity_id) == (
        'Ada Lovelace prefers green tea', 'green tea', ada.id)

    stored = rules.admit(store, TurnContext('e1', 't1', utterance), proposal,
                         ROBOT_PROFILE)
    # The check used no turn: the same statement was still admitted.
    assert stored.outcome == 'created'
    with store.snapshot() as conn:
        again = check.check(conn, utterance, proposal, ROBOT_PROFILE)
    assert answer(again.result) == ('applied', 'duplicate', '', '')
    assert again.result.memory_id == stored.memory_id


def test_an_empty_evidence_means_the_whole_utterance(store):
    store.add_entity('person', 'Ada Lovelace')
    proposal = Proposal('preference', 'Ada Lovelace', 'prefers_drink', 'green tea',
                        None, None, '')
    with store.snapshot() as conn:
        result = check.check(conn, 'Ada Lovelace prefers green tea.', proposal, ROBOT_PROFILE)
    assert result.result.outcome == 'created'


def test_a_grounding_refusal_names_its_check_and_would_be_kept_for_review(store):
    store.add_entity('person', 'Ada Lovelace')
    proposal = Proposal('preference', 'Ada Lovelace', 'prefers_drink', 'green tea',
                        None, None, 'Ada Lovelace prefers green tea')
    with store.snapshot() as conn:
        hedged = check.check(conn, 'Maybe Ada Lovelace prefers green tea.', proposal,
                             ROBOT_PROFILE)
        off = check.check(conn, 'Maybe Ada Lovelace prefers green tea.', proposal,
                          ROBOT_PROFILE, keeps_refusals=False)
    assert answer(hedged.result) == ('rejected', '', 'evidence_not_in_utterance', '10')
    assert hedged.grounding_check == 'hedged'
    assert hedged.result.error == verdict.ERRORS['hedged'][1]
    assert hedged.would_keep_for_review and not off.would_keep_for_review


def test_a_refusal_no_person_can_judge_is_not_kept(store):
    proposal = Proposal('preference', 'Ada Lovelace', 'prefers_drink', 'coffee',
                        None, None, 'Ada Lovelace prefers green tea')
    with store.snapshot() as conn:
        result = check.check(conn, 'Ada Lovelace prefers green tea.', proposal, ROBOT_PROFILE)
    assert answer(result.result) == ('rejected', '', 'value_not_supported', '9')
    assert not result.would_keep_for_review and result.grounding_check == ''


def test_the_explanation_shows_what_the_verdict_records_beyond_its_store_checks():
    @dataclasses.dataclass(frozen=True)
    class Trigger:
        words: str
        scope: str

    # A verdict that records more than today's (the trigger that decided).
    Recorded = dataclasses.make_dataclass(
        'Recorded', [('trigger', object, None)], bases=(verdict.Grounding,), frozen=True)
    grounding = Recorded('hedged', other_subject_candidates=('Bob',),
                         trigger=Trigger('maybe', 'sentence'))

    assert check.explanation(grounding) == (('trigger', 'words maybe, scope sentence'),)
    assert check.explanation(verdict.Grounding('hedged')) == ()
    assert check.explanation(None) == ()
