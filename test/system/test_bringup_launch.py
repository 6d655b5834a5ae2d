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
             'params_file', 'use_sim_time', 'enclave', 'lifecycle', 'autostart',
             'dds_profile'}
MEMORY_YAML = ROOT / 'config' / 'memory.yaml'


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
            for call in _calls(_tree(), 'LaunchConfiguration')
            if isinstance(call.args[0], ast.Constant)}
    # LaunchConfiguration(name) for name in launching.OVERRIDABLE: see
    # test_parameter_arguments_default_to_not_given.
    assert used <= set(declared)
    assert all(description and description.strip() for description in declared.values())


def test_bringup_declares_the_documented_arguments():
    assert set(_declared()) == ARGUMENTS


def test_parameter_arguments_default_to_not_given():
    defaults = {}
    for call in _calls(_tree(), 'DeclareLaunchArgument'):
        defaults[ast.literal_eval(call.args[0])] = ast.unparse(_keyword(call, 'default_value'))
    from mira_memory.ros import launching
    assert {name: defaults[name] for name in launching.OVERRIDABLE} == dict.fromkeys(
        launching.OVERRIDABLE, "''")


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


def test_memory_yaml_lists_the_bringup_defaults():
    yaml = pytest.importorskip('yaml')
    parameters = yaml.safe_load(MEMORY_YAML.read_text())['/**']['ros__parameters']
    assert (parameters['enabled'], parameters['database_path'], parameters['robot_profile']) \
        == (True, '', 'Mira')


def test_every_parameter_in_memory_yaml_has_a_comment():
    lines = MEMORY_YAML.read_text().splitlines()
    body = lines[lines.index('  ros__parameters:') + 1:]
    for number, line in enumerate(body):
        if not line.lstrip().startswith('#'):
            assert body[number - 1].lstrip().startswith('#'), line


def test_example_toml_resolves_against_its_directory():
    from mira_memory.core import config
    example = ROOT / 'config' / 'memory.example.toml'
    settings = config.settings_from_config_file(str(example))
    assert settings.enabled
    assert settings.database_path == ROOT / 'config' / '..' / 'data' / 'mira-memory.sqlite3'


# The launch files' shared helpers (mira_memory.ros.launching) ------------------------


def _memory_node_function():
    return next(node for node in _tree().body if isinstance(node, ast.FunctionDef)
                and node.name == '_memory_node')


def test_bringup_stops_the_whole_launch_when_the_memory_node_fails():
    function = _memory_node_function()
    returned = [node for node in ast.walk(function) if isinstance(node, ast.Return)]
    assert [ast.unparse(node.value) for node in returned] == ['actions']
    assignment = next(node for node in function.body if isinstance(node, ast.Assign)
                      and ast.unparse(node.targets[0]) == 'actions')
    handler = next(_calls(assignment, 'stop_launch_on_failure'))
    assert [ast.unparse(argument) for argument in handler.args] == ['memory_node']


def test_lifecycle_mode_runs_the_managed_node_and_autostarts_it():
    """lifecycle:=true: LifecycleNode, memory_lifecycle_node, launching.autostart when asked."""
    function = _memory_node_function()
    source = ast.unparse(function)
    assert '(LifecycleNode if managed else Node)(' in source
    assert "executable='memory_lifecycle_node' if managed else 'memory_node'" in source
    autostart = next(_calls(function, 'autostart'))
    assert [ast.unparse(argument) for argument in autostart.args] == ['memory_node']
    condition = next(node.test for node in ast.walk(function)
                     if isinstance(node, ast.If) and autostart in ast.walk(node))
    assert "launch_flag('autostart'" in ast.unparse(condition)
    assert ast.unparse(condition).startswith('managed and')
    defaults = {ast.literal_eval(call.args[0]): ast.unparse(_keyword(call, 'default_value'))
                for call in _calls(_tree(), 'DeclareLaunchArgument')}
    # Today's behaviour by default: the plain node, unless lifecycle:=true.
    assert (defaults['lifecycle'], defaults['autostart']) == ("'false'", "'true'")
    # Both executables are installed where launch_ros looks for them.
    cmake = (ROOT / 'CMakeLists.txt').read_text()
    assert 'scripts/memory_node\n' in cmake and 'scripts/memory_lifecycle_node\n' in cmake


@pytest.mark.parametrize('text, value', [('true', True), ('False', False), (' TRUE ', True)])
def test_launch_flags_read_true_or_false(text, value):
    from mira_memory.ros import launching
    assert launching.launch_flag('lifecycle', text) is value


def test_a_launch_flag_that_is_not_a_boolean_is_refused_with_its_name():
    from mira_memory.ros import launching
    with pytest.raises(ValueError, match='launch argument lifecycle must be true or false'):
        launching.launch_flag('lifecycle', 'yes')


def test_a_failed_autostart_configure_ends_the_launch_with_a_clear_error():
    from mira_memory.ros import launching
    with pytest.raises(launching.NodeFailed, match='could not be configured .* shutting the '
                                                   'whole launch down'):
        launching.configure_failed(context=None)


def test_simulation_stops_the_whole_launch_when_the_memory_node_fails():
    simulation = (ROOT / 'launch' / 'simulation.launch.py').read_text()
    assert 'launching.stop_launch_on_failure(memory_node)' in simulation


