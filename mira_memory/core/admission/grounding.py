# SPDX-License-Identifier: Apache-2.0
"""
Grounding rules: is the evidence a plain assertion, by the operator, about the subject.

The literal admission rules (admission.py) only check that the evidence,
subject and value were said. These rules check that what was said is what
would be stored. The structure is an allow-list: a sentence is a plain
statement only when everything in it is accounted for, and anything the rules
cannot account for is refused. The words are data (language/*.toml, every
file loaded and merged, so every sentence is checked against every
language's negators and hedges); no rule needs code for a new word.

- clause: the evidence lies inside one sentence that is not a real question;
  what stands before it in its sentence is only lead-ins ("remember that"),
  polite requests ("will you remember that"), interjections ("ok", "hey"),
  the robot's name, a name addressed, or a complete clause coordinated with
  it ("Ada sings and ..."); what follows is only trailing words ("btw"), an
  adverbial, a contrast ("..., not coffee"), a name addressed, or another
  complete coordinated clause; no word of the sentence makes it conditional,
  doubted, reported, hedged or modal, moves it off the durable present
  (a plan, the future, a state that ended) or scopes it to now ("today");
  no negation outside the evidence governs it; and no later sentence of the
  turn takes it back ("Just kidding.", "Not.", "Didn't she?").
- subject: the subject reference opens the evidence clause (only lead-ins,
  articles, titles, "my cousin" or "me and" may come before it), is not only
  the possessor of a person or of something the predicate does not name
  ("Ada's landlord is a baker"), and the value is not in a clause of its own
  ("... that Carl plays chess", "..., who rides horses");
- value: a complete phrase of the evidence that carries meaning (not cut out
  of a longer phrase or number, not after a privative modifier, not what a
  contrast sets aside, not a number cut from its approximation);
- polarity: negated evidence (in any language, "declines to", "hardly ever")
  needs a predicate that carries the negation (does_not_like, or a dislike
  predicate for an aversion idiom such as "can't stand"), and a negating
  predicate needs negated evidence.

The utterance is analysed once (`analyse`: display text, tokens with their
folded keys and numbers as one token, sentences) and every rule reads that
analysis. This module needs no store: word groups that might be names (a
name addressed, another entity between the subject and the value, a longer
name the subject starts) are returned to admission, which asks the store.

This is a conservative reading, not a parser: when the rules cannot tell
that the operator plainly stated the proposal, they reject it, and the
operator can say it again plainly.
"""

import dataclasses
from dataclasses import dataclass
import functools
import hashlib
import itertools
import os
import pathlib
import tomllib
from typing import Optional, Tuple
import unicodedata

from mira_memory.core.admission.normalize import display_form, locate, NormalizationError
from mira_memory.core.admission.normalize import normalize_key

LANGUAGE_DIRECTORY = pathlib.Path(__file__).resolve().parent / 'language'
# The version of the rules' code: major for a rule that refuses what it
# admitted before (or the reverse), minor for a new rule or word class.
# rules_digest() names the word lists they read.
RULES_VERSION = '3.0.0'
# An optional directory of further language files (language_files()).
EXTRA_LANGUAGE_ENV = 'MIRA_MEMORY_EXTRA_LANGUAGE_DIR'

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
    'surroundings': (
        CLAUSE, 'Its sentence holds more than a lead-in, an interjection, a name addressed or '
                'a plain coordinated clause, so it is not a plain statement; nothing was '
                'written.'),
    'governed': (
        CLAUSE, 'The sentence is conditional, doubted, denied, reported or hedged, so it is not '
                'a plain statement; nothing was written.'),
    'time_shift': (
        CLAUSE, 'The sentence speaks of a plan, the future or a past state that ended, not of '
                'what is durably true; nothing was written.'),
    'not_durable': (
        CLAUSE, 'The sentence is scoped to now (today, for now, this week...), so it is not '
                'durable knowledge; nothing was written.'),
    'negated_outside': (
        CLAUSE, 'The evidence is governed by a negation outside it; nothing was written.'),
    'retracted': (
        CLAUSE, 'A later sentence of the turn takes the statement back, negates or questions '
                'it; nothing was written.'),
    'subject_not_first': (
        SUBJECT, 'The subject does not open the evidence clause: only a lead-in, article or '
                 'title may come before it; nothing was written.'),
    'subject_possessor': (
        SUBJECT, 'The subject is only the possessor of what the clause is about; nothing was '
                 'written.'),
    'subject_partial': (
        SUBJECT, 'The subject is part of a longer word of the evidence; nothing was written.'),
    'value_in_other_clause': (
        SUBJECT, 'The value belongs to a clause with another subject; nothing was written.'),
    'value_vacuous': (
        VALUE, 'The value carries no meaning of its own (no letter or digit, only function '
               'words, or the predicate itself); nothing was written.'),
    'value_is_subject': (
        VALUE, "The value is the subject's own words in the evidence; nothing was written."),
    'value_partial': (
        VALUE, 'The value is not a complete phrase of the evidence: it cuts a word, a '
               'complement or a modifier off; nothing was written.'),
    'value_set_aside': (
        VALUE, 'The value is what a contrast sets aside ("not", "rather than", "unlike"), not '
               'what was asserted; nothing was written.'),
    'value_approximate': (
        VALUE, 'The value drops the approximation said with its number ("roughly 40"); '
               'nothing was written.'),
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
# Boundaries that coordinate two clauses of equal rank, like "and".
_COORDINATING_MARKS = frozenset(';\uff1b')
_QUOTES = frozenset('"\'\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e\u201a\u2039\u203a`')
_WORD_CATEGORIES = frozenset(('Mn', 'Mc', 'Me', 'Cf'))
# Inside a word these join its parts ("O'Brien", "doesn't", "tea-cakes").
_JOINERS = frozenset("'\u2019-\u2010\u2011")
# Between two digits these make one number ("3.5", "1,200", "7:30", "3/4").
_NUMBER_JOINERS = frozenset('.,:/')
_APOSTROPHES = str.maketrans({'\u2019': "'", '\u2018': "'", '\u2010': '-', '\u2011': '-'})
# A possessed phrase ("your favourite drink", "Ada's docking station") is at
# most this many words.
_POSSESSED_MAX_WORDS = 3
# Names longer than this many words are not looked for.
_NAME_MAX_WORDS = 4
# Words around the evidence read as a name addressed ("Ada, you like tea").
_VOCATIVE_MAX_WORDS = 4
# A trailing adverbial ("but only in the morning") is at most this long.
_ADVERBIAL_MAX_WORDS = 6
# A later sentence this short that holds a negator or hedge takes the
# statement back ("Hmm, no, that was Carl.").
_RETRACTION_MAX_WORDS = 6
# A possessive determiner may stand this many words before the subject name
# ("my cousin Bob", "our old dog Rufus").
_RELATION_MAX_WORDS = 2
# Bounds that keep one request's cost linear in its length: the evidence
# occurrences tried, the clause openings between subject and value that are
# checked, and the word groups between them asked of the store (beyond them
# the value's clause is unclear, so it is refused).
_OCCURRENCES_MAX = 4
_CLAUSES_CHECKED_MAX = 8
_CANDIDATES_MAX = 32


@dataclass(frozen=True)
class Token:
    """One word, number or punctuation mark of the display text, with its character span."""

    text: str
    key: str
    start: int
    end: int
    is_word: bool

    @property
    def is_number(self):
        return self.is_word and self.key[:1].isdigit()


