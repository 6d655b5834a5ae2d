# SPDX-License-Identifier: Apache-2.0
"""TurnProposalLog: one proposal per operator turn, identical retries get the first answer."""

from dataclasses import replace

from helpers.admission_cases import FACT, FACT_CONTEXT, RELATIONSHIP
from mira_memory.core.admission import results
from mira_memory.core.admission.turn_proposals import TurnProposalLog
import pytest

CREATED = results.AdmissionResult('applied', 'created', '', 7, (), '')
DUPLICATE = results.AdmissionResult('applied', 'duplicate', '', 7, (), '')
REJECTED = results.AdmissionResult(
    'rejected', '', 'subject_not_found', None, (), 'fixed sentence')


class Admission:
    """Stands in for admit(): returns the given answers in turn and counts calls."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.answers.pop(0)


def test_first_request_of_a_turn_is_admitted():
    log = TurnProposalLog()
    admit = Admission(CREATED)

    assert log.answer(FACT_CONTEXT, FACT, admit) == CREATED
    assert admit.calls == 1


@pytest.mark.parametrize('first', [CREATED, REJECTED], ids=['after-applied', 'after-rejected'])
def test_a_different_proposal_in_the_turn_is_rejected_without_admission(first):
    log = TurnProposalLog()
    log.answer(FACT_CONTEXT, FACT, Admission(first))
    admit = Admission(CREATED)

    result = log.answer(FACT_CONTEXT, replace(FACT, value='zumbleberry'), admit)

    assert (result.status, result.reason) == ('rejected', 'invalid_proposal')
    assert result.error == results.TURN_ALREADY_PROPOSED_ERROR
    assert admit.calls == 0


def test_a_different_utterance_in_the_turn_is_a_different_request():
    log = TurnProposalLog()
    log.answer(FACT_CONTEXT, FACT, Admission(REJECTED))

    result = log.answer(replace(FACT_CONTEXT, utterance='Something else.'), FACT,
                        Admission(CREATED))

    assert result.reason == 'invalid_proposal'


def test_an_identical_retry_of_a_rejection_gets_the_same_rejection():
    log = TurnProposalLog()
    log.answer(FACT_CONTEXT, FACT, Admission(REJECTED))
    admit = Admission(CREATED)

    assert log.answer(FACT_CONTEXT, replace(FACT), admit) == REJECTED
    assert admit.calls == 0


def test_an_identical_retry_of_an_applied_request_gets_the_first_answer():
    log = TurnProposalLog()
    log.answer(FACT_CONTEXT, FACT, Admission(CREATED))
    admit = Admission(DUPLICATE)

    assert log.answer(FACT_CONTEXT, FACT, admit) == CREATED
    assert admit.calls == 0


def test_empty_and_null_related_fields_are_the_same_request():
    log = TurnProposalLog()
    log.answer(FACT_CONTEXT, FACT, Admission(REJECTED))

    assert log.answer(FACT_CONTEXT, replace(FACT, related_entity='', related_role=''),
                      Admission(CREATED)) == REJECTED


def test_backend_failure_is_not_recorded():
    log = TurnProposalLog()
    log.answer(FACT_CONTEXT, FACT, Admission(results.backend_failure()))

    assert log.answer(FACT_CONTEXT, RELATIONSHIP, Admission(CREATED)) == CREATED


def test_turn_ids_are_compared_exactly_as_sent():
    log = TurnProposalLog()
    ascii_turn = replace(FACT_CONTEXT, episode_id='e1', turn_id='t1')
    fullwidth_turn = replace(FACT_CONTEXT, episode_id='\uff45\uff11', turn_id='t1')
    log.answer(ascii_turn, FACT, Admission(REJECTED))

    assert log.answer(fullwidth_turn, RELATIONSHIP, Admission(CREATED)) == CREATED


def test_the_least_recently_used_turn_is_forgotten_first():
    log = TurnProposalLog(capacity=2)
    turns = [replace(FACT_CONTEXT, turn_id=f't{n}') for n in range(3)]
    log.answer(turns[0], FACT, Admission(REJECTED))
    log.answer(turns[1], FACT, Admission(REJECTED))
    log.answer(turns[0], FACT, Admission())   # t0 used again: t1 is now the oldest
    log.answer(turns[2], FACT, Admission(REJECTED))

    assert len(log) == 2
    assert log.answer(turns[0], RELATIONSHIP, Admission(CREATED)).reason == 'invalid_proposal'
    assert log.answer(turns[1], RELATIONSHIP, Admission(CREATED)) == CREATED


def test_capacity_must_be_positive():
    with pytest.raises(ValueError):
        TurnProposalLog(capacity=0)


def test_a_request_without_turn_ids_is_not_recorded():
    log = TurnProposalLog()
    no_turn = replace(FACT_CONTEXT, episode_id='')
    log.answer(no_turn, FACT, Admission(REJECTED))

    assert len(log) == 0
    assert log.answer(no_turn, RELATIONSHIP, Admission(REJECTED)) == REJECTED
