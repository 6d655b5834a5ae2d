# SPDX-License-Identifier: Apache-2.0
"""
The canonical persistent memory store: one SQLite file (schema in schema.py).

Entities, aliases, memories, entity-memory links and payloads live in
separate tables. Integer primary keys render as ENT<n> / MEM<n>. Every write
is one BEGIN IMMEDIATE transaction that rolls back completely on any error.
Names and aliases resolve only by exact normalized keys (see normalize.py).

Write generations. The memory node is the file's only writer (it owns it), so
the store knows every change: each committed write transaction gets the next
`generation` and a record of what it may have changed, and
`changed_since(generation, entity_ids)` tells a cache whether an answer read
at `generation` may be stale. A memory insert is recorded with its linked
entities (it changes nothing else a read can see: not which names match, not
any other entity's memories); every other write (entity, alias, retire,
forget) is recorded as changing anything. The store keeps the generation
of its last such broad write, and per entity the generation of the last
memory insert linked to it, for the CHANGED_ENTITIES_MAX entities changed
most recently (an entity dropped from that record counts as changed as late
as the newest one dropped). So `changed_since` costs one lookup per entity
asked about, however old the read: it runs on every kept recall answer and
every identical remember retry.

Memory.value_key is stored alongside value and always equals
normalize_key(value); admission compares values through it.
"""

import collections
import contextlib
import dataclasses
from dataclasses import dataclass
import datetime
import math
import pathlib
import re
import sqlite3
import threading
import time

from mira_memory.core import private_files, schema
from mira_memory.core.errors import BackendError, BusyError, DuplicateAliasError  # noqa: F401
from mira_memory.core.errors import InvalidInputError, NotFoundError, StoreError
from mira_memory.core.errors import TargetExistsError, UnsupportedDatabaseError  # noqa: F401
from mira_memory.core.normalize import display_form
from mira_memory.core.normalize import has_forbidden_characters
from mira_memory.core.normalize import NormalizationError
from mira_memory.core.normalize import normalize_key
from mira_memory.core.normalize import normalize_token
from mira_memory.core.schema import SCHEMA_STATEMENTS, SCHEMA_TABLES, SCHEMA_VERSION  # noqa: F401

MEMORY_KINDS = ('fact', 'preference', 'relationship', 'observation', 'event')
SOURCE_OPERATOR_STATEMENT = 'operator_statement'
SOURCE_CONSOLE = 'console'
STATUS_ACTIVE = 'active'
STATUS_RETIRED = 'retired'
MEDIA_TYPE_TEXT = 'text/plain'
ROLE_SUBJECT = 'subject'
STORAGE_INLINE = 'inline'
STORAGE_OBJECT = 'object'

# Recall accepts queries of at most 256 characters, so a longer name could
# never be looked up again.
NAME_MAX_LENGTH = 256

_ERROR_TEXT_LIMIT = 60
_TIMESTAMP_FORMAT = '%04d-%02d-%02dT%02d:%02d:%02dZ'

# Hot queries, exposed so tests can EXPLAIN exactly what runs.
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

# Forget: every query walks an index (tests EXPLAIN them).
ENTITY_MEMORY_IDS_SQL = (
    'SELECT DISTINCT memory_id FROM memory_links WHERE entity_id = :entity_id'
    ' ORDER BY memory_id')
MEMORY_LINK_COUNT_SQL = 'SELECT count(*) FROM memory_links WHERE memory_id = :memory_id'
MEMORY_PAYLOAD_COUNT_SQL = 'SELECT count(*) FROM payloads WHERE memory_id = :memory_id'
ENTITY_ALIAS_COUNT_SQL = 'SELECT count(*) FROM aliases WHERE entity_id = :entity_id'
DELETE_MEMORY_SQL = (
    'DELETE FROM receipts WHERE memory_id = :memory_id',
    'DELETE FROM payloads WHERE memory_id = :memory_id',
    'DELETE FROM memory_links WHERE memory_id = :memory_id',
    'DELETE FROM memories WHERE id = :memory_id',
)
DELETE_ENTITY_SQL = (
    'DELETE FROM aliases WHERE entity_id = :entity_id',
    'DELETE FROM entities WHERE id = :entity_id',
)
# A receipt's columns in table order (schema.py); Receipt has the same fields.
RECEIPT_COLUMNS = (
    'memory_id', 'utterance', 'episode_id', 'turn_id', 'kind', 'subject', 'predicate', 'value',
    'related_entity', 'related_role', 'evidence', 'robot_profile', 'rules_version',
    'rules_digest', 'rules_ran', 'subject_entity_id', 'related_entity_id', 'created_at')
