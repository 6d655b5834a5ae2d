# SPDX-License-Identifier: Apache-2.0
"""The toolchain is real: generated interfaces, an installed node, DDS between processes."""

from mira_memory.client import names
import pytest

pytestmark = pytest.mark.ros


def test_generated_interfaces_import():
    from mira_memory.srv import RecallMemory, Remember
    assert RecallMemory.Request().query == ''
    assert Remember.Response.STATUS_APPLIED == 'applied'


def test_remember_reason_constants_match_the_core():
    from mira_memory.core.admission import results
    from mira_memory.srv import Remember
    declared = {value for name, value in vars(Remember.Response).items()
                if name.startswith('REASON_')}
    assert declared == set(results.REASONS)
    assert len(declared) == 15


def test_recall_status_and_reason_constants_match_the_core():
    from mira_memory.core import recall
    from mira_memory.srv import RecallMemory
    constants = vars(RecallMemory.Response)
    assert {v for k, v in constants.items() if k.startswith('STATUS_')} == set(recall.STATUSES)
    assert {v for k, v in constants.items() if k.startswith('REASON_')} == set(recall.REASONS)


def test_service_call_between_two_processes(ros, memory_node):
    # The node runs as its own process (disabled mode: no files needed); this
    # test process is the client, so the call crosses DDS on loopback.
    from mira_memory.srv import AdminStatus
    node = memory_node({'enabled': False}, ros=ros)
    response = ros.call(AdminStatus, names.service_name(node.prefix, names.ADMIN_STATUS))
    assert response.success and not response.enabled
    assert node.process.pid is not None and node.process.poll() is None
