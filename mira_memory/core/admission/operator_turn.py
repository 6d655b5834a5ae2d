# SPDX-License-Identifier: Apache-2.0
"""
The operator turn as the rules read it: one value, built once where a request enters.

A `TurnContext` is what the runtime says of the current operator turn: its
ids and the utterance as heard. A `Turn` is that context with what the rules
read of it, worked out once and then handed down to every rule: the display
form and folded form of the utterance (normalize.Folded: one scan for
forbidden characters, one NFKC) and its Analysis (tokens and sentences, in
the language data given). Nothing below the service normalizes, scans or
analyses the utterance again, and nothing keeps it after the turn: the Turn
is the only place it lives.

The analysis (tokens and sentences) is worked out on first use: a proposal
refused before the grounding rules never pays for it.

A turn is known by its ids: `is_turn_id` is the rule they follow, and
`source_label` the provenance label that names the turn in the store.
"""

from dataclasses import dataclass
import unicodedata

from mira_memory.core.admission.language import language
from mira_memory.core.admission.normalize import fold_utterance, has_forbidden_characters
from mira_memory.core.admission.normalize import NormalizationError
from mira_memory.core.admission.text import analysis_of

UTTERANCE_MAX_LENGTH = 4000
# An episode or turn id: 1-64 characters, no whitespace or control characters.
CONTEXT_ID_MAX_LENGTH = 64


@dataclass(frozen=True)
class TurnContext:
    """The current operator turn, supplied by the runtime, never by the model."""

    episode_id: str
    turn_id: str
    utterance: str


class Turn(TurnContext):
    """A TurnContext with its utterance read once (see the module docstring)."""

    def __init__(self, episode_id, turn_id, utterance, lang=None):
        # (Set past the frozen dataclass's guard: built here, never changed.)
        # The merged language data the utterance is read with (default: every
        # shipped file), and the utterance's Folded form, or None when it is
        # not text the rules read (not text, too long, forbidden characters, blank).
        self.__dict__.update(
            episode_id=episode_id, turn_id=turn_id, utterance=utterance,
            language=lang or language(), folded=_folded(utterance), _analysis=None)

    @classmethod
    def of(cls, context, lang=None):
        """Return context as a Turn (itself when it already is one with that language)."""
        if isinstance(context, Turn) and (lang is None or lang is context.language):
            return context
        return cls(context.episode_id, context.turn_id, context.utterance, lang)

    @property
    def display(self):
        """Return the utterance's display form (NFKC, collapsed whitespace), or None."""
        return None if self.folded is None else self.folded.display

    @property
    def analysis(self):
        """Return the utterance's Analysis (tokens and sentences), or None; built on first use."""
        if self._analysis is None and self.folded is not None:
            self.__dict__['_analysis'] = analysis_of(self.folded, self.language)
        return self._analysis


def _folded(utterance):
    if not isinstance(utterance, str) or len(utterance) > UTTERANCE_MAX_LENGTH:
        return None
    try:
        return fold_utterance(utterance)
    except NormalizationError:  # forbidden characters (outside an emoji), or blank
        return None


def is_turn_id(text):
    """Return True for an episode or turn id that admission accepts (one word, no controls)."""
    return (isinstance(text, str) and 0 < len(text) <= CONTEXT_ID_MAX_LENGTH
            and not has_forbidden_characters(text)
            and text.split() == [text])  # (no whitespace: one word, itself)


def source_label(context):
    """
    Return the provenance label that identifies an operator turn, ids exactly as sent.

    The store keeps labels in NFKC display form, which would fold "ｅ１" into
    "e1". An id that NFKC would change is therefore written as ASCII with
    u{hex} escapes after a backslash, and a backslash always as two, so no two
    ids share a label.
    """
    return 'episode %s turn %s' % (_label_id(context.episode_id), _label_id(context.turn_id))


def _label_id(text):
    escaped = text.replace('\\', '\\\\')
    if unicodedata.normalize('NFKC', text) == text and text.isprintable():
        return escaped
    return ''.join(
        char if ' ' < char <= '~' else '\\u{%x}' % ord(char) for char in escaped)