@dataclass(frozen=True)
class Grounding:
    """The verdict: failure is None when every rule holds."""

    failure: Optional[str]
    # For admission's store check (rule "no other subject"): a person
    # reference (or more clauses or word groups than are checked) stands
    # between the subject and the value, or these word sequences do and
    # would be another subject if they name an entity.
    other_subject_found: bool = False
    other_subject_candidates: Tuple[str, ...] = ()
    # The subject followed by the next words, as (name, only a possessor): if
    # a name is another entity's, the subject is only part of that name ("Ada"
    # in "Ada Lovelace ..."); if it is the subject's own name said as a mere
    # possessor ("Ada" in "Ada Lovelace's brother likes tea"), the rule of
    # possessors applies to it.
    longer_subject_candidates: Tuple[Tuple[str, bool], ...] = ()
    # Short word groups said around the evidence and set off by a comma
    # ("Ada, you like tea."): they are accounted for only as a name
    # addressed, so each must name a known entity; for a second-person
    # subject, one that names another entity than the robot is the addressee.
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
    """Split display text into words, numbers and punctuation marks (spaces dropped)."""
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
                elif (text[index] in _NUMBER_JOINERS and index + 1 < length
                      and text[index - 1].isdigit() and text[index + 1].isdigit()
                      and text[start].isdigit()):
                    # A number is one word: "3.5" is never "3" and "5".
                    index += 2
                else:
                    break
            word = text[start:index]
            tokens.append(Token(word, _key(word), start, index, True))
        else:
            tokens.append(Token(char, _key(char), index, index + 1, False))
            index += 1
    return tokens


# The keys a language file may hold (language/en.toml explains each).
LANGUAGE_KEYS = frozenset((
    'language', 'lead_ins', 'request_lead_ins', 'interjections', 'trailing', 'openers',
    'clause_joiners', 'coordinators', 'subject_prefixes', 'abbreviations', 'question_openers',
    'question_tags', 'governors', 'governing_phrases', 'negators', 'negator_prefixes',
    'negator_suffixes', 'negating_phrases', 'predicate_negators', 'aversion_phrases',
    'aversion_predicates', 'time_shifts', 'time_shift_phrases', 'time_shift_suffixes',
    'not_durable', 'not_durable_phrases', 'retractions', 'contrast_markers', 'approximators',
    'approximators_after', 'months', 'month_companions', 'conjunctions', 'complementizers',
    'relative_pronouns', 'first_person', 'second_person', 'third_person', 'robot_references',
    'copulas', 'possessive_suffixes', 'possessive_subjects', 'possessive_determiners',
    'relation_nouns', 'contraction_followers', 'privative_modifiers', 'function_words',
    'value_followers', 'adverb_suffixes', 'markers', 'homographs', 'contraction_suffixes',
    'plain_phrases', 'verb_bracket', 'genitive_prepositions', 'preference_verbs',
    'preference_contrasts', 'infinitive_endings', 'participle_prefixes', 'participle_endings'))


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
            # Indexed by their first token: phrases are tried where they may start.
            found = {}
            for table in tables:
                for phrase in table.get(name, ()):
                    keys = tuple(token.key for token in tokenize(phrase))
                    if keys:
                        found.setdefault(keys[0], set()).add(keys)
            return {first: tuple(sorted(keys, key=len, reverse=True))
                    for first, keys in found.items()}

        def endings(name):
            return tuple(sorted(words(name), key=len, reverse=True))

        self.lead_ins = phrases('lead_ins')
        self.request_lead_ins = phrases('request_lead_ins')
        self.interjections = phrases('interjections')
        self.interjection_words = words('interjections') | {'please'}
        self.trailing = phrases('trailing')
        self.openers = words('openers')
        self.clause_joiners = words('clause_joiners')
        self.coordinators = words('coordinators')
        self.subject_prefixes = words('subject_prefixes')
        # A single letter with a full stop is decided by the rule of initials
        # (_keeps_sentence), which also sees whether the text ends there.
        self.abbreviations = frozenset(word for word in words('abbreviations') if len(word) > 1)
        self.question_openers = words('question_openers')
        self.question_tags = words('question_tags')
        self.governors = words('governors')
        self.governing_phrases = phrases('governing_phrases')
        self.negators = words('negators')
        self.negator_prefixes = endings('negator_prefixes')
        self.negator_suffixes = endings('negator_suffixes')
        self.negating_phrases = phrases('negating_phrases')
        self.predicate_negators = words('predicate_negators')
        self.aversion_phrases = phrases('aversion_phrases')
        self.aversion_predicates = words('aversion_predicates')
        self.time_shifts = words('time_shifts')
        self.time_shift_phrases = phrases('time_shift_phrases')
        self.time_shift_suffixes = endings('time_shift_suffixes')
        self.not_durable = words('not_durable')
        self.not_durable_phrases = phrases('not_durable_phrases')
        self.retractions = phrases('retractions')
        self.contrast_markers = phrases('contrast_markers')
        self.approximators = phrases('approximators')
        self.approximators_after = phrases('approximators_after')
        self.months = words('months')
        self.month_companions = words('month_companions')
        self.conjunctions = words('conjunctions')
        self.complementizers = words('complementizers')
        self.relative_pronouns = words('relative_pronouns')
        self.speakers = words('first_person') | words('second_person')
        self.persons = self.speakers | words('third_person')
        self.robot_references = words('robot_references')
        self.copulas = words('copulas')
        self.possessive_suffixes = endings('possessive_suffixes')
        # The written ones ("Ada's", "James'"): only these chain possessors
        # ("Ada's friend's dog"); a bare "s" (Pauls) would match "is".
        self.apostrophe_suffixes = tuple(
            suffix for suffix in self.possessive_suffixes if "'" in suffix)
        self.possessive_subjects = words('possessive_subjects')
        self.possessive_determiners = words('possessive_determiners')
        self.relation_nouns = words('relation_nouns')
        self.contraction_followers = words('contraction_followers')
        self.privative_modifiers = words('privative_modifiers')
        self.function_words = words('function_words')
        self.value_followers = words('value_followers')
        self.adverb_suffixes = endings('adverb_suffixes')
        self.contraction_suffixes = endings('contraction_suffixes')
        self.plain_phrases = phrases('plain_phrases')
        self.genitive_prepositions = words('genitive_prepositions')
        self.preference_verbs = words('preference_verbs')
        self.preference_contrasts = words('preference_contrasts')
        self.infinitive_endings = endings('infinitive_endings')
        self.participle_prefixes = tuple(sorted(words('participle_prefixes')))
        self.participle_endings = endings('participle_endings')
        # Words that may open a complete clause although they are function
        # words: persons, articles and titles, possessive determiners.
        self.clause_openers = (self.persons | self.subject_prefixes
                               | self.possessive_determiners)
        # Per language: the words that mark a sentence as that language, and
        # the words that lose another language's reading in such a sentence
        # (Portuguese "no" = "in the" is not the negator "no").
        self.markers = {}
        self.homographs = {}
        # Languages whose verb comes second and whose participles and
        # infinitives close the clause ("Seit 2015 wohnt Wiebke in Graz",
        # "Wiebke ist mit Matthias verheiratet").
        self.verb_bracket = frozenset(
            table.get('language', '') for table in tables if table.get('verb_bracket'))
        for table in tables:
            code = table.get('language', '')
            self.markers[code] = self.markers.get(code, frozenset()) | frozenset(
                _key(word) for word in table.get('markers', ()))
            self.homographs[code] = self.homographs.get(code, frozenset()) | frozenset(
                _key(word) for word in table.get('homographs', ()))
        # Words that continue a noun phrase: a value cannot end right before them.
        self.value_continuers = frozenset(('of', 'or', 'nor', "'s"))

    def is_negator(self, key, suppressed=frozenset()):
        """Return True for a negating word ("not", "doesn't", "n'aime", "nicht")."""
        if key in suppressed:
            return False
        return (key in self.negators or key.endswith(self.negator_suffixes)
                or (key.startswith(self.negator_prefixes) and len(key) > 2))


