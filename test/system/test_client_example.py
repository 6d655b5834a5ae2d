# SPDX-License-Identifier: Apache-2.0
"""
docs/examples/client_example.py, the exact file docs/client.md shows, against a real memory node.

The example starts no node: the test starts memory_node as a process, as
tools/node or `ros2 launch` would, and runs the example as the integrator
would, with its --namespace. A second run finds what the first made.
"""

import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ros

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / 'docs' / 'examples' / 'client_example.py'


def _run_example(*args):
    return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True,
                          text=True, timeout=120)


def test_the_client_example_runs_against_a_real_node(ros, memory_node, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    # Backups go to one of the node's output directories (admin_output_dirs).
    backups = tmp_path / 'backups'
    backups.mkdir()
    node = memory_node({'enabled': True, 'database_path': str(database),
                        'robot_profile': 'Mira', 'admin_output_dirs': str(backups)}, ros=ros)

    first = _run_example('--namespace', node.namespace, '--backup-dir', str(backups))
    assert first.returncode == 0, first.stdout + first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == f'memory node {node.prefix}: enabled=True, 0 entities, 0 memories'
    assert re.fullmatch(r"entity ENT\d+ 'Ada Lovelace'", lines[1]), lines
    assert lines[2] == 'recall("Ada") -> found (exact_match)'
    assert re.fullmatch(r"  ENT\d+ person 'Ada Lovelace': 0 active memories", lines[3]), lines
    assert '0 proposal(s) waiting for review' in lines
    assert re.fullmatch(r'backup succeeded: .*', lines[-1]), lines
    [copy] = backups.iterdir()
    assert copy.stat().st_size > 0

    again = _run_example('--namespace', node.namespace)
    assert again.returncode == 0, again.stdout + again.stderr
    # The entity is found, not made twice; no backup without --backup-dir.
    assert again.stdout.splitlines()[0] == (
        f'memory node {node.prefix}: enabled=True, 1 entities, 0 memories')
    assert again.stdout.splitlines()[1] == lines[1]
    assert 'backup' not in again.stdout
    assert 'Traceback' not in node.output()


def test_the_client_example_fails_on_a_disabled_node(ros, memory_node):
    node = memory_node({'enabled': False}, ros=ros)
    disabled = _run_example('--namespace', node.namespace)
    assert disabled.returncode == 1
    assert disabled.stderr == 'error: persistent memory is disabled on this node\n'
