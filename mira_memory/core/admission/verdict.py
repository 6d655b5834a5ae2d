# SPDX-License-Identifier: Apache-2.0
"""
The grounding verdict: is the evidence a plain assertion, by the operator, about the subject.

The literal admission rules (proposal_rules.py) only check that the
evidence, subject and value were said. The grounding rules check that what
was said is what would be stored, in stages that each read the turn's one
Analysis (text.py):

1. sentence_language.py: the text is in a language the rules have data for;
2. evidence_shape.py (over the clauses of clauses.py): the evidence lies
   inside one sentence, starts where a clause starts and ends where one
   ends, and is not a question;
3. scope.py: no trigger's scope reaches it (a negation from outside, a
   hedge, report, condition, time scope, future, ended past, question tag,
   retraction or sarcasm marker), and no later sentence takes it back;
4. anchors.py: the subject opens the clause and is not a mere possessor,
   the value is a complete phrase that was asserted, and the predicate
   carries the negation that governs the value (where the subject and the
   value are said: name_spans.py).

This is a conservative reading, not a parser: when the rules cannot tell
that the operator plainly stated the proposal, they refuse it with the
reason, and the operator can say it again plainly.
"""

from dataclasses import dataclass
import functools
import itertools
from typing import NamedTuple, Optional, Tuple

from mira_memory.core.admission import anchors, clauses, evidence_shape, name_spans, scope
from mira_memory.core.admission import sentence_end, sentence_language
from mira_memory.core.admission.normalize import find, fold, NormalizationError, normalize_key
from mira_memory.core.admission.operator_turn import Turn
from mira_memory.core.admission.text import Claim, occurrences, QUOTES
from mira_memory.core.admission.text import TERMINATORS, token_range, tokenize

# Failures: the rule family decides the reason (admission maps it); the name
# picks the fixed error sentence.
CLAUSE = 'clause'
SUBJECT = 'subject'
VALUE = 'value'
POLARITY = 'polarity'

