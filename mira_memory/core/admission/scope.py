# SPDX-License-Identifier: Apache-2.0
"""
Scopes: which triggers of the turn govern the evidence (the ConText algorithm).

Every trigger of the language files (a negation, hedge, report, condition,
time word, future, ended past, question tag, retraction or sarcasm marker)
is found once per sentence. Its scope runs from it in its direction:

- forward to the end of its clause, backward to the clause's start
  (reach "clause": "Ada is a nurse who will retire next year": "will"
  governs "retire next year" only);
- across clauses up to a termination ("but", "so", "because", "except",
  ";") or the sentence's end (reach "sentence": "If it rains, Ada takes the
  bus"; "Ada speaks Welsh, I think"); a sentence-reach trigger whose own
  clause was opened by "and", "so", "but" looks no further back ("Marek is
  the first aider, so if someone gets hurt, call him");
- over everything said before it in the turn (reach "turn": "Ada speaks
  Welsh. Just kidding.").

A pseudo-trigger holds trigger words that assert ("not only", "never says
no to", "valid until", "I know for a fact") and hides them. A trigger
counts against a proposal when its scope covers part of the evidence from
outside it, or covers the value from inside it: "Kai drives a Volvo, no
wait, a Saab" takes the Volvo back and asserts the Saab. Negation inside
the evidence is the predicate's to carry (anchors.polarity).
"""

from dataclasses import dataclass

from mira_memory.core.admission import clauses
from mira_memory.core.admission.language import Trigger
from mira_memory.core.admission.text import phrase_lengths, phrase_spans

# A later sentence this short that holds a negator or hedge takes the
# statement back ("Hmm, no, that was Carl.").
_RETRACTION_MAX_WORDS = 6
# A question tag after a statement is at most this many words ("doesn't she", "is that right").
_TAG_MAX_WORDS = 4


# Sentence-reach classes that look no further back than a joiner opening their clause.
_FORWARD_AFTER_JOINER = frozenset(('condition', 'report', 'hedge', 'modal', 'denial'))


@dataclass(frozen=True)
class Occurrence:
    """One trigger found in a sentence: tokens [start, stop)."""

    start: int
    stop: int
    trigger: Trigger


def occurrences(claim, structure_):
    """Return the trigger occurrences of a sentence (cached on the analysis)."""
    cache = claim.analysis.cache
    found = cache.get(('triggers', structure_.start))
    if found is None:
        found = tuple(_find(claim.lang, claim.analysis, structure_, claim.vocatives))
        cache[('triggers', structure_.start)] = found
    return found


def _find(lang, analysis, structure_, vocatives):
    tokens, keys = analysis.tokens, analysis.keys
    start, end = structure_.start, structure_.end
    suppressed = structure_.suppressed
    # Single trigger words among the sentence's own lead-ins ("don't forget
    # that", "could you remember that") are the operator talking to the
    # robot; phrases count anywhere ("Yeah right, ...").
    lead = _lead_end(lang, analysis, structure_, vocatives)
    masked = set()
    found = []
    for index in range(start, end):
        for phrase, trigger in lang.trigger_phrases.get(keys[index], ()):
            if trigger.kind == 'pseudo' and _matches(lang, analysis, phrase, index, end) and (
                    not trigger.after_negation
                    or _negated_before(lang, analysis, structure_, index)):
                found.append(Occurrence(index, index + len(phrase), trigger))
                masked.update(range(index, index + len(phrase)))
                break
    words = [index for index in range(start, end) if tokens[index].is_word]
    word_keys = [keys[index] for index in words]
    for begin, stop in phrase_spans(lang.plain_phrases, word_keys):
        masked.update(words[begin:stop])
    index = start
    while index < end:
        token = tokens[index]
        if index in masked or index in structure_.skipped:
            index += 1
            continue
        key = keys[index]
        match = None
        for phrase, trigger in lang.trigger_phrases.get(key, ()):
            if trigger.kind == 'pseudo':
                continue
            if len(phrase) == 1 and (index < lead or key in suppressed or (
                    key in lang.months and is_month(lang, tokens, index))):
                continue
            candidate = Occurrence(index, index + len(phrase), trigger)
            if (_matches(lang, analysis, phrase, index, end)
                    and not masked.intersection(range(index, index + len(phrase)))
                    and _applies(lang, analysis, structure_, candidate)):
                match = candidate
                break
        if match is None and token.is_word and index >= lead and key not in suppressed:
            match = _affixed(lang, key, index)
            if match is not None and not _applies(lang, analysis, structure_, match):
                match = None
        if match is not None:
            found.append(match)
            index = match.stop
            continue
        index += 1
    return found


