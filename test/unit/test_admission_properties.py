# SPDX-License-Identifier: Apache-2.0
"""
Property: whatever the model proposes, a write happens only when it is grounded.

Requests mix grounded and ungrounded proposals over a small seeded store,
with random case, width and whitespace variants. Whenever the store changed,
the evidence, subject and value must have been said and the subject must
resolve to exactly one entity; a rejection never changes the store.
"""

import pathlib
import random
import shutil
import tempfile

from hypothesis import find, given, settings, strategies as st
from mira_memory.core.admission.normalize import locate, normalize_key
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.rules import admit
from mira_memory.core.store import MemoryStore
import pytest

PROFILE = 'Kestrel'
ENTITIES = (
    ('person', 'Ada Lovelace', ('Ada',)),
    ('person', 'Bob Stone', ('Sam',)),
    ('person', 'Carol Reed', ('Sam',)),
    ('robot', PROFILE, ()),
)
NAMES = ('Ada Lovelace', 'Ada', 'Bob Stone', 'Carol Reed', 'Sam', 'Kestrel', 'Zed Quist')
PRONOUNS = ('you', 'your', 'yours', 'yourself', 'I', 'me', 'my', 'mine', 'myself')
VALUES = ('green tea', 'black coffee', 'teal', 'tea', 'Bob Stone', 'Ada', 'quiet rooms')
FILLERS = ('likes', 'is', 'the', 'sister', 'of', 'and', 'really', 'steak', 'teapot', 'drinks')
SECOND_PERSON = frozenset(('you', 'your', 'yours', 'yourself'))
SPACES = (' ', '  ', '\u3000', '\u00a0', ' \u2003')


@pytest.fixture(scope='module')
def seeded_file(tmp_path_factory):
    """Seed one database file; every example gets a fresh copy of it."""
    path = tmp_path_factory.mktemp('seed') / 'memory.sqlite3'
    with MemoryStore.open(path) as store:
        for entity_type, name, aliases in ENTITIES:
            entity = store.add_entity(entity_type, name)
            for alias in aliases:
                store.add_alias(entity.id, alias)
    return path


def open_copy(seeded_file, directory):
    # Closing the seeding store checkpointed the WAL, so the file is complete.
    path = pathlib.Path(directory) / 'memory.sqlite3'
    shutil.copyfile(seeded_file, path)
    return MemoryStore.open(path)


@st.composite
def variant(draw, text):
    """Spell text differently without changing its key: case, width, whitespace."""
    # One drawn seed per text keeps generation fast; shrinking goes to seed 0.
    rng = random.Random(draw(st.integers(0, 2 ** 32 - 1)))
    chars = []
    for char in text:
        if char == ' ':
            chars.append(rng.choice(SPACES))
            continue
        style = rng.choice(('same', 'upper', 'lower', 'fullwidth'))
        if style == 'upper':
            char = char.upper()
        elif style == 'lower':
            char = char.lower()
        elif style == 'fullwidth' and '!' <= char <= '~':
            char = chr(ord(char) + 0xFEE0)
        chars.append(char)
    return ''.join(chars)


def words_of(phrases):
    return ' '.join(phrases).split(' ')


def sometimes(draw, one_in):
    # sampled_from spreads its choices; a bare integers(0, n) draw favours its bounds.
    return draw(st.sampled_from((False,) * (one_in - 1) + (True,)))


