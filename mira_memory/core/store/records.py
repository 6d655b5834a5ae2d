# SPDX-License-Identifier: Apache-2.0
"""
What a stored record is: its types, its ids, and the rules for a valid field.

The store's reads and writes, archive's import and verify all describe rows
with these types and check values with these rules, so they live apart from
any connection: a module that only needs to know what a memory looks like
(recall, admission) imports no SQL.

Integer primary keys render as ENT<n> / MEM<n>. Names and aliases resolve
only by exact normalized keys (see normalize.py); Memory.value_key is stored
alongside value and always equals normalize_key(value); admission compares
values through it.
"""

from dataclasses import dataclass
import math
import re

from mira_memory.core.admission.normalize import display_form, has_forbidden_characters
from mira_memory.core.admission.normalize import NormalizationError, normalize_key, normalize_token
from mira_memory.core.errors import InvalidInputError

MEMORY_KINDS = ('fact', 'preference', 'relationship', 'observation', 'event')
SOURCE_OPERATOR_STATEMENT = 'operator_statement'
# The operator's statement, refused by the rules and accepted by a person at
# review (core/review); its receipt names the person and the refusal.
SOURCE_SUPERVISED_STATEMENT = 'supervised_statement'
# Only the runtime writes these (remember, review, archive's import): never `memory add`.
RUNTIME_SOURCES = {
    SOURCE_OPERATOR_STATEMENT: 'remember admission',
    SOURCE_SUPERVISED_STATEMENT: 'supervised review',
}
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

_ENTITY_ID_PATTERN = re.compile(r'ENT([1-9][0-9]*)')
_MEMORY_ID_PATTERN = re.compile(r'MEM([1-9][0-9]*)')
_PENDING_ID_PATTERN = re.compile(r'P([1-9][0-9]*)')

# The review columns of a receipt (schema version 4): NULL unless a person accepted it.
REVIEW_COLUMNS = (
    'review_action', 'reviewed_by', 'pending_id', 'refused_at', 'refused_reason',
    'refused_rule', 'refused_explanation')
# A receipt's columns in table order (schema.py); Receipt has the same fields.
RECEIPT_COLUMNS = (
    'memory_id', 'utterance', 'episode_id', 'turn_id', 'kind', 'subject', 'predicate', 'value',
    'related_entity', 'related_role', 'evidence', 'robot_profile', 'rules_version',
    'rules_digest', 'rules_ran', 'subject_entity_id', 'related_entity_id', 'created_at',
    *REVIEW_COLUMNS)
# A pending item's columns in table order (schema.py); PendingItem has the same fields.
PENDING_COLUMNS = (
    'id', 'request_digest', 'created_at', 'episode_id', 'turn_id', 'utterance', 'kind',
    'subject', 'predicate', 'value', 'related_entity', 'related_role', 'evidence',
    'robot_profile', 'reason', 'rule', 'explanation', 'conflicting_memory_ids',
    'rules_version', 'rules_digest')


def excerpt(text):
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
        raise InvalidInputError('not a valid %s id: %s' % (label, excerpt(text)))
    return int(match.group(1))


def parse_entity_id(text):
    """Parse ENT<n> (n >= 1, no sign, no leading zero) into n."""
    return _parse_id(text, _ENTITY_ID_PATTERN, 'entity')


def parse_memory_id(text):
    """Parse MEM<n> (n >= 1, no sign, no leading zero) into n."""
    return _parse_id(text, _MEMORY_ID_PATTERN, 'memory')


def format_pending_id(n):
    """Render a pending item's primary key as P<n>."""
    return 'P%d' % n


def parse_pending_id(text):
    """Parse P<n> (n >= 1, no sign, no leading zero) into n."""
    return _parse_id(text, _PENDING_ID_PATTERN, 'pending item')


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
    # A memory a person accepted at review (source supervised_statement):
    # how (schema.REVIEW_ACTIONS), by whom, which pending item, and when and
    # why the rules had refused it. All None for a memory the rules admitted.
    review_action: str | None = None
    reviewed_by: str | None = None
    pending_id: int | None = None
    refused_at: str | None = None
    refused_reason: str | None = None
    refused_rule: str | None = None
    refused_explanation: str | None = None


@dataclass(frozen=True)
class PendingItem:
    """
    A refused proposal kept for review (schema.py, table pending).

    What the rules read and what they answered: the operator turn as heard,
    the proposal as sent (related fields None when absent), the robot
    profile, the refusal (reason, rule number, explanation, the conflicting
    memory ids) and the rules that refused it. request_digest identifies the
    utterance and proposal (the same one is kept once).
    """

    id: int  # noqa: A003 (public API field name)
    request_digest: str
    created_at: str
    episode_id: str
    turn_id: str
    utterance: str
    kind: str
    subject: str
    predicate: str
    value: str
    related_entity: str | None
    related_role: str | None
    evidence: str
    robot_profile: str
    reason: str
    rule: str
    explanation: str
    conflicting_memory_ids: tuple
    rules_version: str
    rules_digest: str


