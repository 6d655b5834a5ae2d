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

The file's shape is a pydantic model (core/config_file.py): [memory] must be
a table, enabled a bool, database_path a string. Other sections and other
keys are not this node's and are left alone, as before.
"""

from dataclasses import dataclass
import pathlib
import tomllib


class ConfigError(ValueError):
    """The memory settings are unusable; the node must not start."""


@dataclass(frozen=True)
class MemorySettings:
    """Resolved settings: disabled, or enabled with an absolute database path."""

    enabled: bool
    database_path: pathlib.Path | None


DISABLED = MemorySettings(enabled=False, database_path=None)


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
    # Imported only when a config file is read: a node configured by its
    # parameters never loads pydantic (about 7 MB and 80 ms of start-up).
    from mira_memory.core import config_file
    try:
        section = config_file.memory_section(document)
    except config_file.ShapeError as error:
        raise ConfigError(str(error)) from None
    if section is None or not section.enabled:
        return DISABLED
    return MemorySettings(True, _require_path(section.database_path, config_path.parent))
