# SPDX-License-Identifier: Apache-2.0
"""
The grounding rules' words: every language file (language/*.toml), loaded once and merged.

Words are data: a new word, trigger or termination is a line of a language
file, never code. Every file is merged with every other, so a sentence is
read against every language's triggers (a French hedge inside an English
turn counts too); where a word of one language is another's trigger, the
language file says how the collision is resolved (`homographs`, `markers`).

Triggers ([[trigger]] tables) are the ConText model (NegEx, Chapman et al.
2001; ConText, Harkema et al. 2009): each holds words or phrases of one
class (negation, hedge, report, condition, ...), a direction (forward,
backward, both) and a reach (its own clause, the sentence up to a
termination, or the turn). scope.py finds them and works out what they
govern; language/en.toml explains every field with an example.
"""

from dataclasses import dataclass, field
import functools
import hashlib
import os
import pathlib
import tomllib
from typing import Optional
import unicodedata

from mira_memory.core.admission import language_keys
from mira_memory.core.admission.language_keys import LANGUAGE_KEYS, LANGUAGE_LISTS
from mira_memory.core.admission.text import key_of, phrase_lengths, tokenize

LANGUAGE_DIRECTORY = pathlib.Path(__file__).resolve().parent / 'language'
# The generated forms of the verb triggers' lemmas (tools/trigger_forms.py).
FORMS_DIRECTORY = LANGUAGE_DIRECTORY / 'forms'
# The version of the rules' code: major for a rule that refuses what it
# admitted before (or the reverse), minor for a new rule or word class.
# rules_digest() names the word lists they read.
RULES_VERSION = '8.0.0'
# An optional directory of further language files (language_files()).
EXTRA_LANGUAGE_ENV = 'MIRA_MEMORY_EXTRA_LANGUAGE_DIR'

# Trigger classes, each with its failure (verdict.ERRORS names the error).
TRIGGER_CLASSES = {
    'negation': 'negated_outside',
    'denial': 'denied',
    'hedge': 'hedged',
    'modal': 'modal',
    'report': 'reported',
    'condition': 'conditional',
    'time_scope': 'not_durable',
    'future': 'future',
    'past_ended': 'past_ended',
    'question': 'question',
    'retraction': 'retracted',
    'sarcasm': 'sarcastic',
    # Not a trigger: a pseudo-trigger holds trigger words that assert ("not
    # only", "never says no to", "valid until").
    'pseudo': None,
}
DIRECTIONS = ('forward', 'backward', 'both')
REACHES = ('clause', 'sentence', 'turn')
POSITIONS = ('anywhere', 'end')
TRIGGER_FIELDS = frozenset((
    'class', 'direction', 'reach', 'at', 'tail', 'closing', 'ends_scope', 'backward_when_last',
    'takes_object', 'after_negation', 'requires', 'unless', 'words', 'lemmas', 'suffixes',
    'prefixes', 'example', 'note'))
# Placeholders a trigger phrase may hold: "until {weekday}", "ne {any} que".
PLACEHOLDERS = ('{weekday}', '{month}', '{number}', '{any}')
# The words that cut a sentence into clauses count only in a sentence of
# their own language (or of none): Italian "ma" (but) is French "my".
CLAUSE_BOUNDARY_KEYS = ('terminations', 'soft_terminations', 'coordinators', 'subordinators')
# So do subject pronouns and fillers (English "er" is German "he"), and the
# function words, phrase prepositions and value followers read where a phrase
# ends (English "a" is Spanish "to", Dutch "van" is English "van").
CLAUSE_WORD_KEYS = CLAUSE_BOUNDARY_KEYS + (
    'subject_pronouns', 'fillers', 'function_words', 'phrase_prepositions', 'value_followers')


