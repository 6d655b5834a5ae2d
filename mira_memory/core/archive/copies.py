# SPDX-License-Identifier: Apache-2.0
"""
Copies of a memory database: online backup, JSON Lines export, and import.

Backup and export read through their own read-only connection holding one
read transaction, so they see one consistent snapshot while the node keeps
writing through its own connection (WAL readers never block the writer).
Both write to a temporary file beside the target and put it in place only
when it is complete, fsynced and verified; an existing target is kept unless
force is given. Both take should_stop, a callable asked between backup steps,
every few thousand SQLite instructions and every EXPORT_STOP_CHECK_ROWS
rows: when it returns True the copy ends with CopyStoppedError and no file
(the memory node asks this when a job is canceled or the node stops), and
may_publish, asked once just before the complete file is put in place: False
ends the copy the same way, True is the commit point. Both,
and import, report how far they are to progress (a callable taking a
core.archive.progress.Progress) at the same points.

Import is offline: it builds a new database from an export in one
transaction, checking every store rule, and leaves no file behind when the
export is refused.

The pending items waiting for review (core/review) are private: an export
holds them only when include_pending is given (the console's
`memory export PATH --with-pending`), and then its header counts them. What
became of closed items and the queue's counters are the database's own
history and are never exported. A backup copies the whole file, pending
items included.
"""

import contextlib
import json
import os
import pathlib
import sqlite3

from mira_memory.core.admission.normalize import display_form, normalize_token
from mira_memory.core.admission.rules import source_label, TurnContext
from mira_memory.core.archive.export_layout import COUNT_NAMES, EXPORT_FORMAT
from mira_memory.core.archive.export_layout import RECORD_FIELDS, RECORD_TYPES
from mira_memory.core.archive.progress import BACKUP_CHECKING, BACKUP_COPYING, EXPORT_WRITING
from mira_memory.core.archive.progress import IMPORT_READING, Progress
from mira_memory.core.errors import BackendError, InvalidInputError, StoreError, TargetExistsError
from mira_memory.core.store import private_files, records, schema, writes
from mira_memory.core.store.transaction import set_pragma

# Pages per backup step: small enough that one step is a few milliseconds of
# I/O, large enough that a 400 MB store needs no more than a few thousand steps.
BACKUP_PAGES_PER_STEP = 1024
# SQLite virtual machine instructions between two should_stop() checks while
# counting rows or checking integrity: about 10 ms of work, so the check (which
# takes the GIL from the node's executor thread) runs about 100 times a second.
STOP_CHECK_INSTRUCTIONS = 1_000_000
EXPORT_STOP_CHECK_ROWS = 1000
# integrity_check runs about this many SQLite instructions per page of the
# file (2.0 thousand per page at 10,000 and 100,000 memories, SQLite 3.40):
# the checking phase's pages done are estimated from the instructions run.
CHECK_INSTRUCTIONS_PER_PAGE = 2000
# Import reports its progress every this many lines.
IMPORT_PROGRESS_LINES = 1000
_SEQUENCE_TABLES = {'entity': 'entities', 'alias': 'aliases', 'memory': 'memories',
                    'payload': 'payloads', 'pending': 'pending'}
_TABLES = dict(_SEQUENCE_TABLES, link='memory_links', receipt='receipts',
               supersession='supersessions')
# Only with include_pending (the module docstring).
PRIVATE_RECORD_TYPES = ('pending',)

_EXPORT_SQL = {
    'entity': 'SELECT id, entity_type, canonical_name, created_at FROM entities ORDER BY id',
    'alias': 'SELECT id, entity_id, alias, created_at FROM aliases ORDER BY id',
    'memory': (
        'SELECT id, kind, summary, predicate, value, source_kind, source_label, confidence,'
        ' status, created_at, retired_at, retired_reason FROM memories ORDER BY id'),
    'link': 'SELECT memory_id, entity_id, role FROM memory_links'
            ' ORDER BY memory_id, entity_id, role',
    'payload': (
        'SELECT id, memory_id, storage, media_type, text_body, object_ref, sha256, created_at'
        ' FROM payloads ORDER BY id'),
    'receipt': 'SELECT %s FROM receipts ORDER BY memory_id'
               % ', '.join(records.RECEIPT_COLUMNS),
    'supersession': 'SELECT old_memory_id, new_memory_id, created_at FROM supersessions'
                    ' ORDER BY old_memory_id',
    'pending': 'SELECT %s FROM pending ORDER BY id' % ', '.join(records.PENDING_COLUMNS),
}


def _absolute_target(source, path, force):
    if not isinstance(path, str) or not path:
        raise InvalidInputError('the target path is empty')
    target = pathlib.Path(path)
    if not target.is_absolute():
        raise InvalidInputError('the target path must be absolute (it is resolved by the node,'
                                " not by the caller's working directory)")
    if not target.parent.is_dir():
        raise InvalidInputError('the target directory does not exist: %s' % target.parent)
    if target.is_dir():
        raise InvalidInputError('the target is a directory: %s' % target)
    # Before the exists check: its answer suggests --force, which must
    # never be offered for the database itself.
    _check_target(source, target)
    if target.exists() and not force:
        raise TargetExistsError('%s exists; give --force to replace it' % target)
    return target


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_target(source, target):
    for suffix in ('', '-wal', '-shm'):
        if _same_file(target, str(source) + suffix) or str(target) == str(source) + suffix:
            raise InvalidInputError('the target is the database itself')


