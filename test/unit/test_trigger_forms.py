# SPDX-License-Identifier: Apache-2.0
"""
The generated forms of the verb triggers (language/forms/*.toml) match their lemmas.

tools/trigger_forms.py generates them from simplemma's dictionaries, a
development-time tool that CI does not install (423 MB). So each forms
file records a digest of its inputs (the lemmas of its language's
[[trigger]] records) and of its outputs (the forms): without simplemma
these tests still fail when a lemma was added or removed without running
the tool, or a forms file was edited by hand; with simplemma importable
the tool runs and must reproduce every file exactly.
"""

import importlib.util
import pathlib
import sys
import tomllib

from mira_memory.core.admission import language
import pytest

TOOLS = pathlib.Path(__file__).resolve().parents[2] / 'tools'
sys.path.insert(0, str(TOOLS))
import trigger_forms  # noqa: E402

HAS_SIMPLEMMA = importlib.util.find_spec('simplemma') is not None


def _forms_files():
    return {path.stem: tomllib.loads(path.read_text('utf-8'))
            for path in sorted(trigger_forms.FORMS_DIRECTORY.glob('*.toml'))}


def test_every_language_with_lemmas_has_its_forms_for_those_lemmas():
    tables = trigger_forms.tables()
    files = _forms_files()
    with_lemmas = {code for code, table in tables.items() if trigger_forms.lemmas_of(table)}

    assert with_lemmas == set(trigger_forms.CLAIMED)
    assert set(files) == with_lemmas
    for code in with_lemmas:
        lemmas = trigger_forms.lemmas_of(tables[code])
        assert files[code]['inputs'] == trigger_forms.inputs_digest(lemmas), (
            f'{code}: the lemmas changed; run tools/trigger_forms.py')
        assert sorted(files[code]['forms']) == lemmas


def test_no_forms_file_was_edited_by_hand():
    for code, data in _forms_files().items():
        assert data['outputs'] == trigger_forms.outputs_digest(data['forms']), (
            f'{code}: forms/{code}.toml differs from what the tool wrote')


def test_the_rules_read_every_form_of_a_lemma():
    merged = language.language()
    # Forms no hand-written list held: a subjunctive, a past, a future.
    for form in ('crût', 'pensasse', 'geloofden', 'bezweifelte', 'dudaran', 'acreditaríamos'):
        assert form in merged.trigger_words, form


def test_a_lemma_without_generated_forms_is_refused():
    table = {'language': 'en', 'trigger': [
        {'class': 'hedge', 'words': ['maybe'], 'lemmas': ['ponder'], 'example': 'x'}]}

    with pytest.raises(ValueError, match='no generated forms'):
        language.with_forms(table, {'en': {}})


@pytest.mark.skipif(not HAS_SIMPLEMMA,
                    reason='simplemma is a development-time tool (pip install simplemma): '
                           'the digests above guard the forms without it')
def test_the_generator_reproduces_every_forms_file():
    generated = trigger_forms.generate(trigger_forms.tables())
    for code, text in generated.items():
        assert (trigger_forms.FORMS_DIRECTORY / f'{code}.toml').read_text('utf-8') == text


def _stopwords_file():
    path = trigger_forms.LANGUAGE_DIRECTORY / 'unclaimed_stopwords.toml'
    text = path.read_text('utf-8')
    digest = next(line.split(': ', 1)[1] for line in text.splitlines()
                  if line.startswith('# words digest: '))
    return path, text, digest


def test_the_unclaimed_stop_words_were_not_edited_by_hand():
    sys.path.insert(0, str(TOOLS))
    import unclaimed_words
    _, text, digest = _stopwords_file()

    assert digest == unclaimed_words.words_digest(tomllib.loads(text)['unclaimed'])


@pytest.mark.skipif(not (HAS_SIMPLEMMA and importlib.util.find_spec('stopwordsiso')),
                    reason='stopwordsiso and simplemma are development-time tools: '
                           'the digest above guards the file without them')
def test_the_generator_reproduces_the_unclaimed_stop_words():
    import unclaimed_words
    _, text, _ = _stopwords_file()

    assert unclaimed_words.generate() == text
