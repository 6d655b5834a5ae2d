# SPDX-License-Identifier: Apache-2.0
"""
Write generations and the two answers kept by them, on real store files.

The store records what every write may have changed; RecallCache keeps
recall answers while nothing they read changed, and every cache test
compares with the uncached answer, computed afresh on the same file.
TurnProposalLog answers an identical retry of a remember with its first
answer, whatever was written since (a lost reply is never a lost answer).
"""

import datetime
import itertools

from conftest import fixed_clock
from helpers.admission_cases import FACT, FACT_CONTEXT, ROBOT_PROFILE
from mira_memory.core import recall as recall_module
from mira_memory.core.admission import rules
from mira_memory.core.admission.turn_proposals import TurnProposalLog
from mira_memory.core.store import NewMemory, transaction
from mira_memory.core.store.transaction import CHANGED_ENTITIES_MAX
import pytest


class SteppingClock:
    """A clock one second later at every call, so each answer has its own time line."""

    def __init__(self):
        self._ticks = itertools.count()

    def __call__(self):
        return fixed_clock() + datetime.timedelta(seconds=next(self._ticks))


@pytest.fixture
def people(store):
    ada = store.add_entity('person', 'Ada Lovelace')
    store.add_alias(ada.id, 'Countess')
    bob = store.add_entity('person', 'Bob Brask')
    sam_one = store.add_entity('person', 'Sam One')
    store.add_alias(sam_one.id, 'Sam')
    sam_two = store.add_entity('person', 'Sam Two')
    store.add_alias(sam_two.id, 'Sam')
    for entity in (ada, bob, sam_one, sam_two):
        for number in range(3):
            add_fact(store, entity, '%s fact %d.' % (entity.canonical_name, number))
    return {'ada': ada, 'bob': bob, 'sam_one': sam_one, 'sam_two': sam_two}


def add_fact(store, entity, summary, also=()):
    links = ((entity.id, 'subject'),) + tuple((other.id, 'mentioned') for other in also)
    return store.add_memory(NewMemory('fact', summary, links=links))


QUERIES = ('Ada Lovelace', 'countess', 'Bob Brask', 'Sam', 'Nobody Here', '', 'x' * 300,
           'Carol New', 'Ottoline Vexworth')


def assert_cache_answers_like_recall(cache, reader, clock_pair):
    """Every query: the cached answer equals a fresh recall at the same moment."""
    cached_clock, fresh_clock = clock_pair
    for query in QUERIES:
        assert cache.recall(query) == recall_module.recall(reader, query, fresh_clock), query


@pytest.fixture
def cache_and_reader(store, people):
    reader = store.open_reader()
    cached_clock, fresh_clock = SteppingClock(), SteppingClock()
    cache = recall_module.RecallCache(reader, store, clock=cached_clock)
    # Fill the cache: every later comparison starts from kept answers.
    assert_cache_answers_like_recall(cache, reader, (cached_clock, fresh_clock))
    return cache, reader, (cached_clock, fresh_clock)


def test_a_memory_insert_changes_only_the_entities_it_links(store, people):
    ada, bob = people['ada'], people['bob']
    before = store.generation
    add_fact(store, ada, 'Ada wrote the first program.')
    assert store.changed_since(before, {ada.id})
    assert not store.changed_since(before, {bob.id})
    assert not store.changed_since(before)


@pytest.mark.parametrize('write', ['entity_add', 'alias_add', 'retire', 'forget_memory',
                                   'forget_entity'])
def test_every_other_write_changes_everything(store, people, write):
    ada, bob = people['ada'], people['bob']
    memory = add_fact(store, bob, 'Bob likes tea.')
    before = store.generation
    if write == 'entity_add':
        store.add_entity('person', 'Carol New')
    elif write == 'alias_add':
        store.add_alias(bob.id, 'Bobby')
    elif write == 'retire':
        store.retire_memory(memory.id, 'wrong')
    elif write == 'forget_memory':
        store.forget_memory(memory.id, apply=True)
    else:
        store.forget_entity(bob.id, apply=True)
    assert store.generation == before + 1
    assert store.changed_since(before, {ada.id}) and store.changed_since(before)


