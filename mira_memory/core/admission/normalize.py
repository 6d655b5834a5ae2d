# SPDX-License-Identifier: Apache-2.0
"""
Text normalization: the one place that decides when two strings are "the same".

Identity keys (names, aliases, values) use Unicode NFKC, Unicode case folding
and trimmed, collapsed whitespace. Stored text uses the display form: NFKC and
collapsed whitespace, case kept.

Forbidden characters are rejected, never silently removed, wherever text
enters (remember, recall, the admin services and the console all call
`has_forbidden_characters` or a function here that raises with the code
control_characters). They are the characters that change what a text means
without showing on screen, or that break a line:
- control characters (Unicode category Cc, which includes tab and newline);
- format characters (Cf: soft hyphen, zero-width space and joiners, bidi
  embeddings, overrides and isolates, the byte order mark, tags, ...);
- the other default-ignorable code points (variation selectors, the combining
  grapheme joiner, Hangul fillers, ...);
- the line and paragraph separators U+2028 and U+2029;
- noncharacters (U+FDD0..U+FDEF and the last two code points of every plane)
  and lone surrogates.
One list of ranges, built once at import, defines them all, and a regular
expression search over the raw text finds them: no normalization can turn an
allowed character into a forbidden one (checked for every code point), so
the raw text is tested before any other work.

There is deliberately no substring, prefix, typo, fuzzy or semantic matching
here. The only containment test, `locate`, finds a whole-word occurrence of
one normalized text inside another, which is what admission needs to check
that evidence, subject and value were actually said. Letters, digits, the
underscore and combining marks (Mn, Mc, Me: accents, vowel signs) are word
characters, so a match never ends before a vowel sign or accent. Text is
folded in segments that NFKC cannot join across, so every text locates itself
even when its letters compose only after case folding (T + U+0308).
Scripts written without spaces between words (Chinese, Japanese, Thai, ...)
have no word boundaries that this module can see: `has_unsegmented_script`
lets admission refuse them instead of guessing where a name ends.
"""

import functools
import re
from typing import NamedTuple, Sequence
import unicodedata

# Tokens are machine keys (kinds, predicates, roles, entity types, source
# kinds): lower-case ASCII after NFKC and case folding, so capitalization or
# fullwidth forms never create a second key.
TOKEN_PATTERN = re.compile(r'[a-z][a-z0-9_]*')
TOKEN_MAX_LENGTH = 64

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties.txt). Python's
# unicodedata does not expose the property; the ranges include the code
# points Unicode reserves for future ignorables, so they do not go stale.
_DEFAULT_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Format characters (Cf) exist only in these planes (BMP, SMP, tags).
_FORMAT_CHARACTER_PLANES = (0x0, 0x1, 0xE)


def _forbidden_ranges():
    ranges = [
        (0x00, 0x1F), (0x7F, 0x9F),  # Cc
        (0xD800, 0xDFFF),  # Cs: a lone surrogate cannot even be stored as UTF-8
        (0x2028, 0x2029),  # Zl, Zp
        (0xFDD0, 0xFDEF),  # noncharacters
    ]
    ranges.extend((plane + 0xFFFE, plane + 0xFFFF) for plane in range(0, 0x110000, 0x10000))
    ranges.extend(_DEFAULT_IGNORABLE_RANGES)
    for plane in _FORMAT_CHARACTER_PLANES:
        for code in range(plane << 16, (plane + 1) << 16):
            if unicodedata.category(chr(code)) == 'Cf':
                ranges.append((code, code))
    merged = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _character_class(ranges):
    return '[%s]' % ''.join('\\U%08x-\\U%08x' % pair for pair in ranges)


_FORBIDDEN_RANGES = _forbidden_ranges()
# Matches exactly the forbidden characters; for escaping, where speed matters less.
FORBIDDEN_CHARACTER = re.compile(_character_class(_FORBIDDEN_RANGES))
# The same class with every character above U+FFFF folded into one range: re
# tests a class of only BMP ranges plus one range with a bitmap, about eight
# times faster than the exact class, whose astral ranges it tries one by one.
# A regex search per text is in turn much cheaper than a category lookup per
# character (remember checks many fields per request).
_FORBIDDEN_OR_ASTRAL = re.compile(_character_class(
    [(first, min(last, 0xFFFF)) for first, last in _FORBIDDEN_RANGES if first <= 0xFFFF]
    + [(0x10000, 0x10FFFF)]))

