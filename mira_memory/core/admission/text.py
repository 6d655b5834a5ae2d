# SPDX-License-Identifier: Apache-2.0
"""
The utterance as the grounding rules read it: tokens and sentences, built once per turn.

`analysis_of` reads a folded utterance (normalize.Folded: its display form,
NFKC with collapsed whitespace, and its folded form) into tokens (words with
their folded keys, numbers as one token, punctuation marks) and sentences.
The operator turn (operator_turn.Turn) builds it once; every later stage
(clauses, scopes, anchors) reads the same Analysis, and the stages keep what
they work out per sentence on it, so one turn is analysed once however many
occurrences and candidates are judged against it. Nothing here outlives the
turn: no module keeps operator text.
"""

from dataclasses import dataclass
import re
from typing import NamedTuple, Optional
import unicodedata

from mira_memory.core.admission.normalize import EMOJI_JOINER, EMOJI_KEYCAP, EMOJI_PRESENTATION
from mira_memory.core.admission.normalize import find, fold, Folded, is_emoji_base
from mira_memory.core.admission.normalize import is_emoji_continuation, KEYCAP_BASES
from mira_memory.core.admission.normalize import NormalizationError

# Sentence ends and clause boundaries. Quote marks are transparent: they
# neither end nor join anything.
TERMINATORS = frozenset('.!?\u2026\u3002\uff01\uff1f\u203c\u2047\u2048\u2049\u061f')
QUESTION_MARKS = frozenset('?\uff1f\u2047\u2048\u2049\u061f')
BOUNDARIES = frozenset(',;:()[]{}\u2014\u2013-\u3001\uff0c\uff1b\uff1a/')
# Boundaries that coordinate two clauses of equal rank, like "and".
COORDINATING_MARKS = frozenset(';\uff1b')
QUOTES = frozenset('"\'\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e\u201a\u2039\u203a`')
_WORD_CATEGORIES = frozenset(('Mn', 'Mc', 'Me', 'Cf'))
# Inside a word these join its parts ("O'Brien", "doesn't", "tea-cakes").
_JOINERS = frozenset("'\u2019-\u2010\u2011")
# Between two digits these make one number ("3.5", "1,200", "7:30", "3/4").
_NUMBER_JOINERS = frozenset('.,:/')
_APOSTROPHES = str.maketrans({'\u2019': "'", '\u2018': "'", '\u2010': '-', '\u2011': '-'})
# A pictograph or other symbol (an emoji, "☺") stands between clauses like a comma.
_SYMBOL_CATEGORIES = frozenset(('So', 'Sk'))


class Token(NamedTuple):
    """
    One word, number or punctuation mark of the display text, with its character span.

    (A named tuple: a request makes a few hundred, and a frozen dataclass
    takes two and a half times as long to build.)
    """

    text: str
    key: str
    start: int
    end: int
    is_word: bool

    @property
    def is_number(self):
        return self.is_word and self.key[:1].isdigit()

    @property
    def is_symbol(self):
        """Return True for an emoji or other pictograph, which separates clauses."""
        return not self.is_word and (
            len(self.text) > 1 or unicodedata.category(self.text) in _SYMBOL_CATEGORIES)


@dataclass(frozen=True)
class Sentence:
    """One sentence: its token range (terminators excluded) and whether it asks."""

    start: int          # first token index
    end: int            # one past the last content token (terminators excluded)
    question: bool


class Analysis:
    """One utterance analysed once: display and folded text, tokens and sentences."""

    __slots__ = ('folded', 'display', 'tokens', 'keys', 'sentences', 'cache')

    def __init__(self, folded, tokens, sentences):
        self.folded = folded
        self.display = folded.display
        self.tokens = tokens
        self.keys = tuple(token.key for token in tokens)
        self.sentences = sentences
        # What later stages work out once per sentence (clauses, triggers).
        self.cache = {}

    def sentence_at(self, index):
        """Return the sentence holding token index, or None."""
        return next((s for s in self.sentences if s.start <= index < max(s.end, s.start + 1)),
                    None)


