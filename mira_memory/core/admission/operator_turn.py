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

The display and the analysis are worked out on first use: a proposal refused
on its own arguments never pays for reading the utterance.
"""

from dataclasses import dataclass, field
import functools

from mira_memory.core.admission.language import language
from mira_memory.core.admission.normalize import fold, NormalizationError
from mira_memory.core.admission.text import analysis_of

UTTERANCE_MAX_LENGTH = 4000


@dataclass(frozen=True)
class TurnContext:
    """The current operator turn, supplied by the runtime, never by the model."""

    episode_id: str
    turn_id: str
    utterance: str


@dataclass(frozen=True)
class Turn(TurnContext):
    """A TurnContext with its utterance read once (see the module docstring)."""

    # The merged language data the utterance is read with (default: every shipped file).
    lang: object = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, context, lang=None):
        """Return context as a Turn (itself when it already is one)."""
        if isinstance(context, Turn) and (lang is None or lang is context.language):
            return context
        return cls(context.episode_id, context.turn_id, context.utterance, lang)

    @functools.cached_property
    def language(self):
        return self.lang or language()

    @functools.cached_property
    def folded(self):
        """Return the utterance's Folded form, or None when it is not text the rules read."""
        utterance = self.utterance
        if not isinstance(utterance, str) or len(utterance) > UTTERANCE_MAX_LENGTH:
            return None
        try:
            return fold(utterance)
        except NormalizationError:  # forbidden characters, or blank
            return None

    @property
    def display(self):
        """Return the utterance's display form (NFKC, collapsed whitespace), or None."""
        return None if self.folded is None else self.folded.display

    @functools.cached_property
    def analysis(self):
        """Return the utterance's Analysis (tokens and sentences), or None."""
        return None if self.folded is None else analysis_of(self.folded, self.language)
