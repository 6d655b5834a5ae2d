# SPDX-License-Identifier: Apache-2.0
"""
Each grounding stage alone: the language data, clauses, scopes, anchors.

The corpus (test_grounding_corpus.py) judges the rules on whole turns;
these tests pin what each stage of core/admission/ works out, so a change
to one stage shows where it went wrong.
"""

import tomllib

from mira_memory.core.admission import clauses, scope, sentence_language, text
from mira_memory.core.admission.language import Language, language, LANGUAGE_DIRECTORY
from mira_memory.core.admission.text import Claim
from mira_memory.core.admission.verdict import ground
import pytest


def claim_of(utterance, lang=None, subject='', value=''):
    lang = lang or language()
    return Claim(lang, text.analyse(utterance, lang), subject, value, 'likes', False, (('mira',),))


def structure_of(utterance, lang=None):
    claim = claim_of(utterance, lang)
    return claim, clauses.structure(claim.analysis, claim.analysis.sentences[0], claim.lang)


def words_at(claim, indices):
    return [claim.analysis.tokens[index].text for index in sorted(indices)]


def english():
    with (LANGUAGE_DIRECTORY / 'en.toml').open('rb') as data:
        return tomllib.load(data)


# --- the language data ---------------------------------------------------------

def test_every_trigger_record_has_a_class_direction_reach_and_an_example():
    for path in sorted(LANGUAGE_DIRECTORY.glob('*.toml')):
        table = tomllib.loads(path.read_text(encoding='utf-8'))
        for row in table.get('trigger', ()):
            assert row['example'] and row['class'], (path.name, row)
            assert row.get('direction', 'both') in ('forward', 'backward', 'both')


@pytest.mark.parametrize('row,message', [
    ({'class': 'hedgy', 'words': ['x'], 'example': 'x'}, 'class must be'),
    ({'class': 'hedge', 'words': ['x']}, 'one example'),
    ({'class': 'hedge', 'example': 'x'}, 'needs words'),
    ({'class': 'hedge', 'words': ['x'], 'example': 'x', 'direction': 'up'}, 'direction'),
    ({'class': 'hedge', 'words': ['x'], 'example': 'x', 'scope': 3}, 'unknown trigger fields'),
])
def test_a_malformed_trigger_record_is_refused(row, message):
    with pytest.raises(ValueError, match=message):
        Language([{**english(), 'trigger': [row]}])


def test_clause_words_count_in_their_own_language_only():
    lang = language()

    assert 'ma' in lang.clause_words('it').terminations
    assert 'ma' not in lang.clause_words('fr').terminations  # French "ma" is "my"
    assert 'ma' in lang.clause_words('').terminations


def test_words_of_unclaimed_languages_are_weighed_against_each_claimed_language():
    lang = language()

    assert {'jest', 'gillar', 'kanske', 'değil'} <= set(lang.unclaimed_languages)
    assert 'de' in lang.known_languages['nie'] and 'fr' in lang.known_languages['je']


# --- clauses -------------------------------------------------------------------

def test_fillers_and_a_word_group_said_twice_are_skipped():
    claim, found = structure_of('Ana is um Ana is the the nurse')

    assert words_at(claim, found.skipped) == ['Ana', 'is', 'um', 'the']


def test_a_number_said_twice_is_no_repetition():
    claim, found = structure_of('Bob is in room 12 12 now')

    assert found.skipped == frozenset()


@pytest.mark.parametrize('utterance,boundaries', [
    ("Hugo is lactose intolerant, so don't put milk in it", [(',', 'weak'), ('so', 'weak')]),
    ('Ada likes tea because she is British', [('because', 'strong')]),
    ('ada likes tea she drinks it hot', [('she', 'strong')]),
    ('marek is the first aider does he know', [('does', 'strong')]),
    ('Ada likes tea 😂 Bob likes coffee', [('😂', 'strong')]),
    ('Ada eats no meat, fish or eggs', [(',', 'weak'), ('or', 'weak')]),
    ('Ada likes tea con ella', []),
])
def test_clauses_start_at_punctuation_joiners_and_new_subjects(utterance, boundaries):
    claim, found = structure_of(utterance)

    assert [(claim.analysis.tokens[boundary.index].text, boundary.strength)
            for boundary in found.boundaries] == boundaries


@pytest.mark.parametrize('utterance,opens', [
    ('Ada eats no meat, fish or eggs', False),
    ("Hugo is lactose intolerant, so don't put milk in it", True),
    ('Ada likes tea, she drinks it hot', True),
    ('Ada likes tea, only green tea', True),
])
def test_a_weak_boundary_ends_a_clause_only_before_what_opens_one(utterance, opens):
    claim, found = structure_of(utterance)
    first = found.boundaries[0]

    assert clauses.effective(claim.lang, claim.analysis, found, first) is opens


