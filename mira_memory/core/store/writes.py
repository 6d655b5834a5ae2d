# SPDX-License-Identifier: Apache-2.0
"""
The store's writes: entities, aliases, memories, retire, forget, receipts, pending items.

Each write function checks its input first, then runs as one transaction on
the owner's connection (transaction.OwnerConnection.atomic), so a refused
input never counts as a write and a failure leaves nothing behind.
WriteTransaction is the one write that spans several calls: admission reads
its duplicate and conflict slots and inserts the memory with its receipt
against one snapshot. ReviewTransaction adds what a person's review writes in
that same one transaction (core/review): the pending item, a new entity
and its aliases, the retirement of what it supersedes. Reads inside a write
reuse reads.py's queries, the pending table's SQL is pending.py's.
"""

import datetime

from mira_memory.core.admission.normalize import display_form, normalize_key, normalize_token
from mira_memory.core.errors import BackendError, DuplicateAliasError, InvalidInputError
from mira_memory.core.errors import NotFoundError, StoreError
from mira_memory.core.store import pending, reads
from mira_memory.core.store.records import excerpt, ForgetPlan, format_entity_id, format_memory_id
from mira_memory.core.store.records import MEDIA_TYPE_TEXT, name_forms, normalized, positive_id
from mira_memory.core.store.records import prepare_memory, RECEIPT_COLUMNS, STATUS_ACTIVE
from mira_memory.core.store.records import STORAGE_INLINE, stored_source_label
from mira_memory.core.store.transaction import backend_errors

_TIMESTAMP_FORMAT = '%04d-%02d-%02dT%02d:%02d:%02dZ'

# Forget: every query walks an index (tests EXPLAIN them).
ENTITY_MEMORY_IDS_SQL = (
    'SELECT DISTINCT memory_id FROM memory_links WHERE entity_id = :entity_id'
    ' ORDER BY memory_id')
MEMORY_LINK_COUNT_SQL = 'SELECT count(*) FROM memory_links WHERE memory_id = :memory_id'
MEMORY_PAYLOAD_COUNT_SQL = 'SELECT count(*) FROM payloads WHERE memory_id = :memory_id'
ENTITY_ALIAS_COUNT_SQL = 'SELECT count(*) FROM aliases WHERE entity_id = :entity_id'
DELETE_MEMORY_SQL = (
    'DELETE FROM supersessions WHERE old_memory_id = :memory_id',
    'DELETE FROM supersessions WHERE new_memory_id = :memory_id',
    'DELETE FROM receipts WHERE memory_id = :memory_id',
    'DELETE FROM payloads WHERE memory_id = :memory_id',
    'DELETE FROM memory_links WHERE memory_id = :memory_id',
    'DELETE FROM memories WHERE id = :memory_id',
)
DELETE_ENTITY_SQL = (
    'DELETE FROM aliases WHERE entity_id = :entity_id',
    'DELETE FROM entities WHERE id = :entity_id',
)
INSERT_RECEIPT_SQL = 'INSERT INTO receipts (%s) VALUES (%s)' % (
    ', '.join(RECEIPT_COLUMNS), ', '.join('?' * len(RECEIPT_COLUMNS)))
RETIRE_SQL = (
    "UPDATE memories SET status = 'retired', retired_at = :now, retired_reason = :reason"
    " WHERE id = :memory_id AND status = 'active'")
INSERT_SUPERSESSION_SQL = (
    'INSERT INTO supersessions (old_memory_id, new_memory_id, created_at) VALUES (?, ?, ?)')
# What forget asks of a memory besides its rows: its summary names pending items.
MEMORY_SUMMARY_SQL = 'SELECT summary FROM memories WHERE id = :memory_id'
ENTITY_NAMES_SQL = (
    'SELECT canonical_name FROM entities WHERE id = :entity_id'
    ' UNION SELECT alias FROM aliases WHERE entity_id = :entity_id')

