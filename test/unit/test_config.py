# SPDX-License-Identifier: Apache-2.0
"""The memory node's settings: ROS parameters and the TOML config_file, without ROS."""

import pathlib

from mira_memory.core import config
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def settings(tmp_path, text):
    path = tmp_path / 'etc' / 'mira.toml'
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return config.settings_from_config_file(str(path))


def test_the_example_config_resolves_against_its_directory():
    example = ROOT / 'config' / 'memory.example.toml'
    resolved = config.settings_from_config_file(str(example))
    assert resolved == config.MemorySettings(
        True, ROOT / 'config' / '..' / 'data' / 'mira-memory.sqlite3')


def test_an_absolute_path_stays_and_home_is_expanded(tmp_path):
    assert settings(tmp_path, f'[memory]\nenabled = true\ndatabase_path = "{tmp_path}/m.db"\n'
                    ).database_path == tmp_path / 'm.db'
    assert settings(tmp_path, '[memory]\nenabled = true\ndatabase_path = "~/m.db"\n'
                    ).database_path == pathlib.Path.home() / 'm.db'


@pytest.mark.parametrize('text', [
    '', '[robot]\nname = "Mira"\ndatabase_path = "x.db"\n',
    '[memory]\nenabled = false\ndatabase_path = "x.db"\n', '[memory]\ndatabase_path = "x.db"\n'],
    ids=['empty', 'no memory table', 'enabled false', 'enabled absent'])
def test_disabled_unless_memory_is_enabled(tmp_path, text):
    assert settings(tmp_path, text) == config.DISABLED


def test_other_keys_are_left_to_others(tmp_path):
    # The file is the spec's shared TOML form: keys this node does not know
    # are not errors (a typo of enabled leaves memory disabled, the safe side).
    resolved = settings(tmp_path, '[memory]\nenabled = true\ndatabase_path = "m.db"\n'
                                  'retention = "forever"\n')
    assert resolved.database_path == tmp_path / 'etc' / 'm.db'


@pytest.mark.parametrize('text, message', [
    ('memory = 5\n', '[memory] in config_file must be a table'),
    # An array of pairs is not a table (pydantic 1.x alone would take it as one).
    ('memory = [["enabled", true]]\n', '[memory] in config_file must be a table'),
    ('[memory]\nenabled = "true"\n', '[memory] enabled must be true or false'),
    ('[memory]\nenabled = 1\n', '[memory] enabled must be true or false'),
    ('[memory]\nenabled = true\ndatabase_path = 5\n', '[memory] database_path must be a string'),
    ('[memory]\nenabled = true\n', 'persistent memory is enabled but database_path is empty'),
    ('[memory]\nenabled = true\ndatabase_path = "  "\n',
     'persistent memory is enabled but database_path is empty'),
], ids=['number', 'pairs', 'string bool', 'int bool', 'number path', 'no path', 'blank path'])
def test_a_malformed_config_is_one_line_naming_the_field(tmp_path, text, message):
    with pytest.raises(config.ConfigError) as caught:
        settings(tmp_path, text)
    assert str(caught.value) == message


def test_invalid_toml_gives_its_line(tmp_path):
    with pytest.raises(config.ConfigError, match=r'not valid TOML: .*\(at line 2, column'):
        settings(tmp_path, '[memory]\nenabled = \n')


def test_a_relative_or_missing_config_file_is_refused(tmp_path):
    with pytest.raises(config.ConfigError, match='config_file must be an absolute path'):
        config.settings_from_config_file('mira.toml')
    with pytest.raises(config.ConfigError, match='cannot read config_file'):
        config.settings_from_config_file(str(tmp_path / 'absent.toml'))


def test_ros_parameters_need_an_absolute_path():
    assert config.settings_from_parameters(False, '') == config.DISABLED
    assert config.settings_from_parameters(True, '/var/m.db').database_path == pathlib.Path(
        '/var/m.db')
    with pytest.raises(config.ConfigError, match='database_path must be absolute'):
        config.settings_from_parameters(True, 'm.db')
