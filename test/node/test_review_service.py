# SPDX-License-Identifier: Apache-2.0
"""
remember keeps a refusal a person can judge, and the admin review services.

Every test runs a memory node in-process (node tier) on a database of its own;
turns are published over DDS as the operator source publishes them. The
whole path through a real node process and the console:
test/system/test_review_node.py.
"""

import itertools

from helpers.diagnostics_util import diagnostics, values
from helpers.memory_services import MemoryServices, srv
from mira_memory.ros.node_runner import StartupError
import pytest

pytestmark = pytest.mark.ros

PROFILE = 'Mira'
REVIEWER = 'Dana (test)'
_turns = itertools.count(1)


def hedged(subject='Ada Lovelace', value='green tea'):
    """Return a remember request that grounding refuses (a hedge: 'Maybe ...')."""
    number = next(_turns)
    evidence = f'{subject} prefers {value}'
    return srv.Remember.Request(
        episode_id='e1', turn_id=f't{number}', utterance=f'Maybe {evidence}.',
        kind='preference', subject=subject, predicate='prefers_drink', value=value,
        evidence=evidence)


def start(memory_node, ros, tmp_path, **parameters):
    node = memory_node({'enabled': True, 'database_path': str(tmp_path / 'memory.sqlite3'),
                        'robot_profile': PROFILE, **parameters}, ros=ros)
    memory = MemoryServices(ros, node.prefix, node)
    memory.entity('Ada Lovelace')
    return node, memory


def pending(memory):
    response = memory.admin('pending')
    assert response.success, response.message
    return response


def test_a_kept_refusal_keeps_its_reason_and_says_it_waits_for_review(memory_node, ros,
                                                                      tmp_path):
    _, memory = start(memory_node, ros, tmp_path)
    before = memory.counts()
    request = hedged()
    response = memory.remember(request)
    assert (response.status, response.reason, response.pending_review) == (
        'rejected', 'evidence_not_in_utterance', True)
    assert response.memory_id == '' and memory.counts() == before
    # No field echoes the item: the id, the utterance, the evidence stay in the node.
    assert 'P1' not in response.error and 'Maybe' not in response.error
    # An identical retry (a lost reply) gets the first answer, and keeps nothing twice.
    again = memory.remember_unheard(request)
    assert (again.reason, again.pending_review) == ('evidence_not_in_utterance', True)
    listed = pending(memory)
    assert [(item.id, item.turn_id, item.reason, item.rule) for item in listed.items] == [
        ('P1', request.turn_id, 'evidence_not_in_utterance', '10')]
    assert (listed.pending_count, listed.enabled, listed.max_items, listed.max_age_days) == (
        1, True, 200, 7.0)
    assert memory.admin('status').pending_count == 1


def test_a_turn_the_node_did_not_hear_itself_leaves_nothing_for_review(memory_node, ros,
                                                                       tmp_path):
    # require_observed_turns false: the utterance is the caller's word, not a heard turn.
    _, memory = start(memory_node, ros, tmp_path, require_observed_turns=False)
    response = memory.remember_unheard(hedged())
    assert (response.reason, response.pending_review) == ('evidence_not_in_utterance', False)
    assert pending(memory).items == []


def test_with_pending_enabled_false_nothing_is_kept(memory_node, ros, tmp_path):
    _, memory = start(memory_node, ros, tmp_path, pending_enabled=False)
    response = memory.remember(hedged())
    assert (response.reason, response.pending_review) == ('evidence_not_in_utterance', False)
    listed = pending(memory)
    assert (listed.items, listed.enabled) == ([], False)


def unknown(subject, episode='e1'):
    """Return a remember request refused as subject_not_found (kept for review)."""
    evidence = f'{subject} is allergic to latex'
    return srv.Remember.Request(
        episode_id=episode, turn_id=f't{next(_turns)}', utterance=f'{evidence}.',
        kind='fact', subject=subject, predicate='allergic_to', value='latex',
        evidence=evidence)


