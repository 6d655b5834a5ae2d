# SPDX-License-Identifier: Apache-2.0
"""
The store's SQLite schema (version 4), how a file is classified, and the migrations.

Version 4 adds supervised review (docs/review.md):
- `pending`: the proposals remember refused for a reason a person can judge,
  kept for review (bounded, expiring, private): the proposal, the utterance
  and turn ids, the robot profile, the refusal (reason, rule, explanation,
  conflicting memory ids) and the rules that refused it;
- `pending_closed`: what became of each item that left the queue (accepted,
  superseded, dismissed, expired, dropped, forgotten), without its text, so
  a late accept gets a clear answer;
- `pending_counts`: one row, the items dropped (the queue was full) and
  expired since the database was made;
- `supersessions`: which memory a supervised memory replaced;
- receipts gain the review columns: who accepted the proposal and when,
  how, and why the rules had refused it (all NULL for a memory the rules
  admitted).

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

SCHEMA_VERSION = 4
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
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts}),
        review_action TEXT CHECK (
            review_action IS NULL OR review_action IN ({review_actions})),
        reviewed_by TEXT CHECK (reviewed_by IS NULL OR reviewed_by <> ''),
        pending_id INTEGER CHECK (pending_id IS NULL OR pending_id > 0),
        refused_at TEXT CHECK (refused_at IS NULL OR refused_at GLOB {ts}),
        refused_reason TEXT CHECK (refused_reason IS NULL OR refused_reason <> ''),
        refused_rule TEXT CHECK (refused_rule IS NULL OR refused_rule <> ''),
        refused_explanation TEXT CHECK (
            refused_explanation IS NULL OR refused_explanation <> ''),
        CHECK ((review_action IS NULL) = (reviewed_by IS NULL)
            AND (review_action IS NULL) = (pending_id IS NULL)
            AND (review_action IS NULL) = (refused_at IS NULL)
            AND (review_action IS NULL) = (refused_reason IS NULL)
            AND (review_action IS NULL) = (refused_rule IS NULL)
            AND (review_action IS NULL) = (refused_explanation IS NULL))
    )
    """,
    'supersessions': """
    CREATE TABLE supersessions (
        old_memory_id INTEGER PRIMARY KEY REFERENCES memories (id),
        new_memory_id INTEGER NOT NULL REFERENCES memories (id),
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts}),
        CHECK (old_memory_id <> new_memory_id)
    )
    """,
    'pending': """
    CREATE TABLE pending (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        request_digest TEXT NOT NULL UNIQUE CHECK (length(request_digest) = 64),
        created_at TEXT NOT NULL CHECK (created_at GLOB {ts}),
        episode_id TEXT NOT NULL CHECK (episode_id <> ''),
        turn_id TEXT NOT NULL CHECK (turn_id <> ''),
        utterance TEXT NOT NULL CHECK (utterance <> ''),
        kind TEXT NOT NULL CHECK (kind <> ''),
        subject TEXT NOT NULL CHECK (subject <> ''),
        predicate TEXT NOT NULL CHECK (predicate <> ''),
        value TEXT NOT NULL CHECK (value <> ''),
        related_entity TEXT CHECK (related_entity IS NULL OR related_entity <> ''),
        related_role TEXT CHECK (related_role IS NULL OR related_role <> ''),
        evidence TEXT NOT NULL CHECK (evidence <> ''),
        robot_profile TEXT NOT NULL,
        reason TEXT NOT NULL CHECK (reason IN ({pending_reasons})),
        rule TEXT NOT NULL CHECK (rule <> ''),
        explanation TEXT NOT NULL CHECK (explanation <> ''),
        conflicting_memory_ids TEXT NOT NULL CHECK (
            conflicting_memory_ids NOT GLOB '*[^0-9 ]*'),
        rules_version TEXT NOT NULL CHECK (rules_version <> ''),
        rules_digest TEXT NOT NULL CHECK (rules_digest <> '')
    )
    """,
    'pending_closed': """
    CREATE TABLE pending_closed (
        pending_id INTEGER PRIMARY KEY CHECK (pending_id > 0),
        outcome TEXT NOT NULL CHECK (outcome IN ({closed_outcomes})),
        memory_id INTEGER CHECK (memory_id IS NULL OR memory_id > 0),
        closed_at TEXT NOT NULL CHECK (closed_at GLOB {ts}),
        closed_by TEXT NOT NULL CHECK (closed_by <> '')
    )
    """,
    'pending_counts': """
    CREATE TABLE pending_counts (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        dropped INTEGER NOT NULL CHECK (dropped >= 0),
        expired INTEGER NOT NULL CHECK (expired >= 0)
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
    # memory show finds what a memory superseded; forget finds both ends.
    'supersessions': (
        'CREATE INDEX supersessions_new ON supersessions (new_memory_id)',),
    # pending has only its digest's (UNIQUE): expiry reads the bounded queue
    # (pending_max rows) a few times a minute, while every kept refusal would
    # write one more index twice (store/pending.py).
    'pending': (),
    # pending_closed has none: it is trimmed by its primary key, and by age
    # only now and then (store/pending.py), so every close writes one page less.
    'pending_closed': (),
    'pending_counts': (),
}

SCHEMA_TABLES = ('entities', 'aliases', 'memories', 'memory_links', 'payloads', 'receipts',
                 'supersessions', 'pending', 'pending_closed', 'pending_counts')
# The tables of version 2 (version 3 added receipts) and of version 3 (4 added the rest).
_V2_TABLES = ('entities', 'aliases', 'memories', 'memory_links', 'payloads')
_V3_TABLES = _V2_TABLES + ('receipts',)
# The tables whose ids are rendered or exported: AUTOINCREMENT keeps them unique forever.
ID_TABLES = ('entities', 'aliases', 'memories', 'payloads', 'pending')

# The values the CHECK constraints allow (core/review says what each means).
REVIEW_ACTIONS = ('accept', 'accept_new_entity', 'supersede')
PENDING_REASONS = (
    'evidence_not_in_utterance', 'subject_not_supported', 'value_not_supported',
    'invalid_proposal', 'subject_not_found', 'related_entity_not_found', 'conflict')
CLOSED_OUTCOMES = ('accepted', 'superseded', 'dismissed', 'expired', 'dropped', 'forgotten')
# The receipt columns of version 3, in table order (version 4 appended the review ones).
V3_RECEIPT_COLUMNS = (
    'memory_id, utterance, episode_id, turn_id, kind, subject, predicate, value,'
    ' related_entity, related_role, evidence, robot_profile, rules_version, rules_digest,'
    ' rules_ran, subject_entity_id, related_entity_id, created_at')


def _sql_list(values):
    return ', '.join("'%s'" % value for value in values)


def _table_sql(table, name=None):
    """Return the CREATE TABLE statement of a table (under another name when given)."""
    statement = _TABLES[table].format(
        ts=_TIMESTAMP_GLOB, review_actions=_sql_list(REVIEW_ACTIONS),
        pending_reasons=_sql_list(PENDING_REASONS), closed_outcomes=_sql_list(CLOSED_OUTCOMES))
    if name is not None:
        statement = statement.replace('CREATE TABLE %s (' % table, 'CREATE TABLE %s (' % name, 1)
    return statement


SCHEMA_STATEMENTS = tuple(
    statement
    for table in SCHEMA_TABLES
    for statement in (_table_sql(table), *_INDEXES[table]))
# The one row of pending_counts, written with the schema.
_PENDING_COUNTS_ROW = 'INSERT INTO pending_counts (id, dropped, expired) VALUES (1, 0, 0)'

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
    conn.execute(_PENDING_COUNTS_ROW)
    conn.execute('PRAGMA user_version = %d' % SCHEMA_VERSION)


def _names(conn):
    return {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE name NOT GLOB 'sqlite_*'")}


def _require_tables(conn, version):
    tables = _V2_TABLES if version <= 2 else _V3_TABLES if version == 3 else SCHEMA_TABLES
    missing = [table for table in tables if table not in _names(conn)]
    if missing:
        raise UnsupportedDatabaseError(
            'database claims schema version %d but lacks tables: %s'
            % (version, ', '.join(missing)))


def schema_state(conn, path=None):
    """
    Classify an open database as 'empty' or 'current' (version 4).

    Raises UnsupportedDatabaseError for anything else; for a version 1, 2 or
    3 file the message names the migration command.
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
    """Return {table: row count} of every schema table the file has (receipts: version 3, ...)."""
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
MIGRATES_FROM = (1, 2, 3)
# What migrate adds: tables new in version 4 start empty, pending_counts with its one row.
_ADDED_ROWS = {'supersessions': 0, 'pending': 0, 'pending_closed': 0, 'pending_counts': 1}


