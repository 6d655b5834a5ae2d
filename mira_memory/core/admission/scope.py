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
the evidence is the predicate's to carry (polarity.py).
"""

from typing import NamedTuple

from mira_memory.core.admission import clauses
from mira_memory.core.admission.language import Trigger
from mira_memory.core.admission.text import phrase_lengths, phrase_spans


# Sentence-reach classes that look no further back than a joiner opening their clause.
_FORWARD_AFTER_JOINER = frozenset(('condition', 'report', 'hedge', 'modal', 'denial'))


class Occurrence(NamedTuple):
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
    lead = lead_end(lang, analysis, structure_, vocatives)
    matches = {index: matched(lang, analysis, index, end) for index in range(start, end)}
    masked = set()
    found = []
    for index in range(start, end):
        for phrase, trigger in matches[index]:
            if trigger.kind == 'pseudo' and (
                    not trigger.after_negation
                    or _negated_before(lang, analysis, structure_, index)) and not (
                    _belief_in_placeholder(lang, analysis, index, phrase)):
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
        for phrase, trigger in matches[index]:
            if trigger.kind == 'pseudo':
                continue
            # (A word that loses its trigger reading in the sentence's language
            # keeps it at the sentence's end: a preposition never ends one,
            # "... gosta de jazz no".)
            if len(phrase) == 1 and (index < lead or (
                    key in suppressed and trigger.at != 'end') or (
                    key in lang.months and is_month(lang, tokens, index))):
                continue
            candidate = Occurrence(index, index + len(phrase), trigger)
            if (not masked.intersection(range(index, index + len(phrase)))
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


def _belief_in_placeholder(lang, analysis, index, phrase):
    """
    Return True when a pseudo-trigger's {any} is filled by a report or hedge word.

    "ne boit que du thé" restricts, but "personne ne croit que ..." and
    "non penso che ..." are a negated belief governing a clause.
    """
    return any(word == '{any}' and analysis.keys[index + offset] in lang.belief_words
               for offset, word in enumerate(phrase))


def matched(lang, analysis, index, end):
    """Return the (phrase, trigger) pairs whose words start at index, longest first."""
    entry = lang.trigger_trie.get(analysis.keys[index])
    if entry is None:
        return ()
    found = list(entry[0])
    frontier = [(entry[1], index + 1)] if entry[1] else []
    while frontier:
        node, position = frontier.pop()
        if position >= end:
            continue
        for word in _readings(lang, analysis.tokens[position]):
            entry = node.get(word)
            if entry is not None:
                found.extend(entry[0])
                if entry[1]:
                    frontier.append((entry[1], position + 1))
    if len(found) > 1:
        found.sort(key=lambda item: (-len(item[0]), item[1].at != 'end'))
    return found


def _readings(lang, token):
    """Yield what a token may stand for in a phrase: itself, then the placeholders it fills."""
    yield token.key
    if token.is_word:
        yield '{any}'
        if token.key in lang.weekdays:
            yield '{weekday}'
        if token.key in lang.month_names:
            yield '{month}'
        if token.is_number:
            yield '{number}'


def _negated_before(lang, analysis, structure_, index):
    """Return True when a negator stands earlier in the clause of index."""
    return any(analysis.tokens[position].is_word
               and lang.is_negator(analysis.keys[position], structure_.suppressed)
               for position in range(structure_.clause_start(index), index))


def _affixed(lang, key, index):
    """Return a trigger carried by a word's ending or opening ("doesn't", "n'aime", "she'll")."""
    if key.endswith(lang.trigger_suffix_texts):
        for suffix, trigger in lang.trigger_suffixes:
            if key.endswith(suffix) and len(key) > len(suffix):
                return Occurrence(index, index + 1, trigger)
    if len(key) > 2 and key.startswith(lang.trigger_prefix_texts):
        for prefix, trigger in lang.trigger_prefixes:
            if key.startswith(prefix):
                return Occurrence(index, index + 1, trigger)
    return None


def _applies(lang, analysis, structure_, occurrence):
    """Return True when an occurrence's conditions hold (closing infinitive, end of sentence)."""
    trigger = occurrence.trigger
    if trigger.requires and not _in_clause(lang, analysis, structure_, occurrence,
                                           trigger.requires):
        return False
    if trigger.unless and _in_clause(lang, analysis, structure_, occurrence, trigger.unless):
        return False
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


