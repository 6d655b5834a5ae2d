# SPDX-License-Identifier: Apache-2.0
"""
Polarity: the predicate carries the negation that governs the value, and only then.

A negation that governs the value (in any language, "declines to", "hardly
ever") needs a predicate that carries it (does_not_like, or a dislike
predicate for an aversion idiom such as "can't stand"), and a negating
predicate needs negated evidence. Which negations govern what is
scope.py's (scope.negations).
"""

from mira_memory.core.admission.text import phrase_spans


def polarity_failure(c, occurrence, value_span):
    """
    Return the polarity failure: the evidence's negation and the predicate's must agree.

    The evidence is negated when a negation inside it governs the value
    ("Ada does not eat meat", "Ines works the early shift and never the
    weekend" negates the weekend only); negators inside names and inside the
    value do not count. A dislike predicate (dislikes, hates) carries the
    negation of an aversion idiom ("can't stand", "is no fan of").
    """
    lang, tokens, first, stop = c.lang, c.tokens, occurrence.first, occurrence.stop
    parts = set(c.predicate.split('_'))
    value_tokens = {index for index in range(first, stop)
                    if value_span[0] <= tokens[index].start and tokens[index].end <= value_span[1]}
    idioms = []
    if c.predicate in lang.aversion_predicates or parts & lang.aversion_predicates:
        keys = [token.key for token in tokens[first:stop]]
        idioms = [(first + begin, first + end)
                  for begin, end in phrase_spans(lang.aversion_phrases, keys)]
    said = set()
    negated = False
    for negation, covered in occurrence.negations:
        if not (first <= negation.start and negation.stop <= stop):
            continue
        if occurrence.in_names(tokens[negation.start]) or negation.start in value_tokens:
            continue
        if any(begin <= negation.start < end for begin, end in idioms):
            continue
        if covered & value_tokens:
            negated = True
            said.update(token.key for token in tokens[negation.start:negation.stop])
    carries = bool(parts & (lang.predicate_negators | said))
    if negated and not carries:
        return 'negation_not_carried'
    if carries and not negated and parts & lang.predicate_negators and not idioms:
        # ("can't stand" with cannot_stand: the idiom is the predicate's own.)
        return 'negation_not_said'
    if idioms == [] and (c.predicate in lang.aversion_predicates
                         or parts & lang.aversion_predicates) and occurrence.marks.affirmed(
                             first, stop):
        # "never says no to cake" with dislikes: the double negation says yes.
        return 'negation_not_said'
    return None
