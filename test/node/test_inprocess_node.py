# SPDX-License-Identifier: Apache-2.0
"""
The node tier's harness (test/helpers/inprocess.py) stops with the process's exit code.

node_runner.run lets an exception out of spinning or out of destroy_node
end the process with a traceback and exit 1; InProcessNode.stop() returns
1 then (and keeps the exception), so a node-tier check of the exit code
can fail, and the tier's fixtures fail a test whose node raised.
"""

import time

from helpers.inprocess import InProcessNode
from mira_memory.memory.node import MemoryNode
import pytest

pytestmark = pytest.mark.ros

DISABLED = {'enabled': False}
# A deadline against a hang, not a timing.
SPIN_TIMEOUT = 30.0


class CallbackRaises(MemoryNode):
    """A memory node one of whose callbacks raises."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.create_timer(0.01, self._raise)

    def _raise(self):
        raise RuntimeError('a callback failed')


class DestroyRaises(MemoryNode):
    """A memory node whose destroy_node raises after closing everything."""

    def destroy_node(self):
        super().destroy_node()
        raise RuntimeError('destroy failed')


def test_a_clean_stop_is_0(node_context):
    node = InProcessNode(node_context, DISABLED)
    assert node.running()
    assert node.stop() == 0
    assert node.failure is None
    assert node.stop() == 0  # stopping again says the same


def test_a_callback_that_raises_ends_the_spin_and_the_stop_is_1(node_context):
    node = InProcessNode(node_context, DISABLED, node_class=CallbackRaises)
    deadline = time.monotonic() + SPIN_TIMEOUT
    while node.running():
        assert time.monotonic() < deadline, 'the raising callback never ran'
        time.sleep(0.01)
    assert node.stop() == 1
    assert str(node.failure) == 'a callback failed'


def test_a_destroy_that_raises_makes_the_stop_1(node_context):
    node = InProcessNode(node_context, DISABLED, node_class=DestroyRaises)
    assert node.stop() == 1
    assert str(node.failure) == 'destroy failed'
