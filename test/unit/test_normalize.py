# SPDX-License-Identifier: Apache-2.0
"""Tests of text normalization: keys, display forms, tokens and locate."""

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from mira_memory.core.admission.normalize import display_form, has_forbidden_characters
from mira_memory.core.admission.normalize import has_unsegmented_script, locate, NormalizationError
from mira_memory.core.admission.normalize import normalize_key, normalize_token
import pytest

# Text without forbidden characters that has a visible character.
clean_text = st.text(
    alphabet=st.characters(blacklist_categories=('Cc', 'Cs')), min_size=1).filter(
        lambda text: display_form_or_none(text) is not None)


def _begins_no_word(folded):
    """Return True when folded text begins with a space or a combining mark."""
    return folded[:1].isspace() or unicodedata.category(folded[:1]).startswith('M')


# Every letter that case folding or NFKC changes (the ones whose sequences
# may compose only after folding: T + U+0308, J + U+030C), and every
# combining mark, in the running Python's Unicode version.
FOLDING_LETTERS = [
    chr(code) for code in range(sys.maxunicode + 1)
    if unicodedata.category(chr(code)).startswith('L')
    and not has_forbidden_characters(chr(code))
    and unicodedata.normalize('NFKC', chr(code)).casefold() != chr(code)]
COMBINING_MARKS = [
    chr(code) for code in range(sys.maxunicode + 1)
    if unicodedata.category(chr(code)) in ('Mn', 'Mc', 'Me')
    and not has_forbidden_characters(chr(code))]
# Left out: the few letters whose NFKC form begins with a space (the
# Greek ypogegrammeni U+037A and the isolated Arabic presentation forms of
# diacritics, U+FC5E-U+FC63 and
# U+FE70-U+FE7F: NFKC gives a space and combining marks) or with a
# combining mark (the halfwidth katakana voiced sound marks U+FF9E and
# U+FF9F, letters that NFKC makes the combining U+3099 and U+309A; found by
# this property in a coverage run). Folded, such a "word" is no word at
# all, and locate refusing to find it between separators is the intended,
# safe side (a rejection, never an admission).
letters_with_marks = st.builds(
    lambda letter, marks: letter + ''.join(marks),
    st.one_of(st.sampled_from(FOLDING_LETTERS), st.characters(categories=('L',))),
    st.lists(st.sampled_from(COMBINING_MARKS), min_size=1, max_size=3)).filter(
        lambda text: not has_forbidden_characters(text)
        and not _begins_no_word(unicodedata.normalize('NFKC', text[0])))


def display_form_or_none(text):
    try:
        return display_form(text)
    except NormalizationError:
        return None


@pytest.mark.parametrize('variant', [
    'Ada Lovelace', 'ada lovelace', 'ADA LOVELACE', '  Ada   Lovelace ',
    'Ａｄａ Ｌｏｖｅｌａｃｅ', 'Ada\u3000Lovelace', 'Ada\u00a0Lovelace', 'Ada\u2003Lovelace'])
def test_key_variants_are_equal(variant):
    assert normalize_key(variant) == 'ada lovelace'


def test_key_uses_full_case_folding():
    assert normalize_key('Straße') == normalize_key('STRASSE') == 'strasse'


def test_key_applies_nfkc_compatibility_forms():
    assert normalize_key('ﬁle №1') == 'file no1'


def test_key_does_not_strip_punctuation_or_inner_letters():
    assert normalize_key('Ada-Lovelace') != normalize_key('Ada Lovelace')


def test_display_form_keeps_case_and_collapses_whitespace():
    assert display_form('  Ｍｉｒａ   Likes\u3000TEA ') == 'Mira Likes TEA'


# One example of every class of forbidden character.
FORBIDDEN = {
    'newline': '\n', 'tab': '\t', 'nul': '\x00', 'delete': '\x7f', 'c1-next-line': '\x85',
    'soft-hyphen': '\u00ad', 'zero-width-space': '\u200b', 'zero-width-non-joiner': '\u200c',
    'zero-width-joiner': '\u200d', 'left-to-right-mark': '\u200e',
    'right-to-left-override': '\u202e', 'pop-directional-formatting': '\u202c',
    'first-strong-isolate': '\u2068', 'arabic-letter-mark': '\u061c', 'word-joiner': '\u2060',
    'invisible-times': '\u2062', 'byte-order-mark': '\ufeff', 'interlinear-annotation': '\ufff9',
    'mongolian-vowel-separator': '\u180e', 'arabic-number-sign': '\u0600',
    'tag-latin-a': '\U000e0041', 'cancel-tag': '\U000e007f', 'variation-selector-16': '\ufe0f',
    'variation-selector-supplement': '\U000e0100', 'combining-grapheme-joiner': '\u034f',
    'hangul-filler': '\u3164', 'halfwidth-hangul-filler': '\uffa0',
    'mongolian-free-variation-selector': '\u180b', 'khmer-inherent-vowel': '\u17b4',
    'musical-begin-beam': '\U0001d173', 'shorthand-format-letter-overlap': '\U0001bca0',
    'line-separator': '\u2028', 'paragraph-separator': '\u2029',
    'noncharacter-fdd0': '\ufdd0', 'noncharacter-fffe': '\ufffe',
    'noncharacter-plane-16': '\U0010ffff', 'lone-surrogate': '\ud800',
}