def test_a_flood_of_refusals_never_pushes_out_an_item_a_person_has_not_seen(
        memory_node, ros, tmp_path, capfd):
    _, memory = start(memory_node, ros, tmp_path, pending_max=10)
    real = memory.remember(hedged())
    assert real.pending_review
    # A flood: unknown subjects, each its own turn, as fast as remember answers.
    flood = [memory.remember(unknown(f'Flood Person{number}', episode='flood'))
             for number in range(40)]
    # Every one is answered with the rules' own refusal; the first 9 fill the queue,
    # the other 31 are not kept, and say so only by pending_review.
    assert {(answer.status, answer.reason) for answer in flood} == {
        ('rejected', 'subject_not_found')}
    assert [answer.pending_review for answer in flood] == [True] * 9 + [False] * 31
    assert {answer.error for answer in flood} == {flood[0].error}
    listed = pending(memory)
    assert listed.items[0].utterance == 'Maybe Ada Lovelace prefers green tea.'
    assert (listed.items[0].id, listed.pending_count, listed.dropped_count) == ('P1', 10, 0)
    status = diagnostics(ros, str(tmp_path / 'memory.sqlite3'), lambda status: values(
        status).get('review refusals not kept (queue full)') == '31')
    assert (values(status)['review refusals not kept (episode limit)'],
            values(status)['review refusals not kept (rate limit)'],
            values(status)['review notes lost']) == ('0', '0', '0')
    # Once room is made, refusals are kept again; both turns of the run were logged once.
    memory.admin('dismiss', pending_id='P2', reviewer=REVIEWER)
    assert memory.remember(unknown('Late Person')).pending_review
    # The in-process node logs to this process's stderr.
    log = capfd.readouterr().err
    assert log.count('the review queue keeps no new refusal (queue full') == 1, log
    assert log.count('the review queue keeps refusals again; 31 were not kept') == 1, log


def test_one_episode_and_one_minute_keep_at_most_their_share(memory_node, ros, tmp_path):
    _, memory = start(memory_node, ros, tmp_path, pending_max_per_episode=3,
                      pending_max_per_minute=5)
    first = [memory.remember(unknown(f'Same Episode{number}', episode='e-one')).pending_review
             for number in range(5)]
    others = [memory.remember(unknown(f'Other Episode{number}', episode=f'e-{number}'))
              .pending_review for number in range(4)]
    assert first == [True, True, True, False, False]
    assert others == [True, True, False, False]
    assert pending(memory).pending_count == 5


def test_the_review_services_decide_and_answer_clear_errors(memory_node, ros, tmp_path):
    _, memory = start(memory_node, ros, tmp_path)
    memory.remember(hedged())
    shown = memory.admin('pending_show', pending_id='P1')
    assert shown.success and shown.item.utterance == 'Maybe Ada Lovelace prefers green tea.'
    assert (shown.now_status, shown.now_reason, shown.now_rule) == (
        'still_refused', 'evidence_not_in_utterance', '10')
    no_reviewer = memory.admin('accept', pending_id='P1')
    assert (no_reviewer.success, no_reviewer.error_code) == (False, 'invalid_argument')
    accepted = memory.admin('accept', pending_id='P1', reviewer=REVIEWER)
    assert (accepted.success, accepted.outcome, accepted.memory.source_kind) == (
        True, 'accepted', 'supervised_statement')
    assert accepted.message == f'accepted P1: created {accepted.memory.id}'
    again = memory.admin('accept', pending_id='P1', reviewer='Eve (test)')
    assert (again.success, again.error_code) == (False, 'closed')
    assert again.message.startswith(f'P1 was already accepted as {accepted.memory.id} at ')
    shown = memory.admin('show', memory_id=accepted.memory.id)
    assert (shown.receipt.review_action, shown.receipt.reviewed_by,
            shown.receipt.pending_id) == ('accept', REVIEWER, 'P1')
    for command, fields in (('pending_show', {}), ('supersede', {'reviewer': REVIEWER}),
                            ('dismiss', {'reviewer': REVIEWER})):
        missing = memory.admin(command, pending_id='P7', **fields)
        assert (missing.error_code, missing.message) == (
            'not_found', 'P7 not found (no such pending item)'), command
        malformed = memory.admin(command, pending_id='MEM1', **fields)
        assert malformed.error_code == 'invalid_argument', command