def _negated_before(lang, analysis, structure_, index):
    """Return True when a negator stands earlier in the clause of index."""
    return any(analysis.tokens[position].is_word
               and lang.is_negator(analysis.keys[position], structure_.suppressed)
               for position in range(structure_.clause_start(index), index))


def _affixed(lang, key, index):
    """Return a trigger carried by a word's ending or opening ("doesn't", "n'aime", "she'll")."""
    for suffix, trigger in lang.trigger_suffixes:
        if key.endswith(suffix) and len(key) > len(suffix):
            return Occurrence(index, index + 1, trigger)
    for prefix, trigger in lang.trigger_prefixes:
        if key.startswith(prefix) and len(key) > 2:
            return Occurrence(index, index + 1, trigger)
    return None


def _matches(lang, analysis, phrase, index, end):
    keys = analysis.keys
    if index + len(phrase) > end:
        return False
    for offset, word in enumerate(phrase):
        key = keys[index + offset]
        if word == '{weekday}':
            ok = key in lang.weekdays
        elif word == '{month}':
            ok = key in lang.month_names
        elif word == '{number}':
            ok = analysis.tokens[index + offset].is_number
        elif word == '{any}':
            ok = analysis.tokens[index + offset].is_word
        else:
            ok = key == word
        if not ok:
            return False
    return True


def _applies(lang, analysis, structure_, occurrence):
    """Return True when an occurrence's conditions hold (closing infinitive, end of sentence)."""
    trigger = occurrence.trigger
    if trigger.closing == 'infinitive':
        end = structure_.clause_end(occurrence.start)
        last = end - 1
        while last > occurrence.stop and not analysis.tokens[last].is_word:
            last -= 1
        if last < occurrence.stop or not analysis.keys[last].endswith(lang.infinitive_endings):
            return False
    if trigger.at == 'end':
        return _only_tags_after(lang, analysis, structure_, occurrence.stop)
    return True


def _only_tags_after(lang, analysis, structure_, index):
    """Return True when only punctuation, fillers, trailing words or tags follow index."""
    tokens, keys = analysis.tokens, analysis.keys
    while index < structure_.end:
        token = tokens[index]
        if token.is_word and index not in structure_.skipped and not (
                keys[index] in lang.question_tags or keys[index] in lang.trailing):
            return False
        index += 1
    return True


def _plain_spans(lang, word_keys):
    return phrase_spans(lang.plain_phrases, word_keys)


def is_month(lang, tokens, index):
    """Return True when a month name that is also another word reads as the month ("in May")."""
    previous = tokens[index - 1] if index > 0 else None
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    return ((previous is not None and previous.is_word
             and (previous.key in lang.month_companions or previous.is_number))
            or (following is not None and following.is_number))


def _lead_end(lang, analysis, structure_, vocatives):
    """Return where the sentence's lead-ins, interjections and vocatives end."""
    keys = analysis.keys
    here = structure_.start
    moved = True
    while moved and here < structure_.end:
        moved = False
        for table in (lang.lead_ins, lang.interjections, lang.request_lead_ins):
            lengths = phrase_lengths(table, keys, here)
            if lengths:
                here += max(lengths)
                moved = True
                break
        else:
            for name in vocatives:
                if tuple(keys[here:here + len(name)]) == name:
                    here += len(name)
                    moved = True
                    break
            else:
                if keys[here] in lang.openers or here in structure_.skipped:
                    here += 1
                    moved = True
        while here < structure_.end and not analysis.tokens[here].is_word and (
                analysis.tokens[here].text in ',:'):
            here += 1
    return here