def test_a_write_transaction_without_an_insert_changes_nothing(store, people):
    # What an admission that ends as a duplicate or a rejection does.
    before = store.generation
    with store.write() as tx:
        tx.find_entities('Ada Lovelace')
    assert store.generation == before and not store.changed_since(before)
    # An untracked write counts as a change even when it wrote nothing (a dry run).
    store.forget_memory(1, apply=False)
    assert store.changed_since(before)


def test_changes_are_exact_however_old_the_read(store, people):
    ada, bob = people['ada'], people['bob']
    before = store.generation
    for number in range(2 * CHANGED_ENTITIES_MAX):
        add_fact(store, bob, 'Bob note %d.' % number)
    # What a kept recall answer about Ada asks, and what an identical
    # remember retry asks (no entity in particular): nothing changed.
    assert not store.changed_since(before, {ada.id})
    assert not store.changed_since(before)
    assert store.changed_since(before, {ada.id, bob.id})
    middle = store.generation
    store.add_alias(ada.id, 'The Countess')
    add_fact(store, bob, 'Bob note after the alias.')
    assert store.changed_since(before) and store.changed_since(middle, {ada.id})
    assert not store.changed_since(store.generation, {ada.id, bob.id})


def test_an_entity_dropped_from_the_record_counts_as_changed_as_late_as_the_last_dropped(
        store, people, monkeypatch):
    monkeypatch.setattr(transaction, 'CHANGED_ENTITIES_MAX', 3)
    ada = people['ada']
    others = [store.add_entity('person', 'Person %d' % number) for number in range(5)]
    start = store.generation
    for other in others:
        add_fact(store, other, '%s note.' % other.canonical_name)
    # Kept: the last three; dropped: the first two, the later at start + 2.
    first, _, third = others[:3]
    assert not store.changed_since(start + 2, {first.id})
    assert store.changed_since(start + 1, {first.id})  # unknown, so counted as changed
    assert store.changed_since(start, {first.id})
    assert not store.changed_since(start + 3, {third.id})
    assert store.changed_since(start + 2, {third.id})
    # Never changed, but older than the last dropped change: counted as changed.
    assert not store.changed_since(start + 2, {ada.id})
    assert store.changed_since(start + 1, {ada.id})


def test_cached_answers_carry_the_current_time(cache_and_reader):
    cache, _, _ = cache_and_reader
    first = cache.recall('Ada Lovelace').text.split('\n')
    second = cache.recall('Ada Lovelace').text.split('\n')
    assert first[2] != second[2] and first[2].startswith('Current time: ')
    assert first[:2] + first[3:] == second[:2] + second[3:]


def test_a_kept_answer_is_served_without_reading(cache_and_reader):
    cache, reader, _ = cache_and_reader
    reader.close()
    # A kept answer needs no read; a query never asked must read, and cannot.
    assert cache.recall('Ada Lovelace').status == 'found'
    assert cache.recall('Never Asked').status == 'unavailable'


@pytest.mark.parametrize('write', [
    'remember', 'memory_add_linked', 'memory_add_elsewhere', 'retire', 'forget_memory',
    'forget_entity', 'alias_add', 'entity_add'])