# Letters of scripts written without spaces between words, checked on NFKC
# text (which maps halfwidth kana, compatibility ideographs and enclosed
# ideographs to these): Thai, Lao, Tibetan, Myanmar, Khmer, Tai Le, New Tai
# Lue, Tai Tham, Balinese, Javanese, Tai Viet, Ahom; Han (with radicals,
# iteration marks and every extension block), Hiragana, Katakana, Bopomofo,
# Yi, Tangut, Khitan, Nushu and the kana supplements. Korean separates words
# with spaces and is not listed.
_UNSEGMENTED_SCRIPT = re.compile('[%s]' % ''.join(
    '\\U%08x-\\U%08x' % pair for pair in (
        (0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF),
        (0x1950, 0x19DF), (0x19E0, 0x19FF), (0x1A20, 0x1AAF), (0x1B00, 0x1B7F),
        (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3031, 0x3035),
        (0x3038, 0x303C), (0x3041, 0x30FF), (0x3100, 0x312F), (0x3190, 0x31FF),
        (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA000, 0xA4CF), (0xA980, 0xA9DF),
        (0xA9E0, 0xA9FF), (0xAA60, 0xAADF), (0xF900, 0xFAFF), (0x11700, 0x1174F),
        (0x116D0, 0x116FF), (0x16FE0, 0x18CFF), (0x1AFF0, 0x1B2FF), (0x20000, 0x3FFFF),
    )))

# Where a folded character has no display edge of its own (inside a segment).
_UNMAPPED = (-1,)
_COMBINING_MARK_CATEGORIES = frozenset(('Mn', 'Mc', 'Me'))
# Hangul conjoining vowels and trailing consonants compose with what precedes
# them by algorithm, not through the decomposition table.
_HANGUL_JOINING_JAMO = ((0x1161, 0x1175), (0x11A8, 0x11C2))


class NormalizationError(ValueError):
    """A text cannot be normalized (forbidden characters, empty, bad token)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def has_forbidden_characters(text):
    """Return True when text has a control, format, invisible or noncharacter code point."""
    for match in _FORBIDDEN_OR_ASTRAL.finditer(text):
        char = match.group()
        if char <= '\uffff' or FORBIDDEN_CHARACTER.match(char):
            return True
    return False


# The parts of an emoji grapheme cluster (Unicode UTS #51, UAX #29) that are
# not emoji themselves: the presentation selectors, the zero width joiner,
# the combining keycap, the skin tone modifiers and the tag characters of a
# subdivision flag. Three of them are forbidden characters anywhere else.
EMOJI_PRESENTATION = '\ufe0e\ufe0f'
EMOJI_JOINER = '\u200d'
EMOJI_KEYCAP = '\u20e3'
KEYCAP_BASES = frozenset('0123456789#*')
_SKIN_TONES = ('\U0001f3fb', '\U0001f3ff')
_TAGS = ('\U000e0020', '\U000e007f')
_TAG_BASE = '\U0001f3f4'  # the black flag a tag sequence follows


def is_emoji_continuation(char):
    """Return True for a character that continues an emoji cluster (selector, joiner, ...)."""
    return (char in EMOJI_PRESENTATION or char == EMOJI_JOINER or char == EMOJI_KEYCAP
            or _SKIN_TONES[0] <= char <= _SKIN_TONES[1] or _TAGS[0] <= char <= _TAGS[1])


def is_emoji_base(char):
    """Return True for a pictograph or other symbol an emoji cluster may start with."""
    return unicodedata.category(char) in ('So', 'Sk')


def _part_of_emoji(text, index):
    """Return True when the forbidden character at index is part of an emoji cluster."""
    char = text[index]
    before = text[index - 1] if index else ''
    if char in EMOJI_PRESENTATION:
        # After a symbol or punctuation mark ("❤️", "‼️"), or a keycap's base ("1️⃣").
        return bool(before) and (
            unicodedata.category(before)[0] in 'SP'
            or (before in KEYCAP_BASES and text[index + 1:index + 2] == EMOJI_KEYCAP))
    if char == EMOJI_JOINER:
        # Between two emoji ("👩‍💻", "❤️‍🔥", "🤦🏽‍♀️").
        back = index - 1
        while back >= 0 and (text[back] in EMOJI_PRESENTATION
                             or _SKIN_TONES[0] <= text[back] <= _SKIN_TONES[1]):
            back -= 1
        after = text[index + 1:index + 2]
        return back >= 0 and is_emoji_base(text[back]) and bool(after) and is_emoji_base(after)
    if _TAGS[0] <= char <= _TAGS[1]:
        # A subdivision flag: the black flag, tag letters, the cancel tag ("🏴󠁧󠁢󠁳󠁣󠁴󠁿").
        back = index - 1
        while back >= 0 and _TAGS[0] <= text[back] <= _TAGS[1]:
            back -= 1
        return back >= 0 and text[back] == _TAG_BASE
    return False


def has_forbidden_outside_emoji(text):
    """Return True when text has a forbidden character that is not part of an emoji cluster."""
    for match in _FORBIDDEN_OR_ASTRAL.finditer(text):
        char = match.group()
        if char > '\uffff' and not FORBIDDEN_CHARACTER.match(char):
            continue
        if not _part_of_emoji(text, match.start()):
            return True
    return False


def fold_utterance(text):
    """
    Return the Folded form of an operator utterance (see fold).

    An utterance may hold emoji clusters whole ("❤️", "👩‍💻", "1️⃣"): their
    selectors, joiners and tags are part of the emoji, not hidden text. Every
    other forbidden character is refused, as in any other text.
    """
    if has_forbidden_outside_emoji(text):
        raise NormalizationError(
            'control_characters', 'text contains control characters or invisible format '
            'characters')
    return fold(text, checked=True)


def has_unsegmented_script(text):
    """Return True when text has a letter of a script written without spaces."""
    return _UNSEGMENTED_SCRIPT.search(text) is not None


def is_blank(text):
    """Return True for text that is only whitespace (or empty), without normalizing it."""
    # NFKC maps no visible character to whitespace (checked for every code
    # point), so the raw text answers without normalizing it.
    return not text.split()


def _refuse_forbidden(text, what='text'):
    if has_forbidden_characters(text):
        raise NormalizationError(
            'control_characters', '%s contains control characters or invisible format '
            'characters' % what)


def _collapse_whitespace(text):
    return ' '.join(text.split())


def display_form(text):
    """
    Return NFKC text with trimmed, collapsed whitespace and case kept.

    Raises NormalizationError for forbidden characters or an empty result.
    """
    _refuse_forbidden(text)
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

    Raises NormalizationError for forbidden characters or an empty result.
    """
    _refuse_forbidden(text)
    key = _collapse_whitespace(_fold(text))
    if not key:
        raise NormalizationError('empty', 'text is empty after normalization')
    return key


