# SPDX-License-Identifier: Apache-2.0
"""The grounding verdict in the core: every stage together, on whole utterances."""

import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st
from mira_memory.core.admission import language, text, verdict
from mira_memory.core.admission.language import Language, LANGUAGE_DIRECTORY
from mira_memory.core.admission.text import tokenize
from mira_memory.core.admission.verdict import ground
import pytest


def english():
    with (LANGUAGE_DIRECTORY / 'en.toml').open('rb') as data:
        return tomllib.load(data)


def test_words_keep_apostrophes_and_hyphens_inside():
    assert [token.text for token in tokenize("Conan O'Brien's ex-wife, too.")] == [
        'Conan', "O'Brien's", 'ex-wife', ',', 'too', '.']


def test_a_typographic_apostrophe_has_the_plain_key():
    assert [token.key for token in tokenize('Doesn\u2019t')] == ["doesn't"]


def test_combining_marks_belong_to_their_word():
    assert [token.text for token in tokenize('ra\u0301ma likes tea')][0] == 'ra\u0301ma'


@settings(max_examples=2000)
@given(st.text(alphabet="ab9_ '-.,:/!?\t\x1c\x0b\x00Z1", max_size=16))
def test_ascii_text_splits_as_any_text_does(utterance):
    # tokenize() takes a regular expression for ASCII text: the same tokens.
    def fields(tokens):
        return [(token.text, token.key, token.start, token.end, token.is_word)
                for token in tokens]

    assert fields(tokenize(utterance)) == fields(text._tokenize(utterance))


@pytest.mark.parametrize('utterance', [
    'Dr. Ada Lovelace likes tea.', 'J. R. Stone likes tea.', 'Ada Lovelace is 1.85 m tall.',
    'Ada Lovelace writes to ada@example.org daily.'])
def test_these_full_stops_do_not_end_the_sentence(utterance):
    tokens = tokenize(utterance)

    assert len(text._sentences(tokens, language.language())) == 1


@pytest.mark.parametrize('utterance', [
    "Bob Stone's blood type is B.", 'Ada Lovelace likes \u00df.', 'Ada takes vitamin C..."'])
def test_a_single_letter_at_the_end_of_the_text_ends_its_sentence(utterance):
    tokens = tokenize(utterance)
    sentences = text._sentences(tokens, language.language())

    assert len(sentences) == 1
    assert tokens[sentences[0].end - 1].is_word


def test_every_shipped_language_file_loads():
    files = sorted(LANGUAGE_DIRECTORY.glob('*.toml'))

    assert [path.name for path in files] == [
        'de.toml', 'en.toml', 'es.toml', 'fr.toml', 'it.toml', 'nl.toml', 'pt.toml',
        'unclaimed.toml', 'unclaimed_stopwords.toml']
    assert language.language().negators >= {'not', 'never', 'no', 'nicht', 'jamais', 'niet'}


def test_a_misspelt_list_is_refused():
    with pytest.raises(ValueError, match='negatorz'):
        Language([{**english(), 'negatorz': ['nicht']}])


def test_another_language_is_data_only():
    # A further file's words join the rules: no code changes.
    english_only = Language([english()])
    invented = {'language': 'xx', 'trigger': [
        {'class': 'hedge', 'direction': 'both', 'reach': 'sentence', 'words': ['mebbe'],
         'example': 'Ada drinks mebbe tea.'},
        {'class': 'negation', 'direction': 'forward', 'words': ['nae'],
         'example': 'Ada drinks nae tea.'}]}
    merged = Language([english(), invented])
    said = ('Ada drinks mebbe tea.', 'Ada drinks mebbe tea', 'Ada', 'tea', 'drinks')

    assert ground(*said, lang=english_only).failure is None
    assert ground(*said, lang=merged).failure == 'hedged'
    assert ground('Ada drinks nae tea.', 'Ada drinks nae tea', 'Ada', 'tea', 'drinks',
                  lang=merged).failure == 'negation_not_carried'


