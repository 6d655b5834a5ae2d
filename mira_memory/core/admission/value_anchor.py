# SPDX-License-Identifier: Apache-2.0
"""
The value: a complete phrase of the evidence that carries meaning and was asserted.

- It carries meaning of its own: a letter or digit, more than function words,
  not the predicate itself, not the subject's own words (`value_failure`).
- It is a complete phrase: it cuts no word, it is not only a possessor
  ("likes Bob's cooking"), it stands after no privative modifier
  (`value_failure`), and no complement or modifier of it is cut off after it
  (`cut_short`: "tea | with lemon"; a verb-final clause may close after it).
- It is what was asserted: not what a contrast sets aside ("tea, not
  coffee") nor a number cut from its approximation ("roughly 40"):
  `set_aside`.
"""

from mira_memory.core.admission.clauses import ends_phrase
from mira_memory.core.admission.evidence_shape import is_adverb
from mira_memory.core.admission.name_spans import cover
from mira_memory.core.admission.normalize import normalize_key
from mira_memory.core.admission.subject_anchor import POSSESSED_MAX_WORDS
from mira_memory.core.admission.text import BOUNDARIES, phrase_lengths, phrase_spans, tokenize


def value_failure(c, occurrence, value_span):
    """
    Return (failure, None), or (None, the value's (first, stop, possessive) token range).

    The value carries meaning, is not the subject's words, covers whole words
    and is no mere possessor, and no privative modifier stands before it.
    """
    lang, tokens = c.lang, c.tokens
    first, stop = occurrence.first, occurrence.stop
    subject_span = occurrence.subject_span
    if value_span is None:
        return 'value_partial', None
    value_key = normalize_key(c.value)
    value_words = [token.key for token in tokenize(value_key) if token.is_word]
    if not any(char.isalnum() for char in value_key) or not value_words:
        return 'value_vacuous', None
    # A relationship's value names an entity, which resolution checks: "The
    # Who" is a name, not two function words.
    # "she/her": a list written with slashes names its words, so it is a value.
    if not c.relationship and '/' not in value_key and all(
            (word in lang.function_words and word not in lang.months) or lang.is_negator(word)
            for word in value_words):
        return 'value_vacuous', None
    if '_'.join(value_words) == c.predicate:
        return 'value_vacuous', None
    if value_span[0] < subject_span[1] and subject_span[0] < value_span[1]:
        return 'value_is_subject', None
    covered = cover(lang, tokens, *value_span)
    if covered is None:
        return 'value_partial', None
    value_first, value_stop, value_possessive = covered
    # A value that is only a possessor ("likes Bob's cooking") is cut short,
    # except the related entity of "<subject> is <entity>'s <relation>".
    if value_possessive and not (c.relationship and names_relation(
            lang, tokens, first, value_first, value_stop, stop)):
        return 'value_partial', None
    if value_first > first:
        previous = tokens[value_first - 1]
        if previous.is_word and previous.key in lang.privative_modifiers:
            return 'value_partial', None
    return None, covered


