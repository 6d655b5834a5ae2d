# SPDX-License-Identifier: Apache-2.0
"""
Stored text with terminal escapes and bidi overrides, printed by the real console from a real node.

The store refuses such text at admission and at import, but a file edited
by hand or written by an older version may hold it. Whatever the console
prints from the store goes through one escaping function
(console/visible.py): no line it writes carries a character a terminal
would act on or hide.
"""

import re
import sqlite3

from helpers.memory_services import OBSERVED_TURN_WAIT
from mira_memory.core.store import MemoryStore, NewMemory
import pytest

pytestmark = pytest.mark.ros

FAKE = '\x1b[2J\x1b[H\x1b[32mALL MEMORIES VERIFIED OK\x1b[0m'
BIDI = 'tea\u202eeeffoc'


def _crafted(database):
    with MemoryStore.open(database) as store:
        ada = store.add_entity('person', 'Ada Lovelace')
        store.add_memory(NewMemory(kind='fact', summary='Ada likes tea',
                                   links=((ada.id, 'subject'),), predicate='likes', value='tea'))
    conn = sqlite3.connect(database)
    with conn:
        conn.execute('UPDATE memories SET summary = ?, value = ?', (f'Ada {FAKE}', BIDI))
        conn.execute('UPDATE payloads SET media_type = ?', (f'text/plain{FAKE}',))
        conn.execute('UPDATE entities SET canonical_name = ?', (f'Ada{FAKE}',))
    conn.close()


def _clean(text):
    """Fail unless every character of text is printable, or a newline."""
    hidden = [char for char in text if not (char.isprintable() or char == '\n')]
    assert hidden == [], text


def test_every_stored_string_reaches_the_terminal_escaped(
        ros, memory_node, tmp_path, console_memory):
    database = tmp_path / 'memory.sqlite3'
    _crafted(database)
    node = memory_node({'enabled': True, 'database_path': str(database),
                        'robot_profile': 'Mira', **OBSERVED_TURN_WAIT}, ros=ros)
    memory = console_memory(node)
    outputs = [memory(*words) for words in (
        ('show', 'MEM1'), ('find', 'Ada Lovelace'), ('list', 'ENT1'),
        ('entity', 'find', 'Ada Lovelace'),
        ('persistent',))]
    shown = ''.join(out + err for _, out, err in outputs)
    _clean(shown)
    assert re.search(r'ALL MEMORIES VERIFIED OK', shown)
    assert '\\x1b[2J' in shown or '\\u001b[2J' in shown
    assert '\\u202e' in shown