@pytest.mark.parametrize('utterance,evidence,subject,value,predicate,failure', [
    # Portuguese "no" is "in the" in a Portuguese sentence, the negator elsewhere.
    ('Rui mora no Porto.', 'Rui mora no Porto', 'Rui', 'Porto', 'lives_in', None),
    ('Rui trabalha como médico no Porto.', 'Rui trabalha como médico no Porto', 'Rui', 'médico',
     'works_as', None),
    ('Ada has no car.', 'Ada has no car', 'Ada', 'car', 'has', 'negation_not_carried'),
    ('Ada eats no meat.', 'Ada eats no meat', 'Ada', 'meat', 'eats', 'negation_not_carried'),
    # English "may" is the month after "in" or next to a number, the modal elsewhere.
    ('Ada was born in May.', 'Ada was born in May', 'Ada', 'May', 'born_in', None),
    ('Ada may like tea.', 'Ada may like tea', 'Ada', 'tea', 'likes', 'modal'),
    # French "plus" and "personne" are no negators; "ne"/"n'" carry French negation.
    ('Pierre ne boit plus de café.', 'Pierre ne boit plus de café', 'Pierre', 'café', 'drinks',
     'negation_not_carried'),
    ("Pierre n'aime pas le thé.", "Pierre n'aime pas le thé", 'Pierre', 'le thé',
     'does_not_like', None),
    # French "né" (born) is not the Italian negator "né" in a French sentence.
    ('Pierre est né à Lyon.', 'Pierre est né à Lyon', 'Pierre', 'Lyon', 'born_in', None),
    # German "nie" is the negator (French "nie", denies, is not a governor).
    ('Jürgen raucht nie Zigarren.', 'Jürgen raucht nie Zigarren', 'Jürgen', 'Zigarren',
     'never_smokes', None),
    # English "plus" joins clauses; it negates nothing.
    ('Ada likes tea plus cake.', 'Ada likes tea plus cake', 'Ada', 'tea plus cake', 'likes',
     None),
    # Spanish "nada" is "swims" and "nothing": the negator reading wins (known limit).
    ('Rocío nada en el club.', 'Rocío nada en el club', 'Rocío', 'el club', 'swims_at',
     'negation_not_carried'),
])
def test_words_shared_by_two_languages_are_resolved_as_the_data_says(
        utterance, evidence, subject, value, predicate, failure):
    assert ground(utterance, evidence, subject, value, predicate).failure == failure


@pytest.mark.parametrize('utterance,evidence,subject,value,predicate,failure', [
    ('Ada likes tea.', 'Ada likes tea', 'Ada', 'tea', 'likes', None),
    ('Ada likes tea?', 'Ada likes tea', 'Ada', 'tea', 'likes', 'question'),
    ('Ada left. Bob likes tea.', 'Ada left. Bob likes tea', 'Ada', 'tea', 'likes',
     'not_one_sentence'),
    ('I doubt Ada likes tea.', 'I doubt Ada likes tea', 'Ada', 'tea', 'likes', 'denied'),
    ("It isn't so, Ada likes tea.", 'Ada likes tea', 'Ada', 'tea', 'likes', 'denied'),
    ('Ada likes tea cakes.', 'Ada likes tea', 'Ada', 'tea', 'likes', 'not_a_clause'),
    ('The friend of Ada likes tea.', 'The friend of Ada likes tea', 'Ada', 'tea', 'likes',
     'subject_not_first'),
    ("Ada's cat likes tea.", "Ada's cat likes tea", 'Ada', 'tea', 'likes', 'subject_possessor'),
    ("Ada's car is grey.", "Ada's car is grey", 'Ada', 'grey', 'car_colour', None),
    # An animal or a person possessed is its own party.
    ("Ada's cat is grey.", "Ada's cat is grey", 'Ada', 'grey', 'cat_colour', 'subject_possessor'),
    ('Ada-Lou likes tea.', 'Ada-Lou likes tea', 'Ada', 'tea', 'likes', 'subject_partial'),
    ('Ada likes tea.', 'Ada likes tea', 'Ada', 'Ada', 'likes', 'value_is_subject'),
    ('Ada likes the tea.', 'Ada likes the tea', 'Ada', 'the', 'likes', 'value_vacuous'),
    ('Ada is a fake nurse.', 'Ada is a fake nurse', 'Ada', 'nurse', 'job', 'value_partial'),
    ('Ada does not like tea.', 'Ada does not like tea', 'Ada', 'tea', 'likes',
     'negation_not_carried'),
    ('Ada likes tea.', 'Ada likes tea', 'Ada', 'tea', 'never_likes', 'negation_not_said'),
    ('Ada does not like tea.', 'Ada does not like tea', 'Ada', 'tea', 'does_not_like', None),
])
def test_each_rule_gives_its_failure(utterance, evidence, subject, value, predicate, failure):
    assert ground(utterance, evidence, subject, value, predicate).failure == failure


