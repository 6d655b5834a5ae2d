# SPDX-License-Identifier: Apache-2.0
"""
The keys a grounding language file may hold: one declared table of name, kind and meaning.

Each row names a key of language/*.toml, the kind of list it is (how
Language reads it into the attribute of the same name) and what it means to
the rules; language/en.toml gives an example of each. A key not in this
table is refused when the files load: a misspelt list would silently weaken
a rule. (The way medspaCy's ConTextRule declares its fields: one table, read
by one loop.)
"""

from typing import NamedTuple

# How a list is read (every word after NFKC, case folding and ' for ’):
WORDS = 'words'            # a set of single-word keys
PHRASES = 'phrases'        # phrases indexed by their first word, longest first
ENDINGS = 'endings'        # word endings, longest first
SORTED = 'sorted'          # word starts or letter sequences, in sorted order
PER_LANGUAGE = 'per_language'  # a set of words for each language code
FLAG = 'flag'              # true in a file: the set of language codes that say so
OWN = 'own'                # read by a step of its own (the code, triggers, unclaimed words)


class ListKey(NamedTuple):
    """One key of a language file: its name, its kind and what it means to the rules."""

    name: str
    kind: str
    meaning: str


LANGUAGE_LISTS = (
    ListKey('language', OWN, 'the language code of the file ("en")'),
    ListKey('trigger', OWN, 'trigger records: a class, a direction, a reach, words and an '
                            'example (Language._load_triggers)'),
    ListKey('unclaimed', OWN, 'frequent words of languages without data, by language code'),
    ListKey('lead_ins', PHRASES, 'said before a statement without changing it ("remember '
                                 'that")'),
    ListKey('request_lead_ins', PHRASES, 'polite requests to remember: the complement is '
                                         'asserted ("can you remember that")'),
    ListKey('interjections', PHRASES, 'open a sentence or stand alone and carry no content '
                                      '("oh", "well")'),
    ListKey('trailing', PHRASES, 'allowed after the statement at the end of its sentence'),
    ListKey('openers', WORDS, 'single words allowed at a clause start ("now", "also")'),
    ListKey('clause_joiners', WORDS, 'a new clause may start right after one ("and", "but")'),
    ListKey('coordinators', WORDS, 'coordinate a subject with another name ("Ada and Bob")'),
    ListKey('subject_prefixes', WORDS, 'articles and titles allowed before the subject name'),
    ListKey('abbreviations', WORDS, 'abbreviations whose full stop ends no sentence ("Dr.")'),
    ListKey('question_openers', WORDS, 'a sentence opened by one is a question ("does")'),
    ListKey('question_tags', WORDS, 'a next sentence of only these doubts the one before '
                                    '("right?")'),
    ListKey('predicate_negators', WORDS, 'a predicate part that carries a negation '
                                         '(does_not_like)'),
    ListKey('aversion_phrases', PHRASES, 'idioms that state a dislike with a negator '
                                         '("can\'t stand")'),
    ListKey('aversion_predicates', WORDS, 'predicate tokens that state a dislike (dislikes)'),
    ListKey('contrast_markers', PHRASES, 'what follows one is set aside ("not", "rather '
                                         'than")'),
    ListKey('approximators', PHRASES, 'before a number, make it approximate ("roughly")'),
    ListKey('approximators_after', PHRASES, 'after a number, make it approximate ("or so")'),
    ListKey('months', WORDS, 'month names that are also other words ("may")'),
    ListKey('month_companions', WORDS, 'before a month name make it the month ("in May")'),
    ListKey('conjunctions', WORDS, 'join two clauses: a new subject may follow'),
    ListKey('complementizers', WORDS, 'open a clause of their own ("that", "whether")'),
    ListKey('relative_pronouns', WORDS, 'open a relative clause ("who", "which")'),
    ListKey('first_person', WORDS, 'the speaker: a clause about them is not about the subject'),
    ListKey('second_person', WORDS, 'the one addressed'),
    ListKey('third_person', WORDS, 'person pronouns: another subject'),
    ListKey('robot_references', WORDS, 'subject words that stand for the robot ("you")'),
    ListKey('copulas', WORDS, '"<possessor>\'s <words> <copula> <value>" describes the '
                              'possessor'),
    ListKey('possessive_suffixes', ENDINGS, 'endings that make a name a possessor ("\'s")'),
    ListKey('demonstratives', WORDS, 'open an appositive that a pronoun resumes ("Moss, that '
                                     'dog, she ...")'),
    ListKey('possessive_linkers', WORDS, 'right after a name, make it a possessor ("Daan z\'n '
                                         'fiets", "Paul sein Hund")'),
    ListKey('possessive_subjects', WORDS, 'subject words that are possessors ("your")'),
    ListKey('possessive_determiners', WORDS, 'may come before a subject name ("my cousin '
                                             'Bob")'),
    ListKey('relation_nouns', WORDS, 'a person or animal related to someone ("landlord")'),
    ListKey('contraction_followers', WORDS, 'after "<name>\'s" show the \'s is "is" or "has"'),
    ListKey('privative_modifiers', WORDS, 'turn a value into its opposite ("former", "fake")'),
    ListKey('function_words', WORDS, 'carry no value on their own; may follow a value'),
    ListKey('value_followers', WORDS, 'allowed right after a value'),
    ListKey('adverb_suffixes', ENDINGS, 'endings of manner adverbs that may follow a value'),
    ListKey('markers', PER_LANGUAGE, 'words only this language has: they pick its homographs'),
    ListKey('homographs', PER_LANGUAGE, "another language's trigger words that mean something "
                                        'else here'),
    ListKey('contraction_suffixes', ENDINGS, 'a name may end before these ("\'re")'),
    ListKey('plain_phrases', PHRASES, 'plain although a word of them is a trigger elsewhere '
                                      '("is used to")'),
    ListKey('verb_bracket', FLAG, 'the verb comes second and participles close the clause'),
    ListKey('capitalized_nouns', FLAG, 'every noun is written with a capital: a capital is no '
                                       'name'),
    ListKey('genitive_prepositions', WORDS, '"the X of <name> is <value>" names the '
                                            'possessor ("of")'),
    ListKey('preference_verbs', WORDS, '"prefers X to Y": Y is set aside'),
    ListKey('preference_contrasts', WORDS, 'the "to" of "prefers X to Y"'),
    ListKey('infinitive_endings', ENDINGS, 'endings of infinitives that close a clause'),
    ListKey('participle_prefixes', SORTED, 'starts of participles ("ge")'),
    ListKey('participle_endings', ENDINGS, 'endings of participles'),
    ListKey('predicative_endings', ENDINGS, 'endings of predicative adjectives that close a '
                                            'clause'),
    ListKey('indefinite_articles', WORDS, 'indefinite articles ("a", "an")'),
    ListKey('terminations', WORDS, "end every scope but a turn's"),
    ListKey('soft_terminations', WORDS, 'end a scope before a word that opens a clause'),
    ListKey('subordinators', WORDS, 'open a subordinate clause ("because")'),
    ListKey('discourse_markers', PHRASES, 'mark a new clause of the speaker ("anyway")'),
    ListKey('imperatives', PHRASES, 'instructions that open a clause of their own'),
    ListKey('enclitics', ENDINGS, 'pronouns written onto an imperative ("dime")'),
    ListKey('subject_pronouns', WORDS, 'pronouns that open a clause'),
    ListKey('change_adverbs', WORDS, 'say a state changed ("now", "anymore")'),
    ListKey('additives', WORDS, '"not only X but also Y": Y is asserted too'),
    ListKey('number_words', WORDS, 'numbers written as words'),
    ListKey('phrase_prepositions', WORDS, 'prepositions a value may share with what it is '
                                          'set against'),
    ListKey('fillers', WORDS, 'hesitations of speech ("um", "er")'),
    ListKey('weekdays', WORDS, 'day names ("until Friday")'),
    ListKey('month_names', WORDS, 'every month name (with months)'),
    ListKey('subject_relatives', PHRASES, '"the only one who": the value is the subject\'s own'),
    ListKey('restrictives', PHRASES, 'restrict a statement to a case ("only on Sundays")'),
    ListKey('common_words', WORDS, "the language's most frequent words: is a sentence in it"),
    ListKey('unclaimed_letters', WORDS, 'letters only languages without data use'),
    ListKey('unclaimed_sequences', SORTED, 'letter sequences only languages without data use'),
)

LANGUAGE_KEYS = frozenset(key.name for key in LANGUAGE_LISTS)
