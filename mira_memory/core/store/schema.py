# SPDX-License-Identifier: Apache-2.0
"""
The store's SQLite schema (version 3), how a file is classified, and the migrations.

Version 3 adds one table to version 2: `receipts`, one row per memory that
remember admitted (source operator_statement), keyed by the memory's id: the
operator's utterance as the node heard it, the episode and turn ids, the
proposal as sent, the rules that admitted it (RULES_VERSION and the language
data's digest) and their decision (the rules that ran, the entity ids they
resolved). Memories written by the console, and every memory that existed
before version 3, have none. See docs/receipts.md.

Version 2 differs from version 1 in two ways only:
- a memory is `active` or `retired`; a retired one records when
  (retired_at) and why (retired_reason), both NULL while active;
- entities, aliases, memories and payloads use AUTOINCREMENT, so an id is
  never given again, even after the newest row was forgotten (version 1's
  plain INTEGER PRIMARY KEY reuses max(id) + 1).

Memory_links has no id of its own and is unchanged.
"""

import sqlite3

from mira_memory.core.errors import BackendError, UnsupportedDatabaseError

SCHEMA_VERSION = 3
MIGRATE_COMMAND = 'ros2 run mira_memory memory_migrate --database %s'

_TIMESTAMP_GLOB = (
    "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z'")

# Tables and indexes are kept apart so the migration can build the tables
# under temporary names and add the indexes once they have their own.
_TABLES = {
    'entities': """
    CREATE TABLE entities (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        entity_type TEXT NOT NULL CHECK (entity_type <> ''),
        canonical_name TEXT NOT NULL CHECK (canonical_name <> ''),
        name_key TEXT NOT NULL CHECK (name_key <> ''),
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts})
    )
    """,
    'aliases': """
    CREATE TABLE aliases (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        entity_id INTEGER NOT NULL REFERENCES entities (id),
        alias TEXT NOT NULL CHECK (alias <> ''),
        alias_key TEXT NOT NULL CHECK (alias_key <> ''),
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts}),
        UNIQUE (entity_id, alias_key)
    )
    """,
    'memories': """
    CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (
            kind IN ('fact', 'preference', 'relationship', 'observation', 'event')),
        summary TEXT NOT NULL CHECK (summary <> ''),
        predicate TEXT CHECK (predicate IS NULL OR predicate <> ''),
        value TEXT CHECK (value IS NULL OR value <> ''),
        value_key TEXT CHECK (value_key IS NULL OR value_key <> ''),
        source_kind TEXT NOT NULL CHECK (source_kind <> ''),
        source_label TEXT NOT NULL,
        confidence REAL CHECK (confidence IS NULL OR (
            typeof(confidence) = 'real' AND confidence >= 0.0 AND confidence <= 1.0)),
        status TEXT NOT NULL CHECK (status IN ('active', 'retired')),
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts}),
        retired_at TEXT CHECK (retired_at IS NULL OR retired_at GLOB {ts}),
        retired_reason TEXT CHECK (retired_reason IS NULL OR retired_reason <> ''),
        CHECK ((value IS NULL) = (value_key IS NULL)),
        CHECK ((status = 'retired') = (retired_at IS NOT NULL)),
        CHECK ((status = 'retired') = (retired_reason IS NOT NULL))
    )
    """,
    'memory_links': """
    CREATE TABLE memory_links (
        memory_id INTEGER NOT NULL REFERENCES memories (id),
        entity_id INTEGER NOT NULL REFERENCES entities (id),
        role TEXT NOT NULL CHECK (role <> ''),
        PRIMARY KEY (memory_id, entity_id, role)
    ) WITHOUT ROWID
    """,
    'payloads': """
    CREATE TABLE payloads (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id INTEGER NOT NULL REFERENCES memories (id),
        storage TEXT NOT NULL CHECK (storage IN ('inline', 'object')),
        media_type TEXT NOT NULL CHECK (media_type <> ''),
        text_body TEXT CHECK (text_body IS NULL OR typeof(text_body) = 'text'),
        object_ref TEXT CHECK (object_ref IS NULL OR object_ref <> ''),
        sha256 TEXT CHECK (sha256 IS NULL OR (
            length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*')),
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts}),
        CHECK (
            (storage = 'inline' AND text_body IS NOT NULL AND object_ref IS NULL
                AND media_type GLOB 'text/*')
            OR (storage = 'object' AND text_body IS NULL AND object_ref IS NOT NULL
                AND sha256 IS NOT NULL))
    )
    """,
    'receipts': """
    CREATE TABLE receipts (
        memory_id INTEGER PRIMARY KEY REFERENCES memories (id),
        utterance TEXT NOT NULL CHECK (utterance <> ''),
        episode_id TEXT NOT NULL CHECK (episode_id <> ''),
        turn_id TEXT NOT NULL CHECK (turn_id <> ''),
        kind TEXT NOT NULL CHECK (kind <> ''),
        subject TEXT NOT NULL CHECK (subject <> ''),
        predicate TEXT NOT NULL CHECK (predicate <> ''),
        value TEXT NOT NULL CHECK (value <> ''),
        related_entity TEXT CHECK (related_entity IS NULL OR related_entity <> ''),
        related_role TEXT CHECK (related_role IS NULL OR related_role <> ''),
        evidence TEXT NOT NULL CHECK (evidence <> ''),
        robot_profile TEXT NOT NULL,
        rules_version TEXT NOT NULL CHECK (rules_version <> ''),
        rules_digest TEXT NOT NULL CHECK (rules_digest <> ''),
        rules_ran TEXT NOT NULL CHECK (rules_ran <> ''),
        subject_entity_id INTEGER NOT NULL CHECK (subject_entity_id > 0),
        related_entity_id INTEGER CHECK (related_entity_id IS NULL OR related_entity_id > 0),
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts})
    )
    """,
}

