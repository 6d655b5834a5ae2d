# SPDX-License-Identifier: Apache-2.0
"""The console's one escaping function (console/visible.py): what a terminal acts on is shown."""

from mira_memory.console.visible import visible, visible_lines
import pytest


@pytest.mark.parametrize('text, shown', [
    ('\x1b[2J\x1b[32mALL OK', '\\x1b[2J\\x1b[32mALL OK'),
    ('a\x00b\x7fc', 'a\\x00b\\x7fc'),
    ('csi\x9b2J', 'csi\\x9b2J'),                       # a C1 control: some terminals act on it
    ('right\u202eleft', 'right\\u202eleft'),           # a bidirectional override
    ('zero\u200bwidth\u2066', 'zero\\u200bwidth\\u2066'),
    ('line\u2028separator', 'line\\u2028separator'),
    ('tab\tnew\nline\r', 'tab\\tnew\\nline\\r'),
    ('no\u00a0break', 'no\\xa0break'),
    ('private\U000f0000', 'private\\U000f0000'),
])
def test_hidden_characters_are_shown_as_escapes(text, shown):
    assert visible(text) == shown
    assert visible(text).isprintable()


@pytest.mark.parametrize('text', ['Ada Lovelace', 'Zoë Quist ☃', 'C:\\path', '"quoted"', ''])
def test_printable_text_is_unchanged(text):
    assert visible(text) == text


def test_lines_keep_their_own_newlines_only():
    assert visible_lines(['one\nforged', 'two']) == 'one\\nforged\ntwo'
