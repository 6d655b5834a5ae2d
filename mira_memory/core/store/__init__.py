# SPDX-License-Identifier: Apache-2.0
"""
The canonical persistent memory store: one SQLite file, opened by MemoryStore.

Entities, aliases, memories, entity-memory links and payloads live in
separate tables (schema.py). Every write is one BEGIN IMMEDIATE transaction
that rolls back completely on any error. Names and aliases resolve only by
exact normalized keys (see normalize.py).

MemoryStore is a small facade over five modules, one per job, so that each
can be read alone:
- records.py: the record types, ids and field rules (no SQL);
- transaction.py: the connections, durable transactions, write generations;
- reads.py: the queries (also run inside a write and by verify);
- writes.py: the writes, admission's WriteTransaction and review's
  ReviewTransaction;
- pending.py: the queue of refused proposals kept for review, as SQL.
It opens the file (checking it before anything could change it), composes
them, and keeps the readers it opened. The names the node, the console and
the tests use are re-exported here (__all__).
"""

import pathlib

from mira_memory.core.errors import BackendError, BusyError, ClosedError, DuplicateAliasError
from mira_memory.core.errors import InvalidInputError, NotFoundError, RefusedError, StoreError
from mira_memory.core.errors import TargetExistsError, UnsupportedDatabaseError
from mira_memory.core.store import private_files, reads, schema, transaction, writes
from mira_memory.core.store.reads import MemoryReader
from mira_memory.core.store.records import ClosedPending, format_pending_id, parse_pending_id
from mira_memory.core.store.records import Entity, ForgetPlan, format_entity_id, format_memory_id
from mira_memory.core.store.records import Link, MEDIA_TYPE_TEXT, Memory, NewMemory
from mira_memory.core.store.records import parse_entity_id, parse_memory_id, Payload, Receipt
from mira_memory.core.store.records import PendingItem, SOURCE_SUPERVISED_STATEMENT
from mira_memory.core.store.records import SOURCE_CONSOLE, SOURCE_OPERATOR_STATEMENT
from mira_memory.core.store.records import STATUS_ACTIVE, STATUS_RETIRED
from mira_memory.core.store.writes import ReviewTransaction, WriteTransaction

__all__ = [
    'BackendError', 'BusyError', 'ClosedError', 'ClosedPending', 'DuplicateAliasError', 'Entity',
    'ForgetPlan', 'format_entity_id', 'format_memory_id', 'format_pending_id',
    'InvalidInputError', 'Link', 'MEDIA_TYPE_TEXT', 'Memory', 'MemoryReader', 'MemoryStore',
    'NewMemory', 'NotFoundError', 'parse_entity_id', 'parse_memory_id', 'parse_pending_id',
    'Payload', 'PendingItem', 'Receipt', 'RefusedError', 'ReviewTransaction', 'SOURCE_CONSOLE',
    'SOURCE_OPERATOR_STATEMENT', 'SOURCE_SUPERVISED_STATEMENT', 'STATUS_ACTIVE',
    'STATUS_RETIRED', 'StoreError', 'TargetExistsError', 'UnsupportedDatabaseError',
    'WriteTransaction',
]


