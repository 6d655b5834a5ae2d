# SPDX-License-Identifier: Apache-2.0
"""
The shapes of an export's lines, as pydantic models: what import checks first.

Exactly the export's fields, each of its JSON type, ids positive integers
that SQLite can hold (v1 API, core/pydantic_compat.py). They check the shape only; the store's
own rules (normal forms, references, order) are checked by archive's
importer, and SQLite's CHECK constraints stay the last word on formats
(created_at). Only import loads this module: the memory node, which backs
up and exports but never imports, does not pay pydantic's import (about
7 MB of resident memory and 80 ms of start-up).
"""

from typing import Any, Dict, Literal, Optional

from mira_memory.core.archive.export_layout import COUNT_NAMES, EXPORT_FORMAT, RECORD_FIELDS
from mira_memory.core.pydantic_compat import Field, Model, one_line, root_validator
from mira_memory.core.pydantic_compat import StrictInt, StrictStr, ValidationError, validator
from mira_memory.core.store import schema


class ShapeError(ValueError):
    """A line does not have the shape of its record type; the message says how."""


# SQLite's largest integer: the largest id or sequence a store can hold.
MAX_INTEGER = 2**63 - 1


def _positive(cls, value):
    if value is not None and not 1 <= value <= MAX_INTEGER:
        raise ValueError('must be a positive integer')
    return value


def _text(cls, value):
    if value is not None and not value.strip():
        raise ValueError('must be non-empty text')
    return value


_RECORD_PHRASES = {'type_error.integer': 'must be a positive integer',
                   'type_error.str': 'must be text',
                   'type_error.none.not_allowed': 'must not be null'}


class _EntityRecord(Model):
    type: Literal['entity']  # noqa: A003
    id: StrictInt  # noqa: A003
    entity_type: StrictStr
    canonical_name: StrictStr
    created_at: StrictStr

    _ids = validator('id', allow_reuse=True)(_positive)


class _AliasRecord(Model):
    type: Literal['alias']  # noqa: A003
    id: StrictInt  # noqa: A003
    entity_id: StrictInt
    alias: StrictStr
    created_at: StrictStr

    _ids = validator('id', 'entity_id', allow_reuse=True)(_positive)


class _MemoryRecord(Model):
    type: Literal['memory']  # noqa: A003
    id: StrictInt  # noqa: A003
    kind: StrictStr
    summary: StrictStr
    predicate: Optional[StrictStr] = Field(...)
    value: Optional[StrictStr] = Field(...)
    source_kind: StrictStr
    source_label: StrictStr
    confidence: Any = Field(...)  # null or a number: the store's own rule judges it
    status: StrictStr
    created_at: StrictStr
    retired_at: Optional[StrictStr] = Field(...)
    retired_reason: Optional[StrictStr] = Field(...)

    _ids = validator('id', allow_reuse=True)(_positive)


class _LinkRecord(Model):
    type: Literal['link']  # noqa: A003
    memory_id: StrictInt
    entity_id: StrictInt
    role: StrictStr

    _ids = validator('memory_id', 'entity_id', allow_reuse=True)(_positive)


class _PayloadRecord(Model):
    type: Literal['payload']  # noqa: A003
    id: StrictInt  # noqa: A003
    memory_id: StrictInt
    storage: StrictStr
    media_type: StrictStr
    text: Optional[StrictStr] = Field(...)
    object_ref: Optional[StrictStr] = Field(...)
    sha256: Optional[StrictStr] = Field(...)
    created_at: StrictStr

    _ids = validator('id', 'memory_id', allow_reuse=True)(_positive)


class _ReceiptRecord(Model):
    type: Literal['receipt']  # noqa: A003
    memory_id: StrictInt
    utterance: StrictStr
    episode_id: StrictStr
    turn_id: StrictStr
    kind: StrictStr
    subject: StrictStr
    predicate: StrictStr
    value: StrictStr
    related_entity: Optional[StrictStr] = Field(...)
    related_role: Optional[StrictStr] = Field(...)
    evidence: StrictStr
    robot_profile: StrictStr  # may be empty: a node without a robot profile
    rules_version: StrictStr
    rules_digest: StrictStr
    rules_ran: StrictStr
    subject_entity_id: StrictInt
    related_entity_id: Optional[StrictInt] = Field(...)
    created_at: StrictStr
    # Schema version 4: a person's review (absent from a version 3 export).
    review_action: Optional[StrictStr] = None
    reviewed_by: Optional[StrictStr] = None
    pending_id: Optional[StrictInt] = None
    refused_at: Optional[StrictStr] = None
    refused_reason: Optional[StrictStr] = None
    refused_rule: Optional[StrictStr] = None
    refused_explanation: Optional[StrictStr] = None

    _ids = validator('memory_id', 'subject_entity_id', 'related_entity_id', 'pending_id',
                     allow_reuse=True)(_positive)
    _texts = validator('utterance', 'episode_id', 'turn_id', 'kind', 'subject', 'predicate',
                       'value', 'related_entity', 'related_role', 'evidence', 'rules_version',
                       'rules_digest', 'rules_ran', 'review_action', 'reviewed_by',
                       'refused_reason', 'refused_rule', 'refused_explanation',
                       allow_reuse=True)(_text)

    @root_validator(skip_on_failure=True)
    def _related_pair(cls, values):
        if (values['related_entity'] is None) != (values['related_role'] is None):
            raise ValueError('related_entity and related_role go together')
        review = [values[name] is None for name in (
            'review_action', 'reviewed_by', 'pending_id', 'refused_at', 'refused_reason',
            'refused_rule', 'refused_explanation')]
        if any(review) and not all(review):
            raise ValueError('the review fields go together')
        return values


