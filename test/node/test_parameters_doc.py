# SPDX-License-Identifier: Apache-2.0
"""docs/parameters.md is what tools/parameters_doc.py makes of the nodes' declarations."""

import importlib.util
import pathlib

import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        'parameters_doc', ROOT / 'tools' / 'parameters_doc.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_parameters_page_is_generated_from_the_declarations():
    generator = _generator()
    found = generator.declared_parameters()
    # Every node declared something, and the memory node all of its own.
    assert all(rows for _, rows in found)
    memory = dict(found)['memory_node']
    assert {'enabled', 'database_path', 'robot_profile'} <= {row[0] for row in memory}
    page = (ROOT / 'docs' / 'parameters.md').read_text()
    assert page == generator.render(found), (
        'docs/parameters.md is stale: run '
        '`. .work/jazzy/env.sh && python3 tools/parameters_doc.py > docs/parameters.md`')