@pytest.mark.parametrize('function', [display_form, normalize_key, normalize_token])
@pytest.mark.parametrize('char', FORBIDDEN.values(), ids=FORBIDDEN.keys())
def test_forbidden_characters_are_rejected_not_removed(function, char):
    with pytest.raises(NormalizationError) as caught:
        function('ab' + char + 'c')
    assert caught.value.code == 'control_characters'


@pytest.mark.parametrize('char', FORBIDDEN.values(), ids=FORBIDDEN.keys())
def test_locate_rejects_forbidden_characters_in_either_text(char):
    for needle, haystack in (('tea', 'I like te' + char + 'a'), ('te' + char + 'a', 'tea')):
        with pytest.raises(NormalizationError):
            locate(needle, haystack)


def test_every_format_character_is_forbidden():
    format_characters = [
        chr(code) for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ('Cc', 'Cf', 'Cs', 'Zl', 'Zp')]
    assert len(format_characters) > 2000
    assert [char for char in format_characters if not has_forbidden_characters(char)] == []


def test_no_normalization_turns_an_allowed_character_into_a_forbidden_one():
    # Why the raw text is checked, once, before any normalization.
    produced = [
        chr(code) for code in range(sys.maxunicode + 1)
        if not has_forbidden_characters(chr(code))
        and has_forbidden_characters(
            unicodedata.normalize('NFKC', unicodedata.normalize('NFKC', chr(code)).casefold()))]
    assert produced == []


@pytest.mark.parametrize('function', [display_form, normalize_key])
@pytest.mark.parametrize('text', ['', '   ', '\u3000'])
def test_empty_text_is_rejected(function, text):
    with pytest.raises(NormalizationError) as caught:
        function(text)
    assert caught.value.code == 'empty'


def test_normalization_error_is_a_value_error():
    assert issubclass(NormalizationError, ValueError)


@pytest.mark.parametrize('text, expected', [
    ('a\tb', True), ('line\n', True), ('\x1b[0m', True), ('plain text', False),
    ('\u3000wide space', False), ('\u200bzero width', True), ('Ada\u00adm', True),
    ('\u202eaet\u202c', True), ('one\u2028two', True), ('e\u0301 accent', False),
    ('\u0930\u093e\u092e', False), ('\u00a0no-break space', False), ('\U0001f600 smile', False)])
def test_has_forbidden_characters(text, expected):
    assert has_forbidden_characters(text) is expected


def test_huge_token_is_refused_before_folding():
    # NFKC would grow each U+FDFA eighteen-fold; the raw bound refuses it first.
    with pytest.raises(NormalizationError) as caught:
        normalize_token('\ufdfa' * 100000)
    assert caught.value.code == 'invalid_token'


@pytest.mark.parametrize('text, expected', [
    ('likes', 'likes'), ('Likes', 'likes'), ('ｌｉｋｅｓ', 'likes'), (' works_at ', 'works_at'),
    ('v2', 'v2'), ('x' * 64, 'x' * 64)])
def test_valid_tokens_are_folded(text, expected):
    assert normalize_token(text) == expected


@pytest.mark.parametrize('text', [
    '', ' ', 'Sub Ject!', 'sub ject', '1abc', '_x', 'a-b', 'ümlaut', 'x' * 65, 'a\nb'])
def test_invalid_tokens_are_rejected(text):
    with pytest.raises(NormalizationError):
        normalize_token(text)


def test_locate_finds_a_whole_word_span_in_the_haystack_wording():
    assert locate('tea', 'I really like TEA.') == 'TEA'


def test_locate_returns_the_haystack_display_form_span():
    assert locate('green tea', 'I like ｇｒｅｅｎ   ＴＥＡ now') == 'green TEA'


@pytest.mark.parametrize('needle, haystack', [
    ('tea', 'I like steak'), ('tea', 'teapot'), ('Ada', 'Adam was here'), ('coffee', 'tea')])
def test_locate_does_not_match_inside_words_or_absent_text(needle, haystack):
    assert locate(needle, haystack) is None


def test_locate_skips_an_embedded_occurrence_for_a_later_whole_word():
    assert locate('tea', 'steak and tea') == 'tea'


def test_locate_rejects_control_characters():
    with pytest.raises(NormalizationError):
        locate('tea', 'I like\ntea')


@pytest.mark.parametrize('text', ['T\u0308', 'J\u030c', 'Ada T\u0308ea', '\u01f0 and J\u030c',
                                  'X\u0345', '\u0130stanbul', 'STRASSE'])
