# SPDX-License-Identifier: Apache-2.0
"""
The store's SQLite connections: opening them, read snapshots, write transactions.

Everything that decides how a statement reaches the file is here and only
here: the pragmas that make a commit durable (WAL, synchronous FULL) and a
forget leave no copy (secure_delete), one lock per connection, consistent
read snapshots, the BEGIN IMMEDIATE transaction that rolls back completely
on any error, SQLite errors turned into BackendError, writes stopped for good
after a storage failure (OwnerConnection), and the WAL truncation a forget
waits for. reads.py and writes.py only say which statements run.

Write generations. The memory node is the file's only writer (it owns it), so
the store knows every change: each committed write transaction gets the next
`generation` and a record of what it may have changed, and
`changed_since(generation, entity_ids)` tells a cache whether an answer read
at `generation` may be stale. A memory insert is recorded with its linked
entities (it changes nothing else a read can see: not which names match, not
any other entity's memories); every other write (entity, alias, retire,
forget) is recorded as changing anything. The connection keeps the generation
of its last such broad write, and per entity the generation of the last
memory insert linked to it, for the CHANGED_ENTITIES_MAX entities changed
most recently (an entity dropped from that record counts as changed as late
as the newest one dropped). So `changed_since` costs one lookup per entity
asked about, however old the read: it runs on every kept recall answer and
every identical remember retry. The generations live with the transaction
because the transaction's end is where a write is counted.
"""

import collections
import contextlib
import os
import sqlite3
import threading
import time

from mira_memory.core.errors import BackendError, BusyError, StoreError

# How long a statement waits for another connection's lock (SQLite's busy
# timeout, the sqlite3 module's default) before it fails with "database is
# locked": the node's callback waits that long, then answers backend_failure.
LOCK_WAIT_S = 5.0

# How long forget waits for readers to leave the WAL before giving up on truncating it.
WAL_TRUNCATE_ATTEMPTS = 100
WAL_TRUNCATE_PAUSE_S = 0.01

# Entities whose last memory insert changed_since() remembers (about 100
# bytes each); older ones count as changed as late as the newest one dropped.
CHANGED_ENTITIES_MAX = 4096