def _in_clause(lang, analysis, structure_, occurrence, phrases):
    """Return True when one of phrases stands in the occurrence's clause, around it."""
    # (A trigger that is a boundary word itself, "until", opens the clause after it.)
    # A weak word boundary that opens no clause does not end it: "starts | as
    # a setter in September" is one clause. A comma does: "For now, Ada likes
    # teal, every morning" keeps "every morning" out of "For now"'s clause.
    begin = structure_.clause_start(occurrence.start)
    end = structure_.clause_end(occurrence.stop)
    for boundary in structure_.boundaries:
        if boundary.index >= end and boundary.index >= occurrence.stop:
            if (boundary.index > end or boundary.kind == clauses.PUNCTUATION
                    or clauses.effective(lang, analysis, structure_, boundary)):
                break
            end = structure_.clause_end(boundary.after)
    tokens = analysis.tokens
    for index in range(begin, end):
        for phrase in phrases:
            if index + len(phrase) <= end and all(
                    word in _readings(lang, tokens[index + offset])
                    for offset, word in enumerate(phrase)):
                return True
    return False


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


def lead_end(lang, analysis, structure_, vocatives):
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
    # "won't eat anything but rice": a pseudo-trigger that ends negations.
    stops = [found.start for found in occurrences(claim, structure_)
             if found.trigger.ends_scope and found.start >= occurrence.stop
             and occurrence.trigger.kind == 'negation']
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
        elif boundary.kind == clauses.TERMINATION or (
                clauses.effective(lang, analysis, structure_, boundary, openers)
                and not _alone(lang, analysis, structure_, occurrence, boundary)):
            # A trigger alone in its clause reaches on into the next one ("At
            # the moment, | Lars lives ...", "It's not that | Ada ..."), never
            # past "but".
            return boundary.index
    return structure_.end


def _alone(lang, analysis, structure_, occurrence, boundary):
    """Return True when the occurrence's clause up to boundary holds no word of its own."""
    if occurrence.trigger.kind == 'negation':
        return not _has_content(lang, analysis, structure_, occurrence.stop, boundary.index)
    begin = structure_.clause_start(occurrence.start)
    return not (_has_content(lang, analysis, structure_, begin, occurrence.start)
                or _has_content(lang, analysis, structure_, occurrence.stop, boundary.index))


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
    if trigger.kind in ('report', 'hedge') and any(
            boundary.kind == clauses.SUBORDINATOR
            and occurrence.stop - 1 <= boundary.index <= occurrence.stop
            for boundary in structure_.boundaries):
        # "..., diz que o calcário ...", "..., says that ...": what follows the
        # "that" is what is said.
        return None
    if trigger.tail is not None:
        # A new subject right after the trigger is its complement: "..., I think
        # they're called the Molars", "..., says they're cursed" govern forward.
        # ("..., acho eu", "..., denk ik": a pronoun alone after it is its subject.)
        if any(boundary.kind == clauses.SUBJECT and boundary.index == occurrence.stop
               and clauses.has_words(analysis, structure_, boundary.index + 1,
                                     structure_.clause_end(boundary.index + 1))
               for boundary in structure_.boundaries):
            return None
        # "..., she told me herself" is a report; "..., I told the kitchen" is not.
        # A person said after the verb is the one reporting ("me lo dijo su
        # hermana"), not what was told.
        words_after = sum(
            1 for index in range(occurrence.stop, structure_.clause_end(occurrence.start))
            if analysis.tokens[index].is_word and index not in structure_.skipped
            and analysis.keys[index] not in lang.persons
            and analysis.keys[index] not in lang.possessive_determiners
            and analysis.keys[index] not in lang.relation_nouns)
        if words_after > trigger.tail:
            return None
        # "she's Irish, from Cork I think": a short hedge closing a clause of
        # other words doubts that detail, not the statement before it.
        # (A clause that opens with a preposition: "..., Bob says" still reports.)
        own = structure_.clause_start(occurrence.start)
        if own > structure_.start and all(
                analysis.keys[index] in lang.persons or analysis.keys[index] in lang.speakers
                for index in range(own, occurrence.start) if analysis.tokens[index].is_word):
            own = structure_.clause_start(own - 1)  # "from Cork | I think"
        first = next((index for index in range(own, occurrence.start)
                      if analysis.tokens[index].is_word and index not in structure_.skipped),
                     None)
        if own > structure_.start and first is not None and (
                analysis.keys[first] in lang.phrase_prepositions) and any(
                analysis.keys[index] not in lang.function_words
                for index in range(first + 1, occurrence.start)
                if analysis.tokens[index].is_word):
            return own
    opening = _opening_boundary(structure_, occurrence)
    # A condition, report or hedge whose clause "and", "so", "but" or a
    # subordinator opened belongs to what follows ("... so if someone gets
    # hurt, call him", "... and I think Bob ..."); sarcasm and retractions
    # reach back anyway ("..., and pigs fly").
    joined = trigger.kind in _FORWARD_AFTER_JOINER and opening is not None and opening.kind in (
        clauses.COORDINATOR, clauses.SOFT_TERMINATION, clauses.TERMINATION,
        clauses.SUBORDINATOR) and analysis.keys[opening.index] not in lang.relative_pronouns
    if trigger.backward_when_last:
        if joined or _clause_follows(claim, structure_, occurrence):
            return None
        # A condition at the end belongs to the clause right before it:
        # "... he gets really upset if you mix them up".
        return _previous_clause_start(claim, structure_, occurrence)
    if trigger.reach == 'clause':
        return structure_.start if opening is None else opening.after
    if joined:
        return None
    begin = structure_.start
    for boundary in structure_.boundaries:
        if boundary.index >= occurrence.start:
            break
        if _terminates(lang, analysis, structure_, boundary, ()):
            begin = boundary.after
    return begin