def cut_short(c, occurrence, subject_first, value_first, value_stop, value_possessive):
    """
    Return True when the evidence goes on after the value with a part of its phrase.

    A complement or modifier after it ("tea | with lemon") is cut off; a
    function word, an elision, a value follower, an adverb or a contrast is
    not, and neither is the verb that closes a verb-final clause.
    """
    lang, tokens = c.lang, c.tokens
    first, stop = occurrence.first, occurrence.stop
    structure_ = occurrence.structure
    bracket = (structure_.language or structure_.clause_language) in lang.verb_bracket
    # A verb-final clause closes with its participle or infinitive
    # ("Wiebke ist mit Matthias verheiratet"); a fronted value is followed by
    # the verb and then the subject ("In Utrecht werkt Femke ...").
    closing_verb = bracket and tokens[value_stop].is_word if value_stop < stop else False
    closing_verb = closing_verb and (value_stop + 1 == subject_first or (
        value_stop + 1 == stop and is_closing_verb(lang, tokens[value_stop].key)))
    # "Theo and Keiko're neighbours": the value ends before a contracted verb,
    # and what follows is that verb's complement.
    contracted = tokens[value_stop - 1].key.endswith(lang.contraction_suffixes) and (
        not tokens[value_stop - 1].key.endswith(lang.possessive_suffixes))
    closing_verb = closing_verb or contracted
    # A verb-final language closes the clause with one word after the value
    # ("Friedas Reisepass ist bis 2031 gültig", "die Türkisch spricht").
    # (Not a word only a language without one knows: "mag green tea | cakes".)
    closing_verb = closing_verb or (bracket and value_stop + 1 == stop
                                    and bracket_word(lang, tokens[value_stop].key))
    if value_stop < stop and not value_possessive and not closing_verb:
        following = tokens[value_stop]
        keys = c.analysis.keys
        if following.is_word and (
                following.key in lang.value_continuers or not (
                    (following.key in lang.function_words
                     and not content_word(lang, tokens, first, stop, following.key))
                    or elided(lang, following.key)
                    or (following.key in lang.value_followers
                        and not content_word(lang, tokens, first, stop, following.key))
                    or is_adverb(lang, following.key)
                    or phrase_lengths(lang.contrast_markers, keys, value_stop))):
            return True
    return False


def set_aside(c, occurrence, value_first, value_stop):
    """
    Return a failure when the value is not what was asserted of it.

    A contrast sets aside what follows it ("tea, not coffee", "tea rather
    than coffee", "unlike coffee"); an approximation belongs to its number
    ("roughly 40", "40 or so").
    """
    lang, tokens, first, stop = c.lang, c.tokens, occurrence.first, occurrence.stop
    suppressed, marks = occurrence.structure.suppressed, occurrence.marks
    keys = [token.key for token in tokens[first:stop]]
    start = value_first - first
    negating = bool(set(c.predicate.split('_')) & lang.predicate_negators)
    # An article may stand between the marker and the value ("not the coffee").
    # ... and a preposition before it ("riega con agua de lluvia, no con agua
    # del grifo": the value shares it with what it is set against).
    ends = {start}
    position = start
    if position > 0 and keys[position - 1] in lang.function_words:
        position -= 1
        ends.add(position)
    if position > 0 and keys[position - 1] in lang.phrase_prepositions:
        ends.add(position - 1)
    for begin, end in phrase_spans(lang.contrast_markers, keys[:start]):
        if end not in ends or (end - begin == 1 and keys[begin] in suppressed):
            continue
        if first + begin in marks.pseudo or (end < len(keys) and keys[end] in lang.additives):
            # "won't eat anything but rice", "ne boit que du thé" (after a
            # negation: only this) and "not only X but also Y" assert the value.
            continue
        if begin > 0 and keys[begin - 1] in lang.copulas and not lang.is_negator(keys[begin]):
            # "Lars is anything but shy" negates: polarity judges it.
            continue
        if negating and any(lang.is_negator(key, suppressed) for key in keys[begin:end]) and (
                not any(lang.is_negator(key, suppressed) for key in keys[:begin])):
            # "... and never the weekend" with never_works: the negation is
            # what is asserted of the weekend, which polarity judges. After a
            # negated clause ("doesn't like tea but not coffee") the contrast
            # takes the negation back: the value is set aside.
            continue
        # A bare negator is a contrast only after a comma or a joiner
        # ("tea, not coffee", "tea and not coffee"); "is not a smoker" is
        # the negation of the clause, which polarity judges.
        single = end - begin == 1 and lang.is_negator(keys[begin], suppressed)
        previous = tokens[first + begin - 1] if first + begin > first else None
        if single and not (previous is not None and (
                previous.text in BOUNDARIES or previous.key in lang.clause_joiners
                or previous.key in lang.coordinators
                # "rides a gazelle not a batavus" (speech, no comma): a new
                # phrase after a complete one, no negation before in the clause
                # ("ne mange pas de viande" negates the clause)
                or (previous.is_word and previous.key not in lang.function_words
                    and previous.key not in lang.copulas and end < len(keys)
                    and ends_phrase(lang, tokens, first + begin - 1)
                    and (keys[begin] in lang.contrast_openers or keys[end] in lang.function_words
                         or tokens[first + end].is_number)
                    and not any(lang.is_negator(key, suppressed) for key in keys[:begin])))):
            continue
        return 'value_set_aside'
    # "prefers trains to planes": what a preference is compared with is set aside.
    preferring = [index for index in range(first, value_first)
                  if tokens[index].key in lang.preference_verbs]
    if preferring and any(keys[end - 1] in lang.preference_contrasts
                          and first + end - 1 > preferring[0] for end in ends if end > 0):
        return 'value_set_aside'
    if tokens[value_first].is_number or tokens[value_first].key in lang.number_words:
        # (An approximator may follow an elided article: "d'environ trente".)
        unelided = [_unelided(lang, key) for key in keys[:start]]
        if any(end in ends and end == start and first + begin not in marks.pseudo
               for begin, end in phrase_spans(lang.approximators, unelided)):
            # ("valid until 2031", "válido hasta 2031": no approximation.)
            return 'value_approximate'
        after = [token.key for token in tokens[value_stop:stop]]
        if after and phrase_lengths(lang.approximators_after, after, 0):
            return 'value_approximate'
    return None


