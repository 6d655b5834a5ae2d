# SPDX-License-Identifier: Apache-2.0
"""Supervised review in the core: the pending queue, accept, supersede, dismiss, forget, verify."""

import datetime
import io
import json
import os
import re
import sqlite3
import threading

from helpers.raw_scan import raw_hits
from helpers.review_cases import GHENT, HEDGED, LEUVEN, UNKNOWN, UNKNOWN_RELATED
from helpers.schema_v3 import make_version_3_database, MEMORY_IDS, RECEIPT_IDS, SEQUENCES
from mira_memory.console import offline_tools
from mira_memory.core.admission import language, results, rules
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.archive import copies, verify
from mira_memory.core.errors import BackendError, ClosedError, InvalidInputError, NotFoundError
from mira_memory.core.errors import RefusedError
from mira_memory.core.recall import READING_LINE, recall, SUPERVISED_LINE
from mira_memory.core.review import decisions, keep
from mira_memory.core.store import MemoryStore, NewMemory, schema, transaction
import pytest

ROBOT = 'Mira'
REVIEWER = 'Dana (memory_console_1 on robot)'
SETTINGS = keep.ReviewSettings()


class Clock:
    """A store clock the test moves."""

    def __init__(self):
        self.now = datetime.datetime(2026, 5, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)

    def __call__(self):
        return self.now

    def advance(self, **delta):
        self.now += datetime.timedelta(**delta)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def world(db_path, clock):
    """Open a store with Ada Lovelace (alias Ada), Zoe Quist and the robot Mira."""
    opened = MemoryStore.open(db_path, clock=clock)
    ada = opened.add_entity('person', 'Ada Lovelace')
    opened.add_alias(ada.id, 'Ada')
    opened.add_entity('person', 'Zoe Quist')
    opened.add_entity('robot', ROBOT)
    yield opened
    opened.close()


_turns = iter(range(1, 100000))


def say(store, case, settings=SETTINGS, turn=None):
    """Run remember's admission on case (utterance, proposal) and keep what it refuses."""
    utterance, proposal = case
    context = TurnContext('e1', turn or f't{next(_turns)}', utterance)
    result = rules.admit(store, context, proposal, ROBOT)
    return keep.keep(store, context, proposal, ROBOT, result, settings)


def say_into(store, case, settings, intake, episode='e1'):
    """Like say(), through one Intake (its per-minute record and log), in episode."""
    utterance, proposal = case
    context = TurnContext(episode, f't{next(_turns)}', utterance)
    result = rules.admit(store, context, proposal, ROBOT)
    return keep.keep(store, context, proposal, ROBOT, result, settings, intake)


def pending(store):
    return store.pending_items(1000)[0]


def memory_count(store):
    return store.counts()['memories']


# Keeping ---------------------------------------------------------------------------

def test_a_grounding_refusal_is_kept_with_all_a_person_needs_to_judge_it(world, clock):
    result = say(world, HEDGED, turn='t-hedge')
    assert (result.status, result.reason, result.rule) == (
        'rejected', 'evidence_not_in_utterance', '10')
    assert result.pending_review
    [item] = pending(world)
    assert (item.id, item.episode_id, item.turn_id, item.utterance) == (
        1, 'e1', 't-hedge', HEDGED[0])
    assert (item.kind, item.subject, item.predicate, item.value, item.evidence) == (
        'preference', 'Ada Lovelace', 'prefers_drink', 'green tea',
        'Ada Lovelace prefers green tea')
    assert (item.related_entity, item.related_role, item.robot_profile) == (None, None, ROBOT)
    assert (item.reason, item.rule, item.explanation) == (
        result.reason, '10', results.explanation(result))
    # The explanation names the trigger that decided, for the person who reviews it.
    assert item.explanation == result.error + (
        ' Decided by: hedge "Maybe" at characters 0-5, reach sentence, both ways, governs'
        ' "Ada Lovelace prefers green tea".')
    assert (item.rules_version, item.rules_digest) == (
        language.RULES_VERSION, language.rules_digest())
    assert item.created_at == '2026-05-01T12:00:00Z' and item.conflicting_memory_ids == ()
    assert world.counts()['memories'] == 0


@pytest.mark.parametrize('case, reason, rule', [
    (UNKNOWN, 'subject_not_found', '14'),
    (UNKNOWN_RELATED, 'related_entity_not_found', '15'),
], ids=['subject_not_found', 'related_entity_not_found'])
def test_an_unknown_name_is_kept(world, case, reason, rule):
    result = say(world, case)
    assert (result.reason, result.rule, result.pending_review) == (reason, rule, True)
    assert [item.reason for item in pending(world)] == [reason]


def test_a_conflict_is_kept_with_the_memories_it_conflicts_with(world):
    stored = say(world, LEUVEN)
    result = say(world, GHENT)
    assert (result.reason, result.pending_review) == ('conflict', True)
    assert pending(world)[0].conflicting_memory_ids == (stored.memory_id,)