def _previous_clause_start(claim, structure_, occurrence):
    """Return where the clause before the occurrence's own clause starts."""
    lang, analysis = claim.lang, claim.analysis
    before = [boundary for boundary in structure_.boundaries
              if boundary.after <= occurrence.start and boundary.index < occurrence.start
              and clauses.effective(lang, analysis, structure_, boundary)]
    own = [boundary for boundary in before if boundary.index >= occurrence.start - 1]
    starts = [boundary.after for boundary in before if boundary not in own]
    # ... or an imperative without a mark: "o gilberto é o eletricista |
    # liga-lhe quando precisares" (the condition is the call's).
    starts += [index for index in range(structure_.start + 1, occurrence.start)
               if _unmarked_imperative(lang, analysis, structure_, index)]
    return max(starts, default=structure_.start)


def _clause_follows(claim, structure_, occurrence):
    """Return True when another clause follows the occurrence's own clause in its sentence."""
    lang, analysis = claim.lang, claim.analysis
    for boundary in structure_.boundaries:
        # (A new subject right after "if" is the condition's own: "if he's on nights".)
        if (boundary.index > occurrence.stop and not (
                boundary.kind == clauses.SUBJECT and boundary.index == occurrence.stop)
                and clauses.has_words(analysis, structure_, boundary.after, structure_.end)):
            return True
    # Speech recognition writes no comma: "if someone gets hurt call him".
    return any(_unmarked_imperative(lang, analysis, structure_, index)
               for index in range(occurrence.stop + 1, structure_.end))


def _unmarked_imperative(lang, analysis, structure_, index):
    """Return True for an imperative right after a content word: a clause without a mark."""
    return bool(lang.imperative_length(analysis.keys, index)
                and analysis.tokens[index - 1].is_word
                and analysis.keys[index - 1] not in lang.function_words)


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
            if occurrence.trigger.kind == 'report' and occurrence.start - 1 in value_tokens:
                continue  # a noun of the value, not a verb: "all the insurance claims"
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
    # At most an indirect object ("sagt jedem Kunden Hallo"): "says she is
    # vegan" and "says that ..." report.
    content = [position for position, token in enumerate(between)
               if token.key not in lang.function_words]
    # An object after its article or preposition ("jedem Kunden"), not a
    # new subject ("says Hugo collects vinyl").
    return len(content) <= 2 and all(
        position > 0 and between[position - 1].key in lang.function_words
        for position in content) and all(
        token.is_word and token.key not in lang.persons and token.key not in lang.copulas
        and token.key not in lang.complementizers and token.key not in lang.subject_pronouns
        for token in between)


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