_INDEXES = {
    'entities': ('CREATE INDEX entities_name_key ON entities (name_key, id)',),
    'aliases': ('CREATE INDEX aliases_alias_key ON aliases (alias_key, entity_id)',),
    'memories': (
        # Admission's one-write-per-operator-turn check looks memories up by label.
        """
        CREATE INDEX memories_operator_turn ON memories (source_label, id)
            WHERE source_kind = 'operator_statement'
        """,),
    # Walked backwards for the newest N active memories of one entity, and
    # by forget to find every memory linked to an entity.
    'memory_links': ('CREATE INDEX memory_links_entity ON memory_links (entity_id, memory_id)',),
    'payloads': ('CREATE INDEX payloads_memory ON payloads (memory_id, id)',),
    # The node counts the receipts of other rules than its own at startup.
    'receipts': (
        'CREATE INDEX receipts_rules ON receipts (rules_version, rules_digest)',),
}

SCHEMA_TABLES = ('entities', 'aliases', 'memories', 'memory_links', 'payloads', 'receipts')
# The tables of version 2 (version 3 added receipts).
_V2_TABLES = ('entities', 'aliases', 'memories', 'memory_links', 'payloads')
# The tables whose ids are rendered or exported: AUTOINCREMENT keeps them unique forever.
ID_TABLES = ('entities', 'aliases', 'memories', 'payloads')

SCHEMA_STATEMENTS = tuple(
    statement
    for table in SCHEMA_TABLES
    for statement in (_TABLES[table].format(ts=_TIMESTAMP_GLOB), *_INDEXES[table]))

# Version 1 columns in version 2 order; the two retirement columns start NULL.
_V1_COLUMNS = {
    'entities': 'id, entity_type, canonical_name, name_key, created_at',
    'aliases': 'id, entity_id, alias, alias_key, created_at',
    'memories': ('id, kind, summary, predicate, value, value_key, source_kind, source_label,'
                 ' confidence, status, created_at'),
    'payloads': ('id, memory_id, storage, media_type, text_body, object_ref, sha256,'
                 ' created_at'),
}


def create_schema(conn):
    """Create every table and index of the current version in an empty database."""
    for statement in SCHEMA_STATEMENTS:
        conn.execute(statement)
    conn.execute('PRAGMA user_version = %d' % SCHEMA_VERSION)