def migrate(conn):
    """
    Upgrade a version 1, 2 or 3 database to version 4 in one transaction; return (from, counts).

    conn must be a read-write connection with no open transaction. A
    version 1 file is rebuilt as version 2 first (_v1_to_v2); a version 2
    file gets the receipts table (existing memories get no receipt); a
    version 3 file's receipts table is rebuilt with the review columns
    (every receipt kept, its review columns NULL); then the version 4 tables
    are added (_add_v4_tables), all in the same transaction. Every row count
    is compared with the original, integrity_check and foreign_key_check run
    before the commit, and any failure rolls everything back. foreign_keys is
    off during the transaction (tables are swapped for new ones).
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
                    % (version, ', '.join(map(str, MIGRATES_FROM))))
            _require_tables(conn, version)
            before = table_counts(conn)
            if version == 1:
                _v1_to_v2(conn)
            if version <= 2:
                _create(conn, 'receipts')
            else:
                _rebuild_receipts(conn)
            _add_v4_tables(conn)
            after = table_counts(conn)
            if after != dict(dict(before, receipts=before.get('receipts', 0)), **_ADDED_ROWS):
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


def _create(conn, table):
    """Create one table of the current version with its indexes."""
    conn.execute(_table_sql(table))
    for statement in _INDEXES[table]:
        conn.execute(statement)


def _v1_to_v2(conn):
    """
    Rebuild the version 1 tables as version 2, inside the caller's transaction.

    Each table with an id is rebuilt under a temporary name, filled in id
    order, and swapped in (SQLite's documented way to change a table's
    definition), so every id and every row is kept.
    """
    tables = ('entities', 'aliases', 'memories', 'payloads')
    for table in tables:
        conn.execute(_table_sql(table, 'new_' + table))
        conn.execute('INSERT INTO new_%s (%s) SELECT %s FROM %s ORDER BY id'
                     % (table, _V1_COLUMNS[table], _V1_COLUMNS[table], table))
    for table in tables:
        # Dropping a table drops its indexes; they are made again below.
        conn.execute('DROP TABLE %s' % table)
    for table in tables:
        conn.execute('ALTER TABLE new_%s RENAME TO %s' % (table, table))
        for statement in _INDEXES[table]:
            conn.execute(statement)


def _rebuild_receipts(conn):
    """
    Rebuild version 3's receipts with the review columns (NULL), every row kept.

    The old table steps aside under another name and the new one is made
    under its own, so its definition is word for word a new database's
    (a table renamed into place would keep SQLite's quoted name). Nothing
    refers to receipts, so the rename changes no other table.
    """
    conn.execute('ALTER TABLE receipts RENAME TO v3_receipts')
    conn.execute(_table_sql('receipts'))
    conn.execute('INSERT INTO receipts (%s) SELECT %s FROM v3_receipts ORDER BY memory_id'
                 % (V3_RECEIPT_COLUMNS, V3_RECEIPT_COLUMNS))
    # Its index went along with the rename and goes with it; then the new one's.
    conn.execute('DROP TABLE v3_receipts')
    for statement in _INDEXES['receipts']:
        conn.execute(statement)


def _add_v4_tables(conn):
    """Add the supervised review tables (version 4), inside the caller's transaction."""
    for table in ('supersessions', 'pending', 'pending_closed', 'pending_counts'):
        _create(conn, table)
    conn.execute(_PENDING_COUNTS_ROW)