@dataclass(frozen=True)
class Trigger:
    """One trigger record of a language file: what its words do to what they govern."""

    kind: str                  # a TRIGGER_CLASSES key
    direction: str             # forward, backward or both
    reach: str                 # clause, sentence or turn
    at: str = 'anywhere'       # 'end': only when nothing but tags follow it in its sentence
    # For a backward scope across clauses: at most this many words may
    # follow the trigger in its own clause ("..., Bob told me" but not
    # "..., I told the kitchen"). None: any number.
    tail: Optional[int] = None
    # 'infinitive': a trigger only when its clause closes with an infinitive
    # (German "wird ... abholen" is future, "wird ... abgeholt" a present passive).
    closing: Optional[str] = None
    ends_scope: bool = False   # a pseudo-trigger that also ends scopes ("nothing but")
    # A condition looks back only from the sentence's last clause: "Ada
    # takes the bus if it rains", but "Marek is the first aider, if someone
    # gets hurt, call him" conditions the call.
    backward_when_last: bool = False
    # A verb of saying whose object is the value states a habit, not a
    # report: "the myna bird says hi to every customer", "Bob tells jokes".
    takes_object: bool = False
    # A pseudo-trigger only after a negation in its clause ("won't eat
    # anything but rice"); elsewhere its words are read by the other records.
    after_negation: bool = False
    # Phrases one of which must (requires) or must not (unless) stand in the
    # trigger's clause: "starts ... in September" is a plan, "works until
    # five every day" a habit.
    requires: tuple = ()
    unless: tuple = ()
    language: str = ''

    @property
    def failure(self):
        """Return the failure name this trigger gives when it reaches the evidence."""
        return TRIGGER_CLASSES[self.kind]


