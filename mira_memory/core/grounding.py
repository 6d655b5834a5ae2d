# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Grounding rules: is the evidence a plain statement, by the operator, about the subject.

The literal admission rules (admission.py) only check that the evidence,
subject and value were said. These rules check that what was said is what
would be stored:

- clause: the evidence lies inside one sentence, that sentence is not a
  question, the evidence starts at a sentence or clause start (or right after
  an allowed lead-in such as "remember that") and ends at a sentence or
  clause end, and no word of the sentence makes it conditional, doubted,
  denied, reported or hedged, or negates it from outside the evidence;
- subject: the subject reference opens the evidence clause (only lead-ins,
  openers, articles and titles may come before it) and is not merely the
  possessor of the clause subject ("Ada's brother likes tea");
- value: a complete phrase of the evidence that carries meaning: a letter or
  digit, not only function words, not the predicate word itself, not the
  subject's own words, not cut out of a longer word or phrase ("tea" of
  "tea cakes"), not after a privative modifier ("former lawyer");
- polarity: negated evidence needs a predicate that carries the negation
  (does_not_like), and a negating predicate needs negated evidence.

The words behind these rules (lead-ins, governors, negators, function
words...) are data: one TOML file per language in language/, all of them
loaded and merged, so a language is added without code. This module needs
no store: the store-dependent checks, that no other subject (a person
reference or a known entity name) opens a clause between the subject and the
value and that the subject is not the start of another entity's longer name,
are left to admission, which asks the store about the candidate names.