@dataclass(frozen=True)
class ClosedPending:
    """What became of a pending item that left the queue (no text of it is kept)."""

    pending_id: int
    outcome: str  # schema.CLOSED_OUTCOMES
    memory_id: int | None  # accepted, superseded: the memory written (or already stored)
    closed_at: str
    closed_by: str


@dataclass(frozen=True)
class ForgetPlan:
    """What one forget removes (or, before --yes, would remove)."""

    target: str  # ENT<n> or MEM<n>
    memory_ids: tuple
    alias_count: int
    link_count: int
    payload_count: int
    applied: bool
    # Pending items that name the entity or memory (core/store/pending.py).
    pending_ids: tuple = ()


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
class PreparedMemory:
    """A NewMemory checked and in the normal forms the store writes (prepare_memory)."""

    kind: str
    summary: str
    links: tuple
    predicate: str | None
    value: str | None
    value_key: str | None
    source_kind: str
    source_label: str
    confidence: float | None


def normalized(function, text, field):
    """Return function(text) (a normalize.py form); anything else is InvalidInputError."""
    if not isinstance(text, str):
        raise InvalidInputError('%s must be text' % field)
    try:
        return function(text)
    except NormalizationError as exc:
        raise InvalidInputError('%s: %s' % (field, exc)) from exc


def name_forms(text, field):
    """Return (display form, key) of a canonical name or alias."""
    display = normalized(display_form, text, field)
    if len(display) > NAME_MAX_LENGTH:
        raise InvalidInputError('%s is longer than %d characters' % (field, NAME_MAX_LENGTH))
    return display, normalize_key(display)


def stored_source_label(text):
    """Return the form a memory's source label is stored and looked up in."""
    # A label may be empty; otherwise it is compared by its display form so
    # the writer and turn_memory agree on spacing and width variants.
    if not isinstance(text, str):
        raise InvalidInputError('source_label must be text')
    if has_forbidden_characters(text):
        raise InvalidInputError('source_label: text contains control characters')
    if not text.split():
        return ''
    return normalized(display_form, text, 'source_label')


def positive_id(value, field):
    """Return value when it is an int id (>= 1, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError('%s must be a positive integer id' % field)
    return value


def sql_limit(value):
    """Return a LIMIT parameter: a positive int, or -1 for None (no limit)."""
    # SQLite reads a negative LIMIT as "no limit".
    if value is None:
        return -1
    return positive_id(value, 'limit')


def _confidence(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError('confidence must be a number between 0.0 and 1.0')
    value = float(value)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError('confidence must be between 0.0 and 1.0')
    return value


def prepare_memory(new, allow_runtime_source):
    """
    Check a NewMemory and return it as the PreparedMemory the store would write.

    The runtime's source kinds (operator_statement, supervised_statement)
    are refused unless allow_runtime_source (remember admission, review and
    archive's import).
    """
    if not isinstance(new, NewMemory):
        raise InvalidInputError('a memory to write must be a NewMemory')
    kind = normalized(normalize_token, new.kind, 'kind')
    if kind not in MEMORY_KINDS:
        raise InvalidInputError('kind must be one of %s' % ', '.join(MEMORY_KINDS))
    source_kind = normalized(normalize_token, new.source_kind, 'source_kind')
    if source_kind in RUNTIME_SOURCES and not allow_runtime_source:
        raise InvalidInputError(
            'source_kind %s is reserved for %s' % (source_kind, RUNTIME_SOURCES[source_kind]))
    value = value_key = None
    if new.value is not None:
        value = normalized(display_form, new.value, 'value')
        value_key = normalize_key(value)
    predicate = None
    if new.predicate is not None:
        predicate = normalized(normalize_token, new.predicate, 'predicate')
    try:
        pairs = tuple(new.links)
    except TypeError as exc:
        raise InvalidInputError('links must be (entity_id, role) pairs') from exc
    links = set()
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidInputError('links must be (entity_id, role) pairs')
        entity_id = positive_id(pair[0], 'link entity id')
        links.add((entity_id, normalized(normalize_token, pair[1], 'link role')))
    return PreparedMemory(
        kind=kind,
        summary=normalized(display_form, new.summary, 'summary'),
        links=tuple(sorted(links)),
        predicate=predicate,
        value=value,
        value_key=value_key,
        source_kind=source_kind,
        source_label=stored_source_label(new.source_label),
        confidence=_confidence(new.confidence),
    )
