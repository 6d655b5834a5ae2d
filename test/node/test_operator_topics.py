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

"""Node-name resolution shared by operator_source and operator_chat (no DDS needed)."""

import pytest

pytestmark = pytest.mark.ros  # operator_topics imports the generated messages


@pytest.mark.parametrize('name, namespace, absolute, split', [
    ('cognition', '/mira', '/mira/cognition', ('/mira', 'cognition')),
    ('cognition', '/', '/cognition', ('/', 'cognition')),
    ('/other/memory', '/mira', '/other/memory', ('/other', 'memory')),
    ('/memory', '/mira', '/memory', ('/', 'memory')),
    ('robot/memory', '/mira', '/mira/robot/memory', ('/mira/robot', 'memory')),
    ('robot/memory', '/', '/robot/memory', ('/robot', 'memory')),
])
def test_node_names_resolve_in_the_own_namespace(name, namespace, absolute, split):
    from mira_memory.ros.operator_topics import absolute_node_name, split_node_name
    assert absolute_node_name(name, namespace) == absolute
    assert split_node_name(name, namespace) == split