@pytest.mark.parametrize('proposal, reason', [
    # Rule 9: the value was not said; a person would have to store what was not said.
    (Proposal('fact', 'Ada Lovelace', 'likes', 'coffee', None, None, 'Ada Lovelace likes tea'),
     'value_not_supported'),
    # Rule 5: the evidence is not a span of the utterance.
    (Proposal('fact', 'Ada Lovelace', 'likes', 'tea', None, None, 'Ada likes black tea'),
     'evidence_not_in_utterance'),
    # Rule 1: an over-long field.
    (Proposal('fact', 'Ada Lovelace', 'likes', 'tea', None, None, 'x' * 501),
     'invalid_tool_arguments'),
    # Rule 2: forbidden characters, an inadmissible kind.
    (Proposal('fact', 'Ada\u202eLovelace', 'likes', 'tea', None, None, 'Ada Lovelace likes tea'),
     'invalid_proposal'),
    (Proposal('event', 'Ada Lovelace', 'likes', 'tea', None, None, 'Ada Lovelace likes tea'),
     'invalid_proposal'),
    # Rule 4: malformed related fields.
    (Proposal('relationship', 'Ada Lovelace', 'likes', 'tea', None, None,
              'Ada Lovelace likes tea'), 'related_fields_incomplete'),
], ids=['value_not_said', 'evidence_not_a_span', 'too_long', 'forbidden_character', 'kind',
        'related_incomplete'])
def test_a_malformed_or_unsupported_proposal_is_never_kept(world, proposal, reason):
    result = say(world, ('Ada Lovelace likes tea.', proposal))
    assert (result.status, result.reason, result.pending_review) == ('rejected', reason, False)
    assert pending(world) == []


def test_an_ambiguous_subject_and_a_store_failure_are_never_kept(world, monkeypatch):
    world.add_entity('person', 'Ada')  # now "Ada" names two entities
    utterance = 'Ada likes tea.'
    proposal = Proposal('fact', 'Ada', 'likes', 'tea', None, None, 'Ada likes tea')
    result = say(world, (utterance, proposal))
    assert (result.reason, result.pending_review) == ('subject_ambiguous', False)
    failure = keep.keep(world, TurnContext('e1', 'tb', utterance), proposal, ROBOT,
                        results.backend_failure(), SETTINGS)
    assert failure.pending_review is False and pending(world) == []


def test_with_the_queue_off_nothing_is_kept(world):
    off = keep.ReviewSettings(enabled=False)
    result = say(world, HEDGED, off)
    assert (result.reason, result.pending_review) == ('evidence_not_in_utterance', False)
    assert pending(world) == []


def test_the_same_proposal_for_the_same_utterance_is_kept_once(world):
    first = say(world, HEDGED, turn='ta')
    again = say(world, HEDGED, turn='tb')  # another turn, the same words
    assert first.pending_review and again.pending_review
    assert [item.turn_id for item in pending(world)] == ['ta']
    other = (HEDGED[0], Proposal('preference', 'Ada Lovelace', 'likes_drink', 'green tea', None,
                                 None, 'Ada Lovelace prefers green tea'))
    say(world, other)
    assert len(pending(world)) == 2


def allergic(name):
    return (f'{name} is allergic to latex.',
            Proposal('fact', name, 'allergic_to', 'latex', None, None,
                     f'{name} is allergic to latex'))


def test_a_full_queue_keeps_nothing_new_and_removes_nothing_waiting(world):
    small = keep.ReviewSettings(max_items=3)
    logged = []
    intake = keep.Intake(small, log=lambda text, warning: logged.append((warning, text)))
    names = ['Lou Arden', 'Kim Orr', 'Sam Vey', 'Ivo Lind', 'Pia Rask']
    answers = [say_into(world, allergic(name), small, intake) for name in names]
    # The rules' own refusal every time; only pending_review tells what was kept.
    assert {(answer.reason, answer.rule) for answer in answers} == {('subject_not_found', '14')}
    assert [answer.pending_review for answer in answers] == [True, True, True, False, False]
    assert [item.subject for item in pending(world)] == names[:3]
    assert world.pending_items(10)[1] == (3, 0, 0)
    assert intake.not_kept == {'queue full': 2, 'episode limit': 0, 'rate limit': 0}
    # Logged once when the run of refusals starts, once when an item fits again.
    assert logged == [(True, 'the review queue keeps no new refusal (queue full: at most 3 '
                             'waiting, 20 per episode, 30 new a minute); the refusals are '
                             'answered as the rules give them, not kept, and counted on '
                             '/diagnostics')]
    decisions.dismiss(world, 1, REVIEWER, small)
    assert say_into(world, allergic('Bram Tull'), small, intake).pending_review
    assert logged[1:] == [(False, 'the review queue keeps refusals again; 2 were not kept '
                                  'meanwhile')]
    # The same proposal already waiting is answered kept, whatever the bounds.
    assert say_into(world, allergic('Kim Orr'), small, intake).pending_review


def test_one_episode_and_one_minute_keep_at_most_their_share(world):
    bounds = keep.ReviewSettings(max_per_episode=2, max_per_minute=3)
    now = [1000.0]
    intake = keep.Intake(bounds, clock=lambda: now[0])
    same = [say_into(world, allergic(f'Kim Orr{n}'), bounds, intake, episode='e-same')
            for n in range(3)]
    assert [answer.pending_review for answer in same] == [True, True, False]
    other = [say_into(world, allergic(f'Sam Vey{n}'), bounds, intake, episode=f'e{n}')
             for n in range(2)]
    assert [answer.pending_review for answer in other] == [True, False]
    assert intake.not_kept == {'queue full': 0, 'episode limit': 1, 'rate limit': 1}
    now[0] += keep.RATE_WINDOW_SEC
    assert say_into(world, allergic('Ivo Lind'), bounds, intake, episode='e9').pending_review
    assert len(pending(world)) == 4


