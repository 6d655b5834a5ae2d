# SPDX-License-Identifier: Apache-2.0
"""
Anchors: the subject and the value in the evidence, and the predicate's polarity.

Once the evidence is found to be a plain statement (evidence_shape.py,
scope.py), these rules check that it states the proposal, in this order
(the first failure is the answer):

- subject (subject_anchor.py): the subject reference opens the evidence
  clause and is not only the possessor of a person or of something the
  predicate does not name;
- value (value_anchor.py): a complete phrase of the evidence that carries
  meaning, and what was asserted (not what a contrast sets aside, not a
  number cut from its approximation); then the subject again: the value is
  not in a clause of its own ("... that Carl plays chess");
- polarity (polarity.py): the predicate carries the negation that governs
  the value, and only then.

Word groups that might be names (another entity between the subject and the
value, a longer name the subject starts) go back to admission, which asks
the store. Where names and values are said is name_spans.py's.
"""

from dataclasses import dataclass
from typing import NamedTuple, Optional, Tuple

from mira_memory.core.admission.evidence_shape import NAME_MAX_WORDS, walk
from mira_memory.core.admission.name_spans import cover
from mira_memory.core.admission.normalize import normalize_key
from mira_memory.core.admission.polarity import polarity_failure
from mira_memory.core.admission.subject_anchor import genitive_failure, inverted, other_clause
from mira_memory.core.admission.subject_anchor import other_subject, possessor_failure
from mira_memory.core.admission.value_anchor import cut_short, set_aside, value_failure


