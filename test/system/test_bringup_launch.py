# SPDX-License-Identifier: Apache-2.0
"""
Static checks of launch/bringup.launch.py and its config files.

launch and launch_ros are not on PyPI, so these read the source (py_compile,
ast) instead of importing it; test/launch/bringup_launch_test.py runs it for
real on a ROS 2 install.
"""

import ast
import pathlib
import py_compile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BRINGUP = ROOT / 'launch' / 'bringup.launch.py'
ARGUMENTS = {'namespace', 'robot_profile', 'database_path', 'enabled', 'log_level',
             'params_file'}
NODE_PARAMETERS = {'enabled', 'database_path', 'config_file', 'robot_profile'}


def _tree():
    return ast.parse(BRINGUP.read_text(), filename=str(BRINGUP))


def _calls(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            called = function.id if isinstance(function, ast.Name) else getattr(
                function, 'attr', None)
            if called == name:
                yield node


def _keyword(call, name):
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _declared():
    declared = {}
    for call in _calls(_tree(), 'DeclareLaunchArgument'):
        description = _keyword(call, 'description')
        declared[ast.literal_eval(call.args[0])] = (
            ast.literal_eval(description) if description is not None else None)
    return declared


def test_bringup_compiles(tmp_path):
    py_compile.compile(str(BRINGUP), cfile=str(tmp_path / 'bringup.pyc'), doraise=True)


def test_every_launch_configuration_is_declared_with_a_description():
    declared = _declared()
    used = {ast.literal_eval(call.args[0])
            for call in _calls(_tree(), 'LaunchConfiguration')}
    assert used <= set(declared)
    assert all(description and description.strip() for description in declared.values())


def test_bringup_declares_the_documented_arguments():
    assert set(_declared()) == ARGUMENTS


def test_enabled_is_passed_as_a_bool():
    node = next(_calls(_tree(), 'Node'))
    parameters = _keyword(node, 'parameters')
    overrides = next(item for item in parameters.elts if isinstance(item, ast.Dict))
    values = {ast.literal_eval(key): value for key, value in zip(overrides.keys, overrides.values)}
    assert set(values) == {'enabled', 'database_path', 'robot_profile'}
    value_type = _keyword(values['enabled'], 'value_type')
    assert isinstance(value_type, ast.Name) and value_type.id == 'bool'


def _default_database_path():
    """Load default_database_path() alone: the rest of the file needs launch."""
    tree = _tree()
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == 'default_database_path')
    module = ast.Module(body=[ast.Import(names=[ast.alias('os'), ast.alias('pathlib')]),
                              function], type_ignores=[])
    namespace = {}
    exec(compile(ast.fix_missing_locations(module), str(BRINGUP), 'exec'), namespace)
    return namespace['default_database_path']


def test_default_database_path_is_under_ros_home(monkeypatch, tmp_path):
    monkeypatch.setenv('ROS_HOME', str(tmp_path / 'ros_home'))
    assert _default_database_path()() == str(
        tmp_path / 'ros_home' / 'mira_memory' / 'memory.sqlite3')


def test_default_database_path_falls_back_to_dot_ros(monkeypatch, tmp_path):
    monkeypatch.delenv('ROS_HOME', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    assert _default_database_path()() == str(tmp_path / '.ros' / 'mira_memory' / 'memory.sqlite3')


def test_memory_yaml_sets_only_node_parameters():
    yaml = pytest.importorskip('yaml')
    document = yaml.safe_load((ROOT / 'config' / 'memory.yaml').read_text())
    parameters = document['/**']['ros__parameters']
    assert set(parameters) == NODE_PARAMETERS
    assert parameters['enabled'] is False


def test_example_toml_resolves_against_its_directory():
    from mira_memory.core import config
    example = ROOT / 'config' / 'memory.example.toml'
    settings = config.settings_from_config_file(str(example))
    assert settings.enabled
    assert settings.database_path == ROOT / 'config' / '..' / 'data' / 'mira-memory.sqlite3'


# The launch files' shared helpers (mira_memory.ros.launching) ------------------------


def test_bringup_stops_the_whole_launch_when_the_memory_node_fails():
    generate = next(node for node in _tree().body if isinstance(node, ast.FunctionDef)
                    and node.name == 'generate_launch_description')
    returned = [node for node in ast.walk(generate) if isinstance(node, ast.Return)]
    assert len(returned) == 1
    handler = next(_calls(returned[0], 'stop_launch_on_failure'))
    assert [ast.unparse(argument) for argument in handler.args] == ['memory_node']


def test_a_failed_node_ends_the_launch_with_a_clear_error():
    from types import SimpleNamespace
    from mira_memory.ros import launching
    failed = SimpleNamespace(returncode=1, process_name='memory_node-1')
    with pytest.raises(launching.NodeFailed, match=r'memory_node-1 exited with code 1 .*'
                                                   r'shutting the whole launch down'):
        launching.shut_down_on_failure(failed, context=None)
    stopped = SimpleNamespace(returncode=0, process_name='memory_node-1')
    assert launching.shut_down_on_failure(stopped, context=None) is None


def test_simulation_refuses_a_relative_database_path(monkeypatch, tmp_path):
    from mira_memory.ros import launching
    monkeypatch.setenv('HOME', str(tmp_path))
    with pytest.raises(ValueError, match='must be an absolute path'):
        launching.absolute_database_path('rel.sqlite3')
    assert launching.absolute_database_path('~/m.sqlite3') == str(tmp_path / 'm.sqlite3')
    assert launching.absolute_database_path('/var/m.sqlite3') == '/var/m.sqlite3'
    simulation = (ROOT / 'launch' / 'simulation.launch.py').read_text()
    assert 'launching.absolute_database_path(configured)' in simulation
