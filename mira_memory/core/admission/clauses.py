# SPDX-License-Identifier: Apache-2.0
"""
Clauses: where each sentence's clauses start, and whether the evidence is one of them.

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

The evidence must start where a clause starts (after lead-ins such as
"remember that", interjections, the robot's name, titles) and end where one
ends (or before trailing words such as "btw", an adverb, the robot's name);
what the other clauses say is neutral unless a trigger reaches the evidence
(scope.py).
"""

from dataclasses import dataclass
from typing import FrozenSet, Tuple

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
# Punctuation that always ends a clause; a comma or slash ends one only
# before what opens a clause (a list goes on after it).
_WEAK_MARKS = frozenset(',/\u3001\uff0c')
# A word group said twice in a row ("Ana is um Ana is") is at most this long.
_REPEAT_MAX_WORDS = 3
# A sentence in a claimed language of at least this many words (names and
# numbers aside) holds at least one word its language data knows.
UNCLAIMED_MIN_WORDS = 4


@dataclass(frozen=True)
class Boundary:
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
    tokens = analysis.tokens
    code = sentence_language(lang, tokens, sentence)
    suppressed = lang.homographs.get(code, frozenset())
    skipped = _skipped(lang, tokens, sentence)
    own = lang.clause_words(code)
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
                kind = TERMINATION if token.text in COORDINATING_MARKS else PUNCTUATION
                boundaries.append(Boundary(index, index + 1, kind, STRONG if strong else WEAK))
            index += 1
            continue
        found = _word_boundary(lang, analysis, sentence, index, skipped, own)
        if found is None:
            index += 1
            continue
        boundaries.append(found)
        index = max(found.after, index + 1)
    return Structure(sentence.start, sentence.end, tuple(boundaries), frozenset(skipped), code,
                     suppressed)


def _word_boundary(lang, analysis, sentence, index, skipped, own):
    """Return the Boundary a word starts at index, or None (own: the sentence's clause words)."""
    tokens, keys = analysis.tokens, analysis.keys
    key = keys[index]
    if index == sentence.start:
        return None
    if key in own.terminations:
        return Boundary(index, index + 1, TERMINATION, STRONG)
    if key in own.soft_terminations:
        return Boundary(index, index + 1, SOFT_TERMINATION, WEAK)
    if key in own.subordinators:
        # "that", "after", "which" may also stand inside a phrase ("likes
        # that café", "eats after 8"): weak, like "and".
        return Boundary(index, index + 1, SUBORDINATOR, WEAK)
    if key in own.coordinators:
        return Boundary(index, index + 1, COORDINATOR, WEAK)
    lengths = phrase_lengths(lang.discourse_markers, keys, index)
    if lengths:
        return Boundary(index, index + max(lengths), DISCOURSE, WEAK)
    previous = _previous_word(tokens, index, sentence.start, skipped)
    # A new subject or a question after a clause that ended without a
    # comma (speech recognition writes none): "... tea she drinks it hot",
    # "... the first aider does he know". After a preposition or article the
    # pronoun is an object ("con ella").
    after_content = previous is not None and tokens[previous].is_word and (
        keys[previous] not in lang.function_words or keys[previous] in lang.value_followers)
    if after_content and key in own.subject_pronouns:
        return Boundary(index, index, SUBJECT, STRONG)
    following = _next_word(tokens, index + 1, sentence.end, skipped)
    if (after_content and key in lang.question_openers and following is not None
            and (keys[following] in lang.persons or keys[following] in own.subject_pronouns)):
        return Boundary(index, index, QUESTION, STRONG)
    return None


def _previous_word(tokens, index, start, skipped):
    index -= 1
    while index >= start and (index in skipped or tokens[index].text in QUOTES):
        index -= 1
    return index if index >= start else None


def _next_word(tokens, index, end, skipped):
    while index < end and (index in skipped or tokens[index].text in QUOTES):
        index += 1
    return index if index < end else None


def _skipped(lang, tokens, sentence):
    """Return the fillers and the first copy of every word group said twice in a row."""
    skipped = {index for index in range(sentence.start, sentence.end)
               if tokens[index].is_word and tokens[index].key in lang.fillers}
    words = [index for index in range(sentence.start, sentence.end)
             if tokens[index].is_word and index not in skipped]
    position = 0
    while position < len(words):
        for count in range(_REPEAT_MAX_WORDS, 0, -1):
            first = words[position:position + count]
            second = words[position + count:position + 2 * count]
            if len(second) < count:
                continue
            # Only words between them (no punctuation): "tea, tea with lemon" is a list.
            span = range(first[0], second[-1] + 1)
            if any(not tokens[i].is_word for i in span):
                continue
            if [tokens[i].key for i in first] == [tokens[i].key for i in second] and not (
                    count == 1 and tokens[first[0]].is_number):
                skipped.update(first)
                position += count - 1
                break
        position += 1
    return skipped


def sentence_language(lang, tokens, sentence):
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


