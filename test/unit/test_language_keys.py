# SPDX-License-Identifier: Apache-2.0
"""The declared table of language-file keys: what Language reads, and what it refuses."""

import tomllib

from mira_memory.core.admission import language_keys
from mira_memory.core.admission.language import Language, LANGUAGE_DIRECTORY
import pytest


def _english():
    return tomllib.loads((LANGUAGE_DIRECTORY / 'en.toml').read_text(encoding='utf-8'))


def test_every_key_is_declared_once_with_a_kind_and_a_meaning():
    names = [key.name for key in language_keys.LANGUAGE_LISTS]
    assert len(names) == len(set(names))
    kinds = {language_keys.WORDS, language_keys.PHRASES, language_keys.ENDINGS,
             language_keys.SORTED, language_keys.PER_LANGUAGE, language_keys.FLAG,
             language_keys.OWN}
    for key in language_keys.LANGUAGE_LISTS:
        assert key.kind in kinds, key
        assert len(key.meaning) > 10, key


def test_every_declared_list_is_read_into_its_attribute():
    lang = Language([{'language': 'xx', 'function_words': ['Zorp'], 'lead_ins': ['zap zop'],
                      'adverb_suffixes': ['ly', 'ment'], 'markers': ['zorp'],
                      'verb_bracket': True}])
    for key in language_keys.LANGUAGE_LISTS:
        if key.kind != language_keys.OWN:
            assert hasattr(lang, key.name), key.name
    assert lang.function_words == {'zorp'}
    assert lang.lead_ins == {'zap': (('zap', 'zop'),)}
    assert lang.adverb_suffixes == ('ment', 'ly')
    assert lang.markers == {'xx': frozenset({'zorp'})}
    assert lang.verb_bracket == {'xx'}


def test_an_unknown_key_is_refused():
    with pytest.raises(ValueError, match='lead_inz'):
        Language([{**_english(), 'lead_inz': ['by the way']}])


def test_a_trigger_without_an_example_is_refused():
    with pytest.raises(ValueError, match='example'):
        Language([{'language': 'xx', 'trigger': [
            {'class': 'hedge', 'direction': 'both', 'reach': 'sentence', 'words': ['mebbe']}]}])
