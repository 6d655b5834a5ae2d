# SPDX-License-Identifier: Apache-2.0
"""
The evidence's shape: whether it is one clause of its sentence, and not a question.

The evidence must start where a clause starts (after lead-ins such as
"remember that", interjections, the robot's name, titles, fillers and a
false start: `walk` steps over them) and end where one ends (or before
trailing words such as "btw", an adverb, the robot's name), and it is not
a question unless a polite request to remember makes it one ("Will you
remember that ..."). Where the clauses start is clauses.py's; what the
other clauses say is neutral unless a trigger reaches the evidence
(scope.py).
"""

from mira_memory.core.admission.clauses import SUBORDINATOR
from mira_memory.core.admission.text import phrase_lengths, QUOTES

# A possessive determiner may stand this many words before the subject name
# ("my cousin Bob", "our old dog Rufus").
_RELATION_MAX_WORDS = 2
# Names longer than this many words are not looked for.
NAME_MAX_WORDS = 4


def walk(claim, positions, end, *, lead=True, prefixes=False, also=frozenset(), skipped=()):
    """
    Return (every position reachable from positions by skipping what may open a clause, requested).

    lead: lead-ins, polite requests, interjections, openers and the robot's
    name; prefixes: also articles and titles, "my cousin" and "me and" (what
    may stand right before a subject name); fillers and repeated words are
    always skipped. requested: a polite request to remember was passed ("will
    you remember that"). One shared visited set keeps this linear.
    """
    lang, tokens, keys = claim.lang, claim.analysis.tokens, claim.analysis.keys
    seen = set(positions)
    requested = False
    frontier = list(seen)
    while frontier:
        here = frontier.pop()
        steps = []
        if here < end and here in skipped:
            steps.append(here + 1)
        if here < end and tokens[here].is_word:
            key = keys[here]
            if lead:
                for table in (lang.lead_ins, lang.interjections, lang.correction_leads):
                    if key in table:
                        steps.extend(here + length for length in phrase_lengths(table, keys, here))
                # "Would you (please) <lead-in>": a request opener counts only
                # before a lead-in, whose complement it asserts.
                for length in (phrase_lengths(lang.request_lead_ins, keys, here)
                               if key in lang.request_lead_ins else ()):
                    after = here + length
                    if (after < end and phrase_lengths(lang.lead_ins, keys, after)) or any(
                            word in lang.lead_ins and word not in lang.interjection_words
                            for word in keys[here:after]):
                        requested = True
                        steps.append(after)
                steps.extend(here + len(name) for name in claim.vocatives
                             if tuple(keys[here:here + len(name)]) == name)
                if key in lang.openers:
                    steps.append(here + 1)
            if key in also or (prefixes and key in lang.subject_prefixes and not (
                    here + 1 < end and keys[here + 1] in lang.genitive_prepositions)):
                # (A title, but "la sœur de Sidonie" is a relation: the possessor rule's.)
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
    if token.key in lang.possessive_determiners or token.key in lang.articles:
        # "my cousin Bob", "the new intern Sofia" (never "the sister of Sien")
        for count in range(1, _RELATION_MAX_WORDS + 1):
            words = tokens[here + 1:here + 1 + count]
            after = here + 1 + count
            if len(words) == count and after < end and all(
                    word.is_word and word.key not in lang.function_words
                    and word.key not in lang.genitive_prepositions for word in words) and not (
                    tokens[after].key in lang.genitive_prepositions):
                # (Before "de", "of", the name is the possessor: "la hermana de Maite".)
                yield after
    # "me and Ada", "Bob and Ada": a subject coordinated with the speaker or a name.
    for count in range(1, NAME_MAX_WORDS):
        words = tokens[here:here + count]
        after = here + count
        if after >= end or len(words) < count or not all(word.is_word for word in words):
            break
        if tokens[after].is_word and tokens[after].key in lang.coordinators and all(
                word.key in lang.speakers or word.key not in lang.function_words
                for word in words):
            yield after + 1


def shape_failure(claim, structure_, sentence, first, stop, subject_span):
    """
    Return (failure or None, word groups addressed) for where the evidence stands.

    It is not a question (a question mark on its clause, a question word
    opening it, unless a polite request to remember does: "Will you remember
    that ..."), and it starts where a clause starts: only lead-ins,
    interjections, the robot's name, titles, fillers and a false start may
    stand between the clause's start and the evidence.
    """
    lang, tokens, keys = claim.lang, claim.analysis.tokens, claim.analysis.keys
    _, requested = _lead_walk(claim, structure_, sentence.start)
    start = structure_.clause_start(first)
    before = structure_.boundary_before(first)
    if before is not None and before.kind == SUBORDINATOR and (
            keys[before.index] in lang.complementizers
            or keys[before.index] in lang.relative_pronouns):
        # "The cat that | Ada likes is grey": a clause opened by "that" or
        # "which" is another's part; only a lead-in ("remember that") leads
        # into a statement there.
        start = structure_.clause_start(before.index)
    reached, requested_here = _lead_walk(claim, structure_, start)
    requested = requested or requested_here
    last = structure_.boundaries[-1].after if structure_.boundaries else sentence.start
    if sentence.question and not requested and stop > last:
        return 'question', ()
    here = max((position for position in reached if position <= first), default=start)
    if here < sentence.end and keys[here] in lang.question_openers and not requested and not (
            subject_span and subject_span[0] <= tokens[here].start < subject_span[1]):
        return 'question', ()
    opening_quote = first
    while opening_quote > start and tokens[opening_quote - 1].text in QUOTES:
        opening_quote -= 1
    named = _named_walk(claim, structure_, start, reached)
    if first not in named and opening_quote not in named and not _after_relation(
            claim, structure_, named, first):
        return 'not_a_clause', ()
    return None, _addressed(claim, structure_, first, stop)


