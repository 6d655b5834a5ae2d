# SPDX-License-Identifier: Apache-2.0
"""
The subject's place: it opens the evidence clause, and the value is its own.

- The subject reference opens the evidence clause (only lead-ins, articles,
  titles, "my cousin", "me and", a filler or the same words said twice may
  come before it; a verb-second clause may put an adverbial and its verb
  first: `inverted`), or is named as the possessor after what it has ("La
  ville préférée d'Étienne est Marseille": `genitive_failure`).
- It is not only the possessor of a person or of something the predicate
  does not name ("Ada's landlord is a baker"; "Ada's locker is number 9" is
  about Ada: `possessor_failure`).
- The value is not in a clause of its own ("... that Carl plays chess",
  "..., who rides horses"; "the only one who speaks Welsh" is the
  subject's own: `other_clause`), and no other subject stands between the
  subject and the value (`other_subject`: a person reference refuses it;
  word groups that might be names go back to admission, which asks the
  store).
"""

from mira_memory.core.admission.evidence_shape import NAME_MAX_WORDS
from mira_memory.core.admission.text import BOUNDARIES

# A possessed phrase ("your favourite drink", "Ada's docking station") is at
# most this many words.
POSSESSED_MAX_WORDS = 3
# Bounds that keep one request's cost linear in its length: the clause
# openings between subject and value that are checked, and the word groups
# between them asked of the store (beyond them the value's clause is
# unclear, so it is refused).
_CLAUSES_CHECKED_MAX = 8
_CANDIDATES_MAX = 32


def possessor_failure(c, tokens, subject_stop, value_first, end, nouns_capitalized=False):
    """
    Return 'subject_possessor' when a possessed subject is not what the clause describes.

    "<possessor>'s <at most 3 words> <copula> <value>" describes the
    possessor ("your favourite colour is teal", "Pauls Lieblingsstadt ist
    Wien"), and so does a possessed thing the predicate names ("your docking
    station sits behind the sofa", predicate docking_station_location). A
    person or animal possessed is another party ("Ada's landlord is a baker"),
    unless the clause names the relation itself ("Dana's partner is Fox",
    predicate partner or a relationship).
    """
    lang = c.lang
    parts = set(c.predicate.split('_'))
    possessed = []
    index = subject_stop
    while index < min(value_first, end) and len(possessed) < POSSESSED_MAX_WORDS:
        token = tokens[index]
        if not token.is_word or token.key.endswith(lang.apostrophe_suffixes):
            return 'subject_possessor'
        if token.key in lang.copulas and possessed:
            break
        possessed.append(token.key)
        index += 1
    if not possessed:
        return None
    copula = index < end and tokens[index].is_word and tokens[index].key in lang.copulas
    relation = [key for key in possessed if key in lang.relation_nouns]
    if relation:
        named = parts - {'is', 'has', 'of', 'name', 'named'}
        if named == set(relation[-1:]):
            return None
        # A name right after "<possessor>'s <relation> is" fills the relation
        # itself ("Keiko's husband is Olu"); "is a baker" describes the other.
        after = index + 1
        while after < value_first and (tokens[after].key in lang.subject_prefixes or (
                tokens[after].text == '.' and tokens[after - 1].key in lang.subject_prefixes)):
            after += 1
        if copula and after == value_first and (c.relationship or (
                tokens[value_first].text[:1].isupper() and not nouns_capitalized)):
            return None
        return 'subject_possessor'
    if copula:
        return None
    return None if parts & set(possessed) else 'subject_possessor'