def _names(conn):
    return {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE name NOT GLOB 'sqlite_*'")}


def _require_tables(conn, version):
    tables = SCHEMA_TABLES if version >= 3 else _V2_TABLES
    missing = [table for table in tables if table not in _names(conn)]
    if missing:
        raise UnsupportedDatabaseError(
            'database claims schema version %d but lacks tables: %s'
            % (version, ', '.join(missing)))


def schema_state(conn, path=None):
    """
    Classify an open database as 'empty' or 'current' (version 3).

    Raises UnsupportedDatabaseError for anything else; for a version 1 or 2
    file the message names the migration command.
    """
    version = conn.execute('PRAGMA user_version').fetchone()[0]
    names = _names(conn)
    if version == 0 and not names:
        return 'empty'
    if version == 0:
        raise UnsupportedDatabaseError(
            'database is not empty but has no schema version (user_version 0);'
            ' refusing to use or recreate it')
    if version in MIGRATES_FROM:
        raise UnsupportedDatabaseError(
            'database has schema version %d, this node needs version %d; it was left'
            ' unchanged: stop the node and run: %s'
            % (version, SCHEMA_VERSION, MIGRATE_COMMAND % (path or 'PATH')))
    if version != SCHEMA_VERSION:
        raise UnsupportedDatabaseError(
            'database schema version %d is not supported (expected %d)'
            % (version, SCHEMA_VERSION))
    _require_tables(conn, version)
    return 'current'


def open_read_only(path):
    """
    Open path through a read-only URI connection that never writes to the file.

    With no -wal file beside it the main file is the whole database, so it is
    opened immutable: SQLite then creates no -wal or -shm either, and a
    refused file is left exactly as it was, with nothing beside it.
    """
    wal = path.with_name(path.name + '-wal')
    mode = 'mode=ro' if wal.exists() else 'mode=ro&immutable=1'
    try:
        return sqlite3.connect(path.as_uri() + '?' + mode, uri=True, isolation_level=None,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise BackendError('cannot open database read-only: %s' % exc) from exc


def read_version(path):
    """Return (user_version, table names) of the file at path, read-only."""
    return _read_only(path, lambda conn: (
        conn.execute('PRAGMA user_version').fetchone()[0], _names(conn)))


def inspect_existing(path):
    """Validate an existing file through a read-only connection that writes nothing."""
    return _read_only(path, lambda conn: schema_state(conn, path))


def _read_only(path, read):
    """Return read(conn) on a read-only connection to path, with the store's errors."""
    conn = open_read_only(path)
    try:
        return read(conn)
    except sqlite3.OperationalError as exc:
        raise BackendError('cannot read database: %s' % exc) from exc
    except sqlite3.DatabaseError as exc:
        raise UnsupportedDatabaseError(
            'file is not a usable SQLite database: %s' % exc) from exc
    finally:
        conn.close()


def table_counts(conn):
    """Return {table: row count} of every schema table the file has (receipts: version 3)."""
    names = _names(conn)
    return {table: conn.execute('SELECT count(*) FROM %s' % table).fetchone()[0]
            for table in SCHEMA_TABLES if table in names}


def check_integrity(conn):
    """Raise BackendError unless integrity_check and foreign_key_check both pass."""
    problems = [row[0] for row in conn.execute('PRAGMA integrity_check')]
    if problems != ['ok']:
        raise BackendError('integrity_check failed: %s' % '; '.join(problems[:3]))
    if conn.execute('PRAGMA foreign_key_check').fetchone() is not None:
        raise BackendError('foreign_key_check found rows with missing references')


# The versions memory_migrate upgrades to SCHEMA_VERSION.
MIGRATES_FROM = (1, 2)


def migrate(conn):
    """
    Upgrade a version 1 or 2 database to version 3 in one transaction; return (from, counts).

    conn must be a read-write connection with no open transaction. A
    version 1 file is rebuilt as version 2 first (_v1_to_v2), then the
    receipts table is added (_v2_to_v3: existing memories get no receipt),
    all in the same transaction. Every row count is compared with the
    original, integrity_check and foreign_key_check run before the commit,
    and any failure rolls everything back. foreign_keys is off during the
    transaction (version 1's tables are swapped for new ones).
    """
    if conn.in_transaction:
        raise BackendError('migration needs a connection with no open transaction')
    conn.execute('PRAGMA foreign_keys = OFF')
    try:
        conn.execute('BEGIN IMMEDIATE')
        try:
            version = conn.execute('PRAGMA user_version').fetchone()[0]
            if version not in MIGRATES_FROM:
                raise UnsupportedDatabaseError(
                    'database schema version is %d, not %s; nothing to migrate'
                    % (version, ' or '.join(map(str, MIGRATES_FROM))))
            _require_tables(conn, version)
            before = table_counts(conn)
            if version == 1:
                _v1_to_v2(conn)
            _v2_to_v3(conn)
            after = table_counts(conn)
            if after != dict(before, receipts=0):
                raise BackendError('row counts changed during migration: %r -> %r'
                                   % (before, after))
            check_integrity(conn)
            conn.execute('PRAGMA user_version = %d' % SCHEMA_VERSION)
            conn.execute('COMMIT')
        except BaseException:
            if conn.in_transaction:
                conn.execute('ROLLBACK')
            raise
    finally:
        conn.execute('PRAGMA foreign_keys = ON')
    return version, after


def _v1_to_v2(conn):
    """
    Rebuild the version 1 tables as version 2, inside the caller's transaction.

    Each table with an id is rebuilt under a temporary name, filled in id
    order, and swapped in (SQLite's documented way to change a table's
    definition), so every id and every row is kept.
    """
    for table in ID_TABLES:
        conn.execute(_TABLES[table].format(ts=_TIMESTAMP_GLOB).replace(
            'CREATE TABLE %s (' % table, 'CREATE TABLE new_%s (' % table, 1))
        conn.execute('INSERT INTO new_%s (%s) SELECT %s FROM %s ORDER BY id'
                     % (table, _V1_COLUMNS[table], _V1_COLUMNS[table], table))
    for table in ID_TABLES:
        # Dropping a table drops its indexes; they are made again below.
        conn.execute('DROP TABLE %s' % table)
    for table in ID_TABLES:
        conn.execute('ALTER TABLE new_%s RENAME TO %s' % (table, table))
        for statement in _INDEXES[table]:
            conn.execute(statement)


def _v2_to_v3(conn):
    """Add the receipts table and its index, inside the caller's transaction."""
    conn.execute(_TABLES['receipts'].format(ts=_TIMESTAMP_GLOB))
    for statement in _INDEXES['receipts']:
        conn.execute(statement)
