# SPDX-License-Identifier: Apache-2.0
"""
Load what a ROS process of this package needs of the interfaces at run time, nothing more.

Two imports that every rclpy process pays for code it never runs:

- **The interface generator.** Every generated message and service class
  imports `rosidl_generator_py.import_type_support` the first time it is
  used. That package's __init__ then also tries to import its own code
  generator, and where the generator's dependencies are installed (a full
  ROS 2 install, the PyPI wheels) the IDL parser (lark) and the template
  engine (empy) come with it: about 8 MB of resident memory and 30 ms of
  CPU in every process, for code that only `colcon build` runs. Upstream's
  __init__ already treats the generator as optional (an ImportError there
  leaves a package that exports import_type_support alone);
  import_support_only() builds that same package object without running
  the __init__.
- **numpy.** The generated `service_msgs/ServiceEventInfo` (the header of
  service introspection events) imports numpy at module level for its
  `client_gid` array, and rclpy imports that module before any service
  exists (Kilted's rclpy.type_support, Jazzy's first service). Only a
  process that builds an introspection event in Python ever uses it; the
  memory node never does, and numpy costs about 0.1 s of start-up and
  11 MB of resident memory. defer_until_used('numpy') registers the module
  so that `import numpy` binds it without running it; the first use of any
  of its attributes runs numpy's import then, transparently.

load_runtime_only() does both; call it before anything imports rclpy.
"""

import importlib.util
import sys
import threading
import types

PACKAGE = 'rosidl_generator_py'
DEFERRED = ('numpy',)


def load_runtime_only():
    """Load rosidl_generator_py without its generator and defer numpy (module docstring)."""
    import_support_only()
    for name in DEFERRED:
        defer_until_used(name)


def import_support_only():
    """
    Register rosidl_generator_py with import_type_support only; True if this call did.

    Does nothing (False) if the package is already imported or is laid out
    differently from what this expects: then the normal import happens, as
    it would without this call.
    """
    if PACKAGE in sys.modules:
        return False
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        return False
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    try:
        support = importlib.import_module(PACKAGE + '.import_type_support_impl')
        package.import_type_support = support.import_type_support
    except (ImportError, AttributeError):
        for name in [name for name in sys.modules
                     if name == PACKAGE or name.startswith(PACKAGE + '.')]:
            del sys.modules[name]
        return False
    package.__all__ = ['import_type_support']
    return True


# Held while a deferred module's code runs: another thread that uses it
# meanwhile waits, as it would for an import in progress.
_DEFERRED_LOCK = threading.RLock()
_RUNNING = set()
# What module_from_spec() sets from the spec alone; never __path__, which
# importing a submodule reads and which must run the package first.
METADATA = frozenset(('__spec__', '__name__', '__file__', '__loader__', '__package__'))


class _DeferredModule(types.ModuleType):
    """
    A module whose code runs at the first use of an attribute, not at its import.

    The import system reads __spec__ of a module it finds in sys.modules,
    and inspect.getmodule() (which rclpy's logger calls on every log line)
    reads __file__ of every module there: a module's import metadata
    (METADATA) is answered without running it; any other attribute runs it
    first, once. While it runs, its own code reads it as it is (its imports
    reach it through sys.modules) and other threads wait.
    importlib.util.LazyLoader is not enough: it runs the module as soon as
    `import` reads __spec__.
    """

    def __getattribute__(self, name):
        if name not in METADATA:
            with _DEFERRED_LOCK:
                if type(self) is _DeferredModule:
                    _run_deferred(self)
        return object.__getattribute__(self, name)


def _run_deferred(module):
    """Run a deferred module's code into it, once (the caller holds _DEFERRED_LOCK)."""
    spec = object.__getattribute__(module, '__spec__')
    if spec.name in _RUNNING:
        return
    _RUNNING.add(spec.name)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        # As a failed import: gone from sys.modules, so the next import tries again.
        if sys.modules.get(spec.name) is module:
            del sys.modules[spec.name]
        raise
    else:
        object.__setattr__(module, '__class__', types.ModuleType)
    finally:
        _RUNNING.discard(spec.name)


def defer_until_used(name):
    """
    Register top-level module name so that it runs at its first use; True if this call did.

    Does nothing (False) if the module is already imported or cannot be
    found: then the normal import happens, as it would without this call.
    """
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, 'exec_module'):
        return False
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _DeferredModule
    sys.modules[name] = module
    return True


def is_deferred(module):
    """Return True while module was deferred and none of it has been used yet."""
    return type(module) is _DeferredModule
