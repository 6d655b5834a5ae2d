# SPDX-License-Identifier: Apache-2.0
"""Emoji are grapheme clusters: their selectors and joiners are part of them, nowhere else."""

from mira_memory.core.admission.normalize import find, fold, fold_utterance
from mira_memory.core.admission.normalize import has_forbidden_characters
from mira_memory.core.admission.normalize import has_forbidden_outside_emoji
from mira_memory.core.admission.normalize import NormalizationError
from mira_memory.core.admission.text import tokenize
from mira_memory.core.admission.verdict import ground
import pytest

EMOJI = ('\u2764\ufe0f', '\u263a\ufe0f', '\u2714\ufe0f', '\u26a0\ufe0f', '\u2615\ufe0f',
         '\U0001f469\u200d\U0001f4bb', '\u2764\ufe0f\u200d\U0001f525',
         '\U0001f926\U0001f3fd\u200d\u2640\ufe0f', '3\ufe0f\u20e3', '#\u20e3', '\u203c\ufe0f',
         '\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f')


@pytest.mark.parametrize('emoji', EMOJI)
def test_an_emoji_cluster_beside_a_statement_is_no_forbidden_character(emoji):
    assert has_forbidden_characters(emoji) or emoji == '#\u20e3'
    for utterance in (f'Ada likes green tea {emoji}', f'{emoji} Ada likes green tea.'):
        assert not has_forbidden_outside_emoji(utterance)
        assert ground(utterance, 'Ada likes green tea', 'Ada', 'green tea',
                      'likes').failure is None, utterance


@pytest.mark.parametrize('text', [
    'tea\ufe0f',              # a selector after a letter
    'you\u200dng',            # a joiner between letters
    '\u2615\u200d tea',       # a joiner that joins no second emoji
    'tea\U000e0041',          # a tag with no flag
    'Ada\u200b likes tea \u2615\ufe0f',  # a forbidden character beside an emoji
])
def test_forbidden_characters_outside_an_emoji_are_still_refused(text):
    assert has_forbidden_outside_emoji(text)
    with pytest.raises(NormalizationError):
        fold_utterance(text)


def test_an_emoji_cluster_is_one_symbol_token_keyed_without_selector_or_skin_tone():
    tokens = tokenize(
        'Ada \U0001f926\U0001f3fd\u200d\u2640\ufe0f likes \u2764\ufe0f 3\ufe0f\u20e3')
    assert [(token.key, token.is_word, token.is_symbol) for token in tokens] == [
        ('ada', True, False), ('\U0001f926\u200d\u2640', False, True), ('likes', True, False),
        ('\u2764', False, True), ('3\u20e3', False, True)]


def test_a_skin_tone_does_not_hide_a_marker_from_the_rules():
    assert ground('Ada likes green tea \U0001f644\U0001f3fd', 'Ada likes green tea', 'Ada',
                  'green tea', 'likes').failure == 'sarcastic'


def test_the_evidence_may_not_cut_an_emoji_cluster():
    utterance = fold_utterance('Ada likes tea \U0001f469\u200d\U0001f4bb now')
    assert find(fold('Ada likes tea'), utterance) == (0, 13)
    assert find(fold('Ada likes tea \U0001f469'), utterance) is None
    assert find(fold('\U0001f4bb now'), utterance) is None
    assert find(fold('Ada likes tea \u2615'), fold_utterance('Ada likes tea \u2615\ufe0f')) is None