def language_files():
    """
    Return the language data files the rules read: language/*.toml, then the extra ones.

    EXTRA_LANGUAGE_ENV names an optional directory whose *.toml files (same
    keys as language/en.toml) are merged in after the shipped ones: a site
    can add a word without editing the package, and the tests change the
    rules this way to exercise `memory verify`. Read once per process, like
    the data itself.
    """
    files = sorted(LANGUAGE_DIRECTORY.glob('*.toml'))
    extra = os.environ.get(EXTRA_LANGUAGE_ENV, '')
    if extra:
        directory = pathlib.Path(extra)
        if not directory.is_dir():
            raise RuntimeError(f'{EXTRA_LANGUAGE_ENV} is not a directory: {extra}')
        files += sorted(directory.glob('*.toml'))
    return files


@functools.lru_cache(maxsize=1)
def _language_data():
    """Return ((file label, bytes), ...) of every language file, read once."""
    files = language_files()
    if not files:
        raise RuntimeError(f'no grounding language data in {LANGUAGE_DIRECTORY}')
    return tuple((_file_label(path), path.read_bytes()) for path in files)


def _file_label(path):
    # Shipped files by name; an extra file by its name after 'extra/', so an
    # extra en.toml never hashes like the shipped one.
    return path.name if path.parent == LANGUAGE_DIRECTORY else 'extra/' + path.name


@functools.lru_cache(maxsize=1)
def language():
    """Return the merged language data (every language file, loaded once)."""
    return Language([tomllib.loads(data.decode('utf-8')) for _, data in _language_data()])


@functools.lru_cache(maxsize=1)
def rules_digest():
    """Return a short hash of the language data files: which words the rules read."""
    digest = hashlib.sha256()
    for label, data in _language_data():
        digest.update(label.encode() + b'\0' + data + b'\0')
    return digest.hexdigest()[:16]


def rules_id():
    """Return the running rules as receipts record them: '<RULES_VERSION>+<rules_digest()>'."""
    return f'{RULES_VERSION}+{rules_digest()}'


@dataclass(frozen=True)
class _Sentence:
    start: int          # first token index
    end: int            # one past the last content token (terminators excluded)
    question: bool


@dataclass(frozen=True)
class Analysis:
    """One utterance analysed once: display text, tokens and sentences, read by every rule."""

    display: str
    tokens: Tuple[Token, ...]
    sentences: Tuple[_Sentence, ...]

    def sentence_at(self, index):
        """Return the sentence holding token index, or None."""
        return next((s for s in self.sentences if s.start <= index < max(s.end, s.start + 1)),
                    None)


def analyse(utterance, lang=None):
    """Return the Analysis of an utterance, or None when it cannot be normalized."""
    if lang is None:
        return _analyse_default(utterance)
    return _analyse(utterance, lang)


@functools.lru_cache(maxsize=16)
def _analyse_default(utterance):
    # One admission reads the same utterance for several occurrences and
    # candidates, and a retry reads it again: keep the last few analyses.
    return _analyse(utterance, language())


def forget_kept_texts():
    """Drop the analyses kept of the last utterances (after a forget, none may stay)."""
    _analyse_default.cache_clear()


def _analyse(utterance, lang):
    try:
        display = display_form(utterance)
    except NormalizationError:
        return None
    tokens = tuple(tokenize(display))
    return Analysis(display, tokens, tuple(_sentences(tokens, lang)))


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


def _find_span(needle, evidence_text, offset):
    return next(iter(_find_spans(needle, evidence_text, offset)), None)


def said_as_genitive(name, evidence):
    """
    Return True when name occurs in evidence only with a genitive ending ("Pauls").

    Admission's literal rule finds names as whole words; German and Dutch
    write the genitive of a name as one word ("Pauls Lieblingsstadt ist
    Wien"), so the name is said there too. The grounding rules then judge it
    as a possessor, like "Paul's".
    """
    try:
        text = display_form(evidence)
    except NormalizationError:
        return False
    return _genitive_span(language(), name, text, 0) is not None


def _genitive_span(lang, needle, evidence_text, offset):
    """
    Return the span of a name said inside one word with a genitive ending or elision.

    Only the name itself may be read so, and only with a whole ending or
    opening of the language data: German and Dutch "s" ("Pauls
    Lieblingsstadt ist Wien"), an elided French or Italian article or
    preposition ("La ville préférée d'Étienne est Marseille").
    """
    try:
        name = [token.key for token in tokenize(normalize_key(needle)) if token.is_word]
    except NormalizationError:
        return None
    words = [token for token in tokenize(evidence_text) if token.is_word]
    for index in range(len(words) - len(name) + 1):
        found = words[index:index + len(name)]
        keys = [word.key for word in found]
        head, _, opened = keys[0].rpartition("'")
        elided = bool(head) and (head + "'" in lang.function_words
                                 or head + "'" in lang.genitive_prepositions)
        first_key = opened if elided else keys[0]
        if len(name) == 1:
            last, inner = first_key, []
        else:
            last, inner = keys[-1], [first_key] + keys[1:-1]
        if inner != name[:-1] or not last.startswith(name[-1]):
            continue
        ending = last[len(name[-1]):]
        if ending and ending not in lang.possessive_suffixes:
            continue
        if not ending and not elided:
            continue
        start = found[0].start + (len(found[0].text) - len(opened) if elided else 0)
        stop = found[-1].end - len(ending)
        return offset + start, offset + stop
    return None


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
            # "d'Étienne", "dell'Anna": an elided article or preposition may
            # open the word the name is in.
            head = _key(token.text[:start - token.start])
            if not (head.endswith("'") and (head in lang.function_words
                                            or head in lang.genitive_prepositions)):
                return None
        if token.end > end:
            rest = _key(tokens[index].text[end - token.start:])
            if rest in lang.contraction_suffixes:
                # "Keiko're", "Ada'll": the name ends before a contracted verb.
                pass
            elif rest not in lang.possessive_suffixes:
                return None
            else:
                possessive = True
        if first is None:
            first = index
        stop = index + 1
    if first is None:
        return None
    return first, stop, possessive


def _is_abbreviation(tokens, index, lang):
    """Return True for a word written as an abbreviation ("No. 4", "St. Albans")."""
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    return (following is not None and following.text == '.'
            and following.start == tokens[index].end and tokens[index].key in lang.abbreviations
            and index + 2 < len(tokens) and tokens[index + 2].is_word)


