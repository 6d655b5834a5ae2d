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

"""
Typed node parameters declared from one table.

Each parameter is a (name, default, description) row and takes its type from
its default, so a node lists its parameters once and reads them back as
{name: value}.
"""

from rcl_interfaces.msg import ParameterDescriptor, ParameterType

# The default's Python type -> its ROS parameter type.
_TYPES = {
    bool: ParameterType.PARAMETER_BOOL,
    int: ParameterType.PARAMETER_INTEGER,
    float: ParameterType.PARAMETER_DOUBLE,
    str: ParameterType.PARAMETER_STRING,
}


def declare(node, name, default, description):
    """Declare one read-only parameter typed by its default and return its value."""
    node.declare_parameter(name, default, ParameterDescriptor(
        type=_TYPES[type(default)], read_only=True, description=description))
    return node.get_parameter(name).value


def declare_read_only(node, table):
    """Declare every (name, default, description) row read-only; return {name: value}."""
    return {name: declare(node, name, default, description)
            for name, default, description in table}