def _fsync_file(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish(partial, target, force):
    """Put a complete, fsynced file in place; without force never replace anything."""
    _fsync_file(partial)
    if force:
        os.replace(partial, target)
    else:
        try:
            # link() fails if the target appeared meanwhile: no overwrite race.
            os.link(partial, target)
        except FileExistsError:
            raise TargetExistsError('%s exists; give --force to replace it' % target) from None
        os.unlink(partial)
    private_files.sync_directory(target.parent)


def partial_path(target, pid=None):
    """Return the temporary file a copy to target writes first (pid: the copying process)."""
    target = pathlib.Path(target)
    return target.with_name('.%s.%d.partial' % (target.name, os.getpid() if pid is None else pid))


class CopyStoppedError(BackendError):
    """should_stop() asked a backup or export to end early; nothing was written."""


def _never():
    return False


def _ignore(progress):
    return None


def _always():
    return True


def _commit(may_publish, what):
    """
    Ask may_publish() once, just before the complete file is put in place.

    False (a stop that came first) ends the copy as should_stop does; after
    True nothing stops it (the memory node then refuses a cancel).
    """
    if not may_publish():
        raise CopyStoppedError('%s stopped before it was complete; nothing was written' % what)


def _stoppable(conn, should_stop):
    """Make conn's statements end with 'interrupted' as soon as should_stop() is True."""
    conn.set_progress_handler(lambda: 1 if should_stop() else 0, STOP_CHECK_INSTRUCTIONS)
    return conn


@contextlib.contextmanager
def read_snapshot(source, should_stop=_never, *, check_schema=True):
    """
    Yield a read-only connection to the file at source, inside one read snapshot.

    The first read pins the snapshot that every later read of the block (and
    every backup step) sees; check_schema makes that read the schema check.
    should_stop() interrupts a long statement. The connection is closed after
    the block without committing anything.
    """
    conn = _stoppable(schema.open_read_only(pathlib.Path(source)), should_stop)
    try:
        conn.execute('BEGIN')
        if check_schema:
            schema.schema_state(conn, source)
        else:
            conn.execute('SELECT count(*) FROM sqlite_master').fetchone()
        yield conn
    finally:
        conn.close()


def backup(source, target, *, force=False, pages=BACKUP_PAGES_PER_STEP, progress=_ignore,
           check_schema=True, should_stop=_never, may_publish=_always):
    """
    Copy the database at source to target with SQLite's online backup API.

    Returns {'path', 'bytes', 'counts'}. The copy is one consistent snapshot,
    stored as a single file (journal mode DELETE), checked with
    integrity_check and compared row count by row count with the snapshot
    before it is fsynced and put in place. check_schema=False copies a file
    of any schema version (memory_migrate's backup of a version 1 file).
    SQLite releases the GIL during each step, so other Python threads run
    while the pages are copied. progress gets the copying phase (pages) after
    every step, then the checking phase (pages, estimated).
    """
    target = _absolute_target(source, target, force)
    partial = partial_path(target)
    page_size = [0]

    def step_done(status, remaining, total):
        if should_stop():
            raise CopyStoppedError('backup stopped before it was complete; nothing was written')
        copied = total - remaining
        progress(Progress(BACKUP_COPYING, copied, total, copied * page_size[0]))

    with _copy_failures('backup', partial, should_stop):
        with read_snapshot(source, should_stop, check_schema=check_schema) as src:
            counts = schema.table_counts(src)
            page_size[0] = src.execute('PRAGMA page_size').fetchone()[0]
            private_files.create_empty(partial)  # 0600, like the database
            # timeout=0: the partial file is this copy's alone, so a lock on it
            # is answered at once (and retried after the step's pause) instead
            # of after SQLite's busy timeout, and should_stop is asked meanwhile.
            with contextlib.closing(_stoppable(sqlite3.connect(
                    str(partial), isolation_level=None, timeout=0), should_stop)) as dst:
                src.backup(dst, pages=pages, progress=step_done)
                # The copy carries the source's WAL flag; a backup is one file.
                dst.execute('PRAGMA journal_mode = DELETE').fetchall()
                dst.execute('PRAGMA foreign_keys = ON')
                size = partial.stat().st_size
                _check_reporting(dst, should_stop, progress, size // page_size[0], size)
                copied = schema.table_counts(dst)
                if copied != counts:
                    raise BackendError('the copy has %r rows, the snapshot %r' % (copied, counts))
        _commit(may_publish, 'backup')
        _publish(partial, target, force)
    return {'path': str(target), 'bytes': target.stat().st_size, 'counts': counts}


def _check_reporting(conn, should_stop, progress, pages, size):
    """Run integrity_check on conn, reporting the checking phase as it goes."""
    checked = [0]
    per_call = STOP_CHECK_INSTRUCTIONS // CHECK_INSTRUCTIONS_PER_PAGE

    def handler():
        if should_stop():
            return 1
        # An estimate: never report the check complete before it is.
        checked[0] = min(checked[0] + per_call, max(pages - 1, 0))
        progress(Progress(BACKUP_CHECKING, checked[0], pages, size))
        return 0
    progress(Progress(BACKUP_CHECKING, 0, pages, size))
    conn.set_progress_handler(handler, STOP_CHECK_INSTRUCTIONS)
    schema.check_integrity(conn)
    _stoppable(conn, should_stop)
    progress(Progress(BACKUP_CHECKING, pages, pages, size))


@contextlib.contextmanager
def _copy_failures(what, partial, should_stop):
    """Turn a copy's SQLite and OS errors into store errors; never leave its partial file."""
    try:
        yield
    except sqlite3.Error as exc:
        if should_stop():  # an SQLite 'interrupted' that should_stop caused
            raise CopyStoppedError(
                '%s stopped before it was complete; nothing was written' % what) from exc
        raise BackendError('%s failed: %s: %s' % (what, type(exc).__name__, exc)) from exc
    except OSError as exc:
        raise BackendError('%s failed: %s' % (what, exc)) from exc
    finally:
        partial.unlink(missing_ok=True)


def _line(record):
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(',', ':')) + '\n'


def _sequences(conn):
    return dict(conn.execute('SELECT name, seq FROM sqlite_sequence ORDER BY name'))


def export(source, target, *, force=False, should_stop=_never, progress=_ignore,
           include_pending=False, may_publish=_always):
    """
    Write the database at source as deterministic JSON Lines; return the header counts.

    Line 1 is the header (format, schema version, counts, id sequences);
    then entities, aliases, memories, links, payloads, receipts and
    supersessions, each in id order, then (include_pending) the items
    waiting for review; one JSON object per line with sorted keys. Derived
    keys (name_key, alias_key, value_key) are left out: import computes them
    again. progress gets the writing phase (records of the header's total).
    """
    kinds = tuple(kind for kind in RECORD_TYPES
                  if include_pending or kind not in PRIVATE_RECORD_TYPES)
    target = _absolute_target(source, target, force)
    partial = partial_path(target)
    with _copy_failures('export', partial, should_stop):
        with read_snapshot(source, should_stop) as src:
            counts = schema.table_counts(src)
            header = {
                'type': 'header', 'format': EXPORT_FORMAT,
                'schema_version': schema.SCHEMA_VERSION,
                'counts': {COUNT_NAMES[kind]: counts[_table(kind)] for kind in kinds},
                'sequences': _sequences(src),
            }
            total = sum(header['counts'].values())
            written = 0
            with open(partial, 'w', encoding='utf-8', newline='\n',
                      opener=private_files.opener) as out:  # 0600
                out.write(_line(header))
                progress(Progress(EXPORT_WRITING, 0, total, out.tell()))
                for kind in kinds:
                    fields = RECORD_FIELDS[kind]
                    for number, row in enumerate(src.execute(_EXPORT_SQL[kind])):
                        if number % EXPORT_STOP_CHECK_ROWS == 0:
                            if should_stop():
                                raise CopyStoppedError('export stopped before it was complete;'
                                                       ' nothing was written')
                            progress(Progress(EXPORT_WRITING, written + number, total,
                                              out.tell()))
                        record = {'type': kind}
                        record.update(zip(fields, row))
                        out.write(_line(record))
                    written += counts[_table(kind)]
                progress(Progress(EXPORT_WRITING, total, total, out.tell()))
        _commit(may_publish, 'export')
        _publish(partial, target, force)
    return {'path': str(target), 'bytes': target.stat().st_size, 'counts': header['counts']}


def _table(kind):
    return _TABLES[kind]


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

    def __init__(self, conn):
        self.conn = conn
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
        getattr(self, '_add_' + kind)(number, record)

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


def _header(number, text):
    try:
        header = json.loads(text)
    except ValueError:
        raise _refused(number, 'not a JSON object (is this an export?)') from None
    shapes = _export_format()
    try:
        return shapes.parse_header(header)
    except shapes.ShapeError as error:
        raise _refused(number, str(error)) from None


def import_export(database, lines, progress=_ignore):
    """
    Fill the empty database file `database` from export lines; return the counts.

    progress gets the importing phase (records of the header's total) every
    IMPORT_PROGRESS_LINES lines.

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
        importer = _Importer(conn)
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
            try:
                record = json.loads(text)
            except ValueError:
                raise _refused(number, 'not a JSON object') from None
            if not isinstance(record, dict):
                raise _refused(number, 'not a JSON object')
            try:
                importer.add(number, record)
            except sqlite3.IntegrityError as exc:
                raise _refused(number, 'breaks a store rule (%s)' % exc) from None
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