# A retirement reason is a short operator note, not a document.
REASON_MAX_LENGTH = 500


def utc_now():
    """Return the current time, timezone-aware (the store's default clock)."""
    return datetime.datetime.now(datetime.timezone.utc)


def timestamp(clock):
    """Return clock()'s time as the created_at text the schema checks (UTC, seconds)."""
    moment = clock()
    if not isinstance(moment, datetime.datetime) or moment.utcoffset() is None:
        raise BackendError('the store clock must return a timezone-aware datetime')
    utc = moment.astimezone(datetime.timezone.utc)
    return _TIMESTAMP_FORMAT % (
        utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)


def _insert_memory(conn, new, now, allow_runtime_source):
    prepared = prepare_memory(new, allow_runtime_source)
    for entity_id in sorted({entity_id for entity_id, _ in prepared.links}):
        if conn.execute(reads.ENTITY_SQL, {'entity_id': entity_id}).fetchone() is None:
            raise NotFoundError('linked entity %s not found' % format_entity_id(entity_id))
    cursor = conn.execute(
        'INSERT INTO memories (kind, summary, predicate, value, value_key, source_kind,'
        ' source_label, confidence, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        (prepared.kind, prepared.summary, prepared.predicate, prepared.value,
         prepared.value_key, prepared.source_kind, prepared.source_label,
         prepared.confidence, STATUS_ACTIVE, now))
    memory_id = cursor.lastrowid
    conn.executemany(
        'INSERT INTO memory_links (memory_id, entity_id, role) VALUES (?, ?, ?)',
        [(memory_id, entity_id, role) for entity_id, role in prepared.links])
    conn.execute(
        'INSERT INTO payloads (memory_id, storage, media_type, text_body, created_at)'
        ' VALUES (?, ?, ?, ?, ?)',
        (memory_id, STORAGE_INLINE, MEDIA_TYPE_TEXT, prepared.summary, now))
    return reads.query_memory(conn, memory_id)


def _forget_plan(conn, target, memory_ids, alias_count, apply, names=()):
    links = payloads = 0
    summary_keys = set()
    for memory_id in memory_ids:
        params = {'memory_id': memory_id}
        links += conn.execute(MEMORY_LINK_COUNT_SQL, params).fetchone()[0]
        payloads += conn.execute(MEMORY_PAYLOAD_COUNT_SQL, params).fetchone()[0]
        summary_keys.add(normalize_key(conn.execute(MEMORY_SUMMARY_SQL, params).fetchone()[0]))
    pending_ids = pending.naming(conn, names=names, memory_ids=memory_ids,
                                 summary_keys=summary_keys)
    return ForgetPlan(target=target, memory_ids=tuple(memory_ids), alias_count=alias_count,
                      link_count=links, payload_count=payloads, applied=apply,
                      pending_ids=pending_ids)


def _delete_memories(conn, memory_ids):
    for memory_id in memory_ids:
        for statement in DELETE_MEMORY_SQL:
            conn.execute(statement, {'memory_id': memory_id})


def _forget_pending(conn, pending_ids, now):
    """Remove the pending items a forget names; their closed records keep no text."""
    for pending_id in pending_ids:
        pending.close(conn, pending_id, 'forgotten', None, now=now, by=pending.BY_FORGET)


def insert_entity(conn, entity_type, canonical_name, now):
    """Insert an entity inside the caller's transaction; return it (checked forms only)."""
    entity_type = normalized(normalize_token, entity_type, 'entity_type')
    name, key = name_forms(canonical_name, 'canonical name')
    cursor = conn.execute(
        'INSERT INTO entities (entity_type, canonical_name, name_key, created_at)'
        ' VALUES (?, ?, ?, ?)', (entity_type, name, key, now))
    return reads.query_entity(conn, cursor.lastrowid)