class Language:
    """The merged word lists and triggers of every language file (see language/en.toml)."""

    def __init__(self, tables):
        for table in tables:
            unknown = set(table) - LANGUAGE_KEYS
            if unknown:
                # A misspelt list would silently weaken a rule.
                raise ValueError(f'unknown grounding language keys: {sorted(unknown)}')
        # Every declared list becomes the attribute of its name (language_keys.py).
        for key in LANGUAGE_LISTS:
            if key.kind != language_keys.OWN:
                setattr(self, key.name, _READERS[key.kind](tables, key.name))
        self._derive_words(tables)
        self._load_clause_words(tables)
        self._load_triggers(tables)
        self._load_languages(tables)
        # Every word that may cut a clause (clauses._word_boundary is asked
        # only about these).
        self.boundary_words = frozenset(
            self._all_clause_words.kinds) | self._all_clause_words.subject_pronouns | frozenset(
            self._all_clause_words.phrases) | frozenset(self.discourse_markers) | (
            self.question_openers) | self.negators
        # Words that continue a noun phrase: a value cannot end right before them.
        self.value_continuers = frozenset(('of', 'or', 'nor', "'s"))

    def _derive_words(self, tables):
        """Set the word classes made of the declared lists."""
        self.interjection_words = _words(tables, 'interjections') | {'please'}
        # A single letter with a full stop is decided by the rule of initials
        # (text.keeps_sentence), which also sees whether the text ends there.
        self.abbreviations = frozenset(word for word in self.abbreviations if len(word) > 1)
        self.speakers = self.first_person | self.second_person
        self.persons = self.speakers | self.third_person
        # The written ones ("Ada's", "James'"): only these chain possessors
        # ("Ada's friend's dog"); a bare "s" (Pauls) would match "is".
        self.apostrophe_suffixes = tuple(
            suffix for suffix in self.possessive_suffixes if "'" in suffix)
        self.month_names = self.month_names | self.months
        # Articles: the subject prefixes that are function words ("the", "der"),
        # or would be but for another language's value ("la": LA, "die").
        self.articles = self.subject_prefixes & (self.function_words | self.value_followers)
        # Negators that are determiners open a contrast themselves ("kein Bier").
        self.contrast_openers = frozenset(
            keys[0] for keys in (phrase_keys(phrase) for table in tables
                                 for phrase in table.get('contrast_markers', ()))
            if len(keys) == 1)
        # Words that may open a complete clause although they are function
        # words: persons, articles and titles, possessive determiners.
        self.clause_openers = (self.persons | self.subject_prefixes
                               | self.possessive_determiners)
        # Each language's own imperatives, for a sentence in it: English
        # "pour" is French "for".
        self._imperatives = {}
        for table in tables:
            code = table.get('language', '')
            if code:
                self._imperatives[code] = (_phrases([table], 'imperatives'),
                                           _endings([table], 'enclitics'))
        # Frequent words of languages without data (language/unclaimed.toml):
        # word -> the codes of the unclaimed languages that use it.
        self.unclaimed_languages = {}
        for table in tables:
            for code, found in table.get('unclaimed', {}).items():
                for word in found:
                    key = key_of(word)
                    if code not in self.unclaimed_languages.get(key, ()):
                        self.unclaimed_languages[key] = (
                            self.unclaimed_languages.get(key, ()) + (code,))

    def _load_clause_words(self, tables):
        """Set the words that cut clauses, per language and for all of them."""
        self._clause_words = {}
        for table in tables:
            own = self._clause_words.setdefault(table.get('language', ''), ClauseWords())
            for name in CLAUSE_WORD_KEYS:
                for phrase in table.get(name, ()):
                    keys = phrase_keys(phrase)
                    if len(keys) == 1:
                        getattr(own, name).add(keys[0])
                    elif keys and name in CLAUSE_BOUNDARY_KEYS:
                        # "parce que", "por isso": a boundary of several words.
                        own.phrases.setdefault(keys[0], []).append((keys, name))
        self._all_clause_words = ClauseWords()
        for own in self._clause_words.values():
            for name in CLAUSE_WORD_KEYS:
                getattr(self._all_clause_words, name).update(getattr(own, name))
            for first, found in own.phrases.items():
                self._all_clause_words.phrases.setdefault(first, []).extend(found)
            own.index()
        self._all_clause_words.index()

    def _load_languages(self, tables):
        """Set which language each word marks or belongs to."""
        # The language whose closed-class words a sentence holds most of picks
        # the words that cut its clauses (clauses.py); its markers alone pick
        # which homographs lose their other readings.
        self.marker_languages = {}
        for code, markers in self.markers.items():
            for marker in markers:
                self.marker_languages[marker] = self.marker_languages.get(marker, ()) + (code,)
        self.word_languages = {}
        for table in tables:
            code = table.get('language', '')
            own = set(self.markers[code])
            for name in ('function_words', 'copulas', 'first_person', 'second_person',
                         'third_person', 'possessive_determiners', 'conjunctions',
                         'common_words'):
                own.update(key_of(word) for word in table.get(name, ()) if ' ' not in word)
            for word in own:
                if code not in self.word_languages.get(word, ()):
                    self.word_languages[word] = self.word_languages.get(word, ()) + (code,)
        # Every word a claimed language's data holds: the measure of whether
        # a sentence is in a claimed language at all (see sentence_language.unclaimed).
        # Which claimed languages know each word (single words only: a word
        # the data holds only inside a phrase, "jest" in "in jest", may well be
        # another language's, Polish "jest"). sentence_language.unclaimed weighs a
        # sentence's words of each claimed language against its unclaimed_words.
        known = {}
        for table in tables:
            code = table.get('language', '')
            if 'unclaimed' in table:
                continue
            own = set()
            for name, value in table.items():
                if name in ('trigger', 'language'):
                    continue
                for item in value if isinstance(value, list) else ():
                    keys = phrase_keys(str(item))
                    if len(keys) == 1:
                        own.add(keys[0])
            for row in table.get('trigger', ()):
                own.update(keys[0] for keys in map(phrase_keys, row.get('words', ()))
                           if len(keys) == 1)
            for word in own:
                known[word] = known.get(word, ()) + (code,)
        self.known_languages = known
        self.known_words = frozenset(known)

    def _load_triggers(self, tables):
        phrases = {}
        suffixes = []
        prefixes = []
        for table in tables:
            code = table.get('language', '')
            for number, row in enumerate(table.get('trigger', ()), 1):
                trigger = _trigger(code, number, row)
                for phrase in row.get('words', ()):
                    keys = phrase_keys(phrase)
                    if keys:
                        phrases.setdefault(keys[0], []).append((keys, trigger))
                suffixes.extend((key_of(text), trigger) for text in row.get('suffixes', ()))
                prefixes.extend((key_of(text), trigger) for text in row.get('prefixes', ()))
        # Longest phrases first: "not only" is tried before "not".
        # Among phrases of one length, a trigger that counts only at the
        # sentence's end is tried first ("..., no" before "no" as a determiner).
        self.trigger_phrases = {
            first: tuple(sorted(found, key=lambda item: (-len(item[0]), item[1].at != 'end')))
            for first, found in phrases.items()}
        # The same phrases as a trie of their words, so a sentence is matched in
        # one walk per word however many phrases share a first word ("in the
        # film", "in the story", ...): {word: (ending here, {next word: ...})}.
        self.trigger_trie = {}
        for found in self.trigger_phrases.values():
            for keys, trigger in found:
                node = self.trigger_trie
                for position, key in enumerate(keys):
                    ending, children = node.setdefault(key, ([], {}))
                    if position == len(keys) - 1:
                        ending.append((keys, trigger))
                    node = children
        self.trigger_words = frozenset(
            keys[0] for found in self.trigger_phrases.values() for keys, trigger in found
            if trigger.kind != 'pseudo')
        # Single words of the classes that govern a clause as a belief or a
        # report ("croit", "penso"): a restrictive "ne ... que" around one is no restriction.
        self.belief_words = frozenset(
            keys[0] for found in self.trigger_phrases.values() for keys, trigger in found
            if len(keys) == 1 and trigger.kind in ('report', 'hedge', 'denial'))
        self.trigger_suffixes = tuple(sorted(suffixes, key=lambda item: len(item[0]),
                                             reverse=True))
        self.trigger_prefixes = tuple(sorted(prefixes, key=lambda item: len(item[0]),
                                             reverse=True))
        # (For one str.endswith / startswith test per word before the loop.)
        # A correction said before a statement leads into it ("no actually, Elodie
        # has a key"): it reaches back only (evidence_shape.walk steps over it).
        self.correction_leads = {}
        for found in self.trigger_phrases.values():
            for keys, trigger in found:
                if (trigger.kind == 'retraction' and trigger.direction == 'backward'
                        and len(keys) > 1 and trigger.at != 'end'):
                    self.correction_leads.setdefault(keys[0], set()).add(keys)
        self.correction_leads = {first: tuple(sorted(keys, key=len, reverse=True))
                                 for first, keys in self.correction_leads.items()}
        self.trigger_suffix_texts = tuple(text for text, _ in self.trigger_suffixes)
        self.trigger_prefix_texts = tuple(text for text, _ in self.trigger_prefixes)
        self.negators = frozenset(
            keys[0] for found in self.trigger_phrases.values() for keys, trigger in found
            if len(keys) == 1 and trigger.kind == 'negation')
        self.negator_suffixes = tuple(text for text, trigger in self.trigger_suffixes
                                      if trigger.kind == 'negation')
        self.negator_prefixes = tuple(text for text, trigger in self.trigger_prefixes
                                      if trigger.kind == 'negation')

    def clause_words(self, code):
        """Return the words that cut clauses in a sentence of language code ('': all of them)."""
        return self._clause_words.get(code) or self._all_clause_words

    def imperative_length(self, keys, index, code=''):
        """
        Return how many words of an imperative start at keys[index] (0: none).

        code: the sentence's language ('': any language's imperatives). An
        imperative with a pronoun attached is one too: "liga-lhe",
        "appelle-le" (a hyphen), "llámala", "chiamalo" (an enclitic; Spanish
        writes the stress the pronoun moved: "lláma-" is "llama").
        """
        imperatives, enclitics = self._imperatives.get(code) or (self.imperatives,
                                                                 self.enclitics)
        lengths = phrase_lengths(imperatives, keys, index)
        if lengths:
            return max(lengths)
        key = keys[index]
        stems = [key.partition('-')[0]] if '-' in key else []
        stems += [key[:-len(suffix)] for suffix in enclitics
                  if key.endswith(suffix) and len(key) > len(suffix) + 1]
        return int(any((_without_acute(stem),) in imperatives.get(_without_acute(stem), ())
                       or (stem,) in imperatives.get(stem, ()) for stem in stems))

    def is_negator(self, key, suppressed=frozenset()):
        """Return True for a negating word ("not", "doesn't", "n'aime", "nicht")."""
        if key in suppressed:
            return False
        return (key in self.negators or key.endswith(self.negator_suffixes)
                or (key.startswith(self.negator_prefixes) and len(key) > 2))


