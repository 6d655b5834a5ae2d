# SPDX-License-Identifier: Apache-2.0
"""
A sentence's language: which language data reads it, and whether any does.

Its marker words pick the words that lose another language's reading in it
(the homographs of its triggers); the language whose closed-class words it
holds most of cuts it into clauses (clauses.py). A sentence that no
language with data claims is refused (`unclaimed`): the rules find hedges
and negations only in the languages they have data for, so such a sentence
cannot be shown to be a plain statement.
"""

# A sentence in a claimed language of at least this many words (names and
# numbers aside) holds at least one word its language data knows.
UNCLAIMED_MIN_WORDS = 4
# A sentence of at most this many words (names and the value aside) that an
# unclaimed language knows as well as a claimed one is refused: too few words
# to tell the two apart.
UNCLAIMED_TIE_MAX_WORDS = 2


def languages(lang, tokens, sentence):
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