def insert_alias(conn, entity_id, alias, now):
    """Add an alias inside the caller's transaction; return the entity with all aliases."""
    entity_id = positive_id(entity_id, 'entity id')
    alias, key = name_forms(alias, 'alias')
    row = conn.execute(
        'SELECT name_key FROM entities WHERE id = ?', (entity_id,)).fetchone()
    if row is None:
        raise NotFoundError('entity %s not found' % format_entity_id(entity_id))
    duplicate = row[0] == key or conn.execute(
        'SELECT 1 FROM aliases WHERE entity_id = ? AND alias_key = ?',
        (entity_id, key)).fetchone() is not None
    if duplicate:
        raise DuplicateAliasError(
            'alias %s already names %s' % (excerpt(alias), format_entity_id(entity_id)))
    conn.execute(
        'INSERT INTO aliases (entity_id, alias, alias_key, created_at)'
        ' VALUES (?, ?, ?, ?)', (entity_id, alias, key, now))
    return reads.query_entity(conn, entity_id)


def retirement_reason(reason):
    """Return a retirement reason in its stored form; InvalidInputError when it is not one."""
    reason = normalized(display_form, reason, 'reason')
    if len(reason) > REASON_MAX_LENGTH:
        raise InvalidInputError('reason is longer than %d characters' % REASON_MAX_LENGTH)
    return reason


def retire(conn, memory_id, reason, now):
    """Retire an active memory inside the caller's transaction; return it retired."""
    memory = reads.query_memory(conn, memory_id)
    if memory.status != STATUS_ACTIVE:
        raise InvalidInputError('%s is already %s' % (
            format_memory_id(memory_id), memory.status))
    conn.execute(RETIRE_SQL, {'now': now, 'reason': reason, 'memory_id': memory_id})
    return reads.query_memory(conn, memory_id)


def add_entity(connection, clock, entity_type, canonical_name):
    """Create an entity; its type is a token, its name a display form."""
    # Checked before the transaction: a refused input never counts as a write.
    normalized(normalize_token, entity_type, 'entity_type')
    name_forms(canonical_name, 'canonical name')
    now = timestamp(clock)
    with connection.atomic() as conn:
        return insert_entity(conn, entity_type, canonical_name, now)


def add_alias(connection, clock, entity_id, alias):
    """Add an alias to an entity and return the entity with all aliases."""
    positive_id(entity_id, 'entity id')
    name_forms(alias, 'alias')
    now = timestamp(clock)
    with connection.atomic() as conn:
        return insert_alias(conn, entity_id, alias, now)


def add_memory(connection, clock, new):
    """Write a manual memory with its links and one inline text/plain payload."""
    now = timestamp(clock)
    with connection.atomic(tracked=True) as conn:
        memory = _insert_memory(conn, new, now, allow_runtime_source=False)
        connection.touch(memory)
        return memory


def retire_memory(connection, clock, memory_id, reason):
    """Mark an active memory retired, with the time and the operator's reason."""
    memory_id = positive_id(memory_id, 'memory id')
    reason = retirement_reason(reason)
    now = timestamp(clock)
    with connection.atomic() as conn:
        return retire(conn, memory_id, reason, now)


def forget_memory(connection, clock, memory_id, *, apply):
    """Remove one memory with its links, payloads and the pending items naming it."""
    memory_id = positive_id(memory_id, 'memory id')
    now = timestamp(clock)
    with connection.atomic() as conn:
        if conn.execute(reads.MEMORY_IDS_BY_ID_SQL, {'memory_id': memory_id}).fetchone() is None:
            raise NotFoundError('memory %s not found' % format_memory_id(memory_id))
        plan = _forget_plan(conn, format_memory_id(memory_id), (memory_id,), 0, apply)
        if apply:
            _forget_pending(conn, plan.pending_ids, now)
            _delete_memories(conn, plan.memory_ids)
    if apply:
        connection.truncate_wal()
    return plan