# SQLite's primary result codes after which the file may not hold what the
# owner wrote: an I/O error (a write, sync or truncate that failed) or
# damage. A full disk (SQLITE_FULL) is not one: the write that found no room
# never reached the file system, and the transaction rolled back before any
# sync, so the next write may go on once there is room.
STORAGE_FAILURE_CODES = frozenset({
    sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def is_storage_failure(error):
    """Return True when an sqlite3.Error says the file cannot be trusted (see above)."""
    code = getattr(error, 'sqlite_errorcode', None)  # Python 3.11 and later
    return code is not None and code & 0xff in STORAGE_FAILURE_CODES


@contextlib.contextmanager
def backend_errors(operation):
    """Turn an sqlite3.Error raised inside into BackendError naming the operation."""
    try:
        yield
    except sqlite3.Error as exc:
        raise BackendError('SQLite failed during %s: %s: %s'
                           % (operation, type(exc).__name__, exc)) from exc


def set_pragma(conn, name, value, expected):
    """Set a pragma and read it back; BackendError when it did not take effect."""
    conn.execute('PRAGMA %s = %s' % (name, value)).fetchall()
    actual = conn.execute('PRAGMA %s' % name).fetchone()[0]
    if actual != expected:
        raise BackendError('PRAGMA %s did not take effect (wanted %r, got %r)'
                           % (name, expected, actual))


class Connection:
    """One SQLite connection and its lock: read snapshots and close."""

    def __init__(self, raw):
        # The sqlite3.Connection; None once closed. Tests read it for
        # pragmas and query plans; the store uses require_open().
        self.raw = raw
        # Every use of the connection holds it (re-entrant: a snapshot can
        # run inside a write transaction).
        self.lock = threading.RLock()

    @property
    def closed(self):
        """Return True once close() has been called."""
        return self.raw is None

    def close(self):
        """Close the connection; closing again is a no-op."""
        with self.lock:
            if self.raw is None:
                return
            conn, self.raw = self.raw, None
            with backend_errors('close'):
                conn.close()

    def require_open(self):
        """Return the sqlite3 connection; StoreError once closed."""
        if self.raw is None:
            raise StoreError('store is closed')
        return self.raw

    @contextlib.contextmanager
    def snapshot(self, operation):
        """Run several reads against one consistent snapshot."""
        with self.lock:
            conn = self.require_open()
            if conn.in_transaction:
                # Inside an open write transaction: that snapshot already holds.
                with backend_errors(operation):
                    yield conn
                return
            with backend_errors(operation):
                conn.execute('BEGIN')
                try:
                    yield conn
                finally:
                    # Reads only: ending the snapshot either way is safe.
                    conn.execute('COMMIT')


class OwnerConnection(Connection):
    """
    The owner's read-write connection: write transactions and their generations.

    Writes stop at the first storage failure. Once a write, sync or
    truncate failed, what the file holds is no longer known: Linux may have
    dropped the pages a failed fsync could not write and marked them clean,
    so a later fsync that succeeds proves nothing about them (PostgreSQL's
    fsync failure of 2018). The connection then refuses every write
    transaction with the first failure's text, and reads go on: they show
    what was committed and acknowledged before. A restart reopens the file
    and finds what reached the disk.
    """

    def __init__(self, raw, path):
        super().__init__(raw)
        # The WAL's path: truncate_wal syncs the file SQLite truncated.
        self.wal_path = '%s-wal' % path
        # See "Write generations" in the module docstring.
        self.generation = 0
        # The generation of the last write that may change anything (not a memory insert).
        self._last_broad_change = 0
        # Entity id -> generation of the last memory insert linked to it, least recent first.
        self._entity_changes = collections.OrderedDict()
        # The newest generation dropped from _entity_changes (they drop in order).
        self._dropped_entity_change = 0
        # During a tracked transaction: the entity ids its inserts linked.
        self._touched = None
        # The first storage failure's text, once writes stopped (class docstring).
        self.writes_stopped = None
        # A context manager entered around truncate_wal's checkpoint: replication
        # (core/replication) stops Litestream's reader there, then wipes its copies.
        self.wal_truncation = contextlib.nullcontext

    @contextlib.contextmanager
    def atomic(self, *, tracked=False, durable=True):
        """
        Run one BEGIN IMMEDIATE transaction; roll back on any exception.

        tracked: the transaction's only writes are memory inserts, which
        report their linked entities (touch); otherwise it is recorded as
        changing anything. The record is made however the transaction ends
        (a rolled-back one only costs a cache a refill).

        durable=False commits this one transaction without its own fsync
        (synchronous NORMAL, then FULL again before anything else runs on the
        connection): see without_commit_sync.
        """
        with self.lock, self.without_commit_sync(not durable):
            conn = self.require_open()
            if conn.in_transaction:
                raise StoreError('a write transaction is already open on this store')
            self.require_writes()
            self._touched = set() if tracked else None
            try:
                with self._stopping_writes_on_storage_failure():
                    with backend_errors('begin'):
                        conn.execute('BEGIN IMMEDIATE')
                    try:
                        with backend_errors('write'):
                            yield conn
                        with backend_errors('commit'):
                            conn.execute('COMMIT')
                    except BaseException:
                        if conn.in_transaction:
                            # The original exception matters more than a failed rollback.
                            with contextlib.suppress(sqlite3.Error):
                                conn.execute('ROLLBACK')
                        raise
            finally:
                touched, self._touched = self._touched, None
                if touched is None or touched:
                    # A tracked transaction that inserted nothing changed nothing.
                    self.generation += 1
                    if touched is None:
                        self._last_broad_change = self.generation
                    else:
                        self._record_entity_changes(touched)

    def require_writes(self):
        """Raise BackendError once writes stopped after a storage failure (class docstring)."""
        if self.writes_stopped is not None:
            raise BackendError(
                'writes stopped after a storage failure (%s): nothing more is written until'
                ' the memory node restarts' % self.writes_stopped)

    @contextlib.contextmanager
    def _stopping_writes_on_storage_failure(self):
        try:
            yield
        except BackendError as exc:
            if self.writes_stopped is None and (
                    is_storage_failure(exc.__cause__) or isinstance(exc.__cause__, OSError)):
                self.writes_stopped = str(exc)
            raise

    @contextlib.contextmanager
    def without_commit_sync(self, active=True):
        """
        Commit the transactions inside without an fsync of their own (when active).

        Only a kept refusal (core/review) asks for this: the write-ahead log
        gets its frames, so the commit survives a crash of the process, and
        the next durable commit or checkpoint syncs them with its own (WAL
        frames reach the disk in order); a power cut before that may lose
        them, never anything else. Every other write keeps synchronous FULL.
        The pragma is read back both ways; if FULL cannot be restored, writes
        stop as after a storage failure (require_writes), so no later write
        can be acknowledged without its sync.
        """
        if not active:
            yield
            return
        with self.lock:
            conn = self.require_open()
            with backend_errors('synchronous'):
                set_pragma(conn, 'synchronous', 'NORMAL', 1)
            try:
                yield
            finally:
                try:
                    with backend_errors('synchronous'):
                        set_pragma(conn, 'synchronous', 'FULL', 2)
                except BackendError as exc:
                    if self.writes_stopped is None:
                        self.writes_stopped = str(exc)
                    raise

    def touch(self, memory):
        """Record, inside a tracked transaction, the entities a new memory links."""
        if self._touched is not None:
            self._touched.update(link.entity_id for link in memory.links)

    def _record_entity_changes(self, entity_ids):
        for entity_id in entity_ids:
            self._entity_changes[entity_id] = self.generation
            self._entity_changes.move_to_end(entity_id)
        while len(self._entity_changes) > CHANGED_ENTITIES_MAX:
            _, self._dropped_entity_change = self._entity_changes.popitem(last=False)

    def changed_since(self, generation, entity_ids=()):
        """
        Return True when a write after `generation` may have changed a read of entity_ids.

        A read at `generation` (the value of self.generation when it began)
        of the entities entity_ids is still exact unless a later write
        changed anything, or inserted a memory linked to one of them. With
        no entity_ids only writes that may change anything count (a memory
        insert changes no name and no existing memory). One lookup per
        entity, however old the read (module docstring).
        """
        if generation == self.generation:
            return False
        if generation > self.generation or self._last_broad_change > generation:
            return True
        for entity_id in entity_ids:
            if self._entity_changes.get(entity_id, self._dropped_entity_change) > generation:
                return True
        return False

    def truncate_wal(self):
        """
        Copy the WAL into the database, cut it to zero bytes and sync the cut.

        TRUNCATE needs every reader out of the WAL. The node's own reader
        only reads inside a callback on the same executor thread, so it is
        idle here; a reader elsewhere (another process) gets a short grace.

        SQLite syncs the database before it truncates the WAL, but not the
        truncation itself: until the file system writes it back, a power cut
        brings the old frames back, the forgotten text in them. So the WAL
        is synced here (fsync on any descriptor of a file syncs its size).
        """
        with self.lock, self._stopping_writes_on_storage_failure(), self.wal_truncation():
            conn = self.require_open()
            self.require_writes()
            try:
                for _ in range(WAL_TRUNCATE_ATTEMPTS):
                    busy, _, _ = conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()
                    if not busy:
                        break
                    time.sleep(WAL_TRUNCATE_PAUSE_S)
                else:
                    raise BusyError('the rows are removed, but a reader kept the write-ahead'
                                    ' log from being truncated; run the forget again to retry')
                fd = os.open(self.wal_path, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except (sqlite3.Error, OSError) as exc:
                raise BackendError('the rows are removed, but the write-ahead log could not be'
                                   ' truncated and synced: %s: %s'
                                   % (type(exc).__name__, exc)) from exc


def connect_owner(path):
    """
    Open the read-write connection to the file at path, durable and secure-deleting.

    The caller has checked the file (schema.inspect_existing) and created a
    missing one with the owner's mode.
    """
    try:
        raw = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                              timeout=LOCK_WAIT_S)
    except OSError as exc:
        raise BackendError('cannot create database: %s' % exc) from exc
    except sqlite3.Error as exc:
        raise BackendError('cannot open database: %s' % exc) from exc
    connection = OwnerConnection(raw, path)
    try:
        with backend_errors('open'):
            set_pragma(raw, 'foreign_keys', 'ON', 1)
            set_pragma(raw, 'journal_mode', 'WAL', 'wal')
            set_pragma(raw, 'synchronous', 'FULL', 2)
            # Forget must leave no copy of the text in the file: freed
            # cells and pages are overwritten with zeros.
            set_pragma(raw, 'secure_delete', 'ON', 1)
    except BaseException:
        connection.close()
        raise
    return connection


def connect_read_only(path):
    """Open a connection to the file at path that cannot write."""
    try:
        raw = sqlite3.connect(path.as_uri() + '?mode=ro', uri=True, isolation_level=None,
                              check_same_thread=False, timeout=LOCK_WAIT_S)
    except sqlite3.Error as exc:
        raise BackendError('cannot open read-only connection: %s' % exc) from exc
    try:
        with backend_errors('open_reader'):
            set_pragma(raw, 'query_only', 1, 1)
            set_pragma(raw, 'foreign_keys', 'ON', 1)
    except BaseException:
        raw.close()
        raise
    return Connection(raw)