@pytest.mark.parametrize('name, value', [
    ('pending_max', 0), ('pending_max_per_episode', 0), ('pending_max_per_minute', 10001),
    ('pending_max_per_minute', True)])
def test_bounds_out_of_range_are_refused_by_name(name, value):
    values = {'pending_max': 200, 'pending_max_per_episode': 20, 'pending_max_per_minute': 30,
              name: value}
    with pytest.raises(ValueError, match=f'^{name} must be an integer from 1 to 10000$'):
        keep.ReviewSettings.from_parameters(True, values['pending_max'], 7.0,
                                            values['pending_max_per_episode'],
                                            values['pending_max_per_minute'])


def test_an_item_expires_after_its_age_and_then_cannot_be_accepted(world, clock):
    week = keep.ReviewSettings(max_age=datetime.timedelta(days=7))
    say(world, HEDGED, week)
    clock.advance(days=7, seconds=1)
    with pytest.raises(ClosedError, match=r'^P1 expired \(kept 7 days from '
                                          r'2026-05-01T12:00:00Z\); nothing was written$'):
        decisions.accept(world, 1, REVIEWER, week)
    assert memory_count(world) == 0
    assert world.expire_pending(week.max_age) == 1
    assert world.pending_items(10) == ([], (0, 0, 1))
    with pytest.raises(ClosedError, match='^P1 expired and left the queue at '):
        decisions.accept(world, 1, REVIEWER, week)
    assert world.expire_pending(week.max_age) == 0


def test_the_same_proposal_after_its_item_expired_is_kept_anew(world, clock):
    week = keep.ReviewSettings(max_age=datetime.timedelta(days=7))
    say(world, HEDGED, week)
    clock.advance(days=8)
    # Not pruned yet (that is expire()'s): the keep closes the old item itself.
    assert say(world, HEDGED, week).pending_review
    [item] = pending(world)
    assert item.id > 1 and item.created_at == '2026-05-09T12:00:00Z'
    assert world.pending_items(10)[1] == (1, 0, 1)


def test_keeping_commits_without_its_own_fsync_and_leaves_synchronous_full(world):
    say(world, HEDGED)
    raw = world._connection.raw
    assert raw.execute('PRAGMA synchronous').fetchone()[0] == 2
    # A second connection sees the item: it was committed.
    other = sqlite3.connect(world.path)
    assert other.execute('SELECT count(*) FROM pending').fetchone() == (1,)
    other.close()


def test_a_connection_that_cannot_get_synchronous_full_back_writes_no_more(world, monkeypatch):
    real = transaction.set_pragma

    def failing(conn, name, value, expected):
        if name == 'synchronous' and value == 'FULL':
            raise BackendError('PRAGMA synchronous did not take effect')
        return real(conn, name, value, expected)
    monkeypatch.setattr(transaction, 'set_pragma', failing)
    with pytest.raises(BackendError):
        say(world, HEDGED)
    monkeypatch.setattr(transaction, 'set_pragma', real)
    # No later write can be acknowledged without its sync: writes stopped, reads go on.
    with pytest.raises(BackendError, match='^writes stopped after a storage failure'):
        world.add_entity('person', 'Ivo Lind')
    assert world.find_entities('Ada')[0].canonical_name == 'Ada Lovelace'


# Accept ------------------------------------------------------------------------------

def test_accept_of_a_grounding_refusal_writes_a_supervised_memory_with_its_receipt(world):
    refused = say(world, HEDGED, turn='t7')
    reviewed = decisions.accept(world, 1, REVIEWER, SETTINGS)
    assert (reviewed.outcome, reviewed.action) == ('accepted', 'accept')
    memory, payloads = world.get_memory(reviewed.memory_id)
    assert (memory.source_kind, memory.source_label, memory.summary, memory.value) == (
        'supervised_statement', 'episode e1 turn t7', 'Ada Lovelace prefers green tea',
        'green tea')
    assert [(link.entity_id, link.role) for link in memory.links] == [(1, 'subject')]
    assert [payload.text for payload in payloads] == ['Ada Lovelace prefers green tea']
    receipt = world.get_receipt(memory.id)
    assert (receipt.utterance, receipt.episode_id, receipt.turn_id) == (HEDGED[0], 'e1', 't7')
    assert receipt.rules_ran == '1-19 except 10-13,17 (overridden at review)'
    assert (receipt.review_action, receipt.reviewed_by, receipt.pending_id) == (
        'accept', REVIEWER, 1)
    assert (receipt.refused_reason, receipt.refused_rule, receipt.refused_at) == (
        'evidence_not_in_utterance', '10', '2026-05-01T12:00:00Z')
    # The receipt keeps the trigger that refused it, as the pending item had it.
    assert receipt.refused_explanation == results.explanation(refused)
    assert 'Decided by: hedge "Maybe"' in receipt.refused_explanation
    assert pending(world) == []
    # Recall shows it, and says how to read it: the operator's words a person accepted.
    lines = recall(world, 'Ada').text.splitlines()
    assert lines[3:5] == [READING_LINE, SUPERVISED_LINE]
    assert any('source: supervised_statement "episode e1 turn t7"' in line for line in lines)
    # Without a supervised memory in it, recall's text is as it was.
    assert SUPERVISED_LINE not in recall(world, 'Zoe Quist').text