_PLAIN = 'so it is not a plain statement; nothing was written.'
# What a decision record quotes (describe): at most this many triggers of an
# admitted sentence, each quotation at most this long.
_DESCRIBED_MAX = 3
_QUOTED_MAX = 60
_DIRECTIONS = {'forward': 'forward', 'backward': 'backward', 'both': 'both ways'}
ERRORS = {
    'unclaimed_language': (
        CLAUSE, 'The sentence is in a language the rules have no data for, so they cannot tell '
                'that it is a plain statement; nothing was written.'),
    'not_one_sentence': (
        CLAUSE, 'The evidence is not inside one sentence of the utterance; nothing was written.'),
    'question': (
        CLAUSE, 'The evidence is part of a question, not a statement; nothing was written.'),
    'not_a_clause': (
        CLAUSE, 'The evidence is not one complete clause: it must start and end at a sentence '
                'or clause boundary (after an allowed lead-in); nothing was written.'),
    'denied': (
        CLAUSE, 'The evidence is doubted, denied or imagined ("it is false that", "in the '
                f'film"), {_PLAIN}'),
    'hedged': (
        CLAUSE, f'The evidence is hedged ("maybe", "I think", "probably"), {_PLAIN}'),
    'modal': (
        CLAUSE, f'The evidence is governed by a modal ("would", "could", "should"), {_PLAIN}'),
    'reported': (
        CLAUSE, 'The evidence is someone else\'s claim ("she says", "according to"), '
                f'{_PLAIN}'),
    'conditional': (
        CLAUSE, f'The evidence is conditional or hypothetical ("if", "in case"), {_PLAIN}'),
    'future': (
        CLAUSE, 'The evidence speaks of a plan or the future, not of what is durably true; '
                'nothing was written.'),
    'past_ended': (
        CLAUSE, 'The evidence speaks of a past state that ended ("used to"), not of what is '
                'durably true; nothing was written.'),
    'not_durable': (
        CLAUSE, 'The evidence is scoped to now (today, for now, this week...), so it is not '
                'durable knowledge; nothing was written.'),
    'negated_outside': (
        CLAUSE, 'The evidence is governed by a negation outside it; nothing was written.'),
    'retracted': (
        CLAUSE, 'The speaker takes the statement back or corrects it ("no wait", "just '
                'kidding"); nothing was written.'),
    'sarcastic': (
        CLAUSE, f'The evidence is marked as sarcasm or irony ("yeah right"), {_PLAIN}'),
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
    # Short word groups set off by a comma right around the evidence ("Ada,
    # you like tea."): for a second-person subject, one that names another
    # entity than the robot is the one addressed.
    addressee_candidates: Tuple[str, ...] = ()
    # The trigger that decided, for a person who reviews it: the one whose
    # scope reached the evidence (a refusal), or those of the sentence the
    # rules read and let pass (an admission). A Decider: worked out into
    # words (describe) only when someone keeps them.
    decider: Optional['Decider'] = None

    @property
    def decided_by(self):
        """Return the words of the trigger that decided ('' when none did)."""
        return str(self.decider) if self.decider is not None else ''

    @property
    def rule(self):
        """Return the rule family of the failure (CLAUSE, SUBJECT, VALUE, POLARITY)."""
        return ERRORS[self.failure][0] if self.failure else None

    @property
    def error(self):
        """Return the fixed error sentence of the failure."""
        return ERRORS[self.failure][1] if self.failure else ''


def ground(utterance, evidence, subject, value, predicate, *, relationship=False, lang=None,
           vocatives=()):
    """
    Check the grounding rules for an evidence that the literal rules already found.

    utterance is the operator Turn, or its text (read into a Turn here);
    lang is the merged language data (default: every shipped language file);
    vocatives are the robot's names, which may address it ("ok mira, ...").
    See ground_turn.
    """
    turn = Turn.of(utterance, lang) if isinstance(utterance, Turn) else Turn(
        '', '', utterance, lang)
    if turn.folded is None:
        return Grounding('not_a_clause')
    try:
        span = find(fold(evidence), turn.folded)
    except NormalizationError:
        span = None
    if span is None:
        return Grounding('not_a_clause')
    return ground_turn(turn, span, subject, value, predicate, relationship=relationship,
                       vocatives=vocatives)


def ground_turn(turn, span, subject, value, predicate, *, relationship=False, vocatives=(),
                forms=(None, None)):
    """
    Check the grounding rules for the evidence found at span (start, end) of the turn's display.

    Every whole-word occurrence of the evidence's wording in the utterance is
    tried; the proposal is grounded when one occurrence satisfies every rule.
    When none does, the failure of the first occurrence is returned. Only the
    first few occurrences are tried, so a long repetitive utterance stays
    cheap. forms: the subject's and the value's Folded forms when the caller
    has them (else they are folded here).
    """
    analysis = turn.analysis
    if analysis is None:
        return Grounding('not_a_clause')
    wording = analysis.display[span[0]:span[1]]
    claim = Claim(turn.language, analysis, subject, value, predicate, relationship,
                  tuple(filter(None, map(_name_keys, vocatives))), *forms)
    first_failure = None
    for start in itertools.islice(occurrences(wording, analysis.display),
                                  name_spans.OCCURRENCES_MAX):
        verdict = _ground_occurrence(claim, start, start + len(wording))
        if verdict.failure is None:
            return verdict
        first_failure = first_failure or verdict
    return first_failure or Grounding('not_a_clause')


@functools.lru_cache(maxsize=8)
def _name_keys(name):
    """Return a robot name's word keys (the robot profile: the same few names every turn)."""
    try:
        return tuple(token.key for token in tokenize(normalize_key(name)) if token.is_word)
    except NormalizationError:
        return ()


def _structures(claim):
    return lambda sentence: clauses.structure(claim.analysis, sentence, claim.lang)


def _ground_occurrence(claim, start, end):
    lang, analysis, tokens = claim.lang, claim.analysis, claim.analysis.tokens
    evidence_range = token_range(tokens, start, end)
    if evidence_range is None:
        return Grounding('not_a_clause')
    first, stop = evidence_range
    # The evidence may include its own sentence's terminator and closing quotes.
    while stop > first and not tokens[stop - 1].is_word and (
            tokens[stop - 1].text in TERMINATORS or tokens[stop - 1].text in QUOTES):
        stop -= 1
    while first < stop and tokens[first].text in QUOTES:
        first += 1
    sentence = analysis.sentence_at(first)
    if sentence is None or stop > sentence.end or first >= stop:
        return Grounding('not_one_sentence')
    structures = _structures(claim)
    structure_ = structures(sentence)

    # Spans the scans below must not read as grammar: the subject's name, and
    # a relationship's value (it names the related entity).
    window = (tokens[first].start, tokens[stop - 1].end)
    subject_span = name_spans.find_span(claim, claim.subject_form, window) or (
        name_spans.genitive_span(lang, claim.subject, analysis.display, window))
    value_spans = name_spans.value_spans(claim, window)
    names = [subject_span] if subject_span else []
    if claim.relationship:
        names.extend(value_spans)

    reached = scope.reaching(claim, structure_, first, stop, value_spans, names)
    failure, addressees = None, ()
    if not reached or sentence.question or any(
            key in lang.question_openers for key in analysis.keys[sentence.start:first + 1]):
        # (A trigger that reaches the evidence decides, unless it is a
        # question: where the evidence stands is not read twice for nothing.)
        failure, addressees = evidence_shape.shape_failure(claim, structure_, sentence, first,
                                                           stop, subject_span)
    if failure == 'question' or (failure and not reached):
        return Grounding(failure)
    if reached:
        # ("Bob says that | Ada likes tea" is refused as reported, not as a cut
        # clause.) A value a contrast set aside is named as such: "born in
        # 1987, not 1998 like the website says" with 1998.
        set_aside = None
        if any(key in lang.contrast_markers or key in lang.preference_contrasts
               for key in analysis.keys[first:stop]):
            marks = anchors.marks_of(lang, analysis, structure_,
                                     scope.occurrences(claim, structure_))
            anchored = anchors.judge(claim, anchors.Occurrence(
                structure_, first, stop, subject_span, tuple(value_spans), tuple(names),
                scope.negations(claim, structure_, (first,)), marks))
            if anchored.failure == 'value_set_aside':
                set_aside = anchored.failure
        return Grounding(set_aside or reached[0].trigger.failure,
                         decider=Decider(claim, structure_, (reached[0],), first, stop, True))
    negations = scope.negations(claim, structure_, openers=(first,))
    outside = next((occurrence for occurrence, covered in negations
                    if not (first <= occurrence.start and occurrence.stop <= stop)
                    and not _inside(tokens, occurrence, names)
                    and covered.intersection(range(first, stop))), None)
    if outside is not None:
        return Grounding('negated_outside',
                         decider=Decider(claim, structure_, (outside,), first, stop, True))
    if sentence_end.tag_after(claim, structure_, stop, sentence):
        return Grounding('question')
    # (Read after the triggers: a sentence they already refuse needs no
    # language test, and the reason is the same.)
    spoken = [subject_span] if subject_span else []
    if any(sentence_language.unclaimed(claim, structures(other), spoken + value_spans)
           for other in analysis.sentences):
        return Grounding('unclaimed_language')
    failure = sentence_end.later_sentence_failure(claim, sentence, structures)
    if failure:
        return Grounding(failure)
    marks = anchors.marks_of(lang, analysis, structure_, scope.occurrences(claim, structure_))
    anchored = anchors.judge(claim, anchors.Occurrence(
        structure_, first, stop, subject_span, tuple(value_spans), tuple(names), negations,
        marks))
    if anchored.failure is None:
        # Where the evidence ends is judged after who and what it is about:
        # "rosa's husband is a paramedic | with ..." is about the husband.
        failure = evidence_shape.end_failure(claim, structure_, stop,
                                             scope.occurrences(claim, structure_))
        if failure:
            return Grounding(failure)
    passed = scope.occurrences(claim, structure_)[:_DESCRIBED_MAX]
    return Grounding(anchored.failure, anchored.other_subject_found,
                     anchored.other_subject_candidates, anchored.longer_subject_candidates,
                     addressees if anchored.failure is None else (),
                     Decider(claim, structure_, passed, first, stop, False)
                     if passed and anchored.failure is None else None)


class Decider(NamedTuple):
    """The trigger occurrences that decided, with what describe() needs to say so."""

    claim: Claim
    structure: object
    occurrences: tuple
    first: int
    stop: int
    reached: bool

    def __str__(self):
        return '; '.join(describe(self.claim, self.structure, occurrence, self.first,
                                  self.reached, self.stop)
                         for occurrence in self.occurrences)


def describe(claim, structure_, occurrence, first, reached=True, stop=None):
    """
    Return what a trigger occurrence is, for a person: class, words, position and scope.

    'hedge "I think" at characters 21-28, reach sentence, both ways, governs
    "Ada likes tea"': the characters are those of the utterance's display
    form; a trigger the rules let pass says why (a pseudo-trigger "asserts",
    a negation inside the evidence [first, stop) is the predicate's own,
    any other "does not reach the evidence").
    """
    tokens, display = claim.analysis.tokens, claim.analysis.display
    start, end = tokens[occurrence.start].start, tokens[occurrence.stop - 1].end
    trigger = occurrence.trigger
    governed = ', '.join(
        '"%s"' % _shortened(display[tokens[begin].start:tokens[stop - 1].end])
        for begin, stop in scope.scope(claim, structure_, occurrence, openers=(first,))
        if stop > begin) or 'nothing'
    text = '%s "%s" at characters %d-%d, reach %s, %s, governs %s' % (
        trigger.kind, _shortened(display[start:end]), start, end, trigger.reach,
        _DIRECTIONS[trigger.direction], governed)
    if reached:
        return text
    if trigger.kind == 'pseudo':
        return text + ': asserts'
    if trigger.kind == 'negation' and first <= occurrence.start and occurrence.stop <= stop:
        return text + ": the predicate's own"
    return text + ': does not reach the evidence'


def _shortened(text):
    return text if len(text) <= _QUOTED_MAX else text[:_QUOTED_MAX - 3] + '...'


def _inside(tokens, occurrence, names):
    return any(span[0] <= tokens[occurrence.start].start
               and tokens[occurrence.stop - 1].end <= span[1] for span in names)