This is a conservative reading, not a parser: when the rules cannot tell
that the operator plainly stated the proposal, they reject it.
"""

import dataclasses
from dataclasses import dataclass
import functools
import itertools
import pathlib
import tomllib
from typing import Optional, Tuple
import unicodedata

from mira_memory.core.normalize import display_form, locate, NormalizationError, normalize_key

LANGUAGE_DIRECTORY = pathlib.Path(__file__).resolve().parent / 'language'

# Failures: the rule family decides the reason (admission maps it); the name
# picks the fixed error sentence.
CLAUSE = 'clause'
SUBJECT = 'subject'
VALUE = 'value'
POLARITY = 'polarity'

ERRORS = {
    'not_one_sentence': (
        CLAUSE, 'The evidence is not inside one sentence of the utterance; nothing was written.'),
    'question': (
        CLAUSE, 'The evidence is part of a question, not a statement; nothing was written.'),
    'not_a_clause': (
        CLAUSE, 'The evidence is not one complete clause: it must start and end at a sentence '
                'or clause boundary (after an allowed lead-in); nothing was written.'),
    'governed': (
        CLAUSE, 'The sentence is conditional, doubted, denied, reported or hedged, so it is not '
                'a plain statement; nothing was written.'),
    'negated_outside': (
        CLAUSE, 'The evidence is governed by a negation outside it; nothing was written.'),
    'subject_not_first': (
        SUBJECT, 'The subject does not open the evidence clause: only a lead-in, article or '
                 'title may come before it; nothing was written.'),
    'subject_possessor': (
        SUBJECT, 'The subject is only the possessor of what the clause is about; nothing was '
                 'written.'),
    'subject_partial': (
        SUBJECT, 'The subject is part of a longer word of the evidence; nothing was written.'),
    'value_vacuous': (
        VALUE, 'The value carries no meaning of its own (no letter or digit, only function '
               'words, or the predicate itself); nothing was written.'),
    'value_is_subject': (
        VALUE, "The value is the subject's own words in the evidence; nothing was written."),
    'value_partial': (
        VALUE, 'The value is not a complete phrase of the evidence: it cuts a word, a '
               'complement or a modifier off; nothing was written.'),
    'negation_not_carried': (
        POLARITY, 'The evidence is negated but the predicate does not carry the negation (for '
                  'example does_not_like); nothing was written.'),
    'negation_not_said': (
        POLARITY, 'The predicate is negated but the evidence is not; nothing was written.'),
}

# Sentence ends and clause boundaries. Quote marks are transparent: they
# neither end nor join anything.
_TERMINATORS = frozenset('.!?\u2026\u3002\uff01\uff1f\u203c\u2047\u2048\u2049\u061f')
_QUESTION_MARKS = frozenset('?\uff1f\u2047\u2048\u2049\u061f')
_BOUNDARIES = frozenset(',;:()[]{}\u2014\u2013-\u3001\uff0c\uff1b\uff1a/')
_QUOTES = frozenset('"\'\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e\u201a\u2039\u203a`')
_WORD_CATEGORIES = frozenset(('Mn', 'Mc', 'Me', 'Cf'))
# Inside a word these join its parts ("O'Brien", "doesn't", "tea-cakes").
_JOINERS = frozenset("'\u2019-\u2010\u2011")
_APOSTROPHES = str.maketrans({'\u2019': "'", '\u2018': "'", '\u2010': '-', '\u2011': '-'})
# A subject, value or clause can leave at most this many words between a
# possessor and its copula ("your favourite drink is").
_POSSESSED_MAX_WORDS = 3
# Names longer than this many words are not looked for between subject and value.
_NAME_MAX_WORDS = 4
# Bounds that keep one request's cost linear in its length: the evidence
# occurrences tried, and the clause openings between subject and value that
# are checked (beyond it the value's clause is unclear, so it is refused).
_OCCURRENCES_MAX = 4
_CLAUSES_CHECKED_MAX = 8


@dataclass(frozen=True)
class Token:
    """One word or punctuation mark of the display text, with its character span."""

    text: str
    key: str
    start: int
    end: int
    is_word: bool


@dataclass(frozen=True)
class Grounding:
    """The verdict: failure is None when every rule holds."""

    failure: Optional[str]
    # For admission's store check (rule "no other subject"): a person
    # reference (or more clauses than are checked) opens a clause between the
    # subject and the value, or these word sequences do and would be another
    # subject if they name an entity.
    other_subject_found: bool = False
    other_subject_candidates: Tuple[str, ...] = ()
    # The subject followed by the next words, as (name, only a possessor): if
    # a name is another entity's, the subject is only part of that name ("Ada"
    # in "Ada Lovelace ..."); if it is the subject's own name said as a mere
    # possessor ("Ada" in "Ada Lovelace's brother likes tea"), the rule of
    # possessors applies to it.
    longer_subject_candidates: Tuple[Tuple[str, bool], ...] = ()
    # For a second-person subject: the clauses said right before and after
    # the evidence. If one is another entity's name, it is the addressee
    # ("Ada, you like tea.") and "you" is not the robot.
    addressee_candidates: Tuple[str, ...] = ()

    @property
    def rule(self):
        """Return the rule family of the failure (CLAUSE, SUBJECT, VALUE, POLARITY)."""
        return ERRORS[self.failure][0] if self.failure else None

    @property
    def error(self):
        """Return the fixed error sentence of the failure."""
        return ERRORS[self.failure][1] if self.failure else ''


def _is_word_char(char):
    # Marks belong to their letter; an invisible format character (soft
    # hyphen, joiners) is read as joining two words into one, so "Ada\u00adm"
    # never yields the name "Ada". (The text layer refuses such characters;
    # this keeps the grammar conservative should one get through.)
    return char.isalnum() or char == '_' or unicodedata.category(char) in _WORD_CATEGORIES


def _key(text):
    return text.casefold().translate(_APOSTROPHES)


def tokenize(text):
    """Split display text into words and punctuation marks (spaces dropped)."""
    tokens = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char.isspace():
            index += 1
        elif _is_word_char(char):
            start = index
            index += 1
            while index < length:
                if _is_word_char(text[index]):
                    index += 1
                elif (text[index] in _JOINERS and index + 1 < length
                      and _is_word_char(text[index + 1])):
                    index += 2
                else:
                    break
            word = text[start:index]
            tokens.append(Token(word, _key(word), start, index, True))
        else:
            tokens.append(Token(char, _key(char), index, index + 1, False))
            index += 1
    return tokens


LANGUAGE_KEYS = frozenset((
    'language', 'lead_ins', 'openers', 'clause_joiners', 'subject_prefixes', 'abbreviations',
    'question_openers', 'question_tags', 'governors', 'governing_phrases', 'negators',
    'negator_suffixes', 'predicate_negators',
    'conjunctions', 'first_person', 'second_person', 'third_person', 'robot_references',
    'copulas', 'possessive_suffixes', 'possessive_subjects', 'privative_modifiers',
    'function_words'))


class Language:
    """The merged word lists of every language file (see language/en.toml)."""

    def __init__(self, tables):
        for table in tables:
            unknown = set(table) - LANGUAGE_KEYS
            if unknown:
                # A misspelt list would silently weaken a rule.
                raise ValueError(f'unknown grounding language keys: {sorted(unknown)}')

        def words(name):
            return frozenset(_key(word) for table in tables for word in table.get(name, ()))

        def phrases(name):
            # Indexed by their first word: lead-ins are tried at every clause start.
            found = {}
            for table in tables:
                for phrase in table.get(name, ()):
                    keys = tuple(token.key for token in tokenize(phrase))
                    found.setdefault(keys[0], set()).add(keys)
            return {first: tuple(sorted(keys)) for first, keys in found.items()}

        self.lead_ins = phrases('lead_ins')
        self.openers = words('openers')
        self.subject_prefixes = words('subject_prefixes')
        self.abbreviations = words('abbreviations')
        self.question_openers = words('question_openers')
        self.question_tags = words('question_tags')
        self.governors = words('governors')
        self.governing_phrases = phrases('governing_phrases')
        self.negators = words('negators')
        self.negator_suffixes = tuple(sorted(words('negator_suffixes')))
        self.predicate_negators = words('predicate_negators')
        self.clause_joiners = words('clause_joiners')
        self.conjunctions = words('conjunctions')
        self.speakers = words('first_person') | words('second_person')
        self.persons = self.speakers | words('third_person')
        self.robot_references = words('robot_references')
        self.copulas = words('copulas')
        self.possessive_suffixes = tuple(sorted(words('possessive_suffixes'), key=len,
                                                reverse=True))
        self.possessive_subjects = words('possessive_subjects')
        self.privative_modifiers = words('privative_modifiers')
        self.function_words = words('function_words')
        # Words that continue a noun phrase: a value cannot end right before them.
        self.value_continuers = frozenset(('of', 'or', 'nor', "'s"))

    def is_negator(self, key):
        return key in self.negators or key.endswith(self.negator_suffixes)


@functools.lru_cache(maxsize=1)
def language():
    """Return the merged language data (every language/*.toml, loaded once)."""
    tables = []
    for path in sorted(LANGUAGE_DIRECTORY.glob('*.toml')):
        with path.open('rb') as data:
            tables.append(tomllib.load(data))
    if not tables:
        raise RuntimeError(f'no grounding language data in {LANGUAGE_DIRECTORY}')
    return Language(tables)


@dataclass(frozen=True)
class _Sentence:
    start: int          # first token index
    end: int            # one past the last content token (terminators excluded)
    question: bool


def _sentences(tokens, lang):
    """Split tokens into sentences; a full stop after an abbreviation or initial is kept."""
    sentences = []
    start = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.is_word or token.text not in _TERMINATORS or _keeps_sentence(tokens, index, lang):
            index += 1
            continue
        end = index
        question = False
        while index < len(tokens) and (
                tokens[index].text in _TERMINATORS or tokens[index].text in _QUOTES):
            question = question or tokens[index].text in _QUESTION_MARKS
            index += 1
        sentences.append(_Sentence(start, end, question))
        start = index
    if start < len(tokens):
        sentences.append(_Sentence(start, len(tokens), False))
    return sentences


def _keeps_sentence(tokens, index, lang):
    """Return True for a full stop that does not end a sentence (Dr. / J. R. / 3.5 / a.org)."""
    if tokens[index].text != '.' or index == 0:
        return False
    before = tokens[index - 1]
    if not before.is_word or before.end != tokens[index].start:
        return False
    if before.key in lang.abbreviations:
        return True
    if len(before.text) == 1 and before.text.isalpha():
        # An initial ("J. R. Stone") has more of the text after it; a single
        # letter whose full stop ends the text ends its sentence ("... is B.").
        return not _ends_text(tokens, index + 1)
    # A full stop inside a word-like run (3.5, example.org) has no space after it.
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return after is not None and after.is_word and after.start == tokens[index].end


def _ends_text(tokens, index):
    """Return True when only terminators and quotes are left from index on."""
    while index < len(tokens) and not tokens[index].is_word and (
            tokens[index].text in _TERMINATORS or tokens[index].text in _QUOTES):
        index += 1
    return index == len(tokens)


def _skip_lead(tokens, positions, end, lang, *, prefixes=False, also=frozenset()):
    """
    Return every position reachable from the given clause starts by skipping lead-ins and openers.

    One shared visited set keeps this linear in the sentence, however many
    clause starts and openers ("and so, and so, ...") it has.
    """
    seen = set(positions)
    frontier = list(seen)
    while frontier:
        here = frontier.pop()
        steps = []
        if here < end and tokens[here].is_word:
            key = tokens[here].key
            for phrase in lang.lead_ins.get(key, ()):
                stop = here + len(phrase)
                if stop <= end and tuple(token.key for token in tokens[here:stop]) == phrase:
                    steps.append(stop)
            if key in lang.openers or key in also or (prefixes and key in lang.subject_prefixes):
                steps.append(here + 1)
        if prefixes and here < end and tokens[here].text == '.' and here > 0 and (
                tokens[here - 1].key in lang.subject_prefixes):
            steps.append(here + 1)  # "Dr." : the title's own full stop
        for step in steps:
            while step < end and not tokens[step].is_word and tokens[step].text in ',:':
                step += 1
            if step not in seen:
                seen.add(step)
                frontier.append(step)
    return seen


def _token_range(tokens, start, end):
    """Return (first, stop) token indices covering chars [start, end), or None if a word is cut."""
    first = stop = None
    for index, token in enumerate(tokens):
        if token.end <= start:
            continue
        if token.start >= end:
            break
        if token.start < start or token.end > end:
            return None
        if first is None:
            first = index
        stop = index + 1
    if first is None:
        return None
    return first, stop


def _occurrences(needle_text, haystack, offset=0):
    """Yield char offsets of needle_text in haystack at word boundaries (locate's notion)."""
    index = haystack.find(needle_text)
    while index != -1:
        stop = index + len(needle_text)
        clean_start = index == 0 or not (
            _is_word_char(haystack[index - 1]) and _is_word_char(haystack[index]))
        clean_end = stop == len(haystack) or not (
            _is_word_char(haystack[stop - 1]) and _is_word_char(haystack[stop]))
        if clean_start and clean_end:
            yield offset + index
        index = haystack.find(needle_text, index + 1)


def _span_text(needle, haystack):
    try:
        return locate(needle, haystack)
    except NormalizationError:
        return None


def ground(utterance, evidence, subject, value, predicate, *, relationship=False, lang=None):
    """
    Check the grounding rules for an evidence that the literal rules already found.

    Every whole-word occurrence of the evidence in the utterance is tried;
    the proposal is grounded when one occurrence satisfies every rule. When
    none does, the failure of the first occurrence is returned. Only the
    first few occurrences are tried, so a long repetitive utterance stays
    cheap; a statement repeated more often than that is refused. lang is the
    merged language data (default: every shipped language file).
    """
    lang = lang or language()
    try:
        display = display_form(utterance)
    except NormalizationError:
        return Grounding('not_a_clause')
    span = _span_text(evidence, display)
    if span is None:
        return Grounding('not_a_clause')
    tokens = tokenize(display)
    sentences = _sentences(tokens, lang)
    first_failure = None
    for start in itertools.islice(_occurrences(span, display), _OCCURRENCES_MAX):
        verdict = _ground_occurrence(
            lang, display, tokens, sentences, start, start + len(span), subject, value,
            predicate, relationship)
        if verdict.failure is None:
            return verdict
        first_failure = first_failure or verdict
    return first_failure or Grounding('not_a_clause')


def _ground_occurrence(lang, display, tokens, sentences, start, end, subject, value,
                       predicate, relationship):
    evidence_range = _token_range(tokens, start, end)
    if evidence_range is None:
        return Grounding('not_a_clause')
    first, stop = evidence_range
    # The evidence may include its own sentence's terminator and closing quotes.
    while stop > first and not tokens[stop - 1].is_word and (
            tokens[stop - 1].text in _TERMINATORS or tokens[stop - 1].text in _QUOTES):
        stop -= 1
    while first < stop and tokens[first].text in _QUOTES:
        first += 1
    sentence = next((s for s in sentences if s.start <= first < max(s.end, s.start + 1)), None)
    if sentence is None or stop > sentence.end or first >= stop:
        return Grounding('not_one_sentence')

    # Spans the scans below must not read as grammar: the subject's name, and
    # a relationship's value (it names the related entity).
    evidence_text = display[tokens[first].start:tokens[stop - 1].end]
    evidence_offset = tokens[first].start
    subject_span = _find_span(subject, evidence_text, evidence_offset)
    value_spans = list(itertools.islice(
        _find_spans(value, evidence_text, evidence_offset), _OCCURRENCES_MAX))
    names = [subject_span] if subject_span else []
    if relationship:
        names.extend(value_spans)

    def in_names(token):
        return any(span[0] <= token.start and token.end <= span[1] for span in names)

    failure = _clause_failure(
        lang, tokens, sentences, sentence, first, stop, in_names, subject_span)
    if failure:
        return Grounding(failure)
    if subject_span is None:
        return Grounding('subject_partial')
    subject_tokens = _cover(lang, tokens, *subject_span)
    if subject_tokens is None:
        return Grounding('subject_partial')
    subject_first, subject_stop, possessive = subject_tokens
    failure = _subject_failure(
        lang, tokens, sentence, first, subject_first, subject_stop, possessive,
        normalize_key(subject))
    if failure:
        return Grounding(failure)

    first_failure = None
    for value_span in value_spans or [None]:
        verdict = _value_and_polarity(
            lang, tokens, first, stop, subject, subject_span, subject_first, subject_stop,
            possessive, value_span, value, predicate, relationship, in_names)
        if verdict.failure is None:
            return dataclasses.replace(verdict, addressee_candidates=_addressees(
                lang, tokens, sentence, first, stop, normalize_key(subject)))
        first_failure = first_failure or verdict
    return first_failure


def _addressees(lang, tokens, sentence, first, stop, subject_key):
    """Return the short clauses around the evidence that may name whom "you" addresses."""
    if subject_key not in lang.robot_references:
        return ()
    found = []
    for words in (_segment_before(tokens, first, sentence.start),
                  _segment_after(tokens, stop, sentence.end)):
        if 0 < len(words) <= _NAME_MAX_WORDS:
            found.append(' '.join(word.text for word in words))
    return tuple(found)


def _find_span(needle, evidence_text, offset):
    return next(iter(_find_spans(needle, evidence_text, offset)), None)


def _find_spans(needle, evidence_text, offset):
    text = _span_text(needle, evidence_text)
    if text is None:
        return
    for start in _occurrences(text, evidence_text, offset):
        yield start, start + len(text)


def _cover(lang, tokens, start, end):
    """
    Return (first, stop, possessive) token indices for a name span.

    A name may end inside a word only before a possessive ending ("Ada's").
    Returns None when the span cuts a word any other way.
    """
    first = stop = None
    possessive = False
    for index, token in enumerate(tokens):
        if token.end <= start:
            continue
        if token.start >= end:
            break
        if token.start < start:
            return None
        if token.end > end:
            rest = _key(tokens[index].text[end - token.start:])
            if rest not in lang.possessive_suffixes:
                return None
            possessive = True
        if first is None:
            first = index
        stop = index + 1
    if first is None:
        return None
    return first, stop, possessive


def _clause_failure(lang, tokens, sentences, sentence, first, stop, in_names, subject_span):
    if sentence.question:
        return 'question'
    lead = _skip_lead(tokens, (sentence.start,), sentence.end, lang)
    opener = max(lead)
    opening = tokens[opener] if opener < sentence.end else None
    if opening is not None and opening.key in lang.question_openers and not (
            subject_span and subject_span[0] <= opening.start < subject_span[1]):
        return 'question'
    starts = _skip_lead(tokens, [sentence.start] + [
        index + 1 for index in range(sentence.start, sentence.end)
        if (not tokens[index].is_word and tokens[index].text in _BOUNDARIES)
        or (tokens[index].is_word and tokens[index].key in lang.clause_joiners)],
        sentence.end, lang)
    # Quote marks are transparent at both ends: 'Remember: "Ada likes tea".'
    opening_quote = first
    while opening_quote > sentence.start and tokens[opening_quote - 1].text in _QUOTES:
        opening_quote -= 1
    if first not in starts and opening_quote not in starts:
        return 'not_a_clause'
    closing = stop
    while closing < sentence.end and tokens[closing].text in _QUOTES:
        closing += 1
    if closing != sentence.end and not (
            not tokens[closing].is_word and tokens[closing].text in _BOUNDARIES):
        return 'not_a_clause'
    # The lead-ins at the sentence start are the operator talking to the robot.
    scanned = [token for token in tokens[opener:sentence.end]
               if token.is_word and not in_names(token)]
    if any(token.key in lang.governors for token in scanned) or _has_phrase(
            lang.governing_phrases, [token.key for token in scanned]):
        return 'governed'
    before = [token for token in scanned if token.end <= tokens[first].start]
    if any(lang.is_negator(token.key) for token in before):
        return 'negated_outside'
    # ", or not" / ", not really" / ", I'm not sure" after the evidence takes it back.
    if _takes_back(lang, [token.key for token in _segment_after(tokens, stop, sentence.end)]):
        return 'negated_outside'
    # So does a next sentence of nothing else: "Ada Lovelace likes tea. Not really."
    # So does a next question of nothing but function words: "Or does she?"
    following = next((s for s in sentences if s.start >= sentence.end), None)
    if following is not None:
        keys = [token.key for token in tokens[following.start:following.end] if token.is_word]
        if _takes_back(lang, keys) or (following.question and all(
                key in lang.function_words or key in lang.persons or key in lang.question_tags
                for key in keys)):
            return 'negated_outside'
    return None


def _has_phrase(phrases, keys):
    """Return True when one of phrases (indexed by first word) occurs in keys."""
    for index, key in enumerate(keys):
        for phrase in phrases.get(key, ()):
            if tuple(keys[index:index + len(phrase)]) == phrase:
                return True
    return False


def _takes_back(lang, keys):
    """
    Return True for words that negate or doubt what came before.

    "or not", "not really", "I doubt it": nothing but negators, doubts and
    function words; or a negator said of the speaker or listener: "I'm not
    sure", "you don't". A negated clause of its own ("not coffee") is not.
    """
    if not any(lang.is_negator(key) or key in lang.governors for key in keys):
        return False
    return all(key in lang.function_words or lang.is_negator(key) or key in lang.governors
               for key in keys) or (any(lang.is_negator(key) for key in keys)
                                    and any(key in lang.speakers for key in keys))


def _segment_after(tokens, stop, end):
    """Return the words of the clause right after index stop (up to the next boundary)."""
    index = stop
    while index < end and not tokens[index].is_word:
        index += 1
    words = []
    while index < end and (tokens[index].is_word or tokens[index].text not in _BOUNDARIES):
        if tokens[index].is_word:
            words.append(tokens[index])
        index += 1
    return words


def _segment_before(tokens, first, start):
    """Return the words of the clause right before index first, when a boundary separates them."""
    index = first - 1
    while index >= start and tokens[index].text in _QUOTES:
        index -= 1
    if index < start or tokens[index].is_word or tokens[index].text not in _BOUNDARIES:
        return []
    words = []
    index -= 1
    while index >= start and (tokens[index].is_word or tokens[index].text not in _BOUNDARIES):
        if tokens[index].is_word:
            words.append(tokens[index])
        index -= 1
    return words[::-1]


def _subject_failure(lang, tokens, sentence, first, subject_first, subject_stop,
                     possessive, subject_key):
    # "You yourself like quiet rooms": the robot may be named twice.
    same = lang.robot_references if subject_key in lang.robot_references else frozenset()
    allowed = _skip_lead(tokens, (first,), sentence.end, lang, prefixes=True, also=same)
    if subject_first not in allowed:
        return 'subject_not_first'
    if subject_key in lang.possessive_subjects:
        possessive = True
    if not possessive or _describes_possessor(lang, tokens, subject_stop, sentence.end):
        return None
    return 'subject_possessor'


def _describes_possessor(lang, tokens, after, end):
    """Return True for "<possessor>'s <at most 3 words> <copula> ...", starting at after."""
    for index in range(after, min(after + _POSSESSED_MAX_WORDS + 1, end)):
        token = tokens[index]
        # "Your friend's favourite colour is": the colour is the friend's.
        if not token.is_word or token.key.endswith(lang.possessive_suffixes):
            return False
        if token.key in lang.copulas and index > after:
            return True
    return False


def _value_and_polarity(lang, tokens, first, stop, subject, subject_span, subject_first,
                        subject_stop, possessive, value_span, value, predicate, relationship,
                        in_names):
    if value_span is None:
        return Grounding('value_partial')
    value_key = normalize_key(value)
    value_words = [token.key for token in tokenize(value_key) if token.is_word]
    if not any(char.isalnum() for char in value_key) or not value_words:
        return Grounding('value_vacuous')
    # A relationship's value names an entity, which resolution checks: "The
    # Who" is a name, not two function words.
    if not relationship and all(
            word in lang.function_words or lang.is_negator(word) for word in value_words):
        return Grounding('value_vacuous')
    subject_key = normalize_key(subject)
    if '_'.join(value_words) == predicate:
        return Grounding('value_vacuous')
    if value_span[0] < subject_span[1] and subject_span[0] < value_span[1]:
        return Grounding('value_is_subject')
    covered = _cover(lang, tokens, *value_span)
    if covered is None:
        return Grounding('value_partial')
    value_first, value_stop, value_possessive = covered
    # A value that is only a possessor ("likes Bob's cooking") is cut short,
    # except the related entity of "<subject> is <entity>'s <relation>".
    if value_possessive and not (relationship and _names_relation(
            lang, tokens, first, value_first, value_stop, stop)):
        return Grounding('value_partial')
    if value_first > first:
        previous = tokens[value_first - 1]
        if previous.is_word and previous.key in lang.privative_modifiers:
            return Grounding('value_partial')
    if value_stop < stop and not value_possessive:
        following = tokens[value_stop]
        if following.is_word and (following.key not in lang.function_words
                                  or following.key in lang.value_continuers):
            return Grounding('value_partial')
    if possessive and value_first < subject_stop:
        return Grounding('value_partial')

    person, candidates = False, ()
    if value_first >= subject_stop:
        same = lang.robot_references if subject_key in lang.robot_references else frozenset()
        person, candidates = _other_subject(lang, tokens, subject_stop, value_first, same)

    negated = any(
        lang.is_negator(token.key) for token in tokens[first:stop]
        if token.is_word and not in_names(token)
        and not (value_span[0] <= token.start and token.end <= value_span[1]))
    carries = bool(set(predicate.split('_')) & lang.predicate_negators)
    if negated and not carries:
        return Grounding('negation_not_carried')
    if carries and not negated:
        return Grounding('negation_not_said')
    longer = []
    words = [token.text for token in tokens[subject_first:subject_stop]]
    for index in range(subject_stop, min(subject_stop + _NAME_MAX_WORDS - 1, stop)):
        token = tokens[index]
        if possessive or not token.is_word:
            break
        suffix = next((suffix for suffix in lang.possessive_suffixes
                       if token.key.endswith(suffix) and len(token.key) > len(suffix)), None)
        if suffix is not None:
            words.append(token.text[:-len(suffix)])
            longer.append((' '.join(words), not _describes_possessor(lang, tokens, index + 1,
                                                                     stop)))
            break
        words.append(token.text)
        longer.append((' '.join(words), False))
    return Grounding(None, person, candidates, tuple(longer))


def _names_relation(lang, tokens, first, value_first, value_stop, stop):
    """Return True for "... is <value>'s <at most 3 words>" ending the evidence."""
    before = tokens[value_first - 1] if value_first > first else None
    rest = tokens[value_stop:stop]
    return (before is not None and before.is_word and before.key in lang.copulas
            and 0 < len(rest) <= _POSSESSED_MAX_WORDS
            and all(token.is_word and not token.key.endswith(lang.possessive_suffixes)
                    for token in rest))


def _other_subject(lang, tokens, after_subject, value_first, same):
    """
    Look for another subject opening a clause between the subject and the value.

    Returns (a person reference opens such a clause, the word sequences that
    would be another subject if they named a known entity): admission rejects
    on the first and asks the store about the second.
    """
    candidates = []
    openings = 0
    for index in range(after_subject, value_first):
        token = tokens[index]
        if token.is_word:
            if token.key not in lang.conjunctions or index == after_subject:
                continue
        elif token.text not in _BOUNDARIES:
            continue
        opener = index + 1
        while opener < value_first and not tokens[opener].is_word:
            opener += 1
        if opener >= value_first:
            continue
        openings += 1
        if openings > _CLAUSES_CHECKED_MAX or (
                tokens[opener].key in lang.persons and tokens[opener].key not in same):
            return True, ()
        words = []
        for word in tokens[opener:min(opener + _NAME_MAX_WORDS, value_first)]:
            if not word.is_word:
                break
            words.append(word.text)
            candidates.append(' '.join(words))
    return False, tuple(dict.fromkeys(candidates))