def normalize_token(text):
    """
    Return a validated machine token (NFKC, case folded, [a-z][a-z0-9_]*).

    Raises NormalizationError when the text is not a token.
    """
    _refuse_forbidden(text, 'token')
    # Bound the raw text before folding it: folding never shrinks text into a
    # shorter ASCII token, and NFKC can grow one character eighteen-fold.
    if len(text.strip()) > TOKEN_MAX_LENGTH:
        token = None
    else:
        token = _fold(text).strip()
    if token is None or len(token) > TOKEN_MAX_LENGTH or not TOKEN_PATTERN.fullmatch(token):
        raise NormalizationError(
            'invalid_token',
            'a token is 1-%d characters of a-z, 0-9 and _, starting with a letter'
            % TOKEN_MAX_LENGTH)
    return token


def _is_word_char(char):
    return (char.isalnum() or char == '_'
            or unicodedata.category(char) in _COMBINING_MARK_CATEGORIES)


@functools.lru_cache(maxsize=None)
def _composes_backward():
    """Return the characters that NFKC can compose with the character before them."""
    # The second character of every two-character canonical decomposition,
    # plus the Hangul jamo; computed on first use (about 30 ms), not at import.
    found = set()
    for code in range(0x30000):
        decomposition = unicodedata.decomposition(chr(code)).split()
        if len(decomposition) == 2 and not decomposition[0].startswith('<'):
            found.add(chr(int(decomposition[1], 16)))
    for first, last in _HANGUL_JOINING_JAMO:
        found.update(map(chr, range(first, last + 1)))
    return frozenset(found)


@functools.lru_cache(maxsize=8192)
def _starts_segment(char):
    """
    Return True when folding can never join char to the text before it.

    That holds when char, and its case folding, decompose to a first character
    that is a starter (canonical combining class 0) and composes with nothing
    before it: NFKC then neither reorders nor composes across the boundary,
    so folding the two sides apart gives the same text as folding them together.
    """
    for text in (char, char.casefold()):
        first = unicodedata.normalize('NFKD', text)[0]
        if unicodedata.combining(first) or first in _composes_backward():
            return False
    return True