def _is_month(lang, tokens, index):
    """Return True when a month name that is also another word reads as the month ("in May")."""
    previous = tokens[index - 1] if index > 0 else None
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    return ((previous is not None and previous.is_word
             and (previous.key in lang.month_companions or previous.is_number))
            or (following is not None and following.is_number))


def _phrase_lengths(phrases, keys, index):
    """Return the lengths of the phrases (indexed by first key) that start at keys[index]."""
    return [len(phrase) for phrase in phrases.get(keys[index], ())
            if tuple(keys[index:index + len(phrase)]) == phrase]


def _has_phrase(phrases, keys):
    """Return True when one of phrases (indexed by first word) occurs in keys."""
    return any(_phrase_lengths(phrases, keys, index) for index in range(len(keys)))


def _phrase_spans(phrases, keys):
    """Return the (start, stop) positions in keys of every occurrence of one of phrases."""
    return [(index, index + length) for index in range(len(keys))
            for length in _phrase_lengths(phrases, keys, index)]


@dataclass(frozen=True)
class _Context:
    lang: Language
    analysis: Analysis
    subject: str
    value: str
    predicate: str
    relationship: bool
    # The robot's names as token keys: "ok mira, ..." addresses the robot.
    vocatives: Tuple[Tuple[str, ...], ...]

    @property
    def tokens(self):
        return self.analysis.tokens


def ground(utterance, evidence, subject, value, predicate, *, relationship=False, lang=None,
           vocatives=(), analysis=None):
    """
    Check the grounding rules for an evidence that the literal rules already found.

    Every whole-word occurrence of the evidence in the utterance is tried;
    the proposal is grounded when one occurrence satisfies every rule. When
    none does, the failure of the first occurrence is returned. Only the
    first few occurrences are tried, so a long repetitive utterance stays
    cheap; a statement repeated more often than that is refused. lang is the
    merged language data (default: every shipped language file); vocatives
    are the robot's names, which may address it ("ok mira, ..."); analysis is
    the utterance's Analysis when the caller has it already.
    """
    if lang is None:
        lang = language()
        analysis = analysis or analyse(utterance)
    else:
        analysis = analysis or analyse(utterance, lang)
    if analysis is None:
        return Grounding('not_a_clause')
    span = _span_text(evidence, analysis.display)
    if span is None:
        return Grounding('not_a_clause')
    keys = []
    for name in vocatives:
        try:
            words = tuple(token.key for token in tokenize(normalize_key(name)) if token.is_word)
        except NormalizationError:
            continue
        if words:
            keys.append(words)
    context = _Context(lang, analysis, subject, value, predicate, relationship, tuple(keys))
    first_failure = None
    for start in itertools.islice(_occurrences(span, analysis.display), _OCCURRENCES_MAX):
        verdict = _ground_occurrence(context, start, start + len(span))
        if verdict.failure is None:
            return verdict
        first_failure = first_failure or verdict
    return first_failure or Grounding('not_a_clause')


def _ground_occurrence(c, start, end):
    lang, tokens, display = c.lang, c.tokens, c.analysis.display
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
    sentence = c.analysis.sentence_at(first)
    if sentence is None or stop > sentence.end or first >= stop:
        return Grounding('not_one_sentence')

    # Spans the scans below must not read as grammar: the subject's name, and
    # a relationship's value (it names the related entity).
    evidence_text = display[tokens[first].start:tokens[stop - 1].end]
    evidence_offset = tokens[first].start
    subject_span = _find_span(c.subject, evidence_text, evidence_offset) or _genitive_span(
        lang, c.subject, evidence_text, evidence_offset)
    value_spans = list(itertools.islice(
        _find_spans(c.value, evidence_text, evidence_offset), _OCCURRENCES_MAX))
    names = [subject_span] if subject_span else []
    if c.relationship:
        names.extend(value_spans)

    def in_names(token):
        return any(span[0] <= token.start and token.end <= span[1] for span in names)

    suppressed = _suppressed(lang, tokens, sentence)
    failure, addressees = _clause_failure(
        c, sentence, first, stop, in_names, subject_span, suppressed)
    if failure:
        return Grounding(failure)
    if subject_span is None:
        return Grounding('subject_partial')
    subject_tokens = _cover(lang, tokens, *subject_span)
    if subject_tokens is None:
        return Grounding('subject_partial')
    subject_first, subject_stop, possessive = subject_tokens
    subject_key = normalize_key(c.subject)
    same = lang.robot_references if subject_key in lang.robot_references else frozenset()
    allowed = _reach(c, (first,), sentence.end, lead=True, prefixes=True, also=same)
    bracket = _sentence_language(lang, tokens, sentence) in lang.verb_bracket
    # "d'Odile": a name opened by an elided preposition is said as a possessor.
    elided = tokens[subject_first].start < subject_span[0]
    if elided or subject_first not in allowed and not (
            bracket and _inverted(lang, tokens, first, subject_first)):
        failure = _genitive_failure(c, first, subject_span, subject_first, subject_stop, stop)
        if failure:
            return Grounding(failure)
        possessive = False  # "la ville préférée d'Étienne est ...": judged just now

    first_failure = None
    for value_span in value_spans or [None]:
        verdict = _value_and_polarity(
            c, first, stop, subject_span, subject_first, subject_stop, possessive, value_span,
            in_names, suppressed, bracket)
        if verdict.failure is None:
            return dataclasses.replace(verdict, addressee_candidates=addressees)
        first_failure = first_failure or verdict
    return first_failure


def _suppressed(lang, tokens, sentence):
    """
    Return the words that lose another language's reading in this sentence.

    The sentence is read as the language with the most of its marker words
    (none on a tie); that language's homographs are then its own words:
    Portuguese "no" ("in the") in "Rui mora no Porto" is not the negator "no".
    """
    return lang.homographs.get(_sentence_language(lang, tokens, sentence), frozenset())


def _sentence_language(lang, tokens, sentence):
    """Return the language with the most marker words in the sentence ('' on a tie or none)."""
    counts = {}
    for token in tokens[sentence.start:sentence.end]:
        if token.is_word:
            for code, markers in lang.markers.items():
                if token.key in markers:
                    counts[code] = counts.get(code, 0) + 1
    if not counts:
        return ''
    best = max(counts.values())
    winners = [code for code, count in counts.items() if count == best]
    return winners[0] if len(winners) == 1 else ''


def _reach(c, positions, end, *, lead=True, prefixes=False, also=frozenset()):
    """
    Return every position reachable from the given positions by skipping what may open a clause.

    lead: lead-ins, polite requests, interjections, openers and the robot's
    name; prefixes: also articles and titles, "my cousin" and "me and" (what
    may stand right before a subject name). One shared visited set keeps this
    linear in the sentence.
    """
    return _walk(c, positions, end, lead=lead, prefixes=prefixes, also=also)[0]


