# SPDX-License-Identifier: Apache-2.0
"""
The store's queries: find, show, list, counts and receipts, as SQL and as records.

The query functions take an open sqlite3 connection, so one read runs the
same wherever it is called from: in a read snapshot (Reads, shared by the
store and its read-only MemoryReader), inside admission's write transaction
(writes.WriteTransaction) or on verify's snapshot connection. The hot
queries are module constants so that tests can EXPLAIN exactly what runs.
"""

from mira_memory.core.admission.normalize import normalize_token
from mira_memory.core.errors import NotFoundError
from mira_memory.core.store import pending, transaction
from mira_memory.core.store.records import Entity, format_entity_id, format_memory_id, Link
from mira_memory.core.store.records import Memory, name_forms, normalized, Payload, positive_id
from mira_memory.core.store.records import Receipt, RECEIPT_COLUMNS, sql_limit
from mira_memory.core.store.schema import SCHEMA_VERSION

FIND_ENTITY_IDS_SQL = (
    'SELECT id FROM entities WHERE name_key = :key'
    ' UNION SELECT entity_id FROM aliases WHERE alias_key = :key'
    ' ORDER BY 1 LIMIT :limit')
FIND_ENTITIES_SQL = (
    'SELECT e.id, e.entity_type, e.canonical_name FROM entities AS e'
    ' WHERE e.id IN (' + FIND_ENTITY_IDS_SQL + ') ORDER BY e.id')
FIND_ALIASES_SQL = (
    'SELECT a.entity_id, a.alias FROM aliases AS a'
    ' WHERE a.entity_id IN (' + FIND_ENTITY_IDS_SQL + ') ORDER BY a.entity_id, a.id')
ENTITY_SQL = 'SELECT id, entity_type, canonical_name FROM entities WHERE id = :entity_id'
ENTITY_ALIASES_SQL = (
    'SELECT entity_id, alias FROM aliases WHERE entity_id = :entity_id ORDER BY id')

# Memories are always loaded through these two templates; {ids} is one of
# the *_IDS_SQL subqueries below, so links come in one batched query.
MEMORIES_BY_IDS_SQL = (
    'SELECT m.id, m.kind, m.summary, m.predicate, m.value, m.source_kind, m.source_label,'
    ' m.confidence, m.status, m.created_at, m.value_key, m.retired_at, m.retired_reason'
    ' FROM memories AS m WHERE m.id IN ({ids}) ORDER BY m.id')
LINKS_BY_IDS_SQL = (
    'SELECT l.memory_id, l.entity_id, e.canonical_name, l.role'
    ' FROM memory_links AS l JOIN entities AS e ON e.id = l.entity_id'
    ' WHERE l.memory_id IN ({ids}) ORDER BY l.memory_id, l.entity_id, l.role')

# The link index is ordered by memory id within an entity, so walking it
# backwards yields the newest memories first without sorting.
NEWEST_ACTIVE_IDS_SQL = (
    'SELECT DISTINCT l.memory_id FROM memory_links AS l'
    ' JOIN memories AS m ON m.id = l.memory_id'
    " WHERE l.entity_id = :entity_id AND m.status = 'active'"
    ' ORDER BY l.memory_id DESC LIMIT :limit')
SLOT_MEMORY_IDS_SQL = (
    'SELECT l.memory_id FROM memory_links AS l'
    ' JOIN memories AS m ON m.id = l.memory_id'
    " WHERE l.entity_id = :entity_id AND l.role = 'subject'"
    " AND m.predicate = :predicate AND m.status = 'active'"
    " AND m.kind IN ('fact', 'preference')")
RELATIONSHIP_MEMORY_IDS_SQL = (
    'SELECT l.memory_id FROM memory_links AS l'
    ' JOIN memories AS m ON m.id = l.memory_id'
    " WHERE l.entity_id = :entity_id AND l.role = 'subject'"
    " AND m.predicate = :predicate AND m.status = 'active'"
    " AND m.kind = 'relationship'")
# The literal source_kind lets SQLite use the partial index.
TURN_MEMORY_IDS_SQL = (
    'SELECT m.id FROM memories AS m'
    " WHERE m.source_kind = 'operator_statement' AND m.source_label = :source_label"
    ' ORDER BY m.id LIMIT 1')
MEMORY_IDS_BY_ID_SQL = 'SELECT id FROM memories WHERE id = :memory_id'
PAYLOADS_SQL = (
    'SELECT id, storage, media_type, text_body, object_ref, sha256 FROM payloads'
    ' WHERE memory_id = :memory_id ORDER BY id')
COUNTS_SQL = (
    'SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM aliases),'
    ' (SELECT count(*) FROM memories),'
    " (SELECT count(*) FROM memories WHERE status = 'active'),"
    ' (SELECT count(*) FROM memory_links), (SELECT count(*) FROM payloads)')
