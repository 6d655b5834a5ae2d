# SPDX-License-Identifier: Apache-2.0
"""
Import: a new memory database built from an export (copies.export), offline.

It builds the database in one transaction, checking every store rule on
every record, and leaves no file behind when the export is refused. An
export is outside input: every failure is ExportRefusedError naming the
line (`line N: ...`), never another exception. Besides the store's rules,
import refuses what the node itself would never write:
- text with control, format or invisible characters, in any field (the
  check admission makes on what it stores: core/admission/normalize.py);
- a timestamp later than now (FUTURE_TOLERANCE_SEC for the clocks of two
  machines): a pending item from the future would never expire;
- a request digest that is not 64 hex digits, a rules digest that is not hex;
- an id or sequence beyond SQLite's integers, and JSON nested deeper than
  any record is (export_format.MAX_NESTING).
"""

import datetime
import json
import re
import sqlite3

from mira_memory.core.admission.normalize import display_form, has_forbidden_characters
from mira_memory.core.admission.normalize import normalize_token
from mira_memory.core.admission.operator_turn import source_label, TurnContext
from mira_memory.core.archive.export_layout import COUNT_NAMES, RECORD_TYPES
from mira_memory.core.archive.progress import IMPORT_READING, Progress
from mira_memory.core.errors import InvalidInputError, StoreError
from mira_memory.core.store import records, schema, writes
from mira_memory.core.store.transaction import set_pragma

# Import reports its progress every this many lines.
IMPORT_PROGRESS_LINES = 1000
# How far past now an imported timestamp may be: two machines' clocks.
FUTURE_TOLERANCE_SEC = 600
_TIMESTAMP_FIELDS = ('created_at', 'retired_at', 'refused_at')
_HEX = re.compile(r'[0-9a-f]+\Z')
# The record fields that are not judged as text (numbers, or the record type).
_NOT_TEXT = ('type',)


def _ignore(progress):
    return None


class ExportRefusedError(StoreError):
    """An export was refused; the message starts with the line number."""

    code = 'invalid_export'

    def __init__(self, line_number, reason):
        super().__init__('line %d: %s' % (line_number, reason))
        self.line_number = line_number


def _refused(line_number, reason):
    return ExportRefusedError(line_number, reason)


def _canonical(number, field, value, function):
    """Require a stored value to be in the store's own normal form already."""
    if value is None:
        return None
    try:
        normal = function(value)
    except StoreError as exc:
        raise _refused(number, str(exc)) from None
    if normal != value:
        raise _refused(number, '%s is not in the normal form the store writes' % field)
    return value


def _token(value):
    return records.normalized(normalize_token, value, 'token')


def _display(value):
    return records.normalized(display_form, value, 'text')