def genitive_failure(c, first, subject_span, subject_first, subject_stop, stop):
    """
    Return None for a subject named as the possessor after what it has, else the failure.

    "<the> <up to 3 words> of <subject> <copula> <value>" describes the
    possessor, as "<subject>'s ... is" does: "La ville préférée d'Étienne est
    Marseille", "Il colore preferito di Chiara è il verde". A person or animal
    possessed is another party ("The friend of Ada is a baker"), and with
    another verb the clause is about what is possessed ("The friend of Ada
    likes tea"): the subject does not open the clause.
    """
    lang, tokens = c.lang, c.tokens
    elided = tokens[subject_first].start < subject_span[0]
    if elided:
        possessed = tokens[first:subject_first]
    elif subject_first > first and tokens[subject_first - 1].key in lang.genitive_prepositions:
        possessed = tokens[first:subject_first - 1]
    else:
        return 'subject_not_first'
    content = [token.key for token in possessed
               if token.key not in lang.function_words and token.key not in lang.subject_prefixes]
    if (not content or len(content) > POSSESSED_MAX_WORDS
            or not all(token.is_word for token in possessed)
            or subject_stop >= stop or tokens[subject_stop].key not in lang.copulas):
        return 'subject_not_first'
    relation = [key for key in content if key in lang.relation_nouns]
    named = set(c.predicate.split('_')) - {'is', 'has', 'of', 'name', 'named'}
    if relation and named != set(relation[-1:]):
        return 'subject_possessor'
    return None


def inverted(lang, tokens, first, subject_first):
    """
    Return True for a verb-second clause: "Seit 2015 wohnt Wiebke ...".

    An adverbial of at most three words (opening with a function word or a
    number) and then one verb may stand before the subject.
    """
    before = tokens[first:subject_first]
    return (3 <= len(before) <= 5 and all(token.is_word for token in before)
            and (before[0].key in lang.function_words or before[0].is_number)
            and before[-1].key not in lang.function_words
            # "de dochter van Henk werkt ...": the word before the name is
            # a genitive preposition, not the verb.
            and before[-1].key not in lang.genitive_prepositions)


def other_clause(lang, tokens, after_subject, value_first):
    """
    Return 'value_in_other_clause' when a complementizer or relative pronoun separates them.

    "You remember that Carl plays chess": the chess is Carl's; "Bob lives
    near a farmer who rides horses": the horses are the farmer's. A "that"
    right before the value (or its article) is a determiner ("likes that café").
    """
    index = after_subject
    while index < value_first:
        token = tokens[index]
        index += 1
        if not token.is_word:
            continue
        if token.key in lang.relative_pronouns and _subject_relative(lang, tokens, index - 1):
            # "Ada is the only one who speaks Welsh": the clause is the subject's own.
            continue
        if token.key in lang.relative_pronouns:
            # "Bob Stone, who is my neighbour, drives a taxi": a clause about
            # the subject itself, closed by a comma before the value.
            about_subject = index - 1 == after_subject or (
                index - 2 == after_subject and tokens[after_subject].text == ',')
            closing = next((position for position in range(index, value_first)
                            if tokens[position].text == ','), None)
            if not about_subject or closing is None:
                return 'value_in_other_clause'
            index = closing + 1
            continue
        if token.key in lang.demonstratives and index - 2 == after_subject and (
                tokens[after_subject].text == ','):
            # "Moss, that dog, she's afraid of thunder": a demonstrative
            # phrase between commas right after the name, resumed by a
            # person pronoun, is a left dislocation, not another clause.
            closing = next((position for position in range(index, min(index + 3, value_first))
                            if tokens[position].text == ','), None)
            if closing is not None and closing + 1 < value_first and (
                    tokens[closing + 1].key in lang.persons):
                index = closing + 1
                continue
        if token.key in lang.complementizers:
            rest = tokens[index + 1:value_first]
            if len(rest) > 1 or (rest and rest[0].key not in lang.function_words):
                return 'value_in_other_clause'
    return None


def _subject_relative(lang, tokens, index):
    """Return True when the relative pronoun at index ends "the only one who" (language data)."""
    keys = [token.key for token in tokens[max(0, index - 6):index + 1]]
    return any(keys[len(keys) - len(phrase):] == list(phrase)
               for phrases in lang.subject_relatives.values() for phrase in phrases)


