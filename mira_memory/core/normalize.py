# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


"""
Text normalization: the one place that decides when two strings are "the same".

Identity keys (names, aliases, values) use Unicode NFKC, Unicode case folding
and trimmed, collapsed whitespace. Stored text uses the display form: NFKC and
collapsed whitespace, case kept. Control characters (Unicode category Cc,
which includes tab and newline) are rejected, never silently removed.

There is deliberately no substring, prefix, typo, fuzzy or semantic matching
here. The only containment test, `locate`, finds a whole-word occurrence of
one normalized text inside another, which is what admission needs to check
that evidence, subject and value were actually said.
"""

import re
import unicodedata

# Tokens are machine keys (kinds, predicates, roles, entity types, source
# kinds): lower-case ASCII after NFKC and case folding, so capitalization or
# fullwidth forms never create a second key.
TOKEN_PATTERN = re.compile(r'[a-z][a-z0-9_]*')
TOKEN_MAX_LENGTH = 64
# Unicode category Cc is exactly C0, DEL and C1; one regex search is much
# cheaper than a category lookup per character (remember checks many fields).
_CONTROL_CHARACTER = re.compile('[\x00-\x1f\x7f-\x9f]')


class NormalizationError(ValueError):
    """A text cannot be normalized (control characters, empty, bad token)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def has_control_characters(text):
    """Return True when text contains a Unicode control character (Cc)."""
    return _CONTROL_CHARACTER.search(text) is not None


def _collapse_whitespace(text):
    return ' '.join(text.split())


def display_form(text):
    """
    Return NFKC text with trimmed, collapsed whitespace and case kept.

    Raises NormalizationError for control characters or an empty result.
    """
    if has_control_characters(text):
        raise NormalizationError('control_characters', 'text contains control characters')
    display = _collapse_whitespace(unicodedata.normalize('NFKC', text))
    if not display:
        raise NormalizationError('empty', 'text is empty after normalization')
    return display


def _fold(text):
    # Case folding can produce text that is not NFKC-normal (and NFKC can
    # produce text that folds further), so fold between two normalizations.
    return unicodedata.normalize('NFKC', unicodedata.normalize('NFKC', text).casefold())


def normalize_key(text):
    """
    Return the identity key: NFKC, case folded, whitespace collapsed.

    Raises NormalizationError for control characters or an empty result.
    """
    if has_control_characters(text):
        raise NormalizationError('control_characters', 'text contains control characters')
    key = _collapse_whitespace(_fold(text))
    if not key:
        raise NormalizationError('empty', 'text is empty after normalization')
    return key


def normalize_token(text):
    """
    Return a validated machine token (NFKC, case folded, [a-z][a-z0-9_]*).

    Raises NormalizationError when the text is not a token.
    """
    if has_control_characters(text):
        raise NormalizationError('control_characters', 'token contains control characters')
    token = _fold(text).strip()
    if len(token) > TOKEN_MAX_LENGTH or not TOKEN_PATTERN.fullmatch(token):
        raise NormalizationError(
            'invalid_token',
            'a token is 1-%d characters of a-z, 0-9 and _, starting with a letter'
            % TOKEN_MAX_LENGTH)
    return token


def _is_word_char(char):
    return char.isalnum() or char == '_'


def _folded_with_origins(display):
    """Fold display text char by char, remembering where each key char came from."""
    if display.isascii():
        # ASCII folds to ASCII of the same length: lower() is the whole story.
        return display.lower(), range(len(display))
    folded = []
    origins = []
    for index, char in enumerate(display):
        for folded_char in _fold(char):
            folded.append(folded_char)
            origins.append(index)
    return ''.join(folded), origins


def locate(needle, haystack):
    """
    Find needle in haystack as a whole-word span after normalization.

    Both texts are compared by their keys (NFKC, case folding, collapsed
    whitespace). The match must not start or end inside a word, so "tea" is
    not found in "steak". Returns the matching span of the haystack's display
    form (the haystack's own wording), or None when there is no such span.
    Raises NormalizationError for control characters or empty input.
    """
    needle_key = normalize_key(needle)
    display = display_form(haystack)
    folded, origins = _folded_with_origins(display)
    start = folded.find(needle_key)
    while start != -1:
        end = start + len(needle_key)
        starts_clean = start == 0 or not (
            _is_word_char(folded[start - 1]) and _is_word_char(folded[start]))
        ends_clean = end == len(folded) or not (
            _is_word_char(folded[end - 1]) and _is_word_char(folded[end]))
        if starts_clean and ends_clean:
            return display[origins[start]:origins[end - 1] + 1]
        start = folded.find(needle_key, start + 1)
    return None