RECEIPT_SQL = 'SELECT %s FROM receipts WHERE memory_id = :memory_id' % ', '.join(RECEIPT_COLUMNS)
# What memory verify judges: every active operator_statement memory, with its
# receipt when it has one (a LEFT JOIN on the receipt's primary key).
VERIFY_MEMORIES_SQL = (
    'SELECT m.id, m.kind, m.summary, m.predicate, m.value, m.source_label, %s'
    ' FROM memories AS m LEFT JOIN receipts AS r ON r.memory_id = m.id'
    " WHERE m.source_kind = 'operator_statement' AND m.status = 'active'"
    ' ORDER BY m.id' % ', '.join('r.' + column for column in RECEIPT_COLUMNS))
# Receipts of active remembered memories made under other rules than
# (:version, :digest), and active operator_statement memories without a
# receipt. (A supervised memory is a person's decision: verify does not judge it.)
RECEIPT_RULES_COUNTS_SQL = (
    'SELECT (SELECT count(*) FROM receipts AS r JOIN memories AS m ON m.id = r.memory_id'
    "  WHERE m.status = 'active' AND m.source_kind = 'operator_statement'"
    '  AND (r.rules_version <> :version OR r.rules_digest <> :digest)),'
    ' (SELECT count(*) FROM memories AS m'
    "  WHERE m.source_kind = 'operator_statement' AND m.status = 'active'"
    '  AND NOT EXISTS (SELECT 1 FROM receipts AS r WHERE r.memory_id = m.id))')


# memory show's chain: what replaced a memory, and what it replaced.
SUPERSEDED_BY_SQL = 'SELECT new_memory_id FROM supersessions WHERE old_memory_id = :memory_id'
SUPERSEDES_SQL = (
    'SELECT old_memory_id FROM supersessions WHERE new_memory_id = :memory_id'
    ' ORDER BY old_memory_id')


def _load_entities(rows, alias_rows):
    aliases = {}
    for entity_id, alias in alias_rows:
        aliases.setdefault(entity_id, []).append(alias)
    return [Entity(row[0], row[1], row[2], tuple(aliases.get(row[0], ()))) for row in rows]


def query_find_entities(conn, name, limit, with_aliases):
    """Return the entities whose canonical name or alias key equals name's key."""
    _, key = name_forms(name, 'name')
    params = {'key': key, 'limit': sql_limit(limit)}
    rows = conn.execute(FIND_ENTITIES_SQL, params).fetchall()
    alias_rows = conn.execute(FIND_ALIASES_SQL, params).fetchall() if with_aliases else ()
    return _load_entities(rows, alias_rows)


def query_entity(conn, entity_id):
    """Return one entity with its aliases; NotFoundError when there is none."""
    params = {'entity_id': positive_id(entity_id, 'entity id')}
    rows = conn.execute(ENTITY_SQL, params).fetchall()
    if not rows:
        raise NotFoundError('entity %s not found' % format_entity_id(entity_id))
    alias_rows = conn.execute(ENTITY_ALIASES_SQL, params).fetchall()
    return _load_entities(rows, alias_rows)[0]


def query_memories(conn, ids_sql, params):
    """
    Load the memories whose ids the subquery selects, ascending, with links.

    Links (with entity names) come from one batched query over the same
    subquery, inside the caller's transaction, so both agree.
    """
    memory_rows = conn.execute(MEMORIES_BY_IDS_SQL.format(ids=ids_sql), params).fetchall()
    link_rows = conn.execute(LINKS_BY_IDS_SQL.format(ids=ids_sql), params).fetchall()
    links = {}
    for memory_id, entity_id, entity_name, role in link_rows:
        links.setdefault(memory_id, []).append(Link(entity_id, entity_name, role))
    return [
        Memory(
            id=row[0], kind=row[1], summary=row[2], predicate=row[3], value=row[4],
            source_kind=row[5], source_label=row[6], confidence=row[7], status=row[8],
            created_at=row[9], links=tuple(links.get(row[0], ())), value_key=row[10],
            retired_at=row[11], retired_reason=row[12])
        for row in memory_rows
    ]


def query_memory(conn, memory_id):
    """Return one memory with its links; NotFoundError when there is none."""
    params = {'memory_id': positive_id(memory_id, 'memory id')}
    memories = query_memories(conn, MEMORY_IDS_BY_ID_SQL, params)
    if not memories:
        raise NotFoundError('memory %s not found' % format_memory_id(memory_id))
    return memories[0]


def _query_newest_active(conn, entity_id, limit):
    params = {
        'entity_id': positive_id(entity_id, 'entity id'),
        'limit': positive_id(limit, 'limit') + 1,
    }
    memories = query_memories(conn, NEWEST_ACTIVE_IDS_SQL, params)
    if len(memories) > limit:
        return memories[1:], True
    return memories, False


def query_subject_predicate(conn, ids_sql, subject_id, predicate):
    """Return the active memories an (entity_id, predicate) subquery selects."""
    params = {
        'entity_id': positive_id(subject_id, 'subject id'),
        'predicate': normalized(normalize_token, predicate, 'predicate'),
    }
    return query_memories(conn, ids_sql, params)