def _walk(c, positions, end, *, lead=True, prefixes=False, also=frozenset()):
    lang, tokens = c.lang, c.tokens
    keys = [token.key for token in tokens[:end]]
    seen = set(positions)
    requested = False
    frontier = list(seen)
    while frontier:
        here = frontier.pop()
        steps = []
        if here < end and tokens[here].is_word:
            key = keys[here]
            if lead:
                for table in (lang.lead_ins, lang.interjections):
                    steps.extend(here + length for length in _phrase_lengths(table, keys, here))
                # "Would you (please) <lead-in>": a request opener counts only
                # before a lead-in, whose complement it asserts.
                for length in _phrase_lengths(lang.request_lead_ins, keys, here):
                    after = here + length
                    if (after < end and _phrase_lengths(lang.lead_ins, keys, after)) or any(
                            key in lang.lead_ins and key not in lang.interjection_words
                            for key in keys[here:after]):
                        # "Would you (please) keep in mind that": an opener
                        # before a lead-in, or a whole request ("will you
                        # remember that").
                        requested = True
                        steps.append(after)
                steps.extend(here + len(name) for name in c.vocatives
                             if tuple(keys[here:here + len(name)]) == name)
                if key in lang.openers:
                    steps.append(here + 1)
            if key in also or (prefixes and key in lang.subject_prefixes):
                steps.append(here + 1)
            if prefixes:
                steps.extend(_relation_steps(lang, tokens, here, end))
        if prefixes and here < end and tokens[here].text == '.' and here > 0 and (
                keys[here - 1] in lang.subject_prefixes):
            steps.append(here + 1)  # "Dr." : the title's own full stop
        for step in steps:
            step = min(step, end)
            while step < end and not tokens[step].is_word and tokens[step].text in ',:':
                step += 1
            if step not in seen:
                seen.add(step)
                frontier.append(step)
    return seen, requested


def _relation_steps(lang, tokens, here, end):
    """Yield where a subject name may start after "my cousin", "our old dog", "me and"."""
    token = tokens[here]
    if token.key in lang.possessive_determiners:
        for count in range(1, _RELATION_MAX_WORDS + 1):
            words = tokens[here + 1:here + 1 + count]
            if len(words) == count and here + count < end and all(
                    word.is_word and word.key not in lang.function_words for word in words):
                yield here + 1 + count
    # "me and Ada", "Bob and Ada": a subject coordinated with the speaker or a name.
    for count in range(1, _NAME_MAX_WORDS):
        words = tokens[here:here + count]
        after = here + count
        if after >= end or len(words) < count or not all(word.is_word for word in words):
            break
        if tokens[after].is_word and tokens[after].key in lang.coordinators and all(
                word.key in lang.speakers or word.key not in lang.function_words
                for word in words):
            yield after + 1


def _clause_failure(c, sentence, first, stop, in_names, subject_span, suppressed):
    """Return (failure or None, word groups addressed) for the evidence's sentence."""
    lang, tokens = c.lang, c.tokens
    lead, requested = _walk(c, (sentence.start,), sentence.end)
    opener = max(lead)
    if sentence.question and not requested:
        return 'question', ()
    opening = tokens[opener] if opener < sentence.end else None
    if opening is not None and opening.key in lang.question_openers and not requested and not (
            subject_span and subject_span[0] <= opening.start < subject_span[1]):
        return 'question', ()

    # Every word of the sentence after its lead-ins: the operator talking to
    # the robot is not part of the statement.
    plain = _plain_indices(lang, tokens, sentence)
    words = [index for index in range(sentence.start, sentence.end)
             if tokens[index].is_word and not in_names(tokens[index])
             and not _is_abbreviation(tokens, index, lang) and index not in plain]
    failure = _word_failure(lang, tokens, words, opener, suppressed)
    if failure:
        return failure, ()
    scanned = [index for index in words if index >= opener]
    before = [index for index in scanned if index < first]
    if _negated(lang, tokens, before, suppressed):
        return 'negated_outside', ()

    # Quote marks are transparent at both ends: 'Remember: "Ada likes tea".'
    opening_quote = first
    while opening_quote > sentence.start and tokens[opening_quote - 1].text in _QUOTES:
        opening_quote -= 1
    addressed = []
    # Titles, "my cousin" and "me and" may stand before the evidence too
    # ("Frau | Berger is a nurse"), though they never end the lead-ins.
    named = _reach(c, lead, sentence.end, prefixes=True)
    if first not in named and opening_quote not in named:
        failure = _prefix_failure(c, sentence, named, opening_quote, addressed)
        if failure:
            return failure, ()
    closing = stop
    while closing < sentence.end and tokens[closing].text in _QUOTES:
        closing += 1
    failure = _suffix_failure(c, sentence, closing, suppressed, addressed)
    if failure:
        return failure, ()
    failure = _later_sentences_failure(c, sentence)
    return failure, tuple(addressed)


def _plain_indices(lang, tokens, sentence):
    """Return the token indices inside a plain phrase ("is used to" night shifts, "in May")."""
    words = [index for index in range(sentence.start, sentence.end) if tokens[index].is_word]
    keys = [tokens[index].key for index in words]
    return {words[position] for begin, end in _phrase_spans(lang.plain_phrases, keys)
            for position in range(begin, end)}


def _word_failure(lang, tokens, words, opener, suppressed):
    """
    Return the failure for a word of the sentence that makes it not a plain, durable fact.

    words are the sentence's word indices; single words count from opener
    (after the lead-ins, which are the operator talking to the robot:
    "don't forget that"), phrases anywhere ("Yeah right, ..." starts with
    what reads as an interjection and a lead-in).
    """
    keys = [tokens[index].key for index in words]
    for index, key in zip(words, keys):
        if index < opener or key in suppressed or (
                key in lang.months and _is_month(lang, tokens, index)):
            continue
        if key in lang.governors:
            return 'governed'
        if key in lang.time_shifts or key.endswith(lang.time_shift_suffixes):
            return 'time_shift'
        if key in lang.not_durable:
            return 'not_durable'
    for failure, phrases in (('governed', lang.governing_phrases),
                             ('time_shift', lang.time_shift_phrases),
                             ('not_durable', lang.not_durable_phrases)):
        if _phrase_spans(phrases, keys):
            return failure
    return None


def _negated(lang, tokens, indices, suppressed):
    """Return True when the words at indices hold a negator or a negating phrase."""
    keys = [tokens[index].key for index in indices]
    return any(lang.is_negator(key, suppressed) for key in keys) or _has_phrase(
        lang.negating_phrases, keys)


def _prefix_failure(c, sentence, lead, first, addressed):
    """
    Account for what stands between the sentence's lead-ins and the evidence.

    Allowed: a complete clause coordinated with the evidence ("Ada sings and
    Bob likes tea"), or a name addressed before a comma ("Ada, you like
    tea"). A frame ("In the film, ...", "Quick quiz: ...") is not.
    """
    lang, tokens = c.lang, c.tokens
    for joint in range(first - 1, sentence.start - 1, -1):
        token = tokens[joint]
        joiner = (token.is_word and (token.key in lang.clause_joiners
                                     or token.key in lang.coordinators)) or (
            not token.is_word and token.text in _COORDINATING_MARKS)
        if not joiner and (token.is_word or token.text not in _BOUNDARIES):
            continue
        if first not in _reach(c, (joint + 1,), sentence.end):
            continue
        start = max((position for position in lead if position <= joint), default=None)
        if start is None:
            return 'surroundings'
        words = [word for word in tokens[start:joint] if word.is_word]
        if joiner:
            return None if _is_complete_clause(lang, words) else 'surroundings'
        if _is_vocative(lang, words):
            addressed.append(' '.join(word.text for word in words))
            return None
        return 'surroundings'
    return 'not_a_clause'


