# SPDX-License-Identifier: Apache-2.0
"""
Load rosidl_generator_py as a runtime-only install has it: type support, no generator.

Every generated message and service class imports
`rosidl_generator_py.import_type_support` the first time it is used. That
package's __init__ then also tries to import its own code generator, and
where the generator's dependencies are installed (a full ROS 2 install, the
PyPI wheels) the IDL parser (lark) and the template engine (empy) come with
it: about 8 MB of resident memory and 30 ms of CPU in every process, for
code that only `colcon build` runs. Upstream's __init__ already treats the
generator as optional (an ImportError there leaves a package that exports
import_type_support alone); load_runtime_only() builds that same package
object without running the __init__, before anything imports it.
"""

import importlib.util
import sys

PACKAGE = 'rosidl_generator_py'


def load_runtime_only():
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
