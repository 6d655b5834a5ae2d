# SPDX-License-Identifier: Apache-2.0
"""
The pending table: refused proposals waiting for a person's review, as SQL.

Like reads.py, every function takes an open sqlite3 connection inside the
caller's transaction (the node's owner connection, or a read snapshot for
the queries), so a kept refusal, an accept and a forget each change the
queue in the same transaction as everything else they write. The queue is
bounded (core/review/keep.py keeps nothing new once load() says it is full;
nothing waiting is ever removed to make room) and expiring (items created
before the caller's cutoff leave at expire()), so every scan here reads a
bounded number of rows. An item that leaves the queue for any reason leaves a
`pending_closed` row behind (outcome, memory, when, by whom; none of its
text), kept while it is younger than the cutoff and about CLOSED_MAX of
them (trim_closed), so a late accept is told what became of it. core/review decides what
to keep and what an accept may write; this module only stores.
"""

from mira_memory.core.admission import name_spans
from mira_memory.core.admission.normalize import NormalizationError, normalize_key
from mira_memory.core.store.records import ClosedPending, PENDING_COLUMNS, PendingItem

# Closed records kept at most (each about 60 bytes), besides the age limit.
CLOSED_MAX = 1000
# insert() trims the closed records on every TRIM_EVERY-th item only (and
# expire() on every call): each trim reads them all, and a kept refusal must
# stay cheap (bench/README.md, "Review queue"). Between two trims at most
# TRIM_EVERY more are kept.
TRIM_EVERY = 64
# Who closes an item when no person does.
BY_EXPIRY = 'expiry'
BY_FORGET = 'memory forget'

# Second-person subjects denote the robot profile (store_rules.SECOND_PERSON_SUBJECTS).
_SECOND_PERSON = frozenset(('you', 'your', 'yours', 'yourself'))

INSERT_SQL = (
    'INSERT INTO pending (%s) VALUES (%s) ON CONFLICT (request_digest) DO NOTHING' % (
        ', '.join(PENDING_COLUMNS[1:]), ', '.join('?' * (len(PENDING_COLUMNS) - 1))))
ITEM_SQL = 'SELECT %s FROM pending WHERE id = ?' % ', '.join(PENDING_COLUMNS)
ID_BY_DIGEST_SQL = 'SELECT id, created_at FROM pending WHERE request_digest = ?'
ITEMS_SQL = 'SELECT %s FROM pending ORDER BY id LIMIT ?' % ', '.join(PENDING_COLUMNS)
# What the review intake needs to decide whether one more item fits (core/review/keep.py).
LOAD_SQL = (
    'SELECT (SELECT count(*) FROM pending), (SELECT count(*) FROM pending WHERE episode_id = ?),'
    ' EXISTS (SELECT 1 FROM pending WHERE request_digest = ?)')
EXPIRED_SQL = 'SELECT id FROM pending WHERE created_at < ? ORDER BY created_at, id'
DELETE_SQL = 'DELETE FROM pending WHERE id = ?'
CLOSE_SQL = (
    'INSERT OR REPLACE INTO pending_closed (pending_id, outcome, memory_id, closed_at, closed_by)'
    ' VALUES (?, ?, ?, ?, ?)')
CLOSED_SQL = (
    'SELECT pending_id, outcome, memory_id, closed_at, closed_by FROM pending_closed'
    ' WHERE pending_id = ?')
TRIM_CLOSED_SQL = (
    'DELETE FROM pending_closed WHERE closed_at < :cutoff OR pending_id IN ('
    ' SELECT pending_id FROM pending_closed ORDER BY pending_id DESC LIMIT -1 OFFSET :keep)')
COUNTS_SQL = (
    'SELECT (SELECT count(*) FROM pending), dropped, expired FROM pending_counts WHERE id = 1')
ADD_COUNTS_SQL = (
    'UPDATE pending_counts SET dropped = dropped + :dropped, expired = expired + :expired'
    ' WHERE id = 1')
# What forget matches: every item's names and the memories it names (bounded by the queue).
NAMES_SQL = (
    'SELECT id, subject, related_entity, robot_profile, evidence, conflicting_memory_ids,'
    ' utterance FROM pending ORDER BY id')


def item_from_row(row):
    """Return the PendingItem of a row in PENDING_COLUMNS order."""
    fields = dict(zip(PENDING_COLUMNS, row))
    fields['conflicting_memory_ids'] = memory_ids_from_text(fields['conflicting_memory_ids'])
    return PendingItem(**fields)


def memory_ids_from_text(text):
    """Return the memory ids of a conflicting_memory_ids column ('5 7')."""
    return tuple(int(part) for part in text.split())


def memory_ids_text(memory_ids):
    """Return the conflicting_memory_ids column of memory ids."""
    return ' '.join(str(memory_id) for memory_id in memory_ids)