def _is_complete_clause(lang, words):
    """
    Return True for words that can be a clause of their own ("he works in York").

    Not a parser: at least two words, and the first is not a preposition or
    another function word that cannot open a clause ("in the film").
    """
    return len(words) >= 2 and (
        words[0].key not in lang.function_words or words[0].key in lang.clause_openers)


def _is_vocative(lang, words):
    """Return True for a short word group that can only be a name addressed ("Ada,")."""
    return 0 < len(words) <= _VOCATIVE_MAX_WORDS and all(
        word.key not in lang.function_words and not word.is_number and word.key[:1].isalpha()
        for word in words)


def _suffix_failure(c, sentence, closing, suppressed, addressed):
    """
    Account for what follows the evidence in its sentence, segment by segment.

    Allowed right after it: trailing words ("btw", "lol"), the robot's name,
    an adverb or adverbial ("beautifully", "at the grove surgery"); after a
    comma or joiner also a contrast ("not coffee"), a name addressed, or a
    complete clause ("and he works in York", ", she visits on Sundays"). A
    tag or comment ("no?", ", I reckon") is not.
    """
    lang, tokens = c.lang, c.tokens
    end = sentence.end
    keys = [token.key for token in tokens[:end]]
    index = closing
    direct = True
    while index < end:
        joined = False
        while index < end and not tokens[index].is_word:
            direct = False
            if tokens[index].text in _COORDINATING_MARKS:
                joined = True
            elif tokens[index].text not in _BOUNDARIES and tokens[index].text not in _QUOTES:
                return 'surroundings'
            index += 1
        if index < end and (keys[index] in lang.clause_joiners
                            or keys[index] in lang.coordinators):
            joined, direct = True, False
            index += 1
        segment_start = index
        while index < end and (tokens[index].is_word or tokens[index].text in _QUOTES):
            if index > segment_start and (
                    keys[index] in lang.clause_joiners or keys[index] in lang.coordinators):
                break
            index += 1
        words = [word for word in tokens[segment_start:index] if word.is_word]
        failure = _segment_failure(c, words, joined, direct, suppressed, addressed)
        if failure:
            return failure
        direct = False
    return None


def _trailing_length(c, keys, index):
    """Return how many tokens from index are trailing words, the robot's name or an adverb."""
    lang = c.lang
    lengths = _phrase_lengths(lang.trailing, keys, index)
    lengths.extend(len(name) for name in c.vocatives
                   if tuple(keys[index:index + len(name)]) == name)
    if lengths:
        return max(lengths)
    key = keys[index]
    if key in lang.value_followers or _is_adverb(lang, key):
        return 1
    return 0


def _elided(lang, key):
    """Return True for a function word elided onto a word ("nell'orchestra", "l'hôpital")."""
    head, apostrophe, rest = key.partition("'")
    return bool(apostrophe and rest) and (head + "'" in lang.function_words
                                          or head in lang.function_words)


def _is_adverb(lang, key):
    return any(key.endswith(suffix) and len(key) > len(suffix) + 2
               for suffix in lang.adverb_suffixes)


def _segment_failure(c, words, joined, direct, suppressed, addressed):
    lang = c.lang
    if not words:
        return None
    word_keys = [word.key for word in words]
    # A contrast sets something aside, so it has words after its marker.
    markers = _phrase_lengths(lang.contrast_markers, word_keys, 0)
    contrast = not direct and (
        any(length < len(word_keys) for length in markers)
        or (joined and len(word_keys) > 1 and lang.is_negator(word_keys[0], suppressed)))
    negators = [key for key in word_keys if lang.is_negator(key, suppressed)]
    if negators or _has_phrase(lang.negating_phrases, word_keys):
        # "..., not coffee": a contrast sets its own words aside; any other
        # negation after the statement takes it back ("..., or not").
        if contrast and len(negators) <= 1 and not _has_phrase(
                lang.negating_phrases, word_keys[1:]):
            return None
        return 'negated_outside'
    if contrast:
        return None
    covered = 0
    while covered < len(words):
        length = _trailing_length(c, word_keys, covered)
        if not length:
            break
        covered += length
    if covered >= len(words):
        return None
    covered = 0 if not direct else covered
    if direct:
        # Straight after the evidence, only trailing words and adverbs: a
        # phrase there ("tea | with lemon") is part of the clause it cut.
        return None if all(key in lang.value_followers or _is_adverb(lang, key)
                           for key in word_keys[covered:]) else 'not_a_clause'
    first = word_keys[0]
    if len(words) <= _ADVERBIAL_MAX_WORDS and (
            (first in lang.function_words and first not in lang.clause_openers)
            or first in lang.value_followers or _is_adverb(lang, first) or words[0].is_number):
        return None
    # A clause of its own: coordinated ("and he works in York"), or after a
    # comma when it is not a comment of the speaker or listener ("Ada is
    # left-handed, she uses the left scanner" but not ", I reckon").
    if _is_complete_clause(lang, words) and (
            joined or (len(words) >= 3 and first not in lang.speakers)):
        return None
    if not joined and _is_vocative(lang, words):
        addressed.append(' '.join(word.text for word in words))
        return None
    return 'surroundings'


def _later_sentences_failure(c, sentence):
    """
    Return 'retracted' when a later sentence of the turn takes the statement back.

    It does so with a retraction ("Just kidding.", "Scratch that."), as a
    short sentence of a negator or hedge and at most one word of its own
    ("Not.", "Hmm, no, that was Carl."), or as a question of only tags and
    function words ("Didn't she?", "Or not?").
    """
    lang, tokens = c.lang, c.tokens
    for other in c.analysis.sentences:
        if other.start < sentence.end:
            continue
        words = [token for token in tokens[other.start:other.end] if token.is_word]
        keys = [token.key for token in words]
        if not keys:
            continue
        if _has_phrase(lang.retractions, keys):
            return 'retracted'
        suppressed = _suppressed(lang, tokens, other)
        if any(position < other.end and lang.is_negator(tokens[position].key, suppressed)
               for position in _reach(c, (other.start,), other.end)):
            # "No, that was Carl Berger.", "Hmm, not Ada."
            return 'retracted'
        doubting = [key for key in keys if lang.is_negator(key, suppressed)
                    or key in lang.governors or key in lang.time_shifts]
        own = [key for key in keys if key not in lang.function_words
               and not lang.is_negator(key, suppressed) and key not in lang.governors
               and not _phrase_lengths(lang.interjections, [key], 0)]
        if len(keys) <= _RETRACTION_MAX_WORDS and doubting and len(own) <= 1:
            return 'retracted'
        if other.question and all(
                key in lang.function_words or key in lang.persons or key in lang.question_tags
                or key in lang.copulas or lang.is_negator(key, suppressed) for key in keys):
            return 'retracted'
    return None