RECEIPT_SQL = 'SELECT %s FROM receipts WHERE memory_id = :memory_id' % ', '.join(RECEIPT_COLUMNS)
INSERT_RECEIPT_SQL = 'INSERT INTO receipts (%s) VALUES (%s)' % (
    ', '.join(RECEIPT_COLUMNS), ', '.join('?' * len(RECEIPT_COLUMNS)))
# What memory verify judges: every active operator_statement memory, with its
# receipt when it has one (a LEFT JOIN on the receipt's primary key).
VERIFY_MEMORIES_SQL = (
    'SELECT m.id, m.kind, m.summary, m.predicate, m.value, m.source_label, %s'
    ' FROM memories AS m LEFT JOIN receipts AS r ON r.memory_id = m.id'
    " WHERE m.source_kind = 'operator_statement' AND m.status = 'active'"
    ' ORDER BY m.id' % ', '.join('r.' + column for column in RECEIPT_COLUMNS))
# Receipts of active memories made under other rules than (:version, :digest),
# and active operator_statement memories without a receipt.
RECEIPT_RULES_COUNTS_SQL = (
    'SELECT (SELECT count(*) FROM receipts AS r JOIN memories AS m ON m.id = r.memory_id'
    "  WHERE m.status = 'active' AND (r.rules_version <> :version OR r.rules_digest <> :digest)),"
    ' (SELECT count(*) FROM memories AS m'
    "  WHERE m.source_kind = 'operator_statement' AND m.status = 'active'"
    '  AND NOT EXISTS (SELECT 1 FROM receipts AS r WHERE r.memory_id = m.id))')
RETIRE_SQL = (
    "UPDATE memories SET status = 'retired', retired_at = :now, retired_reason = :reason"
    " WHERE id = :memory_id AND status = 'active'")

# A retirement reason is a short operator note, not a document.
REASON_MAX_LENGTH = 500
# How long forget waits for readers to leave the WAL before giving up on truncating it.
WAL_TRUNCATE_ATTEMPTS = 100
WAL_TRUNCATE_PAUSE_S = 0.01

# Entities whose last memory insert changed_since() remembers (about 100
# bytes each); older ones count as changed as late as the newest one dropped.
CHANGED_ENTITIES_MAX = 4096

_ENTITY_ID_PATTERN = re.compile(r'ENT([1-9][0-9]*)')
_MEMORY_ID_PATTERN = re.compile(r'MEM([1-9][0-9]*)')


def _excerpt(text):
    """Keep user text in error messages short and on one line."""
    text = ' '.join(repr(text).split())
    if len(text) > _ERROR_TEXT_LIMIT:
        return text[:_ERROR_TEXT_LIMIT - 3] + '...'
    return text


def format_entity_id(n):
    """Render an entity primary key as ENT<n>."""
    return 'ENT%d' % n


def format_memory_id(n):
    """Render a memory primary key as MEM<n>."""
    return 'MEM%d' % n


def _parse_id(text, pattern, label):
    match = pattern.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidInputError('not a valid %s id: %s' % (label, _excerpt(text)))
    return int(match.group(1))


def parse_entity_id(text):
    """Parse ENT<n> (n >= 1, no sign, no leading zero) into n."""
    return _parse_id(text, _ENTITY_ID_PATTERN, 'entity')


def parse_memory_id(text):
    """Parse MEM<n> (n >= 1, no sign, no leading zero) into n."""
    return _parse_id(text, _MEMORY_ID_PATTERN, 'memory')