def forget_entity(connection, clock, entity_id, *, apply):
    """Remove an entity, its aliases, every memory linked to it and the pending items naming it."""
    entity_id = positive_id(entity_id, 'entity id')
    params = {'entity_id': entity_id}
    now = timestamp(clock)
    with connection.atomic() as conn:
        if conn.execute(reads.ENTITY_SQL, params).fetchone() is None:
            raise NotFoundError('entity %s not found' % format_entity_id(entity_id))
        memory_ids = tuple(row[0] for row in conn.execute(ENTITY_MEMORY_IDS_SQL, params))
        aliases = conn.execute(ENTITY_ALIAS_COUNT_SQL, params).fetchone()[0]
        names = [row[0] for row in conn.execute(ENTITY_NAMES_SQL, params)]
        plan = _forget_plan(conn, format_entity_id(entity_id), memory_ids, aliases, apply,
                            names)
        if apply:
            _forget_pending(conn, plan.pending_ids, now)
            _delete_memories(conn, memory_ids)
            for statement in DELETE_ENTITY_SQL:
                conn.execute(statement, params)
    if apply:
        connection.truncate_wal()
    return plan


def keep_pending(connection, clock, values, *, max_age):
    """
    Keep one refused proposal for review; return (pending id, True when new).

    values: the pending columns (records.PENDING_COLUMNS) after id and
    created_at, in order; created_at is the store clock's now, and items
    older than max_age (a timedelta) expire first (pending.insert). One
    transaction that commits without its own fsync (core/review/keep.py says
    why; transaction.without_commit_sync), and changes nothing recall or
    admission read (tracked, and no memory).
    """
    now = timestamp(clock)
    cutoff = timestamp(lambda: clock() - max_age)
    with connection.atomic(tracked=True, durable=False) as conn:
        return pending.insert(conn, (values[0], now, *values[1:]), now=now, cutoff=cutoff)


def expire_pending(connection, clock, max_age):
    """Close the expired pending items (one transaction, only when there are any)."""
    now = timestamp(clock)
    cutoff = timestamp(lambda: clock() - max_age)
    with connection.snapshot('expire_pending') as conn:
        if not pending.has_expired(conn, cutoff):
            return 0
    with connection.atomic(tracked=True) as conn:
        return pending.expire(conn, now=now, cutoff=cutoff)


class WriteTransaction:
    """
    One admission write transaction.

    Reads inside see the same snapshot the insert is made against; leaving
    the block commits, and any exception rolls everything back.
    """

    def __init__(self, connection, clock):
        self._connection = connection
        self._clock = clock
        self._atomic = None
        self._conn = None

    def __enter__(self):
        if self._atomic is not None:
            raise StoreError('a WriteTransaction can be entered only once')
        self._atomic = self._connection.atomic(tracked=True)
        self._conn = self._atomic.__enter__()
        return self

    def __exit__(self, *exc_info):
        try:
            return self._atomic.__exit__(*exc_info)
        finally:
            self._conn = None

    def _require_active(self):
        if self._conn is None:
            raise StoreError('write transaction is not active')
        return self._conn

    def find_entities(self, name, *, limit=None):
        """Return exact normalized matches in entity-id order (no aliases)."""
        conn = self._require_active()
        with backend_errors('find_entities'):
            return reads.query_find_entities(conn, name, limit, with_aliases=False)

    def slot_memories(self, subject_id, predicate):
        """Return active fact/preference memories in the subject's predicate slot."""
        conn = self._require_active()
        with backend_errors('slot_memories'):
            return reads.query_subject_predicate(
                conn, reads.SLOT_MEMORY_IDS_SQL, subject_id, predicate)

    def relationship_memories(self, subject_id, predicate):
        """Return active relationship memories of the subject with this predicate."""
        conn = self._require_active()
        with backend_errors('relationship_memories'):
            return reads.query_subject_predicate(
                conn, reads.RELATIONSHIP_MEMORY_IDS_SQL, subject_id, predicate)

    def turn_memory(self, source_label):
        """Return the operator_statement memory written for this turn label, if any."""
        conn = self._require_active()
        params = {'source_label': stored_source_label(source_label)}
        with backend_errors('turn_memory'):
            memories = reads.query_memories(conn, reads.TURN_MEMORY_IDS_SQL, params)
        return memories[0] if memories else None

    def insert_memory(self, new, *, allow_runtime_source=False):
        """Insert a memory, its links and its single inline text/plain payload."""
        conn = self._require_active()
        now = timestamp(self._clock)
        with backend_errors('insert_memory'):
            conn.execute('SAVEPOINT insert_memory')
            try:
                memory = _insert_memory(conn, new, now, allow_runtime_source)
            except BaseException:
                # A caught failure must not leave half a memory in the transaction.
                conn.execute('ROLLBACK TO insert_memory')
                conn.execute('RELEASE insert_memory')
                raise
            conn.execute('RELEASE insert_memory')
        self._connection.touch(memory)
        return memory

    def insert_receipt(self, receipt):
        """
        Insert the Receipt of a memory this transaction wrote (its created_at is set here).

        Admission calls it right after insert_memory, in the same
        transaction: the memory and its receipt commit together or not at all.
        """
        conn = self._require_active()
        created_at = timestamp(self._clock)
        # By column name and shallow: dataclasses.astuple deep-copies every
        # field, about 18 us of the created path for a row of scalars.
        row = tuple(created_at if column == 'created_at' else getattr(receipt, column)
                    for column in RECEIPT_COLUMNS)
        with backend_errors('insert_receipt'):
            conn.execute(INSERT_RECEIPT_SQL, row)