def opens_clause(lang, analysis, structure_, index, also=()):
    """
    Return True when the word at index (fillers skipped) opens a clause of its own.

    A subject pronoun, a negator, a termination or subordinator, a trigger
    word, a restrictive ("only"), a lead-in or interjection does; a noun or a
    verb does not, so "no meat, fish or eggs" and "doesn't eat meat and fish"
    stay one negated list (also: indices that open a clause anyway).
    """
    tokens, keys = analysis.tokens, analysis.keys
    index = _next_word(tokens, index, structure_.end, structure_.skipped)
    if index is None:
        return True
    if index in also:
        return True
    key = keys[index]
    own = lang.clause_words(structure_.language)
    return (key in own.subject_pronouns or key in own.subordinators or key in own.terminations
            or key in own.soft_terminations or lang.is_negator(key, structure_.suppressed)
            or key in lang.interjection_words or bool(phrase_lengths(lang.lead_ins, keys, index))
            or bool(phrase_lengths(lang.restrictives, keys, index))
            or (key in lang.question_openers
                and _next_is_person(lang, analysis, structure_, index))
            or (key not in lang.function_words and any(
                trigger.kind != 'pseudo' for _, trigger in lang.trigger_phrases.get(key, ()))))


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
                for table in (lang.lead_ins, lang.interjections):
                    steps.extend(here + length for length in phrase_lengths(table, keys, here))
                # "Would you (please) <lead-in>": a request opener counts only
                # before a lead-in, whose complement it asserts.
                for length in phrase_lengths(lang.request_lead_ins, keys, here):
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


# A possessive determiner may stand this many words before the subject name
# ("my cousin Bob", "our old dog Rufus").
_RELATION_MAX_WORDS = 2
# Names longer than this many words are not looked for.
NAME_MAX_WORDS = 4


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
    for count in range(1, NAME_MAX_WORDS):
        words = tokens[here:here + count]
        after = here + count
        if after >= end or len(words) < count or not all(word.is_word for word in words):
            break
        if tokens[after].is_word and tokens[after].key in lang.coordinators and all(
                word.key in lang.speakers or word.key not in lang.function_words
                for word in words):
            yield after + 1


def unclaimed(claim, structure_, names):
    """
    Return True when a sentence is in a language the rules have no data for.

    Names (the subject, a relationship's value), numbers and the robot's name
    aside, the sentence is unclaimed when a word holds a letter no claimed
    language writes ("piętrze", "Tromsø" said as a word), when its words of
    unclaimed languages ("jest", "kanske", "değil") are at least as many as
    the words the claimed languages' data knows, or when it has
    UNCLAIMED_MIN_WORDS words or more and the data knows none of them. The
    rules find hedges and negations only in the languages they have data
    for, so such a sentence cannot be shown to be a plain statement.
    """
    lang, tokens = claim.lang, claim.analysis.tokens
    cached = claim.analysis.cache.get(('unclaimed', structure_.start))
    if cached is None:
        cached = _unclaimed_words(lang, claim.analysis, structure_, claim.vocatives)
        claim.analysis.cache[('unclaimed', structure_.start)] = cached
    words, letters, foreign, known = cached
    if not letters and not foreign and (len(words) < UNCLAIMED_MIN_WORDS or len(known) > 2):
        # The common case: names can take at most two known words away.
        return False
    inside = {index for index in words if any(
        span[0] <= tokens[index].start and tokens[index].end <= span[1] for span in names)}
    if any(index not in inside for index in letters):
        return True
    foreign = [index for index in foreign if index not in inside]
    known = [index for index in known if index not in inside]
    if foreign and len(foreign) >= len(known):
        return True
    return len(words) - len(inside) >= UNCLAIMED_MIN_WORDS and not known


def _unclaimed_words(lang, analysis, structure_, vocatives):
    tokens, keys = analysis.tokens, analysis.keys
    robot = set()
    for name in vocatives:
        for index in range(structure_.start, structure_.end):
            if tuple(keys[index:index + len(name)]) == name:
                robot.update(range(index, index + len(name)))
    words = [index for index in range(structure_.start, structure_.end)
             if tokens[index].is_word and not tokens[index].is_number
             and index not in structure_.skipped and index not in robot]
    letters = [index for index in words
               if any(char in lang.unclaimed_letters for char in keys[index])]
    foreign = [index for index in words if keys[index] in lang.unclaimed_words]
    known = [index for index in words if keys[index] in lang.known_words
             or _known_form(lang, keys[index])]
    return words, letters, foreign, known


def _known_form(lang, key):
    """Return True for a word the data knows by its form: an elision or a contraction."""
    head, apostrophe, rest = key.partition("'")
    if apostrophe and rest and (head + "'" in lang.known_words or head in lang.known_words
                                or "'" + rest in lang.known_words):
        return True
    return key.endswith(lang.adverb_suffixes) and len(key) > 5


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
    if first not in named and opening_quote not in named:
        return 'not_a_clause', ()
    return None, _addressed(claim, structure_, first, stop)


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


def end_failure(claim, structure_, stop):
    """
    Return 'not_a_clause' unless the evidence ends where its clause ends.

    Straight after it, before the next clause, only trailing words ("btw",
    "lol"), the robot's name, an adverb or a measure word may follow ("...
    beautifully", "... 190 cm tall"); a phrase there ("tea | with lemon") is
    part of the clause the evidence cut. In unpunctuated speech an
    imperative also starts a new clause ("... the first aider call him").
    """
    lang, tokens, keys = claim.lang, claim.analysis.tokens, claim.analysis.keys
    index = stop
    while index < structure_.end and tokens[index].text in QUOTES:
        index += 1
    end = next((boundary.index for boundary in structure_.boundaries
                if boundary.index >= index), structure_.end)
    words = [position for position in range(index, end)
             if tokens[position].is_word and position not in structure_.skipped]
    position = 0
    while position < len(words):
        here = words[position]
        key = keys[here]
        if key in lang.imperatives or phrase_lengths(lang.lead_ins, keys, here) or (
                phrase_lengths(lang.request_lead_ins, keys, here)):
            return None
        length = max(phrase_lengths(lang.trailing, keys, here)
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


def has_words(analysis, structure_, start, stop):
    """Return True when a word (fillers aside) stands in tokens [start, stop)."""
    return any(analysis.tokens[index].is_word and index not in structure_.skipped
               for index in range(start, stop))
