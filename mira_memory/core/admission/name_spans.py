# SPDX-License-Identifier: Apache-2.0
"""
Where a name or value is said: whole-word spans, genitive endings, the tokens a span covers.

The literal rules find the subject, the related entity and the value as
whole words of the evidence (`find_span`, `value_spans`); German and Dutch
write a name's genitive as one word ("Pauls Lieblingsstadt") and French
and Italian elide a preposition onto it ("d'Étienne"), so a name is said
there too (`genitive_span`). `cover` turns a span into the tokens it
covers, as the anchor rules read it. `names` is the same literal test for
forget, which looks for the kept utterances that name an entity.
"""

import itertools

from mira_memory.core.admission.normalize import locate, NormalizationError
from mira_memory.core.admission.normalize import normalize_key
from mira_memory.core.admission.text import find_spans, key_of, tokenize

# The value occurrences (and the evidence occurrences: verdict.py) tried: a
# bound that keeps one request's cost linear in its length.
OCCURRENCES_MAX = 4


def find_span(claim, needle, window):
    """Return the first (start, end) span of needle (Folded) in the evidence window, or None."""
    if needle is None:
        return None
    return next(iter(find_spans(needle, claim.analysis.folded, *window)), None)


def value_spans(claim, window):
    """Return the first few spans of the value in the evidence window."""
    if claim.value_form is None:
        return []
    return list(itertools.islice(find_spans(claim.value_form, claim.analysis.folded, *window),
                                 OCCURRENCES_MAX))


def _language():
    from mira_memory.core.admission.language import language  # language imports text only
    return language()


def names(name, text):
    """
    Return True when text says name: admission's literal test for a subject (rule 6).

    A whole-word occurrence after normalization (normalize.locate), or the
    name with a genitive ending (said_as_genitive). Forget uses the same
    test to find the kept utterances that name an entity; text that cannot
    be normalized names nothing.
    """
    try:
        if locate(name, text) is not None:
            return True
    except NormalizationError:
        return False
    return said_as_genitive(_language(), name, text)


def said_as_genitive(lang, name, evidence):
    """
    Return True when name occurs in evidence (display text) only with a genitive ending ("Pauls").

    Admission's literal rule finds names as whole words; German and Dutch
    write the genitive of a name as one word ("Pauls Lieblingsstadt ist
    Wien"), so the name is said there too. The grounding rules then judge it
    as a possessor, like "Paul's".
    """
    return genitive_span(lang, name, evidence, (0, len(evidence))) is not None


def genitive_span(lang, needle, display, window):
    """
    Return the span of a name said inside one word with a genitive ending or elision.

    Only the name itself may be read so, and only with a whole ending or
    opening of the language data: German and Dutch "s" ("Pauls
    Lieblingsstadt ist Wien"), an elided French or Italian article or
    preposition ("La ville préférée d'Étienne est Marseille"). display is
    the utterance's display form, window the evidence's (start, end) in it.
    """
    try:
        name = [token.key for token in tokenize(normalize_key(needle)) if token.is_word]
    except NormalizationError:
        return None
    offset = window[0]
    words = [token for token in tokenize(display[window[0]:window[1]]) if token.is_word]
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


def cover(lang, tokens, start, end):
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
            head = key_of(token.text[:start - token.start])
            if not (head.endswith("'") and (head in lang.function_words
                                            or head in lang.genitive_prepositions)):
                return None
        if token.end > end:
            rest = key_of(tokens[index].text[end - token.start:])
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