class MemoryStore(reads.Reads):
    """The owning read-write connection to the memory database."""

    def __init__(self, connection, path, clock):
        super().__init__(connection, path)
        self._clock = clock
        self._readers = []

    @classmethod
    def open(cls, path, *, create_parent=False, clock=None):  # noqa: A003
        """
        Open (or create) the database at path.

        A missing file, or an existing zero-byte file (which SQLite itself
        treats as an empty database), is initialized with the current schema
        version. Anything else that is not a current database (a version 1
        file included: memory_migrate upgrades it) raises
        UnsupportedDatabaseError and is left unchanged.
        """
        if isinstance(path, str) and not path:
            raise InvalidInputError('database path is empty')
        try:
            path = pathlib.Path(path).absolute()
        except TypeError as exc:
            raise InvalidInputError('database path must be a path') from exc
        if path.is_dir():
            raise UnsupportedDatabaseError('database path is a directory: %s' % path)
        if not path.parent.is_dir():
            if path.parent.exists() or not create_parent:
                raise InvalidInputError(
                    'database directory does not exist: %s' % path.parent)
            try:
                private_files.make_directories(path.parent)
            except OSError as exc:
                raise BackendError('cannot create database directory: %s' % exc) from exc
        # Validate before any read-write connection exists: opening
        # read-write and setting WAL would modify a file we must reject.
        if path.exists() and path.stat().st_size > 0:
            schema.inspect_existing(path)
        try:
            # A new database is its owner's alone (0600; SQLite gives the WAL
            # and SHM files the database file's mode).
            private_files.create_missing(path)
        except OSError as exc:
            raise BackendError('cannot create database: %s' % exc) from exc
        store = cls(transaction.connect_owner(path), path, clock or writes.utc_now)
        try:
            with store._connection.atomic() as conn:
                if schema.schema_state(conn, path) == 'empty':
                    schema.create_schema(conn)
                store.schema_version = conn.execute('PRAGMA user_version').fetchone()[0]
            # The file and its WAL exist now: their names must be on the disk
            # before any write is acknowledged. SQLite syncs the directory
            # when it first syncs a new WAL, but goes on when that sync fails.
            private_files.sync_directory(path.parent)
        except OSError as exc:
            store.close()
            raise BackendError('cannot sync the database directory %s: %s'
                               % (path.parent, exc.strerror)) from exc
        except BaseException:
            store.close()
            raise
        return store

    def open_reader(self):
        """Open a second connection to the same file that cannot write."""
        with self._connection.lock:
            self._connection.require_open()
            reader = MemoryReader.connect(self.path)
            self._readers = [known for known in self._readers if not known.closed]
            self._readers.append(reader)
            return reader

    def leave_checkpoints_to_replication(self, wal_truncation):
        """
        Let a replicator own the checkpoints: no automatic ones, guard its truncations.

        The owner connection stops checkpointing by itself (wal_autocheckpoint
        0): Litestream checkpoints once it has copied the WAL, and a
        checkpoint of the node's while Litestream is not running (killed,
        restarting) moved pages into the file that Litestream never copied;
        Litestream 0.5.17 then left replicas that restored with broken
        indexes (docs/storage.md#replication-and-restore). wal_truncation()
        is entered around every WAL truncation (a forget's; core/replication).
        """
        with self._connection.lock:
            self._connection.require_open()
            with transaction.backend_errors('wal_autocheckpoint'):
                transaction.set_pragma(self._connection.raw, 'wal_autocheckpoint', 0, 0)
            self._connection.wal_truncation = wal_truncation

    def close(self):
        """Close this store and every reader it opened; closing again is a no-op."""
        with self._connection.lock:
            readers, self._readers = self._readers, []
            for reader in readers:
                reader.close()
            super().close()

    @property
    def writes_stopped(self):
        """Return why writes stopped (a storage failure's text), or None while they go on."""
        return self._connection.writes_stopped

    @property
    def generation(self):
        """Return the number of write transactions so far (transaction.py: write generations)."""
        return self._connection.generation

    def changed_since(self, generation, entity_ids=()):
        """Return True when a write after `generation` may have changed a read of entity_ids."""
        return self._connection.changed_since(generation, entity_ids)

    def add_entity(self, entity_type, canonical_name):
        """Create an entity; its type is a token, its name a display form."""
        return writes.add_entity(self._connection, self._clock, entity_type, canonical_name)

    def add_alias(self, entity_id, alias):
        """Add an alias to an entity and return the entity with all aliases."""
        return writes.add_alias(self._connection, self._clock, entity_id, alias)

    def add_memory(self, new):
        """
        Write a manual memory with its links and one inline text/plain payload.

        source_kind operator_statement is reserved for remember admission.
        """
        return writes.add_memory(self._connection, self._clock, new)

    def retire_memory(self, memory_id, reason):
        """
        Mark an active memory retired, with the time and the operator's reason.

        Nothing is deleted: show still finds it; recall, find, list and
        admission's duplicate and conflict slots see active memories only.
        """
        return writes.retire_memory(self._connection, self._clock, memory_id, reason)

    def forget_memory(self, memory_id, *, apply):
        """
        Remove one memory with its links and payloads (apply=False: only report).

        Pending items that name it (they conflict with it, or their evidence
        is its text) go with it. The removal is one transaction; then the WAL
        is checkpointed and truncated, so with secure_delete no copy of the
        text stays in any database file. Returns the ForgetPlan.
        """
        return writes.forget_memory(self._connection, self._clock, memory_id, apply=apply)

    def forget_entity(self, entity_id, *, apply):
        """
        Remove an entity, its aliases and every memory linked to it in any role.

        Those memories go with all their links (to other entities too) and
        payloads, and so do the pending items that name the entity (as
        subject or related entity, or in the utterance, by its name or an
        alias: pending.naming) or those memories; one transaction, then the WAL is truncated as in
        forget_memory. apply=False only reports. Returns the ForgetPlan.
        """
        return writes.forget_entity(self._connection, self._clock, entity_id, apply=apply)

    def truncate_wal(self):
        """
        Copy the WAL into the database and cut it to zero bytes, synced (as forget does).

        With secure_delete, the text of rows a transaction removed then stays
        in no file (dismiss: core/review/decisions.py).
        """
        self._connection.truncate_wal()

    def write(self):
        """Return a context manager holding one BEGIN IMMEDIATE transaction."""
        return WriteTransaction(self._connection, self._clock)

    def review(self):
        """Return a ReviewTransaction: a write transaction with what a review writes."""
        return ReviewTransaction(self._connection, self._clock)

    def keep_pending(self, values, *, max_age):
        """
        Keep a refused proposal for review; return (pending id, True when new).

        values: records.PENDING_COLUMNS after id and created_at. Committed
        without its own fsync (writes.keep_pending, core/review: why). Nothing
        waiting is removed to make room: core/review/keep.py decides first
        whether the item fits (pending_load).
        """
        return writes.keep_pending(self._connection, self._clock, values, max_age=max_age)

    def expire_pending(self, max_age):
        """Close the pending items older than max_age (a timedelta); return how many."""
        return writes.expire_pending(self._connection, self._clock, max_age)