@dataclass(frozen=True)
class Anchored:
    """What the anchor rules say: a failure, or what admission must still ask the store."""

    failure: Optional[str]
    # A person reference (or more clauses or word groups than are checked)
    # stands between the subject and the value, or these word sequences do
    # and would be another subject if they name an entity.
    other_subject_found: bool = False
    other_subject_candidates: Tuple[str, ...] = ()
    # The subject followed by the next words, as (name, only a possessor).
    longer_subject_candidates: Tuple[Tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class Marks:
    """What scope.py found that the anchor rules read: pseudo-triggers and corrections."""

    pseudo: frozenset = frozenset()       # token indices inside a pseudo-trigger
    retracted: frozenset = frozenset()    # token indices inside a retraction
    # (start, stop) of pseudo-triggers that hold a negator: "never says no to"
    affirmations: tuple = ()
    # The sentence is in a language that capitalizes every noun (German).
    nouns_capitalized: bool = False

    def affirmed(self, first, stop):
        """Return True when a double negation that asserts stands in [first, stop)."""
        return any(first <= begin and end <= stop for begin, end in self.affirmations)


class Occurrence(NamedTuple):
    """One occurrence of the evidence in its sentence, as the anchor rules read it."""

    structure: object               # the sentence's clauses.Structure
    first: int                      # the evidence's token range [first, stop)
    stop: int
    subject_span: Optional[Tuple[int, int]]   # character spans in the display text
    value_spans: Tuple[Tuple[int, int], ...]
    # Spans the rules must not read as grammar (the subject's name, a
    # relationship's value: it names the related entity).
    names: Tuple[Tuple[int, int], ...]
    negations: tuple                # scope.negations of the sentence
    marks: Marks

    def in_names(self, token):
        """Return True for a token inside one of the names."""
        return any(span[0] <= token.start and token.end <= span[1] for span in self.names)


class _SubjectAt(NamedTuple):
    """Where the subject stands: its token range and whether it is said as a possessor."""

    first: int
    stop: int
    possessive: bool


def marks_of(lang, analysis, structure_, found):
    """Return the Marks of a sentence's trigger occurrences."""
    pseudo, retracted, affirmations = set(), set(), []
    for occurrence in found:
        span = range(occurrence.start, occurrence.stop)
        if occurrence.trigger.kind == 'pseudo':
            pseudo.update(span)
            if any(lang.is_negator(analysis.keys[index]) for index in span):
                affirmations.append((occurrence.start, occurrence.stop))
        elif occurrence.trigger.kind == 'retraction':
            retracted.update(span)
    capitalized = (structure_.language or structure_.clause_language) in lang.capitalized_nouns
    return Marks(frozenset(pseudo), frozenset(retracted), tuple(affirmations), capitalized)


def judge(c, occurrence):
    """Return the Anchored verdict of the subject, the value and the polarity."""
    lang, tokens = c.lang, c.tokens
    structure_, first, stop = occurrence.structure, occurrence.first, occurrence.stop
    subject_span = occurrence.subject_span
    if subject_span is None:
        return Anchored('subject_partial')
    subject_tokens = cover(lang, tokens, *subject_span)
    if subject_tokens is None:
        return Anchored('subject_partial')
    subject_first, subject_stop, possessive = subject_tokens
    # "Daan z'n vrouw werkt ...": a possessive word right after the name
    # makes it a possessor, as "Daan's" does.
    if subject_stop < stop and tokens[subject_stop].key in lang.possessive_linkers:
        possessive = True
    subject_key = normalize_key(c.subject)
    same = lang.robot_references if subject_key in lang.robot_references else frozenset()
    # A pronoun resuming the name ("Marek he is ...") and the subject said
    # again after a false start may stand before the value too.
    allowed, _ = walk(c, (first,), structure_.end, lead=True, prefixes=True, also=same,
                      skipped=structure_.skipped)
    bracket = (structure_.language or structure_.clause_language) in lang.verb_bracket
    # "d'Odile": a name opened by an elided preposition is said as a possessor.
    elided = tokens[subject_first].start < subject_span[0]
    if elided or subject_first not in allowed and not (
            bracket and inverted(lang, tokens, first, subject_first)):
        failure = genitive_failure(c, first, subject_span, subject_first, subject_stop, stop)
        if failure:
            return Anchored(failure)
        possessive = False  # "la ville préférée d'Étienne est ...": judged just now
    subject = _SubjectAt(subject_first, subject_stop, possessive)
    first_failure = None
    for value_span in occurrence.value_spans or [None]:
        verdict = _value_and_polarity(c, occurrence, subject, value_span)
        if verdict.failure is None:
            return verdict
        first_failure = first_failure or verdict
    return first_failure


def _value_and_polarity(c, occurrence, subject, value_span):
    """
    Return the Anchored verdict of one occurrence of the value.

    The value's own checks and the subject's interleave, in this order: the
    value is a complete phrase that carries meaning; a possessed subject is
    what the clause describes; nothing of the value's phrase is cut off
    after it; it was asserted; it is in the subject's clause; the polarity.
    """
    lang, tokens = c.lang, c.tokens
    stop, marks = occurrence.stop, occurrence.marks
    subject_first, subject_stop, possessive = subject
    failure, covered = value_failure(c, occurrence, value_span)
    if failure:
        return Anchored(failure)
    value_first, value_stop, value_possessive = covered
    # Who the clause is about is judged before where the value ends: "max's dad
    # built the revolving stage back in ..." is about the dad.
    if possessive and value_first < subject_stop:
        return Anchored('value_partial')

    # "Ada's an early riser": the 's is "is" or "has", not a possessive.
    if possessive and tokens[subject_stop - 1].key.endswith("'s") and (
            value_first == subject_stop or tokens[subject_stop].key in lang.contraction_followers):
        possessive = False
    subject_key = normalize_key(c.subject)
    if subject_key in lang.possessive_subjects:
        possessive = True
    if possessive:
        failure = possessor_failure(c, tokens, subject_stop, value_first, stop,
                                    marks.nouns_capitalized)
        if failure:
            return Anchored(failure)

    if cut_short(c, occurrence, subject_first, value_first, value_stop, value_possessive):
        return Anchored('value_partial')
    failure = set_aside(c, occurrence, value_first, value_stop)
    if failure:
        return Anchored(failure)
    person, candidates = False, ()
    if value_first >= subject_stop:
        same = lang.robot_references if subject_key in lang.robot_references else frozenset()
        failure = other_clause(lang, tokens, subject_stop, value_first)
        if failure:
            return Anchored(failure)
        person, candidates = other_subject(lang, tokens, subject_stop, value_first, same,
                                           marks.retracted)

    polarity = polarity_failure(c, occurrence, value_span)
    if polarity:
        return Anchored(polarity)
    longer = []
    words = [token.text for token in tokens[subject_first:subject_stop]]
    for index in range(subject_stop, min(subject_stop + NAME_MAX_WORDS - 1, stop)):
        token = tokens[index]
        if possessive or not token.is_word:
            break
        suffix = next((suffix for suffix in lang.apostrophe_suffixes
                       if token.key.endswith(suffix) and len(token.key) > len(suffix)), None)
        if suffix is not None:
            words.append(token.text[:-len(suffix)])
            longer.append((' '.join(words), possessor_failure(
                c, tokens, index + 1, max(value_first, index + 1), stop) is not None))
            break
        words.append(token.text)
        longer.append((' '.join(words), False))
    return Anchored(None, person, candidates, tuple(longer))