@dataclass(frozen=True)
class Entity:
    """An entity with its aliases (display forms, insertion order)."""

    id: int  # noqa: A003 (public API field name)
    entity_type: str
    canonical_name: str
    aliases: tuple = ()


@dataclass(frozen=True)
class Link:
    """A memory's link to an entity under a role."""

    entity_id: int
    entity_name: str
    role: str


@dataclass(frozen=True)
class Payload:
    """A payload record; inline payloads carry text, object ones a reference."""

    id: int  # noqa: A003 (public API field name)
    storage: str
    media_type: str
    text: str | None
    object_ref: str | None
    sha256: str | None


@dataclass(frozen=True)
class Memory:
    """A stored memory; links are ordered by (entity_id, role)."""

    id: int  # noqa: A003 (public API field name)
    kind: str
    summary: str
    predicate: str | None
    value: str | None
    source_kind: str
    source_label: str
    confidence: float | None
    status: str
    created_at: str
    links: tuple = ()
    value_key: str | None = None
    retired_at: str | None = None
    retired_reason: str | None = None


@dataclass(frozen=True)
class Receipt:
    """
    What remember admitted a memory on (schema.py, table receipts).

    The operator's utterance as the node heard it, the turn's ids, the
    proposal as sent (related_entity and related_role None when absent), the
    robot profile the rules read, the rules that judged it (RULES_VERSION and
    the language data's digest) and their decision: which rules ran and the
    entity ids they resolved.
    """

    memory_id: int
    utterance: str
    episode_id: str
    turn_id: str
    kind: str
    subject: str
    predicate: str
    value: str
    related_entity: str | None
    related_role: str | None
    evidence: str
    robot_profile: str
    rules_version: str
    rules_digest: str
    rules_ran: str
    subject_entity_id: int
    related_entity_id: int | None
    created_at: str


@dataclass(frozen=True)
class ForgetPlan:
    """What one forget removes (or, before --yes, would remove)."""

    target: str  # ENT<n> or MEM<n>
    memory_ids: tuple
    alias_count: int
    link_count: int
    payload_count: int
    applied: bool


@dataclass(frozen=True)
class NewMemory:
    """A memory to write; links are (entity_id, role) pairs."""

    kind: str
    summary: str
    links: tuple = ()
    predicate: str | None = None
    value: str | None = None
    source_kind: str = SOURCE_CONSOLE
    source_label: str = ''
    confidence: float | None = None


@dataclass(frozen=True)
class _PreparedMemory:
    kind: str
    summary: str
    links: tuple
    predicate: str | None
    value: str | None
    value_key: str | None
    source_kind: str
    source_label: str
    confidence: float | None


@contextlib.contextmanager
def _backend_errors(operation):
    try:
        yield
    except sqlite3.Error as exc:
        raise BackendError('SQLite failed during %s: %s: %s'
                           % (operation, type(exc).__name__, exc)) from exc


def _normalized(function, text, field):
    if not isinstance(text, str):
        raise InvalidInputError('%s must be text' % field)
    try:
        return function(text)
    except NormalizationError as exc:
        raise InvalidInputError('%s: %s' % (field, exc)) from exc


def _name_forms(text, field):
    display = _normalized(display_form, text, field)
    if len(display) > NAME_MAX_LENGTH:
        raise InvalidInputError('%s is longer than %d characters' % (field, NAME_MAX_LENGTH))
    return display, normalize_key(display)


def _source_label(text):
    # A label may be empty; otherwise it is compared by its display form so
    # the writer and turn_memory agree on spacing and width variants.
    if not isinstance(text, str):
        raise InvalidInputError('source_label must be text')
    if has_forbidden_characters(text):
        raise InvalidInputError('source_label: text contains control characters')
    if not text.split():
        return ''
    return _normalized(display_form, text, 'source_label')


def _positive_id(value, field):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError('%s must be a positive integer id' % field)
    return value


def _limit(value):
    # SQLite reads a negative LIMIT as "no limit".
    if value is None:
        return -1
    return _positive_id(value, 'limit')


