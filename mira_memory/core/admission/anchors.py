# SPDX-License-Identifier: Apache-2.0
"""
Anchors: the subject and the value in the evidence, and the predicate's polarity.

Once clauses.py and scope.py have found the evidence to be a plain
statement, these rules check that it states the proposal:

- subject: the subject reference opens the evidence clause (only lead-ins,
  articles, titles, "my cousin", "me and", a filler or the same words said
  twice may come before it), is not only the possessor of a person or of
  something the predicate does not name ("Ada's landlord is a baker";
  "Ada's locker is number 9" is about Ada), and the value is not in a clause
  of its own ("... that Carl plays chess", "..., who rides horses"; "the
  only one who speaks Welsh" is the subject's own);
- value: a complete phrase of the evidence that carries meaning (not cut out
  of a longer phrase or number, not after a privative modifier, not what a
  contrast sets aside, not a number cut from its approximation);
- polarity: a negation that governs the value (in any language, "declines
  to", "hardly ever") needs a predicate that carries it (does_not_like, or a
  dislike predicate for an aversion idiom such as "can't stand"), and a
  negating predicate needs negated evidence.

Word groups that might be names (another entity between the subject and the
value, a longer name the subject starts) go back to admission, which asks
the store.
"""

from dataclasses import dataclass
import itertools
from typing import NamedTuple, Optional, Tuple

from mira_memory.core.admission import clauses
from mira_memory.core.admission.clauses import NAME_MAX_WORDS
from mira_memory.core.admission.normalize import locate, NormalizationError
from mira_memory.core.admission.normalize import normalize_key
from mira_memory.core.admission.text import BOUNDARIES, find_spans, key_of, phrase_lengths
from mira_memory.core.admission.text import phrase_spans, tokenize

# A possessed phrase ("your favourite drink", "Ada's docking station") is at
# most this many words.
_POSSESSED_MAX_WORDS = 3
# Bounds that keep one request's cost linear in its length: the value
# occurrences tried, the clause openings between subject and value that are
# checked, and the word groups between them asked of the store (beyond them
# the value's clause is unclear, so it is refused).
OCCURRENCES_MAX = 4
_CLAUSES_CHECKED_MAX = 8
_CANDIDATES_MAX = 32