def _without_acute(word):
    """Return word without acute accents ("lláma" -> "llama")."""
    if word.isascii():
        return word
    return unicodedata.normalize(
        'NFC', unicodedata.normalize('NFD', word).replace('\u0301', ''))


@dataclass
class ClauseWords:
    """One language's words that cut clauses (see CLAUSE_WORD_KEYS)."""

    terminations: set = field(default_factory=set)
    soft_terminations: set = field(default_factory=set)
    coordinators: set = field(default_factory=set)
    subordinators: set = field(default_factory=set)
    subject_pronouns: set = field(default_factory=set)
    fillers: set = field(default_factory=set)
    function_words: set = field(default_factory=set)
    phrase_prepositions: set = field(default_factory=set)
    value_followers: set = field(default_factory=set)
    # word -> the kind of clause boundary it makes (clauses.py), the first
    # of termination, soft termination, subordinator, coordinator.
    kinds: dict = field(default_factory=dict)
    # first word -> [(words, list name)] for the boundaries of several words
    phrases: dict = field(default_factory=dict)

    def index(self):
        """Fill kinds from the word sets."""
        for kind, words in (('coordinator', self.coordinators),
                            ('subordinator', self.subordinators),
                            ('soft_termination', self.soft_terminations),
                            ('termination', self.terminations)):
            self.kinds.update(dict.fromkeys(words, kind))


