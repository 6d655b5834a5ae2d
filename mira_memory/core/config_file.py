# SPDX-License-Identifier: Apache-2.0
"""
The shape of the memory node's TOML config_file, as a pydantic model (v1 API).

[memory] must be a table, enabled a bool, database_path a string; other
sections and other keys are not this node's and are left alone.
core/config.py loads this module only when a config file is read, and turns
its ShapeError into a ConfigError (so this module needs nothing from config).
"""

from typing import Optional

from mira_memory.core.pydantic_compat import Model, one_line, path, StrictBool, StrictStr
from mira_memory.core.pydantic_compat import ValidationError, validator


class ShapeError(ValueError):
    """The file's [memory] table does not have its shape; the message says how."""


class _MemorySection(Model):
    """The [memory] table."""

    enabled: StrictBool = False
    database_path: Optional[StrictStr] = None

    class Config:
        extra = 'ignore'


class _ConfigFile(Model):
    """A config file: the [memory] table; other tables belong to others."""

    memory: Optional[_MemorySection] = None

    class Config:
        extra = 'ignore'

    @validator('memory', pre=True)
    def _table(cls, value):
        # v1 would take an array of pairs as a table: only a table is one.
        if value is not None and not isinstance(value, dict):
            raise ValueError('in config_file must be a table')
        return value


def _place(location):
    """Name a config field as the file does: [memory] enabled."""
    return ' '.join(['[%s]' % location[0]] + ([path(location[1:])] if location[1:] else []))


def memory_section(document):
    """Return the decoded file's [memory] table (None when absent); ShapeError when malformed."""
    try:
        return _ConfigFile.parse_obj(document).memory
    except ValidationError as error:
        raise ShapeError(one_line(error, place=_place)) from None
