# SPDX-License-Identifier: Apache-2.0
"""Real schema version 2 files, built from the v2 DDL kept as text (fixtures/schema_v2.sql)."""

import pathlib
import sqlite3

V2_DDL = pathlib.Path(__file__).resolve().parents[1] / 'fixtures' / 'schema_v2.sql'
CREATED_AT = '2026-02-01T09:30:00Z'
RETIRED_AT = '2026-02-02T10:00:00Z'

# What the file holds (make_version_2_database): MEM3 was forgotten, MEM2 retired.
MEMORY_IDS = (1, 2, 4, 5)
REMEMBERED_ACTIVE = (4, 5)
SEQUENCES = {'entities': 3, 'aliases': 1, 'memories': 5, 'payloads': 5}


def make_version_2_database(path):
    """
    Write a version 2 database at path the way the version 2 store did.

    WAL mode, foreign keys on, three entities (ENT3 Mira), an alias, four
    memories: MEM1 added by the console, MEM2 remembered and then retired,
    MEM4 and MEM5 remembered and active; MEM3 and its payload were forgotten,
    so the AUTOINCREMENT sequences stand above the largest ids. The
    connection is closed, so the file stands alone (no -wal or -shm).
    """
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute('PRAGMA foreign_keys = ON')
        conn.execute('PRAGMA journal_mode = WAL').fetchall()
        conn.executescript(V2_DDL.read_text(encoding='utf-8'))
        insert_rows(conn)
        # Forget MEM3 as the version 2 store did: its rows go, its id stays used.
        for table, column in (('payloads', 'memory_id'), ('memory_links', 'memory_id'),
                              ('memories', 'id')):
            conn.execute(f'DELETE FROM {table} WHERE {column} = 3')
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall()
    finally:
        conn.close()
    return path


def insert_rows(conn, created_at=CREATED_AT, retired_at=RETIRED_AT):
    """
    Insert what a version 2 and a version 3 file both hold; return the memories' rows.

    Three entities, an alias, five memories (MEM3 to be forgotten), their
    links and payloads. Each row: (id, kind, summary, predicate, value,
    source_kind, source_label, status, retired_at, retired_reason).
    """
    conn.executemany(
        'INSERT INTO entities (id, entity_type, canonical_name, name_key, created_at)'
        ' VALUES (?, ?, ?, ?, ?)',
        [(1, 'person', 'Ada Lovelace', 'ada lovelace', created_at),
         (2, 'person', 'Bob Stone', 'bob stone', created_at),
         (3, 'robot', 'Mira', 'mira', created_at)])
    conn.execute('INSERT INTO aliases (id, entity_id, alias, alias_key, created_at)'
                 " VALUES (1, 1, 'Ada', 'ada', ?)", (created_at,))
    statement = 'episode e{0} turn t{0}'
    rows = [
        (1, 'fact', 'Ada likes tea', 'likes', 'tea', 'console', '', 'active', None, None),
        (2, 'fact', 'Ada lives in Harrowgate', 'lives_in', 'Harrowgate',
         'operator_statement', statement.format(2), 'retired', retired_at,
         'operator corrected it'),
        (3, 'fact', 'Bob Stone plays chess', 'plays', 'chess', 'operator_statement',
         statement.format(3), 'active', None, None),
        (4, 'preference', 'Ada Lovelace prefers green tea', 'prefers_drink',
         'green tea', 'operator_statement', statement.format(4), 'active', None, None),
        (5, 'relationship', 'Ada Lovelace is the cousin of Bob Stone', 'cousin_of',
         'Bob Stone', 'operator_statement', statement.format(5), 'active', None, None),
    ]
    conn.executemany(
        'INSERT INTO memories (id, kind, summary, predicate, value, value_key, source_kind,'
        ' source_label, confidence, status, created_at, retired_at, retired_reason)'
        ' VALUES (?, ?, ?, ?, ?, lower(?), ?, ?, NULL, ?, ?, ?, ?)',
        [(i, kind, summary, predicate, value, value, source, label, status, created_at,
          retired_at, reason)
         for i, kind, summary, predicate, value, source, label, status, retired_at, reason
         in rows])
    links = [(1, 1, 'subject'), (2, 1, 'subject'), (3, 2, 'subject'), (4, 1, 'subject'),
             (5, 1, 'subject'), (5, 2, 'cousin')]
    conn.executemany('INSERT INTO memory_links (memory_id, entity_id, role) VALUES (?, ?, ?)',
                     links)
    conn.executemany(
        'INSERT INTO payloads (id, memory_id, storage, media_type, text_body, created_at)'
        " VALUES (?, ?, 'inline', 'text/plain', ?, ?)",
        [(i, i, summary, created_at) for i, _, summary, *_ in rows])
    return rows