def _possessor_failure(c, tokens, subject_stop, value_first, end):
    """
    Return 'subject_possessor' when a possessed subject is not what the clause describes.

    "<possessor>'s <at most 3 words> <copula> <value>" describes the
    possessor ("your favourite colour is teal", "Pauls Lieblingsstadt ist
    Wien"), and so does a possessed thing the predicate names ("your docking
    station sits behind the sofa", predicate docking_station_location). A
    person or animal possessed is another party ("Ada's landlord is a baker"),
    unless the clause names the relation itself ("Dana's partner is Fox",
    predicate partner or a relationship).
    """
    lang = c.lang
    parts = set(c.predicate.split('_'))
    possessed = []
    index = subject_stop
    while index < min(value_first, end) and len(possessed) < _POSSESSED_MAX_WORDS:
        token = tokens[index]
        if not token.is_word or token.key.endswith(lang.apostrophe_suffixes):
            return 'subject_possessor'
        if token.key in lang.copulas and possessed:
            break
        possessed.append(token.key)
        index += 1
    if not possessed:
        return None
    copula = index < end and tokens[index].is_word and tokens[index].key in lang.copulas
    relation = [key for key in possessed if key in lang.relation_nouns]
    if relation:
        named = parts - {'is', 'has', 'of', 'name', 'named'}
        if named == set(relation[-1:]):
            return None
        # A name right after "<possessor>'s <relation> is" fills the relation
        # itself ("Keiko's husband is Olu"); "is a baker" describes the other.
        after = index + 1
        while after < value_first and (tokens[after].key in lang.subject_prefixes or (
                tokens[after].text == '.' and tokens[after - 1].key in lang.subject_prefixes)):
            after += 1
        if copula and after == value_first and (
                c.relationship or tokens[value_first].text[:1].isupper()):
            return None
        return 'subject_possessor'
    if copula:
        return None
    return None if parts & set(possessed) else 'subject_possessor'


def _genitive_failure(c, first, subject_span, subject_first, subject_stop, stop):
    """
    Return None for a subject named as the possessor after what it has, else the failure.

    "<the> <up to 3 words> of <subject> <copula> <value>" describes the
    possessor, as "<subject>'s ... is" does: "La ville préférée d'Étienne est
    Marseille", "Il colore preferito di Chiara è il verde". A person or animal
    possessed is another party ("The friend of Ada is a baker"), and with
    another verb the clause is about what is possessed ("The friend of Ada
    likes tea"): the subject does not open the clause.
    """
    lang, tokens = c.lang, c.tokens
    elided = tokens[subject_first].start < subject_span[0]
    if elided:
        possessed = tokens[first:subject_first]
    elif subject_first > first and tokens[subject_first - 1].key in lang.genitive_prepositions:
        possessed = tokens[first:subject_first - 1]
    else:
        return 'subject_not_first'
    content = [token.key for token in possessed
               if token.key not in lang.function_words and token.key not in lang.subject_prefixes]
    if (not content or len(content) > _POSSESSED_MAX_WORDS
            or not all(token.is_word for token in possessed)
            or subject_stop >= stop or tokens[subject_stop].key not in lang.copulas):
        return 'subject_not_first'
    relation = [key for key in content if key in lang.relation_nouns]
    named = set(c.predicate.split('_')) - {'is', 'has', 'of', 'name', 'named'}
    if relation and named != set(relation[-1:]):
        return 'subject_possessor'
    return None


def _is_closing_verb(lang, key):
    """Return True for an infinitive or participle closing a clause ("wohnen", "verheiratet")."""
    return key.endswith(lang.infinitive_endings) or (
        key.startswith(lang.participle_prefixes) and key.endswith(lang.participle_endings))


def _inverted(lang, tokens, first, subject_first):
    """
    Return True for a verb-second clause: "Seit 2015 wohnt Wiebke ...".

    An adverbial of at most three words (opening with a function word or a
    number) and then one verb may stand before the subject.
    """
    before = tokens[first:subject_first]
    return (3 <= len(before) <= 5 and all(token.is_word for token in before)
            and (before[0].key in lang.function_words or before[0].is_number)
            and before[-1].key not in lang.function_words)


def _value_and_polarity(c, first, stop, subject_span, subject_first, subject_stop, possessive,
                        value_span, in_names, suppressed, bracket=False):
    lang, tokens = c.lang, c.tokens
    if value_span is None:
        return Grounding('value_partial')
    value_key = normalize_key(c.value)
    value_words = [token.key for token in tokenize(value_key) if token.is_word]
    if not any(char.isalnum() for char in value_key) or not value_words:
        return Grounding('value_vacuous')
    # A relationship's value names an entity, which resolution checks: "The
    # Who" is a name, not two function words.
    # "she/her": a list written with slashes names its words, so it is a value.
    if not c.relationship and '/' not in value_key and all(
            (word in lang.function_words and word not in lang.months) or lang.is_negator(word)
            for word in value_words):
        return Grounding('value_vacuous')
    if '_'.join(value_words) == c.predicate:
        return Grounding('value_vacuous')
    if value_span[0] < subject_span[1] and subject_span[0] < value_span[1]:
        return Grounding('value_is_subject')
    covered = _cover(lang, tokens, *value_span)
    if covered is None:
        return Grounding('value_partial')
    value_first, value_stop, value_possessive = covered
    # A value that is only a possessor ("likes Bob's cooking") is cut short,
    # except the related entity of "<subject> is <entity>'s <relation>".
    if value_possessive and not (c.relationship and _names_relation(
            lang, tokens, first, value_first, value_stop, stop)):
        return Grounding('value_partial')
    if value_first > first:
        previous = tokens[value_first - 1]
        if previous.is_word and previous.key in lang.privative_modifiers:
            return Grounding('value_partial')
    # A verb-final clause closes with its participle or infinitive
    # ("Wiebke ist mit Matthias verheiratet"); a fronted value is followed by
    # the verb and then the subject ("In Utrecht werkt Femke ...").
    closing_verb = bracket and tokens[value_stop].is_word if value_stop < stop else False
    closing_verb = closing_verb and (value_stop + 1 == subject_first or (
        value_stop + 1 == stop and _is_closing_verb(lang, tokens[value_stop].key)))
    # "Theo and Keiko're neighbours": the value ends before a contracted verb,
    # and what follows is that verb's complement.
    contracted = tokens[value_stop - 1].key.endswith(lang.contraction_suffixes) and (
        not tokens[value_stop - 1].key.endswith(lang.possessive_suffixes))
    closing_verb = closing_verb or contracted
    if value_stop < stop and not value_possessive and not closing_verb:
        following = tokens[value_stop]
        if following.is_word and (
                following.key in lang.value_continuers or not (
                    following.key in lang.function_words or _elided(lang, following.key)
                    or following.key in lang.value_followers
                    or _is_adverb(lang, following.key))):
            return Grounding('value_partial')
    failure = _set_aside(c, tokens, first, value_first, value_stop, stop, suppressed)
    if failure:
        return Grounding(failure)
    if possessive and value_first < subject_stop:
        return Grounding('value_partial')

    # "Ada's an early riser": the 's is "is" or "has", not a possessive.
    if possessive and tokens[subject_stop - 1].key.endswith("'s") and (
            value_first == subject_stop or tokens[subject_stop].key in lang.contraction_followers):
        possessive = False
    subject_key = normalize_key(c.subject)
    if subject_key in lang.possessive_subjects:
        possessive = True
    if possessive:
        failure = _possessor_failure(c, tokens, subject_stop, value_first, stop)
        if failure:
            return Grounding(failure)

    person, candidates = False, ()
    if value_first >= subject_stop:
        same = lang.robot_references if subject_key in lang.robot_references else frozenset()
        failure = _other_clause(lang, tokens, subject_stop, value_first)
        if failure:
            return Grounding(failure)
        person, candidates = _other_subject(lang, tokens, subject_stop, value_first, same)

    polarity = _polarity_failure(c, tokens, first, stop, value_span, value_stop, in_names,
                                 suppressed)
    if polarity:
        return Grounding(polarity)
    longer = []
    words = [token.text for token in tokens[subject_first:subject_stop]]
    for index in range(subject_stop, min(subject_stop + _NAME_MAX_WORDS - 1, stop)):
        token = tokens[index]
        if possessive or not token.is_word:
            break
        suffix = next((suffix for suffix in lang.apostrophe_suffixes
                       if token.key.endswith(suffix) and len(token.key) > len(suffix)), None)
        if suffix is not None:
            words.append(token.text[:-len(suffix)])
            longer.append((' '.join(words), _possessor_failure(
                c, tokens, index + 1, max(value_first, index + 1), stop) is not None))
            break
        words.append(token.text)
        longer.append((' '.join(words), False))
    return Grounding(None, person, candidates, tuple(longer))


