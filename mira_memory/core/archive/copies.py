# SPDX-License-Identifier: Apache-2.0
"""
Copies of a memory database: online backup and JSON Lines export.

Backup and export read through their own read-only connection holding one
read transaction, so they see one consistent snapshot while the node keeps
writing through its own connection (WAL readers never block the writer).
Both write to a temporary file beside the target and put it in place only
when it is complete, fsynced and verified; an existing target is kept unless
force is given (output_files.py: which targets are refused, and how the
temporary file is made so that nothing planted is written through).
Both take should_stop, a callable asked between backup steps, every few
thousand SQLite instructions and every EXPORT_STOP_CHECK_ROWS rows: when it
returns True the copy ends with CopyStoppedError and no file (the memory
node asks this when a job is canceled or the node stops), and
may_publish, asked once just before the complete file is put in place: False
ends the copy the same way, True is the commit point. Both, and
import, report how far they are to progress (a callable taking a
core.archive.progress.Progress) at the same points.

Import, which reads an export back, is importing.py.

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

from mira_memory.core.archive import output_files
from mira_memory.core.archive.export_layout import COUNT_NAMES, EXPORT_FORMAT
from mira_memory.core.archive.export_layout import RECORD_FIELDS, RECORD_TYPES
from mira_memory.core.archive.progress import BACKUP_CHECKING, BACKUP_COPYING, EXPORT_WRITING
from mira_memory.core.archive.progress import Progress
from mira_memory.core.errors import BackendError
from mira_memory.core.store import records, schema

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
           check_schema=True, should_stop=_never, directories=None, may_publish=_always):
    """
    Copy the database at source to target with SQLite's online backup API.

    Returns {'path', 'bytes', 'counts'}. The copy is one consistent snapshot,
    stored as a single file (journal mode DELETE), checked with
    integrity_check and compared row count by row count with the snapshot
    before it is fsynced and put in place (output_files: the target's
    checks, directories included, and its temporary file). check_schema=False
    copies a file of any schema version (memory_migrate's backup of a
    version 1 file). SQLite releases the GIL during each step, so other
    Python threads run while the pages are copied. progress gets the copying
    phase (pages) after every step, then the checking phase (pages, estimated).
    """
    target = output_files.check_target(source, target, force, directories)
    page_size = [0]

    def step_done(status, remaining, total):
        if should_stop():
            raise CopyStoppedError('backup stopped before it was complete; nothing was written')
        copied = total - remaining
        progress(Progress(BACKUP_COPYING, copied, total, copied * page_size[0]))

    with _copy_failures('backup', should_stop), read_snapshot(
            source, should_stop, check_schema=check_schema) as src:
        counts = schema.table_counts(src)
        page_size[0] = src.execute('PRAGMA page_size').fetchone()[0]
        with _temporary_file(target) as (fd, partial):
            # SQLite opens the new, empty file by its name; publish() checks
            # that the name still is that file before putting it in place.
            # timeout=0: the partial file is this copy's alone, so a lock on it
            # is answered at once (and retried after the step's pause) instead
            # of after SQLite's busy timeout, and should_stop is asked meanwhile.
            with contextlib.closing(_stoppable(sqlite3.connect(
                    str(partial), isolation_level=None, timeout=0), should_stop)) as dst:
                src.backup(dst, pages=pages, progress=step_done)
                # The copy carries the source's WAL flag; a backup is one file.
                dst.execute('PRAGMA journal_mode = DELETE').fetchall()
                dst.execute('PRAGMA foreign_keys = ON')
                size = os.fstat(fd).st_size
                _check_reporting(dst, should_stop, progress, size // page_size[0], size)
                copied = schema.table_counts(dst)
                if copied != counts:
                    raise BackendError('the copy has %r rows, the snapshot %r' % (copied, counts))
            _commit(may_publish, 'backup')
            output_files.publish(fd, partial, target, force)
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
def _copy_failures(what, should_stop):
    """Turn a copy's SQLite and OS errors into store errors."""
    try:
        yield
    except sqlite3.Error as exc:
        if should_stop():  # an SQLite 'interrupted' that should_stop caused
            raise CopyStoppedError(
                '%s stopped before it was complete; nothing was written' % what) from exc
        raise BackendError('%s failed: %s: %s' % (what, type(exc).__name__, exc)) from exc
    except OSError as exc:
        raise BackendError('%s failed: %s' % (what, exc)) from exc


@contextlib.contextmanager
def _temporary_file(target):
    """Yield (fd, path) of a new temporary file beside target; never leave it behind."""
    fd, partial = output_files.create_temporary(target)
    try:
        yield fd, partial
    finally:
        os.close(fd)
        output_files.discard(partial)  # gone already once published


def _line(record):
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(',', ':')) + '\n'


def _sequences(conn):
    return dict(conn.execute('SELECT name, seq FROM sqlite_sequence ORDER BY name'))


def export(source, target, *, force=False, should_stop=_never, progress=_ignore,
           include_pending=False, directories=None, may_publish=_always):
    """
    Write the database at source as deterministic JSON Lines; return the header counts.

    Line 1 is the header (format, schema version, counts, id sequences);
    then entities, aliases, memories, links, payloads, receipts and
    supersessions, each in id order, then (include_pending) the items
    waiting for review; one JSON object per line with sorted keys. Derived
    keys (name_key, alias_key, value_key) are left out: import computes them
    again. progress gets the writing phase (records of the header's total).
    The target is checked and written as backup's is (output_files).
    """
    kinds = tuple(kind for kind in RECORD_TYPES
                  if include_pending or kind not in PRIVATE_RECORD_TYPES)
    target = output_files.check_target(source, target, force, directories)
    with _copy_failures('export', should_stop), read_snapshot(source, should_stop) as src:
        counts = schema.table_counts(src)
        header = {
            'type': 'header', 'format': EXPORT_FORMAT,
            'schema_version': schema.SCHEMA_VERSION,
            'counts': {COUNT_NAMES[kind]: counts[_table(kind)] for kind in kinds},
            'sequences': _sequences(src),
        }
        total = sum(header['counts'].values())
        written = 0
        with _temporary_file(target) as (fd, partial):
            # closefd=False: _temporary_file closes fd; publish() syncs it.
            with open(fd, 'w', encoding='utf-8', newline='\n', closefd=False) as out:
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
            output_files.publish(fd, partial, target, force)
    return {'path': str(target), 'bytes': target.stat().st_size, 'counts': header['counts']}


def _table(kind):
    return _TABLES[kind]
