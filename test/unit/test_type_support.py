# SPDX-License-Identifier: Apache-2.0
"""
mira_memory/ros/type_support.py on stand-in packages (no ROS needed).

import_support_only(): each stand-in's __init__ raises if it runs, the
runtime-only package object must be built without it. defer_until_used():
a stand-in module counts how often its code ran. The real
rosidl_generator_py and numpy are tested through a real node process in
test/node/test_installed_package.py.
"""

import importlib
import inspect
import sys
import threading

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

    assert type_support.import_support_only() is True

    package = sys.modules[NAME]
    assert package.import_type_support('mira_memory') == 'support of mira_memory'
    assert package.__all__ == ['import_type_support']
    # A later import, as a generated interface does it, finds that object.
    assert importlib.import_module(NAME).import_type_support is package.import_type_support


def test_an_already_imported_package_is_left_alone(stand_in):
    stand_in({'__init__.py': 'import_type_support = "the real one"\n'})
    __import__(NAME)

    assert type_support.import_support_only() is False
    assert sys.modules[NAME].import_type_support == 'the real one'


def test_an_absent_package_is_left_to_the_normal_import(stand_in):
    assert type_support.import_support_only() is False
    assert NAME not in sys.modules


@pytest.mark.parametrize('files', [
    {'__init__.py': INIT},
    {'__init__.py': INIT, 'import_type_support_impl.py': 'renamed = None\n'},
], ids=['no_support_module', 'no_support_function'])
def test_a_package_laid_out_otherwise_is_left_to_the_normal_import(stand_in, files):
    stand_in(files)

    assert type_support.import_support_only() is False
    # Nothing half-built stays behind: the next import runs the package as usual.
    assert [name for name in sys.modules if name.split('.')[0] == NAME] == []
    with pytest.raises(RuntimeError, match='the package __init__ ran'):
        __import__(NAME)


DEFERRED = 'mira_stand_in_deferred'
# Counts its runs in a module that outlives it (sys, which every test has).
DEFERRED_CODE = (
    'import sys\n'
    'sys.mira_deferred_runs = getattr(sys, "mira_deferred_runs", 0) + 1\n'
    'import time\n'
    'time.sleep(0.05)  # a slow import: a second thread arrives while it runs\n'
    'answer = 42\n')


@pytest.fixture
def deferred(tmp_path, monkeypatch):
    """Lay out a stand-in module that counts its runs; remove it and its count after."""
    (tmp_path / (DEFERRED + '.py')).write_text(DEFERRED_CODE, encoding='utf-8')
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop(DEFERRED, None)
    if hasattr(sys, 'mira_deferred_runs'):
        del sys.mira_deferred_runs


def runs():
    return getattr(sys, 'mira_deferred_runs', 0)


def test_a_deferred_module_is_imported_without_running_until_an_attribute_is_used(deferred):
    assert type_support.defer_until_used(DEFERRED) is True

    module = importlib.import_module(DEFERRED)
    from_statement = __import__(DEFERRED)
    assert module is from_statement is sys.modules[DEFERRED]
    assert module.__name__ == DEFERRED and module.__spec__.name == DEFERRED
    # What tools read of every module in sys.modules (inspect.getmodule, as
    # rclpy's logger calls it) does not run it either.
    assert module.__file__.endswith(DEFERRED + '.py') and module.__loader__ is not None
    assert inspect.getframeinfo(inspect.currentframe()).filename == __file__
    assert (runs(), type_support.is_deferred(module)) == (0, True)

    assert module.answer == 42
    assert (runs(), type_support.is_deferred(module)) == (1, False)
    assert module.answer == 42 and runs() == 1


def test_a_from_import_runs_the_deferred_module_once(deferred):
    type_support.defer_until_used(DEFERRED)

    namespace = {}
    exec(f'from {DEFERRED} import answer', namespace)

    assert (namespace['answer'], runs()) == (42, 1)


def test_two_threads_using_a_deferred_module_at_once_run_it_once(deferred):
    type_support.defer_until_used(DEFERRED)
    module = sys.modules[DEFERRED]
    start = threading.Barrier(2)
    answers = []

    def use():
        start.wait()
        answers.append(module.answer)
    threads = [threading.Thread(target=use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert (answers, runs()) == ([42, 42], 1)


def test_a_deferred_module_that_fails_is_gone_so_the_next_import_tries_again(deferred, tmp_path):
    (tmp_path / (DEFERRED + '.py')).write_text(
        'import sys\nsys.mira_deferred_runs = getattr(sys, "mira_deferred_runs", 0) + 1\n'
        'raise ImportError("a broken install")\n', encoding='utf-8')
    type_support.defer_until_used(DEFERRED)

    with pytest.raises(ImportError, match='a broken install'):
        sys.modules[DEFERRED].answer
    assert DEFERRED not in sys.modules
    with pytest.raises(ImportError, match='a broken install'):
        importlib.import_module(DEFERRED)
    assert runs() == 2


def test_an_imported_or_absent_module_is_not_deferred(deferred):
    assert type_support.defer_until_used('mira_no_such_module') is False
    assert 'mira_no_such_module' not in sys.modules
    importlib.import_module(DEFERRED)

    assert type_support.defer_until_used(DEFERRED) is False
    assert not type_support.is_deferred(sys.modules[DEFERRED])
