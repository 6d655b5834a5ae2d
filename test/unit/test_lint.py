# SPDX-License-Identifier: Apache-2.0
"""
Lint with ament's settings: flake8, pep257, package.xml, license lines.

ament_copyright is not used: every file opens with the one-line
`# SPDX-License-Identifier: Apache-2.0` (after a shebang), and a Python
module's docstring follows on the next line, so its purpose is what a reader
sees first.
"""

import ast
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON_DIRS = ('mira_memory', 'test', 'launch', 'bench', 'scripts', 'tools', 'docs')
SPDX = '# SPDX-License-Identifier: Apache-2.0'
SKIPPED_PARTS = {'__pycache__', 'cache', 'results'}  # bench/cache holds GB-sized stores
SHEBANG = b'#!/usr/bin/env python3'


def _is_python(path):
    if path.suffix == '.py':
        return True
    with path.open('rb') as handle:
        return handle.read(len(SHEBANG)) == SHEBANG


def _python_files():
    files = []
    for directory in PYTHON_DIRS:
        for path in sorted((ROOT / directory).rglob('*')):
            if SKIPPED_PARTS.intersection(path.parts) or not path.is_file():
                continue
            if _is_python(path):
                files.append(path)
    return files


def test_python_files_exist():
    # Guards the globbing above: an empty list would make every lint pass.
    assert len(_python_files()) > 10


def test_flake8_with_ament_settings():
    ament_flake8 = pytest.importorskip(
        'ament_flake8.main', reason='ament_flake8 is not installed (tools/bootstrap installs it)')
    config = pathlib.Path(ament_flake8.__file__).parent / 'configuration' / 'ament_flake8.ini'
    result = subprocess.run(
        [sys.executable, '-m', 'flake8', '--config', str(config),
         *map(str, _python_files())],
        capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pep257_with_ament_convention():
    ament_pep257 = pytest.importorskip(
        'ament_pep257.main', reason='ament_pep257 is not installed (tools/bootstrap installs it)')
    report = ament_pep257.generate_pep257_report(
        [str(path) for path in _python_files()], [], ','.join(ament_pep257._ament_ignore),
        '', 'pep257', '', '')
    problems = [(filename, errors) for filename, errors in report if errors]
    assert not problems, problems


def test_no_assertion_hides_a_condition_in_its_message():
    # `assert a == b, c and d` checks a == b only: c and d are the failure
    # message, never evaluated as a condition.
    hidden = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Assert) and isinstance(
                    node.msg, (ast.Compare, ast.BoolOp, ast.UnaryOp)):
                hidden.append(f'{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}')
    assert not hidden, hidden


def test_package_xml_is_well_formed_format_3():
    tree = ET.parse(ROOT / 'package.xml')
    package = tree.getroot()
    assert package.tag == 'package' and package.get('format') == '3'
    assert package.findtext('name') == 'mira_memory'
    assert package.find('export/build_type').text == 'ament_cmake'


def test_package_xml_parses_with_catkin_pkg():
    package_module = pytest.importorskip(
        'catkin_pkg.package', reason='catkin_pkg is not installed (tools/bootstrap installs it)')
    package = package_module.parse_package(str(ROOT / 'package.xml'))
    package.validate()
    names = {dependency.name for dependency in package.exec_depends}
    assert {'rclpy', 'rosidl_default_runtime'} <= names


def _opening_lines(path):
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith('#!'):
        lines = lines[1:]
    return lines


@pytest.mark.parametrize('path', _python_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_license_line_then_purpose(path):
    lines = _opening_lines(path)
    name = str(path.relative_to(ROOT))
    assert lines[:1] == [SPDX], f'{name} does not open with {SPDX!r}'
    # The module docstring comes next; its first line is the one-line purpose.
    assert len(lines) > 1 and lines[1].startswith('"""'), f'{name}: no docstring on line 2'
    purpose = lines[1][3:] or (lines[2] if len(lines) > 2 else '')
    assert purpose.strip() and purpose.strip() != '"""', f'{name}: the purpose line is empty'


@pytest.mark.parametrize('path', sorted(path for path in ROOT.glob('tools/*') if path.is_file())
                         + [ROOT / '.ci' / 'run'],
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_shell_scripts_carry_the_license_line(path):
    lines = path.read_text().splitlines()
    if lines and lines[0] == '#!/usr/bin/env bash':
        assert lines[1] == SPDX
