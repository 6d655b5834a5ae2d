# SPDX-License-Identifier: Apache-2.0
"""
Clauses: where each sentence's clauses start and end.

A sentence is cut into clauses at punctuation (comma, semicolon, colon,
dash, parentheses, an emoji), at coordinators and subordinators ("and",
"but", "so", "because", "which", "if" and their equivalents in every
language file) and, in unpunctuated speech-recognition text, at discourse
markers ("okay", "then") and at a subject pronoun or a question that
starts a new clause ("... tea she drinks it hot", "... the code does he
know it"). Each cut is a Boundary:

- a strong boundary always ends a clause: a termination ("but",
  "because", "except", ";"), a subordinator, a colon, dash, parenthesis
  or emoji, a new subject pronoun or question;
- a weak boundary (a comma, "and", "or", a soft termination such as
  "so" or "then", a discourse marker) ends a clause only when what follows
  it opens one: "Ada eats no meat, fish or eggs" is one negated list,
  "Hugo is lactose intolerant, so don't put milk in his coffee" is two
  clauses.

Fillers ("uh", "um", "äh") and a word group said twice in a row ("the the",
"Ana is um Ana is") are skipped wherever clauses are read.

Which clause words cut a sentence is its language's (sentence_language.py);
whether the evidence is one clause is evidence_shape.py's, and which
triggers reach across clauses is scope.py's.
"""

from dataclasses import dataclass
from typing import FrozenSet, NamedTuple, Tuple

from mira_memory.core.admission.sentence_language import languages
from mira_memory.core.admission.text import BOUNDARIES, COORDINATING_MARKS, phrase_lengths
from mira_memory.core.admission.text import QUOTES

STRONG = 'strong'
WEAK = 'weak'
# Kinds of boundary; what each means for a scope (scope.py).
PUNCTUATION = 'punctuation'
COORDINATOR = 'coordinator'
SOFT_TERMINATION = 'soft_termination'
TERMINATION = 'termination'
SUBORDINATOR = 'subordinator'
DISCOURSE = 'discourse'
SUBJECT = 'subject'
QUESTION = 'question'
CONTRAST = 'contrast'
_PHRASE_KINDS = {'terminations': TERMINATION, 'soft_terminations': SOFT_TERMINATION,
                 'subordinators': SUBORDINATOR, 'coordinators': COORDINATOR}
# Punctuation that always ends a clause; a comma or slash ends one only
# before what opens a clause (a list goes on after it).
_WEAK_MARKS = frozenset(',/\u3001\uff0c')
# A word group said twice in a row ("Ana is um Ana is") is at most this long.
_REPEAT_MAX_WORDS = 3


class Boundary(NamedTuple):
    """A cut between two clauses: tokens [index, after) are its marker ("," / "because")."""

    index: int
    after: int
    kind: str
    strength: str


@dataclass(frozen=True)
class Structure:
    """One sentence's clauses, worked out once per turn (Analysis.cache)."""

    start: int
    end: int
    boundaries: Tuple[Boundary, ...]
    # Fillers and the first copy of a word group said twice: read as absent.
    skipped: FrozenSet[int]
    # The sentence's language by its marker words ('' on a tie or none) and
    # the words that lose another language's reading there.
    language: str
    suppressed: FrozenSet[str]
    # The language whose closed-class words the sentence holds most of: its
    # clause words cut the sentence ('' on a tie: every language's).
    clause_language: str = ''

    def boundary_before(self, index):
        """Return the last boundary whose clause starts at or before index, or None."""
        found = None
        for boundary in self.boundaries:
            if boundary.after > index:
                break
            found = boundary
        return found

    def clause_start(self, index):
        """Return the token index where the clause holding index starts."""
        boundary = self.boundary_before(index)
        return self.start if boundary is None else boundary.after

    def clause_end(self, index):
        """Return one past the last token of the clause holding index (any boundary ends it)."""
        return next((boundary.index for boundary in self.boundaries
                     if boundary.index >= index and boundary.index > self.clause_start(index)),
                    self.end)


def structure(analysis, sentence, lang):
    """Return the Structure of a sentence of analysis (cached on it)."""
    cached = analysis.cache.get(('structure', sentence.start))
    if cached is None:
        cached = _structure(analysis, sentence, lang)
        analysis.cache[('structure', sentence.start)] = cached
    return cached


