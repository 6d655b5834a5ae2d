# SPDX-License-Identifier: Apache-2.0
"""
Typed node parameters declared from one table, with a clear startup error.

Each parameter is a (name, default, description) row and takes its type from
its default, so a node lists its parameters once and reads them back as
{name: value}. An override of another type (`-p call_timeout_sec:=5`, an
integer where a float is declared) makes rclpy's declare_parameter raise
with a traceback; here it is a StartupError naming the parameter and the
type it needs, so the node logs one line and exits 1. The sentence does not
repeat the value given.
"""

from mira_memory.ros.node_runner import StartupError
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.exceptions import InvalidParameterTypeException

# The default's Python type -> (its ROS parameter type, what a value must be).
_TYPES = {
    bool: (ParameterType.PARAMETER_BOOL, 'true or false'),
    int: (ParameterType.PARAMETER_INTEGER, 'an integer'),
    float: (ParameterType.PARAMETER_DOUBLE, 'a floating-point number (such as 5.0, not 5)'),
    str: (ParameterType.PARAMETER_STRING, 'a string'),
}


def declare(node, name, default, description, *, read_only=True):
    """
    Declare a parameter typed by its default and return its value.

    Read-only unless read_only is False (a value the node may take at runtime).
    Raises StartupError when an override has another type.
    """
    kind, expected = _TYPES[type(default)]
    try:
        node.declare_parameter(name, default, ParameterDescriptor(
            type=kind, read_only=read_only, description=description))
    except InvalidParameterTypeException:
        raise StartupError(f'parameter {name} must be {expected}') from None
    return node.get_parameter(name).value


def declare_read_only(node, table):
    """Declare every (name, default, description) row read-only; return {name: value}."""
    return {name: declare(node, name, default, description)
            for name, default, description in table}