class _SupersessionRecord(Model):
    type: Literal['supersession']  # noqa: A003
    old_memory_id: StrictInt
    new_memory_id: StrictInt
    created_at: StrictStr

    _ids = validator('old_memory_id', 'new_memory_id', allow_reuse=True)(_positive)


class _PendingRecord(Model):
    type: Literal['pending']  # noqa: A003
    id: StrictInt  # noqa: A003
    request_digest: StrictStr
    created_at: StrictStr
    episode_id: StrictStr
    turn_id: StrictStr
    utterance: StrictStr
    kind: StrictStr
    subject: StrictStr
    predicate: StrictStr
    value: StrictStr
    related_entity: Optional[StrictStr] = Field(...)
    related_role: Optional[StrictStr] = Field(...)
    evidence: StrictStr
    robot_profile: StrictStr
    reason: StrictStr
    rule: StrictStr
    explanation: StrictStr
    conflicting_memory_ids: StrictStr  # '' or ids separated by spaces
    rules_version: StrictStr
    rules_digest: StrictStr

    _ids = validator('id', allow_reuse=True)(_positive)
    _texts = validator('request_digest', 'episode_id', 'turn_id', 'utterance', 'kind',
                       'subject', 'predicate', 'value', 'related_entity', 'related_role',
                       'evidence', 'reason', 'rule', 'explanation', 'rules_version',
                       'rules_digest', allow_reuse=True)(_text)


_RECORD_MODELS = {'entity': _EntityRecord, 'alias': _AliasRecord, 'memory': _MemoryRecord,
                  'link': _LinkRecord, 'payload': _PayloadRecord, 'receipt': _ReceiptRecord,
                  'supersession': _SupersessionRecord, 'pending': _PendingRecord}


def check_record(kind, record):
    """Raise ShapeError unless record has exactly kind's fields, each of its type."""
    try:
        _RECORD_MODELS[kind].parse_obj(record)
    except ValidationError as error:
        if any(e['type'] in ('value_error.missing', 'value_error.extra')
               for e in error.errors()):
            raise ShapeError('%s record must have exactly the fields %s' % (
                kind, ', '.join(sorted({'type', *RECORD_FIELDS[kind]})))) from None
        raise ShapeError('%s %s' % (kind, one_line(error, _RECORD_PHRASES))) from None


# The counts a header of each schema version has (besides pending, when included).
_COUNTED_BY_VERSION = {
    schema.SCHEMA_VERSION: set(COUNT_NAMES.values()) - {'pending'},
    3: set(COUNT_NAMES.values()) - {'pending', 'supersessions'},
    2: set(COUNT_NAMES.values()) - {'pending', 'supersessions', 'receipts'},
}


class _Header(Model):
    """The first line: which export this is, and how many records of each type follow."""

    type: Literal['header']  # noqa: A003
    format: Literal[EXPORT_FORMAT]  # noqa: A003
    schema_version: Any = None
    counts: Dict[StrictStr, StrictInt]
    sequences: Dict[StrictStr, StrictInt]

    class Config:
        extra = 'ignore'  # as before: keys the importer does not read are not judged

    @validator('schema_version', always=True)
    def _supported(cls, version):
        if version not in _COUNTED_BY_VERSION or isinstance(version, bool):
            raise ValueError('export schema version %r is not supported (expected 2, 3 or %d)'
                             % (version, schema.SCHEMA_VERSION))
        return version

    @validator('counts')
    def _counts(cls, counts, values):
        # A version 2 export has no receipts, one of version 3 no
        # supersessions (nor their counts): they import as the current
        # version, as memory_migrate would have made them. The pending count
        # is there exactly when the export holds the pending items.
        # (Without a supported version there is nothing to compare with: that
        # error is the one reported, as it comes first.)
        names = _COUNTED_BY_VERSION.get(values.get('schema_version'), set())
        if not all(0 <= count <= MAX_INTEGER for count in counts.values()) or set(
                counts) - {'pending'} != names:
            raise ValueError('header counts are missing or malformed')
        return counts

    @validator('sequences')
    def _sequences(cls, sequences):
        if not all(0 <= seq <= MAX_INTEGER for seq in sequences.values()) or not set(
                sequences) <= set(schema.ID_TABLES):
            raise ValueError('header sequences are malformed')
        return sequences


# A header error is one sentence per field, whatever pydantic found wrong in it.
_HEADER_REFUSALS = {
    '__root__': 'the first line is not a mira_memory export header',
    'type': 'the first line is not a mira_memory export header',
    'format': 'the first line is not a mira_memory export header',
    'counts': 'header counts are missing or malformed',
    'sequences': 'header sequences are malformed',
}


def parse_header(header):
    """Return (counts, sequences) of a decoded header line; ShapeError says what is wrong."""
    try:
        parsed = _Header.parse_obj(header)
    except ValidationError as error:
        first = error.errors()[0]
        raise ShapeError(_HEADER_REFUSALS.get(first['loc'][0], first['msg'])) from None
    return parsed.counts, parsed.sequences