@pytest.mark.parametrize('utterance,name,unclaimed', [
    ('Ada prawdopodobnie lubi herbatę', 'Ada', True),   # a letter no claimed language writes
    ('Kanske spelar Bob schack', 'Bob', True),           # an unclaimed language's word
    ('Marek jest ratownikiem', 'Marek', True),
    ('Ada likes green tea', 'Ada', False),
    ('Łukasz likes green tea', 'Łukasz', False),         # the name is the subject's
    ('Rui mora no Porto com a Ana', 'Rui', False),
])
def test_a_sentence_in_a_language_without_data_is_unclaimed(utterance, name, unclaimed):
    claim, found = structure_of(utterance)
    subject = next(token for token in claim.analysis.tokens if token.text == name)

    assert sentence_language.unclaimed(claim, found, [(subject.start, subject.end)]) is unclaimed


# --- scopes --------------------------------------------------------------------

def covered(utterance, trigger_text):
    claim, found = structure_of(utterance)
    occurrence = next(found_ for found_ in scope.occurrences(claim, found)
                      if claim.analysis.tokens[found_.start].text.lower() == trigger_text)
    indices = set()
    for begin, end in scope.scope(claim, found, occurrence):
        indices.update(range(begin, end))
    return occurrence.trigger.kind, ' '.join(
        token.text for index, token in enumerate(claim.analysis.tokens)
        if index in indices and token.is_word)


@pytest.mark.parametrize('utterance,trigger,kind,words', [
    # negation: forward, to the end of its clause; a list goes on after a comma
    ('Ines works the early shift and never the weekend', 'never', 'negation', 'the weekend'),
    ('Ada eats no meat, fish or eggs', 'no', 'negation', 'meat fish or eggs'),
    ("Hugo is lactose intolerant, so don't put milk in it", "don't", 'negation',
     'put milk in it'),
    # German "nicht" reaches both ways in its clause
    ('Paul mag Kaffee nicht', 'nicht', 'negation', 'Paul mag Kaffee'),
    # hedge and report: across clauses, up to a termination
    ('Ada likes tea, I think', 'think', 'hedge', 'Ada likes tea I'),
    ('Ada likes tea but I think Bob hates it', 'think', 'hedge', 'Bob hates it'),
    # a condition looks back only from the sentence's last clause
    ('Ada takes the bus if it rains', 'if', 'condition', 'Ada takes the bus it rains'),
    ('Marek is the first aider, if someone gets hurt, call him', 'if', 'condition',
     'someone gets hurt call him'),
    ('Marek is the first aider so if someone gets hurt call him', 'if', 'condition',
     'someone gets hurt call him'),
    # time words: their own clause, both ways
    ('Ada is a nurse who will retire next year', 'will', 'future', 'retire next year'),
    ('Lena is borrowing the van until Friday', 'until', 'time_scope',
     'Lena is borrowing the van'),
    # a retraction reaches back over what it corrects
    ('Kai drives a Volvo, no wait, a Saab', 'no', 'retraction', 'Kai drives a Volvo'),
])
def test_each_trigger_governs_its_scope(utterance, trigger, kind, words):
    assert covered(utterance, trigger) == (kind, words)


@pytest.mark.parametrize('utterance,trigger', [
    ('Ada is not only a nurse but also a midwife', 'not'),
    ('Ada never says no to cake', 'never'),
    ("Lena's passport is valid until 2031", 'valid'),
    ("Ada won't eat anything but rice", 'anything'),
])
def test_a_pseudo_trigger_hides_trigger_words_that_assert(utterance, trigger):
    assert covered(utterance, trigger)[0] == 'pseudo'


def test_anything_but_without_a_negation_before_it_negates():
    assert covered('Lars is anything but shy', 'anything') == ('negation', 'shy')


def test_a_trigger_counting_only_at_the_end_does_not_count_elsewhere():
    assert covered('ada speaks welsh no', 'no') == ('negation', 'ada speaks welsh')
    assert covered('Ada has no car', 'no') == ('negation', 'car')


def test_the_german_future_needs_a_closing_infinitive():
    claim, found = structure_of('Paul wird jeden Freitag abgeholt')

    assert [occurrence.trigger.kind for occurrence in scope.occurrences(claim, found)] == []
    assert covered('Paul wird nach Berlin ziehen', 'wird')[0] == 'future'


# --- the stages together -------------------------------------------------------

