# SPDX-License-Identifier: Apache-2.0
"""
The grounding corpus through the real remember service of one in-process memory node.

Every case of test/grounding_corpus/*.toml (and, on a node of its own, of the
held-out part in heldout/) is sent through
MemoryServices.remember (so whatever that helper does before a request, such
as publishing the operator turn, happens here too), on a world seeded
through the admin services. The test prints the false admissions and false
rejections and fails if either, or any wrong reason, is not zero.
"""

from helpers.corpus_cases import HELD_OUT_DIRECTORIES, HELD_OUT_FALSE_REJECTIONS_HELD
from helpers.corpus_cases import HELD_OUT_FALSE_REJECTIONS_MAX
from helpers.corpus_cases import HELD_OUT_MINIMUM_CASES, load, ROBOT_PROFILE
from helpers.corpus_cases import Tally
from helpers.memory_services import MemoryServices, remember_request, start_enabled_node
import pytest

pytestmark = pytest.mark.ros


def run_through_the_service(memory, corpus, title, held_out=False, held=0):
    """
    Seed the corpus world through the admin services, send every case, check the Tally.

    A held-out part may refuse at most HELD_OUT_FALSE_REJECTIONS_MAX of its
    plain statements, as test_grounding_corpus.run_at_core_level says.
    """
    for entity in corpus.entities:
        memory.entity(entity.name, entity_type=entity.entity_type, aliases=entity.aliases)
    before = memory.counts()
    tally = Tally.empty(title)

    for number, case in enumerate(corpus.cases, 1):
        response = memory.remember(remember_request(case.context(number), case.proposal))
        tally.record(case, response.status, response.outcome, response.reason)

    print(tally.report())
    if held_out:
        assert tally.within(HELD_OUT_FALSE_REJECTIONS_MAX, held), tally.report()
    else:
        assert tally.clean, tally.report()
    created = sum(case.expect == 'created' for case in corpus.cases)
    assert memory.counts()['memory_count'] - before['memory_count'] == (
        created - len(tally.false_rejections))


def test_every_corpus_case_through_the_service(ros, module_memory_node):
    node = start_enabled_node(module_memory_node, ros, 'grounding_corpus', ROBOT_PROFILE)
    run_through_the_service(MemoryServices(ros, node.prefix, node), load(), 'grounding corpus')


@pytest.mark.parametrize('directory', HELD_OUT_DIRECTORIES, ids=lambda path: path.name)
def test_every_held_out_case_through_the_service(directory, ros, module_memory_node):
    # Each its own world on a node of its own, written before the rules it
    # judged.
    node = start_enabled_node(module_memory_node, ros, f'grounding_{directory.name}',
                              ROBOT_PROFILE)
    run_through_the_service(
        MemoryServices(ros, node.prefix, node),
        load(directory, minimum=HELD_OUT_MINIMUM_CASES),
        f'held-out grounding corpus ({directory.name})', held_out=True,
        held=HELD_OUT_FALSE_REJECTIONS_HELD.get(directory.name, 0))
