# SPDX-License-Identifier: Apache-2.0
"""The named failures of the store, its schema and its archive tools."""


class StoreError(Exception):
    """Base class of every store failure; `code` is a stable reason."""

    code = 'backend_failure'


class UnsupportedDatabaseError(StoreError):
    """The file is not a database this version of mira_memory can open."""

    code = 'unsupported_database'


class InvalidInputError(StoreError):
    """An argument failed validation; nothing was written."""

    code = 'invalid_argument'


class NotFoundError(StoreError):
    """A referenced entity or memory does not exist."""

    code = 'not_found'


class DuplicateAliasError(StoreError):
    """The alias (or the canonical name) already names that entity."""

    code = 'duplicate_alias'


class BackendError(StoreError):
    """SQLite failed or a connection setting did not take effect."""

    code = 'backend_failure'


class BusyError(StoreError):
    """Another operation holds what this one needs (a backup, the WAL); retry later."""

    code = 'busy'


class TargetExistsError(StoreError):
    """The output file exists and --force was not given; nothing was written."""

    code = 'exists'


class PathNotAllowedError(StoreError):
    """The output file is outside the directories copies may be written to; nothing was written."""

    code = 'outside_output_dirs'


class ClosedError(StoreError):
    """The pending item left the queue (accepted, dismissed, expired, ...); nothing was written."""

    code = 'closed'


class RefusedError(StoreError):
    """
    The rules a person did not override refuse a pending item now; nothing was written.

    reason and rule are the admission reason and rule number
    (docs/remember.md's table); memory_ids the memories it conflicts with, when it does.
    """

    code = 'refused'

    def __init__(self, message, reason='', rule='', memory_ids=()):
        super().__init__(message)
        self.reason = reason
        self.rule = rule
        self.memory_ids = tuple(memory_ids)