def _unelided(lang, key):
    """Return key without an elided function word before it ("d'environ" -> "environ")."""
    head, mark, rest = key.partition("'")
    return rest if mark and rest and head + mark in lang.function_words else key


def content_word(lang, tokens, first, stop, key):
    """
    Return True when key is a content word in the language of the evidence [first, stop).

    Another language's function word or value follower may be a noun here:
    Dutch "van" in "drives a camper van" (English), unlike "a" in "diz olá a
    todos" (Portuguese).
    """
    counts = {}
    for token in tokens[first:stop]:
        for code in lang.word_languages.get(token.key, ()) if token.is_word else ():
            counts[code] = counts.get(code, 0) + 1
    if not counts:
        return False
    best = max(counts.values())
    codes = [code for code, count in counts.items() if count == best]
    if len(codes) != 1:
        return False
    own = lang.clause_words(codes[0])
    return (codes[0] in lang.word_languages.get(key, ()) and key not in own.function_words
            and key not in own.phrase_prepositions and key not in own.value_followers)


def bracket_word(lang, key):
    """Return True unless only languages without a verb bracket know key ("cakes")."""
    known = lang.word_languages.get(key, ())
    return is_closing_verb(lang, key) or any(code in lang.verb_bracket for code in known)


def is_closing_verb(lang, key):
    """
    Return True for what may close a verb-final clause.

    An infinitive or participle ("wohnen", "verheiratet") or a predicative
    adjective ("gültig", "geldig").
    """
    return key.endswith(lang.infinitive_endings) or (
        key.startswith(lang.participle_prefixes) and key.endswith(lang.participle_endings)) or (
        any(key.endswith(ending) and len(key) > len(ending) + 2
            for ending in lang.predicative_endings))


def elided(lang, key):
    """Return True for a function word elided onto a word ("nell'orchestra", "l'hôpital")."""
    head, apostrophe, rest = key.partition("'")
    return bool(apostrophe and rest) and (head + "'" in lang.function_words
                                          or head in lang.function_words)


def names_relation(lang, tokens, first, value_first, value_stop, stop):
    """Return True for "... is <value>'s <at most 3 words>" ending the evidence."""
    before = tokens[value_first - 1] if value_first > first else None
    rest = tokens[value_stop:stop]
    return (before is not None and before.is_word and (
                before.key in lang.copulas or (before.key in lang.persons
                                               and before.key.endswith("'s")))
            and 0 < len(rest) <= POSSESSED_MAX_WORDS
            and all(token.is_word and not token.key.endswith(lang.apostrophe_suffixes)
                    for token in rest))