class _Importer:
    """Checks records one by one and inserts them into the open transaction."""

    def __init__(self, conn, now):
        self.conn = conn
        # Timestamps after this are refused (FUTURE_TOLERANCE_SEC past now).
        self.latest = writes.timestamp(lambda: now + datetime.timedelta(
            seconds=FUTURE_TOLERANCE_SEC))
        self.counts = dict.fromkeys(RECORD_TYPES, 0)
        self.last_key = dict.fromkeys(RECORD_TYPES)
        self.section = 0

    def _order(self, number, kind, key, label):
        index = RECORD_TYPES.index(kind)
        if index < self.section:
            raise _refused(number, '%s record after the %s records (order: %s)'
                           % (kind, RECORD_TYPES[self.section], ', '.join(RECORD_TYPES)))
        self.section = index
        last = self.last_key[kind]
        if last is not None and key == last:
            raise _refused(number, 'duplicate %s %s' % (kind, label))
        if last is not None and key < last:
            raise _refused(number, '%s %s out of id order' % (kind, label))
        self.last_key[kind] = key
        self.counts[kind] += 1

    def _exists(self, number, table, row_id, label):
        if self.conn.execute('SELECT 1 FROM %s WHERE id = ?' % table,
                             (row_id,)).fetchone() is None:
            raise _refused(number, 'refers to missing %s' % label)

    def add(self, number, record):
        kind = record.get('type')
        if kind not in RECORD_TYPES:
            raise _refused(number, 'unknown record type')
        shapes = _export_format()
        try:
            shapes.check_record(kind, record)
        except shapes.ShapeError as error:
            raise _refused(number, str(error)) from None
        self._check_fields(number, kind, record)
        getattr(self, '_add_' + kind)(number, record)

    def _check_fields(self, number, kind, record):
        """Refuse what the node never writes: hidden characters, future times, bad digests."""
        for field, value in record.items():
            if field in _NOT_TEXT or not isinstance(value, str):
                continue
            if has_forbidden_characters(value):
                raise _refused(number, '%s %s contains control characters or invisible format'
                                       ' characters' % (kind, field))
            # The format itself is the schema's CHECK (the store's own rule).
            if field in _TIMESTAMP_FIELDS and value > self.latest:
                raise _refused(number, '%s %s is in the future (%s)' % (kind, field, value))
        digest = record.get('request_digest')
        if digest is not None and (len(digest) != 64 or not _HEX.match(digest)):
            raise _refused(number, '%s request_digest is not 64 hex digits' % kind)
        digest = record.get('rules_digest')
        if digest is not None and not _HEX.match(digest):
            raise _refused(number, '%s rules_digest is not hex digits' % kind)

    def _add_entity(self, number, r):
        entity_id = r['id']
        self._order(number, 'entity', entity_id, records.format_entity_id(entity_id))
        _canonical(number, 'entity_type', r['entity_type'], _token)
        name, key = _name(number, 'canonical_name', r['canonical_name'])
        self.conn.execute(
            'INSERT INTO entities (id, entity_type, canonical_name, name_key, created_at)'
            ' VALUES (?, ?, ?, ?, ?)', (entity_id, r['entity_type'], name, key, r['created_at']))

    def _add_alias(self, number, r):
        alias_id = r['id']
        self._order(number, 'alias', alias_id, str(alias_id))
        entity_id = r['entity_id']
        self._exists(number, 'entities', entity_id, records.format_entity_id(entity_id))
        alias, key = _name(number, 'alias', r['alias'])
        clash = self.conn.execute(
            'SELECT 1 FROM entities WHERE id = ? AND name_key = ?'
            ' UNION ALL SELECT 1 FROM aliases WHERE entity_id = ? AND alias_key = ?',
            (entity_id, key, entity_id, key)).fetchone()
        if clash is not None:
            raise _refused(number, 'alias already names %s'
                           % records.format_entity_id(entity_id))
        self.conn.execute(
            'INSERT INTO aliases (id, entity_id, alias, alias_key, created_at)'
            ' VALUES (?, ?, ?, ?, ?)', (alias_id, entity_id, alias, key, r['created_at']))

    def _add_memory(self, number, r):
        memory_id = r['id']
        self._order(number, 'memory', memory_id, records.format_memory_id(memory_id))
        try:
            prepared = records.prepare_memory(records.NewMemory(
                kind=r['kind'], summary=r['summary'], predicate=r['predicate'],
                value=r['value'], source_kind=r['source_kind'],
                source_label=r['source_label'], confidence=r['confidence']),
                allow_runtime_source=True)
        except StoreError as exc:
            raise _refused(number, str(exc)) from None
        for field in ('kind', 'summary', 'predicate', 'value', 'source_kind', 'source_label'):
            if getattr(prepared, field) != r[field]:
                raise _refused(number, '%s is not in the normal form the store writes'
                               % field)
        status = r['status']
        retired = (r['retired_at'], r['retired_reason'])
        if status == records.STATUS_ACTIVE and retired != (None, None):
            raise _refused(number, 'an active memory has no retired_at or retired_reason')
        if status == records.STATUS_RETIRED:
            if None in retired:
                raise _refused(number, 'a retired memory needs retired_at and retired_reason')
            _canonical(number, 'retired_reason', r['retired_reason'], _display)
        elif status != records.STATUS_ACTIVE:
            raise _refused(number, 'status must be active or retired')
        self.conn.execute(
            'INSERT INTO memories (id, kind, summary, predicate, value, value_key, source_kind,'
            ' source_label, confidence, status, created_at, retired_at, retired_reason)'
            ' VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
            (memory_id, prepared.kind, prepared.summary, prepared.predicate, prepared.value,
             prepared.value_key, prepared.source_kind, prepared.source_label,
             prepared.confidence, status, r['created_at'], r['retired_at'],
             r['retired_reason']))

    def _add_link(self, number, r):
        memory_id, entity_id = r['memory_id'], r['entity_id']
        role = _canonical(number, 'role', r['role'], _token)
        self._order(number, 'link', (memory_id, entity_id, role),
                    '%s %s:%s' % (records.format_memory_id(memory_id),
                                  records.format_entity_id(entity_id), role))
        self._exists(number, 'memories', memory_id, records.format_memory_id(memory_id))
        self._exists(number, 'entities', entity_id, records.format_entity_id(entity_id))
        self.conn.execute('INSERT INTO memory_links (memory_id, entity_id, role)'
                          ' VALUES (?, ?, ?)', (memory_id, entity_id, role))

    def _add_payload(self, number, r):
        payload_id = r['id']
        self._order(number, 'payload', payload_id, str(payload_id))
        memory_id = r['memory_id']
        self._exists(number, 'memories', memory_id, records.format_memory_id(memory_id))
        self.conn.execute(
            'INSERT INTO payloads (id, memory_id, storage, media_type, text_body, object_ref,'
            ' sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
            (payload_id, memory_id, r['storage'], r['media_type'], r['text'], r['object_ref'],
             r['sha256'], r['created_at']))

    def _add_receipt(self, number, r):
        memory_id = r['memory_id']
        self._order(number, 'receipt', memory_id, records.format_memory_id(memory_id))
        row = self.conn.execute('SELECT source_kind, source_label FROM memories WHERE id = ?',
                                (memory_id,)).fetchone()
        if row is None:
            raise _refused(number, 'refers to missing %s'
                           % records.format_memory_id(memory_id))
        if row[0] not in records.RUNTIME_SOURCES:
            raise _refused(number, 'a receipt belongs to an operator_statement or'
                                   ' supervised_statement memory only')
        reviewed = r.get('review_action') is not None
        if reviewed != (row[0] == records.SOURCE_SUPERVISED_STATEMENT):
            raise _refused(number, 'a receipt has review fields exactly when its memory is a'
                                   ' supervised_statement')
        context = TurnContext(r['episode_id'], r['turn_id'], r['utterance'])
        if records.stored_source_label(source_label(context)) != row[1]:
            raise _refused(number, "the receipt's episode and turn ids are not its memory's"
                                   ' source label')
        # A version 3 export has no review fields: NULL, as memory_migrate leaves them.
        self.conn.execute(writes.INSERT_RECEIPT_SQL,
                          tuple(r.get(field) for field in records.RECEIPT_COLUMNS))

    def _add_supersession(self, number, r):
        old, new = r['old_memory_id'], r['new_memory_id']
        self._order(number, 'supersession', old, records.format_memory_id(old))
        rows = {row[0]: row[1:] for row in self.conn.execute(
            'SELECT id, status, source_kind FROM memories WHERE id IN (?, ?)', (old, new))}
        if old not in rows or new not in rows:
            raise _refused(number, 'refers to a missing memory')
        if rows[old][0] != records.STATUS_RETIRED:
            raise _refused(number, 'a superseded memory must be retired')
        if rows[new][1] != records.SOURCE_SUPERVISED_STATEMENT:
            raise _refused(number, 'only a supervised_statement memory supersedes')
        self.conn.execute(writes.INSERT_SUPERSESSION_SQL, (old, new, r['created_at']))

    def _add_pending(self, number, r):
        pending_id = r['id']
        self._order(number, 'pending', pending_id, records.format_pending_id(pending_id))
        self.conn.execute(
            'INSERT INTO pending (%s) VALUES (%s)' % (
                ', '.join(records.PENDING_COLUMNS), ', '.join('?' * len(records.PENDING_COLUMNS))),
            tuple(r[field] for field in records.PENDING_COLUMNS))