def test_every_failure_has_a_rule_family_and_a_short_fixed_sentence():
    for name, (family, sentence) in verdict.ERRORS.items():
        assert family in (verdict.CLAUSE, verdict.SUBJECT, verdict.VALUE,
                          verdict.POLARITY), name
        assert 0 < len(sentence) <= 200 and sentence.endswith('nothing was written.')


def test_candidates_for_the_store_are_the_clause_openings_before_the_value():
    verdict = ground('Ada is here and Bob Stone likes tea.',
                     'Ada is here and Bob Stone likes tea', 'Ada', 'tea', 'likes')

    assert verdict.failure is None
    assert 'Bob Stone' in verdict.other_subject_candidates
    assert not verdict.other_subject_found


def test_a_person_opening_the_value_clause_is_another_subject():
    verdict = ground('Ada is here and she likes tea.', 'Ada is here and she likes tea',
                     'Ada', 'tea', 'likes')

    assert verdict.other_subject_found


def test_a_value_after_many_clauses_is_refused_unchecked():
    evidence = 'Ada likes' + ', x' * 12 + ' tea'

    assert ground(evidence + '.', evidence, 'Ada', 'tea', 'likes').other_subject_found


def test_longer_readings_of_the_subject_go_to_the_store():
    verdict = ground("Ada Lovelace's dog likes tea.", "Ada Lovelace's dog likes tea", 'Ada',
                     'tea', 'likes')

    assert ('Ada Lovelace', True) in verdict.longer_subject_candidates


@pytest.mark.parametrize('utterance,evidence,addressees', [
    ('Ada, you like tea.', 'you like tea', ('Ada',)),
    ('You like tea, Ada Lovelace.', 'You like tea', ('Ada Lovelace',)),
    ('You like tea.', 'You like tea', ()),
])
def test_clauses_around_a_second_person_statement_may_name_its_addressee(
        utterance, evidence, addressees):
    verdict = ground(utterance, evidence, 'you', 'tea', 'likes')

    assert (verdict.failure, verdict.addressee_candidates) == (None, addressees)


@pytest.mark.parametrize('tail,failure', [
    (", I'm not sure.", 'denied'), (', or not.', 'denied'), (', no', 'negated_outside'),
    (', just kidding', 'retracted'), ('. Not really.', 'retracted'), (', not coffee.', None),
    (', so please make it strong.', None), (", don't give her coffee.", None)])
def test_what_follows_may_take_the_statement_back(tail, failure):
    assert ground('Ada likes tea' + tail, 'Ada likes tea', 'Ada', 'tea', 'likes').failure == (
        failure)


@pytest.mark.parametrize('utterance,subject', [
    ('Ada\u00adm likes tea.', 'Ada'), ('The you\u200dng cat likes tea.', 'you')])
def test_an_invisible_character_never_splits_a_word(utterance, subject):
    # Admission refuses such text before grounding runs (test_admission_text.py);
    # grounding on its own must not admit it either, whichever rule refuses it.
    evidence = utterance.rstrip('.')

    assert ground(utterance, evidence, subject, 'tea', 'likes').failure is not None