def test_accept_still_runs_the_checks_it_does_not_override(world):
    say(world, HEDGED)
    # Meanwhile the console stored another drink in the same slot: that is a conflict.
    world.add_memory(NewMemory('preference', 'Ada prefers coffee', links=((1, 'subject'),),
                               predicate='prefers_drink', value='coffee'))
    before = world.counts()
    with pytest.raises(RefusedError) as refused:
        decisions.accept(world, 1, REVIEWER, SETTINGS)
    assert (refused.value.reason, refused.value.rule, refused.value.memory_ids) == (
        'conflict', '18', (1,))
    assert str(refused.value) == (
        'P1 conflicts with MEM1: memory supersede P1 retires it and writes this one, '
        'memory dismiss P1 drops it; nothing was written')
    assert world.counts() == before and len(pending(world)) == 1


def test_an_accepted_item_cannot_be_accepted_again(world, clock):
    say(world, HEDGED)
    first = decisions.accept(world, 1, REVIEWER, SETTINGS)
    clock.advance(seconds=5)
    with pytest.raises(ClosedError) as closed:
        decisions.accept(world, 1, 'Eve (memory_console_2 on robot)', SETTINGS)
    assert str(closed.value) == (
        f'P1 was already accepted as MEM{first.memory_id} at 2026-05-01T12:00:00Z by '
        f'{REVIEWER}; nothing was written')
    with pytest.raises(NotFoundError, match=r'^P9 not found'):
        decisions.accept(world, 9, REVIEWER, SETTINGS)
    assert memory_count(world) == 1