def _set_aside(c, tokens, first, value_first, value_stop, stop, suppressed):
    """
    Return a failure when the value is not what was asserted of it.

    A contrast sets aside what follows it ("tea, not coffee", "tea rather
    than coffee", "unlike coffee"); an approximation belongs to its number
    ("roughly 40", "40 or so").
    """
    lang = c.lang
    keys = [token.key for token in tokens[first:stop]]
    start = value_first - first
    # An article may stand between the marker and the value ("not the coffee").
    ends = {start}
    if start > 0 and keys[start - 1] in lang.function_words:
        ends.add(start - 1)
    for begin, end in _phrase_spans(lang.contrast_markers, keys[:start]):
        if end not in ends or (end - begin == 1 and keys[begin] in suppressed):
            continue
        # A bare negator is a contrast only after a comma or a joiner
        # ("tea, not coffee", "tea and not coffee"); "is not a smoker" is
        # the negation of the clause, which polarity judges.
        single = end - begin == 1 and lang.is_negator(keys[begin], suppressed)
        previous = tokens[first + begin - 1] if first + begin > first else None
        if single and not (previous is not None and (
                previous.text in _BOUNDARIES or previous.key in lang.clause_joiners
                or previous.key in lang.coordinators)):
            continue
        return 'value_set_aside'
    # "prefers trains to planes": what a preference is compared with is set aside.
    preferring = [index for index in range(first, value_first)
                  if tokens[index].key in lang.preference_verbs]
    if preferring and any(keys[end - 1] in lang.preference_contrasts
                          and first + end - 1 > preferring[0] for end in ends if end > 0):
        return 'value_set_aside'
    if tokens[value_first].is_number:
        if any(end in ends and end == start for _, end in _phrase_spans(
                lang.approximators, keys[:start])):
            return 'value_approximate'
        after = [token.key for token in tokens[value_stop:stop]]
        if after and _phrase_lengths(lang.approximators_after, after, 0):
            return 'value_approximate'
    return None


def _other_clause(lang, tokens, after_subject, value_first):
    """
    Return 'value_in_other_clause' when a complementizer or relative pronoun separates them.

    "You remember that Carl plays chess": the chess is Carl's; "Bob lives
    near a farmer who rides horses": the horses are the farmer's. A "that"
    right before the value (or its article) is a determiner ("likes that café").
    """
    index = after_subject
    while index < value_first:
        token = tokens[index]
        index += 1
        if not token.is_word:
            continue
        if token.key in lang.relative_pronouns:
            # "Bob Stone, who is my neighbour, drives a taxi": a clause about
            # the subject itself, closed by a comma before the value.
            about_subject = index - 1 == after_subject or (
                index - 2 == after_subject and tokens[after_subject].text == ',')
            closing = next((position for position in range(index, value_first)
                            if tokens[position].text == ','), None)
            if not about_subject or closing is None:
                return 'value_in_other_clause'
            index = closing + 1
            continue
        if token.key in lang.complementizers:
            rest = tokens[index + 1:value_first]
            if len(rest) > 1 or (rest and rest[0].key not in lang.function_words):
                return 'value_in_other_clause'
    return None


def _polarity_failure(c, tokens, first, stop, value_span, value_stop, in_names, suppressed):
    """
    Return the polarity failure: the evidence's negation and the predicate's must agree.

    Negators inside names, inside the value and in a contrast after the value
    do not negate the clause. A dislike predicate (dislikes, hates) carries
    the negation of an aversion idiom ("can't stand", "is no fan of").
    """
    lang = c.lang
    parts = set(c.predicate.split('_'))
    contrast_at = stop
    keys_after = [token.key for token in tokens[value_stop:stop]]
    for begin, _ in _phrase_spans(lang.contrast_markers, keys_after):
        contrast_at = min(contrast_at, value_stop + begin)
    indices = [index for index in range(first, contrast_at)
               if tokens[index].is_word and not in_names(tokens[index])
               and not (value_span[0] <= tokens[index].start
                        and tokens[index].end <= value_span[1])
               and not _is_abbreviation(tokens, index, lang)]
    keys = [tokens[index].key for index in indices]
    negating = [position for position, key in enumerate(keys)
                if lang.is_negator(key, suppressed)]
    phrases = _phrase_spans(lang.negating_phrases, keys)
    if c.predicate in lang.aversion_predicates or parts & lang.aversion_predicates:
        idioms = _phrase_spans(lang.aversion_phrases, keys)
        negating = [position for position in negating
                    if not any(begin <= position < end for begin, end in idioms)]
        phrases = [span for span in phrases
                   if not any(begin <= span[0] < end for begin, end in idioms)]
    negated = bool(negating or phrases)
    said = {keys[position] for position in negating}
    carries = bool(parts & (lang.predicate_negators | said))
    if negated and not carries:
        return 'negation_not_carried'
    if carries and not negated and parts & lang.predicate_negators:
        return 'negation_not_said'
    return None


def _names_relation(lang, tokens, first, value_first, value_stop, stop):
    """Return True for "... is <value>'s <at most 3 words>" ending the evidence."""
    before = tokens[value_first - 1] if value_first > first else None
    rest = tokens[value_stop:stop]
    return (before is not None and before.is_word and before.key in lang.copulas
            and 0 < len(rest) <= _POSSESSED_MAX_WORDS
            and all(token.is_word and not token.key.endswith(lang.apostrophe_suffixes)
                    for token in rest))


def _other_subject(lang, tokens, after_subject, value_first, same):
    """
    Look for another subject between the subject and the value.

    Returns (a person reference opens a clause there, or more is there than
    is checked; the word groups that would be another subject if they named
    a known entity): admission rejects on the first and asks the store about
    the second. Every group of content words between them is asked
    ("Bob lives near Ada, who ...", "Ada met Bob in Paris"), except names
    coordinated with the subject ("Ada and Bob are vegan").
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
    start = after_subject
    if start < value_first and tokens[start].is_word and tokens[start].key in lang.coordinators:
        start += 1
        while start < value_first and tokens[start].is_word and (
                tokens[start].key not in lang.function_words):
            start += 1
    content = [index for index in range(start, value_first)
               if tokens[index].is_word and tokens[index].key not in lang.function_words]
    for position, index in enumerate(content):
        words = []
        for following in content[position:position + _NAME_MAX_WORDS]:
            if following != index + len(words):
                break
            words.append(tokens[following].text)
            candidates.append(' '.join(words))
    candidates = tuple(dict.fromkeys(candidates))
    if len(candidates) > _CANDIDATES_MAX:
        return True, ()
    return False, candidates