def insert(conn, values, *, now, cutoff):
    """
    Keep one refused proposal; return (pending id, True when new).

    values: the PENDING_COLUMNS after id, in order. The same request
    (request_digest) already waiting keeps its id and is not kept twice,
    unless it was created before cutoff: then it is closed as expired and the
    request kept anew. Nothing waiting is ever removed to make room: the
    caller decided that the item fits (load(), core/review/keep.py). Other
    expired items are left to expire(), so a keep reads no more than it must.
    """
    cursor = conn.execute(INSERT_SQL, values)
    if cursor.rowcount == 0:
        pending_id, created_at = conn.execute(ID_BY_DIGEST_SQL, (values[0],)).fetchone()
        if created_at >= cutoff:
            return pending_id, False
        close(conn, pending_id, 'expired', None, now=now, by=BY_EXPIRY)
        conn.execute(ADD_COUNTS_SQL, {'dropped': 0, 'expired': 1})
        cursor = conn.execute(INSERT_SQL, values)
    pending_id = cursor.lastrowid
    if pending_id % TRIM_EVERY == 0:
        trim_closed(conn, cutoff)
    return pending_id, True


def load(conn, episode_id, request_digest):
    """Return (items waiting, of them of episode_id, True when request_digest waits)."""
    waiting, of_episode, known = conn.execute(LOAD_SQL, (episode_id, request_digest)).fetchone()
    return waiting, of_episode, bool(known)


def trim_closed(conn, cutoff):
    """Forget the closed records older than cutoff, and all but the newest CLOSED_MAX."""
    conn.execute(TRIM_CLOSED_SQL, {'cutoff': cutoff, 'keep': CLOSED_MAX})


def expire(conn, *, now, cutoff):
    """Close every item created before cutoff as expired; return how many."""
    expired = [row[0] for row in conn.execute(EXPIRED_SQL, (cutoff,))]
    for pending_id in expired:
        close(conn, pending_id, 'expired', None, now=now, by=BY_EXPIRY)
    if expired:
        conn.execute(ADD_COUNTS_SQL, {'dropped': 0, 'expired': len(expired)})
        trim_closed(conn, cutoff)
    return len(expired)


def has_expired(conn, cutoff):
    """Return True when an item created before cutoff is still in the queue."""
    return conn.execute(EXPIRED_SQL + ' LIMIT 1', (cutoff,)).fetchone() is not None


def close(conn, pending_id, outcome, memory_id, *, now, by):
    """Remove an item from the queue and record what became of it."""
    conn.execute(DELETE_SQL, (pending_id,))
    conn.execute(CLOSE_SQL, (pending_id, outcome, memory_id, now, by))


def item(conn, pending_id):
    """Return the PendingItem with this id, or None."""
    row = conn.execute(ITEM_SQL, (pending_id,)).fetchone()
    return None if row is None else item_from_row(row)


def closed(conn, pending_id):
    """Return the ClosedPending of an item that left the queue, or None."""
    row = conn.execute(CLOSED_SQL, (pending_id,)).fetchone()
    return None if row is None else ClosedPending(*row)


def items(conn, limit):
    """Return at most limit waiting items, oldest first."""
    return [item_from_row(row) for row in conn.execute(ITEMS_SQL, (limit,))]


def counts(conn):
    """Return (items waiting, dropped so far, expired so far)."""
    return tuple(conn.execute(COUNTS_SQL).fetchone())


def _key(text):
    try:
        return normalize_key(text)
    except (NormalizationError, TypeError):
        return None


def naming(conn, *, names=(), memory_ids=(), summary_keys=()):
    """
    Return the ids of the waiting items that name an entity or a memory.

    An item names an entity when its subject (for you/your/yours/yourself,
    the robot profile it was said to) or its related entity is one of names
    (the entity's canonical name and aliases), or when its utterance says one
    of them, as admission finds a subject in the evidence (name_spans.names:
    whole words after normalization, or a genitive). It names a memory when
    it conflicts with one of memory_ids, or when its evidence is one of
    summary_keys (the same words as a memory being forgotten).
    """
    name_keys = {_key(name) for name in names} - {None}
    summary_keys, memory_ids = set(summary_keys), set(memory_ids)
    found = []
    for (pending_id, subject, related, robot, evidence, conflicting,
         utterance) in conn.execute(NAMES_SQL):
        subject_key = _key(subject)
        if subject_key in _SECOND_PERSON:
            subject_key = _key(robot)
        keys = {subject_key, _key(related) if related else None} - {None}
        if (keys & name_keys or _key(evidence) in summary_keys
                or memory_ids.intersection(memory_ids_from_text(conflicting))
                or any(name_spans.names(name, utterance) for name in names)):
            found.append(pending_id)
    return tuple(found)