@pytest.mark.parametrize('utterance,evidence,subject,value,predicate,failure', [
    ('the myna bird says hi to every customer', 'the myna bird says hi to every customer',
     'myna bird', 'hi', 'says', None),
    ('Ada says she is vegan', 'Ada says she is vegan', 'Ada', 'vegan', 'diet', 'reported'),
    ('Ada is the only one who speaks Welsh', 'Ada is the only one who speaks Welsh', 'Ada',
     'Welsh', 'speaks', None),
    ('Bob lives near Ada, who rides horses', 'Bob lives near Ada, who rides horses', 'Bob',
     'horses', 'rides', 'value_in_other_clause'),
    ('Ada is vegan, she told me herself', 'Ada is vegan', 'Ada', 'vegan', 'diet', 'reported'),
    ('Ada is vegan, I told the kitchen', 'Ada is vegan', 'Ada', 'vegan', 'diet', None),
    ('The cat that Ada likes is grey', 'Ada likes is grey', 'Ada', 'is grey', 'x',
     'not_a_clause'),
    ('Remember that Ada likes tea', 'Ada likes tea', 'Ada', 'tea', 'likes', None),
    # A verb-final clause closes with a verb or a predicative adjective, not
    # with a word only a language without that order knows.
    ('Friedas Reisepass ist bis 2031 gültig', 'Friedas Reisepass ist bis 2031 gültig', 'Frieda',
     '2031', 'passport_valid_until', None),
    ('Ada Lovelace mag green tea cakes', 'Ada Lovelace mag green tea cakes', 'Ada Lovelace',
     'green tea', 'likes', 'value_partial'),
    ('Ada Lovelace mag sea charts', 'Ada Lovelace mag sea charts', 'Ada Lovelace', 'sea',
     'likes', 'value_partial'),
])
def test_the_stages_together(utterance, evidence, subject, value, predicate, failure):
    assert ground(utterance, evidence, subject, value, predicate).failure == failure


# --- worked examples, and cases the rules already decided ----------------------