def scope(claim, structure_, occurrence, openers=()):
    """
    Return the (start, stop) token ranges an occurrence governs, in its sentence or turn.

    openers: token indices that open a clause whatever their word (the
    evidence's own start: a subject opens its clause).
    """
    trigger = occurrence.trigger
    ranges = []
    if trigger.direction in ('forward', 'both'):
        ranges.append((occurrence.stop, _forward_end(claim, structure_, occurrence, openers)))
    if trigger.direction in ('backward', 'both'):
        begin = _backward_start(claim, structure_, occurrence)
        if begin is not None:
            ranges.append((begin, occurrence.start))
    return ranges


def _forward_end(claim, structure_, occurrence, openers):
    if occurrence.trigger.reach == 'turn':
        return len(claim.analysis.tokens)
    # "won't eat anything but rice": a pseudo-trigger that ends scopes.
    stops = [found.start for found in occurrences(claim, structure_)
             if found.trigger.ends_scope and found.start >= occurrence.stop]
    return min(stops + [_boundary_end(claim, structure_, occurrence, openers)])


def _boundary_end(claim, structure_, occurrence, openers):
    lang, analysis = claim.lang, claim.analysis
    reach = occurrence.trigger.reach
    for boundary in structure_.boundaries:
        if boundary.index < occurrence.stop:
            continue
        if reach == 'sentence':
            if _terminates(lang, analysis, structure_, boundary, openers):
                return boundary.index
        elif clauses.effective(lang, analysis, structure_, boundary, openers) and _has_content(
                lang, analysis, structure_, occurrence.stop, boundary.index):
            # A scope with no word of its own yet reaches on into the next
            # clause: "It's not that | Ada likes tea".
            return boundary.index
    return structure_.end


def _has_content(lang, analysis, structure_, start, stop):
    return any(analysis.tokens[index].is_word and index not in structure_.skipped
               and analysis.keys[index] not in lang.function_words
               for index in range(start, stop))


def _terminates(lang, analysis, structure_, boundary, openers):
    """Return True when a boundary ends a sentence-reach scope (a termination)."""
    if boundary.kind == clauses.TERMINATION:
        return True
    if boundary.kind == clauses.SOFT_TERMINATION:
        return clauses.opens_clause(lang, analysis, structure_, boundary.after, openers)
    return False


def _backward_start(claim, structure_, occurrence):
    """Return where an occurrence's backward scope starts, or None when it has none."""
    lang, analysis = claim.lang, claim.analysis
    trigger = occurrence.trigger
    if trigger.reach == 'turn':
        return 0
    if trigger.tail is not None:
        # "..., she told me herself" is a report; "..., I told the kitchen" is not.
        words_after = sum(
            1 for index in range(occurrence.stop, structure_.clause_end(occurrence.start))
            if analysis.tokens[index].is_word and index not in structure_.skipped
            and analysis.keys[index] not in lang.persons)
        if words_after > trigger.tail:
            return None
    if trigger.backward_when_last and _clause_follows(claim, structure_, occurrence):
        return None
    opening = _opening_boundary(structure_, occurrence)
    if trigger.reach == 'clause':
        return structure_.start if opening is None else opening.after
    # A condition, report or hedge whose clause "and", "so", "but" or a
    # subordinator opened belongs to what follows ("... so if someone gets
    # hurt, call him", "... and I think Bob ..."); sarcasm and retractions
    # reach back anyway ("..., and pigs fly").
    if trigger.kind in _FORWARD_AFTER_JOINER and opening is not None and opening.kind in (
            clauses.COORDINATOR, clauses.SOFT_TERMINATION, clauses.TERMINATION,
            clauses.SUBORDINATOR):
        return None
    begin = structure_.start
    for boundary in structure_.boundaries:
        if boundary.index >= occurrence.start:
            break
        if _terminates(lang, analysis, structure_, boundary, ()):
            begin = boundary.after
    return begin