def phrase_keys(phrase):
    """Return the token keys of a phrase of a language file (placeholders kept whole)."""
    keys = []
    for part in phrase.split():
        if part in PLACEHOLDERS:
            keys.append(part)
        else:
            keys.extend(token.key for token in tokenize(part))
    return tuple(keys)


def _trigger(code, number, row):
    where = f'{code or "?"}.toml trigger {number}'
    unknown = set(row) - TRIGGER_FIELDS
    if unknown:
        raise ValueError(f'{where}: unknown trigger fields {sorted(unknown)}')
    kind = row.get('class')
    if kind not in TRIGGER_CLASSES:
        raise ValueError(f'{where}: class must be one of {sorted(TRIGGER_CLASSES)}')
    if not (row.get('words') or row.get('suffixes') or row.get('prefixes')):
        raise ValueError(f'{where}: a trigger needs words, suffixes or prefixes')
    if not row.get('example'):
        raise ValueError(f'{where}: every trigger record carries one example')
    direction = row.get('direction', 'both')
    reach = row.get('reach', 'clause')
    at = row.get('at', 'anywhere')
    if direction not in DIRECTIONS or reach not in REACHES or at not in POSITIONS:
        raise ValueError(f'{where}: direction {DIRECTIONS}, reach {REACHES}, at {POSITIONS}')
    tail = row.get('tail')
    if tail is not None and not (isinstance(tail, int) and tail >= 0):
        raise ValueError(f'{where}: tail is a number of words')
    closing = row.get('closing')
    if closing not in (None, 'infinitive'):
        raise ValueError(f'{where}: closing is "infinitive" or absent')
    return Trigger(kind, direction, reach, at, tail, closing, bool(row.get('ends_scope')),
                   bool(row.get('backward_when_last')), bool(row.get('takes_object')),
                   bool(row.get('after_negation')),
                   tuple(phrase_keys(phrase) for phrase in row.get('requires', ())),
                   tuple(phrase_keys(phrase) for phrase in row.get('unless', ())), code)


def _words(tables, name):
    return frozenset(key_of(word) for table in tables for word in table.get(name, ()))


def _phrases(tables, name):
    # Indexed by their first token: phrases are tried where they may start.
    found = {}
    for table in tables:
        for phrase in table.get(name, ()):
            keys = phrase_keys(phrase)
            if keys:
                found.setdefault(keys[0], set()).add(keys)
    return {first: tuple(sorted(keys, key=len, reverse=True)) for first, keys in found.items()}