def _structure(analysis, sentence, lang):
    tokens, keys = analysis.tokens, analysis.keys
    code, clause_language = languages(lang, tokens, sentence)
    suppressed = lang.homographs.get(code, frozenset())
    own = lang.clause_words(clause_language)
    skipped = _skipped(own, tokens, sentence)
    boundaries = []
    index = sentence.start
    while index < sentence.end:
        token = tokens[index]
        if index in skipped:
            index += 1
            continue
        if not token.is_word:
            if token.text in BOUNDARIES or token.is_symbol:
                strong = token.text not in _WEAK_MARKS
                # A semicolon or an emoji ends a thought like a full stop.
                kind = (TERMINATION if token.text in COORDINATING_MARKS or token.is_symbol
                        else PUNCTUATION)
                boundaries.append(Boundary(index, index + 1, kind, STRONG if strong else WEAK))
            index += 1
            continue
        found = (_word_boundary(lang, analysis, sentence, index, skipped, own)
                 if keys[index] in lang.boundary_words else None)
        if found is None:
            index += 1
            continue
        boundaries.append(found)
        index = max(found.after, index + 1)
    return Structure(sentence.start, sentence.end, tuple(boundaries), frozenset(skipped), code,
                     suppressed, clause_language)


def _word_boundary(lang, analysis, sentence, index, skipped, own):
    """Return the Boundary a word starts at index, or None (own: the sentence's clause words)."""
    tokens, keys = analysis.tokens, analysis.keys
    key = keys[index]
    if index == sentence.start:
        return None
    for words, name in own.phrases.get(key, ()):
        if tuple(keys[index:index + len(words)]) == words:
            kind = _PHRASE_KINDS[name]
            return Boundary(index, index + len(words), kind,
                            STRONG if kind == TERMINATION else WEAK)
    kind = own.kinds.get(key)
    if kind is not None:
        return Boundary(index, index + 1, kind, STRONG if kind == TERMINATION else WEAK)
    if key in lang.discourse_markers:
        lengths = phrase_lengths(lang.discourse_markers, keys, index)
        if lengths:
            return Boundary(index, index + max(lengths), DISCOURSE, WEAK)
    previous = _previous_word(tokens, index, sentence.start, skipped)
    if (previous is not None and tokens[previous].is_word and _content(lang, keys[previous])
            and ends_phrase(lang, tokens, previous)
            and _contrast_negator(lang, analysis, index, sentence.start, sentence.end)):
        # "fenna rides a gazelle not a batavus", "trinkt nur Wasser kein Bier":
        # a negation after a complete phrase sets the next one aside.
        return Boundary(index, index, CONTRAST, STRONG)
    if not (key in own.subject_pronouns or key in lang.question_openers or (
            "'" in key and key in lang.clause_words('').subject_pronouns)):
        return None
    # A new subject or a question after a clause that ended without a
    # comma (speech recognition writes none): "... tea she drinks it hot",
    # "... the first aider does he know". After a preposition or article the
    # pronoun is an object ("con ella").
    # ("con" is listed as a value follower, not a function word, for English;
    # an object pronoun ends a clause too: "... bless her she's been ...")
    after_content = (previous is not None and tokens[previous].is_word and (
        (keys[previous] not in lang.function_words and keys[previous] not in lang.value_followers)
        or (keys[previous] in lang.persons and keys[previous] not in own.subject_pronouns)))
    if after_content and (key in own.subject_pronouns or "'" in key):
        # (A pronoun with an apostrophe is one in any language: "... she's amazing".)
        return Boundary(index, index, SUBJECT, STRONG)
    following = _next_word(tokens, index + 1, sentence.end, skipped)
    if (after_content and key in lang.question_openers and following is not None
            and (keys[following] in lang.persons or keys[following] in own.subject_pronouns)):
        return Boundary(index, index, QUESTION, STRONG)
    return None


def _content(lang, key):
    return key not in lang.function_words and key not in lang.copulas


def _contrast_negator(lang, analysis, index, start, end):
    """Return True for a negator that opens a contrast: "not a batavus", "kein Bier"."""
    key = analysis.keys[index]
    if key not in lang.negators or index + 1 >= end or any(
            lang.is_negator(analysis.keys[position]) for position in range(start, index)):
        # (A negation already in the clause: "ne mange pas de viande".)
        return False
    following = analysis.tokens[index + 1]
    return following.is_word and (key in lang.contrast_openers
                                  or following.key in lang.function_words or following.is_number)