def _clause_follows(claim, structure_, occurrence):
    """Return True when another clause follows the occurrence's own clause in its sentence."""
    lang, analysis = claim.lang, claim.analysis
    for boundary in structure_.boundaries:
        if boundary.index > occurrence.stop and clauses.has_words(
                analysis, structure_, boundary.after, structure_.end):
            return True
    # Speech recognition writes no comma: "if someone gets hurt call him".
    return any(analysis.keys[index] in lang.imperatives and analysis.tokens[index - 1].is_word
               and analysis.keys[index - 1] not in lang.function_words
               for index in range(occurrence.stop + 1, structure_.end))


def _opening_boundary(structure_, occurrence):
    """Return the boundary that opened the occurrence's clause (not the trigger itself)."""
    found = None
    for boundary in structure_.boundaries:
        if boundary.index >= occurrence.start:
            break
        found = boundary
    return found


def reaching(claim, structure_, first, stop, value_spans, names):
    """
    Return the occurrences whose scope reaches a proposal (negation aside), in order.

    From outside the evidence [first, stop) a scope must cover one of its
    words (names included); from inside, one of the value's tokens.
    """
    tokens = claim.analysis.tokens
    value_tokens = {index for index in range(first, stop)
                    if any(start <= tokens[index].start and tokens[index].end <= end
                           for start, end in value_spans)}
    found = []
    for occurrence in occurrences(claim, structure_):
        if occurrence.trigger.kind in ('pseudo', 'negation'):
            continue
        if _inside_names(tokens, occurrence, names):
            continue
        inside = first <= occurrence.start and occurrence.stop <= stop
        if inside and occurrence.trigger.takes_object and _object_follows(
                claim, occurrence, value_tokens):
            continue
        if inside and value_tokens.intersection(range(occurrence.start, occurrence.stop)):
            # The value is the trigger's own word: "going home on Friday".
            found.append(occurrence)
            continue
        targets = value_tokens if inside else set(range(first, stop))
        for begin, end in scope(claim, structure_, occurrence, openers=(first,)):
            if any(begin <= index < end for index in targets):
                found.append(occurrence)
                break
    return found


def _object_follows(claim, occurrence, value_tokens):
    """
    Return True when a report verb's object is the value itself: no report, a habit.

    "The myna bird says hi to every customer", "Bob tells great stories":
    only function words stand between the verb and the value.
    """
    if not value_tokens:
        return False
    lang, tokens = claim.lang, claim.analysis.tokens
    between = [tokens[index] for index in range(occurrence.stop, min(value_tokens))]
    # Articles and prepositions only: "says she is vegan" and "says that ..." report.
    return all(token.is_word and token.key in lang.function_words
               and token.key not in lang.persons and token.key not in lang.copulas
               and token.key not in lang.complementizers for token in between)


def negations(claim, structure_, openers=()):
    """Return (occurrence, covered token indices) of every negation of the sentence."""
    found = []
    for occurrence in occurrences(claim, structure_):
        if occurrence.trigger.kind != 'negation':
            continue
        covered = set()
        for begin, end in scope(claim, structure_, occurrence, openers):
            covered.update(range(begin, end))
        found.append((occurrence, covered))
    return found


def _inside_names(tokens, occurrence, names):
    return any(span[0] <= tokens[occurrence.start].start
               and tokens[occurrence.stop - 1].end <= span[1] for span in names)


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
        found = occurrences(claim, structure_)
        if any(occurrence.trigger.kind in ('retraction', 'sarcasm') for occurrence in found):
            return 'retracted'
        lead = _lead_end(lang, claim.analysis, structure_, claim.vocatives)
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
    tagged = [keys[index] for index in words if keys[index] in lang.question_tags]
    return bool(tagged or sentence.question) and all(
        keys[index] in lang.question_tags or keys[index] in lang.persons
        or keys[index] in lang.copulas or keys[index] in lang.question_openers
        or keys[index] in lang.subject_pronouns
        or lang.is_negator(keys[index], structure_.suppressed)
        for index in words)
