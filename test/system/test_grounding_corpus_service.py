# SPDX-License-Identifier: Apache-2.0
"""
The grounding corpus through the real remember service of one memory node process.

Every case of test/grounding_corpus/*.toml is sent through
MemoryServices.remember (so whatever that helper does before a request, such
as publishing the operator turn, happens here too), on a world seeded
through the admin services. The test prints the false admissions and false
rejections and fails if either, or any wrong reason, is not zero.
"""

from corpus_cases import load, ROBOT_PROFILE, Tally
from memory_services import MemoryServices, remember_request, start_enabled_node
import pytest

pytestmark = pytest.mark.ros


@pytest.fixture(scope='module')
def memory(ros, module_memory_node):
    node = start_enabled_node(module_memory_node, ros, 'grounding_corpus', ROBOT_PROFILE)
    return MemoryServices(ros, node.prefix)


def test_every_corpus_case_through_the_service(memory):
    corpus = load()
    for entity in corpus.entities:
        memory.entity(entity.name, entity_type=entity.entity_type, aliases=entity.aliases)
    before = memory.counts()
    tally = Tally.empty()

    for number, case in enumerate(corpus.cases, 1):
        response = memory.remember(remember_request(case.context(number), case.proposal))
        tally.record(case, response.status, response.outcome, response.reason)

    print(tally.report())
    assert tally.clean, tally.report()
    created = sum(case.expect == 'created' for case in corpus.cases)
    assert memory.counts()['memory_count'] - before['memory_count'] == created
