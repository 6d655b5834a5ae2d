# SPDX-License-Identifier: Apache-2.0
"""config/diagnostics_analyzers.yaml: the memory node's diagnostic_aggregator analyzer."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ANALYZERS = ROOT / 'config' / 'diagnostics_analyzers.yaml'


def analyzers():
    yaml = pytest.importorskip('yaml')
    document = yaml.safe_load(ANALYZERS.read_text())
    # The aggregator node is named "analyzers"; each analyzer is a parameter group.
    assert list(document) == ['analyzers']
    parameters = document['analyzers']['ros__parameters']
    return parameters


def test_memory_has_a_group_of_its_own():
    parameters = analyzers()
    memory = parameters['memory']
    assert memory['type'] == 'diagnostic_aggregator/GenericAnalyzer'
    assert (parameters['path'], memory['path']) == ('Mira', 'Memory')


@pytest.mark.parametrize('namespace', ['/mira', '/robot2', '/fleet/a7', ''])
def test_the_analyzer_matches_the_status_in_every_namespace(namespace):
    """The name the node publishes: DiagnosticsPublisher's, with the fully qualified name."""
    memory = analyzers()['memory']
    name = f'{namespace}/memory: persistent memory'
    assert any(part in name for part in memory['contains'])
    assert not any(part in '/mira/cognition: working memory' for part in memory['contains'])
