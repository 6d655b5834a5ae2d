# SPDX-License-Identifier: Apache-2.0
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
