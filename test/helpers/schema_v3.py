# SPDX-License-Identifier: Apache-2.0
"""Real schema version 3 files, built from the v3 DDL kept as text (fixtures/schema_v3.sql)."""

import pathlib
import sqlite3

from helpers.schema_v2 import insert_rows

V3_DDL = pathlib.Path(__file__).resolve().parents[1] / 'fixtures' / 'schema_v3.sql'
CREATED_AT = '2026-03-01T09:30:00Z'
RETIRED_AT = '2026-03-02T10:00:00Z'
RULES = ('3.0.0', '0123456789abcdef')

# What the file holds (make_version_3_database): MEM3 was forgotten, MEM2 retired.
MEMORY_IDS = (1, 2, 4, 5)
RECEIPT_IDS = (2, 4, 5)
SEQUENCES = {'entities': 3, 'aliases': 1, 'memories': 5, 'payloads': 5}


def make_version_3_database(path):
    """
    Write a version 3 database at path the way the version 3 store did.

    WAL mode, foreign keys on, three entities (ENT3 Mira), an alias, four
    memories: MEM1 added by the console; MEM2 remembered and then retired,
    MEM4 and MEM5 remembered and active, each with its receipt; MEM3 and its
    payload and receipt were forgotten, so the AUTOINCREMENT sequences stand
    above the largest ids. The connection is closed, so the file stands alone
    (no -wal or -shm).
    """
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute('PRAGMA foreign_keys = ON')
        conn.execute('PRAGMA journal_mode = WAL').fetchall()
        conn.executescript(V3_DDL.read_text(encoding='utf-8'))
        conn.execute('PRAGMA user_version = 3')
        rows = insert_rows(conn, CREATED_AT, RETIRED_AT)
        receipts = []
        for i, kind, summary, predicate, value, source, _, _, _, _ in rows:
            if source != 'operator_statement':
                continue
            related = ('Bob Stone', 'cousin', 2) if kind == 'relationship' else (None, None, None)
            subject = 'Bob Stone' if i == 3 else 'Ada Lovelace'
            receipts.append((
                i, summary + '.', f'e{i}', f't{i}', kind, subject, predicate, value,
                related[0], related[1], summary, 'Mira', *RULES, '1-19',
                2 if i == 3 else 1, related[2], CREATED_AT))
        conn.executemany(
            'INSERT INTO receipts (memory_id, utterance, episode_id, turn_id, kind, subject,'
            ' predicate, value, related_entity, related_role, evidence, robot_profile,'
            ' rules_version, rules_digest, rules_ran, subject_entity_id, related_entity_id,'
            ' created_at) VALUES (%s)' % ', '.join('?' * 18), receipts)
        # Forget MEM3 as the version 3 store did: its rows go, its id stays used.
        for table, column in (('receipts', 'memory_id'), ('payloads', 'memory_id'),
                              ('memory_links', 'memory_id'), ('memories', 'id')):
            conn.execute(f'DELETE FROM {table} WHERE {column} = 3')
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall()
    finally:
        conn.close()
    return path