def _after_relation(claim, structure_, reached, first):
    """Return True for "our parrot | Kiko", "nuestro loro | Paquito": a relation of any words."""
    lang, tokens = claim.lang, claim.analysis.tokens
    pronouns = lang.clause_words(structure_.clause_language).subject_pronouns
    return any(
        first - position in (2, 3) and tokens[position].key in lang.possessive_determiners
        and all(token.is_word and token.key not in pronouns
                for token in tokens[position + 1:first])
        for position in reached if position < first)


def _lead_walk(claim, structure_, start):
    """Return walk()'s lead-ins from a clause start, worked out once per turn."""
    key = ('lead', start, claim.vocatives)
    found = claim.analysis.cache.get(key)
    if found is None:
        found = walk(claim, (start,), structure_.end, skipped=structure_.skipped)
        claim.analysis.cache[key] = found
    return found


def _named_walk(claim, structure_, start, reached):
    """Return where a subject name may start after a clause's lead-ins, titles and relations."""
    key = ('named', start, claim.vocatives)
    found = claim.analysis.cache.get(key)
    if found is None:
        found, _ = walk(claim, reached, structure_.end, prefixes=True, skipped=structure_.skipped)
        claim.analysis.cache[key] = found
    return found


def _addressed(claim, structure_, first, stop):
    """Return the short word groups set off by commas right before and after the evidence."""
    lang, tokens = claim.lang, claim.analysis.tokens
    found = []
    before = structure_.boundary_before(first)
    if before is not None and tokens[before.index].text in ',:':
        begin = structure_.clause_start(before.index)
        words = [token for token in tokens[begin:before.index] if token.is_word]
        if _is_vocative(lang, words):
            found.append(' '.join(word.text for word in words))
    after = next((boundary for boundary in structure_.boundaries if boundary.index >= stop),
                 None)
    if after is not None and tokens[after.index].text == ',':
        end = structure_.clause_end(after.after)
        words = [token for token in tokens[after.after:end] if token.is_word]
        if _is_vocative(lang, words) and end == structure_.end:
            found.append(' '.join(word.text for word in words))
    return tuple(found)


# Words around the evidence read as a name addressed ("Ada, you like tea").
_VOCATIVE_MAX_WORDS = 4


def _is_vocative(lang, words):
    """Return True for a short word group that can only be a name addressed ("Ada,")."""
    return 0 < len(words) <= _VOCATIVE_MAX_WORDS and all(
        word.key not in lang.function_words and not word.is_number and word.key[:1].isalpha()
        for word in words)


def end_failure(claim, structure_, stop, found=()):
    """
    Return 'not_a_clause' unless the evidence ends where its clause ends.

    Straight after it, before the next clause, only trailing words ("btw",
    "lol", "bless her"), the robot's name, an adverb or a measure word may
    follow ("... beautifully", "... 190 cm tall"); a phrase there ("tea |
    with lemon", "tea | cakes") is part of the clause the evidence cut. In
    unpunctuated speech a new clause may also start there without a mark:
    with an imperative ("... the first aider call him"), an interjection, a
    trigger or contrast ("... oat milk not cow milk", "... nobody else"), a
    restrictive ("só chá verde") or an article opening another phrase ("...
    number nine the one with the stickers"). found: the sentence's triggers.
    """
    lang, tokens, keys = claim.lang, claim.analysis.tokens, claim.analysis.keys
    index = stop
    while index < structure_.end and tokens[index].text in QUOTES:
        index += 1
    end = next((boundary.index for boundary in structure_.boundaries
                if boundary.index >= index), structure_.end)
    words = [position for position in range(index, end)
             if tokens[position].is_word and position not in structure_.skipped]
    starts = {occurrence.start for occurrence in found}
    own = lang.clause_words(structure_.clause_language)
    position = 0
    while position < len(words):
        here = words[position]
        key = keys[here]
        if (here in starts or lang.imperative_length(keys, here, structure_.clause_language)
                or phrase_lengths(lang.lead_ins, keys, here)
                or phrase_lengths(lang.request_lead_ins, keys, here)
                or phrase_lengths(lang.contrast_markers, keys, here)
                or phrase_lengths(lang.restrictives, keys, here)
                or (position == 0 and key in lang.function_words
                    and key not in lang.value_continuers
                    and key not in own.phrase_prepositions)):
            # (A phrase of its own after a complete clause: "... the one with
            # the stickers", "toca el violín | desde los seis años"; "tea |
            # with lemon" would continue what the clause says.)
            return None
        if keys[here:here + len(words) - position] == keys[stop - (len(words) - position):stop]:
            return None  # the value said again: "... is sixteen always sixteen"
        length = max(phrase_lengths(lang.trailing, keys, here)
                     + phrase_lengths(lang.interjections, keys, here)
                     + [len(name) for name in claim.vocatives
                        if tuple(keys[here:here + len(name)]) == name] + [0])
        if not length and (key in lang.value_followers or is_adverb(lang, key)):
            length = 1
        if not length:
            return 'not_a_clause'
        position += length
    return None


def is_adverb(lang, key):
    """Return True for a word with an adverb's ending ("beautifully", "lentement")."""
    return any(key.endswith(suffix) and len(key) > len(suffix) + 2
               for suffix in lang.adverb_suffixes)
