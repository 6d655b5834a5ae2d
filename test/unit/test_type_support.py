# SPDX-License-Identifier: Apache-2.0
"""
type_support.load_runtime_only() on stand-in packages (no ROS needed).

Each stand-in's __init__ raises if it runs: the runtime-only package object
must be built without it. The real rosidl_generator_py is tested through a
real node process in test/node/test_installed_package.py.
"""

import importlib
import sys

from mira_memory.ros import type_support
import pytest

NAME = 'mira_stand_in_generator_py'
INIT = 'raise RuntimeError("the package __init__ ran")\n'
SUPPORT = 'def import_type_support(pkg_name):\n    return "support of " + pkg_name\n'


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """Return a function that lays out the stand-in package with the given files."""
    monkeypatch.setattr(type_support, 'PACKAGE', NAME)
    monkeypatch.syspath_prepend(str(tmp_path))

    def lay_out(files):
        package = tmp_path / NAME
        package.mkdir()
        for name, text in files.items():
            (package / name).write_text(text, encoding='utf-8')
    yield lay_out
    for name in [name for name in sys.modules if name.split('.')[0] == NAME]:
        del sys.modules[name]


def test_the_package_exports_import_type_support_without_its_init_running(stand_in):
    stand_in({'__init__.py': INIT, 'import_type_support_impl.py': SUPPORT})

    assert type_support.load_runtime_only() is True

    package = sys.modules[NAME]
    assert package.import_type_support('mira_memory') == 'support of mira_memory'
    assert package.__all__ == ['import_type_support']
    # A later import, as a generated interface does it, finds that object.
    assert importlib.import_module(NAME).import_type_support is package.import_type_support


def test_an_already_imported_package_is_left_alone(stand_in):
    stand_in({'__init__.py': 'import_type_support = "the real one"\n'})
    __import__(NAME)

    assert type_support.load_runtime_only() is False
    assert sys.modules[NAME].import_type_support == 'the real one'


def test_an_absent_package_is_left_to_the_normal_import(stand_in):
    assert type_support.load_runtime_only() is False
    assert NAME not in sys.modules


@pytest.mark.parametrize('files', [
    {'__init__.py': INIT},
    {'__init__.py': INIT, 'import_type_support_impl.py': 'renamed = None\n'},
], ids=['no_support_module', 'no_support_function'])
def test_a_package_laid_out_otherwise_is_left_to_the_normal_import(stand_in, files):
    stand_in(files)

    assert type_support.load_runtime_only() is False
    # Nothing half-built stays behind: the next import runs the package as usual.
    assert [name for name in sys.modules if name.split('.')[0] == NAME] == []
    with pytest.raises(RuntimeError, match='the package __init__ ran'):
        __import__(NAME)