def test_a_refused_accept_names_the_reason_and_the_memories(memory_node, ros, tmp_path):
    _, memory = start(memory_node, ros, tmp_path)
    stored = memory.remember(srv.Remember.Request(
        episode_id='e1', turn_id='t-tea', utterance='Ada Lovelace prefers black tea.',
        kind='preference', subject='Ada Lovelace', predicate='prefers_drink',
        value='black tea', evidence='Ada Lovelace prefers black tea'))
    memory.remember(hedged())
    refused = memory.admin('accept', pending_id='P1', reviewer=REVIEWER)
    assert (refused.success, refused.error_code, refused.refused_reason,
            refused.refused_rule, list(refused.conflicting_memory_ids)) == (
        False, 'refused', 'conflict', '18', [stored.memory_id])
    superseded = memory.admin('supersede', pending_id='P1', reviewer=REVIEWER)
    assert superseded.success and list(superseded.retired_memory_ids) == [stored.memory_id]
    old = memory.admin('show', memory_id=stored.memory_id)
    assert (old.memory.status, old.superseded_by) == ('retired', superseded.memory.id)
    assert list(memory.admin('show', memory_id=superseded.memory.id).supersedes) == [
        stored.memory_id]


@pytest.mark.parametrize('parameters, message', [
    ({'pending_max': 0}, 'pending_max must be an integer from 1 to 10000'),
    ({'pending_max': 10001}, 'pending_max must be an integer from 1 to 10000'),
    ({'pending_max_age_days': 0.0}, 'pending_max_age_days must be more than 0 and at most 3650'),
])
def test_an_unusable_queue_stops_startup_with_a_clear_error(memory_node, tmp_path, parameters,
                                                            message):
    with pytest.raises(StartupError, match=message):
        memory_node({'enabled': True, 'robot_profile': PROFILE,
                     'database_path': str(tmp_path / 'memory.sqlite3'), **parameters})


@pytest.fixture
def service(tmp_path):
    # MemoryService: the node's handlers without a node, an executor or a context.
    from mira_memory.core import config
    from mira_memory.memory.service import MemoryService
    database = tmp_path / 'memory.sqlite3'
    handlers = MemoryService(config.settings_from_parameters(True, str(database)),
                             robot_profile=lambda: PROFILE)
    handlers.database_path = database
    added = handlers.admin('entity_add', srv.AdminEntityAdd.Request(
        entity_type='person', canonical_name='Ada Lovelace'), srv.AdminEntityAdd.Response())
    assert added.success, added.message
    yield handlers
    handlers.close()


def listed(service):
    response = service.admin('pending', srv.AdminPending.Request(), srv.AdminPending.Response())
    return [item.turn_id for item in response.items]


def test_a_kept_refusal_is_written_after_the_reply_before_anything_reads_the_store(service):
    # The node defers the write past its reply (MemoryNode._after_reply); here
    # the deferred work waits in a list instead of on the executor.
    deferred = []
    first, second = hedged(), hedged(value='black tea')
    answer = service.remember(first, observed=True, defer=deferred.append)
    assert (answer.reason, answer.pending_review) == ('evidence_not_in_utterance', True)
    assert service.store.pending_items(10)[0] == [] and len(deferred) == 1
    # The next remember writes what waits first, so the ids keep the order of the replies.
    service.remember(second, observed=True, defer=deferred.append)
    assert [item.turn_id for item in service.store.pending_items(10)[0]] == [first.turn_id]
    # An admin command writes what waits before it reads.
    assert listed(service) == [first.turn_id, second.turn_id]
    # The deferred work finds nothing left: nothing is written twice.
    for work in deferred:
        work()
    assert listed(service) == [first.turn_id, second.turn_id]


def test_closing_writes_what_was_kept_and_not_written_yet(service):
    from mira_memory.core.store import MemoryStore
    service.remember(hedged(), observed=True, defer=lambda work: None)
    service.close()
    with MemoryStore.open(service.database_path) as reopened:
        assert [item.reason for item in reopened.pending_items(10)[0]] == [
            'evidence_not_in_utterance']