def _name(number, field, value):
    try:
        display, key = records.name_forms(value, field)
    except StoreError as exc:
        raise _refused(number, str(exc)) from None
    if display != value:
        raise _refused(number, '%s is not in the normal form the store writes' % field)
    return display, key


def _export_format():
    # Imported here, where an export is read: the memory node never imports,
    # so it never loads pydantic (core/archive/export_format.py says what that saves).
    from mira_memory.core.archive import export_format
    return export_format


def _decode(number, text, what):
    """Return the JSON value of a line; a line that is not JSON is refused."""
    try:
        return json.loads(text)
    except RecursionError:
        raise _refused(number, 'nested too deeply') from None
    except ValueError:
        raise _refused(number, what) from None


def _header(number, text):
    header = _decode(number, text, 'not a JSON object (is this an export?)')
    shapes = _export_format()
    try:
        return shapes.parse_header(header)
    except shapes.ShapeError as error:
        raise _refused(number, str(error)) from None


def import_export(database, lines, progress=_ignore, clock=writes.utc_now):
    """
    Fill the empty database file `database` from export lines; return the counts.

    progress gets the importing phase (records of the header's total) every
    IMPORT_PROGRESS_LINES lines; clock gives now (timestamps later than it,
    by more than FUTURE_TOLERANCE_SEC, are refused).

    database must be a path to an absent or zero-byte file that the caller
    owns (core.ownership). Everything happens in one transaction; on any
    refusal ExportRefusedError names the line, the transaction rolls back and the
    caller removes the file.
    """
    conn = sqlite3.connect(str(database), isolation_level=None)
    try:
        for pragma, value, expected in (('foreign_keys', 'ON', 1),
                                        ('journal_mode', 'WAL', 'wal'),
                                        ('synchronous', 'FULL', 2)):
            set_pragma(conn, pragma, value, expected)
        conn.execute('BEGIN IMMEDIATE')
        if schema.schema_state(conn, database) != 'empty':
            raise InvalidInputError('the target database is not empty')
        schema.create_schema(conn)
        importer = _Importer(conn, clock())
        header = None
        number = 0
        for number, text in enumerate(lines, 1):
            if not text.endswith('\n'):
                raise _refused(number, 'line is incomplete (the export is truncated)')
            if header is None:
                header = _header(number, text)
                total = sum(header[0].values())
                progress(Progress(IMPORT_READING, 0, total))
                continue
            if number % IMPORT_PROGRESS_LINES == 0:
                progress(Progress(IMPORT_READING, number - 1, total))
            record = _decode(number, text, 'not a JSON object')
            if not isinstance(record, dict):
                raise _refused(number, 'not a JSON object')
            try:
                importer.add(number, record)
            except sqlite3.IntegrityError as exc:
                # One line: a CHECK constraint's text spans several.
                raise _refused(number, 'breaks a store rule (%s)'
                               % ' '.join(str(exc).split())) from None
            except (TypeError, ValueError, OverflowError, RecursionError) as exc:
                # A value of a shape no rule above foresaw: refused like the others.
                raise _refused(number, 'malformed record (%s)' % type(exc).__name__) from None
        if header is None:
            raise _refused(max(number, 1), 'the export is empty')
        counts, sequences = header
        # Version 2 and 3 exports have no receipts or supersessions; one
        # without its pending items has no pending count.
        counts = dict({'receipts': 0, 'supersessions': 0, 'pending': 0}, **counts)
        found = {COUNT_NAMES[kind]: importer.counts[kind] for kind in RECORD_TYPES}
        if found != counts:
            missing = ', '.join('%s %d of %d' % (name, found[name], counts[name])
                                for name in counts if found[name] != counts[name])
            raise _refused(number + 1, 'the export is truncated or padded: found %s'
                           % missing)
        for table in schema.ID_TABLES:
            top = conn.execute('SELECT coalesce(max(id), 0) FROM %s' % table).fetchone()[0]
            seq = sequences.get(table)
            if seq is None and top == 0:
                continue
            if seq is None or seq < top:
                raise _refused(1, 'header sequence of %s is below its largest id' % table)
            conn.execute('DELETE FROM sqlite_sequence WHERE name = ?', (table,))
            conn.execute('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)', (table, seq))
        progress(Progress(IMPORT_READING, number - 1, sum(counts.values())))
        schema.check_integrity(conn)
        conn.execute('COMMIT')
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall()
        return found
    except BaseException:
        if conn.in_transaction:
            conn.execute('ROLLBACK')
        raise
    finally:
        conn.close()