def test_every_write_leaves_the_cache_answering_like_recall(store, people, cache_and_reader,
                                                            write):
    cache, reader, clocks = cache_and_reader
    ada, bob = people['ada'], people['bob']
    if write == 'remember':
        ottoline = store.add_entity('person', 'Ottoline Vexworth')
        assert_cache_answers_like_recall(cache, reader, clocks)
        result = rules.admit(store, FACT_CONTEXT, FACT, ROBOT_PROFILE)
        assert result.outcome == 'created'
        assert ottoline.id in {link.entity_id for link in store.get_memory(
            result.memory_id)[0].links}
    elif write == 'memory_add_linked':
        add_fact(store, bob, 'Bob met Ada.', also=(ada,))
    elif write == 'memory_add_elsewhere':
        add_fact(store, people['sam_one'], 'Sam One plays chess.')
    elif write == 'retire':
        store.retire_memory(store.newest_active_memories(ada.id, 1)[0][0].id, 'wrong')
    elif write == 'forget_memory':
        store.forget_memory(store.newest_active_memories(bob.id, 1)[0][0].id, apply=True)
    elif write == 'forget_entity':
        store.forget_entity(people['sam_two'].id, apply=True)
    elif write == 'alias_add':
        store.add_alias(bob.id, 'Countess')
    else:
        store.add_entity('person', 'Carol New')
    assert_cache_answers_like_recall(cache, reader, clocks)


def test_the_answer_changes_when_its_entity_gets_a_memory(store, people, cache_and_reader):
    cache, reader, _ = cache_and_reader
    before = cache.recall('Ada Lovelace')
    memory = add_fact(store, people['bob'], 'Bob met Ada.', also=(people['ada'],))
    after = cache.recall('Ada Lovelace')
    assert memory.id in [kept.id for kept in after.entities[0].memories]
    assert memory.id not in [kept.id for kept in before.entities[0].memories]


def test_the_cache_is_bounded_in_answers_and_memories(store, people):
    reader = store.open_reader()
    cache = recall_module.RecallCache(reader, store, capacity=2, clock=fixed_clock)
    for query in ('Ada Lovelace', 'Bob Brask', 'Sam', 'Ada Lovelace'):
        assert cache.recall(query) == recall_module.recall(reader, query, fixed_clock)
    assert len(cache) == 2
    # Each person has 3 memories: an answer weighs 1 + its memories ("Sam": 1 + 6).
    cache = recall_module.RecallCache(reader, store, memories=8, clock=fixed_clock)
    for query in ('Ada Lovelace', 'Bob Brask', 'Sam', 'Nobody Here'):
        assert cache.recall(query) == recall_module.recall(reader, query, fixed_clock)
    assert len(cache) == 2  # "Sam" and "Nobody Here": 7 + 1


class Retries:
    """A TurnProposalLog over a real store, with the number of admissions that ran."""

    def __init__(self, store, robot_profile=ROBOT_PROFILE):
        self.store = store
        self.robot_profile = robot_profile
        self.log = TurnProposalLog()
        self.admissions = 0

    def remember(self, context=FACT_CONTEXT, proposal=FACT):
        def admit():
            self.admissions += 1
            return rules.admit(self.store, context, proposal, self.robot_profile)
        return self.log.answer(context, proposal, admit)


@pytest.fixture
def ottoline(store):
    return store.add_entity('person', 'Ottoline Vexworth')


@pytest.mark.parametrize('change', ['insert', 'retire', 'forget', 'entity_add', 'alias_add',
                                    'robot_profile'])
def test_an_identical_retry_gets_the_first_answer_whatever_changed(store, ottoline, change):
    retries = Retries(store)
    created = retries.remember()
    assert created.outcome == 'created' and retries.admissions == 1
    if change == 'insert':
        # Other turns' inserts, to the same subject too.
        add_fact(store, ottoline, 'Ottoline rides a bicycle.')
    elif change == 'retire':
        store.retire_memory(created.memory_id, 'wrong')
    elif change == 'forget':
        store.forget_memory(created.memory_id, apply=True)
    elif change == 'entity_add':
        store.add_entity('person', 'Ottoline Vexworth')  # the subject is now ambiguous
    elif change == 'alias_add':
        other = store.add_entity('person', 'Otto Other')
        store.add_alias(other.id, 'Ottoline Vexworth')
    else:
        retries.robot_profile = 'Another Robot'
    memories = store.counts()['memories']
    # Admission now would refuse it (rule 19, an ambiguous subject) or, after a
    # forget, write it again; the retry is the lost reply's request, not a new one.
    assert retries.remember() == created
    assert retries.admissions == 1 and store.counts()['memories'] == memories
