# SPDX-License-Identifier: Apache-2.0
"""
What follows the statement: a later sentence that takes it back, a tag that closes it.

Both reach back over the statement whatever stands between (a retraction,
denial or joke in a sentence of its own; a question tag with or without its
question mark), so they are judged after the scopes of the statement's own
sentence (scope.py).
"""

from mira_memory.core.admission import scope

# A later sentence this short that holds a negator or hedge takes the
# statement back ("Hmm, no, that was Carl.").
_RETRACTION_MAX_WORDS = 6
# A question tag after a statement is at most this many words ("doesn't she", "is that right").
_TAG_MAX_WORDS = 4


def later_sentence_failure(claim, sentence, structures):
    """
    Return 'retracted' when a later sentence of the turn takes the statement back.

    It does so with a retraction or sarcasm trigger ("Just kidding.",
    "Scratch that."), by opening with a negator ("No, that was Carl."), as a
    short sentence of a negator or hedge and at most one word of its own
    ("Not.", "Hmm, not really."), or as a question of only tags and function
    words ("Didn't she?", "Right?").
    """
    lang, tokens = claim.lang, claim.analysis.tokens
    for other in claim.analysis.sentences:
        if other.start < sentence.end:
            continue
        structure_ = structures(other)
        words = [index for index in range(other.start, other.end)
                 if tokens[index].is_word and index not in structure_.skipped]
        keys = [tokens[index].key for index in words]
        if not keys:
            continue
        found = scope.occurrences(claim, structure_)
        if any(trigger.kind in ('retraction', 'sarcasm')
               for index in range(other.start, other.end)
               for _, trigger in scope.matched(lang, claim.analysis, index, other.end)):
            # "Just kidding, it's fine.": in a sentence of their own they
            # take the statement back wherever they stand.
            return 'retracted'
        lead = scope.lead_end(lang, claim.analysis, structure_, claim.vocatives)
        opener = next((index for index in words if index >= lead), None)
        # "No, that was Carl.", "Hmm, no, ...": a negator among its lead-ins or opening it.
        if any(lang.is_negator(tokens[index].key, structure_.suppressed)
               for index in words if index < lead or index == opener):
            return 'retracted'
        doubting = [occurrence for occurrence in found if occurrence.trigger.kind != 'pseudo']
        own = [key for key in keys if key not in lang.function_words
               and not lang.is_negator(key, structure_.suppressed)
               and key not in lang.interjection_words]
        if len(keys) <= _RETRACTION_MAX_WORDS and doubting and len(own) <= 1:
            return 'retracted'
        if other.question and all(
                key in lang.function_words or key in lang.persons or key in lang.question_tags
                or key in lang.copulas or lang.is_negator(key, structure_.suppressed)
                for key in keys):
            return 'retracted'
    return None


def tag_after(claim, structure_, stop, sentence):
    """
    Return True when a question tag closes the sentence after the evidence.

    A tag is a last clause of at most four words, all of them tags, persons,
    copulas, question words or negators ("..., doesn't she?", "..., is that
    right", "..., no?"), written with or without a question mark.
    """
    lang, tokens, keys = claim.lang, claim.analysis.tokens, claim.analysis.keys
    last = structure_.boundaries[-1] if structure_.boundaries else None
    if last is None or last.after <= stop - 1 or last.index < stop:
        return False
    words = [index for index in range(last.after, structure_.end)
             if tokens[index].is_word and index not in structure_.skipped]
    if not words or len(words) > _TAG_MAX_WORDS:
        return False
    if any(occurrence.trigger.kind == 'pseudo' and occurrence.start < words[-1] + 1
           and occurrence.stop > words[0] for occurrence in scope.occurrences(claim, structure_)):
        return False  # "crois-le ou non" insists; its "non" is no tag
    tagged = [keys[index] for index in words if keys[index] in lang.question_tags]
    return bool(tagged or sentence.question) and all(
        keys[index] in lang.question_tags or keys[index] in lang.persons
        or keys[index] in lang.copulas or keys[index] in lang.question_openers
        or keys[index] in lang.subject_pronouns
        or lang.is_negator(keys[index], structure_.suppressed)
        for index in words)