@pytest.mark.parametrize('utterance,evidence,subject,value,predicate,failure', [
    ("Hugo is lactose intolerant, so don't put milk in his coffee", 'Hugo is lactose intolerant',
     'Hugo', 'lactose intolerant', 'condition', None),
    ('Ines works the early shift and never the weekend',
     'Ines works the early shift and never the weekend',
     'Ines', 'the early shift', 'works_shift', None),
    ('Ines works the early shift and never the weekend',
     'Ines works the early shift and never the weekend',
     'Ines', 'the weekend', 'works', 'value_set_aside'),
    ('Ines works the early shift and never the weekend',
     'Ines works the early shift and never the weekend',
     'Ines', 'the weekend', 'never_works', None),
    ("Paul only takes the stairs, he doesn't trust the lift", 'Paul only takes the stairs',
     'Paul', 'the stairs', 'takes', None),
    ('ok so uh marek is the first aider on this floor so if someone gets hurt call him '
     'not the front desk',
     'marek is the first aider on this floor',
     'marek', 'the first aider', 'role', None),
    ('Kai drives a Volvo, no wait, a Saab', 'Kai drives a Volvo, no wait, a Saab',
     'Kai', 'a Saab', 'drives', None),
    ('Kai drives a Volvo, no wait, a Saab', 'Kai drives a Volvo',
     'Kai', 'a Volvo', 'drives', 'retracted'),
    ('Zoe lives in Ghent now', 'Zoe lives in Ghent now', 'Zoe', 'Ghent', 'lives_in', None),
    ('Zoe is in Ghent right now', 'Zoe is in Ghent right now',
     'Zoe', 'Ghent', 'location', 'not_durable'),
    ("Lena's passport is valid until 2031", "Lena's passport is valid until 2031",
     'Lena', '2031', 'passport_valid_until', None),
    ('Lena is borrowing the van until Friday', 'Lena is borrowing the van until Friday',
     'Lena', 'the van', 'borrows', 'not_durable'),
    ('Ines starts in September', 'Ines starts in September',
     'Ines', 'September', 'starts', 'future'),
    ('Lotte moves to Lyon next month', 'Lotte moves to Lyon next month',
     'Lotte', 'Lyon', 'lives_in', 'future'),
    ('Paul wird jeden Freitag abgeholt', 'Paul wird jeden Freitag abgeholt',
     'Paul', 'jeden Freitag', 'pickup', None),
    ('Paul wird nach Berlin ziehen', 'Paul wird nach Berlin ziehen',
     'Paul', 'Berlin', 'moves', 'future'),
    ('Paul darf keine Nüsse essen', 'Paul darf keine Nüsse essen',
     'Paul', 'Nüsse', 'must_not_eat', None),
    ('Paul darf keine Nüsse essen', 'Paul darf keine Nüsse essen',
     'Paul', 'Nüsse', 'eats', 'negation_not_carried'),
    ('Bob says that Ada likes tea', 'Ada likes tea', 'Ada', 'tea', 'likes', 'reported'),
    ('Ada likes tea, or so she keeps telling us', 'Ada likes tea',
     'Ada', 'tea', 'likes', 'reported'),
    ('Ada is not only a nurse but also a midwife', 'Ada is not only a nurse but also a midwife',
     'Ada', 'a midwife', 'job', None),
    ('Ada never says no to cake', 'Ada never says no to cake', 'Ada', 'cake', 'likes', None),
    ("Ada won't eat anything but rice", "Ada won't eat anything but rice",
     'Ada', 'rice', 'eats', None),
    ('Ada, the the nurse, likes tea', 'Ada, the the nurse, likes tea',
     'Ada', 'tea', 'likes', None),
    ('marek he is the first aider', 'marek he is the first aider',
     'marek', 'the first aider', 'role', None),
    ('Ana is um Ana is a nurse', 'Ana is a nurse', 'Ana', 'a nurse', 'job', None),
    ("Ada's landlord is a baker", "Ada's landlord is a baker",
     'Ada', 'a baker', 'job', 'subject_possessor'),
    ("Ada's favourite tea is oolong", "Ada's favourite tea is oolong",
     'Ada', 'oolong', 'favourite_tea', None),
    ("Ada's locker is number 9", "Ada's locker is number 9", 'Ada', 'number 9', 'locker', None),
    ('Ada prawdopodobnie lubi herbatę', 'Ada prawdopodobnie lubi herbatę',
     'Ada', 'herbatę', 'likes', 'unclaimed_language'),
    ('Kanske spelar Bob schack', 'Kanske spelar Bob schack',
     'Bob', 'schack', 'plays', 'unclaimed_language'),
    ('Hugo is lactose intolerant lol', 'Hugo is lactose intolerant',
     'Hugo', 'lactose intolerant', 'c2', None),
    ('Hugo is lactose intolerant 😂', 'Hugo is lactose intolerant',
     'Hugo', 'lactose intolerant', 'c3', None),
    ('I know for a fact that Hugo is lactose intolerant', 'Hugo is lactose intolerant',
     'Hugo', 'lactose intolerant', 'c4', None),
    ('Hugo is lactose intolerant, bless him', 'Hugo is lactose intolerant',
     'Hugo', 'lactose intolerant', 'c5', None),
    ('Hugo, our sous chef, is lactose intolerant', 'Hugo, our sous chef, is lactose intolerant',
     'Hugo', 'lactose intolerant', 'c6', None),
    ('Hugo is lactose intolerant because his mum told me', 'Hugo is lactose intolerant',
     'Hugo', 'lactose intolerant', 'c7', None),
    ('Ada is forty two', 'Ada is forty two', 'Ada', 'forty two', 'age', None),
    ('Ada likes tea, right?', 'Ada likes tea', 'Ada', 'tea', 'likes', 'question'),
    ('Ada likes tea said no one ever', 'Ada likes tea', 'Ada', 'tea', 'likes', 'sarcastic'),
    ('Ada loves tea, yeah right', 'Ada loves tea', 'Ada', 'tea', 'loves', 'sarcastic'),
    ('Ada likes tea more than coffee', 'Ada likes tea more than coffee',
     'Ada', 'coffee', 'likes', 'value_set_aside'),
    ('Ada likes tea more than coffee', 'Ada likes tea more than coffee',
     'Ada', 'tea', 'likes', None),
    ('Ada eats everything but fish', 'Ada eats everything but fish',
     'Ada', 'fish', 'eats', 'value_set_aside'),
    ('If it rains Ada takes the bus', 'Ada takes the bus',
     'Ada', 'the bus', 'takes', 'conditional'),
    ('Ada takes the bus if it rains', 'Ada takes the bus',
     'Ada', 'the bus', 'takes', 'conditional'),
    ('Marek is the first aider, if someone gets hurt, call him', 'Marek is the first aider',
     'Marek', 'the first aider', 'role', None),
    ('Ada used to live in Rome', 'Ada used to live in Rome',
     'Ada', 'Rome', 'lives_in', 'past_ended'),
])
def test_the_issue_examples(utterance, evidence, subject, value, predicate, failure):
    assert ground(utterance, evidence, subject, value, predicate).failure == failure