def other_subject(lang, tokens, after_subject, value_first, same, transparent=frozenset()):
    """
    Look for another subject between the subject and the value.

    Returns (a person reference opens a clause there, or more is there than
    is checked; the word groups that would be another subject if they named
    a known entity): admission rejects on the first and asks the store about
    the second. Every group of content words between them is asked
    ("Bob lives near Ada, who ...", "Ada met Bob in Paris"), except names
    coordinated with the subject ("Ada and Bob are vegan").
    """
    candidates = []
    openings = 0
    resumable = after_subject
    for index in range(after_subject, value_first):
        token = tokens[index]
        if index < resumable:
            continue  # inside "that one," before the resumption: "Daan, that one, he's ..."
        if token.is_word:
            if token.key not in lang.conjunctions or index == after_subject:
                continue
        elif token.text not in BOUNDARIES:
            continue
        opener = index + 1
        while opener < value_first and not tokens[opener].is_word:
            opener += 1
        if opener >= value_first or opener in transparent:
            # "Nils speaks Danish, I mean Norwegian": a correction is no subject.
            continue
        if index == resumable != after_subject and tokens[opener].key in lang.persons and (
                tokens[opener].key in lang.subject_pronouns):
            continue  # the pronoun that resumes the name: "Daan, that one, he's a ..."
        if index == resumable and _resumes_or_describes(lang, tokens, opener, value_first):
            if _stressed_pronoun(lang, tokens, opener, value_first):
                resumable = opener + 1  # "Marc, him, he's from Lille": then the resumption
            elif tokens[opener].key in lang.demonstratives:
                # "Moss, that dog, she's afraid of thunder": then the resumption
                resumable = _closing_comma(tokens, opener, value_first, numbers=True)
            continue
        openings += 1
        if openings > _CLAUSES_CHECKED_MAX or (
                tokens[opener].key in lang.persons and tokens[opener].key not in same):
            return True, ()
    # (Names are looked for after an appositive that a pronoun resumes.)
    start = after_subject if resumable == after_subject else resumable + 1
    if start < value_first and tokens[start].is_word and tokens[start].key in lang.coordinators:
        start += 1
        while start < value_first and tokens[start].is_word and (
                tokens[start].key not in lang.function_words):
            start += 1
    # (A word right after "a", "un", "ein" is a common noun, not a name: "has a
    # max of twenty people" with a person Max.)
    content = [index for index in range(start, value_first)
               if tokens[index].is_word and tokens[index].key not in lang.function_words
               and not (index > 0 and tokens[index - 1].key in lang.indefinite_articles)]
    for position, index in enumerate(content):
        words = []
        for following in content[position:position + NAME_MAX_WORDS]:
            if following != index + len(words):
                break
            words.append(tokens[following].text)
            candidates.append(' '.join(words))
    candidates = tuple(dict.fromkeys(candidates))
    if len(candidates) > _CANDIDATES_MAX:
        return True, ()
    return False, candidates


def _resumes_or_describes(lang, tokens, opener, value_first):
    """
    Return True for what follows the subject's comma without opening another subject.

    A pronoun resuming the name ("My colleague Sami, she is from Beirut") or
    an appositive of at most four words closed by a comma ("Jasper, our
    night porter, speaks four languages").
    """
    key = tokens[opener].key
    if _stressed_pronoun(lang, tokens, opener, value_first):
        return True
    if key in lang.subject_pronouns and key in lang.persons and (
            opener + 1 < value_first and tokens[opener + 1].is_word):
        return True
    if key in lang.possessive_determiners or key in lang.subject_prefixes:
        closing = _closing_comma(tokens, opener, value_first)
        return closing is not None
    if key in lang.demonstratives:
        # "Moss, that dog, she's ...": a demonstrative appositive counts only
        # when a pronoun resumes the name after it.
        closing = _closing_comma(tokens, opener, value_first, numbers=True)
        return closing is not None and closing + 1 < value_first and (
            tokens[closing + 1].key in lang.persons) and (
            tokens[closing + 1].key in lang.subject_pronouns)
    return False


def _closing_comma(tokens, opener, value_first, numbers=False):
    """
    Return the comma that closes an appositive of at most four words at opener, or None.

    numbers: a number may stand in it ("that one").
    """
    closing = next((index for index in range(opener, min(opener + 5, value_first))
                    if not (tokens[index].is_word or numbers and tokens[index].is_number)),
                   None)
    return closing if closing is not None and tokens[closing].text == ',' else None


def _stressed_pronoun(lang, tokens, opener, value_first):
    """Return True for a person pronoun alone between commas after the name ("Marc, lui, ...")."""
    return (tokens[opener].key in lang.persons and opener + 1 < value_first
            and tokens[opener + 1].text == ',')