def _endings(tables, name):
    return tuple(sorted(_words(tables, name), key=len, reverse=True))


def _sorted(tables, name):
    return tuple(sorted(_words(tables, name)))


def _per_language(tables, name):
    found = {}
    for table in tables:
        code = table.get('language', '')
        found[code] = found.get(code, frozenset()) | _words([table], name)
    return found


def _flag(tables, name):
    return frozenset(table.get('language', '') for table in tables if table.get(name))


_READERS = {
    language_keys.WORDS: _words, language_keys.PHRASES: _phrases,
    language_keys.ENDINGS: _endings, language_keys.SORTED: _sorted,
    language_keys.PER_LANGUAGE: _per_language, language_keys.FLAG: _flag,
}


def language_files():
    """
    Return the language data files the rules read: language/*.toml, then the extra ones.

    EXTRA_LANGUAGE_ENV names an optional directory whose *.toml files (same
    keys as language/en.toml) are merged in after the shipped ones: a site
    can add a word without editing the package, and the tests change the
    rules this way to exercise `memory verify`. Read once per process, like
    the data itself.
    """
    files = sorted(LANGUAGE_DIRECTORY.glob('*.toml'))
    extra = os.environ.get(EXTRA_LANGUAGE_ENV, '')
    if extra:
        directory = pathlib.Path(extra)
        if not directory.is_dir():
            raise RuntimeError(f'{EXTRA_LANGUAGE_ENV} is not a directory: {extra}')
        files += sorted(directory.glob('*.toml'))
    return files


@functools.lru_cache(maxsize=1)
def _language_data():
    """Return ((file label, bytes), ...) of every language file, read once."""
    files = language_files()
    if not files:
        raise RuntimeError(f'no grounding language data in {LANGUAGE_DIRECTORY}')
    forms = sorted(FORMS_DIRECTORY.glob('*.toml'))
    return tuple((_file_label(path), path.read_bytes()) for path in files) + tuple(
        ('forms/' + path.name, path.read_bytes()) for path in forms)


def _file_label(path):
    # Shipped files by name; an extra file by its name after 'extra/', so an
    # extra en.toml never hashes like the shipped one.
    return path.name if path.parent == LANGUAGE_DIRECTORY else 'extra/' + path.name


@functools.lru_cache(maxsize=1)
def language():
    """Return the merged language data (every language file, loaded once)."""
    tables, forms = [], {}
    for label, data in _language_data():
        table = tomllib.loads(data.decode('utf-8'))
        if label.startswith('forms/'):
            forms[label[len('forms/'):-len('.toml')]] = table['forms']
        else:
            tables.append(table)
    return Language([with_forms(table, forms) for table in tables])


def with_forms(table, forms):
    """
    Return a language table whose triggers hold every form of their lemmas.

    A verb trigger is listed once as a lemma ("croire"); its forms for every
    person and tense ("crois", "croyait", "crût") are generated from a real
    lexicon by tools/trigger_forms.py into language/forms/<code>.toml.
    """
    code = table.get('language', '')
    rows = table.get('trigger', ())
    if not any('lemmas' in row for row in rows):
        return table
    known = forms.get(code, {})
    expanded = []
    for number, row in enumerate(rows, 1):
        missing = [lemma for lemma in row.get('lemmas', ()) if lemma not in known]
        if missing:
            raise ValueError(f'{code or "?"}.toml trigger {number}: no generated forms for '
                             f'{missing} (run tools/trigger_forms.py)')
        words = list(row.get('words', ()))
        words += [form for lemma in row.get('lemmas', ()) for form in known[lemma]
                  if form not in words]
        expanded.append(dict(row, words=words))
    return dict(table, trigger=expanded)


@functools.lru_cache(maxsize=1)
def rules_digest():
    """Return a short hash of the language data files: which words the rules read."""
    digest = hashlib.sha256()
    for label, data in _language_data():
        digest.update(label.encode() + b'\0' + data + b'\0')
    return digest.hexdigest()[:16]


def rules_id():
    """Return the running rules as receipts record them: '<RULES_VERSION>+<rules_digest()>'."""
    return f'{RULES_VERSION}+{rules_digest()}'
