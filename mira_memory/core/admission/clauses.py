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
from typing import FrozenSet, NamedTuple, Tuple

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
# A sentence in a claimed language of at least this many words (names and
# numbers aside) holds at least one word its language data knows.
UNCLAIMED_MIN_WORDS = 4
# A sentence of at most this many words (names and the value aside) that an
# unclaimed language knows as well as a claimed one is refused: too few words
# to tell the two apart.
UNCLAIMED_TIE_MAX_WORDS = 2


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
    code, clause_language = _languages(lang, tokens, sentence)
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


def _languages(lang, tokens, sentence):
    """Return (the sentence's language by its markers, by its closed-class words)."""
    markers, words = {}, {}
    for token in tokens[sentence.start:sentence.end]:
        if token.is_word:
            for code in lang.marker_languages.get(token.key, ()):
                markers[code] = markers.get(code, 0) + 1
            for code in lang.word_languages.get(token.key, ()):
                words[code] = words.get(code, 0) + 1
    return _winner(markers), _winner(words)


def _winner(counts):
    if not counts:
        return ''
    best = max(counts.values())
    winners = [code for code, count in counts.items() if count == best]
    return winners[0] if len(winners) == 1 else ''


def sentence_language(lang, tokens, sentence, index=None):
    """
    Return the language with the most marker words in the sentence ('' on a tie or none).

    index: lang.marker_languages (the default) or lang.word_languages.
    """
    index = lang.marker_languages if index is None else index
    counts = {}
    for token in tokens[sentence.start:sentence.end]:
        for code in index.get(token.key, ()) if token.is_word else ():
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


# A possessive determiner may stand this many words before the subject name
# ("my cousin Bob", "our old dog Rufus").
_RELATION_MAX_WORDS = 2
# Names longer than this many words are not looked for.
NAME_MAX_WORDS = 4


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


def unclaimed(claim, structure_, names):
    """
    Return True when a sentence is in a language the rules have no data for.

    Names (the subject and the value), numbers and the robot's name aside,
    the sentence is unclaimed when a word holds a letter no claimed language
    writes ("piętrze"), when one unclaimed language knows more of its words
    than any claimed language does (language/unclaimed.toml against the
    claimed files and their common_words: "Erik bor i Göteborg" is Swedish,
    "Kasia nie je mięsa" Polish although German has "nie" and French "je"),
    or when it has UNCLAIMED_MIN_WORDS words or more and no claimed language
    knows any of them. The rules find hedges and negations only in the
    languages they have data for, so such a sentence cannot be shown to be a
    plain statement.
    """
    tokens = claim.analysis.tokens
    key = ('unclaimed', structure_.start)
    words = claim.analysis.cache.get(key)
    if words is None:
        words = _unclaimed_words(claim.lang, claim.analysis, structure_, claim.vocatives)
        claim.analysis.cache[key] = words
    inside = {index for index, _, _, _ in words for start, end in names
              if start <= tokens[index].start and tokens[index].end <= end}
    counted = [word for word in words if word[0] not in inside]
    if any(letters for _, letters, _, _ in counted):
        return True
    if not counted and words:
        # Nothing but the names and the value: no word shows the sentence's
        # language ("Elif hemşire", "Tuulikki ápoló").
        return True
    claimed, other = {}, {}
    for _, _, unclaimed_languages, claimed_languages in counted:
        for code in claimed_languages:
            claimed[code] = claimed.get(code, 0) + 1
        for code in unclaimed_languages:
            other[code] = other.get(code, 0) + 1
    best = max(claimed.values(), default=0)
    other_best = max(other.values(), default=0)
    if other_best > best:
        return True
    if other_best and other_best == best and any(
            letters or any(sequence in tokens[index].key
                           for sequence in claim.lang.unclaimed_sequences)
            for index, letters, _, _ in words):
        # A tie, and a word (the subject and the value too) is written with a
        # letter or letter sequence no claimed language has: "Kasia nie je
        # mięsa" (German knows "nie" and "je" too), "Zofia pochodzi z Krakowa".
        return True
    if other_best and other_best == best and len(counted) <= UNCLAIMED_TIE_MAX_WORDS and all(
            _verbless(claim.lang, tokens[index].key) for index, _, _, _ in counted):
        # A short sentence whose few words an unclaimed language knows as
        # well as a claimed one, and which in the claimed language has no
        # verb: "Hamid Bilbokoa da" (Basque "is"; Portuguese and Italian
        # "from"), "Agnès ne je mesa" (Slovene "does not eat"; French "ne",
        # "je"). Read in the claimed language it is no statement at all.
        return True
    return len(counted) >= UNCLAIMED_MIN_WORDS and not best


def _unclaimed_words(lang, analysis, structure_, vocatives):
    """Return (index, unclaimed letters, unclaimed languages, claimed languages) per word."""
    tokens, keys = analysis.tokens, analysis.keys
    robot = set()
    for name in vocatives:
        for index in range(structure_.start, structure_.end):
            if keys[index] == name[0] and tuple(keys[index:index + len(name)]) == name:
                robot.update(range(index, index + len(name)))
    words = []
    for index in range(structure_.start, structure_.end):
        token = tokens[index]
        # (Fillers count: one language's filler is another's word, "er".)
        if not token.is_word or token.is_number or index in robot:
            continue
        key = keys[index]
        languages = lang.known_languages.get(key, ())
        if not languages and _known_form(lang, key):
            languages = ('',)
        # (A capitalized word inside the sentence is a name: "... from Łódź".)
        letters = not lang.unclaimed_letters.isdisjoint(key) and not (
            index > structure_.start and token.text[:1].isupper())
        words.append((index, letters, lang.unclaimed_languages.get(key, ()), languages))
    return words


def _verbless(lang, key):
    """Return True for a pronoun, negator or "of" of a claimed language: not a verb."""
    return key not in lang.copulas and (
        key in lang.genitive_prepositions or key in lang.first_person or lang.is_negator(key))


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


def has_words(analysis, structure_, start, stop):
    """Return True when a word (fillers aside) stands in tokens [start, stop)."""
    return any(analysis.tokens[index].is_word and index not in structure_.skipped
               for index in range(start, stop))