def is_word_char(char):
    """Return True for a character that belongs to a word (a letter, digit, mark or joiner)."""
    # Marks belong to their letter; an invisible format character (soft
    # hyphen, joiners) is read as joining two words into one, so "Ada\u00adm"
    # never yields the name "Ada". (The text layer refuses such characters;
    # this keeps the grammar conservative should one get through.)
    # (An emoji presentation selector belongs to the emoji before it, never to a word.)
    return char.isalnum() or char == '_' or (
        unicodedata.category(char) in _WORD_CATEGORIES and char not in EMOJI_PRESENTATION)


def key_of(text):
    """Return the comparison key of a word: case folded, typographic apostrophes as '."""
    return text.casefold().translate(_APOSTROPHES)


# The same split for ASCII text in one regular expression (the common case,
# several times per request): a number may hold ".,:/" between two digits,
# any word "'" or "-" before a word character; any other character but a
# space is a token of its own. test_grounding.py checks it against _tokenize.
_ASCII_TOKEN = re.compile(
    r"[0-9]\w*(?:(?:['-]|(?<=[0-9])[.,:/](?=[0-9]))\w+)*"
    r"|\w+(?:['-]\w+)*"
    r'|[^\s\x1c-\x1f]', re.ASCII)  # (str.isspace() counts \x1c-\x1f as space)


def tokenize(text):
    """Split display text into words, numbers and punctuation marks (spaces dropped)."""
    if text.isascii():
        return [Token(word, word.lower(), match.start(), match.end(),
                      word[0].isalnum() or word[0] == '_')
                for match in _ASCII_TOKEN.finditer(text) for word in (match.group(),)]
    return _tokenize(text)


def _tokenize(text):
    """tokenize() for any text, one character at a time."""
    tokens = []
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char.isspace() or char in EMOJI_PRESENTATION:
            # (A selector no emoji took, as NFKC leaves it after "ℹ" read as "i".)
            index += 1
        elif _starts_emoji(text, index):
            stop = _emoji_end(text, index)
            cluster = text[index:stop]
            tokens.append(Token(cluster, _emoji_key(cluster), index, stop, False))
            index = stop
        elif is_word_char(char):
            start = index
            index += 1
            while index < length:
                if is_word_char(text[index]):
                    index += 1
                elif (text[index] in _JOINERS and index + 1 < length
                      and is_word_char(text[index + 1])):
                    index += 2
                elif (text[index] in _NUMBER_JOINERS and index + 1 < length
                      and text[index - 1].isdigit() and text[index + 1].isdigit()
                      and text[start].isdigit()):
                    # A number is one word: "3.5" is never "3" and "5".
                    index += 2
                else:
                    break
            word = text[start:index]
            tokens.append(Token(word, key_of(word), start, index, True))
        else:
            tokens.append(Token(char, key_of(char), index, index + 1, False))
            index += 1
    return tokens


def _starts_emoji(text, index):
    """Return True where an emoji cluster starts: a pictograph, or a keycap ("1️⃣")."""
    char = text[index]
    if char in KEYCAP_BASES:
        following = text[index + 1:index + 3]
        return following[:1] == EMOJI_KEYCAP or following == '\ufe0f' + EMOJI_KEYCAP
    return is_emoji_base(char)


def _emoji_end(text, index):
    """Return the end of the emoji cluster (UAX #29, emoji sequences) that starts at index."""
    length = len(text)
    index += 1
    while index < length:
        char = text[index]
        if char == EMOJI_JOINER and index + 1 < length and is_emoji_base(text[index + 1]):
            index += 2
        elif is_emoji_continuation(char) and char != EMOJI_JOINER:
            index += 1
        else:
            break
    return index


def _emoji_key(cluster):
    """Return an emoji's key: the cluster without presentation selectors and skin tones."""
    key = ''.join(char for char in cluster
                  if char not in EMOJI_PRESENTATION and not '\U0001f3fb' <= char <= '\U0001f3ff')
    return key or cluster


def analysis_of(folded, lang):
    """Return the Analysis of a Folded utterance, with the sentence rules of lang."""
    tokens = tuple(tokenize(folded.display))
    return Analysis(folded, tokens, tuple(_sentences(tokens, lang)))


