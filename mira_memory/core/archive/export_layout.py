# SPDX-License-Identifier: Apache-2.0
"""
What an export file holds: its format name, its record types in order, their fields.

Export (copies.py) writes this layout and import's shapes (export_format.py)
check it, so both read it from here; this module loads nothing, so the
memory node, which exports but never imports, still never loads pydantic.
"""

from mira_memory.core.store import records

EXPORT_FORMAT = 'mira_memory export'
# The order of the sections after the header.
RECORD_TYPES = ('entity', 'alias', 'memory', 'link', 'payload', 'receipt', 'supersession',
                'pending')
# Header count names per record type (the store's counts() names).
COUNT_NAMES = {'entity': 'entities', 'alias': 'aliases', 'memory': 'memories',
               'link': 'links', 'payload': 'payloads', 'receipt': 'receipts',
               'supersession': 'supersessions', 'pending': 'pending'}
RECORD_FIELDS = {
    'entity': ('id', 'entity_type', 'canonical_name', 'created_at'),
    'alias': ('id', 'entity_id', 'alias', 'created_at'),
    'memory': ('id', 'kind', 'summary', 'predicate', 'value', 'source_kind', 'source_label',
               'confidence', 'status', 'created_at', 'retired_at', 'retired_reason'),
    'link': ('memory_id', 'entity_id', 'role'),
    'payload': ('id', 'memory_id', 'storage', 'media_type', 'text', 'object_ref', 'sha256',
                'created_at'),
    'receipt': records.RECEIPT_COLUMNS,
    'supersession': ('old_memory_id', 'new_memory_id', 'created_at'),
    'pending': records.PENDING_COLUMNS,
}