def test_text_that_composes_only_after_case_folding_locates_itself(text):
    assert locate(text, text) == display_form(text)


def test_letters_composing_after_folding_are_found_by_their_other_spelling():
    assert locate('\u1e97', 'I saw T\u0308 there') == 'T\u0308'
    assert locate('J\u030c', 'say \u01f0 now') == '\u01f0'


@pytest.mark.parametrize('needle, haystack', [
    ('\u0930\u093e\u092e', '\u0930\u093e\u092e\u093e'),  # राम inside रामा
    ('\u0915', '\u0915\u093f'),  # a consonant before its vowel sign
    ('e', 'e\u0333'),  # a letter before a combining double low line
    ('\u0301tea', 'x\u0301tea'),  # a match may not start at a mark after a letter
    ('strass', 'Stra\u00dfe'),  # folding ß gives ss: a match may not split it
])
def test_locate_never_ends_inside_a_word_in_any_script(needle, haystack):
    assert locate(needle, haystack) is None


def test_vowel_signs_belong_to_their_word():
    assert locate('\u0930\u093e\u092e', '\u0930\u093e\u092e \u091c\u0940') == (
        '\u0930\u093e\u092e')


@pytest.mark.parametrize('needle, haystack', [
    ('\u827e\u8fbe', '\u827e\u8fbe\u559c\u6b22\u7eff\u8336'),  # 艾达 in 艾达喜欢绿茶
    ('\u0e0a\u0e32', '\u0e09\u0e31\u0e19\u0e0a\u0e2d\u0e1a\u0e0a\u0e32'),  # ชา in ฉันชอบชา
    ('\u30a8\u30a4\u30c0', '\u30a8\u30a4\u30c0\u306f\u304a\u8336\u304c\u597d\u304d'),
])
def test_words_of_scripts_without_spaces_are_never_split(needle, haystack):
    assert locate(needle, haystack) is None


@pytest.mark.parametrize('text, expected', [
    ('\u827e\u8fbe', True), ('\u0e0a\u0e32', True), ('\u30a8\u30a4\u30c0', True),
    ('\u3072\u3089\u304c\u306a', True), ('\u1780', True), ('\u1000', True),
    ('\u0f40', True), ('\U00020000', True), ('Ada likes \u8336', True),
    ('Ada Lovelace', False), ('\uc5d0\uc774\ub2e4', False), ('\u0930\u093e\u092e', False),
    ('\u0410\u0434\u0430', False), ('\u3001 \u3002', False)])
def test_has_unsegmented_script(text, expected):
    assert has_unsegmented_script(text) is expected


@given(clean_text)
def test_key_is_idempotent(text):
    key = normalize_key(text)
    assert normalize_key(key) == key


@given(clean_text)
def test_key_of_display_form_equals_key(text):
    assert normalize_key(display_form(text)) == normalize_key(text)


@given(clean_text)
def test_display_form_is_idempotent(text):
    assert display_form(display_form(text)) == display_form(text)


@given(clean_text)
def test_text_locates_itself(text):
    assert locate(text, text) is not None


@given(clean_text)
def test_the_key_of_a_text_locates_it(text):
    # Folding in segments gives the same text as folding the whole at once.
    assert locate(normalize_key(text), text) is not None


def is_word_char(char):
    return (char.isalnum() or char == '_'
            or unicodedata.category(char) in ('Mn', 'Mc', 'Me'))


def is_whole_words(span, display):
    """Return True when some occurrence of span in display starts and ends on word edges."""
    start = display.find(span)
    while start != -1:
        end = start + len(span)
        clean_start = start == 0 or not (
            is_word_char(display[start - 1]) and is_word_char(display[start]))
        clean_end = end == len(display) or not (
            is_word_char(display[end - 1]) and is_word_char(display[end]))
        if clean_start and clean_end:
            return True
        start = display.find(span, start + 1)
    return False


@settings(max_examples=500)
@given(letters_with_marks)
def test_letters_with_combining_marks_locate_themselves(text):
    assert locate(text, text) == display_form(text)


@settings(max_examples=500)
@given(st.lists(letters_with_marks, min_size=1, max_size=4),
       st.lists(st.sampled_from([' ', '', ', ', '-']), min_size=3, max_size=3),
       st.integers(min_value=0, max_value=3), st.integers(min_value=1, max_value=4))
def test_locate_never_returns_a_partial_word(words, separators, first, count):
    haystack = ''.join(
        word + separators[index % len(separators)] for index, word in enumerate(words))
    display = display_form(haystack)
    needle = ''.join(words[first:first + count]) or words[0]
    span = locate(needle, haystack)
    if span is not None:
        assert is_whole_words(span, display)
    if count == 1 and first < len(words) and '' not in separators:
        # A word between separators is whole: it is found.
        assert span is not None
