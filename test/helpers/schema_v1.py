# SPDX-License-Identifier: Apache-2.0
"""Real schema version 1 files, built from the v1 DDL kept as text (fixtures/schema_v1.sql)."""

import pathlib
import sqlite3

V1_DDL = pathlib.Path(__file__).resolve().parents[1] / 'fixtures' / 'schema_v1.sql'
CREATED_AT = '2025-03-01T09:30:00Z'


def make_version_1_database(path, *, rows=True):
    """
    Write a version 1 database at path the way the previous store did.

    WAL mode, foreign keys on, and (with rows) two entities, an alias, two
    memories with links and their text/plain payloads. The connection is
    closed, so the file stands alone (no -wal or -shm beside it).
    """
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute('PRAGMA foreign_keys = ON')
        conn.execute('PRAGMA journal_mode = WAL').fetchall()
        conn.executescript(V1_DDL.read_text(encoding='utf-8'))
        if rows:
            conn.executemany(
                'INSERT INTO entities (id, entity_type, canonical_name, name_key, created_at)'
                ' VALUES (?, ?, ?, ?, ?)',
                [(1, 'person', 'Ada Lovelace', 'ada lovelace', CREATED_AT),
                 (2, 'robot', 'Mira', 'mira', CREATED_AT)])
            conn.execute(
                'INSERT INTO aliases (id, entity_id, alias, alias_key, created_at)'
                " VALUES (1, 1, 'Ada', 'ada', ?)", (CREATED_AT,))
            conn.executemany(
                'INSERT INTO memories (id, kind, summary, predicate, value, value_key,'
                ' source_kind, source_label, confidence, status, created_at)'
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?)",
                [(1, 'fact', 'Ada likes tea', 'likes', 'tea', 'tea', 'console', '', None,
                  CREATED_AT),
                 (2, 'relationship', 'Ada knows Mira', 'knows', 'Mira', 'mira',
                  'operator_statement', 'e1/t1', 0.5, CREATED_AT)])
            conn.executemany(
                'INSERT INTO memory_links (memory_id, entity_id, role) VALUES (?, ?, ?)',
                [(1, 1, 'subject'), (2, 1, 'subject'), (2, 2, 'related')])
            conn.executemany(
                'INSERT INTO payloads (id, memory_id, storage, media_type, text_body, created_at)'
                " VALUES (?, ?, 'inline', 'text/plain', ?, ?)",
                [(1, 1, 'Ada likes tea', CREATED_AT), (2, 2, 'Ada knows Mira', CREATED_AT)])
    finally:
        conn.close()
    return path