def _fold_in_segments(display):
    """
    Fold display text in segments that folding cannot join across.

    Returns (folded, starts, ends): for each index of folded, starts holds
    the display index where its segment begins when the folded character is
    the first of its segment (else -1), and ends holds the display index just
    past its segment when it is the last (else -1). A match may only begin
    and end on segment edges, so it never splits what folding joined.
    """
    if display.isascii():
        # ASCII folds to ASCII of the same length: lower() is the whole story.
        return display.lower(), range(len(display)), range(1, len(display) + 1)
    folded = []
    starts = []
    ends = []
    begin = 0
    length = len(display)
    for index in range(1, length + 1):
        if index < length:
            char = display[index]
            # After a space a segment always starts: a space is a starter that
            # composes with nothing, so folding cannot join across it (a
            # trailing jamo such as U+11B0 after a space starts a word).
            if char >= '\x80' and display[index - 1] != ' ' and not _starts_segment(char):
                continue
        piece = display[begin:index]
        piece = piece.lower() if piece.isascii() else _fold(piece)
        folded.append(piece)
        starts.append(begin)
        if len(piece) > 1:
            starts.extend(_UNMAPPED * (len(piece) - 1))
            ends.extend(_UNMAPPED * (len(piece) - 1))
        ends.append(index)
        begin = index
    return ''.join(folded), starts, ends


class Folded(NamedTuple):
    """
    A text in its display form and folded in segments (see _fold_in_segments).

    Built once per text: a turn folds its utterance once, and every name,
    value and evidence is then found in it. The sequences are shared: read
    them, never change them.
    """

    display: str
    folded: str
    starts: Sequence[int]
    ends: Sequence[int]


def fold(text, *, checked=False):
    """
    Return the Folded form of text; raises NormalizationError (forbidden characters, empty).

    checked: the caller has just found text free of forbidden characters
    (has_forbidden_characters), so it is not scanned again.
    """
    if checked:
        display = _collapse_whitespace(unicodedata.normalize('NFKC', text))
        if not display:
            raise NormalizationError('empty', 'text is empty after normalization')
    else:
        display = display_form(text)
    return Folded(display, *_fold_in_segments(display))


def _folded_window(haystack, start, end):
    """Return the folded indices [low, high) of the display window [start, end), or None."""
    if end is None:
        end = len(haystack.display)
    if isinstance(haystack.starts, range):  # ASCII: one folded character per character
        return start, end
    starts, ends = haystack.starts, haystack.ends
    low = next((index for index, begin in enumerate(starts) if begin == start), None)
    if start == len(haystack.display):
        low = len(starts)
    high = 0 if end == 0 else next(
        (index + 1 for index, stop in enumerate(ends) if stop == end), None)
    if low is None or high is None or high < low:
        return None
    return low, high


def find(needle, haystack, start=0, end=None):
    """
    Return the display span (start, end) of needle's first whole-word occurrence, or None.

    needle and haystack are Folded texts; the search stays inside the
    haystack's display window [start, end), whose edges count as word
    boundaries, as if that part had been folded on its own (it is cut on
    segment edges, so it folds the same). A window that cuts a folded
    segment finds nothing.
    """
    window = _folded_window(haystack, start, end)
    if window is None:
        return None
    low, high = window
    # (ASCII text, folded as ranges, holds no emoji a span could cut.)
    emoji = not isinstance(haystack.starts, range)
    needle_key = needle.folded
    folded, starts, ends = haystack.folded, haystack.starts, haystack.ends
    found = folded.find(needle_key, low, high)
    while found != -1:
        stop = found + len(needle_key)
        starts_clean = found == low or not (
            _is_word_char(folded[found - 1]) and _is_word_char(folded[found]))
        ends_clean = stop == high or not (
            _is_word_char(folded[stop - 1]) and _is_word_char(folded[stop]))
        if starts_clean and ends_clean and starts[found] != -1 and ends[stop - 1] != -1 and not (
                emoji and _cuts_emoji(haystack.display, starts[found], ends[stop - 1])):
            return starts[found], ends[stop - 1]
        found = folded.find(needle_key, found + 1, high)
    return None


def _cuts_emoji(display, start, end):
    """Return True when the span [start, end) of display begins or ends inside an emoji cluster."""
    return (start < len(display) and is_emoji_continuation(display[start])) or (
        0 < start and display[start - 1] == EMOJI_JOINER) or (
        end < len(display) and is_emoji_continuation(display[end]))


def locate(needle, haystack):
    """
    Find needle in haystack as a whole-word span after normalization.

    Both texts are compared by their folded display forms (NFKC, case
    folding, collapsed whitespace). The match must not start or end inside a
    word, so "tea" is not found in "steak" and a name is not found before a
    vowel sign that belongs to it. Returns the matching span of the
    haystack's display form (the haystack's own wording), or None when there
    is no such span. Either text may be given already Folded. Raises
    NormalizationError for forbidden characters or empty input.
    """
    haystack = haystack if isinstance(haystack, Folded) else fold(haystack)
    span = find(needle if isinstance(needle, Folded) else fold(needle), haystack)
    return None if span is None else haystack.display[span[0]:span[1]]
