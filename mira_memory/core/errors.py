# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

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
