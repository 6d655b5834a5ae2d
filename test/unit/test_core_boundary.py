# SPDX-License-Identifier: Apache-2.0
"""
The ROS-free modules stay ROS-free, and the core imports nothing above it.

ROS-free: mira_memory/core/ (the memory domain), cognition's library
(episodes, tools, chat, scenario) and wire's id rule: no rclpy, no rosidl,
no generated interfaces. The core imports no other layer of the package
(ros/, memory/, cognition/, console/, simulation/, wire), and no two core
modules import each other, even through others or inside a function.
"""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'mira_memory'
CORE = PACKAGE / 'core'
# Cognition's ROS-free library; cognition/runner.py and node.py are its ROS side.
COGNITION_LIBRARY = ('episodes', 'tools', 'chat', 'scenario')
FORBIDDEN = ('rclpy', 'rosidl', 'rcl_interfaces', 'std_srvs', 'launch',
             'mira_memory.msg', 'mira_memory.srv')
ABOVE_CORE = ('mira_memory.ros', 'mira_memory.memory', 'mira_memory.cognition',
              'mira_memory.console', 'mira_memory.simulation', 'mira_memory.wire')


def _ros_free_sources():
    return sorted(CORE.rglob('*.py')) + [
        PACKAGE / 'cognition' / f'{name}.py' for name in COGNITION_LIBRARY]


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


def _is_forbidden(module, names=FORBIDDEN):
    return any(module == name or module.startswith(name + '.') for name in names)


def test_core_modules_exist():
    names = {path.relative_to(CORE).with_suffix('').as_posix() for path in CORE.rglob('*.py')}
    assert {'admission/rules', 'admission/verdict', 'archive/copies', 'store/__init__',
            'recall'} <= names


def test_ros_free_sources_import_no_ros():
    offenders = {
        str(path.relative_to(ROOT)): module
        for path in _ros_free_sources()
        for module in _imported_modules(path)
        if _is_forbidden(module)
    }
    assert offenders == {}


def test_core_imports_nothing_above_it():
    offenders = {
        str(path.relative_to(ROOT)): module
        for path in CORE.rglob('*.py')
        for module in _imported_modules(path)
        if _is_forbidden(module, ABOVE_CORE)
    }
    assert offenders == {}


def test_checker_catches_a_ros_import(tmp_path):
    # The check above must be able to fail.
    sample = tmp_path / 'sample.py'
    sample.write_text('from mira_memory import srv\nimport rclpy.node\n')
    assert [m for m in _imported_modules(sample) if _is_forbidden(m)] == [
        'mira_memory.srv', 'rclpy.node']


def _package_prefix(root):
    """Return the dotted name of the package that holds root ('mira_memory' for core)."""
    parts = []
    folder = root.parent
    while (folder / '__init__.py').exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return parts


def _module_name(path, root):
    """Return path's full dotted name, as the code imports it (mira_memory.core.x)."""
    parts = _package_prefix(root) + list(path.relative_to(root.parent).with_suffix('').parts)
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _absolute(node, name, path):
    """Return the absolute module of an ImportFrom in module name (path: its file)."""
    if node.level == 0:
        return node.module
    package = name.split('.')
    if path.name != '__init__.py':
        package = package[:-1]
    package = package[:len(package) - (node.level - 1)]
    return '.'.join(package + ([node.module] if node.module else []))


def _import_cycles(root):
    """Return the import cycles among the modules under root, each a sorted list of names."""
    modules = {_module_name(path, root): path for path in root.rglob('*.py')}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(node, name, path)
                # `from package import module` depends on the module itself.
                targets.update(f'{module}.{alias.name}'
                               if f'{module}.{alias.name}' in modules else module
                               for alias in node.names)
        graph[name] = {target for target in targets if target in modules} - {name}

    def reaches(start):
        seen, todo = set(), [start]
        while todo:
            for target in graph[todo.pop()] - seen:
                seen.add(target)
                todo.append(target)
        return seen
    reach = {name: reaches(name) for name in graph}
    cycles = {tuple(sorted({name} | {other for other in reach[name] if name in reach[other]}))
              for name in graph if name in reach[name]}
    return sorted(list(cycle) for cycle in cycles)


def test_core_has_no_import_cycles():
    # A cycle makes the import order matter and the layers meaningless
    # (archive.copies <-> export_format and config <-> config_file were two).
    assert _import_cycles(CORE) == []


def test_cycle_finder_catches_a_cycle_through_a_function(tmp_path):
    # The check above must be able to fail, also for an import inside a
    # function, on a package nested the way core is (names as the code spells them).
    top = tmp_path / 'top'
    package = top / 'core'
    package.mkdir(parents=True)
    (top / '__init__.py').write_text('')
    (package / '__init__.py').write_text('')
    (package / 'a.py').write_text('from top.core import b\n')
    (package / 'b.py').write_text('def f():\n    from top.core import c\n')
    (package / 'c.py').write_text('import top.core.a\n')
    (package / 'd.py').write_text('from top.core import a\n')
    (package / 'e.py').write_text('from . import f\n')
    (package / 'f.py').write_text('from .e import g\n')
    assert _import_cycles(package) == [['top.core.a', 'top.core.b', 'top.core.c'],
                                       ['top.core.e', 'top.core.f']]


def test_cycle_finder_names_core_modules_as_the_code_imports_them():
    assert _module_name(CORE / 'admission' / 'text.py', CORE) == (
        'mira_memory.core.admission.text')


def test_importing_the_ros_free_modules_loads_no_ros_module():
    # Also at run time: import every core module, cognition's library and
    # wire (whose QoS profiles load rclpy only when used) in a fresh
    # interpreter from the source tree and list what got loaded.
    code = (
        'import importlib, pkgutil, sys\n'
        'import mira_memory.core as core\n'
        'for info in pkgutil.walk_packages(core.__path__, "mira_memory.core."):\n'
        '    importlib.import_module(info.name)\n'
        f'for name in {COGNITION_LIBRARY!r}:\n'
        '    importlib.import_module("mira_memory.cognition." + name)\n'
        'import mira_memory.wire\n'
        f'bad = sorted(m for m in sys.modules if m.split(".")[0] in {FORBIDDEN!r}\n'
        '             or m in ("mira_memory.msg", "mira_memory.srv"))\n'
        'print(",".join(bad))\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            cwd=ROOT, check=True)
    assert result.stdout.strip() == ''