class Reads:
    """
    A connection's lifecycle and the read operations shared by store and reader.

    Every read runs in one snapshot of the connection (a transaction.Connection).
    """

    def __init__(self, connection, path):
        self._connection = connection
        self.path = path
        self.schema_version = SCHEMA_VERSION

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False

    @property
    def closed(self):
        """Return True once close() has been called."""
        return self._connection.closed

    def close(self):
        """Close the connection; closing again is a no-op."""
        self._connection.close()

    def snapshot(self):
        """
        Return a context manager: the sqlite3 connection inside one read snapshot.

        For core modules that read with this module's queries themselves
        (core/review's assess): everything they read is one consistent state.
        """
        return self._connection.snapshot('snapshot')

    def find_entities(self, name, *, limit=None, with_aliases=True):
        """Return entities whose canonical name or alias key equals name's key."""
        with self._connection.snapshot('find_entities') as conn:
            return query_find_entities(conn, name, limit, with_aliases)

    def get_entity(self, entity_id):
        """Return one entity with its aliases."""
        with self._connection.snapshot('get_entity') as conn:
            return query_entity(conn, entity_id)

    def get_memory(self, memory_id):
        """Return (memory with links, payloads)."""
        with self._connection.snapshot('get_memory') as conn:
            memory = query_memory(conn, memory_id)
            payloads = tuple(
                Payload(*row)
                for row in conn.execute(PAYLOADS_SQL, {'memory_id': memory.id}))
            return memory, payloads

    def get_receipt(self, memory_id):
        """Return the memory's Receipt, or None when it has none."""
        params = {'memory_id': positive_id(memory_id, 'memory id')}
        with self._connection.snapshot('get_receipt') as conn:
            row = conn.execute(RECEIPT_SQL, params).fetchone()
        return None if row is None else Receipt(*row)

    def supersessions(self, memory_id):
        """Return (the memory that superseded it or None, the memories it superseded)."""
        params = {'memory_id': positive_id(memory_id, 'memory id')}
        with self._connection.snapshot('supersessions') as conn:
            row = conn.execute(SUPERSEDED_BY_SQL, params).fetchone()
            older = tuple(r[0] for r in conn.execute(SUPERSEDES_SQL, params))
        return (None if row is None else row[0]), older

    def pending_items(self, limit):
        """Return (the first limit waiting PendingItems, (waiting, dropped, expired))."""
        with self._connection.snapshot('pending_items') as conn:
            return pending.items(conn, limit), pending.counts(conn)

    def pending_load(self, episode_id, request_digest):
        """Return (items waiting, of them of episode_id, True when request_digest waits)."""
        with self._connection.snapshot('pending_load') as conn:
            return pending.load(conn, episode_id, request_digest)

    def pending_item(self, pending_id):
        """Return (the waiting PendingItem or None, its ClosedPending or None)."""
        pending_id = positive_id(pending_id, 'pending id')
        with self._connection.snapshot('pending_item') as conn:
            return pending.item(conn, pending_id), pending.closed(conn, pending_id)

    def receipt_rules_counts(self, rules_version, rules_digest):
        """
        Return (receipts of other rules, memories without a receipt), active memories only.

        Other rules: a receipt whose rules version or digest is not the
        given one. Without a receipt: operator_statement memories made
        before schema version 3 (or imported without one).
        """
        with self._connection.snapshot('receipt_rules_counts') as conn:
            return tuple(conn.execute(RECEIPT_RULES_COUNTS_SQL, {
                'version': rules_version, 'digest': rules_digest}).fetchone())

    def newest_active_memories(self, entity_id, limit):
        """
        Return the `limit` newest active memories linked to the entity.

        They come in ascending id order, with truncated=True when older
        active memories were left out.
        """
        with self._connection.snapshot('newest_active_memories') as conn:
            return _query_newest_active(conn, entity_id, limit)

    def find_with_newest_memories(self, name, *, entity_limit, memory_limit, with_aliases=False):
        """
        Return exact matches of name with their newest active memories, in one snapshot.

        Returns ([(entity, memories, memories_truncated)], entities_truncated)
        for at most entity_limit entities (None: all) in entity-id order; the
        memories are each entity's memory_limit newest active ones, ascending.
        This is recall's (and the console find's) whole read, consistent and
        with one transaction.
        """
        probe = None if entity_limit is None else entity_limit + 1
        with self._connection.snapshot('find_with_newest_memories') as conn:
            entities = query_find_entities(conn, name, probe, with_aliases)
            shown = entities if entity_limit is None else entities[:entity_limit]
            views = [
                (entity, *_query_newest_active(conn, entity.id, memory_limit))
                for entity in shown]
        return views, len(shown) < len(entities)

    def counts(self):
        """Return row counts of every table plus active memories."""
        with self._connection.snapshot('counts') as conn:
            row = conn.execute(COUNTS_SQL).fetchone()
        return dict(zip(
            ('entities', 'aliases', 'memories', 'active_memories', 'links', 'payloads'), row))


class MemoryReader(Reads):
    """A second, read-only connection to a store's file (used by recall)."""

    @classmethod
    def connect(cls, path):
        """Open a reader on the store file at path (MemoryStore.open_reader)."""
        return cls(transaction.connect_read_only(path), path)