def test_two_consoles_accepting_the_same_item_at_once_exactly_one_wins(world, db_path, clock):
    say(world, HEDGED)
    # Two owners of the same file, each in a thread: the database's one writer decides.
    other = MemoryStore.open(db_path, clock=clock)
    outcomes = []
    start = threading.Barrier(2)

    def decide(store, name):
        start.wait()
        try:
            outcomes.append(decisions.accept(store, 1, name, SETTINGS).outcome)
        except ClosedError as error:
            outcomes.append(str(error))
    threads = [threading.Thread(target=decide, args=(store, name))
               for store, name in ((world, 'one'), (other, 'two'))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other.close()
    assert len(outcomes) == 2 and outcomes.count('accepted') == 1
    [lost] = [outcome for outcome in outcomes if outcome != 'accepted']
    assert lost.startswith('P1 was already accepted as MEM1 at ')
    assert memory_count(world) == 1


def test_accept_with_a_new_entity_creates_it_as_the_operator_said_it(world):
    utterance = 'lou arden is allergic to latex.'
    said = Proposal('fact', 'LOU ARDEN', 'allergic_to', 'latex', None, None,
                    'lou arden is allergic to latex')
    say(world, (utterance, said))
    with pytest.raises(RefusedError, match=r'the subject still names no entity'):
        decisions.accept(world, 1, REVIEWER, SETTINGS)
    reviewed = decisions.accept(world, 1, REVIEWER, SETTINGS, new_entity_type='person',
                                aliases=('Lou', 'the new intern'))
    # The operator's spelling, not the model's, names the entity.
    assert (reviewed.entity.entity_type, reviewed.entity.canonical_name,
            reviewed.entity.aliases) == ('person', 'lou arden', ('Lou', 'the new intern'))
    memory, _ = world.get_memory(reviewed.memory_id)
    assert [link.entity_id for link in memory.links] == [reviewed.entity.id]
    assert world.get_receipt(memory.id).review_action == 'accept_new_entity'
    assert world.get_receipt(memory.id).rules_ran == '1-19'


def test_accept_with_a_new_related_entity(world):
    say(world, UNKNOWN_RELATED)
    reviewed = decisions.accept(world, 1, REVIEWER, SETTINGS, new_entity_type='person')
    memory, _ = world.get_memory(reviewed.memory_id)
    assert reviewed.entity.canonical_name == 'Bram Tull'
    assert [(link.entity_name, link.role) for link in memory.links] == [
        ('Ada Lovelace', 'subject'), ('Bram Tull', 'cousin')]


def test_a_new_entity_is_refused_where_it_does_not_apply_and_nothing_is_written(world):
    say(world, HEDGED)
    say(world, UNKNOWN)
    before = world.counts()
    with pytest.raises(InvalidInputError, match='refused as evidence_not_in_utterance'):
        decisions.accept(world, 1, REVIEWER, SETTINGS, new_entity_type='person')
    with pytest.raises(InvalidInputError, match='--alias names the new entity'):
        decisions.accept(world, 2, REVIEWER, SETTINGS, aliases=('Lou',))
    with pytest.raises(InvalidInputError, match='the reviewer must be named'):
        decisions.accept(world, 2, ' ', SETTINGS)
    # Someone made the entity meanwhile: a second one is not made.
    world.add_entity('person', 'Lou Arden')
    before = world.counts()
    with pytest.raises(RefusedError, match='names ENT4 by now: memory accept P2 without'):
        decisions.accept(world, 2, REVIEWER, SETTINGS, new_entity_type='person')
    assert world.counts() == before
    # And a plain accept now writes it.
    assert decisions.accept(world, 2, REVIEWER, SETTINGS).outcome == 'accepted'


def test_a_new_entity_is_rolled_back_when_the_memory_cannot_be_written(world):
    say(world, UNKNOWN, turn='t-lou')
    # Meanwhile the same turn wrote another memory (rule 19 still runs).
    say(world, (UNKNOWN[0], Proposal('fact', 'Ada Lovelace', 'allergic_to', 'latex', None,
                                     None, 'Ada Lovelace')), turn='t-lou')
    world.add_entity('person', 'Pia Rask')
    context = TurnContext('e1', 't-lou', 'Pia Rask plays chess.')
    rules.admit(world, context, Proposal('fact', 'Pia Rask', 'plays', 'chess', None, None,
                                         'Pia Rask plays chess'), ROBOT)
    before = world.counts()
    with pytest.raises(RefusedError) as refused:
        decisions.accept(world, 1, REVIEWER, SETTINGS, new_entity_type='person')
    assert (refused.value.reason, refused.value.rule) == ('invalid_proposal', '19')
    assert world.counts() == before and world.find_entities('Lou Arden') == []


# Supersede ----------------------------------------------------------------------------

def test_supersede_retires_the_conflict_and_writes_the_new_memory(world):
    old = say(world, LEUVEN).memory_id
    say(world, GHENT)
    reviewed = decisions.supersede(world, 1, REVIEWER, SETTINGS)
    assert (reviewed.outcome, reviewed.retired_ids) == ('superseded', (old,))
    retired, _ = world.get_memory(old)
    assert (retired.status, retired.retired_reason) == (
        'retired', f'superseded at review of P1 by {REVIEWER}')
    new, _ = world.get_memory(reviewed.memory_id)
    assert (new.status, new.value, new.source_kind) == ('active', 'Ghent', 'supervised_statement')
    # memory show's chain, both ways.
    assert world.supersessions(old) == (reviewed.memory_id, ())
    assert world.supersessions(reviewed.memory_id) == (None, (old,))
    assert world.get_receipt(new.id).rules_ran == '1-19 except 18 (overridden at review)'
    # The old memory keeps its own receipt.
    assert world.get_receipt(old).utterance == LEUVEN[0]
    assert 'Leuven' not in recall(world, 'Zoe Quist').text


def test_accept_of_a_conflict_points_to_supersede(world):
    say(world, LEUVEN)
    say(world, GHENT)
    with pytest.raises(RefusedError, match=r'^P1 conflicts with MEM1: memory supersede P1'):
        decisions.accept(world, 1, REVIEWER, SETTINGS)


def test_supersede_after_the_conflict_was_retired_meanwhile_writes_nothing(world):
    old = say(world, LEUVEN).memory_id
    say(world, GHENT)
    world.retire_memory(old, 'moved away')
    before = world.counts()
    with pytest.raises(RefusedError, match=r'^P1 conflicts with no active memory now'):
        decisions.supersede(world, 1, REVIEWER, SETTINGS)
    assert world.counts() == before and world.supersessions(old) == (None, ())
    # What is left to do is an accept.
    assert decisions.accept(world, 1, REVIEWER, SETTINGS).outcome == 'accepted'


def test_a_supersede_that_fails_after_retiring_leaves_the_old_memory_active(world, monkeypatch):
    old = say(world, LEUVEN).memory_id
    say(world, GHENT)
    from mira_memory.core.store import writes

    def crash(self, *args, **kwargs):
        raise BackendError('the disk failed between the retire and the write')
    monkeypatch.setattr(writes.ReviewTransaction, 'insert_memory', crash)
    with pytest.raises(BackendError):
        decisions.supersede(world, 1, REVIEWER, SETTINGS)
    assert world.get_memory(old)[0].status == 'active'
    assert [item.id for item in pending(world)] == [1]
    assert memory_count(world) == 1


# Dismiss and forget ---------------------------------------------------------------------

def test_dismiss_removes_the_item_and_nothing_else(world):
    say(world, HEDGED)
    before = world.counts()
    reviewed = decisions.dismiss(world, 1, REVIEWER, SETTINGS)
    assert (reviewed.outcome, reviewed.memory_id) == ('dismissed', None)
    assert pending(world) == [] and world.counts() == before
    with pytest.raises(ClosedError, match=f'^P1 was dismissed at .* by {re.escape(REVIEWER)}'):
        decisions.supersede(world, 1, REVIEWER, SETTINGS)


SECRET = ('Note this: Zorblatt Quennifer drinks plumbix cordial, every morning.',
          Proposal('fact', 'Zorblatt Quennifer', 'drinks', 'plumbix cordial', None, None,
                   'Zorblatt Quennifer drinks plumbix cordial'))
SECRET_WORDS = ('Zorblatt', 'Quennifer', 'plumbix', 'every morning', 'Note this')


def test_forget_of_an_entity_removes_the_items_naming_it_with_no_word_left(world, db_path):
    quennifer = world.add_entity('person', 'Zorblatt Quennifer')
    world.add_alias(quennifer.id, 'Zorb')
    # Kept for a hedge (the words "Note this"), by its name.
    hedged = say(world, ('Maybe Zorblatt Quennifer drinks plumbix cordial, every morning. '
                         'Note this.', SECRET[1]))
    assert hedged.pending_review
    # By its alias, and as the related entity of another.
    say(world, ('Maybe Zorb likes quiet.',
                Proposal('fact', 'Zorb', 'likes', 'quiet', None, None, 'Zorb likes quiet')))
    say(world, ('Maybe Ada Lovelace is the cousin of Zorb.', Proposal(
        'relationship', 'Ada Lovelace', 'cousin_of', 'Zorb', 'Zorb', 'cousin',
        'Ada Lovelace is the cousin of Zorb')))
    say(world, UNKNOWN)  # names someone else: stays
    kept = [item.id for item in pending(world)]
    assert len(kept) == 4
    preview = world.forget_entity(quennifer.id, apply=False)
    assert preview.pending_ids == tuple(kept[:3]) and len(pending(world)) == 4
    world.forget_entity(quennifer.id, apply=True)
    assert [item.subject for item in pending(world)] == ['Lou Arden']
    with pytest.raises(ClosedError, match='^P1 was removed at .* by memory forget'):
        decisions.accept(world, 1, REVIEWER, SETTINGS)
    assert raw_hits(db_path, SECRET_WORDS + ('Zorb',)) == []
    world.close()
    assert raw_hits(db_path, SECRET_WORDS + ('Zorb',)) == []


def test_forget_of_an_entity_removes_the_items_whose_utterance_names_it(world, db_path):
    quennifer = world.add_entity('person', 'Zorblatt Quennifer')
    world.add_alias(quennifer.id, 'Zorb')
    # Neither the subject nor the related entity: only the operator's words name them.
    mentions = [
        ('Lou Arden met Zorblatt Quennifer at the plumbix market.', 'Lou Arden', 'met'),
        ('Kim Orr, a friend of ZORB, sells plumbix cordial.', 'Kim Orr', 'sells'),
        # A genitive, as admission finds a subject said in German or Dutch.
        ('Ivo Lind fährt Zorbs plumbix Auto.', 'Ivo Lind', 'drives'),
    ]
    for utterance, subject, predicate in mentions:
        result = say(world, (utterance, Proposal(
            'fact', subject, predicate, 'plumbix', None, None, utterance.rstrip('.'))))
        assert result.pending_review, (utterance, result)
    # Whole words only: "Zorbex" is not "Zorb", and Ada stays.
    say(world, ('Pia Rask owns a Zorbex plumbix.', Proposal(
        'fact', 'Pia Rask', 'owns', 'a Zorbex plumbix', None, None,
        'Pia Rask owns a Zorbex plumbix')))
    kept = [item.id for item in pending(world)]
    assert len(kept) == 4
    plan = world.forget_entity(quennifer.id, apply=True)
    assert plan.pending_ids == tuple(kept[:3])
    assert [item.subject for item in pending(world)] == ['Pia Rask']
    world.close()
    assert raw_hits(db_path, ('Zorblatt', 'Quennifer', 'ZORB', 'Zorbs', 'Lou Arden',
                              'Kim Orr', 'Ivo Lind')) == []


def test_dismiss_leaves_no_byte_of_the_item_in_any_file(world, db_path):
    result = say(world, SECRET)
    assert (result.reason, result.pending_review) == ('subject_not_found', True)
    assert raw_hits(db_path, SECRET_WORDS)  # in the WAL until the dismiss
    decisions.dismiss(world, 1, REVIEWER, SETTINGS)
    # While the store is still open: nothing in the database, the -wal or the -shm.
    assert raw_hits(db_path, SECRET_WORDS) == []


def test_forget_of_a_memory_removes_the_items_that_conflict_with_it_or_say_it(world):
    old = say(world, LEUVEN).memory_id
    say(world, GHENT)  # conflicts with it
    say(world, ('Maybe Zoe Quist lives in Leuven.', LEUVEN[1]))  # says its words again
    say(world, HEDGED)  # about something else
    assert [item.id for item in pending(world)] == [1, 2, 3]
    plan = world.forget_memory(old, apply=True)
    assert plan.pending_ids == (1, 2)
    assert [item.subject for item in pending(world)] == ['Ada Lovelace']


def test_you_names_the_robot_for_forget(world):
    said = ('Maybe you like rain.', Proposal('fact', 'you', 'likes', 'rain', None, None,
                                             'you like rain'))
    assert say(world, said).pending_review
    robot = world.find_entities(ROBOT)[0]
    assert world.forget_entity(robot.id, apply=False).pending_ids == (1,)


def test_nothing_pending_is_recalled(world):
    say(world, HEDGED)
    say(world, LEUVEN)
    assert say(world, GHENT).pending_review
    for query in ('Ada', 'Ada Lovelace', 'Zoe Quist'):
        text = recall(world, query).text
        assert 'green tea' not in text and 'Ghent' not in text and 'Maybe' not in text


# Verify -------------------------------------------------------------------------------

def run(main, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([str(arg) for arg in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_verify_judges_the_pending_items_and_marks_now_admissible(world, db_path):
    say(world, HEDGED)
    say(world, UNKNOWN)
    say(world, LEUVEN)
    say(world, GHENT)
    world.add_entity('person', 'Lou Arden')  # P2 is admissible now
    found = []
    summary = verify.verify(str(db_path), on_pending=found.append)
    assert [(f.pending_id, f.status, f.reason, f.rule, f.memory_ids) for f in found] == [
        (1, 'still_refused', 'evidence_not_in_utterance', '10', ()),
        (2, 'now_admissible', '', '', ()),
        (3, 'still_refused', 'conflict', '18', (1,)),
    ]
    assert (summary.pending_judged, summary.pending_now_admissible) == (3, 1)
    assert summary.all_ok  # pending items never fail a verify
    assert [f.line() for f in found] == [
        'P1 STILL REFUSED evidence_not_in_utterance (10)',
        'P2 NOW ADMISSIBLE (kept for subject_not_found (14))',
        'P3 STILL REFUSED conflict (18) with MEM1',
    ]
    # Asked for memories by id, verify judges no pending item.
    assert verify.verify(str(db_path), [1]).pending_judged == 0
    world.close()
    code, out, err = run(offline_tools.verify_main, '--database', db_path)
    assert (code, err) == (0, '')
    assert out.splitlines()[1:] == [
        'P1 STILL REFUSED evidence_not_in_utterance (10)',
        'P2 NOW ADMISSIBLE (kept for subject_not_found (14))',
        'P3 STILL REFUSED conflict (18) with MEM1',
        'judged 3 pending review items: 1 now admissible']
    code, out, _ = run(offline_tools.verify_main, '--database', db_path, '--json')
    document = json.loads(out)
    assert document['pending'][1] == {'pending_id': 'P2', 'status': 'now_admissible',
                                      'refused_reason': 'subject_not_found',
                                      'refused_rule': '14'}


def test_verify_counts_the_supervised_memories_it_does_not_judge(world, db_path):
    # A person's decision is not judged again, but it is counted: a store of
    # accepted memories does not verify as an empty one.
    say(world, UNKNOWN)
    world.add_entity('person', 'Lou Arden')
    assert decisions.accept(world, 1, REVIEWER, SETTINGS).outcome == 'accepted'
    summary = verify.verify(str(db_path))
    assert (summary.judged, summary.not_judged, summary.all_ok) == (0, 1, True)
    assert summary.line().startswith(
        'verified 0 memories: 0 ok, 0 would reject, 0 no receipt, 1 not judged (rules ')


def test_assess_says_already_stored(world):
    say(world, UNKNOWN)
    world.add_entity('person', 'Lou Arden')
    assert say(world, UNKNOWN).outcome == 'created'  # said again: MEM1
    with world.snapshot() as conn:
        now = decisions.assess(conn, pending(world)[0])
    assert now == decisions.Assessment('already_stored', memory_ids=(1,))
    reviewed = decisions.accept(world, 1, REVIEWER, SETTINGS)
    assert (reviewed.outcome, reviewed.memory_id) == ('already_stored', 1)
    assert pending(world) == [] and memory_count(world) == 1


# Backup, export, import ------------------------------------------------------------------

@pytest.fixture
def reviewed_world(world):
    """Pending items, a supervised memory with its receipt, and a supersession."""
    say(world, LEUVEN)
    say(world, GHENT)
    decisions.supersede(world, 1, REVIEWER, SETTINGS)
    say(world, HEDGED)
    say(world, UNKNOWN)
    return world


def records_of(path):
    return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()]


def test_an_export_holds_the_pending_items_only_when_asked(reviewed_world, tmp_path):
    plain = tmp_path / 'plain.jsonl'
    copies.export(str(reviewed_world.path), str(plain))
    records = records_of(plain)
    assert 'pending' not in records[0]['counts']
    assert not any(r['type'] == 'pending' for r in records)
    assert not any('Maybe' in json.dumps(r) for r in records)
    assert records[0]['counts']['supersessions'] == 1
    receipt = [r for r in records if r['type'] == 'receipt'][-1]
    assert (receipt['review_action'], receipt['reviewed_by']) == ('supersede', REVIEWER)
    full = tmp_path / 'full.jsonl'
    copies.export(str(reviewed_world.path), str(full), include_pending=True)
    records = records_of(full)
    assert records[0]['counts']['pending'] == 2
    assert [r['id'] for r in records if r['type'] == 'pending'] == [2, 3]


@pytest.mark.parametrize('include_pending', [False, True], ids=['plain', 'with_pending'])
def test_export_import_export_is_byte_identical_with_review(reviewed_world, tmp_path,
                                                            include_pending):
    first = tmp_path / 'one.jsonl'
    copies.export(str(reviewed_world.path), str(first), include_pending=include_pending)
    code, out, err = run(offline_tools.import_main, '--database', tmp_path / 'new.sqlite3',
                         '--from', first)
    assert code == 0, err
    assert f'supersessions 1, pending {2 if include_pending else 0}' in out
    second = tmp_path / 'two.jsonl'
    copies.export(str(tmp_path / 'new.sqlite3'), str(second), include_pending=include_pending)
    assert first.read_bytes() == second.read_bytes()
    with MemoryStore.open(tmp_path / 'new.sqlite3') as imported:
        assert imported.supersessions(1) == (2, ())
        assert imported.get_receipt(2).review_action == 'supersede'
        # Pending ids are never given again, exported or not.
        say(imported, ('Maybe Zoe Quist plays chess.', Proposal(
            'fact', 'Zoe Quist', 'plays', 'chess', None, None, 'Zoe Quist plays chess')))
        assert pending(imported)[-1].id == 4


def test_a_backup_holds_the_pending_items(reviewed_world, tmp_path):
    copy = copies.backup(str(reviewed_world.path), str(tmp_path / 'backup.sqlite3'))
    assert copy['counts']['pending'] == 2
    with MemoryStore.open(tmp_path / 'backup.sqlite3') as restored:
        assert pending(restored) == pending(reviewed_world)


def test_import_refuses_a_review_record_that_breaks_a_rule(reviewed_world, tmp_path):
    export = tmp_path / 'one.jsonl'
    copies.export(str(reviewed_world.path), str(export))
    lines = export.read_text(encoding='utf-8').splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if '"supersession"' in line)
    record = json.loads(lines[number])
    record['old_memory_id'] = 2  # the active memory, superseded by itself's rules
    lines[number] = json.dumps(record) + '\n'
    bad = tmp_path / 'bad.jsonl'
    bad.write_text(''.join(lines), encoding='utf-8')
    code, _, err = run(offline_tools.import_main, '--database', tmp_path / 'new.sqlite3',
                       '--from', bad)
    assert code == 1 and f'line {number + 1}: a superseded memory must be retired' in err
    assert not (tmp_path / 'new.sqlite3').exists()


def test_a_version_3_export_imports_with_empty_review_columns(world, tmp_path):
    say(world, LEUVEN)
    export = tmp_path / 'v4.jsonl'
    copies.export(str(world.path), str(export))
    records = records_of(export)
    header = dict(records[0], schema_version=3)
    del header['counts']['supersessions']
    review = ('review_action', 'reviewed_by', 'pending_id', 'refused_at', 'refused_reason',
              'refused_rule', 'refused_explanation')
    old = [header] + [{k: v for k, v in r.items() if k not in review} for r in records[1:]]
    v3 = tmp_path / 'v3.jsonl'
    v3.write_text(''.join(json.dumps(r) + '\n' for r in old), encoding='utf-8')
    code, out, err = run(offline_tools.import_main, '--database', tmp_path / 'new.sqlite3',
                         '--from', v3)
    assert code == 0, err
    with MemoryStore.open(tmp_path / 'new.sqlite3') as imported:
        assert imported.get_receipt(1).review_action is None


# memory_migrate 3 -> 4 -----------------------------------------------------------------

def table_rows(path, tables=('entities', 'aliases', 'memories', 'memory_links', 'payloads',
                             'receipts', 'sqlite_sequence')):
    conn = sqlite3.connect(path)
    try:
        return {table: conn.execute(f'SELECT * FROM {table} ORDER BY 1, 2').fetchall()
                for table in tables}
    finally:
        conn.close()


def test_the_store_refuses_a_version_3_file_naming_the_command(tmp_path):
    database = make_version_3_database(tmp_path / 'memory.sqlite3')
    before = database.read_bytes()
    with pytest.raises(schema.UnsupportedDatabaseError) as caught:
        MemoryStore.open(database)
    assert str(caught.value) == (
        'database has schema version 3, this node needs version 4; it was left unchanged: '
        f'stop the node and run: ros2 run mira_memory memory_migrate --database {database}')
    assert database.read_bytes() == before and os.listdir(tmp_path) == ['memory.sqlite3']


def test_migrate_turns_a_real_version_3_file_into_version_4(tmp_path, clock):
    database = make_version_3_database(tmp_path / 'memory.sqlite3')
    original = table_rows(database)
    code, out, err = run(offline_tools.migrate_main, '--database', database)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f'migrating {database} from schema version 3 to 4'
    assert lines[1].startswith(f'backup: {database}.v3-backup-') and 'receipts 3' in lines[1]
    assert lines[2] == ('migrated in one transaction: entities 3, aliases 1, memories 4, '
                        'links 5, payloads 4, receipts 3 (row counts unchanged; '
                        'integrity_check and foreign_key_check ok)')
    assert lines[3:] == ['review: no refused proposal is pending yet (memory pending; '
                         'docs/review.md)', 'schema version: 4']
    backups = sorted(tmp_path.glob('memory.sqlite3.v3-backup-*'))
    assert len(backups) == 1 and schema.read_version(backups[0])[0] == 3
    assert table_rows(backups[0]) == original
    migrated = table_rows(database)
    # Every receipt is kept, its review columns empty.
    assert [row[:18] for row in migrated.pop('receipts')] == original.pop('receipts')
    assert migrated == original
    assert dict(original['sqlite_sequence']) == SEQUENCES
    # The migrated schema is exactly the one a new database gets.
    fresh = tmp_path / 'fresh.sqlite3'
    MemoryStore.open(fresh).close()
    assert schema_sql(database) == schema_sql(fresh)
    with MemoryStore.open(database, clock=clock) as store:
        assert store.schema_version == 4
        assert [m for m in MEMORY_IDS if store.get_receipt(m)] == list(RECEIPT_IDS)
        assert store.get_receipt(4).review_action is None
        assert store.pending_items(10) == ([], (0, 0, 0))
        # It keeps refusals and decides them as a new database does.
        assert say(store, (
            'Maybe Ada Lovelace likes opera.', Proposal(
                'fact', 'Ada Lovelace', 'enjoys', 'opera', None, None,
                'Ada Lovelace likes opera'))).pending_review
        assert decisions.accept(store, 1, REVIEWER, SETTINGS).memory_id == 6
    code, out, _ = run(offline_tools.verify_main, '--database', database)
    assert code == 0, out
    code, out, _ = run(offline_tools.migrate_main, '--database', database)
    assert code == 0 and 'nothing to do' in out


def schema_sql(path):
    conn = sqlite3.connect(path)
    try:
        return sorted(' '.join(sql.split()) for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT GLOB 'sqlite_*'"))
    finally:
        conn.close()


def test_a_failed_migration_leaves_version_3(tmp_path, monkeypatch):
    database = make_version_3_database(tmp_path / 'memory.sqlite3')
    original = table_rows(database)

    def broken(conn):
        conn.execute('CREATE TABLE pending (x)')
        conn.execute('INSERT INTO memories (id) VALUES (NULL)')  # breaks NOT NULL
    monkeypatch.setattr(schema, '_add_v4_tables', broken)
    code, _, err = run(offline_tools.migrate_main, '--database', database)
    assert code == 1 and 'rolled back' in err
    assert schema.read_version(database)[0] == 3 and table_rows(database) == original
