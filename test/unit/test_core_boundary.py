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

"""The ROS-free core stays ROS-free: no rclpy, no rosidl, no generated interfaces."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE = ROOT / 'mira_memory' / 'core'
FORBIDDEN = ('rclpy', 'rosidl', 'rcl_interfaces', 'std_srvs', 'launch',
             'mira_memory.msg', 'mira_memory.srv')


def _imported_modules(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ''
            if node.level == 0 and module == 'mira_memory':
                yield from (f'mira_memory.{alias.name}' for alias in node.names)
            else:
                yield module


def _is_forbidden(module):
    return any(module == name or module.startswith(name + '.') for name in FORBIDDEN)


def test_core_modules_exist():
    names = {path.stem for path in CORE.glob('*.py')}
    assert {'normalize', 'store', 'admission', 'recall'} <= names


def test_core_source_imports_no_ros():
    offenders = {
        str(path.relative_to(ROOT)): module
        for path in CORE.glob('*.py')
        for module in _imported_modules(path)
        if _is_forbidden(module)
    }
    assert offenders == {}


def test_checker_catches_a_ros_import(tmp_path):
    # The check above must be able to fail.
    sample = tmp_path / 'sample.py'
    sample.write_text('from mira_memory import srv\nimport rclpy.node\n')
    assert [m for m in _imported_modules(sample) if _is_forbidden(m)] == [
        'mira_memory.srv', 'rclpy.node']


def test_importing_core_loads_no_ros_module():
    # Also at run time: import every core module in a fresh interpreter from
    # the source tree and list what got loaded.
    code = (
        'import importlib, pkgutil, sys\n'
        'import mira_memory.core as core\n'
        'for info in pkgutil.iter_modules(core.__path__):\n'
        '    importlib.import_module("mira_memory.core." + info.name)\n'
        f'bad = sorted(m for m in sys.modules if m.split(".")[0] in {FORBIDDEN!r}\n'
        '             or m in ("mira_memory.msg", "mira_memory.srv"))\n'
        'print(",".join(bad))\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            cwd=ROOT, check=True)
    assert result.stdout.strip() == ''