class ReviewTransaction(WriteTransaction):
    """
    What a person's review writes, in one transaction with admission's checks and insert.

    Entities, aliases and retirements change what recall and admission read,
    so unlike remember's transaction this one counts as a broad write
    (transaction.py: write generations).
    """

    def __enter__(self):
        if self._atomic is not None:
            raise StoreError('a ReviewTransaction can be entered only once')
        self._atomic = self._connection.atomic()
        self._conn = self._atomic.__enter__()
        return self

    def now(self):
        """Return the store clock's time as stored."""
        return timestamp(self._clock)

    def timestamp_before(self, age):
        """Return the stored form of the store clock's time less age (a timedelta)."""
        return timestamp(lambda: self._clock() - age)

    def pending_item(self, pending_id):
        """Return the waiting PendingItem, or None."""
        with backend_errors('pending_item'):
            return pending.item(self._require_active(), pending_id)

    def closed_pending(self, pending_id):
        """Return the ClosedPending of an item that left the queue, or None."""
        with backend_errors('closed_pending'):
            return pending.closed(self._require_active(), pending_id)

    def close_pending(self, pending_id, outcome, memory_id, by):
        """Remove an item from the queue and record what became of it."""
        with backend_errors('close_pending'):
            pending.close(self._require_active(), pending_id, outcome, memory_id,
                          now=self.now(), by=by)

    def add_entity(self, entity_type, canonical_name):
        """Create an entity in this transaction."""
        with backend_errors('add_entity'):
            return insert_entity(self._require_active(), entity_type, canonical_name, self.now())

    def add_alias(self, entity_id, alias):
        """Add an alias in this transaction."""
        with backend_errors('add_alias'):
            return insert_alias(self._require_active(), entity_id, alias, self.now())

    def retire_memory(self, memory_id, reason):
        """Retire an active memory in this transaction."""
        reason = retirement_reason(reason)
        with backend_errors('retire_memory'):
            return retire(self._require_active(), memory_id, reason, self.now())

    def supersede(self, old_memory_id, new_memory_id):
        """Record that new_memory_id replaced old_memory_id (memory show's chain)."""
        with backend_errors('supersede'):
            self._require_active().execute(
                INSERT_SUPERSESSION_SQL, (old_memory_id, new_memory_id, self.now()))
