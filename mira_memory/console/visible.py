# SPDX-License-Identifier: Apache-2.0
"""
Text made safe to print: every character a terminal would act on, or hide, shown as an escape.

What the console prints comes from the store, and the store may hold text
from an import, an older version, or a file edited by hand. A terminal acts
on control characters (ESC starts a sequence that can clear the screen or
paint a fake line), and format characters (bidirectional overrides,
zero-width characters) change what a line seems to say. Like git's quoted
paths and systemctl's escaped unit names, visible() writes each such
character as a C-style escape (backslash and t, n or r; xNN, uNNNN or
UNNNNNNNN: its code point in hex), so
the line shows what is stored. Python's str.isprintable() decides: control
(Cc), format (Cf), surrogate, private-use and unassigned characters, line
and paragraph separators, and every space but ' ' are escaped. A backslash
is left as it is.

Every line the console writes goes through visible() (memory_console,
jobs, offline_tools, operator_chat); quoted() (console/commands.py) adds
the double quotes around a stored string.
"""

_NAMED = {'\t': '\\t', '\n': '\\n', '\r': '\\r'}


def visible(text):
    """Return text with every character that is not printable written as an escape."""
    text = str(text)
    if text.isprintable():
        return text
    return ''.join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char):
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xff:
        return '\\x%02x' % code
    if code <= 0xffff:
        return '\\u%04x' % code
    return '\\U%08x' % code


def visible_lines(lines):
    """Return lines (an iterable of one-line texts) made visible, joined by newlines."""
    return '\n'.join(visible(line) for line in lines)