def test_simulation_starts_a_node_after_its_prerequisite_succeeded():
    # The operator source after the seed step (NodeSpec.after); a failed
    # seed step ends the launch (launching.start_after_success).
    simulation = (ROOT / 'launch' / 'simulation.launch.py').read_text()
    assert ('launching.start_after_success(nodes[spec.after], nodes[spec.name])'
            in simulation)


# Params file and launch arguments (mira_memory.ros.launching) --------------------------

DEFAULTS = {'enabled': True, 'database_path': '/home/r/.ros/mira_memory/memory.sqlite3',
            'robot_profile': 'Mira'}
NOT_GIVEN = dict.fromkeys(('enabled', 'database_path', 'robot_profile', 'use_sim_time'), '')


def write(tmp_path, text):
    path = tmp_path / 'params.yaml'
    path.write_text(text)
    return str(path)


def test_the_params_file_decides_what_no_argument_gives(tmp_path):
    from mira_memory.ros import launching
    params = write(tmp_path, """
/**:
  ros__parameters:
    enabled: false
    database_path: /data/memory.sqlite3
    robot_profile: Robo
    use_sim_time: true
""")
    assert launching.memory_node_parameters(params, '/mira/memory', NOT_GIVEN, DEFAULTS) == [
        params, {}]


def test_a_given_argument_overrides_the_params_file(tmp_path):
    from mira_memory.ros import launching
    params = write(tmp_path, '/**:\n  ros__parameters:\n    enabled: false\n'
                             '    robot_profile: Robo\n')
    given = {**NOT_GIVEN, 'enabled': 'True', 'robot_profile': 'true', 'use_sim_time': 'false'}
    layers = launching.memory_node_parameters(params, '/mira/memory', given, DEFAULTS)
    # A profile named "true" stays text; enabled and use_sim_time are booleans.
    assert layers == [params, {'enabled': True, 'robot_profile': 'true',
                               'use_sim_time': False,
                               'database_path': DEFAULTS['database_path']}]


def test_the_bringup_defaults_fill_in_only_what_the_file_leaves_unset(tmp_path):
    from mira_memory.ros import launching
    # memory.yaml's own shape: enabled and profile set, database_path empty.
    layers = launching.memory_node_parameters(str(MEMORY_YAML), '/mira/memory', NOT_GIVEN,
                                              DEFAULTS)
    assert layers == [str(MEMORY_YAML), {'database_path': DEFAULTS['database_path']}]
    empty = write(tmp_path, '{}\n')
    assert launching.memory_node_parameters(empty, '/mira/memory', NOT_GIVEN, DEFAULTS) == [
        empty, DEFAULTS]


@pytest.mark.parametrize('key, matches', [
    ('/**', True), ('/mira/memory', True), ('mira/memory', True), ('/mira/*', True),
    ('/**/memory', True), ('/other/memory', False), ('memory', False), ('/mira/cognition', False),
])
def test_params_file_sections_match_like_rcl(tmp_path, key, matches):
    from mira_memory.ros import launching
    params = write(tmp_path, f'{key}:\n  ros__parameters:\n    robot_profile: Robo\n')
    assert launching.params_file_values(params, '/mira/memory') == (
        {'robot_profile': 'Robo'} if matches else {})


def test_nested_namespaces_and_later_sections_win(tmp_path):
    from mira_memory.ros import launching
    params = write(tmp_path, """
/**:
  ros__parameters:
    robot_profile: Anyone
mira:
  memory:
    ros__parameters:
      robot_profile: Mira2
""")
    assert launching.params_file_values(params, '/mira/memory') == {'robot_profile': 'Mira2'}


def test_a_bad_boolean_argument_is_refused_with_its_name():
    from mira_memory.ros import launching
    with pytest.raises(ValueError, match='launch argument enabled must be true or false'):
        launching.memory_node_parameters('', '/mira/memory', {**NOT_GIVEN, 'enabled': 'yes'},
                                         DEFAULTS)


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


def test_dds_profile_gives_the_memory_node_the_profile_its_fast_dds_reads():
    from mira_memory.ros import launching
    # The variable the distro's Fast DDS reads, and only that one (Kilted's
    # rmw reads both, and a profile loaded twice is an XMLPARSER error).
    assert launching.dds_profile_environment('/p.xml', 'jazzy') == {
        'FASTRTPS_DEFAULT_PROFILES_FILE': '/p.xml'}
    assert launching.dds_profile_environment('/p.xml', 'kilted') == {
        'FASTDDS_DEFAULT_PROFILES_FILE': '/p.xml'}
    # Not given: nothing is set, the environment decides.
    assert launching.dds_profile_environment('', 'jazzy') == {}
    defaults = {ast.literal_eval(call.args[0]): ast.unparse(_keyword(call, 'default_value'))
                for call in _calls(_tree(), 'DeclareLaunchArgument')}
    assert defaults['dds_profile'] == "''"
    # The bringup passes it to the memory node, either executable (one call).
    [memory_node] = [node for node in ast.walk(_tree()) if isinstance(node, ast.Call)
                     and ast.unparse(node.func) == 'LifecycleNode if managed else Node']
    assert ast.unparse(_keyword(memory_node, 'additional_env')) == 'dds_profile'
    assert (ROOT / 'config' / 'dds' / 'fastdds_discovery.xml').is_file()