def analyse(utterance, lang):
    """Return the Analysis of an utterance text, or None when it cannot be normalized."""
    try:
        return analysis_of(fold(utterance), lang)
    except NormalizationError:
        return None


def _sentences(tokens, lang):
    """Split tokens into sentences; a full stop after an abbreviation or initial is kept."""
    sentences = []
    start = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.is_word or token.text not in TERMINATORS or keeps_sentence(tokens, index, lang):
            index += 1
            continue
        end = index
        question = False
        while index < len(tokens) and (
                tokens[index].text in TERMINATORS or tokens[index].text in QUOTES):
            question = question or tokens[index].text in QUESTION_MARKS
            index += 1
        sentences.append(Sentence(start, end, question))
        start = index
    if start < len(tokens):
        sentences.append(Sentence(start, len(tokens), False))
    return sentences


def keeps_sentence(tokens, index, lang):
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
        return not ends_text(tokens, index + 1)
    # A full stop inside a word-like run (3.5, example.org) has no space after it.
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return after is not None and after.is_word and after.start == tokens[index].end


def ends_text(tokens, index):
    """Return True when only terminators and quotes are left from index on."""
    while index < len(tokens) and not tokens[index].is_word and (
            tokens[index].text in TERMINATORS or tokens[index].text in QUOTES):
        index += 1
    return index == len(tokens)


def token_range(tokens, start, end):
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


def occurrences(needle_text, haystack, offset=0):
    """Yield char offsets of needle_text in haystack at word boundaries (locate's notion)."""
    index = haystack.find(needle_text)
    while index != -1:
        stop = index + len(needle_text)
        clean_start = index == 0 or not (
            is_word_char(haystack[index - 1]) and is_word_char(haystack[index]))
        clean_end = stop == len(haystack) or not (
            is_word_char(haystack[stop - 1]) and is_word_char(haystack[stop]))
        if clean_start and clean_end:
            yield offset + index
        index = haystack.find(needle_text, index + 1)


def find_spans(needle, haystack, start, end):
    """
    Yield the (start, end) spans of needle in the display window [start, end) of haystack.

    needle and haystack are Folded. The first whole-word occurrence after
    normalization gives the haystack's own wording; every occurrence of that
    wording in the window follows.
    """
    found = find(needle, haystack, start, end)
    if found is None:
        return
    wording = haystack.display[found[0]:found[1]]
    for begin in occurrences(wording, haystack.display[start:end], start):
        yield begin, begin + len(wording)


def phrase_lengths(phrases, keys, index):
    """Return the lengths of the phrases (indexed by first key) that start at keys[index]."""
    return [len(phrase) for phrase in phrases.get(keys[index], ())
            if tuple(keys[index:index + len(phrase)]) == phrase]


def has_phrase(phrases, keys):
    """Return True when one of phrases (indexed by first word) occurs in keys."""
    return any(phrase_lengths(phrases, keys, index) for index in range(len(keys)))


def phrase_spans(phrases, keys):
    """Return the (start, stop) positions in keys of every occurrence of one of phrases."""
    return [(index, index + length) for index in range(len(keys))
            for length in phrase_lengths(phrases, keys, index)]


@dataclass(frozen=True)
class Claim:
    """What the stages judge: the analysed utterance, the proposal's words, the robot's names."""

    lang: object
    analysis: Analysis
    subject: str
    value: str
    predicate: str
    relationship: bool
    # The robot's names as token keys: "ok mira, ..." addresses the robot.
    vocatives: tuple
    # The subject's and the value's Folded forms (None: folded here, once;
    # still None when the text cannot be normalized).
    subject_form: Optional[Folded] = None
    value_form: Optional[Folded] = None

    @property
    def tokens(self):
        return self.analysis.tokens

    def __post_init__(self):
        # (Past the frozen guard: set once, here, like the fields.)
        if self.subject_form is None:
            object.__setattr__(self, 'subject_form', _folded_or_none(self.subject))
        if self.value_form is None:
            object.__setattr__(self, 'value_form', _folded_or_none(self.value))


def _folded_or_none(text):
    try:
        return fold(text)
    except NormalizationError:
        return None
