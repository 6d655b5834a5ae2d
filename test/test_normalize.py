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

"""Tests of text normalization: keys, display forms, tokens and locate."""

from hypothesis import given
from hypothesis import strategies as st
from mira_memory.core.normalize import display_form
from mira_memory.core.normalize import has_control_characters
from mira_memory.core.normalize import locate
from mira_memory.core.normalize import NormalizationError
from mira_memory.core.normalize import normalize_key
from mira_memory.core.normalize import normalize_token
import pytest

# Text without Unicode control characters (category Cc) that has a visible character.
clean_text = st.text(
    alphabet=st.characters(blacklist_categories=('Cc', 'Cs')), min_size=1).filter(
        lambda text: display_form_or_none(text) is not None)


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


@pytest.mark.parametrize('function', [display_form, normalize_key])
@pytest.mark.parametrize('text', ['a\nb', 'a\tb', 'a\x00b', 'a\x7fb', 'a\x85b'])
def test_control_characters_are_rejected_not_removed(function, text):
    with pytest.raises(NormalizationError) as caught:
        function(text)
    assert caught.value.code == 'control_characters'


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
    ('\u3000wide space', False), ('\u200bzero width', False)])
def test_has_control_characters(text, expected):
    assert has_control_characters(text) is expected


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
