# SPDX-License-Identifier: Apache-2.0
"""
package.xml declares what the code imports, as rosdep keys, and nothing it does not use.

Every third-party module imported anywhere in mira_memory/ needs an
exec_depend (or depend) key; the test and benchmark imports need a
test_depend key. openai is the one documented exception (docs/model.md):
only the optional openai_compatible backend imports it.
"""

import ast
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Python module -> its rosdep key.
ROSDEP_KEYS = {
    'rclpy': 'rclpy', 'rcl_interfaces': 'rcl_interfaces', 'lifecycle_msgs': 'lifecycle_msgs',
    'diagnostic_msgs': 'diagnostic_msgs', 'ament_index_python': 'ament_index_python',
    'launch': 'launch', 'launch_ros': 'launch_ros', 'launch_testing': 'launch_testing',
    'yaml': 'python3-yaml', 'pydantic': 'python3-pydantic', 'std_srvs': 'std_srvs',
    'pytest': 'python3-pytest', 'hypothesis': 'python3-hypothesis',
    'ament_flake8': 'ament_flake8', 'ament_pep257': 'ament_pep257',
    'action_msgs': 'action_msgs', 'tqdm': 'python3-tqdm', 'pexpect': 'python3-pexpect',
    'boto3': 'python3-boto3', 'unique_identifier_msgs': 'unique_identifier_msgs',
}
# Imported, deliberately not declared (see package.xml and docs/model.md).
UNDECLARED = {'openai'}
# The benchmark's peer (tools/bench --peers): installed by hand into
# a venv of its own (bench/README.md), never a dependency of this package.
PEER_ONLY = {'robotmem'}
# The test and bench helpers of this repository, imported by module name.
# The test helpers are one package (test/helpers/); bench modules are flat.
# The development tools the tests import (tools/*.py) are local too, and so
# are the helper modules that the helper scripts run by path import by name.
LOCAL = {'helpers'} | {path.stem for path in (ROOT / 'test').glob('*.py')} | {
    path.stem for path in (ROOT / 'test' / 'helpers').glob('*.py')} | {
    path.stem for path in (ROOT / 'bench').glob('*.py')} | {
    path.stem for path in (ROOT / 'tools').glob('*.py')}
# Declared without an import statement: the generated interfaces' runtime,
# the `ros2 launch` command, the launch_testing CMake glue and the pytest
# runner; the linters are imported by name through pytest.importorskip
# (test/unit/test_lint.py).
NOT_IMPORTED = {'rosidl_default_runtime', 'ros2launch', 'launch_testing_ament_cmake',
                'ament_cmake_pytest', 'ament_flake8', 'ament_pep257'}
# Run by hand only (bench/README.md), never by a test: not a test dependency.
BY_HAND = {'executor_probe.py'}


def third_party_imports(directory):
    found = {}
    for path in sorted((ROOT / directory).rglob('*.py')):
        if path.name in BY_HAND:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split('.')[0]
                if top not in sys.stdlib_module_names and top != 'mira_memory' \
                        and top not in LOCAL:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def declared(*tags):
    root = ElementTree.parse(ROOT / 'package.xml').getroot()
    return {element.text.strip() for tag in tags for element in root.iter(tag)}


def test_every_import_of_the_package_has_its_exec_depend():
    imports = third_party_imports('mira_memory')
    assert UNDECLARED <= set(imports)
    keys = {module: ROSDEP_KEYS.get(module) for module in set(imports) - UNDECLARED}
    assert None not in keys.values(), {m: imports[m] for m, k in keys.items() if k is None}
    missing = {module: imports[module] for module, key in keys.items()
               if key not in declared('exec_depend', 'depend')}
    assert missing == {}


def test_every_test_and_bench_import_has_a_key():
    imports = {**third_party_imports('test'), **third_party_imports('bench')}
    imports = {module: path for module, path in imports.items()
               if module not in UNDECLARED | PEER_ONLY and not module.startswith('test_')}
    keys = {module: ROSDEP_KEYS.get(module) for module in imports}
    assert None not in keys.values(), {m: imports[m] for m, k in keys.items() if k is None}
    missing = {module: imports[module] for module, key in keys.items()
               if key not in declared('exec_depend', 'depend', 'test_depend')}
    assert missing == {}


def test_the_benchmark_peer_is_imported_by_the_bench_only():
    # The exception is still needed, and neither the product nor a test uses it.
    assert PEER_ONLY <= set(third_party_imports('bench'))
    assert not PEER_ONLY & (set(third_party_imports('mira_memory'))
                            | set(third_party_imports('test')))


def test_every_declared_key_is_used():
    used = {ROSDEP_KEYS[module] for directory in ('mira_memory', 'test', 'bench')
            for module in third_party_imports(directory) if module in ROSDEP_KEYS}
    unused = declared('exec_depend', 'depend', 'test_depend') - used - NOT_IMPORTED
    assert unused == set()


def test_std_srvs_is_only_a_test_dependency():
    assert 'std_srvs' not in third_party_imports('mira_memory')
    assert 'std_srvs' in declared('test_depend') - declared('exec_depend', 'depend')


def test_openai_is_explained_where_it_is_left_out():
    text = (ROOT / 'package.xml').read_text()
    assert 'openai' not in declared('exec_depend', 'depend', 'test_depend')
    assert 'python3-openai' in text and 'docs/model.md' in text
