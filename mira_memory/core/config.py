# SPDX-License-Identifier: Apache-2.0
"""
Where persistent memory lives, decided once at startup.

Persistent memory is opt-in. The memory node takes its settings either from
ROS parameters (`enabled`, `database_path`) or, when `config_file` is set,
from the spec's TOML form:

    [memory]
    enabled = true
    database_path = "../data/mira-memory.sqlite3"

A relative `database_path` in a config file resolves against that file's
directory. A relative path given as a ROS parameter is refused, because the
only other anchor would be the process working directory, which the spec
rules out. `~` is expanded in both.

The file's shape is a pydantic model (v1 API, core/pydantic_compat.py):
[memory] must be a table, enabled a bool, database_path a string. Other
sections and other keys are not this node's and are left alone, as before.
"""

from dataclasses import dataclass
import pathlib
import tomllib
from typing import Optional

from mira_memory.core.pydantic_compat import Model, one_line, path, StrictBool, StrictStr
from mira_memory.core.pydantic_compat import ValidationError, validator


class ConfigError(ValueError):
    """The memory settings are unusable; the node must not start."""


@dataclass(frozen=True)
class MemorySettings:
    """Resolved settings: disabled, or enabled with an absolute database path."""

    enabled: bool
    database_path: pathlib.Path | None


DISABLED = MemorySettings(enabled=False, database_path=None)


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


def _require_path(raw, anchor):
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError('persistent memory is enabled but database_path is empty')
    path = pathlib.Path(raw.strip()).expanduser()
    if not path.is_absolute():
        if anchor is None:
            raise ConfigError(
                'database_path must be absolute (relative paths are only allowed in a '
                'config_file, where they resolve against its directory)')
        path = anchor / path
    return pathlib.Path(*path.parts)  # absolute; '..' kept for the OS to resolve


def settings_from_parameters(enabled, database_path):
    """Resolve settings given directly as ROS parameters."""
    if not enabled:
        return DISABLED
    return MemorySettings(True, _require_path(database_path, anchor=None))


def settings_from_config_file(config_file):
    """
    Resolve settings from a TOML config file.

    An absent [memory] section, or enabled = false, means disabled.
    """
    config_path = pathlib.Path(config_file).expanduser()
    if not config_path.is_absolute():
        raise ConfigError('config_file must be an absolute path')
    try:
        with config_path.open('rb') as handle:
            document = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f'cannot read config_file: {error.strerror}') from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f'config_file is not valid TOML: {error}') from None
    try:
        section = _ConfigFile.parse_obj(document).memory
    except ValidationError as error:
        raise ConfigError(one_line(error, place=_place)) from None
    if section is None or not section.enabled:
        return DISABLED
    return MemorySettings(True, _require_path(section.database_path, config_path.parent))