@st.composite
def requests(draw):
    """Draw (context, proposal): a said sentence and a proposal about it, often broken."""
    subject = draw(st.sampled_from(NAMES + PRONOUNS))
    value = draw(st.sampled_from(VALUES))
    middle = draw(st.lists(st.sampled_from(FILLERS), min_size=1, max_size=3))
    sentence = words_of([subject] + middle + [value])
    before = draw(st.lists(st.sampled_from(FILLERS + NAMES), max_size=3))
    after = draw(st.lists(st.sampled_from(FILLERS), max_size=2))
    utterance = draw(variant(' '.join(words_of(before + sentence + after))))
    if sometimes(draw, 20):
        utterance += '\nand more'
    evidence_words = sentence
    if sometimes(draw, 3):
        start = draw(st.integers(0, len(sentence) - 1))
        evidence_words = sentence[start:draw(st.integers(start + 1, len(sentence)))]
    if sometimes(draw, 5):
        evidence_words = draw(st.lists(st.sampled_from(FILLERS + VALUES), min_size=1,
                                       max_size=4))
    if sometimes(draw, 5):
        subject = draw(st.sampled_from(NAMES + PRONOUNS))
    if sometimes(draw, 5):
        value = draw(st.sampled_from(VALUES + FILLERS))
    kind = draw(st.sampled_from(('fact', 'relationship', 'preference', 'Fact')))
    if sometimes(draw, 10):
        kind = 'event'
    predicate = draw(st.sampled_from(('likes', 'Likes', 'LIKES', 'sister_of')))
    if sometimes(draw, 10):
        predicate = 'bad token'
    related_entity = related_role = None
    if kind == 'relationship' or sometimes(draw, 10):
        related_entity = draw(variant(value))
        related_role = draw(st.sampled_from(('sister', 'Sister')))
        if sometimes(draw, 5):
            related_entity = draw(st.sampled_from((None, '', 'Ada', 'you', 'Sam')))
        if sometimes(draw, 10):
            related_role = draw(st.sampled_from((None, '', 'bad role')))
    context = TurnContext('e1', draw(st.sampled_from(('t1', 't2', 't3'))), utterance)
    proposal = Proposal(
        kind=kind, subject=draw(variant(subject)), predicate=predicate,
        value=draw(variant(value)), related_entity=related_entity, related_role=related_role,
        evidence=draw(variant(' '.join(evidence_words))))
    return context, proposal


def only_match(store, name):
    matches = store.find_entities(name)
    assert len(matches) == 1
    return matches[0].id


def assert_grounded(store, context, proposal, memory_id):
    memory, payloads = store.get_memory(memory_id)
    assert locate(proposal.evidence, context.utterance) is not None
    assert locate(proposal.subject, proposal.evidence) is not None
    assert locate(proposal.value, proposal.evidence) is not None
    assert locate(memory.summary, context.utterance) is not None
    assert normalize_key(memory.summary) == normalize_key(proposal.evidence)
    assert [payload.text for payload in payloads] == [memory.summary]
    assert memory.source_kind == 'operator_statement'
    subject_name = proposal.subject
    if normalize_key(subject_name) in SECOND_PERSON:
        subject_name = PROFILE
    links = {(link.entity_id, link.role) for link in memory.links}
    assert (only_match(store, subject_name), 'subject') in links
    if memory.kind == 'relationship':
        assert locate(proposal.related_entity, proposal.evidence) is not None
        assert normalize_key(proposal.related_entity) == normalize_key(proposal.value)
        assert len(links) == 2
        assert only_match(store, proposal.related_entity) in {entity for entity, _ in links}
    else:
        assert len(links) == 1


def admit_and_check(store, context, proposal):
    before = store.counts()
    result = admit(store, context, proposal, PROFILE)
    after = store.counts()
    if result.status == 'rejected':
        assert after == before
    if after != before:
        assert (result.status, result.outcome) == ('applied', 'created')
        assert {key: after[key] - before[key] for key in after} == {
            'entities': 0, 'aliases': 0, 'memories': 1, 'active_memories': 1, 'links':
            len(store.get_memory(result.memory_id)[0].links), 'payloads': 1}
        assert_grounded(store, context, proposal, result.memory_id)
    else:
        assert result.outcome != 'created'
    return result


@settings(max_examples=200, deadline=None)
@given(st.lists(requests(), min_size=1, max_size=3))
def test_writes_happen_only_for_grounded_proposals(seeded_file, batch):
    with tempfile.TemporaryDirectory() as directory:
        store = open_copy(seeded_file, directory)
        try:
            for context, proposal in batch:
                admit_and_check(store, context, proposal)
        finally:
            store.close()


def test_the_generator_reaches_created_writes(seeded_file):
    # Guards the property above against passing vacuously with no write at all.
    def creates(request):
        with tempfile.TemporaryDirectory() as directory:
            store = open_copy(seeded_file, directory)
            try:
                return admit(store, *request, PROFILE).outcome == 'created'
            finally:
                store.close()

    context, proposal = find(
        requests(), creates, settings=settings(database=None, max_examples=2000))

    assert locate(proposal.evidence, context.utterance) is not None