def ends_phrase(lang, tokens, index):
    """Return True when the word at index closes a noun phrase ("a gazelle", "nur Wasser")."""
    if tokens[index].is_number:
        return True
    before = tokens[index - 1] if index > 0 else None
    return before is not None and before.is_word and (
        before.key in lang.function_words or before.is_number
        or before.key in lang.restrictives) and before.key not in lang.copulas


def _previous_word(tokens, index, start, skipped):
    index -= 1
    while index >= start and (index in skipped or tokens[index].text in QUOTES):
        index -= 1
    return index if index >= start else None


def _next_word(tokens, index, end, skipped):
    while index < end and (index in skipped or tokens[index].text in QUOTES):
        index += 1
    return index if index < end else None


def _skipped(own, tokens, sentence):
    """
    Return the fillers and the first copy of every word group said twice in a row.

    own: the sentence's clause words (English "er" is a filler, German "er" is "he").
    """
    skipped = {index for index in range(sentence.start, sentence.end)
               if tokens[index].is_word and tokens[index].key in own.fillers}
    words = [index for index in range(sentence.start, sentence.end)
             if tokens[index].is_word and index not in skipped]
    keys = [tokens[index].key for index in words]
    if len(set(keys)) == len(keys):
        return skipped  # no word twice: nothing was said twice in a row
    position = 0
    while position < len(words):
        for count in range(_REPEAT_MAX_WORDS, 0, -1):
            after = position + count
            if after + count > len(words) or keys[position] != keys[after]:
                continue
            if keys[position:after] != keys[after:after + count]:
                continue
            # Only words between them (no punctuation): "tea, tea with lemon" is a
            # list; a number said twice is two numbers.
            first, last = words[position], words[after + count - 1]
            if last - first + 1 - sum(1 for index in range(first, last + 1)
                                      if index in skipped) != 2 * count:
                continue
            if count == 1 and tokens[first].is_number:
                continue
            skipped.update(words[position:after])
            position += count - 1
            break
        position += 1
    return skipped


def opens_clause(lang, analysis, structure_, index, also=()):
    """
    Return True when the word at index (fillers skipped) opens a clause of its own.

    A subject pronoun, a negator, a termination or subordinator, a trigger
    word, a restrictive ("only"), a lead-in or interjection, an imperative
    ("..., open a window when ...") does; a noun or another verb does not,
    so "no meat, fish or eggs" and "doesn't eat meat and fish" stay one
    negated list (also: indices that open a clause anyway).
    """
    tokens, keys = analysis.tokens, analysis.keys
    index = _next_word(tokens, index, structure_.end, structure_.skipped)
    if index is None:
        return True
    if index in also:
        return True
    key = keys[index]
    following = _next_word(tokens, index + 1, structure_.end, structure_.skipped)
    if following is not None and keys[following] in lang.change_adverbs:
        # "war früher Briefträger und führt jetzt ...": a new state begins.
        return True
    own = lang.clause_words(structure_.clause_language)
    return (key in own.subject_pronouns or key in own.subordinators or key in own.terminations
            or key in own.soft_terminations or lang.is_negator(key, structure_.suppressed)
            or key in lang.change_adverbs
            or key in lang.interjection_words or bool(phrase_lengths(lang.lead_ins, keys, index))
            or bool(phrase_lengths(lang.restrictives, keys, index))
            or bool(lang.imperative_length(keys, index, structure_.clause_language))
            or (key in lang.question_openers
                and _next_is_person(lang, analysis, structure_, index))
            or (key in lang.trigger_words and key not in lang.function_words))


def _next_is_person(lang, analysis, structure_, index):
    following = _next_word(analysis.tokens, index + 1, structure_.end, structure_.skipped)
    return following is not None and analysis.keys[following] in lang.persons


def effective(lang, analysis, structure_, boundary, also=()):
    """
    Return True when a boundary ends its clause (a weak one: only before a new clause).

    also: indices that open a clause anyway (the evidence's own start), except
    after a subordinator: "It's not true that | Ada likes tea" is governed.
    """
    if boundary.strength == STRONG:
        return True
    if boundary.kind == SUBORDINATOR:
        also = ()
    return opens_clause(lang, analysis, structure_, boundary.after, also)


def has_words(analysis, structure_, start, stop):
    """Return True when a word (fillers aside) stands in tokens [start, stop)."""
    return any(analysis.tokens[index].is_word and index not in structure_.skipped
               for index in range(start, stop))