@dataclass(frozen=True)
class Anchored:
    """What the anchor rules say: a failure, or what admission must still ask the store."""

    failure: Optional[str]
    # A person reference (or more clauses or word groups than are checked)
    # stands between the subject and the value, or these word sequences do
    # and would be another subject if they name an entity.
    other_subject_found: bool = False
    other_subject_candidates: Tuple[str, ...] = ()
    # The subject followed by the next words, as (name, only a possessor).
    longer_subject_candidates: Tuple[Tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class Marks:
    """What scope.py found that the anchor rules read: pseudo-triggers and corrections."""

    pseudo: frozenset = frozenset()       # token indices inside a pseudo-trigger
    retracted: frozenset = frozenset()    # token indices inside a retraction
    # (start, stop) of pseudo-triggers that hold a negator: "never says no to"
    affirmations: tuple = ()
    # The sentence is in a language that capitalizes every noun (German).
    nouns_capitalized: bool = False

    def affirmed(self, first, stop):
        """Return True when a double negation that asserts stands in [first, stop)."""
        return any(first <= begin and end <= stop for begin, end in self.affirmations)


class Occurrence(NamedTuple):
    """One occurrence of the evidence in its sentence, as the anchor rules read it."""

    structure: object               # the sentence's clauses.Structure
    first: int                      # the evidence's token range [first, stop)
    stop: int
    subject_span: Optional[Tuple[int, int]]   # character spans in the display text
    value_spans: Tuple[Tuple[int, int], ...]
    # Spans the rules must not read as grammar (the subject's name, a
    # relationship's value: it names the related entity).
    names: Tuple[Tuple[int, int], ...]
    negations: tuple                # scope.negations of the sentence
    marks: Marks

    def in_names(self, token):
        """Return True for a token inside one of the names."""
        return any(span[0] <= token.start and token.end <= span[1] for span in self.names)


class _SubjectAt(NamedTuple):
    """Where the subject stands: its token range and whether it is said as a possessor."""

    first: int
    stop: int
    possessive: bool


def marks_of(lang, analysis, structure_, found):
    """Return the Marks of a sentence's trigger occurrences."""
    pseudo, retracted, affirmations = set(), set(), []
    for occurrence in found:
        span = range(occurrence.start, occurrence.stop)
        if occurrence.trigger.kind == 'pseudo':
            pseudo.update(span)
            if any(lang.is_negator(analysis.keys[index]) for index in span):
                affirmations.append((occurrence.start, occurrence.stop))
        elif occurrence.trigger.kind == 'retraction':
            retracted.update(span)
    capitalized = (structure_.language or structure_.clause_language) in lang.capitalized_nouns
    return Marks(frozenset(pseudo), frozenset(retracted), tuple(affirmations), capitalized)


def judge(c, occurrence):
    """Return the Anchored verdict of the subject, the value and the polarity."""
    lang, tokens = c.lang, c.tokens
    structure_, first, stop = occurrence.structure, occurrence.first, occurrence.stop
    subject_span = occurrence.subject_span
    if subject_span is None:
        return Anchored('subject_partial')
    subject_tokens = _cover(lang, tokens, *subject_span)
    if subject_tokens is None:
        return Anchored('subject_partial')
    subject_first, subject_stop, possessive = subject_tokens
    # "Daan z'n vrouw werkt ...": a possessive word right after the name
    # makes it a possessor, as "Daan's" does.
    if subject_stop < stop and tokens[subject_stop].key in lang.possessive_linkers:
        possessive = True
    subject_key = normalize_key(c.subject)
    same = lang.robot_references if subject_key in lang.robot_references else frozenset()
    # A pronoun resuming the name ("Marek he is ...") and the subject said
    # again after a false start may stand before the value too.
    allowed, _ = clauses.walk(c, (first,), structure_.end, lead=True, prefixes=True, also=same,
                              skipped=structure_.skipped)
    bracket = (structure_.language or structure_.clause_language) in lang.verb_bracket
    # "d'Odile": a name opened by an elided preposition is said as a possessor.
    elided = tokens[subject_first].start < subject_span[0]
    if elided or subject_first not in allowed and not (
            bracket and _inverted(lang, tokens, first, subject_first)):
        failure = _genitive_failure(c, first, subject_span, subject_first, subject_stop, stop)
        if failure:
            return Anchored(failure)
        possessive = False  # "la ville préférée d'Étienne est ...": judged just now
    subject = _SubjectAt(subject_first, subject_stop, possessive)
    first_failure = None
    for value_span in occurrence.value_spans or [None]:
        verdict = _value_and_polarity(c, occurrence, subject, value_span)
        if verdict.failure is None:
            return verdict
        first_failure = first_failure or verdict
    return first_failure


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


def _cover(lang, tokens, start, end):
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


def _is_abbreviation(tokens, index, lang):
    """Return True for a word written as an abbreviation ("No. 4", "St. Albans")."""
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    return (following is not None and following.text == '.'
            and following.start == tokens[index].end and tokens[index].key in lang.abbreviations
            and index + 2 < len(tokens) and tokens[index + 2].is_word)


def _elided(lang, key):
    """Return True for a function word elided onto a word ("nell'orchestra", "l'hôpital")."""
    head, apostrophe, rest = key.partition("'")
    return bool(apostrophe and rest) and (head + "'" in lang.function_words
                                          or head in lang.function_words)


def _is_adverb(lang, key):
    return any(key.endswith(suffix) and len(key) > len(suffix) + 2
               for suffix in lang.adverb_suffixes)


def _possessor_failure(c, tokens, subject_stop, value_first, end, nouns_capitalized=False):
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
    while index < min(value_first, end) and len(possessed) < _POSSESSED_MAX_WORDS:
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


def _genitive_failure(c, first, subject_span, subject_first, subject_stop, stop):
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
    if (not content or len(content) > _POSSESSED_MAX_WORDS
            or not all(token.is_word for token in possessed)
            or subject_stop >= stop or tokens[subject_stop].key not in lang.copulas):
        return 'subject_not_first'
    relation = [key for key in content if key in lang.relation_nouns]
    named = set(c.predicate.split('_')) - {'is', 'has', 'of', 'name', 'named'}
    if relation and named != set(relation[-1:]):
        return 'subject_possessor'
    return None


def _content_word(lang, tokens, first, stop, key):
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


def _bracket_word(lang, key):
    """Return True unless only languages without a verb bracket know key ("cakes")."""
    known = lang.word_languages.get(key, ())
    return _is_closing_verb(lang, key) or any(code in lang.verb_bracket for code in known)


def _is_closing_verb(lang, key):
    """
    Return True for what may close a verb-final clause.

    An infinitive or participle ("wohnen", "verheiratet") or a predicative
    adjective ("gültig", "geldig").
    """
    return key.endswith(lang.infinitive_endings) or (
        key.startswith(lang.participle_prefixes) and key.endswith(lang.participle_endings)) or (
        any(key.endswith(ending) and len(key) > len(ending) + 2
            for ending in lang.predicative_endings))


def _inverted(lang, tokens, first, subject_first):
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


def _value_and_polarity(c, occurrence, subject, value_span):
    lang, tokens = c.lang, c.tokens
    first, stop, marks = occurrence.first, occurrence.stop, occurrence.marks
    subject_span = occurrence.subject_span
    subject_first, subject_stop, possessive = subject
    structure_ = occurrence.structure
    bracket = (structure_.language or structure_.clause_language) in lang.verb_bracket
    if value_span is None:
        return Anchored('value_partial')
    value_key = normalize_key(c.value)
    value_words = [token.key for token in tokenize(value_key) if token.is_word]
    if not any(char.isalnum() for char in value_key) or not value_words:
        return Anchored('value_vacuous')
    # A relationship's value names an entity, which resolution checks: "The
    # Who" is a name, not two function words.
    # "she/her": a list written with slashes names its words, so it is a value.
    if not c.relationship and '/' not in value_key and all(
            (word in lang.function_words and word not in lang.months) or lang.is_negator(word)
            for word in value_words):
        return Anchored('value_vacuous')
    if '_'.join(value_words) == c.predicate:
        return Anchored('value_vacuous')
    if value_span[0] < subject_span[1] and subject_span[0] < value_span[1]:
        return Anchored('value_is_subject')
    covered = _cover(lang, tokens, *value_span)
    if covered is None:
        return Anchored('value_partial')
    value_first, value_stop, value_possessive = covered
    # A value that is only a possessor ("likes Bob's cooking") is cut short,
    # except the related entity of "<subject> is <entity>'s <relation>".
    if value_possessive and not (c.relationship and _names_relation(
            lang, tokens, first, value_first, value_stop, stop)):
        return Anchored('value_partial')
    if value_first > first:
        previous = tokens[value_first - 1]
        if previous.is_word and previous.key in lang.privative_modifiers:
            return Anchored('value_partial')
    # Who the clause is about is judged before where the value ends: "max's dad
    # built the revolving stage back in ..." is about the dad.
    if possessive and value_first < subject_stop:
        return Anchored('value_partial')

    # "Ada's an early riser": the 's is "is" or "has", not a possessive.
    if possessive and tokens[subject_stop - 1].key.endswith("'s") and (
            value_first == subject_stop or tokens[subject_stop].key in lang.contraction_followers):
        possessive = False
    subject_key = normalize_key(c.subject)
    if subject_key in lang.possessive_subjects:
        possessive = True
    if possessive:
        failure = _possessor_failure(c, tokens, subject_stop, value_first, stop,
                                     marks.nouns_capitalized)
        if failure:
            return Anchored(failure)

    # A verb-final clause closes with its participle or infinitive
    # ("Wiebke ist mit Matthias verheiratet"); a fronted value is followed by
    # the verb and then the subject ("In Utrecht werkt Femke ...").
    closing_verb = bracket and tokens[value_stop].is_word if value_stop < stop else False
    closing_verb = closing_verb and (value_stop + 1 == subject_first or (
        value_stop + 1 == stop and _is_closing_verb(lang, tokens[value_stop].key)))
    # "Theo and Keiko're neighbours": the value ends before a contracted verb,
    # and what follows is that verb's complement.
    contracted = tokens[value_stop - 1].key.endswith(lang.contraction_suffixes) and (
        not tokens[value_stop - 1].key.endswith(lang.possessive_suffixes))
    closing_verb = closing_verb or contracted
    # A verb-final language closes the clause with one word after the value
    # ("Friedas Reisepass ist bis 2031 gültig", "die Türkisch spricht").
    # (Not a word only a language without one knows: "mag green tea | cakes".)
    closing_verb = closing_verb or (bracket and value_stop + 1 == stop
                                    and _bracket_word(lang, tokens[value_stop].key))
    if value_stop < stop and not value_possessive and not closing_verb:
        following = tokens[value_stop]
        keys = c.analysis.keys
        if following.is_word and (
                following.key in lang.value_continuers or not (
                    (following.key in lang.function_words
                     and not _content_word(lang, tokens, first, stop, following.key))
                    or _elided(lang, following.key)
                    or (following.key in lang.value_followers
                        and not _content_word(lang, tokens, first, stop, following.key))
                    or _is_adverb(lang, following.key)
                    or phrase_lengths(lang.contrast_markers, keys, value_stop))):
            return Anchored('value_partial')
    failure = _set_aside(c, occurrence, value_first, value_stop)
    if failure:
        return Anchored(failure)
    person, candidates = False, ()
    if value_first >= subject_stop:
        same = lang.robot_references if subject_key in lang.robot_references else frozenset()
        failure = _other_clause(lang, tokens, subject_stop, value_first)
        if failure:
            return Anchored(failure)
        person, candidates = _other_subject(lang, tokens, subject_stop, value_first, same,
                                            marks.retracted)

    polarity = _polarity_failure(c, occurrence, value_span)
    if polarity:
        return Anchored(polarity)
    longer = []
    words = [token.text for token in tokens[subject_first:subject_stop]]
    for index in range(subject_stop, min(subject_stop + NAME_MAX_WORDS - 1, stop)):
        token = tokens[index]
        if possessive or not token.is_word:
            break
        suffix = next((suffix for suffix in lang.apostrophe_suffixes
                       if token.key.endswith(suffix) and len(token.key) > len(suffix)), None)
        if suffix is not None:
            words.append(token.text[:-len(suffix)])
            longer.append((' '.join(words), _possessor_failure(
                c, tokens, index + 1, max(value_first, index + 1), stop) is not None))
            break
        words.append(token.text)
        longer.append((' '.join(words), False))
    return Anchored(None, person, candidates, tuple(longer))


def _set_aside(c, occurrence, value_first, value_stop):
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
                    and clauses.ends_phrase(lang, tokens, first + begin - 1)
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


def _other_clause(lang, tokens, after_subject, value_first):
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


def _polarity_failure(c, occurrence, value_span):
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


def _names_relation(lang, tokens, first, value_first, value_stop, stop):
    """Return True for "... is <value>'s <at most 3 words>" ending the evidence."""
    before = tokens[value_first - 1] if value_first > first else None
    rest = tokens[value_stop:stop]
    return (before is not None and before.is_word and (
                before.key in lang.copulas or (before.key in lang.persons
                                               and before.key.endswith("'s")))
            and 0 < len(rest) <= _POSSESSED_MAX_WORDS
            and all(token.is_word and not token.key.endswith(lang.apostrophe_suffixes)
                    for token in rest))


def _other_subject(lang, tokens, after_subject, value_first, same, transparent=frozenset()):
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