def _confidence(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError('confidence must be a number between 0.0 and 1.0')
    value = float(value)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError('confidence must be between 0.0 and 1.0')
    return value


def _prepare_memory(new, allow_runtime_source):
    if not isinstance(new, NewMemory):
        raise InvalidInputError('a memory to write must be a NewMemory')
    kind = _normalized(normalize_token, new.kind, 'kind')
    if kind not in MEMORY_KINDS:
        raise InvalidInputError('kind must be one of %s' % ', '.join(MEMORY_KINDS))
    source_kind = _normalized(normalize_token, new.source_kind, 'source_kind')
    if source_kind == SOURCE_OPERATOR_STATEMENT and not allow_runtime_source:
        raise InvalidInputError(
            'source_kind operator_statement is reserved for remember admission')
    value = value_key = None
    if new.value is not None:
        value = _normalized(display_form, new.value, 'value')
        value_key = normalize_key(value)
    predicate = None
    if new.predicate is not None:
        predicate = _normalized(normalize_token, new.predicate, 'predicate')
    try:
        pairs = tuple(new.links)
    except TypeError as exc:
        raise InvalidInputError('links must be (entity_id, role) pairs') from exc
    links = set()
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidInputError('links must be (entity_id, role) pairs')
        entity_id = _positive_id(pair[0], 'link entity id')
        links.add((entity_id, _normalized(normalize_token, pair[1], 'link role')))
    return _PreparedMemory(
        kind=kind,
        summary=_normalized(display_form, new.summary, 'summary'),
        links=tuple(sorted(links)),
        predicate=predicate,
        value=value,
        value_key=value_key,
        source_kind=source_kind,
        source_label=_source_label(new.source_label),
        confidence=_confidence(new.confidence),
    )


def _timestamp(clock):
    moment = clock()
    if not isinstance(moment, datetime.datetime) or moment.utcoffset() is None:
        raise BackendError('the store clock must return a timezone-aware datetime')
    utc = moment.astimezone(datetime.timezone.utc)
    return _TIMESTAMP_FORMAT % (
        utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)


def _default_clock():
    return datetime.datetime.now(datetime.timezone.utc)


def _load_entities(rows, alias_rows):
    aliases = {}
    for entity_id, alias in alias_rows:
        aliases.setdefault(entity_id, []).append(alias)
    return [Entity(row[0], row[1], row[2], tuple(aliases.get(row[0], ()))) for row in rows]


def _query_find_entities(conn, name, limit, with_aliases):
    _, key = _name_forms(name, 'name')
    params = {'key': key, 'limit': _limit(limit)}
    rows = conn.execute(FIND_ENTITIES_SQL, params).fetchall()
    alias_rows = conn.execute(FIND_ALIASES_SQL, params).fetchall() if with_aliases else ()
    return _load_entities(rows, alias_rows)


def _query_entity(conn, entity_id):
    params = {'entity_id': _positive_id(entity_id, 'entity id')}
    rows = conn.execute(ENTITY_SQL, params).fetchall()
    if not rows:
        raise NotFoundError('entity %s not found' % format_entity_id(entity_id))
    alias_rows = conn.execute(ENTITY_ALIASES_SQL, params).fetchall()
    return _load_entities(rows, alias_rows)[0]


def _query_memories(conn, ids_sql, params):
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


def _query_memory(conn, memory_id):
    params = {'memory_id': _positive_id(memory_id, 'memory id')}
    memories = _query_memories(conn, MEMORY_IDS_BY_ID_SQL, params)
    if not memories:
        raise NotFoundError('memory %s not found' % format_memory_id(memory_id))
    return memories[0]


def _query_newest_active(conn, entity_id, limit):
    params = {
        'entity_id': _positive_id(entity_id, 'entity id'),
        'limit': _positive_id(limit, 'limit') + 1,
    }
    memories = _query_memories(conn, NEWEST_ACTIVE_IDS_SQL, params)
    if len(memories) > limit:
        return memories[1:], True
    return memories, False


def _forget_plan(conn, target, memory_ids, alias_count, apply):
    links = payloads = 0
    for memory_id in memory_ids:
        params = {'memory_id': memory_id}
        links += conn.execute(MEMORY_LINK_COUNT_SQL, params).fetchone()[0]
        payloads += conn.execute(MEMORY_PAYLOAD_COUNT_SQL, params).fetchone()[0]
    return ForgetPlan(target=target, memory_ids=tuple(memory_ids), alias_count=alias_count,
                      link_count=links, payload_count=payloads, applied=apply)


def _delete_memories(conn, memory_ids):
    for memory_id in memory_ids:
        for statement in DELETE_MEMORY_SQL:
            conn.execute(statement, {'memory_id': memory_id})


def _query_subject_predicate(conn, ids_sql, subject_id, predicate):
    params = {
        'entity_id': _positive_id(subject_id, 'subject id'),
        'predicate': _normalized(normalize_token, predicate, 'predicate'),
    }
    return _query_memories(conn, ids_sql, params)


def _insert_memory(conn, new, now, allow_runtime_source):
    prepared = _prepare_memory(new, allow_runtime_source)
    for entity_id in sorted({entity_id for entity_id, _ in prepared.links}):
        if conn.execute(ENTITY_SQL, {'entity_id': entity_id}).fetchone() is None:
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
    return _query_memory(conn, memory_id)


def _set_pragma(conn, name, value, expected):
    conn.execute('PRAGMA %s = %s' % (name, value)).fetchall()
    actual = conn.execute('PRAGMA %s' % name).fetchone()[0]
    if actual != expected:
        raise BackendError('PRAGMA %s did not take effect (wanted %r, got %r)'
                           % (name, expected, actual))


class _Reads:
    """Connection lifecycle and the read operations shared by store and reader."""

    def __init__(self, conn, path):
        self._conn = conn
        self._lock = threading.RLock()
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
        return self._conn is None

    def close(self):
        """Close the connection; closing again is a no-op."""
        with self._lock:
            if self._conn is None:
                return
            conn, self._conn = self._conn, None
            with _backend_errors('close'):
                conn.close()

    def _require_open(self):
        if self._conn is None:
            raise StoreError('store is closed')
        return self._conn

    @contextlib.contextmanager
    def _snapshot(self, operation):
        """Run several reads against one consistent snapshot."""
        with self._lock:
            conn = self._require_open()
            if conn.in_transaction:
                # Inside an open write transaction: that snapshot already holds.
                with _backend_errors(operation):
                    yield conn
                return
            with _backend_errors(operation):
                conn.execute('BEGIN')
                try:
                    yield conn
                finally:
                    # Reads only: ending the snapshot either way is safe.
                    conn.execute('COMMIT')

    def find_entities(self, name, *, limit=None, with_aliases=True):
        """Return entities whose canonical name or alias key equals name's key."""
        with self._snapshot('find_entities') as conn:
            return _query_find_entities(conn, name, limit, with_aliases)

    def get_entity(self, entity_id):
        """Return one entity with its aliases."""
        with self._snapshot('get_entity') as conn:
            return _query_entity(conn, entity_id)

    def get_memory(self, memory_id):
        """Return (memory with links, payloads)."""
        with self._snapshot('get_memory') as conn:
            memory = _query_memory(conn, memory_id)
            payloads = tuple(
                Payload(*row)
                for row in conn.execute(PAYLOADS_SQL, {'memory_id': memory.id}))
            return memory, payloads

    def get_receipt(self, memory_id):
        """Return the memory's Receipt, or None when it has none."""
        params = {'memory_id': _positive_id(memory_id, 'memory id')}
        with self._snapshot('get_receipt') as conn:
            row = conn.execute(RECEIPT_SQL, params).fetchone()
        return None if row is None else Receipt(*row)

    def receipt_rules_counts(self, rules_version, rules_digest):
        """
        Return (receipts of other rules, memories without a receipt), active memories only.

        Other rules: a receipt whose rules version or digest is not the
        given one. Without a receipt: operator_statement memories made
        before schema version 3 (or imported without one).
        """
        with self._snapshot('receipt_rules_counts') as conn:
            return tuple(conn.execute(RECEIPT_RULES_COUNTS_SQL, {
                'version': rules_version, 'digest': rules_digest}).fetchone())

    def newest_active_memories(self, entity_id, limit):
        """
        Return the `limit` newest active memories linked to the entity.

        They come in ascending id order, with truncated=True when older
        active memories were left out.
        """
        with self._snapshot('newest_active_memories') as conn:
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
        with self._snapshot('find_with_newest_memories') as conn:
            entities = _query_find_entities(conn, name, probe, with_aliases)
            shown = entities if entity_limit is None else entities[:entity_limit]
            views = [
                (entity, *_query_newest_active(conn, entity.id, memory_limit))
                for entity in shown]
        return views, len(shown) < len(entities)

    def counts(self):
        """Return row counts of every table plus active memories."""
        with self._snapshot('counts') as conn:
            row = conn.execute(COUNTS_SQL).fetchone()
        return dict(zip(
            ('entities', 'aliases', 'memories', 'active_memories', 'links', 'payloads'), row))


class MemoryReader(_Reads):
    """A second, read-only connection to a store's file (used by recall)."""

    @classmethod
    def _connect(cls, path):
        try:
            conn = sqlite3.connect(path.as_uri() + '?mode=ro', uri=True,
                                   isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise BackendError('cannot open read-only connection: %s' % exc) from exc
        try:
            with _backend_errors('open_reader'):
                _set_pragma(conn, 'query_only', 1, 1)
                _set_pragma(conn, 'foreign_keys', 'ON', 1)
        except BaseException:
            conn.close()
            raise
        return cls(conn, path)


class MemoryStore(_Reads):
    """The owning read-write connection to the memory database."""

    def __init__(self, conn, path, clock):
        super().__init__(conn, path)
        self._clock = clock
        self._readers = []
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
            conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        except OSError as exc:
            raise BackendError('cannot create database: %s' % exc) from exc
        except sqlite3.Error as exc:
            raise BackendError('cannot open database: %s' % exc) from exc
        store = cls(conn, path, clock or _default_clock)
        try:
            store._initialize()
        except BaseException:
            store.close()
            raise
        return store

    def _initialize(self):
        conn = self._conn
        with _backend_errors('open'):
            _set_pragma(conn, 'foreign_keys', 'ON', 1)
            _set_pragma(conn, 'journal_mode', 'WAL', 'wal')
            _set_pragma(conn, 'synchronous', 'FULL', 2)
            # Forget must leave no copy of the text in the file: freed
            # cells and pages are overwritten with zeros.
            _set_pragma(conn, 'secure_delete', 'ON', 1)
        with self._atomic() as conn:
            if schema.schema_state(conn, self.path) == 'empty':
                schema.create_schema(conn)
            self.schema_version = conn.execute('PRAGMA user_version').fetchone()[0]

    def open_reader(self):
        """Open a second connection to the same file that cannot write."""
        with self._lock:
            self._require_open()
            reader = MemoryReader._connect(self.path)
            self._readers = [known for known in self._readers if not known.closed]
            self._readers.append(reader)
            return reader

    def close(self):
        """Close this store and every reader it opened; closing again is a no-op."""
        with self._lock:
            readers, self._readers = self._readers, []
            for reader in readers:
                reader.close()
            super().close()

    @contextlib.contextmanager
    def _atomic(self, *, tracked=False):
        """
        Run one BEGIN IMMEDIATE transaction; roll back on any exception.

        tracked: the transaction's only writes are memory inserts, which
        report their linked entities (_touch); otherwise it is recorded as
        changing anything. The record is made however the transaction ends
        (a rolled-back one only costs a cache a refill).
        """
        with self._lock:
            conn = self._require_open()
            if conn.in_transaction:
                raise StoreError('a write transaction is already open on this store')
            self._touched = set() if tracked else None
            try:
                with _backend_errors('begin'):
                    conn.execute('BEGIN IMMEDIATE')
                try:
                    with _backend_errors('write'):
                        yield conn
                    with _backend_errors('commit'):
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

    def _touch(self, memory):
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

    def _now(self):
        return _timestamp(self._clock)

    def add_entity(self, entity_type, canonical_name):
        """Create an entity; its type is a token, its name a display form."""
        entity_type = _normalized(normalize_token, entity_type, 'entity_type')
        name, key = _name_forms(canonical_name, 'canonical name')
        now = self._now()
        with self._atomic() as conn:
            cursor = conn.execute(
                'INSERT INTO entities (entity_type, canonical_name, name_key, created_at)'
                ' VALUES (?, ?, ?, ?)', (entity_type, name, key, now))
            return _query_entity(conn, cursor.lastrowid)

    def add_alias(self, entity_id, alias):
        """Add an alias to an entity and return the entity with all aliases."""
        entity_id = _positive_id(entity_id, 'entity id')
        alias, key = _name_forms(alias, 'alias')
        now = self._now()
        with self._atomic() as conn:
            row = conn.execute(
                'SELECT name_key FROM entities WHERE id = ?', (entity_id,)).fetchone()
            if row is None:
                raise NotFoundError('entity %s not found' % format_entity_id(entity_id))
            duplicate = row[0] == key or conn.execute(
                'SELECT 1 FROM aliases WHERE entity_id = ? AND alias_key = ?',
                (entity_id, key)).fetchone() is not None
            if duplicate:
                raise DuplicateAliasError(
                    'alias %s already names %s' % (_excerpt(alias), format_entity_id(entity_id)))
            conn.execute(
                'INSERT INTO aliases (entity_id, alias, alias_key, created_at)'
                ' VALUES (?, ?, ?, ?)', (entity_id, alias, key, now))
            return _query_entity(conn, entity_id)

    def add_memory(self, new):
        """
        Write a manual memory with its links and one inline text/plain payload.

        source_kind operator_statement is reserved for remember admission.
        """
        now = self._now()
        with self._atomic(tracked=True) as conn:
            memory = _insert_memory(conn, new, now, allow_runtime_source=False)
            self._touch(memory)
            return memory

    def retire_memory(self, memory_id, reason):
        """
        Mark an active memory retired, with the time and the operator's reason.

        Nothing is deleted: show still finds it; recall, find, list and
        admission's duplicate and conflict slots see active memories only.
        """
        memory_id = _positive_id(memory_id, 'memory id')
        reason = _normalized(display_form, reason, 'reason')
        if len(reason) > REASON_MAX_LENGTH:
            raise InvalidInputError('reason is longer than %d characters' % REASON_MAX_LENGTH)
        now = self._now()
        with self._atomic() as conn:
            memory = _query_memory(conn, memory_id)
            if memory.status != STATUS_ACTIVE:
                raise InvalidInputError('%s is already %s' % (
                    format_memory_id(memory_id), memory.status))
            conn.execute(RETIRE_SQL, {'now': now, 'reason': reason, 'memory_id': memory_id})
            return _query_memory(conn, memory_id)

    def forget_memory(self, memory_id, *, apply):
        """
        Remove one memory with its links and payloads (apply=False: only report).

        The removal is one transaction; then the WAL is checkpointed and
        truncated, so with secure_delete no copy of the text stays in any
        database file. Returns the ForgetPlan.
        """
        memory_id = _positive_id(memory_id, 'memory id')
        with self._atomic() as conn:
            if conn.execute(MEMORY_IDS_BY_ID_SQL, {'memory_id': memory_id}).fetchone() is None:
                raise NotFoundError('memory %s not found' % format_memory_id(memory_id))
            plan = _forget_plan(conn, format_memory_id(memory_id), (memory_id,), 0, apply)
            if apply:
                _delete_memories(conn, plan.memory_ids)
        if apply:
            self._truncate_wal()
        return plan

    def forget_entity(self, entity_id, *, apply):
        """
        Remove an entity, its aliases and every memory linked to it in any role.

        Those memories go with all their links (to other entities too) and
        payloads; one transaction, then the WAL is truncated as in
        forget_memory. apply=False only reports. Returns the ForgetPlan.
        """
        entity_id = _positive_id(entity_id, 'entity id')
        params = {'entity_id': entity_id}
        with self._atomic() as conn:
            if conn.execute(ENTITY_SQL, params).fetchone() is None:
                raise NotFoundError('entity %s not found' % format_entity_id(entity_id))
            memory_ids = tuple(row[0] for row in conn.execute(ENTITY_MEMORY_IDS_SQL, params))
            aliases = conn.execute(ENTITY_ALIAS_COUNT_SQL, params).fetchone()[0]
            plan = _forget_plan(conn, format_entity_id(entity_id), memory_ids, aliases, apply)
            if apply:
                _delete_memories(conn, memory_ids)
                for statement in DELETE_ENTITY_SQL:
                    conn.execute(statement, params)
        if apply:
            self._truncate_wal()
        return plan

    def _truncate_wal(self):
        """
        Copy the WAL into the database and cut it to zero bytes.

        TRUNCATE needs every reader out of the WAL. The node's own reader
        only reads inside a callback on the same executor thread, so it is
        idle here; a reader elsewhere (another process) gets a short grace.
        """
        with self._lock:
            conn = self._require_open()
            with _backend_errors('wal_checkpoint'):
                for _ in range(WAL_TRUNCATE_ATTEMPTS):
                    busy, _, _ = conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()
                    if not busy:
                        return
                    time.sleep(WAL_TRUNCATE_PAUSE_S)
        raise BusyError('the rows are removed, but a reader kept the write-ahead log'
                        ' from being truncated; run the forget again to retry')

    def write(self):
        """Return a context manager holding one BEGIN IMMEDIATE transaction."""
        return WriteTransaction(self)


class WriteTransaction:
    """
    One admission write transaction.

    Reads inside see the same snapshot the insert is made against; leaving
    the block commits, and any exception rolls everything back.
    """

    def __init__(self, store):
        self._store = store
        self._atomic = None
        self._conn = None

    def __enter__(self):
        if self._atomic is not None:
            raise StoreError('a WriteTransaction can be entered only once')
        self._atomic = self._store._atomic(tracked=True)
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
        with _backend_errors('find_entities'):
            return _query_find_entities(conn, name, limit, with_aliases=False)

    def slot_memories(self, subject_id, predicate):
        """Return active fact/preference memories in the subject's predicate slot."""
        conn = self._require_active()
        with _backend_errors('slot_memories'):
            return _query_subject_predicate(conn, SLOT_MEMORY_IDS_SQL, subject_id, predicate)

    def relationship_memories(self, subject_id, predicate):
        """Return active relationship memories of the subject with this predicate."""
        conn = self._require_active()
        with _backend_errors('relationship_memories'):
            return _query_subject_predicate(
                conn, RELATIONSHIP_MEMORY_IDS_SQL, subject_id, predicate)

    def turn_memory(self, source_label):
        """Return the operator_statement memory written for this turn label, if any."""
        conn = self._require_active()
        params = {'source_label': _source_label(source_label)}
        with _backend_errors('turn_memory'):
            memories = _query_memories(conn, TURN_MEMORY_IDS_SQL, params)
        return memories[0] if memories else None

    def insert_memory(self, new, *, allow_runtime_source=False):
        """Insert a memory, its links and its single inline text/plain payload."""
        conn = self._require_active()
        now = self._store._now()
        with _backend_errors('insert_memory'):
            conn.execute('SAVEPOINT insert_memory')
            try:
                memory = _insert_memory(conn, new, now, allow_runtime_source)
            except BaseException:
                # A caught failure must not leave half a memory in the transaction.
                conn.execute('ROLLBACK TO insert_memory')
                conn.execute('RELEASE insert_memory')
                raise
            conn.execute('RELEASE insert_memory')
        self._store._touch(memory)
        return memory

    def insert_receipt(self, receipt):
        """
        Insert the Receipt of a memory this transaction wrote (its created_at is set here).

        Admission calls it right after insert_memory, in the same
        transaction: the memory and its receipt commit together or not at all.
        """
        conn = self._require_active()
        row = dataclasses.astuple(dataclasses.replace(receipt, created_at=self._store._now()))
        with _backend_errors('insert_receipt'):
            conn.execute(INSERT_RECEIPT_SQL, row)
